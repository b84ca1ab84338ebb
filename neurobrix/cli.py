"""The `neurobrix` command line. User mistakes print one message and exit non-zero, no traceback."""

from __future__ import annotations

import argparse
import codecs
import difflib
import io
import json
import math
import os
import re
import signal
import sys
import textwrap
import threading
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from . import __version__
from .errors import NeuroBrixError, UsageError, counted, printable, ran_out
from .output import lost_reader, take_streams

EXIT_CODES = (
    "Exit codes: 0 ok, 1 failed or blocked, 2 usage, 3 tables damaged or invalid, 4 no certified setting for a "
    "call, 5 no usable device, 6 certified for another compiler stack (torch/Triton) or other kernel code, 7 stored "
    "model damaged, "
    "128+N ended by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP, 141 SIGPIPE: the output's reader went away)."
)


class _StoreOnce(argparse._StoreAction):
    """argparse's ``store``, refusing what argparse takes silently: an option given twice (argparse keeps the last:
    ``--max-tokens 0 --max-tokens 2`` ran 2, ``--kernels a --kernels b`` certified b alone) and an empty value
    (``--class ''`` and ``--resume ''`` were read as the option not given). ``empty_ok``: an option whose command
    refuses an empty value itself (``--model``) or takes it (``--prompt``); positionals are left to their commands."""

    def __init__(self, *args: Any, empty_ok: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.empty_ok = empty_ok

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given = vars(namespace).setdefault(_GIVEN, set())
        if option_string is not None and self.dest in given:
            raise argparse.ArgumentError(self, "given twice; give it once")
        given.add(self.dest)
        texts = values if isinstance(values, list) else [values]
        if option_string is not None and not self.empty_ok and any(isinstance(v, str) and not v.strip() for v in texts):
            raise argparse.ArgumentError(self, "empty value; leave the option out for its default")
        super().__call__(parser, namespace, values, option_string)


_GIVEN = "_options_given"  # the options a parse has stored, while it runs
_DECIMAL = re.compile(r"-?[0-9]+")


def _decimal(text: str) -> int:
    """``int`` for an integer option: ASCII digits, a minus sign allowed (its command refuses what is below its
    least). ``int`` itself also reads "+2", " 2", "1_000" and other scripts' digits (a full-width "２"), which
    `--max-tokens` took as numbers."""
    if not _DECIMAL.fullmatch(text):
        raise ValueError(text)
    return int(text)


# a number as a person types one: ASCII digits, a point, an exponent ("1e-3", as Python prints small floats), a minus
# sign (its command refuses what is below its least); float() also reads "+0.5", " 0.5", "1_0", other scripts' digits
# (a full-width "０.５"), "nan", "inf" and "infinity", and "1e999" as infinity
_REAL = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_NON_FINITE = re.compile(r"[-+]?(?:nan|inf|infinity)", re.IGNORECASE)


def real(what: str = "a finite number", hint: str = "") -> Any:
    """An argparse type for a float option: a plain decimal number (:data:`_REAL`), else argparse's "invalid float
    value"; NaN, an infinity or a number past float's range (1e999) is refused as not ``what`` (the option's range,
    "a finite number >= 0"), ``hint`` after the value. ``float`` is registered as ``real()`` for any other option."""

    def parse(text: str) -> float:
        if _REAL.fullmatch(text):
            value = float(text)
            if math.isfinite(value):
                return value
        elif not _NON_FINITE.fullmatch(text):
            raise argparse.ArgumentTypeError(f"invalid float value: {text!r}")
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}{hint}")

    parse.__name__ = "float"
    return parse


class Parser(argparse.ArgumentParser):
    """argparse's parser with ``store`` as :class:`_StoreOnce` (its subcommands' parsers too), and no option taken
    from a prefix of its name: argparse read `--max-tok 3` as `--max-tokens 3` and `--no 1` as whichever `--no-...`
    was unique, so a word that names no option ran, and an option added later turned it into an error or into another
    option (walk-through round 45: `neurobrix`, `python -m conformance` and `python -m gate` alike). A prefix is
    refused with the options it begins, as a misspelt option is."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)
        self.register("type", int, _decimal)  # every `type=int` option; argparse's error still says "invalid int value"
        self.register("type", float, real())  # every `type=float` option

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._words = list(sys.argv[1:] if args is None else args)
        parsed, extras = super().parse_known_args(args, namespace)
        vars(parsed).pop(_GIVEN, None)
        if extras and self._subparsers is None:
            # a command's parser (argparse hands what it does not know back to the top parser, whose error showed
            # `neurobrix [-h] ... COMMAND ...` for `neurobrix list --bogus`): the command's own usage, as for a value
            self.error(f"unrecognized arguments: {' '.join(extras)}{self._did_you_mean(extras)}")
        return parsed, extras

    def _unknown_options(self, words: list[str]) -> list[str]:
        """The options among ``words`` this parser does not know, as argparse reads them (``--name=value``, a prefix
        of a known long one no option; a word of one dash, ``-max-tokens`` or ``-m``, an option it does not know, a
        negative number a value); what follows ``--`` is an argument."""
        known = [o for o in self._option_string_actions if o.startswith("--")]
        unknown = []
        for word in words:
            if word == "--":
                break
            if not word.startswith("-") or word == "-" or " " in word or _NEGATIVE.fullmatch(word):
                continue
            name = word.split("=", 1)[0]
            if name.startswith("--"):
                if name not in known:
                    unknown.append(name)
            elif name not in self._option_string_actions and not (name.startswith("-h") and len(name) > 2):
                unknown.append(name)  # (`-h` given more letters, `-help`, argparse refuses itself: see error)
        return unknown

    def _did_you_mean(self, words: list[str], missing: str = "") -> str:
        """The hint after the words not known: the option each is close to, the options a prefix begins (`--max-tok`:
        `--max-tokens`), the long option a one-letter word was meant for where the error names it missing (``missing``:
        `-m x` where `--model` is required), what is the default where `--no-X` exists."""
        known = [o for o in self._option_string_actions if o.startswith("--")]
        unknown = self._unknown_options(words)
        close, defaults = [], []
        for name in unknown:
            bare = name.lstrip("-")
            if len(bare) == 1:
                # `-m` for `--model` (walk-through round 45): only the required options argparse names missing that
                # begin with the letter; any other one-letter word is close to nothing (`-m` after `--model m`)
                meant = [o for o in known if o[2:3] == bare and re.search(rf"(^|[ ,]){re.escape(o)}($|[ ,])", missing)]
                if meant:
                    close.append(f"{' or '.join(meant)} for {name}" if len(unknown) > 1 else " or ".join(meant))
                continue
            # one name for each option it begins (`--kern`: check's --kernel, also spelt --kernels, is one option)
            actions = self._option_string_actions
            begun = list(dict.fromkeys(_first_long(actions[o]) for o in known if o.startswith(name) and len(name) > 2))
            if begun and f"--no-{bare}" not in known:
                # a prefix, which argparse took as the option it alone begins: the options it begins
                shown = " or ".join(begun[:3]) + (" or ..." if len(begun) > 3 else "")
                close.append(f"{shown} for {name}" if len(unknown) > 1 else shown)
                continue
            if f"--no-{bare}" in known:
                # `--chat` for `--no-chat` (too far apart for difflib's cutoff): what is on unless it is given
                defaults.append(f"{bare} is the default: leave {name} out; --no-{bare} turns it off")
                continue
            extended = [o for o in known if name.startswith(o) and len(o) > 3]
            if extended:
                # a whole option with more after it (`--help-me`, `--prompt-txt`; walk-through round 46): too far from
                # `--help` for difflib's cutoff where the option is short; the longest option it begins with
                meant = max(extended, key=len)
                close.append(f"{meant} for {name}" if len(unknown) > 1 else meant)
                continue
            # compared without the dashes every long option shares (with them `--bogus` was "close" to `--jobs`);
            # one dash where two are meant (`-max-tokens`) is the option itself
            match = difflib.get_close_matches(bare, [o[2:] for o in known], n=1, cutoff=0.75)
            if match:
                close.append(f"--{match[0]} for {name}" if len(unknown) > 1 else f"--{match[0]}")
        hints = [f"did you mean {', '.join(close)}?"] if close else []
        return f" ({'; '.join([*defaults, *hints])})" if hints or defaults else ""

    def explain_missing(self, option: str, why: str) -> None:
        """Say ``why`` after argparse's "the following arguments are required: ..." where it names ``option``: what to
        give for it (certify's `--dtypes`, which its usage showed optional while its command refused it missing)."""
        self._why_missing = {**getattr(self, "_why_missing", {}), option: why}

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as exc:
            # `neurobrix runn`, `tables verfy`, `--profile dve`: argparse lists every choice and names none as close
            # (walk-through round 46); the one difflib finds is named, as a misspelt option is
            close = closest(str(value), [str(c) for c in action.choices or ()])
            if close is None:
                raise
            note = COMMAND_NOTES.get(str(value).lower()) if close == COMMAND_WORDS.get(str(value).lower()) else None
            said = f"{exc.message}; {note}" if note else exc.message
            raise argparse.ArgumentError(action, f"{said}; did you mean {close!r}?") from None

    def error(self, message: str) -> NoReturn:
        # argparse checks the required options before it names what it did not know: `run --promt hi` was told
        # "one of the arguments --prompt --prompt-file is required", never that --promt is no option (walk-through
        # round 43); an option it does not know is named first, with the one it is close to
        words = getattr(self, "_words", [])
        unknown = self._unknown_options(words)
        if unknown and ("required" in message and message.startswith(("the following arguments", "one of the"))):
            message = f"unrecognized arguments: {' '.join(unknown)}{self._did_you_mean(unknown, message)}"
        elif message.startswith("unrecognized arguments: ") and "(" not in message:
            # the top parser's (`neurobrix -debug list`): the close option added, as a command's parser adds it
            message += self._did_you_mean(message.split(": ", 1)[1].split())
        elif message.startswith("the following arguments are required: "):
            why = getattr(self, "_why_missing", {})
            named = [o.split("/") for o in message.split(": ", 1)[1].split(", ")]  # "--dtypes/--dtype" for an alias
            said = [why[n] for names in named for n in names if n in why]
            if said:
                message += f" ({'; '.join(said)})"
        elif message.startswith("argument -h/--help: ignored explicit argument"):
            # `-help` is argparse's `-h` given "elp" (walk-through round 44): the word given, and the option meant
            given = next((w for w in words if w.startswith("-h") and len(w) > 2), "")
            if given:
                message = f"unrecognized arguments: {given} (did you mean --help?)"
        # escaped: the message quotes the words given (an argument no option takes, a --json path whose folder is
        # missing), which argparse printed raw, an escape obeyed and a line feed splitting the line (strict round 63)
        super().error(printable(message))


# torch's names of the dtypes the commands spell fp16, bf16 and fp32 (`--dtype float16`: too far from fp16 for difflib)
DTYPE_WORDS = {"float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32", "float": "fp32"}


# other command lines' words for `neurobrix` commands (`ollama pull`, `chat`, `ls`, `rm`), named where a choice is
COMMAND_WORDS = {
    "chat": "run",
    "generate": "run",
    "complete": "run",
    "serve": "run",
    "server": "run",
    "pull": "import",
    "download": "import",
    "ls": "list",
    "rm": "remove",
    "delete": "remove",
}
# what a word of another command line's needs said beside the command meant: `neurobrix serve` (ollama's, vllm's) was
# refused with the list of commands alone (walk-through round 47), which names no server since there is none
COMMAND_NOTES = {
    "serve": "NeuroBrix runs no server: `neurobrix run` loads the model and answers the prompt in its own process",
    "server": "NeuroBrix runs no server: `neurobrix run` loads the model and answers the prompt in its own process",
}


def closest(word: str, choices: Sequence[str]) -> str | None:
    """The choice ``word`` was meant for: another command line's word for it (`chat`: run; torch's `float16`: fp16),
    else the one difflib finds close (`runn`: run, `interpretr`: interpreter, `fp61`: fp16), else None. One rule for
    every choice of the three command lines, argparse's and the commands' own lists alike (walk-through round 47).
    A choice spelt in other letters' case is named first (`FP16`, `INTERPRETER`, `SILU_MUL`: difflib compares case
    and found none of them close; planted round 65)."""
    choices = [str(c) for c in choices]
    alias = {**DTYPE_WORDS, **COMMAND_WORDS}.get(word.lower())
    if alias in choices:
        return alias
    folded = [c for c in choices if c.lower() == word.lower()]
    if len(folded) == 1:
        return folded[0]
    match = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return match[0] if match else None


def close_hint(words: Sequence[str], choices: Sequence[str]) -> str:
    """ " (did you mean fp16?)" after ``words`` that name none of ``choices`` (a class, kernel or dtype a command
    refuses with its list), each with the one it is close to; "" where none is close."""
    meant = [(w, closest(w, choices)) for w in words]
    named = [f"{m} for {w}" if len(words) > 1 else m for w, m in meant if m is not None]
    return f" (did you mean {', '.join(named)}?)" if named else ""


def dtype_hint(words: Sequence[str]) -> str:
    """ " (did you mean fp16?)" after dtypes not known: torch's name of a dtype, or one close to it (`fp61`)."""
    return close_hint(words, ("fp32", "fp16", "bf16"))


def _first_long(action: argparse.Action) -> str:
    """The name an option's usage shows: its first long option string."""
    return next(o for o in action.option_strings if o.startswith("--"))


# a word argparse reads as a value, not an option, where no option looks like a negative number (none does here)
_NEGATIVE = re.compile(r"-[0-9]+|-[0-9]*\.[0-9]+")


def _print_json(data: object) -> None:
    print(json.dumps(data, indent=2, sort_keys=False))


def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import as_json, blocked, diagnose, render

    findings = diagnose()
    if args.json:
        _print_json(as_json(findings))
    else:
        print(render(findings))
    return 1 if blocked(findings) else 0


def cmd_tables_list(args: argparse.Namespace) -> int:
    from .tables import load

    tables = load()
    rows = []
    for class_id, gpu_class in sorted(tables.classes.items()):
        indexes = {name: tables.index(class_id, name) for name in tables.kernels(class_id)}
        stacks = sorted({f"torch {i.stack['torch']}, triton {i.stack['triton']}" for i in indexes.values() if i})
        rows.append(
            {
                "class": class_id,
                "description": gpu_class.description,
                "kernels": {name: len(i.rows) for name, i in indexes.items() if i is not None},
                "certified_with": stacks,
            }
        )
    if args.json:
        _print_json({"location": str(tables.location.root), "origin": tables.location.origin, "classes": rows})
        return 0
    print(printable(f"tables: {tables.location.root} ({tables.location.origin})"))
    for row in rows:
        kernels = ", ".join(f"{k} ({n})" for k, n in row["kernels"].items()) or "no kernel tables yet"
        print(f"  {row['class']:<16} {row['description']}\n  {'':<16} kernels (entries): {kernels}")
        if row["certified_with"]:
            print(f"  {'':<16} certified with: {'; '.join(row['certified_with'])}")
    return 0


def cmd_tables_show(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from .tables import kernel_code, load

    tables = load()
    if args.gpu_class not in tables.classes:
        raise UsageError(
            f"no GPU class {args.gpu_class!r} in {tables.location.root}; "
            f"classes: {', '.join(sorted(tables.classes)) or 'none'}"
            f"{close_hint([args.gpu_class], tables.classes)}"
        )
    gpu_class = tables.classes[args.gpu_class]
    kernels = tables.kernels(args.gpu_class)
    if args.kernel is None:
        if args.json:
            _print_json({**asdict(gpu_class), "kernels": sorted(kernels)})
        else:
            print(f"{gpu_class.id}: {gpu_class.description}\n  file: {printable(gpu_class.path)}")
            for name, value in asdict(gpu_class.match).items():
                if value is not None:
                    print(f"  match {name}: {value}")
            if gpu_class.note:
                print(f"  note: {gpu_class.note}")
            print(f"  kernel tables: {', '.join(sorted(kernels)) or 'none'}")
        return 0
    if args.kernel not in kernels:
        raise UsageError(
            f"class {args.gpu_class} has no table for kernel {args.kernel!r}; "
            f"it has: {', '.join(sorted(kernels)) or 'none'}"
            f"{close_hint([args.kernel], kernels)}"
        )
    index = tables.index(args.gpu_class, args.kernel)
    table = tables.proofs(args.gpu_class, args.kernel)  # the audit record, checked against its index
    assert index is not None and table is not None  # the kernel is one of the class's
    if args.json:
        _print_json(
            {
                **asdict(table),
                "key": list(index.key),
                "rules": list(index.rules),
                "stack": dict(index.stack),
                "index": index.path,
            }
        )
        return 0
    key = ", ".join(f"{d} {r}" for d, r in zip(index.key, index.rules))
    print(f"{table.kernel} on {table.class_id}: {counted(len(table.entries), 'entry', 'entries')}, key ({key})")
    print(f"  settings: {printable(index.path)}\n  proofs:   {printable(table.path)}")
    for name in ("date", "triton", "torch", "command"):
        print(f"  {name}: {table.provenance[name]}")
    print(f"  kernel code: {kernel_code(tables, args.gpu_class, args.kernel)}")  # what run requires (neurobrix.stack)
    reproved = table.provenance.get("reproved") or []
    if reproved:
        last = reproved[-1]
        print(f"  re-proven: {counted(len(reproved), 'check')}, the last {last.get('date')}: {last.get('command')}")
    for entry in table.entries:
        config = " ".join(f"{k}={v}" for k, v in entry.config.items())
        p = entry.proof
        print(
            f"  {entry.domain.describe():<40} {config}\n      proof: {counted(p.examples, 'example')}, "
            f"worst error {p.worst_error_ratio:.3f} of bound {p.bound}; median {p.time_median_us:.1f} us; "
            f"{counted(p.candidates_tried, 'candidate')}, {len(p.rejected)} rejected"
        )
    return 0


def cmd_tables_verify(args: argparse.Namespace) -> int:
    from .tables import MISMATCH_FIX, awaiting_reproof, check_files, load, locate, read_tracked, verify_all

    location = locate()
    report: dict = {"location": str(location.root), "origin": location.origin, "ok": False}
    try:
        tracked = read_tracked(location.root, location.origin)
        problems = check_files(location.root, tracked)
        report["files"] = len(tracked)
        report["problems"] = [{"path": p.path, "message": p.message} for p in problems]
        if problems:
            report["fix"] = MISMATCH_FIX  # as `run` says it (this said only which file)
        else:
            tables = load()
            problems = verify_all(tables)
            report["problems"] = [{"path": p.path, "message": p.message} for p in problems]
            report["classes"] = {c: list(tables.kernels(c)) for c in sorted(tables.classes)}
            report["awaiting_reproof"] = awaiting_reproof(tables)  # passed, and run says so (it was said nowhere)
            report["ok"] = not problems
    except NeuroBrixError as exc:
        report.setdefault("problems", []).append({"path": None, "message": str(exc), "lines": exc.lines})
    if args.json:
        for p in report.get("problems", []):
            p.pop("lines", None)
        _print_json(report)
    elif report["ok"]:
        print(
            f"tables verified: {counted(report['files'], 'file')} in {printable(str(location.root))} "
            f"({location.origin}), every sha256 and size matches TRACKED.yaml, every settings index and its proofs "
            "valid and in agreement"
        )
        for name in report.get("awaiting_reproof", []):
            print(
                f"  note: {name} was proven before proofs were bound to kernel code and awaits its re-proof on this "
                f"code (run launches it with a note): python -m conformance check --class {name.split('/')[0]} "
                f"--kernel {name.split('/')[1]} --record"
            )
    else:
        # each problem on its line, each character a terminal obeys written as its escape (a file or folder named
        # with a line feed, a terminal escape or a bidirectional override was printed raw: strict round 61); an error
        # laid out in lines (the folder report) keeps its lines
        print(printable(f"tables NOT verified ({location.root}, {location.origin}):"), file=sys.stderr)
        for p in report["problems"]:
            lines = p.get("lines") or (
                f"{location.root / p['path'] if p['path'] else ''}{': ' if p['path'] else ''}{p['message']}",
            )
            shown = (("  " if n == 0 else "") + printable(line) for n, line in enumerate(lines))
            print("\n".join(shown), file=sys.stderr)
        if "fix" in report:
            print(report["fix"], file=sys.stderr)
    return 0 if report["ok"] else 3


def argument_text(text: str) -> str:
    """An argument as the text it is. Python decodes argv in the locale's encoding, and hands the bytes it cannot
    decode over as lone surrogates: under ``LC_ALL=C`` with ``PYTHONUTF8=0`` (Python's UTF-8 mode off) every
    non-ASCII byte of a UTF-8 argument, so `--prompt café` was refused as "not UTF-8 text" and a stored model
    `--model tïny` named another model. Those bytes are taken as UTF-8 (as Python's UTF-8 mode, on by default in the
    C locale, takes them); text the locale decoded is kept as it decoded it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return os.fsencode(text).decode("utf-8")
        except UnicodeError:
            return text  # bytes that are no UTF-8: refused where the text is used
    return text


def utf8_text(text: str, where: str) -> str:
    """``text`` if it is UTF-8; Python hands bytes that are not (in argv, or stdin read with surrogateescape)
    over as lone surrogates, which the tokenizer cannot take."""
    text = argument_text(text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{where}: not UTF-8 text") from None
    return text


def _shown_anyway(exc: UnicodeError) -> tuple[str, int]:
    """The error handler of standard output: a file name's undecodable bytes written back as they were
    (surrogateescape), any other character the output's encoding lacks as a Python escape (``\\xef``). Under an ASCII
    or ISO-8859-1 output (``LC_ALL=C`` with ``PYTHONUTF8=0``, ``PYTHONIOENCODING``) `list` printing a model named
    tïny ended in a UnicodeEncodeError traceback. The model's text is held to the output's own encoding by `run`."""
    try:
        return codecs.lookup_error("surrogateescape")(exc)  # type: ignore[no-any-return]
    except UnicodeError:
        return codecs.lookup_error("backslashreplace")(exc)  # type: ignore[no-any-return]


codecs.register_error("neurobrix.shown", _shown_anyway)


# the most characters --prompt-file reads: 2,048 a token over the 32,768-token prompts the certified classes cover
# (README, "Long prompts"), far past any tokenizer's longest token; what has more is no prompt a run can take, and a
# file that never ends (/dev/zero, /dev/urandom, `< /dev/zero`) was read until the memory ran out (a MemoryError)
PROMPT_FILE_LIMIT = 1 << 26


def read_prompt_file(path: str) -> str:
    """The prompt text of ``--prompt-file`` (UTF-8; ``-`` reads standard input), at most
    :data:`PROMPT_FILE_LIMIT` characters: the file's text as written, its line ends ("\\r\\n", a lone "\\r")
    kept as `--prompt` keeps them (Python's universal newlines made them "\\n", another prompt than the file's), a
    UTF-8 byte order mark at its start left out (an encoding signature, not text: "utf-8-sig")."""
    shown = "--prompt-file - (standard input)" if path == "-" else f"--prompt-file {path}"
    try:
        if path == "-":
            if sys.stdin is None:  # started with standard input closed (`<&-`): Python sets none
                raise UsageError(f"{shown}: standard input is closed; give the prompt's file by name")
            if isinstance(sys.stdin, io.TextIOWrapper):  # the process's own: its bytes as UTF-8, line ends kept
                sys.stdin.reconfigure(encoding="utf-8-sig", errors="strict", newline="")
            text = utf8_text(sys.stdin.read(PROMPT_FILE_LIMIT + 1), shown)
        else:
            with open(path, encoding="utf-8-sig", newline="") as f:
                text = f.read(PROMPT_FILE_LIMIT + 1)
    except OSError as exc:
        raise UsageError(f"{shown}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{shown}: not UTF-8 text") from None
    if len(text) > PROMPT_FILE_LIMIT:
        raise UsageError(
            f"{shown}: more than {PROMPT_FILE_LIMIT:,} characters (a file that never ends, or one larger than any "
            "prompt the certified 32,768-token contexts hold); give a file holding the prompt"
        )
    return text


def before_torch(*modules: str, needs: Sequence[str] = ()) -> bool:
    """Whether a command may refuse a name before it imports torch (2 to 3 s of a CPU) and still say what it always
    said: neither torch nor the command's own ``modules`` is imported yet in this process (so none of their functions
    can have been replaced, and the command's later check is the one it always runs), and every dependency
    (:data:`DEPENDENCIES`, and ``needs``) is installed (else the command's import says which is missing, before any
    name). Where torch is imported already there is nothing to save: the command goes its own way."""
    from importlib.util import find_spec

    if any(name in sys.modules for name in ("torch", *modules)):
        return False
    try:
        return all(find_spec(name) is not None for name in (*DEPENDENCIES, *needs))
    except (ImportError, ValueError):  # a module half set up: left to the command's own import to name
        return False


def refuse_unstored_first(model: str, *, tables: bool, **limits: int | None) -> None:
    """Refuse a model name no stored model answers to, where :func:`before_torch` allows it: what the command checks
    before the model first, as it checks it (``limits``, each option that must be >= 1; the tables' folder where
    ``tables``), then the name, by the store's own :func:`neurobrix.store.resolve`, in its words. Returns where the
    name is found after all (an imported folder), or an option is to be refused: the command goes on in its order."""
    from . import store

    if not store.unresolved(model) or any(value is not None and value < 1 for value in limits.values()):
        return
    if tables:
        from .tables import load

        load()
    store.resolve(model)


def cmd_run(args: argparse.Namespace) -> int:
    from .kernel_source import require_kernel_sources

    require_kernel_sources()  # before the kernels are imported: a damaged source is one line, not a traceback
    early = before_torch("neurobrix.run", "neurobrix.generate")
    if not early:  # a missing dependency is said first, as it always was
        from importlib import import_module

        import_module(".run", __package__)
    if args.prompt_file is not None:
        prompt = read_prompt_file(args.prompt_file)
    else:
        prompt = utf8_text(args.prompt, "--prompt")
    from .sampling import Sampling  # no torch: the check below is run's own (neurobrix.generate's Sampling)

    sampling = (args.temperature, args.top_k, args.top_p, args.seed, args.repetition_penalty)
    if early:
        if args.system is not None:  # refused before the name, as it is where RunOptions below takes it
            utf8_text(args.system, "--system")
        if sampling != (0.0, None, None, None, None):  # checked as run checks them, without torch (walk-through
            Sampling(*sampling).validate()  # round 44: neurobrix.generate, which imports it, held the check)
        refuse_unstored_first(args.model, tables=args.backend == "triton", max_tokens=args.max_tokens)
    from .run import RunOptions, run

    opts = RunOptions(
        model=args.model,
        prompt=prompt,
        max_tokens=args.max_tokens,
        sampling=Sampling(*sampling),
        backend=args.backend,
        dtype=args.dtype,
        chat=not args.no_chat,
        stream=not args.no_stream,
        system=None if args.system is None else utf8_text(args.system, "--system"),
    )
    streamed = ["\n"]  # the last text written

    def write(text: str) -> None:
        try:
            # strict: main's handler would write an escape instead; a stream without an encoding (a program's own
            # writer in place of sys.stdout) takes text, as UTF-8's
            text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
            sys.stdout.write(text)
        except UnicodeEncodeError as exc:  # an ASCII or Latin-1 output (PYTHONIOENCODING, the locale, a console)
            sys.stdout.write(text[: exc.start])  # the text up to the character, then the refusal on a line of its own
            streamed[0] = text[: exc.start] or streamed[0]
            char = text[exc.start]
            raise UsageError(
                f"standard output's encoding ({sys.stdout.encoding}) cannot write the model's text ({char!r}, "
                f"U+{ord(char):04X}); print in UTF-8 (PYTHONIOENCODING=utf-8, or a UTF-8 locale)"
            ) from None
        if text:
            streamed[0] = text

    try:
        stats = run(opts, write=write)
    except BaseException:  # Ctrl-C or a refusal mid-text: the error's line starts a line of its own
        if not streamed[0].endswith("\n"):
            sys.stdout.write("\n")
            sys.stdout.flush()
        raise
    print(stats.line(), file=sys.stderr)
    return 0


class Progress:
    """Progress of a long command on stderr: one line rewritten in place on a terminal, else a line at
    every tenth of the way."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.tty = sys.stderr.isatty()
        self.shown = -1

    def __call__(self, done: int, total: int) -> None:
        step = 100 if self.tty else 10
        mark = done * step // max(total, 1)
        if mark == self.shown and done != total:
            return
        self.shown = mark
        text = f"{self.what}: {done}/{total} ({100 * done // max(total, 1)}%)"
        if self.tty:
            print(f"\r{text}", end="\n" if done == total else "", file=sys.stderr, flush=True)
        else:
            print(text, file=sys.stderr, flush=True)


def cmd_warmup(args: argparse.Namespace) -> int:
    from .kernel_source import require_kernel_sources

    require_kernel_sources()  # before the kernels are imported (as run)
    if before_torch("neurobrix.warmup", "neurobrix.run"):
        refuse_unstored_first(args.model, tables=True, max_tokens=args.max_tokens, max_prompt=args.max_prompt)
    from .warmup import WarmupOptions, warmup

    opts = WarmupOptions(model=args.model, max_tokens=args.max_tokens, max_prompt=args.max_prompt, dtype=args.dtype)
    said = lambda line: print(printable(line), file=sys.stderr)  # noqa: E731
    report = warmup(opts, progress=Progress("warmup passes"), notice=said)
    for line in report.lines():  # (a GPU class's Triton cache folder among them: a path, escaped)
        print(printable(line))
    return 0


def add_warmup_parser(commands: Any, common: dict[str, Any]) -> None:
    warm = commands.add_parser(
        "warmup",
        **common,
        help="compile every kernel a model's runs can need, before the first run",
        description="""\
Compile, before any `neurobrix run`, every Triton kernel binary the runs of a stored model can
need on this machine's GPU class: every prompt length and KV-cache size a run can have (up to the
model's context and what the class certifies), batch 1, one dtype. The binaries go to the engine's
cache of compiled kernels ($NEUROBRIX_HOME/triton-cache, or where TRITON_CACHE_DIR or TRITON_HOME
names one), where `run` finds them: it then compiles nothing. No weight of the model is read:
its forward pass runs on zero weights with the certified settings. Every binary compiles once, so
it takes a while on a GPU; Ctrl-C keeps what was compiled, and running it again compiles only the
rest.""",
        epilog="examples:\n  neurobrix warmup --model meta-llama/Llama-3.2-1B-Instruct\n"
        "  neurobrix warmup --model meta-llama/Llama-3.2-1B-Instruct --max-prompt 2048 --max-tokens 512\n\n"
        + textwrap.fill(EXIT_CODES, 100),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    warm.add_argument(
        "--model", required=True, empty_ok=True, help="a stored model name (see `neurobrix list`) or its hub id"
    )
    warm.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        metavar="N",
        help="cover runs of at most N new tokens, N >= 1 (`run --max-tokens`; default: any the context allows)",
    )
    warm.add_argument(
        "--max-prompt",
        type=int,
        default=None,
        metavar="N",
        help="cover prompts of at most N tokens, N >= 1 (default: any the context allows; more than it allows narrows "
        "nothing, with a note)",
    )
    warm.add_argument(
        "--dtype",
        choices=("bf16", "fp16", "fp32"),
        default=None,
        help="the dtype runs will use (default, as run's: bf16 on a GPU, fp32 on the CPU)",
    )
    warm.set_defaults(func=cmd_warmup)


def cmd_tiny_model(args: argparse.Namespace) -> int:
    import shlex
    from pathlib import Path

    from .tiny import make

    folder = make(Path(args.folder))
    # quoted: a folder with a space in its name is one argument when the line is copied into a shell
    print(
        printable(
            f"wrote a tiny random Llama checkpoint to {folder}; import it with: neurobrix import "
            f"{shlex.quote(str(folder))}"
        )
    )
    return 0


def add_tiny_model_parser(commands: Any, common: dict[str, Any]) -> None:
    tiny = commands.add_parser(
        "tiny-model",
        **common,
        help="write a tiny random Llama checkpoint, to try the engine on a CPU with nothing downloaded",
        description="""\
Write a tiny random Llama checkpoint (2 layers, hidden size 64, a 300-token BPE tokenizer trained
here, a chat template) into FOLDER, a new or empty folder: the files transformers saves for such a
model. `neurobrix import FOLDER` takes it, and `TRITON_INTERPRET=1 neurobrix run` runs it on the CPU
in seconds. Its text is random tokens, as its weights are.""",
        epilog="example:\n  neurobrix tiny-model /tmp/tiny-llama && neurobrix import /tmp/tiny-llama\n\n"
        + textwrap.fill(EXIT_CODES, 100),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tiny.add_argument("folder", metavar="FOLDER", help="where to write it: a new or empty folder (created)")
    tiny.set_defaults(func=cmd_tiny_model)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="neurobrix",
        description="LLM inference on Triton kernels whose settings are certified per GPU class.",
        # where to start, as each command's --help shows its examples (this said only the exit codes: walk-through
        # round 44)
        epilog="first steps (no GPU, nothing downloaded):\n"
        "  neurobrix doctor                        what this machine can run, and what blocks it\n"
        "  neurobrix tiny-model /tmp/tiny-llama    a tiny random checkpoint, then: neurobrix import /tmp/tiny-llama\n"
        '  TRITON_INTERPRET=1 neurobrix run --model tiny-llama --prompt "hello world" --max-tokens 12\n'
        "each command's --help: neurobrix COMMAND --help\n\n" + textwrap.fill(EXIT_CODES, 100),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"neurobrix {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    # --debug is taken after the subcommand too (`neurobrix run ... --debug`); SUPPRESS keeps a value
    # given before the subcommand from being reset by the subcommand's default
    debug = Parser(add_help=False)
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show the traceback of an error")
    common: dict[str, Any] = {"parents": [debug]}
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    doctor = commands.add_parser(
        "doctor",
        **common,
        help="report this machine, its GPU class and the tables; exit 1 if a run is blocked",
        description="Report python, neurobrix, torch, triton, where the certified tables come from and their "
        "integrity (every sha256 and size), the engine's kernel sources, the model store, the device and its GPU "
        "class, the class's kernels, the compiler stack it was certified with against this one (or a local "
        "re-proof), any variable of the environment that would make the compiler build other code, a GPU class's "
        "triton cache folder (where its compiled kernels go), and any NEUROBRIX_* variable of the environment it "
        "does not read. Exit 1 if anything blocks a real run here.",
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    doctor.set_defaults(func=cmd_doctor)

    run = commands.add_parser(
        "run",
        **common,
        help="generate text with an imported model on the certified kernels",
        # each step with its own exit code: the parenthesis of one sentence read as if the options gave exit 3
        # (walk-through round 44)
        description=textwrap.fill(
            "Generate text with an imported model. What you name is refused before what the machine lacks, in "
            "this order: the options (exit 2); the tables (damaged or edited: exit 3); the model (not stored: exit 2; "
            "damaged: exit 7); the prompt against its tokenizer, the model's generation settings, and --max-tokens "
            "against the model's context (exit 2). Then the machine: the device and its GPU class (exit 5), its "
            "compiler stack (exit 6), the memory the run needs (exit 5), and every kernel call the generation will "
            "make against the certified tables (exit 4), all before any weight is loaded.",
            100,
        ),
        # the command a user runs most: its help shows how, and what each exit code means (as warmup's does)
        epilog="examples:\n"
        '  neurobrix run --model meta-llama/Llama-3.2-1B-Instruct --prompt "Why is the sky blue?"\n'
        "  neurobrix run --model meta-llama/Llama-3.2-1B-Instruct --prompt-file report.txt --max-tokens 200\n"
        '  TRITON_INTERPRET=1 neurobrix run --model tiny-llama --prompt "hello world" --max-tokens 12   (no GPU)\n\n'
        + textwrap.fill(EXIT_CODES, 100),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "--model", required=True, empty_ok=True, help="a stored model name (see `neurobrix list`) or its hub id"
    )
    given = run.add_mutually_exclusive_group(required=True)
    given.add_argument("--prompt", empty_ok=True, help="the prompt text")
    given.add_argument(
        "--prompt-file",
        metavar="FILE",
        help="read the prompt from this UTF-8 file ('-': standard input), e.g. a long document; its text as "
        "written, line ends included (a byte order mark at its start left out)",
    )
    run.add_argument(
        "--system",
        empty_ok=True,
        metavar="TEXT",
        help="a system message before the prompt, as the model's chat template places it (transformers' "
        "apply_chat_template on a system and a user message)",
    )
    run.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        metavar="N",
        help="most new tokens to generate (default: as transformers' generate takes it from the model's "
        "generation_config.json, its max_new_tokens, else its max_length less the prompt, else transformers' 20; at "
        "most what the model's context leaves after the prompt; N >= 1)",
    )
    run.add_argument(
        "--temperature",
        type=real("a finite number >= 0"),
        default=0.0,
        metavar="T",
        help="0 = greedy (default), else the sampling temperature, a number > 0",
    )
    run.add_argument(
        "--top-k",
        type=int,
        default=None,
        metavar="K",
        help=(
            "sample among the K most likely tokens, 0 = all (default: the model's generation_config.json top_k, "
            "else 50, as transformers' generate)"
        ),
    )
    run.add_argument(
        "--top-p",
        type=real("a finite number in [0, 1]"),
        default=None,
        metavar="P",
        help="sample within the top-P probability mass, 0 <= P <= 1 (0: the most likely token; default: the model's "
        "top_p, else 1, all)",
    )
    run.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="S",
        help="random seed for sampling (default: none, each run differs; 0 <= S < 2**64)",
    )
    run.add_argument(
        "--repetition-penalty",
        type=real("a finite number > 0"),
        default=None,
        metavar="P",
        help="divide a repeated token's logit by P, a number > 0 (multiply a negative logit), as transformers "
        "does; 1 = off (default: the model's generation_config.json, else 1)",
    )
    run.add_argument(
        "--backend",
        choices=("triton", "torch"),
        default="triton",
        help="triton: certified kernels (default); torch: PyTorch's own kernels, explicitly",
    )
    run.add_argument(
        "--dtype",
        choices=("bf16", "fp16", "fp32"),
        default=None,
        help="weights and activations (default: bf16 on a GPU, fp32 on the CPU)",
    )
    run.add_argument("--no-chat", action="store_true", help="use the prompt as is, without the chat template")
    run.add_argument("--no-stream", action="store_true", help="print the text at the end instead of as it comes")
    run.set_defaults(func=cmd_run)
    add_warmup_parser(commands, common)

    tables = commands.add_parser(
        "tables",
        **common,
        help="list, show and verify the certified tables",
        description="List, show and verify the certified tables the engine reads (NEUROBRIX_TABLES when set, "
        "else the installed package's, else a source checkout's tables/).",
    )
    sub = tables.add_subparsers(dest="tables_command", metavar="ACTION", required=True)
    t_list = sub.add_parser(
        "list",
        **common,
        help="GPU classes and their kernel tables",
        description="List the GPU classes, each with its kernel tables (entries per kernel) and the torch and "
        "Triton it was certified with.",
    )
    t_list.add_argument("--json", action="store_true", help="print as JSON")
    t_list.set_defaults(func=cmd_tables_list)
    t_show = sub.add_parser(
        "show",
        **common,
        help="one class, or one kernel table with its entries and proofs",
        description="Show a GPU class's identity (what a device must match) and its kernel tables; with KERNEL, "
        "every entry of that table: its domain, its setting and its proof (examples, worst error against the "
        "bound, timing, candidates tried and rejected), and the kernel code they were proven on (kernel code: this "
        "neurobrix's, other code run refuses, or awaiting its re-proof; re-proven: the last check --record).",
    )
    t_show.add_argument("gpu_class", metavar="CLASS", help="a GPU class id, e.g. nvidia-h200")
    t_show.explain_missing("CLASS", "`neurobrix tables list` lists the classes")  # walk-through round 46
    t_show.add_argument("kernel", metavar="KERNEL", nargs="?", help="a kernel name, e.g. linear")
    t_show.add_argument("--json", action="store_true", help="print as JSON")
    t_show.set_defaults(func=cmd_tables_show)
    t_verify = sub.add_parser(
        "verify",
        **common,
        help="recompute every hash against TRACKED.yaml and validate every table (exit 3 if not)",
        description="Recompute every table file's sha256 and size against TRACKED.yaml, validate every settings "
        "index and its proofs, and check they agree and that each was proven on this neurobrix's kernel code. Exit 3 "
        "if anything fails, naming each file; a table awaiting its re-proof (AWAITING_REPROOF) passes with a note "
        "naming it (awaiting_reproof in --json).",
    )
    t_verify.add_argument("--json", action="store_true", help="print the report as JSON")
    t_verify.set_defaults(func=cmd_tables_verify)
    from .cli_store import register

    register(commands, common)
    add_tiny_model_parser(commands, common)
    # every command's --help ends with what its exit status means, as `neurobrix --help` does (import, list, remove
    # and the tables actions said nothing of it: a script checking `neurobrix import`'s status had no key)
    for command in [*commands.choices.values(), *sub.choices.values()]:
        if "Exit codes:" not in (command.epilog or ""):
            raw = command.formatter_class is not argparse.HelpFormatter  # a raw epilog is printed as written
            key = textwrap.fill(EXIT_CODES, 100) if raw else EXIT_CODES
            command.epilog = f"{command.epilog}\n\n{key}" if command.epilog else key
    return parser


def _error(message: str, code: int, lines: Sequence[str] = ()) -> NoReturn:
    # one line, whatever the message quotes: a config.json's architecture or a folder's name holding ESC or CR; a
    # message the engine laid out in lines (NeuroBrixError.lines: the calls missing a setting, then the command) one
    # line each, each escaped alike
    shown = "\n".join(printable(line) for line in lines) if lines else printable(message)
    print(f"neurobrix: error: {shown}", file=sys.stderr)
    raise SystemExit(code)


# The modules of the distributions pyproject.toml depends on, each with its range there.
DEPENDENCIES = {
    "torch": "torch 2.11-2.14",
    "triton": "triton 3.6-3.9",
    "yaml": "pyyaml",
    "tokenizers": "tokenizers",
    "jinja2": "jinja2",
    "huggingface_hub": "huggingface_hub",
    "safetensors": "safetensors",
    "packaging": "packaging",
    "fastjsonschema": "fastjsonschema",
    "numpy": "numpy",  # the Triton interpreter computes with it
}


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the program is, so that it unwinds as on Ctrl-C: an import in flight
    removes its temporary folder (Python's default for these signals ends the process on the spot)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(signum)


def _catch_termination() -> dict[int, Any]:
    """Route SIGTERM and SIGHUP to Terminated while a command runs; the previous handlers, to restore."""
    if threading.current_thread() is not threading.main_thread():
        return {}  # signal handlers can only be set from the main thread
    wanted = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    # one ignored stays ignored: `nohup neurobrix run ...` ignores SIGHUP so that the run outlives its terminal
    return {
        signum: signal.signal(signum, _terminate) for signum in wanted if signal.getsignal(signum) != signal.SIG_IGN
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for name in ("model", "name"):  # a stored model's name (run, warmup, remove), as the text it is
        if isinstance(getattr(args, name, None), str):
            setattr(args, name, argument_text(getattr(args, name)))
    if isinstance(sys.stdout, io.TextIOWrapper) and sys.stdout.errors in ("strict", "surrogateescape"):
        sys.stdout.reconfigure(errors="neurobrix.shown")
    previous = _catch_termination()
    restore_streams = take_streams()  # a closed standard error or output, a lost reader: neurobrix.output
    try:
        if args.func is not cmd_doctor:  # doctor reports it among its findings
            from .doctor import environment_problem

            unknown = environment_problem()
            if unknown:
                raise UsageError(unknown)
        code = args.func(args)
        sys.stdout.flush()  # inside the try: a closed pipe surfaces here, not at interpreter exit
        return code
    except NeuroBrixError as exc:
        if args.debug:
            traceback.print_exc()
        _error(str(exc), exc.exit_code, exc.lines)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM / SIGHUP (Terminated): 128 + the signal's number
        signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        if args.debug:
            traceback.print_exc()
        said = "interrupted" if signum == signal.SIGINT else f"terminated ({signal.Signals(signum).name})"
        _error(said, 128 + signum)
    except ModuleNotFoundError as exc:  # an install without its dependencies (pip --no-deps, the release's gate jobs)
        module = (exc.name or "").partition(".")[0]
        if module not in DEPENDENCIES:
            raise
        if args.debug:
            traceback.print_exc()
        _error(
            f"{module} is not installed, and this command needs it: neurobrix depends on {DEPENDENCIES[module]} "
            "(`python -m pip install neurobrix` installs its dependencies; torch and triton as the README's "
            "'Certified classes and their compiler stack' says; `neurobrix doctor` reports torch and triton)",
            1,
        )
    except BrokenPipeError:  # the reader went away (`neurobrix tables show ... | head`): quietly, as SIGPIPE ends
        return lost_reader()  # coreutils and git (141), never 0 for what it stopped (an import, a run)
    except OSError as exc:  # the machine's refusal (the output on a full disk, say), not a bug: one line
        if args.debug:
            traceback.print_exc()
        try:
            sys.stdout.flush()
        except OSError:  # the output itself failed: nothing more can go there, at exit either
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        where = f": {exc.filename}" if exc.filename else ""
        why = ran_out(exc)
        _error(f"{exc.strerror or exc}{where}{f'; {why}' if why else ''} (--debug shows where)", 1)
    finally:
        restore_streams()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


if __name__ == "__main__":
    sys.exit(main())
