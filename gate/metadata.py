"""Who a dist says it is: core metadata (METADATA / PKG-INFO) read and validated by ``packaging``."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.metadata import ExceptionGroup, Metadata  # the builtin on 3.11+, a backport before
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from .archive import Archive
from .checks import Check


@dataclass(frozen=True)
class Identity:
    """A dist's project name and version: from its metadata when readable, else from its file name."""

    name: NormalizedName | None
    version: Version | None

    def __str__(self) -> str:
        return f"{self.name or '?'} {self.version or '?'}"


def read_metadata(archive: Archive, name: str) -> tuple[Metadata | None, str]:
    """Parse one metadata file, validating every field; (None, why) when that fails."""
    data = archive.read(name)
    if data is None:
        return None, f"{name} is missing or unreadable"
    try:
        return Metadata.from_email(data, validate=True), ""
    except ExceptionGroup as group:
        return None, "; ".join(str(e) for e in group.exceptions)
    except (ValueError, UnicodeDecodeError) as exc:
        return None, str(exc)


def check_metadata(archive: Archive, path: str, declared: Identity) -> Identity:
    """G404 if the metadata is invalid, G601 if it names another project or version than the file name."""
    metadata, why = read_metadata(archive, path)
    if metadata is None:
        archive.fail(Check.G404, path, f"not valid core metadata: {why}")
        return declared
    name, version = canonicalize_name(metadata.name), metadata.version
    if declared.name is not None and declared.name != name:
        archive.fail(Check.G601, path, f"metadata names {metadata.name!r}; the file name says {declared.name!r}")
    if declared.version is not None and declared.version != version:
        archive.fail(Check.G601, path, f"metadata says version {version}; the file name says {declared.version}")
    return Identity(name, version)
