"""One-off prototype (removed once recorded): linear on the slowest prompt-row shapes (few output tiles, small
K) against cuBLAS and the certified setting, with tile shapes the candidate space does not offer (64 x 64,
128 x 64, 64 x 128 with 3 and 5 stages, GROUP_M 1 and 4), each timed with certify's timer on certify's timing
inputs.

    PYTHONPATH=. python -m benchmarks.proto_small_tiles --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import math
import time

import torch
import torch.nn.functional as F

from conformance.certify import Task, _graph_times, timing_sets
from neurobrix import tables
from neurobrix.gpu import detect_class
from neurobrix.ops.linear import linear

SHAPES = {
    (2048, 1152, 896),
    (1024, 896, 4864),
    (1024, 1152, 896),
    (1024, 1536, 1536),
    (4096, 1152, 896),
    (1024, 2560, 2048),
    (1024, 896, 896),
    (2048, 2560, 2048),
    (1024, 4608, 3584),
    (1024, 1536, 8960),
    (4096, 896, 896),
    (1024, 3072, 3072),
    (1024, 3072, 2048),
    (2048, 1536, 1536),
    (1024, 2048, 1536),
    (2048, 896, 896),
}


def configs() -> dict[str, dict]:
    found = {}
    for variant, bm, bn, w, st, g in (
        ("tiled", 64, 64, 4, 3, 8),
        ("tiled", 64, 64, 4, 5, 8),
        ("tiled", 64, 64, 2, 4, 8),
        ("tiled", 128, 64, 4, 4, 8),
        ("tiled", 128, 64, 4, 5, 8),
        ("tiled", 64, 128, 4, 3, 8),
        ("tiled", 64, 128, 4, 5, 8),
        ("tiled", 64, 128, 4, 4, 1),
        ("tiled", 128, 128, 4, 4, 1),
        ("tiled", 128, 128, 4, 4, 4),
        ("tiled", 128, 128, 4, 5, 8),
        ("tma", 64, 64, 4, 4, 8),
        ("tma", 128, 64, 4, 4, 8),
        ("tma", 64, 128, 4, 5, 8),
    ):
        cfg = {
            "variant": variant,
            "BLOCK_M": bm,
            "BLOCK_N": bn,
            "BLOCK_K": 64,
            "GROUP_M": g,
            "num_warps": w,
            "num_stages": st,
        }
        found[f"{variant} bm{bm} bn{bn} w{w} s{st} g{g}"] = cfg
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    parser.add_argument("--minutes", type=float, default=5)
    args = parser.parse_args()
    deadline = time.monotonic() + args.minutes * 60
    loaded = tables.load()
    table = loaded.index(detect_class(loaded).id, "linear")
    rows, failed = [], {}
    for entry in table.entries:
        ranges = entry.domain.ranges
        if "bf16" not in entry.domain.dtypes or dict((n, a) for n, a, _ in ranges)["M"] < 513:
            continue
        task = Task("linear", "bf16", ranges)
        sets = timing_sets(task)
        shape = sets[0].shape
        if (shape["M"], shape["N"], shape["K"]) not in SHAPES or time.monotonic() > deadline:
            continue

        def timed(op) -> float:
            def run_all() -> None:
                for case in sets:
                    op(**case.args)

            return _graph_times(run_all, len(sets))[1]

        row = {
            "shape": shape,
            "cublas": timed(lambda **a: F.linear(a["x"], a["weight"], a["bias"])),
            "certified": timed(lambda **a: linear(**a, config=entry.config)),
            "config": entry.config,
            "t": {},
        }
        a = sets[0].args
        ref = F.linear(a["x"].double(), a["weight"].double(), None if a["bias"] is None else a["bias"].double())
        for name, cfg in configs().items():
            if name in failed:
                continue
            try:
                y = linear(**a, config=cfg)
                err = float((y.double() - ref).abs().max() / ref.abs().max())
                if err > 0.02:
                    failed[name] = f"wrong: {err}"
                    continue
                row["t"][name] = timed(lambda **kw: linear(**kw, config=cfg))
            except Exception as exc:  # a setting that does not compile or run
                failed[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
                torch.cuda.synchronize()
        best = min(row["t"], key=row["t"].get) if row["t"] else None
        row["best"] = best
        print(
            json.dumps(
                {
                    "shape": shape,
                    "cublas": round(row["cublas"], 2),
                    "certified": round(row["certified"], 2),
                    "best": best,
                    "best_us": round(row["t"].get(best, float("nan")), 2),
                    "cublas/certified": round(row["cublas"] / row["certified"], 3),
                    "cublas/best": round(row["cublas"] / min(row["certified"], row["t"].get(best, 1e9)), 3),
                }
            ),
            flush=True,
        )
        rows.append(row)
    g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
    summary = {
        "entries": len(rows),
        "geomean cublas/certified": g([r["cublas"] / r["certified"] for r in rows]),
        "geomean cublas/best-of-all": g([r["cublas"] / min([r["certified"], *r["t"].values()]) for r in rows]),
        "min cublas/best-of-all": min(r["cublas"] / min([r["certified"], *r["t"].values()]) for r in rows),
        "failed": failed,
    }
    print(json.dumps(summary, indent=1), flush=True)
    json.dump({"rows": rows, "summary": summary}, open(args.json, "w"))


if __name__ == "__main__":
    main()
