"""The nineteenth round against the release gate: wheels and sdists the gate passed, or answered only after minutes.

Four classes, each refused now (every case below failed on the gate before its fix):

1. a "version needed to extract" above 2.0 on a member (4.5, zip64's; 4.7, 5.1, 6.3): Python's zipfile (pip,
   installer, twine) reads up to 6.3 and uv ignores the field, while Info-ZIP's `unzip` skips a member that needs more
   than it was built for (4.6 for Debian's, 2.0 for a build without zip64) and installs the wheel without it (G313);
2. member names no file system holds, whose judging took the gate minutes: 64 KiB of combining marks in reverse
   canonical order (Unicode normalisation sorts them in quadratic time: four such members, 47 s) or of plain ASCII
   (Python's character-by-character checks: 1,900 such members, seven minutes). Now a component past 255 bytes or a
   name past 1,024 bytes is refused before anything else is done with it (G310);
3. core metadata and entry points of megabytes that packaging's validation or configparser reads for tens of seconds
   (a requirement of a million specifiers or extras: a wheel and its sdist took the command line a minute; 290,000
   console scripts, read by the gate and by installer, whose launchers the gate maps). Now metadata or entry points
   far larger than the bytes the build backend writes are refused unparsed (G406, G408);
4. sdist members their group or others cannot read (a file of mode 600 or 640, a folder of 700): pip ignores the mode,
   but GNU tar and tarfile's unfiltered ``extractall`` run as root apply it, so the unpacked sources are root's alone,
   as round 18 found for a wheel's modes (G509).
"""

from __future__ import annotations

import random
import shutil
import stat
import struct
import subprocess
import tarfile
from pathlib import Path

import pytest
from gate_fixtures import (
    Built,
    RawMember,
    RawTarMember,
    raw_tar,
    sdist_members,
    wheel_members,
    with_true_record,
    write_sdist,
)
from test_gate_hostile import TABLE, built, gate_cli, judge, member, needing, refused_with, write_wheel

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the module's built wheel and sdist, shared with the hostile corpus

# -- 1. a version needed to extract that `unzip` skips the member for --------------------------------------------------


def needed_on(data: bytes, name: str, version: int) -> bytes:
    """The wheel ``data`` with ``name``'s "version needed to extract" set to ``version`` in both of its headers."""
    out = bytearray(data)
    at = struct.unpack_from("<L", out, len(out) - 6)[0]  # the central directory's offset, from the end record
    while out[at : at + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack_from("<3H", out, at + 28)
        if out[at + 46 : at + 46 + name_len] == name.encode():
            struct.pack_into("<H", out, at + 6, version)
            struct.pack_into("<H", out, struct.unpack_from("<L", out, at + 42)[0] + 4, version)
        at += 46 + name_len + extra_len + comment_len
    return bytes(out)


NEEDED = {  # attack -> (the member, the version needed written in its headers)
    "4.7 on a table (past Debian's unzip)": (TABLE.wheel_path, 47),
    "6.3 on a table (LZMA's, zipfile's last)": (TABLE.wheel_path, 63),
    "5.1 on the package's __init__.py (AES's)": ("neurobrix/__init__.py", 51),
    "4.5 on RECORD (zip64's, past an unzip built without it)": ("neurobrix-{v}.dist-info/RECORD", 45),
    "2.1 on a module (Deflate64's, the first past 2.0)": ("neurobrix/cli.py", 21),
}


@pytest.mark.parametrize("attack", list(NEEDED))
def test_a_version_needed_that_unzip_skips_the_member_for_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    """zipfile opens a member needing up to 6.3, so pip and installer install it, and uv reads no such field; Info-ZIP's
    `unzip` compares it with the version it was built for and skips the member ("need PK compat. v6.3 (can do v4.6)",
    exit 81): the table was missing from the tree `unzip` installed, and the gate passed the wheel."""
    name, version = NEEDED[attack]
    name = name.format(v=built.version)
    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(needed_on(built.wheel.read_bytes(), name, version))
    if version > 46 and shutil.which("unzip"):  # where Info-ZIP's unzip runs, shown skipping it
        run = subprocess.run(["unzip", "-o", "-q", str(wheel), "-d", str(tmp_path / "unzipped")], capture_output=True)
        assert run.returncode != 0 and not (tmp_path / "unzipped" / name).exists()
    finding = refused_with(judge(wheel), "G313", name, built.wheel.name)
    assert f"version needed to extract {version / 10:.1f}" in finding.message and "unzip" in finding.message


@pytest.mark.parametrize("version", [10, 20])
def test_the_versions_zip_writers_write_for_stored_and_deflate_pass(built: Built, tmp_path: Path, version: int) -> None:
    """Control: 1.0 (Info-ZIP's for a stored member) and 2.0 (zipfile's, hatchling's) are read by every tool."""
    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(needing(built, version))
    assert judge(wheel).passed


# -- 2. member names no file system holds, that took minutes to judge --------------------------------------------------

# Combining marks of two classes, the higher first: Unicode normalisation sorts them into canonical order with an
# insertion sort, so one 64 KiB name (32,000 marks) took seconds each time it was normalised.
MARKS = "\u0301" * 16_000 + "\u0334" * 15_990  # acute accent (class 230), then tilde overlay (class 1)


def planted_names(built: Built, names: list[str]) -> list[RawMember]:
    planted = [  # UTF-8 names, folders (a name ending in '/') as zip writers write them
        RawMember(n.encode(), b"", mode=stat.S_IFDIR | 0o755, flags=0x0800)
        if n.endswith("/")
        else RawMember(n.encode(), b"x", flags=0x0800)
        for n in names
    ]
    return with_true_record([*wheel_members(built.wheel), *planted])


LONG_NAMES = {  # attack -> the names planted
    "four file names of 64 KiB of combining marks": [f"neurobrix/{i}{MARKS}.py" for i in range(4)],
    "four folder names of 64 KiB of combining marks": [f"neurobrix/{i}{MARKS}/" for i in range(4)],
    "400 names of 64 KiB of ASCII in components of 200 bytes": [
        f"neurobrix/{i:03}" + "/a".join(["b" * 198] * 325) + ".py" for i in range(400)
    ],
    "400 names of 64 KiB of ASCII": [f"neurobrix/{i:03}{'a' * 65_000}.py" for i in range(400)],
}


@pytest.mark.parametrize("attack", list(LONG_NAMES))
def test_a_name_no_file_system_holds_is_refused_at_once(built: Built, tmp_path: Path, attack: str) -> None:
    """A zip name may be 65,535 bytes; no file system an installer writes to holds a component past 255 bytes or (macOS)
    a path past 1,024, so pip fails on such a member. The gate judged each name for every file system first, and
    answered after 47 s (four names of marks) or minutes (ASCII): the test's bound is 30 s. Now such a name is refused
    before anything else is done with it."""
    names = LONG_NAMES[attack]
    wheel = write_wheel(built, tmp_path, planted_names(built, names))
    finding = refused_with(judge(wheel), "G310", names[0], built.wheel.name)
    assert "no file system" in finding.message


def test_names_as_long_as_file_systems_hold_are_judged_as_before(built: Built, tmp_path: Path) -> None:
    """Control: a component of 255 bytes in a name of 1,024 is judged as any other name (here: not the project's)."""
    name = "neurobrix/" + "/".join(["a" * 255] * 3) + "/" + "b" * (1024 - 10 - 3 * 256 - 3) + ".py"
    assert len(name.encode()) == 1024
    report = judge(write_wheel(built, tmp_path, planted_names(built, [name])))
    assert {f.code for f in report.findings} == {"G107"}


# -- 3. core metadata and entry points of megabytes, read for tens of seconds ------------------------------------------


def fattened(metadata: bytes, field: bytes) -> bytes:
    """The metadata with ``field`` (a whole line) after its other fields."""
    head, body = metadata.split(b"\n\n", 1)
    return head + b"\n" + field + b"\n\n" + body


_DRAW = random.Random(19)
# attack -> a field of about 3.9 MB (within the 4 MiB every metadata file may have), its digits and letters drawn so
# that it deflates less than 100x (a repeated one compresses past G307's limit once the rest of METADATA, the
# README, is short, and is then refused before it is read: this round is about what the gate reads)
FAT_FIELDS = {
    "a requirement of a million specifiers": b"Requires-Dist: a>=1"
    + b"".join(b",>=" + bytes([_DRAW.randrange(49, 58)]) for _ in range(975_000)),
    "a requirement of a million extras": b"Requires-Dist: a["
    + b"".join(bytes([_DRAW.randrange(97, 123)]) + b"," for _ in range(1_950_000))
    + b"c]",
}


@pytest.mark.parametrize("attack", list(FAT_FIELDS))
def test_wheel_metadata_of_megabytes_is_refused_unparsed(built: Built, tmp_path: Path, attack: str) -> None:
    """packaging validates each specifier or extra of a requirement, about 20 s for 4 MB (twice that under the test's
    memory trace); the gate parsed the metadata before comparing it with the bytes the build backend prepares."""
    members = wheel_members(built.wheel)
    metadata = member(members, f"{built.dist_info}/METADATA")
    metadata.data = fattened(metadata.data, FAT_FIELDS[attack])
    wheel = write_wheel(built, tmp_path, with_true_record(members))
    finding = refused_with(judge(wheel), "G406", metadata.name.decode(), built.wheel.name)
    assert "not parsed" in finding.message


def test_sdist_pkg_info_of_megabytes_is_refused_unparsed(built: Built, tmp_path: Path) -> None:
    """The same for the sdist's PKG-INFO: with the wheel, `python -m gate check` took a minute."""
    members = sdist_members(built.sdist)
    pkg_info = next(m for m in members if m.name == f"{built.root}/PKG-INFO")
    pkg_info.data = fattened(pkg_info.data, FAT_FIELDS["a requirement of a million specifiers"])
    report = judge(write_sdist(tmp_path / built.sdist.name, raw_tar(members)))
    assert "not parsed" in refused_with(report, "G406", pkg_info.name, built.sdist.name).message


def test_the_command_line_answers_a_wheel_and_sdist_of_megabytes_of_metadata_at_once(
    built: Built, tmp_path: Path
) -> None:
    """`python -m gate check` on both, twine included (which reads the metadata too): a minute before; now the gate
    refuses both unparsed and does not wait on twine for them."""
    members = wheel_members(built.wheel)
    metadata = member(members, f"{built.dist_info}/METADATA")
    metadata.data = fattened(metadata.data, FAT_FIELDS["a requirement of a million specifiers"])
    wheel = write_wheel(built, tmp_path, with_true_record(members))
    sdist = sdist_members(built.sdist)
    pkg_info = next(m for m in sdist if m.name == f"{built.root}/PKG-INFO")
    pkg_info.data = fattened(pkg_info.data, FAT_FIELDS["a requirement of a million specifiers"])
    result = gate_cli("check", "--no-smoke", str(wheel), str(write_sdist(tmp_path / built.sdist.name, raw_tar(sdist))))
    assert result.returncode == 1 and result.stdout.count("not parsed") == 2, result.stdout


FAT_ENTRY_POINTS = {  # attack -> the group given 290,000 entries (4 MB, within the 4 MiB limit)
    "290,000 console scripts": "console_scripts",
    "290,000 window scripts": "gui_scripts",
    "290,000 plugins of a group of its own": "neurobrix.plugins",
}


@pytest.mark.parametrize("attack", list(FAT_ENTRY_POINTS))
def test_entry_points_of_megabytes_are_refused_unparsed(built: Built, tmp_path: Path, attack: str) -> None:
    """configparser reads each line in Python: the gate's own reading of entry_points.txt and installer's (the gate maps
    the launchers installer would write) took tens of seconds for 290,000 entries, and the gate then named each one."""
    group = FAT_ENTRY_POINTS[attack]
    members = wheel_members(built.wheel)
    entry_points = member(members, f"{built.dist_info}/entry_points.txt")
    entries = b"".join(b"e%06d = m:f\n" % i for i in range(290_000))
    if group == "console_scripts":
        entry_points.data += entries
    else:
        entry_points.data += b"\n[" + group.encode() + b"]\n" + entries
    report = judge(write_wheel(built, tmp_path, with_true_record(members)))
    assert "not parsed" in refused_with(report, "G408", entry_points.name.decode(), built.wheel.name).message


# -- 4. sdist members their group or others cannot read ----------------------------------------------------------------

CLOSED_MODES = {  # attack -> (the member, as the sdist names it less its top folder; its mode; a folder entry)
    "a table of mode 600": (f"tables/{TABLE.path}", 0o600, False),
    "pyproject.toml of mode 640": ("pyproject.toml", 0o640, False),
    "the package's __init__.py of mode 604": ("neurobrix/__init__.py", 0o604, False),
    "the package folder of mode 700": ("neurobrix/", 0o700, True),
    "the top folder of mode 750": ("", 0o750, True),
}


@pytest.mark.parametrize("attack", list(CLOSED_MODES))
def test_sdist_member_its_group_or_others_cannot_read_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    """pip writes an unpacked sdist's files with its umask, but GNU tar and tarfile's unfiltered extractall run as root
    apply the mode as written: sources and tables no other user can read, a folder no other user can enter (the wheel's
    modes are held so since round 18, G315). hatchling writes 644, 755 and folders 755."""
    rel, mode, folder = CLOSED_MODES[attack]
    name = f"{built.root}/{rel}" if rel else f"{built.root}/"
    members = sdist_members(built.sdist)
    if folder:
        members.insert(0, RawTarMember(name.rstrip("/"), b"", tarfile.DIRTYPE, mode=mode))
    else:
        next(m for m in members if m.name == name).mode = mode
    report = judge(write_sdist(tmp_path / built.sdist.name, raw_tar(members)))
    assert "group or others cannot" in refused_with(report, "G509", name, built.sdist.name).message


def test_sdist_folders_of_755_and_a_read_only_file_pass(built: Built, tmp_path: Path) -> None:
    """Control: folders every user can enter, and a file of 444 (readable by all, written by none), pass."""
    members = sdist_members(built.sdist)
    next(m for m in members if m.name == f"{built.root}/pyproject.toml").mode = 0o444
    folders = [RawTarMember(f"{built.root}{sub}", b"", tarfile.DIRTYPE, mode=0o755) for sub in ("", "/neurobrix")]
    assert judge(write_sdist(tmp_path / built.sdist.name, raw_tar([*folders, *members]))).passed
