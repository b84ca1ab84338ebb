"""Kernel mutants, round kmut20: a fill reduced through arithmetic, and a name assigned more than once.

Planted in the kernels (one edit each) and run against the interpreter check: rms_norm's sum of squares over x's tail
filled with 1 (``tl.sum(h * h)``), the same through the residual (h = x + r, r's tail filled with 1), greedy_pick's
maximum over a part's tail filled with 0 through ``tl.where(nan, -inf, x)`` and the same in its merge, decode's scores
past the chunk's end masked to 0 instead of -inf (the row maximum and, through ``2^(qk - m)``, the sum): caught by the
examples. The decode merge's maximum taken over ``tl.where(mask_s, m, 0.0)``, and its maxima read with a fill of 0 and
cast on a line of their own (``m`` assigned twice): see docs/kernel-mutants.md for how the check judged them. Two more
compute the same values (shown bit for bit below): gemv's weights filled with 1 (each padded K lane is multiplied by
x's 0; a padded N row is never stored), the merge's partials filled with 1 (weighed by 2^-inf = 0).

Closed: ``conformance.fills`` follows what a padded lane holds through elementwise arithmetic, casts, ``tl.where``
(a lane of a load's mask is false there), ``tl.exp2``, ``tl.maximum`` and every assignment that may reach the
reduction, and names a reduction whose padded lanes may hold a value other than its neutral one.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest
import torch

from conformance import fills, mutants, offsets
from neurobrix.ops import attention, linear

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = {m.id: m for m in mutants.MUTANTS}
OPS = ("attention", "linear", "pick", "rms_norm", "rotary", "silu_mul")

# in the registry, each named by the lint (-> the function named); the old rule read none of them
NAMED = {
    "rms_norm.squares-tail-filled-one": "_rms_norm_kernel",
    "rms_norm.residual-tail-filled-one": "_rms_norm_kernel",
    "greedy_pick.logits-tail-filled-zero": "_greedy_pick_kernel",
    "greedy_pick.merge-tail-filled-zero": "_greedy_pick_kernel",
    "attention_decode.scores-masked-to-zero": "_attention_decode_split_kernel",
    "attention_decode.merge-tail-max-where-zero": "_attention_decode_merge_kernel",  # passed the check
    "attention_decode.merge-tail-max-cast-apart": "_attention_decode_merge_kernel",  # passed the check
}
# equivalent (not in the registry): file, old, new
EQUIVALENT = {
    "linear.gemv-weights-tail-filled-one": (
        "neurobrix/ops/linear.py",
        "        w = tl.load(w_ptrs, mask=mask_n[:, None] & mask_k[None, :], other=0.0).to(tl.float32)\n",
        "        w = tl.load(w_ptrs, mask=mask_n[:, None] & mask_k[None, :], other=1.0).to(tl.float32)\n",
    ),
    "attention_decode.merge-tail-parts-filled-one": (
        "neurobrix/ops/attention.py",
        "                   mask=mask_s[:, None] & mask_d[None, :], other=0.0)\n",
        "                   mask=mask_s[:, None] & mask_d[None, :], other=1.0)\n",
    ),
}


def _module(file: str) -> str:
    return file.removesuffix(".py").replace("/", ".")


def _source(file: str, old: str = "", new: str = "") -> str:
    text = (ROOT / file).read_text(encoding="utf-8")
    if old:
        assert text.count(old) == 1, old
    return text.replace(old, new) if old else text


def _planted(tmp_path: Path, file: str, old: str, new: str):
    """The op module from a patched copy, imported under its own name, not put in sys.modules."""
    copy = tmp_path / Path(file).name
    copy.write_text(_source(file, old, new), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(_module(file), copy)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_plants_are_registered_and_anchored():
    chosen = [REGISTRY[p] for p in NAMED]
    assert mutants.anchor_problems(chosen) == []
    assert not any(m.fast for m in chosen)
    assert not set(EQUIVALENT) & set(REGISTRY)  # an equivalent would survive every run


@pytest.mark.parametrize("plant", sorted(NAMED))
def test_each_plant_is_named_through_its_arithmetic(plant):
    mutant = REGISTRY[plant]
    found = fills.fill_problems(_module(mutant.file), _source(mutant.file, mutant.old, mutant.new))
    assert found, plant
    assert all(p.startswith(f"{_module(mutant.file)}.{NAMED[plant]} reduces ") for p in found), found
    assert all("whose padded lanes may hold" in p for p in found), found


def test_the_shipped_kernels_stay_clean_and_quick():
    """Today's six op modules: clean under the followed rule, read in well under a second."""
    start = time.perf_counter()
    for name in OPS:
        file = f"neurobrix/ops/{name}.py"
        assert fills.fill_problems(_module(file), _source(file)) == [], file
    assert time.perf_counter() - start < 2.0


@pytest.mark.parametrize("plant", sorted(EQUIVALENT))
def test_each_equivalent_computes_the_same_bits(plant, tmp_path):
    """Shown where each would need to differ: gemv with N and K each short of their blocks (padded rows and columns),
    split over K; the merge padded (3 splits of a block of 4), one split empty. Neither is named by the lint: its
    fill meets a 0 (x's fill, a padded split's weight 2^-inf) before the sum."""
    file, old, new = EQUIVALENT[plant]
    planted = _planted(tmp_path, file, old, new)
    assert fills.fill_problems(_module(file), _source(file, old, new)) == []
    g = torch.Generator().manual_seed(2)
    if plant.startswith("linear"):
        x, w, b = torch.randn(3, 200, generator=g), torch.randn(45, 200, generator=g), torch.randn(45, generator=g)
        for split_k in (1, 2):
            config = {"variant": "gemv", "BLOCK_N": 32, "BLOCK_K": 64, "SPLIT_K": split_k, "num_warps": 4}
            for bias in (None, b):
                assert torch.equal(planted.linear(x, w, bias, config=config), linear.linear(x, w, bias, config=config))
    else:
        q, k, v = torch.randn(2, 2, 16, generator=g), torch.randn(2, 96, 1, 16, generator=g), torch.randn(2, 96, 1, 16)
        config = {"SPLITS": 3, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2}
        for lengths in ([96, 20], [33, 65]):
            n = torch.tensor(lengths, dtype=torch.int32)
            got = planted.attention_decode(q, k, v, n, 0.25, config=config)
            assert torch.equal(got, attention.attention_decode(q, k, v, n, 0.25, config=config)), lengths


# a module written for the followed rule: each line it must name ends with "# named: " and what the problem starts with
FLOW = """
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, n, m, HAS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    inside = offs < n
    one = tl.load(x_ptr + offs, mask=inside, other=1.0).to(tl.float32)
    zero = tl.load(x_ptr + offs, mask=inside, other=0.0)
    low = tl.load(x_ptr + offs, mask=inside, other=float("-inf"))
    raw = tl.load(x_ptr + offs)
    tl.store(y_ptr, tl.sum(one * one, axis=0))  # named: reduces one * one (tl.sum(one * one, axis=0)), whose padded
    tl.store(y_ptr, tl.sum(zero * zero + one * zero, axis=0))
    tl.store(y_ptr, tl.max(zero - m, axis=0))  # named: reduces zero - m (tl.max(zero - m, axis=0)), whose
    tl.store(y_ptr, tl.max(low - m, axis=0) + tl.sum(tl.exp2(low - m), axis=0))
    tl.store(y_ptr, tl.sum(tl.exp2(zero - m), axis=0))  # named: reduces tl.exp2(zero - m) (tl.sum(
    tl.store(y_ptr, tl.sum(tl.where(inside, one, 0.0), axis=0) + tl.max(tl.where(inside, zero, -1e30) - m, axis=0))
    tl.store(y_ptr, tl.max(tl.where(inside, zero, 0.0), axis=0))  # named: reduces tl.where(inside, zero, 0.0) (tl.max(
    tl.store(y_ptr, tl.max(tl.where(zero != zero, low, one), axis=0))  # named: reduces tl.where(zero != zero, low, one)
    tl.store(y_ptr, tl.max(raw - m, axis=0) + tl.sum(offs * 2.0, axis=0))
    tl.store(y_ptr, tl.max(tl.maximum(low, zero), axis=0))  # named: reduces tl.maximum(low, zero)
    h = zero
    if HAS:
        h = h + one
    tl.store(y_ptr, tl.sum(h * h, axis=0))  # named: reduces h * h (tl.sum(h * h, axis=0)), whose padded lanes
    s = low
    s = s.to(tl.float32)
    tl.store(y_ptr, tl.max(s, axis=0))
    t = zero
    t = tl.cast(t, tl.float32)
    tl.store(y_ptr, tl.max(t, axis=0))  # named: reduces t (tl.max(t, axis=0)), whose padded lanes may hold 0.0
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(4):
        acc += one * zero
    tl.store(y_ptr, tl.sum(acc, axis=0))
    run = tl.full((BLOCK,), float("-inf"), tl.float32)
    for i in range(4):
        run = tl.maximum(run, one)
    tl.store(y_ptr, tl.max(run, axis=0))  # named: reduces run (tl.max(run, axis=0)), whose padded lanes may hold 1.0
    u = one
    if HAS:
        u = zero
    tl.store(y_ptr, tl.sum(u, axis=0))  # named: reduces u (tl.sum(u, axis=0)), whose padded lanes may hold 1.0
    c = low
    for i in range(4):
        tl.store(y_ptr, tl.max(c, axis=0))  # named: reduces c (tl.max(c, axis=0)), whose padded lanes may hold 1.0
        c = one
"""


def test_the_followed_rule_reads_what_it_claims():
    """Named: a sum of squares over 1s, a maximum of 0 - m (finite), a sum of 2^(0 - m) (nonzero), a where's 0 on a
    masked lane under a maximum, a where chosen by a comparison of fills (0 != 0: the fill of 1), the larger of -inf
    and 0, a value reaching its use through an ``if`` (0 + 1, or a 1 the ``if`` may leave), a value cast on a line of
    its own, a running maximum over 1s carried round a loop, a value read in a loop before the loop sets it to 1s.
    Not named: products that meet a 0, a maximum of -inf - m and its 2^-inf, a where's neutral value (or a -1e30
    sentinel, less m), an unmasked load, a value no masked load reaches, -inf cast, an accumulator of 0 carried round
    a loop."""
    expected = [line.split("# named: ")[1] for line in FLOW.splitlines() if "# named: " in line]
    found = fills.fill_problems("synthetic", FLOW)
    assert len(found) == len(expected) == 11, found
    for fragment in expected:
        assert sum(p.startswith(f"synthetic._kernel {fragment}") for p in found) == 1, (fragment, found)


# a block table read through a helper, and a loop counted up to a loaded length: each line the offsets lint must name
# ends with "# named"
HELPED = """
import triton
import triton.language as tl


@triton.jit
def _slot(table_ptr, b):
    return tl.load(table_ptr + b)


@triton.jit
def _kernel(table_ptr, n_ptr, o_ptr, b, BLOCK: tl.constexpr):
    slot = _slot(table_ptr, b)
    tl.store(o_ptr + slot.to(tl.int32), 1.0)  # named
    tl.store(o_ptr + _slot(table_ptr, b + 1), 1.0)
    for i in range(0, tl.load(n_ptr + b), BLOCK):
        tl.store(o_ptr + i.to(tl.int32) + tl.arange(0, BLOCK), 1.0)  # named
    for j in range(0, BLOCK):
        tl.store(o_ptr + j.to(tl.int32), 1.0)
"""


def test_the_offsets_lint_follows_a_helpers_result_and_a_loops_counter():
    """A value a helper loads and returns, narrowed by its caller; a loop's counter bounded by a loaded length,
    narrowed: each named as loaded. Not named: the helper's result left as loaded, a counter over a constant range."""
    found = {(text, how) for _, text, _, how in offsets.findings("synthetic", HELPED)}
    assert found == {("slot.to(tl.int32)", "loaded"), ("i.to(tl.int32)", "loaded")}, found
    problems = offsets.narrow_offsets("synthetic", HELPED)
    assert len(problems) == 2 and all("may hold int64 values" in p for p in problems), problems
