"""The attention records: causal GQA prefill over views of larger NaN-tailed caches, a prefill chunk over
the cache written so far (the same NaN tail past its keys), and decode over caches NaN past each
sequence's length (reading past a length shows as NaN); the k and v caches of a draw sometimes each a view
of NaN-padded heads (``_caches``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from .. import bounds, reference
from . import Record, Small


def _scale(rng: Any, D: int) -> float:
    """The softmax scale of a call: the engine's 1/sqrt(D), and others (a kernel that ignores its ``scale``
    argument for the usual value would pass on that one alone)."""
    return float(rng.choice([1 / math.sqrt(D), 1 / D, 2 / math.sqrt(D)]))


def _head_padding(values: Any, D: int, pad: int) -> int:
    """NaN elements after each head of a tensor: 0 or ``pad``, drawn; always ``pad`` when the head dim is not a
    power of two. The kernels load a head as a block of the next power of two, masked to D; a load that
    drops the mask (or keeps the wrong one) reads past the head's end, and past a contiguous head lies the
    next head's or position's finite data, so only NaN padding after every head shows it (0 times NaN is
    NaN): drawn at half the draws only, the check's few examples at such a D missed it. Timing: none (the
    engine's caches and heads are contiguous)."""
    drawn = values.rng.choice([0, pad])
    return values.layout(drawn if D & (D - 1) == 0 else pad, engine=0)


def _caches(values: Any, shape: tuple[int, int, int, int]) -> tuple[Any, Any, tuple[int, int]]:
    """The k and v caches: as the engine allocates them (two tensors of one layout), or each a view of heads
    padded with NaN (k by 0 or 8, v by 0 or 16, drawn apart; both padded when D is not a power of two,
    ``_head_padding``): then the two have different strides, and a load past the head dim reads NaN.
    Returns (k, v, (k's padding, v's))."""
    from ..harness import padded

    D = shape[-1]
    pad_k, pad_v = _head_padding(values, D, 8), _head_padding(values, D, 16)
    k = padded(values(shape), pad_k, values.device)
    v = padded(values(shape), pad_v, values.device)
    return k, v, (pad_k, pad_v)


def build_prefill(shape: Mapping[str, int], values: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The engine's prefill call: a chunk of S queries over its own S keys (``build_chunk`` with C = S)."""
    return build_chunk({"C": shape["S"], **shape}, values)


def build_chunk(shape: Mapping[str, int], values: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A later chunk of a chunked prefill: C queries (a strided view of a fused projection) over the first
    S positions of caches of a larger capacity, NaN past S (reading past the chunk shows). A draw with
    S < C (only on unbounded domains: the engine's keys include the chunk) is taken at S = C. Long
    rows (C x S above 2^22) take one sequence and one kv head: the float64 truth is per (query, key)."""
    rng = values.rng
    C, D, G = shape["C"], shape["D"], shape["G"]
    S = max(shape["S"], C)
    small = C * S <= 1 << 22
    batch, hkv = (rng.choice([1, 2]), rng.choice([1, 2])) if small else (1, 1)
    hq = G * hkv
    qkv = values((batch, C, hq + 2 * hkv, D))
    capacity = S + rng.choice([0, 1, C])
    k_cache, v_cache, pads = _caches(values, (batch, capacity, hkv, D))
    k_cache[:, S:] = math.nan
    v_cache[:, S:] = math.nan
    args = {"k": k_cache[:, :S], "v": v_cache[:, :S], "scale": _scale(rng, D)}
    q, pad_q = _projection(values, qkv, hq)
    note = {"batch": batch, "kv_heads": hkv, "keys": S, "capacity": capacity}
    # drawn last (every earlier draw stays as it was): a quarter of the draws put every key the chunk's first query
    # sees far below it, in each sequence and kv head (that head's first query head): ``_far_below``
    if values.layout(rng.random() < 1 / 4, engine=False):
        placed = sum(
            _far_below(q[b, 0, h * G], args["k"][b, : S - C + 1, h], args["scale"])
            for b in range(batch)
            for h in range(hkv)
        )
        note["far below"] = f"{placed} rows"
    return {"q": q, **args}, {**note, "head padding": pads, "q head padding": pad_q}


def _projection(values: Any, qkv: Any, hq: int) -> tuple[Any, int]:
    """q as the first hq heads of a fused projection qkv [..., heads, D], as the engine passes it, or (half of
    the draws, drawn last so that every other input stays as drawn; every draw when D is not a power of two,
    ``_head_padding``) of that projection's heads padded with 8 NaN: q's head stride is then not D (nor its
    batch stride a contiguous tensor's) and a load past the head dim reads NaN. Returns (q, the padding)."""
    from ..harness import padded

    pad = _head_padding(values, qkv.shape[-1], 8)
    if values.timing:  # the engine's attention reads rotary's output, a tensor of its own
        return qkv[..., :hq, :].contiguous(), 0
    return padded(qkv, pad, values.device)[..., :hq, :], pad


def judge_chunk(case: Any, outputs: tuple[Any, ...], config: Mapping[str, Any]) -> list[tuple[Any, Any, Any]]:
    """Prefill and chunk alike: float64 attention of C queries over S keys (C = S for a prefill), under the
    bound of the kernel's key blocks."""
    a = case.args
    ref = case.once("attention", lambda: reference.attention_chunk(a["q"], a["k"], a["v"], a["scale"]))
    block = int(config["BLOCK_N"])
    bound = case.once(
        ("bound", block), lambda: bounds.attention_chunk(a["q"], a["k"], a["v"], a["scale"], ref, key_block=block)
    )
    pairs: list[tuple[Any, ...]] = [(outputs[0], ref, bound)]
    C, S = a["q"].shape[1], a["k"].shape[1]
    if C == S:  # the first query sees key 0 alone: its output is that key's value (``bounds.attention_one_key``)
        group = a["q"].shape[2] // a["v"].shape[2]
        first = a["v"][:, :1].double().repeat_interleave(group, dim=2)
        blocks = -(-min(int(config["BLOCK_M"]), S) // block)  # the diagonal blocks the first query passes
        one = case.once(("one key", blocks), lambda: bounds.attention_one_key(first, a["q"].dtype, blocks))
        pairs.append((outputs[0][:, :1], first, one, "the first query (one key: its value)"))
    return pairs


judge_prefill = judge_chunk


def build_decode(shape: Mapping[str, int], values: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    from ..harness import padded

    rng, dev = values.rng, values.device
    B, S, D, G = shape["B"], shape["S"], shape["D"], shape["G"]
    hkv = rng.choice([1, 2])
    lengths = [rng.choice([1, S, rng.randint(1, S)]) for _ in range(B)]
    k_cache, v_cache, pads = _caches(values, (B, S, hkv, D))
    for b, n in enumerate(lengths):  # the unfilled cache holds NaN: reading past the length shows
        k_cache[b, n:] = math.nan
        v_cache[b, n:] = math.nan
    args = {
        "q": values((B, G * hkv, D)),
        "k_cache": k_cache,
        "v_cache": v_cache,
        "lengths": torch.tensor(lengths, dtype=torch.int32, device=dev),
        "scale": _scale(rng, D),
    }
    # q as the engine's decode passes it, a view of the fused projection's heads (k's and v's after q's), or
    # those heads padded: q's batch and head strides then differ from a contiguous [B, Hq, D] tensor's; q of
    # its own, when D is not a power of two, a view of heads padded with 8 NaN (``_head_padding``)
    fused = values.layout(rng.random() < 0.5, engine=False)  # the engine's q: rotary's output, its own tensor
    pad_q = 0
    if fused:
        args["q"], pad_q = _projection(values, torch.cat([args["q"], values((B, 2 * hkv, D))], dim=1), G * hkv)
    elif D & (D - 1) and not values.timing:
        pad_q = 8
        args["q"] = padded(args["q"], pad_q, dev)
    # the lengths as the engine's decode step hands them, row 1 of its int64 state [2, B] (positions, then lengths:
    # neurobrix.generate, which greedy_pick moves on), or an int32 tensor of their own: Triton compiles a kernel per
    # argument dtype, so each is another binary, and a proof runs the engine's (timing: the engine's alone)
    if values.layout(rng.random() < 0.5, engine=True):
        state = torch.zeros((2, B), dtype=torch.int64, device=dev)
        state[1].copy_(args["lengths"])
        args["lengths"] = state[1]
    shown = lengths if B <= 4 else f"{min(lengths)}..{max(lengths)}"
    layout = f"fused, padded {pad_q}" if fused else f"own, padded {pad_q}" if pad_q else "own"
    note = {"kv_heads": hkv, "lengths": shown, "lengths dtype": str(args["lengths"].dtype).removeprefix("torch.")}
    # drawn last (every earlier draw stays as it was): a quarter of the draws give each sequence's last key, in a
    # later split than the first key's once the sequence is long, a score 100 above every other of its group's
    # first query head: split maxima 144 apart in log2 units, past exp2's range (a merge that weighs the splits
    # against the first split's max, not the largest, overflows); the drawn values alone seldom reach it
    if rng.random() < 1 / 4:
        note["late key"] = _late_key(args, lengths, hkv, G)
    # drawn after it: a quarter of the draws put every filled key of each sequence and kv head far below that head's
    # first query head (``_far_below``)
    if values.layout(rng.random() < 1 / 4, engine=False):
        placed = sum(
            _far_below(args["q"][b, h * G], args["k_cache"][b, :n, h], args["scale"])
            for b, n in enumerate(lengths)
            for h in range(hkv)
        )
        note["far below"] = f"{placed} rows"
    return args, {**note, "head padding": pads, "q": layout}


FAR_BELOW = 8192.0  # natural units: 11,819 in the kernels' log2 units, past a finite mask or start of -1e4


def _far_below(q: Any, keys: Any, scale: float) -> bool:
    """Make every score of the query ``q`` [D] over ``keys`` [n, D] (views, written in place) at most -FAR_BELOW:
    q scaled by a power of two to a norm of about sqrt(FAR_BELOW / scale), then each key moved by the same multiple
    of q (scores at most -FAR_BELOW, spread as they were drawn). The softmax is the same function of the score
    differences, but a kernel that masks with a finite score or starts its running max at a finite value (-1e4,
    as fp16 kernels write it) sees that value above every real score: hidden keys take the weight, or every weight
    underflows (0 / 0). The drawn values (exponents to 2^4) keep every row's largest score within a few thousand
    of 0. Skipped (False) where q is zero or a value would not be finite in the dtype."""
    q64, k64 = q.double(), keys.double()
    norm2 = float((q64 * q64).sum())
    if norm2 == 0.0 or keys.shape[0] == 0:
        return False
    q64 = q64 * 2.0 ** round(math.log2(math.sqrt(FAR_BELOW / scale / norm2)))
    q_new = q64.to(q.dtype)
    q64 = q_new.double()
    top = max(float((k64 @ q64).max()) * scale, 0.0)
    k_new = (k64 - q64 * ((FAR_BELOW + top) / (scale * float((q64 * q64).sum())))).to(keys.dtype)
    if not (bool(torch.isfinite(q_new).all()) and bool(torch.isfinite(k_new).all())):
        return False
    q.copy_(q_new)
    keys.copy_(k_new)
    return True


def _late_key(args: dict[str, Any], lengths: list[int], hkv: int, G: int) -> str:
    """Set k at each sequence's last position (of 2 or more) to its first query head scaled: its score 100 above
    the others' largest (and above 0). Skipped where q is zero, the key would not be finite in the dtype, or a query
    head of its group would score it beyond FAR_BELOW in magnitude (a logit whose rounding no bound holds)."""
    q, k, scale = args["q"], args["k_cache"], args["scale"]
    placed = 0
    for b, n in enumerate(lengths):
        for h in range(hkv):
            if n < 2:
                continue
            qv = q[b, h * G].double()
            norm2 = float((qv * qv).sum())
            if norm2 == 0.0:
                continue
            top = max(float((k[b, : n - 1, h].double() @ qv).max()) * scale, 0.0)
            key = (qv * ((top + 100.0) / (scale * norm2))).to(k.dtype)
            # the key is long where the first head's q is short, and the group's other query heads see it too: a
            # score as large as |q_g| |key| scale has an fp32 error no bound holds below 1 (a gpu-profile check drew
            # q_0 of norm 0.01 beside heads of norm 100: "the softmax denominator's error bound reaches 1"), so
            # the key is placed only where every head's score with it stays within FAR_BELOW, as drawn scores do
            longest = float(q[b, h * G : (h + 1) * G].double().norm(dim=-1).max())
            if longest * float(key.double().norm()) * abs(scale) > FAR_BELOW:
                continue
            if bool(torch.isfinite(key).all()):
                k[b, n - 1, h] = key
                placed += 1
    return f"{placed} placed"


def time_decode(args: dict[str, Any], index: int, count: int) -> None:
    """The ``index``-th of ``count`` timing sets: every sequence filled to (2 index + 1) / (2 count) of the cache
    capacity. A run's sequences grow together from the prompt to the capacity, so the sets together weigh the
    fills a run passes through evenly; the drawn lengths (1, full, or between, a full one in almost every batch)
    would weigh a batch's step at the capacity, where a run spends one step."""
    capacity = args["k_cache"].shape[1]
    args["lengths"].fill_(max(1, (2 * index + 1) * capacity // (2 * count)))
    for cache in (args["k_cache"], args["v_cache"]):  # positions past the drawn lengths hold NaN
        torch.nan_to_num_(cache, nan=0.0)


def judge_decode(case: Any, outputs: tuple[Any, ...], config: Mapping[str, Any]) -> list[tuple[Any, Any, Any]]:
    a = case.args
    ref = case.once(
        "attention", lambda: reference.attention_decode(a["q"], a["k_cache"], a["v_cache"], a["lengths"], a["scale"])
    )
    block, splits = int(config["BLOCK_N"]), int(config["SPLITS"])
    bound = case.once(
        ("bound", block, splits),
        lambda: bounds.attention_decode(
            a["q"], a["k_cache"], a["v_cache"], a["lengths"], a["scale"], ref, key_block=block, splits=splits
        ),
    )
    pairs: list[tuple[Any, ...]] = [(outputs[0], ref, bound)]
    alone = (a["lengths"] == 1).nonzero().flatten().tolist()  # sequences of one position: its value is the output
    if alone:
        group = a["q"].shape[1] // a["v_cache"].shape[2]
        first = a["v_cache"][alone, 0].double().repeat_interleave(group, dim=1)
        one = case.once("one key", lambda: bounds.attention_one_key(first, a["q"].dtype, 1))
        pairs.append((outputs[0][alone], first, one, "sequences of length 1 (one key: its value)"))
    return pairs


# a head dim that is a whole number of MMA steps (16) but not a power of two (Phi-3's): the flash kernel's loads drop
# their head-dim mask only where D fills its power-of-two block, and a test of "D fills it" written as D % 16 == 0
# passes every power of two; drawn among 1..128 only as one value of 128 (48, 80, 96 and 112 are no edge of a block),
# which no entry's 25 draws reached on 2026-12-05 (kmut8): every prefill and chunk setting checks it first
EVEN_NOT_POW2 = 96


def small_prefill(config: Mapping[str, Any]) -> Small:
    """Queries across two BLOCK_M blocks and keys across BLOCK_N blocks, with tails; head dims up to 128
    (the kernel pads D to a power of two); GQA groups 1 to 8."""
    block_m, block_n = int(config["BLOCK_M"]), int(config["BLOCK_N"])
    # the explicit shape: the last query block's first query sees a whole key block (S one past the larger block)
    return Small(
        {"S": (1, 2 * max(block_m, block_n) + 1), "D": (1, 128), "G": (1, 8)},
        {"S": (block_m, block_n)},
        explicit=({"S": max(block_m, block_n) + 1, "D": EVEN_NOT_POW2, "G": 2},),
    )


def small_chunk(config: Mapping[str, Any]) -> Small:
    """Chunks across two BLOCK_M blocks over keys crossing BLOCK_N blocks (whole blocks before the
    diagonal, then the diagonal's), with tails; head dims up to 128, groups 1 to 8."""
    block_m, block_n = int(config["BLOCK_M"]), int(config["BLOCK_N"])
    return Small(
        {"C": (1, 2 * block_m + 1), "S": (1, 2 * block_m + 3 * block_n + 1), "D": (1, 128), "G": (1, 8)},
        {"C": (block_m,), "S": (block_n, 2 * block_n)},
        # the explicit shape: two query blocks after a whole key block of cache
        explicit=({"C": block_m + 1, "S": block_m + block_n + 1, "D": EVEN_NOT_POW2, "G": 2},),
    )


def small_decode(config: Mapping[str, Any]) -> Small:
    """Cache capacities from one key block per split to two (SPLITS x BLOCK_N and beyond: some splits
    empty, some partial, lengths anywhere below the capacity); up to two sequences (the programs are batch x
    kv heads x SPLITS: kept few), one from 32 splits up (two kv heads, which the builder draws half the
    time, still give the program index a second value; on the interpreter 128 splits of two sequences
    and two heads cost ~10 s a call); head dims up to 128, groups 1 to 8."""
    block_n, splits = int(config["BLOCK_N"]), int(config["SPLITS"])
    batch = 2 if splits < 32 else 1
    return Small(
        {"B": (1, batch), "S": (1, (splits + 2) * block_n), "D": (1, 128), "G": (1, 8)},
        {"S": (block_n, splits * block_n)},
    )


RECORDS = (
    Record(
        "attention_prefill",
        build_prefill,
        judge_prefill,
        bound="conformance.bounds.attention_prefill (key_block = BLOCK_N)",
        caps={"S": 80, "D": 128, "G": 8},
        sweep={"S": (1, 300), "D": (16, 128), "G": (1, 8)},
        small=small_prefill,
    ),
    Record(
        "attention_chunk",
        build_chunk,
        judge_chunk,
        bound="conformance.bounds.attention_chunk (key_block = BLOCK_N)",
        caps={"C": 160, "S": 600, "D": 128, "G": 8},  # across the interpreter's key blocks of up to 256
        sweep={"C": (1, 512), "S": (1, 4096), "D": (16, 128), "G": (1, 8)},
        small=small_chunk,
    ),
    Record(
        "attention_decode",
        build_decode,
        judge_decode,
        bound="conformance.bounds.attention_decode (key_block = BLOCK_N, splits = SPLITS)",
        # groups to 20: past 16, where the block holding a kv head's query heads (at least 16) grows
        caps={"B": 4, "S": 160, "D": 128, "G": 20},
        sweep={"B": (1, 8), "S": (1, 1024), "D": (16, 128), "G": (1, 8)},
        small=small_decode,
        # the merge pads its splits to a power of two (BLOCK_S) and masks the rest: every candidate's split count
        # is a power of two, so no shipped or offered setting has a padded split (kmut22's merge plants)
        latent=({"SPLITS": 3, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2},),
        timing=time_decode,
        timing_sets=4,
        timing_note="every sequence at one length, the sets' lengths spread evenly over the cache capacity",
    ),
)
