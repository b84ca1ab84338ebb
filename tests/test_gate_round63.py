"""The sixty-third round against the release gate: line separators other than LF inside a key-value file of a wheel.

``str.splitlines`` ends a line at VT, FF, the file, group and record separators, NEL, U+2028 and U+2029 besides CR and
LF. importlib.metadata splits entry_points.txt so, and pip writes its launchers from what importlib.metadata reads,
where ``installer``'s configparser ends a line at LF alone: ``neurobrix = neurobrix.cli:main<U+2028>nb-evil =
os:system`` is two console scripts to pip and one (with a long value) to ``installer``, and a script hidden behind the
``[console_scripts]`` header is read by importlib.metadata and skipped by configparser. Python's email parser (pip,
importlib.metadata, ``installer``, packaging) ends no header line there, so a Requires-Dist or Root-Is-Purelib hidden
behind one in METADATA or WHEEL is read as part of the field before it; packaging holds Summary to one line as
``splitlines`` counts lines. Each case (tests/gate63_cases.py) is one file of this checkout's wheel so altered, RECORD
telling the truth; the gate refused each before this round, with the code the readers' answers call for (G408 for
entry_points.txt, G407 for WHEEL, G404 for METADATA that packaging refuses or whose separator is an ASCII control in
the fields, else G406), naming that file alone. What pip 23.2.1 to 26.3, ``installer`` and uv install from each
(tests/gate63_driver.py ``separators``) and which check holds each: docs/gate-rounds.md, round 63.
"""

from __future__ import annotations

import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from gate63_cases import CASES, EVIL_SCRIPT, apply, member_name, readings, separator
from gate_fixtures import Built, RawMember, raw_zip, wheel_members, with_true_record
from test_gate_hostile import REFERENCE, built

from gate.checker import Options, check

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the hostile corpus's built wheel and sdist

_CODE = {"WHEEL": "G407", "entry_points.txt": "G408"}


@pytest.fixture(scope="module")
def packed(built: Built) -> list[RawMember]:
    """The built wheel's members, each deflated once for the module (a case recompresses only what it changes)."""
    return [replace(m, compressed=m.stored()) for m in wheel_members(built.wheel)]


def _expected(case: str, data: bytes) -> str:
    """G404 where packaging refuses the metadata, or the separator is an ASCII control in the fields (which pip and
    packaging strip around a value as white space and uv's version parsers do not); else the bytes the backend
    writes (G406, G407, G408)."""
    file = CASES[case][0]
    if file != "METADATA":
        return _CODE[file]
    sep = separator(case)
    refused = str(readings(file, data)["packaging"]).startswith("refused")
    return "G404" if refused or (sep.isascii() and sep.isspace()) else "G406"


@pytest.mark.parametrize("case", list(CASES))
def test_a_line_separator_inside_a_key_value_line_is_refused(
    built: Built, packed: list[RawMember], tmp_path: Path, case: str
) -> None:
    members = apply(packed, case)
    name = member_name(members, CASES[case][0])
    members = [replace(m, compressed=None) if m.name.decode() == name else m for m in members]
    data = next(m.data for m in members if m.name.decode() == name)
    path = tmp_path / built.wheel.name
    path.write_bytes(raw_zip(with_true_record(members)))
    report = check([path], Options(REFERENCE, smoke=False, tools=False))
    found = [(f.code, f.path, f.message) for f in report.findings]
    assert not report.passed, found
    code = _expected(case, data)
    assert any(c == code and p == name for c, p, _ in found), (code, name, found)
    assert {p for _, p, _ in found} == {name}, found  # nothing else of the wheel was touched


def test_the_readers_part_where_the_round_says(built: Built) -> None:
    """What makes the cases hostile, measured on the readers themselves: importlib.metadata (pip's source of
    launchers) reads the hidden console script behind every separator, configparser (``installer``'s) never; the
    email parser reads no field behind one, bytes or text, and packaging 26.3 and later refuse a Summary split by NEL or
    U+2028 (26.2 and earlier read the separator as part of the one line: measured, 26.0 to 26.4; the gate's byte
    comparison holds those with G406, which ``_expected`` reads from the same answer)."""
    import packaging
    from packaging.version import Version

    summary_held = Version(packaging.__version__) >= Version("26.3")
    with zipfile.ZipFile(built.wheel) as z:
        files = {
            f: z.read(f"neurobrix-{built.version}.dist-info/{f}") for f in ("entry_points.txt", "METADATA", "WHEEL")
        }
    for case, (file, before, after) in CASES.items():
        read = readings(file, files[file].replace(before, after))
        if file == "entry_points.txt":
            assert EVIL_SCRIPT in read["importlib"], (case, read)  # type: ignore[operator]
            assert isinstance(read["configparser"], dict) and "nb-evil" not in read["configparser"], (case, read)
        elif file == "METADATA":
            assert read["email text"] == read["email bytes"] == [], (case, read)
            assert str(read["packaging"]).startswith("refused") == ("Summary" in case and summary_held), (case, read)
        else:
            assert read["Root-Is-Purelib"] == ["true"], (case, read)
    # the controls: the files as built read alike
    plain = readings("entry_points.txt", files["entry_points.txt"])
    assert plain["importlib"] == ["neurobrix = neurobrix.cli:main"]
    assert plain["configparser"] == {"neurobrix": "neurobrix.cli:main"}
    assert readings("METADATA", files["METADATA"])["packaging"] == "read"
