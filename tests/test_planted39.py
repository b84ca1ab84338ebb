"""Planted-bug round 39: tests for the plants of tests/planted39_plants.py that the existing tests let through, where
the count of plants per 100 lines over every tests/planted*_plants.py and conformance/mutants.py (by file and by
function) found none: what round 38 left unplanted (certify's ``at_least`` on a chunk after the first, check's
out-of-memory retry and its ``report.left``, the merge of pooled workers' partial results), the code of the last two
sessions (neurobrix/hub.py's ``_own_snapshot``, strict round 44; neurobrix/store.py's foreign-manifest refusal and
linked model folders, strict round 43; text rounds 37-38's generation-settings readers: min_length/min_new_tokens,
forced_eos_token_id, nested eos rows, a special token named twice; gate round 43's G312 deflate refusal), and
check's ``render`` and ``carried_over`` (the report a contributor reads, ``--resume``). Each test fails under the
plant(s) its docstring names (checked: ``python tests/planted39_driver.py COPY OUT --with
tests/test_planted39.py::TEST ID``, each plant against its test alone) and passes on the clean code.

Outcomes (47 plants): 25 caught by the tests before the round (c04, k02 k04, w01 w04, r02 r03, h02 h03 h04 h06, s02
s04, t01-t08, z02-z05); 19 survived and are caught here: c01 (every chunk certifying one task past the limit), c02
(the last chunk's time taken for the longest), c03 (the tasks left before a chunk miscounted), k01 (the starved
entries left replacing the count of the others), k03 (no estimate for the first second run), k05 and w05 (a crash
named by another entry's trace: after a resume, in a wave the limit cut), k06 (an interrupted check's report keeping
a starved entry as failed), w02 (pooled results put in the order they finished), w03 (an interrupt carrying none of
the items finished), w06 (the entries left after a resume counted with the carried ones), w07 (every crashed entry
dropped at an interrupt), r01 (the entries not run unsaid unless one was run again), r04 (a report without
``shipped`` refused by --resume), h01 (a cache folder linked to the same repository in another case refused), h05 (a
link in the snapshot leading nowhere ending in a traceback), s01 (a linked model folder's bytes said freed by
remove), t09 (eos masked one new token too many), t11 (a negative eos id masking a token from the end). Three were
equivalent: z01 (the gzip stream's "not a gzip stream" refusal without ``rest is raw``: zlib refuses a stream whose
first three bytes are not the gzip magic and deflate method in its first call, before it consumes anything, so
wherever they differ the input is still whole); s03 (a foreign manifest's name quoted with ``!r`` but without
``printable``: repr escapes every character printable does, all of them non-printable to Python, so the line stays
one line without an escape either way); t10 (the forced eos at ``length >= max_length - 1``: the processors never
see a longer length, the run's limit being an integer, and a model's fractional limit drops the forced eos in
run.py first). The tests for t01 and t02 (min_new_tokens 0 beside min_length, eos id 0) and r03 (a failed entry
checked again) pin closer neighbours of plants the older tests caught only through [] and a whole resume.

Found and fixed: an entry that ran out of memory beside other workers in a wave the time limit (or an interrupt) then
cut was reported as failed ("out of device memory", the check FAILED), where one the limit leaves without its second
run in a finished wave is left without a verdict; it is now left too, in the report that goes with an interrupt as
well (test_an_entry_starved_in_a_wave_the_time_limit_cuts_is_left_not_failed and
test_an_entry_starved_in_the_wave_an_interrupt_cuts_is_left_not_failed, which failed before the fix).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import REPO, retrack

from conformance import certify
from conformance.__main__ import main as conformance_main
from neurobrix import tables

CLASS = "interpreter"


# ------------------------------------------------------------------------------------------ certify: later chunks
@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / CLASS, folder / CLASS)
    retrack(folder)
    tables.clear_cache()
    return folder


class Clock:
    """certify's clock, moved on by the fake phases only."""

    now = 0.0

    @classmethod
    def monotonic(cls) -> float:
        return cls.now

    perf_counter = monotonic


def _fake_phases(monkeypatch, root: Path, seconds: dict[int, float]) -> list[str]:
    """screen_task, time_task and prove_task without work: the n-th task screened (from 0) moves the clock on by
    ``seconds[n]``; each proof hands back the entry the tables already hold for its task, and nothing is written.
    Returns the kernels and dtypes proven, in order."""
    held = {
        (kernel, e.domain.ranges, d): e
        for kernel in ("silu_mul", "rms_norm", "rotary", "linear")
        for e in tables.load(root).index(CLASS, kernel).entries
        for d in e.domain.dtypes
    }
    screened, proven = [0], []

    def screen(class_id, task, seed):
        Clock.now += seconds.get(screened[0], 0.0)
        screened[0] += 1
        return task

    def prove(class_id, task, examples, profile_name):
        proven.append(f"{task.kernel} {task.dtype}")
        return SimpleNamespace(entry=held[(task.kernel, task.ranges, task.dtype)], message=f"proved {task.kernel}")

    Clock.now = 0.0
    monkeypatch.setattr(certify, "time", Clock)
    monkeypatch.setattr(certify, "screen_task", screen)
    monkeypatch.setattr(certify, "time_task", lambda class_id, screened, pdl=False: screened)
    monkeypatch.setattr(certify, "prove_task", prove)
    monkeypatch.setattr(certify, "write_table", lambda *args: None)  # (the entries held carry no proof record)
    return proven


ARGV = ["certify", "--class", CLASS, "--kernels", "silu_mul", "rms_norm", "rotary", "linear", "--dtypes", "fp32"]
ARGV += ["fp16", "--no-check", "--max-minutes", "1"]  # 10 tasks: chunks of 4, 4 and 2, one worker


def test_a_chunk_after_the_first_past_the_limit_certifies_nothing_more(root: Path, monkeypatch, capsys) -> None:
    """The limit passes while the second chunk's first task is screened: the first chunk certified its 4 tasks
    before the limit, and the second certifies none (only the first chunk certifies one task whatever the limit, so
    that every rerun gets further); its 4 tasks and the last chunk's 2 are left. Plant c01 (every chunk certifying
    one task past the limit) certified a fifth."""
    proven = _fake_phases(monkeypatch, root, {4: 120.0})
    assert conformance_main([*ARGV, "--tables", str(root)]) == 3
    out = capsys.readouterr().out
    assert "certified 4 entries" in out and "; 6 left" in out, out
    assert len(proven) == 4, proven


def test_a_chunk_starts_only_where_the_longest_so_far_would_end_within_the_limit(
    root: Path, monkeypatch, capsys
) -> None:
    """The first chunk takes 29.5 s, the second 1.5 s, of a 60 s limit: at 31 s the third chunk is not started, the
    longest chunk (29.5 s) would end past the limit; its 2 tasks are left, counted as 2. Plants c02 (the last chunk's
    time taken for the longest: the third started) and c03 (the tasks left miscounted) fail it."""
    proven = _fake_phases(monkeypatch, root, {0: 29.5, 4: 1.5})
    assert conformance_main([*ARGV, "--tables", str(root)]) == 3
    out = capsys.readouterr().out
    assert "certified 8 entries" in out and "; 2 left" in out, out
    assert "stopping at the time limit: 2 task(s) left" in out, out
    assert len(proven) == 8, proven


# ------------------------------------------------------------------------------ check: entries starved of memory
class CheckClock:
    """check's clock: each reading 40 s after the last (one entry fits a minute, hardly more)."""

    now = 0.0

    @classmethod
    def perf_counter(cls) -> float:
        cls.now += 40.0
        return cls.now


def _starved_check(tables_copy: Path, monkeypatch, starving: float = 0.0, **kwargs):
    """silu_mul and rms_norm in fp32 (one wave of two entries) with workers taken as sharing a GPU, the first kernel
    call finding the device full (after ``starving`` seconds of ``Clock``'s, where check reads it)."""
    import torch
    from test_conformance import tables_at

    from conformance import check, workers

    real, calls = check.run_kernel, {"n": 0}

    def run(case, config):
        calls["n"] += 1
        if calls["n"] == 1:
            Clock.now += starving
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.2 GiB")
        return real(case, config)

    monkeypatch.setattr(check, "run_kernel", run)
    monkeypatch.setattr(workers.Workers, "shares_devices", property(lambda self: True))
    with tables_at(tables_copy):
        return check.check_class("interpreter", ["silu_mul", "rms_norm"], {"fp32"}, 5, "ci", **kwargs)


@pytest.fixture
def tables_copy(tmp_path):
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables", root)
    return root


def test_an_entry_starved_in_a_wave_the_time_limit_cuts_is_left_not_failed(tables_copy, monkeypatch):
    """The first entry of the wave runs out of memory beside other workers; the time limit then stops the wave. That
    entry has no verdict (it was never checked with the device to itself, as the time limit leaves a starved entry of
    a finished wave: test_conformance's test_the_time_limit_bounds_the_second_runs_too): left with the other, not
    failed. Before the fix it stayed in the report as failed ("out of device memory"), the check FAILED. Plant k01
    (the starved entries left replacing the count of the others) fails it too."""
    from conformance import check

    monkeypatch.setattr(check, "time", CheckClock)
    report = _starved_check(tables_copy, monkeypatch, max_minutes=1)
    assert report.results == [] and report.left == 2 and report.retried == 0, check.render(report)
    assert report.passed and not report.complete
    assert "INCOMPLETE" in check.render(report)


# ------------------------------------------------------------------------ hub: the snapshot an import reads
@pytest.fixture
def hub_home(tmp_path, monkeypatch) -> Path:
    from store_fixtures import make_checkpoint

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    return make_checkpoint(tmp_path / "checkpoint")


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from neurobrix.cli import main

    try:
        code = main(list(argv))
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


def test_a_repository_folder_linked_to_its_own_in_another_case_imports(hub_home, capsys):
    """A hub id names one repository in any case: org/a's cache folder a link to the one written for Org/A (as a
    case-insensitive filesystem finds it without a link) holds that repository's own files, and imports. Plant h01
    (the folder names compared in case) refused it as another repository's."""
    from store_fixtures import populate_hub_cache

    from neurobrix import hub

    cache = hub.hub_cache()
    populate_hub_cache(cache, "Org/A", hub_home, commit="a" * 40)
    os.symlink("models--Org--A", cache / "models--org--a")
    code, out, err = _cli(capsys, "import", "org/a")
    assert code == 0, err
    code, out, _ = _cli(capsys, "list")
    assert "org/a" in out and "aaaaaaaaaaaa" in out, out


def test_a_link_in_the_snapshot_leading_nowhere_is_left_to_the_import(hub_home, capsys):
    """An optional file of the snapshot linking to a blob that is gone (an interrupted download): the snapshot is still
    the repository's own, and the import goes on as before strict round 44 (the file left out), without a traceback.
    Plant h05 (each link resolved strictly) ended in a FileNotFoundError traceback."""
    from store_fixtures import populate_hub_cache

    from neurobrix import hub

    snapshot = populate_hub_cache(hub.hub_cache(), "org/a", hub_home, commit="a" * 40)
    os.symlink("../../blobs/" + "0" * 64, snapshot / "special_tokens_map.json")
    code, out, err = _cli(capsys, "import", "org/a")
    assert "Traceback" not in err and "outside its repository" not in err, err
    assert code == 0, err


def test_the_first_second_run_is_estimated_by_the_longest_shared_wave(tables_copy, monkeypatch):
    """The wave takes 35 s of a 60 s limit (the starved entry's first run): the entry's second run, alone, is estimated
    to take as long as the longest wave, 35 s, which would end past the limit: not run, the entry left (no verdict).
    Plant k03 (no estimate for the first second run) ran it past the limit."""
    from conformance import check

    Clock.now = 0.0
    monkeypatch.setattr(check, "time", Clock)
    report = _starved_check(tables_copy, monkeypatch, starving=35.0, max_minutes=1)
    assert report.left == 1 and report.retried == 0, check.render(report)
    assert [r.kernel for r in report.results] == ["silu_mul"] and report.passed, check.render(report)


def test_a_second_run_that_crashes_is_named_by_its_own_trace_after_a_resume(tables_copy, tmp_path, monkeypatch):
    """--resume carries silu_mul over (first in the report's results); rms_norm runs out of memory beside other
    workers, and its second run, alone, crashes during its 3rd example. The crash names that example, read from the
    entry's own trace (its place in the work, not in the report, whose first place the carried entry holds). Plant
    k05 (the trace read by the report's place) named another entry's trace, or none ("before its first example")."""
    import json

    from test_conformance import tables_at

    from conformance import check, workers

    with tables_at(tables_copy):  # the earlier report: both passed, rms_norm's verdict then dropped
        earlier = check.check_class("interpreter", ["silu_mul", "rms_norm"], {"fp32"}, 5, "ci")
    data = earlier.as_json()
    data["entries"] = [e for e in data["entries"] if e["kernel"] == "silu_mul"]
    (tmp_path / "earlier.json").write_text(json.dumps(data), encoding="utf-8")

    def alone(self, fn, items, on_done=None, limit=None):
        crashed = []
        for item in items:  # the worker ran two examples and died in the third
            Path(item[6]).write_text(json.dumps({"example": 3, "case": "the third case"}), encoding="utf-8")
            crashed.append(workers.Crashed("the worker process died (killed by signal SIGSEGV)", -11))
        return crashed

    monkeypatch.setattr(workers.Workers, "alone", alone)
    report = _starved_check(tables_copy, monkeypatch, resume=tmp_path / "earlier.json")
    assert report.retried == 1 and report.results[0].carried, check.render(report)
    (crash,) = [r for r in report.results if r.crashed]
    assert crash.kernel == "rms_norm" and "during example 3: the third case" in crash.failure, crash.failure
    assert crash.examples == 2


def test_an_interrupted_check_leaves_an_entry_starved_of_memory_without_a_verdict(tables_copy, monkeypatch):
    """silu_mul, rms_norm and rotary in fp32 (waves of two): the first entry runs out of memory beside other workers,
    the second passes, and the check is interrupted (Ctrl-C) in the second wave. The report that goes with the
    interrupt holds the entry that passed; the starved one, never checked alone, has no verdict: left with the third,
    not failed (``--resume`` checks it again). Plant k06 (the interrupt's report keeping it) reported it failed."""
    from test_conformance import tables_at

    from conformance import check, workers

    real, calls = check.check_entry, {"n": 0}

    def entry(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(check, "check_entry", entry)
    kernel, first = check.run_kernel, {"n": 0}

    def run(case, config):
        import torch

        first["n"] += 1
        if first["n"] == 1:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.2 GiB")
        return kernel(case, config)

    monkeypatch.setattr(check, "run_kernel", run)
    monkeypatch.setattr(workers.Workers, "shares_devices", property(lambda self: True))
    with tables_at(tables_copy), pytest.raises(KeyboardInterrupt) as interrupted:
        check.check_class("interpreter", ["silu_mul", "rms_norm", "rotary"], {"fp32"}, 5, "ci")
    report = interrupted.value.report
    assert len(report.results) == 1 and report.results[0].passed, check.render(report)
    assert report.left == 2 and report.stopped == "interrupted", check.render(report)


# ------------------------------------------------------------------------ store: foreign manifests, linked folders
@pytest.fixture
def two_local(tmp_path, monkeypatch) -> Path:
    """alpha and beta imported from local folders into a fresh store; the store's models folder."""
    from store_fixtures import make_checkpoint

    from neurobrix import store

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    for key, family in (("alpha", "llama"), ("beta", "qwen2")):
        make_checkpoint(tmp_path / "src" / key, family)
        store.import_model(str(tmp_path / "src" / key), progress=False)
    return store.models_dir()


def test_removing_a_linked_model_folder_frees_nothing_and_says_so(two_local, tmp_path, capsys):
    """alpha's folder moved to another disk and linked back (its own manifest: not damaged). `remove alpha` removes
    the link, and the files it led to stay: 0 B freed. Plant s01 (the bytes under the link counted) said the
    folder's size was freed while every byte of it stayed on the other disk."""
    from neurobrix.cli_store import format_size

    held = sum(p.stat().st_size for p in (two_local / "alpha").iterdir())
    os.rename(two_local / "alpha", tmp_path / "disk-alpha")
    os.symlink(tmp_path / "disk-alpha", two_local / "alpha")
    code, out, err = _cli(capsys, "remove", "alpha")
    assert code == 0, err
    assert "removed alpha (0 B freed" in out and format_size(held) not in out, out
    assert sum(p.stat().st_size for p in (tmp_path / "disk-alpha").iterdir()) == held
    assert sorted(p.name for p in two_local.iterdir()) == ["beta"]


# ------------------------------------------------------------------------ workers: pooled results, whole or partial
def _nap(seconds: float) -> float:
    import time

    time.sleep(seconds)
    return seconds


def test_pooled_results_are_merged_in_the_items_order_not_as_they_finish() -> None:
    """Two pooled workers, the first item the slower: the results come back in the items' order, and a time limit
    that stops the slow one hands back the fast one under its own index. Plant w02 (each result put at the place of
    the count of finished items) gave the slow item's place to the fast one's result, whole or partial."""
    import time

    from conformance.workers import OutOfTime, Workers

    pool = Workers(jobs=2, devices=[None])
    try:
        assert pool.map(_nap, [(1.5,), (0.0,)]) == [1.5, 0.0]
        deadline = time.monotonic() + 4.0  # (fresh workers spawn first)
        with pytest.raises(OutOfTime) as got:
            pool.map(_nap, [(60.0,), (0.2,)], limit=(lambda: deadline - time.monotonic(), 0))
        assert got.value.done == {1: 0.2}, got.value.done
    finally:
        pool.close(kill=True)


@pytest.mark.parametrize("jobs", [1, 2], ids=["here", "pooled"])
def test_an_interrupt_carries_the_items_finished_before_it(jobs: int) -> None:
    """A Ctrl-C after the first item finished (here: raised as its completion is reported), the second under way:
    the interrupt carries the first item's result (a check's partial report keeps that entry), here or from a pool.
    Plant w03 (the pooled or inline interrupt carrying nothing) lost it."""
    from conformance.workers import Workers

    def interrupt(index: int) -> None:
        raise KeyboardInterrupt

    pool = Workers(jobs=jobs, devices=[None])
    try:
        with pytest.raises(KeyboardInterrupt) as got:
            pool.map(_nap, [(0.0,), (60.0 if jobs > 1 else 0.0,)], on_done=interrupt)
        assert got.value.done == {0: 0.0}, got.value.done
    finally:
        pool.close(kill=True)


# ------------------------------------------------------------------------ check: a wave cut by the limit or Ctrl-C
def _cut_second_wave(
    tables_copy: Path,
    monkeypatch,
    cut,
    resume: Path | None = None,
    kernels=("silu_mul", "rms_norm", "rotary"),
    dtypes=("fp32",),
):
    """``kernels`` in ``dtypes`` (waves of two entries): the first wave is checked; the second call of the pool
    raises what ``cut(items)`` returns (OutOfTime or KeyboardInterrupt, with the results of the items it says
    finished), as a time limit or Ctrl-C does after killing the workers."""
    from test_conformance import tables_at

    from conformance import check, workers

    real, calls = workers.Workers.map, {"n": 0}

    def map(self, fn, items, on_done=None, limit=None):
        calls["n"] += 1
        items = list(items)
        if calls["n"] == 2 or resume is not None:
            raise cut(items)
        return real(self, fn, items, on_done, limit)

    monkeypatch.setattr(workers.Workers, "map", map)
    with tables_at(tables_copy):
        return check.check_class("interpreter", list(kernels), set(dtypes), 5, "ci", resume=resume)


def _crashed_in_example_4(item: tuple) -> object:
    """The worker of ``item`` died in its 4th example (its trace says so, as check_entry writes it)."""
    import json

    from conformance import workers

    Path(item[6]).write_text(json.dumps({"example": 4, "case": "the fourth case"}), encoding="utf-8")
    return workers.Crashed("the worker process died (killed by signal SIGSEGV)", -11)


def test_a_worker_that_died_in_a_wave_the_limit_cut_is_named_by_its_own_trace(tables_copy, monkeypatch):
    """The second wave's first entry crashed in its 4th example before the time limit stopped the other: the crash
    names that example, from the entry's own trace (its place in the work). Plant w05 (the place in the wave) read the
    first wave's first entry's trace, another example."""
    from conformance import check, workers

    report = _cut_second_wave(
        tables_copy, monkeypatch, lambda items: workers.OutOfTime({0: _crashed_in_example_4(items[0])})
    )
    (crash,) = [r for r in report.results if r.crashed]
    assert "during example 4: the fourth case" in crash.failure and crash.examples == 3, check.render(report)
    assert report.left == 0 and len(report.results) == 3, check.render(report)


def test_a_limit_after_a_resume_counts_the_entries_left_of_this_run(tables_copy, tmp_path, monkeypatch):
    """--resume carries silu_mul over; the time limit stops the first wave of the other two before either finishes:
    both are left (2), the carried entry is not subtracted from them. Plant w06 (the report's results counted, the
    carried one with them) said 1 left."""
    import json

    from test_conformance import tables_at

    from conformance import check, workers

    with tables_at(tables_copy):
        earlier = check.check_class("interpreter", ["silu_mul"], {"fp32"}, 5, "ci")
    (tmp_path / "earlier.json").write_text(json.dumps(earlier.as_json()), encoding="utf-8")
    report = _cut_second_wave(
        tables_copy, monkeypatch, lambda items: workers.OutOfTime({}), resume=tmp_path / "earlier.json"
    )
    assert [r.kernel for r in report.results] == ["silu_mul"] and report.results[0].carried, check.render(report)
    assert report.left == 2, check.render(report)
    assert "2 entry checks not run (time limit)" in check.render(report)


def test_an_interrupt_keeps_a_crash_of_its_wave_and_drops_the_workers_it_ended(tables_copy, monkeypatch):
    """silu_mul and rms_norm in fp32 and fp16, Ctrl-C in the second wave: its first entry's worker had died of a
    SIGSEGV (a crash, kept in the interrupt's report: the kernel's fault), its second's was ended by the interrupt
    itself (no verdict: left). Plant w07 (every crashed entry dropped) lost the SIGSEGV."""
    import signal

    from conformance import check, workers

    def cut(items):
        interrupt = KeyboardInterrupt()
        ended = workers.Crashed("the worker process died (SIGINT)", -signal.SIGINT)
        interrupt.done = {0: _crashed_in_example_4(items[0]), 1: ended}
        return interrupt

    with pytest.raises(KeyboardInterrupt) as got:
        _cut_second_wave(tables_copy, monkeypatch, cut, kernels=("silu_mul", "rms_norm"), dtypes=("fp32", "fp16"))
    report = got.value.report
    assert [r.crashed for r in report.results] == [False, False, True], check.render(report)
    assert report.left == 1 and report.stopped == "interrupted", check.render(report)


# ------------------------------------------------------------------------ generation settings against transformers
@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    pytest.importorskip("transformers")
    from test_text_round7 import checkpoint

    return checkpoint(tmp_path_factory.mktemp("gen39") / "m")


EOS = 154  # the fifth token of round 7's greedy text (test_text_round7.PLAIN)

SAME = {
    # min_new_tokens set, even to 0, replaces min_length (0 plus the prompt: nothing masked), so eos ends the text at
    # its 5th token; plant t01 (min_new_tokens 0 taken as unset) masked eos up to min_length and ran 8 tokens
    "min_new_tokens 0 beside min_length 45": {
        "eos_token_id": EOS,
        "max_new_tokens": 8,
        "min_length": 45,
        "min_new_tokens": 0,
    },
    # eos masked for the first 4 new tokens only: the 5th ends the text; plant t09 (masked while 4 or fewer were
    # made) masked the 5th too and ran on
    "min_new_tokens 4, eos the 5th token": {"eos_token_id": EOS, "max_new_tokens": 8, "min_new_tokens": 4},
    # a negative eos id masks no token (transformers' processors compare the vocabulary's ids with it; generate only
    # warns): -37 is not token 283 (320 - 37, the greedy text's first); plant t11 (negative ids kept, indexing the
    # scores from the end) masked 283 at the first step
    "a negative eos id beside min_new_tokens": {"eos_token_id": [-37, EOS], "max_new_tokens": 8, "min_new_tokens": 2},
}


@pytest.mark.parametrize("case", SAME)
def test_min_length_settings_end_the_text_where_transformers_does(model_folder, monkeypatch, case):
    import json

    from test_text_round7 import ours, theirs

    (model_folder / "generation_config.json").write_text(json.dumps(SAME[case]))
    want = theirs(model_folder)
    assert ours(model_folder, monkeypatch)[:2] == want


def test_a_fractional_min_new_tokens_beside_eos_id_0_is_refused_as_transformers_fails(model_folder, monkeypatch):
    """eos_token_id 0 is an eos id (generate builds the min-length processors, which refuse 2.5); plant t02 (0 read
    as no eos id) ran where transformers prints nothing."""
    import json

    from test_text_round7 import ours, theirs

    from neurobrix.errors import UsageError

    (model_folder / "generation_config.json").write_text(
        json.dumps({"eos_token_id": 0, "max_new_tokens": 8, "min_new_tokens": 2.5})
    )
    with pytest.raises(ValueError, match="has to be a non-negative integer"):  # (min_length: 2.5 plus the prompt)
        theirs(model_folder)
    with pytest.raises(UsageError, match="min_new_tokens must be an integer, got 2.5"):
        ours(model_folder, monkeypatch)


# ------------------------------------------------------------------------ check --resume: what is carried over
def _earlier_report(tables_copy: Path, tmp_path: Path, edit) -> Path:
    """A check report of silu_mul and rms_norm in fp32 (both passed), edited by ``edit`` (the JSON, in place)."""
    import json

    from test_conformance import tables_at

    from conformance import check

    with tables_at(tables_copy):
        data = check.check_class("interpreter", ["silu_mul", "rms_norm"], {"fp32"}, 5, "ci").as_json()
    edit(data)
    (tmp_path / "earlier.json").write_text(json.dumps(data), encoding="utf-8")
    return tmp_path / "earlier.json"


def _resumed(tables_copy: Path, earlier: Path):
    from test_conformance import tables_at

    from conformance import check

    with tables_at(tables_copy):
        return check.check_class("interpreter", ["silu_mul", "rms_norm"], {"fp32"}, 5, "ci", resume=earlier)


def test_a_resume_checks_a_failed_entry_again(tables_copy, tmp_path):
    """An entry the earlier report failed has no pass to carry over: checked again (and passing here). Plant r03
    (every entry carried) kept its failure unchecked."""
    from conformance import check

    def fail_rms_norm(data):
        for entry in data["entries"]:
            if entry["kernel"] == "rms_norm":
                entry["passed"] = False

    report = _resumed(tables_copy, _earlier_report(tables_copy, tmp_path, fail_rms_norm))
    carried = {r.kernel: r.carried for r in report.results}
    assert carried == {"silu_mul": True, "rms_norm": False} and report.passed, check.render(report)
    assert "1 passed entry checks carried over" in check.render(report) and "1 checked in this run" in check.render(
        report
    )


def test_a_report_written_before_shipped_was_recorded_resumes_a_check_without_it(tables_copy, tmp_path):
    """A report without the ``shipped`` field (written before check recorded it) is one of a check without
    --shipped: a check without --shipped resumes from it. Plant r04 (the field's absence compared as null) refused
    it."""
    from conformance import check

    report = _resumed(tables_copy, _earlier_report(tables_copy, tmp_path, lambda data: data.pop("shipped")))
    assert all(r.carried for r in report.results) and len(report.results) == 2, check.render(report)


def test_an_entry_starved_in_the_wave_an_interrupt_cuts_is_left_not_failed(tables_copy, monkeypatch):
    """Ctrl-C in the second wave, after its entry ran out of memory beside other workers: the report that goes with
    the interrupt leaves that entry without a verdict (``--resume`` checks it again), as it does one starved in an
    earlier wave. Before the fix it was reported failed ("out of device memory")."""
    from conformance import check, workers

    def cut(items):
        interrupt = KeyboardInterrupt()
        interrupt.done = {0: workers.Failed("OutOfMemoryError: CUDA out of memory. Tried to allocate 1.2 GiB")}
        return interrupt

    monkeypatch.setattr(workers.Workers, "shares_devices", property(lambda self: True))
    with pytest.raises(KeyboardInterrupt) as got:
        _cut_second_wave(tables_copy, monkeypatch, cut)
    report = got.value.report
    assert len(report.results) == 2 and all(r.passed for r in report.results), check.render(report)
    assert report.left == 1 and report.stopped == "interrupted", check.render(report)
