"""`python -m conformance`: the contributor's tools: track, check and certify the tables of a GPU class."""

from __future__ import annotations

import argparse
import builtins
import json
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from neurobrix.cli import Parser, _decimal, real
from neurobrix.errors import NeuroBrixError, UsageError, counted, printable, ran_out
from neurobrix.output import lost_reader, take_streams, write_whole
from neurobrix.schema import INTERPRETER
from neurobrix.tables import ENV_VAR

from . import track, workers
from .affected import KERNEL_PATHS


def _shown(text: object) -> str:
    """``text`` as a terminal is to print it: each character it would obey rather than print (errors.printable: an
    escape, a carriage return, a bidirectional override, a byte no UTF-8 decodes) written as its escape, its line
    feeds kept. Every line these commands print goes through it: a tables folder, a report's path or a checkpoint's
    folder holding ESC or CR printed raw cleared the screen, wrote the clipboard or rewrote the line (a path itself is
    escaped whole where it is quoted, its own line feed with it)."""
    return "\n".join(printable(line) for line in str(text).split("\n"))


def _error_text(exc: NeuroBrixError) -> str:
    """An error's message as `neurobrix` shows it: on one line, each character a terminal obeys escaped (a path's
    line feed too), or in the lines the engine laid it out in (NeuroBrixError.lines), each escaped alike."""
    return "\n".join(printable(line) for line in exc.lines) if exc.lines else printable(str(exc))


def _print(*values: object, **kwargs: Any) -> None:
    builtins.print(*(_shown(value) for value in values), **kwargs)


def cmd_track(args: argparse.Namespace) -> int:
    root = Path(args.tables)
    if not root.is_dir():  # the option named, as certify names it (walk-through round 45)
        raise UsageError(f"--tables {root} is not a folder (the tables folder, holding TRACKED.yaml and <class>/)")
    if args.check:
        problems = track.out_of_sync(root)
        for problem in problems:
            _print(f"  {printable(problem)}", file=sys.stderr)
        if problems:
            again = "" if root.resolve() == track.SOURCE_TABLES else f" --tables {printable(shlex.quote(str(root)))}"
            shown = printable(str(root))
            _print(
                f"{shown}/TRACKED.yaml is out of sync with {shown}: run `python -m conformance track{again}`",
                file=sys.stderr,
            )
            return 1
        _print(f"{printable(str(root))}/TRACKED.yaml is in sync")
        return 0
    track.refuse_strays(root)
    path, changed, refused = track.write_report(root)
    _print(f"{'wrote' if changed else 'unchanged'} {printable(path)}")
    for problem in refused:  # listed as files, not as verified: run reads each in full, and refuses it
        _print(
            printable(
                f"  not verified (`neurobrix tables verify` refuses it): {root / problem.path}: {problem.message}"
            )
        )
    return 0


def _at_least(low: float, kind: type = int):
    """An argparse type: a number of ``kind`` that is at least ``low`` (a count of 0 or a negative time is refused
    with the option's name, not run as the default or failed entry by entry)."""

    def parse(text: str):
        if kind is not int:  # a plain decimal, finite: float() also reads "+0.5", "nan" and "1e999" (infinity)
            value = real(f"a finite number at least {low}")(text)
        else:
            try:
                value = _decimal(text)  # int() also reads "+2" and a full-width "２"
            except ValueError:
                raise argparse.ArgumentTypeError(f"invalid {kind.__name__} value: {text!r}") from None
        if not value >= low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {text}")
        return value

    return parse


def _minutes(text: str) -> float:
    """An argparse type for ``--max-minutes``: a time above 0. A limit of 0 did nothing and exited 3 ("work left"),
    so a loop rerunning the command while it exits 3 (CONTRIBUTING's) never ended; a run given any positive limit
    does its first chunk of work before it looks at the clock, so each rerun of such a loop moves on."""
    # float() reads "+1", "nan", "inf"
    value = real("a number of minutes above 0", " (leave the option out for no time limit)")(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(
            f"must be a number of minutes above 0, got {text} (leave the option out for no time limit)"
        )
    return value


def _report_file(text: str) -> str:
    """An argparse type for ``--json FILE``: its folder must exist, so that a long run is not lost at its end."""
    folder = Path(text).parent
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no folder {folder} to write the report into")
    if Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; name the report's file")
    return text


def _write_report(path: str, data: object) -> None:
    # whole or not at all (a full disk mid-write left half a JSON report, or truncated the one a run before wrote)
    try:
        write_whole(Path(path), json.dumps(data, indent=2) + "\n")
    except OSError as exc:
        raise NeuroBrixError(
            f"--json {path}: the report cannot be written ({exc.strerror or exc}); nothing was written there"
        ) from exc


def _progress():
    from rich import get_console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    # where the output is no terminal rich draws no bar, yet its stop wrote an empty line to standard output: before
    # a refusal (`check --kernel nosuch | cat` opened with it) and before the report (walk-through round 45)
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
        disable=not get_console().is_terminal,
    )


class _Log:
    """check's progress where the output is no terminal (a CI job's log, `| tee`): rich draws no bar there, so a check
    of many entries (minutes on the interpreter, 394 s for the H200 class on two GPUs) printed nothing until its
    verdict. One line per entry checked instead, on stderr, with the count and the time so far."""

    def __init__(self) -> None:
        self.total, self.done, self.start = 0, 0, time.monotonic()

    def add_task(self, description: str, total: float | None = None, **_: object) -> int:
        self.total = int(total or 0)
        return 0

    def update(self, task: int, advance: float = 0, description: str | None = None, **_: object) -> None:
        self.done += int(advance)
        if advance or description:
            minutes, seconds = divmod(int(time.monotonic() - self.start), 60)
            count = f"{self.done}/{self.total} " if advance else ""
            _print(f"  {count}{description or ''} ({minutes}:{seconds:02d})", file=sys.stderr, flush=True)


def _say(progress):
    """Print a line above the progress bar as it is written: not wrapped at the console's width (80 columns in a
    log), which split a certified setting or a command in two, and not read as rich markup."""
    return lambda text: progress.console.print(_shown(text), soft_wrap=True, markup=False, highlight=False)


def _check_with_progress(args: argparse.Namespace, gpu_class: str) -> Any:
    from . import check

    with _progress() as progress:
        return check.check_class(
            gpu_class,
            args.kernel,
            check.parse_dtypes(args.dtype),
            args.examples,
            args.profile,
            progress if progress.console.is_terminal else _Log(),
            jobs=args.jobs,
            max_minutes=args.max_minutes,
            resume=Path(args.resume) if args.resume else None,
            isolate=True,
            shrink=not args.no_shrink,
            shipped=args.shipped,
            variants=set(args.variant) if args.variant else None,
            exitfirst=args.exitfirst,
            where=_where(args.where),
        )


def cmd_check(args: argparse.Namespace) -> int:
    if args.tables is None:
        return _check(args)
    # --tables: the check runs as under NEUROBRIX_TABLES (its workers, --record and the re-proof read that folder)
    root = Path(args.tables).expanduser()
    if not root.is_dir():
        raise UsageError(f"--tables {args.tables} is not a folder (the tables folder to check, holding <class>/)")
    before = os.environ.get(ENV_VAR)
    os.environ[ENV_VAR] = str(root.resolve())
    try:
        return _check(args)
    finally:
        if before is None:
            os.environ.pop(ENV_VAR, None)
        else:
            os.environ[ENV_VAR] = before


def _check(args: argparse.Namespace) -> int:
    from neurobrix.cli import before_torch
    from neurobrix.gpu import detect_class

    if args.gpu_class and not args.dtype and before_torch("conformance.check", needs=("hypothesis",)):
        # a class the tables lack, refused before the check's imports (torch, Hypothesis: 2 to 3 s), where the check
        # itself would refuse it next (its --where read first, as the check reads it)
        from neurobrix.tables import load

        _where(args.where)
        loaded = load()
        track.require_class(args.gpu_class, loaded)
        track.require_kernel_tables(args.gpu_class, loaded)
    from . import check

    gpu_class = args.gpu_class or detect_class().id
    if args.record:
        from . import sources

        sources.require_recordable(gpu_class, args.kernel)  # unwritable tables: found before the check, not after
    try:
        report = _check_with_progress(args, gpu_class)
    except KeyboardInterrupt as exc:  # Ctrl-C or a job's time limit: what was checked is reported, then it ends
        partial = getattr(exc, "report", None)
        if partial is not None and partial.results:
            _print(check.render(partial))
            if args.json:
                _write_report(args.json, partial.as_json())
                _print(f"report written to {printable(args.json)}")
            if partial.passed:
                _print(_resume_hint(args))
        raise
    if not report.results and report.complete:  # a selection that matches nothing has proven nothing
        chosen = [
            f"--kernel {' '.join(args.kernel)}" if args.kernel else "",
            f"--dtype {' '.join(args.dtype)}" if args.dtype else "",
        ]
        chosen += [f"--where {w}" for w in args.where or []]
        raise UsageError(
            f"no entry of {gpu_class}'s tables matches {' '.join(c for c in chosen if c) or 'the selection'}: nothing "
            f"was checked (the entries' domains are in tables/{gpu_class}/<kernel>.json)"
        )
    _print(check.render(report))
    if args.json:
        _write_report(args.json, report.as_json())
        _print(f"report written to {printable(args.json)}")
    if report.passed and not report.complete and report.stopped == "time limit":
        _print(_resume_hint(args))
    from . import reproof, sources

    # their lines escaped as every line here (they printed with print itself: strict round 63)
    sources.record(report, args, _print)  # --record: bind the tables it proved whole to the kernel code it ran
    reproof.record(report, args, _print)  # on a stack other than the certified one, a whole pass is a local re-proof
    return (0 if report.complete else 3) if report.passed else 1


def _resume_hint(args: argparse.Namespace) -> str:
    """What finishes a check stopped at its time limit: the same command resuming from its report (it said only how
    many entries were left, and the re-proof note named the whole check again)."""
    if not args.json:
        return "to finish it without checking the passed entries again, run it with --json REPORT, then --resume REPORT"
    words, skip = [], False
    for word in args.argv:  # the same check, less the report it resumed from
        if skip:
            skip = False
        elif word == "--resume":
            skip = True
        elif not word.startswith("--resume="):
            words.append(word)
    command = shlex.join(["python", "-m", "conformance", *words, "--resume", args.json])
    # with the variables that chose what was checked: without NEUROBRIX_TABLES the line, pasted into another shell,
    # checked (and with --record bound) the checkout's tables, not the copy the report is of; without
    # TRITON_INTERPRET the interpreter class's check is refused
    from neurobrix.gpu import interpreter_enabled

    env = ["TRITON_INTERPRET=1"] if interpreter_enabled() else []
    if os.environ.get(ENV_VAR) and getattr(args, "tables", None) is None:  # else --tables is in the command
        env.append(f"{ENV_VAR}={shlex.quote(os.environ[ENV_VAR])}")
    # escaped whole: a --json path or NEUROBRIX_TABLES holding a line feed split the command (strict round 63)
    return printable(f"finish it (its passed entries carried over): {' '.join([*env, command])}")


def _limits(items: list[str] | None) -> dict[str, tuple[int, int]] | None:
    names = ("decode_batch", "prefill_batch", "prompt", "capacity", "cache_tokens")
    limits = {}
    for item in items or []:
        name, _, value = item.partition("=")
        lo, _, hi = value.rpartition(":")
        lo = lo or "1"
        if name not in names or not (lo.isdigit() and hi.isdigit()) or not 1 <= int(lo) <= int(hi):
            raise UsageError(f"--limit {item!r}: expected NAME=HI or NAME=LO:HI with NAME one of {', '.join(names)}")
        limits[name] = (int(lo), int(hi))
    return limits or None


def _where(items: list[str] | None) -> dict[str, tuple[int, int | None]] | None:
    where: dict[str, tuple[int, int | None]] = {}
    for item in items or []:
        dim, _, value = item.partition("=")
        lo, sep, hi = value.partition(":")
        ok = dim.isidentifier() and sep and lo.isdigit() and (hi == "" or hi.isdigit())
        if not ok or int(lo) < 1 or (hi and int(hi) < int(lo)):
            raise UsageError(f"--where {item!r}: expected DIM=LO:HI or DIM=LO: (e.g. M=65:)")
        where[dim] = (int(lo), int(hi) if hi else None)
    return where or None


def _configs(paths: list[str] | None) -> dict | None:
    """Models outside the catalogue, from their config.json files."""
    if not paths:
        return None
    from neurobrix.config import ModelConfig

    from .check import read_limited

    configs = {}
    for path in paths:
        try:
            data = json.loads(read_limited(Path(path)))
        except (OSError, ValueError) as exc:
            raise UsageError(f"--config {path}: cannot be read as JSON: {exc}") from exc
        configs[path] = ModelConfig.from_hf(data, path)
    return configs


_NAME_DTYPES = (
    "name the dtypes to certify with --dtypes (bf16 and fp16 on GPUs; fp32 and fp16 on the interpreter, whose bf16 "
    "is broken upstream)"
)


def cmd_certify(args: argparse.Namespace) -> int:
    from neurobrix.cli import before_torch

    if before_torch("conformance.certify", "conformance.check", needs=("hypothesis",)):
        # what certify refuses before it opens the class (the folder; a class the folder lacks; no --dtypes is its
        # parser's), refused before its imports (torch: 4 to 5 s on a 2-core CPU) in the same order and words; a dtype
        # word, a bf16 on the interpreter, --limit and --config are left to the command's own checks, which import it
        plain = all(d in ("fp32", "fp16", "bf16") for d in args.dtypes)
        plain = plain and not (args.gpu_class == INTERPRETER and "bf16" in args.dtypes)
        if plain and not args.limit and not args.config:
            _where(args.where)
            root = Path(args.tables)
            if root.is_dir():
                track.require_described(root, args.gpu_class, track.DESCRIBE_FIRST)
    from . import certify, check

    dtypes = sorted(check.parse_dtypes(args.dtypes) or ())
    if not dtypes:
        raise UsageError(_NAME_DTYPES)
    if args.gpu_class == INTERPRETER and "bf16" in dtypes:
        # what run and warmup refuse on this class whatever its tables hold: a proof made there proves nothing
        raise UsageError(
            "the interpreter class cannot be certified in bf16: the Triton interpreter computes bf16 wrongly (an "
            "upstream bug), so no bf16 setting it passes is proven, and run and warmup refuse --dtype bf16 on it; "
            "certify --dtypes fp32 fp16 there, and bf16 on a GPU class"
        )
    root = Path(args.tables)
    command = "python -m conformance " + shlex.join(args.argv)
    with _progress() as progress:
        written, left, finished = certify.certify(
            args.gpu_class,
            root,
            args.kernels,
            dtypes,
            args.only_missing,
            args.examples,
            args.profile,
            args.max_minutes,
            command,
            models=args.models,
            limits=_limits(args.limit),
            configs=_configs(args.config),
            jobs=args.jobs,
            where=_where(args.where),
            progress=progress,
            say=_say(progress),
        )
    _print(
        f"certified {counted(written, 'entry', 'entries')} into {printable(str(root / args.gpu_class))}"
        + (f"; {left} left" if left else "")
    )
    if finished and not written and args.only_missing:  # said nothing of why, and a re-certify meant did nothing
        _print(
            "  every domain asked for is already certified there (--only-missing skips it); leave out --only-missing "
            "to certify them again"
        )
    if not finished or args.no_check:
        return 0 if finished else 3
    with _progress() as progress:
        report = check.check_class(
            args.gpu_class,
            args.kernels,
            set(dtypes),
            args.examples,
            args.profile,
            progress if progress.console.is_terminal else _Log(),
            jobs=args.jobs,
            tables_root=root,
        )
    _print(check.render(report))
    return 0 if report.passed else 1


def cmd_rank(args: argparse.Namespace) -> int:
    from neurobrix.cli import before_torch

    if not args.models and before_torch("conformance.rank", "conformance.check", needs=("hypothesis",)):
        # a class the folder lacks, refused before rank's imports (torch), as rank refuses it first (its --models,
        # checked against the catalogue before it, are left to rank)
        track.require_described(Path(args.tables), args.gpu_class, track.DESCRIBE_AND_CERTIFY_FIRST)
    from . import rank

    command = "python -m conformance " + shlex.join(args.argv)
    outcomes, finished = rank.rank(
        args.gpu_class,
        Path(args.tables),
        args.models,
        sorted(set(args.batch)),
        args.dtype,
        args.top,
        args.margin,
        args.rounds,
        args.steps,
        args.examples,
        args.profile,
        args.max_minutes,
        command,
        again=args.again,
    )
    changed = sum(1 for o in outcomes if o.kept)
    _print(f"ranked {len(outcomes)} decode linear entries in their model's step; {changed} changed setting")
    return 0 if finished else 3


def cmd_reformat(args: argparse.Namespace) -> int:
    from . import certify

    written = certify.reformat(Path(args.tables), args.gpu_class)
    for path in written:
        _print(f"rewrote {printable(str(path))}")
    if written:
        _print(f"updated {printable(str(Path(args.tables) / 'TRACKED.yaml'))}")
    else:  # nothing was written: saying TRACKED.yaml was updated would be untrue
        # the class as given, escaped whole (a class folder's name holding a line feed split it: strict round 63)
        _print(f"nothing to rewrite: every kernel table of {printable(args.gpu_class)} is in the current format")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from . import check, sweep

    dtypes = sorted(check.parse_dtypes(args.dtypes) or ())
    rows = sweep.sweep(dtypes, args.examples, args.profile, Path(args.tables), args.kernels)
    if args.json:
        _write_report(args.json, rows)
    return 0 if all(r["passed"] for r in rows) else 1


def cmd_schemas(args: argparse.Namespace) -> int:
    from neurobrix import schema

    folder = Path(schema.__file__).parent / "_schemas"
    stale = []
    for kind in schema.SCHEMAS:
        path, text = folder / f"{kind}_format.py", schema.render_validator(kind)
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if args.check:
            if current is None or _without_version(current) != _without_version(text):
                stale.append(str(path))
        elif current != text:
            path.write_text(text, encoding="utf-8")
            _print(f"wrote {printable(str(path))}")
    if stale:
        _print(
            # each path escaped whole: a checkout's folder holding a line feed split the line (strict round 63)
            "generated validators out of date: "
            + ", ".join(printable(path) for path in stale)
            + "; run `python -m conformance schemas`",
            file=sys.stderr,
        )
        return 1
    return 0


def _without_version(code: str) -> str:
    """Generated code less fastjsonschema's version line (another release of it writes the same checks)."""
    return "\n".join(line for line in code.splitlines() if not line.startswith("VERSION = "))


def cmd_tiny_model(args: argparse.Namespace) -> int:
    from . import tiny

    if args.context is not None and args.context < 2:
        raise UsageError(f"--context must be >= 2 tokens, got {args.context}")
    try:
        folder = tiny.make(Path(args.folder), args.family, context=args.context)
    except OSError as exc:
        raise UsageError(f"{args.folder}: the checkpoint cannot be written there ({exc.strerror or exc})") from exc
    # quoted: a folder with a space in its name is one argument when the line is copied into a shell
    _print(
        printable(
            f"wrote a tiny random {args.family} checkpoint to {folder}; import it with: "
            f"neurobrix import {shlex.quote(str(folder))}"
        )
    )
    return 0


def cmd_affected(args: argparse.Namespace) -> int:
    from . import affected

    found = affected.affected_classes(Path(args.tables), args.files, args.base, args.gpu_class or ())
    for line in found.explain():
        _print(line, file=sys.stderr)
    _print(found.as_json())
    if args.github_output:
        affected.write_github_output(found)
    return 0


def cmd_mutants(args: argparse.Namespace) -> int:
    from . import mutants

    chosen = mutants.select(args.fast, args.only)
    if args.list:  # columns as wide as their longest value: an id or a bug class runs into nothing
        wide = max((len(m.id) for m in chosen), default=0)
        bugs = max((len(m.bug) for m in chosen), default=0)
        for m in chosen:
            _print(
                f"{m.id:<{wide}} {m.bug:<{bugs}} {'fast ' if m.fast else ''}{m.description}"
                + (f" [settings of variant {', '.join(m.variants)}]" if m.variants else "")
            )
        return 0
    jobs = args.jobs or max(1, min(8, workers.usable_cores()))
    _print(
        f"{counted(len(chosen), 'mutant')}, {jobs} at a time, each an interpreter check of its kernel on a "
        "patched copy of the source",
        file=sys.stderr,
    )

    def done(outcome) -> None:
        _print(
            f"  {'caught  ' if outcome.caught else 'SURVIVED'} {outcome.id} ({outcome.seconds:.0f} s)",
            file=sys.stderr,
            flush=True,
        )

    outcomes = mutants.run(chosen, jobs=jobs, examples=args.examples, timeout=args.timeout, on_done=done)
    _print(mutants.render(outcomes))
    if args.json:
        _write_report(args.json, mutants.as_json(outcomes))
        _print(f"report written to {printable(args.json)}")
    return 0 if all(o.caught for o in outcomes) else 1


# every command's, as README.md's Conformance section gives them (each command's --help says which it uses)
EXIT_CODES = (
    "Exit codes: 0 ok, 1 a failure, named (an entry that failed its check, a domain certify could not certify, a "
    "mutant not caught, `track --check` out of sync), 2 usage, 3 stopped at --max-minutes with work left (check, "
    "certify, rank: it prints the command that goes on) or the tables damaged or invalid, 5 no usable device "
    "(TRITON_INTERPRET=1 for the interpreter class), 128+N ended by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP, "
    "141 SIGPIPE: the output's reader went away)."
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m conformance", description=__doc__, epilog=EXIT_CODES)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    t = commands.add_parser(
        "track",
        help="rewrite tables/TRACKED.yaml from the tables folder (or --check that it is in sync)",
        description="Write TRACKED.yaml, the sha256, size and wheel path of every file of the tables folder, and "
        "the audit records it verified as `neurobrix tables verify` does (run reads those by their digests, not in "
        "full; a record it refuses is listed as a file only, and named); run it after changing anything under "
        "tables/. A file there that is no <class>/class.yaml, <kernel>.json or <kernel>.proofs.yaml is refused, "
        "named, and nothing is written (exit 3). With --check, write nothing and exit 1 if it is out of sync.",
    )
    t.add_argument(
        "--tables",
        default=os.environ.get(ENV_VAR) or str(track.SOURCE_TABLES),
        help="tables folder (default: $NEUROBRIX_TABLES when set, the folder certify writes and check and the engine "
        "read, else this checkout's tables/)",
    )
    t.add_argument("--check", action="store_true", help="write nothing; exit 1 if the list is out of sync")
    t.set_defaults(func=cmd_track)

    c = commands.add_parser(
        "check",
        help="check every table entry of a class against float64 (Hypothesis over each domain)",
        description="Check every entry of every kernel table of a GPU class against float64: Hypothesis draws "
        "shapes from each entry's whole domain and values of every kind; each output must stay within its error "
        "bound. Runs on the class's own device (the interpreter class: TRITON_INTERPRET=1). Every entry runs on a "
        "worker process: one whose kernel kills the process is reported crashed, with the example it was running, "
        "and the others go on. Exit 1 on any failure. "
        "On a torch/Triton other than the class was certified with, a whole passing check records a local "
        "re-proof ($NEUROBRIX_HOME/reproofs/CLASS.json) that `neurobrix run` accepts for exactly that stack and "
        "those tables (correctness on the new stack, not speed).",
    )
    c.add_argument(
        "--class",
        dest="gpu_class",
        metavar="CLASS",
        help="the class to check (default: this device's): its id, a folder of the tables; `interpreter` on a CPU, "
        "under TRITON_INTERPRET=1; `neurobrix tables list` lists the classes",
    )
    # a list of kernels or dtypes answers to the singular and the plural in check, certify and sweep alike (walk-through
    # round 46): CONTRIBUTING's steps certify with --kernels and check with --kernel, and each was refused in the other
    c.add_argument("--kernel", "--kernels", nargs="+", metavar="KERNEL", help="only these kernels")
    c.add_argument("--dtype", "--dtypes", nargs="+", metavar="DTYPE", help="only these dtypes (fp32, fp16, bf16)")
    c.add_argument(
        "--examples",
        type=_at_least(1),
        metavar="N",
        help="Hypothesis examples per entry and dtype (default: the profile's)",
    )
    c.add_argument(
        "--profile",
        choices=("ci", "dev", "gpu"),
        default="dev",
        help="Hypothesis profile: ci (25 examples, derandomized), dev (40, the default), "
        "gpu (50, fresh seeds each run)",
    )
    c.add_argument("--json", type=_report_file, metavar="FILE", help="also write the full report as JSON")
    c.add_argument(
        "--max-minutes",
        type=_minutes,
        metavar="M",
        help="stop after M minutes, the entries under way then left unchecked (one entry is checked at least; exit 3 "
        "if some were left)",
    )
    c.add_argument(
        "--jobs",
        type=_at_least(1),
        metavar="N",
        help="worker processes checking entries in parallel, spread "
        "over this machine's GPUs of the class (default: up to 15 per GPU; 1 on the interpreter)",
    )
    c.add_argument(
        "--resume",
        metavar="REPORT",
        help="a JSON report of an earlier check of the same tables, "
        "kernels and bounds (same profile and examples): carry its passed entries over, check the rest (a kernel "
        "whose own table changed since is checked again, the others' entries carried)",
    )
    c.add_argument(
        "--no-shrink",
        action="store_true",
        help="report the first failing example as drawn, without "
        "Hypothesis's shrinking (the same verdict, sooner: a shrink can take minutes)",
    )
    c.add_argument(
        "--shipped",
        action="store_true",
        help="also check every other distinct setting shipped in any class's tables, at small shapes "
        "crossing its blocks and splits (on the interpreter: the GPU classes' variants on CPU, bf16 "
        "settings in fp16); each reported with where it is shipped",
    )
    c.add_argument(
        "--variant",
        nargs="+",
        metavar="VARIANT",
        help="only settings of these variants (a kernel with several code paths: linear's gemv, skinny, tiled, tma, "
        "tma_split)",
    )
    c.add_argument(
        "--where",
        action="append",
        metavar="DIM=LO:[HI]",
        help="only entries whose domain lies inside this range of a key dimension (repeatable), e.g. --where "
        "M=513: after `certify --where M=513:` certified linear's prompt rows again; with --shipped, the other "
        "settings whose small shapes lie inside it",
    )
    c.add_argument(
        "--record",
        action="store_true",
        help="bind each kernel table this check passed whole (every entry, at least the ci profile's examples, on the "
        "class's device and certified stack) to the kernel code it ran: its digest and this check are written into "
        "the table's provenance and index, and TRACKED.yaml rewritten (a tables folder it cannot write is refused "
        "before the check). `neurobrix run` launches a table's settings only on the kernel code they were proven on",
    )
    c.add_argument(
        "--tables",
        metavar="DIR",
        help="tables folder to check (default: $NEUROBRIX_TABLES when set, where the engine reads, else this "
        "checkout's tables/); the check runs as with NEUROBRIX_TABLES=DIR, --record binding that folder's tables",
    )
    c.add_argument(
        "-x",
        "--exitfirst",
        action="store_true",
        help="stop starting entries after the first failure (the report counts the rest as not run)",
    )
    c.set_defaults(func=cmd_check)

    z = commands.add_parser(
        "certify",
        help="search, prove and write a GPU class's tables on its own device",
        description="For every kernel domain the class must cover (the catalogue's; the interpreter class: all "
        "shapes), screen every candidate config against float64, time the survivors, keep the fastest, prove it "
        "with Hypothesis over the domain and write it with its proof, the table bound to the kernel code it ran (its "
        "digest, neurobrix.kernel_source: no entry is added to a table proven on other code); then check what was "
        "written. Resumable (--only-missing) and time-boxed (--max-minutes) so that each run fits a job limit. Exit 3 "
        "when stopped at the time limit with work left, 1 when a domain could not be certified (named) or the check "
        "of what was written failed.",
    )
    z.add_argument(
        "--class",
        dest="gpu_class",
        metavar="CLASS",
        required=True,
        help="the class to certify: its id, the folder of the tables holding its class.yaml (CONTRIBUTING.md, 'Certify "
        "a new GPU class', step 2); `interpreter` on a CPU, under TRITON_INTERPRET=1",
    )
    z.add_argument("--kernels", "--kernel", nargs="+", metavar="KERNEL", help="only these kernels (default: all)")
    z.add_argument(
        "--dtypes",
        "--dtype",
        nargs="+",
        metavar="DTYPE",
        required=True,  # its usage showed it optional (walk-through round 46); what to name is said when it lacks
        help="the dtypes to certify (fp32, fp16, bf16)",
    )
    z.explain_missing(
        "--dtypes", "--dtypes: bf16 and fp16 on GPUs, fp32 and fp16 on the interpreter, whose bf16 is broken upstream"
    )
    z.add_argument("--only-missing", action="store_true", help="skip domains the tables already cover")
    z.add_argument(
        "--models",
        nargs="+",
        metavar="MODEL",
        help="only the domains these catalogue models need (default: the whole catalogue)",
    )
    z.add_argument(
        "--config",
        nargs="+",
        metavar="CONFIG_JSON",
        help="certify what these models (config.json files) need instead of the catalogue's models",
    )
    z.add_argument(
        "--limit",
        action="append",
        metavar="NAME=[LO:]HI",
        help="set the coverage of decode_batch, prefill_batch, prompt, capacity or cache_tokens "
        "(batch x capacity) to [1, HI] or "
        "[LO, HI] instead of the catalogue's (repeatable), e.g. --limit prompt=128:128",
    )
    z.add_argument(
        "--where",
        action="append",
        metavar="DIM=LO:[HI]",
        help="only domains inside this range of a key dimension (repeatable), e.g. --where M=65: for "
        "the prefill rows of linear; without --only-missing their entries are certified again",
    )
    z.add_argument(
        "--examples",
        type=_at_least(1),
        default=25,
        metavar="N",
        help="Hypothesis examples proving each entry (default %(default)s)",
    )
    z.add_argument(
        "--profile", choices=("ci", "dev", "gpu"), default="ci", help="Hypothesis profile for the proofs (default ci)"
    )
    z.add_argument("--max-minutes", type=_minutes, metavar="M", help="stop cleanly after about M minutes")
    z.add_argument("--no-check", action="store_true", help="skip the final check of what was written")
    z.add_argument(
        "--jobs",
        type=_at_least(1),
        metavar="N",
        help="worker processes screening and proving candidates, spread "
        "over this machine's GPUs of the class; timing always has each GPU to itself (default: up to 15 "
        "per GPU; 1 on the interpreter)",
    )
    z.add_argument(
        "--tables",
        default=os.environ.get(ENV_VAR) or str(track.SOURCE_TABLES),
        help="tables folder to write (default: $NEUROBRIX_TABLES when set, where the engine reads, "
        "else this checkout's tables/)",
    )
    z.set_defaults(func=cmd_certify)

    r = commands.add_parser(
        "rank",
        help="order the proven settings of decode linear calls by their model's own decode step (GPU)",
        description="For each catalogue model and decode batch: build the model's decode step from random weights "
        "with the class's tables, captured as the engine captures it; for each of its linear calls, swap in the "
        "entry's setting and the fastest settings certify rejected only as slower, time the steps in interleaved "
        "rounds, and keep one that beats the entry's by more than --margin once it is proven over the domain. "
        "Resumable (ranked entries are skipped) and time-boxed. Exit 3 when stopped at the time limit.",
    )
    r.add_argument(
        "--class",
        dest="gpu_class",
        metavar="CLASS",
        required=True,
        help="the GPU class to rank, on a GPU of that class (never the interpreter class, whose settings certify "
        "ranks alone); `neurobrix tables list` lists the classes",
    )
    r.add_argument("--models", nargs="+", metavar="MODEL", help="catalogue models (default: all)")
    r.add_argument(
        "--batch", nargs="+", type=_at_least(1), default=[1, 8], metavar="B", help="decode batches (default: 1 8)"
    )
    r.add_argument("--dtype", default="bf16", choices=("bf16", "fp16"), help="the step's dtype (default %(default)s)")
    r.add_argument("--top", type=_at_least(1), default=6, metavar="N", help="alternatives a call (default 6)")
    r.add_argument(
        "--margin",
        type=_at_least(0, float),
        default=0.003,
        metavar="F",
        help="a setting must make the step faster by more than this fraction (default %(default)s)",
    )
    r.add_argument("--rounds", type=_at_least(1), default=5, metavar="N", help="interleaved rounds (default 5)")
    r.add_argument("--steps", type=_at_least(1), default=150, metavar="N", help="replays a round (default 150)")
    r.add_argument(
        "--examples", type=_at_least(1), default=25, metavar="N", help="examples proving a new setting (default 25)"
    )
    r.add_argument(
        "--profile", choices=("ci", "dev", "gpu"), default="ci", help="Hypothesis profile for proofs (default ci)"
    )
    r.add_argument("--max-minutes", type=_minutes, metavar="M", help="stop cleanly after about M minutes")
    r.add_argument("--again", action="store_true", help="rank entries ranked in a step before as well")
    r.add_argument(
        "--tables",
        default=os.environ.get(ENV_VAR) or str(track.SOURCE_TABLES),
        help="tables folder to rewrite (default: $NEUROBRIX_TABLES when set, else this checkout's tables/)",
    )
    r.set_defaults(func=cmd_rank)

    f = commands.add_parser(
        "reformat",
        help="rewrite a class's kernel tables of an older format in the current one (entries unchanged)",
        description="Rewrite every kernel table of a class written in an older format, with the same entries, "
        "configs, proofs and provenance: a format-2 table (<kernel>.yaml, settings and proofs in one file) becomes "
        "a settings index (<kernel>.json, what run loads) and an audit record (<kernel>.proofs.yaml), the old "
        "file removed; a format-3 index (one JSON object per entry) is written again from its audit record as "
        "a format-4 index (each config once, each entry one row). The tracked-file list is updated.",
    )
    f.add_argument("--class", dest="gpu_class", metavar="CLASS", required=True, help="the class to rewrite")
    f.add_argument(
        "--tables",
        default=os.environ.get(ENV_VAR) or str(track.SOURCE_TABLES),
        help="tables folder (default: $NEUROBRIX_TABLES when set, else this checkout's tables/)",
    )
    f.set_defaults(func=cmd_reformat)

    w = commands.add_parser(
        "sweep",
        help="run every kernel on this device in each dtype against float64, before tables exist",
        description="A smoke test for a new GPU class: each kernel and dtype, under the first candidate config that "
        "fits, through Hypothesis over a catalogue-sized domain; prints worst error/bound and relative error.",
    )
    w.add_argument(
        "--dtypes",
        "--dtype",
        nargs="+",
        default=["fp32", "fp16"],
        metavar="DTYPE",
        help="the dtypes to run (fp32, fp16, bf16: on a GPU, the interpreter's is broken upstream; default: fp32 fp16)",
    )
    w.add_argument("--kernels", "--kernel", nargs="+", metavar="KERNEL", help="only these kernels")
    w.add_argument(
        "--examples",
        type=_at_least(1),
        default=30,
        metavar="N",
        help="Hypothesis examples per kernel and dtype (default 30)",
    )
    w.add_argument("--profile", choices=("ci", "dev", "gpu"), default="ci", help="Hypothesis profile (default ci)")
    w.add_argument(
        "--tables",
        default=os.environ.get(ENV_VAR) or str(track.SOURCE_TABLES),
        help="where the class.yaml files are (default: $NEUROBRIX_TABLES when set, else tables/)",
    )
    w.add_argument("--json", type=_report_file, metavar="FILE", help="also write every row as JSON")
    w.set_defaults(func=cmd_sweep)

    a = commands.add_parser(
        "affected",
        help="the GPU classes a change affects, as a JSON list (the GPU workflow's matrix)",
        description="Print, as a JSON list, the GPU classes whose conformance a change can alter: a change under "
        f"tables/<class>/ affects that class; one under {', '.join(KERNEL_PATHS[:-1])} or {KERNEL_PATHS[-1]} "
        "affects every GPU class that has kernel tables. Only classes of the "
        "tables folder with a class.yaml are named, never the interpreter class (the CPU CI checks it). The "
        "reasons go to stderr.",
    )
    a.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="changed paths, relative to the repository root (as git prints them), or absolute, or relative to the "
        "current folder when it lies inside the checkout",
    )
    a.add_argument(
        "--base",
        metavar="REF",
        help="also every path changed on HEAD since its merge base with REF "
        "(git diff REF...HEAD); the all-zero commit GitHub sends for a new branch means every class",
    )
    a.add_argument(
        "--class",
        dest="gpu_class",
        action="append",
        metavar="CLASS",
        help="name a GPU class outright (repeatable; a manual run); an unknown one is a usage error",
    )
    a.add_argument("--tables", default=str(track.SOURCE_TABLES), help="tables folder (default: %(default)s)")
    a.add_argument(
        "--github-output", action="store_true", help="also append classes=<json> to the file named by $GITHUB_OUTPUT"
    )
    a.set_defaults(func=cmd_affected)

    u = commands.add_parser(
        "mutants",
        help="plant realistic bugs in the kernels one at a time and show the check catches each",
        description="For each mutant (a realistic bug: a mask off by one, a dropped tail, low-precision "
        "accumulation, a skipped rescale, a wrong GQA mapping, a store without its mask...), copy the source "
        "packages, apply that one patch and run the interpreter-class check of its kernel on the copy, every "
        "class's shipped settings included (`check --class interpreter --kernel K --shipped [--variant V] "
        "--profile ci --no-shrink --exitfirst`; a mutant in one variant's code is checked on that variant's "
        "settings). A mutant is caught when that check fails naming an entry. Prints each mutant's verdict and "
        "the kill rate; exit 1 unless every mutant run was caught. The checks run on the interpreter class "
        "(TRITON_INTERPRET=1 is set for them), which the tables must hold.",
    )
    u.add_argument(
        "--fast",
        action="store_true",
        help="only the subset CI runs: a bug in each kernel and variant (about 1.5 minutes on 2 cores)",
    )
    u.add_argument("--only", nargs="+", metavar="ID", help="only these mutants (see --list)")
    u.add_argument("--list", action="store_true", help="list the mutants (id, class, description) and run nothing")
    u.add_argument(
        "--jobs", type=_at_least(1), metavar="N", help="checks run at once (default: the CPU count, at most 8)"
    )
    u.add_argument(
        "--examples",
        type=_at_least(1),
        metavar="N",
        help="Hypothesis examples per entry (default: the ci profile's 25)",
    )
    u.add_argument(
        "--timeout",
        type=_at_least(1, float),
        default=900.0,
        metavar="S",
        help="seconds one mutant's check may take before it counts as not caught (default %(default)s)",
    )
    u.add_argument(
        "--json", type=_report_file, metavar="FILE", help="also write every outcome and the kill rate as JSON"
    )
    u.set_defaults(func=cmd_mutants)

    s = commands.add_parser(
        "schemas",
        help="regenerate the table formats' validators (neurobrix/_schemas/) from neurobrix/schema.py",
        description="Write neurobrix/_schemas/<kind>_format.py, each table format's JSON Schema compiled to Python by "
        "fastjsonschema, so that loading tables compiles nothing. Run after changing a schema in neurobrix/schema.py "
        "(the engine compiles a schema itself when its generated validator is stale; the tests refuse that state).",
    )
    s.add_argument("--check", action="store_true", help="write nothing; exit 1 if a generated validator is stale")
    s.set_defaults(func=cmd_schemas)

    m = commands.add_parser(
        "tiny-model",
        help="write a tiny random checkpoint (for trying the engine on a CPU)",
        description="Write a tiny random Llama-family checkpoint as transformers saves it (config.json, "
        "model.safetensors, a BPE tokenizer.json, a chat template) into FOLDER. Needs transformers.",
    )
    m.add_argument("folder", metavar="FOLDER", help="where to write it (created; files there are replaced)")
    m.add_argument(
        "--family",
        default="llama",
        choices=("llama", "llama3-tied", "mistral", "qwen2-bias-tied"),
        help="the variant: llama (default), llama3-tied (Llama-3 rope scaling, tied embeddings), mistral, "
        "qwen2-bias-tied (q/k/v bias, tied embeddings)",
    )
    m.add_argument(
        "--context",
        type=int,
        metavar="TOKENS",
        help="the model's context (max_position_embeddings; default 128), e.g. 32768 for long prompts",
    )
    m.set_defaults(func=cmd_tiny_model)
    return parser


def _quiet_lost_interrupt(hook: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``sys.unraisablehook`` for a command: a Ctrl-C that landed in a garbage-collection callback (Hypothesis times
    every collection with one) is printed by Python as "Exception ignored in: <function gc_cumulative_time...>" and
    a traceback (walk-through round 48, certify on the interpreter); the interrupt is remembered
    (:func:`workers.interrupt`) and ends the command in its one line, so that print is left out. Anything else
    goes to ``hook``."""

    def quiet(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and workers._INTERRUPTS:
            return
        hook(unraisable)

    return quiet


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv  # the exact command, recorded in the provenance of what certify writes
    # SIGTERM (a CI job's time limit or cancel, `timeout`) and SIGHUP end the command as Ctrl-C does: by default they
    # killed this process on the spot, its isolated workers left finishing their items on the GPU for nobody and a
    # check's report of the entries already checked lost. Only a signal left to its default is taken: one a caller
    # handles is the caller's, and one ignored stays ignored (`nohup` ignores SIGHUP, a shell's `&` job SIGINT)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = {
        s: signal.signal(s, workers.interrupt)
        for s in workers.INTERRUPTING
        if main_thread and signal.getsignal(s) is (signal.default_int_handler if s == signal.SIGINT else signal.SIG_DFL)
    }
    restore_streams = take_streams()  # a closed standard error or output, a lost reader: neurobrix.output
    unraisable = sys.unraisablehook
    sys.unraisablehook = _quiet_lost_interrupt(unraisable)
    try:
        code = args.func(args)
        sys.stdout.flush()  # inside the try: a lost reader surfaces here, not in the interpreter's last flush
        return code
    except NeuroBrixError as exc:
        _print(f"conformance: error: {_error_text(exc)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:  # Ctrl-C: one line and 128 + SIGINT, as `neurobrix` ends; SIGTERM/SIGHUP: 128 + N
        signum = workers._INTERRUPTS[-1] if workers._INTERRUPTS else signal.SIGINT
        said = "interrupted" if signum == signal.SIGINT else f"terminated ({signal.Signals(signum).name})"
        if args.command == "certify":  # what stays, and how to go on (the time limit's stop says it too)
            said += "; the entries certify wrote before it stay: run it again with --only-missing to resume"
        _print(f"conformance: {said}", file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:  # the reader went away (`| head -1`): quietly and 141, as `neurobrix` ends
        return lost_reader()
    except OSError as exc:  # the machine's refusal (a read-only tables folder, an unwritable $GITHUB_OUTPUT):
        # one line and exit 1, as `neurobrix` ends, not a traceback
        try:
            sys.stdout.flush()
        except OSError:  # the output itself failed: nothing more goes there, at exit either
            lost_reader()
        where = f": {printable(str(exc.filename))}" if exc.filename else ""
        why = ran_out(exc)
        _print(f"conformance: error: {exc.strerror or exc}{where}{f'; {why}' if why else ''}", file=sys.stderr)
        return 1
    finally:
        sys.unraisablehook = unraisable
        restore_streams()
        for number, handler in previous.items():
            signal.signal(number, handler)
        # a Ctrl-C lost in this command is its own: kept beyond it, it interrupted the next items a Python caller ran
        # through Workers outside the command (after its first item), and the next command
        workers._INTERRUPTS.clear()


if __name__ == "__main__":
    sys.exit(main())
