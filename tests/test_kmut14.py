"""Kernel mutants, round kmut14: plants where the registry had the fewest mutants per line of Triton source.

The registry (541 mutants before this round) counted by the jit function each anchor lies in, over the function's
lines: linear's tma_split kernel 0.46 a line, tiled 0.61, the split-K merge kernel 0.62, skinny 0.64, decode's merge
0.65, gemv 0.68, ``_merge_if_last`` 0.69, tma 0.74, greedy_pick 0.77, rotary 0.79 to 0.80, the attention kernels
0.81 to 0.93, silu_mul 1.04, rms_norm 1.38, ``dependent_launch`` 0.10 (read by the check's launch lint, not run).
Lines no mutant touched: the grouped walk's row block within its group (tiled, tma, tma_split), the tiles' int64
offsets, tma_split's x load and its whole-tile store, the merge kernel's store, ``_merge_if_last``'s barrier and
arrival.

Found and fixed: the grouped walks (tiled, tma, tma_split) find a tile's row block as its offset within its group of
GROUP_M row blocks modulo the group's size. Taken from the tile index modulo the size instead
(``*.row-block-without-group-offset``, a simplification a kernel author could write), the row block is right
wherever the last group's size divides GROUP_M x the column blocks; the check's small shapes reached at most one
row block into a second group (a last group of 1 or 2, which divide every shipped GROUP_M, 4 and 8), so all three
plants passed ``check --class interpreter --profile ci`` (tiled 50 s, tma 25 s). On a GPU the prompt rows of
11 x 128 under GROUP_M 8 (a last group of 3) over 7 column blocks compute some tiles twice and leave others
unwritten. ``conformance/specs/linear.py``'s ``small`` now runs the grouped settings to a last group of ``odd`` row
blocks, the smallest count that does not divide GROUP_M (3 for 4 and 8; none for 1 and 2, where the two mappings
agree), its M range widened to hold it and the shape one of its explicit examples (one column block, two K steps).
With it the registry's check catches each plant; the three joined the registry.

Pinned here: every shipped or offered grouped setting's small shapes hold one where the two mappings place some
tile differently (model of the kernels' index arithmetic), and each plant, applied to a copy of the packages, gives
a wrong output at that shape on the interpreter while the shipped kernel is right there.

Equivalent, not planted (by reading): decode's merge filling the maxima past SPLITS with 0 and the partials' loads
without their split mask (every shipped SPLITS is a power of two: BLOCK_S = SPLITS, no lane is masked);
``_merge_if_last`` testing ``arrived >= SPLIT_K - 1`` (the count never passes SPLIT_K - 1); a tile's counter
indexed column-major (still one counter per tile); the merge's y offsets at N in place of y's row stride (y is
always allocated by the launcher, dense); ``dependent_launch`` letting its successor launch before it waits (each
kernel still waits for the whole of its predecessor: the order stays transitive); greedy_pick's merge filling the
indices past its parts with 0 (a row of -inf takes index 0, which argmax takes too).

Left open (GPU only, no interpreter example can show them): ``_merge_if_last``'s barrier dropped or its reads
without ``.cg`` (a race, a stale L1 line), the tiles' offsets in int32 (past 2^31 elements).
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
