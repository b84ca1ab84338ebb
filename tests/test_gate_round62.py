"""The sixty-second round against the release gate: RECORD's hash field spelt every way its readers part.

A wheel's RECORD names each file's hash as ``algorithm=digest``. pip (23.2 to 26.3) and uv 0.13.9 install a wheel
without reading a digest, and pip keeps the wheel's row in the installed RECORD; ``installer``'s record validation
(``python -m installer`` and Poetry run it) takes any name in ``hashlib.algorithms_available`` (``md5``, ``sha1``,
``sha224``, ``sha512_256``, ``sha3_384``, ``blake2s``), refuses the trusted ones spelt in other case, and compares the
digest as a string; a base64 decoder reads one digest from strings installer's comparison tells apart (the last
character's free bits, ``=`` padding). Each case (tests/gate62_cases.py) spells one row, or every row, one way in this
checkout's wheel, every other byte the built wheel's; the gate must refuse each with the code the spelling calls for,
read off pip's own list of the hashes it trusts (G206 for a name off it or spelt otherwise, G203 for a digest not
base64's one form) and naming only the rows so spelt, and pass the two controls, rows hashed with sha384 and sha512,
which every installer installs as the wheel as built (tests/gate62_driver.py ``record``; docs/gate-rounds.md, round 62).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from gate62_cases import CASES, TARGET, expected_code, readings, record_bytes
from gate_fixtures import Built, RawMember, raw_zip, wheel_members
from test_gate_hostile import REFERENCE, built

from gate.checker import Options, check
from gate.checks import SHOWN_PER_CHECK

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the hostile corpus's built wheel and sdist


@pytest.fixture(scope="module")
def packed(built: Built) -> tuple[list[RawMember], str, list[tuple[str, bytes]]]:
    """The built wheel's members, each deflated once for the module (a case writes only RECORD anew)."""
    members = wheel_members(built.wheel)
    record = next(m.name for m in members if m.name.endswith(b".dist-info/RECORD")).decode()
    rows = [(m.name.decode(), m.data) for m in members if m.name.decode() != record]
    return [RawMember(m.name, m.data, compressed=m.stored()) for m in members], record, rows


def _wheel(built: Built, packed: tuple[list[RawMember], str, list[tuple[str, bytes]]], folder: Path, case: str) -> Path:
    members, record, rows = packed
    data = record_bytes(rows, record, case)
    path = folder / built.wheel.name
    path.write_bytes(raw_zip([m if m.name.decode() != record else RawMember(m.name, data) for m in members]))
    return path


def _spelt_rows(case: str, rows: list[tuple[str, bytes]]) -> dict[str, str | None]:
    scope = CASES[case][0]
    return {path: expected_code(case, data) for path, data in rows if scope == "all" or path == TARGET}


@pytest.mark.parametrize("case", list(CASES))
def test_a_record_hash_spelt_otherwise_is_refused_on_its_rows(
    built: Built, packed: tuple[list[RawMember], str, list[tuple[str, bytes]]], tmp_path: Path, case: str
) -> None:
    expected = _spelt_rows(case, packed[2])
    report = check([_wheel(built, packed, tmp_path, case)], Options(REFERENCE, smoke=False, tools=False))
    found = [(f.code, f.path, f.message) for f in report.findings]
    refused = {path: code for path, code in expected.items() if code is not None}
    assert report.passed == (not refused), found
    # only the rows so spelt are named (a row under a name the gate does not read also leaves its file unlisted, G202)
    assert {p for _, p, _ in found} <= set(refused), found
    for code in set(refused.values()):
        rows = sorted(p for p, c in refused.items() if c == code)
        named = [(p, m) for c, p, m in found if c == code]
        if len(rows) <= SHOWN_PER_CHECK:
            assert sorted(p for p, _ in named) == rows, (code, rows, found)
        else:  # the report shows the first findings of a check, then one counting the rest
            assert len(named) == SHOWN_PER_CHECK + 1, found
            assert named[-1][1].startswith(f"and {len(rows) - SHOWN_PER_CHECK} more {code} findings"), named[-1]


def test_the_readers_part_where_the_round_says(built: Built) -> None:
    """What makes the spellings hostile, measured on the readers themselves: installer's record validation takes
    names pip's hash checks do not trust (any in ``hashlib.algorithms_available``) and refuses the trusted ones in
    upper case, and a decoder reads the true digest from strings installer tells apart; the controls read alike."""
    with zipfile.ZipFile(built.wheel) as z:
        data = z.read(TARGET)
    for case in ("md5 every row", "sha1 one row", "sha224 one row", "sha512_256 one row", "blake2s one row"):
        assert readings(case, data) == {"installer": True, "decoded": True} and expected_code(case, data) == "G206"
    for case in ("SHA384 in upper case", "Sha512 in mixed case"):
        assert str(readings(case, data)["installer"]).startswith("refused: invalid hash algorithm"), case
        assert readings(case, data)["decoded"] is True and expected_code(case, data) == "G206"
    for case in ("sha256 last character's free bits set", "sha512 padded with =="):
        assert readings(case, data) == {"installer": False, "decoded": True} and expected_code(case, data) == "G203"
    for case in ("sha384 every row", "sha512 one row"):
        assert readings(case, data) == {"installer": True, "decoded": True} and expected_code(case, data) is None
