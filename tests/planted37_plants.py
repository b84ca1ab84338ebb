"""Round 37's planted bugs, where the suite's power had been measured least: the source files of neurobrix/, gate/
and conformance/ (the kernels aside) with the fewest plants of tests/planted*_plants.py and conformance/mutants.py
per 100 lines, in what decides the guarantee: conformance/bounds.py (the error bounds check holds each kernel to:
1 plant in 736 lines), conformance/strategies.py (the shapes and guard bands it draws: none in 285),
conformance/certify.py (which tasks a range holds, the provenance a resumed table keeps, a failure's class: 1 in 914),
conformance/reproof.py (when a check stands for the whole class), neurobrix/stack.py's rule and environment refusals
(the torch/Triton rule, the re-proof's reading, Triton's knobs and backends, the installed kernels, the GPU a launch
runs on: 12 in 811, none in these functions), neurobrix/config.py's number and flag readers (6 in 688),
neurobrix/model.py's prefill chunks (4 in 351) and gate/checks.py's finding cap and gate/completeness.py's reference
list (2 each), for tests/planted37_driver.py: id, file, the exact text replaced, its replacement, and the existing
tests that exercise it (the outcome of each: tests/test_planted37.py's docstring)."""

from __future__ import annotations

BND = ["tests/test_bounds.py", "-k", "ratio or gamma or unit_roundoff or tight or extra_rounding or linear or rms_norm"]
STR = ["tests/test_strategies.py"]
CFG = ["tests/test_config.py", "tests/test_strict_round13.py", "tests/test_strict_round23.py", "-k"]
CFG += [
    "refused_by_name or qwen2 or activation or model_type or read_as_transformers or rotary_fields or dynamic_rope"
    " or llama3 or config_value or hidden_size_below or spoils or window_start or fill_in or model_config"
]
YARN = CFG[:3] + ["tests/test_text_yarn.py", "-k", CFG[-1] + " or yarn_fields"]
STK = ["tests/test_stack.py", "tests/test_strict_round17.py", "tests/test_strict_round19.py"]
STK += ["tests/test_strict_round20.py", "tests/test_strict_round21.py", "tests/test_strict_round42.py", "-k"]
STK += [
    "rule or reproof or knob or variable or backend or another_class or triton_interpret or pre_release"
    " or development or patched or checkout or shadowing or module_left or built_from_source or no_distribution"
    " or version_a_program or flush_to_zero or stale or another_triton or another_torch or another_build"
]
CERT = ["tests/test_conformance.py", "tests/test_bounds.py", "-k", "within or provenance or resum or where or stack"]
REP = ["tests/test_strict_round16.py", "tests/test_strict_round17.py", "tests/test_strict_round19.py"]
REP += ["tests/test_strict_round42.py"]
CHUNK = ["tests/test_chunks.py", "tests/test_strict_round25.py", "tests/test_memory.py"]
GATE = ["tests/test_gate_units.py", "tests/test_gate_round32.py", "tests/test_gate_round33.py"]
GATE += ["tests/test_gate_round37.py"]

BOUNDS, STRAT, CERTIFY = "conformance/bounds.py", "conformance/strategies.py", "conformance/certify.py"
REPROOF, STACK, CONFIG = "conformance/reproof.py", "neurobrix/stack.py", "neurobrix/config.py"
MODEL, CHECKS, COMPLETE = "neurobrix/model.py", "gate/checks.py", "gate/completeness.py"


def p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


PLANTS = [
    # ------------------------------------------------------------------ bounds: what check holds a kernel to
    p("b01", BOUNDS, "    if n * u >= 1:\n", "    if n * u > 1:\n", BND),
    p("b02", BOUNDS, "    return n * u / (1 - n * u)\n", "    return n * u\n", BND),
    p(
        "b03",
        BOUNDS,
        "torch.ldexp(torch.ones_like(magnitude), exponent - 1), 0.0)",
        "torch.ldexp(torch.ones_like(magnitude), exponent), 0.0)",
        BND,
    ),
    p(
        "b04",
        BOUNDS,
        "    return torch.clamp(unit_roundoff(dtype) * binade, min=underflow(dtype))",
        "    return unit_roundoff(dtype) * binade",
        BND,
    ),
    p(
        "b05",
        BOUNDS,
        "    if dtype == torch.float32:\n        return pre\n    return pre + half_ulp",
        "    if dtype != torch.bfloat16:\n        return pre\n    return pre + half_ulp",
        BND,
    ),
    p("b06", BOUNDS, "    return min(depth, max(n - 1, 0))", "    return depth", BND),
    p(
        "b07",
        BOUNDS,
        "    r = torch.where(err == 0, torch.zeros_like(err), err / b)  # err / 0 = inf",
        "    r = err / b  # err / 0 = inf",
        BND,
    ),
    p(
        "b08",
        BOUNDS,
        "(~torch.isfinite(b)).any() | (b < 0).any()",
        "(~torch.isfinite(b)).any()",
        BND,
    ),
    p(
        "b09",
        BOUNDS,
        "    if bias is not None:\n        pre = pre + g * _f64(bias).abs()[None, :]\n",
        "",
        BND,
    ),
    p(
        "b10",
        BOUNDS,
        "        return dots + (split_k - 1 if sliced else 0)",
        "        return dots",
        BND,
    ),
    # ------------------------------------------------------------------ strategies: the shapes and guards check draws
    p(
        "t01",
        STRAT,
        "            candidates.update((m - 1, m, m + 1))",
        "            candidates.update((m, m + 1))",
        STR,
    ),
    p("t02", STRAT, "    while power <= 2 * hi:", "    while power <= hi:", STR),
    p("t03", STRAT, "        hi = max(lo, cap)", "        hi = cap", STR),
    p("t04", STRAT, "        if before.any() or after.any():", "        if after.any():", STR),
    p(
        "t05",
        STRAT,
        "    first, last = -(-lo // multiple_of), hi // multiple_of",
        "    first, last = lo // multiple_of, hi // multiple_of",
        STR,
    ),
    # ------------------------------------------------------------------ config: what the runtime refuses to read
    p(
        "c01",
        CONFIG,
        "    return abs(value) <= sys.float_info.max if isinstance(value, int) else math.isfinite(value)",
        "    return math.isfinite(value)",
        CFG,
    ),
    p("c02", CONFIG, "    return _finite(value) and value > 0", "    return _finite(value) and value >= 0", CFG),
    p("c03", CONFIG, "    if not _finite(value) or value < 0:", "    if not _finite(value) or value <= 0:", CFG),
    p(
        "c04",
        CONFIG,
        "    if value is not None and not isinstance(value, bool):",
        "    if value and not isinstance(value, bool):",
        CFG,
    ),
    p(
        "c05",
        CONFIG,
        "    if isinstance(window, bool) or not isinstance(window, int) or window < 1:",
        "    if isinstance(window, bool) or not isinstance(window, int) or window < 0:",
        CFG,
    ),
    p(
        "c06",
        CONFIG,
        "            if kind is int and value < 1:",
        "            if kind is int and value < 0:",
        CFG,
    ),
    p("c07", CONFIG, "        if head_dim % 2:  # rotary", "        if head_dim % 2 and head_dim > 4:  # rotary", CFG),
    p(
        "c08",
        CONFIG,
        "        value = rope.get(name) or default  # transformers'",
        "        value = rope.get(name, default)  # transformers'",
        YARN,
    ),
    p(
        "c09",
        CONFIG,
        "    if partial is not None and partial != 1:",
        "    if partial is not None and partial < 1:",
        YARN,
    ),
    # ------------------------------------------------------------------ stack: the rule and the environment refused
    p(
        "s01",
        STACK,
        "    return (ran.epoch, *ran.release[:2]) == (made.epoch, *made.release[:2])",
        "    return ran.release[:2] == made.release[:2]",
        STK,
    ),
    p(
        "s02",
        STACK,
        "    if ran.is_prerelease or made.is_prerelease:",
        "    if ran.is_prerelease:",
        STK,
    ),
    p(
        "s03",
        STACK,
        "    return (ran.epoch, *ran.release[:2]) == (made.epoch, *made.release[:2])",
        "    return (ran.epoch, *ran.release[:1]) == (made.epoch, *made.release[:1])",
        STK,
    ),
    p(
        "s04",
        STACK,
        '    if made is None or made.is_prerelease:\n        return f"{certified} exactly"',
        '    if made is None:\n        return f"{certified} exactly"',
        STK,
    ),
    p(
        "s05",
        STACK,
        '    if not isinstance(check, dict) or check.get("passed") is not True:',
        '    if not isinstance(check, dict) or not check.get("passed"):',
        STK,
    ),
    p(
        "s06",
        STACK,
        "    changed = sorted(p for p in set(now) | set(hashes) if now.get(p) != hashes.get(p))",
        "    changed = sorted(p for p in set(now) if now.get(p) != hashes.get(p))",
        STK,
    ),
    p(
        "s07",
        STACK,
        '        if type(record["format"]) is not int or not all(',
        '        if not isinstance(record["format"], int) or not all(',
        STK,
    ),
    p(
        "s08",
        STACK,
        "    if recorded != running:\n",
        "    if recorded.triton != running.triton:\n",
        STK,
    ),
    p(
        "s09",
        STACK,
        '                changed.append(f"{package.name}/ops/{name} (not installed by it)")\n                continue',
        "                continue",
        STK,
    ),
    p(
        "s10",
        STACK,
        "    found.update({name: os.environ[name] for name in wanted if os.environ.get(name)})",
        "    found.update({name: os.environ[name] for name in CODEGEN_ENV if os.environ.get(name)})",
        STK,
    ),
    p(
        "s11",
        STACK,
        "            if name in vars(group) and group_name not in HARMLESS_GROUPS"
        " and descriptor.key not in HARMLESS_ENV:",
        "            if name in vars(group) and group_name not in HARMLESS_GROUPS:",
        STK,
    ),
    p("s12", STACK, '    for name in ("nvidia", "amd"):', '    for name in ("nvidia",):', STK),
    p(
        "s13",
        STACK,
        "    index = torch.cuda.current_device() if index is None else index",
        "    index = 0 if index is None else index",
        STK,
    ),
    p(
        "s14",
        STACK,
        '("denormals-are-zero", smallest * np.float32(1))',
        '("denormals-are-zero", smallest)',
        STK,
    ),
    p("s15", STACK, "    if len(set(said.values())) > 1:", "    if len(set(said.values())) > 2:", STK),
    # ------------------------------------------------------------------ certify: ranges, provenance, failures
    p("k01", CERTIFY, "        if span[0] < lo or (hi", "        if span[0] <= lo or (hi", CERT),
    p(
        "k02",
        CERTIFY,
        "(hi is not None and (span[1] is None or span[1] > hi))",
        "(hi is not None and span[1] is not None and span[1] > hi)",
        CERT,
    ),
    p(
        "k03",
        CERTIFY,
        "inside the range\n            return False",
        "inside the range\n            continue",
        CERT,
    ),
    p(
        "k04",
        CERTIFY,
        'SAME_RUN_FACTS = ("device", "torch", "triton", "neurobrix")',
        'SAME_RUN_FACTS = ("device", "torch", "triton")',
        CERT,
    ),
    p(
        "k05",
        CERTIFY,
        "    return stated is not None and installed is not None and stated.public == installed.public",
        "    return stated is not None and installed is not None and stated.release == installed.release",
        CERT,
    ),
    p(
        "k06",
        CERTIFY,
        '    if "OutOfResources" in name or "out of resource" in text.lower()',
        '    if "OutOfResources" in name or "out of resource" in text',
        CERT,
    ),
    # ------------------------------------------------------------------ reproof: when a check stands for the class
    p(
        "r01",
        REPROOF,
        '    if any(getattr(args, name, None) for name in ("kernel", "dtype", "variant", "where")):',
        '    if any(getattr(args, name, None) for name in ("kernel", "dtype", "variant")):',
        REP,
    ),
    p(
        "r02",
        REPROOF,
        "    if report.examples_per_entry < min_examples():",
        "    if report.examples_per_entry < min_examples() - 1:",
        REP,
    ),
    # ------------------------------------------------------------------ model: prefill chunks
    p("m01", MODEL, "    fit = max(1, PREFILL_TOKENS // batch)", "    fit = PREFILL_TOKENS // batch", CHUNK),
    p(
        "m02",
        MODEL,
        "    first = length - (length - 1) // chunk * chunk",
        "    first = length - length // chunk * chunk",
        CHUNK,
    ),
    p("m03", MODEL, "    if batch < 1:\n", "    if batch < 0:\n", CHUNK),
    # ------------------------------------------------------------------ gate: the finding cap, the reference list
    p("g01", CHECKS, "        if count[key] <= shown:", "        if count[key] < shown:", GATE),
    p("g02", CHECKS, "        first = rest[0]\n", "        first = rest[-1]\n", GATE),
    p(
        "g03",
        COMPLETE,
        '        if f.wheel_path != f"{WHEEL_DIR}/{f.path}":',
        "        if not f.wheel_path.endswith(f.path):",
        GATE,
    ),
    p(
        "g04",
        COMPLETE,
        "        if name.startswith(prefix) and name not in listed and name != list_name:",
        "        if name.startswith(prefix) and name not in listed:",
        GATE,
    ),
]
