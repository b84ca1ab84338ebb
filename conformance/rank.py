"""`python -m conformance rank`: order a decode projection's proven settings by the model's own decode step.

certify ranks a domain's candidates with a timer that runs the kernel alone, call after call. For the linear calls
of a decode step that is not the step's order: under programmatic dependent launch a kernel's cost depends on the
kernels around it, and no timer alone agreed with the step on more than 8 of 15 comparisons (2026-12-03e); the
step itself found settings 0.1-2.1 % of a step faster among the ones certify had rejected as slower (2026-12-03f).

So, for each catalogue model and decode batch asked: the model's decode step is built on this GPU from random
weights with the class's tables and captured as the engine captures it (``GreedyDecoder``: a CUDA graph, the
class's launch features). For each linear call of the step in turn, the entry's setting and the ``top`` fastest
settings its audit record rejected only for being slower (each screened against float64 when it was certified) are
swapped into the step and all those steps timed in interleaved rounds. A setting whose median step beats the
entry's by more than ``margin`` is proven over the entry's whole domain, as certify proves a winner, and the entry
is rewritten with it; every setting tried is recorded among the rejected with its step time, which also marks the
entry as ranked (a later run skips it unless ``again``). Each call's step carries the choices made before it. The
table is rewritten after every call, so a run stopped at its time limit resumes where it stopped.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from neurobrix import tables as nb_tables
from neurobrix.errors import UsageError
from neurobrix.gpu import interpreter_enabled
from neurobrix.ops import SPECS, certified
from neurobrix.schema import Entry, Rejected, Setting, parse_class

from . import catalogue, check, track
from .certify import existing_table, merged_provenance, provenance, times_with_pdl, write_table

KERNEL = "linear"
MARK = "in the decode step of"  # in a rejected line's detail: the entry was ranked in a step
FILLED = 128  # cache positions filled before the timed step (the e2e benchmark's prompt)
CAPACITY = 400  # the cache the step is planned for (the e2e benchmark's 128 + 256 + 16)
_TIME = re.compile(r"^([0-9]+(?:\.[0-9]+)?) us")


def alternatives(entry: Entry, top: int) -> list[tuple[float, dict[str, Any]]]:
    """(timer us, setting) of the ``top`` fastest settings the entry's record rejected only for being slower."""
    timed = []
    for r in entry.proof.rejected:
        found = _TIME.match(r.detail)
        if r.reason == "slower" and found and MARK not in r.detail:
            timed.append((float(found.group(1)), dict(r.config)))
    timed.sort(key=lambda t: t[0])
    return timed[:top]


def ranked(entry: Entry) -> bool:
    return any(MARK in r.detail for r in entry.proof.rejected)


def rewritten(
    entry: Entry, tried: list[tuple[dict[str, Any], float]], win: int, where: str, proof: Any, timer_us: float
) -> Entry:
    """The entry after a ranking in a step: ``tried`` the (setting, step us) of the entry's setting (first) and its
    alternatives, ``win`` the index of the one kept (0: the entry's), ``proof`` its check over the domain (None when
    it is the entry's own, whose proof stands), ``timer_us`` its time alone from the record."""
    config, win_us = tried[win]
    others = [(c, us) for n, (c, us) in enumerate(tried) if n != win]
    kept = [r for r in entry.proof.rejected if all(dict(r.config) != c for c, _ in tried)]
    lines = tuple(Rejected(c, "slower", f"{us:.2f} us a step {MARK} {where} vs {win_us:.2f} us") for c, us in others)
    if win == 0:
        return replace(entry, proof=replace(entry.proof, rejected=tuple(kept) + lines))
    new_proof = replace(
        entry.proof,
        examples=proof.examples,
        worst_error_ratio=proof.worst_ratio,
        time_best_us=timer_us,
        time_median_us=timer_us,
        rejected=tuple(kept) + lines,
    )
    return Entry(entry.domain, config, new_proof)


def random_weights(cfg: Any, dtype: torch.dtype, device: str, seed: int = 0) -> Any:
    """A model's weights drawn N(0, 0.02^2) (norms 1): what the e2e benchmark and the step timings run."""
    from neurobrix.model import Layer, Weights

    gen = torch.Generator(device=device).manual_seed(seed)

    def rand(*shape: int) -> torch.Tensor:
        return (torch.randn(shape, generator=gen, device=device, dtype=torch.float32) * 0.02).to(dtype)

    h, i, d = cfg.hidden_size, cfg.intermediate_size, cfg.head_dim
    layers = [
        Layer(
            attn_norm=torch.ones(h, dtype=dtype, device=device),
            qkv=rand(cfg.qkv_size, h),
            qkv_bias=rand(cfg.qkv_size) if cfg.qkv_bias else None,
            o=rand(h, cfg.num_heads * d),
            mlp_norm=torch.ones(h, dtype=dtype, device=device),
            gate_up=rand(2 * i, h),
            down=rand(h, i),
            o_bias=rand(h) if cfg.o_bias else None,
            gate_up_bias=rand(2 * i) if cfg.mlp_bias else None,
            down_bias=rand(h) if cfg.mlp_bias else None,
        )
        for _ in range(cfg.num_layers)
    ]
    embed = rand(cfg.vocab_size, h)
    return Weights(
        embed,
        layers,
        torch.ones(h, dtype=dtype, device=device),
        embed if cfg.tie_word_embeddings else rand(cfg.vocab_size, h),
    )


def captured_steps(cfg, weights, ops: dict[Any, Any], batch: int, filled: int, capacity: int, tokens: torch.Tensor):
    """For each variant's ops: a model over the same weights and the same randomly filled cache, its decode
    step's logits at position ``filled``, and the step captured as the engine captures it (``GreedyDecoder``,
    a CUDA graph). Returns (decoders, logits) by variant."""
    from neurobrix.generate import GreedyDecoder
    from neurobrix.model import Transformer

    decoders, logits = {}, {}
    for variant, variant_ops in ops.items():
        model = Transformer(cfg, weights, variant_ops, batch=batch, capacity=capacity)
        gen = torch.Generator(device="cuda").manual_seed(1)
        for n in range(cfg.num_layers):  # the same filled cache in every variant
            model.cache.k[n].normal_(generator=gen)
            model.cache.v[n].normal_(generator=gen)
        positions = torch.full((batch, 1), filled, device="cuda")
        lengths = torch.full((batch,), filled + 1, dtype=torch.int32, device="cuda")
        logits[variant] = model.forward(tokens[:, None], positions, lengths).float()
        decoder = GreedyDecoder(model, batch, use_graph=True)
        decoder.capture(filled)
        decoders[variant] = decoder
    return decoders, logits


def interleaved(decoders: dict[Any, Any], tokens: torch.Tensor, filled: int, steps: int, rounds: int):
    """Microseconds a decode step, ``rounds`` timings of ``steps`` replays per variant, rounds interleaved
    (drift on the machine hits every variant alike)."""

    def replay(decoder) -> None:
        decoder.start(tokens, filled)
        decoder.step()

    for decoder in decoders.values():
        for _ in range(4):
            replay(decoder)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times: dict[Any, list[float]] = {v: [] for v in decoders}
    for _ in range(rounds):
        for variant, decoder in decoders.items():
            start.record()
            for _ in range(steps):
                replay(decoder)
            end.record()
            end.synchronize()
            times[variant].append(start.elapsed_time(end) * 1000 / steps)
    return times


@dataclass
class Outcome:
    """What one ranked call did, for the report."""

    call: tuple[str, str, tuple[int, ...]]
    where: str
    step_us: list[tuple[str, float]]  # (setting, us a step): the entry's setting first, then each alternative's
    kept: int  # index into step_us
    note: str = ""


def rank_call(
    entry: Entry,
    call: tuple[str, str, tuple[int, ...]],
    where: str,
    top: int,
    margin: float,
    step_times: Callable[[list[dict[str, Any]]], list[float]],
    prove: Callable[[dict[str, Any]], Any],
) -> tuple[Entry, Outcome, dict[str, Any]]:
    """Rank one call: ``step_times`` gives the step's microseconds with each setting of its list swapped in (the
    entry's first), ``prove`` checks a setting over the entry's domain. Returns (the entry rewritten, what was done,
    the setting kept)."""
    alts = alternatives(entry, top)
    tried = [dict(entry.config)] + [c for _, c in alts]
    step_us = step_times(tried)
    best = min(range(len(tried)), key=step_us.__getitem__)
    outcome = Outcome(call, where, [(str(c), round(t, 2)) for c, t in zip(tried, step_us)], 0)
    if best and step_us[0] > (1 + margin) * step_us[best]:
        proof = prove(tried[best])
        if proof.passed:
            outcome.kept = best
            return (
                rewritten(entry, list(zip(tried, step_us)), best, where, proof, alts[best - 1][0]),
                outcome,
                tried[best],
            )
        outcome.note = f"the faster setting failed its proof: {(proof.failure or '').splitlines()[0]}"
    return rewritten(entry, list(zip(tried, step_us)), 0, where, None, 0.0), outcome, tried[0]


def _pairs(models: list[str] | None, batches: Iterable[int]) -> list[tuple[str, Any, int]]:
    configs, _ = catalogue.load()
    names = models or list(configs)
    unknown = [m for m in names if m not in configs]
    if unknown:
        raise UsageError(f"not in the catalogue: {', '.join(unknown)}; its models: {', '.join(configs)}")
    return [(m, configs[m], b) for m in names for b in batches]


def rank(
    class_id: str,
    root: Path,
    models: list[str] | None,
    batches: list[int],
    dtype: str,
    top: int,
    margin: float,
    rounds: int,
    steps: int,
    examples: int,
    profile_name: str,
    max_minutes: float | None,
    command: str,
    again: bool = False,
    say: Callable[[str], None] = print,
) -> tuple[list[Outcome], bool]:
    """Rank the decode linear calls of each (model, batch); returns (what each ranked call did, finished)."""
    from neurobrix.plan import generation_calls, resolve

    pairs = _pairs(models, batches)
    # the class named before the GPU this machine lacks (`rank --class nosuch` on a CPU answered "there is none")
    track.require_described(root, class_id, track.DESCRIBE_AND_CERTIFY_FIRST)
    if interpreter_enabled() or not torch.cuda.is_available():
        raise UsageError(
            "rank times a model's decode step, captured in a CUDA graph, on a GPU of the class; on this machine "
            "there is none (the interpreter class's settings are ranked by certify alone)"
        )
    class_yaml = nb_tables.class_path(root, class_id)
    klass = parse_class(nb_tables.read_yaml(class_yaml, str(class_yaml)), str(class_yaml), class_id)
    check.require_device(klass)
    table = existing_table(root, class_id, KERNEL)
    if table is None:
        raise UsageError(f"class {class_id} has no {KERNEL} table in {root}: certify it first")
    prov = merged_provenance(table, provenance(command, times_with_pdl(klass)))
    entries = list(table.entries)
    deadline = time.monotonic() + 60 * max_minutes if max_minutes is not None else None
    outcomes: list[Outcome] = []
    for name, cfg, batch in pairs:
        where = f"{name} at batch {batch}"
        plan = resolve(generation_calls(cfg, batch, FILLED, CAPACITY, dtype), nb_tables.load(root), class_id)
        calls = sorted(
            (c for c in plan.settings if c[0] == KERNEL and c[1] == dtype and c[2][0] == batch),
            key=lambda c: c[2][1:],
        )
        todo = []
        for call in calls:
            shape = dict(zip(SPECS[KERNEL].key, call[2]))
            n = next(i for i, e in enumerate(entries) if e.domain.contains(dtype, shape))
            if (again or not ranked(entries[n])) and alternatives(entries[n], top):
                todo.append((call, n))
        if not todo:
            say(f"{where}: every decode {KERNEL} call already ranked in a step")
            continue
        if deadline is not None and outcomes and time.monotonic() > deadline:  # a run ranks one call at least
            say("stopping at the time limit; run again to resume (ranked entries are skipped)")
            return outcomes, False
        plan.ops()  # refuses a machine or stack the class was not certified on
        weights = random_weights(cfg, torch.bfloat16 if dtype == "bf16" else torch.float16, "cuda")
        tokens = torch.arange(batch, device="cuda") * 7919 % cfg.vocab_size
        settings = dict(plan.settings)
        for call, n in todo:
            if deadline is not None and outcomes and time.monotonic() > deadline:
                say("stopping at the time limit; run again to resume (ranked entries are skipped)")
                return outcomes, False

            def step_times(tried: list[dict[str, Any]], call=call) -> list[float]:
                ops = {0: certified(settings, plan.pdl)}
                ops.update({k: certified({**settings, call: c}, plan.pdl) for k, c in enumerate(tried) if k})
                decoders, _ = captured_steps(cfg, weights, ops, batch, FILLED, CAPACITY, tokens)
                times = interleaved(decoders, tokens, FILLED, steps, rounds)
                return [statistics.median(times[k]) for k in range(len(tried))]

            def prove(config: dict[str, Any], domain=entries[n].domain) -> Any:
                return check.check_entry(KERNEL, Setting(domain, config), dtype, examples, profile_name)

            entries[n], outcome, kept = rank_call(entries[n], call, where, top, margin, step_times, prove)
            settings[call] = kept
            outcomes.append(outcome)
            say(render(outcome))
            write_table(root, class_id, KERNEL, entries, prov)
        torch.cuda.empty_cache()
    return outcomes, True


def render(outcome: Outcome) -> str:
    _, dtype, key = outcome.call
    shape = " x ".join(str(v) for v in key)
    (_, base), (kept_setting, kept) = outcome.step_us[0], outcome.step_us[outcome.kept]
    head = f"{KERNEL} {dtype} {shape} ({outcome.where}): "
    if outcome.kept:
        text = f"{kept_setting} kept, step {kept:.1f} us against {base:.1f} us ({base / kept:.3f}x)"
    else:
        fastest = min(us for _, us in outcome.step_us[1:])
        text = f"the certified setting stays (step {base:.1f} us; the fastest alternative {fastest:.1f} us)"
    return head + text + (f"; {outcome.note}" if outcome.note else "")
