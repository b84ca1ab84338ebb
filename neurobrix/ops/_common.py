"""What every op launcher shares: argument checks that name the argument, and splitting a setting.

Nothing here reads the environment at launch time: whether the Triton interpreter runs the kernels is
settled when this module is imported (Triton itself requires ``TRITON_INTERPRET`` before its import).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import torch
import triton
import triton.language as tl

from ..dtypes import name_of
from ..errors import InvalidInputError
from .spec import LAUNCH_OPTIONS

INTERPRETER = bool(triton.knobs.runtime.interpret)  # read once, by Triton itself (its own reading of the variable)


def dtype_name(op: str, name: str, tensor: torch.Tensor) -> str:
    found = name_of(tensor.dtype)
    if found is None:
        raise InvalidInputError(
            f"{op}: {name} has dtype {tensor.dtype}; NeuroBrix kernels take float32, float16 or bfloat16"
        )
    return found


def same_dtype(op: str, reference: str, tensor: torch.Tensor, **others: torch.Tensor | None) -> str:
    """The dtype name of ``tensor``, after checking every other tensor given has the same dtype."""
    dtype = dtype_name(op, reference, tensor)
    for name, other in others.items():
        if other is not None and other.dtype != tensor.dtype:
            raise InvalidInputError(f"{op}: {name} has dtype {other.dtype} but {reference} has {tensor.dtype}")
    return dtype


def check_device(op: str, **tensors: torch.Tensor | None) -> None:
    """All tensors on one device the triton backend can launch on (torch's current GPU, where Triton launches, or
    the CPU under the interpreter)."""
    given = {name: t for name, t in tensors.items() if t is not None}
    devices = {t.device for t in given.values()}
    if len(devices) > 1:
        where = ", ".join(f"{name} on {t.device}" for name, t in given.items())
        raise InvalidInputError(f"{op}: tensors on different devices ({where})")
    (device,) = devices
    if INTERPRETER:
        if device.type != "cpu":
            raise InvalidInputError(
                f"{op}: the Triton interpreter (TRITON_INTERPRET=1) takes CPU tensors, got {device}"
            )
    elif device.type != "cuda":
        name = next(iter(given))
        raise InvalidInputError(
            f"{op}: {name} is on {device}; the triton backend runs on a GPU (or on the CPU with "
            "TRITON_INTERPRET=1); for PyTorch's own kernels choose --backend torch"
        )
    elif device.index != torch.cuda.current_device():
        # Triton launches on torch's current GPU, whatever GPU the tensors are on: the kernel ran there on another
        # GPU's memory (over peer access, or an illegal address), unordered with PyTorch's work on the tensors' GPU
        # (their own stream), and a CUDA graph captured on the current GPU held none of that work
        name = next(iter(given))
        current = torch.cuda.current_device()
        raise InvalidInputError(
            f"{op}: {name} is on {device}, but Triton launches its kernels on torch's current GPU, cuda:{current}; "
            f"make that GPU current first (torch.cuda.set_device({device.index}), or with torch.cuda.device"
            f"({device.index}): ...), or keep the model on cuda:{current} (nothing was launched)"
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


@triton.jit
def dependent_launch(PDL: tl.constexpr):
    """Every kernel's first statement. With PDL (programmatic dependent launch, Hopper) the kernel may be
    launched before its predecessor in the stream has finished: it waits here, before touching any memory,
    until that predecessor has completed and its writes are visible (so reads after writes and writes
    after reads stay ordered, and since every kernel waits the same way, the order is transitive), then
    lets its own successor launch. What overlaps is only the launch and set-up of the next kernel with
    the tail of this one: no result can change. Without PDL this is nothing."""
    if PDL:
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()


def split(op: str, config: Mapping[str, Any], required: tuple[str, ...], pdl: bool = False
          ) -> tuple[dict[str, Any], dict[str, Any]]:
    """A certified setting -> (the kernel's constexpr meta-parameters, launch options such as num_warps).

    ``required``: the meta-parameters this kernel (or variant) needs; a setting without one is refused
    with the op's name rather than failing inside Triton. ``pdl``: launch with programmatic dependent
    launch (the class's launch features, :func:`dependent_launch`); the launch options then carry both
    the kernel's ``PDL`` switch and Triton's ``launch_pdl``, so every kernel of the op gets them.
    """
    missing = [name for name in required if name not in config]
    if missing:
        raise InvalidInputError(f"{op}: setting {dict(config)} lacks {', '.join(missing)}")
    meta = {k: v for k, v in config.items() if k not in LAUNCH_OPTIONS and k != "variant"}
    launch = {k: v for k, v in config.items() if k in LAUNCH_OPTIONS}
    launch.update(PDL=pdl, launch_pdl=pdl)
    return meta, launch


def grid(**axes: list[Any]) -> Iterator[dict[str, Any]]:
    """Every combination of the given values, as settings (for candidate spaces)."""
    names = list(axes)
    for values in itertools.product(*(axes[n] for n in names)):
        yield dict(zip(names, values))


def top(domain: Mapping[str, tuple[int, int | None]], dim: str, cap: int) -> int:
    """A domain's largest value of ``dim`` (``cap`` when unbounded or larger)."""
    hi = domain[dim][1]
    return cap if hi is None else min(hi, cap)
