"""Round 36's planted bugs, in code merged in the thirty-fourth session: strict round 41 (tokenizer_class type checks in
``tokenizer._tokenizer_class``, safetensors' own refusal of a dtype it does not know in
``checkpoint._check_safetensors``), text round 35 (``_samples``: do_sample read for its truth, num_return_sequences
beside it), walk-through 34 (``cli.real``'s float options, ``errors.counted`` and the singulars beside it, `remove`'s
measured freed bytes and damage note, the ranges in --help), walk-through 34b (the conformance command's SIGTERM /
SIGHUP handling and exit codes, check's partial report on an interrupt, workers' ``ended_by_interrupt``,
``_die_with_parent``, ``close(kill=...)`` and the interrupt's ``done``) and kernel-mutant round 10's bf16 output check
(``check.bf16_outputs`` at the smallest shape), for tests/planted36_driver.py: id, file, the exact text replaced, its
replacement, and the existing tests that exercise it (the outcome of each: tests/test_planted36.py's docstring)."""

from __future__ import annotations

ST = ["tests/test_strict_round41.py", "tests/test_strict_round13.py", "tests/test_tokenizer.py"]
ST += ["tests/test_text_round9.py", "tests/test_text_round13.py", "tests/test_text_round14.py"]
ST += ["tests/test_text_round26.py", "tests/test_text_round27.py", "tests/test_text_round31.py"]
ST += ["tests/test_text_round32.py", "-k", "tokenizer_class or dtype or float or class"]
TX = ["tests/test_text_round35.py", "tests/test_text_round13.py", "tests/test_text_round7.py"]
TX += ["-k", "sample or sequences or note"]
UX = ["tests/test_ux34.py", "tests/test_conformance.py", "tests/test_store.py", "tests/test_cli.py"]
UX += ["-k", "float or nan or count or one or remove or help or minutes or margin or timeout or singular or damaged"]
MSG = ["tests/test_ux34.py", "tests/test_engine.py", "tests/test_conformance.py", "tests/test_config.py"]
MSG += ["tests/test_text_round13.py", "tests/test_text_round14.py", "tests/test_warmup.py"]
MSG += ["-k", "count or one or shard or missing or warm or prompt or certif or reproof or proof or max_length"]
IN = ["tests/test_check_interrupted.py", "tests/test_walkthrough33.py", "tests/test_conformance.py"]
IN += ["-k", "interrupt or worker or signal or ctrl or terminat or resume or partial"]
BF = ["tests/test_kmut10.py", "tests/test_conformance.py", "-k", "bf16 or fp16 or smallest or check_entry"]

TOK, CKPT, CLI, ERR = "neurobrix/tokenizer.py", "neurobrix/checkpoint.py", "neurobrix/cli.py", "neurobrix/errors.py"
STORE, CSTORE, WARM, RUNPY = "neurobrix/store.py", "neurobrix/cli_store.py", "neurobrix/warmup.py", "neurobrix/run.py"
CMAIN, CHECK, WORKERS = "conformance/__main__.py", "conformance/check.py", "conformance/workers.py"
REPROOF, CERTIFY = "conformance/reproof.py", "conformance/certify.py"


def p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


PLANTS = [
    # ------------------------------------------------------------------ strict round 41: tokenizer_class, dtypes
    p(
        "s01",
        TOK,
        '        if not declared and model_config.get("tokenizer_class") is not None:',
        '        if declared is None and model_config.get("tokenizer_class") is not None:',
        ST,
    ),
    p(
        "s02",
        TOK,
        '        if not declared and model_config.get("tokenizer_class") is not None:',
        '        if not declared and model_config.get("tokenizer_class"):',
        ST,
    ),
    p(
        "s03",
        TOK,
        '            declared, named = model_config["tokenizer_class"], "config.json"',
        '            declared = model_config["tokenizer_class"]',
        ST,
    ),
    p(
        "s04",
        TOK,
        "    if declared is not None and not isinstance(declared, str):",
        "    if declared and not isinstance(declared, str):",
        ST,
    ),
    p(
        "s05",
        TOK,
        '    declared = declared or None  # "" names no class: transformers loads tokenizer.json as it is',
        '    declared = declared  # "" names no class: transformers loads tokenizer.json as it is',
        ST,
    ),
    p(
        "s07",
        CKPT,
        '    except (SafetensorError, OSError) as exc:\n        raise CheckpointError(f"{path}: safetensors cannot',
        '    except OSError as exc:\n        raise CheckpointError(f"{path}: safetensors cannot',
        ST,
    ),
    p(
        "s08",
        CKPT,
        "    # a dtype safetensors reads (a name it does not know",
        "    shapes = {k: v for k, v in shapes.items() if meta[k].get('dtype') in WEIGHT_DTYPES}\n"
        "    # a dtype safetensors reads (a name it does not know",
        ST,
    ),
    # ------------------------------------------------------------------ text round 35: do_sample's truth
    p("t01", TOK, '    return bool(settings.get("do_sample"))', '    return settings.get("do_sample") is True', TX),
    p(
        "t03",
        TOK,
        '    return bool(settings.get("do_sample"))',
        '    return bool(settings.get("do_sample")) and settings.get("do_sample") != "false"',
        TX,
    ),
    p(
        "t04",
        TOK,
        "    if sequences > 1 and (beams is None or beams == 1) and not _samples(settings):",
        '    if sequences > 1 and (beams is None or beams == 1) and settings.get("do_sample") is not True:',
        TX,
    ),
    p(
        "t05",
        TOK,
        "    if sequences > 1 and (beams is None or beams == 1) and not _samples(settings):",
        "    if sequences >= 1 and (beams is None or beams == 1) and not _samples(settings):",
        TX,
    ),
    p(
        "t06",
        TOK,
        "        if not _samples(settings):\n            return []",
        '        if settings.get("do_sample") is not True:\n            return []',
        TX,
    ),
    # ------------------------------------------------------------------ walk-through 34: float options
    p(
        "u01",
        CLI,
        '_REAL = re.compile(r"-?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(?:[eE][-+]?[0-9]+)?")',
        '_REAL = re.compile(r"[-+]?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(?:[eE][-+]?[0-9]+)?")',
        UX,
    ),
    p(
        "u02",
        CLI,
        '_REAL = re.compile(r"-?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(?:[eE][-+]?[0-9]+)?")',
        '_REAL = re.compile(r"-?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(?:e[-+]?[0-9]+)?")',
        UX,
    ),
    p("u03", CLI, "            if math.isfinite(value):", "            if not math.isnan(value):", UX),
    p(
        "u04",
        CLI,
        '_NON_FINITE = re.compile(r"[-+]?(?:nan|inf|infinity)", re.IGNORECASE)',
        '_NON_FINITE = re.compile(r"[-+]?(?:nan|inf|infinity)")',
        UX,
    ),
    p(
        "u05",
        CLI,
        '        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}{hint}")',
        '        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")',
        UX,
    ),
    p(
        "u06",
        CLI,
        '        self.register("type", float, real())  # every `type=float` option\n',
        "",
        UX,
    ),
    p(
        "u07",
        CMAIN,
        '            value = real(f"a finite number at least {low}")(text)',
        "            value = float(text)",
        UX,
    ),
    p(
        "u08",
        CMAIN,
        '    value = real("a number of minutes above 0", " (leave the option out for no time limit)")(text)',
        "    value = float(text)",
        UX,
    ),
    # ------------------------------------------------------------------ walk-through 34: a count of one
    p(
        "u09",
        ERR,
        "    return f\"{n} {noun if n == 1 else plural or noun + 's'}\"",
        "    return f\"{n} {noun if n <= 1 else plural or noun + 's'}\"",
        MSG,
    ),
    p(
        "u10",
        WARM,
        "    return f\"{said} {noun[:-1] if said == '1' else noun}\" if noun else said",
        "    return f\"{said} {noun[:-1] if said.startswith('1') else noun}\" if noun else said",
        MSG,
    ),
    p(
        "u11",
        WARM,
        "in {self.dtype}: {counted(self.passes, 'pass', 'passes')} ",
        "in {self.dtype}: {counted(self.passes, 'pass')} ",
        MSG,
    ),
    p(
        "u12",
        CKPT,
        "                f\"{'is' if len(missing) == 1 else 'are'} missing: \"",
        "                f\"{'is' if len(shards) == 1 else 'are'} missing: \"",
        MSG,
    ),
    p(
        "u13",
        REPROOF,
        '        verb = "is" if report.examples_per_entry == 1 else "are"',
        '        verb = "are" if report.examples_per_entry == 1 else "is"',
        MSG,
    ),
    p(
        "u14",
        CERTIFY,
        "            f\"{'was' if written == 1 else 'were'} written into the tables{also}; \"",
        "            f\"{'was' if len(failures) == 1 else 'were'} written into the tables{also}; \"",
        MSG,
    ),
    p(
        "u15",
        RUNPY,
        "            f\"at most {counted(span - 1, 'token')}\"",
        "            f\"at most {counted(span, 'token')}\"",
        MSG,
    ),
    p(
        "u16",
        TOK,
        '                tokens = "token" if value == 1 else "tokens"',
        '                tokens = "token" if prompt_len == 1 else "tokens"',
        MSG,
    ),
    # ------------------------------------------------------------------ walk-through 34: remove, --help
    p(
        "u17",
        STORE,
        "    return replace(model, freed=held - _bytes_under(trash))",
        "    return replace(model, freed=held)",
        UX,
    ),
    p(
        "u18",
        STORE,
        "                total += os.lstat(os.path.join(where, file)).st_size",
        "                total += os.stat(os.path.join(where, file)).st_size",
        UX,
    ),
    p("u19", STORE, "        if found != size:", "        if found < size:", UX),
    p(
        "u21",
        CSTORE,
        "    freed = model.size if model.freed is None else model.freed",
        "    freed = model.size if not model.freed else model.freed",
        UX,
    ),
    p(
        "u22",
        CLI,
        'help="random seed for sampling (default: none, each run differs; 0 <= S < 2**64)",',
        'help="random seed for sampling (default: none, each run differs; 0 <= S <= 2**64)",',
        UX,
    ),
    # ------------------------------------------------------------------ walk-through 34b: signals and partial reports
    p(
        "i01",
        CMAIN,
        '        said = "interrupted" if signum == signal.SIGINT else f"terminated',
        '        said = "interrupted" if signum != signal.SIGTERM else f"terminated',
        IN,
    ),
    p("i02", CMAIN, "        return 128 + signum\n", "        return 128 + signal.SIGINT\n", IN),
    p(
        "i03",
        CMAIN,
        "        for number, handler in previous.items():\n            signal.signal(number, handler)",
        "        for number, handler in previous.items():\n            if number == signal.SIGINT:\n"
        "                signal.signal(number, handler)",
        IN,
    ),
    p(
        "i04",
        WORKERS,
        '("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))',
        '("SIGINT", "SIGTERM") if hasattr(signal, name))',
        IN,
    ),
    p(
        "i05",
        WORKERS,
        "exitcode in {*(128 + n for n in INTERRUPTING), *(-n for n in INTERRUPTING)}",
        "exitcode in {128 + n for n in INTERRUPTING}",
        IN,
    ),
    p(
        "i06",
        WORKERS,
        "        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)",
        "        ctypes.CDLL(None, use_errno=True).prctl(2, signal.SIGKILL)",
        IN,
    ),
    p(
        "i07",
        WORKERS,
        "        os._exit(128 + signal.SIGKILL)\n",
        "        return\n",
        IN,
    ),
    p(
        "i08",
        WORKERS,
        "    _quiet_on_interrupts()\n    _die_with_parent()\n    _share_cores(workers)\n    _see_only(devices.get())",
        "    _quiet_on_interrupts()\n    _share_cores(workers)\n    _see_only(devices.get())",
        IN,
    ),
    p(
        "i09",
        WORKERS,
        "    _quiet_on_interrupts()\n    _die_with_parent()\n    _share_cores(workers)\n    _see_only(device)",
        "    signal.signal(signal.SIGINT, _interrupted)\n    _die_with_parent()\n"
        "    _share_cores(workers)\n    _see_only(device)",
        IN,
    ),
    p(
        "i11",
        WORKERS,
        "        self.close(kill=kind is not None and issubclass(kind, KeyboardInterrupt))",
        "        self.close()",
        IN,
    ),
    p(
        "i13",
        WORKERS,
        "            exc.done = {i: r for i, r in enumerate(results) if r is not None}  # type: ignore[attr-defined]\n"
        "            raise\n        return results, any(",
        "            exc.done = {i: r for i, r in enumerate(results)}  # type: ignore[attr-defined]\n"
        "            raise\n        return results, any(",
        IN,
    ),
    p(
        "i14",
        CHECK,
        "isinstance(result, workers.Crashed) and workers.ended_by_interrupt(result.exitcode)",
        "isinstance(result, workers.Crashed)",
        IN,
    ),
    p(
        "i15",
        CHECK,
        "            report.left = len(work) - (len(report.results) - before)\n"
        "            report.stopped, report.seconds",
        "            report.left = len(work) - len(report.results)\n            report.stopped, report.seconds",
        IN,
    ),
    p(
        "i16",
        CHECK,
        '            report.stopped, report.seconds = "interrupted", time.perf_counter() - start',
        '            report.stopped = "interrupted"',
        IN,
    ),
    p(
        "i17",
        CHECK,
        '            "stopped": self.stopped if self.left else None,',
        '            "stopped": self.stopped,',
        IN,
    ),
    p(
        "i18",
        CMAIN,
        "        if partial is not None and partial.results:",
        "        if partial is not None:",
        IN,
    ),
    # ------------------------------------------------------------------ kernel-mutant round 10: the bf16 probe
    p(
        "k01",
        CHECK,
        "                d: -(-max(lo, 1) // multiple_of.get(d, 1)) * multiple_of.get(d, 1) for d, (lo, _) in",
        "                d: max(lo, 1) // multiple_of.get(d, 1) * multiple_of.get(d, 1) for d, (lo, _) in",
        BF,
    ),
    p(
        "k02",
        CHECK,
        "                d: -(-max(lo, 1) // multiple_of.get(d, 1)) * multiple_of.get(d, 1) for d, (lo, _) in",
        "                d: -(-lo // multiple_of.get(d, 1)) * multiple_of.get(d, 1) for d, (lo, _) in",
        BF,
    ),
    p(
        "k03",
        CHECK,
        '    case = build(kernel, "bf16", shape, Values("bf16", dev, 0, ("normal",)))',
        '    case = build(kernel, "bf16", shape, Values("fp16", dev, 0, ("normal",)))',
        BF,
    ),
    p(
        "k04",
        CHECK,
        '                result.passed, result.failure = False, f"{kernel} bf16, config {config}\\n{wrong}"',
        '                result.failure = f"{kernel} bf16, config {config}\\n{wrong}"',
        BF,
    ),
    p(
        "k05",
        CHECK,
        '        elif dtype == BF16_STAND_IN and dev.type == "cpu":',
        '        elif dtype in (BF16_STAND_IN, "fp32") and dev.type == "cpu":',
        BF,
    ),
]
