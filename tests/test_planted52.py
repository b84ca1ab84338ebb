"""Round 52 of planted bugs (tests/planted52_plants.py, driven by tests/planted52_driver.py), in the code outside the
kernels that a kernel's proof rests on (class: a proof that holds for the wrong thing): the float64 references
(conformance/reference.py) and the error bounds derived for them (conformance/bounds.py), the judge
(``harness.judge``, ``wrong_outputs``), the draws (conformance/strategies.py), and the engine's host code that
prepares a kernel's inputs (neurobrix/model.py's prefill chunks; neurobrix/generate.py's decode positions and cache
lengths, its two one-step-ahead loops, what a step records).

40 plants, each applied alone by the driver against the tests a contributor would run for that code (test_bounds.py
with test_planted37.py; test_reference.py with test_model_reference.py; test_planted49.py with test_kmut4.py;
test_strategies.py with test_planted37.py; for the engine test_chunks.py, test_generate.py, test_engine.py's
transformers comparisons that decode, chunk or batch, and the loops' own tests in test_generation_planted.py,
test_runtime_planted.py and test_host_planted14.py), 4 to 177 s a plant on a loaded 2-core machine:

- caught before the round (27): b01 bf16 given fp16's unit roundoff; b02 fp16's underflow given fp32's; b04 K read
  from x's rows; b08 the final rounding's binade from |y| alone; b13 silu's overflow allowance on the wrong side;
  r01 the linear reference in float32; r02 silu's exp in float32; r03 eps outside the square root; r04 the fused
  norm's reference over the unrounded stream; r05 a chunk's mask admitting the next key; r06 GQA heads interleaved;
  r07 the decode reference reading one position past the length; h01 only the first pair judged (test_kmut4.py's
  flash first-query case, whose first pair passes); d02 the edges never drawn; d03 the range's top not an edge; d04
  the values' seed fixed; d05 cancel's halves not negations; e01 a decode step's cache length the position; e02
  the sampling loop's first step fed at the prompt's last position, its k and v overwritten (test_engine.py's host
  pick against the device pick, a test first left out of the plant's list); e03 the greedy loop's first step a
  position late; e05 an ended sequence still streamed; e06 the greedy loop recording the step queued ahead (one
  token early, one lost); e07 the EOS check before the append; e08 a chunk of 1's last pass dropped; e09 the chunk
  rounded up past PREFILL_TOKENS; e10 a later chunk's attention over the whole cache; e11 the capacity check one
  position short.
- survived, now caught here (13): b03 an fp32 special function's ulps counted as unit roundoffs (half the
  allowance); b05 the linear bound's underflow term without its K; b06 gemv's split-K merge left out of its depth;
  b07 the tensor cores' truncation counted as rounding; b09 the residual add's underflow dropped; b10 rms_norm's
  two products counted as one; b11 rms_norm's underflowing squares' term not divided by a; b12 rotary's gamma_2
  (the fp32 table's rounding left out); b14 the rope table's bound without theta's roundings (test_bounds.py's
  rope_cache case draws head dims 64 and 128 only, where every exponent 2i / D is exact in fp32); r08 a partial
  rotary_dim's frequencies over head_dim; h02 an output's dtype not compared; d01 a second tile's edges (2b +- 1)
  not drawn; e04 a token decoded and kept past max_new_tokens (the sampling loop's first step queued at max_new_tokens
  1: a cache of the prompt's length, all one new token needs, indexed past its end).
- equivalent (0). A stop-string plant written first (the stop check on the new tokens alone) was round 29's s04 and
  was replaced by e06.

The bounds' checks are of two kinds. Where a GPU may realize the error the term allows, the case realizes it: fp32
subnormal products or sums flushed to zero (b05, b09, b11), a division off by its allowed ulps (b03), the rope cache's
fp32 exponents at a head dim of 72 (b14). Where no honest input reaches the term (two fp32 products' roundings next to
the unused SPECIAL allowances, b10; a fp32 table's rounding of c and s, b12; a depth count, b06, b07), the bound is
checked against the derivation its docstring writes, computed here on its own. The engine's cases check decoding over
the KV cache against recomputing the whole sequence without a cache at every step (a random two-layer model on
PyTorch's kernels), with both loops and prefills in chunks of 1 and 2. Each test here fails with its plant applied
(checked: each plant in a copy with this file alone; r02, r04, r05, r06, r07, h01, d04, e01, e02, e03, e06,
e08 and e10 too, which the tests before the round caught) and passes on the clean code. No defect was found in the
clean code.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from hypothesis import given, settings

from conformance import bounds as bd
from conformance import harness
from conformance import reference as ref
from conformance.strategies import BLOCK_SIZES, edge_values, tensors

U32 = 2.0**-24


def _within(actual: torch.Tensor, truth: torch.Tensor, bound: torch.Tensor) -> float:
    return bd.compare(actual, truth, bound)[0]


# ------------------------------------------------------------------------------------- bounds: what a GPU may do
def test_a_division_off_by_its_allowed_ulps_is_within_silu_muls_bound():
    """b03: an fp32 division (or exp2, sqrt) within SPECIAL_ULPS ulps of the truth is what the bounds allow it (an
    ulp is 2 u): a silu_mul whose division is that far off, the exp exact, is within the bound (at g = 20 the exp's
    own error is scaled by 1 - sigmoid(g) ~ 2e-9), and half the allowance is not."""
    g = torch.full((4, 1), 20.0, dtype=torch.float64)
    u = torch.tensor([[1.0], [1.5], [-1.25], [1.75]], dtype=torch.float64)
    gu = torch.cat((g, u), dim=1).float()
    truth = ref.silu_mul(gu)
    off = bd.SPECIAL_ULPS * 2 * U32 * 0.99  # the division SPECIAL_ULPS ulps (of 2u each) off, then stored in fp32
    actual = (truth * (1 + off)).float()
    bound = bd.silu_mul(gu, truth)
    assert _within(actual, truth, bound) <= 1
    assert (actual.double() - truth).abs().max() > 0.6 * bound.max()  # the case is at the bound's edge


def test_a_flushed_accumulation_of_k_subnormal_products_is_within_the_linear_bound():
    """b05: a GPU may flush fp32 subnormals to zero; each of K products of 2^-128 (subnormal in fp32) then adds 0,
    an error of K 2^-128 in all, which the bound's (K + 2) e32 allows and one e32 per output does not."""
    K = 64
    x = torch.full((1, K), 2.0**-64, dtype=torch.float32)
    w = torch.full((3, K), 2.0**-64, dtype=torch.float32)
    truth = ref.linear(x, w)
    flushed = torch.zeros((1, 3), dtype=torch.float32)
    assert _within(flushed, truth, bd.linear(x, w, None, truth)) <= 1


def test_a_flushed_fp32_residual_sum_is_within_its_bound():
    """b09: two fp32 subnormals' sum, flushed to zero by the GPU, is off by less than 2^-126: the residual add's
    bound allows that underflow (an fp32 model's stream is stored as the kernel adds it, with no rounding after)."""
    x = torch.tensor([[2.0**-127, -(2.0**-130)]], dtype=torch.float32)
    r = torch.tensor([[2.0**-128, 2.0**-129]], dtype=torch.float32)
    truth = ref.residual_add(x, r)
    assert _within(torch.zeros_like(x), truth, bd.residual_add(x, r, truth)) <= 1


@pytest.mark.parametrize("K, block_k, split_k", [(1000, 32, 4), (4096, 128, 2), (17, 16, 3)])
def test_gemvs_depth_counts_each_lane_the_lanes_and_the_split_merge(K, block_k, split_k):
    """b06: gemv's order, as linear_depth's docstring gives it: each lane adds ceil(k_slice / BLOCK_K) products,
    the BLOCK_K lanes are summed (BLOCK_K - 1), the SPLIT_K partials merged in order (SPLIT_K - 1)."""
    k_slice = math.ceil(math.ceil(K / split_k) / block_k) * block_k
    want = math.ceil(k_slice / block_k) + (block_k - 1) + (split_k - 1)
    config = {"variant": "gemv", "BLOCK_K": block_k, "SPLIT_K": split_k}
    assert bd.linear_depth(config, K, torch.float16) >= want


@pytest.mark.parametrize("variant", ["tiled", "tma"])
def test_tensor_core_steps_are_counted_twice_for_their_truncation(variant):
    """b07: a tensor core may truncate where round-to-nearest rounds (up to 2 u a step): gamma_n(2u) = gamma_2n(u),
    the K loop's steps counted twice, by whichever of the interpreter's and a GPU's orders is longer."""
    K, block_k = 4096, 64
    steps = max(math.ceil(K / block_k) + block_k - 1, math.ceil(K / 16) + 16)
    assert bd.linear_depth({"variant": variant, "BLOCK_K": block_k}, K, torch.bfloat16) >= 2 * steps


def test_squares_flushed_below_fp32s_normals_are_within_rms_norms_bound():
    """b11: squares below 2^-126 flushed to zero by the GPU lose up to 2^-126 each from the sum: relative to a =
    mean(x^2) that is (N + 2) e32 / a, large where a is small. x = [2^-55, s, s, s] with s^2 just below 2^-126 (eps
    0): a kernel computes a = 2^-112 exactly, off by ~2e-5 relative, and y by half that."""
    s = float(torch.tensor(2.0**-63.1, dtype=torch.float32))
    assert s * s < 2.0**-126
    x = torch.tensor([[2.0**-55, s, -s, s]], dtype=torch.float32)
    w = torch.tensor([1.0, -0.75, 1.5, 0.625], dtype=torch.float32)
    truth = ref.rms_norm(x, w, 0.0)
    flushed = (x.double() * 2.0**56 * w.double()).float()  # rstd = 1 / sqrt(2^-112), exact in fp32
    assert (flushed.double() - truth).abs().max() > 1e-6 * truth.abs().max()  # the case is far from exact
    assert _within(flushed, truth, bd.rms_norm(x, w, 0.0, truth)) <= 1


def test_rms_norms_bound_is_the_docstrings_composition():
    """b10: the bound composes each operation the docstring lists: the mean's gamma_{N+2} (r1 through the square
    root), the square root's and the division's SPECIAL, and the two fp32 products x rstd w (u each), then 2 e32.
    Two products' roundings are never both reached by honest inputs (their sum is below the SPECIAL allowances the
    GPU's approximate sqrt and division leave unused), so the count is checked against the derivation itself."""
    g = torch.Generator().manual_seed(10)
    x = torch.randn(3, 48, generator=g).float()
    w = torch.randn(48, generator=g).float()
    truth = ref.rms_norm(x, w, 1e-5)
    N = x.shape[1]
    a = (x.double() ** 2).mean(dim=-1, keepdim=True) + 1e-5
    gam = (N + 2) * U32 / (1 - (N + 2) * U32) + (N + 2) * 2.0**-126 / a
    r1 = (1 - gam) ** -0.5 - 1
    S = bd.SPECIAL
    rel = (1 + r1) * (1 + S / (1 - S)) * (1 + S) * (1 + U32) ** 2 - 1
    derived = rel * truth.abs() + 2 * 2.0**-126
    assert (bd.rms_norm(x, w, 1e-5, truth) >= derived * (1 - 1e-12)).all()


def test_rotarys_bound_counts_the_tables_rounding_too():
    """b12: each output is a two-term dot product (two products, one addition: gamma_2) whose c and s may be the
    fp32 rope cache's rounding of the float64 tables (one more u each): gamma_3 on |x1||c| + |x2||s|, and 3 e32. A
    table's rounding is as large as the dot's own roundings, so the count is checked against the derivation."""
    g = torch.Generator().manual_seed(12)
    B, S, H, D, P = 1, 3, 2, 8, 5
    x = torch.randn(B, S, H, D, generator=g).float()
    tables = ref.rope_frequencies(D, 10000.0, P)
    positions = torch.tensor([[1, 2, 4]])
    truth = ref.rotary(x, tables.cos, tables.sin, positions)
    c = tables.cos[positions][:, :, None, :].abs()
    s = tables.sin[positions][:, :, None, :].abs()
    a1, a2 = x.double()[..., : D // 2].abs(), x.double()[..., D // 2 :].abs()
    magnitude = torch.cat((a1 * c + a2 * s, a2 * c + a1 * s), dim=-1)
    derived = 3 * U32 / (1 - 3 * U32) * magnitude + 3 * 2.0**-126
    assert (bd.rotary(x, tables.cos, tables.sin, positions, truth) >= derived * (1 - 1e-12)).all()


def test_the_rope_caches_exponent_rounding_is_within_the_tables_bound_at_a_head_dim_no_power_of_two():
    """b14: the engine's rope_cache rounds each exponent 2i / D to fp32, exact where D is a power of two (the head
    dims test_bounds.py's rope_cache test draws: 64, 128) and off by up to u otherwise, which theta^x turns into a
    relative error of ln(theta) x u of the frequency: the bound's ln(theta) roundings. At D = 72 and theta = 10^6
    (ln 13.8) the cache's error at 16k positions exceeds a bound without them, and is within the bound."""
    from neurobrix.ops import rope_cache

    head_dim, theta, rows = 72, 1.0e6, 1 << 14
    tables = ref.rope_frequencies(head_dim, theta, rows)
    angle = torch.arange(rows, dtype=torch.float64)[:, None] * tables.inv_freq[None, :]
    cos, sin = rope_cache(head_dim, theta, rows, None)
    for engine, table in ((cos, tables.cos), (sin, tables.sin)):
        assert _within(engine, table, bd.rope_table(table, angle=angle, theta=theta)) <= 1
    fraction = torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim  # transformers' exponents, in fp32
    assert (fraction.double() != torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim).any()


# ------------------------------------------------------------------------------------------------------ the judge
def test_a_pair_after_the_first_that_exceeds_its_bound_fails_the_verdict(monkeypatch):
    """h01: every pair a record returns is compared (a fused norm's residual stream, a table's second column): the
    first within its bound, the second not, is a failed verdict naming the second."""
    t = lambda v: torch.tensor([v], dtype=torch.float64)  # noqa: E731
    pairs = [(t(2.5), t(2.0), t(1.0), "first"), (t(13.0), t(10.0), t(1.0), "second")]
    monkeypatch.setitem(harness.RECORDS, "planted52", SimpleNamespace(judge=lambda case, outputs, config: pairs))
    monkeypatch.setattr(harness, "wrong_outputs", lambda case, outputs: "")
    verdict = harness.judge(SimpleNamespace(kernel="planted52"), (), {})
    assert verdict.ratio == 3.0 and verdict.explanation.startswith("second: ")


def test_an_output_left_in_fp32_where_the_op_returns_fp16_is_refused_before_any_bound():
    """h02: an fp32 result never rounded to fp16 is closer to float64 than any fp16 one and within every bound: the
    judge refuses an output of another dtype than the op's, whatever its values."""
    gu = torch.randn(4, 16).half()
    case = harness.Case("silu_mul", "fp16", {"M": 4, "I": 8}, {"gu": gu})
    exact = ref.silu_mul(gu).float()  # the float64 truth to fp32: within fp16's bound everywhere
    verdict = harness.judge(case, (exact,), {})
    assert verdict.ratio == math.inf and "float32" in verdict.explanation and "float16" in verdict.explanation


# ------------------------------------------------------------------------------------------------- the references
def _naive_attention(q, k, v, scale, visible):
    """Softmax attention written out one query, head and key at a time in Python floats (float64): q [C, Hq, D],
    k and v [S, Hkv, D]; query head h reads kv head h // (Hq // Hkv); ``visible(i, j)`` says whether query i sees key
    j."""
    C, HQ, D = q.shape
    S, HKV = k.shape[0], k.shape[1]
    out = torch.zeros(C, HQ, D, dtype=torch.float64)
    for i in range(C):
        for h in range(HQ):
            kv = h // (HQ // HKV)
            keys = [j for j in range(S) if visible(i, j)]
            scores = [scale * sum(float(q[i, h, d]) * float(k[j, kv, d]) for d in range(D)) for j in keys]
            top = max(scores)
            weights = [math.exp(s - top) for s in scores]
            total = math.fsum(weights)
            for d in range(D):
                out[i, h, d] = math.fsum(w * float(v[j, kv, d]) for w, j in zip(weights, keys)) / total
    return out


def test_a_chunks_reference_is_each_query_over_the_keys_up_to_its_own_position():
    """r05, r06: a chunk of C = 3 queries at positions S - C .. S - 1 of S = 7 keys, 4 query heads over 2 kv heads:
    query i sees keys j <= S - C + i (never the next one), head h reads kv head h // 2 (grouped, not interleaved)."""
    g = torch.Generator().manual_seed(52)
    C, S, HQ, HKV, D = 3, 7, 4, 2, 3
    q = torch.randn(1, C, HQ, D, generator=g, dtype=torch.float64)
    k = torch.randn(1, S, HKV, D, generator=g, dtype=torch.float64)
    v = torch.randn(1, S, HKV, D, generator=g, dtype=torch.float64)
    got = ref.attention_chunk(q, k, v, 0.7)[0]
    want = _naive_attention(q[0], k[0], v[0], 0.7, lambda i, j: j <= S - C + i)
    assert torch.allclose(got, want, rtol=1e-12, atol=1e-12)


def test_the_decode_reference_reads_each_sequences_filled_positions_only():
    """r07: sequence b reads cache positions 0 .. lengths[b] - 1; the positions after hold values (a longer
    sequence's, a chunk's placeholders) that must not be read."""
    g = torch.Generator().manual_seed(53)
    B, S, HQ, HKV, D = 2, 6, 4, 2, 3
    q = torch.randn(B, HQ, D, generator=g, dtype=torch.float64)
    k = torch.randn(B, S, HKV, D, generator=g, dtype=torch.float64)
    v = torch.randn(B, S, HKV, D, generator=g, dtype=torch.float64)
    lengths = torch.tensor([3, 5])
    got = ref.attention_decode(q, k, v, lengths, 0.5)
    for b in range(B):
        n = int(lengths[b])
        want = _naive_attention(q[b][None], k[b], v[b], 0.5, lambda i, j: j < n)[0]
        assert torch.allclose(got[b], want, rtol=1e-12, atol=1e-12)


def test_silu_muls_reference_is_float64_throughout():
    """r02: g sigmoid(g) u in float64, against Python's own exp: an exp taken in float32 is off by ~1e-7 relative
    where exp(-g) is large (g well below 0)."""
    g = torch.tensor([-12.0, -7.25, -3.5, -0.75, 0.5, 2.0, 9.0], dtype=torch.float64)
    u = torch.linspace(-1.5, 2.5, g.numel(), dtype=torch.float64)
    got = ref.silu_mul(torch.cat((g, u))[None, :])[0]
    want = torch.tensor([a / (1 + math.exp(-a)) * b for a, b in zip(g.tolist(), u.tolist())], dtype=torch.float64)
    assert torch.allclose(got, want, rtol=1e-14, atol=0)


def test_the_fused_norms_reference_normalises_the_stream_rounded_to_the_models_dtype():
    """r04: the fused kernel returns h rounded to the model's dtype as the new stream and normalises that rounded
    value; the float64 truth for y is the norm of the rounded h. x + r below are not fp16 numbers (11 bits)."""
    x = torch.tensor([[1.0, -3.0, 0.5, 2.0]], dtype=torch.float16)
    r = torch.tensor(
        [[2.0**-11 + 2.0**-13, 2.0**-10 + 2.0**-12, 2.0**-13, -(2.0**-10) - 2.0**-13]], dtype=torch.float16
    )
    w = torch.tensor([1.0, 0.5, -2.0, 1.25], dtype=torch.float16)
    y, h = ref.rms_norm(x, w, 1e-6, residual=r)
    exact = [float(a) + float(b) for a, b in zip(x[0].tolist(), r[0].tolist())]
    assert h[0].tolist() == exact
    stream = [float(torch.tensor(e, dtype=torch.float16)) for e in exact]  # each rounded to fp16 once
    assert stream != exact  # the case rounds
    rms = math.sqrt(math.fsum(s * s for s in stream) / len(stream) + 1e-6)
    want = torch.tensor([s / rms * float(c) for s, c in zip(stream, w.tolist())], dtype=torch.float64)
    assert torch.allclose(y[0], want, rtol=1e-14, atol=0)


def test_a_partial_rotary_dims_frequencies_are_over_the_rotary_dim():
    """r08: config.json's partial_rotary_factor gives rotary_dim = head_dim - 1: f_i = theta^(-2i / rotary_dim)."""
    head_dim, theta = 8, 10000.0
    tables = ref.rope_frequencies(head_dim, theta, 3, {"rope_type": "default", "rotary_dim": head_dim - 1})
    want = [theta ** (-2 * i / (head_dim - 1)) for i in range(head_dim // 2)]
    assert torch.allclose(tables.inv_freq, torch.tensor(want, dtype=torch.float64), rtol=1e-15, atol=0)


# -------------------------------------------------------------------------------------------------------- the draws
def test_the_tensors_strategy_draws_other_values_of_one_kind_and_shape():
    """d04: the seed is drawn: examples of one kind ("normal": no parameter) and shape are other tensors, not one
    tensor checked again and again."""
    seen: set[tuple[float, ...]] = set()

    @settings(max_examples=25, derandomize=True, database=None, deadline=None)
    @given(tensors((3, 5), torch.float32, kinds=("normal",)))
    def draw(t: torch.Tensor) -> None:
        seen.add(tuple(t.flatten().tolist()))

    draw()
    assert len(seen) >= 10


def test_a_second_tiles_edges_are_among_the_edge_values():
    """d01: a kernel that handles one partial tile may still go wrong at the second (a loop's second pass, a split's
    second part): 2b - 1, 2b and 2b + 1 of each block size b are edges, as b's own are."""
    edges = set(edge_values(1, 1000))
    for b in BLOCK_SIZES:
        assert {2 * b - 1, 2 * b, 2 * b + 1} <= edges, b
    assert {31, 32, 33} <= set(edge_values(1, 1000, block_sizes=(16,)))  # b = 16 alone: 32 is no block size


# ------------------------------------------------------------------------------------------ the engine's host code
def _random_model(batch: int, capacity: int, chunk: int | None = None):
    """A two-layer model of random weights on PyTorch's kernels (CPU, float32): logits far apart, so the greedy
    tokens do not hang on a rounding."""
    import dataclasses

    from test_runtime_planted import TINY

    from neurobrix.model import Transformer, checkpoint_shapes, fuse_weights
    from neurobrix.ops import TORCH

    cfg = dataclasses.replace(TINY, num_layers=2)
    shapes = checkpoint_shapes(cfg)
    g = torch.Generator().manual_seed(520)
    made = {name: torch.randn(shape, generator=g) * (1.0 if "norm" in name else 0.7) for name, shape in shapes.items()}
    weights = fuse_weights(cfg, made.__getitem__, set(shapes), torch.float32, "cpu")
    return Transformer(cfg, weights, TORCH, batch=batch, capacity=capacity, chunk=chunk)


def _recomputed(prompts: list[list[int]], steps: int) -> list[list[int]]:
    """Greedy tokens with no KV cache kept between steps: each step prefills the whole sequence so far in one pass
    of a new model (its positions 0 .. n - 1, every key its own), and takes the last logits' largest."""
    seqs = [list(p) for p in prompts]
    for _ in range(steps):
        logits = _random_model(len(seqs), len(seqs[0])).prefill(torch.tensor(seqs))
        for seq, row in zip(seqs, logits):
            seq.append(int(row.argmax()))
    return [seq[len(p) :] for seq, p in zip(seqs, prompts)]


@pytest.mark.parametrize("device_pick", [True, False])
@pytest.mark.parametrize("chunk", [1, 2])
def test_decoding_over_the_cache_is_recomputing_the_whole_sequence_each_step(chunk, device_pick):
    """e01, e02, e03, e08, e10: a prompt prefilled in chunks (of 1: one pass a token; of 2: a 1-token first pass,
    then two over the cache), then decoded over the KV cache by the greedy loop (device pick) or the sampling loop
    (host pick), gives the tokens of recomputing the whole sequence without a cache at every step: each step's
    position and cache length, the first decode position, every chunk's keys."""
    from neurobrix.generate import Sampling, generate_batch

    prompts, steps = [[3, 17, 5, 9, 30], [8, 8, 1, 22, 4]], 5
    want = _recomputed(prompts, steps)
    model = _random_model(2, len(prompts[0]) + steps - 1, chunk)
    with torch.no_grad():
        outs, _ = generate_batch(model, prompts, steps, Sampling(), set(), device_pick=device_pick)
    assert outs == want and len({t for o in want for t in o}) > 2  # the tokens vary: no constant answer


@pytest.mark.parametrize("device_pick", [True, False])
def test_one_new_token_is_the_prefills_own_and_no_step_runs_past_it(device_pick):
    """e04: max_new_tokens 1 is the prefill's token alone, in a cache of the prompt's length (all that it needs):
    no decode step is run or kept past it, on either loop."""
    from neurobrix.generate import Sampling, generate_batch

    prompts = [[3, 17, 5, 9, 30], [8, 8, 1, 22, 4]]
    model = _random_model(2, len(prompts[0]))
    with torch.no_grad():
        outs, stats = generate_batch(model, prompts, 1, Sampling(), set(), device_pick=device_pick)
    assert outs == _recomputed(prompts, 1) and stats.generated_tokens == 2
