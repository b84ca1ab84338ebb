"""`python -m conformance sweep`: every kernel on this device, in each dtype, against float64 — before tables exist.

A smoke test for a new GPU class (or a new triton): for each kernel and dtype, the first candidate of
the class's space that fits runs through Hypothesis over a catalogue-sized domain (through a scratch
one-entry table, like certify's screening), and the worst error/bound and relative error are
reported. bf16 is meaningful only on a GPU (the interpreter computes bf16 on bit patterns).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from neurobrix import tables as nb_tables
from neurobrix.gpu import detect_class, interpreter_enabled
from neurobrix.schema import Domain, Entry, Proof

from . import candidates, check, scratch
from .harness import TORCH_DTYPES

# Catalogue-sized domains: decode and prefill rows, both head dims, GQA ratios up to 8.
DOMAINS: dict[str, dict[str, tuple[int, int]]] = {
    "linear": {"M": (1, 192), "N": (1, 2560), "K": (1, 2048)},
    "rms_norm": {"M": (1, 192), "N": (1, 4096)},
    "rotary": {"T": (1, 192), "H": (2, 40), "D": (2, 128)},
    "silu_mul": {"M": (1, 192), "I": (1, 5632)},
    "attention_prefill": {"S": (1, 300), "D": (16, 128), "G": (1, 8)},
    "attention_decode": {"B": (1, 8), "S": (1, 1024), "D": (16, 128), "G": (1, 8)},
}


def sweep(dtypes: list[str], examples: int, profile_name: str, tables_root: Path,
          kernels: list[str] | None = None) -> list[dict[str, Any]]:
    gpu_class = detect_class()
    class_yaml = tables_root / gpu_class.id / nb_tables.CLASS_NAME
    rows = []
    for kernel, domain in DOMAINS.items():
        if kernels and kernel not in kernels:
            continue
        for dtype in dtypes:
            space = candidates.space(kernel, domain, interpreter_enabled())
            dims = {d: hi for d, (_, hi) in domain.items()}
            config = candidates.prune(kernel, space, gpu_class.id, dims, TORCH_DTYPES[dtype].itemsize)[0][0]
            ranges = tuple((d, lo, hi) for d, (lo, hi) in domain.items())
            entry = Entry(Domain((dtype,), ranges), config, Proof(1, 0.0, "-", "-", 0.0, 0.0, 1, ()))
            with scratch.candidate(class_yaml, kernel, dtype, config):
                result = check.check_entry(kernel, entry, dtype, examples, profile_name)
            row = {"kernel": kernel, "dtype": dtype, "config": config, "examples": result.examples,
                   "worst_ratio": round(result.worst_ratio, 4), "worst_relative": float(f"{result.worst_relative:.3g}"),
                   "passed": result.passed, "failure": result.failure, "seconds": round(result.seconds, 1)}
            print(f"{kernel:<18} {dtype}  examples {row['examples']:>4}  worst err/bound {row['worst_ratio']:.4f}  "
                  f"worst relative {row['worst_relative']:.3g}  {'ok' if result.passed else 'FAILED'}", flush=True)
            if not result.passed:
                print(f"  {result.failure}", flush=True)
            rows.append(row)
    return rows
