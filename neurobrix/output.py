"""Where a command's output goes: its standard streams and the report files it is asked to write.

Standard output carries a command's result, standard error its diagnostics (progress, timings, notices, the error
line). Three rules follow (strict round 51):
- a reader that went away (`| head -1`) ends the command quietly as SIGPIPE ends coreutils and git: exit
  128 + SIGPIPE (141), no traceback, never 0 for work it stopped;
- diagnostics that cannot be written (standard error closed, a full disk, a closed pipe) are dropped: they never
  stop the work nor change its exit status, which is then all that is left to tell;
- a result that cannot be written (standard output closed, a full disk) is an error: one line naming standard output
  and a non-zero exit.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import signal
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# A command that lost its reader: what the shell reports for a process SIGPIPE ended (coreutils, git)
BROKEN_PIPE_EXIT = 128 + int(signal.SIGPIPE) if hasattr(signal, "SIGPIPE") else 1


class _Diagnostics:
    """Standard error as a command uses it: writes it cannot make are dropped. The stream's other attributes
    (isatty, encoding, fileno) are the stream's own; none at all (a closed descriptor) is a stream nothing reaches."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            if self._stream is not None:
                self._stream.write(text)
        except (OSError, ValueError):
            pass
        return len(text)

    def flush(self) -> None:
        try:
            if self._stream is not None:
                self._stream.flush()
        except (OSError, ValueError):
            pass

    def isatty(self) -> bool:
        try:
            return self._stream is not None and bool(self._stream.isatty())
        except (OSError, ValueError):
            return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


STANDARD_OUTPUT = "standard output"  # the file name an OSError of a write there carries


class _Result:
    """Standard output as a command uses it: a write it cannot make (a full disk, /dev/full) names standard output,
    as the error line then does. It named nothing: an import that had stored its model and could not print so ended
    "No space left on device; the disk is full", read as the store's disk. A lost reader is left as it is."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            raise
        except OSError as exc:
            exc.filename = exc.filename or STANDARD_OUTPUT
            raise

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            exc.filename = exc.filename or STANDARD_OUTPUT
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _ClosedOutput:
    """Standard output when its descriptor was closed (`>&-`): Python then sets ``sys.stdout`` to None, and every
    print went nowhere while the command ended "done" (exit 0), or raised AttributeError at the end."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed; the command's output could not be written")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def take_streams() -> Callable[[], None]:
    """The standard streams as one command uses them (the module's rules); returns what puts them back."""
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout = _ClosedOutput() if sys.stdout is None else _Result(sys.stdout)
    sys.stderr = _Diagnostics(sys.stderr)

    def restore() -> None:
        sys.stdout, sys.stderr = stdout, stderr
        for stream in (stderr, stdout):
            _settle(stream)

    return restore


def _settle(stream: Any) -> None:
    """Flush what a standard stream still holds; where it cannot take it (a full disk, a closed pipe), what is left
    goes to the null device. Buffered (no PYTHONUNBUFFERED: a pipe or a file), a line a stream could not take stayed
    in its buffer, the interpreter's own flush at exit failed on it, and that turned the command's exit status into
    120 ("Exception ignored ... BrokenPipeError"): an import that had stored its model ended 120, an error's 2 became
    120, a lost reader's 141 too."""
    if stream is None:
        return
    try:
        stream.flush()
    except (OSError, ValueError):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, stream.fileno())
            finally:
                os.close(null)
            stream.flush()


def lost_reader() -> int:
    """After a BrokenPipeError on standard output: nothing more goes to the pipe (the interpreter's last flush at exit
    included); returns the exit status."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return BROKEN_PIPE_EXIT


def write_whole(path: Path, text: str) -> None:
    """Write a report or list to ``path`` whole or not at all: into a scratch file beside it, renamed over it once
    written (a full disk mid-write left half a JSON report, or truncated the one written before). A path that leads
    through links is written where they lead (the links stay). A path that is no regular file (`/dev/stdout`, a
    FIFO, /dev/null) is written into as `>` writes: renaming over it replaced the device or pipe with a file (as
    root, /dev/null itself); a pipe's reader of a report cut short gets a JSON document that does not parse."""
    try:
        mode = os.stat(path).st_mode  # through its links: /dev/stdout's lead to a pipe no path names
    except FileNotFoundError:
        mode = stat.S_IFREG
    if not stat.S_ISREG(mode):
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(text)
        return
    target = Path(os.path.realpath(path))
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


class _TenthLines:
    """Progress in bytes on a standard error that is no terminal (a CI log, a file, a pipe): a line at every tenth of
    the way. A bar redrawn there wrote a carriage-return-separated copy of itself ten times a second, thousands
    for a model of some GB, into a log a person reads."""

    def __init__(self, what: str, total: int) -> None:
        self.what, self.total, self.done, self.shown = what, total, 0, -1
        self.update(0)

    def update(self, n: int) -> None:
        self.done += n
        tenth = self.done * 10 // max(self.total, 1)
        if tenth != self.shown:
            self.shown = tenth
            percent = 100 * self.done // max(self.total, 1)
            print(f"{self.what}: {self.done}/{self.total} bytes ({percent}%)", file=sys.stderr, flush=True)

    def __enter__(self) -> _TenthLines:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def byte_progress(what: str, total: int, shown: bool) -> Any:
    """A progress bar of ``total`` bytes on standard error (``update(n)``, a context manager): huggingface_hub's
    tqdm bar on a terminal, a line at every tenth of the way elsewhere, nothing unless ``shown``."""
    if shown and not sys.stderr.isatty():
        return _TenthLines(what, total)
    bar: Any = importlib.import_module("huggingface_hub.utils").tqdm  # imported only where a bar is drawn
    return bar(total=total, unit="B", unit_scale=True, desc=what, disable=not shown)
