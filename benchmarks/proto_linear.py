"""One-off prototype (removed once recorded): linear on prompt rows, the certified setting against cuBLAS and
against settings outside today's candidate space (128-deep K steps, 64-row persistent tiles), each timed
with certify's timer on certify's timing inputs of every bf16 entry with M >= 513.

    PYTHONPATH=. python -m benchmarks.proto_linear --json OUT.json
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


def configs(M: int, N: int, ws_ok: bool) -> dict[str, dict]:
    """Settings outside today's candidate space, for small K and few tiles: 128-deep K steps, 64-row tiles."""
    found = {}
    for variant, bm, bn, bk, w, st, sub in (
        ("tma", 128, 128, 128, 8, 3, None), ("tma", 128, 128, 128, 4, 3, None), ("tma", 128, 128, 128, 8, 2, None),
        ("tma", 64, 128, 128, 4, 4, None), ("tma", 64, 128, 64, 4, 4, None), ("tma", 64, 256, 128, 4, 3, None),
        ("tma_split", 128, 256, 128, 8, 2, 1), ("tma_split", 128, 128, 128, 8, 3, 1),
        ("tiled", 64, 128, 128, 4, 3, None), ("tiled", 128, 128, 128, 8, 3, None),
    ):
        cfg = {"variant": variant, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "num_warps": w,
               "num_stages": st}
        if variant == "tma_split":
            cfg.update(SPLIT_K=1, SUBTILE=sub, WARP_SPECIALIZE=False)
        found[f"{variant} bm{bm} bn{bn} bk{bk} w{w} s{st}" + (f" sub{sub}" if sub else "")] = cfg
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    parser.add_argument("--minutes", type=float, default=7)
    parser.add_argument("--no-ws", action="store_true", help="leave out warp-specialised settings")
    args = parser.parse_args()
    deadline = time.monotonic() + args.minutes * 60
    loaded = tables.load()
    cls = detect_class(loaded).id
    table = loaded.index(cls, "linear")
    rows, failed = [], {}
    for entry in table.entries:
        ranges = entry.domain.ranges
        if "bf16" not in entry.domain.dtypes or dict((n, a) for n, a, _ in ranges)["M"] < 513:
            continue
        if time.monotonic() > deadline:
            break
        task = Task("linear", "bf16", ranges)
        sets = timing_sets(task)
        shape = sets[0].shape
        M, N = shape["M"], shape["N"]

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
        for name, cfg in configs(M, N, not args.no_ws).items():
            if name in failed:
                continue
            try:
                y = linear(**a, config=cfg)
                err = float((y.double() - ref).abs().max() / ref.abs().max())
                if err > 0.02:
                    failed[name] = f"wrong: {err}"
                    continue
                row["t"][name] = timed(lambda **kw: linear(**kw, config=cfg))
            except Exception as exc:  # a candidate that does not compile or run
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
