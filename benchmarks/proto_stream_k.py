"""Prototype check of linear's ``tma_stream`` (stream-K after whole waves) before certifying it: on the prompt-row
shapes where the certified ``tma`` settings lose most to cuBLAS, each ``tma_stream`` candidate's output against
float64 and its time against the shape's certified setting and ``F.linear``, side by side in one process.

    PYTHONPATH=. python -m benchmarks.proto_stream_k     # on a GPU of a certified class (H200)

Each is timed as certify times (a CUDA graph of calls on inputs rotated over >= 128 MiB, so that nothing stays in
L2; median of replays): a call made from Python pays the host's launch and descriptor set-up, which the engine's
graphs do not (timed so, 2026-12-04 first call: 50-150 us a call for 6-60 us of work). Certify's own timer decides
what ships; this only tells whether certifying is worth the device time.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import torch
import torch.nn.functional as F

from neurobrix import tables
from neurobrix.ops import linear as L

SHAPES = [
    (2048, 1152, 896),
    (1024, 896, 4864),
    (1024, 4608, 3584),
    (1024, 2560, 2048),
    (1024, 1152, 896),
    (2048, 1536, 1536),
    (1024, 3072, 3072),
    (4096, 1152, 896),
    (4096, 4096, 4096),
]


def graph_us(
    call: Callable[[torch.Tensor, torch.Tensor], object], sets: list[tuple[torch.Tensor, torch.Tensor]]
) -> float:
    """Microseconds a call: one CUDA graph of a call on every input set in turn, replayed; median of 15."""
    for x, w in sets:
        call(x, w)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for x, w in sets:
                call(x, w)
    torch.cuda.synchronize()
    times = []
    for _ in range(15):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / len(sets))
    return statistics.median(times)


def main() -> None:
    index = tables.load().index("nvidia-h200", "linear")

    def certified_setting(shape: dict[str, int]) -> dict:
        for entry in index.entries:
            if "bf16" in entry.domain.dtypes and all(
                first <= shape[name] and (last is None or shape[name] <= last)
                for name, first, last in entry.domain.ranges
            ):
                return dict(entry.config)
        raise SystemExit(f"no bf16 entry holds {shape}")

    domain = {"M": (513, None), "N": (1, None), "K": (1, None)}
    streams = [c for c in L.candidates(domain, interpreter=False) if c["variant"] == "tma_stream"]
    for M, N, K in SHAPES:
        per_set = (M * K + N * K + M * N) * 2
        sets = [
            (
                torch.randn(M, K, device="cuda", dtype=torch.bfloat16),
                torch.randn(N, K, device="cuda", dtype=torch.bfloat16) / K**0.5,
            )
            for _ in range(max(2, -(-(128 << 20) // per_set)))
        ]
        x, w = sets[0]
        ref = x.double() @ w.double().T
        certified = certified_setting({"M": M, "N": N, "K": K})
        t_cert = graph_us(lambda x, w: L.linear(x, w, config=certified), sets)
        t_cublas = graph_us(F.linear, sets)
        print(
            f"{M}x{N}x{K}: certified {certified['variant']} {t_cert:.2f} us, cuBLAS {t_cublas:.2f} us "
            f"({t_cublas / t_cert:.3f}x)",
            flush=True,
        )
        for c in streams:
            y = L.linear(x, w, config=c)
            err = (y.double() - ref).abs().max().item()
            t = graph_us(lambda x, w, c=c: L.linear(x, w, config=c), sets)
            tile = f"{c['BLOCK_M']}x{c['BLOCK_N']}x{c['BLOCK_K']} w{c['num_warps']} s{c['num_stages']}"
            print(
                f"    tma_stream {tile}: {t:.2f} us, {t_cert / t:.3f}x certified, {t_cublas / t:.3f}x cuBLAS, "
                f"max |err| {err:.3g}",
                flush=True,
            )


if __name__ == "__main__":
    main()
