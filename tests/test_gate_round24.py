"""The twenty-fourth round against the release gate: what a member carries beyond its bytes, where a wheel routes it.

Held against tarfile (with and without the ``data`` filter), GNU tar 1.34 and `unzip` (run here) and the source of pip
23.2, installer and libarchive: zip external attributes (setuid, setgid, sticky, FIFO, device, socket, symlink and
unknown file types, a folder mode on a file, modes closed to others), tar extension headers (global pax headers, GNU
long names and sparse members, pax ``path``, ``linkpath``, ``size`` and ``GNU.sparse.*`` records, the Solaris ``X``
header, an old GNU header's times in the prefix field), the wheel's ``.data`` routing, ``.dist-info`` spellings and
METADATA, were found pinned (G304, G312, G313, G315, G107, G406); 353 pax headers the gate passed, among 1,500 random
edits of their records, were each listed by GNU tar with the time, owners, name and size tarfile reads. One class
passed, refused now (each case below failed on the gate before its fix):

1. a pax access or change time (``atime``, ``ctime``). tarfile writes neither (unless handed the record), GNU tar
   writes its pax headers under another name than tarfile's (G318), so no sdist the gate passes carries one honestly;
   and each unpacker applies them otherwise: tarfile (pip, with or without the ``data`` filter) sets the access time
   to the modification time, GNU tar 1.34 leaves the unpacking's own unless it unpacks listed-incremental (``-G``
   applies the record), bsdtar (libarchive: macOS's and Windows' ``tar``) applies it, and a change time no unpacker
   can set. Up to 21 digits each, a member, carried into the upload and judged by nothing (G313).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from gate_fixtures import Built, RawMember, RawTarMember, raw_tar, raw_zip, sdist_members, write_sdist
from test_gate_hostile import _pax_record, built, codes, judge, refused_with

from gate.archive import SdistArchive, WheelArchive
from gate.checks import Limits

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the module's built wheel and sdist, shared with the hostile corpus

PAX_TIME = "1700000000"  # the modification time every record below rides with: tarfile applies it as the access time
ACCESS = "86400"  # one day after the epoch: a time no unpacking makes of its own


def sdist_with_pax(built: Built, folder: Path, records: dict[str, str]) -> tuple[Path, str]:
    """The project's sdist with a pax header of ``records`` (and the modification time) before its pyproject.toml."""
    name = f"{built.root}/pyproject.toml"
    field = {136: b"%011o\0" % int(PAX_TIME)}  # the header's own time: the pax time's whole seconds, as writers write
    members = [
        RawTarMember(m.name, m.data, m.type, mode=m.mode, pax={"mtime": PAX_TIME, **records}, header=field)
        if m.name == name
        else m
        for m in sdist_members(built.sdist)
    ]
    folder.mkdir(parents=True, exist_ok=True)
    return write_sdist(folder / built.sdist.name, raw_tar(members)), name


# -- 1. a pax access or change time ------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["atime", "ctime"])
def test_an_sdists_pax_access_or_change_time_is_refused(built: Built, tmp_path: Path, key: str) -> None:
    sdist, name = sdist_with_pax(built, tmp_path, {key: ACCESS})
    with tarfile.open(sdist) as tar:  # tarfile reads the record, and unpacks the member with the modification time
        assert tar.getmember(name).pax_headers[key] == ACCESS
        tar.extract(name, tmp_path / "tarfile", filter="data")
    unpacked = os.stat(tmp_path / "tarfile" / name)
    assert (unpacked.st_atime, unpacked.st_mtime) == (float(PAX_TIME), float(PAX_TIME))
    report = judge(sdist)
    assert key in refused_with(report, "G313", "././@PaxHeader", built.sdist.name).message
    assert codes(report) == {"G313"}


@pytest.mark.skipif(shutil.which("tar") is None, reason="GNU tar is not installed")
def test_gnu_tar_applies_a_pax_access_time_only_unpacking_incrementally(tmp_path: Path) -> None:
    """What the refusal rests on, in a two-member tar: GNU tar reads the record and applies it with -G alone."""
    tar = tmp_path / "a.tar"
    tar.write_bytes(raw_tar([RawTarMember("r/a.txt", b"a\n", pax={"mtime": PAX_TIME, "atime": ACCESS})]))
    if b"GNU tar" not in subprocess.run(["tar", "--version"], capture_output=True, check=True).stdout:
        pytest.skip("tar is not GNU tar")
    times = []
    for options in ([], ["-G"]):
        out = tmp_path / f"out{len(options)}"
        out.mkdir()
        subprocess.run(["tar", *options, "-xf", str(tar), "-C", str(out)], check=True, capture_output=True)
        times.append(os.stat(out / "r" / "a.txt").st_atime)
    assert times[0] != float(ACCESS) and times[1] == float(ACCESS)


def test_an_sdists_pax_modification_time_and_owners_pass(built: Built, tmp_path: Path) -> None:
    """The control: the records tarfile writes, the modification time and root's owner, each once."""
    sdist, _ = sdist_with_pax(built, tmp_path, {"uid": "0", "gid": "0", "uname": "root", "gname": "root"})
    report = judge(sdist)
    assert report.findings == [] and report.passed


# -- held: what the gate refused already, where no test of the corpus held it ------------------------------------------


@pytest.mark.parametrize("kind", [0o030000, 0o070000, 0o160000, 0o170000], ids=oct)
def test_a_wheel_member_of_a_file_type_no_system_has_is_no_regular_file(tmp_path: Path, kind: int) -> None:
    """File type bits that name no type (BSD's whiteout, 0o160000, among them), which no writer sets: pip, installer
    and `unzip` (measured) write a plain file; refused as a member that is not a regular file, as a FIFO is."""
    wheel = tmp_path / "x.whl"
    wheel.write_bytes(raw_zip([RawMember(b"neurobrix/a.py", b"x = 1\n", mode=kind | 0o644)]))
    archive = WheelArchive(wheel, Limits())
    assert [(f.code, f.path) for f in archive.findings] == [("G304", "neurobrix/a.py")]


def small_sdist(folder: Path, tar: bytes) -> SdistArchive:
    return SdistArchive(write_sdist(folder / "x-1.0.tar.gz", tar), Limits())


def test_a_solaris_extended_header_is_refused(tmp_path: Path) -> None:
    """Type ``X``, the extended header of POSIX's draft: tarfile (and GNU tar) apply its records to the next member as a
    pax header's, while an unpacker that knows only ``x`` writes it as a file (POSIX: an unknown type is a file)."""
    tar = raw_tar([RawTarMember("x-1.0/a", b"a", pax={"mtime": ACCESS}, pax_header={156: b"X"})])
    with tarfile.open(fileobj=io.BytesIO(tar)) as read:
        assert [(m.name, m.mtime) for m in read.getmembers()] == [("x-1.0/a", int(ACCESS))]
    archive = small_sdist(tmp_path, tar)
    assert [f.code for f in archive.findings] == ["G313"] and "b'X'" in archive.findings[0].message


def test_gnu_sparse_pax_records_are_refused(tmp_path: Path) -> None:
    """``GNU.sparse.*`` records (format 0.1): tarfile reads the member as sparse, holes of zeros around the bytes
    stored, of another length than its header says; the gate refuses the record before anything is read."""
    data = b"abcd"
    payload = _pax_record("GNU.sparse.size", "12") + _pax_record("GNU.sparse.map", "8,4")
    member = tarfile.TarInfo("x-1.0/a")
    member.size = len(data)
    header = tarfile.TarInfo("././@PaxHeader")
    header.type, header.size, header.mode = tarfile.XHDTYPE, len(payload), 0
    tar = b"".join(
        [
            header.tobuf(tarfile.USTAR_FORMAT),
            payload + bytes(-len(payload) % 512),
            member.tobuf(tarfile.USTAR_FORMAT),
            data + bytes(-len(data) % 512),
            bytes(1024),
        ]
    )
    with tarfile.open(fileobj=io.BytesIO(tar)) as read:
        info = read.getmember("x-1.0/a")
        assert info.sparse is not None and read.extractfile(info).read() == bytes(8) + data  # type: ignore[union-attr]
    archive = small_sdist(tmp_path, tar)
    assert [f.code for f in archive.findings] == ["G313"] and "GNU.sparse" in archive.findings[0].message
