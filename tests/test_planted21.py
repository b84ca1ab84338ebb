"""Round 21 of planted bugs: the conformance machinery itself (the bounds, the strategies, the harness, check and
certify's proof path, the float64 references) and generate's sampling. Small, realistic bugs were planted one at
a time by hand and run against the tests that exercise the function they were planted in; each test here failed
with one surviving bug and passes without it (which bug: its docstring). The truth is a rule the function's
docstring states, an fp32 summation in an order the bound's contract allows (NumPy's sequential float32
accumulation), fnmatch-free counting by hand, or transformers' published rule. No kernel is launched.
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
