"""The forty-seventh round against the release gate: release.yml between the gate and the upload.

The class: the dists the gate judged against the ones uploaded (an artifact replaced between jobs, a second artifact
of the name, a step between the gate and twine that can write the upload folder or what runs there), the commit
judged against the tag released, and the workflow's hygiene its own tests claim. Read for it: release.yml, its tests
(tests/test_workflows.py, rounds 33, 34, 36, 42 and 46) and rounds 44 to 46.

Found and fixed (each test below failing before, shown with release.yml's change reverted):

1. the publish job held ``dist/`` and ``gate/`` to the gate's report, entry by entry, but not the folder they lie in.
   That folder is the job's workspace, and every later step of the job that holds the id token runs Python there
   with ``python -m`` (pip, ``pypi_attestations sign``, ``twine upload``), which puts the working folder first on
   ``sys.path``: a ``twine/`` package or a ``pypi_attestations.py`` beside the two downloads runs instead of the
   locked tool, with the token, and uploads whatever it likes (shown here: a planted ``twine/`` ran under
   ``python -m twine`` from the workspace). Nothing in the job writes there but the two downloads and the lock's
   checkout (into ``publish-lock/``, a name no module has); a download that wrote outside its ``path:`` would (an
   artifact is any job's of the run to replace, round 33, and download-artifact's guard against ``..`` in the zip
   could not be read or run here: not shown on GitHub). The verify step now requires the workspace to hold exactly
   ``dist/`` and ``gate/``, and the job sets ``PYTHONSAFEPATH=1`` (Python 3.11's ``-P``: the working folder never on
   ``sys.path``) for every step, so that the check and the running both hold. A hidden module, a link named as a
   module and a folder beside the downloads are refused alike (eight cases here failed before, one passed: the
   workspace with the two downloads alone).

Pinned (passing before and after): the verify step still passes the release chain as the steps write it
(tests/test_workflows.py and round 33 run it, on a workspace holding the two downloads alone).

Looked at and found held, not built again: the report bound to the gate job by its output ``report-sha256`` and the
files to the report, byte for byte, by type and by count (round 33: a replaced or second ``dist`` artifact is other
bytes, refused); the commit (every checkout takes ``GITHUB_SHA``, the event's commit, not the tag as it is when the
job runs, and the publish step requires the report's commit to be it: a tag moved after the gate is another run, whose
files PyPI refuses as already there); ``--expect-version`` read by PEP 440 (round 44); actions pinned by full sha,
``permissions: {}`` at the top, the id token in the publish job alone, no cache, credentials dropped
(tests/test_workflows.py, zizmor and actionlint clean with the change). Left open: a download that writes outside its
``path:`` could still write anywhere else the job later reads (the runner's temp, the tool cache setup-python fills
afterwards); and between the check and ``twine upload`` the files are read again (round 33's note).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_workflows import gated_folder, load, release_env, require, run_step, step, step_env

VERIFY = "Upload only what the gate passed, byte for byte"


def publish_job() -> dict:
    job: dict = load("release.yml")["jobs"]["publish"]
    return job


def report_sha256(work: Path) -> str:
    out = subprocess.run(["sha256sum", "gate/report.json"], cwd=work, capture_output=True, text=True, check=True)
    return out.stdout.split()[0]


def plant(work: Path, what: str) -> None:
    """Put ``what`` at the workspace's top, beside the two downloads, as a download or step writing outside its
    folder would."""
    marker = "import pathlib; pathlib.Path('PLANTED-RAN').write_text('ran')\n"
    if what == "nothing":
        return
    if what == "a twine/ package":
        (work / "twine").mkdir()
        (work / "twine" / "__init__.py").write_text(marker, encoding="utf-8")
        (work / "twine" / "__main__.py").write_text(marker, encoding="utf-8")
    elif what == "pypi_attestations.py":
        (work / "pypi_attestations.py").write_text(marker, encoding="utf-8")
    elif what == "a pip/ package":
        (work / "pip").mkdir()
        (work / "pip" / "__init__.py").write_text(marker, encoding="utf-8")
    elif what == "a hidden module":
        (work / ".hidden.py").write_text(marker, encoding="utf-8")
    elif what == "a link named twine":
        elsewhere = work.parent / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "__init__.py").write_text(marker, encoding="utf-8")
        os.symlink(elsewhere, work / "twine")
    elif what == "a folder without a module":
        (work / "other").mkdir()
    else:  # pragma: no cover
        raise AssertionError(what)


PLANTS = [
    "nothing",
    "a twine/ package",
    "pypi_attestations.py",
    "a pip/ package",
    "a hidden module",
    "a link named twine",
    "a folder without a module",
]


@pytest.mark.parametrize("what", PLANTS)
def test_the_verify_step_refuses_anything_beside_the_two_downloads(tmp_path: Path, what: str) -> None:
    """Fix 1: the workspace where the publish job runs ``python -m`` holds ``dist/`` and ``gate/`` alone."""
    require("jq", "sha256sum", "diff", "find")
    work = gated_folder(tmp_path)
    plant(work, what)
    verify = step(publish_job(), VERIFY)
    outputs = {"report-sha256": report_sha256(work)}
    result = run_step(verify["run"], work, release_env(tmp_path) | step_env(verify, outputs), tmp_path / "bin")
    assert (result.returncode == 0) == (what == "nothing"), result.stdout + result.stderr
    assert not (work / "PLANTED-RAN").exists()  # the step runs no Python


def test_the_publish_job_keeps_its_workspace_off_sys_path(tmp_path: Path) -> None:
    """Fix 1, the running: under the publish job's env, ``python -m twine`` from a workspace holding a planted
    ``twine/`` runs the installed twine (this machine's), not the plant. Before, the plant ran."""
    pytest.importorskip("twine")
    job = publish_job()
    work = tmp_path / "work"
    work.mkdir()
    plant(work, "a twine/ package")
    env = {str(k): str(v) for k, v in job.get("env", {}).items()}
    result = run_step("python -m twine --version", work, env, tmp_path / "bin")
    assert not (work / "PLANTED-RAN").exists(), "the workspace's twine/ ran in the publish job"
    assert result.returncode == 0 and "twine" in result.stdout.lower(), result.stdout + result.stderr


def test_every_python_of_the_publish_job_runs_under_the_safe_path() -> None:
    """The env is the job's, for every step, and no step sets it back; the job's Python (3.11, setup-python's) reads
    PYTHONSAFEPATH (it came in 3.11), as this one does."""
    job = publish_job()
    assert job.get("env", {}).get("PYTHONSAFEPATH") == "1"
    for s in job["steps"]:
        assert "PYTHONSAFEPATH" not in s.get("env", {}), s.get("name")
        code = [line for line in s.get("run", "").splitlines() if not line.lstrip().startswith("#")]
        assert not any("PYTHONSAFEPATH" in line for line in code), s.get("name")
    pythons = {
        str(s["with"]["python-version"]) for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python@")
    }
    assert pythons == {"3.11"}
    probe = subprocess.run(
        [sys.executable, "-c", "import sys; print(sys.flags.safe_path)"],
        env={**os.environ, "PYTHONSAFEPATH": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip() == "True"
    # the check comes before any step that runs Python in the workspace
    names = [s.get("name") for s in job["steps"]]
    runs_python = [re.search(r"^\s*python\b", s.get("run", ""), re.M) is not None for s in job["steps"]]
    first_python = runs_python.index(True)
    assert names.index(VERIFY) < first_python
