"""Round 34's planted bugs, in code merged in the thirty-third session that no round had planted: text round 33
(``read_prompt_file``'s "utf-8-sig" / ``newline=""`` reads of a file and of standard input, a closed standard input
refused, ``run --system`` and ``Tokenizer.encode_prompt(system=)`` / ``has_chat_template``), strict round 39
(tokenizer.py's refusals of generation settings transformers' generate fails on or reads otherwise: ``_number``,
``_without_beams``, ``_contrastive``, ``_whole``, ``_prompt_lookup``, ``GENERATE_CHECKS``, ``_read_otherwise``,
constraints / force_words_ids; config.py's id2label, is_encoder_decoder and Qwen2's sliding_window typing) and
walk-through 33 (numpy declared and named, conformance workers quiet on Ctrl-C, the conformance command's own SIGINT
handler raising a lost Ctrl-C again after the item under way), for tests/planted34_driver.py: id, file, the exact text
replaced, its replacement, and the existing tests that exercise it (the outcome of each: tests/test_planted34.py's
docstring)."""

from __future__ import annotations

TX = ["tests/test_text_round33.py", "tests/test_text_round27.py", "tests/test_strict_round14.py"]
TX += ["tests/test_cli.py", "tests/test_config.py", "-k", "prompt or system or template or stdin or chat"]
ST = ["tests/test_strict_round39.py", "tests/test_strict_round16.py", "tests/test_generation_planted.py"]
ST += ["tests/test_tokenizer.py"]
CF = ["tests/test_strict_round39.py", "tests/test_config.py"]
WK = ["tests/test_walkthrough33.py", "tests/test_conformance.py", "tests/test_contributor.py", "tests/test_cli.py"]
WK += ["-k", "interrupt or worker or signal or ctrl or depend or numpy or missing or declared"]

CLI, RUN, TOK, CONFIG = "neurobrix/cli.py", "neurobrix/run.py", "neurobrix/tokenizer.py", "neurobrix/config.py"
WORKERS, CMAIN, PYPROJECT = "conformance/workers.py", "conformance/__main__.py", "pyproject.toml"


def p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


PLANTS = [
    # ------------------------------------------------------------------ text round 33: --prompt-file, --system
    p(
        "t01",
        CLI,
        '            with open(path, encoding="utf-8-sig", newline="") as f:\n',
        '            with open(path, encoding="utf-8-sig") as f:\n',
        TX,
    ),
    p(
        "t02",
        CLI,
        '            with open(path, encoding="utf-8-sig", newline="") as f:\n',
        '            with open(path, encoding="utf-8", newline="") as f:\n',
        TX,
    ),
    p(
        "t03",
        CLI,
        'sys.stdin.reconfigure(encoding="utf-8-sig", errors="strict", newline="")',
        'sys.stdin.reconfigure(encoding="utf-8-sig", errors="strict")',
        TX,
    ),
    p(
        "t04",
        CLI,
        'sys.stdin.reconfigure(encoding="utf-8-sig", errors="strict", newline="")',
        'sys.stdin.reconfigure(encoding="utf-8-sig", errors="replace", newline="")',
        TX,
    ),
    p(
        "t05",
        CLI,
        "            if isinstance(sys.stdin, io.TextIOWrapper):",
        "            if isinstance(sys.stdin, io.TextIOBase):",
        TX,
    ),
    p(
        "t06",
        CLI,
        "            if sys.stdin is None:  # started with standard input closed",
        "            if sys.stdin is None and path != '-':  # started with standard input closed",
        TX,
    ),
    p(
        "t07",
        CLI,
        '        system=None if args.system is None else utf8_text(args.system, "--system"),\n',
        "        system=args.system,\n",
        TX,
    ),
    p(
        "t08",
        CLI,
        '        "--system",\n        empty_ok=True,\n        metavar="TEXT",\n',
        '        "--system",\n        metavar="TEXT",\n',
        TX,
    ),
    p(
        "t09",
        RUN,
        '    expect("RunOptions.system", opts.system, "a string", optional=True)\n',
        "",
        TX,
    ),
    p(
        "t10",
        RUN,
        "    if opts.system is not None and not (opts.chat and tokenizer.has_chat_template()):\n",
        "    if opts.system is not None and not opts.chat:\n",
        TX,
    ),
    p(
        "t11",
        RUN,
        "    if opts.system is not None and not (opts.chat and tokenizer.has_chat_template()):\n",
        "    if opts.system and not (opts.chat and tokenizer.has_chat_template()):\n",
        TX,
    ),
    p(
        "t12",
        RUN,
        '            + ("drop --no-chat" if not opts.chat else',
        '            + ("drop --no-chat" if opts.chat else',
        TX,
    ),
    p(
        "t13",
        RUN,
        "    prompt = tokenizer.encode_prompt(opts.prompt, chat=opts.chat, system=opts.system)\n",
        "    prompt = tokenizer.encode_prompt(opts.prompt, chat=opts.chat)\n",
        TX,
    ),
    p(
        "t14",
        TOK,
        "            if system is None:\n                return self.encode_chat([user])\n",
        "            if not system:\n                return self.encode_chat([user])\n",
        TX,
    ),
    p(
        "t15",
        TOK,
        '                return self.encode_chat([{"role": "system", "content": system}, user])\n',
        '                return self.encode_chat([user, {"role": "system", "content": system}])\n',
        TX,
    ),
    p(
        "t16",
        TOK,
        '        return self.chat_template is not None or "default" in self.unusable_templates\n',
        "        return self.chat_template is not None\n",
        TX,
    ),
    # ------------------------------------------------------------------ strict round 39: generation settings
    p(
        "g01",
        TOK,
        "    return isinstance(value, (bool, int, float))\n",
        "    return type(value) in (int, float)\n",
        ST,
    ),
    p(
        "g02",
        TOK,
        '        and settings.get("num_beams") in (None, 1)\n',
        '        and settings.get("num_beams") is None\n',
        ST,
    ),
    p(
        "g03",
        TOK,
        '        settings.get("constraints") is None\n        and settings.get("force_words_ids") is None\n',
        '        not settings.get("constraints")\n        and not settings.get("force_words_ids")\n',
        ST,
    ),
    p(
        "g04",
        TOK,
        "    return _number(value) and value > 0 and _number(top_k) and top_k > 1 and _without_beams(settings)\n",
        "    return _number(value) and value >= 0 and _number(top_k) and top_k > 1 and _without_beams(settings)\n",
        ST,
    ),
    p(
        "g05",
        TOK,
        "    return _number(value) and value > 0 and _number(top_k) and top_k > 1 and _without_beams(settings)\n",
        "    return _number(value) and value > 0 and _number(top_k) and top_k >= 1 and _without_beams(settings)\n",
        ST,
    ),
    p(
        "g06",
        TOK,
        "    return _number(value) and value > 0 and _number(top_k) and top_k > 1 and _without_beams(settings)\n",
        "    return _number(value) and value > 0 and _number(top_k) and top_k > 1\n",
        ST,
    ),
    p(
        "g07",
        TOK,
        '    top_k = settings.get("top_k", DEFAULT_TOP_K)\n    return _number(value)',
        '    top_k = settings.get("top_k", 1)\n    return _number(value)',
        ST,
    ),
    p(
        "g08",
        TOK,
        "    return type(value) is int and value >= least\n",
        "    return isinstance(value, int) and value >= least\n",
        ST,
    ),
    p(
        "g09",
        TOK,
        "    return type(value) is int and value >= least\n",
        "    return type(value) is int and value > least\n",
        ST,
    ),
    p(
        "g10",
        TOK,
        '    if tokens is None or settings.get("assistant_early_exit") is not None:\n',
        '    if tokens is None or settings.get("assistant_early_exit"):\n',
        ST,
    ),
    p(
        "g11",
        TOK,
        "    if not (isinstance(tokens, int) and tokens >= 1):  # true is 1 there, false 0\n",
        "    if not (isinstance(tokens, int) and tokens >= 0):  # true is 1 there, false 0\n",
        ST,
    ),
    p(
        "g12",
        TOK,
        "    if ngram and not (isinstance(ngram, int) and ngram >= 1):\n",
        "    if ngram is not None and not (isinstance(ngram, int) and ngram >= 1):\n",
        ST,
    ),
    p(
        "g13",
        TOK,
        "    if ngram and not (isinstance(ngram, int) and ngram >= 1):\n",
        "    if ngram and not ngram >= 1:\n",
        ST,
    ),
    p(
        "g14",
        TOK,
        '        if s["top_k"] is None or _number(s["top_k"]) or not _mode_compares(s)\n',
        '        if s["top_k"] is None or _number(s["top_k"])\n',
        ST,
    ),
    p(
        "g15",
        TOK,
        '        or not (_number(top_k := s.get("top_k", DEFAULT_TOP_K)) and top_k > 1)\n',
        '        or not (_number(top_k := s.get("top_k", DEFAULT_TOP_K)) and top_k >= 1)\n',
        ST,
    ),
    p(
        "g16",
        TOK,
        '        if s["assistant_early_exit"] is None or _whole(s["assistant_early_exit"], 0)\n',
        '        if s["assistant_early_exit"] is None or _whole(s["assistant_early_exit"], 1)\n',
        ST,
    ),
    p(
        "g17",
        TOK,
        '        if s.get("use_cache") is False\n',
        '        if not s.get("use_cache")\n',
        ST,
    ),
    p(
        "g18",
        TOK,
        "    if value is not None and not isinstance(value, bool) and not value:\n",
        "    if value is not None and value is not True and not value:\n",
        ST,
    ),
    p(
        "g19",
        TOK,
        "    if value is not None and not isinstance(value, bool) and not value:\n",
        "    if value is not None and not isinstance(value, bool):\n",
        ST,
    ),
    p(
        "g20",
        TOK,
        '        "use_cache",\n        "max_matching_ngram_size",\n',
        '        "max_matching_ngram_size",\n',
        ST,
    ),
    p(
        "g21",
        TOK,
        '    "force_words_ids": lambda v, settings: v is not None,\n',
        '    "force_words_ids": lambda v, settings: bool(v),\n',
        ST,
    ),
    p(
        "g22",
        TOK,
        '    "constraints": lambda v, settings: v is not None,\n',
        '    "constraints": lambda v, settings: isinstance(v, list),\n',
        ST,
    ),
    # ------------------------------------------------------------------ strict round 39: config.json
    p(
        "c01",
        CONFIG,
        "    if labels is not None and not _label_keys(labels):",
        "    if labels and not _label_keys(labels):",
        CF,
    ),
    p(
        "c02",
        CONFIG,
        "            int(key)\n    except ValueError:\n",
        "            int(key)\n    except TypeError:\n",
        CF,
    ),
    p(
        "c03",
        CONFIG,
        "        for key in labels:\n            int(key)\n",
        "        for key in labels:\n            if not key.isdigit():\n                raise ValueError(key)\n",
        CF,
    ),
    p(
        "c04",
        CONFIG,
        '    if data.get("is_encoder_decoder"):  # typed bool',
        '    if data.get("is_encoder_decoder") is True:  # typed bool',
        CF,
    ),
    p("c05", CONFIG, '        "sliding_window": "int?",\n', '        "sliding_window": "number?",\n', CF),
    p("c06", CONFIG, '        "sliding_window": "int?",\n', '        "sliding_window": "int",\n', CF),
    # ------------------------------------------------------------------ walk-through 33
    p("w01", PYPROJECT, '    "numpy>=1.24",\n', "", WK),
    p("w02", CLI, '    "numpy": "numpy",  # the Triton interpreter computes with it\n', "", WK),
    p(
        "w03",
        WORKERS,
        "    _quiet_on_interrupts()\n    _die_with_parent()\n    _share_cores(workers)\n    _see_only(devices.get())\n",
        "    _die_with_parent()\n    _share_cores(workers)\n    _see_only(devices.get())\n",
        WK,
    ),
    p(
        "w04",
        WORKERS,
        "    _quiet_on_interrupts()\n    _die_with_parent()\n    _share_cores(workers)\n    _see_only(device)\n",
        "    _die_with_parent()\n    _share_cores(workers)\n    _see_only(device)\n",
        WK,
    ),
    p("w05", WORKERS, "    os._exit(128 + signum)\n", "    raise SystemExit(128 + signum)\n", WK),
    p(
        "w06",
        WORKERS,
        "    _INTERRUPTS.append(signum)\n    raise KeyboardInterrupt\n",
        "    raise KeyboardInterrupt\n",
        WK,
    ),
    p(
        "w07",
        WORKERS,
        "                if on_done:\n                    on_done(i)\n"
        "                if _INTERRUPTS:  # a Ctrl-C lost while the item ran\n"
        "                    raise KeyboardInterrupt\n",
        "                if _INTERRUPTS:  # a Ctrl-C lost while the item ran\n"
        "                    raise KeyboardInterrupt\n"
        "                if on_done:\n                    on_done(i)\n",
        WK,
    ),
    p("w08", CMAIN, "        workers._INTERRUPTS.clear()\n", "", WK),
    p(
        "w09",
        CMAIN,
        "if main_thread and signal.getsignal(s) is (",
        "if signal.getsignal(s) is (",
        WK,
    ),
    p(
        "w10",
        CMAIN,
        "signal.getsignal(s) is (signal.default_int_handler if s == signal.SIGINT else signal.SIG_DFL)",
        "signal.getsignal(s) is not None",
        WK,
    ),
    p(
        "w11",
        CMAIN,
        "        for number, handler in previous.items():\n            signal.signal(number, handler)\n",
        "        pass\n",
        WK,
    ),
]
