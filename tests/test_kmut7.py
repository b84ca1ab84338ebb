"""Kernel mutants, round kmut7: linear's 256-row tiles, which the candidates offer and the check never ran.

candidates() offers tma and tma_split 256 x 128 tiles (two warpgroups of 128 rows); no table ships one, and every
shipped tma or tma_split setting has 64 or 128 rows, so ``check --shipped`` ran no row offset, bias, store or group
walk at 256 rows: a bug that shows only there (a hard 128 where BLOCK_M belongs) passed the check. The three settings
are now linear's ``Record.offered``, checked at their small shapes like a shipped setting.
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
        for c in linear_op.candidates(PROMPT_ROWS, interpreter=False)
        if c["variant"] in TMA_VARIANTS
        for d in ("BLOCK_M", "BLOCK_N")
    }
    assert ("tma", "BLOCK_M", 256) in offered and ("tma_split", "BLOCK_M", 256) in offered
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


def _row_256_target(variant: str) -> shipped.Target:
    (target,) = [
        t
        for t in _checked_on_cpu()
        if t.setting.config["variant"] == variant
        and t.setting.config["BLOCK_M"] == 256
        and not t.setting.config.get("WARP_SPECIALIZE")
    ]
    return target


def _run(target: shipped.Target) -> check.EntryResult:
    return check.check_entry(
        "linear", target.setting, target.dtype, 25, "ci", shrink=False, small=target.small, shipped_in=target.where
    )


@pytest.mark.parametrize(
    "variant, mutant_id",
    [
        ("tma", "linear.tma.group-start-in-128-row-blocks"),
        ("tma_split", "linear.tma_split.second-half-stores-first-half"),
    ],
)
def test_a_bug_only_a_256_row_tile_runs_is_caught(tmp_path, monkeypatch, variant, mutant_id):
    target = _row_256_target(variant)
    assert "offered by the candidates" in target.where
    shipped_result = _run(target)
    assert shipped_result.passed, shipped_result.failure
    planted = _planted(mutant_id, tmp_path)
    monkeypatch.setitem(SPECS, "linear", dataclasses.replace(SPECS["linear"], launch=planted.linear))
    found = _run(target)
    assert not found.passed and "BLOCK_M" in found.failure and "256" in found.failure, found.failure


def test_the_offered_256_row_settings_are_the_candidates_own():
    """Each offered 256-row setting is one candidates() offers (num_warps and num_stages included), so the record
    follows the candidates rather than a setting of its own."""
    offered = [c for c in RECORDS["linear"].offered if c["BLOCK_M"] == 256]
    candidates = linear_op.candidates(PROMPT_ROWS, interpreter=False)
    assert len(offered) == 3 and all(dict(c) in candidates for c in offered)
