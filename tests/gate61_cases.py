"""Gate round 61's corpus (not a test file): the key-value files of a dist spelt so that their readers part, a header
in other case, said twice, folded onto a continuation line, with an RFC 2047 encoded word, without the space after its
colon or with one before it, behind the blank line, and entry_points.txt's sections and keys so spelt; each one file
of this project's wheel or sdist rewritten in memory. Shared by tests/test_gate_round61.py and the installer runs of
tests/gate61_driver.py; :func:`readings` is what each reader takes from one such file.
"""

from __future__ import annotations

import configparser
import email.parser
import email.policy
import re
from collections.abc import Callable

from packaging.metadata import ExceptionGroup, Metadata, parse_email

Edit = Callable[[bytes], bytes]


def _sub(old: bytes, new: bytes) -> Edit:
    def edit(data: bytes) -> bytes:
        assert data.count(old) == 1, (old, data[:200])
        return data.replace(old, new)

    return edit


def _after_line(start: bytes, added: bytes) -> Edit:
    """``added`` (a whole line) after the first line starting with ``start``."""

    def edit(data: bytes) -> bytes:
        at = (
            data.index(b"\n", data.index(b"\n" + start) + 1) + 1
            if not data.startswith(start)
            else data.index(b"\n") + 1
        )
        return data[:at] + added + data[at:]

    return edit


def _in_head(added: bytes) -> Edit:
    """``added`` as the last field line before the blank line that ends the fields."""

    def edit(data: bytes) -> bytes:
        at = data.index(b"\n\n") + 1 if b"\n\n" in data else len(data)
        return data[:at] + added + data[at:]

    return edit


def _in_body(added: bytes) -> Edit:
    def edit(data: bytes) -> bytes:
        at = data.index(b"\n\n") + 2
        return data[:at] + added + data[at:]

    return edit


EVIL = b"evil-helper>=1"  # a dependency the project never declared
# name -> (file, edit): file is the wheel's METADATA, WHEEL or entry_points.txt, or the sdist's PKG-INFO
CASES: dict[str, tuple[str, Edit]] = {
    # METADATA: the fields pip resolves and installs by (Requires-Dist, Requires-Python), the name and version
    "METADATA name in lower case": ("METADATA", _sub(b"\nName: ", b"\nname: ")),
    "METADATA requires-dist in lower case": ("METADATA", _in_head(b"requires-dist: " + EVIL + b"\n")),
    "METADATA REQUIRES-PYTHON in upper case": ("METADATA", _sub(b"Requires-Python: >=3.10", b"REQUIRES-PYTHON: >=2.7")),
    "METADATA Requires-Python twice": ("METADATA", _after_line(b"Requires-Python: ", b"Requires-Python: >=2.7\n")),
    "METADATA requires-python twice, other case first": (
        "METADATA",
        _sub(b"Requires-Python: >=3.10\n", b"requires-python: >=2.7\nRequires-Python: >=3.10\n"),
    ),
    "METADATA Requires-Python folded": ("METADATA", _sub(b"Requires-Python: >=3.10", b"Requires-Python:\n >=2.7")),
    "METADATA Requires-Dist folded onto a second requirement": (
        "METADATA",
        _sub(b"Requires-Dist: numpy>=1.24", b"Requires-Dist: numpy>=1.24,\n\t" + EVIL),
    ),
    "METADATA Requires-Dist encoded word": ("METADATA", _in_head(b"Requires-Dist: =?utf-8?q?evil-helper=3E=3D1?=\n")),
    "METADATA Requires-Python encoded word": (
        "METADATA",
        _sub(b"Requires-Python: >=3.10", b"Requires-Python: =?utf-8?q?=3E=3D2=2E7?="),
    ),
    "METADATA Requires-Dist without the space": ("METADATA", _in_head(b"Requires-Dist:" + EVIL + b"\n")),
    "METADATA Requires-Dist with a tab": ("METADATA", _in_head(b"Requires-Dist:\t" + EVIL + b"\n")),
    "METADATA Requires-Dist with a space before the colon": ("METADATA", _in_head(b"Requires-Dist : " + EVIL + b"\n")),
    "METADATA Requires-Dist behind the blank line": ("METADATA", _in_body(b"Requires-Dist: " + EVIL + b"\n")),
    "METADATA Requires (1.1) added": ("METADATA", _in_head(b"Requires: " + EVIL + b"\n")),
    "METADATA Metadata-Version twice": ("METADATA", _after_line(b"Metadata-Version: ", b"metadata-version: 1.0\n")),
    "METADATA Version folded": ("METADATA", _sub(b"\nVersion: 0.1.0", b"\nVersion:\n 0.1.0")),
    "METADATA NAME twice": ("METADATA", _after_line(b"Name: ", b"NAME: neurobrix-evil\n")),
    # WHEEL: where an installer puts the wheel and whether it installs it at all
    "WHEEL root-is-purelib in lower case": ("WHEEL", _sub(b"Root-Is-Purelib: true", b"root-is-purelib: true")),
    "WHEEL Root-Is-Purelib twice": ("WHEEL", _after_line(b"Root-Is-Purelib: ", b"Root-Is-Purelib: false\n")),
    "WHEEL Root-Is-Purelib True": ("WHEEL", _sub(b"Root-Is-Purelib: true", b"Root-Is-Purelib: True")),
    "WHEEL Root-Is-Purelib folded": ("WHEEL", _sub(b"Root-Is-Purelib: true", b"Root-Is-Purelib:\n true")),
    "WHEEL Wheel-Version twice": ("WHEEL", _after_line(b"Wheel-Version: ", b"wheel-version: 9.0\n")),
    "WHEEL Wheel-Version encoded word": ("WHEEL", _sub(b"Wheel-Version: 1.0", b"Wheel-Version: =?utf-8?q?1=2E0?=")),
    "WHEEL tag added in lower case": ("WHEEL", _in_head(b"tag: cp311-cp311-manylinux_2_17_x86_64\n")),
    # entry_points.txt: the launchers installers write
    "entry_points console script twice": ("entry_points.txt", _in_head(b"neurobrix = os:system\n")),
    "entry_points Console_Scripts in other case": (
        "entry_points.txt",
        _sub(b"[console_scripts]", b"[Console_Scripts]"),
    ),
    "entry_points second console_scripts section": (
        "entry_points.txt",
        lambda d: d + b"\n[console_scripts]\nnb-evil = os:system\n",
    ),
    "entry_points value folded": (
        "entry_points.txt",
        _sub(b"neurobrix = neurobrix.cli:main", b"neurobrix =\n    neurobrix.cli:main"),
    ),
    "entry_points colon for the equals sign": (
        "entry_points.txt",
        _sub(b"neurobrix = neurobrix.cli:main", b"neurobrix: neurobrix.cli:main"),
    ),
    "entry_points key in other case": ("entry_points.txt", _sub(b"neurobrix = ", b"NeuroBrix = ")),
    "entry_points a script configparser reads as a comment": ("entry_points.txt", _in_head(b";nb-evil = os:system\n")),
    "entry_points an indented script": ("entry_points.txt", _in_head(b"    nb-evil = os:system\n")),
    "entry_points section spelt with spaces": (
        "entry_points.txt",
        _sub(b"[console_scripts]", b"[ console_scripts ]"),
    ),
    # PKG-INFO: the sdist's metadata, whose dynamic Version the build of the sdist takes
    "PKG-INFO version twice, other case first": (
        "PKG-INFO",
        _sub(b"\nVersion: 0.1.0\n", b"\nversion: 0.2.0\nVersion: 0.1.0\n"),
    ),
    "PKG-INFO Version folded": ("PKG-INFO", _sub(b"\nVersion: 0.1.0", b"\nVersion:\n 0.1.0")),
    "PKG-INFO Requires-Python twice": ("PKG-INFO", _after_line(b"Requires-Python: ", b"Requires-Python: >=2.7\n")),
}


def _email(data: bytes):
    """pip's reading: ``email.parser`` with the compat32 policy (importlib.metadata's, and pip's WHEEL reader's)."""
    return email.parser.BytesParser(policy=email.policy.compat32).parsebytes(data)


def readings(file: str, data: bytes) -> dict[str, object]:
    """What each reader takes from one METADATA, PKG-INFO, WHEEL or entry_points.txt: the fields an install turns
    on, as pip (the email parser, first value, keys without case), ``packaging`` (its raw parse, decoding encoded
    words, and its validation), ``installer`` (configparser for entry_points.txt) and importlib.metadata read them."""
    out: dict[str, object] = {}
    if file in ("METADATA", "PKG-INFO"):
        m = _email(data)
        out["email"] = {
            k: m.get_all(k) for k in ("Name", "Version", "Requires-Python", "Requires-Dist", "Metadata-Version")
        }
        out["email defects"] = [type(d).__name__ for d in m.defects]
        raw, unparsed = parse_email(data)
        out["packaging raw"] = {
            k: raw.get(k) for k in ("name", "version", "requires_python", "requires_dist", "metadata_version")
        }
        out["packaging unparsed"] = sorted(unparsed)
        try:
            md = Metadata.from_email(data, validate=True)
            out["packaging"] = {
                "name": md.name,
                "version": str(md.version),
                "requires_python": str(md.requires_python),
                "requires_dist": [str(r) for r in md.requires_dist or []],
            }
        except (ExceptionGroup, ValueError) as exc:
            out["packaging"] = f"refused: {type(exc).__name__}"
        if file == "PKG-INFO":  # the build of the sdist takes each dynamic field (the version) from it so
            from hatchling.metadata.spec import project_metadata_from_core_metadata

            try:
                out["hatchling version"] = project_metadata_from_core_metadata(data.decode())["version"]
            except ValueError as exc:
                out["hatchling version"] = f"refused: {exc}"
    elif file == "WHEEL":
        m = _email(data)
        out["email"] = {k: m.get_all(k) for k in ("Wheel-Version", "Root-Is-Purelib", "Tag")}
        # pip: wheel_version() splits the first Wheel-Version on dots; purelib is `.lower() == "true"` of the first
        first = m.get("Root-Is-Purelib", "")
        out["pip purelib"] = first.lower() == "true"
        version = m.get("Wheel-Version")
        try:
            out["pip version"] = tuple(map(int, (version or "").strip().split(".")))
        except ValueError:
            out["pip version"] = "refused"
        # uv reads keys as spelt: Root-Is-Purelib in another case is no key to it
        out["keys as spelt"] = sorted({line.split(b":", 1)[0].decode() for line in data.splitlines() if b":" in line})
    else:
        text = data.decode()
        from importlib.metadata import EntryPoints  # pip's launchers: dist.entry_points of importlib.metadata

        try:
            eps = EntryPoints._from_text(text)  # type: ignore[attr-defined]
            out["importlib"] = sorted((e.group, e.name, e.value) for e in eps)
        except (ValueError, TypeError) as exc:
            out["importlib"] = f"refused: {type(exc).__name__}"
        parser = configparser.ConfigParser(delimiters="=")  # installer's parse_entrypoints
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        try:
            parser.read_string(text)
            out["configparser"] = sorted((s, k, v) for s in parser.sections() for k, v in parser.items(s))
        except configparser.Error as exc:
            out["configparser"] = f"refused: {type(exc).__name__}"
    return out


def head_keys(data: bytes) -> list[str]:
    """The keys of the field lines as spelt, up to the blank line."""
    head = re.split(rb"\r?\n\r?\n", data, maxsplit=1)[0]
    return [line.split(b":", 1)[0].decode() for line in head.split(b"\n") if line and line[:1] not in b" \t"]
