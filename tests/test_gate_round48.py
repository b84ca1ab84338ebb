"""Gate mutation round 48 (tests/gate48_plants.py, applied one at a time by tests/gate48_driver.py).

Where no mutation round had planted: gate round 44's code (gate/metadata.py's refusal of entry point names that are
paths, G408; gate/checker.py's one file name in two upload folders in other bytes, G602), gate round 47's publish-job
workspace rule (release.yml's verify step holding the workspace to exactly ``dist/`` and ``gate/``, and the job's
``PYTHONSAFEPATH``), gate round 45's ``cat-file --batch`` reading of the commit and its trees, the tree state built on
it and ``shadowing`` beyond planted round 41's g01-g11 and h01-h04, and gate round 46's link-and-``..`` refusal beyond
its k01-k03. 31 plants (a comparison flipped, a condition dropped, an off-by-one, a set for a list, a case missing, a
decoding with replacement), each run against the test files a contributor would run for its module (round 44's by
name, round 45's with planted41's gate tests, round 46's, round 47's with tests/test_workflows.py).

Caught before this round: 15 (a01 ``.`` dropped, a02 backslash dropped, a03 a drive matched whole, a05 the name
unstripped, a06 ``/`` only at the start, b01 the sha256 comparison flipped, b02 keyed by path, b04 sdists left out,
d02 an object's bytes one short, d07 executable modes read as plain, f02 only folders checked, r01 hidden entries
skipped, r02 folders alone listed, r03 the listing unsorted, r05 ``PYTHONSAFEPATH`` empty).

Equivalent: 9. a07 (the name taken before the last ``=``: only a line with a second ``=`` reads otherwise, and no such
line is of the common syntax, so it is G408 either way); b03 (an unread dist kept among those compared: it is G308
already); d01 (the batch answer's id unchecked: the bytes are hashed against the id asked, so no other object passes);
d03 (a commit's first line not checked to be ``tree``: ``git rev-parse HEAD^{commit}`` refuses such a commit as
"bogus", shown, so the tree state has no commit and is not clean); d05 (trees asked as a list with repeats: ``cat-file
--batch`` answers each in order); e03 (an empty sys.path entry not read as the working folder: ``realpath("")`` is
it); f04 (a leading ``..`` of a relative path not looked at: it is taken from the physical working folder by the
system and by ``abspath`` alike); f05 (``normpath`` without ``abspath``: a relative path is resolved from the same
folder by ``samefile``); r04 (entries' types read through links, ``%Y``: an entry not named ``dist`` or ``gate`` is
refused whatever its type, and a link so named lists nothing under ``find`` without ``-L``, so the report's listing
refuses it, shown).

Survived and now failing a case below (each shown failing with its plant alone, in the driver's copy, and passing
without it): a04 (drives matched upper-case only: ``c:x`` refused, but not named as a path), d04 (tree entries' names
decoded with replacement: a committed Latin-1 name was another path than the index's, a false refusal), d06 (only
the index's paths compared with the commit's: a file taken out of the index by ``git rm --cached`` left the tree
clean), e01 (links at the top never taken as packages: a link named ``yaml`` to a package is imported, shown), e02
(only ``.py`` taken as modules: ``packaging.pyc`` alone is imported, shown), f01 (``..`` compared by real path as
strings: ``L/sub/../dist`` through a link ``L`` is one folder to the system and to normpath, and was refused), f03
(only the parent's parts looked at: a folder argument ``a/..`` after a link was judged as the system's folder).

No defect was found in the gate as it is: nothing in ``gate/`` or release.yml changed. Left open: each plant ran
against the test files of its module, not the whole corpus; the verify step's other checks (round 33's, round 37's
plants) were not planted again.
"""

from __future__ import annotations

import os
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest
from test_gate_hostile import built, judge, refused_with
from test_gate_round44 import _entry_points_wheel
from test_gate_round45 import EDITED, _git, base, clone

import gate
from gate.checker import collect
from gate.checks import GateError
from gate.repository import _commit_files, _tracked_files, read_tree_state

__all__ = ["base", "built", "clone"]  # fixtures: the hostile corpus's built wheel and sdist, round 45's git clone

MARKER = "import pathlib; pathlib.Path({marker!r}).write_text('ran')\n"


def _imports(top: Path, module: str) -> bool:
    """Whether ``import module`` from ``top`` (first on sys.path, as under ``python -m``) runs the code there."""
    marker = top.parent / f"{top.name}-ran"
    subprocess.run(
        [sys.executable, "-c", f"import {module}"], cwd=top, capture_output=True, env={**os.environ, "PYTHONPATH": ""}
    )
    ran = marker.exists()
    if ran:
        marker.unlink()
    return ran


# -- gate round 44: entry point names that are paths ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "line", [b"c:neurobrix-admin = neurobrix.cli:main\n", b"z:neurobrix-admin = neurobrix.cli:main\n"]
)
def test_a_lower_case_drive_is_refused_as_a_path(built, tmp_path: Path, line: bytes) -> None:
    """Survivor a04: drives were matched upper-case only (round 44's case was ``C:``); ``c:x`` is as much a drive to
    Windows (the launcher written to drive C's current folder), and was refused only as no entry of the common syntax,
    its path unnamed."""
    wheel = _entry_points_wheel(built, tmp_path, line)
    finding = refused_with(judge(wheel), "G408", f"{built.dist_info}/entry_points.txt", built.wheel.name)
    assert "is a path" in finding.message, finding.message


# -- gate round 45: the tree state read from the commit's own objects -------------------------------------------------


def test_a_file_taken_out_of_the_index_is_named(clone: Path) -> None:
    """Survivor d06: only the index's paths were compared with the commit's, so a committed file taken out of the index
    (``git rm --cached``: still on disk, no longer tracked, so no longer in the allow-list the dists are held to) left
    the tree clean at the commit."""
    _git(clone, "rm", "-q", "--cached", EDITED)
    assert (clone / EDITED).is_file() and EDITED not in _tracked_files(clone)
    assert read_tree_state(clone).differs == (EDITED,)


def test_a_committed_name_that_is_not_utf8_reads_as_git_lists_it(clone: Path) -> None:
    """Survivor d04: tree entries' names decoded with replacement made a committed Latin-1 name (``café`` as one byte
    0xE9, which git keeps as bytes and ``ls-files -z`` lists as they are) another path than the index's: the tree
    state named a file that is as committed (a false refusal of a clean checkout), and two such names one key."""
    for name in (b"docs/caf\xe9.txt", b"docs/caf\xe8.txt"):
        (clone / os.fsdecode(name)).write_bytes(b"x\n")
    _git(clone, "add", "docs")
    _git(clone, "commit", "-q", "-m", "latin-1 names")
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=clone, capture_output=True, check=True).stdout
    assert b"docs/caf\xe9.txt" in listing.split(b"\0"), "git keeps the bytes"
    commit = _git(clone, "rev-parse", "HEAD")
    names = set(_commit_files(clone, commit))
    assert {os.fsdecode(b"docs/caf\xe9.txt"), os.fsdecode(b"docs/caf\xe8.txt")} <= names
    assert read_tree_state(clone).differs == ()


# -- gate round 45: python -m gate's shadowing ------------------------------------------------------------------------


def test_a_link_at_the_top_to_a_package_is_a_module(tmp_path: Path) -> None:
    """Survivor e01: folders were taken as packages only when not links; a link named ``yaml`` to a folder with an
    ``__init__.py`` elsewhere is imported as ``yaml`` from the checkout's top (shown) and must be named."""
    top, elsewhere = tmp_path / "top", tmp_path / "elsewhere"
    top.mkdir()
    elsewhere.mkdir()
    (elsewhere / "__init__.py").write_text(MARKER.format(marker=str(tmp_path / "top-ran")))
    (top / "yaml").symlink_to(elsewhere, target_is_directory=True)
    assert _imports(top, "yaml"), "the case is real: Python imports the link's package"
    assert gate.shadowing(str(top)) == ["yaml"]


def test_a_module_of_bytecode_alone_at_the_top_is_a_module(tmp_path: Path) -> None:
    """Survivor e02: only ``.py`` files were taken as modules; ``packaging.pyc`` alone (no source) is imported as
    ``packaging`` from the checkout's top (shown), ahead of the installed packaging the gate imports."""
    top = tmp_path / "top"
    top.mkdir()
    source = tmp_path / "source.py"
    source.write_text(MARKER.format(marker=str(tmp_path / "top-ran")))
    py_compile.compile(str(source), cfile=str(top / "packaging.pyc"), doraise=True)
    assert _imports(top, "packaging"), "the case is real: Python imports the bytecode"
    assert gate.shadowing(str(top)) == ["packaging.pyc"]


# -- gate round 46: a link and `..`, the other branches ---------------------------------------------------------------


def _release(folder: Path) -> list[Path]:
    folder.mkdir(parents=True)
    files = [folder / "x-1.0-py3-none-any.whl", folder / "x-1.0.tar.gz"]
    for file in files:
        file.write_bytes(b"not read: collect() only lists")
    return files


def test_a_folder_named_with_a_trailing_dotdot_after_a_link_is_refused(tmp_path: Path) -> None:
    """Survivor f03: only the parent's parts were looked at, so a folder argument ending in ``..`` (``a/..``, ``a`` a
    link into ``r/s``: the folder ``r`` to the system, ``tmp`` to normpath, so to twine's metadata reading of
    ``a/../*``) was judged as ``r``."""
    _release(tmp_path / "r")
    (tmp_path / "r" / "s").mkdir()
    (tmp_path / "a").symlink_to(tmp_path / "r" / "s", target_is_directory=True)
    with pytest.raises(GateError, match=r"`\.\.` after a link"):
        collect([tmp_path / "a" / ".."])


def test_a_link_before_a_plain_dotdot_is_one_file_to_both(tmp_path: Path) -> None:
    """Survivor f01 (a false refusal): ``L/sub/../dist``, ``L`` a link to ``real``, is ``real/dist`` both to the system
    and to normpath (``L/dist``): one folder, judged. Compared by real path as strings it was refused."""
    files = _release(tmp_path / "real" / "dist")
    (tmp_path / "real" / "sub").mkdir()
    (tmp_path / "L").symlink_to(tmp_path / "real", target_is_directory=True)
    dists, findings = collect([tmp_path / "L" / "sub" / ".." / "dist"])
    assert {p.resolve() for p in dists} == {p.resolve() for p in files} and not findings
