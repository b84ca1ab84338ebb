"""Gate mutation round 52 (tests/gate52_plants.py, applied one at a time by tests/gate52_driver.py).

OUTCOMES
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_gate_round45 import _git, base, clone
from test_gate_round49 import runner_commands

from gate.checks import GateError
from gate.report import shown
from gate.repository import _check_build_model, read_tree_state

if sys.version_info >= (3, 11):
    import tomllib
else:  # check-wheel-contents brings tomli there
    import tomli as tomllib

__all__ = ["base", "clone"]  # round 45's git copy of this checkout, and a clone of it per case

REPO = Path(__file__).resolve().parent.parent
LISTED = "tables/TRACKED.yaml"
TABLE = "tables/nvidia-h200/linear.json"
MODELLED = "the gate models (gate/repository.py)"


def _commit(work: Path, message: str) -> None:
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", message)


# ---------------------------------------------------------------------------- round 49: the escape is the text's own


@pytest.mark.parametrize(
    "text", ["::debug::x.py", "  ::group::gate: PASSED", "\u3000::error::y", "a##[debug]b", "##vso[task.complete]x"]
)
def test_the_escaped_line_reads_back_as_the_name(text: str) -> None:
    """Each escape ``shown`` writes stands for the characters it replaces, read back as Python reads ``\\x3a`` and
    ``\\x23``: a name in the log is the archive's name, every character kept (s04 dropped the second colon of a
    leading ``::`` and every test passed: a finding named another member than the archive's)."""
    out = shown(text)
    assert runner_commands(out) == [], out
    assert out.encode("latin-1", "backslashreplace").decode("unicode_escape") == text


# ---------------------------------------------------------------------------- round 49: the stop line, every name

STOP_NAMES = ["\u00e9##[debug]x.py", "x\t##[group]gate: PASSED.py", "x\n##vso[task.complete]y.py"]


@pytest.mark.parametrize("name", STOP_NAMES)
def test_the_stop_line_escapes_the_double_hash_of_an_escaped_name_too(tmp_path: Path, name: str) -> None:
    """A name the stop writes with ``ascii`` escapes (not printable ASCII) holds the runner's command as well: ``##``
    is escaped there too (i01 escaped it in printable ASCII names alone, round 49's four names passing)."""
    top = tmp_path / "top"
    shutil.copytree(REPO / "gate", top / "gate", ignore=shutil.ignore_patterns("__pycache__"))
    (top / name).write_text("raise SystemExit(0)\n")
    result = subprocess.run([sys.executable, "-m", "gate", "--help"], cwd=top, capture_output=True, text=True)
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert runner_commands(result.stderr) == [], result.stderr


# ---------------------------------------------------------------------------- round 50: the commit's tables


def test_an_executable_list_is_the_commits_list(clone: Path) -> None:
    """The list committed with its executable bit (a regular file, mode 100755) is read as the list: t03 took only
    100644 for a file and named every such commit not a release check."""
    (clone / LISTED).chmod(0o755)
    _commit(clone, "the list executable")
    state = read_tree_state(clone)
    assert state.clean, state.differs


def test_a_top_file_named_like_the_tables_folder_is_no_table(clone: Path) -> None:
    """``tables.md`` beside ``tables/`` is no table: t06 tested the prefix ``tables`` without its slash."""
    (clone / "tables.md").write_text("# the tables\n", encoding="utf-8")
    _commit(clone, "a file beside the tables folder")
    state = read_tree_state(clone)
    assert state.clean, state.differs


def test_a_table_with_bytes_after_its_listed_size_is_named(clone: Path) -> None:
    """A table longer than its list entry (a line feed appended, the list not updated): t10 read the listed size
    alone, whose hash is the list's, and the commit was clean while its build packs the longer table."""
    table = clone / TABLE
    table.write_bytes(table.read_bytes() + b"\n")
    _commit(clone, "a byte appended to a table, the list not")
    state = read_tree_state(clone)
    assert not state.clean
    assert [d for d in state.differs if d.startswith(f"{TABLE}:")], state.differs


def test_a_table_that_is_a_link_in_the_commit_is_named(clone: Path, tmp_path: Path) -> None:
    """A table committed as a link to a file outside the checkout with the listed bytes: the commit holds no table
    bytes (whoever builds chooses them by what the link names). t12 read the link's target and the commit was clean."""
    outside = tmp_path / "outside.json"
    outside.write_bytes((clone / TABLE).read_bytes())
    (clone / TABLE).unlink()
    (clone / TABLE).symlink_to(outside)
    _commit(clone, "a table as a link")
    state = read_tree_state(clone)
    assert not state.clean
    assert [d for d in state.differs if d.startswith(f"{TABLE}:")], state.differs


# ---------------------------------------------------------------------------- round 51: the build configuration


def _config() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _readme() -> str:
    return str(_config()["project"]["readme"])


def test_another_hatchling_backend_stops_the_gate() -> None:
    """``hatchling.ouroboros`` is hatchling's other backend (the one hatchling builds itself with): not the one
    modelled. m02 tested the prefix ``hatchling``."""
    config = _config()
    config["build-system"]["build-backend"] = "hatchling.ouroboros"
    with pytest.raises(GateError, match="hatchling.ouroboros"):
        _check_build_model(REPO, config, {}, _readme())


DOTTED = '\n[tool.hatch.build]\n"targets.wheel.packages" = ["neurobrix"]\n'


def test_a_quoted_dotted_key_hides_no_package_hatchling_builds(tmp_path: Path) -> None:
    """The defect this round found: the configuration flattened to dotted strings, so a quoted key
    ``"targets.wheel.packages"`` holding the modelled value and the real ``packages`` naming a second package were one
    key, the later value kept: the gate found the configuration modelled while hatchling (which ignores the quoted
    key, shown with its own builder) packs the second package. Compared by key path now, both are named."""
    from hatchling.builders.wheel import WheelBuilder

    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    before = 'packages = ["neurobrix"]'
    assert text.count(before) == 1
    text = text.replace(before, 'packages = ["neurobrix", "neurobrix_plugins"]') + DOTTED
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(text, encoding="utf-8")
    config = tomllib.loads(text)
    assert WheelBuilder(str(project), config=config).config.packages == ["neurobrix", "neurobrix_plugins"]
    with pytest.raises(GateError) as raised:
        _check_build_model(REPO, config, {}, _readme())
    line = str(raised.value)
    assert "\n" not in line and MODELLED in line
    assert "targets.wheel.packages = ['neurobrix', 'neurobrix_plugins']" in line
    assert f"{json.dumps('targets.wheel.packages')} = ['neurobrix'], which the model lacks" in line


def test_a_list_of_tables_is_named_like_any_other_value() -> None:
    """A build key holding a list of inline tables is a difference named in the one line, not an internal error (m10
    compared lists as sets, which order and repeats could not tell apart, and raised TypeError on a table)."""
    config = _config()
    config["tool"]["hatch"]["build"]["exclude"] = [{"path": "neurobrix/cli.py"}]
    with pytest.raises(GateError) as raised:
        _check_build_model(REPO, config, {}, _readme())
    assert "exclude = [{'path': 'neurobrix/cli.py'}], which the model lacks" in str(raised.value)
