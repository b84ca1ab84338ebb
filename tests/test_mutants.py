"""The suite proves its own power: planted bugs are caught with the entry named, and a crash is named too.

The anchors of every mutant must fit today's source exactly (a refactor that moves code fails here,
loudly, instead of leaving a mutant that plants nothing). One mutant runs end to end beside a
harmless change, a planted crash is reported against its entry with the example, and the fast subset
(what CI runs of `python -m conformance mutants`) is caught whole.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from conformance import mutants
from conformance.__main__ import main as conformance_main
from conformance.mutants import MUTANTS, Mutant
from conformance.workers import Crashed, Workers
from neurobrix.ops import SPECS as KERNELS

SILU = "neurobrix/ops/silu_mul.py"
HARMLESS = Mutant(
    "silu_mul.comment-changed",
    "silu_mul",
    SILU,
    "    # silu(g) * u = g / (1 + exp(-g)) * u\n",
    "    # silu(g) * u\n",
    "a comment reworded: nothing a check could catch",
    "wrong formula",
)
CRASH_FP16 = Mutant(
    "silu_mul.segfault-in-fp16",
    "silu_mul",
    SILU,
    "    M, I = gu.shape[0], gu.shape[1] // 2\n",
    "    M, I = gu.shape[0], gu.shape[1] // 2\n"
    "    if gu.dtype == torch.float16:  # the process dies as a heap-corrupting store makes it die\n"
    "        import os, signal\n"
    "        os.kill(os.getpid(), signal.SIGSEGV)\n",
    "the fp16 launch kills its process",
    "store without mask",
)


def test_every_anchor_occurs_exactly_once_in_todays_source():
    assert mutants.anchor_problems(MUTANTS) == []


def test_the_set_plants_every_class_of_bug_in_every_kernel_and_variant():
    assert len(MUTANTS) >= 70
    assert {m.kernel for m in MUTANTS} == set(KERNELS)
    assert {m.bug for m in MUTANTS} == set(mutants.CLASSES)
    prefixes = {m.id.rsplit(".", 1)[0] for m in MUTANTS}
    assert {f"linear.{v}" for v in KERNELS["linear"].variants} | {"linear.merge"} <= prefixes
    fast = [m for m in MUTANTS if m.fast]
    assert {m.kernel for m in fast} == set(KERNELS)
    # the fast subset (CI) plants a bug in every variant of linear, its split-K merge and rope_cache's scaling
    assert {v for m in fast for v in m.variants} == set(KERNELS["linear"].variants)
    assert {"linear.merge.skips-last-split", "rotary.llama3-thresholds-swapped"} <= {m.id for m in fast}
    # and a bug each that no value can show on the interpreter alone: an unrounded output, a kernel not waiting for PDL
    assert {"extra rounding", "store without mask", "wrong output dtype", "dependent launch misplaced"} <= {
        m.bug for m in fast
    }
    skinny = {m.bug for m in MUTANTS if m.variants == ("skinny",)}
    assert {
        "mask off by one",
        "tail dropped",
        "low-precision accumulation",
        "extra rounding",
        "store without mask",
    } <= skinny


def test_a_mutant_that_no_longer_fits_is_reported_not_skipped():
    moved = Mutant(
        "silu_mul.moved",
        "silu_mul",
        SILU,
        "out = g / (1.0 + tl.exp(-g)) * u  # gone",
        "x",
        "an anchor the source no longer holds",
        "wrong formula",
    )
    no_variant = Mutant("silu_mul.variant", "silu_mul", SILU, "x", "y", "", "wrong formula", variants=("gemv",))
    problems = mutants.anchor_problems(
        [moved, moved, no_variant, Mutant("a.b", "silu_mul", "elsewhere/x.py", "a", "b", "", "?")]
    )
    assert any("occurs 0 times" in p for p in problems)
    assert any("kernel 'silu_mul' has no variant(s) gemv" in p for p in problems)
    assert any("used twice" in p for p in problems)
    assert any("in neither package" in p for p in problems) and any("unknown class" in p for p in problems)
    with pytest.raises(Exception, match="no longer fit the source"):
        mutants.run([moved])


def test_only_a_failure_naming_an_entry_catches_a_mutant():
    m = MUTANTS[0]
    entry = {
        "kernel": m.kernel,
        "dtype": "fp16",
        "domain": "fp16 M=1..",
        "passed": False,
        "config": {"variant": "gemv", "BLOCK_N": 16},
        "shipped_in": "shipped in nvidia-h200 (2 entries): fp16",
        "failure": "linear fp16 M=3 ..., config ...\n1 of 9 elements exceed the bound",
    }
    assert mutants.judge(m, 1, {"entries": [entry]}, "", 1.0).caught
    assert mutants.judge(m, 1, {"entries": [entry]}, "", 1.0).how == "wrong result"
    named = mutants.judge(m, 1, {"class": "interpreter", "entries": [entry]}, "", 1.0).entry
    assert named == ("linear fp16 M=1.. config variant=gemv BLOCK_N=16 [shipped in nvidia-h200 (2 entries): fp16]")
    own = mutants.judge(m, 1, {"class": "interpreter", "entries": [{**entry, "shipped_in": ""}]}, "", 1.0).entry
    assert own.endswith("[interpreter entry]")
    died = mutants.judge(m, -11, None, "Fatal Python error: Segmentation fault", 1.0)
    assert not died.caught and "killed by SIGSEGV" in died.how
    assert not mutants.judge(m, 0, {"entries": [{**entry, "passed": True}]}, "", 1.0).caught
    starved = {**entry, "out_of_memory": True}
    assert not mutants.judge(m, 1, {"entries": [starved]}, "", 1.0).caught
    other = {**entry, "kernel": "rms_norm"}
    assert not mutants.judge(m, 1, {"entries": [other]}, "", 1.0).caught


def _value_or_die(x: int) -> int:
    if x == 1:
        os.kill(os.getpid(), signal.SIGSEGV)
    return 10 * x


def test_an_isolated_worker_that_dies_takes_only_its_own_item():
    with Workers(1, [None], isolate=True) as pool:
        results = pool.map(_value_or_die, [(0,), (1,), (2,)])
        assert results[0] == 0 and results[2] == 20
        assert isinstance(results[1], Crashed) and "killed by SIGSEGV" in results[1].message
        assert pool.map(_value_or_die, [(3,)]) == [30]  # a fresh worker took the dead one's place


def test_a_mutant_end_to_end_a_harmless_change_survives_and_the_exit_status_says_so(tmp_path, monkeypatch, capsys):
    """`mutants --only`: the exp(-g) -> exp(g) bug caught with its entry, example, worst element and bound;
    a reworded comment survives (nothing to catch), so the command exits 1 and its JSON says why."""
    monkeypatch.setattr(mutants, "MUTANTS", (*MUTANTS, HARMLESS))
    report = tmp_path / "mutants.json"
    assert (
        conformance_main(
            [
                "mutants",
                "--only",
                "silu_mul.exp-sign",
                HARMLESS.id,
                "--jobs",
                "2",
                "--examples",
                "4",
                "--json",
                str(report),
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert "kill rate: 1 of 2 mutants caught (50.0 %)" in out and f"survived: {HARMLESS.id}" in out
    data = json.loads(report.read_text())
    caught, harmless = data["outcomes"]
    assert caught["caught"] and caught["how"] == "wrong result" and caught["entry"].startswith("silu_mul ")
    text = "\n".join(caught["failures"])
    assert "config BLOCK_M=" in text and "[values: " in text and "exceed the bound" in text
    assert "|err|" in text and "> bound" in text
    assert not harmless["caught"] and harmless["how"] == "check passed"


def test_a_kernel_that_kills_its_process_is_named_and_the_check_goes_on():
    """The fp16 launch dies (SIGSEGV): that entry is reported crashed with the example it was running and
    its config; the fp32 entry after it is still checked, and passes."""
    (outcome,) = mutants.run([CRASH_FP16], examples=3)
    assert outcome.caught and outcome.how == "crashed (killed by SIGSEGV)"
    (failure,) = outcome.failures
    assert failure.startswith("silu_mul fp16 ")
    assert "during example 1: silu_mul fp16 M=" in failure and "config BLOCK_M=" in failure


def test_the_fast_subset_is_caught_whole():
    """What CI runs of `python -m conformance mutants --fast`: every mutant caught, each naming an entry; a
    bug in a GPU class's variant (gemv, skinny, tma, the split-K merge) by a setting shipped in that class."""
    chosen = mutants.select(fast=True)
    outcomes = mutants.run(chosen, jobs=2)
    assert all(o.caught for o in outcomes), mutants.render(outcomes)
    for m, o in zip(chosen, outcomes, strict=True):
        assert o.failures and all("config " in f for f in o.failures), o
        if m.variants:
            assert any(f"variant={v} " in o.entry for v in m.variants), o.entry
        if set(m.variants) & {"gemv", "skinny", "tma"}:
            assert "[shipped in nvidia-h200 (" in o.entry, o.entry
