"""The release gate on the project's real wheel and sdist: the untouched build passes, every damage is refused.

The build runs once for this module (``python -m build --no-isolation``, through the gate's own
build step); each test damages a copy in its own folder and asserts the check code and the file named.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, project_dists_copy
from gate_fixtures import (
    Built,
    declare_size,
    read_sdist_member,
    read_wheel_member,
    rewrite_sdist,
    rewrite_wheel,
    same_size_change,
)

from gate.archive import WheelArchive
from gate.checker import DEFAULT_TRACKED, Options, check
from gate.checks import Finding, GateError, Limits
from gate.cli import main
from gate.completeness import load_reference
from gate.report import Report
from gate.repository import TreeState, load_repository, read_tree_state
from gate.smoke import install_smoke
from neurobrix import tables
from neurobrix.schema import TrackedFile

pytestmark = pytest.mark.slow

REFERENCE = load_reference(DEFAULT_TRACKED)
TABLE: TrackedFile = REFERENCE.files[-1]  # any tracked table will do; the last one, whichever it is
TRACKED_IN_WHEEL = f"{tables.WHEEL_DIR}/{tables.TRACKED_NAME}"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, project_dists: Path) -> Built:
    """This module's own copy of the session's build of this checkout (conftest.project_dists)."""
    files = project_dists_copy(project_dists, tmp_path_factory.mktemp("gate-build") / "dist")
    return Built(
        wheel=next(p for p in files if p.suffix == ".whl"), sdist=next(p for p in files if p.name.endswith(".tar.gz"))
    )


OPTIONS = Options(REFERENCE, smoke=False)


def judge(*dists: Path, options: Options = OPTIONS) -> Report:
    return check(list(dists), options)


def only(report: Report, code: str) -> list[Finding]:
    return [f for f in report.findings if f.code == code]


def codes(report: Report) -> set[str]:
    return {f.code for f in report.findings}


def refused_with(report: Report, code: str, path: str | None) -> Finding:
    """The report refuses with ``code`` about ``path``; returns that finding."""
    assert not report.passed and report.exit_code == 1
    matching = [f for f in only(report, code) if f.path == path]
    assert matching, f"no {code} about {path}; findings: {report.findings}"
    return matching[0]


# The untouched build


def test_the_untouched_build_passes(built: Built) -> None:
    report = judge(built.wheel, built.sdist)
    assert report.findings == [] and report.passed and report.exit_code == 0
    assert [(d.kind, d.name, d.version) for d in report.dists] == [
        ("wheel", "neurobrix", built.version),
        ("sdist", "neurobrix", built.version),
    ]
    assert report.verdict().startswith("gate: PASSED")


def test_a_folder_holding_exactly_the_build_passes(built: Built) -> None:
    assert judge(built.wheel.parent).findings == []


# Tables in the wheel (G1xx)


def test_a_removed_tracked_table_is_refused(built: Built, tmp_path: Path) -> None:
    wheel = rewrite_wheel(built.wheel, tmp_path, drop=[TABLE.wheel_path])
    report = judge(wheel)
    assert codes(report) == {"G101"}
    refused_with(report, "G101", TABLE.wheel_path)


def test_altered_table_bytes_are_refused_even_with_a_true_record(built: Built, tmp_path: Path) -> None:
    altered = same_size_change(read_wheel_member(built.wheel, TABLE.wheel_path))
    wheel = rewrite_wheel(built.wheel, tmp_path, replace={TABLE.wheel_path: altered}, record=True)
    report = judge(wheel)
    assert codes(report) == {"G103"}
    assert "sha256" in refused_with(report, "G103", TABLE.wheel_path).message


def test_a_table_of_another_size_is_refused(built: Built, tmp_path: Path) -> None:
    longer = read_wheel_member(built.wheel, TABLE.wheel_path) + b"# appended\n"
    report = judge(rewrite_wheel(built.wheel, tmp_path, replace={TABLE.wheel_path: longer}))
    assert codes(report) == {"G102"}
    assert f"says {TABLE.size}" in refused_with(report, "G102", TABLE.wheel_path).message


def test_an_extra_untracked_table_is_refused(built: Built, tmp_path: Path) -> None:
    extra = f"{tables.WHEEL_DIR}/interpreter/untracked_kernel.yaml"
    report = judge(rewrite_wheel(built.wheel, tmp_path, add=[(extra, b"format: 1\n")]))
    assert codes(report) == {"G104"}
    refused_with(report, "G104", extra)


def test_a_stale_tracked_list_inside_the_wheel_is_refused(built: Built, tmp_path: Path) -> None:
    stale = tables.render_tracked([f for f in REFERENCE.files if f != TABLE]).encode()
    report = judge(rewrite_wheel(built.wheel, tmp_path, replace={TRACKED_IN_WHEEL: stale}))
    assert codes(report) == {"G106"}
    assert f"does not list {TABLE.path}" in refused_with(report, "G106", TRACKED_IN_WHEEL).message


def test_a_wheel_without_its_tracked_list_is_refused(built: Built, tmp_path: Path) -> None:
    report = judge(rewrite_wheel(built.wheel, tmp_path, drop=[TRACKED_IN_WHEEL]))
    assert codes(report) == {"G105"}
    refused_with(report, "G105", TRACKED_IN_WHEEL)


def test_the_tracked_list_can_be_given_explicitly(built: Built, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.yaml"
    other.write_text(tables.render_tracked([f for f in REFERENCE.files if f != TABLE]))
    report = judge(built.wheel, options=Options(load_reference(other), smoke=False))
    assert codes(report) == {"G104", "G106"}
    refused_with(report, "G104", TABLE.wheel_path)


# RECORD (G2xx)


def test_a_record_lying_about_a_member_is_refused(built: Built, tmp_path: Path) -> None:
    name = "neurobrix/cli.py"
    changed = same_size_change(read_wheel_member(built.wheel, name))
    report = judge(rewrite_wheel(built.wheel, tmp_path, replace={name: changed}, record=False))
    assert codes(report) == {"G109", "G203"}  # and the file is not the repository's
    refused_with(report, "G203", name)
    refused_with(report, "G109", name)


def test_a_record_lying_about_a_size_is_refused(built: Built, tmp_path: Path) -> None:
    name = "neurobrix/cli.py"
    longer = read_wheel_member(built.wheel, name) + b"\n"
    report = judge(rewrite_wheel(built.wheel, tmp_path, replace={name: longer}, record=False))
    assert codes(report) == {"G109", "G203", "G204"}
    refused_with(report, "G204", name)


def test_a_record_entry_without_its_member_is_refused(built: Built, tmp_path: Path) -> None:
    name = "neurobrix/__main__.py"
    report = judge(rewrite_wheel(built.wheel, tmp_path, drop=[name], record=False))
    assert codes(report) == {"G108", "G205"}  # and the package lacks a file git tracks
    refused_with(report, "G205", name)
    refused_with(report, "G108", name)


def test_a_member_missing_from_record_is_refused(built: Built, tmp_path: Path) -> None:
    name = "neurobrix/planted.py"
    report = judge(rewrite_wheel(built.wheel, tmp_path, add=[(name, b"x = 1\n")], record=False))
    assert codes(report) == {"G107", "G202"}  # and git does not track it
    refused_with(report, "G202", name)


@pytest.mark.parametrize("algorithm", ["md5", "sha1", "sha224"])
def test_a_weak_record_hash_is_refused(built: Built, tmp_path: Path, algorithm: str) -> None:
    """A row with a true digest of a hash weaker than sha256 (mutation round: sha1 allowed beside sha256, sha384 and
    sha512 passed the wheel, every hash true)."""
    record = f"{built.dist_info}/RECORD"
    text = read_wheel_member(built.wheel, record).decode()
    row = next(line for line in text.splitlines() if line.startswith("neurobrix/cli.py,"))
    digest = hashlib.new(algorithm, read_wheel_member(built.wheel, "neurobrix/cli.py")).digest()
    true = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    weak = text.replace(row, f"neurobrix/cli.py,{algorithm}={true},{row.rsplit(',', 1)[1]}", 1).encode()
    report = judge(rewrite_wheel(built.wheel, tmp_path, replace={record: weak}, record=False))
    assert "G206" in codes(report)
    assert algorithm in refused_with(report, "G206", "neurobrix/cli.py").message


def test_a_wheel_without_record_is_refused(built: Built, tmp_path: Path) -> None:
    plain = tmp_path / "plain" / built.wheel.name
    plain.parent.mkdir()
    with zipfile.ZipFile(built.wheel) as src, zipfile.ZipFile(plain, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            if not info.filename.endswith("/RECORD"):
                out.writestr(info, src.read(info))
    report = judge(plain)
    refused_with(report, "G201", f"{built.dist_info}/RECORD")
    assert "G403" in codes(report)  # check-wheel-contents cannot read a wheel without RECORD either


# Member names, types and sizes (G3xx)


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("../escaped.py", "G302"),
        ("neurobrix/../../escaped.py", "G302"),
        ("/etc/absolute.py", "G301"),
        ("neurobrix\\windows.py", "G303"),
    ],
)
def test_unsafe_member_names_are_refused(built: Built, tmp_path: Path, name: str, code: str) -> None:
    report = judge(rewrite_wheel(built.wheel, tmp_path, add=[(name, b"x = 1\n")]))
    refused_with(report, code, name)


def test_a_symlink_member_is_refused_and_never_installed(built: Built, tmp_path: Path) -> None:
    link = zipfile.ZipInfo(f"{tables.WHEEL_DIR}/interpreter/link.yaml")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    wheel = rewrite_wheel(built.wheel, tmp_path, add=[(link, b"/etc/passwd")])
    report = judge(wheel, options=Options(REFERENCE, smoke=True))
    assert "symlink" in refused_with(report, "G304", link.filename).message
    assert [(s.status, s.wheel) for s in report.smoke] == [("skipped", wheel.name)]


def test_a_duplicated_member_is_refused(built: Built, tmp_path: Path) -> None:
    name = "neurobrix/cli.py"
    report = judge(rewrite_wheel(built.wheel, tmp_path, add=[(name, b"print('second copy')\n")]))
    refused_with(report, "G305", name)


def test_members_differing_only_in_case_are_refused(built: Built, tmp_path: Path) -> None:
    report = judge(rewrite_wheel(built.wheel, tmp_path, add=[("neurobrix/CLI.py", b"x = 1\n")]))
    assert "case" in refused_with(report, "G305", "neurobrix/CLI.py").message


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of every zip member the code under test inflates (the gate's reader, or zipfile's in a tool)."""
    import gate.zipstrict

    names: list[str] = []
    original = zipfile.ZipFile.open
    inflate = gate.zipstrict.inflate

    def spy(self: zipfile.ZipFile, name: str | zipfile.ZipInfo, *args: object, **kwargs: object) -> object:
        names.append(name.filename if isinstance(name, zipfile.ZipInfo) else name)
        return original(self, name, *args, **kwargs)  # type: ignore[arg-type]

    def inflate_spy(data: bytes, entry: gate.zipstrict.ZipEntry, budget: int) -> bytes:
        names.append(entry.raw_name.decode())
        return inflate(data, entry, budget)

    monkeypatch.setattr(zipfile.ZipFile, "open", spy)
    monkeypatch.setattr(gate.zipstrict, "inflate", inflate_spy)
    return names


def test_a_member_declaring_a_huge_size_is_refused_without_inflating_it(
    built: Built, tmp_path: Path, opened: list[str]
) -> None:
    name = f"{tables.WHEEL_DIR}/interpreter/bomb.yaml"
    wheel = rewrite_wheel(built.wheel, tmp_path, add=[(name, b"0" * 1000)])
    declare_size(wheel, name, 3 << 30)  # 3 GiB promised by ~20 compressed bytes
    opened.clear()
    report = judge(wheel)
    refused_with(report, "G306", name)
    refused_with(report, "G307", name)
    assert name not in opened


def test_a_highly_compressed_member_is_refused_without_inflating_it(
    built: Built, tmp_path: Path, opened: list[str]
) -> None:
    name = "neurobrix/zeros.py"
    wheel = rewrite_wheel(built.wheel, tmp_path, add=[(name, bytes(4 << 20))])  # 4 MiB of zeros, ~1000x
    opened.clear()
    report = judge(wheel)
    assert "refused without inflating" in refused_with(report, "G307", name).message
    assert name not in opened
    assert "G203" not in codes(report) and "G309" not in codes(report)


def test_a_bomb_is_handed_to_no_tool_that_would_inflate_it(
    built: Built, tmp_path: Path, opened: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import gate.checker

    handed: list[Path] = []  # twine and check-wheel-contents read in processes of their own, where `opened` is blind
    for tool in ("Twine", "WheelContentsCheck"):

        def spy(dists: list[Path], *args: object, _start: type = getattr(gate.checker, tool)) -> object:
            handed.extend(dists)
            return _start(dists, *args)

        monkeypatch.setattr(gate.checker, tool, spy)
    record = f"{built.dist_info}/RECORD"
    wheel = rewrite_wheel(built.wheel, tmp_path)
    declare_size(wheel, record, 3 << 30)  # check-wheel-contents and twine would read RECORD / METADATA
    opened.clear()
    report = judge(wheel)
    refused_with(report, "G306", record)
    assert record not in opened  # the gate did not read it
    assert handed == []  # nor was the wheel handed to a tool (a planted bug handed it over, its findings dropped)
    assert not codes(report) & {"G401", "G402", "G403"}


def test_an_sdist_that_inflates_too_far_is_refused_unread(built: Built, tmp_path: Path) -> None:
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as out:
        info = tarfile.TarInfo(f"{built.root}/zeros.bin")
        info.size = 8 << 20
        out.addfile(info, io.BytesIO(bytes(info.size)))
    bomb = tmp_path / built.sdist.name
    bomb.write_bytes(gzip.compress(tar.getvalue(), mtime=0))
    report = judge(bomb)
    assert "abandoned" in refused_with(report, "G307", None).message
    assert not any(f.code.startswith("G5") for f in report.findings)  # nothing inside was looked at


def test_a_member_with_a_bad_crc_is_refused(built: Built, tmp_path: Path) -> None:
    name = "neurobrix/cli.py"
    wheel = rewrite_wheel(built.wheel, tmp_path)
    data = bytearray(wheel.read_bytes())
    with zipfile.ZipFile(wheel) as z:
        info = z.getinfo(name)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start + 10] ^= 0xFF  # one compressed byte
    wheel.write_bytes(bytes(data))
    report = judge(wheel)
    refused_with(report, "G309", name)


# Metadata (G4xx, G601)


def test_broken_metadata_is_refused_by_twine_and_packaging(built: Built, tmp_path: Path) -> None:
    name = f"{built.dist_info}/METADATA"
    broken = read_wheel_member(built.wheel, name).replace(b"Requires-Python: >=", b"Requires-Python: >=,,", 1)
    report = judge(rewrite_wheel(built.wheel, tmp_path, replace={name: broken}))
    assert codes(report) == {"G401", "G404"}
    assert "requires-python" in refused_with(report, "G401", name).message.lower()
    refused_with(report, "G404", name)


def test_a_description_twine_would_not_render_is_refused(built: Built, tmp_path: Path) -> None:
    name = f"{built.dist_info}/METADATA"
    no_type = b"".join(
        line
        for line in io.BytesIO(read_wheel_member(built.wheel, name))
        if not line.startswith(b"Description-Content-Type:")
    )
    report = judge(rewrite_wheel(built.wheel, tmp_path, replace={name: no_type}))
    assert codes(report) == {"G401", "G406"}  # valid metadata, but not what PyPI would render (twine --strict)
    assert "long_description" in refused_with(report, "G401", name).message
    assert "Description-Content-Type" in refused_with(report, "G406", name).message


def test_check_wheel_contents_findings_are_folded_in(built: Built, tmp_path: Path) -> None:
    report = judge(rewrite_wheel(built.wheel, tmp_path, add=[("stray.py", b"x = 1\n")]))
    assert codes(report) == {"G107", "G402"}  # configured in pyproject.toml: toplevel neurobrix only
    assert "W202" in refused_with(report, "G402", "stray.py").message
    assert "purelib/stray.py" in refused_with(report, "G107", "stray.py").message


def test_a_package_version_other_than_the_wheel_version_is_refused(built: Built, tmp_path: Path) -> None:
    name = "neurobrix/__init__.py"
    text = read_wheel_member(built.wheel, name).decode()
    bumped = text.replace(f'"{built.version}"', '"9.9.9"').encode()
    report = judge(rewrite_wheel(built.wheel, tmp_path, replace={name: bumped}))
    assert codes(report) == {"G109", "G601"}
    assert "9.9.9" in refused_with(report, "G601", name).message


def test_a_wheel_renamed_to_another_version_is_refused(built: Built, tmp_path: Path) -> None:
    renamed = tmp_path / built.wheel.name.replace(built.version, "9.9.9")
    renamed.write_bytes(built.wheel.read_bytes())
    report = judge(renamed)
    refused_with(report, "G601", f"{built.dist_info}/METADATA")


def test_a_wheel_renamed_to_another_project_is_refused(
    built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project's own bytes under another project's file name: every member is the repository's and the metadata
    the backend's, so only the name check sees it (planted, 2026-12-03: the metadata's name not held to the file's,
    and the wheel passed). Since walk-through round 48 the file name's project is held to pyproject.toml's first
    (G604, alone); without that check the metadata's name is still held to the file's (G601)."""
    renamed = tmp_path / built.wheel.name.replace("neurobrix-", "neurobrix_tools-", 1)
    renamed.write_bytes(built.wheel.read_bytes())
    report = judge(renamed)
    assert codes(report) == {"G604"} and "neurobrix-tools" in refused_with(report, "G604", None).message
    monkeypatch.setattr("gate.wheel.another_project", lambda *args: False)
    report = judge(renamed)
    assert "neurobrix-tools" in refused_with(report, "G601", f"{built.dist_info}/METADATA").message


# The sdist (G5xx)


def test_an_sdist_without_tables_is_refused(built: Built, tmp_path: Path) -> None:
    sdist = rewrite_sdist(built.sdist, tmp_path, drop_under=["tables/"])
    report = judge(sdist)
    assert codes(report) == {"G501", "G505"}
    shown = [f for f in report.findings if f.code == "G501" and "more G501 findings" not in f.message]
    for f in REFERENCE.files[: len(shown)]:  # findings are capped per check; the rest are counted
        refused_with(report, "G501", f"{built.root}/tables/{f.path}")
    if len(shown) < len(REFERENCE.files):
        assert any(f"and {len(REFERENCE.files) - len(shown)} more G501 findings" in f.message for f in report.findings)
    refused_with(report, "G505", f"{built.root}/tables/{tables.TRACKED_NAME}")


def test_nothing_is_built_from_an_sdist_with_findings(
    built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gate.sdist

    built_from: list[Path] = []
    build_wheel = gate.sdist.build_wheel

    def spy(source: Path, out: Path) -> Path:
        built_from.append(source)
        return build_wheel(source, out)

    monkeypatch.setattr(gate.sdist, "build_wheel", spy)
    (tmp_path / "dist").mkdir()
    sdist = rewrite_sdist(built.sdist, tmp_path / "dist", drop_under=["tables/"])
    report = judge(built.wheel, sdist)
    assert codes(report) == {"G501", "G505"} and all(f.dist == sdist.name for f in report.findings)
    assert built_from == []  # refused on its own; the wheel is never rebuilt from it
    assert judge(built.wheel, built.sdist).passed and len(built_from) == 1


def test_a_wheel_the_sdist_does_not_rebuild_byte_for_byte_is_refused(built: Built, tmp_path: Path) -> None:
    record = f"{built.dist_info}/RECORD"
    rows = read_wheel_member(built.wheel, record).splitlines(keepends=True)
    path, _, size = rows[0].decode().rstrip("\n").split(",")
    sha512 = base64.urlsafe_b64encode(hashlib.sha512(read_wheel_member(built.wheel, path)).digest()).rstrip(b"=")
    rehashed = f"{path},sha512={sha512.decode()},{size}\n".encode() + b"".join(rows[1:])  # every static check passes
    (tmp_path / "dist").mkdir()
    wheel = rewrite_wheel(built.wheel, tmp_path / "dist", replace={record: rehashed}, record=False)
    assert judge(wheel).passed
    report = judge(wheel, built.sdist)
    assert codes(report) == {"G508"}
    assert "differs" in refused_with(report, "G508", record).message
    assert judge(built.sdist).passed  # alone, the sdist rebuilds a wheel that passes every wheel check


@pytest.mark.parametrize("damage", ["altered", "untracked", "stale list"])
def test_damaged_tables_in_the_sdist_are_refused(built: Built, tmp_path: Path, damage: str) -> None:
    table = f"tables/{TABLE.path}"
    if damage == "altered":
        sdist = rewrite_sdist(
            built.sdist, tmp_path, replace={table: same_size_change(read_sdist_member(built.sdist, table))}
        )
        code, paths = "G503", [table]
    elif damage == "untracked":
        # and one that sorts after every other member (a planted bug left the last name unjudged)
        paths = ["tables/interpreter/untracked_kernel.yaml", "tables/zz_untracked.yaml"]
        sdist = rewrite_sdist(built.sdist, tmp_path, add={p: b"format: 1\n" for p in paths})
        code = "G504"
    else:
        stale = tables.render_tracked([f for f in REFERENCE.files if f != TABLE]).encode()
        sdist = rewrite_sdist(built.sdist, tmp_path, replace={f"tables/{tables.TRACKED_NAME}": stale})
        code, paths = "G506", [f"tables/{tables.TRACKED_NAME}"]
    report = judge(sdist)
    assert codes(report) == {code}
    for path in paths:
        refused_with(report, code, f"{built.root}/{path}")


def test_an_sdist_missing_a_source_of_the_wheel_is_refused(built: Built, tmp_path: Path) -> None:
    sources = ["neurobrix/cli.py", "README.md"]  # the readme: a planted bug left it to the rebuild to fail on
    report = judge(rewrite_sdist(built.sdist, tmp_path, drop=sources))
    assert codes(report) == {"G509"}
    for source in sources:
        assert "missing" in refused_with(report, "G509", f"{built.root}/{source}").message


@pytest.mark.parametrize("damage", ["altered", "untracked"])
def test_an_sdist_file_that_is_not_the_repository_s_is_refused(built: Built, tmp_path: Path, damage: str) -> None:
    if damage == "altered":
        name = "pyproject.toml"
        sdist = rewrite_sdist(built.sdist, tmp_path, replace={name: read_sdist_member(built.sdist, name) + b"\n"})
    else:
        name = "setup.py"
        sdist = rewrite_sdist(built.sdist, tmp_path, add={name: b"import os\n"})
    report = judge(sdist)
    assert codes(report) == {"G509"}
    refused_with(report, "G509", f"{built.root}/{name}")


def test_an_sdist_without_pkg_info_is_refused(built: Built, tmp_path: Path) -> None:
    report = judge(rewrite_sdist(built.sdist, tmp_path, drop=["PKG-INFO"]))
    refused_with(report, "G507", f"{built.root}/PKG-INFO")


# Versions (G6xx)


def test_mismatched_versions_are_refused(built: Built, tmp_path: Path) -> None:
    root = built.root.replace(built.version, "9.9.9")
    pkg_info = read_sdist_member(built.sdist, "PKG-INFO").replace(
        f"Version: {built.version}".encode(), b"Version: 9.9.9", 1
    )
    sdist = rewrite_sdist(built.sdist, tmp_path, replace={"PKG-INFO": pkg_info}, root=root)
    report = judge(built.wheel, sdist)
    assert codes(report) == {"G406", "G602"}  # and PKG-INFO is not the version pyproject.toml declares
    finding = refused_with(report, "G602", None)
    assert finding.dist == sdist.name and "9.9.9" in finding.message and built.wheel.name in finding.message


def test_a_version_other_than_the_expected_one_is_refused(built: Built) -> None:
    from packaging.version import Version

    report = judge(built.wheel, built.sdist, options=Options(REFERENCE, Version("v99.0"), smoke=False))
    assert codes(report) == {"G603"}
    assert {f.dist for f in report.findings} == {built.wheel.name, built.sdist.name}
    assert judge(built.wheel, options=Options(REFERENCE, Version(f"v{built.version}"), smoke=False)).passed


# The upload folder (G0xx)


def test_a_folder_with_a_stray_file_or_no_sdist_is_refused(built: Built, tmp_path: Path) -> None:
    folder = tmp_path / "dist"
    folder.mkdir()
    (folder / built.wheel.name).write_bytes(built.wheel.read_bytes())
    (folder / "notes.txt").write_text("not a dist\n")
    (folder / ".hidden").write_text("dotfiles are not uploaded by dist/*\n")
    report = judge(folder)
    assert codes(report) == {"G001", "G002"}
    refused_with(report, "G001", "notes.txt")
    assert "no sdist" in refused_with(report, "G002", None).message


# The install smoke (G7xx)


def test_the_install_smoke_loads_the_installed_tables(built: Built) -> None:
    report = judge(built.wheel, options=Options(REFERENCE, smoke=True))
    assert report.findings == []
    assert [(s.wheel, s.status) for s in report.smoke] == [(built.wheel.name, "passed")]
    assert f"{len(REFERENCE.files)} tracked files" in report.smoke[0].detail
    assert report.verdict().endswith("install smoke passed")


def test_a_wheel_with_findings_is_never_installed(built: Built, tmp_path: Path) -> None:
    altered = same_size_change(read_wheel_member(built.wheel, TABLE.wheel_path))
    wheel = rewrite_wheel(built.wheel, tmp_path, replace={TABLE.wheel_path: altered})
    report = judge(wheel, options=Options(REFERENCE, smoke=True))
    assert codes(report) == {"G103"}
    assert [s.status for s in report.smoke] == ["skipped"] and "static checks" in report.smoke[0].detail


def test_the_smoke_hashes_the_installed_tables_itself(built: Built, tmp_path: Path) -> None:
    """Run on a wheel the static checks would refuse, to show the smoke's own hashing (the engine is not asked)."""
    altered = same_size_change(read_wheel_member(built.wheel, TABLE.wheel_path))
    wheel = rewrite_wheel(built.wheel, tmp_path, replace={TABLE.wheel_path: altered})
    result = install_smoke(WheelArchive(wheel, Limits()), REFERENCE, load_repository(REPO))
    assert result.status == "failed"
    messages = {f.path: f.message for f in result.findings if f.code == "G704"}
    assert "another size or sha256" in messages[TABLE.wheel_path]


def test_a_wheel_pip_refuses_to_install_is_refused(built: Built, tmp_path: Path) -> None:
    name = f"{built.dist_info}/WHEEL"
    future = read_wheel_member(built.wheel, name).replace(b"Wheel-Version: 1.0", b"Wheel-Version: 9.0")
    wheel = rewrite_wheel(built.wheel, tmp_path, replace={name: future})
    report = judge(wheel, options=Options(REFERENCE, smoke=True))
    assert codes(report) == {"G407"}  # refused before pip would be asked
    assert "Wheel-Version" in refused_with(report, "G407", name).message
    result = install_smoke(WheelArchive(wheel, Limits()), REFERENCE, load_repository(REPO))
    assert [(f.code, f.path) for f in result.findings] == [("G701", None)]
    assert "pip install failed" in result.findings[0].message


# The command line: exit codes, the JSON report, where reports may go


def run_main(argv: list[str], *, allow_dirty: bool = True) -> int:
    """``python -m gate`` in this process. These tests judge dists, not the checkout they run in, so they pass
    --allow-dirty and run on a working tree with uncommitted edits too (the refusal without it is tested below)."""
    try:
        return main([*argv[:1], "--allow-dirty", *argv[1:]] if allow_dirty and argv else argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_cli_exit_codes(built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(["check", "--no-smoke", str(built.wheel), str(built.sdist)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("gate: PASSED")
    damaged = rewrite_wheel(built.wheel, tmp_path, drop=[TABLE.wheel_path])
    assert run_main(["check", "--no-smoke", str(damaged)]) == 1
    out = capsys.readouterr().out
    assert f"G101 tracked table file missing from the wheel\n      {TABLE.wheel_path}:" in out
    assert out.strip().splitlines()[-1].startswith("gate: REFUSED: 1 finding (G101)")
    not_a_wheel = tmp_path / "fake" / built.wheel.name
    not_a_wheel.parent.mkdir()
    not_a_wheel.write_text("hello")
    (tmp_path / "empty").mkdir()
    for argv in (
        ["check", str(tmp_path / "missing.whl")],
        ["check", str(not_a_wheel)],
        ["check", str(tmp_path / "fake" / ".." / "empty")],  # a folder with no dist in it
        ["check", str(REPO / "README.md")],
        ["check", "--tracked", str(tmp_path / "none.yaml"), str(built.wheel)],
        ["check", "--expect-version", "not a version", str(built.wheel)],
        ["check", "--json", str(built.wheel.parent / "report.json"), str(built.wheel)],
        ["check"],
    ):
        assert run_main(argv) == 2, argv
        assert capsys.readouterr().err.strip()
    assert not (built.wheel.parent / "report.json").exists()


def test_cli_json_report(built: Built, tmp_path: Path) -> None:
    (tmp_path / "dist").mkdir()
    damaged = rewrite_wheel(built.wheel, tmp_path / "dist", drop=[TABLE.wheel_path])
    out = tmp_path / "reports" / "gate.json"
    assert run_main(["check", "--no-smoke", "--json", str(out), "--expect-version", built.version, str(damaged)]) == 1
    report = json.loads(out.read_text())
    assert set(report) == {
        "format",
        "verdict",
        "exit_code",
        "reference",
        "expect_version",
        "dists",
        "smoke",
        "findings",
        "repository",
        "error",
    }
    assert (report["format"], report["verdict"], report["exit_code"], report["error"]) == (1, "refused", 1, None)
    assert report["expect_version"] == built.version and report["reference"] == str(DEFAULT_TRACKED)
    assert report["dists"] == [
        {
            "file": damaged.name,
            "path": str(damaged.resolve()),
            "kind": "wheel",
            "name": "neurobrix",
            "version": built.version,
            "sha256": hashlib.sha256(damaged.read_bytes()).hexdigest(),
        }
    ]
    assert report["smoke"] == []
    assert report["repository"] == read_tree_state(REPO).as_json()
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    assert report["repository"]["commit"] == head.stdout.strip()
    assert report["findings"] == [
        {
            "code": "G101",
            "title": "tracked table file missing from the wheel",
            "dist": damaged.name,
            "path": TABLE.wheel_path,
            "message": f"tracked in {tables.TRACKED_NAME} but not in the wheel",
        }
    ]
    assert run_main(["check", "--no-smoke", "--json", str(out), str(built.wheel)]) == 0
    assert json.loads(out.read_text())["verdict"] == "passed"
    assert run_main(["check", "--json", str(out), str(tmp_path / "dist" / "missing.whl")]) == 2
    unusable = json.loads(out.read_text())
    assert (unusable["verdict"], unusable["exit_code"], unusable["findings"]) == ("unusable", 2, [])
    assert "missing.whl" in unusable["error"]


def test_python_m_gate_runs_from_the_source_tree(built: Built) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gate", "check", "--no-smoke", "--allow-dirty", str(built.wheel)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1].startswith("gate: PASSED")


def test_gate_build_builds_checks_and_smokes_the_project(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outdir = tmp_path / "dist"
    report = tmp_path / "gate.json"
    assert run_main(["build", "--outdir", str(outdir), "--json", str(report)]) == 0
    out = capsys.readouterr().out
    assert "with `python -m build --no-isolation`" in out
    data = json.loads(report.read_text())
    assert data["verdict"] == "passed" and [s["status"] for s in data["smoke"]] == ["passed"]
    assert sorted(d["kind"] for d in data["dists"]) == ["sdist", "wheel"]
    assert sorted(p.name for p in outdir.iterdir()) == sorted(d["file"] for d in data["dists"])
    assert run_main(["build", "--outdir", str(outdir)]) == 2  # never into a folder that holds anything
    assert run_main(["build", "--outdir", str(outdir / "new"), "--json", str(outdir / "new" / "r.json")]) == 2


DIRTY = TreeState("0" * 40, ("gate/metadata.py", "neurobrix/cli.py"))


def test_a_working_tree_that_is_not_a_commit_is_judged_only_when_told(
    built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dists are held against the working tree's bytes: on a tree with uncommitted edits, a dist holding them would
    pass. The command line refuses (exit 2) unless --allow-dirty, and the report says what it was judged against."""
    import gate.checker
    import gate.cli

    for module in (gate.cli, gate.checker):
        monkeypatch.setattr(module, "tree_state", lambda root: DIRTY)
    out = tmp_path / "reports" / "gate.json"
    for argv in (["check", "--json", str(out), str(built.wheel)], ["build", "--outdir", str(tmp_path / "dist")]):
        assert run_main(argv, allow_dirty=False) == 2, argv
        error = capsys.readouterr().err
        assert "2 tracked files not as committed: gate/metadata.py, neurobrix/cli.py" in error, error
        assert "--allow-dirty" in error
    assert json.loads(out.read_text())["verdict"] == "unusable" and not (tmp_path / "dist").exists()
    assert run_main(["check", "--no-smoke", "--json", str(out), str(built.wheel)]) == 0
    text = capsys.readouterr().out
    assert f"gate: the repository's working tree: commit {'0' * 40} with 2 tracked files not as committed" in text
    assert "judged against a working tree that is not a commit's" in text.strip().splitlines()[-1]
    assert json.loads(out.read_text())["repository"] == {
        "commit": "0" * 40,
        "clean": False,
        "differs": ["gate/metadata.py", "neurobrix/cli.py"],
    }


@pytest.mark.parametrize("changed", [False, True], ids=["as it was", "changed while judged"])
def test_a_clean_working_tree_needs_no_flag(
    built: Built, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, changed: bool
) -> None:
    """A tree that is a commit's is judged without --allow-dirty; it is read again once judged, and one that changed
    meanwhile passes nothing (exit 2)."""
    import gate.checker
    import gate.cli

    clean = TreeState("1" * 40)
    for module in (gate.cli, gate.checker):
        monkeypatch.setattr(module, "tree_state", lambda root: clean)
    # a commit of fiction: what the dists were judged against is not held to it (gate round 67's check, which
    # tests/test_gate_round67.py holds against real commits)
    monkeypatch.setattr(gate.checker, "judged_otherwise", lambda repo, commit: [])
    monkeypatch.setattr(gate.cli, "read_tree_state", lambda root: DIRTY if changed else clean)
    code = run_main(["check", "--no-smoke", str(built.wheel)], allow_dirty=False)
    out, err = capsys.readouterr()
    if changed:
        assert code == 2 and "changed while the gate judged" in err and "PASSED" not in out, out + err
    else:
        assert code == 0 and f"commit {'1' * 40}, every tracked file as committed" in out
        assert "a working tree that is not a commit's" not in out


def test_unusable_input_raises_gate_error_not_a_finding(tmp_path: Path) -> None:
    truncated = tmp_path / "neurobrix-0.1.0.tar.gz"
    truncated.write_bytes(gzip.compress(b"x" * 10_000, mtime=0)[:40])
    with pytest.raises(GateError, match="truncated"):
        judge(truncated)
