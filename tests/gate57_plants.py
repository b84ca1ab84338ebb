"""Gate mutation round 57's planted bugs (not a test file): bugs planted one at a time in the code gate round 56 added
to gate/repository.py: ``_check_build_requires`` (``[build-system] requires``: hatchling alone, plain, a list),
``MODELLED_HATCH`` with ``_check_metadata_model`` (``[tool.hatch.metadata]`` none, ``[tool.hatch.version]`` the
package's ``__init__.py``) and their calls from ``_check_build_model``. For tests/planted24_driver.py (run as `python
tests/gate57_driver.py COPY RESULTS`): id, file, the exact text replaced, its replacement, and the gate's tests a
contributor would run for it (round 56's fast cases, then round 51's and 52's fast build-model cases). The outcome of
each: tests/test_gate_round57.py's docstring."""

from __future__ import annotations

R51 = "tests/test_gate_round51.py"
R52 = "tests/test_gate_round52.py"
R56 = "tests/test_gate_round56.py"
R57 = "tests/test_gate_round57.py"

MODEL = [
    R56,
    R51,
    f"{R52}::test_another_hatchling_backend_stops_the_gate",
    f"{R52}::test_a_quoted_dotted_key_hides_no_package_hatchling_builds",
    f"{R52}::test_a_list_of_tables_is_named_like_any_other_value",
    "-m",
    "not slow",
]

REPO = "gate/repository.py"

REQ_CHECK = "plain = requirement is not None and not (requirement.url or requirement.extras or requirement.marker)"
NAME_CHECK = "canonicalize_name(requirement.name) == BACKEND_DISTRIBUTION"
LISTED = "named = [] if isinstance(requires, list) and requires else [repr(requires)]"
PARSED = "requirement = Requirement(item) if isinstance(item, str) else None"
KEPT = "found = {k: v for k, v in _flat({} if declared is None else declared).items() if k or v != {}}"
WANTED = "wanted = {k: v for k, v in _flat(modelled).items() if k or v != {}}"
KEYS = "for key in sorted(found.keys() | wanted.keys())"
DIFFERS = "if found.get(key, _ABSENT) != wanted.get(key, _ABSENT)"
CALL_META = "_check_metadata_model(file, hatch if isinstance(hatch, dict) else {}, where)"
CALL_REQ = '_check_build_requires(file, system.get("requires"), where)'


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 300) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ---------------------------------------------------------------- [build-system] requires
    p("q01", REPO, REQ_CHECK, REQ_CHECK.replace("requirement.url or ", ""), MODEL),
    p("q02", REPO, REQ_CHECK, REQ_CHECK.replace(" or requirement.extras", ""), MODEL),
    p("q03", REPO, REQ_CHECK, REQ_CHECK.replace(" or requirement.marker", ""), MODEL),
    p(
        "q04",
        REPO,
        REQ_CHECK,
        REQ_CHECK.replace("requirement.marker)", "(requirement.marker and not requirement.marker.evaluate()))"),
        MODEL,
    ),
    p("q05", REPO, NAME_CHECK, "requirement.name == BACKEND_DISTRIBUTION", MODEL),
    p("q06", REPO, NAME_CHECK, "requirement.name.lower() == BACKEND_DISTRIBUTION", MODEL),
    p("q07", REPO, NAME_CHECK, "canonicalize_name(requirement.name).startswith(BACKEND_DISTRIBUTION)", MODEL),
    p("q08", REPO, NAME_CHECK, "BACKEND_DISTRIBUTION in canonicalize_name(requirement.name)", MODEL),
    p("q09", REPO, LISTED, "named = [] if requires else [repr(requires)]", MODEL),
    p("q10", REPO, LISTED, "named = [] if isinstance(requires, list) else [repr(requires)]", MODEL),
    p(
        "q11",
        REPO,
        "for item in requires if isinstance(requires, list) else []:",
        "for item in requires[:1] if isinstance(requires, list) else []:",
        MODEL,
    ),
    p("q12", REPO, PARSED, "requirement = Requirement(item)", MODEL),
    p("q13", REPO, PARSED, "requirement = Requirement(str(item))", MODEL),
    p("q14", REPO, "        except InvalidRequirement:\n", "        except ValueError:\n", MODEL),
    p(
        "q15",
        REPO,
        REQ_CHECK,
        REQ_CHECK.replace("plain = requirement is not None and not", "plain = requirement is None or not"),
        MODEL,
    ),
    p(
        "q16",
        REPO,
        "    if named:\n        alone = ",
        "    if len(named) > 1:\n        alone = ",
        MODEL,
    ),
    p("q17", REPO, CALL_REQ, "", MODEL),
    p("q18", REPO, CALL_REQ, '_check_build_requires(file, system.get("requires", ["hatchling"]), where)', MODEL),
    # ---------------------------------------------------------------- [tool.hatch.metadata] and [tool.hatch.version]
    p(
        "h01",
        REPO,
        'MODELLED_HATCH: dict[str, dict[str, Any]] = {"metadata": {}, "version"',
        'MODELLED_HATCH: dict[str, dict[str, Any]] = {"version"',
        MODEL,
    ),
    p(
        "h02",
        REPO,
        "for table, modelled in MODELLED_HATCH.items():",
        "for table, modelled in list(MODELLED_HATCH.items())[:1]:",
        MODEL,
    ),
    p("h03", REPO, KEPT, KEPT.replace("if k or v != {}", "if k or v == {}"), MODEL),
    p("h04", REPO, KEPT, KEPT.replace("if k or v != {}", "if v != {}"), MODEL),
    p("h05", REPO, KEPT, KEPT.replace("if k or v != {}", "if k"), MODEL),
    p("h06", REPO, KEPT, KEPT.replace("{} if declared is None else declared", "declared or {}"), MODEL),
    p("h07", REPO, WANTED, "wanted = _flat(modelled)", MODEL),
    p("h08", REPO, KEYS, "for key in sorted(wanted.keys())", MODEL),
    p("h09", REPO, KEYS, "for key in sorted(found.keys())", MODEL),
    p("h10", REPO, DIFFERS, "if found.get(key) != wanted.get(key)", MODEL),
    p(
        "h11",
        REPO,
        DIFFERS,
        "if not str(found.get(key, _ABSENT)).endswith(str(wanted.get(key, _ABSENT)))",
        MODEL,
    ),
    p(
        "h12",
        REPO,
        DIFFERS,
        "if os.path.normpath(str(found.get(key, _ABSENT))) != os.path.normpath(str(wanted.get(key, _ABSENT)))",
        MODEL,
    ),
    p("h13", REPO, CALL_META, "_check_metadata_model(file, build if isinstance(build, dict) else {}, where)", MODEL),
    p("h14", REPO, CALL_META, "pass", MODEL),
    p(
        "h15",
        REPO,
        CALL_META,
        '_check_metadata_model(file, hatch if isinstance(hatch, dict) and "build" in hatch else {}, where)',
        MODEL,
    ),
]
