"""`python -m gate`: the command line. Exit 0 pass, 1 refused, 2 unusable input (or usage)."""

from __future__ import annotations

import argparse
import io
import json
import signal
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from packaging.version import InvalidVersion, Version

from neurobrix.cli import Parser
from neurobrix.errors import ran_out
from neurobrix.output import STANDARD_OUTPUT, lost_reader, take_streams, write_whole

from .build import build_project
from .checker import DEFAULT_TRACKED, REPO, Options, check
from .checks import GateError
from .completeness import load_reference
from .report import Report, shown, unusable_json
from .repository import TreeState, read_tree_state, tree_state, with_reference


def cmd_check(args: argparse.Namespace) -> int:
    dists = [Path(d) for d in args.dists]
    _guard_report(args, [d if d.is_dir() else d.parent for d in dists])
    options = _options(args)
    _require_a_commit(args, options)
    return _finish(args, check(dists, options), options)


def cmd_build(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="neurobrix-gate-dist-") as tmp:
        outdir = Path(args.outdir) if args.outdir else Path(tmp) / "dist"
        _guard_report(args, [outdir])
        options = _options(args)  # an unusable reference or version stops before the build
        _require_a_commit(args, options)
        built, seconds = build_project(REPO, outdir, isolation=args.isolation)
        how = "python -m build" + ("" if args.isolation else " --no-isolation")
        kept = "" if args.outdir else " (a temporary folder, removed afterwards)"
        print(
            shown(f"gate: built {', '.join(p.name for p in built)} with `{how}` in {seconds:.1f} s into {outdir}{kept}")
        )
        return _finish(args, check([outdir], options), options)


def _options(args: argparse.Namespace) -> Options:
    expect = None
    if args.expect_version is not None:
        try:
            expect = Version(args.expect_version)  # PEP 440 allows a leading v, as in a tag v0.1.0
        except InvalidVersion as exc:
            raise GateError(
                f"--expect-version {args.expect_version!r} is not a version (PEP 440: 1.2.0, v1.2.0, 1.2.0rc1: the "
                "release's tag)"
            ) from exc
    return Options(load_reference(Path(args.tracked)), expect, smoke=not args.no_smoke, source_tree=REPO)


def _state(options: Options, state: TreeState) -> TreeState:
    return with_reference(state, REPO, options.reference.data, options.reference.path)


def _require_a_commit(args: argparse.Namespace, options: Options) -> None:
    """Refuse to judge against a working tree that is not a commit's, unless --allow-dirty: dists are held against
    the working tree's bytes, and a dist holding an uncommitted edit would pass against them; and the tables against
    the reference list, so --tracked naming a list of other bytes than the commit's is no release check either."""
    state = _state(options, tree_state(REPO))
    if not state.clean and not args.allow_dirty:
        raise GateError(
            f"{REPO}: {state.describe()}; a release is judged against the files of a commit (commit or restore "
            "them, or pass --allow-dirty for a local look: the report then says it is no release check)"
        )


def _guard_report(args: argparse.Namespace, upload_folders: list[Path]) -> None:
    """Refuse a --json FILE inside a folder that will be uploaded; from here on, writing it is allowed."""
    if args.json is None:
        return
    report = Path(args.json).resolve()
    for folder in upload_folders:
        if report.is_relative_to(folder.resolve()):
            raise GateError(
                f"--json {args.json}: inside {folder}, the folder to be uploaded; write the report somewhere else"
            )
    # Written now, before anything is judged: a report that cannot be written stops the run here, not after
    # minutes of judging, and a report left from an earlier run never outlives one that did not finish. Not into
    # a pipe or a device (--json /dev/stdout, >(jq ...)): a stream takes one report, the verdict.
    stream = Path(args.json)  # as named: /dev/stdout resolves to a pipe's name, which is no path
    if not (stream.is_char_device() or stream.is_fifo() or stream.is_socket()):
        _write_json(stream, unusable_json(_UNFINISHED, Path(args.tracked), args.expect_version))
    args.json_allowed = True


_UNFINISHED = "the gate has not finished judging (still running, or killed); nothing was passed"


def _finish(args: argparse.Namespace, report: Report, options: Options) -> int:
    if not args.allow_dirty:  # read again: the tree the report names must be the one judged against throughout
        now = _state(options, read_tree_state(REPO))
        if now != report.repository:
            raise GateError(
                f"{REPO}: the working tree changed while the gate judged against it (now {now.describe()}); "
                "nothing was passed"
            )
    print(report.render())
    if args.json is not None:
        try:
            _write_json(Path(args.json), report.as_json())
        except GateError:
            args.json_allowed = False  # the same file would fail again: one line, not two
            raise
    return report.exit_code


def _write_json(path: Path, data: dict[str, Any]) -> None:
    if path.is_dir():  # was "cannot be written: [Errno 21] Is a directory: '...'" (walk-through round 47)
        raise GateError(
            f"--json {path}: cannot be written: a folder, not a file; name the report's file (report.json in it, say)"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_whole(path, json.dumps(data, indent=2) + "\n")  # whole or not at all: a half report is no verdict
    except OSError as exc:
        raise GateError(f"--json {path}: cannot be written: {exc}") from exc


class _Parser(Parser):
    """`neurobrix`'s parser (:class:`neurobrix.cli.Parser`): a command refuses an option it does not know with its own
    usage and the long option it is close to (`-outdir` or `--outdr` for `--outdir`), where argparse handed it back to
    the top parser, which showed `python -m gate [-h] COMMAND ...`; and a release check takes nothing it could read two
    ways (walk-through round 45): a prefix of an option is no option (`--expect 1.0` was `--expect-version 1.0`,
    `--no` `--no-smoke`), an option given twice is refused (`--json a --json b` wrote b alone, `--expect-version`
    twice checked the last), an empty value too (`--json ''`)."""


# what the gate's exit status means, in every --help (`gate check --help` and `gate build --help` listed none)
EXIT_CODES = (
    "Exit codes: 0 passed, 1 refused (findings), 2 unusable input or usage, 130 interrupted (Ctrl-C), 143 terminated "
    "(SIGTERM), 129 hung up (SIGHUP: its terminal closed), 141 the report's reader went away (SIGPIPE). The README's "
    "'For releases' section lists every check code and the --json report's fields."
)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m gate",
        description="The release gate: refuse any wheel or sdist that is not exactly what this repository ships "
        "(the files git tracks, pyproject.toml's declarations, the tracked tables), before it is uploaded.",
        epilog=f"Run it from the repository's root (the gate is not installed). {EXIT_CODES}",
    )
    common = _Parser(add_help=False)
    common.add_argument(
        "--tracked",
        metavar="FILE",
        default=str(DEFAULT_TRACKED),
        help="the reference tracked list (default: this repository's %(default)s; a list of other bytes is no release "
        "check, judged only with --allow-dirty)",
    )
    common.add_argument(
        "--expect-version", metavar="VERSION", help="refuse dists of any other version (e.g. the release tag)"
    )
    common.add_argument("--json", metavar="FILE", help="also write the report as JSON (never inside the upload folder)")
    common.add_argument(
        "--no-smoke",
        action="store_true",
        help="skip the install smoke, for quick local use only (a release never skips it)",
    )
    common.add_argument(
        "--allow-dirty",
        action="store_true",
        help="judge against a working tree whose tracked files are not the commit's, for local use only (the report "
        "records the commit and every file that differs; a release never passes it)",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    c = commands.add_parser(
        "check",
        parents=[common],
        help="check wheels, sdists, or a folder of them",
        description="Check wheels, sdists, or an upload folder holding them.",
        epilog=EXIT_CODES,
    )
    c.add_argument("dists", metavar="DIST", nargs="+", help="a .whl, a .tar.gz, or a folder of them")
    c.set_defaults(func=cmd_check)
    b = commands.add_parser(
        "build",
        parents=[common],
        help="build this project into a fresh folder, then check it",
        description="Build this project with `python -m build` into a fresh folder, then check what was built.",
        epilog=EXIT_CODES,
    )
    b.add_argument(
        "--outdir",
        metavar="DIR",
        help="build into DIR, which must be new or empty, and keep it "
        "(default: a temporary folder, removed afterwards)",
    )
    b.add_argument(
        "--isolation",
        action="store_true",
        help="build in an isolated environment (downloads the build backend) instead of this one; the wheel is "
        "then refused (G407) unless the backend downloaded is the very version installed here, which the gate "
        "rebuilds and compares with",
    )
    b.set_defaults(func=cmd_build)
    return parser


def _error(message: str, args: argparse.Namespace, code: int = 2, prefix: str = "gate: error: ") -> NoReturn:
    # escaped as the report is: the message names files of the upload folder (`python -m gate check dist/*`), whose
    # names the build's artifact chooses (gate round 32: an escape sequence or a line feed there was printed raw)
    print(f"{prefix}{shown(message)}", file=sys.stderr)
    if args.json is not None and getattr(args, "json_allowed", False):
        try:
            _write_json(
                Path(args.json), unusable_json(message, Path(args.tracked), args.expect_version) | {"exit_code": code}
            )
        except GateError as exc:
            print(f"gate: error: {shown(str(exc))}", file=sys.stderr)
    raise SystemExit(code)


class _Terminated(BaseException):
    """SIGTERM, what a CI runner sends a step it cancels or times out, or SIGHUP, a closed terminal's, raised like
    Ctrl-C's KeyboardInterrupt so that every temporary folder is removed and every child process stopped on the way
    out (Python's default for SIGHUP ended the gate on the spot, its install smoke's folder left behind)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame: object) -> NoReturn:
    raise _Terminated(signum)


def _catch_termination() -> dict[int, Any]:
    """Route SIGTERM and SIGHUP to _Terminated while the gate runs; the previous handlers, to restore. One ignored
    stays ignored (`nohup python -m gate ...` ignores SIGHUP so that the gate outlives its terminal)."""
    if threading.current_thread() is not threading.main_thread():
        return {}  # not the main thread: signals are not ours to take
    wanted = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    return {
        signum: signal.signal(signum, _terminate) for signum in wanted if signal.getsignal(signum) != signal.SIG_IGN
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if isinstance(sys.stdout, io.TextIOWrapper):  # a log in ASCII or cp1252 gets a name's escapes, not a crash
        sys.stdout.reconfigure(errors="backslashreplace")
    previous = _catch_termination()
    restore_streams = take_streams()  # a closed standard error or output, a lost reader: neurobrix.output
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # inside the try: a lost reader surfaces here, not in the interpreter's last flush
        return code
    except BrokenPipeError:  # the reader went away (`| head -1`): quietly and 141, as SIGPIPE ends git
        return lost_reader()
    except GateError as exc:
        _error(str(exc), args)
    except KeyboardInterrupt:
        _error("interrupted; nothing was passed", args, 130, "gate: ")
    except _Terminated as exc:
        said = "hung up (SIGHUP)" if exc.signum == getattr(signal, "SIGHUP", None) else "terminated (SIGTERM)"
        _error(f"{said}; nothing was passed", args, 128 + exc.signum, "gate: ")
    except RecursionError as exc:
        _error(f"the input nests too deeply to be judged ({exc}); nothing was passed", args)
    except MemoryError:
        _error("the input needs more memory than the gate allows itself; nothing was passed", args)
    # The last line of defence, not a way of judging: every input the gate knows of ends in a finding (exit 1)
    # or a GateError (exit 2), and the adversarial tests hold it to that. Should some input reach a bug, the
    # verdict is still "not passed" with one line that says so, never a traceback and never exit 0.
    except Exception as exc:  # noqa: BLE001
        if isinstance(exc, OSError) and exc.filename == STANDARD_OUTPUT:  # the report's own output: a full disk
            why = ran_out(exc)
            _error(f"{exc.strerror}: {STANDARD_OUTPUT}{f'; {why}' if why else ''}; nothing was passed", args)
        _error(
            f"internal error in the gate ({type(exc).__name__}: {exc}); the input is not passed. Please report "
            "it with the input that caused it",
            args,
        )
    finally:
        restore_streams()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
