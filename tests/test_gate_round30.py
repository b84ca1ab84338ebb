"""The thirtieth round against the release gate: readings the earlier rounds did not name, each held against the tool.

Each class was built as an attacker would (the project's own wheel or sdist, changed one way), read by the tool that
installs or unpacks it (pip 23.2's own ``install_wheel``, ``installer``, zipfile, tarfile, run here in-process) to show
what lands, and judged by the gate. No dist the gate passes was found that one of them reads otherwise; each class is
held here by the check that refuses it, so that the test fails if the gate starts passing it:

1. a wheel laid out as a self-extracting archive: a shell stub, or a whole other wheel, before the archive and the
   directory's offsets left as the archive wrote them. zipfile (pip, installer, twine) finds the end record at the end,
   sees the directory start later than it says and shifts every offset by the difference (``concat``), so it installs
   the archive behind the stub; a reader that takes the offsets as written reads the wheel before it. And an end record
   counting one entry fewer than the directory holds, which zipfile never reads (it reads the directory by its size).
   Refused whole (G311, G312);
2. members that take the place of the package's own files or of its launcher through the ``.data`` schemes, or that run
   at interpreter start: pip installs members in archive order and writes over a file already there, so
   ``.data/purelib/neurobrix/__init__.py`` after the package's own is the ``__init__.py`` pip leaves; it skips a
   ``.data/scripts/neurobrix`` or ``neurobrix-script.py`` as the wrapper of the ``neurobrix`` entry point, while
   ``installer`` refuses the wheel (a file already there); ``usercustomize.py`` and ``.pth`` files land in
   site-packages; an extension module ``__init__.abi3.so`` imports before ``__init__.py`` (G107);
3. ``.dist-info`` files an installer writes itself: pip writes ``direct_url.json`` only for a direct install, so a
   wheel's own copy survives an install by name (from an index or ``--find-links``) and tells ``pip freeze`` and
   importlib.metadata that the project was installed editable from a developer's folder; ``REQUESTED`` likewise (G107);
4. core metadata that would pull other code into an install: an extra of the project's own that requires another
   project, a requirement by direct URL (G406);
5. sdist numbers in base-256 (uid, size, time), which tarfile reads as the values an octal field would hold (G313);
6. sdist members of a type tarfile does not know (GNU's dump directory ``D``, Solaris' ``A``, star's ``I``, ``8``): pip
   unpacks each as a regular file, GNU tar makes a folder of a ``D`` member (G313).

Looked at and found read alike, so not built (see ROUND_gate30.md): the header readers of tarfile and zipfile and
``zipfile.is_zipfile`` in Python 3.10, 3.12 and 3.13 (the versions pip may run on for this project) against 3.11's,
which the gate runs: the same code but for pax record framing, stricter in 3.13.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import stat
import struct
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
from gate_fixtures import (
    Built,
    RawMember,
    RawTarMember,
    install_wheel,
    raw_tar,
    raw_zip,
    sdist_members,
    wheel_members,
    with_true_record,
    write_sdist,
)
from packaging.metadata import Metadata
from pip._internal.models.scheme import Scheme
from pip._internal.operations.install.wheel import install_wheel as pip_install_wheel
from pip._internal.utils.unpacking import unpack_file
from test_gate_hostile import TABLE, altered_table, built, judge, refused_with, write_wheel

from gate.checker import REPO

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the module's built wheel and sdist, shared with the hostile corpus


def pip_install(wheel: Path, root: Path) -> Path:
    """``wheel`` installed by pip 23.2's own ``install_wheel`` (what ``pip install`` runs once it has the file, here
    with no direct URL: an install by name, from an index or ``--find-links``) into ``root``; returns ``root``."""
    scheme = Scheme(
        platlib=str(root / "site"),
        purelib=str(root / "site"),
        headers=str(root / "include"),
        scripts=str(root / "bin"),
        data=str(root),
    )
    pip_install_wheel("neurobrix", str(wheel), scheme, "neurobrix", pycompile=False, warn_script_location=False)
    return root


# -- 1. a wheel laid out as a self-extracting archive ------------------------------------------------------------------

STUB = b'#!/bin/sh\nexec python3 -m zipfile -e "$0" "${1:-.}"\n'  # `sh neurobrix-….whl` runs it


def _stored(members: list[RawMember]) -> list[RawMember]:
    return [RawMember(m.name, m.data, method=zipfile.ZIP_STORED) for m in members]


def _other_wheel_before(built: Built) -> tuple[bytes, int]:
    """A wheel holding an altered table (RECORD true to it) before the project's, both stored so that their members lie
    at the same offsets in each, and the project's offsets left as its own start makes them; and that start."""
    table = TABLE.wheel_path.encode()
    ours = _stored(wheel_members(built.wheel))
    theirs = with_true_record([RawMember(m.name, altered_table(built)) if m.name == table else m for m in ours])
    before = raw_zip(_stored(theirs))
    return before + raw_zip(ours), len(before)


def _count_one_short(built: Built) -> bytes:
    data = bytearray(built.wheel.read_bytes())
    end = len(data) - 22
    entries = struct.unpack_from("<H", data, end + 10)[0]
    struct.pack_into("<HH", data, end + 8, entries - 1, entries - 1)
    return bytes(data)


def _read_as_written(data: bytes, name: str) -> bytes:
    """A stored member read at the offsets the end record and the directory give, taken from the file's first byte
    (no ``concat``): how a reader that trusts them reads the archive."""
    _, _, _, _, _, _, cd_offset, _ = struct.unpack_from("<4s4H2LH", data, len(data) - 22)
    pos = cd_offset
    while data[pos : pos + 4] == b"PK\x01\x02":
        size, name_len, extra_len, comment_len = struct.unpack_from("<L3H", data, pos + 24)
        offset = struct.unpack_from("<L", data, pos + 42)[0]
        if data[pos + 46 : pos + 46 + name_len] == name.encode():
            local_name, local_extra = struct.unpack_from("<2H", data, offset + 26)
            start = offset + 30 + local_name + local_extra
            return data[start : start + size]
        pos += 46 + name_len + extra_len + comment_len
    raise KeyError(name)


SELF_EXTRACTING = {  # attack -> (the archive and the bytes before the project's wheel, the code)
    "a shell stub before the wheel, offsets as the wheel wrote them": (
        lambda b: (STUB + b.wheel.read_bytes(), len(STUB)),
        "G311",
    ),
    "another wheel before the wheel, offsets as the wheel wrote them": (_other_wheel_before, "G311"),
    "an end record counting one entry fewer than the directory holds": (lambda b: (_count_one_short(b), 0), "G312"),
}


@pytest.mark.parametrize("attack", list(SELF_EXTRACTING))
def test_a_wheel_zipfile_reads_past_bytes_before_it_or_a_wrong_count_is_refused(
    built: Built, tmp_path: Path, attack: str
) -> None:
    make, code = SELF_EXTRACTING[attack]
    data, before = make(built)
    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(data)
    with zipfile.ZipFile(wheel) as z, zipfile.ZipFile(built.wheel) as plain:  # zipfile: the project's wheel, whole
        assert z.namelist() == plain.namelist() and z.read(TABLE.wheel_path) == plain.read(TABLE.wheel_path)
        assert z.filelist[0].header_offset == before  # every offset shifted by the bytes before the directory
    site = install_wheel(wheel, tmp_path / "installer")  # and installer installs it, the bytes before it unread
    with zipfile.ZipFile(built.wheel) as plain:
        assert (site / TABLE.wheel_path).read_bytes() == plain.read(TABLE.wheel_path)
    if before and "another wheel" in attack:  # offsets as written: the wheel before it, altered table and all
        assert _read_as_written(data, TABLE.wheel_path) == altered_table(built)
    report = judge(wheel)
    refused_with(report, code, None, built.wheel.name)
    assert {f.code for f in report.findings} <= {"G311", "G312"}  # read more than one way: nothing inside judged


# -- 2. members that replace the package's files or its launcher, or run at interpreter start --------------------------

V = "neurobrix-{v}.data"
REPLACING = {  # attack -> the member planted ({v}: the version)
    "the package's __init__.py through .data/purelib (pip writes it over the package's own)": (
        f"{V}/purelib/neurobrix/__init__.py"
    ),
    "a module of the package through .data/platlib": f"{V}/platlib/neurobrix/cli.py",
    "the neurobrix launcher through .data/scripts (pip skips it, installer refuses)": f"{V}/scripts/neurobrix",
    "the launcher's Windows wrapper through .data/scripts": f"{V}/scripts/neurobrix-script.py",
    "usercustomize through .data/purelib": f"{V}/purelib/usercustomize.py",
    "a .pth through .data/platlib": f"{V}/platlib/neurobrix-init.pth",
    "sitecustomize through .data/data into site-packages": f"{V}/data/lib/python3.11/site-packages/sitecustomize.py",
    "usercustomize at the root": "usercustomize.py",
    "an extension module imported before the package's __init__.py": "neurobrix/__init__.abi3.so",
}
PLANTED = b"import os\nos.environ['NEUROBRIX_PLANTED'] = '1'\n"


@pytest.mark.parametrize("attack", list(REPLACING))
def test_a_member_that_replaces_the_package_or_its_launcher_is_refused(
    built: Built, tmp_path: Path, attack: str
) -> None:
    name = REPLACING[attack].format(v=built.version)
    planted = RawMember(name.encode(), PLANTED, mode=stat.S_IFREG | (0o755 if "/scripts/" in name else 0o644))
    wheel = write_wheel(built, tmp_path, with_true_record([*wheel_members(built.wheel), planted]))
    finding = refused_with(judge(wheel), "G107", name, built.wheel.name)
    assert "not a file of this project" in finding.message


def test_pip_and_installer_install_such_members_otherwise(built: Built, tmp_path: Path) -> None:
    """The evidence for the class above, one wheel holding four of its members after the project's own: pip leaves the
    planted __init__.py where the package's was, keeps its own launcher (the planted one is "the entry point's
    wrapper" to it) and writes usercustomize.py into site-packages; installer refuses the wheel. Two installers, two
    installs, neither the project's; the gate names each member."""
    v = built.version
    names = [
        f"{V}/purelib/neurobrix/__init__.py".format(v=v),
        f"{V}/scripts/neurobrix".format(v=v),
        f"{V}/scripts/neurobrix-script.py".format(v=v),
        f"{V}/purelib/usercustomize.py".format(v=v),
    ]
    planted = [RawMember(n.encode(), PLANTED, mode=stat.S_IFREG | 0o755) for n in names]
    wheel = write_wheel(built, tmp_path, with_true_record([*wheel_members(built.wheel), *planted]))
    root = pip_install(wheel, tmp_path / "pip")
    assert (root / "site/neurobrix/__init__.py").read_bytes() == PLANTED
    assert b"from neurobrix.cli import main" in (root / "bin/neurobrix").read_bytes()  # pip's launcher, not ours
    assert not (root / "bin/neurobrix-script.py").exists()
    assert (root / "site/usercustomize.py").read_bytes() == PLANTED
    with pytest.raises(FileExistsError):
        install_wheel(wheel, tmp_path / "installer")
    report = judge(wheel)
    assert {f.path for f in report.findings if f.code == "G107"} == set(names)


# -- 3. .dist-info files an installer writes itself --------------------------------------------------------------------

EDITABLE = b'{"url": "file:///home/dev/neurobrix", "dir_info": {"editable": true}}'
WRITTEN_BY_INSTALLERS = {"direct_url.json": EDITABLE, "REQUESTED": b""}


@pytest.mark.parametrize("file", list(WRITTEN_BY_INSTALLERS))
def test_a_dist_info_file_an_installer_writes_is_refused(built: Built, tmp_path: Path, file: str) -> None:
    """pip writes direct_url.json for a direct install (a path or URL) only: installed by name, the wheel's own copy is
    what stays, and importlib.metadata (pip freeze) reads the project as installed editable from a developer's
    folder."""
    name = f"{built.dist_info}/{file}"
    planted = RawMember(name.encode(), WRITTEN_BY_INSTALLERS[file])
    wheel = write_wheel(built, tmp_path, with_true_record([*wheel_members(built.wheel), planted]))
    if file == "direct_url.json":
        root = pip_install(wheel, tmp_path / "pip")
        found = next(importlib.metadata.distributions(path=[str(root / "site")]))
        assert found.read_text("direct_url.json") == EDITABLE.decode()
    refused_with(judge(wheel), "G107", name, built.wheel.name)


# -- 4. core metadata that would pull other code into an install -------------------------------------------------------

PULLING = {  # attack -> the lines added after the last Requires-Dist
    "an extra of the project's own requiring another project": (
        b"Provides-Extra: gpu\nRequires-Dist: neurobrix-kernels; extra == 'gpu'\n"
    ),
    "a requirement by direct URL": b"Requires-Dist: triton @ https://example.invalid/triton-3.9.0-py3-none-any.whl\n",
}


@pytest.mark.parametrize("attack", list(PULLING))
def test_metadata_that_pulls_in_another_project_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    members = wheel_members(built.wheel)
    metadata = next(m for m in members if m.name == f"{built.dist_info}/METADATA".encode())
    head, _, body = metadata.data.partition(b"\n\n")
    text = head + b"\n" + PULLING[attack] + b"\n" + body
    assert len(Metadata.from_email(text, validate=False).requires_dist or []) > len(
        Metadata.from_email(metadata.data, validate=False).requires_dist or []
    )  # packaging (pip's reader) reads one requirement more
    wheel = write_wheel(
        built, tmp_path, with_true_record([RawMember(m.name, text) if m is metadata else m for m in members])
    )
    refused_with(judge(wheel), "G406", f"{built.dist_info}/METADATA", built.wheel.name)


# -- 5. sdist numbers in base-256 -------------------------------------------------------------------------------------

BASE_256 = {  # field -> (offset, width) in the ustar header
    "uid": (108, 8),
    "size": (124, 12),
    "mtime": (136, 12),
}


@pytest.mark.parametrize("field", list(BASE_256))
def test_an_sdist_number_in_base_256_is_refused(built: Built, tmp_path: Path, field: str) -> None:
    """GNU tar's base-256 form (a first byte of 0x80, then the number big-endian), which tarfile reads as the value the
    octal field would hold: pyproject.toml's header written so, the member the same to pip."""
    members = sdist_members(built.sdist)
    target = f"{built.root}/pyproject.toml"
    at, width = BASE_256[field]
    value = {"uid": 0, "size": len(next(m for m in members if m.name == target).data), "mtime": 0}[field]
    patch = {at: b"\x80" + value.to_bytes(width - 1, "big")}
    changed = [
        RawTarMember(m.name, m.data, m.type, mode=m.mode, header=patch if m.name == target else None) for m in members
    ]
    (tmp_path / "s").mkdir()
    sdist = write_sdist(tmp_path / "s" / built.sdist.name, raw_tar(changed))
    with tarfile.open(sdist) as tar, tarfile.open(built.sdist) as plain:
        ours, theirs = tar.getmember(target), plain.getmember(target)
        assert (ours.uid, ours.size) == (theirs.uid, theirs.size)
        assert tar.extractfile(ours).read() == plain.extractfile(theirs).read()  # type: ignore[union-attr]
    finding = refused_with(judge(sdist), "G313", target, built.sdist.name)
    assert "base-256" in finding.message


# -- 6. sdist member types tarfile unpacks as regular files -----------------------------------------------------------

OTHER_TYPES = {  # type flag -> what GNU tar makes of it
    b"D": "a folder (GNU's dump directory: its data lists the folder's entries)",
    b"A": "a file, with a warning (a Solaris ACL entry)",
    b"I": "a file, with a warning (star's inode metadata)",
    b"8": "a file, with a warning (no type POSIX names)",
}


@pytest.mark.parametrize("flag", list(OTHER_TYPES), ids=[f.decode() for f in OTHER_TYPES])
def test_an_sdist_member_of_a_type_pip_unpacks_as_a_file_is_refused(built: Built, tmp_path: Path, flag: bytes) -> None:
    """tarfile hands pip a file object for any type it does not know (``extractfile``: ``type not in SUPPORTED_TYPES``),
    so pip's unpacking writes pyproject.toml with its bytes whatever the flag; GNU tar makes a folder of a ``D`` member
    (and of pyproject.toml no file at all) and warns on the others."""
    target = f"{built.root}/pyproject.toml"
    members = [
        RawTarMember(m.name, m.data, flag if m.name == target else m.type, mode=m.mode)
        for m in sdist_members(built.sdist)
    ]
    (tmp_path / "s").mkdir()
    sdist = write_sdist(tmp_path / "s" / built.sdist.name, raw_tar(members))
    unpack_file(str(sdist), str(tmp_path / "pip"))  # pip 23.2's own unpacking
    assert (tmp_path / "pip/pyproject.toml").read_bytes() == (REPO / "pyproject.toml").read_bytes()
    if flag == b"D" and shutil.which("tar"):
        (tmp_path / "gnu").mkdir()
        subprocess.run(["tar", "-xzf", str(sdist), "-C", str(tmp_path / "gnu")], check=True, capture_output=True)
        assert (tmp_path / "gnu" / target).is_dir()
    finding = refused_with(judge(sdist), "G313", target, built.sdist.name)
    assert f"member type {flag!r}" in finding.message
