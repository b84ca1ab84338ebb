"""``certify --max-minutes``: the limit reached inside a chunk of work, and failures found before it.

- A chunk's tasks went through screening, timing and proofs whatever the limit, so a chunk longer than the ones
  before it (the first, or one of larger shapes) ran past a job's limit and the job's SIGTERM lost the whole chunk.
  Past the limit the tasks under way now stop, left for ``--only-missing`` (neither written nor failed); the first
  chunk certifies one task at least, so that every rerun gets further.
- A run stopped by its limit after a chunk with failed tasks exited 3 ("work left") and never named the failures
  (they were raised only by a run that finished). It now exits 1 naming them and the tasks left.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import REPO, retrack

from conformance import certify, workers
from conformance.__main__ import main as conformance_main
from neurobrix import tables

CLASS = "interpreter"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / CLASS, folder / CLASS)
    retrack(folder)
    return folder


def _forget(root: Path, *kernels: str) -> None:
    for kernel in kernels:
        tables.index_path(root, CLASS, kernel).unlink()
        tables.proofs_path(root, CLASS, kernel).unlink()
    retrack(root)
    tables.clear_cache()


def test_past_the_limit_the_chunk_under_way_stops_after_one_task(root: Path, capsys) -> None:
    """silu_mul in fp32 and fp16 is one chunk of two tasks: with the limit already past, one is certified and the
    other left (before: both, exit 0); the rerun with --only-missing certifies the other."""
    _forget(root, "silu_mul")
    argv = ["certify", "--class", CLASS, "--kernels", "silu_mul", "--dtypes", "fp32", "fp16", "--examples", "2"]
    argv += ["--no-check", "--tables", str(root), "--only-missing"]
    assert conformance_main([*argv, "--max-minutes", "1e-9"]) == 3
    out = capsys.readouterr().out
    assert "certified 1 entry" in out and "1 left" in out, out
    tables.clear_cache()
    (entry,) = tables.load(root).index(CLASS, "silu_mul").entries
    assert conformance_main(argv) == 0
    tables.clear_cache()
    dtypes = sorted(d for e in tables.load(root).index(CLASS, "silu_mul").entries for d in e.domain.dtypes)
    assert dtypes == ["fp16", "fp32"] and entry in tables.load(root).index(CLASS, "silu_mul").entries


def test_failures_before_the_limit_are_named_not_left_unsaid(root: Path, monkeypatch, capsys) -> None:
    """Every task's screening fails; the limit stops the run. Before: exit 3, "certified 0 entries; N left", the
    failures unsaid. Now: exit 1, each failure named, and the tasks left counted."""
    _forget(root, "silu_mul", "rms_norm", "rotary")
    monkeypatch.setattr(certify, "screen_task", lambda class_id, task, seed: workers.Failed("no candidate compiled"))
    argv = ["certify", "--class", CLASS, "--kernels", "silu_mul", "rms_norm", "rotary", "--dtypes", "fp32", "fp16"]
    code = conformance_main([*argv, "--no-check", "--tables", str(root), "--max-minutes", "1e-9"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "could not be certified" in err and "no candidate compiled" in err, err
    assert "left at the time limit" in err and "--only-missing" in err, err
