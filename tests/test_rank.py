"""`python -m conformance rank`: what it keeps, records and refuses, with the step's timer replaced by a given one
(the timing itself needs a GPU; tests/test_gpu_only.py runs it there)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance import rank
from conformance.certify import existing_table, write_table
from neurobrix import tables as nb_tables
from neurobrix.schema import Entry

ROOT = Path(__file__).resolve().parent.parent
CLASS = "nvidia-h200"
KEY = (1, 2048, 2048)  # the q/k/v-less square projection of the 1B-class models at batch 1
CALL = ("linear", "bf16", KEY)


@pytest.fixture(scope="module")
def table():
    return existing_table(ROOT / "tables", CLASS, "linear")


def entry_of(table, key=KEY) -> Entry:
    shape = dict(zip(("M", "N", "K"), key))
    return next(e for e in table.entries if e.domain.contains("bf16", shape))


def unranked(table) -> tuple[Entry, tuple[int, int, int]]:
    """A decode entry of one shape that no step has ranked yet, with alternatives to try (the shipped tables have
    ranked some: those would hide what a first ranking records)."""
    for e in table.entries:
        spans = e.domain.spans()
        if "bf16" in e.domain.dtypes and all(lo == hi for lo, hi in spans.values()) and spans["M"][0] <= 8:
            if not rank.ranked(e) and len(rank.alternatives(e, 4)) == 4:
                return e, (spans["M"][0], spans["N"][0], spans["K"][0])
    raise AssertionError("no unranked decode entry in the shipped tables")


def passed(examples=25, worst=0.5):
    return SimpleNamespace(passed=True, examples=examples, worst_ratio=worst, failure=None)


def test_alternatives_are_the_settings_rejected_only_as_slower_fastest_first(table):
    entry = entry_of(table)
    alts = rank.alternatives(entry, 6)
    assert 1 <= len(alts) <= 6
    times = [t for t, _ in alts]
    assert times == sorted(times)
    slower = {str(sorted(r.config.items())) for r in entry.proof.rejected if r.reason == "slower"}
    assert all(str(sorted(c.items())) in slower for _, c in alts)
    assert all(c != dict(entry.config) for _, c in alts)
    # the fastest are taken: no slower-rejected setting outside the list is faster than its last
    rest = [
        float(r.detail.split(" us")[0])
        for r in entry.proof.rejected
        if r.reason == "slower" and dict(r.config) not in [c for _, c in alts]
    ]
    assert all(t >= times[-1] for t in rest)


def test_a_setting_faster_in_the_step_is_proven_then_kept_and_the_old_one_recorded(table, tmp_path):
    entry, key = unranked(table)
    alts = rank.alternatives(entry, 4)
    proved = []

    def step_times(tried):
        assert tried[0] == dict(entry.config) and tried[1:] == [c for _, c in alts]
        return [100.0, 99.9, 98.0, 101.0, 99.5][: len(tried)]

    def prove(config):
        proved.append(config)
        return passed(25, 0.42)

    call = ("linear", "bf16", key)
    new, outcome, kept = rank.rank_call(entry, call, "a model at batch 1", 4, 0.003, step_times, prove)
    assert kept == alts[1][1] and proved == [alts[1][1]] and outcome.kept == 2
    assert dict(new.config) == alts[1][1] and new.domain == entry.domain
    assert new.proof.worst_error_ratio == 0.42 and new.proof.time_median_us == alts[1][0]
    step_lines = [r for r in new.proof.rejected if rank.MARK in r.detail]
    assert dict(step_lines[0].config) == dict(entry.config)
    assert step_lines[0].detail.startswith("100.00 us a step in the decode step of a model at batch 1 vs 98.00 us")
    assert len(step_lines) == len(alts)  # every setting tried but the one kept
    assert rank.ranked(new) and not rank.ranked(entry)
    # every setting tried appears once among the rejected, the kept one not at all
    configs = [dict(r.config) for r in new.proof.rejected]
    assert dict(new.config) not in configs
    assert configs.count(dict(entry.config)) == 1
    assert "kept, step 98.0 us against 100.0 us (1.020x)" in rank.render(outcome)

    # the rewritten table is one the engine reads: the call now resolves to the kept setting
    root = tmp_path / "tables"
    shutil.copytree(ROOT / "tables", root)
    entries = [new if e is entry else e for e in table.entries]
    write_table(root, CLASS, "linear", entries, dict(table.provenance))
    loaded = nb_tables.load(root)
    assert dict(loaded.index(CLASS, "linear").lookup("bf16", key).config) == alts[1][1]
    assert len(loaded.proofs(CLASS, "linear").entries) == len(table.entries)
    again = existing_table(root, CLASS, "linear")
    assert rank.ranked(entry_of(again, key))


@pytest.mark.parametrize("times", [[100.0, 99.8, 100.4], [100.0, 100.2, 101.0]])
def test_within_the_margin_the_certified_setting_stays_and_the_entry_is_marked_ranked(table, times):
    entry = entry_of(table)

    def prove(config):
        raise AssertionError("nothing faster than the margin: nothing to prove")

    new, outcome, kept = rank.rank_call(entry, CALL, "m at batch 1", 2, 0.003, lambda tried: times, prove)
    assert kept == dict(entry.config) and dict(new.config) == dict(entry.config) and outcome.kept == 0
    assert new.proof.worst_error_ratio == entry.proof.worst_error_ratio
    assert rank.ranked(new)
    assert "the certified setting stays" in rank.render(outcome)
    # a run with --again tries the alternatives no step has tried yet
    tried = {str(c) for c, _ in outcome.step_us}
    assert all(str(c) not in tried for _, c in rank.alternatives(new, 6))


def test_a_faster_setting_that_fails_its_proof_is_not_kept(table):
    entry = entry_of(table)
    failed = SimpleNamespace(passed=False, failure="linear M=1 N=2048 K=2048: error 3.1 x bound\nmore")
    new, outcome, kept = rank.rank_call(
        entry, CALL, "m at batch 1", 2, 0.003, lambda t: [100.0, 90.0, 99.0], lambda c: failed
    )
    assert kept == dict(entry.config) and dict(new.config) == dict(entry.config)
    assert "failed its proof: linear M=1 N=2048 K=2048: error 3.1 x bound" in rank.render(outcome)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance", "rank", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_rank_without_a_gpu_says_so_in_one_line():
    done = run("--class", CLASS, "--models", "meta-llama/Llama-3.2-1B-Instruct")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "GPU of the class" in done.stderr


def test_rank_names_a_model_outside_the_catalogue():
    done = run("--class", CLASS, "--models", "org/not-a-model")
    assert done.returncode == 2 and "org/not-a-model" in done.stderr and "Traceback" not in done.stderr
