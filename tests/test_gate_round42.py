"""The forty-second round against the release gate: the release pipeline end to end, not one archive at a time.

The dists a release uploads pass from the build, through the gate and its JSON report, to the README's commands (or
release.yml's publish step) and `twine upload dist/*`. Each idea was held against that chain: a dist replaced,
appended to or touched after the gate; a file in dist/ the gate did not see; a report from another run, another
commit or another run's options; what twine reads of a dist. Found and fixed, each test failing before:

1. ``--tracked FILE``: a wheel's and an sdist's tables are judged against the reference tracked list, not against git,
   and nothing held that list to the commit. A copy of this repository, clean at its commit, judged dists whose table
   held bytes the commit never held (built from a tree with the table and its list edited, then restored) with
   ``--tracked`` naming the edited list: PASSED, install smoke passed, the report's ``repository`` clean at that
   commit, and both the README's commands and release.yml's publish checks took it. The tree state now names such a
   list among what is not the commit's (``clean`` false): without ``--allow-dirty`` the run stops (exit 2), with it
   the verdict says it is no release check, and every publish check that reads ``clean`` refuses the report;
2. the README's commands for "a pipeline of its own" read the verdict and the files only: a ``--no-smoke`` run, an
   ``--allow-dirty`` run and another commit's report passed them (release.yml's job reads all three; the README named
   them in a parenthesis after the block a pipeline copies). The block now holds the job's two checks.

Pinned, each refused already: beside the dists, files twine uploads or attaches that the gate does not judge (a
``.zip``, ``.tar.bz2`` or ``.egg`` dist, a ``.asc`` signature, an upper-case ``.WHL``, a second wheel of another tag or
another version), by the gate's folder reading and by the README's commands; and a dist touched after the gate (its
time changed, its bytes not), which passes, since twine sends bytes, never times.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from packaging.version import Version
from test_gate_round33 import VERIFY, readme_publish_commands
from test_workflows import gated_folder, load, release_env, require, run_step, step, step_env

from gate.build import build_project
from gate.checker import Options, check, collect
from gate.completeness import load_reference
from gate.report import Report
from gate.repository import read_tree_state
from neurobrix import __version__

TABLE = "tables/nvidia-h200/linear.json"
LISTED = "tables/TRACKED.yaml"


def _git(cwd: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=round42", "-c", "user.email=round42@localhost", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def _git_copy(copy: Path) -> None:
    """This checkout's tracked files as its working tree holds them, committed in a git repository of their own."""
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for raw in filter(None, listing.split(b"\0")):
        source = REPO / os.fsdecode(raw)
        if not source.is_file():
            continue  # deleted in the working tree
        target = copy / os.fsdecode(raw)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    _git(copy, "init", "-q")
    _git(copy, "add", "-A")
    _git(copy, "commit", "-q", "-m", "this checkout")


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``repo``: a clean git copy of this checkout; ``dist``: its wheel and sdist built with one table's bytes and its
    entry in the tracked list edited (a space after the JSON's first brace: the engine loads it as before, and
    `neurobrix tables verify` passes it), the tree restored afterwards; ``other.yaml``: the edited list."""
    root = tmp_path_factory.mktemp("round42")
    copy = root / "repo"
    _git_copy(copy)
    table, listed = copy / TABLE, copy / LISTED
    old = table.read_bytes()
    new = old.replace(b"{", b"{ ", 1)
    before = f"sha256: {hashlib.sha256(old).hexdigest()}\n  size: {len(old)}\n"
    after = f"sha256: {hashlib.sha256(new).hexdigest()}\n  size: {len(new)}\n"
    text = listed.read_text(encoding="utf-8")
    assert text.count(before) == 1
    table.write_bytes(new)
    listed.write_text(text.replace(before, after), encoding="utf-8")
    build_project(copy, root / "dist")
    shutil.copy(listed, root / "other.yaml")
    _git(copy, "checkout", "-q", "--", ".")
    assert read_tree_state(copy).clean
    return root


@pytest.fixture(scope="module")
def judged(planted: Path) -> Report:
    """The gate's judgement of the planted dists against the copy, --tracked naming the edited list (smoke on)."""
    options = Options(load_reference(planted / "other.yaml"), Version(__version__), source_tree=planted / "repo")
    return check([planted / "dist"], options)


def test_a_run_against_another_tracked_list_is_no_release_check(planted: Path, judged: Report) -> None:
    """Every check of the dists passes against the edited list (the tables are judged against it, not git), the
    install smoke too; the report's tree state names the list, so `clean` is false: before, it was the commit's."""
    assert judged.passed, judged.render()
    assert [s.status for s in judged.smoke] == ["passed"]
    state = judged.repository
    assert state is not None
    assert state.commit == _git(planted / "repo", "rev-parse", "HEAD")
    assert not state.clean
    assert state.differs == (f"--tracked {planted / 'other.yaml'}: not the commit's {LISTED}",)
    assert "not a release check" in judged.verdict()


def test_the_commits_own_tracked_list_is_a_release_check(planted: Path, tmp_path: Path) -> None:
    """The list the commit holds, where the repository keeps it or copied elsewhere byte for byte, changes nothing."""
    from gate.repository import with_reference  # this round's: the other tests run (and fail) without it

    copy = planted / "repo"
    state = read_tree_state(copy)
    own = (copy / LISTED).read_bytes()
    shutil.copy(copy / LISTED, tmp_path / "same.yaml")
    assert with_reference(state, copy, own, copy / LISTED) == state
    assert with_reference(state, copy, (tmp_path / "same.yaml").read_bytes(), tmp_path / "same.yaml") == state
    assert not with_reference(state, copy, own + b"\n", tmp_path / "same.yaml").clean


def _publish_folder(planted: Path, report: dict, tmp_path: Path) -> Path:  # type: ignore[type-arg]
    work = tmp_path / "work"
    shutil.copytree(planted / "dist", work / "dist")
    (work / "gate").mkdir()
    (work / "gate" / "report.json").write_text(json.dumps(report), encoding="utf-8")
    shutil.copy(work / "gate" / "report.json", work / "report.json")  # where the README's commands read it
    return work


def _readme_and_publish_step(work: Path, commit: str, tmp_path: Path) -> tuple[int, int]:
    # the publish job's workspace holds dist/ and gate/ alone (gate round 47): the job runs on its own copy, without
    # the README's report.json and the SHA256SUMS its commands write
    job_work = work.parent / "job"
    shutil.copytree(work, job_work)
    (job_work / "report.json").unlink()
    readme = run_step(readme_publish_commands(), work, {"GITHUB_SHA": commit}, tmp_path / "bin")
    verify = step(load("release.yml")["jobs"]["publish"], VERIFY)
    sha256 = hashlib.sha256((job_work / "gate" / "report.json").read_bytes()).hexdigest()
    env = release_env(tmp_path) | step_env(verify, {"report-sha256": sha256}) | {"GITHUB_SHA": commit}
    job = run_step(verify["run"], job_work, env, tmp_path / "bin")
    return readme.returncode, job.returncode


def test_the_publish_checks_refuse_a_report_judged_against_another_list(
    planted: Path, judged: Report, tmp_path: Path
) -> None:
    """The README's commands and release.yml's publish step, on the planted dists and the gate's report of them (the
    gate job's output its sha256, the commit the copy's): refused; the same report with the tree state the gate
    wrote before this round (clean at the commit) passed both, and twine would have uploaded the edited table."""
    require("jq", "sha256sum", "diff", "find")
    commit = _git(planted / "repo", "rev-parse", "HEAD")
    work = _publish_folder(planted, judged.as_json(), tmp_path / "now")
    readme, job = _readme_and_publish_step(work, commit, tmp_path / "now")
    assert readme != 0 and job != 0
    before = judged.as_json() | {"repository": {"commit": commit, "clean": True, "differs": []}}
    work = _publish_folder(planted, before, tmp_path / "before")
    assert _readme_and_publish_step(work, commit, tmp_path / "before") == (0, 0)


def test_the_command_line_stops_a_run_against_another_list(planted: Path, tmp_path: Path) -> None:
    """`gate check --tracked FILE` of other bytes than the commit's list, without --allow-dirty: exit 2 before anything
    is judged, one line naming the list (this checkout's own tree state may add its edits: it is a developer's)."""
    result = subprocess.run(
        [sys.executable, "-m", "gate", "check", "--no-smoke", "--tracked", str(planted / "other.yaml")]
        + [str(planted / "dist"), "--json", str(tmp_path / "report.json")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    assert len(result.stderr.strip().splitlines()) == 1
    assert f"--tracked {planted / 'other.yaml'}: not the commit's {LISTED}" in result.stderr
    assert json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["verdict"] == "unusable"


@pytest.mark.parametrize(
    "run",
    ["release-grade", "--no-smoke", "a skipped smoke", "--allow-dirty", "another commit", "no tree recorded"],
)
def test_the_readme_commands_take_only_a_release_grade_report(tmp_path: Path, run: str) -> None:
    """Reports the gate's own report code writes for each kind of run, every file matching: the README's commands
    passed all six (verdict `passed` each); only a run with the smoke passed, clean at the commit released, passes."""
    require("jq", "sha256sum", "diff", "find")
    smoke = {"--no-smoke": "--no-smoke", "a skipped smoke": "skipped"}.get(run, "passed")
    work = gated_folder(tmp_path, smoke=smoke)
    path = work / "gate" / "report.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    commit = data["repository"]["commit"]
    if run == "--allow-dirty":
        data["repository"] = {"commit": commit, "clean": False, "differs": ["neurobrix/cli.py"]}
    elif run == "another commit":
        data["repository"] = {"commit": "0" * len(commit), "clean": True, "differs": []}
    elif run == "no tree recorded":
        data["repository"] = None
    assert data["verdict"] == "passed"
    (work / "report.json").write_text(json.dumps(data), encoding="utf-8")
    result = run_step(readme_publish_commands(), work, {"GITHUB_SHA": commit}, tmp_path / "bin")
    assert (result.returncode == 0) == (run == "release-grade"), result.stdout + result.stderr


BESIDE = [
    "neurobrix-{v}.zip",  # an sdist to twine (DIST_EXTENSIONS) and to pip
    "neurobrix-{v}.tar.bz2",
    "neurobrix-{v}-py3.11.egg",
    "neurobrix-{v}-py3-none-any.whl.asc",  # a signature twine attaches to the wheel's upload
    "neurobrix-{v}-py3-none-any.WHL",  # no dist to twine (its test is case-sensitive), one to the gate: G405
    "neurobrix-{v}-py3-none-manylinux_2_28_x86_64.whl",  # judged by the gate: G407
    "neurobrix-0.0.1-py3-none-any.whl",  # judged by the gate: G602
]


@pytest.mark.parametrize("name", BESIDE)
def test_a_file_beside_the_dists_that_the_report_does_not_name_is_refused(tmp_path: Path, name: str) -> None:
    """A file the build job's step or a parallel one leaves beside the judged dists after the gate: the README's
    listing refuses it; in the folder the gate judges, it is G001 or a dist judged (and refused) on its own."""
    require("jq", "sha256sum", "diff", "find")
    work = gated_folder(tmp_path)
    shutil.copy(work / "gate" / "report.json", work / "report.json")
    commit = json.loads((work / "report.json").read_text(encoding="utf-8"))["repository"]["commit"]
    assert run_step(readme_publish_commands(), work, {"GITHUB_SHA": commit}, tmp_path / "bin").returncode == 0
    extra = work / "dist" / name.format(v=__version__)
    extra.write_bytes(b"not judged")
    assert run_step(readme_publish_commands(), work, {"GITHUB_SHA": commit}, tmp_path / "bin").returncode != 0
    dists, findings = collect([work / "dist"])
    if extra.suffix.lower() == ".whl":
        assert extra.resolve() in dists
    else:
        assert [(f.code, f.path) for f in findings] == [("G001", extra.name)]


def test_a_dist_touched_after_the_gate_still_passes(tmp_path: Path) -> None:
    """Its time changed, its bytes not: twine sends the bytes and their digests, never a time, so nothing differs."""
    require("jq", "sha256sum", "diff", "find")
    work = gated_folder(tmp_path)
    shutil.copy(work / "gate" / "report.json", work / "report.json")
    commit = json.loads((work / "report.json").read_text(encoding="utf-8"))["repository"]["commit"]
    for dist in (work / "dist").iterdir():
        os.utime(dist, (0, 0))
    assert run_step(readme_publish_commands(), work, {"GITHUB_SHA": commit}, tmp_path / "bin").returncode == 0
