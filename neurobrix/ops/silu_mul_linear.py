"""silu_mul_linear: y = silu_mul(gu) @ W^T in one launch, for decode rows (SwiGLU's down projection).

SiLU-mul runs as the projection's prologue (``linear``'s gemv and skinny kernels, PROLOGUE "silu_mul"):
each K slice of the rows is formed from gu = [gate | up] as silu(g) u in fp32, rounded to the dtype (the
value silu_mul's kernel would have stored), and multiplied into the weight tile. One launch instead of
two, and the [M, I] activations never go through memory.

Key (SPECS below): M = rows (powers of two), N = out_features, K = in_features = I, half of gu's
columns (exact).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from ..errors import InvalidInputError
from ._common import check_contiguous_last, check_device, check_shape, same_dtype, split
from .linear import _REQUIRED, STREAMING, linear_torch, streaming, streaming_candidates
from .linear import shared_memory as linear_shared_memory
from .silu_mul import silu_mul_torch
from .spec import Call, OpSpec

OP = "silu_mul_linear"


def _check(gu: torch.Tensor, weight: torch.Tensor) -> str:
    check_shape(OP, "gu", gu, (None, None), "rows, 2 x in_features")
    if gu.shape[1] % 2:
        raise InvalidInputError(f"{OP}: gu's last dimension must be even (gate then up), got {gu.shape[1]}")
    check_shape(OP, "weight", weight, (None, gu.shape[1] // 2), "out_features, half of gu's columns")
    return same_dtype(OP, "gu", gu, weight=weight)


def key_of(gu: torch.Tensor, weight: torch.Tensor) -> Call:
    """(dtype, (M, N, K)) of a call."""
    return _check(gu, weight), (gu.shape[0], weight.shape[0], gu.shape[1] // 2)


def silu_mul_linear(gu: torch.Tensor, weight: torch.Tensor, *, config: Mapping[str, Any],
                    empty: Callable[..., torch.Tensor] = torch.empty, pdl: bool = False) -> torch.Tensor:
    """silu_mul(gu) @ weight^T with the certified setting ``config``; gu [M, 2K], weight [N, K]."""
    dtype = _check(gu, weight)
    check_device(OP, gu=gu, weight=weight)
    check_contiguous_last(OP, gu=gu, weight=weight)
    variant = config.get("variant")
    if variant not in STREAMING:
        raise InvalidInputError(f"{OP}: setting {dict(config)} names no variant of {', '.join(STREAMING)}")
    meta, launch = split(OP, config, _REQUIRED[variant], pdl)
    M, N, K = gu.shape[0], weight.shape[0], gu.shape[1] // 2
    y = empty((M, N), dtype=gu.dtype, device=gu.device)
    streaming(variant, gu, weight, None, y, K, dtype, meta, launch, empty, prologue="silu_mul", op=OP)
    return y


def silu_mul_linear_torch(gu: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """The same op on PyTorch's kernels: SiLU-mul, then the projection."""
    _check(gu, weight)
    return linear_torch(silu_mul_torch(gu), weight)


def outputs(gu: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return gu.new_empty((gu.shape[0], weight.shape[0]))


SPECS = (
    OpSpec(OP, "silu(g) * u of gu = [g | u], @ W[N,K]^T in one launch, for decode rows; M = rows, K = I",
           key=("M", "N", "K"), buckets=("pow2", "exact", "exact"), key_of=key_of, launch=silu_mul_linear,
           torch=silu_mul_linear_torch, outputs=outputs, candidates=streaming_candidates,
           shared_memory=linear_shared_memory, variants=STREAMING),
)
