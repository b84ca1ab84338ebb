"""Round 62's planted bugs, in code that landed last: strictness round 59 (neurobrix/tables.py: ``record_readers`` as
the digest of the verifying code names it, the 4,300-digit bound on a table's integers in JSON, YAML and the form
check; neurobrix/stack.py: the CUDA driver's JIT variables refused on a GPU class; ``NEUROBRIX_TABLES`` spelt with a
trailing newline or space) and walk-through round 42 (neurobrix/cli.py: ``before_torch`` and the early refusal of a
name not stored in run and warmup; conformance/__main__.py: ``check --tables`` and the early refusal of a class the
tables lack; neurobrix/warmup.py: the note for a limit past the context). For tests/planted64_driver.py: id, file, the
exact text replaced (found once in its file, one line), its replacement, and the existing tests a contributor would
run for it (the outcome of each: docs/planted-bugs.md, round 62)."""

from __future__ import annotations

TABLES = "neurobrix/tables.py"
STACK = "neurobrix/stack.py"
CLI = "neurobrix/cli.py"
CHECK_CLI = "conformance/__main__.py"
WARMUP = "neurobrix/warmup.py"

STRICT_TESTS = ["tests/test_strict_round59.py"]
WALK_TESTS = ["tests/test_walk42.py"]


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 900) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ strictness round 59
    # r01: the reader named without libyaml's version (a list verified under libyaml 0.2.5 honoured under 0.3)
    p(
        "r01",
        TABLES,
        'return f"PyYAML {yaml.__version__}, libyaml {_yaml.get_version_string()}"',
        'return f"PyYAML {yaml.__version__}, libyaml"',
        STRICT_TESTS,
    ),
    # d01: JSON's bound one digit short (an index's number of 4,300 digits, which Python reads, refused)
    p("d01", TABLES, 'if len(text.lstrip("-")) > MAX_DIGITS:', 'if len(text.lstrip("-")) >= MAX_DIGITS:', STRICT_TESTS),
    # d02: YAML's bound counting the sign (a negative integer of 4,300 digits refused, which Python reads)
    p(
        "d02",
        TABLES,
        'if len(node.value.lstrip("+-")) > MAX_DIGITS:',
        "if len(node.value) > MAX_DIGITS:",
        STRICT_TESTS,
    ),
    # d03: the form check's bound one digit short (a record's count of 4,300 digits sent to the full read)
    p(
        "d03",
        TABLES,
        "if len(tried) > min(MAX_DIGITS, sys.get_int_max_str_digits() or MAX_DIGITS):",
        "if len(tried) >= min(MAX_DIGITS, sys.get_int_max_str_digits() or MAX_DIGITS):",
        STRICT_TESTS,
    ),
    # e01: the driver's variables refused only when set to 1 (CUDA_FORCE_PTX_JIT=2 passed)
    p(
        "e01",
        STACK,
        'if os.environ.get(name, "0") != "0"',
        'if os.environ.get(name, "0") == "1"',
        STRICT_TESTS,
    ),
    # t01: NEUROBRIX_TABLES stripped of its spaces (a trailing newline or space read as the folder)
    p("t01", TABLES, "root = Path(explicit).expanduser()", "root = Path(explicit.strip()).expanduser()", STRICT_TESTS),
    # ------------------------------------------------------------------ walk-through round 42
    # b01: only torch looked for in sys.modules, not the command's own modules
    p(
        "b01",
        CLI,
        'if any(name in sys.modules for name in ("torch", *modules)):',
        'if "torch" in sys.modules:',
        WALK_TESTS,
    ),
    # b02: any dependency found taken for all (a missing one refused by name before the import that names it)
    p(
        "b02",
        CLI,
        "return all(find_spec(name) is not None for name in (*DEPENDENCIES, *needs))",
        "return any(find_spec(name) is not None for name in (*DEPENDENCIES, *needs))",
        WALK_TESTS,
    ),
    # b03: a module half set up (find_spec's ValueError) taken as found
    p(
        "b03",
        CLI,
        "except (ImportError, ValueError):  # a module half set up",
        "except ImportError:  # a module half set up",
        WALK_TESTS,
    ),
    # b04: an option of 0 not left to the command (--max-tokens 0 with a name not stored said "no model")
    p(
        "b04",
        CLI,
        "any(value is not None and value < 1 for value in limits.values())",
        "any(value is not None and value < 0 for value in limits.values())",
        WALK_TESTS,
    ),
    # b05: run's tables read before the name whatever the backend (--backend torch reads none)
    p(
        "b05",
        CLI,
        'tables=args.backend == "triton", max_tokens=args.max_tokens)',
        "tables=True, max_tokens=args.max_tokens)",
        WALK_TESTS,
    ),
    # b06: only --temperature taken for a sampling option (--top-k -1 with a name not stored said "no model")
    p(
        "b06",
        CLI,
        "if sampling != (0.0, None, None, None, None):",
        "if args.temperature != 0.0:",
        WALK_TESTS,
    ),
    # b07: warmup's --max-prompt not handed to the early refusal (--max-prompt 0 with a name not stored: "no model")
    p(
        "b07",
        CLI,
        "refuse_unstored_first(args.model, tables=True, max_tokens=args.max_tokens, max_prompt=args.max_prompt)",
        "refuse_unstored_first(args.model, tables=True, max_tokens=args.max_tokens)",
        WALK_TESTS,
    ),
    # b08: check --tables setting the variable to the path as given (a relative one, which the tables refuse)
    p("b08", CHECK_CLI, "os.environ[ENV_VAR] = str(root.resolve())", "os.environ[ENV_VAR] = str(root)", WALK_TESTS),
    # b09: the variable dropped after check --tables, not given back its value
    p("b09", CHECK_CLI, "os.environ[ENV_VAR] = before", "os.environ.pop(ENV_VAR, None)", WALK_TESTS),
    # b10: check --tables ~/copy not expanded (refused as no folder)
    p("b10", CHECK_CLI, "root = Path(args.tables).expanduser()", "root = Path(args.tables)", WALK_TESTS),
    # b11: the resume line naming NEUROBRIX_TABLES where --tables chose the folder (both in the command)
    p(
        "b11",
        CHECK_CLI,
        'if os.environ.get(ENV_VAR) and getattr(args, "tables", None) is None:',
        "if os.environ.get(ENV_VAR):",
        WALK_TESTS,
    ),
    # b12: the note's verb counted wrong (one limit past the context "are")
    p("b12", WARMUP, "{'are' if len(past) > 1 else 'is'}", "{'are' if len(past) > 0 else 'is'}", WALK_TESTS),
]
