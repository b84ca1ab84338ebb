"""greedy_pick's conformance record: each row's greedy token, and the rows' state moved on by one.

The op computes nothing that rounds: its token must be the reference's exactly (a bound of 0), and so must the
state. What a wrong pick gets wrong is an order or an edge, so the draws aim there: the row's largest value
repeated at a later index (often in another part of the row), or one ulp of the logits' dtype above it there (a
pick that compares values at any lower precision, e.g. a part's value kept in fp16 for fp32 logits, takes the
earlier one), NaN and infinities, a row of -inf only, the row's largest value in its last element, and rows read
through a padded view."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from .. import reference
from . import Record, Small

SPECIALS = ("none", "tie", "near tie", "nan", "inf", "-inf row", "last")
UNTOUCHED = -2  # what the wide buffers of tokens and state hold beside the views the op is given
PAST_INT16 = 1 << 15  # a vocabulary past it puts each row's token past int16's range (``build``, ``EDGES``)
# the shape checked first in every entry that holds it: two rows of 32,770 logits, their tokens past 2^15 (a token
# narrowed to int16 wraps there; about 2 s on the interpreter at BLOCK_V 256)
EDGES = ({"B": 2, "V": PAST_INT16 + 2},)


def build(shape: Mapping[str, int], values: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    from ..harness import padded

    B, V = shape["B"], shape["V"]
    rng = values.rng
    logits = values((B, V)).double()
    # past int16's range (Llama-3's 128,256 logits) every row's token but a row of -inf's lies past index 2^15: its
    # largest value raised by 1 (unique in any dtype) there, and the specials' NaN and infinities placed there too
    lowest = PAST_INT16 if V > PAST_INT16 and not values.timing else 0
    if lowest:
        for row in range(B):
            logits[row, rng.randrange(lowest, V)] = logits[row].max() + 1
    up = _one_ulp_up(logits.to(values.dtype)).double()
    specials = []
    for row in range(B):
        special = "none" if values.timing else rng.choice(SPECIALS)
        specials.append(special)
        at = rng.randrange(lowest, V)
        if special == "tie":  # the largest value again at a later index: the first one is the token
            first = int(logits[row].argmax())
            logits[row, rng.randrange(first, V)] = logits[row, first]
        elif special == "near tie":  # one ulp of the dtype above the largest value, later: the later one is the token
            first = int(logits[row].argmax())
            logits[row, rng.randrange(first, V)] = up[row, first]
        elif special == "nan":  # two NaN: the first one's index is the token
            logits[row, at] = math.nan
            logits[row, rng.randrange(at, V)] = math.nan
        elif special == "inf":  # +inf twice and -inf: the first +inf
            logits[row, rng.randrange(V)] = -math.inf
            logits[row, at] = math.inf
            logits[row, rng.randrange(at, V)] = math.inf
        elif special == "-inf row":  # every value -inf: index 0
            logits[row] = -math.inf
        elif special == "last":  # the largest value in the row's last element (the last part's tail)
            logits[row, V - 1] = logits[row].abs().max() + 1
    pad = values.layout(rng.choice([0, 8]), engine=0)
    drawn = torch.tensor([[rng.randrange(1 << 20) for _ in range(B)] for _ in range(2)], device=values.device)
    # the kernel takes the tokens' and the state's row strides: half the time views into wider buffers (tokens a
    # column of [B, 3], the state the first B columns of [2, B + 5]), whose other elements must stay untouched
    wide = rng.random() < 0.5
    if wide:
        tokens = torch.full((B, 3), UNTOUCHED, dtype=torch.int64, device=values.device)[:, 1:2].fill_(-1)
        state = torch.full((2, B + 5), UNTOUCHED, dtype=torch.int64, device=values.device)[:, :B].copy_(drawn)
    else:
        tokens = torch.full((B, 1), -1, dtype=torch.int64, device=values.device)
        state = drawn
    args = {"logits": padded(logits.to(values.dtype), pad, values.device), "tokens": tokens, "state": state}
    return args, {"rows": specials, "logits row padding": pad, "tokens and state": "views" if wide else "own"}


def _one_ulp_up(t: torch.Tensor) -> torch.Tensor:
    """The next value of ``t``'s dtype above each element of ``t`` (finite, not NaN), exactly; above 0 the least
    normal number (a subnormal one a GPU may flush to 0)."""
    bits = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32}[t.dtype]
    raw = t.view(bits)
    step = torch.where(t > 0, raw + 1, raw - 1)  # away from zero above it, toward zero below it
    return torch.where(t == 0, torch.finfo(t.dtype).tiny, step.view(t.dtype))


def reset(case: Any) -> None:
    """Each run starts from the drawn state (the op adds one to it) and tokens of -1 (none a row's token)."""
    before = case.once("state drawn", lambda: case.args["state"].clone())
    case.args["state"].copy_(before)
    case.args["tokens"].fill_(-1)


def judge(case: Any, outputs: tuple[Any, ...], config: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    logits = case.args["logits"]
    ref = case.once("greedy_pick", lambda: reference.greedy_pick(logits).double()[:, None])
    state = case.once("state drawn", lambda: case.args["state"].clone()).double() + 1
    tokens, moved = (out.double().cpu() for out in outputs)
    judged = [
        (tokens, ref, torch.zeros_like(ref), "tokens (exact)"),
        (moved, state.cpu(), torch.zeros_like(state.cpu()), "state moved on by one (exact)"),
    ]
    for name in ("tokens", "state"):  # a view's wider buffer: every element beside the view as drawn
        arg = case.args[name]
        if not arg.is_contiguous():
            beside = _beside(arg).double().cpu()
            judged.append((beside, torch.full_like(beside, UNTOUCHED), torch.zeros_like(beside), f"{name}' buffer"))
    return judged


def _beside(view: Any) -> Any:
    """The elements of ``view``'s storage, from its first element to its last, that are not ``view``'s."""
    span = view.storage_offset() + (view.shape[0] - 1) * view.stride(0) + view.shape[1] * view.stride(1)
    flat = torch.as_strided(view, (span - view.storage_offset(),), (1,))
    mine = torch.zeros(flat.shape, dtype=torch.bool, device=view.device)
    rows = torch.arange(view.shape[0], device=view.device)[:, None] * view.stride(0)
    mine[(rows + torch.arange(view.shape[1], device=view.device)[None, :] * view.stride(1)).reshape(-1)] = True
    return flat[~mine]


def small(config: Mapping[str, Any]) -> Small:
    """A vocabulary across two BLOCK_V parts with a tail, a few rows."""
    block = int(config["BLOCK_V"])
    return Small({"B": (1, 3), "V": (1, 2 * block + 1)}, {"V": (block,)})


RECORDS = (
    Record(
        "greedy_pick",
        build,
        judge,
        bound="exact: the first index of each row's largest value (NaN largest), the state plus one",
        caps={"B": 8, "V": 1200},
        sweep={"B": (1, 64), "V": (1, 152064)},
        small=small,
        reset=reset,
        edges=EDGES,
    ),
)
