"""The sixty-first round against the release gate: the key-value files of a dist spelt so that their readers part.

METADATA, an sdist's PKG-INFO, WHEEL and entry_points.txt are read by an RFC 822 parser (pip, through Python's email
parser with the compat32 policy: keys without case, the first of two values, a folded value kept with its line end;
``packaging``, which refuses a single field said twice; hatchling, which takes the sdist's dynamic Version from
PKG-INFO's first ``Version``, of any case) or an INI parser (importlib.metadata's, which pip writes launchers from:
sections and keys as spelt, a key twice kept twice, a second section read on; ``installer``'s configparser, which
refuses both). Each case spells one of them so (tests/gate61_cases.py): a header in other case, said twice, folded, as
an encoded word, without the space after its colon, with a space before it or behind the blank line; a console script
twice, a section in other case, a second section, a folded value, a colon for the equals sign. All were refused before
this round, each by the bytes the build backend writes (G406 for METADATA and PKG-INFO, G407 for WHEEL, G408 for
entry_points.txt) or as invalid (G404) where ``packaging`` refuses the metadata or the email parser finds a line that is
no field; the test pins each with the code the readers' own answers call for, and that its file is the only one named.
Which check holds which case (each shown by removing it) and what pip 24.0, pip 25.2, ``installer`` and uv 0.13.9
install from each (tests/gate61_driver.py ``headers``): docs/gate-rounds.md, round 61. Round 58's refused sdists built
and installed by pip 24.0 and 25.2 (the driver's ``sdists``) are written up there too: no verdict changed, so no test.
"""

from __future__ import annotations

import gzip
import tarfile
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from gate61_cases import CASES, head_keys, readings
from gate_fixtures import (
    Built,
    RawMember,
    RawTarMember,
    raw_tar,
    raw_zip,
    sdist_members,
    wheel_members,
    with_true_record,
)
from test_gate_hostile import REFERENCE, built

from gate.checker import Options, check

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the hostile corpus's built wheel and sdist


@pytest.fixture(scope="module")
def packed(built: Built) -> list[RawMember]:
    """The built wheel's members, each deflated once for the module (a case recompresses only what it changes)."""
    members = wheel_members(built.wheel)
    return [replace(m, compressed=m.stored()) for m in members]


def _built_file(built: Built, file: str) -> bytes:
    if file == "PKG-INFO":
        with tarfile.open(built.sdist) as tar:
            member = tar.extractfile(f"{built.sdist.name.removesuffix('.tar.gz')}/PKG-INFO")
            assert member is not None
            return member.read()
    with zipfile.ZipFile(built.wheel) as z:
        return z.read(f"neurobrix-{built.version}.dist-info/{file}")


def _dist_with(built: Built, packed: list[RawMember], folder: Path, file: str, data: bytes) -> tuple[Path, str]:
    """The wheel (RECORD telling the truth) or the sdist with ``file`` holding ``data``, and the member's name."""
    folder.mkdir(parents=True, exist_ok=True)
    if file == "PKG-INFO":
        root = built.sdist.name.removesuffix(".tar.gz")
        name = f"{root}/PKG-INFO"
        members = [m if m.name != name else RawTarMember(name, data, m.type) for m in sdist_members(built.sdist)]
        path = folder / built.sdist.name
        path.write_bytes(gzip.compress(raw_tar(members), compresslevel=1, mtime=0))  # level 1: a third of 9's time
        return path, name
    name = f"neurobrix-{built.version}.dist-info/{file}"
    members = [replace(m, data=data, compressed=None) if m.name == name.encode() else m for m in packed]
    path = folder / built.wheel.name
    path.write_bytes(raw_zip(with_true_record(members)))
    return path, name


_CODE = {"WHEEL": "G407", "entry_points.txt": "G408"}


def _expected(file: str, data: bytes) -> str:
    """The code a spelling calls for: G404 where ``packaging`` refuses the metadata as invalid or the email parser
    finds a line that is no field before the blank line, else the bytes the backend writes (G406, G407, G408)."""
    if file in ("METADATA", "PKG-INFO"):
        read = readings(file, data)
        return "G404" if str(read["packaging"]).startswith("refused") or read["email defects"] else "G406"
    return _CODE[file]


@pytest.mark.parametrize("case", list(CASES))
def test_a_key_value_file_spelt_so_its_readers_part_is_refused(
    built: Built, packed: list[RawMember], tmp_path: Path, case: str
) -> None:
    file, edit = CASES[case]
    original = _built_file(built, file)
    data = edit(original)
    assert data != original
    dist, name = _dist_with(built, packed, tmp_path, file, data)
    report = check([dist], Options(REFERENCE, smoke=False, tools=False))
    code = _expected(file, data)
    assert not report.passed
    hits = [f for f in report.findings if f.code == code and f.path == name]
    assert hits, (code, name, [(f.code, f.path, f.message) for f in report.findings])
    # the refusal is this file's alone: nothing else of the dist was touched
    assert {f.path for f in report.findings} == {name}, [(f.code, f.path, f.message) for f in report.findings]


def test_the_readers_part_where_the_round_says() -> None:
    """What makes the spellings hostile, measured on the readers themselves (no dist built): pip's email parser takes
    a key in other case and the first of two values, hatchling the first ``Version`` of an sdist's PKG-INFO of any
    case, importlib.metadata keeps a console script named twice and a second section (pip writes both launchers, the
    later over the earlier) where ``installer``'s configparser refuses the file, and uv, reading WHEEL's keys as spelt,
    finds no ``Root-Is-Purelib`` in ``root-is-purelib``."""
    meta = b"Metadata-Version: 2.4\nName: neurobrix\nVersion: 0.1.0\nRequires-Python: >=3.10\n"
    upper = CASES["METADATA REQUIRES-PYTHON in upper case"][1](meta)
    assert readings("METADATA", upper)["email"]["Requires-Python"] == [">=2.7"]  # type: ignore[index]
    twice = CASES["METADATA Requires-Python twice"][1](meta)
    assert readings("METADATA", twice)["email"]["Requires-Python"] == [">=3.10", ">=2.7"]  # type: ignore[index]
    assert str(readings("METADATA", twice)["packaging"]).startswith("refused")
    pkg = CASES["PKG-INFO version twice, other case first"][1](meta)
    assert readings("PKG-INFO", pkg)["hatchling version"] == "0.2.0"
    eps = b"[console_scripts]\nneurobrix = neurobrix.cli:main\n"
    twice_ep = readings("entry_points.txt", CASES["entry_points console script twice"][1](eps))
    assert [v for _, n, v in twice_ep["importlib"] if n == "neurobrix"] == ["neurobrix.cli:main", "os:system"]  # type: ignore[union-attr]
    assert str(twice_ep["configparser"]).startswith("refused")
    wheel = b"Wheel-Version: 1.0\nGenerator: x\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    lower = CASES["WHEEL root-is-purelib in lower case"][1](wheel)
    assert readings("WHEEL", lower)["pip purelib"] is True and "Root-Is-Purelib" not in head_keys(lower)
    folded = CASES["WHEEL Root-Is-Purelib folded"][1](wheel)
    assert readings("WHEEL", folded)["pip purelib"] is False  # pip: platlib, the folded "\n true" is no "true"
