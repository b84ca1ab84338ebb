"""Gate round 63's cases: a line separator other than LF inside one line of a wheel's key-value file, hiding a second
line behind it. ``str.splitlines`` ends a line at VT, FF, the file, group and record separators (FS, GS, RS), NEL,
U+2028 and U+2029 as well as at CR and LF; Python's email parser splits what it is fed with ``splitlines`` (so pip and
importlib.metadata, which feed it METADATA and WHEEL as text, read a field behind any of them, and a parser fed bytes,
decoded as ASCII, behind the ASCII ones alone); importlib.metadata splits entry_points.txt with ``splitlines``, where
configparser (``installer``'s reader of it) ends lines at LF alone.

``CASES`` maps a name to ``(file, before, after)``: the wheel's ``file`` (a ``.dist-info`` member, by its last path
component) with the bytes ``before`` replaced by ``after`` once. ``apply`` gives the wheel's members so altered.
"""

from __future__ import annotations

from collections.abc import Sequence

from gate_fixtures import RawMember

SEPARATORS = {
    "VT": "\x0b",
    "FF": "\x0c",
    "FS": "\x1c",
    "GS": "\x1d",
    "RS": "\x1e",
    "NEL": "\x85",
    "LS": "\u2028",
    "PS": "\u2029",
}

EVIL_SCRIPT = "nb-evil = os:system"
EVIL_REQUIREMENT = "Requires-Dist: evil-helper>=1"

CASES: dict[str, tuple[str, bytes, bytes]] = {}
for _label, _sep in SEPARATORS.items():
    # a second console script behind the separator, on neurobrix's own line
    CASES[f"entry_points.txt {_label} after the script"] = (
        "entry_points.txt",
        b"neurobrix = neurobrix.cli:main\n",
        f"neurobrix = neurobrix.cli:main{_sep}{EVIL_SCRIPT}\n".encode(),
    )
    # a Requires-Dist behind the separator, on Author's line
    CASES[f"METADATA {_label} after Author"] = (
        "METADATA",
        b"\nLicense-Expression:",
        f"{_sep}{EVIL_REQUIREMENT}\nLicense-Expression:".encode(),
    )
for _label in ("NEL", "LS"):
    # the Requires-Dist on Summary's line, which packaging holds to one line as str.splitlines reads lines
    CASES[f"METADATA {_label} after Summary"] = (
        "METADATA",
        b"\nProject-URL:",
        f"{SEPARATORS[_label]}{EVIL_REQUIREMENT}\nProject-URL:".encode(),
    )
    # the script behind the group's header: configparser reads the header and skips the rest of its line
    CASES[f"entry_points.txt {_label} after the group"] = (
        "entry_points.txt",
        b"[console_scripts]\n",
        f"[console_scripts]{SEPARATORS[_label]}{EVIL_SCRIPT}\n".encode(),
    )
for _label in ("FF", "RS", "NEL", "LS"):
    # Root-Is-Purelib false behind the separator, before the true one (readers take a field's first value)
    CASES[f"WHEEL {_label} after Wheel-Version"] = (
        "WHEEL",
        b"Wheel-Version: 1.0\n",
        f"Wheel-Version: 1.0{SEPARATORS[_label]}Root-Is-Purelib: false\n".encode(),
    )


def separator(case: str) -> str:
    return SEPARATORS[case.split()[1]]


def member_name(members: Sequence[RawMember], file: str) -> str:
    (name,) = [m.name.decode() for m in members if m.name.decode().endswith(f".dist-info/{file}")]
    return name


def apply(members: Sequence[RawMember], case: str) -> list[RawMember]:
    file, before, after = CASES[case]
    target = member_name(members, file)
    out = []
    for m in members:
        if m.name.decode() == target:
            assert m.data.count(before) == 1, (case, before)
            m = RawMember(m.name, m.data.replace(before, after))
        out.append(m)
    return out


def readings(file: str, data: bytes) -> dict[str, object]:
    """What the readers make of one file: for entry_points.txt, the console scripts importlib.metadata reads (pip
    writes its launchers from them) and configparser reads (``installer``'s reader); for METADATA, whether
    ``packaging`` validates it and the hidden requirement the email parser finds fed text (pip, importlib.metadata)
    and bytes; for WHEEL, the Root-Is-Purelib values the email parser finds."""
    import configparser
    import email.parser
    import importlib.metadata

    from packaging.metadata import ExceptionGroup, Metadata

    text = data.decode("utf-8")
    if file == "entry_points.txt":
        points = importlib.metadata.EntryPoints._from_text(text)  # type: ignore[attr-defined]
        parser = configparser.ConfigParser(delimiters=("=",), interpolation=None, strict=True)
        parser.optionxform = str  # type: ignore[assignment, method-assign]
        try:
            parser.read_string(text)
            found: object = {k: v for k, v in parser.items("console_scripts")}
        except configparser.Error as exc:
            found = f"refused: {exc}"
        return {
            "importlib": sorted(f"{p.name} = {p.value}" for p in points if p.group == "console_scripts"),
            "configparser": found,
        }
    if file == "METADATA":
        try:
            Metadata.from_email(data, validate=True)
            verdict = "read"
        except (ExceptionGroup, ValueError) as exc:
            verdict = f"refused: {exc}"
        hidden = [
            [r for r in parser.get_all("Requires-Dist", []) if "evil" in r]
            for parser in (email.parser.Parser().parsestr(text), email.parser.BytesParser().parsebytes(data))
        ]
        return {"packaging": verdict, "email text": hidden[0], "email bytes": hidden[1]}
    message = email.parser.Parser().parsestr(text)
    return {"Root-Is-Purelib": message.get_all("Root-Is-Purelib")}
