"""The forty-ninth round against the release gate: the report as a CI runner reads it, and the brief's candidates.

The brief's list was held against the rounds in docs/gate-rounds.md first, and every candidate but one was covered by
name, so none of those was built again: names that collide after NFC/NFD or case folding (G305 keys members by
``destination_key``, G310 refuses a name not in NFC: rounds 17, 29, 35, 41), names Windows refuses or rewrites (``:``,
``<>"|?*``, trailing dots and spaces, CON/NUL/COM0/COM¹, ``~N``: rounds 13, 17, 35, 41; a path past 260 characters can
only be a tracked file's, the allow-list passing no other name, and pip fails on it where long paths are off, closed),
METADATA, WHEEL and RECORD bytes with a byte order mark, CR LF or another encoding (METADATA and WHEEL are the
backend's bytes whole: G406, G407; RECORD's line ends and byte order mark: round 29, G205, G206), local headers and
the central directory disagreeing on name, sizes, flags (rounds 16, 24 to 35, 41), sdist modes executable, setuid or
without file type bits (G509: rounds 14, 15, 24, 27), hard links and devices in the sdist (G304: rounds 29, 38), and
the report's terminal escapes and line breaks (round 32).

One class was not, and it is the candidate "a path in the report that a CI log renders as a terminal escape" taken
one step further: GitHub's runner reads every line a step prints (stdout and stderr) for a workflow command, not an
escape sequence, and the gate's report names members and upload-folder files as the archive spells them. Read in the
runner's source (actions/runner: ``ActionCommand.TryParseV2`` and ``TryParse``, ``ActionCommandManager``), ported
below as :func:`github_command` (the runner is .NET and needs its service: not run here): ``::name props::data`` is a
command where a line opens with it once leading white space is trimmed, and ``##[name props]data`` wherever it
stands in a line; the runner prints no line at all for ``debug``, ``error``, ``warning``, ``notice`` and ``add-mask``
(``OmitEcho``), makes the last three annotations on the run's page, masks ``add-mask``'s data in every later line,
and folds every later line under a title of the command's choosing for ``group``. Azure Pipelines reads
``##vso[...]`` anywhere in a line. Found and fixed (each test below failing before, shown with the fix reverted):

1. a refused run's report printed a member named ``::debug::x.py``, ``neurobrix/##[debug]x.py`` or
   ``neurobrix/##[add-mask]x.py`` (any member: the lines name it before or after refusing it), a file of the upload
   folder named ``::group::….whl``, or a dist path of ``##[…]`` in the exit-2 line, as written: each line was a
   command to the runner. So a wheel of such members showed, in the gate step's log, no finding at all (each finding's
   line swallowed as a debug message), an annotation ``gate: PASSED`` on the run's page, or the findings and the
   ``gate: REFUSED`` verdict folded under a group titled ``gate: PASSED: …``: the log forgery round 32 closed for line
   feeds, by the runner's own syntax. No verdict changed (the run still exits 1, the JSON report and the publish job's
   checks read the findings), so it is no false pass; it is a log of one. Every line the gate prints now writes each
   ``##`` as ``#\\x23`` and a line's leading ``::`` as ``\\x3a:`` (``gate.report.shown``), and the test holds every
   line of each report, text and exit-2, against the port of the runner's parser and Azure's prefix.
2. the one line ``python -m gate`` prints when it stops on a module at the checkout's top that the repository does
   not hold (round 45, written after round 32 escaped every other line the gate prints) named the file raw: a build
   step that leaves ``x\\ngate: PASSED: neurobrix 0.1.0, ….py`` there printed a second line opening ``gate: PASSED``
   (round 32's forgery, back), an escape sequence in the name repainted the log, and ``##[debug]x.py`` hid the whole
   refusal from the step's log. The names are now written as the report writes them, ``ascii`` escapes for anything
   not printable ASCII and ``##`` as ``#\\x23``, with no import (the line is printed before the gate imports
   anything, ``unicodedata`` included, which such a module could shadow). Four cases failed before.

Pinned: the runner's own examples parse as commands with the port (so the port can fail), an honest wheel and sdist
print a report with no command and with nothing escaped (the fix touches no honest line), and every hostile member and
file stays refused by the check that refused it before (G107, G310, G405), named in the line.

Left open: the JSON report holds names raw, as it must (``jq`` and the publish job read them; a log shows it only
where a pipeline asks, ``--json /dev/stdout``); other CI systems' log markup without an escape character (Buildkite's
``--- `` section lines, which a dist's file name could open) was not looked at (GitLab's section markers need an
escape character, escaped since round 32); the gate prints nothing a passing run's archive names that is not the
project's own, so a pass's log holds no name an attacker chose.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from gate_fixtures import Built, RawMember, RawTarMember, raw_tar, sdist_members, wheel_members, with_true_record
from test_gate_hostile import REPO, built, gate_cli, judge, refused_with, write_wheel
from test_gate_round38 import write_sdist

from gate.report import shown

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the hostile corpus's built wheel and sdist

# The commands a runner registers (ActionCommandManager.Initialize: stop-commands and every IActionCommandExtension but
# internal-set-repo-path), matched without regard to case.
REGISTERED = {
    "stop-commands",
    "set-env",
    "set-output",
    "save-state",
    "add-mask",
    "add-path",
    "add-matcher",
    "remove-matcher",
    "debug",
    "warning",
    "error",
    "notice",
    "group",
    "endgroup",
    "echo",
}


def github_command(line: str) -> str | None:
    """The workflow command GitHub's runner reads in one output line, or None: ``TryParseV2`` (``::`` after .NET's
    ``TrimStart``), then ``TryParse`` (``##[`` anywhere), as ``ActionCommandManager.TryProcessCommand`` tries them."""
    body = line.lstrip()  # .NET trims char.IsWhiteSpace; str.isspace is that and \\x1c-\\x1f (escaped by the gate)
    if body.startswith("::"):
        end = body.find("::", 2)
        if end >= 0:
            name = body[2:end].split(" ", 1)[0]
            if name.lower() in REGISTERED:
                return name
    start = line.find("##[")
    if start >= 0:
        close = line.find("]", start)
        if close >= 0:
            name = line[start + 3 : close].split(" ", 1)[0]
            if name.lower() in REGISTERED:
                return name
    return None


def runner_commands(text: str) -> list[tuple[str, str]]:
    """Every (command, line) a CI runner obeys in ``text``: GitHub's, and Azure Pipelines' ``##vso[`` anywhere."""
    found = []
    for line in text.splitlines():
        name = github_command(line)
        if name is not None:
            found.append((name, line))
        if "##vso[" in line:
            found.append(("vso", line))
    return found


@pytest.mark.parametrize(
    "line, command",
    [  # the runner's documented forms, and its leading white space
        ("::error file=app.js,line=1::Missing semicolon", "error"),
        ("   ::group::My title", "group"),
        ("\u00a0::add-mask::secret", "add-mask"),
        ("text before ##[debug]the rest", "debug"),
        ("##[set-output name=x;]y", "set-output"),
        ("x ::error::not at the start", None),
        ("::unknown::x", None),
        ("##vso[task.setvariable variable=x]y", "vso"),
    ],
)
def test_the_port_reads_the_runners_own_forms(line: str, command: str | None) -> None:
    found = runner_commands(line)
    assert (found[0][0] if found else None) == command


HOSTILE_MEMBERS = [
    "::debug::x.py",  # the line opens with it once its indent is trimmed: swallowed as a debug message
    "::error title=gate::gate PASSED.py",  # an annotation on the run's page, the line swallowed
    "\u00a0::group::gate PASSED.py",  # NBSP is white space to .NET's TrimStart
    "neurobrix/##[debug]x.py",  # TryParse: anywhere in a line
    "neurobrix/##[add-mask]x.py",  # masks the rest of the line in every later line, prints none
    "neurobrix/##[group]gate: PASSED: neurobrix 0.1.0, 1 wheel, no findings",  # folds every later line, the verdict too
    "neurobrix/###[debug]x.py",  # three: one '##' left after escaping two would still be a command
    "neurobrix/##vso[task.setvariable variable=x]y.py",  # Azure Pipelines
]


@pytest.mark.parametrize("name", HOSTILE_MEMBERS)
def test_a_member_named_as_a_workflow_command_is_no_command_in_the_report(
    built: Built, tmp_path: Path, name: str
) -> None:
    raw = name.encode()
    flags = 0 if raw.isascii() else 0x0800  # the UTF-8 flag, so that G303 does not name it for its bytes
    wheel = write_wheel(
        built, tmp_path, with_true_record([*wheel_members(built.wheel), RawMember(raw, b"x = 1\n", flags=flags)])
    )
    report = judge(wheel)
    refused_with(report, "G107", name)  # refused before and after, by the allow-list, and named
    text = report.render()
    assert runner_commands(text) == [], text
    assert any(shown(name) in line for line in text.splitlines())  # the member is named, escaped


def test_an_sdist_member_named_as_a_workflow_command_is_no_command_in_the_report(built: Built, tmp_path: Path) -> None:
    name = f"{built.root}/##[group]gate: PASSED"
    tar = raw_tar([*sdist_members(built.sdist), RawTarMember(name, b"x = 1\n")])
    sdist = write_sdist(tmp_path / built.sdist.name, tar)
    report = judge(sdist)
    assert not report.passed and any(f.path == name for f in report.findings)
    assert runner_commands(report.render()) == [], report.render()


@pytest.mark.parametrize("name", ["::group::gate PASSED.whl", "x##[debug]y.whl", "##vso[task.complete]x.whl"])
def test_an_upload_folder_file_named_as_a_workflow_command_is_no_command(
    built: Built, tmp_path: Path, name: str
) -> None:
    dist = tmp_path / name
    shutil.copy(built.wheel, dist)
    report = judge(dist)
    assert not report.passed and {f.code for f in report.findings} >= {"G405"}
    assert runner_commands(report.render()) == [], report.render()


def test_the_exit_2_line_holds_no_workflow_command(tmp_path: Path) -> None:
    missing = tmp_path / "##[debug]gate PASSED.whl"  # the line names the path the command line was given
    result = gate_cli("check", str(missing))
    assert result.returncode == 2
    assert "gate PASSED" in result.stderr  # the one line names it
    assert runner_commands(result.stdout + result.stderr) == [], result.stderr


def test_an_honest_report_is_unchanged_and_holds_no_command(built: Built) -> None:
    report = judge(built.wheel, built.sdist)
    assert report.passed
    text = report.render()
    assert runner_commands(text) == []
    assert "\\x23" not in text and "\\x3a" not in text  # nothing an honest run prints is escaped by the round's fix


def test_the_escape_keeps_no_double_hash_and_no_leading_colons() -> None:
    for text in ["##", "###", "####[x]", " \u3000::x::y", "a::b", "#\\x23"]:
        out = shown(text)
        assert "##" not in out and not out.lstrip().startswith("::"), out
    assert shown("a::b") == "a::b"  # '::' inside a line is no command: left as it is


def test_tarfile_reads_the_sdist_member_as_named(built: Built, tmp_path: Path) -> None:
    """The sdist's member is what pip's unpacker (tarfile) writes, a file named as the command: the name the report
    prints is the archive's, escaped only for the log."""
    name = f"{built.root}/##[group]x"
    sdist = write_sdist(tmp_path / built.sdist.name, raw_tar([*sdist_members(built.sdist), RawTarMember(name, b"")]))
    with tarfile.open(sdist) as tar:
        assert name in tar.getnames()


# 2. the one line python -m gate prints before it imports anything (round 45's stop on a module at the checkout's top)

TOP_NAMES = [
    "x\ngate: PASSED: neurobrix 0.1.0, 1 wheel, no findings, install smoke passed.py",  # a line of its own
    "\x1b[2K\x1b[1Ax.py",  # erases the line above
    "x\u2028gate: PASSED.py",  # a line break to str.splitlines
    "##[debug]x.py",  # the runner's command: the whole line hidden
]


@pytest.mark.parametrize("name", TOP_NAMES)
def test_the_stop_on_a_module_at_the_top_prints_its_name_escaped(tmp_path: Path, name: str) -> None:
    """A build step in the checkout names the file it leaves at the top: the stop's one line printed the name raw
    (round 45 wrote it after round 32 escaped every other line), so a line feed there printed a line of its own
    opening ``gate: PASSED``, an escape sequence repainted the log, and ``##[debug]`` hid the refusal from the log."""
    top = tmp_path / "top"
    shutil.copytree(REPO / "gate", top / "gate", ignore=shutil.ignore_patterns("__pycache__"))
    (top / name).write_text("raise SystemExit(0)\n")
    result = subprocess.run([sys.executable, "-m", "gate", "--help"], cwd=top, capture_output=True, text=True)
    assert result.returncode == 2, result.stdout + result.stderr  # stopped before any import, as round 45 has it
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gate: error: {top}: "), result.stderr
    assert "\x1b" not in result.stderr and not any(line.startswith("gate: PASSED") for line in lines)
    assert runner_commands(result.stderr) == [], result.stderr
