"""Round 28 of planted bugs: the code of gate round 32 (the report's per-line escaping and bounded lines, the run's one
inflation budget, twine a few dists at a time, at most 64 dists, the size compared before hashing, the build's error
in one line), text round 29 (exponential_decay_length_penalty's ``decay_failure`` and the note `run` gives when it holds
its text back), the newcomer round's error lines (the engine's errors laid out in lines, ``conformance.bind --help``,
check's progress line, certify's message) and strict round 33 (a record's provenance device held to its class at
load). The plants and the driver: tests/planted28_plants.py, tests/planted28_driver.py (round 24's driver on this
round's plants, in a copy made a git checkout of itself as round 26's). Each test here fails with the plant named in
its docstring and passes on the clean code.

Outcomes (60 plants): 39 caught by the tests before this round (g01, g02, g09, g19-g22, g26, g28, g33, g35, g36,
g38; t01, t03, t05, t08, t09, t11-t15, t17, t18; n01-n05, n10, n13, n14; s01-s04, s07, s10), 21 survived: 19 are
caught here (g04, g06, g07, g11, g14-g16, g23, g25, g27, g29, g41; t07, t16, t19; n06-n09) and 2 are equivalent:
g18 (the sdist message's ``max(left, 0)``: what is left of the run's budget is never negative, since a member or a
stream is inflated only within it) and t04 (``decay_scale`` catching OverflowError alone: the torch here raises
OverflowError, not RuntimeError, for an integer it cannot take as a scalar; the RuntimeError is kept for another
torch). The gate plants ran against round 32's tests and the units (g11, g14, g15 round 31's too; the hostile corpus
took minutes a plant), the text plants against rounds 29 and 14 (t01-t05 rounds 15, 10 and strict round 23 too), the
newcomer plants against its own tests and strict round 31's, the strict plants against rounds 33 and 16. A defect
was found and fixed: an sdist refused past what the run had left of its budget read "inflates past the 19280 left of
the 50000 all the dists of one run may inflate together bytes" (test_sdists_inflate_within_the_runs_budget).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from gate import build, checker, tools
from gate.archive import SdistArchive
from gate.checks import Budget, Check, Finding, Limits
from gate.report import LINE_MAX, Report, bounded
from neurobrix import tables

# --- gate/report.py: each line escaped, then bounded ----------------------------------------------------------------


def test_a_line_of_line_max_is_whole_and_a_longer_one_keeps_both_ends():
    """g04: a line of exactly LINE_MAX characters cut; g06: the last 1,000 characters one short."""
    assert bounded("x" * LINE_MAX) == "x" * LINE_MAX
    line = "a" * 1000 + "b" * 501 + "c" * 1000
    cut = bounded(line)
    assert cut.startswith("a" * 1000 + " ...[501 characters left out") and cut.endswith("]... " + "c" * 1000)
    assert "b" not in cut


def test_a_line_is_bounded_after_it_is_escaped():
    """g07: bounded, then escaped: 1,500 ESC characters, each written as 4, printed a line of 6,000."""
    report = Report(Path("tracked.yaml"), None)
    report.findings.append(Finding(Check.G310, "neurobrix-0.1.0-py3-none-any.whl", "x" + "\x1b" * 1500, "too long"))
    lines = report.render().split("\n")
    assert max(map(len, lines)) < LINE_MAX + 100, max(map(len, lines))
    assert any("characters left out" in line and line.endswith("too long") for line in lines)


# --- gate/archive.py and checker.py: read once, one budget, at most 64 dists, G003 by size -------------------------


def _sdist(path: Path, size: int) -> Path:
    """A gzipped tar of one member of ``size`` bytes of text: it inflates to a whole number of 10,240-byte records."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"x = 1\n" * (size // 6)
    member = tarfile.TarInfo(f"{path.name[: -len('.tar.gz')]}/PKG-INFO")
    member.size = len(data)
    with tarfile.open(path, "w:gz") as tar:
        tar.addfile(member, io.BytesIO(data))
    return path


def test_sdists_inflate_within_the_runs_budget(tmp_path):
    """g15: an sdist's stream held to the archive's limit, not to what the run has left; g16: what an sdist inflated
    not taken from the run's budget. Two sdists of 30,720 bytes inflated, 50,000 for the run: the second is refused."""
    limits = Limits(total_size=50_000)
    budget = Budget(limits.total_size)
    first = SdistArchive(_sdist(tmp_path / "a" / "neurobrix-0.1.0.tar.gz", 20_000), limits, budget)
    assert not [f for f in first.findings if f.code == "G308"], first.findings
    assert budget.left == 50_000 - 30_720
    second = SdistArchive(_sdist(tmp_path / "b" / "neurobrix-0.1.0.tar.gz", 20_000), limits, budget)
    refused = [f.message for f in second.findings if f.code == "G308"]
    assert refused == [
        "inflates past the 19280 bytes left of the 50000 all the dists of one run may inflate together; abandoned there"
    ], second.findings


def test_a_dist_of_exactly_the_size_limit_is_read_and_hashed(tmp_path):
    """g11: a file of exactly ``Limits.total_size`` bytes refused unread (and named without its sha256)."""
    path = tmp_path / "neurobrix-0.1.0.tar.gz"
    stream = gzip.compress(b"x")
    path.write_bytes(stream + bytes(1000 - len(stream)))  # a gzip stream, then zeros: judged, not unusable
    archive = SdistArchive(path, Limits(total_size=1000))
    assert archive.sha256 == hashlib.sha256(path.read_bytes()).hexdigest() and archive.size == 1000
    assert not any("not opened" in f.message for f in archive.findings), archive.findings
    path.write_bytes(bytes(1001))
    assert SdistArchive(path, Limits(total_size=1000)).sha256 is None


def test_64_dists_are_judged(tmp_path):
    """g23: 64 dists (the limit) refused as too many; 65 are (tests/test_gate_round32.py)."""
    from test_gate_hostile import REFERENCE

    folder = tmp_path / "upload"
    folder.mkdir()
    for i in range(64):
        _sdist(folder / f"neurobrix-0.1.{i}.tar.gz", 600)
    report = checker.check([folder], checker.Options(REFERENCE, smoke=False, tools=False))
    assert len(report.dists) == 64 and report.exit_code == 1


def test_a_dist_that_changed_size_names_both_sizes_and_one_refused_unread_is_passed_over(tmp_path):
    """g27: the size read left out of G003 (a hash of other bytes named instead); g25: a dist refused unread (never
    hashed, no size read) compared all the same, a G003 of '0 bytes read'."""
    path = tmp_path / "neurobrix-0.1.0-py3-none-any.whl"
    path.write_bytes(b"abc")
    read = SimpleNamespace(path=path, dist=path.name, size=3, sha256=hashlib.sha256(b"abc").hexdigest())
    assert checker._changed_on_disk([read]) == []
    path.write_bytes(b"abcdefghij")
    (finding,) = checker._changed_on_disk([read])
    assert finding.code == "G003" and "(3 bytes read, 10 bytes now)" in finding.message, finding.message
    unread = SimpleNamespace(path=path, dist=path.name, size=0, sha256=None)
    assert checker._changed_on_disk([unread]) == []


# --- gate/tools.py and build.py ----------------------------------------------------------------------------------


def test_twine_answers_for_a_dist_not_yet_started_and_one_named_in_bytes(tmp_path):
    """g29: a dist collected before its turn (the ones before it never collected: the tools skipped for them) was a
    KeyError, not started. Its name holds the byte 0xff, which twine prints as it is (g33, caught by round 32's tests
    too: twine's output read strictly, "internal error")."""
    dists = [tmp_path / f"neurobrix-0.1.{i}-py3-none-any.whl" for i in range(5)]
    dists.append(Path(os.fsdecode(os.fsencode(tmp_path) + b"/neurobrix-0.1.5-py3-none-any\xff.whl")))
    for dist in dists:
        dist.write_bytes(b"not a wheel")
    with tools.Twine(dists) as twine:
        found = twine.findings(dists[-1], None)
    assert found and found[0].code == "G401" and "any\\xff.whl" in found[0].message, found


def test_a_failed_build_is_one_line(monkeypatch, tmp_path):
    """g41: the build's last lines joined by line feeds (every gate error is one line)."""

    def failed(command, **kwargs):
        return subprocess.CompletedProcess(command, 1, "collecting\nbuilding\n", "error: no\nbackend here\n")

    monkeypatch.setattr(build.subprocess, "run", failed)
    with pytest.raises(build.GateError) as refused:
        build.build_project(tmp_path, tmp_path / "out")
    assert "\n" not in str(refused.value) and "collecting | building | error: no | backend here" in str(refused.value)


# --- text round 29: exponential_decay_length_penalty's failing token --------------------------------------------


def test_a_decay_failing_at_the_last_token_allowed_is_found():
    """t07: the last new token allowed not looked at (a run of 4 tokens failing at its 4th was streamed)."""
    from neurobrix.generate import Constraints, decay_failure

    decay = Constraints(exponential_decay_length_penalty=(2.5, -2.0))  # ** 0.5 at new token 4
    assert [decay_failure(decay, 10, n) for n in (3, 4, 5)] == [None, 4, 4]
    overflow = Constraints(exponential_decay_length_penalty=(0, 1e300))  # 1e300 ** 2 at new token 3
    assert [decay_failure(overflow, 7, n) for n in (2, 3)] == [None, 3]


@pytest.mark.parametrize("pair", [[0, float("inf")], [float("nan"), 1.5], [float("-inf"), 2]])
def test_a_decay_that_is_not_two_finite_numbers_is_refused_naming_the_file(pair):
    """t19: the tokenizer's finiteness check dropped (JSON's Infinity and NaN, which Python's json reads, passed on as
    a start or a factor)."""
    from neurobrix.tokenizer import Tokenizer, TokenizerError

    tokenizer = object.__new__(Tokenizer)  # only its generation settings are read here
    tokenizer.generation_path = Path("m/generation_config.json")
    tokenizer.generation = {"eos_token_id": 5, "exponential_decay_length_penalty": [0, 1.5]}
    assert tokenizer.constraints(100) == {"exponential_decay_length_penalty": (0, 1.5)}
    tokenizer.generation = {"eos_token_id": 5, "exponential_decay_length_penalty": pair}
    with pytest.raises(TokenizerError, match="m/generation_config.json: exponential_decay_length_penalty must be"):
        tokenizer.constraints(100)


def test_the_note_names_the_token_where_transformers_fails(tmp_path, monkeypatch):
    """t16: the note naming the token after the failing one. An eos id at the 2nd new token and 1e300 ** 2 at the 3rd:
    transformers prints the text; the engine streams none, says why, and prints it once the run ends."""
    pytest.importorskip("transformers")
    from test_text_round7 import PLAIN, checkpoint, ours, theirs

    folder = checkpoint(tmp_path / "base")
    (folder / "generation_config.json").write_text(
        json.dumps({"max_new_tokens": 8, "eos_token_id": PLAIN[1], "exponential_decay_length_penalty": [0, 1e300]})
    )
    ids, text, notes = ours(folder, monkeypatch, stream=True)
    assert (ids, text) == theirs(folder)
    assert [n for n in notes if "exponential_decay_length_penalty" in n] == [
        "note: the model's exponential_decay_length_penalty cannot be computed from new token 3 on (transformers' "
        "generate fails there); the text is printed once the run ends before it"
    ], notes


# --- the newcomer round: errors the engine lays out in lines --------------------------------------------------------


def test_no_gpu_and_an_uncertified_gpu_are_laid_out_in_lines(monkeypatch, capsys):
    """n07: the comma after "...the Triton interpreter is off." left out (the two strings one line, as Python joins
    them); n08: after the certified classes. Each line of the refusal is a line the CLI prints."""
    import torch

    from neurobrix import gpu
    from neurobrix.errors import NoGPUError, UncertifiedGPUError

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    gpu.device_facts.cache_clear()
    try:
        with pytest.raises(NoGPUError) as none:
            gpu.device_facts()
    finally:
        gpu.device_facts.cache_clear()
    assert len(none.value.lines) == 2 and none.value.lines[1].startswith("  On a CPU, TRITON_INTERPRET=1"), none.value
    facts = gpu.DeviceFacts("cuda", "nvidia", "NVIDIA Made-up", (12, 1), 7)
    with pytest.raises(UncertifiedGPUError) as uncertified:
        gpu.classify(facts, tables.load())
    lines = uncertified.value.lines
    assert len(lines) == 3 and lines[1].startswith("  certified classes (") and lines[2].startswith("  To certify it")


def test_each_line_of_an_error_in_lines_is_escaped(monkeypatch, capsys):
    """n06: the lines of an error laid out in lines printed raw (a quoted value's escape sequence or line feed in one
    of them repainted the terminal or printed a line of its own)."""
    from neurobrix import cli
    from neurobrix.errors import UsageError

    def refuse(args):
        raise UsageError("no model named 'x\x1b[2J'", "  its folder: 'a\nneurobrix: imported'")

    monkeypatch.setattr(cli, "cmd_tables_list", refuse)
    with pytest.raises(SystemExit) as exited:
        cli.main(["tables", "list"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "neurobrix: error: no model named 'x\\x1b[2J'\n  its folder: 'a\\nneurobrix: imported'\n"
    )


def test_the_stack_refusal_is_laid_out_in_lines(monkeypatch):
    """n09: the stack refusal's lines one error line (its line feeds escaped by the CLI)."""
    from neurobrix import stack
    from neurobrix.errors import CompilerStackError

    monkeypatch.setattr(stack, "installed_kernels_problem", lambda: None)
    monkeypatch.setattr(stack, "running_stack", lambda: stack.Stack("1.0.0", "0.1.0"))
    with pytest.raises(CompilerStackError) as refused:
        stack.require_certified_stack("interpreter", tables.load())
    lines = refused.value.lines
    assert lines[0].startswith("GPU class interpreter was certified with") and len(lines) >= 5, lines
    assert "\n" not in "".join(lines) and lines[1] == "  Install the certified stack:", lines
