"""Round 48's planted bugs, in the kernel-code binding built this session (class: a proof bound to other code than it
runs): neurobrix/kernel_source.py (the digest and the files it covers), neurobrix/stack.py (``sources_problem``,
``require_certified_stack``'s order and its re-proof exemption), conformance/sources.py (``check --record``: the
coverage count, the stack, examples and partial-check conditions, what it writes), conformance/certify.py
(``merged_provenance``'s refusal, the per-kernel provenance), neurobrix/tables.py (``verify_all``),
neurobrix/schema.py (``stack_of``, the provenance schema) and neurobrix/doctor.py. For tests/planted48_driver.py:
id, file, the exact text replaced, its replacement, and the existing tests a contributor would run for it (the
outcome of each: tests/test_planted48.py's docstring)."""

from __future__ import annotations

# the shipped nvidia-h200 tables await their re-proof on an H200 (not this round's): the tests that fail for that
# alone on the clean code are left out, so that an outcome is the plant's
SHIPPED = [
    "--deselect",
    "tests/test_source_binding.py::test_every_shipped_class_is_proven_on_its_kernels_code_as_it_is",
    "--deselect",
    "tests/test_tables.py::test_the_shipped_tables_are_the_format_2_tables_re_encoded",
    "--deselect",
    "tests/test_tables.py::test_a_plan_launches_with_the_class_launch_features",
]
BINDING = ["tests/test_source_binding.py", *SHIPPED]
TABLES = ["tests/test_source_binding.py", "tests/test_tables.py", *SHIPPED]
KSF, STF, SRF, CTF = (
    "neurobrix/kernel_source.py",
    "neurobrix/stack.py",
    "conformance/sources.py",
    "conformance/certify.py",
)
TBF, SCF, DRF = "neurobrix/tables.py", "neurobrix/schema.py", "neurobrix/doctor.py"


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 600) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ kernel_source.py: the digest
    p("b01", KSF, "    return repr(node)\n", "    return type(node).__name__\n", BINDING),  # constants ignored
    p(
        "b02",
        KSF,
        "        return f\"{type(node).__name__}({','.join(fields)})\"",
        '        return f"{type(node).__name__}({\',\'.join(fields)})" if fields else "op"',  # operators ignored
        BINDING,
    ),
    p(
        "b03",
        KSF,
        '        return "[" + ",".join(_canonical(item) for item in node) + "]"',
        '        return "[" + ",".join(sorted(_canonical(item) for item in node)) + "]"',  # statements' order ignored
        BINDING,
    ),
    p(
        "b04",
        KSF,
        """            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):""",
        """            and isinstance(body[0], ast.Expr)
        ):""",  # any first expression statement dropped as if a docstring (a call: tl.debug_barrier())
        BINDING,
    ),
    p(
        "b05",
        KSF,
        'if value is not None and value != [] and name not in ("kind", "type_comment")',
        'if value is not None and value != [] and name not in ("kind", "type_comment", "decorator_list")',
        BINDING,  # decorators (@triton.jit, @triton.heuristics) left out of the code
    ),
    p(
        "b06",
        KSF,
        '_reached(folder, ["__init__.py", declared[0], "_common.py", "spec.py"], skip=own)',
        '_reached(folder, ["__init__.py", declared[0], "spec.py"], skip=own)',  # _common.py only where imported
        BINDING,
    ),
    p(
        "b07",
        KSF,
        '        todo += [f for f in imported if not (name == "__init__.py" and f in skip)]\n',
        "",  # no import followed
        BINDING,
    ),
    p(
        "b08",
        KSF,
        "    key = (str(path), hashlib.sha256(data).digest())",
        '    key = (str(path), b"")',  # cached by name: a file edited in this process reads as before
        BINDING,
    ),
    p(
        "b09",
        KSF,
        "    declared = [name for name in runs if kernel in _read_source(folder / name).specs]",
        "    declared = [name for name in runs if name[:-3] in kernel]",  # the module found by the kernel's name
        BINDING,
    ),
    p(
        "b10",
        KSF,
        "(isinstance(node.func, ast.Name) and node.func.id in callers)",
        "isinstance(node.func, ast.Name)",  # any call's first text taken for a kernel it declares
        BINDING,
    ),
    p(
        "b11",
        KSF,
        'digest.update(name.encode() + b"\\0" + _read_source(folder / name)[0])',
        "digest.update(_read_source(folder / name)[0])",  # the files' names left out
        BINDING,
    ),
    p(
        "b12",
        KSF,
        '        for path in [target, *(target + [n] for n in names if n != "*")]:',
        "        for path in [target]:",  # `from . import x`: the names imported not followed
        BINDING,
    ),
    # ------------------------------------------------------------------ stack.py
    p(
        "s01",
        STF,
        "        if recorded == kernel_source(name):\n            continue",
        "        if not recorded or recorded == kernel_source(name):\n            continue",  # no source accepted
        BINDING,
    ),
    p(
        "s02",
        STF,
        "        if recorded == kernel_source(name):\n            continue",
        "        if (recorded or '')[:8] == kernel_source(name)[:8]:\n            continue",  # a prefix compared
        BINDING,
    ),
    p(
        "s03",
        STF,
        "    problem = None if found.reproof is not None else sources_problem(",
        "    problem = None if found.ok else sources_problem(",  # exempt whenever the stack is certified
        BINDING,
    ),
    p(
        "s04",
        STF,
        "    problem = None if found.reproof is not None else sources_problem(",
        "    problem = sources_problem(",  # no re-proof exemption
        BINDING,
    ),
    p(
        "s05",
        STF,
        "    problem = installed_kernels_problem()\n    if problem:\n",
        "    problem = installed_kernels_problem() or sources_problem(class_id, tables or load())\n    if problem:\n",
        BINDING,  # the code checked first, before the stack (a class on another stack told to --record)
    ),
    p(
        "s06",
        STF,
        "    loaded = tables if tables is not None else load()\n    problem = None if found.reproof",
        "    loaded = load()\n    problem = None if found.reproof",  # the caller's tables
        BINDING,
    ),
    p(
        "s07",
        STF,
        '            stale.append(f"{name} (proven on {recorded})" if recorded else '
        'f"{name} (bound to no kernel source)")\n',
        '            stale.append(f"{name} (proven on {recorded})" if recorded else '
        'f"{name} (bound to no kernel source)")\n'
        "            break\n",  # only the first stale kernel named
        BINDING,
    ),
    # ------------------------------------------------------------------ conformance/sources.py
    p(
        "r01",
        SRF,
        "if r.kernel == kernel and r.passed and not r.shipped_in",
        "if r.kernel == kernel and r.passed",
        BINDING,
    ),
    p(
        "r02",
        SRF,
        "        if done == total and total:\n            proved",
        "        if done and total:\n            proved",
        BINDING,
    ),
    p(
        "r03",
        SRF,
        "    elif certified is None or not stack.compatible(certified, running):",
        "    elif certified is None:",  # recorded on another stack
        BINDING,
    ),
    p(
        "r04",
        SRF,
        "    elif report.examples_per_entry < min_examples():",
        "    elif report.examples_per_entry < 1:",
        BINDING,
    ),
    p("r05", SRF, '    if not report.passed:\n        why = "the check failed"\n    elif', "    if", BINDING),
    p(
        "r06",
        SRF,
        "    else:\n        why = stack.compiler_problem(class_id)\n",
        "",  # recorded with Triton told to compile otherwise
        BINDING,
    ),
    p(
        "r07",
        SRF,
        "for e, d in select(index, None)}",
        "for e, d in select(index, None) if d in {r.dtype for r in report.results}}",  # --dtype counted whole
        BINDING,
    ),
    p("r08", SRF, '        prov["reproved"] = [*prov.get("reproved", []), check]\n', "", BINDING),
    p("r09", SRF, '        prov["kernel_source"] = source\n', "", BINDING),
    p(
        "r10",
        SRF,
        "        if recorded != stack.kernel_source(kernel):\n            found[kernel] = recorded",
        # only tables bound to nothing recorded again
        "        if recorded is None:\n            found[kernel] = recorded",
        BINDING,
    ),
    # ------------------------------------------------------------------ conformance/certify.py
    p(
        "c01",
        CTF,
        '    if old.get("kernel_source") != current.get("kernel_source"):\n        kernel = table.kernel',
        '    if old.get("kernel_source") and old.get("kernel_source") != current.get("kernel_source"):\n'
        "        kernel = table.kernel",  # a table bound to no code added to
        BINDING,
    ),
    p(
        "c02",
        CTF,
        '    return {**old, "resumed": resumed}',
        '    return {**old, "kernel_source": current.get("kernel_source"), "resumed": resumed}',
        BINDING,
    ),
    p(
        "c03",
        CTF,
        '        k: merged_provenance(tables_now[k], {**prov, "kernel_source": stack.kernel_source(k)})\n'
        "        for k in {t.kernel for _, t in todo}",
        '        k: merged_provenance(tables_now[k], {**prov, "kernel_source": stack.kernel_source(chosen[0])})\n'
        "        for k in {t.kernel for _, t in todo}",  # one kernel's code stamped on every table certified
        BINDING,
    ),
    # ------------------------------------------------------------------ tables.py, schema.py, doctor.py
    p(
        "t01",
        TBF,
        "            if recorded != now:\n                proven",
        "            if recorded is not None and recorded != now:\n                proven",
        TABLES,
    ),
    p(
        "t02",
        TBF,
        '            recorded = index.stack.get("source") if index is not None else None\n',
        '            recorded = index.stack.get("source") if index is not None else None\n'
        "            if problems:\n                break\n",  # one unbound table a class listed
        TABLES,
    ),
    p("h01", SCF, '_SOURCE = {"type": "string", "pattern": r"^[0-9a-f]{16}$"}', '_SOURCE = {"type": "string"}', TABLES),
    p(
        "h02",
        SCF,
        '"required": ["kernel_source", "date", "git_commit", "command", "examples_per_entry"],',
        '"required": ["date", "git_commit", "command"],',
        TABLES,
    ),
    p(
        "h03",
        SCF,
        '    if source is not None:\n        stack["source"]',
        '    if source:\n        stack["source"]',
        TABLES,
    ),
    p(
        "d01",
        DRF,
        "            if found_stack.reproof is None and have:",
        "            if have:",  # a local re-proof's kernels blocked in doctor
        BINDING,
    ),
    p(
        "d02",
        DRF,
        "                        FAIL if problem else WARN if pending else OK,",
        "                        INFO if problem else WARN if pending else OK,",
        BINDING,
    ),
]
