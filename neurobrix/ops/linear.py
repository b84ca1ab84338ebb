"""linear: y[M, N] = x[M, K] @ W[N, K]^T (+ b[N]), fp32 accumulation, one rounding to x's dtype.

Key (SPECS below): M = rows of x (batch x tokens, bucketed in powers of two), N = out_features and
K = in_features (exact). The certified config picks the variant:

``gemv``   one program per (row, BLOCK_N outputs, one of SPLIT_K slices of K), elementwise
           multiply-accumulate in BLOCK_K steps, one tree sum at the end; with SPLIT_K > 1 the fp32
           partial sums are merged in split order by a second kernel (``MERGE: "kernel"``, the default)
           or, with ``MERGE: "last"``, by whichever of an output tile's SPLIT_K programs finishes
           last (a per-tile arrival counter; the same sum in the same order, one launch fewer). For
           decode (M = batch): weight-streaming bound, and split-K keeps every SM busy when N alone
           would not.
``skinny`` for decode rows (M up to a few dozen): one program per (BLOCK_N outputs, BLOCK_M rows, one
           of SPLIT_K slices of K) multiplies a weight tile against every row at once with ``tl.dot``
           (BLOCK_M >= the rows: the weights are read once, whatever M), fp32 partial sums merged in
           split order like ``gemv``'s (either ``MERGE``); split-K fills the multiprocessors when N
           alone would not. The
           same kernel with tiles of 64 or 128 rows is the split-K GEMM for prompt rows whose output has
           too few tiles to fill the GPU (e.g. 512 x 896).
``tiled``  grouped-tile matmul with ``tl.dot`` (BLOCK_M x BLOCK_N tiles, GROUP_M rows of tiles
           sharing weight tiles in L2). For prefill (M = batch x prompt length).
``tma``    the same tiles, grouped the same way, on a persistent grid (one program per
           multiprocessor, each walking the tiles) that moves them with TMA tensor descriptors made on
           the host (Hopper's bulk tensor copies); out-of-range rows and columns are zero-filled
           on load and clipped on store by the descriptors. Needs 16-byte aligned rows (K and N
           multiples of 8 in 16-bit dtypes): the launcher refuses a call that is not.
``tma_split`` ``tma``'s walk over units that may be slices of a tile's K range (SPLIT_K per tile: the
           split-K GEMM for prompts whose output has too few tiles to fill the GPU, fp32 partials merged
           in split order by the tile's last slice to arrive, as ``MERGE: "last"`` does), the epilogue
           stored in two halves (SUBTILE: half the staging memory, room for one more pipeline stage)
           and Triton's warp specialisation (WARP_SPECIALIZE) each offered to certify.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from ..errors import InvalidInputError
from ._common import (
    check_contiguous_last,
    check_device,
    check_shape,
    dependent_launch,
    dot_precision,
    grid,
    same_dtype,
    split,
    top,
)
from .spec import Call, OpSpec


@triton.jit
def _merge_if_last(acc, part_ptrs, split_stride, mask, counter_ptr, b_ptrs, b_mask, y_ptrs,
                   HAS_BIAS: tl.constexpr, SPLIT_K: tl.constexpr):
    """MERGE "last": every program of an output tile calls this after storing its fp32 partial sums. The
    tile's counter counts arrivals; the program that arrives last sums the SPLIT_K partials in split order
    (as _linear_split_merge_kernel does: the same result, bit for bit), stores y, and resets the counter
    to zero for the next launch (a CUDA graph replays it)."""
    tl.debug_barrier()  # every thread of this program has stored its share before the arrival counts
    arrived = tl.atomic_add(counter_ptr, 1, sem="acq_rel", scope="gpu")
    if arrived == SPLIT_K - 1:
        y = tl.zeros_like(acc)
        for k in range(SPLIT_K):  # the tile's partials, in split order
            y += tl.load(part_ptrs + k * split_stride, mask=mask, other=0.0, cache_modifier=".cg")
        if HAS_BIAS:
            y += tl.load(b_ptrs, mask=b_mask, other=0.0).to(tl.float32)
        tl.store(y_ptrs, y.to(y_ptrs.dtype.element_ty), mask=mask)
        tl.atomic_xchg(counter_ptr, 0, sem="relaxed", scope="gpu")


@triton.jit
def _linear_gemv_kernel(
    # pointers
    x_ptr, w_ptr, b_ptr, y_ptr, part_ptr, counter_ptr,
    # dimensions
    M, N, K,
    # strides (the last dimension of each is contiguous)
    stride_xm, stride_wn, stride_ym,
    # meta-parameters
    HAS_BIAS: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
    MERGE: tl.constexpr, PDL: tl.constexpr,
):
    dependent_launch(PDL)
    pid_n = tl.program_id(0).to(tl.int64)
    pid_m = tl.program_id(1).to(tl.int64)
    pid_k = tl.program_id(2)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = offs_n < N
    # this program's share of K: SPLIT_K programs cover it, each a whole number of BLOCK_K steps
    k_per_split = tl.cdiv(tl.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K
    k_start = pid_k * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    # acc[n, j] += W[n, k] * x[k] for k = j (mod BLOCK_K); summed over j once at the end
    accumulator = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        mask_k = offs_k < k_end
        x = tl.load(x_ptr + pid_m * stride_xm + offs_k, mask=mask_k, other=0.0).to(tl.float32)
        w_ptrs = w_ptr + offs_n[:, None] * stride_wn + offs_k[None, :]
        w = tl.load(w_ptrs, mask=mask_n[:, None] & mask_k[None, :], other=0.0).to(tl.float32)
        accumulator += w * x[None, :]
    y = tl.sum(accumulator, axis=1)
    if SPLIT_K == 1:
        if HAS_BIAS:
            y += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)
        tl.store(y_ptr + pid_m * stride_ym + offs_n, y.to(y_ptr.dtype.element_ty), mask=mask_n)
    else:  # fp32 partial sums [SPLIT_K, M, N], merged by _linear_split_merge_kernel or the last to arrive
        tl.store(part_ptr + (pid_k * M + pid_m) * N + offs_n, y, mask=mask_n)
        if MERGE == "last":
            _merge_if_last(y, part_ptr + pid_m * N + offs_n, M * N, mask_n,
                           counter_ptr + pid_m * tl.num_programs(0) + pid_n, b_ptr + offs_n, mask_n,
                           y_ptr + pid_m * stride_ym + offs_n, HAS_BIAS, SPLIT_K)


@triton.jit
def _linear_split_merge_kernel(
    part_ptr, b_ptr, y_ptr, M, N, stride_ym,
    HAS_BIAS: tl.constexpr, BLOCK_N: tl.constexpr, SPLIT_K: tl.constexpr,
    PDL: tl.constexpr,
):
    dependent_launch(PDL)
    pid_n = tl.program_id(0).to(tl.int64)
    pid_m = tl.program_id(1).to(tl.int64)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = offs_n < N
    y = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k in range(SPLIT_K):  # in split order: deterministic
        y += tl.load(part_ptr + (k * M + pid_m) * N + offs_n, mask=mask_n, other=0.0)
    if HAS_BIAS:
        y += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)
    tl.store(y_ptr + pid_m * stride_ym + offs_n, y.to(y_ptr.dtype.element_ty), mask=mask_n)


@triton.jit
def _linear_skinny_kernel(
    # pointers
    x_ptr, w_ptr, b_ptr, y_ptr, part_ptr, counter_ptr,
    # dimensions
    M, N, K,
    # strides (the last dimension of each is contiguous)
    stride_xm, stride_wn, stride_ym,
    # meta-parameters
    HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
    MERGE: tl.constexpr, PDL: tl.constexpr,
):
    dependent_launch(PDL)
    pid_n = tl.program_id(0).to(tl.int64)
    pid_m = tl.program_id(1).to(tl.int64)
    pid_k = tl.program_id(2)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    in_m = offs_m < M
    in_n = offs_n < N
    # this program's slice of K: SPLIT_K programs cover it, each a whole number of BLOCK_K steps
    k_slice = tl.cdiv(tl.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K
    k_first = pid_k * k_slice
    k_last = tl.minimum(k_first + k_slice, K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(k_first, k_last, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        in_k = offs_k < k_last
        a = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :], mask=in_m[:, None] & in_k[None, :],
                    other=0.0)
        b = tl.load(w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None], mask=in_k[:, None] & in_n[None, :],
                    other=0.0)  # a [BLOCK_K, BLOCK_N] tile of W^T, read once for every row
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    in_y = in_m[:, None] & in_n[None, :]
    if SPLIT_K == 1:
        if HAS_BIAS:
            acc += tl.load(b_ptr + offs_n, mask=in_n, other=0.0).to(tl.float32)[None, :]
        tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], acc.to(y_ptr.dtype.element_ty), mask=in_y)
    else:  # fp32 partial sums [SPLIT_K, M, N], merged by _linear_split_merge_kernel or the last to arrive
        tl.store(part_ptr + (pid_k * M + offs_m[:, None]) * N + offs_n[None, :], acc, mask=in_y)
        if MERGE == "last":
            _merge_if_last(acc, part_ptr + offs_m[:, None] * N + offs_n[None, :], M * N, in_y,
                           counter_ptr + pid_m * tl.num_programs(0) + pid_n, b_ptr + offs_n[None, :],
                           in_n[None, :], y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], HAS_BIAS, SPLIT_K)


@triton.jit
def _linear_tiled_kernel(
    # pointers
    x_ptr, w_ptr, b_ptr, y_ptr,
    # dimensions
    M, N, K,
    # strides (the last dimension of each is contiguous)
    stride_xm, stride_wn, stride_ym,
    # meta-parameters
    HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    PDL: tl.constexpr,
):
    dependent_launch(PDL)
    # program id -> tile, grouped so that GROUP_M rows of tiles reuse the same weight tiles
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :]
    w_ptrs = w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None]  # a [BLOCK_K, BLOCK_N] tile of W^T

    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        mask_k = offs_k < K - k0
        a = tl.load(x_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        b = tl.load(w_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        accumulator = tl.dot(a, b, accumulator, input_precision=PRECISION)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    if HAS_BIAS:
        accumulator += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)[None, :]
    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :]
    tl.store(y_ptrs, accumulator.to(y_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def _linear_tma_kernel(
    x_desc, w_desc, y_desc, b_ptr,  # x [M, K], W [N, K] and y [M, N] as TMA descriptors made on the host
    M, N, K,
    HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    PDL: tl.constexpr,
):
    dependent_launch(PDL)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, tl.num_programs(0), flatten=True):
        group_id = tile // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + ((tile % num_pid_in_group) % group_size_m)
        pid_n = (tile % num_pid_in_group) // group_size_m
        accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(k_tiles):
            a = x_desc.load([pid_m * BLOCK_M, kt * BLOCK_K])
            b = w_desc.load([pid_n * BLOCK_N, kt * BLOCK_K])
            accumulator = tl.dot(a, b.T, accumulator, input_precision=PRECISION)
        if HAS_BIAS:
            offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
            accumulator += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
        y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], accumulator.to(y_desc.dtype))


@triton.jit
def _linear_tma_split_kernel(
    x_desc, w_desc, y_desc,  # x [M, K], W [N, K] and y [M, N] (blocks of STORE_N columns): made on the host
    b_ptr, y_ptr, part_ptr, counter_ptr,
    M, N, K, stride_ym,
    HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    SPLIT_K: tl.constexpr, SUBTILE: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, PDL: tl.constexpr,
):
    """``tma``'s persistent walk over units of work: a unit is one of SPLIT_K slices of an output tile's K
    range (the slices of a tile are adjacent in the walk, so they run at once and share the x tile in L2).
    With SPLIT_K 1 a unit is a tile, stored through the descriptor, as two halves of BLOCK_N / 2 columns
    when SUBTILE (half the staging memory, the first half's store overlapping the second's conversion).
    With SPLIT_K > 1 each slice stores fp32 partial sums and the tile's last slice to arrive sums them in
    split order (``_merge_if_last``)."""
    dependent_launch(PDL)
    STORE_N: tl.constexpr = BLOCK_N // 2 if SUBTILE else BLOCK_N
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    # each slice is a whole number of BLOCK_K steps; steps past K load zeros (the descriptor fills them)
    slice_steps = tl.cdiv(tl.cdiv(K, BLOCK_K), SPLIT_K)
    # the walk is flattened (the next unit's loads start during this one's epilogue) unless split: the loop
    # of the merge over the slices cannot be flattened into it
    units = num_pid_m * num_pid_n * SPLIT_K
    for unit in tl.range(tl.program_id(0), units, tl.num_programs(0), flatten=SPLIT_K == 1,
                         warp_specialize=WARP_SPECIALIZE):
        tile = unit // SPLIT_K
        k_first = (unit % SPLIT_K) * slice_steps * BLOCK_K
        group_id = tile // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + tile % num_pid_in_group % group_size_m
        pid_n = tile % num_pid_in_group // group_size_m
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for step in range(slice_steps):
            a = x_desc.load([pid_m * BLOCK_M, k_first + step * BLOCK_K])
            b = w_desc.load([pid_n * BLOCK_N, k_first + step * BLOCK_K])
            acc = tl.dot(a, b.T, acc, input_precision=PRECISION)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        if SPLIT_K == 1:
            if HAS_BIAS:
                acc += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
            if SUBTILE:
                left, right = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, STORE_N)), (0, 2, 1)))
                y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], left.to(y_desc.dtype))
                y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + STORE_N], right.to(y_desc.dtype))
            else:
                y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(y_desc.dtype))
        else:  # fp32 partial sums [SPLIT_K, M, N]; the tile's last slice to arrive merges them
            offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
            in_y = (offs_m < M)[:, None] & (offs_n < N)[None, :]
            tile_partials = part_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :]
            tl.store(tile_partials + (unit % SPLIT_K) * M * N, acc, mask=in_y)
            _merge_if_last(acc, tile_partials, M * N, in_y, counter_ptr + tile, b_ptr + offs_n[None, :],
                           (offs_n < N)[None, :], y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :],
                           HAS_BIAS, SPLIT_K)


def _descriptors(x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor, meta: Mapping[str, Any], store_n: int
                 ) -> tuple[TensorDescriptor, TensorDescriptor, TensorDescriptor]:
    """The TMA descriptors of x, W and y for blocks of the setting's tiles, made on the host and passed to the
    kernel as parameters. Made in the kernel (``tl.make_tensor_descriptor``), each program wrote its three to
    global scratch and fenced them before its first copy: on the same settings the kernels took 1.02-1.45x as
    long, most on the smallest prompt-row shapes (2026-12-04h). TMA needs 16-byte aligned base addresses and row
    strides: a call without them is refused, naming the tensor, before Triton's own assertion could fail. So is a
    dimension of 0 (Triton asserts a descriptor's sizes positive, an AssertionError, none under ``python -O``) and a
    tensor whose rows overlap (a row stride below its row's length: an expanded or as_strided view): no proof ran on
    one, and NVIDIA's driver has encoded descriptors of memory that is not dense and non-overlapping wrongly (its
    595.71 release notes, on Blackwell); the pointer variants read such views as they are."""
    (M, K), N = x.shape, weight.shape[0]
    if 0 in (M, N, K):
        raise InvalidInputError(
            f"linear: the certified TMA variants need every dimension >= 1 (a TMA descriptor has no empty side), got "
            f"M={M}, N={N}, K={K}"
        )
    for name, t in (("x", x), ("weight", weight), ("y", y)):
        if t.shape[0] > 1 and t.stride(0) < t.shape[1]:
            raise InvalidInputError(
                f"linear: the certified TMA variants read dense rows, but {name} {list(t.shape)} has row stride "
                f"{t.stride(0)}, so its rows overlap (an expanded or as_strided view): pass a contiguous copy"
            )
    for name, t in (("x", x), ("weight", weight), ("y", y)):
        if t.data_ptr() % 16 or (t.stride(0) * t.element_size()) % 16:
            raise InvalidInputError(
                f"linear: the certified 'tma' variant needs 16-byte aligned rows, but {name} has row stride "
                f"{t.stride(0)} ({t.element_size()}-byte elements) at address {t.data_ptr():#x}"
            )
    block_m, block_n, block_k = meta["BLOCK_M"], meta["BLOCK_N"], meta["BLOCK_K"]
    return (TensorDescriptor.from_tensor(x, [block_m, block_k]),
            TensorDescriptor.from_tensor(weight, [block_n, block_k]),
            TensorDescriptor.from_tensor(y, [block_m, store_n]))


MERGES = ("kernel", "last")  # how split-K partial sums are merged (module docstring)
_COUNTERS: dict[torch.device, torch.Tensor] = {}  # the process's (tile_counters)
_OUTGROWN: list[torch.Tensor] = []


Counters = dict[torch.device, torch.Tensor]  # arrival counters by device (tile_counters)


def tile_counters(device: torch.device, tiles: int, held: Counters | None = None) -> torch.Tensor:
    """The arrival counters of MERGE "last": one int32 per output tile, zero between launches (each tile's
    last program resets its own), kept per device in ``held`` for its owner's life (a CUDA graph captures
    their address). ``held``: the counters of one plan's ops (``neurobrix.ops.certified``: each model its
    own), by default the process's (a launcher called directly, as conformance calls it). Launches on one
    stream never share them: each kernel waits for its predecessor; two models' launches may run at once
    (two threads, two streams), and one's arrivals would then count as the other's."""
    held = _COUNTERS if held is None else held
    counters = held.get(device)
    if counters is None or counters.numel() < tiles:
        if counters is not None:  # a captured graph may still point at the smaller one: never free it
            _OUTGROWN.append(counters)
        counters = torch.zeros(max(tiles, 1 << 16), dtype=torch.int32, device=device)
        held[device] = counters
    return counters


def _programs(device: torch.device, tiles: int) -> int:
    """A persistent grid: one program per multiprocessor (a device fact, as class.yaml states it), at
    most one per tile; on the interpreter two programs, so that each walks several tiles there too (the
    walk's stride and what must be reset per tile run on CPU)."""
    if device.type != "cuda":
        return min(tiles, 2)
    return min(tiles, torch.cuda.get_device_properties(device).multi_processor_count)


def _check(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> str:
    check_shape("linear", "x", x, (None, None), "rows, in_features")
    check_shape("linear", "weight", weight, (None, x.shape[1]), "out_features, in_features of x")
    if bias is not None:
        check_shape("linear", "bias", bias, (weight.shape[0],), "out_features")
    return same_dtype("linear", "x", x, weight=weight, bias=bias)


def key_of(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> Call:
    """(dtype, (M, N, K)) of a call."""
    return _check(x, weight, bias), (x.shape[0], weight.shape[0], x.shape[1])


_REQUIRED = {"gemv": ("BLOCK_N", "BLOCK_K", "SPLIT_K"), "skinny": ("BLOCK_M", "BLOCK_N", "BLOCK_K", "SPLIT_K"),
             "tiled": ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"),
             "tma": ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"),
             "tma_split": ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K", "SUBTILE", "WARP_SPECIALIZE")}
_OPTIONAL = {"gemv": ("MERGE",), "skinny": ("MERGE",)}  # MERGE: "kernel" when absent


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *,
           config: Mapping[str, Any],
           empty: Callable[..., torch.Tensor] = torch.empty, pdl: bool = False,
           counters: Counters | None = None) -> torch.Tensor:
    """y = x @ weight^T (+ bias) on the Triton kernel, with the certified setting ``config``; x [M, K],
    weight [N, K], bias [N]. ``empty`` allocates the output and any scratch (conformance poisons them);
    ``counters``: whose MERGE "last" arrival counters (:func:`tile_counters`)."""
    dtype = _check(x, weight, bias)
    check_device("linear", x=x, weight=weight, bias=bias)
    check_contiguous_last("linear", x=x, weight=weight, bias=bias)
    (M, K), N = x.shape, weight.shape[0]
    variant = config.get("variant")
    if variant not in _REQUIRED:
        raise InvalidInputError(f"linear: setting {dict(config)} names no known variant ({', '.join(_REQUIRED)})")
    meta, launch = split("linear", config, _REQUIRED[variant], pdl)
    y = empty((M, N), dtype=x.dtype, device=x.device)
    b = bias if bias is not None else y  # never read when HAS_BIAS is False
    if variant in ("gemv", "skinny"):
        split_k, merge = meta["SPLIT_K"], meta.setdefault("MERGE", "kernel")
        if merge not in MERGES:
            raise InvalidInputError(f"linear: setting {dict(config)} has MERGE {merge!r}; one of {', '.join(MERGES)}")
        part = empty((split_k, M, N), dtype=torch.float32, device=x.device) if split_k > 1 else y
        rows = M if variant == "gemv" else triton.cdiv(M, meta["BLOCK_M"])
        programs = (triton.cdiv(N, meta["BLOCK_N"]), rows, split_k)
        last = split_k > 1 and merge == "last"
        counters = tile_counters(x.device, programs[0] * rows, counters) if last else y  # never touched unless last
        if variant == "gemv":
            _linear_gemv_kernel[programs](
                x, weight, b, y, part, counters, M, N, K, x.stride(0), weight.stride(0), y.stride(0),
                HAS_BIAS=bias is not None, **meta, **launch,
            )
        else:
            _linear_skinny_kernel[programs](
                x, weight, b, y, part, counters, M, N, K, x.stride(0), weight.stride(0), y.stride(0),
                HAS_BIAS=bias is not None, PRECISION=dot_precision(dtype), **meta, **launch,
            )
        if split_k > 1 and not last:
            _linear_split_merge_kernel[(programs[0], M)](
                part, b, y, M, N, y.stride(0), HAS_BIAS=bias is not None, BLOCK_N=meta["BLOCK_N"],
                SPLIT_K=split_k, **launch,
            )
    elif variant == "tiled":
        programs = (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
        _linear_tiled_kernel[programs](
            x, weight, b, y, M, N, K, x.stride(0), weight.stride(0), y.stride(0),
            HAS_BIAS=bias is not None, PRECISION=dot_precision(dtype), **meta, **launch,
        )
    elif variant == "tma":
        descriptors = _descriptors(x, weight, y, meta, meta["BLOCK_N"])
        tiles = triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])
        _linear_tma_kernel[(_programs(x.device, tiles),)](
            *descriptors, b, M, N, K,
            HAS_BIAS=bias is not None, PRECISION=dot_precision(dtype), **meta, **launch,
        )
    else:
        descriptors = _descriptors(x, weight, y, meta, meta["BLOCK_N"] // 2 if meta["SUBTILE"] else meta["BLOCK_N"])
        tiles = triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])
        split_k = meta["SPLIT_K"]
        part = empty((split_k, M, N), dtype=torch.float32, device=x.device) if split_k > 1 else y
        counters = tile_counters(x.device, tiles, counters) if split_k > 1 else y  # never touched with SPLIT_K 1
        _linear_tma_split_kernel[(_programs(x.device, tiles * split_k),)](
            *descriptors, b, y, part, counters, M, N, K, y.stride(0),
            HAS_BIAS=bias is not None, PRECISION=dot_precision(dtype), **meta, **launch,
        )
    return y


def linear_torch(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """The same op on PyTorch's kernels (cuBLAS on a GPU)."""
    _check(x, weight, bias)
    return F.linear(x, weight, bias)


def outputs(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    return x.new_empty((x.shape[0], weight.shape[0]))


def candidates(domain: Mapping[str, tuple[int, int | None]], interpreter: bool) -> list[dict[str, Any]]:
    """The settings certify tries: GEMV-style and skinny (all rows against each weight tile, split-K) for
    decode rows, tiles sized to the rows for prefill, and the persistent TMA variant (Hopper) for long
    prompts; split-K tiles for prompt rows with too few output tiles to fill the GPU. The interpreter pays
    per program, not per element (FACTS.md): its space is small and favours big blocks."""
    if interpreter:
        return [
            *({"variant": "gemv", **c, "num_warps": 4} for c in grid(BLOCK_N=[32, 64], BLOCK_K=[64, 128],
                                                                      SPLIT_K=[1, 2])),
            *({"variant": "skinny", **c, "BLOCK_M": 16, "num_warps": 4, "num_stages": 2}
              for c in grid(BLOCK_N=[32, 64], BLOCK_K=[32, 64], SPLIT_K=[1, 2])),
            *({"variant": "tiled", **c, "GROUP_M": 4, "num_warps": 4, "num_stages": 2}
              for c in grid(BLOCK_M=[32, 64], BLOCK_N=[32, 64], BLOCK_K=[32, 64])),
        ]
    found: list[dict[str, Any]] = []
    m_hi = top(domain, "M", 1 << 20)
    if m_hi <= 4:  # decode rows: weight streaming, GEMV-style first
        # 8 rows a program and 8 warps: a kernel that only streams a decode projection's weights ran fastest so on
        # every TinyLlama shape but the head, 15-30 % faster than at 16 rows and 4 warps (2026-12-04e)
        found += _with_merges({"variant": "gemv", **c} for c in grid(BLOCK_N=[8, 16, 32, 64], BLOCK_K=[128, 256],
                                                                     SPLIT_K=[1, 2, 4, 8], num_warps=[4, 8]))
    if m_hi <= 64:  # weights read once for every row; split-K where N alone cannot fill the SMs
        block_m = max(16, 1 << (m_hi - 1).bit_length())
        found += _with_merges({"variant": "skinny", "BLOCK_M": block_m, **c}
                              for c in grid(BLOCK_N=[32, 64, 128], BLOCK_K=[128, 256], SPLIT_K=[1, 2, 4, 8],
                                            num_warps=[4], num_stages=[3]))
        block_m = 16 if m_hi <= 16 else (32 if m_hi <= 32 else 64)
        found += ({"variant": "tiled", "BLOCK_M": block_m, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, **c}
                  for c in grid(BLOCK_N=[64, 128, 256], num_stages=[3, 4]))
    else:
        found += ({"variant": "tiled", **c, "BLOCK_K": 64, "GROUP_M": 8}
                  for c in grid(BLOCK_M=[64, 128], BLOCK_N=[128, 256], num_warps=[4, 8], num_stages=[3, 4]))
        # persistent + TMA (Hopper): BM 128, BN 256, BK 64, 8 warps, 3 stages was the best measured
        found += ({"variant": "tma", "BLOCK_M": 128, **c, "BLOCK_K": 64, "GROUP_M": 8}
                  for c in grid(BLOCK_N=[128, 256], num_warps=[4, 8], num_stages=[3, 4]))
        found.append({"variant": "tma", "BLOCK_M": 64, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4,
                      "num_stages": 4})
        # with descriptors made on the host these won most bf16 prompt-row shapes of a prototype's grid: five stages
        # of 128 x 128 tiles on 27 of 81, 64 x 128 tiles of K 128 on the two smallest (2026-12-04h)
        found += ({"variant": "tma", **c, "GROUP_M": 8, "num_warps": 4} for c in (
            {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 5},
            {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 128, "num_stages": 3},
        ))
        # tma_split: the same walk, the epilogue stored in halves (which leaves the shared memory for a fourth
        # stage of 128 x 256 tiles: the fastest on the largest prompts, 2026-12-02 prototype) and warp
        # specialisation offered
        tile = {"BLOCK_K": 64, "GROUP_M": 8, "SPLIT_K": 1}
        found += ({"variant": "tma_split", **tile, **c} for c in (
            {"BLOCK_M": 128, "BLOCK_N": 256, "SUBTILE": 1, "WARP_SPECIALIZE": False, "num_warps": 8, "num_stages": 4},
            {"BLOCK_M": 128, "BLOCK_N": 256, "SUBTILE": 1, "WARP_SPECIALIZE": True, "num_warps": 8, "num_stages": 3},
            {"BLOCK_M": 128, "BLOCK_N": 256, "SUBTILE": 0, "WARP_SPECIALIZE": True, "num_warps": 8, "num_stages": 3},
            {"BLOCK_M": 128, "BLOCK_N": 128, "SUBTILE": 1, "WARP_SPECIALIZE": False, "num_warps": 8, "num_stages": 5},
            {"BLOCK_M": 128, "BLOCK_N": 128, "SUBTILE": 0, "WARP_SPECIALIZE": True, "num_warps": 4, "num_stages": 4},
            {"BLOCK_M": 64, "BLOCK_N": 256, "SUBTILE": 1, "WARP_SPECIALIZE": False, "num_warps": 4, "num_stages": 5},
        ))
        # few output tiles (e.g. 1,024 x 896: 56 tiles of 128 x 128 for 132 multiprocessors): most would idle,
        # so split each tile's K range as well, over 2 to 4 programs
        n_hi, k_hi = top(domain, "N", 1 << 20), top(domain, "K", 1 << 20)
        if triton.cdiv(m_hi, 128) * triton.cdiv(n_hi, 128) < 400 and k_hi >= 1024:
            found += ({"variant": "tma_split", **tile, **c, "SUBTILE": 0, "WARP_SPECIALIZE": False}
                      for c in (*grid(BLOCK_M=[128], BLOCK_N=[128], SPLIT_K=[2, 3, 4], num_warps=[8], num_stages=[4]),
                                *grid(BLOCK_M=[64], BLOCK_N=[128], SPLIT_K=[2, 4], num_warps=[4], num_stages=[4]),
                                *grid(BLOCK_M=[128], BLOCK_N=[256], SPLIT_K=[2], num_warps=[8], num_stages=[3])))
    return found


def _with_merges(settings: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each setting as given (split-K partials merged by a second kernel) and, where it splits K, the same
    with MERGE "last" (merged by the tile's last program: one launch fewer, an atomic per tile more)."""
    found = []
    for setting in settings:
        found.append(setting)
        if setting["SPLIT_K"] > 1:
            found.append({**setting, "MERGE": "last"})
    return found


def shared_memory(config: Mapping[str, Any], dims: Mapping[str, int], itemsize: int) -> int:
    """Pipelined A and B tiles, plus the output tile staged for the epilogue (on the H200 triton 3.6 asked
    for exactly this much for BM 128, BN 256, BK 64, 4 stages: 262144 bytes); half of it staged when
    tma_split stores the tile in two halves."""
    if config.get("variant") not in ("tiled", "tma", "skinny", "tma_split"):
        return 0
    stages = config.get("num_stages", 1)
    operands = (config["BLOCK_M"] + config["BLOCK_N"]) * config["BLOCK_K"] * itemsize * stages
    staged = config["BLOCK_N"] // 2 if config.get("SUBTILE") else config["BLOCK_N"]
    return operands + config["BLOCK_M"] * staged * itemsize


SPECS = (
    OpSpec("linear", "y[M,N] = x[M,K] @ W[N,K]^T (+ b); M = rows of x (batch x tokens)",
           key=("M", "N", "K"), buckets=("pow2", "exact", "exact"), key_of=key_of, launch=linear,
           torch=linear_torch, outputs=outputs, candidates=candidates, shared_memory=shared_memory,
           variants=tuple(_REQUIRED), params={v: (_REQUIRED[v], _OPTIONAL.get(v, ())) for v in _REQUIRED},
           counters=True),
)
