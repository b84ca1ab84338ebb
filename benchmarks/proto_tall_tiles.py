"""Prototype (2026-12-05): would linear on prompt rows gain from 256-row tiles, or from two programs a multiprocessor?

The prompt-row shapes furthest behind cuBLAS (`benchmarks/results/2026-12-05d/`) are mostly short in K and hold a
count of 128 x 128 tiles just past a multiple of the 132 multiprocessors (2,048 x 1,152 x 896: 144 tiles, two
rounds of its persistent walk where cuBLAS takes one). Two settings the candidates do not offer, both on the
engine's own kernels (no new kernel):

- **256 x 128 tiles** (8 warps, two warpgroups of 128 rows): 2,048 x 1,152 is 72 of them, one round, and each tile
  pays its prologue and epilogue once for twice the MMA work (K = 896 is only 14 steps of 64).
- **two programs a multiprocessor**: the persistent grid at twice the multiprocessors, for settings whose shared
  memory fits twice (128 x 128 tiles, 2-3 stages): one program's epilogue and prologue overlap the other's MMAs.

Each prompt-row bf16 entry of the class's linear table is timed with certify's timer on certify's timing inputs:
cuBLAS, the certified setting, then each setting below, each result checked against float64 before it is timed.

    PYTHONPATH=. python -m benchmarks.proto_tall_tiles --json OUT.json [--minutes 3.5]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import torch
import torch.nn.functional as F

import neurobrix.ops.linear as linear_module
from benchmarks.proto_host_tma import geomean
from conformance.certify import Task, _graph_times, timing_sets
from neurobrix import tables
from neurobrix.gpu import detect_class
from neurobrix.ops.linear import linear

_ENGINE_PROGRAMS = linear_module._programs


def _programs_times(factor: int):
    def programs(device: torch.device, tiles: int) -> int:
        return min(tiles, factor * _ENGINE_PROGRAMS(device, tiles))

    return programs


def _split(bm: int, bn: int, sub: int, ws: bool, w: int, s: int, bk: int = 64) -> dict[str, Any]:
    return {
        "variant": "tma_split",
        "BLOCK_M": bm,
        "BLOCK_N": bn,
        "BLOCK_K": bk,
        "GROUP_M": 8,
        "SPLIT_K": 1,
        "SUBTILE": sub,
        "WARP_SPECIALIZE": ws,
        "num_warps": w,
        "num_stages": s,
    }


def _tma(bm: int, bn: int, w: int, s: int, bk: int = 64) -> dict[str, Any]:
    return {
        "variant": "tma",
        "BLOCK_M": bm,
        "BLOCK_N": bn,
        "BLOCK_K": bk,
        "GROUP_M": 8,
        "num_warps": w,
        "num_stages": s,
    }


# name: (setting, programs per multiprocessor)
SETTINGS: dict[str, tuple[dict[str, Any], int]] = {
    "tma 256x128 w8 s3": (_tma(256, 128, 8, 3), 1),
    "split 256x128 sub w8 s4": (_split(256, 128, 1, False, 8, 4), 1),
    "split 256x128 sub w8 s3": (_split(256, 128, 1, False, 8, 3), 1),
    "split 256x128 ws w8 s3": (_split(256, 128, 0, True, 8, 3), 1),
    "split 256x128 sub ws w8 s3": (_split(256, 128, 1, True, 8, 3), 1),
    "split 256x64 sub w8 s4": (_split(256, 64, 1, False, 8, 4), 1),
    "x2 tma 128x128 w4 s2": (_tma(128, 128, 4, 2), 2),
    "x2 split 128x128 sub w4 s3": (_split(128, 128, 1, False, 4, 3), 2),
    "x2 split 128x128 sub w8 s3": (_split(128, 128, 1, False, 8, 3), 2),
    "x2 split 128x64 sub w4 s4": (_split(128, 64, 1, False, 4, 4), 2),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True)
    parser.add_argument("--minutes", type=float, default=3.5)
    parser.add_argument("--only", default="", help="time only the settings whose name holds this text")
    parser.add_argument("--class", dest="class_id", help="the class whose entries to time (default: this GPU's)")
    args = parser.parse_args()
    for name in [n for n in SETTINGS if args.only not in n]:
        del SETTINGS[name]
    deadline = time.monotonic() + args.minutes * 60
    loaded = tables.load()
    table = loaded.index(args.class_id or detect_class(loaded).id, "linear")
    picked = []
    for e in table.entries:
        if "bf16" not in e.domain.dtypes or dict((n, a) for n, a, _ in e.domain.ranges)["M"] < 513:
            continue
        picked.append((e, Task("linear", "bf16", e.domain.ranges)))
    print(f"{len(picked)} bf16 prompt-row entries, {len(SETTINGS)} settings", flush=True)
    rows: list[dict[str, Any]] = []
    failed: dict[str, str] = {}
    for entry, task in picked:
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
            "config": entry.config,
            "cublas": timed(lambda **k: F.linear(k["x"], k["weight"], k["bias"])),
            "certified": timed(lambda **k: linear(**k, config=entry.config)),
            "t": {},
        }
        for name, (cfg, factor) in SETTINGS.items():
            if name in failed:
                continue
            linear_module._programs = _programs_times(factor)
            op = (lambda cfg: lambda **k: linear(**k, config=cfg))(cfg)
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
            finally:
                linear_module._programs = _ENGINE_PROGRAMS
        best = min(row["t"], key=row["t"].get) if row["t"] else None
        row["best_new"] = best
        print(
            json.dumps(
                {
                    "shape": f"{shape['M']}x{shape['N']}x{shape['K']}",
                    "cublas": round(row["cublas"], 2),
                    "certified": round(row["certified"], 2),
                    "best_new": best,
                    "best_new_us": round(row["t"].get(best, float("nan")), 2),
                    "cublas/certified": round(row["cublas"] / row["certified"], 3),
                    "cublas/best(cert,new)": round(row["cublas"] / min(row["certified"], *row["t"].values()), 3),
                }
            ),
            flush=True,
        )
        rows.append(row)
    totals = {
        "entries": len(rows),
        "geomean cublas/certified": geomean([r["cublas"] / r["certified"] for r in rows]),
        "geomean cublas/best(certified, new)": geomean(
            [r["cublas"] / min([r["certified"], *r["t"].values()]) for r in rows]
        ),
        "under 0.9 certified": sum(1 for r in rows if r["cublas"] / r["certified"] < 0.9),
        "under 0.9 best": sum(1 for r in rows if r["cublas"] / min([r["certified"], *r["t"].values()]) < 0.9),
        "wins per setting": {
            k: sum(1 for r in rows if r["best_new"] == k and r["t"][k] < r["certified"]) for k in SETTINGS
        },
        "failed": failed,
    }
    print(json.dumps(totals, indent=1), flush=True)
    with open(args.json, "w") as f:
        json.dump({"rows": rows, "summary": totals}, f)


if __name__ == "__main__":
    main()
