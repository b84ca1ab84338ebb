"""attention: causal grouped-query attention, for prefill (flash style) and decode (flash-decoding).

Layouts: q [B, S, Hq, D]; k, v [B, S, Hkv, D] (prefill) or caches [B, Smax, Hkv, D] (decode); any
batch/seq/head strides, head dim contiguous. Query head h reads kv head h // G, G = Hq / Hkv.
Softmax in fp32 with exp2 (the scale is folded with log2(e)); P is rounded to v's dtype before P.V.

Keys (SPECS below):
``attention_prefill``  S = sequence length (powers of two), D = head dim, G = group size (exact).
                       The flash kernel below with C = S queries over their own S keys.
``attention_chunk``    C = queries of a prefill chunk, S = keys (the KV cache written by earlier chunks,
                       then the chunk's own), both powers of two; D, G (exact). The causal diagonal is
                       offset by S - C. One program per (batch x q head, BLOCK_M queries), the query
                       blocks with the most keys launched first; key blocks every query of a program
                       sees whole run unmasked, then those crossing its diagonal; blocks start at key 0.
``attention_decode``   B = batch, S = cache capacity Smax (powers of two), D, G (exact). The split
                       count depends on the capacity, never on the filled length, so one setting
                       serves every step of a captured CUDA graph. Each program takes one (batch,
                       kv head) with its G query heads and one of SPLITS chunks of the cache, and
                       visits only filled positions; a second kernel merges the chunks (SPLITS 1:
                       the one program of a kv head stores its output itself, a single launch).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from ..errors import InvalidInputError
from ._common import (
    check_contiguous_last,
    check_device,
    check_shape,
    dependent_launch,
    dot_precision,
    grid,
    same_dtype,
    split,
)
from .spec import Call, OpSpec

LOG2E = 1.4426950408889634
LONG_CACHE = 4096  # decode caches above this capacity get the long-cache candidate space


@triton.jit
def _flash_block(
    q, k_base, v_base, start_n, rows, offs_d, mask_d, S, stride_ks, stride_vs, m_i, l_i, acc,
    scale_log2, PRECISION: tl.constexpr, BLOCK_N: tl.constexpr, DIAGONAL: tl.constexpr, EVEN_D: tl.constexpr,
):
    """One key block of the online softmax for query positions ``rows``: (m, l, acc) updated. Off the
    diagonal every key of the block is visible to every row (no mask; with EVEN_D, the head dim filling
    its block, the loads take no mask at all)."""
    keys = start_n + tl.arange(0, BLOCK_N)
    k_ptrs = k_base + keys[None, :] * stride_ks + offs_d[:, None]  # [BLOCK_D, BLOCK_N]
    v_ptrs = v_base + keys[:, None] * stride_vs + offs_d[None, :]  # [BLOCK_N, BLOCK_D]
    if DIAGONAL:
        inside = keys < S
        kt = tl.load(k_ptrs, mask=mask_d[:, None] & inside[None, :], other=0.0)
        vb = tl.load(v_ptrs, mask=inside[:, None] & mask_d[None, :], other=0.0)
    elif EVEN_D:
        kt = tl.load(k_ptrs)
        vb = tl.load(v_ptrs)
    else:
        kt = tl.load(k_ptrs, mask=mask_d[:, None], other=0.0)
        vb = tl.load(v_ptrs, mask=mask_d[None, :], other=0.0)
    logits = tl.dot(q, kt, input_precision=PRECISION) * scale_log2
    if DIAGONAL:  # query position r sees keys up to r (and none past the S written)
        logits = tl.where((rows[:, None] >= keys[None, :]) & inside[None, :], logits, float("-inf"))
    # key 0 is visible to every row, and each row's first block holds it: the max is finite from then on
    m_next = tl.maximum(m_i, tl.max(logits, axis=1))
    rescale = tl.exp2(m_i - m_next)
    weights = tl.exp2(logits - m_next[:, None])
    l_next = l_i * rescale + tl.sum(weights, axis=1)
    acc = acc * rescale[:, None] + tl.dot(weights.to(vb.dtype), vb, input_precision=PRECISION)
    return m_next, l_next, acc


@triton.jit
def _attention_flash_kernel(
    # pointers
    q_ptr, k_ptr, v_ptr, o_ptr,
    # dimensions: C queries at positions S - C .. S - 1 over keys 0 .. S - 1 (a whole prefill: C = S)
    C, S, HQ, G, scale_log2,
    # strides (batch, seq, head; the head dimension is contiguous)
    stride_qb, stride_qs, stride_qh, stride_kb, stride_ks, stride_kh,
    stride_vb, stride_vs, stride_vh, stride_ob, stride_os, stride_oh,
    # meta-parameters
    D: tl.constexpr, BLOCK_D: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    PDL: tl.constexpr,
):
    dependent_launch(PDL)
    seq_head = tl.program_id(0).to(tl.int64)  # batch x q head: the fastest axis of the launch order
    # query blocks last to first: under the causal mask the last block has the most keys, so every head's
    # longest programs start in the first wave and the short ones fill in behind them
    block = tl.num_programs(1) - 1 - tl.program_id(1)
    b = seq_head // HQ
    h = seq_head % HQ
    kv = h // G  # the kv head its group of query heads reads
    past = S - C  # positions of the cache written by earlier chunks
    offs_c = block * BLOCK_M + tl.arange(0, BLOCK_M)  # queries of this program, within the chunk
    offs_d = tl.arange(0, BLOCK_D)
    mask_d = offs_d < D
    mask_c = offs_c < C
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + offs_c[:, None] * stride_qs + offs_d[None, :],
                mask=mask_c[:, None] & mask_d[None, :], other=0.0)
    k_base = k_ptr + b * stride_kb + kv * stride_kh
    v_base = v_ptr + b * stride_vb + kv * stride_vh
    rows = past + offs_c  # the queries' positions

    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    # key blocks from position 0 in BLOCK_N steps: first those the program's first query (and so every
    # query) sees whole, unmasked; then those crossing its diagonal, up to its last query's position
    whole = (past + block * BLOCK_M + 1) // BLOCK_N * BLOCK_N
    end = tl.minimum(past + (block + 1) * BLOCK_M, S)
    for start_n in range(0, whole, BLOCK_N):
        m_i, l_i, acc = _flash_block(q, k_base, v_base, start_n, rows, offs_d, mask_d, S, stride_ks, stride_vs,
                                     m_i, l_i, acc, scale_log2, PRECISION, BLOCK_N, False, D == BLOCK_D)
    for start_n in range(whole, end, BLOCK_N):
        m_i, l_i, acc = _flash_block(q, k_base, v_base, start_n, rows, offs_d, mask_d, S, stride_ks, stride_vs,
                                     m_i, l_i, acc, scale_log2, PRECISION, BLOCK_N, True, D == BLOCK_D)
    result = acc / l_i[:, None]
    tl.store(o_ptr + b * stride_ob + h * stride_oh + offs_c[:, None] * stride_os + offs_d[None, :],
             result.to(o_ptr.dtype.element_ty), mask=mask_c[:, None] & mask_d[None, :])


@triton.jit
def _attention_decode_split_kernel(
    # pointers
    q_ptr, k_ptr, v_ptr, len_ptr, part_ptr, ml_ptr,
    # dimensions
    HKV, G, chunk, scale_log2,
    # strides (q: batch, head; caches: batch, seq, head; the head dimension is contiguous)
    stride_qb, stride_qh, stride_kb, stride_ks, stride_kh, stride_vb, stride_vs, stride_vh,
    # meta-parameters
    D: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_G: tl.constexpr, PRECISION: tl.constexpr,
    SPLITS: tl.constexpr, BLOCK_N: tl.constexpr,
    PDL: tl.constexpr,
):
    dependent_launch(PDL)
    pid_bh = tl.program_id(0).to(tl.int64)  # batch x kv head
    split_id = tl.program_id(1)
    b = pid_bh // HKV
    kv_h = pid_bh % HKV
    length = tl.load(len_ptr + b).to(tl.int32)
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, BLOCK_D)
    mask_g = offs_g < G
    mask_d = offs_d < D
    heads = kv_h * G + offs_g
    q = tl.load(q_ptr + b * stride_qb + heads[:, None] * stride_qh + offs_d[None, :],
                mask=mask_g[:, None] & mask_d[None, :], other=0.0)  # [BLOCK_G, BLOCK_D]
    k_base = k_ptr + b * stride_kb + kv_h * stride_kh
    v_base = v_ptr + b * stride_vb + kv_h * stride_vh

    m_i = tl.full((BLOCK_G,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_G,), dtype=tl.float32)
    accumulator = tl.zeros((BLOCK_G, BLOCK_D), dtype=tl.float32)
    start = split_id * chunk
    end = tl.minimum(start + chunk, length)  # filled positions of this chunk only
    for start_n in range(start, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        mask_n = offs_n < end
        k = tl.load(k_base + offs_n[None, :] * stride_ks + offs_d[:, None], mask=mask_d[:, None] & mask_n[None, :],
                    other=0.0)
        qk = tl.dot(q, k, input_precision=PRECISION) * scale_log2
        qk = tl.where(mask_n[None, :], qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_base + offs_n[:, None] * stride_vs + offs_d[None, :], mask=mask_n[:, None] & mask_d[None, :],
                    other=0.0)
        accumulator = accumulator * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m_i = m_new
    row = (b * HKV * G + heads) * SPLITS + split_id
    if SPLITS == 1:  # the one chunk is the whole cache: part_ptr is the output [B, HQ, D] itself (contiguous),
        # the program stores its normalised result there and no merge is launched (length >= 1, so l > 0)
        out = accumulator / l_i[:, None]
        tl.store(part_ptr + row[:, None] * D + offs_d[None, :], out.to(part_ptr.dtype.element_ty),
                 mask=mask_g[:, None] & mask_d[None, :])
    else:  # partials: unnormalised accumulator [B, HQ, SPLITS, D]; m and l [2, B, HQ, SPLITS] (an empty
        # chunk leaves m = -inf, l = 0, accumulator = 0, which the merge weighs by exp2(-inf) = 0)
        tl.store(part_ptr + row[:, None] * D + offs_d[None, :], accumulator, mask=mask_g[:, None] & mask_d[None, :])
        tl.store(ml_ptr + row, m_i, mask=mask_g)
        tl.store(ml_ptr + tl.num_programs(0) * G * SPLITS + row, l_i, mask=mask_g)


@triton.jit
def _attention_decode_merge_kernel(
    part_ptr, ml_ptr, o_ptr, HQ, rows, stride_ob, stride_oh,
    D: tl.constexpr, BLOCK_D: tl.constexpr, SPLITS: tl.constexpr, BLOCK_S: tl.constexpr,
    PDL: tl.constexpr,
):
    dependent_launch(PDL)
    pid = tl.program_id(0).to(tl.int64)  # batch x q head
    b = pid // HQ
    h = pid % HQ
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    mask_s = offs_s < SPLITS
    mask_d = offs_d < D
    m = tl.load(ml_ptr + pid * SPLITS + offs_s, mask=mask_s, other=float("-inf"))
    l = tl.load(ml_ptr + rows + pid * SPLITS + offs_s, mask=mask_s, other=0.0)
    weight = tl.exp2(m - tl.max(m, axis=0))  # chunk c's share: 2^(m_c - max m)
    part = tl.load(part_ptr + (pid * SPLITS + offs_s[:, None]) * D + offs_d[None, :],
                   mask=mask_s[:, None] & mask_d[None, :], other=0.0)
    out = tl.sum(part * weight[:, None], axis=0) / tl.sum(l * weight, axis=0)
    tl.store(o_ptr + b * stride_ob + h * stride_oh + offs_d, out.to(o_ptr.dtype.element_ty), mask=mask_d)


def _block_d(d: int) -> int:
    """The head dim's block: a power of two, at least 16 (tl.dot's least K on a GPU; the lanes past D are masked)."""
    return max(16, triton.next_power_of_2(d))


def _group(op: str, hq: int, hkv: int) -> int:
    if hkv < 1 or hq % hkv:
        raise InvalidInputError(f"{op}: q heads ({hq}) must be a multiple of kv heads ({hkv})")
    return hq // hkv


def _check_prefill(q, k, v):
    check_shape("attention_prefill", "q", q, (None, None, None, None), "batch, seq, q heads, head dim")
    B, S, HQ, D = q.shape
    check_shape("attention_prefill", "k", k, (B, S, None, D), "batch, seq, kv heads, head dim of q")
    check_shape("attention_prefill", "v", v, tuple(k.shape), "same as k")
    return same_dtype("attention_prefill", "q", q, k=k, v=v), _group("attention_prefill", HQ, k.shape[2])


def prefill_key(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> Call:
    """(dtype, (S, D, G)) of a prefill call."""
    dtype, G = _check_prefill(q, k, v)
    return dtype, (q.shape[1], q.shape[3], G)


def attention_prefill(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, *,
                      config: Mapping[str, Any],
                      empty: Callable[..., torch.Tensor] = torch.empty, pdl: bool = False) -> torch.Tensor:
    """Causal GQA attention of q [B, S, Hq, D] over k, v [B, S, Hkv, D] -> [B, S, Hq, D], on the Triton
    kernel with the certified setting ``config``; ``empty`` allocates the output."""
    dtype, G = _check_prefill(q, k, v)
    S = q.shape[1]
    return _flash("attention_prefill", (S, S), q, k, v, scale, dtype, G, config, empty, pdl)


FLASH_PARAMS = ("BLOCK_M", "BLOCK_N")  # the meta-parameters of a prefill or chunk setting
DECODE_PARAMS = ("SPLITS", "BLOCK_N")  # of a decode setting


def _flash(op: str, lengths: tuple[int, int], q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
           scale: float, dtype: str, G: int, config: Mapping[str, Any], empty: Callable[..., torch.Tensor],
           pdl: bool) -> torch.Tensor:
    """Launch the flash-attention kernel over q [B, C, Hq, D]: one program per (batch x q head, BLOCK_M
    queries); ``lengths`` = (C, S), the queries and the keys (a prefill: S, S)."""
    check_device(op, q=q, k=k, v=v)
    check_contiguous_last(op, q=q, k=k, v=v)
    B, C, HQ, D = q.shape
    meta, launch = split(op, config, FLASH_PARAMS, pdl)
    o = empty((B, C, HQ, D), dtype=q.dtype, device=q.device)
    _attention_flash_kernel[(B * HQ, triton.cdiv(C, meta["BLOCK_M"]))](
        q, k, v, o, *lengths, HQ, G, float(scale) * LOG2E,
        *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3],
        D=D, BLOCK_D=_block_d(D), PRECISION=dot_precision(dtype), **meta, **launch,
    )
    return o


def attention_prefill_torch(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """The same op on PyTorch's kernels (SDPA)."""
    _check_prefill(q, k, v)
    out = F.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True, scale=scale, enable_gqa=True
    )
    return out.transpose(1, 2)


def _check_chunk(q, k, v):
    check_shape("attention_chunk", "q", q, (None, None, None, None), "batch, chunk, q heads, head dim")
    B, C, HQ, D = q.shape
    check_shape("attention_chunk", "k", k, (B, None, None, D), "batch, keys, kv heads, head dim of q")
    check_shape("attention_chunk", "v", v, tuple(k.shape), "same as k")
    if k.shape[1] < C:
        raise InvalidInputError(
            f"attention_chunk: k holds {k.shape[1]} positions, fewer than the chunk's {C} queries (the keys "
            "are the cache up to and including the chunk)"
        )
    return same_dtype("attention_chunk", "q", q, k=k, v=v), _group("attention_chunk", HQ, k.shape[2])


def chunk_key(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> Call:
    """(dtype, (C, S, D, G)) of a chunk call: C queries, S keys (the chunk's own included)."""
    dtype, G = _check_chunk(q, k, v)
    return dtype, (q.shape[1], k.shape[1], q.shape[3], G)


def attention_chunk(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, *,
                    config: Mapping[str, Any],
                    empty: Callable[..., torch.Tensor] = torch.empty, pdl: bool = False) -> torch.Tensor:
    """A prefill chunk: q [B, C, Hq, D], the queries of positions S - C .. S - 1, over k, v [B, S, Hkv, D],
    the KV cache up to and including the chunk (earlier chunks' positions first); query i sees keys
    0 .. S - C + i. -> [B, C, Hq, D], on the Triton kernel with the certified setting ``config``."""
    dtype, G = _check_chunk(q, k, v)
    return _flash("attention_chunk", (q.shape[1], k.shape[1]), q, k, v, scale, dtype, G, config, empty, pdl)


def attention_chunk_torch(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """The same op on PyTorch's kernels (SDPA with the chunk's causal mask)."""
    _check_chunk(q, k, v)
    C, S = q.shape[1], k.shape[1]
    visible = torch.ones((C, S), dtype=torch.bool, device=q.device).tril(diagonal=S - C)
    out = F.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=visible, scale=scale, enable_gqa=True
    )
    return out.transpose(1, 2)


def _check_decode(q, k_cache, v_cache, lengths):
    check_shape("attention_decode", "q", q, (None, None, None), "batch, q heads, head dim")
    B, HQ, D = q.shape
    check_shape("attention_decode", "k_cache", k_cache, (B, None, None, D), "batch, capacity, kv heads, head dim")
    check_shape("attention_decode", "v_cache", v_cache, tuple(k_cache.shape), "same as k_cache")
    check_shape("attention_decode", "lengths", lengths, (B,), "batch")
    if lengths.dtype not in (torch.int32, torch.int64):
        raise InvalidInputError(f"attention_decode: lengths must be int32 or int64, got {lengths.dtype}")
    G = _group("attention_decode", HQ, k_cache.shape[2])
    return same_dtype("attention_decode", "q", q, k_cache=k_cache, v_cache=v_cache), G


def decode_key(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, lengths: torch.Tensor,
               scale: float) -> Call:
    """(dtype, (B, S, D, G)) of a decode call; S is the cache capacity, not the filled length."""
    dtype, G = _check_decode(q, k_cache, v_cache, lengths)
    return dtype, (q.shape[0], k_cache.shape[1], q.shape[2], G)


def attention_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, lengths: torch.Tensor,
                     scale: float, *, config: Mapping[str, Any],
                     empty: Callable[..., torch.Tensor] = torch.empty, pdl: bool = False) -> torch.Tensor:
    """One query per sequence, q [B, Hq, D], over the first lengths[b] (>= 1) cache positions -> [B, Hq, D],
    on the Triton kernels with the certified setting ``config``; ``empty`` allocates output and scratch."""
    dtype, G = _check_decode(q, k_cache, v_cache, lengths)
    check_device("attention_decode", q=q, k_cache=k_cache, v_cache=v_cache, lengths=lengths)
    check_contiguous_last("attention_decode", q=q, k_cache=k_cache, v_cache=v_cache)
    B, HQ, D = q.shape
    capacity, HKV = k_cache.shape[1], k_cache.shape[2]
    meta, launch = split("attention_decode", config, DECODE_PARAMS, pdl)
    splits, block_n = meta["SPLITS"], meta["BLOCK_N"]
    chunk = triton.cdiv(triton.cdiv(capacity, splits), block_n) * block_n
    o = empty((B, HQ, D), dtype=q.dtype, device=q.device)
    if splits == 1:  # one launch: the split kernel stores the output (through its partials' pointer)
        part = ml = o
    else:
        part = empty((B, HQ, splits, D), dtype=torch.float32, device=q.device)
        ml = empty((2, B, HQ, splits), dtype=torch.float32, device=q.device)
    block_d = _block_d(D)
    _attention_decode_split_kernel[(B * HKV, splits)](
        q, k_cache, v_cache, lengths, part, ml, HKV, G, chunk, float(scale) * LOG2E,
        *q.stride()[:2], *k_cache.stride()[:3], *v_cache.stride()[:3],
        D=D, BLOCK_D=block_d, BLOCK_G=max(16, triton.next_power_of_2(G)), PRECISION=dot_precision(dtype),
        **meta, **launch,
    )
    if splits > 1:
        _attention_decode_merge_kernel[(B * HQ,)](
            part, ml, o, HQ, B * HQ * splits, *o.stride()[:2],
            D=D, BLOCK_D=block_d, SPLITS=splits, BLOCK_S=triton.next_power_of_2(splits),
            **launch,
        )
    return o


def attention_decode_torch(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, lengths: torch.Tensor,
                           scale: float) -> torch.Tensor:
    """The same op on PyTorch's kernels (SDPA with a mask over the whole cache: positions past a length
    must hold finite values, as the engine's zero-initialised cache does). On the CPU the keys are cut to the longest
    filled length first: PyTorch's CPU SDPA blocks the keys by their count, so the masked tail changed a bf16 or fp16
    output's rounding (text round 42); at batch 1 it is then the call transformers' SDPA makes over its cache. A GPU
    keeps the whole cache: a decode step is captured as a CUDA graph, whose shapes cannot follow a host-read length."""
    _check_decode(q, k_cache, v_cache, lengths)
    if q.device.type == "cpu" and k_cache.device.type == "cpu":
        filled = int(lengths.max())
        k_cache, v_cache = k_cache[:, :filled], v_cache[:, :filled]
    capacity = k_cache.shape[1]
    mask = torch.arange(capacity, device=q.device)[None, :] < lengths[:, None]  # [B, capacity]
    out = F.scaled_dot_product_attention(
        q[:, :, None, :], k_cache.transpose(1, 2), v_cache.transpose(1, 2),
        attn_mask=mask[:, None, None, :], scale=scale, enable_gqa=True,
    )
    return out[:, :, 0, :]


def _prefill_outputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    return q.new_empty(q.shape)


def _chunk_outputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    return q.new_empty(q.shape)


def _decode_outputs(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, lengths: torch.Tensor,
                    scale: float) -> torch.Tensor:
    return q.new_empty(q.shape)


def _prefill_candidates(domain: Mapping[str, tuple[int, int | None]], interpreter: bool) -> list[dict[str, Any]]:
    if interpreter:
        return [{"BLOCK_M": m, "BLOCK_N": n, "num_warps": 4, "num_stages": 2}
                for m in (16, 32, 64) for n in (16, 32, 64)]
    return list(grid(BLOCK_M=[64, 128], BLOCK_N=[32, 64, 128], num_warps=[4, 8], num_stages=[2, 3]))


def _prefill_shared_memory(config: Mapping[str, Any], dims: Mapping[str, int], itemsize: int) -> int:
    """The q tile, and pipelined k and v tiles (head dim rounded up to a power of two)."""
    d = _block_d(dims["D"])
    return (config["BLOCK_M"] * d + 2 * config["BLOCK_N"] * d * config.get("num_stages", 1)) * itemsize


def _chunk_candidates(domain: Mapping[str, tuple[int, int | None]], interpreter: bool) -> list[dict[str, Any]]:
    if interpreter:  # the interpreter pays per program and per key block: large tiles for long prompts
        return [{"BLOCK_M": m, "BLOCK_N": n, "num_warps": 4, "num_stages": 2} for m in (32, 64, 128) for n in (64, 256)]
    return list(grid(BLOCK_M=[64, 128], BLOCK_N=[64, 128], num_warps=[4, 8], num_stages=[2, 3]))


def _decode_candidates(domain: Mapping[str, tuple[int, int | None]], interpreter: bool) -> list[dict[str, Any]]:
    if interpreter:
        return [{"SPLITS": s, "BLOCK_N": n, "num_warps": 4, "num_stages": 2} for s in (1, 2, 4) for n in (32, 64)]
    if domain["S"][0] > LONG_CACHE:  # long caches: more splits fill the multiprocessors at batch 1
        return list(grid(SPLITS=[16, 32, 64, 128], BLOCK_N=[64, 128], num_warps=[4], num_stages=[2, 3]))
    # one split is one launch (no merge): at batch >= 4 and short fills it wins with wide, deep key blocks
    return [
        *grid(SPLITS=[1, 4, 8, 16, 32], BLOCK_N=[32, 64, 128], num_warps=[4], num_stages=[2]),
        *grid(SPLITS=[1], BLOCK_N=[64, 128], num_warps=[4], num_stages=[3]),
    ]


SPECS = (
    OpSpec("attention_prefill", "causal GQA flash attention; S = sequence length, D = head dim, "
           "G = q heads per kv head",
           key=("S", "D", "G"), buckets=("pow2>=16", "exact", "exact"), key_of=prefill_key,
           launch=attention_prefill, torch=attention_prefill_torch, outputs=_prefill_outputs,
           candidates=_prefill_candidates, params={None: (FLASH_PARAMS, ())},
           shared_memory=_prefill_shared_memory),
    OpSpec("attention_chunk", "a prefill chunk over the KV cache written so far (chunked prefill); C = queries "
           "of the chunk, S = keys (earlier chunks' and its own), D = head dim, G = q heads per kv head",
           key=("C", "S", "D", "G"), buckets=("pow2>=16", "pow2>=256", "exact", "exact"), key_of=chunk_key,
           launch=attention_chunk, torch=attention_chunk_torch, outputs=_chunk_outputs,
           candidates=_chunk_candidates, shared_memory=_prefill_shared_memory, params={None: (FLASH_PARAMS, ())}),
    OpSpec("attention_decode", "one query per sequence over the KV cache, split over the sequence; "
           "B = batch, S = cache capacity (not the filled length, so one setting serves a whole CUDA graph)",
           key=("B", "S", "D", "G"), buckets=("pow2", "pow2>=256", "exact", "exact"), key_of=decode_key,
           launch=attention_decode, torch=attention_decode_torch, outputs=_decode_outputs,
           candidates=_decode_candidates, params={None: (DECODE_PARAMS, ())}),
)
