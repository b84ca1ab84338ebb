"""Walk-through round 31: a newcomer, a contributor certifying a new class and a release manager following README.md
and CONTRIBUTING.md on a machine without a GPU (docs/walkthroughs.md has the round's paragraph). What they met that
was a traceback or said the wrong thing, each held here (nothing launched)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO, retrack

from conformance import __main__ as conformance_main
from conformance import bind, mutants
from conformance.affected import KERNEL_PATHS
from neurobrix import cli, tables

# a process whose Python has neither torch nor triton, as the release's build and gate jobs install it (the lock
# alone, then the project with --no-deps): both imports fail, and no distribution of either is installed
_WITHOUT_TORCH = textwrap.dedent(
    """
    import sys
    from importlib import metadata

    sys.modules["torch"] = None  # `import torch` raises ModuleNotFoundError, name 'torch'
    sys.modules["triton"] = None
    real = metadata.version

    def version(name):
        if name in ("torch", "triton"):
            raise metadata.PackageNotFoundError(name)
        return real(name)

    metadata.version = version
    from neurobrix import cli, doctor

    doctor._importable = lambda name: name not in ("torch", "triton")
    sys.exit(cli.main(sys.argv[1:]))
    """
)


def _without_torch(tmp_path, *argv: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NEUROBRIX_HOME": str(tmp_path / "home")}
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_TORCH, *argv], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )


def test_doctor_and_run_without_torch_say_so_in_a_line(tmp_path):
    """In the environment the release's gate jobs install (CONTRIBUTING: "no torch and no triton"), `neurobrix doctor`
    found "torch: not installed" and then died with a ModuleNotFoundError traceback (its kernel-source check imported
    the kernels); `run` and `warmup` did too, and `import` on huggingface_hub. doctor now reports what it can and
    its verdict (exit 1); the others say which dependency is missing in one line (exit 1)."""
    done = _without_torch(tmp_path, "doctor")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert re.search(r"FAIL +torch +not installed", done.stdout) and "verdict: blocked by torch, triton" in done.stdout
    done = _without_torch(tmp_path, "run", "--model", "x", "--prompt", "hi")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("neurobrix: error: torch is not installed") and done.stderr.count("\n") == 1


def test_a_wrong_neurobrix_tables_is_named_not_the_install(tmp_path, monkeypatch, capsys):
    """`NEUROBRIX_TABLES=/some/folder` that holds no tables (a mistyped copy's path) was told "Reinstall neurobrix, or
    in a source checkout run `python -m conformance track`": the install was fine, the variable was wrong."""
    monkeypatch.setenv(tables.ENV_VAR, str(tmp_path))
    tables.clear_cache()
    with pytest.raises(SystemExit) as exit_:
        cli.main(["tables", "list"])
    err = capsys.readouterr().err
    assert exit_.value.code == 3
    assert f"NEUROBRIX_TABLES={tmp_path} names no tables folder" in err and "Reinstall" not in err, err


_DIGEST_LINE = re.compile(r"(?<=\n  proof:\n)    entry: '?[0-9a-f]{16}'?\n")


def test_bind_binds_the_records_without_digests_beside_bound_ones(tmp_path, capsys):
    """The refusal of a record without entry digests says to run `python -m conformance.bind <tables folder>`; on a
    folder where the other records carry their digests (every class certified since 2026-12-05: the shipped ones),
    bind refused the first bound record it met ("not a record certify wrote without entry digests", exit 3) and bound
    nothing. It now leaves bound records as they are and binds the rest; a folder with nothing to bind, and a record
    only partly bound, are still refused, writing nothing."""
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / "interpreter", root / "interpreter")
    record = tables.proofs_path(root, "interpreter", "rms_norm")
    shipped = record.read_text(encoding="utf-8")
    record.write_text(_DIGEST_LINE.sub("", shipped), encoding="utf-8")
    retrack(root)
    tables.clear_cache()
    assert bind.main([str(root)]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out == f"bound {record}\n"
    assert record.read_text(encoding="utf-8") == shipped
    tables.clear_cache()
    assert tables.load(root).index("interpreter", "rms_norm") is not None
    assert bind.main([str(root)]) == 3 and "nothing to bind" in capsys.readouterr().err
    partly = _DIGEST_LINE.sub("", shipped, count=1)
    record.write_text(partly, encoding="utf-8")
    assert bind.main([str(root)]) == 3
    assert "not a record certify wrote without entry digests" in capsys.readouterr().err
    assert record.read_text(encoding="utf-8") == partly


def test_affected_help_names_every_path_that_affects_every_class(capsys):
    """`conformance affected --help` listed the paths whose change affects every GPU class without
    neurobrix/dtypes.py, which CONTRIBUTING, the GPU workflow's paths and the command itself include."""
    with pytest.raises(SystemExit):
        conformance_main.main(["affected", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert all(path in shown for path in KERNEL_PATHS), shown


def test_mutants_list_keeps_its_columns(capsys):
    """`conformance mutants --list` padded the bug class to 26 characters; the longest ones ("state not reset between
    launches", 32) pushed their description out of its column."""
    assert conformance_main.main(["mutants", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(mutants.MUTANTS)
    starts = {line.index(("fast " if m.fast else "") + m.description) for line, m in zip(lines, mutants.MUTANTS)}
    assert len(starts) == 1, sorted(starts)


def test_an_interrupted_run_ends_its_text_before_the_error(monkeypatch, capsys):
    """Ctrl-C while `run` streamed its text printed "neurobrix: error: interrupted" on the same terminal line as the
    text (`...the kingneurobrix: error: interrupted`): the text now ends its line first."""
    from neurobrix import run as run_module

    def interrupted(opts, write=None, notice=None):
        (write or sys.stdout.write)("Once upon a time the king")
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "run", interrupted)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--model", "tiny", "--prompt", "hello"])
    captured = capsys.readouterr()
    assert exit_.value.code == 130
    assert captured.out == "Once upon a time the king\n" and captured.err == "neurobrix: error: interrupted\n"
