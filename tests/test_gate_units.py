"""The gate's parts on small synthetic inputs (no build): codes, limits, parsers, unusable input, configuration."""

from __future__ import annotations

import calendar
import gzip
import importlib.metadata
import io
import os
import random
import re
import stat
import struct
import subprocess
import tarfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest
import tomllib
from conftest import REPO
from gate_fixtures import RawMember, RawTarMember, raw_tar, raw_zip, write_sdist

from gate import tarstrict, zipstrict
from gate.archive import SdistArchive, WheelArchive, open_archive
from gate.checker import DEFAULT_TRACKED, collect
from gate.checks import Check, GateError, Limits
from gate.completeness import SOURCE_DIR, describe_difference, load_reference
from gate.metadata import entry_points_text, wheel_file_text
from gate.repository import PACKAGE, load_repository
from gate.tools import twine_messages
from neurobrix import tables

SMALL = Limits(member_size=1000, total_size=5000, ratio=10, ratio_from=100)


def zip_with(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (stat.S_IFREG | 0o644) << 16  # writestr's own for a name is 600 (G315)
            out.writestr(info, data, zipfile.ZIP_DEFLATED)
    return path


def test_codes_are_stable_unique_and_each_one_is_raised_somewhere() -> None:
    assert all(re.fullmatch(r"G\d{3}", c.name) for c in Check)
    assert len({c.value for c in Check}) == len(Check)
    source = "\n".join(p.read_text() for p in (REPO / "gate").glob("*.py") if p.name != "checks.py")
    unused = [c.name for c in Check if f"Check.{c.name}" not in source]
    assert unused == []


def test_sizes_and_ratios_are_judged_from_the_directory(tmp_path: Path) -> None:
    wheel = WheelArchive(
        zip_with(
            tmp_path / "x.whl",
            [
                ("big.txt", b"0123456789" * 150),  # 1500 bytes > member_size
                ("dense.txt", bytes(900)),  # 900 zeros deflate ~100x
                ("ok.txt", b"fine"),
            ],
        ),
        SMALL,
    )
    found = {(f.code, f.path) for f in wheel.findings}
    assert ("G306", "big.txt") in found and ("G307", "dense.txt") in found
    assert ("G308", None) not in found
    assert wheel.read("big.txt") is None and wheel.read("dense.txt") is None
    assert wheel.read("ok.txt") == b"fine"


def test_the_total_size_is_judged_too(tmp_path: Path) -> None:
    members = [(f"m{i}.txt", random.Random(i).randbytes(768)) for i in range(8)]  # 8 x 768 bytes > 5000
    wheel = WheelArchive(zip_with(tmp_path / "x.whl", members), SMALL)
    assert [f.code for f in wheel.findings] == ["G308"]
    assert wheel.read("m0.txt") is None


def test_an_sdist_stream_is_abandoned_past_the_limits(tmp_path: Path) -> None:
    dense = tmp_path / "dense-1.0.tar.gz"
    dense.write_bytes(gzip.compress(bytes(100_000), mtime=0))
    sdist = SdistArchive(dense, SMALL)
    assert sdist.refused_unread and [f.code for f in sdist.findings] == ["G307"]
    large = tmp_path / "large-1.0.tar.gz"
    large.write_bytes(gzip.compress(random.Random(0).randbytes(10_000), mtime=0))  # incompressible, past total_size
    assert [f.code for f in SdistArchive(large, SMALL).findings] == ["G308"]


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        ("x.whl", b"not a zip", "not a zip archive"),
        ("x.whl", b"", "not a zip archive"),
        ("x-1.0.tar.gz", b"not gzip at all", "not a gzip stream"),
        ("x-1.0.tar.gz", gzip.compress(b"x" * 5000, mtime=0)[:30], "truncated"),
        ("x.zip", b"", "not a wheel"),
    ],
)
def test_input_that_is_not_an_archive_is_unusable(tmp_path: Path, name: str, content: bytes, why: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(GateError, match=why):
        open_archive(path, Limits())


@pytest.mark.parametrize(
    ("content", "code", "why"),
    [
        (gzip.compress(b"x" * 5000, mtime=0), "G311", "not whole 512-byte blocks"),
        (gzip.compress(b"x" * 5120, mtime=0), "G313", "not a ustar header"),
        (gzip.compress(b"", mtime=0) + b"junk after the stream", "G311", "after the first gzip member"),
    ],
    ids=["partial block", "no tar header", "junk after the gzip stream"],
)
def test_a_gzip_stream_that_is_no_plain_tar_is_refused_unread(
    tmp_path: Path, content: bytes, code: str, why: str
) -> None:
    path = tmp_path / "x-1.0.tar.gz"
    path.write_bytes(content)
    sdist = SdistArchive(path, Limits())
    assert sdist.refused_unread and sdist.members == ()
    assert [f.code for f in sdist.findings] == [code] and why in sdist.findings[0].message


def test_concatenated_gzip_members_are_refused(tmp_path: Path) -> None:
    """One stream to Python's gzip and pip, only the first member to uv: read two ways, so refused."""
    import tarfile

    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as out:
        info = tarfile.TarInfo("x-1.0/PKG-INFO")
        info.size = 5
        out.addfile(info, io.BytesIO(b"hello"))
    data = tar.getvalue()
    path = tmp_path / "x-1.0.tar.gz"
    path.write_bytes(gzip.compress(data[:100], mtime=0) + gzip.compress(data[100:], mtime=0))
    sdist = SdistArchive(path, Limits())
    assert [f.code for f in sdist.findings] == ["G311"] and "second member" in sdist.findings[0].message


def test_a_folder_is_collected_as_twine_upload_would_see_it(tmp_path: Path) -> None:
    zip_with(tmp_path / "p-1.0-py3-none-any.whl", [("a", b"")])
    (tmp_path / "p-1.0.tar.gz").write_bytes(b"")
    (tmp_path / ".gitignore").write_text("*\n")  # not matched by dist/*: not uploaded, not judged
    (tmp_path / "sub").mkdir()
    dists, findings = collect([tmp_path, tmp_path / "p-1.0.tar.gz"])
    assert [p.name for p in dists] == ["p-1.0-py3-none-any.whl", "p-1.0.tar.gz"]
    assert [(f.code, f.path) for f in findings] == [("G001", "sub")]


def test_the_reference_list_must_be_usable(tmp_path: Path) -> None:
    assert load_reference(DEFAULT_TRACKED).files == tables.read_tracked(REPO / "tables")
    bad = tmp_path / "TRACKED.yaml"
    bad.write_text("format: 1\nfiles: [")
    with pytest.raises(GateError, match="not valid YAML"):
        load_reference(bad)
    moved = tables.render_tracked(list(tables.read_tracked(REPO / "tables"))).replace(
        f"wheel_path: {tables.WHEEL_DIR}/", "wheel_path: elsewhere/", 1
    )
    bad.write_text(moved)
    with pytest.raises(GateError, match="wheel_path"):
        load_reference(bad)
    with pytest.raises(GateError, match="no tracked list"):
        load_reference(tmp_path / "absent.yaml")


def test_a_differing_list_is_described_entry_by_entry() -> None:
    reference = load_reference(DEFAULT_TRACKED)
    first, *rest = reference.files
    assert describe_difference(tables.render_tracked(rest).encode(), reference, "x") == f"does not list {first.path}"
    assert "not a valid tracked list" in describe_difference(b"format: 2\nfiles: []\n", reference, "x")
    same = reference.data.replace(b"# Written by", b"# Typed by")
    assert "same entries in other bytes" in describe_difference(same, reference, "x")


def test_twine_output_becomes_one_message_per_problem() -> None:
    output = (
        "Checking p-1.0-py3-none-any.whl: \x1b[31mFAILED\x1b[0m\n"
        "ERROR    `long_description` has syntax errors in markup and would not be        \n"
        "         rendered on PyPI.                                                      \n"
        "         line 75: Error: Unexpected indentation.                                \n"
        "WARNING  `long_description_content_type` missing. defaulting to `text/x-rst`.   \n"
    )
    assert twine_messages(output, "p-1.0-py3-none-any.whl") == [
        "ERROR `long_description` has syntax errors in markup and would not be rendered on PyPI. "
        "line 75: Error: Unexpected indentation.",
        "WARNING `long_description_content_type` missing. defaulting to `text/x-rst`.",
    ]
    assert twine_messages("Checking p.whl: ERROR    InvalidDistribution: bad\n", "p.whl") == [
        "ERROR InvalidDistribution: bad"
    ]


def test_pyproject_configures_what_the_gate_runs() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"] == {SOURCE_DIR: tables.WHEEL_DIR}
    assert config["tool"]["check-wheel-contents"] == {"toplevel": ["neurobrix"]}
    assert config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == [PACKAGE]
    # WHEEL and entry_points.txt are held to the bytes hatchling writes (no PEP 517 hook prepares them)
    assert config["build-system"]["build-backend"] == "hatchling.build"
    dev = " ".join(config["project"]["optional-dependencies"]["dev"])
    for tool in ("twine", "check-wheel-contents", "packaging", "build", "hatchling", "installer"):
        assert re.search(rf"\b{tool}\b", dev), tool


def test_the_readme_main_job_is_the_gate() -> None:
    readme = (REPO / "README.md").read_text()
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)\n```", setup, re.S)
    assert len(commands) == 2
    assert commands[0].endswith("python -m gate build") and "'.[dev]'" in commands[0]
    assert "python -m gate check" in readme.split("## For releases", 1)[1]


@pytest.mark.parametrize(
    ("alias", "original"),
    [
        ("neurobrix/./_tables/x.yaml", "neurobrix/_tables/x.yaml"),
        ("neurobrix//_tables/x.yaml", "neurobrix/_tables/x.yaml"),
        ("neurobrix/_tables./x.yaml", "neurobrix/_tables/x.yaml"),
        ("neurobrix/_tables /x.yaml", "neurobrix/_tables/x.yaml"),
        ("neurobrix/_tables::$INDEX_ALLOCATION/x.yaml", "neurobrix/_tables/x.yaml"),
        ("NeuroBrix/_Tables/X.yaml", "neurobrix/_tables/x.yaml"),
        ("neurobrix/cafe\u0301.py", "neurobrix/caf\u00e9.py"),
        ("neurobrix/_tab\u200bles/x.yaml", "neurobrix/_tables/x.yaml"),
    ],
)
def test_every_alias_of_a_path_has_its_destination_key(alias: str, original: str) -> None:
    from gate.names import destination_key, name_problems

    assert destination_key(alias) == destination_key(original)
    assert name_problems(original) == []
    if alias.lower() != original.lower():  # a case variant is judged by comparing members (G305), not alone
        assert [check.name for check, _ in name_problems(alias)] == ["G310"]


def test_names_that_are_plain_pass_and_short_names_do_not() -> None:
    from gate.names import name_problems

    assert name_problems("neurobrix/ops/rms_norm.py") == []
    assert name_problems("neurobrix-0.1.0.dist-info/", is_dir=True) == []
    assert "8.3 short name" in name_problems("neurobrix/_TABLE~1/x.yaml")[0][1]
    assert "device name" in name_problems("neurobrix/aux.py")[0][1]
    for name in ("neurobrix/a?.py", "neurobrix/<b>.py", 'neurobrix/"c".py', "neurobrix/d|e.py", "neurobrix/*.py"):
        assert "Windows does not allow" in name_problems(name)[0][1], name  # planted (2026-12-03): left unjudged


def test_yaml_is_bounded_before_it_is_built() -> None:
    from gate import yamlsafe

    assert yamlsafe.load(b"format: 1\nfiles: [{a: 1}]\n", 1000) == {"format": 1, "files": [{"a": 1}]}
    for text, why in [
        (b"a: &x [1]\nb: *x\n", "anchor or alias"),
        (b"[" * 40 + b"]" * 40, "nested more than"),
        (b"x" * 2000, "the limit is"),
        (b"a: [\n", "not valid YAML"),
        (b"!!python/name:os.system x", "not valid YAML"),
    ]:
        with pytest.raises(yamlsafe.UnsafeYAML, match=why):
            yamlsafe.load(text, 1000)


def test_findings_are_capped_per_check_and_dist() -> None:
    from gate.checks import Finding, capped

    many = [Finding(Check.G107, "a.whl", f"m{i}", "x") for i in range(25)]
    other = [Finding(Check.G107, "b.whl", "n", "x"), Finding(Check.G202, "a.whl", "m0", "y")]
    kept = capped(many + other, shown=20)
    assert kept[:20] == many[:20] and other[0] in kept and other[1] in kept
    summary = [f for f in kept if "more" in f.message]
    assert [(f.check, f.dist, f.path) for f in summary] == [(Check.G107, "a.whl", "m20")]
    assert "and 5 more G107 findings" in summary[0].message


def test_a_folder_that_is_no_git_checkout_is_no_usable_repository(tmp_path: Path) -> None:
    from gate.repository import load_repository

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    with pytest.raises(GateError, match="git checkout"):
        load_repository(tmp_path)


def test_the_text_report_escapes_what_could_repaint_a_terminal(tmp_path):
    """Member names and messages come from the archive under check: ANSI escapes, a carriage return or a bidi
    override in them are printed as escapes, so they cannot rewrite the log a reviewer reads."""
    from gate.checks import Finding
    from gate.report import Report

    hostile = "neurobrix/\x1b[2K\rok\u202etxt.py"
    report = Report(tmp_path, None)
    report.findings.append(Finding(Check.G001, "evil.whl", hostile, "bytes \x07 and \x1b]0;title\x07"))
    text = report.render()
    assert not any(ch in text for ch in "\x1b\r\x07\u202e")
    assert "\\x1b[2K\\rok\\u202etxt.py" in text
    assert text.splitlines()[-1].startswith("gate: REFUSED")


# Planted bugs the suite missed (2026-12-02): each test below fails with one of them, named in its docstring


def parse_zip(members: list[RawMember]) -> list[zipstrict.ZipProblem]:
    return zipstrict.parse(raw_zip(members), 10)[1]


LOCAL_FIELDS = {  # a local header's fields that must equal the central entry's: offset, struct format
    "version needed": (4, "<H"),
    "flags": (6, "<H"),
    "method": (8, "<H"),
    "time": (10, "<H"),
    "date": (12, "<H"),
    "CRC": (14, "<L"),
    "compressed size": (18, "<L"),
    "size": (22, "<L"),
}


@pytest.mark.parametrize("field", list(LOCAL_FIELDS))
def test_a_local_header_must_equal_its_central_entry_in_every_field(field: str) -> None:
    """Some tools read a member from its local header: a CRC (or any field) there that the directory does not
    state is the archive read two ways (planted: the local CRC not compared)."""
    data = bytearray(raw_zip([RawMember(b"neurobrix/x.py", b"x = 1\n" * 10)]))
    at, fmt = LOCAL_FIELDS[field]
    struct.pack_into(fmt, data, at, struct.unpack_from(fmt, data, at)[0] ^ 2)
    entries, problems = zipstrict.parse(bytes(data), 10)
    assert entries == [] and [(p.check, p.raw_name) for p in problems] == [(Check.G312, b"neurobrix/x.py")]
    assert problems[0].message.endswith(f"on: {field}")


def test_zip_flags_and_extra_fields_the_gate_does_not_read_are_refused_wherever_they_are() -> None:
    """Planted: unknown general-purpose flags accepted; extra fields judged in the central header only."""
    assert [(p.check, "0x0040" in p.message) for p in parse_zip([RawMember(b"a.py", b"x", flags=0x40)])] == [
        (Check.G313, True)
    ]
    unicode_path = struct.pack("<HHBL", 0x7075, 5 + 7, 1, zlib.crc32(b"a.py")) + b"evil.py"
    for local_only in (unicode_path, struct.pack("<HH", 0x0001, 0)):
        problems = parse_zip([RawMember(b"a.py", b"x", extra=b"", local_extra=local_only)])
        assert [(p.check, p.raw_name) for p in problems] == [(Check.G312, b"a.py")]
        assert "in the local header" in problems[0].message


def test_a_local_entry_hidden_after_the_last_member_is_refused() -> None:
    """Planted: the bytes between the last member and the central directory not judged."""
    problems = parse_zip([RawMember(b"a.py", b"x = 1\n"), RawMember(b"neurobrix/evil.py", b"y", listed=False)])
    assert [(p.check, p.raw_name, p.fatal) for p in problems] == [(Check.G311, b"neurobrix/evil.py", True)]
    assert "does not list" in problems[0].message


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"crc": zlib.crc32(b"x = 1\n" * 50) ^ 1}, "CRC-32 differs"),
        ({"compressed": zlib.compress(b"x = 1\n" * 50)[2:-4] + b"hidden"}, "bytes follow the end of its deflate"),
        # zipfile (pip) installs the 300 bytes with no error: the size declared, which the limits judge, is not theirs
        ({"size": 301}, "inflates to 300 bytes; its entry declares 301"),
    ],
    ids=["wrong CRC", "bytes after the deflate stream", "fewer bytes than declared"],
)
def test_a_deflated_member_is_read_only_when_it_is_exactly_what_its_entry_declares(
    tmp_path: Path, fields: dict[str, object], why: str
) -> None:
    """Planted: the CRC checked for stored members only; bytes after the deflate stream's end accepted; a stream that
    ends before the declared size accepted (2026-12-03)."""
    wheel = tmp_path / "x.whl"
    wheel.write_bytes(raw_zip([RawMember(b"a.py", b"x = 1\n" * 50, **fields)]))  # type: ignore[arg-type]
    archive = WheelArchive(wheel, Limits())
    assert archive.findings == [] and archive.read("a.py") is None
    assert [(f.code, f.path) for f in archive.findings] == [("G309", "a.py")] and why in archive.findings[0].message


def test_the_member_limit_is_exact_in_both_archives(tmp_path: Path) -> None:
    """Planted: the limit raised by one, in the zip reader and in the tar reader."""
    limits = Limits(members=3)
    for count, refused in ((3, False), (4, True)):
        wheel = WheelArchive(zip_with(tmp_path / f"{count}.whl", [(f"m{i}", b"") for i in range(count)]), limits)
        tar = raw_tar([RawTarMember(f"x-1.0/m{i}") for i in range(count)])
        sdist = SdistArchive(write_sdist(tmp_path / f"x{count}-1.0.tar.gz", tar), limits)
        for archive in (wheel, sdist):
            assert [f.code for f in archive.findings] == (["G314"] if refused else []), archive.dist


def test_the_ratio_is_judged_from_the_first_byte_of_ratio_from(tmp_path: Path) -> None:
    """Planted: a member of exactly ``ratio_from`` bytes left unjudged."""
    wheel = WheelArchive(zip_with(tmp_path / "x.whl", [("at.txt", bytes(100)), ("below.txt", bytes(99))]), SMALL)
    assert [(f.code, f.path) for f in wheel.findings] == [("G307", "at.txt")]


def test_a_zip_folder_entry_with_content_is_not_a_folder(tmp_path: Path) -> None:
    """Planted: a folder entry's bytes ignored (which of them a tool writes, and where, differs)."""
    wheel = tmp_path / "x.whl"
    wheel.write_bytes(raw_zip([RawMember(b"neurobrix/", b"content", mode=stat.S_IFDIR | 0o755)]))
    archive = WheelArchive(wheel, Limits())
    assert [f for f in archive.findings if f.code == "G304" and "7 bytes of content" in f.message]


def tar_header(name: bytes, size: int = 0, kind: bytes = tarfile.REGTYPE, fmt: int = tarfile.USTAR_FORMAT) -> bytearray:
    info = tarfile.TarInfo("x")
    info.size, info.type, info.mtime = size, kind, 0
    block = bytearray(info.tobuf(fmt))
    block[0:100] = name.ljust(100, b"\0")
    return checksummed(block)


def checksummed(block: bytearray) -> bytearray:
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\x00 " % sum(block[:512])
    return block


def pax_block(payload: bytes) -> bytes:
    """A pax header as tarfile writes one (mode 0, every field but the name, type and size empty), then ``payload``."""
    header = tar_header(b"././@PaxHeader", len(payload), tarfile.XHDTYPE)
    header[100:108] = b"0000000\0"
    return bytes(checksummed(header)) + payload + bytes(-len(payload) % 512)


MTIME = b"20 mtime=1580601600\n"
TAR_END = bytes(1024)


def pax_with(at: int, value: bytes) -> bytes:
    """A pax header of one mtime record with ``value`` written over its own header block at ``at``."""
    block = bytearray(pax_block(MTIME))
    block[at : at + len(value)] = value
    return bytes(checksummed(block[:512])) + bytes(block[512:])


TAR_DAMAGE = {  # a tar stream -> (the check, what its message says)
    "a pax header of two blocks of allowed records": (
        pax_block(MTIME * 30) + tar_header(b"x-1.0/a") + TAR_END,
        (Check.G312, "a pax header of 600 bytes"),
    ),
    "a folder declaring content": (
        tar_header(b"x-1.0/d/", 3, tarfile.DIRTYPE) + b"abc".ljust(512, b"\0") + TAR_END,
        (Check.G312, "a dir declaring 3 bytes"),
    ),
    "a pax header, then the end": (pax_block(MTIME) + TAR_END, (Check.G312, "followed by the end of the archive")),
    "two pax headers in a row": (
        pax_block(MTIME) + pax_block(MTIME) + tar_header(b"x-1.0/a") + TAR_END,
        (Check.G312, "two pax headers in a row"),
    ),
    "a GNU header with a prefix": (
        bytes(checksummed(tar_header(b"a", fmt=tarfile.GNU_FORMAT)[:345] + b"x-1.0".ljust(155, b"\0") + bytes(12)))
        + TAR_END,
        (Check.G312, "prefix field"),
    ),
    "a name with bytes after its NUL": (
        tar_header(b"x-1.0/a\0/../../evil.py") + TAR_END,
        (Check.G312, "after the NUL that ends its name"),
    ),
    # bytes no reader takes for the name (tarfile cuts the prefix at its NUL), carried in every header (2026-12-03)
    "a prefix with bytes after its NUL": (
        bytes(checksummed(tar_header(b"a")[:345] + b"x-1.0\0import os".ljust(155, b"\0") + bytes(12))) + TAR_END,
        (Check.G312, "after the NUL that ends its prefix"),
    ),
    "a link name with bytes after its NUL": (
        bytes(checksummed(tar_header(b"x-1.0/a")[:157] + b"\0setup.py".ljust(100, b"\0") + tar_header(b"a")[257:]))
        + TAR_END,
        (Check.G312, "after the NUL that ends its link name"),
    ),
    # tarfile (pip) stops at the first zero block; `tar -i` and tarfile's ignore_zeros read the member after it
    "a lone zero block, then a member": (
        tar_header(b"x-1.0/a") + bytes(512) + tar_header(b"x-1.0/setup.py") + TAR_END,
        (Check.G311, "a lone zero block at offset 512"),
    ),
    # tarfile (Python 3.11.7) drops the last byte unread (mtime 158060160 here); later releases refuse the header
    "a pax record not ended by a line feed": (
        pax_block(b"19 mtime=1580601600") + tar_header(b"x-1.0/a") + TAR_END,
        (Check.G312, "a malformed pax record"),
    ),
    # round 17: a pax header's own fields, read by no pax reader, applied by a ustar-only unpacker (it writes a file)
    "a pax header named otherwise than tarfile names it": (
        pax_with(0, b"x-1.0/a".ljust(100, b"\0")) + tar_header(b"x-1.0/a") + TAR_END,
        (Check.G318, "name b'x-1.0/a'"),
    ),
    "a pax header with a mode of its own": (
        pax_with(100, b"0000644\0") + tar_header(b"x-1.0/a") + TAR_END,
        (Check.G318, "mode b'0000644'"),
    ),
}


@pytest.mark.parametrize("damage", list(TAR_DAMAGE))
def test_a_tar_stream_read_one_way_only(damage: str) -> None:
    """Planted: a pax header of four blocks allowed; a folder's content; a pax header with no member, or two in a
    row; a GNU header's prefix (tarfile prepends it to the name); bytes hidden after a name's NUL; and, 2026-12-03,
    bytes hidden after the NUL of a prefix or a link name (the field cut there unjudged), a member after one zero block
    (the block after it left unread), a pax record with no line feed (its last byte taken for one)."""
    data, (check, said) = TAR_DAMAGE[damage]
    entries, problems = tarstrict.parse(bytes(data), 10)
    assert entries == [] and [p.check for p in problems] == [check] and said in problems[0].message, problems


TAR_NUMBERS = {"mode": 100, "uid": 108, "gid": 116, "size": 124, "mtime": 136, "devmajor": 329, "devminor": 337}


@pytest.mark.parametrize("field", list(TAR_NUMBERS))
def test_every_tar_number_field_is_plain_octal(field: str) -> None:
    """tarfile takes a header with any number it cannot read for the end of the archive and unpacks only the
    members before it (planted: the uid left unparsed)."""
    header = tar_header(b"x-1.0/a")
    header[TAR_NUMBERS[field] : TAR_NUMBERS[field] + 8] = b"evil!!!\0"
    entries, problems = tarstrict.parse(bytes(checksummed(header)) + TAR_END, 10)
    assert [p.check for p in problems] == [Check.G312] and f"{field} field" in problems[0].message


@pytest.mark.parametrize("mode", [0o644, 0o744, 0o654, 0o645], ids=oct)
def test_an_sdist_member_executable_by_anyone_is_executable(tmp_path: Path, mode: int) -> None:
    """pip keeps every executable bit it unpacks (planted: only the owner's read)."""
    sdist = SdistArchive(
        write_sdist(tmp_path / "x-1.0.tar.gz", raw_tar([RawTarMember("x-1.0/a", mode=mode)])), Limits()
    )
    assert sdist.files["x-1.0/a"].executable == bool(mode & 0o111)


def test_names_with_any_short_name_or_any_control_character_are_refused() -> None:
    """Planted: only ``~1`` taken for an 8.3 short name; DEL and the C1 controls (``\\x9b`` starts an escape
    sequence on some terminals) accepted."""
    from gate.names import name_problems

    assert "8.3 short name" in name_problems("neurobrix/_TABLE~2/x.yaml")[0][1]
    for control in ("\x7f", "\x85", "\x9b"):
        assert [c.name for c, _ in name_problems(f"neurobrix/a{control}.py")] == ["G303"]


@pytest.mark.parametrize("control", [c for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)] + [0x7F], ids=hex)
def test_every_control_character_but_tab_in_a_metadata_field_is_refused(control: int) -> None:
    """packaging and pip read ``\\x0b`` and ``\\x0c`` around a version as white space, uv not (planted: those two
    accepted)."""
    from gate.metadata import read_metadata

    data = b"Metadata-Version: 2.1\nName: x\nVersion: %c0.1.0\n\n" % control
    metadata, why = read_metadata(data)
    assert metadata is None and "control character" in why


def test_a_requirement_s_marker_is_part_of_what_is_compared() -> None:
    """A marker no environment matches drops the dependency as surely as deleting it (planted: markers ignored)."""
    from gate.metadata import metadata_differences

    ours = b"Metadata-Version: 2.4\nName: x\nVersion: 1.0\nRequires-Dist: torch<2.15,>=2.11\n\n"
    theirs = ours.replace(b">=2.11\n", b">=2.11; python_version < '3'\n")
    assert ["Requires-Dist" in d and "python_version" in d for d in metadata_differences(theirs, ours)] == [True]


@pytest.mark.parametrize(
    "theirs",
    [
        b"Metadata-Version: 2.4\nVersion: 1.0\nName: x\n\nText.\n",
        b"Metadata-Version: 2.4\r\nName: x\r\nVersion: 1.0\r\n\r\nText.\n",
        b"Metadata-Version: 2.4\nName: x\nVersion: 1.0\n\n\nText.\n",
    ],
    ids=["fields in another order", "CR LF line ends", "another blank line"],
)
def test_metadata_is_compared_byte_for_byte(theirs: bytes) -> None:
    """The same fields and values, other bytes: PyPI shows and stores the bytes uploaded (planted: fields compared
    as a set, and values once normalised)."""
    from gate.metadata import metadata_differences

    ours = b"Metadata-Version: 2.4\nName: x\nVersion: 1.0\n\nText.\n"
    assert metadata_differences(ours, ours) == []
    assert len(metadata_differences(theirs, ours)) >= 1


def test_a_link_in_the_upload_folder_is_not_a_dist(tmp_path: Path) -> None:
    """`twine upload dist/*` follows it to whatever it points at when the upload runs (planted: links judged)."""
    elsewhere = zip_with(tmp_path / "p-1.0-py3-none-any.whl", [("a", b"")])
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "p-1.0.tar.gz").write_bytes(b"")
    (tmp_path / "dist" / elsewhere.name).symlink_to(elsewhere)
    dists, findings = collect([tmp_path / "dist"])
    assert [p.name for p in dists] == ["p-1.0.tar.gz"]
    assert [(f.code, f.path) for f in findings if f.code == "G001"] == [("G001", elsewhere.name)]


def test_the_rebuild_comparison_reports_a_member_only_the_wheel_under_check_has(tmp_path: Path) -> None:
    """Were a wheel to pass every static check with a member the sdist does not build, only the comparison would
    see it (planted: the rebuilt wheel's names alone compared)."""
    from gate.sdist import _compare

    sdist = SdistArchive(write_sdist(tmp_path / "x-1.0.tar.gz", raw_tar([RawTarMember("x-1.0/a")])), Limits())
    rebuilt = WheelArchive(zip_with(tmp_path / "rebuilt.whl", [("a", b"1")]), Limits())
    wheel = WheelArchive(zip_with(tmp_path / "wheel.whl", [("a", b"1"), ("z-extra", b"")]), Limits())
    _compare(sdist, rebuilt, wheel)
    assert [(f.code, f.path) for f in sdist.findings] == [("G508", "z-extra")]


def test_the_total_counts_every_member_not_only_the_files(tmp_path: Path) -> None:
    """Planted: only regular files counted toward the archive's total."""
    data = random.Random(0).randbytes(3000)
    wheel = tmp_path / "x.whl"
    link = RawMember(b"link", b"/etc/passwd", mode=stat.S_IFLNK | 0o777, size=3000)  # declared, never inflated
    wheel.write_bytes(raw_zip([RawMember(b"a.txt", data), link]))
    archive = WheelArchive(wheel, Limits(member_size=5000, total_size=5000))
    assert [(f.code, f.path) for f in archive.findings if f.code in ("G304", "G308")] == [
        ("G304", "link"),
        ("G308", None),
    ]


def test_record_with_more_rows_than_a_wheel_may_have_members_is_refused_whole(tmp_path: Path) -> None:
    """One finding, not one a row (planted: one row more allowed)."""
    from gate.wheel import _check_record

    rows = "".join(f"m{i},sha256=x,1\n" for i in range(4)).encode()
    wheel = WheelArchive(zip_with(tmp_path / "x.whl", [("x-1.0.dist-info/RECORD", rows)]), Limits(members=3))
    _check_record(wheel, "x-1.0.dist-info")
    assert [(f.code, f.message.split(",")[0]) for f in wheel.findings] == [("G206", "4 rows")]


def test_a_tracked_table_that_is_no_file_is_named_missing(tmp_path: Path) -> None:
    """Planted: a tracked table's path holding a link passed over by the table check (G304 alone named it)."""
    from gate.completeness import SDIST_CHECKS, Reference, table_findings
    from neurobrix.schema import TrackedFile

    reference = Reference(
        tmp_path / "TRACKED.yaml", b"", (TrackedFile("a.yaml", "neurobrix/_tables/a.yaml", "0" * 64, 1),)
    )
    link = RawTarMember("x-1.0/tables/a.yaml", type=tarfile.SYMTYPE, linkname="/etc/passwd")
    sdist = SdistArchive(write_sdist(tmp_path / "x-1.0.tar.gz", raw_tar([link])), Limits())
    table_findings(sdist, "x-1.0/tables/", reference, SDIST_CHECKS)
    assert "has a symlink there" in next(f.message for f in sdist.findings if f.code == "G501")


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        check=True,
        capture_output=True,
    )


def test_the_working_tree_is_a_commit_only_when_every_tracked_file_is_its_own(tmp_path: Path) -> None:
    """Every way a tracked file can differ from the commit: bytes (the same size and time too: hashed, not stat'ed),
    the executable bit, the file type, a staged change, a staged new file, a deleted file."""
    from gate.repository import read_tree_state

    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    assert read_tree_state(root).commit is None and not read_tree_state(root).clean  # nothing committed
    (root / "a.py").write_bytes(b"x = 1\n")
    (root / "run.sh").write_bytes(b"#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "pkg").mkdir()
    (root / "pkg" / "b.py").write_bytes(b"y = 2\n")
    (root / "link").symlink_to("a.py")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    state = read_tree_state(root)
    assert state.clean and len(state.commit or "") == 40 and state.differs == ()
    (root / "untracked.txt").write_bytes(b"not judged\n")
    assert read_tree_state(root).clean

    def differs_after(change: object, undo: object) -> tuple[str, ...]:
        change()  # type: ignore[operator]
        try:
            return read_tree_state(root).differs
        finally:
            undo()  # type: ignore[operator]
            assert read_tree_state(root).clean

    a, run, b = root / "a.py", root / "run.sh", root / "pkg" / "b.py"
    stat_a = a.stat()

    def same_size_same_time() -> None:
        a.write_bytes(b"x = 2\n")
        os.utime(a, ns=(stat_a.st_atime_ns, stat_a.st_mtime_ns))

    assert differs_after(same_size_same_time, lambda: a.write_bytes(b"x = 1\n")) == ("a.py",)
    assert differs_after(lambda: run.chmod(0o644), lambda: run.chmod(0o755)) == ("run.sh",)
    assert differs_after(lambda: a.chmod(0o755), lambda: a.chmod(0o644)) == ("a.py",)
    assert differs_after(lambda: b.unlink(), lambda: b.write_bytes(b"y = 2\n")) == ("pkg/b.py",)

    def link_to_a_file() -> None:
        (root / "link").unlink()
        (root / "link").write_bytes(b"a.py")

    def file_to_a_link() -> None:
        (root / "link").unlink()
        (root / "link").symlink_to("a.py")

    assert differs_after(link_to_a_file, file_to_a_link) == ("link",)

    def staged_edit() -> None:
        b.write_bytes(b"y = 3\n")
        git(root, "add", "pkg/b.py")
        b.write_bytes(b"y = 2\n")  # the working tree is the commit's again, the index is not

    assert differs_after(staged_edit, lambda: git(root, "reset", "-q")) == ("pkg/b.py",)

    def staged_new() -> None:
        (root / "new.py").write_bytes(b"")
        git(root, "add", "new.py")

    def unstage_new() -> None:
        git(root, "rm", "-q", "--cached", "new.py")
        (root / "new.py").unlink()

    assert differs_after(staged_new, unstage_new) == ("new.py",)
    assert differs_after(lambda: git(root, "rm", "-q", "--cached", "a.py"), lambda: git(root, "add", "a.py")) == (
        "a.py",
    )


# Planted bugs the suite missed (2026-12-03): each test below fails with one of them, named in its docstring


def two_member_zip() -> bytes:
    return raw_zip([RawMember(b"neurobrix/a.py", b"x = 1\n"), RawMember(b"neurobrix/b.py", b"y = 2\n")])


END_RECORD_FIELDS = {  # a field of the end-of-central-directory record -> its offset there, and the value planted
    "the number of this disk": (4, 1),
    "the disk the directory starts on": (6, 1),
    "the entries on this disk, other than the total": (8, 1),
}


@pytest.mark.parametrize("field", list(END_RECORD_FIELDS))
def test_an_end_record_of_a_spanned_archive_is_refused(field: str) -> None:
    """zipfile (pip, installer) and unzip read the directory by its size and ignore the disk fields; a reader of
    spanned archives refuses them (the zip crate, uv's, refuses two disk numbers that differ), and one that counts
    the entries on this disk reads fewer members than one that counts the total (planted: the disk fields unread)."""
    at, value = END_RECORD_FIELDS[field]
    data = bytearray(two_member_zip())
    struct.pack_into("<H", data, len(data) - 22 + at, value)
    assert len(zipfile.ZipFile(io.BytesIO(bytes(data))).namelist()) == 2  # what pip reads
    entries, problems = zipstrict.parse(bytes(data), 10)
    assert entries == []
    assert [(p.check, p.message) for p in problems] == [(Check.G313, "a multi-disk (spanned) archive")]


def test_a_directory_holding_more_entries_than_the_end_record_counts_is_refused() -> None:
    """zipfile reads central entries for as many bytes as the directory's size, whatever the count: an entry past
    the count is a member to pip and to no reader that goes by the count (planted: the count trusted, the rest of the
    directory unread)."""
    data = bytearray(two_member_zip())
    struct.pack_into("<HH", data, len(data) - 22 + 8, 1, 1)
    assert len(zipfile.ZipFile(io.BytesIO(bytes(data))).namelist()) == 2  # what pip reads
    entries, problems = zipstrict.parse(bytes(data), 10)
    assert entries == [] and [p.check for p in problems] == [Check.G312]
    assert "more bytes than its entries" in problems[0].message


def test_an_encrypted_member_is_refused_unread(tmp_path: Path) -> None:
    """The encryption flag on a member whose stored bytes are a plain deflate stream: zipfile (pip, installer) asks
    for a password and installs nothing, a reader that ignores the flag inflates the member as it is (planted: the
    flag unread, and the wheel passed)."""
    wheel = tmp_path / "x.whl"
    wheel.write_bytes(raw_zip([RawMember(b"neurobrix/a.py", b"x = 1\n", flags=0x1)]))
    with zipfile.ZipFile(wheel) as unzipped, pytest.raises(RuntimeError, match="password required"):
        unzipped.read("neurobrix/a.py")
    archive = WheelArchive(wheel, Limits())
    assert [(f.code, f.path) for f in archive.findings] == [("G313", "neurobrix/a.py")]
    assert "encrypted" in archive.findings[0].message and archive.read("neurobrix/a.py") is None


def test_a_member_whose_bytes_run_into_the_central_directory_is_refused() -> None:
    """A stored member declaring 16 bytes more than it has, the first 16 bytes of the central directory, with their
    CRC: zipfile (pip) installs the directory's bytes as the end of the file, unzip refuses overlapping components
    (planted: a member's data past the start of the directory accepted)."""
    data = bytearray(raw_zip([RawMember(b"neurobrix/a.py", b"x = 1\n", method=zipfile.ZIP_STORED)]))
    directory = struct.unpack_from("<L", data, len(data) - 6)[0]
    content = b"x = 1\n" + data[directory : directory + 16]  # signature, versions, flags, method, time: no CRC or size
    for crc_at in (14, directory + 16):  # the local header's CRC and sizes, then the central entry's
        struct.pack_into("<3L", data, crc_at, zlib.crc32(content), len(content), len(content))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as unzipped:
        assert unzipped.read("neurobrix/a.py") == content  # what pip installs
    entries, problems = zipstrict.parse(bytes(data), 10)
    assert entries == [] and [(p.check, p.raw_name) for p in problems] == [(Check.G312, b"neurobrix/a.py")]
    assert "run into the central directory" in problems[0].message


def test_a_zip64_locator_hidden_in_allowed_extra_records_is_refused() -> None:
    """The last 76 bytes of the central directory spelt, inside four extra field records of allowed ids and sizes, as
    a zip64 end record and its locator: the gate's reader sees a plain zip, while zipfile (pip, installer) and unzip
    find the locator before the end record and take the directory from the zip64 one, here the directory without its
    first entry and its last 76 bytes (zipfile then refuses the wheel, a last entry cut short). Planted: the locator
    not looked for."""
    first = RawMember(b"neurobrix/a.py", b"x = 1\n")

    def wheel(extra: bytes) -> bytes:
        return raw_zip([first, RawMember(b"neurobrix/b.py", b"y = 2\n", extra=extra, local_extra=b"")])

    probe = wheel(bytes(80))
    size, offset = struct.unpack_from("<LL", probe, len(probe) - 10)
    skipped = 46 + len(first.name)  # the first central entry
    tail = bytearray(76)  # the zip64 end record (56 bytes), then its locator (20): record headers fall on fields
    tail[0:4], tail[56:60] = b"PK\x06\x06", b"PK\x06\x07"  # zipfile never reads (sizes, versions, counts, offsets)
    struct.pack_into("<QQ", tail, 40, size - skipped - 76, offset + skipped)  # the directory's size and offset
    struct.pack_into("<L", tail, 72, 1)  # one disk
    extra = b"".join(
        struct.pack("<HH", record, stop - start) + tail[start:stop]
        for record, start, stop in ((0x5855, 0, 12), (0x7875, 16, 32), (0x000A, 36, 64), (0x5455, 68, 76))
    )
    data = wheel(extra)
    with pytest.raises(zipfile.BadZipFile, match="Corrupt extra field"):
        zipfile.ZipFile(io.BytesIO(data))
    entries, problems = zipstrict.parse(data, 10)
    assert entries == [] and [(p.check, p.raw_name) for p in problems] == [(Check.G313, None)]
    assert "zip64" in problems[0].message


def test_the_extra_field_records_zip_writers_put_in_wheels_pass() -> None:
    """The forms Info-ZIP and other writers use (a local extended timestamp with all three times, the central one with
    the modification time only, whatever its flags; NTFS times; the Unix records), each laid out as the zip crate reads
    it; the checks of those layouts refuse nothing a writer makes."""
    with zipfile.ZipFile(io.BytesIO(raw_zip([RawMember(b"a.py", b"x")]))) as z:  # the times the records must name
        moment = calendar.timegm((*z.infolist()[0].date_time, 0, 0, 0))  # (gate round 20): its MS-DOS time, as UTC
    ntfs = (moment + zipstrict.NTFS_EPOCH) * 10**7
    records = [
        struct.pack("<HHB3L", 0x5455, 13, 7, moment, 2, 3),
        struct.pack("<HHBL", 0x5455, 5, 7, moment),
        struct.pack("<HHBL", 0x5455, 5, 1, moment),
        struct.pack("<HHLHH3Q", 0x000A, 32, 0, 1, 24, ntfs, 2, 3),
        struct.pack("<HHBBLBL", 0x7875, 11, 1, 4, 1000, 4, 1000),
        struct.pack("<HH2L2H", 0x5855, 12, 1, moment, 1000, 1000),
    ]
    for record in records:
        assert parse_zip([RawMember(b"a.py", b"x", extra=record)]) == [], record


def test_an_extra_field_record_running_past_its_field_is_refused(tmp_path: Path) -> None:
    """A Unix owner record declaring 11 bytes with 5 left in the field: zipfile (pip, installer) refuses the whole
    wheel, a reader that stops at the field's end reads on (planted: a record cut short taken as it is)."""
    wheel = tmp_path / "x.whl"
    short = struct.pack("<HHB2H", 0x7875, 11, 1, 2, 1000)  # 5 of the 11 bytes it declares
    wheel.write_bytes(raw_zip([RawMember(b"a.py", b"x", extra=short, local_extra=b"")]))
    with pytest.raises(zipfile.BadZipFile, match="Corrupt extra field"):
        zipfile.ZipFile(wheel)
    problems = zipstrict.parse(wheel.read_bytes(), 10)[1]
    assert [(p.check, p.raw_name) for p in problems] == [(Check.G313, b"a.py")]
    assert "runs past the field" in problems[0].message


@pytest.mark.parametrize(("record", "longest"), [(0x000A, 32), (0x5455, 13), (0x5855, 12), (0x7875, 19)], ids=hex)
def test_each_allowed_extra_field_record_is_held_to_its_formats_size(record: int, longest: int) -> None:
    """One byte past a record's longest form is bytes no installer reads (planted, 2026-12-03: the Unix owner
    record's limit raised; only the extended timestamp's was tested)."""
    extra = struct.pack("<HH", record, longest + 1) + bytes(longest + 1)
    problems = parse_zip([RawMember(b"a.py", b"x", extra=extra, local_extra=b"")])
    assert [(p.check, p.raw_name) for p in problems] == [(Check.G313, b"a.py")]
    assert f"longer than its format's {longest}" in problems[0].message


def test_the_files_a_build_writes_are_held_to_hatchlings_bytes() -> None:
    """The expected WHEEL and entry_points.txt are hatchling's own text for this project (a planted bug in either
    renderer would refuse every wheel judged alone, or pass another spelling)."""
    from hatchling.builders.wheel import WheelBuilder

    declared = load_repository(REPO).declared
    builder = WheelBuilder(str(REPO))
    assert entry_points_text(declared.entry_points) == builder.construct_entry_points_file().encode()
    hatchling_version = importlib.metadata.version("hatchling")
    assert declared.generator == f"hatchling {hatchling_version}"
    assert (
        wheel_file_text(declared.generator)
        == (
            f"Wheel-Version: 1.0\nGenerator: hatchling {hatchling_version}\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ).encode()
    )


# Mutation round (2026-12-03): 66 bugs planted one at a time in the gate's checks, each run against the gate's tests
# (this file, then the hostile cases of its class); C caught, S survived, E survived and equivalent, + new case.
# zipstrict  Z1 EOCD comment length unread S+ | Z2 disk_entries != entries dropped C | Z3 member limit +1 C |
#   Z4 directory end != made > C | Z5 entry comment unread C | Z7 version needed bound +1 S+ | Z8 stored compressed
#   != size made > E (the read then fails: G309 for G312) | Z9 last gap one byte short S+ | Z10 overlap unread C |
#   Z11 unknown flags of the low byte only S+ | Z13 timestamp reserved flags unread S+ | Z14 NTFS tag unread C |
#   Z15 local date not compared C | Z16 local extra unread C | Z17 padding slack 25 % -> 100 % C | Z18 CRC unread C |
#   Z19 bytes after the deflate stream unread C
# archive    A1 executable on an MS-DOS entry C | A2 world-writable allowed C | A3 folder needs read only S+ |
#   A4 DOS folder attribute C | A5 folder mode on a file name unread E (a special member, G304 all the same) |
#   A6 only a symlink's type refused S+ | A7 reserved gzip flag 0x20 only S+ | A8 owner's x bit only C
# tarstrict  T1 data after the end C | T2 block padding C | T3 folder with content C | T4 member limit +1 C |
#   T5 GNU prefix C | T6 header padding C | T7 device numbers on a file C | T8 owner name match for fullmatch C |
#   T9 pax record twice C | T10 pax value match for fullmatch C
# wheel      W1 row listed twice C | W3 sha1 allowed S+ | W4 size < RECORD's unseen C | W5 RECORD order C |
#   W6 __version__ compared by form only C | W7 G205 dropped C
# layout     L1 folder entry for no file C | L3 executable mismatch one way only E (no tracked package file is
#   executable, so the other way never arises)
# names      N1 DEL and C1 controls C | N2 trailing space C | N3 ~1 only C | N4 device stem spaces kept S+ |
#   N5 Cf characters C | N6 non-ASCII without the UTF-8 flag C | N7 '"' allowed C
# sdist      S1 world-writable allowed C | S2 folder needs read only S+ | S3 bits past 7777 C | S4 executable
#   mismatch one way only S+ | S5 folder entry for no file C | S7 .hgignore not required C
# metadata   M1 lone CR C | M2 DEL C | M3 mbox From line C | M4 version of the name unread C | M5 build tag unread
#   S+ | M6 one Generator line or none C | M7 file name compared case-folded C
# completeness C1 table sha256 unread C | C2 tracked list compared stripped C | C3 untracked tables at the top only C
# 50 caught, 3 equivalent, 13 survivors with a case each: A3, S2 (a folder its owner can read but not enter), S4 and
# M5 in tests/test_gate_hostile.py, W3 in tests/test_gate.py (a true sha1 or sha224 digest), the rest below.


def with_needed(data: bytes, version: int) -> bytes:
    """The one-member zip ``data`` with "version needed to extract" set to ``version`` in both of its headers."""
    out = bytearray(data)
    struct.pack_into("<H", out, 4, version)
    struct.pack_into("<H", out, struct.unpack_from("<L", out, len(out) - 6)[0] + 6, version)
    return bytes(out)


def test_the_version_needed_zipfile_opens_is_judged_at_its_exact_bound() -> None:
    """zipfile opens nothing above 6.3: 6.4 is a wheel pip refuses and uv installs (planted: the bound off by one). 6.3
    is a member `unzip` skips (round 19), refused on its own, not the whole wheel."""
    data = raw_zip([RawMember(b"neurobrix/a.py", b"x = 1\n")])
    zipfile.ZipFile(io.BytesIO(with_needed(data, 63))).read("neurobrix/a.py")
    assert [(p.check, p.fatal) for p in parse_zip_bytes(with_needed(data, 63))] == [(Check.G313, False)]
    with pytest.raises(NotImplementedError, match="zip file version 6.4"):
        zipfile.ZipFile(io.BytesIO(with_needed(data, 64))).read("neurobrix/a.py")
    problems = parse_zip_bytes(with_needed(data, 64))
    assert [(p.check, p.raw_name) for p in problems] == [(Check.G313, b"neurobrix/a.py")]
    assert "version needed to extract 6.4" in problems[0].message


def parse_zip_bytes(data: bytes) -> list[zipstrict.ZipProblem]:
    return zipstrict.parse(data, 10)[1]


def test_an_end_record_declaring_a_comment_it_does_not_hold_is_refused() -> None:
    """An end record whose comment length says 7 bytes and no byte follows: zipfile searches back, finds the same
    record and reads on (a cut comment), unzip warns of a truncated comment; two bytes of the record no reader agrees on
    (planted: the end record's comment length unread when the record is the file's last 22 bytes)."""
    data = bytearray(two_member_zip())
    struct.pack_into("<H", data, len(data) - 2, 7)
    assert len(zipfile.ZipFile(io.BytesIO(bytes(data))).namelist()) == 2  # what pip reads
    entries, problems = zipstrict.parse(bytes(data), 10)
    assert entries == [] and [(p.check, p.fatal) for p in problems] == [(Check.G311, True)]
    assert "7-byte comment" in problems[0].message


def test_one_byte_between_the_last_member_and_the_directory_is_refused() -> None:
    """A single byte after the last member's data, the directory moved one byte on: zipfile (pip) reads the wheel, the
    byte is in the upload and no member holds it (planted: the last gap judged one byte short)."""
    data = two_member_zip()
    directory = struct.unpack_from("<L", data, len(data) - 6)[0]
    out = bytearray(data[:directory] + b"!" + data[directory:])
    struct.pack_into("<L", out, len(out) - 6, directory + 1)
    assert len(zipfile.ZipFile(io.BytesIO(bytes(out))).namelist()) == 2  # what pip reads
    entries, problems = zipstrict.parse(bytes(out), 10)
    assert entries == [] and [(p.check, p.raw_name) for p in problems] == [(Check.G311, None)]
    assert f"1 bytes at offset {directory}" in problems[0].message


@pytest.mark.parametrize("flag", [0x1000, 0x2000, 0x4000, 0x8000])
def test_general_purpose_flags_of_the_high_byte_are_refused(flag: int) -> None:
    """zipfile (pip) ignores the high byte's flags (0x2000: a central directory whose local headers are masked), a
    reader that honours one reads the member otherwise (planted: only the low byte's unknown flags judged)."""
    problems = parse_zip([RawMember(b"a.py", b"x", flags=flag)])
    assert [(p.check, f"{flag:#06x}" in p.message) for p in problems] == [(Check.G313, True)]


def test_an_extended_timestamp_with_reserved_flag_bits_is_refused() -> None:
    """Flag bit 3 of an Info-ZIP extended timestamp, one time after it: zipfile skips the record, the zip crate refuses
    reserved bits and with them the whole wheel (planted: the flags' reserved bits unread)."""
    record = struct.pack("<HHBL", 0x5455, 5, 0b1001, 0)
    problems = parse_zip([RawMember(b"a.py", b"x", extra=record)])
    assert [p.check for p in problems] == [Check.G313, Check.G312]  # the central header's, then the local one's
    assert all("0x5455" in p.message and "not laid out" in p.message for p in problems)


@pytest.mark.parametrize("kind", [stat.S_IFIFO, stat.S_IFCHR, stat.S_IFBLK, stat.S_IFSOCK], ids=stat.filemode)
def test_a_wheel_member_of_another_file_type_is_no_regular_file(tmp_path: Path, kind: int) -> None:
    """A FIFO, device or socket mode on a wheel member: zipfile (pip) writes a plain file, `unzip` and the zip crate
    read the type from the mode (planted: only a symlink's type refused, any other taken for a file)."""
    wheel = tmp_path / "x.whl"
    wheel.write_bytes(raw_zip([RawMember(b"neurobrix/a.py", b"x = 1\n", mode=kind | 0o644)]))
    archive = WheelArchive(wheel, Limits())
    assert [(f.code, f.path) for f in archive.findings] == [("G304", "neurobrix/a.py")]
    assert "not a regular file" in archive.findings[0].message and archive.read("neurobrix/a.py") is None


@pytest.mark.parametrize("flag", [0x20, 0x40, 0x80])
def test_every_reserved_gzip_flag_bit_is_a_finding(tmp_path: Path, flag: int) -> None:
    """Each of the three reserved FLG bits: Python's gzip (pip) ignores it, zlib refuses the stream; a finding on the
    sdist, not an unusable input (planted: only bit 5 looked for, the others answered as no gzip stream at all)."""
    sdist = write_sdist(tmp_path / "x-1.0.tar.gz", raw_tar([RawTarMember("x-1.0/a", b"a")]))
    data = bytearray(sdist.read_bytes())
    data[3] |= flag
    sdist.write_bytes(bytes(data))
    with tarfile.open(sdist) as unpacked:  # what pip unpacks
        assert unpacked.getnames() == ["x-1.0/a"]
    archive = SdistArchive(sdist, Limits())
    assert [(f.code, f.path) for f in archive.findings] == [("G313", None)]
    assert f"reserved flag bits ({flag:#04x})" in archive.findings[0].message


@pytest.mark.parametrize("name", ["neurobrix/nul .py", "neurobrix/CON  .yaml", "neurobrix/com1 .tar.gz/x.py"])
def test_a_device_name_with_spaces_before_its_extension_is_refused(name: str) -> None:
    """Windows drops the spaces before a device name's extension: `nul .py` is the device NUL, as `nul.py` is
    (planted: the stem compared with its spaces, so the name passed)."""
    from gate.names import name_problems

    assert [(c, "device name" in why) for c, why in name_problems(name)] == [(Check.G310, True)]


@pytest.mark.parametrize(
    ("extra", "owners"),
    [
        (struct.pack("<HHBBLBL", 0x7875, 11, 1, 4, 0, 4, 0), [(0, 0)]),
        (struct.pack("<HHBBHBL", 0x7875, 9, 1, 2, 1000, 4, 100), [(1000, 100)]),
        (struct.pack("<HHBBLBL", 0x7875, 11, 2, 4, 0, 4, 0), [None]),  # another version
        (struct.pack("<HHBBLB", 0x7875, 7, 1, 4, 0, 4), [None]),  # a gid cut short
        (struct.pack("<HHBBL", 0x7875, 6, 1, 0, 0) + b"", [None]),  # an id of no bytes
        (struct.pack("<HH2L2H", 0x5855, 12, 1, 2, 7, 8), [(7, 8)]),
        (struct.pack("<HH2L", 0x5855, 8, 1, 2), []),  # the central form: times only
        (struct.pack("<HHBL", 0x5455, 5, 1, 1), []),
    ],
)
def test_unix_owner_records_are_read_as_unzip_reads_them(extra: bytes, owners: list[tuple[int, int] | None]) -> None:
    """Round 16: the owner `unzip -X` applies, from the new and the old Info-ZIP Unix record (G316 refuses any but
    root's, and any record not laid out as its format says)."""
    assert zipstrict.owners(extra) == owners


def test_a_tar_members_owner_is_its_pax_headers_over_its_own() -> None:
    """Round 16: tarfile and GNU tar apply a pax header's uid, gid, uname and gname over the ustar header's."""
    members = [
        RawTarMember("x-1.0/a", b"x", uid=5, gid=6, uname="u", gname="g"),
        RawTarMember("x-1.0/b", b"x", uid=5, pax={"uid": "7", "gname": "users"}),
    ]
    entries, problems = tarstrict.parse(raw_tar(members), 10)
    assert problems == []
    assert [e.owner for e in entries] == [(5, 6, b"u", b"g"), (7, 0, b"", b"users")]


def test_a_tar_members_header_owner_is_kept_beside_its_pax_owner() -> None:
    """Round 17: the owner the ustar header itself names, under a pax header that says otherwise (GNU tar maps the
    header's names to ids before it reads the pax records; a ustar-only unpacker reads no pax header)."""
    members = [
        RawTarMember("x-1.0/a", b"x", uid=5, gname="g"),
        RawTarMember("x-1.0/b", b"x", pax={"uname": ""}, header={265: b"nobody", 108: b"0001750\0"}),
    ]
    entries, problems = tarstrict.parse(raw_tar(members), 10)
    assert problems == []
    assert [e.owner for e in entries] == [(5, 0, b"", b"g"), (1000, 0, b"", b"")]
    assert [e.header_owner for e in entries] == [(5, 0, b"", b"g"), (1000, 0, b"nobody", b"")]


# Mutation round (2026-12-04): 36 bugs planted one at a time in the checks added since the round above (G316 owners
# and group write, G317 MS-DOS and internal attributes, G312 local against central extra records and the directory's
# order, G313 version needed, G310 name lengths, G406/G408 oversized metadata and entry points, G509 sdist modes),
# written without reading the tests, each run against this file, tests/test_gate_round19.py, tests/test_gate_hostile.py
# and tests/test_gate.py; C caught, S survived, E survived and equivalent, + new case below.
# archive    O1 a wheel member's group write unread C | O2 an sdist member's group write unread C | O3 owner records
#   of the central header only C | O4 a zip owner's gid unread C | O8 the old Unix record's local owner never read C |
#   O9 a tar group name unread C | O10 the ustar owner under a pax owner unread C | O13 uid and gid joined by `and` C |
#   D1 the MS-DOS attributes' high byte dropped C | D2 read-only passed with no Unix mode S+ | D3 read-only held to
#   others' write bit C | D4 internal attributes' high byte unread S+
# zipstrict  O5 the 0x7875 version unread C | O6 an id of no bytes C | O7 bytes after the gid S+ | X1 timestamp flags
#   not compared C | X2 the old Unix central record's length unread S+ | X3 records' ids compared as sets S+ | X4 the
#   comparison's arguments swapped C | X5 the directory's first pair never compared C | X6 the old Unix record's owner
#   bytes not compared E (either header naming another owner is G316 all the same) | V1 6.3 refused whole C | V2 the
#   unzip bound 2.1 C | V3 the unzip bound judged on deflated members only S+
# tarstrict  O11 the pax gid read from the uid record C | O12 the header owner recorded as the pax owner C
# names      L1 a component of 255 bytes refused C | L2 the path counted in characters S+ | L3 a component counted in
#   characters S+
# metadata   B1 the bound in MiB C | B2 the bound itself refused S+ | B3 entry points bounded by their own size C
# layout     B4 installer's bound on the compressed size S+
# sdist      M1 a folder held to the owner's read bit S+ | M2 a folder held to others' read bits S+ | M3 only the
#   group's bits judged C
# 23 caught, 1 equivalent, 12 survivors with a case each below.


def central_field(data: bytes, at: int, fmt: str, value: int) -> bytes:
    """The one-member zip ``data`` with ``value`` packed at ``at`` in its central directory entry."""
    out = bytearray(data)
    struct.pack_into(fmt, out, struct.unpack_from("<L", out, len(out) - 6)[0] + at, value)
    return bytes(out)


def test_a_unix_owner_record_with_bytes_after_its_gid_is_not_laid_out_as_its_format_says(tmp_path: Path) -> None:
    """Version, uid size, uid, gid size, gid, and nothing after (Info-ZIP's extrafld.txt): `unzip -X` reads the owner
    and skips the rest, so up to 8 bytes a header were carried unjudged (planted: bytes after the gid accepted)."""
    record = struct.pack("<HHBBLBLH", 0x7875, 13, 1, 4, 0, 4, 0, 0x4141)
    assert zipstrict.owners(record) == [None]
    wheel = tmp_path / "x.whl"
    wheel.write_bytes(raw_zip([RawMember(b"neurobrix/a.py", b"x = 1\n", extra=record)]))
    archive = WheelArchive(wheel, Limits())
    assert [(f.code, "not laid out" in f.message) for f in archive.findings] == [("G316", True)] * 2  # both headers


def test_read_only_on_an_entry_with_no_unix_mode_is_a_finding_of_its_own(tmp_path: Path) -> None:
    """The read-only attribute on an MS-DOS entry with no Unix mode: `unzip` installs it read-only (444), pip 644; the
    read-only bit passes only where a Unix mode says so too, and none does here (planted: "no mode" taken for one
    that says so, the attribute left to G315's finding on the mode)."""
    data = raw_zip([RawMember(b"neurobrix/a.py", b"x = 1\n", mode=0)])
    data = central_field(central_field(data, 4, "<H", 0x0014), 38, "<H", 0x01)  # made on MS-DOS; read-only
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        info = z.getinfo("neurobrix/a.py")
        assert (info.create_system, info.external_attr) == (0, 0x01)
    wheel = tmp_path / "x.whl"
    wheel.write_bytes(data)
    found = [(f.code, f.path) for f in WheelArchive(wheel, Limits()).findings]
    assert found == [("G315", "neurobrix/a.py"), ("G317", "neurobrix/a.py")]


@pytest.mark.parametrize("internal", [0x0100, 0x8000, 0x0003], ids=hex)
def test_every_reserved_internal_attribute_bit_is_a_finding(tmp_path: Path, internal: int) -> None:
    """Internal attributes past the text bit, in either byte: zipfile (pip) reads them as they are and no installer
    uses them, bits carried into the upload unjudged (planted: the high byte unread, a field of 16 bits judged as 8)."""
    data = central_field(raw_zip([RawMember(b"neurobrix/a.py", b"x = 1\n")]), 36, "<H", internal)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert z.getinfo("neurobrix/a.py").internal_attr == internal
    wheel = tmp_path / "x.whl"
    wheel.write_bytes(data)
    found = WheelArchive(wheel, Limits()).findings
    assert [(f.code, f"internal attributes {internal:#06x}" in f.message) for f in found] == [("G317", True)]


@pytest.mark.parametrize(
    ("central", "check"),
    # (a record of under 8 bytes is shorter than its format wherever it stands: G313)
    [(4, Check.G313), (10, Check.G312)],
    ids=["one time", "times and a uid"],
)
def test_an_old_unix_record_is_in_the_central_header_its_times_alone_or_whole(central: int, check: Check) -> None:
    """Info-ZIP's old Unix record (0x5855): two times, then the uid and gid in the local header; the central one holds
    the times alone (8 bytes) or the record whole. Any other cut is no record a writer writes, and the local owner
    is then one the zip crate never sees beside it (planted: the central record's length unread, any prefix taken)."""
    local = struct.pack("<2L2H", 1, 2, 0, 0)
    extra = struct.pack("<HH", 0x5855, central) + local[:central]
    problems = parse_zip([RawMember(b"a.py", b"x", extra=extra, local_extra=struct.pack("<HH", 0x5855, 12) + local)])
    assert [(p.check, p.raw_name, "0x5855" in p.message) for p in problems] == [(check, b"a.py", True)]


def test_the_same_records_in_another_order_are_refused_even_where_their_bytes_are_equal() -> None:
    """A new Unix record of one-byte ids and an extended timestamp can hold the same five bytes; listed in another
    order in each header, every record then compared with the other's said the same (planted: the records' ids
    compared as sets, so the order, which the zip crate and `unzip` meet otherwise, passed)."""
    same = struct.pack("<BBBBB", 1, 1, 0, 1, 0)  # version 1, uid 0, gid 0; to a timestamp: flags 1, one time
    central = struct.pack("<HH", 0x7875, 5) + same + struct.pack("<HH", 0x5455, 5) + same
    local = struct.pack("<HH", 0x5455, 5) + same + struct.pack("<HH", 0x7875, 5) + same
    assert zipstrict.owners(central) == [(0, 0)]
    problems = parse_zip([RawMember(b"a.py", b"x", extra=central, local_extra=local)])
    assert [(p.check, p.raw_name, "0x5455, 0x7875" in p.message) for p in problems] == [(Check.G312, b"a.py", True)]


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED], ids=["stored", "deflated"])
def test_a_version_needed_past_2_0_is_a_member_unzip_skips_whatever_its_method(method: int) -> None:
    """`unzip` compares "version needed" with its own whatever the member's method (planted: the bound judged on
    deflated members only, where zip writers write 1.0 for a stored member and a stored one saying 2.1 passed)."""
    data = with_needed(raw_zip([RawMember(b"neurobrix/a.py", b"x = 1\n", method=method)]), 21)
    zipfile.ZipFile(io.BytesIO(data)).read("neurobrix/a.py")  # pip reads it
    problems = parse_zip_bytes(data)
    assert [(p.check, p.fatal, "version needed to extract 2.1" in p.message) for p in problems] == [
        (Check.G313, False, True)
    ]


@pytest.mark.parametrize(
    "name",
    ["neurobrix/" + "é" * 128 + ".py", "neurobrix/" + "/".join(["ü" * 120] * 5) + "/a.py"],
    ids=["component of 261 bytes, 131 characters", "path of 1,215 bytes, 615 characters"],
)
def test_a_names_length_is_counted_in_bytes(name: str) -> None:
    """NAME_MAX and macOS's PATH_MAX count bytes, and a name of two-byte characters has twice as many as characters
    (planted: the component, or the whole name, counted in characters, so such names passed)."""
    from gate.names import name_problems

    assert any(len(part.encode()) > 255 for part in name.split("/")) or len(name.encode()) > 1024
    assert [(c, "refused by its length" in why) for c, why in name_problems(name)] == [(Check.G310, True)]


def test_an_entry_points_file_past_the_bound_is_not_handed_to_installer_by_its_declared_size(tmp_path: Path) -> None:
    """installer's configparser read hundreds of thousands of entries for tens of seconds; the bound is on the bytes
    it would parse, the declared size, not on the few bytes blank lines deflate into (planted: the compressed size
    compared, so a file of 5,000 line feeds in 50 bytes was parsed all the same)."""
    from gate import layout

    text = b"[console_scripts]\nfoo = a:b\n" + b"\n" * 5000
    wheel = tmp_path / "x-1.0-py3-none-any.whl"
    zip_with(
        wheel,
        [
            ("a.py", b"def b(): pass\n"),
            ("x-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: x\nVersion: 1.0\n"),
            ("x-1.0.dist-info/WHEEL", b"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
            ("x-1.0.dist-info/entry_points.txt", text),
            ("x-1.0.dist-info/RECORD", b""),
        ],
    )
    archive = WheelArchive(wheel, Limits())
    member = archive.files["x-1.0.dist-info/entry_points.txt"]
    assert member.compressed is not None and member.compressed < 1000 < member.size
    scripts: list[str] = []
    original = layout._Plan.write_script

    def write_script(self: layout._Plan, name: str, *args: Any, **kwargs: Any) -> Any:
        scripts.append(name)
        return original(self, name, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(layout._Plan, "write_script", write_script)
        assert layout.install_plan(archive, "x", "1.0", "x-1.0.dist-info")[1] == ""
        assert scripts == ["foo"]  # parsed without a bound
        assert layout.install_plan(archive, "x", "1.0", "x-1.0.dist-info", 1000)[1] == ""
    assert scripts == ["foo"]  # not parsed past it


@pytest.mark.parametrize("past", [0, 1], ids=["at the bound", "a byte past it"])
def test_metadata_is_parsed_up_to_its_bound_exactly(tmp_path: Path, past: int) -> None:
    """Metadata of as many bytes as the bound allows is parsed and compared (its added bytes named, G406), one byte
    more is refused unparsed (planted: the bound itself refused)."""
    from gate.metadata import Identity, check_metadata, metadata_bound

    declared = load_repository(REPO).declared
    bound = metadata_bound(declared.metadata)
    data = declared.metadata + b"x" * (bound - len(declared.metadata) + past)
    path = f"{declared.dist_info}/METADATA"
    archive = WheelArchive(zip_with(tmp_path / "x.whl", [(path, data)]), Limits())
    check_metadata(archive, path, Identity(None, None), declared)
    assert {f.code for f in archive.findings} == {"G406"}
    assert [("not parsed" in f.message) for f in archive.findings] == [bool(past)] * len(archive.findings)


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        (0o655, "its owner cannot list or enter it"),
        (0o744, "its group or others cannot list or enter it"),
        (0o754, "its group or others cannot list or enter it"),
    ],
    ids=["655", "744", "754"],
)
def test_an_sdist_folder_every_user_can_read_but_someone_cannot_enter_is_refused(
    tmp_path: Path, mode: int, said: str
) -> None:
    """A folder needs its read and its search bit: GNU tar and tarfile's unfiltered extractall run as root apply the
    mode, and a folder that can be listed but not entered holds files no one can open (planted: a folder held to the
    read bits a file needs, owner's or others', so 655, 744 and 754 passed)."""
    from gate.sdist import _check_modes

    sdist = write_sdist(
        tmp_path / "x-1.0.tar.gz",
        raw_tar([RawTarMember("x-1.0/d", type=tarfile.DIRTYPE, mode=mode), RawTarMember("x-1.0/d/a", b"a")]),
    )
    archive = SdistArchive(sdist, Limits())
    _check_modes(archive, "x-1.0", load_repository(REPO))
    assert [(f.code, f.path, said in f.message) for f in archive.findings] == [("G509", "x-1.0/d/", True)]
