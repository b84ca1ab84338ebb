"""Round 46's driver: one `neurobrix` command, run as its own process, that pauses at a named step of its work so a
test can start another command against the same store, or SIGKILL this one, at exactly that step (no sleeps).

    python tests/round46_driver.py <sync folder> <step> <neurobrix arguments...>

At the step it creates ``<sync>/paused`` and waits until ``<sync>/go`` exists. Steps (each taken once): ``placed``
(the import put its first file into its scratch folder), ``install`` (the new folder whole, before anything is moved
into place or aside), ``rename`` (just before the new folder is renamed into place), ``aside`` (just after the model
already stored was moved aside to be replaced), ``installed`` (just after the new folder was renamed into place),
``manifest`` (a command checking a stored model read its manifest, before checking the files against it); ``-``
pauses nowhere. Whichever the step, a wait on the store's lock (``fcntl.flock`` that would block) first creates
``<sync>/blocked``, so a test can tell a command that waits its turn from one that ran on.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path

from neurobrix import cli, store

SYNC, STEP = Path(sys.argv[1]), sys.argv[2]
_taken: list[str] = []


def pause(step: str) -> None:
    if step != STEP or _taken:
        return
    _taken.append(step)
    (SYNC / "paused").touch()
    while not (SYNC / "go").exists():  # a file the test creates: a synchronisation point, not a guess of timing
        time.sleep(0.005)


_rename = os.rename


def rename(src, dst) -> None:
    into_place = Path(src).name.startswith(".tmp-") and not Path(dst).name.startswith(".tmp-")
    if into_place:
        pause("rename")
    _rename(src, dst)
    if into_place:
        pause("installed")
    elif Path(dst).name.startswith(".tmp-") and store.MANIFEST in os.listdir(dst):
        pause("aside")


_place, _install, _manifest_problem, _flock = store._place, store._install, store._manifest_problem, fcntl.flock


def place(*args, **kwargs) -> None:
    _place(*args, **kwargs)
    pause("placed")


def install(*args, **kwargs) -> None:
    pause("install")
    _install(*args, **kwargs)


def manifest_problem(*args, **kwargs) -> None:
    _manifest_problem(*args, **kwargs)
    pause("manifest")


def flock(fd, operation) -> None:
    if operation & fcntl.LOCK_NB or operation == fcntl.LOCK_UN:
        return _flock(fd, operation)
    try:
        return _flock(fd, operation | fcntl.LOCK_NB)
    except BlockingIOError:
        (SYNC / "blocked").touch()
        return _flock(fd, operation)


os.rename, fcntl.flock = rename, flock
store._place, store._install, store._manifest_problem = place, install, manifest_problem
sys.exit(cli.main(sys.argv[3:]))
