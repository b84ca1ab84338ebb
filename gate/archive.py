"""Opening a wheel or an sdist safely: its members as data, the G3xx safety findings, bounded reads.

A wheel's members are judged from the zip's central directory before any is inflated; a member that
is too large, too compressed, encrypted or not a regular file is never read. An sdist (tar.gz) is one
compressed stream, so it is inflated once, counting, and abandoned as soon as it grows past the
limits. Anything that is not an archive at all is a :class:`GateError`.
"""

from __future__ import annotations

import hashlib
import io
import re
import stat
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .checks import Check, Finding, GateError, Limits

Kind = Literal["wheel", "sdist"]
MemberKind = Literal["file", "dir", "symlink", "hardlink", "other"]

_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Member:
    """One entry of an archive as its directory declares it (nothing inflated yet)."""

    name: str
    size: int  # declared uncompressed size
    compressed: int | None  # zip: compressed size; tar.gz: None (one stream for all members)
    kind: MemberKind
    link: str | None = None  # a link's target, when the archive says


@dataclass(frozen=True)
class Digest:
    sha256: bytes
    size: int

    @property
    def hex(self) -> str:
        return self.sha256.hex()


def dist_kind(path: Path) -> Kind | None:
    """``wheel`` or ``sdist`` by file name (what twine and PyPI go by), else None."""
    name = path.name.lower()
    if name.endswith(".whl"):
        return "wheel"
    if name.endswith(".tar.gz"):
        return "sdist"
    return None


class Archive:
    """A wheel or sdist opened for checking: members, safety findings, and reads of safe members."""

    kind: Kind

    def __init__(self, path: Path, members: list[Member], findings: list[Finding], limits: Limits) -> None:
        self.path = path
        self.dist = path.name
        self.members = tuple(members)
        self.findings = findings  # G3xx found so far (reads may add G309)
        self.files = {m.name: m for m in members if m.kind != "dir"}  # last one wins, as when extracting
        self._unsafe = _safety(self, limits)
        self._digests: dict[str, Digest | None] = {}

    def fail(self, check: Check, path: str | None, message: str) -> None:
        self.findings.append(Finding(check, self.dist, path, message))

    @property
    def safe(self) -> bool:
        """No G3xx finding: only then is the archive installed by the smoke."""
        return not any(f.check.name.startswith("G3") for f in self.findings)

    @property
    def bounded(self) -> bool:
        """No size or ratio finding (G306-G308): only then may other tools (twine, check-wheel-contents),
        which inflate what they read, open the archive."""
        return not any(f.check in (Check.G306, Check.G307, Check.G308) for f in self.findings)

    def read(self, name: str) -> bytes | None:
        """The bytes of one regular, sane member; None (with a finding where new) when it cannot be read."""
        member = self.files.get(name)
        if member is None or member.kind != "file" or name in self._unsafe:
            return None
        try:
            return self._read(name)
        except _UnreadableMember as exc:
            self._unsafe.add(name)
            self.fail(Check.G309, name, str(exc))
            return None

    def digest(self, name: str) -> Digest | None:
        if name not in self._digests:
            data = self.read(name)
            self._digests[name] = None if data is None else Digest(hashlib.sha256(data).digest(), len(data))
        return self._digests[name]

    def _read(self, name: str) -> bytes:
        raise NotImplementedError


class _UnreadableMember(Exception):
    pass


class WheelArchive(Archive):
    kind: Kind = "wheel"

    def __init__(self, path: Path, limits: Limits) -> None:
        try:
            self._zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise GateError(f"{path}: not a readable zip archive, so not a wheel: {exc}") from exc
        infos = self._zip.infolist()
        self._infos = {info.filename: info for info in infos}
        members = [Member(i.filename, i.file_size, i.compress_size, _zip_kind(i)) for i in infos]
        findings: list[Finding] = []
        super().__init__(path, members, findings, limits)
        for info in infos:
            if info.flag_bits & 0x1:
                self._unsafe.add(info.filename)
                self.fail(Check.G309, info.filename, "encrypted; a wheel's members must be readable")

    def _read(self, name: str) -> bytes:
        info = self._infos[name]
        try:
            with self._zip.open(info) as fh:  # reads at most the declared size, then checks the CRC
                return fh.read()
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError, zlib.error) as exc:
            raise _UnreadableMember(f"cannot be inflated: {exc}") from exc

    def close(self) -> None:
        self._zip.close()


class SdistArchive(Archive):
    kind: Kind = "sdist"

    def __init__(self, path: Path, limits: Limits) -> None:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise GateError(f"{path}: cannot be read: {exc}") from exc
        findings: list[Finding] = []
        data = _inflate_gzip(path, raw, limits, findings)
        self.refused_unread = data is None
        self._data: dict[str, bytes] = {}
        members: list[Member] = []
        if data is not None:  # else refused already: nothing inside is looked at
            try:
                with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
                    for info in tar:
                        members.append(_tar_member(info))
                        if info.isreg() and info.size <= limits.member_size:
                            extracted = tar.extractfile(info)
                            if extracted is not None:
                                self._data[info.name] = extracted.read()
            except tarfile.TarError as exc:
                raise GateError(f"{path}: the gzip stream is not a tar archive, so not an sdist: {exc}") from exc
        super().__init__(path, members, findings, limits)

    def _read(self, name: str) -> bytes:
        return self._data[name]

    def close(self) -> None:
        self._data.clear()


def open_archive(path: Path, limits: Limits) -> WheelArchive | SdistArchive:
    kind = dist_kind(path)
    if kind == "wheel":
        return WheelArchive(path, limits)
    if kind == "sdist":
        return SdistArchive(path, limits)
    raise GateError(f"{path}: not a wheel (.whl) or an sdist (.tar.gz)")


def _zip_kind(info: zipfile.ZipInfo) -> MemberKind:
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "symlink"
    if info.is_dir():
        return "dir"
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG):
        return "other"
    return "file"


def _tar_member(info: tarfile.TarInfo) -> Member:
    kind: MemberKind
    if info.isreg():
        kind = "file"
    elif info.isdir():
        kind = "dir"
    elif info.issym():
        kind = "symlink"
    elif info.islnk():
        kind = "hardlink"
    else:
        kind = "other"
    return Member(info.name, info.size, None, kind, info.linkname or None)


def _inflate_gzip(path: Path, raw: bytes, limits: Limits, findings: list[Finding]) -> bytes | None:
    """The tar inside a tar.gz, or None (with a G307/G308 finding) once it grows past the limits."""
    out = bytearray()
    rest = raw
    try:
        while True:
            stream = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            while not stream.eof:
                piece = stream.decompress(rest, 1 << 20)
                rest = stream.unconsumed_tail
                if not piece and not rest and not stream.eof:
                    raise GateError(f"{path}: the gzip stream is truncated")
                out += piece
                if len(out) >= limits.ratio_from and len(out) > limits.ratio * len(raw):
                    findings.append(Finding(Check.G307, path.name, None,
                                            f"inflates more than {limits.ratio:g}x its {len(raw)} compressed "
                                            f"bytes (reached {len(out)}); abandoned there"))
                    return None
                if len(out) > limits.total_size:
                    findings.append(Finding(Check.G308, path.name, None,
                                            f"inflates past {limits.total_size} bytes; abandoned there"))
                    return None
            rest = stream.unused_data
            if not rest.strip(b"\0"):
                return bytes(out)
            if not rest.startswith(b"\x1f\x8b"):
                raise GateError(f"{path}: unexpected data after the gzip stream")
    except zlib.error as exc:
        raise GateError(f"{path}: not a gzip stream, so not an sdist: {exc}") from exc


def _safety(archive: Archive, limits: Limits) -> set[str]:
    """Record the G301-G308 findings of the archive's directory; return the names never to read."""
    unsafe: set[str] = set()
    seen: dict[str, int] = {}
    folded: dict[str, str] = {}
    total = 0
    for m in archive.members:
        name = m.name
        if name.startswith(("/", "\\")) or _DRIVE.match(name):
            archive.fail(Check.G301, name, "absolute name: extracting it writes outside the target folder")
        if ".." in re.split(r"[/\\]", name):
            archive.fail(Check.G302, name, "a '..' component: extracting it writes outside the target folder")
        if "\\" in name or _CONTROL.search(name):
            archive.fail(Check.G303, name, f"name {name!r} has a backslash or a control character")
        if m.kind in ("symlink", "hardlink", "other"):
            target = f" to {m.link!r}" if m.link else ""
            archive.fail(Check.G304, name, f"a {m.kind}{target}, not a regular file")
            unsafe.add(name)
        key = name.rstrip("/")
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 2:
            archive.fail(Check.G305, name, "appears more than once; which copy is installed depends on the tool")
        elif seen[key] == 1 and key.casefold() in folded and folded[key.casefold()] != key:
            archive.fail(Check.G305, name,
                         f"differs only in case from {folded[key.casefold()]}; they collide on case-insensitive disks")
        folded.setdefault(key.casefold(), key)
        if m.size > limits.member_size:
            archive.fail(Check.G306, name, f"declares {m.size} bytes uncompressed; the limit is {limits.member_size}")
            unsafe.add(name)
        if m.compressed is not None and m.size >= limits.ratio_from and m.size > limits.ratio * max(m.compressed, 1):
            archive.fail(Check.G307, name, f"declares {m.size} bytes from {m.compressed} compressed "
                                           f"(more than {limits.ratio:g}x): refused without inflating it")
            unsafe.add(name)
        total += m.size
    if total > limits.total_size:
        archive.fail(Check.G308, None, f"members declare {total} bytes in all; the limit is {limits.total_size}")
        unsafe.update(m.name for m in archive.members)
    return unsafe
