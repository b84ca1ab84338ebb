"""Kernel mutants, round kmut3: the whole registry run again, and what it could not see.

- yarn's high correction dim left unclipped (``rotary.yarn-high-dim-not-clipped``) survived the rotary record:
  clipping needs a context long against theta^2, which the drawn yarn configurations (theta >= 100) almost never
  have. The record now compares ``YARN_CLIPPED``'s table (theta 10, beta_fast 512, original context 4,096: the high
  dim at 1.4 D) in every case, after the draws; its float64 reference is held to transformers' own
  ``_compute_yarn_parameters`` there.
- yarn's zero-width guard dropped (``rotary.yarn-zero-width-unguarded``) was equivalent on every draw (the drawn
  beta_fast always exceeds beta_slow). ``YARN_ZERO_WIDTH`` (beta_fast = beta_slow = 10, original context 60, theta
  10^4: both dims truncated and clipped to 0 at every head dim) is compared in every case too; without the guard its
  dim 0 is 0 / 0.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
import torch

from conformance import bounds, harness, mutants, reference
from conformance.specs import rotary as rotary_spec


def _correction_dim(scaling: dict, theta: float, dim: int, rotations: float) -> float:
    context = scaling["original_max_position_embeddings"]
    return dim * math.log(context / (2 * math.pi * rotations)) / (2 * math.log(theta))


@pytest.mark.parametrize("name", ["YARN_CLIPPED", "YARN_ZERO_WIDTH"])
def test_the_fixed_yarn_tables_reach_their_case_and_their_reference_is_transformers_own(name):
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import _compute_yarn_parameters

    rope = getattr(rotary_spec, name)
    scaling = rope.rope_scaling
    for dim in (2, 4, 8, 64, 128):
        high = math.ceil(_correction_dim(scaling, rope.theta, dim, scaling.get("beta_slow") or 1))
        low = max(math.floor(_correction_dim(scaling, rope.theta, dim, scaling.get("beta_fast") or 32)), 0)
        if name == "YARN_CLIPPED" and dim > 2:
            assert high > dim - 1 and low < dim // 2 - 1  # clipped, and a frequency on the ramp
        elif name == "YARN_ZERO_WIDTH":
            assert low == min(high, dim - 1) == 0  # zero width, at dim 0
        config = transformers.LlamaConfig(
            hidden_size=4 * dim,
            num_attention_heads=4,
            head_dim=dim,
            rope_parameters={"rope_theta": rope.theta, **scaling},
        )
        theirs, attention = _compute_yarn_parameters(config, "cpu")
        base = [1.0 / rope.theta ** (2 * i / dim) for i in range(dim // 2)]
        ours = torch.tensor(reference.yarn_inv_freq(base, rope.theta, scaling), dtype=torch.float64)
        assert torch.allclose(theirs.double(), ours, rtol=1e-6, atol=0)  # float32 against float64
        assert attention == pytest.approx(reference.yarn_attention_factor(scaling), rel=1e-12)


def _mutated_rope_cache(mutant_id: str):
    """rope_cache of neurobrix/ops/rotary.py with the registry's mutant planted (a module of its own)."""
    import neurobrix.ops.rotary as engine

    mutant = {m.id: m for m in mutants.MUTANTS}[mutant_id]
    source = Path(engine.__file__).read_text(encoding="utf-8")
    assert source.count(mutant.old) == 1
    module = type(sys)("rotary_with_" + mutant_id.replace(".", "_").replace("-", "_"))
    module.__package__ = "neurobrix.ops"  # its relative imports
    exec(compile(source.replace(mutant.old, mutant.new), engine.__file__, "exec"), module.__dict__)
    return module.rope_cache


def _failing_tables(monkeypatch, rope_cache, seed: int, dim: int) -> list[str]:
    case = harness.build("rotary", "fp32", {"T": 4, "H": 3, "D": dim}, harness.Values("fp32", "cpu", seed))
    monkeypatch.setattr(rotary_spec, "rope_cache", rope_cache)
    return [
        label
        for got, want, bound, label in rotary_spec._tables(case)
        if not ((got.double() - want).abs() <= bound).all()
    ]


@pytest.mark.parametrize(
    "mutant, seed, dim, label",
    [
        ("rotary.yarn-high-dim-not-clipped", 0, 64, "clipped"),
        ("rotary.yarn-high-dim-not-clipped", 3, 4, "clipped"),
        ("rotary.yarn-zero-width-unguarded", 0, 64, "zero width"),
        ("rotary.yarn-zero-width-unguarded", 3, 2, "zero width"),
    ],
)
def test_the_rotary_record_catches_the_yarn_mutants_in_every_case(monkeypatch, mutant, seed, dim, label):
    """Before: every table passed (the case's drawn yarn, theta 3554 / 156798, neither clips nor has zero width)."""
    from neurobrix.ops import rope_cache

    assert _failing_tables(monkeypatch, rope_cache, seed, dim) == []
    failing = _failing_tables(monkeypatch, _mutated_rope_cache(mutant), seed, dim)
    assert failing and all(label in name for name in failing)


def _split_gap(case: harness.Case, splits: int, key_block: int) -> float:
    """The largest amount (in log2 units) by which a later split's max score exceeds split 0's, over every
    sequence and query head: what a merge that weighs the splits against split 0's max puts into exp2."""
    a = case.args
    q, k, n, scale = a["q"].double(), a["k_cache"].double(), a["lengths"].tolist(), a["scale"]
    chunk = bounds.decode_chunk(k.shape[1], key_block, splits)
    group = q.shape[1] // k.shape[2]
    gap = -math.inf
    for b, length in enumerate(n):
        for head in range(q.shape[1]):
            scores = (k[b, :length, head // group] @ q[b, head]) * scale * math.log2(math.e)
            maxima = [float(scores[s : s + chunk].max()) for s in range(0, length, chunk)]
            gap = max(gap, *(m - maxima[0] for m in maxima[1:]), -math.inf)
    return gap


SHAPE = {"B": 2, "S": 150, "D": 64, "G": 2}  # a capacity of 150: splits of 96 keys at SPLITS 2, BLOCK_N 32


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_decode_draws_put_a_later_splits_max_past_exp2s_range_above_the_first(dtype):
    """``attention_decode.merge-weights-against-split-zero`` survived the whole registry's run (2026-12-05): no
    draw of the ci profile put a later split's max 128 (log2 units) above split 0's, where the merge's weights
    overflow. A quarter of the decode draws now place such a key; before, none of these 24 seeds did."""
    gaps = [
        _split_gap(harness.build("attention_decode", dtype, SHAPE, harness.Values(dtype, "cpu", seed)), 2, 32)
        for seed in range(24)
    ]
    assert max(gaps) > 128
