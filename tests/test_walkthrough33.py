"""Walk-through round 33: a user who types ``pip install neurobrix``, a contributor certifying a class, a CI maintainer.

What this round found (docs/walkthroughs.md, "Walk-through round 33"):

- The wheel, installed with its dependencies into a fresh environment, could not run the README's CPU example: the
  Triton interpreter computes with NumPy, which neither torch nor triton installs and neurobrix did not declare, so
  ``TRITON_INTERPRET=1 neurobrix run``, ``warmup`` and ``doctor`` ended in a ``ModuleNotFoundError`` traceback (and
  every command printed torch's "Failed to initialize NumPy" warning). numpy is a declared dependency now, and named
  in one line where it is missing anyway (``pip install --no-deps``).
- Ctrl-C during ``python -m conformance check`` (its entries run on a worker process, which a terminal's Ctrl-C
  reaches too) printed the worker's KeyboardInterrupt traceback, some fifty lines, before "conformance: interrupted"
  (on a GPU, one per worker: up to 15 per GPU). A worker now ends quietly, exit 130.
- Ctrl-C during ``certify`` on the interpreter class (its proofs run in the command's own process) was now and then
  lost: raised inside Hypothesis's garbage-collection callback, it was printed as "Exception ignored in:
  gc_callback ... KeyboardInterrupt" and certify went on to the end (exit 0, entries written, its check run). The
  command's Ctrl-C is remembered and raised again once the item under way is done.
"""

from __future__ import annotations

import ast
import gc
import os
import signal
import sys
import time
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]

# import name -> distribution name, where they differ
DISTRIBUTION = {"yaml": "pyyaml"}


def _third_party_imports() -> dict[str, set[str]]:
    """Every top-level module neurobrix/ imports that is neither the standard library's nor neurobrix's own."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / "neurobrix").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top not in sys.stdlib_module_names and top != "neurobrix":
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_module_the_engine_imports_is_a_declared_dependency():
    """numpy (imported by the interpreter class's subnormals check, and by Triton's interpreter itself) was not in
    pyproject.toml's dependencies, so `pip install neurobrix` gave an engine that could not run on a CPU."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        declared = {Requirement(r).name.lower() for r in tomllib.load(f)["project"]["dependencies"]}
    missing = {
        module: sorted(paths)
        for module, paths in _third_party_imports().items()
        if DISTRIBUTION.get(module, module).lower() not in declared
    }
    assert not missing, f"imported by neurobrix/ but not in pyproject.toml's dependencies: {missing}"


def test_every_module_the_engine_imports_is_named_when_missing():
    """The CLI names a missing dependency in one line only for the modules it lists; numpy was not among them."""
    from neurobrix import cli

    assert set(_third_party_imports()) <= set(cli.DEPENDENCIES)


def test_numpy_missing_under_the_interpreter_is_one_line(monkeypatch, capsys):
    """`TRITON_INTERPRET=1 neurobrix run` in an environment without numpy: Triton's interpreter fails importing it."""
    from neurobrix import cli
    from neurobrix import run as run_module

    def run(opts, write=None, notice=None):
        raise ModuleNotFoundError("No module named 'numpy'", name="numpy")

    monkeypatch.setattr(run_module, "run", run)
    with pytest.raises(SystemExit) as ended:
        cli.main(["run", "--model", "tiny", "--prompt", "hello"])
    err = capsys.readouterr().err
    assert ended.value.code == 1 and err.startswith("neurobrix: error: numpy is not installed")
    assert err.count("\n") == 1


def test_a_worker_interrupted_ends_quietly(capfd):
    """Ctrl-C reaches the worker process a check runs its entries on: it printed "Process SpawnProcess-1:" and its
    KeyboardInterrupt traceback, and ended with exit status 1."""
    from conformance import workers

    pool = workers._Isolated([None], 1)
    process, conn = pool._start(0)
    try:
        conn.send((0, time.sleep, (0,)))  # answered once the worker serves, its Ctrl-C handling in place
        assert conn.poll(60) and conn.recv() == (0, None)
        conn.send((1, time.sleep, (60,)))
        time.sleep(0.5)
        os.kill(process.pid, signal.SIGINT)
        process.join(30)
        assert process.exitcode == 128 + signal.SIGINT
    finally:
        if process.is_alive():
            process.kill()
        pool.close()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


def _lose_a_ctrl_c() -> None:
    """A Ctrl-C that lands while a garbage-collection callback runs, where Python prints it and drops it."""

    def callback(phase, info):
        if phase == "start":
            gc.callbacks.remove(callback)
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(100):  # the handler runs here, inside the callback
                pass

    gc.callbacks.append(callback)
    gc.collect()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the lost Ctrl-C, printed
def test_a_ctrl_c_lost_in_a_gc_callback_still_stops_the_items_run_here(monkeypatch, capsys):
    """certify on the interpreter runs its items in this process; a Ctrl-C raised inside Hypothesis's gc callback
    was lost and every later item ran."""
    from conformance import __main__ as cli
    from conformance import workers

    ran = []

    def items(args):
        with workers.Workers(1, [None]) as pool:
            pool.map(lambda n: ran.append(n) if n else _lose_a_ctrl_c(), [(0,), (1,), (2,)])
        return 0

    monkeypatch.setattr(cli, "cmd_track", items)
    # Python's own Ctrl-C handling, as a terminal's command starts with it: pytest run as a background job (`&` in a
    # script) starts with SIGINT ignored, which the command leaves alone, and no Ctrl-C reaches it there
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert cli.main(["track", "--check"]) == 128 + signal.SIGINT
        assert ran == [] and capsys.readouterr().err.endswith("conformance: interrupted\n")
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, ignored)
