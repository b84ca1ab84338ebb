"""The gate's parts on small synthetic inputs (no build): codes, limits, parsers, unusable input, configuration."""

from __future__ import annotations

import gzip
import io
import random
import re
import zipfile
from pathlib import Path

import pytest
import tomllib
from conftest import REPO

from gate.archive import SdistArchive, WheelArchive, open_archive
from gate.checker import DEFAULT_TRACKED, collect
from gate.checks import Check, GateError, Limits
from gate.completeness import SOURCE_DIR, describe_difference, load_reference
from gate.repository import PACKAGE
from gate.tools import twine_messages
from neurobrix import tables

SMALL = Limits(member_size=1000, total_size=5000, ratio=10, ratio_from=100)


def zip_with(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in members:
            out.writestr(name, data)
    return path


def test_codes_are_stable_unique_and_each_one_is_raised_somewhere() -> None:
    assert all(re.fullmatch(r"G\d{3}", c.name) for c in Check)
    assert len({c.value for c in Check}) == len(Check)
    source = "\n".join(p.read_text() for p in (REPO / "gate").glob("*.py") if p.name != "checks.py")
    unused = [c.name for c in Check if f"Check.{c.name}" not in source]
    assert unused == []


def test_sizes_and_ratios_are_judged_from_the_directory(tmp_path: Path) -> None:
    wheel = WheelArchive(
        zip_with(
            tmp_path / "x.whl",
            [
                ("big.txt", b"0123456789" * 150),  # 1500 bytes > member_size
                ("dense.txt", bytes(900)),  # 900 zeros deflate ~100x
                ("ok.txt", b"fine"),
            ],
        ),
        SMALL,
    )
    found = {(f.code, f.path) for f in wheel.findings}
    assert ("G306", "big.txt") in found and ("G307", "dense.txt") in found
    assert ("G308", None) not in found
    assert wheel.read("big.txt") is None and wheel.read("dense.txt") is None
    assert wheel.read("ok.txt") == b"fine"


def test_the_total_size_is_judged_too(tmp_path: Path) -> None:
    members = [(f"m{i}.txt", random.Random(i).randbytes(768)) for i in range(8)]  # 8 x 768 bytes > 5000
    wheel = WheelArchive(zip_with(tmp_path / "x.whl", members), SMALL)
    assert [f.code for f in wheel.findings] == ["G308"]
    assert wheel.read("m0.txt") is None


def test_an_sdist_stream_is_abandoned_past_the_limits(tmp_path: Path) -> None:
    dense = tmp_path / "dense-1.0.tar.gz"
    dense.write_bytes(gzip.compress(bytes(100_000), mtime=0))
    sdist = SdistArchive(dense, SMALL)
    assert sdist.refused_unread and [f.code for f in sdist.findings] == ["G307"]
    large = tmp_path / "large-1.0.tar.gz"
    large.write_bytes(gzip.compress(random.Random(0).randbytes(10_000), mtime=0))  # incompressible, past total_size
    assert [f.code for f in SdistArchive(large, SMALL).findings] == ["G308"]


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        ("x.whl", b"not a zip", "not a zip archive"),
        ("x.whl", b"", "not a zip archive"),
        ("x-1.0.tar.gz", b"not gzip at all", "not a gzip stream"),
        ("x-1.0.tar.gz", gzip.compress(b"x" * 5000, mtime=0)[:30], "truncated"),
        ("x.zip", b"", "not a wheel"),
    ],
)
def test_input_that_is_not_an_archive_is_unusable(tmp_path: Path, name: str, content: bytes, why: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(GateError, match=why):
        open_archive(path, Limits())


@pytest.mark.parametrize(
    ("content", "code", "why"),
    [
        (gzip.compress(b"x" * 5000, mtime=0), "G311", "not whole 512-byte blocks"),
        (gzip.compress(b"x" * 5120, mtime=0), "G313", "not a ustar header"),
        (gzip.compress(b"", mtime=0) + b"junk after the stream", "G311", "after the first gzip member"),
    ],
    ids=["partial block", "no tar header", "junk after the gzip stream"],
)
def test_a_gzip_stream_that_is_no_plain_tar_is_refused_unread(
    tmp_path: Path, content: bytes, code: str, why: str
) -> None:
    path = tmp_path / "x-1.0.tar.gz"
    path.write_bytes(content)
    sdist = SdistArchive(path, Limits())
    assert sdist.refused_unread and sdist.members == ()
    assert [f.code for f in sdist.findings] == [code] and why in sdist.findings[0].message


def test_concatenated_gzip_members_are_refused(tmp_path: Path) -> None:
    """One stream to Python's gzip and pip, only the first member to uv: read two ways, so refused."""
    import tarfile

    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as out:
        info = tarfile.TarInfo("x-1.0/PKG-INFO")
        info.size = 5
        out.addfile(info, io.BytesIO(b"hello"))
    data = tar.getvalue()
    path = tmp_path / "x-1.0.tar.gz"
    path.write_bytes(gzip.compress(data[:100], mtime=0) + gzip.compress(data[100:], mtime=0))
    sdist = SdistArchive(path, Limits())
    assert [f.code for f in sdist.findings] == ["G311"] and "second member" in sdist.findings[0].message


def test_a_folder_is_collected_as_twine_upload_would_see_it(tmp_path: Path) -> None:
    zip_with(tmp_path / "p-1.0-py3-none-any.whl", [("a", b"")])
    (tmp_path / "p-1.0.tar.gz").write_bytes(b"")
    (tmp_path / ".gitignore").write_text("*\n")  # not matched by dist/*: not uploaded, not judged
    (tmp_path / "sub").mkdir()
    dists, findings = collect([tmp_path, tmp_path / "p-1.0.tar.gz"])
    assert [p.name for p in dists] == ["p-1.0-py3-none-any.whl", "p-1.0.tar.gz"]
    assert [(f.code, f.path) for f in findings] == [("G001", "sub")]


def test_the_reference_list_must_be_usable(tmp_path: Path) -> None:
    assert load_reference(DEFAULT_TRACKED).files == tables.read_tracked(REPO / "tables")
    bad = tmp_path / "TRACKED.yaml"
    bad.write_text("format: 1\nfiles: [")
    with pytest.raises(GateError, match="not valid YAML"):
        load_reference(bad)
    moved = tables.render_tracked(list(tables.read_tracked(REPO / "tables"))).replace(
        f"wheel_path: {tables.WHEEL_DIR}/", "wheel_path: elsewhere/", 1
    )
    bad.write_text(moved)
    with pytest.raises(GateError, match="wheel_path"):
        load_reference(bad)
    with pytest.raises(GateError, match="no tracked list"):
        load_reference(tmp_path / "absent.yaml")


def test_a_differing_list_is_described_entry_by_entry() -> None:
    reference = load_reference(DEFAULT_TRACKED)
    first, *rest = reference.files
    assert describe_difference(tables.render_tracked(rest).encode(), reference, "x") == f"does not list {first.path}"
    assert "not a valid tracked list" in describe_difference(b"format: 2\nfiles: []\n", reference, "x")
    same = reference.data.replace(b"# Written by", b"# Typed by")
    assert "same entries in other bytes" in describe_difference(same, reference, "x")


def test_twine_output_becomes_one_message_per_problem() -> None:
    output = (
        "Checking p-1.0-py3-none-any.whl: \x1b[31mFAILED\x1b[0m\n"
        "ERROR    `long_description` has syntax errors in markup and would not be        \n"
        "         rendered on PyPI.                                                      \n"
        "         line 75: Error: Unexpected indentation.                                \n"
        "WARNING  `long_description_content_type` missing. defaulting to `text/x-rst`.   \n"
    )
    assert twine_messages(output, "p-1.0-py3-none-any.whl") == [
        "ERROR `long_description` has syntax errors in markup and would not be rendered on PyPI. "
        "line 75: Error: Unexpected indentation.",
        "WARNING `long_description_content_type` missing. defaulting to `text/x-rst`.",
    ]
    assert twine_messages("Checking p.whl: ERROR    InvalidDistribution: bad\n", "p.whl") == [
        "ERROR InvalidDistribution: bad"
    ]


def test_pyproject_configures_what_the_gate_runs() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"] == {SOURCE_DIR: tables.WHEEL_DIR}
    assert config["tool"]["check-wheel-contents"] == {"toplevel": ["neurobrix"]}
    assert config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == [PACKAGE]
    dev = " ".join(config["project"]["optional-dependencies"]["dev"])
    for tool in ("twine", "check-wheel-contents", "packaging", "build", "hatchling", "installer"):
        assert re.search(rf"\b{tool}\b", dev), tool


def test_the_readme_main_job_is_the_gate() -> None:
    readme = (REPO / "README.md").read_text()
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)\n```", setup, re.S)
    assert len(commands) == 2
    assert commands[0].endswith("python -m gate build") and "'.[dev]'" in commands[0]
    assert "python -m gate check" in readme.split("## For releases", 1)[1]


@pytest.mark.parametrize(
    ("alias", "original"),
    [
        ("neurobrix/./_tables/x.yaml", "neurobrix/_tables/x.yaml"),
        ("neurobrix//_tables/x.yaml", "neurobrix/_tables/x.yaml"),
        ("neurobrix/_tables./x.yaml", "neurobrix/_tables/x.yaml"),
        ("neurobrix/_tables /x.yaml", "neurobrix/_tables/x.yaml"),
        ("neurobrix/_tables::$INDEX_ALLOCATION/x.yaml", "neurobrix/_tables/x.yaml"),
        ("NeuroBrix/_Tables/X.yaml", "neurobrix/_tables/x.yaml"),
        ("neurobrix/cafe\u0301.py", "neurobrix/caf\u00e9.py"),
        ("neurobrix/_tab\u200bles/x.yaml", "neurobrix/_tables/x.yaml"),
    ],
)
def test_every_alias_of_a_path_has_its_destination_key(alias: str, original: str) -> None:
    from gate.names import destination_key, name_problems

    assert destination_key(alias) == destination_key(original)
    assert name_problems(original) == []
    if alias.lower() != original.lower():  # a case variant is judged by comparing members (G305), not alone
        assert [check.name for check, _ in name_problems(alias)] == ["G310"]


def test_names_that_are_plain_pass_and_short_names_do_not() -> None:
    from gate.names import name_problems

    assert name_problems("neurobrix/ops/rms_norm.py") == []
    assert name_problems("neurobrix-0.1.0.dist-info/", is_dir=True) == []
    assert "8.3 short name" in name_problems("neurobrix/_TABLE~1/x.yaml")[0][1]
    assert "device name" in name_problems("neurobrix/aux.py")[0][1]


def test_yaml_is_bounded_before_it_is_built() -> None:
    from gate import yamlsafe

    assert yamlsafe.load(b"format: 1\nfiles: [{a: 1}]\n", 1000) == {"format": 1, "files": [{"a": 1}]}
    for text, why in [
        (b"a: &x [1]\nb: *x\n", "anchor or alias"),
        (b"[" * 40 + b"]" * 40, "nested more than"),
        (b"x" * 2000, "the limit is"),
        (b"a: [\n", "not valid YAML"),
        (b"!!python/name:os.system x", "not valid YAML"),
    ]:
        with pytest.raises(yamlsafe.UnsafeYAML, match=why):
            yamlsafe.load(text, 1000)


def test_findings_are_capped_per_check_and_dist() -> None:
    from gate.checks import Finding, capped

    many = [Finding(Check.G107, "a.whl", f"m{i}", "x") for i in range(25)]
    other = [Finding(Check.G107, "b.whl", "n", "x"), Finding(Check.G202, "a.whl", "m0", "y")]
    kept = capped(many + other, shown=20)
    assert kept[:20] == many[:20] and other[0] in kept and other[1] in kept
    summary = [f for f in kept if "more" in f.message]
    assert [(f.check, f.dist, f.path) for f in summary] == [(Check.G107, "a.whl", "m20")]
    assert "and 5 more G107 findings" in summary[0].message


def test_a_folder_that_is_no_git_checkout_is_no_usable_repository(tmp_path: Path) -> None:
    from gate.repository import load_repository

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    with pytest.raises(GateError, match="git checkout"):
        load_repository(tmp_path)


def test_the_text_report_escapes_what_could_repaint_a_terminal(tmp_path):
    """Member names and messages come from the archive under check: ANSI escapes, a carriage return or a bidi
    override in them are printed as escapes, so they cannot rewrite the log a reviewer reads."""
    from gate.checks import Finding
    from gate.report import Report

    hostile = "neurobrix/\x1b[2K\rok\u202etxt.py"
    report = Report(tmp_path, None)
    report.findings.append(Finding(Check.G001, "evil.whl", hostile, "bytes \x07 and \x1b]0;title\x07"))
    text = report.render()
    assert not any(ch in text for ch in "\x1b\r\x07\u202e")
    assert "\\x1b[2K\\rok\\u202etxt.py" in text
    assert text.splitlines()[-1].startswith("gate: REFUSED")
