"""Prototype (2026-12-03): would RMSNorm folded into the projection after it pay on the decode step?
Measured before any of it is certified.

A decode layer launches rms_norm twice (before q/k/v and before gate/up; the second also adds the residual)
and the model once more before the output head: 2L + 1 of its ~10L launches are a norm that reads a few KB.
Folded, the projection's programs read the norm's input rows themselves (x, plus the residual r where there is
one: h = x + r, rounded to the stream's dtype as rms_norm rounds it) and multiply each against the norm
weight g on the way into ``tl.dot``; the program at the first column block stores h. 1 / rms comes from the
sum of squares taken in the K loop: each program scales its result by 1 / rms at the end (split K: each
slice's sum stored beside its partials, added up by the tile's last program), h g rounded where the engine
rounds h g / rms. x, r and g are loaded one step ahead and the squares reduced once after the loop: the first
two ways tried (the sum reduced and the loads waited on at every K step; a first pass over the whole row for
1 / rms) took 1.3-3.3x the engine's step (2026-12-03d call 1; that code is this file at b67c228).

The projection's setting is the certified one for its shape (skinny: BLOCK_N, BLOCK_K, SPLIT_K, warps,
stages; a gemv or tiled setting is mapped to skinny tiles of its BLOCK_N, the mapping reported); split-K
partials are always merged by the tile's last program. ``+rope`` adds proto_fuse's rotary folded into
attention. The engine's own decode step (``GreedyDecoder``, a CUDA graph replay, PDL as the class says) runs
with the ops swapped for decode calls; logits compared with the engine's, steps timed side by side with
rounds interleaved:

    PYTHONPATH=. python -m benchmarks.proto_norm [--model NAME ...] [--batch 1 8] [--json out.json]
    TRITON_INTERPRET=1 PYTHONPATH=. python -m benchmarks.proto_norm --check-only   # the kernel on CPU
"""

from __future__ import annotations

import sys
from typing import Any

import torch
import triton
import triton.language as tl

from benchmarks.proto_fuse import Fused, captured_steps, decode_setup, interleaved, prototype_main, summary
from neurobrix.ops import SPECS
from neurobrix.ops._common import dependent_launch, dot_precision
from neurobrix.ops.linear import tile_counters


@triton.jit
def _norm_linear_kernel(
    x_ptr, r_ptr, g_ptr, w_ptr, b_ptr, y_ptr, h_ptr, part_ptr, ssq_ptr, counter_ptr,
    M, N, K, eps,
    stride_xm, stride_rm, stride_wn, stride_ym, stride_hm,
    HAS_RESIDUAL: tl.constexpr, HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
    PDL: tl.constexpr,
):  # fmt: skip
    """rms_norm(x (+ r)) @ W^T with the sum of squares taken in the K loop and 1 / rms applied at the end (split
    K: each slice's sum stored beside its partials, added up in split order by the tile's last program). x, r
    and g are loaded one step ahead (Triton pipelines only the loads that feed tl.dot), the squares summed
    elementwise and reduced once after the loop, h stored under a mask rather than a branch."""
    dependent_launch(PDL)
    pid_n = tl.program_id(0).to(tl.int64)
    pid_m = tl.program_id(1).to(tl.int64)
    pid_k = tl.program_id(2)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    in_m = offs_m < M
    in_n = offs_n < N
    dt = y_ptr.dtype.element_ty
    k_slice = tl.cdiv(tl.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K
    k_first = pid_k * k_slice
    k_last = tl.minimum(k_first + k_slice, K)
    offs_k = k_first + tl.arange(0, BLOCK_K)
    rows = in_m[:, None] & (offs_k < k_last)[None, :]
    x_next = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :], mask=rows, other=0.0)
    r_next = x_next
    if HAS_RESIDUAL:
        r_next = tl.load(r_ptr + offs_m[:, None] * stride_rm + offs_k[None, :], mask=rows, other=0.0)
    g_next = tl.load(g_ptr + offs_k, mask=offs_k < k_last, other=0.0)
    squares = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    store_h = in_m & (offs_m * 0 + pid_n == 0)  # rows this program stores h of: only at the first column block
    for k0 in range(k_first, k_last, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        in_k = offs_k < k_last
        rows = in_m[:, None] & in_k[None, :]
        x_now, r_now, g_now = x_next, r_next, g_next
        ahead = offs_k + BLOCK_K
        rows_ahead = in_m[:, None] & (ahead < k_last)[None, :]
        x_next = tl.load(x_ptr + offs_m[:, None] * stride_xm + ahead[None, :], mask=rows_ahead, other=0.0)
        if HAS_RESIDUAL:
            r_next = tl.load(r_ptr + offs_m[:, None] * stride_rm + ahead[None, :], mask=rows_ahead, other=0.0)
        g_next = tl.load(g_ptr + ahead, mask=ahead < k_last, other=0.0)
        b = tl.load(
            w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None], mask=in_k[:, None] & in_n[None, :], other=0.0
        )
        h = x_now.to(tl.float32)
        if HAS_RESIDUAL:
            h_rounded = (h + r_now.to(tl.float32)).to(dt)
            tl.store(
                h_ptr + offs_m[:, None] * stride_hm + offs_k[None, :], h_rounded, mask=store_h[:, None] & in_k[None, :]
            )
            h = h_rounded.to(tl.float32)
        squares += h * h
        a = (h * g_now.to(tl.float32)[None, :]).to(dt)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    ssq = tl.sum(squares, axis=1)
    in_y = in_m[:, None] & in_n[None, :]
    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :]
    if SPLIT_K == 1:
        acc = acc * (1.0 / tl.sqrt(ssq / K + eps))[:, None]
        if HAS_BIAS:
            acc += tl.load(b_ptr + offs_n, mask=in_n, other=0.0).to(tl.float32)[None, :]
        tl.store(y_ptrs, acc.to(dt), mask=in_y)
    else:
        part = part_ptr + offs_m[:, None] * N + offs_n[None, :]
        tl.store(part + pid_k * M * N, acc, mask=in_y)
        tile = pid_m * tl.num_programs(0) + pid_n
        tl.store(ssq_ptr + (tile * SPLIT_K + pid_k) * M + offs_m, ssq, mask=in_m)
        tl.debug_barrier()
        counter = counter_ptr + tile
        if tl.atomic_add(counter, 1, sem="acq_rel", scope="gpu") == SPLIT_K - 1:
            y = tl.zeros_like(acc)
            total = tl.zeros_like(ssq)
            for k in range(SPLIT_K):  # in split order
                y += tl.load(part + k * M * N, mask=in_y, other=0.0, cache_modifier=".cg")
                total += tl.load(
                    ssq_ptr + (tile * SPLIT_K + k) * M + offs_m, mask=in_m, other=0.0, cache_modifier=".cg"
                )
            y = y * (1.0 / tl.sqrt(total / K + eps))[:, None]
            if HAS_BIAS:
                y += tl.load(b_ptr + offs_n, mask=in_n, other=0.0).to(tl.float32)[None, :]
            tl.store(y_ptrs, y.to(dt), mask=in_y)
            tl.atomic_xchg(counter, 0, sem="relaxed", scope="gpu")


def skinny_setting(certified: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The certified linear setting as the folded kernel's tiles, and how it was mapped."""
    variant = certified.get("variant")
    setting = {
        "BLOCK_N": max(32, certified.get("BLOCK_N", 64)),
        "BLOCK_K": certified.get("BLOCK_K", 128) if variant != "tiled" else 128,
        "SPLIT_K": certified.get("SPLIT_K", 1),
        "num_warps": certified.get("num_warps", 4),
        "num_stages": certified.get("num_stages", 3),
    }
    return setting, "as certified" if variant == "skinny" else f"{variant} mapped to skinny"


def norm_linear(x, residual, g, eps, w, bias, h, setting, pdl: bool):
    """y = rms_norm(x (+ residual)) @ w^T (+ bias), storing h = x + residual into ``h``; one launch."""
    (M, K), N = x.shape, w.shape[0]
    bm, bn, bk, split_k = max(16, triton.next_power_of_2(M)), setting["BLOCK_N"], setting["BLOCK_K"], setting["SPLIT_K"]
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    programs = (triton.cdiv(N, bn), triton.cdiv(M, bm), split_k)
    tiles = programs[0] * programs[1]
    part = torch.empty((split_k, M, N), dtype=torch.float32, device=x.device) if split_k > 1 else y
    ssq = torch.empty((tiles, split_k, M), dtype=torch.float32, device=x.device) if split_k > 1 else y
    counters = tile_counters(x.device, tiles) if split_k > 1 else y
    r = residual if residual is not None else x
    _norm_linear_kernel[programs](
        x, r, g, w, bias if bias is not None else y, y, h, part, ssq, counters, M, N, K, float(eps),
        x.stride(0), r.stride(0), w.stride(0), y.stride(0), h.stride(0),
        HAS_RESIDUAL=residual is not None, HAS_BIAS=bias is not None,
        PRECISION=dot_precision("bf16"), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, SPLIT_K=split_k,
        num_warps=setting["num_warps"], num_stages=setting["num_stages"], PDL=pdl, launch_pdl=pdl,
    )  # fmt: skip
    return y
    return y


class NormFused(Fused):
    """proto_fuse's swapped ops (``rope`` as there) with each decode rms_norm deferred into the projection that
    reads its output: the norm returns a placeholder y (and the h its projection will store); the projection
    given that placeholder launches the folded kernel."""

    def __init__(self, base, settings, pdl: bool, rope: bool, fold: bool) -> None:
        super().__init__(base, settings, pdl, set(), None, rope)
        self.fold = fold
        self.pending: dict[int, tuple] = {}
        self.mapped: dict[str, str] = {}

    def rms_norm(self, x, weight, eps, residual=None):
        if not self.fold or x.shape[0] > 64:  # decode rows only
            return self.base.rms_norm(x, weight, eps, residual)
        y = torch.empty_like(x)
        h = torch.empty_like(x) if residual is not None else x
        self.pending[y.data_ptr()] = (x, residual, weight, eps, h)
        return (y, h) if residual is not None else y

    def linear(self, x, w, b=None):
        deferred = self.pending.pop(x.data_ptr(), None)
        if deferred is None:
            return super().linear(x, w, b)
        src, residual, g, eps, h = deferred
        key = tuple(SPECS["linear"].key_of(x, w, b)[1])
        setting, how = skinny_setting(self.settings[("linear", "bf16", key)])
        self.mapped[str(key)] = how
        return norm_linear(src, residual, g, eps, w, b, h, setting, self.pdl)


VARIANTS = {  # name: (fold, rope); "fold3" as 2026-12-03d names it (the third way tried)
    "engine": (False, False),
    "fold3": (True, False),
    "rope": (False, True),
    "fold3+rope": (True, True),
}


def measure(name: str, batch: int, filled: int, steps: int, variants: list[str]) -> dict:
    cfg, weights, capacity, plan, base, tokens = decode_setup(name, batch, filled, steps)
    ops: dict[str, Any] = {}
    for variant in variants:
        fold, rope = VARIANTS[variant]
        ops[variant] = base if variant == "engine" else NormFused(base, plan.settings, plan.pdl, rope, fold)
    decoders, logits = captured_steps(cfg, weights, ops, batch, filled, capacity, tokens)
    ref = logits["engine"]
    scale = float(ref.abs().max())
    mapped = next((o.mapped for o in ops.values() if isinstance(o, NormFused) and o.mapped), {})
    return {
        "model": name,
        "batch": batch,
        "filled": filled,
        **summary(interleaved(decoders, tokens, filled, steps, rounds=7)),
        "max_logit_diff_rel": {v: round(float((logits[v] - ref).abs().max()) / scale, 5) for v in variants},
        "same_token": {v: bool((logits[v].argmax(-1) == ref.argmax(-1)).all()) for v in variants},
        "projections_folded": mapped,
    }


def check_kernel() -> None:
    """The folded kernel against rms_norm then linear in float64, on small shapes (CPU under the interpreter,
    or a GPU), both ways, with and without a residual, a bias and split K."""
    device = "cpu" if triton.knobs.runtime.interpret else "cuda"
    dtype = torch.float16 if device == "cpu" else torch.bfloat16  # the interpreter has no bf16 arithmetic
    gen = torch.Generator().manual_seed(0)
    for M, N, K, split_k, residual, bias in ((1, 48, 64, 1, False, False), (3, 40, 96, 2, True, True),
                                             (8, 32, 160, 3, True, False)):  # fmt: skip
        x = torch.randn(M, K, generator=gen).to(dtype).to(device)
        r = torch.randn(M, K, generator=gen).to(dtype).to(device) if residual else None
        g = (1 + torch.randn(K, generator=gen) / 4).to(dtype).to(device)
        w = (torch.randn(N, K, generator=gen) / K**0.5).to(dtype).to(device)
        b = torch.randn(N, generator=gen).to(dtype).to(device) if bias else None
        hd = x.double() + (r.double() if r is not None else 0)
        want_h = hd.to(dtype)
        hd = want_h.double()
        yd = hd / torch.sqrt(hd.pow(2).mean(-1, keepdim=True) + 1e-5) * g.double()
        want = yd @ w.double().T + (b.double() if b is not None else 0)
        h = torch.empty_like(x) if residual else x
        setting = {"BLOCK_N": 16, "BLOCK_K": 32, "SPLIT_K": split_k, "num_warps": 4, "num_stages": 1}
        y = norm_linear(x, r, g, 1e-5, w, b, h, setting, False)
        err = float((y.double() - want).abs().max() / want.abs().max())
        print(f"norm_linear M={M} N={N} K={K} split {split_k}: max error {err:.2e} of max|y|")
        assert err < 2**-6, err
        assert torch.equal(h, want_h), "h = x + residual not stored as rounded"


def main(argv: list[str] | None = None) -> int:
    return prototype_main("proto_norm", __doc__, VARIANTS, check_kernel, measure, argv)


if __name__ == "__main__":
    sys.exit(main())
