"""Prototype check of linear's ``tma_stream`` (stream-K after whole waves) before certifying it: on the prompt-row
shapes where the certified ``tma`` settings lose most to cuBLAS, each ``tma_stream`` candidate's output against
float64 and its time against the shape's certified setting and ``F.linear``, side by side in one process.

    PYTHONPATH=. python -m benchmarks.proto_stream_k     # on a GPU of a certified class (H200)

Timing is triton.testing.do_bench (median of repeats, L2 flushed between them); certify's own timer decides what
ships. This only tells whether certifying is worth the device time.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
import triton.testing

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
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) / K**0.5
        ref = x.double() @ w.double().T
        certified = certified_setting({"M": M, "N": N, "K": K})
        t_cert = triton.testing.do_bench(lambda: L.linear(x, w, config=certified))
        t_cublas = triton.testing.do_bench(lambda: F.linear(x, w))
        print(
            f"{M}x{N}x{K}: certified {certified['variant']} {t_cert * 1e3:.2f} us, cuBLAS {t_cublas * 1e3:.2f} us "
            f"({t_cublas / t_cert:.3f}x)",
            flush=True,
        )
        for c in streams:
            y = L.linear(x, w, config=c)
            err = (y.double() - ref).abs().max().item()
            t = triton.testing.do_bench(lambda c=c: L.linear(x, w, config=c))
            tile = f"{c['BLOCK_M']}x{c['BLOCK_N']}x{c['BLOCK_K']} w{c['num_warps']} s{c['num_stages']}"
            print(
                f"    tma_stream {tile}: {t * 1e3:.2f} us, {t_cert / t:.3f}x certified, {t_cublas / t:.3f}x cuBLAS, "
                f"max |err| {err:.3g}",
                flush=True,
            )


if __name__ == "__main__":
    main()
