"""Gate mutation round 41: bugs planted one at a time (tests/gate41_plants.py, run by tests/gate41_driver.py) in the
checks gate round 38 pinned, which no mutation round had planted in (a tar member that is no file declaring content,
an old-style folder, a pax header's bytes after its records, a second Version or a byte order mark in core metadata,
Requires-Dist markers, WHEEL's Wheel-Version), and in gate functions no mutation round from 24 to 39 had planted in
(archive.py's member safety pass, names.py's length bound, decoding, aliases, short and device names, the metadata and
entry points size bounds, the package's ``__version__``, the zip reader's local header comparison, extra-record times
and padding bound, the gzip header's operating system). Each case below is the dist a surviving plant judged
otherwise: the project's own wheel or sdist (the hostile corpus's module-scoped build) with one thing changed, refused
by the check the plant weakened, and judged otherwise with that plant in place.

Outcomes of the 38 plants, each against the tests of its own check by name (the driver's lists):
caught 30: K1-K8 (round 38's tar, old-style folder and pax checks: by the unit tests' tar streams and round 38's
cases), C1 C2 C3 C5 C6, V1 V2 V3, S1 S2 S3, N1-N6, B1 B2, Z2 Z3 Z4;
survived 8, 7 of them now caught here: N7 N8 Z1 Z5 G1 P1 P2;
equivalent 1: C4 (a byte order mark stripped before the split check: behind one, Python's email parser reads no field
at all, so packaging's validation refuses the metadata with G404 on the same path, for Metadata-Version, Name and
Version missing). C5 (markers compared away) was caught by message: the byte comparison's fallback still said G406.
"""

from __future__ import annotations

import gzip
import zipfile
import zlib
from pathlib import Path

import pytest
from gate_fixtures import Built, RawMember, raw_zip, wheel_members, with_true_record
from test_gate_hostile import TABLE, built, codes, judge, padded_deflate, refused_with, write_wheel

from gate.zipstrict import PADDING_SLACK

__all__ = ["built"]  # the hostile corpus's built wheel and sdist


def test_a_member_named_after_a_lower_case_drive_is_an_absolute_name(built: Built, tmp_path: Path) -> None:
    """N7: ``c:/neurobrix/evil.py`` is a path on drive C to Windows, whose drive letters have no case: absolute (G301,
    a name never read), as ``C:/...`` is. With the drive matched in upper case only, it was G310 for its ':' alone, a
    name the gate went on to read as any other."""
    name = "c:/neurobrix/evil.py"
    members = [*wheel_members(built.wheel), RawMember(name.encode(), b"x = 1\n")]
    report = judge(write_wheel(built, tmp_path, with_true_record(members)))
    assert "absolute name" in refused_with(report, "G301", name, built.wheel.name).message
    assert "G301" in codes(report)


def test_a_deflate_stream_padded_to_less_than_the_member_stored_is_refused(built: Built, tmp_path: Path) -> None:
    """Z5: the wheel's largest member deflated, then padded with empty stored blocks to a hundred blocks past what
    zlib's fastest setting writes with its slack, yet shorter than the member stored whole. zipfile (pip) inflates the
    same bytes; the padding (kilobytes, of any content in its free bits) rides unjudged unless the bound is zlib's
    level 1. Held to level 0 (stored), it passed."""
    members = wheel_members(built.wheel)
    target = max(members, key=lambda m: len(m.data))
    packer = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS)
    fastest = len(packer.compress(target.data)) + len(packer.flush())
    share, extra = PADDING_SLACK
    deflated = len(padded_deflate(target.data, 0))
    blocks = max(0, -(-(fastest + int(fastest * share) + extra - deflated) // 5)) + 100
    target.compressed = padded_deflate(target.data, blocks)
    stored = zlib.compressobj(0, zlib.DEFLATED, -zlib.MAX_WBITS)
    assert len(target.compressed) < len(stored.compress(target.data)) + len(stored.flush())  # the stake: under stored
    wheel = write_wheel(built, tmp_path, members)
    with zipfile.ZipFile(wheel) as z:
        assert z.read(target.name.decode()) == target.data  # what pip installs
    assert "padding" in refused_with(judge(wheel), "G311", target.name.decode(), built.wheel.name).message


def test_a_gzip_header_naming_operating_system_14_is_refused(built: Built, tmp_path: Path) -> None:
    """G1: RFC 1952 names operating systems 0 to 13 (and 255, unknown); 14 names none, a byte of the upload no
    unpacker reads (G319), as 66 and 254 are in the hostile corpus. Read as one of 0 to 14, it passed."""
    data = bytearray(built.sdist.read_bytes())
    data[9] = 14
    sdist = tmp_path / built.sdist.name
    sdist.write_bytes(bytes(data))
    assert gzip.decompress(bytes(data)) == gzip.decompress(built.sdist.read_bytes())  # what pip unpacks
    report = judge(sdist)
    assert "operating system (OS) 14" in refused_with(report, "G319", None, built.sdist.name).message
    assert codes(report) == {"G319"}


def test_a_package_version_that_is_no_version_is_refused(built: Built, tmp_path: Path) -> None:
    """P1: ``__version__ = "0.1.0 final"`` in the package, which packaging cannot parse: the engine reports a version
    that is none (G601, beside G109 for the file the repository does not hold). Compared only where it parsed, it was
    no G601: the repository's own file so spelt (round 21's case, the version overridden there) would have passed."""
    name = "neurobrix/__init__.py"
    members = wheel_members(built.wheel)
    init = next(m for m in members if m.name == name.encode())
    init.data = init.data.replace(f'"{built.version}"'.encode(), f'"{built.version} final"'.encode())
    report = judge(write_wheel(built, tmp_path, with_true_record(members)))
    assert "final" in refused_with(report, "G601", name, built.wheel.name).message


def test_a_package_version_assigned_twice_is_judged_by_the_last(built: Built, tmp_path: Path) -> None:
    """P2: ``__version__`` assigned the wheel's version, then ``9.9.9``: Python, so the engine, reports the last
    (G601). Judged by the first, it was no G601."""
    name = "neurobrix/__init__.py"
    members = wheel_members(built.wheel)
    init = next(m for m in members if m.name == name.encode())
    init.data += b'__version__ = "9.9.9"\n'
    report = judge(write_wheel(built, tmp_path, with_true_record(members)))
    assert "9.9.9" in refused_with(report, "G601", name, built.wheel.name).message


def test_a_member_named_com0_is_a_windows_device_name(built: Built, tmp_path: Path) -> None:
    """N8: Windows reserves COM0 and LPT0 beside COM1-9 and LPT1-9 (Microsoft's "Naming Files, Paths, and
    Namespaces"): ``neurobrix/com0.py`` opens a device there, not a file (G310). With the ports counted from 1, COM0
    was no finding."""
    name = "neurobrix/com0.py"
    members = [*wheel_members(built.wheel), RawMember(name.encode(), b"x = 1\n")]
    report = judge(write_wheel(built, tmp_path, with_true_record(members)))
    assert "device name" in refused_with(report, "G310", name, built.wheel.name).message


def test_a_local_header_naming_its_member_in_another_case_is_refused(built: Built, tmp_path: Path) -> None:
    """Z1: a table's local header naming it upper-cased, the central directory as written. zipfile (pip) refuses the
    member when read; a streaming unzipper that reads local headers (as uv's does) installs it under the other name,
    another file on a case-sensitive disk (G312). Compared case-insensitively, it passed the reader."""
    data = bytearray(raw_zip(wheel_members(built.wheel)))
    name = TABLE.wheel_path.encode()
    at = data.index(name)  # the local header's copy comes first
    assert data[at - 30 : at - 26] == b"PK\x03\x04"
    data[at : at + len(name)] = name.upper()
    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(bytes(data))
    with zipfile.ZipFile(wheel) as z, pytest.raises(zipfile.BadZipFile, match="differ"):
        z.read(TABLE.wheel_path)
    finding = refused_with(judge(wheel), "G312", TABLE.wheel_path, built.wheel.name)
    assert "local header names it" in finding.message
