"""linear's conformance record: y = x W^T (+ b) against float64, under the fp32-dot bound."""

from __future__ import annotations

import math
from typing import Any, Mapping

from .. import bounds, reference
from . import Record


def _pow2_at_most(x: float) -> float:
    return 2.0 ** math.floor(math.log2(x))


def build(shape: Mapping[str, int], values: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    M, N, K = shape["M"], shape["N"], shape["K"]
    has_bias = values.rng.random() < 0.5
    # weights scaled by a power of two near 1/sqrt(K), as trained weights are: outputs stay in range
    args = {"x": values((M, K)), "weight": values((N, K), scale=_pow2_at_most(1 / math.sqrt(K))),
            "bias": values((N,)) if has_bias else None}
    return args, {"bias": has_bias}


def judge(case: Any, outputs: tuple[Any, ...], config: Mapping[str, Any]) -> list[tuple[Any, Any, Any]]:
    a = case.args
    ref = case.once("linear", lambda: reference.linear(a["x"], a["weight"], a["bias"]))
    bound = case.once("linear bound", lambda: bounds.linear(a["x"], a["weight"], a["bias"], ref))
    return [(outputs[0], ref, bound)]


RECORDS = (
    Record("linear", build, judge, bound="conformance.bounds.linear (gamma_{K+2} fp32 dot, one rounding)",
           caps={"M": 80, "N": 96, "K": 96}, sweep={"M": (1, 192), "N": (1, 2560), "K": (1, 2048)},
           # decode rows (M <= 4) and prefill rows get their own interpreter entries, each its variant
           interpreter_domains=((("M", 1, 4), ("N", 1, None), ("K", 1, None)),
                                (("M", 5, None), ("N", 1, None), ("K", 1, None)))),
)
