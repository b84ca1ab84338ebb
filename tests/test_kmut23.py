"""Kernel mutants, round kmut23: program axes swapped, masks made inclusive, loop bounds and block offsets taken from
the wrong block constant, strides swapped between two tensors of one shape, and fp32 casts dropped before a sum.

Planted in the kernels (one edit each) and run against the interpreter check: gemv's, decode's, greedy_pick's and
rotary's two program axes swapped, gemv's K mask and silu_mul's column mask made inclusive (``<=``), the flash kernel's
unmasked key blocks ending at a multiple of BLOCK_M, decode's key loop stepping by BLOCK_D, gemv's column blocks
starting at multiples of BLOCK_K, decode's k and v batch strides swapped, rms_norm's squares summed in the storage
dtype (x, and the rounded residual stream, not cast to fp32). Each is caught and joins the registry; below, each is
shown computing other values than today's kernel on one small call (or refused by it). Two compute the same values
(shown bit for bit where they would need to differ): rms_norm's y and h row strides swapped (the launcher allocates
both with one shape: equal strides) and silu_mul's up value not cast to fp32 (an fp32 product with a 16-bit operand
is computed in fp32: the cast is exact and implied).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from conformance import harness, mutants
from neurobrix.ops import attention, linear, pick, rms_norm, rotary, silu_mul

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = {m.id: m for m in mutants.MUTANTS}

CAUGHT = (
    "linear.gemv.program-axes-swapped",
    "attention_decode.split-and-head-axes-swapped",
    "linear.gemv.k-mask-inclusive",
    "silu_mul.column-mask-inclusive",
    "attention_prefill.whole-in-query-blocks",
    "attention_decode.key-loop-by-head-dim-block",
    "attention_decode.k-and-v-batch-strides-swapped",
    "linear.gemv.column-block-by-k-block",
    "rms_norm.x-not-upcast",
    "rms_norm.stream-not-upcast",
    "rotary.token-and-head-axes-swapped",
    "rotary.cos-mask-inclusive",
    "greedy_pick.part-and-row-axes-swapped",
    "linear.tiled.x-and-y-row-strides-swapped",
    "attention_prefill.q-and-o-strides-swapped",
    "attention_decode.merge-output-strides-of-q",
)
# equivalent (not in the registry): file, old, new
EQUIVALENT = {
    "rms_norm.y-and-h-strides-swapped": (
        "neurobrix/ops/rms_norm.py",
        "x.stride(0), r.stride(0), y.stride(0), h.stride(0)",
        "x.stride(0), r.stride(0), h.stride(0), y.stride(0)",
    ),
    "silu_mul.up-not-upcast": (
        "neurobrix/ops/silu_mul.py",
        "    u = tl.load(g_ptrs + I, mask=mask, other=0.0).to(tl.float32)\n",
        "    u = tl.load(g_ptrs + I, mask=mask, other=0.0)\n",
    ),
}


def _source(file: str, old: str, new: str) -> str:
    text = (ROOT / file).read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    return text.replace(old, new)


def _planted(tmp_path: Path, file: str, old: str, new: str):
    """The op module from a patched copy, imported under its own name, not put in sys.modules."""
    copy = tmp_path / Path(file).name
    copy.write_text(_source(file, old, new), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(file.removesuffix(".py").replace("/", "."), copy)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_plants_are_registered_and_anchored():
    chosen = [REGISTRY[p] for p in CAUGHT]
    assert mutants.anchor_problems(chosen) == []
    assert not any(m.fast for m in chosen)
    assert not set(EQUIVALENT) & set(REGISTRY)  # an equivalent would survive every run


def _gemv(split_k: int = 1) -> dict:
    return {"variant": "gemv", "BLOCK_N": 16, "BLOCK_K": 64, "SPLIT_K": split_k, "num_warps": 4}


def _decode(block_n: int = 32) -> dict:
    return {"SPLITS": 2, "BLOCK_N": block_n, "num_warps": 4, "num_stages": 2}


# plant -> (the op's function, its config): one call where the plant must show
CALLS = {
    "linear.gemv.program-axes-swapped": ("linear", _gemv()),
    "linear.gemv.k-mask-inclusive": ("linear", _gemv()),
    "linear.gemv.column-block-by-k-block": ("linear", _gemv()),
    "attention_decode.split-and-head-axes-swapped": ("attention_decode", _decode()),
    "attention_decode.key-loop-by-head-dim-block": ("attention_decode", _decode(64)),
    "attention_decode.k-and-v-batch-strides-swapped": ("attention_decode", _decode()),
    "attention_prefill.whole-in-query-blocks": (
        "attention_prefill",
        {"BLOCK_M": 16, "BLOCK_N": 64, "num_warps": 4, "num_stages": 2},
    ),
    "silu_mul.column-mask-inclusive": ("silu_mul", {"BLOCK_M": 8, "BLOCK_I": 64, "num_warps": 4}),
    "rms_norm.x-not-upcast": ("rms_norm", {"BLOCK_M": 4, "num_warps": 4}),
    "rms_norm.stream-not-upcast": ("rms_norm", {"BLOCK_M": 4, "num_warps": 4}),
    "rotary.token-and-head-axes-swapped": ("rotary", {"BLOCK_H": 4, "num_warps": 4}),
    "rotary.cos-mask-inclusive": ("rotary", {"BLOCK_H": 4, "num_warps": 4}),
    "greedy_pick.part-and-row-axes-swapped": ("greedy_pick", {"BLOCK_V": 64, "num_warps": 4}),
    "linear.tiled.x-and-y-row-strides-swapped": (
        "linear",
        {
            "variant": "tiled",
            "BLOCK_M": 16,
            "BLOCK_N": 32,
            "BLOCK_K": 64,
            "GROUP_M": 4,
            "num_warps": 4,
            "num_stages": 2,
        },
    ),
    "attention_prefill.q-and-o-strides-swapped": (
        "attention_prefill",
        {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2},
    ),
    "attention_decode.merge-output-strides-of-q": ("attention_decode", _decode()),
}


def _arguments(function: str, plant: str) -> tuple:
    """The call's arguments as the check hands them over: each tensor a view inside NaN guards, its rows followed by
    NaN padding (so no two tensors of one shape share strides, and a read past a row's end reads NaN)."""
    g = torch.Generator().manual_seed(23)
    if function == "linear":
        return harness.padded(torch.randn(5, 200, generator=g), 8, "cpu"), harness.padded(
            torch.randn(45, 200, generator=g), 8, "cpu"
        )
    if function == "attention_decode":
        q = torch.randn(2, 4, 24, generator=g)
        k, v = torch.randn(2, 96, 2, 24, generator=g), torch.randn(2, 96, 2, 24, generator=g)
        lengths = torch.tensor([96, 20], dtype=torch.int32)
        return harness.padded(q, 8, "cpu"), harness.padded(k, 0, "cpu"), harness.padded(v, 8, "cpu"), lengths, 0.25
    if function == "attention_prefill":
        q = torch.randn(1, 40, 2, 32, generator=g)
        k, v = torch.randn(1, 40, 1, 32, generator=g), torch.randn(1, 40, 1, 32, generator=g)
        return harness.padded(q, 8, "cpu"), harness.padded(k, 0, "cpu"), harness.padded(v, 0, "cpu"), 0.3
    if function == "rotary":  # 5 tokens, 3 head blocks (a grid that is not square); a half of 6 in a block of 8, at
        # the table's last row
        q, k = torch.randn(1, 5, 8, 12, generator=g), torch.randn(1, 5, 2, 12, generator=g)
        cos, sin = harness.padded(torch.rand(5, 6, generator=g), 0, "cpu"), harness.padded(torch.rand(5, 6), 0, "cpu")
        return q, k, cos, sin, torch.tensor([[0, 1, 2, 3, 4]])
    if function == "greedy_pick":  # 3 rows of 5 parts each
        logits = harness.padded(torch.randn(3, 300, generator=g), 8, "cpu")
        return logits, torch.zeros(3, 1, dtype=torch.int64), torch.zeros(2, 3, dtype=torch.int64)
    if function == "silu_mul":  # a row past the last: a read past its end is finite, so a store of it shows
        return (torch.randn(6, 90, generator=g)[:5],)
    x = (torch.randn(5, 300, generator=g) * 8).half()
    w = torch.randn(300, generator=g).half()
    if plant == "rms_norm.stream-not-upcast":
        return x, w, 1e-6, (torch.randn(5, 300, generator=g) * 8).half()
    return x, w, 1e-6


def _run(module, plant: str):
    """The outputs of one call on NaN-poisoned, guarded allocations under the check's memory guards, or the exception
    it (or a guard) raised."""
    function, config = CALLS[plant]
    args = _arguments(function, plant)
    allocations = harness.Allocations()
    try:
        with harness.memory_guarded():  # every lane a load or store takes must address an argument's element
            # greedy_pick's arrival counters of its own (a program past the rows leaves the process's raised)
            extra = {"counters": {}} if function == "greedy_pick" else {}
            out = getattr(module, function)(*args, config=config, empty=allocations.empty, **extra)
        for check in [*allocations.checks, *(t.check_guards for t in args if hasattr(t, "check_guards"))]:
            check()
    except Exception as e:  # noqa: BLE001  # what the check would report: a guard overrun, an error
        return type(e).__name__
    return out


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's note of NaN met inside an interpreted plant
@pytest.mark.parametrize("plant", sorted(CALLS))
def test_each_plant_changes_what_one_call_computes(plant, tmp_path):
    """Each registered plant, on one small call where it must show (a grid that is not square, a mask's bound inside a
    block, BLOCK_N twice BLOCK_D, a v cache whose rows are padded, a query block shorter than its key block, 16-bit
    rows whose squares round): an exception or a guard overrun, or other values than today's kernel computes there."""
    mutant = REGISTRY[plant]
    today = _run(_module_of(mutant.file), plant)
    assert isinstance(today, (torch.Tensor, tuple)), today
    planted = _run(_planted(tmp_path, mutant.file, mutant.old, mutant.new), plant)
    if isinstance(planted, str):
        return
    pairs = zip(planted, today, strict=True) if isinstance(today, tuple) else [(planted, today)]
    assert not all(torch.equal(a, b) for a, b in pairs), plant


def _module_of(file: str):
    modules = (attention, linear, pick, rms_norm, rotary, silu_mul)
    return {m.__name__.rsplit(".", 1)[1]: m for m in modules}[Path(file).stem]


@pytest.mark.parametrize("plant", sorted(EQUIVALENT))
def test_each_equivalent_computes_the_same_bits(plant, tmp_path):
    """Where each would need to differ: rms_norm with a residual (y and h both stored, rows short of their block),
    silu_mul in fp16 and bf16 (where an up value not cast to fp32 would round if the product were taken in its dtype),
    each with rows and columns past a block's end."""
    file, old, new = EQUIVALENT[plant]
    planted = _planted(tmp_path, file, old, new)
    g = torch.Generator().manual_seed(11)
    for dtype in (torch.float16, torch.bfloat16):
        if plant.startswith("rms_norm"):
            x, w, r = (
                (torch.randn(5, 45, generator=g) * 4).to(dtype),
                torch.randn(45, generator=g).to(dtype),
                torch.randn(5, 45, generator=g).to(dtype),
            )
            config = {"BLOCK_M": 4, "num_warps": 4}
            got, want = planted.rms_norm(x, w, 1e-6, r, config=config), rms_norm.rms_norm(x, w, 1e-6, r, config=config)
            assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]), dtype
        else:
            gu = (torch.randn(5, 90, generator=g) * 4).to(dtype)
            config = {"BLOCK_M": 8, "BLOCK_I": 64, "num_warps": 4}
            assert torch.equal(planted.silu_mul(gu, config=config), silu_mul.silu_mul(gu, config=config)), dtype
