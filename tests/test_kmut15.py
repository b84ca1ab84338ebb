"""Kernel mutants, round kmut15: bugs a GPU-kernel engineer writes, planted where the registry did not reach.

Run as the registry runs them (``--only``, ``--jobs 1``):

* caught as the suite was, 9, in the registry: rotary storing at the input's head or position stride, appending k
  one row before its position, ignoring the positions it is given; the online softmax adding a block's weights to
  its running sum before the rescale (decode and flash), decode adding a block's P.V before the rescale, decode's
  query heads of a kv head counted in steps of Hkv, flash's blocks crossing the diagonal not rescaling the
  accumulator (two more plants were registered mutants already and are not counted);
* passed and equivalent, 4, kept here (``EQUIVALENT``): greedy_pick's first index of a part's largest value taken
  over the lanes past V, and its merge's first part holding the largest value over the lanes past the row's parts
  (a lane past V carries an offset of V or more, an idle lane of the merge the index V: the least index is the same,
  V being the "none" the minimum starts from); the flash kernel's whole key
  blocks ending before its first query's own key (the block goes to the masked loop, which masks nothing in it);
  silu_mul's up half multiplied in the storage dtype (Triton promotes fp16 x fp32 to fp32: the same product);
* passed, then fixed, 7, in the registry: a program id left in int32 (rms_norm's rows, silu_mul's rows, greedy_pick's
  rows, decode's and flash's sequences) or tiled's and tma_split's row offsets not widened. Every offset then
  multiplies in int32 and wraps past 2^31 elements, far beyond any shape the interpreter runs: the same values on
  CPU, another address on a GPU. The check's launch lint now reads every program id off the op's source
  (``check.widening_problems``): widened at once, or a narrow one named in ``check.NARROW_IDS`` with its reason and
  the later widenings ``check.WIDENED`` requires.

Pinned here: the lint clean on today's source and naming each int32 plant (on its patched source, and end to end
through ``check.launch_problems`` on a patched copy of the packages for one of them); each equivalent plant's output
on the interpreter equal to the shipped kernel's bit for bit at the shapes where it changes what the programs do,
while the registry's mutant of the same code there is seen by the same comparison.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import check, mutants
from conformance.mutants import ATTN, PICK, SILU, Mutant

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = {m.id: m for m in mutants.MUTANTS}

# planted, run as the registry runs them, passed; equivalent (below), so not in the registry
EQUIVALENT = (
    Mutant(
        "greedy_pick.first-largest-without-inside",
        "greedy_pick",
        PICK,
        "tl.where(inside & (x == largest), offs, V)",
        "tl.where(x == largest, offs, V)",
        "greedy_pick's first index of the part's largest value taken over the lanes past V too (filled with -inf)",
        "load without its mask",
    ),
    Mutant(
        "greedy_pick.merge-best-without-held",
        "greedy_pick",
        PICK,
        "tl.where(held & ~part_nan & (v == best), i, V)",
        "tl.where(~part_nan & (v == best), i, V)",
        "greedy_pick's merge takes the first part holding the largest value over the lanes past the row's parts too "
        "(filled with -inf and index V)",
        "load without its mask",
    ),
    Mutant(
        "attention_chunk.whole-blocks-without-own-key",
        "attention_chunk",
        ATTN,
        "whole = (past + block * BLOCK_M + 1) // BLOCK_N * BLOCK_N",
        "whole = (past + block * BLOCK_M) // BLOCK_N * BLOCK_N",
        "the flash kernel's unmasked key blocks end before the program's first query's own key: where that key "
        "ends a key block, the block is visited by the masked (diagonal) loop instead",
        "mask off by one",
    ),
    Mutant(
        "silu_mul.up-not-upcast",
        "silu_mul",
        SILU,
        "u = tl.load(g_ptrs + I, mask=mask, other=0.0).to(tl.float32)",
        "u = tl.load(g_ptrs + I, mask=mask, other=0.0)",
        "silu_mul's up half kept in the storage dtype: silu(g) x u multiplied with u in fp16",
        "low-precision accumulation",
    ),
)
# the equivalent plant -> the registry's mutant of the same code, which the same comparison sees
CONTROLS = {
    "greedy_pick.first-largest-without-inside": "greedy_pick.tail-filled-with-zero",
    "greedy_pick.merge-best-without-held": "greedy_pick.merge-fill-zero",
    "attention_chunk.whole-blocks-without-own-key": "attention_chunk.whole-blocks-one-key-late",
    "silu_mul.up-not-upcast": "silu_mul.silu-rounded",
}
# the int32 plants (in the registry): the kernel the lint names
NARROW = {
    "rms_norm.row-offsets-int32": "_rms_norm_kernel",
    "silu_mul.row-offsets-int32": "_silu_mul_kernel",
    "greedy_pick.row-offsets-int32": "_greedy_pick_kernel",
    "attention_decode.batch-offsets-int32": "_attention_decode_split_kernel",
    "attention_prefill.batch-offsets-int32": "_attention_flash_kernel",
    "linear.tiled.row-offsets-int32": "_linear_tiled_kernel",
    "linear.tma_split.partial-rows-int32": "_linear_tma_split_kernel",
}


def test_the_plants_are_anchored_and_the_equivalent_ones_kept_out_of_the_registry():
    assert mutants.anchor_problems(EQUIVALENT) == []
    assert not {m.id for m in EQUIVALENT} & set(REGISTRY)
    assert set(NARROW) <= set(REGISTRY) and set(CONTROLS.values()) <= set(REGISTRY)


# ------------------------------------------------------------------------------------------------ the int32 lint
def _jit_sources(text: str, module: str) -> dict[str, str]:
    """Each @triton.jit function of a module's source text: its qualified name -> its source."""
    found = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and any(ast.unparse(d) == "triton.jit" for d in node.decorator_list):
            node.decorator_list = []
            found[f"{module}.{node.name}"] = ast.unparse(node)
    return found


def _lint(text: str, file: str) -> list[str]:
    module = file.removesuffix(".py").replace("/", ".")
    return [p for where, src in _jit_sources(text, module).items() for p in check.narrow_reads(where, src)]


def test_the_shipped_kernels_read_their_program_ids_clean():
    from neurobrix.ops import attention, linear, pick, rms_norm, rotary, silu_mul

    for module in (attention, linear, pick, rms_norm, rotary, silu_mul):
        assert check.widening_problems(module) == (), module.__name__
    for file in sorted({m.file for m in REGISTRY.values() if m.file.startswith("neurobrix/ops/")}):
        assert _lint((ROOT / file).read_text(encoding="utf-8"), file) == [], file


@pytest.mark.parametrize("plant", sorted(NARROW))
def test_each_int32_plant_fails_the_widening_lint(plant):
    """The interpreter's shapes keep every offset far below 2^31: the plant passes every example (rms_norm's,
    silu_mul's and greedy_pick's checks passed it before this round); its source names it."""
    mutant = REGISTRY[plant]
    text = (ROOT / mutant.file).read_text(encoding="utf-8")
    found = _lint(text.replace(mutant.old, mutant.new), mutant.file)
    assert found and all(f".{NARROW[plant]} " in p for p in found), found


LAUNCH = """
import sys
from conformance import check
print("\\n".join(check.launch_problems(sys.argv[1])) or "none")
"""


def test_the_launch_lint_names_an_int32_plant_on_a_patched_copy(tmp_path):
    """End to end: what the check runs before any example, on a copy of the packages with the plant."""
    mutant = REGISTRY["silu_mul.row-offsets-int32"]
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
    assert "_silu_mul_kernel reads tl.program_id(0) into pid_m in int32" in done.stdout, done.stdout


# ---------------------------------------------------------------------------------------- the equivalent plants
CASES = r"""
import hashlib, importlib, json, math, sys, torch
trees = json.loads(sys.argv[1])
def digest(*ts):
    h = hashlib.sha256()
    for t in ts:
        h.update(t.contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]
def poisoned(size, dtype, device):
    return torch.full(size, float("nan"), dtype=dtype, device=device)
def pick_rows():
    # V = 187: three parts of 64 (the merge's four lanes, one past the row's parts); rows of -inf, -inf with a last
    # part all NaN, all negative, finite with a last part all NaN, and plain
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, 187, generator=g, dtype=torch.float64)
    x[0] = -math.inf
    x[1] = -math.inf
    x[1, 128:] = math.nan
    x[2] = -x[2].abs() - 1
    x[3, 128:] = math.nan
    return x.float()
def chunk(C, S):
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, n, h, 16, generator=g) for n, h in ((C, 2), (S, 1), (S, 1)))
    return q, k, v
out = {}
for name, tree in trees.items():
    sys.path.insert(0, tree)
    for mod in [m for m in sys.modules if m == "neurobrix" or m.startswith("neurobrix.")]:
        del sys.modules[mod]
    from neurobrix.ops.pick import greedy_pick
    from neurobrix.ops.attention import attention_chunk
    from neurobrix.ops.silu_mul import silu_mul
    sys.path.pop(0)
    got = []
    logits = pick_rows()
    tokens, state = torch.full((5, 1), -1, dtype=torch.int64), torch.zeros((2, 5), dtype=torch.int64)
    greedy_pick(logits, tokens, state, config={"BLOCK_V": 64, "num_warps": 4}, empty=poisoned)
    got.append(digest(tokens, state))
    # the first query of the chunk's one block at 63 (its own key ends the first key block of 64), then at 62
    for S in (95, 94):
        q, k, v = chunk(32, S)
        o = attention_chunk(q, k, v, 0.25, config={"BLOCK_M": 32, "BLOCK_N": 64, "num_warps": 4}, empty=poisoned)
        got.append(digest(o))
    g = torch.Generator().manual_seed(2)
    for dtype in (torch.float16, torch.float32):
        gu = (torch.randn(5, 2 * 72, generator=g) * 4).to(dtype)
        got.append(digest(silu_mul(gu, config={"BLOCK_M": 8, "BLOCK_I": 64, "num_warps": 4}, empty=poisoned)))
    out[name] = got
print(json.dumps(out))
"""
# which of CASES' digests each plant's code runs in: (pick), (chunk at 63, chunk at 62), (silu fp16, fp32)
SEEN = {
    "greedy_pick.first-largest-without-inside": (0,),
    "greedy_pick.merge-best-without-held": (0,),
    "attention_chunk.whole-blocks-without-own-key": (1, 2),
    "silu_mul.up-not-upcast": (3, 4),
}


def test_each_equivalent_plant_computes_the_shipped_output_bit_for_bit(tmp_path):
    """On copies of the packages, each with one plant, at shapes where the plant runs: the outputs (tokens and state
    of rows of -inf, with a last part of NaN, of negatives, over three parts of 64 and the merge's fourth lane idle;
    the chunk's output with its first query's own key ending a key block, where the plant sends that block to the
    masked loop; silu_mul's in fp16 and fp32) equal the shipped kernel's bit for bit, poisoned NaN where nothing is
    stored. The registry's
    mutant of the same code (the pick's tail or the merge's idle lanes filled with 0 on a row of negatives, the
    whole blocks one key late where the first query sits at 62, silu rounded before the product) is seen by the
    same comparison."""
    trees = {"shipped": str(ROOT)}
    for patch in (*EQUIVALENT, *(REGISTRY[c] for c in CONTROLS.values())):
        mutants.plant(patch, tmp_path / patch.id)
        trees[patch.id] = str(tmp_path / patch.id)
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", CASES, json.dumps(trees)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.splitlines()[-1])
    shipped = got["shipped"]
    for plant in EQUIVALENT:
        assert got[plant.id] == shipped, plant.id
        control = got[CONTROLS[plant.id]]
        assert any(control[i] != shipped[i] for i in SEEN[plant.id]), CONTROLS[plant.id]
