"""Round 38's planted bugs, where round 37 left no plant (counted per 100 lines over every tests/planted*_plants.py and
conformance/mutants.py): the attention bounds of conformance/bounds.py (what the attention kernels are held to),
conformance/certify.py's ``certify``, ``screen_task``, ``time_task`` and ``prove_task`` with today's time limit
(``_stopped``, ``LEFT``, the ``phase`` helper), conformance/workers.py's time limit (``OutOfTime``, ``_cut``,
``_timeout``, ``_kill_pool``, ``Limit``) and conformance/check.py's ``limit`` and OutOfTime handling,
neurobrix/store.py's manifest-name check (strict round 43), gate/smoke.py (the install smoke), gate/backend.py (the
isolated build backend) and conformance/tiny.py (the tiny checkpoints every engine test runs on), for
tests/planted38_driver.py: id, file, the exact text replaced, its replacement, and the existing tests that exercise
it (the outcome of each: tests/test_planted38.py's docstring)."""

from __future__ import annotations

ATT = ["tests/test_bounds.py", "-k", "attention or decode or one_key"]
WRK = ["tests/test_check_interrupted.py", "-k", "time_limit_stops_the_items or killing_a_pool"]
CHK = ["tests/test_check_interrupted.py", "tests/test_contributor.py", "-k", "time_limit"]
CERT = ["tests/test_certify_time_limit.py", "tests/test_contributor.py", "-k", "limit or only_missing or log"]
PROVE = CERT[:2] + ["tests/test_conformance.py", "-k", "limit or only_missing or log or out_of_memory or certif"]
STO = ["tests/test_strict_round43.py", "-k", "another or renamed or case or text_name or linked"]
# not test_the_install_smoke_loads_the_installed_tables: its verdict names any edit of a tracked file ("not a release
# check"), so every plant in gate/ failed it whatever the plant did (a first run of this round counted g01-g06 caught)
SMK = ["tests/test_gate.py", "-k", "smoke_hashes or pip_refuses or never_installed"]
BKD = ["tests/test_gate_round21.py"]
TINY = ["tests/test_engine.py", "-k", "greedy_tokens_identical and torch or chat_template or config_json"]

BOUNDS, CERTIFY, WORKERS = "conformance/bounds.py", "conformance/certify.py", "conformance/workers.py"
CHECK, STORE, SMOKE = "conformance/check.py", "neurobrix/store.py", "gate/smoke.py"
BACKEND, TINYF = "gate/backend.py", "conformance/tiny.py"


def p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


PLANTS = [
    # ------------------------------------------------------------------ bounds: what the attention kernels are held to
    p(
        "a01",
        BOUNDS,
        "        blocks = torch.ceil(torch.clamp(keys, max=chunk or L) / key_block)",
        "        blocks = torch.ceil(keys / key_block)",
        ATT,
    ),
    p("a02", BOUNDS, "        n = blocks + 1\n", "        n = blocks\n", ATT),
    p("a03", BOUNDS, "    G = 9 * u_a * (gap + 2 * E_max)", "    G = 9 * u_a * (gap + E_max)", ATT),
    p("a04", BOUNDS, "    known = p_lo >= TINY_P", "    known = p_hi >= TINY_P", ATT),
    p(
        "a06",
        BOUNDS,
        "tril(diagonal=S - C)\n",
        "tril(diagonal=S - C - 1)\n",
        ATT,
    ),
    p(
        "a07",
        BOUNDS,
        "    rows = max(1, ROW_ELEMENTS // S)  # every quantity",
        "    rows = ROW_ELEMENTS // S  # every quantity",
        ATT,
    ),
    p("a08", BOUNDS, "            kv = h // group\n", "            kv = h % k64.shape[2]\n", ATT),
    p(
        "a09",
        BOUNDS,
        "    return _cdiv(_cdiv(capacity, splits), key_block) * key_block",
        "    return _cdiv(capacity // splits, key_block) * key_block",
        ATT,
    ),
    p("a10", BOUNDS, "    roundings = 2 * rescalings + 3\n", "    roundings = 2 * rescalings + 1\n", ATT),
    p(
        "a11",
        BOUNDS,
        "    filled = torch.arange(S, device=q64.device)[None, :] < n[:, None]",
        "    filled = torch.arange(S, device=q64.device)[None, :] <= n[:, None]",
        ATT,
    ),
    p(
        "a12",
        BOUNDS,
        "        lo = -unit_roundoff(dtype) * torch.ones_like(s)\n        eta_p = underflow(dtype)",
        "        lo = -unit_roundoff(dtype) * torch.ones_like(s)\n        eta_p = 0.0",
        ATT,
    ),
    p(
        "a15",
        BOUNDS,
        "    if splits < 1 or (key_block is not None and key_block < 1):",
        "    if splits < 0 or (key_block is not None and key_block < 1):",
        ATT,
    ),
    # ------------------------------------------------------------------ workers: the time limit
    p(
        "w01",
        WORKERS,
        "    return limit is not None and finished >= limit[1] and limit[0]() <= 0",
        "    return limit is not None and finished > limit[1] and limit[0]() <= 0",
        WRK,
    ),
    p(
        "w03",
        WORKERS,
        "        except OutOfTime:\n            self.close(kill=True)\n            raise",
        "        except OutOfTime:\n            self.close()\n            raise",
        WRK,
    ),
    p(
        "w04",
        WORKERS,
        "                if _cut(limit, i):\n",
        "                if _cut(limit, i + 1):\n",
        WRK,
    ),
    p(
        "w05",
        WORKERS,
        "                finished += 1\n                if on_done:\n                    on_done(i)",
        "                if on_done:\n                    on_done(i)",
        WRK,
    ),
    p(
        "w06",
        WORKERS,
        "            if _cut(limit, finished):  # the items under way have nobody left to report to\n"
        "                self.close(kill=True)",
        "            if _cut(limit, finished):  # the items under way have nobody left to report to\n"
        "                self.close()",
        WRK,
    ),
    p(
        "w07",
        WORKERS,
        "            wait(watched, timeout=_timeout(limit))",
        "            wait(watched)",
        WRK,
    ),
    p(
        "k01",
        CHECK,
        "            return (lambda: deadline - time.perf_counter()), int(first_wave)",
        "            return (lambda: deadline - time.perf_counter()), 1",
        CHK,
    ),
    p(
        "c01",
        CERTIFY,
        "                if not stopped or at_least:",
        "                if not stopped:",
        CERT,
    ),
    p(
        "c02",
        CERTIFY,
        "                    results[n] = done.get(j, LEFT)",
        "                    results[n] = done.get(n, LEFT)",
        CERT,
    ),
    p(
        "c03",
        CERTIFY,
        "    if failures:  # exit 1 naming them",
        "    if failures and not left:  # exit 1 naming them",
        CERT,
    ),
    p(
        "c04",
        CERTIFY,
        "                return _stopped(written, left + len(todo) - first - len(chunk), failures, say)",
        "                return _stopped(written, len(todo) - first - len(chunk), failures, say)",
        CERT,
    ),
    p(
        "c05",
        CERTIFY,
        "if r is not LEFT and not isinstance(r, workers.Failed)]",
        "if r is not LEFT]",
        CERT,
    ),
    p(
        "c08",
        CERTIFY,
        "            if check.is_out_of_memory(exc):\n                raise\n",
        "",
        PROVE,
    ),
    p("c09", CERTIFY, "    timed.sort(key=lambda t: t[0][1])", "    timed.sort(key=lambda t: t[0][0])", PROVE),
    p(
        "c10",
        CERTIFY,
        "    ranked = timed.timed + [((t, t), c) for t, c in timed.estimated]",
        "    ranked = list(timed.timed)",
        PROVE,
    ),
    p(
        "c11",
        CERTIFY,
        "    rejected = timed.screened.rejected + timed.rejected\n",
        "    rejected = list(timed.screened.rejected)\n",
        PROVE,
    ),
    p(
        "c13",
        CERTIFY,
        "        if result.out_of_memory:  # not a wrong result",
        "        if False:  # not a wrong result",
        PROVE,
    ),
    # ------------------------------------------------------------------ store: a folder holds its own manifest
    p(
        "s01",
        STORE,
        '    if data["name"].casefold() != name.casefold():',
        '    if data["name"] != name:',
        STO,
    ),
    p(
        "s02",
        STORE,
        '    if not isinstance(data["name"], str) or not data["name"]:',
        '    if not isinstance(data["name"], str):',
        STO,
    ),
    p(
        "s03",
        STORE,
        '    if data["name"].casefold() != name.casefold():',
        '    if verify and data["name"].casefold() != name.casefold():',
        STO,
    ),
    p(
        "g01",
        SMOKE,
        "        if pip.returncode != 0:\n",
        "        if pip.returncode > 0:\n",
        SMK,
    ),
    p(
        "g02",
        SMOKE,
        "        if digest is None or sha256_of(path) != digest.hex:",
        "        if digest is not None and sha256_of(path) != digest.hex:",
        SMK,
    ),
    p("g03", SMOKE, '    for required in ("INSTALLER", "RECORD"):', '    for required in ("RECORD",):', SMK),
    p(
        "g04",
        SMOKE,
        "        or location.is_relative_to(source_tree)\n",
        "",
        SMK,
    ),
    p(
        "g06",
        SMOKE,
        '        report.get("origin") != "installed package"\n        or location',
        "        location",
        SMK,
    ),
    p(
        "e02",
        BACKEND,
        "    if result.returncode != 0 or not result.stdout.strip():",
        "    if result.returncode != 0:",
        BKD,
    ),
    p(
        "e03",
        BACKEND,
        "    if result.returncode != 0:\n        tail",
        "    if result.returncode > 0:\n        tail",
        BKD,
    ),
    p(
        "e04",
        BACKEND,
        "    return str(inner) if isinstance(inner, BackendFailed) else str(exc) or type(exc).__name__",
        "    return str(exc) or type(exc).__name__",
        BKD,
    ),
    # ------------------------------------------------------------------ tiny: the checkpoints the engine tests run on
    p(
        "t01",
        "neurobrix/tiny.py",  # conformance/tiny.py takes this tokenizer from the engine (walk-through 38)
        '        single="<s> $A", special_tokens',
        '        single="$A", special_tokens',
        TINY,
    ),
    p("t03", TINYF, '            if "norm" not in name:', '            if "norm" in name:', TINY),
]
