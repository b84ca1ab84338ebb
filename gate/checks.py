"""What the gate can find: the check codes, one finding, the archive limits, and the one input error.

Findings are data (a :class:`Check`, the dist, the path inside it, a message); the gate refuses a
release when it has any. :class:`GateError` is for input the gate cannot judge at all (exit 2).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any


class Check(Enum):
    """Every rule the gate enforces; the name is the stable code, the value what breaking it means."""

    # The upload folder itself
    G001 = "file in the upload folder is not a wheel or an sdist"
    G002 = "upload folder lacks a wheel or an sdist"
    G003 = "dist or upload folder changed on disk while the gate judged it"
    # The wheel's contents against the repository: the tables (the reference tracked list), the package
    # (the files git tracks), nothing else
    G101 = "tracked table file missing from the wheel"
    G102 = "tracked table file in the wheel has the wrong size"
    G103 = "tracked table file in the wheel has the wrong sha256"
    G104 = "untracked file among the wheel's tables"
    G105 = "wheel carries no tracked list"
    G106 = "wheel's tracked list differs from the reference"
    G107 = "wheel member the project does not ship"
    G108 = "package file of the repository missing from the wheel"
    G109 = "package file in the wheel differs from the repository's"
    # The wheel's RECORD against its members
    G201 = "wheel has no readable RECORD"
    G202 = "wheel member not listed in RECORD"
    G203 = "wheel member's hash differs from RECORD"
    G204 = "wheel member's size differs from RECORD"
    G205 = "RECORD lists a file the wheel does not contain"
    G206 = "malformed RECORD entry"
    # The archive itself (wheels and sdists), judged before anything is inflated
    G301 = "absolute member name"
    G302 = "member name climbs out with '..'"
    G303 = "member name has a backslash, a control character or bytes that do not decode"
    G304 = "member is a link or not a regular file"
    G305 = "duplicate member (also by case, Unicode form or what Windows drops)"
    G306 = "member larger than the size limit"
    G307 = "compression ratio above the limit"
    G308 = "archive larger than the total size limit"
    G309 = "member cannot be read"
    G310 = "member name that installs elsewhere than it reads, on some file system"
    G311 = "bytes outside the archive's members (before, between or after them)"
    G312 = "member header malformed, or disagreeing with the archive's directory"
    G313 = "compression, encryption or archive extension the gate does not read"
    G314 = "archive with more members than the limit"
    G315 = (
        "member mode with bits past a plain file's, none at all, or closed to others, or made on a host whose modes "
        "installers read otherwise"
    )
    G316 = "member owned by another than root, or writable by its group: an unpacker hands it to them"
    G317 = "member attributes (MS-DOS or internal) that some unpacker applies or no writer sets"
    G318 = "pax extended header whose own header is not tarfile's: fields a ustar-only unpacker applies"
    G319 = (
        "zip or gzip header bytes the format reserves or leaves undefined (an MS-DOS time that names no moment too): "
        "no writer sets them, no installer reads them alike"
    )
    G320 = (
        "sdist that Python's zipfile also takes for a zip archive, or fails on: pip unpacks it as one, or stops, not "
        "as its tar; or a wheel that Python's tarfile also takes for a tar archive: PyPI refuses it"
    )
    # Metadata and packaging, by the tools made for them and against pyproject.toml
    G401 = "twine check --strict failed"
    G402 = "check-wheel-contents finding"
    G403 = "check-wheel-contents cannot read the wheel"
    G404 = "metadata missing or invalid"
    G405 = "file name is not a valid wheel or sdist name, spelt as the specifications spell it"
    G406 = "core metadata not byte for byte what the build backend prepares from pyproject.toml"
    G407 = "WHEEL or the wheel's tag is not a pure-Python py3-none-any wheel"
    G408 = "entry points differ from what pyproject.toml declares"
    # The sdist: the tables, the tracked list and everything needed to rebuild the wheel
    G501 = "tracked table file missing from the sdist"
    G502 = "tracked table file in the sdist has the wrong size"
    G503 = "tracked table file in the sdist has the wrong sha256"
    G504 = "untracked file among the sdist's tables"
    G505 = "sdist carries no tracked list"
    G506 = "sdist's tracked list differs from the reference"
    G507 = "sdist is not one name-version/ folder with PKG-INFO and pyproject.toml"
    G508 = "the wheel built from the sdist is not the wheel under check"
    G509 = "sdist file is not the repository's tracked file"
    # Versions
    G601 = "name or version disagrees within one dist"
    G602 = "dists disagree on name or version, or one file name comes twice in other bytes"
    G603 = "version differs from --expect-version"
    G604 = "dist of another project than the repository's (its file name names another)"
    # The install smoke: pip installs the wheel, the gate hashes what it wrote, the engine loads it
    G701 = "wheel does not install into a fresh environment"
    G702 = "installed tables fail `neurobrix tables verify`"
    G703 = "install smoke could not confirm the installed copy"
    G704 = "installed files differ from the wheel or from the reference tracked list"

    @property
    def title(self) -> str:
        return self.value


@dataclass(frozen=True)
class Finding:
    """One broken rule: which check, in which dist (file name), about which path inside it (if one)."""

    check: Check
    dist: str
    path: str | None
    message: str

    @property
    def code(self) -> str:
        return self.check.name

    def as_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "title": self.check.title,
            "dist": self.dist,
            "path": self.path,
            "message": self.message,
        }


SHOWN_PER_CHECK = 20  # findings of one check in one dist shown before the rest are counted


def capped(findings: Iterable[Finding], shown: int = SHOWN_PER_CHECK) -> list[Finding]:
    """The first ``shown`` findings of each check in each dist, then one finding that counts the rest
    (naming the first member left out), so that a wheel of 100,000 junk members makes a short report."""
    kept: list[Finding] = []
    left: dict[tuple[str, Check], list[Finding]] = {}
    count: dict[tuple[str, Check], int] = {}
    for finding in findings:
        key = (finding.dist, finding.check)
        count[key] = count.get(key, 0) + 1
        if count[key] <= shown:
            kept.append(finding)
        else:
            left.setdefault(key, []).append(finding)
    for (dist, check), rest in left.items():
        first = rest[0]
        kept.append(
            Finding(
                check,
                dist,
                first.path,
                f"and {len(rest)} more {check.name} finding{'s' if len(rest) > 1 else ''} in {dist} "
                f"not shown (the first of them: {first.message})",
            )
        )
    return kept


KiB = 1 << 10
MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Sane sizes for this project's dists (tables are small YAML files; the wheel is tens of KiB).

    Judged from the archive's directory (zip) or while inflating a bounded stream (tar.gz), never by
    inflating a member first; every member is then inflated through a cap at its declared size.
    """

    member_size: int = 64 * MiB  # declared uncompressed size of one member
    total_size: int = 256 * MiB  # all members together (or the inflated tar stream, or the file itself)
    ratio: float = 100.0  # uncompressed / compressed; YAML and Python compress about 3-10x
    ratio_from: int = 64 * KiB  # smaller members cannot make a bomb, so their ratio is not judged
    members: int = 4096  # members of one archive (the wheel has about 50)
    # dists judged in one run: a release is one wheel and one sdist, and every dist costs a twine process of about a
    # second and its share of the run's budget (round 32: 20,000 small wheels would have held the gate for hours)
    dists: int = 64
    text_size: int = 4 * MiB  # a metadata file or a tracked list parsed by the gate


class Budget:
    """What the archives of one run may inflate together: :attr:`Limits.total_size` once, not once per archive (gate
    round 32: an upload folder of eight copies of one wheel of 1.5 MB, 3,900 members of 64 KiB of zeros each, within
    every archive's limits, held 2.1 GiB in the gate, and forty of them would hold ten; a release is one wheel and one
    sdist of a few MiB)."""

    def __init__(self, size: int) -> None:
        self.left = size

    def take(self, size: int) -> None:
        self.left -= size


class GateError(Exception):
    """Input the gate cannot judge (not an archive, unreadable, no reference list): ``str()`` says why. Exit 2."""
