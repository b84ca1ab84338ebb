"""A tar stream read the one way every tool reads it, or refused: the strict reader behind sdist checks.

Accepted: ustar headers (POSIX, or GNU's magic with nothing in the prefix field), each with a valid checksum,
zeros in its last 12 bytes (padding: uv takes ``tar`` and a NUL there for an xstar header, and refuses it) and
plain octal numbers in every numeric field, written as every reader reads them: digits from the field's first
byte, ended by NUL or space, or no digits at all (``tarfile`` takes a header whose device number it cannot
read for the end of the archive and silently drops every member from there; uv refuses leading spaces, a
field of digits with no end and one of spaces, which ``tarfile`` reads), and no device numbers but zeros (only a
device's are read); regular files and folders, with no link target (uv refuses one, ``tarfile`` ignores it); pax
extended headers only for the modification time and owners, each record once, in one block at most, each written as
tarfile writes one (its own header named ``././@PaxHeader``, every other field empty or zero: G318). Refused: pax
``path``, ``linkpath``, ``size`` or any other record that changes which file a member is or how long it is, an access
or change time (``atime``, ``ctime``: no writer of tarfile's pax headers writes one, and unpackers apply them
otherwise), global pax headers, GNU long-name and long-link members (each makes the next header's own name a lie that
some tools believe), links and devices, base-256 numbers, bytes hidden after the NUL that ends a name (or an owner or
group name, which must be printable ASCII as in a pax header), anything but zeros in the padding that fills
a member's (or a pax header's) last block (Python's ``tarfile`` applies pax records it finds there, e.g. a
``size`` that makes a file longer than its header says), and anything after the end-of-archive marker (two
zero blocks) other than zeros: a second tar there is read by some tools (``tar -i``) and not by others.
Each member's permission bits are kept (``mode``) for the sdist checks.

Hand-written because ``tarfile`` merges pax and GNU extension headers into the member they precede
without saying so, and stops at the first zero block without looking at what follows.
"""

from __future__ import annotations

import re
import tarfile
from dataclasses import dataclass
from typing import Literal

from .checks import Check

BLOCK = 512
MemberKind = Literal["file", "dir", "symlink", "hardlink", "other"]
_POSIX_MAGIC = b"ustar\x0000"
_GNU_MAGIC = b"ustar  \x00"
_PAX_ALLOWED = {"mtime", "atime", "ctime", "uid", "gid", "uname", "gname"}
# the values every unpacker applies: times in seconds since 1970 before the year 5138 (11 digits, an
# optional fraction), ids of up to 8 digits, owner names of printable ASCII
_TIME = re.compile(rb"\d{1,11}(\.\d{1,9})?")
_ID = re.compile(rb"\d{1,8}")
_OWNER = re.compile(rb"[!-~]{0,32}")
# a number field as tarfile and uv both read it: octal digits from the first byte, ended by NUL or space; or none
_NUMBER = re.compile(rb"([0-7]+)[\0 ]+|\0+")
_PAX_VALUE = {"mtime": _TIME, "atime": _TIME, "ctime": _TIME, "uid": _ID, "gid": _ID, "uname": _OWNER, "gname": _OWNER}
# A member's access and change times (gate round 24): read, well formed, then refused. tarfile writes neither (unless
# handed the record: hatchling never is), and GNU tar writes its pax headers under another name (G318), so no sdist
# this gate passes carries one honestly; and each unpacker applies them otherwise: tarfile (pip, with or without the
# `data` filter) sets the access time to the modification time, GNU tar 1.34 leaves the unpacking's own unless it
# unpacks listed-incremental (`tar -G` applies the record: measured), bsdtar (libarchive, macOS's and Windows' `tar`)
# applies it (archive_write_disk), and a change time no unpacker can set. Up to 21 digits each, a member, carried into
# the upload and judged by nothing.
_PAX_UNWRITTEN = {
    "atime": "an access time, which tarfile (pip) never applies, GNU tar only with -G and bsdtar always; no writer of "
    "tarfile's pax headers sets one",
    "ctime": "a change time, which no unpacker can apply (bytes carried unjudged); no writer of tarfile's pax headers "
    "sets one",
}
# every allowed record once, each at its longest, fits in one block (7 records of at most 42 bytes): a larger
# header is no header a tool writes, and refusing it by size answers at once (a header of millions of allowed
# records, within the size limits, took minutes to read record by record)
_PAX_MAX = BLOCK
_KINDS: dict[bytes, MemberKind] = {
    b"0": "file",
    b"\x00": "file",
    b"5": "dir",
    b"1": "hardlink",
    b"2": "symlink",
    b"3": "other",
    b"4": "other",
    b"6": "other",
    b"7": "other",
}
_EXTENSIONS = {
    b"g": "a global pax header (it changes every member after it)",
    b"L": "a GNU long-name member (it replaces the next header's name)",
    b"K": "a GNU long-link member (it replaces the next header's link target)",
    b"N": "an old GNU long-name member",
    b"S": "a GNU sparse member",
    b"V": "a GNU volume header",
    b"M": "a GNU multi-volume continuation",
}


@dataclass(frozen=True)
class TarEntry:
    raw_name: bytes
    kind: MemberKind
    size: int
    data_offset: int
    link: bytes
    mode: int = 0o644  # the header's permission bits (an unpacking pip keeps the executable ones)
    # who owns it once unpacked by root (GNU tar, tarfile): uid, gid, owner and group names (a pax header's, if any)
    owner: tuple[int, int, bytes, bytes] = (0, 0, b"", b"")
    # the owner its ustar header itself names, under any pax header: what an unpacker that reads no pax header applies,
    # and the owner name GNU tar maps to an id before it reads the pax records (gate round 17)
    header_owner: tuple[int, int, bytes, bytes] = (0, 0, b"", b"")


@dataclass(frozen=True)
class TarProblem:
    check: Check
    raw_name: bytes | None
    message: str
    fatal: bool  # the stream as a whole cannot be read one way only: nothing in it is judged further


class _Fatal(Exception):
    def __init__(self, check: Check, raw_name: bytes | None, message: str) -> None:
        super().__init__(message)
        self.problem = TarProblem(check, raw_name, message, True)


def parse(data: bytes, max_members: int) -> tuple[list[TarEntry], list[TarProblem]]:
    """The members of the tar stream ``data`` and the problems found (a fatal one leaves no members)."""
    try:
        return _parse(data, max_members), []
    except _Fatal as exc:
        return [], [exc.problem]


def _parse(data: bytes, max_members: int) -> list[TarEntry]:
    if len(data) % BLOCK:
        raise _Fatal(Check.G311, None, f"the tar stream is {len(data)} bytes, not whole 512-byte blocks")
    entries: list[TarEntry] = []
    pos = 0
    pax_pending: bytes | None = None  # the name of the pax header waiting for its member
    pax_records: dict[str, bytes] = {}  # what it sets
    while True:
        if pos + BLOCK > len(data):
            raise _Fatal(Check.G311, None, "the tar stream ends without its end-of-archive marker (two zero blocks)")
        block = data[pos : pos + BLOCK]
        if block == bytes(BLOCK):
            if pax_pending is not None:
                raise _Fatal(Check.G312, pax_pending, "a pax header followed by the end of the archive")
            if data[pos + BLOCK : pos + 2 * BLOCK] != bytes(BLOCK):
                raise _Fatal(
                    Check.G311,
                    None,
                    f"a lone zero block at offset {pos}, then more: some tools stop there, others read on",
                )
            rest = data[pos + 2 * BLOCK :]
            if rest.strip(b"\x00"):
                first = pos + 2 * BLOCK + len(rest) - len(rest.lstrip(b"\x00"))
                raise _Fatal(
                    Check.G311,
                    None,
                    f"data after the end-of-archive marker, from offset {first} (a second "
                    "archive or hidden members, read by some tools)",
                )
            return entries
        raw_name, kind_flag, size, link, mode, owner = _header(block, pos)
        start = pos + BLOCK
        end = start + -(-size // BLOCK) * BLOCK
        if end > len(data):
            raise _Fatal(Check.G312, raw_name, f"declares {size} bytes, past the end of the stream")
        if data[start + size : end].strip(b"\x00"):
            raise _Fatal(
                Check.G312,
                raw_name,
                f"bytes other than zeros in the padding after its {size} declared bytes: some tools read "
                "them (a pax record there, or content past the declared size)",
            )
        if kind_flag == b"x":
            if pax_pending is not None:
                raise _Fatal(Check.G312, raw_name, "two pax headers in a row")
            if size > _PAX_MAX:
                raise _Fatal(
                    Check.G312,
                    raw_name,
                    f"a pax header of {size} bytes: one that sets only times and owners fits in {_PAX_MAX}",
                )
            written = _pax_block(size)
            if block != written:
                raise _Fatal(Check.G318, raw_name, _pax_block_differs(block, written))
            pax_records = _check_pax(data[start : start + size], raw_name)
            pax_pending = raw_name
        elif kind_flag in _EXTENSIONS:
            raise _Fatal(Check.G313, raw_name, f"{_EXTENSIONS[kind_flag]}: refused")
        elif kind_flag in _KINDS:
            kind = _KINDS[kind_flag]
            if kind != "file" and size:
                raise _Fatal(
                    Check.G312,
                    raw_name,
                    f"a {kind} declaring {size} bytes of content: tools disagree on whether to skip them",
                )
            if kind in ("file", "dir") and link:
                raise _Fatal(
                    Check.G312,
                    raw_name,
                    f"a {kind} with a link target {link[:40]!r}: uv refuses such an sdist, tarfile ignores the target",
                )
            header_owner = owner
            if pax_pending is not None and "mtime" in pax_records:
                said = _octal(block[136:148], raw_name, "mtime")  # read once already: well formed
                if said not in _mtime_shadows(pax_records["mtime"]):
                    raise _Fatal(
                        Check.G312,
                        raw_name,
                        f"its ustar header's modification time {said} is not its pax header's "
                        f"{pax_records['mtime'].decode()} in whole seconds (or 0, as tarfile writes it past the "
                        "field): tarfile, GNU tar and bsdtar apply the pax time, an unpacker that reads no pax time "
                        "(BusyBox tar) the header's, so one time is said two ways",
                    )
            if pax_pending is not None:  # tarfile, GNU tar and bsdtar apply a pax header's owner over the header's
                owner = (
                    int(pax_records.get("uid", owner[0])),
                    int(pax_records.get("gid", owner[1])),
                    pax_records.get("uname", owner[2]),
                    pax_records.get("gname", owner[3]),
                )
            entries.append(TarEntry(raw_name, kind, size, start, link, mode, owner, header_owner))
            pax_pending, pax_records = None, {}
            if len(entries) > max_members:
                raise _Fatal(Check.G314, None, f"more than {max_members} members; the limit is {max_members}")
        else:
            raise _Fatal(Check.G313, raw_name, f"member type {kind_flag!r} is not a file or a folder")
        pos = end


# A member's modification time said twice (gate round 18): a pax `mtime` record, which tarfile, GNU tar and bsdtar
# apply, and the ustar header's own field, which an unpacker that reads no pax time applies (BusyBox tar reads a pax
# header's path and link only). Writers put the pax time's whole seconds in the field: tarfile rounds it (or writes 0,
# past what the field holds, or for a pax time given to it as a record), GNU tar truncates it. Any other value was
# 33 bits a member, carried unjudged, and another time for some unpackers, as the ustar owner under a pax owner was
# (G316). Hand-written: tarfile keeps the pax time and drops the header's.
def _mtime_shadows(pax_mtime: bytes) -> set[int]:
    """The values a writer puts in the ustar mtime field under a pax mtime (already found well formed)."""
    whole, _, fraction = pax_mtime.partition(b".")
    seconds = int(whole)
    return {0, seconds} | ({seconds + 1} if fraction[:1] >= b"5" else set())


# The one pax header block tarfile writes (hatchling and setuptools write sdists with tarfile): every field empty or
# zero but the name, the type and the size. Its other fields (name, link, prefix, mode, owner, time) are read by no pax
# reader, yet a reader that knows no pax header extracts it as a file (POSIX: an unknown type is a regular file) of
# that name, link, mode and owner: 500 bytes a member that tarfile, GNU tar and uv skip unjudged, and a name of its own
# that may climb out with '..' or overwrite a tracked file (gate round 17). The expected block is tarfile's own writing.
PAX_NAME = b"././@PaxHeader"


def _pax_block(size: int) -> bytes:
    info = tarfile.TarInfo(PAX_NAME.decode())
    info.type, info.size, info.mode = tarfile.XHDTYPE, size, 0
    return info.tobuf(tarfile.USTAR_FORMAT)


_BLOCK_FIELDS = {  # offset -> the ustar field there, for the message
    0: "name",
    100: "mode",
    108: "uid",
    116: "gid",
    124: "size",
    136: "mtime",
    148: "checksum",
    156: "type",
    157: "link name",
    257: "magic",
    265: "owner name",
    297: "group name",
    329: "device major",
    337: "device minor",
    345: "prefix",
    500: "padding",
}


def _pax_block_differs(block: bytes, written: bytes) -> str:
    fields = []
    for lo, hi in zip(_BLOCK_FIELDS, [*list(_BLOCK_FIELDS)[1:], BLOCK]):
        if block[lo:hi] != written[lo:hi] and _BLOCK_FIELDS[lo] != "checksum":
            fields.append(f"{_BLOCK_FIELDS[lo]} {block[lo:hi].rstrip(bytes(1))[:40]!r}")
    return (
        f"a pax header whose own header is not the one tarfile writes ({PAX_NAME.decode()!r}, every other field empty "
        f"or zero): {', '.join(fields) or 'its checksum'}. No pax reader reads those fields; an unpacker that knows no "
        "pax header writes it as a file of that name, link, mode and owner"
    )


def _header(block: bytes, pos: int) -> tuple[bytes, bytes, int, bytes, int, tuple[int, int, bytes, bytes]]:
    """(name, type flag, size, link target, mode, owner) of one header block, once it is found well formed."""
    name = _text(block[0:100], None, "name", pos)
    magic = block[257:265]
    if magic not in (_POSIX_MAGIC, _GNU_MAGIC):
        raise _Fatal(Check.G313, name, f"not a ustar header (magic {magic!r}, at offset {pos})")
    stored = _octal(block[148:156], name, "checksum")
    unsigned = sum(block[:148]) + 8 * 0x20 + sum(block[156:])
    if stored != unsigned:  # POSIX's unsigned sum only: some readers (uv) refuse the old signed one
        raise _Fatal(Check.G312, name, f"header checksum {stored} does not match its bytes ({unsigned})")
    if magic == _POSIX_MAGIC:
        prefix = _text(block[345:500], name, "prefix", pos)
        full = prefix + b"/" + name if prefix else name
    else:
        if block[345:500].strip(b"\x00"):
            raise _Fatal(
                Check.G312,
                name,
                "a GNU header with data in its prefix field, which POSIX tools read as part of the name",
            )
        full = name
    if block[500:].strip(b"\x00"):
        raise _Fatal(
            Check.G312,
            full,
            f"bytes {block[500:]!r} in the padding that ends the header at offset {pos}: tarfile ignores them, uv "
            "reads 'tar\\0' there as an xstar header and refuses the sdist",
        )
    # every number tarfile parses, device numbers too: one it cannot read ends its archive there, silently
    numbers = {
        "uid": (108, 116),
        "gid": (116, 124),
        "mtime": (136, 148),
        "devmajor": (329, 337),
        "devminor": (337, 345),
    }
    values = {field: _octal(block[lo:hi], full, field) for field, (lo, hi) in numbers.items()}
    # a device's numbers: read for a character or block device only, which no sdist holds (refused below); on a file
    # or a folder no unpacker reads them, so 14 octal digits a header were carried unjudged (gate round 15)
    if (values["devmajor"] or values["devminor"]) and block[156:157] not in (b"3", b"4"):
        raise _Fatal(
            Check.G312,
            full,
            f"device numbers {values['devmajor']},{values['devminor']} on a member that is no device (type "
            f"{block[156:157]!r}): no unpacker reads them, `tar -tv` does not show them",
        )
    # the owner and group names: read by no unpacker of an sdist (pip, uv), printed by `tar -tv` as they are, so bytes
    # after their NUL, or escape sequences that repaint a reviewer's terminal, passed unjudged; held to the printable
    # ASCII a pax header's uname and gname must be (gate round 14)
    names = []
    for field, (lo, hi) in {"owner name": (265, 297), "group name": (297, 329)}.items():
        owner = _text(block[lo:hi], full, field, pos)
        names.append(owner)
        if not _OWNER.fullmatch(owner):
            raise _Fatal(
                Check.G312,
                full,
                f"{field} field {owner!r} is not printable ASCII (`tar -tv` prints it as it is, an escape sequence "
                "included; no unpacker reads it)",
            )
    mode = _octal(block[100:108], full, "mode")
    size = _octal(block[124:136], full, "size")
    link = _text(block[157:257], full, "link name", pos)
    return full, block[156:157], size, link, mode, (values["uid"], values["gid"], names[0], names[1])


def _text(field: bytes, name: bytes | None, what: str, pos: int) -> bytes:
    value, _, rest = field.partition(b"\x00")
    if rest.strip(b"\x00"):
        raise _Fatal(Check.G312, name or value, f"bytes after the NUL that ends its {what} (header at offset {pos})")
    return value


def _octal(field: bytes, name: bytes | None, what: str) -> int:
    if field[:1] and field[0] & 0x80:
        raise _Fatal(Check.G313, name, f"a base-256 {what} field: refused (a member this large has no place here)")
    number = _NUMBER.fullmatch(field)
    if number is None:
        raise _Fatal(
            Check.G312,
            name,
            f"{what} field {field!r} is not an octal number written as every reader reads one (digits from its first "
            "byte, ended by NUL or space: tarfile also reads leading spaces, a field of digits with no end or one of "
            "spaces, uv refuses them)",
        )
    return int(number.group(1), 8) if number.group(1) else 0


def _check_pax(payload: bytes, header_name: bytes) -> dict[str, bytes]:
    """Refuse a pax header unless it only sets times and owners, each once (records: ``LEN KEY=VALUE\\n``); what it
    sets."""
    if not payload:
        raise _Fatal(Check.G312, header_name, "a pax header with no record (uv refuses such an sdist)")
    seen: dict[str, bytes] = {}
    pos = 0
    while pos < len(payload):
        space = payload.find(b" ", pos)
        # a record's length in at most 12 digits (a pax header is a few hundred bytes): no huge int parsed
        if space < 0 or not payload[pos:space].isdigit() or space - pos > 12:
            raise _Fatal(Check.G312, header_name, "a malformed pax record")
        length = int(payload[pos:space])
        record = payload[space + 1 : pos + length]
        if length <= space - pos + 1 or pos + length > len(payload) or not record.endswith(b"\n") or b"=" not in record:
            raise _Fatal(Check.G312, header_name, "a malformed pax record")
        key_bytes, value = record[:-1].split(b"=", 1)
        key = key_bytes.decode("utf-8", "replace")
        if key not in _PAX_ALLOWED:
            raise _Fatal(
                Check.G313,
                header_name,
                f"a pax header sets {key!r} for the next member: its name, link or "
                "size would differ from what its own header says",
            )
        if key in seen:
            raise _Fatal(
                Check.G312,
                header_name,
                f"a pax header that sets {key!r} twice: tarfile applies the last, uv refuses the sdist",
            )
        seen[key] = value
        if not _PAX_VALUE[key].fullmatch(value):
            raise _Fatal(
                Check.G312,
                header_name,
                f"a pax {key} of {value[:40]!r}: not one that every unpacker can apply (pip's tarfile fails on "
                "a time past its platform's range)",
            )
        if key in _PAX_UNWRITTEN:
            raise _Fatal(Check.G313, header_name, f"a pax header that sets {key!r}: {_PAX_UNWRITTEN[key]}")
        pos += length
    return seen
