"""Prototype (2026-12-03, twentieth session): rank a decode projection's proven candidates inside the model's step.

2026-12-03e found that no timer alone ranks decode-projection settings as the engine's step does: under PDL a
kernel's cost depends on the kernels around it, and certify's timer (each call back to back) got 0-8 of 15
comparisons right. This asks the step itself. For each catalogue model and batch: every decode linear call of the
engine's plan, its certified setting and the ``--top`` fastest settings its audit record lists as rejected for
``slower`` (each screened against float64 when it was certified); each timed three ways alone with certify's timer
as it is now (plain inputs laid out as the engine passes them; without PDL, with PDL back to back); then each
swapped alone into the engine's captured decode step (``GreedyDecoder``, PDL as the class says), all the variants
timed in interleaved rounds. Last, the step with every call's fastest in-step setting at once (where it beat the
certified one by more than ``--margin``), against the engine, its logits compared:

    PYTHONPATH=. python -m benchmarks.proto_rank [--model NAME ...] [--batch 1 8] [--top 6] [--json out.json]
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import torch

from benchmarks.proto_fuse import captured_steps, decode_setup, interleaved, report, summary
from neurobrix.ops import SPECS, certified


def proven_alternatives(plan, call, top: int) -> list[dict[str, Any]]:
    """The ``top`` fastest settings the audit record of ``call``'s entry rejected only for being slower."""
    kernel, dtype, key = call
    shape = dict(zip(SPECS[kernel].key, key))
    proofs = plan.tables.proofs(plan.class_id, kernel) if plan.tables is not None else None
    if proofs is None:
        return []
    entry = next(e for e in proofs.entries if e.domain.contains(dtype, shape))
    slower = []
    for r in entry.proof.rejected:
        if r.reason == "slower":
            slower.append((float(r.detail.split(" us")[0]), dict(r.config)))
    slower.sort(key=lambda s: s[0])
    return [c for _, c in slower[:top]]


def timer_alone(call, configs: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """certify's measure() at this exact shape, each setting without PDL and with PDL back to back."""
    from conformance.certify import Task, measure, timing_sets

    kernel, dtype, key = call
    task = Task(kernel, dtype, tuple((d, v, v) for d, v in zip(SPECS[kernel].key, key)))
    sets = timing_sets(task)
    out = {}
    for label, config in configs.items():
        out[label] = {
            "no_pdl_us": round(measure(task, config, sets, False)[1], 2),
            "pdl_us": round(measure(task, config, sets, True)[1], 2),
        }
    return out


def rank(name: str, batch: int, filled: int, steps: int, top: int, margin: float, deadline: float) -> dict:
    cfg, weights, capacity, plan, base, tokens = decode_setup(name, batch, filled, steps)
    calls = sorted(
        (c for c in plan.settings if c[0] == "linear" and c[2][0] == batch and c[1] == "bf16"),
        key=lambda c: (c[2][1], c[2][2]),
    )
    ops: dict[str, Any] = {"engine": base}
    tried: dict[str, tuple[Any, dict[str, Any]]] = {}
    rows = []
    for call in calls:
        if time.monotonic() > deadline:
            break
        _, _, (M, N, K) = call
        alternatives = proven_alternatives(plan, call, top)
        configs = {"certified": dict(plan.settings[call])}
        configs.update({f"{N}x{K}#{i}": c for i, c in enumerate(alternatives)})
        row = {"key": [M, N, K], "configs": configs, "alone": timer_alone(call, configs)}
        rows.append(row)
        print(f"  {name} b{batch} {M}x{N}x{K}: {row['alone']}", flush=True)
        for label, config in configs.items():
            if label != "certified":
                ops[label] = certified({**plan.settings, call: config}, plan.pdl)
                tried[label] = (call, config)
    decoders, logits = captured_steps(cfg, weights, ops, batch, filled, capacity, tokens)
    alone = summary(interleaved(decoders, tokens, filled, steps, rounds=5))
    del decoders
    chosen: dict[Any, dict[str, Any]] = {}
    for row in rows:
        M, N, K = row["key"]
        labels = [lb for lb in row["configs"] if lb != "certified"]
        for lb in labels:
            row["alone"][lb]["step_vs_engine"] = alone["vs_engine"][lb]
        if labels:
            best = max(labels, key=alone["vs_engine"].get)
            if alone["vs_engine"][best] > 1 + margin:
                chosen[tried[best][0]] = tried[best][1]
                row["chosen"] = best
    both = {"engine": base, "ranked-in-step": certified({**plan.settings, **chosen}, plan.pdl)}
    decoders, logits = captured_steps(cfg, weights, both, batch, filled, capacity, tokens)
    together = summary(interleaved(decoders, tokens, filled, steps, rounds=7))
    ref = logits["engine"]
    return {
        "model": name,
        "batch": batch,
        "filled": filled,
        "alone": alone,
        "chosen": {f"{c[2][1]}x{c[2][2]}": v for c, v in chosen.items()},
        **together,
        "max_logit_diff_rel": round(float((logits["ranked-in-step"] - ref).abs().max() / ref.abs().max()), 5),
        "projections": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model",
        nargs="+",
        default=[
            "meta-llama/Llama-3.2-1B-Instruct",
            "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
            "meta-llama/Llama-3.1-8B-Instruct",
        ],
    )
    parser.add_argument("--batch", nargs="+", type=int, default=[1, 8])
    parser.add_argument("--filled", type=int, default=128, help="cache positions filled before the step")
    parser.add_argument("--steps", type=int, default=150, help="replays a timed round")
    parser.add_argument("--top", type=int, default=6, help="proven alternatives tried per call")
    parser.add_argument("--margin", type=float, default=0.002, help="an alternative must beat this in the step")
    parser.add_argument("--minutes", type=float, default=7.0, help="stop adding calls after this long")
    parser.add_argument("--pairs", nargs="*", help="only these MODEL:BATCH pairs (default: every model x batch)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("proto_rank: needs a GPU of a certified class", file=sys.stderr)
        return 1
    deadline = time.monotonic() + 60 * args.minutes
    pairs = [(m, b) for m in args.model for b in args.batch]
    if args.pairs:
        pairs = [(p.rsplit(":", 1)[0], int(p.rsplit(":", 1)[1])) for p in args.pairs]
    runs = (rank(m, b, args.filled, args.steps, args.top, args.margin, deadline) for m, b in pairs)
    return report(runs, args.json)


if __name__ == "__main__":
    sys.exit(main())
