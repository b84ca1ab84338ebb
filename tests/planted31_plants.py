"""Round 31's planted bugs, in the code the last session merged and no round planted: strict round 35 (the blocks a
launcher derives from the call's shape and Triton's tensor limit, ``plan.shape_problem``; a setting that runs its
domain's smallest call but not this one blamed on the call, not the tables; shard names past 255 bytes; the
preflight's rotary tables made as shapes only), strict round 36 (``memory.host_memory`` and the CPU plan checked
against it, exit 5), and lines of gate round 34 (the lock reader and the closure check), text round 30 (the byte
rule, the decay's eos refusal), kernel-mutant round 6 (the store clash's report, the launch recorder, explicit shapes)
and walk-through 31 (a missing dependency, ``NEUROBRIX_TABLES``, ``mutants --list``) that round 30 left unplanted, for
tests/planted31_driver.py: id, file, the exact text replaced, its replacement, and the existing tests that exercise
it (the outcome of each: tests/test_planted31.py's docstring)."""

from __future__ import annotations

PL = ["tests/test_strict_round35.py", "tests/test_strict_round15.py"]
CK = ["tests/test_strict_round35.py", "tests/test_loading_planted.py"]
MO = ["tests/test_strict_round35.py", "tests/test_engine.py"]
MM = ["tests/test_strict_round36.py", "tests/test_memory.py"]
GW = ["tests/test_gate_round34.py", "-k", "not egg_info and not shadowing and not stubs and not other_formats"]
RY = ["tests/test_gate_round34.py", "tests/test_workflows.py", "-k", "not egg_info and not shadowing and not stubs"]
TK = ["tests/test_text_round30.py", "tests/test_tokenizer.py", "tests/test_planted23.py", "tests/test_planted30.py"]
TK += ["-k", "byte or stream or wait"]
DC = ["tests/test_text_round30.py", "tests/test_text_round29.py", "tests/test_text_round14.py"]
DC += ["tests/test_planted28.py", "tests/test_planted29.py", "tests/test_planted30.py"]
KM = ["tests/test_kmut6.py", "tests/test_planted30.py", "-k", "store or launch or switch or explicit or clash"]
WC = ["tests/test_walkthrough31.py", "tests/test_cli.py", "tests/test_planted30.py"]
WT = ["tests/test_walkthrough31.py", "tests/test_planted30.py", "tests/test_gate_units.py", "-k", "track or tables"]
WM = ["tests/test_walkthrough31.py", "tests/test_conformance.py", "-k", "mutants or list"]

PLAN, CKPT, MODEL, MEM, RUN = (
    "neurobrix/plan.py",
    "neurobrix/checkpoint.py",
    "neurobrix/model.py",
    "neurobrix/memory.py",
    "neurobrix/run.py",
)
TOK, GEN, CLI, TAB = "neurobrix/tokenizer.py", "neurobrix/generate.py", "neurobrix/cli.py", "neurobrix/tables.py"
HAR, CHK, CMAIN = "conformance/harness.py", "conformance/check.py", "conformance/__main__.py"
GR34, WF, REL = "tests/test_gate_round34.py", "tests/test_workflows.py", ".github/workflows/release.yml"


def p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


PLANTS = [
    # ------------------------------------------------------------------ plan: blocks derived from the call's shape
    p(
        "p01",
        PLAN,
        "    return 1 << max(0, value - 1).bit_length()\n",
        "    return 1 << max(0, value).bit_length()\n",
        PL,
    ),
    p(
        "p02",
        PLAN,
        '        return {"BLOCK_N": _pow2_at_least(dims["N"])}\n',
        '        return {"BLOCK_N": dims["N"]}\n',
        PL,
    ),
    p(
        "p03",
        PLAN,
        '        return {"BLOCK_E": 2 * _pow2_at_least(dims["D"] // 2)}\n',
        '        return {"BLOCK_E": _pow2_at_least(dims["D"] // 2)}\n',
        PL,
    ),
    p(
        "p04",
        PLAN,
        '        return {"PARTS": _pow2_at_least(-(-dims["V"] // config["BLOCK_V"]))}\n',
        '        return {"PARTS": _pow2_at_least(dims["V"] // config["BLOCK_V"])}\n',
        PL,
    ),
    p(
        "p05",
        PLAN,
        "    for name, value in derived.items():\n        if value > numel:",
        "    for name, value in derived.items():\n        if value >= numel:",
        PL,
    ),
    p(
        "p06",
        PLAN,
        "        if tile > numel and (first in derived or second in derived):\n",
        "        if tile >= numel and (first in derived or second in derived):\n",
        PL,
    ),
    p(
        "p07",
        PLAN,
        "        if tile > numel and (first in derived or second in derived):\n",
        "        if tile > numel and (first in derived and second in derived):\n",
        PL,
    ),
    p(
        "p08",
        PLAN,
        '        ("BLOCK_G", "BLOCK_D"),\n        ("BLOCK_G", "BLOCK_N"),\n',
        '        ("BLOCK_G", "BLOCK_N"),\n',
        PL,
    ),
    p("p09", PLAN, '        ("BLOCK_S", "BLOCK_D"),\n', "", PL),
    p(
        "p10",
        PLAN,
        '    "attention_prefill": (("BLOCK_M", "BLOCK_D"), ("BLOCK_N", "BLOCK_D")),\n',
        '    "attention_prefill": (("BLOCK_M", "BLOCK_D"),),\n',
        PL,
    ),
    p("p11", PLAN, '    "rotary": (("BLOCK_H", "BLOCK_E"),),\n', "", PL),
    p("p12", PLAN, "            problem = problem or shape_problem(kernel, entry.config, call)\n", "", PL),
    p(
        "p13",
        PLAN,
        "                    or limit_problem(kernel, entry.config, smallest, klass)\n",
        "                    or limit_problem(kernel, entry.config, call, klass)\n",
        PL,
    ),
    p(
        "p14",
        PLAN,
        "                    or shape_problem(kernel, entry.config, smallest)\n",
        "                    or shape_problem(kernel, entry.config, call)\n",
        PL,
    ),
    p(
        "p16",
        PLAN,
        "f\"{describe(call).strip()} ({dict(entry.config)}) {problem} at this call's shape",
        "f\"{describe(smallest).strip()} ({dict(entry.config)}) {problem} at this call's shape",
        PL,
    ),
    p(
        "p17",
        PLAN,
        '"BLOCK_G": max(16, _pow2_at_least(dims["G"]))',
        '"BLOCK_G": max(16, _pow2_at_least(dims["D"]))',
        PL,
    ),
    p("p19", PLAN, '    if kernel.startswith("attention_"):\n', '    if kernel == "attention_prefill":\n', PL),
    # ------------------------------------------------------------------ checkpoint: shard names past 255 bytes
    p(
        "c01",
        CKPT,
        'len(part.encode("utf-8", "surrogatepass")) > 255]',
        'len(part.encode("utf-8", "surrogatepass")) > 256]',
        CK,
    ),
    p(
        "c02",
        CKPT,
        'len(part.encode("utf-8", "surrogatepass")) > 255]',
        'len(part.encode("utf-8", "surrogatepass")) >= 255]',
        CK,
    ),
    p(
        "c03",
        CKPT,
        'len(part.encode("utf-8", "surrogatepass")) > 255]',
        "len(part) > 255]",
        CK,
    ),
    p(
        "c04",
        CKPT,
        "({len(long[0].encode('utf-8', 'surrogatepass'))} bytes)",
        "({len(long[0])} bytes)",
        CK,
    ),
    # ------------------------------------------------------------------ model: the preflight's shapes-only tables
    p(
        "o02",
        MODEL,
        '        if device.type == "meta" and capacity <= cfg.max_positions:\n',
        "        if capacity <= cfg.max_positions:\n",
        MO,
    ),
    p(
        "o03",
        MODEL,
        '        if device.type == "meta" and capacity <= cfg.max_positions:\n',
        '        if device.type == "meta":\n',
        MO + ["tests/test_text_round14.py", "tests/test_config.py"],
    ),
    # ------------------------------------------------------------------ memory: the host's plan and figure
    p("h01", MEM, "    reserve = 0 if host else RESERVE\n", "    reserve = RESERVE if host else 0\n", MM),
    p(
        "h02",
        MEM,
        "    if need.total <= free:\n        return need\n",
        "    if need.total < free:\n        return need\n",
        MM,
    ),
    p(
        "h03",
        MEM,
        "                    return int(line.split()[1]) * 1024, total",
        "                    return int(line.split()[1]) * 1000, total",
        MM,
    ),
    p(
        "h04",
        MEM,
        '                if line.startswith("MemAvailable:"):\n',
        '                if line.startswith("MemFree:"):\n',
        MM,
    ),
    p(
        "h05",
        MEM,
        "    return (total if total is not None else 0), total\n",
        "    return 0, total\n",
        MM,
    ),
    p(
        "h06",
        MEM,
        "    except (OSError, ValueError, IndexError):\n        pass\n",
        "    except OSError:\n        pass\n",
        MM,
    ),
    p(
        "h07",
        MEM,
        '        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")\n',
        '        total = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")\n',
        MM,
    ),
    p(
        "h08",
        MEM,
        "{'a larger memory limit' if cgroup else 'a larger host' if host else 'another GPU'}",
        "{'a larger memory limit' if cgroup else 'another GPU' if host else 'a larger host'}",
        MM,
    ),
    p(
        "h09",
        MEM,
        "{'margin' if host else 'reserve'}",
        "{'reserve' if host else 'margin'}",
        MM,
    ),
    p(
        "h10",
        MEM,
        "    fits = longest_context(cfg, itemsize, batch, free, reserve, names)\n",
        "    fits = longest_context(cfg, itemsize, batch, free, names=names)\n",
        MM,
    ),
    p(
        "h11",
        MEM,
        "        return int((self.weights + self.kv_cache + self.activations) * MARGIN) + self.reserve\n",
        "        return int((self.weights + self.kv_cache + self.activations) * MARGIN) + RESERVE\n",
        MM,
    ),
    p(
        "h12",
        MEM,
        "require_fit(cfg, itemsize, batch, prompt, capacity, free, total, True, cgroup, what, lengths, names",
        "require_fit(cfg, itemsize, batch, prompt, capacity, free, total, False, cgroup, what, lengths, names",
        MM,
    ),
    p("h13", MEM, "    free, total = host_memory()\n    limited", "    total, free = host_memory()\n    limited", MM),
    p(
        "h14",
        MEM,
        '    where, state = ("host memory", "available") if host else ("GPU memory", "free")\n',
        '    where, state = ("host memory", "free") if host else ("GPU memory", "free")\n',
        MM,
    ),
    p(
        "h15",
        MEM,
        "                    return int(line.split()[1]) * 1024, total",
        "                    return int(line.split()[-1]) * 1024, total",
        MM,
    ),
    # ------------------------------------------------------------------ gate round 34: the lock reader, the closure
    p(
        "g21",
        GR34,
        '    if words[:4] != ["python", "-m", "pip", "install"]:\n',
        '    if words[1:4] != ["-m", "pip", "install"]:\n',
        GW,
    ),
    p(
        "g22",
        GR34,
        "            if canonicalize_name(requirement.name) not in pins:\n",
        "            if requirement.name not in pins:\n",
        GW,
    ),
    p("g23", WF, '        assert found[1] not in pins, f"{found[1]} twice"\n', "", GW),
    p(
        "g24",
        WF,
        'LOCK_HASH = re.compile(r"^--hash=sha256:[0-9a-f]{64}$")\n',
        'LOCK_HASH = re.compile(r"^--hash=sha256:[0-9a-f]+$")\n',
        GW,
    ),
    p(
        "g25",
        GR34,
        '"platform_system": "Linux", "os_name": "posix",',
        '"platform_system": "Linux", "os_name": "nt",',
        GW,
    ),
    p(
        "y03",
        REL,
        "          python -m pip install --require-hashes --only-binary :all: -r publish-lock/",
        "          python -m pip install --require-hashes -r publish-lock/",
        RY,
    ),
    # ------------------------------------------------------------------ text round 30: the byte rule, the decay
    p(
        "t11",
        TOK,
        'raw.startswith(b"<0x") and raw.endswith(b">") and',
        'raw.startswith(b"<0x") and',
        TK,
    ),
    p("t12", TOK, "    return len(raw) == 6 and raw.startswith(", "    return len(raw) >= 6 and raw.startswith(", TK),
    p(
        "t14",
        GEN,
        "        if decay is not None and self.eos and length > decay[0] + self.prompt_len:\n",
        "        if decay is not None and self.eos and length >= decay[0] + self.prompt_len:\n",
        DC,
    ),
    p(
        "t15",
        GEN,
        "outside the vocabulary of {vocab} ({outside!r}) from ",
        "outside the vocabulary of {vocab} ({list(eos)!r}) from ",
        DC,
    ),
    # ------------------------------------------------------------------ kmut6: the clash's report, the recorder
    p(
        "m21",
        HAR,
        "                    a, b = (int(owner[i]), int(owner[i + 1]))\n",
        "                    a, b = (int(owner[i]), int(owner[i]))\n",
        KM,
    ),
    p(
        "m22",
        HAR,
        '                        return f"({n % nx}, {n // nx % ny}, {n // (nx * ny)})"\n',
        '                        return f"({n % nx}, {n // ny % nx}, {n // (nx * ny)})"\n',
        KM,
    ),
    p(
        "m23",
        HAR,
        "                every, owner = every[order], owner[order]\n",
        "                every, owner = every, owner\n",
        KM,
    ),
    p("m24", HAR, "            if not warmup:\n", "            if warmup:\n", KM),
    p("m25", CHK, "            and all(shape[d] % m == 0 for d, m in multiple_of.items())\n", "", KM),
    # ------------------------------------------------------------------ walk-through 31
    p(
        "w21",
        CLI,
        '`neurobrix doctor` reports torch and triton)",\n            1,\n',
        '`neurobrix doctor` reports torch and triton)",\n            2,\n',
        WC,
    ),
    p(
        "w22",
        CLI,
        "            raise\n        if args.debug:\n            traceback.print_exc()\n",
        "            raise\n        if not args.debug:\n            traceback.print_exc()\n",
        WC,
    ),
    p("w23", CLI, '    "yaml": "pyyaml",\n', "", WC),
    p(
        "w24",
        TAB,
        'f"{ENV_VAR}={root} names no tables folder: point it at one',
        'f"{ENV_VAR}={path} names no tables folder: point it at one',
        WT,
    ),
    p("w25", CMAIN, "        wide = max((len(m.id) for m in chosen), default=0)\n", "        wide = 44\n", WM),
]
