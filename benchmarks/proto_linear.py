"""One-off prototype (removed once recorded): linear on prompt rows, the certified setting against cuBLAS and
against candidate settings of the new ``tma_split`` variant (and ``tma`` with 64-row tiles), each timed with
certify's timer on certify's timing inputs of every bf16 entry with M >= 513.

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
    found = {}
    base = {"BLOCK_K": 64, "GROUP_M": 8}
    for bm, bn, w, st in ((128, 256, 8, 3), (128, 128, 8, 4), (128, 128, 4, 4), (64, 256, 4, 4), (64, 128, 4, 4)):
        for sub in (0, 1):
            for ws in (False, True) if ws_ok else (False,):
                if sub and bn == 128 and bm == 64:
                    continue
                name = f"ts bm{bm} bn{bn} w{w} s{st} sub{sub} ws{int(ws)}"
                found[name] = {
                    "variant": "tma_split",
                    "BLOCK_M": bm,
                    "BLOCK_N": bn,
                    **base,
                    "SPLIT_K": 1,
                    "SUBTILE": sub,
                    "WARP_SPECIALIZE": ws,
                    "num_warps": w,
                    "num_stages": st,
                }
    found["ts bm128 bn256 w8 s4 sub1 ws0"] = {
        "variant": "tma_split",
        "BLOCK_M": 128,
        "BLOCK_N": 256,
        **base,
        "SPLIT_K": 1,
        "SUBTILE": 1,
        "WARP_SPECIALIZE": False,
        "num_warps": 8,
        "num_stages": 4,
    }
    tiles = math.ceil(M / 128) * math.ceil(N / 128)
    if tiles < 264:
        for bm, bn, w, st in ((128, 128, 8, 4), (128, 128, 4, 4), (128, 256, 8, 3), (64, 128, 4, 4)):
            for sk in (2, 3, 4):
                name = f"ts bm{bm} bn{bn} w{w} s{st} split{sk}"
                found[name] = {
                    "variant": "tma_split",
                    "BLOCK_M": bm,
                    "BLOCK_N": bn,
                    **base,
                    "SPLIT_K": sk,
                    "SUBTILE": 0,
                    "WARP_SPECIALIZE": False,
                    "num_warps": w,
                    "num_stages": st,
                }
    for bn in (128, 256):
        found[f"tma bm64 bn{bn} w4 s4"] = {
            "variant": "tma",
            "BLOCK_M": 64,
            "BLOCK_N": bn,
            **base,
            "num_warps": 4,
            "num_stages": 4,
        }
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
