"""The fifty-ninth round against the release gate: case-insensitive, normalising and Windows file systems, and
launchers' shebangs.

On NTFS, APFS and HFS+ (case-insensitive by default; HFS+ stores names in NFD, APFS compares them normalised) and under
Windows' name rules one file silently replaces another where two members' names differ only by case, Unicode form, a
trailing dot or space, a ``:`` stream or an 8.3 short name. The gate holds a wheel to an exact allow-list (the commit's
tracked names, G107) and an sdist to the commit's tracked files (G509), so an alias of a tracked name is refused as
untracked whatever else it is; G305 refuses two members that land on one file, G310 a name that lands elsewhere than
it reads. The round built each alias from this checkout's wheel and sdist (the cases below) and found two false
passes, both where the aliases are the commit's own (a tracked-file list with such collisions is the project's problem,
but the gate passed its dists, and they install otherwise there than the commit says):

- **a folder spelt two ways**: a commit tracking ``neurobrix/Ops/extra.py`` beside ``neurobrix/ops/`` names no file
  twice, so G305 (whole names compared) passed its wheel and sdist; on a case-insensitive file system ``extra.py``
  installs into ``neurobrix/ops/`` and ``import neurobrix.Ops.extra`` finds nothing. G305 now compares every folder
  above a member by its destination key, component by component (gate/archive.py ``_folder_alias``); an untracked
  ``NeuroBrix/evil.py`` (into the package there) or ``neurobrix/Ops/evil.py``, refused before only as untracked,
  now says where it lands too;
- **two launchers that are one file**: ``[project.scripts]`` declaring ``neurobrix`` and ``NeuroBrix`` (or a name in
  both console and gui scripts) passed, since entry_points.txt matched pyproject.toml; every installer writes each
  launcher into the scripts folder by its name, so there the one written last replaces the other and ``neurobrix``
  runs the other function. G408 now refuses launcher names whose destination keys meet (gate/metadata.py
  ``_check_launcher_names``).

Refused already, pinned: a member beside a tracked one in other case (``neurobrix/Model.py``), Unicode form (NFC and
NFD of one name), with an invisible format character, a trailing dot or space, a ``::$DATA`` stream (G305); an NFD
name, an 8.3 short name ``NEUROB~1``, ``aux.py`` and ``CON`` (G310); ``.dist-info`` files in other case beside the
real ones (``record``, ``Entry_Points.txt``, a ``.DIST-INFO`` folder: G305) or instead of them (G107); a RECORD row
naming a member in other case (G202, G205); sdist members ``pyproject.TOML``, ``PKG-info``, ``readme.md`` beside the
real ones (G305: unpacked on such a system they replace them before the build), an sdist root in other case (G501).

Launchers and shebangs (pip 23.2, 24.0, 25.2 and ``installer`` 1.1.0, measured by the driver): each rewrites a
``.data/scripts`` file whose first line starts with ``#!python`` (``#!pythonw``, ``#!python3`` too) to
``#!<interpreter>``, dropping the rest of that line (``-X dev``, ``-I -S``, a long line alike; a CR inside the line is
no line end, so ``#!python\\rimport sys`` loses ``import sys``), keeps CR LF after it, and leaves alone a BOM before
``#!python``, ``#! python``, ``#!/usr/bin/env python``, ``#!/usr/bin/python -E``, a shell script and a script with no
shebang. Every one installs to run code or flags the commit never named; the gate refuses any ``.data/scripts`` member
(G107), pinned here with ``installer``'s rewrite checked as recorded. Entry points other than pyproject.toml's (another
console or gui script) are G408, pinned.

pip versions between 23.2 and 26.3 (tests/gate59_driver.py ``pips`` and ``sdists``): round 58's corpus installed by pip
23.2.1, 24.0, 24.3.1, 25.0.1 and 25.2, each from a virtual environment; every dist the gate passes (34 wheels, 15
sdists) installed with each exactly as the dist as built, and the five agreed on every refused wheel installed but a
console script ``sub/evil`` (``bin/evil`` to 23.2, ``bin/sub/evil`` from 24.0 on) and ``../evil`` (``bin/evil`` to 23.2,
refused from 24.0 on). Round 58's ``.data/headers`` reading is the interpreter's, not the version's: pip 23.2.1 writes
``include/python3.11/...`` from the base interpreter, ``include/site/python3.11/...`` from a virtual environment.

Found in clean code: the gate modelled entry_points.txt in pyproject.toml's order where hatchling sorts the names (and
the other groups), a false refusal of a commit with two scripts out of order; pinned against hatchling's own writer.
"""

from __future__ import annotations

import stat
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from gate_fixtures import (
    Built,
    RawMember,
    RawTarMember,
    install_wheel,
    raw_tar,
    raw_zip,
    sdist_members,
    wheel_members,
    with_true_record,
    write_sdist,
)
from test_gate_hostile import REFERENCE, built, judge, refused_with
from test_gate_round42 import _git, _git_copy

from gate.build import build_project
from gate.checker import Options, check
from gate.metadata import entry_points_text
from gate.report import Report
from gate.repository import declared_entry_points

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the hostile corpus's built wheel and sdist

UTF8 = 0x800  # the zip flag that says a name is UTF-8


def _dist_info(members: list[RawMember]) -> str:
    return next(m.name for m in members if m.name.endswith(b".dist-info/RECORD")).decode().rsplit("/", 1)[0]


def _added(name: str, data: bytes = b"x = 1\n", *, folder: bool = False) -> Callable[[list[RawMember]], None]:
    def alter(members: list[RawMember]) -> None:
        raw = _named(name, members).encode()
        flags = 0 if raw.isascii() else UTF8
        if folder:
            members.insert(0, RawMember(raw, b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755, flags=flags))
        else:
            members.append(RawMember(raw, data, flags=flags))

    return alter


def _named(name: str, members: list[RawMember]) -> str:
    """``name`` with ``{di}`` the wheel's ``.dist-info`` folder, ``{DI}`` that folder spelt ``.DIST-INFO`` and ``{Di}``
    it with the project's name capitalised."""
    dist_info = _dist_info(members)
    return (
        name.replace("{di}", dist_info)
        .replace("{DI}", dist_info.replace(".dist-info", ".DIST-INFO"))
        .replace("{Di}", dist_info.capitalize())
    )


def _dist_info_renamed(members: list[RawMember]) -> None:
    """Every ``.dist-info`` member under the folder spelt with the project's name capitalised (``Neurobrix-…``)."""
    dist_info = _dist_info(members).encode()
    for m in members:
        if m.name.startswith(dist_info + b"/"):
            m.name = dist_info.capitalize() + m.name[len(dist_info) :]


def _both(*alters: Callable[[list[RawMember]], None]) -> Callable[[list[RawMember]], None]:
    def alter(members: list[RawMember]) -> None:
        for each in alters:
            each(members)

    return alter


def _wheel(built: Built, folder: Path, alter: Callable[[list[RawMember]], None]) -> tuple[Path, list[RawMember]]:
    members = wheel_members(built.wheel)
    alter(members)
    members = with_true_record(members)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / built.wheel.name
    path.write_bytes(raw_zip(members))
    return path, members


def _sdist(built: Built, folder: Path, alter: Callable[[list[RawTarMember], str], list[RawTarMember]]) -> Path:
    members = sdist_members(built.sdist)
    root = built.sdist.name.removesuffix(".tar.gz")
    folder.mkdir(parents=True, exist_ok=True)
    return write_sdist(folder / built.sdist.name, raw_tar(alter(members, root)))


def _sdist_added(rel: str, data: bytes = b"x = 1\n") -> Callable[[list[RawTarMember], str], list[RawTarMember]]:
    return lambda members, root: members + [RawTarMember(f"{root}/{rel}", data)]


def _g305(report: Report, path: str, *spellings: str) -> None:
    finding = refused_with(report, "G305", path)
    for spelt in spellings:
        assert spelt in finding.message, finding.message


# ---- the false passes: a commit whose own names collide ------------------------------------------------------------

EXTRA = "neurobrix/Ops/extra.py"  # beside neurobrix/ops/: one folder on a case-insensitive file system
SCRIPTS = '[project.scripts]\nneurobrix = "neurobrix.cli:main"\n'
SECOND = 'NeuroBrix = "neurobrix.doctor:diagnose"\n'  # bin/NeuroBrix is bin/neurobrix there


@pytest.fixture(scope="module")
def colliding(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """A git copy of this checkout with one commit tracking ``neurobrix/Ops/extra.py`` and declaring a second launcher
    ``NeuroBrix``, and its wheel and sdist as ``python -m build`` makes them."""
    root = tmp_path_factory.mktemp("round59")
    repo = root / "repo"
    _git_copy(repo)
    (repo / EXTRA).parent.mkdir()
    (repo / EXTRA).write_bytes(b'"""A module in a folder spelt like neurobrix/ops/ but for case."""\n')
    pyproject = (repo / "pyproject.toml").read_text(encoding="utf-8")
    assert pyproject.count(SCRIPTS) == 1
    (repo / "pyproject.toml").write_text(pyproject.replace(SCRIPTS, SCRIPTS + SECOND), encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "names that collide on case-insensitive file systems")
    files, _ = build_project(repo, root / "dist")
    return repo, files


def test_a_commit_whose_folder_or_launcher_names_collide_by_case_is_refused(
    colliding: tuple[Path, list[Path]],
) -> None:
    """Passed before this round (no other finding than the two new ones): the wheel's ``neurobrix/Ops/extra.py``
    and the sdist's install into ``neurobrix/ops/`` on a case-insensitive file system, and the launcher ``NeuroBrix``
    (``neurobrix.doctor:diagnose``) replaces ``neurobrix`` (``neurobrix.cli:main``) there."""
    repo, files = colliding
    report = check(files, Options(REFERENCE, smoke=False, tools=False, source_tree=repo))
    wheel = next(p.name for p in files if p.suffix == ".whl")
    sdist = next(p.name for p in files if p.name.endswith(".tar.gz"))
    assert {(f.code, f.dist) for f in report.findings} == {("G305", wheel), ("G305", sdist), ("G408", wheel)}, [
        (f.code, f.path, f.message) for f in report.findings
    ]
    for finding in (f for f in report.findings if f.code == "G305"):
        assert "neurobrix/Ops/" in finding.message and "neurobrix/ops/" in finding.message, finding.message
    launchers = next(f for f in report.findings if f.code == "G408")
    assert "NeuroBrix" in launchers.message and "[console_scripts] neurobrix" in launchers.message, launchers.message


# ---- folders spelt otherwise than the package's: refused before as untracked, now also where they land ------------

FOLDER_ALIASES = {
    "NeuroBrix/evil.py": (_added("NeuroBrix/evil.py"), "NeuroBrix/evil.py", ("NeuroBrix/", "neurobrix/")),
    "neurobrix/Ops/evil.py": (
        _added("neurobrix/Ops/evil.py"),
        "neurobrix/Ops/evil.py",
        ("neurobrix/Ops/", "neurobrix/ops/"),
    ),
    "a folder entry NeuroBrix/ after the package": (
        lambda ms: ms.append(RawMember(b"NeuroBrix/", b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755)),
        "NeuroBrix/",
        ("NeuroBrix/", "neurobrix/"),
    ),
}


@pytest.mark.parametrize("case", FOLDER_ALIASES)
def test_a_wheel_member_in_a_folder_spelt_otherwise_is_refused_where_it_lands(
    built: Built, tmp_path: Path, case: str
) -> None:
    alter, path, spellings = FOLDER_ALIASES[case]
    wheel, _ = _wheel(built, tmp_path, alter)
    report = judge(wheel)
    _g305(report, path, *spellings)
    refused_with(report, "G107", path)


@pytest.mark.parametrize("rel", ["Neurobrix/evil.py", "neurobrix/Ops/evil.py"])
def test_an_sdist_member_in_a_folder_spelt_otherwise_is_refused_where_it_lands(
    built: Built, tmp_path: Path, rel: str
) -> None:
    sdist = _sdist(built, tmp_path, _sdist_added(rel))
    root = built.sdist.name.removesuffix(".tar.gz")
    folder = rel.rsplit("/", 1)[0]
    _g305(judge(sdist), f"{root}/{rel}", f"{root}/{folder}/", f"{root}/{folder.lower()}/")


# ---- pinned: aliases of tracked names, refused already -------------------------------------------------------------

CLI = "neurobrix/cli.py"
PINNED_WHEEL: dict[str, tuple[Callable[[list[RawMember]], None], str, str]] = {
    "Model.py beside model.py": (_added("neurobrix/Model.py", b"import os\n"), "G305", "neurobrix/Model.py"),
    "NFC and NFD of one name": (
        _both(_added("neurobrix/caf\u00e9.py"), _added("neurobrix/cafe\u0301.py")),
        "G305",
        "neurobrix/cafe\u0301.py",
    ),
    "an NFD name": (_added("neurobrix/cafe\u0301.py"), "G310", "neurobrix/cafe\u0301.py"),
    "a zero-width space in the package's name": (_added("neuro\u200bbrix/cli.py"), "G305", "neuro\u200bbrix/cli.py"),
    "dotless i (NTFS's upcase table)": (_added("neurobrix/cl\u0131.py"), "G305", "neurobrix/cl\u0131.py"),
    "a trailing dot": (_added("neurobrix/cli.py."), "G305", "neurobrix/cli.py."),
    "a trailing space": (_added("neurobrix/cli.py "), "G305", "neurobrix/cli.py "),
    "a folder with a trailing dot": (_added("neurobrix./cli.py"), "G305", "neurobrix./cli.py"),
    "an NTFS stream": (_added("neurobrix/cli.py::$DATA"), "G305", "neurobrix/cli.py::$DATA"),
    "an 8.3 short name": (_added("NEUROB~1/cli.py"), "G310", "NEUROB~1/cli.py"),
    "aux.py": (_added("neurobrix/aux.py"), "G310", "neurobrix/aux.py"),
    "CON": (_added("neurobrix/CON"), "G310", "neurobrix/CON"),
    "record beside RECORD": (_added("{di}/record", b""), "G305", "{di}/RECORD"),
    "Entry_Points.txt": (
        _added("{di}/Entry_Points.txt", b"[console_scripts]\npip = x:y\n"),
        "G305",
        "{di}/Entry_Points.txt",
    ),
    "the .dist-info folder in other case": (_dist_info_renamed, "G107", "{Di}/METADATA"),
    "a .DIST-INFO folder": (
        _added("{DI}/entry_points.txt", b"[console_scripts]\npip = x:y\n"),
        "G305",
        "{DI}/entry_points.txt",
    ),
}


@pytest.mark.parametrize("case", PINNED_WHEEL)
def test_a_wheel_member_aliasing_a_tracked_name_is_refused(built: Built, tmp_path: Path, case: str) -> None:
    alter, code, path = PINNED_WHEEL[case]
    wheel, members = _wheel(built, tmp_path, alter)
    refused_with(judge(wheel), code, _named(path, members))


def test_a_record_row_naming_a_member_in_other_case_is_refused(built: Built, tmp_path: Path) -> None:
    members = with_true_record(wheel_members(built.wheel))
    record = members[-1]
    record.data = record.data.replace(f"{CLI},".encode(), b"neurobrix/CLI.py,", 1)
    tmp_path.mkdir(exist_ok=True)
    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(raw_zip(members))
    report = judge(wheel)
    refused_with(report, "G202", CLI)
    refused_with(report, "G205", "neurobrix/CLI.py")


PINNED_SDIST = {
    "pyproject.TOML": (_sdist_added("pyproject.TOML", b"[project]\n"), "G305", "pyproject.TOML"),
    "PKG-info": (_sdist_added("PKG-info", b"Metadata-Version: 2.4\n"), "G305", "PKG-info"),
    "readme.md": (_sdist_added("readme.md"), "G305", "readme.md"),
    "neurobrix/Model.py": (_sdist_added("neurobrix/Model.py"), "G305", "neurobrix/Model.py"),
    "an NFD name": (_sdist_added("neurobrix/cafe\u0301.py"), "G310", "neurobrix/cafe\u0301.py"),
    "the root in other case": (
        lambda ms, root: [
            RawTarMember(m.name.replace(root, root.capitalize(), 1), m.data, m.type, mode=m.mode) for m in ms
        ],
        "G501",
        None,
    ),
}


@pytest.mark.parametrize("case", PINNED_SDIST)
def test_an_sdist_member_aliasing_a_tracked_name_is_refused(built: Built, tmp_path: Path, case: str) -> None:
    alter, code, rel = PINNED_SDIST[case]
    report = judge(_sdist(built, tmp_path, alter))
    root = built.sdist.name.removesuffix(".tar.gz")
    if rel is None:
        assert not report.passed and code in {f.code for f in report.findings}, report.findings
    else:
        refused_with(report, code, f"{root}/{rel}")


# ---- launchers: .data/scripts shebangs and entry points ------------------------------------------------------------

# first line(s) of a .data/scripts file -> what installer 1.1.0 writes (pip 23.2, 24.0 and 25.2 alike, measured by
# tests/gate59_driver.py); <python> is the interpreter installed for
SHEBANGS = {
    b"#!python\nimport sys\n": b"#!<python>\nimport sys\n",
    b"#!pythonw\nimport sys\n": b"#!<python>\nimport sys\n",
    b"#!python -X dev\nimport sys\n": b"#!<python>\nimport sys\n",
    b"#!python -I -S\nimport sys\n": b"#!<python>\nimport sys\n",
    b"#!python3\nimport sys\n": b"#!<python>\nimport sys\n",
    b"#!python\r\nimport sys\r\n": b"#!<python>\nimport sys\r\n",
    b"#!python\rimport sys\n": b"#!<python>\n",
    b"\xef\xbb\xbf#!python\nimport sys\n": b"\xef\xbb\xbf#!python\nimport sys\n",
    b"#!/usr/bin/env python\nimport sys\n": b"#!/usr/bin/env python\nimport sys\n",
    b"#!/usr/bin/python -E\nimport sys\n": b"#!/usr/bin/python -E\nimport sys\n",
    b"#!python " + b"-X dev " * 30 + b"\nimport sys\n": b"#!<python>\nimport sys\n",
    b"import sys\n": b"import sys\n",
}


def test_data_scripts_of_every_shebang_are_refused(built: Built, tmp_path: Path) -> None:
    """One wheel holding a ``.data/scripts`` file per first line: each refused (G107, in the scripts folder), and
    ``installer`` writes each as recorded above (the reading the refusal keeps off an index)."""
    names = {f"nb-script-{i}": body for i, body in enumerate(SHEBANGS)}

    def alter(members: list[RawMember]) -> None:
        data = _dist_info(members).removesuffix(".dist-info") + ".data"
        members.extend(
            RawMember(f"{data}/scripts/{name}".encode(), body, mode=stat.S_IFREG | 0o755)
            for name, body in names.items()
        )

    wheel, members = _wheel(built, tmp_path / "dist", alter)
    report = judge(wheel)
    data = _dist_info(members).removesuffix(".dist-info") + ".data"
    for name in names:
        assert "the scripts folder" in refused_with(report, "G107", f"{data}/scripts/{name}").message
    site = install_wheel(wheel, tmp_path / "site")
    for name, body in names.items():
        written = (site / "scripts" / name).read_bytes().replace(f"#!{sys.executable}".encode(), b"#!<python>", 1)
        assert written == SHEBANGS[body], (body, written)


ENTRY_POINTS = {
    "a second console script in other case": b"[console_scripts]\nneurobrix = neurobrix.cli:main\n"
    b"NeuroBrix = neurobrix.doctor:diagnose\n",
    "the console script also a gui script": b"[console_scripts]\nneurobrix = neurobrix.cli:main\n\n[gui_scripts]\n"
    b"neurobrix = neurobrix.doctor:diagnose\n",
}


@pytest.mark.parametrize("case", ENTRY_POINTS)
def test_a_launcher_other_than_pyprojects_is_refused(built: Built, tmp_path: Path, case: str) -> None:
    def alter(members: list[RawMember]) -> None:
        next(m for m in members if m.name.endswith(b".dist-info/entry_points.txt")).data = ENTRY_POINTS[case]

    wheel, members = _wheel(built, tmp_path, alter)
    report = judge(wheel)
    path = f"{_dist_info(members)}/entry_points.txt"
    messages = [f.message for f in report.findings if f.code == "G408" and f.path == path]
    assert any("which pyproject.toml does not declare" in m for m in messages), messages
    assert any("one launcher on case-insensitive" in m for m in messages), messages


def test_entry_points_are_modelled_in_the_order_hatchling_writes_them(tmp_path: Path) -> None:
    """Found in clean code: the gate took pyproject.toml's entry points in its own order, hatchling sorts the names in
    each group and the other groups by name (``neurobrix`` then ``NeuroBrix`` is written ``NeuroBrix`` first), so a
    commit's own wheel with two scripts out of order was refused as other bytes than the backend writes (G408)."""
    from hatchling.builders.wheel import WheelBuilder

    project = {
        "name": "neurobrix",
        "version": "0.1.0",
        "scripts": {"neurobrix": "neurobrix.cli:main", "NeuroBrix": "neurobrix.doctor:diagnose", "nb": "m:nb"},
        "gui-scripts": {"nb-gui": "m:gui", "a-gui": "m:a"},
        "entry-points": {"z.plugins": {"y": "m:y", "b": "m:b"}, "a.plugins": {"q": "m:q"}, "empty": {}},
    }
    theirs = WheelBuilder(str(tmp_path), config={"project": project}).construct_entry_points_file()
    assert entry_points_text(declared_entry_points(project)) == theirs.encode()


def test_this_checkouts_dists_pass(built: Built) -> None:
    """No false refusal: this checkout's own wheel and sdist, every folder spelt one way and one launcher."""
    report = judge(built.wheel, built.sdist)
    assert report.passed, [(f.code, f.path, f.message) for f in report.findings]
