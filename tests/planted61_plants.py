"""Round 59's planted bugs, in what landed with strictness round 58, text round 49 and the shared build of the gate's
tests: the digest of the verifying code (``tables.verification_rules``, ``_rules_digest``) and run's comparison of it
with TRACKED.yaml's ``verified_rules``; the nesting bound (``tables._nested_too_deep``); config.json's model_type
(``ModelConfig.from_hf``, ``checkpoint``'s refusal of an absent or empty one); the key, the lock and the copies of the
session's one build (tests/conftest.py: ``_build_key``, ``shared_build``, ``project_dists_copy``). For
tests/planted61_driver.py: id, file, the exact text replaced (found once in its file), its replacement, and the
existing tests a contributor would run for it (the outcome of each: tests/test_planted61.py's docstring)."""

from __future__ import annotations

TABLES = "neurobrix/tables.py"
CONFIG = "neurobrix/config.py"
CHECKPOINT = "neurobrix/checkpoint.py"
CONFTEST = "tests/conftest.py"
# the shipped list's binding test fails for any edit of tables.py until `python -m conformance track` runs again, which
# a contributor does after an edit (track --check asks for it): it is left out, the plant judged by what tests its rule
RULES = ["tests/test_strict_round58.py", "-k", "(rules or nested) and not shipped_list"]
MODEL = ["tests/test_config.py", "tests/test_text_round49.py", "tests/test_strict_round31.py"]
BUILD = ["tests/test_gate_round51.py", "tests/test_gate_round22.py"]


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 900) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ the digest of the verifying code
    # d01: line ends hashed as read (a checkout Git wrote with CRLF digests otherwise: its list read in full)
    p(
        "d01",
        TABLES,
        'data = (package / name).read_bytes().replace(b"\\r\\n", b"\\n")',
        "data = (package / name).read_bytes()",
        RULES,
    ),
    # d02: the schema's generated validators left out of the digest
    p(
        "d02",
        TABLES,
        'names = [*RULE_FILES, *sorted(f"_schemas/{p.name}" for p in (package / "_schemas").glob("*.py"))]',
        "names = [*RULE_FILES]",
        RULES,
    ),
    # d03: the files' contents hashed as one stream (no name, no length: bytes moved from one file to the next digest
    # alike)
    p(
        "d03",
        TABLES,
        'digest.update(f"{name}\\0{len(data)}\\0".encode())',
        'digest.update(b"")',
        RULES,
    ),
    # d04: a list with no digest (round 57's form) honoured
    p(
        "d04",
        TABLES,
        'if verified and (origin == "installed package" or data.get("verified_rules") != verification_rules()):',
        'if verified and (origin == "installed package" or data.get("verified_rules", verification_rules()) '
        "!= verification_rules()):",
        RULES,
    ),
    # d05: a mismatch refused, not read in full
    p(
        "d05",
        TABLES,
        "        verified = ()",
        '        raise TablesError(f"{path}: listed by another engine\'s rules; run `python -m conformance track`")',
        RULES,
    ),
    # ------------------------------------------------------------------ the nesting bound
    # n01: a text nested exactly 100 levels refused (the bound off by one)
    p("n01", TABLES, "if depth > _MAX_DEPTH:", "if depth >= _MAX_DEPTH:", RULES),
    # n02: the closing events not counted: collections counted, not their nesting (a shallow table of 101 lists refused)
    p(
        "n02",
        TABLES,
        "elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):",
        "elif isinstance(event, yaml.DocumentEndEvent):",
        RULES,
    ),
    # n03: mappings not counted as levels (only sequences)
    p(
        "n03",
        TABLES,
        "if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):",
        "if isinstance(event, yaml.SequenceStartEvent):",
        RULES,
    ),
    # n04: PyYAML 6.0.4's own nesting limit read as another syntax error (left to the parse proper)
    p(
        "n04",
        TABLES,
        'if "nesting depth" in str(exc.problem) and exc.problem_mark is not None:',
        'if "nested too deep" in str(exc.problem) and exc.problem_mark is not None:',
        RULES,
    ),
    # n05: the bound from the longest line taken once, not twice (an indentless sequence under each key adds a level
    # a column: a text nested past 100 under the composing threshold)
    p(
        "n05",
        TABLES,
        'bound = text.count("[") + text.count("{") + 2 * (max(map(len, text.split("\\n"))) + 2)',
        'bound = text.count("[") + text.count("{") + max(map(len, text.split("\\n"))) + 2',
        RULES,
    ),
    # ------------------------------------------------------------------ model_type
    # c01: a model_type that is not a string but falsy (0, false, [], {}) let through the name check
    p(
        "c01",
        CONFIG,
        'if not isinstance(data.get("model_type", ""), str):',
        'if not isinstance(data.get("model_type") or "", str):',
        MODEL,
    ),
    # c02: a model_type outside the family refused only where architectures names no family class (the check's
    # "found" read the other way)
    p(
        "c02",
        CONFIG,
        "if found and model_type and model_type not in MODEL_TYPES:",
        "if not found and model_type and model_type not in MODEL_TYPES:",
        MODEL,
    ),
    # c03: checkpoint's refusal of a model_type that is null too (None read as absent: the same refusal, other words)
    p(
        "c03",
        CHECKPOINT,
        'if data.get("model_type", "") == "":',
        'if not data.get("model_type", ""):',
        MODEL,
    ),
    # ------------------------------------------------------------------ the session's one build
    # b01: the key without the files' mode bits (a script made executable keeps the stale build)
    p(
        "b01",
        CONFTEST,
        'digest.update(name + b"\\0" + oct(path.stat().st_mode & 0o7777).encode() + b"\\0")',
        'digest.update(name + b"\\0")',
        BUILD,
    ),
    # b02: the key over tracked files only (an untracked file the build packs not keyed)
    p(
        "b02",
        CONFTEST,
        '["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],',
        '["git", "ls-files", "-z", "--cached", "--exclude-standard"],',
        BUILD,
    ),
    # b03: the lock taken shared (two workers build into one folder at once)
    p("b03", CONFTEST, "fcntl.flock(lock, fcntl.LOCK_EX)", "fcntl.flock(lock, fcntl.LOCK_SH)", BUILD),
    # b04: the copies hard links to the shared build (a test damaging its copy damages every later test's)
    p(
        "b04",
        CONFTEST,
        "return sorted(Path(shutil.copy2(path, into / path.name)) for path in sorted(project_dists.iterdir()))",
        "return sorted(os.link(path, into / path.name) or into / path.name "
        "for path in sorted(project_dists.iterdir()))",
        BUILD,
    ),
    # b05: the copies the shared files themselves (the folder made, nothing put in it)
    p(
        "b05",
        CONFTEST,
        "return sorted(Path(shutil.copy2(path, into / path.name)) for path in sorted(project_dists.iterdir()))",
        "return sorted(project_dists.iterdir())",
        BUILD,
    ),
]
