"""rms_norm: y = h / sqrt(mean(h^2) + eps) * w, optionally fused with the residual add h = x + r.

With a residual, h is rounded to the input dtype and returned: it is the model's residual stream,
and y is computed from that rounded h (what an unfused add-then-norm would do).
Key (SPECS below): M = rows (batch x tokens, powers of two), N = row length (exact). Each program
normalises BLOCK_M whole rows; BLOCK_N is the row length rounded up to a power of two (required to
hold a row, so not a setting).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
import triton
import triton.language as tl

from ._common import check_contiguous_last, check_device, check_shape, dependent_launch, grid, same_dtype, split
from .spec import Call, OpSpec


@triton.jit
def _rms_norm_kernel(
    # pointers
    x_ptr, r_ptr, w_ptr, y_ptr, h_ptr,
    # dimensions
    M, N, eps,
    # strides (rows; the last dimension is contiguous)
    stride_x, stride_r, stride_y, stride_h,
    # meta-parameters
    HAS_RESIDUAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    PDL: tl.constexpr,
):
    dependent_launch(PDL)
    pid = tl.program_id(0).to(tl.int64)
    offs_m = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    mask_n = offs_n < N
    mask = (offs_m[:, None] < M) & mask_n[None, :]
    h = tl.load(x_ptr + offs_m[:, None] * stride_x + offs_n[None, :], mask=mask, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        r = tl.load(r_ptr + offs_m[:, None] * stride_r + offs_n[None, :], mask=mask, other=0.0).to(tl.float32)
        # h = x + r, rounded once to the stream's dtype, then normalised from that rounded value
        h_rounded = (h + r).to(h_ptr.dtype.element_ty)
        tl.store(h_ptr + offs_m[:, None] * stride_h + offs_n[None, :], h_rounded, mask=mask)
        h = h_rounded.to(tl.float32)
    # rstd = 1 / sqrt(mean(h^2) + eps), in fp32
    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / N + eps)
    w = tl.load(w_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)
    y = h * rstd[:, None] * w[None, :]
    tl.store(y_ptr + offs_m[:, None] * stride_y + offs_n[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


def _check(x, weight, residual):
    check_shape("rms_norm", "x", x, (None, None), "rows, hidden size")
    check_shape("rms_norm", "weight", weight, (x.shape[1],), "hidden size of x")
    if residual is not None:
        check_shape("rms_norm", "residual", residual, tuple(x.shape), "same as x")
    return same_dtype("rms_norm", "x", x, weight=weight, residual=residual)


PARAMS = ("BLOCK_M",)  # the meta-parameters of a setting


def key_of(x: torch.Tensor, weight: torch.Tensor, eps: float, residual: torch.Tensor | None = None) -> Call:
    """(dtype, (M, N)) of a call."""
    return _check(x, weight, residual), (x.shape[0], x.shape[1])


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, residual: torch.Tensor | None = None, *,
             config: Mapping[str, Any],
             empty: Callable[..., torch.Tensor] = torch.empty, pdl: bool = False):
    """RMSNorm of x [M, N] (or of x + residual, returning (y, x + residual)) on the Triton kernel, with the
    certified setting ``config``; ``empty`` allocates the outputs."""
    _check(x, weight, residual)
    check_device("rms_norm", x=x, weight=weight, residual=residual)
    check_contiguous_last("rms_norm", x=x, weight=weight, residual=residual)
    M, N = x.shape
    meta, launch = split("rms_norm", config, PARAMS, pdl)
    y = empty((M, N), dtype=x.dtype, device=x.device)
    h = empty((M, N), dtype=x.dtype, device=x.device) if residual is not None else y
    r = residual if residual is not None else x  # never read without a residual
    programs = (triton.cdiv(M, meta["BLOCK_M"]),)
    _rms_norm_kernel[programs](
        x, r, weight, y, h, M, N, float(eps), x.stride(0), r.stride(0), y.stride(0), h.stride(0),
        HAS_RESIDUAL=residual is not None, BLOCK_N=triton.next_power_of_2(N), **meta, **launch,
    )
    return (y, h) if residual is not None else y


def rms_norm_torch(x: torch.Tensor, weight: torch.Tensor, eps: float, residual: torch.Tensor | None = None):
    """The same op on PyTorch's kernels, rounded as transformers' Llama/Mistral/Qwen2 RMSNorm rounds it: the residual
    added in the input's dtype, the row normalised in float32, rounded to the input's dtype, then multiplied by the
    weight in that dtype (F.rms_norm multiplies before rounding: a bf16 or fp16 logit an ulp apart, text round 42)."""
    _check(x, weight, residual)
    h = x + residual if residual is not None else x
    f = h.float()
    y = weight * (f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + eps)).to(h.dtype)
    return (y, h) if residual is not None else y


def outputs(x: torch.Tensor, weight: torch.Tensor, eps: float, residual: torch.Tensor | None = None):
    return (x.new_empty(x.shape), x.new_empty(x.shape)) if residual is not None else x.new_empty(x.shape)


def candidates(domain: Mapping[str, tuple[int, int | None]], interpreter: bool) -> list[dict[str, Any]]:
    if interpreter:
        return [{"BLOCK_M": m, "num_warps": 4} for m in (4, 16, 64)]
    return list(grid(BLOCK_M=[1, 2, 4], num_warps=[4, 8]))


SPECS = (
    OpSpec("rms_norm", "RMSNorm over rows of length N, optionally fused with the residual add; M = rows",
           key=("M", "N"), buckets=("pow2", "exact"), key_of=key_of, launch=rms_norm, torch=rms_norm_torch,
           outputs=outputs, candidates=candidates, params={None: (PARAMS, ())}),
)
