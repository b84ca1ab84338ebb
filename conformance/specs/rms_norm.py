"""rms_norm's conformance record: the residual add (one rounding) and the norm of the kernel's own h."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from .. import bounds, reference
from . import Record, Small


def build(shape: Mapping[str, int], values: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """x (and the residual) as the engine passes them, or (half of the draws) as views of rows padded with
    NaN, 8 after x's rows and 24 after the residual's: the three row strides the kernel takes (x, residual
    and the outputs') then all differ, and a load past N reads NaN in every row."""
    from ..harness import padded

    M, N = shape["M"], shape["N"]
    has_residual = values.rng.random() < 0.5
    strided = values.layout(values.rng.random() < 0.5, engine=False)
    args = {
        "x": padded(values((M, N)), 8 if strided else 0, values.device),
        "weight": values((N,)),
        "eps": values.rng.choice([1e-5, 1e-6]),
        "residual": padded(values((M, N)), 24 if strided else 0, values.device) if has_residual else None,
    }
    # a quarter of the draws scale the rows by 2^-9 (x and the residual alike): mean squares near eps, where eps
    # is a good part of the norm and a wrong eps (placement, value, rounding) shows; at unit scale it is ~1e-5
    # of the mean square, below every dtype's rounding
    tiny = values.rng.random() < 0.25
    for name in ("x", "residual") if tiny else ():
        if args[name] is not None:
            args[name].mul_(2.0**-9)
    return args, {"residual": has_residual, "padded rows": strided, "rows x 2^-9": tiny}


def judge(case: Any, outputs: tuple[Any, ...], config: Mapping[str, Any]) -> list[tuple[Any, Any, Any]]:
    a = case.args
    pairs = []
    normalised = a["x"]
    if a["residual"] is not None:
        h64 = case.once("residual", lambda: reference.residual_add(a["x"], a["residual"]))
        hb = case.once("residual bound", lambda: bounds.residual_add(a["x"], a["residual"], h64))
        pairs.append((outputs[1], h64, hb))
        # y is the norm of the kernel's own (checked) rounded h; an h that is not even finite fails the pair
        # above, and y is then judged against the norm of the rounded float64 sum (there is no other to take)
        normalised = outputs[1] if torch.isfinite(outputs[1]).all() else h64.to(outputs[1].dtype)
    ref = reference.rms_norm(normalised, a["weight"], a["eps"])
    pairs.append((outputs[0], ref, bounds.rms_norm(normalised, a["weight"], a["eps"], ref)))
    return pairs


def small(config: Mapping[str, Any]) -> Small:
    """Rows across three BLOCK_M blocks with a tail; a row is one block of next_pow2(N) columns, so N
    crosses powers of two (the common block sizes and 256, 512)."""
    block_m = int(config["BLOCK_M"])
    return Small({"M": (1, 3 * block_m + 1), "N": (1, 600)}, {"M": (block_m,), "N": (256, 512)})


RECORDS = (
    Record(
        "rms_norm",
        build,
        judge,
        bound="conformance.bounds.rms_norm + residual_add",
        caps={"M": 40, "N": 300},
        sweep={"M": (1, 192), "N": (1, 4096)},
        small=small,
    ),
)
