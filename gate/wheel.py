"""Checks of one wheel: file name, layout against the allow-list, metadata, RECORD, and the tables.

RECORD is verified here because check-wheel-contents reads it but never compares it with the
members: every member listed, every hash and size true, no entry without a member. Where each member
installs, and whether the project ships it, is :mod:`gate.layout`'s.
"""

from __future__ import annotations

import ast
import base64
import csv
import hashlib
import io
import re

from installer.utils import parse_wheel_filename as installer_wheel_name
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from neurobrix.tables import TRACKED_NAME, WHEEL_DIR

from .archive import WheelArchive
from .checks import Check
from .completeness import WHEEL_CHECKS, Reference, table_findings
from .layout import check_layout
from .metadata import (
    PURE_TAG,
    Identity,
    another_project,
    check_canonical_name,
    check_entry_points,
    check_metadata,
    check_wheel_file,
    check_wheel_name,
)
from .repository import Repository

# Hashes a RECORD may use: those pip accepts (at least as strong as sha256).
RECORD_HASHES = ("sha256", "sha384", "sha512")
_UNHASHED = ("RECORD", "RECORD.jws", "RECORD.p7s")  # files of the .dist-info that RECORD cannot hash


def check_wheel(wheel: WheelArchive, reference: Reference, repo: Repository) -> Identity:
    """Record every wheel finding on ``wheel``; return the name and version it declares."""
    try:
        file_name, file_version, _, _ = parse_wheel_filename(wheel.dist)
    except InvalidWheelFilename as exc:
        wheel.fail(Check.G405, None, str(exc))
        file_name, file_version = None, None
    identity = Identity(file_name, file_version)
    if another_project(wheel, file_name, repo.declared):
        return identity
    if wheel.refused_unread:
        return identity  # read more than one way, or too large: its G3xx finding says so
    pure = check_wheel_name(wheel)
    try:
        parsed = installer_wheel_name(wheel.dist)
        stem = (parsed.distribution, parsed.version)
    except ValueError:
        stem = tuple(repo.declared.stem.split("-", 1))  # type: ignore[assignment]
    tables = {f"{WHEEL_DIR}/{f.path}" for f in reference.files} | {f"{WHEEL_DIR}/{TRACKED_NAME}"}
    check_layout(wheel, repo, tables, (stem[0], stem[1]))
    dist_info = _dist_info(wheel, repo.declared.dist_info)
    if dist_info is not None:
        _check_record(wheel, dist_info)
        _check_metadata_twine_reads(wheel, f"{dist_info}/METADATA")
        by_name, identity = identity, check_metadata(wheel, f"{dist_info}/METADATA", identity, repo.declared)
        if pure:  # other tags or a build tag are G407 already
            check_canonical_name(wheel, identity, by_name, f"-{PURE_TAG}.whl")
        check_wheel_file(wheel, f"{dist_info}/WHEEL", repo.declared)
        check_entry_points(wheel, f"{dist_info}/entry_points.txt", repo.declared)
    if identity.name is not None and identity.version is not None:
        _check_package_version(wheel, identity.name, identity.version)
    table_findings(wheel, f"{WHEEL_DIR}/", reference, WHEEL_CHECKS)
    return identity


def _dist_info(wheel: WheelArchive, declared: str) -> str | None:
    """The wheel's one .dist-info folder (the declared one where the wheel has several, with a G201)."""
    tops = sorted({name.split("/", 1)[0] for name in wheel.files if name.split("/", 1)[0].endswith(".dist-info")})
    if len(tops) != 1:
        wheel.fail(
            Check.G201,
            None,
            f"the wheel has {len(tops)} .dist-info folders ({', '.join(tops) or 'none'}); "
            "it must have exactly one, holding METADATA and RECORD",
        )
        return declared if declared in tops else None
    return tops[0]


def _check_metadata_twine_reads(wheel: WheelArchive, metadata: str) -> None:
    """G406 for a member twine would take for the wheel's metadata before ``metadata`` (gate round 36). twine (its
    ``check`` and the ``upload`` that sends PyPI the release's metadata, the project page's description, Requires-Python
    and Requires-Dist among it) reads a wheel's metadata from the first member whose name holds ``METADATA``, fewest
    path components first, then by component, that holds ``Metadata-Version``: any such file right under the package
    (``neurobrix/METADATA``, which git may track) sorts before ``neurobrix-<v>.dist-info/METADATA``, while pip, uv and
    PyPI's served metadata read the .dist-info's. Refused by its name, whatever its bytes."""
    candidates = sorted(
        (len(parts), parts) for parts in (m.name.split("/") for m in wheel.members) if "METADATA" in "/".join(parts)
    )
    for _, parts in candidates:
        name = "/".join(parts)
        if name == metadata:
            return
        wheel.fail(
            Check.G406,
            name,
            f"twine reads a member so named as the wheel's metadata before {metadata} (the first whose name holds "
            "METADATA, fewest folders first): `twine upload` would send PyPI its fields, not the .dist-info's",
        )


def _check_package_version(wheel: WheelArchive, name: str, version: Version) -> None:
    """The engine reports ``__version__``: it must be the version the wheel is published as."""
    init = f"{name.replace('-', '_')}/__init__.py"
    data = wheel.read(init)
    if data is None:
        wheel.fail(Check.G601, init, "missing: the package cannot report its version")
        return
    if len(data) > wheel.limits.text_size:
        return  # not this project's __init__.py: G109 says it differs
    found = None
    try:
        for node in ast.parse(data).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
            ):
                if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                    found = node.value.value
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        wheel.fail(Check.G601, init, f"cannot be parsed for __version__: {type(exc).__name__}")
        return
    if found is None:
        wheel.fail(Check.G601, init, "has no __version__ = '...' literal")
    elif not _is_version(found) or Version(found) != version:
        wheel.fail(Check.G601, init, f"__version__ is {found!r}; the wheel is version {version}")


def _is_version(text: str) -> bool:
    try:
        Version(text)
    except ValueError:
        return False
    return True


def _check_record(wheel: WheelArchive, dist_info: str) -> None:
    record = f"{dist_info}/RECORD"
    data = wheel.read(record)
    if data is None:
        wheel.fail(Check.G201, record, "missing or unreadable: nothing says what the wheel should contain")
        return
    if len(data) > wheel.limits.text_size:
        wheel.fail(Check.G201, record, f"{len(data)} bytes; the limit is {wheel.limits.text_size}")
        return
    try:
        rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    except (UnicodeDecodeError, csv.Error) as exc:
        wheel.fail(Check.G201, record, f"not UTF-8 CSV: {exc}")
        return
    if len(rows) > wheel.limits.members:  # not judged row by row: the report would only repeat itself
        wheel.fail(
            Check.G206,
            record,
            f"{len(rows)} rows, more than the {wheel.limits.members} members a wheel may "
            f"have; this one has {len(wheel.members)}",
        )
        return
    unhashed = {f"{dist_info}/{n}" for n in _UNHASHED}
    malformed = len(wheel.findings)
    entries: dict[str, tuple[str, str, int | None]] = {}  # path -> (algorithm, digest, size)
    for line, row in enumerate(rows, 1):
        if not row:  # pip (IndexError) and installer (not 3 elements) fail on it; uv skips it
            wheel.fail(Check.G206, record, f"line {line}: an empty line, which pip and installer cannot install")
            continue
        where = f"{record} line {line}"
        if len(row) != 3:
            wheel.fail(Check.G206, record, f"line {line}: {len(row)} fields; a RECORD row is path,hash,size")
            continue
        path, hashed, size_text = row
        if path in entries:
            wheel.fail(Check.G206, path, f"{where}: listed more than once")
            continue
        if not path or path.startswith("/") or ".." in re.split(r"[/\\]", path) or "\\" in path:
            wheel.fail(Check.G206, path or None, f"{where}: unsafe or empty path {path!r}")
            continue
        # ASCII digits: Python's \d and int() take any script's ('١٢٣' is 123 to pip and installer), uv's RECORD
        # reader (a Rust u64) only these, and fails; 20 digits: any real size, and no huge int parsed
        if not re.fullmatch(r"[0-9]{0,20}", size_text):
            wheel.fail(Check.G206, path, f"{where}: size {size_text!r} is not a whole number")
            continue
        # no leading zero (gate round 18): pip, installer and uv read '0116' as 116, distlib's Wheel.install compares
        # the size as text with the member's and refuses the wheel ("size mismatch"); no writer writes one
        if len(size_text) > 1 and size_text.startswith("0"):
            wheel.fail(
                Check.G206,
                path,
                f"{where}: size {size_text!r} with a leading zero: pip, installer and uv read {int(size_text)}, "
                "distlib's Wheel.install compares the size as text and refuses the wheel (size mismatch)",
            )
            continue
        size = int(size_text) if size_text else None
        algorithm, _, digest = hashed.partition("=")
        # as installer's record validation (which Poetry runs) reads a row: RECORD's own with neither a hash nor a
        # size, every other with both (pip and uv read a row without a size, or RECORD's own with one, unchecked)
        if path == record:
            if hashed or size_text:
                wheel.fail(Check.G206, path, f"{where}: RECORD's own row has a hash or a size; it can have neither")
                continue
        elif not hashed:
            if path not in unhashed:
                wheel.fail(Check.G206, path, f"{where}: no hash; only RECORD and its signatures may go unhashed")
                continue
        elif size is None:
            wheel.fail(Check.G206, path, f"{where}: no size; every row but RECORD's own gives the file's size")
            continue
        if hashed and (algorithm not in RECORD_HASHES or not digest):
            wheel.fail(Check.G206, path, f"{where}: hash {hashed[:20]!r} is not one of {', '.join(RECORD_HASHES)}")
            continue
        entries[path] = (algorithm, digest, size)
    if len(wheel.findings) == malformed:  # every row read: now how they are written
        _check_record_layout(wheel, record, data.decode("utf-8"), rows)
    for name in sorted(wheel.files):
        if name == record and name not in entries:
            wheel.fail(Check.G202, name, f"not listed in {record}: installer's record validation refuses the wheel")
        elif name not in entries and name not in unhashed:
            wheel.fail(Check.G202, name, f"not listed in {record}: installers would not track or verify it")
    for path, (algorithm, digest, size) in sorted(entries.items()):
        if path not in wheel.files:
            if path != record:
                wheel.fail(Check.G205, path, f"listed in {record}, but the wheel has no such member")
            continue
        if not algorithm:
            continue
        data = wheel.read(path)
        if data is None:
            continue  # refused unread or unreadable: its G3xx finding says why
        actual = base64.urlsafe_b64encode(hashlib.new(algorithm, data).digest()).rstrip(b"=").decode()
        if actual != digest:
            wheel.fail(Check.G203, path, f"{algorithm} {actual}; {record} says {digest}")
        if size is not None and size != len(data):
            wheel.fail(Check.G204, path, f"{len(data)} bytes; {record} says {size}")


def _check_record_layout(wheel: WheelArchive, record: str, text: str, rows: list[list[str]]) -> None:
    """G206 for rows that are true but written otherwise than a wheel writer writes them (gate round 15): quotes
    around a field, a CR LF line end or none after the last row, rows in another order than the wheel's members
    (RECORD's own last), all of which every reader skips. With its sdist a wheel's RECORD is held to the rebuilt
    one's bytes (G508); judged alone, those choices carried bits no installer reads. Rows are written back with the
    csv module (as hatchling, wheel and installer write them: minimal quoting, LF) and compared."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    written = out.getvalue()
    if text != written:
        at = next((i for i, (a, b) in enumerate(zip(text, written)) if a != b), min(len(text), len(written)))
        line = text.count("\n", 0, at) + 1
        wheel.fail(
            Check.G206,
            record,
            f"line {line}: {text[at : at + 40]!r} where a RECORD writer writes {written[at : at + 40]!r} (quotes or "
            "line ends every reader skips)",
        )
        return
    order = [row[0] for row in rows]
    members = [name for name in wheel.files if name != record] + [record]
    if order != members and sorted(order) == sorted(members):  # other sets of names are G202 and G205
        at = next(i for i, (a, b) in enumerate(zip(order, members)) if a != b)
        wheel.fail(
            Check.G206,
            record,
            f"line {at + 1} lists {order[at]!r} where the wheel's members, in their order, come to {members[at]!r}: "
            "a wheel writer lists them in the order it writes them, RECORD last",
        )
