"""The ops backends: ``triton`` (certified kernels, the default) and ``torch`` (PyTorch's own, chosen explicitly).

Both expose the same functions with the same signatures; the engine is written against a Backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import UsageError
from .attention import attention_decode, attention_decode_torch, attention_prefill, attention_prefill_torch
from .linear import linear, linear_torch
from .rms_norm import rms_norm, rms_norm_torch
from .rotary import rope_cache, rotary, rotary_torch
from .silu_mul import silu_mul, silu_mul_torch

BACKENDS = ("triton", "torch")


@dataclass(frozen=True)
class Backend:
    name: str
    linear: Callable
    rms_norm: Callable
    rotary: Callable
    silu_mul: Callable
    attention_prefill: Callable
    attention_decode: Callable


TRITON = Backend("triton", linear, rms_norm, rotary, silu_mul, attention_prefill, attention_decode)
TORCH = Backend(
    "torch", linear_torch, rms_norm_torch, rotary_torch, silu_mul_torch, attention_prefill_torch,
    attention_decode_torch,
)


def backend(name: str) -> Backend:
    if name == "triton":
        return TRITON
    if name == "torch":
        return TORCH
    raise UsageError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")


__all__ = ["BACKENDS", "Backend", "backend", "rope_cache", "TRITON", "TORCH"]
