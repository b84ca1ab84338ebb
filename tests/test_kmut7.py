"""Kernel mutants, round kmut7: the tile sizes the TMA candidates offer, each run by the interpreter check.

The thirty-first session's candidates() offered tma and tma_split 256 x 128 tiles (two warpgroups of 128 rows) that no
table shipped: ``check --shipped`` ran no row offset, bias, store or group walk at 256 rows, and a bug that showed only
there (a hard 128 where BLOCK_M belongs) passed the check. The three settings joined linear's ``Record.offered`` and
seven 256-row mutants were caught. Measured on the H200 they won no entry (2026-12-05e), so the thirty-third session
took them out of the candidates, the record and the registry again; what stays is the rule: every block height and
width the TMA variants offer is run by some checked setting, and every offered setting is one the candidates offer.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from conformance import check, shipped
from conformance.mutants import MUTANTS
from conformance.specs import RECORDS
from neurobrix import tables
from neurobrix.ops import SPECS
from neurobrix.ops import linear as linear_op

_BY_ID = {m.id: m for m in MUTANTS}
TMA_VARIANTS = ("tma", "tma_split")
# the prompt-row domain of a GPU class, where candidates() offers the TMA variants
PROMPT_ROWS = {"M": (65, None), "N": (1, None), "K": (1, None)}
# prompt rows with few output tiles and a long K, where candidates() offers tma_split's split-K settings as well
FEW_TILES = {"M": (513, 1024), "N": (1, 1024), "K": (1024, 4096)}


def _checked_on_cpu() -> list[shipped.Target]:
    """What `check --class interpreter --kernel linear --shipped` runs beyond the class's own entries."""
    found, _ = shipped.targets("interpreter", tables.load(), True, ["linear"])
    return found


def test_every_block_size_the_tma_candidates_offer_is_checked_on_cpu():
    checked = {
        (t.setting.config["variant"], d, t.setting.config[d])
        for t in _checked_on_cpu()
        if t.setting.config["variant"] in TMA_VARIANTS
        for d in ("BLOCK_M", "BLOCK_N")
    }
    offered = {
        (c["variant"], d, c[d])
        for domain in (PROMPT_ROWS, FEW_TILES)
        for c in linear_op.candidates(domain, interpreter=False)
        if c["variant"] in TMA_VARIANTS
        for d in ("BLOCK_M", "BLOCK_N")
    }
    assert {v for v, _, _ in offered} == set(TMA_VARIANTS)
    assert offered <= checked, sorted(offered - checked)


def _planted(mutant_id: str, tmp_path: Path):
    """neurobrix/ops/linear.py with the registry's mutant planted, as a module of its own (its source in a file,
    where Triton's jit reads it)."""
    mutant = _BY_ID[mutant_id]
    source = Path(linear_op.__file__).read_text(encoding="utf-8")
    assert source.count(mutant.old) == 1
    name = "linear_with_" + mutant_id.replace(".", "_").replace("-", "_")
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace(mutant.old, mutant.new), encoding="utf-8")
    module = type(sys)(name)
    module.__package__ = "neurobrix.ops"
    module.__file__ = str(path)
    sys.modules[name] = module  # Triton's jit looks its functions' globals up through the module
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
    return module


def _offered_target(split_k: int) -> shipped.Target:
    (target,) = [
        t for t in _checked_on_cpu() if t.where.startswith("offered") and t.setting.config["SPLIT_K"] == split_k
    ]
    return target


def _run(target: shipped.Target) -> check.EntryResult:
    return check.check_entry(
        "linear", target.setting, target.dtype, 25, "ci", shrink=False, small=target.small, shipped_in=target.where
    )


@pytest.mark.parametrize("split_k", [2, 3])
def test_a_merge_bug_only_an_offered_setting_runs_is_caught(tmp_path, monkeypatch, split_k):
    """tma_split's split-K merge by the last slice to arrive runs only in the offered settings (no table ships a
    tma_split setting that splits K): the mutant that sums the first slice's partials SPLIT_K times is caught there,
    in an even and an odd split, and the unplanted code passes."""
    target = _offered_target(split_k)
    assert target.setting.config["variant"] == "tma_split"
    shipped_result = _run(target)
    assert shipped_result.passed, shipped_result.failure
    planted = _planted("linear.merge-last.first-split-each-time", tmp_path)
    monkeypatch.setitem(SPECS, "linear", dataclasses.replace(SPECS["linear"], launch=planted.linear))
    found = _run(target)
    assert not found.passed, "the planted merge passed the check"


def test_the_offered_settings_are_the_candidates_own():
    """Each offered setting is one candidates() offers (num_warps and num_stages included), so the record follows the
    candidates rather than settings of its own, and none has 256 rows (taken out with the candidates, 2026-12-05)."""
    offered = [dict(c) for c in RECORDS["linear"].offered]
    candidates = [c for domain in (PROMPT_ROWS, FEW_TILES) for c in linear_op.candidates(domain, interpreter=False)]
    assert offered and all(c in candidates for c in offered)
    assert all(c["BLOCK_M"] <= 128 for c in candidates if c["variant"] in TMA_VARIANTS)
