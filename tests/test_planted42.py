"""Round 42 of planted bugs (tests/planted42_plants.py, applied one at a time by tests/planted42_driver.py): the
code merged last session where no round planted a line yet. hub.py's blob check (``check_blobs``, its caller in the
import, the bar for its hashing), store.py's lock and claimed scratch folders (remove's hold, the import's sweep and
scratch folder, the model moved aside put back, ``_claim``'s O_NOFOLLOW), strict round 48's whole-or-nothing writes
(certify's ``_replace_tracked``, track's ``replace_text``, the ``--json`` reports) and the resources
``errors.ran_out`` names, the engine-owned Triton cache (``use_engine_cache``, ``_cache_folder_problem``).

31 plants, each run against the test files a contributor would run for its module (strict round 45's and round 40's
blob tests; strict round 46's and round 40's aside tests; strict round 48's with test_cli's full-disk and --json
tests; test_engine_cache.py): 14 were caught before the round (a git-named blob unchecked, the cache folder's name,
the check's wording, the bar shown for milliseconds; scratch files listed, left behind or the tracked list not
rewritten, track's scratch file kept on a failure; conformance's line and the store's message naming no resource,
EFBIG unnamed; the engine's variable deleted though the user's, its switch for the interpreter; remove under a
shared hold). 17 survived; 13 now fail a test below (checked: each plant against its test alone, in a copy): b03 (the
blobs folder unresolved), b07 (the import's progress not passed to the check), b09 (the bar's total the first blob's),
w02 (certify's tracked list unsorted), w05 (the scratch file named by a .tmp suffix: a user's report.tmp clobbered),
r01, r02 (ENFILE, EROFS unnamed), e02 (the folder checked the engine's rather than TRITON_HOME's), e04 (the engine's
mark kept after it gave the variable back), s01 (a moved-aside model's manifest that is not JSON: every sweep raised),
s03 (the first model moved aside put back rather than the last), s04 (the scratch folder made under a shared hold),
s06 (the import's sweep run without the lock). The test for remove's hold also fails with s02.

Found and fixed: huggingface_hub's ``snapshot_download`` resolves the cache folder's links before it names the
snapshot, and both checks of a snapshot (strict round 44's ``_own_snapshot``: its files the repository's own; strict
round 45's ``check_blobs``: each blob the bytes its name says) compared that path with the cache as the environment
names it. Where HF_HOME, or the home folder, is a link (a cache on a larger disk), the two never matched and both
checks were skipped: damaged weights, or another repository's, imported with exit 0. ``hub._snapshot_of`` takes the
cache as named or as its real path (found by plant b03's test, which failed on the clean code).

Equivalent: b02 (a hash-named file outside the repository's ``blobs`` checked too: ``_own_snapshot``, run first,
refuses any snapshot file whose real path is outside the repository's folder, and inside it huggingface_hub names
only blobs so); b08 (names compared on 40 characters: a git name has 40, and a sha256 agreeing with another on its
first 40 hex digits is a 2**-160 chance); s05 (``_claim`` without O_NOFOLLOW: it claims the folder an import just
made under the lock, never a link, and a dead command's linked scratch entry then opens the user's checkpoint folder,
which no NeuroBrix process flocks, so it is swept as a link as before).

Left open: s07 (the trash of a finished install named as a model moved aside): a delete of it cut short is put back
by the next sweep only where nothing is stored under the name, which after a finished install takes a second import of
the name killed between its renames; its aside and the half-deleted trash are then both candidates. No test.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from store_fixtures import make_checkpoint
from test_strict_round44 import _lying_snapshot, checkpoints
from test_strict_round45 import _cli, _generated, _hub_layout, _isolated, _lie, checkpoint

from conformance import track
from neurobrix import hub, stack, store
from neurobrix.errors import ran_out

__all__ = [
    "_generated",
    "_isolated",
    "checkpoint",
    "checkpoints",
]  # fixtures (the store and the hub cache in tmp_path, offline)


# -- hub.py's blob check: where the blobs are, which files are checked, the bar ---------------------------------------


def _cache_through_a_link(tmp_path: Path, monkeypatch) -> None:
    """HF_HOME a link to the folder that holds the cache (a home, or a cache, on a larger disk)."""
    real = tmp_path / "disk" / "hf"
    real.mkdir(parents=True)
    os.symlink(real, tmp_path / "hf-link")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-link"))


def test_a_damaged_blob_is_refused_where_the_hugging_face_cache_is_reached_through_a_link(
    tmp_path, monkeypatch, checkpoint, capsys
):
    """The defect found: huggingface_hub's snapshot_download resolves the cache folder's links before it names the
    snapshot, and check_blobs compared that snapshot's path with the cache as the environment names it. Where HF_HOME
    (or a home folder) is a link, the two never matched and no blob was checked: damaged weights imported, exit 0.
    Also plant b03 (the blobs folder not resolved: no snapshot file's real path was in it)."""
    _cache_through_a_link(tmp_path, monkeypatch)
    snapshot = _hub_layout("org/a", checkpoint)
    assert os.path.realpath(snapshot) != str(snapshot)
    _lie("weights damaged at their size", snapshot)
    code, out, err = _cli(capsys, "import", "org/a")
    assert code == 2 and "model.safetensors of org/a" in err and "not the file its blob is named for" in err, (out, err)


def test_the_blob_check_is_given_the_imports_progress_and_the_bar_every_blobs_bytes(checkpoint, monkeypatch):
    """Plants b07 (import never passing its progress on: the check of gigabytes of weights showed no bar however
    long it took) and b09 (the bar's total the first blob's size, so it ran past 100%). The bar itself is shown from
    256 MiB (a check of milliseconds shows none)."""
    import importlib

    bar_module = importlib.import_module("huggingface_hub.utils.tqdm")  # (the lazy huggingface_hub.utils reads it)
    snapshot = _hub_layout("org/a", checkpoint)
    given: list[bool] = []
    bars: list[dict] = []
    check_blobs, tqdm = hub.check_blobs, bar_module.tqdm

    def recorded_check(*args, **kwargs):
        given.append(args[3] if len(args) > 3 else kwargs.get("progress", False))
        return check_blobs(*args, **kwargs)

    class Bar(tqdm):
        def __init__(self, *args, **kwargs):
            bars.append(kwargs)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(hub, "check_blobs", recorded_check)
    monkeypatch.setattr(bar_module, "tqdm", Bar)
    store.import_model("org/a", progress=True)
    store.import_model("org/a", progress=False)
    assert given == [True, False]
    checking = [bar for bar in bars if str(bar.get("desc", "")).startswith("checking")]
    blobs = {os.path.realpath(snapshot / f) for f in store.checkpoint_files(snapshot)}
    assert [bar["total"] for bar in checking] == [sum(os.path.getsize(b) for b in blobs)] * 2
    assert all(bar["disable"] for bar in checking)  # a few KiB: no bar


def test_another_repositorys_file_is_refused_where_the_hugging_face_cache_is_reached_through_a_link(
    tmp_path, monkeypatch, checkpoints, capsys
):
    """The same defect in _own_snapshot (strict round 44): through a linked HF_HOME, a snapshot holding another
    repository's weights was imported as org/a's at its commit, exit 0."""
    _cache_through_a_link(tmp_path, monkeypatch)
    _lying_snapshot("another repository's weights", checkpoints)
    code, out, err = _cli(capsys, "import", "org/a")
    assert code == 2 and "holds model.safetensors" in err and "models--org--b" in err, (out, err)


# -- store.py: a model moved aside, put back --------------------------------------------------------------------------


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_model_moved_aside_with_an_unreadable_manifest_is_swept_and_list_works():
    """Plant s01: the put-back's JSON error not caught. A model moved aside by an import that died, whose manifest
    is not JSON (cut short on a full disk, damaged), made every sweep raise: `list`, `import` and `remove` ended in a
    traceback. It is deleted as any scratch folder, and the commands work."""
    store.models_dir().mkdir(parents=True)
    aside = store.models_dir() / f"{store._SCRATCH}{store._host()}-{_dead_pid()}-{store._ASIDE}{uuid.uuid4().hex[:12]}"
    aside.mkdir()
    (aside / store.MANIFEST).write_text('{"name": "org/', encoding="utf-8")
    assert store.list_models() == []
    assert not aside.exists()


@contextlib.contextmanager
def _lock_held(exclusive: bool) -> Iterator[None]:
    """The store's lock held by another thread (as by another command) until the block ends."""
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with store._locked(exclusive=exclusive):
            held.set()
            done.wait(60)

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(30)
    try:
        yield
    finally:
        done.set()
        thread.join()


def _in_thread(call) -> threading.Thread:
    thread = threading.Thread(target=call)
    thread.start()
    return thread


def _scratch_entries() -> list[str]:
    return sorted(p.name for p in store.models_dir().iterdir() if p.name.startswith(store._SCRATCH))


def test_remove_waits_for_a_command_reading_the_store(tmp_path):
    """Plant s02 (caught before by strict round 46's tests too): `remove` taking the model out under a shared hold.
    A run (or list) reading the model's manifest and files, under its shared hold, had the folder renamed away under
    it; remove waits for it."""
    store.import_model(str(make_checkpoint(tmp_path / "m")), progress=False)
    folder = store.models_dir() / "m"
    with _lock_held(exclusive=False):
        removal = _in_thread(lambda: store.remove("m"))
        time.sleep(1.5)
        assert folder.is_dir(), "removed while another command held the store's lock"
    removal.join()
    assert not folder.exists()


def test_an_imports_scratch_folder_is_made_only_while_no_command_holds_the_lock(tmp_path):
    """Plant s04: the scratch folder made and claimed under a shared hold. Another command's sweep (which runs under
    its own shared hold) could then see the folder before its claim, and in another pid namespace delete it (round
    46): the folder is made only under the exclusive hold, so no scratch folder appears while another holds the lock."""
    checkpoint_folder = make_checkpoint(tmp_path / "m")
    store.models_dir().mkdir(parents=True)
    with _lock_held(exclusive=False):
        importing = _in_thread(lambda: store.import_model(str(checkpoint_folder), progress=False))
        time.sleep(1.5)
        assert _scratch_entries() == [], "a scratch folder made while another command held the store's lock"
    importing.join()
    assert [m.name for m in store.list_models()] == ["m"]


def test_an_imports_sweep_waits_for_the_command_that_holds_the_store(tmp_path):
    """Plant s06: the import's sweep run without the lock. A dead import's folder (or a model it moved aside, put
    back) was deleted or renamed while another command held the store exclusively (mid-install, mid-removal)."""
    checkpoint_folder = make_checkpoint(tmp_path / "m")
    store.models_dir().mkdir(parents=True)
    dead = store.models_dir() / f"{store._SCRATCH}{store._host()}-{_dead_pid()}-{uuid.uuid4().hex[:12]}"
    dead.mkdir()
    with _lock_held(exclusive=True):
        importing = _in_thread(lambda: store.import_model(str(checkpoint_folder), progress=False))
        time.sleep(1.5)
        assert dead.is_dir(), "swept while another command held the store's lock"
    importing.join()
    assert not dead.exists() and [m.name for m in store.list_models()] == ["m"]


def test_an_install_cut_short_puts_back_the_model_there_last(tmp_path, monkeypatch):
    """Plant s03: the first model moved aside put back rather than the last. An import whose rename into place
    failed after another import had installed its model there (moved aside in turn) put back the model that was
    there before both, undoing the other import that had completed: the last model stays, as _install says."""
    a, b = make_checkpoint(tmp_path / "a" / "m"), make_checkpoint(tmp_path / "b" / "m")  # stored as m, two sources
    store.import_model(str(b), progress=False)
    theirs = tmp_path / "theirs"
    shutil.copytree(store.models_dir() / "m", theirs, symlinks=True)  # the other import's model, to install later
    store.import_model(str(a), progress=False)
    dest, rename, tries = store.models_dir() / "m", os.rename, []

    def renamed(src, dst):
        if Path(dst) == dest and Path(src).name.startswith(store._SCRATCH) and store._ASIDE not in Path(src).name:
            tries.append(src)
            if len(tries) == 1:  # the other import installs its model first
                shutil.copytree(theirs, dest, symlinks=True)
            else:  # then this rename fails outright
                raise OSError(errno.EIO, os.strerror(errno.EIO), str(src))
        return rename(src, dst)

    monkeypatch.setattr(os, "rename", renamed)
    with pytest.raises(store.StoreError):
        store.import_model(str(a), progress=False)
    monkeypatch.setattr(os, "rename", rename)
    assert len(tries) == 2 and store.resolve("m").source == str(b)
    assert _scratch_entries() == []


# -- strict round 48: whole or not at all -----------------------------------------------------------------------------


def test_a_whole_write_leaves_a_file_beside_it_of_a_like_name_alone(tmp_path):
    """Plant w05: the scratch file named by the file's suffix changed to .tmp. `--json report.json` then wrote, and
    removed, the user's own report.tmp beside it (and two runs writing one file at once shared one scratch file)."""
    mine = tmp_path / "report.tmp"
    mine.write_text("the user's own\n", encoding="utf-8")
    track.replace_text(tmp_path / "report.json", "{}\n")
    assert mine.read_text(encoding="utf-8") == "the user's own\n"
    assert (tmp_path / "report.json").read_text(encoding="utf-8") == "{}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "report.tmp"]


def test_certify_writes_the_tracked_list_track_would_write(tmp_path):
    """Plant w02: the tracked list certify writes left unsorted. The kernel's index and record, listed last rather
    than in their place, gave a TRACKED.yaml that `conformance track` rewrote at once, a change in every commit
    after a certify."""
    import shutil

    from conftest import REPO

    from conformance.certify import write_table
    from neurobrix import tables

    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables", root)
    record = tables.load(root).proofs("interpreter", "rms_norm")
    write_table(root, "interpreter", "rms_norm", list(record.entries), {**dict(record.provenance), "date": "2026"})
    assert track.write(root)[1] is False  # unchanged


# -- errors.ran_out ---------------------------------------------------------------------------------------------------


def test_ran_out_names_the_systems_open_files_and_a_read_only_filesystem():
    """Plants r01, r02: ENFILE (the system's table of open files full) and EROFS left unnamed."""
    import errno

    assert "no more files" in ran_out(OSError(errno.ENFILE, "x"))
    assert "read-only" in ran_out(OSError(errno.EROFS, "x"))


# -- the engine's Triton cache: the switch back to a cache the user names --------------------------------------------


@pytest.fixture
def no_cache_named(tmp_path, monkeypatch):
    for name in stack.CACHE_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(stack, "_ENGINE_CACHE_SET", [None])


def test_a_cache_folder_the_user_names_after_the_engines_was_set_stays_set(tmp_path, monkeypatch, no_cache_named):
    """Plant e01: the engine's TRITON_CACHE_DIR taken back without checking it is still the engine's. A program that
    ran a GPU class (the engine's cache set) and then named its own TRITON_CACHE_DIR lost it at the next check: the
    variable was deleted, and Triton compiled into ~/.triton/cache."""
    stack.use_engine_cache()
    assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "home" / stack.ENGINE_CACHE)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "mine"))
    stack.use_engine_cache()
    assert os.environ.get("TRITON_CACHE_DIR") == str(tmp_path / "mine")


def test_the_folder_checked_is_triton_homes_once_it_is_named_after_the_engines_cache(
    tmp_path, monkeypatch, no_cache_named
):
    """Plant e02: the check read TRITON_CACHE_DIR as set, not as the user named it. TRITON_HOME named after the
    engine's cache was set: the check judged the engine's folder (the variable still set, until use_engine_cache
    takes it back) rather than TRITON_HOME's .triton/cache, which the check's own words name."""
    stack.use_engine_cache()
    (tmp_path / "th").mkdir()
    (tmp_path / "th" / ".triton").write_text("a file, not a folder\n", encoding="utf-8")
    monkeypatch.setenv("TRITON_HOME", str(tmp_path / "th"))
    problem = stack._cache_folder_problem()
    assert problem is not None and problem.startswith(f"TRITON_HOME={tmp_path / 'th'}"), problem


def test_the_users_triton_cache_dir_naming_the_engines_folder_is_theirs_after_a_switch(
    tmp_path, monkeypatch, no_cache_named
):
    """Plant e04: the engine's mark not cleared when it gave the variable back. After TRITON_HOME was named (the
    engine's TRITON_CACHE_DIR deleted), a TRITON_CACHE_DIR the user set to the same folder was still taken for the
    engine's: deleted at the next check."""
    engine = str(tmp_path / "home" / stack.ENGINE_CACHE)
    stack.use_engine_cache()
    monkeypatch.setenv("TRITON_HOME", str(tmp_path / "th"))
    stack.use_engine_cache()
    assert "TRITON_CACHE_DIR" not in os.environ
    monkeypatch.setenv("TRITON_CACHE_DIR", engine)
    stack.use_engine_cache()
    assert os.environ.get("TRITON_CACHE_DIR") == engine
    assert stack._named("TRITON_CACHE_DIR") == engine
