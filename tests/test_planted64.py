"""Planted-bug round 62 (docs/planted-bugs.md): cases for the plants of tests/planted64_plants.py that the tests
guarding their code (tests/test_strict_round59.py, tests/test_walk42.py) let through, in strictness round 59's reader
digest, its 4,300-digit bound and its CUDA driver refusal (neurobrix/tables.py, neurobrix/stack.py), and in
walk-through round 42's early refusal of a name, `check --tables` and the warmup note (neurobrix/cli.py,
conformance/__main__.py, neurobrix/warmup.py).

Each case fails with its plant in place (checked with tests/planted64_driver.py, this file alone) and passes on the
clean code. Nothing is run in a subprocess: the early refusal is compared, in this process, with the command's own
(``before_torch`` answered both ways), and ``before_torch`` is asked with torch taken out of ``sys.modules`` for the
moment of the call.

Outcomes of all 18: see docs/planted-bugs.md, round 62.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import sys

import pytest
import yaml
from conftest import REPO, retrack

from neurobrix import cli, stack, tables
from neurobrix.errors import TablesError

# ---------------------------------------------------------------------------------------------- strictness round 59


def test_the_reader_names_libyamls_version(monkeypatch):
    """r01: a list verified under one libyaml was honoured under another when the name left its version out."""
    _yaml = pytest.importorskip("yaml._yaml")
    monkeypatch.setattr(tables, "SAFE_LOADER", getattr(yaml, "CSafeLoader", object))
    said = tables.record_readers()
    assert said.endswith(f"libyaml {_yaml.get_version_string()}"), said


@pytest.mark.parametrize("sign", ["", "-"])
def test_a_tables_integer_of_4300_digits_is_read_and_one_more_refused(tmp_path, sign):
    """d01, d02: the engine's bound is Python's default, 4,300 digits, the sign not counted (as int() counts): JSON and
    YAML read a number of 4,300 digits and refuse one of 4,301."""
    for digits, read in ((tables.MAX_DIGITS, True), (tables.MAX_DIGITS + 1, False)):
        number = sign + "9" * digits
        for name, text, reader in (
            ("n.json", f'{{"n": {number}}}', tables.read_json),
            ("n.yaml", f"n: {number}\n", tables.read_yaml),
        ):
            path = tmp_path / name
            path.write_text(text, encoding="utf-8")
            if read:
                assert reader(path, name) == {"n": int(number)}, (name, digits)
            else:
                with pytest.raises(TablesError, match=f"integer of {digits} digits"):
                    reader(path, name)


def test_a_record_count_past_a_lowered_python_bound_is_read_in_full(tmp_path):
    """Found in the clean code: the form check bounded a record's count at 4,300 digits, Python's default, but a
    process may lower Python's bound (-X int_max_str_digits=640, PYTHONINTMAXSTRDIGITS=640): a count of 700 digits then
    ended the load in int()'s ValueError, a traceback. It is read in full now, and refused on the line naming it."""
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / "interpreter", root / "interpreter")
    record = root / "interpreter" / "rms_norm.proofs.yaml"
    record.write_text(re.sub(r"candidates_tried: \d+", "candidates_tried: " + "9" * 700, record.read_text(), count=1))
    retrack(root)
    saved = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    tables.clear_cache()
    try:
        with pytest.raises(TablesError) as refused:
            loaded = tables.load(root)
            for kernel in loaded.kernels("interpreter"):
                loaded.index("interpreter", kernel)
    finally:
        sys.set_int_max_str_digits(saved)
        tables.clear_cache()
    assert str(refused.value).startswith(f"{record}:") and "\n" not in str(refused.value), refused.value


def test_a_driver_jit_variable_set_to_anything_but_0_refuses_a_gpu_class(monkeypatch):
    """e01: only 0 is argued harmless (docs/strictness-rounds.md, round 59); how the driver reads another value is not
    the engine's to guess, so any other value is refused."""
    for value in ("2", "yes", "01"):
        monkeypatch.setenv("CUDA_FORCE_PTX_JIT", value)
        assert stack.compiler_overrides().get("CUDA_FORCE_PTX_JIT") == value


# ---------------------------------------------------------------------------------------------- walk-through round 42


@pytest.fixture
def fresh(monkeypatch):
    """This process as a fresh one would be for ``before_torch``: torch out of ``sys.modules`` (put back after)."""
    monkeypatch.delitem(sys.modules, "torch")


def test_before_torch_asks_for_the_commands_modules_and_every_dependency(fresh, monkeypatch):
    """b01: a command's own module imported already means it may have been replaced: no early refusal. b02, b03: a
    dependency missing (or half set up, find_spec's ValueError) is left to the command's import to name."""
    assert cli.before_torch("neurobrix.nosuch_module")
    assert not cli.before_torch("neurobrix.cli")  # (imported: this test's own import)
    real = importlib.util.find_spec

    def missing(name, *args):
        return None if name == "triton" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", missing)
    assert not cli.before_torch("neurobrix.nosuch_module")

    def half(name, *args):
        if name == "hypothesis":
            raise ValueError("hypothesis.__spec__ is None")
        return real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", half)
    assert cli.before_torch("neurobrix.nosuch_module")
    assert not cli.before_torch("neurobrix.nosuch_module", needs=("hypothesis",))


# (command, the folder NEUROBRIX_TABLES names): each refused before the name by what the command checks first, or by
# the name where it checks no table
_ORDERS = [
    (["run", "--model", "nosuch", "--prompt", "hi", "--backend", "torch"], "no tables"),  # b05
    (["run", "--model", "nosuch", "--prompt", "hi", "--top-k", "-1"], None),  # b06
    (["warmup", "--model", "nosuch", "--max-prompt", "0"], None),  # b07
]


@pytest.mark.parametrize(("argv", "folder"), _ORDERS, ids=["torch-backend", "top-k", "max-prompt"])
def test_the_early_refusal_says_what_the_command_says(tmp_path, monkeypatch, capsys, argv, folder):
    """b05: run's tables read before the name whatever the backend; b06: a sampling option other than --temperature
    not left to the command; b07: warmup's --max-prompt not handed to the early refusal. The command answered with the
    early refusal allowed and without it: the same exit code, the same words."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    if folder is None:
        monkeypatch.delenv(tables.ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(tables.ENV_VAR, str(tmp_path / folder))
    said = []
    for early in (True, False):
        monkeypatch.setattr(cli, "before_torch", lambda *modules, needs=(), early=early: early)
        tables.clear_cache()
        capsys.readouterr()
        try:
            code = cli.main(argv)
        except SystemExit as done:
            code = done.code
        said.append((code, capsys.readouterr().err))
    assert said[0] == said[1] and said[0][0] != 0, said


def test_check_tables_relative_home_and_the_variable_given_back(fixture_tables, monkeypatch, capsys):
    """b08: a relative --tables set as given (NEUROBRIX_TABLES refuses a relative path); b10: ~ not expanded; b09:
    the variable set before the command dropped after it instead of given back."""
    from conformance.__main__ import main

    expected = f"no GPU class 'nosuch' in {fixture_tables.resolve()};"
    monkeypatch.chdir(fixture_tables.parent)
    monkeypatch.setenv("HOME", str(fixture_tables.parent))
    before = str(fixture_tables.parent / "elsewhere")
    monkeypatch.setenv(tables.ENV_VAR, before)
    for given in (fixture_tables.name, f"~/{fixture_tables.name}"):
        tables.clear_cache()
        capsys.readouterr()
        assert main(["check", "--class", "nosuch", "--tables", given]) == 2, given
        assert expected in capsys.readouterr().err, given
        assert os.environ.get(tables.ENV_VAR) == before


def test_the_resume_line_names_the_tables_once(fixture_tables, monkeypatch):
    """b11: a check given --tables resumes with --tables (in its words), not NEUROBRIX_TABLES beside it."""
    from conformance.__main__ import _resume_hint

    argv = ["check", "--class", "interpreter", "--tables", str(fixture_tables), "--json", "r.json"]
    args = argparse.Namespace(json="r.json", argv=argv, tables=str(fixture_tables))
    monkeypatch.setenv(tables.ENV_VAR, str(fixture_tables))
    line = _resume_hint(args)
    assert "--tables" in line and f"{tables.ENV_VAR}=" not in line, line
    line = _resume_hint(argparse.Namespace(json="r.json", argv=argv[:3] + argv[5:], tables=None))
    assert f"{tables.ENV_VAR}=" in line, line


def test_the_warmup_notes_verb_agrees():
    """b12: one limit past the context "is", two "are"."""
    from neurobrix.warmup import past_context

    assert " is more than " in (past_context(128, 500, None) or "")
    assert " is more than " in (past_context(128, None, 500) or "")
    assert " are more than " in (past_context(128, 500, 500) or "")
