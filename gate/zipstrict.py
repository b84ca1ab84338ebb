"""A zip read the one way every tool reads it, or refused: the strict reader behind wheel checks.

Python's ``zipfile``, ``unzip`` and pip each forgive a different set of oddities (bytes before the
archive, a comment after it, local headers that disagree with the central directory, entries the
directory does not list, Unicode Path extra fields, names cut at a NUL), so an archive that is odd
in any of these ways can hold one wheel for the gate and another for the installer. This reader
accepts only the archive that every tool reads alike:

* the end-of-central-directory record is the last 22 bytes (no comment, nothing after it), on
  disk 0, without zip64;
* the central directory ends where that record starts, and its entries' local headers and data
  tile the file from byte 0 to the directory exactly (nothing before, between or hidden), in the directory's order;
* every local header equals its directory entry (version, flags, method, time, CRC, sizes, name bytes, and the
  extra records, which `unzip` reads from the local header and the zip crate from the central one);
* no header byte the format reserves or leaves undefined set otherwise than zip writers set it (G319);
* only stored and deflate members, no encryption, no data descriptors, no Unicode Path or zip64
  extra fields, no extra field record but the timestamp and Unix-owner records zip writers put in wheels (each
  within its format's size, and the two the zip crate parses laid out as it reads them), no record twice in one
  header (uv refuses that), no comments, and no
  "version needed to extract" above 2.0 (`unzip` skips the member; above 6.3 zipfile refuses the archive, uv ignores
  the field);
* a member is inflated through a cap: reading stops as soon as it passes its declared size, and the
  stream must end exactly there with the declared CRC, within a budget for the whole archive; and the stream may be
  no longer than a compressor writes for those bytes (:func:`deflate_padding`: empty or needless blocks are read
  past by every inflater, so whatever they hold is uploaded unjudged).

Hand-written because ``zipfile`` exposes none of this: it finds the directory by searching
backwards, never compares local headers beyond the name, and decodes names its own way.
"""

from __future__ import annotations

import calendar
import dataclasses
import stat
import struct
import time
import zlib
from dataclasses import dataclass

from .checks import Check

EOCD_SIG = b"PK\x05\x06"
CENTRAL_SIG = b"PK\x01\x02"
LOCAL_SIG = b"PK\x03\x04"
ZIP64_LOCATOR_SIG = b"PK\x06\x07"
_EOCD = struct.Struct("<4s4H2LH")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_LOCAL = struct.Struct("<4s5H3L2H")

STORED, DEFLATED = 0, 8
METHODS = {
    0: "stored",
    1: "shrunk",
    6: "imploded",
    8: "deflate",
    9: "deflate64",
    12: "bzip2",
    14: "lzma",
    93: "zstandard",
    95: "xz",
    98: "ppmd",
    99: "AES-encrypted",
}
FLAG_ENCRYPTED = 0x0001
FLAG_DESCRIPTOR = 0x0008
FLAG_UTF8 = 0x0800
_FLAGS_ALLOWED = 0x0002 | 0x0004 | FLAG_UTF8  # deflate speed hints, UTF-8 names
# zipfile.MAX_EXTRACT_VERSION: the highest "version needed to extract" (its low byte, the one zipfile reads) Python's
# zipfile opens; above it zipfile refuses the whole archive (pip, installer, twine), while uv ignores the field
ZIPFILE_MAX_NEEDED = 63
# The highest "version needed" a member may say it needs (gate round 19): 2.0, what zipfile (so hatchling), Info-ZIP and
# the zip crate write for a deflated member or a folder (1.0 for a stored one; 4.5 only with zip64, refused here).
# Info-ZIP's `unzip` compares the field with the version it was built for, UNZIP_VERSION (4.6 for Debian's, with bzip2;
# 4.5 with zip64 support; 2.0 without it, as other readers refuse past 2.0), and skips a member that needs more
# ("need PK compat. v6.3 (can do v4.6)", exit 81): between 2.1 and 6.3 pip and installer install the member and uv
# ignores the field, while `unzip` installs the wheel without it.
UNZIP_MAX_NEEDED = 20
_EXTRA_REFUSED = {
    0x0001: "a zip64 extra field (sizes that disagree with the header's are read by some tools only)",
    0x0017: "a strong-encryption header",
    0x6375: "an Info-ZIP Unicode Comment extra field",
    0x7075: "an Info-ZIP Unicode Path extra field (unzip installs under that name, zipfile and pip do not)",
    0x9901: "an AES encryption extra field",
}

# The extra field records zip writers put in wheels, each up to its format's longest (APPNOTE 4.5, Info-ZIP's
# extrafld.txt). Any other record, or a longer one, holds bytes no installer reads: up to 64 KiB a header carried
# into the upload unjudged (gate round 12); such a record is refused, not skipped.
_EXTRA_ALLOWED = {
    0x000A: 32,  # NTFS times: reserved 4, tag 2, size 2, three 8-byte times
    0x5455: 13,  # Info-ZIP extended timestamp: flags 1, up to three 4-byte times
    0x5855: 12,  # Info-ZIP Unix, old: two 4-byte times, then 2-byte uid and gid
    0x7875: 19,  # Info-ZIP Unix, new: version 1, then uid and gid each a size byte and up to 8 bytes
}


def _ntfs_times(data: bytes) -> bool:
    """An NTFS record as the zip crate reads it: 4 reserved bytes, then tag 1 of 24 bytes (three times), no more."""
    return len(data) == 32 and data[4:8] == struct.pack("<HH", 1, 24)


def _extended_timestamp(data: bytes) -> bool:
    """An Info-ZIP extended timestamp as the zip crate reads it: flags for the three times only, then 4 bytes for each
    time flagged, or the modification time alone (the central header's form, whatever the flags)."""
    return len(data) in (5, 1 + 4 * bin(data[0]).count("1")) and not data[0] & ~0b111 if data else False


# The shortest a record may be (gate round 20): the old Unix record holds its two times in 8 bytes, and `unzip` reads
# one only from 8 bytes (process.c, EB_UX_MINLEN); a shorter one (up to 7 bytes in each header) was read by no tool.
# Each of the others is held to its exact layout (the Unix owner record by :func:`owners`).
_EXTRA_SHORTEST = {0x5855: 8}

# The records the zip crate parses in a wheel's headers, each judged as it reads them (hand-written: no Python library
# reads these records, and zipfile skips them).
_EXTRA_PARSED = {0x000A: _ntfs_times, 0x5455: _extended_timestamp}


@dataclass(frozen=True)
class ZipEntry:
    """One member as the central directory and its equal local header declare it."""

    raw_name: bytes
    flags: int
    method: int
    crc: int
    compressed: int
    size: int
    mode: int  # the Unix mode in the external attributes' high 16 bits (0: none given, refused: G315)
    attributes: int  # their low 16 bits: the MS-DOS attributes (0x10: a folder)
    header_offset: int
    data_offset: int
    made_by: int = 0x0314  # "version made by": the host system in its high byte, the zip version in its low
    internal: int = 0  # the internal file attributes (bit 0: a text file, to `unzip -a`; the rest reserved)
    extra: bytes = b""  # the central header's extra field, every record allowed (see _extra_problems)
    local_extra: bytes = b""  # the local header's, its records agreeing with the central ones (_extras_disagree)

    @property
    def host(self) -> int:
        """The host system "version made by" names (0: MS-DOS, 3: Unix): the zip crate (uv) reads the mode by it."""
        return self.made_by >> 8

    @property
    def utf8(self) -> bool:
        return bool(self.flags & FLAG_UTF8)

    @property
    def dos_folder(self) -> bool:
        """The MS-DOS folder attribute. With no Unix mode and an MS-DOS host, the ``zip`` crate (uv up to 0.11.14
        for a wheel on disk) reads it as mode 0o40775, and uv then installs the member executable, whatever pip
        and installer (Unix mode only) and the gate's :attr:`executable` make of it."""
        return bool(self.attributes & 0x10)

    @property
    def executable(self) -> bool:
        """What some installer takes for an executable file: pip and installer need the regular-file type
        bits as well, uv any executable bit; the gate takes the union (a mode with no file type but an x
        bit is executable here), so a member installs plain for every installer or is judged as executable."""
        kind = stat.S_IFMT(self.mode)
        return bool(self.mode & 0o111) and (kind == 0 or stat.S_ISREG(self.mode))


@dataclass(frozen=True)
class ZipProblem:
    check: Check
    raw_name: bytes | None  # the member it concerns (its raw name), None for the archive as a whole
    message: str
    fatal: bool  # the archive as a whole cannot be read one way only: nothing in it is judged further


class NotAZip(Exception):
    """No end-of-central-directory record at all: not a zip archive (the gate cannot judge it)."""


def parse(data: bytes, max_members: int) -> tuple[list[ZipEntry], list[ZipProblem]]:
    """The entries of the zip in ``data`` (central-directory order) and every problem found.

    Raises NotAZip when there is no end-of-central-directory record anywhere near the end.
    """
    problems: list[ZipProblem] = []

    def fatal(check: Check, message: str) -> tuple[list[ZipEntry], list[ZipProblem]]:
        problems.append(ZipProblem(check, None, message, True))
        return [], problems

    end = len(data) - _EOCD.size
    if end < 0:
        raise NotAZip(f"{len(data)} bytes, fewer than an empty zip has: not a zip archive")
    if data[end : end + 4] != EOCD_SIG:
        found = data.rfind(EOCD_SIG, max(0, len(data) - _EOCD.size - 0xFFFF - 1024))
        if found < 0:
            raise NotAZip("no end-of-central-directory record: not a zip archive")
        return fatal(
            Check.G311,
            f"{len(data) - found - _EOCD.size} bytes follow the end-of-central-directory "
            "record (a zip comment, or data appended to the archive)",
        )
    _, disk, cd_disk, disk_entries, entries, cd_size, cd_offset, comment_len = _EOCD.unpack_from(data, end)
    if comment_len:
        return fatal(Check.G311, f"the end-of-central-directory record declares a {comment_len}-byte comment")
    if (
        0xFFFF in (disk, cd_disk, disk_entries, entries)
        or 0xFFFFFFFF in (cd_size, cd_offset)
        or (end >= 20 and data[end - 20 : end - 16] == ZIP64_LOCATOR_SIG)
    ):
        return fatal(
            Check.G313, "a zip64 archive; this project's wheel never needs zip64, and tools disagree on its records"
        )
    if disk or cd_disk or disk_entries != entries:
        return fatal(Check.G313, "a multi-disk (spanned) archive")
    if entries > max_members:
        return fatal(Check.G314, f"{entries} members; the limit is {max_members}")
    if cd_offset + cd_size != end:
        return fatal(
            Check.G311,
            f"the central directory ({cd_size} bytes at offset {cd_offset}) does not end where "
            f"the end record starts (offset {end}): bytes between them, or a directory that "
            "overlaps",
        )

    listed: list[ZipEntry] = []
    pos = cd_offset
    for index in range(entries):
        if pos + _CENTRAL.size > end:
            return fatal(Check.G312, f"the central directory ends inside entry {index}")
        (
            sig,
            made_by,
            needed,
            flags,
            method,
            mtime,
            mdate,
            crc,
            compressed,
            size,
            name_len,
            extra_len,
            comment_len,
            disk_start,
            internal,
            external,
            header_offset,
        ) = _CENTRAL.unpack_from(data, pos)
        if sig != CENTRAL_SIG:
            return fatal(Check.G312, f"central directory entry {index} has no entry signature")
        name_start = pos + _CENTRAL.size
        extra_start = name_start + name_len
        after = extra_start + extra_len + comment_len
        if after > end:
            return fatal(Check.G312, f"central directory entry {index} runs past the directory")
        raw_name = data[name_start:extra_start]
        extra = data[extra_start : extra_start + extra_len]
        if comment_len:
            problems.append(ZipProblem(Check.G311, raw_name, f"a {comment_len}-byte entry comment", True))
        if disk_start:
            problems.append(ZipProblem(Check.G313, raw_name, "stored on another disk of a spanned archive", True))
        refused = _extra_problems(extra, "central")
        problems.extend(ZipProblem(Check.G313, raw_name, m, True) for m in refused)
        problems.extend(_flag_problems(flags, raw_name))
        problems.extend(_reserved_problems(raw_name, made_by, needed, flags, method, b"" if refused else extra))
        moment = _dos_time_problem(mtime, mdate)
        if moment:
            problems.append(ZipProblem(Check.G319, raw_name, moment, False))
        if needed & 0xFF > ZIPFILE_MAX_NEEDED:
            problems.append(
                ZipProblem(
                    Check.G313,
                    raw_name,
                    f"version needed to extract {(needed & 0xFF) / 10:.1f}: Python's zipfile (pip, installer, twine) "
                    f"opens nothing above {ZIPFILE_MAX_NEEDED / 10:.1f} and refuses the whole wheel, as uv 0.13.9 "
                    "does (an earlier uv installed it)",
                    True,
                )
            )
        elif needed & 0xFF > UNZIP_MAX_NEEDED:
            problems.append(
                ZipProblem(
                    Check.G313,
                    raw_name,
                    f"version needed to extract {(needed & 0xFF) / 10:.1f}, past the {UNZIP_MAX_NEEDED / 10:.1f} zip "
                    "writers write for a stored or deflated member: Info-ZIP's `unzip` skips a member that needs more "
                    "than it was built for (4.6 for Debian's, 2.0 without zip64) and installs the wheel without it, "
                    "while zipfile (pip, installer) reads up to 6.3 and uv ignores the field",
                    False,
                )
            )
        if method not in (STORED, DEFLATED):
            problems.append(
                ZipProblem(
                    Check.G313,
                    raw_name,
                    f"compression method {method} ({METHODS.get(method, 'unknown')}): only stored and deflate are read",
                    False,
                )
            )
        elif method == STORED and compressed != size:
            problems.append(
                ZipProblem(Check.G312, raw_name, f"stored, yet {compressed} bytes stored for {size} declared", True)
            )
        mode = external >> 16  # pip and installer read a Unix mode there whatever host "version made by" names
        entry = ZipEntry(
            raw_name,
            flags,
            method,
            crc,
            compressed,
            size,
            mode,
            external & 0xFFFF,
            header_offset,
            0,
            made_by,
            internal,
            extra,
        )
        local = _local_entry(data, entry, (needed, flags, method, mtime, mdate, crc, compressed, size), cd_offset)
        if isinstance(local, str):
            problems.append(ZipProblem(Check.G312, raw_name, local, True))
        else:
            listed.append(local)
            said_twice = "" if moment or refused else _times_disagree(mtime, mdate, local)
            if said_twice:
                problems.append(ZipProblem(Check.G312, raw_name, said_twice, True))
        pos = after
    if pos != end:
        return fatal(Check.G312, "the central directory holds more bytes than its entries")
    if any(p.fatal for p in problems):
        return [], problems

    covered = 0  # local headers and data must tile [0, cd_offset) exactly, in offset order
    for entry in sorted(listed, key=lambda e: e.header_offset):
        if entry.header_offset > covered:
            problems.append(ZipProblem(Check.G311, *_gap(data, covered, entry.header_offset), True))
        elif entry.header_offset < covered:
            problems.append(
                ZipProblem(
                    Check.G311,
                    entry.raw_name,
                    f"its local entry at offset {entry.header_offset} "
                    "overlaps the entry before it (members sharing bytes)",
                    True,
                )
            )
        covered = max(covered, entry.data_offset + entry.compressed)
    if covered < cd_offset:
        problems.append(ZipProblem(Check.G311, *_gap(data, covered, cd_offset), True))
    if any(p.fatal for p in problems):
        return [], problems
    # once they tile it (entries sharing bytes are G311), the directory lists the entries in the order of their local
    # headers, as every zip writer writes them (gate round 16): a reader that streams the file front to back (uv
    # installing a wheel as it downloads, `bsdtar`, Java's ZipInputStream) meets them in that order, zipfile (pip,
    # installer) in the directory's, and RECORD's order was judged against the directory's alone, so a wheel judged
    # without its sdist carried a permutation of its members (hundreds of bits) that no installer reads alike
    for before, after in zip(listed, listed[1:]):
        if after.header_offset < before.header_offset:
            problems.append(
                ZipProblem(
                    Check.G312,
                    after.raw_name,
                    f"the central directory lists it after {shown(before.raw_name)}, whose local entry (offset "
                    f"{before.header_offset}) comes after its own (offset {after.header_offset}): a reader that "
                    "streams the archive meets the members in another order than zipfile (pip, installer) lists them",
                    True,
                )
            )
            break
    if any(p.fatal for p in problems):
        return [], problems
    return listed, problems


def shown(raw: bytes) -> str:
    return repr(raw.decode("utf-8", "backslashreplace"))


def _gap(data: bytes, start: int, stop: int) -> tuple[bytes | None, str]:
    """(the hidden entry's name if the gap holds one, what the gap is) for bytes no entry accounts for."""
    found = data.find(LOCAL_SIG, start, stop)
    if found < 0 or found + _LOCAL.size > stop:
        return (
            None,
            f"{stop - start} bytes at offset {start} that no entry accounts for (data before the archive, "
            "or between members)",
        )
    name_len = struct.unpack_from("<H", data, found + 26)[0]
    name = data[found + _LOCAL.size : min(found + _LOCAL.size + name_len, stop)]
    return (
        name,
        f"a local entry at offset {found} that the central directory does not list (some tools read it, "
        f"others not; {stop - start} bytes unaccounted for)",
    )


def _flag_problems(flags: int, raw_name: bytes) -> list[ZipProblem]:
    problems = []
    if flags & FLAG_ENCRYPTED:
        problems.append(ZipProblem(Check.G313, raw_name, "encrypted; a wheel's members must be readable", False))
    if flags & FLAG_DESCRIPTOR:
        problems.append(
            ZipProblem(
                Check.G313,
                raw_name,
                "sizes in a data descriptor after the data (the local header says nothing of them)",
                True,
            )
        )
    unknown = flags & ~(_FLAGS_ALLOWED | FLAG_ENCRYPTED | FLAG_DESCRIPTOR)
    if unknown:
        problems.append(
            ZipProblem(Check.G313, raw_name, f"general-purpose flags {unknown:#06x} the gate does not read", True)
        )
    return problems


# Header bytes the format reserves or leaves undefined, which every zip writer leaves as below and no installer reads
# (gate round 17; as the internal attributes past the text bit, G317): zipfile reads the high byte of "version needed
# to extract" as a field it calls `reserved` (APPNOTE names no use for it; zipfile, Info-ZIP, the zip crate and 7-Zip
# since 18.06 write 0, p7zip before it the host byte of "version made by"),
# "version made by" names a specification version (zipfile writes 2.0 or 4.5, Info-ZIP 3.0, none past 6.3, the last),
# the deflate speed hints (flags 0x0002, 0x0004) are undefined on a member that is not deflated, and an NTFS times
# record begins with 4 reserved bytes. Each carried bits into the upload that no tool judged, in every header; in the
# local header too (which must equal the central one, its NTFS record byte for byte). Hand-written: zipfile keeps the
# `reserved` byte and skips the extra records without a word.
def _reserved_problems(
    raw_name: bytes, made_by: int, needed: int, flags: int, method: int, extra: bytes
) -> list[ZipProblem]:
    found = []
    if needed >> 8 not in (0, made_by >> 8):  # p7zip before 18.06 wrote its host there, as in "version made by"
        found.append(
            f"version needed to extract {needed:#06x}: its high byte, which zipfile reads as `reserved`, is "
            f'{needed >> 8:#04x} where zip writers write 0 (or, p7zip before 18.06, the host of "version made by", '
            f"{made_by >> 8:#04x})"
        )
    if made_by & 0xFF > ZIPFILE_MAX_NEEDED:
        found.append(
            f'"version made by" {made_by:#06x} names zip specification {(made_by & 0xFF) / 10:.1f}, past the last '
            f"({ZIPFILE_MAX_NEEDED / 10:.1f}): no zip writer writes it"
        )
    if flags & 0x0006 and method != DEFLATED:
        found.append(
            f"deflate speed hints (flags {flags & 0x0006:#06x}) on a member that is not deflated, where the format "
            "leaves them undefined and no writer sets them"
        )
    for field, data in _records(extra):
        if field == 0x000A and data[:4].strip(b"\0"):
            found.append(
                f"an NTFS times record whose 4 reserved bytes are {data[:4].hex()}, where every writer writes 0"
            )
    return [
        ZipProblem(Check.G319, raw_name, f"{what}: bytes no installer reads, carried into the upload unjudged", False)
        for what in found
    ]


# An MS-DOS date and time (gate round 18): year since 1980 (7 bits), month (4), day (5); hour (5), minute (6), seconds
# halved (5). Fields past their ranges (month 0 or 13-15, day 0 or past the month's last, hour 24-31, minute 60-63,
# seconds 60-62), which every writer keeps within them (zipfile refuses to write a year before 1980, the zip crate's
# earliest is 1980-01-01), name no moment: zipfile (pip, installer, twine) reports the impossible date_time as it is,
# which `datetime` refuses (distlib builds one from it), `unzip` applies another moment (mktime carries the excess:
# month 13 of 2026 is 2027-01-01, day 0 of 1980 is 1979-12-31), the zip crate reads no time at all. Bits carried in
# both headers of every member that no tool reads alike. Hand-written: zipfile decodes the fields without a word.
def _dos_time_problem(mtime: int, mdate: int) -> str:
    """Why a member's MS-DOS modification date and time name no moment ('' when they do)."""
    year, month, day = 1980 + (mdate >> 9), mdate >> 5 & 0xF, mdate & 0x1F
    hour, minute, second = mtime >> 11, mtime >> 5 & 0x3F, (mtime & 0x1F) * 2
    wrong = []
    if not 1 <= month <= 12:
        wrong.append(f"month {month}")
    elif not 1 <= day <= calendar.monthrange(year, month)[1]:
        wrong.append(f"day {day} of month {month}")
    if hour > 23:
        wrong.append(f"hour {hour}")
    if minute > 59:
        wrong.append(f"minute {minute}")
    if second > 59:
        wrong.append(f"second {second}")
    if not wrong:
        return ""
    return (
        f"an MS-DOS modification date and time ({year}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}, date "
        f"{mdate:#06x}, time {mtime:#06x}) that name no moment ({', '.join(wrong)}): zipfile (pip, installer) reports "
        "that date_time as it is and `datetime` refuses it, `unzip` applies another moment, the zip crate reads no "
        "time; every writer writes a real one, so these are bits carried into the upload unjudged"
    )


# A member's modification time said twice (gate round 20, as round 18 found for a ustar time under a pax time): its
# MS-DOS time, which zipfile (pip, installer, twine) and the zip crate report, and the time an extra record holds,
# which other unpackers apply: `unzip` an Info-ZIP extended timestamp's, or an old Unix record's where there is none
# (process.c, ef_scan_for_izux), 7-Zip an NTFS record's (ZipItem.cpp), and the zip crate reads a 5-byte extended
# timestamp as the modification time whatever its flags (extended_timestamp.rs), where `unzip` reads the flags (an
# access time). Writers put one moment in both: the MS-DOS time in their local time (Info-ZIP rounds odd seconds up,
# zipfile down) or in UTC, the records in UTC, and a time before 1980 as 1980-01-01 00:00:00, the MS-DOS time's first.
# Any other pair was two times for one file, 32 to 64 bits a record carried unjudged. Hand-written: zipfile skips the
# records.
NTFS_EPOCH = 11_644_473_600  # seconds from 1601-01-01 (an NTFS time's start) to 1970-01-01
ZONES = (-12 * 3600, 14 * 3600)  # the time zones a writer's local time can be in, UTC-12 to UTC+14, whole quarter hours
DOS_FIRST, DOS_LAST = calendar.timegm((1980, 1, 1, 0, 0, 0)), calendar.timegm((2107, 12, 31, 23, 59, 58))
_RECORD_TIMES = {  # record -> (what it is, who applies its modification time)
    0x5455: ("Info-ZIP extended timestamp", "`unzip` applies it, the zip crate reads a 5-byte one whatever its flags"),
    0x5855: ("Info-ZIP old Unix record", "`unzip` applies it where no extended timestamp is"),
    0x000A: ("NTFS times record", "7-Zip applies it"),
}


def _record_mtime(field: int, data: bytes) -> float | None:
    """The modification time (seconds since 1970, UTC) a well-formed record holds, as any reader reads it; None if
    none does."""
    if field == 0x5455 and len(data) >= 5 and (data[0] & 1 or len(data) == 5):
        return float(struct.unpack_from("<L", data, 1)[0])  # unsigned, as the zip crate and 7-Zip read it
    if field == 0x5855 and len(data) >= 8:
        return float(struct.unpack_from("<L", data, 4)[0])  # after the access time
    if field == 0x000A and len(data) == 32:
        return float(struct.unpack_from("<Q", data, 8)[0]) / 10**7 - NTFS_EPOCH  # after reserved bytes, tag, size
    return None


def _same_moment(seconds: float, dos: int) -> bool:
    """Whether a record's time (UTC) and an MS-DOS time (read as UTC) name one moment in some writer's time zone."""
    if (dos == DOS_FIRST and seconds < dos + ZONES[1] + 2) or (dos == DOS_LAST and seconds > dos + ZONES[0] - 2):
        return True  # a time outside the MS-DOS range, clamped to its first or last moment
    zone = round((dos - seconds) / 900) * 900
    return ZONES[0] <= zone <= ZONES[1] and abs(dos - seconds - zone) <= 2


def _utc(seconds: float) -> str:
    if not -62_135_596_800 <= seconds < 253_402_300_800:  # years 1 to 9999, what datetime shows
        return f"{seconds:.0f} s from 1970"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def _times_disagree(mtime: int, mdate: int, entry: ZipEntry) -> str:
    """Why a member's extra records say another modification time than its MS-DOS time ('' when none does); its MS-DOS
    time names a moment and its records are well formed and agree between its headers."""
    dos = calendar.timegm((1980 + (mdate >> 9), mdate >> 5 & 0xF, mdate & 0x1F, mtime >> 11, mtime >> 5 & 0x3F, 0))
    dos += (mtime & 0x1F) * 2
    for where, extra in (("central", entry.extra), ("local", entry.local_extra)):
        for field, data in _records(extra):
            said = _record_mtime(field, data)
            if said is None or _same_moment(said, dos):
                continue
            what, who = _RECORD_TIMES[field]
            return (
                f"its {what} ({field:#06x}, {where} header) says it was modified at {_utc(said)}, its MS-DOS time "
                f"{_utc(dos)[:-4]}: no time zone (UTC-12 to UTC+14, to 2 s) makes them one moment, and no writer "
                f"writes two: {who}, zipfile (pip, installer, twine) reports the MS-DOS time"
            )
    return ""


# An extra field is refused at its first bad record (gate round 20): a field of 64 KiB holds 16,383 empty records, and
# each was judged and named, twice for a repeated one, so 50 members of such fields (a wheel of 3 MiB) took the gate 8 s
# and 470 MB of findings, and the 256 MiB an archive may have minutes and tens of gigabytes. A well-formed field holds
# each allowed record once: four records at most, so one finding says all there is to say of it.
def _extra_problems(extra: bytes, where: str) -> list[str]:
    """Why an extra field (a sequence of id, size, data records, each id once) is refused: its first refused or
    malformed record, or nothing."""
    problems: list[str] = []
    seen: set[int] = set()
    pos = 0
    while pos < len(extra) and not problems:
        if pos + 4 > len(extra):
            return [f"a malformed {where} extra field (a record header cut short)"]
        field, length = struct.unpack_from("<HH", extra, pos)
        if pos + 4 + length > len(extra):
            return [f"a malformed {where} extra field (record {field:#06x} runs past the field)"]
        if field in _EXTRA_REFUSED:
            problems.append(f"{_EXTRA_REFUSED[field]} in the {where} header")
        elif field not in _EXTRA_ALLOWED:
            problems.append(
                f"extra field record {field:#06x} in the {where} header, none of those zip writers put in wheels "
                "(its bytes are read by no installer)"
            )
        elif length > _EXTRA_ALLOWED[field]:
            problems.append(
                f"extra field record {field:#06x} of {length} bytes in the {where} header, longer than its format's "
                f"{_EXTRA_ALLOWED[field]} (the rest is read by no installer)"
            )
        elif length < _EXTRA_SHORTEST.get(field, 0):
            problems.append(
                f"extra field record {field:#06x} of {length} bytes in the {where} header, shorter than its format's "
                f"{_EXTRA_SHORTEST[field]}: `unzip` reads it only from {_EXTRA_SHORTEST[field]} bytes, the zip crate "
                "and zipfile never (bytes read by no installer)"
            )
        elif field in _EXTRA_PARSED and not _EXTRA_PARSED[field](extra[pos + 4 : pos + 4 + length]):
            problems.append(
                f"extra field record {field:#06x} in the {where} header not laid out as its format says: the zip "
                "crate parses it and refuses the whole archive (uv read a wheel on disk with it up to 0.11.14), "
                "zipfile (pip, installer) skips it"
            )
        elif field in seen:  # uv (0.13) refuses the whole wheel; zipfile, pip and installer read on
            problems.append(f"extra field record {field:#06x} twice in the {where} header (uv refuses such a wheel)")
        seen.add(field)
        pos += 4 + length
    return problems


def _local_entry(data: bytes, entry: ZipEntry, central: tuple[int, ...], cd_offset: int) -> ZipEntry | str:
    """The entry with its data offset, once its local header is found equal to the directory; else why not."""
    offset = entry.header_offset
    if offset + _LOCAL.size > cd_offset:
        return f"its local header offset {offset} is not before the central directory"
    sig, *local, name_len, extra_len = _LOCAL.unpack_from(data, offset)
    if sig != LOCAL_SIG:
        return f"no local header at offset {offset}, where the central directory points"
    names = ("version needed", "flags", "method", "time", "date", "CRC", "compressed size", "size")
    differ = [n for n, a, b in zip(names, local, central, strict=True) if a != b]
    name_start = offset + _LOCAL.size
    raw_name = data[name_start : name_start + name_len]
    if raw_name != entry.raw_name:
        return f"its local header names it {raw_name!r}, the central directory {entry.raw_name!r}"
    if differ:
        return f"its local header disagrees with the central directory on: {', '.join(differ)}"
    extra = data[name_start + name_len : name_start + name_len + extra_len]
    refused = _extra_problems(extra, "local")
    if refused:
        return "; ".join(refused)
    disagreement = "" if _extra_problems(entry.extra, "central") else _extras_disagree(entry.extra, extra)
    if disagreement:  # (a central field refused is reported as such: G313)
        return disagreement
    data_offset = name_start + name_len + extra_len
    if data_offset + entry.compressed > cd_offset:
        return f"its {entry.compressed} compressed bytes run into the central directory"
    return dataclasses.replace(entry, header_offset=offset, data_offset=data_offset, local_extra=extra)


def _records(extra: bytes) -> list[tuple[int, bytes]]:
    """The (id, data) records of an extra field already found well formed by :func:`_extra_problems`."""
    records, pos = [], 0
    while pos + 4 <= len(extra):
        field, length = struct.unpack_from("<HH", extra, pos)
        records.append((field, extra[pos + 4 : pos + 4 + length]))
        pos += 4 + length
    return records


def _extras_disagree(central: bytes, local: bytes) -> str:
    """Why a member's local extra field says otherwise than its central one ('' when they agree; gate round 16).

    Python's zipfile (pip, installer, twine) reads neither; `unzip` takes a member's modification time from the local
    extended timestamp and, with -X, its owner from the local Unix record; the zip crate (uv) reads the central
    records, or the local ones when it streams a wheel. So the two headers must hold the same records in the same
    order, each saying the same: the central extended timestamp holds the modification time alone (APPNOTE's
    Info-ZIP notes) and the central old Unix record the times alone, so there the central record must be the local
    one's start, with the same flags; every other record is byte for byte the same. Hand-written: no library reads
    both headers' extra fields."""
    theirs, ours = _records(local), _records(central)
    if [f for f, _ in theirs] != [f for f, _ in ours]:
        return (
            f"its local header's extra records ({', '.join(f'{f:#06x}' for f, _ in theirs) or 'none'}) are not the "
            f"central directory's ({', '.join(f'{f:#06x}' for f, _ in ours) or 'none'}): `unzip` applies the local "
            "ones (a time, an owner), zipfile reads none, the zip crate the central ones"
        )
    for (field, local_data), (_, central_data) in zip(theirs, ours):
        if field == 0x5455:  # flags, then the times flagged (local) or the modification time alone (central)
            same = local_data[:1] == central_data[:1] and local_data[: len(central_data)] == central_data
        elif field == 0x5855:  # times, then the owner (local only)
            same = local_data[: len(central_data)] == central_data and len(central_data) in (8, len(local_data))
        else:
            same = local_data == central_data
        if not same:
            return (
                f"its local extra record {field:#06x} says {local_data.hex()}, the central directory's "
                f"{central_data.hex()}: `unzip` applies the local one (a modification time, an owner), zipfile and "
                "pip read neither, the zip crate the central one"
            )
    return ""


def owners(extra: bytes) -> list[tuple[int, int] | None]:
    """The (uid, gid) each Unix owner record of a well-formed extra field gives, None for one not laid out as its
    format says: the new record (0x7875: version 1, then a size byte and a little-endian id of that size, for the uid
    and then the gid) and the old one's local form (0x5855: two times, then a 2-byte uid and gid). `unzip -X`, run as
    root, hands the file to that owner. Hand-written: zipfile skips both records."""
    found: list[tuple[int, int] | None] = []
    for field, data in _records(extra):
        if field == 0x7875:
            ids: list[int] = []
            pos, laid_out = 1, data[:1] == b"\x01"
            while laid_out and len(ids) < 2:
                size = data[pos] if pos < len(data) else 0
                laid_out = 1 <= size <= 8 and pos + 1 + size <= len(data)
                ids.append(int.from_bytes(data[pos + 1 : pos + 1 + size], "little"))
                pos += 1 + size
            found.append((ids[0], ids[1]) if laid_out and pos == len(data) else None)
        elif field == 0x5855 and len(data) > 8:
            found.append(struct.unpack_from("<HH", data, 8) if len(data) == 12 else None)
    return found


class Unreadable(Exception):
    """A member whose bytes are not what its entry declares: ``str()`` says how."""


class Padded(Unreadable):
    """A member whose bytes are what its entry declares, in a deflate stream padded past what a compressor writes."""


# A deflate stream may spend bytes that inflate to nothing: empty stored blocks (5 bytes each, 5 free bits in the
# first), or blocks of Huffman tables and matches chosen for what they spell rather than for their size. Every
# inflater (zlib for pip, installer and twine; the Rust inflaters uv uses) reads past them, so a member of a few bytes
# could carry hundreds of megabytes that no tool shows (gate round 14). The deflate writers wheels and sdists are made
# with (zlib at its default level in Python's zipfile, gzip and tarfile, so hatchling, setuptools and pip; miniz in the
# zip crate) write streams no longer than zlib's fastest setting does, give or take a little; a stream more than a
# quarter and 64 bytes longer than zlib's level 1 makes of the same bytes is padded. What this leaves: a writer that
# deflates at level 0 (stored blocks) is refused too, and bytes within that margin, or in how a stream of a fair
# length is coded, go unseen (no bound on length sees them). Hand-written because no library says how long a deflate
# stream of some bytes may be; deflating them once more, at level 1, is the measure.
PADDING_SLACK = 0.25, 64  # the share and the bytes a stream may exceed zlib's level 1 by


def deflate_padding(stream_size: int, data: bytes) -> str:
    """Why a deflate stream of ``stream_size`` bytes for ``data`` is padded past what compressors write ('' if not)."""
    packer = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS)
    fastest = len(packer.compress(data)) + len(packer.flush())
    share, extra = PADDING_SLACK
    if stream_size <= fastest + int(fastest * share) + extra:
        return ""
    return (
        f"a deflate stream of {stream_size} bytes for {len(data)} bytes that zlib's fastest setting deflates into "
        f"{fastest}: more than {share:.0%} and {extra} bytes longer than a compressor writes them, the rest is padding "
        "(empty or needless blocks) that every inflater reads past, bytes carried into the upload unjudged"
    )


_CHUNK = 1 << 16


def inflate(data: bytes, entry: ZipEntry, budget: int) -> bytes:
    """The member's bytes, inflated through a cap at its declared size and at ``budget``; raises Unreadable."""
    raw = memoryview(data)[entry.data_offset : entry.data_offset + entry.compressed]
    if entry.size > budget:
        raise Unreadable(
            f"declares {entry.size} bytes, past what is left ({max(budget, 0)}) of what the dists of one run may "
            "inflate together"
        )
    if entry.method == STORED:
        out = bytes(raw)
    elif entry.method == DEFLATED:
        out = _inflate_capped(raw, entry.size)
    else:
        raise Unreadable(f"compression method {entry.method} is not read")
    if len(out) != entry.size:
        raise Unreadable(f"inflates to {len(out)} bytes; its entry declares {entry.size}")
    if zlib.crc32(out) != entry.crc:
        raise Unreadable("CRC-32 differs from its entry's: the bytes were altered")
    padded = deflate_padding(entry.compressed, out) if entry.method == DEFLATED else ""
    if padded:
        raise Padded(padded)
    return out


# zlib's errors for streams that older inflaters read on (gate round 43): Info-ZIP's `unzip` and GNU gzip copy a
# distance past the start of the output from their window (zeros, or in `unzip`, extracting every member, the previous
# member's bytes) and take a code length repeat with none before it for a repeat of 0. Measured: `unzip` wrote a member
# so coded byte for byte as the repository's file, and GNU gzip and GNU tar unpacked an sdist so coded as the
# project's, while zlib, so pip, installer, tarfile and uv, refuse both.
LENIENTLY_READ = {
    "invalid distance too far back": "a distance past the start of the output, which Info-ZIP's unzip and GNU gzip "
    "copy from their window (zeros, or an earlier member's bytes)",
    "invalid bit length repeat": "a code length repeat with none before it, which Info-ZIP's unzip and GNU gzip read "
    "as a repeat of 0",
}


def lenient_inflaters(exc: zlib.error) -> str:
    """What, of zlib's error ``exc``, Info-ZIP's `unzip` and GNU gzip read on anyway ('' for an error they share)."""
    for error, what in LENIENTLY_READ.items():
        if error in str(exc):
            return f" ({what}: one stream read two ways)"
    return ""


def _inflate_capped(raw: memoryview, declared: int) -> bytes:
    stream = zlib.decompressobj(-zlib.MAX_WBITS)
    out = bytearray()
    pos = 0
    try:
        while pos < len(raw) and not stream.eof:
            pending = bytes(raw[pos : pos + _CHUNK])
            pos += len(pending)
            while pending and not stream.eof:
                out += stream.decompress(pending, declared - len(out) + 1)  # never more than one byte past
                if len(out) > declared:
                    raise Unreadable(f"inflates past its declared {declared} bytes; abandoned there")
                pending = stream.unconsumed_tail
        if not stream.eof:
            raise Unreadable("its deflate stream is cut short")
    except zlib.error as exc:
        raise Unreadable(f"not a valid deflate stream: {exc}{lenient_inflaters(exc)}") from exc
    if stream.unused_data or pos < len(raw):
        raise Unreadable("bytes follow the end of its deflate stream inside the member")
    return bytes(out)
