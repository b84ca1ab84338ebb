"""The runtime's edges that planted bugs in its decoding and preflight code went through: each test here
failed with one such bug and passes without it (which bug: its docstring)."""

from __future__ import annotations

import pytest
import torch
from test_model_reference import handed_to_the_draw

from neurobrix.config import ModelConfig
from neurobrix.errors import UsageError
from neurobrix.generate import Sampling, generate_batch

TINY = ModelConfig(
    architecture="llama",
    hidden_size=16,
    intermediate_size=32,
    num_layers=1,
    num_heads=2,
    num_kv_heads=1,
    head_dim=8,
    vocab_size=32,
    max_positions=64,
    rope_theta=10000.0,
    rms_norm_eps=1e-5,
    tie_word_embeddings=False,
    qkv_bias=False,
)


def tiny_model(capacity: int):
    """TINY on zero weights and PyTorch's kernels, on the CPU: every logit 0, so greedy picks token 0."""
    from neurobrix.model import Transformer
    from neurobrix.ops import TORCH
    from neurobrix.warmup import scratch_weights

    return Transformer(
        TINY, scratch_weights(TINY, torch.float32, torch.device("cpu")), TORCH, batch=1, capacity=capacity
    )


@pytest.mark.parametrize("device_pick", [True, False])
def test_a_generation_needing_one_cache_position_more_than_built_is_refused(device_pick):
    """A prompt of P tokens and N new tokens fill P + N - 1 cache positions (the last token is never fed): that
    many fit a cache of that capacity, one more is refused before anything runs (a check one short let the last
    decode step write one position past the cache)."""
    prompt, capacity = [1, 2, 3], 8
    fits = capacity - len(prompt) + 1
    model = tiny_model(capacity)
    outs, _ = generate_batch(model, [prompt], fits, Sampling(), set(), device_pick=device_pick)
    assert outs == [[0] * fits]
    with pytest.raises(UsageError, match=f"need a KV cache of {capacity + 1} positions; this model was built with"):
        generate_batch(model, [prompt], fits + 1, Sampling(), set(), device_pick=device_pick)


@pytest.mark.parametrize("top_p", [0.25, 0.5, 0.75])
def test_a_nucleus_reaching_top_p_exactly_ends_there_as_in_transformers(top_p):
    """Four equal logits (sums exact in binary): the nucleus reaches top_p after top_p x 4 tokens, and top-p
    keeps those and no more, as transformers' TopPLogitsWarper does (it removes each token whose ascending
    cumulative mass is at most 1 - top_p). A comparison that keeps the token where the mass before it equals
    top_p (> for >=) kept one more."""
    transformers = pytest.importorskip("transformers")
    logits = torch.zeros((1, 4))
    warped = transformers.generation.logits_process.TopPLogitsWarper(top_p)(None, logits.clone())
    want = int(torch.isfinite(warped).sum())
    _, handed = handed_to_the_draw(logits, Sampling(temperature=1.0, top_p=top_p))
    assert want == round(top_p * 4)
    assert int((handed[0] > 0).sum()) == want and torch.equal(handed[0][handed[0] > 0], torch.full((want,), 1 / want))


@pytest.mark.parametrize("top_k", [2, 3, 4])
def test_top_k_keeps_every_score_tied_with_the_kth_as_transformers(top_k):
    """Scores tied at the k-th largest (bf16 logits tie often, 8 bits of mantissa): top-k keeps every token whose
    score equals the k-th, as transformers' TopKLogitsWarper does (it removes only scores below the k-th), and the
    draw gets exactly the softmax of what it keeps. A top-k keeping exactly k tokens (torch.topk's indices) dropped
    tied tokens past the k-th; the sampling tests drew distinct logits only."""
    transformers = pytest.importorskip("transformers")
    logits = torch.tensor([[2.0, 1.0, 1.0, 1.0, 0.5, 1.0], [1.0, 0.5, 1.0, 2.0, 0.5, 0.5]], dtype=torch.bfloat16)
    warped = transformers.generation.logits_process.TopKLogitsWarper(top_k)(None, logits.float())
    _, handed = handed_to_the_draw(logits, Sampling(temperature=1.0, top_k=top_k))
    assert int(torch.isfinite(warped).sum()) > 2 * top_k  # ties past the k-th in both rows: a cut at k would show
    assert torch.equal(handed[0], warped.softmax(dim=-1))


# --- preflight's lookup ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rule, value, bucket",
    [
        ("pow2>=16", 15, (1, 16)),
        ("pow2>=16", 16, (1, 16)),
        ("pow2>=16", 17, (17, 32)),
        ("pow2>=256", 256, (1, 256)),
        ("pow2", 1, (1, 1)),
        ("pow2", 2, (2, 2)),
        ("pow2", 4, (3, 4)),
        ("pow2", 5, (5, 8)),
    ],
)
def test_a_length_at_a_bucket_edge_is_in_the_bucket_it_ends(rule, value, bucket):
    """F itself is in pow2>=F's first bucket [1, F] (a first bucket closed below F put a 16-token prompt in
    [9, 16], which no certified entry holds)."""
    from neurobrix.buckets import bucket_of

    assert bucket_of(rule, value) == bucket


def test_a_first_bucket_that_is_no_power_of_two_is_no_rule():
    """pow2>=F needs F a power of two: with F = 12 the next bucket would be [9, 16], overlapping [1, 12], so
    one length would fall in two domains (an index keyed by it is refused by its schema)."""
    from neurobrix.buckets import valid_rule

    assert valid_rule("pow2>=16") and valid_rule("pow2") and valid_rule("exact")
    assert not valid_rule("pow2>=12") and not valid_rule("pow2>=0")


@pytest.mark.parametrize("rule", ["pow2", "pow2>=16"])
def test_a_length_of_zero_is_in_no_bucket(rule):
    """No call has a dimension of 0 tokens or rows: it is refused, not put in the first bucket [1, F]."""
    from neurobrix.buckets import bucket_of

    with pytest.raises(ValueError, match="must be >= 1"):
        bucket_of(rule, 0)


def test_each_call_is_looked_up_in_its_own_dtype(tmp_path):
    """A class certified in fp32 only has no setting for an fp16 call: preflight names it (looking every call
    up as fp32 gave the fp16 call the fp32 setting)."""
    from kernel_tables import write_tables

    from neurobrix import tables
    from neurobrix.errors import MissingEntryError
    from neurobrix.plan import resolve

    loaded = tables.load(write_tables(tmp_path / "t", dtypes=("fp32",)))
    assert resolve({("linear", "fp32", (2, 8, 4))}, loaded, "interpreter").settings
    with pytest.raises(MissingEntryError, match=r"linear +fp16 M=2, N=8, K=4 "):
        resolve({("linear", "fp16", (2, 8, 4))}, loaded, "interpreter")
