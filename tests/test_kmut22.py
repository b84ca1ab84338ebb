"""Kernel mutants, round kmut22: a caller's fill reduced inside a helper, a 1-D value broadcast along the last axis
without ``[:, None]``, and the decode merge over a split count that is not a power of two.

Planted in the kernels (one edit each) and run against the interpreter check: the flash kernel's q read with a tail
of NaN (reduced in ``_flash_block``'s dot, where each padded head-dim lane meets k's 0: 0 x NaN), four row statistics
met by a 2-D tile without ``[:, None]`` (rms_norm's rstd, decode's running maximum and its one-split sum, the flash
block's rescale: Triton broadcasts a 1-D value along the last axis), the decode merge's partials read with a tail of
NaN, and its split mask taken at BLOCK_S or inclusive (at a power of two the same lanes; at 3 splits in a block of 4
the next head's first split read as its own). Three more compute the same values (shown bit for bit below): the flash
kernel's q read with a tail of 1 (k's padded head-dim lanes are 0, a padded query row is never stored), gemv's x and
decode's key mask met by a 2-D tile without ``[None, :]`` (the last axis, the one they lie along).

Closed: ``conformance.fills`` reads a helper's reductions once more for each call, each parameter standing for the
caller's argument (the flash kernel's q in ``_flash_block``); reads an operand of lower rank at the axis it lies along
(``t1 + low``: a 1-D ``low`` lies along the 2-D's last axis); reads a mask along an axis it is constant on as true there
(``offs[:, None] < m`` along the columns, a named ``row_ok``); and past a later assignment in an ``else`` (its test
true there) or under several ``if``s (an earlier one needing all of their branches is not reached). The decode record
holds a latent setting (``Record.latent``, SPLITS 3): ``check --shipped`` runs the merge padded, which no candidate
reaches.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest
import torch

from conformance import fills, mutants, shipped
from conformance.specs import RECORDS
from neurobrix import tables
from neurobrix.ops import attention, linear

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = {m.id: m for m in mutants.MUTANTS}
OPS = ("attention", "linear", "pick", "rms_norm", "rotary", "silu_mul")

# in the registry, each named by the rule (-> the function named and what the problem says)
NAMED = {
    "attention_prefill.q-filled-with-nan": ("_flash_block (called from _attention_flash_kernel", "sums q x kt over K"),
    "attention_decode.merge-parts-filled-nan": ("_attention_decode_merge_kernel", "reduces part * weight[:, None]"),
}
# in the registry, caught by the examples; not fill bugs, and not named
BROADCASTS = (
    "rms_norm.rstd-broadcast-along-columns",
    "attention_decode.max-broadcast-along-keys",
    "attention_prefill.rescale-broadcast-along-head-dim",
    "attention_decode.normalised-along-head-dim",
)
# in the registry, reached only at a split count that is not a power of two (the latent setting)
MERGE = ("attention_decode.merge-mask-to-block", "attention_decode.merge-mask-inclusive")
# equivalent (not in the registry): file, old, new
EQUIVALENT = {
    "attention_prefill.q-filled-with-one": (
        "neurobrix/ops/attention.py",
        "                mask=mask_c[:, None] & mask_d[None, :], other=0.0)\n    k_base",
        "                mask=mask_c[:, None] & mask_d[None, :], other=1.0)\n    k_base",
    ),
    "linear.gemv.x-broadcast-implicitly": (
        "neurobrix/ops/linear.py",
        "        accumulator += w * x[None, :]\n",
        "        accumulator += w * x\n",
    ),
    "attention_decode.key-mask-broadcast-implicitly": (
        "neurobrix/ops/attention.py",
        '        qk = tl.where(mask_n[None, :], qk, float("-inf"))\n',
        '        qk = tl.where(mask_n, qk, float("-inf"))\n',
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


def _decode_inputs(g: torch.Generator, d: int = 24):
    q, k = torch.randn(2, 4, d, generator=g), torch.randn(2, 96, 2, d, generator=g)
    return q, k, torch.randn(2, 96, 2, d, generator=g)


def test_the_plants_are_registered_and_anchored():
    chosen = [REGISTRY[p] for p in (*NAMED, *BROADCASTS, *MERGE)]
    assert mutants.anchor_problems(chosen) == []
    assert not any(m.fast for m in chosen)
    assert {REGISTRY[p].bug for p in BROADCASTS} == {"broadcast along the wrong axis"}
    assert not set(EQUIVALENT) & set(REGISTRY)  # an equivalent would survive every run


@pytest.mark.parametrize("plant", sorted(NAMED))
def test_each_fill_plant_is_named(plant):
    mutant = REGISTRY[plant]
    function, says = NAMED[plant]
    found = fills.fill_problems(_module(mutant.file), _source(mutant.file, mutant.old, mutant.new))
    assert any(p.startswith(f"{_module(mutant.file)}.{function}") and says in p for p in found), found


@pytest.mark.parametrize("plant", (*BROADCASTS, *MERGE))
def test_the_other_plants_are_not_fill_bugs(plant):
    mutant = REGISTRY[plant]
    assert fills.fill_problems(_module(mutant.file), _source(mutant.file, mutant.old, mutant.new)) == []


def test_the_shipped_kernels_stay_clean_and_quick():
    """Today's six op modules: clean under the rule that reads helpers with their callers' arguments, ranks and
    masks along axes, read in well under a second (the flash kernel's q, filled with 0, meets k in _flash_block)."""
    start = time.perf_counter()
    for name in OPS:
        file = f"neurobrix/ops/{name}.py"
        assert fills.fill_problems(_module(file), _source(file)) == [], file
    assert time.perf_counter() - start < 2.0


@pytest.mark.parametrize("plant", sorted(EQUIVALENT))
def test_each_equivalent_computes_the_same_bits(plant, tmp_path):
    """Shown where each would need to differ: the flash kernel with D short of its block (24 in 32) and at its block
    (32: no head-dim mask), queries and keys past a block's end; gemv with N and K short of their blocks, split over K;
    decode with lengths that end inside a key block, over one split and two. None is named by the rule."""
    file, old, new = EQUIVALENT[plant]
    planted = _planted(tmp_path, file, old, new)
    assert fills.fill_problems(_module(file), _source(file, old, new)) == []
    g = torch.Generator().manual_seed(5)
    if plant.startswith("attention_prefill"):
        for d in (24, 32):
            q = torch.randn(2, 40, 4, d, generator=g)
            k, v = torch.randn(2, 40, 2, d, generator=g), torch.randn(2, 40, 2, d, generator=g)
            for m, n in ((16, 32), (32, 16)):
                config = {"BLOCK_M": m, "BLOCK_N": n, "num_warps": 4, "num_stages": 2}
                got = planted.attention_prefill(q, k, v, 0.3, config=config)
                assert torch.equal(got, attention.attention_prefill(q, k, v, 0.3, config=config)), (d, m, n)
    elif plant.startswith("linear"):
        x, w, b = torch.randn(3, 200, generator=g), torch.randn(45, 200, generator=g), torch.randn(45, generator=g)
        for split_k in (1, 2):
            config = {"variant": "gemv", "BLOCK_N": 32, "BLOCK_K": 64, "SPLIT_K": split_k, "num_warps": 4}
            for bias in (None, b):
                assert torch.equal(planted.linear(x, w, bias, config=config), linear.linear(x, w, bias, config=config))
    else:
        q, k, v = _decode_inputs(g)
        for splits in (1, 2):
            config = {"SPLITS": splits, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2}
            for lengths in ([96, 20], [33, 65]):
                n = torch.tensor(lengths, dtype=torch.int32)
                got = planted.attention_decode(q, k, v, n, 0.25, config=config)
                assert torch.equal(got, attention.attention_decode(q, k, v, n, 0.25, config=config)), lengths


@pytest.mark.parametrize("plant", MERGE)
def test_the_merge_plants_differ_only_past_a_power_of_two(plant, tmp_path):
    """At 2 and 4 splits (every candidate's count is a power of two) the planted merge computes today's bits; at 3
    splits, in a block of 4, it reads the next head's first split: what the latent setting runs."""
    mutant = REGISTRY[plant]
    planted = _planted(tmp_path, mutant.file, mutant.old, mutant.new)
    q, k, v = _decode_inputs(torch.Generator().manual_seed(7))
    n = torch.tensor([96, 50], dtype=torch.int32)
    for splits in (2, 3, 4):
        config = {"SPLITS": splits, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2}
        same = torch.equal(
            planted.attention_decode(q, k, v, n, 0.25, config=config),
            attention.attention_decode(q, k, v, n, 0.25, config=config),
        )
        assert same == (splits != 3), splits


def test_the_latent_setting_is_checked_with_the_shipped_ones():
    """The decode record's latent setting pads the merge (3 splits in a block of 4), no candidate offers it, and
    ``check --shipped`` runs it on the interpreter (in fp16, as an offered setting is)."""
    (config,) = RECORDS["attention_decode"].latent
    assert config["SPLITS"] & (config["SPLITS"] - 1)  # not a power of two
    offered = (
        attention._decode_candidates({"S": (1, 4096)}, False)
        + attention._decode_candidates({"S": (8192, None)}, False)
        + attention._decode_candidates({"S": (1, None)}, True)
    )
    assert all(c["SPLITS"] & (c["SPLITS"] - 1) == 0 for c in offered)
    found, _ = shipped.targets("interpreter", tables.load(ROOT / "tables"), interpreter=True)
    latent = [t for t in found if t.where.startswith(shipped.LATENT)]
    assert [(t.kernel, t.setting.config, t.dtype) for t in latent] == [("attention_decode", config, "fp16")]


# a module written for the rule: each line it must name ends with "# named: " and what the problem starts with (after
# the function and where it is called from)
FLOW = """
import triton
import triton.language as tl


@triton.jit
def _total(t):
    return tl.sum(t, axis=0)


@triton.jit
def _largest(t, inside):
    return tl.max(tl.where(inside, t, float("-inf")), axis=0)


@triton.jit
def _kernel(x_ptr, y_ptr, m, n, DIAGONAL: tl.constexpr, SCALED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    rows = offs < m
    cols = offs < n
    zeros = tl.load(x_ptr + offs, mask=cols, other=0.0)
    ones = tl.load(x_ptr + offs, mask=cols, other=1.0)
    tl.store(y_ptr, _total(zeros) + _largest(ones, cols))
    tl.store(y_ptr, _total(ones))  # named: reduces t (tl.sum(t, axis=0)), whose padded lanes may hold 1.0
    low = tl.load(x_ptr + offs, mask=cols, other=float("-inf"))
    t1 = tl.load(x_ptr + offs[:, None] * n + offs[None, :], mask=rows[:, None], other=1.0)
    tl.store(y_ptr, tl.max(t1 + low, axis=1))
    tl.store(y_ptr, tl.max(t1 + low, axis=0))  # named: reduces t1 + low (tl.max(t1 + low, axis=0)), whose padded
    row_ok = offs[:, None] < m
    c2 = tl.load(x_ptr + offs[:, None] * n + offs[None, :], mask=row_ok, other=1.0)
    tl.store(y_ptr, tl.sum(c2, axis=1))
    tl.store(y_ptr, tl.sum(c2, axis=0))  # named: reduces c2 (tl.sum(c2, axis=0)), loaded with other=1.0
    a0 = tl.load(x_ptr + offs[:, None] * n + offs[None, :], mask=(offs[:, None] < m) & (offs[None, :] < n), other=0.0)
    tl.store(y_ptr, tl.max(tl.where(offs[None, :] < n, a0, float("-inf")), axis=1))
    tl.store(y_ptr, tl.max(tl.where(offs[:, None] < m, a0, float("-inf")), axis=1))  # named: reduces tl.where(offs[:,
    if DIAGONAL:
        g = tl.load(x_ptr + offs, mask=cols, other=float("-inf"))
    else:
        g = tl.load(x_ptr + offs, mask=cols, other=1.0)
    if DIAGONAL:
        g = g * 2.0
    else:
        g = tl.where(cols, g, float("-inf"))
    tl.store(y_ptr, tl.max(g, axis=0))
    if DIAGONAL:
        if SCALED:
            f = tl.load(x_ptr + offs, mask=cols, other=1.0)
        else:
            f = tl.load(x_ptr + offs, mask=cols, other=float("-inf"))
    else:
        f = tl.load(x_ptr + offs, mask=cols, other=float("-inf"))
    if DIAGONAL:
        if SCALED:
            f = tl.where(cols, f, float("-inf"))
    tl.store(y_ptr, tl.max(f, axis=0))
    if DIAGONAL:
        e = tl.load(x_ptr + offs, mask=cols, other=1.0)
    else:
        e = tl.load(x_ptr + offs, mask=cols, other=float("-inf"))
    if DIAGONAL:
        if SCALED:
            e = tl.where(cols, e, float("-inf"))
    tl.store(y_ptr, tl.max(e, axis=0))  # named: reduces e (tl.max(e, axis=0)), whose padded lanes may hold 1.0
    if DIAGONAL:
        h = tl.load(x_ptr + offs, mask=cols, other=0.0)
        h = tl.where(cols, h, float("-inf"))
    else:
        h = tl.load(x_ptr + offs) * 2.0
    tl.store(y_ptr, tl.max(h, axis=0))
    qa = tl.load(x_ptr + offs[:, None] * n + offs[None, :], mask=cols[None, :], other=0.0)
    kb = tl.load(x_ptr + offs[:, None] * n + offs[None, :])
    tl.store(y_ptr, tl.max(tl.dot(qa, kb) * 2.0, axis=1))
"""


def test_the_rule_reads_helpers_ranks_masks_and_branches():
    """Named: a helper's sum of the caller's tail of 1; a maximum along the rows of a 2-D tile padded with 1 plus a 1-D
    value filled with -inf (the 1-D lies along the columns: inside along the rows); a 2-D tile masked by its rows
    only, summed over them; a maximum along the columns masked by the rows' compare (true along the columns); a tail
    of 1 that reaches past two guards when one of them is not taken. Not named: the helper's sum of a tail of 0, its
    maximum masked by the caller's mask; the same maximum along the columns; the rows-masked tile summed along its
    columns (a named 2-D mask constant along them); a maximum masked by the columns' compare; a tail of 1 in an
    ``else`` whose test's other branch masks it again; one under two guards that the same two guards mask again; data
    times a constant in the ``else`` of a branch that masks its own tail (no masked lane reaches the ``else``: its lanes
    are data, not a fill's); a dot whose K tail meets the other operand as 0 (it pads none of the result's lanes)."""
    lines = FLOW.splitlines()
    expected = [(i + 1, line.split("# named: ")[1]) for i, line in enumerate(lines) if "# named: " in line]
    found = fills.fill_problems("synthetic", FLOW)
    assert len(found) == len(expected) == 5, found
    for number, fragment in expected:
        hits = [p for p in found if fragment in p and (p.startswith("synthetic._kernel ") or f"line {number})" in p)]
        assert len(hits) == 1, (fragment, found)
