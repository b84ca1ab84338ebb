"""What the gate can find: the check codes, one finding, the archive limits, and the one input error.

Findings are data (a :class:`Check`, the dist, the path inside it, a message); the gate refuses a
release when it has any. :class:`GateError` is for input the gate cannot judge at all (exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class Check(Enum):
    """Every rule the gate enforces; the name is the stable code, the value what breaking it means."""

    # The upload folder itself
    G001 = "file in the upload folder is not a wheel or an sdist"
    G002 = "upload folder lacks a wheel or an sdist"
    # The certified tables inside the wheel, against the reference tracked list
    G101 = "tracked table file missing from the wheel"
    G102 = "tracked table file in the wheel has the wrong size"
    G103 = "tracked table file in the wheel has the wrong sha256"
    G104 = "untracked file among the wheel's tables"
    G105 = "wheel carries no tracked list"
    G106 = "wheel's tracked list differs from the reference"
    # The wheel's RECORD against its members
    G201 = "wheel has no readable RECORD"
    G202 = "wheel member not listed in RECORD"
    G203 = "wheel member's hash differs from RECORD"
    G204 = "wheel member's size differs from RECORD"
    G205 = "RECORD lists a file the wheel does not contain"
    G206 = "malformed RECORD entry"
    # Member names, types and sizes (wheels and sdists), judged before anything is inflated
    G301 = "absolute member name"
    G302 = "member name climbs out with '..'"
    G303 = "member name has a backslash or a control character"
    G304 = "member is a link or not a regular file"
    G305 = "duplicate member"
    G306 = "member larger than the size limit"
    G307 = "compression ratio above the limit"
    G308 = "archive larger than the total size limit"
    G309 = "member cannot be read"
    # Metadata and packaging, by the tools made for them
    G401 = "twine check --strict failed"
    G402 = "check-wheel-contents finding"
    G403 = "check-wheel-contents cannot read the wheel"
    G404 = "metadata missing or invalid"
    G405 = "file name is not a valid wheel or sdist name"
    # The sdist: the tables, the tracked list and everything needed to rebuild the wheel
    G501 = "tracked table file missing from the sdist"
    G502 = "tracked table file in the sdist has the wrong size"
    G503 = "tracked table file in the sdist has the wrong sha256"
    G504 = "untracked file among the sdist's tables"
    G505 = "sdist carries no tracked list"
    G506 = "sdist's tracked list differs from the reference"
    G507 = "sdist is not one name-version/ folder with PKG-INFO and pyproject.toml"
    G508 = "sdist cannot rebuild the wheel: a wheel file's source is missing or different"
    # Versions
    G601 = "name or version disagrees within one dist"
    G602 = "dists disagree on name or version"
    G603 = "version differs from --expect-version"
    # The install smoke: the engine's own loader on an installed copy
    G701 = "wheel does not install into a fresh virtual environment"
    G702 = "installed tables fail `neurobrix tables verify`"
    G703 = "install smoke could not confirm the installed copy"

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
        return {"code": self.code, "title": self.check.title, "dist": self.dist, "path": self.path,
                "message": self.message}


KiB = 1 << 10
MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Sane sizes for this project's dists (tables are small YAML files; the wheel is tens of KiB).

    Judged from the archive's directory (zip) or while inflating a bounded stream (tar.gz), never by
    inflating a member first.
    """

    member_size: int = 64 * MiB  # declared uncompressed size of one member
    total_size: int = 512 * MiB  # all members together (or the inflated tar stream)
    ratio: float = 100.0  # uncompressed / compressed; YAML and Python compress about 3-10x
    ratio_from: int = 64 * KiB  # smaller members cannot make a bomb, so their ratio is not judged


class GateError(Exception):
    """Input the gate cannot judge (not an archive, unreadable, no reference list): ``str()`` says why. Exit 2."""
