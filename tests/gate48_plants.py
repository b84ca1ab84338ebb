"""Gate mutation round 48's planted bugs (not a test file): bugs planted one at a time where no mutation round had
planted: gate round 44's code (gate/metadata.py's refusal of entry point names that are paths, G408; gate/checker.py's
one file name in two upload folders in other bytes, G602), gate round 47's publish-job workspace rule (release.yml's
verify step requiring the workspace to hold exactly dist/ and gate/, and the job's PYTHONSAFEPATH), gate round 45's
``cat-file --batch`` hashing of the commit and trees and the tree state read from it, and ``shadowing`` beyond what
planted round 41 covered (tests/planted41_plants.py: g01-g11, h01-h04), and gate round 46's link-and-``..`` refusal's
other branches (planted41's k01-k03 aside). For tests/planted24_driver.py (run as `python tests/gate48_driver.py COPY
RESULTS`): id, file, the exact text replaced, its replacement, and the gate's tests a contributor would run for it
(the test files that import the module, narrowed by name). The outcome of each: tests/test_gate_round48.py's
docstring."""

from __future__ import annotations

R44 = "tests/test_gate_round44.py"
R45 = "tests/test_gate_round45.py"
R46 = "tests/test_gate_round46.py"
R47 = "tests/test_gate_round47.py"
P41 = "tests/test_planted41.py"
HOSTILE = "tests/test_gate_hostile.py"
WORKFLOWS = "tests/test_workflows.py"

PATHS = [R44, f"{HOSTILE}::test_entry_points_that_differ_from_pyproject_are_refused", "-k", "entry_point"]
TWICE = [R44, "-k", "release_twice"]
TREE = [
    R45,
    f"{P41}::test_the_commits_files_are_gits_own_listing_in_either_object_format",
    f"{P41}::test_the_callers_git_variables_do_not_steer_what_the_gate_reads",
]
TOP = [
    R45,
    f"{P41}::test_a_package_of_bytecode_alone_at_the_top_is_refused",
    f"{P41}::test_a_checkout_on_the_path_through_a_link_is_checked_too",
    f"{P41}::test_a_file_named_as_a_top_package_is_no_shadowing",
    "-k",
    "python_m_gate or top or no_module or checked_too",
]
DOTDOT = [
    R46,
    f"{P41}::test_a_missing_path_with_dotdot_is_named_missing_not_a_link",
    f"{P41}::test_dotdot_after_a_link_to_a_place_normpath_does_not_find_is_refused",
]
PUBLISH = [R47, WORKFLOWS]

META, CHECKER, REPO, INIT, RELEASE = (
    "gate/metadata.py",
    "gate/checker.py",
    "gate/repository.py",
    "gate/__init__.py",
    ".github/workflows/release.yml",
)


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 400) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ---------------------------------------------------------------- gate round 44: entry point names that are paths
    p("a01", META, 'if name in (".", "..") or', 'if name == ".." or', PATHS),
    p("a02", META, ' or "\\\\" in name or', " or", PATHS),
    p("a03", META, "or _EP_DRIVE.match(name):", "or _EP_DRIVE.fullmatch(name):", PATHS),
    p("a04", META, '_EP_DRIVE = re.compile(r"[A-Za-z]:")', '_EP_DRIVE = re.compile(r"[A-Z]:")', PATHS),
    p(
        "a05",
        META,
        'name = line.partition("=")[0].strip() if "=" in line else ""',
        'name = line.partition("=")[0] if "=" in line else ""',
        PATHS,
    ),
    p("a06", META, 'or "/" in name or', 'or name.startswith("/") or', PATHS),
    p(
        "a07",
        META,
        'name = line.partition("=")[0].strip() if "=" in line else ""',
        'name = line.rpartition("=")[0].strip() if "=" in line else ""',
        PATHS,
    ),
    # ---------------------------------------------------------------- gate round 44: one file name in other bytes
    p(
        "b01",
        CHECKER,
        "earlier.sha256 and earlier.sha256 != archive.sha256:",
        "earlier.sha256 and earlier.sha256 == archive.sha256:",
        TWICE,
    ),
    p(
        "b02",
        CHECKER,
        "        earlier = first.setdefault(archive.dist, archive)",
        "        earlier = first.setdefault(str(archive.path), archive)",
        TWICE,
    ),
    p(
        "b03",
        CHECKER,
        "        if not archive.sha256:  # refused unread (G308): no bytes to compare\n            continue\n",
        "",
        TWICE,
    ),
    p(
        "b04",
        CHECKER,
        "        if earlier is not archive and earlier.sha256",
        '        if earlier is not archive and archive.kind == "wheel" and earlier.sha256',
        TWICE,
    ),
    # ------------------------------------------------------- gate round 45: the objects read and the tree state
    p(
        "d01",
        REPO,
        "if len(header) != 3 or header[0].decode() != oid or header[1]",
        "if len(header) != 3 or header[1]",
        TREE,
    ),
    p("d02", REPO, "        data = out[end + 1 : end + 1 + size]", "        data = out[end + 1 : end + size]", TREE),
    p("d03", REPO, 'if len(first) != 2 or first[0] != b"tree":', "if len(first) != 2:", TREE),
    p(
        "d04",
        REPO,
        '                name = data[space + 1 : nul].decode("utf-8", "surrogateescape")',
        '                name = data[space + 1 : nul].decode("utf-8", "replace")',
        TREE + ["tests/test_gate_round29.py", "tests/test_gate_round36.py"],
    ),
    p(
        "d05",
        REPO,
        '        trees = _objects(root, sorted(set(pending.values())), "tree")',
        '        trees = _objects(root, list(pending.values()), "tree")',
        TREE,
    ),
    p(
        "d06",
        REPO,
        "    differs = {p for p in head.keys() | staged.keys() if head.get(p) != staged.get(p)}",
        "    differs = {p for p in staged.keys() if head.get(p) != staged.get(p)}",
        TREE,
    ),
    p(
        "d07",
        REPO,
        "                    entries[prefix + name] = (mode, child)",
        '                    entries[prefix + name] = ("100644" if mode == "100755" else mode, child)',
        TREE,
    ),
    # ---------------------------------------------------------------- gate round 45: python -m gate's shadowing
    p(
        "e01",
        INIT,
        "        if _os.path.isdir(path):",
        "        if _os.path.isdir(path) and not _os.path.islink(path):",
        TOP,
    ),
    p(
        "e02",
        INIT,
        '            module = name.split(".", 1)[0] if name.endswith(suffixes) else ""',
        '            module = name.split(".", 1)[0] if name.endswith(".py") else ""',
        TOP,
    ),
    p(
        "e03",
        INIT,
        "on_path = {_os.path.realpath(entry or _os.getcwd()) for entry",
        "on_path = {_os.path.realpath(entry) for entry",
        TOP,
    ),
    # ---------------------------------------------------------------- gate round 46: a link and `..`, other branches
    p(
        "f01",
        CHECKER,
        "        same = os.path.samefile(lexical, argument)",
        "        same = lexical == os.path.realpath(argument)",
        DOTDOT,
    ),
    p(
        "f02",
        CHECKER,
        "        _read_alike_by_twine(argument)\n        if argument.is_dir():\n",
        "        if argument.is_dir():\n            _read_alike_by_twine(argument)\n",
        DOTDOT,
    ),
    p("f03", CHECKER, '    if ".." not in argument.parts or', '    if ".." not in argument.parent.parts or', DOTDOT),
    p("f04", CHECKER, '    if ".." not in argument.parts or', '    if ".." not in argument.parts[1:] or', DOTDOT),
    p(
        "f05",
        CHECKER,
        "    lexical = os.path.normpath(os.path.abspath(argument))",
        "    lexical = os.path.normpath(argument)",
        DOTDOT,
    ),
    # ---------------------------------------------------------------- gate round 47: the publish job's workspace
    p(
        "r01",
        RELEASE,
        "diff <(find . -mindepth 1 -maxdepth 1 -printf",
        "diff <(find . -mindepth 1 -maxdepth 1 -not -name '.*' -printf",
        PUBLISH,
    ),
    p(
        "r02",
        RELEASE,
        "diff <(find . -mindepth 1 -maxdepth 1 -printf",
        "diff <(find . -mindepth 1 -maxdepth 1 -type d -printf",
        PUBLISH,
    ),
    p(
        "r03",
        RELEASE,
        "-maxdepth 1 -printf '%y %P\\n' | sort)",
        "-maxdepth 1 -printf '%y %P\\n')",
        PUBLISH,
    ),
    p("r04", RELEASE, "-maxdepth 1 -printf '%y %P\\n' | sort)", "-maxdepth 1 -printf '%Y %P\\n' | sort)", PUBLISH),
    p("r05", RELEASE, '      PYTHONSAFEPATH: "1"', '      PYTHONSAFEPATH: ""', PUBLISH),
]
