"""silu_mul's conformance record: silu(g) * u from one fused [M, 2I] projection."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import bounds, reference
from . import Record, Small


def build(shape: Mapping[str, int], values: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """gu = [g | u]; in half of the draws the gates times 64 (exact: a power of two), past 88.7 where
    exp(g) overflows fp32, so a formula that is only stable for small gates shows (u left as drawn: the
    output stays in range). In half of the draws gu is a view of rows padded with 8 NaN: its row stride
    is then not twice the output's, nor is the up half at half the row stride."""
    from ..harness import padded

    gu = values((shape["M"], 2 * shape["I"]))
    wide = values.rng.random() < 0.5
    if wide:
        gu[:, : shape["I"]] *= 64.0
    pad = values.layout(values.rng.choice([0, 8]), engine=0)
    return {"gu": padded(gu, pad, values.device)}, {"gates x64": wide, "gu row padding": pad}


def judge(case: Any, outputs: tuple[Any, ...], config: Mapping[str, Any]) -> list[tuple[Any, Any, Any]]:
    gu = case.args["gu"]
    ref = case.once("silu_mul", lambda: reference.silu_mul(gu))
    bound = case.once("silu_mul bound", lambda: bounds.silu_mul(gu, ref))
    return [(outputs[0], ref, bound)]


def small(config: Mapping[str, Any]) -> Small:
    """Rows and columns across two blocks of the setting with a tail."""
    block_m, block_i = int(config["BLOCK_M"]), int(config["BLOCK_I"])
    return Small({"M": (1, 2 * block_m + 1), "I": (1, 2 * block_i + 1)}, {"M": (block_m,), "I": (block_i,)})


RECORDS = (
    Record(
        "silu_mul",
        build,
        judge,
        bound="conformance.bounds.silu_mul",
        caps={"M": 40, "I": 300},
        sweep={"M": (1, 192), "I": (1, 5632)},
        small=small,
    ),
)
