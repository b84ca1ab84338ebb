"""Gate mutation round 52's planted bugs (not a test file): bugs planted one at a time in the code gate rounds 49-51
added: gate/report.py's escaping of CI runner commands (``shown``, ``_uncommanded``) and gate/__init__.py's stop line
(round 49), gate/repository.py's ``_tables_unlisted`` (the commit's tables against its TRACKED.yaml, round 50), and
``modelled_build`` with ``_check_build_model`` and ``_flat`` (pyproject.toml's ``[tool.hatch.build]``, the backend and
a tracked hatch.toml against the gate's model, round 51). For tests/planted24_driver.py (run as `python
tests/gate52_driver.py COPY RESULTS`): id, file, the exact text replaced, its replacement, and the gate's tests a
contributor would run for it (the round's test file, its fast cases first). The outcome of each:
tests/test_gate_round52.py's docstring."""

from __future__ import annotations

R45 = "tests/test_gate_round45.py"
R49 = "tests/test_gate_round49.py"
R50 = "tests/test_gate_round50.py"
R51 = "tests/test_gate_round51.py"
UNITS = "tests/test_gate_units.py"

ESCAPE = [
    f"{R49}::test_the_escape_keeps_no_double_hash_and_no_leading_colons",
    f"{R49}::test_the_port_reads_the_runners_own_forms",
    R49,
]
STOP = [R49, "-k", "stop_on_a_module"]
TABLES = [R50]
MODEL = [
    f"{R51}::test_each_difference_is_named_in_one_line",
    f"{R51}::test_a_missing_build_table_names_every_modelled_key",
    f"{R51}::test_the_checkouts_own_configuration_and_a_tracked_hatch_toml",
    f"{R51}::test_this_checkouts_build_configuration_is_the_modelled_one",
    R51,
    UNITS,
    "-k",
    "round51 or build or hatch or model or backend",
]

REPORT, INIT, CLI, REPO = "gate/report.py", "gate/__init__.py", "gate/cli.py", "gate/repository.py"


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 500) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ---------------------------------------------------------------- round 49: the report's runner-command escape
    p("s01", REPORT, r'line = line.replace("##", "#\\x23")', r'line = line.replace("##[", "#\\x23[")', ESCAPE),
    p("s02", REPORT, "body = line.lstrip()", 'body = line.lstrip(" ")', ESCAPE),
    p("s03", REPORT, 'if body.startswith("::"):', 'if line.startswith("::"):', ESCAPE),
    p("s04", REPORT, "\\x3a{line[start + 1 :]}", "\\x3a{line[start + 2 :]}", ESCAPE),
    p("s05", REPORT, "start = len(line) - len(body)", "start = 0", ESCAPE),
    p(
        "s06",
        REPORT,
        'line = line.replace("##", "#\\\\x23")\n    body = line.lstrip()',
        'body = line.lstrip()\n    line = line.replace("##", "#\\\\x23") if body.startswith("##") else line',
        ESCAPE,
    ),
    p(
        "s07",
        REPORT,
        'return _uncommanded("".join(ch if unicodedata.category(ch)',
        'return ("".join(ch if unicodedata.category(ch)',
        ESCAPE,
    ),
    p(
        "c01",
        CLI,
        'print(f"gate: error: {shown(str(exc))}", file=sys.stderr)',
        'print(f"gate: error: {exc}", file=sys.stderr)',
        [R49, "-k", "exit_2 or upload_folder"],
    ),
    # ---------------------------------------------------------------- round 49: the stop line of python -m gate
    p(
        "i01",
        INIT,
        '(n if n.isascii() and n.isprintable() else ascii(n)[1:-1]).replace("##", "#\\\\x23") for n in found',
        '(n.replace("##", "#\\\\x23") if n.isascii() and n.isprintable() else ascii(n)[1:-1]) for n in found',
        STOP,
    ),
    p("i02", INIT, "(n if n.isascii() and n.isprintable() else", "(n if n.isprintable() else", STOP),
    p("i03", INIT, "(n if n.isascii() and n.isprintable() else", "(n if n.isascii() else", STOP),
    # ---------------------------------------------------------------- round 50: the commit's tables vs its list
    p(
        "t01",
        REPO,
        "on_disk = (root / TRACKED_LIST).exists() or (root / TRACKED_LIST).is_symlink()",
        "on_disk = (root / TRACKED_LIST).exists()",
        TABLES,
    ),
    p(
        "t02",
        REPO,
        "    if TRACKED_LIST in differs:\n        return set()",
        "    if differs:\n        return set()",
        TABLES,
    ),
    p(
        "t03",
        REPO,
        "if head[TRACKED_LIST][0] not in (_REGULAR, _EXECUTABLE):",
        "if head[TRACKED_LIST][0] != _REGULAR:",
        TABLES,
    ),
    p(
        "t04",
        REPO,
        "parse_list(fh.read(limit + 1), TRACKED_LIST, limit)",
        "parse_list(fh.read(limit), TRACKED_LIST, limit)",
        TABLES,
    ),
    p("t05", REPO, "for path in listed.keys() - head.keys():", "for path in head.keys() - listed.keys():", TABLES),
    p(
        "t06",
        REPO,
        'if not path.startswith(f"{SOURCE_DIR}/") or path == TRACKED_LIST',
        "if not path.startswith(SOURCE_DIR) or path == TRACKED_LIST",
        TABLES,
    ),
    p("t07", REPO, "or path == TRACKED_LIST or path in differs:", "or path in differs:", TABLES),
    p("t08", REPO, "or path == TRACKED_LIST or path in differs:", "or path == TRACKED_LIST:", TABLES),
    p(
        "t09",
        REPO,
        'notes.add(f"{path}: a file of the commit that {TRACKED_LIST} does not list ({_IN_SYNC})")'
        "\n            continue",
        "continue",
        TABLES,
    ),
    p("t10", REPO, "data = fh.read(entry.size + 1) if", "data = fh.read(entry.size) if", TABLES),
    p("t11", REPO, "if data is None or len(data) != entry.size or hashlib", "if data is None or hashlib", TABLES),
    p(
        "t12",
        REPO,
        "if mode in (_REGULAR, _EXECUTABLE) else None",
        "if mode in (_REGULAR, _EXECUTABLE, _SYMLINK) else None",
        TABLES,
    ),
    p("t13", REPO, 'listed = {f"{SOURCE_DIR}/{f.path}": f for f', "listed = {f.path: f for f", TABLES),
    # ---------------------------------------------------------------- round 51: the build configuration vs the model
    p("m01", REPO, 'if backend != BACKEND or "backend-path" in system:', "if backend != BACKEND:", MODEL),
    p(
        "m02",
        REPO,
        'if backend != BACKEND or "backend-path" in system:',
        'if not str(backend).startswith("hatchling") or "backend-path" in system:',
        MODEL,
    ),
    p(
        "m03",
        REPO,
        'if backend != BACKEND or "backend-path" in system:',
        'if str(backend).lower() != BACKEND or "backend-path" in system:',
        MODEL,
    ),
    p(
        "m04",
        REPO,
        'if backend != BACKEND or "backend-path" in system:',
        'if backend not in (BACKEND, None) or "backend-path" in system:',
        MODEL,
    ),
    p(
        "m05",
        REPO,
        "        if name in tracked:\n            raise GateError(",
        "        if tracked.get(name):\n            raise GateError(",
        MODEL,
    ),
    p("m06", REPO, 'for name in ("hatch.toml",):', 'for name in ("hatch.toml"):', MODEL),
    p(
        "m07",
        REPO,
        "        if ours.get(key) != model.get(key)\n",
        "        if key in model and ours.get(key) != model.get(key)\n",
        MODEL,
    ),
    p(
        "m08",
        REPO,
        '    ] + [f"{_dotted(key)} missing, the model\'s {model[key]!r}" for key in sorted(model) if key not in ours]',
        "    ]",
        MODEL,
    ),
    p(
        "m09",
        REPO,
        "    if not isinstance(table, dict) or not table:\n",
        "    if not isinstance(table, dict):\n",
        MODEL,
    ),
    p(
        "m10",
        REPO,
        "    if not isinstance(table, dict) or not table:\n        return {prefix: table}",
        "    if not isinstance(table, dict) or not table:\n"
        "        return {prefix: frozenset(table) if isinstance(table, list) else table}",
        MODEL,
    ),
    p(
        "m11",
        REPO,
        "ours = {} if build is None else _flat(build)",
        'ours = {} if build is None else _flat({"targets": build.get("targets", {})})',
        MODEL,
    ),
    p("m12", REPO, "flat.update(_flat(value, (*prefix, str(key))))", "flat.update(_flat(value, (str(key),)))", MODEL),
    p(
        "m13",
        REPO,
        'include = [f"/{PACKAGE}/", f"/{SOURCE_DIR}/", *([f"/{readme}"] if readme else []), "/pyproject.toml"]',
        'include = [f"/{PACKAGE}/", f"/{SOURCE_DIR}/", *([f"/{readme}"] if readme else [])]',
        MODEL,
    ),
]
