"""The thirty-first round against the release gate: classes the earlier rounds built no dist for, held against the tool.

Each class was built as an attacker would (the project's own wheel or sdist, changed one way), read by the code that
installs, resolves or unpacks it (pip 23.2's own ``install_wheel`` and ``unpack_file``, ``installer`` and its record
validation, ``site``, packaging's metadata reader, tarfile and GNU tar, run here), and judged by the gate. No dist
the gate passes was found that one of them reads otherwise; each class is held here by the check that refuses it, so
that the test fails if the gate starts passing it:

1. members that land outside site-packages or run at interpreter start through routes no test named:
   ``.data/data/bin/python3``, which pip writes over a virtual environment's interpreter (the data scheme is the
   environment's root, its ``bin/`` the scripts folder, and pip replaces a file already there), and setuptools'
   namespace ``*-nspkg.pth`` line, which ``site`` executes at every start (G107);
2. RECORD hashes spelt otherwise than the wheel format writes them: padded base64 and a hex digest, which
   ``installer``'s record validation refuses and pip never reads, and an upper-case algorithm name, which
   ``installer`` reads as the file's true hash (``hashlib.new`` takes any case) though no writer writes it (G203,
   G206);
3. core metadata fields a resolver or an index reads that pyproject.toml does not declare: ``Provides-Dist``,
   ``Obsoletes-Dist``, ``Supported-Platform``, ``Platform`` in METADATA, and an sdist's PKG-INFO without one of its
   ``Requires-Dist`` lines (uv resolves an sdist by its PKG-INFO when it says Metadata-Version 2.2 or later and none
   of Requires-Python, Requires-Dist and Provides-Extra is ``Dynamic``, without building it: read from uv's
   ``parse_pkg_info``, no uv here; pip builds it and reads the backend's): G406;
4. sdist headers two unpackers name otherwise: a pre-POSIX (v7) header with a prefix field, which tarfile (pip's
   unpacker) joins to the name (``neurobrix-0.1.0/pyproject.toml``) and GNU tar ignores (``pyproject.toml``, beside
   the project's folder), and ustar magic with another version than ``00``, read alike (G313);
5. ``.dist-info`` files written through ``.data/purelib`` or ``.data/platlib``: pip installs the ``.data`` members
   after the others and writes over a file already there, so ``.data/purelib/neurobrix-0.1.0.dist-info/
   entry_points.txt`` is what importlib.metadata reads once installed (a ``pytest11`` group: pytest then imports the
   plugin in every run in that environment), its METADATA what ``pip show`` reads; ``installer`` refuses the wheel
   (a file already there). G107, now named as a write into the project's own ``.dist-info`` (it said "outside the
   package ... another .dist-info");
6. folder entries that spell one of the project's folders in another case or with a trailing dot: ``unzip``, uv and
   GNU tar create each folder by its entry, so on a case-insensitive disk (macOS, Windows) the package's files land in
   ``NeuroBrix/``, which Python's case-checked import does not take for ``neurobrix`` (G107 in a wheel, G507 in an
   sdist: outside its one top folder).
"""

from __future__ import annotations

import base64
import importlib.metadata
import stat
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from gate_fixtures import (
    Built,
    RawMember,
    RawTarMember,
    install_wheel,
    raw_tar,
    sdist_members,
    wheel_members,
    with_true_record,
    write_sdist,
)
from installer.records import Hash
from packaging.metadata import Metadata
from pip._internal.models.scheme import Scheme
from pip._internal.operations.install.wheel import install_wheel as pip_install_wheel
from pip._internal.utils.unpacking import unpack_file
from test_gate_hostile import built, judge, member, refused_with, write_wheel

from gate.checker import REPO

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the module's built wheel and sdist, shared with the hostile corpus

PY = f"python{sys.version_info.major}.{sys.version_info.minor}"


def pip_into_venv(wheel: Path, root: Path) -> Path:
    """``wheel`` installed by pip 23.2's own ``install_wheel`` into a virtual environment's layout at ``root`` (the
    schemes ``venv`` gives: data is the root, scripts its ``bin/``); returns ``root``."""
    site = root / "lib" / PY / "site-packages"
    scheme = Scheme(
        platlib=str(site), purelib=str(site), headers=str(root / "include"), scripts=str(root / "bin"), data=str(root)
    )
    pip_install_wheel("neurobrix", str(wheel), scheme, "neurobrix", pycompile=False, warn_script_location=False)
    return root


def planted_wheel(built: Built, folder: Path, name: str, data: bytes, mode: int = 0o100644) -> Path:
    members = with_true_record([*wheel_members(built.wheel), RawMember(name.encode(), data, mode=mode)])
    return write_wheel(built, folder, members)


# -- 1. members outside site-packages or run at start, by routes no test named ----------------------------------------

INTERPRETER = b"#!/bin/sh\necho planted\n"


def test_data_bin_python_replaces_a_venvs_interpreter_with_pip_and_is_refused(built: Built, tmp_path: Path) -> None:
    """The data scheme of a virtual environment is its root, so ``.data/data/bin/python3`` is ``<venv>/bin/python3``:
    pip deletes the file there and writes the member (``installer`` refuses a file already there)."""
    name = f"neurobrix-{built.version}.data/data/bin/python3"
    wheel = planted_wheel(built, tmp_path / "w", name, INTERPRETER, mode=0o100755)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin/python3").write_bytes(b"the environment's interpreter")
    pip_into_venv(wheel, venv)
    assert (venv / "bin/python3").read_bytes() == INTERPRETER
    finding = refused_with(judge(wheel), "G107", name, built.wheel.name)
    assert "not a file of this project" in finding.message


NSPKG = "neurobrix-{v}-nspkg.pth"
NSPKG_ROUTES = {  # attack -> the member planted ({v}: the version)
    "at the root": NSPKG,
    "through .data/purelib": "neurobrix-{v}.data/purelib/" + NSPKG,
    "through .data/data into site-packages": f"neurobrix-{{v}}.data/data/lib/{PY}/site-packages/" + NSPKG,
}


def _nspkg_line(marker: Path) -> bytes:
    """A namespace line as setuptools writes them: ``import`` first, so ``site`` executes the whole line."""
    return f"import sys, pathlib; pathlib.Path({str(marker)!r}).write_text('ran')\n".encode()


@pytest.mark.parametrize("route", list(NSPKG_ROUTES))
def test_an_nspkg_pth_is_refused(built: Built, tmp_path: Path, route: str) -> None:
    name = NSPKG_ROUTES[route].format(v=built.version)
    wheel = planted_wheel(built, tmp_path, name, _nspkg_line(tmp_path / "ran"))
    finding = refused_with(judge(wheel), "G107", name, built.wheel.name)
    assert "not a file of this project" in finding.message


def test_an_nspkg_pth_installed_by_pip_runs_at_interpreter_start(built: Built, tmp_path: Path) -> None:
    """The evidence for the class above: pip puts each route's file in site-packages, and ``site`` executes it."""
    marker = tmp_path / "ran"
    members = wheel_members(built.wheel)
    for route in NSPKG_ROUTES.values():
        name = route.format(v=built.version).replace("nspkg", f"nspkg{len(members)}")
        members.append(RawMember(name.encode(), _nspkg_line(marker)))
    wheel = write_wheel(built, tmp_path / "w", with_true_record(members))
    site = pip_into_venv(wheel, tmp_path / "venv") / "lib" / PY / "site-packages"
    assert len(list(site.glob("*-nspkg*.pth"))) == len(NSPKG_ROUTES)
    code = f"import site; site.addsitedir({str(site)!r})"
    subprocess.run([sys.executable, "-I", "-S", "-c", code], check=True, timeout=30)
    assert marker.read_text() == "ran"


# -- 2. RECORD hashes spelt otherwise --------------------------------------------------------------------------------


def _respelt(text: bytes, spell: Callable[[bytes], bytes]) -> bytes:
    rows = []
    for row in text.split(b"\n"):
        path, _, rest = row.partition(b",")
        digest, _, size = rest.partition(b",")
        rows.append(b",".join((path, spell(digest), size)) if digest.startswith(b"sha256=") else row)
    return b"\n".join(rows)


def _hex(digest: bytes) -> bytes:
    return b"sha256=" + base64.urlsafe_b64decode(digest[7:] + b"=").hex().encode()


HASH_SPELLINGS: dict[str, tuple[Callable[[bytes], bytes], str, bool]] = {
    # attack -> (the spelling, the code, whether installer's record validation takes it for the file's hash)
    "padded base64": (lambda d: d + b"=", "G203", False),
    "a hex digest": (_hex, "G203", False),
    "an upper-case algorithm name": (lambda d: d.replace(b"sha256=", b"SHA256="), "G206", True),
}


@pytest.mark.parametrize("attack", list(HASH_SPELLINGS))
def test_a_record_hash_spelt_otherwise_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    spell, code, installer_takes_it = HASH_SPELLINGS[attack]
    members = wheel_members(built.wheel)
    record = member(members, f"{built.dist_info}/RECORD")
    text = _respelt(record.data, spell)
    row = next(r for r in text.decode().splitlines() if r.startswith("neurobrix/cli.py,"))
    assert Hash.parse(row.split(",")[1]).validate((REPO / "neurobrix/cli.py").read_bytes()) is installer_takes_it
    wheel = write_wheel(built, tmp_path, [RawMember(m.name, text) if m is record else m for m in members])
    if not installer_takes_it:
        with pytest.raises(Exception, match="hash|RECORD|invalid|validation"):
            install_wheel_validated(wheel, tmp_path / "installer")
    report = judge(wheel)
    assert any(f.code == code and f.dist == built.wheel.name for f in report.findings), report.findings
    assert not report.passed


def install_wheel_validated(wheel: Path, site: Path) -> None:
    """``installer`` with its record validation on, as Poetry runs it."""
    from installer.sources import WheelFile

    with WheelFile.open(wheel) as opened:
        opened.validate_record()
    install_wheel(wheel, site)


# -- 3. core metadata fields a resolver or an index reads -------------------------------------------------------------

ADDED_FIELDS = {  # attack -> the line added after the last Requires-Dist, and packaging's attribute that reads it
    "Provides-Dist": (b"Provides-Dist: torch (2.11.0)\n", "provides_dist"),
    "Obsoletes-Dist": (b"Obsoletes-Dist: triton\n", "obsoletes_dist"),
    "Supported-Platform": (b"Supported-Platform: linux_x86_64\n", "supported_platforms"),
    "Platform": (b"Platform: win32\n", "platforms"),
}


def _with_line(metadata: bytes, line: bytes) -> bytes:
    head, _, body = metadata.partition(b"\n\n")
    return head + b"\n" + line.rstrip(b"\n") + b"\n\n" + body


@pytest.mark.parametrize("field", list(ADDED_FIELDS))
def test_a_metadata_field_pyproject_does_not_declare_is_refused(built: Built, tmp_path: Path, field: str) -> None:
    line, attribute = ADDED_FIELDS[field]
    members = wheel_members(built.wheel)
    metadata = member(members, f"{built.dist_info}/METADATA")
    text = _with_line(metadata.data, line)
    assert getattr(Metadata.from_email(text, validate=False), attribute)  # packaging reads the field
    assert not getattr(Metadata.from_email(metadata.data, validate=False), attribute)
    wheel = write_wheel(
        built, tmp_path, with_true_record([RawMember(m.name, text) if m is metadata else m for m in members])
    )
    refused_with(judge(wheel), "G406", f"{built.dist_info}/METADATA", built.wheel.name)


def test_an_sdist_pkg_info_without_a_requirement_is_refused(built: Built, tmp_path: Path) -> None:
    """uv takes an sdist's requirements from its PKG-INFO (Metadata-Version 2.2 or later, the field not ``Dynamic``)
    without building it; pip builds it and reads the backend's: one sdist, two dependency sets."""
    members = sdist_members(built.sdist)
    pkg_info = f"{built.root}/PKG-INFO"
    original = next(m for m in members if m.name == pkg_info)
    dropped = next(line for line in original.data.splitlines(keepends=True) if line.startswith(b"Requires-Dist: torch"))
    text = original.data.replace(dropped, b"", 1)
    ours = Metadata.from_email(text, validate=False)
    assert not any(str(r).startswith("torch") for r in ours.requires_dist or [])
    assert "requires_dist" not in (ours.dynamic or [])  # static: a resolver may take it as it is
    changed = [RawTarMember(m.name, text if m is original else m.data, m.type, mode=m.mode) for m in members]
    (tmp_path / "s").mkdir()
    sdist = write_sdist(tmp_path / "s" / built.sdist.name, raw_tar(changed))
    refused_with(judge(sdist), "G406", pkg_info, built.sdist.name)


# -- 4. sdist headers that unpackers name otherwise -------------------------------------------------------------------

HEADER_FORMATS: dict[str, tuple[Callable[[str], dict[int, bytes]], tuple[str, str]]] = {
    # attack -> (the root folder -> the bytes written over pyproject.toml's header, the names tarfile and GNU tar give)
    "a v7 header whose prefix field holds the project's folder": (
        lambda root: {0: b"pyproject.toml".ljust(100, b"\0"), 257: bytes(8), 345: root.encode().ljust(155, b"\0")},
        ("{root}/pyproject.toml", "pyproject.toml"),
    ),
    "ustar magic with a version of two NULs": (lambda root: {257: b"ustar\0\0\0"}, ("{root}/pyproject.toml",) * 2),
    "ustar magic with a version of two spaces": (lambda root: {257: b"ustar\0  "}, ("{root}/pyproject.toml",) * 2),
}


@pytest.mark.parametrize("attack", list(HEADER_FORMATS))
def test_an_sdist_header_of_another_format_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    make, (by_tarfile, by_gnu) = HEADER_FORMATS[attack]
    root = built.root
    patch = make(root)
    target = f"{root}/pyproject.toml"
    members = [
        RawTarMember(m.name, m.data, m.type, mode=m.mode, header=patch if m.name == target else None)
        for m in sdist_members(built.sdist)
    ]
    (tmp_path / "s").mkdir()
    sdist = write_sdist(tmp_path / "s" / built.sdist.name, raw_tar(members))
    with tarfile.open(sdist) as tar:
        assert by_tarfile.format(root=root) in tar.getnames()
    listed = subprocess.run(["tar", "-tzf", str(sdist)], capture_output=True, text=True, check=True).stdout.split()
    assert by_gnu.format(root=root) in listed
    if by_tarfile != by_gnu:  # pip unpacks the project's pyproject.toml, GNU tar writes one beside the folder
        unpack_file(str(sdist), str(tmp_path / "pip"))
        assert (tmp_path / "pip/pyproject.toml").read_bytes() == (REPO / "pyproject.toml").read_bytes()
        (tmp_path / "gnu").mkdir()
        subprocess.run(["tar", "-xzf", str(sdist), "-C", str(tmp_path / "gnu")], check=True, capture_output=True)
        assert (tmp_path / "gnu/pyproject.toml").is_file() and not (tmp_path / "gnu" / target).exists()
    finding = refused_with(judge(sdist), "G313", by_gnu.format(root=root), built.sdist.name)
    assert "not a ustar header" in finding.message


# -- 5. the project's own .dist-info files through .data ---------------------------------------------------------------

PYTEST_PLUGIN = b"\n[pytest11]\nneurobrix = neurobrix.cli\n"
THROUGH_DATA = {  # attack -> (the .dist-info file, how the planted copy differs)
    "entry_points.txt with a pytest plugin, through .data/purelib": ("purelib", "entry_points.txt"),
    "METADATA naming another version, through .data/platlib": ("platlib", "METADATA"),
}


def _through_data(built: Built, scheme: str, file: str) -> tuple[str, RawMember, bytes]:
    members = wheel_members(built.wheel)
    own = member(members, f"{built.dist_info}/{file}")
    data = (
        own.data + PYTEST_PLUGIN if file == "entry_points.txt" else own.data.replace(b"\nVersion: ", b"\nVersion: 9", 1)
    )
    name = f"neurobrix-{built.version}.data/{scheme}/{built.dist_info}/{file}"
    return name, RawMember(name.encode(), data), data


@pytest.mark.parametrize("attack", list(THROUGH_DATA))
def test_a_dist_info_file_through_data_is_refused_as_written_into_the_dist_info(
    built: Built, tmp_path: Path, attack: str
) -> None:
    name, planted, _ = _through_data(built, *THROUGH_DATA[attack])
    wheel = write_wheel(built, tmp_path, with_true_record([*wheel_members(built.wheel), planted]))
    finding = refused_with(judge(wheel), "G107", name, built.wheel.name)
    assert f"into the project's own {built.dist_info}/" in finding.message
    assert "another top-level module" not in finding.message


def test_pip_leaves_the_dist_info_file_written_through_data(built: Built, tmp_path: Path) -> None:
    """The evidence for the class above: installed by pip, the planted entry_points.txt and METADATA are the ones
    importlib.metadata reads; installer refuses the wheel."""
    planted = [_through_data(built, scheme, file) for scheme, file in THROUGH_DATA.values()]
    wheel = write_wheel(
        built, tmp_path / "w", with_true_record([*wheel_members(built.wheel), *(p[1] for p in planted)])
    )
    site = pip_into_venv(wheel, tmp_path / "venv") / "lib" / PY / "site-packages"
    found = next(importlib.metadata.distributions(path=[str(site)]))
    assert [e.value for e in found.entry_points if e.group == "pytest11"] == ["neurobrix.cli"]
    assert found.version == "9" + built.version
    with pytest.raises(FileExistsError):
        install_wheel(wheel, tmp_path / "installer")


# -- 6. folder entries spelt as another case of the project's folders ------------------------------------------------

FOLDER_ALIASES = ["NeuroBrix/", "neurobrix/_Tables/", "NEUROBRIX-{v}.DIST-INFO/", "neurobrix./"]


@pytest.mark.parametrize("alias", FOLDER_ALIASES)
def test_a_wheel_folder_entry_spelling_a_project_folder_otherwise_is_refused(
    built: Built, tmp_path: Path, alias: str
) -> None:
    """A folder entry first, the project's files after it: ``unzip`` makes the folder with the entry's spelling."""
    name = alias.format(v=built.version)
    folder = RawMember(name.encode(), b"", mode=stat.S_IFDIR | 0o755)
    wheel = write_wheel(built, tmp_path, [folder, *wheel_members(built.wheel)])
    listed = subprocess.run(["unzip", "-Z1", str(wheel)], capture_output=True, text=True, check=True).stdout.split()
    assert listed[0] == name
    finding = refused_with(judge(wheel), "G107", name, built.wheel.name)
    assert "a folder entry for no file of this project" in finding.message


def test_an_sdist_folder_entry_spelling_its_top_folder_otherwise_is_refused(built: Built, tmp_path: Path) -> None:
    alias = built.root.replace("neurobrix", "NeuroBrix") + "/"
    members = [RawTarMember(alias, b"", tarfile.DIRTYPE, mode=0o755), *sdist_members(built.sdist)]
    (tmp_path / "s").mkdir()
    sdist = write_sdist(tmp_path / "s" / built.sdist.name, raw_tar(members))
    (tmp_path / "gnu").mkdir()
    subprocess.run(["tar", "-xzf", str(sdist), "-C", str(tmp_path / "gnu")], check=True, capture_output=True)
    assert (tmp_path / "gnu" / alias).is_dir()  # a folder of its own here; the top folder itself on macOS
    refused_with(judge(sdist), "G507", alias, built.sdist.name)
