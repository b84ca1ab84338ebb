"""The twenty-second round against the release gate: dists the gate passed that an installer reads as something else.

Each class below was passed by the gate and is refused now (every case failed on the gate before its fix):

1. an sdist that is a zip too: pip unpacks an archive as a zip whenever Python's `zipfile.is_zipfile` says it is one,
   before it tries tar and whatever the file's name, and `is_zipfile` asks only for an end-of-central-directory
   signature with 18 bytes after it in the file's last 64 KiB. The gzip trailer holds the tar's CRC-32, which the ustar
   times of a few members steer anywhere (digits swapped in pairs: every header checksum stays), and zeros after the
   gzip member are read past by every unpacker: a CRC of `PK\\x05\\x06` and 14 zeros spell an empty zip. pip unpacked
   nothing and refused the sdist as no Python project, while tarfile, GNU tar, uv and twine read the tar the gate
   judged (G320). A zip under an sdist's name, which pip unpacks as a zip, is G320 too (the gate answered exit 2,
   "not a gzip stream").
"""

from __future__ import annotations

import gzip
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest
from gate_fixtures import Built, raw_tar, sdist_members
from pip._internal.utils.unpacking import unpack_file
from test_gate_hostile import built, judge, refused_with

from gate.archive import SdistArchive
from gate.checks import Limits

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the module's built wheel and sdist, shared with the hostile corpus

# -- 1. an sdist that Python's zipfile, and so pip, takes for a zip ----------------------------------------------------

ZIP_END = b"PK\x05\x06"  # the end-of-central-directory signature zipfile.is_zipfile looks for
BASE_TIME = b"10101010101\x00"  # a ustar time whose digit pairs "10" may each be swapped to "01", its byte sum kept
SWAPPED = 16 * 5  # the last 16 members' times: 80 swaps to span the 2**32 CRC-32 values (40 fell short once)


def _tar_with_crc(built: Built, crc: int) -> bytes:
    """The project's sdist as a tar whose CRC-32 is ``crc``: the last members' ustar times are digits "10" in pairs,
    each pair left or swapped to "01" (the byte sum, so the header checksum, unchanged). A CRC-32 is affine in the bits
    of a message of a given length, so the swaps that reach ``crc`` are the solution of a linear system over GF(2)."""
    members = sdist_members(built.sdist)
    for m in members:
        m.header = {136: BASE_TIME}
    tar = bytearray(raw_tar(members))
    headers, pos = [], 0
    while tar[pos : pos + 512] != bytes(512):
        headers.append(pos)
        pos += 512 + -(-int(tar[pos + 124 : pos + 135], 8) // 512) * 512
    pairs = [h + 136 + 2 * k for h in headers[-SWAPPED // 5 :] for k in range(5)]
    tail = [len(tar) - p - 2 for p in pairs]
    # what swapping one pair does to the CRC-32 (its linear part: the flip followed by the message's rest)
    effects = [zlib.crc32(b"\x01\x01" + bytes(t)) ^ zlib.crc32(bytes(2 + t)) for t in tail]
    basis: dict[int, tuple[int, int]] = {}  # pivot bit -> (effect, the swaps that make it)
    for i, effect in enumerate(effects):
        made = 1 << i
        for bit in reversed(range(32)):
            if effect >> bit & 1:
                if bit not in basis:
                    basis[bit] = (effect, made)
                    break
                effect, made = effect ^ basis[bit][0], made ^ basis[bit][1]
    wanted, swaps = zlib.crc32(tar) ^ crc, 0
    for bit in reversed(range(32)):
        if wanted >> bit & 1:
            wanted, swaps = wanted ^ basis[bit][0], swaps ^ basis[bit][1]
    assert wanted == 0, "the swaps do not reach every CRC-32"
    for i, at in enumerate(pairs):
        if swaps >> i & 1:
            tar[at : at + 2] = b"01"
    assert zlib.crc32(tar) == crc
    return bytes(tar)


@pytest.fixture(scope="module")
def zip_end_tar(built: Built) -> bytes:
    """The project's sdist as a tar whose CRC-32 spells the zip end record's signature."""
    return _tar_with_crc(built, int.from_bytes(ZIP_END, "little"))


# zeros after the gzip member (every unpacker reads past them) -> where zipfile finds the end record they complete
ZEROS_AFTER = {
    "the file's last 22 bytes": 14,
    "found by zipfile's search of the last 64 KiB": 14 + 4096,
}


@pytest.mark.parametrize("attack", list(ZEROS_AFTER))
def test_an_sdist_that_pip_unpacks_as_a_zip_is_refused(
    built: Built, zip_end_tar: bytes, tmp_path: Path, attack: str
) -> None:
    sdist = tmp_path / built.sdist.name
    sdist.write_bytes(gzip.compress(zip_end_tar, mtime=0) + bytes(ZEROS_AFTER[attack]))
    # what pip does with it: zipfile.is_zipfile first, so an empty zip unpacked and nothing to build
    assert zipfile.is_zipfile(sdist)
    unpack_file(str(sdist), str(tmp_path / "pip"))
    assert not any((tmp_path / "pip").iterdir())
    with tarfile.open(sdist) as tar:  # what tarfile (and GNU tar, uv, twine) reads: the project's sdist
        assert f"{built.root}/pyproject.toml" in tar.getnames()
    report = judge(built.wheel, sdist)
    assert "zipfile.is_zipfile" in refused_with(report, "G320", None, built.sdist.name).message
    assert {f.code for f in report.findings} == {"G320"}


def test_an_sdist_of_the_same_shape_that_is_no_zip_passes(built: Built, tmp_path: Path) -> None:
    """Control: the same swapped times and zeros after the gzip member, a CRC-32 that spells no zip signature."""
    sdist = tmp_path / built.sdist.name
    sdist.write_bytes(gzip.compress(_tar_with_crc(built, int.from_bytes(b"PK\x05\x07", "little")), mtime=0) + bytes(14))
    assert not zipfile.is_zipfile(sdist)
    assert judge(built.wheel, sdist).passed


def test_a_zip_named_as_an_sdist_is_refused_as_one(tmp_path: Path) -> None:
    """A zip under an sdist's name is what pip unpacks, as a zip: G320, where the gate said exit 2 (no gzip stream)."""
    path = tmp_path / "x-1.0.tar.gz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("x-1.0/PKG-INFO", "Metadata-Version: 2.1\nName: x\nVersion: 1.0\n")
    unpack_file(str(path), str(tmp_path / "pip"))
    assert (tmp_path / "pip" / "PKG-INFO").is_file()  # pip's reading: a zip, its top folder stripped
    sdist = SdistArchive(path, Limits())
    assert sdist.refused_unread and [f.code for f in sdist.findings] == ["G320"]
