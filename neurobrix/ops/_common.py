"""What every op launcher shares: argument checks that name the argument, and the settings lookup."""

from __future__ import annotations

from typing import Any, Mapping

import torch

from .. import tables
from ..errors import InvalidInputError
from ..gpu import interpreter_enabled

DTYPE_NAMES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}
LAUNCH_OPTIONS = ("num_warps", "num_stages")


def dtype_name(op: str, name: str, tensor: torch.Tensor) -> str:
    if tensor.dtype not in DTYPE_NAMES:
        raise InvalidInputError(
            f"{op}: {name} has dtype {tensor.dtype}; NeuroBrix kernels take float32, float16 or bfloat16"
        )
    return DTYPE_NAMES[tensor.dtype]


def same_dtype(op: str, reference: str, tensor: torch.Tensor, **others: torch.Tensor | None) -> str:
    """The dtype name of ``tensor``, after checking every other tensor given has the same dtype."""
    dtype = dtype_name(op, reference, tensor)
    for name, other in others.items():
        if other is not None and other.dtype != tensor.dtype:
            raise InvalidInputError(f"{op}: {name} has dtype {other.dtype} but {reference} has {tensor.dtype}")
    return dtype


def check_device(op: str, **tensors: torch.Tensor | None) -> None:
    """All tensors on one device the triton backend can launch on (CUDA, or CPU under the interpreter)."""
    given = {name: t for name, t in tensors.items() if t is not None}
    devices = {t.device for t in given.values()}
    if len(devices) > 1:
        where = ", ".join(f"{name} on {t.device}" for name, t in given.items())
        raise InvalidInputError(f"{op}: tensors on different devices ({where})")
    (device,) = devices
    if interpreter_enabled():
        if device.type != "cpu":
            raise InvalidInputError(f"{op}: the Triton interpreter (TRITON_INTERPRET=1) takes CPU tensors, got {device}")
    elif device.type != "cuda":
        name = next(iter(given))
        raise InvalidInputError(
            f"{op}: {name} is on {device}; the triton backend runs on a GPU (or on the CPU with "
            "TRITON_INTERPRET=1); for PyTorch's own kernels choose --backend torch"
        )


def check_shape(op: str, name: str, tensor: torch.Tensor, shape: tuple[int | None, ...], meaning: str) -> None:
    """``tensor`` has ``len(shape)`` dims and matches every non-None size; ``meaning`` names them."""
    ok = tensor.dim() == len(shape) and all(want is None or want == got for want, got in zip(shape, tensor.shape))
    if not ok:
        want = ", ".join("?" if s is None else str(s) for s in shape)
        raise InvalidInputError(f"{op}: {name} must have shape [{want}] ({meaning}), got {list(tensor.shape)}")


def check_contiguous_last(op: str, **tensors: torch.Tensor | None) -> None:
    for name, t in tensors.items():
        if t is not None and t.stride(-1) != 1:
            raise InvalidInputError(f"{op}: {name} must be contiguous in its last dimension (stride {t.stride()})")


def dot_precision(dtype: str) -> str:
    """tl.dot's input precision: full fp32 ("ieee") for fp32 operands, as certified; irrelevant for fp16/bf16."""
    return "ieee" if dtype == "fp32" else "tf32"


def settings(kernel: str, dtype: str, **shape: int) -> Mapping[str, Any]:
    """The certified config for this exact call (the one lookup per launch)."""
    return tables.settings(kernel, dtype, shape)


def split(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Certified config -> (the kernel's constexpr meta-parameters, launch options such as num_warps)."""
    meta = {k: v for k, v in config.items() if k not in LAUNCH_OPTIONS and k != "variant"}
    launch = {k: v for k, v in config.items() if k in LAUNCH_OPTIONS}
    return meta, launch
