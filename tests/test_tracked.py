"""The shipped tables/ and tables/TRACKED.yaml agree, and the check would notice if they did not."""

from __future__ import annotations

import shutil

import pytest
import tomllib
from conftest import REPO

from conformance import track
from conformance.__main__ import main as conformance_main
from neurobrix import tables


def test_shipped_tables_are_in_sync_with_the_tracked_list():
    assert track.out_of_sync(REPO / "tables") == []


def test_shipped_tables_load_and_validate():
    loaded = tables.load(REPO / "tables")
    assert {"interpreter", "nvidia-h200"} <= set(loaded.classes)


@pytest.fixture
def copy(tmp_path):
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables", root)
    return root


def test_sync_check_catches_a_missing_file(copy):
    (copy / "interpreter" / "class.yaml").unlink()
    assert any("tracked but missing" in p for p in track.out_of_sync(copy))


def test_sync_check_catches_an_extra_file(copy):
    (copy / "interpreter" / "untracked_kernel.yaml").write_text("format: 1\n")
    assert any(
        "interpreter/untracked_kernel.yaml: present but not in the tracked list" in p for p in track.out_of_sync(copy)
    )


def test_sync_check_catches_changed_bytes(copy):
    path = copy / "nvidia-h200" / "class.yaml"
    path.write_bytes(path.read_bytes().replace(b"132", b"133"))
    assert any("sha256 differs" in p for p in track.out_of_sync(copy))


def test_sync_check_catches_a_hand_edited_list(copy):
    path = copy / "TRACKED.yaml"
    path.write_text(path.read_text().replace("# Written by", "# Edited by hand, written by"))
    assert any("not in the form `track` writes" in p for p in track.out_of_sync(copy))


def test_track_command_rewrites_and_checks(copy, capsys):
    (copy / "interpreter" / "class.yaml").write_text((copy / "interpreter" / "class.yaml").read_text() + "# x\n")
    assert conformance_main(["track", "--check", "--tables", str(copy)]) == 1
    assert "out of sync" in capsys.readouterr().err
    assert conformance_main(["track", "--tables", str(copy)]) == 0
    assert conformance_main(["track", "--check", "--tables", str(copy)]) == 0
    assert tables.load(copy).classes["interpreter"].id == "interpreter"


def test_wheel_path_matches_the_build_configuration():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    force = config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert force == {"tables": tables.WHEEL_DIR}
