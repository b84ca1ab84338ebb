"""The certified tables inside an archive against the reference tracked list (the repository's or --tracked).

The same comparison serves the wheel (tables at ``neurobrix/_tables/``) and the sdist (``tables/``):
every tracked file present with its size and sha256, nothing untracked beside them, and the archive's
own copy of the list byte-for-byte the reference. A list is read as bounded YAML (:mod:`gate.yamlsafe`:
no anchors, a size cap) and validated by the engine's own schema (:func:`neurobrix.schema.parse_tracked`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from neurobrix.errors import TablesError
from neurobrix.schema import TrackedFile, parse_tracked
from neurobrix.tables import TRACKED_NAME, WHEEL_DIR

from . import yamlsafe
from .archive import Archive
from .checks import Check, GateError, Limits

SOURCE_DIR = "tables"  # where the tables live in the source tree and the sdist (pyproject force-include)


@dataclass(frozen=True)
class Reference:
    """The tracked list every dist is judged against: its file, its exact bytes and its entries."""

    path: Path
    data: bytes
    files: tuple[TrackedFile, ...]


@dataclass(frozen=True)
class TableChecks:
    """Which check each kind of table problem is, in one kind of dist."""

    missing: Check
    size: Check
    sha256: Check
    untracked: Check
    no_list: Check
    list_differs: Check
    where: str  # "wheel" or "sdist", for messages


WHEEL_CHECKS = TableChecks(Check.G101, Check.G102, Check.G103, Check.G104, Check.G105, Check.G106, "wheel")
SDIST_CHECKS = TableChecks(Check.G501, Check.G502, Check.G503, Check.G504, Check.G505, Check.G506, "sdist")


def parse_list(data: bytes, shown: str, max_bytes: int) -> tuple[TrackedFile, ...]:
    """A tracked list from bytes the gate does not trust: bounded YAML, then the engine's schema."""
    try:
        return parse_tracked(yamlsafe.load(data, max_bytes), shown)
    except yamlsafe.UnsafeYAML as exc:
        raise TablesError(f"{shown}: {exc}") from exc


def load_reference(path: Path, max_bytes: int = Limits().text_size) -> Reference:
    """Read and validate the reference list; anything wrong with it makes the gate unusable (GateError)."""
    if not path.is_file():
        # "(not a regular file)" for a file not there, and "give ... or --tracked FILE" to a run that gave it: what is
        # there is named (walk-through round 47)
        what = "a folder" if path.is_dir() else "no such file" if not path.exists() else "not a regular file"
        raise GateError(
            f"{path}: no tracked list there ({what}); the reference is this checkout's tables/{TRACKED_NAME}, or "
            "the file --tracked names"
        )
    try:
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)
        files = parse_list(data, str(path), max_bytes)
    except (TablesError, OSError) as exc:
        raise GateError(f"the reference tracked list cannot be used: {exc}") from exc
    for f in files:
        if f.wheel_path != f"{WHEEL_DIR}/{f.path}":
            raise GateError(
                f"{path}: {f.path} has wheel_path {f.wheel_path!r}; the engine loads it from "
                f"{WHEEL_DIR}/{f.path}. Regenerate the list with `python -m conformance track`."
            )
    return Reference(path, data, files)


def table_findings(archive: Archive, prefix: str, reference: Reference, checks: TableChecks) -> None:
    """Compare the archive's tables under ``prefix`` (ending in '/') with the reference; record findings."""
    listed = set()
    for f in reference.files:
        name = prefix + f.path
        listed.add(name)
        member = archive.files.get(name)
        if member is None:
            archive.fail(checks.missing, name, f"tracked in {reference.path.name} but not in the {checks.where}")
            continue
        digest = archive.digest(name)
        if digest is None:
            if member.kind == "file":
                continue  # unreadable or refused unread: its G3xx finding says why
            archive.fail(checks.missing, name, f"tracked, but the {checks.where} has a {member.kind} there")
        elif digest.size != f.size:
            archive.fail(checks.size, name, f"{digest.size} bytes; the tracked list says {f.size}")
        elif digest.hex != f.sha256:
            archive.fail(checks.sha256, name, f"sha256 {digest.hex[:12]}…; the tracked list says {f.sha256[:12]}…")
    list_name = prefix + TRACKED_NAME
    for name in sorted(archive.files):
        if name.startswith(prefix) and name not in listed and name != list_name:
            archive.fail(
                checks.untracked,
                name,
                f"under the tables but not in {reference.path.name}; "
                "the engine refuses a folder with an untracked file",
            )
    if list_name not in archive.files:
        archive.fail(
            checks.no_list, list_name, f"no {TRACKED_NAME}: nothing can verify the tables of this {checks.where}"
        )
        return
    data = archive.read(list_name)
    if data is not None and data != reference.data:
        archive.fail(
            checks.list_differs,
            list_name,
            f"differs from {reference.path}: {describe_difference(data, reference, list_name)}",
        )


def describe_difference(data: bytes, reference: Reference, shown: str) -> str:
    """What differs between a copy of the tracked list and the reference, entry by entry."""
    try:
        theirs = {f.path: f for f in parse_list(data, shown, max(len(reference.data), Limits().text_size))}
    except TablesError as exc:
        return f"not a valid tracked list ({exc})"
    ours = {f.path: f for f in reference.files}
    parts = [f"does not list {p}" for p in sorted(ours.keys() - theirs.keys())]
    parts += [f"lists {p}, which the reference does not" for p in sorted(theirs.keys() - ours.keys())]
    parts += [
        f"lists {p} with another sha256, size or wheel path"
        for p in sorted(ours.keys() & theirs.keys())
        if ours[p] != theirs[p]
    ]
    return "; ".join(parts) or "the same entries in other bytes (not written by `python -m conformance track`)"
