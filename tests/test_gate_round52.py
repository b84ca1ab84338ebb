"""Gate mutation round 52 (tests/gate52_plants.py, applied one at a time by tests/gate52_driver.py).

Where rounds 49-51 added code: gate/report.py's escape of CI runner commands (``shown``, ``_uncommanded``) and
``python -m gate``'s stop line (gate/__init__.py), gate/repository.py's ``_tables_unlisted`` (the commit's tables
against its TRACKED.yaml) and ``_check_build_model`` with ``_flat`` and ``modelled_build`` (``[tool.hatch.build]``, the
backend and a tracked hatch.toml against the gate's model). 37 plants (a comparison inverted, a key skipped, a prefix
test for equality, a case folded, an early return, an escape in one branch only, a list compared as a set, a missing
value taken as matching, a tuple of one name iterated by letter), each run against the round's test file a
contributor would run (49 with its fast cases first, 50, 51 with test_gate_units.py's build cases).

Caught before this round: 20 (s01 only ``##[`` escaped, s02 only spaces trimmed, s03 ``::`` at column 0 only, s05
the escape put at the line's start, s06 ``##`` escaped at the start only, s07 ``shown`` without the runner escape,
i03 control characters printed raw, t05 the set difference inverted, t07 the list named as its own table, t09 an
unlisted table not named, t13 list keys without ``tables/``, m01 backend-path dropped, m05 ``tracked.get`` for
membership, m06 ``("hatch.toml")`` iterated by letter, m07 keys the model lacks skipped, m08 missing keys not named,
m09 empty tables dropped, m11 build-level keys skipped, m12 the key path's prefix lost, m13 pyproject.toml dropped from
the modelled sdist).

Equivalent: 10. c01 (the exit-2 JSON write's error line unescaped: it names only the caller's own ``--json`` path,
checked writable before the run, nothing an archive or a build chooses); i02 (``str.isprintable`` alone: it is false
for every character a terminal or runner obeys, Cc Cf Cs Co Cn Zl Zp and Zs but the space, so only printable letters
and symbols go unescaped, as ``shown`` leaves them, ``##`` still escaped); t01 (a dangling link at the list's path not
named: it cannot be read as the list, so the default run stops, exit 2, and with ``--tracked`` round 42's
``with_reference`` names the difference); t02 (the tables skipped when any path differs: the tree is not clean
already, only detail is lost); t04 (the list read to the limit, not one past: an over-limit list is refused as the
reference, exit 2, and another ``--tracked`` list is named by round 42); t08 (a path already differing read again:
one more note, ``clean`` false either way); t11 (the size test dropped: the sha256 is of every byte read, one past the
size); m03 (the backend's name case-folded: ``Hatchling.build`` does not import (module names are case-sensitive), so
preparing the metadata stops, exit 2); m04 (a missing build-backend taken as hatchling's: ``_declared`` reads
``[build-system] build-backend`` first and stops without it).

Survived and now failing a case below (each shown failing with its plant alone and passing without): s04 (a leading
``::`` written ``\\x3a`` with the second colon dropped: the log named another member), i01 (``##`` escaped in
printable-ASCII names only: ``é##[debug]x.py``, or a tab before ``##[group]``, was the runner's command), t03 (an
executable list, mode 100755, taken as no regular file), t06 (``tables`` tested as a prefix without its slash:
``tables.md`` was an unlisted table), t10 (a table read to its listed size: a byte appended passed clean), t12 (a table
committed as a link read through it: the commit holds no table bytes, the link names them), m02 (any backend named
``hatchling...``: ``hatchling.ouroboros`` passed), m10 (lists compared as sets: a list of tables was an internal error).

Found and fixed: ``_flat`` joined key paths into dotted strings, so a quoted key ``"targets.wheel.packages" =
["neurobrix"]`` in ``[tool.hatch.build]`` and ``[tool.hatch.build.targets.wheel]``'s own ``packages`` naming a second
package were one key, the later kept: the gate found the build modelled while hatchling (which ignores the quoted key,
shown with its own ``WheelBuilder``) packs the second package, round 51's false pass back. Keys are compared by their
path now, and a key holding dots is named quoted (the case below failed before, DID NOT RAISE).

Left open: each plant ran against its round's test file, not the whole corpus; ``_tables_unlisted``'s reading of the
working tree's bytes where the commit's are meant is held by ``differs`` (round 45's hashing), not planted again.
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
