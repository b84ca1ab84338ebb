"""The twenty-first round against the release gate: dists that read one way, byte for byte the repository's files, and
still say something other than the repository at the commit judged says.

Held against what a user's installer, build frontend and Python do with them (pip, hatchling, pytest, `python -m`):
the wheel's METADATA, WHEEL, entry points, RECORD and every member, and the sdist's pyproject.toml, PKG-INFO and files,
were found pinned already (an added or loosened Requires-Dist, another Requires-Python or Metadata-Version, a Dynamic or
License-File field: G406; Root-Is-Purelib false, a second Tag, a Build line: G407; another callable or group: G408;
a .pth, sitecustomize.py, a .so or a __pycache__ .pyc beside the sources, a module under neurobrix/ops/ (whose
__init__.py imports every module in its folder), anything under .data/: G107 or G104; a setup.py, hatch.toml, build
hook, backend or backend-path: G509; with its sdist, the wheel is the one built from it, G508). Two classes passed, each
refused now (every case below failed on the gate before its fix):

1. an sdist holding tracked files the project's sdist never holds: tests/ with its conftest.py, the gate's own package,
   a workflow, an executable CI script. Each is the repository's file byte for byte, and G509 held only that a file be
   tracked; but the repository's sdist is what pyproject.toml's sdist target selects (the package, the tables,
   pyproject.toml, the readme, the exclusion files hatchling adds). Measured on the unpacked sdists: `python -m pytest`
   collects nothing from the project's sdist and imports the other's tests/conftest.py and test modules; `python -m
   gate` there runs the carried package ("No module named gate" in the project's). Now G509;
2. the gate's reference metadata read files git does not track: the backend prepared it in the working tree, where
   hatchling also reads a hatch.toml beside pyproject.toml and a PKG-INFO (the version of a dynamic one), which the
   tree's state, and so the report's `clean`, never counts. With an untracked hatch.toml naming a file of
   `__version__ = "0.1.0.0"`, a wheel and sdist of 0.1.0.0 built there passed, the install smoke and
   `--expect-version v0.1.0` too, as the commit's, where the commit says 0.1.0 (0.1.0.0 is 0.1.0 to packaging and
   PyPI: another file of one release). Now the metadata is prepared from the tracked entries of the tree alone (G406).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import REPO
from gate_fixtures import Built, RawTarMember, raw_tar, sdist_members, write_sdist
from test_gate_hostile import built, judge, refused_with

from gate.backend import clean_environment
from gate.completeness import SOURCE_DIR
from gate.repository import load_repository
from gate.sdist import required_sources

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the module's built wheel and sdist, shared with the hostile corpus


# -- 1. tracked files the project's sdist never holds ------------------------------------------------------------------

CARRIED = {
    "the tests and their conftest.py, which pytest run in the unpacked sdist imports": ("tests/conftest.py",),
    "the gate's own package, which `python -m gate` there runs": ("gate/__init__.py", "gate/__main__.py"),
    "a release workflow": (".github/workflows/release.yml",),
    "an executable CI script, executable as git tracks it": (".ci/run",),
}


@pytest.mark.parametrize("attack", list(CARRIED))
def test_sdist_carrying_tracked_files_the_project_never_ships_is_refused(
    built: Built, tmp_path: Path, attack: str
) -> None:
    tracked = load_repository(REPO).tracked
    carried = [
        RawTarMember(f"{built.root}/{rel}", (REPO / rel).read_bytes(), mode=0o755 if tracked[rel] else 0o644)
        for rel in CARRIED[attack]
    ]
    sdist = write_sdist(tmp_path / built.sdist.name, raw_tar([*sdist_members(built.sdist), *carried]))
    report = judge(built.wheel, sdist)
    for member in carried:
        finding = refused_with(report, "G509", member.name, built.sdist.name)
        assert "not a file of this project's sdist" in finding.message
    assert {f.code for f in report.findings} == {"G509"}


def test_the_sdist_the_project_builds_holds_exactly_the_files_the_gate_expects(built: Built) -> None:
    """Control: the gate's model of the sdist (the files the wheel is built from, the tables, PKG-INFO) is the sdist
    `python -m build` makes from this repository, file for file; and that sdist passes."""
    names = {m.name[len(built.root) + 1 :] for m in sdist_members(built.sdist)}
    tables = {n for n in names if n.startswith(f"{SOURCE_DIR}/")}
    assert names - tables - {"PKG-INFO"} == set(required_sources(load_repository(REPO)))
    assert judge(built.wheel, built.sdist).passed


# -- 2. the reference metadata, from the tracked files alone -----------------------------------------------------------

# what hatchling reads beside pyproject.toml when it prepares the metadata (a file git does not track, each)
UNTRACKED = {
    "a hatch.toml naming another version source": {
        "hatch.toml": '[version]\npath = "version_override.py"\n',
        "version_override.py": '__version__ = "0.1.0.0"\n',
    },
    "a PKG-INFO, whose version hatchling takes for a dynamic one": {
        "PKG-INFO": "Metadata-Version: 2.1\nName: neurobrix\nVersion: 0.1.0.0\n",
    },
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=clean_environment())


@pytest.mark.parametrize("attack", list(UNTRACKED))
def test_untracked_files_do_not_steer_the_reference_metadata(tmp_path: Path, attack: str) -> None:
    """A checkout holding what the metadata is prepared from (pyproject.toml, the readme, the version's file),
    committed, and untracked files beside them: its reference metadata must be the clean repository's, byte for byte."""
    root = tmp_path / "checkout"
    for rel in ("pyproject.toml", "README.md", "neurobrix/__init__.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes((REPO / rel).read_bytes())
    _git(root.parent, "init", "-q", str(root))
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=gate", "-c", "user.email=gate@invalid", "commit", "-q", "-m", "the commit judged")
    for rel, text in UNTRACKED[attack].items():
        (root / rel).write_text(text, encoding="utf-8")
    declared = load_repository(root).declared
    assert declared.metadata == load_repository(REPO).declared.metadata
