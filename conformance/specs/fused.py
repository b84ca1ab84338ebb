"""The fused decode projections' conformance records: rms_norm_linear and silu_mul_linear.

The prologue's rows (the norm's or SiLU-mul's output) never reach memory, so each is judged through
the projection: the float64 truth is the float64 op followed by the float64 projection, and the bound
is the projection's fp32 accumulation bound on the rows' magnitudes plus the rows' own bound (their op's,
with its rounding to the dtype) carried through |W| exactly (``bounds.linear_of_rounded``). The new
residual stream rms_norm_linear returns is judged as rms_norm's is, and the rows are normalised from
the kernel's own (checked) h.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from neurobrix.dtypes import torch_dtype

from .. import bounds, reference
from . import Record
from .linear import small as linear_small


def _weight_scale(K: int) -> float:
    return 2.0 ** math.floor(math.log2(1 / math.sqrt(K)))  # near 1/sqrt(K), exact: as trained weights are


def build_norm(shape: Mapping[str, int], values: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    M, N, K = shape["M"], shape["N"], shape["K"]
    has_bias, has_residual = values.rng.random() < 0.5, values.rng.random() < 0.5
    args = {
        "x": values((M, K)),
        "norm_weight": values((K,)),
        "eps": values.rng.choice([1e-5, 1e-6]),
        "weight": values((N, K), scale=_weight_scale(K)),
        "bias": values((N,)) if has_bias else None,
        "residual": values((M, K)) if has_residual else None,
    }
    return args, {"bias": has_bias, "residual": has_residual}


def judge_norm(case: Any, outputs: tuple[Any, ...], config: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    a = case.args
    pairs: list[tuple[Any, ...]] = []
    rows = a["x"]
    if a["residual"] is not None:
        h64 = case.once("residual", lambda: reference.residual_add(a["x"], a["residual"]))
        hb = case.once("residual bound", lambda: bounds.residual_add(a["x"], a["residual"], h64))
        pairs.append((outputs[1], h64, hb, "the new residual stream h"))
        rows = outputs[1]  # normalised from the kernel's own rounded h, as rms_norm's record does
    z64 = reference.rms_norm(rows, a["norm_weight"], a["eps"])
    bz = bounds.rms_norm(rows, a["norm_weight"], a["eps"], z64)
    pairs.append((outputs[0], *_projection(case, z64, bz, a["weight"], a["bias"], config), "y"))
    return pairs


def build_silu(shape: Mapping[str, int], values: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    M, N, K = shape["M"], shape["N"], shape["K"]
    return {"gu": values((M, 2 * K)), "weight": values((N, K), scale=_weight_scale(K))}, {}


def judge_silu(case: Any, outputs: tuple[Any, ...], config: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    a = case.args
    z64 = case.once("silu_mul", lambda: reference.silu_mul(a["gu"]))
    bz = case.once("silu_mul bound", lambda: bounds.silu_mul(a["gu"], z64))
    return [(outputs[0], *_projection(case, z64, bz, a["weight"], None, config), "y")]


def _projection(case: Any, z64: Any, bz: Any, weight: Any, bias: Any, config: Mapping[str, Any]) -> tuple[Any, Any]:
    """(float64 y, its bound) of the rows z64 (within bz) through the projection under this setting."""
    dtype = torch_dtype(case.dtype)
    y64 = reference.linear(z64, weight, bias)
    depth = bounds.linear_depth(config, z64.shape[1], dtype)
    return y64, bounds.linear_of_rounded(z64, bz, weight, bias, y64, dtype, depth=depth)


RECORDS = (
    Record(
        "rms_norm_linear",
        build_norm,
        judge_norm,
        bound="conformance.bounds.linear_of_rounded of rms_norm's rows (+ residual_add)",
        caps={"M": 40, "N": 96, "K": 96},
        sweep={"M": (1, 64), "N": (1, 2560), "K": (1, 2048)},
        small=linear_small,
    ),
    Record(
        "silu_mul_linear",
        build_silu,
        judge_silu,
        bound="conformance.bounds.linear_of_rounded of silu_mul's rows",
        caps={"M": 40, "N": 96, "K": 96},
        sweep={"M": (1, 64), "N": (1, 2560), "K": (1, 2048)},
        small=linear_small,
    ),
)
