"""Gate round 67's cases (not a test file): the tree changing while ``python -m gate build`` runs. Shared by
tests/test_gate_round67.py and the runs of tests/gate67_driver.py.

``python -m gate build`` reads the tree's state (every tracked file hashed as git hashes a blob) before it builds,
runs ``python -m build`` (the sdist from the tree, then the wheel from that sdist), reads the tree again to judge the
two files against it (the tracked list, each file's bytes, the metadata its build backend prepares from the tree's
top entries), and reads the tree's state once more at the end: a state other than the first stops it (exit 2). Each
case is one edit of a clone of a clean git copy of this checkout, made at one of these moments and undone at a later
one (``None``: kept):

* ``A``: after the gate's first reading of the tree's state, before the build (the sdist's walk of the tree);
* ``B``: between the sdist and the wheel (``python -m build`` has written the sdist and builds the wheel from it);
* ``C``: after the build, before the gate reads the tree to judge the dists;
* ``D``: after every static check has read the tree, before the gate reads the tree's state again.

``CASES`` are edits whose dists are not the commit's files or are judged against a tree that is not the commit's;
``CONTROLS`` change nothing the gate judges against (a file git does not track, after the sdist was made).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PLANTED = b"# planted while the tree was built\n"
CLI = "neurobrix/cli.py"
EVIL = "neurobrix/evil.py"
GONE = "neurobrix/ops/silu_mul.py"  # a tracked module the dists lack where it is deleted
TABLE = "tables/interpreter/attention_chunk.json"
LISTED = "tables/TRACKED.yaml"
BRANCH = "planted"  # the clone's second branch: cli.py planted and committed (the checkout cases)

Change = Callable[[Path], None]


def git(tree: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=round67", "-c", "user.email=round67@localhost", *args]
    return subprocess.run(command, cwd=tree, capture_output=True, text=True, check=True).stdout


@dataclass(frozen=True)
class Edit:
    """``do`` changes the clone, ``undo`` puts the commit's state back (index and working tree)."""

    do: Change
    undo: Change


def _append(path: str, data: bytes) -> Edit:
    def do(tree: Path) -> None:
        with (tree / path).open("ab") as fh:
            fh.write(data)

    def undo(tree: Path) -> None:
        git(tree, "checkout", "-q", "HEAD", "--", path)

    return Edit(do, undo)


def _replace(path: str, old: bytes, new: bytes) -> Edit:
    def do(tree: Path) -> None:
        data = (tree / path).read_bytes()
        assert data.count(old) == 1, (path, old)
        (tree / path).write_bytes(data.replace(old, new))

    return Edit(do, lambda tree: git(tree, "checkout", "-q", "HEAD", "--", path))


def _added(staged: bool) -> Edit:
    def do(tree: Path) -> None:
        (tree / EVIL).write_bytes(b'"""Not a file of the commit."""\n')
        if staged:
            git(tree, "add", EVIL)

    def undo(tree: Path) -> None:
        if staged:
            git(tree, "rm", "-q", "--cached", EVIL)
        (tree / EVIL).unlink()

    return Edit(do, undo)


def _deleted(staged: bool) -> Edit:
    def do(tree: Path) -> None:
        if staged:
            git(tree, "rm", "-q", GONE)
        else:
            (tree / GONE).unlink()

    def undo(tree: Path) -> None:
        git(tree, "reset", "-q", "HEAD", "--", GONE)
        git(tree, "checkout", "-q", "HEAD", "--", GONE)

    return Edit(do, undo)


def _executable(staged: bool) -> Edit:
    def do(tree: Path) -> None:
        (tree / CLI).chmod(0o755)
        if staged:
            git(tree, "update-index", "--chmod=+x", CLI)

    def undo(tree: Path) -> None:
        if staged:
            git(tree, "update-index", "--chmod=-x", CLI)
        (tree / CLI).chmod(0o644)

    return Edit(do, undo)


def _table(tree: Path) -> None:
    """One table's bytes and its entry in the tracked list edited together (round 42's edit)."""
    import hashlib

    table, listed = tree / TABLE, tree / LISTED
    old = table.read_bytes()
    new = old.replace(b"{", b"{ ", 1)
    text = listed.read_text(encoding="utf-8")
    before = f"sha256: {hashlib.sha256(old).hexdigest()}\n  size: {len(old)}\n"
    after = f"sha256: {hashlib.sha256(new).hexdigest()}\n  size: {len(new)}\n"
    assert text.count(before) == 1
    table.write_bytes(new)
    listed.write_text(text.replace(before, after), encoding="utf-8")


def _checkout(tree: Path) -> None:
    git(tree, "checkout", "-q", BRANCH)


def _back(tree: Path) -> None:
    git(tree, "checkout", "-q", "main")


def _commit(tree: Path) -> None:
    with (tree / CLI).open("ab") as fh:
        fh.write(PLANTED)
    git(tree, "commit", "-q", "-am", "planted")


def _uncommit(tree: Path) -> None:
    git(tree, "reset", "-q", "--hard", "HEAD~1")


EDITS: dict[str, Edit] = {
    "cli.py planted": _append(CLI, PLANTED),
    "an untracked module": _added(staged=False),
    "an untracked module staged": _added(staged=True),
    "a tracked module deleted": _deleted(staged=False),
    "a tracked module deleted and staged": _deleted(staged=True),
    "a dependency added": _replace(
        "pyproject.toml", b'    "pyyaml>=6.0",\n', b'    "pyyaml>=6.0",\n    "evil-helper>=1",\n'
    ),
    "the version changed": _replace("neurobrix/__init__.py", b'__version__ = "0.1.0"', b'__version__ = "0.1.0.post1"'),
    "README.md appended to": _append("README.md", b"\nInstall evil-helper first.\n"),
    "a table and its listing edited": Edit(_table, lambda tree: git(tree, "checkout", "-q", "HEAD", "--", "tables")),
    "cli.py made executable": _executable(staged=False),
    "cli.py made executable and staged": _executable(staged=True),
    "another commit checked out": Edit(_checkout, _back),
    "cli.py planted and committed": Edit(_commit, _uncommit),
}


@dataclass(frozen=True)
class Case:
    edit: str
    at: str  # A, B, C or D (module docstring)
    until: str | None  # a later moment, or None: kept to the end of the run

    @property
    def change(self) -> Edit:
        return EDITS[self.edit]


def _case(edit: str, at: str, until: str | None) -> tuple[str, Case]:
    return f"{edit}, {at} to {until or 'the end'}", Case(edit, at, until)


CASES: dict[str, Case] = dict(
    [
        _case("cli.py planted", "A", "D"),
        _case("cli.py planted", "A", "C"),
        _case("cli.py planted", "A", None),
        _case("cli.py planted", "B", "D"),
        _case("cli.py planted", "B", None),
        _case("cli.py planted", "C", "D"),
        _case("an untracked module", "A", "D"),
        _case("an untracked module staged", "A", "D"),
        _case("a tracked module deleted", "A", "D"),
        _case("a tracked module deleted and staged", "A", "D"),
        _case("a dependency added", "A", "D"),
        _case("the version changed", "A", "D"),
        _case("README.md appended to", "A", "D"),
        _case("a table and its listing edited", "A", "D"),
        _case("cli.py made executable", "A", "D"),
        _case("cli.py made executable and staged", "A", "D"),
        _case("another commit checked out", "A", "D"),
        _case("cli.py planted and committed", "A", "D"),
    ]
)
CONTROLS: dict[str, Case] = dict(
    [
        _case("an untracked module", "B", "D"),  # after the sdist: no build reads it, and git tracks no such file
        _case("an untracked module", "C", None),
    ]
)
MOMENTS = ("A", "B", "C", "D")


def lean_copy(source: Path, copy: Path) -> None:
    """The tracked files of ``source`` that a build reads (the top's files, ``neurobrix/``, ``tables/``), as its
    working tree holds them, committed on ``main`` in a git repository of their own (a copy of every tracked file, as
    ``test_gate_round42._git_copy`` makes, took 2 s of the test's 10)."""
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=source, capture_output=True, check=True).stdout
    for raw in filter(None, listing.split(b"\0")):
        path = os.fsdecode(raw)
        if "/" in path and not path.startswith(("neurobrix/", "tables/")):
            continue
        if not (source / path).is_file():
            continue  # deleted in the working tree
        (copy / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / path, copy / path, follow_symlinks=False)
    git(copy, "init", "-q", "-b", "main")
    git(copy, "add", "-A")
    git(copy, "commit", "-q", "-m", "this checkout's build inputs")


def prepare(base: Path, into: Path) -> Path:
    """A clone of ``base`` (a clean git copy of this checkout), its branch named ``main``, with the branch ``BRANCH``
    beside it (``main`` with cli.py planted and committed)."""
    tree = into / "tree"
    subprocess.run(["git", "clone", "-q", "--local", str(base), str(tree)], check=True)
    git(tree, "branch", "-q", "-M", "main")
    git(tree, "checkout", "-q", "-b", BRANCH)
    _commit(tree)
    git(tree, "checkout", "-q", "main")
    return tree


def short(text: str) -> str:
    return re.sub(r"\s+", " ", text)[:300]
