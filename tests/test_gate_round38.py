"""The thirty-eighth round against the release gate: attack classes no earlier round's test named, each dist built from
the project's own wheel or sdist and read by the code that unpacks or installs it (Python's tarfile, which pip 23.2
unpacks sdists with, GNU tar 1.34, zipfile, Python's email parser and packaging, pip 23.2's wheel-version check), then
judged. No dist the gate passes was found and nothing in ``gate/`` changed; each class is held here by the check that
refuses it (each test fails with that check weakened, as the round's notes in docs/gate-rounds.md say):

1. a tar member that is no file but declares a size, whose "content" is a whole tar member: an altered table under the
   table's own name. tarfile skips the data of regular files only, so it reads those bytes as the next header and lists
   the altered table after the true one (its extraction writes it over the true one); GNU tar does the same after a
   folder (type ``5``) but skips the bytes after an old-style folder (a regular-file header whose name ends in ``/``,
   which tarfile takes for a folder): two readings of one sdist (G312 for a folder, symbolic or hard link declaring
   content; G310 for the old-style folder, which the gate reads as a file named with an empty component);
2. a pax header whose records are followed by bytes that are no record (``size=99\\n``): tarfile applies the records
   before them and ignores the rest (G312);
3. a zip central directory that lists one local entry twice, under its own name or another: two members sharing bytes,
   which zipfile lists as two, reading the table twice under its own name and refusing the other name only when it is
   read (G311, members sharing bytes; G312 where the local header names another member than the directory);
4. core metadata one reader takes otherwise than another: a second ``Version`` (the email parser, so pip, reads the
   first; packaging takes neither), a byte order mark before ``Metadata-Version`` (the email parser then finds no
   ``Metadata-Version``), and ``Requires-Dist`` markers that drop a dependency everywhere or add one on Linux (G404,
   G406), in the wheel's METADATA and the sdist's PKG-INFO;
5. WHEEL's ``Wheel-Version`` 1.9 (pip installs it with a warning) or 2.0 (pip refuses it) (G407).
"""

from __future__ import annotations

import gzip
import shutil
import struct
import subprocess
import tarfile
import warnings
import zipfile
from collections.abc import Callable
from email.parser import BytesParser
from pathlib import Path

import pytest
from gate_fixtures import (
    Built,
    RawMember,
    RawTarMember,
    raw_tar,
    raw_zip,
    same_size_change,
    sdist_members,
    wheel_members,
    with_true_record,
)
from packaging.metadata import Metadata, parse_email
from packaging.requirements import Requirement
from test_gate_hostile import TABLE, built, judge, refused_with, write_wheel

__all__ = ["built"]  # the hostile corpus's built wheel and sdist


def write_sdist(path: Path, tar: bytes) -> Path:
    """``tar`` gzipped at the fastest level (a valid sdist; level 9 took half a second each here)."""
    path.write_bytes(gzip.compress(tar, compresslevel=1, mtime=0))
    return path


def _table(built: Built) -> RawTarMember:
    return next(m for m in sdist_members(built.sdist) if m.name == f"{built.root}/tables/{TABLE.path}")


def _tar_member(member: RawTarMember) -> bytes:
    """One member's header and data blocks, as a tar holds them (no end-of-archive marker)."""
    whole = raw_tar([member])
    return whole[: 512 + -(-len(member.data) // 512) * 512]


# -- 1. a member that is no file, declaring content: a whole tar member hidden there ---------------------------------

HIDERS: dict[str, tuple[Callable[[str, bytes], RawTarMember], str, str]] = {
    # what carries the hidden member -> (the member, the finding, the path it names under the sdist's top folder)
    "a folder": (
        lambda root, data: RawTarMember(f"{root}/neurobrix", data, tarfile.DIRTYPE, mode=0o755),
        "G312",
        "neurobrix/",
    ),
    "an old-style folder": (
        lambda root, data: RawTarMember(f"{root}/neurobrix/", data, tarfile.AREGTYPE, mode=0o755),
        "G310",
        "neurobrix/",
    ),
    "a symbolic link": (
        lambda root, data: RawTarMember(f"{root}/neurobrix/link", data, tarfile.SYMTYPE, "cli.py", mode=0o777),
        "G312",
        "neurobrix/link",
    ),
    "a hard link": (
        lambda root, data: RawTarMember(f"{root}/neurobrix/link", data, tarfile.LNKTYPE, f"{root}/README.md"),
        "G312",
        "neurobrix/link",
    ),
}


_HIDING: dict[str, tuple[Path, bytes]] = {}


def _hiding_sdist(built: Built, folder: Path, hider: str) -> tuple[Path, bytes]:
    """The project's sdist with ``hider`` added last, declaring as its content an altered copy of a table; the sdist
    and the altered bytes (written once a session, into the first test's folder)."""
    if hider in _HIDING and _HIDING[hider][0].exists():
        return _HIDING[hider]
    table = _table(built)
    altered = same_size_change(table.data)
    make, _, _ = HIDERS[hider]
    carrier = make(built.root, _tar_member(RawTarMember(table.name, altered)))
    folder.mkdir(parents=True, exist_ok=True)
    sdist = write_sdist(folder / built.sdist.name, raw_tar([*sdist_members(built.sdist), carrier]))
    _HIDING[hider] = sdist, altered
    return sdist, altered


def _tarfile_reads(sdist: Path, name: str) -> list[bytes]:
    """Every copy of ``name`` that tarfile (pip's unpacker) reads, in order: the last is the one it leaves."""
    with tarfile.open(sdist) as tar:
        return [tar.extractfile(m).read() for m in tar.getmembers() if m.name == name]  # type: ignore[union-attr]


@pytest.mark.parametrize("hider", list(HIDERS))
def test_a_member_that_is_no_file_declaring_a_hidden_member_as_content_is_refused(
    built: Built, tmp_path: Path, hider: str
) -> None:
    sdist, altered = _hiding_sdist(built, tmp_path, hider)
    table = _table(built)
    # the stake: tarfile reads the declared content as the next member, the altered table, and unpacks it last
    copies = _tarfile_reads(sdist, table.name)
    assert copies == [table.data, altered]
    _, code, path = HIDERS[hider]
    refused_with(judge(sdist), code, f"{built.root}/{path}", built.sdist.name)


@pytest.mark.skipif(shutil.which("tar") is None, reason="GNU tar is not installed")
def test_gnu_tar_skips_what_an_old_style_folder_declares_and_tarfile_does_not(built: Built, tmp_path: Path) -> None:
    """Two readings of one sdist: tarfile unpacks the altered table hidden after an old-style folder, GNU tar does not
    see it (and after a folder of type 5, both read it)."""
    name = _table(built).name
    for hider, gnu_sees in (("an old-style folder", 1), ("a folder", 2)):
        sdist, _ = _hiding_sdist(built, tmp_path / hider.replace(" ", "-"), hider)
        listed = subprocess.run(["tar", "-tzf", str(sdist)], capture_output=True, text=True, check=True, timeout=30)
        assert listed.stdout.splitlines().count(name) == gnu_sees, hider
        assert len(_tarfile_reads(sdist, name)) == 2


# -- 2. a pax header with bytes after its records --------------------------------------------------------------------


def test_a_pax_header_with_bytes_after_its_records_is_refused(built: Built, tmp_path: Path) -> None:
    members = sdist_members(built.sdist)
    last = members[-1]
    members[-1] = RawTarMember(last.name, last.data, last.type, mode=last.mode, pax={"mtime": "0"})
    tar = bytearray(raw_tar(members))
    header = next(at for at in range(0, len(tar), 512) if tar[at : at + 15] == b"././@PaxHeader\0")
    record, junk = b"11 mtime=0\n", b"size=99\n"
    assert tar[header + 512 : header + 512 + len(record)] == record
    tar[header + 512 + len(record) : header + 512 + len(record) + len(junk)] = junk
    block = tar[header : header + 512]
    block[124:136] = b"%011o\0" % (len(record) + len(junk))
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    tar[header : header + 512] = block
    sdist = write_sdist(tmp_path / built.sdist.name, bytes(tar))
    with tarfile.open(sdist) as opened:  # tarfile applies the record and ignores what follows it
        read = opened.getmember(last.name)
        assert (read.mtime, read.size) == (0, len(last.data))
    finding = refused_with(judge(sdist), "G312", "././@PaxHeader", built.sdist.name)
    assert "malformed pax record" in finding.message


# -- 3. a central directory listing one local entry twice -------------------------------------------------------------


def _central_entries(data: bytes) -> tuple[list[bytes], int]:
    end = data.rfind(b"PK\x05\x06")
    offset = struct.unpack_from("<L", data, end + 16)[0]
    entries, at = [], offset
    while at < end:
        lengths = struct.unpack_from("<3H", data, at + 28)
        size = 46 + sum(lengths)
        entries.append(data[at : at + size])
        at += size
    return entries, offset


@pytest.mark.parametrize(
    ("second_name", "code", "said"),
    [
        (None, "G311", "overlaps the entry before it"),
        ("neurobrix/_tables/zz.yaml", "G312", "its local header names it"),
    ],
    ids=["its own name", "another name"],
)
def test_a_central_directory_listing_one_local_entry_twice_is_refused(
    built: Built, tmp_path: Path, second_name: str | None, code: str, said: str
) -> None:
    data = raw_zip(wheel_members(built.wheel))
    entries, offset = _central_entries(data)
    table = next(e for e in entries if e[46 : 46 + struct.unpack_from("<H", e, 28)[0]] == TABLE.wheel_path.encode())
    twice = bytearray(table)
    if second_name is not None:
        old = struct.unpack_from("<H", twice, 28)[0]
        twice[46 : 46 + old] = second_name.encode()
        struct.pack_into("<H", twice, 28, len(second_name))
    central = b"".join(entries) + bytes(twice)
    count = len(entries) + 1
    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(
        data[:offset] + central + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, len(central), offset, 0)
    )
    with warnings.catch_warnings(), zipfile.ZipFile(wheel) as opened:
        warnings.simplefilter("ignore")  # "Duplicate name"
        infos = opened.infolist()
        assert len(infos) == count  # zipfile lists both entries: the second is read from the first's bytes
        first = next(i for i in infos if i.filename == TABLE.wheel_path)
        if second_name is None:
            assert opened.read(infos[-1]) == opened.read(first)
        else:  # refused only when read: the local header names the table
            with pytest.raises(zipfile.BadZipFile, match="differ"):
                opened.read(infos[-1])
    finding = refused_with(judge(wheel), code, second_name or TABLE.wheel_path, built.wheel.name)
    assert said in finding.message


# -- 4. core metadata read two ways -----------------------------------------------------------------------------------

TORCH = b"Requires-Dist: torch<2.15,>=2.11\n"
METADATA_EDITS: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "a second Version after the first": (
        lambda m: m.replace(b"\nVersion: 0.1.0\n", b"\nVersion: 0.1.0\nVersion: 9.9.9\n", 1),
        "G404",
    ),
    "a second Version before the first": (
        lambda m: m.replace(b"\nVersion: 0.1.0\n", b"\nVersion: 9.9.9\nVersion: 0.1.0\n", 1),
        "G404",
    ),
    "a byte order mark": (lambda m: b"\xef\xbb\xbf" + m, "G404"),
    "a marker that drops a dependency": (
        lambda m: m.replace(TORCH, TORCH[:-1] + b'; python_version < "3"\n', 1),
        "G406",
    ),
    "a marker that adds one on Linux": (
        lambda m: m.replace(TORCH, TORCH + b'Requires-Dist: planted; sys_platform == "linux"\n', 1),
        "G406",
    ),
}


def _edited(data: bytes, edit: str) -> bytes:
    changed = METADATA_EDITS[edit][0](data)
    assert changed != data, edit
    return changed


@pytest.mark.parametrize("edit", list(METADATA_EDITS))
def test_core_metadata_read_two_ways_is_refused_in_a_wheel(built: Built, tmp_path: Path, edit: str) -> None:
    path = f"{built.dist_info}/METADATA"
    members = wheel_members(built.wheel)
    members = [RawMember(m.name, _edited(m.data, edit)) if m.name == path.encode() else m for m in members]
    wheel = write_wheel(built, tmp_path, with_true_record(members))
    refused_with(judge(wheel), METADATA_EDITS[edit][1], path, built.wheel.name)


@pytest.mark.parametrize("edit", ["a second Version before the first", "a marker that drops a dependency"])
def test_core_metadata_read_two_ways_is_refused_in_an_sdist(built: Built, tmp_path: Path, edit: str) -> None:
    path = f"{built.root}/PKG-INFO"
    members = sdist_members(built.sdist)
    pkg_info = next(m for m in members if m.name == path)
    pkg_info.data = _edited(pkg_info.data, edit)
    sdist = write_sdist(tmp_path / built.sdist.name, raw_tar(members))
    refused_with(judge(sdist), METADATA_EDITS[edit][1], path, built.sdist.name)


def test_what_the_metadata_edits_are_to_their_readers(built: Built) -> None:
    """The stakes: the email parser (pip's reader) takes the first Version and, behind a byte order mark, no
    Metadata-Version at all; packaging refuses a second Version; the markers leave torch out of every install and put
    another project in every Linux one."""
    data = next(m.data for m in wheel_members(built.wheel) if m.name == f"{built.dist_info}/METADATA".encode())
    parsed = BytesParser().parsebytes(_edited(data, "a second Version before the first"))
    assert parsed.get_all("Version") == ["9.9.9", "0.1.0"] and parsed["Version"] == "9.9.9"
    _, unparsed = parse_email(_edited(data, "a second Version after the first"))
    assert unparsed["version"] == ["0.1.0", "9.9.9"]  # packaging takes neither
    assert BytesParser().parsebytes(_edited(data, "a byte order mark"))["Metadata-Version"] is None
    dropped = Metadata.from_email(_edited(data, "a marker that drops a dependency"), validate=False).requires_dist
    torch = next(r for r in dropped or [] if r.name == "torch")
    assert torch.marker is not None and not torch.marker.evaluate()
    added = Metadata.from_email(_edited(data, "a marker that adds one on Linux"), validate=False).requires_dist
    planted = next(r for r in added or [] if r.name == "planted")
    assert planted.marker is not None and planted.marker.evaluate({"sys_platform": "linux"})
    assert Requirement(str(planted)).name == "planted"


# -- 5. WHEEL's Wheel-Version ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.9", "2.0"])
def test_another_wheel_version_is_refused(built: Built, tmp_path: Path, version: str) -> None:
    from pip._internal.exceptions import UnsupportedWheel
    from pip._internal.utils.wheel import check_compatibility

    path = f"{built.dist_info}/WHEEL"
    members = wheel_members(built.wheel)
    said = next(m.data for m in members if m.name == path.encode())
    changed = said.replace(b"Wheel-Version: 1.0\n", f"Wheel-Version: {version}\n".encode())
    assert changed != said
    members = [RawMember(m.name, changed) if m.name == path.encode() else m for m in members]
    wheel = write_wheel(built, tmp_path, with_true_record(members))
    # the stake: pip installs 1.9 with a warning and refuses 2.0 (its check of the WHEEL file's version)
    parsed = tuple(int(part) for part in version.split("."))
    if parsed[0] > 1:
        with pytest.raises(UnsupportedWheel):
            check_compatibility(parsed, "neurobrix")
    else:
        check_compatibility(parsed, "neurobrix")
    refused_with(judge(wheel), "G407", path, built.wheel.name)
