"""silu_mul: out[M, I] = silu(g) * u with g = gu[:, :I], u = gu[:, I:] (SwiGLU after one fused gate/up GEMM).

Key (SPECS below): M = rows (powers of two), I = intermediate size (exact). Each program covers
BLOCK_M rows x BLOCK_I columns; computed in fp32, rounded once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from ..errors import InvalidInputError
from ._common import check_contiguous_last, check_device, check_shape, dependent_launch, dtype_name, grid, split
from .spec import Call, OpSpec


@triton.jit
def _silu_mul_kernel(
    # pointers
    gu_ptr, out_ptr,
    # dimensions
    M, I,
    # strides (rows; the last dimension is contiguous)
    stride_gu, stride_out,
    # meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_I: tl.constexpr,
    PDL: tl.constexpr,
):
    dependent_launch(PDL)
    pid_m = tl.program_id(0).to(tl.int64)
    pid_i = tl.program_id(1).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_i = pid_i * BLOCK_I + tl.arange(0, BLOCK_I)
    mask = (offs_m[:, None] < M) & (offs_i[None, :] < I)
    g_ptrs = gu_ptr + offs_m[:, None] * stride_gu + offs_i[None, :]
    g = tl.load(g_ptrs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(g_ptrs + I, mask=mask, other=0.0).to(tl.float32)
    # silu(g) * u = g / (1 + exp(-g)) * u
    out = g / (1.0 + tl.exp(-g)) * u
    tl.store(out_ptr + offs_m[:, None] * stride_out + offs_i[None, :], out.to(out_ptr.dtype.element_ty), mask=mask)


PARAMS = ("BLOCK_M", "BLOCK_I")  # the meta-parameters of a setting


def _check(gu):
    check_shape("silu_mul", "gu", gu, (None, None), "rows, 2 x intermediate size")
    if gu.shape[1] % 2:
        raise InvalidInputError(f"silu_mul: gu's last dimension must be even (gate then up), got {gu.shape[1]}")
    return dtype_name("silu_mul", "gu", gu)


def key_of(gu: torch.Tensor) -> Call:
    """(dtype, (M, I)) of a call."""
    return _check(gu), (gu.shape[0], gu.shape[1] // 2)


def silu_mul(gu: torch.Tensor, *, config: Mapping[str, Any],
             empty: Callable[..., torch.Tensor] = torch.empty, pdl: bool = False) -> torch.Tensor:
    """silu(gate) * up from gu = [gate | up] of shape [M, 2I], on the Triton kernel with the certified
    setting ``config``; ``empty`` allocates the output."""
    _check(gu)
    check_device("silu_mul", gu=gu)
    check_contiguous_last("silu_mul", gu=gu)
    M, I = gu.shape[0], gu.shape[1] // 2
    meta, launch = split("silu_mul", config, PARAMS, pdl)
    out = empty((M, I), dtype=gu.dtype, device=gu.device)
    programs = (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(I, meta["BLOCK_I"]))
    _silu_mul_kernel[programs](gu, out, M, I, gu.stride(0), out.stride(0), **meta, **launch)
    return out


def silu_mul_torch(gu: torch.Tensor) -> torch.Tensor:
    """The same op on PyTorch's kernels."""
    _check(gu)
    gate, up = gu.chunk(2, dim=-1)
    return F.silu(gate).mul_(up)  # in place: the same product, without a second [tokens, I] temporary


def outputs(gu: torch.Tensor) -> torch.Tensor:
    return gu.new_empty((gu.shape[0], gu.shape[1] // 2))


def candidates(domain: Mapping[str, tuple[int, int | None]], interpreter: bool) -> list[dict[str, Any]]:
    if interpreter:
        return [{"BLOCK_M": m, "BLOCK_I": i, "num_warps": 4} for m in (8, 32) for i in (64, 256)]
    return list(grid(BLOCK_M=[1, 4], BLOCK_I=[512, 1024, 2048], num_warps=[4, 8]))


SPECS = (
    OpSpec("silu_mul", "silu(g) * u from one fused [M, 2I] gate/up projection; I = intermediate size",
           key=("M", "I"), buckets=("pow2", "exact"), key_of=key_of, launch=silu_mul, torch=silu_mul_torch,
           outputs=outputs, candidates=candidates, params={None: (PARAMS, ())}),
)
