"""The twenty-seventh round against the release gate: an sdist whose gzip stream is broken past its tar's end.

Python's tarfile (pip 23.2's sdist unpacker, twine's reader of PKG-INFO) reads a tar.gz only as far as the tar's
end-of-archive marker and never asks the gzip stream for the rest: not its last deflate block, not its CRC-32 and size
trailer. So an sdist whose tar is whole but whose gzip stream is cut short after it, or corrupt after it, is unpacked
by pip and uploaded by twine as the project's, while gzip and GNU tar fail on the same file. The gate refused the
corrupt ones (G312, pinned here) and answered the cut ones "not judged" (exit 2), as for a file that is no sdist at
all; they are a refusal now (G312), and a cut stream holding no whole tar stays input the gate cannot judge.
"""

from __future__ import annotations

import gzip
import io
import shutil
import struct
import subprocess
import tarfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from gate_fixtures import Built, read_sdist_member
from pip._internal.utils.unpacking import unpack_file
from test_gate_hostile import built, judge, refused_with

from gate.checks import GateError

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the module's built wheel and sdist, shared with the hostile corpus

HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # gzip, deflate, no flags, time 0, slowest, unknown system


def _deflated(tar: bytes, last: bool = True) -> bytes:
    """The tar deflated (level 6) and flushed to a byte boundary; with ``last``, closed by its final block."""
    packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return packer.compress(tar) + packer.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)


def _gzipped(tar: bytes) -> bytes:
    return HEADER + _deflated(tar) + struct.pack("<LL", zlib.crc32(tar), len(tar) & 0xFFFFFFFF)


def _no_last_block(tar: bytes) -> bytes:
    """Every byte of the tar deflated and flushed to a byte boundary, but no final block and no trailer."""
    return HEADER + _deflated(tar, last=False)


def _invalid_last_block(tar: bytes) -> bytes:
    """The tar deflated whole, then a final block of the type RFC 1951 reserves (3), then a true trailer."""
    body = _deflated(tar, last=False) + b"\x07\x00"
    return HEADER + body + struct.pack("<LL", zlib.crc32(tar), len(tar) & 0xFFFFFFFF)


def _flip(at: int) -> Callable[[bytes], bytes]:
    def flipped(tar: bytes) -> bytes:
        out = bytearray(_gzipped(tar))
        out[at] ^= 1
        return bytes(out)

    return flipped


CUT: dict[str, Callable[[bytes], bytes]] = {
    "no trailer": lambda tar: _gzipped(tar)[:-8],
    "half a trailer": lambda tar: _gzipped(tar)[:-4],
    "no last block": _no_last_block,
    "the record's padding cut": lambda tar: _gzipped(tar)[:-40],  # the stream ends inside the zeros after the marker
}
CORRUPT: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "trailer CRC-32": (_flip(-8), "incorrect data check"),
    "trailer size": (_flip(-4), "incorrect length check"),
    "reserved last block": (_invalid_last_block, "invalid block type"),
}


def _read_whole(data: bytes, names: list[str]) -> bool:
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as damaged:
            return damaged.getnames() == names
    except (tarfile.TarError, EOFError, zlib.error, OSError):
        return False


def _hostile(built: Built, folder: Path, damage: Callable[[bytes], bytes]) -> Path:
    """The project's sdist damaged after its tar. Whether tarfile stops before the damage depends on where the tar's
    end falls in gzip's 8 KiB reads, so the attacker pads the tar with whole zero records (which every tar reader
    skips) until tarfile reads every member: at most three more."""
    tar = gzip.decompress(built.sdist.read_bytes())
    with tarfile.open(built.sdist) as honest:
        names = honest.getnames()
    for records in range(4):
        data = damage(tar + bytes(tarfile.RECORDSIZE * records))
        if _read_whole(data, names):
            break
    sdist = folder / built.sdist.name
    sdist.write_bytes(data)
    return sdist


def _read_whole_by_pip(built: Built, sdist: Path, folder: Path) -> None:
    """tarfile and pip's unpacker read every member of the damaged file, as of the project's own sdist."""
    with tarfile.open(built.sdist) as honest, tarfile.open(sdist) as damaged:
        assert damaged.getnames() == honest.getnames()
    unpack_file(str(sdist), str(folder / "pip"))
    assert (folder / "pip" / "PKG-INFO").read_bytes() == read_sdist_member(built.sdist, "PKG-INFO")


def _gzip_fails(sdist: Path) -> None:
    if shutil.which("gzip") is None:
        return
    tested = subprocess.run(["gzip", "-t", str(sdist)], capture_output=True, text=True, check=False)
    assert tested.returncode != 0, tested.stderr


@pytest.mark.parametrize("how", list(CUT))
def test_a_gzip_stream_cut_short_after_a_whole_tar_is_refused(built: Built, tmp_path: Path, how: str) -> None:
    sdist = _hostile(built, tmp_path, CUT[how])
    _read_whole_by_pip(built, sdist, tmp_path)
    _gzip_fails(sdist)
    report = judge(sdist)  # was GateError: "the gzip stream is truncated" (exit 2, nothing named)
    finding = refused_with(report, "G312", None, built.sdist.name)
    assert "cut short" in finding.message and "tarfile" in finding.message
    assert {f.code for f in report.findings} == {"G312"}


@pytest.mark.parametrize("how", list(CORRUPT))
def test_a_gzip_stream_corrupt_after_a_whole_tar_is_refused(built: Built, tmp_path: Path, how: str) -> None:
    damage, zlib_says = CORRUPT[how]
    sdist = _hostile(built, tmp_path, damage)
    _read_whole_by_pip(built, sdist, tmp_path)
    _gzip_fails(sdist)
    report = judge(sdist)
    assert zlib_says in refused_with(report, "G312", None, built.sdist.name).message
    assert {f.code for f in report.findings} == {"G312"}


def _small_tar() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in (("p/a.txt", b"alpha\n" * 100), ("p/b.txt", b"beta\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.mark.parametrize(
    ("cut", "whole"),
    [
        ("before the marker", False),
        ("inside the marker's first block", False),
        ("after the marker's first block", True),
        ("inside the marker's second block", True),
        ("after the marker", True),
        ("inside the last member's data", False),
        ("inside the last member's header", False),
    ],
)
def test_a_cut_prefix_is_whole_exactly_when_tarfile_reads_every_member(cut: str, whole: bool) -> None:
    """Where a cut gzip stream ends inside its tar depends on where the deflate blocks end: the gate answered "not
    judged" for a stream cut inside the end-of-archive marker's second block, which tarfile (so pip) reads whole, as
    it stops at the first zero block (the project's sdist met it once its contents changed). Judged here at each
    place the cut can fall, against tarfile reading the same prefix as a gzip stream cut there."""
    from gate.archive import _whole_tar
    from gate.checks import Limits
    from gate.tarstrict import BLOCK

    tar = _small_tar()
    last_data = tar.index(b"beta\n")
    marker = last_data + BLOCK  # the last member's data is one block
    prefix = {
        "before the marker": tar[:marker],
        "inside the marker's first block": tar[: marker + 100],
        "after the marker's first block": tar[: marker + BLOCK],
        "inside the marker's second block": tar[: marker + BLOCK + 100],
        "after the marker": tar[: marker + 2 * BLOCK],
        "inside the last member's data": tar[: last_data + 3],
        "inside the last member's header": tar[: last_data - BLOCK + 200],
    }[cut]
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    stream = packer.compress(prefix) + packer.flush(zlib.Z_SYNC_FLUSH)  # no last block, no trailer
    assert _read_whole(stream, ["p/a.txt", "p/b.txt"]) is whole  # what tarfile (pip's unpacker) makes of it
    assert _whole_tar(bytearray(prefix), Limits()) is whole


def test_a_cut_stream_holding_no_whole_tar_stays_unjudged(built: Built, tmp_path: Path) -> None:
    """Cut inside the tar itself: tarfile fails too, so every reader reads it one way (nowhere); not a refusal."""
    raw = built.sdist.read_bytes()
    sdist = tmp_path / built.sdist.name
    sdist.write_bytes(raw[: len(raw) // 2])
    with pytest.raises((tarfile.ReadError, EOFError)), tarfile.open(sdist) as damaged:
        damaged.getmembers()
    with pytest.raises(GateError, match="truncated"):
        judge(sdist)


def test_the_projects_sdist_is_read_whole_by_every_reader(built: Built, tmp_path: Path) -> None:
    """The control: gzip tests the project's own sdist clean, and the gate passes it."""
    if shutil.which("gzip") is not None:
        subprocess.run(["gzip", "-t", str(built.sdist)], check=True)
    assert judge(built.sdist).passed
