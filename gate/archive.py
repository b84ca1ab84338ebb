"""Opening a wheel or an sdist strictly: its members as data, the G3xx findings, capped reads.

A wheel is read by :mod:`gate.zipstrict` and an sdist's tar stream by :mod:`gate.tarstrict`: an
archive that tools could read in more than one way is refused whole (nothing inside it is judged).
A member's name, type and declared size are judged before it is inflated; a member that is too
large, too compressed, encrypted, compressed other than by deflate or not a regular file is never
read, and every other is inflated through a cap at its declared size. An sdist (tar.gz) is one
compressed stream, inflated once, counting, and abandoned as soon as it grows past the limits.
Anything that is not an archive at all is a :class:`GateError`.
"""

from __future__ import annotations

import hashlib
import io
import stat
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from . import names, tarstrict, zipstrict
from .checks import Budget, Check, Finding, GateError, Limits

Kind = Literal["wheel", "sdist"]
GZIP_MAGIC = b"\x1f\x8b"
GZIP_DEFLATE = b"\x08"  # the header's compression method (CM): deflate, the only one RFC 1952 defines
GZIP_FHCRC = 0x02  # the header flag (FLG) bit for a CRC-16 of the header, after its optional fields
GZIP_FRESERVED = 0xE0  # FLG bits RFC 1952 reserves: zlib refuses a stream with any set, Python's gzip ignores them
GZIP_FEXTRA, GZIP_FNAME, GZIP_FCOMMENT = 0x04, 0x08, 0x10  # FLG bits for the header's optional fields
_GZIP_FIXED = 10  # magic, method, flags, time, extra flags, system: the header before its optional fields
MemberKind = Literal["file", "dir", "symlink", "hardlink", "other"]


@dataclass(frozen=True)
class Member:
    """One entry of an archive as its directory declares it (nothing inflated yet)."""

    name: str
    size: int  # declared uncompressed size
    compressed: int | None  # zip: compressed size; tar.gz: None (one stream for all members)
    kind: MemberKind
    link: str | None = None  # a link's target, when the archive says
    executable: bool = False  # what an installer would install as executable
    mode: int | None = None  # tar: the header's permission bits (pip keeps them when it unpacks an sdist)


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


def shown_name(raw: bytes) -> str:
    """A raw member name as a report can show it (undecodable bytes escaped)."""
    return raw.decode("utf-8", "backslashreplace").replace("\x00", "\\x00")


class Archive:
    """A wheel or sdist opened for checking: members, findings, and reads of safe members."""

    kind: Kind

    def __init__(self, path: Path, limits: Limits, budget: Budget | None = None) -> None:
        self.path = path
        self.budget = Budget(limits.total_size) if budget is None else budget  # shared by every archive of a run
        self.dist = path.name
        self.limits = limits
        self.findings: list[Finding] = []
        self.members: tuple[Member, ...] = ()
        self.files: dict[str, Member] = {}
        self.refused_unread = False  # refused whole (a bomb, or an archive read more than one way)
        # why the tools (twine) are not waited on for it: its metadata, refused unparsed by its size, would hold
        # twine's own metadata parse for tens of seconds (gate round 19); '' when they are
        self.tools_skipped = ""
        self._unsafe: set[str] = set()
        self._digests: dict[str, Digest | None] = {}
        # of the bytes judged (read once, by _read_file); the report gives this one. None for a file refused unread,
        # larger than the limits: it is never hashed (gate round 32: a sparse file of 20 GiB, no block on disk, took
        # 150 s and 16 GiB of resident memory to hash twice, and one of terabytes would hold the gate for hours)
        self.sha256: str | None = ""
        self.size = 0  # of the bytes judged

    def fail(self, check: Check, path: str | None, message: str) -> None:
        self.findings.append(Finding(check, self.dist, path, message))

    def _refuse_whole(self) -> None:
        self.refused_unread = True
        self.members = ()
        self.files = {}

    def _admit(self, members: list[Member], unsafe: set[str]) -> None:
        self.members = tuple(members)
        self.files = {m.name: m for m in members if m.kind != "dir"}
        self._unsafe = unsafe | _safety(self, self.limits)

    @property
    def safe(self) -> bool:
        """No G3xx finding: the archive reads one way only, and every member is a sane regular file."""
        return not any(f.check.name.startswith("G3") for f in self.findings)

    def read(self, name: str) -> bytes | None:
        """The bytes of one regular, sane member; None (with a finding where new) when it cannot be read."""
        member = self.files.get(name)
        if member is None or member.kind != "file" or name in self._unsafe or self.refused_unread:
            return None
        try:
            return self._read(name)
        except zipstrict.Unreadable as exc:
            self._unsafe.add(name)
            self.fail(Check.G311 if isinstance(exc, zipstrict.Padded) else Check.G309, name, str(exc))
            return None

    def digest(self, name: str) -> Digest | None:
        if name not in self._digests:
            data = self.read(name)
            self._digests[name] = None if data is None else Digest(hashlib.sha256(data).digest(), len(data))
        return self._digests[name]

    def _read(self, name: str) -> bytes:
        raise NotImplementedError

    def close(self) -> None:
        pass


def _read_file(archive: Archive, limits: Limits) -> bytes | None:
    """The file's bytes, read once (None when larger than the limits: refused unread, G308, and not hashed, since no
    bytes of it were judged and none is uploaded); ``archive.sha256`` becomes their hash."""
    path = archive.path
    try:
        if path.stat().st_size > limits.total_size:
            archive.sha256 = None
            return None
        with path.open("rb") as fh:
            data = fh.read(limits.total_size + 1)
        if len(data) > limits.total_size:  # it grew after stat(): refused unread all the same
            archive.sha256 = None
            return None
    except OSError as exc:
        raise GateError(f"{path}: cannot be read: {exc}") from exc
    archive.sha256 = hashlib.sha256(data).hexdigest()
    archive.size = len(data)
    return data


class WheelArchive(Archive):
    kind: Kind = "wheel"

    def __init__(self, path: Path, limits: Limits, budget: Budget | None = None) -> None:
        super().__init__(path, limits, budget)
        self._entries: dict[str, zipstrict.ZipEntry] = {}
        self._data = b""
        self._cache: dict[str, bytes] = {}
        data = _read_file(self, limits)
        if data is None or len(data) > limits.total_size:
            self.fail(
                Check.G308,
                None,
                f"the file is larger than the total size limit ({limits.total_size} bytes); not opened",
            )
            self._refuse_whole()
            return
        try:
            entries, problems = zipstrict.parse(data, limits.members)
        except zipstrict.NotAZip as exc:
            raise GateError(f"{path}: {exc}, so not a wheel") from exc
        tar_header = _tar_header(data)
        if tar_header:
            self.fail(Check.G320, None, tar_header)
        for problem in problems:
            self.fail(
                problem.check, None if problem.raw_name is None else shown_name(problem.raw_name), problem.message
            )
        if any(p.fatal for p in problems):
            self._refuse_whole()
            return
        self._data = data
        unsafe = {shown_name(p.raw_name) for p in problems if p.raw_name is not None}
        members: list[Member] = []
        for entry in entries:
            name, why = names.decode_zip_name(entry.raw_name, entry.utf8)
            if name is None:
                name = shown_name(entry.raw_name)
                self.fail(Check.G303, name, why)
                unsafe.add(name)
            self._entries[name] = entry
            _zip_mode(self, name, entry)
            _zip_owner(self, name, entry)
            _zip_attributes(self, name, entry)
            members.append(
                Member(
                    name, entry.size, entry.compressed, _zip_kind(self, name, entry, data), executable=entry.executable
                )
            )
        self._admit(members, unsafe)

    def _read(self, name: str) -> bytes:
        if name not in self._cache:
            data = zipstrict.inflate(self._data, self._entries[name], self.budget.left)
            self.budget.take(len(data))
            self._cache[name] = data
        return self._cache[name]

    def close(self) -> None:
        self._cache.clear()
        self._data = b""


# setuid, setgid, sticky, and write for anyone: no build of this project writes them (hatchling writes 644 or 755)
ZIP_SPECIAL_MODE = 0o7000 | 0o002
ZIP_HOSTS = {0: "MS-DOS", 3: "Unix"}  # "version made by" hosts whose modes every installer reads alike (see below)


def _zip_mode(archive: Archive, name: str, entry: zipstrict.ZipEntry) -> None:
    """G315 for a mode that installers and unpackers apply differently (gate round 15). pip and installer read the
    Unix mode in an entry's external attributes whatever host "version made by" names, and apply only its executable
    bits; uv's zip readers take a Unix mode only from an entry made on Unix (the zip crate derives one from the MS-DOS
    attributes on an MS-DOS host, none elsewhere); `unzip` applies every permission bit of a Unix entry (setuid and
    setgid with -K). So a host other than Unix or MS-DOS (zipfile on Windows), an executable mode on an MS-DOS entry,
    or special or world-writable bits make the same member install two ways, and are bits carried unjudged."""
    if entry.host not in ZIP_HOSTS:
        archive.fail(
            Check.G315,
            name,
            f'made on host {entry.host} ("version made by" {entry.made_by:#06x}): pip and installer read its Unix '
            f"mode {entry.mode:o} whatever the host, uv's zip readers only on a Unix entry; this project's wheel is "
            "made on Unix (or on MS-DOS, by zipfile on Windows)",
        )
    elif entry.host == 0 and entry.executable:
        archive.fail(
            Check.G315,
            name,
            f"an executable Unix mode {entry.mode:o} on an entry made on MS-DOS: pip and installer install it "
            "executable, uv reads no Unix mode on an MS-DOS entry and installs it plain",
        )
    if entry.mode & ZIP_SPECIAL_MODE:
        archive.fail(
            Check.G315,
            name,
            f"mode {entry.mode:o}: setuid, setgid, sticky or world-writable bits, which no build of this project "
            "writes: pip, installer and uv apply only the executable bits, `unzip` applies the others (setuid and "
            "setgid with -K)",
        )
    elif not entry.mode:
        # No Unix mode at all (gate round 18): it passed as "none given", yet no tool reads it as none. pip, installer
        # and uv write the file with the installing user's umask (644); distlib's Wheel.install applies the external
        # attributes' permission bits as they are, so it writes the file with mode 000, which no one but root can read,
        # and `unzip` does the same to a file or a folder. That is the mode refused below for an owner that cannot read,
        # spelt 0; hatchling always writes a mode, and zipfile's writestr gives a ZipInfo without one 600.
        archive.fail(
            Check.G315,
            name,
            "no Unix mode (external attributes 0 in their high 16 bits): "
            + (
                "pip, installer and uv skip a folder entry, `unzip` makes it a folder of mode 000, which no one but "
                "root can enter"
                if name.endswith("/")
                else "pip, installer and uv write it 644, distlib's Wheel.install applies the bits as they are "
                "and `unzip` applies them (mode 000: a file no one but root can read)"
            )
            + "; this project's build writes 644 or 755",
        )
    elif ~entry.mode & (0o500 if name.endswith("/") else 0o400):
        archive.fail(
            Check.G315,
            name,
            f"mode {entry.mode:o}: its owner cannot {'list or enter it' if name.endswith('/') else 'read it'}; "
            "installers ignore that, `unzip` applies it",
        )
    elif ~entry.mode & (0o055 if name.endswith("/") else 0o044):
        # Its group or others cannot read it (gate round 18): pip, installer and uv write 644 (755 executable) whatever
        # the mode says, distlib's Wheel.install applies its permission bits as they are and `unzip` applies them, so a
        # package or a table installed for every user (as root, into a shared environment) is one that no other user
        # can import or load. Judged with its sdist too: the rebuild (G508) compares a member's bytes and executable
        # bit, not its other bits.
        archive.fail(
            Check.G315,
            name,
            f"mode {entry.mode:o}: its group or others cannot "
            + (
                "list or enter it; `unzip` applies that, pip, installer and uv skip a folder entry"
                if name.endswith("/")
                else "read it; distlib's Wheel.install and `unzip` apply that (a file other users cannot import or "
                "load), pip, installer and uv write it 644"
            )
            + "; this project's build writes 644 or 755",
        )


# Who owns an unpacked member, and who else may write it (gate round 16). pip, installer and uv write files as the user
# installing, with that user's umask; an unpacker run as root hands each file to the owner its archive names and applies
# its permission bits as written: GNU tar and bsdtar by default (the owner by name where the system knows the name, else
# by number), tarfile's extractall without a filter (Python's default before 3.14) and `unzip -X` (the Info-ZIP Unix
# owner records). This project's build writes owner 0 and no owner name in the sdist, no owner record in the wheel, and
# modes 644 and 755: an owner other than root, or a group write bit, gives another user (a group such as `users`) the
# sources a root build then runs, or the installed package.
ROOT_NAMES = (b"", b"root")  # no name (the id decides: 0), or root's own
GROUP_WRITE = 0o020


def _group_write(archive: Archive, name: str, mode: int) -> None:
    if mode & GROUP_WRITE and not mode & 0o002:  # world-writable is refused already (G315, G509)
        archive.fail(
            Check.G316,
            name,
            f"mode {mode & 0o7777:o}: writable by its group, which no build of this project writes (644 or 755): "
            "GNU tar, tarfile's extractall (Python before 3.14) and `unzip` apply it, so every member of the group "
            "the unpacker gives it can rewrite it; pip and uv ignore it",
        )


def _zip_owner(archive: Archive, name: str, entry: zipstrict.ZipEntry) -> None:
    """G316 for an Info-ZIP Unix owner record naming another owner than root, or one not laid out as its format says,
    in either header, and for a group-writable mode."""
    for where, extra in (("central", entry.extra), ("local", entry.local_extra)):
        for owner in zipstrict.owners(extra):
            if owner is None:
                archive.fail(
                    Check.G316,
                    name,
                    f"a Unix owner record in its {where} header not laid out as its format says: `unzip -X` reads "
                    "an owner from it that the gate cannot confirm",
                )
            elif owner != (0, 0):
                archive.fail(
                    Check.G316,
                    name,
                    f"a Unix owner record in its {where} header naming uid {owner[0]}, gid {owner[1]}: `unzip -X` run "
                    "as root hands the file to that user and group; pip, installer and uv ignore it, and this "
                    "project's build writes no owner",
                )
                break
    _group_write(archive, name, entry.mode)


def _not_root(owner: tuple[int, int, bytes, bytes]) -> bool:
    uid, gid, user, group = owner
    return bool(uid or gid or user not in ROOT_NAMES or group not in ROOT_NAMES)


def _owner_text(owner: tuple[int, int, bytes, bytes]) -> str:
    uid, gid, user, group = owner
    return (
        f"uid {uid} ({user.decode('ascii', 'replace') or 'no name'}), gid {gid} "
        f"({group.decode('ascii', 'replace') or 'no name'})"
    )


def _tar_owner(archive: Archive, name: str, entry: tarstrict.TarEntry) -> None:
    """G316 for an sdist member whose owner (a pax header's over its header's, or its header's own under a pax header
    that says otherwise) is not root's, and for a group-writable mode."""
    if _not_root(entry.owner):
        archive.fail(
            Check.G316,
            name,
            f"owned by {_owner_text(entry.owner)}: GNU tar and tarfile's extractall run as root hand it "
            "to that user and group (by name where the system knows it), who can rewrite the sources before a root "
            "build runs them; this project's build writes owner 0 and no name",
        )
    elif _not_root(entry.header_owner):
        # The owner said two ways (gate round 17): the gate judged the pax header's, which tarfile applies, while GNU
        # tar run as root maps the ustar header's owner and group names to ids before it reads the pax records (a pax
        # uname of root or of nothing leaves `nobody`'s file to nobody), and an unpacker that reads no pax header
        # applies the ustar header's owner whole.
        archive.fail(
            Check.G316,
            name,
            f"its ustar header names {_owner_text(entry.header_owner)} under a pax header that says "
            f"{_owner_text(entry.owner)}: tarfile applies the pax owner, GNU tar run as root the header's owner and "
            "group names (it maps them to ids before it reads the pax records), an unpacker that reads no pax header "
            "the header's owner whole; this project's build writes owner 0 and no name in both",
        )
    _group_write(archive, name, entry.mode)


# MS-DOS attributes (the external attributes' low 16 bits): 0x10 a folder (G304 judges it), 0x20 "archive" (set by
# Windows writers, applied by no unpacker), 0x01 read-only. Others are applied by unpackers (`unzip` on Unix makes a
# read-only member of an MS-DOS entry mode 444 where pip writes 644; 7-Zip and `unzip` on Windows apply read-only,
# hidden and system to an MS-DOS entry) or name what no file in a wheel is (a volume label, a device) or are no
# attribute at all: bits read by no installer. Internal attributes: bit 0, a text file (`unzip -a` converts its line
# ends; Info-ZIP's zip sets it), the others reserved.
DOS_READ_ONLY, DOS_FOLDER, DOS_ARCHIVE = 0x01, 0x10, 0x20
DOS_NAMES = {0x02: "hidden", 0x04: "system", 0x08: "volume label", 0x40: "device", 0x80: "normal"}
INTERNAL_TEXT = 0x0001


def _zip_attributes(archive: Archive, name: str, entry: zipstrict.ZipEntry) -> None:
    """G317 for MS-DOS attributes some unpacker applies otherwise than pip, or that no writer sets, and for reserved
    internal attribute bits (gate round 16). Read-only passes only where the Unix mode says so too (Info-ZIP's zip
    sets it for a file its owner cannot write): then every tool reads one mode."""
    attributes = entry.attributes & ~(DOS_ARCHIVE | DOS_FOLDER)  # the folder bit on a file: G304 says so
    if attributes & DOS_READ_ONLY and entry.mode and not entry.mode & 0o200:
        attributes &= ~DOS_READ_ONLY
    if attributes:
        named = [what for bit, what in DOS_NAMES.items() if attributes & bit]
        if attributes & DOS_READ_ONLY:
            named.insert(0, "read-only (its Unix mode is writable, or none is given)")
        if attributes & 0xFF00:
            named.append(f"bits {attributes & 0xFF00:#06x}, no MS-DOS attribute")
        archive.fail(
            Check.G317,
            name,
            f"MS-DOS attributes {entry.attributes:#06x}: {', '.join(named)}: `unzip` on an MS-DOS entry installs a "
            "read-only file (mode 444), 7-Zip and `unzip` on Windows apply read-only, hidden and system, pip, "
            "installer and uv none of them; this project's build sets none",
        )
    if entry.internal & ~INTERNAL_TEXT:
        archive.fail(
            Check.G317,
            name,
            f"internal attributes {entry.internal:#06x}: bits past the text flag, reserved by the format and read "
            "by no installer (bits carried into the upload unjudged)",
        )


def _zip_kind(archive: Archive, name: str, entry: zipstrict.ZipEntry, data: bytes) -> MemberKind:
    kind = stat.S_IFMT(entry.mode)
    if kind == stat.S_IFLNK:
        return "symlink"
    if name.endswith("/"):
        if entry.size:
            archive.fail(Check.G304, name, f"a folder entry with {entry.size} bytes of content")
            return "other"
        # A folder is never read by pip or installer, so nothing else would notice bytes stored in it: a deflate
        # stream of any content, or a CRC for other bytes, behind a declared size of 0 (`unzip -t` reads them, and
        # reports a bad CRC). Read it as every file is read: it must be an empty member, exactly.
        try:
            zipstrict.inflate(data, entry, 0)
        except zipstrict.Unreadable as exc:
            archive.fail(
                Check.G304,
                name,
                f"a folder entry whose {entry.compressed} stored bytes are not an empty member ({exc}): bytes no "
                "installer reads, which `unzip -t` reads as content",
            )
        return "dir"  # refused either way; still a folder to the checks that follow
    if kind == stat.S_IFDIR:
        archive.fail(Check.G304, name, "a folder mode on a member whose name does not end in '/'")
        return "other"
    if entry.dos_folder:
        archive.fail(
            Check.G304,
            name,
            "the MS-DOS folder attribute on a member whose name does not end in '/': uv (its zip reader up to "
            "0.11.14) reads it as mode 0o40775 and installs the file executable, pip and installer as a plain file",
        )
        return "other"
    if kind not in (0, stat.S_IFREG):
        return "other"
    return "file"


class SdistArchive(Archive):
    kind: Kind = "sdist"

    def __init__(self, path: Path, limits: Limits, budget: Budget | None = None) -> None:
        super().__init__(path, limits, budget)
        self._stream = b""
        self._entries: dict[str, tarstrict.TarEntry] = {}
        raw = _read_file(self, limits)
        if raw is None or len(raw) > limits.total_size:
            self.fail(
                Check.G308,
                None,
                f"the file is larger than the total size limit ({limits.total_size} bytes); not opened",
            )
            self._refuse_whole()
            return
        zip_end = _zip_end_record(raw)
        if zip_end:
            self.fail(Check.G320, None, zip_end)
            self._refuse_whole()
            return
        stream = _inflate_gzip(self, raw, limits)
        if stream is None:  # refused already: nothing inside is looked at
            self._refuse_whole()
            return
        entries, problems = tarstrict.parse(stream, limits.members)
        for problem in problems:
            self.fail(
                problem.check, None if problem.raw_name is None else shown_name(problem.raw_name), problem.message
            )
        if any(p.fatal for p in problems):
            self._refuse_whole()
            return
        self._stream = stream
        unsafe: set[str] = set()
        members: list[Member] = []
        for entry in entries:
            name, why = names.decode_tar_name(entry.raw_name)
            if name is None:
                name = shown_name(entry.raw_name)
                self.fail(Check.G303, name, why)
                unsafe.add(name)
            if entry.kind == "dir" and not name.endswith("/"):
                name += "/"
            self._entries[name] = entry
            _tar_owner(self, name, entry)
            members.append(
                Member(
                    name,
                    entry.size,
                    None,
                    entry.kind,
                    shown_name(entry.link) or None,
                    executable=entry.kind == "file" and bool(entry.mode & 0o111),
                    mode=entry.mode,
                )
            )
        self._admit(members, unsafe)

    def _read(self, name: str) -> bytes:
        entry = self._entries[name]
        return self._stream[entry.data_offset : entry.data_offset + entry.size]

    def close(self) -> None:
        self._stream = b""


# An sdist that is a zip too (gate round 22). pip unpacks a downloaded or local archive as a zip whenever Python's
# `zipfile.is_zipfile` says it is one, before it tries tar and whatever the file's name (`unpack_file` in
# pip/_internal/utils/unpacking.py), and `is_zipfile` asks only for an end-of-central-directory signature and 18 bytes
# after it somewhere in the file's last 64 KiB and 22 bytes. A gzip member's trailer (the tar's CRC-32, which the ustar
# times of a few members steer where an attacker wants it, and its size) and the zeros every unpacker reads past after
# the member spell one: pip then unpacked an empty zip and refused the sdist as no Python project, while tarfile, GNU
# tar, uv and twine read the tar the gate judged; a deflate stream steered to spell a whole zip there (not shown) would
# make pip build another project. `zipfile.is_zipfile` itself is the judge: it is the test pip runs.
#
# Run as pip runs it (gate round 23): on a file, not on bytes in memory. `is_zipfile` also reads a zip64 locator just
# before the end record, and raises `BadZipFile` (no OSError, so not caught) when that locator names another disk: pip
# stops there with a traceback, while tarfile, GNU tar, uv and twine read the tar; the gate stopped too ("internal
# error", exit 2) instead of naming what it found. And where the locator leads before the file's first byte, a file's
# seek fails (OSError: "not a zip") where a BytesIO moves to byte 0 and reads on ("a zip").
class _AsOnDisk(io.BytesIO):
    """``raw`` as zipfile reads a file holding it: a seek before the first byte fails, as on disk."""

    def seek(self, offset: int, whence: int = io.SEEK_SET, /) -> int:
        with self.getbuffer() as view:
            start = {io.SEEK_SET: 0, io.SEEK_CUR: self.tell(), io.SEEK_END: view.nbytes}[whence]
        if start + offset < 0:
            raise OSError(f"seek to {start + offset}: before the file's first byte")
        return super().seek(offset, whence)


def _zip_end_record(raw: bytes) -> str:
    """Why Python's zipfile, and so pip, takes the sdist ``raw`` for a zip archive, or fails on it ('' when neither)."""
    try:
        if not zipfile.is_zipfile(_AsOnDisk(raw)):
            return ""
    except zipfile.BadZipFile as exc:
        return (
            f"Python's zipfile.is_zipfile fails on the file ({exc}: a zip64 locator before a zip end record in its "
            "last 64 KiB): pip, which asks it before it tries tar, stops with a traceback, while tarfile, GNU tar, uv "
            "and twine read the tar"
        )
    at = raw.rfind(zipstrict.EOCD_SIG, max(0, len(raw) - (1 << 16) - 22))
    return (
        f"a zip end-of-central-directory record at offset {at} of its {len(raw)} bytes: Python's zipfile.is_zipfile "
        "takes the file for a zip, and pip, which tries zip before tar whatever the name, unpacks it as one (the zip "
        "that record describes, not the tar), while tarfile, GNU tar, uv and twine read the tar"
    )


def _tar_header(raw: bytes) -> str:
    """Why Python's tarfile takes the wheel ``raw`` for a tar archive too ('' when it does not). PyPI refuses an
    upload that zipfile.is_zipfile and tarfile.is_tarfile both accept ("File is both a zip and a tar file"), and
    tarfile asks only that the first 512 bytes parse as a tar header whose checksum holds: folder entries' local
    headers (mostly NULs, which a number field reads as 0) and their extra records' access and creation times can be
    laid out so (gate round 26). Asked as warehouse asks it, on the file's bytes."""
    if not tarfile.is_tarfile(_AsOnDisk(raw)):
        return ""
    return (
        "Python's tarfile.is_tarfile takes the file for a tar archive as well as a zip (its first 512 bytes parse as "
        'a tar header with a true checksum): PyPI refuses the upload ("File is both a zip and a tar file")'
    )


def open_archive(path: Path, limits: Limits, budget: Budget | None = None) -> WheelArchive | SdistArchive:
    kind = dist_kind(path)
    if kind == "wheel":
        return WheelArchive(path, limits, budget)
    if kind == "sdist":
        return SdistArchive(path, limits, budget)
    raise GateError(f"{path}: not a wheel (.whl) or an sdist (.tar.gz)")


def _inflate_gzip(archive: Archive, raw: bytes, limits: Limits) -> bytes | None:
    """The tar inside a tar.gz, or None (with a G307/G308/G311/G313 finding) once it grows past the limits or
    holds anything after its first gzip member: concatenated members are one stream to Python's gzip and
    pip, but some unpackers (uv) read only the first, so the archive would be read two ways. So would a header
    CRC (FHCRC): Python's gzip skips its two bytes, uv (0.13) inflates from them. A header's extra field, comment or
    file name (other than the tar's own) is skipped by every unpacker, and refused for the bytes it carries."""
    path = archive.path
    if raw[:2] == GZIP_MAGIC and len(raw) > 3 and raw[3] & GZIP_FHCRC:
        archive.fail(
            Check.G313,
            None,
            "a gzip header with a header CRC (FHCRC): Python's gzip (pip) skips its two bytes, uv inflates from "
            "them, so they read different streams",
        )
        return None
    if raw[:2] == GZIP_MAGIC and len(raw) > 3 and raw[3] & GZIP_FRESERVED:
        archive.fail(
            Check.G313,
            None,
            f"a gzip header with reserved flag bits ({raw[3] & GZIP_FRESERVED:#04x}): Python's gzip (pip, twine) "
            "ignores them and unpacks the sdist, zlib refuses the stream",
        )
        return None
    if raw[:2] == GZIP_MAGIC and len(raw) >= _GZIP_FIXED:
        undefined = _gzip_undefined(raw)
        if undefined:
            archive.fail(
                Check.G319,
                None,
                f"a gzip header with {undefined}: a value RFC 1952 does not define, which no gzip writer sets and no "
                "unpacker reads (bytes carried into the upload unjudged)",
            )
            return None
    if raw[:2] == GZIP_MAGIC and len(raw) > 3:
        hidden = _gzip_header_fields(raw, archive.dist)
        if hidden:
            archive.fail(
                Check.G313,
                None,
                f"a gzip header with {'; '.join(hidden)}: bytes no unpacker reads, carried into the upload unjudged "
                "(this project's build writes none of them)",
            )
            return None
    out = bytearray()
    rest = raw
    try:
        while True:
            stream = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            while not stream.eof:
                piece = stream.decompress(rest, 1 << 20)
                rest = stream.unconsumed_tail
                if not piece and not rest and not stream.eof:
                    if _whole_tar(out, limits):
                        archive.fail(Check.G312, None, _cut_short(len(out)))
                        return None
                    raise GateError(f"{path}: the gzip stream is truncated")
                out += piece
                if len(out) >= limits.ratio_from and len(out) > limits.ratio * len(raw):
                    archive.fail(
                        Check.G307,
                        None,
                        f"inflates more than {limits.ratio:g}x its {len(raw)} compressed "
                        f"bytes (reached {len(out)}); abandoned there",
                    )
                    return None
                if len(out) > min(limits.total_size, archive.budget.left):
                    archive.fail(Check.G308, None, f"inflates past {_allowed(archive, limits)}; abandoned there")
                    return None
            rest = stream.unused_data
            if not rest.strip(b"\0"):
                # the deflate stream is the member less its header and its 8-byte trailer (CRC, size)
                padded = zipstrict.deflate_padding(len(raw) - len(rest) - _gzip_header_length(raw) - 8, bytes(out))
                if padded:
                    archive.fail(Check.G311, None, f"its gzip stream holds {padded}")
                    return None
                archive.budget.take(len(out))
                return bytes(out)
            archive.fail(
                Check.G311,
                None,
                f"{len(rest)} bytes after the first gzip member"
                + (
                    ": a second member, which some unpackers (uv) never read"
                    if rest.startswith(b"\x1f\x8b")
                    else " that are not another gzip member (data appended to the archive)"
                ),
            )
            return None
    except zlib.error as exc:
        if not out and rest is raw and raw[:3] != GZIP_MAGIC + GZIP_DEFLATE:
            raise GateError(f"{path}: not a gzip stream, so not an sdist: {exc}") from exc
        # A gzip header of a deflate stream zlib then fails on is an sdist some unpacker reads (GNU gzip, so GNU tar,
        # reads a distance past the start or a repeat with no code length before it: gate round 43), not "no gzip
        # stream", wherever in the stream the error falls (the first piece inflated is up to a MiB)
        archive.fail(
            Check.G312,
            None,
            f"the gzip stream is corrupt{f' after {len(out)} bytes' if out else ''}: {exc}"
            f"{zipstrict.lenient_inflaters(exc)}",
        )
        return None


def _allowed(archive: Archive, limits: Limits) -> str:
    """The bytes an sdist's stream may inflate to, said as the limit it meets."""
    if archive.budget.left >= limits.total_size:
        return f"{limits.total_size} bytes"
    left = max(archive.budget.left, 0)
    # (one phrase, not a number followed by "bytes": "... may inflate together bytes" read as a slip, planted round 28)
    return f"the {left} bytes left of the {limits.total_size} all the dists of one run may inflate together"


def _whole_tar(out: bytearray, limits: Limits) -> bool:
    """Whether the bytes a cut gzip stream inflated hold a tar Python's tarfile reads whole: every member, then at
    least the first block of the end-of-archive marker, where tarfile stops (a cut inside the marker's second block,
    or in the record's padding after it, leaves it nothing more to read; a cut before the first zero block makes it
    ask for the next header and fail, EOFError). What follows in the prefix, zeros up to a partial block, is padding.
    Which of these a cut meets depends on where the deflate blocks end: round 27 took only a whole marker, and the
    project's own sdist, once its contents moved the blocks, was "not judged" where pip reads it whole."""
    whole = len(out) - len(out) % tarstrict.BLOCK
    if out[whole:].strip(b"\0"):
        return False
    prefix = bytes(out[:whole])
    if not tarstrict.parse(prefix, limits.members)[1]:
        return True
    # the marker's first block read, its second cut: whole when that block completes it (a zero block that is a
    # member's last data block leaves the member short of its marker, so the parse still fails)
    zero = bytes(tarstrict.BLOCK)
    return prefix.endswith(zero) and not tarstrict.parse(prefix + zero, limits.members)[1]


# A gzip stream cut short after a whole tar (gate round 27): Python's tarfile stops reading at the tar's end-of-archive
# marker, so pip unpacks every member, twine reads PKG-INFO and uploads the file, and the cut (no last block, no CRC-32
# and size trailer) is never seen, while gzip and GNU tar fail on the stream ("unexpected end of file", exit 2). The
# gate answered "not judged" (exit 2) as for a file that is no sdist at all; it is a refusal now, as a stream corrupt
# after the tar's end is (a wrong CRC-32 or size in the trailer, an invalid last block: pip and twine read those whole
# too). A cut stream whose bytes hold no whole tar reads one way, nowhere, and stays input the gate cannot judge.
def _cut_short(inflated: int) -> str:
    return (
        f"a gzip stream cut short after {inflated} bytes of a whole tar (no last block, or no CRC-32 and size "
        "trailer): Python's tarfile stops at the tar's end-of-archive marker, so pip unpacks it and twine uploads it, "
        "while gzip and GNU tar fail on it (unexpected end of file)"
    )


# What RFC 1952 defines for a deflate stream's header (gate round 17): extra flags (XFL) 2 (slowest) or 4 (fastest),
# or none (0, which Python's gzip, GNU gzip and zlib write at other levels), and an operating system (OS) of 0-13 or 255
# (unknown: Python's gzip). No unpacker reads either, so any other value was a byte of the upload judged by nothing,
# as the zip header bytes the format reserves are (G319). Hand-written: gzip and zlib skip both without a word.
GZIP_XFL = (0, 2, 4)
GZIP_OS = (*range(14), 255)


def _gzip_undefined(raw: bytes) -> str:
    xfl, system = raw[8], raw[9]
    found = []
    if xfl not in GZIP_XFL:
        found.append(f"extra flags (XFL) {xfl:#04x}, which deflate defines as 2, 4 or none")
    if system not in GZIP_OS:
        found.append(f"operating system (OS) {system}, which names none (0-13, or 255 for unknown)")
    return " and ".join(found)


def _gzip_header_fields(raw: bytes, dist: str) -> list[str]:
    """The optional fields of a gzip header that hold bytes of their own: an extra field (up to 64 KiB), a comment
    and a file name (each of any length, ended by a NUL). Python's gzip, zlib and pip skip them all, so whatever they
    hold is uploaded with the sdist and judged by nothing; the one file name allowed is the tar's own, which Python's
    gzip (``tarfile`` mode ``w:gz``) writes. Hand-written: neither ``gzip`` nor ``zlib`` reports these fields."""
    flags, pos, found = raw[3], _GZIP_FIXED, []
    if flags & GZIP_FEXTRA:
        length = int.from_bytes(raw[pos : pos + 2], "little")
        found.append(f"an extra field (FEXTRA) of {length} bytes")
        pos += 2 + length
    for flag, what in ((GZIP_FNAME, "file name (FNAME)"), (GZIP_FCOMMENT, "comment (FCOMMENT)")):
        if flags & flag:
            end = raw.find(b"\0", pos)
            end = len(raw) if end < 0 else end
            value = raw[pos:end]
            if flag != GZIP_FNAME or value != dist.removesuffix(".gz").encode():
                found.append(f"a {what} of {len(value)} bytes, {value[:40]!r}")
            pos = end + 1
    return found


def _gzip_header_length(raw: bytes) -> int:
    """The bytes of a gzip header that holds no optional field but a file name (the others are refused before)."""
    return raw.index(b"\0", _GZIP_FIXED) + 1 if raw[3] & GZIP_FNAME else _GZIP_FIXED


def _folder_alias(
    archive: Archive,
    name: str,
    is_dir: bool,
    folders: dict[tuple[int, str], tuple[int, str]],
    files: dict[tuple[int, str], str],
) -> None:
    """G305 for a member whose folder is spelt otherwise than another member's same folder (gate round 59).

    ``neurobrix/Ops/y.py`` beside ``neurobrix/ops/x.py`` names no file twice, yet on a case-insensitive,
    Unicode-normalising or Windows file system the installer writes ``y.py`` into the folder the first member made
    (``neurobrix/ops/``): the installed tree holds a module no import of ``neurobrix.Ops`` finds, or a file inside
    the package from a member named outside it (``NeuroBrix/evil.py``). Each folder above a member (and a folder
    entry itself) is compared by :func:`names.destination_key` with the spellings seen before it. ``folders`` maps
    (the parent folder's number, a component's key) to (the folder's number, the component as first spelt), so a
    member costs one key per component however deep it is.

    A file is compared with the folders the same way (gate round 60): ``neurobrix/Ops`` beside ``neurobrix/ops/``, or
    ``neurobrix/cli.py`` beside ``neurobrix/CLI.PY/x.py``, are one path there, a file where a folder is. ``files`` maps
    (the parent folder's number, a file's last component's key) to the file's name."""
    if names.too_long(name):
        return  # refused by its length (G310), and a key of it is the name itself
    parts = name.rstrip("/").split("/")
    parent = 0
    for depth, part in enumerate(parts[: None if is_dir else -1], start=1):
        key = _component_key(part)
        if not key:
            continue  # an empty or '.' component, which installers collapse (G310)
        if (parent, key) in files:
            _file_and_folder(archive, name, "/".join(parts[:depth]), files[(parent, key)])
            return
        number, first = folders.setdefault((parent, key), (len(folders) + 1, part))
        if first != part:
            above = "/".join(parts[: depth - 1])
            spelt, seen = f"{above}/{part}".lstrip("/"), f"{above}/{first}".lstrip("/")
            archive.fail(
                Check.G305,
                name,
                f"its folder {spelt}/ is the folder {seen}/ on case-insensitive, Unicode-normalising or Windows file "
                f"systems: installed there, it lands in {seen}/",
            )
            return
        parent = number
    if is_dir:
        return
    key = _component_key(parts[-1])
    if (parent, key) in folders:
        above = "/".join(parts[:-1])
        _file_and_folder(archive, name, f"{above}/{folders[(parent, key)][1]}".lstrip("/"), name)
    elif key:
        files.setdefault((parent, key), name)


def _component_key(part: str) -> str:
    # an ASCII component's key inline, as destination_key gives it (no format character, NFC already, case folding
    # is lower()): a call per component made 4,096 members 500 folders deep cost 5 s, inline 1.7 s
    return part.split(":", 1)[0].rstrip(". ").lower() if part.isascii() else names.destination_key(part)


def _file_and_folder(archive: Archive, name: str, folder: str, file: str) -> None:
    where = "on every file system"
    if folder != file:
        where = "on case-insensitive, Unicode-normalising or Windows file systems"
    archive.fail(
        Check.G305,
        name,
        f"the file {file} and the folder {folder}/ are one path {where}: no installer writes both there, the install "
        "fails part-way",
    )


def _safety(archive: Archive, limits: Limits) -> set[str]:
    """Record the G301-G308 and G310 findings of the members; return the names never to read."""
    unsafe: set[str] = set()
    exact: set[str] = set()
    seen: dict[str, str] = {}  # destination key -> first name with it
    folders: dict[tuple[int, str], tuple[int, str]] = {}  # the folders members are in, by destination key
    files: dict[tuple[int, str], str] = {}  # the files, by their folder and destination key
    total = 0
    for m in archive.members:
        name = m.name
        for check, message in names.name_problems(name, m.kind == "dir"):
            archive.fail(check, name, message)
            if check in (Check.G301, Check.G302, Check.G303):
                unsafe.add(name)
        if m.kind in ("symlink", "hardlink", "other"):
            target = f" to {m.link!r}" if m.link else ""
            what = {"symlink": "a symlink", "hardlink": "a hard link"}.get(m.kind, "a special member")
            archive.fail(Check.G304, name, f"{what}{target}, not a regular file")
            unsafe.add(name)
        first = seen.setdefault(names.destination_key(name), name)
        if name in exact:
            archive.fail(Check.G305, name, "appears more than once; which copy is installed depends on the tool")
            unsafe.add(name)
        elif first != name:
            archive.fail(
                Check.G305,
                name,
                f"lands on the same file as {first} on case-insensitive, Unicode-normalising or Windows file systems",
            )
            unsafe.update((name, first))
        else:
            _folder_alias(archive, name, m.kind == "dir", folders, files)
        exact.add(name)
        if m.size > limits.member_size:
            archive.fail(Check.G306, name, f"declares {m.size} bytes uncompressed; the limit is {limits.member_size}")
            unsafe.add(name)
        if m.compressed is not None and m.size >= limits.ratio_from and m.size > limits.ratio * max(m.compressed, 1):
            archive.fail(
                Check.G307,
                name,
                f"declares {m.size} bytes from {m.compressed} compressed "
                f"(more than {limits.ratio:g}x): refused without inflating it",
            )
            unsafe.add(name)
        total += m.size
    if total > limits.total_size:
        archive.fail(Check.G308, None, f"members declare {total} bytes in all; the limit is {limits.total_size}")
        unsafe.update(m.name for m in archive.members)
    return unsafe
