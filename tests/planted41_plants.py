"""Round 41's planted bugs, in the code merged this session that no round planted: gate round 45 (gate/repository.py's
``_SAFE_GIT`` and ``_run_git``, ``_objects`` and ``_commit_files``' tree walk hashing each object; gate/__init__.py's
``shadowing`` and ``_refuse_shadowing``), gate round 46's link-and-``..`` refusal (gate/checker.py's
``_read_alike_by_twine``), strict round 47 (neurobrix/tables.py's ``_made``, ``was_loaded``, ``is_loaded``,
``current``; plan.py's ``Plan.ops`` and ``require_current``, generate.py's call of it, stack.py's stale-tables
refusal; store.py's StoredModel ``config()``/``tokenizer()`` held to the check), text round 39's Mistral head_dim 0
refusal (neurobrix/config.py) and planted round 40's provenance fix (conformance/certify.py). For
tests/planted41_driver.py: id, file, the exact text replaced, its replacement, and the existing tests that exercise it
(the outcome of each: tests/test_planted41.py's docstring)."""

from __future__ import annotations

G45 = ["tests/test_gate_round45.py"]
G46 = ["tests/test_gate_round46.py"]
S47 = ["tests/test_strict_round47.py"]
MIS = ["tests/test_text_round39.py", "-k", "head_dim"]
PROV = ["tests/test_planted40.py", "tests/test_conformance.py", "-k", "commit or provenance"]

REPO, INIT, CHECKER = "gate/repository.py", "gate/__init__.py", "gate/checker.py"
TABLES, PLAN, GEN, STACK, STORE = (
    "neurobrix/tables.py",
    "neurobrix/plan.py",
    "neurobrix/generate.py",
    "neurobrix/stack.py",
    "neurobrix/store.py",
)
CONFIG, CERTIFY = "neurobrix/config.py", "conformance/certify.py"


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 400) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ gate round 45: git's safe options, objects
    p("g01", REPO, '    "--no-replace-objects",\n    "-c",\n', '    "-c",\n', G45),
    p("g02", REPO, '    "core.fsmonitor=",\n    "-c",\n', "", G45),
    p("g03", REPO, '    "core.commitGraph=false",', '    "core.commitGraph=true",', G45),
    p("g04", REPO, 'if not k.startswith("GIT_")}', 'if not k.startswith("GIT_DIR")}', G45),
    p("g05", REPO, " or header[1].decode() != kind:", ":", G45),
    p(
        "g06",
        REPO,
        "        algorithm = hashlib.sha256 if len(oid) == 64 else hashlib.sha1",
        "        algorithm = hashlib.sha256 if len(oid) > 64 else hashlib.sha1",
        G45,
    ),
    p("g07", REPO, "        at = end + 2 + size", "        at = end + 1 + size", G45),
    p(
        "g08",
        REPO,
        '        if algorithm(b"%s %d\\0" % (kind.encode(), len(data)) + data).hexdigest() != oid:',
        '        if algorithm(b"%s %d\\0" % (kind.encode(), len(data)) + data).hexdigest() == "":',
        G45,
    ),
    p("g09", REPO, '                if mode == "40000":', '                if mode == "040000":', G45),
    p("g10", REPO, "    width = len(commit) // 2", "    width = 20", G45),
    p(
        "g11",
        REPO,
        '                    deeper[f"{prefix}{name}/"] = child',
        '                    deeper[f"{name}/"] = child',
        G45,
    ),
    # ------------------------------------------------------------------ gate round 45: python -m gate's shadowing
    p(
        "h01",
        INIT,
        '            module = name if any(f"__init__{s}" in inside for s in suffixes) else ""',
        '            module = name if "__init__.py" in inside else ""',
        G45,
    ),
    p(
        "h02",
        INIT,
        "    if _os.path.realpath(root) not in on_path:",
        "    if root not in on_path:",
        G45,
    ),
    p("h03", INIT, 'if _sys.argv[:1] == ["-m"]:', 'if _sys.argv[:1] == ["-c"]:', G45),
    p(
        "h04",
        INIT,
        "        if module and module not in TOP_MODULES:",
        "        if module and name not in TOP_MODULES:",
        G45,
    ),
    # ------------------------------------------------------------------ gate round 46: a link and `..`
    p(
        "k01",
        CHECKER,
        '    if ".." not in argument.parts or not argument.exists():',
        '    if ".." not in argument.parts:',
        G46,
    ),
    p(
        "k02",
        CHECKER,
        "    lexical = os.path.normpath(os.path.abspath(argument))",
        "    lexical = os.path.realpath(argument)",
        G46,
    ),
    p("k03", CHECKER, "    except OSError:\n        same = False", "    except OSError:\n        same = True", G46),
    # ------------------------------------------------------------------ strict round 47: tables, plan, store
    p(
        "t01",
        TABLES,
        "    return was_loaded(tables) and _MADE[id(tables)][1] == _state(tables.location.root)",
        "    return was_loaded(tables)",
        S47,
    ),
    p(
        "t02",
        TABLES,
        '    return load(tables.location.root) if tables.location.origin == "given" else load()',
        '    return load(tables.location.root) if tables.location.origin != "given" else load()',
        S47,
    ),
    p(
        "t03",
        PLAN,
        '        certified_settings(held.settings, held.pdl, now, held.class_id, "this model")',
        "        pass",
        S47,
    ),
    p("t04", PLAN, "        require_runnable(held.class_id, now)\n", "", S47),
    p(
        "t05",
        PLAN,
        "        ops.origin = Plan(self.class_id, settings, self.pdl, self.tables if self.tables is not None else load())",  # noqa: E501
        "        ops.origin = Plan(self.class_id, settings, self.pdl, self.tables)",
        S47,
    ),
    p(
        "t06",
        PLAN,
        "isinstance(exc, MissingEntryError) and len(exc.lines) > 2",
        "isinstance(exc, MissingEntryError) and len(exc.lines) > 3",
        S47,
    ),
    p("t07", GEN, "        require_current(model.ops)  # the model's", "        (model.ops)  # the model's", S47),
    p(
        "t08",
        STACK,
        "    if tables is not None and not is_loaded(tables) and was_loaded(tables):",
        "    if tables is not None and not is_loaded(tables):",
        S47 + ["tests/test_strict_round19.py"],
    ),
    p(
        "s01",
        STORE,
        "        self.require_unchanged()  # a program's StoredModel",
        "        pass  # a program's StoredModel",
        S47,
    ),
    p("s02", STORE, "        self.require_unchanged()  # (as config:", "        pass  # (as config:", S47),
    # ------------------------------------------------------------------ text round 39: Mistral head_dim 0
    p("m01", CONFIG, 'RAW_HEAD_DIM = ("dynamic", "yarn")', 'RAW_HEAD_DIM = ("dynamic",)', MIS),
    p(
        "m02",
        CONFIG,
        'if arch == "mistral" and type(data.get("head_dim")) is int and data["head_dim"] == 0 and kind in RAW_HEAD_DIM:',  # noqa: E501
        'if type(data.get("head_dim")) is int and data["head_dim"] == 0 and kind in RAW_HEAD_DIM:',
        MIS,
    ),
    # ------------------------------------------------------------------ planted round 40: certify's provenance
    p("c01", CERTIFY, "            cwd=here.parent,", "            cwd=here,", PROV),
    p(
        "c02",
        CERTIFY,
        '["git", "status", "--porcelain", "--", "neurobrix", "conformance"]',
        '["git", "status", "--porcelain", "--untracked-files=no", "--", "neurobrix", "conformance"]',
        PROV,
    ),
    p(
        "c03",
        CERTIFY,
        '["git", "status", "--porcelain", "--", "neurobrix", "conformance"]',
        '["git", "status", "--porcelain", "--", "neurobrix"]',
        PROV,
    ),
]
