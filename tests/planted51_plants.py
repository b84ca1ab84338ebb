"""Round 51's planted bugs, in the code added most recently that no round had planted (class: a check that passes
what it was written to refuse): neurobrix/kernel_code.py (the run-time check that the imported ``neurobrix.ops``
modules are the code of their files: code objects, globals, Triton kernels' type and source, import bindings, literal
constants, OpSpec fields, ``SPECS``, linecache, the per-process caches, ``patched_kernels``) and its call sites
(``require_certified_stack`` in stack.py, ``require_current`` in plan.py, the check before each generation in
generate.py, exit code 6). For tests/planted51_driver.py: id, file, the exact text replaced, its replacement, and the
existing tests a contributor would run for it (the outcome of each: tests/test_planted51.py's docstring)."""

from __future__ import annotations

R54 = "tests/test_strict_round54.py::"
KC = [  # round 54's tests (what is not refused first: a check that refuses everything fails there), and those that
    # use the escape
    R54 + "test_what_launches_nothing_other_is_not_refused",
    R54 + "test_a_kernel_patched_through_the_python_api_is_refused_not_launched",
    R54 + "test_a_kernel_patched_by_a_site_file_is_refused_by_run",
    R54 + "test_the_check_costs_a_few_milliseconds_at_most",
    R54 + "test_a_jit_kernel_whose_source_a_gpu_compiles_was_changed_is_refused",
    R54 + "test_a_test_may_plant_a_bug_in_a_kernel_when_it_says_so",
    "tests/test_strict_round21.py::test_a_triton_built_from_source_is_not_the_release_it_states",
    "tests/test_strict_round34.py::test_a_triton_whose_record_lists_another_file_is_refused",
    "tests/test_warmup.py::test_warmup_launches_every_planned_call_and_no_other",
]
CODE, STACK, PLAN, GENERATE, ERRORS = (
    "neurobrix/kernel_code.py",
    "neurobrix/stack.py",
    "neurobrix/plan.py",
    "neurobrix/generate.py",
    "neurobrix/errors.py",
)


def p(id: str, file: str, old: str, new: str, tests: list[str] = KC, timeout: int = 900) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ patched_kernels and the early returns
    p(  # the escape's reason never taken back: every check after a test's patch passes
        "c01",
        CODE,
        "    finally:\n        _ALLOWED.remove(reason)\n",
        "    except BaseException:\n        _ALLOWED.remove(reason)\n        raise\n",
    ),
    p(  # the escape not honoured: a test's own patch refused
        "c02",
        CODE,
        "    if _ALLOWED:\n        return None\n    package",
        "    package",
    ),
    p(  # the model's ops checked under the escape too (a test counting its launches refused)
        "c03",
        CODE,
        "    if problem or _ALLOWED:\n        return problem\n",
        "    if problem:\n        return problem\n",
    ),
    p(  # the model's own ops never looked at
        "c04",
        CODE,
        "    if problem or _ALLOWED:\n        return problem\n",
        "    return problem\n",
    ),
    # ------------------------------------------------------------------ the caches
    p(  # the file's compiled code cached by its name alone: a file edited in a process compared as first read
        "c05",
        CODE,
        "@functools.lru_cache(maxsize=64)\ndef _read(path: str, source: bytes) -> _File:\n",
        "_READ: dict[str, _File] = {}\n\n\ndef _read(path: str, source: bytes) -> _File:\n"
        "    if path not in _READ:\n        _READ[path] = _compile(path, source)\n    return _READ[path]\n\n\n"
        "def _compile(path: str, source: bytes) -> _File:\n",
    ),
    p(  # a code object found equal once is trusted by the file's code alone: any running code passes after
        "c06",
        CODE,
        "    if seen is not None and seen[0] is compiled and seen[1] is running:\n",
        "    if seen is not None and seen[0] is compiled:\n",
    ),
    # ------------------------------------------------------------------ functions
    p(  # the file a function's code names not compared (the interpreter runs that file's lines)
        "c08",
        CODE,
        "not _same_code(value.__code__, code) or value.__code__.co_filename not in self.filenames:\n",
        "not _same_code(value.__code__, code):\n",
    ),
    p(  # a function's globals not compared
        "c09",
        CODE,
        "        elif value.__globals__ is not self.ns:\n"
        '            self.say(f"{shown} runs with another module\'s names")\n',
        "",
    ),
    p(  # a function compared by its name, not its code
        "c10",
        CODE,
        "        elif code is None or not _same_code(value.__code__, code) or",
        "        elif code is None or value.__code__.co_name != code.co_name or",
    ),
    # ------------------------------------------------------------------ Triton kernels
    p(  # any subclass of Triton's kernel types taken for one (its own __getitem__ launches other code)
        "c11",
        CODE,
        "        if type(value) not in (JITFunction, InterpretedFunction):\n",
        "        if not isinstance(value, (JITFunction, InterpretedFunction)):\n",
    ),
    p(  # a JITFunction's source (what a GPU compiles) not compared
        "c12",
        CODE,
        "        if isinstance(value, JITFunction) and value.src != _jit_source(self.file.lines, node):\n",
        "        if False:\n",
    ),
    p(  # pre-run hooks not looked at
        "c13",
        CODE,
        '        if getattr(value, "pre_run_hooks", None):\n',
        "        if False:\n",
    ),
    p(  # the kernel's function (what the interpreter runs) not compared
        "c14",
        CODE,
        "        self.function(value.fn, node.name, node.name, node)\n        if isinstance(value, JITFunction)",
        "        if isinstance(value, JITFunction)",
    ),
    p(  # the kernel's source cut one line short at its end
        "c15",
        CODE,
        'text = textwrap.dedent("".join(lines[first - 1 : node.end_lineno]))',
        'text = textwrap.dedent("".join(lines[first - 1 : node.end_lineno - 1]))',
    ),
    # ------------------------------------------------------------------ imports
    p(  # only the first name of each import compared
        "c18",
        CODE,
        "        for alias in node.names:\n            if isinstance(node, ast.Import):\n",
        "        for alias in node.names[:1]:\n            if isinstance(node, ast.Import):\n",
    ),
    p(  # an import compared by equality (an object equal to everything passes)
        "c19",
        CODE,
        "            if expected is _MISSING or self.ns.get(bound, _MISSING) is not expected:\n",
        "            if expected is _MISSING or self.ns.get(bound, _MISSING) != expected:\n",
    ),
    p(  # a name the import no longer finds passes
        "c20",
        CODE,
        "            if expected is _MISSING or self.ns.get(bound, _MISSING) is not expected:\n",
        "            if expected is not _MISSING and self.ns.get(bound, _MISSING) is not expected:\n",
    ),
    p(  # relative imports resolved from the module, not its package
        "c22",
        CODE,
        '"." * node.level + (node.module or ""), self.module.__package__)',
        '"." * node.level + (node.module or ""), self.module.__name__)',
    ),
    # ------------------------------------------------------------------ OpSpec fields
    p(  # a field the call leaves to its default not compared
        "c23",
        CODE,
        "                if held is not default and held != default:\n",
        "                if False:\n",
    ),
    p(  # a field the call names compared by the name of what it holds (functools.wraps keeps it)
        "c24",
        CODE,
        "                if held is not self.ns.get(expr.id, _MISSING):\n",
        '                if getattr(held, "__name__", None) != getattr(self.ns.get(expr.id), "__name__", None):\n',
    ),
    p(  # a literal field compared by equality alone (True for 1, 1.0 for 1)
        "c25",
        CODE,
        '                if held != literal or type(held) is not type(literal):\n                    self.say(f"{at}.',
        '                if held != literal:\n                    self.say(f"{at}.',
    ),
    p(  # a computed field ends the spec's comparison (the fields after it not compared)
        "c26",
        CODE,
        "                    continue  # an expression the file computes: not checked\n",
        "                    return  # an expression the file computes: not checked\n",
    ),
    p(  # keyword fields not read: every keyword field compared with its default
        "c27",
        CODE,
        "        given.update({k.arg: k.value for k in call.keywords if k.arg})\n",
        "",
    ),
    # ------------------------------------------------------------------ assignments
    p(  # the module's SPECS compared pairwise only (a spec appended passes)
        "c28",
        CODE,
        "            if type(held) is not tuple or len(held) != len(expr.elts):\n",
        "            if type(held) is not tuple:\n",
    ),
    p(  # a constant compared by equality alone (4096.0 for 4096)
        "c29",
        CODE,
        '        if held != literal or type(held) is not type(literal):\n            self.say(f"{name} is not',
        '        if held != literal:\n            self.say(f"{name} is not',
    ),
    # ------------------------------------------------------------------ the module's walk
    p(  # linecache compared by its number of lines
        "c31",
        CODE,
        "and list(held[2]) != self.file.lines:\n",
        "and len(held[2]) != len(self.file.lines):\n",
    ),
    p(  # a decorated function (functools.lru_cache) not compared
        "c32",
        CODE,
        "                    if type(value) is not _CACHED:\n"
        '                        self.say(f"{node.name} is {type(value).__name__}, not the cached function the file '
        'defines")\n'
        "                    else:\n"
        "                        self.function(value.__wrapped__, node.name, node.name, node)\n",
        "                    pass\n",
    ),
    p(  # classes not walked (their methods)
        "c33",
        CODE,
        "            elif isinstance(node, ast.ClassDef):\n"
        "                self.klass(self.ns.get(node.name, _MISSING), node)\n",
        "",
    ),
    p(  # a built-in shadowed by an added name not refused
        "c34",
        CODE,
        "        if added:\n            self.say(",
        "        if added and False:\n            self.say(",
    ),
    p(  # the names read at a module's top level (LOAD_NAME) not counted as read
        "c35",
        CODE,
        "        names.update(i.argval for i in dis.get_instructions(code) if i.opname in "
        '("LOAD_GLOBAL", "LOAD_NAME"))\n',
        '        names.update(i.argval for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL")\n',
    ),
    # ------------------------------------------------------------------ running_kernels_problem
    p(  # the package's own __init__ not compared (certified, Ops)
        "c37",
        CODE,
        '    ours = sorted(k for k in sys.modules if k.startswith("neurobrix.ops.") or k == "neurobrix.ops")\n',
        '    ours = sorted(k for k in sys.modules if k.startswith("neurobrix.ops."))\n',
    ),
    p(  # a module held in its package's attribute not compared with the one imported
        "c38",
        CODE,
        "        if held is not module:\n            problems.append(",
        "        if held is None:\n            problems.append(",
    ),
    p(  # ops.SPECS compared by its names alone, not its specs
        "c39",
        CODE,
        '    return [f"ops.SPECS[{k!r}] is not {k}\'s spec" for k, spec in held.items() if spec is not expected[k]]\n',
        "    return []\n",
    ),
    p(  # plan.certified not compared with the package's
        "c40",
        CODE,
        '    if plan is not None and getattr(plan, "certified", None)'
        ' is not getattr(package, "certified", _MISSING):\n',
        "    if False:\n",
    ),
    p(  # ops_problem: a model's op compared by its closure alone (a wrapper holding the same cells passes)
        "c41",
        CODE,
        "        if not isinstance(fn, types.FunctionType) or fn.__code__ is not op:\n",
        "        if not isinstance(fn, types.FunctionType):\n",
    ),
    p(  # ops_problem: key_of (which picks the certified setting) not compared
        "c42",
        CODE,
        '        if cells.get("launch") is not spec.launch or cells.get("key_of") is not spec.key_of:\n',
        '        if cells.get("launch") is not spec.launch:\n',
    ),
    # ------------------------------------------------------------------ call sites
    p(  # the check skipped where a local re-proof stands for the files (copied from the line above)
        "s01",
        STACK,
        "    problem = running_kernels_problem()\n    if problem:\n        raise CompilerStackError",
        "    problem = None if found.reproof is not None else running_kernels_problem()\n    if problem:\n"
        "        raise CompilerStackError",
    ),
    p(  # refused as a usage mistake (exit 2), not another kernel code (exit 6)
        "s02",
        STACK,
        "    problem = running_kernels_problem()\n    if problem:\n        raise CompilerStackError",
        "    problem = running_kernels_problem()\n    if problem:\n        raise UsageError",
    ),
    p(  # the model's ops checked only where the tables changed since it was loaded
        "s03",
        PLAN,
        "    problem = ops_problem(ops) "
        " # a kernel, a spec or the model's own op replaced since the plan's ops were made\n"
        '    if problem:\n        raise CompilerStackError(f"{problem} (nothing was generated).")\n'
        "    now = current(held.tables)\n    if now is held.tables:\n        return\n",
        "    now = current(held.tables)\n    if now is held.tables:\n        return\n"
        "    problem = ops_problem(ops)\n"
        '    if problem:\n        raise CompilerStackError(f"{problem} (nothing was generated).")\n',
    ),
    p(  # refused as a usage mistake
        "s04",
        PLAN,
        '        raise CompilerStackError(f"{problem} (nothing was generated).")\n',
        '        raise UsageError(f"{problem} (nothing was generated).")\n',
    ),
    p(  # the check before the generation left to the first one only
        "s05",
        GENERATE,
        "        require_current(model.ops)  # the model's settings still what the tables found now certify\n",
        '        if not getattr(model, "_current", False):\n            require_current(model.ops)\n'
        "            model._current = True\n",
    ),
    p(  # exit code 6 given to no other error than 1's
        "s06",
        ERRORS,
        '    source cannot be read (:mod:`neurobrix.kernel_source`)."""\n\n    exit_code = 6\n',
        '    source cannot be read (:mod:`neurobrix.kernel_source`)."""\n\n    exit_code = 1\n',
    ),
]
