"""Round 24's planted bugs, for tests/planted24_driver.py: id, file, the exact text replaced, its replacement, and
the existing tests that exercise the code planted in (the outcome of each: tests/test_planted24.py's docstring)."""

from __future__ import annotations

W = [
    "tests/test_mutants.py::test_an_isolated_worker_that_dies_takes_only_its_own_item",
    "tests/test_conformance.py",
    "-k",
    "worker or out_of_memory or crashes or time_limit",
]
S = [
    "tests/test_shipped.py",
    "tests/test_kmut2.py",
    "tests/test_strict_planted.py",
    "tests/test_mutants.py",
    "-k",
    "(variant_of_every or launch_options or small_shapes or every_item or check_shipped_names or shipped_check_runs"
    " or offered_settings or shipped or judge) and not the_interpreter_class_and_every and not fast_subset"
    " and not end_to_end",
]
R = ["tests/test_rank.py", "tests/test_planted19.py", "tests/test_planted21.py", "-k", "rank"]
C = ["tests/test_conformance.py", "tests/test_chunks.py", "-k", "catalogue or chunk or domain or coverage"]
K = ["tests/test_conformance.py", "-k", "pruned or sweep or candidate"]
SW = ["tests/test_conformance.py", "tests/test_newcomer.py", "tests/test_planted19.py", "-k", "sweep"]
T = ["tests/test_contributor.py", "tests/test_tracked.py", "tests/test_host_planted15.py", "-k", "track"]
Y = ["tests/test_gate_units.py", "tests/test_gate_hostile.py", "-k", "yaml"]
E = [
    "tests/test_strict_round13.py",
    "tests/test_strict_round14.py",
    "tests/test_strict_round16.py",
    "tests/test_strict_round17.py",
    "tests/test_strict_round25.py",
    "tests/test_strict_round26.py",
    "tests/test_config.py",
]
CS = [
    "tests/test_store.py",
    "tests/test_host_planted15.py",
    "tests/test_warmup.py",
    "tests/test_engine.py",
    "-k",
    "import or list or remove or certified or run_command or sizes or revision or stored",
]

WF, SF, RF = "conformance/workers.py", "conformance/shipped.py", "conformance/rank.py"


def p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


PLANTS = [
    # ------------------------------------------------------------------ conformance/workers.py
    p("w01", WF, ".splitlines()[0][:500])", ".splitlines()[-1][:500])", W),
    p("w02", WF, "    if exitcode < 0:", "    if exitcode <= 0:", W),
    p("w03", WF, 'return f"killed by signal {-exitcode}"', 'return f"killed by signal {exitcode}"', W),
    p("w04", WF, "for i in range(torch.cuda.device_count()) if", "for i in range(1, torch.cuda.device_count()) if", W),
    p("w05", WF, "names[device] if names else str(device)", "names[0] if names else str(device)", W),
    p("w06", WF, "    if device is not None:\n        visible", "    if device:\n        visible", W),
    p("w07", WF, "self._slots = [devices[i % len(devices)] for", "self._slots = [devices[0] for", W),
    p("w08", WF, "                elif isinstance(result, Failed):\n                    self._stop(slot)\n", "", W),
    p("w09", WF, "return results, any(isinstance(r, Failed) for r in results)", "return results, False", W),
    p("w10", WF, "len(self.devices) == 1 and not isolate", "len(self.devices) == 1", W),
    p("w11", WF, "self.jobs = max(1, jobs)", "self.jobs = jobs", W),
    p(
        "w12",
        WF,
        "max(self.jobs, len(self.devices)) > len(self.devices)",
        "max(self.jobs, len(self.devices)) >= len(self.devices)",
        W,
    ),
    p(
        "w13",
        WF,
        "self._shared = self._pool(max(self.jobs, len(self.devices)))",
        "self._shared = self._pool(self.jobs)",
        W,
    ),
    p("w14", WF, "self._alone = self._pool(len(self.devices))", "self._alone = self._pool(self.jobs)", W),
    p("w15", WF, "if failed and not self.isolate:  # isolated", "if failed:  # isolated", W),
    p("w16", WF, "if devices == [None] or not devices:", "if devices == [None]:", W),
    p("w17", WF, "min(15 * len(devices),", "min(15,", W),
    p("w18", WF, "usable_cores() - 2)", "usable_cores() - 1)", W),
    p("w19", WF, "process.exitcode or 0\n", "0\n", W),
    p(
        "w20",
        WF,
        "results[i], failed = _failure(exc), True\n                if on_done",
        "results[i], failed = _failure(exc), False\n                if on_done",
        W,
    ),
    # ------------------------------------------------------------------ conformance/shipped.py
    p("s01", SF, "not (interpreter and k in LAUNCH_OPTIONS)", "not (k in LAUNCH_OPTIONS)", S),
    p("s02", SF, "if len(self.configs) > 1:", "if len(self.configs) >= 1:", S),
    p("s03", SF, "item.entries[gpu_class] = item.entries.get(gpu_class, 0) + 1", "item.entries[gpu_class] = 1", S),
    p(
        "s04",
        SF,
        "            if kernels and kernel not in kernels:\n                continue\n"
        "            index = loaded.index(gpu_class, kernel)",
        "            index = loaded.index(gpu_class, kernel)",
        S,
    ),
    p("s05", SF, "            wanted &= dtypes\n", "            pass\n", S),
    p("s06", SF, "if not wanted and dtypes is None:", "if not wanted:", S),
    p(
        "s07",
        SF,
        "{STAND_IN.get(d, d) if interpreter else d for d in item.dtypes}",
        "{STAND_IN.get(d, d) for d in item.dtypes}",
        S,
    ),
    p("s08", SF, "run = sorted(d for d in wanted if (item.kernel, key, d) not in own)", "run = sorted(wanted)", S),
    p(
        "s09",
        SF,
        "            if (kernel, distinct(config, interpreter)) in shipped:\n                continue\n",
        "",
        S,
    ),
    p("s10", SF, "if kernel not in own_kernels or (kernels and", "if (kernels and", S),
    p("s11", SF, "if dtype not in own_dtypes or (dtypes is not None", "if (dtypes is not None", S),
    p(
        "s12",
        SF,
        "item.configs.add(json.dumps(config, sort_keys=True))",
        "item.configs.add(distinct(config, interpreter))",
        S,
    ),
    p("s13", SF, "return found + offered_targets(", "return found + [] or offered_targets(", S),
    # ------------------------------------------------------------------ conformance/rank.py
    p("r01", RF, "timed.sort(key=lambda t: t[0])", "timed.sort(key=lambda t: t[0], reverse=True)", R),
    p("r02", RF, 'if r.reason == "slower" and found and', "if found and", R),
    p("r03", RF, "step_us[0] > (1 + margin) * step_us[best]", "step_us[0] >= (1 + margin) * step_us[best]", R),
    p("r04", RF, "proof, alts[best - 1][0]),", "proof, alts[0][0]),", R),
    p(
        "r05",
        RF,
        "kept = [r for r in entry.proof.rejected if all(dict(r.config) != c for c, _ in tried)]",
        "kept = list(entry.proof.rejected)",
        R,
    ),
    p(
        "r06",
        RF,
        "others = [(c, us) for n, (c, us) in enumerate(tried) if n != win]",
        "others = [(c, us) for n, (c, us) in enumerate(tried) if n]",
        R,
    ),
    p(
        "r07",
        RF,
        "return any(MARK in r.detail for r in entry.proof.rejected)",
        "return all(MARK in r.detail for r in entry.proof.rejected)",
        R,
    ),
    p("r08", RF, "({base / kept:.3f}x)", "({kept / base:.3f}x)", R),
    p(
        "r09",
        RF,
        "fastest = min(us for _, us in outcome.step_us[1:])",
        "fastest = min(us for _, us in outcome.step_us)",
        R,
    ),
    p("r10", RF, "examples=proof.examples,", "examples=entry.proof.examples,", R),
    p("r11", RF, "worst_error_ratio=proof.worst_ratio,", "worst_error_ratio=entry.proof.worst_error_ratio,", R),
    p(
        "r12",
        RF,
        "best = min(range(len(tried)), key=step_us.__getitem__)",
        "best = max(range(len(tried)), key=step_us.__getitem__)",
        R,
    ),
    p("r13", RF, "return timed[:top]", "return timed[: top - 1]", R),
    # ------------------------------------------------------------------ conformance/catalogue.py
    p("c01", "conformance/catalogue.py", "    while value <= hi:", "    while value < hi:", C),
    p("c02", "conformance/catalogue.py", "top = min(pow2_bucket(value)[1], hi)", "top = pow2_bucket(value)[1]", C),
    p("c03", "conformance/catalogue.py", "min(prompt_hi, coverage.cache_tokens[1] // batch)", "prompt_hi", C),
    p("c04", "conformance/catalogue.py", "coverage.prefill_batch[1] + 1)", "coverage.prefill_batch[1])", C),
    p(
        "c05",
        "conformance/catalogue.py",
        "capacity_hi = min(coverage.capacity[1], cfg.max_positions)",
        "capacity_hi = coverage.capacity[1]",
        C,
    ),
    # ------------------------------------------------------------------ conformance/candidates.py, sweep.py, track.py
    p(
        "k01",
        "conformance/candidates.py",
        "if limit is not None and need > limit:",
        "if limit is not None and need >= limit:",
        K,
    ),
    p(
        "k02",
        "conformance/candidates.py",
        "limit = SMEM_BYTES.get(class_id)",
        'limit = SMEM_BYTES.get(class_id, SMEM_BYTES["nvidia-h200"])',
        K,
    ),
    p("sw1", "conformance/sweep.py", "    if unknown:  # else", "    if False:  # else", SW),
    p(
        "sw2",
        "conformance/sweep.py",
        "dims = {d: hi for d, (_, hi) in domain.items()}",
        "dims = {d: lo for d, (lo, _) in domain.items()}",
        SW,
    ),
    p("t01", "conformance/track.py", "changed = not path.is_file() or path.read_text", "changed = path.read_text", T),
    p("t02", "conformance/track.py", "if not problems and path.read_text", "if path.is_file() and path.read_text", T),
    # ------------------------------------------------------------------ gate/yamlsafe.py
    p("y01", "gate/yamlsafe.py", "if len(data) > max_bytes:", "if len(data) >= max_bytes:", Y),
    p("y02", "gate/yamlsafe.py", "if depth > MAX_DEPTH:", "if depth >= MAX_DEPTH:", Y),
    p("y03", "gate/yamlsafe.py", "(yaml.SequenceEndEvent, yaml.MappingEndEvent)", "yaml.SequenceEndEvent", Y),
    p("y04", "gate/yamlsafe.py", "if count > MAX_EVENTS:", "if count > MAX_EVENTS + 10:", Y),
    p("y05", "gate/yamlsafe.py", ' or getattr(event, "anchor", None) is not None', "", Y),
    p("y06", "gate/yamlsafe.py", "isinstance(event, yaml.AliasEvent) or getattr", "getattr", Y),
    p(
        "y07",
        "gate/yamlsafe.py",
        'line = f"line {mark.line + 1}: " if mark else ""',
        'line = f"line {mark.line}: " if mark else ""',
        Y,
    ),
    p("y08", "gate/yamlsafe.py", "mark = exc.problem_mark or exc.context_mark", "mark = exc.context_mark", Y),
    # ------------------------------------------------------------------ neurobrix/errors.py
    p("e01", "neurobrix/errors.py", "abs(value) <= sys.float_info.max", "abs(value) < sys.float_info.max", E),
    p(
        "e02",
        "neurobrix/errors.py",
        "type(value) is float or (type(value) is int",
        "isinstance(value, float) or (isinstance(value, int)",
        E,
    ),
    p(
        "e03",
        "neurobrix/errors.py",
        '"an integer": lambda v: type(v) is int,',
        '"an integer": lambda v: isinstance(v, int),',
        E,
    ),
    p("e04", "neurobrix/errors.py", "if (value is None and optional) or", "if value is None or", E),
    p("e05", "neurobrix/errors.py", 'none = " or None" if optional else ""', 'none = ""', E),
    p(
        "e06",
        "neurobrix/errors.py",
        "if hook is not None and not callable(hook):",
        "if hook and not callable(hook):",
        E,
    ),
    p(
        "e07",
        "neurobrix/errors.py",
        '"true or false": lambda v: type(v) is bool,',
        '"true or false": lambda v: v in (True, False),',
        E,
    ),
    # ------------------------------------------------------------------ neurobrix/cli_store.py
    p("cs01", "neurobrix/cli_store.py", 'for unit in ("B", "kB", "MB"):', 'for unit in ("B", "kB"):', CS),
    p(
        "cs02",
        "neurobrix/cli_store.py",
        'revision = printable((m.commit or "")[:12] or m.revision or "-")',
        'revision = printable(m.revision or (m.commit or "")[:12] or "-")',
        CS,
    ),
    p("cs03", "neurobrix/cli_store.py", 'else "  DAMAGED" if m.damaged else "")', 'else "")', CS),
    p(
        "cs04",
        "neurobrix/cli_store.py",
        "where = printable(str(model.path.parent))",
        "where = printable(str(model.path))",
        CS,
    ),
    p("cs05", "neurobrix/cli_store.py", "if args.warmup and gpu_class is not None:", "if args.warmup:", CS),
    p("cs06", "neurobrix/cli_store.py", "    elif gpu_class is not None:\n", "    else:\n", CS),
    p(
        "cs07",
        "neurobrix/cli_store.py",
        'neurobrix warmup --model {shlex.quote(model.name)}"',
        'neurobrix warmup --model {model.name}"',
        CS,
    ),
    p(
        "cs08",
        "neurobrix/cli_store.py",
        "from .errors import NeuroBrixError\n",
        "from .errors import UncertifiedGPUError as NeuroBrixError\n",
        CS,
    ),
    p(
        "cs09",
        "neurobrix/cli_store.py",
        'commit = f" at {model.commit[:12]}" if model.commit else ""',
        'commit = ""',
        CS,
    ),
    p(
        "cs10",
        "neurobrix/cli_store.py",
        "        if m.damaged:\n            print(f\"{'':<{width}}  {printable(m.damaged)}\")\n",
        "",
        CS,
    ),
    p("cs11", "neurobrix/cli_store.py", "if value < 1000:", "if value < 1024:", CS),
]
