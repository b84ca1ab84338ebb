"""Walk-through round 30: a newcomer, a contributor certifying a new class and a release engineer following README.md
and CONTRIBUTING.md on a machine without a GPU (docs/walkthroughs.md has the round's paragraph). What they met that
said the wrong thing, each held here (one small kernel launched, in the interpreter)."""

from __future__ import annotations

import shutil

import pytest
from conftest import REPO, retrack
from store_fixtures import config_dict, make_checkpoint

from neurobrix import cli, tables
from neurobrix.errors import NoGPUError, UsageError


def _error_of(argv: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    return int(exit_.value.code), capsys.readouterr().err


def test_an_error_the_engine_lays_out_in_lines_prints_them_as_lines(tmp_path, monkeypatch, capsys):
    """The README promises that a run missing certified settings "stops with the whole list and the certify command".
    Since every error was escaped into one line (strict round 31), the list printed as one line with literal `\\n`
    between the calls, and the certify command a user copies ended a 400-character line; so did the tables'
    mismatch (exit 3), and the first thing a newcomer meets, `neurobrix run` on a CPU without TRITON_INTERPRET
    ("...the Triton interpreter is off.\\n  On a CPU, ..."). Now each line the engine laid out is a line, while a line
    feed a quoted value holds is still written as its escape."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / "interpreter", root / "interpreter")
    for path in (root / "interpreter").glob("silu_mul.*"):
        path.unlink()
    retrack(root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    tables.clear_cache()
    source = make_checkpoint(tmp_path / "src" / "tiny", config=config_dict(), use_transformers=False)
    assert cli.main(["import", str(source)]) == 0

    code, err = _error_of(["run", "--model", "tiny", "--prompt", "hi", "--max-tokens", "2"], capsys)
    assert code == 4, err
    assert "\\n" not in err, err
    lines = err.splitlines()
    assert lines[0].startswith("neurobrix: error: this model cannot run on GPU class interpreter"), err
    calls = [line for line in lines if line.startswith("  silu_mul ")]
    assert calls and lines[-1].strip().startswith("python -m conformance certify --class interpreter"), err

    # the tables' mismatch: one line per file, then what to do
    with (root / "interpreter" / "linear.json").open("a", encoding="utf-8") as handle:
        handle.write("\n")
    tables.clear_cache()
    code, err = _error_of(["tables", "list"], capsys)
    assert code == 3 and "\\n" not in err, err
    assert err.splitlines()[1].strip().startswith(f"{root / 'interpreter' / 'linear.json'}: size"), err
    assert err.splitlines()[-1].startswith("Reinstall neurobrix"), err

    # the engine's own lines, each escaped alike: a line feed inside one stays an escape (one line of output each)
    def refuse(args):
        raise NoGPUError("no GPU found.", "  On a CPU, TRITON_INTERPRET=1.")

    monkeypatch.setattr(cli, "cmd_tables_list", refuse)  # the parser built in main takes it
    code, err = _error_of(["tables", "list"], capsys)
    assert code == 5 and err == "neurobrix: error: no GPU found.\n  On a CPU, TRITON_INTERPRET=1.\n", err

    def quoted(args):
        raise UsageError(f"no model {'evil' + chr(10) + 'neurobrix: imported'}")

    monkeypatch.setattr(cli, "cmd_tables_list", quoted)
    code, err = _error_of(["tables", "list"], capsys)
    assert code == 2 and err.count("\n") == 1 and "evil\\nneurobrix: imported" in err, err


def test_str_of_an_error_in_lines_is_unchanged():
    """A program using NeuroBrix from Python reads ``str(error)``: the lines joined by line feeds, as before."""
    error = NoGPUError("first", "  second")
    assert str(error) == "first\n  second" and error.lines == ("first", "  second")
    single = UsageError("one\nquoted")
    assert str(single) == "one\nquoted" and single.lines == ()


class _Lines:
    """A progress object as check's `_Log` is handed one: what each update says."""

    def __init__(self) -> None:
        self.said: list[str] = []

    def add_task(self, description: str, total: float | None = None, **_: object) -> int:
        return 0

    def update(self, task: int, advance: float = 0, description: str | None = None, **_: object) -> None:
        if description:
            self.said.append(description)


def test_checks_progress_names_an_entrys_dtype_once():
    """CONTRIBUTING's CPU walk-through, `conformance check --kernel silu_mul` in a log: each entry's line read
    `silu_mul fp16 fp16 M=1.., I=1..` (the dtype checked, then the domain's dtypes again). Now the dtype checked, then
    the domain's ranges."""
    from conformance.check import check_class

    progress = _Lines()
    report = check_class("interpreter", ["silu_mul"], {"fp32"}, 1, "ci", progress=progress, jobs=1)
    assert report.passed, report.summary()
    assert progress.said == ["silu_mul fp32 M=1.., I=1.."], progress.said


def test_conformance_bind_help_helps(capsys):
    """`python -m conformance.bind`, the command a record without digests is refused naming (and the history's way of
    binding the shipped records): its `--help` was taken for a tables folder ("error: --help: not a tables folder",
    exit 3). Now `-h` and `--help` print its usage and what it does, exit 0; a wrong count of arguments is still
    exit 2."""
    from conformance import bind

    for flag in ("--help", "-h"):
        assert bind.main([flag]) == 0
        out, err = capsys.readouterr()
        assert out.startswith("usage: python -m conformance.bind TABLES_FOLDER") and "entry's digest" in out, out
        assert not err, err
    assert bind.main([]) == 2 and capsys.readouterr().err.startswith("usage: ")


def test_certify_on_another_machine_names_the_class_as_a_class(tmp_path, capsys):
    """CONTRIBUTING step 4 run where the new class's GPU is not (here, the interpreter): "this machine is not a
    nvidia-b200 ... Run this on a nvidia-b200", the class id read as a noun (left open by two walk-throughs). Now it
    says the machine is not of that GPU class."""
    from conformance.__main__ import main as conformance_main

    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / "interpreter", root / "interpreter")
    (root / "nvidia-b200").mkdir()
    (root / "nvidia-b200" / "class.yaml").write_text(
        "format: 1\nclass: nvidia-b200\ndescription: NVIDIA B200 SXM\nmatch:\n  backend: cuda\n  vendor: nvidia\n"
        "  device_name: NVIDIA B200\n  compute_capability: [10, 0]\n  multiprocessor_count: 148\n",
        encoding="utf-8",
    )
    retrack(root)
    tables.clear_cache()
    argv = ["certify", "--class", "nvidia-b200", "--dtypes", "bf16", "fp16", "--only-missing", "--tables", str(root)]
    capsys.readouterr()
    assert conformance_main(argv) == 2
    err = capsys.readouterr().err
    assert "this machine is not of GPU class nvidia-b200: name 'Triton interpreter (CPU)'" in err, err
    assert "Run this on a machine of that class (NVIDIA B200 SXM)" in err and "a nvidia" not in err, err
