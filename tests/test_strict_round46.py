"""The forty-sixth round: concurrent and interrupted commands on one store.

Rounds 32 and 40 ran two imports of one model in one process, and a removal under a run's reads. This round ran real
`neurobrix` processes on one NEUROBRIX_HOME at once (import, remove, run, list), each held at a named step of its work
by tests/round46_driver.py (a monkeypatched hook that waits on a file the test creates: no sleeps) or killed there
with SIGKILL: two imports of one model (a local folder, or hub revisions), an import racing a removal, a run or a
removal between a re-import's renames or during a run's check, an import killed at each step, and re-proofs and the
engine's Triton cache written by two processes.

Found and fixed (seven, in three classes):

- commands at once did not take turns. Between a re-import's two renames (the stored model moved aside, the new one
  not yet in place) `list` showed no model and `run` and `remove` said "no model 'tiny' in the store" (exit 3); a run
  that read the manifest before a re-import or a removal called the model "damaged: config.json was changed after the
  import" (or "is missing"), advising to import it again (exit 7); a removal of an organisation's last model deleted
  the org folder an import was renaming into (the import: "could not write org/b ... No such file or directory ...
  check the free space and permissions there", exit 1); and an import whose model was removed or replaced at once
  said the model it had stored whole was "damaged: its neurobrix-model.json is unreadable" (exit 7). The store now has
  a lock (`$NEUROBRIX_HOME/.models.lock`, `fcntl.flock`, which the kernel drops when a process dies): shared while a
  command reads manifests and checks files against them, exclusive for the moment an import renames its folder into
  place or a removal takes one out; an import reports the model it read back before putting it in place.
- a re-import killed (SIGKILL) between its two renames left both models in scratch folders, and the next `list`
  swept both: the stored model was gone. The model moved aside is named so now, and the sweep puts it back where
  nothing took its place (one moved aside for good is renamed a plain scratch folder before it is deleted).
- a pid names a process only in its own namespace. Two containers sharing a store under the host's name (docker
  --network host) each took the other's live import for a dead one: `list` deleted its scratch folder mid-copy (the
  import: "could not write tiny ... No such file or directory", exit 1); an import now holds a flock on its scratch
  folder, which the sweep leaves alone. Two `conformance check` runs of one pid (each its container's process 1) wrote
  one re-proof scratch file (named by the pid alone), and the first then said its passed check's re-proof "could not
  be written" (exit 1): the scratch file's name has a random part now.

Pinned (either way): an import killed with a file placed, with its folder whole but not in place, or just after its
rename leaves the old model or the new one whole, the next `list` leaves no scratch folder, and the next import works;
a hub import killed after hard-linking a file leaves the cache's blobs as they were; two hub imports of other revisions
at once leave one revision whole under its commit; Triton 3.9's cache manager, through which every compile and load
under `$NEUROBRIX_HOME/triton-cache` goes, writes each file in its writer's scratch folder and renames it into place
(two writers leave one whole file, one killed before its rename none, a kernel's group is written last).

Left open: a run holds the lock only while it checks the manifest, so a re-import or removal during its loading is
refused by name (exit 7, "changed/removed while this command read it", round 21's stamps) rather than waited for (a run
may last hours); where the lock file cannot be opened or locked (a store this user may only read, a filesystem without
flock, Windows) commands run unlocked as before; a program other than NeuroBrix changing the store ignores the lock; a
killed check's re-proof scratch file stays (round 32); a folder put back by the sweep goes to the name its manifest
gives (a folder holding another model's manifest, round 43's damage, goes to that model's name if it is free); and
Triton 3.6's cache manager (the nvidia-h200 class) was not read here.

Each test that says "before" failed before the fix (run in a worktree of the round's base commit); the controls and
pins pass either way."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from store_fixtures import config_dict, make_checkpoint, populate_hub_cache

from neurobrix import cli, store

DRIVER = Path(__file__).with_name("round46_driver.py")
ROOT = DRIVER.parent.parent
WAIT = 120  # seconds before a wait is a failure (a loaded 2-core machine starts a Python process in about a second)


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(ROOT / "tests")]))


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> tuple[Path, Path]:
    """Two checkpoints stored under one name, ``tiny``: the old (rope_theta 10000) and the new (20000, config.json of
    the same size, other bytes)."""
    root = tmp_path_factory.mktemp("strict46")
    old = make_checkpoint(root / "old" / "tiny", use_transformers=False)
    new = make_checkpoint(root / "new" / "tiny", use_transformers=False, config=config_dict(rope_theta=20000.0))
    return old, new


class Command:
    """One `neurobrix` command in its own process, pausing at ``step`` (see round46_driver.py)."""

    def __init__(self, sync: Path, step: str, *argv: str) -> None:
        self.sync = sync
        sync.mkdir(parents=True)
        self.proc = subprocess.Popen(
            [sys.executable, str(DRIVER), str(sync), step, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def _until(self, done) -> None:
        deadline = time.monotonic() + WAIT
        while not done():
            assert time.monotonic() < deadline, f"{self.proc.args} did not get there"
            time.sleep(0.005)

    def paused(self) -> Command:
        """Wait until the command is at its step (it must not end first)."""
        self._until(lambda: (self.sync / "paused").exists() or self.proc.poll() is not None)
        assert (self.sync / "paused").exists(), self.finish()
        return self

    def ended_or_blocked(self) -> bool:
        """Wait until the command ended or waits on the store's lock; True where it ended."""
        self._until(lambda: self.proc.poll() is not None or (self.sync / "blocked").exists())
        return self.proc.poll() is not None

    def go(self) -> Command:
        (self.sync / "go").touch()
        return self

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.communicate(timeout=WAIT)

    def finish(self) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=WAIT)
        return self.proc.returncode, out, err


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


def _digests(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.iterdir()
        if p.is_file() and p.name != store.MANIFEST
    }


def _store_holds(name: str, source: Path) -> bool:
    """Whether the stored model ``name`` is ``source``'s files, every one of them, and no other."""
    return _digests(store.models_dir().joinpath(*name.split("/"))) == _digests(source)


def _scratch() -> list[str]:
    return sorted(p.name for p in store.models_dir().glob(".tmp-*"))


def _listed(capsys) -> dict[str, dict]:
    code, out, err = _cli(capsys, "list", "--json")
    assert code == 0, err
    return {m["name"]: m for m in json.loads(out)["models"]}


# --- an import killed (SIGKILL) at each step of its work ------------------------------------------------------------


@pytest.mark.parametrize("step", ["placed", "install", "aside", "installed"])
def test_an_import_killed_at_any_step_leaves_the_old_model_or_the_new_one_whole(tmp_path, capsys, sources, step):
    # a re-import of tiny killed (SIGKILL, no clean-up of its own) with its first file placed, with the new folder whole
    # but not yet in place, with the stored model moved aside for it, and with the new folder just renamed into place.
    # Before: killed between moving the old model aside and renaming the new one in, it left both in scratch folders,
    # which the next `list` swept: the model was gone (`list` showed nothing, `run` "no model 'tiny'"), although a
    # re-import replaces the old copy only once the new one is whole
    old, new = sources
    store.import_model(str(old), progress=False)
    Command(tmp_path / "sync", step, "import", str(new)).paused().kill()
    listed = _listed(capsys)  # sweeps what the killed import left, as the next import and `remove` do
    assert list(listed) == ["tiny"] and listed["tiny"]["damaged"] is None, listed
    assert _store_holds("tiny", new if step == "installed" else old)  # the one or the other, never a mix
    assert _scratch() == []  # nothing left behind in the store
    assert store.resolve("tiny").source == str(new if step == "installed" else old)
    assert store.import_model(str(new), progress=False) and _store_holds("tiny", new)  # the next import: as ever


def test_a_run_during_a_killed_reimport_finds_the_old_model(tmp_path, capsys, sources):
    # the same kill (the old model aside, the new not in place), then `run` before any `list`: before, "no model 'tiny'
    # in the store" (exit 3) for a model the user never removed
    old, new = sources
    store.import_model(str(old), progress=False)
    Command(tmp_path / "sync", "aside", "import", str(new)).paused().kill()
    assert store.resolve("tiny").source == str(old) and _store_holds("tiny", old) and _scratch() == []


# --- commands at once on one store ----------------------------------------------------------------------------------


@pytest.mark.parametrize("other", ["list", "remove", "run"])
def test_a_command_during_a_reimports_swap_waits_for_it_rather_than_find_no_model(tmp_path, sources, other):
    # an import replacing tiny, between moving the stored model aside and renaming the new one in (microseconds, held
    # open here): before, `list` said "no models imported yet", `remove tiny` and `run --model tiny` "no model 'tiny'
    # in the store" (exit 3). Each now waits for the store's lock, then sees the new model
    old, new = sources
    store.import_model(str(old), progress=False)
    importing = Command(tmp_path / "import", "aside", "import", str(new)).paused()
    argv = {
        "list": ["list", "--json"],
        "remove": ["remove", "tiny"],
        "run": ["run", "--model", "tiny", "--backend", "torch", "--prompt", "hello", "--max-tokens", "2", "--no-chat"],
    }[other]
    command = Command(tmp_path / "other", "-", *argv)
    ended = command.ended_or_blocked()
    importing.go()
    imported = importing.finish()
    code, out, err = command.finish()
    assert imported[0] == 0, imported
    assert not ended, f"{other} ran on while the model was aside: {out}{err}"
    assert code == 0, err
    if other == "list":
        assert [m["source"] for m in json.loads(out)["models"]] == [str(new)]
    elif other == "remove":
        assert out.startswith("removed tiny") and not store.models_dir().joinpath("tiny").exists()
    assert _scratch() == []


def test_an_import_racing_the_removal_of_its_organisations_last_model_stores_it(tmp_path, sources):
    # `neurobrix import org/b` while `neurobrix remove org/a` removes org's last model: remove deleted the empty org
    # folder between the import's making it and its rename into it, which failed: before, "could not write org/b into
    # the store: [Errno 2] No such file or directory ... nothing was stored (check the free space and permissions
    # there)", exit 1
    old, new = sources
    hub = tmp_path / "hf" / "hub"
    populate_hub_cache(hub, "org/a", old)
    populate_hub_cache(hub, "org/b", new, commit="b" * 40)
    store.import_model("org/a", progress=False)
    importing = Command(tmp_path / "import", "rename", "import", "org/b").paused()
    removing = Command(tmp_path / "remove", "-", "remove", "org/a")
    removing.ended_or_blocked()
    importing.go()
    code, out, err = importing.finish()
    assert code == 0 and "Traceback" not in err, err
    removed = removing.finish()
    assert removed[0] == 0 and removed[1].startswith("removed org/a"), removed
    assert _store_holds("org/b", new) and not (store.models_dir() / "org" / "a").exists()


@pytest.mark.parametrize("other", ["import", "remove"])
def test_a_reimport_or_removal_between_a_runs_manifest_and_its_check_is_not_called_damage(tmp_path, sources, other):
    # a run read tiny's manifest (the old import's), then a re-import put the new model in place (or `remove` took
    # it), then the run checked the files against that manifest: before, "stored model tiny ... is damaged: config.json
    # was changed after the import" (or "config.json is missing") "... Import it again or remove it" (exit 7) about a
    # model that is whole, or removed. Now the other command waits for the run's check; the run then runs one
    # import's files or says the model changed (or was removed) while it read it
    old, new = sources
    store.import_model(str(old), progress=False)
    argv = ["run", "--model", "tiny", "--backend", "torch", "--prompt", "hello", "--max-tokens", "2", "--no-chat"]
    running = Command(tmp_path / "run", "manifest", *argv).paused()
    changing = Command(tmp_path / "other", "-", *(["import", str(new)] if other == "import" else ["remove", "tiny"]))
    changing.ended_or_blocked()
    running.go()
    code, out, err = running.finish()
    assert "damaged" not in err and "Traceback" not in err, err
    said = "changed while this command read it" if other == "import" else "was removed while this command read it"
    assert code == 0 or (code == 7 and said in err and len(err.splitlines()) == 1), err
    assert changing.finish()[0] == 0
    assert _store_holds("tiny", new) if other == "import" else not store.models_dir().joinpath("tiny").exists()


def test_an_import_reports_what_it_stored_though_another_command_removes_it_at_once(tmp_path, sources):
    # `neurobrix remove tiny` right after the import renamed tiny into place, before the import read it back to say
    # what it stored: before, the import ended "stored model tiny ... is damaged: its neurobrix-model.json is unreadable
    # ([Errno 2] No such file or directory ...); remove it ... and import it again" (exit 7) after storing it whole
    old, _ = sources
    importing = Command(tmp_path / "import", "installed", "import", str(old)).paused()
    removing = Command(tmp_path / "remove", "-", "remove", "tiny")
    removing.ended_or_blocked()
    importing.go()
    code, out, err = importing.finish()
    assert code == 0 and out.startswith(f"imported tiny: {len(list(old.iterdir()))} files"), (out, err)
    assert removing.finish()[0] == 0 and not store.models_dir().joinpath("tiny").exists()


def test_a_list_in_another_pid_namespace_leaves_a_running_imports_folder_alone(tmp_path, capsys, monkeypatch, sources):
    # two containers on one host sharing NEUROBRIX_HOME, each with its own pids and the host's name (docker --network
    # host, Kubernetes hostNetwork): a `list` in one took the other's import in progress for one whose process had died
    # (its pid is no process there) and deleted its scratch folder: before, that import ended "could not write tiny
    # into the store: [Errno 2] No such file or directory ...; nothing was stored (check the free space and
    # permissions there)" (exit 1). An import now holds a lock on its scratch folder, which the sweep tries first
    old, _ = sources
    importing = Command(tmp_path / "sync", "placed", "import", str(old)).paused()
    with monkeypatch.context() as other_container:
        other_container.setattr(store, "_pid_alive", lambda pid: False)  # the import's pid, seen from there
        assert _listed(capsys) == {}
    importing.go()
    code, out, err = importing.finish()
    assert code == 0, err
    assert _store_holds("tiny", old) and _scratch() == []


# --- pins: what else several commands at once write ------------------------------------------------------------------


def test_two_hub_imports_of_other_revisions_at_once_store_one_revision_whole(tmp_path, capsys, sources):
    # pinned: `neurobrix import org/m --revision A` and `neurobrix import org/m` (main, B) at once, the first held just
    # before its rename into place; the store holds one revision's files under that revision's commit, never a mix
    old, new = sources
    hub = tmp_path / "hf" / "hub"
    populate_hub_cache(hub, "org/m", old, commit="a" * 40)
    populate_hub_cache(hub, "org/m", new, commit="b" * 40)  # refs/main is B
    first = Command(tmp_path / "first", "rename", "import", "org/m", "--revision", "a" * 40).paused()
    second = Command(tmp_path / "second", "-", "import", "org/m")
    second.ended_or_blocked()
    first.go()
    assert first.finish()[0] == 0 and second.finish()[0] == 0
    listed = _listed(capsys)
    assert list(listed) == ["org/m"] and listed["org/m"]["damaged"] is None, listed
    assert _store_holds("org/m", old if listed["org/m"]["commit"] == "a" * 40 else new) and _scratch() == []


def test_a_hub_import_killed_after_linking_files_leaves_the_cache_and_the_next_import_whole(tmp_path, capsys, sources):
    # pinned: killed with its first file hard-linked from the cache's blobs into its scratch folder; the sweep deletes
    # the links, not the blobs, and the next import links them again
    old, _ = sources
    snapshot = populate_hub_cache(tmp_path / "hf" / "hub", "org/m", old)
    Command(tmp_path / "sync", "placed", "import", "org/m").paused().kill()
    assert _listed(capsys) == {} and _scratch() == []
    assert _digests(snapshot) == _digests(old)  # every blob as it was
    assert store.import_model("org/m", progress=False).commit == "a" * 40 and _store_holds("org/m", old)


def test_two_checks_of_one_pid_at_once_each_record_a_whole_reproof(tmp_path, monkeypatch):
    # two `python -m conformance check` on one NEUROBRIX_HOME (a volume two containers share), each its container's
    # process 1: the scratch file of the re-proof was named by the pid alone, so the second check wrote into the
    # first's, and the first's rename then failed: before, "the check passed, but its re-proof could not be written
    # to .../interpreter.json: No such file or directory" (exit 1) for a check that passed, or a file of both records
    from neurobrix import stack, tables

    loaded, running = tables.load(), stack.running_stack()
    monkeypatch.setattr(stack.os, "getpid", lambda: 1)
    real, other = os.replace, []

    def replace(src, dst):
        if not other:  # the other container's check ends between this one's write and its rename
            other.append(None)
            other[0] = stack.write_reproof("interpreter", loaded, running, {"passed": True}, "cpu", "second")
        return real(src, dst)

    monkeypatch.setattr(stack.os, "replace", replace)
    path = stack.write_reproof("interpreter", loaded, running, {"passed": True}, "cpu", "first")
    assert other == [path] and json.loads(path.read_text())["command"] == "first"  # the last one written stays
    assert stack.reproof_problem("interpreter", loaded, running) is None
    assert [p.name for p in path.parent.iterdir()] == ["interpreter.json"]


def test_the_engines_triton_cache_written_by_two_processes_holds_whole_binaries(tmp_path, monkeypatch):
    # pinned (Triton 3.9's FileCacheManager, which every compile and load under $NEUROBRIX_HOME/triton-cache goes
    # through): each file is written into a scratch folder of its writer's and renamed into place, so two writers of
    # one kernel leave one whole file, and one killed before its rename leaves no file under the kernel's name (a
    # group, the list of a kernel's files, is written last and names only files in place)
    from triton.runtime.cache import FileCacheManager

    from neurobrix import stack

    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)  # (put back after the test, as use_engine_cache's state)
    monkeypatch.setattr(stack, "_ENGINE_CACHE_SET", [None])
    stack.use_engine_cache()
    first, second = FileCacheManager("k" * 32), FileCacheManager("k" * 32)
    assert first.cache_dir == str(tmp_path / "home" / "triton-cache" / ("k" * 32))

    def killed(src, dst):
        raise KeyboardInterrupt  # the process dies between writing its file and renaming it

    with monkeypatch.context() as dying, pytest.raises(KeyboardInterrupt):
        dying.setattr(os, "replace", killed)
        first.put(b"first" * 1000, "kernel.cubin")
    assert first.get_file("kernel.cubin") is None and first.get_group("kernel.json") is None
    path = second.put(b"second" * 1000, "kernel.cubin")
    second.put_group("kernel.json", {"kernel.cubin": path})
    assert Path(path).read_bytes() == b"second" * 1000 and first.get_group("kernel.json") == {"kernel.cubin": path}
