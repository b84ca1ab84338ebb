"""The twenty-eighth round against the release gate: the wheel judged alone, and what pip reads of its .dist-info.

pip 23.2 reads a wheel's metadata files (entry points, RECORD) through its own reader, not by their exact names: every
member under the ``.dist-info/`` folder is keyed by ``PurePosixPath`` of the rest of its name, which drops a trailing
``/`` and a ``./`` component, and a later member wins. A folder entry ``entry_points.txt/`` after the file is read as
an empty entry_points.txt (pip installs no launcher), one ``RECORD/`` after RECORD as an empty RECORD (pip's installed
RECORD lists none of the package's files, so its uninstall leaves them), and a member ``./entry_points.txt`` as the
entry points (pip installs a launcher of its choosing), while ``installer`` and uv read the files by their exact names.
Each is refused already, by the allow-list (G107) and as a name that lands on another member's file (G305) or that
installers collapse (G310); this file holds them by name against pip's own reader, and holds the control: folder
entries above the project's files change nothing pip reads.
"""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest
from gate_fixtures import Built, RawMember, wheel_members, with_true_record
from installer.sources import WheelFile
from pip._internal.metadata import FilesystemWheel, get_wheel_distribution
from test_gate_hostile import built, judge, refused_with, write_wheel

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the module's built wheel and sdist, shared with the hostile corpus

OTHER_SCRIPTS = b"[console_scripts]\nneurobrix-admin = neurobrix.cli:main\n"


def _folder(name: str) -> RawMember:
    return RawMember(name.encode(), b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755)


def _pip_reads(wheel: Path, name: str) -> str:
    """The .dist-info file ``name`` as pip reads it when it installs the wheel ('' for none)."""
    return get_wheel_distribution(FilesystemWheel(str(wheel)), "neurobrix").read_text(name) or ""


def _installer_reads(wheel: Path, name: str) -> str:
    with WheelFile.open(wheel) as source:
        return source.read_dist_info(name)


ALIASES = {  # attack -> (the alias member, the .dist-info file pip reads from it, its bytes, the check naming it)
    "a folder entry after entry_points.txt": ("entry_points.txt/", "entry_points.txt", None, "G305"),
    "a folder entry after RECORD": ("RECORD/", "RECORD", None, "G305"),
    "entry_points.txt spelt with ./ after the file": ("./entry_points.txt", "entry_points.txt", OTHER_SCRIPTS, "G310"),
}


@pytest.mark.parametrize("attack", list(ALIASES))
def test_a_member_pip_reads_as_a_dist_info_file_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    alias, read_as, data, code = ALIASES[attack]
    name = f"{built.dist_info}/{alias}"
    planted = _folder(name) if data is None else RawMember(name.encode(), data)
    members = wheel_members(built.wheel)
    members = [*members, planted] if data is None else with_true_record([*members, planted])
    wheel = write_wheel(built, tmp_path, members)
    own = _installer_reads(wheel, read_as)  # installer (and uv) read the file by its exact name: the project's
    assert own == _installer_reads(built.wheel, read_as) and own
    assert _pip_reads(wheel, read_as) == (data or b"").decode()  # pip reads the planted member instead
    report = judge(wheel)
    refused_with(report, "G107", name, built.wheel.name)
    refused_with(report, code, name, built.wheel.name)


def test_folder_entries_above_the_projects_files_change_nothing_pip_reads(built: Built, tmp_path: Path) -> None:
    members = wheel_members(built.wheel)
    folders = sorted({m.name.decode().rsplit("/", 1)[0] + "/" for m in members if b"/" in m.name})
    wheel = write_wheel(built, tmp_path, [*map(_folder, folders), *members])
    for name in ("entry_points.txt", "RECORD"):
        assert _pip_reads(wheel, name) == _pip_reads(built.wheel, name) == _installer_reads(wheel, name)
    assert judge(wheel).passed
