"""Prototype (2026-12-02e, kept for the record): greedy decode with each token picked on the host's side
of the graph (block 0, one step a replay) against on the device (block 1 or 8 steps a replay), side by
side in one process: decode tok/s, capture seconds and the whole generate call, tokens compared.

    PYTHONPATH=. python -m benchmarks.proto_greedy_block --model NAME ... --json out.json
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from benchmarks.e2e import random_weights
from conformance.catalogue import load
from neurobrix.generate import Sampling, generate_batch
from neurobrix.gpu import detect_class
from neurobrix.model import Transformer
from neurobrix.plan import generation_calls, resolve
from neurobrix.tables import load as load_tables


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", nargs="+", required=True)
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--blocks", type=int, nargs="+", default=[0, 1, 8])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--new", type=int, default=256)
    parser.add_argument("--json")
    args = parser.parse_args()
    catalogue, _ = load()
    rows = []
    for name in args.model:
        cfg = catalogue[name]
        weights = random_weights(cfg, torch.bfloat16, torch.device("cuda"))
        for batch in args.batch:
            prompts = torch.randint(0, cfg.vocab_size, (batch, 128), generator=torch.Generator().manual_seed(1))
            prompts = prompts.tolist()
            capacity = 128 + args.new
            plan = resolve(generation_calls(cfg, batch, 128, capacity, "bf16"), load_tables(), detect_class().id)
            ops = plan.ops()
            tokens = {}
            for r in range(args.rounds):
                for block in args.blocks:
                    model = Transformer(cfg, weights, ops, batch=batch, capacity=capacity)
                    generate_batch(model, prompts, 16, Sampling(), set(), use_graph=True, block=block)
                    model = Transformer(cfg, weights, ops, batch=batch, capacity=capacity)
                    torch.cuda.synchronize()
                    start = time.perf_counter()
                    outs, stats = generate_batch(
                        model, prompts, args.new, Sampling(), set(), use_graph=True, block=block
                    )
                    torch.cuda.synchronize()
                    total = time.perf_counter() - start
                    tokens.setdefault(block, outs)
                    row = {
                        "model": name,
                        "batch": batch,
                        "block": block,
                        "round": r,
                        "decode_tok_s": round(stats.decode_tokens_per_s, 1),
                        "capture_s": round(stats.capture_s, 3),
                        "total_s": round(total, 3),
                        "same_tokens_as_block0": outs == tokens[args.blocks[0]],
                    }
                    print(json.dumps(row), flush=True)
                    rows.append(row)
        del weights
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
