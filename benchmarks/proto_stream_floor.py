"""Prototype measurement (2026-12-04): how fast can a TinyLlama-shaped decode step's projections go at all, one
kernel per projection? The floor under any setting of any projection kernel of this engine's design.

A decode step at batch 1 reads every projection's weights once: per layer qkv (2,560 x 2,048), o (2,048 x 2,048),
gate/up (11,264 x 2,048) and down (2,048 x 5,632), 22 layers, then the output head (32,000 x 2,048): 2.07 GB in
89 kernels. Here each of those kernels is replaced by one that only streams its weight matrix and sums it (no x, no
products, no merge of split-K partials: strictly less work than a projection), at the best of a grid of settings
for each shape, timed over the 22 distinct matrices of that shape (no L2 reuse). Then the 89 kernels of a step run
in the step's order as one CUDA graph, with programmatic dependent launch as the H200 class launches (and without),
beside the same chain on cuBLAS (``F.linear`` of one row) and one copy of 1 GiB (the HBM rate a single kernel reaches).
If the streaming chain alone takes more than the step #17's target leaves the projections (800 us at 1,250
tokens/s, less what attention, norms, rotary and SiLU-mul take), no one-kernel-per-op setting reaches the target.

    PYTHONPATH=. python -m benchmarks.proto_stream_floor [--json out.json]
    TRITON_INTERPRET=1 PYTHONPATH=. python -m benchmarks.proto_stream_floor --check-only   # the kernel on CPU
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from typing import Any

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from neurobrix.ops._common import dependent_launch

HIDDEN, INTER, LAYERS, VOCAB, KV = 2048, 5632, 22, 32000, 256  # TinyLlama-1.1B: 4 kv heads of 64
SHAPES = {
    "qkv": (HIDDEN + 2 * KV, HIDDEN),
    "o": (HIDDEN, HIDDEN),
    "gate_up": (2 * INTER, HIDDEN),
    "down": (HIDDEN, INTER),
    "head": (VOCAB, HIDDEN),
}  # name: (N, K)


@triton.jit
def _stream_kernel(
    w_ptr, out_ptr, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr, PDL: tl.constexpr
):
    """out[pid_k, n] = the sum of W[n, k] over program pid_k's slice of K (N, K and the slices divide evenly)."""
    dependent_launch(PDL)
    pid_n = tl.program_id(0).to(tl.int64)
    pid_k = tl.program_id(1)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k_slice = K // SPLIT_K
    acc = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
    for k0 in range(pid_k * k_slice, (pid_k + 1) * k_slice, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        acc += tl.load(w_ptr + offs_n[:, None] * K + offs_k[None, :]).to(tl.float32)
    tl.store(out_ptr + pid_k * N + offs_n, tl.sum(acc, axis=1))


def settings(n: int, k: int) -> list[dict[str, int]]:
    """Every setting of the grid that divides this shape evenly and holds its accumulator in registers (at most
    128 fp32 values a thread)."""
    found = []
    grid = itertools.product((8, 16, 32), (128, 256, 512, 1024), (1, 2, 4, 8, 11, 16, 22), (4, 8), (2, 3))
    for bn, bk, sk, warps, stages in grid:
        if bn * bk <= 128 * 32 * warps and n % bn == 0 and k % sk == 0 and (k // sk) % bk == 0:
            found.append({"BLOCK_N": bn, "BLOCK_K": bk, "SPLIT_K": sk, "num_warps": warps, "num_stages": stages})
    return found


def stream(w: torch.Tensor, out: torch.Tensor, s: dict[str, int], pdl: bool) -> None:
    n, k = w.shape
    _stream_kernel[(n // s["BLOCK_N"], s["SPLIT_K"])](
        w,
        out,
        n,
        k,
        s["BLOCK_N"],
        s["BLOCK_K"],
        s["SPLIT_K"],
        pdl,
        num_warps=s["num_warps"],
        num_stages=s["num_stages"],
        launch_pdl=pdl,
    )


def graph_us(calls: list[Any], replays: int = 20, rounds: int = 5) -> float:
    """Median over rounds of one replay's time (us) of a CUDA graph of ``calls``, replays queued back to back."""
    for call in calls:  # compile and warm outside the capture
        call()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for call in calls:
            call()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(replays):
            graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / replays)
    return statistics.median(times)


def check_only() -> None:
    """On any device (the interpreter too): the kernel's sums equal torch's, for a few settings."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    w = torch.randn(64, 512, device=device, dtype=torch.float16)
    for s in (
        {"BLOCK_N": 16, "BLOCK_K": 128, "SPLIT_K": 2, "num_warps": 4, "num_stages": 2},
        {"BLOCK_N": 32, "BLOCK_K": 256, "SPLIT_K": 1, "num_warps": 4, "num_stages": 2},
    ):
        out = torch.zeros(s["SPLIT_K"], 64, device=device, dtype=torch.float32)
        stream(w, out, s, False)
        want = w.double().reshape(64, s["SPLIT_K"], -1).sum(-1).t()
        assert torch.allclose(out.double(), want, rtol=1e-5, atol=1e-3), (s, (out.double() - want).abs().max())
    print("check: the streaming kernel's sums equal torch's")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the results here too")
    parser.add_argument("--check-only", action="store_true", help="only check the kernel against torch and exit")
    args = parser.parse_args(argv)
    if args.check_only:
        check_only()
        return 0
    if not torch.cuda.is_available():
        print("proto_stream_floor: needs a CUDA GPU (or --check-only)", file=sys.stderr)
        return 5
    torch.manual_seed(0)
    dev = "cuda"
    copies = {name: (1 if name == "head" else LAYERS) for name in SHAPES}
    weights = {
        name: [torch.randn(n, k, device=dev, dtype=torch.bfloat16) for _ in range(copies[name])]
        for name, (n, k) in SHAPES.items()
    }
    total_bytes = sum(w.numel() * 2 for ws in weights.values() for w in ws)
    out = torch.empty(22 * VOCAB, device=dev, dtype=torch.float32)
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "date": time.strftime("%Y-%m-%d"),
        "step_bytes": total_bytes,
        "shapes": {},
    }

    src = torch.empty(1 << 29, device=dev, dtype=torch.bfloat16)  # 1 GiB
    dst = torch.empty_like(src)
    copy_us = graph_us([lambda: dst.copy_(src)], replays=5)
    result["copy_1gib_us"] = copy_us
    result["copy_tb_s"] = 2 * src.numel() * 2 / copy_us / 1e6  # read + write
    print(f"copy of 1 GiB: {copy_us:.1f} us, {result['copy_tb_s']:.2f} TB/s (read + write)", flush=True)

    best: dict[str, dict[str, int]] = {}
    for name, (n, k) in SHAPES.items():
        ws = weights[name]
        timed = []
        for s in settings(n, k):
            try:
                us = graph_us([lambda w=w, s=s: stream(w, out, s, True) for w in ws], replays=5, rounds=3) / len(ws)
            except Exception as exc:  # a setting that does not compile or launch: left out
                print(f"  {name} {s}: {type(exc).__name__}", flush=True)
                continue
            timed.append((us, s))
        timed.sort(key=lambda t: t[0])
        us, best[name] = timed[0]
        tb_s = n * k * 2 / us / 1e6
        cublas_x = torch.randn(1, k, device=dev, dtype=torch.bfloat16)
        cublas_us = graph_us([lambda w=w: F.linear(cublas_x, w) for w in ws], replays=5, rounds=3) / len(ws)
        result["shapes"][name] = {
            "N": n,
            "K": k,
            "settings_timed": len(timed),
            "best": best[name],
            "stream_us": us,
            "stream_tb_s": tb_s,
            "cublas_gemv_us": cublas_us,
        }
        print(
            f"{name:8s} {n} x {k}: {len(timed)} settings, best {best[name]}: {us:.2f} us ({tb_s:.2f} TB/s); "
            f"cuBLAS one row {cublas_us:.2f} us",
            flush=True,
        )

    order = [(name, i) for i in range(LAYERS) for name in ("qkv", "o", "gate_up", "down")] + [("head", 0)]
    xs = {name: torch.randn(1, k, device=dev, dtype=torch.bfloat16) for name, (n, k) in SHAPES.items()}
    chains = {
        "stream_pdl": [lambda nm=nm, i=i: stream(weights[nm][i], out, best[nm], True) for nm, i in order],
        "stream_serial": [lambda nm=nm, i=i: stream(weights[nm][i], out, best[nm], False) for nm, i in order],
        "cublas": [lambda nm=nm, i=i: F.linear(xs[nm], weights[nm][i]) for nm, i in order],
    }
    result["chains"] = {}
    for label in ("stream_pdl", "stream_serial", "cublas", "stream_pdl"):  # the first again: the spread
        us = graph_us(chains[label])
        result["chains"].setdefault(label, []).append(us)
        print(f"step's 89 projections as {label}: {us:.1f} us ({total_bytes / us / 1e6:.2f} TB/s)", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
