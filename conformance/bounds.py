"""Elementwise error bounds: how far a correct kernel's output may be from the float64 reference.

For each op, ``bound(inputs..., reference64) -> tensor`` (float64, the output's shape) such that a
kernel that computes the op's documented semantics satisfies |kernel - reference64| <= bound
elementwise, and a kernel that computes something else (wrong mask, skipped tail, low-precision
accumulation, wrong scale, transposed store...) does not. ``ratio`` turns that into one number.

Model (the kernels' contract, see neurobrix/ops/):
* inputs are already in the op's dtype d (fp32, fp16 or bf16) and the reference gets the same
  rounded inputs, so every error below comes from the kernel's own arithmetic: fp32 accumulation,
  fp32 special functions, and the final rounding to d;
* fp32 arithmetic rounds to nearest (relative error <= u32 = 2^-24 per operation, any evaluation
  order, FMA or not); an underflowing fp32 result is off by at most 2^-126 (flush-to-zero included);
* fp32 exp/exp2/sqrt/division may be the GPU's approximate versions: relative error <= SPECIAL_ULPS
  ulps (<= 2 * SPECIAL_ULPS * u32), twice the worst CUDA documents (2 ulp for ex2.approx.f32,
  div.full.f32, sqrt/rsqrt.approx.f32; libdevice expf 2 ulp; NumPy in the interpreter <= 1 ulp);
* rounding fp32 -> d is to nearest: relative u_d, plus an absolute ``underflow(d)``; for d = fp32
  there is no final rounding (the fp32 result is stored as it is);
* Higham's gamma_n(u) = n u / (1 - n u) bounds the relative error carried by each term of a sum of
  products evaluated in any order with at most n roundings per term (Higham, Accuracy and Stability
  of Numerical Algorithms, 2nd ed., Lemma 3.1 and section 3.1).
* tensor-core accumulation (tl.dot on a GPU) is not IEEE round-to-nearest in every detail (it may
  align and truncate within a step), so on a GPU these bounds are measured, not proven: the dot
  bound held on the H200 (../shared/FACTS.md), and every bound here held there for the engine's
  own kernels (bf16, fp16, fp32; worst ratios 0.63-0.9994) before the final rounding was cut to half
  an ulp and attention's P roundings were pinned to the kernel's key blocks; where the kernel's
  summation order is used, a GPU's MMA steps count twice (truncation: 2 u32 a step).

A bound must allow exactly the roundings the kernel's contract has, and no more: one final rounding
to d is half an ulp of the result's binade (``_final``), not u_d |y| (up to a whole ulp where the
mantissa is near 2: room for a second rounding); attention's P is rounded where the kernel rounds
it, against the running max of its key block (``_p_rounding``); where a config fixes the summation
order (linear's depth, attention's key blocks and splits) the fp32 allowance follows that order.
tests/test_bounds.py measures each bound's worst ratio on honest computations, shows each catches
planted mutants, and plants one extra rounding to the storage dtype of every intermediate at the
catalogue's shapes. What a rigorous bound cannot see there:
* linear without its config's depth (the worst summation order, the default): gamma_{K+2} |x| |W|
  at K = 4096 is some 30 final fp16 roundings; nothing of one extra rounding shows. With
  ``linear_depth``, fp16/bf16 accumulation and split-K partials in the storage dtype are seen at
  K = 4096 and 14336, except fp16 partials of SPLIT_K = 2, BLOCK_K = 256 gemv at K = 14336: its
  256 lanes may be summed in any order (255 fp32 roundings each), more than two fp16 roundings of
  half-size partials. skinny (the H200 tables' split settings at their catalogue K, one example
  each, made as tests/test_bounds.py's): bf16 accumulators and partials are seen at every K from
  1536 to 18944, and fp16 accumulators with BLOCK_K = 128; fp16 partials only up to K ~ 4096
  (not at 8960, 14336, 18944: there a GPU's MMA steps, 2 (ceil(k_slice / 16) + 16) fp32
  roundings with truncation counted twice, allow more than four to eight fp16 roundings of the
  partials), and with BLOCK_K = 256 (fewer steps, fewer extra roundings) neither fp16 one at
  K = 2048 or 4864. The CPU check and the mutants see them at small K, where the final rounding
  dominates the allowance.
* attention in fp16 at head dim 128, and at 64 over full caches of 1,024 keys and more: each
  weight's logit error allowance (any order: gamma_{D+2} |scale| |q| . |k|, about 5.7e-5 of the
  weight for unit-variance q and k at D = 128) outweighs one fp16 rounding of an output-sized
  quantity once the weights spread over many keys, so decode's split partials stored in fp16 are
  seen in bf16, and in fp16 at head dim 64 with fills up to a few hundred keys, not there; the
  accumulator rounded once per key block is seen in prefill (its unnormalised sums grow) but in
  decode only where the partials are. Tighter would need the logit dot's summation order, which
  the interpreter (NumPy) and a GPU (MMA steps) do differently.
* fp32 kernels: another fp32 rounding anywhere (every fp32 term is a worst case over orders); P
  rounded to fp16/bf16 in an fp32 kernel is seen.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

F64 = torch.float64
U32 = 2.0**-24
SPECIAL_ULPS = 4
SPECIAL = 2 * SPECIAL_ULPS * U32  # relative error of one fp32 exp/exp2/sqrt/division
TF32_OPERAND = 2.0**-10  # fp32 -> tf32 keeps 10 fraction bits; truncation (not rounding) is < 1 ulp = 2^-10
EXP_OVERFLOW = 80.0  # exp(-g) in fp32 overflows beyond 88.7; below -80 silu's value is < 1e-33 anyway

_UNIT_ROUNDOFF = {torch.float64: 2.0**-53, torch.float32: 2.0**-24, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}
# Largest absolute error of one rounding into the dtype where the result underflows. fp16: half the
# subnormal spacing 2^-24 (fp16 subnormals are never flushed). fp32 and bf16 share fp32's exponent
# range; a GPU may flush their subnormals to zero, an error below the smallest normal, 2^-126.
_UNDERFLOW = {torch.float64: 2.0**-1022, torch.float32: 2.0**-126, torch.float16: 2.0**-25, torch.bfloat16: 2.0**-126}


# -------------------------------------------------------------------------------------------- helpers
def unit_roundoff(dtype: torch.dtype) -> float:
    """u: the largest relative error of rounding to nearest in ``dtype`` (half its machine epsilon)."""
    return _UNIT_ROUNDOFF[dtype]


def underflow(dtype: torch.dtype) -> float:
    """The largest absolute error of one rounding into ``dtype`` in its underflow range."""
    return _UNDERFLOW[dtype]


def gamma(n: int, u: float) -> float:
    """Higham's gamma_n(u) = n u / (1 - n u): the relative error of n accumulated roundings."""
    if n * u >= 1:
        raise ValueError(f"gamma_{n}({u}) is undefined: n u >= 1")
    return n * u / (1 - n * u)


def half_ulp(magnitude: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The largest error of rounding to nearest in ``dtype`` any value of magnitude <= ``magnitude``.

    Half an ulp of the binade: u 2^e for a value in [2^e, 2^(e+1)) (between u/2 and u of the value,
    where u |value| would allow up to twice that), and at least ``underflow(dtype)`` (subnormals,
    flush to zero). The binade comes from frexp, exact at every power of two.
    """
    _, exponent = torch.frexp(magnitude)  # magnitude = f 2^exponent, f in [0.5, 1): binade 2^(exponent - 1)
    binade = torch.where(magnitude > 0, torch.ldexp(torch.ones_like(magnitude), exponent - 1), 0.0)
    return torch.clamp(unit_roundoff(dtype) * binade, min=underflow(dtype))


def _final(pre: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Add the final rounding to d to a bound ``pre`` on the fp32 result's error.

    The fp32 result r is within ``pre`` of the truth y, so |r| <= |y| + pre, and rounding r to
    nearest moves it by at most half an ulp of that magnitude's binade:
    |fl_d(r) - y| <= |r - y| + half_ulp(|y| + pre). (u_d |y| + e_d, what u_d |r| gives, allows up
    to one whole ulp where y's mantissa is near 2: room for one more rounding to d, which this
    bound does not leave.) For d = fp32 the kernel stores its fp32 result as it is: no rounding.
    """
    if dtype == torch.float32:
        return pre
    return pre + half_ulp(ref.abs() + pre, dtype)


def _compose(*relative: float | torch.Tensor) -> float | torch.Tensor:
    """The relative error of a product of factors (1 + r_i): prod(1 + r_i) - 1."""
    total: float | torch.Tensor = 1.0
    for r in relative:
        total = total * (1 + r)
    return total - 1


def _depth(n: int, depth: int | None) -> int:
    """Additions any one term of an n-term sum goes through: n - 1 in the worst order, or ``depth``."""
    if depth is None:
        return max(n - 1, 0)
    if depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    return min(depth, max(n - 1, 0))


def _cdiv(a: int, b: int) -> int:
    return -(a // -b)


def _f64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to(dtype=F64)  # on the input's device: float64 on a GPU keeps big checks fast


def _tf32_product(tf32: bool) -> float:
    # each fp32 operand truncated (or rounded) to tf32: a(1 + d1) b(1 + d2), |d1|, |d2| < 2^-10
    return _compose(TF32_OPERAND, TF32_OPERAND) if tf32 else 0.0


def _exp_relative(argument: torch.Tensor | float) -> torch.Tensor | float:
    """Relative error of fp32 exp(x) at |x| <= ``argument``, as a GPU computes it: 2^(x * log2 e).

    x * fl(log2 e) is rounded once: the exponent is off by <= |x| log2(e) (2u + u^2), i.e. exp(x) is
    multiplied by exp(<= |x| (2u + u^2)); then exp2 itself is off by SPECIAL. (A correctly reduced
    expf is better than this; the bound holds for both.)
    """
    scaled = argument * (2 * U32 + U32 * U32)
    if isinstance(scaled, torch.Tensor):
        return (1 + SPECIAL) * torch.exp(scaled) - 1
    return (1 + SPECIAL) * math.exp(scaled) - 1


# ------------------------------------------------------------------------------------------ the ratio
def ratio(actual: torch.Tensor, reference64: torch.Tensor, bound: torch.Tensor) -> float:
    """max |actual - reference64| / bound over all elements; inf if actual has a NaN or inf.

    0 / 0 counts as 0 (an exact result where the bound is 0); anything else over a zero bound is inf.
    """
    return compare(actual, reference64, bound)[0]


def compare(actual: torch.Tensor, reference64: torch.Tensor, bound: torch.Tensor) -> tuple[float, float, float]:
    """(``ratio``, max |reference64|, max |actual - reference64|), read from the device in one transfer: a check on a
    GPU shared by many worker processes waits its turn at every read (a judge of 16 comparisons, each read five times
    over, spent seconds an example waiting), so every verdict of a comparison is one tensor read once."""
    a = _f64(actual)
    ref = _f64(reference64)
    b = _f64(bound)
    if a.shape != ref.shape or b.shape != ref.shape:
        raise ValueError(f"shapes differ: actual {list(a.shape)}, reference {list(ref.shape)}, bound {list(b.shape)}")
    if a.numel() == 0:
        return 0.0, 0.0, 0.0
    err = (a - ref).abs()
    r = torch.where(err == 0, torch.zeros_like(err), err / b)  # err / 0 = inf
    invalid = (~torch.isfinite(ref)).any() | (~torch.isfinite(b)).any() | (b < 0).any()
    nonfinite = (~torch.isfinite(a)).any()
    read = torch.stack((invalid.to(F64), nonfinite.to(F64), r.max(), ref.abs().max(), err.max())).tolist()
    if read[0]:
        raise ValueError("the reference and the bound must be finite (and the bound >= 0)")
    if read[1]:
        return math.inf, read[3], math.inf
    return read[2], read[3], read[4]


def explain(actual: torch.Tensor, reference64: torch.Tensor, bound: torch.Tensor, limit: int = 5) -> str:
    """Why ``ratio`` exceeds 1: how many elements, the worst ones, NaN/inf on the kernel's side."""
    a, ref, b = _f64(actual), _f64(reference64), _f64(bound)
    nonfinite = ~torch.isfinite(a)
    err = (a - ref).abs()
    r = torch.where(err == 0, torch.zeros_like(err), err / b)
    r = torch.where(nonfinite, torch.full_like(r, math.inf), r)
    bad = r > 1
    head = f"{int(bad.sum())} of {a.numel()} elements exceed the bound ({int(nonfinite.sum())} NaN/inf in the output)"
    lines = [head]
    if bad.any():
        order = torch.argsort(r.flatten(), descending=True)[:limit]
        for flat in order.tolist():
            if r.flatten()[flat] <= 1:
                break
            idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), a.shape))
            lines.append(
                f"  at {list(idx)}: got {a[idx].item():.9g}, float64 {ref[idx].item():.9g}, "
                f"|err| {err[idx].item():.3g} > bound {b[idx].item():.3g} (ratio {r[idx].item():.3g})"
            )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- linear
def linear(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    y64: torch.Tensor,
    *,
    tf32: bool = False,
    depth: int | None = None,
) -> torch.Tensor:
    """Bound for y = x @ weight^T (+ bias): fp32 accumulation, bias added in fp32, one rounding to d.

    |y - y64| <= (1 + u_d) [((1 + t)(1 + g) - 1) |x||W|^T + g |b| + (K + 2) e32] + u_d |y64| + e_d
    with g = gamma_{K+2}(2^-24), t = 0 or, with ``tf32``, (1 + 2^-10)^2 - 1.

    Derivation: each of the K products passes through at most K roundings (its product and K - 1
    additions, in any order: sequential, blocked, tree, split-K), the bias one more addition, plus
    one for a split-K merge: gamma_{K+2} on |x||W|^T + |b| (Higham 3.1). Each of those K + 2
    operations may underflow: (K + 2) e32. With ``tf32`` the GPU feeds fp32 operands to the tensor
    cores with 10 fraction bits, each operand off by < 2^-10 relative (truncation or rounding),
    i.e. each product by (1 + 2^-10)^2 - 1 before accumulation. Then the final rounding to d (_final).
    This is the dot-product bound of ../shared/FACTS.md, with the tf32 term made truncation-safe
    (2^-10 per operand instead of 2^-11).

    ``depth``: the most additions any one product goes through, when the kernel's summation order
    is known (e.g. ceil(K / BLOCK_K) + BLOCK_K for a K loop of sequential tile dots); gamma_{K+2}
    becomes gamma_{depth+3}. The default K - 1 holds for every order. gamma_K is a worst case: for fp32
    outputs and long K, honest errors are ~K times smaller (the tests measure it); for fp16/bf16
    the final rounding dominates.
    """
    x64, w64 = _f64(x), _f64(weight)
    K = x64.shape[1]
    g = gamma(_depth(K, depth) + 3, U32)
    abs_products = x64.abs() @ w64.abs().T
    pre = _compose(_tf32_product(tf32), g) * abs_products + (K + 2) * underflow(torch.float32)
    if bias is not None:
        pre = pre + g * _f64(bias).abs()[None, :]
    return _final(pre, _f64(y64), x.dtype)


def linear_depth(config: Mapping[str, Any], K: int, dtype: torch.dtype) -> int | None:
    """The most fp32 roundings any product of linear goes through under ``config`` (``linear``'s ``depth``),
    or None where the order is any (fp32 operands: an FMA loop over the whole of K).

    gemv: each of BLOCK_K lanes accumulates ceil(k_slice / BLOCK_K) products of its K slice, the lanes
      are summed in any order (BLOCK_K - 1), the SPLIT_K partials merged in order (SPLIT_K - 1): plain
      fp32 arithmetic, no tensor cores.
    tiled, tma (fp16/bf16 operands): the K loop adds one BLOCK_K dot after another into the accumulator.
      The interpreter sums each dot in any order (BLOCK_K - 1) and adds it (ceil(K / BLOCK_K)); a GPU
      issues one MMA per 16 K (ceil(K / 16) accumulations, each summing at most 16 products and the
      accumulator). Tensor cores may truncate where round-to-nearest rounds, i.e. up to 2 u32 per
      step: gamma_n(2u) = gamma_2n(u), so the count is doubled.
    skinny, tma_split (fp16/bf16 operands): tiled's K loop over one K slice (k_slice in place of K; steps
      past K add dots of zeros), then the SPLIT_K partials merged in order like gemv's (plain fp32
      additions: SPLIT_K - 1, not doubled).
    With the depth known, gamma_{depth+3} replaces gamma_{K+2}: at K = 4096 about 1/8 of the worst
    order's allowance, enough to see fp16/bf16 accumulation or partials rounded to the storage dtype.
    """
    variant = config.get("variant")
    block_k = int(config["BLOCK_K"])
    split_k = int(config.get("SPLIT_K", 1))
    k_slice = _cdiv(_cdiv(K, split_k), block_k) * block_k
    if variant == "gemv":
        return _cdiv(k_slice, block_k) + block_k - 1 + split_k - 1
    if variant in ("tiled", "tma", "skinny", "tma_split"):
        if dtype == torch.float32:
            return None
        sliced = variant in ("skinny", "tma_split")
        length = k_slice if sliced else K
        dots = 2 * max(_cdiv(length, block_k) + block_k - 1, _cdiv(length, 16) + 16)
        return dots + (split_k - 1 if sliced else 0)
    raise ValueError(f"linear: no summation order known for variant {variant!r}")


# ------------------------------------------------------------------------------------------- rms_norm
def residual_add(x: torch.Tensor, residual: torch.Tensor, h64: torch.Tensor) -> torch.Tensor:
    """Bound for the fused kernel's new residual stream h = round_d(fp32(x + r)).

    |h - h64| <= (1 + u_d)(u32 |h64| + e32) + u_d |h64| + e_d: one fp32 addition (exact for most
    fp16/bf16 pairs, but not all: the exponents may be far apart), then the rounding to d.
    """
    del residual  # the bound depends only on the exact sum
    h = _f64(h64)
    return _final(U32 * h.abs() + underflow(torch.float32), h, x.dtype)


def rms_norm(
    x: torch.Tensor, weight: torch.Tensor, eps: float, y64: torch.Tensor, *, depth: int | None = None
) -> torch.Tensor:
    """Bound for y = x / sqrt(mean(x^2) + eps) * w computed in fp32 with one rounding to d.

    ``x`` is what the kernel normalises: the input, or with a residual the (rounded) h it returned.
    Per row, a = mean(x^2) + eps:
      sum of N squares (all >= 0, any order): relative gamma_N; / N, + eps(fp32): two more
        roundings, both terms >= 0: a is computed with relative error g = gamma_{N+2}, plus
        (N + 2) e32 / a for underflowing squares;
      1/sqrt(a(1 + g)) is off by r1 = (1 - g)^(-1/2) - 1 at worst; sqrt and the division add
        SPECIAL / (1 - SPECIAL) and SPECIAL;
      x * rstd * w: two fp32 multiplications, (1 + u32)^2, each may underflow (2 e32).
    |y - y64| <= (1 + u_d)(rel |y64| + 2 e32) + u_d |y64| + e_d with rel the composition above.
    ``depth``: the most additions any one square goes through, when the kernel's order is known
    (a tree sum over a power-of-two block: log2(BLOCK_N)); gamma_{N+2} becomes gamma_{depth+3}.
    The default N - 1 holds for every order.
    """
    x64 = _f64(x)
    N = x64.shape[-1]
    a = (x64 * x64).mean(dim=-1, keepdim=True) + eps  # [M, 1]
    g = gamma(_depth(N, depth) + 3, U32) + (N + 2) * underflow(torch.float32) / a
    r1 = (1 - g) ** -0.5 - 1
    rel = _compose(r1, SPECIAL / (1 - SPECIAL), SPECIAL, U32, U32)
    y = _f64(y64)
    return _final(rel * y.abs() + 2 * underflow(torch.float32), y, x.dtype)


# --------------------------------------------------------------------------------------------- rotary
U64 = 2.0**-53


def rope_table(
    table64: torch.Tensor,
    dtype: torch.dtype = torch.float32,
    *,
    angle: torch.Tensor | None = None,
    scaling: Mapping[str, Any] | None = None,
    theta: float = 10000.0,
) -> torch.Tensor:
    """Bound for a cos or sin table.

    Without ``angle``: ``table64`` is the very float64 table that was rounded once to ``dtype``: half an ulp.
    With ``angle`` (|p f| of each element, from the reference's frequencies): the table is the engine's
    ``rope_cache``, derived in float32 as transformers' rotary embedding derives it, against the reference's float64
    table ``table64``. Each inverse frequency goes through float32 roundings: the exponent 2i / D (one rounding,
    which the power theta^x turns into a relative error of ln(theta) x <= ln(theta) roundings), the power (within
    SPECIAL_ULPS ulps), the division (one); linear scaling is one more division, dynamic scaling (within the model's
    context) none; with Llama-3 scaling, its blend: the weight smooth = (original / wavelength - low) / (high - low)
    is off by ~8 u high / (high - low) and moves f by f (1 - 1 / factor) per unit, i.e. relative to f / factor by
    up to factor times that (16 factor high / (high - low) allowed). The angle is one more rounding, so it is within
    gamma_n(2^-24) |p f| of the exact one, and cos/sin of it within SPECIAL_ULPS ulps of 1 (the values are at most 1
    in magnitude): each table element within gamma_n(2^-24) |p f| + SPECIAL_ULPS 2^-24 of cos(p f), and the
    reference within 2^-52 of it. At a position of 8,192 and f = 1 the bound is ~2e-5: a frequency off by one part
    in 10^4 shows.

    With yarn scaling (transformers' float32 operations): the slowed frequency 1 / (factor x theta^x) is two more
    roundings than the kept one (the factor as a float32 scalar, the product); the ramp r = (i - low) / (high - low)
    takes low and the width as float32 scalars: off by |low - fl32(low)| / width from low's rounding and ~3 u from
    the subtraction, the width's rounding and the division, relative to a ramp within [0, 1] (clamping moves it no
    further); the weights 1 - r and 1 - (1 - r) one more u each. The blend f / factor (1 - w) + f w: its two
    products and sum three roundings of terms that are never negative (relative to f), and a weight off by d moves f
    by d |f - f / factor|, relative to f at most d max(factor, 1 / factor). The table is then cos and sin times the
    attention factor a (as a float32 scalar, and the product rounded): |a| times the bound above and 2 u more.
    """
    t = _f64(table64)
    if angle is None:
        return half_ulp(t.abs(), dtype)
    roundings = math.ceil(math.log(max(float(theta), math.e))) + SPECIAL_ULPS + 2
    kind = scaling.get("rope_type", scaling.get("type")) if scaling is not None else None
    scale = 1.0
    if kind == "linear":  # one more division
        roundings += 1
    elif kind == "llama3":
        high, low = float(scaling["high_freq_factor"]), float(scaling["low_freq_factor"])
        roundings += math.ceil(16 * float(scaling["factor"]) * max(1.0, high / (high - low)))
    elif kind == "yarn":
        factor, low, width = float(scaling["factor"]), *_yarn_ramp(scaling, theta, 2 * table64.shape[-1])
        low32 = float(torch.tensor(low, dtype=torch.float32))
        ramp = 1.01 * (abs(low - low32) / abs(width) / U32 + 3)  # in units of u
        roundings += 2 + 3 + math.ceil((ramp + 2) * max(factor, 1 / factor))
        given = scaling.get("attention_factor")  # else the paper's 0.1 ln(factor) + 1 above a factor of 1
        scale = abs(float(given) if given is not None else 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0)
    bound = gamma(roundings, U32) * _f64(angle).abs() + SPECIAL_ULPS * U32
    if scale != 1.0:
        bound = scale * bound * (1 + 3 * U32) + 2 * scale * U32
    return bound + 2 * U64 * max(scale, 1.0)


def _yarn_ramp(scaling: Mapping[str, Any], theta: float, dim: int) -> tuple[float, float]:
    """(low, high - low) of yarn's ramp, as transformers computes them in double precision."""
    context = float(scaling["original_max_position_embeddings"])

    def place(rotations: float) -> float:
        return dim * math.log(context / (2 * math.pi * rotations)) / (2 * math.log(theta))

    low, high = place(float(scaling.get("beta_fast") or 32)), place(float(scaling.get("beta_slow") or 1))
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    return float(low), (high + 0.001 if high == low else high) - low


def rotary(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor, out64: torch.Tensor
) -> torch.Tensor:
    """Bound for out = cat(x1 c - x2 s, x2 c + x1 s) computed in fp32 with one rounding to d.

    Each output is a two-term dot product in fp32: two products and one addition, gamma_2, each
    operation may underflow (3 e32). ``cos``/``sin`` may be the float64 tables or their fp32
    rounding (the engine's rope cache, see ``rope_table``): one more relative u32 on each c and s.
    Together gamma_3 on |x1||c| + |x2||s| (resp. |x2||c| + |x1||s|), then the rounding to d.
    """
    x64 = _f64(x)
    half = x64.shape[-1] // 2
    pos = positions.detach().to(cos.device, torch.int64)
    c = _f64(cos)[pos][:, :, None, :].abs()
    s = _f64(sin)[pos][:, :, None, :].abs()
    a1, a2 = x64[..., :half].abs(), x64[..., half:].abs()
    magnitude = torch.cat((a1 * c + a2 * s, a2 * c + a1 * s), dim=-1)
    pre = gamma(3, U32) * magnitude + 3 * underflow(torch.float32)
    return _final(pre, _f64(out64), x.dtype)


# ------------------------------------------------------------------------------------------- silu_mul
def silu_mul(gu: torch.Tensor, out64: torch.Tensor) -> torch.Tensor:
    """Bound for out = g / (1 + exp(-g)) * u (or g * sigmoid(g) * u) in fp32, one rounding to d.

    e = exp(-g): relative _exp_relative(|g|); 1 + e: its error scaled by e / (1 + e) = 1 - sigmoid(g),
    plus one rounding: r_d; dividing by it: r_d / (1 - r_d); the division (or reciprocal and
    product) SPECIAL, the product with u one rounding; each of those may underflow (2 e32).
    Where g < -80 exp(-g) may overflow fp32 and the kernel return 0 for a value of magnitude
    < 1e-33 |u|: there the bound is |out64| itself (any result between 0 and the truth).
    """
    gu64 = _f64(gu)
    i = gu64.shape[-1] // 2
    g = gu64[:, :i]
    y = _f64(out64)
    one_minus_sigmoid = torch.sigmoid(-g)
    r_e = _exp_relative(g.abs())
    r_d = _compose(r_e * one_minus_sigmoid, U32)
    rel = _compose(r_d / (1 - r_d), SPECIAL, U32, U32)
    pre = rel * y.abs() + 2 * underflow(torch.float32)
    pre = torch.where(g < -EXP_OVERFLOW, pre + y.abs(), pre)
    return _final(pre, y, gu.dtype)


# ------------------------------------------------------------------------------------------ attention
ROW_ELEMENTS = 1 << 22  # query rows x keys per slice of a long attention bound (float64 tensors of 32 MiB)
TINY_P = 2.0**-120  # a p below this may be subnormal in fp32 (or flushed): its rounding is known only to lie in [0, 2p]


def _block_running_max(s: torch.Tensor, key_block: int, chunk: int) -> torch.Tensor:
    """For each key j of s [..., R, L] (-inf where hidden): the running max the kernel holds when it
    computes p_j, i.e. the max of s over j's key block and the earlier blocks of j's chunk (split).
    Blocks start at multiples of ``key_block``, chunks at multiples of ``chunk`` (itself a multiple)."""
    L = s.shape[-1]
    per_chunk = chunk // key_block
    chunks = _cdiv(L, chunk)
    padded = torch.nn.functional.pad(s, (0, chunks * chunk - L), value=-math.inf)
    block_max = padded.unflatten(-1, (chunks, per_chunk, key_block)).amax(dim=-1)  # [..., R, chunks, per_chunk]
    running = block_max.cummax(dim=-1).values
    return running.repeat_interleave(key_block, dim=-1).flatten(-2)[..., :L]


def _p_rounding(
    s: torch.Tensor,
    visible: torch.Tensor,
    E: torch.Tensor,
    E_max: torch.Tensor,
    key_block: int,
    chunk: int,
    dtype: torch.dtype,
) -> tuple[torch.Tensor, torch.Tensor]:
    """[lo, hi] holding rho_j = fl_d(p_j) / p_j - 1, the relative error of rounding the kernel's p_j to d.

    The kernel's p_j = exp2(t_j - m) with m its running max at j's block (``_block_running_max``):
    in natural units p_j = exp(s_j - m_j) exp(+-delta_j) (1 +- SPECIAL) with
      delta_j = E_j + E_max               the logit's error and the max's (any key's logit error)
              + 3 u32 (m_j - s_j + E_j + E_max)   the rounding of t_j - m (u each), tripled for an
                                          exp that prescales its argument by log2(e) itself.
    Rounding to nearest is monotone, so fl_d(p_j) lies between fl_d(p_lo) and fl_d(p_hi) (rounded
    through fp32, as the kernel's p is an fp32 number), and rho_j between fl_d(p_lo) / p_hi - 1 and
    fl_d(p_hi) / p_lo - 1. For all but the few p_j within delta of a rounding boundary of d both ends
    round alike: the kernel's rounded P is known and rho_j is pinned to within ~2 delta_j, where the
    worst case would allow any |rho_j| <= u_d. The interval never exceeds that worst case (half an
    ulp of p_hi over p_lo): where delta_j outgrows an ulp of d (logits of large |q| |k|, whose error
    bound E grows with them) the rounding of P is charged in full. Where p_lo < TINY_P, rho_j in
    [-1, 1] (fl(p) in [0, 2p]).
    """
    m_block = _block_running_max(s, key_block, chunk)
    gap = torch.where(visible, m_block - s, torch.zeros_like(s))
    p_hat = torch.where(visible, torch.exp(-gap), torch.zeros_like(s))
    delta = E + E_max + 3 * U32 * (gap + E + E_max)
    p_lo = p_hat * torch.exp(-delta) * (1 - SPECIAL)
    p_hi = p_hat * torch.exp(delta) * (1 + SPECIAL)
    known = p_lo >= TINY_P
    safe_lo = torch.where(known, p_lo, torch.ones_like(s))
    cap = half_ulp(p_hi, dtype) / safe_lo  # |fl(p) - p| <= half an ulp of p_hi, whatever p is
    lo = torch.maximum(p_lo.float().to(dtype).to(F64) / p_hi - 1, -cap)
    hi = torch.minimum(p_hi.float().to(dtype).to(F64) / safe_lo - 1, cap)
    lo = torch.where(known, lo, torch.full_like(s, -1.0))
    hi = torch.where(known, hi, torch.ones_like(s))
    return torch.where(visible, lo, torch.zeros_like(s)), torch.where(visible, hi, torch.zeros_like(s))


def _attention_rows(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    visible: torch.Tensor,
    scale: float,
    out: torch.Tensor,
    dtype: torch.dtype,
    key_block: int | None,
    chunk: int | None,
    splits: int,
    tf32: bool,
) -> torch.Tensor:
    """The bound for rows of queries q [..., R, D] over keys k, v [..., L, D] (float64), ``visible`` [..., R, L].

    The kernel (flash attention / flash decoding, neurobrix/ops/attention.py):
      t_j = fl(q . k_j) * fl(scale log2 e)              fp32 dot, scale folded with log2(e)
      running max m over key blocks; p_j = exp2(t_j - m); l = l * alpha + sum p;
      acc = acc * alpha + round_d(p) . v   (P rounded to d before the second dot, d = fp16/bf16,
                                            the only rounding to d before the output's; l sums the
                                            unrounded p; V enters the dot exactly, each product is
                                            exact in fp32 and summed in fp32; for d = fp32 P is not
                                            rounded at all);
      alpha = exp2(m_old - m_new) at each new block; split-KV partials (fp32 acc, m, l) merged the
      same way; out = round_d(acc / l).
    Writing w_j = exp(s_j - M) (s_j = scale q . k_j exact, M = max_j s_j, W = sum_j w_j >= 1, the
    reference out = sum_j w_j v_j / W), the kernel's weights are c w_j (1 + r_j) with c common to
    every key of the row (the shift by the computed max cancels between numerator and denominator)
    and
      r_j <= exp(E_j + G_j) (1 + SPECIAL)^(n + 1) (1 + u32)^(n + 1) - 1, where
      E_j = ((1 + t)(1 + gamma_n) - 1) |scale| |q| . |k_j|       the logit's error (dot, scale, log2 e;
                                                                  n = D + 2, or a GPU's MMA count),
      G_j = 9 u32 (M - s_j + 2 max E)                             rounding of t_j - m, of the alpha
                                                                  arguments (they telescope) and of
                                                                  the merge's arguments (3 u each),
                                                                  tripled for an exp that prescales
                                                                  its argument by log2 e itself,
      n = ceil(min(L, chunk) / key_block) + 1                     rescalings by alpha a key goes
                                                                  through (+1: the split merge),
      one exp2 and one multiplication per rescaling, one more for p_j itself.
    In the numerator, term j also carries rho_j, the rounding of p_j to d (``_p_rounding``: an
    interval [lo_j, hi_j] that the kernel's block structure pins down for almost every key), and
    its accumulation, gamma_a with a = (additions in its block's dot) + (later blocks of its chunk)
    + splits + 1; the denominator carries r_j and gamma_a. With g_j = (1 + r_j)(1 + gamma_a) - 1,
    B = sum_j w_j g_j / W (the denominator's relative error), mid_j, rad_j the centre and half width of [lo_j, hi_j]:
      acc / l - out = (Delta + R - beta out) / (1 + beta), |beta| <= B,
      Delta = sum_j w_j rho_j v_j / W,  |Delta| <= |sum_j w_j mid_j v_j| / W + sum_j w_j rad_j |v_j| / W,
      |R| <= sum_j w_j g_j (1 + max(|lo_j|, |hi_j|)) |v_j| / W,
    then the division (SPECIAL relative) and the rounding to d (_final). The first term of |Delta|
    is a signed sum: the P roundings the kernel's arithmetic fixes cancel as they do in the kernel,
    instead of being charged u_d sum_j w_j |v_j| / W, an allowance that, on rows whose values
    cancel, is large enough to hide another rounding of the accumulator or of the split partials.

    ``key_block`` None: the kernel's blocking is not known; every rho_j in [-u_d, u_d], plus an
    absolute underflow(d) where p_j underflows in d, a rescaling per key (n = L + 1) and sums over
    the whole row (a = L + n + splits + 1): the bound of any blocking, P rounded once.

    What this bound cannot see: in fp32, any extra fp32 rounding (the fp32 terms are worst cases
    over every evaluation order); a P rounding whose p lies within delta_j of a rounding boundary
    (charged in full, u_d); errors below the final half ulp where the output's only other error is
    the rounding of P.
    """
    if splits < 1 or (key_block is not None and key_block < 1):
        raise ValueError(f"key_block and splits must be >= 1, got {key_block} and {splits}")
    u_a = U32
    D, L = q.shape[-1], k.shape[-2]
    s = scale * (q @ k.transpose(-1, -2))
    s = torch.where(visible, s, torch.full_like(s, -math.inf))
    M = s.max(dim=-1, keepdim=True).values  # [..., R, 1], finite: every row sees a key
    w = torch.exp(s - M)  # 0 where hidden
    W = w.sum(dim=-1, keepdim=True)
    keys = visible.sum(dim=-1, keepdim=True).to(F64)  # [..., R, 1]

    # the logit dot: D products in any order (D + 2 roundings with the scale); a GPU's MMAs take 16 at a
    # time and may truncate (2 u32 a step, gamma_n(2u) = gamma_2n(u)): 2 (ceil(D / 16) + 16 + 2) roundings
    roundings = max(D + 2, 2 * (_cdiv(D, 16) + 18))
    E = _compose(_tf32_product(tf32), gamma(roundings, u_a)) * abs(scale) * (q.abs() @ k.abs().transpose(-1, -2))
    E = torch.where(visible, E, torch.zeros_like(E))
    E_max = E.max(dim=-1, keepdim=True).values
    gap = torch.where(visible, M - s, torch.zeros_like(s))
    G = 9 * u_a * (gap + 2 * E_max)
    if key_block is None:  # any blocking: every key may be rescaled once per key, and summed with all of them
        n = keys + 1  # [..., R, 1]
        acc_terms = keys + n + splits + 1
    else:
        # a key is rescaled once per later block of its own chunk (split) and once by the merge; its product
        # with v (and its p in l) is summed within its block (any order; a GPU's MMAs take 16 keys a step
        # and may truncate: 2 (ceil(key_block / 16) + 17)), added to the running sums once per later block
        # of its chunk, and merged with the other splits (any order)
        blocks = torch.ceil(torch.clamp(keys, max=chunk or L) / key_block)
        n = blocks + 1
        acc_terms = blocks + max(key_block, 2 * (_cdiv(key_block, 16) + 17)) + splits + 1
    r = torch.exp(E + G) * ((1 + SPECIAL) * (1 + u_a)) ** (n + 1) - 1  # [..., R, L]
    g_acc = acc_terms * u_a / (1 - acc_terms * u_a)
    eta_p = 0.0
    if dtype == torch.float32:  # P and V fed to tf32 tensor cores, or no rounding at all
        lo = -_tf32_product(tf32) * torch.ones_like(s)
        eta_p = underflow(torch.float32) if tf32 else 0.0
    elif key_block is None:
        lo = -unit_roundoff(dtype) * torch.ones_like(s)
        eta_p = underflow(dtype)
    else:
        lo, hi = _p_rounding(s, visible, E, E_max, key_block, chunk or _cdiv(L, key_block) * key_block, dtype)
    if dtype == torch.float32 or key_block is None:
        lo = torch.where(visible, lo, torch.zeros_like(s))
        hi = -lo
    mid, rad = (lo + hi) / 2, (hi - lo) / 2
    rho = torch.maximum(lo.abs(), hi.abs())

    g = (1 + r) * (1 + g_acc) - 1
    B = (w * g).sum(dim=-1, keepdim=True) / W
    if float(B.max()) >= 1:
        raise ValueError("attention bound: the softmax denominator's error bound reaches 1 (inputs too large)")
    delta = ((w * mid) @ v).abs() + (w * rad) @ v.abs()  # W |Delta|
    rest = (w * g * (1 + rho)) @ v.abs()  # W |R|
    eta = torch.minimum(w, torch.full_like(w, eta_p)) * (1 + g) * torch.exp(E_max)
    pre = (delta + rest + eta @ v.abs()) / (W * (1 - B)) + B * out.abs() / (1 - B)
    pre = (1 + SPECIAL) * pre + SPECIAL * out.abs() + (keys + 4) * underflow(torch.float32)
    return _final(pre, out, dtype)


def attention_prefill(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float,
    out64: torch.Tensor,
    *,
    key_block: int | None = None,
    tf32: bool = False,
) -> torch.Tensor:
    """Bound for causal GQA flash attention (shapes as reference.attention_prefill, or a chunk's as
    reference.attention_chunk: C queries over S keys, the diagonal offset by S - C); see _attention_rows.

    ``key_block``: the kernel's key block (the config's BLOCK_N): blocks of keys from position 0,
    the running max updated once per block. With it the bound knows which P the kernel rounds
    (and how); None allows any blocking (every P rounding charged in full).
    ``tf32``: fp32 inputs fed to tf32 tensor cores (both dots).
    """
    q64, k64, v64, o64 = _f64(q), _f64(k), _f64(v), _f64(out64)
    B, C, HQ, _ = q64.shape
    S = k64.shape[1]
    group = HQ // k64.shape[2]
    visible = torch.ones(C, S, dtype=torch.bool, device=q64.device).tril(diagonal=S - C)
    bound = torch.empty_like(o64)
    rows = max(1, ROW_ELEMENTS // S)  # every quantity is per query row: rows at a time bound the memory
    for b in range(B):
        for h in range(HQ):
            kv = h // group
            for r in range(0, C, rows):
                bound[b, r : r + rows, h, :] = _attention_rows(
                    q64[b, r : r + rows, h, :],
                    k64[b, :, kv, :],
                    v64[b, :, kv, :],
                    visible[r : r + rows],
                    scale,
                    o64[b, r : r + rows, h, :],
                    q.dtype,
                    key_block,
                    None,
                    1,
                    tf32,
                )
    return bound


attention_chunk = attention_prefill  # the same kernel structure: key blocks from position 0, causal rows


def attention_one_key(v: torch.Tensor, dtype: torch.dtype, rescalings: int) -> torch.Tensor:
    """Bound for attention output rows that see a single key, against that key's value rows ``v`` (float64).

    The kernel's weight p = exp2(t - m) of that key is one fp32 number in both the accumulator and the softmax
    sum (exp2's own error cancels: out = round_d(p v) / p, not a weighted average); what remains is the product
    p v (one rounding), the rescale of acc and l by each later key block the row passes through (exp2(0) = 1
    where exact: two roundings a block, ``rescalings`` blocks), the split merge's two products, the division
    (SPECIAL) and, for d = fp16/bf16, P's rounding to d of a p within SPECIAL of 1, then the rounding to d
    (``_final``). Keys the row does not see have weight exp2(-inf) = 0 and add exact zeros. The general bound
    (``_attention_rows``) charges any order of a block's additions (gamma of a block's length) and so allows
    about 70 u32 of fp32 error here: room for a divisor off by 1e-6."""
    roundings = 2 * rescalings + 3
    relative = _compose(*([U32] * roundings), SPECIAL, SPECIAL if dtype != torch.float32 else 0.0)
    v64 = _f64(v)
    return _final(relative * v64.abs() + underflow(torch.float32), v64, dtype)


def decode_chunk(capacity: int, key_block: int, splits: int) -> int:
    """The cache positions each split of flash decoding covers (a multiple of the key block), as the
    launcher computes it from the capacity: cdiv(cdiv(capacity, splits), key_block) * key_block."""
    if splits < 1 or key_block < 1:  # refused as _attention_rows refuses it (a ZeroDivisionError before)
        raise ValueError(f"key_block and splits must be >= 1, got {key_block} and {splits}")
    return _cdiv(_cdiv(capacity, splits), key_block) * key_block


def attention_decode(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    lengths: torch.Tensor,
    scale: float,
    out64: torch.Tensor,
    *,
    key_block: int | None = None,
    splits: int = 1,
    tf32: bool = False,
) -> torch.Tensor:
    """Bound for one query per sequence over the cache (shapes as reference.attention_decode).

    Flash decoding: ``splits`` chunks of the cache (``decode_chunk`` positions each, from 0), each a
    flash pass over its filled positions in ``key_block`` steps, merged by a second pass; see
    _attention_rows (the same derivation, with the merge's rescaling and sum counted). ``key_block``
    None allows any blocking.
    """
    q64, k64, v64, o64 = _f64(q), _f64(k_cache), _f64(v_cache), _f64(out64)
    B, HQ, D = q64.shape
    S, HKV = k64.shape[1], k64.shape[2]
    group = HQ // HKV
    # one batch of rows per (sequence, kv head): its group of query heads over that head's cache
    rows = q64.reshape(B, HKV, group, D)
    n = lengths.to(device=q64.device, dtype=torch.long)
    filled = torch.arange(S, device=q64.device)[None, :] < n[:, None]  # [B, S]
    empty = ~filled[:, None, :, None]  # positions past the length are never read: whatever they hold
    keys = k64.permute(0, 2, 1, 3).masked_fill(empty, 0.0)  # [B, HKV, S, D]
    values = v64.permute(0, 2, 1, 3).masked_fill(empty, 0.0)
    visible = filled[:, None, None, :]
    visible = visible.expand(B, HKV, group, S)
    chunk = decode_chunk(S, key_block, splits) if key_block is not None else None
    bound = _attention_rows(
        rows, keys, values, visible, scale, o64.reshape(B, HKV, group, D), q.dtype, key_block, chunk, splits, tf32
    )
    return bound.reshape(B, HQ, D)
