"""The fifty-first round against the release gate: the build a commit declares, and pip's own build of the sdist.

First the hostile corpus was counted by class (docs/gate-rounds.md, round 51, has the counts and how they were made).
The thinnest dist classes were the install-tool differences and build-time substitution; the latter was taken with
round 50's open question: what the commit's own build configuration makes of the tracked files.

Found and fixed (a false pass; the eleven slow cases that judge failing before, shown in a worktree of the commit before
the fix; the fast ones call the check without a build):

1. The gate's model of the build (wheel: the tracked files under ``neurobrix/`` and the tables at
   ``neurobrix/_tables/``; sdist: those, pyproject.toml, the readme) was held to pyproject.toml by
   tests/test_gate_units.py only, never at run time, and release.yml gates a tag, which may name any commit. In a git
   copy of this repository, clean at a commit whose build configuration adds a package, a ``force-include``, an
   ``exclude`` or ``shared-data`` to the wheel, the wheel built before that commit PASSED (named alone), the report
   clean at the commit, while the commit's own build (refused, G107 or G108) installs other files: ``installer`` shows
   the package or data file missing, or the excluded file present. With a tracked ``hatch.toml`` whose ``[build]``
   excludes a module, the folder of the old wheel and sdist PASSED as release.yml runs the gate: exit 0, install smoke
   passed, clean at the commit (the sdist's files are all the commit's, and it rebuilds the old wheel). For the added
   package, the pair passed in-process too (the rebuild from an sdist of the commit's pyproject.toml lacks it as
   well); ``python -m gate`` stops there already on round 45's module at the checkout's top. The gate now compares the
   repository's ``[tool.hatch.build]`` with the table it models (``gate.repository.modelled_build``), requires the
   backend ``hatchling.build`` and no tracked ``hatch.toml``, and refuses to judge otherwise (exit 2, one line naming
   each key that differs).

Compared, no difference (not a test: it downloads): this commit's sdist built by pip 23.2 (``pip wheel --no-deps``,
isolated, with hatchling 1.33.0, the newest its index offers, packaging 26.4, pluggy 1.7.0, tomlkit 0.15.3, pathspec
1.1.1) gives the same 77 members, sha256 and mode bits, as the gate's own build with the hatchling installed here
(1.33.0, packaging 26.2).

Pinned: this checkout's build configuration is the one modelled (every honest run depends on it); an untracked
hatch.toml still does not count (round 21's test).

Left open: a newer hatchling than the gate's may lay the same configuration out otherwise (equal today); a
``.gitignore`` pattern a later commit adds that matches a tracked package file makes the commit's build leave it out
(the honest wheel is then refused, G108; the wheel passed holds every tracked file).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import project_dists_copy, shared_build
from gate_fixtures import install_wheel, rewrite_sdist
from packaging.version import Version
from test_gate_round42 import _git, _git_copy

from gate.build import build_project
from gate.checker import REPO, Options, check
from gate.checks import GateError
from gate.completeness import load_reference
from gate.repository import _check_build_model, load_repository
from neurobrix import __version__

if sys.version_info >= (3, 11):
    import tomllib
else:  # check-wheel-contents brings tomli there
    import tomli as tomllib


LISTED = "tables/TRACKED.yaml"
MODELLED = "the gate models (gate/repository.py)"  # in each line the gate stops with
WHEEL_TABLE = "[tool.hatch.build.targets.wheel]\n"
FORCE_TABLE = '[tool.hatch.build.targets.wheel.force-include]\n"tables" = "neurobrix/_tables"\n'

SDIST_TABLE = 'include = ["/neurobrix/", "/tables/", "/README.md", "/pyproject.toml"]'
WITH_EXTRAS = (SDIST_TABLE, SDIST_TABLE.replace('"/tables/"', '"/tables/", "/extras/"'))
EXTRAS = {"extras/presets.json": b"{}\n"}

# Each change a later commit could make to the build configuration: the edits to pyproject.toml (text before, after),
# the files the commit adds, and the installed path the commit's build writes (or leaves out) and the old wheel does not
# (a data file is installed under the site's data folder, as gate_fixtures.install_wheel lays them out).
CHANGES: dict[str, tuple[list[tuple[str, str]], dict[str, bytes], str]] = {
    "a second package": (
        [
            ('packages = ["neurobrix"]', 'packages = ["neurobrix", "neurobrix_plugins"]'),
            (SDIST_TABLE, SDIST_TABLE.replace('"/tables/"', '"/tables/", "/neurobrix_plugins/"')),
        ],
        {"neurobrix_plugins/__init__.py": b"LOADED = True\n"},
        "neurobrix_plugins/__init__.py",
    ),
    "a force-include": (
        [(FORCE_TABLE, FORCE_TABLE + '"extras" = "neurobrix/_extras"\n'), WITH_EXTRAS],
        EXTRAS,
        "neurobrix/_extras/presets.json",
    ),
    "an exclude": (
        [(WHEEL_TABLE, WHEEL_TABLE + 'exclude = ["neurobrix/cli.py"]\n')],
        {},
        "neurobrix/cli.py",
    ),
    "shared-data": (
        [
            (
                FORCE_TABLE,
                f'{FORCE_TABLE}\n[tool.hatch.build.targets.wheel.shared-data]\n"extras" = "share/neurobrix"\n',
            ),
            WITH_EXTRAS,
        ],
        EXTRAS,
        "data/share/neurobrix/presets.json",
    ),
    "a tracked hatch.toml": (
        [],
        {"hatch.toml": b'[build.targets.wheel]\nexclude = ["neurobrix/cli.py"]\n'},
        "neurobrix/cli.py",
    ),
}


@pytest.fixture(scope="module")
def later(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``old``: the wheel and sdist of a clean git copy of this checkout; one copy per change, each with a commit making
    it, and ``<change>-built``: that commit's honest build."""
    root = tmp_path_factory.mktemp("round51")
    first = root / "first"
    _git_copy(first)
    project_dists_copy(shared_build(tmp_path_factory, first), root / "old")  # this checkout's build, when clean
    for name, (edits, files, _) in CHANGES.items():
        copy = root / name
        subprocess.run(["git", "clone", "-q", str(first), str(copy)], check=True, capture_output=True)
        text = (copy / "pyproject.toml").read_text(encoding="utf-8")
        for before, after in edits:
            assert before in text, name
            text = text.replace(before, after, 1)
        (copy / "pyproject.toml").write_text(text, encoding="utf-8")
        for rel, data in files.items():
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            (copy / rel).write_bytes(data)
        _git(copy, "add", "-A")
        _git(copy, "commit", "-q", "-m", f"the build configuration: {name}")
        build_project(copy, root / f"{name}-built")
    return root


def _wheel(folder: Path) -> Path:
    (wheel,) = folder.glob("*.whl")
    return wheel


def _options(tree: Path) -> Options:
    return Options(load_reference(tree / LISTED), Version(__version__), smoke=False, source_tree=tree)


@pytest.mark.slow
@pytest.mark.parametrize("change", CHANGES)
def test_the_commits_build_installs_other_files_than_the_old_wheel(later: Path, tmp_path: Path, change: str) -> None:
    """The premise, by a reference installer: the commit's honest wheel and the wheel built before it install
    otherwise at the path the change is about."""
    path = CHANGES[change][2]
    new = install_wheel(_wheel(later / f"{change}-built"), tmp_path / "new") / path
    old = install_wheel(_wheel(later / "old"), tmp_path / "old") / path
    assert new.exists() != old.exists()


def _stopped(dists: list[Path], tree: Path) -> str:
    """The gate's GateError line for ``dists`` judged at ``tree``; a judged run fails the test, saying whether it
    passed and was clean at the commit (a release: what every case here was before the fix)."""
    try:
        judged = check(dists, _options(tree))
    except GateError as exc:
        return str(exc)
    state = judged.repository
    pytest.fail(f"judged, not stopped: passed {judged.passed}, clean {state is not None and state.clean}")


@pytest.mark.slow
@pytest.mark.parametrize("change", CHANGES)
def test_a_build_configuration_the_gate_does_not_model_stops_the_gate(later: Path, change: str) -> None:
    """The wheel built before the commit, judged at the commit: before the fix every check passed and the report
    was clean at the commit (a release); now the gate refuses to judge, naming the configuration."""
    assert MODELLED in _stopped([_wheel(later / "old")], later / change)


@pytest.mark.slow
def test_the_old_wheel_with_an_sdist_of_the_commits_pyproject_stops_the_gate(later: Path, tmp_path: Path) -> None:
    """A second package: the sdist holding the commit's pyproject.toml (G509 needs it) and no package of the name
    rebuilds into the old wheel, so before the fix the pair passed."""
    tree = later / "a second package"
    (sdist,) = (later / "old").glob("*.tar.gz")
    dists = tmp_path / "dist"
    dists.mkdir()
    rewrite_sdist(sdist, dists, replace={"pyproject.toml": (tree / "pyproject.toml").read_bytes()})
    (dists / _wheel(later / "old").name).write_bytes(_wheel(later / "old").read_bytes())
    assert "neurobrix_plugins" in _stopped([dists], tree)


@pytest.mark.slow
@pytest.mark.parametrize("change", [c for c in CHANGES if c != "a second package"])
def test_the_command_line_says_so_in_one_line(later: Path, change: str) -> None:
    """`python -m gate check` in the copy: exit 2, one line naming what it does not model, no traceback (before: exit
    0). A second package is stopped there already, by round 45's stop on a module at the checkout's top."""
    tree = later / change
    result = subprocess.run(
        [sys.executable, "-m", "gate", "check", "--no-smoke", str(_wheel(later / "old"))],
        cwd=tree,  # the gate of the copy (the clone holds gate/ as committed here), as a release runs it
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert MODELLED in line


def test_this_checkouts_build_configuration_is_the_modelled_one() -> None:
    """Every honest run depends on it: the checkout's pyproject.toml loads."""
    assert load_repository(REPO).declared.name == "neurobrix"


@pytest.mark.slow
def test_a_tracked_hatch_toml_passed_the_old_wheel_and_sdist_release_grade(later: Path, tmp_path: Path) -> None:
    """The whole release, as release.yml's gate job runs it: the folder with the wheel and sdist built before the
    commit, install smoke on. A hatch.toml changes no file the sdist must hold (G509), so the old sdist rebuilds the old
    wheel (G508): before the fix exit 0, `passed`, the smoke passed, clean at the commit, a release-grade report."""
    report = tmp_path / "report.json"
    result = subprocess.run(
        [sys.executable, "-m", "gate", "check", str(later / "old"), "--json", str(report)],
        cwd=later / "a tracked hatch.toml",
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    assert "hatch.toml" in result.stderr and MODELLED in result.stderr
    assert json.loads(report.read_text(encoding="utf-8"))["verdict"] == "unusable"


def _config() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _readme() -> str:
    return str(_config()["project"]["readme"])


@pytest.mark.parametrize(
    ("where", "key", "value", "named"),
    [
        (("build-system",), "build-backend", "setuptools.build_meta", "'setuptools.build_meta'"),
        (("build-system",), "backend-path", ["."], "with a backend-path"),
        (("tool", "hatch", "build"), "hooks", {"custom": {}}, "hooks.custom"),
        (("tool", "hatch", "build", "targets", "wheel"), "shared-scripts", {"bin": "x"}, "shared-scripts.bin"),
        (("tool", "hatch", "build", "targets", "sdist"), "include", ["/neurobrix/"], "targets.sdist.include"),
        (("tool", "hatch", "build"), "ignore-vcs", True, "ignore-vcs"),
    ],
)
def test_each_difference_is_named_in_one_line(where: tuple[str, ...], key: str, value: object, named: str) -> None:
    """Without a build: the configuration read as the gate reads it, one key changed at a time (unmarked: fast)."""
    config = _config()
    table = config
    for part in where:
        table = table[part]
    table[key] = value
    with pytest.raises(GateError) as raised:
        _check_build_model(REPO, config, {}, _readme())
    line = str(raised.value)
    assert "\n" not in line and MODELLED in line and named in line


def test_a_missing_build_table_names_every_modelled_key() -> None:
    config = _config()
    del config["tool"]["hatch"]["build"]
    with pytest.raises(GateError, match="targets.wheel.packages missing"):
        _check_build_model(REPO, config, {}, _readme())


def test_the_checkouts_own_configuration_and_a_tracked_hatch_toml() -> None:
    _check_build_model(REPO, _config(), {}, _readme())
    with pytest.raises(GateError, match="hatch.toml"):
        _check_build_model(REPO, _config(), {"hatch.toml": False}, _readme())
