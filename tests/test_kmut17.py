"""Kernel mutants, round kmut17: narrow offsets where the launch lint did not look, and allowances whose range grows.

Round kmut16's lint read Python syntax: a pointer chosen by ``tl.where`` (whatever its name), an offset carried in a
tuple or returned by a helper, a pointer a helper returns, a left shift: none followed. Planted in the kernels (one
edit each), a tuple of cache bases (decode), a helper's row offsets (silu_mul) and a helper's pointer (rms_norm),
each with the rows or the sequence in int32, hid from it, and the interpreter check passed them (they compute the
same values below 2^31 elements); tl.where's pointer and a shift after a narrowing cast were named already. An
allowance of ``NARROW_OFFSETS`` named an operand, not its range: a candidate space that offers tma_split's K split at
every prompt size over 16 slices takes slice x M x N to 2.5e9, past 2^31, and nothing refused it.

Closed: the lint follows tl.where's branches, tuples and helpers' returns and reads a shift as a product; each
allowance names the bound (``offsets.Allow``) that ``offsets.bound_problems`` computes from the catalogue's
domains, the models' layouts and the candidate spaces, and certify's plan refuses one past 2^31.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

from conformance import catalogue, certify, mutants, offsets
from neurobrix.errors import UsageError
from neurobrix.ops import SPECS

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = {m.id: m for m in mutants.MUTANTS}
OPS = ("attention", "linear", "pick", "rms_norm", "rotary", "silu_mul")

# the plants (in the registry) -> the function the lint names
PLANTS = {
    "attention_decode.kv-bases-in-a-tuple-int32": "_attention_decode_split_kernel",
    "silu_mul.row-offsets-helper-int32": "_row_offsets",
    "rms_norm.residual-through-helper-int32": "_rms_norm_kernel",
    "rms_norm.stream-through-where-int32": "_rms_norm_kernel",
    "greedy_pick.picks-row-int32-shifted": "_greedy_pick_kernel",
}


def _module(file: str) -> str:
    return file.removesuffix(".py").replace("/", ".")


def _source(file: str, old: str = "", new: str = "") -> str:
    text = (ROOT / file).read_text(encoding="utf-8")
    if old:
        assert text.count(old) == 1, old
    return text.replace(old, new) if old else text


def test_the_plants_are_registered_and_anchored():
    assert set(PLANTS) <= set(REGISTRY)
    assert mutants.anchor_problems([REGISTRY[p] for p in PLANTS]) == []


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_each_plant_is_named_by_the_offsets_lint(plant):
    mutant = REGISTRY[plant]
    found = offsets.narrow_offsets(_module(mutant.file), _source(mutant.file, mutant.old, mutant.new))
    assert found and {p.split(" ", 1)[0].rpartition(".")[2] for p in found} == {PLANTS[plant]}, found


def test_the_shipped_kernels_stay_clean_and_the_lint_fast():
    """Today's six op modules: nothing unallowed, read in well under a second (0.15 s on 2 cores)."""
    start = time.perf_counter()
    for name in OPS:
        file = f"neurobrix/ops/{name}.py"
        assert offsets.narrow_offsets(_module(file), _source(file)) == [], file
    assert time.perf_counter() - start < 3.0


def test_equivalent_plants_stay_unnamed():
    """tl.where of an int32 and an int64 value is int64 (Triton promotes both branches), and a shift of an int64
    index is int64: neither narrows an offset, and the lint names neither."""
    for file, old, new in (
        (
            "neurobrix/ops/rotary.py",
            "        row = pos if CACHE else s\n",
            "        row = tl.where(CACHE, pos, s.to(tl.int32))\n",
        ),
        (
            "neurobrix/ops/pick.py",
            "    picks = part_ptr + row * 2 * parts\n",
            "    picks = part_ptr + (row << 1) * parts\n",
        ),
    ):
        assert offsets.narrow_offsets(_module(file), _source(file, old, new)) == [], new


# a module written for the lint: each line it must name ends with "# narrow: <what it names>"
READING = """
import triton
import triton.language as tl


@triton.jit
def _offset(index, stride):
    return index * stride  # narrow: index * stride


@triton.jit
def _base(base, index):
    return base + index


@triton.jit
def _pair(index, stride, other):
    return index * stride, index * other  # narrow: index * stride


@triton.jit
def _first(pair):
    return pair[0]


@triton.jit
def _kernel(x_ptr, y, z, n, stride, other, log, FLAG: tl.constexpr, LOG: tl.constexpr):
    i = tl.program_id(0)
    wide = tl.program_id(1).to(tl.int64)
    tl.store(tl.where(FLAG, y, z) + n * i, 1.0)  # narrow: n * i
    offs = (x_ptr, i * stride)  # narrow: i * stride
    tl.store(offs[0] + offs[1], 1.0)
    pick = (i * other, wide * stride)
    tl.store(x_ptr + pick[1], 1.0)
    p, o = (x_ptr, wide * stride)
    tl.store(p + o, 1.0)
    tl.store(x_ptr + _offset(i, other), 1.0)
    row = _base(x_ptr, wide * stride)
    tl.store(row + i * n, 1.0)  # narrow: i * n
    a, b = _pair(i, stride, other)
    tl.store(x_ptr + a, 1.0)
    tl.store(x_ptr + _first((n * stride, i)), 1.0)  # narrow: n * stride
    tl.store(x_ptr + (i << 20), 1.0)  # narrow: i << 20
    tl.store(x_ptr + (i << log), 1.0)  # narrow: i << log
    tl.store(x_ptr + i * 4096, 1.0)  # narrow: i * 4096
    tl.store(x_ptr + (i << 1) + i * 2 + (wide << 20) + (i << LOG), 1.0)
    tl.store(x_ptr + tl.where(FLAG, wide, i) * stride, 1.0)
"""


def test_the_lint_reads_tuples_helpers_where_and_shifts():
    """Named: a pointer not named _ptr chosen by tl.where, an offset in a tuple (indexed by a literal, passed to a
    helper), what a helper returns (an offset, a tuple's used element, a pointer then offset in int32), a shift by a
    literal of SCALE bits or more or by a run-time amount, a literal factor of 2^SCALE or more. Not named: the same
    widened, a tuple's element no offset uses, a doubling, a shift of an int64 value or by a constexpr (a block's
    size, like an index times BLOCK), tl.where of an int64 and an int32 value (int64)."""
    expected = set()
    function = ""
    for line in READING.splitlines():
        if line.startswith("def "):
            function = line[4:].split("(")[0]
        if "# narrow: " in line:
            expected.add((f"synthetic.{function}", line.split("# narrow: ")[1]))
    found = {(where, text) for where, text, _, _ in offsets.findings("synthetic", READING)}
    assert found == expected


# ---------------------------------------------------------------------------------------- the allowances' bounds
TMA_SPLIT = (
    "        if triton.cdiv(m_hi, 128) * triton.cdiv(n_hi, 128) < 400 and k_hi >= 1024:\n"
    '            found += ({"variant": "tma_split", **tile, **c, "SUBTILE": 0, "WARP_SPECIALIZE": False}\n'
    "                      for c in (*grid(BLOCK_M=[128], BLOCK_N=[128], SPLIT_K=[2, 3, 4], num_warps=[8], "
    "num_stages=[4]),\n"
)
EVERY_PROMPT = TMA_SPLIT.replace("triton.cdiv(m_hi, 128) * triton.cdiv(n_hi, 128) < 400 and ", "")
# a change to a candidate space -> the allowances it takes past 2^31 (none: it stays within its bound)
RANGES = {
    "tma_split split at every prompt size, 16 slices": (
        "neurobrix/ops/linear.py",
        TMA_SPLIT,
        EVERY_PROMPT.replace("SPLIT_K=[2, 3, 4]", "SPLIT_K=[2, 4, 8, 16]"),
        {"_merge_if_last", "_linear_tma_split_kernel"},
    ),
    "tma_split split at every prompt size": ("neurobrix/ops/linear.py", TMA_SPLIT, EVERY_PROMPT, set()),
    "gemv split 64 ways": (
        "neurobrix/ops/linear.py",
        "SPLIT_K=[1, 2, 4, 8], num_warps=[4, 8]))",
        "SPLIT_K=[1, 2, 4, 8, 16, 32, 64], num_warps=[4, 8]))",
        set(),
    ),
    "decode split 512 ways": (
        "neurobrix/ops/attention.py",
        "SPLITS=[16, 32, 64, 128]",
        "SPLITS=[16, 32, 64, 128, 256, 512]",
        set(),
    ),
}


@pytest.fixture(scope="module")
def catalogue_shapes():
    return catalogue.required_domains(), list(catalogue.load()[0].values())


def _planted_specs(tmp_path: Path, file: str, old: str, new: str) -> dict:
    """SPECS with the op of ``file`` imported from a patched copy (its candidate space changed), under the module's
    own name (the allowances are the module's), not put in sys.modules."""
    copy = tmp_path / Path(file).name
    copy.write_text(_source(file, old, new), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(_module(file), copy)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {**SPECS, **{s.name: s for s in module.SPECS}}


def test_every_allowance_is_bound_below_2_31(catalogue_shapes):
    """Each allowance names quantities the bounds compute, and none reaches 2^31 at today's catalogue; an allowance
    bound to nothing computed is refused."""
    domains, models = catalogue_shapes
    largest = offsets.bounds(domains, models, SPECS)
    for where, names in offsets.NARROW_OFFSETS.items():
        for operand, allow in names.items():
            assert isinstance(allow, offsets.Allow) and allow.bound, (where, operand)
            assert all(b in largest for b in allow.bound), (where, operand, allow.bound)
            assert max(largest[b] for b in allow.bound) < offsets.LIMIT, (where, operand)
    assert offsets.bound_problems(domains, models, SPECS) == []
    where = "neurobrix.ops.rotary._rotate_heads"
    unbound = {where: {"offs_h": offsets.Allow(("rotary.rows",), "a head")}}
    original = offsets.NARROW_OFFSETS[where]
    try:
        offsets.NARROW_OFFSETS.update(unbound)
        assert offsets.bound_problems(domains, models, SPECS) == [
            f"{where}: the allowance of offs_h is bounded by rotary.rows, which no domain or candidate of the "
            "catalogue reaches: nothing is known of its range (a new kernel's quantity is computed in "
            "conformance/offsets.py's bounds, from its domains and candidates as the launcher sizes what it multiplies)"
        ]
    finally:
        offsets.NARROW_OFFSETS[where] = original


@pytest.mark.parametrize("change", sorted(RANGES))
def test_a_candidate_space_widening_an_allowance_is_refused(change, catalogue_shapes, tmp_path):
    """The lint reads the kernels, which none of these changes: the bound, computed from the candidate space, moves
    with each (shown) and refuses the allowances it takes past 2^31, naming the function; the rest stay below."""
    domains, models = catalogue_shapes
    file, old, new, refused = RANGES[change]
    specs = _planted_specs(tmp_path, file, old, new)
    assert offsets.bounds(domains, models, specs) != offsets.bounds(domains, models, SPECS)
    problems = offsets.bound_problems(domains, models, specs)
    assert {p.split(" ", 1)[0].rpartition(".")[2] for p in problems} == refused, problems
    assert all("past 2^31" in p for p in problems)


def test_certify_refuses_to_plan_past_a_bound(catalogue_shapes, tmp_path, monkeypatch):
    """Where the bound is checked: certify's plan for a GPU class, before any setting is tried."""
    file, old, new, _ = RANGES["tma_split split at every prompt size, 16 slices"]
    planted = _planted_specs(tmp_path, file, old, new)["linear"]
    assert certify.plan("h200", ["linear"], ["bf16"], models=["Qwen/Qwen2.5-7B-Instruct"])
    monkeypatch.setitem(SPECS, "linear", planted)
    with pytest.raises(UsageError, match=r"_linear_tma_split_kernel keeps unit % SPLIT_K \* M \* N in int32"):
        certify.plan("h200", ["linear"], ["bf16"], models=["Qwen/Qwen2.5-7B-Instruct"])
