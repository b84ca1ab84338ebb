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
        if bytes(data[central + 46: central + 46 + name_len]) == encoded:
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
            rel = info.name[len(old_root) + 1:] if info.name.startswith(f"{old_root}/") else info.name
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
