"""The model path against transformers for config.json files as the Hub holds them, and sampling against its
definition.

tests/test_engine.py imports checkpoints that this machine's transformers saves: every config.json there is
written in transformers 5's form (``rope_parameters``, an explicit ``num_key_value_heads`` and ``head_dim``,
``rms_norm_eps`` at transformers' default of 1e-6). Most checkpoints on the Hub were saved by transformers 4:
``rope_theta`` and ``rope_scaling`` at the top level, ``num_key_value_heads`` absent for full multi-head
attention, ``head_dim`` only where it is not hidden_size / heads, and an eps of their own. Here tiny random
checkpoints are saved with such config.json files and the engine's logits (PyTorch's kernels: what is checked
is the model path, not a kernel) are compared with transformers' model in float64 reading the same folder, at
a prompt past the Llama-3 rule's original context, then step by step through the decode path.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import parity
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from neurobrix.checkpoint import read_config, weight_files
from neurobrix.generate import Decoder, Sampling, generate, prefill, sample
from neurobrix.model import Transformer, weights_from_files
from neurobrix.ops import TORCH

transformers = pytest.importorskip("transformers")

COMMON = {
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "max_position_embeddings": 128,
    "vocab_size": 97,
}
LLAMA3 = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 16,
}
# name -> (transformers config class, its arguments, top-level config.json fields as transformers 4 wrote them,
#          fields transformers 4 left out)
VARIANTS = {
    # Llama 3.x as on the Hub: rope_theta and llama3 rope_scaling at the top level, GQA, a head_dim that is not
    # hidden_size / heads (64 / 4 = 16), an eps far from transformers' default
    "llama3-legacy-head-dim": (
        "LlamaConfig",
        {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 24, "rms_norm_eps": 0.05},
        {"rope_theta": 500000.0, "rope_scaling": LLAMA3},
        (),
    ),
    # Llama 1/2 style: multi-head attention with no num_key_value_heads field at all, tied embeddings, a theta
    # of its own at the top level
    "llama-mha-no-kv-field": (
        "LlamaConfig",
        {"num_attention_heads": 4, "num_key_value_heads": 4, "rms_norm_eps": 0.02, "tie_word_embeddings": True},
        {"rope_theta": 1000000.0},
        ("num_key_value_heads", "head_dim"),
    ),
    # Mistral v0.1 style: a sliding attention window, here exactly the positions the tests below feed (PROMPT + STEPS
    # - 1), so that the last step's query still sees the first key in transformers' model too
    "mistral-sliding-window": (
        "MistralConfig",
        {"num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 0.05},
        {"rope_theta": 10000.0, "sliding_window": 28},
        ("head_dim",),
    ),
    # Qwen2 as on the Hub: q/k/v bias, rope_theta at the top level, GQA 3
    "qwen2-legacy": (
        "Qwen2Config",
        {"num_attention_heads": 6, "num_key_value_heads": 2, "hidden_size": 48, "rms_norm_eps": 0.03},
        {"rope_theta": 50000.0},
        ("head_dim",),
    ),
}
PROMPT = 24  # past LLAMA3's original context of 16 positions: where the scaled frequencies matter most
STEPS = 5
assert VARIANTS["mistral-sliding-window"][2]["sliding_window"] == PROMPT + STEPS - 1


def save_legacy(folder: Path, variant: str) -> Path:
    """A tiny random checkpoint whose config.json has the variant's fields as transformers 4 wrote them."""
    config_name, arguments, top_level, absent = VARIANTS[variant]
    config = getattr(transformers, config_name)(**{**COMMON, **arguments})
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    with torch.no_grad():  # weights large enough that greedy choices are far from ties (as conformance.tiny)
        for name, p in model.named_parameters():
            p.normal_(1.0 if "norm" in name else 0.0, 0.2)
    model.save_pretrained(folder, safe_serialization=True)
    path = folder / "config.json"
    data = json.loads(path.read_text())
    data.pop("rope_parameters", None)
    for name in absent:
        data.pop(name, None)
    data.update(top_level)
    path.write_text(json.dumps(data, indent=2))
    return folder


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("legacy")
    return {variant: save_legacy(root / variant, variant) for variant in VARIANTS}


def engine(folder: Path, capacity: int) -> Transformer:
    cfg = read_config(folder)
    weights = weights_from_files(cfg, [str(p) for p in weight_files(folder)], torch.float32, "cpu")
    return Transformer(cfg, weights, TORCH, batch=1, capacity=capacity)


def hf_float64(folder: Path):
    return transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64).eval()


def prompt(vocab: int) -> list[int]:
    return torch.randint(0, vocab, (PROMPT,), generator=torch.Generator().manual_seed(1)).tolist()


@pytest.mark.parametrize("variant", VARIANTS)
def test_hub_config_fields_are_read_as_transformers_reads_them(checkpoints, variant):
    """Each field the forward pass depends on, against transformers' own reading of the same config.json."""
    folder = checkpoints[variant]
    ours, theirs = read_config(folder), transformers.AutoConfig.from_pretrained(folder)
    assert "rope_parameters" not in json.loads((folder / "config.json").read_text())  # the transformers 4 form
    rope = theirs.rope_parameters
    assert ours.rope_theta == rope["rope_theta"]
    want_scaling = None if rope.get("rope_type", "default") == "default" else rope
    assert (ours.rope_scaling is None) == (want_scaling is None)
    if want_scaling is not None:
        assert {k: v for k, v in want_scaling.items() if k != "rope_theta"} == dict(ours.rope_scaling)
    # (a config without head_dim: the attention modules take hidden_size / heads, as Qwen2Attention does)
    assert ours.head_dim == (getattr(theirs, "head_dim", None) or theirs.hidden_size // theirs.num_attention_heads)
    assert ours.num_heads == theirs.num_attention_heads and ours.num_kv_heads == theirs.num_key_value_heads
    assert ours.rms_norm_eps == theirs.rms_norm_eps
    assert ours.tie_word_embeddings == theirs.tie_word_embeddings
    assert ours.sliding_window == getattr(theirs, "sliding_window", None)


@pytest.mark.parametrize("variant", VARIANTS)
def test_prefill_and_every_decode_step_match_transformers_float64(checkpoints, variant):
    """Logits of the prompt's last token, then of each decode step (the engine's own Decoder feeding its
    position and cache length), each within float32's derived tolerance of transformers in float64."""
    folder = checkpoints[variant]
    model = engine(folder, PROMPT + STEPS)
    hf = hf_float64(folder)
    ids = prompt(model.cfg.vocab_size)
    decoder = Decoder(model, 1, use_graph=False)
    with torch.no_grad():
        ours = prefill(model, [ids])[0]
        for step in range(STEPS):
            truth = hf(torch.tensor([ids])).logits[0, -1]
            error = float((ours.double() - truth).abs().max())
            tolerance = parity.logits_tolerance(model.cfg, len(ids), "fp32", truth)
            assert error <= tolerance, f"step {step}: logits off by {error:.3g} > {tolerance:.3g}"
            token = int(truth.argmax())
            ours = decoder.step(torch.tensor([token]), len(ids))[0]
            ids.append(token)


@pytest.mark.parametrize("variant", VARIANTS)
def test_greedy_generation_matches_transformers(checkpoints, variant):
    folder = checkpoints[variant]
    model = engine(folder, PROMPT + STEPS)
    hf = hf_float64(folder)
    ids = prompt(model.cfg.vocab_size)
    out, stats = generate(model, ids, STEPS, Sampling(), eos=set())
    expected = list(ids)
    with torch.no_grad():
        for _ in range(STEPS):
            expected.append(int(hf(torch.tensor([expected])).logits[0, -1].argmax()))
    assert out == expected[len(ids) :] and stats.generated_tokens == STEPS


def test_a_generation_past_the_sliding_window_is_refused(checkpoints):
    """One position past the window, transformers' model hides the first key from the last query, which the engine
    does not: its logits there are not transformers', and a generation reaching that far is refused (a shorter one,
    within the window, is the greedy test above)."""
    from neurobrix.errors import UsageError

    folder = checkpoints["mistral-sliding-window"]
    window = PROMPT + STEPS - 1
    model = engine(folder, PROMPT + STEPS + 1)
    ids = prompt(model.cfg.vocab_size)
    with pytest.raises(UsageError, match=f"feed the model {window + 1} positions, more than its sliding attention"):
        generate(model, ids, STEPS + 1, Sampling(), eos=set())
    longer = ids + ids[: window + 1 - PROMPT]
    with torch.no_grad():
        truth = hf_float64(folder)(torch.tensor([longer])).logits[0, -1]
        ours = prefill(engine(folder, window + 1), [longer])[0]
    assert float((ours.double() - truth).abs().max()) > parity.logits_tolerance(model.cfg, window + 1, "fp32", truth)


@pytest.mark.parametrize("stored", ["both-different", "both-equal", "head-only", "embedding-only"])
def test_tied_embeddings_are_the_tensors_transformers_loads(tmp_path, stored):
    """config.json ties the embeddings; the checkpoint holds both tensors (different or equal), only the output
    head, or only the embedding: the engine's logits are transformers' (its model in float64) reading the same
    folder, which keeps two different tensors apart and gives a lone head to the embedding as well."""
    from safetensors.torch import load_file, save_file
    from store_fixtures import make_checkpoint

    folder = make_checkpoint(tmp_path / "model", use_transformers=False)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "tie_word_embeddings": True}))
    weights = load_file(folder / "model.safetensors")
    assert not torch.equal(weights["lm_head.weight"], weights["model.embed_tokens.weight"])
    if stored == "both-equal":
        weights["lm_head.weight"] = weights["model.embed_tokens.weight"].clone()
    elif stored == "head-only":
        del weights["model.embed_tokens.weight"]
    elif stored == "embedding-only":
        del weights["lm_head.weight"]
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    ids = [3, 4, 5, 6, 7, 8, 9]
    with torch.no_grad():
        truth = hf_float64(folder)(torch.tensor([ids])).logits[0, -1]
        model = engine(folder, len(ids))
        ours = prefill(model, [ids])[0]
    assert float((ours.double() - truth).abs().max()) <= parity.logits_tolerance(model.cfg, len(ids), "fp32", truth)


# --- sampling: the distribution handed to the draw, against its definition in float64 -----------------------


def reference_distribution(logits: list[float], temperature: float, top_k: int | None, top_p: float | None):
    """The next-token distribution by its definition (transformers' warpers' order): logits over the
    temperature, the k largest kept, then the smallest set of the most likely tokens whose probability
    reaches top_p, renormalised; float64, a token at a time."""
    scores = [x / temperature for x in logits]
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    kept = order[: top_k if top_k is not None else len(order)]
    if top_p is not None:
        top = max(scores[i] for i in kept)
        weights = [math.exp(scores[i] - top) for i in kept]
        total, reached, nucleus = sum(weights), 0.0, []
        for i, w in zip(kept, weights):
            nucleus.append(i)
            reached += w / total
            if reached >= top_p:
                break
        kept = nucleus
    top = max(scores[i] for i in kept)
    weights = {i: math.exp(scores[i] - top) for i in kept}
    total = sum(weights.values())
    return [weights.get(i, 0.0) / total for i in range(len(scores))]


def handed_to_the_draw(logits: torch.Tensor, sampling: Sampling, seen: torch.Tensor | None = None):
    """``sample``'s tokens and the distributions it hands ``torch.multinomial`` (each draw replaced by the row's
    most likely token)."""
    handed: list[torch.Tensor] = []

    def draw(probs, n, generator=None):
        handed.append(probs.clone())
        return probs.argmax(dim=-1, keepdim=True)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(torch, "multinomial", draw)
        tokens = sample(logits, sampling, None, seen) if seen is not None else sample(logits, sampling, None)
    return tokens, handed


def _margin_ok(logits: list[float], temperature: float, top_k: int | None, top_p: float | None) -> bool:
    """No cumulative probability within float32's reach of top_p (where either side of the cut is right)."""
    if top_p is None or top_p >= 1:
        return True
    probs = reference_distribution(logits, temperature, top_k, None)
    cumulative = 0.0
    for p in sorted(probs, reverse=True):
        cumulative += p
        if abs(cumulative - top_p) < 1e-4:
            return False
    return True


@settings(max_examples=50, deadline=None, derandomize=True)
@given(
    data=st.data(),
    vocab=st.integers(2, 30),
    rows=st.integers(1, 3),
    temperature=st.sampled_from([0.3, 0.7, 1.0, 1.5, 4.0]),
    top_k=st.none() | st.integers(1, 32),
    top_p=st.none() | st.sampled_from([0.1, 0.5, 0.8, 0.95, 1.0]),
)
def test_sampling_draws_from_the_defined_distribution(data, vocab, rows, temperature, top_k, top_p):
    """``sample`` hands ``torch.multinomial`` exactly the distribution the options define, per row: the
    temperature divides, top-k keeps the k largest, top-p the smallest nucleus reaching p."""
    logits = []
    for _ in range(rows):  # distinct logits in a random order (no ties at the k-th score), of a random spread
        order = data.draw(st.permutations(range(vocab)))
        spread = data.draw(st.sampled_from([0.05, 0.3, 1.0]))
        logits.append([(v - vocab / 2) * spread for v in order])
    assume(all(_margin_ok(row, temperature, top_k, top_p) for row in logits))
    tokens, (probs,) = handed_to_the_draw(torch.tensor(logits), Sampling(temperature, top_k, top_p, seed=0))
    assert probs.shape == (rows, vocab) and tokens.shape == (rows,)
    for row, got in zip(logits, probs):
        want = torch.tensor(reference_distribution(row, temperature, top_k, top_p), dtype=torch.float64)
        torch.testing.assert_close(got.double(), want, rtol=0, atol=1e-5)


def test_greedy_takes_each_rows_largest_logit():
    logits = torch.tensor([[0.1, 3.0, -1.0, 2.9], [5.0, -2.0, 4.0, 0.0], [-1.0, -0.5, -3.0, -0.7]])
    assert sample(logits, Sampling(), None).tolist() == [max(range(4), key=lambda i: float(row[i])) for row in logits]


# --- repetition penalty: against transformers' processor and its generate ---------------------------------


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    rows=st.integers(1, 3),
    vocab=st.integers(2, 40),
    held=st.integers(1, 12),
    penalty=st.sampled_from([0.5, 1.05, 1.3, 2.0]),
    seed=st.integers(0, 2**16),
)
def test_repetition_penalty_is_transformers_processor(rows, vocab, held, penalty, seed):
    """``penalize`` over the marks of each sequence's tokens gives the scores transformers'
    RepetitionPenaltyLogitsProcessor gives for the same token ids (repeats included), bit for bit in float32."""
    from transformers.generation.logits_process import RepetitionPenaltyLogitsProcessor

    from neurobrix.generate import penalize

    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn((rows, vocab), generator=gen).to(torch.bfloat16)
    ids = torch.randint(0, vocab, (rows, held), generator=gen)
    seen = torch.zeros((rows, vocab), dtype=torch.bool).scatter_(1, ids, True)
    want = RepetitionPenaltyLogitsProcessor(penalty)(ids, logits.float())
    assert torch.equal(penalize(logits, seen, penalty), want)


@pytest.mark.parametrize("device_pick", [False, True])
def test_greedy_with_repetition_penalty_is_transformers_generate(checkpoints, device_pick):
    """Greedy text with a repetition penalty, on both decode paths (the token picked on the host, or on the
    device as inside the step's graph), is transformers' ``generate(do_sample=False, repetition_penalty=...)``
    token for token (its model in float64), and differs from the text without the penalty."""
    from neurobrix.generate import generate_batch

    folder = checkpoints["llama3-legacy-head-dim"]
    penalty, steps = 1.8, 24
    model = engine(folder, PROMPT + steps)
    ids = prompt(model.cfg.vocab_size)
    hf = hf_float64(folder)
    with torch.no_grad():
        want = hf.generate(
            torch.tensor([ids]),
            do_sample=False,
            repetition_penalty=penalty,
            max_new_tokens=steps,
            min_new_tokens=steps,
            eos_token_id=None,
            pad_token_id=0,
        )[0, len(ids) :].tolist()
    plain, _ = generate(model, ids, steps, Sampling(), eos=set())
    model = engine(folder, PROMPT + steps)
    opts = Sampling(repetition_penalty=penalty)
    (got,), _ = generate_batch(model, [ids], steps, opts, set(), device_pick=device_pick)
    assert got == want and got != plain


@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    data=st.data(),
    vocab=st.integers(2, 30),
    temperature=st.sampled_from([0.5, 1.0, 2.0]),
    top_k=st.none() | st.integers(1, 32),
    top_p=st.none() | st.sampled_from([0.5, 0.9, 1.0]),
    penalty=st.sampled_from([0.7, 1.3]),
)
def test_sampling_with_a_repetition_penalty_draws_from_transformers_distribution(
    data, vocab, temperature, top_k, top_p, penalty
):
    """With a repetition penalty, ``sample`` hands the draw the distribution transformers' processors give:
    the penalty on the float32 logits first, then temperature, top-k and top-p (its warpers' order)."""
    from transformers.generation.logits_process import (
        RepetitionPenaltyLogitsProcessor,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    order = data.draw(st.permutations(range(vocab)))  # distinct logits: no ties at a cut
    logits = torch.tensor([[(v - vocab / 2) * 0.4 for v in order]])
    ids = torch.tensor([data.draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=6))])
    scores = RepetitionPenaltyLogitsProcessor(penalty)(ids, logits.float())
    assume(_margin_ok(scores[0].tolist(), temperature, top_k, top_p))
    scores = TemperatureLogitsWarper(temperature)(ids, scores)
    if top_k is not None:
        scores = TopKLogitsWarper(top_k)(ids, scores)
    if top_p is not None and top_p < 1:
        scores = TopPLogitsWarper(top_p)(ids, scores)
    want = scores.softmax(dim=-1)
    seen = torch.zeros((1, vocab), dtype=torch.bool).scatter_(1, ids, True)
    token, drawn = handed_to_the_draw(logits, Sampling(temperature, top_k, top_p, repetition_penalty=penalty), seen)
    torch.testing.assert_close(drawn[0], want, rtol=0, atol=1e-6)
    assert bool(seen[0, token[0]])  # the drawn token is marked for the next step


def test_token_masking_settings_are_transformers_processors(checkpoints):
    """The generation settings that mask tokens (neurobrix.generate.Constraints), each chosen to change this model's
    greedy text, give transformers' ``generate`` ids token for token (its model in float64, the setting passed as
    generation_config.json would pass it), with and without a repetition penalty."""
    from neurobrix.generate import Constraints, generate_batch

    assert Constraints(forced_bos_token_id=0).active and not Constraints(min_length=0, no_repeat_ngram_size=0).active
    folder = checkpoints["llama3-legacy-head-dim"]
    steps = 8
    hf = hf_float64(folder)

    def theirs(ids: list[int], eos: list[int], penalty: float, **setting) -> list[int]:
        config = transformers.GenerationConfig(
            eos_token_id=eos, pad_token_id=0, max_new_tokens=steps, do_sample=False, repetition_penalty=penalty
        )
        with torch.no_grad():
            return hf.generate(torch.tensor([ids]), generation_config=config, **setting)[0, len(ids) :].tolist()

    ids = prompt(97)
    plain = theirs(ids, [2], 1.0)  # (config.json's eos id: generate takes it when given none)
    other = next(t for t in range(97) if t not in plain)
    settings = [
        ([plain[0]], [2], {"no_repeat_ngram_size": 1}),  # the prompt holds the first new token
        ([ids[-1], plain[0]], [2], {"no_repeat_ngram_size": 2}),  # the prompt holds (last token, first new)
        ([], [2], {"suppress_tokens": [plain[1], plain[4]]}),
        ([], [2], {"begin_suppress_tokens": [plain[0]]}),
        ([], [2], {"bad_words_ids": [[plain[2]], [plain[4], plain[5]]]}),
        ([], [plain[2]], {"min_new_tokens": 6}),
        ([], [plain[2]], {"min_length": len(ids) + 5}),
        ([], [plain[2]], {"bad_words_ids": [[plain[2]], [plain[1], plain[2]]]}),  # a lone eos id is not banned
        ([], [other], {"forced_eos_token_id": other}),
        ([], [2], {"encoder_repetition_penalty": 3.0}),  # before the repetition penalty (both on below)
    ]
    # after a one-token prompt: the forced start, and the suppression one token later (at the forced token itself it
    # would leave no token at all)
    forced = theirs(ids[:1], [2], 1.0, forced_bos_token_id=other)
    settings.append(([], [2], {"forced_bos_token_id": other, "begin_suppress_tokens": [other, forced[1]]}))
    for n, (prefix, eos, setting) in enumerate(settings):
        for penalty in (1.0, 1.8) if n in (1, len(settings) - 2, len(settings) - 1) else (1.0,):
            tokens = ids[:1] if "forced_bos_token_id" in setting else prefix + ids
            want = theirs(tokens, eos, penalty, **setting)
            values = {
                k: tuple(map(tuple, v)) if k == "bad_words_ids" else tuple(v) if isinstance(v, list) else v
                for k, v in setting.items()
            }
            if "forced_eos_token_id" in values:
                values["forced_eos_token_id"] = (values["forced_eos_token_id"],)
            model = engine(folder, len(tokens) + steps)
            (got,), _ = generate_batch(
                model,
                [tokens],
                steps,
                Sampling(repetition_penalty=penalty),
                set(eos),
                constraints=Constraints(**values),
            )
            assert got == want, (setting, penalty)
            if penalty == 1.0:
                assert got != theirs(tokens, eos, 1.0), setting  # the setting changes the text here
