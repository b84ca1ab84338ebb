"""The thirty-third round against the release gate: the release pipeline around it, not one dist.

An attacker inside the pipeline (a compromised build step, a contributor's pull request, a file changed between two
steps) tries to get bytes to PyPI that the gate did not judge, or to make the publish step believe the gate passed.
The dists were built with the README's command, gated, then altered, and the README's publish commands and
release.yml's publish step (up to, not including, the upload) were run on them. What did not hold is held here:

1. the publish job believed any report in the `gate-report` artifact that matched the files in the `dist` artifact.
   Artifacts are the run's, not a job's: code in any job of the run that reads the run's artifact token (the build
   job runs the build backend and every dev dependency, none pinned by hash) can delete and upload them, and a
   report rewritten with the sha256 of other bytes, beside those bytes, passed every check. The gate job now passes
   the sha256 of the report its gate step wrote as a job output, which no other job sets, and the publish step
   refuses a report of other bytes (or no such output) first;
2. the publish check listed dist/ by name only, so a dist replaced by a link to the same bytes passed it, and twine
   uploads what the link points at when it runs (the gate refuses a link for that reason, G001); the listing now
   carries each entry's type and only regular files match the report's list, in the README's commands and the job;
3. neither the README's commands nor the job read the report's `format`, which the README tells a pipeline to read
   first; both require format 1 now, and the job requires the `gate-report` artifact to hold the report alone
   (the workspace is on ``sys.path`` for ``python -m``: a planted ``gate/__init__.py`` is a package ``gate``);
4. ``gate check dist && twine upload dist/*``, the simplest pipeline, passed a folder to which a parallel step added
   a wheel a second into the run (run for real: PASSED, the report listing the two files judged, and twine would
   take the third); the gate reads each folder's entries again at the end, as it hashes each dist again (G003).

What was refused already is pinned: a changed, appended, missing or extra dist, a folder, a hidden file (which the
gate passes, as `dist/*` skips it, and the publish check refuses), dist/ itself a link, a report listing a dist
twice or with no sha256.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO
from test_workflows import gated_folder, load, release_env, require, run_step, step, step_env

README = REPO / "README.md"
VERIFY = "Upload only what the gate passed, byte for byte"


def readme_publish_commands() -> str:
    """The README's commands a pipeline runs between the gate and the upload (its `sh` block after that sentence)."""
    text = README.read_text(encoding="utf-8")
    start = text.index("A pipeline of its own does between the gate and the upload")
    found = re.search(r"```sh\n(.*?)```", text[start:], re.S)
    assert found
    return found[1]


def report_sha256(work: Path, report: str) -> str:
    import hashlib

    return hashlib.sha256((work / report).read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dist/ built with the gate's build command from this checkout, and the gate's report of it."""
    require("jq", "sha256sum", "diff", "find")
    root = tmp_path_factory.mktemp("released")
    result = subprocess.run(
        [sys.executable, "-m", "gate", "build", "--outdir", str(root / "dist"), "--no-smoke", "--allow-dirty"]
        + ["--json", str(root / "report.json")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return root


def _rewrite(work: Path, report: str, change: Callable[[dict], None]) -> None:  # type: ignore[type-arg]
    data = json.loads((work / report).read_text(encoding="utf-8"))
    change(data)
    (work / report).write_text(json.dumps(data), encoding="utf-8")


def tamper(work: Path, report: str, how: str) -> None:
    """Alter dist/ or the report the way ``how`` says, after the gate judged them."""
    dist = work / "dist"
    wheel = next(dist.glob("*.whl"))
    sdist = next(dist.glob("*.tar.gz"))
    if how == "a byte appended to the wheel":
        wheel.write_bytes(wheel.read_bytes() + b"\0")
    elif how == "a second wheel":
        shutil.copy(wheel, dist / wheel.name.replace("-any.whl", "-manylinux_2_28_x86_64.whl"))
    elif how == "the sdist missing":
        sdist.unlink()
    elif how == "a folder":
        (dist / "sub").mkdir()
    elif how == "a hidden file":
        (dist / ".neurobrix.pth").write_text("import os\n")
    elif how == "the wheel a link to the same bytes":
        outside = work / "elsewhere.whl"
        shutil.move(wheel, outside)
        wheel.symlink_to(outside)
    elif how == "dist/ a link to the folder":
        dist.rename(work / "real-dist")
        dist.symlink_to(work / "real-dist")
    elif how == "an attestation for other bytes":
        (dist / f"{wheel.name}.publish.attestation").write_text('{"envelope": {}}')
    elif how == "a module beside the report":
        (work / report).parent.joinpath("__init__.py").write_text("import os\n")
    elif how == "a report of another format":
        _rewrite(work, report, lambda d: d.update(format=2))
    elif how == "a report listing the wheel twice":
        _rewrite(work, report, lambda d: d["dists"].append(d["dists"][0]))
    elif how == "a report with no sha256":
        _rewrite(work, report, lambda d: d["dists"][0].update(sha256=None))
    else:
        assert how == "nothing"


RELEASED = "1" * 40  # the commit a release-grade report names, and the one the README's commands release


def _release_grade(data: dict) -> None:  # type: ignore[type-arg]
    """What a run with the install smoke on a clean tree at RELEASED writes (round 42: the README's commands read
    both); the fixture's gate run is --no-smoke --allow-dirty, judging this checkout's dists at whatever state."""
    wheels = [d["file"] for d in data["dists"] if d["kind"] == "wheel"]
    data["smoke"] = [{"wheel": w, "status": "passed", "detail": "installed"} for w in wheels]
    data["repository"] = {"commit": RELEASED, "clean": True, "differs": []}


TAMPERS = [
    "nothing",
    "a byte appended to the wheel",
    "a second wheel",
    "the sdist missing",
    "a folder",
    "a hidden file",
    "an attestation for other bytes",
    "the wheel a link to the same bytes",
    "dist/ a link to the folder",
    "a report of another format",
    "a module beside the report",
    "a report listing the wheel twice",
    "a report with no sha256",
]


@pytest.mark.parametrize("how", [t for t in TAMPERS if t != "a module beside the report"])  # the job's own artifact
def test_the_readme_publish_commands_pass_only_the_files_the_gate_judged(gated: Path, tmp_path: Path, how: str) -> None:
    """The README's four commands, as written there, on this checkout's own dists and the gate's report of them."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copytree(gated / "dist", work / "dist")
    shutil.copy(gated / "report.json", work / "report.json")
    _rewrite(work, "report.json", _release_grade)  # the fixture's run skipped the smoke on a tree maybe not clean
    tamper(work, "report.json", how)
    result = run_step(readme_publish_commands(), work, {"GITHUB_SHA": RELEASED}, tmp_path / "bin")
    assert (result.returncode == 0) == (how == "nothing"), result.stdout + result.stderr


@pytest.mark.parametrize("how", TAMPERS)
def test_the_publish_step_passes_only_the_files_the_gate_judged(tmp_path: Path, how: str) -> None:
    """release.yml's check, on files and a report the gate's report code wrote, the gate job's output its sha256."""
    require("jq", "sha256sum", "diff", "find")
    work = gated_folder(tmp_path)
    outputs = {"report-sha256": report_sha256(work, "gate/report.json")}
    if how.startswith("a report"):  # a report the gate wrote so: its own sha256 is the gate job's output
        tamper(work, "gate/report.json", how)
        outputs = {"report-sha256": report_sha256(work, "gate/report.json")}
    else:
        tamper(work, "gate/report.json", how)
    verify = step(load("release.yml")["jobs"]["publish"], VERIFY)
    result = run_step(verify["run"], work, release_env(tmp_path) | step_env(verify, outputs), tmp_path / "bin")
    assert (result.returncode == 0) == (how == "nothing"), result.stdout + result.stderr


def _replace_wheel_and_its_hash(work: Path) -> None:
    wheel = next((work / "dist").glob("*.whl"))
    wheel.write_bytes(b"other bytes, never judged")
    import hashlib

    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    _rewrite(work, "gate/report.json", lambda d: d["dists"][0].update(sha256=digest))


def _add_a_wheel_to_both(work: Path) -> None:
    import hashlib

    extra = work / "dist" / "neurobrix-0.0.1-py3-none-any.whl"
    extra.write_bytes(b"an older version's wheel, never judged")
    row = {"file": extra.name, "kind": "sdist", "sha256": hashlib.sha256(extra.read_bytes()).hexdigest()}
    _rewrite(work, "gate/report.json", lambda d: d["dists"].append(row))


@pytest.mark.parametrize(
    "forge",
    [_replace_wheel_and_its_hash, _add_a_wheel_to_both, None],
    ids=["a wheel and its sha256 in the report replaced", "a wheel added to both", "no gate job output"],
)
def test_a_report_not_the_one_the_gate_job_wrote_is_refused(
    tmp_path: Path, forge: Callable[[Path], None] | None
) -> None:
    """Both artifacts rewritten together, as code in another job of the run can: the check held the files to the
    report and the report to nothing; the report must now be the one whose sha256 the gate job passed on."""
    require("jq", "sha256sum", "diff", "find")
    work = gated_folder(tmp_path)
    outputs = {"report-sha256": report_sha256(work, "gate/report.json")}  # the gate job's, before the forgery
    if forge is None:
        outputs = {}
    else:
        forge(work)
    verify = step(load("release.yml")["jobs"]["publish"], VERIFY)
    env = release_env(tmp_path) | step_env(verify, outputs)
    result = run_step(verify["run"], work, env, tmp_path / "bin")
    assert result.returncode != 0, result.stdout + result.stderr
    # refused by the report's own sha256, the first check, in one line
    assert result.stderr.strip().splitlines() == [
        "gate/report.json is not the report the gate job wrote"
        " (its sha256 is not the job's output report-sha256): not uploading"
    ]
    # and without the binding the forgery would have passed every other check (what the step was before)
    lines = verify["run"].splitlines()
    first = next(i for i, line in enumerate(lines) if "GATE_REPORT_SHA256" in line)
    last = lines.index("}", first)
    unbound = "\n".join(lines[:first] + lines[last + 1 :])
    if forge is not None:
        assert run_step(unbound, work, env, tmp_path / "bin").returncode == 0


def test_the_readme_commands_are_the_publish_steps_own() -> None:
    """What the README tells a pipeline to run is what the publish job runs, with the report where each keeps it."""
    job = step(load("release.yml")["jobs"]["publish"], VERIFY)["run"]
    for line in readme_publish_commands().splitlines():
        if line.startswith(("#", "sums=$(mktemp)")):
            continue  # a comment of its own line (the job words its own); the README's file for the sums
        command = line.split("    #")[0].strip().replace("report.json", "gate/report.json")
        # the sums outside the folder the uploader runs from: the job's $RUNNER_TEMP, the README's mktemp (walk-through
        # round 47: it wrote SHA256SUMS beside the dists and the report, where it then said they lie alone)
        command = command.replace('> "$sums"', '> "$RUNNER_TEMP/SHA256SUMS"').replace(
            '--strict "$sums"', '--strict "$RUNNER_TEMP/SHA256SUMS"'
        )
        command = re.sub(r"  # .*$", "", command)
        assert command in job, command


@pytest.mark.parametrize(
    "change",
    ["a wheel of another name", "a file", "the wheel made a link to its own bytes", "nothing"],
)
def test_an_upload_folder_that_changes_while_judged_is_refused(
    gated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """Another process (a parallel build step writing into the same dist/) adds to the folder once the gate has read
    it: `gate check dist && twine upload dist/*` uploaded a wheel nobody judged under a PASSED verdict (run for real
    with `cp` a second into `python -m gate check`); it is G003 now, as a dist changed while judged is."""
    from gate import checker
    from gate.completeness import load_reference

    folder = tmp_path / "dist"
    shutil.copytree(gated / "dist", folder)
    wheel = next(folder.glob("*.whl"))
    real_load = checker.load_repository

    def load_and_change(root: Path) -> object:  # once every dist of the folder is open and read
        if change == "a wheel of another name":
            shutil.copy(wheel, folder / wheel.name.replace("-any.whl", "-manylinux_2_28_x86_64.whl"))
        elif change == "a file":
            (folder / "notes.txt").write_text("never judged\n")
        elif change == "the wheel made a link to its own bytes":
            shutil.move(wheel, tmp_path / "elsewhere.whl")
            wheel.symlink_to(tmp_path / "elsewhere.whl")
        return real_load(root)

    monkeypatch.setattr(checker, "load_repository", load_and_change)
    report = checker.check([folder], checker.Options(load_reference(checker.DEFAULT_TRACKED), smoke=False, tools=False))
    if change == "nothing":
        assert report.passed, [(f.code, f.path, f.message) for f in report.findings]
        return
    assert not report.passed and report.exit_code == 1
    (finding,) = [f for f in report.findings if f.code == "G003" and f.dist == "dist/"]
    assert finding.path in {p.name for p in folder.iterdir()}
    assert [d.file for d in report.dists] == sorted(p.name for p in (gated / "dist").iterdir())


@pytest.mark.parametrize("named", ["the folder", "its files"])
def test_a_report_written_through_a_link_into_the_upload_folder_is_refused(
    gated: Path, tmp_path: Path, named: str
) -> None:
    """`--json` naming a link whose target is in the folder to upload would put the report among the dists (and
    replace one of them, were it named so); refused before anything is judged, exit 2, one line."""
    folder = tmp_path / "dist"
    shutil.copytree(gated / "dist", folder)
    link = tmp_path / "report.json"
    link.symlink_to(folder / "report.json")
    dists = [str(folder)] if named == "the folder" else [str(p) for p in sorted(folder.iterdir())]
    result = subprocess.run(
        [sys.executable, "-m", "gate", "check", *dists, "--no-smoke", "--allow-dirty", "--json", str(link)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip().splitlines() == [
        f"gate: error: --json {link}: inside {folder}, the folder to be uploaded; write the report somewhere else"
    ]
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in (gated / "dist").iterdir())
