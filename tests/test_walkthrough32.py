"""Walk-through round 32: a newcomer, a contributor and a release engineer following README.md, CONTRIBUTING.md and
docs/release-gate.md on a machine without a GPU (docs/walkthroughs.md has the round's paragraph). What they met that
said the wrong thing, each held here (nothing launched)."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest
from conftest import REPO

from conformance import affected, check, workers
from conformance.__main__ import main as conformance_main
from neurobrix import cli_store
from neurobrix.errors import UsageError


class _NoWorkers:
    """Stands in for check's worker pool: records each entry it is handed and passes it, running nothing."""

    handed: list[tuple[str, str]] = []
    shares_devices = False

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def map(self, fn, argv, done=None, limit=None):
        results = []
        for i, (kernel, setting, dtype, *_) in enumerate(argv):
            self.handed.append((kernel, setting.domain.describe()))
            results.append(check.EntryResult(kernel, dtype, setting.domain.describe(), dict(setting.config)))
            if done:
                done(i)
        return results


def _m_range(domain: str) -> tuple[int, int | None]:
    lo, hi = re.search(r"\bM=(\d+)\.\.(\d*)", domain).groups()
    return int(lo), int(hi) if hi else None


def test_check_where_holds_the_shipped_settings_too(monkeypatch):
    """`check --class interpreter --kernel silu_mul --shipped --where M=1:3` checked the class's entries inside M 1..3
    (none: its domain is M 1..) and every other shipped setting whatever its shapes, `silu_mul fp16 M=1..9, I=1..2049`
    among them: --where, "only entries whose domain lies inside this range", held only the class's own entries. It
    now holds the shipped settings by the small shapes they are checked at."""
    _NoWorkers.handed = []
    monkeypatch.setattr(workers, "Workers", _NoWorkers)
    argv = ["check", "--class", "interpreter", "--kernel", "silu_mul", "--shipped", "--profile", "ci"]
    assert conformance_main([*argv, "--where", "M=1:3"]) == 0
    inside = list(_NoWorkers.handed)
    assert inside, "no shipped silu_mul setting checked at rows 1..3: this test needs one"
    for _, domain in inside:
        lo, hi = _m_range(domain)
        assert hi is not None and 1 <= lo <= hi <= 3, inside
    _NoWorkers.handed = []
    assert conformance_main(argv) == 0
    assert len(_NoWorkers.handed) > len(inside)  # without --where, the settings checked at more rows too


def _git(repo, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_affected_base_main_in_a_clone_of_another_branch_names_origin_main(tmp_path):
    """CONTRIBUTING's `python -m conformance affected --base main`, in a checkout made by cloning the branch one works
    on (no local `main`, only `origin/main`), said git's "bad revision 'main...HEAD'" and "(in a workflow, check out
    the whole history: actions/checkout with fetch-depth: 0)", advice for a workflow that does not fit. It now names
    the remote's branch to give instead."""
    source = tmp_path / "source"
    (source / "tables").mkdir(parents=True)
    (source / "README.md").write_text("a\n")
    _git(tmp_path, "init", "-q", "-b", "main", str(source))
    _git(source, "add", ".")
    _git(source, "-c", "user.email=w@x", "-c", "user.name=w", "commit", "-q", "-m", "base")
    _git(source, "checkout", "-q", "-b", "change")
    (source / "neurobrix" / "ops").mkdir(parents=True)
    (source / "neurobrix" / "ops" / "linear.py").write_text("b\n")
    _git(source, "add", ".")
    _git(source, "-c", "user.email=w@x", "-c", "user.name=w", "commit", "-q", "-m", "change")
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", "-b", "change", str(source), str(clone))
    with pytest.raises(UsageError) as refused:
        affected.changed_files("main", clone)
    message = str(refused.value)
    assert "`python -m conformance affected --base origin/main`" in message and "fetch-depth" not in message, message
    assert affected.changed_files("origin/main", clone) == ["neurobrix/ops/linear.py"]
    with pytest.raises(UsageError, match="fetch-depth: 0"):  # a name git knows nowhere: the workflow's advice stays
        affected.changed_files("no-such-ref", clone)


def test_import_warmup_says_why_nothing_compiles_here(monkeypatch, capsys):
    """`neurobrix import FOLDER --warmup` on a CPU without TRITON_INTERPRET said "no GPU of a certified class here, so
    nothing to compile (the Triton interpreter compiles nothing)", though the interpreter was off (left open by round
    31). It now says there is no GPU; with the interpreter on, that the interpreter runs kernels uncompiled."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert cli_store._after_import(argparse.Namespace(warmup=True), SimpleNamespace(name="tiny")) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("--warmup: no GPU here, so nothing to compile") and "interpreter" not in first, first
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert cli_store._after_import(argparse.Namespace(warmup=True), SimpleNamespace(name="tiny")) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("--warmup: the Triton interpreter (TRITON_INTERPRET) runs kernels uncompiled"), first


@pytest.mark.parametrize("round_", [24, 25, 26, 27, 28, 29, 30])
def test_a_planted_driver_without_its_arguments_prints_its_usage(round_, tmp_path):
    """CONTRIBUTING's `python tests/plantedNN_driver.py COPY RESULTS.jsonl ID`, run with --help or an argument short,
    died with an IndexError traceback (rounds 26, 28, 29 and 30's after nothing, round 28's before its copy). Each
    prints its usage now: on stdout with exit 0 for --help, on stderr with exit 2 when COPY or RESULTS is missing."""
    driver = [sys.executable, str(REPO / "tests" / f"planted{round_}_driver.py")]
    shown = subprocess.run([*driver, "--help"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
    assert f"python tests/planted{round_}_driver.py COPY RESULTS.jsonl" in shown.stdout
    short = subprocess.run([*driver, str(tmp_path / "copy")], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert short.returncode == 2 and "Traceback" not in short.stderr, short.stderr
    assert short.stderr.startswith("error: expected COPY RESULTS.jsonl") and not (tmp_path / "copy").exists()


def test_sweep_in_bf16_on_the_interpreter_is_refused_as_certify_refuses_it(monkeypatch, capsys):
    """CONTRIBUTING's smoke test, `python -m conformance sweep --dtypes bf16 fp16`, tried on the interpreter ran every
    kernel in bf16 and printed FAILED for them ("worst err/bound 1.9967"), exit 1, a failure the guide says to report
    as a kernel or bound problem, though it is the interpreter's upstream bf16 bug, for which certify refuses bf16
    there. sweep refuses it the same way now (exit 2), before any kernel runs."""
    ran = []
    monkeypatch.setattr(check, "check_entry", lambda *args, **kwargs: ran.append(args))
    assert conformance_main(["sweep", "--dtypes", "bf16", "fp16", "--kernels", "rms_norm", "--examples", "1"]) == 2
    assert "the Triton interpreter computes bf16 wrongly" in capsys.readouterr().err and ran == []


def test_startup_benchmark_names_a_machine_doctor_refuses_before_timing(monkeypatch):
    """The README's `PYTHONPATH=. python -m benchmarks.startup`, on a CPU without the interpreter, printed the settings
    figure, then ran `import torch` and `neurobrix doctor` in three fresh processes (about 20 s, saying nothing) before
    "neurobrix doctor exited 1 on this machine: the figure needs a ready machine". It asks doctor once first now, and
    names the way out (TRITON_INTERPRET=1 on a CPU, or --skip-doctor: the settings figure alone)."""
    from benchmarks import startup

    started = []

    def fake_run(command, **kwargs):
        started.append(command)
        return subprocess.CompletedProcess(command, 0, stdout="0.25 1\n", stderr="")

    monkeypatch.setattr(startup.subprocess, "run", fake_run)
    with pytest.raises(SystemExit) as refused:
        startup.doctor(5)
    assert len(started) == 1 and "--skip-doctor" in str(refused.value.code), (started, refused.value.code)
