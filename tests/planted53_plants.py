"""Round 53's planted bugs, in the proof records certify writes and what reads them back (class: a record that says
something other than what was proven): conformance/certify.py (what a proof records: its examples, worst ratio,
candidates, the provenance's stack, commit and runs, the order entries are written in, a resumed or interrupted run's
tables), conformance/sources.py (``check --record``'s ``reproved`` record), conformance/reproof.py (a local re-proof's
record), conformance/track.py and ``tables.scan`` (the tracked-file list), ``tables.verify_all``, ``Tables.proofs``
and the record's fast read (``_record_layout``), ``schema._proof_numbers``; and the rotary/rope draws and references
at head dims that are no power of two (conformance/reference.py, conformance/specs/rotary.py). For
tests/planted53_driver.py: id, file, the exact text replaced, its replacement, and the existing tests a contributor
would run for it (the outcome of each: tests/test_planted53.py's docstring)."""

from __future__ import annotations

CERTIFY, CHECK, SOURCES, REPROOF = (
    "conformance/certify.py",
    "conformance/check.py",
    "conformance/sources.py",
    "conformance/reproof.py",
)
TRACK, TABLES, SCHEMA = "conformance/track.py", "neurobrix/tables.py", "neurobrix/schema.py"
REF, ROTSPEC = "conformance/reference.py", "conformance/specs/rotary.py"

CONF = "tests/test_conformance.py::"
CONTRIB = "tests/test_contributor.py::"
T_CERT = [  # certify's own tests: what it writes, resumes, narrows, times; its time limit, its log, Ctrl-C; the binding
    CONF + "test_certify_writes_proven_tracked_tables_and_resumes",
    CONF + "test_certify_and_check_spread_over_worker_processes",
    CONF + "test_where_narrows_certify_to_part_of_a_key_dimension",
    CONF + "test_reformat_rewrites_a_format_3_index_from_its_proofs_with_the_same_entries",
    CONF + "test_a_table_recorded_with_what_torch_states_takes_entries_from_its_distribution_reading",
    CONF + "test_a_candidate_that_fails_to_compile_is_rejected_not_fatal",
    "tests/test_certify_time_limit.py",
    CONTRIB + "test_certify_prints_its_lines_whole_in_a_log",
    CONTRIB + "test_ctrl_c_while_certify_writes_a_table_leaves_it_whole",
    CONTRIB + "test_certify_only_missing_with_nothing_missing_says_so",
    CONTRIB + "test_certify_where_selecting_no_domain_is_refused",
    "tests/test_source_binding.py::test_certify_adds_no_entry_to_a_table_proven_on_other_code",
    "tests/test_planted48.py",
]
SB, P48 = "tests/test_source_binding.py::", "tests/test_planted48.py::"
T_RECORD = [  # check --record and the local re-proof
    SB + "test_check_record_binds_only_a_whole_passing_proof",
    SB + "test_a_local_reproof_stands_for_the_code_it_checked",
    P48 + "test_record_binds_a_whole_passing_check_on_the_certified_stack",
    P48 + "test_record_binds_nothing_after_a_failed_check",
    P48 + "test_record_binds_nothing_on_another_stack",
    P48 + "test_record_binds_nothing_where_triton_is_told_to_compile_otherwise",
    P48 + "test_results_of_settings_checked_where_they_are_shipped_prove_no_entry",
]
T_TABLES = [  # the tables' tests, and the binding's that read records through verify
    "tests/test_tables.py",
    SB + "test_an_index_stating_other_code_than_its_proofs_is_refused",
    P48 + "test_verify_lists_every_unbound_table_those_bound_to_none_too",
]
T_TRACK = [
    "tests/test_tables.py",
    "tests/test_planted42.py::test_certify_writes_the_tracked_list_track_would_write",
    CONF + "test_certify_writes_proven_tracked_tables_and_resumes",
]
T_CHECK = [
    CONF + "test_check_resumes_from_a_report_of_the_same_tables_kernels_and_bounds",
    CONF + "test_certify_writes_proven_tracked_tables_and_resumes",
    "tests/test_planted39.py",
    "tests/test_planted49.py",
]
T_ROT = [  # the references' own tests, the yarn and rotary_dim mutants', the rotary record's tables
    "tests/test_reference.py",
    "tests/test_kmut3.py",
    "tests/test_kmut4.py::test_partial_rotary_reference_is_transformers_own",
    "tests/test_kmut4.py::test_the_rotary_record_catches_rotary_dim_ignored_in_every_case",
    CONF + "test_rotary_checks_a_dynamic_table_as_long_as_the_context_on_every_case",
    CONF + "test_rotary_draws_the_engines_tables_for_every_rope_configuration_in_use",
    "tests/test_conformance_planted.py::test_the_rotary_record_draws_every_rope_rule_the_engine_reads",
]


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 900) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ certify: what a proof records
    p(  # the proof records the examples asked for, not those its check ran (explicit edges included, a run cut short)
        "c01",
        CERTIFY,
        "                        result.examples,\n                        result.worst_ratio,\n",
        "                        examples,\n                        result.worst_ratio,\n",
        T_CERT,
    ),
    p(  # the worst relative error recorded as the worst ratio to the bound
        "c02",
        CERTIFY,
        "                        result.examples,\n                        result.worst_ratio,\n",
        "                        result.examples,\n                        result.worst_relative,\n",
        T_CERT,
    ),
    p(  # every task screened with the run's seed, not seed + its index
        "c03",
        CERTIFY,
        "{n: (class_id, task, seed + i) for n, (i, task) in enumerate(chunk)}",
        "{n: (class_id, task, seed) for n, (i, task) in enumerate(chunk)}",
        T_CERT,
    ),
    p(  # --only-missing takes a domain certified in one dtype as done in every dtype
        "c04",
        CERTIFY,
        "        done = any(e.domain.ranges == task.ranges and task.dtype in e.domain.dtypes"
        " for e in have[task.kernel])\n",
        "        done = any(e.domain.ranges == task.ranges for e in have[task.kernel])\n",
        T_CERT,
    ),
    p(  # an entry certified again replaces every entry of its domain, the other dtypes' too (they are lost)
        "c05",
        CERTIFY,
        "                have[task.kernel] = without_dtype(have[task.kernel], task) + [result.entry]\n",
        "                kept = [e for e in have[task.kernel] if not (e.domain.ranges == task.ranges)]\n"
        "                have[task.kernel] = kept + [result.entry]\n",
        T_CERT,
    ),
    p(  # --where M=1:64 refuses a domain that ends at 64 (the edge off by one)
        "c06",
        CERTIFY,
        "        if span[0] < lo or (hi is not None and (span[1] is None or span[1] > hi)):\n",
        "        if span[0] < lo or (hi is not None and (span[1] is None or span[1] >= hi)):\n",
        T_CERT,
    ),
    p(  # the domain's top shape (where candidates are screened and timed) one below the domain's top
        "c07",
        CERTIFY,
        "        top = caps[dim] if hi is None else hi\n",
        "        top = caps[dim] if hi is None else hi - 1\n",
        T_CERT,
    ),
    p(  # the provenance without CUDA's version: the index's stack (stack_of) then names none
        "c08",
        CERTIFY,
        '        "cuda": str(torch.version.cuda),\n',
        "",
        T_CERT,
    ),
    p(  # uncommitted changes under conformance/ (references, bounds, the check) not marked in the commit recorded
        "c09",
        CERTIFY,
        '["git", "status", "--porcelain", "--", "neurobrix", "conformance"]',
        '["git", "status", "--porcelain", "--", "neurobrix"]',
        T_CERT,
    ),
    p(  # a run adding entries overwrites the first run's date, commit and command
        "c10",
        CERTIFY,
        '    return {**old, "resumed": resumed}\n',
        '    return {**old, **current, "resumed": resumed}\n',
        T_CERT,
    ),
    p(  # a resumed run recorded without its command
        "c11",
        CERTIFY,
        '    run = {k: current[k] for k in ("date", "git_commit", "command")}\n',
        '    run = {k: current[k] for k in ("date", "git_commit")}\n',
        T_CERT,
    ),
    p(  # a resumed run not recorded at all
        "c12",
        CERTIFY,
        "    resumed.append(run)\n",
        "",
        T_CERT,
    ),
    p(  # the entries written in the order they were certified, not sorted (a resumed run's appended last)
        "c13",
        CERTIFY,
        "    ordered = sorted(entries, key=lambda e: (e.domain.dtypes,"
        " [(lo, hi or 0) for _, lo, hi in e.domain.ranges]))\n",
        "    ordered = list(entries)\n",
        T_CERT,
    ),
    p(  # the candidate right after the winner not listed as rejected (slower)
        "c14",
        CERTIFY,
        "            for m, ((_, slower), other) in enumerate(ranked[n + 1 :], start=n + 1):\n",
        "            for m, ((_, slower), other) in enumerate(ranked[n + 2 :], start=n + 2):\n",
        T_CERT,
    ),
    p(  # a chunk stopped at the time limit returns before writing the entries it did finish
        "c15",
        CERTIFY,
        "            for kernel in sorted(touched):\n"
        "                write_table(root, class_id, kernel, have[kernel], provs[kernel])\n"
        "            if stopped:\n"
        "                return _stopped(written, left + len(todo) - first - len(chunk), failures, say)\n",
        "            if stopped:\n"
        "                return _stopped(written, left + len(todo) - first - len(chunk), failures, say)\n"
        "            for kernel in sorted(touched):\n"
        "                write_table(root, class_id, kernel, have[kernel], provs[kernel])\n",
        T_CERT,
    ),
    p(  # a Ctrl-C caught while a table was written is swallowed: the run goes on as if never interrupted
        "c16",
        CERTIFY,
        "        if caught:\n            signal.raise_signal(caught[0])\n",
        "",
        T_CERT,
    ),
    p(  # a faster candidate that failed its proof not recorded as rejected
        "c17",
        CERTIFY,
        '        rejected.append((config, "wrong_result", '
        "f\"failed its proof: {(result.failure or '').splitlines()[0]}\"))\n",
        "",
        T_CERT,
    ),
    p(  # the timing shape taken from the odd size below the top, not the top
        "c18",
        CERTIFY,
        "def timing_shape(task: Task) -> dict[str, int]:\n    return edge_shapes(task)[1]\n",
        "def timing_shape(task: Task) -> dict[str, int]:\n    return edge_shapes(task)[2]\n",
        T_CERT,
    ),
    # ------------------------------------------------------------------ check: the summary a re-proof records
    p(  # a kernel's worst ratio in the summary: the last entry's, not the largest
        "k01",
        CHECK,
        '            s["worst_ratio"] = max(s["worst_ratio"], r.worst_ratio)\n',
        '            s["worst_ratio"] = r.worst_ratio\n',
        T_CHECK,
    ),
    p(  # the summary's examples: the last entry's, not their sum
        "k02",
        CHECK,
        '            s["examples"] += r.examples\n',
        '            s["examples"] = r.examples\n',
        T_CHECK,
    ),
    # ------------------------------------------------------------------ check --record: the reproved record
    p(  # the worst error recorded is the smallest entry's worst, not the largest
        "s01",
        SOURCES,
        "    worst = max((passed[k] for k in need if k in passed), default=0.0)\n",
        "    worst = min((passed[k] for k in need if k in passed), default=0.0)\n",
        T_RECORD,
    ),
    p(  # each --record replaces the table's earlier re-proofs instead of appending to them
        "s02",
        SOURCES,
        '        prov["reproved"] = [*prov.get("reproved", []), check]\n',
        '        prov["reproved"] = [check]\n',
        T_RECORD,
    ),
    p(  # a check of exactly the examples a proof takes refused (the threshold off by one)
        "s03",
        SOURCES,
        "    elif report.examples_per_entry < min_examples():\n",
        "    elif report.examples_per_entry <= min_examples():\n",
        T_RECORD,
    ),
    p(  # the entry checks recorded: every result of the report (other kernels', shipped settings'), not the table's
        "s04",
        SOURCES,
        '            "entry_checks": total,\n',
        '            "entry_checks": len(report.results),\n',
        T_RECORD,
    ),
    p(  # the device recorded by its backend, not its name
        "s05",
        SOURCES,
        '            "device": run["device"].get("name", run["device"].get("backend", "")),\n',
        '            "device": run["device"].get("backend", ""),\n',
        T_RECORD,
    ),
    p(  # the re-proof's digest over the summary alone, not the whole report
        "s06",
        REPROOF,
        '        "report_sha256": hashlib.sha256(json.dumps(summary, sort_keys=True).encode()).hexdigest(),\n',
        '        "report_sha256": '
        'hashlib.sha256(json.dumps(summary["summary"], sort_keys=True).encode()).hexdigest(),\n',
        T_RECORD,
    ),
    p(  # a check narrowed by --variant taken for the whole class
        "s07",
        REPROOF,
        '    if any(getattr(args, name, None) for name in ("kernel", "dtype", "variant", "where")):\n',
        '    if any(getattr(args, name, None) for name in ("kernel", "dtype", "where")):\n',
        T_RECORD,
    ),
    # ------------------------------------------------------------------ the tracked-file list
    p(  # a missing TRACKED.yaml is never written (only one whose text changed)
        "t01",
        TRACK,
        '    changed = not path.is_file() or path.read_text(encoding="utf-8") != text\n',
        '    changed = path.is_file() and path.read_text(encoding="utf-8") != text\n',
        T_TRACK,
    ),
    p(  # `track --check` names a hand-edited list only where the files disagree too
        "t02",
        TRACK,
        '    if not problems and path.read_text(encoding="utf-8") != render_tracked(scan(root), listed):\n',
        '    if problems and path.read_text(encoding="utf-8") != render_tracked(scan(root), listed):\n',
        T_TRACK,
    ),
    p(  # the folder scanned in the order the file system lists it
        "t03",
        TABLES,
        '    for path in sorted(root.rglob("*")):\n        rel = path.relative_to(root).as_posix()\n'
        "        if rel == TRACKED_NAME or path.is_dir():\n",
        '    for path in root.rglob("*"):\n        rel = path.relative_to(root).as_posix()\n'
        "        if rel == TRACKED_NAME or path.is_dir():\n",
        T_TRACK,
    ),
    # ------------------------------------------------------------------ tables verify and the records' readers
    p(  # tables verify reads each index (its bindings) but no record in full
        "v01",
        TABLES,
        "                tables.proofs(class_id, kernel)\n                index = tables.index(class_id, kernel)\n",
        "                index = tables.index(class_id, kernel)\n",
        T_TABLES,
    ),
    p(  # the record read in full without its class: the device its proofs were made on not held to the class
        "v02",
        TABLES,
        "        return parse_proofs(data, str(path), class_id, kernel, index, self.classes[class_id])\n",
        "        return parse_proofs(data, str(path), class_id, kernel, index)\n",
        T_TABLES,
    ),
    p(  # the record's fast read takes a header of another class
        "v03",
        TABLES,
        '    if (kernel is not None and head["kernel"] != kernel) or '
        '(class_id is not None and head["class"] != class_id):\n',
        '    if kernel is not None and head["kernel"] != kernel:\n',
        T_TABLES,
    ),
    p(  # a proof whose best time equals its median refused (the best is never above the median: equal is fine)
        "v04",
        SCHEMA,
        "    if proof.time_best_us > proof.time_median_us:\n",
        "    if proof.time_best_us >= proof.time_median_us:\n",
        T_TABLES,
    ),
    p(  # a record with more entries than its index read as proving the index (zip stops at the shorter)
        "v05",
        SCHEMA,
        "        if len(entries) != len(index.entries):\n",
        "        if len(entries) < len(index.entries):\n",
        T_TABLES,
    ),
    # ------------------------------------------------------------------ rope and rotary at head dims no power of two
    p(  # the reference's exponents 2i / D rounded to fp32 (transformers' arange / dim): exact at powers of two only
        "q01",
        REF,
        "    inv_freq = [1.0 / theta ** (2 * i / dim) for i in range(head_dim // 2)]\n",
        "    exponents = torch.arange(0, 2 * (head_dim // 2), 2, dtype=torch.float32) / dim\n"
        "    inv_freq = [1.0 / theta ** float(x) for x in exponents]\n",
        T_ROT,
    ),
    p(  # the case's partial table over the whole head dim (rotary_dim D): the partial rule never compared
        "q02",
        ROTSPEC,
        '        partial = {"rope_type": "linear", "factor": 2.0, "rotary_dim": 2 * half - 1}\n',
        '        partial = {"rope_type": "linear", "factor": 2.0, "rotary_dim": 2 * half}\n',
        T_ROT,
    ),
    p(  # rotary's head dims drawn as multiples of 32 only (the catalogue's are 64 and 128)
        "q03",
        ROTSPEC,
        '        sweep={"T": (1, 192), "H": (2, 40), "D": (2, 128)},\n'
        '        small=small,\n        multiple_of={"D": 2},\n',
        '        sweep={"T": (1, 192), "H": (2, 40), "D": (2, 128)},\n'
        '        small=small,\n        multiple_of={"D": 32},\n',
        T_ROT,
    ),
    p(  # a partial rotary_dim's frequencies counted over rotary_dim // 2 (one fewer at an odd rotary_dim)
        "q04",
        REF,
        "    inv_freq = [1.0 / theta ** (2 * i / dim) for i in range(head_dim // 2)]\n",
        "    inv_freq = [1.0 / theta ** (2 * i / dim) for i in range(dim // 2)]\n",
        T_ROT,
    ),
    p(  # yarn's correction dims placed over the next power of two of the head dim
        "q05",
        REF,
        "    dim = 2 * len(inv_freq)\n",
        "    dim = 1 << (2 * len(inv_freq) - 1).bit_length()\n",
        T_ROT,
    ),
]
