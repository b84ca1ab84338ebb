"""The engine's own cache of compiled kernels (stack.engine_cache, stack.use_engine_cache).

Strictness round 42 left open that Triton's default cache (``~/.triton/cache``) is shared with every program of the
user that compiles Triton kernels, and that Triton's cache key does not hold everything that changes a binary (a
kernel override, a compiler hook): a program that is not NeuroBrix's, run with ``TRITON_KERNEL_OVERRIDE``, stored its
overridden binary under the key a certified kernel's ``run`` later looked up there, and Triton loaded it. Now, where
neither TRITON_CACHE_DIR nor TRITON_HOME names Triton's cache, a GPU class's checks (the way every run, warmup and
Python-API launch goes) point it at ``$NEUROBRIX_HOME/triton-cache``, a folder only processes that passed those checks
write to. A cache the user names stays theirs. The GPU side (warmup fills the engine's folder, runs after it compile
nothing, nothing goes to the home folder's) is ``tests/test_warmup.py::test_after_warmup_no_run_compiles[engine]``."""

from __future__ import annotations

import os

import pytest
from kernel_tables import write_gpu_class, write_tables

from neurobrix import stack, tables
from neurobrix.errors import UsageError


@pytest.fixture
def loaded(tmp_path, monkeypatch):
    for name in stack.CACHE_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    return tables.load(write_gpu_class(write_tables(tmp_path / "t")))


def test_a_gpu_class_run_uses_the_engines_cache_where_no_variable_names_one(tmp_path, monkeypatch, loaded):
    """Before: no variable set, the checks passed and Triton compiled into and loaded from ~/.triton/cache, the
    folder every Triton program of the user shares. Now TRITON_CACHE_DIR names $NEUROBRIX_HOME/triton-cache once
    the checks pass, and Triton's own knob reads it."""
    from triton import knobs

    assert stack.engine_cache() == tmp_path / "home" / "triton-cache"
    stack.require_certified_stack("fake-hopper", loaded)
    assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "home" / "triton-cache")
    assert knobs.cache.dir == str(tmp_path / "home" / "triton-cache")
    # NEUROBRIX_HOME changed within the process (a program serving two stores): the next check follows it
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "other"))
    assert stack.engine_cache() == tmp_path / "other" / "triton-cache"
    stack.require_certified_stack("fake-hopper", loaded)
    assert knobs.cache.dir == str(tmp_path / "other" / "triton-cache")


@pytest.mark.parametrize("name", stack.CACHE_ENV)
def test_a_cache_the_user_names_stays_theirs(tmp_path, monkeypatch, loaded, name):
    """TRITON_CACHE_DIR or TRITON_HOME set: the engine leaves Triton's cache where the user put it, and a
    TRITON_HOME set after the engine pointed TRITON_CACHE_DIR at its own cache is the one read (the engine's
    TRITON_CACHE_DIR, which Triton would read first, is taken back)."""
    stack.require_certified_stack("fake-hopper", loaded)
    assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "home" / "triton-cache")
    monkeypatch.setenv(name, str(tmp_path / "mine"))
    assert stack.engine_cache() is None
    stack.require_certified_stack("fake-hopper", loaded)
    if name == "TRITON_CACHE_DIR":
        assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "mine")
    else:
        assert "TRITON_CACHE_DIR" not in os.environ
        from triton import knobs

        assert knobs.cache.dir == str(tmp_path / "mine" / ".triton" / "cache")


def test_the_interpreter_class_leaves_the_variable_alone(loaded):
    """The interpreter compiles nothing: no cache is named for it."""
    stack.require_certified_stack("interpreter", loaded)
    assert "TRITON_CACHE_DIR" not in os.environ


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda cache: cache.write_text("x", encoding="utf-8"), "it is not a folder"),
        (lambda cache: (cache.mkdir(parents=True), cache.chmod(0o777)), "every user of this machine can write it"),
    ],
    ids=["a-file", "writable-by-all"],
)
def test_an_engine_cache_that_cannot_be_trusted_is_refused_by_name(tmp_path, loaded, make, said):
    """The engine's folder passes the checks any cache folder does (round 18's, 20's, 27's), named as the engine's,
    before anything is loaded; TRITON_CACHE_DIR is not set to it."""
    cache = tmp_path / "home" / "triton-cache"
    cache.parent.mkdir(parents=True)
    make(cache)
    with pytest.raises(UsageError, match=f"the engine's cache of compiled kernels {cache} .*: {said}") as refused:
        stack.require_certified_stack("fake-hopper", loaded)
    assert refused.value.exit_code == 2
    assert "TRITON_CACHE_DIR" not in os.environ


def test_the_cache_check_doctor_makes_names_the_engines_folder(tmp_path, loaded):
    """`doctor` on a GPU class reports stack.cache_problem as a FAIL line: it names the engine's folder when that
    folder cannot hold binaries; the interpreter class compiles nothing and has no cache problem."""
    cache = tmp_path / "home" / "triton-cache"
    cache.parent.mkdir(parents=True)
    cache.write_text("x", encoding="utf-8")
    assert stack.cache_problem("fake-hopper").startswith(f"the engine's cache of compiled kernels {cache}")
    assert stack.cache_problem("interpreter") is None


def test_doctor_says_where_a_gpu_class_keeps_its_compiled_kernels(tmp_path, monkeypatch, loaded):
    """On a GPU class `doctor` names the cache folder (an INFO line): the engine's own, or the one a variable names;
    where that folder cannot serve, the line is a FAIL naming why."""
    from neurobrix import doctor, gpu

    monkeypatch.setattr(
        stack,
        "verdict",
        lambda class_id, *a, **k: stack.Verdict(class_id, stack.running_stack(), stack.running_stack()),
    )
    monkeypatch.setattr(gpu, "device_facts", lambda: gpu.DeviceFacts("cuda", "nvidia", "NVIDIA H200", (9, 0), 132))

    def line():
        found = [f for f in doctor.diagnose() if f.name == "triton cache"]
        assert len(found) == 1, found
        return found[0]

    assert line() == doctor.Finding(
        "triton cache",
        doctor.INFO,
        f"{tmp_path / 'home' / 'triton-cache'} (the engine's own; TRITON_CACHE_DIR or TRITON_HOME would name another)",
    )
    monkeypatch.setenv("TRITON_HOME", str(tmp_path / "mine"))
    assert line().value == f"{tmp_path / 'mine'}/.triton/cache (TRITON_HOME)"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    assert line().value == f"{tmp_path / 'cache'} (TRITON_CACHE_DIR)"
    (tmp_path / "cache").write_text("x", encoding="utf-8")
    assert line().status == doctor.FAIL
