"""The forty-fourth round against the release gate: classes of the brief's list that no earlier round's test named, each
dist built from the project's own wheel and sdist and read by the code that installs it or reads it after the install
(pip 23.2's own ``install_wheel``, ``installer``, the engine's own checks of its installed files; pip 26.3 run by hand).
Most of the brief's list was found covered by name and not built again (see docs/gate-rounds.md, round 44). Found and
fixed, each test failing before:

1. an entry point whose name is a path (``sub/dir/x``, ``../x``, an absolute name, ``.``, ``..``, a backslash, a
   drive). Installers join the name to the scripts folder as it is: pip 23.2 (distlib's script maker) writes
   ``sub/dir/x`` as ``scripts/x``, a command on PATH, where ``installer`` and pip 26.3 write ``scripts/sub/dir/x``; a
   climbing or absolute name is refused by ``installer`` and pip 26.3. The gate refused each (G408), but said the line
   was "neither a [group] nor a 'name = module:attr' entry", and for ``.`` and ``..`` only that pyproject.toml does
   not declare it: it now names the path and what installers do with it;
2. one release twice in a run: two upload folders (or a folder and a file elsewhere) holding a wheel, or an sdist, of
   one file name in other bytes (the wheel's members stored rather than deflated, the sdist's gzip header time). Each
   passed, so the run passed with two sha256s under one file name, and ``twine upload a/* b/*`` sends whichever it
   meets first while PyPI refuses the other (a file name is uploaded once): what is released hung on the order of the
   arguments. G602 now (the same bytes twice are one file to PyPI, and pass).

Pinned, each read alike by every reader run here:

3. RECORD's choice of hash, left open since round 20: a wheel judged alone may hash its rows with sha384 or sha512. The
   readers after the install are pip's RECORD (which keeps the wheel's hashes) and the engine's own checks of its
   installed tables and kernels (``installed_tables_problem``, ``installed_kernels_problem``), which hash with the
   algorithm each row names: both find the installed copy the release's, and both catch a table (with its list) or a
   kernel changed after the install (each test fails with the engine hashing sha256 whatever the row says);
4. an entry point writing the project's launcher's file (``NEUROBRIX``, one file with ``neurobrix`` on a
   case-insensitive disk; ``neurobrix`` as a gui script) is refused as a script pyproject.toml does not declare (G408);
5. the tag as ``--expect-version`` reads it, by PEP 440: ``0.1`` and ``V0.1.0.0`` are release 0.1.0 (as to pip and
   PyPI), a local version, a post-release and a release candidate are not (G603; the test fails with the local part
   compared away).

Each pinned test fails with its check weakened (run once, by hand): the undeclared entry point not named, G602 by file
name alone, the engine hashing sha256 whatever a RECORD row names. Left open: ``python -m gate`` runs with the
checkout's top first on ``sys.path``, so an untracked ``packaging.py`` there runs inside the gate (shown by hand); see
docs/gate-rounds.md.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import zipfile
from pathlib import Path

import pytest
from gate_fixtures import Built, RawMember, install_wheel, raw_zip, wheel_members, with_true_record
from packaging.version import Version
from pip._internal.models.scheme import Scheme
from pip._internal.operations.install.wheel import install_wheel as pip_install_wheel
from test_gate_hostile import REFERENCE, built, judge, refused_with

from gate.checker import Options, check
from neurobrix import stack, tables
from neurobrix.ops import SOURCES

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the hostile corpus's built wheel and sdist


def _pip_install(wheel: Path, root: Path) -> Path:
    """``wheel`` installed by pip 23.2's own ``install_wheel`` (as rounds 30 and 40 run it): site, bin, include."""
    scheme = Scheme(
        platlib=str(root / "site"),
        purelib=str(root / "site"),
        headers=str(root / "include"),
        scripts=str(root / "bin"),
        data=str(root),
    )
    pip_install_wheel("neurobrix", str(wheel), scheme, "neurobrix", pycompile=False, warn_script_location=False)
    return root / "site"


# -- 1. entry point names that are paths ------------------------------------------------------------------------------


def _entry_points_wheel(built: Built, folder: Path, added: bytes) -> Path:
    path = f"{built.dist_info}/entry_points.txt".encode()
    members = [RawMember(m.name, m.data + added) if m.name == path else m for m in wheel_members(built.wheel)]
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / built.wheel.name
    wheel.write_bytes(raw_zip(with_true_record(members)))
    return wheel


PATH_NAMES = {  # attack -> the line added to entry_points.txt (after [console_scripts]'s own)
    "a subfolder of the scripts folder": b"sub/dir/neurobrix-admin = neurobrix.cli:main\n",
    "climbing out of the scripts folder": b"../neurobrix-admin = neurobrix.cli:main\n",
    "an absolute name": b"/usr/local/bin/neurobrix-admin = neurobrix.cli:main\n",
    "the scripts folder itself": b". = neurobrix.cli:main\n",
    "the folder above it": b".. = neurobrix.cli:main\n",
    "a backslash, a folder on Windows": b"sub\\neurobrix-admin = neurobrix.cli:main\n",
    "a drive": b"C:neurobrix-admin = neurobrix.cli:main\n",
    "a gui script climbing": b"\n[gui_scripts]\n../neurobrix-gui = neurobrix.cli:main\n",
}


@pytest.mark.parametrize("attack", list(PATH_NAMES))
def test_an_entry_point_name_that_is_a_path_is_refused_as_one(built: Built, tmp_path: Path, attack: str) -> None:
    wheel = _entry_points_wheel(built, tmp_path, PATH_NAMES[attack])
    finding = refused_with(judge(wheel), "G408", f"{built.dist_info}/entry_points.txt", built.wheel.name)
    assert "is a path" in finding.message, finding.message


def test_pip_and_installer_write_a_path_named_launcher_in_two_places(built: Built, tmp_path: Path) -> None:
    """What class 1 does: the launcher of ``sub/dir/neurobrix-admin`` is the command ``neurobrix-admin`` on PATH to pip
    23.2 and a file in a subfolder of the scripts folder to ``installer`` (and to pip 26.3, run by hand): one wheel
    installed two ways; a climbing name is refused by ``installer``."""
    wheel = _entry_points_wheel(built, tmp_path / "w", PATH_NAMES["a subfolder of the scripts folder"])
    _pip_install(wheel, tmp_path / "pip")
    assert (tmp_path / "pip" / "bin" / "neurobrix-admin").is_file()
    assert not (tmp_path / "pip" / "bin" / "sub").exists()
    site = install_wheel(wheel, tmp_path / "installer")
    assert (site / "scripts" / "sub" / "dir" / "neurobrix-admin").is_file()
    assert not (site / "scripts" / "neurobrix-admin").exists()
    climbing = _entry_points_wheel(built, tmp_path / "c", PATH_NAMES["climbing out of the scripts folder"])
    with pytest.raises(ValueError, match="outside of the target directory"):
        install_wheel(climbing, tmp_path / "installer-climbing")


LAUNCHER_ALIASES = {  # attack -> the line added: another entry point writing the project's launcher's file
    # one file with scripts/neurobrix on a case-insensitive disk (macOS, Windows): the later written wins
    "the launcher in another case": b"NEUROBRIX = neurobrix.cli:main\n",
    # the same file on POSIX, and on Windows a launcher without a console (the command's output goes nowhere)
    "the launcher as a gui script": b"\n[gui_scripts]\nneurobrix = neurobrix.cli:main\n",
}


@pytest.mark.parametrize("attack", list(LAUNCHER_ALIASES))
def test_another_entry_point_writing_the_launchers_file_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    """Class 4, pinned: each is an entry point pyproject.toml does not declare (G408)."""
    wheel = _entry_points_wheel(built, tmp_path, LAUNCHER_ALIASES[attack])
    finding = refused_with(judge(wheel), "G408", f"{built.dist_info}/entry_points.txt", built.wheel.name)
    assert "does not declare" in finding.message


# -- 2. one release twice in a run -------------------------------------------------------------------------------------


def _two_folders(built: Built, tmp_path: Path) -> tuple[Path, Path]:
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        folder.mkdir()
        for dist in (built.wheel, built.sdist):
            shutil.copyfile(dist, folder / dist.name)
    return first, second


def _stored(wheel: Path) -> bytes:
    """The wheel's members, RECORD and all, in the same order and bytes, stored rather than deflated."""
    return raw_zip(RawMember(m.name, m.data, method=zipfile.ZIP_STORED) for m in wheel_members(wheel))


def _gzip_time_changed(sdist: Path) -> bytes:
    """The sdist with another time in its gzip header (bytes 4-7, read by `gunzip -N` alone)."""
    data = bytearray(sdist.read_bytes())
    data[4:8] = (int.from_bytes(data[4:8], "little") + 1).to_bytes(4, "little")
    return bytes(data)


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_one_release_twice_in_other_bytes_is_refused(built: Built, tmp_path: Path, kind: str) -> None:
    first, second = _two_folders(built, tmp_path)
    dist = built.wheel if kind == "wheel" else built.sdist
    other = _stored(dist) if kind == "wheel" else _gzip_time_changed(dist)
    assert other != dist.read_bytes()
    (second / dist.name).write_bytes(other)
    alone = judge(second)  # each folder passes alone: the other bytes are a release of this project's files
    assert alone.passed, [(f.code, f.path, f.message) for f in alone.findings]
    finding = refused_with(judge(first, second), "G602", None, dist.name)
    assert "twine upload" in finding.message and str(second) in finding.message


def test_one_release_twice_in_the_same_bytes_passes(built: Built, tmp_path: Path) -> None:
    """The control: the same file in two folders is one file to PyPI (an upload of the same name and bytes is taken
    once), and a dist named through its folder and by its path is judged once."""
    first, second = _two_folders(built, tmp_path)
    report = judge(first, second, first / built.wheel.name, first / "." / built.sdist.name)
    assert report.passed, [(f.code, f.path, f.message) for f in report.findings]
    assert len(report.dists) == 4


# -- 3. RECORD's hash algorithm, read after the install ----------------------------------------------------------------


def _hashed_with(built: Built, folder: Path, algorithm: str) -> Path:
    """The project's wheel with every RECORD row hashed with ``algorithm``, written as hatchling writes rows."""
    members = wheel_members(built.wheel)
    record = next(m for m in members if m.name.endswith(b".dist-info/RECORD"))
    rows = []
    for m in members:
        if m is record or m.name.endswith(b"/"):
            continue
        digest = base64.urlsafe_b64encode(hashlib.new(algorithm, m.data).digest()).rstrip(b"=").decode()
        rows.append(f"{m.name.decode()},{algorithm}={digest},{len(m.data)}\n")
    rows.append(f"{record.name.decode()},,\n")
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / built.wheel.name
    record = RawMember(record.name, "".join(rows).encode())
    wheel.write_bytes(raw_zip([*(m for m in members if not m.name.endswith(b".dist-info/RECORD")), record]))
    return wheel


@pytest.mark.parametrize("algorithm", ["sha384", "sha512"])
def test_the_engine_reads_record_hashes_as_the_gate_does(built: Built, tmp_path: Path, algorithm: str) -> None:
    wheel = _hashed_with(built, tmp_path / "dist", algorithm)
    report = judge(wheel)
    assert report.passed, [(f.code, f.path, f.message) for f in report.findings]
    site = _pip_install(wheel, tmp_path / "pip")
    assert f",{algorithm}=" in (site / built.dist_info / "RECORD").read_text()  # pip keeps the wheel's hashes
    root, package = site / tables.WHEEL_DIR, site / "neurobrix"
    assert tables.installed_tables_problem(root) is None
    assert stack.installed_kernels_problem(package) is None
    # a table and its list changed together after the install, and a kernel patched: each is caught under the hash
    tracked = root / tables.TRACKED_NAME
    tracked.write_bytes(tracked.read_bytes() + b"\n")
    assert "not the one neurobrix" in (tables.installed_tables_problem(root) or "")
    kernel = package / "ops" / sorted(SOURCES)[0]
    kernel.write_bytes(kernel.read_bytes() + b"\n")
    assert "changed since" in (stack.installed_kernels_problem(package) or "")


# -- 5. the tag as --expect-version is read ----------------------------------------------------------------------------

EXPECTED = {  # --expect-version -> whether the project's release (0.1.0) is that version
    "v0.1.0": True,
    "0.1": True,  # PEP 440 pads with zeros: one release to packaging, pip and PyPI (which keys releases so)
    "V0.1.0.0": True,
    "0.1.0+local": False,  # a local version is another version
    "0.1.0.post0": False,
    "0.1.0rc1": False,
}


@pytest.mark.parametrize("tag", list(EXPECTED))
def test_expect_version_is_read_as_pep_440_reads_it(built: Built, tag: str) -> None:
    report = check([built.wheel, built.sdist], Options(REFERENCE, Version(tag), smoke=False, tools=False))
    assert Version(built.version) == Version(tag) or not EXPECTED[tag]
    if EXPECTED[tag]:
        assert report.passed, [(f.code, f.path, f.message) for f in report.findings]
    else:
        refused_with(report, "G603", None, built.wheel.name)
        refused_with(report, "G603", None, built.sdist.name)


def test_the_engine_holds_nothing_to_a_row_hashed_with_md5(built: Built, tmp_path: Path) -> None:
    """A RECORD hashed with md5 (which the gate refuses, G206, and pip installs with its rows kept): the engine's
    checks of its installed tables and kernels find nothing proven by such a row and say so, where before they hashed
    with whatever the row named and passed (an md5 collision would have passed a changed table as the release's)."""
    wheel = _hashed_with(built, tmp_path / "dist", "md5")
    assert "G206" in {f.code for f in judge(wheel).findings}
    site = _pip_install(wheel, tmp_path / "pip")
    assert ",md5=" in (site / built.dist_info / "RECORD").read_text()
    assert "'md5'" in (tables.installed_tables_problem(site / tables.WHEEL_DIR) or "")
    assert "'md5'" in (stack.installed_kernels_problem(site / "neurobrix") or "")
