"""Every setting any class ships is checked on the interpreter (`check --class interpreter --shipped`, what CI
runs), at small shapes crossing its blocks and splits; what the interpreter cannot run is listed once
(conformance.shipped.GPU_ONLY) and each item of that list is shown to fail here, so the list stays true."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import REPO

from conformance import check, harness, shipped
from conformance.__main__ import main as conformance_main
from conformance.specs import RECORDS
from neurobrix import tables
from neurobrix.ops import SPECS
from neurobrix.ops import linear as linear_op


def attention(kernel: str) -> bool:
    """The attention kernels' checks live in test_shipped_attention.py: this file and that one are each about
    half of the interpreter's work, so `pytest -n 2 --dist loadfile` runs them on two workers at once."""
    return kernel.startswith("attention")


@pytest.mark.parametrize("kernel", [k for k in sorted(SPECS) if not attention(k)])
def test_the_interpreter_class_and_every_shipped_setting_pass(kernel):
    check_shipped(kernel)


def check_shipped(kernel: str) -> None:
    """The interpreter tables, every entry and dtype, and every other distinct setting of every class's tables
    at its small shapes, Hypothesis `ci` profile (what CI runs): the GPU classes' variants run on CPU here."""
    report = check.check_class("interpreter", [kernel], None, None, "ci", shipped=True)
    assert report.passed, check.render(report)
    own = [r for r in report.results if not r.shipped_in]
    assert {r.dtype for r in own} == {"fp32", "fp16"} and all(r.examples >= 10 for r in report.results)
    loaded = tables.load(REPO / "tables")
    distinct = {shipped.distinct(s.config, True) for s in shipped.shipped_settings(loaded, True, [kernel])}
    checked = {shipped.distinct(r.config, True) for r in report.results}
    assert distinct <= checked, "a shipped setting of the tables was not checked"
    record = shipped.RECORDS[kernel]  # the candidates' own paths, and those the kernel keeps that none offers
    offered = {shipped.distinct(dict(c), True) for c in (*record.offered, *record.latent)}
    assert checked - distinct <= offered, "a setting neither shipped, offered nor latent was checked"


def test_every_variant_of_every_class_reaches_the_interpreter():
    """linear's gemv, skinny, tiled and tma settings of the GPU class are all checked on CPU, each in fp16 (bf16
    settings too: fp16 stands in), and a setting the interpreter's own tables hold is not run twice."""
    loaded = tables.load(REPO / "tables")
    found, not_run = shipped.targets("interpreter", loaded, True)
    assert not not_run
    assert {t.setting.config["variant"] for t in found if t.kernel == "linear"} == set(SPECS["linear"].variants)
    assert {t.dtype for t in found} == {"fp16"}
    own = {
        (k, shipped.distinct(e.config, True))
        for k in loaded.kernels("interpreter")
        for e in loaded.index("interpreter", k).entries
    }
    assert not own & {(t.kernel, shipped.distinct(t.setting.config, True)) for t in found}
    offered = [t for t in found if t.where.startswith("offered by the candidates")]  # Record.offered, shipped nowhere
    latent = [t for t in found if t.where.startswith(shipped.LATENT)]  # Record.latent: offered by no candidate
    assert all(t.where.startswith("shipped in nvidia-h200 (") for t in found if t not in offered + latent)
    assert {t.kernel for t in offered} <= {"linear"} and {t.kernel for t in latent} <= {"attention_decode"}
    bf16_only = [t for t in found if t.where.endswith(": bf16")]
    assert bf16_only, "the H200 tables hold settings shipped for bf16 only: they are checked in fp16"


def test_settings_differing_only_in_launch_options_are_one_on_the_interpreter():
    a = {"variant": "tiled", "BLOCK_M": 16, "num_warps": 4, "num_stages": 3}
    b = {**a, "num_stages": 4}
    assert shipped.distinct(a, True) == shipped.distinct(b, True)
    assert shipped.distinct(a, False) != shipped.distinct(b, False)  # on a GPU each is its own compiled code


def test_small_shapes_cross_every_block_and_split_of_each_setting():
    """Each shipped setting's small domain holds each of its block and split boundaries with room past it,
    and the shapes Hypothesis draws there land on and beside those boundaries."""
    from conformance.strategies import edge_values

    loaded = tables.load(REPO / "tables")
    for item in shipped.shipped_settings(loaded, True):
        small = RECORDS[item.kernel].small(item.config)
        for dim, sizes in small.blocks.items():
            lo, hi = small.ranges[dim]
            for size in sizes:
                assert lo <= size < hi, f"{item.kernel} {item.config}: {dim} in [{lo}, {hi}] does not cross {size}"
                edges = edge_values(lo, hi, sorted(set(sizes)), small.multiple_of.get(dim, 1))
                assert {size, size + 1} & set(edges), (item.kernel, item.config, dim, size)
    skinny = RECORDS["linear"].small({"variant": "skinny", "BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 128, "SPLIT_K": 8})
    assert skinny.ranges["K"][1] > 8 * 128  # slices of two K steps: a slice longer than one BLOCK_K
    tma = RECORDS["linear"].small({"variant": "tma", "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8})
    assert tma.multiple_of == {"N": 8, "K": 8} and tma.ranges["M"][1] > 8 * 128  # a second group of row blocks


# ------------------------------------------------------------------ what the interpreter cannot run, shown
def _bf16_is_wrong_on_the_interpreter() -> str:
    config = {"variant": "tiled", "BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 4}
    case = harness.build("linear", "bf16", {"M": 9, "N": 40, "K": 70}, harness.Values("bf16", "cpu", 3))
    verdict = harness.judge(case, harness.run_kernel(case, config), config)
    assert verdict.ratio > 1e3, (
        f"the interpreter's bf16 linear is within {verdict.ratio:.3g} of its bound now: bf16 runs on CPU, so take "
        "'bf16 arithmetic' out of conformance.shipped.GPU_ONLY and STAND_IN and check bf16 settings as they are"
    )
    return f"bf16 linear off by {verdict.ratio:.3g} times its bound"


def test_tma_programs_walk_several_tiles_on_the_interpreter():
    """Off a GPU the persistent tma grid has two programs, so each walks several tiles on CPU (what must be
    reset per tile is checked there); on a GPU one per multiprocessor."""
    assert [linear_op._programs(torch.device("cpu"), tiles) for tiles in (1, 2, 7, 600)] == [1, 2, 2, 2]


GPU_ONLY_SHOWN = {
    "bf16 arithmetic": _bf16_is_wrong_on_the_interpreter,
}


@pytest.mark.parametrize("what", [item.what for item in shipped.GPU_ONLY])
def test_what_the_interpreter_cannot_run_is_shown_to_fail_here(what):
    assert what in GPU_ONLY_SHOWN, f"GPU_ONLY lists {what!r} without a test that shows it"
    GPU_ONLY_SHOWN[what]()


def test_every_item_shown_is_still_listed():
    assert set(GPU_ONLY_SHOWN) == {item.what for item in shipped.GPU_ONLY}
    assert shipped.STAND_IN == {"bf16": "fp16"}


# ---------------------------------------------------------------------------------------- the command
def test_check_shipped_names_where_each_setting_is_shipped(tmp_path, capsys):
    """`check --shipped --variant tma`: only the tma settings (none in the interpreter's own tables), each
    reported with the class and entries that ship it; --exitfirst and an unknown variant."""
    report_path = tmp_path / "r.json"
    assert (
        conformance_main(
            [
                "check",
                "--class",
                "interpreter",
                "--kernel",
                "linear",
                "--shipped",
                "--variant",
                "tma",
                "--profile",
                "ci",
                "--examples",
                "2",
                "--json",
                str(report_path),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    tma = [
        s
        for s in shipped.shipped_settings(tables.load(REPO / "tables"), True, ["linear"])
        if s.config["variant"] == "tma"
    ]
    assert tma, "no class ships a tma setting: this test needs one"
    # and the tma settings the candidates offer that no class ships (Record.offered; none since the 256-row tile left)
    offered = [c for c in shipped.RECORDS["linear"].offered if c["variant"] == "tma"]
    checked = len(tma) + len(offered)
    assert "with every class's shipped settings at small shapes" in out and f"PASSED: {checked} entry checks" in out
    report = json.loads(report_path.read_text())
    assert report["shipped"] and report["summary"]["linear"]["shipped"] == checked
    for entry in report["entries"]:
        assert entry["config"]["variant"] == "tma" and entry["dtype"] == "fp16"
        assert entry["shipped_in"].startswith(("shipped in nvidia-h200 (", "offered by the candidates"))
        assert entry["domain"].startswith("fp16 M=1..")
    assert sum(e["shipped_in"].startswith("offered") for e in report["entries"]) == len(offered)
    assert conformance_main(["check", "--class", "interpreter", "--kernel", "linear", "--variant", "tma"]) == 2
    assert "has a setting of variant tma (--shipped adds every class's settings)" in capsys.readouterr().err
    assert conformance_main(["check", "--class", "interpreter", "--kernel", "linear", "--variant", "gemm"]) == 2
    variants = ", ".join(SPECS["linear"].variants)
    assert f"no variant gemm in linear (variants: linear: {variants})" in capsys.readouterr().err


def test_check_where_takes_only_the_entries_inside_the_range(tmp_path, capsys):
    """`check --where M=5:` checks linear's prompt-row entries only (what `certify --where M=5:` certified
    again); a dimension no chosen kernel has, or a range holding no entry, is a usage error."""
    report_path = tmp_path / "r.json"
    argv = ["check", "--class", "interpreter", "--kernel", "linear", "--profile", "ci", "--examples", "2"]
    assert conformance_main([*argv, "--where", "M=5:", "--json", str(report_path)]) == 0
    entries = json.loads(report_path.read_text())["entries"]
    assert entries and all(e["domain"].split()[1].startswith("M=5..") for e in entries), entries
    assert conformance_main([*argv, "--where", "S=1:"]) == 2
    assert "--where names S, a dimension of none of linear" in capsys.readouterr().err
    assert conformance_main([*argv, "--where", "M=2:3"]) == 2
    assert "no entry of linear on interpreter lies inside --where M=2:3" in capsys.readouterr().err


def test_exitfirst_stops_after_the_first_failing_entry(monkeypatch):
    real = check.run_kernel

    def broken(case, config):
        outputs = real(case, config)
        outputs[0].fill_(1e4)
        return outputs

    monkeypatch.setattr(check, "run_kernel", broken)
    report = check.check_class("interpreter", ["silu_mul"], None, 2, "ci", shipped=True, exitfirst=True, shrink=False)
    assert not report.passed and report.left > 0 and report.stopped == "stopped at the first failure"
    assert f"{report.left} entry checks not run (stopped at the first failure)" in check.render(report)
