"""The fifty-eighth round against the release gate: the wheels and sdists it passes, installed by four installers.

Rounds 12 to 57 recorded installer behaviour as pip 23.2 (this machine's), ``installer`` and uv read it, and left open
that no other pip or uv version was run. This round built a corpus of hostile dists by attack class
(tests/gate58_driver.py) from this project's own wheel and sdist (RECORD, zip structure, member names, ``.data``
folders, entry_points.txt, WHEEL and METADATA, zip header numbers, sdist tar types, names, contents, modes and gzip
framing), judged each with the gate, and installed every one of them, passed or refused, with pip 23.2, pip 26.3, uv
0.13.9 and ``installer`` 1.1.0 (the sdists with the three front ends, each building through hatchling 1.33.0 from a
local folder), comparing each installed tree with that tool's install of the wheel as built: every file, folder, link
and launcher, its mode bits and bytes (a launcher by the module and function it runs, its shebang aside), the installed
RECORD as the set of files it names. The commands, one fresh folder or virtual environment a case:

    python -I -m pip install --no-deps --no-index --no-compile --no-cache-dir --ignore-installed --prefix P WHEEL
    PIP26/bin/python -I -m pip install  (the same options; PIP26 a venv of this interpreter holding pip 26.3)
    uv venv V && uv pip install --python V/bin/python --no-deps --offline --no-cache --no-compile WHEEL
    installer.install(WheelFile.open(WHEEL), SchemeDictionaryDestination(<prefix's scheme>), {})
    (sdists: the same front ends with ``--find-links`` a folder holding hatchling 1.33.0 and its dependencies)

Every dist the gate passed installed with all four exactly as the wheel as built does (no false pass, nothing in
``gate/`` changed); every dist a tool installs otherwise is refused. The cases below pin, from those runs:

- passes the four install alike, beyond round 53's (stored members, the UTF-8 flag, a sha512 RECORD, folder entries,
  mode 444): members in reverse order with RECORD's rows following them, RECORD first, every entry made on MS-DOS
  with its Unix mode, "version made by" 4.5 or 6.3, "version needed" 1.0, deflate at level 9 or with a sync flush,
  deflate speed hints on a deflated member, an extended timestamp (central: the modification time; local: it and
  the access time), an Info-ZIP owner record naming root, the MS-DOS archive bit, the text bit, a folder entry for the
  ``.dist-info``, a sha384 RECORD; and sdists repacked in GNU format, in reverse order with folder entries, every file
  read-only (444) and a folder of mode 555, a gzip header naming the tar. Each is judged here, and each wheel
  installed by ``installer`` (the one tool cheap enough in-process) as the wheel as built;
- refusals where the installers now disagree with one another (``INSTALLED`` below, each tool's reading as shown by
  the commands above): the gate's refusal is what keeps each off an index.

Documented installer differences this round found against earlier rounds' text (the gate refuses each already):
pip 26.3 writes a console script named ``sub/x`` as ``bin/sub/x``, as ``installer`` does, where pip 23.2 wrote
``bin/x`` (uv 0.13.9 fails), and refuses ``../x`` (pip 23.2 wrote ``bin/x``); uv 0.13.9 refuses a member whose
"version needed to extract" is above 6.3, as zipfile does (an earlier uv installed it); uv 0.13.9 splits
METADATA at a lone CR, as Python's email parser does (uv up to 0.12 did not): a ``Requires-Dist`` behind one is a
requirement to ``uv pip show`` and ``pip show`` alike; pip 26.3 and uv install a ``.data/headers`` file under
``include/site/python3.11/<name>/``, pip 23.2 under ``include/python3.11/<name>/`` (gate round 59: that depends on
the interpreter, not the pip version; pip 23.2.1 run from a virtual environment writes ``include/site/...`` too).

Each case was shown failing with one place of ``gate/`` changed and passing without: RECORD's rows compared with the
members sorted, or with RECORD's position in the zip; the MS-DOS host dropped from ``ZIP_HOSTS``; "version made by"
bounded at 4.5, "version needed" required to be 2.0; ``PADDING_SLACK`` made 0, or a stream shorter than zlib's level
1 by 64 bytes refused; the speed hints dropped from ``_FLAGS_ALLOWED``; the extended timestamp's and the owner
record's sizes cut; the archive bit, the text bit, sha384 or GNU's tar magic no longer allowed; a folder entry
allowed only under the package; any sdist folder entry refused; an owner needing write permission; any gzip file name
refused; for the refusals, members under a ``.data`` folder or folder entries under the package allowed, G301 and
G302 not reported, a member of another type read as a file, entry_points.txt not judged, an empty RECORD line skipped.
"""

from __future__ import annotations

import stat
import struct
import tarfile
import time
import zipfile
import zlib
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
from test_gate_hostile import built, judge, refused_with

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the hostile corpus's built wheel and sdist

CLI = b"neurobrix/cli.py"
TOOL_OWN = {"INSTALLER", "REQUESTED", "direct_url.json"}


def _member(members: list[RawMember], name: bytes) -> RawMember:
    return next(m for m in members if m.name == name)


def _record(members: list[RawMember]) -> RawMember:
    return next(m for m in members if m.name.endswith(b".dist-info/RECORD"))


def _patched(data: bytes, signature: bytes, offset: int, fmt: str, value: int) -> bytes:
    """Every header of ``signature`` in ``data`` with ``value`` written at ``offset``."""
    out = bytearray(data)
    at = out.find(signature)
    while at >= 0:
        struct.pack_into(fmt, out, at + offset, value)
        at = out.find(signature, at + 4)
    return bytes(out)


def _deflated(level: int, sync: bool = False):  # type: ignore[no-untyped-def]
    def apply(members: list[RawMember]) -> list[RawMember]:
        for m in members:
            packer = zlib.compressobj(level, zlib.DEFLATED, -15)
            body = packer.compress(m.data)
            m.compressed = body + (packer.flush(zlib.Z_SYNC_FLUSH) if sync else b"") + packer.flush()
        return members

    return apply


def _reversed(members: list[RawMember]) -> list[RawMember]:
    record = _record(members)
    return with_true_record([m for m in members if m is not record][::-1] + [record])


def _record_first(members: list[RawMember]) -> list[RawMember]:
    record = _record(members)
    return [record] + [m for m in members if m is not record]


def _hinted(members: list[RawMember]) -> list[RawMember]:
    _member(members, CLI).flags |= 0x2 | 0x4  # deflate's speed hints, on a deflated member
    return members


def _extended_time(members: list[RawMember]) -> list[RawMember]:
    moment = int(time.mktime((2026, 1, 1, 0, 0, 0, 0, 0, -1)))  # raw_zip's MS-DOS time, in this machine's zone
    for m in members:
        m.extra = struct.pack("<HHBI", 0x5455, 5, 3, moment)
        m.local_extra = struct.pack("<HHBII", 0x5455, 9, 3, moment, moment)
    return members


def _root_owner(members: list[RawMember]) -> list[RawMember]:
    for m in members:
        m.extra = struct.pack("<HHBBIBI", 0x7875, 11, 1, 4, 0, 4, 0)
    return members


def _dist_info_folder(members: list[RawMember]) -> list[RawMember]:
    folder = _record(members).name.rsplit(b"/", 1)[0] + b"/"
    return [RawMember(folder, b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755)] + members


def _sha384(members: list[RawMember]) -> list[RawMember]:
    import base64
    import hashlib

    record = _record(members)
    rows = []
    for line in record.data.decode().splitlines():
        path, hashed, size = line.split(",")
        if hashed:
            data = _member(members, path.encode()).data
            hashed = "sha384=" + base64.urlsafe_b64encode(hashlib.sha384(data).digest()).rstrip(b"=").decode()
        rows.append(f"{path},{hashed},{size}")
    record.data = ("\n".join(rows) + "\n").encode()
    return members


# name -> (what is done to the members, then to the written bytes): each passed the gate and installed with pip 23.2,
# pip 26.3, uv 0.13.9 and installer exactly as the wheel as built
ALIKE = {
    "members reversed, RECORD's rows following": (_reversed, None),
    "RECORD the first member": (_record_first, None),
    "every entry made on MS-DOS": (None, lambda d: _patched(d, b"PK\x01\x02", 4, "<H", 0x0014)),
    "version made by Unix 6.3": (None, lambda d: _patched(d, b"PK\x01\x02", 4, "<H", 0x033F)),
    "version needed 1.0": (
        None,
        lambda d: _patched(_patched(d, b"PK\x03\x04", 4, "<H", 10), b"PK\x01\x02", 6, "<H", 10),
    ),
    "deflate level 9": (_deflated(9), None),
    "deflate with a sync flush": (_deflated(6, sync=True), None),
    "deflate speed hints": (_hinted, None),
    "extended timestamp": (_extended_time, None),
    "owner record naming root": (_root_owner, None),
    "MS-DOS archive bit": (None, lambda d: _patched(d, b"PK\x01\x02", 38, "<I", ((stat.S_IFREG | 0o644) << 16) | 0x20)),
    "text bit": (None, lambda d: _patched(d, b"PK\x01\x02", 36, "<H", 1)),
    "a folder entry for the .dist-info": (_dist_info_folder, None),
    "RECORD hashed with sha384": (_sha384, None),
}


def _wheel(built: Built, folder: Path, members: list[RawMember], after=None) -> Path:  # type: ignore[no-untyped-def]
    data = raw_zip(members)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / built.wheel.name
    path.write_bytes(after(data) if after else data)
    return path


def _installed(wheel: Path, site: Path) -> dict[str, tuple[int, bytes]]:
    """What ``installer`` writes for ``wheel``: each file's mode bits and bytes, its own files and RECORD's hashes
    left out (RECORD as the files it names)."""
    install_wheel(wheel, site)
    found: dict[str, tuple[int, bytes]] = {}
    for path in sorted(site.rglob("*")):
        rel = path.relative_to(site).as_posix()
        name = rel.rsplit("/", 1)[-1]
        if path.is_dir() or (".dist-info/" in rel and name in TOOL_OWN):
            continue
        data = path.read_bytes()
        if ".dist-info/" in rel and name == "RECORD":
            named = {line.split(b",")[0] for line in data.splitlines()}
            data = b"\n".join(sorted(n for n in named if n.rsplit(b"/", 1)[-1].decode() not in TOOL_OWN))
        found[rel] = (stat.S_IMODE(path.stat().st_mode), data)
    return found


@pytest.fixture(scope="module")
def as_built(built: Built, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, bytes]]:
    return _installed(built.wheel, tmp_path_factory.mktemp("as-built") / "site")


@pytest.mark.parametrize("variant", list(ALIKE))
def test_a_wheel_four_installers_install_as_built_passes(
    built: Built, tmp_path: Path, as_built: dict[str, tuple[int, bytes]], variant: str
) -> None:
    change, after = ALIKE[variant]
    members = wheel_members(built.wheel)
    wheel = _wheel(built, tmp_path / "dist", change(members) if change else members, after)
    report = judge(wheel)
    assert report.passed, [(f.code, f.path, f.message) for f in report.findings]
    assert _installed(wheel, tmp_path / "site") == as_built


# What each installer did with a wheel the gate refuses, from the runs above (each refused before this round): the
# gate's refusal keeps each one off an index. "refused" is the tool's refusing the whole wheel.
INSTALLED = {
    "a console script named sub/evil": (
        "G408",
        {"pip 23.2": "bin/evil", "pip 26.3": "bin/sub/evil", "uv 0.13.9": "refused", "installer": "bin/sub/evil"},
    ),
    "a header under .data/headers": (
        "G107",
        {
            "pip 23.2": "include/python3.11/neurobrix/x.h",
            "pip 26.3": "include/site/python3.11/neurobrix/x.h",
            "uv 0.13.9": "include/site/python3.11/neurobrix/x.h",
            "installer": "the scheme's headers folder: x.h",
        },
    ),
    "another project's .data/purelib": (
        "G107",
        {
            "pip 23.2": "site-packages/evil.py",
            "pip 26.3": "site-packages/evil.py",
            "uv 0.13.9": "site-packages/other-1.0.data/purelib/evil.py",
            "installer": "site-packages/other-1.0.data/purelib/evil.py",
        },
    ),
    "a package file with a symbolic link's type bits": (
        "G304",
        {"pip 23.2": "mode 644", "pip 26.3": "mode 644", "uv 0.13.9": "mode 755", "installer": "mode 644"},
    ),
    "a member named ../../evil.py": (
        "G302",
        {
            "pip 23.2": "refused",
            "pip 26.3": "refused",
            "uv 0.13.9": "skipped, the rest installed",
            "installer": "refused",
        },
    ),
    "an absolute member name": (
        "G301",
        {
            "pip 23.2": "refused",
            "pip 26.3": "refused",
            "uv 0.13.9": "skipped, the rest installed",
            "installer": "refused",
        },
    ),
    "an empty line in RECORD": (
        "G206",
        {"pip 23.2": "refused", "pip 26.3": "refused", "uv 0.13.9": "installed", "installer": "refused"},
    ),
    "a folder entry no tracked file is in": (
        "G107",
        {"pip 23.2": "nothing", "pip 26.3": "nothing", "uv 0.13.9": "an empty folder", "installer": "nothing"},
    ),
}


def _refused_wheel(built: Built, case: str) -> tuple[list[RawMember], str]:
    """The members of ``case``'s wheel and the path the gate names."""
    members = wheel_members(built.wheel)
    entry_points = f"{built.dist_info}/entry_points.txt".encode()
    data_dir = f"neurobrix-{built.version}.data"
    if case == "a console script named sub/evil":
        points = _member(members, entry_points)
        points.data = points.data.replace(b"neurobrix =", b"sub/evil =")
        return with_true_record(members), entry_points.decode()
    if case == "a package file with a symbolic link's type bits":
        _member(members, CLI).mode = stat.S_IFLNK | 0o777
        return members, CLI.decode()
    if case == "an empty line in RECORD":
        record = _record(members)
        lines = record.data.split(b"\n")
        record.data = b"\n".join([*lines[:3], b"", *lines[3:]])
        return members, record.name.decode()
    if case == "a folder entry no tracked file is in":
        folder = b"neurobrix/ops/sub/"
        return [RawMember(folder, b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755)] + members, folder.decode()
    planted = {
        "a header under .data/headers": f"{data_dir}/headers/x.h".encode(),
        "another project's .data/purelib": b"other-1.0.data/purelib/evil.py",
        "a member named ../../evil.py": b"../../evil.py",
        "an absolute member name": b"/tmp/evil.py",
    }[case]
    return with_true_record([*members, RawMember(planted, b"x = 1\n")]), planted.decode()


@pytest.mark.parametrize("case", list(INSTALLED))
def test_a_wheel_the_installers_read_apart_is_refused(built: Built, tmp_path: Path, case: str) -> None:
    code, _ = INSTALLED[case]
    members, path = _refused_wheel(built, case)
    refused_with(judge(_wheel(built, tmp_path / "dist", members)), code, path)


def _sdist_variant(built: Built, variant: str) -> bytes:
    members = sdist_members(built.sdist)
    if variant == "GNU format":
        import io

        buffer = io.BytesIO()
        with (
            tarfile.open(built.sdist) as source,
            tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as out,
        ):
            for info in source.getmembers():
                out.addfile(info, source.extractfile(info) if info.isreg() else None)
        return buffer.getvalue()
    if variant == "reversed, with folder entries":
        folders: set[str] = set()
        for m in members:
            parts = m.name.split("/")[:-1]
            folders.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        entries = [RawTarMember(f + "/", b"", tarfile.DIRTYPE, mode=0o755) for f in sorted(folders)]
        return raw_tar(entries + members[::-1])
    if variant == "read-only files, a folder of mode 555":
        for m in members:
            m.mode = 0o444
        top = f"{built.root}/neurobrix/"
        return raw_tar([RawTarMember(top, b"", tarfile.DIRTYPE, mode=0o555), *members])
    raise ValueError(variant)


@pytest.mark.parametrize(
    "variant", ["GNU format", "reversed, with folder entries", "read-only files, a folder of mode 555"]
)
def test_an_sdist_the_front_ends_build_as_built_passes(built: Built, tmp_path: Path, variant: str) -> None:
    sdist = write_sdist(tmp_path / built.sdist.name, _sdist_variant(built, variant))
    report = judge(sdist)
    assert report.passed, [(f.code, f.path, f.message) for f in report.findings]


def test_a_gzip_header_naming_the_tar_passes(built: Built, tmp_path: Path) -> None:
    import gzip
    import io

    buffer = io.BytesIO()
    with gzip.GzipFile(filename=built.sdist.name[: -len(".gz")], mode="wb", fileobj=buffer, mtime=0) as packed:
        packed.write(gzip.decompress(built.sdist.read_bytes()))
    sdist = tmp_path / built.sdist.name
    sdist.write_bytes(buffer.getvalue())
    assert buffer.getvalue()[3] & 0x08  # FNAME set
    report = judge(sdist)
    assert report.passed, [(f.code, f.path, f.message) for f in report.findings]
