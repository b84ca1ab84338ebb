"""Run a kernel under one candidate config through the engine's real door (tables.settings).

Certify never reaches around the tables: each candidate is written as a one-entry table in a
scratch tables folder (the class's own class.yaml beside it, tracked), selected with
NEUROBRIX_TABLES for the duration of the ``with`` block.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator, Mapping

import yaml

from neurobrix import tables
from neurobrix.kernels import KERNELS

PLACEHOLDER_PROOF = {
    "examples": 1, "worst_error_ratio": 0.0, "bound": "candidate under screening",
    "reference": "none yet", "time_best_us": 0.0, "time_median_us": 0.0, "candidates_tried": 1, "rejected": [],
}


def write_single(root: Path, class_yaml: Path, kernel: str, dtype: str, config: Mapping[str, Any]) -> None:
    class_id = class_yaml.parent.name
    folder = root / class_id
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(class_yaml, folder / tables.CLASS_NAME)
    spec = KERNELS[kernel]
    table = {
        "format": 1, "kernel": kernel, "class": class_id, "key": list(spec.key),
        "provenance": {"device": {}, "torch": "-", "triton": "-", "neurobrix": "-", "git_commit": "-",
                       "date": "-", "command": "conformance scratch table (never shipped)"},
        "entries": [{"domain": {"dtypes": [dtype], **{d: [1, None] for d in spec.key}},
                     "config": dict(config), "proof": PLACEHOLDER_PROOF}],
    }
    (folder / f"{kernel}.yaml").write_text(yaml.safe_dump(table, sort_keys=False))
    (root / tables.TRACKED_NAME).write_text(tables.render_tracked(tables.scan(root)))


@contextlib.contextmanager
def tables_at(root: Path) -> Iterator[None]:
    """Select the tables folder ``root`` for the engine, and restore the previous choice after."""
    before = os.environ.get(tables.ENV_VAR)
    os.environ[tables.ENV_VAR] = str(root)
    tables.clear_cache()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(tables.ENV_VAR, None)
        else:
            os.environ[tables.ENV_VAR] = before
        tables.clear_cache()


@contextlib.contextmanager
def candidate(class_yaml: Path, kernel: str, dtype: str, config: Mapping[str, Any]) -> Iterator[None]:
    """The engine sees exactly one setting for ``kernel``: ``config``, on every shape."""
    root = Path(tempfile.mkdtemp(prefix="neurobrix-candidate-"))
    try:
        write_single(root, class_yaml, kernel, dtype, config)
        with tables_at(root):
            yield
    finally:
        shutil.rmtree(root, ignore_errors=True)
