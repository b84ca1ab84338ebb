"""Kernel mutants, round kmut6: what the check could not see in the kernels' launch order and walk.

- A kernel launched with PDL but its ``PDL`` switch off (``linear.merge.launched-without-wait``,
  ``attention_decode.merge-launched-without-wait``: the second kernel reads the partials without waiting for the
  first) computes the same values wherever nothing runs PDL, and ``check.switch_problems`` reads only what ``split``
  hands out. ``harness.launch_switches`` runs the launcher with ``pdl`` off and on, every Triton launch recorded
  instead of run, and the check requires each launch's switch to be its ``launch_pdl`` and both what was asked for.
- Rows of greedy_pick's scratch laid out too close (``greedy_pick.rows-share-picks``: a row's indices stored over the
  next row's values) are right in the interpreter's order, where a row's programs run before the next row's, and a
  race on a GPU. The interpreter's memory guard now refuses two programs of a launch storing to one element.
- The grouped tile walks' second group of row blocks (M past GROUP_M x BLOCK_M) was in no draw of any tma entry, so
  tiles grouped over the wrong dimension (``linear.tma.group-of-row-blocks``) passed. linear's small shapes now
  always check one shape there (``Small.explicit``).
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from pathlib import Path

import pytest

from conformance import check, harness, mutants
from conformance.specs import linear as linear_record
from neurobrix.ops import SPECS
from neurobrix.schema import Domain, Setting

_BY_ID = {m.id: m for m in mutants.MUTANTS}


def _planted(module_name: str, mutant_id: str, tmp_path: Path):
    """neurobrix/ops/<module_name>.py with the registry's mutant planted, as a module of its own (its source in a
    file, where Triton's jit reads it)."""
    engine = importlib.import_module(f"neurobrix.ops.{module_name}")
    mutant = _BY_ID[mutant_id]
    source = Path(engine.__file__).read_text(encoding="utf-8")
    assert source.count(mutant.old) == 1
    name = f"{module_name}_with_{mutant_id.replace('.', '_').replace('-', '_')}"
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace(mutant.old, mutant.new), encoding="utf-8")
    module = type(sys)(name)
    module.__package__ = "neurobrix.ops"  # its relative imports
    module.__file__ = str(path)
    sys.modules[name] = module  # Triton's jit looks its functions' globals up through the module
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
    return module


def _launching(monkeypatch, kernel: str, launch) -> None:
    """The op's spec with another launcher, for the harness and the check alike (one SPECS dict)."""
    monkeypatch.setitem(SPECS, kernel, dataclasses.replace(SPECS[kernel], launch=launch))


def _case(kernel: str, shape: dict[str, int], seed: int = 1) -> harness.Case:
    return harness.build(kernel, "fp32", shape, harness.Values("fp32", "cpu", seed, ("normal",)))


# ------------------------------------------------------------------------------------------- launch switches
GEMV_SPLIT = {"variant": "gemv", "BLOCK_N": 32, "BLOCK_K": 64, "SPLIT_K": 2, "num_warps": 4}
DECODE_SPLIT = {"SPLITS": 2, "BLOCK_N": 32, "num_warps": 4}
CASES = (
    ("linear", "linear", {"M": 3, "N": 40, "K": 70}, GEMV_SPLIT, "linear.merge.launched-without-wait"),
    (
        "attention",
        "attention_decode",
        {"B": 2, "S": 64, "D": 16, "G": 2},
        DECODE_SPLIT,
        "attention_decode.merge-launched-without-wait",
    ),
)


def test_launch_switches_pass_on_the_shipped_launchers():
    for _, kernel, shape, config, _ in CASES:
        assert harness.launch_switches(_case(kernel, shape), config) == []


@pytest.mark.parametrize("module, kernel, shape, config, mutant_id", CASES)
def test_launch_switches_catch_a_merge_launched_without_its_wait(
    tmp_path, monkeypatch, module, kernel, shape, config, mutant_id
):
    planted = _planted(module, mutant_id, tmp_path)
    _launching(monkeypatch, kernel, getattr(planted, SPECS[kernel].launch.__name__))
    case = _case(kernel, shape)
    found = harness.launch_switches(case, config)
    assert len(found) == 1 and "pdl=True" in found[0] and "merge_kernel with PDL=False, launch_pdl=True" in found[0]
    with pytest.raises(harness.LaunchSwitchError, match="launch_pdl=True"):  # every example the check runs
        harness.run_kernel(case, config)


# ------------------------------------------------------------------------------------------- stores that clash
PICK = {"BLOCK_V": 64, "num_warps": 4}


def test_two_programs_storing_one_element_are_refused(tmp_path, monkeypatch):
    case = _case("greedy_pick", {"B": 3, "V": 300})  # 5 parts a row
    assert harness.judge(case, harness.run_kernel(case, PICK), PICK).ratio == 0
    planted = _planted("pick", "greedy_pick.rows-share-picks", tmp_path)
    _launching(monkeypatch, "greedy_pick", planted.greedy_pick)
    with pytest.raises(harness.MemoryGuardError, match="both store to the element"):
        harness.run_kernel(case, PICK)


# ------------------------------------------------------------------------------------------- the second group
TMA = {"variant": "tma", "BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8, "num_warps": 4}


def test_grouped_small_shapes_always_reach_a_second_group():
    for variant in ("tiled", "tma", "tma_split"):
        config = {**TMA, "variant": variant, "SPLIT_K": 2, "SUBTILE": 0, "WARP_SPECIALIZE": False}
        small = linear_record.small(config)
        (shape,) = small.explicit
        assert shape["M"] > config["GROUP_M"] * config["BLOCK_M"] and shape["N"] > config["BLOCK_N"]
        assert all(small.ranges[d][0] <= v <= small.ranges[d][1] for d, v in shape.items())
        assert all(shape[d] % m == 0 for d, m in small.multiple_of.items())


def test_tiles_grouped_over_row_blocks_are_caught_at_the_second_group(tmp_path, monkeypatch):
    """The check's entry for a shipped tma setting at its small shapes, one drawn example: its explicit shape in the
    second group catches the planted walk, and the shipped one passes there."""
    small = linear_record.small(TMA)
    entry = Setting(Domain(("fp32",), tuple((d, lo, hi) for d, (lo, hi) in small.ranges.items())), TMA)

    def run() -> check.EntryResult:
        return check.check_entry("linear", entry, "fp32", 1, "ci", shrink=False, small=small)

    shipped = run()
    assert shipped.passed and shipped.examples == 2, shipped.failure
    planted = _planted("linear", "linear.tma.group-of-row-blocks", tmp_path)
    _launching(monkeypatch, "linear", planted.linear)
    found = run()
    assert not found.passed and f"M={TMA['GROUP_M'] * TMA['BLOCK_M'] + 1}" in found.failure, found.failure
