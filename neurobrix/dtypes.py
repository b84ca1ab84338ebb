"""The one definition of the dtypes NeuroBrix kernels take: their names, and their torch dtypes.

Names are what tables, the command line and reports use; torch is imported only when a torch dtype
is asked for (verifying tables must not need torch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

NAMES: tuple[str, ...] = ("fp32", "fp16", "bf16")
_TORCH_NAMES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype of a name from NAMES (KeyError for another name)."""
    import torch

    found: torch.dtype = getattr(torch, _TORCH_NAMES[name])
    return found


def name_of(dtype: torch.dtype) -> str | None:
    """The name of a torch dtype, or None when kernels do not take it."""
    text = str(dtype).removeprefix("torch.")
    return next((name for name, torch_name in _TORCH_NAMES.items() if torch_name == text), None)
