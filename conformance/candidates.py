"""Which candidate settings can fit a device: the per-op spaces live in the ops' specs
(``neurobrix/ops/<op>.py``), the device's limits here.

A candidate whose shared-memory estimate (the op's spec) exceeds the device's opt-in limit is
rejected as ``out_of_resources`` without being compiled; one that slips past the estimate still fails
to launch at screening and is rejected there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from neurobrix.ops import SPECS
from neurobrix.plan import SHARED_MEMORY

Config = dict[str, Any]
SMEM_BYTES = {"nvidia-h200": SHARED_MEMORY[(9, 0)]}  # opt-in shared memory per block (sm_90), as preflight has it


def space(kernel: str, domain: Mapping[str, tuple[int, int | None]], interpreter: bool) -> list[Config]:
    """Every candidate setting of ``kernel`` on this domain (before pruning), from its spec."""
    return list(SPECS[kernel].candidates(domain, interpreter))


def prune(
    kernel: str, configs: list[Config], class_id: str, dims: dict[str, int], itemsize: int
) -> tuple[list[Config], list[tuple[Config, str]]]:
    """(candidates that can fit this device, [(config, why not)] for the rest)."""
    limit = SMEM_BYTES.get(class_id)
    keep, dropped = [], []
    for config in configs:
        need = SPECS[kernel].shared_memory(config, dims, itemsize)
        if limit is not None and need > limit:
            dropped.append((config, f"needs >= {need} bytes of shared memory, the device has {limit}"))
        else:
            keep.append(config)
    return keep, dropped
