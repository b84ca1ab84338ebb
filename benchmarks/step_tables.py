"""The engine's decode step with two tables folders side by side: what a re-ranking or re-certification changed.

For each catalogue model and batch: random weights (bf16, or ``--dtype fp16``), a 128-position filled cache, the
engine's greedy decode step (``GreedyDecoder``, a CUDA graph replay, the class's launch features) planned once from
each tables folder, both captured in one process and timed in interleaved rounds; the settings that differ are listed:

    PYTHONPATH=. python -m benchmarks.step_tables --old /tmp/old-tables --new tables \\
        --pairs meta-llama/Llama-3.2-1B-Instruct:1 meta-llama/Llama-3.1-8B-Instruct:8 [--json out.json]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from benchmarks.proto_fuse import report, summary
from conformance.catalogue import load
from conformance.rank import captured_steps, interleaved, random_weights
from neurobrix.gpu import detect_class
from neurobrix.plan import generation_calls, resolve
from neurobrix.tables import load as load_tables


def compare(name: str, batch: int, old: Path, new: Path, filled: int, steps: int, rounds: int, dtype: str) -> dict:
    cfg = load()[0][name]
    capacity = filled + 256 + 16
    class_id = detect_class().id
    calls = generation_calls(cfg, batch, filled, capacity, dtype)
    plans = {label: resolve(calls, load_tables(root), class_id) for label, root in (("old", old), ("new", new))}
    weights = random_weights(cfg, {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype], "cuda")
    tokens = torch.arange(batch, device="cuda") * 7919 % cfg.vocab_size
    ops = {label: plan.ops() for label, plan in plans.items()}
    decoders, logits = captured_steps(cfg, weights, ops, batch, filled, capacity, tokens)
    times = summary(
        {("engine" if k == "old" else k): v for k, v in interleaved(decoders, tokens, filled, steps, rounds).items()}
    )
    changed = {
        str(call[2]): {"old": plans["old"].settings[call], "new": plans["new"].settings[call]}
        for call in plans["old"].settings
        if call[1] == dtype and call[2][0] == batch and plans["old"].settings[call] != plans["new"].settings[call]
    }
    return {
        "model": name,
        "batch": batch,
        "dtype": dtype,
        "filled": filled,
        **times,
        "new_over_old": times["vs_engine"]["new"],
        "changed": changed,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="the tables folder before")
    parser.add_argument("--new", type=Path, required=True, help="the tables folder after")
    parser.add_argument("--pairs", nargs="+", required=True, metavar="MODEL:BATCH")
    parser.add_argument("--filled", type=int, default=128)
    parser.add_argument("--steps", type=int, default=200, help="replays a timed round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16", help="the step's dtype (default bf16)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("step_tables: needs a GPU of a certified class", file=sys.stderr)
        return 1
    pairs = [(p.rsplit(":", 1)[0], int(p.rsplit(":", 1)[1])) for p in args.pairs]
    runs = (compare(m, b, args.old, args.new, args.filled, args.steps, args.rounds, args.dtype) for m, b in pairs)
    return report(runs, args.json)


if __name__ == "__main__":
    sys.exit(main())
