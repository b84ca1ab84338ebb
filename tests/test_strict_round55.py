"""The fifty-fifth round, adversarial on the strict runtime: a kernel setting that was never proven for the exact
call, reached through the tables' keys and buckets, their JSON and YAML as the loader and `tables verify` read them,
the proofs' bindings, the environment, and a tables folder replaced under a program (docs/strictness-rounds.md).

Found and fixed (each test marked so failed before its fix):
- NEUROBRIX_TABLES naming a link (``tables-current -> tables-v1``, switched to ``tables-v2`` when the class is
  re-certified: the one way to replace a whole folder at once) was resolved to the link's target once a process
  (``tables._locate``'s cache): a program's loaded model went on generating with the old folder's settings after the
  link moved to tables that no longer certify them, where a fresh process refuses the model, and `tables.load()` kept
  handing out the old folder. The named folder is now looked up again at each load (a few system calls); the model is
  refused by name as round 47 refuses a folder re-certified in place or another folder named.

Pinned (pass before and after): a table quirk the loader and `tables verify` each refuse alike (a second JSON value
after the index, a key spelt twice through a unicode escape, a record's stack spelt with a look-alike character), and a
call one past the last value of a bounded domain, which no entry covers.

No GPU: the interpreter class, on the shipped interpreter tables copied and tracked again, and round 47's tiny model.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import REPO, retrack
from store_fixtures import make_checkpoint

from neurobrix import store, tables
from neurobrix.errors import MissingEntryError, TablesError, UsageError
from neurobrix.generate import Sampling, generate
from neurobrix.plan import resolve
from neurobrix.run import load_model

CLASS = "interpreter"
PROMPT, NEW = [3, 4, 5], 4


@pytest.fixture
def tiny(tmp_path, monkeypatch) -> Path:
    """A store holding the tiny checkpoint as ``tiny``; the checkpoint's folder."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny")
    store.import_model(str(folder), progress=False)
    return folder


def _tables(tmp_path: Path, name: str, without: str | None = None) -> Path:
    """The interpreter class's shipped tables, copied and tracked under ``name`` (``without`` a kernel's files)."""
    root = tmp_path / name
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    if without:
        for path in (tables.index_path(root, CLASS, without), tables.proofs_path(root, CLASS, without)):
            path.unlink()
    retrack(root)
    return root


def _point(link: Path, target: Path) -> None:
    """``link`` made to lead to ``target`` at once (a new link renamed over it), as a deployment switches folders."""
    scratch = link.with_name(link.name + ".new")
    scratch.symlink_to(target, target_is_directory=True)
    os.replace(scratch, link)


def _ids(model) -> list[int]:
    return generate(model, PROMPT, NEW, Sampling(), set())[0]


# --- a tables folder replaced under a program -----------------------------------------------------------------------


def test_a_loaded_model_refuses_the_tables_a_moved_link_names_now(tiny, tmp_path, monkeypatch):
    """Fixed: the link NEUROBRIX_TABLES names moved to re-certified tables that drop a setting the model launches; the
    model went on generating with it (the old target, resolved once a process), while a fresh load is refused."""
    link = tmp_path / "tables-current"
    _point(link, _tables(tmp_path, "tables-v1"))
    monkeypatch.setenv(tables.ENV_VAR, str(link))
    model = load_model(store.resolve("tiny"), "triton", "fp32", prompt_len=len(PROMPT), capacity=len(PROMPT) + NEW)
    _ids(model)
    _point(link, _tables(tmp_path, "tables-v2", without="rms_norm"))
    assert tables.load().root == (tmp_path / "tables-v2").resolve()  # what a fresh process reads
    with pytest.raises(UsageError, match=r"^the tables this model's settings were resolved from .*rms_norm") as err:
        _ids(model)
    assert "\n" not in str(err.value) and "tables-v2" in str(err.value)


def test_a_link_moved_to_the_same_settings_changes_nothing(tiny, tmp_path, monkeypatch):
    """Pinned: the link moved to an identical copy (another folder, the same settings): the same ids."""
    link = tmp_path / "tables-current"
    _point(link, _tables(tmp_path, "tables-v1"))
    monkeypatch.setenv(tables.ENV_VAR, str(link))
    model = load_model(store.resolve("tiny"), "triton", "fp32", prompt_len=len(PROMPT), capacity=len(PROMPT) + NEW)
    before = _ids(model)
    _point(link, _tables(tmp_path, "tables-v2"))
    assert _ids(model) == before
    assert model.ops.origin.tables.root == (tmp_path / "tables-v2").resolve()


def _copy_over(source: Path, target: Path) -> None:
    """Each file of ``source`` written into its namesake in ``target`` in place, its time kept (``cp -p``, ``cp -a``,
    ``rsync --inplace -t``): the same inode, and where the two were extracted with one fixed time (a reproducible
    archive's), the same modification time."""
    for path in sorted(source.rglob("*")):
        if path.is_file():
            into = target / path.relative_to(source)
            kept = into.stat().st_mtime_ns
            with open(into, "r+b") as out:
                out.write(path.read_bytes())
                out.truncate()
            os.utime(into, ns=(kept, kept))


def test_a_loaded_model_refuses_tables_copied_over_its_own_at_the_same_size_and_time(tiny, tmp_path, monkeypatch):
    """Fixed: tables certified on another Triton (the same sizes) copied over the folder a model was loaded from,
    each file in place with its time kept: TRACKED.yaml's inode, size and time were all the process compared, so the
    model went on generating on tables a fresh process refuses (exit 6). Its change time, which no copy can keep, is
    compared too now."""
    root = _tables(tmp_path, "tables")
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    model = load_model(store.resolve("tiny"), "triton", "fp32", prompt_len=len(PROMPT), capacity=len(PROMPT) + NEW)
    _ids(model)
    other = tmp_path / "other"
    shutil.copytree(root, other)
    for path in other.rglob("*.json"):  # the index states the stack, the record's provenance too
        path.write_text(path.read_text().replace('"triton": "3.9.0"', '"triton": "3.9.9"'))
    for path in other.rglob("*.proofs.yaml"):
        path.write_text(path.read_text().replace("\n  triton: 3.9.0\n", "\n  triton: 3.9.9\n", 1))
    retrack(other)
    assert (other / tables.TRACKED_NAME).stat().st_size == (root / tables.TRACKED_NAME).stat().st_size
    _copy_over(other, root)
    with pytest.raises(UsageError, match=r"^the tables this model's settings were resolved from .*3\.9\.9") as err:
        _ids(model)
    assert "\n" not in str(err.value)
