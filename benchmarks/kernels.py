"""Each certified kernel against its PyTorch counterpart, at every domain a tables folder certifies.

    PYTHONPATH=. python -m benchmarks.kernels [--tables DIR] [--json out.json]

For every entry of this GPU's class (``--dtypes``, default bf16), the call at the entry's top shape is
timed for the certified Triton op and for the torch backend's op (cuBLAS, SDPA, ...) side by side,
with certify's own timer (median of CUDA-event-timed replays of a CUDA graph, input sets rotated past
the L2 cache). Prints one row per entry: microseconds, the ratio torch/triton (> 1: the certified
kernel is faster) and, for linear, the achieved bandwidth against the copy rate measured in the same
run; then geomeans per kernel and for linear at decode rows (M <= 16) and prefill rows (M >= 512).
"""

from __future__ import annotations

import argparse
import functools
import json
import math

import torch
import triton.testing

from conformance.certify import Task, _graph_times, timing_sets
from neurobrix import ops, tables
from neurobrix.gpu import detect_class


def copy_bandwidth() -> float:
    """Device-to-device copy rate in bytes/s (bytes read + written), the roofline we compare with."""
    n = 1 << 28  # 512 MiB of bf16 per buffer
    src = torch.empty(n, dtype=torch.bfloat16, device="cuda")
    dst = torch.empty_like(src)
    ms = triton.testing.do_bench(lambda: dst.copy_(src), rep=100, return_mode="median")
    return 2 * src.numel() * src.element_size() / (ms / 1000)


def bench(op, sets) -> float:
    def run_all() -> None:
        for case in sets:
            op(**case.args)

    return _graph_times(run_all, len(sets))[1]


def geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", nargs="+", default=["bf16"], help="entries of these dtypes (default bf16)")
    parser.add_argument("--kernels", nargs="+", help="only these kernels")
    parser.add_argument("--max-minutes", type=float, help="stop timing new entries after about this long")
    parser.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="DIM=LO:[HI]",
        help="only entries whose domain lies inside this range of a key dimension (repeatable), e.g. M=513: "
        "for linear's prompt rows",
    )
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("benchmarks.kernels needs a GPU of a certified class")
    import time

    where = {}
    for item in args.where:
        dim, _, span = item.partition("=")
        lo, _, hi = span.partition(":")
        if not dim or not lo.isdigit() or (hi and not hi.isdigit()):
            parser.error(f"--where takes DIM=LO:[HI] with whole numbers, got {item!r}")
        where[dim] = (int(lo), int(hi) if hi else None)

    def inside(ranges) -> bool:
        for name, first, last in ranges:
            if name in where:
                lo, hi = where[name]
                if first < lo or (hi is not None and (last is None or last > hi)):
                    return False
        return True

    deadline = time.monotonic() + args.max_minutes * 60 if args.max_minutes else None
    loaded = tables.load()
    gpu_class = detect_class(loaded).id
    peak = copy_bandwidth()
    print(f"class {gpu_class}; copy bandwidth {peak / 1e12:.2f} TB/s", flush=True)
    rows = []
    for kernel in loaded.kernels(gpu_class):
        if args.kernels and kernel not in args.kernels:
            continue
        table = loaded.index(gpu_class, kernel)
        for entry in table.entries:
            if deadline is not None and time.monotonic() > deadline:
                break
            if not inside(entry.domain.ranges):
                continue
            for dtype in (d for d in entry.domain.dtypes if d in args.dtypes):
                task = Task(kernel, dtype, entry.domain.ranges)
                sets = timing_sets(task)
                ours = bench(functools.partial(ops.SPECS[kernel].launch, config=entry.config), sets)
                theirs = bench(getattr(ops.TORCH, kernel), sets)
                row = {
                    "kernel": kernel,
                    "dtype": dtype,
                    "shape": sets[0].shape,
                    "triton_us": round(ours, 2),
                    "torch_us": round(theirs, 2),
                    "torch_over_triton": round(theirs / ours, 3),
                }
                if kernel == "linear":
                    s = sets[0].shape
                    moved = (s["N"] * s["K"] + s["M"] * (s["K"] + s["N"])) * 2
                    row["triton_tb_s"] = round(moved / (ours * 1e-6) / 1e12, 2)
                    row["roofline_pct"] = round(100 * moved / (ours * 1e-6) / peak, 1)
                rows.append(row)
                print(json.dumps(row), flush=True)
    if deadline is not None and time.monotonic() > deadline:
        print(f"stopped at the time limit after {len(rows)} entries")
    groups = {"all entries": rows}
    for kernel in sorted({r["kernel"] for r in rows}):
        groups[kernel] = [r for r in rows if r["kernel"] == kernel]
    groups["linear M <= 16 (decode)"] = [r for r in rows if r["kernel"] == "linear" and r["shape"]["M"] <= 16]
    groups["linear M >= 512 (prefill)"] = [r for r in rows if r["kernel"] == "linear" and r["shape"]["M"] >= 512]
    summary = {}
    for name, group in groups.items():
        ratios = [r["torch_over_triton"] for r in group]
        if ratios:
            summary[name] = {
                "entries": len(ratios),
                "geomean_torch_over_triton": round(geomean(ratios), 3),
                "min": min(ratios),
                "max": max(ratios),
                "triton_faster": sum(x > 1 for x in ratios),
            }
            print(
                f"{name:<28} {len(ratios):>5} entries  geomean torch/triton {geomean(ratios):.3f}  "
                f"(min {min(ratios):.2f}, max {max(ratios):.2f}, triton faster on {sum(x > 1 for x in ratios)})"
            )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(
                {"class": gpu_class, "copy_tb_s": round(peak / 1e12, 3), "summary": summary, "rows": rows}, fh, indent=2
            )


if __name__ == "__main__":
    main()
