"""The twenty-ninth round against the release gate: what readers split, decode or resolve otherwise than the gate.

Each class below was built as an attacker would (the project's own wheel or sdist, bytes changed), read by the tool
that installs or uploads it (pip 23.2's and ``installer``'s own RECORD readers, Python's email parser and
importlib.metadata's entry-point reader, zipfile, tarfile), and judged by the gate. No dist the gate passes was
found that one of them reads otherwise; each attack is held here by the code that refuses it, so that the test
fails if the gate starts passing it:

1. RECORD read line-wise: pip (``csv.reader(text.splitlines())``, its install and its uninstall) and ``installer``
   (``parse_record_file(text.splitlines())``) split RECORD at every line boundary ``str.splitlines`` knows (a lone CR,
   VT, FF, the file, group and record separators, NEL, U+2028, U+2029), the gate reads it as CSV over the whole text
   (the csv module ends a row at CR or LF only). A row ended by any of those is still the true row to pip and
   installer, and a row no gate reading can pass: the field count (G206) or the rows written back as a RECORD writer
   writes them (G206). A byte order mark opens the first path to both (G205, G202); a member whose name holds U+2028,
   which the csv module writes unquoted, is two rows to pip, and its name is refused (G107, G310).
2. METADATA and entry_points.txt through their parsers: a folded header, a second ``Name``, a Latin-1 byte, which
   the email parser reads as a project named neurobrix (G404); entry points behind a byte order mark, which
   importlib.metadata (pip's and installer's launcher source) reads as no group at all (G408).
3. Windows drive letters and UNC names in a wheel (G301).
4. zip64 extents: a member written by zipfile with ``force_zip64`` (0xFFFFFFFF sizes in its local header, the true
   ones in a zip64 extra record, a central header without one), which zipfile installs as the project's (G313).
5. tar: a pax ``hdrcharset`` record, which tarfile applies to the names and owners it decodes (G313), and members that
   are no regular file (hard and symbolic links to a tracked file, a FIFO, devices: G304).
"""

from __future__ import annotations

import copy
import csv
import email
import gzip
import tarfile
import zipfile
from pathlib import Path

import pytest
from gate_fixtures import Built, RawMember, RawTarMember, raw_tar, sdist_members, wheel_members, with_true_record
from installer.records import parse_record_file
from pip._internal.metadata import FilesystemWheel, get_wheel_distribution
from test_gate_hostile import built, judge, member, refused_with, write_wheel

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the module's built wheel and sdist, shared with the hostile corpus

ROW = "neurobrix/cli.py,"  # the row whose line end is changed


def _record(built: Built) -> str:
    return f"{built.dist_info}/RECORD"


def _pip_paths(wheel: Path) -> list[str]:
    """The paths of RECORD as pip reads them (its uninstall follows them)."""
    dist = get_wheel_distribution(FilesystemWheel(str(wheel)), "neurobrix")
    return list(dist.iter_declared_entries() or [])


def _installer_rows(text: str) -> list[tuple[str, str, str]]:
    """RECORD as installer reads it from a wheel (``WheelFile.get_contents``: splitlines, then csv)."""
    return list(parse_record_file(text.splitlines()))


# 1. RECORD: line-wise to pip and installer, CSV to the gate

SEPARATORS = {
    "a lone CR": "\r",
    "a vertical tab": "\x0b",
    "a form feed": "\x0c",
    "a file separator": "\x1c",
    "a record separator": "\x1e",
    "NEL": "\x85",
    "U+2028": "\u2028",
    "U+2029": "\u2029",
}


@pytest.mark.parametrize("separator", list(SEPARATORS))
def test_a_record_row_ended_by_a_line_boundary_only_splitlines_knows_is_refused(
    built: Built, tmp_path: Path, separator: str
) -> None:
    members = wheel_members(built.wheel)
    record = member(members, _record(built))
    honest = record.data.decode()
    at = honest.index("\n", honest.index(ROW))
    record.data = (honest[:at] + SEPARATORS[separator] + honest[at + 1 :]).encode()
    wheel = write_wheel(built, tmp_path, members)
    # pip and installer read the true rows, every one: nothing they read is damaged
    assert _pip_paths(wheel) == [row[0] for row in csv.reader(honest.splitlines())]
    assert _installer_rows(record.data.decode()) == _installer_rows(honest)
    finding = refused_with(judge(wheel), "G206", _record(built))
    assert "line" in finding.message


def test_a_record_opened_by_a_byte_order_mark_is_refused(built: Built, tmp_path: Path) -> None:
    members = wheel_members(built.wheel)
    record = member(members, _record(built))
    first = record.data.decode().split(",", 1)[0]
    record.data = b"\xef\xbb\xbf" + record.data
    wheel = write_wheel(built, tmp_path, members)
    # pip and installer decode RECORD as UTF-8, not UTF-8-SIG: the first row names another file
    assert _pip_paths(wheel)[0] == "\ufeff" + first
    assert _installer_rows(record.data.decode())[0][0] == "\ufeff" + first
    report = judge(wheel)
    refused_with(report, "G205", "\ufeff" + first)
    refused_with(report, "G202", first)


def test_a_member_name_holding_a_line_separator_is_two_rows_to_pip_and_refused(built: Built, tmp_path: Path) -> None:
    name = "neurobrix/ops/a\u2028neurobrix/ops/b.py"
    members = with_true_record([*wheel_members(built.wheel), RawMember(name.encode(), b"x = 1\n", flags=0x800)])
    text = member(members, _record(built)).data.decode()
    assert f"\n{name}," in text  # the csv module writes it unquoted
    wheel = write_wheel(built, tmp_path, members)
    paths = _pip_paths(wheel)
    assert "neurobrix/ops/a" in paths and "neurobrix/ops/b.py" in paths and name not in paths
    report = judge(wheel)
    refused_with(report, "G107", name)
    assert "line separator" in refused_with(report, "G303", name).message


# 2. METADATA and entry_points.txt through their parsers

METADATA_EDITS = {
    "a folded Summary": lambda text: text.replace(b"\nSummary: ", b"\nSummary:\n ", 1),
    "a second Name": lambda text: text.replace(b"\nVersion: ", b"\nName: neurobrix-tools\nVersion: ", 1),
    "a Latin-1 byte": lambda text: text.replace(b"\nSummary: ", b"\nSummary: \xe9", 1),
}


@pytest.mark.parametrize("edit", list(METADATA_EDITS))
def test_metadata_the_email_parser_reads_as_the_project_is_refused(built: Built, tmp_path: Path, edit: str) -> None:
    path = f"{built.dist_info}/METADATA"
    members = wheel_members(built.wheel)
    metadata = member(members, path)
    metadata.data = METADATA_EDITS[edit](metadata.data)
    parsed = email.message_from_bytes(metadata.data)
    assert parsed["Name"] == "neurobrix" and parsed["Version"] == built.version  # the first Name wins
    refused_with(judge(write_wheel(built, tmp_path, with_true_record(members))), "G404", path)


def _pip_scripts(wheel: Path) -> list[str]:
    """The console scripts pip writes launchers for."""
    dist = get_wheel_distribution(FilesystemWheel(str(wheel)), "neurobrix")
    return [e.name for e in dist.iter_entry_points() if e.group == "console_scripts"]


def test_entry_points_behind_a_byte_order_mark_are_refused(built: Built, tmp_path: Path) -> None:
    path = f"{built.dist_info}/entry_points.txt"
    members = wheel_members(built.wheel)
    entry_points = member(members, path)
    entry_points.data = b"\xef\xbb\xbf" + entry_points.data
    wheel = write_wheel(built, tmp_path, with_true_record(members))
    # importlib.metadata, which pip reads launchers through, finds no group behind the mark: no `neurobrix` command
    assert _pip_scripts(built.wheel) == ["neurobrix"] and _pip_scripts(wheel) == []
    refused_with(judge(wheel), "G408", path)


# 3. Windows drive letters and UNC names


@pytest.mark.parametrize("name", ["C:/neurobrix/evil.py", "C:neurobrix/evil.py", "//server/share/neurobrix/evil.py"])
def test_a_wheel_member_named_by_drive_or_share_is_refused(built: Built, tmp_path: Path, name: str) -> None:
    members = with_true_record([*wheel_members(built.wheel), RawMember(name.encode(), b"x = 1\n")])
    refused_with(judge(write_wheel(built, tmp_path, members)), "G301", name)


# 4. zip64 extents


def test_a_member_with_zip64_extents_zipfile_installs_is_refused(built: Built, tmp_path: Path) -> None:
    target = "neurobrix/__init__.py"
    out = tmp_path / built.wheel.name
    with zipfile.ZipFile(built.wheel) as original:
        members = [(copy.copy(info), original.read(info)) for info in original.infolist()]
    with zipfile.ZipFile(out, "w") as written:
        for info, data in members:
            with written.open(info, "w", force_zip64=info.filename == target) as stream:
                stream.write(data)
    with zipfile.ZipFile(out) as copied:
        offset = copied.getinfo(target).header_offset
        assert copied.read(target) == dict((i.filename, d) for i, d in members)[target]  # zipfile installs it
    assert out.read_bytes()[offset + 18 : offset + 26] == b"\xff" * 8  # local sizes: the zip64 record's
    refused_with(judge(out), "G313", target)


# 5. tar


def _sdist_with(built: Built, tmp_path: Path, members: list[RawTarMember]) -> Path:
    path = tmp_path / built.sdist.name
    path.write_bytes(gzip.compress(raw_tar(members), mtime=0))
    return path


def test_a_pax_hdrcharset_record_is_refused(built: Built, tmp_path: Path) -> None:
    members = sdist_members(built.sdist)
    first = members[0]
    first.pax = {"hdrcharset": "BINARY"}
    sdist = _sdist_with(built, tmp_path, members)
    with tarfile.open(sdist) as tar:
        assert tar.getnames()[0] == first.name  # tarfile reads the header and applies the record
    refused_with(judge(sdist), "G313", "././@PaxHeader")


@pytest.mark.parametrize(
    "kind", [tarfile.LNKTYPE, tarfile.SYMTYPE, tarfile.FIFOTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE], ids=repr
)
def test_an_sdist_member_that_is_no_regular_file_is_refused(built: Built, tmp_path: Path, kind: bytes) -> None:
    members = sdist_members(built.sdist)
    top = members[0].name.split("/", 1)[0]
    target = f"{top}/neurobrix/__init__.py"
    name = f"{top}/neurobrix/ops/extra.py"
    link = target if kind == tarfile.LNKTYPE else "../__init__.py" if kind == tarfile.SYMTYPE else ""
    members.append(RawTarMember(name, type=kind, linkname=link))
    refused_with(judge(_sdist_with(built, tmp_path, members)), "G304", name)
