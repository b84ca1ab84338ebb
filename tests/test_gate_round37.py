"""Gate mutation round 37: bugs planted one at a time in the gate's own code and in release.yml's verify step
(tests/gate37_plants.py, run by tests/gate37_driver.py), where the earlier mutation rounds planted least. Each case
below is a hostile dist built from the project's own build (the hostile corpus's), a metadata file, a tree state or a
report that passed with one planted bug and is refused (or named) without it; the round's outcome for every plant (C
caught, E survived and equivalent, S+ survived and now fails a case here):

wheel.py     T1 a folder whose name holds METADATA no longer twine's candidate E (a member before
  ``<dist-info>/METADATA`` has at most two components, so such a folder is a top folder, G107 already) | T2 members
  sorted by their whole name C | T3 unsorted C | T4 only a name of exactly METADATA C | W1 a row with a size and no
  hash taken for an unhashed one C
metadata.py  M1 a CR before CR LF not a lone CR E (any byte not the backend's is G406) | M2 DEL allowed C | M3 the
  fields' line ends unread C | M4 the description compared stripped C | M5 the parse bound 20 times the backend's
  bytes S+ | M6 the file name's version unread C | M7 the canonical file name compared case-blind C | M8 entry
  points compared stripped C (tests/test_gate_planted29.py)
names.py     N1 U+2029 not a line separator S+ | N2 '|' allowed C | N3 a device name before the last dot only C | N4
  NFD taken for NFC C | N5 five format characters only S+ | N6 no upper-casing C | N7 C1 controls allowed C | N8 a
  trailing space kept C
layout.py    L1 a folder entry matched without its slash S+ | L2 the tables' folder matched without its slash S+ | L3
  package files compared by size C
sdist.py     S1 world-writable allowed C | S2 every tracked file shipped C | S3 PKG-INFO's executable bit unread C |
  S4 the wheel's extra folder entries unread in the rebuild's comparison C | S5 the top folder matched without its
  slash C
completeness K1 the tracked list compared stripped S+ | K2 only .yaml files untracked S+
report.py    R1 U+2028 and U+2029 printed C | R2 lines of 20,000 characters C | R3 the verdict's note only for a
  tree with no commit S+
repository   P1 the executable bit unread C | P2 staged changes unread C | P3 no commit taken for clean C | P4 only
  GIT_DIR taken out of git's environment S+
checker.py   C1 links in a folder judged as dists C | C2 a named link judged by its target C | C3 an entry that
  changed kind C | C4 G003 by size only C
cli.py       X1 the tree read again compared by its commit only S+ | X2 any commit judged without --allow-dirty C
release.yml  Y1 the report's `clean` unread C | Y2 the smoke's statuses unread C | Y3 the gate artifact's other
  files unread C | Y4 links in dist/ unlisted C | Y5 sha256sum without --strict E (the one line checked is the one
  the step writes, from the gate job's own output: a hash of any other form fails without --strict too)
"""

from __future__ import annotations

import argparse
import stat
import zipfile
from pathlib import Path

import pytest
from conftest import REPO
from gate_fixtures import Built, RawMember, raw_zip, wheel_members, with_true_record
from test_gate_hostile import TABLE, built, judge, refused_with, write_wheel
from test_gate_round36 import _tracking

from gate import cli
from gate.archive import WheelArchive
from gate.checker import DEFAULT_TRACKED, Options
from gate.checks import GateError, Limits
from gate.completeness import load_reference
from gate.metadata import Identity, check_metadata
from gate.report import DistSummary, Report
from gate.repository import TreeState, _tracked_files, load_repository, read_tree_state
from neurobrix.tables import TRACKED_NAME, WHEEL_DIR

pytestmark = pytest.mark.slow

__all__ = ["built"]  # the hostile corpus's built wheel and sdist


def _wheel(built: Built, tmp_path: Path, *added: RawMember, replace: dict[str, bytes] | None = None) -> Path:
    """The project's wheel with ``added`` members and ``replace``'s bytes, its RECORD telling the truth."""
    members = [RawMember(m.name, (replace or {}).get(m.name.decode(), m.data)) for m in wheel_members(built.wheel)]
    return write_wheel(built, tmp_path, with_true_record([*members, *added]))


def _findings(report) -> list[tuple[str, str | None, str]]:  # type: ignore[no-untyped-def]
    return [(f.code, f.path, f.message) for f in report.findings]


# -- names a tracked file may have ------------------------------------------------------------------------------------

NAMES = {  # a file a commit adds under the package -> the check that refuses its name
    "a paragraph separator": ("neurobrix/a\u2029b.py", "G303"),
    "a right-to-left override": ("neurobrix/\u202eyp.txt", "G310"),
    "a zero-width no-break space": ("neurobrix/\ufeffops.py", "G310"),
}


@pytest.mark.parametrize("what", list(NAMES))
def test_a_tracked_file_whose_name_installs_otherwise_is_refused(
    built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    """A commit adding such a file: the wheel carries it byte for byte and RECORD tells the truth, so only the name
    check stands between it and a pass (pip splits a RECORD row at U+2029, macOS's HFS+ drops U+202E and U+FEFF)."""
    name, code = NAMES[what]
    data = b"# a data file\n"
    wheel = _wheel(built, tmp_path, RawMember(name.encode(), data, flags=0x800))
    _tracking(monkeypatch, {name: data})
    refused_with(judge(wheel), code, name)


# -- the layout: folder entries and the tables' prefix -----------------------------------------------------------------


def test_a_folder_entry_whose_name_begins_a_shipped_folders_is_refused(built: Built, tmp_path: Path) -> None:
    """Planted: a folder entry allowed when its name without the slash begins an allowed name (``neurobrix/op/``
    for ``neurobrix/ops/``): a folder no build writes, which `unzip` creates, passed in a wheel judged alone."""
    folder = RawMember(b"neurobrix/op/", b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755)
    refused_with(judge(_wheel(built, tmp_path, folder)), "G107", "neurobrix/op/")


def test_an_untracked_file_beside_the_tables_folder_is_refused(built: Built, tmp_path: Path) -> None:
    """Planted: a member under ``neurobrix/_tables`` read as one under the tables' folder by its name's prefix alone:
    ``neurobrix/_tables.py`` (a module beside the tables' folder, importable as ``neurobrix._tables``) was neither
    G107 nor judged by the tables' checks (their folder is ``neurobrix/_tables/``)."""
    name = f"{WHEEL_DIR}.py"
    refused_with(judge(_wheel(built, tmp_path, RawMember(name.encode(), b"import os\n"))), "G107", name)


# -- the tables' list and the tables --------------------------------------------------------------------------------


def test_a_tracked_list_with_white_space_added_is_refused(built: Built, tmp_path: Path) -> None:
    """Planted: the wheel's tracked list compared stripped: a blank line after it passed, bytes no reader reads."""
    name = f"{WHEEL_DIR}/{TRACKED_NAME}"
    listed = next(m.data for m in wheel_members(built.wheel) if m.name == name.encode())
    refused_with(judge(_wheel(built, tmp_path, replace={name: listed + b"\n"})), "G106", name)


def test_an_untracked_table_of_another_kind_than_yaml_is_refused(built: Built, tmp_path: Path) -> None:
    """Planted: only .yaml files under the tables taken for untracked tables (tests/test_gate.py adds a .yaml one);
    the tables are .json files too, and an untracked .json one passed."""
    name = f"{TABLE.wheel_path.rsplit('/', 1)[0]}/untracked_kernel.json"
    refused_with(judge(_wheel(built, tmp_path, RawMember(name.encode(), b"{}\n"))), "G104", name)


# -- the tree state and the command line -----------------------------------------------------------------------------


def test_the_tracked_files_are_the_checkouts_whatever_git_is_told_by_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planted: only GIT_DIR taken out of git's environment. A git hook runs with GIT_INDEX_FILE set (a commit's
    hooks, to a temporary index): the gate then read another index's tracked files and tree state."""
    expected, state = _tracked_files(REPO), read_tree_state(REPO)
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "another-index"))
    assert _tracked_files(REPO) == expected
    assert read_tree_state(REPO) == state


def test_a_tree_that_changed_while_judged_fails_the_run_though_its_commit_did_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Planted: the tree read again after judging compared by its commit alone: a tracked file edited meanwhile (the
    same commit checked out) left the report naming the tree as it was read first."""
    state = read_tree_state(REPO)
    edited = TreeState(state.commit, tuple(sorted({*state.differs, "neurobrix/cli.py"})))
    report = Report(Path("tracked.yaml"), None, repository=state)
    monkeypatch.setattr(cli, "read_tree_state", lambda root: edited)
    with pytest.raises(GateError, match="changed while the gate judged"):
        cli._finish(argparse.Namespace(allow_dirty=False, json=None), report, Options(load_reference(DEFAULT_TRACKED)))


@pytest.mark.parametrize("differs", [(), ("neurobrix/cli.py",)], ids=["a commit's tree", "a tracked file edited"])
def test_a_pass_against_a_tree_that_is_no_commits_says_it_is_no_release_check(differs: tuple[str, ...]) -> None:
    """Planted: the verdict's note kept for a tree with no commit alone: a pass judged (with --allow-dirty) against a
    commit with a tracked file edited printed the verdict of a release check, `gate: PASSED: ...` and nothing after."""
    report = Report(Path("tracked.yaml"), None, repository=TreeState("0" * 40, differs))
    report.dists.append(DistSummary("neurobrix-0.1.0.tar.gz", "dist/x", "sdist", "neurobrix", "0.1.0", "0" * 64))
    verdict = report.render().splitlines()[-1]
    assert verdict.startswith("gate: PASSED: ") and ("not a release check" in verdict) == bool(differs), verdict


# -- core metadata past its bound ------------------------------------------------------------------------------------


def test_metadata_of_three_times_the_backends_bytes_is_refused_unparsed(tmp_path: Path) -> None:
    """Planted: the bound on parsed metadata ten times looser (20 times the backend's bytes and 64 KiB). The bound is
    twice the backend's bytes and 64 KiB (gate round 19): room for any edit the other checks name, while packaging's
    validation of a requirement of many specifiers runs for seconds per hundred kilobytes, and twine, handed the same
    file, is not waited on. Three times the backend's bytes of such a requirement must be refused by its size."""
    declared = load_repository(REPO).declared
    head, blank, body = declared.metadata.partition(b"\n\n")
    specifiers = b",".join(b">=1.%d" % i for i in range(len(declared.metadata) // 2))
    data = head + b"\nRequires-Dist: a" + specifiers + blank + body
    assert len(data) >= 3 * len(declared.metadata) + 64 * 1024
    path = f"{declared.dist_info}/METADATA"
    wheel = tmp_path / "x.whl"
    wheel.write_bytes(raw_zip([RawMember(path.encode(), data)]))
    archive = WheelArchive(wheel, Limits())
    check_metadata(archive, path, Identity(None, None), declared)
    assert [(f.code, "not parsed" in f.message) for f in archive.findings] == [("G406", True)]
    assert archive.tools_skipped
