"""Every shipped setting of the attention kernels checked on the interpreter (the other kernels: test_shipped.py,
which this file splits with so that two workers share the work)."""

from __future__ import annotations

import pytest
from test_shipped import attention, check_shipped

from neurobrix.ops import SPECS


@pytest.mark.parametrize("kernel", [k for k in sorted(SPECS) if attention(k)])
def test_the_interpreter_class_and_every_shipped_attention_setting_pass(kernel):
    check_shipped(kernel)


def test_the_two_files_cover_every_kernel_once():
    assert sorted(k for k in SPECS if attention(k)) == ["attention_chunk", "attention_decode", "attention_prefill"]


def _shipped_single_split_blocks() -> set[int]:
    """The BLOCK_N of each decode setting with SPLITS 1 that `check --shipped` runs on the interpreter (shipped by a
    class, offered or latent), each checked in fp16 at its small shapes by
    test_the_interpreter_class_and_every_shipped_attention_setting_pass[attention_decode]."""
    from conftest import REPO

    from conformance import shipped
    from neurobrix import tables

    found, _ = shipped.targets("interpreter", tables.load(REPO / "tables"), True, ["attention_decode"])
    return {t.setting.config["BLOCK_N"] for t in found if t.setting.config["SPLITS"] == 1 and t.dtype == "fp16"}


@pytest.mark.parametrize("block_n", [16, 64])
def test_one_split_is_one_launch_within_the_bound(block_n, monkeypatch):
    """SPLITS 1: the split kernel stores the normalised output itself and the merge kernel is not launched; at
    the small shapes of the setting (one and two key blocks, tails, groups to 8, lengths 1 to the capacity)
    every output is within its float64 bound. The interpreter's tables hold no such setting; the H200 class ships
    SPLITS 1 at BLOCK_N 64 and 128 (since 2026-12-03), whose values the shipped check proves at these small shapes
    over the ci profile's examples: a block size shipped so is launched here on a few examples, for the one launch
    (its values within the bound there too), and one shipped by no class (16) over 30."""
    from conformance import check, harness
    from conformance.specs import RECORDS
    from neurobrix.ops import attention
    from neurobrix.schema import Domain, Setting

    examples = 4 if block_n in _shipped_single_split_blocks() else 30

    merges = []

    class Counted:
        def __init__(self, kernel):
            self.kernel = kernel

        def __getitem__(self, programs):
            merges.append(programs)
            return self.kernel[programs]

    config = {"SPLITS": 1, "BLOCK_N": block_n, "num_warps": 4, "num_stages": 2}
    small = RECORDS["attention_decode"].small(config)
    entry = Setting(Domain(("fp16",), tuple((d, lo, hi) for d, (lo, hi) in small.ranges.items())), config)
    monkeypatch.setattr(attention, "_attention_decode_merge_kernel", Counted(attention._attention_decode_merge_kernel))
    # the PDL check runs the launcher twice more per example, its launches recorded and not run: not merges computed
    monkeypatch.setattr(harness, "launch_switches", lambda case, config: [])
    result = check.check_entry("attention_decode", entry, "fp16", examples, "ci", shrink=False, small=small)
    assert result.passed, result.failure
    assert result.examples == examples and merges == []
    two = check.check_entry("attention_decode", Setting(entry.domain, {**config, "SPLITS": 2}), "fp16", 3, "ci")
    # the counter sees a merge where there is one: the three examples' and the bf16 launch at the setting's smallest
    # shape that check makes of every fp16 entry on the interpreter (kernel-mutant round 10)
    assert two.passed and len(merges) == 3 + 1
