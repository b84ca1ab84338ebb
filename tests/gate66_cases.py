"""Gate round 66's cases (not a test file): the repository tree itself hostile at build time. Each case is a clone of
a clean git copy of this checkout made hostile one way: in its working tree alone, where git's view of the commit is
unchanged (a folder replaced by a symbolic link, files git ignores through `.git/info/exclude`, `core.excludesFile` or
a `.gitignore` that ignores itself), or by a commit (tracked links, files hatchling's own excludes drop, a clean filter
that hides an edit from git). Shared by tests/test_gate_round66.py and the runs of tests/gate66_driver.py.

What makes a case hostile is what hatchling does with the tree: it walks it with ``os.walk(followlinks=True)`` and
skips a folder whose (device, inode) it has walked already (``hatchling.builders.utils.safe_walk``), so a link to
``ops`` walked before ``ops`` itself takes its place, and one walked after it is left out; it reads one ``.gitignore``
(the first found from the tree's top up to the ``.git`` boundary) and a ``.hgignore`` alike (this repository tracks
both, so hatchling reads those two), never
``.git/info/exclude``, ``core.excludesFile`` or a `.gitignore` below the top; it always drops ``__pycache__`` and
other tool folders and ``.DS_Store`` files; and its sdist stores a link to a file as a link member. ``CASES`` maps a
name to an edit of the clone (``tree``; ``outside`` a folder beside it); ``CONTROLS`` are trees whose build is the
commit's tracked files all the same.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

PLANTED = b"# planted in the tree\n"
OPS = "neurobrix/ops"
EVIL = "neurobrix/evil.py"

Edit = Callable[[Path, Path], None]


def git(tree: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=round66", "-c", "user.email=round66@localhost", *args]
    return subprocess.run(command, cwd=tree, capture_output=True, text=True, check=True).stdout


def _commit(tree: Path, message: str) -> None:
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", message)


def _exclude(tree: Path, *patterns: str) -> None:
    """Patterns git ignores for this clone alone (`.git/info/exclude`): `git status` is clean again."""
    with (tree / ".git/info/exclude").open("a", encoding="utf-8") as fh:
        fh.write("".join(f"{p}\n" for p in patterns))


def _move_ops(tree: Path, to: Path) -> None:
    to.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(tree / OPS), str(to))


def _ops_linked_outside(tree: Path, outside: Path) -> None:
    _move_ops(tree, outside / "ops")
    (tree / OPS).symlink_to(outside / "ops")


def _ops_linked_to_a_folder_walked_first(tree: Path, outside: Path) -> None:
    _move_ops(tree, tree / "neurobrix/_ops")  # `_` sorts before `o`: hatchling walks it first
    (tree / OPS).symlink_to("_ops")
    _exclude(tree, "/neurobrix/_ops/")


def _ops_reached_by_an_ignored_link_first(tree: Path, outside: Path) -> None:
    _move_ops(tree, outside / "ops")
    (tree / OPS).symlink_to(outside / "ops")
    (tree / "neurobrix/aaa").symlink_to(outside / "ops")
    _exclude(tree, "/neurobrix/aaa")


def _tables_linked_outside(tree: Path, outside: Path) -> None:
    outside.mkdir(parents=True, exist_ok=True)
    shutil.move(str(tree / "tables"), str(outside / "tables"))
    (tree / "tables").symlink_to(outside / "tables")


def _package_linked_outside(tree: Path, outside: Path) -> None:
    outside.mkdir(parents=True, exist_ok=True)
    shutil.move(str(tree / "neurobrix"), str(outside / "neurobrix"))
    (tree / "neurobrix").symlink_to(outside / "neurobrix")


def _evil(tree: Path) -> None:
    (tree / EVIL).write_bytes(PLANTED + b"import os\n")


def _module_info_exclude(tree: Path, outside: Path) -> None:
    _evil(tree)
    _exclude(tree, "/neurobrix/evil.py")


def _module_nested_gitignore(tree: Path, outside: Path) -> None:
    _evil(tree)
    (tree / "neurobrix/.gitignore").write_text("evil.py\n.gitignore\n", encoding="utf-8")  # ignores itself too


def _module_excludes_file(tree: Path, outside: Path) -> None:
    _evil(tree)
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "ignore").write_text("evil.py\n", encoding="utf-8")
    git(tree, "config", "core.excludesFile", str(outside / "ignore"))


def _nested_repository(tree: Path, outside: Path) -> None:
    vendor = tree / "neurobrix/vendor"
    vendor.mkdir()
    (vendor / "__init__.py").write_bytes(PLANTED)
    git(vendor, "init", "-q")
    _commit(vendor, "a repository of its own")
    _exclude(tree, "/neurobrix/vendor/")


def _untracked_table(tree: Path, outside: Path) -> None:
    (tree / "tables/interpreter/extra.json").write_bytes(b"{}\n")
    _exclude(tree, "/tables/interpreter/extra.json")


def _stale_bytecode(tree: Path, outside: Path) -> None:
    cache = tree / "neurobrix/__pycache__"
    cache.mkdir(exist_ok=True)
    (cache / "cli.cpython-311.pyc").write_bytes(PLANTED)


def _tracked(link: str, target: str | Path) -> Edit:
    def edit(tree: Path, outside: Path) -> None:
        (tree / link).symlink_to(target)
        _commit(tree, f"{link} a link")

    return edit


def _tracked_file(path: str, data: bytes) -> Edit:
    def edit(tree: Path, outside: Path) -> None:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_bytes(data)
        git(tree, "add", "-f", path)  # .gitignore names __pycache__/ and .venv/: tracked all the same
        _commit(tree, f"{path} tracked")

    return edit


def _clean_filter(tree: Path, outside: Path) -> None:
    """A clean filter (`.git/config`) that drops the planted line, so git hashes the edited cli.py as the commit's
    blob and `git status` is clean; the build packs the working tree's bytes."""
    (tree / ".gitattributes").write_text("neurobrix/cli.py filter=hide\n", encoding="utf-8")
    _commit(tree, "a filter on cli.py")
    git(tree, "config", "filter.hide.clean", f"grep -v -F '{PLANTED.decode().strip()}'")
    cli = tree / "neurobrix/cli.py"
    cli.write_bytes(cli.read_bytes() + PLANTED)
    git(tree, "add", "neurobrix/cli.py")  # the index's stat refreshed: `git status` and `git diff` now say nothing


def _export_ignore(tree: Path, outside: Path) -> None:
    (tree / ".gitattributes").write_text("neurobrix/ops/** export-ignore\n", encoding="utf-8")
    _commit(tree, "ops export-ignore")


def _submodule(tree: Path, outside: Path) -> None:
    """A gitlink at neurobrix/vendor (an empty folder in the working tree, as a clone without `--recursive` leaves
    it)."""
    (tree / "neurobrix/vendor").mkdir()
    oid = git(tree, "rev-parse", "HEAD").strip()
    git(tree, "update-index", "--add", "--cacheinfo", f"160000,{oid},neurobrix/vendor")
    git(tree, "commit", "-q", "-m", "a submodule in the package")


def _tracked_hgignore(tree: Path, outside: Path) -> None:
    """The repository's own .hgignore (tracked, empty so that hatchling's search for one ends at the top) given a
    pattern: git reads none of it."""
    (tree / ".hgignore").write_text("syntax: glob\nneurobrix/ops/*\n", encoding="utf-8")
    _commit(tree, ".hgignore")


CASES: dict[str, Edit] = {
    # the working tree alone (git's index and commit as they were)
    "ops a link to its files, moved to neurobrix/_ops (walked first, ignored)": _ops_linked_to_a_folder_walked_first,
    "ops a link outside, reached first by an ignored link neurobrix/aaa": _ops_reached_by_an_ignored_link_first,
    "an untracked module .git/info/exclude hides": _module_info_exclude,
    "an untracked module a self-ignoring neurobrix/.gitignore hides": _module_nested_gitignore,
    "an untracked module core.excludesFile hides": _module_excludes_file,
    "an untracked git repository in the package": _nested_repository,
    "an untracked table file": _untracked_table,
    # committed
    "a tracked link to cli.py": _tracked("neurobrix/evil.py", "cli.py"),
    "a tracked link to /etc/hostname": _tracked("neurobrix/host.txt", "/etc/hostname"),
    "a tracked link to ops walked before it (neurobrix/aaa)": _tracked("neurobrix/aaa", "ops"),
    "a tracked link to ops walked after it (neurobrix/zzz)": _tracked("neurobrix/zzz", "ops"),
    "a tracked link to a folder outside the package": _tracked("neurobrix/gate", "../gate"),
    "a tracked link to a missing file": _tracked("neurobrix/gone.py", "nowhere.py"),
    "a tracked submodule in the package": _submodule,
    "a tracked .DS_Store in ops": _tracked_file("neurobrix/ops/.DS_Store", b"\0\0\0\1Bud1"),
    "a tracked module under neurobrix/__pycache__": _tracked_file("neurobrix/__pycache__/keep.py", b"X = 1\n"),
    "a tracked module under neurobrix/.venv": _tracked_file("neurobrix/.venv/keep.py", b"X = 1\n"),
    "a tracked file under neurobrix/_tables": _tracked_file("neurobrix/_tables/extra.json", b"{}\n"),
    "a tracked .hgignore dropping ops": _tracked_hgignore,
    "a clean filter hiding an edit of cli.py": _clean_filter,
    "the package a link to its files outside the checkout": _package_linked_outside,
}

CONTROLS: dict[str, Edit] = {
    "ops a link to its files outside the checkout": _ops_linked_outside,
    "tables a link to its files outside the checkout": _tables_linked_outside,
    "stale bytecode under neurobrix/__pycache__": _stale_bytecode,
    "a tracked .gitattributes export-ignore on ops": _export_ignore,
    "a tracked neurobrix/.gitignore naming ops/": _tracked_file("neurobrix/.gitignore", b"ops/\n"),
}


def make(base: Path, into: Path, case: str) -> Path:
    """A clone of the git repository ``base`` at ``into``/repo made hostile as ``case`` says; the clone's path."""
    tree = into / "repo"
    subprocess.run(["git", "clone", "-q", str(base), str(tree)], check=True, capture_output=True)
    {**CASES, **CONTROLS}[case](tree, into / "outside")
    return tree


def git_status(tree: Path) -> str:
    """What `git status --porcelain` says of the tree (empty: a clean tree to whoever looks)."""
    return git(tree, "status", "--porcelain", "--untracked-files=all")


def package_listing(tree: Path) -> list[str]:
    """Every regular file the working tree reaches under ``neurobrix/`` (links followed), relative to the tree."""
    found = []
    for top, _, files in os.walk(tree / "neurobrix", followlinks=True):
        found.extend(os.path.relpath(os.path.join(top, f), tree) for f in files)
    return sorted(found)
