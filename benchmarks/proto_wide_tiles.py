"""Prototype (2026-12-05): would linear on prompt rows gain from tiles whose width is not a power of two?

The prompt-row shapes furthest behind cuBLAS mostly hold a count of 128 x 128 tiles just past a multiple of the
132 multiprocessors (2,048 x 1,152 x 896: 144 tiles, so a second wave of 12 tiles while 120 multiprocessors
idle; `benchmarks/results/2026-12-04m`). Triton's blocks are powers of two, so the certified candidates can
only halve or double a tile. Hopper's MMA takes any width that is a multiple of 8, and a tile can be made of two
blocks side by side: 128 + 32 = 160 or 128 + 64 = 192 columns, each K step one load of x and two of the weights,
two dots into two accumulators, two stores. 2,048 x 1,152 at 128 x 160 is 16 x 8 = 128 tiles, one wave of
1.25 tiles' work where the 128 x 128 walk takes two.

Here each prompt-row bf16 entry of the class's linear table whose tile count a wide tile would lower by a wave
(and a few that it would not, as controls) is timed with certify's timer on certify's timing inputs: cuBLAS, the
certified setting and the wide kernel at a few settings, each result checked against float64 before it is timed.

    PYTHONPATH=. python -m benchmarks.proto_wide_tiles --json OUT.json [--minutes 5]

Measured on 2026-12-05 (`benchmarks/results/2026-12-05d/`): slower than the certified setting on all 18 shapes, by
1.1-1.7x (2,048 x 1,152 x 896: 14.1 us at best against 12.9 us certified and 8.9 us for cuBLAS). The engine's own
`tma` with the second block, offered to certify for all 81 bf16 prompt-row shapes, won none of the 56 it reached,
and was taken out again.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from typing import Any

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from benchmarks.proto_host_tma import geomean
from conformance.certify import Task, _graph_times, timing_sets
from neurobrix import tables
from neurobrix.gpu import detect_class
from neurobrix.ops.linear import linear


@triton.jit
def _wide_kernel(
    x_desc,
    w_desc,
    w2_desc,
    y_desc,
    y2_desc,
    b_ptr,
    M,
    N,
    K,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_N2: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
):
    WIDE: tl.constexpr = BLOCK_N + BLOCK_N2
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, WIDE)
    num_pid_in_group = GROUP_M * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(
        tl.program_id(0), num_pid_m * num_pid_n, tl.num_programs(0), flatten=True, warp_specialize=WARP_SPECIALIZE
    ):
        group_id = tile // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + ((tile % num_pid_in_group) % group_size_m)
        pid_n = (tile % num_pid_in_group) // group_size_m
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        acc2 = tl.zeros((BLOCK_M, BLOCK_N2), dtype=tl.float32)
        for kt in range(k_tiles):
            a = x_desc.load([pid_m * BLOCK_M, kt * BLOCK_K])
            b = w_desc.load([pid_n * WIDE, kt * BLOCK_K])
            b2 = w2_desc.load([pid_n * WIDE + BLOCK_N, kt * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
            acc2 = tl.dot(a, b2.T, acc2)
        if HAS_BIAS:
            offs = pid_n * WIDE + tl.arange(0, BLOCK_N)
            acc += tl.load(b_ptr + offs, mask=offs < N, other=0.0).to(tl.float32)[None, :]
            offs2 = pid_n * WIDE + BLOCK_N + tl.arange(0, BLOCK_N2)
            acc2 += tl.load(b_ptr + offs2, mask=offs2 < N, other=0.0).to(tl.float32)[None, :]
        y_desc.store([pid_m * BLOCK_M, pid_n * WIDE], acc.to(y_desc.dtype))
        y2_desc.store([pid_m * BLOCK_M, pid_n * WIDE + BLOCK_N], acc2.to(y2_desc.dtype))


SMS = 0


def wide_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, *, config: dict[str, Any]):
    bm, bn, bn2, bk = config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_N2"], config["BLOCK_K"]
    (M, K), N = x.shape, weight.shape[0]
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn + bn2)
    _wide_kernel[(min(tiles, SMS),)](
        TensorDescriptor.from_tensor(x, [bm, bk]),
        TensorDescriptor.from_tensor(weight, [bn, bk]),
        TensorDescriptor.from_tensor(weight, [bn2, bk]),
        TensorDescriptor.from_tensor(y, [bm, bn]),
        TensorDescriptor.from_tensor(y, [bm, bn2]),
        bias if bias is not None else y,
        M,
        N,
        K,
        HAS_BIAS=bias is not None,
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_N2=bn2,
        BLOCK_K=bk,
        GROUP_M=config.get("GROUP_M", 8),
        WARP_SPECIALIZE=config.get("WS", False),
        num_warps=config["num_warps"],
        num_stages=config["num_stages"],
    )
    return y


SETTINGS = {
    f"{bm}x({bn}+{bn2})x{bk} w{w} s{s}" + (" ws" if ws else ""): dict(
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_N2=bn2, BLOCK_K=bk, num_warps=w, num_stages=s, WS=ws
    )
    for bm, bn, bn2, bk, w, s, ws in [
        (128, 128, 32, 64, 4, 4, False),
        (128, 128, 32, 64, 8, 4, False),
        (128, 128, 32, 64, 8, 3, False),
        (128, 128, 64, 64, 4, 4, False),
        (128, 128, 64, 64, 8, 4, False),
        (128, 128, 64, 64, 8, 3, False),
        (128, 128, 32, 64, 4, 4, True),
        (128, 128, 64, 64, 8, 3, True),
    ]
}


def waves(M: int, N: int, bm: int, bn: int) -> float:
    """The tile work of the busiest multiprocessor, in 128 x 128 tiles."""
    return math.ceil(math.ceil(M / bm) * math.ceil(N / bn) / SMS) * bm * bn / (128 * 128)


def main() -> None:
    global SMS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True)
    parser.add_argument("--minutes", type=float, default=5)
    args = parser.parse_args()
    deadline = time.monotonic() + args.minutes * 60
    SMS = torch.cuda.get_device_properties(0).multi_processor_count
    loaded = tables.load()
    table = loaded.index(detect_class(loaded).id, "linear")
    picked = []
    for e in table.entries:
        if "bf16" not in e.domain.dtypes or dict((n, a) for n, a, _ in e.domain.ranges)["M"] < 513:
            continue
        task = Task("linear", "bf16", e.domain.ranges)
        shape = timing_sets(task)[0].shape
        M, N = shape["M"], shape["N"]
        gain = waves(M, N, 128, 128) / min(waves(M, N, 128, 160), waves(M, N, 128, 192))
        picked.append((gain, e, task))
    wins = [p for p in picked if p[0] > 1.05]
    controls = [p for p in picked if p[0] <= 1.05][:: max(1, len([p for p in picked if p[0] <= 1.05]) // 4)][:4]
    print(f"{len(wins)} entries a wide tile would shorten by a wave, {len(controls)} controls", flush=True)
    rows: list[dict[str, Any]] = []
    failed: dict[str, str] = {}
    for gain, entry, task in sorted(wins, key=lambda p: -p[0]) + controls:
        if time.monotonic() > deadline:
            break
        sets = timing_sets(task)
        shape = sets[0].shape

        def timed(op) -> float:
            def run_all() -> None:
                for case in sets:
                    op(**case.args)

            return _graph_times(run_all, len(sets))[1]

        a = sets[0].args
        ref = F.linear(a["x"].double(), a["weight"].double(), None if a["bias"] is None else a["bias"].double())
        row: dict[str, Any] = {
            "shape": shape,
            "model_gain": gain,
            "config": entry.config,
            "cublas": timed(lambda **k: F.linear(k["x"], k["weight"], k["bias"])),
            "certified": timed(lambda **k: linear(**k, config=entry.config)),
            "t": {},
        }
        for name, cfg in SETTINGS.items():
            if name in failed:
                continue
            op = (lambda cfg: lambda **k: wide_linear(**k, config=cfg))(cfg)
            try:
                y = op(**a)
                err = float((y.double() - ref).abs().max() / ref.abs().max())
                if not err < 0.02:
                    failed[name] = f"wrong at {shape}: {err}"
                    continue
                row["t"][name] = timed(op)
            except Exception as exc:  # a setting that does not compile or fit
                failed[name] = f"{type(exc).__name__}: {str(exc)[:160]}"
                torch.cuda.synchronize()
        best = min(row["t"], key=row["t"].get) if row["t"] else None
        row["best_wide"] = best
        print(
            json.dumps(
                {
                    "shape": f"{shape['M']}x{shape['N']}x{shape['K']}",
                    "model_gain": round(gain, 2),
                    "cublas": round(row["cublas"], 2),
                    "certified": round(row["certified"], 2),
                    "best_wide": best,
                    "best_wide_us": round(row["t"].get(best, float("nan")), 2),
                    "cublas/certified": round(row["cublas"] / row["certified"], 3),
                    "cublas/best(cert,wide)": round(row["cublas"] / min(row["certified"], *row["t"].values()), 3),
                }
            ),
            flush=True,
        )
        rows.append(row)
    totals = {
        "entries": len(rows),
        "geomean cublas/certified": geomean([r["cublas"] / r["certified"] for r in rows]),
        "geomean cublas/best(certified, wide)": geomean(
            [r["cublas"] / min([r["certified"], *r["t"].values()]) for r in rows]
        ),
        "wins per wide setting": {k: sum(1 for r in rows if r["best_wide"] == k) for k in SETTINGS},
        "failed": failed,
    }
    print(json.dumps(totals, indent=1), flush=True)
    with open(args.json, "w") as f:
        json.dump({"rows": rows, "summary": totals}, f)


if __name__ == "__main__":
    main()
