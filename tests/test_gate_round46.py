"""The forty-sixth round against the release gate: the upload folder as twine sees it. ``twine upload dist/*`` uploads
what the shell's glob gives; twine 7 (its source, ``twine/commands/__init__.py`` and ``twine/package.py``, read) keeps
every ``*.asc`` input as the signature of the dist of that name, every ``*.*.attestation`` as an attestation of each
dist whose name it starts with, and takes every other input for a dist, stopping on one of no format it knows before it
sends anything. Each case is built in a real folder and read by bash's own glob and twine's own grouping code
(``_find_dists``, ``_split_inputs``, ``PackageFile.from_filename``), no network. Found and fixed, the test failing
before:

1. a folder (or a dist) named through a link and ``..`` (``a/../dist``, ``a`` a link into another folder): the system
   resolves ``a/..`` through the link, so the gate judged one folder and twine sends the bytes of the same files; but
   twine reads a wheel's metadata, which it sends with the bytes as the release's fields (the project page's
   description, Requires-Python, Requires-Dist), from ``os.path.normpath`` of the path, which drops ``a/..`` by its
   letters: another folder's wheel of the same name. The gate passed; it now stops (exit 2, one line) on a path whose
   ``..`` names another file to ``normpath`` than to the system.

Pinned, each refused already (G001, or a dist the gate judges and refuses), or shown harmless: beside the dists a
``.asc`` signature and a ``.publish.attestation`` (twine attaches both), a ``.zip``, ``.tar.bz2`` or ``.egg`` dist, a
second wheel of another version or another project, a wheel named with an upper-case extension (twine stops on it), a
subfolder, a link to a dist outside the folder; a hidden ``.asc`` is skipped by bash's glob and the gate alike (twine
looks for no signature beside a dist, only among its inputs: shown harmless). Left open: a shell with ``dotglob`` on
(or ``GLOBIGNORE`` set) globs hidden files, which the gate skips (twine then stops on them, or sends a signature or an
attestation no dist's name matches with nothing: fails closed, as round 33 found).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from test_gate_hostile import built, judge

from gate.checker import collect
from gate.checks import GateError

pytestmark = pytest.mark.slow
__all__ = ["built"]

twine_commands = pytest.importorskip("twine.commands")
twine_package = pytest.importorskip("twine.package")
twine_exceptions = pytest.importorskip("twine.exceptions")


def _globbed(folder: Path, cwd: Path) -> list[str]:
    """What bash gives twine for ``<folder>/*`` (run from ``cwd``), as ``twine upload dist/*`` is run."""
    rel = str(folder)  # as written: relpath would take `a/..` away by its letters, as normpath does
    out = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", f'for f in {rel}/*; do printf "%s\\0" "$f"; done'],
        cwd=cwd,
        capture_output=True,
        check=True,
    ).stdout
    return [n for n in out.decode().split("\0") if n]


def _twine_takes(paths: list[str]) -> tuple[list[str], dict[str, str], dict[str, list[str]], str | None]:
    """twine 7's own grouping of its inputs, and the error it stops on before sending anything (None: it sends)."""
    inputs = twine_commands._split_inputs(twine_commands._find_dists(list(paths)))
    error = None
    for dist in inputs.dists:
        try:
            twine_package.PackageFile.from_filename(dist, None)
        except twine_exceptions.InvalidDistribution as exc:
            error = str(exc)
            break
    return inputs.dists, inputs.signatures, inputs.attestations_by_dist, error


def _release(built, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy2(built.wheel, folder / built.wheel.name)
    shutil.copy2(built.sdist, folder / built.sdist.name)
    return folder


def _rewritten_metadata(wheel: Path, out: Path, old: bytes, new: bytes) -> None:
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith(".dist-info/METADATA"):
                assert old in data
                data = data.replace(old, new)
            dst.writestr(info, data)


# -- 1. a path through a link and `..`: the gate's folder and twine's metadata --------------------------------------


def _link_and_dotdot(built, tmp_path: Path) -> tuple[Path, Path]:
    """``tmp/r/dist`` the release; ``tmp/a`` a link to ``tmp/r/s``, so ``tmp/a/../dist`` is ``tmp/r/dist`` to the
    system and ``tmp/dist`` to ``normpath``, which holds a wheel of the same name whose METADATA says another
    Requires-Python."""
    release = _release(built, tmp_path / "r" / "dist")
    (tmp_path / "r" / "s").mkdir()
    (tmp_path / "a").symlink_to(tmp_path / "r" / "s", target_is_directory=True)
    (tmp_path / "dist").mkdir()
    _rewritten_metadata(
        built.wheel, tmp_path / "dist" / built.wheel.name, b"Requires-Python: ", b"Requires-Python: >=3.99,"
    )
    return release, tmp_path / "a" / ".." / "dist"


def test_twine_sends_one_files_bytes_with_anothers_metadata(built, tmp_path: Path) -> None:
    release, through = _link_and_dotdot(built, tmp_path)
    dists, signatures, attestations, error = _twine_takes(_globbed(through, tmp_path))
    assert error is None and not signatures and not any(attestations.values())
    wheel = next(d for d in dists if d.endswith(".whl"))
    package = twine_package.PackageFile.from_filename(wheel, None)
    sent = package.metadata_dictionary()
    assert package.sha2_digest == _sha256(release / built.wheel.name)  # the judged file's bytes...
    assert sent["requires_python"].startswith(">=3.99")  # ...with the other wheel's fields
    judged = twine_package.PackageFile.from_filename(str(release / built.wheel.name), None).metadata_dictionary()
    assert not judged["requires_python"].startswith(">=3.99")


@pytest.mark.parametrize("named", ["folder", "wheel"])
def test_a_path_through_a_link_and_dotdot_is_refused(built, tmp_path: Path, named: str) -> None:
    _, through = _link_and_dotdot(built, tmp_path)
    argument = through if named == "folder" else through / built.wheel.name
    with pytest.raises(GateError, match=r"`\.\.` after a link: twine would send the bytes of"):
        judge(argument)  # before the fix: passed, the release's own files judged


def test_dotdot_without_a_link_is_one_file_to_both(built, tmp_path: Path) -> None:
    release = _release(built, tmp_path / "dist")
    (tmp_path / "b").mkdir()
    dists, _ = collect([tmp_path / "b" / ".." / "dist"])
    assert sorted(p.name for p in dists) == sorted([built.wheel.name, built.sdist.name])
    assert {Path(p).resolve() for p in dists} == {p.resolve() for p in release.iterdir()}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- 2. what else twine takes from the folder ------------------------------------------------------------------------


def _case(name: str, built, folder: Path, outside: Path) -> None:
    w, s = built.wheel.name, built.sdist.name
    if name == "asc":
        (folder / f"{w}.asc").write_bytes(b"-----BEGIN PGP SIGNATURE-----\n")
    elif name == "attestation":
        (folder / f"{w}.publish.attestation").write_bytes(b"{}")
    elif name == "zip":  # a real zip sdist of the same files, which twine reads and sends
        unpacked = outside / "unpacked"
        shutil.unpack_archive(built.sdist, unpacked, filter="data")
        shutil.make_archive(str(folder / s.removesuffix(".tar.gz")), "zip", unpacked)
    elif name in ("tar.bz2", "egg"):
        shutil.copy2(built.sdist, folder / s.replace(".tar.gz", f".{name}"))
    elif name == "other-version":
        shutil.copy2(built.wheel, folder / w.replace("-0.1.0-", "-0.1.1-"))
    elif name == "other-project":
        shutil.copy2(built.wheel, folder / w.replace("neurobrix-", "neurobrix_extra-"))
    elif name == "upper-case":
        shutil.copy2(built.wheel, folder / w.replace(".whl", ".WHL"))
        (folder / w).unlink()
    elif name == "subfolder":
        (folder / "sub").mkdir()
        shutil.copy2(built.wheel, folder / "sub" / w)
    elif name == "link-outside":
        outside.mkdir()
        shutil.copy2(built.wheel, outside / w)
        (folder / w).unlink()
        (folder / w).symlink_to(outside / w)
    elif name == "hidden-asc":
        (folder / f".{w}.asc").write_bytes(b"-----BEGIN PGP SIGNATURE-----\n")
    else:
        raise AssertionError(name)


CASES = [
    "asc",
    "attestation",
    "zip",
    "tar.bz2",
    "egg",
    "other-version",
    "other-project",
    "upper-case",
    "subfolder",
    "link-outside",
    "hidden-asc",
]


@pytest.mark.parametrize("case", CASES)
def test_the_verdict_covers_what_twine_uploads(built, tmp_path: Path, case: str) -> None:
    """Either the gate refuses the folder, or twine sends exactly the files it judged, with nothing attached."""
    folder = _release(built, tmp_path / "dist")
    _case(case, built, folder, tmp_path / "outside")
    dists, signatures, attestations, error = _twine_takes(_globbed(folder, tmp_path))
    exact = (
        error is None
        and not signatures
        and not any(attestations.values())
        and {Path(d).name for d in dists} == {built.wheel.name, built.sdist.name}
        and all(not Path(d).is_symlink() for d in dists)
    )
    report = judge(folder)
    if exact:  # shown harmless: the gate passes, and twine takes the two files judged
        assert case == "hidden-asc"
        assert report.passed, [(f.code, f.path, f.message) for f in report.findings]
        assert {Path(d.path).name for d in report.dists} == {Path(d).name for d in dists}
    else:
        assert not report.passed and report.exit_code == 1, case
        assert case != "hidden-asc"
