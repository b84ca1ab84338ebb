"""`neurobrix warmup`: compile, before any run, every Triton kernel binary a model's certified plans can need.

Triton compiles a kernel on its first launch with a given *specialization* and keeps the binary in its
on-disk cache (the engine's own, ``$NEUROBRIX_HOME/triton-cache``, unless ``TRITON_CACHE_DIR`` or ``TRITON_HOME``
names another: :func:`neurobrix.stack.engine_cache`); a later launch with the same
specialization, in any process, loads it from there instead of compiling. In Triton 3.6-3.9 a binary
is keyed by the kernel's source, its constexpr meta-parameters (here: the certified setting), the
launch options (``num_warps``, ``num_stages``), and per runtime argument: a tensor's dtype and whether
its address is 16-byte aligned; an integer's type (i32 or i64 by its magnitude), whether it is 1, and
whether it is divisible by 16 (``JITFunction.run``'s binder, ``native_specialize_impl``; floats are
not specialized). So a run compiles nothing when, for each kernel call it makes, some earlier launch
had the same setting and the same of those properties. Which setting a call gets depends only on the
buckets of its prompt length and KV-cache capacity (:func:`neurobrix.plan.length_segments`); which
properties its arguments have depends on the lengths themselves: the integers a launch is given (sizes,
strides, element offsets of views such as the prompt's last row) are affine in a length, so whether each
is divisible by 16 is settled by the length's residue mod 16; whether one is 1, at the smallest lengths
(every length up to 16 is launched); i32 against i64, by its magnitude (the ends of each class).

The warmup therefore runs the model's own forward pass, the way ``generate`` runs it (its ``prefill``
and its ``Decoder``), on scratch weights (zeros, two layers: every layer after the first makes the same
calls, as the preflight's catalogue walk uses) with exactly the certified settings a run would get, for
these lengths: in every prompt-length segment, the smallest and the largest prompt of each residue
class mod 16 (and 1); in every capacity segment, a decode step at the smallest and the largest capacity
of each class; and each prompt prefilled into a cache of every class its runs can have (one already
built when one fits: the prefill's only cache-dependent integers are the cache's strides). One step of the greedy
loop (``GreedyDecoder``) launches ``greedy_pick`` besides: its arguments (the logits' rows, the tokens, the
state) are the same at every length. Only lengths a
run can have are covered: prompts shorter than the model's context, at most ``--max-tokens`` new tokens,
and lengths whose calls the class's tables certify (the rest ``run`` refuses before loading anything).
Each segment's certified settings are found by the preflight's own code (:mod:`neurobrix.plan`).

A prompt longer than one prefill pass (``neurobrix.model.prefill_chunks``) needs no more than this. Its
first pass is a prompt of 1 .. chunk tokens, with the calls, settings and specializations of that
shorter prompt, which the warmup covers as such. Every later pass has C = chunk queries over S keys, S
the prompt's length less a multiple of the chunk (a power of two, 16 | chunk): S has the prompt's residue
mod 16, and since the bucket edges of S above the chunk are multiples of it, the buckets those passes
meet are the same for every prompt of one segment (all of them from the chunk up to the prompt's own).

Ctrl-C is safe: Triton writes each binary to its cache atomically, so what was compiled stays compiled
and the next warmup only compiles the rest.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from .config import ModelConfig
from .errors import MissingEntryError, UsageError, counted, expect, expect_hooks
from .ops import PlannedCall
from .ops.spec import Config
from .plan import certified_settings, forward_calls, length_segments, resolve
from .tables import Tables

Interval = tuple[int, int]  # inclusive
DIVISOR = 16  # Triton specializes an integer argument on its divisibility by 16 (and on being 1)
LAYERS = 2  # the first layer's calls and those every later layer makes


# --- lengths: intervals and specialization classes ----------------------------------------------------


def _clip(intervals: list[Interval], lo: int, hi: int) -> list[Interval]:
    return [(max(a, lo), min(b, hi)) for a, b in intervals if max(a, lo) <= min(b, hi)]


def _intersect(left: list[Interval], right: list[Interval]) -> list[Interval]:
    return sorted((max(a, c), min(b, d)) for a, b in left for c, d in right if max(a, c) <= min(b, d))


def _merge(intervals: list[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def _inside(length: int, intervals: list[Interval]) -> bool:
    return any(a <= length <= b for a, b in intervals)


def _class_of(length: int) -> int:
    """A length's specialization class: -1 for 1, else its residue mod 16."""
    return -1 if length == 1 else length % DIVISOR


def representatives(intervals: list[Interval]) -> list[int]:
    """The smallest and the largest length of each specialization class (1 alone, then each residue mod
    16) found in ``intervals``: every integer affine in the length is then seen divisible by 16 or not,
    equal to 1 or not, and at both ends of its magnitude, as any length of the intervals would make it."""
    ends: dict[int, tuple[int, int]] = {}
    for lo, hi in intervals:
        if lo <= 1 <= hi:
            ends[-1] = (1, 1)
        first = max(lo, 2)
        for residue in range(DIVISOR):
            low = first + (residue - first) % DIVISOR
            if low > hi:
                continue
            high = hi - (hi - residue) % DIVISOR
            old = ends.get(residue, (low, high))
            ends[residue] = (min(old[0], low), max(old[1], high))
    return sorted({n for pair in ends.values() for n in pair})


def describe_lengths(intervals: list[Interval], noun: str = "") -> str:
    """The lengths ("1-20, 32"), then ``noun`` ("tokens"), singular where the one length is 1."""
    said = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in intervals) or "none"
    return f"{said} {noun[:-1] if said == '1' else noun}" if noun else said


# --- what to launch ----------------------------------------------------------------------------------


@dataclass
class WarmupPlan:
    """The lengths a run of this model can have on this class, and the passes that cover them."""

    class_id: str
    tables: Tables = field(compare=False, repr=False)
    prompts: list[Interval]  # prompt lengths a run can have (certified, within the limits)
    capacities: list[Interval]  # KV-cache capacities a run can have
    refused_prompts: list[Interval]  # within the limits, but with no certified setting: `run` refuses them
    refused_capacities: list[Interval]
    decodes: list[int] = field(default_factory=list)  # a decode step at each capacity
    prefills: dict[int, list[int]] = field(default_factory=dict)  # capacity -> prompts prefilled into it
    settings: dict[PlannedCall, Config] = field(default_factory=dict)  # every launched call's certified setting
    pdl: bool = False  # launched as a run launches them on this class (a PDL kernel is another binary)

    @property
    def passes(self) -> int:
        return len(self.decodes) + sum(len(p) for p in self.prefills.values())

    def capacities_to_build(self) -> list[int]:
        return sorted(set(self.decodes) | set(self.prefills))


def past_context(context: int, max_prompt: int | None, max_tokens: int | None) -> str | None:
    """The note for ``--max-prompt`` or ``--max-tokens`` past what a model's context of ``context`` positions lets a
    run have (a prompt of ``context - 1`` tokens, or as many new tokens after a one-token prompt): the warmup narrows
    them to the context and never widens it, as it covers only lengths a run can have, so it warms up what it does
    without them (the whole context) and said nothing of it."""
    longest = context - 1
    past = [
        (f"{flag} {value}", covered)
        for flag, value, covered in (
            ("--max-prompt", max_prompt, f"prompts of up to {counted(longest, 'token')}"),
            ("--max-tokens", max_tokens, f"up to {counted(longest, 'new token')}"),
        )
        if value is not None and value > longest
    ]
    if not past:
        return None
    return (
        f"note: {' and '.join(flag for flag, _ in past)} {'are' if len(past) > 1 else 'is'} more than the model's "
        f"context of {counted(context, 'token')} allows: {' and '.join(c for _, c in past)} are warmed up, as without "
        f"{'them' if len(past) > 1 else 'it'}"
    )


def plan_warmup(
    cfg: ModelConfig,
    tables: Tables,
    class_id: str,
    dtype: str,
    max_prompt: int | None = None,
    max_new: int | None = None,
) -> WarmupPlan:
    """Every pass the warmup makes for runs of prompts up to ``max_prompt`` tokens (default: the context
    allows) and up to ``max_new`` new tokens (default: what the context leaves), batch 1, ``dtype``, with
    each call resolved by the preflight's code. No device, no weight: calls are recorded on meta tensors."""
    context = cfg.max_positions
    top_prompt = context - 1 if max_prompt is None else min(max_prompt, context - 1)
    new = context - 1 if max_new is None else max_new
    if top_prompt < 1 or new < 1:
        raise UsageError(
            f"nothing to warm up: the model's context is {counted(context, 'token')}, --max-prompt and --max-tokens "
            "must be >= 1"
        )
    top_capacity = min(context, top_prompt + new)
    cfg2 = dataclasses.replace(cfg, num_layers=min(cfg.num_layers, LAYERS))
    resolved: dict[tuple[bool, int], dict[PlannedCall, Config] | None] = {}

    def settings(prefill: bool, length: int) -> dict[PlannedCall, Config] | None:
        """The certified settings of a prefill of ``length`` tokens (or of a decode step into a cache of
        ``length``), None when the class certifies not all of its calls."""
        if (prefill, length) not in resolved:
            seq, capacity = (length, length + 1) if prefill else (1, length)
            calls = forward_calls(cfg2, 1, seq, capacity, prefill, dtype)
            try:
                resolved[prefill, length] = dict(resolve(calls, tables, class_id).settings)
            except MissingEntryError:
                resolved[prefill, length] = None
        return resolved[prefill, length]

    def certified(prefill: bool, lo: int, hi: int) -> tuple[list[Interval], list[Interval]]:
        """(certified, refused) segments of [lo, hi], judged at each segment's representatives."""
        good: list[Interval] = []
        bad: list[Interval] = []
        for segment in length_segments(tables, class_id, lo, hi):
            ok = all(settings(prefill, n) is not None for n in representatives([segment]))
            (good if ok else bad).append(segment)
        return _merge(good), _merge(bad)

    prompts, refused_prompts = certified(True, 1, top_prompt)
    capacities, refused_capacities = certified(False, 2, top_capacity)
    # a run needs both: its prompt certified, and a certified capacity within [prompt + 1, prompt + new]
    prompts = _intersect(prompts, _merge([(max(1, a - new), b - 1) for a, b in capacities]))
    capacities = _intersect(capacities, _merge([(a + 1, min(b + new, context)) for a, b in prompts]))
    plan = WarmupPlan(
        class_id,
        tables,
        _merge(prompts),
        _merge(capacities),
        refused_prompts,
        refused_capacities,
        pdl="pdl" in tables.classes[class_id].launch,
    )
    for segment in length_segments(tables, class_id, 2, top_capacity):
        for capacity in representatives(_intersect(plan.capacities, [segment])):
            plan.decodes.append(capacity)
            plan.settings.update(settings(False, capacity) or {})
    # each prompt into a cache of every class its runs can have: one already built when the window
    # holds one (few caches are built), else the largest of that class in the window
    built = set(plan.decodes)
    for segment in length_segments(tables, class_id, 1, top_prompt):
        for prompt in representatives(_intersect(plan.prompts, [segment])):
            plan.settings.update(settings(True, prompt) or {})
            window = _clip(plan.capacities, prompt + 1, min(prompt + new, context))
            chosen: dict[int, int] = {}
            for capacity in [*representatives(window), *sorted(c for c in built if _inside(c, window))]:
                chosen[_class_of(capacity)] = capacity  # ascending, built ones last: they win
            for capacity in chosen.values():
                built.add(capacity)
                plan.prefills.setdefault(capacity, []).append(prompt)
    return plan


# --- launching -----------------------------------------------------------------------------------------


def scratch_weights(cfg: ModelConfig, dtype, device):
    """Zero weights of ``cfg``'s shapes, fused as a checkpoint's are at load time (same layout, same views)."""
    import torch

    from .model import checkpoint_shapes, fuse_weights

    shapes = checkpoint_shapes(cfg)
    return fuse_weights(
        cfg, lambda name: torch.zeros(shapes[name], dtype=dtype, device=device), set(shapes), dtype, device
    )


def launch(
    cfg: ModelConfig, plan: WarmupPlan, dtype: str, device, progress: Callable[[int, int], None] | None = None
) -> int:
    """Make every pass of ``plan`` (each kernel compiled on its first launch, from then on in Triton's
    cache); ``progress(done, total)`` after each. Returns the passes made."""
    import torch

    from .dtypes import NAMES as DTYPES
    from .dtypes import torch_dtype
    from .generate import Decoder, GreedyDecoder, prefill
    from .memory import require_fit_on
    from .model import Transformer
    from .ops import certified
    from .stack import require_runnable

    # the Python API's arguments, before anything is built: each failed far inside (an AttributeError on None, a
    # KeyError on another dtype name, a TypeError on a progress of 5 after the first pass was made)
    if not isinstance(cfg, ModelConfig) or not isinstance(plan, WarmupPlan):
        raise UsageError(
            f"launch takes a neurobrix.config.ModelConfig and a neurobrix.warmup.WarmupPlan, got "
            f"{type(cfg).__name__} and {type(plan).__name__}"
        )
    if dtype not in DTYPES:
        raise UsageError(f"launch's dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    expect_hooks("launch", progress=progress)
    try:
        device = torch.device(device)  # "cpu" as torch takes it
    except (TypeError, RuntimeError) as exc:
        raise UsageError(f"launch's device must be a torch.device or its name, got {device!r} ({exc})") from None
    require_runnable(plan.class_id, plan.tables, device)  # the plan's class is this machine's (the GPU it runs on)
    # each setting the certified one of its call (a WarmupPlan is a plain object a program may fill or change)
    settings = certified_settings(plan.settings, plan.pdl, plan.tables, plan.class_id, "this warmup plan")
    cfg2 = dataclasses.replace(cfg, num_layers=min(cfg.num_layers, LAYERS))
    # run's memory check on this plan's largest pass (its scratch weights, one KV cache at a time): refused in one line
    # (exit 5) before anything is built, where the allocator failed mid-warmup
    longest = max((p for prompts in plan.prefills.values() for p in prompts), default=1)
    require_fit_on(
        device,
        cfg2,
        torch_dtype(dtype).itemsize,
        1,
        longest,
        max(plan.capacities_to_build(), default=1),
        "this warmup",
        "--max-prompt plus --max-tokens",
    )
    weights = scratch_weights(cfg2, torch_dtype(dtype), device)
    ops = certified(settings, plan.pdl)  # on ``device`` alone, whose class was checked above: made current below
    decodes = set(plan.decodes)
    done, total, picked = 0, plan.passes, False
    # Triton launches on torch's current GPU: the one named here, for the passes (the kernels refuse another)
    on_device = torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()
    with torch.inference_mode(), on_device:
        for capacity in plan.capacities_to_build():
            model = Transformer(cfg2, weights, ops, batch=1, capacity=capacity)
            if capacity in decodes:
                Decoder(model, 1, use_graph=False).step(torch.zeros((1,), dtype=torch.long, device=device), 0)
                if not picked:  # greedy runs end each step with greedy_pick, whose arguments no length changes
                    greedy = GreedyDecoder(model, 1, use_graph=False)
                    greedy.start(torch.zeros((1,), dtype=torch.long, device=device), 0)
                    greedy.step()
                    picked = True
                    del greedy  # (it holds this model and its cache)
                done += 1
                if progress:
                    progress(done, total)
            for prompt in plan.prefills.get(capacity, []):
                prefill(model, [[0] * prompt])
                done += 1
                if progress:
                    progress(done, total)
            del model  # one KV cache at a time, as the memory check counts: the next is built after this one is freed
        if device.type == "cuda":
            torch.cuda.synchronize()
    return done


# --- the command -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WarmupOptions:
    model: str
    max_tokens: int | None = None  # None: every --max-tokens the context allows
    max_prompt: int | None = None  # None: every prompt the context allows
    dtype: str | None = None  # default: run's (bf16 on a GPU, fp32 on the CPU)


@dataclass(frozen=True)
class WarmupReport:
    model: str
    class_id: str
    dtype: str
    plan: WarmupPlan
    passes: int
    cache: str | None  # Triton's cache folder; None under the interpreter (it compiles nothing)

    def lines(self) -> list[str]:
        p = self.plan
        where = (
            f"Triton's cache: {self.cache}"
            if self.cache is not None
            else "the Triton interpreter compiles nothing: every call was launched once"
        )
        out = [
            f"warmed up {self.model} on {self.class_id} in {self.dtype}: {counted(self.passes, 'pass', 'passes')} "
            "over prompts of "
            f"{describe_lengths(p.prompts, 'tokens')} and KV caches of {describe_lengths(p.capacities, 'positions')}; "
            f"{where}"
        ]
        if p.refused_prompts or p.refused_capacities:
            refused = [f"prompts of {describe_lengths(p.refused_prompts, 'tokens')}"] if p.refused_prompts else []
            refused += (
                [f"KV caches of {describe_lengths(p.refused_capacities, 'positions')}"] if p.refused_capacities else []
            )
            out.append(f"not certified on {self.class_id} (`neurobrix run` refuses them): {'; '.join(refused)}")
        return out


def triton_cache_dir() -> str:
    """Where Triton keeps compiled binaries (its knob, else TRITON_CACHE_DIR, else its default)."""
    import os

    try:
        from triton import knobs

        return str(knobs.cache.dir)
    except (ImportError, AttributeError):
        return os.environ.get("TRITON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".triton", "cache")


def warmup(
    opts: WarmupOptions, progress: Callable[[int, int], None] | None = None, notice: Callable[[str], None] | None = None
) -> WarmupReport:
    """Resolve the stored model, settle the device, its class and compiler stack as ``run`` does, plan every
    pass and make them; ``notice`` gets what is about to happen (and how far it got, on Ctrl-C).
    MissingEntryError when the class certifies no run of this model at all."""
    from . import store
    from .dtypes import NAMES as DTYPES
    from .gpu import interpreter_enabled
    from .run import _device_and_class, _refuse_interpreter_bf16, certified_ops
    from .stack import require_certified_stack
    from .tables import load as load_tables

    if not isinstance(opts, WarmupOptions):
        raise UsageError(f"warmup takes a neurobrix.warmup.WarmupOptions, got {type(opts).__name__}")
    expect_hooks("warmup", progress=progress, notice=notice)
    expect("WarmupOptions.model", opts.model, "a string")
    expect("WarmupOptions.max_tokens", opts.max_tokens, "an integer", optional=True)
    expect("WarmupOptions.max_prompt", opts.max_prompt, "an integer", optional=True)
    expect("WarmupOptions.dtype", opts.dtype, "a string", optional=True)
    if opts.max_tokens is not None and opts.max_tokens < 1:
        raise UsageError(f"--max-tokens must be >= 1, got {opts.max_tokens}")
    if opts.max_prompt is not None and opts.max_prompt < 1:
        raise UsageError(f"--max-prompt must be >= 1, got {opts.max_prompt}")
    load_tables()  # the tables (NEUROBRIX_TABLES's folder or the package's, exit 3) first, as run refuses them
    stored = store.resolve(opts.model)
    cfg = stored.config()
    stored.require_unchanged()  # config.json, the one file warmup reads, as it was checked
    device, class_id = _device_and_class("triton")
    dtype = opts.dtype if opts.dtype is not None else ("bf16" if device.type == "cuda" else "fp32")  # "": none
    if dtype not in DTYPES:
        raise UsageError(f"--dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    assert class_id is not None  # the triton backend always has a class
    _refuse_interpreter_bf16(class_id, dtype)
    require_certified_stack(class_id)
    say = notice if notice is not None else (lambda line: None)
    past = past_context(cfg.max_positions, opts.max_prompt, opts.max_tokens)
    if past:  # narrowed to the context, as run refuses a longer prompt: said, not warmed up quietly
        say(past)
    say(
        f"planning: which prompt lengths and KV-cache sizes {stored.name} can run with on {class_id}, each with "
        "its certified settings"
    )
    plan = plan_warmup(cfg, load_tables(), class_id, dtype, opts.max_prompt, opts.max_tokens)
    if not plan.prompts or not plan.capacities:
        # not one run is certified: the preflight's own error for the shortest one names what is missing
        certified_ops(cfg, class_id, dtype, 1, 1, 2, f" --config {stored.path / 'config.json'}")
        raise MissingEntryError(f"no run of {stored.name} within these limits is certified on {class_id}")
    say(
        f"warming up {stored.name} on {class_id} in {dtype}: {counted(plan.passes, 'pass', 'passes')} over prompts of "
        f"{describe_lengths(plan.prompts, 'tokens')} and KV caches of {describe_lengths(plan.capacities, 'positions')}"
        + ("" if interpreter_enabled() else " (each kernel compiles on its first pass)")
    )
    done = [0]

    def count(made: int, total: int) -> None:
        done[0] = made
        if progress:
            progress(made, total)

    cache = None if interpreter_enabled() else triton_cache_dir()
    try:
        passes = launch(cfg, plan, dtype, device, count)
    except KeyboardInterrupt:
        say(stopped_line(done[0], plan.passes, cache))
        raise
    return WarmupReport(stored.name, class_id, dtype, plan, passes, cache)


def stopped_line(done: int, passes: int, cache: str | None) -> str:
    """What a warmup stopped after ``done`` of ``passes`` passes leaves behind: the binaries compiled so far, in
    Triton's cache folder ``cache``; under the interpreter (``cache`` None), which compiles nothing, nothing."""
    head = f"warmup stopped after {done} of {counted(passes, 'pass', 'passes')}"
    if cache is None:
        return f"{head}: the Triton interpreter compiles nothing, so there is nothing to keep or to resume"
    return f"{head}: what was compiled stays in Triton's cache, {cache}; the same command again compiles only the rest"
