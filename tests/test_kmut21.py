"""Kernel mutants, round kmut21: a fill fed to ``tl.dot``, a mask or a reduction on the wrong axis of a 2-D tile, and a
value reduced from what a helper returns.

Planted in the kernels (one edit each) and run against the interpreter check: skinny's and tiled's x and W tiles both
read with a tail of 1 (each padded K lane adds 1 x 1 to every dot), tiled's W read with a tail of NaN (x's padded lanes
are 0, and 0 x NaN is NaN), decode's v and the diagonal's v read with a tail of NaN (a key past the end weighs 0 into
the dot), decode's scores masked by the group's rows instead of the chunk's keys (a key past the end scores q . 0 = 0),
gemv's accumulator and rms_norm's squares summed over the rows instead of the columns: each caught by the examples, and
each of the six fill plants named by the rule as this round leaves it, none by the rule as it stood. Two more compute
the same values (shown bit for bit below): skinny's x alone read with a tail of 1 (W's padded K lanes are 0, a padded
row is never stored), decode's k read with a tail of 1 (q's padded head-dim lanes are 0, a padded key's score is
replaced by -inf).

Closed: ``conformance.fills`` reads a reduction's lanes along its axis (``x[:, None]`` is read inside along axis 1, a
mask's conjunct along another axis is true there), follows ``tl.dot`` (a row or column padded in one operand times the
other's data; a K lane padded in both is judged as a sum of its own), NaN (0 x NaN), a helper's result (each parameter
standing for the caller's argument) and an ``if`` test read twice (a value reached past ``if DIAGONAL:`` is read where
DIAGONAL is false).
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest
import torch

from conformance import fills, mutants
from neurobrix.ops import attention, linear

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = {m.id: m for m in mutants.MUTANTS}
OPS = ("attention", "linear", "pick", "rms_norm", "rotary", "silu_mul")

# in the registry, each named by the rule (-> the function named and what the problem says); the old rule read none
NAMED = {
    "linear.skinny.dot-tails-filled-one": ("_linear_skinny_kernel", "sums a x b over K"),
    "linear.tiled.dot-tails-filled-one": ("_linear_tiled_kernel", "sums a x b over K"),
    "linear.tiled.w-tail-filled-nan": ("_linear_tiled_kernel", "sums a x b over K"),
    "attention_decode.values-tail-filled-nan": ("_attention_decode_split_kernel", "sums p.to(v.dtype) x v over K"),
    "attention_prefill.diagonal-values-filled-nan": ("_flash_block", "sums weights.to(vb.dtype) x vb over K"),
    "attention_decode.scores-masked-on-group-axis": (
        "_attention_decode_split_kernel",
        "reduces qk (tl.max(qk, axis=1))",
    ),
}
# in the registry, caught by the examples; not fill bugs, and not named
AXES = ("linear.gemv.sum-over-k-lanes", "rms_norm.squares-summed-over-rows")
# equivalent (not in the registry): file, old, new
EQUIVALENT = {
    "linear.skinny.x-tail-filled-one": (
        "neurobrix/ops/linear.py",
        "in_k[None, :],\n                    other=0.0)\n        b = tl.load(",
        "in_k[None, :],\n                    other=1.0)\n        b = tl.load(",
    ),
    "attention_decode.keys-tail-filled-one": (
        "neurobrix/ops/attention.py",
        "mask=mask_d[:, None] & mask_n[None, :],\n                    other=0.0)",
        "mask=mask_d[:, None] & mask_n[None, :],\n                    other=1.0)",
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
    chosen = [REGISTRY[p] for p in (*NAMED, *AXES)]
    assert mutants.anchor_problems(chosen) == []
    assert not any(m.fast for m in chosen)
    assert {REGISTRY[p].bug for p in AXES} == {"reduction over the wrong axis"}
    assert not set(EQUIVALENT) & set(REGISTRY)  # an equivalent would survive every run


@pytest.mark.parametrize("plant", sorted(NAMED))
def test_each_fill_plant_is_named(plant):
    mutant = REGISTRY[plant]
    function, says = NAMED[plant]
    found = fills.fill_problems(_module(mutant.file), _source(mutant.file, mutant.old, mutant.new))
    assert found, plant
    assert any(p.startswith(f"{_module(mutant.file)}.{function} {says}") for p in found), found


@pytest.mark.parametrize("plant", AXES)
def test_the_axis_plants_are_not_fill_bugs(plant):
    mutant = REGISTRY[plant]
    assert fills.fill_problems(_module(mutant.file), _source(mutant.file, mutant.old, mutant.new)) == []


def test_the_shipped_kernels_stay_clean_and_quick():
    """Today's six op modules: clean under the rule that reads axes, dots and helpers, read in well under a second.
    The flash block's scores are the case the repeated ``if`` test is for: read past ``if DIAGONAL:`` the dot's k is
    the unmasked one, not the diagonal's (whose padded keys hold 0 until the same test masks them to -inf)."""
    start = time.perf_counter()
    for name in OPS:
        file = f"neurobrix/ops/{name}.py"
        assert fills.fill_problems(_module(file), _source(file)) == [], file
    assert time.perf_counter() - start < 2.0


@pytest.mark.parametrize("plant", sorted(EQUIVALENT))
def test_each_equivalent_computes_the_same_bits(plant, tmp_path):
    """Shown where each would need to differ: skinny with M, N and K short of their blocks (padded rows, columns and
    K lanes), split over K, with and without a bias; decode with D short of its block (24 in 32) and lengths that end
    inside a key block, over one split and two. Neither is named by the rule: the fill meets a 0 (W's padded K lanes,
    q's padded head-dim lanes) or a lane the kernel replaces or never stores."""
    file, old, new = EQUIVALENT[plant]
    planted = _planted(tmp_path, file, old, new)
    assert fills.fill_problems(_module(file), _source(file, old, new)) == []
    g = torch.Generator().manual_seed(3)
    if plant.startswith("linear"):
        x, w, b = torch.randn(5, 200, generator=g), torch.randn(45, 200, generator=g), torch.randn(45, generator=g)
        for split_k in (1, 2):
            config = {
                "variant": "skinny",
                "BLOCK_M": 16,
                "BLOCK_N": 32,
                "BLOCK_K": 64,
                "SPLIT_K": split_k,
                "num_warps": 4,
                "num_stages": 2,
            }
            for bias in (None, b):
                assert torch.equal(planted.linear(x, w, bias, config=config), linear.linear(x, w, bias, config=config))
    else:
        q, k = torch.randn(2, 4, 24, generator=g), torch.randn(2, 96, 2, 24, generator=g)
        v = torch.randn(2, 96, 2, 24, generator=g)
        for splits in (1, 2):
            config = {"SPLITS": splits, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2}
            for lengths in ([96, 20], [33, 65]):
                n = torch.tensor(lengths, dtype=torch.int32)
                got = planted.attention_decode(q, k, v, n, 0.25, config=config)
                assert torch.equal(got, attention.attention_decode(q, k, v, n, 0.25, config=config)), lengths


# a module written for the rule: each line it must name ends with "# named: " and what the problem starts with
FLOW = """
import triton
import triton.language as tl


@triton.jit
def _block(x_ptr, offs, inside, FILL: tl.constexpr):
    return tl.load(x_ptr + offs, mask=inside, other=1.0), tl.load(x_ptr + offs, mask=inside, other=float("-inf"))


@triton.jit
def _ones(x_ptr, offs, inside):
    return tl.load(x_ptr + offs, mask=inside, other=1.0)


@triton.jit
def _shift(x, m):
    return x - m


@triton.jit
def _kernel(x_ptr, y_ptr, m, n, k, DIAGONAL: tl.constexpr, SCALED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    rows = offs < m
    cols = offs < n
    ks = offs < k
    a = tl.load(x_ptr + offs[:, None] * k + offs[None, :], mask=rows[:, None] & ks[None, :], other=0.0)
    b = tl.load(x_ptr + offs[:, None] * n + offs[None, :], mask=ks[:, None] & cols[None, :], other=0.0)
    a1 = tl.load(x_ptr + offs[:, None] * k + offs[None, :], mask=rows[:, None] & ks[None, :], other=1.0)
    b1 = tl.load(x_ptr + offs[:, None] * n + offs[None, :], mask=ks[:, None] & cols[None, :], other=1.0)
    bn = tl.load(x_ptr + offs[:, None] * n + offs[None, :], mask=ks[:, None] & cols[None, :], other=float("nan"))
    tl.store(y_ptr, tl.dot(a, b1))
    tl.store(y_ptr, tl.dot(a1, b1))  # named: sums a1 x b1 over K (tl.dot(a1, b1)), whose padded K lanes may hold 1.0
    tl.store(y_ptr, tl.dot(a, bn))  # named: sums a x bn over K (tl.dot(a, bn)), whose padded K lanes may hold nan
    s = tl.dot(a, b)
    tl.store(y_ptr, tl.max(tl.where(cols[None, :], s, float("-inf")), axis=1))
    tl.store(y_ptr, tl.max(tl.where(rows[:, None], s, float("-inf")), axis=1))  # named: reduces tl.where(rows[:, None]
    tl.store(y_ptr, tl.max(tl.where(rows[:, None], s, float("-inf")), axis=0))
    c1 = tl.load(x_ptr + offs[:, None] * n + offs[None, :], mask=rows[:, None], other=1.0)
    tl.store(y_ptr, tl.sum(c1, axis=1) + tl.sum(a1 * b, axis=1))
    tl.store(y_ptr, tl.sum(c1, axis=0))  # named: reduces c1 (tl.sum(c1, axis=0)), loaded with other=1.0
    w = tl.load(x_ptr + offs, mask=cols, other=0.0)
    tl.store(y_ptr, tl.sum(a1 * w[None, :], axis=1) + tl.sum(a1 * w[:, None], axis=0))
    tl.store(y_ptr, tl.max(a1 * w[:, None], axis=1))  # named: reduces a1 * w[:, None] (tl.max(a1 * w[:, None], axis=1))
    p = tl.exp2(tl.where(cols[None, :], s, float("-inf")))
    tl.store(y_ptr, tl.dot(p, bn))  # named: sums p x bn over K (tl.dot(p, bn)), whose padded K lanes may hold nan
    if DIAGONAL:
        kt = tl.load(x_ptr + offs[:, None] * n + offs[None, :], mask=ks[:, None] & cols[None, :], other=0.0)
    else:
        kt = tl.load(x_ptr + offs[:, None] * n + offs[None, :])
    logits = tl.dot(a, kt)
    if DIAGONAL:
        logits = tl.where(cols[None, :], logits, float("-inf"))
    tl.store(y_ptr, tl.max(logits, axis=1))
    scores = tl.dot(a, kt)
    if SCALED:
        scores = tl.where(cols[None, :], scores, float("-inf"))
    tl.store(y_ptr, tl.max(scores, axis=1))  # named: reduces scores (tl.max(scores, axis=1)), whose padded lanes may
    ones = _ones(x_ptr, offs, cols)
    tl.store(y_ptr, tl.sum(ones, axis=0))  # named: reduces ones (tl.sum(ones, axis=0)), whose padded lanes may hold 1.0
    one, low = _block(x_ptr, offs, cols, 0)
    tl.store(y_ptr, tl.max(low, axis=0) + tl.sum(tl.exp2(low), axis=0))
    tl.store(y_ptr, tl.max(one, axis=0))  # named: reduces one (tl.max(one, axis=0)), whose padded lanes may hold 1.0
    z = tl.load(x_ptr + offs, mask=cols, other=0.0)
    tl.store(y_ptr, tl.max(_shift(z, m), axis=0))  # named: reduces _shift(z, m) (tl.max(_shift(z, m), axis=0)), whose
    tl.store(y_ptr, tl.max(_shift(low, m), axis=0))
"""


def test_the_rule_reads_axes_dots_and_helpers():
    """Named: a dot whose operands' K tails are both 1, or meet 0 x NaN (a tail of NaN, or 2^-inf weights against
    it); a maximum over keys masked by the rows' mask (the keys' lanes hold the dot's 0); a sum along the axis a load
    is masked on (a tile masked by its rows only, summed over them); a maximum of 1 x data along a padded axis; scores
    read past an ``if`` whose test is not the one their k was loaded under; a helper's result, alone or as a tuple's
    element, and a helper's arithmetic on the caller's fill. Not named: a dot whose K tails meet a 0, a maximum over
    keys masked by their own mask, or over rows masked by the rows' mask; a tile masked by its rows summed along its
    columns; products that meet a 0 on the reduced axis; scores read past the same ``if`` their k was loaded under;
    a helper's -inf and 2^-inf; a helper's arithmetic on -inf."""
    expected = [line.split("# named: ")[1] for line in FLOW.splitlines() if "# named: " in line]
    found = fills.fill_problems("synthetic", FLOW)
    assert len(found) == len(expected) == 10, found
    for fragment in expected:
        assert sum(p.startswith(f"synthetic._kernel {fragment}") for p in found) == 1, (fragment, found)
