"""Each bound HOLDS for honest low-precision computations and is TIGHT enough to catch planted mutants.

Honest computations are torch on the CPU doing what a correct kernel does (fp32 accumulation, one
rounding to the dtype; for attention, flash attention with P rounded to the dtype). Mutants are the
bugs a kernel really gets: an off-by-one mask, a skipped K tail, low-precision accumulation, a wrong
softmax scale, a transposed store, a missing causal mask, a missing eps, sigmoid instead of SiLU...
A mutant counts as caught when Hypothesis finds an input where the honest computation is within
the bound and the mutant is not.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import pytest
import torch
import torch.nn.functional as F
from hypothesis import Phase, assume, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from conformance import bounds as bd
from conformance import reference as ref
from conformance.strategies import poisoned, profile, shapes, tensors

FP32, FP16, BF16 = torch.float32, torch.float16, torch.bfloat16
DTYPES = (FP32, FP16, BF16)
LOW = (FP16, BF16)
CI = profile("ci")
LOG2E = 1.4426950408889634


def assert_within(actual: torch.Tensor, out64: torch.Tensor, bound: torch.Tensor, what: str) -> float:
    r = bd.ratio(actual, out64, bound)
    assert r <= 1, f"{what}: ratio {r:.3g}\n{bd.explain(actual, out64, bound)}"
    return r


def assert_caught(cases: st.SearchStrategy, caught: Callable[[object], bool], examples: int = 60) -> None:
    """Hypothesis finds a case where ``caught(case)`` (the honest result within the bound, the mutant not)."""
    try:
        find(cases, caught, settings=settings(CI, max_examples=examples, phases=[Phase.generate]))
    except NoSuchExample:
        pytest.fail(f"the bound did not catch this mutant in {examples} examples")


def fits(out64: torch.Tensor, dtype: torch.dtype) -> bool:
    """The reference stays well inside the dtype's range (an honest kernel would overflow otherwise)."""
    return bool(out64.abs().max() < torch.finfo(dtype).max / 4) if out64.numel() else True


def round_toward_zero(y: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """fp32 -> fp16/bf16 with truncation instead of round-to-nearest (the interpreter's bf16 bug)."""
    rn = y.to(dtype)
    overshoot = rn.to(torch.float64).abs() > y.to(torch.float64).abs()
    stepped = (rn.view(torch.int16) - 1).view(dtype)  # one ulp toward zero (sign-magnitude bits)
    return torch.where(overshoot, stepped, rn)


def to_tf32(t: torch.Tensor) -> torch.Tensor:
    """fp32 -> tf32 by truncation (10 fraction bits), as tensor cores read fp32 operands."""
    return (t.float().view(torch.int32) & ~0x1FFF).view(torch.float32)


# ============================================================================================= linear
@dataclass(eq=False)
class LinearCase:
    x: torch.Tensor
    w: torch.Tensor
    b: torch.Tensor | None

    @cached_property
    def out64(self) -> torch.Tensor:
        return ref.linear(self.x, self.w, self.b)

    @cached_property
    def bound(self) -> torch.Tensor:
        return bd.linear(self.x, self.w, self.b, self.out64)

    @property
    def dtype(self) -> torch.dtype:
        return self.x.dtype


@st.composite
def linear_cases(draw, dtypes=DTYPES, k_max=160):
    dtype = draw(st.sampled_from(dtypes))
    dims = draw(shapes({"M": (1, 12), "N": (1, 12), "K": (1, k_max)}))
    exponents = (-3, 1) if dtype == FP16 else (-3, 3)
    x = draw(tensors((dims["M"], dims["K"]), dtype, exponents=exponents))
    w = draw(tensors((dims["N"], dims["K"]), dtype, exponents=exponents))
    b = draw(st.none() | tensors((dims["N"],), dtype, exponents=exponents))
    return LinearCase(x, w, b)


def _bias(c: LinearCase) -> torch.Tensor:
    return c.b.float() if c.b is not None else torch.zeros(c.w.shape[0])


def linear_fp32(c: LinearCase) -> torch.Tensor:
    return (c.x.float() @ c.w.float().T + _bias(c)).to(c.dtype)


def linear_tiled(c: LinearCase, block_k: int = 16, acc_dtype: torch.dtype = FP32, skip_tail: bool = False):
    K = c.x.shape[1]
    acc = torch.zeros(c.x.shape[0], c.w.shape[0])
    stop = K - K % block_k if skip_tail else K
    for k0 in range(0, stop, block_k):
        part = c.x[:, k0 : k0 + block_k].float() @ c.w[:, k0 : k0 + block_k].float().T
        acc = (acc + part).to(acc_dtype).float()
    return (acc + _bias(c)).to(c.dtype)


def linear_gemv(c: LinearCase, block_k: int = 8) -> torch.Tensor:
    """neurobrix's gemv variant: per-column elementwise accumulators, one tree sum at the end."""
    M, K = c.x.shape
    acc = torch.zeros(M, c.w.shape[0], block_k)
    for k0 in range(0, K, block_k):
        xs = torch.zeros(M, block_k)
        ws = torch.zeros(c.w.shape[0], block_k)
        xs[:, : min(block_k, K - k0)] = c.x[:, k0 : k0 + block_k].float()
        ws[:, : min(block_k, K - k0)] = c.w[:, k0 : k0 + block_k].float()
        acc += xs[:, None, :] * ws[None, :, :]
    return (acc.sum(-1) + _bias(c)).to(c.dtype)


LINEAR_HONEST = {
    "fp32 matmul": linear_fp32,
    "tiled, fp32 accumulator": linear_tiled,
    "gemv, elementwise accumulators": linear_gemv,
    "float64 rounded once": lambda c: c.out64.to(c.dtype),
}


@CI
@given(case=linear_cases())
def test_linear_bound_holds(case):
    assume(fits(case.out64, case.dtype))
    for name, honest in LINEAR_HONEST.items():
        assert_within(honest(case), case.out64, case.bound, name)


@CI
@given(case=linear_cases(dtypes=(FP32,)))
def test_linear_tf32_bound_holds_for_tf32_operands(case):
    y = (to_tf32(case.x) @ to_tf32(case.w).T + _bias(case)).to(FP32)
    assert_within(y, case.out64, bd.linear(case.x, case.w, case.b, case.out64, tf32=True), "tf32 matmul")


def _linear_transposed_store(c: LinearCase) -> torch.Tensor:
    y = linear_fp32(c)
    return y.T.contiguous().view(y.shape)  # y[n, m] written at row-major position of y[m, n]


def _linear_last_column_unwritten(c: LinearCase) -> torch.Tensor:
    out = poisoned(c.out64.shape, c.dtype)
    out[:, :-1] = linear_fp32(c)[:, :-1]  # a store mask of offs_n < N - 1
    return out


LINEAR_MUTANTS = {
    "off-by-one K mask": (DTYPES, lambda c: linear_fp32(LinearCase(c.x[:, :-1], c.w[:, :-1], c.b))),
    "skipped K tail": (DTYPES, lambda c: linear_tiled(c, skip_tail=True)),
    "fp16/bf16 accumulation": (LOW, lambda c: linear_tiled(c, acc_dtype=c.dtype)),
    "transposed store": (DTYPES, _linear_transposed_store),
    "last column unwritten": (DTYPES, _linear_last_column_unwritten),
    "bias dropped": (DTYPES, lambda c: linear_fp32(LinearCase(c.x, c.w, None))),
    "truncating output conversion": (LOW, lambda c: round_toward_zero(c.x.float() @ c.w.float().T + _bias(c), c.dtype)),
    "tf32 where ieee was certified": ((FP32,), lambda c: to_tf32(c.x) @ to_tf32(c.w).T + _bias(c)),
}


@pytest.mark.parametrize("mutant", LINEAR_MUTANTS)
def test_linear_bound_catches(mutant):
    dtypes, wrong = LINEAR_MUTANTS[mutant]

    def caught(c: LinearCase) -> bool:
        if not fits(c.out64, c.dtype) or bd.ratio(linear_fp32(c), c.out64, c.bound) > 1:
            return False
        return bd.ratio(wrong(c), c.out64, c.bound) > 1

    assert_caught(linear_cases(dtypes=dtypes), caught)


# =========================================================================================== rms_norm
@dataclass(eq=False)
class NormCase:
    x: torch.Tensor
    w: torch.Tensor
    eps: float
    r: torch.Tensor | None

    @property
    def dtype(self) -> torch.dtype:
        return self.x.dtype


@st.composite
def norm_cases(draw, dtypes=DTYPES, residual=None):
    dtype = draw(st.sampled_from(dtypes))
    dims = draw(shapes({"M": (1, 6), "N": (1, 200)}))
    shape = (dims["M"], dims["N"])
    x = draw(tensors(shape, dtype, exponents=(-9, 3)))
    w = draw(tensors((dims["N"],), dtype, exponents=(-2, 2)))
    eps = draw(st.sampled_from([1e-6, 1e-5]))
    with_residual = draw(st.booleans()) if residual is None else residual
    r = draw(tensors(shape, dtype, exponents=(-9, 3))) if with_residual else None
    return NormCase(x, w, eps, r)


def norm_torch(c: NormCase, x: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + c.eps) * c.w.float()).to(x.dtype)


def norm_kernel_style(c: NormCase, x: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    rstd = 1.0 / torch.sqrt(xf.mul(xf).sum(-1, keepdim=True) / xf.shape[-1] + c.eps)
    return (xf * rstd * c.w.float()).to(x.dtype)


def norm_honest(normalise: Callable) -> Callable:
    """An honest fused kernel: h = round(x + r) returned, y normalised from the rounded h."""

    def run(c: NormCase):
        if c.r is None:
            return normalise(c, c.x), None
        h = (c.x.float() + c.r.float()).to(c.dtype)
        return normalise(c, h), h

    return run


def norm_ratio(c: NormCase, result) -> float:
    """The worst ratio of y (against the norm of the h the kernel returned) and of h itself."""
    y, h = result
    worst = 0.0
    stream = c.x
    if c.r is not None:
        if h is None or h.shape != c.x.shape:
            return math.inf
        h64 = ref.residual_add(c.x, c.r)
        worst = bd.ratio(h, h64, bd.residual_add(c.x, c.r, h64))
        stream = h
    y64 = ref.rms_norm(stream, c.w, c.eps)
    return max(worst, bd.ratio(y, y64, bd.rms_norm(stream, c.w, c.eps, y64)))


NORM_HONEST = {
    "torch fp32 (HF style)": norm_honest(norm_torch),
    "kernel style 1/sqrt(sum/N + eps)": norm_honest(norm_kernel_style),
}


@CI
@given(case=norm_cases())
def test_rms_norm_bound_holds(case):
    for name, honest in NORM_HONEST.items():
        r = norm_ratio(case, honest(case))
        assert r <= 1, f"{name}: ratio {r:.3g}"


def _norm_variant(formula: Callable) -> Callable:
    def normalise(c: NormCase, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        return (formula(xf, c.eps) * c.w.float()).to(x.dtype)

    return norm_honest(normalise)


def _residual_not_added(c: NormCase):
    return norm_torch(c, c.x), (c.x if c.r is not None else None)


def _norm_of_unrounded_sum(c: NormCase):
    h = c.x.float() + c.r.float()
    return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + c.eps) * c.w.float()).to(c.dtype), h.to(c.dtype)


NORM_MUTANTS = {
    "missing eps": (None, _norm_variant(lambda x, eps: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)))),
    "eps outside the sqrt": (None, _norm_variant(lambda x, eps: x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps))),
    "mean over N - 1": (
        None,
        _norm_variant(lambda x, eps: x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) / max(x.shape[-1] - 1, 1) + eps)),
    ),
    "layer norm (mean subtracted)": (
        None,
        _norm_variant(
            lambda x, eps: (x - x.mean(-1, keepdim=True)) * torch.rsqrt(x.var(-1, keepdim=True, unbiased=False) + eps)
        ),
    ),
    "weight not applied": (
        None,
        norm_honest(
            lambda c, x: (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + c.eps)).to(x.dtype)
        ),
    ),
    "residual not added": (True, _residual_not_added),
    "y from the unrounded fp32 sum": (True, _norm_of_unrounded_sum),
}


@pytest.mark.parametrize("mutant", NORM_MUTANTS)
def test_rms_norm_bound_catches(mutant):
    residual, wrong = NORM_MUTANTS[mutant]
    honest = NORM_HONEST["torch fp32 (HF style)"]

    def caught(c: NormCase) -> bool:
        return norm_ratio(c, honest(c)) <= 1 and norm_ratio(c, wrong(c)) > 1

    dtypes = LOW if mutant == "y from the unrounded fp32 sum" else DTYPES
    assert_caught(norm_cases(dtypes=dtypes, residual=residual), caught)


# ============================================================================================= rotary
@dataclass(eq=False)
class RotaryCase:
    x: torch.Tensor
    cos: torch.Tensor  # fp32, as the engine's rope cache
    sin: torch.Tensor
    positions: torch.Tensor
    tables64: ref.RopeTables

    @property
    def dtype(self) -> torch.dtype:
        return self.x.dtype

    @cached_property
    def out64(self) -> torch.Tensor:  # against the float64 tables: the bound allows for the fp32 cache
        return ref.rotary(self.x, self.tables64.cos, self.tables64.sin, self.positions)

    @cached_property
    def bound(self) -> torch.Tensor:
        return bd.rotary(self.x, self.tables64.cos, self.tables64.sin, self.positions, self.out64)


POSITIONS = 64


@st.composite
def rotary_cases(draw, dtypes=DTYPES):
    dtype = draw(st.sampled_from(dtypes))
    dims = draw(shapes({"B": (1, 2), "S": (1, 6), "H": (1, 3), "half": (1, 40)}))
    scaling = draw(
        st.sampled_from(
            [
                None,
                {
                    "rope_type": "llama3",
                    "factor": 8.0,
                    "low_freq_factor": 1.0,
                    "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 16,
                },
            ]
        )
    )
    tables = ref.rope_frequencies(2 * dims["half"], draw(st.sampled_from([10000.0, 500000.0])), POSITIONS, scaling)
    x = draw(tensors((dims["B"], dims["S"], dims["H"], 2 * dims["half"]), dtype, exponents=(-4, 4)))
    seed = draw(st.integers(0, 2**16))
    positions = torch.randint(0, POSITIONS, (dims["B"], dims["S"]), generator=torch.Generator().manual_seed(seed))
    return RotaryCase(x, tables.cos.float(), tables.sin.float(), positions, tables)


def rotary_torch(c: RotaryCase, x=None, cos=None, sin=None, positions=None, sign=1.0) -> torch.Tensor:
    x = c.x if x is None else x
    cos, sin = (c.cos if cos is None else cos), (c.sin if sin is None else sin)
    positions = c.positions if positions is None else positions
    cs, sn = cos[positions][:, :, None, :], sin[positions][:, :, None, :]
    x1, x2 = x.float().chunk(2, dim=-1)
    return torch.cat((x1 * cs - sign * x2 * sn, x2 * cs + sign * x1 * sn), dim=-1).to(c.dtype)


def _rotary_interleaved(c: RotaryCase) -> torch.Tensor:
    B, S, H, D = c.x.shape
    pairs = c.x.reshape(B, S, H, D // 2, 2).transpose(-1, -2).reshape(B, S, H, D)  # evens then odds
    out = rotary_torch(c, x=pairs)
    return out.reshape(B, S, H, 2, D // 2).transpose(-1, -2).reshape(B, S, H, D)


ROTARY_MUTANTS = {
    "interleaved pairs instead of halves": _rotary_interleaved,
    "rotation the wrong way": lambda c: rotary_torch(c, sign=-1.0),
    "position off by one": lambda c: rotary_torch(c, positions=(c.positions + 1) % POSITIONS),
    "cos and sin swapped": lambda c: rotary_torch(c, cos=c.sin, sin=c.cos),
    "first sequence's positions for all": lambda c: rotary_torch(c, positions=c.positions[:1].expand_as(c.positions)),
}


@CI
@given(case=rotary_cases())
def test_rotary_bound_holds(case):
    assert_within(rotary_torch(case), case.out64, case.bound, "fp32 with the fp32 rope cache")
    # and against a reference that used the fp32 cache itself
    out64 = ref.rotary(case.x, case.cos, case.sin, case.positions)
    assert_within(rotary_torch(case), out64, bd.rotary(case.x, case.cos, case.sin, case.positions, out64), "same cache")


@pytest.mark.parametrize("mutant", ROTARY_MUTANTS)
def test_rotary_bound_catches(mutant):
    def caught(c: RotaryCase) -> bool:
        honest_ok = bd.ratio(rotary_torch(c), c.out64, c.bound) <= 1
        return honest_ok and bd.ratio(ROTARY_MUTANTS[mutant](c), c.out64, c.bound) > 1

    assert_caught(rotary_cases(), caught)


def test_rope_table_bound_holds_for_the_fp32_cache():
    for scaling in (
        None,
        {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
    ):
        tables = ref.rope_frequencies(128, 500000.0, 4096, scaling)
        for t in (tables.cos, tables.sin):
            assert_within(t.float(), t, bd.rope_table(t), "rope table")


def test_rope_table_bound_holds_for_the_engines_rope_cache_and_sees_a_frequency_off():
    """The engine's rope_cache (transformers' float32 derivation) against the reference's float64 tables, for every
    rope configuration in use, past a Llama-3 original context; one frequency off by one part in 10^4 shows."""
    from conformance.specs.rotary import ropes
    from neurobrix.ops import rope_cache

    rows = 8192 + 100
    for rope in ropes():
        for head_dim in (64, 128):
            tables = ref.rope_frequencies(head_dim, rope.theta, rows, rope.rope_scaling)
            positions = torch.arange(rows, dtype=torch.float64)[:, None]
            angle = positions * tables.inv_freq[None, :]
            cos, sin = rope_cache(head_dim, rope.theta, rows, rope.rope_scaling)
            bounds = {}
            for name, engine, table in (("cos", cos, tables.cos), ("sin", sin, tables.sin)):
                bounds[name] = bd.rope_table(table, angle=angle, scaling=rope.rope_scaling, theta=rope.theta)
                assert_within(engine, table, bounds[name], f"rope_cache {name}, head dim {head_dim}, {rope}")
            off = tables.inv_freq.clone()
            off[head_dim // 4] *= 1 + 1e-4
            wrong = (positions * off[None, :]).cos().float()
            assert bd.ratio(wrong, tables.cos, bounds["cos"]) > 1, f"{rope}: a frequency off by 1e-4 hides"


# =========================================================================================== silu_mul
@st.composite
def silu_cases(draw, dtypes=DTYPES):
    dtype = draw(st.sampled_from(dtypes))
    dims = draw(shapes({"M": (1, 8), "I": (1, 100)}))
    return draw(tensors((dims["M"], 2 * dims["I"]), dtype, exponents=(-4, 3)))


def silu_torch(gu: torch.Tensor) -> torch.Tensor:
    g, u = gu.float().chunk(2, dim=-1)
    return (F.silu(g) * u).to(gu.dtype)


def silu_kernel_style(gu: torch.Tensor) -> torch.Tensor:
    g, u = gu.float().chunk(2, dim=-1)
    return (g / (1.0 + torch.exp(-g)) * u).to(gu.dtype)


def _silu_check(gu: torch.Tensor, out: torch.Tensor) -> float:
    out64 = ref.silu_mul(gu)
    return bd.ratio(out, out64, bd.silu_mul(gu, out64))


@CI
@given(gu=silu_cases())
def test_silu_mul_bound_holds(gu):
    out64 = ref.silu_mul(gu)
    bound = bd.silu_mul(gu, out64)
    assert_within(silu_torch(gu), out64, bound, "F.silu in fp32")
    assert_within(silu_kernel_style(gu), out64, bound, "g / (1 + exp(-g)) * u in fp32")


@pytest.mark.parametrize("dtype", DTYPES)
def test_silu_mul_bound_holds_where_exp_overflows(dtype):
    g = torch.linspace(-120, 120, 481).to(dtype)
    gu = torch.cat((g, torch.linspace(-3, 3, 481).to(dtype)))[None, :]
    out64 = ref.silu_mul(gu)
    bound = bd.silu_mul(gu, out64)
    assert_within(silu_kernel_style(gu), out64, bound, "kernel style")
    assert_within(silu_torch(gu), out64, bound, "F.silu")


def _halves(gu):
    g, u = gu.float().chunk(2, dim=-1)
    return g, u


SILU_MUTANTS = {
    "sigmoid instead of silu": lambda gu: (torch.sigmoid(_halves(gu)[0]) * _halves(gu)[1]).to(gu.dtype),
    "gate and up swapped": lambda gu: (F.silu(_halves(gu)[1]) * _halves(gu)[0]).to(gu.dtype),
    "gelu instead of silu": lambda gu: (F.gelu(_halves(gu)[0], approximate="tanh") * _halves(gu)[1]).to(gu.dtype),
    "exp(g) instead of exp(-g)": lambda gu: (_halves(gu)[0] / (1 + torch.exp(_halves(gu)[0])) * _halves(gu)[1]).to(
        gu.dtype
    ),
}


@pytest.mark.parametrize("mutant", SILU_MUTANTS)
def test_silu_mul_bound_catches(mutant):
    def caught(gu: torch.Tensor) -> bool:
        return _silu_check(gu, silu_torch(gu)) <= 1 and _silu_check(gu, SILU_MUTANTS[mutant](gu)) > 1

    assert_caught(silu_cases(), caught)


# ========================================================================================== attention
def flash_rows(
    q,
    k,
    v,
    visible,
    scale,
    block,
    out_dtype,
    *,
    acc_dtype=FP32,
    exp=torch.exp2,
    scale_log2=None,
    p_dtype=None,
    l_from_rounded=False,
):
    """Flash attention of query rows q [R, D] over k, v [L, D] (in d), as neurobrix's kernels do it:
    fp32 scores scaled by scale * log2(e), running max, exp2, P rounded to d before P.V, l from the
    unrounded P. Returns the unnormalised (acc, m, l) in fp32. Mutants: ``acc_dtype`` rounds the
    accumulator once per key block, ``p_dtype`` rounds P to that dtype (where d is fp32 too),
    ``l_from_rounded`` sums the rounded P into l."""
    R, D = q.shape
    c = torch.tensor(scale * LOG2E if scale_log2 is None else scale_log2, dtype=FP32)
    m = torch.full((R,), -math.inf)
    l = torch.zeros(R)
    acc = torch.zeros(R, D)
    for s0 in range(0, k.shape[0], block):
        t = (q.float() @ k[s0 : s0 + block].float().T) * c
        t = torch.where(visible[:, s0 : s0 + block], t, torch.tensor(-math.inf))
        m_new = torch.maximum(m, t.max(dim=1).values)
        alpha = exp(m - m_new)
        p = exp(t - m_new[:, None])
        p_d = p.to(out_dtype).float() if out_dtype != FP32 else p
        p_d = p_d.to(p_dtype).float() if p_dtype is not None else p_d
        l = l * alpha + (p_d if l_from_rounded else p).sum(dim=1)
        acc = (acc * alpha[:, None] + p_d @ v[s0 : s0 + block].float()).to(acc_dtype).float()
        m = m_new
    return acc, m, l


@dataclass(eq=False)
class PrefillCase:
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    scale: float
    block: int

    @property
    def dtype(self) -> torch.dtype:
        return self.q.dtype

    @cached_property
    def out64(self) -> torch.Tensor:
        return ref.attention_prefill(self.q, self.k, self.v, self.scale)

    @cached_property
    def bound(self) -> torch.Tensor:
        return bd.attention_prefill(self.q, self.k, self.v, self.scale, self.out64, key_block=self.block)


@st.composite
def prefill_cases(draw, dtypes=DTYPES, s_max=40):
    dtype = draw(st.sampled_from(dtypes))
    dims = draw(shapes({"B": (1, 2), "S": (1, s_max), "Hkv": (1, 2), "G": (1, 3), "D": (1, 40)}))
    B, S, Hkv, D = dims["B"], dims["S"], dims["Hkv"], dims["D"]
    q = draw(tensors((B, S, Hkv * dims["G"], D), dtype, exponents=(-2, 1)))
    k = draw(tensors((B, S, Hkv, D), dtype, exponents=(-2, 1)))
    v = draw(tensors((B, S, Hkv, D), dtype, exponents=(-2, 1)))
    scale = draw(st.sampled_from([D**-0.5, 1.0, 0.125]))
    block = draw(st.sampled_from([16, 1, 5, 64]))
    return PrefillCase(q, k, v, scale, block)


def prefill_flash(c: PrefillCase, *, causal_offset: int = 0, causal: bool = True, gqa=None, **flash) -> torch.Tensor:
    B, S, HQ, D = c.q.shape
    group = HQ // c.k.shape[2]
    visible = torch.ones(S, S, dtype=torch.bool).tril(causal_offset) if causal else torch.ones(S, S, dtype=torch.bool)
    out = torch.empty(B, S, HQ, D, dtype=c.dtype)
    for b in range(B):
        for h in range(HQ):
            kv = gqa(h, HQ, c.k.shape[2]) if gqa else h // group
            acc, _, l = flash_rows(
                c.q[b, :, h], c.k[b, :, kv], c.v[b, :, kv], visible, c.scale, c.block, c.dtype, **flash
            )
            out[b, :, h] = (acc / l[:, None]).to(c.dtype)
    return out


def prefill_two_pass(c: PrefillCase) -> torch.Tensor:
    """Not flash: whole rows at once in fp32, exp(s - row max) (natural exp, scale applied to the
    scores), P rounded to d for P.V, l summed from the unrounded P, out = (P.V) / l."""
    B, S, HQ, D = c.q.shape
    group = HQ // c.k.shape[2]
    hidden = torch.ones(S, S, dtype=torch.bool).triu(1)
    out = torch.empty(B, S, HQ, D, dtype=c.dtype)
    for b in range(B):
        for h in range(HQ):
            s = (c.q[b, :, h].float() @ c.k[b, :, h // group].float().T) * c.scale
            s = s.masked_fill(hidden, -math.inf)
            p = torch.exp(s - s.max(dim=-1, keepdim=True).values)
            pv = p.to(c.dtype).float() @ c.v[b, :, h // group].float()
            out[b, :, h] = (pv / p.sum(-1, keepdim=True)).to(c.dtype)
    return out


def prefill_sdpa_fp32(c: PrefillCase) -> torch.Tensor:
    q, k, v = (t.float().transpose(1, 2) for t in (c.q, c.k, c.v))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=c.scale, enable_gqa=True)
    return out.transpose(1, 2).to(c.dtype)


PREFILL_HONEST = {
    "flash, P rounded to d": prefill_flash,
    "two-pass, P rounded to d": prefill_two_pass,
    "torch SDPA in fp32": prefill_sdpa_fp32,
}


@CI
@given(case=prefill_cases())
def test_attention_prefill_bound_holds(case):
    """The kernel's arithmetic (flash over the case's key blocks) within the bound that knows those blocks;
    a two-pass computation rounds P against each row's max, as one key block holding the whole row does;
    fp32 SDPA rounds no P at all; and the bound of any blocking holds for all three."""
    S = case.q.shape[1]
    whole_row = bd.attention_prefill(case.q, case.k, case.v, case.scale, case.out64, key_block=S)
    any_blocking = bd.attention_prefill(case.q, case.k, case.v, case.scale, case.out64)
    assert_within(prefill_flash(case), case.out64, case.bound, "flash, P rounded to d")
    assert_within(prefill_two_pass(case), case.out64, whole_row, "two-pass, P rounded to d")
    assert_within(prefill_sdpa_fp32(case), case.out64, case.bound, "torch SDPA in fp32")
    for name, honest in PREFILL_HONEST.items():
        assert_within(honest(case), case.out64, any_blocking, f"{name}, bound of any blocking")


def _prefill_transposed_store(c: PrefillCase) -> torch.Tensor:
    out = prefill_flash(c)
    return out.transpose(1, 2).contiguous().view(out.shape)  # [B, Hq, S, D] memory read as [B, S, Hq, D]


PREFILL_MUTANTS = {
    "missing causal mask": (DTYPES, lambda c: prefill_flash(c, causal=False)),
    "mask off by one (diagonal hidden)": (DTYPES, lambda c: prefill_flash(c, causal_offset=-1)),
    "mask off by one (next key visible)": (DTYPES, lambda c: prefill_flash(c, causal_offset=1)),
    "exp instead of exp2 (wrong softmax scale)": (DTYPES, lambda c: prefill_flash(c, exp=torch.exp)),
    "scale applied twice": (DTYPES, lambda c: prefill_flash(c, scale_log2=c.scale * c.scale * LOG2E)),
    "wrong kv head (h % Hkv)": (DTYPES, lambda c: prefill_flash(c, gqa=lambda h, hq, hkv: h % hkv)),
    "transposed store": (DTYPES, _prefill_transposed_store),
    "fp16/bf16 accumulator": (LOW, lambda c: prefill_flash(c, acc_dtype=c.dtype)),
}


@pytest.mark.parametrize("mutant", PREFILL_MUTANTS)
def test_attention_prefill_bound_catches(mutant):
    dtypes, wrong = PREFILL_MUTANTS[mutant]

    def caught(c: PrefillCase) -> bool:
        honest_ok = bd.ratio(prefill_flash(c), c.out64, c.bound) <= 1
        return honest_ok and bd.ratio(wrong(c), c.out64, c.bound) > 1

    assert_caught(prefill_cases(dtypes=dtypes), caught)


@dataclass(eq=False)
class DecodeCase:
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    lengths: torch.Tensor
    scale: float
    block: int
    splits: int

    @property
    def dtype(self) -> torch.dtype:
        return self.q.dtype

    @cached_property
    def out64(self) -> torch.Tensor:
        return ref.attention_decode(self.q, self.k, self.v, self.lengths, self.scale)

    @cached_property
    def bound(self) -> torch.Tensor:
        return bd.attention_decode(
            self.q, self.k, self.v, self.lengths, self.scale, self.out64, key_block=self.block, splits=self.splits
        )


@st.composite
def decode_cases(draw, dtypes=DTYPES):
    dtype = draw(st.sampled_from(dtypes))
    dims = draw(shapes({"B": (1, 3), "cap": (1, 48), "Hkv": (1, 2), "G": (1, 3), "D": (1, 32)}))
    B, cap, Hkv, D = dims["B"], dims["cap"], dims["Hkv"], dims["D"]
    q = draw(tensors((B, Hkv * dims["G"], D), dtype, exponents=(-2, 1)))
    k = draw(tensors((B, cap, Hkv, D), dtype, exponents=(-2, 1)))  # garbage beyond each length
    v = draw(tensors((B, cap, Hkv, D), dtype, exponents=(-2, 1)))
    lengths = torch.tensor(draw(st.lists(st.integers(1, cap), min_size=B, max_size=B)))
    block = draw(st.sampled_from([16, 1, 4]))
    splits = draw(st.sampled_from([1, 2, 3]))
    return DecodeCase(q, k, v, lengths, D**-0.5, block, splits)


def decode_flash(
    c: DecodeCase, *, extra: int = 0, rescale_merge: bool = True, part_dtype=None, **flash
) -> torch.Tensor:
    """Flash decoding: SPLITS chunks (multiples of the block) of the filled cache, merged by 2^(m - max m).
    Mutants: ``part_dtype`` rounds the split partials (the unnormalised accumulators) before the merge;
    ``flash`` goes to flash_rows."""
    B, HQ, D = c.q.shape
    cap, group = c.k.shape[1], HQ // c.k.shape[2]
    chunk = math.ceil(math.ceil(cap / c.splits) / c.block) * c.block
    out = torch.empty(B, HQ, D, dtype=c.dtype)
    for b in range(B):
        n = min(int(c.lengths[b]) + extra, cap)
        for h in range(HQ):
            kv = h // group
            parts, ms, ls = [], [], []
            for split in range(c.splits):
                start, end = split * chunk, min(split * chunk + chunk, n)
                if end <= start:
                    continue
                visible = torch.ones(1, end - start, dtype=torch.bool)
                acc, m, l = flash_rows(
                    c.q[b, h, None],
                    c.k[b, start:end, kv],
                    c.v[b, start:end, kv],
                    visible,
                    c.scale,
                    c.block,
                    c.dtype,
                    **flash,
                )
                if part_dtype is not None:
                    acc = acc.to(part_dtype).float()
                parts.append(acc[0])
                ms.append(m[0])
                ls.append(l[0])
            if not parts:
                out[b, h] = math.nan
                continue
            m, l, part = torch.stack(ms), torch.stack(ls), torch.stack(parts)
            weight = torch.exp2(m - m.max()) if rescale_merge else torch.ones_like(m)
            out[b, h] = ((part * weight[:, None]).sum(0) / (l * weight).sum()).to(c.dtype)
    return out


@CI
@given(case=decode_cases())
def test_attention_decode_bound_holds(case):
    assert_within(decode_flash(case), case.out64, case.bound, "flash decoding")


DECODE_MUTANTS = {
    "one position past the length": lambda c: decode_flash(c, extra=1),
    "last position missed": lambda c: decode_flash(c, extra=-1),
    "split merge without rescaling": lambda c: decode_flash(c, rescale_merge=False),
}


@pytest.mark.parametrize("mutant", DECODE_MUTANTS)
def test_attention_decode_bound_catches(mutant):
    def caught(c: DecodeCase) -> bool:
        honest_ok = bd.ratio(decode_flash(c), c.out64, c.bound) <= 1
        return honest_ok and bd.ratio(DECODE_MUTANTS[mutant](c), c.out64, c.bound) > 1

    assert_caught(decode_cases(), caught)


# ================================================================ one extra rounding, at catalogue shapes
# Each intermediate a kernel keeps in fp32 (or rounds to d exactly once, P), rounded once more to the storage
# dtype: the honest computation stays within its bound and the mutant does not, at shapes the catalogue uses
# (hidden 896-4096, head dim 64/128, GQA groups 4-8, K to 14336, caches to 4096) and configs the tables hold.
# The bounds are told what the kernel's config fixes (linear's summation depth, attention's key blocks and
# splits). What they cannot see at these shapes is written in conformance/bounds.py.
def _normal(*shape: int, dtype: torch.dtype, scale: float = 1.0, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).to(dtype)


def linear_split_gemv(c: LinearCase, block_k: int, split_k: int, partial_dtype: torch.dtype = FP32) -> torch.Tensor:
    """The gemv variant with SPLIT_K slices of K (whole BLOCK_K steps each), fp32 partials merged in order."""
    M, K = c.x.shape
    k_slice = math.ceil(math.ceil(K / split_k) / block_k) * block_k
    y = torch.zeros(M, c.w.shape[0])
    for first in range(0, K, k_slice):
        part = LinearCase(c.x[:, first : first + k_slice], c.w[:, first : first + k_slice], None)
        lanes = torch.zeros(M, c.w.shape[0], block_k)
        for k0 in range(0, part.x.shape[1], block_k):
            xs, ws = torch.zeros(M, block_k), torch.zeros(c.w.shape[0], block_k)
            width = min(block_k, part.x.shape[1] - k0)
            xs[:, :width], ws[:, :width] = part.x[:, k0 : k0 + width].float(), part.w[:, k0 : k0 + width].float()
            lanes += xs[:, None, :] * ws[None, :, :]
        y = y + lanes.sum(-1).to(partial_dtype).float()
    return (y + _bias(c)).to(c.dtype)


def linear_split_tiled(
    c: LinearCase, block_k: int, split_k: int, acc_dtype: torch.dtype = FP32, partial_dtype: torch.dtype = FP32
) -> torch.Tensor:
    """The skinny variant: tiled's K loop of BLOCK_K dots over each of SPLIT_K slices, fp32 partials merged in order."""
    M, K = c.x.shape
    k_slice = math.ceil(math.ceil(K / split_k) / block_k) * block_k
    y = torch.zeros(M, c.w.shape[0])
    for first in range(0, K, k_slice):
        part = LinearCase(c.x[:, first : first + k_slice], c.w[:, first : first + k_slice], None)
        acc = torch.zeros(M, c.w.shape[0])
        for k0 in range(0, part.x.shape[1], block_k):
            dot = part.x[:, k0 : k0 + block_k].float() @ part.w[:, k0 : k0 + block_k].float().T
            acc = (acc + dot).to(acc_dtype).float()
        y = y + acc.to(partial_dtype).float()
    return (y + _bias(c)).to(c.dtype)


def _linear_extra(dtype, K, config, mutant):
    case = LinearCase(
        _normal(4, K, dtype=dtype, seed=1),
        _normal(512, K, dtype=dtype, seed=2, scale=2.0 ** -round(math.log2(math.sqrt(K)))),
        _normal(512, dtype=dtype, seed=3),
    )
    bound = bd.linear(case.x, case.w, case.b, case.out64, depth=bd.linear_depth(config, K, dtype))
    if config["variant"] == "gemv":
        honest = linear_split_gemv(case, config["BLOCK_K"], config["SPLIT_K"])
        wrong = linear_split_gemv(case, config["BLOCK_K"], config["SPLIT_K"], partial_dtype=dtype)
    elif config["variant"] == "skinny":
        honest = linear_split_tiled(case, config["BLOCK_K"], config["SPLIT_K"])
        wrong = linear_split_tiled(
            case, config["BLOCK_K"], config["SPLIT_K"], **{"acc_dtype" if mutant == "acc" else "partial_dtype": dtype}
        )
    else:
        honest = linear_tiled(case, config["BLOCK_K"])
        wrong = linear_tiled(case, config["BLOCK_K"], acc_dtype=dtype)
    return bd.ratio(honest, case.out64, bound), bd.ratio(wrong, case.out64, bound)


def _norm_extra(dtype, N):
    x, w = _normal(16, N, dtype=dtype, seed=1), _normal(N, dtype=dtype, seed=2, scale=0.5)
    y64 = ref.rms_norm(x, w, 1e-5)
    bound = bd.rms_norm(x, w, 1e-5, y64)
    xf = x.float()
    rstd = 1.0 / torch.sqrt(xf.mul(xf).sum(-1, keepdim=True) / N + 1e-5)
    honest, wrong = (xf * rstd * w.float()).to(dtype), (xf * rstd.to(dtype).float() * w.float()).to(dtype)
    return bd.ratio(honest, y64, bound), bd.ratio(wrong, y64, bound)


def _prefill_extra(dtype, S, D, G, q_scale, **mutant):
    c = PrefillCase(
        _normal(1, S, G, D, dtype=dtype, seed=1, scale=q_scale),
        _normal(1, S, 1, D, dtype=dtype, seed=2),
        _normal(1, S, 1, D, dtype=dtype, seed=3),
        D**-0.5,
        64,
    )
    return bd.ratio(prefill_flash(c), c.out64, c.bound), bd.ratio(prefill_flash(c, **mutant), c.out64, c.bound)


def _decode_extra(dtype, capacity, lengths, D, G, block, splits, q_scale, **mutant):
    c = DecodeCase(
        _normal(2, G, D, dtype=dtype, seed=4, scale=q_scale),
        _normal(2, capacity, 1, D, dtype=dtype, seed=5),
        _normal(2, capacity, 1, D, dtype=dtype, seed=6),
        torch.tensor(lengths),
        D**-0.5,
        block,
        splits,
    )
    return bd.ratio(decode_flash(c), c.out64, c.bound), bd.ratio(decode_flash(c, **mutant), c.out64, c.bound)


TILED = {"variant": "tiled", "BLOCK_K": 64}
GEMV_SPLIT = {"variant": "gemv", "BLOCK_K": 128, "SPLIT_K": 8}
SKINNY_SPLIT = {"variant": "skinny", "BLOCK_K": 128, "SPLIT_K": 8}
SKINNY = {"variant": "skinny", "BLOCK_K": 256, "SPLIT_K": 1}
EXTRA_ROUNDING = {
    # linear, its config's summation depth given to the bound
    "linear tiled, fp16 accumulator, K 4096": lambda: _linear_extra(FP16, 4096, TILED, "acc"),
    "linear tiled, fp16 accumulator, K 14336": lambda: _linear_extra(FP16, 14336, TILED, "acc"),
    "linear tiled, bf16 accumulator, K 4096": lambda: _linear_extra(BF16, 4096, TILED, "acc"),
    "linear tiled, bf16 accumulator, K 14336": lambda: _linear_extra(BF16, 14336, TILED, "acc"),
    "linear gemv, fp16 split-K partials, K 4096": lambda: _linear_extra(FP16, 4096, GEMV_SPLIT, "partials"),
    "linear gemv, bf16 split-K partials, K 4096": lambda: _linear_extra(BF16, 4096, GEMV_SPLIT, "partials"),
    "linear gemv, bf16 split-K partials, K 14336": lambda: _linear_extra(BF16, 14336, GEMV_SPLIT, "partials"),
    "linear skinny, fp16 split-K partials, K 4096": lambda: _linear_extra(FP16, 4096, SKINNY_SPLIT, "partials"),
    "linear skinny, bf16 split-K partials, K 14336": lambda: _linear_extra(BF16, 14336, SKINNY_SPLIT, "partials"),
    "linear skinny, fp16 accumulator, K 4096": lambda: _linear_extra(FP16, 4096, SKINNY, "acc"),
    "linear skinny, bf16 accumulator, split-K, K 14336": lambda: _linear_extra(BF16, 14336, SKINNY_SPLIT, "acc"),
    # rms_norm: rstd rounded to the storage dtype
    "rms_norm fp16 rstd, N 896": lambda: _norm_extra(FP16, 896),
    "rms_norm fp16 rstd, N 4096": lambda: _norm_extra(FP16, 4096),
    "rms_norm bf16 rstd, N 2048": lambda: _norm_extra(BF16, 2048),
    # attention prefill: the accumulator rounded once per key block
    "prefill fp16 accumulator, S 512 D 128 G 4": lambda: _prefill_extra(FP16, 512, 128, 4, 1.0, acc_dtype=FP16),
    "prefill fp16 accumulator, S 512 D 64 G 8": lambda: _prefill_extra(FP16, 512, 64, 8, 2.0, acc_dtype=FP16),
    "prefill bf16 accumulator, S 512 D 128 G 4": lambda: _prefill_extra(BF16, 512, 128, 4, 1.0, acc_dtype=BF16),
    # P rounded where the contract rounds none (fp32 kernels)
    "prefill fp32, P rounded to bf16, S 512 D 128": lambda: _prefill_extra(FP32, 512, 128, 4, 1.0, p_dtype=BF16),
    "decode fp32, P rounded to fp16, capacity 512 filled 40 and 100": lambda: _decode_extra(
        FP32, 512, [40, 100], 64, 8, 32, 16, 1.0, p_dtype=FP16
    ),
    # attention decode (H200 configs; one config serves every fill of the capacity): split partials (the
    # unnormalised accumulators) stored in the storage dtype, and a split's accumulator rounded once per key block
    "decode fp16 partials, capacity 4096 filled 40 and 100, D 64 G 4, 32 splits": lambda: _decode_extra(
        FP16, 4096, [40, 100], 64, 4, 64, 32, 1.0, part_dtype=FP16
    ),
    "decode fp16 partials, capacity 512 filled 200 and 60, D 64 G 8, 16 splits": lambda: _decode_extra(
        FP16, 512, [200, 60], 64, 8, 32, 16, 0.5, part_dtype=FP16
    ),
    "decode bf16 partials, capacity 4096 filled 300 and 700, D 128 G 4, 32 splits": lambda: _decode_extra(
        BF16, 4096, [300, 700], 128, 4, 64, 32, 1.0, part_dtype=BF16
    ),
    "decode bf16 partials, capacity 512 full, D 64 G 8, 16 splits": lambda: _decode_extra(
        BF16, 512, [512, 170], 64, 8, 32, 16, 1.0, part_dtype=BF16
    ),
    "decode bf16 accumulator, capacity 4096 filled 300 and 700, D 128 G 4": lambda: _decode_extra(
        BF16, 4096, [300, 700], 128, 4, 64, 32, 1.0, acc_dtype=BF16
    ),
    "decode fp16 accumulator, capacity 512 filled 200 and 60, D 64 G 8": lambda: _decode_extra(
        FP16, 512, [200, 60], 64, 8, 32, 16, 0.5, acc_dtype=FP16
    ),
}


@pytest.mark.parametrize("name", EXTRA_ROUNDING)
def test_one_extra_rounding_is_caught_at_catalogue_shapes(name):
    honest, mutant = EXTRA_ROUNDING[name]()
    assert honest <= 1, f"{name}: the honest computation exceeds its bound ({honest:.3g})"
    assert mutant > 1, f"{name}: one extra rounding stays within the bound (ratio {mutant:.3g}; honest {honest:.3g})"


# ========================================================================================== tightness
def _fixed(dtype: torch.dtype, *shape: int, seed: int = 0, scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * scale).to(dtype)


def honest_ratios(dtype: torch.dtype) -> dict[str, float]:
    """Worst ratios of honest computations on ordinary inputs, per op (for fp16/bf16 the final rounding
    dominates the bound, so a tight bound sees ratios near 1 there)."""
    x, w, b = _fixed(dtype, 32, 96), _fixed(dtype, 48, 96, seed=1), _fixed(dtype, 48, seed=2)
    lin = LinearCase(x, w, b)
    norm = NormCase(_fixed(dtype, 16, 256, seed=3), _fixed(dtype, 256, seed=4), 1e-5, _fixed(dtype, 16, 256, seed=5))
    tables = ref.rope_frequencies(64, 10000.0, POSITIONS)
    positions = torch.randint(0, POSITIONS, (2, 8), generator=torch.Generator().manual_seed(6))
    rot = RotaryCase(_fixed(dtype, 2, 8, 4, 64, seed=7), tables.cos.float(), tables.sin.float(), positions, tables)
    gu = _fixed(dtype, 16, 256, seed=8, scale=3.0)
    pre = PrefillCase(
        _fixed(dtype, 1, 48, 4, 32, seed=9),
        _fixed(dtype, 1, 48, 2, 32, seed=10),
        _fixed(dtype, 1, 48, 2, 32, seed=11),
        32**-0.5,
        16,
    )
    return {
        "linear": bd.ratio(linear_fp32(lin), lin.out64, lin.bound),
        "rms_norm": norm_ratio(norm, NORM_HONEST["torch fp32 (HF style)"](norm)),
        "rotary": bd.ratio(rotary_torch(rot), rot.out64, rot.bound),
        "silu_mul": _silu_check(gu, silu_torch(gu)),
        "attention_prefill": bd.ratio(prefill_flash(pre), pre.out64, pre.bound),
    }


@pytest.mark.parametrize("dtype", LOW)
def test_bounds_are_tight_for_fp16_and_bf16(dtype):
    ratios = honest_ratios(dtype)
    loose = {op: r for op, r in ratios.items() if not 0.3 <= r <= 1}
    assert not loose, f"worst honest ratios outside [0.3, 1]: {loose}"


# ============================================================================================ helpers
def test_ratio_semantics():
    ref64 = torch.tensor([1.0, 2.0, 0.0], dtype=torch.float64)
    bound = torch.tensor([0.5, 0.5, 0.0], dtype=torch.float64)
    assert bd.ratio(torch.tensor([1.25, 2.0, 0.0]), ref64, bound) == 0.5
    assert bd.ratio(torch.tensor([1.0, 2.0, 1e-30]), ref64, bound) == math.inf  # error where the bound is 0
    assert bd.ratio(torch.tensor([math.nan, 2.0, 0.0]), ref64, bound) == math.inf
    assert bd.ratio(torch.tensor([math.inf, 2.0, 0.0]), ref64, bound) == math.inf
    assert bd.ratio(torch.empty(0), torch.empty(0, dtype=torch.float64), torch.empty(0, dtype=torch.float64)) == 0.0
    with pytest.raises(ValueError, match="shapes"):
        bd.ratio(torch.zeros(2), ref64, bound)
    text = bd.explain(torch.tensor([3.0, math.nan, 0.0]), ref64, bound)
    assert "2 of 3 elements exceed" in text and "1 NaN/inf" in text and "at [0]" in text


def test_unit_roundoff_gamma_and_underflow():
    assert (bd.unit_roundoff(FP32), bd.unit_roundoff(FP16), bd.unit_roundoff(BF16)) == (2.0**-24, 2.0**-11, 2.0**-8)
    for dtype in DTYPES:  # u is the worst relative error of rounding 1 + u/2 ... to nearest
        u = bd.unit_roundoff(dtype)
        assert float(torch.tensor(1 + 1.5 * u, dtype=torch.float64).to(dtype)) - (1 + 1.5 * u) == pytest.approx(0.5 * u)
    assert bd.gamma(10, 2.0**-24) == pytest.approx(10 * 2.0**-24, rel=1e-6)
    with pytest.raises(ValueError):
        bd.gamma(2**24, 2.0**-24)
    tiny = torch.tensor(3 * 2.0**-26, dtype=torch.float64)  # between fp16 subnormals
    assert abs(float(tiny.to(FP16)) - float(tiny)) <= bd.underflow(FP16)
