"""Which kernel cuBLAS runs for each of linear's bf16 prompt-row entries (2026-12-05): the tile shape, stages and
cluster its name encodes say what the certified settings are measured against.

    PYTHONPATH=. python -m benchmarks.cublas_kernels --json OUT.json [--class nvidia-h200]
"""

from __future__ import annotations

import argparse
import json

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from neurobrix import tables


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True)
    parser.add_argument("--class", dest="class_id", default="nvidia-h200")
    args = parser.parse_args()
    table = tables.load().index(args.class_id, "linear")
    rows = []
    for e in table.entries:
        ranges = {n: (lo, hi) for n, lo, hi in e.domain.ranges}
        if "bf16" not in e.domain.dtypes or ranges["M"][0] < 513:
            continue
        m, n, k = ranges["M"][1] or ranges["M"][0], ranges["N"][0], ranges["K"][0]
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        F.linear(x, w)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                F.linear(x, w)
            torch.cuda.synchronize()
        kernels = sorted({ev.name for ev in prof.events() if ev.device_type.name == "CUDA"})
        row = {"shape": f"{m}x{n}x{k}", "kernels": kernels}
        print(json.dumps(row), flush=True)
        rows.append(row)
    with open(args.json, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
