"""`python -m conformance mutants`: plant realistic bugs in the kernels, one at a time, and see the check catch each.

A mutant is data: an id, the file it patches, an exact snippet of today's source (its anchor, which
must occur exactly once there), the snippet that replaces it, what the bug is, its class and the
kernel whose check must catch it. For each mutant the two source packages (``neurobrix`` and
``conformance``) are copied to a temporary folder, the one patch is applied there, and the
interpreter-class check of that kernel runs on the copy as a subprocess, with every setting any class
ships (the GPU classes' variants too, at small shapes: ``conformance.shipped``):

    python -m conformance check --class interpreter --kernel K --shipped [--variant V...] --profile ci \
        --no-shrink --exitfirst --json R

(derandomized examples, so a verdict is reproducible; no shrinking: the verdict is the same and a
shrink can take minutes; the check stops at the first entry that fails: one named entry catches
it). A mutant in one variant's code (``variants``) is checked against the settings of that variant
only: no other setting runs its code. A mutant is **caught** only when
that check fails naming an entry: an output beyond its bound, a guard band overrun, an exception,
or a worker that died under the entry (each names kernel, dtype, config, where the setting is
shipped and the example). A check that passes, dies without naming an entry, or runs past the time
limit lets the mutant **survive**. The command exits 1 unless every mutant run was caught.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from neurobrix.errors import UsageError, counted
from neurobrix.ops import SPECS

from .workers import exit_reason

CLASSES = (
    "mask off by one",
    "tail dropped",
    "store without mask",
    "low-precision accumulation",
    "extra rounding",
    "skipped rescale",
    "wrong scale",
    "wrong GQA mapping",
    "merge skips a split",
    "position off by one",
    "wrong residual",
    "wrong eps placement",
    "wrong formula",
    "wrong indexing",
    "rope halves swapped",
    "state not reset between launches",
    "merged before every part arrived",
    "state not reset between tiles",
    "wrong stride",
    "load without its mask",
    "mask on the wrong dimension",
    "wrong fill value",
    "wrong output dtype",
    "dependent launch misplaced",
    "applied twice",
    "empty part left unwritten",
    "scratch shared between tiles",
    "statistic shared between rows",
    "overflow at large magnitudes",
    "wrong loop bound",
    "reduction over the wrong axis",
    "broadcast along the wrong axis",
    "wrong rounding mode",
    "constexpr switch inverted",
    "launch grid one too large",
)


@dataclass(frozen=True)
class Mutant:
    id: str
    kernel: str  # the kernel whose check must catch it
    file: str  # the patched file, relative to the folder holding the packages
    old: str  # exact snippet of today's source (occurs exactly once in the file)
    new: str  # what replaces it
    description: str
    bug: str  # one of CLASSES
    fast: bool = False  # in the --fast subset (CI)
    variants: tuple[str, ...] = ()  # the variants whose code it patches: their settings are the ones checked


LINEAR = "neurobrix/ops/linear.py"
GEMV, SKINNY, TILED, TMA, TMA_SPLIT = ("gemv",), ("skinny",), ("tiled",), ("tma",), ("tma_split",)
SPLIT = ("gemv", "skinny")  # the split-K merge kernel serves both
NORM = "neurobrix/ops/rms_norm.py"
ROTARY = "neurobrix/ops/rotary.py"
SILU = "neurobrix/ops/silu_mul.py"
ATTN = "neurobrix/ops/attention.py"
PICK = "neurobrix/ops/pick.py"
REFERENCE = "conformance/reference.py"  # the check's own truth: a bug there fails the shipped kernels

_DECODE_V = "other=0.0)\n        accumulator = accumulator * alpha[:, None] + tl.dot(p.to(v.dtype), v,"
_DECODE_L = (
    '        qk = tl.where(mask_n[None, :], qk, float("-inf"))\n'
    "        m_new = tl.maximum(m_i, tl.max(qk, axis=1))\n"
    "        alpha = tl.exp2(m_i - m_new)\n"
    "        p = tl.exp2(qk - m_new[:, None])\n"
    "        l_i = l_i * alpha + tl.sum(p, axis=1)"
)

MUTANTS: tuple[Mutant, ...] = (
    # ---------------------------------------------------------------------------- linear: gemv + split-K merge
    Mutant(
        "linear.gemv.k-mask-off-by-one",
        "linear",
        LINEAR,
        "        mask_k = offs_k < k_end\n",
        "        mask_k = offs_k < k_end - 1\n",
        "gemv drops the last element of each K slice",
        "mask off by one",
        variants=GEMV,
    ),
    Mutant(
        "linear.gemv.split-floor",
        "linear",
        LINEAR,
        "k_per_split = tl.cdiv(tl.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K",
        "k_per_split = tl.cdiv(K, SPLIT_K) // BLOCK_K * BLOCK_K",
        "K slices rounded down to whole blocks: the tail of K is never summed",
        "tail dropped",
        fast=True,
        variants=GEMV,
    ),
    Mutant(
        "linear.gemv.fp16-accumulator",
        "linear",
        LINEAR,
        "        accumulator += w * x[None, :]",
        "        accumulator = (accumulator + w * x[None, :]).to(y_ptr.dtype.element_ty).to(tl.float32)",
        "gemv's accumulators rounded to the storage dtype each step",
        "low-precision accumulation",
        variants=GEMV,
    ),
    Mutant(
        "linear.gemv.store-without-mask",
        "linear",
        LINEAR,
        "        tl.store(y_ptr + pid_m * stride_ym + offs_n, y.to(y_ptr.dtype.element_ty), mask=mask_n)",
        "        tl.store(y_ptr + pid_m * stride_ym + offs_n, y.to(y_ptr.dtype.element_ty))",
        "gemv stores a whole BLOCK_N past the last output column",
        "store without mask",
        variants=GEMV,
    ),
    Mutant(
        "linear.gemv.row-zero",
        "linear",
        LINEAR,
        "x = tl.load(x_ptr + pid_m * stride_xm + offs_k,",
        "x = tl.load(x_ptr + offs_k,",
        "every row of the batch reads the first row of x",
        "wrong indexing",
        variants=GEMV,
    ),
    Mutant(
        "linear.merge.skips-last-split",
        "linear",
        LINEAR,
        "for k in range(SPLIT_K):  # in split order",
        "for k in range(SPLIT_K - 1):  # in split order",
        "the split-K merge (gemv's and skinny's) leaves out the last split's partial sums",
        "merge skips a split",
        fast=True,
        variants=SPLIT,
    ),
    Mutant(
        "linear.merge.fp16-partials",
        "linear",
        LINEAR,
        "tl.store(part_ptr + (pid_k * M + pid_m) * N + offs_n, y, mask=mask_n)",
        "tl.store(part_ptr + (pid_k * M + pid_m) * N + offs_n, y.to(y_ptr.dtype.element_ty), mask=mask_n)",
        "gemv's split-K partial sums rounded to the storage dtype before the merge",
        "extra rounding",
        variants=GEMV,
    ),
    Mutant(
        "linear.merge.bias-dropped",
        "linear",
        LINEAR,
        "    if HAS_BIAS:\n        y += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)\n"
        "    tl.store(y_ptr",
        "    tl.store(y_ptr",
        "the split-K merge forgets the bias (the split programs leave it to the merge)",
        "wrong formula",
        variants=SPLIT,
    ),
    Mutant(
        "linear.merge.row-of-first-split",
        "linear",
        LINEAR,
        "y += tl.load(part_ptr + (k * M + pid_m) * N + offs_n,",
        "y += tl.load(part_ptr + (k + pid_m) * N + offs_n,",
        "the merge indexes the partials [SPLIT_K, M, N] as if M were 1: other rows' splits summed",
        "wrong indexing",
        variants=SPLIT,
    ),
    Mutant(
        "linear.merge-last.counter-not-reset",
        "linear",
        LINEAR,
        '        tl.atomic_xchg(counter_ptr, 0, sem="relaxed", scope="gpu")\n',
        "",
        'MERGE "last" leaves each tile\'s arrival counter at SPLIT_K: the next launch never merges',
        "state not reset between launches",
        fast=True,
        variants=SPLIT,
    ),
    Mutant(
        "linear.merge-last.skips-last-split",
        "linear",
        LINEAR,
        "for k in range(SPLIT_K):  # the tile's partials, in split order",
        "for k in range(SPLIT_K - 1):  # the tile's partials, in split order",
        'MERGE "last" leaves out the last split\'s partial sums',
        "merge skips a split",
        variants=SPLIT,
    ),
    Mutant(
        "linear.merge-last.early-arrival-merges",
        "linear",
        LINEAR,
        "    if arrived == SPLIT_K - 1:\n",
        "    if arrived == SPLIT_K - 2:\n",
        'MERGE "last": the next-to-last program of a tile to arrive merges, before the last split stored its '
        "partial sums (the interpreter runs programs one after another, so a merge by the first arrival, which "
        "then resets the counter, is redone by every later one and only a GPU can show it: tests/test_gpu_only.py)",
        "merged before every part arrived",
        variants=SPLIT,
    ),
    # --------------------------------------------------------------------------------------- linear: skinny
    Mutant(
        "linear.skinny.k-mask-off-by-one",
        "linear",
        LINEAR,
        "        in_k = offs_k < k_last\n",
        "        in_k = offs_k < k_last - 1\n",
        "skinny drops the last element of each K slice",
        "mask off by one",
        variants=SKINNY,
    ),
    Mutant(
        "linear.skinny.slice-floor",
        "linear",
        LINEAR,
        "k_slice = tl.cdiv(tl.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K",
        "k_slice = tl.cdiv(K, SPLIT_K) // BLOCK_K * BLOCK_K",
        "K slices rounded down to whole blocks: the tail of K is never summed",
        "tail dropped",
        variants=SKINNY,
    ),
    Mutant(
        "linear.skinny.slice-start",
        "linear",
        LINEAR,
        "    k_first = pid_k * k_slice\n",
        "    k_first = pid_k * BLOCK_K\n",
        "each slice starts BLOCK_K after the previous one, not a slice after: right only while a slice is one step",
        "wrong indexing",
        variants=SKINNY,
    ),
    Mutant(
        "linear.skinny.fp16-accumulator",
        "linear",
        LINEAR,
        "        acc = tl.dot(a, b, acc, input_precision=PRECISION)",
        "        acc = tl.dot(a, b, acc, input_precision=PRECISION).to(a.dtype).to(tl.float32)",
        "skinny's accumulator rounded to the input dtype after each K step",
        "low-precision accumulation",
        fast=True,
        variants=SKINNY,
    ),
    Mutant(
        "linear.skinny.partials-rounded",
        "linear",
        LINEAR,
        "tl.store(part_ptr + (pid_k * M + offs_m[:, None]) * N + offs_n[None, :], acc, mask=in_y)",
        "tl.store(part_ptr + (pid_k * M + offs_m[:, None]) * N + offs_n[None, :], "
        "acc.to(y_ptr.dtype.element_ty), mask=in_y)",
        "skinny's split-K partial sums rounded to the storage dtype before the merge",
        "extra rounding",
        variants=SKINNY,
    ),
    Mutant(
        "linear.skinny.store-without-mask",
        "linear",
        LINEAR,
        "tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], acc.to(y_ptr.dtype.element_ty), mask=in_y)",
        "tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], acc.to(y_ptr.dtype.element_ty))",
        "skinny stores whole BLOCK_M x BLOCK_N tiles past the output's last row and column",
        "store without mask",
        variants=SKINNY,
    ),
    Mutant(
        "linear.skinny.partials-without-mask",
        "linear",
        LINEAR,
        "tl.store(part_ptr + (pid_k * M + offs_m[:, None]) * N + offs_n[None, :], acc, mask=in_y)",
        "tl.store(part_ptr + (pid_k * M + offs_m[:, None]) * N + offs_n[None, :], acc)",
        "skinny's split partials stored for whole tiles: rows past M spill into the next split's partials",
        "store without mask",
        variants=SKINNY,
    ),
    Mutant(
        "linear.skinny.row-mask-off-by-one",
        "linear",
        LINEAR,
        "    in_m = offs_m < M\n",
        "    in_m = offs_m < M - 1\n",
        "skinny neither loads nor stores the last row of x",
        "mask off by one",
        variants=SKINNY,
    ),
    Mutant(
        "linear.skinny.bias-dropped",
        "linear",
        LINEAR,
        "            acc += tl.load(b_ptr + offs_n, mask=in_n, other=0.0).to(tl.float32)[None, :]\n",
        "            pass\n",
        "skinny without split-K forgets the bias",
        "wrong formula",
        variants=SKINNY,
    ),
    # ---------------------------------------------------------------------------------------- linear: tiled
    Mutant(
        "linear.tiled.k-mask-off-by-one",
        "linear",
        LINEAR,
        "mask_k = offs_k < K - k0\n",
        "mask_k = offs_k < K - k0 - 1\n",
        "tiled drops the last K element of every K step",
        "mask off by one",
        variants=TILED,
    ),
    Mutant(
        "linear.tiled.k-tail-dropped",
        "linear",
        LINEAR,
        "for k0 in range(0, K, BLOCK_K):",
        "for k0 in range(0, K - BLOCK_K + 1, BLOCK_K):",
        "tiled skips a partial last K block",
        "tail dropped",
        fast=True,
        variants=TILED,
    ),
    Mutant(
        "linear.tiled.fp16-accumulator",
        "linear",
        LINEAR,
        "accumulator = tl.dot(a, b, accumulator, input_precision=PRECISION)",
        "accumulator = tl.dot(a, b, accumulator, input_precision=PRECISION).to(a.dtype).to(tl.float32)",
        "tiled's accumulator rounded to the input dtype after each K block",
        "low-precision accumulation",
        variants=TILED,
    ),
    Mutant(
        "linear.tiled.store-without-mask",
        "linear",
        LINEAR,
        "tl.store(y_ptrs, accumulator.to(y_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])",
        "tl.store(y_ptrs, accumulator.to(y_ptr.dtype.element_ty))",
        "tiled stores whole tiles past the output's last row and column",
        "store without mask",
        variants=TILED,
    ),
    Mutant(
        "linear.tiled.row-mask-off-by-one",
        "linear",
        LINEAR,
        "mask_m = offs_m < M\n",
        "mask_m = offs_m < M - 1\n",
        "tiled neither loads nor stores the last row of x",
        "mask off by one",
        variants=TILED,
    ),
    Mutant(
        "linear.tiled.group-mapping",
        "linear",
        LINEAR,
        "    pid_n = (pid % num_pid_in_group) // group_size_m",
        "    pid_n = (pid % num_pid_in_group) // GROUP_M",
        "tile mapping divides by GROUP_M where the last group is smaller: tiles done twice, others never",
        "wrong indexing",
        variants=TILED,
    ),
    Mutant(
        "linear.tiled.bias-of-first-tile",
        "linear",
        LINEAR,
        "accumulator += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)",
        "accumulator += tl.load(b_ptr + offs_n - pid_n * BLOCK_N, mask=mask_n, other=0.0)",
        "every column tile adds the first tile's bias",
        "wrong indexing",
        variants=TILED,
    ),
    Mutant(
        "linear.tiled.second-group",
        "linear",
        LINEAR,
        "    group_id = pid // num_pid_in_group\n    first_pid_m = group_id * GROUP_M\n",
        "    group_id = pid // num_pid_in_group\n    first_pid_m = group_id\n",
        "the second group of GROUP_M row blocks starts at row block 1: its rows done twice, later ones never",
        "wrong indexing",
        variants=TILED,
    ),
    # ------------------------------------------------------------------------------------------ linear: tma
    Mutant(
        "linear.tma.accumulator-not-reset-per-tile",
        "linear",
        LINEAR,
        "    k_tiles = tl.cdiv(K, BLOCK_K)\n"
        "    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, tl.num_programs(0), flatten=True):\n"
        "        group_id = tile // num_pid_in_group\n"
        "        first_pid_m = group_id * GROUP_M\n"
        "        group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)\n"
        "        pid_m = first_pid_m + ((tile % num_pid_in_group) % group_size_m)\n"
        "        pid_n = (tile % num_pid_in_group) // group_size_m\n"
        "        accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n",
        "    k_tiles = tl.cdiv(K, BLOCK_K)\n"
        "    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n"
        "    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, tl.num_programs(0), flatten=True):\n"
        "        group_id = tile // num_pid_in_group\n"
        "        first_pid_m = group_id * GROUP_M\n"
        "        group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)\n"
        "        pid_m = first_pid_m + ((tile % num_pid_in_group) % group_size_m)\n"
        "        pid_n = (tile % num_pid_in_group) // group_size_m\n",
        "the persistent program zeroes its accumulator once, not per tile: its second tile adds the first's",
        "state not reset between tiles",
        variants=TMA,
    ),
    Mutant(
        "linear.tma.k-tiles-floor",
        "linear",
        LINEAR,
        "k_tiles = tl.cdiv(K, BLOCK_K)",
        "k_tiles = K // BLOCK_K",
        "the persistent kernel skips a partial last K tile",
        "tail dropped",
        fast=True,
        variants=TMA,
    ),
    Mutant(
        "linear.tma.last-tile-skipped",
        "linear",
        LINEAR,
        "num_pid_m * num_pid_n, tl.num_programs(0), flatten=True)",
        "num_pid_m * num_pid_n - 1, tl.num_programs(0), flatten=True)",
        "the persistent grid's walk stops one tile short",
        "tail dropped",
        variants=TMA,
    ),
    Mutant(
        "linear.tma.group-mapping",
        "linear",
        LINEAR,
        "        pid_n = (tile % num_pid_in_group) // group_size_m",
        "        pid_n = (tile % num_pid_in_group) // GROUP_M",
        "persistent tile mapping divides by GROUP_M where the last group is smaller",
        "wrong indexing",
        variants=TMA,
    ),
    Mutant(
        "linear.tma.fp16-accumulator",
        "linear",
        LINEAR,
        "accumulator = tl.dot(a, b.T, accumulator, input_precision=PRECISION)",
        "accumulator = tl.dot(a, b.T, accumulator, input_precision=PRECISION).to(a.dtype).to(tl.float32)",
        "the persistent kernel's accumulator rounded to the input dtype after each K tile",
        "low-precision accumulation",
        variants=TMA,
    ),
    Mutant(
        "linear.tma.bias-of-first-tile",
        "linear",
        LINEAR,
        "            offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n",
        "            offs_n = tl.arange(0, BLOCK_N)\n",
        "every column tile of the persistent kernel adds the first tile's bias",
        "wrong indexing",
        variants=TMA,
    ),
    # ------------------------------------------------------------------------------------ linear: tma_split
    Mutant(
        "linear.tma_split.accumulator-not-reset-per-unit",
        "linear",
        LINEAR,
        "    units = num_pid_m * num_pid_n * SPLIT_K\n"
        "    for unit in tl.range(tl.program_id(0), units, tl.num_programs(0), flatten=SPLIT_K == 1,\n"
        "                         warp_specialize=WARP_SPECIALIZE):\n"
        "        tile = unit // SPLIT_K\n"
        "        k_first = (unit % SPLIT_K) * slice_steps * BLOCK_K\n"
        "        group_id = tile // num_pid_in_group\n"
        "        first_pid_m = group_id * GROUP_M\n"
        "        group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)\n"
        "        pid_m = first_pid_m + tile % num_pid_in_group % group_size_m\n"
        "        pid_n = tile % num_pid_in_group // group_size_m\n"
        "        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n"
        "        for step in range(slice_steps):\n",
        "    units = num_pid_m * num_pid_n * SPLIT_K\n"
        "    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n"
        "    for unit in tl.range(tl.program_id(0), units, tl.num_programs(0), flatten=SPLIT_K == 1,\n"
        "                         warp_specialize=WARP_SPECIALIZE):\n"
        "        tile = unit // SPLIT_K\n"
        "        k_first = (unit % SPLIT_K) * slice_steps * BLOCK_K\n"
        "        group_id = tile // num_pid_in_group\n"
        "        first_pid_m = group_id * GROUP_M\n"
        "        group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)\n"
        "        pid_m = first_pid_m + tile % num_pid_in_group % group_size_m\n"
        "        pid_n = tile % num_pid_in_group // group_size_m\n"
        "        for step in range(slice_steps):\n",
        "the persistent program's accumulator is not zeroed per unit: its second tile adds the first's",
        "state not reset between tiles",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.last-unit-skipped",
        "linear",
        LINEAR,
        "    units = num_pid_m * num_pid_n * SPLIT_K\n",
        "    units = num_pid_m * num_pid_n * SPLIT_K - 1\n",
        "the walk over units stops one short: the last tile (or its last K slice) is never computed",
        "tail dropped",
        fast=True,
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.slice-steps-floor",
        "linear",
        LINEAR,
        "slice_steps = tl.cdiv(tl.cdiv(K, BLOCK_K), SPLIT_K)",
        "slice_steps = tl.cdiv(K, BLOCK_K) // SPLIT_K",
        "each K slice is the floor of its share of K steps: the last steps of K belong to no slice",
        "tail dropped",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.slice-start-in-steps",
        "linear",
        LINEAR,
        "k_first = (unit % SPLIT_K) * slice_steps * BLOCK_K",
        "k_first = (unit % SPLIT_K) * slice_steps",
        "a slice starts at its index in BLOCK_K steps read as elements: slices overlap, the end of K is never read",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.group-mapping",
        "linear",
        LINEAR,
        "        pid_n = tile % num_pid_in_group // group_size_m",
        "        pid_n = tile % num_pid_in_group // GROUP_M",
        "the tile mapping divides by GROUP_M where the last group is smaller",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.low-precision-accumulator",
        "linear",
        LINEAR,
        "acc = tl.dot(a, b.T, acc, input_precision=PRECISION)",
        "acc = tl.dot(a, b.T, acc, input_precision=PRECISION).to(a.dtype).to(tl.float32)",
        "the accumulator rounded to the input dtype after each K step",
        "low-precision accumulation",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.halves-swapped",
        "linear",
        LINEAR,
        "                y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], left.to(y_desc.dtype))",
        "                y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], right.to(y_desc.dtype))",
        "the subtiled epilogue stores the right half of the tile in both halves",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.partial-of-slice-zero",
        "linear",
        LINEAR,
        "tl.store(tile_partials + (unit % SPLIT_K) * M * N, acc, mask=in_y)",
        "tl.store(tile_partials, acc, mask=in_y)",
        "every K slice stores its partial sums in the place of slice 0: the merge adds unwritten partials",
        "merge skips a split",
        variants=TMA_SPLIT,
    ),
    # -------------------------------------------------------------------------------------------- rms_norm
    Mutant(
        "rms_norm.eps-outside-sqrt",
        "rms_norm",
        NORM,
        "rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)",
        "rstd = 1.0 / (tl.sqrt(tl.sum(h * h, axis=1) / N) + eps)",
        "eps added after the square root",
        "wrong eps placement",
    ),
    Mutant(
        "rms_norm.mean-over-block",
        "rms_norm",
        NORM,
        "tl.sum(h * h, axis=1) / N + eps)",
        "tl.sum(h * h, axis=1) / BLOCK_N + eps)",
        "the mean of squares divides by the padded block width",
        "wrong formula",
    ),
    Mutant(
        "rms_norm.rstd-rounded",
        "rms_norm",
        NORM,
        "rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)",
        "rstd = (1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)).to(y_ptr.dtype.element_ty).to(tl.float32)",
        "rstd rounded to the storage dtype before it scales the row",
        "extra rounding",
        fast=True,
    ),
    Mutant(
        "rms_norm.unrounded-stream",
        "rms_norm",
        NORM,
        "        h = h_rounded.to(tl.float32)",
        "        h = h + r",
        "y normalised from the fp32 sum, not from the rounded residual stream it returns",
        "wrong residual",
    ),
    Mutant(
        "rms_norm.residual-from-x",
        "rms_norm",
        NORM,
        "r = tl.load(r_ptr + offs_m[:, None] * stride_r",
        "r = tl.load(x_ptr + offs_m[:, None] * stride_r",
        "the residual is read from x: h = x + x",
        "wrong residual",
    ),
    Mutant(
        "rms_norm.store-without-mask",
        "rms_norm",
        NORM,
        "tl.store(y_ptr + offs_m[:, None] * stride_y + offs_n[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)",
        "tl.store(y_ptr + offs_m[:, None] * stride_y + offs_n[None, :], y.to(y_ptr.dtype.element_ty))",
        "y stored for every row and column of the block, past the output's end",
        "store without mask",
        fast=True,
    ),
    Mutant(
        "rms_norm.row-mask-off-by-one",
        "rms_norm",
        NORM,
        "mask = (offs_m[:, None] < M) & mask_n[None, :]",
        "mask = (offs_m[:, None] < M - 1) & mask_n[None, :]",
        "the last row is neither loaded nor stored",
        "mask off by one",
    ),
    Mutant(
        "rms_norm.weight-shifted",
        "rms_norm",
        NORM,
        "w = tl.load(w_ptr + offs_n, mask=mask_n",
        "w = tl.load(w_ptr + offs_n + 1, mask=mask_n",
        "column n scaled by weight n + 1",
        "wrong indexing",
    ),
    # ---------------------------------------------------------------------------------------------- rotary
    Mutant(
        "rotary.rotation-sign",
        "rotary",
        ROTARY,
        "tl.store(dst, (x1 * c[None, :] - x2 * sn[None, :])",
        "tl.store(dst, (x1 * c[None, :] + x2 * sn[None, :])",
        "the first half rotated the wrong way",
        "wrong formula",
    ),
    Mutant(
        "rotary.halves-swapped",
        "rotary",
        ROTARY,
        "    x1 = tl.load(src, mask=mask, other=0.0).to(tl.float32)\n"
        "    x2 = tl.load(src + HALF, mask=mask, other=0.0).to(tl.float32)",
        "    x1 = tl.load(src + HALF, mask=mask, other=0.0).to(tl.float32)\n"
        "    x2 = tl.load(src, mask=mask, other=0.0).to(tl.float32)",
        "the two halves of each head read in the wrong order",
        "rope halves swapped",
        fast=True,
    ),
    Mutant(
        "rotary.position-off-by-one",
        "rotary",
        ROTARY,
        "pos = tl.load(pos_ptr + b * stride_pb + s * stride_ps).to(tl.int64)",
        "pos = tl.load(pos_ptr + b * stride_pb + s * stride_ps).to(tl.int64) + 1",
        "every token rotated (and cached) at its position + 1",
        "position off by one",
    ),
    Mutant(
        "rotary.cache-row-is-token",
        "rotary",
        ROTARY,
        "row = pos if CACHE else s",
        "row = s",
        "k appended to the cache at the token's index in the call, not at its position",
        "position off by one",
    ),
    Mutant(
        "rotary.v-half-copied",
        "rotary",
        ROTARY,
        "(offs_e[None, :] < 2 * HALF)",
        "(offs_e[None, :] < HALF)",
        "only the first half of v is appended to the cache",
        "tail dropped",
    ),
    Mutant(
        "rotary.head-mask-off-by-one",
        "rotary",
        ROTARY,
        "mask = (offs_h[:, None] < H) & (offs_d[None, :] < HALF)",
        "mask = (offs_h[:, None] <= H) & (offs_d[None, :] < HALF)",
        "one head past the last is rotated and stored",
        "mask off by one",
    ),
    Mutant(
        "rotary.sin-at-token-index",
        "rotary",
        ROTARY,
        "sn = tl.load(sin_ptr + pos * stride_cos",
        "sn = tl.load(sin_ptr + s * stride_cos",
        "sin read at the token's index in the call instead of its position",
        "position off by one",
    ),
    Mutant(
        "rotary.q-blocks-floor",
        "rotary",
        ROTARY,
        "q_blocks = tl.cdiv(HQ, BLOCK_H)",
        "q_blocks = HQ // BLOCK_H",
        "a partial block of q heads is taken for k heads",
        "tail dropped",
    ),
    Mutant(
        "rotary.llama3-thresholds-swapped",
        "rotary",
        ROTARY,
        "scaled = torch.where(wavelen > old_context / low, inv_freq / factor, inv_freq)",
        "scaled = torch.where(wavelen > old_context / high, inv_freq / factor, inv_freq)",
        "rope_cache's Llama-3 scaling slows the wrong wavelengths",
        "wrong formula",
        fast=True,
    ),
    # -------------------------------------------------------------------------------------------- silu_mul
    Mutant(
        "silu_mul.exp-sign",
        "silu_mul",
        SILU,
        "out = g / (1.0 + tl.exp(-g)) * u",
        "out = g / (1.0 + tl.exp(g)) * u",
        "exp(g) where silu needs exp(-g)",
        "wrong formula",
        fast=True,
    ),
    Mutant(
        "silu_mul.unstable-for-large-gates",
        "silu_mul",
        SILU,
        "    out = g / (1.0 + tl.exp(-g)) * u",
        "    e = tl.exp(g)\n    out = g * e / (1.0 + e) * u",
        "silu as g e^g / (1 + e^g): the same function, but NaN once exp(g) overflows fp32 (g > 88.7)",
        "wrong formula",
    ),
    Mutant(
        "silu_mul.gate-up-swapped",
        "silu_mul",
        SILU,
        "out = g / (1.0 + tl.exp(-g)) * u",
        "out = u / (1.0 + tl.exp(-u)) * g",
        "silu applied to the up half instead of the gate",
        "wrong formula",
    ),
    Mutant(
        "silu_mul.column-mask-off-by-one",
        "silu_mul",
        SILU,
        "(offs_i[None, :] < I)",
        "(offs_i[None, :] < I - 1)",
        "the last column is neither loaded nor stored",
        "mask off by one",
    ),
    Mutant(
        "silu_mul.store-without-mask",
        "silu_mul",
        SILU,
        "out.to(out_ptr.dtype.element_ty), mask=mask)",
        "out.to(out_ptr.dtype.element_ty))",
        "every element of the block stored, past the output's end",
        "store without mask",
        fast=True,
    ),
    Mutant(
        "silu_mul.up-off-by-one",
        "silu_mul",
        SILU,
        "u = tl.load(g_ptrs + I, mask=mask",
        "u = tl.load(g_ptrs + I - 1, mask=mask",
        "the up half read one column early",
        "wrong indexing",
    ),
    # ----------------------------------------------------------------------------------- attention_prefill
    # (the flash kernel attention_chunk runs too, with C = S: these are checked on prefill's settings)
    Mutant(
        "attention_prefill.causal-off-by-one",
        "attention_prefill",
        ATTN,
        "tl.where((rows[:, None] >= keys[None, :]) & inside[None, :]",
        "tl.where((rows[:, None] > keys[None, :]) & inside[None, :]",
        "each query misses its own key",
        "mask off by one",
        fast=True,
    ),
    Mutant(
        "attention_prefill.accumulator-not-rescaled",
        "attention_prefill",
        ATTN,
        "acc = acc * rescale[:, None] + tl.dot(",
        "acc = acc + tl.dot(",
        "the accumulator is not rescaled when the running max grows",
        "skipped rescale",
    ),
    Mutant(
        "attention_prefill.sum-not-rescaled",
        "attention_prefill",
        ATTN,
        "l_next = l_i * rescale + tl.sum(weights, axis=1)",
        "l_next = l_i + tl.sum(weights, axis=1)",
        "the softmax denominator is not rescaled when the running max grows",
        "skipped rescale",
    ),
    Mutant(
        "attention_prefill.scale-without-log2e",
        "attention_prefill",
        ATTN,
        "q, k, v, o, *lengths, HQ, G, float(scale) * LOG2E,",
        "q, k, v, o, *lengths, HQ, G, float(scale),",
        "exp2 of the natural-log scale: softmax at the wrong temperature",
        "wrong scale",
    ),
    Mutant(
        "attention_prefill.scale-argument-ignored",
        "attention_prefill",
        ATTN,
        "q, k, v, o, *lengths, HQ, G, float(scale) * LOG2E,",
        "q, k, v, o, *lengths, HQ, G, LOG2E / D**0.5,",
        "the usual 1/sqrt(D) in place of the scale it is given: right only for the engine's own calls",
        "wrong scale",
    ),
    Mutant(
        "attention_prefill.gqa-interleaved",
        "attention_prefill",
        ATTN,
        "    kv = h // G  # the kv head",
        "    kv = h % (HQ // G)  # the kv head",
        "query head h reads kv head h mod Hkv instead of h // G",
        "wrong GQA mapping",
    ),
    Mutant(
        "attention_prefill.p-rounded-fp16",
        "attention_prefill",
        ATTN,
        "tl.dot(weights.to(vb.dtype), vb,",
        "tl.dot(weights.to(tl.float16).to(vb.dtype), vb,",
        "P rounded to fp16 whatever the dtype (fp32 kernels round P too)",
        "extra rounding",
    ),
    Mutant(
        "attention_prefill.accumulator-rounded",
        "attention_prefill",
        ATTN,
        "acc = acc * rescale[:, None] + tl.dot(weights.to(vb.dtype), vb, input_precision=PRECISION)",
        "acc = (acc * rescale[:, None] + tl.dot(weights.to(vb.dtype), vb, input_precision=PRECISION))"
        ".to(vb.dtype).to(tl.float32)",
        "the accumulator rounded to the storage dtype once per key block",
        "extra rounding",
        fast=True,
    ),
    Mutant(
        "attention_prefill.row-mask-off-by-one",
        "attention_prefill",
        ATTN,
        "    mask_c = offs_c < C\n",
        "    mask_c = offs_c < C - 1\n",
        "the last query row is neither loaded nor stored",
        "mask off by one",
    ),
    Mutant(
        "attention_prefill.diagonal-block-skipped",
        "attention_prefill",
        ATTN,
        "end = tl.minimum(past + (block + 1) * BLOCK_M, S)",
        "end = tl.minimum(past + block * BLOCK_M, S)",
        "the key loop stops before the query block's own (diagonal) block",
        "tail dropped",
    ),
    Mutant(
        "attention_prefill.store-without-mask",
        "attention_prefill",
        ATTN,
        "result.to(o_ptr.dtype.element_ty), mask=mask_c[:, None] & mask_d[None, :])",
        "result.to(o_ptr.dtype.element_ty))",
        "the whole block of queries stored, past the last row and the head dim",
        "store without mask",
    ),
    Mutant(
        "attention_prefill.key-mask-off-by-one",
        "attention_prefill",
        ATTN,
        "        inside = keys < S\n",
        "        inside = keys <= S\n",
        "the key and value one past the sequence are loaded",
        "mask off by one",
    ),
    Mutant(
        "attention_prefill.block-order-off-by-one",
        "attention_prefill",
        ATTN,
        "block = tl.num_programs(1) - 1 - tl.program_id(1)",
        "block = tl.num_programs(1) - tl.program_id(1)",
        "query blocks walked last to first, one past the end: the first block of queries is never computed",
        "wrong indexing",
    ),
    # ------------------------------------------------------------------------------------ attention_chunk
    Mutant(
        "attention_chunk.diagonal-off-by-one",
        "attention_chunk",
        ATTN,
        "tl.where((rows[:, None] >= keys[None, :]) & inside[None, :]",
        "tl.where((rows[:, None] > keys[None, :]) & inside[None, :]",
        "each query of a chunk misses its own key",
        "mask off by one",
        fast=True,
    ),
    Mutant(
        "attention_chunk.whole-block-past-diagonal",
        "attention_chunk",
        ATTN,
        "whole = (past + block * BLOCK_M + 1) // BLOCK_N * BLOCK_N",
        "whole = tl.cdiv(past + block * BLOCK_M + 1, BLOCK_N) * BLOCK_N",
        "the block holding the first query's diagonal is read unmasked: later keys leak in",
        "mask off by one",
    ),
    Mutant(
        "attention_chunk.past-off-by-one",
        "attention_chunk",
        ATTN,
        "    past = S - C  # positions",
        "    past = S - C - 1  # positions",
        "the chunk's queries placed one position early: each misses its own key",
        "position off by one",
    ),
    Mutant(
        "attention_chunk.last-block-dropped",
        "attention_chunk",
        ATTN,
        "end = tl.minimum(past + (block + 1) * BLOCK_M, S)",
        "end = tl.minimum(past + block * BLOCK_M + 1, S)",
        "the key loop stops at the first query's position: later queries miss their newest keys",
        "tail dropped",
    ),
    Mutant(
        "attention_chunk.not-rescaled",
        "attention_chunk",
        ATTN,
        "acc = acc * rescale[:, None] + tl.dot(",
        "acc = acc + tl.dot(",
        "the accumulator is not rescaled when the running max grows",
        "skipped rescale",
    ),
    Mutant(
        "attention_chunk.gqa-interleaved",
        "attention_chunk",
        ATTN,
        "    kv = h // G  # the kv head",
        "    kv = h % (HQ // G)  # the kv head",
        "query head h reads kv head h mod Hkv instead of h // G",
        "wrong GQA mapping",
    ),
    Mutant(
        "attention_chunk.store-without-mask",
        "attention_chunk",
        ATTN,
        "result.to(o_ptr.dtype.element_ty), mask=mask_c[:, None] & mask_d[None, :])",
        "result.to(o_ptr.dtype.element_ty))",
        "the whole block of queries stored, past the chunk's last row and the head dim",
        "store without mask",
    ),
    # ------------------------------------------------------------------------------------ attention_decode
    Mutant(
        "attention_decode.one-past-length",
        "attention_decode",
        ATTN,
        "end = tl.minimum(start + chunk, length)",
        "end = tl.minimum(start + chunk, length + 1)",
        "the position one past the cache length is attended",
        "position off by one",
    ),
    Mutant(
        "attention_decode.merge-skips-last-split",
        "attention_decode",
        ATTN,
        "mask_s = offs_s < SPLITS",
        "mask_s = offs_s < SPLITS - 1",
        "the merge leaves out the last split",
        "merge skips a split",
        fast=True,
    ),
    Mutant(
        "attention_decode.one-split-not-normalised",
        "attention_decode",
        ATTN,
        "        out = accumulator / l_i[:, None]",
        "        out = accumulator",
        "with one split the kernel stores its accumulator without dividing by the softmax sum",
        "skipped rescale",
    ),
    Mutant(
        "attention_decode.one-split-row-without-batch",
        "attention_decode",
        ATTN,
        "tl.store(part_ptr + row[:, None] * D + offs_d[None, :], out.to(",
        "tl.store(part_ptr + (row[:, None] - b * HKV * G) * D + offs_d[None, :], out.to(",
        "with one split every sequence's output is stored over the first sequence's",
        "wrong indexing",
    ),
    Mutant(
        "attention_decode.merge-not-rescaled",
        "attention_decode",
        ATTN,
        "out = tl.sum(part * weight[:, None], axis=0) / tl.sum(l * weight, axis=0)",
        "out = tl.sum(part, axis=0) / tl.sum(l, axis=0)",
        "split partials merged without rescaling to the common max",
        "skipped rescale",
    ),
    Mutant(
        "attention_decode.partials-rounded",
        "attention_decode",
        ATTN,
        "tl.store(part_ptr + row[:, None] * D + offs_d[None, :], accumulator,",
        "tl.store(part_ptr + row[:, None] * D + offs_d[None, :], accumulator.to(q_ptr.dtype.element_ty),",
        "split partials rounded to the storage dtype before the merge",
        "extra rounding",
        fast=True,
    ),
    Mutant(
        "attention_decode.gqa-interleaved",
        "attention_decode",
        ATTN,
        "heads = kv_h * G + offs_g",
        "heads = kv_h + offs_g * HKV",
        "kv head j serves query heads j, j + Hkv, ... instead of its group",
        "wrong GQA mapping",
    ),
    Mutant(
        "attention_decode.sum-not-rescaled",
        "attention_decode",
        ATTN,
        _DECODE_L,
        _DECODE_L.replace("l_i = l_i * alpha + ", "l_i = l_i + "),
        "a split's softmax denominator is not rescaled when its running max grows",
        "skipped rescale",
    ),
    Mutant(
        "attention_decode.accumulator-not-rescaled",
        "attention_decode",
        ATTN,
        _DECODE_V,
        _DECODE_V.replace("accumulator * alpha[:, None] + ", "accumulator + "),
        "a split's accumulator is not rescaled when its running max grows",
        "skipped rescale",
    ),
    Mutant(
        "attention_decode.scale-without-log2e",
        "attention_decode",
        ATTN,
        "HKV, G, chunk, float(scale) * LOG2E,",
        "HKV, G, chunk, float(scale),",
        "exp2 of the natural-log scale: softmax at the wrong temperature",
        "wrong scale",
    ),
    Mutant(
        "attention_decode.scale-argument-ignored",
        "attention_decode",
        ATTN,
        "HKV, G, chunk, float(scale) * LOG2E,",
        "HKV, G, chunk, LOG2E / D**0.5,",
        "the usual 1/sqrt(D) in place of the scale it is given: right only for the engine's own calls",
        "wrong scale",
    ),
    Mutant(
        "attention_decode.chunk-start-off-by-one",
        "attention_decode",
        ATTN,
        "    start = split_id * chunk\n",
        "    start = split_id * chunk + 1\n",
        "each split skips the first position of its chunk",
        "position off by one",
    ),
    Mutant(
        "attention_decode.group-mask-off-by-one",
        "attention_decode",
        ATTN,
        "    mask_g = offs_g < G\n",
        "    mask_g = offs_g <= G\n",
        "one query head past the group is computed and stored",
        "mask off by one",
    ),
    # ------------------------------------------------------------------ strides, layouts, masks, fill values
    # (a tensor's stride taken for another's, contiguity assumed: caught since the records also draw inputs of
    # other layouts than the engine's, `harness.padded`; the rest caught by the suite as it was)
    Mutant(
        "linear.gemv.x-row-stride-of-w",
        "linear",
        LINEAR,
        "x = tl.load(x_ptr + pid_m * stride_xm + offs_k,",
        "x = tl.load(x_ptr + pid_m * stride_wn + offs_k,",
        "gemv reads x's rows at the weight's row stride: right only while x is contiguous",
        "wrong stride",
        variants=GEMV,
    ),
    Mutant(
        "linear.skinny.x-row-stride-of-w",
        "linear",
        LINEAR,
        "a = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :], mask=in_m[:, None] & in_k[None, :],",
        "a = tl.load(x_ptr + offs_m[:, None] * stride_wn + offs_k[None, :], mask=in_m[:, None] & in_k[None, :],",
        "skinny reads x's rows at the weight's row stride",
        "wrong stride",
        variants=SKINNY,
    ),
    Mutant(
        "linear.tiled.x-row-stride-of-w",
        "linear",
        LINEAR,
        "x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :]",
        "x_ptrs = x_ptr + offs_m[:, None] * stride_wn + offs_k[None, :]",
        "tiled reads x's rows at the weight's row stride",
        "wrong stride",
        variants=TILED,
    ),
    Mutant(
        "linear.tma.x-desc-stride-of-w",
        "linear",
        LINEAR,
        "    return (TensorDescriptor.from_tensor(x, [block_m, block_k]),",
        "    return (TensorDescriptor(x, list(x.shape), [weight.stride(0), 1], [block_m, block_k]),",
        "the tma variants' x descriptor (made on the host) takes the weight's row stride",
        "wrong stride",
        variants=TMA + TMA_SPLIT,
    ),
    Mutant(
        "linear.tma.y-desc-stride-of-x",
        "linear",
        LINEAR,
        "            TensorDescriptor.from_tensor(y, [block_m, store_n]))",
        "            TensorDescriptor(y, list(y.shape), [x.stride(0), 1], [block_m, store_n]))",
        "the tma variants' y descriptor (made on the host) takes x's row stride",
        "wrong stride",
        variants=TMA + TMA_SPLIT,
    ),
    Mutant(
        "linear.tiled.y-row-stride-of-x",
        "linear",
        LINEAR,
        "y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :]",
        "y_ptrs = y_ptr + offs_m[:, None] * stride_xm + offs_n[None, :]",
        "tiled stores y's rows at x's row stride",
        "wrong stride",
        variants=TILED,
    ),
    Mutant(
        "linear.gemv.w-without-k-mask",
        "linear",
        LINEAR,
        "w = tl.load(w_ptrs, mask=mask_n[:, None] & mask_k[None, :], other=0.0)",
        "w = tl.load(w_ptrs, mask=mask_n[:, None], other=0.0)",
        "gemv loads weights past its K slice (x's masked lanes are 0, but 0 times what lies past a row may be NaN)",
        "load without its mask",
        variants=GEMV,
    ),
    Mutant(
        "linear.skinny.x-without-k-mask",
        "linear",
        LINEAR,
        "a = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :], mask=in_m[:, None] & in_k[None, :],",
        "a = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :], mask=in_m[:, None],",
        "skinny loads x past its K slice",
        "load without its mask",
        variants=SKINNY,
    ),
    Mutant(
        "linear.tiled.w-without-k-mask",
        "linear",
        LINEAR,
        "b = tl.load(w_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)",
        "b = tl.load(w_ptrs, mask=mask_n[None, :], other=0.0)",
        "tiled loads weights past K",
        "load without its mask",
        variants=TILED,
    ),
    Mutant(
        "linear.gemv.n-mask-against-k",
        "linear",
        LINEAR,
        "    mask_n = offs_n < N\n    # this program's share of K",
        "    mask_n = offs_n < K\n    # this program's share of K",
        "gemv masks its output columns against K",
        "mask on the wrong dimension",
        variants=GEMV,
    ),
    Mutant(
        "linear.tiled.row-blocks-plus-one",
        "linear",
        LINEAR,
        "    num_pid_m = tl.cdiv(M, BLOCK_M)\n    num_pid_n = tl.cdiv(N, BLOCK_N)\n"
        "    num_pid_in_group = GROUP_M * num_pid_n\n    group_id = pid // num_pid_in_group",
        "    num_pid_m = M // BLOCK_M + 1\n    num_pid_n = tl.cdiv(N, BLOCK_N)\n"
        "    num_pid_in_group = GROUP_M * num_pid_n\n    group_id = pid // num_pid_in_group",
        "row blocks counted as M // BLOCK_M + 1, one too many when M is a multiple of BLOCK_M: the tile mapping "
        "then skips tiles",
        "tail dropped",
        variants=TILED,
    ),
    Mutant(
        "rms_norm.residual-row-stride-of-x",
        "rms_norm",
        NORM,
        "r = tl.load(r_ptr + offs_m[:, None] * stride_r",
        "r = tl.load(r_ptr + offs_m[:, None] * stride_x",
        "the residual's rows read at x's row stride",
        "wrong stride",
    ),
    Mutant(
        "rms_norm.y-row-stride-of-x",
        "rms_norm",
        NORM,
        "tl.store(y_ptr + offs_m[:, None] * stride_y",
        "tl.store(y_ptr + offs_m[:, None] * stride_x",
        "y's rows stored at x's row stride",
        "wrong stride",
    ),
    Mutant(
        "rms_norm.h-row-stride-of-residual",
        "rms_norm",
        NORM,
        "tl.store(h_ptr + offs_m[:, None] * stride_h",
        "tl.store(h_ptr + offs_m[:, None] * stride_r",
        "the residual stream h stored at the residual's row stride",
        "wrong stride",
    ),
    Mutant(
        "rms_norm.x-fill-one",
        "rms_norm",
        NORM,
        "h = tl.load(x_ptr + offs_m[:, None] * stride_x + offs_n[None, :], mask=mask, other=0.0)",
        "h = tl.load(x_ptr + offs_m[:, None] * stride_x + offs_n[None, :], mask=mask, other=1.0)",
        "the row's padding columns read as 1: each adds 1 to the sum of squares",
        "wrong fill value",
    ),
    Mutant(
        "rms_norm.weight-before-norm",
        "rms_norm",
        NORM,
        "    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)\n"
        "    w = tl.load(w_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)\n"
        "    y = h * rstd[:, None] * w[None, :]",
        "    w = tl.load(w_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)\n"
        "    h = h * w[None, :]\n"
        "    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)\n"
        "    y = h * rstd[:, None]",
        "gamma applied before normalisation: the mean of squares is taken of h * w",
        "wrong formula",
    ),
    Mutant(
        "rms_norm.squares-in-storage-dtype",
        "rms_norm",
        NORM,
        "rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)",
        "rstd = 1.0 / tl.sqrt(tl.sum((h * h).to(y_ptr.dtype.element_ty).to(tl.float32), axis=1) / N + eps)",
        "each square rounded to the storage dtype (and in fp16 infinite past 256)",
        "extra rounding",
    ),
    Mutant(
        "rms_norm.eps-dropped",
        "rms_norm",
        NORM,
        "rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)",
        "rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N)",
        "eps left out",
        "wrong eps placement",
    ),
    Mutant(
        "rms_norm.residual-added-twice",
        "rms_norm",
        NORM,
        "h_rounded = (h + r).to(h_ptr.dtype.element_ty)",
        "h_rounded = (h + r + r).to(h_ptr.dtype.element_ty)",
        "the residual added twice",
        "wrong residual",
    ),
    Mutant(
        "silu_mul.gu-row-stride-from-out",
        "silu_mul",
        SILU,
        "g_ptrs = gu_ptr + offs_m[:, None] * stride_gu",
        "g_ptrs = gu_ptr + offs_m[:, None] * (2 * stride_out)",
        "gu's rows taken as twice the output's row stride: right only while gu is contiguous",
        "wrong stride",
    ),
    Mutant(
        "silu_mul.out-row-stride-from-gu",
        "silu_mul",
        SILU,
        "tl.store(out_ptr + offs_m[:, None] * stride_out",
        "tl.store(out_ptr + offs_m[:, None] * (stride_gu // 2)",
        "the output's rows stored at half gu's row stride",
        "wrong stride",
    ),
    Mutant(
        "silu_mul.up-at-half-row",
        "silu_mul",
        SILU,
        "u = tl.load(g_ptrs + I, mask=mask",
        "u = tl.load(g_ptrs + stride_gu // 2, mask=mask",
        "the up half looked for at half gu's row stride instead of I columns on",
        "wrong stride",
    ),
    Mutant(
        "silu_mul.silu-rounded",
        "silu_mul",
        SILU,
        "out = g / (1.0 + tl.exp(-g)) * u",
        "out = (g / (1.0 + tl.exp(-g))).to(out_ptr.dtype.element_ty).to(tl.float32) * u",
        "silu(g) rounded to the storage dtype before the product with u",
        "extra rounding",
    ),
    Mutant(
        "silu_mul.row-mask-against-i",
        "silu_mul",
        SILU,
        "mask = (offs_m[:, None] < M) & (offs_i[None, :] < I)",
        "mask = (offs_m[:, None] < I) & (offs_i[None, :] < I)",
        "rows masked against I",
        "mask on the wrong dimension",
    ),
    Mutant(
        "rotary.positions-assumed-contiguous",
        "rotary",
        ROTARY,
        "pos = tl.load(pos_ptr + b * stride_pb + s * stride_ps)",
        "pos = tl.load(pos_ptr + token)",
        "positions read as a contiguous [B, S] tensor: wrong for the engine's prefill, one row expanded over the "
        "batch (a batch stride of 0)",
        "wrong stride",
    ),
    Mutant(
        "rotary.position-strides-swapped",
        "rotary",
        ROTARY,
        "pos = tl.load(pos_ptr + b * stride_pb + s * stride_ps)",
        "pos = tl.load(pos_ptr + b * stride_ps + s * stride_pb)",
        "the positions' batch and sequence strides swapped",
        "wrong stride",
    ),
    Mutant(
        "rotary.positions-of-first-sequence",
        "rotary",
        ROTARY,
        "pos = tl.load(pos_ptr + b * stride_pb + s * stride_ps)",
        "pos = tl.load(pos_ptr + s * stride_ps)",
        "every sequence of the batch rotated at the first one's positions",
        "position off by one",
    ),
    Mutant(
        "rotary.k-strides-of-q",
        "rotary",
        ROTARY,
        "_rotate_heads(k_ptr, ko_ptr, b, s, row, head0, HKV, stride_kb, stride_ks, stride_kh,",
        "_rotate_heads(k_ptr, ko_ptr, b, s, row, head0, HKV, stride_qb, stride_qs, stride_qh,",
        "k read at q's strides: right only while both are views of one fused projection",
        "wrong stride",
    ),
    Mutant(
        "rotary.v-strides-of-k",
        "rotary",
        ROTARY,
        "v = tl.load(v_ptr + b * stride_vb + s * stride_vs + offs_h[:, None] * stride_vh",
        "v = tl.load(v_ptr + b * stride_kb + s * stride_ks + offs_h[:, None] * stride_kh",
        "v read at k's strides",
        "wrong stride",
    ),
    Mutant(
        "rotary.v-cache-strides-of-k-cache",
        "rotary",
        ROTARY,
        "tl.store(vc_ptr + b * stride_vcb + pos * stride_vcs + offs_h[:, None] * stride_vch",
        "tl.store(vc_ptr + b * stride_kob + pos * stride_kos + offs_h[:, None] * stride_koh",
        "v appended at the k cache's strides",
        "wrong stride",
    ),
    Mutant(
        "rotary.cos-row-stride-is-half",
        "rotary",
        ROTARY,
        "c = tl.load(cos_ptr + pos * stride_cos + offs_d",
        "c = tl.load(cos_ptr + pos * HALF + offs_d",
        "the cos table's rows taken as HALF apart: right only for a contiguous table",
        "wrong stride",
    ),
    Mutant(
        "rotary.interleaved",
        "rotary",
        ROTARY,
        "    x1 = tl.load(src, mask=mask, other=0.0).to(tl.float32)\n"
        "    x2 = tl.load(src + HALF, mask=mask, other=0.0).to(tl.float32)",
        "    x1 = tl.load(src + offs_d[None, :], mask=mask, other=0.0).to(tl.float32)\n"
        "    x2 = tl.load(src + offs_d[None, :] + 1, mask=mask, other=0.0).to(tl.float32)",
        "the interleaved convention's pairs (x[2i], x[2i + 1]) rotated instead of the two halves",
        "rope halves swapped",
    ),
    Mutant(
        "rotary.cos-from-sin-table",
        "rotary",
        ROTARY,
        "    c = tl.load(cos_ptr + pos",
        "    c = tl.load(sin_ptr + pos",
        "cos read from the sin table",
        "wrong formula",
    ),
    Mutant(
        "rotary.second-half-sign",
        "rotary",
        ROTARY,
        "(x2 * c[None, :] + x1 * sn[None, :])",
        "(x2 * c[None, :] - x1 * sn[None, :])",
        "the second half rotated the wrong way",
        "wrong formula",
    ),
    Mutant(
        "rotary.v-at-token-row",
        "rotary",
        ROTARY,
        "tl.store(vc_ptr + b * stride_vcb + pos * stride_vcs",
        "tl.store(vc_ptr + b * stride_vcb + s * stride_vcs",
        "v appended at the token's index in the call, not at its position",
        "position off by one",
    ),
    Mutant(
        "rotary.half-mask-off-by-one",
        "rotary",
        ROTARY,
        "mask = (offs_h[:, None] < H) & (offs_d[None, :] < HALF)",
        "mask = (offs_h[:, None] < H) & (offs_d[None, :] <= HALF)",
        "one element past each half loaded and stored",
        "mask off by one",
    ),
    Mutant(
        "attention_decode.lengths-of-first-sequence",
        "attention_decode",
        ATTN,
        "length = tl.load(len_ptr + b)",
        "length = tl.load(len_ptr)",
        "every sequence of the batch attends over the first one's length",
        "position off by one",
    ),
    Mutant(
        "attention_decode.q-of-first-sequence",
        "attention_decode",
        ATTN,
        "q = tl.load(q_ptr + b * stride_qb + heads[:, None] * stride_qh",
        "q = tl.load(q_ptr + heads[:, None] * stride_qh",
        "every sequence's query read from the first's: right only at batch 1",
        "wrong indexing",
    ),
    Mutant(
        "attention_decode.output-of-first-sequence",
        "attention_decode",
        ATTN,
        "tl.store(o_ptr + b * stride_ob + h * stride_oh + offs_d",
        "tl.store(o_ptr + h * stride_oh + offs_d",
        "the merge stores every sequence's output in the first's place",
        "wrong indexing",
    ),
    Mutant(
        "attention_decode.v-strides-of-k",
        "attention_decode",
        ATTN,
        "    v_base = v_ptr + b * stride_vb + kv_h * stride_vh\n",
        "    v_base = v_ptr + b * stride_kb + kv_h * stride_kh\n",
        "the v cache's sequences and heads at the k cache's strides",
        "wrong stride",
    ),
    Mutant(
        "attention_decode.v-position-stride-of-k",
        "attention_decode",
        ATTN,
        "v = tl.load(v_base + offs_n[:, None] * stride_vs",
        "v = tl.load(v_base + offs_n[:, None] * stride_ks",
        "the v cache's positions at the k cache's stride",
        "wrong stride",
    ),
    Mutant(
        "attention_decode.max-starts-at-zero",
        "attention_decode",
        ATTN,
        '    m_i = tl.full((BLOCK_G,), float("-inf"), dtype=tl.float32)',
        "    m_i = tl.zeros((BLOCK_G,), dtype=tl.float32)",
        "the running max starts at 0, not -inf: the same softmax until every score is far below 0, then "
        "every weight underflows",
        "wrong formula",
    ),
    Mutant(
        "attention_decode.group-stride-is-block",
        "attention_decode",
        ATTN,
        "heads = kv_h * G + offs_g",
        "heads = kv_h * BLOCK_G + offs_g",
        "kv head j serves query heads from j * BLOCK_G: right only for one kv head",
        "wrong GQA mapping",
    ),
    Mutant(
        "attention_decode.block-of-sixteen-heads",
        "attention_decode",
        ATTN,
        "BLOCK_G=max(16, triton.next_power_of_2(G))",
        "BLOCK_G=16",
        "a kv head's query heads held in a block of 16 whatever the group: heads past the 16th never computed",
        "tail dropped",
    ),
    Mutant(
        "attention_decode.weights-at-old-max",
        "attention_decode",
        ATTN,
        "p = tl.exp2(qk - m_new[:, None])",
        "p = tl.exp2(qk - m_i[:, None])",
        "a block's weights taken against the running max before the block",
        "skipped rescale",
    ),
    Mutant(
        "attention_prefill.v-strides-of-k",
        "attention_prefill",
        ATTN,
        "    v_base = v_ptr + b * stride_vb + kv * stride_vh\n",
        "    v_base = v_ptr + b * stride_kb + kv * stride_kh\n",
        "v's sequences and heads at k's strides: right only while the two caches share a layout",
        "wrong stride",
    ),
    Mutant(
        "attention_prefill.max-starts-at-zero",
        "attention_prefill",
        ATTN,
        '    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)',
        "    m_i = tl.zeros((BLOCK_M,), dtype=tl.float32)",
        "the running max starts at 0, not -inf: every weight underflows once all of a row's scores are far below 0",
        "wrong formula",
    ),
    Mutant(
        "attention_prefill.batch-and-head-swapped",
        "attention_prefill",
        ATTN,
        "    b = seq_head // HQ\n    h = seq_head % HQ\n",
        "    b = seq_head % HQ\n    h = seq_head // HQ\n",
        "batch and head taken from the program id the wrong way round: right only at batch 1 and one head",
        "wrong indexing",
    ),
    Mutant(
        "attention_chunk.v-position-stride-of-k",
        "attention_chunk",
        ATTN,
        "v_ptrs = v_base + keys[:, None] * stride_vs",
        "v_ptrs = v_base + keys[:, None] * stride_ks",
        "v's positions at k's stride",
        "wrong stride",
    ),
    Mutant(
        "attention_chunk.k-strides-of-v",
        "attention_chunk",
        ATTN,
        "    k_base = k_ptr + b * stride_kb + kv * stride_kh\n",
        "    k_base = k_ptr + b * stride_vb + kv * stride_vh\n",
        "k's sequences and heads at v's strides",
        "wrong stride",
    ),
    Mutant(
        "attention_chunk.head-dim-mask-dropped",
        "attention_chunk",
        ATTN,
        "m_i, l_i, acc, scale_log2, PRECISION, BLOCK_N, False, D == BLOCK_D)",
        "m_i, l_i, acc, scale_log2, PRECISION, BLOCK_N, False, True)",
        "whole key blocks loaded without the head-dim mask: what lies past each head is read (times q's zero "
        "padding, but 0 times NaN is NaN)",
        "load without its mask",
    ),
    Mutant(
        "attention_chunk.max-not-carried",
        "attention_chunk",
        ATTN,
        "    return m_next, l_next, acc\n",
        "    return m_i, l_next, acc\n",
        "a key block's new running max is not carried to the next block",
        "skipped rescale",
    ),
    Mutant(
        "attention_chunk.positions-without-past",
        "attention_chunk",
        ATTN,
        "    rows = past + offs_c  # the queries' positions",
        "    rows = offs_c  # the queries' positions",
        "the chunk's queries placed at positions 0.. instead of after the cache: right only for the first chunk",
        "position off by one",
    ),
    # ------------------------------------------------------------------ 2026-12-03: an independent round
    # planted without reading the choices above: tails in every dimension, strides, output dtypes, GQA at
    # odd groups, split-K and split-KV bookkeeping, rope_cache's other rules, where PDL waits
    Mutant(
        "linear.gemv.slice-end-past-k",
        "linear",
        LINEAR,
        "    k_end = tl.minimum(k_start + k_per_split, K)\n",
        "    k_end = k_start + k_per_split\n",
        "gemv's last K slice not clipped to K: the slice's padding reads the next weight row and x past its row",
        "load without its mask",
        variants=GEMV,
    ),
    Mutant(
        "linear.gemv.bias-dropped-unsplit",
        "linear",
        LINEAR,
        "    if SPLIT_K == 1:\n        if HAS_BIAS:\n"
        "            y += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)\n",
        "    if SPLIT_K == 1:\n",
        "gemv without split-K forgets the bias",
        "wrong formula",
        variants=GEMV,
    ),
    Mutant(
        "linear.gemv.split-start-in-blocks",
        "linear",
        LINEAR,
        "    k_start = pid_k * k_per_split\n",
        "    k_start = pid_k * BLOCK_K\n",
        "gemv's slice k starts k BLOCK_K steps in, not k slices: slices overlap while the end of K is never read",
        "wrong indexing",
        variants=GEMV,
    ),
    Mutant(
        "linear.merge.grid-of-row-blocks",
        "linear",
        LINEAR,
        "            _linear_split_merge_kernel[(programs[0], M)](",
        "            _linear_split_merge_kernel[(programs[0], rows)](",
        "the merge kernel launched over the split programs' row axis (skinny's row blocks) instead of one program "
        "per row: rows past the number of row blocks never merged",
        "tail dropped",
        variants=SPLIT,
    ),
    Mutant(
        "linear.skinny.w-row-stride-of-x",
        "linear",
        LINEAR,
        "        b = tl.load(w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None],",
        "        b = tl.load(w_ptr + offs_n[None, :] * stride_xm + offs_k[:, None],",
        "skinny reads the weight's rows at x's row stride",
        "wrong stride",
        variants=SKINNY,
    ),
    Mutant(
        "linear.skinny.bias-in-every-split",
        "linear",
        LINEAR,
        "    in_y = in_m[:, None] & in_n[None, :]\n    if SPLIT_K == 1:\n        if HAS_BIAS:\n",
        "    in_y = in_m[:, None] & in_n[None, :]\n"
        "    if HAS_BIAS:\n"
        "        acc += tl.load(b_ptr + offs_n, mask=in_n, other=0.0).to(tl.float32)[None, :]\n"
        "    if SPLIT_K == 1:\n"
        "        if False:\n",
        "skinny adds the bias in every program: with split-K each partial carries it and the merge adds it again",
        "wrong formula",
        variants=SKINNY,
    ),
    Mutant(
        "linear.tiled.w-not-advanced",
        "linear",
        LINEAR,
        "        x_ptrs += BLOCK_K\n        w_ptrs += BLOCK_K\n",
        "        x_ptrs += BLOCK_K\n",
        "tiled's weight pointers never move along K: every K block multiplies the first block of W",
        "wrong indexing",
        variants=TILED,
    ),
    Mutant(
        "linear.tiled.k-mask-not-advanced",
        "linear",
        LINEAR,
        "        mask_k = offs_k < K - k0\n",
        "        mask_k = offs_k < K\n",
        "tiled's K mask not moved with the K loop: a partial last K block is read whole",
        "load without its mask",
        variants=TILED,
    ),
    Mutant(
        "linear.tiled.bias-after-rounding",
        "linear",
        LINEAR,
        "    if HAS_BIAS:\n"
        "        accumulator += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)[None, :]\n"
        "    y_ptrs = y_ptr",
        "    accumulator = accumulator.to(y_ptr.dtype.element_ty).to(tl.float32)\n"
        "    if HAS_BIAS:\n"
        "        accumulator += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)[None, :]\n"
        "    y_ptrs = y_ptr",
        "tiled rounds x W^T to the storage dtype before adding the bias (two roundings where one is due)",
        "extra rounding",
        variants=TILED,
    ),
    Mutant(
        "linear.tma.store-transposed",
        "linear",
        LINEAR,
        "        y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], accumulator.to(y_desc.dtype))",
        "        y_desc.store([pid_n * BLOCK_N, pid_m * BLOCK_M], accumulator.to(y_desc.dtype))",
        "tma stores each tile at its transposed tile coordinates",
        "wrong indexing",
        variants=TMA,
    ),
    Mutant(
        "linear.tma.w-at-k-in-n-blocks",
        "linear",
        LINEAR,
        "            b = w_desc.load([pid_n * BLOCK_N, kt * BLOCK_K])",
        "            b = w_desc.load([pid_n * BLOCK_N, kt * BLOCK_N])",
        "tma loads W's K tile kt at kt BLOCK_N columns: right only while BLOCK_N = BLOCK_K",
        "wrong indexing",
        variants=TMA,
    ),
    Mutant(
        "linear.tma.x-desc-width-of-stride",
        "linear",
        LINEAR,
        "    return (TensorDescriptor.from_tensor(x, [block_m, block_k]),",
        "    return (TensorDescriptor(x, [x.shape[0], x.stride(0)], list(x.stride()), [block_m, block_k]),",
        "the tma variants' x descriptor as wide as x's row stride: a row's padding is read as K, not zero-filled",
        "load without its mask",
        variants=TMA + TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.subtile-interleaved",
        "linear",
        LINEAR,
        "tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, STORE_N)), (0, 2, 1)))",
        "tl.split(tl.reshape(acc, (BLOCK_M, STORE_N, 2)))",
        "the subtiled epilogue splits the tile into its even and odd columns instead of its left and right halves",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.counter-per-unit",
        "linear",
        LINEAR,
        "_merge_if_last(acc, tile_partials, M * N, in_y, counter_ptr + tile,",
        "_merge_if_last(acc, tile_partials, M * N, in_y, counter_ptr + unit,",
        "each K slice counts its arrival on a counter of its own: no slice ever sees the tile's last arrival",
        "merge skips a split",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.split-bias-dropped",
        "linear",
        LINEAR,
        "\n                           HAS_BIAS, SPLIT_K)",
        "\n                           False, SPLIT_K)",
        "tma_split's merge of the K slices forgets the bias",
        "wrong formula",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.slice-of-tile-index",
        "linear",
        LINEAR,
        "        k_first = (unit % SPLIT_K) * slice_steps * BLOCK_K\n",
        "        k_first = (tile % SPLIT_K) * slice_steps * BLOCK_K\n",
        "a unit's K slice taken from its tile's index, not its own: every slice of a tile sums the same part of K",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    # ------------------------------------------------------------------------------------------ rms_norm
    Mutant(
        "rms_norm.mean-over-n-minus-one",
        "rms_norm",
        NORM,
        "tl.sum(h * h, axis=1) / N + eps",
        "tl.sum(h * h, axis=1) / (N - 1) + eps",
        "the mean of squares divides by N - 1, as a variance would",
        "wrong formula",
    ),
    Mutant(
        "rms_norm.eps-per-element",
        "rms_norm",
        NORM,
        "tl.sum(h * h, axis=1) / N + eps",
        "tl.sum(h * h + eps, axis=1) / N",
        "eps added to each square of the padded block: BLOCK_N eps where one is due",
        "wrong eps placement",
    ),
    Mutant(
        "rms_norm.eps-argument-ignored",
        "rms_norm",
        NORM,
        "        x, r, weight, y, h, M, N, float(eps),",
        "        x, r, weight, y, h, M, N, 1e-6,",
        "the usual 1e-6 in place of the eps it is given: right only for models that use it",
        "wrong eps placement",
    ),
    Mutant(
        "rms_norm.h-store-without-mask",
        "rms_norm",
        NORM,
        "        tl.store(h_ptr + offs_m[:, None] * stride_h + offs_n[None, :], h_rounded, mask=mask)",
        "        tl.store(h_ptr + offs_m[:, None] * stride_h + offs_n[None, :], h_rounded)",
        "the residual stream h stored for every row and column of the block",
        "store without mask",
    ),
    Mutant(
        "rms_norm.column-mask-dropped",
        "rms_norm",
        NORM,
        "    mask = (offs_m[:, None] < M) & mask_n[None, :]\n",
        "    mask = (offs_m[:, None] < M) & (offs_n[None, :] < BLOCK_N)\n",
        "rows loaded and stored for the whole power-of-two block, past the row's N columns",
        "load without its mask",
    ),
    Mutant(
        "rms_norm.row-blocks-overlap",
        "rms_norm",
        NORM,
        "    offs_m = pid * BLOCK_M + tl.arange(0, BLOCK_M)\n",
        "    offs_m = pid + tl.arange(0, BLOCK_M)\n",
        "program p normalises rows p.. instead of p BLOCK_M..: right only for one row a program",
        "wrong indexing",
    ),
    Mutant(
        "rms_norm.normalised-rounded-before-weight",
        "rms_norm",
        NORM,
        "    y = h * rstd[:, None] * w[None, :]\n",
        "    y = (h * rstd[:, None]).to(y_ptr.dtype.element_ty).to(tl.float32) * w[None, :]\n",
        "the normalised row rounded to the storage dtype before gamma scales it",
        "extra rounding",
    ),
    Mutant(
        "rms_norm.fp32-output",
        "rms_norm",
        NORM,
        "    y = empty((M, N), dtype=x.dtype, device=x.device)\n",
        "    y = empty((M, N), dtype=torch.float32, device=x.device)\n",
        "y returned in fp32 (computed in fp32, never rounded to the model's dtype)",
        "wrong output dtype",
        fast=True,
    ),
    Mutant(
        "rms_norm.wait-dropped",
        "rms_norm",
        NORM,
        "    dependent_launch(PDL)\n    pid = tl.program_id(0).to(tl.int64)\n",
        "    pid = tl.program_id(0).to(tl.int64)\n",
        "PDL's wait dropped: under PDL the norm reads x before the kernel that writes it has finished",
        "dependent launch misplaced",
    ),
    # -------------------------------------------------------------------------------------------- rotary
    Mutant(
        "rotary.token-split-swapped",
        "rotary",
        ROTARY,
        "    b = token // S\n    s = token % S\n",
        "    b = token % S\n    s = token // S\n",
        "the token index split into sequence and position the wrong way round",
        "wrong indexing",
    ),
    Mutant(
        "rotary.uncached-k-at-position",
        "rotary",
        ROTARY,
        "        row = pos if CACHE else s\n",
        "        row = pos\n",
        "without a cache, rotated k is written at the token's position instead of its index in the call",
        "position off by one",
    ),
    Mutant(
        "rotary.q-at-position",
        "rotary",
        ROTARY,
        "_rotate_heads(q_ptr, qo_ptr, b, s, s, pid_h * BLOCK_H",
        "_rotate_heads(q_ptr, qo_ptr, b, s, pos, pid_h * BLOCK_H",
        "rotated q written at the token's position, as k is in the cache",
        "position off by one",
    ),
    Mutant(
        "rotary.v-mask-off-by-one",
        "rotary",
        ROTARY,
        "(offs_e[None, :] < 2 * HALF)",
        "(offs_e[None, :] <= 2 * HALF)",
        "one element past each head of v copied into the cache",
        "mask off by one",
    ),
    Mutant(
        "rotary.v-heads-of-q",
        "rotary",
        ROTARY,
        "            mask = (offs_h[:, None] < HKV) & (offs_e[None, :] < 2 * HALF)",
        "            mask = (offs_h[:, None] < HQ) & (offs_e[None, :] < 2 * HALF)",
        "v copied for as many heads as q has",
        "mask on the wrong dimension",
    ),
    Mutant(
        "rotary.k-heads-of-q",
        "rotary",
        ROTARY,
        "_rotate_heads(k_ptr, ko_ptr, b, s, row, head0, HKV,",
        "_rotate_heads(k_ptr, ko_ptr, b, s, row, head0, HQ,",
        "k rotated for as many heads as q has",
        "mask on the wrong dimension",
    ),
    Mutant(
        "rotary.linear-scaling-inverted",
        "rotary",
        ROTARY,
        '        inv_freq /= scaling["factor"]\n',
        '        inv_freq *= scaling["factor"]\n',
        "rope_cache's linear scaling speeds the frequencies up by the factor instead of slowing them down",
        "wrong formula",
    ),
    Mutant(
        "rotary.frequency-exponent-of-index",
        "rotary",
        ROTARY,
        "torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim",
        "torch.arange(0, dim // 2, dtype=torch.int64).to(dtype=torch.float) / dim",
        "rope_cache's frequency exponents i / D instead of 2i / D",
        "wrong formula",
    ),
    Mutant(
        "rotary.llama3-smooth-from-high",
        "rotary",
        ROTARY,
        "        smooth = (old_context / wavelen - low) / (high - low)\n",
        "        smooth = (old_context / wavelen - high) / (high - low)\n",
        "rope_cache's Llama-3 blend measured from the high factor: the medium band blended the wrong way",
        "wrong formula",
    ),
    # ------------------------------------------------------------------------------------------ silu_mul
    Mutant(
        "silu_mul.program-axes-swapped",
        "silu_mul",
        SILU,
        "    pid_m = tl.program_id(0).to(tl.int64)\n    pid_i = tl.program_id(1).to(tl.int64)\n",
        "    pid_m = tl.program_id(1).to(tl.int64)\n    pid_i = tl.program_id(0).to(tl.int64)\n",
        "row and column blocks taken from the launch grid's axes the wrong way round",
        "wrong indexing",
    ),
    Mutant(
        "silu_mul.exp2-without-log2e",
        "silu_mul",
        SILU,
        "    out = g / (1.0 + tl.exp(-g)) * u\n",
        "    out = g / (1.0 + tl.exp2(-g)) * u\n",
        "exp2 where silu needs exp: the sigmoid at the wrong temperature",
        "wrong scale",
    ),
    Mutant(
        "silu_mul.fp32-output",
        "silu_mul",
        SILU,
        "    out = empty((M, I), dtype=gu.dtype, device=gu.device)\n",
        "    out = empty((M, I), dtype=torch.float32, device=gu.device)\n",
        "the product returned in fp32, never rounded to the model's dtype",
        "wrong output dtype",
    ),
    Mutant(
        "silu_mul.up-at-block-width",
        "silu_mul",
        SILU,
        "    u = tl.load(g_ptrs + I, mask=mask, other=0.0)",
        "    u = tl.load(g_ptrs + BLOCK_I, mask=mask, other=0.0)",
        "the up half looked for BLOCK_I columns on instead of I: right only when I is one block",
        "wrong indexing",
    ),
    Mutant(
        "silu_mul.wait-dropped",
        "silu_mul",
        SILU,
        "    dependent_launch(PDL)\n    pid_m = tl.program_id(0).to(tl.int64)\n",
        "    pid_m = tl.program_id(0).to(tl.int64)\n",
        "PDL's wait dropped: under PDL gu is read before the GEMM that writes it has finished",
        "dependent launch misplaced",
        fast=True,
    ),
    # ---------------------------------------------------------------------------------- attention (flash)
    Mutant(
        "attention_prefill.v-diagonal-without-key-mask",
        "attention_prefill",
        ATTN,
        "        vb = tl.load(v_ptrs, mask=inside[:, None] & mask_d[None, :], other=0.0)",
        "        vb = tl.load(v_ptrs, mask=mask_d[None, :], other=0.0)",
        "the diagonal block's values loaded past the last key (their weights are 0, but 0 times NaN is NaN)",
        "load without its mask",
    ),
    Mutant(
        "attention_prefill.q-without-head-dim-mask",
        "attention_prefill",
        ATTN,
        "                mask=mask_c[:, None] & mask_d[None, :], other=0.0)\n    k_base",
        "                mask=mask_c[:, None], other=0.0)\n    k_base",
        "q loaded past its head dim (k's masked lanes are 0, but 0 times what lies past a head may be NaN)",
        "load without its mask",
    ),
    Mutant(
        "attention_prefill.q-head-stride-is-d",
        "attention_prefill",
        ATTN,
        "    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + offs_c[:, None] * stride_qs",
        "    q = tl.load(q_ptr + b * stride_qb + h * D + offs_c[:, None] * stride_qs",
        "q's heads taken as D apart: right only while q's heads are contiguous",
        "wrong stride",
    ),
    Mutant(
        "attention_prefill.scale-not-in-rescale",
        "attention_prefill",
        ATTN,
        "    logits = tl.dot(q, kt, input_precision=PRECISION) * scale_log2\n",
        "    logits = tl.dot(q, kt, input_precision=PRECISION) * 1.4426950408889634\n",
        "the scale dropped from the logits (log2(e) kept): softmax of the unscaled scores",
        "wrong scale",
    ),
    Mutant(
        "attention_chunk.o-batch-stride-of-q",
        "attention_chunk",
        ATTN,
        "    tl.store(o_ptr + b * stride_ob + h * stride_oh + offs_c",
        "    tl.store(o_ptr + b * stride_qb + h * stride_oh + offs_c",
        "the output's sequences stored at q's batch stride",
        "wrong stride",
    ),
    Mutant(
        "attention_chunk.kv-head-by-kv-count",
        "attention_chunk",
        ATTN,
        "    kv = h // G  # the kv head its group of query heads reads\n",
        "    kv = h // (HQ // G)  # the kv head its group of query heads reads\n",
        "query head h reads kv head h // Hkv instead of h // G: right only where G = Hkv",
        "wrong GQA mapping",
    ),
    Mutant(
        "attention_chunk.query-mask-against-keys",
        "attention_chunk",
        ATTN,
        "    mask_c = offs_c < C\n",
        "    mask_c = offs_c < S\n",
        "the chunk's queries masked against the keys: rows past the chunk loaded and stored",
        "mask on the wrong dimension",
    ),
    # ----------------------------------------------------------------------------------- attention_decode
    Mutant(
        "attention_decode.chunk-floor",
        "attention_decode",
        ATTN,
        "    chunk = triton.cdiv(triton.cdiv(capacity, splits), block_n) * block_n\n",
        "    chunk = triton.cdiv(capacity // splits, block_n) * block_n\n",
        "each split's share of the capacity rounded down before its blocks: the last positions belong to no split",
        "tail dropped",
    ),
    Mutant(
        "attention_decode.chunk-end-not-clipped",
        "attention_decode",
        ATTN,
        "    end = tl.minimum(start + chunk, length)  # filled positions of this chunk only\n",
        "    end = start + chunk\n",
        "each split reads its whole chunk, filled or not",
        "load without its mask",
    ),
    Mutant(
        "attention_decode.last-position-dropped",
        "attention_decode",
        ATTN,
        "    end = tl.minimum(start + chunk, length)  # filled positions of this chunk only\n",
        "    end = tl.minimum(start + chunk, length - 1)  # filled positions of this chunk only\n",
        "the newest position (the token being decoded) is never attended",
        "mask off by one",
    ),
    Mutant(
        "attention_decode.l-after-kv-rows",
        "attention_decode",
        ATTN,
        "    tl.store(ml_ptr + tl.num_programs(0) * G * SPLITS + row, l_i, mask=mask_g)",
        "    tl.store(ml_ptr + tl.num_programs(0) * SPLITS + row, l_i, mask=mask_g)",
        "the softmax sums stored after B x Hkv rows of maxima instead of B x Hq: right only for G = 1",
        "wrong indexing",
    ),
    Mutant(
        "attention_decode.partial-row-without-group",
        "attention_decode",
        ATTN,
        "    row = (b * HKV * G + heads) * SPLITS + split_id\n",
        "    row = (b * HKV + heads) * SPLITS + split_id\n",
        "a sequence's partials placed after B x Hkv rows, not B x Hq: sequences past the first overlap",
        "wrong indexing",
    ),
    Mutant(
        "attention_decode.q-batch-stride-contiguous",
        "attention_decode",
        ATTN,
        "    q = tl.load(q_ptr + b * stride_qb + heads[:, None] * stride_qh",
        "    q = tl.load(q_ptr + b * HKV * G * D + heads[:, None] * stride_qh",
        "q's sequences taken as Hq x D apart: right only while q is contiguous",
        "wrong stride",
    ),
    Mutant(
        "attention_decode.fp32-output",
        "attention_decode",
        ATTN,
        "    o = empty((B, HQ, D), dtype=q.dtype, device=q.device)\n",
        "    o = empty((B, HQ, D), dtype=torch.float32, device=q.device)\n",
        "the merged output returned in fp32, never rounded to the model's dtype",
        "wrong output dtype",
    ),
    Mutant(
        "attention_decode.merge-without-wait",
        "attention_decode",
        ATTN,
        "    dependent_launch(PDL)\n    pid = tl.program_id(0).to(tl.int64)  # batch x q head\n",
        "    pid = tl.program_id(0).to(tl.int64)  # batch x q head\n",
        "the merge kernel does not wait under PDL: it may read the partials before the split kernel wrote them",
        "dependent launch misplaced",
    ),
    Mutant(
        "attention_decode.groups-of-sixteen-when-larger",
        "attention_decode",
        ATTN,
        "BLOCK_G=max(16, triton.next_power_of_2(G))",
        "BLOCK_G=max(16, G)",
        "the block of a kv head's query heads sized G, not a power of two, past 16",
        "wrong formula",
    ),
    # ------------------------------------------------------------------- round 12 (2026-12-03): subtle numerics
    Mutant(
        "attention_prefill.weights-exp-not-exp2",
        "attention_prefill",
        ATTN,
        "    weights = tl.exp2(logits - m_next[:, None])",
        "    weights = tl.exp(logits - m_next[:, None])",
        "a key block's weights taken with exp of the log2-scaled logits (the rescale keeps exp2)",
        "wrong formula",
    ),
    Mutant(
        "attention_prefill.rescale-exp-not-exp2",
        "attention_prefill",
        ATTN,
        "    rescale = tl.exp2(m_i - m_next)",
        "    rescale = tl.exp(m_i - m_next)",
        "the running sums rescaled by exp of a log2-scaled difference when the running max grows",
        "skipped rescale",
    ),
    Mutant(
        "attention_prefill.logits-rounded",
        "attention_prefill",
        ATTN,
        "    logits = tl.dot(q, kt, input_precision=PRECISION) * scale_log2",
        "    logits = tl.dot(q, kt, input_precision=PRECISION).to(q.dtype).to(tl.float32) * scale_log2",
        "q . k rounded to the storage dtype before the scale and the softmax",
        "extra rounding",
    ),
    Mutant(
        "attention_prefill.max-of-block-only",
        "attention_prefill",
        ATTN,
        "    m_next = tl.maximum(m_i, tl.max(logits, axis=1))",
        "    m_next = tl.max(logits, axis=1)",
        "the running max replaced by the block's own max: exact until a row sees no key of a diagonal block",
        "skipped rescale",
    ),
    Mutant(
        "attention_prefill.q-prescaled-in-storage-dtype",
        "attention_prefill",
        ATTN,
        "    k_base = k_ptr + b * stride_kb + kv * stride_kh\n",
        "    q = (q * scale_log2).to(q_ptr.dtype.element_ty)  # the scale folded into q, rounded to its dtype\n"
        "    scale_log2 = scale_log2 * 0.0 + 1.0\n"
        "    k_base = k_ptr + b * stride_kb + kv * stride_kh\n",
        "q multiplied by the scale (log2 e folded in) and rounded to the storage dtype before q . k",
        "extra rounding",
    ),
    Mutant(
        "attention_prefill.scale-rounded-to-dtype",
        "attention_prefill",
        ATTN,
        "float(scale) * LOG2E,\n        *q.stride()[:3]",
        "float(torch.tensor(scale * LOG2E, dtype=q.dtype)),\n        *q.stride()[:3]",
        "the folded scale passed through a tensor of the model's dtype: rounded to fp16/bf16",
        "wrong scale",
    ),
    Mutant(
        "attention_decode.q-prescaled-in-storage-dtype",
        "attention_decode",
        ATTN,
        "    k_base = k_ptr + b * stride_kb + kv_h * stride_kh\n",
        "    q = (q * scale_log2).to(q_ptr.dtype.element_ty)  # the scale folded into q, rounded to its dtype\n"
        "    scale_log2 = scale_log2 * 0.0 + 1.0\n"
        "    k_base = k_ptr + b * stride_kb + kv_h * stride_kh\n",
        "q multiplied by the scale (log2 e folded in) and rounded to the storage dtype before q . k",
        "extra rounding",
    ),
    Mutant(
        "attention_decode.scale-rounded-to-dtype",
        "attention_decode",
        ATTN,
        "float(scale) * LOG2E,\n        *q.stride()[:2]",
        "float(torch.tensor(scale * LOG2E, dtype=q.dtype)),\n        *q.stride()[:2]",
        "the folded scale passed through a tensor of the model's dtype: rounded to fp16/bf16",
        "wrong scale",
    ),
    Mutant(
        "attention_decode.merge-weights-exp",
        "attention_decode",
        ATTN,
        "    weight = tl.exp2(m - tl.max(m, axis=0))",
        "    weight = tl.exp(m - tl.max(m, axis=0))",
        "the merge weighs the splits by exp of their log2-scaled maxima",
        "wrong formula",
    ),
    Mutant(
        "attention_decode.merge-weights-against-split-zero",
        "attention_decode",
        ATTN,
        "    weight = tl.exp2(m - tl.max(m, axis=0))",
        "    weight = tl.exp2(m - tl.sum(tl.where(offs_s == 0, m, 0.0), axis=0))",
        "the merge weighs the splits against the first split's max, not the largest: exact until a later "
        "split's max is 128 (log2 units) above the first's, then inf",
        "skipped rescale",
    ),
    Mutant(
        "attention_decode.split-sum-rounded",
        "attention_decode",
        ATTN,
        "        tl.store(ml_ptr + tl.num_programs(0) * G * SPLITS + row, l_i, mask=mask_g)",
        "        tl.store(ml_ptr + tl.num_programs(0) * G * SPLITS + row,"
        " l_i.to(q_ptr.dtype.element_ty).to(tl.float32), mask=mask_g)",
        "each split's softmax sum rounded to the storage dtype before the merge",
        "extra rounding",
    ),
    Mutant(
        "attention_decode.split-max-rounded",
        "attention_decode",
        ATTN,
        "        tl.store(ml_ptr + row, m_i, mask=mask_g)",
        "        tl.store(ml_ptr + row, m_i.to(q_ptr.dtype.element_ty).to(tl.float32), mask=mask_g)",
        "each split's running max rounded to the storage dtype before the merge weighs the splits with it",
        "extra rounding",
    ),
    Mutant(
        "attention_decode.score-mask-dropped",
        "attention_decode",
        ATTN,
        '        qk = tl.where(mask_n[None, :], qk, float("-inf"))\n',
        "",
        "positions past the split's end score 0 (k loaded as 0) instead of -inf: their weights join the sum",
        "load without its mask",
    ),
    Mutant(
        "attention_decode.one-position-tail-skipped",
        "attention_decode",
        ATTN,
        "    for start_n in range(start, end, BLOCK_N):",
        "    for start_n in range(start, end - 1, BLOCK_N):",
        "the key loop bound one short: a last block holding a single filled position is skipped",
        "tail dropped",
    ),
    Mutant(
        "rms_norm.eps-inside-mean",
        "rms_norm",
        NORM,
        "    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)",
        "    rstd = 1.0 / tl.sqrt((tl.sum(h * h, axis=1) + eps) / N)",
        "eps added to the sum of squares before the division by N: eps / N where eps is due",
        "wrong eps placement",
    ),
    Mutant(
        "rotary.cos-sin-rounded-to-dtype",
        "rotary",
        ROTARY,
        "    sn = tl.load(sin_ptr + pos * stride_cos + offs_d, mask=offs_d < HALF, other=0.0)\n",
        "    sn = tl.load(sin_ptr + pos * stride_cos + offs_d, mask=offs_d < HALF, other=0.0)\n"
        "    c = c.to(q_ptr.dtype.element_ty).to(tl.float32)  # cos and sin cast to the model's dtype\n"
        "    sn = sn.to(q_ptr.dtype.element_ty).to(tl.float32)\n",
        "cos and sin rounded to the model's dtype before the rotation",
        "extra rounding",
    ),
    Mutant(
        "rotary.first-product-rounded",
        "rotary",
        ROTARY,
        "    tl.store(dst, (x1 * c[None, :] - x2 * sn[None, :]).to(",
        "    tl.store(dst, ((x1 * c[None, :]).to(dst_ptr.dtype.element_ty).to(tl.float32) - x2 * sn[None, :]).to(",
        "x1 cos rounded to the storage dtype before x2 sin is subtracted",
        "extra rounding",
    ),
    Mutant(
        "rotary.llama3-blend-reversed",
        "rotary",
        ROTARY,
        "        blended = (1 - smooth) * scaled / factor + smooth * scaled",
        "        blended = smooth * scaled / factor + (1 - smooth) * scaled",
        "rope_cache's Llama-3 blend weighs the slowed and the kept frequency the wrong way round",
        "wrong formula",
    ),
    Mutant(
        "rotary.llama3-wavelength-halved",
        "rotary",
        ROTARY,
        "        wavelen = 2 * math.pi / inv_freq",
        "        wavelen = math.pi / inv_freq",
        "rope_cache's Llama-3 wavelength taken as pi / f: the bands' thresholds move by a factor of two",
        "wrong formula",
    ),
    Mutant(
        "silu_mul.exp-rounded-to-dtype",
        "silu_mul",
        SILU,
        "    out = g / (1.0 + tl.exp(-g)) * u",
        "    out = g / (1.0 + tl.exp(-g).to(out_ptr.dtype.element_ty).to(tl.float32)) * u",
        "exp(-g) rounded to the storage dtype (fp16: infinite below g = -11, silu 0 where it is -g e^g)",
        "extra rounding",
    ),
    Mutant(
        "silu_mul.log2e-truncated",
        "silu_mul",
        SILU,
        "    out = g / (1.0 + tl.exp(-g)) * u",
        "    out = g / (1.0 + tl.exp2(-g * 1.4427)) * u",
        "exp(-g) as exp2 with log2(e) written to five digits",
        "wrong scale",
    ),
    Mutant(
        "linear.gemv.products-rounded",
        "linear",
        LINEAR,
        "        accumulator += w * x[None, :]",
        "        accumulator += (w * x[None, :]).to(x_ptr.dtype.element_ty).to(tl.float32)",
        "gemv rounds each product to the storage dtype before accumulating it",
        "extra rounding",
        variants=GEMV,
    ),
    Mutant(
        "linear.gemv.lanes-rounded",
        "linear",
        LINEAR,
        "    y = tl.sum(accumulator, axis=1)\n",
        "    y = tl.sum(accumulator.to(x_ptr.dtype.element_ty).to(tl.float32), axis=1)\n",
        "gemv's BLOCK_K lane sums rounded to the storage dtype before the tree sum",
        "extra rounding",
        variants=GEMV,
    ),
    Mutant(
        "linear.merge.bias-after-rounding",
        "linear",
        LINEAR,
        "\n    if HAS_BIAS:\n        y += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)\n",
        "\n    y = y.to(y_ptr.dtype.element_ty).to(tl.float32)\n"
        "    if HAS_BIAS:\n        y += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)\n",
        "the split-K merge rounds the sum of partials to the storage dtype before adding the bias",
        "extra rounding",
        variants=SPLIT,
    ),
    Mutant(
        "linear.gemv.bias-after-rounding",
        "linear",
        LINEAR,
        "        if HAS_BIAS:\n            y += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)\n",
        "        y = y.to(y_ptr.dtype.element_ty).to(tl.float32)\n"
        "        if HAS_BIAS:\n            y += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)\n",
        "gemv without split-K rounds x W^T to the storage dtype before adding the bias",
        "extra rounding",
        variants=GEMV,
    ),
    Mutant(
        "linear.skinny.bias-after-rounding",
        "linear",
        LINEAR,
        "            acc += tl.load(b_ptr + offs_n, mask=in_n, other=0.0).to(tl.float32)[None, :]\n"
        "        tl.store(y_ptr + offs_m",
        "            acc = acc.to(y_ptr.dtype.element_ty).to(tl.float32)\n"
        "            acc += tl.load(b_ptr + offs_n, mask=in_n, other=0.0).to(tl.float32)[None, :]\n"
        "        tl.store(y_ptr + offs_m",
        "skinny without split-K rounds x W^T to the storage dtype before adding the bias",
        "extra rounding",
        variants=SKINNY,
    ),
    Mutant(
        "linear.merge-last.bias-after-rounding",
        "linear",
        LINEAR,
        "        if HAS_BIAS:\n            y += tl.load(b_ptrs, mask=b_mask, other=0.0).to(tl.float32)\n",
        "        y = y.to(y_ptrs.dtype.element_ty).to(tl.float32)\n"
        "        if HAS_BIAS:\n            y += tl.load(b_ptrs, mask=b_mask, other=0.0).to(tl.float32)\n",
        'MERGE "last" rounds the sum of partials to the storage dtype before adding the bias',
        "extra rounding",
        variants=SPLIT,
    ),
    Mutant(
        "linear.skinny.block-dots-rounded",
        "linear",
        LINEAR,
        "        acc = tl.dot(a, b, acc, input_precision=PRECISION)\n",
        "        acc += tl.dot(a, b, input_precision=PRECISION).to(x_ptr.dtype.element_ty).to(tl.float32)\n",
        "skinny rounds each K block's dot to the storage dtype before adding it to the fp32 accumulator",
        "extra rounding",
        variants=SKINNY,
    ),
    Mutant(
        "linear.tiled.block-dots-rounded",
        "linear",
        LINEAR,
        "        accumulator = tl.dot(a, b, accumulator, input_precision=PRECISION)\n        x_ptrs",
        "        accumulator += tl.dot(a, b, input_precision=PRECISION).to(x_ptr.dtype.element_ty).to(tl.float32)\n"
        "        x_ptrs",
        "tiled rounds each K block's dot to the storage dtype before adding it to the fp32 accumulator",
        "extra rounding",
        variants=TILED,
    ),
    Mutant(
        "attention_chunk.whole-blocks-one-key-late",
        "attention_chunk",
        ATTN,
        "    whole = (past + block * BLOCK_M + 1) // BLOCK_N * BLOCK_N",
        "    whole = (past + block * BLOCK_M + 2) // BLOCK_N * BLOCK_N",
        "the unmasked key blocks end one key past the program's first query: where that query sits at the "
        "end of a key block, the next block is read unmasked",
        "mask off by one",
    ),
    Mutant(
        "attention_prefill.diagonal-loop-one-short",
        "attention_prefill",
        ATTN,
        "    end = tl.minimum(past + (block + 1) * BLOCK_M, S)\n",
        "    end = tl.minimum(past + (block + 1) * BLOCK_M, S) - 1\n",
        "the diagonal loop ends at the last query's position, not past it: a last key block holding only "
        "that query's own key is skipped",
        "tail dropped",
    ),
    Mutant(
        "rms_norm.mean-square-rounded",
        "rms_norm",
        NORM,
        "    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)",
        "    rstd = 1.0 / tl.sqrt((tl.sum(h * h, axis=1) / N).to(y_ptr.dtype.element_ty).to(tl.float32) + eps)",
        "the mean of squares rounded to the storage dtype before eps and the square root (fp16: infinite past 256^2)",
        "extra rounding",
    ),
    Mutant(
        "rotary.dynamic-context-refused",
        "rotary",
        ROTARY,
        '        if max_positions > int(scaling["max_positions"]):',
        '        if max_positions >= int(scaling["max_positions"]):',
        "rope_cache refuses a dynamic-scaling table as long as the model's context (only longer ones are "
        "past it): a model served at its full context cannot load",
        "mask off by one",
    ),
    Mutant(
        "rotary.yarn-ramp-reversed",
        "rotary",
        ROTARY,
        "    kept = 1 - ramp\n",
        "    kept = ramp\n",
        "rope_cache's yarn blend keeps the long wavelengths and slows the short ones (the ramp's weights swapped)",
        "wrong formula",
    ),
    Mutant(
        "rotary.yarn-attention-factor-dropped",
        "rotary",
        ROTARY,
        "    if attention_factor != 1.0:",
        "    if attention_factor == 0.0:",
        "rope_cache's yarn tables without the attention factor that transformers multiplies cos and sin by",
        "skipped rescale",
    ),
    Mutant(
        "rotary.table-one-row-short",
        "rotary",
        ROTARY,
        "    angles = torch.arange(max_positions, device=where)[:, None]",
        "    angles = torch.arange(max_positions - 1, device=where)[:, None]",
        "rope_cache's tables one position short: the last cache position reads past them",
        "tail dropped",
    ),
    Mutant(
        "rms_norm.eps-rounded-to-bf16",
        "rms_norm",
        NORM,
        "M, N, float(eps), x.stride(0)",
        "M, N, float(torch.tensor(eps, dtype=torch.bfloat16)), x.stride(0)",
        "eps passed through a bf16 tensor (the model's dtype): 1e-5 becomes 1.0014e-5",
        "wrong eps placement",
    ),
    Mutant(
        "attention_prefill.sum-of-rounded-weights",
        "attention_prefill",
        ATTN,
        "    l_next = l_i * rescale + tl.sum(weights, axis=1)",
        "    l_next = l_i * rescale + tl.sum(weights.to(vb.dtype).to(tl.float32), axis=1)",
        "the softmax sum taken of the weights rounded to v's dtype (those P.V uses), not of the fp32 weights",
        "extra rounding",
    ),
    Mutant(
        "attention_decode.scores-at-default-precision",
        "attention_decode",
        ATTN,
        "        qk = tl.dot(q, k, input_precision=PRECISION) * scale_log2",
        "        qk = tl.dot(q, k) * scale_log2",
        "q . k without its input precision: Triton's default, tf32, rounds fp32 operands to 10 fraction bits",
        "extra rounding",
    ),
    Mutant(
        "linear.tiled.default-precision",
        "linear",
        LINEAR,
        "        accumulator = tl.dot(a, b, accumulator, input_precision=PRECISION)\n        x_ptrs",
        "        accumulator = tl.dot(a, b, accumulator)\n        x_ptrs",
        "tiled's dot without its input precision: Triton's default, tf32, rounds fp32 operands to 10 fraction bits",
        "extra rounding",
        variants=TILED,
    ),
    Mutant(
        "linear.tiled.tf32-for-fp32",
        "linear",
        "neurobrix/ops/_common.py",
        '    return "ieee" if dtype == "fp32" else "tf32"',
        '    return "ieee" if dtype == "float32" else "tf32"',
        "dot_precision compares against torch's dtype name, not the op's: fp32 dots asked for tf32 (every tl.dot "
        "still states its input_precision, so the lint passes)",
        "extra rounding",
        variants=TILED,
    ),
    # ------------------------------------------------- round 13 (2026-12-04): twice, empty parts, shared state
    Mutant(
        "linear.gemv.bias-in-every-split",
        "linear",
        LINEAR,
        "        tl.store(part_ptr + (pid_k * M + pid_m) * N + offs_n, y, mask=mask_n)\n",
        "        if HAS_BIAS:\n"
        "            y += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)\n"
        "        tl.store(part_ptr + (pid_k * M + pid_m) * N + offs_n, y, mask=mask_n)\n",
        "gemv adds the bias in every split program as it does unsplit: each partial carries it and the merge adds "
        "it again (SPLIT_K + 1 biases)",
        "applied twice",
        variants=GEMV,
    ),
    Mutant(
        "linear.merge.sum-starts-at-bias",
        "linear",
        LINEAR,
        "    y = tl.zeros((BLOCK_N,), dtype=tl.float32)\n"
        "    for k in range(SPLIT_K):  # in split order: deterministic\n",
        "    y = tl.zeros((BLOCK_N,), dtype=tl.float32)\n"
        "    if HAS_BIAS:  # start from the bias\n"
        "        y += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)\n"
        "    for k in range(SPLIT_K):  # in split order: deterministic\n",
        "the split-K merge kernel starts its sum at the bias and still adds the bias after the partials",
        "applied twice",
        variants=SPLIT,
    ),
    Mutant(
        "linear.merge-last.sum-starts-at-bias",
        "linear",
        LINEAR,
        "        y = tl.zeros_like(acc)\n        for k in range(SPLIT_K):  # the tile's partials, in split order\n",
        "        y = tl.zeros_like(acc)\n"
        "        if HAS_BIAS:  # start from the bias\n"
        "            y += tl.load(b_ptrs, mask=b_mask, other=0.0).to(tl.float32)\n"
        "        for k in range(SPLIT_K):  # the tile's partials, in split order\n",
        'MERGE "last" starts its sum at the bias and still adds the bias after the partials',
        "applied twice",
        variants=SPLIT,
    ),
    Mutant(
        "attention_prefill.diagonal-scaled-twice",
        "attention_prefill",
        ATTN,
        '        logits = tl.where((rows[:, None] >= keys[None, :]) & inside[None, :], logits, float("-inf"))',
        "        logits = tl.where((rows[:, None] >= keys[None, :]) & inside[None, :], logits * scale_log2, "
        'float("-inf"))',
        "the diagonal key blocks' logits scaled again where the causal mask is applied: those keys weighed at "
        "another temperature than the whole blocks'",
        "applied twice",
    ),
    Mutant(
        "attention_decode.scores-scaled-twice",
        "attention_decode",
        ATTN,
        '        qk = tl.where(mask_n[None, :], qk, float("-inf"))\n',
        '        qk = tl.where(mask_n[None, :], qk * scale_log2, float("-inf"))\n',
        "the scores scaled again where the length mask is applied: softmax at the square of the scale",
        "applied twice",
    ),
    Mutant(
        "attention_decode.empty-split-returns-early",
        "attention_decode",
        ATTN,
        "    end = tl.minimum(start + chunk, length)  # filled positions of this chunk only\n",
        "    end = tl.minimum(start + chunk, length)  # filled positions of this chunk only\n"
        "    if end <= start:  # nothing filled here: nothing to do\n"
        "        return\n",
        "a split whose chunk holds no filled position returns at once: its partials, max and sum are never "
        "written and the merge reads whatever the scratch held",
        "empty part left unwritten",
    ),
    Mutant(
        "linear.gemv.empty-split-stores-nothing",
        "linear",
        LINEAR,
        "        tl.store(part_ptr + (pid_k * M + pid_m) * N + offs_n, y, mask=mask_n)\n",
        "        tl.store(part_ptr + (pid_k * M + pid_m) * N + offs_n, y, mask=mask_n & (k_start < K))\n",
        "a gemv split whose slice starts past K stores no partial sums (there were none to add): the merge reads "
        "what the scratch held",
        "empty part left unwritten",
        variants=GEMV,
    ),
    Mutant(
        "linear.skinny.empty-slice-stores-nothing",
        "linear",
        LINEAR,
        "tl.store(part_ptr + (pid_k * M + offs_m[:, None]) * N + offs_n[None, :], acc, mask=in_y)",
        "tl.store(part_ptr + (pid_k * M + offs_m[:, None]) * N + offs_n[None, :], acc, mask=in_y & (k_first < K))",
        "a skinny slice that starts past K stores no partial sums: the merge reads what the scratch held",
        "empty part left unwritten",
        variants=SKINNY,
    ),
    Mutant(
        "linear.merge-last.gemv-counter-per-column-block",
        "linear",
        LINEAR,
        "counter_ptr + pid_m * tl.num_programs(0) + pid_n, b_ptr + offs_n, mask_n,",
        "counter_ptr + pid_n, b_ptr + offs_n, mask_n,",
        'gemv\'s MERGE "last" counts arrivals per column block, not per (row, column block): the rows of a batch '
        "share a counter, and a row merges when another row's splits have arrived",
        "scratch shared between tiles",
        variants=GEMV,
    ),
    Mutant(
        "linear.merge-last.skinny-counter-per-row-block",
        "linear",
        LINEAR,
        "counter_ptr + pid_m * tl.num_programs(0) + pid_n, b_ptr + offs_n[None, :],",
        "counter_ptr + pid_m, b_ptr + offs_n[None, :],",
        'skinny\'s MERGE "last" counts arrivals per row block: the column blocks share a counter, and a tile '
        "merges when another tile's splits have arrived",
        "scratch shared between tiles",
        variants=SKINNY,
    ),
    Mutant(
        "attention_decode.max-shared-by-the-group",
        "attention_decode",
        ATTN,
        "        m_new = tl.maximum(m_i, tl.max(qk, axis=1))\n"
        "        alpha = tl.exp2(m_i - m_new)\n        p = tl.exp2(qk",
        "        m_new = tl.maximum(m_i, tl.max(tl.max(qk, axis=1), axis=0))\n"
        "        alpha = tl.exp2(m_i - m_new)\n        p = tl.exp2(qk",
        "the query heads of a kv head share one running max (the largest over the group, padding heads "
        "included): the same softmax until one head's scores lie far below another's, then its weights underflow",
        "statistic shared between rows",
    ),
    Mutant(
        "attention_prefill.max-shared-by-the-rows",
        "attention_prefill",
        ATTN,
        "    m_next = tl.maximum(m_i, tl.max(logits, axis=1))\n",
        "    m_next = tl.maximum(m_i, tl.max(tl.max(logits, axis=1), axis=0))\n",
        "the queries of a block share one running max (the largest over the block): the same softmax until one "
        "query's scores lie far below another's, then its weights underflow",
        "statistic shared between rows",
    ),
    Mutant(
        "attention_prefill.even-d-by-sixteen",
        "attention_prefill",
        ATTN,
        "m_i, l_i, acc, scale_log2, PRECISION, BLOCK_N, False, D == BLOCK_D)",
        "m_i, l_i, acc, scale_log2, PRECISION, BLOCK_N, False, D % 16 == 0)",
        "whole key blocks loaded without the head-dim mask whenever D is a multiple of 16, not only when it "
        "fills its power-of-two block (D = 48, 80, 96, 112 read past each head)",
        "load without its mask",
    ),
    Mutant(
        "rms_norm.sum-of-squares-over-the-block",
        "rms_norm",
        NORM,
        "    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)",
        "    rstd = 1.0 / tl.sqrt(tl.sum(tl.sum(h * h, axis=1), axis=0) / (N * tl.minimum(M - pid * BLOCK_M, BLOCK_M))"
        " + eps + tl.zeros((BLOCK_M,), dtype=tl.float32))",
        "the mean of squares taken over every row of the program's block: right only for one row a program, "
        "or rows of one scale",
        "statistic shared between rows",
    ),
    # ----------------------------------------------------------------------------------- greedy_pick (2026-12-04)
    Mutant(
        "greedy_pick.last-index-on-ties",
        "greedy_pick",
        PICK,
        "first_largest = tl.min(tl.where(inside & (x == largest), offs, V), axis=0)",
        "first_largest = tl.max(tl.where(inside & (x == largest), offs, -1), axis=0)",
        "a part's last index of its largest value, where argmax takes the first",
        "wrong indexing",
        fast=True,
    ),
    Mutant(
        "greedy_pick.nan-not-largest",
        "greedy_pick",
        PICK,
        "    has_nan = first_nan < V\n",
        "    has_nan = first_nan < 0\n",
        "NaN skipped as a number smaller than all, where argmax takes a NaN for the largest",
        "wrong formula",
    ),
    Mutant(
        "greedy_pick.mask-off-by-one",
        "greedy_pick",
        PICK,
        "    inside = offs < V\n",
        "    inside = offs < V - 1\n",
        "the row's last logit never read: a token in the last place is missed",
        "mask off by one",
    ),
    Mutant(
        "greedy_pick.length-not-moved",
        "greedy_pick",
        PICK,
        "        tl.store(state_ptr + stride_state + row, tl.load(state_ptr + stride_state + row) + 1)  # the length\n",
        "",
        "the position moved on, the cache length not: the next step attends one position short",
        "wrong formula",
    ),
    Mutant(
        "greedy_pick.counter-not-reset",
        "greedy_pick",
        PICK,
        '        tl.atomic_xchg(counter_ptr + row, 0, sem="relaxed", scope="gpu")\n',
        "",
        "the arrival counter left at its count: the next launch's last part is never last, no token written",
        "state not reset between launches",
    ),
    Mutant(
        "greedy_pick.first-arrival-picks",
        "greedy_pick",
        PICK,
        "    if arrived == parts - 1:",
        "    if arrived == 0:",
        "the first part to arrive picks, from parts not yet written",
        "merged before every part arrived",
    ),
    Mutant(
        "greedy_pick.counter-shared-between-rows",
        "greedy_pick",
        PICK,
        'arrived = tl.atomic_add(counter_ptr + row, 1, sem="acq_rel", scope="gpu")',
        'arrived = tl.atomic_add(counter_ptr, 1, sem="acq_rel", scope="gpu")',
        "one arrival counter for every row: a row picks when another row's parts have arrived",
        "scratch shared between tiles",
    ),
    Mutant(
        "greedy_pick.wait-dropped",
        "greedy_pick",
        PICK,
        "    dependent_launch(PDL)\n    part = tl.program_id(0)\n",
        "    part = tl.program_id(0)\n",
        "PDL's wait dropped: under PDL the logits are read before the output projection that writes them has finished",
        "dependent launch misplaced",
    ),
    # ------------------------------------ round 15 (2026-12-04): memory safety and masking the interpreter may hide
    # masked loads without a fill: the interpreter fills their masked lanes with 0, a GPU leaves them undefined
    Mutant(
        "linear.gemv.x-without-fill",
        "linear",
        LINEAR,
        "        x = tl.load(x_ptr + pid_m * stride_xm + offs_k, mask=mask_k, other=0.0).to(tl.float32)\n",
        "        x = tl.load(x_ptr + pid_m * stride_xm + offs_k, mask=mask_k).to(tl.float32)\n",
        "gemv loads x without a fill for the lanes past its K slice: 0 x 0 on the interpreter, undefined x 0 on a GPU",
        "wrong fill value",
        variants=GEMV,
    ),
    Mutant(
        "linear.gemv.w-without-fill",
        "linear",
        LINEAR,
        "        w = tl.load(w_ptrs, mask=mask_n[:, None] & mask_k[None, :], other=0.0).to(tl.float32)\n",
        "        w = tl.load(w_ptrs, mask=mask_n[:, None] & mask_k[None, :]).to(tl.float32)\n",
        "gemv loads W without a fill for the lanes past its K slice",
        "wrong fill value",
        variants=GEMV,
    ),
    Mutant(
        "linear.skinny.x-without-fill",
        "linear",
        LINEAR,
        "mask=in_m[:, None] & in_k[None, :],\n                    other=0.0)\n",
        "mask=in_m[:, None] & in_k[None, :],\n                    )\n",
        "skinny loads its x tile without a fill: the K lanes past the slice enter the dot as whatever was there",
        "wrong fill value",
        variants=SKINNY,
    ),
    Mutant(
        "linear.skinny.w-without-fill",
        "linear",
        LINEAR,
        "mask=in_k[:, None] & in_n[None, :],\n                    other=0.0)  # a [BLOCK_K, BLOCK_N] tile",
        "mask=in_k[:, None] & in_n[None, :],\n                    )  # a [BLOCK_K, BLOCK_N] tile",
        "skinny loads its W tile without a fill",
        "wrong fill value",
        variants=SKINNY,
    ),
    Mutant(
        "linear.tiled.x-without-fill",
        "linear",
        LINEAR,
        "        a = tl.load(x_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)\n",
        "        a = tl.load(x_ptrs, mask=mask_m[:, None] & mask_k[None, :])\n",
        "tiled loads its x tile without a fill: the last K block's lanes past K enter the dot undefined",
        "wrong fill value",
        variants=TILED,
    ),
    Mutant(
        "linear.tiled.w-without-fill",
        "linear",
        LINEAR,
        "        b = tl.load(w_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)\n",
        "        b = tl.load(w_ptrs, mask=mask_k[:, None] & mask_n[None, :])\n",
        "tiled loads its W tile without a fill",
        "wrong fill value",
        variants=TILED,
    ),
    Mutant(
        "rms_norm.x-without-fill",
        "rms_norm",
        NORM,
        "    h = tl.load(x_ptr + offs_m[:, None] * stride_x + offs_n[None, :], mask=mask, other=0.0).to(tl.float32)\n",
        "    h = tl.load(x_ptr + offs_m[:, None] * stride_x + offs_n[None, :], mask=mask).to(tl.float32)\n",
        "x loaded without a fill: the columns past N enter the mean square undefined",
        "wrong fill value",
    ),
    Mutant(
        "rms_norm.residual-without-fill",
        "rms_norm",
        NORM,
        "stride_r + offs_n[None, :], mask=mask, other=0.0).to(tl.float32)\n",
        "stride_r + offs_n[None, :], mask=mask).to(tl.float32)\n",
        "the residual loaded without a fill: the columns past N enter the mean square undefined",
        "wrong fill value",
    ),
    Mutant(
        "attention_prefill.v-diagonal-without-fill",
        "attention_prefill",
        ATTN,
        "        vb = tl.load(v_ptrs, mask=inside[:, None] & mask_d[None, :], other=0.0)\n",
        "        vb = tl.load(v_ptrs, mask=inside[:, None] & mask_d[None, :])\n",
        "the diagonal block's v rows past S loaded without a fill: weight 0 times undefined",
        "wrong fill value",
    ),
    Mutant(
        "attention_chunk.k-diagonal-without-fill",
        "attention_chunk",
        ATTN,
        "        kt = tl.load(k_ptrs, mask=mask_d[:, None] & inside[None, :], other=0.0)\n",
        "        kt = tl.load(k_ptrs, mask=mask_d[:, None] & inside[None, :])\n",
        "the diagonal block's k loaded without a fill: the head-dim lanes past D enter q . k undefined",
        "wrong fill value",
    ),
    Mutant(
        "attention_decode.v-without-fill",
        "attention_decode",
        ATTN,
        "offs_d[None, :], mask=mask_n[:, None] & mask_d[None, :],\n                    other=0.0)\n",
        "offs_d[None, :], mask=mask_n[:, None] & mask_d[None, :])\n",
        "decode loads v without a fill: the positions past the chunk's end enter p @ v undefined (times weight 0)",
        "wrong fill value",
    ),
    # loads one past the end, or with a mask dropped, whose values no stored result uses: harmless on the
    # interpreter (a guard region's NaN lands in a lane that is never stored), an out-of-bounds read on a GPU
    Mutant(
        "silu_mul.loads-one-row-past",
        "silu_mul",
        SILU,
        "    g = tl.load(g_ptrs, mask=mask, other=0.0).to(tl.float32)\n"
        "    u = tl.load(g_ptrs + I, mask=mask, other=0.0).to(tl.float32)\n",
        "    in_load = (offs_m[:, None] <= M) & (offs_i[None, :] < I)\n"
        "    g = tl.load(g_ptrs, mask=in_load, other=0.0).to(tl.float32)\n"
        "    u = tl.load(g_ptrs + I, mask=in_load, other=0.0).to(tl.float32)\n",
        "the loads' row mask is <= M, the store's < M: row M is read past the end of gu and never stored",
        "mask off by one",
    ),
    Mutant(
        "silu_mul.up-without-column-mask",
        "silu_mul",
        SILU,
        "    u = tl.load(g_ptrs + I, mask=mask, other=0.0).to(tl.float32)\n",
        "    u = tl.load(g_ptrs + I, mask=offs_m[:, None] < M, other=0.0).to(tl.float32)\n",
        "the up half loaded with the row mask only: the last block's columns past I read past the row (and the "
        "last row past gu's end), never stored",
        "load without its mask",
    ),
    Mutant(
        "rms_norm.loads-one-row-past",
        "rms_norm",
        NORM,
        "    h = tl.load(x_ptr + offs_m[:, None] * stride_x + offs_n[None, :], mask=mask, other=0.0).to(tl.float32)\n",
        "    h = tl.load(x_ptr + offs_m[:, None] * stride_x + offs_n[None, :],\n"
        "                mask=(offs_m[:, None] <= M) & mask_n[None, :], other=0.0).to(tl.float32)\n",
        "x loaded with a row mask <= M (the stores keep < M): row M is read past the end of x and never stored",
        "mask off by one",
    ),
    Mutant(
        "rms_norm.weight-without-mask",
        "rms_norm",
        NORM,
        "    w = tl.load(w_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)\n",
        "    w = tl.load(w_ptr + offs_n).to(tl.float32)\n",
        "gamma loaded without its mask: BLOCK_N elements read past a weight of N, the columns past N never stored",
        "load without its mask",
        fast=True,
    ),
    Mutant(
        "linear.gemv.bias-without-mask",
        "linear",
        LINEAR,
        "            y += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)\n"
        "        tl.store(y_ptr + pid_m * stride_ym + offs_n, y.to(y_ptr.dtype.element_ty), mask=mask_n)\n"
        "    else:",
        "            y += tl.load(b_ptr + offs_n).to(tl.float32)\n"
        "        tl.store(y_ptr + pid_m * stride_ym + offs_n, y.to(y_ptr.dtype.element_ty), mask=mask_n)\n"
        "    else:",
        "gemv's bias loaded without its mask: the last block reads past the bias, its lanes never stored",
        "load without its mask",
        variants=GEMV,
    ),
    Mutant(
        "linear.tiled.bias-without-mask",
        "linear",
        LINEAR,
        "        accumulator += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)[None, :]\n",
        "        accumulator += tl.load(b_ptr + offs_n).to(tl.float32)[None, :]\n",
        "tiled's bias loaded without its mask: the last column block reads past the bias, never stored",
        "load without its mask",
        variants=TILED,
    ),
    Mutant(
        "linear.skinny.x-without-row-mask",
        "linear",
        LINEAR,
        "offs_k[None, :], mask=in_m[:, None] & in_k[None, :],\n",
        "offs_k[None, :], mask=in_k[None, :],\n",
        "skinny reads BLOCK_M rows of x whatever M: the rows past M are read past x's end, their results never stored",
        "load without its mask",
        variants=SKINNY,
    ),
    Mutant(
        "linear.tiled.w-without-column-mask",
        "linear",
        LINEAR,
        "        b = tl.load(w_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)\n",
        "        b = tl.load(w_ptrs, mask=mask_k[:, None], other=0.0)\n",
        "tiled reads BLOCK_N rows of W whatever N: the last column block reads past W, its columns never stored",
        "load without its mask",
        variants=TILED,
    ),
    Mutant(
        "attention_prefill.q-without-row-mask",
        "attention_prefill",
        ATTN,
        "                mask=mask_c[:, None] & mask_d[None, :], other=0.0)\n    k_base",
        "                mask=mask_d[None, :], other=0.0)\n    k_base",
        "q loaded for BLOCK_M queries whatever C: the last block's rows past C read past q, never stored",
        "load without its mask",
    ),
    Mutant(
        "attention_decode.q-without-group-mask",
        "attention_decode",
        ATTN,
        "                mask=mask_g[:, None] & mask_d[None, :], other=0.0)  # [BLOCK_G, BLOCK_D]\n",
        "                mask=mask_d[None, :], other=0.0)  # [BLOCK_G, BLOCK_D]\n",
        "decode loads BLOCK_G query heads whatever G: the last kv head's block reads past q, its rows never stored",
        "load without its mask",
    ),
    Mutant(
        "attention_decode.k-one-past-end",
        "attention_decode",
        ATTN,
        "stride_ks + offs_d[:, None], mask=mask_d[:, None] & mask_n[None, :],\n",
        "stride_ks + offs_d[:, None], mask=mask_d[:, None] & (offs_n <= end)[None, :],\n",
        "k loaded one position past the chunk's end (its score is masked to -inf after): at a full cache, past it",
        "mask off by one",
    ),
    Mutant(
        "rotary.v-without-head-mask",
        "rotary",
        ROTARY,
        "offs_h[:, None] * stride_vh + offs_e[None, :],\n                        mask=mask)\n",
        "offs_h[:, None] * stride_vh + offs_e[None, :],\n                        mask=offs_e[None, :] < 2 * HALF)\n",
        "v copied for BLOCK_H heads whatever Hkv: the last token's heads past Hkv are read past v, never stored",
        "load without its mask",
    ),
    # stores whose tail the interpreter's program order repairs, and strides equal where the draws are square
    Mutant(
        "attention_decode.sums-store-without-mask",
        "attention_decode",
        ATTN,
        "        tl.store(ml_ptr + tl.num_programs(0) * G * SPLITS + row, l_i, mask=mask_g)\n",
        "        tl.store(ml_ptr + tl.num_programs(0) * G * SPLITS + row, l_i)\n",
        "each split's sums stored for BLOCK_G heads: lanes past G land on the next kv head's rows (rewritten by its "
        "program if it runs later) and past the scratch for the last",
        "store without mask",
    ),
    Mutant(
        "attention_decode.k-seq-and-head-strides-swapped",
        "attention_decode",
        ATTN,
        "    k_base = k_ptr + b * stride_kb + kv_h * stride_kh\n"
        "    v_base = v_ptr + b * stride_vb + kv_h * stride_vh\n\n"
        "    m_i = tl.full((BLOCK_G,)",
        "    k_base = k_ptr + b * stride_kb + kv_h * stride_ks\n"
        "    v_base = v_ptr + b * stride_vb + kv_h * stride_vh\n"
        "    stride_ks = stride_kh\n\n"
        "    m_i = tl.full((BLOCK_G,)",
        "the k cache's position and head strides swapped: the same where there is one kv head",
        "wrong stride",
    ),
    Mutant(
        "rotary.q-seq-and-head-strides-swapped",
        "rotary",
        ROTARY,
        "        _rotate_heads(q_ptr, qo_ptr, b, s, s, pid_h * BLOCK_H, HQ, stride_qb, stride_qs, stride_qh,\n",
        "        _rotate_heads(q_ptr, qo_ptr, b, s, s, pid_h * BLOCK_H, HQ, stride_qb, stride_qh, stride_qs,\n",
        "q read with its position and head strides swapped: the same at one token of one head",
        "wrong stride",
    ),
    # ---------------------------- round 16 (2026-12-04): greedy_pick, written without reading the eight above
    Mutant(
        "greedy_pick.merge-last-part-on-ties",
        "greedy_pick",
        PICK,
        "        best_index = tl.min(tl.where(held & ~part_nan & (v == best), i, V), axis=0)\n",
        "        best_index = tl.max(tl.where(held & ~part_nan & (v == best), i, -1), axis=0)\n",
        "the merge takes the last part holding the row's largest value, where argmax takes the first part",
        "wrong indexing",
    ),
    Mutant(
        "greedy_pick.merge-ignores-nan",
        "greedy_pick",
        PICK,
        "        token = tl.where(nan_index < V, nan_index, best_index)\n",
        "        token = best_index\n",
        "the merge picks the largest number among the parts, never a part's NaN",
        "wrong formula",
    ),
    Mutant(
        "greedy_pick.merge-last-nan-part",
        "greedy_pick",
        PICK,
        "        nan_index = tl.min(tl.where(part_nan, i, V), axis=0)  # parts in order: the row's first NaN\n",
        "        nan_index = tl.max(tl.where(part_nan, i, -1), axis=0)\n"
        "        nan_index = tl.where(nan_index < 0, V, nan_index)\n",
        "the merge takes the last part holding a NaN, where argmax takes the row's first NaN",
        "wrong indexing",
    ),
    Mutant(
        "greedy_pick.part-last-nan",
        "greedy_pick",
        PICK,
        "    first_nan = tl.min(tl.where(nan, offs, V), axis=0)\n",
        "    first_nan = tl.max(tl.where(nan, offs, -1), axis=0)\n"
        "    first_nan = tl.where(first_nan < 0, V, first_nan)\n",
        "a part's last NaN, where argmax takes its first",
        "wrong indexing",
    ),
    Mutant(
        "greedy_pick.part-nan-value-dropped",
        "greedy_pick",
        PICK,
        '    tl.store(picks + part, tl.where(has_nan, float("nan"), largest))\n',
        "    tl.store(picks + part, largest)\n",
        "a part holding a NaN stores its largest number with the NaN's index: the merge weighs it as a number",
        "wrong formula",
    ),
    Mutant(
        "greedy_pick.tail-filled-with-zero",
        "greedy_pick",
        PICK,
        'x = tl.load(logits_ptr + row * stride_logits + offs, mask=inside, other=float("-inf"))',
        "x = tl.load(logits_ptr + row * stride_logits + offs, mask=inside, other=0.0)",
        "the last part's lanes past V filled with 0: a row whose numbers are all below 0 picks no index (V)",
        "wrong fill value",
    ),
    Mutant(
        "greedy_pick.tail-filled-with-lowest-float",
        "greedy_pick",
        PICK,
        'x = tl.load(logits_ptr + row * stride_logits + offs, mask=inside, other=float("-inf"))',
        "x = tl.load(logits_ptr + row * stride_logits + offs, mask=inside, other=-3.4028234663852886e38)",
        "the last part's lanes past V filled with float32's lowest number, not -inf: a row of -inf picks no index",
        "wrong fill value",
    ),
    Mutant(
        "greedy_pick.merge-fill-zero",
        "greedy_pick",
        PICK,
        '        v = tl.load(picks + p, mask=held, other=float("-inf"), cache_modifier=".cg")\n',
        '        v = tl.load(picks + p, mask=held, other=0.0, cache_modifier=".cg")\n',
        "the merge's lanes past the row's parts (PARTS is a power of two) filled with 0, not -inf",
        "wrong fill value",
    ),
    Mutant(
        "greedy_pick.merge-one-part-too-many",
        "greedy_pick",
        PICK,
        "        held = p < parts\n",
        "        held = p <= parts\n",
        "the merge reads one part past the row's: the first index read as a value, the next row's values as indices",
        "mask off by one",
    ),
    Mutant(
        "greedy_pick.position-moved-by-every-part",
        "greedy_pick",
        PICK,
        "    if arrived == parts - 1:  # the row's last part to arrive: the first part holding the row's pick\n"
        "        p = tl.arange(0, PARTS)\n"
        "        held = p < parts\n"
        '        v = tl.load(picks + p, mask=held, other=float("-inf"), cache_modifier=".cg")\n'
        '        i = tl.load(picks + parts + p, mask=held, other=V, cache_modifier=".cg").to(tl.int32)\n'
        "        part_nan = v != v\n"
        "        nan_index = tl.min(tl.where(part_nan, i, V), axis=0)  # parts in order: the row's first NaN\n"
        '        best = tl.max(tl.where(part_nan, float("-inf"), v), axis=0)\n'
        "        best_index = tl.min(tl.where(held & ~part_nan & (v == best), i, V), axis=0)\n"
        "        token = tl.where(nan_index < V, nan_index, best_index)\n"
        "        tl.store(tokens_ptr + row * stride_tokens, token.to(tokens_ptr.dtype.element_ty))\n"
        "        tl.store(state_ptr + row, tl.load(state_ptr + row) + 1)  # the position\n",
        "    tl.store(state_ptr + row, tl.load(state_ptr + row) + 1)  # the position, by every part\n"
        "    if arrived == parts - 1:  # the row's last part to arrive: the first part holding the row's pick\n"
        "        p = tl.arange(0, PARTS)\n"
        "        held = p < parts\n"
        '        v = tl.load(picks + p, mask=held, other=float("-inf"), cache_modifier=".cg")\n'
        '        i = tl.load(picks + parts + p, mask=held, other=V, cache_modifier=".cg").to(tl.int32)\n'
        "        part_nan = v != v\n"
        "        nan_index = tl.min(tl.where(part_nan, i, V), axis=0)  # parts in order: the row's first NaN\n"
        '        best = tl.max(tl.where(part_nan, float("-inf"), v), axis=0)\n'
        "        best_index = tl.min(tl.where(held & ~part_nan & (v == best), i, V), axis=0)\n"
        "        token = tl.where(nan_index < V, nan_index, best_index)\n"
        "        tl.store(tokens_ptr + row * stride_tokens, token.to(tokens_ptr.dtype.element_ty))\n",
        "the position moved on by every part (outside the last arrival's branch): by the row's part count",
        "applied twice",
    ),
    Mutant(
        "greedy_pick.length-from-position",
        "greedy_pick",
        PICK,
        "        tl.store(state_ptr + stride_state + row, tl.load(state_ptr + stride_state + row) + 1)  # the length\n",
        "        tl.store(state_ptr + stride_state + row, tl.load(state_ptr + row) + 1)  # the length\n",
        "the cache length written as the old position plus one: right only where the two are equal",
        "wrong formula",
    ),
    Mutant(
        "greedy_pick.state-stride-as-rows",
        "greedy_pick",
        PICK,
        "        tl.store(state_ptr + stride_state + row, tl.load(state_ptr + stride_state + row) + 1)  # the length\n",
        "        tl.store(state_ptr + B + row, tl.load(state_ptr + B + row) + 1)  # the length\n",
        "the state's length row found B after its position row: right only for a contiguous state",
        "wrong stride",
    ),
    Mutant(
        "greedy_pick.tokens-stride-dropped",
        "greedy_pick",
        PICK,
        "        tl.store(tokens_ptr + row * stride_tokens, token.to(tokens_ptr.dtype.element_ty))\n",
        "        tl.store(tokens_ptr + row, token.to(tokens_ptr.dtype.element_ty))\n",
        "the tokens taken as contiguous: right only for tokens [B, 1] of their own",
        "wrong stride",
    ),
    Mutant(
        "greedy_pick.logits-row-stride-as-vocab",
        "greedy_pick",
        PICK,
        "B, V, logits.stride(0), tokens.stride(0),",
        "B, V, V, tokens.stride(0),",
        "the logits' row stride taken as V: right only for rows without padding",
        "wrong stride",
    ),
    Mutant(
        "greedy_pick.every-row-reads-the-first",
        "greedy_pick",
        PICK,
        'x = tl.load(logits_ptr + row * stride_logits + offs, mask=inside, other=float("-inf"))',
        'x = tl.load(logits_ptr + offs, mask=inside, other=float("-inf"))',
        "every row picks from the first row's logits",
        "wrong indexing",
    ),
    Mutant(
        "greedy_pick.parts-floored",
        "greedy_pick",
        PICK,
        '    parts = triton.cdiv(V, meta["BLOCK_V"])\n',
        '    parts = max(V // meta["BLOCK_V"], 1)\n',
        "the parts counted with a floor: the vocabulary's tail past the last whole BLOCK_V is never read",
        "tail dropped",
    ),
    Mutant(
        "greedy_pick.picks-in-logits-dtype",
        "greedy_pick",
        PICK,
        "    picks = empty((B, 2, parts), dtype=torch.float32, device=logits.device)\n",
        "    picks = empty((B, 2, parts), dtype=logits.dtype, device=logits.device)\n",
        "the parts' picks kept in the logits' dtype: an index is exact only below 2,048 (fp16) or 256 (bf16)",
        "wrong output dtype",
    ),
    Mutant(
        "greedy_pick.reset-first-row-only",
        "greedy_pick",
        PICK,
        '        tl.atomic_xchg(counter_ptr + row, 0, sem="relaxed", scope="gpu")\n',
        '        tl.atomic_xchg(counter_ptr, 0, sem="relaxed", scope="gpu")\n',
        "only the first row's counter reset: the next launch's later rows never see their last part",
        "state not reset between launches",
    ),
    # ------------------------------------------------ round 27: classes and places the registry did not plant yet
    Mutant(
        "attention_prefill.softmax-without-max",
        "attention_prefill",
        ATTN,
        "    m_next = tl.maximum(m_i, tl.max(logits, axis=1))\n",
        "    m_next = tl.maximum(m_i, 0.0)\n",
        "flash softmax weighs 2^logit without the running max subtracted: P (rounded to v's dtype) overflows once a "
        "logit passes 16 (fp16) or 128 (fp32) in log2 units",
        "overflow at large magnitudes",
    ),
    Mutant(
        "attention_decode.softmax-without-max",
        "attention_decode",
        ATTN,
        "        m_new = tl.maximum(m_i, tl.max(qk, axis=1))\n",
        "        m_new = tl.maximum(m_i, 0.0)\n",
        "decode's split softmax without the running max: 2^score overflows for large scores",
        "overflow at large magnitudes",
    ),
    Mutant(
        "attention_decode.merge-without-max",
        "attention_decode",
        ATTN,
        "    weight = tl.exp2(m - tl.max(m, axis=0))  # chunk c's share: 2^(m_c - max m)\n",
        "    weight = tl.exp2(m)  # chunk c's share: 2^(m_c - max m)\n",
        "the merge weighs each split by 2^m_c, not 2^(m_c - max m): exact in real numbers, overflows in fp32",
        "overflow at large magnitudes",
    ),
    Mutant(
        "attention_chunk.whole-from-last-query",
        "attention_chunk",
        ATTN,
        "    whole = (past + block * BLOCK_M + 1) // BLOCK_N * BLOCK_N",
        "    whole = (past + (block + 1) * BLOCK_M) // BLOCK_N * BLOCK_N",
        "key blocks run unmasked up to the program's last query, not its first: earlier queries see later keys",
        "wrong loop bound",
    ),
    Mutant(
        "attention_chunk.past-of-padded-chunk",
        "attention_chunk",
        ATTN,
        "    past = S - C  # positions of the cache written by earlier chunks\n",
        "    past = S - tl.num_programs(1) * BLOCK_M  # positions of the cache written by earlier chunks\n",
        "the chunk's first position taken from its queries rounded up to whole blocks",
        "position off by one",
    ),
    Mutant(
        "attention_decode.group-maxima-store-without-mask",
        "attention_decode",
        ATTN,
        "        tl.store(ml_ptr + row, m_i, mask=mask_g)\n",
        "        tl.store(ml_ptr + row, m_i)\n",
        "the split maxima stored for the query-head block's lanes past G too (over the next kv head's rows)",
        "store without mask",
    ),
    Mutant(
        "linear.tiled.k-loop-one-short",
        "linear",
        LINEAR,
        "    for k0 in range(0, K, BLOCK_K):\n",
        "    for k0 in range(0, K - 1, BLOCK_K):\n",
        "tiled's K loop stops one short: a last K block of one element (K = 1 mod BLOCK_K) is never summed",
        "wrong loop bound",
        variants=TILED,
    ),
    Mutant(
        "linear.gemv.k-loop-one-short",
        "linear",
        LINEAR,
        "    for k0 in range(k_start, k_end, BLOCK_K):\n",
        "    for k0 in range(k_start, k_end - 1, BLOCK_K):\n",
        "gemv's K loop stops one short: a slice's last block of one element is never summed",
        "wrong loop bound",
        variants=GEMV,
    ),
    Mutant(
        "linear.skinny.k-loop-one-short",
        "linear",
        LINEAR,
        "    for k0 in range(k_first, k_last, BLOCK_K):\n",
        "    for k0 in range(k_first, k_last - 1, BLOCK_K):\n",
        "skinny's K loop stops one short: a slice's last block of one element is never summed",
        "wrong loop bound",
        variants=SKINNY,
    ),
    Mutant(
        "linear.tiled.last-group-full",
        "linear",
        LINEAR,
        "    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)\n"
        "    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)",
        "    group_size_m = GROUP_M\n    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)",
        "the last group of tile rows taken as GROUP_M rows: some of its tiles computed twice, others never",
        "wrong indexing",
        variants=TILED,
    ),
    Mutant(
        "rms_norm.block-from-n-minus-one",
        "rms_norm",
        NORM,
        "BLOCK_N=triton.next_power_of_2(N)",
        "BLOCK_N=triton.next_power_of_2(N - 1)",
        "the row block sized from N - 1: a row of 2^k + 1 loses its last column (a row of 1 an empty block)",
        "tail dropped",
    ),
    Mutant(
        "rms_norm.eps-squared",
        "rms_norm",
        NORM,
        "/ N + eps)",
        "/ N + eps * eps)",
        "eps squared (as if given as a standard deviation): rows whose mean square is near eps",
        "wrong eps placement",
    ),
    Mutant(
        "rms_norm.grid-floor",
        "rms_norm",
        NORM,
        '    programs = (triton.cdiv(M, meta["BLOCK_M"]),)\n',
        '    programs = (max(1, M // meta["BLOCK_M"]),)\n',
        "rows counted in whole blocks: the last partial block of rows never normalised",
        "wrong loop bound",
    ),
    Mutant(
        "rotary.second-half-at-block-width",
        "rotary",
        ROTARY,
        "    x2 = tl.load(src + HALF, mask=mask, other=0.0).to(tl.float32)\n",
        "    x2 = tl.load(src + BLOCK_HALF, mask=mask, other=0.0).to(tl.float32)\n",
        "the second half read BLOCK_HALF in: right only where D / 2 is a power of two",
        "wrong indexing",
    ),
    Mutant(
        "rotary.second-half-stored-at-block-width",
        "rotary",
        ROTARY,
        "    tl.store(dst + HALF, (x2 * c[None, :] + x1 * sn[None, :]).to(dst_ptr.dtype.element_ty), mask=mask)",
        "    tl.store(dst + BLOCK_HALF, (x2 * c[None, :] + x1 * sn[None, :]).to(dst_ptr.dtype.element_ty), mask=mask)",
        "the second half stored BLOCK_HALF in: right only where D / 2 is a power of two",
        "wrong indexing",
    ),
    Mutant(
        "rotary.k-branch-at-q-blocks",
        "rotary",
        ROTARY,
        "    if pid_h < q_blocks:\n",
        "    if pid_h <= q_blocks:\n",
        "the first block of k heads taken for a block of q heads (past HQ: nothing rotated)",
        "mask off by one",
    ),
    Mutant(
        "rotary.v-copy-at-block-width",
        "rotary",
        ROTARY,
        "            mask = (offs_h[:, None] < HKV) & (offs_e[None, :] < 2 * HALF)\n",
        "            mask = (offs_h[:, None] < HKV) & (offs_e[None, :] < 2 * BLOCK_HALF)\n",
        "the v copy masked at the block's width: past D into the next head's or position's row",
        "mask off by one",
    ),
    Mutant(
        "linear.skinny.row-blocks-of-n",
        "linear",
        LINEAR,
        "    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)\n    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n"
        "    in_m = offs_m < M\n",
        "    offs_m = pid_m * BLOCK_N + tl.arange(0, BLOCK_M)\n    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n"
        "    in_m = offs_m < M\n",
        "skinny's row blocks BLOCK_N apart: past the first block of rows, rows skipped",
        "wrong stride",
        variants=SKINNY,
    ),
    Mutant(
        "linear.tma.walk-stride-one-more",
        "linear",
        LINEAR,
        "    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, tl.num_programs(0), flatten=True):\n",
        "    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, tl.num_programs(0) + 1, flatten=True):\n",
        "the persistent walk strides one program too far: every (programs + 1)-th tile never computed",
        "wrong loop bound",
        variants=TMA,
    ),
    Mutant(
        "attention_prefill.diagonal-end-by-key-block",
        "attention_prefill",
        ATTN,
        "    end = tl.minimum(past + (block + 1) * BLOCK_M, S)\n",
        "    end = tl.minimum(past + block * BLOCK_M + BLOCK_N, S)\n",
        "the diagonal loop ends one key block past the program's first query, not at its last: where BLOCK_N < "
        "BLOCK_M the last queries miss their nearest keys (no chunk setting ships so; a prefill one does)",
        "wrong loop bound",
    ),
    Mutant(
        "rotary.second-half-from-stored-first",
        "rotary",
        ROTARY,
        "    tl.store(dst + HALF, (x2 * c[None, :] + x1 * sn[None, :]).to(dst_ptr.dtype.element_ty), mask=mask)",
        "    x1 = tl.load(dst, mask=mask, other=0.0).to(tl.float32)\n"
        "    tl.store(dst + HALF, (x2 * c[None, :] + x1 * sn[None, :]).to(dst_ptr.dtype.element_ty), mask=mask)",
        "the second half computed from the rotated first half just stored, not from x1",
        "wrong formula",
    ),
    Mutant(
        "silu_mul.row-grid-of-column-block",
        "silu_mul",
        SILU,
        '    programs = (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(I, meta["BLOCK_I"]))\n',
        '    programs = (triton.cdiv(M, meta["BLOCK_I"]), triton.cdiv(I, meta["BLOCK_I"]))\n',
        "the row grid counted in column blocks: rows past BLOCK_M x ceil(M / BLOCK_I) never computed",
        "wrong loop bound",
    ),
    Mutant(
        "greedy_pick.part-value-in-fp16",
        "greedy_pick",
        PICK,
        '    tl.store(picks + part, tl.where(has_nan, float("nan"), largest))\n',
        '    tl.store(picks + part, tl.where(has_nan, float("nan"), largest).to(tl.float16).to(tl.float32))\n',
        "a part's largest value kept in fp16 for the merge: fp32 logits whose two largest, in different parts, differ "
        "below fp16's precision tie there, and the earlier part wins",
        "extra rounding",
        fast=True,
    ),
    # --------------------------------------------------------------- kmut2: lines no earlier anchor reached
    Mutant(
        "linear.tma.bias-mask-off-by-one",
        "linear",
        LINEAR,
        "            accumulator += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0)",
        "            accumulator += tl.load(b_ptr + offs_n, mask=offs_n < N - 1, other=0.0)",
        "tma's bias mask one short: the last output column gets no bias",
        "mask off by one",
        variants=TMA,
    ),
    Mutant(
        "linear.tma_split.unsplit-bias-mask-off-by-one",
        "linear",
        LINEAR,
        "                acc += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0)",
        "                acc += tl.load(b_ptr + offs_n, mask=offs_n < N - 1, other=0.0)",
        "tma_split's bias mask (SPLIT_K 1) one short: the last output column gets no bias",
        "mask off by one",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.bias-before-split-merge",
        "linear",
        LINEAR,
        "            offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)\n            in_y =",
        "            if HAS_BIAS:  # every K slice carries the bias into its partial sums\n"
        "                acc += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]\n"
        "            offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)\n            in_y =",
        "tma_split adds the bias to each K slice's partial sums before the merge, which adds it again (SPLIT_K + 1 "
        "biases)",
        "applied twice",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.left-half-at-store-n-blocks",
        "linear",
        LINEAR,
        "                y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], left.to(y_desc.dtype))",
        "                y_desc.store([pid_m * BLOCK_M, pid_n * STORE_N], left.to(y_desc.dtype))",
        "the subtiled epilogue stores a tile's left half at its column block in STORE_N units: right only for the "
        "first column block",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.partials-without-row-mask",
        "linear",
        LINEAR,
        "            in_y = (offs_m < M)[:, None] & (offs_n < N)[None, :]",
        "            in_y = (offs_m < M + BLOCK_M)[:, None] & (offs_n < N)[None, :]",
        "tma_split's partial sums stored (and merged) without their row mask: a tile's rows past M land in the "
        "next slice's partials or past the scratch",
        "store without mask",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.partials-rounded",
        "linear",
        LINEAR,
        "            tl.store(tile_partials + (unit % SPLIT_K) * M * N, acc, mask=in_y)",
        "            tl.store(tile_partials + (unit % SPLIT_K) * M * N, acc.to(y_desc.dtype).to(tl.float32),"
        " mask=in_y)",
        "tma_split's K-slice partial sums rounded to the storage dtype before the merge",
        "extra rounding",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.merge-last.own-partial-twice",
        "linear",
        LINEAR,
        "        y = tl.zeros_like(acc)\n",
        "        y = acc  # the last arrival's own partial sums, then every split's\n",
        "MERGE \"last\" starts the sum at the last arrival's own partials and adds every split's: one split counted "
        "twice",
        "applied twice",
        variants=("gemv", "skinny", "tma_split"),
    ),
    Mutant(
        "linear.merge-last.store-without-mask",
        "linear",
        LINEAR,
        "        tl.store(y_ptrs, y.to(y_ptrs.dtype.element_ty), mask=mask)",
        "        tl.store(y_ptrs, y.to(y_ptrs.dtype.element_ty))",
        'MERGE "last" stores y without its mask: columns past N (and rows past M) written',
        "store without mask",
        variants=("gemv", "skinny", "tma_split"),
    ),
    Mutant(
        "linear.gemv.merge-last-partials-of-row-zero",
        "linear",
        LINEAR,
        "            _merge_if_last(y, part_ptr + pid_m * N + offs_n, M * N, mask_n,",
        "            _merge_if_last(y, part_ptr + offs_n, M * N, mask_n,",
        "gemv's MERGE \"last\" sums the first row's partials for every row",
        "wrong indexing",
        variants=GEMV,
    ),
    Mutant(
        "linear.skinny.slice-end-not-clipped",
        "linear",
        LINEAR,
        "    k_last = tl.minimum(k_first + k_slice, K)\n",
        "    k_last = k_first + k_slice\n",
        "skinny's last K slice not clipped to K: it reads x and W past K",
        "wrong loop bound",
        variants=SKINNY,
    ),
    Mutant(
        "linear.skinny.column-mask-off-by-one",
        "linear",
        LINEAR,
        "    in_n = offs_n < N\n",
        "    in_n = offs_n <= N\n",
        "skinny's column mask one too long: W's row N read and y's column N written",
        "mask off by one",
        variants=SKINNY,
    ),
    Mutant(
        "linear.merge.column-mask-off-by-one",
        "linear",
        LINEAR,
        "    mask_n = offs_n < N\n    y = tl.zeros((BLOCK_N,), dtype=tl.float32)",
        "    mask_n = offs_n < N - 1\n    y = tl.zeros((BLOCK_N,), dtype=tl.float32)",
        "the split-K merge kernel's column mask one short: the last output column never stored",
        "mask off by one",
        variants=SPLIT,
    ),
    Mutant(
        "linear.tiled.w-row-stride-of-x",
        "linear",
        LINEAR,
        "    w_ptrs = w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None]  # a [BLOCK_K",
        "    w_ptrs = w_ptr + offs_n[None, :] * stride_xm + offs_k[:, None]  # a [BLOCK_K",
        "tiled reads W at x's row stride",
        "wrong stride",
        variants=TILED,
    ),
    Mutant(
        "attention_prefill.head-dim-unmasked-off-diagonal",
        "attention_prefill",
        ATTN,
        "                                     m_i, l_i, acc, scale_log2, PRECISION, BLOCK_N, False, D == BLOCK_D)",
        "                                     m_i, l_i, acc, scale_log2, PRECISION, BLOCK_N, False, True)",
        "the whole key blocks load k and v without the head-dim mask when D is less than its block",
        "load without its mask",
    ),
    Mutant(
        "attention_decode.one-split-store-without-group-mask",
        "attention_decode",
        ATTN,
        "        tl.store(part_ptr + row[:, None] * D + offs_d[None, :], out.to(part_ptr.dtype.element_ty),\n"
        "                 mask=mask_g[:, None] & mask_d[None, :])",
        "        tl.store(part_ptr + row[:, None] * D + offs_d[None, :], out.to(part_ptr.dtype.element_ty),\n"
        "                 mask=mask_d[None, :])",
        "decode with one split stores its output without the group mask: heads past G write the next group's rows",
        "store without mask",
    ),
    Mutant(
        "attention_decode.merge-partials-at-block-d",
        "attention_decode",
        ATTN,
        "    part = tl.load(part_ptr + (pid * SPLITS + offs_s[:, None]) * D + offs_d[None, :],",
        "    part = tl.load(part_ptr + (pid * SPLITS + offs_s[:, None]) * BLOCK_D + offs_d[None, :],",
        "the merge reads the partials BLOCK_D apart where the split kernel stored them D apart",
        "wrong stride",
    ),
    Mutant(
        "greedy_pick.parts-of-power-of-two",
        "greedy_pick",
        PICK,
        "    parts = tl.num_programs(0)\n",
        "    parts = PARTS\n",
        "the part count taken as PARTS, its power-of-two ceiling: where the row has fewer parts no part is ever the "
        "last to arrive",
        "wrong loop bound",
    ),
    Mutant(
        "rotary.positions-read-before-wait",
        "rotary",
        ROTARY,
        "    dependent_launch(PDL)\n    token = tl.program_id(0).to(tl.int64)\n    pid_h = tl.program_id(1)\n"
        "    b = token // S\n    s = token % S\n"
        "    pos = tl.load(pos_ptr + b * stride_pb + s * stride_ps).to(tl.int64)\n",
        "    token = tl.program_id(0).to(tl.int64)\n    pid_h = tl.program_id(1)\n"
        "    b = token // S\n    s = token % S\n"
        "    pos = tl.load(pos_ptr + b * stride_pb + s * stride_ps).to(tl.int64)\n"
        "    dependent_launch(PDL)\n",
        "rotary reads its position before the PDL wait: under PDL it may read a position its predecessor has not "
        "written",
        "dependent launch misplaced",
    ),
    Mutant(
        "linear.tma_split.wait-dropped",
        "linear",
        LINEAR,
        "    dependent_launch(PDL)\n    STORE_N: tl.constexpr",
        "    STORE_N: tl.constexpr",
        "tma_split never waits under PDL: it may read x before the kernel that writes it has finished",
        "dependent launch misplaced",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "rms_norm.dependent-launch-without-wait",
        "rms_norm",
        "neurobrix/ops/_common.py",
        "        tl.extra.cuda.gdc_wait()\n",
        "",
        "dependent_launch lets the successor launch but never waits for its predecessor: every kernel may read its "
        "inputs before they are written",
        "dependent launch misplaced",
    ),
    Mutant(
        "rotary.yarn-ramp-off-by-one",
        "rotary",
        ROTARY,
        "    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)",
        "    ramp = torch.clamp((torch.arange(1, dim // 2 + 1, dtype=torch.float32) - low) / (high - low), 0, 1)",
        "yarn's ramp counted from dim 1: every frequency of the blend one step along the ramp",
        "position off by one",
    ),
    Mutant(
        "rotary.yarn-not-truncated-by-default",
        "rotary",
        ROTARY,
        '    if scaling.get("truncate", True):',
        '    if scaling.get("truncate", False):',
        "yarn's correction dims kept fractional unless truncate is set: transformers floors and ceils them by default",
        "wrong formula",
    ),
    Mutant(
        "rotary.yarn-bounds-rounded-inward",
        "rotary",
        ROTARY,
        "        low, high = math.floor(low), math.ceil(high)",
        "        low, high = math.ceil(low), math.floor(high)",
        "yarn's correction dims rounded inward (ceil of the low, floor of the high) where transformers widens them",
        "wrong formula",
    ),
    Mutant(
        "rotary.yarn-correction-without-two",
        "rotary",
        ROTARY,
        "(rotations * 2 * math.pi)",
        "(rotations * math.pi)",
        "yarn's correction dim from rotations x pi, not 2 pi: the ramp one wavelength factor off",
        "wrong formula",
    ),
    Mutant(
        "rotary.yarn-attention-factor-log2",
        "rotary",
        ROTARY,
        "0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0",
        "0.1 * math.log2(factor) + 1.0 if factor > 1 else 1.0",
        "yarn's default attention factor from log2 of the factor, not its natural log",
        "wrong scale",
    ),
    Mutant(
        "rotary.yarn-beta-defaults-swapped",
        "rotary",
        ROTARY,
        '    beta_fast, beta_slow = scaling.get("beta_fast") or 32, scaling.get("beta_slow") or 1',
        '    beta_fast, beta_slow = scaling.get("beta_fast") or 1, scaling.get("beta_slow") or 32',
        "yarn's default beta_fast and beta_slow swapped: the ramp runs the other way where the config leaves them out",
        "wrong formula",
    ),
    Mutant(
        "rotary.yarn-factor-ignored",
        "rotary",
        ROTARY,
        "    slowed = 1.0 / (factor * pos_freqs)",
        "    slowed = 1.0 / pos_freqs",
        "yarn's slowed frequencies not divided by the factor: the blend keeps every frequency",
        "wrong scale",
    ),
    Mutant(
        "rotary.yarn-high-dim-not-clipped",
        "rotary",
        ROTARY,
        "    low, high = max(low, 0), min(high, dim - 1)",
        "    low, high = max(low, 0), high",
        "yarn's high correction dim not clipped to dim - 1: where it lies past the head the ramp is too shallow",
        "wrong formula",
    ),
    Mutant(
        "rotary.yarn-zero-width-unguarded",
        "rotary",
        ROTARY,
        "    if low == high:\n        high += 0.001  # transformers' guard against a ramp of zero width\n",
        "",
        "yarn's ramp of zero width not widened by 0.001: the dim at its place divides 0 by 0",
        "wrong formula",
    ),
    # ------------------------------------------------------------------ kmut4 (2026-12-05): paths none touched
    Mutant(
        "attention_prefill.output-eps-in-division",
        "attention_prefill",
        ATTN,
        "    result = acc / l_i[:, None]\n",
        "    result = acc / (l_i[:, None] + 1e-6)\n",
        "the flash output divided by its softmax sum plus a 'safe' 1e-6: every output shrunk by up to 1e-6 relative",
        "wrong eps placement",
    ),
    Mutant(
        "attention_chunk.o-head-stride-of-q",
        "attention_chunk",
        ATTN,
        "    tl.store(o_ptr + b * stride_ob + h * stride_oh + offs_c[:, None] * stride_os",
        "    tl.store(o_ptr + b * stride_ob + h * stride_qh + offs_c[:, None] * stride_os",
        "the output's heads stored at q's head stride: right only while q's heads are D apart",
        "wrong stride",
    ),
    Mutant(
        "attention_prefill.q-batch-stride-of-k",
        "attention_prefill",
        ATTN,
        "q_ptr + b * stride_qb + h * stride_qh",
        "q_ptr + b * stride_kb + h * stride_qh",
        "q's sequences read at k's batch stride: right only while q and k share a layout",
        "wrong stride",
    ),
    Mutant(
        "attention_chunk.diagonal-end-clipped-to-chunk",
        "attention_chunk",
        ATTN,
        "    end = tl.minimum(past + (block + 1) * BLOCK_M, S)\n",
        "    end = tl.minimum(past + (block + 1) * BLOCK_M, C)\n",
        "the diagonal loop's end clipped to the chunk's query count, not the keys: a chunk after the cache misses keys",
        "wrong loop bound",
    ),
    Mutant(
        "attention_decode.max-not-carried",
        "attention_decode",
        ATTN,
        "        m_i = m_new\n",
        "",
        "a split's new running max is not carried to its next key block: each block rescales from -inf",
        "skipped rescale",
    ),
    Mutant(
        "attention_decode.merge-eps-in-division",
        "attention_decode",
        ATTN,
        "/ tl.sum(l * weight, axis=0)",
        "/ (tl.sum(l * weight, axis=0) + 1e-6)",
        "the merge divides by the weighed softmax sum plus a 'safe' 1e-6",
        "wrong eps placement",
    ),
    Mutant(
        "attention_decode.length-of-program",
        "attention_decode",
        ATTN,
        "tl.load(len_ptr + b)",
        "tl.load(len_ptr + pid_bh)",
        "a program reads the length at its (batch x kv head) index, not its sequence's: right only for one kv head",
        "wrong indexing",
    ),
    Mutant(
        "attention_decode.merge-l-rows-without-splits",
        "attention_decode",
        ATTN,
        "part, ml, o, HQ, B * HQ * splits,",
        "part, ml, o, HQ, B * HQ,",
        "the merge finds the softmax sums B x Hq after the maxima, not B x Hq x SPLITS: it reads maxima as sums",
        "wrong indexing",
    ),
    Mutant(
        "attention_decode.q-head-stride-is-d",
        "attention_decode",
        ATTN,
        "heads[:, None] * stride_qh",
        "heads[:, None] * D",
        "q's heads taken as D apart: right only while q's heads are contiguous",
        "wrong stride",
    ),
    Mutant(
        "linear.merge.partials-row-major",
        "linear",
        LINEAR,
        "(k * M + pid_m) * N",
        "(pid_m * SPLIT_K + k) * N",
        "the merge reads the partials as [M, SPLIT_K, N] where the splits stored [SPLIT_K, M, N]: right only at M = 1",
        "wrong indexing",
        variants=SPLIT,
    ),
    Mutant(
        "linear.tiled.x-advanced-by-rows",
        "linear",
        LINEAR,
        "        x_ptrs += BLOCK_K\n",
        "        x_ptrs += BLOCK_K * stride_xm\n",
        "tiled moves x's pointers BLOCK_K rows on per K step, not BLOCK_K columns",
        "wrong stride",
        variants=TILED,
    ),
    Mutant(
        "linear.gemv.merge-last-split-stride-of-n",
        "linear",
        LINEAR,
        "part_ptr + pid_m * N + offs_n, M * N,",
        "part_ptr + pid_m * N + offs_n, N,",
        "gemv's MERGE \"last\" finds split k's partials k rows on, not k slices: right only at M = 1",
        "wrong indexing",
        variants=GEMV,
    ),
    Mutant(
        "linear.skinny.partials-at-row-block",
        "linear",
        LINEAR,
        "(pid_k * M + offs_m[:, None]) * N",
        "(pid_k * BLOCK_M + offs_m[:, None]) * N",
        "skinny's split partials placed BLOCK_M rows apart, where the merge reads them M rows apart",
        "wrong indexing",
        variants=SKINNY,
    ),
    Mutant(
        "greedy_pick.nan-by-equality",
        "greedy_pick",
        PICK,
        "    nan = x != x\n",
        '    nan = x == float("nan")\n',
        "a part tests NaN by equality with NaN (never true): a NaN logit is weighed as a number",
        "wrong formula",
    ),
    Mutant(
        "greedy_pick.merge-nan-by-equality",
        "greedy_pick",
        PICK,
        "part_nan = v != v",
        'part_nan = v == float("nan")',
        "the merge tests a part's NaN by equality with NaN (never true): a part's NaN is weighed as a number",
        "wrong formula",
    ),
    Mutant(
        "greedy_pick.merge-indices-at-parts-ceiling",
        "greedy_pick",
        PICK,
        "tl.load(picks + parts + p,",
        "tl.load(picks + PARTS + p,",
        "the merge reads the parts' indices PARTS (the power-of-two ceiling) on, where they were stored parts on",
        "wrong indexing",
    ),
    Mutant(
        "greedy_pick.nan-test-off-by-one",
        "greedy_pick",
        PICK,
        "token = tl.where(nan_index < V, nan_index, best_index)",
        "token = tl.where(nan_index <= V, nan_index, best_index)",
        "the merge's test for a NaN one long: a row without NaN gets the no-NaN marker V as its token",
        "mask off by one",
    ),
    Mutant(
        "rotary.llama3-medium-band-empty",
        "rotary",
        ROTARY,
        "medium = ~(wavelen < old_context / high)",
        "medium = ~(wavelen < old_context / low)",
        "rope_cache's Llama-3 medium band bounded by the low factor on both sides: no frequency is ever blended",
        "wrong formula",
    ),
    Mutant(
        "rotary.rotary-dim-ignored",
        "rotary",
        ROTARY,
        'dim = int((scaling or {}).get("rotary_dim", head_dim))',
        "dim = head_dim",
        "rope_cache's frequencies over the head dim, not a partial rotary factor's rotary_dim",
        "wrong formula",
    ),
    Mutant(
        "rotary.yarn-attention-factor-misnamed",
        "rotary",
        ROTARY,
        'attention_factor = scaling.get("attention_factor")',
        'attention_factor = scaling.get("attn_factor")',
        "yarn's attention factor read under another implementation's name: a config's own factor ignored",
        "wrong scale",
    ),
    Mutant(
        "silu_mul.column-blocks-of-m",
        "silu_mul",
        SILU,
        "offs_i = pid_i * BLOCK_I",
        "offs_i = pid_i * BLOCK_M",
        "column blocks BLOCK_M apart, not BLOCK_I: blocks overlap, the columns past BLOCK_M x blocks never computed",
        "wrong indexing",
    ),
    Mutant(
        "rms_norm.pdl-switch-off",
        "rms_norm",
        "neurobrix/ops/_common.py",
        "    launch.update(PDL=pdl, launch_pdl=pdl)\n",
        "    launch.update(PDL=False, launch_pdl=pdl)\n",
        "split launches with PDL but hands every kernel PDL=False: none waits for its predecessor, each may read its "
        "inputs before they are written",
        "dependent launch misplaced",
    ),
    Mutant(
        "rms_norm.y-without-residual",
        "rms_norm",
        NORM,
        "        h = h_rounded.to(tl.float32)\n",
        "",
        "the fused norm stores h = x + r but normalises x alone",
        "wrong residual",
    ),
    # --------------------------------------------- kmut5 (2026-12-05): the launchers' grids, workspaces, counters
    Mutant(
        "linear.split.column-grid-floor",
        "linear",
        LINEAR,
        '        programs = (triton.cdiv(N, meta["BLOCK_N"]), rows, split_k)\n',
        '        programs = (N // meta["BLOCK_N"], rows, split_k)\n',
        "gemv's and skinny's grid one column block short when BLOCK_N does not divide N: the last outputs "
        "never computed",
        "tail dropped",
        variants=SPLIT,
    ),
    Mutant(
        "linear.skinny.row-grid-floor",
        "linear",
        LINEAR,
        '        rows = M if variant == "gemv" else triton.cdiv(M, meta["BLOCK_M"])\n',
        '        rows = M if variant == "gemv" else max(1, M // meta["BLOCK_M"])\n',
        "skinny's grid one row block short when BLOCK_M does not divide M: the rows past the last whole "
        "block never computed",
        "tail dropped",
        variants=SKINNY,
    ),
    Mutant(
        "linear.split.workspace-one-split-short",
        "linear",
        LINEAR,
        "        part = empty((split_k, M, N), dtype=torch.float32, device=x.device) if split_k > 1 else y\n "
        "       rows",
        "        part = empty((split_k - 1, M, N), dtype=torch.float32, device=x.device) if split_k > 1 else "
        "y\n        rows",
        "the split-K partials' workspace sized one split short: the last split writes past it",
        "wrong indexing",
        variants=SPLIT,
    ),
    Mutant(
        "linear.split.workspace-in-x-dtype",
        "linear",
        LINEAR,
        "        part = empty((split_k, M, N), dtype=torch.float32, device=x.device) if split_k > 1 else y\n "
        "       rows",
        "        part = empty((split_k, M, N), dtype=x.dtype, device=x.device) if split_k > 1 else y\n        rows",
        "the split-K partials' workspace allocated in x's dtype: each partial rounded to fp16/bf16 before the merge",
        "extra rounding",
        variants=SPLIT,
    ),
    Mutant(
        "linear.merge.launched-without-bias",
        "linear",
        LINEAR,
        '                part, b, y, M, N, y.stride(0), HAS_BIAS=bias is not None, BLOCK_N=meta["BLOCK_N"],\n',
        '                part, b, y, M, N, y.stride(0), HAS_BIAS=False, BLOCK_N=meta["BLOCK_N"],\n',
        "the merge kernel launched without the bias: a split setting's outputs lack it",
        "wrong formula",
        variants=SPLIT,
    ),
    Mutant(
        "linear.tile-counters-not-zeroed",
        "linear",
        LINEAR,
        "        counters = torch.zeros(max(tiles, 1 << 16), dtype=torch.int32, device=device)\n",
        "        counters = torch.empty(max(tiles, 1 << 16), dtype=torch.int32, device=device)\n",
        "MERGE 'last''s arrival counters allocated without zeroing: the first launch counts from whatever "
        "the memory held",
        "state not reset between launches",
        variants=("gemv", "skinny", "tma_split"),
    ),
    Mutant(
        "linear.tma_split.store-descriptor-full-width",
        "linear",
        LINEAR,
        '        descriptors = _descriptors(x, weight, y, meta, meta["BLOCK_N"] // 2 if meta["SUBTILE"] else '
        'meta["BLOCK_N"])\n',
        '        descriptors = _descriptors(x, weight, y, meta, meta["BLOCK_N"])\n',
        "y's descriptor made for whole BLOCK_N tiles while SUBTILE stores halves of BLOCK_N / 2 columns",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.workspace-one-split-short",
        "linear",
        LINEAR,
        "        part = empty((split_k, M, N), dtype=torch.float32, device=x.device) if split_k > 1 else y\n "
        "       counters",
        "        part = empty((split_k - 1, M, N), dtype=torch.float32, device=x.device) if split_k > 1 else "
        "y\n        counters",
        "tma_split's partials' workspace sized one split short: the last slice writes past it",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "rms_norm.stream-aliases-output",
        "rms_norm",
        NORM,
        "    h = empty((M, N), dtype=x.dtype, device=x.device) if residual is not None else y\n",
        "    h = y\n",
        "the fused norm's residual stream h given y's memory: h returned is y, the stream lost",
        "wrong residual",
    ),
    Mutant(
        "rms_norm.residual-operand-is-x",
        "rms_norm",
        NORM,
        "    r = residual if residual is not None else x  # never read without a residual\n",
        "    r = x  # never read without a residual\n",
        "the residual added to the wrong operand: h = x + x",
        "wrong residual",
    ),
    Mutant(
        "rotary.k-blocks-share-q-remainder",
        "rotary",
        ROTARY,
        "    programs = (B * S, triton.cdiv(HQ, block_h) + triton.cdiv(HKV, block_h))\n",
        "    programs = (B * S, triton.cdiv(HQ + HKV, block_h))\n",
        "the head grid counted over q's and k's heads together: one k block short when both leave a remainder",
        "tail dropped",
    ),
    Mutant(
        "rotary.cache-append-v-from-k",
        "rotary",
        ROTARY,
        "    v_in, v_out = (v, v_cache) if cached else (k, k_out)  # never read without a cache\n",
        "    v_in, v_out = (k, v_cache) if cached else (k, k_out)  # never read without a cache\n",
        "the KV append copies k (unrotated) into the v cache instead of v",
        "wrong indexing",
    ),
    Mutant(
        "attention_prefill.query-grid-floor",
        "attention_prefill",
        ATTN,
        '    _attention_flash_kernel[(B * HQ, triton.cdiv(C, meta["BLOCK_M"]))](\n',
        '    _attention_flash_kernel[(B * HQ, C // meta["BLOCK_M"])](\n',
        "the flash grid one query block short when BLOCK_M does not divide the queries: the last queries "
        "never computed",
        "tail dropped",
    ),
    Mutant(
        "attention_decode.sums-workspace-one-half",
        "attention_decode",
        ATTN,
        "        ml = empty((2, B, HQ, splits), dtype=torch.float32, device=q.device)\n",
        "        ml = empty((1, B, HQ, splits), dtype=torch.float32, device=q.device)\n",
        "the maxima-and-sums workspace sized for the maxima only: the sums written past it",
        "wrong indexing",
    ),
    Mutant(
        "attention_decode.merge-sums-of-one-sequence",
        "attention_decode",
        ATTN,
        "            part, ml, o, HQ, B * HQ * splits, *o.stride()[:2],\n",
        "            part, ml, o, HQ, HQ * splits, *o.stride()[:2],\n",
        "the merge told the sums start one sequence's maxima in: with B > 1 it reads maxima as sums",
        "wrong indexing",
    ),
    Mutant(
        "attention_decode.partials-workspace-in-q-dtype",
        "attention_decode",
        ATTN,
        "        part = empty((B, HQ, splits, D), dtype=torch.float32, device=q.device)\n",
        "        part = empty((B, HQ, splits, D), dtype=q.dtype, device=q.device)\n",
        "the split partials' workspace allocated in q's dtype: each split's unnormalised output rounded "
        "before the merge",
        "extra rounding",
    ),
    Mutant(
        "greedy_pick.parts-not-padded",
        "greedy_pick",
        PICK,
        "state.stride(0), PARTS=triton.next_power_of_2(parts), **meta, **launch)",
        "state.stride(0), PARTS=parts, **meta, **launch)",
        "the merge's part count passed as is, not padded to a power of two (tl.arange needs one)",
        "wrong loop bound",
    ),
    Mutant(
        "greedy_pick.picks-one-part-short",
        "greedy_pick",
        PICK,
        "    picks = empty((B, 2, parts), dtype=torch.float32, device=logits.device)\n",
        "    picks = empty((B, 2, parts - 1), dtype=torch.float32, device=logits.device)\n",
        "the parts' picks workspace one part short: the last part's pick written into the next row's",
        "wrong indexing",
    ),
    Mutant(
        "rotary.inplace-ignored-for-q",
        "rotary",
        ROTARY,
        "    q_out = q if inplace else empty(tuple(q.shape), dtype=q.dtype, device=q.device)\n",
        "    q_out = empty(tuple(q.shape), dtype=q.dtype, device=q.device)\n",
        "inplace=True ignored for q: the rotated q returned in a new tensor, q itself left unrotated",
        "wrong indexing",
    ),
    Mutant(
        "rotary.inplace-ignored-for-k",
        "rotary",
        ROTARY,
        "(k if inplace else empty(tuple(k.shape), dtype=k.dtype, device=k.device))",
        "empty(tuple(k.shape), dtype=k.dtype, device=k.device)",
        "inplace=True ignored for k (without a cache): the rotated k returned in a new tensor, k itself unrotated",
        "wrong indexing",
    ),
    Mutant(
        "linear.tile-counters-never-grown",
        "linear",
        LINEAR,
        "    if counters is None or counters.numel() < tiles:\n",
        "    if counters is None:\n",
        "the arrival counters made once and never grown: a later launch with more tiles than the first allocation "
        "(an LM head's gemv) counts past them",
        "wrong indexing",
        variants=SPLIT,
    ),
    Mutant(
        "linear.outgrown-counters-freed",
        "linear",
        LINEAR,
        "            _OUTGROWN.append(counters)\n",
        "            pass\n",
        "the outgrown arrival counters freed: a CUDA graph captured with them launches on freed memory",
        "state not reset between launches",
        variants=SPLIT,
    ),
    Mutant(
        "attention_prefill.head-block-below-sixteen",
        "attention_prefill",
        ATTN,
        "    return max(16, triton.next_power_of_2(d))\n",
        "    return triton.next_power_of_2(d)\n",
        "the head dim's block not raised to 16: tl.dot's K below a GPU's least for head dims under 16",
        "wrong loop bound",
    ),
    # ------------------------------------------------------------------- kmut6: block edges, walks, launches
    Mutant(
        "linear.tma_split.w-slice-from-zero",
        "linear",
        LINEAR,
        "            b = w_desc.load([pid_n * BLOCK_N, k_first + step * BLOCK_K])",
        "            b = w_desc.load([pid_n * BLOCK_N, step * BLOCK_K])",
        "every K slice reads W from the first slice's K: x's slice against W's first (right only with SPLIT_K 1)",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma.x-k-in-row-blocks",
        "linear",
        LINEAR,
        "            a = x_desc.load([pid_m * BLOCK_M, kt * BLOCK_K])",
        "            a = x_desc.load([pid_m * BLOCK_M, kt * BLOCK_M])",
        "tma reads x's K steps BLOCK_M apart: right only where BLOCK_M equals BLOCK_K",
        "wrong stride",
        variants=TMA,
    ),
    Mutant(
        "linear.tma_split.subtile-halves-swapped",
        "linear",
        LINEAR,
        "                left, right = tl.split(",
        "                right, left = tl.split(",
        "the subtiled epilogue stores the tile's right half in the left half's place and the left in the right's",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma.group-of-row-blocks",
        "linear",
        LINEAR,
        "    num_pid_in_group = GROUP_M * num_pid_n\n    k_tiles",
        "    num_pid_in_group = GROUP_M * num_pid_m\n    k_tiles",
        "tma's tile groups counted over row blocks: where the row and column block counts differ some tiles run "
        "twice, others never",
        "wrong indexing",
        variants=TMA,
    ),
    Mutant(
        "linear.tma_split.columns-row-major",
        "linear",
        LINEAR,
        "        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n        if SPLIT_K == 1:",
        "        offs_n = tile % num_pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n        if SPLIT_K == 1:",
        "tma_split's bias and partials columns from the ungrouped tile order: wrong wherever the grouped walk differs",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.merge.launched-without-wait",
        "linear",
        LINEAR,
        "                SPLIT_K=split_k, **launch,\n",
        '                SPLIT_K=split_k, **{**launch, "PDL": False},\n',
        "the split-K merge kernel launched with PDL but its switch off: it reads the partials without waiting for them",
        "dependent launch misplaced",
        variants=SPLIT,
    ),
    Mutant(
        "attention_decode.merge-launched-without-wait",
        "attention_decode",
        ATTN,
        "BLOCK_S=triton.next_power_of_2(splits),\n            **launch,",
        'BLOCK_S=triton.next_power_of_2(splits),\n            **{**launch, "PDL": False},',
        "decode's merge launched with PDL but its switch off: it reads the partials without waiting for the split "
        "kernel",
        "dependent launch misplaced",
    ),
    Mutant(
        "attention_decode.key-mask-one-long",
        "attention_decode",
        ATTN,
        "        mask_n = offs_n < end\n",
        "        mask_n = offs_n <= end\n",
        "decode's key mask one long: the key at a chunk's end (the next chunk's first, or past the length) is counted",
        "mask off by one",
    ),
    Mutant(
        "attention_decode.merge-sums-split-stride",
        "attention_decode",
        ATTN,
        "    l = tl.load(ml_ptr + rows + pid * SPLITS + offs_s",
        "    l = tl.load(ml_ptr + rows + pid + offs_s",
        "decode's merge reads a head's sums one row apart, not SPLITS: the next heads' sums",
        "wrong stride",
    ),
    Mutant(
        "attention_prefill.head-mask-one-long",
        "attention_prefill",
        ATTN,
        "    mask_d = offs_d < D\n    mask_c",
        "    mask_d = offs_d <= D\n    mask_c",
        "flash's head-dim mask one long: q and k's element D (the next head's first) enters every score",
        "mask off by one",
    ),
    Mutant(
        "attention_prefill.last-diagonal-key-dropped",
        "attention_prefill",
        ATTN,
        "    for start_n in range(whole, end, BLOCK_N):",
        "    for start_n in range(whole, end - 1, BLOCK_N):",
        "flash's diagonal loop stops one key early: a last key block holding one key is never visited",
        "wrong loop bound",
    ),
    Mutant(
        "attention_chunk.last-diagonal-key-dropped",
        "attention_chunk",
        ATTN,
        "    for start_n in range(whole, end, BLOCK_N):",
        "    for start_n in range(whole, end - 1, BLOCK_N):",
        "flash's diagonal loop stops one key early: a last key block holding one key is never visited (chunk)",
        "wrong loop bound",
    ),
    Mutant(
        "rms_norm.column-mask-one-long",
        "rms_norm",
        NORM,
        "    mask_n = offs_n < N\n",
        "    mask_n = offs_n <= N\n",
        "rms_norm's column mask one long: the next row's first element enters the sum of squares",
        "mask off by one",
    ),
    Mutant(
        "rotary.k-blocks-start-floor",
        "rotary",
        ROTARY,
        "        head0 = (pid_h - q_blocks) * BLOCK_H",
        "        head0 = (pid_h - HQ // BLOCK_H) * BLOCK_H",
        "k's head blocks counted from q's block count rounded down: where BLOCK_H does not divide Hq, k's blocks "
        "start a block late",
        "wrong indexing",
    ),
    Mutant(
        "rotary.v-heads-from-program",
        "rotary",
        ROTARY,
        "            offs_h = head0 + tl.arange(0, BLOCK_H)",
        "            offs_h = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)",
        "the v append's heads from the program's block index, which counts q's blocks too: v lands in other heads "
        "or none",
        "wrong indexing",
    ),
    Mutant(
        "greedy_pick.rows-share-picks",
        "greedy_pick",
        PICK,
        "    picks = part_ptr + row * 2 * parts",
        "    picks = part_ptr + row * parts",
        "each row's part picks placed `parts` apart, not 2 x parts: a row's indices overwrite the next row's values",
        "scratch shared between tiles",
    ),
    Mutant(
        "rotary.cos-rows-half-apart",
        "rotary",
        ROTARY,
        "        *positions.stride(), cos.stride(0),",
        "        *positions.stride(), D // 2,",
        "cos and sin rows taken as D / 2 apart rather than at their row stride: right only for a dense table",
        "wrong stride",
    ),
    Mutant(
        "rotary.yarn-sin-unscaled",
        "rotary",
        ROTARY,
        "(angles.sin() * attention_factor).to(device)",
        "angles.sin().to(device)",
        "yarn's attention factor scales cos only, not sin",
        "wrong scale",
    ),
    Mutant(
        "rotary.yarn-ramp-inverted",
        "rotary",
        ROTARY,
        "    return slowed * (1 - kept) + (1.0 / pos_freqs) * kept, float(attention_factor)",
        "    return slowed * kept + (1.0 / pos_freqs) * (1 - kept), float(attention_factor)",
        "yarn's blend weights swapped: the high frequencies slowed, the low ones kept",
        "wrong formula",
    ),
    Mutant(
        "attention_chunk.reference-diagonal-hidden",
        "attention_chunk",
        REFERENCE,
        "triu(diagonal=S - C + 1)",
        "triu(diagonal=S - C)",
        "the float64 reference hides each query's own key (the check's truth, not the kernel, is wrong)",
        "mask off by one",
    ),
    Mutant(
        "rotary.reference-second-half-sign",
        "rotary",
        REFERENCE,
        "    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)",
        "    return torch.cat((x1 * c - x2 * s, x2 * c - x1 * s), dim=-1)",
        "the float64 reference rotates the second half the wrong way (the check's truth, not the kernel, is wrong)",
        "wrong formula",
    ),
    Mutant(
        "linear.tma_split.group-of-row-blocks",
        "linear",
        LINEAR,
        "    num_pid_in_group = GROUP_M * num_pid_n\n    # each slice",
        "    num_pid_in_group = GROUP_M * num_pid_m\n    # each slice",
        "tma_split's tile groups counted over row blocks: where the row and column block counts differ some tiles "
        "run twice, others never",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    # kmut7's seven 256-row mutants (each right up to BLOCK_M 128, wrong at a 256-row tile) were retired with the
    # 256 x 128 candidates on 2026-12-05: measured on the H200 they won no entry, and with no setting of 256 rows
    # offered or shipped each is equivalent (docs/kernel-mutants.md)
    # ---------------------------------------------------------------------------- kmut7: lines no anchor touched
    Mutant(
        "linear.merge-last.first-split-each-time",
        "linear",
        LINEAR,
        'y += tl.load(part_ptrs + k * split_stride, mask=mask, other=0.0, cache_modifier=".cg")',
        'y += tl.load(part_ptrs, mask=mask, other=0.0, cache_modifier=".cg")',
        'the merge by the last to arrive (MERGE "last", tma_split) sums the first split\'s partials SPLIT_K times',
        "merge skips a split",
        variants=SPLIT + TMA_SPLIT,
    ),
    Mutant(
        "linear.gemv.w-rows-at-x-stride",
        "linear",
        LINEAR,
        "w_ptrs = w_ptr + offs_n[:, None] * stride_wn + offs_k[None, :]",
        "w_ptrs = w_ptr + offs_n[:, None] * stride_xm + offs_k[None, :]",
        "gemv steps W's rows by x's row stride: right only while x's rows are dense",
        "wrong stride",
        variants=GEMV,
    ),
    Mutant(
        "linear.tiled.n-mask-one-long",
        "linear",
        LINEAR,
        "    mask_n = offs_n < N\n    x_ptrs",
        "    mask_n = offs_n < N + 1\n    x_ptrs",
        "tiled's column mask one long: column N is read from W's next row and stored over the next row's first output",
        "mask off by one",
        variants=TILED,
    ),
    Mutant(
        "linear.tma.k-loop-one-short",
        "linear",
        LINEAR,
        "        for kt in range(k_tiles):",
        "        for kt in range(k_tiles - 1):",
        "tma's K loop stops one BLOCK_K step early: the last step of K is never summed",
        "wrong loop bound",
        variants=TMA,
    ),
    Mutant(
        "linear.tma_split.unsplit-bias-dropped",
        "linear",
        LINEAR,
        "            if HAS_BIAS:\n"
        "                acc += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]\n",
        "",
        "tma_split's unsplit epilogue (SPLIT_K 1, halves or whole) forgets the bias",
        "wrong formula",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "attention_prefill.k-filled-with-nan",
        "attention_prefill",
        ATTN,
        "kt = tl.load(k_ptrs, mask=mask_d[:, None], other=0.0)",
        'kt = tl.load(k_ptrs, mask=mask_d[:, None], other=float("nan"))',
        "off the diagonal, k's lanes past the head dim filled with NaN, not 0: every logit NaN when D is not a "
        "power of two",
        "wrong fill value",
    ),
    Mutant(
        "attention_decode.batch-and-kv-head-swapped",
        "attention_decode",
        ATTN,
        "    b = pid_bh // HKV\n    kv_h = pid_bh % HKV\n",
        "    b = pid_bh % HKV\n    kv_h = pid_bh // HKV\n",
        "decode reads its program's (batch x kv head) index as (kv head x batch)",
        "wrong indexing",
    ),
    Mutant(
        "attention_decode.merge-batch-and-head-swapped",
        "attention_decode",
        ATTN,
        "    b = pid // HQ\n    h = pid % HQ\n",
        "    b = pid % HQ\n    h = pid // HQ\n",
        "decode's merge stores its (batch x q head) result at (q head x batch)",
        "wrong indexing",
    ),
    Mutant(
        "attention_decode.head-dim-mask-one-long",
        "attention_decode",
        ATTN,
        "    mask_d = offs_d < D\n    heads = kv_h * G + offs_g",
        "    mask_d = offs_d < D + 1\n    heads = kv_h * G + offs_g",
        "decode's head-dim mask one long: q's and k's lane D (the next head's first) enter every logit",
        "mask off by one",
    ),
    Mutant(
        "attention_chunk.queries-in-key-blocks",
        "attention_chunk",
        ATTN,
        "offs_c = block * BLOCK_M + tl.arange(0, BLOCK_M)",
        "offs_c = block * BLOCK_N + tl.arange(0, BLOCK_M)",
        "the flash kernel's query blocks start BLOCK_N queries apart, not BLOCK_M: right only for square blocks",
        "wrong indexing",
    ),
    Mutant(
        "attention_chunk.first-key-block-skipped",
        "attention_chunk",
        ATTN,
        "for start_n in range(0, whole, BLOCK_N):",
        "for start_n in range(BLOCK_N, whole, BLOCK_N):",
        "the flash kernel's unmasked key blocks start at the second: keys 0 .. BLOCK_N - 1 unseen where a query "
        "sees more than one block",
        "wrong loop bound",
    ),
    Mutant(
        "rotary.out-batch-stride-of-input",
        "rotary",
        ROTARY,
        "dst = dst_ptr + b * stride_db",
        "dst = dst_ptr + b * stride_sb",
        "rotary stores each sequence at the input's batch stride, not the output's (or the cache's)",
        "wrong stride",
    ),
    Mutant(
        "greedy_pick.nan-part-index-of-largest",
        "greedy_pick",
        PICK,
        "tl.store(picks + parts + part, tl.where(has_nan, first_nan, first_largest).to(tl.float32))",
        "tl.store(picks + parts + part, first_largest.to(tl.float32))",
        "a part holding a NaN stores the index of its largest number, not of its first NaN",
        "wrong formula",
    ),
    Mutant(
        "silu_mul.row-blocks-one-row-apart",
        "silu_mul",
        SILU,
        "offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)",
        "offs_m = pid_m + tl.arange(0, BLOCK_M)",
        "silu_mul's row blocks start one row apart, not BLOCK_M: rows past the first block's are never written",
        "wrong indexing",
    ),
    Mutant(
        "linear.reference-bias-dropped",
        "linear",
        REFERENCE,
        "        y = y + _f64(bias)[None, :]\n",
        "        y = y + 0 * _f64(bias)[None, :]\n",
        "the float64 reference leaves the bias out (the check's truth, not the kernel, is wrong)",
        "wrong formula",
    ),
    # ------------------------------------------------------------------ round kmut8: the least-covered paths
    Mutant(
        "silu_mul.exp-clamped-at-88",
        "silu_mul",
        SILU,
        "out = g / (1.0 + tl.exp(-g)) * u",
        "out = g / (1.0 + tl.exp(tl.minimum(-g, 88.0))) * u",
        "exp(-g) clamped at exp(88) against fp32 overflow: silu of a gate below -88 is g / 1.65e38, not g e^g "
        "(fp32's subnormals, or 0)",
        "overflow at large magnitudes",
    ),
    Mutant(
        "silu_mul.gate-not-upcast",
        "silu_mul",
        SILU,
        "g = tl.load(g_ptrs, mask=mask, other=0.0).to(tl.float32)",
        "g = tl.load(g_ptrs, mask=mask, other=0.0)",
        "the gate kept in the storage dtype: silu(g) computed in fp16 (exp(-g) infinite below g = -11)",
        "extra rounding",
    ),
    Mutant(
        "silu_mul.column-blocks-floored",
        "silu_mul",
        SILU,
        'triton.cdiv(I, meta["BLOCK_I"]))',
        'max(1, I // meta["BLOCK_I"]))',
        "column blocks counted with a floor (at least one): the columns past the last whole BLOCK_I never computed",
        "tail dropped",
    ),
    Mutant(
        "rotary.k-at-position-without-cache",
        "rotary",
        ROTARY,
        "row = pos if CACHE else s",
        "row = pos",
        "without a cache k is stored at the token's position, not its index: right only for positions 0.. of a "
        "first chunk",
        "wrong indexing",
    ),
    Mutant(
        "rotary.q-blocks-floored",
        "rotary",
        ROTARY,
        "q_blocks = tl.cdiv(HQ, BLOCK_H)",
        "q_blocks = HQ // BLOCK_H",
        "q's head blocks counted with a floor: q's last partial block is taken for k's first",
        "tail dropped",
    ),
    Mutant(
        "rotary.v-copy-first-head-block",
        "rotary",
        ROTARY,
        "            offs_h = head0 + tl.arange(0, BLOCK_H)\n",
        "            offs_h = tl.arange(0, BLOCK_H)\n",
        "v copied into the cache for the first block of kv heads only, by every k program",
        "wrong indexing",
    ),
    Mutant(
        "rotary.cos-without-mask",
        "rotary",
        ROTARY,
        "c = tl.load(cos_ptr + pos * stride_cos + offs_d, mask=offs_d < HALF, other=0.0)",
        "c = tl.load(cos_ptr + pos * stride_cos + offs_d)",
        "the cos row loaded without its mask: lanes past D/2 read the next row, past the table's end at its last "
        "position (never stored)",
        "load without its mask",
    ),
    Mutant(
        "attention_decode.partials-in-model-dtype",
        "attention_decode",
        ATTN,
        "part = empty((B, HQ, splits, D), dtype=torch.float32, device=q.device)",
        "part = empty((B, HQ, splits, D), dtype=q.dtype, device=q.device)",
        "each split's unnormalised partial output stored in the model's dtype before the merge",
        "extra rounding",
    ),
    Mutant(
        "attention_decode.maxima-and-sums-in-model-dtype",
        "attention_decode",
        ATTN,
        "ml = empty((2, B, HQ, splits), dtype=torch.float32, device=q.device)",
        "ml = empty((2, B, HQ, splits), dtype=q.dtype, device=q.device)",
        "each split's running max and softmax sum stored in the model's dtype before the merge",
        "extra rounding",
    ),
    Mutant(
        "attention_decode.masked-score-minus-1e4",
        "attention_decode",
        ATTN,
        '        qk = tl.where(mask_n[None, :], qk, float("-inf"))\n',
        "        qk = tl.where(mask_n[None, :], qk, -1.0e4)\n",
        "positions past the split's end masked with a score of -1e4 (log2 units), not -inf: where every real "
        "score of a block lies below it, the masked positions take the weight",
        "wrong fill value",
    ),
    Mutant(
        "attention_decode.running-max-from-minus-1e4",
        "attention_decode",
        ATTN,
        'm_i = tl.full((BLOCK_G,), float("-inf"), dtype=tl.float32)',
        "m_i = tl.full((BLOCK_G,), -1.0e4, dtype=tl.float32)",
        "decode's running max starts at -1e4, not -inf: the same softmax until every score of a split lies far "
        "below it (its weights then underflow to 0)",
        "wrong fill value",
    ),
    Mutant(
        "attention_decode.query-head-block-not-pow2",
        "attention_decode",
        ATTN,
        "BLOCK_G=max(16, triton.next_power_of_2(G))",
        "BLOCK_G=max(16, G)",
        "the block of a kv head's query heads sized G past 16, not a power of two",
        "wrong indexing",
    ),
    Mutant(
        "attention_prefill.diagonal-masked-score-minus-1e4",
        "attention_prefill",
        ATTN,
        'logits = tl.where((rows[:, None] >= keys[None, :]) & inside[None, :], logits, float("-inf"))',
        "logits = tl.where((rows[:, None] >= keys[None, :]) & inside[None, :], logits, -1.0e4)",
        "the causal mask's hidden keys given a score of -1e4 (log2 units), not -inf: a query whose visible "
        "scores all lie below it attends to later keys",
        "wrong fill value",
    ),
    Mutant(
        "attention_chunk.running-max-from-minus-1e4",
        "attention_chunk",
        ATTN,
        'm_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)',
        "m_i = tl.full((BLOCK_M,), -1.0e4, dtype=tl.float32)",
        "the flash kernel's running max starts at -1e4, not -inf: rows whose scores all lie far below it "
        "underflow to 0 / 0",
        "wrong fill value",
    ),
    Mutant(
        "attention_chunk.even-d-at-multiple-of-16",
        "attention_chunk",
        ATTN,
        "BLOCK_N, False, D == BLOCK_D)",
        "BLOCK_N, False, D % 16 == 0)",
        "whole key blocks take the unmasked loads wherever D is a multiple of 16 (48, 80, 96, 112: not the "
        "power-of-two block): k and v read past each head",
        "load without its mask",
    ),
    Mutant(
        "attention_prefill.head-block-from-d-minus-one",
        "attention_prefill",
        ATTN,
        "return max(16, triton.next_power_of_2(d))",
        "return max(16, triton.next_power_of_2(d - 1))",
        "the head dim's block sized from D - 1: at D = 2^k + 1 (past 16) the last element of every head is dropped",
        "tail dropped",
    ),
    Mutant(
        "silu_mul.silu-flushed-below-minus-16",
        "silu_mul",
        SILU,
        "out = g / (1.0 + tl.exp(-g)) * u",
        "out = tl.where(g > -16.0, g / (1.0 + tl.exp(-g)), 0.0) * u",
        "silu flushed to 0 below g = -16 (a shortcut where it is 'about zero': -16 e^-16 = -1.8e-6, fp16's and "
        "fp32's normal numbers)",
        "wrong formula",
    ),
    # ------------------------------------------------------------- kernel-mutant round 9 (kmut9, 2026-12-05)
    Mutant(
        "rms_norm.one-plus-weight",
        "rms_norm",
        NORM,
        "    y = h * rstd[:, None] * w[None, :]\n",
        "    y = h * rstd[:, None] * (1.0 + w[None, :])\n",
        "gamma applied as 1 + w (Gemma's stored offset) where the checkpoint's weight is the scale itself",
        "wrong formula",
    ),
    Mutant(
        "rms_norm.rstd-of-unrounded-sum",
        "rms_norm",
        NORM,
        "        h = h_rounded.to(tl.float32)\n"
        "    # rstd = 1 / sqrt(mean(h^2) + eps), in fp32\n"
        "    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)\n",
        "        rstd = 1.0 / tl.sqrt(tl.sum((h + r) * (h + r), axis=1) / N + eps)\n"
        "        h = h_rounded.to(tl.float32)\n"
        "    else:\n"
        "        rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)\n",
        "the fused norm's rstd taken from the fp32 sum x + r, the row it scales from the rounded stream h: "
        "y is not the norm of the h it returns",
        "extra rounding",
    ),
    Mutant(
        "rms_norm.stream-rounded-to-fp16",
        "rms_norm",
        NORM,
        "h_rounded = (h + r).to(h_ptr.dtype.element_ty)",
        "h_rounded = (h + r).to(tl.float16)",
        "the residual stream rounded to fp16 whatever the model's dtype (right only for fp16 models)",
        "extra rounding",
    ),
    Mutant(
        "rms_norm.row-mask-against-n",
        "rms_norm",
        NORM,
        "    mask = (offs_m[:, None] < M) & mask_n[None, :]\n",
        "    mask = (offs_m[:, None] < N) & mask_n[None, :]\n",
        "the row mask tested against N: rows past M read and stored where N > M, rows past N dropped where N < M",
        "mask on the wrong dimension",
    ),
    Mutant(
        "rms_norm.stream-kept-in-fp32",
        "rms_norm",
        NORM,
        "    h = empty((M, N), dtype=x.dtype, device=x.device) if residual is not None else y\n",
        "    h = empty((M, N), dtype=torch.float32, device=x.device) if residual is not None else y\n",
        "the residual stream allocated in fp32 (kept unrounded) where the op returns it in the model's dtype",
        "wrong output dtype",
    ),
    Mutant(
        "rms_norm.scale-rounded-before-row",
        "rms_norm",
        NORM,
        "    y = h * rstd[:, None] * w[None, :]\n",
        "    y = h * (rstd[:, None] * w[None, :]).to(y_ptr.dtype.element_ty).to(tl.float32)\n",
        "rstd x gamma folded into one scale rounded to the storage dtype before it multiplies the row",
        "extra rounding",
    ),
    Mutant(
        "rms_norm.eps-as-floor",
        "rms_norm",
        NORM,
        "    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)\n",
        "    rstd = 1.0 / tl.sqrt(tl.maximum(tl.sum(h * h, axis=1) / N, eps))\n",
        "eps taken as a floor under the mean square (max(mean, eps), as L2-normalise clamps) instead of added to it",
        "wrong eps placement",
    ),
    Mutant(
        "greedy_pick.no-nan-marker-is-block",
        "greedy_pick",
        PICK,
        "first_nan = tl.min(tl.where(nan, offs, V), axis=0)",
        "first_nan = tl.min(tl.where(nan, offs, BLOCK_V), axis=0)",
        "a part's 'no NaN' marker is BLOCK_V, not V: in a row of several parts every part but the last claims a "
        "NaN at index BLOCK_V",
        "wrong fill value",
    ),
    Mutant(
        "greedy_pick.parts-ceiling-of-one-less",
        "greedy_pick",
        PICK,
        "PARTS=triton.next_power_of_2(parts)",
        "PARTS=triton.next_power_of_2(parts - 1)",
        "the merge's lanes from next_power_of_2(parts - 1): a row of 2 or 2^k + 1 parts never looks at its last part",
        "tail dropped",
    ),
    Mutant(
        "greedy_pick.token-narrowed-to-int16",
        "greedy_pick",
        PICK,
        "tl.store(tokens_ptr + row * stride_tokens, token.to(tokens_ptr.dtype.element_ty))",
        "tl.store(tokens_ptr + row * stride_tokens, token.to(tl.int16).to(tokens_ptr.dtype.element_ty))",
        "the token passed through int16: right for vocabularies up to 32,768 (Llama 2's 32,000), wrapped past "
        "(Llama 3's 128,256)",
        "wrong output dtype",
    ),
    Mutant(
        "rotary.llama3-low-factor-ignored",
        "rotary",
        ROTARY,
        "scaled = torch.where(wavelen > old_context / low, inv_freq / factor, inv_freq)",
        "scaled = torch.where(wavelen > old_context, inv_freq / factor, inv_freq)",
        "rope_cache's Llama-3 slowed band starts at the original context, not at it / low_freq_factor: with a "
        "low factor above 1 the wavelengths between are kept (right only for low_freq_factor 1)",
        "wrong formula",
    ),
    Mutant(
        "rotary.llama3-context-of-table",
        "rotary",
        ROTARY,
        '        old_context = scaling["original_max_position_embeddings"]\n',
        "        old_context = max_positions\n",
        "rope_cache's Llama-3 bands measured against the table's length (the cache's capacity), not the original "
        "context: right only where the two are equal",
        "wrong formula",
    ),
    Mutant(
        "rotary.llama3-smooth-ratio-inverted",
        "rotary",
        ROTARY,
        "smooth = (old_context / wavelen - low) / (high - low)",
        "smooth = (wavelen / old_context - low) / (high - low)",
        "rope_cache's Llama-3 blend weight from wavelength / context, not context / wavelength",
        "wrong formula",
    ),
    Mutant(
        "linear.gemv.accumulator-overwritten",
        "linear",
        LINEAR,
        "        accumulator += w * x[None, :]\n",
        "        accumulator = w * x[None, :]\n",
        "gemv's accumulator overwritten each K step: only a slice's last block is summed (right while a slice is "
        "one block)",
        "state not reset between tiles",
        variants=GEMV,
    ),
    Mutant(
        "linear.skinny.dot-drops-accumulator",
        "linear",
        LINEAR,
        "        acc = tl.dot(a, b, acc, input_precision=PRECISION)\n",
        "        acc = tl.dot(a, b, input_precision=PRECISION)\n",
        "skinny's tl.dot called without its accumulator: each K step replaces the sum (right while a slice is one "
        "block)",
        "state not reset between tiles",
        variants=SKINNY,
    ),
    Mutant(
        "linear.merge-last.reset-by-arrived",
        "linear",
        LINEAR,
        '        tl.atomic_xchg(counter_ptr, 0, sem="relaxed", scope="gpu")\n',
        '        tl.atomic_add(counter_ptr, -arrived, sem="relaxed", scope="gpu")\n',
        'MERGE "last" takes back the count it saw (SPLIT_K - 1), not all SPLIT_K arrivals: the counter starts the '
        "next launch at 1 and its tiles merge one arrival early",
        "state not reset between launches",
        variants=SPLIT,
    ),
    Mutant(
        "linear.merge-last.arrival-as-new-count",
        "linear",
        LINEAR,
        "    if arrived == SPLIT_K - 1:\n",
        "    if arrived == SPLIT_K:\n",
        'MERGE "last" reads atomic_add\'s result as the new count (it is the old one): no program ever merges',
        "mask off by one",
        variants=SPLIT,
    ),
    Mutant(
        "linear.split.merge-kernel-unsplit",
        "linear",
        LINEAR,
        "        if split_k > 1 and not last:\n",
        "        if not last:\n",
        "the split-K merge kernel launched at SPLIT_K 1 too: it reads the output, in x's dtype, as fp32 partials "
        "and overwrites it",
        "applied twice",
        variants=SPLIT,
    ),
    Mutant(
        "linear.skinny.merge-last-y-at-x-stride",
        "linear",
        LINEAR,
        "in_n[None, :], y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], HAS_BIAS, SPLIT_K)",
        "in_n[None, :], y_ptr + offs_m[:, None] * stride_xm + offs_n[None, :], HAS_BIAS, SPLIT_K)",
        "skinny's MERGE \"last\" stores y's rows at x's row stride: right only while x is dense with K = N",
        "wrong stride",
        variants=SKINNY,
    ),
    Mutant(
        "linear.gemv.merge-last-counter-row-plus-column",
        "linear",
        LINEAR,
        "mask_n,\n                           counter_ptr + pid_m * tl.num_programs(0) + pid_n,",
        "mask_n,\n                           counter_ptr + pid_m + pid_n,",
        'gemv\'s MERGE "last" counter at row + column block: tiles (m, n) and (n, m) share one',
        "wrong indexing",
        variants=GEMV,
    ),
    # ------------------------------------------------------------- round 10 (kmut10): the least planted paths
    Mutant(
        "linear.tma.bias-without-mask",
        "linear",
        LINEAR,
        "            accumulator += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]\n"
        "        y_desc.store(",
        "            accumulator += tl.load(b_ptr + offs_n).to(tl.float32)[None, :]\n        y_desc.store(",
        "tma loads the bias without its mask: the last column tile reads BLOCK_N past a bias of N (the columns "
        "past N are clipped by the store, the read is not)",
        "load without its mask",
        variants=TMA,
    ),
    Mutant(
        "linear.tma.bias-of-row-block",
        "linear",
        LINEAR,
        "            offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n            accumulator +=",
        "            offs_n = pid_m * BLOCK_N + tl.arange(0, BLOCK_N)\n            accumulator +=",
        "tma's bias columns from the tile's row block, not its column block: right only on the diagonal tiles",
        "wrong indexing",
        variants=TMA,
    ),
    Mutant(
        "linear.tma.store-columns-in-row-blocks",
        "linear",
        LINEAR,
        "y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], accumulator.to(y_desc.dtype))",
        "y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_M], accumulator.to(y_desc.dtype))",
        "tma stores a tile at its column block in BLOCK_M units: right only where BLOCK_M = BLOCK_N",
        "wrong indexing",
        variants=TMA,
    ),
    Mutant(
        "linear.tma.tiles-of-row-blocks-squared",
        "linear",
        LINEAR,
        "for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, tl.num_programs(0), flatten=True):",
        "for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_m, tl.num_programs(0), flatten=True):",
        "tma's walk counts num_pid_m x num_pid_m tiles: where the column blocks outnumber the row blocks the last "
        "tiles are never computed (where fewer, the extra tiles load zeros and their stores are clipped)",
        "wrong loop bound",
        variants=TMA,
    ),
    Mutant(
        "linear.tma.walk-from-zero",
        "linear",
        LINEAR,
        "for tile in tl.range(tl.program_id(0), num_pid_m",
        "for tile in tl.range(0, num_pid_m",
        "every persistent program walks from tile 0 (still striding by the grid): each computes the first "
        "program's tiles, the others are never computed",
        "wrong indexing",
        variants=TMA,
    ),
    Mutant(
        "linear.tma.bias-after-rounding",
        "linear",
        LINEAR,
        "            accumulator += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]\n"
        "        y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], accumulator.to(y_desc.dtype))",
        "            accumulator = accumulator.to(y_desc.dtype).to(tl.float32) + tl.load(b_ptr + offs_n, "
        "mask=offs_n < N, other=0.0).to(tl.float32)[None, :]\n"
        "        y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], accumulator.to(y_desc.dtype))",
        "tma rounds the product to the storage dtype before adding the bias: two roundings where one is due",
        "extra rounding",
        variants=TMA,
    ),
    Mutant(
        "linear.tma.bias-skipped-for-tail-tile",
        "linear",
        LINEAR,
        "        if HAS_BIAS:\n            offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n"
        "            accumulator +=",
        "        if HAS_BIAS and (pid_n + 1) * BLOCK_N <= N:\n"
        "            offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n            accumulator +=",
        "tma's bias epilogue only for whole column tiles: the partial last column tile gets no bias",
        "tail dropped",
        variants=TMA,
    ),
    Mutant(
        "linear.tma_split.partial-columns-masked-by-m",
        "linear",
        LINEAR,
        "in_y = (offs_m < M)[:, None] & (offs_n < N)[None, :]",
        "in_y = (offs_m < M)[:, None] & (offs_n < M)[None, :]",
        "tma_split's partials (and the merge) masked against M in both dimensions: where N > M the columns past M "
        "are never stored, where N < M the merge stores past the row",
        "mask on the wrong dimension",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.partial-rows-of-column-block",
        "linear",
        LINEAR,
        "            offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)\n            in_y",
        "            offs_m = pid_n * BLOCK_M + tl.arange(0, BLOCK_M)\n            in_y",
        "tma_split's split-K partials (and the merged tile) placed at the tile's column block as rows: right only on "
        "the diagonal tiles",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.slice-steps-of-block-n",
        "linear",
        LINEAR,
        "slice_steps = tl.cdiv(tl.cdiv(K, BLOCK_K), SPLIT_K)",
        "slice_steps = tl.cdiv(tl.cdiv(K, BLOCK_N), SPLIT_K)",
        "tma_split's K steps counted in BLOCK_N units: where BLOCK_N > BLOCK_K the slices stop short of K",
        "wrong loop bound",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.merge.partials-without-mask",
        "linear",
        LINEAR,
        "y += tl.load(part_ptr + (k * M + pid_m) * N + offs_n, mask=mask_n, other=0.0)",
        "y += tl.load(part_ptr + (k * M + pid_m) * N + offs_n)",
        "the split-K merge kernel reads each split's partials for the whole BLOCK_N: the last row of the last "
        "split reads past the workspace",
        "load without its mask",
        variants=SPLIT,
    ),
    Mutant(
        "linear.merge.bias-without-mask",
        "linear",
        LINEAR,
        "    if HAS_BIAS:\n        y += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)\n"
        "    tl.store(y_ptr",
        "    if HAS_BIAS:\n        y += tl.load(b_ptr + offs_n).to(tl.float32)\n    tl.store(y_ptr",
        "the split-K merge kernel loads the bias without its mask: the last column block reads past a bias of N",
        "load without its mask",
        variants=SPLIT,
    ),
    Mutant(
        "linear.merge.grid-floor",
        "linear",
        LINEAR,
        "_linear_split_merge_kernel[(programs[0], M)](",
        '_linear_split_merge_kernel[(max(1, N // meta["BLOCK_N"]), M)](',
        "the split-K merge kernel's grid counts whole column blocks (at least one): the outputs past the last "
        "whole BLOCK_N are never merged (the split programs' own grid is right)",
        "tail dropped",
        variants=SPLIT,
    ),
    Mutant(
        "linear.tiled.grid-columns-in-row-blocks",
        "linear",
        LINEAR,
        'programs = (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)\n        _linear_tiled',
        'programs = (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_M"]),)\n        _linear_tiled',
        "tiled's grid counts column tiles in BLOCK_M units: where BLOCK_M > BLOCK_N the last tiles never run "
        "(where smaller, the programs past the tiles store nothing)",
        "wrong loop bound",
        variants=TILED,
    ),
    Mutant(
        "linear.output-half-for-16-bit",
        "linear",
        LINEAR,
        "    y = empty((M, N), dtype=x.dtype, device=x.device)\n",
        "    y = empty((M, N), dtype=torch.float16 if x.element_size() == 2 else x.dtype, device=x.device)\n",
        "linear's output allocated as fp16 for any 16-bit input ('half precision'): a bf16 model's outputs come back "
        "in fp16 (bf16 values past 65,504 infinite, small ones subnormal)",
        "wrong output dtype",
    ),
    Mutant(
        "silu_mul.output-half-for-16-bit",
        "silu_mul",
        SILU,
        "    out = empty((M, I), dtype=gu.dtype, device=gu.device)\n",
        "    out = empty((M, I), dtype=torch.float16 if gu.element_size() == 2 else gu.dtype, device=gu.device)\n",
        "silu_mul's output allocated as fp16 for any 16-bit input: a bf16 model's MLP activations come back in fp16",
        "wrong output dtype",
    ),
    Mutant(
        "attention_decode.merge-store-without-head-dim-mask",
        "attention_decode",
        ATTN,
        "tl.store(o_ptr + b * stride_ob + h * stride_oh + offs_d, out.to(o_ptr.dtype.element_ty), mask=mask_d)",
        "tl.store(o_ptr + b * stride_ob + h * stride_oh + offs_d, out.to(o_ptr.dtype.element_ty))",
        "decode's merge stores BLOCK_D lanes of each head: past D into the next head's output (past the last "
        "head's end of the output)",
        "store without mask",
    ),
    Mutant(
        "attention_decode.split-grid-of-q-heads",
        "attention_decode",
        ATTN,
        "_attention_decode_split_kernel[(B * HKV, splits)](",
        "_attention_decode_split_kernel[(B * HQ, splits)](",
        "decode's split kernel launched over batch x q heads, not x kv heads: programs past B x Hkv read sequences "
        "past the batch, and the sums are stored num_programs x G x SPLITS after the maxima",
        "wrong GQA mapping",
    ),
    Mutant(
        "rotary.v-store-without-head-mask",
        "rotary",
        ROTARY,
        "offs_h[:, None] * stride_vch + offs_e[None, :],\n                     v, mask=mask)",
        "offs_h[:, None] * stride_vch + offs_e[None, :],\n                     v, mask=offs_e[None, :] < 2 * HALF)",
        "the KV append stores v for BLOCK_H heads whatever Hkv (its load masked, the store not): the heads past "
        "Hkv land in the cache's next position",
        "store without mask",
    ),
    Mutant(
        "attention_chunk.out-strides-of-q",
        "attention_chunk",
        ATTN,
        "*q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3],",
        "*q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *q.stride()[:3],",
        "the flash kernel's output stored at q's strides: right only while q is a dense [B, C, Hq, D] tensor "
        "(the engine's q is a view of the fused projection)",
        "wrong stride",
    ),
    Mutant(
        "attention_prefill.grid-of-kv-heads",
        "attention_prefill",
        ATTN,
        '_attention_flash_kernel[(B * HQ, triton.cdiv(C, meta["BLOCK_M"]))](',
        '_attention_flash_kernel[(B * k.shape[2], triton.cdiv(C, meta["BLOCK_M"]))](',
        "the flash grid over batch x kv heads: with G > 1 the query heads past the first Hkv (x batch) are never "
        "computed",
        "wrong GQA mapping",
    ),
    # --------------------------------------- round kmut11: the check's own side (references, judges, bounds)
    Mutant(
        "rms_norm.reference-eps-outside-sqrt",
        "rms_norm",
        REFERENCE,
        "    return x64 / torch.sqrt(mean_square + eps) * _f64(weight)",
        "    return x64 / (torch.sqrt(mean_square) + eps) * _f64(weight)",
        "the float64 reference adds eps to the root, not under it (the check's truth, not the kernel, is wrong)",
        "wrong eps placement",
    ),
    Mutant(
        "rms_norm.reference-mean-over-rows",
        "rms_norm",
        REFERENCE,
        "    mean_square = (x64 * x64).mean(dim=-1, keepdim=True)",
        "    mean_square = (x64 * x64).mean(dim=0, keepdim=True)",
        "the float64 reference takes each column's mean square over the rows, not each row's (the check's truth)",
        "statistic shared between rows",
    ),
    Mutant(
        "rms_norm.judge-eps-fixed",
        "rms_norm",
        "conformance/specs/rms_norm.py",
        '    ref = reference.rms_norm(normalised, a["weight"], a["eps"])',
        '    ref = reference.rms_norm(normalised, a["weight"], 1e-5)',
        "the judge's reference takes eps 1e-5 whatever eps the kernel was given (the check's truth, not the kernel)",
        "wrong eps placement",
    ),
    Mutant(
        "silu_mul.reference-exp-argument-clamped",
        "silu_mul",
        REFERENCE,
        "    return g * (1.0 / (1.0 + torch.exp(-g))) * u",
        "    return g * (1.0 / (1.0 + torch.exp(-g.clamp(min=-30.0)))) * u",
        "the float64 reference's sigmoid clamps its gate at -30: below it silu is g u / (1 + e^30), not g e^g u "
        "(the check's truth)",
        "overflow at large magnitudes",
    ),
    Mutant(
        "greedy_pick.reference-last-of-ties",
        "greedy_pick",
        REFERENCE,
        "torch.from_numpy(numpy.argmax(_f64(logits).cpu().numpy(), axis=-1))",
        "torch.from_numpy(logits.shape[-1] - 1 - numpy.argmax(_f64(logits).cpu().numpy()[:, ::-1], axis=-1))",
        "the reference's token is the last index of the row's largest value, not the first (the check's truth)",
        "wrong indexing",
    ),
    Mutant(
        "attention_decode.reference-length-one-long",
        "attention_decode",
        REFERENCE,
        "    filled = torch.arange(S, device=q64.device)[None, :] < n[:, None]  # [B, S]",
        "    filled = torch.arange(S, device=q64.device)[None, :] <= n[:, None]  # [B, S]",
        "the float64 decode reference attends one position past each length, whatever the cache holds there "
        "(the check's truth)",
        "mask off by one",
    ),
    Mutant(
        "attention_decode.reference-gqa-interleaved",
        "attention_decode",
        REFERENCE,
        "    scores = scale * (q64.reshape(B, HKV, group, D) @ k_h.transpose(-1, -2))",
        "    scores = scale * (q64.reshape(B, group, HKV, D).transpose(1, 2) @ k_h.transpose(-1, -2))",
        "the float64 decode reference maps q head h to kv head h % Hkv, not h // group (the check's truth)",
        "wrong GQA mapping",
    ),
    Mutant(
        "attention_chunk.reference-gqa-modulo",
        "attention_chunk",
        REFERENCE,
        "            kv = h // group\n",
        "            kv = h % HKV\n",
        "the float64 chunk reference maps q head h to kv head h % Hkv, not h // group (the check's truth)",
        "wrong GQA mapping",
    ),
    Mutant(
        "attention_decode.judge-one-key-heads-tiled",
        "attention_decode",
        "conformance/specs/attention.py",
        '        first = a["v_cache"][alone, 0].double().repeat_interleave(group, dim=1)',
        '        first = a["v_cache"][alone, 0].double().repeat(1, group, 1)',
        "the judge's one-key truth of a length-1 sequence gives q head h kv head h % Hkv's value (tiled, not "
        "repeated per group)",
        "wrong GQA mapping",
    ),
    Mutant(
        "attention_prefill.judge-first-query-heads-tiled",
        "attention_prefill",
        "conformance/specs/attention.py",
        '        first = a["v"][:, :1].double().repeat_interleave(group, dim=2)',
        '        first = a["v"][:, :1].double().repeat(1, 1, group, 1)',
        "the judge's one-key truth of the first query gives q head h kv head h % Hkv's value (tiled, not repeated "
        "per group)",
        "wrong GQA mapping",
    ),
    Mutant(
        "attention_decode.judge-bound-block-and-splits-swapped",
        "attention_decode",
        "conformance/specs/attention.py",
        '    block, splits = int(config["BLOCK_N"]), int(config["SPLITS"])',
        '    splits, block = int(config["BLOCK_N"]), int(config["SPLITS"])',
        "the decode bound follows another summation order: key blocks of SPLITS keys over BLOCK_N splits",
        "wrong formula",
    ),
    Mutant(
        "rotary.reference-llama3-blend-swapped",
        "rotary",
        REFERENCE,
        "            scaled.append((1 - smooth) * f / factor + smooth * f)",
        "            scaled.append(smooth * f / factor + (1 - smooth) * f)",
        "the float64 Llama-3 rule's blend weights swapped: the band's high frequencies slowed most (the check's truth)",
        "wrong formula",
    ),
    Mutant(
        "rotary.reference-yarn-truncation-inverted",
        "rotary",
        REFERENCE,
        "        low, high = math.floor(low), math.ceil(high)",
        "        low, high = math.ceil(low), math.floor(high)",
        "the float64 yarn ramp's ends rounded inwards, not outwards (the check's truth)",
        "wrong formula",
    ),
    Mutant(
        "rotary.reference-yarn-attention-log2",
        "rotary",
        REFERENCE,
        "    return 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0",
        "    return 0.1 * math.log2(factor) + 1.0 if factor > 1 else 1.0",
        "the float64 yarn attention factor 0.1 log2(s) + 1, not 0.1 ln(s) + 1 (the check's truth)",
        "wrong scale",
    ),
    Mutant(
        "rotary.reference-partial-rotary-ignored",
        "rotary",
        REFERENCE,
        "    inv_freq = [1.0 / theta ** (2 * i / dim) for i in range(head_dim // 2)]",
        "    inv_freq = [1.0 / theta ** (2 * i / head_dim) for i in range(head_dim // 2)]",
        "the float64 frequencies ignore a partial rotary_dim: theta^(-2i / head_dim) (the check's truth)",
        "wrong formula",
    ),
    Mutant(
        "rotary.reference-linear-multiplied",
        "rotary",
        REFERENCE,
        '            inv_freq = [f / float(scaling["factor"]) for f in inv_freq]',
        '            inv_freq = [f * float(scaling["factor"]) for f in inv_freq]',
        "the float64 linear scaling multiplies the frequencies by the factor (the check's truth)",
        "wrong scale",
    ),
    Mutant(
        "silu_mul.bound-half-ulp-of-half-the-binade",
        "silu_mul",
        "conformance/bounds.py",
        "torch.ldexp(torch.ones_like(magnitude), exponent - 1)",
        "torch.ldexp(torch.ones_like(magnitude), exponent - 2)",
        "the final rounding's allowance a quarter ulp, not half: a correctly rounded output fails (the bound)",
        "wrong scale",
    ),
    Mutant(
        "silu_mul.bound-special-functions-exact",
        "silu_mul",
        "conformance/bounds.py",
        "SPECIAL_ULPS = 4\n",
        "SPECIAL_ULPS = 0\n",
        "the bounds take fp32 exp, sqrt and division as exact (the bound)",
        "wrong formula",
    ),
    Mutant(
        "silu_mul.bound-fp16-underflow-halved",
        "silu_mul",
        "conformance/bounds.py",
        "torch.float16: 2.0**-25, torch.bfloat16: 2.0**-126}",
        "torch.float16: 2.0**-26, torch.bfloat16: 2.0**-126}",
        "fp16's rounding in its subnormal range allowed a quarter of the subnormal spacing, not half (the bound)",
        "wrong scale",
    ),
    Mutant(
        "rotary.reference-yarn-clip-past-last-dim",
        "rotary",
        REFERENCE,
        "    low, high = max(low, 0), min(high, dim - 1)",
        "    low, high = max(low, 0), min(high, dim)",
        "the float64 yarn ramp's end clipped at the head dim, not the last dim (the check's truth)",
        "mask off by one",
    ),
    Mutant(
        "silu_mul.bound-final-rounding-to-bf16",
        "silu_mul",
        "conformance/bounds.py",
        "    return _final(pre, y, gu.dtype)",
        "    return _final(pre, y, torch.bfloat16)",
        "silu_mul's bound takes the final rounding to bf16 whatever the output's dtype: an fp16 output's "
        "subnormal rounding allowed only bf16's (the bound)",
        "wrong output dtype",
    ),
    # ------------------------------- round kmut12: low precision over part of a sum, the max left out of one block
    Mutant(
        "linear.tiled.first-step-rounded",
        "linear",
        LINEAR,
        "        accumulator = tl.dot(a, b, accumulator, input_precision=PRECISION)\n        x_ptrs += BLOCK_K\n",
        "        accumulator = tl.dot(a, b, accumulator, input_precision=PRECISION)\n"
        "        if k0 == 0:\n"
        "            accumulator = accumulator.to(y_ptr.dtype.element_ty).to(tl.float32)\n"
        "        x_ptrs += BLOCK_K\n",
        "tiled's accumulator held in the storage dtype for its first K step only (low precision over part of K)",
        "low-precision accumulation",
        variants=TILED,
    ),
    Mutant(
        "linear.skinny.second-half-of-slice-rounded",
        "linear",
        LINEAR,
        "        acc = tl.dot(a, b, acc, input_precision=PRECISION)\n",
        "        acc = tl.dot(a, b, acc, input_precision=PRECISION)\n"
        "        if k0 >= k_first + k_slice // 2:\n"
        "            acc = acc.to(y_ptr.dtype.element_ty).to(tl.float32)\n",
        "skinny's accumulator rounded to the storage dtype after each K step of the second half of its slice",
        "low-precision accumulation",
        variants=SKINNY,
    ),
    Mutant(
        "linear.gemv.second-step-rounded",
        "linear",
        LINEAR,
        "        accumulator += w * x[None, :]\n",
        "        accumulator += w * x[None, :]\n"
        "        if k0 == k_start + BLOCK_K:\n"
        "            accumulator = accumulator.to(y_ptr.dtype.element_ty).to(tl.float32)\n",
        "gemv's lane accumulators rounded to the storage dtype after the second K step of each slice only",
        "low-precision accumulation",
        variants=GEMV,
    ),
    Mutant(
        "linear.merge.running-sum-rounded",
        "linear",
        LINEAR,
        "        y += tl.load(part_ptr + (k * M + pid_m) * N + offs_n, mask=mask_n, other=0.0)\n",
        "        y += tl.load(part_ptr + (k * M + pid_m) * N + offs_n, mask=mask_n, other=0.0)\n"
        "        y = y.to(y_ptr.dtype.element_ty).to(tl.float32)\n",
        "the split-K merge kernel's running sum held in the storage dtype (a merge in low precision, fp32 partials)",
        "low-precision accumulation",
        variants=SPLIT,
    ),
    Mutant(
        "linear.merge-last.running-sum-rounded",
        "linear",
        LINEAR,
        '            y += tl.load(part_ptrs + k * split_stride, mask=mask, other=0.0, cache_modifier=".cg")\n',
        '            y += tl.load(part_ptrs + k * split_stride, mask=mask, other=0.0, cache_modifier=".cg")\n'
        "            y = y.to(y_ptrs.dtype.element_ty).to(tl.float32)\n",
        "the last slice to arrive merges the partials with its running sum held in the storage dtype",
        "low-precision accumulation",
        variants=SPLIT,
    ),
    Mutant(
        "rms_norm.half-the-squares-rounded",
        "rms_norm",
        NORM,
        "    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)\n",
        "    squares = tl.where(offs_n[None, :] >= N // 2, (h * h).to(x_ptr.dtype.element_ty).to(tl.float32), h * h)\n"
        "    rstd = 1.0 / tl.sqrt(tl.sum(squares, axis=1) / N + eps)\n",
        "the squares of the second half of each row rounded to the input dtype before the fp32 sum",
        "low-precision accumulation",
    ),
    Mutant(
        "attention_prefill.diagonal-blocks-without-max",
        "attention_prefill",
        ATTN,
        "    rescale = tl.exp2(m_i - m_next)\n",
        "    if DIAGONAL:  # the blocks crossing the diagonal weigh 2^logit against max(m, 0), not their own max\n"
        "        m_next = tl.maximum(m_i, 0.0)\n"
        "    rescale = tl.exp2(m_i - m_next)\n",
        "flash attention's blocks crossing the diagonal leave their own max out of the running max (exact in real "
        "arithmetic: the same max scales l and acc; P rounded at another scale, and 2^logit may overflow)",
        "overflow at large magnitudes",
    ),
    Mutant(
        "attention_decode.first-block-without-max",
        "attention_decode",
        ATTN,
        "        alpha = tl.exp2(m_i - m_new)\n        p = tl.exp2(qk - m_new[:, None])\n",
        "        m_new = tl.where(start_n == start, tl.maximum(m_i, 0.0), m_new)  # the split's first block: no max\n"
        "        alpha = tl.exp2(m_i - m_new)\n        p = tl.exp2(qk - m_new[:, None])\n",
        "decode's split weighs its first key block by 2^score, its max not subtracted (later blocks rescale it "
        "consistently)",
        "overflow at large magnitudes",
    ),
    Mutant(
        "attention_decode.merge-weights-rounded",
        "attention_decode",
        ATTN,
        "    weight = tl.exp2(m - tl.max(m, axis=0))  # chunk c's share: 2^(m_c - max m)\n",
        "    weight = tl.exp2(m - tl.max(m, axis=0)).to(o_ptr.dtype.element_ty).to(tl.float32)\n",
        "the decode merge's split weights rounded to the output dtype (the same rounded weight in the numerator and "
        "the denominator: a merge in low precision)",
        "low-precision accumulation",
    ),
    # ------------------------------- round kmut13: P's rounding and the online softmax's running sums
    Mutant(
        "attention_prefill.p-kept-fp32-off-diagonal",
        "attention_prefill",
        ATTN,
        "    acc = acc * rescale[:, None] + tl.dot(weights.to(vb.dtype), vb, input_precision=PRECISION)\n",
        "    if DIAGONAL:\n"
        "        acc = acc * rescale[:, None] + tl.dot(weights.to(vb.dtype), vb, input_precision=PRECISION)\n"
        "    else:  # whole blocks keep P in fp32\n"
        "        acc = acc * rescale[:, None] + tl.dot(weights, vb.to(tl.float32), input_precision=PRECISION)\n",
        "flash attention's whole key blocks keep P in fp32 while the blocks crossing the diagonal round it (one "
        "kernel, two P conventions)",
        "wrong formula",
    ),
    Mutant(
        "attention_prefill.running-sum-rounded",
        "attention_prefill",
        ATTN,
        "    l_next = l_i * rescale + tl.sum(weights, axis=1)\n",
        "    l_next = (l_i * rescale + tl.sum(weights, axis=1)).to(vb.dtype).to(tl.float32)\n",
        "the online softmax's running denominator rounded to the storage dtype after each key block",
        "low-precision accumulation",
    ),
    Mutant(
        "attention_decode.running-sum-rounded",
        "attention_decode",
        ATTN,
        "        l_i = l_i * alpha + tl.sum(p, axis=1)\n",
        "        l_i = (l_i * alpha + tl.sum(p, axis=1)).to(k.dtype).to(tl.float32)\n",
        "a decode split's running softmax denominator rounded to the storage dtype after each key block",
        "low-precision accumulation",
    ),
    Mutant(
        "attention_prefill.rescale-skipped-on-small-growth",
        "attention_prefill",
        ATTN,
        "    rescale = tl.exp2(m_i - m_next)\n",
        "    rescale = tl.where(m_next - m_i < 0.0009765625, 1.0, tl.exp2(m_i - m_next))  # 'alpha is 1 anyway'\n",
        "the running sums are not rescaled when the running max grows by less than 2^-10 (in log2 units): the "
        "earlier blocks over-weighted by up to 0.07 %, about one fp16 rounding",
        "wrong formula",
    ),
    # ---------------------------------------------------------------- round kmut14: the fewest mutants per line
    Mutant(
        "linear.tma_split.right-half-at-store-n-blocks",
        "linear",
        LINEAR,
        "        y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + STORE_N], right.to(y_desc.dtype))",
        "        y_desc.store([pid_m * BLOCK_M, (pid_n + 1) * STORE_N], right.to(y_desc.dtype))",
        "the subtiled epilogue stores a tile's right half at the column block after it in STORE_N units: right only "
        "for the first column block",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tma_split.counter-per-row-block",
        "linear",
        LINEAR,
        "_merge_if_last(acc, tile_partials, M * N, in_y, counter_ptr + tile,",
        "_merge_if_last(acc, tile_partials, M * N, in_y, counter_ptr + pid_m,",
        "tma_split's K slices count their arrivals on a counter per row block: the tiles of a row of tiles share "
        "it, and a tile merges when slices of other tiles have arrived, before its own partials are all stored",
        "merged before every part arrived",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.skinny.merge-last-split-stride-of-row-block",
        "linear",
        LINEAR,
        "M * N, in_y,\n",
        "BLOCK_M * N, in_y,\n",
        "skinny's MERGE \"last\" finds split k's partials k row blocks on, not k slices of M x N: right only where M "
        "is BLOCK_M",
        "wrong stride",
        variants=SKINNY,
    ),
    Mutant(
        "linear.tma_split.x-slice-start-in-steps",
        "linear",
        LINEAR,
        "            a = x_desc.load([pid_m * BLOCK_M, k_first + step * BLOCK_K])",
        "            a = x_desc.load([pid_m * BLOCK_M, (k_first + step) * BLOCK_K])",
        "tma_split's x tiles at (slice start + step) BLOCK_K, the slice start already in elements: every slice but "
        "the first reads x past its K (zeros) against W's right slice",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    Mutant(
        "linear.tiled.rows-in-column-blocks",
        "linear",
        LINEAR,
        "    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)",
        "    offs_m = pid_m.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_M)",
        "tiled's rows of a tile at its row block in BLOCK_N units: right only where BLOCK_M = BLOCK_N",
        "wrong indexing",
        variants=TILED,
    ),
    Mutant(
        "attention_decode.merge-maxima-of-head-only",
        "attention_decode",
        ATTN,
        '    m = tl.load(ml_ptr + pid * SPLITS + offs_s, mask=mask_s, other=float("-inf"))',
        '    m = tl.load(ml_ptr + h * SPLITS + offs_s, mask=mask_s, other=float("-inf"))',
        "decode's merge reads the splits' maxima at the q head's place in the first sequence: every sequence of "
        "the batch weighs its splits by the first one's maxima (its sums and partials its own)",
        "wrong indexing",
    ),
    Mutant(
        "rotary.source-at-destination-row",
        "rotary",
        ROTARY,
        "    src = src_ptr + b * stride_sb + s * stride_ss + offs_h[:, None] * stride_sh + offs_d[None, :]",
        "    src = src_ptr + b * stride_sb + row * stride_ss + offs_h[:, None] * stride_sh + offs_d[None, :]",
        "rotary reads each head from the row it writes: k appended to a cache is read at its position in the call "
        "(right only where the positions are 0..S-1)",
        "wrong indexing",
    ),
    # the arrival protocol's memory order: the interpreter runs one program at a time and ignores it
    Mutant(
        "linear.merge-last.arrival-relaxed",
        "linear",
        LINEAR,
        '    arrived = tl.atomic_add(counter_ptr, 1, sem="acq_rel", scope="gpu")',
        '    arrived = tl.atomic_add(counter_ptr, 1, sem="relaxed", scope="gpu")',
        'MERGE "last" counts arrivals with a relaxed atomic: the last to arrive may read partials whose stores '
        "other programs made before arriving, but which it does not yet see",
        "merged before every part arrived",
        variants=("gemv", "skinny", "tma_split"),
    ),
    Mutant(
        "linear.merge-last.arrival-without-barrier",
        "linear",
        LINEAR,
        "    tl.debug_barrier()  # every thread of this program has stored its share before the arrival counts\n"
        '    arrived = tl.atomic_add(counter_ptr, 1, sem="acq_rel", scope="gpu")',
        '    arrived = tl.atomic_add(counter_ptr, 1, sem="acq_rel", scope="gpu")',
        'MERGE "last" counts a program\'s arrival without a barrier: one thread may arrive while others of its '
        "program are still storing their share of the partials",
        "merged before every part arrived",
        variants=("gemv", "skinny", "tma_split"),
    ),
    Mutant(
        "greedy_pick.arrival-at-cta-scope",
        "greedy_pick",
        PICK,
        '    arrived = tl.atomic_add(counter_ptr + row, 1, sem="acq_rel", scope="gpu")',
        '    arrived = tl.atomic_add(counter_ptr + row, 1, sem="acq_rel", scope="cta")',
        "greedy_pick counts a row's arrivals at the scope of one program: the ordering does not reach the other "
        "programs' picks, which the last to arrive reads",
        "merged before every part arrived",
    ),
    Mutant(
        "greedy_pick.arrival-without-barrier",
        "greedy_pick",
        PICK,
        "    tl.debug_barrier()  # every thread of this program has stored its share before the arrival counts\n"
        '    arrived = tl.atomic_add(counter_ptr + row, 1, sem="acq_rel", scope="gpu")',
        '    arrived = tl.atomic_add(counter_ptr + row, 1, sem="acq_rel", scope="gpu")',
        "greedy_pick counts a part's arrival without a barrier: one thread may arrive before the part's pick is stored",
        "merged before every part arrived",
    ),
    # ---------------------------------------------------------------------------- kmut15
    Mutant(
        "rotary.out-head-stride-of-input",
        "rotary",
        ROTARY,
        "row * stride_ds + offs_h[:, None] * stride_dh",
        "row * stride_ds + offs_h[:, None] * stride_sh",
        "rotary stores each head at the input's head stride, not the output's: right only while the two share a "
        "layout (q padded between heads, rotated into a dense output)",
        "wrong stride",
    ),
    Mutant(
        "rotary.out-position-stride-of-input",
        "rotary",
        ROTARY,
        "row * stride_ds + offs_h[:, None] * stride_dh",
        "row * stride_ss + offs_h[:, None] * stride_dh",
        "rotary stores each token at the input's position stride, not the output's (or the cache's): right only "
        "in place, or for a dense input",
        "wrong stride",
    ),
    Mutant(
        "rotary.cache-row-one-early",
        "rotary",
        ROTARY,
        "row = pos if CACHE else s",
        "row = pos - 1 if CACHE else s",
        "rotary appends k to the cache one row before its position (a length taken for the last index): v lands "
        "at the position, k a row early",
        "position off by one",
    ),
    Mutant(
        "rotary.position-is-token-index",
        "rotary",
        ROTARY,
        "pos = tl.load(pos_ptr + b * stride_pb + s * stride_ps).to(tl.int64)",
        "pos = s  # the token's index in the call: positions 0.. of a first chunk",
        "rotary ignores the positions it is given and rotates each token at its index in the call: right only for "
        "a first chunk (a later chunk or a decode step rotated at 0..)",
        "position off by one",
    ),
    Mutant(
        "attention_decode.sum-before-rescale",
        "attention_decode",
        ATTN,
        "l_i = l_i * alpha + tl.sum(p, axis=1)",
        "l_i = (l_i + tl.sum(p, axis=1)) * alpha",
        "decode's online softmax adds the block's weights to its running sum before the rescale: the new block's "
        "weights (already at the new max) rescaled again when the max grows",
        "skipped rescale",
    ),
    Mutant(
        "attention_prefill.sum-before-rescale",
        "attention_prefill",
        ATTN,
        "l_next = l_i * rescale + tl.sum(weights, axis=1)",
        "l_next = (l_i + tl.sum(weights, axis=1)) * rescale",
        "flash attention adds the block's weights to its running sum before the rescale: the new block's weights "
        "(already at the new max) rescaled again when the max grows",
        "skipped rescale",
    ),
    Mutant(
        "attention_decode.dot-before-rescale",
        "attention_decode",
        ATTN,
        "accumulator = accumulator * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)",
        "accumulator = (accumulator + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)) * alpha[:, None]",
        "decode's split adds the block's P.V to its accumulator before the rescale: the new block's values "
        "(already at the new max) rescaled again when the max grows",
        "skipped rescale",
    ),
    Mutant(
        "attention_decode.heads-at-kv-count",
        "attention_decode",
        ATTN,
        "heads = kv_h * G + offs_g",
        "heads = kv_h * HKV + offs_g",
        "decode's query heads of kv head j counted from j x Hkv, not j x G: right only where the group size equals "
        "the kv heads' count (or for one kv head)",
        "wrong GQA mapping",
    ),
    Mutant(
        "attention_prefill.diagonal-accumulator-not-rescaled",
        "attention_prefill",
        ATTN,
        "    acc = acc * rescale[:, None] + tl.dot(weights.to(vb.dtype), vb, input_precision=PRECISION)",
        "    if not DIAGONAL:  # 'a diagonal block holds the row's own key: its max is the row's already'\n"
        "        acc = acc * rescale[:, None]\n"
        "    acc = acc + tl.dot(weights.to(vb.dtype), vb, input_precision=PRECISION)",
        "flash attention's blocks crossing the diagonal do not rescale the accumulator when the running max grows "
        "(the sum is rescaled): right only where a row's largest score lies in its whole blocks",
        "skipped rescale",
    ),
    Mutant(
        "rms_norm.row-offsets-int32",
        "rms_norm",
        NORM,
        "    pid = tl.program_id(0).to(tl.int64)\n    offs_m = pid * BLOCK_M",
        "    pid = tl.program_id(0)\n    offs_m = pid * BLOCK_M",
        "rms_norm's row offsets in int32: row x stride wraps past 2^31 elements (M x N = 131,072 x 16,384)",
        "wrong indexing",
    ),
    Mutant(
        "silu_mul.row-offsets-int32",
        "silu_mul",
        SILU,
        "pid_m = tl.program_id(0).to(tl.int64)",
        "pid_m = tl.program_id(0)",
        "silu_mul's row offsets in int32: row x stride wraps past 2^31 elements (gu of a 131,072-token prefill of "
        "Llama-3.1-8B, 2 x 14,336 wide, holds 3.8e9)",
        "wrong indexing",
    ),
    Mutant(
        "attention_decode.batch-offsets-int32",
        "attention_decode",
        ATTN,
        "pid_bh = tl.program_id(0).to(tl.int64)",
        "pid_bh = tl.program_id(0)",
        "decode's sequence offsets in int32: b x the cache's batch stride wraps past 2^31 elements (a cache of "
        "batch 128 x 32,768 positions x 8 heads x 64)",
        "wrong indexing",
    ),
    Mutant(
        "attention_prefill.batch-offsets-int32",
        "attention_prefill",
        ATTN,
        "seq_head = tl.program_id(0).to(tl.int64)",
        "seq_head = tl.program_id(0)",
        "flash attention's sequence offsets in int32: b x q's batch stride wraps past 2^31 elements",
        "wrong indexing",
    ),
    Mutant(
        "greedy_pick.row-offsets-int32",
        "greedy_pick",
        PICK,
        "row = tl.program_id(1).to(tl.int64)",
        "row = tl.program_id(1)",
        "greedy_pick's row offsets in int32: row x the logits' row stride wraps past 2^31 elements",
        "wrong indexing",
    ),
    Mutant(
        "linear.tiled.row-offsets-int32",
        "linear",
        LINEAR,
        "offs_m = pid_m.to(tl.int64) * BLOCK_M",
        "offs_m = pid_m * BLOCK_M",
        "tiled's row offsets in int32: row x the row stride wraps past 2^31 elements (the fused gate/up "
        "projection's output at a 131,072-token prefill of Llama-3.1-8B: 131,072 x 28,672)",
        "wrong indexing",
        variants=TILED,
    ),
    Mutant(
        "linear.tma_split.partial-rows-int32",
        "linear",
        LINEAR,
        "tile_partials = part_ptr + offs_m[:, None].to(tl.int64) * N",
        "tile_partials = part_ptr + offs_m[:, None] * N",
        "tma_split's partial sums found at row x N in int32: past 2^31 elements a slice's partials land elsewhere",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    # offsets narrowed other than by a program id: an index cast to int32, loaded without widening, widened after
    # its multiply, a loop counter times a size (conformance.offsets: the launch lint names each)
    Mutant(
        "rms_norm.row-offsets-cast-int32",
        "rms_norm",
        NORM,
        "    offs_m = pid * BLOCK_M + tl.arange(0, BLOCK_M)\n",
        "    offs_m = (pid * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int32)\n",
        "rms_norm's rows cast to int32: row x stride wraps past 2^31 elements (524,288 rows of 4,096)",
        "wrong indexing",
    ),
    Mutant(
        "silu_mul.row-offsets-cast-int32",
        "silu_mul",
        SILU,
        "    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)\n",
        "    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int32)\n",
        "silu_mul's rows cast to int32: row x gu's row stride wraps past 2^31 elements (65,536 rows of Qwen2.5-7B's "
        "2 x 18,944)",
        "wrong indexing",
    ),
    Mutant(
        "rotary.positions-not-widened",
        "rotary",
        ROTARY,
        "pos = tl.load(pos_ptr + b * stride_pb + s * stride_ps).to(tl.int64)",
        "pos = tl.load(pos_ptr + b * stride_pb + s * stride_ps)",
        "rotary's positions loaded without widening: an int32 position times the cache's position stride in int32 "
        "(the KV-cache slot) wraps past 2^31 elements (2,097,152 positions of 1,024)",
        "wrong indexing",
    ),
    Mutant(
        "rotary.batch-cast-int32",
        "rotary",
        ROTARY,
        "    b = token // S\n",
        "    b = (token // S).to(tl.int32)\n",
        "rotary's sequence index cast to int32: b x the cache's batch stride wraps past 2^31 elements (128 sequences "
        "x 32,768 positions x 1,024)",
        "wrong indexing",
    ),
    Mutant(
        "greedy_pick.row-widened-after-multiply",
        "greedy_pick",
        PICK,
        "    row = tl.program_id(1).to(tl.int64)\n    parts = tl.num_programs(0)\n"
        "    offs = part * BLOCK_V + tl.arange(0, BLOCK_V)\n    inside = offs < V\n"
        "    x = tl.load(logits_ptr + row * stride_logits + offs,",
        "    row = tl.program_id(1)\n    parts = tl.num_programs(0)\n"
        "    offs = part * BLOCK_V + tl.arange(0, BLOCK_V)\n    inside = offs < V\n"
        "    x = tl.load(logits_ptr + (row * stride_logits).to(tl.int64) + offs,",
        "greedy_pick's row offset widened after its multiply: row x the row stride has wrapped already past 2^31 "
        "elements (14,124 rows of 152,064 logits)",
        "wrong indexing",
    ),
    Mutant(
        "attention_prefill.batch-cast-int32",
        "attention_prefill",
        ATTN,
        "    b = seq_head // HQ\n",
        "    b = (seq_head // HQ).to(tl.int32)\n",
        "flash attention's sequence index cast to int32: b x q's batch stride wraps past 2^31 elements (16 sequences "
        "of 32,768 positions of the fused qkv's 6,144)",
        "wrong indexing",
    ),
    Mutant(
        "attention_decode.batch-cast-int32",
        "attention_decode",
        ATTN,
        "    b = pid_bh // HKV\n",
        "    b = (pid_bh // HKV).to(tl.int32)\n",
        "decode's sequence index cast to int32: b x the cache's batch stride wraps past 2^31 elements (128 sequences "
        "x 32,768 positions x 1,024)",
        "wrong indexing",
    ),
    Mutant(
        "attention_decode.merge-batch-cast-int32",
        "attention_decode",
        ATTN,
        "    b = pid // HQ\n",
        "    b = (pid // HQ).to(tl.int32)\n",
        "decode's merge casts the sequence index to int32: b x the output's batch stride wraps past 2^31 elements "
        "(524,288 sequences of 32 x 128)",
        "wrong indexing",
    ),
    Mutant(
        "linear.gemv.columns-cast-int32",
        "linear",
        LINEAR,
        "    pid_k = tl.program_id(2)\n    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n",
        "    pid_k = tl.program_id(2)\n    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int32)\n",
        "gemv's output columns cast to int32: W's row x its row stride wraps past 2^31 elements (a head of 262,144 x "
        "8,192)",
        "wrong indexing",
        variants=GEMV,
    ),
    Mutant(
        "linear.merge.split-offset-int32",
        "linear",
        LINEAR,
        "        y += tl.load(part_ptr + (k * M + pid_m) * N + offs_n, mask=mask_n, other=0.0)",
        "        y += tl.load(part_ptr + k * M * N + pid_m * N + offs_n, mask=mask_n, other=0.0)",
        "the split-K merge's split offset, the loop counter times M x N, in int32: wraps past 2^31 partials",
        "wrong indexing",
        variants=SPLIT,
    ),
    Mutant(
        "linear.skinny.rows-cast-int32",
        "linear",
        LINEAR,
        "    pid_k = tl.program_id(2)\n    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)\n",
        "    pid_k = tl.program_id(2)\n    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int32)\n",
        "skinny's rows cast to int32: row x the row stride (and the partials' row x N) wraps past 2^31 elements",
        "wrong indexing",
        variants=SKINNY,
    ),
    Mutant(
        "linear.tiled.store-rows-cast-int32",
        "linear",
        LINEAR,
        "    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :]\n",
        "    y_ptrs = y_ptr + offs_m[:, None].to(tl.int32) * stride_ym + offs_n[None, :]\n",
        "tiled's output rows cast to int32 where they meet y's row stride: wraps past 2^31 elements (the fused "
        "gate/up output at 65,536 rows of Qwen2.5-7B's 37,888)",
        "wrong indexing",
        variants=TILED,
    ),
    Mutant(
        "linear.tma_split.output-rows-widened-after-multiply",
        "linear",
        LINEAR,
        "y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :]",
        "y_ptr + (offs_m[:, None] * stride_ym).to(tl.int64) + offs_n[None, :]",
        "tma_split's merged output rows widened after the multiply: row x y's row stride has wrapped already past "
        "2^31 elements",
        "wrong indexing",
        variants=TMA_SPLIT,
    ),
    # ---------------------------------------------------------------------------- kmut17
    Mutant(
        "attention_decode.kv-bases-in-a-tuple-int32",
        "attention_decode",
        ATTN,
        "    k_base = k_ptr + b * stride_kb + kv_h * stride_kh\n"
        "    v_base = v_ptr + b * stride_vb + kv_h * stride_vh\n",
        "    seq = b.to(tl.int32)\n"
        "    bases = (seq * stride_kb + kv_h * stride_kh, seq * stride_vb + kv_h * stride_vh)\n"
        "    k_base = k_ptr + bases[0]\n"
        "    v_base = v_ptr + bases[1]\n",
        "decode's cache bases computed as a tuple of offsets with the sequence index in int32: b x the "
        "cache's batch stride wraps past 2^31 elements (128 sequences x 32,768 positions x 1,024); the tuple "
        "hid it from the launch lint until it followed tuples",
        "wrong indexing",
    ),
    Mutant(
        "silu_mul.row-offsets-helper-int32",
        "silu_mul",
        SILU,
        "    g_ptrs = gu_ptr + offs_m[:, None] * stride_gu + offs_i[None, :]\n"
        "    g = tl.load(g_ptrs, mask=mask, other=0.0).to(tl.float32)\n"
        "    u = tl.load(g_ptrs + I, mask=mask, other=0.0).to(tl.float32)\n"
        "    # silu(g) * u = g / (1 + exp(-g)) * u\n"
        "    out = g / (1.0 + tl.exp(-g)) * u\n"
        "    tl.store(out_ptr + offs_m[:, None] * stride_out + offs_i[None, :],"
        " out.to(out_ptr.dtype.element_ty), mask=mask)\n"
        "\n"
        "\n"
        "PARAMS = ",
        "    g_ptrs = gu_ptr + _row_offsets(offs_m, stride_gu) + offs_i[None, :]\n"
        "    g = tl.load(g_ptrs, mask=mask, other=0.0).to(tl.float32)\n"
        "    u = tl.load(g_ptrs + I, mask=mask, other=0.0).to(tl.float32)\n"
        "    # silu(g) * u = g / (1 + exp(-g)) * u\n"
        "    out = g / (1.0 + tl.exp(-g)) * u\n"
        "    tl.store(out_ptr + offs_m[:, None] * stride_out + offs_i[None, :],"
        " out.to(out_ptr.dtype.element_ty), mask=mask)\n"
        "\n"
        "\n"
        "@triton.jit\n"
        "def _row_offsets(rows, stride):\n"
        '    """Each row\'s first element: rows x the row stride."""\n'
        "    return rows.to(tl.int32)[:, None] * stride\n"
        "\n"
        "\n"
        "PARAMS = ",
        "silu_mul's row offsets returned by a helper that takes the rows in int32: row x gu's row stride "
        "wraps past 2^31 elements (65,536 rows of Qwen2.5-7B's 37,888); a helper's return hid it from the "
        "launch lint until it followed returns",
        "wrong indexing",
    ),
    Mutant(
        "rms_norm.residual-through-helper-int32",
        "rms_norm",
        NORM,
        "        r = tl.load(r_ptr + offs_m[:, None] * stride_r + offs_n[None, :], mask=mask,"
        " other=0.0).to(tl.float32)\n"
        "        # h = x + r, rounded once to the stream's dtype, then normalised from that rounded"
        " value\n"
        "        h_rounded = (h + r).to(h_ptr.dtype.element_ty)\n"
        "        tl.store(h_ptr + offs_m[:, None] * stride_h + offs_n[None, :], h_rounded, mask=mask)\n"
        "        h = h_rounded.to(tl.float32)\n"
        "    # rstd = 1 / sqrt(mean(h^2) + eps), in fp32\n"
        "    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)\n"
        "    w = tl.load(w_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)\n"
        "    y = h * rstd[:, None] * w[None, :]\n"
        "    tl.store(y_ptr + offs_m[:, None] * stride_y + offs_n[None, :],"
        " y.to(y_ptr.dtype.element_ty), mask=mask)\n"
        "\n"
        "\n"
        "def _check(",
        "        r = tl.load(_stream(x_ptr, r_ptr, HAS_RESIDUAL) + offs_m[:, None].to(tl.int32) *"
        " stride_r + offs_n[None, :],\n"
        "                    mask=mask, other=0.0).to(tl.float32)\n"
        "        # h = x + r, rounded once to the stream's dtype, then normalised from that rounded"
        " value\n"
        "        h_rounded = (h + r).to(h_ptr.dtype.element_ty)\n"
        "        tl.store(h_ptr + offs_m[:, None] * stride_h + offs_n[None, :], h_rounded, mask=mask)\n"
        "        h = h_rounded.to(tl.float32)\n"
        "    # rstd = 1 / sqrt(mean(h^2) + eps), in fp32\n"
        "    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)\n"
        "    w = tl.load(w_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)\n"
        "    y = h * rstd[:, None] * w[None, :]\n"
        "    tl.store(y_ptr + offs_m[:, None] * stride_y + offs_n[None, :],"
        " y.to(y_ptr.dtype.element_ty), mask=mask)\n"
        "\n"
        "\n"
        "@triton.jit\n"
        "def _stream(x_ptr, r_ptr, HAS_RESIDUAL: tl.constexpr):\n"
        '    """The tensor added to x: the residual where there is one."""\n'
        "    return r_ptr if HAS_RESIDUAL else x_ptr\n"
        "\n"
        "\n"
        "def _check(",
        "rms_norm's residual read through a helper returning its pointer, the rows in int32: row x the "
        "residual's row stride wraps past 2^31 elements (524,288 rows of 4,096); the pointer a helper returns "
        "hid it from the launch lint until it followed returns",
        "wrong indexing",
    ),
    Mutant(
        "rms_norm.stream-through-where-int32",
        "rms_norm",
        NORM,
        "        tl.store(h_ptr + offs_m[:, None] * stride_h + offs_n[None, :], h_rounded, mask=mask)\n",
        "        tl.store(tl.where(HAS_RESIDUAL, h_ptr, y_ptr) + offs_m[:, None].to(tl.int32) * stride_h"
        " + offs_n[None, :],\n"
        "                 h_rounded, mask=mask)\n",
        "rms_norm's residual stream stored through a pointer chosen by tl.where, the rows in int32: row x h's "
        "row stride wraps past 2^31 elements (524,288 rows of 4,096)",
        "wrong indexing",
    ),
    Mutant(
        "greedy_pick.picks-row-int32-shifted",
        "greedy_pick",
        PICK,
        "    picks = part_ptr + row * 2 * parts\n",
        "    picks = part_ptr + ((row * parts).to(tl.int32) << 1)\n",
        "greedy_pick's row of picks narrowed after its multiply and doubled by a shift: row x parts x 2 wraps "
        "past 2^31 (a cast of an int64 product)",
        "wrong indexing",
    ),
    # ---------------------------------------------------------------------------- kmut18
    # offsets narrowed inside a compiler hint, a reshape or tl.cast, or carried in a tuple picked by a constexpr (the
    # launch lint follows each: conformance.offsets), and launchers passing a layout the bounds do not assume (the
    # check's launch record holds each launch to conformance.offsets.LAYOUTS)
    Mutant(
        "silu_mul.row-offsets-multiple-of-int32",
        "silu_mul",
        SILU,
        "    g_ptrs = gu_ptr + offs_m[:, None] * stride_gu + offs_i[None, :]\n",
        "    rows = tl.multiple_of(offs_m.to(tl.int32) * stride_gu, 8)  # each row's start, aligned for vector loads\n"
        "    g_ptrs = gu_ptr + rows[:, None] + offs_i[None, :]\n",
        "silu_mul's row offsets under an alignment hint, the rows in int32: row x gu's row stride wraps past 2^31 "
        "elements (65,536 rows of Qwen2.5-7B's 37,888); tl.multiple_of hid it from the launch lint until it "
        "followed hints",
        "wrong indexing",
    ),
    Mutant(
        "linear.tiled.x-rows-multiple-of-int32",
        "linear",
        LINEAR,
        "    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :]\n",
        "    rows = tl.multiple_of(offs_m.to(tl.int32) * stride_xm, 8)  # each row's start, 16-byte aligned\n"
        "    x_ptrs = x_ptr + rows[:, None] + offs_k[None, :]\n",
        "tiled's x row offsets under an alignment hint, the rows in int32: row x x's row stride wraps past 2^31 "
        "elements (a 262,144-row prefill of 8,192 features); tl.multiple_of hid it from the launch lint until it "
        "followed hints",
        "wrong indexing",
        variants=TILED,
    ),
    Mutant(
        "rms_norm.output-rows-tl-cast-int32",
        "rms_norm",
        NORM,
        "    tl.store(y_ptr + offs_m[:, None] * stride_y + offs_n[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)\n",
        "    tl.store(y_ptr + tl.cast(offs_m[:, None] * stride_y, tl.int32) + offs_n[None, :],"
        " y.to(y_ptr.dtype.element_ty), mask=mask)\n",
        "rms_norm's output row offsets cast to int32 by tl.cast after their multiply: row x y's row stride wraps "
        "past 2^31 elements (524,288 rows of 4,096); tl.cast hid it from the launch lint until it read tl.cast "
        "as a cast",
        "wrong indexing",
    ),
    Mutant(
        "rms_norm.stream-rows-expand-dims-int32",
        "rms_norm",
        NORM,
        "        tl.store(h_ptr + offs_m[:, None] * stride_h + offs_n[None, :], h_rounded, mask=mask)\n",
        "        tl.store(h_ptr + tl.expand_dims(offs_m.to(tl.int32) * stride_h, 1) + offs_n[None, :], h_rounded,"
        " mask=mask)\n",
        "rms_norm's residual stream rows given their axis by tl.expand_dims, the rows in int32: row x h's row "
        "stride wraps past 2^31 elements (524,288 rows of 4,096); the call hid it from the launch lint until it "
        "followed reshapes",
        "wrong indexing",
    ),
    Mutant(
        "rms_norm.rows-in-a-tuple-picked-by-constexpr-int32",
        "rms_norm",
        NORM,
        "    y = h * rstd[:, None] * w[None, :]\n"
        "    tl.store(y_ptr + offs_m[:, None] * stride_y + offs_n[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)\n"
        "\n"
        "\n"
        "def _check(",
        "    y = h * rstd[:, None] * w[None, :]\n"
        "    outputs = ((y_ptr, offs_m.to(tl.int32)[:, None] * stride_y), (h_ptr, offs_m[:, None] * stride_h))\n"
        "    tl.store(_row_start(outputs, 0) + offs_n[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)\n"
        "\n"
        "\n"
        "@triton.jit\n"
        "def _row_start(pairs, WHICH: tl.constexpr):\n"
        '    """The first elements of the rows of one of the (pointer, row offsets) pairs."""\n'
        "    pointer, rows = pairs[WHICH]\n"
        "    return pointer + rows\n"
        "\n"
        "\n"
        "def _check(",
        "rms_norm's outputs as (pointer, row offsets) pairs in a tuple a helper picks by a constexpr, y's rows in "
        "int32: row x y's row stride wraps past 2^31 elements (524,288 rows of 4,096); a tuple indexed by anything "
        "but a literal was read whole, an offset as a pointer, until the lint picked any of its elements",
        "wrong indexing",
    ),
    Mutant(
        "attention_prefill.output-position-major",
        "attention_prefill",
        ATTN,
        "    o = empty((B, C, HQ, D), dtype=q.dtype, device=q.device)\n",
        "    o = empty((C, B, HQ, D), dtype=q.dtype, device=q.device).transpose(0, 1)  # the o projection's row"
        " order\n",
        "flash attention's output allocated position-major, the batch folded into its position stride: a query "
        "position x o's position stride (B x Hq x D) reaches 2^31 elements (query 2,048 of a chunk of 256 sequences "
        "x 4,096), where the allowance's bound assumed one position's row; the layout was read by neither the lint "
        "nor the bounds until the check held each launch to offsets.LAYOUTS",
        "wrong stride",
    ),
    Mutant(
        "rotary.q-out-head-major",
        "rotary",
        ROTARY,
        "    q_out = q if inplace else empty(tuple(q.shape), dtype=q.dtype, device=q.device)\n",
        "    q_out = q if inplace else empty((B, HQ, S, D), dtype=q.dtype, device=q.device).transpose(1, 2)  # as SDPA"
        " reads q\n",
        "rotary's q output allocated head-major ([B, Hq, S, D], as SDPA reads it): a head x q_out's head stride "
        "(S x D) reaches 2^31 elements (head 16 at 1,048,576 positions x 128), where the allowance assumed a head "
        "within one token's row; the layout was read by neither the lint nor the bounds until the check held each "
        "launch to offsets.LAYOUTS",
        "wrong stride",
    ),
    Mutant(
        "silu_mul.output-rows-int32-under-assume",
        "silu_mul",
        SILU,
        "    tl.store(out_ptr + offs_m[:, None] * stride_out + offs_i[None, :], out.to(out_ptr.dtype.element_ty),"
        " mask=mask)\n",
        "    rows = offs_m.to(tl.int32)\n"
        "    tl.assume(rows >= 0)  # rows count up from 0: the compiler may drop the sign\n"
        "    tl.store(out_ptr + rows[:, None] * stride_out + offs_i[None, :], out.to(out_ptr.dtype.element_ty),"
        " mask=mask)\n",
        "silu_mul's output rows narrowed to int32 under a tl.assume: row x out's row stride wraps past 2^31 "
        "elements (131,072 rows of Qwen2.5-7B's 18,944); tl.assume computes nothing an offset uses, and the product "
        "is named",
        "wrong indexing",
    ),
    Mutant(
        "rotary.positions-narrowed-int32",
        "rotary",
        ROTARY,
        "    pos = tl.load(pos_ptr + b * stride_pb + s * stride_ps).to(tl.int64)\n",
        "    pos = tl.load(pos_ptr + b * stride_pb + s * stride_ps).to(tl.int32)  # a position fits int32\n",
        "rotary's positions, loaded from an int64 tensor, narrowed to int32: the KV-cache slot x the cache's "
        "position stride wraps past 2^31 elements (2,097,152 positions of a 1,024-element row); a loaded index is "
        "read as int32 whatever its tensor, so each product it enters is named",
        "wrong indexing",
    ),
    # ---------------------------------------------------------------------------- kmut19
    Mutant(
        "attention_decode.merge-normalised-partials",
        "attention_decode",
        ATTN,
        "    out = tl.sum(part * weight[:, None], axis=0) / tl.sum(l * weight, axis=0)\n",
        "    out = tl.sum(part / l[:, None] * (l * weight)[:, None], axis=0) / tl.sum(l * weight, axis=0)\n",
        "the merge normalises each split's partial before weighing it by its share of the sum: the same value where "
        "every split holds a key, 0 / 0 where one is empty (a short sequence beside a long one)",
        "wrong formula",
    ),
    Mutant(
        "attention_decode.accumulator-in-model-dtype",
        "attention_decode",
        ATTN,
        "        accumulator = accumulator * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)\n",
        "        accumulator = (accumulator * alpha[:, None] + tl.dot(p.to(v.dtype), v, "
        "input_precision=PRECISION)).to(\n"
        "            v.dtype).to(tl.float32)\n",
        "the split's running output is kept in the cache's dtype between key blocks, not in fp32",
        "low-precision accumulation",
    ),
    Mutant(
        "rotary.odd-positions-rotated-backwards",
        "rotary",
        ROTARY,
        "    sn = tl.load(sin_ptr + pos * stride_cos + offs_d, mask=offs_d < HALF, other=0.0)\n",
        "    sn = tl.load(sin_ptr + pos * stride_cos + offs_d, mask=offs_d < HALF, other=0.0)\n"
        "    sn = tl.where(pos % 2 == 1, -sn, sn)\n",
        "the half-dim pairing swapped at an odd position (the second half leads): each pair rotated by minus its angle",
        "rope halves swapped",
    ),
    Mutant(
        "greedy_pick.merge-held-to-block",
        "greedy_pick",
        PICK,
        "        held = p < parts\n",
        "        held = p < PARTS\n",
        "the merge holds every lane of its power-of-two block, not the row's parts: where the parts are not a power "
        "of two it reads the picks' indices (and the next row's) as values",
        "mask off by one",
    ),
    Mutant(
        "attention_decode.merge-tail-max-filled-zero",
        "attention_decode",
        ATTN,
        '    m = tl.load(ml_ptr + pid * SPLITS + offs_s, mask=mask_s, other=float("-inf"))\n',
        "    m = tl.load(ml_ptr + pid * SPLITS + offs_s, mask=mask_s, other=0.0)\n",
        "the merge's padded splits (SPLITS below a power of two) read a maximum of 0, not -inf: every share is taken "
        "against max(m, 0)",
        "wrong fill value",
    ),
    Mutant(
        "attention_prefill.accumulator-in-q-dtype",
        "attention_prefill",
        ATTN,
        "    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)\n",
        "    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=q.dtype)\n",
        "the running output starts in q's dtype",
        "low-precision accumulation",
    ),
    # ---------------------------------------------------------------------------- kmut20
    Mutant(
        "rms_norm.squares-tail-filled-one",
        "rms_norm",
        NORM,
        "    h = tl.load(x_ptr + offs_m[:, None] * stride_x + offs_n[None, :], mask=mask, other=0.0).to(tl.float32)\n",
        "    h = tl.load(x_ptr + offs_m[:, None] * stride_x + offs_n[None, :], mask=mask, other=1.0).to(tl.float32)\n",
        "x's padded columns read as 1: each enters the sum of squares (tl.sum(h * h)) as 1 wherever N is not a whole "
        "block",
        "wrong fill value",
    ),
    Mutant(
        "rms_norm.residual-tail-filled-one",
        "rms_norm",
        NORM,
        "* stride_r + offs_n[None, :], mask=mask, other=0.0)",
        "* stride_r + offs_n[None, :], mask=mask, other=1.0)",
        "the residual's padded columns read as 1: h = x + r holds 1 there, which the sum of squares takes in",
        "wrong fill value",
    ),
    Mutant(
        "greedy_pick.logits-tail-filled-zero",
        "greedy_pick",
        PICK,
        '    x = tl.load(logits_ptr + row * stride_logits + offs, mask=inside, other=float("-inf")).to(tl.float32)\n',
        "    x = tl.load(logits_ptr + row * stride_logits + offs, mask=inside, other=0.0).to(tl.float32)\n",
        "a part's padded logits read as 0: a row whose logits are all below 0 picks a padded lane (index V)",
        "wrong fill value",
    ),
    Mutant(
        "greedy_pick.merge-tail-filled-zero",
        "greedy_pick",
        PICK,
        '        v = tl.load(picks + p, mask=held, other=float("-inf"), cache_modifier=".cg")\n',
        '        v = tl.load(picks + p, mask=held, other=0.0, cache_modifier=".cg")\n',
        "the merge's padded parts read a pick of 0: a row whose every pick is below 0 takes no part's index (V)",
        "wrong fill value",
    ),
    Mutant(
        "attention_decode.scores-masked-to-zero",
        "attention_decode",
        ATTN,
        '        qk = tl.where(mask_n[None, :], qk, float("-inf"))\n',
        "        qk = tl.where(mask_n[None, :], qk, 0.0)\n",
        "the keys past the chunk's end scored 0, not -inf: they enter the running maximum and, as 2^(0 - m), the sum",
        "wrong fill value",
    ),
    Mutant(
        "attention_decode.merge-tail-max-where-zero",
        "attention_decode",
        ATTN,
        "    weight = tl.exp2(m - tl.max(m, axis=0))  # chunk c's share: 2^(m_c - max m)\n",
        "    weight = tl.exp2(m - tl.max(tl.where(mask_s, m, 0.0), axis=0))  # chunk c's share: 2^(m_c - max m)\n",
        "the merge's maximum taken over its splits with the padded ones set to 0 (a tl.where), not -inf: every share "
        "is taken against max(m, 0)",
        "wrong fill value",
    ),
    Mutant(
        "attention_decode.merge-tail-max-cast-apart",
        "attention_decode",
        ATTN,
        '    m = tl.load(ml_ptr + pid * SPLITS + offs_s, mask=mask_s, other=float("-inf"))\n',
        "    m = tl.load(ml_ptr + pid * SPLITS + offs_s, mask=mask_s, other=0.0)\n    m = m.to(tl.float32)\n",
        "the merge's padded splits read a maximum of 0, cast on a line of their own (m assigned twice): every share is "
        "taken against max(m, 0)",
        "wrong fill value",
    ),
    # ---------------------------------------------------------------- kmut21: fills through tl.dot, axes
    Mutant(
        "linear.skinny.dot-tails-filled-one",
        "linear",
        LINEAR,
        "in_k[None, :],\n                    other=0.0)\n        b = tl.load(w_ptr + offs_n[None, :] * stride_wn + "
        "offs_k[:, None], mask=in_k[:, None] & in_n[None, :],\n                    other=0.0)",
        "in_k[None, :],\n                    other=1.0)\n        b = tl.load(w_ptr + offs_n[None, :] * stride_wn + "
        "offs_k[:, None], mask=in_k[:, None] & in_n[None, :],\n                    other=1.0)",
        "skinny's x and W tiles both read with a tail of 1: each padded K lane adds 1 x 1 to every dot",
        "wrong fill value",
        variants=SKINNY,
    ),
    Mutant(
        "linear.tiled.dot-tails-filled-one",
        "linear",
        LINEAR,
        "        a = tl.load(x_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)\n"
        "        b = tl.load(w_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)\n",
        "        a = tl.load(x_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=1.0)\n"
        "        b = tl.load(w_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=1.0)\n",
        "tiled's x and W tiles both read with a tail of 1: each padded K lane adds 1 x 1 to every dot",
        "wrong fill value",
        variants=TILED,
    ),
    Mutant(
        "linear.tiled.w-tail-filled-nan",
        "linear",
        LINEAR,
        "        b = tl.load(w_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)\n",
        '        b = tl.load(w_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=float("nan"))\n',
        "tiled's W tile read with a tail of NaN: x's padded K lanes hold 0, and 0 x NaN is NaN in the dot",
        "wrong fill value",
        variants=TILED,
    ),
    Mutant(
        "attention_decode.scores-masked-on-group-axis",
        "attention_decode",
        ATTN,
        '        qk = tl.where(mask_n[None, :], qk, float("-inf"))\n',
        '        qk = tl.where(mask_g[:, None], qk, float("-inf"))\n',
        "decode's scores masked by the group's rows, not the chunk's keys: a key past the chunk's end scores q . 0 = 0",
        "mask on the wrong dimension",
    ),
    Mutant(
        "attention_decode.values-tail-filled-nan",
        "attention_decode",
        ATTN,
        "mask=mask_n[:, None] & mask_d[None, :],\n                    other=0.0)",
        'mask=mask_n[:, None] & mask_d[None, :],\n                    other=float("nan"))',
        "decode's v read with a tail of NaN: a key past the chunk's end has weight 0, and 0 x NaN is NaN in the dot",
        "wrong fill value",
    ),
    Mutant(
        "attention_prefill.diagonal-values-filled-nan",
        "attention_prefill",
        ATTN,
        "vb = tl.load(v_ptrs, mask=inside[:, None] & mask_d[None, :], other=0.0)",
        'vb = tl.load(v_ptrs, mask=inside[:, None] & mask_d[None, :], other=float("nan"))',
        "on the diagonal, v's keys past S read as NaN: their weight is 0, and 0 x NaN is NaN in the dot",
        "wrong fill value",
    ),
    Mutant(
        "linear.gemv.sum-over-k-lanes",
        "linear",
        LINEAR,
        "    y = tl.sum(accumulator, axis=1)\n",
        "    y = tl.sum(accumulator, axis=0)\n",
        "gemv sums its [BLOCK_N, BLOCK_K] accumulator over the rows, not the K lanes",
        "reduction over the wrong axis",
        variants=GEMV,
    ),
    Mutant(
        "rms_norm.squares-summed-over-rows",
        "rms_norm",
        NORM,
        "rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)",
        "rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=0) / N + eps)",
        "rms_norm sums the squares of its [BLOCK_M, BLOCK_N] tile over the rows, not the columns",
        "reduction over the wrong axis",
    ),
    # ------------------------------------- kmut22: a caller's fill in a helper, implicit broadcasts, the padded merge
    Mutant(
        "attention_prefill.q-filled-with-nan",
        "attention_prefill",
        ATTN,
        "                mask=mask_c[:, None] & mask_d[None, :], other=0.0)\n    k_base",
        '                mask=mask_c[:, None] & mask_d[None, :], other=float("nan"))\n    k_base',
        "the flash kernel's q read with a tail of NaN: in _flash_block each padded head-dim lane meets k's 0, and 0 x "
        "NaN is NaN in every score",
        "wrong fill value",
    ),
    Mutant(
        "attention_decode.merge-mask-to-block",
        "attention_decode",
        ATTN,
        "    mask_s = offs_s < SPLITS\n",
        "    mask_s = offs_s < BLOCK_S\n",
        "the decode merge masks its splits at BLOCK_S: at a split count that is not a power of two it reads the next "
        "head's first splits as its own",
        "mask off by one",
    ),
    Mutant(
        "attention_decode.merge-mask-inclusive",
        "attention_decode",
        ATTN,
        "    mask_s = offs_s < SPLITS\n",
        "    mask_s = offs_s <= SPLITS\n",
        "the decode merge's split mask taken inclusive: at a split count that is not a power of two it reads the next "
        "head's first split as its own",
        "mask off by one",
    ),
    Mutant(
        "attention_decode.merge-parts-filled-nan",
        "attention_decode",
        ATTN,
        "                   mask=mask_s[:, None] & mask_d[None, :], other=0.0)",
        '                   mask=mask_s[:, None] & mask_d[None, :], other=float("nan"))',
        "the decode merge reads its padded splits' partials as NaN: weighed by 2^-inf = 0, and 0 x NaN is NaN",
        "wrong fill value",
    ),
    Mutant(
        "rms_norm.rstd-broadcast-along-columns",
        "rms_norm",
        NORM,
        "    y = h * rstd[:, None] * w[None, :]\n",
        "    y = h * rstd * w[None, :]\n",
        "rms_norm's rows' statistic met by the [BLOCK_M, BLOCK_N] tile without [:, None]: Triton broadcasts it along "
        "the last axis, the columns",
        "broadcast along the wrong axis",
    ),
    Mutant(
        "attention_decode.max-broadcast-along-keys",
        "attention_decode",
        ATTN,
        "        p = tl.exp2(qk - m_new[:, None])\n",
        "        p = tl.exp2(qk - m_new)\n",
        "decode's running maximum of each query head met by the [BLOCK_G, BLOCK_N] scores without [:, None]: "
        "broadcast along the keys",
        "broadcast along the wrong axis",
    ),
    Mutant(
        "attention_prefill.rescale-broadcast-along-head-dim",
        "attention_prefill",
        ATTN,
        "    acc = acc * rescale[:, None] + tl.dot(weights.to(vb.dtype), vb, input_precision=PRECISION)\n",
        "    acc = acc * rescale + tl.dot(weights.to(vb.dtype), vb, input_precision=PRECISION)\n",
        "the flash block's per-row rescale met by the [BLOCK_M, BLOCK_D] accumulator without [:, None]: broadcast "
        "along the head dim",
        "broadcast along the wrong axis",
    ),
    Mutant(
        "attention_decode.normalised-along-head-dim",
        "attention_decode",
        ATTN,
        "        out = accumulator / l_i[:, None]\n",
        "        out = accumulator / l_i\n",
        "decode's one-split output divided by each query head's sum without [:, None]: broadcast along the head dim",
        "broadcast along the wrong axis",
    ),
    # ---------------------------------------------------------------------------- round kmut23
    Mutant(
        "linear.gemv.program-axes-swapped",
        "linear",
        LINEAR,
        "    pid_n = tl.program_id(0).to(tl.int64)\n    pid_m = tl.program_id(1).to(tl.int64)\n"
        "    pid_k = tl.program_id(2)\n    offs_n = pid_n",
        "    pid_n = tl.program_id(1).to(tl.int64)\n    pid_m = tl.program_id(0).to(tl.int64)\n"
        "    pid_k = tl.program_id(2)\n    offs_n = pid_n",
        "gemv reads its column block from the launch's row axis and its row from the column-block axis",
        "wrong indexing",
        variants=GEMV,
    ),
    Mutant(
        "attention_decode.split-and-head-axes-swapped",
        "attention_decode",
        ATTN,
        "    pid_bh = tl.program_id(0).to(tl.int64)  # batch x kv head\n    split_id = tl.program_id(1)\n",
        "    pid_bh = tl.program_id(1).to(tl.int64)  # batch x kv head\n    split_id = tl.program_id(0)\n",
        "decode's split kernel takes its (batch, kv head) from the launch's split axis and its split from the other",
        "wrong indexing",
    ),
    Mutant(
        "linear.gemv.k-mask-inclusive",
        "linear",
        LINEAR,
        "        mask_k = offs_k < k_end\n",
        "        mask_k = offs_k <= k_end\n",
        "gemv's K mask is inclusive: each slice also reads the next slice's first element (past K in the last)",
        "mask off by one",
        variants=GEMV,
    ),
    Mutant(
        "silu_mul.column-mask-inclusive",
        "silu_mul",
        SILU,
        "(offs_i[None, :] < I)",
        "(offs_i[None, :] <= I)",
        "silu_mul's column mask is inclusive: column I (the row's first up value as a gate) is computed and stored",
        "mask off by one",
    ),
    Mutant(
        "attention_prefill.whole-in-query-blocks",
        "attention_prefill",
        ATTN,
        "    whole = (past + block * BLOCK_M + 1) // BLOCK_N * BLOCK_N\n",
        "    whole = (past + block * BLOCK_M + 1) // BLOCK_M * BLOCK_M\n",
        "the flash kernel's unmasked key blocks end at a multiple of BLOCK_M, not BLOCK_N",
        "wrong loop bound",
    ),
    Mutant(
        "attention_decode.key-loop-by-head-dim-block",
        "attention_decode",
        ATTN,
        "    for start_n in range(start, end, BLOCK_N):\n",
        "    for start_n in range(start, end, BLOCK_D):\n",
        "decode's key loop steps by BLOCK_D over blocks of BLOCK_N keys",
        "wrong loop bound",
    ),
    Mutant(
        "attention_decode.k-and-v-batch-strides-swapped",
        "attention_decode",
        ATTN,
        "        *q.stride()[:2], *k_cache.stride()[:3], *v_cache.stride()[:3],\n",
        "        *q.stride()[:2], v_cache.stride(0), *k_cache.stride()[1:3], k_cache.stride(0),"
        " *v_cache.stride()[1:3],\n",
        "decode passes the v cache's batch stride for the k cache and the k cache's for the v cache",
        "wrong stride",
    ),
    Mutant(
        "linear.gemv.column-block-by-k-block",
        "linear",
        LINEAR,
        "    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n    mask_n = offs_n < N\n    # this program's share",
        "    offs_n = pid_n * BLOCK_K + tl.arange(0, BLOCK_N)\n    mask_n = offs_n < N\n    # this program's share",
        "gemv's column blocks start at multiples of BLOCK_K",
        "wrong indexing",
        variants=GEMV,
    ),
    Mutant(
        "rms_norm.x-not-upcast",
        "rms_norm",
        NORM,
        "    h = tl.load(x_ptr + offs_m[:, None] * stride_x + offs_n[None, :], mask=mask, other=0.0).to(tl.float32)\n",
        "    h = tl.load(x_ptr + offs_m[:, None] * stride_x + offs_n[None, :], mask=mask, other=0.0)\n",
        "rms_norm squares and sums x in its storage dtype (no residual): the cast to fp32 before the sum dropped",
        "low-precision accumulation",
    ),
    Mutant(
        "rms_norm.stream-not-upcast",
        "rms_norm",
        NORM,
        "        h = h_rounded.to(tl.float32)\n",
        "        h = h_rounded\n",
        "rms_norm squares and sums the rounded residual stream in its storage dtype: the cast to fp32 dropped",
        "low-precision accumulation",
    ),
    Mutant(
        "greedy_pick.part-and-row-axes-swapped",
        "greedy_pick",
        PICK,
        "    part = tl.program_id(0)\n    row = tl.program_id(1).to(tl.int64)\n",
        "    part = tl.program_id(1)\n    row = tl.program_id(0).to(tl.int64)\n",
        "greedy_pick takes its part from the launch's row axis and its row from the part axis",
        "wrong indexing",
    ),
    Mutant(
        "rotary.cos-mask-inclusive",
        "rotary",
        ROTARY,
        "    c = tl.load(cos_ptr + pos * stride_cos + offs_d, mask=offs_d < HALF, other=0.0)\n",
        "    c = tl.load(cos_ptr + pos * stride_cos + offs_d, mask=offs_d <= HALF, other=0.0)\n",
        "rotary reads one cos value past the half (the next position's first; past the table at its last row)",
        "mask off by one",
    ),
    Mutant(
        "rotary.token-and-head-axes-swapped",
        "rotary",
        ROTARY,
        "    token = tl.program_id(0).to(tl.int64)\n    pid_h = tl.program_id(1)\n",
        "    token = tl.program_id(1).to(tl.int64)\n    pid_h = tl.program_id(0)\n",
        "rotary takes its token from the launch's head-block axis and its head block from the token axis",
        "wrong indexing",
    ),
    Mutant(
        "linear.tiled.x-and-y-row-strides-swapped",
        "linear",
        LINEAR,
        "            x, weight, b, y, M, N, K, x.stride(0), weight.stride(0), y.stride(0),\n"
        "            HAS_BIAS=bias is not None, PRECISION",
        "            x, weight, b, y, M, N, K, y.stride(0), weight.stride(0), x.stride(0),\n"
        "            HAS_BIAS=bias is not None, PRECISION",
        "tiled reads x at y's row stride and stores y at x's (the two have one shape where K = N)",
        "wrong stride",
        variants=TILED,
    ),
    Mutant(
        "attention_prefill.q-and-o-strides-swapped",
        "attention_prefill",
        ATTN,
        "        *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3],\n",
        "        *o.stride()[:3], *k.stride()[:3], *v.stride()[:3], *q.stride()[:3],\n",
        "the flash kernel reads q at the output's strides and stores the output at q's (the two have one shape)",
        "wrong stride",
    ),
    Mutant(
        "attention_decode.merge-output-strides-of-q",
        "attention_decode",
        ATTN,
        "            part, ml, o, HQ, B * HQ * splits, *o.stride()[:2],\n",
        "            part, ml, o, HQ, B * HQ * splits, *q.stride()[:2],\n",
        "decode's merge stores the output at q's batch and head strides (the two have one shape)",
        "wrong stride",
    ),
    # ------------------------- round kmut24: rounding toward zero, a constexpr switch inverted, a grid one too large
    Mutant(
        "silu_mul.output-rounded-toward-zero",
        "silu_mul",
        SILU,
        "out.to(out_ptr.dtype.element_ty), mask=mask)",
        'out.to(out_ptr.dtype.element_ty, fp_downcast_rounding="rtz"), mask=mask)',
        "silu_mul rounds its fp32 product to the output's dtype toward zero, not to nearest: up to an ulp off",
        "wrong rounding mode",
    ),
    Mutant(
        "rms_norm.output-rounded-toward-zero",
        "rms_norm",
        NORM,
        "y.to(y_ptr.dtype.element_ty), mask=mask)",
        'y.to(y_ptr.dtype.element_ty, fp_downcast_rounding="rtz"), mask=mask)',
        "rms_norm rounds the normalised row to the output's dtype toward zero, not to nearest: up to an ulp off",
        "wrong rounding mode",
    ),
    Mutant(
        "rms_norm.stream-rounded-toward-zero",
        "rms_norm",
        NORM,
        "        h_rounded = (h + r).to(h_ptr.dtype.element_ty)\n",
        '        h_rounded = (h + r).to(h_ptr.dtype.element_ty, fp_downcast_rounding="rtz")\n',
        "rms_norm rounds the residual stream x + r toward zero, not to nearest (and normalises that stream)",
        "wrong rounding mode",
    ),
    Mutant(
        "rotary.first-half-rounded-toward-zero",
        "rotary",
        ROTARY,
        "    tl.store(dst, (x1 * c[None, :] - x2 * sn[None, :]).to(dst_ptr.dtype.element_ty), mask=mask)\n",
        "    tl.store(dst, (x1 * c[None, :] - x2 * sn[None, :]).to(dst_ptr.dtype.element_ty, "
        'fp_downcast_rounding="rtz"), mask=mask)\n',
        "rotary rounds the first half of each rotated head toward zero, not to nearest: up to an ulp off",
        "wrong rounding mode",
    ),
    Mutant(
        "attention_chunk.output-rounded-toward-zero",
        "attention_chunk",
        ATTN,
        "             result.to(o_ptr.dtype.element_ty), mask=mask_c[:, None] & mask_d[None, :])",
        '             result.to(o_ptr.dtype.element_ty, fp_downcast_rounding="rtz"), '
        "mask=mask_c[:, None] & mask_d[None, :])",
        "the flash kernel rounds its output to the output's dtype toward zero, not to nearest: up to an ulp off",
        "wrong rounding mode",
    ),
    Mutant(
        "attention_chunk.even-d-inverted",
        "attention_chunk",
        ATTN,
        "m_i, l_i, acc, scale_log2, PRECISION, BLOCK_N, False, D == BLOCK_D)",
        "m_i, l_i, acc, scale_log2, PRECISION, BLOCK_N, False, D != BLOCK_D)",
        "the flash kernel's whole key blocks take their loads unmasked where D is short of its block (EVEN_D inverted)",
        "constexpr switch inverted",
    ),
    Mutant(
        "rms_norm.residual-switch-inverted",
        "rms_norm",
        NORM,
        "HAS_RESIDUAL=residual is not None,",
        "HAS_RESIDUAL=residual is None,",
        "rms_norm's residual branch taken without a residual (x added to itself) and skipped with one",
        "constexpr switch inverted",
    ),
    Mutant(
        "rotary.cache-switch-inverted",
        "rotary",
        ROTARY,
        "        CACHE=cached, HALF=D // 2,",
        "        CACHE=not cached, HALF=D // 2,",
        "rotary's cache branch taken without a cache (k written at its position, k copied beside it), skipped with one",
        "constexpr switch inverted",
    ),
    Mutant(
        "rotary.grid-one-token-too-many",
        "rotary",
        ROTARY,
        "    programs = (B * S, triton.cdiv(HQ, block_h) + triton.cdiv(HKV, block_h))\n",
        "    programs = (B * S + 1, triton.cdiv(HQ, block_h) + triton.cdiv(HKV, block_h))\n",
        "rotary launches one token too many: the last program reads a position past the positions' end",
        "launch grid one too large",
    ),
    Mutant(
        "greedy_pick.grid-one-part-too-many",
        "greedy_pick",
        PICK,
        "    _greedy_pick_kernel[(parts, B)](",
        "    _greedy_pick_kernel[(parts + 1, B)](",
        "greedy_pick launches one part too many a row: an empty part past V arrives, the picks' workspace one short",
        "launch grid one too large",
    ),
    Mutant(
        "attention_chunk.grid-one-query-block-too-many",
        "attention_chunk",
        ATTN,
        '    _attention_flash_kernel[(B * HQ, triton.cdiv(C, meta["BLOCK_M"]))](',
        '    _attention_flash_kernel[(B * HQ, triton.cdiv(C, meta["BLOCK_M"]) + 1)](',
        "the flash kernel launches one query block too many: its whole key blocks run past the keys' end",
        "launch grid one too large",
    ),
)


# ------------------------------------------------------------------------------------------ the source
def sources() -> dict[str, Path]:
    """Where the packages this process runs live (a checkout, or an installed copy)."""
    import conformance
    import neurobrix

    return {
        "neurobrix": Path(neurobrix.__file__).resolve().parent,
        "conformance": Path(conformance.__file__).resolve().parent,
    }


def anchor_problems(mutants: Iterable[Mutant], packages: dict[str, Path] | None = None) -> list[str]:
    """Every way the set no longer fits today's source: an anchor found 0 or 2+ times, a no-op, a bad class."""
    packages = packages or sources()
    problems, seen = [], set()
    for m in mutants:
        if m.id in seen:
            problems.append(f"{m.id}: the id is used twice")
        seen.add(m.id)
        if m.bug not in CLASSES:
            problems.append(f"{m.id}: unknown class of bug {m.bug!r}")
        if m.old == m.new:
            problems.append(f"{m.id}: the new snippet is the old one")
        known = SPECS[m.kernel].variants if m.kernel in SPECS else ()
        if m.kernel not in SPECS or any(v not in known for v in m.variants):
            named = ", ".join(m.variants) or "(kernel unknown)"
            problems.append(f"{m.id}: kernel {m.kernel!r} has no variant(s) {named}")
        package, _, rest = m.file.partition("/")
        if package not in packages:
            problems.append(f"{m.id}: {m.file} is in neither package")
            continue
        try:
            text = (packages[package] / rest).read_text(encoding="utf-8")
        except OSError as exc:
            problems.append(f"{m.id}: cannot read {m.file} ({exc})")
            continue
        found = text.count(m.old)
        if found != 1:
            problems.append(f"{m.id}: its anchor occurs {found} times in {m.file} (must be once): {m.old[:80]!r}")
    return problems


def plant(mutant: Mutant, into: Path, packages: dict[str, Path] | None = None) -> None:
    """Copy the packages into ``into`` and apply the one patch there."""
    packages = packages or sources()
    for name, path in packages.items():
        shutil.copytree(path, into / name, ignore=shutil.ignore_patterns("__pycache__"))
    target = into / mutant.file
    text = target.read_text(encoding="utf-8")
    if text.count(mutant.old) != 1:
        raise UsageError(f"mutant {mutant.id}: its anchor does not occur exactly once in {mutant.file}")
    target.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")


# --------------------------------------------------------------------------------------------- running
@dataclass
class Outcome:
    id: str
    kernel: str
    bug: str
    caught: bool
    how: str  # what caught it ("wrong result", "guard band", "crashed ...", "error: ..."), or why not
    entry: str  # the entry the check named ("" if none): class, kernel, dtype, domain, config
    seconds: float
    failures: list[str] = field(default_factory=list)  # each failed entry: its domain and first lines of failure


def _how(failure: str, crashed: bool) -> str:
    if crashed:
        return "crashed (" + failure.split("(", 1)[1].split(")", 1)[0] + ")" if "(" in failure else "crashed"
    if "exceed the bound" in failure or "KV-cache row" in failure:
        return "wrong result"
    if "MemoryGuardError" in failure:  # harness.interpreter_memory: a lane outside every tensor of the launch
        return "memory guard"
    if "out-of-bounds write" in failure:
        return "guard band"
    if "launch_pdl=" in failure:  # harness.launch_switches
        return "launch switch"
    last = [line for line in failure.splitlines() if line.strip()]
    return "error: " + (last[-1].strip()[:60] if last else "?")


def _entry(e: dict, report: dict | None) -> str:
    """An entry of a check report as 'CLASS kernel dtype domain config ...': the class's own entry, or a
    setting of another class's tables checked at small shapes (its domain is those shapes)."""
    config = " ".join(f"{k}={v}" for k, v in (e.get("config") or {}).items())
    where = e.get("shipped_in") or f"{(report or {}).get('class', '?')} entry"
    return f"{e['kernel']} {e['domain']} config {config} [{where}]"  # the domain names the dtype


def judge(mutant: Mutant, returncode: int, report: dict | None, stderr: str, seconds: float) -> Outcome:
    """Caught only when the check failed (exit 1) and its report names a failed entry of the kernel."""
    failed = [
        e
        for e in (report or {}).get("entries", [])
        if not e.get("passed") and not e.get("out_of_memory") and e.get("kernel") == mutant.kernel
    ]
    base = {
        "id": mutant.id,
        "kernel": mutant.kernel,
        "bug": mutant.bug,
        "seconds": round(seconds, 1),
        "failures": [f"{_entry(e, report)}: " + "\n".join((e.get("failure") or "").splitlines()[:4]) for e in failed],
    }
    if returncode == 1 and failed:
        failed.sort(key=lambda e: "exceed the bound" not in (e.get("failure") or ""))
        first = failed[0]
        entry = _entry(first, report)
        return Outcome(
            caught=True, how=_how(first.get("failure") or "", bool(first.get("crashed"))), entry=entry, **base
        )
    if returncode == 0:
        return Outcome(caught=False, how="check passed", entry="", **base)
    tail = [line for line in stderr.splitlines() if line.strip()]
    why = f"check ended without naming an entry ({exit_reason(returncode)})" + (f": {tail[-1][:80]}" if tail else "")
    return Outcome(caught=False, how=why, entry="", **base)


def run_one(
    mutant: Mutant,
    tables_root: Path,
    examples: int | None = None,
    timeout: float = 900.0,
    packages: dict[str, Path] | None = None,
    live: set[subprocess.Popen] | None = None,
) -> Outcome:
    """The interpreter check of the mutant's kernel, on a copy of the source with the mutant planted.
    ``live`` holds the check's process while it runs (for the caller to end it on an interrupt)."""
    from neurobrix.tables import ENV_VAR

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="neurobrix-mutant-") as tmp:
        root = Path(tmp)
        plant(mutant, root, packages)
        report_path = root / "report.json"
        command = [
            sys.executable,
            "-m",
            "conformance",
            "check",
            "--class",
            "interpreter",
            "--kernel",
            mutant.kernel,
            "--shipped",
            "--profile",
            "ci",
            "--no-shrink",
            "--exitfirst",
            "--json",
            str(report_path),
        ]
        if mutant.variants:
            command += ["--variant", *mutant.variants]
        if examples:
            command += ["--examples", str(examples)]
        env = {
            **os.environ,
            "TRITON_INTERPRET": "1",
            ENV_VAR: str(tables_root),
            "PYTHONPATH": os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])]),
        }
        env.setdefault("OMP_NUM_THREADS", "1")
        # a session of its own: on a timeout the check and its worker go together
        process = subprocess.Popen(
            command,
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        live = live if live is not None else set()
        live.add(process)
        try:
            _, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _end(process)
            process.communicate()
            return Outcome(
                mutant.id,
                mutant.kernel,
                mutant.bug,
                False,
                f"timed out after {timeout:.0f} s",
                "",
                round(time.perf_counter() - start, 1),
            )
        finally:
            live.discard(process)
        try:
            report = json.loads(report_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            report = None
        return judge(mutant, process.returncode, report, stderr, time.perf_counter() - start)


def _end(process: subprocess.Popen) -> None:
    """End a check and its worker: the session it leads, by its id (its reader reaps it)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run(
    mutants: list[Mutant],
    jobs: int = 1,
    examples: int | None = None,
    timeout: float = 900.0,
    on_done: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Every mutant's check, ``jobs`` at a time (each a subprocess with one worker); outcomes in order."""
    from neurobrix import tables

    problems = anchor_problems(mutants)
    if problems:
        raise UsageError("the mutants no longer fit the source:\n  " + "\n  ".join(problems))
    # a kernel whose own source the launch lint refuses fails every check of it, planted or not: each of its mutants
    # would count as caught by that alone (a kill rate of 100 % for a kernel being added, its lint not yet passed)
    from . import check

    unfit = {k: check.launch_problems(k) for k in sorted({m.kernel for m in mutants})}
    if any(unfit.values()):
        raise UsageError(
            "the launch lint refuses the unpatched source of "
            + ", ".join(k for k, found in unfit.items() if found)
            + ", so every check of it fails, planted or not: fix it first:\n  "
            + "\n  ".join(f"{k}: {p}" for k, found in unfit.items() for p in found)
        )
    root = tables.locate().root
    if not (root / "interpreter" / tables.CLASS_NAME).is_file():
        raise UsageError(f"the tables at {root} have no interpreter class: the mutants are checked on it")
    packages = sources()

    live: set[subprocess.Popen] = set()
    stopping: list[bool] = []

    def one(m: Mutant) -> Outcome | None:
        if stopping:
            return None
        outcome = run_one(m, root, examples, timeout, packages, live)
        if on_done and not stopping:
            on_done(outcome)
        return outcome

    pool = ThreadPoolExecutor(max(1, jobs))
    try:
        return list(pool.map(one, mutants))
    except BaseException:  # an interrupt: the checks under way end with this process, nothing is left behind
        stopping.append(True)
        for process in list(live):
            _end(process)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def select(fast: bool = False, only: list[str] | None = None) -> list[Mutant]:
    if only:
        known = {m.id: m for m in MUTANTS}
        unknown = [i for i in only if i not in known]
        if unknown:
            raise UsageError(
                f"unknown mutant(s) {', '.join(unknown)}; `python -m conformance mutants --list` lists them"
            )
        return [known[i] for i in only]
    return [m for m in MUTANTS if m.fast or not fast]


def render(outcomes: list[Outcome]) -> str:
    width = max([len(o.id) for o in outcomes] + [6])
    lines = [f"{'mutant':<{width}}  {'class':<26} {'verdict':<8} how"]
    for o in outcomes:
        verdict = "caught" if o.caught else "SURVIVED"
        how = f"{o.how}: {o.entry}" if o.entry else o.how
        lines.append(f"{o.id:<{width}}  {o.bug:<26} {verdict:<8} {how} [{o.seconds:.0f} s]")
    caught = sum(o.caught for o in outcomes)
    rate = 100.0 * caught / len(outcomes) if outcomes else 0.0
    lines.append(f"kill rate: {caught} of {counted(len(outcomes), 'mutant')} caught ({rate:.1f} %)")
    survivors = [o.id for o in outcomes if not o.caught]
    if survivors:
        lines.append("survived: " + ", ".join(survivors))
    return "\n".join(lines)


def as_json(outcomes: list[Outcome]) -> dict:
    caught = sum(o.caught for o in outcomes)
    return {
        "mutants": len(outcomes),
        "caught": caught,
        "kill_rate": round(caught / len(outcomes), 4) if outcomes else 0.0,
        "outcomes": [asdict(o) for o in outcomes],
    }
