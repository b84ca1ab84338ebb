"""Process start to first token, with the certified tables: Triton's compile cache cold, then warm.

    PYTHONPATH=. python -m benchmarks.cold_start --model TinyLlama/TinyLlama-1.1B-Chat-v1.0

Each measurement is a fresh Python process (``--child``) that imports the engine, makes random bf16
weights on the GPU, preflights every kernel call, and prefills a 128-token prompt to its first
token; the parent times it from spawn to the child's "first token" line. The first run uses an empty
TRITON_CACHE_DIR (every kernel compiles), the next ones reuse it. No autotuning happens in either:
the settings come from the tables.

``--autotune`` adds, side by side, the same runs with what autotuning on first call would have cost:
before the prefill, every distinct kernel call of that prefill times every candidate certify would
consider for its domain (each compiled on first use, then ``triton.testing.do_bench`` with
triton.autotune's defaults, 25 ms warm-up and 100 ms of repetitions), as ``@triton.autotune`` would.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def autotune_cost(cfg, prompt: int, class_id: str, dtype: str = "bf16", device: str = "cuda") -> int:
    """Time every candidate of every distinct prefill kernel call, as first-call autotuning would."""
    import torch
    import triton.testing

    from conformance import candidates
    from conformance.catalogue import bucket
    from conformance.harness import Values, build
    from neurobrix.dtypes import torch_dtype
    from neurobrix.ops import SPECS
    from neurobrix.plan import forward_calls

    timed = 0
    for kernel, _, key in sorted(forward_calls(cfg, 1, prompt, prompt + 256, prefill=True, dtype=dtype)):
        shape = dict(zip(SPECS[kernel].key, key))
        domain = {d: (lo, hi) for d, lo, hi in bucket(kernel, key)[1]}
        space, _ = candidates.prune(
            kernel, candidates.space(kernel, domain, False), class_id, shape, torch_dtype(dtype).itemsize
        )
        case = build(kernel, dtype, shape, Values(dtype, device, 0))
        for config in space:
            try:
                triton.testing.do_bench(lambda: SPECS[kernel].launch(**case.args, config=config), warmup=25, rep=100)
                timed += 1
            except Exception:  # autotune skips a config that cannot run, after paying for it
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
    return timed


def mark(phase: str) -> None:
    """A phase's end, as wall-clock time: the parent turns it into seconds since it spawned this process."""
    print(f"phase {phase} {time.time():.6f}", flush=True)


def child(model: str, prompt: int, autotune: bool = False) -> None:
    mark("interpreter")
    import torch

    mark("import torch")

    from benchmarks.e2e import random_weights
    from conformance.catalogue import load
    from neurobrix.generate import Sampling, sample
    from neurobrix.gpu import detect_class
    from neurobrix.model import Transformer
    from neurobrix.run import certified_ops

    mark("import engine")
    cfg = load()[0][model]
    class_id = detect_class().id  # initialises CUDA
    mark("device")
    ops = certified_ops(cfg, class_id, "bf16", 1, prompt, prompt + 256)
    mark("plan")
    if autotune:
        print(f"autotuned {autotune_cost(cfg, prompt, class_id)} candidate timings", flush=True)
    model_ = Transformer(cfg, random_weights(cfg, torch.bfloat16, torch.device("cuda")), ops, 1, prompt + 256)
    tokens = torch.randint(0, cfg.vocab_size, (1, prompt), device="cuda")
    torch.cuda.synchronize()
    mark("weights")
    with torch.inference_mode():
        token = sample(model_.forward(tokens, torch.arange(prompt, device="cuda")[None], None), Sampling(), None)
    print(f"first token {int(token[0])}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--runs", type=int, default=3, help="runs in all: the first cold, the rest warm")
    parser.add_argument(
        "--autotune",
        action="store_true",
        help="also measure runs that autotune every prefill kernel call first (side by side)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-autotune", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.child:
        child(args.model, args.prompt, args.child_autotune)
        return
    from conformance.catalogue import load

    models = load()[0]
    if args.model not in models:  # else each run's child fails on it and the rows read NaN
        parser.error(f"--model {args.model}: not a catalogue model; one of {', '.join(sorted(models))}")
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("benchmarks.cold_start needs a GPU of a certified class")
    rows = []
    for mode in ("certified tables", "autotuning on first call") if args.autotune else ("certified tables",):
        cache = tempfile.mkdtemp(prefix="triton-cache-")  # each mode starts from a cold cache
        env = {**os.environ, "TRITON_CACHE_DIR": cache}
        extra = ["--child-autotune"] if mode != "certified tables" else []
        for n in range(args.runs):
            start, spawned = time.perf_counter(), time.time()
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.cold_start",
                    "--child",
                    "--model",
                    args.model,
                    "--prompt",
                    str(args.prompt),
                    *extra,
                ],
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
            seconds, note, phases = float("nan"), "", {}
            for line in proc.stdout:
                if line.startswith("phase "):
                    name, stamp = line[len("phase ") :].rsplit(" ", 1)
                    phases[name] = round(float(stamp) - spawned, 3)
                if line.startswith("autotuned"):
                    note = line.strip()
                if line.startswith("first token"):
                    seconds = time.perf_counter() - start
                    break
            proc.wait()
            row = {
                "model": args.model,
                "settings": mode,
                "triton_cache": "cold" if n == 0 else "warm",
                "start_to_first_token_s": round(seconds, 2),
                # each phase's end in seconds since the spawn: the interpreter up, torch imported, the
                # engine imported, CUDA initialised (the device read), the plan resolved (tables loaded,
                # the forward pass recorded), weights made; the rest is the first (eager) prefill, whose
                # kernels Triton loads from its cache (or compiles, cold)
                "phases_s": phases,
            }
            if note:
                row["autotune"] = note
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
