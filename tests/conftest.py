"""Shared fixtures. The Triton interpreter must be on before triton is first imported (FACTS.md)."""

from __future__ import annotations

import argparse
import fcntl
import gc
import hashlib
import os
import sys

os.environ.setdefault("TRITON_INTERPRET", "1")

# `pytest -n N` (CI: 2 workers on 2 cores): each worker, and what it starts, runs torch's and NumPy's own threads on
# its share of the usable cores; each library otherwise starts a thread per core in every worker, and two interpreter
# checks side by side took a fifth longer with 2 + 2 threads than with 1 + 1 (measured 2026-12-07: 123 against
# 103 s). A value the caller set wins. (conformance.workers._share_cores does this for check's own workers; the
# session's set-up does not import the package's code for it.) NumPy's BLAS reads its variable when loaded, so it is
# set first; torch's count a process gets by default is read before torch's variables are set (_transformers_threads).
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
USER_THREADS = {name: os.environ.get(name) for name in _THREAD_VARIABLES}  # as the session was started
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    from joblib import cpu_count

    _SHARE = str(max(1, cpu_count() // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
    os.environ.setdefault("OPENBLAS_NUM_THREADS", _SHARE)
    import torch

    TORCH_THREADS = torch.get_num_threads()  # the count a user's process gets: torch's variables are not set yet
    for _name in _THREAD_VARIABLES:
        os.environ.setdefault(_name, _SHARE)  # for the processes the tests start
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
else:
    import torch

    TORCH_THREADS = torch.get_num_threads()

import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from conformance import harness  # noqa: E402
from neurobrix import gpu, stack, tables  # noqa: E402

# every in-process launch on the interpreter, not only the conformance harness's: a helper's call inside a kernel does
# not patch triton.language again, a type's NumPy dtype is kept, and the language's values and block types are built
# by shorter paths (the same outputs in about half the time; harness.interpreter_device_calls,
# harness.interpreter_dtypes, harness.interpreter_values)
harness.interpreter_device_calls()
harness.interpreter_dtypes()
harness.interpreter_values()

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parent.parent


def undocumented(parser, name):
    """Each command without a description and each option without a help text, as `--help` would show them."""
    missing = [] if parser.description else [f"{name}: no description"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, subparser in action.choices.items():
                missing += undocumented(subparser, f"{name} {sub}")
        elif action.help is None:
            missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}: no help")
    return missing


def exit_status(process, timeout: float) -> int | None:
    """A worker process's exit status once it has ended, waiting up to ``timeout`` seconds. `process.join()` then
    `process.exitcode` read None now and then where a ProcessPoolExecutor's manager thread reaps the same child at the
    same moment (its waitpid wins, ours gets ECHILD, and the status lands a moment later): ask until it lands."""
    import time

    deadline = time.monotonic() + timeout
    process.join(timeout)
    while process.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return process.exitcode


def retrack(root: Path) -> None:
    """Write root/TRACKED.yaml for what is in root now (what `conformance track` does)."""
    (root / tables.TRACKED_NAME).write_text(tables.render_tracked(tables.scan(root)), encoding="utf-8")


def rebind(path: Path, class_id: str, kernel: str) -> None:
    """Give each proof of the record ``path`` the digest of the entry it sits in (``proof.entry``, which certify
    writes): for a fixture that makes a record by copying another's text under another kernel or class name, which
    strict round 28 refuses as proofs of other entries."""
    import re

    import yaml

    from neurobrix.schema import Domain, entry_digest

    text = path.read_text(encoding="utf-8")
    entries = yaml.safe_load(text)["entries"]
    digests = iter(
        entry_digest(
            kernel,
            class_id,
            Domain(tuple(e["domain"]["dtypes"]), tuple((d, *v) for d, v in e["domain"].items() if d != "dtypes")),
            e["config"],
        )
        for e in entries
    )
    path.write_text(
        re.sub(r"(entry: )'?[0-9a-f]{16}'?", lambda m: f"{m.group(1)}'{next(digests)}'", text), encoding="utf-8"
    )


def follow(root: Path, class_id: str, kernel: str) -> None:
    """Make the record of ``kernel`` on ``class_id`` hold its index's entries as they are now (domains and settings,
    in order; an entry the index gained takes the last proof's numbers) and bind each proof to its entry: for a
    fixture that edits an index to reach a later check, which strict round 29 refuses as an index its record does not
    prove when edited alone. The caller retracks."""
    import json

    import yaml

    index = json.loads(tables.index_path(root, class_id, kernel).read_text(encoding="utf-8"))
    path = tables.proofs_path(root, class_id, kernel)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    key = [dim for dim, _ in index["key"]]
    proofs = [e["proof"] for e in data["entries"]]
    data["entries"] = [
        {
            "domain": {"dtypes": row[0], **{dim: [row[1 + 2 * n], row[2 + 2 * n]] for n, dim in enumerate(key)}},
            "config": dict(index["configs"][row[-1]]),  # one object an entry: YAML writes no alias (refused)
            "proof": dict(proofs[min(i, len(proofs) - 1)]),
        }
        for i, row in enumerate(index["entries"])
    ]
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=120), encoding="utf-8")
    rebind(path, class_id, kernel)


@pytest.fixture(autouse=True)
def _fresh_caches():
    tables.clear_cache()
    gpu.device_facts.cache_clear()
    # a GPU class's check points TRITON_CACHE_DIR at the engine's cache for the rest of the process
    # (stack.use_engine_cache): each test starts and ends with the variable as the session had it
    cache_dir, engine_set = os.environ.get("TRITON_CACHE_DIR"), list(stack._ENGINE_CACHE_SET)
    yield
    tables.clear_cache()
    gpu.device_facts.cache_clear()
    if cache_dir is None:
        os.environ.pop("TRITON_CACHE_DIR", None)
    else:
        os.environ["TRITON_CACHE_DIR"] = cache_dir
    stack._ENGINE_CACHE_SET[:] = engine_set


def _build_key(source: Path) -> str:
    """What ``python -m build --no-isolation`` of ``source`` can read, hashed: every file git does not ignore (hatchling
    builds from the working tree and leaves out what .gitignore names), by path, mode bits and content, with the
    interpreter, the build front end and backend, and SOURCE_DATE_EPOCH (the archives' timestamps)."""
    import subprocess
    from importlib.metadata import version

    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=source,
        capture_output=True,
        check=True,
    ).stdout
    digest = hashlib.sha256()
    for setting in (sys.executable, sys.version, version("build"), version("hatchling")):
        digest.update(setting.encode() + b"\0")
    digest.update(os.environ.get("SOURCE_DATE_EPOCH", "-").encode() + b"\0")
    for name in sorted(set(listed.split(b"\0")) - {b""}):
        path = source / os.fsdecode(name)
        if not path.is_file():  # listed but deleted in the working tree: the build does not see it either
            continue
        digest.update(name + b"\0" + oct(path.stat().st_mode & 0o7777).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def shared_build(tmp_path_factory: pytest.TempPathFactory, source: Path) -> Path:
    """The folder holding the session's one build of ``source`` (its wheel and sdist, as ``gate.build.build_project``
    makes them), shared by every test module and by pytest-xdist's workers. Keyed by the build's inputs (_build_key):
    a tree edited mid-session builds again, and a git copy of this checkout's tracked files is this checkout's build.
    Made under a lock, one worker builds and the others wait. Read-only: take copies (project_dists_copy)."""
    from gate.build import build_project

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's folder, above each worker's own
    folder = shared / f"project-dists-{_build_key(source)[:24]}"
    with open(shared / "project-dists.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (folder / "done").is_file():
                shutil.rmtree(folder, ignore_errors=True)  # a worker stopped mid-build leaves a partial folder
                build_project(source, folder / "dist")
                (folder / "done").write_bytes(b"")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return folder / "dist"


@pytest.fixture(scope="session")
def project_dists(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's wheel and sdist, built once a session (shared_build): the gate's test modules each built the
    same pair, about 1.5 s of CPU a module on a free core (36 modules)."""
    return shared_build(tmp_path_factory, REPO)


def project_dists_copy(project_dists: Path, into: Path) -> list[Path]:
    """Fresh copies of the session's wheel and sdist in the new folder ``into`` (tests damage, touch and put files
    beside them), sorted as build_project returns them."""
    into.mkdir(parents=True)
    return sorted(Path(shutil.copy2(path, into / path.name)) for path in sorted(project_dists.iterdir()))


_NAMES_TRANSFORMERS: dict[str, bool] = {}


@pytest.fixture(autouse=True)
def _transformers_threads(request, monkeypatch):
    """A test file that names transformers runs torch, in its own process and in those it starts, at the thread count
    a process gets by default, as transformers' users and the engine's do: the bits of a bf16 or fp16 CPU kernel can
    follow the count on some hosts (CI's 1 thread a worker once gave other bits than transformers' in one decode step
    of test_text_round42.py, 2026-12-07, where this machine gives the same bits at 1 to 64 threads). The files that
    name it are not the interpreter's long checks, which keep their share."""
    path = str(request.path)
    if path not in _NAMES_TRANSFORMERS:
        _NAMES_TRANSFORMERS[path] = "transformers" in request.path.read_text(encoding="utf-8")
    if not _NAMES_TRANSFORMERS[path]:
        yield
        return
    for name, value in USER_THREADS.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    share = torch.get_num_threads()
    torch.set_num_threads(TORCH_THREADS)
    try:
        yield
    finally:
        torch.set_num_threads(share)


@pytest.fixture
def fixture_tables(tmp_path, monkeypatch) -> Path:
    """A tracked copy of tests/data/tables, selected with NEUROBRIX_TABLES."""
    root = tmp_path / "tables"
    shutil.copytree(DATA / "tables", root)
    retrack(root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    return root


# The longest files, in the order they should start: with `pytest -n 2 --dist loadfile` a file runs whole on
# one worker, files in collection order (once xdist's reordering is off, above), so the longest would
# otherwise start last (alphabetically late) and leave one worker alone at the end (measured 2026-12-01:
# test_shipped_attention.py ~11 min, test_shipped.py ~9, test_mutants.py ~3 of about 36 minutes of work on
# 2 workers). After them the next longest measured (user + sys CPU seconds, each file alone, 2026-12-07):
# test_gate_hostile.py 157 (127 since write_sdist gzips at level 6), test_conformance.py 82, test_warmup.py 49,
# test_stack.py 27, test_workflows.py 21 or more (its release chain's install smoke ran out of time on that busy
# machine); test_warmup.py and test_workflows.py were the third file from the end and the last, where a worker could be
# left running one of them alone.
LONGEST_FIRST = (
    "test_shipped_attention.py",
    "test_shipped.py",
    "test_mutants.py",
    "test_gate_hostile.py",
    "test_conformance.py",
    "test_warmup.py",
    "test_gate_round66.py",
    "test_stack.py",
    "test_workflows.py",
)


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist reorders the files of --dist loadfile by their number of tests (--loadscope-reorder, on by
    # default), which put these long files of few tests last; keep the order set below instead
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_finish(session: pytest.Session) -> None:
    # every object alive once the tests are collected (the modules, torch's and transformers' among them) is left out
    # of the cyclic garbage collector's scans: the interpreter's checks make millions of short-lived objects, and each
    # full collection walked the whole session's heap again (test_shipped.py's linear case: 112 s, 84 s frozen,
    # measured 2026-12-07 with that file alone collected; a CI worker collects every file)
    gc.freeze()


def _keep_freed_memory() -> None:
    """glibc's malloc (Linux) hands a freed block of more than its mmap threshold (128 KiB, rising to at most 32 MiB as
    such blocks are freed) back to the system, and trims the top of its heap past a threshold: the next tensor of that
    size is mapped again and each of its pages faults in afresh. The float64 bounds and the NaN guard regions of the
    interpreter's checks are such tensors, made and dropped at every example: the page faults cost as much system time
    as the checks' own user time for attention_chunk, attention_prefill and rotary (3.2, 2.4 and 3.1 million faults,
    2026-12-07). Blocks up to 256 MiB now come from the heap, and up to 256 MiB freed at its top stays there to be used
    again: the same values (every buffer a check judges is written before it is read), fewer faults (a rotary entry's
    check in a script: 0.41 million, then 0.11; in this session's process fewer are saved: the rotary test 2.8
    million, then 2.0). This process only (each pytest-xdist worker imports this file): the processes the tests start
    keep glibc's defaults."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 256 << 20)
    mallopt(m_trim_threshold, 256 << 20)


_keep_freed_memory()


def pytest_unconfigure(config: pytest.Config) -> None:
    gc.unfreeze()  # collectable again at exit, where nanobind (Triton's bindings) reports what was never freed


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: every other test keeps its order
