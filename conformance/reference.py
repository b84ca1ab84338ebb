"""Float64 references: what each engine op means, computed plainly in float64.

Every function takes torch tensors in any float dtype (fp32, fp16, bf16: the engine's inputs, already
rounded to their dtype), upcasts them to float64 on their own device (the CPU in CI; the GPU when
checking a GPU class, where float64 matrix products of catalogue sizes would take minutes on the CPU)
and returns float64. Nothing here knows
how a kernel computes: these are the definitions the kernels are checked against, written as
directly as possible (loops where a loop is clearer than a fused expression), and independent of
``neurobrix/`` on purpose.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import torch

F64 = torch.float64


def _f64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to(dtype=F64)  # on the input's device: float64 on a GPU keeps big checks fast


# --------------------------------------------------------------------------------------------- linear
def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """y[M, N] = x[M, K] @ weight[N, K]^T (+ bias[N])."""
    y = _f64(x) @ _f64(weight).T
    if bias is not None:
        y = y + _f64(bias)[None, :]
    return y


# ------------------------------------------------------------------------------------------- rms_norm
def residual_add(x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    """h = x + residual, exactly (the reference for the residual stream the fused kernel returns)."""
    return _f64(x) + _f64(residual)


def rms_norm(
    x: torch.Tensor, weight: torch.Tensor, eps: float, residual: torch.Tensor | None = None
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """y = x / sqrt(mean(x^2 over the last dim) + eps) * weight, for x [M, N], weight [N].

    With ``residual``: returns (y, h) with h = ``residual_add(x, residual)`` and y the norm of h
    *rounded to x's dtype*. The engine stores its residual stream in the model dtype: the fused
    kernel rounds h, returns it as the new stream and normalises that rounded value, exactly as an
    unfused add-then-norm would. So the float64 truth for y is the norm of the rounded h, not of the
    exact sum. (A checker that has the kernel's own h, already checked against its bound, should
    pass it to ``rms_norm(h, weight, eps)``: a kernel that adds in fp32 and then rounds may land one
    ulp away from the correctly rounded sum used here, which its h bound allows.)
    """
    if residual is not None:
        h = residual_add(x, residual)
        y = rms_norm(h.to(x.dtype), weight, eps)
        return y, h
    x64 = _f64(x)
    mean_square = (x64 * x64).mean(dim=-1, keepdim=True)
    return x64 / torch.sqrt(mean_square + eps) * _f64(weight)


# --------------------------------------------------------------------------------------------- rotary
class RopeTables(NamedTuple):
    inv_freq: torch.Tensor  # [head_dim / 2]
    cos: torch.Tensor  # [max_positions, head_dim / 2]
    sin: torch.Tensor  # [max_positions, head_dim / 2]


def llama3_inv_freq(inv_freq: list[float], scaling: Mapping[str, Any]) -> list[float]:
    """The Llama-3.1 frequency rule (Meta's `apply_scaling`, transformers' `_compute_llama3_parameters`).

    Wavelengths shorter than original_max_position_embeddings / high_freq_factor are kept, those
    longer than original_max_position_embeddings / low_freq_factor are slowed down by ``factor``, and
    those in between blend the two with weight smooth = (orig / wavelen - low) / (high - low).
    """
    factor = float(scaling["factor"])
    low = float(scaling["low_freq_factor"])
    high = float(scaling["high_freq_factor"])
    old_context = float(scaling["original_max_position_embeddings"])
    low_freq_wavelen = old_context / low
    high_freq_wavelen = old_context / high
    scaled = []
    for f in inv_freq:
        wavelen = 2 * math.pi / f
        if wavelen < high_freq_wavelen:
            scaled.append(f)
        elif wavelen > low_freq_wavelen:
            scaled.append(f / factor)
        else:
            smooth = (old_context / wavelen - low) / (high - low)
            scaled.append((1 - smooth) * f / factor + smooth * f)
    return scaled


def yarn_attention_factor(scaling: Mapping[str, Any]) -> float:
    """YaRN's scale of cos and sin (the paper's sqrt(1/t) = 0.1 ln(s) + 1 at scale s > 1, else 1), unless the
    configuration states its own."""
    given = scaling.get("attention_factor")
    if given is not None:
        return float(given)
    factor = float(scaling["factor"])
    return 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0


def yarn_inv_freq(inv_freq: list[float], theta: float, scaling: Mapping[str, Any]) -> list[float]:
    """The YaRN frequency rule (the paper's "NTK-by-parts", as transformers' `_compute_yarn_parameters` sets it up).

    Dimension pair i turns r_i = L f_i / (2 pi) times in the original context L; the pair whose count is r sits at
    d(r) = D ln(L / (2 pi r)) / (2 ln theta). Between d(beta_fast) (default 32; floored) and d(beta_slow) (default 1;
    ceiled), unless ``truncate`` is false, both clipped to [0, D - 1] (a ramp of width 0 widened by 0.001), the weight
    of the original frequency falls linearly from 1 to 0: f_i' = f_i / factor (1 - w_i) + f_i w_i.
    """
    factor = float(scaling["factor"])
    context = float(scaling["original_max_position_embeddings"])
    dim = 2 * len(inv_freq)
    beta_fast = float(scaling.get("beta_fast") or 32)
    beta_slow = float(scaling.get("beta_slow") or 1)

    def place(rotations: float) -> float:
        return dim * math.log(context / (2 * math.pi * rotations)) / (2 * math.log(theta))

    low, high = place(beta_fast), place(beta_slow)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if high == low:
        high += 0.001
    out = []
    for i, f in enumerate(inv_freq):
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        kept = 1.0 - ramp
        out.append(f / factor * (1.0 - kept) + f * kept)
    return out


def rope_frequencies(
    head_dim: int, theta: float, max_positions: int, scaling: Mapping[str, Any] | None = None
) -> RopeTables:
    """Inverse frequencies f_i = theta^(-2i / head_dim), i < head_dim / 2, and cos/sin(p * f_i) for p < max_positions.

    ``scaling`` is a config.json ``rope_scaling``: None (or rope_type ``default``), or rope_type
    ``llama3`` with factor, low_freq_factor, high_freq_factor, original_max_position_embeddings, ``linear``
    with factor, ``dynamic`` with max_positions (the model's context), or ``yarn`` with factor,
    original_max_position_embeddings and optionally beta_fast, beta_slow, truncate, attention_factor (cos and sin
    scaled by it, ``yarn_attention_factor``). Any of them may carry a ``rotary_dim`` of head_dim - 1 (config.json's
    partial_rotary_factor; not with yarn, which config.json's reading refuses): f_i = theta^(-2i / rotary_dim).
    """
    if head_dim < 2 or head_dim % 2:
        raise ValueError(f"head_dim must be even and >= 2, got {head_dim}")
    # a partial rotary factor's rotary_dim (config.json's reading keeps only head_dim - 1): as many frequencies, each
    # theta^(-2i / rotary_dim)
    dim = int(scaling.get("rotary_dim", head_dim)) if scaling is not None else head_dim
    if dim not in (head_dim - 1, head_dim):
        raise ValueError(f"rotary_dim must be head_dim or head_dim - 1 ({head_dim}), got {dim}")
    inv_freq = [1.0 / theta ** (2 * i / dim) for i in range(head_dim // 2)]
    scale = 1.0
    if scaling is not None:
        kind = scaling.get("rope_type", scaling.get("type", "default"))
        if kind == "yarn":
            inv_freq, scale = yarn_inv_freq(inv_freq, theta, scaling), yarn_attention_factor(scaling)
        elif kind == "llama3":
            inv_freq = llama3_inv_freq(inv_freq, scaling)
        elif kind == "linear":  # positions interpolated: every frequency divided by the factor
            inv_freq = [f / float(scaling["factor"]) for f in inv_freq]
        elif kind == "dynamic":  # transformers' NTK rule leaves the frequencies alone up to the model's context
            if max_positions > int(scaling["max_positions"]):
                raise ValueError(f"dynamic scaling has no reference past the context ({scaling['max_positions']})")
        elif kind != "default":
            raise ValueError(
                f"rope_scaling type {kind!r} has no reference (supported: default, llama3, linear, dynamic, yarn)"
            )
    f = torch.tensor(inv_freq, dtype=F64)
    angles = torch.arange(max_positions, dtype=F64)[:, None] * f[None, :]
    return RopeTables(f, scale * torch.cos(angles), scale * torch.sin(angles))


def rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Rotate x [B, S, H, D] ("rotate half": x1 = x[..., :D/2], x2 = x[..., D/2:]) at positions [B, S].

    out = cat(x1 * c - x2 * s, x2 * c + x1 * s) with c = cos[positions], s = sin[positions] ([P, D/2]).
    """
    x64 = _f64(x)
    half = x64.shape[-1] // 2
    pos = positions.detach().to(cos.device, torch.int64)
    c = _f64(cos)[pos][:, :, None, :]  # [B, S, 1, D/2]
    s = _f64(sin)[pos][:, :, None, :]
    x1, x2 = x64[..., :half], x64[..., half:]
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)


# ------------------------------------------------------------------------------------------- silu_mul
def silu_mul(gu: torch.Tensor) -> torch.Tensor:
    """out[M, I] = g * sigmoid(g) * u with g = gu[:, :I], u = gu[:, I:]."""
    gu64 = _f64(gu)
    i = gu64.shape[-1] // 2
    g, u = gu64[:, :i], gu64[:, i:]
    return g * (1.0 / (1.0 + torch.exp(-g))) * u


# ---------------------------------------------------------------------------------------- greedy_pick
def greedy_pick(logits: torch.Tensor) -> torch.Tensor:
    """The greedy token of each row of logits [B, V] -> [B] (int64): the first index of the row's largest value,
    a NaN counting as larger than every number (the first NaN's index). NumPy's argmax, an implementation of
    that rule independent of PyTorch's and of the engine's."""
    import numpy

    return torch.from_numpy(numpy.argmax(_f64(logits).cpu().numpy(), axis=-1)).to(torch.int64)


# ------------------------------------------------------------------------------------------ attention
def _softmax_rows(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim; -inf entries get weight 0 (every row has a finite entry)."""
    shifted = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
    return shifted / shifted.sum(dim=-1, keepdim=True)


def attention_prefill(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """Causal GQA attention: q [B, S, Hq, D], k and v [B, S, Hkv, D] -> [B, S, Hq, D].

    Query head h reads kv head h // (Hq // Hkv); query i sees keys j <= i;
    out = softmax(scale * q . k) . v.
    """
    return attention_chunk(q, k, v, scale)


def attention_chunk(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """A prefill chunk: q [B, C, Hq, D] the queries of positions S - C .. S - 1, k and v [B, S, Hkv, D]
    -> [B, C, Hq, D]; query i sees keys j <= S - C + i (C = S: causal prefill); GQA as in prefill."""
    q64, k64, v64 = _f64(q), _f64(k), _f64(v)
    B, C, HQ, D = q64.shape
    S, HKV = k64.shape[1], k64.shape[2]
    if HQ % HKV:
        raise ValueError(f"q heads ({HQ}) must be a multiple of kv heads ({HKV})")
    if S < C:
        raise ValueError(f"{S} keys for {C} queries: the keys include the queries' own positions")
    group = HQ // HKV
    hidden = torch.ones(C, S, dtype=torch.bool, device=q64.device).triu(diagonal=S - C + 1)  # key j > S - C + i
    out = torch.empty(B, C, HQ, D, dtype=F64, device=q64.device)
    rows = max(1, (1 << 22) // S)  # query rows at a time: [rows, S] float64 scores of at most 32 MiB
    for b in range(B):
        for h in range(HQ):
            kv = h // group
            for r in range(0, C, rows):
                scores = scale * (q64[b, r : r + rows, h, :] @ k64[b, :, kv, :].T)  # [rows, S keys]
                scores = scores.masked_fill(hidden[r : r + rows], -math.inf)
                out[b, r : r + rows, h, :] = _softmax_rows(scores) @ v64[b, :, kv, :]
    return out


def attention_decode(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, lengths: torch.Tensor, scale: float
) -> torch.Tensor:
    """One new query per sequence: q [B, Hq, D] over caches [B, Smax, Hkv, D] -> [B, Hq, D].

    Sequence b attends cache positions 0 .. lengths[b] - 1 (lengths[b] >= 1); GQA as in prefill.
    """
    q64, k64, v64 = _f64(q), _f64(k_cache), _f64(v_cache)
    B, HQ, D = q64.shape
    S, HKV = k64.shape[1], k64.shape[2]
    if HQ % HKV:
        raise ValueError(f"q heads ({HQ}) must be a multiple of kv heads ({HKV})")
    group = HQ // HKV
    n = lengths.to(device=q64.device, dtype=torch.long)
    if bool(((n < 1) | (n > S)).any()):
        b = int(((n < 1) | (n > S)).nonzero()[0])
        raise ValueError(f"lengths[{b}] = {int(n[b])} is outside 1 .. {S} (the cache capacity)")
    # head h reads kv head h // group (heads kv*group .. kv*group + group - 1); positions >= lengths[b] masked
    filled = torch.arange(S, device=q64.device)[None, :] < n[:, None]  # [B, S]
    empty = ~filled[:, None, :, None]  # positions past the length are never read: whatever they hold
    k_h = k64.permute(0, 2, 1, 3).masked_fill(empty, 0.0)  # [B, HKV, S, D]
    v_h = v64.permute(0, 2, 1, 3).masked_fill(empty, 0.0)
    scores = scale * (q64.reshape(B, HKV, group, D) @ k_h.transpose(-1, -2))  # [B, HKV, group, S]
    scores = torch.where(filled[:, None, None, :], scores, torch.full_like(scores, -math.inf))
    out = (_softmax_rows(scores) @ v_h).reshape(B, HQ, D)
    return out
