"""Kernel mutants, round kmut10: a 16-bit output allocated as fp16 whatever the input's dtype.

The interpreter checks bf16 settings in fp16 (its bf16 arithmetic is broken upstream), so no check ever launched a
kernel in bf16 on CPU, and a launcher that allocates its output as fp16 for any 16-bit input (a bf16 model's
activations then come back in fp16) passed every check. ``check.check_entry`` now launches each fp16 entry once more
in bf16 on the interpreter, at its domain's smallest shape, and judges its outputs' dtypes and shapes (not their
values): ``check.bf16_outputs``.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from conformance import check
from conformance.mutants import MUTANTS
from neurobrix.ops import SPECS
from neurobrix.ops import linear as linear_op
from neurobrix.ops import silu_mul as silu_mul_op
from neurobrix.schema import Domain, Setting

_BY_ID = {m.id: m for m in MUTANTS}


def _planted(mutant_id: str, module: object, tmp_path: Path):
    """``module``'s source with the registry's mutant planted, as a module of its own (its source in a file, where
    Triton's jit reads it)."""
    mutant = _BY_ID[mutant_id]
    source = Path(module.__file__).read_text(encoding="utf-8")
    assert source.count(mutant.old) == 1
    name = "kmut10_" + mutant_id.replace(".", "_").replace("-", "_")
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace(mutant.old, mutant.new), encoding="utf-8")
    planted = type(sys)(name)
    planted.__package__ = "neurobrix.ops"
    planted.__file__ = str(path)
    sys.modules[name] = planted  # Triton's jit looks its functions' globals up through the module
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), planted.__dict__)
    return planted


@pytest.mark.parametrize(
    "kernel, module, mutant_id, ranges, config",
    [
        (
            "silu_mul",
            silu_mul_op,
            "silu_mul.output-half-for-16-bit",
            (("M", 1, None), ("I", 1, None)),
            {"BLOCK_M": 32, "BLOCK_I": 256, "num_warps": 4},
        ),
        (
            "linear",
            linear_op,
            "linear.output-half-for-16-bit",
            (("M", 5, None), ("N", 1, None), ("K", 1, None)),
            {"variant": "tiled", "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 4, "num_warps": 4},
        ),
    ],
)
def test_an_fp16_output_for_bf16_fails_the_fp16_entry(kernel, module, mutant_id, ranges, config, tmp_path, monkeypatch):
    setting = Setting(Domain(("fp16",), ranges), config)

    def run() -> check.EntryResult:
        return check.check_entry(kernel, setting, "fp16", 1, "ci", shrink=False)

    kept = run()
    assert kept.passed, kept.failure
    planted = _planted(mutant_id, module, tmp_path)
    monkeypatch.setitem(SPECS, kernel, dataclasses.replace(SPECS[kernel], launch=getattr(planted, kernel)))
    found = run()
    assert not found.passed and "launched in bf16" in found.failure and "torch.float16" in found.failure, found.failure


def test_only_fp16_entries_on_the_interpreter_are_probed_at_their_smallest_shape(monkeypatch):
    probed = []
    monkeypatch.setattr(check, "bf16_outputs", lambda *a, **k: probed.append(a) or "")
    config = {"BLOCK_M": 32, "BLOCK_I": 256, "num_warps": 4}
    for dtype in ("fp32", "fp16"):
        setting = Setting(Domain((dtype,), (("M", 3, None), ("I", 1, None))), config)
        result = check.check_entry("silu_mul", setting, dtype, 2, "ci", shrink=False)
        assert result.passed, result.failure
    assert [(kernel, shape) for kernel, shape, *_ in probed] == [("silu_mul", {"M": 3, "I": 1})]
