"""Round 25's planted bugs, in the runtime binding code of strict rounds 28-30 (schema's entry digests, tables'
`_bindings`, `_header_stack`, the relative NEUROBRIX_TABLES refusal, conformance.bind), for
tests/planted25_driver.py (round 24's driver on these plants): id, file, the exact text replaced, its replacement,
and the existing tests that exercise it (the outcome of each: tests/test_planted25.py's docstring).

Run as `python tests/planted25_driver.py COPY RESULTS.jsonl [ID ...]`. Strict round 31 replaced the header's
version-line scan (`_PROVENANCE_LINE`, `_TOP_LEVEL`, `_VERSION_LINE`) and `_ENTRY_LINE` with `_record_layout` (the
header parsed alone as YAML, the entries' lines read by `_RECORD_LINE`): planted round 27 re-anchored t01, t09 and t11
on that code, t15 applies unchanged, and t12-t14 are retired (RETIRED: the code they planted in is gone)."""

from __future__ import annotations

B = [
    "tests/test_strict_round28.py",
    "tests/test_strict_round29.py",
    "tests/test_strict_round30.py",
    "tests/test_tables.py",
]
L = [*B, "tests/test_cli.py", "-k", "round28 or round29 or round30 or tables or relative"]
BIND = [*B, "tests/test_cli.py", "tests/test_conformance.py", "-k", "round28 or round29 or round30 or tables or bind"]

SC, TB, BD = "neurobrix/schema.py", "neurobrix/tables.py", "conformance/bind.py"

FAST = "        if carried == own:  # (None, a record in another layout, is no list)\n"


def p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


PLANTS = [
    # ------------------------------------------------------------------ neurobrix/schema.py
    # walk-through 32's follow-up (row_digests: each entry's text built of parts written once per index)
    # re-anchored s01, s03, t01-t03 and t10 on that code, each the same bug
    p("s01", SC, 'tail = \',"kernel":\' + _json(kernel) + "}"', 'tail = "}"', B),
    p("s02", SC, "hexdigest()[:16]", "hexdigest()[:15]", B),
    p("s03", SC, '"[" + _json(dim).replace("{", "{{").replace("}", "}}") + ",{},{}]"', '"[{},{}]"', B),
    p(
        "s04",
        SC,
        "enumerate(entries if isinstance(entries, list) else ())",
        "enumerate(entries[:1] if isinstance(entries, list) else ())",
        B,
    ),
    p(
        "s05",
        SC,
        "        if carried == own[i]:\n            continue",
        "        if carried in own:\n            continue",
        B,
    ),
    p(
        "s06",
        SC,
        'f"it is the proof of entries[{whose[0]}] ({entries[whose[0]].domain.describe()})"',
        'f"it is the proof of entries[{i}] ({entries[i].domain.describe()})"',
        B,
    ),
    p(
        "s07",
        SC,
        '    _bound(entries, [e["proof"]["entry"] for e in data["entries"]], file, kernel, folder)\n',
        '    if index is None:\n        _bound(entries, [e["proof"]["entry"] for e in data["entries"]], file, kernel, folder)\n',  # noqa: E501
        B,
    ),
    # ------------------------------------------------------------------ neurobrix/tables.py
    # round 27: the count match alone, in the fast path's condition as strict round 31 wrote it
    p("t01", TB, FAST, "        if carried is not None and len(carried) == len(own):\n", B),
    p("t02", TB, FAST, "        if carried is not None and carried[1:] == own[1:]:\n", B),
    p("t03", TB, FAST, "        if carried is not None and carried[1:] == own[:-1]:\n", B),
    p(
        "t04",
        TB,
        "        if proved == own:\n            return",
        "        if sorted(proved) == sorted(own):\n            return",
        B,
    ),
    p(
        "t05",
        TB,
        "        if proved == own:\n            return",
        "        if set(own) <= set(proved):\n            return",
        B,
    ),
    p("t06", TB, "        if proved == own:\n            return\n        raise", "        return\n        raise", B),
    p(
        "t07",
        TB,
        "        if stack != dict(index.stack):\n            raise TablesError(",
        '        if {k: stack.get(k) for k in ("torch", "triton")} != {k: index.stack.get(k) for k in ("torch", "triton")}:\n            raise TablesError(',  # noqa: E501
        B,
    ),
    p(
        "t08",
        TB,
        "        if stack != dict(index.stack):\n            raise TablesError(",
        '        if {k: stack.get(k) for k in ("torch", "cuda")} != {k: index.stack.get(k) for k in ("torch", "cuda")}:\n            raise TablesError(',  # noqa: E501
        B,
    ),
    p("t09", TB, r"([0-9a-f]{16})\1(?=\n)", r"([0-9a-f]{15,16})\1(?=\n)", B),  # round 27: in _RECORD_LINE
    # dimension j given bounds j and j + 1 (its lo and hi are 2j and 2j + 1), as `_ranges` read them
    p("t10", SC, "for bound in bounds]", "for j in range(len(key)) for bound in bounds[j : j + 2]]", B),
    # round 27: the header's keys read without refusing one named twice (PyYAML's safe loader keeps the last), where
    # the scan took the first of two provenance blocks
    p("t11", TB, 'head = _parse_yaml(header, "header")', "head = yaml.load(header, SAFE_LOADER)", B),
    p("t15", TB, "header = text[: entries.start()]", "header = text", B),
    p("t16", TB, "min(len(own), len(proved)))", "max(len(own), len(proved)))", B),
    p("t17", TB, "            if own[i] in proved:\n", "            if own[i] in proved[i + 1 :]:\n", B),
    p(
        "t18",
        TB,
        "        if relative_to is not None:  # one folder",
        "        if relative_to is not None and not (Path(relative_to) / root).is_dir():  # one folder",
        L,
    ),
    p("t19", TB, "not os.path.isabs(os.path.expanduser(explicit))", "not os.path.isabs(explicit)", L),
    p(
        "t20",
        TB,
        "            self._bindings(class_id, kernel, index)\n",
        "            if class_id != INTERPRETER:\n                self._bindings(class_id, kernel, index)\n",
        B,
    ),
    # ------------------------------------------------------------------ conformance/bind.py
    p("b01", BD, ' or any("entry" in e["proof"] for e in entries)', "", BIND),
    p("b02", BD, "for dim in key)", "for dim in sorted(key))", BIND),
    p("b03", BD, 'pieces += [text[start:place], "    " + line]', 'pieces += [text[start:place], "  " + line]', BIND),
    p(
        "b04",
        BD,
        "str(path), class_id, kernel, index)\n            written.append",
        "str(path), class_id, kernel)\n            written.append",
        BIND,
    ),
    p("b05", BD, "    track.write(root)\n", "", BIND),
    p("b06", BD, "        return 3\n", "        return 1\n", BIND),
]

# plants whose code strict round 31 removed (the header is parsed alone as YAML now, not scanned line by line)
RETIRED = {
    "t12": "no version-line scan to find a key twice in: the header's parse refuses it (re-planted there as t11)",
    "t13": "no provenance block cut out of the header by a scan: YAML ends each block where it reads it",
    "t14": "no version line read alone: YAML reads a version continued on the next line whole",
}
