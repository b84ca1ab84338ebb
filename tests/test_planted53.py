"""Round 53 of planted bugs (tests/planted53_plants.py, driven by tests/planted53_driver.py), in the proof records
certify writes and what reads them back (class: a record that says something other than what was proven): what a
proof records (conformance/certify.py: its examples, worst ratio and rejected candidates, the top shape it is screened
and timed at, ``--where``'s edge, the provenance's CUDA and commit, the runs that add entries, the order entries are
written in, ``--only-missing``, a run stopped at its limit or by Ctrl-C); the summary of a check's report
(conformance/check.py); ``check --record``'s ``reproved`` record (conformance/sources.py) and a local re-proof's
(conformance/reproof.py); the tracked-file list (conformance/track.py, ``tables.scan``); the records' readers
(``tables.verify_all``, ``Tables.proofs``, run's fast read ``_record_layout``, ``schema.parse_proofs``); and the rope
references and rotary draws at head dims that are no power of two (conformance/reference.py,
conformance/specs/rotary.py).

40 plants, each applied alone by the driver against the tests a contributor would run for its file (certify's tests in
test_conformance.py, test_certify_time_limit.py, test_contributor.py's certify tests, the binding's certify tests and
test_planted48.py; check's resume test with test_planted39.py and test_planted49.py; test_source_binding.py's and
test_planted48.py's --record and re-proof tests; test_tables.py with the binding's verify tests; test_planted42.py's
tracked-list test; test_reference.py, test_kmut3.py, test_kmut4.py's rotary_dim tests and the rotary record's tests),
13 to 286 s a plant on a 2-core machine loaded by other work:

- caught before the round (14): c04 --only-missing taking a domain certified in fp32 as done in fp16, c05 an fp16
  entry replacing the fp32 entry of its domain, c15 a chunk stopped at the time limit returning before it writes
  (test_certify_time_limit.py); c10 a run adding entries overwriting the first run's facts, c11 and c12 a resumed run
  recorded without its command or not at all (the torch-reading test and the binding's certify test); c14 the
  candidate after the winner not rejected (the schema's count); c16 a Ctrl-C while a table is written swallowed
  (test_contributor.py); s03 --record refusing a check of exactly the examples a proof takes; t03 the folder scanned
  unsorted (certify's list and track's then differ); v01 `tables verify` not parsing the records; v04 a proof whose
  best time equals its median refused (the fixtures' 0.0 and 0.0); q02 the case's partial table over the whole head
  dim (test_kmut4.py's rotary_dim mutant); q04 a partial rotary_dim's frequencies one fewer (test_kmut3.py).
- survived, now caught here (25): c01 the examples asked for recorded, not those run; c02 the worst relative error
  recorded as the worst ratio; c17 a faster candidate that failed its proof not rejected (no test made one fail);
  c06 --where M=1:64 refusing a domain ending at 64; c07 the top shape one below the domain's top, c18 the timing
  shape the odd size; c08 the provenance without CUDA's version (stack_of then names none: ``None`` on a CPU torch,
  so no interpreter test saw it); c09 uncommitted changes under conformance/ not marked; c13 entries written in the
  order certified (a resumed run's table is not the bytes a whole run writes); k01 a kernel's worst ratio in the
  summary the last entry's, k02 its examples the last entry's; s01 --record's worst error the smallest entry's; s02
  each --record replacing the earlier ``reproved``; s04 its entry checks counting the whole report's (other kernels',
  shipped settings'); s05 its device recorded by backend; s06 a re-proof's digest over the summary alone; s07 a check
  narrowed by --variant earning a re-proof; t01 a missing TRACKED.yaml never written by track; t02 `track --check`
  naming a list edited by hand only where files disagree too; v02 ``Tables.proofs`` (what `tables show` prints) not
  holding a record's device to the class; v03 run's fast read taking a record whose ``class`` is another's; v05
  ``Tables.proofs`` taking a record with more entries than its index; q01 the reference's exponents 2i / D rounded to
  fp32 (exact at powers of two: test_reference.py and test_planted52.py compare 64 and 128); q03 rotary's head dims
  drawn as multiples of 32 only; q05 yarn's correction dims over the next power of two of the head dim
  (test_kmut3.py compares with transformers at 2 to 128 in powers of two only).
- equivalent (1): c03 every task screened with the run's seed rather than seed + its index: the seed draws only the
  screening cases' values (``Screened.seed`` is read nowhere else); screening is a filter before the proof, whose
  Hypothesis draws cover the whole domain whatever was screened; and a task's index, so its seed, already changes with
  the --kernels, --dtypes or --where a run is given, so no record ever named or depended on it.

Each test here fails with its plants applied (checked: each plant in a copy with that test alone, c04, c05, c10, c11,
c12, c14 and t03 too, which the tests before the round caught) and passes on the clean code. At head dims 66, 72, 80,
96, 98 and 112 the engine's rope tables (all seven the rotary record compares, six seeds each) and the interpreter's
rotary setting (fp32 and fp16, two seeds each) were within their bounds (the tables at 0.37 of theirs at worst, fp32
outputs at 0.63, fp16 outputs at 0.9997, where the final rounding to fp16 is almost the whole bound): no defect there.

Found in the clean code and fixed: certify kept an entry of several dtypes (which it never writes; a table written by
hand may hold one) whole beside the entry it added for one of them, and the table was then refused as overlapping when
written, after the task's work (exit 3). The entry now keeps its other dtypes and its proof (``certify.without_dtype``;
test_certifying_one_dtype_of_an_entry_of_several_keeps_the_others fails before); c05 is re-anchored on the new line,
as the same bug.
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import REPO, retrack
from kernel_tables import CONFIGS, write_tables

from conformance import certify, check, reference, reproof, sources
from conformance.specs import RECORDS
from neurobrix import stack, tables
from neurobrix.errors import TablesError
from neurobrix.schema import Domain

SILU = (("M", 1, None), ("I", 1, None))


# ------------------------------------------------------------------------------------------- certify: a proof
def _timed(configs: list[dict]) -> certify.Timed:
    task = certify.Task("silu_mul", "fp16", SILU)
    screened = certify.Screened(task, 0, len(configs), list(configs), [])
    timed = [((10.0 + n, 11.0 + n), c) for n, c in enumerate(configs)]
    return certify.Timed(screened, timed, [])


def test_a_proof_records_what_its_check_ran_and_every_candidate_it_did_not_keep(monkeypatch):
    """c01, c02, c14, c17: certify's proof of the candidate it keeps records the examples its check ran (the explicit
    edges too: not the number asked for) and the worst ratio to the bound it saw (not the relative error); the faster
    candidate that failed its proof and every slower one are in its rejected list, the one right after it too."""
    failing, winner, slower, slowest = ({"BLOCK_M": b, "BLOCK_I": 32, "num_warps": 4} for b in (1, 2, 4, 8))

    def check_entry(kernel, setting, dtype, examples, profile_name):
        ok = dict(setting.config) != failing
        return check.EntryResult(
            kernel,
            dtype,
            setting.domain.describe(),
            dict(setting.config),
            examples=examples + 3,  # three explicit edges ran too
            worst_ratio=0.25,
            worst_relative=1e-4,
            passed=ok,
            failure=None if ok else "AssertionError: off",
        )

    monkeypatch.setattr(certify.check, "check_entry", check_entry)
    proven = certify.prove_task("interpreter", _timed([failing, winner, slower, slowest]), 4, "ci")
    proof = proven.entry.proof
    assert proven.entry.config == winner
    assert proof.examples == 7 and proof.worst_error_ratio == 0.25
    assert proof.time_best_us == 11.0 and proof.time_median_us == 12.0
    assert {(tuple(sorted(r.config.items())), r.reason) for r in proof.rejected} == {
        (tuple(sorted(failing.items())), "wrong_result"),
        (tuple(sorted(slower.items())), "slower"),
        (tuple(sorted(slowest.items())), "slower"),
    }
    assert proof.candidates_tried == len(proof.rejected) + 1


def test_the_domains_top_is_where_candidates_are_screened_and_timed():
    """c07, c18: the screening's first shape and the timing shape are the domain's top (a bounded dimension's upper
    end, an unbounded one's cap), as certify's docstring says: the proof covers the rest, the timing picks there."""
    task = certify.Task("silu_mul", "fp16", (("M", 17, 32), ("I", 100, 100)))
    top = {"M": 32, "I": 100}
    assert certify.edge_shapes(task)[1] == top and certify.timing_shape(task) == top
    unbounded = certify.Task("silu_mul", "fp16", SILU)
    assert certify.timing_shape(unbounded) == dict(RECORDS["silu_mul"].caps)


def test_where_takes_a_domain_ending_at_its_upper_end():
    """c06: --where M=1:64 holds the domain M 33..64 (both ends inclusive), not M 65..128 nor an unbounded one."""
    ranges = lambda lo, hi: (("M", lo, hi), ("N", 4096, 4096), ("K", 4096, 4096))  # noqa: E731
    inside = {"M": (1, 64)}
    assert certify.within(certify.Task("linear", "fp16", ranges(33, 64)), inside)
    assert certify.within(certify.Task("linear", "fp16", ranges(1, 1)), inside)
    assert not certify.within(certify.Task("linear", "fp16", ranges(65, 128)), inside)
    assert not certify.within(certify.Task("linear", "fp16", ranges(65, None)), inside)


# ---------------------------------------------------------------------------------------- certify: provenance
def test_the_provenance_records_cuda_for_the_index_stack(monkeypatch):
    """c08: the provenance names the CUDA torch was built with, and so the index's stack does (``stack_of``): a
    table proven with CUDA 12.8 stood for any CUDA."""
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    prov = certify.provenance("python -m conformance certify")
    assert prov["cuda"] == "12.8"
    from neurobrix.schema import stack_of

    assert stack_of(prov)["cuda"] == "12.8"


def test_the_commit_recorded_says_so_when_the_conformance_code_has_uncommitted_changes(monkeypatch):
    """c09: the references, bounds and check under conformance/ decide a proof as much as neurobrix/ does: an
    uncommitted change there is marked in the commit recorded (git asked about both folders, as git answers)."""
    monkeypatch.delenv("NEUROBRIX_SOURCE_COMMIT", raising=False)
    changed = ["conformance/bounds.py"]  # what `git status --porcelain` lists for this fake checkout

    def run(args, **kwargs):
        if args[:2] == ["git", "rev-parse"]:
            out = "0123456789ab\n"
        else:  # git status --porcelain -- PATHSPEC...: the changed files under any of the folders named
            named = args[args.index("--") + 1 :]
            out = "".join(f" M {path}\n" for path in changed if any(path.startswith(f"{n}/") for n in named))
        return subprocess.CompletedProcess(args, 0, out, "")

    monkeypatch.setattr(certify.subprocess, "run", run)
    assert certify.provenance("c")["git_commit"] == "0123456789ab+uncommitted-changes"
    changed[:] = ["neurobrix/ops/linear.py"]
    assert certify.provenance("c")["git_commit"] == "0123456789ab+uncommitted-changes"
    changed[:] = []
    assert certify.provenance("c")["git_commit"] == "0123456789ab"


def test_runs_adding_entries_are_appended_and_the_first_runs_facts_kept():
    """c10, c11, c12: a run adding entries to a table keeps the first run's date, commit and command, and is
    recorded under ``resumed`` with its own date, commit and command, after any earlier one."""
    first = {
        "device": {"backend": "interpreter"},
        "torch": "2.13.0",
        "triton": "3.9.0",
        "neurobrix": "0.1.0",
        "kernel_source": "0123456789abcdef",
        "date": "2026-12-01T00:00:00Z",
        "git_commit": "aaaa",
        "command": "first",
        "timing": "t",
    }
    table = SimpleNamespace(provenance=first, path="p", kernel="silu_mul", class_id="interpreter")
    later = [{**first, "date": f"2026-12-0{n}T00:00:00Z", "git_commit": f"c{n}", "command": f"run {n}"} for n in (2, 3)]
    merged = certify.merged_provenance(table, later[0])
    merged = certify.merged_provenance(SimpleNamespace(**{**vars(table), "provenance": merged}), later[1])
    assert {k: merged[k] for k in ("date", "git_commit", "command")} == {
        k: first[k] for k in ("date", "git_commit", "command")
    }
    assert merged["resumed"] == [{k: run[k] for k in ("date", "git_commit", "command")} for run in later]


def test_the_same_entries_give_the_same_table_in_whatever_order_they_were_certified(tmp_path):
    """c13: certify writes a table's entries in one order (dtypes, then domains): a run that resumed and appended an
    entry writes the bytes a run that certified them all at once writes."""
    from kernel_tables import PROOF, STACK

    from neurobrix.schema import Entry

    prov = {**STACK, "git_commit": "-", "date": "-", "command": "c", "kernel_source": stack.kernel_source("linear")}
    entries = [
        Entry(Domain(("fp32",), (("M", lo, hi), ("N", 1, None), ("K", 1, None))), config, PROOF)
        for (lo, hi), config in (((1, 4), CONFIGS["linear"][0][1]), ((5, None), CONFIGS["linear"][1][1]))
    ]
    texts = []
    for order in (entries, entries[::-1]):
        root = tmp_path / f"t{len(texts)}"
        (root / "interpreter").mkdir(parents=True)
        certify.write_table(root, "interpreter", "linear", list(order), prov)
        texts.append([(p.name, p.read_bytes()) for p in sorted((root / "interpreter").iterdir())])
    assert texts[0] == texts[1]


def test_only_missing_certifies_a_domain_in_the_dtype_it_lacks_and_keeps_the_other(tmp_path, capsys):
    """c04, c05: --only-missing takes a domain certified in fp32 as missing in fp16 (and certifies it), and the fp16
    entry it adds leaves the fp32 entry of the same domain where it was."""
    from conformance.__main__ import main as conformance_main

    root = tmp_path / "tables"
    (root / "interpreter").mkdir(parents=True)
    (root / "interpreter" / "class.yaml").write_bytes((REPO / "tables" / "interpreter" / "class.yaml").read_bytes())
    retrack(root)
    args = ["certify", "--class", "interpreter", "--kernels", "silu_mul", "--examples", "2", "--no-check"]
    assert conformance_main([*args, "--dtypes", "fp32", "--tables", str(root)]) == 0
    assert conformance_main([*args, "--dtypes", "fp32", "fp16", "--only-missing", "--tables", str(root)]) == 0
    assert "certified 1 entr" in capsys.readouterr().out
    table = certify.existing_table(root, "interpreter", "silu_mul")
    assert sorted(e.domain.dtypes for e in table.entries) == [("fp16",), ("fp32",)]


def test_certifying_one_dtype_of_an_entry_of_several_keeps_the_others(tmp_path, capsys):
    """Found in the clean code: an entry of several dtypes (certify writes none; a table written by hand may hold one,
    as this fixture's fp32/fp16 entry) was kept whole beside the entry certify added for one of its dtypes, and the
    table was refused as overlapping when written, after the task's work (exit 3). Now the entry keeps its other
    dtypes, with its proof (which covered them), and the new entry takes the dtype certified."""
    from conformance.__main__ import main as conformance_main

    root = write_tables(tmp_path / "tables", {"silu_mul": CONFIGS["silu_mul"]}, dtypes=("fp32", "fp16"))
    (before,) = certify.existing_table(root, "interpreter", "silu_mul").entries
    args = ["certify", "--class", "interpreter", "--kernels", "silu_mul", "--examples", "2", "--no-check"]
    assert conformance_main([*args, "--dtypes", "fp16", "--tables", str(root)]) == 0
    assert "certified 1 entr" in capsys.readouterr().out
    entries = {e.domain.dtypes: e for e in certify.existing_table(root, "interpreter", "silu_mul").entries}
    assert sorted(entries) == [("fp16",), ("fp32",)]
    assert entries[("fp32",)].config == before.config and entries[("fp32",)].proof == before.proof
    assert entries[("fp16",)].proof.examples >= 2
    tables.clear_cache()
    assert tables.load(root).index("interpreter", "silu_mul").lookup("fp32", (1, 1)).config == before.config
    tables.clear_cache()


# --------------------------------------------------------------------------------- check: the report's summary
def test_a_reports_summary_holds_each_kernels_largest_ratio_and_all_its_examples():
    """k01, k02: a kernel's line in the summary (what render prints and a re-proof records) is its worst entry's
    ratio, whichever came last, and the sum of its entries' examples."""
    report = check.Report("interpreter", "t", "ci")
    for ratio, examples in ((0.5, 10), (0.125, 7)):
        report.results.append(check.EntryResult("silu_mul", "fp32", "d", {}, examples=examples, worst_ratio=ratio))
    line = report.summary()["silu_mul"]
    assert line["worst_ratio"] == 0.5 and line["examples"] == 17 and line["entries"] == 2


# ----------------------------------------------------------------------------- check --record and the re-proof
def _passed(loaded, kernel: str, ratios: list[float], examples: int = 25) -> list[check.EntryResult]:
    index = loaded.index("interpreter", kernel)
    return [
        check.EntryResult(kernel, d, e.domain.describe(), dict(e.config), examples=examples, worst_ratio=r)
        for (e, d), r in zip(check.select(index, None), ratios)
    ]


def _report(results: list[check.EntryResult], examples: int = 25) -> check.Report:
    return check.Report("interpreter", "t", "ci", results=results, examples_per_entry=examples)


def test_check_record_writes_the_tables_own_worst_count_and_device_and_keeps_earlier_reproofs(tmp_path, monkeypatch):
    """s01, s02, s04, s05: the ``reproved`` record of a table bound by --record holds the largest worst ratio of its
    entries, the count of its own entry checks (not the report's other kernels' or shipped settings'), the device by
    its name; a second binding (the code changed again) is appended after the first, which stays."""
    root = write_tables(
        tmp_path / "tables", {"silu_mul": CONFIGS["silu_mul"]}, dtypes=("fp32", "fp16"), kernel_source="0" * 16
    )
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    tables.clear_cache()
    loaded = tables.load()
    others = [
        check.EntryResult("rms_norm", "fp32", "d", {"BLOCK_M": 4}, examples=25, worst_ratio=0.9),
        check.EntryResult("silu_mul", "fp32", "d", {"BLOCK_M": 2}, examples=25, worst_ratio=0.95, shipped_in="x"),
    ]
    args = SimpleNamespace(record=True, argv=["check", "--class", "interpreter", "--record"])
    report = _report(_passed(loaded, "silu_mul", [0.5, 0.25]) + others)
    assert sources.record(report, args, say=lambda _: None)
    tables.clear_cache()
    (first,) = tables.load().proofs("interpreter", "silu_mul").provenance["reproved"]
    assert first["worst_error_ratio"] == 0.5 and first["entry_checks"] == 2
    assert first["device"] == "Triton interpreter (CPU)"  # the name certify's provenance records for this device

    code = "f" * 16  # the kernel's code changed again: the table is stale, and bound anew
    monkeypatch.setattr(stack, "kernel_source", lambda kernel: code)
    tables.clear_cache()
    assert sources.record(_report(_passed(tables.load(), "silu_mul", [0.125, 0.75])), args, say=lambda _: None)
    tables.clear_cache()
    reproved = tables.load().proofs("interpreter", "silu_mul").provenance["reproved"]
    assert reproved[0] == first and reproved[1]["kernel_source"] == code and reproved[1]["worst_error_ratio"] == 0.75
    tables.clear_cache()


def test_a_reproof_digests_the_whole_report_and_a_variant_check_earns_none(tmp_path, monkeypatch):
    """s06, s07: a local re-proof's ``report_sha256`` is the digest of the whole report (two reports with the same
    summary and other entries differ there), and a check narrowed by --variant stands for no class (as --kernel,
    --dtype and --where do not)."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    root = write_tables(tmp_path / "tables", {"silu_mul": CONFIGS["silu_mul"]}, triton="0.0.1")
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    tables.clear_cache()
    loaded = tables.load()
    args = SimpleNamespace(argv=["check", "--class", "interpreter"])
    digests = []
    for config in ({"BLOCK_M": 8}, {"BLOCK_M": 16}):
        results = _passed(loaded, "silu_mul", [0.5, 0.5])
        results[0].config = {**results[0].config, **config}  # another entry checked: the same summary
        report = _report(results)
        path = reproof.record(report, args, say=lambda _: None)
        written = json.loads(path.read_text())["check"]
        assert written["summary"] == report.as_json()["summary"]
        digests.append(written["report_sha256"])
        assert digests[-1] == hashlib.sha256(json.dumps(report.as_json(), sort_keys=True).encode()).hexdigest()
    assert digests[0] != digests[1]
    assert reproof._not_whole(_report([]), SimpleNamespace(variant={"gemv"})) is not None
    tables.clear_cache()


# ------------------------------------------------------------------------------------------ the records' readers
@pytest.fixture
def silu_tables(tmp_path, monkeypatch):
    root = write_tables(tmp_path / "tables", {"silu_mul": CONFIGS["silu_mul"]}, dtypes=("fp32", "fp16"))
    for path in (root / "interpreter").iterdir():
        if path.name != "class.yaml" and not path.name.startswith("silu_mul."):
            path.unlink()
    retrack(root)
    tables.clear_cache()
    yield root
    tables.clear_cache()


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))


def test_a_record_of_another_device_is_refused_when_read_in_full(silu_tables):
    """v02: ``Tables.proofs`` (what `neurobrix tables show` prints) holds the device a record's proofs were made on to
    the class, as ``index`` does: a record made on a GPU moved into the interpreter's folder is refused there too."""
    record = tables.proofs_path(silu_tables, "interpreter", "silu_mul")
    _edit(record, "backend: interpreter", "backend: cuda")
    retrack(silu_tables)
    with pytest.raises(TablesError, match="device"):
        tables.load(silu_tables).proofs("interpreter", "silu_mul")


def test_a_record_naming_another_class_is_refused_by_runs_read_too(silu_tables):
    """v03: run's fast read of a record (its header and digests) refuses one whose ``class`` is another's, as the full
    parse (`tables verify`) does, though its proofs carry this class's entries' digests."""
    record = tables.proofs_path(silu_tables, "interpreter", "silu_mul")
    _edit(record, "\nclass: interpreter\n", "\nclass: nvidia-h200\n")
    retrack(silu_tables)
    with pytest.raises(TablesError):
        tables.load(silu_tables).index("interpreter", "silu_mul")


def test_a_record_proving_more_entries_than_its_index_is_refused_when_read_in_full(tmp_path):
    """v05: ``Tables.proofs`` refuses a record holding more entries than its index (an entry deleted from the index
    alone, TRACKED.yaml rewritten), as it refuses fewer."""
    root = write_tables(tmp_path / "tables")
    index = tables.index_path(root, "interpreter", "linear")
    data = json.loads(index.read_text())
    assert len(data["entries"]) == 2
    data["entries"], data["configs"] = data["entries"][:1], data["configs"][:1]  # (its first row holds config 0)
    assert data["entries"][0][-1] == 0
    index.write_text(certify.render_index(data))
    retrack(root)
    tables.clear_cache()
    with pytest.raises(TablesError, match="holds 2 entries"):
        tables.load(root).proofs("interpreter", "linear")
    tables.clear_cache()


# ------------------------------------------------------------------------------------------ the tracked list
def test_track_writes_a_missing_list_and_check_names_one_edited_by_hand(tmp_path):
    """t01, t02: `conformance track` writes TRACKED.yaml where there is none yet (a new tables folder), and `track
    --check` names a list whose files all agree with the folder but whose text is not the one track writes."""
    from conformance import track

    root = write_tables(tmp_path / "tables", {"silu_mul": CONFIGS["silu_mul"]})
    listed = root / tables.TRACKED_NAME
    text = listed.read_text()
    listed.unlink()
    assert track.write(root) == (str(listed), True) and listed.read_text() == text
    assert track.out_of_sync(root) == []
    listed.write_text("# edited\n" + text.replace("format: 1", "format:   1"))
    assert [f.path for f in tables.read_tracked(root)] == [f.path for f in tables.scan(root)]  # the same files
    assert track.out_of_sync(root) != []


# --------------------------------------------------------------------------- rope at head dims no power of two
HEAD_DIMS = (72, 80, 96, 112)


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
def test_the_references_frequencies_are_exact_at_a_head_dim_no_power_of_two(head_dim):
    """q01: the reference derives f_i = theta^(-2i / D) in float64: at a head dim that is no power of two 2i / D is
    not exact in float32 (transformers' arange / dim), and an exponent rounded there is off by ~ln(theta) 2^-24."""
    theta = 1_000_000.0
    for scaling, dim in ((None, head_dim), ({"rope_type": "default", "rotary_dim": head_dim - 1}, head_dim - 1)):
        got = reference.rope_frequencies(head_dim, theta, 1, scaling).inv_freq
        exact = torch.tensor(
            [math.exp(-math.log(theta) * 2 * i / dim) for i in range(head_dim // 2)], dtype=torch.float64
        )
        assert torch.allclose(got, exact, rtol=1e-13, atol=0)


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
def test_the_yarn_reference_is_transformers_own_at_a_head_dim_no_power_of_two(head_dim):
    """q05: the yarn rule's correction dims are over the head dim itself (test_kmut3.py compares at 2 to 128 in
    powers of two only, where the next power of two is the head dim)."""
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import _compute_yarn_parameters

    from conformance.specs import rotary as rotary_spec

    for rope in (rotary_spec.YARN_CLIPPED, rotary_spec.QWEN_CARD):
        scaling = rope.rope_scaling
        config = transformers.LlamaConfig(
            hidden_size=4 * head_dim,
            num_attention_heads=4,
            head_dim=head_dim,
            rope_parameters={"rope_theta": rope.theta, **scaling},
        )
        theirs, _ = _compute_yarn_parameters(config, "cpu")
        ours = reference.rope_frequencies(head_dim, rope.theta, 1, scaling).inv_freq
        assert torch.allclose(theirs.double(), ours, rtol=1e-6, atol=0)  # float32 against float64


def test_rotarys_draws_reach_head_dims_that_are_no_power_of_two():
    """q03: the rotary record's shapes reach head dims other than the catalogue's 64 and 128: 2 mod 4 (72 + 2 = 74,
    ...) as well as 72, 80, 96 and 112 (the record's multiple_of says which)."""
    from hypothesis import find, settings

    from conformance.strategies import shapes

    record = RECORDS["rotary"]
    domain = check.drawable("rotary", (("T", 1, None), ("H", 1, None), ("D", 1, None)))
    strategy = shapes(domain, cap=dict(record.caps), multiple_of=dict(record.multiple_of) or None)
    found = find(strategy, lambda s: s["D"] % 4 == 2 and s["D"] > 64, settings=settings(max_examples=2000))
    assert found["D"] % 4 == 2
