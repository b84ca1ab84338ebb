"""Planted-bug round 60 (docs/planted-bugs.md): cases for the plants of tests/planted62_plants.py that the tests
guarding their code let through, in the strict tar and zip readers of the release gate and in the map from a kernel to
the files of neurobrix/ops its proofs are bound to.

Each case fails with its plant in place (checked with tests/planted62_driver.py, this file alone) and passes on the
clean code. No build and no gate run: tarstrict.parse on tars written here with tarfile's own headers, zipstrict.parse
and inflate on zips written with zipfile, kernel_source on made-up ops packages (test_planted48's copy of it).

Closed here: t02, t04, t06, t07 (tar), z01, z06, z08 (zip), k01, k02, k06 (the map). Outcomes of all 20: see
docs/planted-bugs.md, round 60.
"""

from __future__ import annotations

import calendar
import dataclasses
import io
import struct
import tarfile
import zipfile
import zlib

import pytest
from test_planted48 import _ops_copy

from gate import tarstrict, zipstrict
from gate.checks import Check

BLOCK = tarstrict.BLOCK
ZEROS = bytes(2 * BLOCK)

# ------------------------------------------------------------------ tars


def _header(name: str, size: int = 0, kind: bytes = tarfile.REGTYPE, **fields: int) -> bytes:
    """A ustar header as tarfile writes one (owners and times 0 unless given)."""
    info = tarfile.TarInfo(name)
    info.size, info.type, info.mode, info.mtime = size, kind, 0o755 if kind == tarfile.DIRTYPE else 0o644, 0
    for field, value in fields.items():
        setattr(info, field, value)
    return info.tobuf(tarfile.USTAR_FORMAT)


def _data(data: bytes) -> bytes:
    return data + bytes(-len(data) % BLOCK)


def _pax(*records: bytes) -> bytes:
    """A pax header as tarfile writes one (its own header tarstrict's ``_pax_block``), holding ``records``
    (``key=value``) in that order."""
    payload = b""
    for record in records:
        body = b" " + record + b"\n"
        length = len(body) + 1
        length = len(body) + len(str(length + len(str(length)) - 1))
        payload += str(length).encode() + body
    return tarstrict._pax_block(len(payload)) + _data(payload)


def _file(name: str, data: bytes = b"", **fields: int) -> bytes:
    return _header(name, len(data), **fields) + _data(data)


def test_the_tars_written_here_are_read():
    """The cases' own writing: a file under a pax header of every allowed kind of record reads, with its owners."""
    stream = _pax(b"mtime=1700000000", b"uid=0", b"uname=root") + _file("p/a", b"x", gid=100) + ZEROS
    entries, problems = tarstrict.parse(stream, 10)
    assert problems == [] and [(e.raw_name, e.owner) for e in entries] == [(b"p/a", (0, 100, b"root", b""))]


def test_a_header_after_the_end_of_archive_marker_is_refused():
    """t02: what follows the two zero blocks is judged from the block right after them: an empty member there (a
    second archive, read by `tar -i`) is refused, not skipped."""
    stream = _file("p/a", b"x") + ZEROS + _header("p/hidden") + ZEROS
    entries, problems = tarstrict.parse(stream, 10)
    assert entries == [] and [p.check for p in problems] == [Check.G311], problems
    assert "after the end-of-archive marker" in problems[0].message


def test_a_folders_header_time_under_a_pax_time_is_judged_as_a_files():
    """t04: a folder's ustar time under a pax time is held to its whole seconds as a file's is (an unpacker that
    reads no pax time sets the folder's time from the header)."""
    for kind, name in ((tarfile.DIRTYPE, "p/d"), (tarfile.REGTYPE, "p/a")):
        member = _header(name, kind=kind, mtime=5)
        stream = _pax(b"mtime=1700000000") + member + ZEROS
        entries, problems = tarstrict.parse(stream, 10)
        assert entries == [] and [p.check for p in problems] == [Check.G312], (name, problems)
        assert "modification time 5 is not its pax header's 1700000000" in problems[0].message


@pytest.mark.parametrize("key", [b"MTIME", b"Uname"])
def test_a_pax_key_is_read_as_written(key):
    """t06: pax keywords are case-sensitive (POSIX; tarfile, GNU tar and bsdtar ignore `MTIME`): a record that is no
    allowed one by its exact bytes is refused, not taken for the time or owner its lower case names."""
    value = b"1700000000" if key == b"MTIME" else b"root"
    stream = _pax(key + b"=" + value) + _file("p/a", b"x") + ZEROS
    entries, problems = tarstrict.parse(stream, 10)
    assert entries == [] and [p.check for p in problems] == [Check.G313], problems
    assert repr(key.decode()) in problems[0].message


def test_a_pax_record_set_twice_to_one_value_is_refused():
    """t07: uv refuses a pax header setting a key twice whatever the values; the same value twice is no exception."""
    stream = _pax(b"mtime=1700000000", b"mtime=1700000000") + _file("p/a", b"x") + ZEROS
    entries, problems = tarstrict.parse(stream, 10)
    assert entries == [] and [p.check for p in problems] == [Check.G312] and "twice" in problems[0].message


# ------------------------------------------------------------------ zips

MOMENT = (2024, 5, 6, 7, 8, 10)
DOS = calendar.timegm(MOMENT)


def _zip(*members: tuple[str, bytes, bytes, bytes]) -> bytes:
    """A zip of (name, data, extra field, entry comment) members as zipfile writes it: stored, at MOMENT."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name, data, extra, comment in members:
            info = zipfile.ZipInfo(name, MOMENT)
            info.external_attr = (0o40755 if name.endswith("/") else 0o100644) << 16
            info.extra, info.comment = extra, comment
            z.writestr(info, data)
    return out.getvalue()


def _fatal(data: bytes) -> list[zipstrict.ZipProblem]:
    entries, problems = zipstrict.parse(data, 10)
    assert entries == [] and any(p.fatal for p in problems), problems
    return problems


def test_the_zips_written_here_are_read():
    """The cases' own writing: a folder and a file whose extended timestamp says the MS-DOS time read without a
    word."""
    timestamp = struct.pack("<HHBL", 0x5455, 5, 1, DOS)
    entries, problems = zipstrict.parse(_zip(("p/", b"", b"", b""), ("p/a", b"x", timestamp, b"")), 10)
    assert problems == [] and [e.raw_name for e in entries] == [b"p/", b"p/a"]


def test_an_entry_comment_on_a_folder_is_refused():
    """z01: an entry comment is refused on any entry, a folder's too (bytes no installer reads)."""
    problems = _fatal(_zip(("p/", b"", b"", b"hidden"), ("p/a", b"x", b"", b"")))
    assert [(p.check, p.raw_name) for p in problems] == [(Check.G311, b"p/")] and "comment" in problems[0].message


@pytest.mark.parametrize("tail", [b"\0", b"\0\0", b"abc"])
def test_bytes_after_an_extra_fields_last_record_are_refused(tail):
    """z06: 1 to 3 bytes after the last record of an extra field (too few for a record's header) are refused, not
    left unread."""
    record = struct.pack("<HHBL", 0x5455, 5, 1, DOS)
    problems = _fatal(_zip(("p/a", b"x", record + tail, b"")))
    assert problems[0].check == Check.G313 and "cut short" in problems[0].message


def test_a_deflate_stream_without_its_end_is_unreadable():
    """z08: a deflate stream flushed but never finished (no final block) is cut short, though it holds the member's
    declared bytes and CRC: zipfile (pip) fails on it, an inflater that stops at the declared size reads it."""
    content = b"the member's bytes " * 20
    packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    stream = packer.compress(content) + packer.flush(zlib.Z_SYNC_FLUSH)
    entry = zipstrict.ZipEntry(
        b"p/a", 0, zipstrict.DEFLATED, zlib.crc32(content), len(stream), len(content), 0o100644, 0, 0, 0
    )
    whole = stream + packer.flush()
    assert zipstrict.inflate(whole, dataclasses.replace(entry, compressed=len(whole)), 1 << 20) == content
    with pytest.raises(zipstrict.Unreadable, match="cut short"):
        zipstrict.inflate(stream, entry, 1 << 20)


# ------------------------------------------------------------------ the kernel -> files map

OPS = {
    "__init__.py": 'MODULES = ("rotary", "table")\n',
    "_common.py": "",
    "spec.py": "",
    "rotary.py": 'from .spec import OpSpec\nfrom ._more import MORE\nSPECS = (OpSpec("rotary"),)\n',
    "table.py": 'from .spec import OpSpec\nSPECS = (OpSpec("table"),)\n',
    "_more.py": "MORE = 1\n",
}


def _refused(tmp_path, ops, kernel, said):
    found = _ops_copy(tmp_path, {**OPS, **ops})
    with pytest.raises(Exception, match=said) as raised:
        found.kernel_source_files(kernel)
    assert type(raised.value).__name__ == "UsageError"


def test_the_made_up_ops_are_bound(tmp_path):
    """The cases' own package: each kernel to its module, rotary's helper with it."""
    found = _ops_copy(tmp_path, OPS)
    common = {"__init__.py", "_common.py", "spec.py"}
    assert set(found.kernel_source_files("rotary")) == common | {"rotary.py", "_more.py"}
    assert set(found.kernel_source_files("table")) == common | {"table.py"}


def test_an_unnamed_op_in_a_helper_module_is_refused(tmp_path):
    """k01: an ``OpSpec`` whose name is not written out is refused in any file an import runs, a helper no
    ``MODULES`` names too (where it could declare any kernel)."""
    helper = "from .spec import OpSpec\nNAME = 'table'\nMORE = OpSpec(NAME)\n"
    _refused(tmp_path, {"_more.py": helper}, "table", "_more.py line 3: an OpSpec whose name is not written out")


def test_a_kernel_declared_in_a_helper_alone_is_refused(tmp_path):
    """k02: a kernel declared only in a helper module (imported by an op module, named by no ``MODULES``) is
    refused: its code is not where the map looks for an op."""
    helper = 'from .spec import OpSpec\nMORE = OpSpec("extra")\n'
    _refused(tmp_path, {"_more.py": helper}, "extra", "declared in neurobrix/ops/_more.py")


def test_a_modules_tuple_with_a_name_not_written_out_is_refused(tmp_path):
    """k06: ``MODULES`` must be names written out, every one: a computed element (the module it names read by no
    map) is refused, not dropped."""
    init = 'EXTRA = "table"\nMODULES = ("rotary", EXTRA)\n'
    _refused(tmp_path, {"__init__.py": init}, "rotary", "MODULES is not one tuple of module names written out")
