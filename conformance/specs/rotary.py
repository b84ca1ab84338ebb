"""rotary's conformance record: q and k rotated at their positions, k and v appended to NaN-filled KV
caches (a store to any other row shows), as the engine calls it."""

from __future__ import annotations

import math
from typing import Any, Mapping

import torch

from .. import bounds, reference
from . import Record, Refused


def build(shape: Mapping[str, int], values: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    from ..harness import guarded

    rng, dev = values.rng, values.device
    T, H, D = shape["T"], shape["H"], shape["D"]
    if H < 2 or D % 2:
        raise ValueError(f"rotary: needs H >= 2 (q and kv heads) and an even D, got H={H}, D={D}")
    hkv = rng.randint(1, H - 1)
    hq = H - hkv
    batch = rng.choice([b for b in (1, 2, 3) if T % b == 0])
    S = T // batch
    cached = rng.random() < 0.75  # the engine's call: k and v appended to a KV cache in the same launch
    positions_max = rng.choice([S + 1, 4 * S + 7] if cached else [S, 4 * S + 7])
    qkv = values((batch, S, hq + 2 * hkv, D))  # q, k and v are strided views of a fused projection
    tables = reference.rope_frequencies(D, rng.choice([10000.0, 500000.0]), positions_max)
    gen = torch.Generator().manual_seed(rng.randrange(2**31))
    if cached:  # distinct positions per sequence, as the engine's: a run of S from a random start
        room = positions_max - S
        starts = torch.tensor([[rng.choice([0, room, rng.randint(0, room)])] for _ in range(batch)])
        pos = starts + torch.arange(S)[None, :]
    else:
        pos = torch.randint(0, positions_max, (batch, S), generator=gen)
    args = {"q": qkv[:, :, :hq], "k": qkv[:, :, hq:hq + hkv], "cos": guarded(tables.cos.float(), dev),
            "sin": guarded(tables.sin.float(), dev), "positions": pos.to(dev)}
    if cached:  # caches hold NaN where nothing is written: a store to the wrong row shows
        nan = torch.full((batch, positions_max, hkv, D), math.nan, dtype=values.dtype)
        args.update(v=qkv[:, :, hq + hkv:], k_cache=guarded(nan, dev), v_cache=guarded(nan, dev))
    return args, {"batch": batch, "q_heads": hq, "kv_heads": hkv, "cache": cached}


def reset(case: Any) -> None:
    for cache in ("k_cache", "v_cache"):
        if case.args.get(cache) is not None:
            case.args[cache].fill_(math.nan)  # written by an earlier run on this case: start clean


def _cache_rows(cache: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """(cache[b, positions[b, s]] as [B, S, H, D], whether any other row is no longer all NaN)."""
    rows = torch.arange(cache.shape[0], device=cache.device)[:, None]
    picked = cache[rows, positions]
    rest = torch.ones(cache.shape[:2], dtype=torch.bool, device=cache.device)
    rest[rows, positions] = False
    return picked, bool((~cache[rest].isnan()).any())


def judge(case: Any, outputs: tuple[Any, ...], config: Mapping[str, Any]) -> list[tuple[Any, Any, Any]]:
    a = case.args
    pairs = []
    for n, (out, x) in enumerate(zip(outputs, (a["q"], a["k"]))):
        ref = case.once(("rotary", n), lambda x=x: reference.rotary(x, a["cos"], a["sin"], a["positions"]))
        bound = case.once(("rotary bound", n), lambda x=x, ref=ref: bounds.rotary(x, a["cos"], a["sin"],
                                                                                  a["positions"], ref))
        if n == 1 and a.get("k_cache") is not None:
            out, stray = _cache_rows(out, a["positions"])
            v_rows, v_stray = _cache_rows(a["v_cache"], a["positions"])
            pairs.append((v_rows, a["v"].double(), torch.zeros_like(ref)))  # v is copied exactly
            if stray or v_stray:
                raise Refused("rotary wrote a KV-cache row that is not one of its positions")
        pairs.append((out, ref, bound))
    return pairs


RECORDS = (
    Record("rotary", build, judge, bound="conformance.bounds.rotary", caps={"T": 24, "H": 12, "D": 128},
           sweep={"T": (1, 192), "H": (2, 40), "D": (2, 128)},
           multiple_of={"D": 2}, lowest={"H": 2, "D": 2}, reset=reset),
)
