"""Kernel mutants, round kmut19: bugs that show only at an edge the draws may not reach, and a loaded offset narrowed.

Planted in the kernels (one edit each) and run against the interpreter check: the decode merge normalising each split's
partial before weighing it (0 / 0 where a split is empty), decode's running output kept in the cache's dtype, rotary's
half-dim pairing swapped at odd positions: caught by the examples. The decode merge's padded splits filled with a
maximum of 0 instead of -inf, and flash attention's running output started in q's dtype: passed. The first is exact up
to a common factor that cancels until every split's maximum is below about -126 (log2 units), scores no draw reaches;
the second is promoted to fp32 by the interpreter at its first update (the compiler refuses a loop whose carried
value changes type). Four more compute the same values by an identity (shown bit for bit below): rms_norm's residual
add with its operands cast first (both are the stream's dtype already: one rounding either way), the merge's padded
sums filled with 1 (weighted by 2^-inf = 0), decode's keys masked at the length instead of the chunk's end (the
launcher's chunk is a whole number of key blocks), flash's masked key blocks run to the end of the query block (the
blocks past S are masked whole and change nothing).

Closed: ``conformance.fills.fill_problems``, in the check's launch lint, names a reduction of a masked load whose fill
is not the reduction's neutral value, and a running value started in a dtype other than fp32. The offsets lint names a
loaded value narrowed to int32 on its way to an offset (``how == "loaded"``): an int64 tensor of element offsets
(a block table) may hold values past 2^31; decode's lengths are allowed, bound by the cache's positions.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest
import torch

from conformance import check, fills, mutants, offsets
from neurobrix.ops import attention, rms_norm

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = {m.id: m for m in mutants.MUTANTS}
OPS = ("attention", "linear", "pick", "rms_norm", "rotary", "silu_mul")

# caught by the examples (in the registry)
CAUGHT = (
    "attention_decode.merge-normalised-partials",
    "attention_decode.accumulator-in-model-dtype",
    "rotary.odd-positions-rotated-backwards",
)
# passed the check as it stood, now named by fills.fill_problems (in the registry) -> the function named
FILL_PLANTS = {
    "attention_decode.merge-tail-max-filled-zero": "_attention_decode_merge_kernel",
    "attention_prefill.accumulator-in-q-dtype": "_attention_flash_kernel",
}
# equivalent (not in the registry): file, old, new
EQUIVALENT = {
    "rms_norm.stream-added-in-storage-dtype": (
        "neurobrix/ops/rms_norm.py",
        "        h_rounded = (h + r).to(h_ptr.dtype.element_ty)\n",
        "        h_rounded = h.to(h_ptr.dtype.element_ty) + r.to(h_ptr.dtype.element_ty)\n",
    ),
    "attention_decode.merge-tail-sum-filled-one": (
        "neurobrix/ops/attention.py",
        "    l = tl.load(ml_ptr + rows + pid * SPLITS + offs_s, mask=mask_s, other=0.0)\n",
        "    l = tl.load(ml_ptr + rows + pid * SPLITS + offs_s, mask=mask_s, other=1.0)\n",
    ),
    "attention_decode.keys-masked-at-length": (
        "neurobrix/ops/attention.py",
        "        mask_n = offs_n < end\n",
        "        mask_n = offs_n < length\n",
    ),
    "attention_prefill.key-blocks-past-last-query": (
        "neurobrix/ops/attention.py",
        "    end = tl.minimum(past + (block + 1) * BLOCK_M, S)\n",
        "    end = past + (block + 1) * BLOCK_M\n",
    ),
}
DECODE = {"SPLITS": 3, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2}  # 3 splits: the merge pads a fourth


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


def _decode_args(shift: bool = False):
    """Two sequences of a 96-position cache, one of 20 keys (its second and third splits empty); with ``shift`` every
    score moved down by 256 (q's first dim -64, every key's 16, scale 1/4): softmax is the same, the maxima far below
    2^-126."""
    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(2, 2, 16, generator=g), torch.randn(2, 96, 1, 16, generator=g), torch.randn(2, 96, 1, 16)
    if shift:
        q[..., 0], k[..., 0] = -64.0, 16.0
    return q, k, v, torch.tensor([96, 20], dtype=torch.int32), 0.25


def test_the_plants_are_registered_and_anchored():
    chosen = [REGISTRY[p] for p in (*CAUGHT, *FILL_PLANTS)]
    assert mutants.anchor_problems(chosen) == []
    assert not any(m.fast for m in chosen)
    assert not set(EQUIVALENT) & set(REGISTRY)  # an equivalent would survive every run


@pytest.mark.parametrize("plant", sorted(FILL_PLANTS))
def test_each_fill_plant_is_named_by_the_lint(plant):
    mutant = REGISTRY[plant]
    found = fills.fill_problems(_module(mutant.file), _source(mutant.file, mutant.old, mutant.new))
    assert len(found) == 1 and found[0].startswith(f"{_module(mutant.file)}.{FILL_PLANTS[plant]} "), found


def test_the_shipped_kernels_pass_the_fill_lint_and_the_launch_lint_reads_it(monkeypatch):
    """Today's six op modules: clean, read in well under a second; the check's launch lint runs the rule."""
    start = time.perf_counter()
    for name in OPS:
        file = f"neurobrix/ops/{name}.py"
        assert fills.fill_problems(_module(file), _source(file)) == [], file
    assert time.perf_counter() - start < 2.0
    assert check.launch_problems.__wrapped__("attention_decode") == ()  # (the lint is cached per process)
    monkeypatch.setattr(fills, "NEUTRAL", {**fills.NEUTRAL, "tl.max": 0.0})  # the merge's -inf then named
    assert any("reduces m (tl.max(m, axis=0))" in p for p in check.launch_problems.__wrapped__("attention_decode"))


def test_the_tail_max_plant_is_wrong_only_where_every_split_scores_low(tmp_path):
    """Why the check passed it: bit for bit the shipped merge's output at the draws' scores; NaN where every score is
    256 below zero (the shares 2^(m - 0) underflow), where the shipped merge stays finite and right."""
    mutant = REGISTRY["attention_decode.merge-tail-max-filled-zero"]
    planted = _planted(tmp_path, mutant.file, mutant.old, mutant.new)
    plain = _decode_args()
    assert torch.equal(
        planted.attention_decode(*plain, config=DECODE), attention.attention_decode(*plain, config=DECODE)
    )
    low = _decode_args(shift=True)
    shipped = attention.attention_decode(*low, config=DECODE)
    q, k, v, lengths, scale = low
    for b, n in enumerate(lengths.tolist()):  # float64 softmax over the sequence's keys (one kv head)
        weights = torch.softmax(q[b].double() @ k[b, :n, 0].double().T * scale, dim=-1)
        assert torch.allclose(shipped[b].double(), weights @ v[b, :n, 0].double(), atol=1e-3)  # scores -256 + x
    with pytest.warns(RuntimeWarning):  # 0 / 0 in the interpreter
        assert torch.isnan(planted.attention_decode(*low, config=DECODE)).any()


@pytest.mark.parametrize("plant", sorted(EQUIVALENT))
def test_each_equivalent_computes_the_same_bits(plant, tmp_path):
    """Shown at the edge each would need to differ: a third of the splits empty and one padded, lengths crossing a
    key block (decode); queries not a multiple of BLOCK_M (flash); fp16 sums that round (rms_norm). None is named by
    either lint."""
    file, old, new = EQUIVALENT[plant]
    planted = _planted(tmp_path, file, old, new)
    assert fills.fill_problems(_module(file), _source(file, old, new)) == []
    assert offsets.narrow_offsets(_module(file), _source(file, old, new)) == []
    g = torch.Generator().manual_seed(1)
    if plant.startswith("rms_norm"):
        for dtype in (torch.float16, torch.float32):
            x, r = (torch.randn(5, 48, generator=g) * 300).to(dtype), torch.randn(5, 48, generator=g).to(dtype)
            w = torch.randn(48, generator=g).to(dtype)
            config = {"BLOCK_M": 4, "num_warps": 4}
            got = planted.rms_norm(x, w, 1e-6, r, config=config)
            want = rms_norm.rms_norm(x, w, 1e-6, r, config=config)
            assert all(torch.equal(a, b) for a, b in zip(got, want)), dtype
    elif plant.startswith("attention_decode"):
        for lengths in ([96, 20], [33, 65], [64, 1]):
            q, k, v, _, scale = _decode_args()
            n = torch.tensor(lengths, dtype=torch.int32)
            got = planted.attention_decode(q, k, v, n, scale, config=DECODE)
            assert torch.equal(got, attention.attention_decode(q, k, v, n, scale, config=DECODE)), lengths
    else:
        q, k, v = (torch.randn(1, 40, h, 16, generator=g) for h in (4, 2, 2))  # 40 queries: the last block 24 short
        config = {"BLOCK_M": 32, "BLOCK_N": 16, "num_warps": 4, "num_stages": 1}  # two key blocks a query block
        got = planted.attention_prefill(q, k, v, 0.25, config=config)
        assert torch.equal(got, attention.attention_prefill(q, k, v, 0.25, config=config))


# a module written for the rule: each line it must name ends with "# named"
FILLS = """
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    inside = offs < n
    a = tl.load(x_ptr + offs, mask=inside, other=0.0)
    b = tl.load(x_ptr + offs, mask=inside, other=float("-inf")).to(tl.float32)
    c = tl.load(x_ptr + offs, mask=inside, other=1.0)
    d = tl.load(x_ptr + offs, mask=inside)
    e = tl.load(x_ptr + offs, mask=inside, other=-float("inf"))
    f = tl.load(x_ptr + offs, mask=inside, other=n)
    g = tl.load(x_ptr + offs)
    tl.store(y_ptr, tl.max(a, axis=0))  # named: reduces a (tl.max(a, axis=0)), loaded with other=0.0
    tl.store(y_ptr, tl.max(b, axis=0) + tl.sum(a, axis=0))
    tl.store(y_ptr, tl.sum(c, axis=0))  # named: reduces c (tl.sum(c, axis=0)), loaded with other=1.0
    tl.store(y_ptr, tl.min(d, axis=0))  # named: reduces d (tl.min(d, axis=0)), a masked load without other=
    tl.store(y_ptr, tl.min(e, axis=0))  # named: reduces e (tl.min(e, axis=0)), loaded with other=-float('inf')
    tl.store(y_ptr, tl.argmax(e, axis=0) + tl.min(f, axis=0) + tl.sum(g, axis=0))
    tl.store(y_ptr, tl.sum(c * tl.where(inside, 1.0, 0.0), axis=0) + tl.max(tl.where(inside, a, -1e30), axis=0))
    acc = tl.zeros((BLOCK,), dtype=tl.float32) + tl.full((BLOCK,), 0, dtype=tl.int32)
    low = tl.zeros((BLOCK,), dtype=a.dtype)  # named: starts a value in a.dtype
    half = tl.full((BLOCK,), float("-inf"), tl.float16)  # named: starts a value in tl.float16
    tl.store(y_ptr + offs, acc + low + half)
"""


def test_the_fill_rule_reads_what_it_claims():
    """Named: a maximum of a load padded with 0, a sum padded with 1, a minimum padded with -inf or left unfilled, a
    value started in a's dtype or fp16 (a keyword or the third argument). Not named: the neutral fills (-inf under a
    cast, 0 for a sum, a maximum's -inf for an argmax), a fill the source does not spell (n), an unmasked load, a fill
    neutralised on the way (a weight, a tl.where)."""
    expected = [line.split("# named: ")[1] for line in FILLS.splitlines() if "# named: " in line]
    found = fills.fill_problems("synthetic", FILLS)
    assert len(found) == len(expected) == 6, found
    for fragment in expected:
        assert sum(p.startswith(f"synthetic._kernel {fragment}") for p in found) == 1, (fragment, found)


# a paged cache read through a table of element offsets, as a kernel would read one: the loaded slot narrowed
PAGED = """
import triton
import triton.language as tl


@triton.jit
def _kernel(k_ptr, table_ptr, len_ptr, o_ptr, b, BLOCK: tl.constexpr):
    slot = tl.load(table_ptr + b).to(tl.int32)  # named
    tl.store(o_ptr + tl.arange(0, BLOCK), tl.load(k_ptr + slot + tl.arange(0, BLOCK)))
    base = tl.load(table_ptr + b + 1)
    wide = tl.load(table_ptr + b + 2).to(tl.int64)
    n = tl.load(len_ptr + b).to(tl.int32)
    tl.store(o_ptr + base + tl.arange(0, BLOCK), n.to(tl.float32))
    tl.store(o_ptr + wide.to(tl.int32) + tl.cast(base, tl.int16), 1.0)  # named
"""


def test_the_offsets_lint_names_a_loaded_offset_narrowed():
    """A loaded value narrowed to int32 (or less) on its way to an offset, directly or through a name; not a load left
    as loaded (its tensor's dtype), nor a narrowed value that no offset reads (a length stored as a value)."""
    found = {(text, how) for _, text, _, how in offsets.findings("synthetic", PAGED)}
    assert found == {
        ("tl.load(table_ptr + b).to(tl.int32)", "loaded"),
        ("wide.to(tl.int32)", "loaded"),
        ("tl.cast(base, tl.int16)", "loaded"),
    }
    problems = offsets.narrow_offsets("synthetic", PAGED)
    assert len(problems) == 3 and all("may hold int64 values" in p for p in problems)


def test_decode_lengths_are_allowed_and_bound(monkeypatch):
    """Today's one loaded value narrowed, decode's lengths (its keys' loop bound): allowed, bound by the cache's
    positions; without the allowance the lint names it."""
    file, where = "neurobrix/ops/attention.py", "neurobrix.ops.attention._attention_decode_split_kernel"
    allow = offsets.NARROW_OFFSETS[where]["len_ptr"]  # the tensor: whichever element is read
    assert allow.bound == ("decode.lengths",)
    domains = {"attention_decode": [("attention_decode", (("B", 1, 64), ("S", 1, 32768), ("G", 1, 8), ("D", 64, 128)))]}
    assert offsets.bounds(domains, [], {})["decode.lengths"] == 32768
    monkeypatch.setitem(
        offsets.NARROW_OFFSETS,
        where,
        {k: a for k, a in offsets.NARROW_OFFSETS[where].items() if k != "len_ptr"},
    )
    found = offsets.narrow_offsets(_module(file), _source(file))
    assert len(found) == 1 and "narrows tl.load(len_ptr + b) to int32" in found[0]
