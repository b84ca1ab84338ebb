"""Round 28's planted bugs, in the code of gate round 32 (the report's per-line escaping ``shown`` and ``bounded``,
the run's one inflation budget, twine four at a time, at most 64 dists, the size compared before hashing, git's
listing read as raw bytes, the checkout messages), text round 29 (exponential_decay_length_penalty: ``decay_scale``,
``decay_failure``, the decode loop's deferred step, ``run`` holding its text back, the tokenizer's reading), the
newcomer round's error lines (``NeuroBrixError.lines``, the CLI's ``_error``), ``conformance.bind --help``, check's
progress line, certify's "not of GPU class" message and strict round 33's device check at load
(``schema.foreign_device``, ``Tables._bindings``, ``_record_layout``'s device), for tests/planted28_driver.py: id,
file, the exact text replaced, its replacement, and the existing tests that exercise it (the outcome of each:
tests/test_planted28.py's docstring)."""

from __future__ import annotations

GT = ["tests/test_gate_round32.py", "tests/test_gate_units.py"]
GH = GT
TX = ["tests/test_text_round29.py", "tests/test_text_round14.py"]
NC = ["tests/test_newcomer30.py", "tests/test_strict_round31.py"]
ST = ["tests/test_strict_round33.py", "tests/test_strict_round16.py"]

REP, ARC, CHKR, TOOLS, REPO_, ZIP, BUILD, GCLI = (
    "gate/report.py",
    "gate/archive.py",
    "gate/checker.py",
    "gate/tools.py",
    "gate/repository.py",
    "gate/zipstrict.py",
    "gate/build.py",
    "gate/cli.py",
)
GEN, RUN, TOK = "neurobrix/generate.py", "neurobrix/run.py", "neurobrix/tokenizer.py"
ERR, CLI, GPU, STACK, CHK, BIND = (
    "neurobrix/errors.py",
    "neurobrix/cli.py",
    "neurobrix/gpu.py",
    "neurobrix/stack.py",
    "conformance/check.py",
    "conformance/bind.py",
)
TBL, SCH = "neurobrix/tables.py", "neurobrix/schema.py"
UNSHOWN = '_UNSHOWN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})'


def p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


PLANTS = [
    # ------------------------------------------------------------------ gate/report.py: shown, bounded, render
    p("g01", REP, UNSHOWN, UNSHOWN.replace(' "Zl",', ""), GT),
    p("g02", REP, UNSHOWN, UNSHOWN.replace(', "Zp"', ""), GT),
    p("g04", REP, "    if len(line) <= LINE_MAX:\n", "    if len(line) < LINE_MAX:\n", GT),
    p("g06", REP, "return line[:keep] + cut + line[-keep:]", "return line[:keep] + cut + line[-keep + 1 :]", GT),
    p(
        "g07",
        REP,
        '"\\n".join(bounded(shown(line)) for line in lines)',
        '"\\n".join(shown(bounded(line)) for line in lines)',
        GT,
    ),
    # ------------------------------------------------------------------ gate/cli.py: the error line
    p(
        "g09",
        GCLI,
        'print(f"{prefix}{shown(message)}", file=sys.stderr)',
        'print(f"{prefix}{message}", file=sys.stderr)',
        GT,
    ),
    # ------------------------------------------------------------------ gate/archive.py: read once, the budget
    p(
        "g11",
        ARC,
        "        if path.stat().st_size > limits.total_size:\n",
        "        if path.stat().st_size >= limits.total_size:\n",
        GH,
    ),
    p("g14", ARC, "    archive.size = len(data)\n", "", GH),
    p("g15", ARC, "if len(out) > min(limits.total_size, archive.budget.left):", "if len(out) > limits.total_size:", GH),
    p("g16", ARC, "                archive.budget.take(len(out))\n", "", GH),
    p("g18", ARC, "left = max(archive.budget.left, 0)", "left = archive.budget.left", GH),
    p("g19", ARC, "            self.budget.take(len(data))\n", "", GH),
    p("g20", ARC, "self._entries[name], self.budget.left)", "self._entries[name], self.limits.total_size)", GH),
    p("g21", ARC, "Budget(limits.total_size) if budget is None else budget", "Budget(limits.total_size)", GH),
    # ------------------------------------------------------------------ gate/checker.py
    p(
        "g22",
        CHKR,
        "archive = open_archive(path, options.limits, budget)",
        "archive = open_archive(path, options.limits)",
        GH,
    ),
    p("g23", CHKR, "if len(paths) > options.limits.dists:", "if len(paths) >= options.limits.dists:", GT),
    p("g25", CHKR, "        if archive.sha256 is None:  # refused unread", "        if False:  # refused unread", GH),
    p(
        "g26",
        CHKR,
        'now = f"sha256 {sha256_of(archive.path)}" if size == archive.size else f"{size} bytes"',
        'now = f"sha256 {sha256_of(archive.path)}"',
        GH,
    ),
    p(
        "g27",
        CHKR,
        'read = f"sha256 {archive.sha256}" if size == archive.size else f"{archive.size} bytes"',
        'read = f"sha256 {archive.sha256}"',
        GH,
    ),
    p("g38", CHKR, "if other not in dists_held:", "if other not in found:", GT),
    # ------------------------------------------------------------------ gate/tools.py: twine a few at a time
    p("g28", TOOLS, "len(self._running) < TWINE_AT_ONCE", "len(self._running) <= TWINE_AT_ONCE", GT),
    p(
        "g29",
        TOOLS,
        "        if dist in self._waiting:  # those before",
        "        if False:  # those before",
        GT,
    ),
    p(
        "g33",
        TOOLS,
        '            errors="backslashreplace",\n            env=self._env,\n',
        "            env=self._env,\n",
        GT,
    ),
    # ------------------------------------------------------------------ gate/repository.py, zipstrict, build
    p(
        "g35",
        REPO_,
        '    same missing checkout (gate round 32)."""\n    _require_top(root)\n',
        '    same missing checkout (gate round 32)."""\n',
        GT,
    ),
    p(
        "g36",
        REPO_,
        '    return _run_git(root, args).decode("utf-8", "surrogateescape")\n',
        '    return _run_git(root, args).decode("utf-8")\n',
        GT,
    ),
    p("g41", BUILD, 'tail = " | ".join(', 'tail = "\\n  ".join(', GT),
    # ------------------------------------------------------------------ neurobrix/generate.py: the decay
    p("t01", GEN, "    power = length - (start + prompt_len)\n", "    power = length - (start + prompt_len) + 1\n", TX),
    p(
        "t03",
        GEN,
        "            if isinstance(scale, int):  # an integer torch",
        "            if isinstance(scale, float):  # an integer torch",
        TX,
    ),
    p(
        "t04",
        GEN,
        "    except (OverflowError, RuntimeError):\n        scale = None",
        "    except OverflowError:\n        scale = None",
        TX,
    ),
    p(
        "t05",
        GEN,
        "at new token {length - prompt_len + 1} is {what}",
        "at new token {length - prompt_len} is {what}",
        TX,
    ),
    p(
        "t07",
        GEN,
        "range(prompt_len, prompt_len + max_new_tokens):",
        "range(prompt_len, prompt_len + max_new_tokens - 1):",
        TX,
    ),
    p(
        "t08",
        GEN,
        "                return length - prompt_len + 1\n",
        "                return length - prompt_len\n",
        TX,
    ),
    p(
        "t13",
        GEN,
        "            if isinstance(ahead, UsageError):\n                raise ahead\n",
        "            if isinstance(ahead, UsageError) and steps > 1:\n                raise ahead\n",
        TX,
    ),
    p("t14", GEN, "ahead = step(token, seq + steps - 1) if steps", "ahead = step(token, seq + steps) if steps", TX),
    p(
        "t15",
        GEN,
        "            except UsageError as exc:\n                return exc\n",
        "            except ValueError as exc:\n                return exc\n",
        TX,
    ),
    p("t17", GEN, "decay_scale(decay, self.prompt_len, length)", "decay_scale(decay, self.prompt_len, length - 1)", TX),
    # ------------------------------------------------------------------ neurobrix/run.py, tokenizer.py
    p("t09", RUN, "if failing is not None and stream_text:", "if failing is not None and opts.stream is False:", TX),
    p("t11", RUN, "write(stream.finish() if stream_text else", "write(stream.finish() if opts.stream else", TX),
    p("t12", RUN, "on_token if stream_text else None,", "on_token if opts.stream else None,", TX),
    p(
        "t16",
        RUN,
        'f"note: the model\'s exponential_decay_length_penalty cannot be computed from new token {failing} on "',
        'f"note: the model\'s exponential_decay_length_penalty cannot be computed from new token {failing + 1} on "',
        TX,
    ),
    p("t18", TOK, "start, factor = (int(v) if isinstance(v, bool) else v for v in pair)", "start, factor = pair", TX),
    p(
        "t19",
        TOK,
        "not all(isinstance(v, (int, float)) and math.isfinite(v) for v in pair)",
        "not all(isinstance(v, (int, float)) for v in pair)",
        TX,
    ),
    # ------------------------------------------------------------------ the newcomer round: errors in lines
    p("n01", ERR, "        several = len(lines) > 1\n", "        several = len(lines) > 2\n", NC),
    p(
        "n02",
        ERR,
        'super().__init__(*(("\\n".join(map(str, lines)),) if several else lines))',
        'super().__init__(*((" ".join(map(str, lines)),) if several else lines))',
        NC,
    ),
    p(
        "n03",
        ERR,
        "self.lines: tuple[str, ...] = tuple(map(str, lines)) if several else ()",
        "self.lines: tuple[str, ...] = tuple(map(str, lines[1:])) if several else ()",
        NC,
    ),
    p("n04", CLI, "_error(str(exc), exc.exit_code, exc.lines)", "_error(str(exc), exc.exit_code)", NC),
    p(
        "n05",
        CLI,
        'shown = "\\n".join(printable(line) for line in lines) if lines',
        'shown = printable("\\n".join(lines)) if lines',
        NC,
    ),
    p(
        "n06",
        CLI,
        'shown = "\\n".join(printable(line) for line in lines) if lines',
        'shown = "\\n".join(lines) if lines',
        NC,
    ),
    p("n07", GPU, 'the Triton interpreter is off.",\n', 'the Triton interpreter is off."\n', NC),
    p("n08", GPU, ' {certified}",\n', ' {certified}"\n', NC),
    p(
        "n09",
        STACK,
        'raise CompilerStackError(*found.refusal().split("\\n"))',
        "raise CompilerStackError(found.refusal())",
        NC,
    ),
    p("n10", BIND, 'if args in (["-h"], ["--help"]):', 'if args == ["--help"]:', NC),
    p(
        "n13",
        CHK,
        'ranges = entry.domain.describe().partition(" ")[2]',
        'ranges = entry.domain.describe().split(" ")[-1]',
        NC,
    ),
    p(
        "n14",
        CHK,
        'Run this on a machine of that "\n            f"class ({gpu_class.description})"',
        'Run this on a {gpu_class.id} "\n            f"({gpu_class.description})"',
        NC,
    ),
    # ------------------------------------------------------------------ strict round 33: the device at load
    p(
        "s01",
        TBL,
        "        if refusal is not None:\n            raise refusal\n        if stack",
        "        if stack",
        ST,
    ),
    p(
        "s02",
        TBL,
        "refusal = foreign_device(str(path), self.classes[class_id], device)",
        "refusal = foreign_device(str(path), self.classes[class_id], device) if layout is None else None",
        ST,
    ),
    p("s03", SCH, '            "compute_capability": match.compute_capability,\n', "", ST),
    p("s04", SCH, '            "multiprocessor_count": match.multiprocessor_count,\n', "", ST),
    p("s07", SCH, 'wanted: dict[str, Any] = {"backend": match.backend}', "wanted: dict[str, Any] = {}", ST),
    p(
        "s10",
        TBL,
        'return (stack_of(provenance), digests, provenance["device"]) if all(digests)',
        'return (stack_of(provenance), digests, dict(provenance["device"], backend="interpreter")) if all(digests)',
        ST,
    ),
]
