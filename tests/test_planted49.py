"""Round 49 of planted bugs (tests/planted49_plants.py, driven by tests/planted49_driver.py), in this session's three
changes to how a verdict is read and carried (class: a verdict read or carried wrong): ``bounds.compare`` (the
ratio, max |reference| and max |error| read from the device in one transfer) and ``harness.judge``'s relative error
from it; rotary's rope tables compared on the CPU (``specs/rotary.py::_tables``); ``check.fingerprint(kernel=)``,
``Report.fingerprints`` and ``carried_over``'s per-kernel resume.

36 plants, each applied alone by the driver against the tests a contributor would run (test_bounds.py and
test_planted37.py for bounds.py, with test_kmut4.py for harness.py; test_kmut3.py, test_bounds.py and
test_conformance.py's two rotary tests for rotary.py; test_conformance.py's two resume tests, test_planted39.py and
test_source_binding.py for check.py), 6 to 67 s a plant:

- caught before the round (18): c01 the ratio read from the error's slot, c02 the negative bound's refusal dropped,
  c03 a NaN actual read through ``r.max()``, c06 an empty comparison nan, c08 0/0 nan; r01 each rope table compared
  with itself, r02 cos only, r03 the case's sin left out, r04 sin against the reference's cos; f05 every table file in
  each kernel's fingerprint; k01, k05, k06 a changed kernel's entries carried (k05: named and carried, which
  ``check --record`` would have counted toward binding that table), k02 carried when neither the whole nor any
  kernel's fingerprint matches, k04 ``changed`` naming kernels not in this run, k07 the JSON without
  ``fingerprints``, k08 an empty ``changed`` rendered, k09 the per-kernel match only where the whole matches.
- survived, now caught here (16): c04 the third slot the largest bound, c12 the scale signed (max ref, not max |ref|)
  -- no test read ``compare``'s second and third slots; c05 a bound of another shape broadcast; c07 a NaN actual's
  largest error nan (which ``max`` in judge passes over); c09 an inf bound, c10 a NaN or inf reference, c11 either
  hidden behind a non-finite actual -- only the negative bound's refusal was tested; c13 the relative error of the
  last pair only, c15 scale and largest error swapped (judge's relative error had no test); f01 a kernel's files
  matched by prefix without the dot, f02 class.yaml, f03 VERDICT_FILES, f04 the stack left out of a kernel's
  fingerprint; f06 a --shipped report with fingerprints per kernel; k03 a report written before today (no
  ``fingerprints``) carried per kernel; k10 a --shipped report resumed by a check without it where a kernel's
  fingerprint matches. f01 is equivalent on today's kernel names (none is another's prefix) and k10 on the reports
  check writes (a --shipped one has no fingerprint per kernel): pinned on made-up names and a made-up report.
- equivalent (2): c14 ``if scale:`` for ``if scale > 0:`` (the scale is max |reference|, finite and >= 0), f07 the
  ``shipped`` term of the per-kernel filter dropped (no caller passes ``shipped`` and ``kernel`` together).

No defect was found in the clean code. Each test here fails with a plant applied (checked: each plant in a copy with
this file alone) and passes on the clean code. Left open: a kernel of this run whose table changed but whose entries
all failed in the earlier report is not named in ``changed`` (nothing of it was to be carried; it is checked again
all the same)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import REPO

from conformance import bounds, check, harness
from neurobrix.errors import UsageError

F64 = torch.float64


def _t(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=F64)


# ---------------------------------------------------------------------------------------------- bounds.compare
def test_compare_reads_the_ratio_the_reference_scale_and_the_largest_error_each_from_its_own_slot():
    """c04 (the third slot the largest bound), c12 (the scale signed: max ref, not max |ref|), c01: each slot
    against its float64 definition, on a reference whose largest magnitude is negative and bounds unlike errors."""
    actual = torch.tensor([-3.5, 1.0, 0.0, 2.125], dtype=torch.float32)
    ref, bound = _t(-4.0, 1.0, 0.0, 2.0), _t(1.0, 0.25, 0.0, 8.0)
    err = (actual.double() - ref).abs()
    want = (
        max(0.0 if e == 0 else e / b for e, b in zip(err.tolist(), bound.tolist())),
        max(abs(v) for v in ref.tolist()),
        max(err.tolist()),
    )
    assert bounds.compare(actual, ref, bound) == want and want[1] != float(ref.max()) and want[2] != float(bound.max())
    assert bounds.ratio(actual, ref, bound) == want[0]


def test_a_bound_of_another_shape_is_refused_not_broadcast():
    """c05: only the actual's shape compared with the reference's: a bound of one element broadcast over every
    element (a record's bound of the wrong output) judged as if it were the output's."""
    with pytest.raises(ValueError, match="shapes differ"):
        bounds.compare(_t(1.0, 2.0, 3.0), _t(1.0, 2.0, 3.0), _t(0.5))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_actual_is_an_infinite_ratio_and_error(bad):
    """c07: a NaN in the actual read through ``err.max()`` (nan): the largest error nan, which ``max`` in judge
    passes over, where the compare's contract is inf."""
    got = bounds.compare(_t(bad, 2.0), _t(1.0, 2.0), _t(0.5, 0.5))
    assert got == (math.inf, 2.0, math.inf)


@pytest.mark.parametrize(
    "actual, ref, bound",
    [
        ((1.0, 2.0), (math.nan, 2.0), (0.5, 0.5)),  # c10: a NaN reference
        ((1.0, 2.0), (math.inf, 2.0), (0.5, 0.5)),  # c10: an inf reference
        ((1.0, 2.0), (1.0, 2.0), (math.inf, 0.5)),  # c09: an inf bound passes every error
        ((1.0, 2.0), (1.0, 2.0), (math.nan, 0.5)),
        ((math.nan, 2.0), (math.nan, 2.0), (0.5, 0.5)),  # c11: refused whatever the actual holds
        ((math.inf, 2.0), (1.0, 2.0), (-0.5, 0.5)),  # c11, c02
    ],
)
def test_a_non_finite_reference_or_bound_is_refused_whatever_the_actual_holds(actual, ref, bound):
    """The old ``ratio`` refused these before it looked at the actual: so does ``compare`` (a check whose reference
    is NaN proves nothing, whatever the kernel computed)."""
    with pytest.raises(ValueError, match="must be finite"):
        bounds.compare(_t(*actual), _t(*ref), _t(*bound))


# ---------------------------------------------------------------------------------------------- harness.judge
def test_judge_keeps_the_worst_relative_error_over_every_pair(monkeypatch):
    """c13 (the last pair's relative error only), c15 (compare's scale and largest error swapped): two pairs, the
    first with the larger relative error and ratio."""
    pairs = [(_t(2.5), _t(2.0), _t(1.0), "first"), (_t(10.1), _t(10.0), _t(1.0), "second")]
    monkeypatch.setitem(harness.RECORDS, "planted49", SimpleNamespace(judge=lambda case, outputs, config: pairs))
    monkeypatch.setattr(harness, "wrong_outputs", lambda case, outputs: "")
    verdict = harness.judge(SimpleNamespace(kernel="planted49"), (), {})
    relatives = [float((a - r).abs().max() / r.abs().max()) for a, r, *_ in pairs]
    assert verdict.ratio == 0.5 and verdict.relative == max(relatives) and relatives[0] > relatives[1]


# ---------------------------------------------------------------------------------------------- rotary._tables
@pytest.mark.parametrize("name", ["cos", "sin"])
def test_the_cases_own_rope_table_is_judged_against_the_reference(name):
    """r01 (each table compared against itself), r03 (the case's sin never compared): one element of the case's
    own table (rope_cache's, of the configuration it drew) off by 2^-10 fails that table's comparison."""
    from conformance.specs import rotary

    case = harness.build("rotary", "fp32", {"T": 2, "H": 3, "D": 16}, harness.Values("fp32", "cpu", 0))
    case.args[name] = case.args[name].clone()
    case.args[name][1, 1] += 2.0**-10
    label = f"rope_cache's {name} table ({case.note['rope']})"
    ratios = {lab: bounds.ratio(got, want, bound) for got, want, bound, lab in rotary._tables(case)}
    assert ratios[label] > 1, ratios


# ---------------------------------------------------------------------------------------------- fingerprint(kernel=)
@pytest.fixture
def made_up_tables(tmp_path: Path) -> Path:
    folder = tmp_path / "tables" / "made-up"
    folder.mkdir(parents=True)
    for name in ("class.yaml", "attention_decode.json", "attention_decode.proofs.yaml", "attention_decode_x.json"):
        (folder / name).write_text(name, encoding="utf-8")
    return tmp_path / "tables"


def test_a_kernels_fingerprint_is_its_own_files_and_the_class_file_not_a_kernel_named_like_its_prefix(made_up_tables):
    """f01 (a kernel's files matched by prefix without the dot: attention_decode took attention_decode_x's), f02
    (class.yaml left out: a class's launch features changed and the kernel's entries carried over)."""
    folder = made_up_tables / "made-up"

    def digest() -> str:
        return check.fingerprint(made_up_tables, "made-up", kernel="attention_decode")

    before = digest()
    (folder / "attention_decode_x.json").write_text("bound since", encoding="utf-8")
    assert digest() == before, "another kernel's table changed: attention_decode's fingerprint moved"
    for name in ("class.yaml", "attention_decode.json", "attention_decode.proofs.yaml"):
        (folder / name).write_text(name + " changed", encoding="utf-8")
        assert digest() != before, f"{name} changed and attention_decode's fingerprint did not"
        before = digest()


def test_a_kernels_fingerprint_covers_the_verdict_files_and_the_stack(made_up_tables, monkeypatch):
    """f03 (a kernel's fingerprint blind to VERDICT_FILES: the bounds or the reference changed and its entries
    carried over), f04 (blind to the stack: another torch or Triton carried them over)."""
    before = check.fingerprint(made_up_tables, "made-up", kernel="attention_decode")
    with monkeypatch.context() as m:
        m.setattr(check, "VERDICT_FILES", tuple(f for f in check.VERDICT_FILES if f[1] != "bounds.py"))
        assert check.fingerprint(made_up_tables, "made-up", kernel="attention_decode") != before
    running = check.stack.running_stack()
    monkeypatch.setattr(check.stack, "running_stack", lambda: dataclasses.replace(running, torch=running.torch + "x"))
    assert check.fingerprint(made_up_tables, "made-up", kernel="attention_decode") != before


def test_a_shipped_check_records_no_fingerprint_per_kernel(monkeypatch, tmp_path):
    """f06: a --shipped report with a fingerprint per kernel (of this class's files alone) is resumed per kernel after
    another class's tables, which it checked too, changed. The report a shipped check resumes into is caught as
    ``carried_over`` receives it."""
    seen = []

    def caught(path, report):
        seen.append(report)
        raise UsageError("caught")

    monkeypatch.setattr(check, "carried_over", caught)
    for shipped in (False, True):
        with pytest.raises(UsageError, match="caught"):
            check.check_class(
                "interpreter",
                ["silu_mul"],
                {"fp32"},
                3,
                "ci",
                resume=tmp_path / "r.json",
                shipped=shipped,
                tables_root=REPO / "tables",
            )
    assert list(seen[0].fingerprints) == ["silu_mul"] and seen[1].shipped and seen[1].fingerprints == {}


# ---------------------------------------------------------------------------------------------- carried_over
def _entry(kernel: str, n: int = 0) -> dict:
    return {"kernel": kernel, "dtype": "fp32", "domain": f"M={n}", "config": {"BLOCK": 16}, "passed": True}


def _resume(tmp_path: Path, old_fingerprints, ours: dict[str, str], **old_fields):
    old = {
        "class": "interpreter",
        "profile": "ci",
        "examples_per_entry": 3,
        "fingerprint": "whole-then",
        "shipped": False,
        "seconds": 9.0,
        "entries": [_entry("silu_mul"), _entry("rms_norm"), _entry("linear")],
    }
    if old_fingerprints is not None:
        old["fingerprints"] = old_fingerprints
    old.update(old_fields)
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    report = check.Report("interpreter", "", "ci", examples_per_entry=3, fingerprint="whole-now", fingerprints=ours)
    return check.carried_over(path, report), report


def test_only_the_kernels_whose_own_fingerprint_matches_are_carried_and_the_others_of_this_run_named(tmp_path):
    """k01/k05/k06 (a changed kernel's entries carried), k04 (``changed`` naming a kernel not in this run)."""
    then = {"silu_mul": "s", "rms_norm": "r-then", "linear": "l-then"}
    carried, report = _resume(tmp_path, then, {"silu_mul": "s", "rms_norm": "r-now"})
    assert {r.kernel for r in carried.values()} == {"silu_mul"} and all(r.carried for r in carried.values())
    assert report.resumed_from["changed"] == ["rms_norm"]
    assert "not carried over: rms_norm (its table changed since that report): checked again" in check.render(report)


@pytest.mark.parametrize(
    "old_fingerprints, fields",
    [
        (None, {}),  # k03: written before today, no fingerprint per kernel: only the whole can match
        ("not a mapping", {}),
        ({"silu_mul": "s-then"}, {}),  # no kernel's own matches
        ({"silu_mul": "s"}, {"shipped": True}),  # k10: a --shipped report, whatever its fingerprints say
        ({"silu_mul": "s"}, {"profile": "gpu"}),
    ],
)
def test_a_report_is_refused_unless_its_whole_or_a_kernels_fingerprint_matches_on_the_same_terms(
    tmp_path, old_fingerprints, fields
):
    with pytest.raises(UsageError, match="only a check of the same tables, kernels(,| and) bounds"):
        _resume(tmp_path, old_fingerprints, {"silu_mul": "s", "rms_norm": "r"}, **fields)


def test_a_report_of_the_same_whole_fingerprint_carries_every_kernel_and_names_none(tmp_path):
    carried, report = _resume(tmp_path, None, {"silu_mul": "s"}, fingerprint="whole-now")
    assert {r.kernel for r in carried.values()} == {"silu_mul", "rms_norm", "linear"}
    assert report.resumed_from["changed"] == [] and "not carried over" not in check.render(report)


def test_a_reports_json_keeps_its_fingerprint_per_kernel_for_the_resume(tmp_path):
    """k07: ``as_json`` without ``fingerprints``: every report written since is resumed only on its whole fingerprint
    (a bind of another kernel's table voids the stopped re-proof again)."""
    then = check.Report(
        "interpreter",
        "",
        "ci",
        results=[check.EntryResult("silu_mul", "fp32", "M=0", {"BLOCK": 16})],
        examples_per_entry=3,
        fingerprint="whole-then",
        fingerprints={"silu_mul": "s"},
    )
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(then.as_json()), encoding="utf-8")
    now = check.Report(
        "interpreter", "", "ci", examples_per_entry=3, fingerprint="whole-now", fingerprints={"silu_mul": "s"}
    )
    assert [r.kernel for r in check.carried_over(path, now).values()] == ["silu_mul"]
