"""Round 52 of planted bugs (tests/planted52_plants.py, driven by tests/planted52_driver.py), in the code outside the
kernels that a kernel's proof rests on (class: a proof that holds for the wrong thing).

OUTCOMES
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from conformance import bounds as bd
from conformance import harness
from conformance import reference as ref

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
    k_slice = -(-(-(-K // split_k)) // block_k) * block_k
    want = -(-k_slice // block_k) + (block_k - 1) + (split_k - 1)
    config = {"variant": "gemv", "BLOCK_K": block_k, "SPLIT_K": split_k}
    assert bd.linear_depth(config, K, torch.float16) >= want


@pytest.mark.parametrize("variant", ["tiled", "tma"])
def test_tensor_core_steps_are_counted_twice_for_their_truncation(variant):
    """b07: a tensor core may truncate where round-to-nearest rounds (up to 2 u a step): gamma_n(2u) = gamma_2n(u),
    the K loop's steps counted twice, by whichever of the interpreter's and a GPU's orders is longer."""
    K, block_k = 4096, 64
    steps = max(-(-K // block_k) + block_k - 1, -(-K // 16) + 16)
    assert bd.linear_depth({"variant": variant, "BLOCK_K": block_k}, K, torch.bfloat16) >= 2 * steps


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
