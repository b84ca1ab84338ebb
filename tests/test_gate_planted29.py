"""Mutation round on the gate's newer checks (2026-12-05): 71 bugs planted one at a time in the code rounds 15 to 28
added to gate/ and the mutation rounds of 2026-12-03 and 2026-12-04 (tests/test_gate_units.py) did not reach, each run
against the tests that exercise it (tests/test_gate_units.py, the round's own file, the hostile cases of its class).
C caught, E survived and equivalent, S+ survived and now fails a case below (each case failed with its bug, passes
without it).

zipstrict  Z1 old Unix record's shortest 7 C | Z2 every record of a field judged C | Z3 a refused record also named
  twice E (one more message, the same refusal) | Z4 a 5-byte timestamp's time only when flagged C | Z5 the timestamp
  read signed S+ | Z6 the old Unix record's access time read C | Z7 NTFS access time read C | Z8 4 s allowed S+ | Z9
  UTC+14:15 allowed S+ | Z10 whole-hour zones C | Z11 the last moment's clamp dropped S+ | Z12 the first's dropped C |
  Z13 the local header's records not compared S+ | Z14 NTFS skipped C | Z15 seconds not doubled C | Z16 times unread
  where the headers' records differ in length C | Z17 an 8-byte old Unix record's time unread S+ | Z18 month's high bit
  C | D1-D7 month 13, day 31 in any month, hour 24, minute 60, second 60, leap years, day's high bit C (7) | V1 version
  needed's high byte's low bit S+ | V2 made by 6.4 S+ | V3 speed hint 0x0004 S+ | V4 NTFS's 4th reserved byte S+ | V5
  reserved bytes unread C
tarstrict  T1 a .5 fraction not rounded up S+ | T2 any second more C | T3 0 refused C | T4 ctime passed C | T5 the pax
  block's prefix and padding unread E (the prefix is the header's name, refused; the padding by every header) | T6
  device numbers on a folder C | T7 the ustar time unjudged under a non-root uid E (G316 refuses it) | T8 no digits
  before the point E (the value's pattern requires them)
archive    A1 the tar test on small wheels only C | A2 the zip test on a buffer C | A3 BadZipFile passed C | A4 end one
  byte short C | A5 a seek to -1 passed E (zipfile reads a clamped buffer and a failed seek alike) | A6 the tar test
  skipped on PK C | A7 a partial zero block not the tar's C | A8 every cut stream a whole tar S+ | A9 the partial block
  parsed C | A10 XFL 6 S+ | A11 OS 14 S+ | A12 a file's group read unread S+ | A13 a folder's enter bits unread S+ |
  A14 others' bits unread C | A15 the tar judged one byte short S+
sdist      S1 top-level files only C | S2 .py files only C | S3 dot files shipped C | S4 rebuilt-only folders unread E
  (the build writes no folder entry)
repository P1 untracked top-level files linked E (only tracked tops are listed) | P2 hatch* tops listed E (a file
  must be tracked to be linked)
names      N1 COM³/LPT³ C | N2 no upcase C | N3 LPT with a superscript C
metadata   M1 WHEEL's trailing line ends C | M2 CR LF entry points C | M3 groups joined without a blank line E (one
  group) | M4 entry points compared stripped S+
wheel      W1 a leading zero only from 3 characters S+ | W2 RECORD's trailing line ends S+ | W3 the last row's order
  unread E (equal sets with equal prefixes are equal) | W4 the layout unread after any finding E (refused already)
checker    K1 twine waited on for metadata refused by size C
"""

from __future__ import annotations

import base64
import calendar
import gzip
import hashlib
import io
import stat
import struct
import tarfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO
from gate_fixtures import RawMember, raw_zip

from gate import tarstrict, zipstrict
from gate.archive import SdistArchive, WheelArchive
from gate.checks import Check, GateError, Limits
from gate.metadata import check_entry_points, entry_points_text
from gate.repository import load_repository
from gate.wheel import _check_record

DOS_2026 = calendar.timegm((2026, 1, 1, 0, 0, 0))  # the MS-DOS time raw_zip writes (date 0x5C21, time 0), as UTC


def with_dos_time(data: bytes, mtime: int, mdate: int) -> bytes:
    """The one-member zip ``data`` with its MS-DOS time and date set to ``mtime`` and ``mdate`` in both headers."""
    out = bytearray(data)
    struct.pack_into("<HH", out, 10, mtime, mdate)
    struct.pack_into("<HH", out, struct.unpack_from("<L", out, len(out) - 6)[0] + 12, mtime, mdate)
    return bytes(out)


def zip_problems(extra: bytes, mtime: int = 0, mdate: int = 0x5C21) -> list[tuple[Check, bool]]:
    """(check, whether it names the MS-DOS time) of each problem the gate's zip reader finds in a one-member zip
    whose two headers hold ``extra``."""
    data = with_dos_time(raw_zip([RawMember(b"a.py", b"x", extra=extra)]), mtime, mdate)
    return [(p.check, "MS-DOS time" in p.message) for p in zipstrict.parse(data, 10)[1]]


def timestamp(mtime: int) -> bytes:
    """An Info-ZIP extended timestamp holding a modification time alone (flags 1), the 32 bits as given."""
    return struct.pack("<HHBL", 0x5455, 5, 1, mtime)


def ntfs(seconds: float) -> bytes:
    """An NTFS times record whose three times are ``seconds`` (since 1970, UTC)."""
    tick = round((seconds + zipstrict.NTFS_EPOCH) * 10**7)
    return struct.pack("<HHLHH3Q", 0x000A, 32, 0, 1, 24, tick, tick, tick)


# -- zip: an extra record's modification time against the MS-DOS time (round 20) --------------------------------------


@pytest.mark.parametrize("bits", [0x8000_0000, 0xFFFF_FFFF], ids=["2038-01-19", "2106-02-07"])
def test_an_extended_timestamp_is_read_unsigned(bits: int) -> None:
    """The zip crate and 7-Zip read an extended timestamp's 32 bits unsigned: 0x80000000 is 2038, not 1901, and is
    no moment an MS-DOS time of 1980-01-01 00:00:00 was clamped from (planted: read signed, so the record read as a
    time before 1980 and passed as the MS-DOS time's clamped first moment)."""
    assert zip_problems(timestamp(bits), mtime=0, mdate=0x0021) == [(Check.G312, True)]


@pytest.mark.parametrize("off", [3, -3, 60])
def test_a_record_seconds_off_the_ms_dos_time_is_refused(off: int) -> None:
    """Writers round the MS-DOS time's odd second up (Info-ZIP) or down (zipfile): a record within 2 s is one moment,
    3 s off is two (planted: 4 s allowed)."""
    assert zip_problems(timestamp(DOS_2026 + off)) == [(Check.G312, True)]
    assert zip_problems(timestamp(DOS_2026 + (2 if off > 0 else -2))) == []


@pytest.mark.parametrize(
    ("zone", "refused"),
    [(14 * 3600, False), (14 * 3600 + 900, True), (-12 * 3600, False), (-12 * 3600 - 900, True)],
    ids=["UTC+14", "UTC+14:15", "UTC-12", "UTC-12:15"],
)
def test_the_time_zones_a_writer_can_be_in_end_at_utc_plus_14_and_minus_12(zone: int, refused: bool) -> None:
    """An MS-DOS time in a writer's local time and a record in UTC are one moment in UTC-12 to UTC+14; a quarter hour
    past either end is no time zone (planted: UTC+14:15 allowed)."""
    assert zip_problems(timestamp(DOS_2026 - zone)) == ([(Check.G312, True)] if refused else [])


def test_a_local_records_time_is_held_to_the_ms_dos_time_too() -> None:
    """An extended timestamp with no time flagged, its central form the flags byte alone and its local form 5 bytes:
    the two agree as Info-ZIP lays them out, and the zip crate, streaming the wheel, reads the local 4 bytes as the
    modification time whatever the flags (planted: only the central header's records compared with the MS-DOS
    time)."""
    central, local = struct.pack("<HHB", 0x5455, 1, 0), struct.pack("<HHBL", 0x5455, 5, 0, DOS_2026 + 86_400)
    data = raw_zip([RawMember(b"a.py", b"x", extra=central, local_extra=local)])
    assert [(p.check, "local header" in p.message) for p in zipstrict.parse(data, 10)[1]] == [(Check.G312, True)]
    honest = raw_zip(
        [RawMember(b"a.py", b"x", extra=central, local_extra=struct.pack("<HHBL", 0x5455, 5, 0, DOS_2026))]
    )
    assert zipstrict.parse(honest, 10)[1] == []


def test_an_old_unix_record_of_its_two_times_alone_is_held_to_the_ms_dos_time() -> None:
    """The old Unix record (0x5855) as `zip -X` writes it in both headers, 8 bytes: access and modification time,
    no owner; `unzip` applies its modification time where no extended timestamp is (planted: its time read only from
    the local form with an owner, longer than 8 bytes)."""
    record = struct.pack("<HH2L", 0x5855, 8, DOS_2026, DOS_2026 + 10 * 86_400)
    assert zip_problems(record) == [(Check.G312, True)]
    assert zip_problems(struct.pack("<HH2L", 0x5855, 8, DOS_2026 + 5, DOS_2026)) == []


def test_a_record_past_2107_under_the_ms_dos_times_last_moment_passes() -> None:
    """A file modified after 2107 has its MS-DOS time clamped to the last it names, 2107-12-31 23:59:58, and its NTFS
    record the true time (as a time before 1980 is clamped to 1980-01-01): one moment as writers write it (planted:
    the last moment's clamp dropped, so such a wheel was refused)."""
    last_time, last_date = 23 << 11 | 59 << 5 | 29, 127 << 9 | 12 << 5 | 31
    assert zip_problems(ntfs(calendar.timegm((2110, 6, 1, 0, 0, 0))), last_time, last_date) == []
    assert zip_problems(ntfs(calendar.timegm((2107, 1, 1, 0, 0, 0))), last_time, last_date) == [(Check.G312, True)]


# -- zip: modes distlib and `unzip` apply as they are (round 18) ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "mode", "refused"),
    [
        ("a.py", 0o604, True),  # its group cannot read it
        ("a.py", 0o640, True),  # others cannot
        ("a.py", 0o644, False),
        ("a/", 0o744, True),  # its group and others can list it, not enter it
        ("a/", 0o754, True),  # others cannot enter it
        ("a/", 0o755, False),
    ],
    ids=["file 604", "file 640", "file 644", "folder 744", "folder 754", "folder 755"],
)
def test_every_bit_group_and_others_need_of_a_wheel_member_is_judged(
    tmp_path: Path, name: str, mode: int, refused: bool
) -> None:
    """distlib's Wheel.install and `unzip` apply a member's permission bits as written: a file its group or others
    cannot read, a folder they cannot list or enter, is root's alone once installed (planted: only others' read bit
    judged on a file; a folder's enter bits unread)."""
    kind = stat.S_IFDIR if name.endswith("/") else stat.S_IFREG
    member = RawMember(name.encode(), b"" if kind == stat.S_IFDIR else b"x", method=0, mode=kind | mode)
    wheel = tmp_path / "x.whl"
    wheel.write_bytes(raw_zip([member, RawMember(b"a/b.py", b"x")] if kind == stat.S_IFDIR else [member]))
    found = [(f.code, "group or others" in f.message) for f in WheelArchive(wheel, Limits()).findings]
    assert found == ([("G315", True)] if refused else [])


# -- sdist: a gzip stream cut short (round 23's zip test, round 27) ----------------------------------------------------


def tar_to_its_end(names: tuple[str, ...] = ("x-1.0/a.py", "x-1.0/b.py")) -> bytes:
    """A tar of ``names`` that ends with its end-of-archive marker (two zero blocks), with no record padding after."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in names:
            info = tarfile.TarInfo(name)
            info.size, info.mode = 600, 0o644
            tar.addfile(info, io.BytesIO(b"x = 1\n" * 100))
    members = len(names) * (512 + 1024)
    return buf.getvalue()[: members + 1024]


def cut_gzip(data: bytes) -> bytes:
    """``data`` gzipped and flushed, with no last block and no CRC-32 and size trailer: a stream cut short."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    return packer.compress(data) + packer.flush(zlib.Z_SYNC_FLUSH)


def test_a_stream_cut_right_after_the_end_of_archive_marker_is_refused(tmp_path: Path) -> None:
    """The tar whole to its two zero blocks and no byte more (no record padding): tarfile (pip) reads every member,
    gzip fails on the stream; a refusal as for any cut after a whole tar (planted: the tar judged one byte short of
    what was inflated, so its end marker read as a lone zero block and the file answered "not judged")."""
    raw = cut_gzip(tar_to_its_end())
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        assert tar.getnames() == ["x-1.0/a.py", "x-1.0/b.py"]
    sdist = tmp_path / "x-1.0.tar.gz"
    sdist.write_bytes(raw)
    findings = SdistArchive(sdist, Limits()).findings
    assert [(f.code, "cut short" in f.message) for f in findings] == [("G312", True)]


def test_a_stream_cut_at_a_block_inside_the_tar_stays_unjudged(tmp_path: Path) -> None:
    """Cut at a block boundary before the end marker: tarfile fails on it too (EOFError), so every reader reads it
    one way, nowhere, and the gate cannot judge it (planted: every cut stream taken for a whole tar, refused G312)."""
    raw = cut_gzip(tar_to_its_end()[: 512 + 1024])
    with pytest.raises(EOFError), tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        tar.getnames()
    sdist = tmp_path / "x-1.0.tar.gz"
    sdist.write_bytes(raw)
    with pytest.raises(GateError, match="truncated"):
        SdistArchive(sdist, Limits())


# -- zip: header bytes the format reserves (round 17) -----------------------------------------------------------------


@pytest.mark.parametrize("reserved", [b"\0\0\0\x01", b"\x01\0\0\0"], ids=["last byte", "first byte"])
def test_each_of_an_ntfs_records_four_reserved_bytes_is_judged(reserved: bytes) -> None:
    """An NTFS times record opens with 4 reserved bytes every writer leaves 0 (planted: only the first 3 judged)."""
    record = bytearray(ntfs(DOS_2026))
    record[4:8] = reserved
    assert zip_problems(bytes(record)) == [(Check.G319, False)]


def with_versions(made_by: int, needed: int) -> bytes:
    """A one-member zip whose "version made by" and "version needed to extract" (in both headers) are as given."""
    out = bytearray(raw_zip([RawMember(b"a.py", b"x")]))
    central = struct.unpack_from("<L", out, len(out) - 6)[0]
    struct.pack_into("<H", out, 4, needed)
    struct.pack_into("<HH", out, central + 4, made_by, needed)
    return bytes(out)


@pytest.mark.parametrize(
    ("made_by", "needed", "refused"),
    [
        (0x0314, 0x0114, True),  # the high byte of version needed 1: neither 0 nor the host of version made by
        (0x0314, 0x0314, False),  # p7zip before 18.06: the host of version made by
        (0x0340, 0x0014, True),  # version made by 6.4, past the last specification
        (0x033F, 0x0014, False),  # 6.3, the last
    ],
    ids=["needed 0x0114", "needed 0x0314", "made by 6.4", "made by 6.3"],
)
def test_the_version_fields_reserved_values_are_judged_to_the_bit(made_by: int, needed: int, refused: bool) -> None:
    """zipfile reads version needed's high byte as `reserved` (writers write 0, p7zip the host byte), and no
    specification past 6.3 exists (planted: the high byte's lowest bit unread; the specification bound off by one)."""
    problems = [(p.check, "version" in p.message) for p in zipstrict.parse(with_versions(made_by, needed), 10)[1]]
    assert problems == ([(Check.G319, True)] if refused else [])


@pytest.mark.parametrize("flags", [0x0002, 0x0004, 0x0006], ids=hex)
def test_either_deflate_speed_hint_on_a_stored_member_is_judged(flags: int) -> None:
    """Flags 0x0002 and 0x0004 are deflate's speed hints, undefined on a stored member (planted: only 0x0002 read)."""
    data = raw_zip([RawMember(b"a.py", b"x", method=0, flags=flags)])
    assert [(p.check, "speed hints" in p.message) for p in zipstrict.parse(data, 10)[1]] == [(Check.G319, True)]


# -- tar: a ustar time under a pax time (round 18) ---------------------------------------------------------------------


@pytest.mark.parametrize("mtime", [1_700_000_001.5, 1_700_000_000.5, 1_700_000_000.5000001, 1_700_000_000.25])
def test_the_ustar_time_tarfile_writes_under_a_fractional_pax_time_passes(mtime: float) -> None:
    """tarfile writes a fractional time as a pax record and its rounding (round(): half to even) in the header's own
    field; every such pair is one moment as a writer writes it (planted: a fraction of exactly .5 not rounded up)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("x-1.0/a.py")
        info.size, info.mtime = 6, mtime
        tar.addfile(info, io.BytesIO(b"x = 1\n"))
    entries, problems = tarstrict.parse(buf.getvalue(), 10)
    assert problems == [] and [e.raw_name for e in entries] == [b"x-1.0/a.py"]


@pytest.mark.parametrize(
    ("at", "value", "refused"),
    [(8, 6, True), (8, 1, True), (9, 14, True), (9, 254, True), (8, 4, False), (9, 13, False), (9, 255, False)],
    ids=["XFL 6", "XFL 1", "OS 14", "OS 254", "XFL 4", "OS 13", "OS 255"],
)
def test_gzip_header_bytes_rfc_1952_leaves_undefined_are_judged_at_their_bounds(
    tmp_path: Path, at: int, value: int, refused: bool
) -> None:
    """Extra flags 2, 4 or none, an operating system of 0-13 or 255: any other byte is read by no unpacker (planted:
    XFL 6 allowed, OS 14 allowed)."""
    raw = bytearray(gzip.compress(tar_to_its_end(), mtime=0))
    raw[at] = value
    sdist = tmp_path / "x-1.0.tar.gz"
    sdist.write_bytes(raw)
    assert [f.code for f in SdistArchive(sdist, Limits()).findings] == (["G319"] if refused else [])


# -- a lone wheel's metadata files in the backend's bytes (round 15) ---------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "refused"),
    [
        (lambda text: text + b"\n", True),
        (lambda text: b"\n" + text, True),
        (lambda text: text.rstrip(b"\n") + b" \n", True),
        (lambda text: text, False),
    ],
    ids=["a blank line after", "a blank line before", "a space at the end", "the backend's bytes"],
)
def test_entry_points_with_white_space_at_either_end_are_refused(
    tmp_path: Path, edit: Callable[[bytes], bytes], refused: bool
) -> None:
    """Blank lines or spaces around entry_points.txt's entries are skipped by every reader: bytes a wheel judged
    without its sdist carries unjudged (planted: the file compared with its ends stripped)."""
    declared = load_repository(REPO).declared
    path = f"{declared.dist_info}/entry_points.txt"
    wheel = tmp_path / "x.whl"
    wheel.write_bytes(raw_zip([RawMember(path.encode(), edit(entry_points_text(declared.entry_points)))]))
    archive = WheelArchive(wheel, Limits())
    check_entry_points(archive, path, declared)
    assert [f.code for f in archive.findings] == (["G408"] if refused else [])


@pytest.mark.parametrize(("size", "refused"), [("01", True), ("001", True), ("1", False)])
def test_a_record_size_of_two_characters_with_a_leading_zero_is_refused(
    tmp_path: Path, size: str, refused: bool
) -> None:
    """distlib's Wheel.install compares a RECORD size as text with the member's and refuses '01' for 1 byte, where
    pip, installer and uv read 1 (planted: a leading zero judged only in sizes of three characters or more)."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"x").digest()).rstrip(b"=").decode()
    rows = f"a.py,sha256={digest},{size}\nx-1.0.dist-info/RECORD,,\n".encode()
    wheel = tmp_path / "x.whl"
    wheel.write_bytes(raw_zip([RawMember(b"a.py", b"x"), RawMember(b"x-1.0.dist-info/RECORD", rows)]))
    archive = WheelArchive(wheel, Limits())
    _check_record(archive, "x-1.0.dist-info")
    found = [(f.code, "leading zero" in f.message) for f in archive.findings]
    assert (("G206", True) in found) == refused and (refused or found == [])


@pytest.mark.parametrize("end", [b"\n", b""], ids=["a line feed", "none"])
def test_a_record_without_a_line_end_after_its_last_row_is_refused(tmp_path: Path, end: bytes) -> None:
    """A RECORD writer ends every row with a line feed; none after the last is a choice every reader skips, a bit a
    wheel judged alone carried unjudged (planted: the text compared with its trailing line ends stripped)."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"x").digest()).rstrip(b"=").decode()
    rows = f"a.py,sha256={digest},1\nx-1.0.dist-info/RECORD,,".encode() + end
    wheel = tmp_path / "x.whl"
    wheel.write_bytes(raw_zip([RawMember(b"a.py", b"x"), RawMember(b"x-1.0.dist-info/RECORD", rows)]))
    archive = WheelArchive(wheel, Limits())
    _check_record(archive, "x-1.0.dist-info")
    assert [f.code for f in archive.findings] == ([] if end else ["G206"])
