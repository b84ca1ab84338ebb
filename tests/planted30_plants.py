"""Round 30's planted bugs, in the code merged on 2026-12-05 and not planted before: strict round 34 (the index row
pass stepping aside for a dtype that is a list or an object; the stack rule's hash of the imported ``__init__.py``
against the install's RECORD), gate round 34 (the install reader of tests/test_gate_round34.py and the workflow
tests' lock reader it calls, and release.yml's locked installs), text round 30 (the byte-token rule built from the
ByteFallback decoder's, the decay refused at the token where it applies), kernel-mutant round 6 (``launch_switches``,
the interpreter guard on two programs storing one element, ``Small.explicit``), walk-through round 31 (doctor
without torch, ``NEUROBRIX_TABLES`` without TRACKED.yaml, ``conformance.bind`` beside bound records, ``affected
--help``, ``mutants --list`` columns, an interrupted run's line end, a missing dependency named) and run's "encode to
no tokens" message, for tests/planted30_driver.py: id, file, the exact text replaced, its replacement, and the
existing tests that exercise it (the outcome of each: tests/test_planted30.py's docstring)."""

from __future__ import annotations

SR = ["tests/test_strict_round34.py", "tests/test_tables.py"]
ST = ["tests/test_strict_round34.py", "tests/test_stack.py", "tests/test_strict_round21.py"]
ST += ["tests/test_strict_round30.py", "tests/test_planted28.py"]
GW = ["tests/test_gate_round34.py", "-k", "not egg_info and not shadowing and not stubs and not other_formats"]
RY = ["tests/test_gate_round34.py", "tests/test_workflows.py", "-k", "not egg_info and not shadowing and not stubs"]
TK = ["tests/test_text_round30.py", "tests/test_tokenizer.py", "tests/test_planted23.py"]
DC = ["tests/test_text_round30.py", "tests/test_text_round29.py", "tests/test_text_round14.py"]
DC += ["tests/test_planted28.py", "tests/test_planted29.py"]
KM = ["tests/test_kmut6.py"]
WT = ["tests/test_walkthrough31.py"]
WC = ["tests/test_walkthrough31.py", "tests/test_cli.py"]
WD = ["tests/test_walkthrough31.py", "tests/test_newcomer.py", "tests/test_strict_round34.py"]
WB = ["tests/test_walkthrough31.py", "tests/test_newcomer30.py", "tests/test_planted25.py", "tests/test_planted28.py"]
WM = ["tests/test_walkthrough31.py", "tests/test_conformance.py", "-k", "mutants or affected or list or bind"]
RN = ["tests/test_cli.py", "-k", "prompt or token or empty"]

SCH, STK, TOK, GEN, RUN = (
    "neurobrix/schema.py",
    "neurobrix/stack.py",
    "neurobrix/tokenizer.py",
    "neurobrix/generate.py",
    "neurobrix/run.py",
)
CLI, DOC, TAB = "neurobrix/cli.py", "neurobrix/doctor.py", "neurobrix/tables.py"
HAR, CHK, LIN = "conformance/harness.py", "conformance/check.py", "conformance/specs/linear.py"
BIND, CMAIN = "conformance/bind.py", "conformance/__main__.py"
GR34, WF, REL = "tests/test_gate_round34.py", "tests/test_workflows.py", ".github/workflows/release.yml"


def p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


PLANTS = [
    # ------------------------------------------------------------------ schema: the row pass steps aside
    p(
        "r01",
        SCH,
        "unhashable, and no dtype's name\n        return None\n",
        "unhashable, and no dtype's name\n        dtypes = set()\n",
        SR,
    ),
    p("r02", SCH, "    if not dtypes <= _DTYPE_TUPLES:\n", "    if not dtypes:\n", SR),
    p(
        "r03",
        SCH,
        "        dtypes = {tuple(row[0]) for row in entries}\n",
        "        dtypes = {tuple(map(str, row[0])) for row in entries}\n",
        SR,
    ),
    # ------------------------------------------------------------------ stack: the record's hash of __init__.py
    p("k01", STK, "                if _hash_matches(listed, init):\n", "                if True:\n", ST),
    p("k02", STK, "    if not value:\n        return True\n", "    if not value:\n        return False\n", ST),
    p(
        "k03",
        STK,
        '    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == value\n',
        "    return base64.urlsafe_b64encode(digest).decode() == value\n",
        ST,
    ),
    p(
        "k04",
        STK,
        "not shown to be the one listed\n        return False\n",
        "not shown to be the one listed\n        return True\n",
        ST,
    ),
    p("k05", STK, '    fields = line.rsplit(",", 2)\n', '    fields = line.split(",", 2)\n', ST),
    p("k06", STK, '    end = record.find("\\n", start)\n', '    end = record.find("\\n", start + 1)\n', ST),
    p("k07", STK, '    start = f"\\n{record}".find(f"\\n{path},")\n', '    start = record.find(f"{path},")\n', ST),
    p(
        "k08",
        STK,
        "    if others:\n        raise CompilerStackError(",
        "    if others and False:\n        raise CompilerStackError(",
        ST,
    ),
    p(
        "k09",
        STK,
        "                others.append(f\"{dist.metadata['Name']} {dist.version}\")\n",
        "                return str(dist.version)\n",
        ST,
    ),
    # ------------------------------------------------------------------ gate round 34: the install reader, the locks
    p(
        "g01",
        GR34,
        'INSTALLER = re.compile(r"(^|[\\s/])(pip(3(\\.\\d+)?)?|uv|',
        'INSTALLER = re.compile(r"(^|[\\s])(pip(3(\\.\\d+)?)?|uv|',
        GW,
    ),
    p(
        "g02",
        GR34,
        'INSTALLER = re.compile(r"(^|[\\s/])(pip(3(\\.\\d+)?)?|uv|',
        'INSTALLER = re.compile(r"(^|[\\s/])(pip(3)?|uv|',
        GW,
    ),
    p(
        "g03",
        GR34,
        '    commands = [c.strip() for c in re.split(r"\\n|;|&&|\\|\\||\\|", joined)]\n',
        '    commands = [c.strip() for c in re.split(r"\\n|;", joined)]\n',
        GW,
    ),
    p("g04", GR34, '    joined = re.sub(r"\\\\\\n", " ", script)\n', "    joined = script\n", GW),
    p(
        "g05",
        GR34,
        "    if sorted(options) == sorted(PROJECT_ALONE):\n        return None\n",
        "    if set(options) <= set(PROJECT_ALONE):\n        return None\n",
        GW,
    ),
    p(
        "g06",
        GR34,
        '    if rest.count("-r") != 1 or rest.index("-r") == len(rest) - 1:\n',
        '    if "-r" not in rest:\n',
        GW,
    ),
    p(
        "g07",
        GR34,
        "    if sorted(rest) != sorted(HASHED):\n",
        "    if not set(HASHED) <= set(rest):\n",
        GW,
    ),
    p(
        "g08",
        GR34,
        'if lock == name or lock.endswith("/" + name)]',
        "if lock.endswith(name)]",
        GW,
    ),
    p(
        "g09",
        GR34,
        '    lock_pins(known[0].read_text(encoding="utf-8"))  # every line pinned and hashed',
        "    # every line pinned and hashed",
        GW,
    ),
    p(
        "g11",
        WF,
        '        assert options and all(LOCK_HASH.match(o) for o in options), f"not only sha256 hashes: {line!r}"\n',
        '        assert all(LOCK_HASH.match(o) for o in options), f"not only sha256 hashes: {line!r}"\n',
        GW,
    ),
    p(
        "g12",
        GR34,
        "        if requirement.marker is None or requirement.marker.evaluate(JOB_ENVIRONMENT):\n",
        "        if requirement.marker is None:\n",
        GW,
    ),
    p(
        "y01",
        REL,
        "          python -m pip install --require-hashes --only-binary :all: -r .github/gate/requirements.txt\n"
        "          python -m pip install --no-deps --no-build-isolation --no-index -e .\n\n"
        "      # python -m build",
        "          python -m pip install --require-hashes -r .github/gate/requirements.txt\n"
        "          python -m pip install --no-deps --no-build-isolation --no-index -e .\n\n"
        "      # python -m build",
        RY,
    ),
    p(
        "y02",
        REL,
        "          python -m pip install --no-deps --no-build-isolation --no-index -e .\n\n"
        "      - name: Download the built files",
        "          python -m pip install --no-deps --no-build-isolation -e .\n\n      - name: Download the built files",
        RY,
    ),
    # ------------------------------------------------------------------ tokenizer: the ByteFallback rule
    p("t01", TOK, '_RADIX_16 = re.compile(rb"\\+?[0-9A-Fa-f]+")\n', '_RADIX_16 = re.compile(rb"[0-9A-Fa-f]+")\n', TK),
    p("t02", TOK, '_RADIX_16 = re.compile(rb"\\+?[0-9A-Fa-f]+")\n', '_RADIX_16 = re.compile(rb"\\+?[0-9A-F]+")\n', TK),
    p(
        "t03",
        TOK,
        '    raw = token.encode("utf-8")\n    return len(raw) == 6 and',
        '    raw = token.encode("utf-8")\n    return len(token) == 6 and',
        TK,
    ),
    p(
        "t04",
        TOK,
        "bool(_RADIX_16.fullmatch(raw[3:5]))",
        "bool(_RADIX_16.match(raw[3:5]))",
        TK,
    ),
    p(
        "t05",
        TOK,
        'found = {i for token, i in vocab if token.startswith("<0x") and _fallback_byte(token)}',
        'found = {i for token, i in vocab if token.startswith("<0x") and len(token) == 6}',
        TK,
    ),
    p(
        "t06",
        TOK,
        "            vocab = self._tok.get_vocab(with_added_tokens=True).items()\n            found = {",
        "            vocab = self._tok.get_vocab(with_added_tokens=False).items()\n            found = {",
        TK,
    ),
    # ------------------------------------------------------------------ decay: refused at the token where it applies
    p(
        "x01",
        GEN,
        "    outside = sorted(e for e in eos if not 0 <= e < vocab)\n",
        "    outside = sorted(e for e in eos if not 0 <= e <= vocab)\n",
        DC,
    ),
    p(
        "x02",
        GEN,
        'f"new token {length - prompt_len + 1} on (the model',
        'f"new token {length - prompt_len} on (the model',
        DC,
    ),
    p(
        "x03",
        GEN,
        "                if vocab is not None:\n"
        + " " * 20
        + "decay_eos_check(decay, eos, vocab, prompt_len, length)\n",
        "",
        DC,
    ),
    p(
        "x04",
        GEN,
        "            decay_eos_check(decay, self.eos, vocab, self.prompt_len, length)  # (eos is then",
        "            pass  # (eos is then",
        DC,
    ),
    p(
        "x05",
        RUN,
        "failing = decay_failure(constraints, len(prompt), max_tokens, sorted(eos), cfg.vocab_size)",
        "failing = decay_failure(constraints, len(prompt), max_tokens)",
        DC,
    ),
    p(
        "x06",
        TOK,
        "                if any(e < 0 for e in eos):  # ExponentialDecayLengthPenalty.__init__ refuses them\n",
        "                if any(e < 0 or e >= vocab for e in eos):  # ExponentialDecayLengthPenalty.__init__\n",
        DC,
    ),
    p(
        "x07",
        TOK,
        "                if any(e < 0 for e in eos):  # ExponentialDecayLengthPenalty.__init__",
        "                if False:  # ExponentialDecayLengthPenalty.__init__",
        DC,
    ),
    # ------------------------------------------------------------------ run: text that encodes to no tokens
    p(
        "n01",
        RUN,
        'what = no_tokens if opts.prompt and not templated else "the prompt is empty after tokenization"',
        'what = no_tokens if opts.prompt and not opts.chat else "the prompt is empty after tokenization"',
        RN,
    ),
    p("n04", RUN, "            if tokenizer.chat_template is not None\n", "            if True\n", RN),
    p(
        "n02",
        RUN,
        "f\"{no_tokens if opts.prompt else 'the prompt is empty'}: without a chat template",
        "f\"{'the prompt is empty'}: without a chat template",
        RN,
    ),
    # ------------------------------------------------------------------ kmut6: launch switches, stores, explicit
    p(
        "m01",
        HAR,
        "            if switch is not pdl or launch is not pdl:\n",
        "            if switch is not launch:\n",
        KM,
    ),
    p(
        "m02",
        HAR,
        "            if switch is not pdl or launch is not pdl:\n",
        "            if switch is not pdl:\n",
        KM,
    ),
    p(
        "m03",
        HAR,
        "    for pdl in (False, True):\n        launched:",
        "    for pdl in (False,):\n        launched:",
        KM,
    ),
    p(
        "m04",
        HAR,
        "    switches = launch_switches(case, config)  # how each kernel would start with PDL (nothing computed)\n"
        "    if switches:\n",
        "    switches = launch_switches(case, config)  # how each kernel would start with PDL (nothing computed)\n"
        "    if switches and False:\n",
        KM,
    ),
    p(
        "m05",
        HAR,
        '    if "pdl" not in inspect.signature(launcher).parameters:\n        return found',
        "    if False:\n        return found",
        KM + ["tests/test_conformance_planted.py"],
    ),
    p("m07", HAR, "            if len(stores) > 1:\n", "            if len(stores) > 2:\n", KM),
    p(
        "m08",
        HAR,
        "                programs = [(p, np.unique(np.concatenate(a))) for p, a in by_program.items()]\n",
        "                programs = [(p, np.concatenate(a)) for p, a in by_program.items()]\n",
        KM + ["tests/test_conformance.py", "-k", "pick or guard or memory"],
    ),
    p(
        "m09",
        HAR,
        '                _launch.setdefault("stores", []).append((x + nx * (y + ny * z), addresses.copy()))\n',
        '                _launch.setdefault("stores", []).append((x, addresses.copy()))\n',
        KM,
    ),
    p(
        "m10",
        HAR,
        '            addresses = check(ptrs, mask, "write")\n',
        '            addresses = check(ptrs, mask, "write")\n'
        "            if addresses is not None:  # every lane stored, the masked ones too\n"
        "                import numpy as np\n\n"
        "                shape = np.broadcast_shapes(ptrs.data.shape, mask.data.shape)\n"
        "                addresses = np.broadcast_to(ptrs.data, shape).astype(np.uint64).ravel()\n",
        KM + ["tests/test_conformance.py", "-k", "pick or guard or memory"],
    ),
    p(
        "m12",
        CHK,
        "            and all(lo <= shape[d] and (hi is None or shape[d] <= hi) for d, (lo, hi) in domain.items())\n",
        "",
        KM,
    ),
    p(
        "m13",
        LIN,
        '    second_group = {"M": group * block_m + 1, "N": block_n + 8, "K": block_k + 8}\n',
        '    second_group = {"M": group * block_m, "N": block_n + 8, "K": block_k + 8}\n',
        KM,
    ),
    p(
        "m14",
        CHK,
        '            conforms = example(shape=dict(shape), seed=0, kind="normal")(conforms)\n',
        "            pass\n",
        KM,
    ),
    # ------------------------------------------------------------------ walk-through 31
    p(
        "w01",
        DOC,
        "        torch_version = None  # the kernels need both: nothing past the store can be looked at\n",
        "",
        WD,
    ),
    p(
        "w02",
        DOC,
        "    if torch_version is None:  # torch or triton not installed (a FAIL above): the kernels import both\n"
        "        return found\n",
        "",
        WD,
    ),
    p(
        "w03",
        TAB,
        "            if origin == ENV_VAR\n",
        "            if origin is not None\n",
        WD + ["tests/test_gate_units.py", "tests/test_wheel.py", "-k", "track or tables or missing"],
    ),
    p(
        "w04",
        TAB,
        "    tracked, verified = _read_tracked(root, location.origin)\n",
        "    tracked, verified = _read_tracked(root, None)\n",
        WC,
    ),
    p(
        "w05",
        BIND,
        "            if _all_bound(data):  # certify wrote it",
        "            if False:  # certify wrote it",
        WB,
    ),
    p("w06", BIND, "    if not written:\n        raise TablesError(", "    if False:\n        raise TablesError(", WB),
    p(
        "w07",
        BIND,
        "        and bool(entries)\n        and all(",
        "        and all(",
        WB,
    ),
    p(
        "w08",
        BIND,
        'and isinstance(e.get("proof"), dict) and "entry" in e["proof"] for e in entries)',
        'and isinstance(e.get("proof"), dict) and "entry" in e["proof"] for e in entries[:1])',
        WB,
    ),
    p(
        "w09",
        CMAIN,
        "f\"tables/<class>/ affects that class; one under {', '.join(KERNEL_PATHS[:-1])} or {KERNEL_PATHS[-1]} \"",
        "f\"tables/<class>/ affects that class; one under {', '.join(KERNEL_PATHS[:-2])} or {KERNEL_PATHS[-1]} \"",
        WM,
    ),
    p(
        "w10",
        CMAIN,
        "        bugs = max((len(m.bug) for m in chosen), default=0)\n",
        "        bugs = 26\n",
        WM,
    ),
    p("w12", CLI, "        if text:\n            streamed[0] = text\n", "        streamed[0] = text\n", WC),
    p(
        "w13",
        CLI,
        "    except BaseException:  # Ctrl-C or a refusal mid-text",
        "    except KeyboardInterrupt:  # Ctrl-C or a refusal mid-text",
        WC,
    ),
    p(
        "w14",
        CLI,
        '    streamed = ["\\n"]  # the last text written\n',
        '    streamed = [""]  # the last text written\n',
        WC,
    ),
    p(
        "w15",
        CLI,
        '        module = (exc.name or "").partition(".")[0]\n',
        '        module = exc.name or ""\n',
        WC,
    ),
    p(
        "w16",
        CLI,
        "        if module not in DEPENDENCIES:\n            raise\n",
        "",
        WC,
    ),
]
