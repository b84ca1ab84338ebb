"""Round 26's planted bugs, where the earlier rounds planted least (the CLI's `tables list/show/verify` output, its
progress line and exit codes; `neurobrix list` and `remove`'s output; the gate's report; the generation loop, its
statistics line and sampling's filters; the bucket rules and the length segments a plan is cut into; the memory plan;
the GPU class's choice; the model store's names, listing and removal), for tests/planted24_driver.py (run as
`python tests/planted26_driver.py COPY RESULTS`): id, file, the exact text replaced, its replacement, and the
existing tests that exercise it (the outcome of each: tests/test_planted26.py's docstring)."""

from __future__ import annotations

CLI = ["tests/test_cli.py", "tests/test_strict_round16.py", "tests/test_host_planted15.py"]
GATE = ["tests/test_gate_units.py"]  # in a copy that is a git checkout (tests/planted26_driver.py makes it one)
GEN = [
    "tests/test_generate.py",
    "tests/test_generation_planted.py",
    "tests/test_planted22.py",
    "tests/test_host_planted14.py",
    "tests/test_strict_round16.py",
]
SAMPLE = [*GEN, "tests/test_planted18.py", "tests/test_planted21.py", "tests/test_strict_round14.py"]
BUCKET = [
    "tests/test_planted20.py",
    "tests/test_planted22.py",
    "tests/test_planted24.py",
    "tests/test_generation_planted.py",
    "tests/test_tables.py",
]
SEG = ["tests/test_planted19.py", "tests/test_planted20.py", "tests/test_generation_planted.py"]
LIMIT = ["tests/test_planted20.py", "tests/test_strict_round15.py"]
MEM = ["tests/test_memory.py", "tests/test_planted22.py", "tests/test_generation_planted.py"]
GPU = ["tests/test_gpu.py", "tests/test_strict_planted.py"]
STORE = [
    "tests/test_store.py",
    "tests/test_store_planted17.py",
    "tests/test_host_planted15.py",
    "tests/test_planted24.py",
    "tests/test_strict_round16.py",
    "tests/test_strict_round17.py",
]

# (the sampling options' check, s09 and s10, moved to neurobrix/sampling.py in walk-through round 44)
SM = "neurobrix/sampling.py"
C, CS, R, G, B, PL, M, GP, S = (
    "neurobrix/cli.py",
    "neurobrix/cli_store.py",
    "gate/report.py",
    "neurobrix/generate.py",
    "neurobrix/buckets.py",
    "neurobrix/plan.py",
    "neurobrix/memory.py",
    "neurobrix/gpu.py",
    "neurobrix/store.py",
)


def p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


PLANTS = [
    # ------------------------------------------------------------------ neurobrix/cli.py
    p("c01", C, "{'; '.join(row['certified_with'])}", "{row['certified_with'][0]}", CLI),
    p("c02", C, '"kernels": {name: len(i.rows) for', '"kernels": {name: len(i.configs) for', CLI),
    p("c03", C, 'kernels = ", ".join(f"{k} ({n})" for', 'kernels = ", ".join(f"{k}" for', CLI),
    p("c04", C, "            if gpu_class.note:\n", "            if not gpu_class.note:\n", CLI),
    p("c05", C, "                if value is not None:\n", "                if value:\n", CLI),
    p("c06", C, 'key = ", ".join(f"{d} {r}" for', 'key = ", ".join(f"{r} {d}" for', CLI),
    p(
        "c07",
        C,
        "{counted(p.candidates_tried, 'candidate')}, {len(p.rejected)} rejected\"",
        "{counted(len(p.rejected), 'candidate')}, {p.candidates_tried} rejected\"",
        CLI,
    ),
    p("c08", C, 'for name in ("date", "triton", "torch", "command"):', 'for name in ("date", "triton", "torch"):', CLI),
    p(
        "c09",
        C,
        "f\"it has: {', '.join(sorted(kernels)) or 'none'}\"",
        "f\"it has: {', '.join(sorted(tables.classes)) or 'none'}\"",
        CLI,
    ),
    p("c10", C, '    return 0 if report["ok"] else 3\n', '    return 0 if report["ok"] else 1\n', CLI),
    p(
        "c11",
        C,
        'print(printable(f"tables NOT verified ({location.root}, {location.origin}):"), file=sys.stderr)',
        'print(printable(f"tables NOT verified ({location.root}, {location.origin}):"))',
        CLI,
    ),
    p("c12", C, "{location.root / p['path'] if p['path'] else ''}", "{p['path'] or ''}", CLI),
    p("c13", C, "step = 100 if self.tty else 10", "step = 10 if self.tty else 100", CLI),
    p("c14", C, 'end="\\n" if done == total else ""', 'end=""', CLI),
    p("c15", C, "        _error(said, 128 + signum)\n", "        _error(said, 130)\n", CLI),
    p("c16", C, 'f"terminated ({signal.Signals(signum).name})"', 'f"terminated (SIGTERM)"', CLI),
    p(
        "c17",
        C,
        "        return lost_reader()  # coreutils and git (141), never 0 for what it stopped (an import, a run)\n",
        "        lost_reader()\n        return 1\n",  # re-anchored in strict round 51 (the status was 0, now 141)
        CLI,
    ),
    p(
        "c18",
        C,
        "_error(f\"{exc.strerror or exc}{where}{f'; {why}' if why else ''} (--debug shows where)\", 1)",
        "_error(f\"{exc.strerror or exc}{where}{f'; {why}' if why else ''} (--debug shows where)\", 2)",
        CLI,
    ),
    p(
        "c19",
        C,
        "isinstance(v, str) and not v.strip() for v in texts",
        "isinstance(v, str) and not v for v in texts",
        CLI,
    ),
    p(
        "c20",
        C,
        "sampling = (args.temperature, args.top_k, args.top_p, args.seed, args.repetition_penalty)",
        "sampling = (args.temperature, args.top_k, args.top_p, args.seed)",
        CLI,
    ),
    p("c21", C, "    return 1 if blocked(findings) else 0\n", "    return 0\n", CLI),
    p(
        "c22",
        C,
        "        if mark == self.shown and done != total:\n",
        "        if mark <= self.shown + 1 and done != total:\n",
        CLI,
    ),
    # ------------------------------------------------------------------ neurobrix/cli_store.py
    p(
        "cs1",
        CS,
        'revision = printable((m.commit or "")[:12] or m.revision or "-")',
        'revision = printable(m.revision or (m.commit or "")[:12] or "-")',
        STORE,
    ),
    p(
        "cs2",
        CS,
        "        if m.damaged:\n            print(",
        "        if m.damaged is None:\n            print(",
        STORE,
    ),
    p("cs3", CS, "where = printable(str(model.path.parent))", "where = printable(str(model.path))", STORE),
    p(
        "cs4",
        CS,
        "width = max(map(len, names))",
        "width = max(map(len, names[:1]))",
        STORE,
    ),
    # ------------------------------------------------------------------ gate/report.py
    p(
        "g01",
        R,
        "f\"gate: REFUSED: {count} finding{'s' if count > 1 else ''}",
        "f\"gate: REFUSED: {count} finding{'s' if count else ''}",
        GATE,
    ),
    p("g02", R, '(f" x{n}" if n > 1 else "")', '(f" x{n}" if n > 2 else "")', GATE),
    p("g03", R, "('s' if len(found) > 1 else '')", "('s' if found else '')", GATE),
    p(
        "g04",
        R,
        'elif self.smoke and all(s.status == "passed" for s in self.smoke):',
        'elif self.smoke and any(s.status == "passed" for s in self.smoke):',
        GATE,
    ),
    p(
        "g05",
        R,
        "if self.repository is not None and not self.repository.clean:",
        "if self.repository is not None and self.repository.clean:",
        GATE,
    ),
    p("g06", R, "return 0 if self.passed else 1\n", "return 0 if self.passed else 2\n", GATE),
    p(
        "g07",
        R,
        '"verdict": "passed" if self.passed else "refused",',
        '"verdict": "passed" if self.findings else "refused",',
        GATE,
    ),
    p("g08", R, "            for code in sorted(by_check):\n", "            for code in by_check:\n", GATE),
    p(
        "g09",
        R,
        'identities = sorted({f"{d.name} {d.version}" for d in self.dists})',
        'identities = sorted({f"{d.name}" for d in self.dists})',
        GATE,
    ),
    p("g10", R, '"exit_code": 2,', '"exit_code": 1,', GATE),
    p("g11", R, '{"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}', '{"Cc", "Cs", "Co", "Cn", "Zl", "Zp"}', GATE),
    p(
        "g12",
        R,
        "for k, n in sorted(kinds.items(), reverse=True))",
        "for k, n in sorted(kinds.items()))",
        GATE,
    ),
    p(
        "g13",
        R,
        '                lines.append(f"  {code} {by_check[code][0].check.title}")\n',
        '                lines.append(f"  {code}")\n',
        GATE,
    ),
    # ------------------------------------------------------------------ neurobrix/generate.py
    p("s01", G, 'return f"{n} token" if n == 1 else', 'return f"{n} token" if n <= 1 else', GEN),
    p("s02", G, "    decoded = sum(len(o) for o in outs) - batch\n", "    decoded = sum(len(o) for o in outs)\n", GEN),
    p(
        "s03",
        G,
        "Stats(batch * seq, sum(len(o) for o in outs), first - start,",
        "Stats(seq, sum(len(o) for o in outs), first - start,",
        GEN,
    ),
    p(
        "s04",
        G,
        "Stats(batch * seq, sum(len(o) for o in outs), first - start,",
        "Stats(batch * seq, sum(len(o) for o in outs), first - prepare,",
        GEN,
    ),
    p("s05", G, "stop(prompts[b] + outs[b]))", "stop(outs[b]))", GEN),
    p(
        "s06",
        G,
        "        if steps < max_new_tokens and not all(done):\n",
        "        if steps <= max_new_tokens and not all(done):\n",
        GEN,
    ),
    p(
        "s07",
        G,
        "_decode_greedy(greedy, token, seq, max_new_tokens - 1, record",
        "_decode_greedy(greedy, token, seq, max_new_tokens, record",
        GEN,
    ),
    p(
        "s08",
        G,
        "    if seq + max_new_tokens - 1 > model.cache.capacity:\n",
        "    if seq + max_new_tokens > model.cache.capacity:\n",
        GEN,
    ),
    p(
        "s09",
        SM,
        "if self.top_k is not None and self.top_k < 0:",
        "if self.top_k is not None and self.top_k <= 0:",
        GEN,
    ),
    p("s10", SM, "not 0 <= self.seed < 2**64:", "not 0 <= self.seed < 2**63:", GEN),
    p("s11", G, "            new.append(None if done[b] else t)\n", "            new.append(t)\n", GEN),
    p(
        "s12",
        G,
        "scores = scores.masked_fill(scores < kth, -math.inf)",
        "scores = scores.masked_fill(scores <= kth, -math.inf)",
        SAMPLE,
    ),
    p(
        "s13",
        G,
        "drop = sorted_scores.softmax(dim=-1).cumsum(dim=-1) <= (1 - opts.top_p)",
        "drop = sorted_scores.softmax(dim=-1).cumsum(dim=-1) < (1 - opts.top_p)",
        SAMPLE,
    ),
    p("s14", G, "        drop.scatter_(-1, torch.topk(probs, 1, dim=-1).indices, False)\n", "", SAMPLE),
    p(
        "s15",
        G,
        'penalty = f" and the repetition penalty {opts.penalty:g}" if opts.penalty != 1 else ""',
        'penalty = ""',
        SAMPLE,
    ),
    p(
        "s16",
        G,
        'if self.load_s is not None:\n            phases.append(f"load',
        'if self.load_s:\n            phases.append(f"load',
        GEN,
    ),
    p(
        "s17",
        G,
        "rate = decoded / (end - first) if decoded and end > first else 0.0",
        "rate = decoded / (end - start) if decoded and end > first else 0.0",
        GEN,
    ),
    # ------------------------------------------------------------------ neurobrix/buckets.py
    p(
        "b01",
        B,
        "    if value <= first:\n        return (1, first)",
        "    if value < first:\n        return (1, first)",
        BUCKET,
    ),
    p("b02", B, "return (hi // 2 + 1, hi)", "return (hi // 2, hi)", BUCKET),
    p("b03", B, "(int(first) & (int(first) - 1)) == 0", "int(first) % 2 == 0", BUCKET),
    p("b04", B, "pow2>=([1-9][0-9]*)", "pow2>=([0-9]+)", BUCKET),
    p("b05", B, "    if value < 1:\n        raise ValueError", "    if value < 0:\n        raise ValueError", BUCKET),
    # ------------------------------------------------------------------ neurobrix/plan.py
    p(
        "p01",
        PL,
        "starts.update({first} if last is None else {first, last + 1})",
        "starts.update({first} if last is None else {first, last})",
        SEG,
    ),
    p(
        "p02",
        PL,
        "cuts = sorted(s for s in starts if lo <= s <= hi)",
        "cuts = sorted(s for s in starts if lo <= s < hi)",
        SEG,
    ),
    p(
        "p03",
        PL,
        "    if lo > hi:\n        return []\n    starts = {lo}",
        "    if lo >= hi:\n        return []\n    starts = {lo}",
        SEG,
    ),
    p("p04", PL, "            if value * second > numel:\n", "            if value * second >= numel:\n", LIMIT),
    p(
        "p05",
        PL,
        "if name in SPLIT_COUNTS and value > GRID_AXIS:",
        "if name in SPLIT_COUNTS and value >= GRID_AXIS:",
        LIMIT,
    ),
    # ------------------------------------------------------------------ neurobrix/memory.py
    p("m01", M, "return 2 * cfg.num_layers * batch * capacity", "return cfg.num_layers * batch * capacity", MEM),
    p("m02", M, "lo, hi = 0, max(1, cfg.max_positions)", "lo, hi = 0, max(1, cfg.max_positions - 1)", MEM),
    p(
        "m03",
        M,
        "    if need.total <= free:\n        return need",
        "    if need.total < free:\n        return need",
        MEM,
    ),
    p("m04", M, "chunk = min(prompt, chunk_length(batch))", "chunk = prompt", MEM),
    p(
        "m05",
        M,
        "{_gib(need.total - need.weights - need.kv_cache)}) but",
        "{_gib(need.activations)}) but",
        MEM,
    ),
    p("m06", M, 'of = f" of {_gib(total)}" if total else ""', 'of = f" of {_gib(free)}" if total else ""', MEM),
    # ------------------------------------------------------------------ neurobrix/gpu.py
    p(
        "gp1",
        GP,
        "    if len(found) == 1:\n        return found[0]",
        "    if len(found) >= 1:\n        return found[0]",
        GPU,
    ),
    p(
        "gp2",
        GP,
        'f"compute capability {self.compute_capability[0]}.{self.compute_capability[1]}"',
        'f"compute capability {self.compute_capability[1]}.{self.compute_capability[0]}"',
        GPU,
    ),
    p(
        "gp3",
        GP,
        'INTERPRET_ON = ("1", "y", "yes", "on", "true")',
        'INTERPRET_ON = ("1", "yes", "on", "true")',
        GPU,
    ),
    p(
        "gp4",
        GP,
        "f\"{', '.join(c.id for c in found)}; their class.yaml",
        'f"{found[0].id}; their class.yaml',
        GPU,
    ),
    # ------------------------------------------------------------------ neurobrix/store.py
    p(
        "st1",
        S,
        "        if len(matches) == 1:\n            return matches[0].name",
        "        if matches:\n            return matches[0].name",
        STORE,
    ),
    p(
        "st2",
        S,
        'if "/" in key and path.parent != models_dir():',
        'if "/" in key and path.parent == models_dir():',
        STORE,
    ),
    p("st3", S, "if not 1 <= len(parts) <= 2 or", "if not 1 <= len(parts) <= 3 or", STORE),
    p("st4", S, "    if not name.strip():  # else", "    if not name:  # else", STORE),
    p("st5", S, "if m.name.lower() == key.lower()]", "if m.name == key]", STORE),
    p(
        "st6",
        S,
        "                for sub in sorted(top.iterdir())\n",
        "                for sub in top.iterdir()\n",
        STORE,
    ),
    p("st7", S, "            size=sum(sizes.values()),\n", "            size=max(sizes.values()),\n", STORE),
    p(
        "st8",
        S,
        "if stored is not None and _load(stored, local).source == name_text(str(folder.resolve())):",
        "if stored is not None:",
        STORE,
    ),
]
