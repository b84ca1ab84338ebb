"""Kernel mutants, round kmut14: plants where the registry had the fewest mutants per line of Triton source.

The registry (541 mutants before this round) counted by the jit function each anchor lies in, over the function's
lines: linear's tma_split kernel 0.46 a line, tiled 0.61, the split-K merge kernel 0.62, skinny 0.64, decode's merge
0.65, gemv 0.68, ``_merge_if_last`` 0.69, tma 0.74, greedy_pick 0.77, rotary 0.79 to 0.80, the attention kernels
0.81 to 0.93, silu_mul 1.04, rms_norm 1.38. Fifteen plants went to lines no mutant touched, run as the registry runs
them (``--only``, ``--jobs 1``):

* caught, 7, in the registry: tma_split's right half stored a column block on, its slices counting arrivals per row
  block, its x tiles at (slice start + step) BLOCK_K; skinny's MERGE "last" finding split k BLOCK_M rows on; tiled's
  rows in BLOCK_N units; decode's merge weighing every sequence by the first one's maxima; rotary reading k from the
  cache row it writes;
* passed and equivalent, 4, kept here (``EQUIVALENT``): the grouped walks' row block within its group taken from the
  tile index modulo the group's size instead of from the tile's offset in the group (tiled, tma, tma_split): within
  each column of a group that shifts the row blocks by a constant modulo the group's size, a rotation, so every tile
  is still computed once, by another program; and tma's row blocks counted as M // BLOCK_M + 1 (a row of tiles past
  M, zero-filled on load, clipped on store);
* passed, then fixed, 4, in the registry: the arrival protocol of linear's MERGE "last" (``_merge_if_last``) and of
  greedy_pick, its ``tl.debug_barrier()`` dropped or its ``tl.atomic_add`` relaxed or scoped to one program. The
  interpreter runs one program at a time and ignores memory order: the same values on CPU, a race on a GPU. The
  check's launch lint now reads each arrival off the source (``check.arrival_problems``).

Pinned here: the walk model (every tile once under the plant, the order differing at a last group of 3 under
GROUP_M 8; shown to fail with the registry's last-group-full mapping put in the plant's place); each equivalent
plant's output on the interpreter equal to the shipped kernel's bit for bit at the shape where it changes what the
programs do, while the registry's mutant of the same code is seen by the same comparison; the lint clean on today's
source and naming each arrival plant on a patched copy (all four fail before the fix).

Left open (GPU only): the merges' partial reads without ``.cg``, the tiles' int32 offsets past 2^31 elements,
greedy_pick's merge past 4 parts (its small shapes reach 3).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import mutants
from conformance.mutants import LINEAR, Mutant
from conformance.shipped import shipped_settings
from neurobrix import tables as nb_tables

ROOT = Path(__file__).resolve().parents[1]

# planted, run as the registry runs them, passed; equivalent (below), so not in the registry
EQUIVALENT = (
    Mutant(
        "linear.tiled.row-block-without-group-offset",
        "linear",
        LINEAR,
        "    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)",
        "    pid_m = first_pid_m + (pid % group_size_m)",
        "tiled's row block within its group from the program id modulo the group's size, not from its offset in the "
        "group",
        "wrong indexing",
        variants=("tiled",),
    ),
    Mutant(
        "linear.tma.row-block-without-group-offset",
        "linear",
        LINEAR,
        "        pid_m = first_pid_m + ((tile % num_pid_in_group) % group_size_m)",
        "        pid_m = first_pid_m + (tile % group_size_m)",
        "tma's row block within its group from the tile index modulo the group's size",
        "wrong indexing",
        variants=("tma",),
    ),
    Mutant(
        "linear.tma_split.row-block-without-group-offset",
        "linear",
        LINEAR,
        "        pid_m = first_pid_m + tile % num_pid_in_group % group_size_m",
        "        pid_m = first_pid_m + tile % group_size_m",
        "tma_split's row block within its group from the tile index modulo the group's size",
        "wrong indexing",
        variants=("tma_split",),
    ),
)
ROW_BLOCKS_PLUS_ONE = Mutant(
    "linear.tma.row-blocks-plus-one",
    "linear",
    LINEAR,
    "):\n    dependent_launch(PDL)\n    num_pid_m = tl.cdiv(M, BLOCK_M)\n    num_pid_n = tl.cdiv(N, BLOCK_N)\n"
    "    num_pid_in_group = GROUP_M * num_pid_n\n    k_tiles",
    "):\n    dependent_launch(PDL)\n    num_pid_m = M // BLOCK_M + 1\n    num_pid_n = tl.cdiv(N, BLOCK_N)\n"
    "    num_pid_in_group = GROUP_M * num_pid_n\n    k_tiles",
    "tma's row blocks counted as M // BLOCK_M + 1, one too many where BLOCK_M divides M",
    "wrong loop bound",
    variants=("tma",),
)
EQUIVALENT = (*EQUIVALENT, ROW_BLOCKS_PLUS_ONE)
# (the equivalent plant, the registry's mutant of the same code that does change the output, where it differs)
PAIRS = {
    "linear.tiled.row-block-without-group-offset": ("linear.tiled.last-group-full", "last group of 3"),
    "linear.tma.row-block-without-group-offset": ("linear.tma.group-mapping", "last group of 3"),
    "linear.tma_split.row-block-without-group-offset": ("linear.tma_split.group-mapping", "last group of 3"),
    "linear.tma.row-blocks-plus-one": ("linear.tma.last-tile-skipped", "whole row blocks"),
}


def _walk(rows: int, cols: int, group: int, offset: bool) -> list[tuple[int, int]]:
    """(row block, column block) of each tile of a grouped walk over rows x cols blocks, as the kernels compute
    it: the row block from the tile's offset in its group (``offset``) or, as the plants do, from the tile."""
    in_group = group * cols
    placed = []
    for tile in range(rows * cols):
        first = tile // in_group * group
        size = min(rows - first, group)
        placed.append((first + (tile % in_group % size if offset else tile % size), tile % in_group // size))
    return placed


def test_the_plants_walk_every_tile_once_in_another_order():
    """Within a group's column the plant shifts the row blocks by (group index x GROUP_M x columns) modulo the
    group's size: a rotation, so every tile is still computed once, by another program; the order differs
    wherever that shift is not 0 (a last group of 3 under GROUP_M 8 over 1 or 2 column blocks)."""
    differs = set()
    for group in (1, 2, 3, 4, 8):
        for rows in range(1, 3 * group + 4):
            for cols in range(1, 6):
                shipped, planted = _walk(rows, cols, group, True), _walk(rows, cols, group, False)
                assert sorted(planted) == sorted(shipped) == [(m, n) for m in range(rows) for n in range(cols)]
                if planted != shipped:
                    differs.add((group, rows, cols))
    assert (8, 11, 1) in differs and (8, 11, 2) in differs and (8, 10, 1) not in differs


CASE = """
import hashlib, json, sys, torch
from neurobrix.ops.linear import linear
config, shape = json.loads(sys.argv[1]), json.loads(sys.argv[2])
g = torch.Generator().manual_seed(0)
x = torch.randn(shape["M"], shape["K"], generator=g).to(torch.float16)
w = torch.randn(shape["N"], shape["K"], generator=g).to(torch.float16)
def poisoned(size, dtype, device):
    return torch.full(size, float("nan"), dtype=dtype, device=device)
y = linear(x, w, config=config, empty=poisoned)
print(hashlib.sha256(y.view(torch.int16).numpy().tobytes()).hexdigest())
"""


def _output_digest(tree: Path, config: dict, shape: dict) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree), "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", CASE, json.dumps(config), json.dumps(shape)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()[-1]


def _setting(variant: str) -> dict:
    """The variant's shipped grouped setting with the smallest tiles (GROUP_M 8)."""
    shipped = [s.config for s in shipped_settings(nb_tables.load(), True, ["linear"])]
    settings = [c for c in shipped if c["variant"] == variant and int(c["GROUP_M"]) == 8]
    return min(settings, key=lambda c: (int(c["BLOCK_M"]) * int(c["BLOCK_N"]), json.dumps(c, sort_keys=True)))


@pytest.mark.parametrize("plant", sorted(PAIRS))
def test_each_equivalent_plant_computes_the_shipped_output_bit_for_bit(plant, tmp_path):
    """On a copy of the packages with the plant, at a shape where it changes what the programs do (11 row blocks:
    a last group of 3 under GROUP_M 8, over 2 column blocks, where the walk's order differs; or 10 whole row
    blocks, where tma walks a row of tiles past M), the output is the shipped kernel's, bit for bit (poisoned
    NaN where nothing is stored). The registry's mutant of the same code (tiles done twice, others never, or the
    last never) is seen by the same comparison."""
    mutant = next(m for m in EQUIVALENT if m.id == plant)
    control, where = PAIRS[plant]
    config = _setting(mutant.variants[0])
    rows = 10 * int(config["BLOCK_M"]) + (1 if where == "last group of 3" else 0)
    shape = {"M": rows, "N": int(config["BLOCK_N"]) + 8, "K": int(config["BLOCK_K"]) + 8}
    shipped = _output_digest(ROOT, config, shape)
    for patch in (mutant, {m.id: m for m in mutants.MUTANTS}[control]):
        tree = tmp_path / patch.id
        mutants.plant(patch, tree)  # a copy of both packages, the one patch applied there
        same = _output_digest(tree, config, shape) == shipped
        assert same == (patch is mutant), f"{patch.id}: output {'the same as' if same else 'unlike'} shipped"


def test_the_equivalent_plants_are_anchored():
    """Each plant kept here still patches one place of today's source (re-anchor it on the same bug if that moves)."""
    assert mutants.anchor_problems(EQUIVALENT) == []


ARRIVALS = {
    "linear.merge-last.arrival-relaxed": "sem",
    "linear.merge-last.arrival-without-barrier": "tl.debug_barrier()",
    "greedy_pick.arrival-at-cta-scope": "scope",
    "greedy_pick.arrival-without-barrier": "tl.debug_barrier()",
}
LAUNCH = """
import sys
from conformance import check
print("\\n".join(check.launch_problems(sys.argv[1])) or "none")
"""


def test_the_shipped_arrivals_read_clean():
    from conformance import check
    from neurobrix.ops import linear, pick

    assert check.arrival_problems(linear) == () and check.arrival_problems(pick) == ()


@pytest.mark.parametrize("plant", sorted(ARRIVALS))
def test_each_arrival_plant_fails_the_launch_lint(plant, tmp_path):
    """The interpreter runs one program at a time and ignores an atomic's memory order: the plant computes the same
    values there (the registry's check passed it before round kmut14). On a copy of the packages with the plant, the
    check's launch lint (run before any example, for every entry of the kernel) names the arrival."""
    mutant = {m.id: m for m in mutants.MUTANTS}[plant]
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
    assert "counts an arrival" in done.stdout and ARRIVALS[plant] in done.stdout, done.stdout
