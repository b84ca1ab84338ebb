"""greedy_pick: the greedy token of each row of logits [B, V], written into ``tokens`` [B, 1], and each row's
position and cache length (``state`` [2, B]) moved on by one: the end of a greedy decode step, in one launch.

The token is the first index of the row's largest value, exactly as ``torch.argmax`` picks it (a NaN counts as
larger than every number: the first NaN's index). Key (SPECS below): B = rows (powers of two), V = vocabulary
(exact). (ceil(V / BLOCK_V), B) programs: each takes BLOCK_V logits of a row and stores its part's pick (the
value, NaN where the part holds one, and its first index); the row's last program to arrive, counted as
linear's MERGE "last" counts, picks the first part holding the row's pick, writes the token, moves the row's
state on and resets the counter for the next launch (a CUDA graph replays it).

Measured on the H200 (benchmarks/proto_pick_step.py, benchmarks/results/2026-12-04): the engine's step ended with
PyTorch's pick (2-3 kernels) and ``state.add_(1)``, none launched early under programmatic dependent launch;
this kernel made the step 1.3 % faster on Llama-3.2-1B at batch 1, 0.8-1.2 % on the other small shapes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import torch
import triton
import triton.language as tl

from ..errors import InvalidInputError
from ._common import check_contiguous_last, check_device, check_shape, dependent_launch, dtype_name, grid, split
from .linear import Counters, tile_counters
from .spec import Call, OpSpec


@triton.jit
def _greedy_pick_kernel(
    # pointers
    logits_ptr, tokens_ptr, state_ptr, part_ptr, counter_ptr,
    # dimensions
    B, V,
    # strides (rows; the last dimension of logits is contiguous)
    stride_logits, stride_tokens, stride_state,
    # meta-parameters
    BLOCK_V: tl.constexpr, PARTS: tl.constexpr,
    PDL: tl.constexpr,
):
    dependent_launch(PDL)
    part = tl.program_id(0)
    row = tl.program_id(1).to(tl.int64)
    parts = tl.num_programs(0)
    offs = part * BLOCK_V + tl.arange(0, BLOCK_V)
    inside = offs < V
    x = tl.load(logits_ptr + row * stride_logits + offs, mask=inside, other=float("-inf")).to(tl.float32)
    nan = x != x
    first_nan = tl.min(tl.where(nan, offs, V), axis=0)
    largest = tl.max(tl.where(nan, float("-inf"), x), axis=0)
    first_largest = tl.min(tl.where(inside & (x == largest), offs, V), axis=0)
    has_nan = first_nan < V
    # the part's pick: its value (NaN where the part holds one) and its index, as a float32 (exact below 2^24)
    picks = part_ptr + row * 2 * parts
    tl.store(picks + part, tl.where(has_nan, float("nan"), largest))
    tl.store(picks + parts + part, tl.where(has_nan, first_nan, first_largest).to(tl.float32))
    tl.debug_barrier()  # every thread of this program has stored its share before the arrival counts
    arrived = tl.atomic_add(counter_ptr + row, 1, sem="acq_rel", scope="gpu")
    if arrived == parts - 1:  # the row's last part to arrive: the first part holding the row's pick
        p = tl.arange(0, PARTS)
        held = p < parts
        v = tl.load(picks + p, mask=held, other=float("-inf"), cache_modifier=".cg")
        i = tl.load(picks + parts + p, mask=held, other=V, cache_modifier=".cg").to(tl.int32)
        part_nan = v != v
        nan_index = tl.min(tl.where(part_nan, i, V), axis=0)  # parts in order: the row's first NaN
        best = tl.max(tl.where(part_nan, float("-inf"), v), axis=0)
        best_index = tl.min(tl.where(held & ~part_nan & (v == best), i, V), axis=0)
        token = tl.where(nan_index < V, nan_index, best_index)
        tl.store(tokens_ptr + row * stride_tokens, token.to(tokens_ptr.dtype.element_ty))
        tl.store(state_ptr + row, tl.load(state_ptr + row) + 1)  # the position
        tl.store(state_ptr + stride_state + row, tl.load(state_ptr + stride_state + row) + 1)  # the length
        tl.atomic_xchg(counter_ptr + row, 0, sem="relaxed", scope="gpu")


PARAMS = ("BLOCK_V",)  # the meta-parameters of a setting
MAX_VOCAB = 1 << 24  # a part's index travels as a float32: exact below 2^24


def _check(logits: torch.Tensor, tokens: torch.Tensor, state: torch.Tensor) -> str:
    check_shape("greedy_pick", "logits", logits, (None, None), "rows, vocabulary")
    B, V = logits.shape
    check_shape("greedy_pick", "tokens", tokens, (B, 1), "rows of logits, 1")
    check_shape("greedy_pick", "state", state, (2, B), "position and cache length, rows of logits")
    for name, t in (("tokens", tokens), ("state", state)):
        if t.dtype != torch.int64:
            raise InvalidInputError(f"greedy_pick: {name} must be int64, got {t.dtype}")
    if not 1 <= V <= MAX_VOCAB:
        raise InvalidInputError(f"greedy_pick: logits rows must hold 1 to {MAX_VOCAB} values, got {V}")
    return dtype_name("greedy_pick", "logits", logits)


def key_of(logits: torch.Tensor, tokens: torch.Tensor, state: torch.Tensor) -> Call:
    """(dtype, (B, V)) of a call."""
    return _check(logits, tokens, state), (logits.shape[0], logits.shape[1])


def greedy_pick(logits: torch.Tensor, tokens: torch.Tensor, state: torch.Tensor, *, config: Mapping[str, Any],
                empty: Callable[..., torch.Tensor] = torch.empty, pdl: bool = False, counters: Counters | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """Write each row's greedy token into ``tokens`` and add one to ``state`` on the Triton kernel with the
    certified setting ``config``; returns (tokens, state). ``empty`` allocates the parts' picks; ``counters``:
    whose arrival counters (``neurobrix.ops.linear.tile_counters``)."""
    _check(logits, tokens, state)
    check_device("greedy_pick", logits=logits, tokens=tokens, state=state)
    check_contiguous_last("greedy_pick", logits=logits, state=state)
    B, V = logits.shape
    meta, launch = split("greedy_pick", config, PARAMS, pdl)
    parts = triton.cdiv(V, meta["BLOCK_V"])
    picks = empty((B, 2, parts), dtype=torch.float32, device=logits.device)
    # linear's counters: zero between launches, each row's last part resets its own
    held = tile_counters(logits.device, B, counters)
    _greedy_pick_kernel[(parts, B)](logits, tokens, state, picks, held, B, V, logits.stride(0), tokens.stride(0),
                                    state.stride(0), PARTS=triton.next_power_of_2(parts), **meta, **launch)
    return tokens, state


# a row of 65,536 to 131,072 logits is where PyTorch's argmax reduces in one thread block (fewer than 256
# values a thread over 512 threads: it spreads a longer row over several blocks) and takes long: pick_rows
# splits it in two passes there
TWO_PASS_PICK = (65_536, 131_072)


@functools.lru_cache(maxsize=16)
def _pick_split(vocab: int) -> int:
    """Parts for ``pick_rows``' first pass: within ``TWO_PASS_PICK``, the largest divisor of ``vocab`` up
    to 1,024 leaving parts of at least 128 logits; else 1 (one pass), or when there is none."""
    if not TWO_PASS_PICK[0] <= vocab < TWO_PASS_PICK[1]:
        return 1
    return max((c for c in range(1, 1025) if vocab % c == 0 and vocab // c >= 128), default=1)


def pick_rows(logits: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """The greedy token of each row of logits [B, vocab] -> [B, 1] (int64, into ``out`` when given): the
    first index of the row's largest value, exactly as ``logits.argmax(dim=-1)``.

    Within ``TWO_PASS_PICK`` in two passes (the largest value and its first index in each of C equal parts of
    the row, then the first part holding the largest of those). On the H200 (benchmarks/proto_pick.py,
    benchmarks/results/2026-12-02e), us a pick at batch 1, one pass / two: 32,000 logits 8.5 / 9.0 (the best
    split), 128,256 logits 26.4 / 9.3, 151,936 8.6 / 9.5, 152,064 8.4 / 9.4."""
    B, vocab = logits.shape
    parts = _pick_split(vocab)
    if parts == 1:
        return torch.argmax(logits, dim=-1, keepdim=True, out=out)
    best, where = logits.view(B, parts, vocab // parts).max(dim=-1)  # [B, parts]: the first index of each max
    part = best.argmax(dim=-1, keepdim=True)  # [B, 1]: the first part holding the row's max
    return torch.add(where.gather(-1, part), part, alpha=vocab // parts, out=out)


def greedy_pick_torch(logits: torch.Tensor, tokens: torch.Tensor, state: torch.Tensor
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """The same op on PyTorch's kernels (``pick_rows``, then ``state + 1``)."""
    _check(logits, tokens, state)
    pick_rows(logits, out=tokens)
    state.add_(1)
    return tokens, state


def outputs(logits: torch.Tensor, tokens: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return tokens.new_empty(tokens.shape), state.new_empty(state.shape)


def candidates(domain: Mapping[str, tuple[int, int | None]], interpreter: bool) -> list[dict[str, Any]]:
    if interpreter:
        return [{"BLOCK_V": v, "num_warps": 4} for v in (64, 256)]
    return list(grid(BLOCK_V=[1024, 2048, 4096, 8192], num_warps=[4, 8]))


SPECS = (
    OpSpec("greedy_pick", "each logits row's greedy token into tokens, the rows' position and length moved on by "
           "one; V = vocabulary", key=("B", "V"), buckets=("pow2", "exact"), key_of=key_of, launch=greedy_pick,
           torch=greedy_pick_torch, outputs=outputs, candidates=candidates, params={None: (PARAMS, ())},
           counters=True),
)
