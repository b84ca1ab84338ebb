"""Kernel mutants, round kmut4: kernel paths no mutant touched, and what the suite could not see there.

- A "safe" 1e-6 added to the softmax sum the flash output is divided by
  (``attention_prefill.output-eps-in-division``, and decode's merge: ``attention_decode.merge-eps-in-division``)
  passed: the general attention bound charges any order of a key block's additions, about 70 fp32 roundings, where
  the divisor's 1e-6 is 17. A query that sees a single key returns that key's value within a few roundings (its
  weight is one number in the numerator and the denominator): the prefill and chunk records now judge the first
  query of a chunk that starts at position 0, and the decode record every sequence of length 1, under
  ``bounds.attention_one_key``. (Decode's one-split output divided the same way is not kept: SPLITS 1 ships, and is
  offered, only for bf16, checked in fp16, where 1e-6 lies below the output's rounding.)
- A kernel launched with PDL but handed ``PDL=False`` by ``split`` (``rms_norm.pdl-switch-off``) computes the same
  values where nothing runs PDL: the check now runs ``split`` and requires the kernels' switch to be Triton's
  ``launch_pdl`` (``check.switch_problems``).
- ``rope_cache`` ignoring a partial rotary factor's ``rotary_dim`` (``rotary.rotary-dim-ignored``) passed: config.json
  keeps rotary_dim = D - 1 for the llama3, linear and dynamic rules, and no rotary draw held one. Every rotary case
  now also compares a linear table over D - 1 dims with the reference, which derives it (held to transformers').
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from conformance import bounds, check, harness, mutants, reference
from conformance.specs import rotary as rotary_spec

_BY_ID = {m.id: m for m in mutants.MUTANTS}


def _planted(module_name: str, mutant_id: str, tmp_path: Path):
    """neurobrix/ops/<module_name>.py with the registry's mutant planted, as a module of its own (its source in a
    file, where Triton's jit reads it)."""
    import importlib

    engine = importlib.import_module(f"neurobrix.ops.{module_name}")
    mutant = _BY_ID[mutant_id]
    source = Path(engine.__file__).read_text(encoding="utf-8")
    assert source.count(mutant.old) == 1
    name = f"{module_name}_with_{mutant_id.replace('.', '_').replace('-', '_')}"
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace(mutant.old, mutant.new), encoding="utf-8")
    module = type(sys)(name)
    module.__package__ = "neurobrix.ops"  # its relative imports
    module.__file__ = str(path)
    sys.modules[name] = module  # Triton's jit looks its functions' globals up through the module
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
    return module


# ------------------------------------------------------------------------------------- attention: one key
FLASH = {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4}
DECODE = {"SPLITS": 2, "BLOCK_N": 16, "num_warps": 4}


def _ratio(case: harness.Case, outputs, config) -> tuple[float, str]:
    verdict = harness.judge(case, outputs, config)
    return verdict.ratio, verdict.explanation


def _decode_case(seed: int) -> harness.Case:
    case = harness.build(
        "attention_decode", "fp32", {"B": 2, "S": 40, "D": 16, "G": 2}, harness.Values("fp32", "cpu", seed)
    )
    assert 1 in case.args["lengths"].tolist()  # a sequence of one position: the judge holds it to its value
    return case


def test_one_key_bound_is_a_few_roundings_of_the_value():
    v = torch.tensor([[1.0, -3.0, 0.0]], dtype=torch.float64)
    got = bounds.attention_one_key(v, torch.float32, 1)
    assert float(got[0, 0]) < 1e-6 and float(got[0, 1]) < 3e-6  # 1e-6 of |v| shows
    assert float(got[0, 0]) > 10 * bounds.U32  # the merge's and the rescale's roundings, the division
    fp16 = bounds.attention_one_key(v, torch.float16, 1)
    assert float(fp16[0, 0]) >= bounds.unit_roundoff(torch.float16) / 2  # the output's own rounding


@pytest.mark.parametrize(
    "kernel, mutant_id, shape",
    [
        ("attention_prefill", "attention_prefill.output-eps-in-division", {"S": 5, "D": 16, "G": 2}),
        ("attention_chunk", "attention_prefill.output-eps-in-division", {"C": 3, "S": 3, "D": 16, "G": 1}),
    ],
)
def test_flash_first_query_is_its_keys_value(tmp_path, kernel, mutant_id, shape):
    """Before: both passed the record's judge (the first query's error, 1e-6 relative, within the general bound)."""
    from neurobrix.ops import SPECS

    case = harness.build(kernel, "fp32", shape, harness.Values("fp32", "cpu", 1))
    good = harness.run_kernel(case, FLASH)
    assert _ratio(case, good, FLASH)[0] <= 1
    planted = _planted("attention", mutant_id, tmp_path)
    launch = planted.attention_prefill if kernel == "attention_prefill" else planted.attention_chunk
    assert SPECS[kernel].launch.__name__ == launch.__name__
    bad = launch(**case.args, config=FLASH)
    ratio, why = _ratio(case, (bad,), FLASH)
    assert ratio > 1 and "one key" in why


@pytest.mark.parametrize("mutant_id, config", [("attention_decode.merge-eps-in-division", DECODE)])
def test_decode_sequence_of_one_position_is_its_value(tmp_path, mutant_id, config):
    """Before: it passed the record's judge."""
    case = _decode_case(2)
    good = harness.run_kernel(case, config)
    assert _ratio(case, good, config)[0] <= 1
    planted = _planted("attention", mutant_id, tmp_path)
    bad = planted.attention_decode(**case.args, config=config)
    ratio, why = _ratio(case, (bad,), config)
    assert ratio > 1 and "length 1" in why


# ------------------------------------------------------------------------------------- rotary: rotary_dim
def test_partial_rotary_reference_is_transformers_own():
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    for dim in (4, 64, 128):
        partial = (dim - 0.5) / dim  # int(dim x partial) = dim - 1, as config.json's reading keeps it
        config = transformers.LlamaConfig(
            hidden_size=4 * dim,
            num_attention_heads=4,
            head_dim=dim,
            partial_rotary_factor=partial,
            rope_parameters={"rope_theta": 10000.0, "rope_type": "linear", "factor": 2.0},
        )
        theirs, _ = ROPE_INIT_FUNCTIONS["linear"](config, "cpu")
        ours = reference.rope_frequencies(
            dim, 10000.0, 1, {"rope_type": "linear", "factor": 2.0, "rotary_dim": dim - 1}
        )
        assert torch.allclose(theirs.double(), ours.inv_freq, rtol=1e-6, atol=0)  # float32 against float64


def _failing_tables(monkeypatch, rope_cache, seed: int, dim: int) -> list[str]:
    case = harness.build("rotary", "fp32", {"T": 4, "H": 3, "D": dim}, harness.Values("fp32", "cpu", seed))
    monkeypatch.setattr(rotary_spec, "rope_cache", rope_cache)
    return [
        label
        for got, want, bound, label in rotary_spec._tables(case)
        if not ((got.double() - want).abs() <= bound).all()
    ]


@pytest.mark.parametrize("seed, dim", [(0, 64), (3, 4)])
def test_the_rotary_record_catches_rotary_dim_ignored_in_every_case(monkeypatch, tmp_path, seed, dim):
    """Before: every table passed (no table of a partial rotary factor was compared)."""
    from neurobrix.ops import rope_cache

    assert _failing_tables(monkeypatch, rope_cache, seed, dim) == []
    planted = _planted("rotary", "rotary.rotary-dim-ignored", tmp_path)
    failing = _failing_tables(monkeypatch, planted.rope_cache, seed, dim)
    assert failing and all("rotary_dim" in name for name in failing)


# ------------------------------------------------------------------------------------- PDL: the kernels' switch
def test_split_hands_the_kernels_the_launch_pdl_switch(tmp_path, monkeypatch):
    """Before: the check read only the kernels' and dependent_launch's source, and a split handing PDL=False passed."""
    import neurobrix.ops._common as common

    assert check.switch_problems() == ()
    planted = _planted("_common", "rms_norm.pdl-switch-off", tmp_path)
    monkeypatch.setattr(common, "split", planted.split)
    problems = check.switch_problems()
    assert len(problems) == 1 and "split(pdl=True) hands the kernels PDL=False" in problems[0]
