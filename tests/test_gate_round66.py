"""The sixty-sixth round against the release gate: the repository tree itself hostile at build time.

hatchling builds from the working tree as it finds it: it follows links to folders (``os.walk(followlinks=True)``) and
skips a folder it has walked already, reads one ``.gitignore`` and one ``.hgignore`` at the tree's top (not
``.git/info/exclude``, ``core.excludesFile`` nor a ``.gitignore`` below the top), drops ``__pycache__``, ``.venv`` and
``.DS_Store`` whatever git tracks, and packs a link to a file as the file's bytes. Each case (tests/gate66_cases.py)
is a clone of a clean git copy of this checkout made hostile in its working tree alone, git's view unchanged, or by a
commit; hatchling (the gate's, in this process) builds its wheel and its sdist from the tree, and the gate judges each.
A commit tracking a link to ``ops`` that hatchling walks after ``ops`` itself (``neurobrix/zzz``), or a submodule in the
package, gave a wheel and an sdist that passed, the tracked entry missing from both (the round's fix: G108 and G509
name every tracked link and submodule under ``neurobrix/``). What ``python -m build`` (the gate's own build, isolated
with hatchling 1.32.4 and, through uv, 1.27.0) made of each, and which check holds each: docs/gate-rounds.md, round 66.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from gate66_cases import CASES, CONTROLS, git, make
from hatchling.builders.sdist import SdistBuilder
from hatchling.builders.wheel import WheelBuilder
from test_gate_round42 import _git_copy

from gate.checker import Options, check
from gate.checks import GateError
from gate.completeness import load_reference
from gate.repository import load_repository, read_tree_state

pytestmark = pytest.mark.slow

# the README table's code for what each case's wheel and sdist do; None: hatchling builds no such product
EXPECTED: dict[str, tuple[str | None, str | None]] = {
    "ops a link to its files, moved to neurobrix/_ops (walked first, ignored)": ("G108", "G509"),  # ops left out
    "ops a link outside, reached first by an ignored link neurobrix/aaa": ("G108", "G509"),
    "an untracked module .git/info/exclude hides": ("G107", "G509"),  # outside the allow-list; not a tracked file
    "an untracked module a self-ignoring neurobrix/.gitignore hides": ("G107", "G509"),
    "an untracked module core.excludesFile hides": ("G107", "G509"),
    "an untracked git repository in the package": ("G107", "G509"),
    "an untracked table file": ("G104", "G504"),  # an untracked table
    "a tracked link to cli.py": ("G107", "G304"),  # the link packed as a file; a link member
    "a tracked link to /etc/hostname": ("G107", "G304"),
    "a tracked link to ops walked before it (neurobrix/aaa)": ("G108", "G509"),
    "a tracked link to ops walked after it (neurobrix/zzz)": ("G108", "G509"),  # left out: the round's fix
    "a tracked link to a folder outside the package": ("G107", "G509"),
    "a tracked link to a missing file": (None, "G304"),
    "a tracked submodule in the package": ("G108", "G509"),  # left out: the round's fix
    "a tracked .DS_Store in ops": ("G108", "G509"),  # hatchling's own excludes
    "a tracked module under neurobrix/__pycache__": ("G108", "G509"),
    "a tracked module under neurobrix/.venv": ("G108", "G509"),
    "a tracked file under neurobrix/_tables": ("G104", "G508"),  # hatchling's rebuild differs
    "a tracked .hgignore dropping ops": ("G108", "G509"),
    "a clean filter hiding an edit of cli.py": ("tree", "tree"),  # the tree's state names cli.py
    "the package a link to its files outside the checkout": ("stops", "stops"),  # no metadata from the tree's top
}
# builds that are the commit's tracked files all the same, refused (fail closed): a table the tracked list does not
# list (the tables' promise), a tree whose top entry is a link (the gate prepares the metadata from the tracked top
# entries, and a link to a folder is none: it stops, exit 2)
FAITHFUL = {"a tracked file under neurobrix/_tables", "the package a link to its files outside the checkout"}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("round66") / "base"
    _git_copy(copy)
    return copy


def _build(tree: Path, out: Path) -> dict[str, Path | None]:
    """hatchling's wheel and sdist of ``tree`` (None where it fails to build one)."""
    built: dict[str, Path | None] = {}
    for kind, builder in (("wheel", WheelBuilder), ("sdist", SdistBuilder)):
        try:
            built[kind] = Path(next(builder(str(tree)).build(directory=str(out), versions=["standard"])))
        except OSError:
            built[kind] = None
    return built


def _codes(tree: Path, dist: Path | None) -> set[str] | None:
    """The gate's codes for ``dist`` judged alone against ``tree``; {"stops"} where it cannot judge (exit 2)."""
    if dist is None:
        return None
    options = Options(load_reference(tree / "tables/TRACKED.yaml"), smoke=False, tools=False, source_tree=tree)
    try:
        return {f.code for f in check([dist], options).findings}
    except GateError:
        return {"stops"}


def _wheel_reads(tree: Path, wheel: Path) -> str:
    """The wheel's files under ``neurobrix/`` against the commit's tracked entries under ``neurobrix/`` and ``tables/``
    (shipped as ``neurobrix/_tables/``): "as tracked" where they are the same paths with the working tree's bytes."""
    tracked = {}
    for record in filter(None, git(tree, "ls-files", "-s", "-z", "neurobrix/", "tables/").split("\0")):
        info, _, path = record.partition("\t")
        shipped = path.replace("tables/", "neurobrix/_tables/", 1) if path.startswith("tables/") else path
        tracked[shipped] = (tree / path).read_bytes() if info.startswith("100") else None
    with zipfile.ZipFile(wheel) as z:
        files = {i.filename: z.read(i) for i in z.infolist() if i.filename.startswith("neurobrix/")}
    return "as tracked" if files == tracked else "otherwise"


@pytest.fixture(scope="module")
def judged(base: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    """Each case and control: the clone's tree state, hatchling's products, how the wheel reads, the gate's codes for
    each product judged alone."""
    seen: dict[str, dict[str, object]] = {}
    for number, case in enumerate([*CASES, *CONTROLS]):
        folder = tmp_path_factory.mktemp(f"case{number}")
        tree = make(base, folder, case)
        built = _build(tree, folder / "dist")
        load_repository.cache_clear()
        seen[case] = {
            "clean": read_tree_state(tree).clean,
            "reads": _wheel_reads(tree, built["wheel"]) if built["wheel"] else "no wheel",
            **{kind: _codes(tree, dist) for kind, dist in built.items()},
        }
    return seen


def test_every_case_has_its_codes() -> None:
    assert set(EXPECTED) == set(CASES)
    assert len(CASES) >= 15 and not set(CASES) & set(CONTROLS)


@pytest.mark.parametrize("case", list(CASES))
def test_a_tree_whose_build_is_not_its_tracked_files_is_refused(
    judged: dict[str, dict[str, object]], case: str
) -> None:
    seen = judged[case]
    wheel, sdist = EXPECTED[case]
    if wheel == "tree":  # git calls the tree clean (its filter), the build packs the edited bytes: the state names it
        assert not seen["clean"] and seen["reads"] == "as tracked" and not seen["wheel"], seen
        return
    assert seen["clean"], seen  # the tree is the commit's to the gate: every tracked path's bytes and type
    reads = "as tracked" if case in FAITHFUL else "no wheel" if wheel is None else "otherwise"
    assert seen["reads"] == reads, seen  # what makes the case hostile (or the gate's refusal one of a faithful build)
    for kind, code in (("wheel", wheel), ("sdist", sdist)):
        if code is None:
            assert seen[kind] is None, seen
        else:
            assert code in seen[kind], (kind, seen)  # type: ignore[operator]


@pytest.mark.parametrize("case", list(CONTROLS))
def test_a_tree_whose_build_is_its_tracked_files_passes(judged: dict[str, dict[str, object]], case: str) -> None:
    seen = judged[case]
    assert seen["reads"] == "as tracked" and seen["wheel"] == seen["sdist"] == set(), seen
