"""Round 16's planted bugs in the decode runtime (neurobrix/generate.py, model.py, plan.py, warmup.py) that the
tests before it let through: each test here failed with one such bug and passes without it (which bug: its
docstring). CPU only, PyTorch's kernels, tiny random models: a few seconds."""

from __future__ import annotations

import pytest
import torch
from test_runtime_planted import TINY

from neurobrix.generate import Sampling, generate_batch
from neurobrix.model import Transformer, Weights, fuse_weights
from neurobrix.ops import TORCH


def random_weights(seed: int) -> Weights:
    """TINY's fused weights drawn at random (scale 1: logits a few units apart, so a penalty changes picks)."""
    from neurobrix.config import checkpoint_shapes

    shapes = checkpoint_shapes(TINY)
    gen = torch.Generator().manual_seed(seed)
    drawn = {name: torch.randn(shape, generator=gen) for name, shape in sorted(shapes.items())}
    return fuse_weights(TINY, drawn.__getitem__, set(drawn), torch.float32, "cpu")


def tiny(weights: Weights, batch: int, capacity: int) -> Transformer:
    return Transformer(TINY, weights, TORCH, batch=batch, capacity=capacity)


PROMPTS = [[1, 2, 3, 4], [9, 8, 7, 6]]
STEPS = 14


@pytest.mark.parametrize("device_pick", [True, False])
def test_a_penalized_batch_marks_each_rows_tokens_in_its_own_row(device_pick):
    """Planted: the repetition penalty's marks of the tokens each sequence holds set for every row (``seen[:,
    token] = True`` for ``scatter_``), on the host's path (``sample``) or the device's (``GreedyDecoder``), or the
    prompts' marks taken from the first prompt: each row's text was penalized for another row's tokens, which no
    test at batch 1 sees. Each row of a penalized batch is what its prompt generates alone."""
    weights = random_weights(0)
    opts = Sampling(repetition_penalty=1.8)
    alone = []
    for p in PROMPTS:
        (out,), _ = generate_batch(tiny(weights, 1, 32), [p], STEPS, opts, set(), device_pick=device_pick)
        alone.append(out)
    plain = [generate_batch(tiny(weights, 1, 32), [p], STEPS, Sampling(), set())[0][0] for p in PROMPTS]
    assert alone != plain  # the penalty changes these texts
    assert set(alone[0]) & set(alone[1])  # and the rows share tokens, which a penalty across rows would move
    together, _ = generate_batch(tiny(weights, 2, 32), PROMPTS, STEPS, opts, set(), device_pick=device_pick)
    assert together == alone


class FixedLogits:
    """What ``GreedyDecoder`` reads of a model: every step's logits are ``logits``."""

    def __init__(self, logits: torch.Tensor) -> None:
        from types import SimpleNamespace

        self.logits, self.ops, self.w = logits, TORCH, SimpleNamespace(embed=logits)

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.logits.clone()


def test_a_penalized_greedy_step_picks_from_float32_scores_of_bf16_logits():
    """Planted: the device-side greedy step's penalized scores rounded back to the logits' dtype before the pick
    (``penalize(...).to(logits.dtype)``): with bf16 logits, 1.0 penalized by 1.1 (0.90909 in float32) rounds to
    0.91015625, ties the next token's logit and wins as the first index. transformers penalizes float32 scores
    (its generate casts the logits), and so do ``sample`` and ``GreedyDecoder``: every CPU test ran fp32 logits."""
    from neurobrix.generate import GreedyDecoder, sample

    logits = torch.tensor([[1.0, 0.91015625, -1.0]], dtype=torch.bfloat16)  # both exact in bf16
    seen = torch.tensor([[True, False, False]])  # token 0 is the sequence's
    processors = pytest.importorskip("transformers.generation.logits_process")
    scores = processors.RepetitionPenaltyLogitsProcessor(1.1)(torch.tensor([[0]]), logits.float())
    assert int(scores.argmax()) == 1  # transformers' pick: 0.90909 < 0.91015625
    assert int(sample(logits, Sampling(repetition_penalty=1.1), None, seen.clone())[0]) == 1
    greedy = GreedyDecoder(FixedLogits(logits), 1, use_graph=False, penalty=1.1, seen=seen.clone())
    greedy.start(torch.tensor([0]), 5)
    assert greedy.step().tolist() == [[1]]
    assert greedy.state.tolist() == [[6], [7]]  # the position and the length moved on by one
