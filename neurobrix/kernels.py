"""The engine's kernels and their keys: the call dimensions that select a certified setting.

A kernel's key names the dimensions its table is indexed by; ``tables.settings(kernel, dtype,
shape)`` takes ``shape`` as a mapping over exactly these names. Each op in ``neurobrix/ops/``
documents how it derives its key from a call. Pure data: importing this needs no torch or triton.
"""

from __future__ import annotations

# kernel name -> key dimensions. Empty until the ops land; doctor reports coverage against it.
KERNEL_KEYS: dict[str, tuple[str, ...]] = {}
