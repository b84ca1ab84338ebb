"""Round 50's planted bugs, in the code changed most recently that no round had planted (class: a guard that does
not see what it guards): neurobrix/code_rule.py (the static rule against patching other modules' code: its scopes,
the names it follows, ALLOWED, the constructs it refuses, the per-file cache), neurobrix/kernel_source.py's
``declared_kernels`` and the AWAITING_REPROOF handling in tables.py (``verify_all``, ``awaiting_reproof``,
``kernel_code``) and stack.py (``_unbound``, ``sources_pending``), conformance/workers.py's ``_share_cores``,
check.py's ``changed`` of ``carried_over``, and the tokenizer/StoredModel race (``_read_text``, ``damaged``). For
tests/planted50_driver.py: id, file, the exact text replaced, its replacement, and the existing tests a contributor
would run for it (the outcome of each: tests/test_planted50.py's docstring)."""

from __future__ import annotations

RULE = ["-m", "not slow", "tests/test_gate_round55.py"]
BIND = [
    "tests/test_source_binding.py",
    "tests/test_walk39.py",
    "tests/test_strict_round53.py",
]
CORES = [
    "tests/test_conformance.py::test_each_worker_takes_its_share_of_the_cores_for_its_cpu_threads",
    "tests/test_conformance.py::test_workers_see_the_gpus_this_process_was_given",
]
RES = [
    "tests/test_conformance.py::test_check_resumes_from_a_report_of_the_same_tables_kernels_and_bounds",
    "tests/test_conformance.py::test_certify_writes_proven_tracked_tables_and_resumes",
    "tests/test_planted39.py",
    "tests/test_planted49.py",
    "tests/test_walk39.py::test_a_report_that_cannot_be_resumed_names_what_differs",
]
RACE = ["tests/test_lead41.py", "tests/test_tokenizer.py", "tests/test_strict_round50.py"]
CODE_RULE, KSRC, TABLES, STACK, WORKERS, CHECK, TOKENIZER, STORE = (
    "neurobrix/code_rule.py",
    "neurobrix/kernel_source.py",
    "neurobrix/tables.py",
    "neurobrix/stack.py",
    "conformance/workers.py",
    "conformance/check.py",
    "neurobrix/tokenizer.py",
    "neurobrix/store.py",
)


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 600) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ code_rule: scopes
    p(  # a name read in the innermost function only: an enclosing function's local read as the module's
        "r01",
        CODE_RULE,
        "                return (id(function), name)\n            function = self.scope(function)\n",
        "                return (id(function), name)\n            function = None\n",
        RULE,
    ),
    p(  # nonlocal not taken out of the inner function's locals (global still is)
        "r02",
        CODE_RULE,
        "            if isinstance(node, (ast.Global, ast.Nonlocal)):\n",
        "            if isinstance(node, ast.Global):\n",
        RULE,
    ),
    p(  # a def's parameters' defaults aligned from the left (off by the parameters without one)
        "r03",
        CODE_RULE,
        "                given = zip(positional[len(positional) - len(a.defaults) :], a.defaults)\n",
        "                given = zip(positional[: len(a.defaults)], a.defaults)\n",
        RULE,
    ),
    p(  # keyword-only defaults not followed
        "r04",
        CODE_RULE,
        "                pairs += [([(id(node), p.arg)], [], d, False) for p, d in kw if d is not None]\n",
        "",
        RULE,
    ),
    p(  # a method called on an object: its arguments bound from self on (off by one)
        "r05",
        CODE_RULE,
        "                if isinstance(func, ast.Attribute) and positional:"
        "  # a method: its first parameter is the object\n"
        "                    positional = positional[1:]\n",
        "",
        RULE,
    ),
    # ------------------------------------------------------------------ code_rule: what it follows
    p(  # next(iter(...)) not followed
        "r07",
        CODE_RULE,
        '("getattr", "vars", "next", "iter")',
        '("getattr", "vars")',
        RULE,
    ),
    p(  # ``x or linear``: the first operand only
        "r08",
        CODE_RULE,
        "            return next((r for r in map(self.root, node.values) if r), None)\n",
        "            return self.root(node.values[0])\n",
        RULE,
    ),
    p(  # ``linear if c else x``'s other branch dropped
        "r09",
        CODE_RULE,
        "            return self.root(node.body) or self.root(node.orelse)\n",
        "            return self.root(node.body)\n",
        RULE,
    ),
    p(  # an item of a container holding a foreign object not followed
        "r10",
        CODE_RULE,
        "            return self.root(node.value) or self.holder(node.value)\n"
        "        if isinstance(node, (ast.Attribute,",
        "            return self.root(node.value)\n        if isinstance(node, (ast.Attribute,",
        RULE,
    ),
    # ------------------------------------------------------------------ code_rule: the constructs refused
    p("r11", CODE_RULE, '    "__defaults__",\n', "", RULE),  # a function's defaults rewritten, whoever owns it
    p(  # only the written place itself looked at for surgery, not what it is reached through
        "r12",
        CODE_RULE,
        "        while isinstance(node, (ast.Attribute, ast.Subscript)):\n            chain.append(node)\n"
        "            node = node.value\n",
        "        chain.append(node)\n",
        RULE,
    ),
    p(  # delattr let through
        "r13",
        CODE_RULE,
        'func.id in ("setattr", "delattr") and node.args',
        'func.id == "setattr" and node.args',
        RULE,
    ),
    p(  # ``import ctypes.util``: the module's full name compared, not its top package
        "r14",
        CODE_RULE,
        '                    if a.name.split(".")[0] in _MODULES_REFUSED:\n',
        "                    if a.name in _MODULES_REFUSED:\n",
        RULE,
    ),
    p(  # a mutating method called on an imported module itself refused (``os.remove``: a false refusal)
        "r16",
        CODE_RULE,
        "                if owner and not (isinstance(changed, ast.Name)"
        " and self.key(changed.id, changed) in self.modules):\n",
        "                if owner:\n",
        RULE,
    ),
    p(  # ALLOWED read by target alone, any file
        "r17",
        CODE_RULE,
        "        if owner and (self.rel, shown) not in ALLOWED:\n",
        "        if owner and shown not in {target for _, target in ALLOWED}:\n",
        RULE,
    ),
    p(  # the package's own bytecode caches refused as modules without a source
        "r18",
        CODE_RULE,
        '        compiled = path.suffix == ".pyc" and path.parent.name != "__pycache__"\n',
        '        compiled = path.suffix == ".pyc"\n',
        RULE,
    ),
    # ------------------------------------------------------------------ code_rule: the cache
    p(  # the whole rule cached by the package folder: a file edited in a process read as before
        "r19",
        CODE_RULE,
        "def foreign_writes(package: Path | None = None) -> list[str]:\n",
        "@functools.lru_cache(maxsize=8)\ndef foreign_writes(package: Path | None = None) -> list[str]:\n",
        RULE,
    ),
    p(  # each file's findings cached by its name alone (the bytes read again inside, not part of the key)
        "r20",
        CODE_RULE,
        "@functools.lru_cache(maxsize=256)\ndef _file_writes(rel: str, source: bytes, shown: str) -> list[str]:\n",
        "def _file_writes(rel: str, source: bytes, shown: str) -> list[str]:\n    return _parsed(rel, shown)\n\n\n"
        "@functools.lru_cache(maxsize=256)\ndef _parsed(rel: str, shown: str) -> list[str]:\n"
        "    source = Path(shown).read_bytes()\n",
        RULE,
    ),
    # ------------------------------------------------------------- the binding's AWAITING_REPROOF, declared kernels
    p(  # verify passes a listed table bound to other code, not only one bound to none
        "a01",
        TABLES,
        "            if recorded is None and (class_id, kernel) in AWAITING_REPROOF:"
        "  # run says so (stack.sources_pending)\n",
        "            if (class_id, kernel) in AWAITING_REPROOF:  # run says so (stack.sources_pending)\n",
        BIND,
    ),
    p(  # run likewise
        "a02",
        STACK,
        "        if recorded is None and (class_id, name) in AWAITING_REPROOF:\n",
        "        if (class_id, name) in AWAITING_REPROOF:\n",
        BIND,
    ),
    p(  # tables verify's note lists a listed table bound since
        "a03",
        TABLES,
        '        and index.stack.get("source") is None\n    ]\n',
        "    ]\n",
        BIND,
    ),
    p(  # tables show: a listed table bound to other code said to await its re-proof
        "a04",
        TABLES,
        "    if recorded is None and (class_id, kernel) in AWAITING_REPROOF:\n        return (\n",
        "    if (class_id, kernel) in AWAITING_REPROOF:\n        return (\n",
        BIND,
    ),
    p(  # the note's command names the first pending kernel only
        "a05",
        STACK,
        "re-proof: python -m conformance check --class {class_id} --kernel {' '.join(pending)} --record\"\n",
        're-proof: python -m conformance check --class {class_id} --kernel {pending[0]} --record"\n',
        BIND,
    ),
    p(  # the declared kernels read as the op modules' names (attention declares attention_prefill, ...)
        "a06",
        KSRC,
        "    return frozenset(k for name in runs for k in _read_source(folder / name).specs)\n",
        '    return frozenset(name.removesuffix(".py") for name in _own)\n',
        BIND,
    ),
    p(  # a retired kernel's table not passed by in run (unknown kernel)
        "a07",
        STACK,
        "        if index is None or name not in ours:\n",
        "        if index is None:\n",
        BIND,
    ),
    # ------------------------------------------------------------------ workers._share_cores
    p(  # no floor: more workers than cores gives each 0 threads
        "w01",
        WORKERS,
        "    share = str(max(1, usable_cores() // max(1, workers)))\n",
        "    share = str(usable_cores() // max(1, workers))\n",
        CORES,
    ),
    p(  # the isolated workers told they are one
        "w02",
        WORKERS,
        "args=(child, self._slots[slot], len(self._slots))",
        "args=(child, self._slots[slot])",
        CORES,
    ),
    p(  # the pool's workers told they are one
        "w03",
        WORKERS,
        "initializer=_bind, initargs=(queue, workers))",
        "initializer=_bind, initargs=(queue,))",
        CORES,
    ),
    p(  # torch's count left as torch set it when torch is already imported
        "w04",
        WORKERS,
        "    if torch is not None:\n        torch.set_num_threads(int(share))\n",
        "",
        CORES,
    ),
    p(  # OMP only: MKL's and OpenBLAS's own variables, inherited, left as they were
        "w05",
        WORKERS,
        '    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):\n',
        '    for name in ("OMP_NUM_THREADS",):\n',
        CORES,
    ),
    # ------------------------------------------------------------------ check --resume's changed
    p(  # a kernel whose entries all failed there not named (before f8aa637)
        "k01",
        CHECK,
        "    changed = set() if whole else {k for k in report.fingerprints"
        " if isinstance(theirs, dict) and k in theirs} - same\n",
        "    changed: set[str] = set()\n",
        RES,
    ),
    p(  # the kernels whose fingerprint matched named too
        "k02",
        CHECK,
        "{k for k in report.fingerprints if isinstance(theirs, dict) and k in theirs} - same\n",
        "{k for k in report.fingerprints if isinstance(theirs, dict) and k in theirs}\n",
        RES,
    ),
    p(  # that report's kernels named, this run's or not
        "k03",
        CHECK,
        "{k for k in report.fingerprints if isinstance(theirs, dict) and k in theirs} - same\n",
        "(set(theirs) if isinstance(theirs, dict) else set()) - same\n",
        RES,
    ),
    p(  # the ``whole`` short cut dropped
        "k04",
        CHECK,
        "    changed = set() if whole else {k for k",
        "    changed = {k for k",
        RES,
    ),
    p(  # the loop's naming of a changed kernel with passed entries dropped
        "k05",
        CHECK,
        '                if item.get("kernel") in report.fingerprints:'
        "  # a kernel of this run (the others are not wanted)\n"
        '                    changed.add(str(item.get("kernel")))\n',
        "",
        RES,
    ),
    # ------------------------------------------------------------------ the tokenizer / StoredModel race
    p(  # the second read of tokenizer.json a raw OSError again
        "t01",
        TOKENIZER,
        "_tokenizer_class(folder, self.config, _read_text(path))",
        '_tokenizer_class(folder, self.config, path.read_text(encoding="utf-8"))',
        RACE,
    ),
    p(  # StoredModel.tokenizer lets an OSError through
        "t02",
        STORE,
        "        except (TokenizerFileError, OSError) as exc:"
        "  # OSError: a file gone between two reads of it (a `remove`)\n",
        "        except TokenizerFileError as exc:\n",
        RACE,
    ),
    p(  # StoredModel.config lets an OSError through
        "t03",
        STORE,
        "        except (CheckpointError, OSError) as exc:\n            raise damaged(self, [str(exc)]) from exc\n"
        "        self.require_unchanged()  # a program's",
        "        except CheckpointError as exc:\n            raise damaged(self, [str(exc)]) from exc\n"
        "        self.require_unchanged()  # a program's",
        RACE,
    ),
    p(  # damaged() not asking what happened to the folder
        "t04",
        STORE,
        "    changed = model.changed()\n    if changed is not None:\n        return changed\n    again =",
        "    again =",
        RACE,
    ),
    p(  # _read_text: a file error let through (UTF-8 only)
        "t05",
        TOKENIZER,
        '    except (OSError, UnicodeDecodeError) as exc:  # transformers\' open(..., encoding="utf-8") fails too\n',
        '    except UnicodeDecodeError as exc:  # transformers\' open(..., encoding="utf-8") fails too\n',
        RACE,
    ),
]
