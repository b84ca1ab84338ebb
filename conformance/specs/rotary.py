"""rotary's conformance record: q and k rotated at their positions, k and v appended to NaN-filled KV
caches (a store to any other row shows), as the engine calls it, with cos/sin tables from the engine's own
``rope_cache`` for every rope configuration the catalogue and the supported families use; those tables are
checked too, against the reference's independent float64 derivation (``reference.rope_frequencies``)."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from neurobrix.ops import rope_cache

from .. import bounds, reference
from . import Record, Refused, Small


@dataclass(frozen=True)
class Rope:
    """A rope configuration as config.json states it (theta, rope_scaling) and who uses it."""

    theta: float
    scaling: tuple[tuple[str, Any], ...] | None  # rope_scaling's items (hashable), None: unscaled
    used_by: str

    @property
    def rope_scaling(self) -> dict[str, Any] | None:
        return dict(self.scaling) if self.scaling is not None else None

    def __str__(self) -> str:
        if self.scaling is None:
            return f"theta {self.theta:g}, unscaled ({self.used_by})"
        s = self.rope_scaling
        kind = s.get("rope_type", s.get("type"))
        if kind == "yarn":
            extra = "".join(
                f" {name} {s[name]!r}"
                for name in ("beta_fast", "beta_slow", "truncate", "attention_factor")
                if name in s
            )
            return (
                f"theta {self.theta:g}, yarn factor {s['factor']:g} original {s['original_max_position_embeddings']}"
                f"{extra} ({self.used_by})"
            )
        if s["rope_type"] != "llama3":
            return f"theta {self.theta:g}, {s['rope_type']} factor {s['factor']:g} ({self.used_by})"
        return (
            f"theta {self.theta:g}, {s['rope_type']} factor {s['factor']:g} low {s['low_freq_factor']:g} "
            f"high {s['high_freq_factor']:g} original {s['original_max_position_embeddings']} ({self.used_by})"
        )


def _llama3(factor: float, low: float, high: float, original: int) -> tuple[tuple[str, Any], ...]:
    return (
        ("rope_type", "llama3"),
        ("factor", factor),
        ("low_freq_factor", low),
        ("high_freq_factor", high),
        ("original_max_position_embeddings", original),
    )


# the supported families' rope configurations the catalogue does not hold (neurobrix/config.py)
FAMILIES = (
    Rope(10000.0, None, "Llama 2, Mistral-7B v0.1"),
    Rope(500000.0, None, "Llama-3-8B"),
    Rope(500000.0, _llama3(8.0, 1.0, 4.0, 32), "the tiny llama3 checkpoint the CPU tests run"),
)


@functools.lru_cache(maxsize=1)
def ropes() -> tuple[Rope, ...]:
    """Every distinct rope configuration of the catalogue's models (as the engine reads their config.json),
    then the families' others."""
    from ..catalogue import load

    found: dict[tuple[float, Any], list[str]] = {}
    for name, cfg in load()[0].items():
        scaling = tuple(sorted(cfg.rope_scaling.items())) if cfg.rope_scaling else None
        found.setdefault((cfg.rope_theta, scaling), []).append(name.split("/")[-1])
    for rope in FAMILIES:
        found.setdefault((rope.theta, rope.scaling), []).append(rope.used_by)
    return tuple(Rope(theta, scaling, ", ".join(names)) for (theta, scaling), names in found.items())


def _draw_rope(rng: Any) -> Rope:
    """One of every configuration in use, or any theta, unscaled or with any Llama-3 factors, or with the other
    rules the engine reads from a config.json (neurobrix/config.py): linear scaling by any factor, and dynamic
    (NTK) scaling, the default rotation up to the model's context (its tables never go past it)."""
    choice = rng.randrange(len(ropes()) + 4)
    if choice < len(ropes()):
        return ropes()[choice]
    theta = float(round(10 ** rng.uniform(2, 7)))
    if choice == len(ropes()):
        return Rope(theta, None, "any theta")
    if choice == len(ropes()) + 1:
        factor = float(rng.choice([0.5, 2, 4, 8, 32]))
        return Rope(theta, (("factor", factor), ("rope_type", "linear")), "any linear factor")
    if choice == len(ropes()) + 2:
        scaling = (("factor", float(rng.choice([2, 4, 8]))), ("max_positions", 1 << 20), ("rope_type", "dynamic"))
        return Rope(theta, scaling, "any dynamic factor (within the model's context)")
    factors = _llama3(
        float(rng.choice([2, 4, 8, 16, 32])),
        float(rng.choice([1, 2])),
        float(rng.choice([4, 8])),
        rng.choice([32, 1024, 8192]),
    )
    return Rope(theta, factors, "any Llama-3 factors")


QWEN_CARD = Rope(
    1000000.0,
    (("factor", 4.0), ("original_max_position_embeddings", 32768), ("type", "yarn")),
    "Qwen2.5 with its model card's yarn for long contexts",
)


# a yarn table whose ramp reaches past the head: the correction dim of beta_slow lies past D - 1 (a context long
# against theta^2) and is clipped to it, while beta_fast's lies near 0, so every head dim from 4 up has frequencies
# on the ramp (high 91 at D 64); the drawn ones almost never clip (theta >= 100 puts it past 2 pi 10^4 beta_slow
# positions), so this one is compared in every case (after the draws: none of them moves)
YARN_CLIPPED = Rope(
    10.0,
    (("beta_fast", 512), ("factor", 4.0), ("original_max_position_embeddings", 4096), ("rope_type", "yarn")),
    "yarn with its high correction dim clipped to D - 1",
)
# a yarn ramp of zero width at every head dim (transformers widens it by 0.001): beta_fast = beta_slow, both
# correction dims just below 0 (clipped and truncated to 0), so dim 0 sits on it; the drawn betas never meet
YARN_ZERO_WIDTH = Rope(
    10000.0,
    (
        ("beta_fast", 10),
        ("beta_slow", 10),
        ("factor", 2.0),
        ("original_max_position_embeddings", 60),
        ("rope_type", "yarn"),
    ),
    "yarn with a ramp of zero width",
)

# a Llama-3 rule whose low_freq_factor is above 1, at every head dim: with an original context of 8 positions its
# slowed band holds the wavelengths past 8 / 2, its blended band those from 8 / 4 to 8 / 2, so the first pair's
# wavelength (2 pi at any theta and D) lies between 8 / low and 8: slowed by the rule, kept by one that starts the
# slowed band at the original context. The catalogue's Llama-3 models all take low_freq_factor 1 and only the
# "any Llama-3 factors" draws take 2, too rarely: such a rule passed every shipped setting's ci check (kmut9)
LLAMA3_LOW_FACTOR = Rope(500000.0, _llama3(8.0, 2.0, 4.0, 8), "Llama-3 with low_freq_factor 2")


def _draw_yarn(rng: Any) -> Rope:
    """A yarn configuration (its tables compared in every case, as the dynamic one at its context is): Qwen2.5's
    card's, or any theta with any factor (below 1 too), original context, beta values, truncation and attention
    factor, each optional field absent a third of the time or more (its default then)."""
    if rng.random() < 1 / 4:
        return QWEN_CARD
    theta = float(round(10 ** rng.uniform(2, 7)))
    scaling: dict[str, Any] = {
        "rope_type": "yarn",
        "factor": float(rng.choice([0.5, 2, 4, 8, 32])),
        "original_max_position_embeddings": rng.choice([32, 1024, 32768]),
    }
    for name, options in (
        ("beta_fast", [8, 16, 64]),
        ("beta_slow", [0.5, 2, 4]),
        ("truncate", [False, True]),
        ("attention_factor", [0.5, 1.0, 1.7]),
    ):
        if rng.random() < 0.6:
            scaling[name] = rng.choice(options)
    return Rope(theta, tuple(sorted(scaling.items())), "any yarn parameters")


def build(shape: Mapping[str, int], values: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The engine's call (q, k and v strided views of one fused projection, positions per sequence or, as
    its prefill passes them, one row expanded over the batch: a batch stride of 0), or (``layout``
    "separate", a third of the draws) q, k, v, the caches and the tables each with a stride of its own:
    q and v views of rows padded with NaN (8 and 24 after each head), k contiguous, the v cache padded
    (8), the k cache not, cos and sin rows padded (8): a kernel that takes one tensor's strides for
    another's, assumes contiguity, or reads or writes past a head shows."""
    from ..harness import guarded, padded

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
    separate = values.layout(rng.random() < 1 / 3, engine=False)
    shared = rng.random() < 0.5  # one row of positions expanded over the batch (the engine's prefill)
    if separate:
        q, k, v = values((batch, S, hq, D)), values((batch, S, hkv, D)), values((batch, S, hkv, D))
        q, v = padded(q, 8, dev), padded(v, 24, dev)
    else:
        qkv = values((batch, S, hq + 2 * hkv, D))  # q, k and v are strided views of a fused projection
        q, k, v = qkv[:, :, :hq], qkv[:, :, hq : hq + hkv], qkv[:, :, hq + hkv :]
    # the engine's tables for a cache of some capacity: as long as the positions need, or long past a
    # Llama-3 original context (where its scaling matters)
    rope = _draw_rope(rng)
    rows = rng.choice([positions_max, positions_max + 8192])
    gen = torch.Generator().manual_seed(rng.randrange(2**31))
    sequences = 1 if shared else batch
    if cached:  # distinct positions per sequence, as the engine's: a run of S from a random start
        room = positions_max - S
        starts = torch.tensor([[rng.choice([0, room, rng.randint(0, room)])] for _ in range(sequences)])
        pos = starts + torch.arange(S)[None, :]
    else:
        pos = torch.randint(0, positions_max, (sequences, S), generator=gen)
    if shared:  # row 0 expanded (on the device: a copy there would not keep the stride of 0); the rows under
        # it hold other positions, which a kernel reads if it takes the positions for a contiguous [B, S] tensor
        pos = torch.cat([pos, (positions_max - 1 - pos).expand(batch - 1, S)]).to(dev)[:1].expand(batch, S)
    else:
        pos = pos.to(dev)
    if rows == positions_max:  # as long as the positions need: the table's last row is the last position drawn (the
        # engine's table at a context its generation reaches), so a read past a position's row of cos or sin (a
        # half short of its power-of-two block read one lane long) leaves the table in half the examples; the draws
        # ended it there only where a cache's run was drawn to end at its capacity, which the first entries'
        # examples held too rarely (rotary.cos-mask-inclusive was caught at a late shipped entry only)
        rows = int(pos.max()) + 1
    cos, sin = rope_cache(D, rope.theta, rows, rope.rope_scaling)
    args = {
        "q": q,
        "k": k,
        "cos": padded(cos, 8 if separate else 0, dev),
        "sin": padded(sin, 8 if separate else 0, dev),
        "positions": pos,
    }
    if cached:  # caches hold NaN where nothing is written: a store to the wrong row shows
        nan = torch.full((batch, positions_max, hkv, D), math.nan, dtype=values.dtype)
        args.update(v=v, k_cache=guarded(nan, dev), v_cache=padded(nan, 8 if separate else 0, dev))
    # drawn last, so that every earlier draw is what it was before yarn was checked
    yarn = _draw_yarn(rng)
    # a quarter of the checks rotate in place (the launcher's ``inplace``: q, and k without a cache, written where
    # they lie and returned); drawn after yarn, so that every earlier draw is what it was before
    inplace = values.layout(rng.random() < 0.25, engine=False)
    if inplace:
        args["inplace"] = True
    note = {"batch": batch, "q_heads": hq, "kv_heads": hkv, "cache": cached, "rope": rope, "table_rows": rows}
    note["yarn"] = yarn
    note["inplace"] = inplace
    return args, {**note, "layout": "separate" if separate else "fused", "positions": "expanded" if shared else "own"}


def _drawn(case: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """q and k as drawn (a run in place rotates the case's own: the next run and the references start from these)."""
    return case.once("q, k drawn", lambda: (case.args["q"].clone(), case.args["k"].clone()))


def reset(case: Any) -> None:
    if case.args.get("inplace"):
        q, k = _drawn(case)
        case.args["q"].copy_(q)  # rotated in place by an earlier run on this case: start from the draw
        case.args["k"].copy_(k)
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


def _tables(case: Any) -> list[tuple[Any, Any, Any, str]]:
    """The engine's cos and sin tables against the reference's float64 derivation of the same configuration; and,
    for every case whatever rope it drew, the table of the same length and theta under dynamic scaling with the
    model's context exactly that long (the engine's cache capacity may be the whole context: the longest table
    that rule allows, which must be made, not refused; the draws of the dynamic rule itself are too rare to rely on:
    the ci profile's derandomized seeds drew none in 125 examples); a linear table of that theta over a partial
    rotary factor's D - 1 dims (``rotary_dim``, which config.json keeps and no draw holds); and a drawn yarn
    configuration's table of that length (``_draw_yarn``), ``YARN_CLIPPED``'s and ``YARN_ZERO_WIDTH``'s (a ramp
    clipped at D - 1, a ramp of zero width: the draws almost never reach either), and ``LLAMA3_LOW_FACTOR``'s (a
    Llama-3 low_freq_factor above 1, which no catalogue model has)."""
    a, rope, yarn = case.args, case.note["rope"], case.note["yarn"]

    def compare() -> list[tuple[Any, Any, Any, str]]:
        rows, half = a["cos"].shape
        # compared on the CPU, where rope_cache makes them and the reference's are: exact copies of the engine's two,
        # and no wait for a GPU that a dozen other checks share (fourteen comparisons an example)
        on = torch.device("cpu")
        at_context = {"rope_type": "dynamic", "factor": 2.0, "max_positions": rows}
        # a partial rotary factor's table (config.json keeps rotary_dim = D - 1 for the llama3, linear and dynamic
        # rules): frequencies over D - 1 dims; the draws hold none
        partial = {"rope_type": "linear", "factor": 2.0, "rotary_dim": 2 * half - 1}
        pairs = []
        for theta, scaling, engine, label in (
            (rope.theta, rope.rope_scaling, (a["cos"], a["sin"]), str(rope)),
            (
                rope.theta,
                at_context,
                rope_cache(2 * half, rope.theta, rows, at_context),
                f"theta {rope.theta:g}, dynamic at its context",
            ),
            (
                rope.theta,
                partial,
                rope_cache(2 * half, rope.theta, rows, partial),
                f"theta {rope.theta:g}, linear factor 2 over rotary_dim {2 * half - 1}",
            ),
            (yarn.theta, yarn.rope_scaling, rope_cache(2 * half, yarn.theta, rows, yarn.rope_scaling), str(yarn)),
            *(
                (
                    fixed.theta,
                    fixed.rope_scaling,
                    rope_cache(2 * half, fixed.theta, rows, fixed.rope_scaling),
                    str(fixed),
                )
                for fixed in (YARN_CLIPPED, YARN_ZERO_WIDTH, LLAMA3_LOW_FACTOR)
            ),
        ):
            tables = reference.rope_frequencies(2 * half, theta, rows, scaling)  # made on the CPU
            angle = torch.arange(rows, dtype=torch.float64)[:, None] * tables.inv_freq[None, :]
            pairs += [
                (
                    got.to(on),
                    table.to(on),
                    bounds.rope_table(table, angle=angle, scaling=scaling, theta=theta).to(on),
                    f"rope_cache's {name} table ({label})",
                )
                for name, got, table in (("cos", engine[0], tables.cos), ("sin", engine[1], tables.sin))
            ]
        return pairs

    return case.once("rope tables", compare)


def judge(case: Any, outputs: tuple[Any, ...], config: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    a = case.args
    pairs: list[tuple[Any, ...]] = list(_tables(case))
    inplace = bool(a.get("inplace"))
    drawn = _drawn(case) if inplace else (a["q"], a["k"])
    if inplace:  # q, and k without a cache, must be rotated where they lie and be what the launcher returns
        returned = [(outputs[0], a["q"], "q")] + ([] if a.get("k_cache") is not None else [(outputs[1], a["k"], "k")])
        for out, own, name in returned:
            if out.data_ptr() != own.data_ptr() or out.stride() != own.stride():
                raise Refused(f"rotary with inplace=True returned a tensor other than {name} itself")
    for n, (out, x) in enumerate(zip(outputs, drawn)):
        ref = case.once(("rotary", n), lambda x=x: reference.rotary(x, a["cos"], a["sin"], a["positions"]))
        bound = case.once(
            ("rotary bound", n), lambda x=x, ref=ref: bounds.rotary(x, a["cos"], a["sin"], a["positions"], ref)
        )
        label = "q rotated" if n == 0 else "k rotated"
        if n == 1 and a.get("k_cache") is not None:
            out, stray = _cache_rows(out, a["positions"])
            v_rows, v_stray = _cache_rows(a["v_cache"], a["positions"])
            pairs.append((v_rows, a["v"].double(), torch.zeros_like(ref), "v in the cache"))  # copied exactly
            if stray or v_stray:
                raise Refused("rotary wrote a KV-cache row that is not one of its positions")
            label = "k rotated in the cache"
        pairs.append((out, ref, bound, label))
    return pairs


def small(config: Mapping[str, Any]) -> Small:
    """q heads and kv heads each across two BLOCK_H blocks with a tail (H = q + kv heads); head dims up to
    128 (halves padded to a power of two); a few tokens, in batches."""
    block_h = int(config["BLOCK_H"])
    return Small({"T": (1, 12), "H": (2, 4 * block_h + 2), "D": (2, 128)}, {"H": (block_h, 2 * block_h)}, {"D": 2})


RECORDS = (
    Record(
        "rotary",
        build,
        judge,
        bound="conformance.bounds.rotary; rope tables: conformance.bounds.rope_table",
        caps={"T": 24, "H": 12, "D": 128},
        sweep={"T": (1, 192), "H": (2, 40), "D": (2, 128)},
        small=small,
        multiple_of={"D": 2},
        lowest={"H": 2, "D": 2},
        reset=reset,
    ),
)
