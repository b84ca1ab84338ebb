"""`python -m conformance sweep`: every kernel on this device, in each dtype, against float64 — before tables exist.

A smoke test for a new GPU class (or a new triton): for each kernel and dtype, the first candidate of
the class's space that fits runs through Hypothesis over a catalogue-sized domain (the setting handed
to the launcher, like certify's screening), and the worst error/bound and relative error are
reported. bf16 is meaningful only on a GPU (the interpreter computes bf16 on bit patterns).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from neurobrix.cli import close_hint
from neurobrix.dtypes import torch_dtype
from neurobrix.errors import UsageError
from neurobrix.gpu import detect_class, interpreter_enabled
from neurobrix.schema import Domain, Setting

from . import candidates, check
from .specs import RECORDS


def sweep(
    dtypes: list[str], examples: int, profile_name: str, tables_root: Path, kernels: list[str] | None = None
) -> list[dict[str, Any]]:
    from neurobrix import tables as nb_tables

    unknown = sorted(set(kernels or ()) - set(RECORDS))
    if unknown:  # else nothing runs and the sweep "passes" (exit 0) having checked nothing
        hint = close_hint(unknown, RECORDS)
        raise UsageError(f"unknown kernel(s) {', '.join(unknown)}; kernels: {', '.join(RECORDS)}{hint}")
    if "bf16" in dtypes and interpreter_enabled():  # else every kernel "FAILED" in bf16: the upstream bug, not ours
        raise UsageError(
            "the Triton interpreter computes bf16 wrongly (an upstream bug), so a bf16 sweep there fails whatever the "
            "kernels; sweep --dtypes fp32 fp16 on the interpreter, and bf16 on a GPU"
        )
    gpu_class = detect_class(nb_tables.load(tables_root))
    rows = []
    for kernel, record in RECORDS.items():
        domain = dict(record.sweep)
        if kernels and kernel not in kernels:
            continue
        for dtype in dtypes:
            space = candidates.space(kernel, domain, interpreter_enabled())
            dims = {d: hi for d, (_, hi) in domain.items()}
            config = candidates.prune(kernel, space, gpu_class.id, dims, torch_dtype(dtype).itemsize)[0][0]
            ranges = tuple((d, lo, hi) for d, (lo, hi) in domain.items())
            entry = Setting(Domain((dtype,), ranges), config)
            result = check.check_entry(kernel, entry, dtype, examples, profile_name)
            row = {
                "kernel": kernel,
                "dtype": dtype,
                "config": config,
                "examples": result.examples,
                "worst_ratio": round(result.worst_ratio, 4),
                "worst_relative": float(f"{result.worst_relative:.3g}"),
                "passed": result.passed,
                "failure": result.failure,
                "seconds": round(result.seconds, 1),
            }
            print(
                f"{kernel:<18} {dtype}  examples {row['examples']:>4}  worst err/bound {row['worst_ratio']:.4f}  "
                f"worst relative {row['worst_relative']:.3g}  {'ok' if result.passed else 'FAILED'}",
                flush=True,
            )
            if not result.passed:
                print(f"  {result.failure}", flush=True)
            rows.append(row)
    return rows
