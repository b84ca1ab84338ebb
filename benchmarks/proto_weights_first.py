"""One-off (2026-12-02, tenth session): linear's decode kernels loading their first weight step before
the PDL wait (``weights_first``) against the same kernels loading everything after it.

    PYTHONPATH=. python -m benchmarks.proto_weights_first --json out.json

Needs the previous linear module beside the new one: ``git show f73f537:neurobrix/ops/linear.py >
neurobrix/ops/_old_linear.py`` (a leading underscore: the op registry skips it). First, every shipped
gemv and skinny setting of this class (bf16 and fp16), at its domain's smallest shape, run by both, PDL
off and on: outputs compared bit for bit. Then decode tokens/s with each, alternating (new, old, new,
old) in this one process, the same certified settings.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import torch

from benchmarks.e2e import engine_run, random_weights
from conformance.catalogue import load
from neurobrix import ops, tables
from neurobrix.gpu import detect_class
from neurobrix.ops import _old_linear, linear

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def bitwise(class_id: str) -> dict:
    index = tables.load().index(class_id, "linear")
    same = differ = 0
    worst = []
    for entry in index.entries:
        if entry.config.get("variant") not in ("gemv", "skinny"):
            continue
        span = entry.domain.spans()
        M, N, K = span["M"][0], span["N"][0], span["K"][0]
        for dtype in entry.domain.dtypes:
            gen = torch.Generator(device="cuda").manual_seed(M * 7 + N * 3 + K)
            x = torch.randn(M, K, device="cuda", dtype=DTYPES[dtype], generator=gen)
            w = torch.randn(N, K, device="cuda", dtype=DTYPES[dtype], generator=gen)
            for pdl in (False, True):
                a = linear.linear(x, w, config=entry.config, pdl=pdl)
                b = _old_linear.linear(x, w, config=entry.config, pdl=pdl)
                if torch.equal(a, b):
                    same += 1
                else:
                    differ += 1
                    worst.append([dtype, M, N, K, pdl, float((a.float() - b.float()).abs().max())])
    return {"bitwise_same": same, "bitwise_differ": differ, "differences": worst[:20]}


def decode(models: list[str], batches: list[int], rounds: int, minutes: float) -> list[dict]:
    catalogue, _ = load()
    new_spec = ops.SPECS["linear"]
    old_spec = dataclasses.replace(new_spec, launch=_old_linear.linear)
    rows = []
    start = time.monotonic()
    for name in models:
        if time.monotonic() - start > minutes * 60:
            print(json.dumps({"skipped": name, "reason": "time box"}), flush=True)
            continue
        cfg = catalogue[name]
        weights = random_weights(cfg, torch.bfloat16, torch.device("cuda"))
        prompts = torch.randint(0, cfg.vocab_size, (max(batches), 128), generator=torch.Generator().manual_seed(1))
        for batch in batches:
            for r in range(rounds):
                for label, spec in (("weights first", new_spec), ("after the wait", old_spec)):
                    ops.SPECS["linear"] = spec
                    out = engine_run(cfg, weights, "triton", prompts[:batch].tolist(), 256, 1, True)
                    row = {"model": name, "batch": batch, "round": r, "linear": label,
                           "decode_tok_s": out["decode_tok_s"]}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
        ops.SPECS["linear"] = new_spec
        del weights
        torch.cuda.empty_cache()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["TinyLlama/TinyLlama-1.1B-Chat-v1.0",
                                                         "meta-llama/Llama-3.2-1B-Instruct",
                                                         "Qwen/Qwen2.5-0.5B-Instruct",
                                                         "meta-llama/Llama-3.1-8B-Instruct"])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--minutes", type=float, default=6.0, help="start no new model after this")
    parser.add_argument("--json")
    args = parser.parse_args()
    result = bitwise(detect_class().id)
    print(json.dumps(result), flush=True)
    result["decode"] = decode(args.models, args.batch, args.rounds, args.minutes)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
