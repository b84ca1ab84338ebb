"""Kernel mutants, round kmut2: what the suite could not see until this round.

Planted (conformance/mutants.py, the 29 after ``greedy_pick.part-value-in-fp16``): each caught by
``python -m conformance mutants --only ID``. Two gaps were closed, each held here without launching a kernel:

- tma_split's split-K path (its partials, the merge by the last slice to arrive) ran under no shipped setting
  once the H200's prompt rows were certified again without one (2026-12-04): every mutant there passed. The
  linear record now offers a SPLIT_K 2 and a SPLIT_K 3 setting of the candidates, and ``check --shipped`` checks
  them at small shapes whether or not a table ships them.
- ``dependent_launch`` without its ``gdc_wait``: the interpreter never runs PDL and the source check looked only
  at each kernel's first statement; it now reads ``dependent_launch``'s own body too.
"""

from __future__ import annotations

import triton
import triton.language as tl

from conformance import check, shipped
from conformance.specs import RECORDS
from neurobrix import ops
from neurobrix import tables as nb_tables
from neurobrix.ops import linear as linear_module


def _split_k(targets: list[shipped.Target]) -> set[int]:
    return {
        int(t.setting.config.get("SPLIT_K", 1))
        for t in targets
        if t.kernel == "linear" and t.setting.config.get("variant") == "tma_split"
    }


def test_shipped_check_runs_tma_split_split_k_even_when_no_table_ships_it():
    loaded = nb_tables.load()
    found, _ = shipped.targets("interpreter", loaded, True, ["linear"])
    assert {2, 3} <= _split_k(found)
    offered = [t for t in found if t.where.startswith("offered")]
    assert offered and all(t.dtype == "fp16" for t in offered)
    # on a GPU class they run in bf16 itself
    gpu, _ = shipped.targets("nvidia-h200", loaded, False, ["linear"])
    assert {t.dtype for t in gpu if t.where.startswith("offered")} == {"bf16"}


def test_offered_settings_are_candidates_the_gpu_class_may_ship():
    """Not invented settings: each is one the H200's candidates offer for prompt rows with few output tiles."""
    space = linear_module.candidates({"M": (513, 1024), "N": (1, 896), "K": (1024, 4096)}, False)
    for config in RECORDS["linear"].offered:
        assert dict(config) in space


def test_dependent_launch_without_its_wait_fails_every_op(monkeypatch):
    from neurobrix.ops import _common

    assert all(check.launch_problems(k) == () for k in ops.SPECS)

    @triton.jit
    def no_wait(PDL: tl.constexpr):
        """the planted bug: the successor may launch, the predecessor is never waited for"""
        if PDL:
            tl.extra.cuda.gdc_launch_dependents()

    monkeypatch.setattr(_common, "dependent_launch", no_wait)
    check.launch_problems.cache_clear()
    try:
        for kernel in ("rms_norm", "linear"):
            problems = check.launch_problems(kernel)
            assert any("gdc_wait" in p and "dependent_launch" in p for p in problems)
    finally:
        check.launch_problems.cache_clear()
