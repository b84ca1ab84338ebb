"""Round 41 of planted bugs (tests/planted41_plants.py, applied one at a time by tests/planted41_driver.py): the code
merged this session that no round planted. Gate round 45 (gate/repository.py's safe git options, ``_objects`` and
``_commit_files`` hashing the commit and each tree; gate/__init__.py's ``shadowing`` and ``_refuse_shadowing``), gate
round 46 (gate/checker.py's link-and-``..`` refusal), strict round 47 (tables' ``was_loaded``/``is_loaded``/
``current``, ``Plan.ops`` and ``require_current``, generate's call of it, stack's stale-tables refusal, StoredModel's
``config()``/``tokenizer()`` held to the check), text round 39's Mistral head_dim 0 refusal, certify's provenance.

33 plants, each run against the test files a contributor would run for its module (gate round 45's, round 46's,
strict round 47's, text round 39's ``-k head_dim``, and round 40's provenance tests): 18 were caught before the round
(the replace refs and fsmonitor options, the batch's offsets, the hash check, folders taken for files, a tree's path
prefix, ``python -m gate``'s mark, ``..`` compared by real path, ``is_loaded`` and ``current``, the settings' re-check,
generate's call of it, stack's stale-tables refusal, both StoredModel reads, yarn's refusal, provenance's folder and
its harness path). 15 survived; 10 now fail a test below (checked: each plant against its test alone, in a copy):
g04 (GIT_* stripped as GIT_DIR alone: a caller's GIT_INDEX_FILE read another index), g06 and g10 (a SHA-256
repository's ids hashed with SHA-1, read as 20 bytes), h01 (a package whose ``__init__`` is bytecode alone), h02 (the
checkout on sys.path through a link never checked), h04 (``neurobrix.py`` beside the package refused), k01 (a missing
path with ``..`` named a link), k03 (``..`` after a link to a place normpath does not find passed), t05 (a program's
own ``Plan(...)`` without tables: its ops never held to the tables found now), c02 (a new uncommitted file of the
engine or harness not said). Four are equivalent: g03 (``core.commitGraph=true``: the gate reads the commit and its
trees with ``cat-file --batch``, which never takes a tree from the commit-graph; the forged-graph test passes), g05
(the header's kind unchecked: the hash is taken over that kind's header, so an object of another kind never hashes to
its id), t06 (``len(exc.lines) > 3`` for ``> 2``: a MissingEntryError lists one call at least, so its lines are four
or more), m02 (``arch == "mistral"`` dropped: any other architecture's head_dim 0 is refused earlier, "leaves a head
dim of 0"). No defect was found in the clean code.

Pinned: a loaded model refuses tables named since that hold its very settings proven on another Triton (fails with
generate's re-check dropped, t07; passes with t04 planted: the settings' re-check refuses that stack too).

Left open: t04 (``require_runnable`` dropped from ``require_current``) survives the pin above; what only it refuses
(tables named since whose class match no longer takes this machine) has no test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import retrack
from test_gate_round45 import _git, base, clone
from test_strict_round47 import _drop, _tables, tiny

from gate.checker import collect
from gate.checks import GateError
from gate.repository import _commit_files, read_tree_state
from neurobrix import store, tables
from neurobrix.errors import UsageError
from neurobrix.plan import Plan, generation_calls, require_current, resolve

__all__ = ["base", "clone", "tiny"]  # fixtures


# -- gate round 45: the commit's tree walked and hashed here ---------------------------------------------------------


def _ls_tree(root: Path) -> dict[str, tuple[str, str]]:
    """git's own reading of HEAD's tree: path -> (mode, id), folders left out (the reference)."""
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "-z", "--full-tree", "HEAD"], cwd=root, capture_output=True, check=True
    ).stdout
    entries = {}
    for record in filter(None, listing.split(b"\0")):
        info, path = record.split(b"\t", 1)
        mode, _, oid = info.decode().split(" ")
        entries[os.fsdecode(path)] = (mode, oid)
    return entries


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_the_commits_files_are_gits_own_listing_in_either_object_format(tmp_path: Path, object_format: str) -> None:
    """Survivors g06 and g10: the tree walk took every id as SHA-1's 20 bytes and hashed with SHA-1 unless the id
    was 64 hex digits; nothing tried a SHA-256 repository (``git init --object-format=sha256``), whose ids are 32
    bytes. The walk's listing is git's ``ls-tree -r`` in both formats, and the tree state of the clean checkout is
    clean."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", f"--object-format={object_format}")
    for name in ("a.py", "pkg/__init__.py", "pkg/deep/b.txt", "z"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"{name}\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "files")
    head = _git(root, "rev-parse", "HEAD")
    assert len(head) == (40 if object_format == "sha1" else 64)
    assert _commit_files(root, head) == _ls_tree(root)
    assert read_tree_state(root).clean


def test_the_callers_git_variables_do_not_steer_what_the_gate_reads(
    clone: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Survivor g04: every GIT_* variable is stripped from git's environment, not GIT_DIR alone: a GIT_INDEX_FILE
    the caller's environment holds (a script of its own, a tool run before) made git read another index, and the
    clean checkout read as every file staged away."""
    assert read_tree_state(clone).clean
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "another-index"))
    assert read_tree_state(clone).clean


# -- gate round 45: python -m gate and a module at the checkout's top ------------------------------------------------


def _gate_help(cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gate", "--help"], cwd=cwd, capture_output=True, text=True, env={**os.environ, **env}
    )


def test_a_package_of_bytecode_alone_at_the_top_is_refused(clone: Path, tmp_path: Path) -> None:
    """Survivor h01: a folder counted as a package only with an ``__init__.py``; Python imports one whose
    ``__init__`` is a ``.pyc`` alone (or an extension module) all the same, ahead of the installed ``yaml``."""
    import py_compile

    marker = tmp_path / "ran"
    source = tmp_path / "init.py"
    source.write_text(f"open({str(marker)!r}, 'w').write('owned')\nraise SystemExit(0)\n")
    (clone / "yaml").mkdir()
    py_compile.compile(str(source), cfile=str(clone / "yaml" / "__init__.pyc"), doraise=True)
    result = _gate_help(clone)
    assert not marker.exists(), "the bytecode ran inside the gate"
    assert result.returncode == 2 and result.stderr.startswith(f"gate: error: {clone}: yaml: code"), result.stderr


def test_a_checkout_on_the_path_through_a_link_is_checked_too(clone: Path, tmp_path: Path) -> None:
    """Survivor h02: the checkout named on sys.path through a link (PYTHONPATH, an editable install's .pth): the
    gate's folder is found by that name, sys.path's entries by their real paths; compared as given, the two never
    met and the check was skipped, so an untracked ``packaging.py`` there ran inside the gate."""
    marker = tmp_path / "ran"
    (clone / "packaging.py").write_text(f"open({str(marker)!r}, 'w').write('owned')\nraise SystemExit(0)\n")
    linked = tmp_path / "linked"
    linked.symlink_to(clone, target_is_directory=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = _gate_help(elsewhere, PYTHONPATH=str(linked))
    assert not marker.exists(), "the module ran inside the gate"
    assert result.returncode == 2 and "packaging.py: code the repository does not hold" in result.stderr, result.stderr


def test_a_file_named_as_a_top_package_is_no_shadowing(clone: Path) -> None:
    """Survivor h04: ``neurobrix.py`` beside the ``neurobrix/`` package is never imported (a folder with an
    ``__init__`` comes first in its path entry), so it is not refused; it was, compared by its file name."""
    (clone / "neurobrix.py").write_text("raise SystemExit(3)\n")
    result = _gate_help(clone)
    assert result.returncode == 0, result.stderr


# -- gate round 46: a link and `..` ---------------------------------------------------------------------------------


def test_a_missing_path_with_dotdot_is_named_missing_not_a_link(tmp_path: Path) -> None:
    """Survivor k01: a path with ``..`` that names nothing was refused as "`..` after a link" (the comparison of two
    paths that do not exist fails); it is what any missing path is."""
    (tmp_path / "b").mkdir()
    with pytest.raises(GateError) as refused:
        collect([tmp_path / "b" / ".." / "dist"])
    assert "after a link" not in str(refused.value)


def test_dotdot_after_a_link_to_a_place_normpath_does_not_find_is_refused(tmp_path: Path) -> None:
    """Survivor k03: through a link, ``a/../dist`` is a release folder to the system and, by its letters, a folder
    that does not exist (twine's metadata path); comparing them raises, which was taken for one file."""
    release = tmp_path / "r" / "dist"
    release.mkdir(parents=True)
    (release / "x-1.0-py3-none-any.whl").write_bytes(b"PK\x05\x06" + b"\0" * 18)
    (tmp_path / "r" / "s").mkdir()
    (tmp_path / "a").symlink_to(tmp_path / "r" / "s", target_is_directory=True)
    with pytest.raises(GateError, match=r"`\.\.` after a link"):
        collect([tmp_path / "a" / ".." / "dist"])


# -- strict round 47: a plan's ops held to the tables found now -------------------------------------------------------


def test_ops_of_a_plan_a_program_built_without_tables_are_held_to_the_tables_found_now(tiny, tmp_path, monkeypatch):
    """Survivor t05: ops from a ``Plan(...)`` a program built without tables (the plan's settings resolved from the
    tables located then) were never held to tables re-certified since: a generation went on with a setting no table
    certifies now. They are held to the tables ``Plan.ops`` resolved them in."""
    root = _tables(tmp_path, "tables")
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    resolved = resolve(generation_calls(store.resolve("tiny").config(), 1, 3, 11, "fp32"), tables.load(), "interpreter")
    ops = Plan(resolved.class_id, resolved.settings, resolved.pdl).ops()
    require_current(ops)  # the tables unchanged: nothing to say
    _drop(root, "rms_norm")
    retrack(root)
    with pytest.raises(UsageError, match=r"^the tables this model's settings were resolved from .*rms_norm"):
        require_current(ops)


# -- planted round 40's provenance fix --------------------------------------------------------------------------------


def test_a_new_file_of_the_engine_not_yet_committed_is_an_uncommitted_change(tmp_path, monkeypatch):
    """Survivor c02: a file added under neurobrix/ or conformance/ and never committed (a new kernel, a harness
    module) is a change the commit does not hold, as much as an edit: the table records ``+uncommitted-changes``
    (git status lists it as untracked), and a file elsewhere or one git ignores does not count."""
    from conformance import certify

    monkeypatch.delenv("NEUROBRIX_SOURCE_COMMIT", raising=False)
    repo = tmp_path / "repo"
    for folder in ("neurobrix", "conformance"):
        (repo / folder).mkdir(parents=True)
        (repo / folder / "a.py").write_text("x = 1\n", encoding="utf-8")
    (repo / ".gitignore").write_text("*.log\n", encoding="utf-8")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "c")
    monkeypatch.setattr(certify, "__file__", str(repo / "conformance" / "certify.py"))
    (repo / "notes.py").write_text("elsewhere\n", encoding="utf-8")
    (repo / "neurobrix" / "run.log").write_text("ignored\n", encoding="utf-8")
    assert not certify.provenance("c")["git_commit"].endswith("+uncommitted-changes")
    for folder in ("neurobrix", "conformance"):
        (repo / folder / "new.py").write_text("y = 1\n", encoding="utf-8")
        assert certify.provenance("c")["git_commit"].endswith("+uncommitted-changes"), folder
        (repo / folder / "new.py").unlink()


def test_a_loaded_model_refuses_tables_named_since_that_were_proven_on_another_stack(tiny, tmp_path, monkeypatch):
    """Pinned: tables named since that hold the model's very settings, proven on another Triton than the one running,
    are refused at the next generation, as a fresh process refuses them (t07 fails it; t04 does not: the settings'
    re-check refuses that stack as well as ``require_runnable``)."""
    from test_strict_round47 import _fresh, _ids, _loaded

    monkeypatch.setenv(tables.ENV_VAR, str(_tables(tmp_path, "same")))
    model = _loaded()
    other = _tables(tmp_path, "other")
    for proofs in (other / "interpreter").glob("*.proofs.yaml"):
        text = proofs.read_text(encoding="utf-8")
        running = re.search(r"^  triton: (\S+)$", text, re.M)[1]
        major, minor = running.split(".")[:2]
        proofs.write_text(text.replace(f"  triton: {running}\n", f"  triton: {major}.{int(minor) + 1}.0\n", 1))
    retrack(other)
    monkeypatch.setenv(tables.ENV_VAR, str(other))
    assert isinstance(_fresh(), int)  # a fresh process refuses them (an exit code, no ids)
    with pytest.raises(UsageError, match=r"^the tables this model's settings were resolved from "):
        _ids(model)
