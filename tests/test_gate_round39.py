"""Gate mutation round 39: bugs planted one at a time (tests/gate39_plants.py, run by tests/gate39_driver.py) in the
gate code no earlier mutation round had planted in: the strict zip reader (gate/zipstrict.py), the strict tar reader
(gate/tarstrict.py), archive.py's member modes, owners and MS-DOS attributes and the gzip header's file name, WHEEL's
tags in the file name and RECORD's layout. Each case below is the dist that a surviving plant judged otherwise: the
project's own wheel or sdist (the hostile corpus's module-scoped build) with one thing changed, refused by the check the
plant weakened (or, for T6, passed as the writer wrote it), and judged otherwise with that plant in place.

Outcomes of the 46 plants, each against the tests of its own check by name (the driver's lists):
caught 30: Z2 Z6 Z8 Z9 Z10 Z11 Z13 Z15 Z16 Z17 Z18 Z20 Z21 Z24 Z27, T3 T10 T14 T15 T16 (T16, a pax ``atime`` let
through, by tests/test_gate_round24.py on a second run), A1 A5 A6 A7 A8 A9 A11, M1 W1 W2;
survived 13, each now caught here: Z1 Z12 Z19 Z26, T1 T5 T6 T8 T9, A2 A4 A12 A13;
equivalent 3 (the dist still refused, by another check): Z23 (a central old Unix record neither 8 bytes nor the local
one's length is 9 to 11 bytes, which :func:`gate.zipstrict.owners` reads as not laid out: G316), T11 (an owner name
with a space is no root name: G316 for the owner), T13 (a base-256 field starting 0x81 to 0xff is not octal: G312
rather than G313).
"""

from __future__ import annotations

import gzip
import io
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path

from gate_fixtures import Built, RawMember, RawTarMember, raw_tar, raw_zip, sdist_members, wheel_members
from test_gate_hostile import MOMENT, built, gzip_with_header_fields, judge, refused_with, timestamp

__all__ = ["built"]  # the hostile corpus's built wheel and sdist


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _central(data: bytes) -> list[int]:
    """The offset of each central directory entry of a zip whose end record is its last 22 bytes."""
    at, found = struct.unpack_from("<L", data, len(data) - 6)[0], []
    while data[at : at + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack_from("<3H", data, at + 28)
        found.append(at)
        at += 46 + name_len + extra_len + comment_len
    return found


def _first_file(members: list[RawMember]) -> RawMember:
    return next(m for m in members if not m.name.endswith(b"/"))


# -- the strict zip reader ---------------------------------------------------------------------------------------------


def test_an_end_record_declaring_a_comment_it_does_not_hold_is_refused(built: Built, tmp_path: Path) -> None:
    """Z1: the end-of-central-directory record the last 22 bytes, its comment length 1 and no comment after it. zipfile
    reads the archive and an empty comment; a reader that takes the comment length on trust reads past the file's end.
    Refused (G311) for the comment it declares, not only for bytes after the record."""
    data = bytearray(built.wheel.read_bytes())
    struct.pack_into("<H", data, len(data) - 2, 1)
    wheel = _write(tmp_path / built.wheel.name, bytes(data))
    with zipfile.ZipFile(wheel) as z:  # what pip reads: every member, as before
        assert len(z.namelist()) == len(wheel_members(built.wheel))
    assert "1-byte comment" in refused_with(judge(wheel), "G311", None, built.wheel.name).message


def test_a_deflate_speed_hint_on_a_stored_member_is_refused(built: Built, tmp_path: Path) -> None:
    """Z12: general-purpose flag 0x0002 (a deflate speed hint) on a member that is stored, in both headers: the format
    leaves it undefined there and no writer sets it, every reader skips it; a bit carried into the upload unjudged
    (G319), as flag 0x0004 is."""
    members = wheel_members(built.wheel)
    target = _first_file(members)
    target.method, target.compressed, target.flags = zipfile.ZIP_STORED, None, 0x0002
    wheel = _write(tmp_path / built.wheel.name, raw_zip(members))
    with zipfile.ZipFile(wheel) as z:
        assert z.read(target.name.decode()) == target.data
    assert "speed hints" in refused_with(judge(wheel), "G319", target.name.decode(), built.wheel.name).message


def test_an_extended_timestamp_thirteen_hours_after_the_ms_dos_time_is_refused(built: Built, tmp_path: Path) -> None:
    """Z19: an Info-ZIP extended timestamp (both headers) 13 hours after the member's MS-DOS time read as UTC: the
    MS-DOS time would be local time in UTC-13, where no writer is (zones run from UTC-12 to UTC+14). `unzip` applies the
    record's time, zipfile (pip) reports the MS-DOS time: two times for one file (G312)."""
    members = wheel_members(built.wheel)
    target = _first_file(members)
    target.extra = timestamp(1, MOMENT + 13 * 3600)
    wheel = _write(tmp_path / built.wheel.name, raw_zip(members))
    message = refused_with(judge(wheel), "G312", target.name.decode(), built.wheel.name).message
    assert "no time zone" in message


def _deflated_to(data: bytes, length: int) -> bytes:
    """A deflate stream of ``data`` exactly ``length`` bytes long: level 6, then empty stored blocks (a sync flush,
    5 bytes each once the stream is byte-aligned) before the final block; the split point tried until they fit."""
    for split in range(len(data) // 2, len(data), 4099):
        packer = zlib.compressobj(6, zlib.DEFLATED, -15)
        head = packer.compress(data[:split]) + packer.flush(zlib.Z_SYNC_FLUSH)
        head += packer.compress(data[split:]) + packer.flush(zlib.Z_SYNC_FLUSH)
        tail = packer.flush(zlib.Z_FINISH)
        short = length - len(head) - len(tail)
        if short >= 0 and short % 5 == 0:
            stream = head + b"\x00\x00\x00\xff\xff" * (short // 5) + tail
            assert len(stream) == length and zlib.decompress(stream, -15) == data
            return stream
    raise AssertionError("no split fits")


def test_bytes_after_a_deflate_stream_that_ends_on_a_64_kib_boundary_are_refused(built: Built, tmp_path: Path) -> None:
    """Z26: the largest member's deflate stream made to end exactly where a 64 KiB piece of the member ends, then bytes
    that are no deflate data (within what the padding check allows): zlib (pip) stops at the stream's end and installs
    the true bytes, the rest is uploaded unjudged. The reader feeds the stream in 64 KiB pieces: bytes after the piece
    the stream ends in are refused as those inside it are."""
    members = wheel_members(built.wheel)
    largest = max(members, key=lambda m: len(m.data))
    level1 = zlib.compressobj(1, zlib.DEFLATED, -15)
    fastest = len(level1.compress(largest.data) + level1.flush())
    length = (len(largest.stored()) // 65536 + 1) * 65536
    assert length + 8 <= fastest * 1.25 + 64  # within the padding check's slack: only the stream's end is judged
    largest.compressed = _deflated_to(largest.data, length) + b"HIDDEN!!"
    wheel = _write(tmp_path / built.wheel.name, raw_zip(members))
    with zipfile.ZipFile(wheel) as z:
        assert z.read(largest.name.decode()) == largest.data  # what pip installs
    message = refused_with(judge(wheel), "G309", largest.name.decode(), built.wheel.name).message
    assert "bytes follow the end of its deflate stream" in message


# -- archive.py: modes, owners -----------------------------------------------------------------------------------------


def test_an_ms_dos_entry_executable_to_its_group_and_others_only_is_refused(built: Built, tmp_path: Path) -> None:
    """A2: a member made on MS-DOS ("version made by" host 0) with Unix mode 655 (executable to its group and others,
    not its owner): pip and installer install it executable (they read any x bit), uv reads no Unix mode on an MS-DOS
    entry and installs it plain (G315)."""
    members = wheel_members(built.wheel)
    target = _first_file(members)
    target.mode = 0o100655
    data = bytearray(raw_zip(members))
    for at in _central(bytes(data)):
        struct.pack_into("<H", data, at + 4, 0x0014)  # made on MS-DOS, zip 2.0, as zipfile on Windows writes
    wheel = _write(tmp_path / built.wheel.name, bytes(data))
    message = refused_with(judge(wheel), "G315", target.name.decode(), built.wheel.name).message
    assert "made on MS-DOS" in message


def test_a_zip_member_its_group_cannot_read_is_refused(built: Built, tmp_path: Path) -> None:
    """A4: a member of mode 604: others can read it, its group cannot. distlib's Wheel.install and `unzip` apply that
    (members of that group cannot import it), pip, installer and uv write 644 (G315)."""
    members = wheel_members(built.wheel)
    target = _first_file(members)
    target.mode = 0o100604
    wheel = _write(tmp_path / built.wheel.name, raw_zip(members))
    message = refused_with(judge(wheel), "G315", target.name.decode(), built.wheel.name).message
    assert "group or others cannot" in message


def test_the_ms_dos_folder_attribute_on_a_unix_file_is_refused(built: Built, tmp_path: Path) -> None:
    """A12: the MS-DOS folder attribute (0x10) on a file made on Unix with its Unix mode 644: the corpus's case is an
    MS-DOS entry with no mode, which uv's zip reader takes for a folder; on a Unix entry pip, installer and uv read
    the mode, and the bit is still one no writer sets on a file, read as a folder by unpackers that read the MS-DOS
    attributes (G304), whatever the host."""
    members = wheel_members(built.wheel)
    target = _first_file(members)
    data = bytearray(raw_zip(members))
    at = _central(bytes(data))[members.index(target)]
    struct.pack_into("<H", data, at + 38, 0x10)  # the low half of the external attributes: the folder bit
    wheel = _write(tmp_path / built.wheel.name, bytes(data))
    with zipfile.ZipFile(wheel) as z:
        assert z.getinfo(target.name.decode()).external_attr == (0o100644 << 16) | 0x10
    message = refused_with(judge(wheel), "G304", target.name.decode(), built.wheel.name).message
    assert "MS-DOS folder attribute" in message


# -- the strict tar reader, the gzip header --------------------------------------------------------------------------


def _sdist(built: Built, tmp_path: Path, tar: bytes) -> Path:
    return _write(tmp_path / built.sdist.name, gzip.compress(tar, compresslevel=1, mtime=0))


def _data_ends(tar: bytes) -> list[tuple[str, int, int]]:
    """(name, end of its data, end of its last block) of each file whose data does not fill its last block."""
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return [
            (m.name, m.offset_data + m.size, m.offset_data + -(-m.size // 512) * 512)
            for m in t.getmembers()
            if m.isreg() and m.size % 512
        ]


def test_spaces_in_the_padding_after_a_members_data_are_refused(built: Built, tmp_path: Path) -> None:
    """T1: the zeros that fill a member's last block after its data written as spaces: every unpacker skips them, so
    they are bytes uploaded unjudged (G312), as anything but zeros there is."""
    tar = bytearray(raw_tar(sdist_members(built.sdist)))
    name, end, block_end = _data_ends(bytes(tar))[0]
    tar[end:block_end] = b" " * (block_end - end)
    message = refused_with(judge(_sdist(built, tmp_path, bytes(tar))), "G312", name).message
    assert "padding" in message


def test_a_folder_entry_with_a_link_target_is_refused(built: Built, tmp_path: Path) -> None:
    """T5: a folder entry for the package's own folder carrying a link target: uv refuses such an sdist, tarfile
    ignores the target (G312), as for a file."""
    members = sdist_members(built.sdist)
    folder = RawTarMember(f"{built.root}/neurobrix", type=tarfile.DIRTYPE, linkname="../elsewhere", mode=0o755)
    sdist = _sdist(built, tmp_path, raw_tar([*members, folder]))
    assert "link target" in refused_with(judge(sdist), "G312", f"{built.root}/neurobrix/").message


def test_a_gnu_header_with_bytes_late_in_its_prefix_field_is_refused(built: Built, tmp_path: Path) -> None:
    """T8: a member's header with GNU's magic and a byte at offset 450, in the last third of the 155-byte prefix field:
    tarfile reads no prefix in a GNU header, a POSIX reader joins it to the name and unpacks the file elsewhere (G312),
    wherever in the field the bytes are."""
    members = sdist_members(built.sdist)
    target = next(m for m in members if m.type == tarfile.REGTYPE)
    target.header = {257: b"ustar  \x00", 450: b"x"}
    sdist = _sdist(built, tmp_path, raw_tar(members))
    assert "prefix" in refused_with(judge(sdist), "G312", target.name).message


def test_bytes_in_a_headers_last_twelve_bytes_are_refused(built: Built, tmp_path: Path) -> None:
    """T9: a header whose 12 bytes of padding (offset 500) hold ``evil`` rather than zeros: tarfile ignores them, so
    they are bytes uploaded unjudged (G312), not only uv's xstar ``tar\\0``."""
    members = sdist_members(built.sdist)
    target = next(m for m in members if m.type == tarfile.REGTYPE)
    target.header = {500: b"evil"}
    sdist = _sdist(built, tmp_path, raw_tar(members))
    assert "padding that ends the header" in refused_with(judge(sdist), "G312", target.name).message


def test_a_header_time_rounded_up_from_half_a_second_under_a_pax_time_passes(built: Built, tmp_path: Path) -> None:
    """T6 (a plant that refused what a writer writes, no false pass): a pax time of 1700000001.5 s over a header time of
    1700000002, the half second rounded up (as Python's round() does it, to even). The header's time is one the pax
    time's rounding gives, so the sdist passes; with a half second read as rounding down it was refused (G312)."""
    name = f"{built.root}/pyproject.toml"
    assert round(1700000001.5) == 1700000002
    members = [
        RawTarMember(
            m.name, m.data, m.type, mode=m.mode, pax={"mtime": "1700000001.5"}, header={136: b"%011o\0" % 1700000002}
        )
        if m.name == name
        else m
        for m in sdist_members(built.sdist)
    ]
    report = judge(_sdist(built, tmp_path, raw_tar(members)))
    assert report.findings == [] and report.passed


def test_a_gzip_file_name_that_is_the_tars_in_another_case_is_refused(built: Built, tmp_path: Path) -> None:
    """A13: the gzip header's file name (FNAME) the tar's own name upper-cased: no writer writes it, every unpacker
    skips it (G313); only the tar's own name, byte for byte, is the one Python's gzip writes."""
    tar = raw_tar(sdist_members(built.sdist))
    upper = built.sdist.name.removesuffix(".gz").upper().encode()
    sdist = _write(tmp_path / built.sdist.name, gzip_with_header_fields(tar, 0x08, upper + b"\0"))
    assert "file name (FNAME)" in refused_with(judge(sdist), "G313", None, built.sdist.name).message
