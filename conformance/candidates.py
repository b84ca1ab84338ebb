"""The candidate space certify searches, per kernel and per kind of device, and what cannot fit.

Candidates belong here, never in the engine. For a GPU the space is shaped by the domain (a decode
bucket of linear gets GEMV-style candidates, a prefill bucket gets tiles sized to its rows); for
the Triton interpreter it is small and favours big blocks (the interpreter pays per program, not
per element: FACTS.md).
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator

Config = dict[str, Any]
SMEM_BYTES = {"nvidia-h200": 232_448}  # opt-in shared memory per block (sm_90)


def _grid(**axes: list) -> Iterator[Config]:
    names = list(axes)
    for values in itertools.product(*(axes[n] for n in names)):
        yield dict(zip(names, values))


def _hi(domain: dict[str, tuple[int, int | None]], dim: str, cap: int) -> int:
    hi = domain[dim][1]
    return cap if hi is None else min(hi, cap)


def space(kernel: str, domain: dict[str, tuple[int, int | None]], interpreter: bool) -> list[Config]:
    """Every candidate config for ``kernel`` on this domain (before pruning)."""
    if interpreter:
        return list(_INTERPRETER[kernel])
    return list(_gpu_space(kernel, domain))


_INTERPRETER: dict[str, list[Config]] = {
    "linear": [
        *({"variant": "gemv", **c, "num_warps": 4} for c in _grid(BLOCK_N=[32, 64], BLOCK_K=[64, 128],
                                                                   SPLIT_K=[1, 2])),
        *({"variant": "tiled", **c, "GROUP_M": 4, "num_warps": 4, "num_stages": 2}
          for c in _grid(BLOCK_M=[32, 64], BLOCK_N=[32, 64], BLOCK_K=[32, 64])),
    ],
    "rms_norm": [{"BLOCK_M": m, "num_warps": 4} for m in (4, 16, 64)],
    "rotary": [{"BLOCK_H": h, "num_warps": 4} for h in (4, 16, 64)],
    "silu_mul": [{"BLOCK_M": m, "BLOCK_I": i, "num_warps": 4} for m in (8, 32) for i in (64, 256)],
    "attention_prefill": [{"BLOCK_M": m, "BLOCK_N": n, "num_warps": 4, "num_stages": 2}
                          for m in (16, 32, 64) for n in (16, 32, 64)],
    "attention_decode": [{"SPLITS": s, "BLOCK_N": n, "num_warps": 4, "num_stages": 2}
                         for s in (1, 2, 4) for n in (32, 64)],
}


def _gpu_space(kernel: str, domain: dict[str, tuple[int, int | None]]) -> Iterator[Config]:
    if kernel == "linear":
        m_hi = _hi(domain, "M", 1 << 20)
        if m_hi <= 16:  # decode rows: weight streaming, GEMV-style first
            for c in _grid(BLOCK_N=[16, 32, 64], BLOCK_K=[128, 256], SPLIT_K=[1, 2, 4, 8], num_warps=[4]):
                yield {"variant": "gemv", **c}
        if m_hi <= 64:
            block_m = 16 if m_hi <= 16 else (32 if m_hi <= 32 else 64)
            for c in _grid(BLOCK_N=[64, 128, 256], num_stages=[3, 4]):
                yield {"variant": "tiled", "BLOCK_M": block_m, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, **c}
        else:
            for c in _grid(BLOCK_M=[64, 128], BLOCK_N=[128, 256], num_warps=[4, 8], num_stages=[3, 4]):
                yield {"variant": "tiled", **c, "BLOCK_K": 64, "GROUP_M": 8}
            # persistent + TMA (Hopper): BM 128, BN 256, BK 64, 8 warps, 3 stages was the best measured
            for c in _grid(BLOCK_N=[128, 256], num_warps=[4, 8], num_stages=[3, 4]):
                yield {"variant": "tma", "BLOCK_M": 128, **c, "BLOCK_K": 64, "GROUP_M": 8}
    elif kernel == "rms_norm":
        yield from _grid(BLOCK_M=[1, 2, 4], num_warps=[4, 8])
    elif kernel == "rotary":
        yield from _grid(BLOCK_H=[2, 4, 8], num_warps=[1, 4])
    elif kernel == "silu_mul":
        yield from _grid(BLOCK_M=[1, 4], BLOCK_I=[512, 1024, 2048], num_warps=[4, 8])
    elif kernel == "attention_prefill":
        yield from _grid(BLOCK_M=[64, 128], BLOCK_N=[32, 64], num_warps=[4, 8], num_stages=[2, 3])
    elif kernel == "attention_decode":
        yield from _grid(SPLITS=[1, 4, 8, 16, 32], BLOCK_N=[32, 64], num_warps=[4], num_stages=[2])
    else:
        raise KeyError(kernel)


def shared_memory(kernel: str, config: Config, dims: dict[str, int], itemsize: int) -> int:
    """An estimate of the shared memory a config needs; a config that slips past it still fails to
    launch with OutOfResources at screening and is rejected there."""
    stages = config.get("num_stages", 1)
    if kernel == "linear" and config.get("variant") in ("tiled", "tma"):
        # pipelined A and B tiles, plus the output tile staged for the epilogue (on the H200 triton
        # 3.6 asked for exactly this much for BM 128, BN 256, BK 64, 4 stages: 262144 bytes)
        operands = (config["BLOCK_M"] + config["BLOCK_N"]) * config["BLOCK_K"] * itemsize * stages
        return operands + config["BLOCK_M"] * config["BLOCK_N"] * itemsize
    if kernel == "attention_prefill":
        d = 1 << (dims["D"] - 1).bit_length()
        return (config["BLOCK_M"] * d + 2 * config["BLOCK_N"] * d * stages) * itemsize
    return 0


def prune(kernel: str, configs: list[Config], class_id: str, dims: dict[str, int], itemsize: int
          ) -> tuple[list[Config], list[tuple[Config, str]]]:
    """(candidates that can fit this device, [(config, why not)] for the rest)."""
    limit = SMEM_BYTES.get(class_id)
    keep, dropped = [], []
    for config in configs:
        need = shared_memory(kernel, config, dims, itemsize)
        if limit is not None and need > limit:
            dropped.append((config, f"needs >= {need} bytes of shared memory, the device has {limit}"))
        else:
            keep.append(config)
    return keep, dropped
