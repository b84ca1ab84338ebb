"""Kernel mutants, round kmut16: offsets narrowed to int32 other than by a program id.

Round kmut15's lint read program ids only. Planted, one in each kernel whose offsets an index enters, and run as the
registry runs them (``--only``, ``--jobs 1``): an index cast to int32 (rms_norm's, silu_mul's, skinny's rows, gemv's
columns, rotary's, flash's, decode's and decode's merge's sequence, tiled's output rows where they meet the row
stride), rotary's positions loaded without widening (the KV-cache slot times the cache's position stride), the
split-K merge's loop counter times M x N, greedy_pick's and tma_split's row offsets widened after their multiply.
Caught as the suite was, 2 (greedy_pick's and tma_split's: kmut15's lint names the program id or the widening they
drop); passed, 11: every offset stays far below 2^31 elements at the interpreter's shapes, so each computes the same
values on CPU and reads or writes elsewhere on a GPU past 2^31. None is equivalent: each wraps at a size the op
accepts. Closed: the launch lint now follows every pointer offset of the op's module (``conformance.offsets``) and
names a product of int32 values with a stride or a size, unless ``NARROW_OFFSETS`` lists it with its bound.

Pinned here: the lint clean on today's source, each allowance needed (removed, the lint names its function), each
plant named by the lint (on its patched source; end to end through ``check.launch_problems`` on a patched copy for
one), and the lint's reading of each way an offset is narrowed, on a module written for it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import check, mutants, offsets

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = {m.id: m for m in mutants.MUTANTS}
OPS = ("attention", "linear", "pick", "rms_norm", "rotary", "silu_mul")

# the plants (in the registry) -> the functions the offsets lint names
PLANTS = {
    "rms_norm.row-offsets-cast-int32": {"_rms_norm_kernel"},
    "silu_mul.row-offsets-cast-int32": {"_silu_mul_kernel"},
    "rotary.positions-not-widened": {"_rotary_kernel", "_rotate_heads"},
    "rotary.batch-cast-int32": {"_rotary_kernel", "_rotate_heads"},
    "greedy_pick.row-widened-after-multiply": {"_greedy_pick_kernel"},
    "attention_prefill.batch-cast-int32": {"_attention_flash_kernel"},
    "attention_decode.batch-cast-int32": {"_attention_decode_split_kernel"},
    "attention_decode.merge-batch-cast-int32": {"_attention_decode_merge_kernel"},
    "linear.gemv.columns-cast-int32": {"_linear_gemv_kernel"},
    "linear.merge.split-offset-int32": {"_linear_split_merge_kernel"},
    "linear.skinny.rows-cast-int32": {"_linear_skinny_kernel"},
    "linear.tiled.store-rows-cast-int32": {"_linear_tiled_kernel"},
    "linear.tma_split.output-rows-widened-after-multiply": {"_linear_tma_split_kernel"},
}
# caught as the suite was: kmut15's program-id lint names the program id (or the widening) each drops
BY_PROGRAM_IDS = {"greedy_pick.row-widened-after-multiply", "linear.tma_split.output-rows-widened-after-multiply"}
# an allowance no finding on today's source uses, kept for a registered mutant of another class (a GQA mapping
# interleaved: offs_g x HKV, a head below Hq) that the lint would otherwise catch before any example
GUARDS = {("neurobrix.ops.attention._attention_decode_split_kernel", "offs_g"): "attention_decode.gqa-interleaved"}


def _module(file: str) -> str:
    return file.removesuffix(".py").replace("/", ".")


def _source(mutant: mutants.Mutant | None = None, file: str = "") -> str:
    text = (ROOT / (mutant.file if mutant else file)).read_text(encoding="utf-8")
    return text.replace(mutant.old, mutant.new) if mutant else text


def test_the_plants_are_registered_and_anchored():
    assert set(PLANTS) <= set(REGISTRY)
    assert mutants.anchor_problems([REGISTRY[p] for p in PLANTS]) == []


def test_the_shipped_kernels_have_no_unlisted_narrow_offset():
    for name in OPS:
        file = f"neurobrix/ops/{name}.py"
        assert offsets.narrow_offsets(_module(file), _source(file=file)) == [], file


def test_each_allowance_is_needed(monkeypatch):
    """Each entry of NARROW_OFFSETS taken out, the lint names its function on today's source (or on the source of
    the registered mutant it keeps the lint from catching): no entry allows what nothing narrows."""
    for where, names in offsets.NARROW_OFFSETS.items():
        module, _, function = where.rpartition(".")
        for name in names:
            guarded = GUARDS.get((where, name))
            text = _source(REGISTRY[guarded]) if guarded else _source(file=module.replace(".", "/") + ".py")
            assert offsets.narrow_offsets(module, text) == [], (where, name)
            monkeypatch.setitem(offsets.NARROW_OFFSETS, where, {k: v for k, v in names.items() if k != name})
            found = offsets.narrow_offsets(module, text)
            assert found and all(p.startswith(f"{where} ") for p in found), (where, name, found)
            monkeypatch.setitem(offsets.NARROW_OFFSETS, where, names)


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_each_plant_is_named_by_the_offsets_lint(plant):
    """The interpreter's shapes keep every offset far below 2^31: the plant computes the same values there (the check
    passed 11 of them); its source names it. The program-id lint alone named only the two that drop a program id's
    widening."""
    mutant = REGISTRY[plant]
    text = _source(mutant)
    module = _module(mutant.file)
    found = offsets.narrow_offsets(module, text)
    named = {p.split(" ", 1)[0].rpartition(".")[2] for p in found}
    assert named == PLANTS[plant], found
    earlier = [p for where, src in _jit_sources(text, module).items() for p in check.narrow_reads(where, src)]
    assert bool(earlier) == (plant in BY_PROGRAM_IDS), earlier


def _jit_sources(text: str, module: str) -> dict[str, str]:
    import ast

    found = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and any(ast.unparse(d) == "triton.jit" for d in node.decorator_list):
            node.decorator_list = []
            found[f"{module}.{node.name}"] = ast.unparse(node)
    return found


LAUNCH = """
import sys
from conformance import check
print("\\n".join(check.launch_problems(sys.argv[1])) or "none")
"""


def test_the_launch_lint_names_a_kv_cache_slot_in_int32_on_a_patched_copy(tmp_path):
    """End to end: what the check runs before any example, on a copy of the packages with rotary's positions loaded
    without widening (the KV-cache slot times the cache's position stride in int32)."""
    mutant = REGISTRY["rotary.positions-not-widened"]
    mutants.plant(mutant, tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, mutant.kernel],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "_rotary_kernel computes pos * stride_vcs in int32" in done.stdout, done.stdout


# a module written for the lint: each line it must name ends with "# narrow: <what it names>"
READING = """
import triton
import triton.language as tl


@triton.jit
def _helper(base, index, stride, BLOCK: tl.constexpr):
    return tl.load(base + index * stride + tl.arange(0, BLOCK))  # narrow: index * stride


@triton.jit
def _kernel(x_ptr, idx_ptr, y_ptr, n, m, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    slot = tl.load(idx_ptr + row)
    wide_slot = tl.load(idx_ptr + row).to(tl.int64)
    a = tl.load(x_ptr + slot * stride)  # narrow: slot * stride
    a += tl.load(x_ptr + wide_slot * stride)
    a += tl.load(x_ptr + tl.arange(0, BLOCK) * stride)  # narrow: tl.arange(0, BLOCK) * stride
    for i in range(0, n, BLOCK):
        a += tl.load(x_ptr + i * stride)  # narrow: i * stride
    for j in range(row, n, BLOCK):
        a += tl.load(x_ptr + j * stride)
    a += tl.load(x_ptr + (row * stride).to(tl.int32))  # narrow: (row * stride).to(tl.int32)
    a += tl.load(x_ptr + (tl.program_id(1) * BLOCK).to(tl.int64) * stride)
    a += tl.load(x_ptr + (tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)).to(tl.int32))
    start = tl.program_id(1) * m
    a += tl.load(x_ptr + row * stride + start)  # narrow: tl.program_id(1) * m
    rows = x_ptr + row * stride
    rows += n * m  # narrow: n * m
    a += _helper(x_ptr, slot, stride, BLOCK)
    a += _helper(rows, row, stride, BLOCK)
    tl.store(y_ptr + row, a)


@triton.jit
def _unnamed(x, out, stride):
    tl.store(out, tl.load(x + tl.program_id(0) * stride))  # narrow: tl.program_id(0) * stride
"""


def test_the_lint_reads_each_way_an_offset_is_narrowed():
    """An index loaded from an int32 tensor, an arange, a loop counter, a program id times a stride, a size times a
    size, a helper's parameter one call passes in int32, an int64 product cast to int32, a pointer not named _ptr:
    each named; the same widened, a counter over int64 bounds, an index times a block size widened before the stride
    or cast back to int32 (below the size it walks): not."""
    expected = set()
    function = ""
    for line in READING.splitlines():
        if line.startswith("def "):
            function = line[4:].split("(")[0]
        if "# narrow: " in line:
            expected.add((f"synthetic.{function}", line.split("# narrow: ")[1]))
    found = {(where, text) for where, text, _, _ in offsets.findings("synthetic", READING)}
    assert found == expected
    problems = offsets.narrow_offsets("synthetic", READING)
    assert len(problems) == len(expected) and all(re.match(r"synthetic\._\w+ (computes|casts) ", p) for p in problems)
