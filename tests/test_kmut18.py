"""Kernel mutants, round kmut18: offsets narrowed where kmut17's lint did not read, and launchers' layouts.

Round kmut17's lint stopped at a call it did not know (``tl.multiple_of``, ``tl.max_contiguous``, ``tl.expand_dims``,
``tl.reshape``, ``tl.cast``: an offset inside one reached the address unread) and read a tuple indexed by anything but
a literal whole (a tuple of (pointer, offset) pairs then read as pointers). Planted in the kernels (one edit each),
silu_mul's and tiled's rows under an alignment hint, rms_norm's rows cast by ``tl.cast``, given their axis by
``tl.expand_dims`` and carried in a tuple a helper picks by a constexpr, each with the rows in int32, hid from it, and
the interpreter check passed them. The bounds of ``offsets.NARROW_OFFSETS`` assume the launchers' layouts (a position
within one row, a head within one token): a launcher allocating flash's output position-major or rotary's head-major
computes the same values and was read by neither the lint nor the bounds.

Closed: the lint follows hints and reshapes, reads ``tl.cast`` as a cast, scans any other call's arguments, picks any
element of a tuple indexed by a non-literal (and refuses such a pick from pointers and integers mixed); every launch the
check records is held to ``offsets.LAYOUTS`` (``offsets.layout_problems``), and an allowed product multiplying a
launcher's stride no layout holds is named (``offsets.unheld_strides``).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import time
from pathlib import Path

import pytest
import torch

from conformance import harness, mutants, offsets
from neurobrix.ops import SPECS

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = {m.id: m for m in mutants.MUTANTS}
OPS = ("attention", "linear", "pick", "rms_norm", "rotary", "silu_mul")

# the lint's plants (in the registry) -> the functions the lint names
PLANTS = {
    "silu_mul.row-offsets-multiple-of-int32": {"_silu_mul_kernel"},
    "linear.tiled.x-rows-multiple-of-int32": {"_linear_tiled_kernel"},
    "rms_norm.output-rows-tl-cast-int32": {"_rms_norm_kernel"},
    "rms_norm.stream-rows-expand-dims-int32": {"_rms_norm_kernel"},
    "rms_norm.rows-in-a-tuple-picked-by-constexpr-int32": {"_rms_norm_kernel"},
    "silu_mul.output-rows-int32-under-assume": {"_silu_mul_kernel"},
    "rotary.positions-narrowed-int32": {"_rotary_kernel", "_rotate_heads"},  # the slot times the tables' and cache's
}
# the launchers' plants (in the registry) -> the kernel whose launch is refused, the pointer named
LAYOUT_PLANTS = {
    "attention_prefill.output-position-major": ("_attention_flash_kernel", "o_ptr"),
    "rotary.q-out-head-major": ("_rotary_kernel", "qo_ptr"),
}
FLASH = {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4}
ROTARY = {"BLOCK_H": 4, "num_warps": 4}
SHAPES = {"attention_prefill": ({"S": 32, "D": 16, "G": 2}, FLASH), "rotary": ({"T": 8, "H": 6, "D": 16}, ROTARY)}


def _module(file: str) -> str:
    return file.removesuffix(".py").replace("/", ".")


def _source(file: str, old: str = "", new: str = "") -> str:
    text = (ROOT / file).read_text(encoding="utf-8")
    if old:
        assert text.count(old) == 1, old
    return text.replace(old, new) if old else text


def test_the_plants_are_registered_and_anchored():
    chosen = [REGISTRY[p] for p in (*PLANTS, *LAYOUT_PLANTS)]
    assert mutants.anchor_problems(chosen) == []


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_each_plant_is_named_by_the_offsets_lint(plant):
    mutant = REGISTRY[plant]
    found = offsets.narrow_offsets(_module(mutant.file), _source(mutant.file, mutant.old, mutant.new))
    assert found and {p.split(" ", 1)[0].rpartition(".")[2] for p in found} == PLANTS[plant], found


def test_the_shipped_kernels_stay_clean_and_every_allowed_stride_held():
    """Today's six op modules: nothing unallowed, and every stride an allowed product multiplies held by LAYOUTS (the
    12 of flash, decode and rotary); read in well under a second (0.2 s on 2 cores)."""
    start = time.perf_counter()
    for name in OPS:
        file = f"neurobrix/ops/{name}.py"
        assert offsets.narrow_offsets(_module(file), _source(file)) == [], file
    assert time.perf_counter() - start < 3.0
    unheld = set()
    saved = dict(offsets.LAYOUTS)
    try:
        offsets.LAYOUTS.clear()  # which strides the layouts must hold
        for name in ("attention", "rotary"):
            file = f"neurobrix/ops/{name}.py"
            unheld |= {stride for _, _, stride in offsets.unheld_strides(_module(file), _source(file))}
    finally:
        offsets.LAYOUTS.update(saved)
    held = {f"{where}.{layout.walked}" for where, layouts in offsets.LAYOUTS.items() for layout in layouts}
    assert unheld == held and len(held) == 12


def test_each_layout_names_parameters_of_its_kernel():
    """A layout naming a parameter its kernel lacks would hold nothing (layout_problems skips what it cannot bind)."""
    for where, layouts in offsets.LAYOUTS.items():
        module, _, name = where.rpartition(".")
        fn = getattr(importlib.import_module(module), name).fn
        params = set(fn.__code__.co_varnames[: fn.__code__.co_argcount])
        for layout in layouts:
            assert {layout.pointer, layout.outer, layout.walked} | {layout.inner} - {None} <= params, (where, layout)


# a module written for the lint: each line it must name ends with "# narrow: <what it names>"
READING = """
import triton
import triton.language as tl


@triton.jit
def _start(pairs, WHICH: tl.constexpr):
    pointer, rows = pairs[WHICH]
    return pointer + rows


@triton.jit
def _kernel(x_ptr, y_ptr, stride, n, W: tl.constexpr):
    i = tl.program_id(0)
    wide = tl.program_id(1).to(tl.int64) * 16 + tl.arange(0, 16)
    tl.store(x_ptr + tl.multiple_of(i * stride, 16), 1.0)  # narrow: i * stride
    tl.store(x_ptr + tl.max_contiguous(tl.multiple_of(i * n, 16), 16), 1.0)  # narrow: i * n
    tl.store(x_ptr + tl.cast(wide * stride, tl.int32), 1.0)  # cast: tl.cast(wide * stride, tl.int32)
    tl.store(x_ptr + tl.expand_dims(wide.to(tl.int32) * stride, 1), 1.0)  # narrow: wide.to(tl.int32) * stride
    tl.store(x_ptr + tl.reshape(tl.cast(wide, tl.int32) * n, (16,)), 1.0)  # narrow: tl.cast(wide, tl.int32) * n
    tl.store(x_ptr + tl.abs(stride * n), 1.0)  # narrow: stride * n
    tl.store(_start(((x_ptr, wide * n), (y_ptr, i * 4096)), W), 1.0)  # narrow: i * 4096
    for j in tl.static_range(2):
        p, o = ((x_ptr, wide * stride), (y_ptr, (i + 1) * stride))[j]  # narrow: (i + 1) * stride
        tl.store(p + o, 1.0)
    pair = (x_ptr, i)
    tl.store(pair[W] + pair[1 - W], 1.0)  # mixed: pair[W] | pair[1 - W]
    tl.store(x_ptr + tl.multiple_of(wide, 16) * stride, 1.0)
    tl.store(x_ptr + tl.cast(i, tl.int64) * stride + tl.max_contiguous(tl.arange(0, 16), 16), 1.0)
    tl.assume(i * stride >= 0)
    tl.store(x_ptr + (wide, stride * i)[W - W], 1.0)  # narrow: stride * i
"""


def test_the_lint_reads_hints_casts_reshapes_and_picked_tuples():
    """Named: an offset inside tl.multiple_of, tl.max_contiguous, tl.expand_dims, tl.reshape, tl.abs; tl.cast of an
    int64 product to int32, and an int32 tl.cast times a size; a tuple's element picked by a constexpr (through a
    helper) or by a static_range counter (unpacked) or by an expression (any element); a pick by a non-literal from
    pointers and integers, refused. Not named: a hint on an int64 value or an arange, tl.cast to int64, a product in
    tl.assume (no offset), a picked tuple's int64 elements."""
    expected = set()
    for line in READING.splitlines():
        for how, mark in (("product", "# narrow: "), ("cast", "# cast: "), ("mixed", "# mixed: ")):
            if mark in line:
                expected |= {("synthetic._kernel", t, how) for t in line.split(mark)[1].split(" | ")}
    found = {(where, text, how) for where, text, _, how in offsets.findings("synthetic", READING)}
    assert found == expected


# ---------------------------------------------------------------------------------------- the launchers' layouts
def _planted_launch(tmp_path: Path, file: str, old: str, new: str, kernel: str):
    """The op's launcher from a patched copy, imported under the module's own name (its kernels' names are what the
    layouts are keyed by), not put in sys.modules."""
    copy = tmp_path / Path(file).name
    copy.write_text(_source(file, old, new), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(_module(file), copy)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, SPECS[kernel].launch.__name__)


def _cases(kernel: str, seeds=range(6)):
    shape, config = SHAPES[kernel]
    for seed in seeds:
        yield harness.build(kernel, "fp32", shape, harness.Values("fp32", "cpu", seed, ("normal",))), config


def test_the_shipped_launchers_pass_their_layouts():
    """The records' layouts (fused views, padded heads, caches of a larger capacity, outputs of the launchers' own)."""
    for kernel in SHAPES:
        for case, config in _cases(kernel):
            assert harness.launch_switches(case, config) == [], case.note


@pytest.mark.parametrize("plant", sorted(LAYOUT_PLANTS))
def test_each_layout_plant_is_refused_at_launch(plant, monkeypatch, tmp_path):
    """The lint and the bounds read nothing of a launcher's allocation: the launch record holds it to the layout."""
    mutant, (kernel_fn, pointer) = REGISTRY[plant], LAYOUT_PLANTS[plant]
    assert offsets.narrow_offsets(_module(mutant.file), _source(mutant.file, mutant.old, mutant.new)) == []
    launch = _planted_launch(tmp_path, mutant.file, mutant.old, mutant.new, mutant.kernel)
    monkeypatch.setitem(SPECS, mutant.kernel, dataclasses.replace(SPECS[mutant.kernel], launch=launch))
    refused = [harness.launch_switches(case, config) for case, config in _cases(mutant.kernel)]
    assert any(refused) and all(f"{kernel_fn} walks {pointer}'s axis" in p for found in refused for p in found)
    case, config = next((c, k) for (c, k), found in zip(_cases(mutant.kernel), refused) if found)
    with pytest.raises(harness.LaunchSwitchError, match="layout"):  # every example the check runs
        harness.run_kernel(case, config)


# layouts that wrap nothing: rotary's positions and batches are int64 (a position-major output folds the batch into a
# stride no narrow operand multiplies), flash's heads too (a head-major output walks positions by D)
EQUIVALENT = {
    "rotary": (
        "neurobrix/ops/rotary.py",
        "    k_out = k_cache if cached else (k if inplace else empty(tuple(k.shape), dtype=k.dtype,"
        " device=k.device))\n",
        "    k_out = k_cache if cached else (k if inplace else empty((S, B, HKV, D), dtype=k.dtype,"
        " device=k.device).transpose(0, 1))\n",
    ),
    "attention_prefill": (
        "neurobrix/ops/attention.py",
        "    o = empty((B, C, HQ, D), dtype=q.dtype, device=q.device)\n",
        "    o = empty((B, HQ, C, D), dtype=q.dtype, device=q.device).transpose(1, 2)\n",
    ),
}


@pytest.mark.parametrize("kernel", sorted(EQUIVALENT))
def test_equivalent_layouts_pass(kernel, monkeypatch, tmp_path):
    file, old, new = EQUIVALENT[kernel]
    launch = _planted_launch(tmp_path, file, old, new, kernel)
    monkeypatch.setitem(SPECS, kernel, dataclasses.replace(SPECS[kernel], launch=launch))
    for case, config in _cases(kernel):
        assert harness.launch_switches(case, config) == [], case.note


def test_layout_problems_read_each_rule():
    """A sequence's positions inside its batch slot, a token's heads inside its position, a position within the fused
    row of heads: a seq-major, a head-major and a position-sliced tensor each refused, the engine's layouts not."""
    where = "neurobrix.ops.attention._attention_flash_kernel"

    def launch(q: torch.Tensor) -> list[str]:
        strides = dict(zip(("stride_qb", "stride_qs", "stride_qh"), q.stride()[:3]))
        return offsets.layout_problems(where, {"q_ptr": q, "HQ": 4, "G": 2, **strides})

    fused = torch.empty(2, 8, 8, 16)[:, :, :4]  # q of a fused projection: 4 + 2 x 2 heads a position
    assert launch(fused) == [] and launch(torch.empty(2, 8, 4, 16)) == []
    assert launch(torch.empty(2, 4, 8, 16).transpose(1, 2)) == []  # head-major: positions by D
    assert "folds in an outer axis" in launch(torch.empty(8, 2, 4, 16).transpose(0, 1))[0]  # seq-major
    assert "wider than the row" in launch(torch.empty(1, 16, 4, 16)[:, ::4])[0]  # every 4th position: 16 heads' row
    assert launch(torch.empty(1, 8, 4, 16)[:, ::2]) == []  # every 2nd: 8 heads, the fused row
    q = torch.empty(2, 8, 4, 16).transpose(1, 2)  # [B, H, S, D] read as [B, S, H, D]: heads S x D apart
    heads = {"q_ptr": q, "stride_qs": q.stride(1), "stride_qh": q.stride(2)}
    assert "folds in an outer axis" in offsets.layout_problems("neurobrix.ops.rotary._rotary_kernel", heads)[0]
