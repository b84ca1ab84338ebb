"""Round 26 of planted bugs: where the earlier rounds planted least (the CLI's `tables list/show/verify` output, its
progress line and exit codes; `neurobrix list` and `remove`'s output; the gate's report; the generation loop, its
statistics line and sampling's filters; the bucket rules and the length segments a plan is cut into; the memory plan;
the GPU class's choice; the model store's names, listing and removal). The plants and the driver:
tests/planted26_plants.py, tests/planted26_driver.py (round 24's driver on this round's plants). Each test here
fails with the plant named in its docstring and passes on the clean code. Nothing is launched.

Outcomes (84 plants). Each was first run against the tests of its module named in the plants file: 40 caught (c06,
c10, c13, c15-c18, c20-c22, cs1-cs3, g11, b01-b03, p01, p04, m01-m04, m06, gp3, st1, st2, st4, st5, st7, st8, s02,
s03, s05-s08, s10, s11, s13; c15, c16 by test_store's signal test and c20 by test_generation_planted, run for them
after). The survivors were then run against slower or further files that could catch them: 9 more caught there (c19
by test_strict_round22; s09 by test_text_round12 and s12 by test_text_round10, files of minutes; g01, g05, g06, g07,
g13 by test_gate and g10 by test_release_round, which build a wheel). 28 survived both and are caught here (c01-c04,
c07-c09, c11, c12, c14, cs4, g02-g04, g08, g09, g12, b04, b05, p02, p03, p05, m05, gp2, st6, s04, s15, s17); the
tests here catch the 9 above too, in seconds. 7 are equivalent:
- c05 (a class's match fact printed when truthy, not when not None): class.yaml's schema takes no empty text, no
  count below 1, and a compute capability is a pair, so every fact given is truthy.
- gp1, gp4 (several matching classes: the first taken; only the first named): tables.load refuses classes whose
  match rules meet (`_disjoint_classes`), so no loaded Tables has two classes one device matches.
- st3 (a stored name of three parts looked up): the store writes a hub id's two levels or a folder's one and lists
  two; only a folder made by hand three levels down could be found (strict round 15's st01, the same).
- s01 (`0 token` in the statistics line): a run has at least one prompt token and one new token.
- s14 (min_p's top token not kept by hand): min_p is at most 1, and the top token's probability is never below
  itself times min_p.
- s16 (a load time of 0.00 s left out of the line): run's load time is a clock difference around loading weights,
  never 0.
"""

from __future__ import annotations

import io
import json
import sys
import types

import pytest
from conftest import REPO

from gate.checks import Check, Finding
from gate.report import DistSummary, Report, unusable_json
from gate.repository import TreeState
from gate.smoke import SmokeResult
from neurobrix import tables
from neurobrix.cli import Progress, main

# -- neurobrix tables list / show / verify -------------------------------------------------------------------------


@pytest.fixture
def shipped(monkeypatch):
    """The shipped tables (the source checkout's), whatever NEUROBRIX_TABLES says."""
    monkeypatch.delenv(tables.ENV_VAR, raising=False)
    tables.clear_cache()
    return tables.load()


def test_tables_list_counts_entries_and_lists_every_stack_of_a_class(shipped, capsys):
    """`tables list` gives each kernel's number of entries and every compiler stack its class's kernels were certified
    with. Caught: c02 (the distinct settings counted, not the entries: the shipped interpreter's linear has 4 entries
    and 2 settings), c03 (the text without the counts), c01 (only the first of two stacks shown)."""
    loaded = shipped
    counts = {k: len(loaded.proofs("interpreter", k).entries) for k in loaded.kernels("interpreter")}
    assert counts["linear"] != len(loaded.index("interpreter", "linear").configs)  # the case c02 needs
    other = loaded.index("interpreter", "rotary")
    other.stack = {**other.stack, "torch": "2.12.0+cpu"}  # as a kernel certified again on another torch would be
    assert main(["tables", "list", "--json"]) == 0
    row = {c["class"]: c for c in json.loads(capsys.readouterr().out)["classes"]}["interpreter"]
    assert row["kernels"] == counts
    assert main(["tables", "list"]) == 0
    out = capsys.readouterr().out
    assert "kernels (entries): " + ", ".join(f"{k} ({n})" for k, n in counts.items()) in out
    assert "certified with: torch 2.12.0+cpu, triton 3.9.0; torch 2.13.0+cpu, triton 3.9.0" in out


def test_tables_show_prints_a_class_note_only_where_it_has_one(shipped, capsys):
    """A class's note (the interpreter's: its timings say nothing about a GPU) is printed with the class; a class
    without one prints no note line. Caught: c04 (the note printed only where there is none)."""
    note = " ".join(shipped.classes["interpreter"].note.split())
    assert main(["tables", "show", "interpreter"]) == 0
    out = capsys.readouterr().out
    assert f"  note: {note}\n" in " ".join(out.split(" ")) and "  match backend: interpreter\n" in out
    assert shipped.classes["nvidia-h200"].note is None
    assert main(["tables", "show", "nvidia-h200"]) == 0
    out = capsys.readouterr().out
    assert "note:" not in out and "  match multiprocessor_count: 132\n" in out


def test_tables_show_gives_each_proof_its_own_numbers_and_the_certify_command(shipped, capsys):
    """Each entry's line names its proof's candidates tried and candidates rejected, and the header the command that
    certified the table. Caught: c07 (the two counts swapped), c08 (the command left out)."""
    table = shipped.proofs("interpreter", "linear")
    assert main(["tables", "show", "interpreter", "linear"]) == 0
    out = capsys.readouterr().out
    assert f"  command: {table.provenance['command']}\n" in out
    proofs = [line for line in out.splitlines() if line.startswith("      proof: ")]
    assert len(proofs) == len(table.entries)
    assert any(e.proof.candidates_tried != len(e.proof.rejected) for e in table.entries)  # the case c07 needs
    for line, entry in zip(proofs, table.entries):
        assert line.endswith(f"{entry.proof.candidates_tried} candidates, {len(entry.proof.rejected)} rejected")


def test_tables_show_of_a_kernel_the_class_lacks_lists_its_kernels(fixture_tables, capsys):
    """`tables show CLASS KERNEL` with a kernel the class has no table for lists the class's kernels, not the classes.
    Caught: c09."""
    with pytest.raises(SystemExit) as info:
        main(["tables", "show", "interpreter", "linear"])
    assert info.value.code == 2
    assert capsys.readouterr().err == (
        "neurobrix: error: class interpreter has no table for kernel 'linear'; it has: demo\n"
    )


# -- the gate's report ---------------------------------------------------------------------------------------------


def _dist(file: str, kind: str) -> DistSummary:
    return DistSummary(file, f"/up/{file}", kind, "neurobrix", "0.4.0", "0" * 64)  # type: ignore[arg-type]


WHEEL, SDIST = "neurobrix-0.4.0-py3-none-any.whl", "neurobrix-0.4.0.tar.gz"


def test_the_gate_report_counts_and_names_its_findings(tmp_path):
    """The text report: a dist's line says `1 finding` or `N findings`, each check under it with its title, the
    checks in code order; the verdict counts the findings (`1 finding`, `3 findings`), a code found more than once
    with its count (`x2`), and the dists wheel first. Caught: g01 (`1 findings`), g02 (a code found twice without
    `x2`), g03 (`1 findings` on the dist's line), g08 (the checks in the order found), g12 (the sdist named first),
    g13 (a check's title left out); g06 (refused exits 2, unusable's code)."""
    report = Report(tmp_path, None, dists=[_dist(WHEEL, "wheel"), _dist(SDIST, "sdist")])
    report.findings += [
        Finding(Check.G202, WHEEL, "a.py", "not in RECORD"),
        Finding(Check.G107, WHEEL, "b.py", "not shipped"),
        Finding(Check.G107, WHEEL, "c.py", "not shipped"),
        Finding(Check.G101, SDIST, "t.json", "missing"),
    ]
    assert report.exit_code == 1 and report.as_json()["exit_code"] == 1
    lines = report.render().splitlines()
    assert lines[1:] == [
        f"{WHEEL} (wheel, neurobrix 0.4.0): 3 findings",
        f"  G107 {Check.G107.value}",
        "      b.py: not shipped",
        "      c.py: not shipped",
        f"  G202 {Check.G202.value}",
        "      a.py: not in RECORD",
        f"{SDIST} (sdist, neurobrix 0.4.0): 1 finding",
        f"  G101 {Check.G101.value}",
        "      t.json: missing",
        "gate: REFUSED: 4 findings (G101, G107 x2, G202) in 1 wheel and 1 sdist; do not upload",
    ]
    report.findings[:] = report.findings[-1:]
    assert report.verdict() == "gate: REFUSED: 1 finding (G101) in 1 wheel and 1 sdist; do not upload"


def test_the_gate_verdict_passes_with_each_identity_and_every_smoke(tmp_path):
    """A passing verdict names each dist's name and version, says the install smoke passed only when every wheel's
    did, and adds the tree's note only for a working tree that is not a commit's. The JSON verdict is `passed`, and
    an unusable run's JSON exit code 2. Caught: g04 (one wheel's smoke passed enough), g05 (the note on a clean tree
    and not on a dirty one), g07 (the JSON verdict `refused` on a pass), g09 (the version left out), g10 (unusable
    JSON's exit code 1)."""
    report = Report(tmp_path, None, dists=[_dist(WHEEL, "wheel"), _dist(SDIST, "sdist")])
    report.smoke = [SmokeResult(WHEEL, "passed", "imported")]
    report.repository = TreeState("abc123")
    assert report.verdict() == "gate: PASSED: neurobrix 0.4.0, 1 wheel and 1 sdist, no findings, install smoke passed"
    assert report.as_json()["verdict"] == "passed" and report.exit_code == 0
    report.smoke.append(SmokeResult("other-0.4.0-py3-none-any.whl", "failed", "import failed"))
    assert "install smoke: " + f"{WHEEL} passed; other-0.4.0-py3-none-any.whl failed" in report.verdict()
    report.smoke = report.smoke[:1]
    report.repository = TreeState("abc123", ("README.md",))
    assert report.verdict().endswith(
        "install smoke passed, judged against a working tree that is not a commit's (commit abc123 with 1 tracked "
        "file not as committed: README.md): not a release check"
    )
    assert unusable_json("no dists", None, None)["exit_code"] == 2


def test_the_text_report_escapes_a_format_character_alone(tmp_path):
    """A right-to-left override (a format character, Cf) in a member's name is written as its escape even with no
    control character beside it. Caught: g11 (format characters printed as they are)."""
    report = Report(tmp_path, None)
    report.findings.append(Finding(Check.G001, "evil.whl", "a\u202etxt.py", "m"))
    assert "\u202e" not in report.render() and "a\\u202etxt.py" in report.render()


def test_tables_verify_failing_says_so_on_stderr_naming_each_file_by_its_path(fixture_tables, capsys):
    """`tables verify` that fails prints nothing on stdout (a script reading it takes no half report), and on stderr
    its heading and each problem with the file's full path. Caught: c11 (the heading on stdout), c12 (the path
    relative to the tables' folder)."""
    (fixture_tables / "interpreter" / "demo.json").write_text("altered")
    assert main(["tables", "verify"]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert lines[0] == f"tables NOT verified ({fixture_tables}, NEUROBRIX_TABLES):"
    assert lines[1].startswith(f"  {fixture_tables / 'interpreter' / 'demo.json'}: ")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_rewrites_one_line_and_ends_it(monkeypatch):
    """On a terminal the progress line is rewritten in place (a carriage return before each) at each percent, and
    the last one, the whole, ends the line, so that what is printed next starts on a line of its own. Caught: c14
    (the line never ended)."""
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    progress = Progress("warmup passes")
    for done in range(1, 201):
        progress(done, 200)
    text = terminal.getvalue()
    assert text.endswith("\rwarmup passes: 200/200 (100%)\n") and text.count("\n") == 1
    assert text.count("\r") == 101  # marks 0 to 100


def test_an_option_given_only_blanks_is_an_empty_value(capsys):
    """An option whose value is only blanks (`--prompt-file ' '`, `--dtype`-free options alike) is refused as empty,
    as '' is, not taken as a file name or class called ' '. Caught: c19 (only '' refused)."""
    for blank in ("", " ", "\t"):
        with pytest.raises(SystemExit) as info:
            main(["run", "--model", "m", "--prompt-file", blank])
        assert info.value.code == 2
        assert "--prompt-file: empty value; leave the option out for its default" in capsys.readouterr().err


# -- neurobrix list ------------------------------------------------------------------------------------------------


def test_list_lines_up_its_columns_after_the_longest_name(tmp_path, monkeypatch, capsys):
    """`neurobrix list` pads the NAME column to the longest name, so every SIZE starts in one column. Caught: cs4
    (the width taken from the first model's name)."""
    from neurobrix import cli_store
    from neurobrix.store import StoredModel

    models = [
        StoredModel(name, tmp_path / name, name, None, ("config.json",), size, imported="2026-12-05T00:00:00Z")
        for name, size in (("a", 1500), ("org/a-much-longer-name", 2_500_000))
    ]
    monkeypatch.setattr(cli_store, "list_models", lambda: models)
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    width = len("org/a-much-longer-name")
    assert lines[0].startswith(f"{'NAME':<{width}}  {'SIZE':>9}  REVISION")
    assert lines[1].startswith(f"{'a':<{width}}  {'1.5 kB':>9}  -")
    assert lines[2].startswith(f"org/a-much-longer-name  {'2.5 MB':>9}  -")


# -- the bucket rules, the plan's length segments and limits --------------------------------------------------------


def test_a_first_bucket_is_written_one_way_and_a_length_is_at_least_1():
    """`pow2>=F` takes F as a power of two written without a leading zero (an index keyed `pow2>=0` or `pow2>=016`
    is no index certify writes), and no rule buckets a length below 1. Caught: b04 (`pow2>=0`, `pow2>=016` valid),
    b05 (a length of 0 bucketed as [1, 1])."""
    from neurobrix.buckets import bucket_of, pow2_bucket, valid_rule

    assert valid_rule("pow2>=16") and valid_rule("pow2>=1")
    for rule in ("pow2>=0", "pow2>=016", "pow2>=00"):
        assert not valid_rule(rule), rule
    for rule in ("pow2", "pow2>=16"):
        with pytest.raises(ValueError, match="dimension must be >= 1, got 0"):
            bucket_of(rule, 0)
    with pytest.raises(ValueError):
        pow2_bucket(0, 4)


def test_length_segments_of_every_short_window_are_the_runs_found_length_by_length():
    """length_segments over windows [lo, hi] of lengths up to 39 (one length alone, windows ending on a bucket's
    first length) equals the runs of lengths every lookup treats alike, found one length at a time. Caught: p02 (a
    last length that starts a bucket of its own joined to the run before it), p03 (a window of one length given no
    segment at all: warmup then covered nothing for that prompt)."""
    from neurobrix.buckets import bucket_of
    from neurobrix.ops import SPECS
    from neurobrix.plan import length_segments

    loaded = tables.load(REPO / "tables")
    dims = [
        (
            rule,
            [(a, b) for e in loaded.index("interpreter", spec.name).entries for n, a, b in e.domain.ranges if n == d],
        )
        for spec in SPECS.values()
        for d, rule in zip(spec.key, spec.buckets)
        if rule != "exact"
    ]

    alike = {
        value: [(bucket_of(r, value), [a <= value and (b is None or value <= b) for a, b in rs]) for r, rs in dims]
        for value in range(1, 41)
    }
    for lo in range(1, 34):
        for hi in sorted({lo, lo + 1, lo + 6, 2, 3, 5, 9, 17, 33} - set(range(lo))):  # one length, a bucket's first
            runs: list[list[int]] = []
            for value in range(lo, hi + 1):
                if runs and alike[value] == alike[runs[-1][1]]:
                    runs[-1][1] = value
                else:
                    runs.append([value, value])
            assert length_segments(loaded, "interpreter", lo, hi) == [tuple(r) for r in runs], (lo, hi)


def test_a_split_of_exactly_the_grid_axis_is_within_the_limit():
    """A split count of exactly 65,535 programs (CUDA's largest grid y and z) launches; one more does not. Caught:
    p05 (the largest launchable split refused)."""
    from neurobrix.plan import GRID_AXIS, limit_problem

    config = {"variant": "gemv", "BLOCK_N": 64, "BLOCK_K": 128, "SPLIT_K": GRID_AXIS, "num_warps": 4}
    call = ("linear", "fp32", (1, 64, 128))
    assert limit_problem("linear", config, call) is None
    said = limit_problem("linear", {**config, "SPLIT_K": GRID_AXIS + 1}, call)
    assert said is not None and f"SPLIT_K={GRID_AXIS + 1}, a grid axis" in said


# -- the memory plan's message, the device's description ------------------------------------------------------------


def test_the_memory_refusal_s_three_parts_add_up_to_its_whole():
    """The refusal names the whole need and its parts: weights, KV cache, and working memory with the margin and
    reserve, the rest of the whole; the three add up to it (to the 0.01 GiB printed). Caught: m05 (the working
    memory alone, without the margin and reserve the whole counts)."""
    import re

    from conformance.catalogue import load as catalogue
    from neurobrix import memory

    cfg = catalogue()[0]["meta-llama/Llama-3.1-8B-Instruct"]
    with pytest.raises(memory.DeviceMemoryError) as err:
        memory.require_fit(cfg, 2, 1, 128, 8192, free=8 * 2**30)
    found = re.search(
        r"needs about ([\d.]+) GiB .*weights ([\d.]+) GiB, KV cache ([\d.]+) GiB for 8192 tokens, working memory and "
        r"reserve ([\d.]+) GiB\)",
        str(err.value),
    )
    assert found is not None, str(err.value)
    whole, *parts = (float(g) for g in found.groups())
    assert abs(sum(parts) - whole) <= 0.015


def test_a_device_s_compute_capability_is_major_dot_minor():
    """Caught: gp2 (an 8.6 device described as compute capability 6.8)."""
    from neurobrix.gpu import DeviceFacts

    facts = DeviceFacts("cuda", "nvidia", "NVIDIA A40", (8, 6), 84)
    described = "name 'NVIDIA A40', backend cuda, vendor nvidia, compute capability 8.6, 84 multiprocessors"
    assert facts.describe() == described


def test_list_gives_an_organisation_s_models_in_name_order(tmp_path, monkeypatch):
    """`neurobrix list` is sorted by name, the models of one organisation (one folder, two levels down) too, whatever
    order the filesystem lists them in. Caught: st6 (an organisation's models in the folder's own order)."""
    from neurobrix import store

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    names = ["m3", "m0", "m7", "m1", "m5", "m2", "m6", "m4"]
    for name in names:  # made in no order, as a store's models are imported
        folder = store.models_dir() / "org" / name
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("{}", encoding="utf-8")
        manifest = store._manifest(f"org/{name}", f"org/{name}", None, None, folder, ["config.json"])
        (folder / store.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    listed = store.list_models()
    assert [m.name for m in listed] == [f"org/{name}" for name in sorted(names)]
    assert all(m.damaged is None for m in listed)


# -- the generation loop's statistics ------------------------------------------------------------------------------


def test_the_statistics_time_each_phase_from_its_own_start(monkeypatch):
    """The statistics line's phases, each on its own clock reading: capture from before the capture to the prefill's
    start, time to first token from the prefill's start to the first token, decode rate the tokens after the first
    over the time from the first token to the last. A clock whose readings are 1, 10, 100 and 1000 s tells each
    difference apart. Caught: s04 (time to first token counted from before the capture: a GPU run's capture taken
    as prefill time), s17 (the decode rate over the prefill's time too)."""
    from test_generation_planted import tiny_batch

    from neurobrix import generate as generation

    readings = iter([1.0, 10.0, 100.0, 1000.0])
    clock = types.SimpleNamespace(perf_counter=lambda: next(readings))  # generate's own, not the time module's
    monkeypatch.setattr(generation, "time", clock)
    outs, stats = generation.generate_batch(tiny_batch(1, 8), [[1, 2]], 4, generation.Sampling(), set())
    assert len(outs[0]) == 4 and next(readings, None) is None
    assert (stats.capture_s, stats.time_to_first_token_s) == (9.0, 90.0)
    assert stats.decode_tokens_per_s == 3 / 900.0 and stats.prefill_tokens_per_s == 2 / 90.0


# -- sampling ------------------------------------------------------------------------------------------------------


def test_top_k_0_is_no_limit_and_top_k_keeps_exactly_k_tokens():
    """top_k 0 is transformers' "no top-k limit" (the run's help says so), taken, not refused; top_k K keeps the K
    most likely tokens, the K-th included: 1 is greedy, 3 of three equally likely leaders draws each of them and
    nothing else. Caught: s09 (top_k 0 refused), s12 (the K-th token dropped: top_k 1 left no token, a NaN draw)."""
    import torch

    from neurobrix.generate import Sampling, sample

    Sampling(temperature=1.0, top_k=0).validate()
    generator = torch.Generator().manual_seed(7)
    ranked = torch.tensor([[0.0, 5.0, 1.0, 4.0, 2.0, 3.0, -1.0, 0.5]]).repeat(64, 1)
    assert sample(ranked, Sampling(temperature=1.0, top_k=1), generator).tolist() == [1] * 64
    logits = torch.tensor([[0.0, 5.0, 1.0, 5.0, 2.0, 5.0, -1.0, 0.5]]).repeat(64, 1)
    drawn = set(sample(logits, Sampling(temperature=1.0, top_k=3), generator).tolist())
    assert drawn == {1, 3, 5}
    everything = set(sample(logits, Sampling(temperature=50.0, top_k=0), generator).tolist())
    assert len(everything) == 8


def test_a_draw_that_overflows_names_the_penalty_it_was_given():
    """A draw whose probabilities are not finite says what scaled the logits: the temperature, and the repetition
    penalty when one was given (a penalty of 0.001 multiplies a negative logit a thousandfold). Caught: s15 (the
    penalty never named)."""
    import torch

    from neurobrix.generate import Sampling, SamplingError, sample

    logits = torch.tensor([[float("nan"), 1.0, 2.0]])
    seen = torch.zeros((1, 3), dtype=torch.bool)
    with pytest.raises(SamplingError) as err:
        sample(logits, Sampling(temperature=0.7, repetition_penalty=0.001), None, seen)
    assert "--temperature 0.7 and the repetition penalty 0.001 overflow float32" in str(err.value)
    with pytest.raises(SamplingError) as err:
        sample(logits, Sampling(temperature=0.7), None)
    assert "--temperature 0.7 overflow float32" in str(err.value)
