"""Kernel mutants, round kmut5: the launchers' host glue (grids, workspaces, arrival counters, the in-place path).

- ``rotary``'s ``inplace=True`` (q, and k without a cache, rotated where they lie and returned) was in no draw: a
  launcher that ignored it (``rotary.inplace-ignored-for-q``, ``-for-k``) returned the right values in new tensors
  and passed. A quarter of the rotary draws now rotate in place; the record restores q and k before each run,
  judges against the drawn ones and requires the returned tensors to be q and k themselves.
- ``tile_counters`` made once and never grown (``linear.tile-counters-never-grown``), or freeing what it outgrew
  (``linear.outgrown-counters-freed``), passed: no example on the interpreter has more tiles than the first
  allocation (65,536; an LM head's gemv has more). The check now runs ``tile_counters`` on counters of its own
  (``check.counter_problems``, part of ``launch_problems`` for every op that takes ``counters``).
- A head-dim block not raised to 16 (``attention_prefill.head-block-below-sixteen``) computes the right values on
  the interpreter, which does not enforce a GPU's least dot tiles, and does not compile on one for head dims under
  16: the interpreter's dot now holds every tile to Triton's own NVIDIA rule (``min_dot_size``).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import torch

from conformance import check, harness, mutants

_BY_ID = {m.id: m for m in mutants.MUTANTS}


def _planted(module_name: str, mutant_id: str, tmp_path: Path):
    """neurobrix/ops/<module_name>.py with the registry's mutant planted, as a module of its own (its source in a
    file, where Triton's jit reads it)."""
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


# ------------------------------------------------------------------------------------- rotary in place
ROTARY = {"BLOCK_H": 4, "num_warps": 4}


def _inplace_case(cached: bool) -> harness.Case:
    """The first rotary draw (fp32, 6 tokens, 5 heads of 8) that rotates in place, with or without a cache."""
    for seed in range(400):
        case = harness.build("rotary", "fp32", {"T": 6, "H": 5, "D": 8}, harness.Values("fp32", "cpu", seed))
        if case.note["inplace"] and case.note["cache"] == cached:
            return case
    raise AssertionError("no draw of 400 rotated in place")


def test_rotary_in_place_is_drawn_restored_and_judged():
    """The shipped launcher passes, twice on one case (the record restores q and k before each run), and returns q
    (and k without a cache) itself."""
    for cached in (False, True):
        case = _inplace_case(cached)
        q, k = case.args["q"], case.args["k"]
        for _ in range(2):
            outputs = harness.run_kernel(case, ROTARY)
            assert outputs[0].data_ptr() == q.data_ptr()
            assert cached or outputs[1].data_ptr() == k.data_ptr()
            verdict = harness.judge(case, outputs, ROTARY)
            assert verdict.ratio <= 1, verdict.explanation


def test_rotary_in_place_ignored_is_caught(tmp_path):
    for mutant_id, cached in (("rotary.inplace-ignored-for-q", True), ("rotary.inplace-ignored-for-k", False)):
        planted = _planted("rotary", mutant_id, tmp_path)
        case = _inplace_case(cached)
        from conformance.specs import rotary as record

        record.reset(case)
        with harness.memory_guarded():
            outputs = planted.rotary(**case.args, config=ROTARY)
        verdict = harness.judge(case, outputs, ROTARY)
        assert verdict.ratio > 1 and "itself" in verdict.explanation, (mutant_id, verdict.explanation)


# ------------------------------------------------------------------------------------- the arrival counters
def test_counter_problems_pass_on_the_shipped_counters():
    assert check.counter_problems() == ()
    check.launch_problems.cache_clear()
    assert check.launch_problems("linear") == () and check.launch_problems("greedy_pick") == ()


def test_counter_problems_catch_counters_never_grown_or_outgrown_freed(tmp_path, monkeypatch):
    from neurobrix.ops import linear

    for mutant_id, said in (
        ("linear.tile-counters-never-grown", "counts past them"),
        ("linear.outgrown-counters-freed", "freed the counters"),
    ):
        planted = _planted("linear", mutant_id, tmp_path)
        monkeypatch.setattr(linear, "tile_counters", planted.tile_counters)
        found = check.counter_problems()
        assert any(said in problem for problem in found), (mutant_id, found)
        check.launch_problems.cache_clear()
        assert check.launch_problems("linear") and check.launch_problems("greedy_pick")
    check.launch_problems.cache_clear()


# ------------------------------------------------------------------------------------- a GPU's least dot tiles
def test_dot_below_a_gpus_least_tile_is_refused_on_the_interpreter(tmp_path):
    import pytest

    from neurobrix.ops import attention

    harness.interpreter_tf32()
    gen = torch.Generator().manual_seed(5)
    q = torch.randn(1, 20, 2, 8, generator=gen).half()
    k = torch.randn(1, 20, 1, 8, generator=gen).half()
    flash = {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4}
    shipped = attention.attention_prefill(q, k, k, 0.3, config=flash)  # its head-dim block is 16
    assert torch.isfinite(shipped).all()
    planted = _planted("attention", "attention_prefill.head-block-below-sixteen", tmp_path)
    with pytest.raises(Exception, match="least tile"):
        planted.attention_prefill(q, k, k, 0.3, config=flash)
