"""Round 21 of planted bugs: the conformance machinery itself (conformance/bounds.py, strategies.py, harness.py,
check.py, certify.py's proof path, reference.py) and generate.py's sampling. Small, realistic bugs were planted one
at a time by hand and run against the tests that exercise the function they were planted in (test_bounds,
test_conformance_planted, test_planted18, test_strict_planted, test_reference, test_strategies, test_ops,
test_kernel_planted, test_conformance without its two slowest tests, test_rank, test_text_yarn, test_generate,
test_generation_planted, test_host_planted14; harness and generate survivors again against test_conformance's
interpreter tests and the sampling files: test_model_reference, test_engine, the text and strict rounds). Each test
here failed with one surviving bug and passes without it (which bug: its docstring). The truth is a rule the
function's docstring states, an fp32 summation in an order the bound's contract allows (NumPy's sequential float32
accumulation), transformers' own rule, or a count made by hand. No kernel is launched.

Planted (id: change -> outcome; "here": a test below kills it):
  bounds.py     b01-b03, b06-b09, b13, b14, b16, b19-b22, b24 -> caught;  b04 a negative bound, b23 an inf/NaN
                bound accepted by ratio, b05 half an ulp of 0 from frexp's binade, b10 linear's depth from N, b11
                gemv's lanes not counted, b15 a subnormal p pinned, b17 rescalings over the row's blocks, not the
                split's -> here;  b26 ``B > 1`` for ``B >= 1`` -> equivalent;  b12 rms_norm's r1 from sqrt(1 - g)
                (g^2 / 4 tighter), b18 E_max as the mean, b25 eta without exp(E_max) -> left open (each tightens)
  strategies.py s01, s03-s06, s08-s13, s15-s24 -> caught;  s02 lo not an edge, s07 a cap below the start, s14
                integers never negative -> here
  harness.py    h01, h03-h08, h10-h12, h14-h16, h18 -> caught (h12, h14-h16 by test_conformance's interpreter
                tests);  h02 inputs outside guard regions, h09 extra outputs, h17 the narrow exponents on bf16, h20
                the mean error as ``relative`` -> here;  h13 an element straddling a span's end, h19 tuple arguments
                left out of the spans -> left open
  check.py      c01-c03, c05, c07-c09, c11, c14-c16 -> caught;  c04 drawable from the record's lowest size, c06 an
                unbounded entry inside a bounded --where, c10 a shipped fingerprint of one class, c12 one dtype an
                entry, c13 an infinite ratio passing its example -> here
  certify.py    f01, f02, f04, f05, f07-f13 -> caught;  f06 a proof written for a check out of memory -> here;  f03
                screening shapes not held to the domain's start -> equivalent
  reference.py  r01, r02, r06, r08-r11 -> caught;  r03 S < C let through, r04 a ramp of width 0, r05 the ramp clipped
                at D, r12 softmax unshifted -> here;  r07 ``factor >= 1`` -> equivalent
  generate.py   g03, g05-g07, g09 -> caught (g03, g05, g06 by test_model_reference);  g01 top-p's kept token, g02
                top-p's ``<`` -> here;  g04, g08, g10 -> equivalent
121 planted: 84 caught, 6 equivalent, 31 survived; 26 survivors fail a test below, 5 are left open.

Equivalent: b26 a B of exactly 1 makes the bound infinite, which ratio refuses either way; f03 no reachable domain
starts at an odd head dim (rotary's only multiple), so rounding down never leaves it; r07 at factor 1 both give
0.1 ln 1 + 1 = 1; g04 min_p is validated into [0, 1], where the top token is never under min_p times itself; g08
epsilon_cutoff 1 is refused by Sampling.validate; g10 typical_p's first sorted token has the smallest shift, never
above the threshold. Left open: b12, b18, b25 make a bound tighter (an honest GPU kernel could be refused, never a
wrong one let through), and no honest computation in the tests reaches the difference; h13 needs a lane whose
address is inside a tensor but its element past the end (a misaligned pointer); h19 makes the memory guard refuse
a kernel taking a tuple argument, which no kernel of the engine does.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import Phase, find, settings

from conformance import bounds, reference
from conformance import strategies as cs

CI = cs.profile("ci")
F64 = torch.float64


def quick(examples: int = 300) -> settings:
    return settings(CI, max_examples=examples, phases=[Phase.generate])


def _rounding_up_terms(count: int) -> np.ndarray:
    """1.0, then ``count`` terms just above half an ulp of 1 (2^-24 (1 + 2^-8)): summed in order in float32, every
    addition rounds up by almost half an ulp, so the sequential sum is off by ~count 2^-24, the most a sum of
    nonnegative terms can be off in that order (Higham's bound, gamma_count, reached to within 1 %)."""
    terms = np.full(count + 1, np.float32(2.0**-24 * (1 + 2.0**-8)), dtype=np.float32)
    terms[0] = 1.0
    return terms


# ---------------------------------------------------------------------------------------- bounds.py: ratio
def test_ratio_refuses_a_negative_bound():
    """Planted b04: bounds.ratio without its ``(b < 0).any()`` refusal: a bound gone negative (a sign slip in a
    derivation) made every error over it negative, and any output passed."""
    ref64 = torch.ones(3, dtype=F64)
    actual = torch.tensor([1.0, 5.0, 1.0])
    with pytest.raises(ValueError, match="bound"):
        bounds.ratio(actual, ref64, torch.tensor([1e-3, -1e-3, 1e-3], dtype=F64))


def test_half_ulp_of_zero_is_the_underflow_allowance():
    """Planted b05: half_ulp taking the binade of 0 (frexp's exponent 0: 2^-1): rounding an exact 0 was allowed
    u_d / 2 (2^-12 in fp16), where the docstring's rule (and an exact zero) allows only underflow(d). A kernel
    writing 1e-4 where the float64 result is 0 passed."""
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        zero = torch.zeros(2, dtype=F64)
        assert torch.equal(bounds.half_ulp(zero, dtype), torch.full_like(zero, bounds.underflow(dtype))), dtype
    ref64 = torch.zeros(1, 4, dtype=F64)
    bound = bounds._final(torch.zeros_like(ref64), ref64, torch.float16)
    assert bounds.ratio(torch.full((1, 4), 1e-4, dtype=torch.float16), ref64, bound) > 1


# ---------------------------------------------------------------------------------------- bounds.py: linear
def test_linear_bound_holds_for_a_sequential_sum_into_one_output_column():
    """Planted b10: bounds.linear taking the depth from weight.shape[0] (N, the outputs) instead of x.shape[1] (K):
    one output column over K = 4096 was allowed gamma_3, while a sum in order (allowed by the default: any order)
    is off by ~4096 roundings. The sum here is NumPy's sequential float32 accumulation."""
    terms = _rounding_up_terms(4095)
    x = torch.ones(1, terms.size)
    weight = torch.from_numpy(terms)[None, :]
    y = torch.tensor([[np.add.accumulate(terms, dtype=np.float32)[-1]]])
    y64 = reference.linear(x, weight)
    r = bounds.ratio(y, y64, bounds.linear(x, weight, None, y64))
    assert 0.5 < r <= 1, r  # the order really rounds (ratio well above 0), and the bound holds


def test_gemv_depth_counts_its_lanes_summed_in_any_order():
    """Planted b11: linear_depth for gemv without the BLOCK_K - 1 additions of the lanes' partial sums ("the lanes
    are summed in any order", its docstring): lanes summed in order exceeded the bound of that depth ~13 times."""
    config = {"variant": "gemv", "BLOCK_K": 256, "SPLIT_K": 1}
    K = 4096
    depth = bounds.linear_depth(config, K, torch.float32)
    lanes = _rounding_up_terms(255)  # lane l accumulates k = l, l + 256, ...: lane 0 holds 1, lanes 1..255 one term
    weight = torch.zeros(1, K)
    weight[0, :256] = torch.from_numpy(lanes)
    x = torch.ones(1, K)
    partial = np.zeros(256, dtype=np.float32)
    for start in range(0, K, 256):  # each lane's own loop (adds zeros after its first product)
        partial = (partial + weight[0, start : start + 256].numpy()).astype(np.float32)
    y = torch.tensor([[np.add.accumulate(partial, dtype=np.float32)[-1]]])
    y64 = reference.linear(x, weight)
    r = bounds.ratio(y, y64, bounds.linear(x, weight, None, y64, depth=depth))
    assert 0.5 < r <= 1, r


# ------------------------------------------------------------------------------------ bounds.py: attention
def test_a_p_that_may_be_subnormal_is_charged_in_full():
    """Planted b15: _p_rounding taking every p above 0 as known (``p_lo > 0`` for ``p_lo >= TINY_P``): a p of
    e^-90 (subnormal in fp32, flushed to 0 on a GPU) was pinned to its CPU rounding, where the docstring says
    rho is only known to lie in [-1, 1]."""
    s = torch.tensor([[0.0, -90.0, -1.0]], dtype=F64)
    visible = torch.ones_like(s, dtype=torch.bool)
    E = torch.zeros_like(s)
    for dtype in (torch.float16, torch.bfloat16):
        lo, hi = bounds._p_rounding(s, visible, E, E.amax(-1, keepdim=True), 4, 4, dtype)
        assert (lo[0, 1].item(), hi[0, 1].item()) == (-1.0, 1.0), dtype
        assert -bounds.unit_roundoff(dtype) <= lo[0, 2] <= hi[0, 2] <= bounds.unit_roundoff(dtype)


# ------------------------------------------------------------------------------------------- strategies.py
def test_edge_values_hold_both_ends_of_any_range():
    """Planted s02: edge_values without ``lo`` among its candidates: a range starting at 100 never drew 100 as an
    edge (only 1, 2, 3, 5, ... and the block sizes' neighbours, all below it, and lo + 1)."""
    for lo, hi in ((100, 200), (37, 1000), (1000, 1001), (4097, 8191)):
        edges = cs.edge_values(lo, hi)
        assert edges[0] == lo and edges[-1] == hi, (lo, hi, edges[:3], edges[-3:])


def test_an_unbounded_dimension_starting_above_the_cap_draws_its_start():
    """Planted s07: dims taking the cap as an unbounded dimension's end even below its start: a domain
    (1024, unbounded) checked under a cap of 512 (a GPU class's long rows on a small check) raised instead of
    drawing 1024."""
    drawn = find(cs.shapes({"K": (1024, None)}, cap=512), lambda s: True, settings=quick(20))
    assert drawn == {"K": 1024}


def test_integer_values_take_both_signs():
    """Planted s14: the integers kind drawn from [0, 8]: no negative integer was ever drawn (the docstring: [-8, 8];
    a kernel that drops a sign bit, or takes |x|, went unseen by that kind)."""
    ints = cs.make_values((4000,), torch.float16, "integers", 7).to(F64)
    assert set(ints.tolist()) == set(float(v) for v in range(-8, 9))


def test_ratio_refuses_a_bound_that_is_not_finite():
    """Planted b23: bounds.ratio without its finiteness check on the bound: a bound that overflowed to inf (an exp
    of a large argument, a division by a vanishing 1 - B) passed every output, however wrong, with ratio 0."""
    ref64 = torch.ones(3, dtype=F64)
    actual = torch.tensor([1.0, 1e6, 1.0])
    for bad in (math.inf, math.nan):
        with pytest.raises(ValueError, match="bound"):
            bounds.ratio(actual, ref64, torch.tensor([1e-3, bad, 1e-3], dtype=F64))


def test_decode_splits_of_one_block_rescale_each_key_once():
    """Planted b17: the attention bound counting a key's rescalings over the whole row's blocks instead of its own
    split's (``ceil(keys / key_block)`` for ``ceil(min(keys, chunk) / key_block)``): with one key block per split a
    key is rescaled once in its chunk and once by the merge (the docstring's n), where one split over the same 32
    blocks rescales it up to 32 times; the additions counted are alike (98 either way: later blocks of the chunk,
    or the other splits in the merge). So the bound of 32 splits must not exceed the bound of one; the looser
    count allowed ~60 more roundings a key, which nothing else absorbs in fp32."""
    gen = torch.Generator().manual_seed(0)
    S, D, block = 2048, 64, 64
    q = torch.randn(1, 2, D, generator=gen)
    k = torch.randn(1, S, 1, D, generator=gen)
    v = torch.randn(1, S, 1, D, generator=gen)
    lengths = torch.tensor([S])
    scale = D**-0.5
    out64 = reference.attention_decode(q, k, v, lengths, scale)
    one = bounds.attention_decode(q, k, v, lengths, scale, out64, key_block=block, splits=1)
    many = bounds.attention_decode(q, k, v, lengths, scale, out64, key_block=block, splits=S // block)
    assert (many <= one).all() and many.sum() < one.sum()


# ----------------------------------------------------------------------------------------------- harness.py
def test_drawn_inputs_lie_inside_nan_guard_regions():
    """Planted h02: harness.Values handing out its tensors as drawn, outside guard regions: a load past an input's
    end then read whatever lay beside it (often a valid number) instead of NaN, and a store past a cache the
    kernel writes into went unchecked (no ``check_guards``)."""
    from conformance import harness

    for dtype in ("fp32", "fp16", "bf16"):
        t = harness.Values(dtype, "cpu", 3)((5, 7))
        assert torch.isfinite(t).all() and callable(getattr(t, "check_guards", None)), dtype
        whole = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage())
        inside = torch.zeros(whole.numel(), dtype=torch.bool)
        inside[t.storage_offset() : t.storage_offset() + t.numel()] = True
        assert t.storage_offset() > 0 and (~inside[t.storage_offset() + t.numel() :]).any(), dtype
        assert torch.isnan(whole[~inside]).all(), dtype
        t.check_guards()
        whole[t.storage_offset() + t.numel()] = 0.0  # one element written past the end
        with pytest.raises(AssertionError, match="out-of-bounds write"):
            t.check_guards()


def test_a_launcher_returning_more_outputs_than_the_op_fails():
    """Planted h09: harness.wrong_outputs refusing only too few outputs: a launcher returning the op's output and an
    extra one (a scratch buffer, the output twice) was judged on the first alone and passed."""
    from conformance import harness

    case = harness.build("silu_mul", "fp16", {"M": 3, "I": 4}, harness.Values("fp16", "cpu", 1))
    exact = reference.silu_mul(case.args["gu"]).to(torch.float16)
    config = {"BLOCK_M": 8, "BLOCK_I": 64}
    assert harness.judge(case, (exact,), config).ratio <= 1
    verdict = harness.judge(case, (exact, exact.clone()), config)
    assert verdict.ratio == math.inf and "outputs" in verdict.explanation


# ----------------------------------------------------------------------------------------------- certify.py
def test_a_proof_that_ran_out_of_memory_is_never_written(monkeypatch):
    """Planted f06: certify.prove_task taking a check that ran out of device memory (passed False, no verdict) as
    passed: the setting was written with a proof over the examples that did run, or none; the task must fail
    (OutOfMemoryError, certified again on a later run) and no entry be returned."""
    from conformance import certify, check

    (task,) = certify.plan("interpreter", ["silu_mul"], ["fp32"])
    config = {"BLOCK_M": 4, "BLOCK_I": 64}
    timed = certify.Timed(certify.Screened(task, 0, 1, [config], []), [((5.0, 6.0), config)], [], 0.0)

    def starved(kernel, setting, dtype, examples, profile_name):
        return check.EntryResult(
            kernel,
            dtype,
            setting.domain.describe(),
            dict(setting.config),
            examples=2,
            worst_ratio=0.5,
            passed=False,
            out_of_memory=True,
            failure="out of device memory after 2 examples",
        )

    monkeypatch.setattr(certify.check, "check_entry", starved)
    with pytest.raises(torch.OutOfMemoryError):
        certify.prove_task("interpreter", timed, 25, "ci")


def test_the_verdicts_relative_error_is_the_worst_elements():
    """Planted h20: harness.judge's ``relative`` (a report's worst_relative) taken from the mean error: one element
    off by 1e-2 among 10^4 exact ones was reported as 1e-6 of the output's scale."""
    from conformance import harness

    case = harness.build("silu_mul", "fp32", {"M": 100, "I": 100}, harness.Values("fp32", "cpu", 2))
    exact = reference.silu_mul(case.args["gu"])
    out = exact.to(torch.float32)
    scale = float(exact.abs().max())
    out[57, 31] += 1e-2 * scale
    verdict = harness.judge(case, (out,), {"BLOCK_M": 8, "BLOCK_I": 64})
    truth = float((out.double() - exact).abs().max()) / scale
    assert verdict.relative == pytest.approx(truth, rel=1e-6) and verdict.ratio > 1


# ------------------------------------------------------------------------------------------------- check.py
def test_the_drawable_domain_never_starts_below_the_entrys():
    """Planted c04: check.drawable taking the record's lowest size in place of the entry's start wherever the record
    names one (rotary's H and D: 2): an entry for D 64..128 was checked at D = 2.., shapes of another entry's
    domain, and its own low end only by chance."""
    from conformance import check

    ranges = (("T", 1, None), ("H", 8, 16), ("D", 64, 128))
    assert check.drawable("rotary", ranges) == {"T": (1, None), "H": (8, 16), "D": (64, 128)}
    assert check.drawable("rotary", (("T", 1, None), ("H", 1, 4), ("D", 1, 8)))["H"] == (2, 4)


def test_check_where_takes_an_unbounded_entry_only_for_an_unbounded_range():
    """Planted c06: check._inside taking an entry unbounded in a dimension as inside a bounded ``--where`` range of
    it: ``check --where S=1:512`` checked an entry of S 1.. (of every length) as if it lay in 1..512."""
    from conformance import check
    from neurobrix.schema import Domain, Setting

    def entry(hi: int | None) -> Setting:
        return Setting(Domain(("fp16",), (("B", 1, 4), ("S", 1, hi))), {"BLOCK_N": 64})

    assert check._inside(entry(512), {"S": (1, 512)}) and check._inside(entry(None), {"S": (1, None)})
    assert not check._inside(entry(None), {"S": (1, 512)})
    assert not check._inside(entry(1024), {"S": (1, 512)})


# ------------------------------------------------------------------------------------------- harness.py inputs
def test_only_fp16_inputs_are_drawn_in_a_narrower_exponent_range():
    """Planted h17: harness._exponents narrowing bf16 instead of fp16: bf16 (fp32's exponent range) was drawn only
    up to 2^1, and fp16 (largest 65504) up to 2^4, where its long rows' sums may overflow. The rule, the function's
    comment: fp16 tops out at 65504."""
    from conformance import harness

    def largest_scale(dtype: str) -> float:
        values = harness.Values(dtype, "cpu", 11, ("pow2",))
        return max(float(values((64,)).double().pow(2).mean().sqrt()) for _ in range(40))

    assert largest_scale("fp16") < 4 and largest_scale("bf16") > 8 and largest_scale("fp32") > 8


# ---------------------------------------------------------------------------------------------- reference.py
def test_a_chunk_of_more_queries_than_keys_is_refused():
    """Planted r03: reference.attention_chunk without its S >= C refusal: C queries over fewer keys (the chunk's own
    positions missing from the cache) gave rows that see no key, a NaN reference, and a check that died in ratio
    instead of naming the mistake."""
    q, k = torch.randn(1, 4, 2, 8), torch.randn(1, 3, 1, 8)
    with pytest.raises(ValueError, match="3 keys for 4 queries"):
        reference.attention_chunk(q, k, k, 0.35)


def test_yarn_matches_transformers_where_its_ramp_is_clipped():
    """Planted r04, r05: the reference's YaRN rule without widening a ramp of width 0 (a ZeroDivisionError where
    both ends clip to 0: an original context of 6), and clipping the ramp's top at D instead of D - 1 (every
    frequency on the ramp off where its top clips: theta 10 over 1024 positions, no real model's). The truth:
    transformers' own rule."""
    rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
    from transformers import LlamaConfig

    for theta, context in ((10000.0, 6), (10.0, 1024)):
        scaling = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": context}
        config = LlamaConfig(
            hidden_size=4096,
            num_attention_heads=32,
            rope_theta=theta,
            max_position_embeddings=4 * context,
            rope_scaling=dict(scaling),
        )
        inv_freq, _ = rope_utils.ROPE_INIT_FUNCTIONS["yarn"](config, "cpu")
        ours = reference.rope_frequencies(128, theta, 1, scaling)
        torch.testing.assert_close(inv_freq.to(F64), ours.inv_freq, rtol=1e-6, atol=0)


# ------------------------------------------------------------------------------------------- check.py verdicts
def test_an_example_with_an_infinite_ratio_fails_its_entry(monkeypatch):
    """Planted c13: check_entry failing an example only on a finite ratio above 1: an output holding NaN or inf (ratio
    inf), or of another dtype or shape (judged inf), passed its entry, and certify wrote a proof for it."""
    from conformance import check, harness
    from neurobrix.schema import Domain, Setting

    monkeypatch.setattr(check, "build", lambda kernel, dtype, shape, values: harness.Case(kernel, dtype, shape, {}))
    monkeypatch.setattr(check, "run_kernel", lambda case, config: ())
    monkeypatch.setattr(check, "judge", lambda case, outputs, config: harness.Verdict(math.inf, "1 of 4 NaN"))
    entry = Setting(Domain(("fp32",), (("M", 1, 8), ("I", 1, 8))), {"BLOCK_M": 4, "BLOCK_I": 64})
    result = check.check_entry("silu_mul", entry, "fp32", 5, "ci", shrink=False)
    assert not result.passed and "1 of 4 NaN" in (result.failure or "")


def test_every_dtype_of_an_entry_is_selected():
    """Planted c12: check.select taking only the first dtype of an entry's domain: an entry proven for fp16 and bf16
    was checked for fp16 alone (the tables' format allows several dtypes to a domain)."""
    from types import SimpleNamespace

    from conformance import check
    from neurobrix.schema import Domain, Setting

    entry = Setting(Domain(("fp16", "bf16"), (("M", 1, 8),)), {"BLOCK_M": 4})
    index = SimpleNamespace(entries=[entry])
    assert check.select(index, None) == [(entry, "fp16"), (entry, "bf16")]  # type: ignore[arg-type]
    assert check.select(index, {"bf16"}) == [(entry, "bf16")]  # type: ignore[arg-type]


def test_a_shipped_checks_fingerprint_covers_every_classs_tables(tmp_path):
    """Planted c10: check.fingerprint reading only the checked class's tables with ``shipped``: a resumed
    ``check --shipped`` carried over verdicts on other classes' settings after those tables changed."""
    import shutil

    from conftest import REPO

    from conformance import check

    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables", root)
    other = next(p for p in sorted(root.iterdir()) if p.is_dir() and p.name != "interpreter")
    before = (check.fingerprint(root, "interpreter", True), check.fingerprint(root, "interpreter", False))
    table = next(f for f in sorted(other.iterdir()) if f.is_file())
    table.write_bytes(table.read_bytes() + b"\n")
    assert check.fingerprint(root, "interpreter", True) != before[0]
    assert check.fingerprint(root, "interpreter", False) == before[1]


def test_the_attention_reference_stays_finite_for_large_logits():
    """Planted r12: the reference's softmax without subtracting the row's max: logits above ~709 overflow float64's
    exp, and the reference was NaN (every check of such a case died in ratio) where softmax is well defined."""
    q = torch.full((1, 2, 1, 8), 100.0)
    k = torch.ones(1, 2, 1, 8)
    v = torch.arange(16.0).reshape(1, 2, 1, 8)
    out = reference.attention_prefill(q, k, v, 1.0)  # every visible logit is 800
    assert torch.equal(out[0, 0, 0], v[0, 0, 0].double())
    assert torch.allclose(out[0, 1, 0], v[0, :, 0].double().mean(0))
    dec = reference.attention_decode(q[:, 0], k, v, torch.tensor([2]), 1.0)
    assert torch.allclose(dec[0, 0], v[0, :, 0].double().mean(0))


# -------------------------------------------------------------------------------------- generate.py sampling
def test_top_p_zero_keeps_the_most_likely_token():
    """Planted g01: top-p without keeping the most likely token (transformers' min_tokens_to_keep): at top_p 0 (the
    documented "keeps the most likely token") every token was dropped and sampling failed."""
    from neurobrix.generate import Sampling, sample

    logits = torch.tensor([[0.5, 3.0, 1.0, -2.0], [2.0, 0.0, 0.1, 1.9]])
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):
        assert sample(logits, Sampling(temperature=1.0, top_p=0.0), gen).tolist() == [1, 0]


def test_top_p_drops_the_tokens_whose_mass_reaches_exactly_one_minus_top_p():
    """Planted g02: top-p dropping tokens whose cumulated probability is below 1 - top_p instead of at most it
    (transformers' TopPLogitsWarper: ``<=``): four equally likely tokens at top_p 0.5 kept three, not two."""
    from neurobrix.generate import Sampling, sample

    logits = torch.zeros(1, 4)
    gen = torch.Generator().manual_seed(1)
    drawn = {int(sample(logits, Sampling(temperature=1.0, top_p=0.5), gen)) for _ in range(200)}
    assert len(drawn) == 2
