"""Prototype (2026-12-02): would two launches fewer per layer pay on the decode step? Measured before any
of it is certified.

  mlp   SiLU-mul in the gate/up projection's epilogue: each program multiplies its x rows against a tile of
        gate rows and the tile of up rows of the same outputs, and stores silu(g) u once (split-K partials
        of both merged by the tile's last program to arrive); the silu_mul launch goes.
  rope  rotary folded into attention_decode's split kernel: each program rotates its query heads from the
        q/k/v projection's output (rounded as rotary stores them), and the program whose chunk holds the
        new position rotates the new k into the cache and copies v beside it before reading its keys;
        the rotary launch goes.

The variants run the engine's own decode step (``GreedyDecoder``, one step a CUDA graph replay, PDL as the
class says) with the ops swapped in for decode calls only; each is checked against the engine's step
(logits) and timed side by side, rounds interleaved, on a catalogue model shape with random bf16 weights:

    PYTHONPATH=. python -m benchmarks.proto_fuse [--model NAME ...] [--batch 1 8] [--json out.json]
    TRITON_INTERPRET=1 PYTHONPATH=. python -m benchmarks.proto_fuse --check-only    # the kernels on CPU
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterable
from typing import Any

import torch
import triton
import triton.language as tl

from conformance.rank import captured_steps, interleaved  # noqa: F401 (the prototypes import them from here)
from neurobrix.ops import SPECS
from neurobrix.ops._common import dependent_launch, dot_precision
from neurobrix.ops.attention import LOG2E, _attention_decode_merge_kernel
from neurobrix.ops.linear import tile_counters


@triton.jit
def _gate_up_silu_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    part_ptr,
    counter_ptr,
    M,
    I,
    K,
    stride_xm,
    stride_wn,
    stride_ym,
    PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SPLIT_K: tl.constexpr,
    PDL: tl.constexpr,
):
    dependent_launch(PDL)
    pid_n = tl.program_id(0).to(tl.int64)
    pid_m = tl.program_id(1).to(tl.int64)
    pid_k = tl.program_id(2)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    in_m = offs_m < M
    in_n = offs_n < I
    k_slice = tl.cdiv(tl.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K
    k_first = pid_k * k_slice
    k_last = tl.minimum(k_first + k_slice, K)
    acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(k_first, k_last, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        in_k = offs_k < k_last
        a = tl.load(
            x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :], mask=in_m[:, None] & in_k[None, :], other=0.0
        )
        w_tile = w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None]
        w_mask = in_k[:, None] & in_n[None, :]
        g = tl.load(w_tile, mask=w_mask, other=0.0)
        u = tl.load(w_tile + I * stride_wn, mask=w_mask, other=0.0)
        acc_g = tl.dot(a, g, acc_g, input_precision=PRECISION)
        acc_u = tl.dot(a, u, acc_u, input_precision=PRECISION)
    in_y = in_m[:, None] & in_n[None, :]
    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :]
    if SPLIT_K == 1:
        tl.store(y_ptrs, (acc_g / (1.0 + tl.exp(-acc_g)) * acc_u).to(y_ptr.dtype.element_ty), mask=in_y)
    else:  # partials [SPLIT_K, M, 2 I] (gate then up), merged in split order by the tile's last program
        part = part_ptr + offs_m[:, None] * (2 * I) + offs_n[None, :]
        tl.store(part + pid_k * M * 2 * I, acc_g, mask=in_y)
        tl.store(part + pid_k * M * 2 * I + I, acc_u, mask=in_y)
        tl.debug_barrier()
        counter = counter_ptr + pid_m * tl.num_programs(0) + pid_n
        if tl.atomic_add(counter, 1, sem="acq_rel", scope="gpu") == SPLIT_K - 1:
            g_sum = tl.zeros_like(acc_g)
            u_sum = tl.zeros_like(acc_u)
            for k in range(SPLIT_K):
                g_sum += tl.load(part + k * M * 2 * I, mask=in_y, other=0.0, cache_modifier=".cg")
                u_sum += tl.load(part + k * M * 2 * I + I, mask=in_y, other=0.0, cache_modifier=".cg")
            tl.store(y_ptrs, (g_sum / (1.0 + tl.exp(-g_sum)) * u_sum).to(y_ptr.dtype.element_ty), mask=in_y)
            tl.atomic_xchg(counter, 0, sem="relaxed", scope="gpu")


def gate_up_silu(x: torch.Tensor, w: torch.Tensor, setting: dict[str, Any], pdl: bool) -> torch.Tensor:
    """silu(x W_g^T) * (x W_u^T) for w = [W_g; W_u] [2 I, K], one launch."""
    (M, K), I = x.shape, w.shape[0] // 2
    bm, bn, bk, split_k = max(16, triton.next_power_of_2(M)), setting["BLOCK_N"], setting["BLOCK_K"], setting["SPLIT_K"]
    y = torch.empty((M, I), dtype=x.dtype, device=x.device)
    programs = (triton.cdiv(I, bn), triton.cdiv(M, bm), split_k)
    part = torch.empty((split_k, M, 2 * I), dtype=torch.float32, device=x.device) if split_k > 1 else y
    counters = tile_counters(x.device, programs[0] * programs[1]) if split_k > 1 else y
    _gate_up_silu_kernel[programs](
        x,
        w,
        y,
        part,
        counters,
        M,
        I,
        K,
        x.stride(0),
        w.stride(0),
        y.stride(0),
        PRECISION=dot_precision("bf16"),
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_K=bk,
        SPLIT_K=split_k,
        num_warps=setting.get("num_warps", 4),
        num_stages=setting.get("num_stages", 3),
        PDL=pdl,
        launch_pdl=pdl,
    )
    return y


@triton.jit
def _rope_decode_split_kernel(
    q_ptr,
    kn_ptr,
    vn_ptr,
    cos_ptr,
    sin_ptr,
    k_ptr,
    v_ptr,
    len_ptr,
    part_ptr,
    ml_ptr,
    HKV,
    G,
    chunk,
    scale_log2,
    stride_qb,
    stride_qh,
    stride_knb,
    stride_knh,
    stride_vnb,
    stride_vnh,
    stride_cos,
    stride_kb,
    stride_ks,
    stride_kh,
    stride_vb,
    stride_vs,
    stride_vh,
    D: tl.constexpr,
    HALF: tl.constexpr,
    BLOCK_HALF: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_G: tl.constexpr,
    PRECISION: tl.constexpr,
    SPLITS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    PDL: tl.constexpr,
):
    dependent_launch(PDL)
    pid_bh = tl.program_id(0).to(tl.int64)
    split_id = tl.program_id(1)
    b = pid_bh // HKV
    kv_h = pid_bh % HKV
    length = tl.load(len_ptr + b).to(tl.int32)
    pos = (length - 1).to(tl.int64)
    offs_g = tl.arange(0, BLOCK_G)
    offs_e = tl.arange(0, BLOCK_HALF)
    offs_d = tl.arange(0, BLOCK_D)
    mask_g = offs_g < G
    mask_e = offs_e < HALF
    mask_d = offs_d < D
    c = tl.load(cos_ptr + pos * stride_cos + offs_e, mask=mask_e, other=0.0)
    sn = tl.load(sin_ptr + pos * stride_cos + offs_e, mask=mask_e, other=0.0)
    heads = kv_h * G + offs_g
    q_src = q_ptr + b * stride_qb + heads[:, None] * stride_qh + offs_e[None, :]
    q_mask = mask_g[:, None] & mask_e[None, :]
    x1 = tl.load(q_src, mask=q_mask, other=0.0).to(tl.float32)
    x2 = tl.load(q_src + HALF, mask=q_mask, other=0.0).to(tl.float32)
    q1 = (x1 * c[None, :] - x2 * sn[None, :]).to(k_ptr.dtype.element_ty)  # rounded as rotary stores q
    q2 = (x2 * c[None, :] + x1 * sn[None, :]).to(k_ptr.dtype.element_ty)
    k_base = k_ptr + b * stride_kb + kv_h * stride_kh
    v_base = v_ptr + b * stride_vb + kv_h * stride_vh
    if split_id == pos // chunk:  # this program's chunk holds the new position: append k (rotated) and v
        kn = kn_ptr + b * stride_knb + kv_h * stride_knh + offs_e
        k1 = tl.load(kn, mask=mask_e, other=0.0).to(tl.float32)
        k2 = tl.load(kn + HALF, mask=mask_e, other=0.0).to(tl.float32)
        tl.store(k_base + pos * stride_ks + offs_e, (k1 * c - k2 * sn).to(k_ptr.dtype.element_ty), mask=mask_e)
        tl.store(k_base + pos * stride_ks + HALF + offs_e, (k2 * c + k1 * sn).to(k_ptr.dtype.element_ty), mask=mask_e)
        vn = tl.load(vn_ptr + b * stride_vnb + kv_h * stride_vnh + offs_d, mask=mask_d)
        tl.store(v_base + pos * stride_vs + offs_d, vn, mask=mask_d)
    tl.debug_barrier()  # the appended row is visible to every thread of this program before its keys are read
    m_i = tl.full((BLOCK_G,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_G,), dtype=tl.float32)
    accumulator = tl.zeros((BLOCK_G, BLOCK_D), dtype=tl.float32)
    start = split_id * chunk
    end = tl.minimum(start + chunk, length)
    for start_n in range(start, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        mask_n = offs_n < end
        k_mask = mask_e[:, None] & mask_n[None, :]
        k_lo = tl.load(k_base + offs_n[None, :] * stride_ks + offs_e[:, None], mask=k_mask, other=0.0)
        k_hi = tl.load(k_base + offs_n[None, :] * stride_ks + HALF + offs_e[:, None], mask=k_mask, other=0.0)
        qk = tl.dot(q1, k_lo, input_precision=PRECISION)
        qk = tl.dot(q2, k_hi, qk, input_precision=PRECISION) * scale_log2
        qk = tl.where(mask_n[None, :], qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(
            v_base + offs_n[:, None] * stride_vs + offs_d[None, :], mask=mask_n[:, None] & mask_d[None, :], other=0.0
        )
        accumulator = accumulator * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m_i = m_new
    row = (b * HKV * G + heads) * SPLITS + split_id
    tl.store(part_ptr + row[:, None] * D + offs_d[None, :], accumulator, mask=mask_g[:, None] & mask_d[None, :])
    tl.store(ml_ptr + row, m_i, mask=mask_g)
    tl.store(ml_ptr + tl.num_programs(0) * G * SPLITS + row, l_i, mask=mask_g)


def rope_attention_decode(q, k_new, v_new, cos, sin, k_cache, v_cache, lengths, scale, setting, pdl):
    """attention_decode over the cache with q [B, Hq, D] and the new k, v [B, Hkv, D] unrotated: rotary and
    the cache append of the step folded into the split kernel."""
    B, HQ, D = q.shape
    capacity, HKV = k_cache.shape[1], k_cache.shape[2]
    G = HQ // HKV
    splits, block_n = setting["SPLITS"], setting["BLOCK_N"]
    chunk = triton.cdiv(triton.cdiv(capacity, splits), block_n) * block_n
    part = torch.empty((B, HQ, splits, D), dtype=torch.float32, device=q.device)
    ml = torch.empty((2, B, HQ, splits), dtype=torch.float32, device=q.device)
    o = torch.empty((B, HQ, D), dtype=q.dtype, device=q.device)
    launch = {
        "num_warps": setting.get("num_warps", 4),
        "num_stages": setting.get("num_stages", 2),
        "PDL": pdl,
        "launch_pdl": pdl,
    }
    _rope_decode_split_kernel[(B * HKV, splits)](
        q,
        k_new,
        v_new,
        cos,
        sin,
        k_cache,
        v_cache,
        lengths,
        part,
        ml,
        HKV,
        G,
        chunk,
        float(scale) * LOG2E,
        *q.stride()[:2],
        *k_new.stride()[:2],
        *v_new.stride()[:2],
        cos.stride(0),
        *k_cache.stride()[:3],
        *v_cache.stride()[:3],
        D=D,
        HALF=D // 2,
        BLOCK_HALF=triton.next_power_of_2(D // 2),
        BLOCK_D=triton.next_power_of_2(D),
        BLOCK_G=max(16, triton.next_power_of_2(G)),
        PRECISION=dot_precision("bf16"),
        SPLITS=splits,
        BLOCK_N=block_n,
        **launch,
    )
    _attention_decode_merge_kernel[(B * HQ,)](
        part,
        ml,
        o,
        HQ,
        B * HQ * splits,
        *o.stride()[:2],
        D=D,
        BLOCK_D=triton.next_power_of_2(D),
        SPLITS=splits,
        BLOCK_S=triton.next_power_of_2(splits),
        **launch,
    )
    return o


class Fused:
    """The engine's certified ops with decode's gate/up + silu_mul (``mlp``) and rotary + attention (``rope``)
    swapped for the prototype kernels; every other call, and every prefill call, goes to the engine's op."""

    def __init__(self, base, settings, pdl: bool, gate_up: set[int], mlp: str | None, rope: bool) -> None:
        self.base, self.settings, self.pdl, self.gate_up, self.mlp, self.rope = base, settings, pdl, gate_up, mlp, rope
        self.fused_out: torch.Tensor | None = None
        self.deferred: tuple | None = None

    def __getattr__(self, name: str):
        return getattr(self.base, name)

    def linear(self, x, w, b=None):
        if self.mlp is None or id(w) not in self.gate_up:
            return self.base.linear(x, w, b)
        setting = dict(self.settings[("linear", "bf16", tuple(SPECS["linear"].key_of(x, w, b)[1]))])
        setting.setdefault("BLOCK_N", 32)
        setting.setdefault("SPLIT_K", 1)
        if self.mlp == "half":
            setting["BLOCK_N"] = max(16, setting["BLOCK_N"] // 2)
        elif self.mlp.startswith("split"):  # e.g. split2: the entry's tile, K split in two
            setting["SPLIT_K"] = int(self.mlp[5:])
        self.fused_out = gate_up_silu(x, w, setting, self.pdl)
        return self.fused_out

    def silu_mul(self, gu):
        if gu is self.fused_out:
            return gu
        return self.base.silu_mul(gu)

    def rotary(self, q, k, cos, sin, positions, inplace=False, v=None, k_cache=None, v_cache=None):
        if self.rope and q.shape[1] == 1 and k_cache is not None:
            self.deferred = (q, k, v, cos, sin)
            return q, k_cache
        return self.base.rotary(q, k, cos, sin, positions, inplace, v=v, k_cache=k_cache, v_cache=v_cache)

    def attention_decode(self, q, k_cache, v_cache, lengths, scale):
        if self.deferred is None:
            return self.base.attention_decode(q, k_cache, v_cache, lengths, scale)
        q4, k, v, cos, sin = self.deferred
        self.deferred = None
        dtype, key = SPECS["attention_decode"].key_of(q, k_cache, v_cache, lengths, scale)
        setting = self.settings[("attention_decode", dtype, tuple(key))]
        return rope_attention_decode(
            q4[:, 0], k[:, 0], v[:, 0], cos, sin, k_cache, v_cache, lengths, scale, setting, self.pdl
        )


VARIANTS = {
    "engine": (None, False),
    "mlp": ("same", False),
    "mlp-half": ("half", False),
    "mlp-split2": ("split2", False),
    "rope": (None, True),
    "mlp+rope": ("same", True),
    "mlp-half+rope": ("half", True),
}


def summary(times: dict[str, list[float]]) -> dict[str, Any]:
    """Each variant's median step (us), its spread over the rounds, and the engine's median over it."""
    step = {v: statistics.median(t) for v, t in times.items()}
    return {
        "step_us": {v: round(s, 2) for v, s in step.items()},
        "spread_us": {v: [round(min(t), 2), round(max(t), 2)] for v, t in times.items()},
        "vs_engine": {v: round(step["engine"] / s, 4) for v, s in step.items()},
    }


def report(results: Iterable[dict[str, Any]], path: str | None) -> int:
    """Print each result as a JSON line as it comes, then write them all to ``path`` (when given); exit status 0."""
    kept = []
    for result in results:
        print(json.dumps(result), flush=True)
        kept.append(result)
    if path:
        with open(path, "w") as f:
            json.dump(kept, f, indent=1)
    return 0


def decode_setup(name: str, batch: int, filled: int, steps: int):
    """A catalogue model's shape with random bf16 weights, a cache of ``filled + steps + 16`` positions, its
    certified plan on this GPU's class and the plan's ops: (cfg, weights, capacity, plan, ops, tokens), what
    each prototype of swapped decode ops starts from."""
    from benchmarks.e2e import random_weights
    from conformance.catalogue import load
    from neurobrix.gpu import detect_class
    from neurobrix.plan import generation_calls, resolve
    from neurobrix.tables import load as load_tables

    cfg = load()[0][name]
    weights = random_weights(cfg, torch.bfloat16, "cuda")
    capacity = filled + steps + 16
    plan = resolve(generation_calls(cfg, batch, filled, capacity, "bf16"), load_tables(), detect_class().id)
    tokens = torch.arange(batch, device="cuda") * 7919 % cfg.vocab_size
    return cfg, weights, capacity, plan, plan.ops(), tokens


def measure(name: str, batch: int, filled: int, steps: int, variants: list[str]) -> dict:
    cfg, weights, capacity, plan, base, tokens = decode_setup(name, batch, filled, steps)
    gate_up = {id(layer.gate_up) for layer in weights.layers}
    ops = {}
    for variant in variants:
        mlp, rope = VARIANTS[variant]
        ops[variant] = base if variant == "engine" else Fused(base, plan.settings, plan.pdl, gate_up, mlp, rope)
    decoders, logits = captured_steps(cfg, weights, ops, batch, filled, capacity, tokens)
    ref = logits["engine"]
    scale = float(ref.abs().max())
    agree = {v: round(float((logits[v] - ref).abs().max()) / scale, 5) for v in variants}
    same_token = {v: bool((logits[v].argmax(-1) == ref.argmax(-1)).all()) for v in variants}
    times = interleaved(decoders, tokens, filled, steps, rounds=7)
    return {
        "model": name,
        "batch": batch,
        "filled": filled,
        **summary(times),
        "max_logit_diff_rel": agree,
        "same_token": same_token,
    }


def check_kernels() -> None:
    """The two kernels against their unfused definitions on small shapes (CPU under the interpreter, or a GPU)."""
    device = "cpu" if triton.knobs.runtime.interpret else "cuda"
    dtype = torch.float16 if device == "cpu" else torch.bfloat16  # the interpreter has no bf16 arithmetic
    gen = torch.Generator().manual_seed(0)
    for M, I, K, split_k in ((1, 48, 64, 1), (3, 40, 96, 2), (8, 32, 64, 3)):
        x = torch.randn(M, K, generator=gen).to(dtype).to(device)
        w = (torch.randn(2 * I, K, generator=gen) / K**0.5).to(dtype).to(device)
        y = gate_up_silu(x, w, {"BLOCK_N": 16, "BLOCK_K": 32, "SPLIT_K": split_k, "num_stages": 1}, False)
        gu = x.double() @ w.double().T
        want = torch.nn.functional.silu(gu[:, :I]) * gu[:, I:]
        err = float((y.double() - want).abs().max() / want.abs().max())
        print(f"gate_up_silu M={M} I={I} K={K} split {split_k}: max error {err:.2e} of max|y|")
        assert err < 2**-7, err
    from neurobrix.ops.attention import attention_decode_torch
    from neurobrix.ops.rotary import rope_cache, rotary_torch

    for B, HQ, HKV, D, capacity, length in ((1, 4, 2, 64, 64, 37), (2, 8, 2, 32, 128, 100)):
        cos, sin = rope_cache(D, 10000.0, capacity)
        cos, sin = cos.to(device), sin.to(device)
        q = torch.randn(B, 1, HQ, D, generator=gen).to(dtype).to(device)
        k = torch.randn(B, 1, HKV, D, generator=gen).to(dtype).to(device)
        v = torch.randn(B, 1, HKV, D, generator=gen).to(dtype).to(device)
        kc = torch.randn(B, capacity, HKV, D, generator=gen).to(dtype).to(device)
        vc = torch.randn(B, capacity, HKV, D, generator=gen).to(dtype).to(device)
        lengths = torch.tensor([length - n for n in range(B)], dtype=torch.int32, device=device)
        positions = (lengths - 1).to(torch.int64)[:, None]
        kc2, vc2 = kc.clone(), vc.clone()
        q_rot, _ = rotary_torch(q, k, cos, sin, positions, v=v, k_cache=kc2, v_cache=vc2)
        want = attention_decode_torch(q_rot[:, 0], kc2, vc2, lengths, D**-0.5).double()
        got = rope_attention_decode(
            q[:, 0],
            k[:, 0],
            v[:, 0],
            cos,
            sin,
            kc,
            vc,
            lengths,
            D**-0.5,
            {"SPLITS": 4, "BLOCK_N": 16, "num_stages": 1},
            False,
        )
        err = float((got.double() - want).abs().max())
        print(
            f"rope_attention_decode B={B} HQ={HQ} HKV={HKV} D={D} length {length}: max error {err:.2e}, "
            f"caches equal: {torch.equal(kc, kc2) and torch.equal(vc, vc2)}"
        )
        assert torch.equal(kc, kc2) and torch.equal(vc, vc2) and err < 2**-6, err


def prototype_main(module: str, doc: str, variants: dict, check, measure, argv: list[str] | None) -> int:
    """The command line of a prototype of swapped decode ops (this one, proto_norm): check the kernels on small
    shapes (CPU under the interpreter with --check-only, or a GPU), then time each model and batch's step with
    ``measure(name, batch, filled, steps, variants)`` and report it."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument(
        "--model", nargs="+", default=["meta-llama/Llama-3.2-1B-Instruct", "TinyLlama/TinyLlama-1.1B-Chat-v1.0"]
    )
    parser.add_argument("--batch", nargs="+", type=int, default=[1, 8])
    parser.add_argument("--filled", type=int, default=128, help="cache positions filled before the step")
    parser.add_argument("--steps", type=int, default=300, help="replays a timed round")
    parser.add_argument("--variants", nargs="+", default=list(variants), choices=list(variants))
    parser.add_argument("--check-only", action="store_true", help="check the kernels on small shapes and stop")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    if not triton.knobs.runtime.interpret and not torch.cuda.is_available():
        print(f"{module}: needs a GPU of a certified class (or TRITON_INTERPRET=1 with --check-only)", file=sys.stderr)
        return 1
    check()
    if args.check_only:
        return 0
    if not torch.cuda.is_available():
        print(f"{module}: timing needs a GPU of a certified class", file=sys.stderr)
        return 1
    chosen = ["engine", *(v for v in args.variants if v != "engine")]
    runs = (measure(name, batch, args.filled, args.steps, chosen) for name in args.model for batch in args.batch)
    return report(runs, args.json)


def main(argv: list[str] | None = None) -> int:
    return prototype_main("proto_fuse", __doc__, VARIANTS, check_kernels, measure, argv)


if __name__ == "__main__":
    sys.exit(main())
