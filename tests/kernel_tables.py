"""Test fixtures: interpreter-class tables for the kernel tests (test data, never shipped).

Every domain is unbounded (each dimension from 1 upward) so any odd shape has a setting; tests that
need another config write their own with ``write_tables``.
"""

from __future__ import annotations

from pathlib import Path

import torch
import triton
import yaml

import neurobrix
from neurobrix import tables

PROOF = {
    "examples": 1, "worst_error_ratio": 0.0, "bound": "test fixture", "reference": "none (test fixture)",
    "time_best_us": 0.0, "time_median_us": 0.0, "candidates_tried": 1, "rejected": [],
}
KEYS = {
    "linear": ["M", "N", "K"], "rms_norm": ["M", "N"], "rotary": ["T", "H", "D"], "silu_mul": ["M", "I"],
    "attention_prefill": ["S", "D", "G"], "attention_decode": ["B", "S", "D", "G"],
}
CONFIGS = {
    "linear": [
        ({"M": [1, 4]}, {"variant": "gemv", "BLOCK_N": 32, "BLOCK_K": 32, "SPLIT_K": 3, "num_warps": 4}),
        ({"M": [5, None]}, {"variant": "tiled", "BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 4,
                            "num_warps": 4, "num_stages": 2}),
    ],
    "rms_norm": [({}, {"BLOCK_M": 4, "num_warps": 4})],
    "rotary": [({}, {"BLOCK_H": 4, "num_warps": 4})],
    "silu_mul": [({}, {"BLOCK_M": 8, "BLOCK_I": 32, "num_warps": 4})],
    "attention_prefill": [({}, {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2})],
    "attention_decode": [({}, {"SPLITS": 3, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2})],
}


# the software stack of this machine's interpreter class, as certify would record it (so that certify
# may add entries to a fixture table)
STACK = {
    "device": {"backend": "interpreter", "vendor": "triton", "name": "Triton interpreter (CPU)"},
    "torch": str(torch.__version__), "triton": str(triton.__version__), "neurobrix": neurobrix.__version__,
}


def write_tables(root: Path, configs: dict | None = None, dtypes=("fp32", "fp16")) -> Path:
    """An interpreter-class tables folder with one table per kernel, tracked, at ``root``."""
    configs = {**CONFIGS, **(configs or {})}
    (root / "interpreter").mkdir(parents=True, exist_ok=True)
    (root / "interpreter" / "class.yaml").write_text(yaml.safe_dump({
        "format": 1, "class": "interpreter", "description": "Triton interpreter (test fixture)",
        "match": {"backend": "interpreter"},
    }))
    for kernel, entries in configs.items():
        rows = []
        for ranges, config in entries:
            domain = {"dtypes": list(dtypes), **{dim: ranges.get(dim, [1, None]) for dim in KEYS[kernel]}}
            rows.append({"domain": domain, "config": config, "proof": PROOF})
        (root / "interpreter" / f"{kernel}.yaml").write_text(yaml.safe_dump({
            "format": 1, "kernel": kernel, "class": "interpreter", "key": KEYS[kernel],
            "provenance": {**STACK, "git_commit": "-", "date": "-", "command": "tests/kernel_tables.py"},
            "entries": rows,
        }, sort_keys=False))
    (root / tables.TRACKED_NAME).write_text(tables.render_tracked(tables.scan(root)))
    return root
