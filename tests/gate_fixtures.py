"""Damaged copies of the project's own wheel and sdist, one kind of damage per helper, for the gate's tests.

Every copy keeps the original's file name (unless told otherwise), so that only the planted damage
differs. ``record=True`` rewrites RECORD to tell the truth about the damaged members (the damage a
careless or malicious rebuild leaves); ``record=False`` keeps the original RECORD (a lying one).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import stat
import struct
import tarfile
import warnings
import zipfile
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Built:
    wheel: Path
    sdist: Path

    @property
    def version(self) -> str:
        return self.wheel.name.split("-")[1]

    @property
    def dist_info(self) -> str:
        return f"neurobrix-{self.version}.dist-info"

    @property
    def root(self) -> str:
        return self.sdist.name[: -len(".tar.gz")]


def record_text(members: Iterable[tuple[str, bytes]], record_name: str) -> bytes:
    rows = []
    for name, data in members:
        if name == record_name or name.endswith("/"):
            continue
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{name},sha256={digest},{len(data)}")
    rows.append(f"{record_name},,")
    return ("\n".join(rows) + "\n").encode()


def install_wheel(wheel: Path, site: Path) -> Path:
    """``wheel`` installed by ``installer`` (PyPA's installer, which writes the RECORD pip writes) into the site folder
    ``site`` (purelib and platlib there, scripts, headers and data below it); returns ``site``."""
    import sys

    from installer import install
    from installer.destinations import SchemeDictionaryDestination
    from installer.sources import WheelFile

    scheme = {key: str(site / key) for key in ("scripts", "headers", "data")}
    destination = SchemeDictionaryDestination(
        {**scheme, "purelib": str(site), "platlib": str(site)}, interpreter=sys.executable, script_kind="posix"
    )
    with WheelFile.open(wheel) as opened:
        install(opened, destination, {})
    return site


def rewrite_wheel(
    src: Path,
    dst: Path,
    *,
    drop: Iterable[str] = (),
    replace: Mapping[str, bytes] | None = None,
    add: Iterable[tuple[str | zipfile.ZipInfo, bytes]] = (),
    record: bool = True,
) -> Path:
    """A copy of the wheel ``src`` at ``dst`` (a folder or a file path) with members dropped, replaced, added."""
    if dst.is_dir():
        dst = dst / src.name
    dropped, replace = set(drop), dict(replace or {})
    with zipfile.ZipFile(src) as original:
        record_name = next(n for n in original.namelist() if n.endswith(".dist-info/RECORD"))
        members: list[tuple[zipfile.ZipInfo, bytes]] = []
        for info in original.infolist():
            if info.filename in dropped or info.filename == record_name:
                continue
            members.append((info, replace.pop(info.filename) if info.filename in replace else original.read(info)))
        old_record = replace.pop(record_name) if record_name in replace else original.read(record_name)
    for name, data in [*replace.items(), *add]:
        info = name if isinstance(name, zipfile.ZipInfo) else zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
        if info.external_attr == 0:
            info.external_attr = (stat.S_IFREG | 0o644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        members.append((info, data))
    new_record = record_text(((i.filename, d) for i, d in members), record_name) if record else old_record
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name" is what one test plants
        with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as out:
            for info, data in members:
                out.writestr(info, data)
            record_info = zipfile.ZipInfo(record_name, date_time=(2026, 1, 1, 0, 0, 0))
            record_info.compress_type = zipfile.ZIP_DEFLATED
            record_info.external_attr = (stat.S_IFREG | 0o644) << 16  # a ZipInfo's own is 0: no mode (G315)
            out.writestr(record_info, new_record)
    return dst


def read_wheel_member(wheel: Path, name: str) -> bytes:
    with zipfile.ZipFile(wheel) as z:
        return z.read(name)


def same_size_change(data: bytes) -> bytes:
    """Other bytes of the same length (a digit or a letter changed), as a silent edit would be."""
    for old, new in ((b"1", b"2"), (b"2", b"3"), (b"a", b"b"), (b"e", b"f")):
        if old in data:
            return data.replace(old, new, 1)
    raise ValueError("nothing to change")


def declare_size(wheel: Path, name: str, size: int) -> None:
    """Rewrite ``name``'s declared uncompressed size in the zip (central directory and local header):
    the shape of a zip bomb, whose directory promises far more than its few compressed bytes."""
    data = bytearray(wheel.read_bytes())
    encoded = name.encode()
    start = 0
    while True:
        central = data.find(b"PK\x01\x02", start)
        if central < 0:
            raise ValueError(f"{name} not in the central directory")
        name_len = struct.unpack_from("<H", data, central + 28)[0]
        if bytes(data[central + 46 : central + 46 + name_len]) == encoded:
            break
        start = central + 4
    struct.pack_into("<I", data, central + 24, size)
    local = struct.unpack_from("<I", data, central + 42)[0]
    struct.pack_into("<I", data, local + 22, size)
    wheel.write_bytes(bytes(data))


def rewrite_sdist(
    src: Path,
    dst: Path,
    *,
    drop: Iterable[str] = (),
    drop_under: Iterable[str] = (),
    replace: Mapping[str, bytes] | None = None,
    add: Mapping[str, bytes] | None = None,
    root: str | None = None,
) -> Path:
    """A copy of the sdist ``src`` with members (named without the top folder) dropped, replaced or
    added, optionally under another top folder ``root`` (and file name ``root.tar.gz``)."""
    old_root = src.name[: -len(".tar.gz")]
    root = root or old_root
    dst = dst / f"{root}.tar.gz" if dst.is_dir() else dst
    dropped, under = set(drop), tuple(drop_under)
    replace, add = dict(replace or {}), dict(add or {})
    buffer = io.BytesIO()
    with tarfile.open(src) as original, tarfile.open(fileobj=buffer, mode="w") as out:
        for info in original.getmembers():
            rel = info.name[len(old_root) + 1 :] if info.name.startswith(f"{old_root}/") else info.name
            if rel in dropped or rel.startswith(under):
                continue
            data = original.extractfile(info).read() if info.isreg() else b""  # type: ignore[union-attr]
            data = replace.pop(rel, data)
            copy = tarfile.TarInfo(f"{root}/{rel}" if rel != old_root else root)
            copy.size, copy.mode, copy.type = len(data), info.mode, info.type
            out.addfile(copy, io.BytesIO(data) if info.isreg() else None)
        for rel, data in [*replace.items(), *add.items()]:
            copy = tarfile.TarInfo(f"{root}/{rel}")
            copy.size, copy.mode = len(data), 0o644
            out.addfile(copy, io.BytesIO(data))
    dst.write_bytes(gzip.compress(buffer.getvalue(), mtime=0))
    return dst


def read_sdist_member(sdist: Path, rel: str) -> bytes:
    root = sdist.name[: -len(".tar.gz")]
    with tarfile.open(sdist) as tar:
        extracted = tar.extractfile(f"{root}/{rel}")
        assert extracted is not None
        return extracted.read()


# --- Hand-made archives for the adversarial corpus (tests/test_gate_hostile.py) ---------------------------
# zipfile and tarfile write only well-formed archives; an attacker does not. These builders write every
# header byte themselves, so that a test can make the central directory and a local header disagree, hide
# an entry, add bytes around the archive, or use a compression method or an extra field the gate refuses.


@dataclass
class RawMember:
    """One zip member as it will be written, with every field an attacker may set apart from the others."""

    name: bytes
    data: bytes
    method: int = zipfile.ZIP_DEFLATED
    mode: int = stat.S_IFREG | 0o644
    flags: int = 0
    extra: bytes = b""  # central directory extra field
    local_extra: bytes | None = None  # the local header's (default: the same as the central one)
    local_name: bytes | None = None  # the local header's name (default: the same)
    compressed: bytes | None = None  # the bytes stored (default: data, compressed by ``method``)
    size: int | None = None  # declared uncompressed size (default: len(data))
    crc: int | None = None  # declared CRC-32 (default: the data's)
    comment: bytes = b""
    listed: bool = True  # in the central directory (False: a local entry only some tools see)
    local_size: int | None = None  # the local header's declared size (default: the central one)

    def stored(self) -> bytes:
        if self.compressed is not None:
            return self.compressed
        if self.method == zipfile.ZIP_STORED:
            return self.data
        if self.method == zipfile.ZIP_DEFLATED:
            packer = zlib.compressobj(6, zlib.DEFLATED, -15)
            return packer.compress(self.data) + packer.flush()
        if self.method == zipfile.ZIP_BZIP2:
            import bz2

            return bz2.compress(self.data)
        if self.method == zipfile.ZIP_LZMA:
            import lzma

            # zip's LZMA member: a 4-byte header (LZMA SDK version, properties size), the properties, raw LZMA1
            lzma_filter = {"id": lzma.FILTER_LZMA1}
            props = lzma._encode_filter_properties(lzma_filter)  # type: ignore[attr-defined]
            packed = lzma.compress(self.data, format=lzma.FORMAT_RAW, filters=[lzma_filter])
            return struct.pack("<BBH", 9, 4, len(props)) + props + packed
        raise ValueError(f"no compressor for method {self.method}")


def raw_zip(members: Iterable[RawMember], *, before: bytes = b"", after: bytes = b"", comment: bytes = b"") -> bytes:
    """A zip of ``members`` written header by header, with ``before`` and ``after`` around it."""
    out = bytearray(before)
    central = bytearray()
    count = 0
    for m in members:
        stored = m.stored()
        crc = zlib.crc32(m.data) if m.crc is None else m.crc
        size = len(m.data) if m.size is None else m.size
        local_name = m.name if m.local_name is None else m.local_name
        local_extra = m.extra if m.local_extra is None else m.local_extra
        offset = len(out)
        out += struct.pack(
            "<4s5H3L2H",
            b"PK\x03\x04",
            20,
            m.flags,
            m.method,
            0,
            0x5C21,
            crc,
            len(stored),
            size if m.local_size is None else m.local_size,
            len(local_name),
            len(local_extra),
        )
        out += local_name + local_extra + stored
        if m.listed:
            central += struct.pack(
                "<4s6H3L5H2L",
                b"PK\x01\x02",
                0x0314,
                20,
                m.flags,
                m.method,
                0,
                0x5C21,
                crc,
                len(stored),
                size,
                len(m.name),
                len(m.extra),
                len(m.comment),
                0,
                0,
                m.mode << 16,
                offset,
            )
            central += m.name + m.extra + m.comment
            count += 1
    start = len(out)
    out += central
    out += struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, len(central), start, len(comment)) + comment
    return bytes(out + after)


def wheel_members(wheel: Path) -> list[RawMember]:
    """The members of a well-formed wheel, ready to be damaged and written back with :func:`raw_zip`."""
    with zipfile.ZipFile(wheel) as z:
        return [RawMember(i.filename.encode(), z.read(i)) for i in z.infolist()]


def with_true_record(members: list[RawMember]) -> list[RawMember]:
    """``members`` with RECORD rewritten to tell the truth about each (what any attacker can do)."""
    record = next(m for m in members if m.name.endswith(b".dist-info/RECORD"))
    text = record_text(
        ((m.name.decode("utf-8", "replace"), m.data) for m in members if m is not record), record.name.decode()
    )
    return [m for m in members if m is not record] + [RawMember(record.name, text)]


@dataclass
class RawTarMember:
    """One tar member: a file unless told otherwise, with the pax or GNU headers an attacker may put before it."""

    name: str
    data: bytes = b""
    type: bytes = tarfile.REGTYPE
    linkname: str = ""
    pax: Mapping[str, str] | None = None  # a pax extended header before it
    gnu_long_name: str | None = None  # a GNU long-name member before it (the name some tools use instead)
    mode: int = 0o644
    uid: int = 0  # the owner a root unpacker gives it (hatchling writes 0 and no names)
    gid: int = 0
    uname: str = ""
    gname: str = ""
    # bytes written over its ustar header at these offsets, and over its pax header's own header (the checksum then
    # made true): what no tarfile writer writes, a header that says other than its pax records, a pax header of another
    # name
    header: Mapping[int, bytes] | None = None
    pax_header: Mapping[int, bytes] | None = None


def _patched(block: bytes, patches: Mapping[int, bytes] | None) -> bytes:
    """A header block with ``patches`` written over it and its checksum made true again (POSIX's unsigned sum)."""
    if not patches:
        return block
    out = bytearray(block)
    for at, value in patches.items():
        out[at : at + len(value)] = value
    out[148:156] = b" " * 8
    out[148:156] = b"%06o\0 " % sum(out)
    return bytes(out)


def raw_tar(members: Iterable[RawTarMember], *, after: bytes = b"") -> bytes:
    """A tar stream (ending in two zero blocks, padded to a 10 KiB record), then ``after``."""
    out = bytearray()
    for m in members:
        info = tarfile.TarInfo(m.name)
        info.size, info.type, info.linkname, info.mode, info.mtime = len(m.data), m.type, m.linkname, m.mode, 0
        info.uid, info.gid, info.uname, info.gname = m.uid, m.gid, m.uname, m.gname
        if m.gnu_long_name is not None:
            long = tarfile.TarInfo("././@LongLink")
            payload = m.gnu_long_name.encode() + b"\0"
            long.size, long.type = len(payload), tarfile.GNUTYPE_LONGNAME
            out += long.tobuf(tarfile.GNU_FORMAT) + payload + bytes(-len(payload) % 512)
        if m.pax is not None:
            info.pax_headers = dict(m.pax)
        written = info.tobuf(tarfile.USTAR_FORMAT if m.pax is None else tarfile.PAX_FORMAT)
        own = len(written) - 512  # the pax header and its records before the member's own block, if any
        if own:
            out += _patched(written[:512], m.pax_header) + written[512:own]
        out += _patched(written[own:], m.header)
        out += m.data + bytes(-len(m.data) % 512)
    out += bytes(1024)
    out += bytes(-len(out) % tarfile.RECORDSIZE)
    return bytes(out + after)


def sdist_members(sdist: Path) -> list[RawTarMember]:
    with tarfile.open(sdist) as tar:
        return [
            RawTarMember(
                i.name,
                tar.extractfile(i).read() if i.isreg() else b"",  # type: ignore[union-attr]
                i.type,
                mode=i.mode,
            )
            for i in tar.getmembers()
        ]


def write_sdist(path: Path, tar: bytes) -> Path:
    """The tar gzipped at zlib's default level 6, not gzip's 9: this checkout's 9 MB sdist tar in 0.12 s of CPU, not
    0.35 s (about 200 sdists a run), the same tar unpacked, a run of zeros still about 1,028 times smaller (at 9 too;
    the ratio bombs need above 100), and this checkout's sdist so written passes the gate with no finding (at 9 too:
    2026-12-07); the built sdist's own bytes are written by the tests that need them."""
    path.write_bytes(gzip.compress(tar, compresslevel=6, mtime=0))
    return path
