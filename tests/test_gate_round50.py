"""The fiftieth round against the release gate: each check's assumption about its input, attacked from the code.

Written from gate/*.py, not from the earlier rounds. For each check the assumption was written down (what it parses,
with which library, against which list, what it does not look at); most hold by construction: every member of a wheel
is a tracked file byte for byte (G107-G109 against ``git ls-files`` and the working tree), METADATA, WHEEL and
entry_points.txt are the backend's bytes whole (G406-G408), RECORD is checked row by row and written back (G2xx), the
zip and the tar are read by hand-written strict readers (G3xx), and every sdist file but the tables and PKG-INFO is a
tracked file's bytes (G509). One assumption was not held by anything: that the tracked list the tables are judged
against describes the commit's tables.

Found and fixed (a false pass, each test below failing before, shown with the fix reverted):

1. G101-G106 and G501-G506 judge a dist's tables against the reference tracked list only, never against git; round 42
   held that list to the commit's own ``tables/TRACKED.yaml``, and nothing held the commit's list to the commit's
   tables. In a git copy of this repository, clean at a commit that changes a table (or adds one under ``tables/``)
   without ``python -m conformance track``, the wheel and sdist holding the list's, not the commit's, table bytes
   (built before the commit) PASSED, the report clean at that commit: ``installer`` installs a table the commit does not
   hold, and twine would upload it. The honest build of that commit is refused (G103), so whoever builds the dists
   elsewhere chooses the tables. ci.yml runs ``conformance track --check`` on a push, release.yml on a tag does not,
   and a tag may name any commit. The tree state now names every tracked file under ``tables/`` that the commit's
   list does not describe byte for byte, and every listed one git does not track (``clean`` false): ``check`` and
   ``build`` stop with exit 2 without ``--allow-dirty``, and the publish checks that read ``clean`` refuse.

Also named now (two cases failing before): a list the commit does not track (removed from git, kept on disk, which
the gate reads by default and round 42's check compared with itself), and a list that is a link in the commit.

Pinned: a copy of this checkout, list and tables in sync, stays clean (the fix touches no honest run); the premise
holds by a reference installer (``installer`` writes the list's table, not the commit's).

Looked at and found held (each assumption's check named in docs/gate-rounds.md, round 50), not built again: zip and
tar read two ways, twine 7's metadata readers, pip 23.2's ``normpath`` of member names, mode and type bits.

Left open: a ``force-include`` or package a later pyproject.toml adds is not in the gate's allow-list at run time
(tests/test_gate_units.py holds today's equal); the pip installing an sdist builds it with the newest hatchling its
index offers, not the gate's, which was not compared.
"""

from __future__ import annotations

import hashlib
import subprocess
import zipfile
from pathlib import Path

import pytest
from gate_fixtures import install_wheel
from packaging.version import Version
from test_gate_round42 import _git, _git_copy

from gate.build import build_project
from gate.checker import Options, check
from gate.completeness import load_reference
from gate.report import Report
from gate.repository import read_tree_state
from neurobrix import __version__

pytestmark = pytest.mark.slow

TABLE = "tables/nvidia-h200/linear.json"
ADDED = "tables/nvidia-h200/unlisted.json"
LISTED = "tables/TRACKED.yaml"


@pytest.fixture(scope="module")
def stale(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``dist``: the wheel and sdist of a clean git copy of this checkout, built as its tables and list agree; then
    ``edited``: that copy with a commit changing one table (a space after the JSON's first brace: the engine loads it
    as before) and not the list; ``added``: a fresh copy with a commit adding a table the list does not name."""
    root = tmp_path_factory.mktemp("round50")
    edited = root / "edited"
    _git_copy(edited)
    build_project(edited, root / "dist")
    table = edited / TABLE
    table.write_bytes(table.read_bytes().replace(b"{", b"{ ", 1))
    _git(edited, "commit", "-q", "-am", "a table changed, the list not")
    added = root / "added"
    _git_copy(added)
    (added / ADDED).write_bytes((added / TABLE).read_bytes())
    _git(added, "add", ADDED)
    _git(added, "commit", "-q", "-m", "a table added, the list not")
    return root


def _judged(root: Path, copy: str) -> Report:
    tree = root / copy
    options = Options(load_reference(tree / LISTED), Version(__version__), smoke=False, source_tree=tree)
    return check([root / "dist"], options)


def test_the_dists_install_a_table_the_commit_does_not_hold(stale: Path, tmp_path: Path) -> None:
    """The premise, by a reference installer: the wheel's table is not the commit's, and installs as the list's."""
    commit = subprocess.run(
        ["git", "show", f"HEAD:{TABLE}"], cwd=stale / "edited", capture_output=True, check=True
    ).stdout
    (wheel,) = (stale / "dist").glob("*.whl")
    installed = install_wheel(wheel, tmp_path / "site") / "neurobrix" / "_tables" / TABLE.split("/", 1)[1]
    assert installed.read_bytes() != commit
    listed = (stale / "edited" / LISTED).read_text(encoding="utf-8")
    assert f"sha256: {hashlib.sha256(installed.read_bytes()).hexdigest()}" in listed
    with zipfile.ZipFile(wheel) as opened:
        assert opened.read(f"neurobrix/_tables/{TABLE.split('/', 1)[1]}") == installed.read_bytes()


@pytest.mark.parametrize(("copy", "path"), [("edited", TABLE), ("added", ADDED)])
def test_a_commit_whose_tables_its_list_does_not_describe_is_no_release_check(
    stale: Path, copy: str, path: str
) -> None:
    """Every check of the dists passes (their tables are the list's); the tree state names the table, so `clean`
    is false and the command line stops. Before, the report was clean at that commit: a release."""
    judged = _judged(stale, copy)
    assert judged.passed, judged.render()
    state = judged.repository
    assert state is not None
    assert state.commit == _git(stale / copy, "rev-parse", "HEAD")
    assert not state.clean
    assert [d for d in state.differs if d.startswith(f"{path}:")], state.differs
    assert "not a release check" in judged.verdict()


def test_a_listed_table_git_does_not_track_is_named(stale: Path, tmp_path: Path) -> None:
    """A list entry for a file the commit does not hold (deleted from git, kept on disk: the build packs it)."""
    copy = tmp_path / "copy"
    _git_copy(copy)
    _git(copy, "rm", "-q", "--cached", TABLE)
    _git(copy, "commit", "-q", "-m", "a listed table no longer tracked")
    state = read_tree_state(copy)
    assert not state.clean
    assert [d for d in state.differs if d.startswith(f"{TABLE}:")], state.differs


def test_a_list_the_commit_does_not_track_is_named(tmp_path: Path) -> None:
    """The list itself untracked (removed from git, kept on disk): the gate reads it by default, and round 42's check
    compares its bytes with the file on disk, itself."""
    untracked = tmp_path / "untracked"
    _git_copy(untracked)
    _git(untracked, "rm", "-q", "--cached", LISTED)
    _git(untracked, "commit", "-q", "-m", "the list untracked")
    assert [d for d in read_tree_state(untracked).differs if d.startswith(f"{LISTED}:")]


def test_a_list_that_is_a_link_in_the_commit_is_named(tmp_path: Path) -> None:
    """The list a link in the commit, to a copy of the list elsewhere: the gate would read the file it names."""
    linked = tmp_path / "linked"
    _git_copy(linked)
    (tmp_path / "elsewhere.yaml").write_bytes((linked / LISTED).read_bytes())
    (linked / LISTED).unlink()
    (linked / LISTED).symlink_to(tmp_path / "elsewhere.yaml")
    _git(linked, "add", LISTED)
    _git(linked, "commit", "-q", "-m", "the list a link")
    assert [d for d in read_tree_state(linked).differs if d.startswith(f"{LISTED}:")]


def test_the_repositorys_own_tree_in_sync_is_clean(tmp_path: Path) -> None:
    """The fix touches no honest tree: a copy of this checkout, list and tables in sync, is clean at its commit."""
    copy = tmp_path / "copy"
    _git_copy(copy)
    assert read_tree_state(copy).clean
