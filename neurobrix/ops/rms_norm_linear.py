"""rms_norm_linear: y = rms_norm(x (+ residual)) @ W^T (+ b) in one launch, for decode rows.

The norm runs as the projection's prologue (``linear``'s gemv and skinny kernels, PROLOGUE "rms_norm"):
every program first reads its rows whole to find each row's 1 / sqrt(mean(h^2) + eps) (h = x, or x +
residual rounded to the stream's dtype), then, slice by slice of its K, forms h rstd w rounded to x's
dtype, the value rms_norm's kernel would have stored, and multiplies it into the weight tile. With a
residual, one program per row block also stores h: the new residual stream, returned beside y (as
rms_norm returns it). One launch instead of two, and the normalised rows never go through memory.
Rereading a row per program costs K elements from L2 against BLOCK_N x K of weights: it pays for the
few rows of decode, not for prompt rows (the model uses the unfused pair there).

Key (SPECS below): M = rows (powers of two), N = out_features, K = in_features = the normalised length
(exact).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from ..errors import InvalidInputError
from ._common import check_contiguous_last, check_device, check_shape, same_dtype, split
from .linear import _REQUIRED, STREAMING, linear_torch, streaming, streaming_candidates
from .linear import shared_memory as linear_shared_memory
from .rms_norm import rms_norm_torch
from .spec import Call, OpSpec

OP = "rms_norm_linear"


def _check(x, norm_weight, weight, bias, residual) -> str:
    check_shape(OP, "x", x, (None, None), "rows, in_features")
    check_shape(OP, "norm_weight", norm_weight, (x.shape[1],), "in_features of x")
    check_shape(OP, "weight", weight, (None, x.shape[1]), "out_features, in_features of x")
    if bias is not None:
        check_shape(OP, "bias", bias, (weight.shape[0],), "out_features")
    if residual is not None:
        check_shape(OP, "residual", residual, tuple(x.shape), "same as x")
    return same_dtype(OP, "x", x, norm_weight=norm_weight, weight=weight, bias=bias, residual=residual)


def key_of(x: torch.Tensor, norm_weight: torch.Tensor, eps: float, weight: torch.Tensor,
           bias: torch.Tensor | None = None, residual: torch.Tensor | None = None) -> Call:
    """(dtype, (M, N, K)) of a call."""
    return _check(x, norm_weight, weight, bias, residual), (x.shape[0], weight.shape[0], x.shape[1])


def rms_norm_linear(x: torch.Tensor, norm_weight: torch.Tensor, eps: float, weight: torch.Tensor,
                    bias: torch.Tensor | None = None, residual: torch.Tensor | None = None, *,
                    config: Mapping[str, Any], empty: Callable[..., torch.Tensor] = torch.empty, pdl: bool = False):
    """rms_norm(x, norm_weight, eps[, residual]) @ weight^T (+ bias) with the certified setting ``config``;
    with a residual, returns (y, x + residual) as rms_norm does. x [M, K], weight [N, K]."""
    dtype = _check(x, norm_weight, weight, bias, residual)
    check_device(OP, x=x, norm_weight=norm_weight, weight=weight, bias=bias, residual=residual)
    check_contiguous_last(OP, x=x, norm_weight=norm_weight, weight=weight, bias=bias, residual=residual)
    variant = config.get("variant")
    if variant not in STREAMING:
        raise InvalidInputError(f"{OP}: setting {dict(config)} names no variant of {', '.join(STREAMING)}")
    meta, launch = split(OP, config, _REQUIRED[variant], pdl)
    (M, K), N = x.shape, weight.shape[0]
    y = empty((M, N), dtype=x.dtype, device=x.device)
    h = empty((M, K), dtype=x.dtype, device=x.device) if residual is not None else None
    streaming(variant, x, weight, bias, y, K, dtype, meta, launch, empty, prologue="rms_norm", norm=norm_weight,
              eps=eps, residual=residual, h=h, op=OP)
    return (y, h) if h is not None else y


def rms_norm_linear_torch(x: torch.Tensor, norm_weight: torch.Tensor, eps: float, weight: torch.Tensor,
                          bias: torch.Tensor | None = None, residual: torch.Tensor | None = None):
    """The same op on PyTorch's kernels: the norm, then the projection."""
    _check(x, norm_weight, weight, bias, residual)
    if residual is None:
        return linear_torch(rms_norm_torch(x, norm_weight, eps), weight, bias)
    y, h = rms_norm_torch(x, norm_weight, eps, residual)
    return linear_torch(y, weight, bias), h


def outputs(x: torch.Tensor, norm_weight: torch.Tensor, eps: float, weight: torch.Tensor,
            bias: torch.Tensor | None = None, residual: torch.Tensor | None = None):
    y = x.new_empty((x.shape[0], weight.shape[0]))
    return (y, x.new_empty(x.shape)) if residual is not None else y


SPECS = (
    OpSpec(OP, "rms_norm(x (+ residual)) @ W[N,K]^T (+ b) in one launch, for decode rows; M = rows",
           key=("M", "N", "K"), buckets=("pow2", "exact", "exact"), key_of=key_of, launch=rms_norm_linear,
           torch=rms_norm_linear_torch, outputs=outputs, candidates=streaming_candidates,
           shared_memory=linear_shared_memory, variants=STREAMING),
)
