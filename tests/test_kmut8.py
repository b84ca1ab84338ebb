"""Kernel mutants, round kmut8: attention where the check's draws never went.

- Every query's scores far below zero. A finite mask score or a finite start for the running max (-1e4, as fp16
  flash kernels often write it) is the same softmax as -inf wherever some real score of a row lies above it, and the
  records' values (exponents up to 2^4) keep every row's largest score within a few thousand of 0: four such bugs
  (decode's mask and running max, the flash kernel's causal mask and running max) passed. The attention records now
  put every key a query sees far below it in a quarter of their draws (``specs.attention._far_below``).
- A head dim that is a whole number of MMA steps but not a power of two (96): the flash kernel's unmasked loads,
  taken wherever "D fills its block" is tested as D % 16 == 0, read past every head, and the draws of 1..128 reached
  none of 48, 80, 96, 112. Every prefill and chunk setting now checks D = 96 first (``Small.explicit``).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from conformance import check, harness, shipped
from conformance.mutants import MUTANTS
from conformance.specs import attention as attention_record
from neurobrix import tables
from neurobrix.ops import SPECS
from neurobrix.ops import attention as attention_op

_BY_ID = {m.id: m for m in MUTANTS}
_KINDS = ("normal", "pow2", "row_scaled", "integers")


def _planted(mutant_id: str, tmp_path: Path):
    """neurobrix/ops/attention.py with the registry's mutant planted, as a module of its own (its source in a file,
    where Triton's jit reads it)."""
    mutant = _BY_ID[mutant_id]
    source = Path(attention_op.__file__).read_text(encoding="utf-8")
    assert source.count(mutant.old) == 1
    name = "attention_with_" + mutant_id.replace(".", "_").replace("-", "_")
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace(mutant.old, mutant.new), encoding="utf-8")
    module = type(sys)(name)
    module.__package__ = "neurobrix.ops"
    module.__file__ = str(path)
    sys.modules[name] = module  # Triton's jit looks its functions' globals up through the module
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
    return module


def _far_below_case(kernel: str, shape: dict[str, int]) -> harness.Case:
    """The first fp32 case of seeds 0.. whose draw put some query's keys far below it."""
    for seed in range(64):
        case = harness.build(kernel, "fp32", shape, harness.Values("fp32", "cpu", seed, _KINDS))
        if case.note.get("far below", "0 rows") != "0 rows":
            return case
    raise AssertionError(f"no {kernel} draw of 64 put a query's keys far below it")


FLASH = {"BLOCK_M": 16, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2}
DECODE = {"SPLITS": 2, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2}


@pytest.mark.parametrize(
    "kernel, shape, config, mutant_ids",
    [
        (
            "attention_decode",
            {"B": 2, "S": 70, "D": 16, "G": 2},
            DECODE,
            ("attention_decode.masked-score-minus-1e4", "attention_decode.running-max-from-minus-1e4"),
        ),
        (
            "attention_prefill",
            {"S": 40, "D": 16, "G": 2},
            FLASH,
            ("attention_prefill.diagonal-masked-score-minus-1e4", "attention_chunk.running-max-from-minus-1e4"),
        ),
    ],
)
def test_scores_far_below_zero_show_a_finite_mask(tmp_path, monkeypatch, kernel, shape, config, mutant_ids):
    case = _far_below_case(kernel, shape)
    scores_top = _largest_score(case)
    assert scores_top < -1.0e4, scores_top  # in the kernels' log2 units: below a finite mask of -1e4
    kept = harness.judge(case, harness.run_kernel(case, config), config)
    assert kept.ratio <= 1, kept.explanation
    for mutant_id in mutant_ids:
        planted = _planted(mutant_id, tmp_path)
        monkeypatch.setitem(SPECS, kernel, dataclasses.replace(SPECS[kernel], launch=getattr(planted, kernel)))
        verdict = harness.judge(case, harness.run_kernel(case, config), config)
        assert verdict.ratio > 1, (mutant_id, verdict.ratio)
        monkeypatch.undo()


def _largest_score(case: harness.Case) -> float:
    """The largest score (log2 units, as the kernels scale them) of the query heads the draw moved, over the keys
    each sees: each row's largest must lie below -1e4 for some row."""
    a = case.args
    scale = a["scale"] * attention_op.LOG2E
    if case.kernel == "attention_decode":
        q, k, lengths = a["q"].double(), a["k_cache"].double(), a["lengths"].tolist()
        G = q.shape[1] // k.shape[2]
        return min(
            float((k[b, :n, h] @ q[b, h * G]).max()) * scale for b, n in enumerate(lengths) for h in range(k.shape[2])
        )
    q, k = a["q"].double(), a["k"].double()
    G = q.shape[2] // k.shape[2]
    past = k.shape[1] - q.shape[1]
    return min(
        float((k[b, : past + 1, h] @ q[b, 0, h * G]).max()) * scale
        for b in range(q.shape[0])
        for h in range(k.shape[2])
    )


def _chunk_target() -> shipped.Target:
    """The shipped chunk setting whose small shapes cost least (64 x 64 blocks)."""
    found, _ = shipped.targets("interpreter", tables.load(), True, ["attention_chunk"])
    return min(found, key=lambda t: (t.setting.config["BLOCK_M"], t.setting.config["BLOCK_N"]))


def test_every_flash_setting_checks_a_head_dim_of_96_first():
    for kernel in ("attention_prefill", "attention_chunk"):
        found, _ = shipped.targets("interpreter", tables.load(), True, [kernel])
        assert found
        for target in found:
            domain = check.drawable(kernel, target.setting.domain.ranges)
            (shape,) = target.small.explicit
            assert shape["D"] == attention_record.EVEN_NOT_POW2 == 96
            assert all(lo <= shape[d] <= hi for d, (lo, hi) in domain.items()), (shape, domain)


def test_unmasked_loads_at_a_multiple_of_16_are_caught(tmp_path, monkeypatch):
    target = _chunk_target()

    def run() -> check.EntryResult:
        return check.check_entry(
            "attention_chunk",
            target.setting,
            target.dtype,
            1,
            "ci",
            shrink=False,
            small=target.small,
            shipped_in=target.where,
        )

    kept = run()
    assert kept.passed, kept.failure
    planted = _planted("attention_chunk.even-d-at-multiple-of-16", tmp_path)
    monkeypatch.setitem(
        SPECS, "attention_chunk", dataclasses.replace(SPECS["attention_chunk"], launch=planted.attention_chunk)
    )
    found = run()
    assert not found.passed and "D=96" in found.failure, found.failure
