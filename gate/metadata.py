"""Who a dist says it is and what it declares, against what the repository declares.

Core metadata (a wheel's METADATA, an sdist's PKG-INFO) is validated by ``packaging`` (G404), must
name the project and version its file name says (G601), the file name spelt as the specifications
spell that release (G405: ``NeuroBrix-0.1`` is release 0.1.0 to every tool, yet another file), and must
be byte for byte what the repository's build backend prepares from pyproject.toml (G406): an added
Requires-Dist, a widened Requires-Python, a field pyproject.toml never declared, another Metadata-Version, white
space added inside a value or another character in the description is refused.
A wheel's WHEEL file must describe a pure-Python ``py3-none-any`` wheel (G407), and its
entry_points.txt must hold exactly the entry points pyproject.toml declares (G408): a console
script or a plugin group added by the wheel would run code the project never wrote a line for. Both must
be the bytes the build backend writes, so that a wheel judged without its sdist (whose rebuild holds them,
G508) carries nothing in them that readers skip.
"""

from __future__ import annotations

import configparser
import re
from collections import Counter
from dataclasses import dataclass
from email.message import Message
from email.parser import BytesParser

from packaging.metadata import ExceptionGroup, Metadata  # the builtin on 3.11+, a backport before
from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, NormalizedName, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from . import names
from .archive import Archive
from .checks import Check
from .repository import Declared

PURE_TAG = Tag("py3", "none", "any")


@dataclass(frozen=True)
class Identity:
    """A dist's project name and version: from its metadata when readable, else from its file name."""

    name: NormalizedName | None
    version: Version | None

    def __str__(self) -> str:
        return f"{self.name or '?'} {self.version or '?'}"


def _text(archive: Archive, name: str) -> bytes | None:
    data = archive.read(name)
    if data is not None and len(data) > archive.limits.text_size:
        archive.fail(
            Check.G404,
            name,
            f"{len(data)} bytes; a metadata file of this project is far smaller (the limit "
            f"is {archive.limits.text_size})",
        )
        return None
    return data


# ASCII control characters but tab (folding), and CR and LF (line ends, judged apart)
_HEADER_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _split_one_way(data: bytes) -> str:
    """Why the header lines of a metadata file could be split differently by its readers ('' when they cannot).

    Python's email parser (pip, packaging, hatchling, this gate) ends a line at a lone CR, ends the fields at the
    first line that is no header, and drops an mbox ``From `` line; uv's parser (mailparse, up to uv 0.12) ends
    lines at LF only and reads on through both (uv 0.13.9 ends one at a lone CR too, gate round 58): a Requires-Dist
    behind a lone CR is one installer's dependency and part of a Classifier to the other. So every line ends in LF
    (CR only before it), and Python's parser reads the header block without a defect, with no control character but
    tab in it."""
    lone = re.search(rb"\r(?!\n)", data)
    if lone:
        return (
            f"a carriage return not followed by a line feed (byte {lone.start()}): Python's email parser ends a "
            "line there, uv's does not, so they read other fields"
        )
    head = re.split(rb"\r?\n\r?\n", data, maxsplit=1)[0]
    control = _HEADER_CONTROL.search(head)
    if control:
        return (
            f"a control character {control.group()!r} in the fields (byte {control.start()}): packaging and pip "
            "take \\x0b, \\x0c and \\x1c-\\x1f around a value for white space, uv's version parsers not all of them "
            "(a Version or Requires-Python pip reads is an error to uv), and the others are no text at all"
        )
    message = BytesParser().parsebytes(data)
    if message.get_unixfrom() is not None or message.defects:
        what = message.get_unixfrom() or ", ".join(type(d).__name__ for d in message.defects)
        return (
            f"its header block is not plain 'Key: value' lines ended by one blank line ({what[:80]!r}): "
            "parsers disagree on which lines are fields"
        )
    return ""


def read_metadata(data: bytes) -> tuple[Metadata | None, str]:
    """Parse one metadata file, validating every field; (None, why) when that fails."""
    why = _split_one_way(data)
    if why:
        return None, why
    try:
        return Metadata.from_email(data, validate=True), ""
    except ExceptionGroup as group:
        return None, "; ".join(str(e) for e in group.exceptions)
    except (ValueError, UnicodeDecodeError, TypeError, SyntaxError) as exc:  # SyntaxError: a marker string
        return None, str(exc)  # packaging's marker parser hands to ast (a NUL in it)
    except RecursionError:
        return None, "a field nests too deeply to be parsed (a marker of thousands of parentheses)"


# Core metadata must be the bytes the build backend prepares (G406), and entry_points.txt the bytes it writes (G408), so
# a file far larger than those is refused by its size before it is parsed (gate round 19): packaging validates every
# specifier and extra of a requirement, about 20 s for a requirement of a million of them within the 4 MiB any metadata
# file may have (the command line judging a wheel and its sdist so took a minute), and configparser, the gate's and
# installer's, read 290,000 console scripts as long. Twice the expected bytes and 64 KiB leaves room for any edit the
# other checks name (a field added, a value changed) and bounds the parse at a few seconds.
def metadata_bound(expected: bytes) -> int:
    """The most bytes a metadata file may have to be parsed at all, for the ``expected`` bytes."""
    return 2 * len(expected) + 64 * 1024


def another_project(archive: Archive, file_name: str | None, declared: Declared) -> bool:
    """G604, and nothing else judged, for a dist whose file name names another project than pyproject.toml declares:
    an sdist of another project earned every finding a foreign sdist can (59, walk-through round 47), this project's
    name said only in its G406 line among them; the one that says what it is now stands alone, first."""
    if file_name is None or canonicalize_name(file_name) == canonicalize_name(declared.name):
        return False
    archive.fail(
        Check.G604,
        None,
        f"not this project's {archive.kind}: its file name names the project {file_name!r}, and the repository's "
        f"pyproject.toml declares {declared.name!r}; judged no further (a release uploads {declared.name}'s wheel and "
        "sdist, as `python -m gate build` makes them)",
    )
    archive.tools_skipped = "another project's dist"
    return True


def check_metadata(archive: Archive, path: str, declared_by_name: Identity, declared: Declared) -> Identity:
    """G404 if the metadata is invalid, G601 if it names another project or version than the file name,
    G406 where it differs from what the repository declares."""
    data = _text(archive, path)
    if data is None:
        archive.fail(Check.G404, path, "missing or unreadable: nothing says what this dist is")
        return declared_by_name
    bound = metadata_bound(declared.metadata)
    if len(data) > bound:
        archive.fail(
            Check.G406,
            path,
            f"{len(data)} bytes, where the build backend prepares {len(declared.metadata)} from pyproject.toml: "
            f"not parsed (metadata past {bound} bytes is refused by its size; packaging's validation reads a "
            "requirement of a million specifiers for tens of seconds)",
        )
        archive.tools_skipped = f"{path} refused unparsed by its size"
        return declared_by_name
    metadata, why = read_metadata(data)
    if metadata is None:
        archive.fail(Check.G404, path, f"not valid core metadata: {why}")
        return declared_by_name
    name, version = canonicalize_name(metadata.name), metadata.version
    if declared_by_name.name is not None and declared_by_name.name != name:
        archive.fail(
            Check.G601, path, f"metadata names {metadata.name!r}; the file name says {declared_by_name.name!r}"
        )
    if declared_by_name.version is not None and declared_by_name.version != version:
        archive.fail(
            Check.G601, path, f"metadata says version {version}; the file name says {declared_by_name.version}"
        )
    for difference in metadata_differences(data, declared.metadata):
        archive.fail(Check.G406, path, difference)
    return Identity(name, version)


def _split_fields(data: bytes) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The fields of a metadata file as its bytes spell them, (key, value) in order, and the bytes of its body.

    Nothing is decoded, stripped or folded: a value is every byte after the key's colon (the space after it
    included), with its continuation lines, and only the line end is left out (LF, or CR LF: a CR anywhere else was
    refused before, see :func:`_split_one_way`)."""
    parts = re.split(rb"\r?\n\r?\n", data, maxsplit=1)
    head, body = parts[0], parts[1] if len(parts) > 1 else b""
    fields: list[tuple[bytes, bytes]] = []
    lines = head.split(b"\n")
    if len(parts) == 1 and lines[-1] in (b"", b"\r"):
        # the line end of the last field of a file with no blank line and no body after its fields, which was read
        # as a field with no name ("PKG-INFO: : adds ''": walk-through round 47); the body's absence is named apart
        lines.pop()
    for line in lines:
        line = line.removesuffix(b"\r")
        if line[:1] in (b" ", b"\t") and fields:
            key, value = fields[-1]
            fields[-1] = (key, value + b"\n" + line)
        else:
            key, _, value = line.partition(b":")
            fields.append((key, value))
    return fields, body


def _shown(value: bytes) -> str:
    """A raw value for a message: the one space after the colon left out, other bytes as written (any not UTF-8
    as escapes)."""
    return repr(value.removeprefix(b" ").decode("utf-8", "backslashreplace")[:200])


def metadata_differences(data: bytes, expected: bytes) -> list[str]:
    """How the core metadata ``data`` differs from ``expected``, the bytes the repository's build backend prepares
    (hatchling writes those same bytes into the wheel's METADATA and the sdist's PKG-INFO).

    Nothing but those bytes is the expectation: PyPI shows the bytes uploaded and installers read them as written,
    so a value is compared byte for byte (inner or trailing white space, another spelling of a requirement, a
    different UTF-8 character or bytes that are none), and so is Metadata-Version, which tells tools which fields
    to read. Differences are named field by field where they are in a field's value, the description where it is in
    the body; bytes that differ otherwise (the order of the fields, line ends) are named by where they start."""
    if data == expected:
        return []
    theirs_fields, theirs_body = _split_fields(data)
    ours_fields, ours_body = _split_fields(expected)
    theirs: dict[bytes, Counter[bytes]] = {}
    ours: dict[bytes, Counter[bytes]] = {}
    for fields, into in ((theirs_fields, theirs), (ours_fields, ours)):
        for key, value in fields:
            into.setdefault(key, Counter())[value] += 1
    differences = []
    for key in sorted(theirs.keys() | ours.keys(), key=lambda k: (k.lower(), k)):
        added = sorted((theirs.get(key, Counter()) - ours.get(key, Counter())).elements())
        lacking = sorted((ours.get(key, Counter()) - theirs.get(key, Counter())).elements())
        field = key.decode("utf-8", "backslashreplace")
        backend = key.lower() == b"metadata-version"  # no declaration: the backend writes the version it follows
        source, verb = ("the repository's build backend", "write") if backend else ("pyproject.toml", "declare")
        if added and lacking and len(added) == len(lacking) == 1:
            differences.append(f"{field}: {_shown(added[0])}; {source} {verb}s {_shown(lacking[0])}")
            continue
        if added:
            differences.append(f"{field}: adds {_some(added)}, which {source} does not {verb}")
        if lacking:
            differences.append(f"{field}: lacks {_some(lacking)}, which {source} {verb}s")
    head_differs = data[: len(data) - len(theirs_body)] != expected[: len(expected) - len(ours_body)]
    if head_differs and not differences:  # the fields end otherwise, or come in another order
        at = next((i for i, (a, b) in enumerate(zip(data, expected)) if a != b), min(len(data), len(expected)))
        line = expected.count(b"\n", 0, at) + 1
        differences.append(
            f"every field holds what pyproject.toml declares, but the bytes differ from byte {at} (line {line}: "
            f"{data[at : at + 40]!r} where the repository's build backend writes {expected[at : at + 40]!r}): the "
            "order of the fields or their line ends"
        )
    if theirs_body != ours_body:
        differences.append("the description differs from the one pyproject.toml declares (the readme)")
    return differences


def _some(values: list[bytes], shown: int = 5) -> str:
    text = ", ".join(_shown(v) for v in values[:shown])
    return text + (f" and {len(values) - shown} more" if len(values) > shown else "")


def _body(message: Message) -> str:
    payload = message.get_payload()
    return payload.replace("\r\n", "\n").strip() if isinstance(payload, str) else ""


_WHEEL_KEYS = ("Wheel-Version", "Generator", "Root-Is-Purelib", "Tag")
_WHEEL_LINE = re.compile(rb"(Wheel-Version|Generator|Root-Is-Purelib|Tag): [!-~]([ -~]*[!-~])?")


def wheel_file_text(generator: str) -> bytes:
    """WHEEL as the build backend writes it for this project's wheel (hatchling: these lines, in this order)."""
    return f"Wheel-Version: 1.0\nGenerator: {generator}\nRoot-Is-Purelib: true\nTag: {PURE_TAG}\n".encode()


def check_wheel_file(archive: Archive, path: str, declared: Declared) -> None:
    """G407 unless WHEEL says Wheel-Version 1.0, Root-Is-Purelib true and the one tag py3-none-any, in the bytes the
    build backend writes. With its sdist a wheel's WHEEL is held to the rebuilt one's bytes (G508); a wheel judged
    alone is held to them here, or its Generator value (any printable ASCII, of any length up to the text limit) and
    blank lines after the fields would carry a megabyte no installer reads (gate round 15)."""
    found = len(archive.findings)
    _check_wheel_fields(archive, path)
    data = archive.read(path)
    expected = wheel_file_text(declared.generator)
    if len(archive.findings) > found or data is None or data == expected:
        return
    generator = re.search(rb"^Generator: (.*)$", data, re.MULTILINE)
    said = b"" if generator is None else generator.group(1)
    if said != declared.generator.encode():
        archive.fail(
            Check.G407,
            path,
            f"Generator: {said[:60]!r}{'…' if len(said) > 60 else ''}; the build backend the gate runs writes "
            f"{declared.generator!r} (with its sdist, the wheel rebuilt from it would differ: G508)",
        )
    else:
        at = next((i for i, (a, b) in enumerate(zip(data, expected)) if a != b), min(len(data), len(expected)))
        archive.fail(
            Check.G407,
            path,
            f"the fields the build backend writes, in other bytes from byte {at} ({data[at : at + 40]!r} where it "
            f"writes {expected[at : at + 40]!r}): their order or blank lines, which no installer reads",
        )


def _check_wheel_fields(archive: Archive, path: str) -> None:
    data = _text(archive, path)
    if data is None:
        archive.fail(Check.G407, path, "missing or unreadable: installers need it to know where the wheel goes")
        return
    for number, line in enumerate(data.split(b"\n"), 1):
        if line and not _WHEEL_LINE.fullmatch(line):
            archive.fail(
                Check.G407,
                path,
                f"line {number} {line[:60]!r}: not 'Key: value' with one of {', '.join(_WHEEL_KEYS)} spelt so "
                "and nothing around the value (installers differ: uv reads keys case-sensitively, pip reads "
                "'true ' as not purelib)",
            )
            return
    message = BytesParser().parsebytes(data)
    fields = {k.lower(): [str(v).strip() for v in message.get_all(k, [])] for k in message.keys()}
    expected = {"wheel-version": ["1.0"], "root-is-purelib": ["true"], "tag": [str(PURE_TAG)]}
    for key, values in expected.items():
        if fields.get(key) != values:
            archive.fail(Check.G407, path, f"{key.title()}: {fields.get(key, [])}; this project's wheel says {values}")
    if len(fields.get("generator", [])) != 1:
        archive.fail(Check.G407, path, "needs exactly one Generator line")
    for key in sorted(fields.keys() - expected.keys() - {"generator"}):
        archive.fail(Check.G407, path, f"{key.title()}: {fields[key]}, which this project's wheel never carries")
    if _body(message):
        archive.fail(Check.G407, path, "text after the fields")


def check_wheel_name(archive: Archive) -> bool:
    """G407 unless the file name's tags are exactly py3-none-any with no build tag; whether they are."""
    try:
        _, _, build, tags = parse_wheel_filename(archive.dist)
    except InvalidWheelFilename:
        return False  # G405 says so
    if build:
        archive.fail(
            Check.G407, None, f"build tag {build[0]}{build[1]} in the file name; this project's wheel has none"
        )
    if tags != frozenset({PURE_TAG}):
        archive.fail(
            Check.G407,
            None,
            f"tags {', '.join(sorted(map(str, tags)))} in the file name; this project's wheel is {PURE_TAG}",
        )
    return not build and tags == frozenset({PURE_TAG})


def check_canonical_name(archive: Archive, identity: Identity, by_name: Identity, suffix: str) -> None:
    """G405 unless the file is named as the specifications spell the release its metadata states: the name
    normalised with '_', the version as the metadata normalises it, then ``suffix``. packaging, pip, uv and PyPI
    take ``NeuroBrix-0.1-py3-none-any.whl`` (versions compare equal: 0.1 == 0.1.0) for the release
    ``neurobrix-0.1.0-py3-none-any.whl``, yet it is another file: a second upload of one version, under a name no
    build writes."""
    if identity.name is None or identity.version is None or by_name != identity:
        return  # another release than the metadata states: G601 says so
    canonical = f"{identity.name.replace('-', '_')}-{identity.version}{suffix}"
    if archive.dist != canonical:
        archive.fail(
            Check.G405, None, f"the file name spells {identity} otherwise than the specifications do: {canonical}"
        )


# The readers of entry_points.txt disagree: configparser (this check, some installers) folds indented
# lines into the value above, treats ';' and '#' lines as comments and [DEFAULT] as no group, while
# importlib.metadata (what pip and pytest read after the install) strips every line and reads those as
# groups and entries, and distlib's script maker skips a leading ';'. So only lines that every reader
# reads the same way are accepted (hand-written: no library states this common subset).
_EP_GROUP = re.compile(r"\[([A-Za-z0-9_.-]+)\]")
_EP_DRIVE = re.compile(r"[A-Za-z]:")
_EP_ENTRY = re.compile(
    r"[A-Za-z0-9_.-]+ ?= ?[A-Za-z_][A-Za-z0-9_.]*(:[A-Za-z_][A-Za-z0-9_.]*)?( ?\[[A-Za-z0-9_, -]*\])?"
)


def _entry_point_line_problem(line: str) -> str | None:
    """Why one line of entry_points.txt may be read differently by installers (None: it may not)."""
    line = line.removesuffix("\r")
    if not line:
        return None
    if line != line.strip():
        return "leading or trailing white space: readers differ on whether it continues the line above"
    group = _EP_GROUP.fullmatch(line)
    if group:
        if group.group(1).upper() == "DEFAULT":
            return "a [DEFAULT] group: configparser reads no group there, importlib.metadata one"
        return None
    name = line.partition("=")[0].strip() if "=" in line else ""
    if name in (".", "..") or "/" in name or "\\" in name or _EP_DRIVE.match(name):
        # gate round 44: a launcher's name is joined to the scripts folder as it is; pip 23.2 (distlib) writes
        # `sub/dir/x` as scripts/x, installer and pip 26 as scripts/sub/dir/x, and a climbing or absolute name fails
        # pip 26 and installer and fails or lands as its last component in pip 23.2
        return (
            f"the entry point name {name!r} is a path ('/', '\\', '.', '..' or a drive): installers join it to the "
            "scripts folder as it is, so the launcher lands elsewhere than a command of that name (pip 23.2 writes "
            "sub/dir/x as scripts/x, installer and pip 26 as scripts/sub/dir/x; a climbing or absolute name is "
            "refused by them or written elsewhere)"
        )
    if _EP_ENTRY.fullmatch(line):
        return None
    return "neither a [group] nor a 'name = module:attr' entry (comments and other syntax are read differently)"


LAUNCHER_GROUPS = ("console_scripts", "gui_scripts")


def _check_launcher_names(archive: Archive, path: str, found: dict[str, dict[str, str]]) -> None:
    """G408 for two launchers that are one file where the scripts folder is case-insensitive, normalising or Windows'
    (gate round 59): ``neurobrix`` and ``NeuroBrix``, a name with a trailing dot, or one name in both groups. Each
    installer writes every launcher into the scripts folder by its name; there the one written last replaces the
    other, so the command runs another function than the one its name declares. pyproject.toml is the commit's own,
    so such a wheel matches it: the gate refuses it here, naming both."""
    seen: dict[str, tuple[str, str]] = {}
    for group in LAUNCHER_GROUPS:
        for name in found.get(group, {}):
            first = seen.setdefault(names.destination_key(name), (group, name))
            if first != (group, name):
                archive.fail(
                    Check.G408,
                    path,
                    f"[{group}] {name} and [{first[0]}] {first[1]} are one launcher on case-insensitive, "
                    "Unicode-normalising or Windows file systems: installed there, the one written last replaces the "
                    "other and the command runs its function (rename one in pyproject.toml)",
                )


def entry_points_text(entry_points: dict[str, dict[str, str]]) -> bytes:
    """entry_points.txt as the build backend writes it from :func:`gate.repository.declared_entry_points` (hatchling:
    console scripts, gui scripts, the other groups sorted, names sorted in each, ``name = object`` lines, one blank
    line between groups)."""
    return "\n".join(
        f"[{group}]\n" + "".join(f"{name} = {ref}\n" for name, ref in points.items())
        for group, points in entry_points.items()
    ).encode()


def check_entry_points(archive: Archive, path: str, declared: Declared) -> None:
    """G408 unless entry_points.txt holds exactly the entry points pyproject.toml declares, in the bytes the build
    backend writes them in: blank lines and line ends (LF or CR LF, each line), which every reader skips, carried
    hundreds of kilobytes in a wheel judged without its sdist (gate round 15; with it, G508 holds the bytes)."""
    found = len(archive.findings)
    _check_entry_point_values(archive, path, declared)
    data = archive.read(path) if path in archive.files else None
    expected = entry_points_text(declared.entry_points)
    if len(archive.findings) > found or data is None or data == expected:
        return
    at = next((i for i, (a, b) in enumerate(zip(data, expected)) if a != b), min(len(data), len(expected)))
    line = data.count(b"\n", 0, at) + 1
    archive.fail(
        Check.G408,
        path,
        f"pyproject.toml's entry points in other bytes than the build backend writes, from byte {at} (line {line}: "
        f"{data[at : at + 40]!r} where it writes {expected[at : at + 40]!r}): blank lines, line ends or an order "
        "that every reader skips, bytes carried unjudged",
    )


def _check_entry_point_values(archive: Archive, path: str, declared: Declared) -> None:
    if path not in archive.files:
        for group in sorted(declared.entry_points):
            archive.fail(
                Check.G408,
                path,
                f"missing: pyproject.toml declares [{group}] {', '.join(sorted(declared.entry_points[group]))}",
            )
        return
    data = _text(archive, path)
    if data is None:
        return  # unreadable: its G3xx finding says why
    expected = entry_points_text(declared.entry_points)
    bound = metadata_bound(expected)
    if len(data) > bound:  # as core metadata (gate round 19): configparser read 290,000 entries for tens of seconds
        archive.fail(
            Check.G408,
            path,
            f"{len(data)} bytes, where the build backend writes {len(expected)} from pyproject.toml: not parsed (entry "
            f"points past {bound} bytes are refused by their size, whatever fills them: entries, or blank lines and "
            "line ends every reader skips; configparser and installer read hundreds of thousands of console scripts "
            "for tens of seconds)",
        )
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        archive.fail(Check.G408, path, f"cannot be read as installers read it: {exc}")
        return
    for number, line in enumerate(text.split("\n"), 1):
        why = _entry_point_line_problem(line)
        if why:
            archive.fail(Check.G408, path, f"line {number} {line[:80]!r}: {why}")
            return
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment, method-assign]
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        archive.fail(Check.G408, path, f"cannot be read as installers read it: {' '.join(str(exc).split())}")
        return
    found = {group: {k: " ".join(v.split()) for k, v in parser.items(group)} for group in parser.sections()}
    for group in sorted(found.keys() | declared.entry_points.keys()):
        theirs, ours = found.get(group, {}), declared.entry_points.get(group, {})
        for name in sorted(theirs.keys() | ours.keys()):
            if name not in ours:
                archive.fail(
                    Check.G408, path, f"[{group}] {name} = {theirs[name]}, which pyproject.toml does not declare"
                )
            elif name not in theirs:
                archive.fail(Check.G408, path, f"[{group}] lacks {name} = {ours[name]}, which pyproject.toml declares")
            elif theirs[name] != ours[name]:
                archive.fail(
                    Check.G408, path, f"[{group}] {name} = {theirs[name]}; pyproject.toml declares {ours[name]}"
                )
    _check_launcher_names(archive, path, found)
