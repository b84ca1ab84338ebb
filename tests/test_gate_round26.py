"""The twenty-sixth round against the release gate: a wheel that Python's tarfile takes for a tar archive too.

PyPI's warehouse refuses an upload that ``zipfile.is_zipfile`` and ``tarfile.is_tarfile`` both accept ("File is both a
zip and a tar file"), and ``is_tarfile`` asks only that a file's first 512 bytes parse as a tar header whose checksum
holds: a number field opening with a NUL reads as 0 whatever follows, and a zip's local headers are mostly NULs. The
project's wheel, its members as hatchling writes them, opened by folder entries whose extra records (each allowed,
each time the MS-DOS time's) place NULs on the header's number fields and an Info-ZIP access and creation time on its
checksum field, was such a file, and the gate judging it passed it: G320 held only the sdist's side. It is refused now.
"""

from __future__ import annotations

import calendar
import stat
import struct
import tarfile
import zipfile
from pathlib import Path

import pytest
from gate_fixtures import Built, RawMember, raw_zip, wheel_members
from test_gate_hostile import built, judge, refused_with

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the module's built wheel and sdist, shared with the hostile corpus

WHEN = calendar.timegm((2026, 1, 1, 0, 0, 0))  # the MS-DOS time raw_zip writes; each record holds the same moment
NTFS = struct.pack("<HH4xHHQ16x", 0x000A, 32, 1, 24, (WHEN + 11_644_473_600) * 10**7)  # access, creation: 0
OWNER = struct.pack("<HHBBLBL", 0x7875, 11, 1, 4, 0, 4, 0)  # root, root


def _timestamp(access_and_creation: bytes) -> bytes:
    """An Info-ZIP extended timestamp: modification, access and creation times (the last two as given)."""
    return struct.pack("<HHBL", 0x5455, 13, 7, WHEN) + access_and_creation


def _folders(access_and_creation: bytes) -> list[RawMember]:
    """Folder entries for the wheel's own folders, laid out so that the second's extended timestamp holds bytes
    148-155 (the tar header's checksum field) and NULs fall on every other number field's first byte."""
    layout = [
        (b"neurobrix/", b""),
        (b"neurobrix/_tables/", OWNER + NTFS + _timestamp(access_and_creation)),
        (b"neurobrix/_schemas/", b""),
        (b"neurobrix/ops/", b""),
        (b"neurobrix/_tables/interpreter/", NTFS),
    ]
    return [RawMember(n, b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755, extra=e) for n, e in layout]


def wheel_read_as_tar(built: Built, folder: Path) -> Path:
    members = wheel_members(built.wheel)
    header = bytearray(raw_zip(_folders(bytes(8)) + members)[:512])
    header[148:156] = b" " * 8  # the checksum field counts as spaces in its own sum
    wheel = folder / built.wheel.name
    wheel.write_bytes(raw_zip(_folders(b"%06o\x00 " % sum(header)) + members))  # the sum as tarfile writes it
    return wheel


def test_a_wheel_that_tarfile_takes_for_a_tar_too_is_refused(built: Built, tmp_path: Path) -> None:
    wheel = wheel_read_as_tar(built, tmp_path)
    assert zipfile.is_zipfile(wheel) and tarfile.is_tarfile(wheel)  # warehouse's test, on the file: refused upload
    with zipfile.ZipFile(wheel) as z:  # the wheel itself: the project's members, each as hatchling wrote it
        files = {i.filename for i in z.infolist() if not i.is_dir()}
    assert files == {m.name.decode() for m in wheel_members(built.wheel)}
    report = judge(wheel)
    assert "tarfile.is_tarfile" in refused_with(report, "G320", None, built.wheel.name).message
    assert {f.code for f in report.findings} == {"G320"}


def test_the_projects_wheel_is_no_tar(built: Built) -> None:
    assert not tarfile.is_tarfile(built.wheel)
    assert judge(built.wheel).passed
