"""The twentieth round against the release gate: wheels the gate passed, or answered only after minutes and gigabytes.

Three classes, each refused now (every case below failed on the gate before its fix):

1. a member's modification time said two ways: the MS-DOS time in its headers, which zipfile (pip, installer, twine)
   reports, and another in an extra record (an Info-ZIP extended timestamp or old Unix record, which `unzip` applies,
   an NTFS times record, which 7-Zip applies; a 5-byte extended timestamp flagged as an access time, which the zip
   crate reads as the modification time and `unzip` as the access time). A writer puts the same moment in both, in
   its time zone (Info-ZIP: the MS-DOS time in local time, the record in UTC) or clamped to 1980 (G312), as round 18
   found for a ustar time under a pax time;
2. extra fields of thousands of records: every record was judged and named, so a wheel of 3 MiB, 50 members each
   holding 16,383 empty records, took the gate 8 s and 470 MB (1.6 million findings, each named); at the 256 MiB an
   archive may have, minutes and tens of gigabytes. Now an extra field is refused at its first bad record (G313);
3. an Info-ZIP old Unix record (0x5855) shorter than its two times: `unzip` reads it only from 8 bytes, the zip crate
   and zipfile never, so up to 7 bytes a header were carried into the upload unjudged (G313), as a record longer than
   its format's was since round 12.
"""

from __future__ import annotations

import calendar
import os
import shutil
import struct
import subprocess
import zipfile
from pathlib import Path

import pytest
from gate_fixtures import Built, wheel_members
from test_gate_hostile import (
    ROOT,
    TABLE,
    UNZIP,
    built,
    codes,
    judge,
    member,
    ntfs,
    refused_with,
    timestamp,
    unzipped,
    write_wheel,
)

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the module's built wheel and sdist, shared with the hostile corpus

NTFS_EPOCH = 11_644_473_600  # seconds from 1601-01-01 (an NTFS time's start) to 1970-01-01


def dos_moment(wheel: Path, name: str) -> int:
    """The member's MS-DOS date and time as zipfile (pip) reports it, read as UTC seconds since 1970."""
    with zipfile.ZipFile(wheel) as z:
        return calendar.timegm((*z.getinfo(name).date_time, 0, 0, 0))


def old_unix(atime: int, mtime: int, *owner: int) -> bytes:
    """An Info-ZIP old Unix record (0x5855): access and modification times, then (local header) uid and gid."""
    return struct.pack(f"<HH2L{len(owner)}H", 0x5855, 8 + 2 * len(owner), atime, mtime, *owner)


def ntfs_time(seconds: float) -> int:
    return round((seconds + NTFS_EPOCH) * 10**7)


# -- 1. a modification time said two ways ------------------------------------------------------------------------------

# attack -> (the local header's extra field, the central header's, as writers lay them out) for a moment `t` (the
# member's MS-DOS time, read as UTC); what `unzip` applies: (mtime, atime) or None where it reads no such record
TIMES = {
    "an extended timestamp a day and a second after the MS-DOS time": (
        lambda t: timestamp(3, t + 86_401, t),
        lambda t: timestamp(3, t + 86_401),
        lambda t: (t + 86_401, t),
    ),
    "an extended timestamp 15 hours before it (no time zone is)": (
        lambda t: timestamp(1, t - 15 * 3600),
        lambda t: timestamp(1, t - 15 * 3600),
        lambda t: (t - 15 * 3600, t - 15 * 3600),
    ),
    "an extended timestamp an hour and 7 seconds after it (no time zone is)": (
        lambda t: timestamp(1, t + 3607),
        lambda t: timestamp(1, t + 3607),
        lambda t: (t + 3607, t + 3607),
    ),
    "an extended timestamp flagged as an access time, 5 bytes (the zip crate reads a modification time)": (
        lambda t: timestamp(2, t + 30 * 86_400),
        lambda t: timestamp(2, t + 30 * 86_400),
        lambda t: (t, t + 30 * 86_400),  # unzip: the MS-DOS time, and the record's as the access time
    ),
    "an old Unix record's modification time": (
        lambda t: old_unix(t, t + 10 * 86_400, 0, 0),
        lambda t: old_unix(t, t + 10 * 86_400),
        lambda t: (t + 10 * 86_400, t),
    ),
    "an NTFS record's modification time, a year off": (
        lambda t: ntfs(ntfs_time(t - 365 * 86_400), ntfs_time(t), ntfs_time(t)),
        lambda t: ntfs(ntfs_time(t - 365 * 86_400), ntfs_time(t), ntfs_time(t)),
        None,  # `unzip` on Unix reads no NTFS record; 7-Zip applies it
    ),
}


@pytest.mark.parametrize("attack", list(TIMES))
def test_an_extra_records_time_other_than_the_ms_dos_time_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    """zipfile (pip, installer, twine) reports a member's MS-DOS time; `unzip` applies the modification and access
    times of an Info-ZIP extended timestamp (or, without one, of an old Unix record: process.c, ef_scan_for_izux), 7-Zip
    those of an NTFS record (ZipItem.cpp, GetNtfsTime), the zip crate reads a 5-byte extended timestamp as the
    modification time whatever its flags (extended_timestamp.rs). The gate compared the two headers' records with each
    other, never with the MS-DOS time: the table installed by `unzip` with another time than zipfile reports."""
    local, central, applied = TIMES[attack]
    members = wheel_members(built.wheel)
    table = member(members, TABLE.wheel_path)
    wheel = write_wheel(built, tmp_path / "plain", members)
    moment = dos_moment(wheel, TABLE.wheel_path)
    table.local_extra, table.extra = local(moment), central(moment)
    wheel = write_wheel(built, tmp_path / "dist", members)
    with zipfile.ZipFile(wheel) as z, zipfile.ZipFile(built.wheel) as original:  # what pip reads: the same table
        assert z.read(TABLE.wheel_path) == original.read(TABLE.wheel_path)
    assert dos_moment(wheel, TABLE.wheel_path) == moment  # of the same MS-DOS time
    if UNZIP and applied is not None:
        installed = (unzipped(wheel, tmp_path / "unzipped") / TABLE.wheel_path).stat()
        assert (installed.st_mtime, installed.st_atime) == applied(moment) != (moment, moment)
    report = judge(wheel)
    assert "MS-DOS time" in refused_with(report, "G312", TABLE.wheel_path, built.wheel.name).message
    assert codes(report) == {"G312"}


def rezipped(built: Built, folder: Path, tz: str, times: dict[str, int]) -> Path:
    """The project's wheel written again by Info-ZIP's `zip` run in the time zone ``tz`` (a POSIX TZ string), each
    member's file given the modification time ``times`` names (the others: now)."""
    source = folder / "src"
    with zipfile.ZipFile(built.wheel) as z:
        names = z.namelist()
        for info in z.infolist():
            path = source / info.filename
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(z.read(info))
            path.chmod(info.external_attr >> 16 & 0o777 or 0o644)
            if info.filename in times:
                os.utime(path, (times[info.filename], times[info.filename]))
    wheel = folder / "dist" / built.wheel.name
    wheel.parent.mkdir()
    subprocess.run(["zip", "-q", "-D", str(wheel), *names], cwd=source, check=True, env={**os.environ, "TZ": tz})
    return wheel


@pytest.mark.skipif(shutil.which("zip") is None, reason="needs Info-ZIP's zip")
@pytest.mark.parametrize(
    "tz",
    ["<-0330>3:30", "<+0545>-5:45", "<+14>-14", "<-12>12"],
    ids=["UTC-3:30", "UTC+5:45", "UTC+14", "UTC-12"],
)
def test_the_times_info_zip_writes_in_any_time_zone_pass(built: Built, tmp_path: Path, tz: str) -> None:
    """Control: Info-ZIP writes the MS-DOS time in local time (odd seconds rounded up) and the extended timestamp in
    UTC, and a file older than 1980 with the MS-DOS time clamped to 1980-01-01 00:00:00: each one moment, as every
    reader reads it (an odd second on one table, a 1975 time on another)."""
    times = {TABLE.wheel_path: 1_700_000_001, "neurobrix/__init__.py": 170_000_000}
    wheel = rezipped(built, tmp_path, tz, times)
    with zipfile.ZipFile(wheel) as z:
        assert z.getinfo("neurobrix/__init__.py").date_time == (1980, 1, 1, 0, 0, 0)
    report = judge(wheel)
    assert codes(report) == (set() if ROOT else {"G316"})  # run as another user, its owner record names that user


def test_records_that_say_the_ms_dos_time_pass(built: Built, tmp_path: Path) -> None:
    """Control: an NTFS record (with its 100-ns fraction) and an old Unix record whose modification time is the MS-DOS
    time as UTC, an extended timestamp of the same moment in UTC+5:45, and one with no time at all."""
    members = wheel_members(built.wheel)
    moment = dos_moment(write_wheel(built, tmp_path / "plain", members), TABLE.wheel_path)
    member(members, TABLE.wheel_path).extra = ntfs(ntfs_time(moment + 0.9), ntfs_time(moment), ntfs_time(moment))
    cli = member(members, "neurobrix/cli.py")
    cli.local_extra, cli.extra = old_unix(moment + 5, moment, 0, 0), old_unix(moment + 5, moment)
    member(members, "neurobrix/__init__.py").extra = timestamp(1, moment - (5 * 3600 + 45 * 60))
    member(members, "neurobrix/__main__.py").extra = timestamp(0)
    assert judge(write_wheel(built, tmp_path / "dist", members)).findings == []


# -- 2. extra fields of thousands of records ---------------------------------------------------------------------------

FLOODS = {  # attack -> (the header, the record repeated 16,383 times: 64 KiB, the most an extra field holds)
    "empty records of an unknown id in every central header": ("central", struct.pack("<HH", 0xCAFE, 0)),
    "empty extended timestamps in every central header": ("central", struct.pack("<HH", 0x5455, 0)),
    "empty extended timestamps in every local header": ("local", struct.pack("<HH", 0x5455, 0)),
}


@pytest.mark.parametrize("attack", list(FLOODS))
def test_an_extra_field_of_thousands_of_records_is_refused_at_once(built: Built, tmp_path: Path, attack: str) -> None:
    """Each record was judged and named: 16,383 records a member, two findings each for a repeated one, in every one of
    the wheel's 77 members (5 MiB), took the gate over a minute and a gigabyte under the test's memory trace (the
    bound is 30 s and 1 GiB); within the 256 MiB an archive may have, minutes and tens of gigabytes. A well-formed
    field holds each allowed record once, four at most: one refused record refuses it."""
    where, record = FLOODS[attack]
    members = wheel_members(built.wheel)
    for m in members:
        if where == "central":
            m.extra, m.local_extra = record * 16_383, b""
        else:
            m.local_extra = record * 16_383
    report = judge(write_wheel(built, tmp_path, members))
    first = members[0].name.decode()  # (20 findings of a check are shown, then one counts the rest)
    finding = refused_with(report, "G313" if where == "central" else "G312", first, built.wheel.name)
    assert len(finding.message) < 1000  # the first bad record, not thousands (4.8 MB of messages a member)


# -- 3. an old Unix record shorter than its two times ------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 4, 7])
def test_an_old_unix_record_shorter_than_its_times_is_refused(built: Built, tmp_path: Path, size: int) -> None:
    """`unzip` reads an old Unix record (0x5855) only from 8 bytes (EB_UX_MINLEN, its two times), the zip crate never
    parses it and zipfile skips every record: a shorter one (up to 7 bytes in each header of every member) was taken
    as within its format's 12, bytes carried into the upload unjudged."""
    members = wheel_members(built.wheel)
    table = member(members, TABLE.wheel_path)
    table.extra = struct.pack("<HH", 0x5855, size) + b"\xa5" * size
    wheel = write_wheel(built, tmp_path / "dist", members)
    if UNZIP:  # `unzip` ignores it: the table has its MS-DOS time
        installed = (unzipped(wheel, tmp_path / "unzipped") / TABLE.wheel_path).stat()
        assert installed.st_mtime == dos_moment(wheel, TABLE.wheel_path)
    report = judge(wheel)
    assert "shorter than" in refused_with(report, "G313", TABLE.wheel_path, built.wheel.name).message
    assert codes(report) == {"G313", "G312"}  # the central header's record, then the local one's (the same)


def test_an_old_unix_record_as_info_zip_writes_it_passes(built: Built, tmp_path: Path) -> None:
    """Control: its two times in the central header, with root's owner in the local one (zip -X leaves it out)."""
    members = wheel_members(built.wheel)
    moment = dos_moment(write_wheel(built, tmp_path / "plain", members), TABLE.wheel_path)
    table = member(members, TABLE.wheel_path)
    table.local_extra, table.extra = old_unix(moment, moment, 0, 0), old_unix(moment, moment)
    assert judge(write_wheel(built, tmp_path / "dist", members)).findings == []
