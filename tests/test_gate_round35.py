"""The thirty-fifth round against the release gate: one corpus per attack class, each dist built from the project's own.

Every class below was built as an attacker would (the project's wheel or sdist changed one way, RECORD told the truth
where the class is not RECORD itself), read by the code that installs it where that says what is at stake (pip 23.2's
tag test and its own ``install_wheel``, ``installer``, packaging's metadata reader, Python's email parser, zipfile),
and judged by the gate. No dist the gate passes was found; each class was refused already and is held here, named for
the class, by the check that refuses it (each test fails with that check weakened):

1. wheel file-name tags: a compressed tag set holding ``py3-none-any`` (``py2.py3``, ``py3.py311``,
   ``any.linux_x86_64``), which pip installs here as readily, a build tag, ``abi3``, a platform tag, a ``py2`` tag,
   each with WHEEL's ``Tag`` lines left as built or rewritten to say the file name's tags (G407);
2. core metadata: a ``Requires-Dist`` on a local path (``file://``) or a URL, ``Provides-Extra`` with a requirement
   that pulls another project, a ``Dynamic`` field, an RFC 822 continuation line, RFC 2047 encoded words (``Name:
   =?utf-8?q?neurobrix?=``, which a decoding reader takes for the project and Python's email parser does not), in the
   wheel's METADATA and the sdist's PKG-INFO (G404, G406); and a second METADATA-like file in the ``.dist-info``
   (``PKG-INFO``, which importlib.metadata reads where METADATA is missing, ``metadata.json``, ``pydist.json``; G107);
3. entry points that shadow a tool or plug into one: console scripts ``pip``, ``python`` and ``pip3.11`` (``installer``
   writes a ``pip`` launcher into the scripts folder, ahead of the environment's pip on PATH), and the groups
   ``gui_scripts``, ``pytest11`` and ``hatch`` (G408);
4. RECORD rows that spell a member otherwise (``./``, ``//``, a backslash, another case), list a member twice, leave
   one out, or name an absolute or climbing path (G202, G205, G206); and members that alias a tracked path on another
   file system (another case, a long s that NTFS upper-cases to ``S``, a Kelvin sign that NFC makes ``K``, an NFD name:
   G305, G310);
5. zip structure: a local header naming another member than its directory entry (zipfile refuses the wheel, a
   streaming reader installs the local name), a data descriptor, a zip64 extra record, a folder entry holding data, a
   script before the archive, an archive or entry comment, two entries of one name (G304, G305, G311, G312, G313);
6. the sdist: PKG-INFO saying another version, pyproject.toml naming another build backend, a ``setup.py`` or
   ``hatch_build.py`` beside it, symbolic and hard links, a pax ``path`` or GNU long name renaming a member, a member
   whose name is not NFC, a file a build leaves in a source folder (``__pycache__``), a ``./`` prefix on every member
   (G304, G310, G313, G509, G601). (A PKG-INFO without a requirement, an ``*.egg-info`` and a tracked file the sdist
   never holds are rounds 31, 21 and 21's, not built again.)
"""

from __future__ import annotations

import gzip
import re
import stat
import struct
import tarfile
import unicodedata
import zipfile
from collections.abc import Callable
from email.header import decode_header
from email.parser import BytesParser
from pathlib import Path

import pytest
from gate_fixtures import (
    Built,
    RawMember,
    RawTarMember,
    install_wheel,
    raw_tar,
    sdist_members,
    wheel_members,
    with_true_record,
)
from packaging.metadata import Metadata
from packaging.tags import sys_tags
from packaging.utils import parse_wheel_filename
from test_gate_hostile import built, judge, refused_with, write_wheel

__all__ = ["built"]  # the hostile corpus's built wheel and sdist

Members = list[RawMember]


def _member(members: Members, name: str) -> RawMember:
    return next(m for m in members if m.name == name.encode())


def _replaced(members: Members, name: str, data: bytes) -> Members:
    return [RawMember(m.name, data) if m.name == name.encode() else m for m in members]


def write_sdist(path: Path, tar: bytes) -> Path:
    """``tar`` gzipped at the fastest level (a valid sdist, XFL 4; level 9 took half a second each here)."""
    path.write_bytes(gzip.compress(tar, compresslevel=1, mtime=0))
    return path


def _codes(report_findings: list[tuple[str, str | None]]) -> set[str]:
    return {code for code, _ in report_findings}


def _findings(wheel_or_sdist: Path) -> list[tuple[str, str | None]]:
    report = judge(wheel_or_sdist)
    assert not report.passed and report.exit_code == 1
    return [(f.code, f.path) for f in report.findings]


# -- 1. wheel file-name tags -------------------------------------------------------------------------------------------

TAGGED = {  # the file name's tags after the version -> whether pip installs it here (py3-none-any among its tags)
    "py2.py3-none-any": True,
    "py3.py311-none-any": True,
    "py3-none-any.linux_x86_64": True,
    "1-py3-none-any": True,
    "py3-abi3-any": False,
    "cp311-abi3-manylinux_2_17_x86_64": None,  # installable on x86-64 Linux only
    "py2-none-any": False,
}


def _wheel_tag_lines(tags: str) -> bytes:
    interpreters, abis, platforms = tags.split("-")[-3:]
    return "".join(
        f"Tag: {i}-{a}-{p}\n" for i in interpreters.split(".") for a in abis.split(".") for p in platforms.split(".")
    ).encode()


@pytest.mark.parametrize("wheel_file_says", [False, True], ids=["WHEEL as built", "WHEEL says the same tags"])
@pytest.mark.parametrize("tags", list(TAGGED))
def test_wheel_tag_games_in_the_file_name_are_refused(
    built: Built, tmp_path: Path, tags: str, wheel_file_says: bool
) -> None:
    name = f"neurobrix-{built.version}-{tags}.whl"
    members = wheel_members(built.wheel)
    if wheel_file_says:
        wheel_file = f"{built.dist_info}/WHEEL"
        said = _member(members, wheel_file).data.replace(b"Tag: py3-none-any\n", _wheel_tag_lines(tags))
        members = _replaced(members, wheel_file, said)
    wheel = write_wheel(built, tmp_path, with_true_record(members), name=name)
    finding = refused_with(judge(wheel), "G407", None, name)
    assert "this project's wheel" in finding.message
    if TAGGED[tags]:  # the stake: pip's tag test (a supported tag among the file name's) takes it here
        assert parse_wheel_filename(name)[3] & set(sys_tags())


# -- 2. core metadata --------------------------------------------------------------------------------------------------


def _with_field(metadata: bytes, line: bytes) -> bytes:
    head, blank, body = metadata.partition(b"\n\n")
    return head + b"\n" + line + blank + body


METADATA_EDITS: dict[str, Callable[[bytes], bytes]] = {
    "a requirement on a local path": lambda m: _with_field(m, b"Requires-Dist: planted @ file:///tmp/planted"),
    "a requirement by URL": lambda m: _with_field(
        m, b"Requires-Dist: planted @ https://example.invalid/planted-1.0-py3-none-any.whl"
    ),
    "an extra that pulls another project": lambda m: _with_field(
        m, b"Provides-Extra: fast\nRequires-Dist: planted; extra == 'fast'"
    ),
    "a Dynamic field": lambda m: _with_field(m, b"Dynamic: Requires-Dist"),
    "a continuation line": lambda m: m.replace(b"Requires-Python: >=3.10\n", b"Requires-Python: >=3.10\n ,<4\n"),
    "an encoded-word Name": lambda m: m.replace(b"Name: neurobrix\n", b"Name: =?utf-8?q?neurobrix?=\n"),
    "an encoded-word Summary": lambda m: re.sub(rb"Summary: .*\n", b"Summary: =?utf-8?b?cGxhbnRlZA==?=\n", m, count=1),
}


@pytest.mark.parametrize("edit", list(METADATA_EDITS))
def test_metadata_header_tricks_in_a_wheel_are_refused(built: Built, tmp_path: Path, edit: str) -> None:
    path = f"{built.dist_info}/METADATA"
    members = wheel_members(built.wheel)
    changed = METADATA_EDITS[edit](_member(members, path).data)
    wheel = write_wheel(built, tmp_path, with_true_record(_replaced(members, path, changed)))
    assert {"G404", "G406"} & {code for code, where in _findings(wheel) if where == path}


PKG_INFO_EDITS = ["a requirement on a local path", "an extra that pulls another project", "an encoded-word Name"]


@pytest.mark.parametrize("edit", PKG_INFO_EDITS)
def test_metadata_header_tricks_in_an_sdists_pkg_info_are_refused(built: Built, tmp_path: Path, edit: str) -> None:
    """uv resolves an sdist by its PKG-INFO without building it (round 31): each edit would be its metadata there."""
    path = f"{built.root}/PKG-INFO"
    members = sdist_members(built.sdist)
    pkg_info = next(m for m in members if m.name == path)
    pkg_info.data = METADATA_EDITS[edit](pkg_info.data)
    sdist = write_sdist(tmp_path / built.sdist.name, raw_tar(members))
    assert {"G404", "G406"} & {code for code, where in _findings(sdist) if where == path}


def test_what_the_metadata_tricks_are_to_their_readers(built: Built) -> None:
    """The stakes of the class above: packaging (pip's reader) takes a ``file://`` requirement as one more dependency,
    and an encoded-word Name is the project to a reader that decodes RFC 2047 while Python's email parser, packaging
    and pip read the encoded word itself."""
    metadata = wheel_members(built.wheel)
    data = _member(metadata, f"{built.dist_info}/METADATA").data
    local = Metadata.from_email(METADATA_EDITS["a requirement on a local path"](data), validate=True)
    assert any(r.url == "file:///tmp/planted" for r in local.requires_dist or [])
    raw_name = BytesParser().parsebytes(METADATA_EDITS["an encoded-word Name"](data))["Name"]
    assert raw_name == "=?utf-8?q?neurobrix?="
    assert decode_header(raw_name) == [(b"neurobrix", "utf-8")]


@pytest.mark.parametrize("second", ["PKG-INFO", "metadata.json", "pydist.json", "METADATA.orig"])
def test_a_second_metadata_like_file_in_the_dist_info_is_refused(built: Built, tmp_path: Path, second: str) -> None:
    members = wheel_members(built.wheel)
    planted = f"{built.dist_info}/{second}"
    data = _member(members, f"{built.dist_info}/METADATA").data.replace(b"Version: 0.1.0", b"Version: 9.9.9")
    wheel = write_wheel(built, tmp_path, with_true_record([*members, RawMember(planted.encode(), data)]))
    refused_with(judge(wheel), "G107", planted, built.wheel.name)


# -- 3. entry points ---------------------------------------------------------------------------------------------------

ENTRY_POINT_ADDITIONS = {
    "console script pip": b"pip = neurobrix.cli:main\n",
    "console script python": b"python = neurobrix.cli:main\n",
    "console script pip3.11": b"pip3.11 = neurobrix.cli:main\n",
    "group gui_scripts": b"\n[gui_scripts]\nneurobrix-gui = neurobrix.cli:main\n",
    "group pytest11": b"\n[pytest11]\nneurobrix = neurobrix.cli\n",
    "group hatch": b"\n[hatch]\nneurobrix = neurobrix.cli\n",
}


def _entry_points_wheel(built: Built, folder: Path, added: bytes) -> Path:
    path = f"{built.dist_info}/entry_points.txt"
    members = wheel_members(built.wheel)
    return write_wheel(built, folder, with_true_record(_replaced(members, path, _member(members, path).data + added)))


@pytest.mark.parametrize("attack", list(ENTRY_POINT_ADDITIONS))
def test_entry_points_that_shadow_a_tool_or_plug_into_one_are_refused(
    built: Built, tmp_path: Path, attack: str
) -> None:
    wheel = _entry_points_wheel(built, tmp_path, ENTRY_POINT_ADDITIONS[attack])
    refused_with(judge(wheel), "G408", f"{built.dist_info}/entry_points.txt", built.wheel.name)


def test_a_pip_console_script_is_a_pip_launcher_once_installed(built: Built, tmp_path: Path) -> None:
    """The stake of the class above: ``installer`` writes a ``pip`` launcher that runs the project's code into the
    scripts folder, the one on PATH in an activated environment."""
    wheel = _entry_points_wheel(built, tmp_path / "w", ENTRY_POINT_ADDITIONS["console script pip"])
    site = install_wheel(wheel, tmp_path / "site")
    launcher = (site / "scripts" / "pip").read_text()
    assert "from neurobrix.cli import main" in launcher


# -- 4. RECORD rows and aliases of a tracked path ----------------------------------------------------------------------

CLI = "neurobrix/cli.py"
RECORD_EDITS: dict[str, tuple[Callable[[list[str]], list[str]], set[str]]] = {  # -> the codes, any of which refuses
    "a ./ row": (lambda rows: [f"./{r}" if r.startswith(f"{CLI},") else r for r in rows], {"G202", "G205"}),
    "a // row": (lambda rows: [r.replace(f"{CLI},", "neurobrix//cli.py,") for r in rows], {"G202", "G205"}),
    "a backslash row": (lambda rows: [r.replace(f"{CLI},", "neurobrix\\cli.py,") for r in rows], {"G206"}),
    "a row in another case": (lambda rows: [r.replace(f"{CLI},", "neurobrix/CLI.py,") for r in rows], {"G205"}),
    "a row twice": (lambda rows: [rows[0], *rows], {"G206"}),
    "a member left out": (lambda rows: [r for r in rows if not r.startswith(f"{CLI},")], {"G202"}),
    "an absolute row": (lambda rows: [*rows[:-1], "/usr/bin/pip,,", rows[-1]], {"G206"}),
    "a climbing row": (lambda rows: [*rows[:-1], "../../../bin/pip,,", rows[-1]], {"G206"}),
}


@pytest.mark.parametrize("edit", list(RECORD_EDITS))
def test_record_row_games_are_refused(built: Built, tmp_path: Path, edit: str) -> None:
    members = with_true_record(wheel_members(built.wheel))
    record = members[-1]
    spell, refusing = RECORD_EDITS[edit]
    rows = spell(record.data.decode().splitlines())
    members[-1] = RawMember(record.name, ("\n".join(rows) + "\n").encode())
    wheel = write_wheel(built, tmp_path, members)
    assert refusing & _codes(_findings(wheel))


ALIASES = {  # a member beside the tracked file it aliases on some file system -> what refuses it
    "another case (macOS, Windows)": ("neurobrix/CLI.py", "G305"),
    "a long s, upper-cased to S by NTFS": ("neurobrix/\u017ftore.py", "G305"),
    "a Kelvin sign, K once in NFC": ("neurobrix/ops/pic\u212a.py", "G310"),
    "NFD (macOS)": (unicodedata.normalize("NFD", "neurobrix/caf\u00e9.py"), "G310"),
}


@pytest.mark.parametrize("alias", list(ALIASES))
def test_member_names_that_alias_a_tracked_path_are_refused(built: Built, tmp_path: Path, alias: str) -> None:
    name, code = ALIASES[alias]
    members = wheel_members(built.wheel)
    planted = RawMember(name.encode(), _member(members, CLI).data, flags=0x0800)  # the UTF-8 flag
    wheel = write_wheel(built, tmp_path, with_true_record([*members, planted]))
    refused_with(judge(wheel), code, name, built.wheel.name)


# -- 5. zip structure --------------------------------------------------------------------------------------------------


def _zip_edit(members: Members, edit: str) -> tuple[Members, dict[str, bytes]]:
    cli = _member(members, CLI)
    around: dict[str, bytes] = {}
    if edit == "a local name unlike the directory's":
        cli.local_name = b"neurobrix/clj.py"
    elif edit == "a data descriptor":
        cli.flags = 0x0008
    elif edit == "a zip64 extra record":
        cli.extra = struct.pack("<HHQ", 0x0001, 8, len(cli.data))
    elif edit == "a folder entry holding data":
        members.insert(0, RawMember(b"neurobrix/", b"print('planted')\n", mode=stat.S_IFDIR | 0o755))
    elif edit == "a script before the archive":
        around["before"] = b"#!/bin/sh\necho planted\nexit 0\n"
    elif edit == "an archive comment":
        around["comment"] = b"planted"
    elif edit == "an entry comment":
        cli.comment = b"planted"
    elif edit == "two entries of one name":
        members.insert(-1, RawMember(CLI.encode(), b"print('planted')\n"))
    return members, around


ZIP_EDITS = {
    "a local name unlike the directory's": "G312",
    "a data descriptor": "G313",
    "a zip64 extra record": "G313",
    "a folder entry holding data": "G304",
    "a script before the archive": "G311",
    "an archive comment": "G311",
    "an entry comment": "G311",
    "two entries of one name": "G305",
}


@pytest.mark.parametrize("edit", list(ZIP_EDITS))
def test_zip_structure_games_are_refused(built: Built, tmp_path: Path, edit: str) -> None:
    members, around = _zip_edit(with_true_record(wheel_members(built.wheel)), edit)
    wheel = write_wheel(built, tmp_path, members, **around)
    assert ZIP_EDITS[edit] in _codes(_findings(wheel))


def test_a_local_name_unlike_the_directorys_is_another_member_to_a_streaming_reader(
    built: Built, tmp_path: Path
) -> None:
    """The stake of the first zip class: zipfile (pip, ``installer``) refuses the wheel, while a reader that streams the
    local headers (uv installing from a URL) reads another member there."""
    members, _ = _zip_edit(with_true_record(wheel_members(built.wheel)), "a local name unlike the directory's")
    wheel = write_wheel(built, tmp_path, members)
    with zipfile.ZipFile(wheel) as opened, pytest.raises(zipfile.BadZipFile, match="differ"):
        opened.read(CLI)
    data = wheel.read_bytes()
    at = data.index(b"neurobrix/clj.py")
    assert data[at - 30 : at - 26] == b"PK\x03\x04"  # a local header names it


# -- 6. the sdist ------------------------------------------------------------------------------------------------------


def _sdist_edit(built: Built, edit: str) -> list[RawTarMember]:
    root = built.root
    members = sdist_members(built.sdist)
    by_name = {m.name: m for m in members}
    cli, pkg_info, pyproject = by_name[f"{root}/{CLI}"], by_name[f"{root}/PKG-INFO"], by_name[f"{root}/pyproject.toml"]
    if edit == "PKG-INFO of another version":
        pkg_info.data = pkg_info.data.replace(b"Version: 0.1.0", b"Version: 0.1.1")
    elif edit == "another build backend":
        pyproject.data = pyproject.data.replace(b'"hatchling.build"', b'"setuptools.build_meta"')
    elif edit in ("setup.py", "hatch_build.py"):
        members.append(RawTarMember(f"{root}/{edit}", b"import os\n"))
    elif edit == "a symbolic link":
        members.append(RawTarMember(f"{root}/neurobrix/planted.py", type=tarfile.SYMTYPE, linkname="cli.py"))
    elif edit == "a hard link":
        members.append(RawTarMember(f"{root}/neurobrix/planted.py", type=tarfile.LNKTYPE, linkname=cli.name))
    elif edit == "a pax path":
        cli.pax = {"path": f"{root}/neurobrix/planted.py"}
    elif edit == "a GNU long name":
        cli.gnu_long_name = f"{root}/neurobrix/planted.py"
    elif edit == "a name not in NFC":
        members.append(RawTarMember(unicodedata.normalize("NFD", f"{root}/neurobrix/caf\u00e9.py"), b"x = 1\n"))
    elif edit == "a __pycache__ file":
        members.append(RawTarMember(f"{root}/neurobrix/__pycache__/cli.cpython-311.pyc", bytes(16)))
    elif edit == "a ./ prefix":
        for m in members:
            m.name = f"./{m.name}"
    return members


SDIST_EDITS = {  # -> a code that refuses it
    "PKG-INFO of another version": "G601",
    "another build backend": "G509",
    "setup.py": "G509",
    "hatch_build.py": "G509",
    "a symbolic link": "G304",
    "a hard link": "G304",
    "a pax path": "G313",
    "a GNU long name": "G313",
    "a name not in NFC": "G310",
    "a __pycache__ file": "G509",
    "a ./ prefix": "G310",
}


@pytest.mark.parametrize("edit", list(SDIST_EDITS))
def test_sdist_games_are_refused(built: Built, tmp_path: Path, edit: str) -> None:
    sdist = write_sdist(tmp_path / built.sdist.name, raw_tar(_sdist_edit(built, edit)))
    assert SDIST_EDITS[edit] in _codes(_findings(sdist))


def test_the_unchanged_dists_pass_as_written_here(built: Built, tmp_path: Path) -> None:
    """The control: the project's wheel and sdist, written back by this file's builders unchanged, pass, so each
    refusal above is the edit's."""
    wheel = write_wheel(built, tmp_path / "w", with_true_record(wheel_members(built.wheel)))
    sdist = write_sdist(tmp_path / built.sdist.name, raw_tar(sdist_members(built.sdist)))
    for dist in (wheel, sdist):
        report = judge(dist)
        assert report.passed, [(f.code, f.path, f.message) for f in report.findings]
