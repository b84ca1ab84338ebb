"""The one error hierarchy of NeuroBrix: each error carries the user's message and an exit code.

The CLI prints ``str(error)`` (no traceback unless ``--debug``) and exits with ``error.exit_code``.
Exit codes: 1 generic, 2 usage, 3 tables damaged or invalid, 4 no certified setting, 5 no usable device,
6 certified for another compiler stack (torch/Triton) or other kernel code (neurobrix.kernel_source), 7 stored
model damaged (``neurobrix.store.DamagedModelError``). The CLI adds 128+N for a run ended by signal N (130 Ctrl-C).
"""

from __future__ import annotations

import errno
import re
import sys
from collections.abc import Callable


class NeuroBrixError(Exception):
    """Base class: ``str(err)`` is a complete message for a person, ``exit_code`` the process status.

    Given several lines (a list of the calls with no certified setting, then the command that certifies them), the
    message is laid out in them: ``str(err)`` joins them with line feeds and ``lines`` keeps them, so that the CLI
    prints each on its own line while it escapes, in each, every character a terminal obeys (a line feed a quoted
    value holds included)."""

    exit_code = 1

    def __init__(self, *lines: object) -> None:
        several = len(lines) > 1
        super().__init__(*(("\n".join(map(str, lines)),) if several else lines))
        self.lines: tuple[str, ...] = tuple(map(str, lines)) if several else ()


class UsageError(NeuroBrixError):
    """The user asked for something that does not exist or cannot be done as asked."""

    exit_code = 2


class TablesError(NeuroBrixError):
    """The certified tables cannot be trusted: missing, untracked, altered, unreadable or invalid."""

    exit_code = 3


class MissingEntryError(NeuroBrixError):
    """No certified setting covers the exact call; the engine never guesses one."""

    exit_code = 4


class DeviceError(NeuroBrixError):
    """This machine has no device the engine may run its Triton kernels on."""

    exit_code = 5


class CompilerStackError(NeuroBrixError):
    """The GPU class's settings were proven with another torch/Triton than this machine runs, and no local
    re-proof covers this one (see :mod:`neurobrix.stack`); or on other kernel code than this neurobrix's, or a kernel
    source cannot be read (:mod:`neurobrix.kernel_source`)."""

    exit_code = 6


class NoGPUError(DeviceError):
    """No GPU and no Triton interpreter."""


class UncertifiedGPUError(DeviceError):
    """A GPU whose class has no certified tables."""


class InvalidInputError(UsageError, ValueError):
    """An op was called with an argument it cannot take (dtype, shape, strides, device, head layout)."""


def float_sized(value: object) -> bool:
    """A number (an int or a float, not a bool) that a float holds: an integer past a float's range (10**400) fails
    every comparison with a float and every float or tensor made of it, in an OverflowError."""
    return type(value) is float or (type(value) is int and abs(value) <= sys.float_info.max)


_KINDS: dict[str, Callable[[object], bool]] = {
    "an integer": lambda v: type(v) is int,  # not a bool: True is no token count
    "a number": float_sized,
    "a string": lambda v: isinstance(v, str),
    "true or false": lambda v: type(v) is bool,
}


def expect(where: str, value: object, kind: str, optional: bool = False) -> None:
    """Refuse (UsageError naming ``where``) a value of the Python API that is not of ``kind`` (a key of _KINDS), or
    None unless ``optional``: a type the engine would carry on with (a bytes prompt rendered as "b'...'", a string
    compared with a number) or fail on far from the call, in a traceback."""
    if (value is None and optional) or (value is not None and _KINDS[kind](value)):
        return
    none = " or None" if optional else ""
    raise UsageError(f"{where} must be {kind}{none}, got {value!r} ({type(value).__name__})")


def expect_hooks(call: str, **hooks: object) -> None:
    """Refuse (UsageError naming it) a hook of the Python API that is neither a function nor None: it was called only
    once the model ran (a TypeError traceback after the weights were loaded), and an empty one ("" or 0) was taken as
    none, the default output used in silence."""
    for name, hook in hooks.items():
        if hook is not None and not callable(hook):
            raise UsageError(f"{call}'s {name} must be a function or None, got {hook!r}")


# what a terminal does not print but obeys: C0 control characters but tab (line feed among them: an error is one line),
# DEL and C1 (ESC starts a sequence that moves the cursor, clears the screen or, OSC 52, writes the clipboard; CR
# rewrites the line), and the format characters that reorder or break the text shown (bidirectional overrides and
# isolates, the line and paragraph separators); and the lone surrogates that stand for a name's bytes that are no UTF-8,
# which a UTF-8 output cannot write (a UnicodeEncodeError)
_UNPRINTABLE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def printable(text: str) -> str:
    """``text`` with each character a terminal would obey rather than print written as its escape (``\\x1b``, ``\\n``,
    ``\\u202e``): a message quoting what a checkpoint, a folder name or a stored manifest holds (a config's
    architecture, a path) prints what it says, and nothing it makes the terminal do."""
    return _UNPRINTABLE.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), text)


def counted(n: int, noun: str, plural: str = "") -> str:
    """``n`` with ``noun``, singular for 1: "1 entry", "2 entries" (``plural``, where it is not ``noun`` + "s"). A
    message writing "1 entries" or "1 tokens" was what a count of one printed."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


# a resource the machine ran out of, by the errno it refuses a write or an open with: named so, since the bare
# strerror of a file-size limit ("File too large") named neither the limit nor the file, and the store's advice to
# "check the free space" sent a user hit by `ulimit -f` or `ulimit -n` to a disk with room to spare
_RAN_OUT = {
    errno.ENOSPC: "the disk is full: free some space there",
    errno.EDQUOT: "this user's disk quota is used up: free some space or raise the quota",
    errno.EFBIG: "a file passed this process's file-size limit (`ulimit -f`): raise it",
    errno.EMFILE: "this process may open no more files (`ulimit -n`): raise the limit",
    errno.ENFILE: "the system may open no more files: close some programs",
    errno.EROFS: "the filesystem is read-only",
}


def ran_out(exc: BaseException) -> str | None:
    """What the machine ran out of, in words with what to do (None: ``exc`` is not such a refusal)."""
    return _RAN_OUT.get(exc.errno) if isinstance(exc, OSError) and exc.errno is not None else None
