"""Prototype (2026-12-04): would linear on prompt rows gain from TMA descriptors made on the host?

linear's ``tma`` and ``tma_split`` variants make their three tensor descriptors inside the kernel
(``tl.make_tensor_descriptor``): every program writes them to global scratch and fences them before its first
bulk copy, on the critical path of shapes whose whole kernel lasts 6-30 us (the slowest prompt-row shapes
against cuBLAS, 2026-12-02c). Triton also takes descriptors built on the host
(``triton.tools.tensor_descriptor.TensorDescriptor``), passed as kernel parameters: nothing to build or fence
in the kernel. Here the same persistent walk takes host descriptors, and each prompt-row bf16 entry of the
class's linear table is timed with certify's timer on certify's timing inputs:

  cuBLAS, the certified setting, the engine's ``tma`` kernel at a few settings, the host-descriptor kernel at
  the same settings (the A/B of where the descriptors are made) and at settings the candidates do not offer
  (BLOCK_K 128, 64 x 64 tiles, warp specialisation without a split).

Each result is checked against float64 before it is timed.

    PYTHONPATH=. python -m benchmarks.proto_host_tma --json OUT.json [--minutes 6]
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

from conformance.certify import Task, _graph_times, timing_sets
from neurobrix import tables
from neurobrix.gpu import detect_class
from neurobrix.ops.linear import linear


@triton.jit
def _host_tma_kernel(
    x_desc,
    w_desc,
    y_desc,
    b_ptr,
    M,
    N,
    K,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
    SUBTILE: tl.constexpr,
):
    STORE_N: tl.constexpr = BLOCK_N // 2 if SUBTILE else BLOCK_N
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
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
        for kt in range(k_tiles):
            a = x_desc.load([pid_m * BLOCK_M, kt * BLOCK_K])
            b = w_desc.load([pid_n * BLOCK_N, kt * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        if HAS_BIAS:
            offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
            acc += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
        if SUBTILE:
            left, right = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, STORE_N)), (0, 2, 1)))
            y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], left.to(y_desc.dtype))
            y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + STORE_N], right.to(y_desc.dtype))
        else:
            y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(y_desc.dtype))


SMS = 0


def host_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, *, config: dict[str, Any]):
    bm, bn, bk = config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"]
    (M, K), N = x.shape, weight.shape[0]
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    sub = config.get("SUBTILE", 0)
    x_desc = TensorDescriptor.from_tensor(x, [bm, bk])
    w_desc = TensorDescriptor.from_tensor(weight, [bn, bk])
    y_desc = TensorDescriptor.from_tensor(y, [bm, bn // 2 if sub else bn])
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    programs = min(tiles, SMS) if config.get("persistent", True) else tiles
    _host_tma_kernel[(programs,)](
        x_desc,
        w_desc,
        y_desc,
        bias if bias is not None else y,
        M,
        N,
        K,
        HAS_BIAS=bias is not None,
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_K=bk,
        GROUP_M=config.get("GROUP_M", 8),
        WARP_SPECIALIZE=config.get("WS", False),
        SUBTILE=sub,
        num_warps=config["num_warps"],
        num_stages=config["num_stages"],
    )
    return y


# (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages): the engine's tma settings, timed both ways
SAME = [(128, 128, 64, 4, 3), (128, 128, 64, 8, 4), (128, 256, 64, 8, 3), (64, 256, 64, 4, 4)]
# host-descriptor settings the candidates do not offer
MORE = [
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=4, num_stages=5),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=128, num_warps=8, num_stages=2),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=128, num_warps=4, num_stages=3, SUBTILE=1),
    dict(BLOCK_M=64, BLOCK_N=128, BLOCK_K=64, num_warps=4, num_stages=4),
    dict(BLOCK_M=64, BLOCK_N=128, BLOCK_K=128, num_warps=4, num_stages=3),
    dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, num_warps=4, num_stages=4),
    dict(BLOCK_M=128, BLOCK_N=64, BLOCK_K=64, num_warps=4, num_stages=4),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=4, num_stages=4, WS=True),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=8, num_stages=4, WS=True),
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, num_warps=8, num_stages=3, WS=True),
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, num_warps=8, num_stages=4, SUBTILE=1),
    dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, num_warps=8, num_stages=3, WS=True, SUBTILE=1),
]


def settings() -> dict[str, tuple[str, dict[str, Any]]]:
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for bm, bn, bk, w, s in SAME:
        cfg = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w, num_stages=s)
        found[f"dev {bm}x{bn}x{bk} w{w} s{s}"] = ("device", {"variant": "tma", **cfg})
        found[f"host {bm}x{bn}x{bk} w{w} s{s}"] = ("host", cfg)
    for cfg in MORE:
        name = (
            f"host {cfg['BLOCK_M']}x{cfg['BLOCK_N']}x{cfg['BLOCK_K']} w{cfg['num_warps']} s{cfg['num_stages']}"
            + (" ws" if cfg.get("WS") else "")
            + (" sub" if cfg.get("SUBTILE") else "")
        )
        found[name] = ("host", cfg)
    return found


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main() -> None:
    global SMS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True)
    parser.add_argument("--minutes", type=float, default=6)
    args = parser.parse_args()
    deadline = time.monotonic() + args.minutes * 60
    SMS = torch.cuda.get_device_properties(0).multi_processor_count
    loaded = tables.load()
    table = loaded.index(detect_class(loaded).id, "linear")
    entries = [
        e
        for e in table.entries
        if "bf16" in e.domain.dtypes and dict((n, a) for n, a, _ in e.domain.ranges)["M"] >= 513
    ]
    # smallest work first: where fixed costs weigh most
    entries.sort(key=lambda e: math.prod(Task("linear", "bf16", e.domain.ranges).domain()[d][0] or 1 for d in "NK"))
    rows: list[dict[str, Any]] = []
    failed: dict[str, str] = {}
    for entry in entries:
        if time.monotonic() > deadline:
            break
        task = Task("linear", "bf16", entry.domain.ranges)
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
        for name, (kind, cfg) in settings().items():
            if name in failed:
                continue
            launcher = linear if kind == "device" else host_linear
            op = (lambda launcher, cfg: lambda **k: launcher(**k, config=cfg))(launcher, cfg)
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
        host = {k: v for k, v in row["t"].items() if k.startswith("host")}
        best_host = min(host, key=host.get) if host else None
        row["best_host"] = best_host
        ab = [row["t"][f"dev {n[5:]}"] / row["t"][n] for n in host if f"dev {n[5:]}" in row["t"]]
        summary = {
            "shape": f"{shape['M']}x{shape['N']}x{shape['K']}",
            "cublas": round(row["cublas"], 2),
            "certified": round(row["certified"], 2),
            "best_host": best_host,
            "best_host_us": round(host.get(best_host, float("nan")), 2),
            "cublas/certified": round(row["cublas"] / row["certified"], 3),
            "cublas/best(cert,host)": round(row["cublas"] / min(row["certified"], *host.values()), 3),
            "dev/host same setting": [round(x, 3) for x in ab],
        }
        print(json.dumps(summary), flush=True)
        rows.append(row)
    totals = {
        "entries": len(rows),
        "geomean cublas/certified": geomean([r["cublas"] / r["certified"] for r in rows]),
        "geomean cublas/best(certified, host)": geomean(
            [r["cublas"] / min([r["certified"], *(v for k, v in r["t"].items() if k.startswith("host"))]) for r in rows]
        ),
        "geomean dev/host same setting": geomean(
            [
                r["t"][f"dev {k[5:]}"] / v
                for r in rows
                for k, v in r["t"].items()
                if k.startswith("host") and f"dev {k[5:]}" in r["t"]
            ]
        ),
        "wins per host setting": {k: sum(1 for r in rows if r["best_host"] == k) for k in settings()},
        "failed": failed,
    }
    print(json.dumps(totals, indent=1), flush=True)
    with open(args.json, "w") as f:
        json.dump({"rows": rows, "summary": totals}, f)


if __name__ == "__main__":
    main()
