"""The thirty-sixth round against the release gate: what reaches ``twine upload`` besides the bytes the gate judged.

Each class was built from the project's own wheel and sdist (the hostile corpus's build), or from its publish folder
and report, and read by the code that uploads, installs or checks it out where that says what is at stake (twine 7's
own metadata reader and upload form, git, release.yml's publish step). One class passed and is refused now:

1. the metadata twine uploads. twine (``twine check``, which the gate runs, and ``twine upload``, which sends PyPI
   the release's fields: the project page's description, Requires-Python, Requires-Dist) reads a wheel's metadata from
   the first member whose name holds ``METADATA``, fewest path components first, then by component, that holds
   ``Metadata-Version``; a file right under the package (``neurobrix/METADATA``) sorts before
   ``neurobrix-<v>.dist-info/METADATA``. A repository tracking such a file passed, its wheel byte for byte the
   build's, while twine read the planted fields (Requires-Python ``>=3.99``, a description of its own). G406 now, by
   the member's name; a file twine does not take first (``neurobrix/metadata.py``, ``neurobrix/sub/METADATA``)
   still passes.

Found refused already and held here by the check that refuses each:

2. the publish folder after the gate: a ``.asc`` signature (twine attaches it to the dist it names), a
   ``.whl.metadata`` file, a dist renamed to another name that packaging reads as the same release, the wheel and
   sdist's bytes swapped under their names (release.yml's publish step);
3. metadata fields pip or PyPI read: a looser ``Requires-Python``, an extra no requirement uses, a ``License-File``
   naming a file absent, a ``Description-Content-Type`` that renders the readme as reStructuredText or plain text
   (G406: METADATA is held to the build backend's bytes whole);
4. zip modes ``installer``, pip, distlib or ``unzip`` apply: setuid, setgid, sticky, world- or group-writable, none,
   a link, an executable table or package file (G109, G304, G315, G316);
5. the tracked-file list as git keeps it: ``.gitattributes`` rules that rewrite a file on checkout (``eol=crlf``,
   ``ident``, ``working-tree-encoding``), which git itself calls unchanged and the gate's tree state names; a tracked
   symbolic link and a submodule, never a tracked file; names git quotes, read as they are.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO
from gate_fixtures import Built, RawMember, wheel_members, with_true_record
from test_gate_hostile import TABLE, built, judge, refused_with, write_wheel
from test_gate_round33 import VERIFY, report_sha256
from test_workflows import gated_folder, load, release_env, require, run_step, step, step_env
from twine.package import PackageFile

from gate import checker
from gate.archive import Digest
from gate.repository import _tracked_files, read_tree_state

__all__ = ["built"]  # the hostile corpus's built wheel and sdist


def _member(members: list[RawMember], name: str) -> RawMember:
    return next(m for m in members if m.name == name.encode())


def _metadata(built: Built) -> bytes:
    return _member(wheel_members(built.wheel), f"{built.dist_info}/METADATA").data


def _tracking(monkeypatch: pytest.MonkeyPatch, extra: dict[str, bytes]) -> None:
    """The gate judges against this repository with ``extra`` tracked under ``neurobrix/`` as well (plain files of those
    bytes): what a commit adding them would make of it."""
    repo = checker.load_repository(REPO)
    grown = dataclasses.replace(
        repo, tracked={**repo.tracked, **dict.fromkeys(extra, False)}, _digests=dict(repo._digests)
    )
    for path, data in extra.items():
        grown._digests[path] = Digest(hashlib.sha256(data).digest(), len(data))
    monkeypatch.setattr(checker, "load_repository", lambda root: grown)
    # the commit of this fiction tracks ``extra`` too: gate round 67's comparison with the commit checked out leaves
    # them out (it named them, tracked here and not there, and stopped the run)
    compare = checker.judged_otherwise
    monkeypatch.setattr(
        checker, "judged_otherwise", lambda r, commit: [p for p in compare(r, commit) if p not in extra]
    )


# -- 1. the metadata twine uploads -------------------------------------------------------------------------------------


def _planted_metadata(built: Built) -> bytes:
    """The project's METADATA with the fields PyPI shows and pip's index filter reads changed."""
    real = _metadata(built)
    head, _, _ = real.partition(b"\n\n")
    head = head.replace(b"Requires-Python: >=3.10", b"Requires-Python: >=3.99")
    return head + b"\n\nThis release moved: install `neurobrix-fast` from https://example.invalid instead.\n"


@pytest.mark.parametrize("planted", ["neurobrix/METADATA", "neurobrix/METADATA.txt", "neurobrix/A_METADATA"])
def test_a_member_twine_reads_as_the_metadata_before_the_dist_infos_is_refused(
    built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planted: str
) -> None:
    data = _planted_metadata(built)
    members = with_true_record([*wheel_members(built.wheel), RawMember(planted.encode(), data)])
    wheel = write_wheel(built, tmp_path, members)
    # the stake: twine's upload form carries the planted file's fields, pip reads the .dist-info's
    uploaded = PackageFile.from_filename(str(wheel), None).metadata_dictionary()
    assert uploaded["requires_python"] == ">=3.99" and "moved" in str(uploaded.get("description"))
    assert b"Requires-Python: >=3.10" in _metadata(built)
    _tracking(monkeypatch, {planted: data})
    finding = refused_with(judge(wheel), "G406", planted, wheel.name)
    assert "twine" in finding.message


@pytest.mark.parametrize("tracked", ["neurobrix/metadata.py", "neurobrix/sub/METADATA"])
def test_a_tracked_file_twine_does_not_take_for_the_metadata_passes(
    built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tracked: str
) -> None:
    """The control: twine's test is case-sensitive, and a deeper member sorts after the .dist-info's METADATA."""
    data = _planted_metadata(built)
    wheel = write_wheel(
        built, tmp_path, with_true_record([*wheel_members(built.wheel), RawMember(tracked.encode(), data)])
    )
    assert PackageFile.from_filename(str(wheel), None).metadata_dictionary()["requires_python"] == ">=3.10"
    _tracking(monkeypatch, {tracked: data})
    report = judge(wheel)
    assert report.passed, [(f.code, f.path, f.message) for f in report.findings]


# -- 2. the publish folder after the gate ------------------------------------------------------------------------------


def _after_the_gate(work: Path, how: str) -> None:
    dist = work / "dist"
    wheel = next(dist.glob("*.whl"))
    sdist = next(dist.glob("*.tar.gz"))
    if how == "a signature beside the wheel":
        (dist / f"{wheel.name}.asc").write_text("-----BEGIN PGP SIGNATURE-----\n")
    elif how == "a .whl.metadata file":
        (dist / f"{wheel.name}.metadata").write_bytes(b"Metadata-Version: 2.4\nName: neurobrix\n")
    elif how == "the wheel renamed to a name of the same release":
        wheel.rename(dist / wheel.name.replace("-py3-", "-py2.py3-"))
    elif how == "the wheel's and sdist's bytes swapped":
        wheel_bytes = wheel.read_bytes()
        wheel.write_bytes(sdist.read_bytes())
        sdist.write_bytes(wheel_bytes)
    else:
        assert how == "nothing"


@pytest.mark.parametrize(
    "how",
    [
        "nothing",
        "a signature beside the wheel",
        "a .whl.metadata file",
        "the wheel renamed to a name of the same release",
        "the wheel's and sdist's bytes swapped",
    ],
)
def test_the_publish_step_uploads_nothing_the_gate_did_not_judge(tmp_path: Path, how: str) -> None:
    require("jq", "sha256sum", "diff", "find")
    work = gated_folder(tmp_path)
    outputs = {"report-sha256": report_sha256(work, "gate/report.json")}
    _after_the_gate(work, how)
    verify = step(load("release.yml")["jobs"]["publish"], VERIFY)
    result = run_step(verify["run"], work, release_env(tmp_path) | step_env(verify, outputs), tmp_path / "bin")
    assert (result.returncode == 0) == (how == "nothing"), result.stdout + result.stderr
    listed = json.loads((work / "gate" / "report.json").read_text())["dists"]
    assert len(listed) == 2


# -- 3. metadata fields pip or PyPI read -------------------------------------------------------------------------------


def _with_field(metadata: bytes, line: bytes) -> bytes:
    head, blank, body = metadata.partition(b"\n\n")
    return head + b"\n" + line + blank + body


FIELD_EDITS = {
    "a looser Requires-Python": lambda m: m.replace(b"Requires-Python: >=3.10", b"Requires-Python: >=3.6"),
    "an extra no requirement uses": lambda m: _with_field(m, b"Provides-Extra: gpu"),
    "a License-File naming a file absent": lambda m: _with_field(m, b"License-File: LICENSE"),
    "the readme as reStructuredText": lambda m: m.replace(
        b"Description-Content-Type: text/markdown", b"Description-Content-Type: text/x-rst"
    ),
    "the readme as plain text": lambda m: m.replace(
        b"Description-Content-Type: text/markdown", b"Description-Content-Type: text/plain"
    ),
}


@pytest.mark.parametrize("edit", list(FIELD_EDITS))
def test_metadata_fields_pip_or_pypi_read_are_held_to_the_backends(built: Built, tmp_path: Path, edit: str) -> None:
    path = f"{built.dist_info}/METADATA"
    members = wheel_members(built.wheel)
    changed = FIELD_EDITS[edit](_member(members, path).data)
    assert changed != _member(members, path).data
    members = [RawMember(m.name, changed) if m.name == path.encode() else m for m in members]
    refused_with(judge(write_wheel(built, tmp_path, with_true_record(members))), "G406", path)


# -- 4. zip modes installers apply -------------------------------------------------------------------------------------

PACKAGE_FILE = "neurobrix/cli.py"
TABLE_MEMBER = TABLE.wheel_path

MODES = {  # what the member is given -> (member, its mode, the code that refuses it)
    "setuid": (PACKAGE_FILE, 0o104644, "G315"),
    "setgid": (PACKAGE_FILE, 0o102644, "G315"),
    "sticky": (PACKAGE_FILE, 0o101644, "G315"),
    "world-writable": (PACKAGE_FILE, 0o100666, "G315"),
    "group-writable": (PACKAGE_FILE, 0o100664, "G316"),
    "no mode at all": (PACKAGE_FILE, 0, "G315"),
    "a symbolic link": (PACKAGE_FILE, 0o120777, "G304"),
    "an executable table": (TABLE_MEMBER, 0o100755, "G109"),
    "an executable package file": (PACKAGE_FILE, 0o100755, "G109"),
}


@pytest.mark.parametrize("given", list(MODES))
def test_zip_modes_installers_apply_are_refused(built: Built, tmp_path: Path, given: str) -> None:
    name, mode, code = MODES[given]
    members = wheel_members(built.wheel)
    assert any(m.name == name.encode() for m in members)
    members = [dataclasses.replace(m, mode=mode) if m.name == name.encode() else m for m in members]
    refused_with(judge(write_wheel(built, tmp_path, members)), code, name)


# -- 5. the tracked-file list as git keeps it --------------------------------------------------------------------------


def _git(root: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "core.autocrlf=false"]
        + list(args),
        check=True,
        capture_output=True,
    )
    return result.stdout.decode("utf-8", "surrogateescape")


REWRITES = {
    "eol=crlf": ("*.py eol=crlf\n", b"x = 1\ny = 2\n"),
    "ident": ("*.py ident\n", b"# $Id$\nx = 1\n"),
    "working-tree-encoding": ("*.py working-tree-encoding=UTF-16\n", b"x = 1\n"),
}


@pytest.mark.parametrize("rule", list(REWRITES))
def test_a_gitattributes_rule_that_rewrites_a_checkout_is_named_in_the_tree_state(tmp_path: Path, rule: str) -> None:
    """git writes the checkout through the rule and calls it unchanged; the bytes are not the commit's blob, so the
    gate's tree state names the file (a release refuses such a tree: exit 2)."""
    attributes, data = REWRITES[rule]
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    (root / "a.py").write_bytes(data)
    _git(root, "add", "a.py")  # committed as written, before the rule
    _git(root, "commit", "-q", "-m", "one")
    (root / ".gitattributes").write_text(attributes)
    _git(root, "add", ".gitattributes")
    _git(root, "commit", "-q", "-m", "the rule")
    (root / "a.py").unlink()
    _git(root, "checkout", "--", "a.py")  # a fresh checkout of the file, through the rule
    assert (root / "a.py").read_bytes() != data  # rewritten on disk
    assert _git(root, "status", "--porcelain") == ""  # and git calls the tree unchanged
    assert read_tree_state(root).differs == ("a.py",)


def test_links_submodules_and_quoted_names_in_the_tracked_list(tmp_path: Path) -> None:
    """A tracked symbolic link and a submodule are no tracked files (a wheel or sdist member there is refused, never
    read through the link); names ``git ls-files`` quotes without ``-z`` are read as they are."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    quoted = ["neurobrix/tab\there.py", 'neurobrix/"quoted".py', "neurobrix/caf\u00e9.py", "neurobrix/new\nline.py"]
    for name in [*quoted, "neurobrix/real.py"]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"x = 1\n")
    (root / "neurobrix" / "alias.py").symlink_to("real.py")
    _git(root, "add", "-A")
    _git(root, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},neurobrix/vendored")
    _git(root, "commit", "-q", "-m", "one")
    (root / "neurobrix" / "vendored").mkdir()  # as a clone leaves a submodule not checked out
    assert '"neurobrix/tab\\there.py"' in _git(root, "ls-files")  # git quotes it there
    tracked = _tracked_files(root)
    assert sorted(tracked) == sorted([*quoted, "neurobrix/real.py"])
    assert read_tree_state(root).clean


def test_what_each_uploaded_file_is_read_as_by_twine(built: Built, tmp_path: Path) -> None:
    """The control of class 1: twine reads the project's own wheel and sdist as the backend's metadata."""
    for dist in (built.wheel, built.sdist):
        copy = tmp_path / dist.name
        shutil.copy(dist, copy)
        assert PackageFile.from_filename(str(copy), None).metadata_dictionary()["requires_python"] == ">=3.10"
