"""The sixtieth round against the release gate: a file and a folder that are one path, and the names each file system
folds together.

A file and a folder whose names differ only by case, Unicode form or a trailing dot (``neurobrix/Ops`` beside the folder
``neurobrix/ops/``, ``neurobrix/cli.py`` beside a folder ``neurobrix/CLI.PY/``) are one path on NTFS, APFS, HFS+, exFAT
and ext4 or f2fs with casefolding: whichever comes first is made, and the other cannot be (opening a folder to write
fails, EISDIR or an access error; making a folder where a file is fails, EEXIST, which pip's ``ensure_dir`` swallows, so
the write under it fails, ENOTDIR). No installer writes both: the install fails part-way, loudly, and the dist installs
on Linux's case-sensitive disks only. G305 compared whole names and the folders above each member, never a file with a
folder, so the gate passed a commit tracking both spellings (wheel and sdist, untracked ones were refused as untracked
only); it now refuses a file whose key is a folder's, either way round (gate/archive.py ``_folder_alias``). Trailing-dot
and NFD spellings were refused already (G310) and are G305 too now.

Names folded together: ``names.destination_key`` (NFC, upper case, then case folding) was compared, by hand from
Unicode 14's tables, with each file system's rule over every code point a member name may hold and over each cased
letter followed by a combining mark: NTFS's and exFAT's upcase table (simple uppercase mapping, BMP only), simple and
full case folding after NFD (APFS, HFS+, ext4 and f2fs casefolding) and NFD alone. Every pair one of them folds has one
key, and of single code points every pair the key folds one of them folds (no false refusal by the key alone): the
Kelvin and Angstrom signs are not NFC (G310, and one key with K and Å), long s is ``s`` (NTFS upper-cases it to S),
final sigma is ``σ`` (both upper-case to Σ), ``ß`` and ``ẞ`` are ``ss`` and the ligature ``ﬁ`` is ``fi`` (full case
folding, ext4's; NTFS keeps them apart), the dotless i is ``i`` (NTFS upper-cases it to I; case folding keeps it
apart). The one rule the key does not follow is a simple lower-casing without decomposition, which takes ``İ`` to
``i``; no file system an installer writes to compares so (HFS+ decomposes ``İ`` to ``I`` and a combining dot first),
and the key keeps ``İ`` as full case folding does, ``i̇``. The key needed no change.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from gate_fixtures import Built, RawMember, RawTarMember
from test_gate_hostile import REFERENCE, built, judge
from test_gate_round42 import _git, _git_copy
from test_gate_round59 import UTF8, _added, _both, _g305, _sdist, _sdist_added, _wheel

from gate.build import build_project
from gate.checker import Options, check
from gate.names import destination_key, name_problems

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the hostile corpus's built wheel and sdist

OPS = "neurobrix/Ops"  # a file beside the folder neurobrix/ops/
CLI_FOLDER = "neurobrix/CLI.PY/extra.py"  # a folder beside the file neurobrix/cli.py


@pytest.fixture(scope="module")
def colliding(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """A git copy of this checkout with one commit tracking the file ``neurobrix/Ops`` and the folder
    ``neurobrix/CLI.PY/``, and its wheel and sdist as ``python -m build`` makes them."""
    root = tmp_path_factory.mktemp("round60")
    repo = root / "repo"
    _git_copy(repo)
    assert (repo / "neurobrix/ops").is_dir() and (repo / "neurobrix/cli.py").is_file()
    (repo / OPS).write_bytes(b"a file spelt like the folder neurobrix/ops/ but for case\n")
    (repo / CLI_FOLDER).parent.mkdir()
    (repo / CLI_FOLDER).write_bytes(b'"""A module in a folder spelt like neurobrix/cli.py but for case."""\n')
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "a file and a folder that are one path on case-insensitive file systems")
    files, _ = build_project(repo, root / "dist")
    return repo, files


def test_a_commit_tracking_a_file_and_a_folder_that_are_one_path_is_refused(
    colliding: tuple[Path, list[Path]],
) -> None:
    """Passed before this round: nothing else is wrong with the commit's dists, which fail to install on a
    case-insensitive file system (a file where a folder is)."""
    repo, files = colliding
    report = check(files, Options(REFERENCE, smoke=False, tools=False, source_tree=repo))
    assert {f.code for f in report.findings} == {"G305"}, [(f.code, f.path, f.message) for f in report.findings]
    for dist in (p.name for p in files):
        messages = [f.message for f in report.findings if f.dist == dist]
        assert any("neurobrix/Ops" in m and "neurobrix/ops/" in m for m in messages), messages
        assert any("neurobrix/cli.py" in m and "neurobrix/CLI.PY/" in m for m in messages), messages


def _first(name: str, data: bytes = b"x = 1\n"):
    """``name`` added before every other member (the file made before the folder, or the folder before the file)."""

    def alter(members: list[RawMember]) -> None:
        members.insert(0, RawMember(name.encode(), data, flags=0 if name.isascii() else UTF8))

    return alter


# (alter, the member refused, spellings its message names, the other checks that refuse it already)
FILE_AND_FOLDER = {
    "the file Ops after the folder ops/": (_added(OPS), OPS, ("neurobrix/ops/",), {"G107"}),
    "the file Ops before the folder ops/": (_first(OPS), "neurobrix/ops/__init__.py", (OPS,), {"G107"}),
    "the file ops beside the folder ops/": (_added("neurobrix/ops"), "neurobrix/ops", ("every file system",), {"G107"}),
    "a trailing dot, ops.": (_added("neurobrix/ops."), "neurobrix/ops.", ("neurobrix/ops/",), {"G107", "G310"}),
    "the folder CLI.PY/ after the file cli.py": (_added(CLI_FOLDER), CLI_FOLDER, ("neurobrix/cli.py",), {"G107"}),
    "the folder CLI.PY/ before the file cli.py": (_first(CLI_FOLDER), "neurobrix/cli.py", (CLI_FOLDER[:-9],), {"G107"}),
    "the folder cli.py./": (_added("neurobrix/cli.py./x.py"), "neurobrix/cli.py./x.py", (), {"G107", "G310"}),
    "NFC file, NFD folder": (
        _both(_added("neurobrix/caf\u00e9"), _added("neurobrix/cafe\u0301/x.py")),
        "neurobrix/cafe\u0301/x.py",
        ("neurobrix/caf\u00e9",),
        {"G107", "G310"},
    ),
}


@pytest.mark.parametrize("case", FILE_AND_FOLDER)
def test_a_wheel_file_and_folder_that_are_one_path_are_refused(built: Built, tmp_path: Path, case: str) -> None:
    alter, path, spellings, already = FILE_AND_FOLDER[case]
    wheel, _ = _wheel(built, tmp_path, alter)
    report = judge(wheel)
    _g305(report, path, "one path", *spellings)
    assert already <= {f.code for f in report.findings}, report.findings


@pytest.mark.parametrize("rel", ["neurobrix/Ops", "neurobrix/CLI.PY/x.py", "neurobrix/ops."])
def test_an_sdist_file_and_folder_that_are_one_path_are_refused(built: Built, tmp_path: Path, rel: str) -> None:
    root = built.sdist.name.removesuffix(".tar.gz")
    _g305(judge(_sdist(built, tmp_path, _sdist_added(rel))), f"{root}/{rel}", "one path")


def test_an_sdist_file_before_its_folder_is_refused(built: Built, tmp_path: Path) -> None:
    def alter(members: list[RawTarMember], root: str) -> list[RawTarMember]:
        return [RawTarMember(f"{root}/neurobrix/Ops", b"x\n")] + members

    root = built.sdist.name.removesuffix(".tar.gz")
    _g305(judge(_sdist(built, tmp_path, alter)), f"{root}/neurobrix/ops/__init__.py", f"{root}/neurobrix/Ops")


# Pairs of names a file system folds together and Unicode's simple case mapping or NFC alone does not, each with the
# rule that folds it: one key, and a wheel holding both is G305 (or G310 where one is not NFC)
FOLDED = {
    "Kelvin sign": ("\u212a.py", "k.py"),
    "Angstrom sign": ("\u212b.py", "\u00e5.py"),
    "long s": ("\u017f.py", "s.py"),
    "final sigma": ("\u03c2.py", "\u03c3.py"),
    "sharp s": ("\u00df.py", "ss.py"),
    "capital sharp s": ("\u1e9e.py", "ss.py"),
    "ligature fi": ("\ufb01le.py", "file.py"),
    "dotless i": ("cl\u0131.py", "cli.py"),
    "dotted capital I": ("\u0130.py", "i\u0307.py"),
}


def _folds(a: str, b: str) -> list[str]:
    """The rules of those named above that take ``a`` and ``b`` to one name."""
    nfd = lambda s: unicodedata.normalize("NFD", s)  # noqa: E731
    upcase = lambda s: "".join(c.upper() if len(c.upper()) == 1 else c for c in s)  # noqa: E731
    rules = {"NFD": nfd, "upcase table": upcase, "full case folding": lambda s: nfd(nfd(s).casefold())}
    return [rule for rule, fold in rules.items() if fold(a) == fold(b)]


@pytest.mark.parametrize("case", FOLDED)
def test_names_a_file_system_folds_together_have_one_key_and_are_refused(
    built: Built, tmp_path: Path, case: str
) -> None:
    one, other = FOLDED[case]
    assert _folds(one, other), case
    assert destination_key(one) == destination_key(other), case
    wheel, _ = _wheel(built, tmp_path, _both(_added(f"neurobrix/{other}"), _added(f"neurobrix/{one}")))
    report = judge(wheel)
    codes = {f.code for f in report.findings if f.path == f"neurobrix/{one}"}
    assert codes & {"G305", "G310"}, report.findings


def test_the_key_follows_every_fold_of_a_name_a_member_may_hold() -> None:
    """For each code point of the BMP a member name may hold, its key is the key of its upper case where that is one
    code point (NTFS's and exFAT's upcase table), of its full case folding after NFD (ext4's and f2fs's casefolding,
    APFS) and of its lower case where that is one code point, but ``İ``, which only a lower-casing without
    decomposition takes to ``i``."""
    missed = []
    for point in range(0x20, 0x10000):
        c = chr(point)
        if 0xD800 <= point < 0xE000 or c in "/\\" or name_problems(f"a{c}"):
            continue
        key = destination_key(f"a{c}")
        folds = [unicodedata.normalize("NFD", unicodedata.normalize("NFD", c).casefold())]
        folds += [f for f in (c.upper(), c.lower()) if len(f) == 1 and c != "\u0130"]
        missed += [f"U+{point:04X}" for f in folds if destination_key(f"a{f}") != key]
    assert not missed, missed
