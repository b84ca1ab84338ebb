"""Kernel mutants, round kmut9: greedy_pick's tokens past int16, and a Llama-3 rule with low_freq_factor above 1.

- A token past 2^15. greedy_pick's record draws vocabularies up to 1,200 on the interpreter (and up to 2 x BLOCK_V +
  1 for the GPU classes' settings), so a token narrowed to int16 (right for Llama 2's 32,000, wrapped for Llama 3's
  128,256) passed every check. The record now names a shape at that edge of the op's contract
  (``Record.edges``: two rows of 32,770 logits, checked first in every entry whose domain holds it), and past 2^15
  its draws put every row's token there (``specs.pick.build``).
- A Llama-3 rule with low_freq_factor above 1. Every catalogue model takes 1, and a rope_cache that starts the
  slowed band at the original context (not at it / low_freq_factor) passed: rotary's check now compares
  ``LLAMA3_LOW_FACTOR``'s tables in every case, whose first pair (a wavelength of 2 pi) lies in the band between.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import torch

from conformance import bounds, check, harness, reference
from conformance.mutants import MUTANTS
from conformance.specs import RECORDS
from conformance.specs import pick as pick_record
from conformance.specs import rotary as rotary_record
from neurobrix.ops import SPECS
from neurobrix.ops import pick as pick_op
from neurobrix.ops import rotary as rotary_op
from neurobrix.schema import Domain, Setting

_BY_ID = {m.id: m for m in MUTANTS}


def _planted(mutant_id: str, module: object, tmp_path: Path):
    """``module``'s source with the registry's mutant planted, as a module of its own (its source in a file, where
    Triton's jit reads it)."""
    mutant = _BY_ID[mutant_id]
    source = Path(module.__file__).read_text(encoding="utf-8")
    assert source.count(mutant.old) == 1
    name = "kmut9_" + mutant_id.replace(".", "_").replace("-", "_")
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace(mutant.old, mutant.new), encoding="utf-8")
    planted = type(sys)(name)
    planted.__package__ = "neurobrix.ops"
    planted.__file__ = str(path)
    sys.modules[name] = planted  # Triton's jit looks its functions' globals up through the module
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), planted.__dict__)
    return planted


def test_pick_edges_put_every_token_past_int16():
    assert RECORDS["greedy_pick"].edges == pick_record.EDGES
    (shape,) = pick_record.EDGES
    assert shape["V"] > pick_record.PAST_INT16 == 1 << 15
    for dtype in ("fp16", "fp32"):
        case = harness.build("greedy_pick", dtype, shape, harness.Values(dtype, "cpu", 0, ("normal",)))
        tokens = reference.greedy_pick(case.args["logits"])
        assert all(int(t) >= 1 << 15 for t in tokens), (dtype, case.note, tokens)


def test_a_token_narrowed_to_int16_fails_the_interpreter_entry(tmp_path, monkeypatch):
    # the interpreter's own greedy_pick setting over its own (unbounded) domain, one draw besides the edge
    setting = Setting(Domain(("fp32",), (("B", 1, None), ("V", 1, None))), {"BLOCK_V": 256, "num_warps": 4})

    def run() -> check.EntryResult:
        return check.check_entry("greedy_pick", setting, "fp32", 1, "ci", shrink=False)

    kept = run()
    assert kept.passed, kept.failure
    planted = _planted("greedy_pick.token-narrowed-to-int16", pick_op, tmp_path)
    monkeypatch.setitem(SPECS, "greedy_pick", dataclasses.replace(SPECS["greedy_pick"], launch=planted.greedy_pick))
    found = run()
    assert not found.passed and "V=32770" in found.failure, found.failure


def _worst(cos_sin: tuple[torch.Tensor, torch.Tensor], rope: rotary_record.Rope, head_dim: int, rows: int) -> float:
    tables = reference.rope_frequencies(head_dim, rope.theta, rows, rope.rope_scaling)
    angle = torch.arange(rows, dtype=torch.float64)[:, None] * tables.inv_freq[None, :]
    worst = 0.0
    for got, table in zip(cos_sin, (tables.cos, tables.sin), strict=True):
        bound = bounds.rope_table(table, angle=angle, scaling=rope.rope_scaling, theta=rope.theta)
        worst = max(worst, float(((got.double() - table).abs() / bound).max()))
    return worst


def test_a_llama3_rule_ignoring_low_freq_factor_fails_at_every_head_dim(tmp_path):
    rope = rotary_record.LLAMA3_LOW_FACTOR
    assert rope.rope_scaling["low_freq_factor"] > 1
    planted = _planted("rotary.llama3-low-factor-ignored", rotary_op, tmp_path)
    for head_dim in (2, 6, 64, 128):
        kept = rotary_op.rope_cache(head_dim, rope.theta, 40, rope.rope_scaling)
        assert _worst(kept, rope, head_dim, 40) <= 1, head_dim
        wrong = planted.rope_cache(head_dim, rope.theta, 40, rope.rope_scaling)
        assert _worst(wrong, rope, head_dim, 40) > 1, head_dim


def test_rotary_judge_compares_the_low_factor_table_in_every_case(monkeypatch, tmp_path):
    case = harness.build("rotary", "fp32", {"T": 3, "H": 2, "D": 4}, harness.Values("fp32", "cpu", 0, ("normal",)))
    labels = [pair[3] for pair in rotary_record._tables(case)]
    assert any(str(rotary_record.LLAMA3_LOW_FACTOR) in label for label in labels), labels
    planted = _planted("rotary.llama3-low-factor-ignored", rotary_op, tmp_path)
    monkeypatch.setattr(rotary_record, "rope_cache", planted.rope_cache)
    fresh = harness.build("rotary", "fp32", {"T": 3, "H": 2, "D": 4}, harness.Values("fp32", "cpu", 0, ("normal",)))
    ratios = {
        label: float(((got.double() - ref.double()).abs() / bound.double()).max())
        for got, ref, bound, label in rotary_record._tables(fresh)
    }
    low_factor = [r for label, r in ratios.items() if str(rotary_record.LLAMA3_LOW_FACTOR) in label]
    assert len(low_factor) == 2 and min(low_factor) > 1, ratios  # its cos and its sin table
