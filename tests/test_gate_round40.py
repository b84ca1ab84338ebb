"""The fortieth round against the release gate: attack classes of an attacker's list that no earlier round's test named,
each dist built from the project's own wheel or sdist, read by the code that installs, validates or builds it (pip
23.2's own ``install_wheel``, ``installer`` and its record validation, importlib.metadata, packaging 26, hashlib, a
``python -c`` frontend), then judged. No dist the gate passes was found, and nothing in ``gate/`` changed; each class is
held here by the check that refuses it (each test fails with that check weakened, as the round's notes in
docs/gate-rounds.md say):

1. a module or start-up hook of another distribution at the wheel's root: ``typing_extensions.py``, PyYAML's
   ``yaml/__init__.py`` (a dependency of this project) and setuptools' ``distutils-precedence.pth``. pip writes each
   over the other distribution's installed file (shown: an installed ``yaml/__init__.py`` replaced), ``installer``
   refuses the wheel (a file already there) (G107);
2. files in the ``.dist-info`` that no build of this project writes and that some reader takes as the project's word:
   a PEP 770 SBOM under ``sboms/`` (read by scanners as the release's components) and setuptools' ``top_level.txt``,
   which importlib.metadata's ``packages_distributions()`` reads before RECORD (shown: ``yaml`` becomes neurobrix's
   import name) (G107);
3. RECORD hashes spelt otherwise: a digest in base64's standard alphabet (``+`` and ``/`` for ``-`` and ``_``), the
   same digest to a decoder, which ``installer``'s record validation refuses and pip never checks (G203); and
   algorithms hashlib and ``installer``'s validation accept outside pip's strong hashes (sha256, sha384, sha512:
   ``sha3_256``, ``blake2b``), or that no hashlib name spells (``SHA-256``) (G206);
4. the import-name fields of core metadata 2.5 (PEP 794), ``Import-Name`` and ``Import-Namespace``, which packaging 26
   parses (an empty ``Import-Name`` says the project has no import name at all), added to the wheel's METADATA or the
   sdist's PKG-INFO (G406);
5. a module at the sdist's root named as the build backend or one of its dependencies (``hatchling``, ``pathspec``;
   ``packaging`` shown): any frontend running the backend with the unpacked sources on ``sys.path`` (``python -c`` in
   that folder, as uv ran its build hooks before uv#1975) imports it instead (G509);
6. an entry point naming a module the project does not ship, or another distribution's (G408).
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from gate_fixtures import Built, RawMember, RawTarMember, install_wheel, raw_tar, sdist_members, wheel_members
from gate_fixtures import with_true_record as true_record
from installer.records import Hash
from packaging.metadata import Metadata, parse_email
from pip._internal.models.scheme import Scheme
from pip._internal.operations.install.wheel import install_wheel as pip_install_wheel
from test_gate_hostile import built, judge, refused_with, write_wheel
from test_gate_round38 import write_sdist

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the hostile corpus's built wheel and sdist

PLANTED = b"PLANTED = True\n"


def _planted_wheel(built: Built, folder: Path, name: str, data: bytes = PLANTED) -> Path:
    return write_wheel(built, folder, true_record([*wheel_members(built.wheel), RawMember(name.encode(), data)]))


def _pip_install(wheel: Path, root: Path) -> Path:
    """``wheel`` installed by pip 23.2's own ``install_wheel`` into ``root/site`` (as round 30 runs it)."""
    scheme = Scheme(
        platlib=str(root / "site"),
        purelib=str(root / "site"),
        headers=str(root / "include"),
        scripts=str(root / "bin"),
        data=str(root),
    )
    pip_install_wheel("neurobrix", str(wheel), scheme, "neurobrix", pycompile=False, warn_script_location=False)
    return root / "site"


# -- 1. another distribution's module or start-up hook at the wheel's root --------------------------------------------

OTHERS = {  # member -> the distribution whose installed file it is
    "typing_extensions.py": "typing_extensions",
    "yaml/__init__.py": "PyYAML (a dependency of this project)",
    "distutils-precedence.pth": "setuptools (a .pth that site runs at every start)",
}


@pytest.mark.parametrize("name", list(OTHERS))
def test_another_distributions_module_at_the_root_is_refused(built: Built, tmp_path: Path, name: str) -> None:
    wheel = _planted_wheel(built, tmp_path, name)
    finding = refused_with(judge(wheel), "G107", name, built.wheel.name)
    assert "outside the package" in finding.message


def test_pip_writes_over_another_distributions_module_and_installer_refuses(built: Built, tmp_path: Path) -> None:
    """What class 1 does: with PyYAML installed, pip leaves the wheel's ``yaml/__init__.py`` in its place (every
    ``import yaml``, the engine's own included, then runs the planted module), ``installer`` stops on the file."""
    wheel = _planted_wheel(built, tmp_path / "dist", "yaml/__init__.py")
    site = tmp_path / "pip" / "site"
    (site / "yaml").mkdir(parents=True)
    (site / "yaml" / "__init__.py").write_bytes(b"# PyYAML's own\n")
    _pip_install(wheel, tmp_path / "pip")
    assert (site / "yaml" / "__init__.py").read_bytes() == PLANTED
    other = tmp_path / "installer"
    (other / "yaml").mkdir(parents=True)
    (other / "yaml" / "__init__.py").write_bytes(b"# PyYAML's own\n")
    with pytest.raises(FileExistsError):
        install_wheel(wheel, other)


# -- 2. .dist-info files no build of this project writes --------------------------------------------------------------

DIST_INFO_FILES = {  # file under the .dist-info -> its bytes
    "sboms/neurobrix.cdx.json": b'{"bomFormat": "CycloneDX", "specVersion": "1.6", "components": []}\n',
    "top_level.txt": b"neurobrix\nyaml\n",
}


@pytest.mark.parametrize("file", list(DIST_INFO_FILES))
def test_a_dist_info_file_no_build_writes_is_refused(built: Built, tmp_path: Path, file: str) -> None:
    name = f"{built.dist_info}/{file}"
    wheel = _planted_wheel(built, tmp_path, name, DIST_INFO_FILES[file])
    refused_with(judge(wheel), "G107", name, built.wheel.name)


def test_importlib_metadata_reads_a_planted_top_level_txt(built: Built, tmp_path: Path) -> None:
    """What a ``top_level.txt`` does once installed (``installer`` installs it as any file): importlib.metadata's
    ``packages_distributions()`` takes the import names it lists before RECORD's, so ``yaml`` is neurobrix's."""
    name = f"{built.dist_info}/top_level.txt"
    site = install_wheel(_planted_wheel(built, tmp_path / "dist", name, DIST_INFO_FILES["top_level.txt"]), tmp_path)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import importlib.metadata as m; "
        "print(sorted(m.packages_distributions().get('yaml', [])))"
    )
    out = subprocess.run([sys.executable, "-I", "-c", code, str(site)], capture_output=True, text=True, check=True)
    assert "neurobrix" in out.stdout


# -- 3. RECORD hashes spelt otherwise ---------------------------------------------------------------------------------


def _record_rows(members: list[RawMember]) -> tuple[RawMember, list[list[str]]]:
    record = next(m for m in members if m.name.endswith(b".dist-info/RECORD"))
    return record, [line.split(",") for line in record.data.decode().splitlines()]


def _with_rows(members: list[RawMember], record: RawMember, rows: list[list[str]]) -> list[RawMember]:
    text = "".join(",".join(row) + "\n" for row in rows)
    return [m for m in members if m is not record] + [RawMember(record.name, text.encode())]


def test_a_digest_in_the_standard_base64_alphabet_is_refused(built: Built, tmp_path: Path) -> None:
    """One digest, two spellings: ``+`` and ``/`` where the wheel's base64 has ``-`` and ``_``. Both decode to the
    file's sha256 (``urlsafe_b64decode`` keeps ``+`` and ``/``); ``installer``'s record validation compares the text and
    refuses the wheel, pip never checks the hashes and installs it."""
    members = wheel_members(built.wheel)
    record, rows = _record_rows(members)
    at = next(i for i, row in enumerate(rows) if set(row[1].partition("=")[2]) & set("-_"))
    path, hashed, _ = rows[at]
    standard = hashed.replace("-", "+").replace("_", "/")
    rows[at][1] = standard
    data = next(m.data for m in members if m.name.decode() == path)
    digest = hashed.partition("=")[2]
    same = base64.urlsafe_b64decode(digest + "=" * (-len(digest) % 4))
    assert base64.urlsafe_b64decode(standard.partition("=")[2] + "=" * (-len(digest) % 4)) == same
    assert same == hashlib.sha256(data).digest()
    assert not Hash.parse(standard).validate(data) and Hash.parse(hashed).validate(data)
    report = judge(write_wheel(built, tmp_path, _with_rows(members, record, rows)))
    assert "says " + standard.partition("=")[2] in refused_with(report, "G203", path, built.wheel.name).message


@pytest.mark.parametrize("algorithm", ["sha3_256", "blake2b", "SHA-256"])
def test_a_record_hash_of_another_algorithm_is_refused(built: Built, tmp_path: Path, algorithm: str) -> None:
    """Every row hashed with ``algorithm``, truly: hashlib and ``installer``'s validation take ``sha3_256`` and
    ``blake2b`` (any name hashlib knows), pip reads every row unchecked; ``SHA-256`` is no hashlib name at all."""
    members = wheel_members(built.wheel)
    record, rows = _record_rows(members)
    data = {m.name.decode(): m.data for m in members}
    function = "sha256" if algorithm == "SHA-256" else algorithm
    for row in rows:
        if row[1]:
            row[1] = f"{algorithm}=" + base64.urlsafe_b64encode(hashlib.new(function, data[row[0]]).digest()).rstrip(
                b"="
            ).decode("ascii")
    if algorithm != "SHA-256":
        assert Hash.parse(rows[0][1]).validate(data[rows[0][0]])
    report = judge(write_wheel(built, tmp_path, _with_rows(members, record, rows)))
    finding = refused_with(report, "G206", rows[0][0], built.wheel.name)
    assert "is not one of sha256" in finding.message


# -- 4. core metadata 2.5's import names (PEP 794) --------------------------------------------------------------------

IMPORT_FIELDS = {  # added field -> packaging's reading (import_names, import_namespaces)
    b"Import-Name: yaml": (["yaml"], None),
    b"Import-Namespace: yaml": (None, ["yaml"]),
    b"Import-Name: ": ([], None),  # "no import name at all"
}


def _with_field(metadata: bytes, field: bytes) -> bytes:
    head, _, description = metadata.partition(b"\n\n")
    return head + b"\n" + field + b"\n\n" + description


@pytest.mark.parametrize("field", list(IMPORT_FIELDS))
def test_import_name_fields_in_metadata_are_refused(built: Built, tmp_path: Path, field: bytes) -> None:
    members = wheel_members(built.wheel)
    name = f"{built.dist_info}/METADATA"
    metadata = next(m for m in members if m.name == name.encode())
    planted = _with_field(metadata.data, field)
    raw, unparsed = parse_email(planted)
    read = Metadata.from_raw(raw, validate=True)
    assert (read.import_names, read.import_namespaces) == IMPORT_FIELDS[field] and not unparsed
    edited = [RawMember(m.name, planted) if m is metadata else m for m in members]
    refused_with(judge(write_wheel(built, tmp_path, true_record(edited))), "G406", name, built.wheel.name)


@pytest.mark.parametrize("field", list(IMPORT_FIELDS))
def test_import_name_fields_in_pkg_info_are_refused(built: Built, tmp_path: Path, field: bytes) -> None:
    members = sdist_members(built.sdist)
    pkg_info = next(m for m in members if m.name == f"{built.root}/PKG-INFO")
    pkg_info.data = _with_field(pkg_info.data, field)
    report = judge(write_sdist(tmp_path / built.sdist.name, raw_tar(members)))
    refused_with(report, "G406", f"{built.root}/PKG-INFO", built.sdist.name)


# -- 5. a module at the sdist's root named as the build backend or its dependency ------------------------------------

SHADOWS = ["hatchling/__init__.py", "pathspec/__init__.py"]


def _shadowed_sdist(built: Built, folder: Path, name: str) -> Path:
    members = [*sdist_members(built.sdist), RawTarMember(f"{built.root}/{name}", PLANTED)]
    folder.mkdir(parents=True, exist_ok=True)
    return write_sdist(folder / built.sdist.name, raw_tar(members))


@pytest.mark.parametrize("name", SHADOWS)
def test_a_module_shadowing_the_build_backend_is_refused(built: Built, tmp_path: Path, name: str) -> None:
    sdist = _shadowed_sdist(built, tmp_path, name)
    finding = refused_with(judge(sdist), "G509", f"{built.root}/{name}", built.sdist.name)
    assert "not a file git tracks" in finding.message


def test_a_frontend_with_the_sources_on_sys_path_imports_the_planted_backend(built: Built, tmp_path: Path) -> None:
    """What class 5 does: ``python -c`` run in the unpacked sdist (the way uv ran the build hooks before uv#1975;
    pip's and build's hook runner keep the folder off ``sys.path``) imports the sdist's ``packaging``, not the
    installed one."""
    sdist = _shadowed_sdist(built, tmp_path / "dist", "packaging/__init__.py")
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    code = "import packaging; print(getattr(packaging, 'PLANTED', False))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path / "unpacked" / built.root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "True"


# -- 6. entry points naming a module the project does not ship --------------------------------------------------------


@pytest.mark.parametrize("target", ["neurobrix_cli:main", "yaml:main"])
def test_an_entry_point_naming_an_unshipped_module_is_refused(built: Built, tmp_path: Path, target: str) -> None:
    members = wheel_members(built.wheel)
    name = f"{built.dist_info}/entry_points.txt"
    entry_points = next(m for m in members if m.name == name.encode())
    assert b"neurobrix.cli:main" in entry_points.data
    edited = [
        RawMember(m.name, m.data.replace(b"neurobrix.cli:main", target.encode())) if m is entry_points else m
        for m in members
    ]
    refused_with(judge(write_wheel(built, tmp_path, true_record(edited))), "G408", name, built.wheel.name)


def test_the_unchanged_dists_pass_as_written_here(built: Built, tmp_path: Path) -> None:
    """The control: the project's wheel and sdist, written back by this file's builders unchanged, pass."""
    wheel = write_wheel(built, tmp_path / "w", true_record(wheel_members(built.wheel)))
    sdist = write_sdist(tmp_path / built.sdist.name, raw_tar(sdist_members(built.sdist)))
    for dist in (wheel, sdist):
        report = judge(dist)
        assert report.passed, [(f.code, f.path, f.message) for f in report.findings]
