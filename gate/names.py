"""Member names judged from their raw bytes, and where each would land on the file systems users have.

A name is decoded strictly (a zip name is ASCII unless it carries the UTF-8 flag, which every tool
reads the same way; a tar name must be UTF-8), then refused if it is absolute, climbs out with ``..``
or holds a backslash, a control character or a line separator (G301-G303), and if it would install somewhere other
than it reads on some file system (G310): ``.`` or empty components that installers collapse, a
trailing dot or space that Windows drops, a ``:`` (an NTFS stream or a drive), an 8.3 short name
(``_TABLE~1``), a Windows device name, a name not in Unicode NFC or holding an invisible format
character (macOS normalises both away). :func:`destination_key` is the one spelling that all the
aliases of a path share (G305 compares members by it).

Hand-written: no packaging library judges names for every file system an installer may write to
(installer and pip join a member's name to the target folder as it is).
"""

from __future__ import annotations

import re
import unicodedata

from .checks import Check

_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# the line boundaries str.splitlines knows past the controls (gate round 29): pip and installer read RECORD as
# csv.reader(text.splitlines()), the csv module writes a field holding one unquoted, so a member so named is two rows to
# them and one to every CSV reader (the gate's): pip's installed RECORD, which its uninstall follows, names other files
_LINE_SEPARATOR = re.compile("[\u2028\u2029]")
_SHORT_NAME = re.compile(r"~\d")  # Windows 8.3 aliases: PROGRA~1, _TABLE~1
_WINDOWS_INVALID = re.compile(r'[<>"|?*]')
_DEVICES = {
    "con",
    "prn",
    "aux",
    "nul",
    "conin$",
    "conout$",
    *(f"com{i}" for i in range(10)),
    *(f"lpt{i}" for i in range(10)),
    # Windows reserves these too (Microsoft's "Naming Files, Paths, and Namespaces"): COM and LPT with a superscript
    # digit, which str.isdigit() takes for a digit yet no pattern of ASCII digits matches (gate round 17)
    *(f"{port}{digit}" for port in ("com", "lpt") for digit in "\u00b9\u00b2\u00b3"),
}

NameProblem = tuple[Check, str]

# The longest name any file system an installer writes to holds (gate round 19): a component of 255 bytes (NAME_MAX on
# Linux and macOS; NTFS takes 255 UTF-16 units) and a path of 1,024 (PATH_MAX on macOS; the path an installer opens is
# longer still, joined to site-packages). A zip name may be 65,535 bytes, and judging one for every file system was
# costly: Unicode normalisation sorts a run of combining marks into canonical order in quadratic time (four names of
# 32,000 marks took 47 s) and the checks below read a name character by character in Python (1,900 names of 64 KiB took
# seven minutes). A longer name is refused by its length, before anything else is done with it.
NAME_MAX, PATH_MAX = 255, 1024


def too_long(name: str) -> str:
    """Why no file system holds ``name`` ('' when one does): a component or the whole name past the longest."""
    size = len(name.encode())
    longest = max(len(part.encode()) for part in name.split("/"))
    if longest <= NAME_MAX and size <= PATH_MAX:
        return ""
    return (
        f"a name of {size} bytes whose longest component is {longest}: no file system an installer writes to holds it "
        f"(components of {NAME_MAX} bytes, paths of {PATH_MAX} on macOS), pip fails on it; refused by its length, "
        "before it is judged for every file system"
    )


def decode_zip_name(raw: bytes, utf8_flag: bool) -> tuple[str | None, str]:
    """The name a zip entry's raw bytes spell, or (None, why) where tools would read them differently."""
    if not utf8_flag and not raw.isascii():
        return None, (
            f"name {raw!r} is not ASCII and lacks the UTF-8 flag: some tools read it as cp437, others as UTF-8"
        )
    return _decode(raw)


def decode_tar_name(raw: bytes) -> tuple[str | None, str]:
    return _decode(raw)


def _decode(raw: bytes) -> tuple[str | None, str]:
    if not raw:
        return None, "an empty name"
    if b"\x00" in raw:
        return None, f"name {raw!r} holds a NUL byte: tools cut the name there, or not"
    try:
        return raw.decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        return None, f"name {raw!r} is not valid UTF-8 ({exc.reason})"


def name_problems(name: str, is_dir: bool = False) -> list[NameProblem]:
    """Every G301/G302/G303/G310 problem of one decoded member name ('/'-separated)."""
    problems: list[NameProblem] = []
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        problems.append((Check.G301, "absolute name: extracting it writes outside the target folder"))
    if ".." in re.split(r"[/\\]", name):
        problems.append((Check.G302, "a '..' component: extracting it writes outside the target folder"))
    if "\\" in name or _CONTROL.search(name):
        problems.append((Check.G303, f"name {name!r} has a backslash or a control character"))
    elif _LINE_SEPARATOR.search(name):
        problems.append(
            (
                Check.G303,
                f"name {name!r} has a line separator (U+2028, U+2029): pip and installer split its RECORD row there "
                "(str.splitlines), the csv module does not",
            )
        )
    if problems:
        return problems
    long = too_long(name)
    if long:
        return [(Check.G310, long)]
    body = name[:-1] if is_dir and name.endswith("/") else name
    canonical = canonical_name(body)
    reasons: list[str] = []
    parts = body.split("/")
    if "" in parts or "." in parts:
        reasons.append("an empty or '.' component, which installers collapse")
    if any(p != p.rstrip(". ") for p in parts if p not in ("", ".")):
        reasons.append("a component ending in a dot or a space, which Windows drops")
    if ":" in body:
        reasons.append("a ':', which Windows reads as a drive or an NTFS stream (name::$INDEX_ALLOCATION)")
    if _WINDOWS_INVALID.search(body):
        reasons.append("a character Windows does not allow in a file name")
    if any(_SHORT_NAME.search(p) for p in parts):
        reasons.append("a '~N' component, which Windows may take for the 8.3 short name of another folder")
    if any(p.split(".", 1)[0].rstrip(" ").casefold() in _DEVICES for p in parts):
        reasons.append("a Windows device name (CON, NUL, COM1, ...)")
    if unicodedata.normalize("NFC", body) != body:
        reasons.append("a name not in Unicode NFC, which macOS and some tools normalise")
    if any(unicodedata.category(ch) == "Cf" for ch in body):
        reasons.append("an invisible format character, which macOS ignores in names")
    if reasons:
        where = f"; it can install as {canonical!r}" if canonical != body else ""
        problems.append((Check.G310, "; ".join(reasons) + where))
    return problems


def canonical_name(name: str) -> str:
    """The path a name installs as where every alias is resolved, in its own case."""
    parts = []
    for part in name.split("/"):
        part = unicodedata.normalize("NFC", part)
        part = "".join(ch for ch in part if unicodedata.category(ch) != "Cf")
        part = part.split(":", 1)[0].rstrip(". ")
        if part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


def destination_key(name: str) -> str:
    """One spelling for every alias of a path: canonical, then case-folded (Windows and macOS disks).

    Upper-cased first: NTFS and exFAT compare names through an upcase table (Unicode's simple uppercase mapping),
    which takes the dotless i (U+0131) to I, where case folding keeps it apart from i; so ``clı.py`` and ``cli.py``
    are one file on Windows (gate round 17). It is the one character whose upper case folds otherwise than it does.
    A name no file system holds (:func:`too_long`, refused) is its own key: it lands nowhere."""
    if too_long(name):
        return name
    return unicodedata.normalize("NFC", canonical_name(name).upper().casefold())
