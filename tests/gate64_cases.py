"""Gate round 64's cases (not a test file): an sdist's PKG-INFO spelt so that its readers part, each this checkout's
sdist with PKG-INFO alone rewritten in memory. Shared by tests/test_gate_round64.py and the runs of
tests/gate64_driver.py; :func:`readings` is what each reader takes from one such PKG-INFO.

Two kinds. A line separator other than LF (VT, FF, FS, GS, RS, NEL, U+2028, U+2029, a lone CR) inside one field's
line, a second field behind it: a Version before the real one on Name's line (hatchling, building the wheel from the
sdist, takes the dynamic version from PKG-INFO's first ``Version``), a Requires-Dist on Author's line, a Name on
Metadata-Version's line. And PKG-INFO disagreeing with the wheel's METADATA (the bytes the build backend writes into
both) in ways a reader may see otherwise than the gate: a folded field, a field said twice, a Dynamic field, a
description whose first lines look like fields, a blank line holding a space, a byte order mark, CR LF line ends.

``CASES`` maps a name to an edit of PKG-INFO's bytes.
"""

from __future__ import annotations

from collections.abc import Callable

Edit = Callable[[bytes], bytes]

SEPARATORS = {
    "VT": "\x0b",
    "FF": "\x0c",
    "FS": "\x1c",
    "GS": "\x1d",
    "RS": "\x1e",
    "NEL": "\x85",
    "LS": "\u2028",
    "PS": "\u2029",
    "CR": "\r",
}

HIDDEN_VERSION = "9.9.9"
EVIL_REQUIREMENT = "evil-helper>=1"
HIDDEN_NAME = "evil-project"


def _sub(old: bytes, new: bytes) -> Edit:
    def edit(data: bytes) -> bytes:
        assert data.count(old) == 1, (old, data[:200])
        return data.replace(old, new)

    return edit


def _body_first(added: bytes) -> Edit:
    """``added`` as the description's first lines (right after the blank line that ends the fields)."""

    def edit(data: bytes) -> bytes:
        at = data.index(b"\n\n") + 2
        return data[:at] + added + data[at:]

    return edit


def _bom(data: bytes) -> bytes:
    return b"\xef\xbb\xbf" + data


def _crlf(data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


CASES: dict[str, Edit] = {}
for _label, _sep in SEPARATORS.items():
    # a Version before the real one, on Name's line: the first Version is hatchling's dynamic version
    CASES[f"{_label} hides Version on Name's line"] = _sub(
        b"\nName: neurobrix\n", f"\nName: neurobrix{_sep}Version: {HIDDEN_VERSION}\n".encode()
    )
for _label in ("VT", "FS", "NEL", "LS", "PS", "CR"):
    CASES[f"{_label} hides Requires-Dist on Author's line"] = _sub(
        b"\nLicense-Expression:", f"{SEPARATORS[_label]}Requires-Dist: {EVIL_REQUIREMENT}\nLicense-Expression:".encode()
    )
for _label in ("LS", "CR"):
    CASES[f"{_label} hides Name on Metadata-Version's line"] = _sub(
        b"\nName: neurobrix\n", f"{SEPARATORS[_label]}Name: {HIDDEN_NAME}\nName: neurobrix\n".encode()
    )
CASES.update(
    {
        "Version folded onto a continuation line": _sub(b"\nVersion: 0.1.0\n", b"\nVersion:\n 0.1.0\n"),
        "Requires-Dist folded with a marker": _sub(
            b"\nRequires-Dist: numpy>=1.24\n", b"\nRequires-Dist: numpy>=1.24\n ; python_version < '3'\n"
        ),
        "Version said twice, the other first": _sub(
            b"\nVersion: 0.1.0\n", f"\nVersion: {HIDDEN_VERSION}\nVersion: 0.1.0\n".encode()
        ),
        "Requires-Dist said once more": _sub(
            b"\nProvides-Extra: dev\n", f"\nRequires-Dist: {EVIL_REQUIREMENT}\nProvides-Extra: dev\n".encode()
        ),
        "Dynamic: Requires-Dist": _sub(b"\nRequires-Python:", b"\nDynamic: Requires-Dist\nRequires-Python:"),
        "Dynamic: Version": _sub(b"\nRequires-Python:", b"\nDynamic: Version\nRequires-Python:"),
        "the description starts with field lines": _body_first(
            f"Version: {HIDDEN_VERSION}\nRequires-Dist: {EVIL_REQUIREMENT}\n\n".encode()
        ),
        "the blank line holds a space": lambda data: data.replace(b"\n\n", b"\n \n", 1),
        "a byte order mark": _bom,
        "CR LF line ends": _crlf,
        "a byte order mark and CR LF": lambda data: _bom(_crlf(data)),
    }
)


def readings(data: bytes) -> dict[str, object]:
    """What the readers take from one PKG-INFO: the Name, Version and hidden requirement Python's email parser finds
    fed bytes (the gate, packaging) and fed text as hatchling reads the file (``open`` with universal newlines, then
    ``email.message_from_string``), hatchling's own reading of it (the version the wheel built from the sdist gets),
    packaging's verdict, and the parser's defects."""
    import email
    import email.parser
    import io

    from hatchling.metadata.spec import project_metadata_from_core_metadata
    from packaging.metadata import ExceptionGroup, Metadata

    text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()  # hatchling's open(..., encoding="utf-8")
    seen: dict[str, object] = {}
    for how, message in (
        ("bytes", email.parser.BytesParser().parsebytes(data)),
        ("text", email.message_from_string(text)),
    ):
        seen[how] = {
            "Name": [str(v) for v in message.get_all("Name", [])],  # a Header where a value is no ASCII
            "Version": [str(v) for v in message.get_all("Version", [])],
            "evil": [str(r) for r in message.get_all("Requires-Dist", []) if "evil" in str(r)],
            "defects": [type(d).__name__ for d in message.defects],
        }
    try:
        hatch: object = project_metadata_from_core_metadata(text).get("version")
    except ValueError as exc:
        hatch = f"refused: {exc}"
    try:
        Metadata.from_email(data, validate=True)
        verdict = "read"
    except (ExceptionGroup, ValueError) as exc:
        verdict = f"refused: {exc}"
    return {**seen, "hatchling version": hatch, "packaging": verdict}
