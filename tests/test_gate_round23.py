"""The twenty-third round against the release gate: where an installer or uploader reads a dist's bytes otherwise.

Held against pip 23.2 (its unpacking and install), tarfile with and without the ``data`` filter (Python 3.14's default,
pip 24.1's), uv 0.13.9 (building the sdist, installing the wheel), zipfile, `unzip` and GNU tar, the directions of this
round found no dist the gate passed and a tool reads otherwise: wheel names and their normalisation, ``.data`` and
RECORD rows for folders, WHEEL and metadata fields, sdist metadata against pyproject.toml are pinned to the bytes the
build backend writes; the tar headers the gate passed among 40,000 random edits of a small sdist's (about 1,450 in
20,000) each read as tarfile reads them (579 more, among 8,000, unpacked by GNU tar as by tarfile), and the zip
headers it passed among 30,000 edits of a small wheel's (2,414) as zipfile reads them (136 more, among 5,500, installed
by uv as by installer); uv built and installed the sdists of AREGTYPE files, GNU headers, pax times and owners, times of
the years 2242 and 5138, zeros after the gzip member, a gzip header's set text flag, and the wheel of MS-DOS entries,
as pip did. One class was answered wrong, fixed now (each case below failed on the gate before its fix):

1. the zip test pip runs on an sdist, run as pip runs it: `zipfile.is_zipfile` raises `BadZipFile` (no OSError, so not
   caught) on a file whose zip end record follows a zip64 locator naming another disk. pip's `unpack_file` stops there
   with a traceback, while tarfile and uv read the tar (uv built and installed it); the gate stopped too, "internal
   error" (exit 2), without naming what it found: now G320. And the gate ran the test on the bytes in memory, where a
   seek before the first byte moves to it (a BytesIO) instead of failing as on a file: a locator leading there made it
   "a zip" to the gate and not to pip.
"""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path

import pytest
from gate_fixtures import Built
from pip._internal.utils.unpacking import unpack_file
from test_gate_hostile import built, judge, refused_with

from gate.archive import SdistArchive
from gate.checks import GateError, Limits

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the module's built wheel and sdist, shared with the hostile corpus

END = b"PK\x05\x06" + bytes(18)  # an empty zip's end-of-central-directory record


def locator(disk: int, disks: int) -> bytes:
    """A zip64 end-of-central-directory locator: the disk holding the zip64 end record, its offset, the disks."""
    return b"PK\x06\x07" + disk.to_bytes(4, "little") + bytes(8) + disks.to_bytes(4, "little")


# -- 1. the zip test pip runs on an sdist, run as pip runs it ----------------------------------------------------------


def test_an_sdist_on_which_pips_zip_test_fails_is_refused_not_an_internal_error(built: Built, tmp_path: Path) -> None:
    sdist = tmp_path / built.sdist.name
    sdist.write_bytes(built.sdist.read_bytes() + locator(1, 2) + END)
    with pytest.raises(zipfile.BadZipFile):  # what pip does with it: zipfile.is_zipfile raises, unpack_file with it
        unpack_file(str(sdist), str(tmp_path / "pip"))
    with tarfile.open(sdist) as tar:  # what tarfile (and uv, which built and installed it) reads: the project's sdist
        assert f"{built.root}/pyproject.toml" in tar.getnames()
    report = judge(built.wheel, sdist)
    assert "zipfile.is_zipfile fails" in refused_with(report, "G320", None, built.sdist.name).message
    assert {f.code for f in report.findings} == {"G320"}


@pytest.mark.parametrize(
    "shape",
    [
        "a locator leading before the first byte, which a file cannot seek to",
        "a zip end record alone",
        "the project's sdist",
    ],
)
def test_the_zip_test_reads_the_sdist_as_pip_reads_the_file(built: Built, tmp_path: Path, shape: str) -> None:
    raw = {
        "a locator leading before the first byte, which a file cannot seek to": b"x" * 10 + locator(0, 1) + END,
        "a zip end record alone": END,
        "the project's sdist": built.sdist.read_bytes(),  # the control: no zip, and it passes
    }[shape]
    path = tmp_path / built.sdist.name
    path.write_bytes(raw)
    pip_says_zip = zipfile.is_zipfile(path)  # pip's test, on the file
    try:
        sdist = SdistArchive(path, Limits())
    except GateError:  # no zip to pip and no gzip stream: pip's tarfile fails on it too, and the gate says exit 2
        assert not pip_says_zip and not raw.startswith(b"\x1f\x8b")
        return
    assert ("G320" in {f.code for f in sdist.findings}) == pip_says_zip
    assert sdist.findings or shape == "the project's sdist"
