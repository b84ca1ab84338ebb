"""One-off prototype (removed once recorded): linear at one decode row (M = 1) on the smallest models'
projections, the certified setting against cuBLAS and against settings outside today's candidate space
(16 and 32 K slices, 64-deep steps, other warp counts), certify's timer on certify's timing inputs.

    PYTHONPATH=. python -m benchmarks.proto_gemv --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import math

import torch
import torch.nn.functional as F

from conformance.certify import Task, _graph_times, timing_sets
from neurobrix import tables
from neurobrix.gpu import detect_class
from neurobrix.ops.linear import linear

SHAPES = [(2560, 2048), (2048, 2048), (11264, 2048), (2048, 5632), (3072, 2048), (16384, 2048), (2048, 8192),
          (1152, 896), (896, 896), (9728, 896), (896, 4864)]


def configs() -> dict[str, dict]:
    found = {}
    for bn in (16, 32, 64):
        for bk in (64, 128, 256):
            for sk in (8, 16, 32):
                for w in (2, 4):
                    found[f"gemv bn{bn} bk{bk} split{sk} w{w}"] = {
                        "variant": "gemv", "BLOCK_N": bn, "BLOCK_K": bk, "SPLIT_K": sk, "num_warps": w,
                        "MERGE": "last"}
    for bn in (32, 64, 128):
        for sk in (16, 32):
            found[f"skinny bn{bn} bk128 split{sk}"] = {
                "variant": "skinny", "BLOCK_M": 16, "BLOCK_N": bn, "BLOCK_K": 128, "SPLIT_K": sk, "num_warps": 4,
                "num_stages": 3, "MERGE": "last"}
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    loaded = tables.load()
    table = loaded.index(detect_class(loaded).id, "linear")
    rows, failed = [], {}
    for N, K in SHAPES:
        entry = table.lookup("bf16", (1, N, K))
        task = Task("linear", "bf16", tuple((d, lo, hi) for d, lo, hi in entry.domain.ranges))
        sets = timing_sets(task)

        def timed(op) -> float:
            def run_all() -> None:
                for case in sets:
                    op(**case.args)

            return _graph_times(run_all, len(sets))[1]

        row = {"N": N, "K": K, "cublas": timed(lambda **a: F.linear(a["x"], a["weight"], a["bias"])),
               "certified": timed(lambda **a: linear(**a, config=entry.config)), "config": dict(entry.config), "t": {}}
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
        best = min(row["t"], key=row["t"].get)
        print(json.dumps({"N": N, "K": K, "cublas": round(row["cublas"], 2), "certified": round(row["certified"], 2),
                          "config": row["config"], "best": best, "best_us": round(row["t"][best], 2)}), flush=True)
        rows.append(row)
    g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
    print(json.dumps({"geomean cublas/certified": g([r["cublas"] / r["certified"] for r in rows]),
                      "geomean cublas/best": g([r["cublas"] / min([r["certified"], *r["t"].values()]) for r in rows]),
                      "failed": failed}), flush=True)
    json.dump({"rows": rows, "failed": failed}, open(args.json, "w"))


if __name__ == "__main__":
    main()
