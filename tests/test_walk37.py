"""Walk-through round 37: a pip user, a contributor and a reader of the engine's own Triton cache.

Followed README.md and CONTRIBUTING.md on the 2-core machine without a GPU: the wheel built from a fresh clone,
installed into a fresh virtual environment beside torch 2.13.0 and triton 3.9.0, every user command and its
``--help`` on the interpreter class, the user's mistakes (a typo'd model, bad option values, missing files, Ctrl-C
and SIGTERM mid-run and mid-warmup: each one line, its documented exit status); CONTRIBUTING's CPU certify recipe on
a copy of the tables (``--kernels``, ``--where``, ``--only-missing``, ``check``, ``track``); and what ``doctor``,
``warmup`` and the statistics line say about the engine's own cache of compiled kernels
(``$NEUROBRIX_HOME/triton-cache``, walk-through 36).

Found and fixed (each test failed before its fix): a warmup stopped by Ctrl-C or SIGTERM on the interpreter class
said "what was compiled stays in Triton's cache; the same command again compiles only the rest", where its own
report, had it finished, says the interpreter compiles nothing (and no cache folder is made): it now says so; on a GPU
class the line names the folder the binaries stay in, as the finished report does. ``python -m conformance track``
ignored NEUROBRIX_TABLES (certify, rank, reformat and sweep follow it): with a copy named there it checked and
rewrote the checkout's list; it follows the variable now. The engine's own cache folder, named by no variable, when a
file or unwritable was refused with "... or unset it": nothing to unset. Docs (README's doctor row, doctor --help,
warmup's docstring) are not held here. Pinned: a folder TRITON_CACHE_DIR names keeps "or unset it". Left open: see
docs/walkthroughs.md (round 37).
"""

from __future__ import annotations

import pytest
from test_warmup import NAME, env, home, recorded  # noqa: F401  (fixtures)

from neurobrix import warmup
from neurobrix.cli import main


def _interrupt_third_prefill(monkeypatch):
    from neurobrix import generate

    real = generate.prefill
    calls = []

    def interrupted(model, prompts):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(model, prompts)

    monkeypatch.setattr(generate, "prefill", interrupted)


@pytest.mark.usefixtures("env")
def test_an_interrupted_interpreter_warmup_claims_no_compiled_kernels(monkeypatch, capsys):
    """Before: "what was compiled stays in Triton's cache; the same command again compiles only the rest" on the
    interpreter class, which compiles nothing and makes no cache folder (the finished report says so)."""
    _interrupt_third_prefill(monkeypatch)
    with recorded(), pytest.raises(SystemExit) as exit_:
        main(["warmup", "--model", NAME, "--max-prompt", "8", "--max-tokens", "4"])
    assert exit_.value.code == 130
    err = capsys.readouterr().err
    stopped = next(line for line in err.splitlines() if line.startswith("warmup stopped after "))
    assert "compiles nothing" in stopped
    assert "stays in" not in stopped and "compiles only the rest" not in stopped
    assert "interrupted" in err.splitlines()[-1]


def test_an_interrupted_gpu_warmup_names_the_folder_its_binaries_stay_in():
    """Before: "stays in Triton's cache", which since walk-through 36 is not Triton's default folder but the
    engine's own (or the user's): the line names it, as the finished warmup's report does."""
    folder = "/home/u/.cache/neurobrix/triton-cache"
    line = warmup.stopped_line(3, 10, folder)
    assert line.startswith("warmup stopped after 3 of 10 passes")
    assert folder in line and "compiles only the rest" in line


def test_track_acts_on_the_tables_certify_writes_and_check_reads(fixture_tables, capsys):
    """Before: with NEUROBRIX_TABLES naming a copy (where certify writes by default, and check, run and doctor
    read), `python -m conformance track --check` checked this checkout's tables/ ("in sync", exit 0) while the copy
    had lost a tracked file, and `track` rewrote the checkout's list, not the copy's. Now its default follows
    NEUROBRIX_TABLES as certify's, rank's, reformat's and sweep's do, and the out-of-sync line names the folder."""
    from conftest import REPO

    from conformance.__main__ import main as conformance_main

    repo_list = (REPO / "tables" / "TRACKED.yaml").read_bytes()
    gone = next(p for p in sorted(fixture_tables.rglob("*.json")))
    gone.unlink()
    assert conformance_main(["track", "--check"]) == 1
    err = capsys.readouterr().err
    assert str(fixture_tables) in err and "tracked but missing" in err
    assert f"python -m conformance track --tables {fixture_tables}`" in err
    assert conformance_main(["track"]) == 0
    assert str(fixture_tables / "TRACKED.yaml") in capsys.readouterr().out
    assert conformance_main(["track", "--check"]) == 0
    assert (REPO / "tables" / "TRACKED.yaml").read_bytes() == repo_list


def test_an_unwritable_engine_cache_is_not_told_to_unset_a_variable(tmp_path, monkeypatch):
    """Before: the engine's own folder ($NEUROBRIX_HOME/triton-cache, which no variable names) that is a file or
    cannot be written was refused with "point TRITON_CACHE_DIR at a folder you can write, or unset it": there is
    nothing to unset. A folder a variable names keeps that advice."""
    from neurobrix import stack

    for name in stack.CACHE_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    cache = tmp_path / "home" / "triton-cache"
    cache.parent.mkdir(parents=True)
    cache.write_text("x", encoding="utf-8")
    said = stack.cache_problem("fake-hopper")
    assert said is not None and said.startswith(f"the engine's cache of compiled kernels {cache}")
    assert "unset it" not in said and "make it a folder you can write" in said
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))  # the same file, named by the user: theirs to unset
    said = stack.cache_problem("fake-hopper")
    assert said is not None and said.startswith("TRITON_CACHE_DIR=") and "or unset it" in said
