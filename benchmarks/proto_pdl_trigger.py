"""One-off (2026-12-02, tenth session): where linear's decode kernels let their successor launch under
PDL, with and without loading their first weight step before waiting on their predecessor.

    PYTHONPATH=. python -m benchmarks.proto_pdl_trigger --json out.json

Three linear modules beside each other (leading underscores: the op registry skips them): ``_old_linear``
(the shipped kernels: wait, then let the successor launch, at the top), ``_v2_linear`` (gemv and skinny
wait at the top and let the successor launch after their main loop, so only one successor is resident
beside them rather than a chain of waiting kernels), ``_v1_linear`` (the same, and the first weight step
loaded before the wait). First, every shipped gemv and skinny setting of this class (bf16 and fp16), at
its domain's smallest shape, run by each, PDL off and on: outputs compared bit for bit with the shipped
kernels. Then decode tokens/s with each, alternating in this one process, the same certified settings.
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
from neurobrix.ops import _old_linear, _v1_linear, _v2_linear

VARIANTS = {"shipped": _old_linear, "late trigger": _v2_linear, "weights first, late trigger": _v1_linear}

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
                b = _old_linear.linear(x, w, config=entry.config, pdl=pdl)
                for label in ("late trigger", "weights first, late trigger"):
                    a = VARIANTS[label].linear(x, w, config=entry.config, pdl=pdl)
                    if torch.equal(a, b):
                        same += 1
                    else:
                        differ += 1
                        worst.append([label, dtype, M, N, K, pdl, float((a.float() - b.float()).abs().max())])
    return {"bitwise_same": same, "bitwise_differ": differ, "differences": worst[:20]}


def decode(models: list[str], batches: list[int], rounds: int, minutes: float) -> list[dict]:
    catalogue, _ = load()
    shipped = ops.SPECS["linear"]
    specs = {label: dataclasses.replace(shipped, launch=module.linear) for label, module in VARIANTS.items()}
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
                for label, spec in specs.items():
                    ops.SPECS["linear"] = spec
                    out = engine_run(cfg, weights, "triton", prompts[:batch].tolist(), 256, 1, True)
                    row = {
                        "model": name,
                        "batch": batch,
                        "round": r,
                        "linear": label,
                        "decode_tok_s": out["decode_tok_s"],
                    }
                    print(json.dumps(row), flush=True)
                    rows.append(row)
        ops.SPECS["linear"] = shipped
        del weights
        torch.cuda.empty_cache()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models",
        nargs="+",
        default=[
            "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
            "meta-llama/Llama-3.2-1B-Instruct",
            "Qwen/Qwen2.5-0.5B-Instruct",
            "meta-llama/Llama-3.1-8B-Instruct",
        ],
    )
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
