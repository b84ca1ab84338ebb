"""Round 25's planted bugs, in the runtime binding code of strict rounds 28-30 (schema's entry digests, tables'
`_bindings`, `_header_stack`, the relative NEUROBRIX_TABLES refusal, conformance.bind), for
tests/planted24_driver.py (run as `python tests/planted24_driver.py COPY RESULTS --plants planted25_plants`): id,
file, the exact text replaced, its replacement, and the existing tests that exercise it (the outcome of each:
tests/test_planted25.py's docstring)."""

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

FAST = """        if len(carried) == len(index.rows) and all(
            found == row_digest(kernel_json, class_json, configs[config], dtypes, _ranges(key, bounds))
            for found, (dtypes, bounds, config) in zip(carried, index.rows)
        ):
            return"""


def p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


PLANTS = [
    # ------------------------------------------------------------------ neurobrix/schema.py
    p("s01", SC, 'f\'"dtypes":{_json(list(dtypes))},"kernel":{kernel}}}\'', "f'\"dtypes\":{_json(list(dtypes))}}}'", B),
    p("s02", SC, "hexdigest()[:16]", "hexdigest()[:15]", B),
    p("s03", SC, "_json([list(r) for r in ranges])", "_json([list(r)[1:] for r in ranges])", B),
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
    p("t01", TB, FAST, "        if len(carried) == len(index.rows):\n            return", B),
    p("t02", TB, "in zip(carried, index.rows)\n", "in zip(carried[1:], index.rows[1:])\n", B),
    p("t03", TB, "in zip(carried, index.rows)\n", "in zip(carried[1:], index.rows)\n", B),
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
    p("t09", TB, r"([0-9a-f]{16})\1\r?\n", r"([0-9a-f]{15,16})\1\r?\n", B),
    p(
        "t10",
        TB,
        "return [(dim, bounds[2 * j], bounds[2 * j + 1]) for",
        "return [(dim, bounds[j], bounds[j + 1]) for",
        B,
    ),
    p("t11", TB, "    if len(blocks) != 1:\n        return None", "    if not blocks:\n        return None", B),
    p("t12", TB, "    if len(set(names)) != len(names) or ", "    if ", B),
    p("t13", TB, "block = _TOP_LEVEL.split(header[blocks[0].end() :], 1)[0]", "block = header[blocks[0].end() :]", B),
    p("t14", TB, r"[ \t]*\r?\n(?=  \S|\S|\Z)", r"[ \t]*\r?\n", B),
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
