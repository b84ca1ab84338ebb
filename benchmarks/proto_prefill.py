"""Prototype (device exploration, 2026-12-01): causal prefill attention variants against SDPA at the timing
shapes certify uses for attention_prefill's long entries. Prints one line per (entry, variant, config).

    PYTHONPATH=. python -m benchmarks.proto_prefill [--S 512 1024 2048]
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json

import torch
import triton
import triton.language as tl

from benchmarks.kernels import bench
from conformance.certify import Task, timing_sets
from neurobrix import ops, tables
from neurobrix.gpu import detect_class
from neurobrix.ops._common import dependent_launch

LOG2E = 1.4426950408889634


@triton.jit
def _blk(
    q,
    k_base,
    v_base,
    start_n,
    rows,
    offs_d,
    mask_d,
    S,
    stride_ks,
    stride_vs,
    m_i,
    l_i,
    acc,
    scale_log2,
    BLOCK_N: tl.constexpr,
    DIAGONAL: tl.constexpr,
    EVEN_D: tl.constexpr,
):
    keys = start_n + tl.arange(0, BLOCK_N)
    k_ptrs = k_base + keys[None, :] * stride_ks + offs_d[:, None]
    v_ptrs = v_base + keys[:, None] * stride_vs + offs_d[None, :]
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
    logits = tl.dot(q, kt) * scale_log2
    if DIAGONAL:
        logits = tl.where((rows[:, None] >= keys[None, :]) & inside[None, :], logits, float("-inf"))
    m_next = tl.maximum(m_i, tl.max(logits, axis=1))
    rescale = tl.exp2(m_i - m_next)
    weights = tl.exp2(logits - m_next[:, None])
    l_next = l_i * rescale + tl.sum(weights, axis=1)
    acc = acc * rescale[:, None] + tl.dot(weights.to(vb.dtype), vb)
    return m_next, l_next, acc


@triton.jit
def _flash(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    C,
    S,
    HQ,
    G,
    scale_log2,
    stride_qb,
    stride_qs,
    stride_qh,
    stride_kb,
    stride_ks,
    stride_kh,
    stride_vb,
    stride_vs,
    stride_vh,
    stride_ob,
    stride_os,
    stride_oh,
    D: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HEADS_FIRST: tl.constexpr,
    PDL: tl.constexpr,
):
    dependent_launch(PDL)
    if HEADS_FIRST:  # axis 0 = heads, axis 1 = query blocks, the last (longest) first
        seq_head = tl.program_id(0).to(tl.int64)
        block = tl.num_programs(1) - 1 - tl.program_id(1)
    else:
        block = tl.num_programs(0) - 1 - tl.program_id(0)
        seq_head = tl.program_id(1).to(tl.int64)
    b = seq_head // HQ
    h = seq_head % HQ
    kv = h // G
    past = S - C
    offs_c = block * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    mask_d = offs_d < D
    mask_c = offs_c < C
    q = tl.load(
        q_ptr + b * stride_qb + h * stride_qh + offs_c[:, None] * stride_qs + offs_d[None, :],
        mask=mask_c[:, None] & mask_d[None, :],
        other=0.0,
    )
    k_base = k_ptr + b * stride_kb + kv * stride_kh
    v_base = v_ptr + b * stride_vb + kv * stride_vh
    rows = past + offs_c
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    whole = (past + block * BLOCK_M + 1) // BLOCK_N * BLOCK_N
    end = tl.minimum(past + (block + 1) * BLOCK_M, S)
    for start_n in range(0, whole, BLOCK_N):
        m_i, l_i, acc = _blk(
            q,
            k_base,
            v_base,
            start_n,
            rows,
            offs_d,
            mask_d,
            S,
            stride_ks,
            stride_vs,
            m_i,
            l_i,
            acc,
            scale_log2,
            BLOCK_N,
            False,
            D == BLOCK_D,
        )
    for start_n in range(whole, end, BLOCK_N):
        m_i, l_i, acc = _blk(
            q,
            k_base,
            v_base,
            start_n,
            rows,
            offs_d,
            mask_d,
            S,
            stride_ks,
            stride_vs,
            m_i,
            l_i,
            acc,
            scale_log2,
            BLOCK_N,
            True,
            D == BLOCK_D,
        )
    result = acc / l_i[:, None]
    tl.store(
        o_ptr + b * stride_ob + h * stride_oh + offs_c[:, None] * stride_os + offs_d[None, :],
        result.to(o_ptr.dtype.element_ty),
        mask=mask_c[:, None] & mask_d[None, :],
    )


@triton.jit
def _flash_tma(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    C,
    S,
    HQ,
    G,
    scale_log2,
    stride_qb,
    stride_qs,
    stride_qh,
    stride_kb,
    stride_ks,
    stride_kh,
    stride_vb,
    stride_vs,
    stride_vh,
    stride_ob,
    stride_os,
    stride_oh,
    D: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HEADS_FIRST: tl.constexpr,
    PDL: tl.constexpr,
):
    dependent_launch(PDL)
    seq_head = tl.program_id(0).to(tl.int64)
    block = tl.num_programs(1) - 1 - tl.program_id(1)
    b = seq_head // HQ
    h = seq_head % HQ
    kv = h // G
    past = S - C
    offs_c = block * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    mask_c = offs_c < C
    q = tl.load(
        q_ptr + b * stride_qb + h * stride_qh + offs_c[:, None] * stride_qs + offs_d[None, :],
        mask=mask_c[:, None],
        other=0.0,
    )
    k_desc = tl.make_tensor_descriptor(
        k_ptr + b * stride_kb + kv * stride_kh, shape=[S, D], strides=[stride_ks, 1], block_shape=[BLOCK_N, BLOCK_D]
    )
    v_desc = tl.make_tensor_descriptor(
        v_ptr + b * stride_vb + kv * stride_vh, shape=[S, D], strides=[stride_vs, 1], block_shape=[BLOCK_N, BLOCK_D]
    )
    rows = past + offs_c
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    whole = (past + block * BLOCK_M + 1) // BLOCK_N * BLOCK_N
    end = tl.minimum(past + (block + 1) * BLOCK_M, S)
    for start_n in range(0, whole, BLOCK_N):
        kb = k_desc.load([start_n, 0])
        vb = v_desc.load([start_n, 0])
        logits = tl.dot(q, kb.T) * scale_log2
        m_next = tl.maximum(m_i, tl.max(logits, axis=1))
        rescale = tl.exp2(m_i - m_next)
        weights = tl.exp2(logits - m_next[:, None])
        l_i = l_i * rescale + tl.sum(weights, axis=1)
        acc = acc * rescale[:, None] + tl.dot(weights.to(vb.dtype), vb)
        m_i = m_next
    for start_n in range(whole, end, BLOCK_N):
        keys = start_n + tl.arange(0, BLOCK_N)
        kb = k_desc.load([start_n, 0])
        vb = v_desc.load([start_n, 0])
        logits = tl.dot(q, kb.T) * scale_log2
        logits = tl.where((rows[:, None] >= keys[None, :]) & (keys < S)[None, :], logits, float("-inf"))
        m_next = tl.maximum(m_i, tl.max(logits, axis=1))
        rescale = tl.exp2(m_i - m_next)
        weights = tl.exp2(logits - m_next[:, None])
        l_i = l_i * rescale + tl.sum(weights, axis=1)
        acc = acc * rescale[:, None] + tl.dot(weights.to(vb.dtype), vb)
        m_i = m_next
    result = acc / l_i[:, None]
    tl.store(
        o_ptr + b * stride_ob + h * stride_oh + offs_c[:, None] * stride_os + offs_d[None, :],
        result.to(o_ptr.dtype.element_ty),
        mask=mask_c[:, None],
    )


def launch(kernel, config, heads_first, q, k, v, scale):
    B, C, HQ, D = q.shape
    G = HQ // k.shape[2]
    o = torch.empty_like(q)
    meta = {x: config[x] for x in ("BLOCK_M", "BLOCK_N")}
    blocks = triton.cdiv(C, meta["BLOCK_M"])
    grid = (B * HQ, blocks) if heads_first else (blocks, B * HQ)
    kernel[grid](
        q,
        k,
        v,
        o,
        C,
        k.shape[1],
        HQ,
        G,
        float(scale) * LOG2E,
        *q.stride()[:3],
        *k.stride()[:3],
        *v.stride()[:3],
        *o.stride()[:3],
        D=D,
        BLOCK_D=triton.next_power_of_2(D),
        HEADS_FIRST=heads_first,
        PDL=False,
        **meta,
        num_warps=config["num_warps"],
        num_stages=config["num_stages"],
    )
    return o


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--S", nargs="+", type=int, default=[1024, 2048])
    parser.add_argument("--json")
    args = parser.parse_args()
    device = torch.device("cuda")
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=device))
    loaded = tables.load()
    cls = detect_class(loaded).id
    table = loaded.index(cls, "attention_prefill")
    rows = []
    space = [
        dict(zip(("BLOCK_M", "BLOCK_N", "num_warps", "num_stages"), c))
        for c in itertools.product([64, 128], [64, 128], [4, 8], [2, 3])
    ]
    for entry in table.entries:
        spans = dict((n, (lo, hi)) for n, lo, hi in entry.domain.ranges)
        if spans["S"][1] not in args.S:
            continue
        task = Task("attention_prefill", "bf16", entry.domain.ranges)
        sets = timing_sets(task)
        a = sets[0].args
        shape = {**sets[0].shape, "B": a["q"].shape[0], "HQ": a["q"].shape[2]}
        sdpa = bench(ops.TORCH.attention_prefill, sets)
        ours = bench(functools.partial(ops.SPECS["attention_prefill"].launch, config=entry.config), sets)
        best = {}
        for name, kernel, hf in (
            ("ptr-heads-first", _flash, True),
            ("ptr-blocks-first", _flash, False),
            ("tma", _flash_tma, True),
        ):
            for config in space:
                try:
                    t = bench(functools.partial(launch, kernel, config, hf), sets)
                except Exception as exc:  # noqa: BLE001 - resource limits: skip
                    print(f"  {name} {config}: {type(exc).__name__}", flush=True)
                    continue
                if name not in best or t < best[name][0]:
                    best[name] = (t, config)
        want = ops.TORCH.attention_prefill(**a).float()
        errors = {}
        for name, kernel, hf in (
            ("ptr-heads-first", _flash, True),
            ("ptr-blocks-first", _flash, False),
            ("tma", _flash_tma, True),
        ):
            if name in best:
                got = launch(kernel, best[name][1], hf, **a).float()
                errors[name] = float((got - want).abs().max())
        row = {
            "shape": shape,
            "max_abs_diff_vs_sdpa": errors,
            "sdpa_us": round(sdpa, 2),
            "shipped_us": round(ours, 2),
            "shipped_config": entry.config,
            **{n: {"us": round(t, 2), "config": c, "sdpa_over": round(sdpa / t, 3)} for n, (t, c) in best.items()},
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
