"""Round 49's planted bugs, in this session's three changes to how a verdict is read and carried (class: a verdict
read or carried wrong): conformance/bounds.py's ``compare`` (ratio, max |reference|, max |error| in one device read)
and harness.judge's use of it, conformance/specs/rotary.py's ``_tables`` (the rope tables compared on the CPU), and
conformance/check.py's per-kernel fingerprint, ``Report.fingerprints`` and ``carried_over``'s per-kernel resume (with
its rendering and ``check --record``'s count of carried entries). For tests/planted49_driver.py: id, file, the exact
text replaced, its replacement, and the existing tests a contributor would run for it (the outcome of each:
tests/test_planted49.py's docstring)."""

from __future__ import annotations

BND = ["tests/test_bounds.py", "tests/test_planted37.py"]
JDG = [*BND, "tests/test_kmut4.py"]
ROT = [
    "tests/test_kmut3.py",
    "tests/test_bounds.py",
    "tests/test_conformance.py::test_rotary_checks_a_dynamic_table_as_long_as_the_context_on_every_case",
    "tests/test_conformance.py::test_rotary_draws_the_engines_tables_for_every_rope_configuration_in_use",
]
RES = [
    "tests/test_conformance.py::test_check_resumes_from_a_report_of_the_same_tables_kernels_and_bounds",
    "tests/test_conformance.py::test_certify_writes_proven_tracked_tables_and_resumes",
    "tests/test_planted39.py",
    "tests/test_source_binding.py",
]
BOUNDS, HARNESS, ROTARY, CHECK = (
    "conformance/bounds.py",
    "conformance/harness.py",
    "conformance/specs/rotary.py",
    "conformance/check.py",
)


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 600) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ bounds.compare: the one read
    p("c01", BOUNDS, "    return read[2], read[3], read[4]\n", "    return read[4], read[3], read[4]\n", BND),  # |err|
    p(
        "c02",
        BOUNDS,
        "(~torch.isfinite(b)).any() | (b < 0).any()",
        "(~torch.isfinite(b)).any()",  # a negative bound passes every error
        BND,
    ),
    p(
        "c03",
        BOUNDS,
        "    nonfinite = (~torch.isfinite(a)).any()\n",
        "    nonfinite = torch.isinf(a).any()\n",  # a NaN in the actual read through r.max()
        BND,
    ),
    p("c04", BOUNDS, " ref.abs().max(), err.max()))", " ref.abs().max(), b.max()))", BND),  # relative of the bound
    p(
        "c05",
        BOUNDS,
        "    if a.shape != ref.shape or b.shape != ref.shape:\n",
        "    if a.shape != ref.shape:\n",  # a bound of another shape broadcast
        BND,
    ),
    p("c06", BOUNDS, "        return 0.0, 0.0, 0.0\n", "        return math.nan, 0.0, 0.0\n", BND),  # empty: nan
    p(
        "c07",
        BOUNDS,
        "        return math.inf, read[3], math.inf\n",
        "        return math.inf, read[3], read[4]\n",  # a NaN actual's error read as nan, not inf
        BND,
    ),
    p(
        "c08",
        BOUNDS,
        "    r = torch.where(err == 0, torch.zeros_like(err), err / b)  # err / 0 = inf\n",
        "    r = err / b\n",  # 0 / 0 = nan
        BND,
    ),
    p(
        "c09",
        BOUNDS,
        "    invalid = (~torch.isfinite(ref)).any() | (~torch.isfinite(b)).any() | (b < 0).any()",
        "    invalid = (~torch.isfinite(ref)).any() | (b < 0).any()",  # an inf bound passes every error
        BND,
    ),
    p(
        "c10",
        BOUNDS,
        "    invalid = (~torch.isfinite(ref)).any() | (~torch.isfinite(b)).any() | (b < 0).any()",
        "    invalid = (~torch.isfinite(b)).any() | (b < 0).any()",  # a NaN reference not refused
        BND,
    ),
    p(
        "c11",
        BOUNDS,
        """    if read[0]:
        raise ValueError("the reference and the bound must be finite (and the bound >= 0)")
    if read[1]:
        return math.inf, read[3], math.inf
""",
        """    if read[1]:
        return math.inf, read[3], math.inf
    if read[0]:
        raise ValueError("the reference and the bound must be finite (and the bound >= 0)")
""",  # an invalid reference or bound hidden by a non-finite actual
        BND,
    ),
    p("c12", BOUNDS, " ref.abs().max(), err.max()))", " ref.max(), err.max()))", BND),  # signed scale
    p(
        "c13",
        HARNESS,
        "            relative = max(relative, largest / scale)\n",
        "            relative = largest / scale\n",  # the last pair's relative error only
        JDG,
    ),
    p("c14", HARNESS, "        if scale > 0:\n", "        if scale:\n", JDG),  # scale >= 0 always: equivalent
    p(
        "c15",
        HARNESS,
        "        r, scale, largest = bounds.compare(actual, ref, bound)\n",
        "        r, largest, scale = bounds.compare(actual, ref, bound)\n",  # the slots swapped
        JDG,
    ),
    # ------------------------------------------------------------------ rotary._tables
    p("r01", ROTARY, "                    table.to(on),\n", "                    got.to(on),\n", ROT),  # itself
    p(
        "r02",
        ROTARY,
        """for name, got, table in (("cos", engine[0], tables.cos), ("sin", engine[1], tables.sin))""",
        """for name, got, table in (("cos", engine[0], tables.cos),)""",  # cos only
        ROT,
    ),
    p(
        "r03",
        ROTARY,
        """(rope.theta, rope.rope_scaling, (a["cos"], a["sin"]), str(rope)),""",
        """(rope.theta, rope.rope_scaling, (a["cos"], a["cos"]), str(rope)),""",  # the case's sin unjudged
        ROT,
    ),
    p(
        "r04",
        ROTARY,
        """        for name, got, table in (("cos", engine[0], tables.cos), ("sin", engine[1], tables.sin))""",
        """        for name, got, table in (("cos", engine[0], tables.cos), ("sin", engine[1], tables.cos))""",
        ROT,  # sin against the reference's cos
    ),
    # ------------------------------------------------------------------ check.fingerprint(kernel=)
    p(
        "f01",
        CHECK,
        'f.name.startswith(f"{kernel}.")',
        "f.name.startswith(kernel)",  # attention_decode takes attention_decode_x's files
        RES,
    ),
    p(
        "f02",
        CHECK,
        'or shipped or f.name == "class.yaml" or f.name.startswith',
        "or shipped or f.name.startswith",  # the class file left out
        RES,
    ),
    p(
        "f03",
        CHECK,
        "    for package, pattern in VERDICT_FILES:\n        files += [",
        "    for package, pattern in VERDICT_FILES if kernel is None else ():\n        files += [",
        RES,  # a kernel's fingerprint blind to the kernels' code, reference and bounds
    ),
    p(
        "f04",
        CHECK,
        """    versions = (
        f"torch {running.torch}""",
        """    versions = "" if kernel else (
        f"torch {running.torch}""",
        RES,  # a kernel's fingerprint blind to the stack
    ),
    p(
        "f05",
        CHECK,
        'if f.is_file() and (kernel is None or shipped or f.name == "class.yaml"',
        'if f.is_file() and (kernel is None or not shipped or f.name == "class.yaml"',
        RES,  # every table file in each kernel's fingerprint: one bind voids every kernel's resume
    ),
    p(
        "f06",
        CHECK,
        "        fingerprints={} if shipped else {k: fingerprint(root, gpu_class, kernel=k) for k in chosen},\n",
        "        fingerprints={k: fingerprint(root, gpu_class, kernel=k) for k in chosen},\n",
        RES,  # a --shipped report per kernel, blind to the other classes' tables it checked
    ),
    p(
        "f07",
        CHECK,
        'if f.is_file() and (kernel is None or shipped or f.name == "class.yaml"',
        'if f.is_file() and (kernel is None or f.name == "class.yaml"',
        RES,  # no caller passes shipped and kernel together: equivalent
    ),
    # ------------------------------------------------------------------ check.carried_over
    p(
        "k01",
        CHECK,
        '            if not whole and item.get("kernel") not in same:\n',
        "            if not whole and not same:\n",  # a changed kernel's entries carried beside another's
        RES,
    ),
    p(
        "k02",
        CHECK,
        '        if name == "fingerprint" and (whole or same):\n',
        '        if name == "fingerprint":\n',  # carried when neither the whole nor any kernel matches
        RES,
    ),
    p(
        "k03",
        CHECK,
        "if isinstance(theirs, dict) and theirs.get(k) == v}",
        "if (theirs if isinstance(theirs, dict) else {}).get(k, v) == v}",
        RES,  # a report without fingerprints (before today) carried per kernel whatever changed
    ),
    p(
        "k04",
        CHECK,
        '                if item.get("kernel") in report.fingerprints:  # a kernel of this run',
        "                if True:  # a kernel of this run",  # `changed` naming kernels not in this run
        RES,
    ),
    p(
        "k05",
        CHECK,
        """                    changed.add(str(item.get("kernel")))
                continue
""",
        """                    changed.add(str(item.get("kernel")))
""",  # a changed kernel named and carried all the same (--record binds on it)
        RES,
    ),
    p(
        "k06",
        CHECK,
        '    whole = old.get("fingerprint") == report.fingerprint\n',
        '    whole = old.get("fingerprint") == report.fingerprint or bool(same)\n',  # one kernel same: all carried
        RES,
    ),
    p(
        "k07",
        CHECK,
        '            "fingerprints": self.fingerprints,\n',
        "",  # the report never written with them: no per-kernel resume
        RES,
    ),
    p(
        "k08",
        CHECK,
        '        if report.resumed_from.get("changed"):\n            lines.append(',
        '        if "changed" in report.resumed_from:\n            lines.append(',  # an empty list rendered
        RES,
    ),
    p(
        "k09",
        CHECK,
        "    same = {k for k, v in report.fingerprints.items() if",
        "    same = {k for k, v in (report.fingerprints if whole else {}).items() if",
        RES,  # per-kernel only where the whole matches: the bind voids the resume again
    ),
    p(
        "k10",
        CHECK,
        '        if name == "fingerprint" and (whole or same):\n            continue\n',
        '        if name in ("fingerprint", "shipped") and (whole or same):\n            continue\n',
        RES,  # a --shipped report resumed by a check without it where a kernel's matches
    ),
]
