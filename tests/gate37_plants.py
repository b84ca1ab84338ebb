"""Gate mutation round 37's planted bugs (not a test file): bugs planted one at a time in the gate's own code
(gate/*.py) and in release.yml's verify step, where the earlier gate mutation rounds planted least (the metadata twine
reads, the metadata comparison, the canonical file name, names, the layout's folder and table prefixes, the sdist's
shipped files and top folder, the tables' list, the report's escapes and verdict, the tree state, the upload folder,
the command line's commit checks, release.yml's checks of the report), for tests/planted24_driver.py (run as
`python tests/gate37_driver.py COPY RESULTS`): id, file, the exact text replaced, its replacement, and the gate's
tests that exercise it (the unit tests, the tests of its class by name, the round files of its checks; a survivor was
run again against more). The outcome of each: tests/test_gate_round37.py's docstring."""

from __future__ import annotations

UNITS = "tests/test_gate_units.py"
HOSTILE = "tests/test_gate_hostile.py"
GATE = "tests/test_gate.py"
R = {n: f"tests/test_gate_round{n}.py" for n in range(19, 38)}
P29 = "tests/test_gate_planted29.py"
WORKFLOWS = "tests/test_workflows.py"


def H(*names: str) -> list[str]:
    """Tests of the hostile corpus, by name."""
    return [f"{HOSTILE}::test_{n}" for n in names]


def G(*names: str) -> list[str]:
    """Tests of tests/test_gate.py, by name."""
    return [f"{GATE}::test_{n}" for n in names]


METADATA = [
    UNITS,
    P29,
    R[36],
    *H(
        "metadata_marker_that_breaks_the_parser_is_a_finding",
        "metadata_that_differs_from_pyproject_is_refused",
        "metadata_value_of_other_non_ascii_bytes_is_refused",
        "metadata_whose_fields_parsers_split_differently_is_refused",
        "entry_points_that_differ_from_pyproject_are_refused",
        "dist_file_name_spelling_the_release_otherwise_is_refused",
        "lone_wheel_files_a_build_writes_are_held_to_its_bytes",
        "sdist_pkg_info_with_an_added_requirement_is_refused",
    ),
    *G("a_wheel_renamed_to_another_version_is_refused", "a_wheel_renamed_to_another_project_is_refused"),
]
NAMES = [
    UNITS,
    R[29],
    R[35],
    *H(
        "member_name_judged_from_its_raw_bytes",
        "name_that_aliases_on_another_file_system_is_refused",
        "members_that_collide_on_case_or_unicode_form_are_refused",
        "sdist_members_tarfile_names_alike_are_judged_alike",
    ),
    *G("unsafe_member_names_are_refused", "members_differing_only_in_case_are_refused"),
]
LAYOUT = [
    UNITS,
    R[31],
    *H(
        "install_location_outside_the_allow_list_is_refused",
        "a_dist_info_spelt_otherwise_or_doubled_is_refused",
        "data_purelib_tables_with_their_own_tracked_list_are_refused",
        "a_tracked_file_under_the_dist_infos_licenses_is_refused",
        "dot_and_double_slash_spellings_of_the_tables_are_refused",
        "a_folder_entry_must_store_an_empty_member",
        "a_wheel_folder_entry_the_rebuild_lacks_is_refused",
        "a_declared_license_file_is_compared_with_the_repositorys",
        "random_byte_mutations_never_crash_and_never_pass_a_change",
    ),
    *G("an_extra_untracked_table_is_refused", "a_package_version_other_than_the_wheel_version_is_refused"),
]
SDIST = [
    UNITS,
    R[21],
    R[25],
    *H(
        "sdist_member_modes_pip_would_keep_are_refused",
        "sdist_file_the_repository_tracks_executable_is_held_to_its_bit",
        "sdist_pkg_info_executable_is_refused",
        "sdist_folder_entry_for_no_file_is_refused",
        "sdist_folder_with_special_mode_is_refused",
        "sdist_modes_other_unpackers_apply_are_refused",
        "sdist_tar_that_hides_or_redirects_a_member_is_refused",
        "sdist_build_configuration_that_changes_what_ships_is_refused_unbuilt",
    ),
    *G("an_sdist_file_that_is_not_the_repository_s_is_refused", "an_sdist_missing_a_source_of_the_wheel_is_refused"),
]
TABLES = [
    UNITS,
    *G(
        "a_removed_tracked_table_is_refused",
        "an_extra_untracked_table_is_refused",
        "a_stale_tracked_list_inside_the_wheel_is_refused",
        "a_wheel_without_its_tracked_list_is_refused",
        "damaged_tables_in_the_sdist_are_refused",
    ),
    *H(
        "data_purelib_tables_with_their_own_tracked_list_are_refused",
        "dot_and_double_slash_spellings_of_the_tables_are_refused",
    ),
]
REPORT = [UNITS, R[32], R[33], "tests/test_planted28.py", *G("cli_json_report", "cli_exit_codes")]
TREE = [
    UNITS,
    R[32],
    *G("a_working_tree_that_is_not_a_commit_is_judged_only_when_told", "a_clean_working_tree_needs_no_flag"),
    WORKFLOWS,
]
FOLDER = [
    UNITS,
    R[33],
    "tests/test_planted28.py",
    "tests/test_planted29.py",
    *H(
        "a_dist_named_through_a_link_is_refused",
        "a_dist_swapped_on_disk_while_it_is_judged_is_refused_and_reported_by_its_judged_bytes",
    ),
    *G("a_folder_with_a_stray_file_or_no_sdist_is_refused"),
]
YML = [WORKFLOWS, R[33], R[36]]


def _p(id: str, file: str, old: str, new: str, tests: list[str]) -> dict:
    """One plant; the unit tests (no build) first, then the tests named one by one, then whole files."""
    ordered = [t for t in tests if t == UNITS] + [t for t in tests if "::" in t]
    ordered += [t for t in tests if "::" not in t and t != UNITS]
    return {"id": id, "file": file, "old": old, "new": new, "tests": ordered, "timeout": 900}


W, M, N, L, S, K, RP, P, C, X, Y = (
    "gate/wheel.py",
    "gate/metadata.py",
    "gate/names.py",
    "gate/layout.py",
    "gate/sdist.py",
    "gate/completeness.py",
    "gate/report.py",
    "gate/repository.py",
    "gate/checker.py",
    "gate/cli.py",
    ".github/workflows/release.yml",
)

PLANTS = [
    # -- the metadata twine reads (round 36) ---------------------------------------------------------------------------
    _p(
        "T1",
        W,
        'if "METADATA" in "/".join(parts)',
        'if "METADATA" in parts[-1]',
        [R[36], UNITS],
    ),  # a folder whose name holds METADATA no longer a candidate
    _p("T2", W, "(len(parts), parts) for parts in", '(len(parts), "/".join(parts)) for parts in', [R[36], UNITS]),
    _p("T3", W, "    candidates = sorted(\n", "    candidates = list(\n", [R[36], UNITS]),
    _p(
        "T4",
        W,
        'if "METADATA" in "/".join(parts)',
        'if parts[-1] == "METADATA"',
        [R[36], UNITS],
    ),
    # -- RECORD --------------------------------------------------------------------------------------------------------
    _p(
        "W1",
        W,
        "        elif not hashed:\n",
        "        elif not hashed and not size_text:\n",
        [
            UNITS,
            P29,
            R[29],
            *H(
                "record_rows_installers_read_differently_are_refused",
                "record_rows_installers_validation_refuses_are_refused",
                "record_rows_that_misstate_a_member_are_refused",
            ),
            *G("a_weak_record_hash_is_refused"),
        ],
    ),
    # -- core metadata and its comparison -----------------------------------------------------------------------------
    _p("M1", M, 'lone = re.search(rb"\\r(?!\\n)", data)', 'lone = re.search(rb"\\r(?![\\n\\r])", data)', METADATA),
    _p("M2", M, 'rb"[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f]"', 'rb"[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f]"', METADATA),
    _p(
        "M3",
        M,
        "head_differs = data[: len(data) - len(theirs_body)] != expected[: len(expected) - len(ours_body)]",
        "head_differs = theirs_fields != ours_fields",
        METADATA,
    ),
    _p("M4", M, "if theirs_body != ours_body:", "if theirs_body.strip() != ours_body.strip():", METADATA),
    _p("M5", M, "return 2 * len(expected) + 64 * 1024", "return 20 * len(expected) + 64 * 1024", METADATA),
    _p(
        "M6",
        M,
        "if declared_by_name.version is not None and declared_by_name.version != version:",
        "if declared_by_name.version is None and declared_by_name.version != version:",
        METADATA,
    ),
    _p("M7", M, "if archive.dist != canonical:", "if archive.dist.lower() != canonical.lower():", METADATA),
    _p(
        "M8",
        M,
        "if len(archive.findings) > found or data is None or data == expected:\n        return\n    at = next(",
        "if len(archive.findings) > found or data is None or data.strip() == expected.strip():\n        return\n"
        "    at = next(",
        METADATA,
    ),
    # -- names ---------------------------------------------------------------------------------------------------------
    _p("N1", N, '_LINE_SEPARATOR = re.compile("[\\u2028\\u2029]")', '_LINE_SEPARATOR = re.compile("[\\u2028]")', NAMES),
    _p("N2", N, "_WINDOWS_INVALID = re.compile(r'[<>\"|?*]')", "_WINDOWS_INVALID = re.compile(r'[<>\"?*]')", NAMES),
    _p("N3", N, 'p.split(".", 1)[0].rstrip(" ").casefold()', 'p.rsplit(".", 1)[0].rstrip(" ").casefold()', NAMES),
    _p(
        "N4",
        N,
        'if unicodedata.normalize("NFC", body) != body:',
        'if unicodedata.normalize("NFD", body) != body:',
        NAMES,
    ),
    _p(
        "N5",
        N,
        'if any(unicodedata.category(ch) == "Cf" for ch in body):',
        'if any(ch in "\\u200b\\u200c\\u200d\\u200e\\u200f" for ch in body):',
        NAMES,
    ),
    _p("N6", N, "canonical_name(name).upper().casefold()", "canonical_name(name).casefold()", NAMES),
    _p(
        "N7",
        N,
        '_CONTROL = re.compile(r"[\\x00-\\x1f\\x7f-\\x9f]")',
        '_CONTROL = re.compile(r"[\\x00-\\x1f\\x7f]")',
        NAMES,
    ),
    _p("N8", N, 'if any(p != p.rstrip(". ") for p', 'if any(p != p.rstrip(".") for p', NAMES),
    # -- layout --------------------------------------------------------------------------------------------------------
    _p(
        "L1",
        L,
        "if not any(a.startswith(member.name) for a in allowed):",
        'if not any(a.startswith(member.name.rstrip("/")) for a in allowed):',
        LAYOUT,
    ),
    _p(
        "L2",
        L,
        '            if not member.name.startswith(f"{WHEEL_DIR}/"):  # an untracked table',
        "            if not member.name.startswith(WHEEL_DIR):  # an untracked table",
        LAYOUT,
    ),
    _p(
        "L3",
        L,
        "elif actual is not None and actual != expected:",
        "elif actual is not None and actual.size != expected.size:",
        LAYOUT,
    ),
    # -- sdist ---------------------------------------------------------------------------------------------------------
    _p("S1", S, "_SPECIAL_MODE = 0o7000 | 0o002", "_SPECIAL_MODE = 0o7000", SDIST),
    _p("S2", S, "shipped = set(required_sources(repo))", "shipped = set(repo.tracked)", SDIST),
    _p(
        "S3",
        S,
        'should = False if (m.name.startswith(tables) or rel == "PKG-INFO") else repo.tracked.get(rel)',
        "should = False if m.name.startswith(tables) else repo.tracked.get(rel)",
        SDIST,
    ),
    _p(
        "S4",
        S,
        "sorted(_folders(rebuilt) ^ _folders(wheel))",
        "sorted(_folders(rebuilt) - _folders(wheel))",
        [
            *H("a_wheel_folder_entry_the_rebuild_lacks_is_refused"),
            R[25],
            R[31],
            *G("a_wheel_the_sdist_does_not_rebuild_byte_for_byte_is_refused"),
        ],
    ),
    _p(
        "S5",
        S,
        'if m.name != f"{root}/" and not m.name.startswith(f"{root}/"):',
        "if not m.name.startswith(root):",
        SDIST,
    ),
    # -- the tables' list ----------------------------------------------------------------------------------------------
    _p(
        "K1",
        K,
        "if data is not None and data != reference.data:",
        "if data is not None and data.strip() != reference.data.strip():",
        TABLES,
    ),
    _p(
        "K2",
        K,
        "if name.startswith(prefix) and name not in listed and name != list_name:",
        'if name.startswith(prefix) and name.endswith(".yaml") and name not in listed and name != list_name:',
        TABLES,
    ),
    # -- the report ----------------------------------------------------------------------------------------------------
    _p(
        "R1",
        RP,
        '_UNSHOWN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})',
        '_UNSHOWN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})',
        REPORT,
    ),
    _p("R2", RP, "LINE_MAX = 2000", "LINE_MAX = 20000", REPORT),
    _p(
        "R3",
        RP,
        "if self.repository is not None and not self.repository.clean:",
        "if self.repository is not None and self.repository.commit is None:",
        REPORT,
    ),
    # -- the tree state ----------------------------------------------------------------------------------------------
    _p(
        "P1",
        P,
        "if not stat.S_ISREG(info.st_mode) or bool(info.st_mode & stat.S_IXUSR) != (mode == _EXECUTABLE):",
        "if not stat.S_ISREG(info.st_mode):",
        TREE,
    ),
    _p(
        "P2",
        P,
        "differs = {p for p in head.keys() | staged.keys() if head.get(p) != staged.get(p)}",
        "differs = set(head.keys() ^ staged.keys())",
        TREE,
    ),
    _p("P3", P, "return self.commit is not None and not self.differs", "return not self.differs", TREE),
    _p("P4", P, 'if not k.startswith("GIT_")}', 'if not k.startswith("GIT_DIR")}', TREE),
    # -- the upload folder and the file judged -------------------------------------------------------------------------
    _p(
        "C1",
        C,
        "found = [p for p in held if p.is_file() and not p.is_symlink() and dist_kind(p)]",
        "found = [p for p in held if p.is_file() and dist_kind(p)]",
        FOLDER,
    ),
    _p(
        "C2",
        C,
        "            if argument.is_symlink():\n",
        "            if argument.is_symlink() and not argument.resolve().is_file():\n",
        FOLDER,
    ),
    _p("C3", C, "            if was == now:\n", "            if was is not None:\n", FOLDER),
    _p("C4", C, 'if now != f"sha256 {archive.sha256}":', "if size != archive.size:", FOLDER),
    # -- the command line ----------------------------------------------------------------------------------------------
    _p("X1", X, "        if now != report.repository:", "        if now.commit != report.repository.commit:", TREE),
    _p(
        "X2",
        X,
        "if not state.clean and not args.allow_dirty:",
        "if state.commit is None and not args.allow_dirty:",
        TREE,
    ),
    # -- release.yml's verify step -------------------------------------------------------------------------------------
    _p(
        "Y1",
        Y,
        "'.repository.clean == true and .repository.commit == $commit'",
        "'.repository.commit == $commit'",
        YML,
    ),
    _p(
        "Y2",
        Y,
        '($wheels | length) > 0 and ([.smoke[] | select(.status == "passed") | .wheel] | sort) == $wheels',
        "($wheels | length) > 0",
        YML,
    ),
    _p(
        "Y3",
        Y,
        "diff <(find gate -mindepth 1 -printf '%y %P\\n') <(echo 'f report.json')",
        "test -f gate/report.json",
        YML,
    ),
    _p(
        "Y4",
        Y,
        "diff <(find dist -mindepth 1 -printf '%y %P\\n' | sort)",
        "diff <(find dist -mindepth 1 -type f -printf '%y %P\\n' | sort)",
        YML,
    ),
    _p(
        "Y5",
        Y,
        "sha256sum --check --strict --status - 2> /dev/null",
        "sha256sum --check --status - 2> /dev/null",
        YML,
    ),
]
