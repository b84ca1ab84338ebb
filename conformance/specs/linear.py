"""linear's conformance record: y = x W^T (+ b) against float64, under the fp32-dot bound with the summation
depth the setting fixes (``bounds.linear_depth``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from neurobrix.dtypes import torch_dtype

from .. import bounds, reference
from . import Record, Small


def _pow2_at_most(x: float) -> float:
    return 2.0 ** math.floor(math.log2(x))


def build(shape: Mapping[str, int], values: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """x, W and b as the engine passes them, or (half of the draws) x as a view of rows padded with 8 NaN
    (its row stride then differs from W's and y's, and a load past K reads NaN in every row; 8 elements
    keep TMA's rows 16-byte aligned)."""
    from ..harness import padded

    M, N, K = shape["M"], shape["N"], shape["K"]
    has_bias = values.rng.random() < 0.5
    pad = values.layout(values.rng.choice([0, 8]), engine=0)
    # weights scaled by a power of two near 1/sqrt(K), as trained weights are: outputs stay in range
    args = {
        "x": padded(values((M, K)), pad, values.device),
        "weight": values((N, K), scale=_pow2_at_most(1 / math.sqrt(K))),
        "bias": values((N,)) if has_bias else None,
    }
    return args, {"bias": has_bias, "x row padding": pad}


def judge(case: Any, outputs: tuple[Any, ...], config: Mapping[str, Any]) -> list[tuple[Any, Any, Any]]:
    a = case.args
    ref = case.once("linear", lambda: reference.linear(a["x"], a["weight"], a["bias"]))
    # the setting fixes the summation order (K slices, BLOCK_K steps, the split merge): the bound allows the
    # roundings that order has, so one more rounding of the accumulator or of a split's partial shows
    depth = bounds.linear_depth(config, a["x"].shape[1], torch_dtype(case.dtype))
    bound = case.once(("linear bound", depth), lambda: bounds.linear(a["x"], a["weight"], a["bias"], ref, depth=depth))
    return [(outputs[0], ref, bound)]


def small(config: Mapping[str, Any]) -> Small:
    """Rows, columns and K across each block of the setting with tails: two BLOCK_N column blocks and a
    partial one; for split-K (gemv, skinny) K from one step per slice to two (2 SPLIT_K BLOCK_K), so some
    slices are empty, some partial; rows one at a time for gemv (a program per row), across two BLOCK_M
    blocks for skinny, and for the grouped tiles (tiled, tma, tma_split) into a second group of GROUP_M
    row blocks; tma_split's K, like skinny's, to two steps per slice. TMA rows must be 16-byte aligned: N
    and K multiples of 8."""
    variant = config["variant"]
    block_n, block_k = int(config["BLOCK_N"]), int(config["BLOCK_K"])
    cols = {"N": (1, 2 * block_n + 1)}
    if variant in ("gemv", "skinny"):
        split_k = int(config["SPLIT_K"])
        depth = {"K": (1, 2 * split_k * block_k + 1)}
        blocks = {"N": (block_n,), "K": (block_k, split_k * block_k)}
        if variant == "gemv":
            return Small({"M": (1, 4), **cols, **depth}, blocks)
        block_m = int(config["BLOCK_M"])
        return Small({"M": (1, 2 * block_m + 1), **cols, **depth}, {"M": (block_m,), **blocks})
    block_m, group = int(config["BLOCK_M"]), int(config["GROUP_M"])
    split_k = int(config.get("SPLIT_K", 1))
    ranges = {"M": (1, (group + 1) * block_m + 1), **cols, "K": (1, max(3, 2 * split_k) * block_k + 1)}
    slices = (block_k,) if split_k == 1 else (block_k, split_k * block_k)
    blocks = {"M": (block_m, group * block_m), "N": (block_n,), "K": slices}
    # always one shape in the second group of row blocks, over two column blocks and two K steps: the tile order
    # of the grouped walk differs from a row-major one only there
    second_group = {"M": group * block_m + 1, "N": block_n + 8, "K": block_k + 8}
    return Small(ranges, blocks, {"N": 8, "K": 8} if variant in ("tma", "tma_split") else {}, (second_group,))


RECORDS = (
    Record(
        "linear",
        build,
        judge,
        bound="conformance.bounds.linear (gamma fp32 dot at the setting's summation depth, one rounding)",
        caps={"M": 80, "N": 96, "K": 96},
        sweep={"M": (1, 192), "N": (1, 2560), "K": (1, 2048)},
        small=small,
        # tma_split's split-K path (partials, the merge by the last slice to arrive), in an even and an odd split:
        # the candidates offer both for prompts with few output tiles, and on 2026-12-04 no table shipped either
        offered=(
            {
                "variant": "tma_split",
                "BLOCK_M": 64,
                "BLOCK_N": 128,
                "BLOCK_K": 64,
                "GROUP_M": 8,
                "SPLIT_K": 2,
                "SUBTILE": 0,
                "WARP_SPECIALIZE": False,
                "num_warps": 4,
                "num_stages": 4,
            },
            {
                "variant": "tma_split",
                "BLOCK_M": 128,
                "BLOCK_N": 128,
                "BLOCK_K": 64,
                "GROUP_M": 8,
                "SPLIT_K": 3,
                "SUBTILE": 0,
                "WARP_SPECIALIZE": False,
                "num_warps": 8,
                "num_stages": 4,
            },
        ),
        # decode rows (M <= 4) and prefill rows get their own interpreter entries, each its variant
        interpreter_domains=(
            (("M", 1, 4), ("N", 1, None), ("K", 1, None)),
            (("M", 5, None), ("N", 1, None), ("K", 1, None)),
        ),
    ),
)
