"""Round 39's planted bugs, where the count of plants per 100 lines over every tests/planted*_plants.py and
conformance/mutants.py (by file and by function) found none: what round 38 left unplanted (certify's ``at_least`` on
a chunk after the first, check's out-of-memory retry and its ``report.left``, the merge of pooled workers' partial
results), the code the last two sessions added or changed (neurobrix/hub.py's ``_own_snapshot``, strict round 44;
neurobrix/store.py's manifest-name refusal and linked model folders, strict round 43; the generation-config readers
of text rounds 37-38: min_length/min_new_tokens, forced_eos_token_id, nested eos rows, a special token named twice;
gate/archive.py's and gate/zipstrict.py's G312 deflate refusal, gate round 43), and check's ``render`` and
``carried_over`` (the report a contributor reads, ``--resume``), for tests/planted39_driver.py: id, file, the exact
text replaced, its replacement, and the existing tests that exercise it (the outcome of each:
tests/test_planted39.py's docstring)."""

from __future__ import annotations

CERT = ["tests/test_certify_time_limit.py", "tests/test_contributor.py", "-k", "limit or only_missing or log"]
OOM = ["tests/test_conformance.py", "tests/test_ux34.py", "-k", "out_of_memory or second_runs or retried or render"]
WRK = [
    "tests/test_check_interrupted.py",
    "-k",
    "time_limit_stops_the_items or killing_a_pool or check_past_its_time_limit or ended_by_a_signal",
]
RES = ["tests/test_conformance.py", "tests/test_ux34.py", "-k", "resume or render or carried"]
HUB = ["tests/test_strict_round44.py"]
STO = ["tests/test_strict_round43.py", "-k", "another or renamed or case or text_name or linked"]
GEN = ["tests/test_text_round37.py", "tests/test_text_round38.py", "-k", "not drawn"]
GZ = ["tests/test_gate_round43.py", "-k", "sdist_stream or no_gzip_stream or distance_past or zlib_refuses"]

CERTIFY, CHECK, WORKERS = "conformance/certify.py", "conformance/check.py", "conformance/workers.py"
HUBF, STORE, TOK, GENF = "neurobrix/hub.py", "neurobrix/store.py", "neurobrix/tokenizer.py", "neurobrix/generate.py"
ARCHIVE, ZIP = "gate/archive.py", "gate/zipstrict.py"


def p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


PLANTS = [
    # ------------------------------------------------------------------ certify: a chunk after the first
    p(
        "c01",
        CERTIFY,
        "            at_least, stopped = int(first == 0), False",
        "            at_least, stopped = 1, False",
        CERT,
    ),
    p("c02", CERTIFY, "            longest = max(longest, t3 - now)", "            longest = t3 - now", CERT),
    p(
        "c03",
        CERTIFY,
        "                return _stopped(written, len(todo) - first, failures, say)",
        "                return _stopped(written, len(todo) - first - chunk_size, failures, say)",
        CERT,
    ),
    p(
        "c04",
        CERTIFY,
        "                        stopped, done = True, exc.done",
        "                        stopped, done = True, {}",
        CERT,
    ),
    # ------------------------------------------------------------------ check: the out-of-memory retry
    p(
        "k01",
        CHECK,
        "                    report.left += len(unrun)",
        "                    report.left = len(unrun)",
        OOM,
    ),
    p(
        "k02",
        CHECK,
        "                        if deadline is not None and now + longest_alone > deadline:",
        "                        if deadline is not None and first and now + longest_alone > deadline:",
        OOM,
    ),
    p(
        "k03",
        CHECK,
        "                    wave, longest_alone = len(devices), longest",
        "                    wave, longest_alone = len(devices), 0.0",
        OOM,
    ),
    p(
        "k04",
        CHECK,
        "                    unrun = {i for i, _, _ in starved[report.retried :]}\n"
        "                    report.results = [r for i, r in enumerate(report.results) if i not in unrun]\n",
        "                    unrun = {i for i, _, _ in starved[report.retried :]}\n",
        OOM,
    ),
    p(
        "k05",
        CHECK,
        "                            report.results[i] = outcome(w, item, result)",
        "                            report.results[i] = outcome(i, item, result)",
        OOM,
    ),
    p(
        "k06",
        CHECK,
        "            report.results = [r for i, r in enumerate(report.results) if i not in unrun]\n"
        "            report.left = len(work) - (len(report.results) - before)\n"
        '            report.stopped, report.seconds = "interrupted"',
        "            report.left = len(work) - (len(report.results) - before)\n"
        '            report.stopped, report.seconds = "interrupted"',
        OOM,
    ),
    # ------------------------------------------------------------------ workers: the merge of partial results
    p(
        "w01",
        WORKERS,
        "            if _cut(limit, finished):\n"
        "                raise OutOfTime({j: r for j, r in enumerate(results) if r is not None})",
        "            if _cut(limit, finished):\n                raise OutOfTime(dict(enumerate(results)))",
        WRK,
    ),
    p(
        "w02",
        WORKERS,
        "                    results[i] = future.result()",
        "                    results[finished] = future.result()",
        WRK,
    ),
    p(
        "w03",
        WORKERS,
        "            try:\n                return self._run_here_or_pooled(pool, fn, items, on_done, results, limit)\n"
        "            except KeyboardInterrupt as exc:\n"
        "                exc.done = {i: r for i, r in enumerate(results) if r is not None}",
        "            try:\n                return self._run_here_or_pooled(pool, fn, items, on_done, results, limit)\n"
        "            except KeyboardInterrupt as exc:\n"
        "                exc.done = {}",
        WRK,
    ),
    p(
        "w04",
        WORKERS,
        "                self.close(kill=True)\n"
        "                raise OutOfTime({i: r for i, r in enumerate(results) if r is not None})",
        "                self.close(kill=True)\n                raise OutOfTime({})",
        WRK,
    ),
    p(
        "w05",
        CHECK,
        "                            keep(first + j, part[j], result)\n"
        "                        report.left = len(work) - (len(report.results) - before)",
        "                            keep(j, part[j], result)\n"
        "                        report.left = len(work) - (len(report.results) - before)",
        WRK,
    ),
    p(
        "w06",
        CHECK,
        "                        report.left = len(work) - (len(report.results) - before)\n"
        "                        break",
        "                        report.left = len(work) - len(report.results)\n                        break",
        WRK,
    ),
    p(
        "w07",
        CHECK,
        "isinstance(result, workers.Crashed) and workers.ended_by_interrupt(result.exitcode)",
        "isinstance(result, workers.Crashed)",
        WRK,
    ),
    # ------------------------------------------------------------------ check: the report a contributor reads
    p(
        "r01",
        CHECK,
        '        + (f"; {counted(report.left, \'entry check\')} not run ({report.stopped})" if report.left else "")',
        '        + (f"; {counted(report.left, \'entry check\')} not run ({report.stopped})" if report.retried else "")',
        RES,
    ),
    p(
        "r02",
        CHECK,
        '            f"{len(report.results) - carried} checked in this run"',
        '            f"{len(report.results)} checked in this run"',
        RES,
    ),
    p(
        "r03",
        CHECK,
        '        if isinstance(item, dict) and item.get("passed"):',
        "        if isinstance(item, dict):",
        RES,
    ),
    p(
        "r04",
        CHECK,
        '        if old.get(name, False if name == "shipped" else None) != ours:',
        "        if old.get(name) != ours:",
        RES,
    ),
    # ------------------------------------------------------------------ hub: a snapshot holding what is not its own
    p(
        "h01",
        HUBF,
        "    if own.name.casefold() != repo.name.casefold():",
        "    if own.name != repo.name:",
        HUB,
    ),
    p(
        "h02",
        HUBF,
        '    if real != own / "snapshots" / snapshot.name:',
        '    if real.parent != own / "snapshots":',
        HUB,
    ),
    p(
        "h03",
        HUBF,
        "            if not target.is_relative_to(own):",
        "            if not target.is_relative_to(own.parent):",
        HUB,
    ),
    p("h04", HUBF, "        for name in sorted(dirs + files):", "        for name in sorted(files):", HUB),
    p(
        "h05",
        HUBF,
        "            target = Path(os.path.realpath(entry))",
        "            target = entry.resolve(strict=True)",
        HUB,
    ),
    p(
        "h06",
        HUBF,
        "    own = Path(os.path.realpath(repo))",
        "    own = Path(os.path.realpath(repo.parent)) / repo.name",
        HUB,
    ),
    # ------------------------------------------------------------------ store: the manifest's name, linked folders
    p(
        "s01",
        STORE,
        "    held = 0 if link else _bytes_under(path)",
        "    held = _bytes_under(path)",
        STO,
    ),
    p(
        "s02",
        STORE,
        '    except ForeignManifestError as exc:\n        model = StoredModel(key, path, "unknown", None, (), 0)\n'
        '        damage = [f"its {MANIFEST} was the one of {exc.owner!r}',
        '    except ForeignManifestError as exc:\n        model = StoredModel(key, path, "unknown", None, (), 0)\n'
        '        damage = [f"its {MANIFEST} was the one of {exc.args[0]!r}',
        STO,
    ),
    p(
        "s03",
        STORE,
        "is the one of {printable(data['name'])!r} ",
        "is the one of {data['name']!r} ",
        STO,
    ),
    p(
        "s04",
        STORE,
        "    if path.is_symlink():\n        try:\n            path.unlink()",
        "    if path.is_symlink() and not path.exists():\n        try:\n            path.unlink()",
        STO,
    ),
    # ------------------------------------------------------------------ generation settings (text rounds 37-38)
    p(
        "t01",
        TOK,
        '        named = "min_new_tokens" if fresh is not None else "min_length"',
        '        named = "min_new_tokens" if fresh else "min_length"',
        GEN,
    ),
    p(
        "t02",
        TOK,
        '        if settings.get("eos_token_id") is None:  # no eos id to mask',
        '        if not settings.get("eos_token_id"):  # no eos id to mask',
        GEN,
    ),
    p(
        "t03",
        TOK,
        "        if (least > 0 and not isinstance(least, int)) or (value > 0 and not isinstance(value, int)):",
        "        if value > 0 and not isinstance(value, int):",
        GEN,
    ),
    p(
        "t04",
        TOK,
        "    if shape is not None and len(shape) > 1 and shape[1:] != (1,) and",
        "    if shape is not None and len(shape) > 1 and shape[-1] != 1 and",
        GEN,
    ),
    p(
        "t05",
        TOK,
        '    if eos is not None and _tensor_ids(eos) == [] and settings.get("pad_token_id") is None:',
        "    if eos is not None and _tensor_ids(eos) == []:",
        GEN,
    ),
    p("t06", TOK, "        if not all(i < vocab for i in ids):", "        if not all(i <= vocab for i in ids):", GEN),
    p("t07", TOK, "            if flags not in seen:\n", "            if True:\n", GEN),
    p(
        "t08",
        TOK,
        "        elif str(token) not in known and token not in to_add:\n            seen.add(flags)\n",
        "        elif str(token) not in known and token not in to_add:\n",
        GEN,
    ),
    p(
        "t09",
        GENF,
        "        if eos and (length < c.min_length or length - self.prompt_len < c.min_new_tokens):",
        "        if eos and (length < c.min_length or length - self.prompt_len <= c.min_new_tokens):",
        GEN,
    ),
    p(
        "t10",
        GENF,
        "        if c.forced_eos_token_id and length == self.max_length - 1:",
        "        if c.forced_eos_token_id and length >= self.max_length - 1:",
        GEN,
    ),
    p(
        "t11",
        GENF,
        "        eos = [e for e in self.eos if 0 <= e < vocab]",
        "        eos = [e for e in self.eos if e < vocab]",
        GEN,
    ),
    # ------------------------------------------------------------------ gate: G312, a deflate stream zlib refuses
    p(
        "z01",
        ARCHIVE,
        "        if not out and rest is raw and raw[:3] != GZIP_MAGIC + GZIP_DEFLATE:",
        "        if not out and raw[:3] != GZIP_MAGIC + GZIP_DEFLATE:",
        GZ,
    ),
    p(
        "z02",
        ARCHIVE,
        "            f\"the gzip stream is corrupt{f' after {len(out)} bytes' if out else ''}: {exc}\"\n"
        '            f"{zipstrict.lenient_inflaters(exc)}",',
        "            f\"the gzip stream is corrupt{f' after {len(out)} bytes' if out else ''}: {exc}\",",
        GZ,
    ),
    p("z03", ZIP, "        if error in str(exc):", "        if str(exc).endswith(error + '.'):", GZ),
    p(
        "z04",
        ZIP,
        '        raise Unreadable(f"not a valid deflate stream: {exc}{lenient_inflaters(exc)}") from exc',
        '        raise Unreadable(f"not a valid deflate stream: {exc}") from exc',
        GZ,
    ),
    p(
        "z05",
        ZIP,
        '    "invalid bit length repeat": "a code length repeat with none before it, which Info-ZIP\'s unzip and GNU '
        'gzip read "\n    "as a repeat of 0",\n',
        "",
        GZ,
    ),
]
