"""A release engineer's round: the gate wired into a pipeline, as README "For releases" tells one to.

The engineer builds the dists, runs ``python -m gate`` as a pipeline step, reads its exit codes and its ``--json``
report, cancels it as a CI runner does, and does what the README says between the gate and the upload. What this
round found wrong, and each test holds:

1. SIGTERM (what a CI runner sends a step it cancels or times out) killed the gate on the spot: exit -15, its
   temporary folders (the metadata reference, the sdist's rebuild, the install smoke's prefix) left behind. It now
   stops as Ctrl-C does: the folders removed, one line, exit 143.
2. ``--json FILE`` was written only at the end: a report an earlier run left there (``passed``) outlived a run that
   was interrupted or killed, and a report that could not be written (a folder, a read-only file system) failed
   after the whole judging, printing PASSED and then the same error line twice. The file is now written before
   anything is judged (``unusable``, "not finished"), replaced by the verdict at the end or by the interruption.
3. The README and ``--help`` left out what a pipeline needs: the exit codes of an interrupted or terminated run,
   that the gate runs only from the repository's root, that ``build --isolation`` is refused (G407) unless its
   downloaded backend is the installed one, the report's fields (``reference``, each dist's ``kind``, the smoke's
   ``status``...), and what to do between the gate and the upload; the recipe now in the README is run here
   against a file swapped after the gate and a file added.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO
from gate_fixtures import Built, rewrite_wheel
from test_gate_hostile import built
from test_gate_round33 import RELEASED, _release_grade

from gate.checks import Check, Finding
from gate.cli import build_parser, main
from gate.smoke import SmokeResult

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the module's built wheel and sdist, shared with the hostile corpus

README = (REPO / "README.md").read_text(encoding="utf-8")
RELEASES = README.split("## For releases", 1)[1].split("**Against a commit.**", 1)[0]


def run_main(argv: list[str]) -> int:
    """``python -m gate`` in this process, judging dists (not the checkout the tests run in: --allow-dirty)."""
    try:
        return main([argv[0], "--allow-dirty", *argv[1:]])
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.fixture(scope="module")
def upload(built, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    """A pipeline's work folder: dist/ with the wheel and the sdist, and the gate's report.json of them beside it."""
    work = tmp_path_factory.mktemp("pipeline")
    (work / "dist").mkdir()
    for dist in (built.wheel, built.sdist):
        shutil.copy2(dist, work / "dist")
    assert run_main(["check", "--no-smoke", "--json", str(work / "report.json"), str(work / "dist")]) == 0
    return work


def test_sigterm_removes_the_gate_temporary_folders_and_exits_143(upload: Path, tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    report = tmp_path / "report.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "gate", "check", "--allow-dirty", "--json", str(report), str(upload / "dist")],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(temp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not list(temp.glob("neurobrix-gate-*")):  # the gate is at work in a folder of its own
        assert process.poll() is None and time.monotonic() < deadline, "the gate made no temporary folder"
        time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 143, (process.returncode, out, err)
    assert err.splitlines() == ["gate: terminated (SIGTERM); nothing was passed"], err
    assert "PASSED" not in out
    assert list(temp.glob("neurobrix-gate-*")) == []
    data = json.loads(report.read_text())
    assert (data["verdict"], data["exit_code"]) == ("unusable", 143)


def test_an_interrupted_run_replaces_an_earlier_passing_report(
    upload: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import gate.cli

    report = tmp_path / "report.json"
    shutil.copy(upload / "report.json", report)  # the last run's, passed
    assert json.loads(report.read_text())["verdict"] == "passed"

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(gate.cli, "check", interrupted)
    assert run_main(["check", "--no-smoke", "--json", str(report), str(upload / "dist")]) == 130
    data = json.loads(report.read_text())
    assert (data["verdict"], data["exit_code"], data["dists"]) == ("unusable", 130, [])
    assert capsys.readouterr().err.splitlines() == ["gate: interrupted; nothing was passed"]


def test_a_run_killed_while_judging_leaves_no_passing_report(
    upload: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL runs no handler: what is on disk while the gate judges is what a killed run leaves."""
    import gate.cli

    report = tmp_path / "report.json"
    shutil.copy(upload / "report.json", report)
    seen: list[dict[str, object]] = []

    def killed(*args: object) -> None:
        seen.append(json.loads(report.read_text()))
        raise KeyboardInterrupt

    monkeypatch.setattr(gate.cli, "check", killed)
    run_main(["check", "--no-smoke", "--json", str(report), str(upload / "dist")])
    assert [(d["verdict"], d["exit_code"]) for d in seen] == [("unusable", 2)]
    assert "not finished" in str(seen[0]["error"])


@pytest.mark.parametrize("where", ["a folder", "a missing parent that is a file"])
def test_a_report_that_cannot_be_written_stops_the_run_before_judging(
    where: str, upload: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import gate.cli

    (tmp_path / "file").write_text("x")
    target = tmp_path if where == "a folder" else tmp_path / "file" / "report.json"

    def judged(*args: object) -> None:
        raise AssertionError("judged although its report cannot be written")

    monkeypatch.setattr(gate.cli, "check", judged)
    assert run_main(["check", "--no-smoke", "--json", str(target), str(upload / "dist")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gate: error: --json {target}: cannot be written"), lines


def test_the_readme_names_every_field_of_the_json_report(upload: Path) -> None:
    report = json.loads((upload / "report.json").read_text())
    fields = {
        "report": set(report),
        "dists": set(report["dists"][0]),
        "smoke": set(SmokeResult("x.whl", "skipped", "why").as_json()),
        "findings": set(Finding(Check.G101, "x.whl", None, "why").as_json()),
        "repository": set(report["repository"]),
    }
    missing = {part: sorted(k for k in keys if f"`{k}`" not in RELEASES) for part, keys in fields.items()}
    assert not any(missing.values()), missing
    for value in ("passed", "refused", "unusable", "wheel", "sdist", "failed", "skipped"):
        assert f"`{value}`" in RELEASES, value


def _publish_recipe() -> str:
    blocks = re.findall(r"```sh\n(.*?)\n```", RELEASES, re.S)
    recipes = [b for b in blocks if "sha256sum" in b]
    assert len(recipes) == 1, "the README gives no step between the gate and the upload"
    return recipes[0]


@pytest.mark.skipif(shutil.which("jq") is None, reason="the publish recipe needs jq")
def test_the_readme_publish_recipe_passes_only_the_judged_files(upload: Path, tmp_path: Path) -> None:
    recipe = _publish_recipe()
    work = tmp_path / "work"
    shutil.copytree(upload, work)
    # the fixture's run is --no-smoke on a tree maybe not clean, which the recipe refuses since round 42: the report a
    # release-grade run writes of the same files
    report = json.loads((work / "report.json").read_text(encoding="utf-8"))
    _release_grade(report)
    (work / "report.json").write_text(json.dumps(report), encoding="utf-8")
    env = {**os.environ, "GITHUB_SHA": RELEASED}

    def publishable() -> bool:
        result = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", recipe], cwd=work, capture_output=True, env=env)
        return result.returncode == 0

    assert publishable()
    sdist = next((work / "dist").glob("*.tar.gz"))
    original = sdist.read_bytes()
    sdist.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))  # swapped after the gate judged it
    assert not publishable()
    sdist.write_bytes(original)
    assert publishable()
    (work / "dist" / "extra-0.1.0-py3-none-any.whl").write_bytes(b"x")  # a file the gate never saw
    assert not publishable()


def test_help_and_readme_say_what_a_pipeline_needs() -> None:
    parser = build_parser()
    epilog = " ".join((parser.epilog or "").split())
    for text in ("130 interrupted", "143 terminated", "repository's root"):
        assert text in epilog, text
    for text in ("130 interrupted", "143 terminated", "root of a"):
        assert text in " ".join(RELEASES.split()), text
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    isolation = next(a for a in commands.choices["build"]._actions if "--isolation" in a.option_strings)
    assert "G407" in (isolation.help or "")
    assert re.search(r"--isolation \(which downloads the\s+# backend: its wheel is refused, G407", RELEASES)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["check", "--no-smoke", "/dev/null"], "/dev/null: not a regular file or a folder"),  # it exists: not "no such"
        # the file in the way named (walk-through round 46; "cannot make this folder to build into" before)
        (["build", "--no-smoke", "--outdir", "{file}/dist"], "{file}/dist: {file} is a file, not a folder"),
    ],
)
def test_user_mistakes_are_one_line_that_says_what_is_wrong(
    argv: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("not a folder")
    argv = [a.replace("{file}", str(tmp_path / "file")) for a in argv]
    assert run_main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gate: error: {says.replace('{file}', str(tmp_path / 'file'))}"), (
        lines
    )


def test_a_report_into_a_stream_is_the_verdict_alone(upload: Path) -> None:
    """``--json /dev/stdout`` or ``--json >(jq ...)``: a pipe takes one report, so nothing is written there first."""
    result = subprocess.run(
        [sys.executable, "-m", "gate", "check", "--allow-dirty", "--no-smoke", "--json", "/dev/stdout"]
        + [str(upload / "dist")],
        cwd=REPO,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    start = result.stdout.index("{\n")
    report, end = json.JSONDecoder().raw_decode(result.stdout, start)
    assert report["verdict"] == "passed"
    assert "{\n" not in result.stdout[:start] + result.stdout[end:], result.stdout


def test_a_log_that_is_not_utf8_gets_the_verdict_not_an_internal_error(built: Built, tmp_path: Path) -> None:  # noqa: F811
    """A CI log in ASCII (``PYTHONIOENCODING=ascii``, a cp1252 console): a finding that names a member ``café.py``
    made printing the report fail, "internal error" (exit 2) and no report at all, instead of the refusal."""
    wheel = rewrite_wheel(built.wheel, tmp_path, add=[("neurobrix/caf\u00e9.py", b"")])
    result = subprocess.run(
        [sys.executable, "-m", "gate", "check", "--allow-dirty", "--no-smoke", str(wheel)],
        cwd=REPO,
        env={**os.environ, "PYTHONIOENCODING": "ascii"},
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    out = result.stdout.decode("ascii")  # every byte ASCII: the name is written as its escape
    assert result.returncode == 1, result.stderr
    assert "neurobrix/caf\\xe9.py" in out
    assert out.splitlines()[-1].startswith("gate: REFUSED")
