"""The sixty-fourth round against the release gate: an sdist's PKG-INFO spelt so that its readers part.

hatchling, building the wheel from an sdist, takes the dynamic version from PKG-INFO (``open`` with universal newlines,
then ``email.message_from_string``, the first ``Version``), so a second Version behind a lone CR, or said before the
real one, is the version of the wheel built from the sdist; Python's email parser reads a Requires-Dist or Name behind a
lone CR as a field of its own and one behind VT, FF, FS, GS, RS, NEL, U+2028 or U+2029 as part of the value before it; a
byte order mark hides every field from it (and hatchling fails to build); a blank line holding a space continues the
field before it (Description-Content-Type, a defect to the parser). Each case (tests/gate64_cases.py) is this checkout's
sdist with PKG-INFO alone so rewritten; the gate refused each before this round, G404 where packaging refuses the
metadata, the email parser finds a defect or the fields hold an ASCII control or a lone CR, else G406 (the bytes the
build backend writes into the wheel's METADATA and the sdist's PKG-INFO alike), naming PKG-INFO alone. What pip 23.2.1
to 26.3 and uv build from each sdist and what twine check says (tests/gate64_driver.py ``pkginfo``), and which check
holds each: docs/gate-rounds.md, round 64.
"""

from __future__ import annotations

import gzip
import re
import tarfile
from pathlib import Path

import pytest
from gate64_cases import CASES, EVIL_REQUIREMENT, HIDDEN_VERSION, SEPARATORS, readings
from gate_fixtures import Built, RawTarMember, raw_tar, sdist_members
from test_gate_hostile import REFERENCE, built

from gate.checker import Options, check

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the hostile corpus's built wheel and sdist


@pytest.fixture(scope="module")
def base(built: Built) -> tuple[str, list[RawTarMember], bytes]:
    """PKG-INFO's member name, the sdist's members (read once for the module) and PKG-INFO's bytes as built."""
    name = f"{built.sdist.name.removesuffix('.tar.gz')}/PKG-INFO"
    members = sdist_members(built.sdist)
    return name, members, next(m.data for m in members if m.name == name)


def _expected(data: bytes) -> str:
    """G404 where packaging refuses the metadata, the email parser finds a defect, or the fields (before the first
    blank line) hold a lone CR or an ASCII control other than tab (read as white space by some parsers, not by
    others); else G406, the bytes the build backend writes."""
    read = readings(data)
    head = re.split(rb"\r?\n\r?\n", data, maxsplit=1)[0]
    odd = re.search(rb"\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", head)
    defects = read["bytes"]["defects"]  # type: ignore[index]
    return "G404" if str(read["packaging"]).startswith("refused") or defects or odd else "G406"


@pytest.mark.parametrize("case", list(CASES))
def test_a_pkg_info_its_readers_read_otherwise_is_refused(
    built: Built, base: tuple[str, list[RawTarMember], bytes], tmp_path: Path, case: str
) -> None:
    name, members, original = base
    data = CASES[case](original)
    assert data != original
    path = tmp_path / built.sdist.name
    altered = [m if m.name != name else RawTarMember(name, data, m.type) for m in members]
    path.write_bytes(gzip.compress(raw_tar(altered), compresslevel=1, mtime=0))
    report = check([path], Options(REFERENCE, smoke=False, tools=False))
    found = [(f.code, f.path, f.message) for f in report.findings]
    assert not report.passed, found
    code = _expected(data)
    assert any(c == code and p == name for c, p, _ in found), (code, name, found)
    assert {p for _, p, _ in found} == {name}, found  # nothing else of the sdist was touched


def test_the_readers_part_where_the_round_says(built: Built) -> None:
    """What makes the cases hostile, measured on the readers themselves: hatchling takes a Version behind a lone CR or
    said first as the wheel's version, the email parser reads a requirement behind a lone CR (and behind no other
    separator), a byte order mark hides Name from both, and the PKG-INFO as built reads alike everywhere."""
    with tarfile.open(built.sdist) as tar:
        member = tar.extractfile(f"{built.sdist.name.removesuffix('.tar.gz')}/PKG-INFO")
        assert member is not None
        original = member.read()
    plain = readings(original)
    assert plain["hatchling version"] == built.version and plain["packaging"] == "read"
    for case, edit in CASES.items():
        read = readings(edit(original))
        label = case.split()[0]
        for how in ("bytes", "text"):
            seen = read[how]
            if "Requires-Dist on Author's line" in case:
                assert seen["evil"] == ([EVIL_REQUIREMENT] if label == "CR" else []), (case, how, read)  # type: ignore[index]
            if "Version on Name's line" in case:
                assert seen["Version"][0] == (HIDDEN_VERSION if label == "CR" else built.version), (case, read)  # type: ignore[index]
        if "Version on Name's line" in case:
            assert read["hatchling version"] == (HIDDEN_VERSION if label == "CR" else built.version), (case, read)
            assert label in SEPARATORS
    assert readings(CASES["Version said twice, the other first"](original))["hatchling version"] == HIDDEN_VERSION
    bom = readings(CASES["a byte order mark"](original))
    assert bom["text"]["Name"] == [] and str(bom["hatchling version"]).startswith("refused")  # type: ignore[index]
    crlf = readings(CASES["CR LF line ends"](original))
    assert crlf["packaging"] == "read" and crlf["hatchling version"] == built.version
