"""The forty-fifth round against the release gate: a build step that tampers with the workspace the gate then reads.

A pipeline that builds and gates in one checkout runs the build backend and its dependencies there first. The gate
judges dists against "the tracked files at the commit" as git tells it (gate/repository.py runs git in the checkout,
GIT_* variables stripped, the checkout's own .git and the user's ~/.gitconfig read), and ``python -m gate`` imports
from the checkout's top. Each case below is built with real git commands in a clone of a git copy of this checkout.

Found and fixed, each test failing before:

1. ``core.fsmonitor``: git 2.39's ``git ls-files --stage``, which the gate runs for the tracked list and the tree
   state, runs the command that setting names (twice per call), from the checkout's .git/config, a file it includes,
   or ~/.gitconfig. Every git call now runs with ``-c core.fsmonitor=`` (empty: off), ``core.hooksPath=/dev/null``,
   ``core.commitGraph=false`` and ``--no-replace-objects``;
2. a replace ref: an edited tracked file staged, a commit of that tree made and ``git replace <commit> <it>``:
   ``git status`` is clean and ``git ls-tree <commit>`` lists the edited tree under the commit's own id, so the tree
   state was clean at the very commit the publish checks compare with ``GITHUB_SHA``. A false pass; now the commit's
   own tree is read and the file named (exit 2 from the command line);
3. an overwritten tree object: git checks a commit's bytes when it reads one, never a tree's, so a loose tree object
   overwritten with the edited tree's bytes gave the same false pass (``git fsck`` alone says "hash-path mismatch"),
   as did those bytes under the tree's name in a store ``objects/info/alternates`` names. The gate now reads the
   commit and every tree itself (``git cat-file --batch``) and hashes each object's bytes against its id: a mismatch
   is one line, exit 2;
4. an untracked module at the checkout's top under ``python -m gate`` (round 44 left it open): ``packaging.py``,
   ``subprocess.py`` or a ``yaml/`` package there ran inside the gate before any check. ``gate/__init__.py`` now
   stops the run (one line, exit 2) before the gate imports anything, wherever the checkout's top is on sys.path
   and a module there is none of the repository's (``gate.TOP_MODULES``, held to git's list here).

Pinned, refused or harmless already (each test of the index, the sparse checkout, grafts, shallow and the
commit-graph fails with the tree state weakened: HEAD's entries taken from the index, or the working tree trusted):
a hostile file ``git add``-ed (tracked by the index, so the allow-list takes it, and named by the tree state);
``--assume-unchanged`` and ``--skip-worktree`` hiding an edit from ``git status``; a sparse checkout; a split index;
HEAD or its branch moved to another commit (the report names that commit, which the publish checks hold to
``GITHUB_SHA``); ``.git`` made a file naming another repository, with a replace ref there (read as any other);
``info/grafts`` and a ``shallow`` file (parents, never a tree); a forged commit-graph (which fools ``git status``,
not the gate); ``core.worktree`` elsewhere and ``core.bare`` (exit 2); clean and process filters and hooks (no
command the gate makes runs them); a plain folder or a text file at the top.

Left open: a build step that can write into the checkout can rewrite the tracked gate/*.py the pipeline then runs,
or the Python environment the gate runs in, and the gate imports the checkout's ``neurobrix`` before it reads the
tree state (an edited ``neurobrix/schema.py`` prints from inside the gate, which then refuses it, exit 2): no check
within the gate holds against that. release.yml builds in one
job and gates in another, from a fresh checkout with hash-locked tools; a pipeline of its own should do the same.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from conftest import REPO

import gate
from gate.checks import GateError
from gate.repository import _tracked_files, read_tree_state

EDITED = "neurobrix/schema.py"
WHO = ("-c", "user.name=round45", "-c", "user.email=round45@localhost")


def _git(cwd: Path, *args: str, check: bool = True) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    result = subprocess.run(["git", *WHO, *args], cwd=cwd, capture_output=True, text=True, env=env, check=False)
    if check and result.returncode:
        raise AssertionError(f"git {' '.join(args)}: {result.stderr}")
    return result.stdout.strip()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's tracked files as its working tree holds them, committed in a repository of their own."""
    copy = tmp_path_factory.mktemp("round45") / "base"
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for raw in filter(None, listing.split(b"\0")):
        source = REPO / os.fsdecode(raw)
        if source.is_file():
            target = copy / os.fsdecode(raw)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)
    _git(copy, "init", "-q")
    _git(copy, "add", "-A")
    _git(copy, "commit", "-q", "-m", "this checkout")
    return copy


@pytest.fixture
def clone(base: Path, tmp_path: Path) -> Path:
    """A checkout as a pipeline has it: cloned (objects copied, never linked: some cases overwrite them)."""
    _git(tmp_path, "clone", "-q", "--no-hardlinks", str(base), "work")
    return tmp_path / "work"


def _edit(clone: Path) -> bytes:
    """A tracked file of the package edited as a build step would (a line of code added); the new bytes."""
    path = clone / EDITED
    data = path.read_bytes() + b"\nimport os; os.system('echo owned')\n"
    path.write_bytes(data)
    return data


def _marker_command(tmp_path: Path, name: str = "ran") -> tuple[str, Path]:
    marker = tmp_path / name
    script = tmp_path / f"{name}.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\nexit 1\n')
    script.chmod(0o755)
    return str(script), marker


# 1. core.fsmonitor: a command git runs on `ls-files`


@pytest.mark.parametrize("where", ["repository", "include", "global"])
def test_git_never_runs_an_fsmonitor_command(clone: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str):
    """The command core.fsmonitor names, set in .git/config, in a file it includes, or in ~/.gitconfig, is run by
    `git ls-files` itself (shown with plain git), never by the gate's git calls."""
    command, marker = _marker_command(tmp_path)
    if where == "repository":
        _git(clone, "config", "core.fsmonitor", command)
    elif where == "include":
        (tmp_path / "extra.config").write_text(f"[core]\n\tfsmonitor = {command}\n")
        _git(clone, "config", "include.path", str(tmp_path / "extra.config"))
    else:
        home = tmp_path / "home"
        home.mkdir()
        (home / ".gitconfig").write_text(f"[core]\n\tfsmonitor = {command}\n")
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    _git(clone, "ls-files", "--stage")
    assert marker.exists(), "git itself runs the fsmonitor command: the case is real"
    marker.unlink()
    state = read_tree_state(clone)
    _tracked_files(clone)
    assert state.clean
    assert not marker.exists(), marker.read_text()


# 2. and 3. the commit's tree as git lists it is not the commit's


def _edited_tree(clone: Path) -> tuple[str, str]:
    """The commit checked out and a commit of the tree with EDITED edited, staged and in the working tree."""
    commit = _git(clone, "rev-parse", "HEAD")
    _edit(clone)
    _git(clone, "add", EDITED)
    tree = _git(clone, "write-tree")
    other = _git(clone, "commit-tree", tree, "-p", commit, "-m", "the edit")
    return commit, other


def test_a_replace_ref_does_not_make_another_tree_the_commits(clone: Path) -> None:
    commit, other = _edited_tree(clone)
    _git(clone, "replace", commit, other)
    assert _git(clone, "status", "--porcelain") == "", "git status calls the edited tree the commit's"
    assert _git(clone, "rev-parse", "HEAD") == commit
    state = read_tree_state(clone)
    assert state.commit == commit
    assert state.differs == (EDITED,), state


def test_the_command_line_refuses_the_replaced_tree(clone: Path) -> None:
    """As a pipeline runs it, from the checkout's top: exit 2 naming the file, before any dist is read."""
    commit, other = _edited_tree(clone)
    _git(clone, "replace", commit, other)
    (clone / "dist").mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "gate", "check", "dist", "--no-smoke"], cwd=clone, capture_output=True, text=True
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"1 tracked file not as committed: {EDITED}" in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1


def _loose(clone: Path, oid: str) -> Path:
    return clone / ".git" / "objects" / oid[:2] / oid[2:]


def test_an_overwritten_tree_object_is_refused(clone: Path) -> None:
    """The loose object of the commit's `neurobrix` tree overwritten with the edited tree's bytes: `git ls-tree` and
    `git status` take it, the gate hashes it and stops."""
    commit = _git(clone, "rev-parse", "HEAD")
    old = _git(clone, "rev-parse", "HEAD:neurobrix")
    _edit(clone)
    _git(clone, "add", EDITED)
    new = _git(clone, "write-tree", "--prefix=neurobrix/")
    assert old != new
    target = _loose(clone, old)
    assert target.is_file(), "the clone keeps its objects loose"
    target.chmod(0o644)
    target.write_bytes(zlib.compress(zlib.decompress(_loose(clone, new).read_bytes())))
    assert _git(clone, "status", "--porcelain") == "", "git status calls the edited tree the commit's"
    listed = _git(clone, "ls-tree", "-r", commit, "--", EDITED).split()[2]
    assert listed == _git(clone, "rev-parse", f":{EDITED}"), "git ls-tree lists the edited file as the commit's"
    with pytest.raises(GateError, match=f"other bytes under the tree {old}"):
        read_tree_state(clone)


def test_a_forged_commit_graph_fools_git_status_not_the_gate(clone: Path) -> None:
    """Pinned: the commit-graph file holds each commit's tree; `git status` takes the tree from it, unchecked. A
    graph whose entry for HEAD names the edited tree (the bytes patched where the tree's id is) hides a staged edit
    from `git status`; the gate reads the commit object itself."""
    commit = _git(clone, "rev-parse", "HEAD")
    tree = _git(clone, "rev-parse", "HEAD^{tree}")
    _edit(clone)
    _git(clone, "add", EDITED)
    edited = _git(clone, "write-tree")
    _git(clone, "commit-graph", "write", "--reachable")
    graph = clone / ".git" / "objects" / "info" / "commit-graph"
    data = graph.read_bytes()
    assert data.count(bytes.fromhex(tree)) == 1
    graph.chmod(0o644)
    graph.write_bytes(data.replace(bytes.fromhex(tree), bytes.fromhex(edited)))
    assert _git(clone, "status", "--porcelain") == "", "git status takes the forged graph"
    state = read_tree_state(clone)
    assert (state.commit, state.differs) == (commit, (EDITED,))


# pinned: the index


def test_a_file_added_to_the_index_is_tracked_and_named(clone: Path) -> None:
    """`git add` of a new module makes it tracked (the wheel's allow-list takes it), and the tree state names it, so
    a release stops."""
    (clone / "neurobrix" / "_hook.py").write_text("import os\n")
    _git(clone, "add", "neurobrix/_hook.py")
    assert "neurobrix/_hook.py" in _tracked_files(clone)
    assert read_tree_state(clone).differs == ("neurobrix/_hook.py",)


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_an_edit_hidden_from_git_status_is_named(clone: Path, flag: str) -> None:
    _git(clone, "update-index", flag, EDITED)
    _edit(clone)
    assert _git(clone, "status", "--porcelain") == "", "git status hides the edit"
    assert read_tree_state(clone).differs == (EDITED,)


def test_a_sparse_checkout_is_named(clone: Path) -> None:
    _git(clone, "sparse-checkout", "set", "--no-cone", "/*", "!/tables/")
    assert not (clone / "tables").exists()
    state = read_tree_state(clone)
    assert state.differs and all(p.startswith("tables/") for p in state.differs)


def test_a_split_index_with_a_staged_edit_is_named(clone: Path) -> None:
    _edit(clone)
    _git(clone, "update-index", "--split-index", "--add", EDITED)
    assert list((clone / ".git").glob("sharedindex.*"))
    assert read_tree_state(clone).differs == (EDITED,)


# pinned: another commit


def test_head_moved_to_another_commit_is_named_as_that_commit(clone: Path) -> None:
    """The branch moved to a commit of the edit: clean, but at that commit, which is not the one released (the
    publish checks compare the report's commit with GITHUB_SHA)."""
    commit, other = _edited_tree(clone)
    _git(clone, "reset", "-q", "--soft", other)
    state = read_tree_state(clone)
    assert state.clean and state.commit == other != commit


def test_a_git_file_naming_another_repository(clone: Path, tmp_path: Path) -> None:
    """`.git` made a file naming another repository, one that holds the released commit and a replace ref to the
    edit: the gate reads the commit's own tree from there and names the file."""
    commit, other = _edited_tree(clone)
    elsewhere = tmp_path / "elsewhere.git"
    shutil.move(clone / ".git", elsewhere)
    (clone / ".git").write_text(f"gitdir: {elsewhere}\n")
    _git(clone, "replace", commit, other)
    assert _git(clone, "status", "--porcelain") == ""
    state = read_tree_state(clone)
    assert (state.commit, state.differs) == (commit, (EDITED,))


# pinned: what changes parents or adds objects, never a tree's bytes


def test_a_tree_from_an_alternate_object_store_is_hashed(clone: Path, tmp_path: Path) -> None:
    """objects/info/alternates naming a store that holds, under the name of the commit's `neurobrix` tree, the edited
    tree's bytes, the clone's own copy removed: git reads it from there unchecked, the gate hashes it."""
    old = _git(clone, "rev-parse", "HEAD:neurobrix")
    _edit(clone)
    _git(clone, "add", EDITED)
    new = _git(clone, "write-tree", "--prefix=neurobrix/")
    spare = tmp_path / "spare" / "objects"
    (spare / old[:2]).mkdir(parents=True)
    (spare / old[:2] / old[2:]).write_bytes(_loose(clone, new).read_bytes())
    _loose(clone, old).unlink()
    (clone / ".git" / "objects" / "info" / "alternates").write_text(f"{spare}\n")
    assert _git(clone, "status", "--porcelain") == ""
    with pytest.raises(GateError, match=f"other bytes under the tree {old}"):
        read_tree_state(clone)


@pytest.mark.parametrize("how", ["grafts", "shallow"])
def test_parents_changed_leave_the_tree(clone: Path, how: str) -> None:
    """info/grafts and a shallow file change a commit's parents, never its tree: the staged edit is named."""
    commit, other = _edited_tree(clone)
    if how == "grafts":
        (clone / ".git" / "info").mkdir(exist_ok=True)
        (clone / ".git" / "info" / "grafts").write_text(f"{commit} {other}\n")
    else:
        (clone / ".git" / "shallow").write_text(f"{commit}\n")
    state = read_tree_state(clone)
    assert (state.commit, state.differs) == (commit, (EDITED,))


# pinned: a checkout that is not one


def test_a_work_tree_elsewhere_or_a_bare_repository_stops_the_gate(clone: Path, tmp_path: Path) -> None:
    _git(clone, "config", "core.worktree", str(tmp_path))
    with pytest.raises(GateError, match="not the top of its git checkout"):
        read_tree_state(clone)
    _git(clone, "config", "--unset", "core.worktree")
    _git(clone, "config", "core.bare", "true")
    with pytest.raises(GateError, match="not a usable git checkout"):
        read_tree_state(clone)


def test_filters_and_hooks_are_never_run(clone: Path, tmp_path: Path) -> None:
    """Clean, smudge and process filters on every file and hooks in core.hooksPath: `git status` runs some of them,
    none of the gate's git calls does."""
    command, marker = _marker_command(tmp_path)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("post-index-change", "reference-transaction", "post-checkout"):
        (hooks / hook).symlink_to(command)
    (clone / ".git" / "info" / "attributes").write_text("* filter=x\n")
    _git(clone, "config", "filter.x.clean", command)
    _git(clone, "config", "filter.x.process", command)
    _git(clone, "config", "core.hooksPath", str(hooks))
    os.utime(clone / EDITED)
    _git(clone, "status", check=False)
    assert marker.exists(), "git status runs them: the case is real"
    marker.unlink()
    assert read_tree_state(clone).clean
    assert not marker.exists()


# 4. an untracked module at the checkout's top under `python -m gate`


@pytest.mark.parametrize("name", ["packaging.py", "subprocess.py", "yaml/__init__.py"])
def test_python_m_gate_stops_on_a_module_the_repository_does_not_hold(clone: Path, tmp_path: Path, name: str):
    marker = tmp_path / "ran"
    path = clone / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"open({str(marker)!r}, 'w').write('owned')\nraise SystemExit(0)\n")
    result = subprocess.run([sys.executable, "-m", "gate", "--help"], cwd=clone, capture_output=True, text=True)
    assert not marker.exists(), "the module ran inside the gate"
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(f"gate: error: {clone}: {name.split('/')[0]}: code the repository does not hold")
    assert len(result.stderr.splitlines()) == 1


def test_a_folder_or_a_text_file_at_the_top_is_no_module(clone: Path) -> None:
    (clone / "scratch").mkdir()
    (clone / "scratch" / "notes.py").write_text("raise SystemExit(3)\n")
    (clone / "notes.txt").write_text("x\n")
    (clone / "dist").mkdir()
    result = subprocess.run([sys.executable, "-m", "gate", "--help"], cwd=clone, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_top_modules_are_the_repositorys() -> None:
    """gate.TOP_MODULES is what git tracks at the top that imports as code, and this checkout holds nothing else."""
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    top = {p.split("/")[0] for p in tracked.splitlines() if p.endswith(".py") and p.count("/") <= 1}
    modules = {t.removesuffix(".py") for t in top if t.endswith(".py") or (REPO / t / "__init__.py").is_file()}
    assert modules == gate.TOP_MODULES
    assert gate.shadowing(str(REPO)) == []
