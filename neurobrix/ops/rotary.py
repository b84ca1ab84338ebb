"""rotary: rotary position embedding of q and k (non-interleaved "rotate half" convention).

For a head vector x of size D with halves x1 = x[:D/2], x2 = x[D/2:] at position p:
    out = [x1 * cos(p f) - x2 * sin(p f),  x2 * cos(p f) + x1 * sin(p f)]
with inverse frequencies f from ``rope_cache`` (Llama-3 frequency scaling included).
Key (SPECS below): T = tokens (batch x seq, powers of two), H = q heads + kv heads, D = head dim
(exact). One program rotates BLOCK_H heads of one token; q and k in one launch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import torch
import triton
import triton.language as tl

from ..errors import InvalidInputError
from ._common import check_contiguous_last, check_device, check_shape, dependent_launch, grid, same_dtype, split
from .spec import Call, OpSpec


def rope_cache(
    head_dim: int, theta: float, max_positions: int, scaling: Mapping[str, Any] | None = None,
    device: torch.device | str = "cpu",
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin tables [max_positions, head_dim / 2] in fp32, computed as transformers' rotary embedding computes
    them: the inverse frequencies in float32 (1 / theta^(2i / dim), then the scaling rule's float32 operations), each
    angle the float32 product of the position and its frequency, and its cos and sin in float32, on ``device`` (a
    float64 derivation rounded once is other numbers: 20 ulps apart at position 64, 3e-4 at 16,384, where
    transformers' own float32 angle is that far from the exact one).

    ``scaling`` is a config.json ``rope_scaling``: None, or ``rope_type: llama3`` with factor,
    low_freq_factor, high_freq_factor, original_max_position_embeddings (the Llama-3.1 rule:
    long wavelengths slowed by ``factor``, short ones kept, a smooth blend in between), ``linear`` (every
    frequency divided by ``factor``) or ``dynamic`` (transformers' NTK rule, the default frequencies up to
    ``max_positions``, the model's context, where its base is theta times 1 to the power dim / (dim - 2), as
    transformers computes it; a longer table is refused) or ``yarn`` (transformers' YaRN rule: each frequency blended
    between itself and itself / ``factor`` by a linear ramp over the dims between the correction dims of
    ``beta_fast`` (default 32) and ``beta_slow`` (default 1) rotations in ``original_max_position_embeddings``
    positions, floored and ceiled unless ``truncate`` is false; cos and sin then multiplied by ``attention_factor``,
    by default 0.1 ln(factor) + 1 above a factor of 1, else 1: config.json's reading resolves mscale and
    mscale_all_dim into it). Its ``rotary_dim`` (one less than ``head_dim``, from a partial_rotary_factor) is the
    dims the frequencies are computed over: 1 / theta^(2i / dim).
    """
    dim = int((scaling or {}).get("rotary_dim", head_dim))  # transformers' int(head_dim x partial_rotary_factor)
    base = theta
    kind = None if scaling is None else scaling.get("rope_type", scaling.get("type"))
    if kind == "dynamic":  # the NTK rule at the model's context: (factor x max / max - (factor - 1))^(dim / (dim - 2))
        if max_positions > int(scaling["max_positions"]):
            raise InvalidInputError(
                f"dynamic rope scaling past max_position_embeddings ({scaling['max_positions']}) is not supported: "
                f"a table of {max_positions} positions was asked for"
            )
        factor, context = scaling["factor"], scaling["max_positions"]
        if dim > 2:  # (at 2 dims transformers' rule divides by zero: config.json's reading refuses it)
            base = theta * ((factor * context / context) - (factor - 1)) ** (dim / (dim - 2))
    pos_freqs = base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim)
    inv_freq = 1.0 / pos_freqs
    attention_factor = 1.0
    if kind in (None, "default", "dynamic"):
        pass
    elif kind == "yarn":
        inv_freq, attention_factor = _yarn(scaling, pos_freqs, dim, base)
    elif kind == "llama3":
        factor = scaling["factor"]
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old_context = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > old_context / low, inv_freq / factor, inv_freq)
        smooth = (old_context / wavelen - low) / (high - low)
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old_context / high) * ~(wavelen > old_context / low)
        inv_freq = torch.where(medium, blended, scaled)
    elif kind == "linear":
        inv_freq /= scaling["factor"]
    else:
        raise InvalidInputError(
            f"rope_scaling type {kind!r} is not supported (supported: llama3, linear, dynamic, yarn)"
        )
    # the angles and their cos and sin where transformers computes them: on the model's device (made on the CPU for
    # the meta device, where an arange imports sympy through PyTorch's reference implementations)
    where = torch.device(device)
    where = where if where.type == "cuda" else torch.device("cpu")
    angles = torch.arange(max_positions, device=where)[:, None].float() * inv_freq.to(where)[None, :]
    if attention_factor != 1.0:  # transformers' yarn scale: cos and sin times it, in float32
        return (angles.cos() * attention_factor).to(device), (angles.sin() * attention_factor).to(device)
    return angles.cos().to(device), angles.sin().to(device)


def _yarn(
    scaling: Mapping[str, Any], pos_freqs: torch.Tensor, dim: int, base: float
) -> tuple[torch.Tensor, float]:
    """(inverse frequencies, attention factor) of transformers' ``_compute_yarn_parameters``, its float32 operations
    in its order: theta^(2i / dim) each divided into 1 (kept) and into factor x itself (slowed), blended by a ramp
    from 0 at the correction dim of beta_fast rotations to 1 at beta_slow's (the kept frequency's weight 1 minus it)."""
    factor = scaling["factor"]
    attention_factor = scaling.get("attention_factor")
    if attention_factor is None:
        attention_factor = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0
    beta_fast, beta_slow = scaling.get("beta_fast") or 32, scaling.get("beta_slow") or 1
    context = scaling["original_max_position_embeddings"]

    def correction_dim(rotations: float) -> float:  # the dim whose wavelength fits ``rotations`` times in the context
        return (dim * math.log(context / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # transformers' guard against a ramp of zero width
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    kept = 1 - ramp
    slowed = 1.0 / (factor * pos_freqs)
    return slowed * (1 - kept) + (1.0 / pos_freqs) * kept, float(attention_factor)


@triton.jit
def _rotate_heads(
    src_ptr, dst_ptr, b, s, row, head0, H, stride_sb, stride_ss, stride_sh, stride_db, stride_ds, stride_dh,
    c, sn, HALF: tl.constexpr, BLOCK_HALF: tl.constexpr, BLOCK_H: tl.constexpr,
):
    """Rotate heads head0.. of token (b, s) of src into row ``row`` of sequence b of dst."""
    offs_h = head0 + tl.arange(0, BLOCK_H)
    offs_d = tl.arange(0, BLOCK_HALF)
    mask = (offs_h[:, None] < H) & (offs_d[None, :] < HALF)
    src = src_ptr + b * stride_sb + s * stride_ss + offs_h[:, None] * stride_sh + offs_d[None, :]
    x1 = tl.load(src, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(src + HALF, mask=mask, other=0.0).to(tl.float32)
    dst = dst_ptr + b * stride_db + row * stride_ds + offs_h[:, None] * stride_dh + offs_d[None, :]
    tl.store(dst, (x1 * c[None, :] - x2 * sn[None, :]).to(dst_ptr.dtype.element_ty), mask=mask)
    tl.store(dst + HALF, (x2 * c[None, :] + x1 * sn[None, :]).to(dst_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rotary_kernel(
    # pointers
    q_ptr, k_ptr, qo_ptr, ko_ptr, v_ptr, vc_ptr, cos_ptr, sin_ptr, pos_ptr,
    # dimensions
    S, HQ, HKV,
    # strides (batch, seq, head; the head dimension is contiguous)
    stride_qb, stride_qs, stride_qh, stride_kb, stride_ks, stride_kh,
    stride_qob, stride_qos, stride_qoh, stride_kob, stride_kos, stride_koh,
    stride_vb, stride_vs, stride_vh, stride_vcb, stride_vcs, stride_vch,
    stride_pb, stride_ps, stride_cos,
    # meta-parameters
    CACHE: tl.constexpr, HALF: tl.constexpr, BLOCK_HALF: tl.constexpr, BLOCK_H: tl.constexpr,
    PDL: tl.constexpr,
):
    dependent_launch(PDL)
    token = tl.program_id(0).to(tl.int64)
    pid_h = tl.program_id(1)
    b = token // S
    s = token % S
    pos = tl.load(pos_ptr + b * stride_pb + s * stride_ps).to(tl.int64)
    offs_d = tl.arange(0, BLOCK_HALF)
    c = tl.load(cos_ptr + pos * stride_cos + offs_d, mask=offs_d < HALF, other=0.0)
    sn = tl.load(sin_ptr + pos * stride_cos + offs_d, mask=offs_d < HALF, other=0.0)
    q_blocks = tl.cdiv(HQ, BLOCK_H)
    if pid_h < q_blocks:
        _rotate_heads(q_ptr, qo_ptr, b, s, s, pid_h * BLOCK_H, HQ, stride_qb, stride_qs, stride_qh,
                      stride_qob, stride_qos, stride_qoh, c, sn, HALF, BLOCK_HALF, BLOCK_H)
    else:
        head0 = (pid_h - q_blocks) * BLOCK_H
        # with a KV cache, k lands at the token's position in it and v is copied beside it
        row = pos if CACHE else s
        _rotate_heads(k_ptr, ko_ptr, b, s, row, head0, HKV, stride_kb, stride_ks, stride_kh,
                      stride_kob, stride_kos, stride_koh, c, sn, HALF, BLOCK_HALF, BLOCK_H)
        if CACHE:
            offs_h = head0 + tl.arange(0, BLOCK_H)
            offs_e = tl.arange(0, 2 * BLOCK_HALF)
            mask = (offs_h[:, None] < HKV) & (offs_e[None, :] < 2 * HALF)
            v = tl.load(v_ptr + b * stride_vb + s * stride_vs + offs_h[:, None] * stride_vh + offs_e[None, :],
                        mask=mask)
            tl.store(vc_ptr + b * stride_vcb + pos * stride_vcs + offs_h[:, None] * stride_vch + offs_e[None, :],
                     v, mask=mask)


def _check(q, k, cos, sin, positions):
    check_shape("rotary", "q", q, (None, None, None, None), "batch, seq, q heads, head dim")
    B, S, _, D = q.shape
    check_shape("rotary", "k", k, (B, S, None, D), "batch, seq, kv heads, head dim of q")
    if D % 2:
        raise InvalidInputError(f"rotary: head dim must be even, got {D}")
    check_shape("rotary", "cos", cos, (None, D // 2), "positions, head dim / 2")
    check_shape("rotary", "sin", sin, tuple(cos.shape), "same as cos")
    check_shape("rotary", "positions", positions, (B, S), "batch, seq")
    if cos.dtype != torch.float32 or sin.dtype != torch.float32:
        raise InvalidInputError(f"rotary: cos and sin must be float32 (from rope_cache), got {cos.dtype}, {sin.dtype}")
    if cos.stride() != sin.stride():
        raise InvalidInputError(f"rotary: cos and sin must have the same strides, got {cos.stride()}, {sin.stride()}")
    if positions.dtype not in (torch.int32, torch.int64):
        raise InvalidInputError(f"rotary: positions must be int32 or int64, got {positions.dtype}")
    return same_dtype("rotary", "q", q, k=k)


def _check_cache(k, v, k_cache, v_cache) -> None:
    if v is None or k_cache is None or v_cache is None:
        raise InvalidInputError("rotary: a KV cache takes v, k_cache and v_cache together")
    B, S, HKV, D = k.shape
    check_shape("rotary", "v", v, tuple(k.shape), "same as k")
    check_shape("rotary", "k_cache", k_cache, (B, None, HKV, D), "batch, capacity, kv heads, head dim of k")
    check_shape("rotary", "v_cache", v_cache, tuple(k_cache.shape), "same as k_cache")
    same_dtype("rotary", "k", k, v=v, k_cache=k_cache, v_cache=v_cache)


PARAMS = ("BLOCK_H",)  # the meta-parameters of a setting


def key_of(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor,
           inplace: bool = False, v: torch.Tensor | None = None, k_cache: torch.Tensor | None = None,
           v_cache: torch.Tensor | None = None) -> Call:
    """(dtype, (T, H, D)) of a call: T = batch x seq tokens, H = q heads + kv heads."""
    dtype = _check(q, k, cos, sin, positions)
    B, S, HQ, D = q.shape
    return dtype, (B * S, HQ + k.shape[2], D)


def rotary(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor,
           inplace: bool = False, v: torch.Tensor | None = None, k_cache: torch.Tensor | None = None,
           v_cache: torch.Tensor | None = None, *, config: Mapping[str, Any],
           empty: Callable[..., torch.Tensor] = torch.empty, pdl: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotate q [B, S, Hq, D] and k [B, S, Hkv, D] at ``positions`` [B, S]; in place or into new tensors.

    With a KV cache (k_cache, v_cache [B, capacity, Hkv, D] and v [B, S, Hkv, D]): the rotated k of
    token (b, s) is written to k_cache[b, positions[b, s]] and v beside it in v_cache, the cache append
    fused into this launch; returns (q rotated, k_cache). Positions must then be distinct per sequence
    and below the cache capacity: they live on the device and are not checked here (a check would
    synchronise with it; the engine checks lengths against the capacity before generating).
    """
    _check(q, k, cos, sin, positions)
    cached = k_cache is not None or v_cache is not None or v is not None
    if cached:
        _check_cache(k, v, k_cache, v_cache)
        check_device("rotary", q=q, k=k, cos=cos, sin=sin, positions=positions, v=v, k_cache=k_cache,
                     v_cache=v_cache)
        check_contiguous_last("rotary", q=q, k=k, cos=cos, sin=sin, v=v, k_cache=k_cache, v_cache=v_cache)
    else:
        check_device("rotary", q=q, k=k, cos=cos, sin=sin, positions=positions)
        check_contiguous_last("rotary", q=q, k=k, cos=cos, sin=sin)
    B, S, HQ, D = q.shape
    HKV = k.shape[2]
    meta, launch = split("rotary", config, PARAMS, pdl)
    q_out = q if inplace else empty(tuple(q.shape), dtype=q.dtype, device=q.device)
    k_out = k_cache if cached else (k if inplace else empty(tuple(k.shape), dtype=k.dtype, device=k.device))
    v_in, v_out = (v, v_cache) if cached else (k, k_out)  # never read without a cache
    block_h = meta["BLOCK_H"]
    programs = (B * S, triton.cdiv(HQ, block_h) + triton.cdiv(HKV, block_h))
    _rotary_kernel[programs](
        q, k, q_out, k_out, v_in, v_out, cos, sin, positions, S, HQ, HKV,
        *q.stride()[:3], *k.stride()[:3], *q_out.stride()[:3], *k_out.stride()[:3],
        *v_in.stride()[:3], *v_out.stride()[:3],
        *positions.stride(), cos.stride(0),
        CACHE=cached, HALF=D // 2, BLOCK_HALF=triton.next_power_of_2(D // 2), **meta, **launch,
    )
    return q_out, k_out


def rotary_torch(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor,
                 inplace: bool = False, v: torch.Tensor | None = None, k_cache: torch.Tensor | None = None,
                 v_cache: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The same op on PyTorch's kernels (the cache append as an index_put), rounded as transformers' rotary rounds
    it: the float32 tables rounded to q's dtype, each product and the sum rounded in that dtype (x cos + rotate_half(x)
    sin; one rounding of a float32 rotation is a bf16 or fp16 logit an ulp apart, text round 42)."""
    _check(q, k, cos, sin, positions)
    c, s = cos[positions][:, :, None, :].to(q.dtype), sin[positions][:, :, None, :].to(q.dtype)  # [B, S, 1, D/2]

    def rotate(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)

    q_rot, k_rot = rotate(q), rotate(k)
    if k_cache is not None or v_cache is not None or v is not None:
        _check_cache(k, v, k_cache, v_cache)
        rows = torch.arange(q.shape[0], device=q.device)[:, None]
        k_cache[rows, positions] = k_rot
        v_cache[rows, positions] = v
        k_rot = k_cache
    if inplace:
        q.copy_(q_rot)
        if k_rot is not k_cache:
            k.copy_(k_rot)
            k_rot = k
        return q, k_rot
    return q_rot, k_rot


def outputs(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor,
            inplace: bool = False, v: torch.Tensor | None = None, k_cache: torch.Tensor | None = None,
            v_cache: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    q_out = q if inplace else q.new_empty(q.shape)
    k_out = k_cache if k_cache is not None else (k if inplace else k.new_empty(k.shape))
    return q_out, k_out


def candidates(domain: Mapping[str, tuple[int, int | None]], interpreter: bool) -> list[dict[str, Any]]:
    if interpreter:
        return [{"BLOCK_H": h, "num_warps": 4} for h in (4, 16, 64)]
    return list(grid(BLOCK_H=[2, 4, 8], num_warps=[1, 4]))


SPECS = (
    OpSpec("rotary", "rotary embedding of q and k, appending k and v to the KV cache in the same launch; "
           "T = tokens (batch x seq), H = q heads + kv heads, D = head dim",
           key=("T", "H", "D"), buckets=("pow2", "exact", "exact"), key_of=key_of, launch=rotary,
           torch=rotary_torch, outputs=outputs, candidates=candidates, params={None: (PARAMS, ())}),
)
