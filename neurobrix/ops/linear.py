"""linear: y[M, N] = x[M, K] @ W[N, K]^T (+ b[N]), fp32 accumulation, one rounding to x's dtype.

Key (kernels.py): M = rows of x (batch x tokens, bucketed in powers of two), N = out_features and
K = in_features (exact). The certified config picks the variant:

``gemv``   one program per (row, BLOCK_N outputs), elementwise multiply-accumulate over K in
           BLOCK_K steps, one tree sum at the end. For decode (M = batch): weight-streaming bound.
``tiled``  grouped-tile matmul with ``tl.dot`` (BLOCK_M x BLOCK_N tiles, GROUP_M rows of tiles
           sharing weight tiles in L2). For prefill (M = batch x prompt length).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from ..errors import TablesError
from ._common import check_contiguous_last, check_device, check_shape, same_dtype, settings, split


@triton.jit
def _linear_gemv_kernel(
    # pointers
    x_ptr, w_ptr, b_ptr, y_ptr,
    # dimensions
    N, K,
    # strides (the last dimension of each is contiguous)
    stride_xm, stride_wn, stride_ym,
    # meta-parameters
    HAS_BIAS: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_n = tl.program_id(0).to(tl.int64)
    pid_m = tl.program_id(1).to(tl.int64)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = offs_n < N
    # acc[n, j] += W[n, k] * x[k] for k = j (mod BLOCK_K); summed over j once at the end
    accumulator = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        mask_k = offs_k < K
        x = tl.load(x_ptr + pid_m * stride_xm + offs_k, mask=mask_k, other=0.0).to(tl.float32)
        w_ptrs = w_ptr + offs_n[:, None] * stride_wn + offs_k[None, :]
        w = tl.load(w_ptrs, mask=mask_n[:, None] & mask_k[None, :], other=0.0).to(tl.float32)
        accumulator += w * x[None, :]
    y = tl.sum(accumulator, axis=1)
    if HAS_BIAS:
        y += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)
    tl.store(y_ptr + pid_m * stride_ym + offs_n, y.to(y_ptr.dtype.element_ty), mask=mask_n)


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
):
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


def _check(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> str:
    check_shape("linear", "x", x, (None, None), "rows, in_features")
    check_shape("linear", "weight", weight, (None, x.shape[1]), "out_features, in_features of x")
    if bias is not None:
        check_shape("linear", "bias", bias, (weight.shape[0],), "out_features")
    return same_dtype("linear", "x", x, weight=weight, bias=bias)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """y = x @ weight^T (+ bias) on the certified Triton kernel; x [M, K], weight [N, K], bias [N]."""
    dtype = _check(x, weight, bias)
    check_device("linear", x=x, weight=weight, bias=bias)
    check_contiguous_last("linear", x=x, weight=weight, bias=bias)
    (M, K), N = x.shape, weight.shape[0]
    config = settings("linear", dtype, M=M, N=N, K=K)
    meta, launch = split(config)
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    b = bias if bias is not None else y  # never read when HAS_BIAS is False
    variant = config.get("variant")
    if variant == "gemv":
        grid = (triton.cdiv(N, meta["BLOCK_N"]), M)
        _linear_gemv_kernel[grid](
            x, weight, b, y, N, K, x.stride(0), weight.stride(0), y.stride(0),
            HAS_BIAS=bias is not None, **meta, **launch,
        )
    elif variant == "tiled":
        grid = (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
        _linear_tiled_kernel[grid](
            x, weight, b, y, M, N, K, x.stride(0), weight.stride(0), y.stride(0),
            HAS_BIAS=bias is not None, PRECISION="ieee" if dtype == "fp32" else "tf32", **meta, **launch,
        )
    else:
        raise TablesError(f"linear: certified config {dict(config)} names no known variant (gemv, tiled)")
    return y


def linear_torch(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """The same op on PyTorch's kernels (cuBLAS on a GPU)."""
    _check(x, weight, bias)
    return F.linear(x, weight, bias)
