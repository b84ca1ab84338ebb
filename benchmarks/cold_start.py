"""Process start to first token, with the certified tables: Triton's compile cache cold, then warm.

    PYTHONPATH=. python -m benchmarks.cold_start --model TinyLlama/TinyLlama-1.1B-Chat-v1.0

Each measurement is a fresh Python process (``--child``) that imports the engine, makes random bf16
weights on the GPU, preflights every kernel call, and prefills a 128-token prompt to its first
token; the parent times it from spawn to the child's "first token" line. The first run uses an empty
TRITON_CACHE_DIR (every kernel compiles), the next ones reuse it. No autotuning happens in either:
the settings come from the tables.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def child(model: str, prompt: int) -> None:
    import torch

    from benchmarks.e2e import random_weights
    from conformance.catalogue import load
    from neurobrix.generate import Sampling, sample
    from neurobrix.gpu import detect_class
    from neurobrix.model import Transformer
    from neurobrix.ops import backend
    from neurobrix.plan import generation_calls, preflight

    cfg = load()[0][model]
    preflight(generation_calls(cfg, 1, prompt, prompt + 256), "bf16", detect_class().id)
    model_ = Transformer(cfg, random_weights(cfg, torch.bfloat16, torch.device("cuda")), backend("triton"), 1,
                         prompt + 256)
    tokens = torch.randint(0, cfg.vocab_size, (1, prompt), device="cuda")
    with torch.inference_mode():
        token = sample(model_.forward(tokens, torch.arange(prompt, device="cuda")[None], None), Sampling(), None)
    print(f"first token {int(token[0])}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--runs", type=int, default=3, help="runs in all: the first cold, the rest warm")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.child:
        child(args.model, args.prompt)
        return
    cache = tempfile.mkdtemp(prefix="triton-cache-")
    env = {**os.environ, "TRITON_CACHE_DIR": cache}
    rows = []
    for n in range(args.runs):
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "benchmarks.cold_start", "--child", "--model", args.model,
                                 "--prompt", str(args.prompt)], stdout=subprocess.PIPE, text=True, env=env)
        for line in proc.stdout:
            if line.startswith("first token"):
                seconds = time.perf_counter() - start
                break
        proc.wait()
        row = {"model": args.model, "triton_cache": "cold" if n == 0 else "warm",
               "start_to_first_token_s": round(seconds, 2)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
