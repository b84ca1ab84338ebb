"""One-off (2026-12-02b): attention_decode merged by its last program against the separate merge kernel.

    PYTHONPATH=. python -m benchmarks.proto_merge --json out.json

Needs the previous attention module beside the new one: ``git show 255d0f4:neurobrix/ops/attention.py >
neurobrix/ops/_old_attention.py`` (a leading underscore: the op registry skips it). First, every bf16
setting shipped for attention_decode on this class, at its domain's smallest batch and a capacity inside
its domain, run by both: outputs compared bit for bit. Then decode tokens/s with each, alternating
(new, old, new, old) in this one process, the same certified settings.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math

import torch

from benchmarks.e2e import engine_run, random_weights
from conformance.catalogue import load
from neurobrix import ops, tables
from neurobrix.gpu import detect_class
from neurobrix.ops import _old_attention, attention


def bitwise(class_id: str) -> dict:
    index = tables.load().index(class_id, "attention_decode")
    same = differ = 0
    worst = []
    for entry in index.entries:
        if "bf16" not in entry.domain.dtypes:
            continue
        span = entry.domain.spans()
        B, D, G = span["B"][0], span["D"][0], span["G"][0]
        S = min(span["S"][1] or 16384, 16384)
        HKV = 2
        gen = torch.Generator(device="cuda").manual_seed(S + B)
        q = torch.randn(B, HKV * G, D, device="cuda", dtype=torch.bfloat16, generator=gen)
        k = torch.randn(B, S, HKV, D, device="cuda", dtype=torch.bfloat16, generator=gen)
        v = torch.randn(B, S, HKV, D, device="cuda", dtype=torch.bfloat16, generator=gen)
        lengths = torch.tensor([max(1, S - 1 - 97 * i) for i in range(B)], device="cuda", dtype=torch.int32)
        for pdl in (False, True):
            a = attention.attention_decode(q, k, v, lengths, 1 / math.sqrt(D), config=entry.config, pdl=pdl)
            b = _old_attention.attention_decode(q, k, v, lengths, 1 / math.sqrt(D), config=entry.config, pdl=pdl)
            if torch.equal(a, b):
                same += 1
            else:
                differ += 1
                worst.append([entry.domain.describe(), float((a.float() - b.float()).abs().max())])
    return {"bitwise_same": same, "bitwise_differ": differ, "differences": worst[:20]}


def decode(models: list[str], batches: list[int], rounds: int) -> list[dict]:
    catalogue, _ = load()
    new_spec = ops.SPECS["attention_decode"]
    old_spec = dataclasses.replace(new_spec, launch=_old_attention.attention_decode)
    rows = []
    for name in models:
        cfg = catalogue[name]
        weights = random_weights(cfg, torch.bfloat16, torch.device("cuda"))
        prompts = torch.randint(0, cfg.vocab_size, (max(batches), 128), generator=torch.Generator().manual_seed(1))
        for batch in batches:
            for r in range(rounds):
                for label, spec in (("merged in the split kernel", new_spec), ("merge kernel", old_spec)):
                    ops.SPECS["attention_decode"] = spec
                    out = engine_run(cfg, weights, "triton", prompts[:batch].tolist(), 256, 3, True)
                    row = {"model": name, "batch": batch, "round": r, "attention_decode": label,
                           "decode_tok_s": out["decode_tok_s"]}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
        ops.SPECS["attention_decode"] = new_spec
        del weights
        torch.cuda.empty_cache()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["TinyLlama/TinyLlama-1.1B-Chat-v1.0",
                                                         "meta-llama/Llama-3.2-1B-Instruct"])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json")
    args = parser.parse_args()
    result = bitwise(detect_class().id)
    print(json.dumps(result), flush=True)
    result["decode"] = decode(args.models, args.batch, args.rounds)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
