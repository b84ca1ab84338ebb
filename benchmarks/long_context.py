"""Long contexts: a prompt of thousands of tokens prefilled (in chunks, on the certified path), then decode
over the long KV cache, side by side with PyTorch on the same weights in the same process.

    PYTHONPATH=. python -m benchmarks.long_context --model meta-llama/Llama-3.1-8B-Instruct \
        --prompt 8000 30000 --new 128 --json long.json

For each prompt length, batch 1, random bf16 weights, KV cache of prompt + new positions:
* ``triton``: the engine on its certified plan (preflight resolves every call, chunks included), time
  to first token of the prompt (prefill in chunks of ``neurobrix.model.chunk_length``), then greedy
  decode replayed as a CUDA graph;
* ``torch``: the same engine on PyTorch's kernels with the whole prompt in one pass, so the prefill is
  cuBLAS projections and SDPA's causal flash attention (``is_causal=True``) over the whole prompt; its
  decode is SDPA over the cache with a mask, inside a CUDA graph.
Decode is also held against the HBM roofline: the bytes a step must read (every weight matrix, the
output head, and the filled KV cache at the decode's mean length) over the device-to-device copy rate
measured in the same run. Time to first token is the median of the repeats (min and max kept).
Benchmark code: it times; the engine never does.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

from neurobrix.generate import Sampling, generate_batch
from neurobrix.gpu import detect_class
from neurobrix.model import Transformer, chunk_length
from neurobrix.ops import TORCH
from neurobrix.run import certified_ops

from .e2e import kv_bytes_per_step, random_weights


def copy_rate() -> float:
    """Device-to-device copy bytes per second (read + write), best of 10 copies of 1 GiB."""
    src = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(10):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1000)
    del src, dst
    return 2 * 2**30 / best


def weight_bytes_per_step(weights) -> int:
    """Bytes of every matrix a decode step reads whole: the layers' projections and the output head."""
    total = weights.lm_head.numel() * weights.lm_head.element_size()
    for layer in weights.layers:
        for t in (layer.qkv, layer.o, layer.gate_up, layer.down):
            total += t.numel() * t.element_size()
    return total


def measure(cfg, weights, backend: str, prompt: list[int], new: int, repeats: int) -> dict:
    capacity = len(prompt) + new
    if backend == "triton":
        ops, chunk = certified_ops(cfg, detect_class().id, "bf16", 1, len(prompt), capacity), None
    else:
        ops, chunk = TORCH, len(prompt)  # one pass: SDPA's flash kernel over the whole prompt
    model = Transformer(cfg, weights, ops, batch=1, capacity=capacity, chunk=chunk)
    generate_batch(model, [prompt], 4, Sampling(), set(), use_graph=True)  # compile, load, warm up
    ttfts = []
    for _ in range(repeats):
        _, stats = generate_batch(model, [prompt], 1, Sampling(), set())
        ttfts.append(stats.time_to_first_token_s * 1000)
    model = Transformer(cfg, weights, ops, batch=1, capacity=capacity, chunk=chunk)
    outs, stats = generate_batch(model, [prompt], new, Sampling(), set(), use_graph=True)
    del model
    torch.cuda.empty_cache()
    return {
        "prefill_chunk": chunk_length(1) if chunk is None else chunk,
        "ttft_ms": round(statistics.median(ttfts), 1),
        "ttft_ms_min": round(min(ttfts), 1),
        "ttft_ms_max": round(max(ttfts), 1),
        "prefill_tok_s": round(len(prompt) / (statistics.median(ttfts) / 1000)),
        "decode_tok_s": round(stats.decode_tokens_per_s, 1),
        "generated": len(outs[0]),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="meta-llama/Llama-3.1-8B-Instruct", help="a catalogue model's shape")
    parser.add_argument("--prompt", type=int, nargs="+", default=[8000, 30000], help="prompt lengths (tokens)")
    parser.add_argument("--new", type=int, default=128, help="tokens decoded after each prompt")
    parser.add_argument("--repeats", type=int, default=3, help="timed prefills per prompt and backend")
    parser.add_argument("--backends", nargs="+", default=["triton", "torch"], choices=["triton", "torch"])
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("benchmarks.long_context needs a GPU of a certified class")
    from conformance.catalogue import load

    cfg = load()[0][args.model]
    rate = copy_rate()
    weights = random_weights(cfg, torch.bfloat16, "cuda")
    per_step = weight_bytes_per_step(weights)
    rows = []
    with torch.inference_mode():
        for length in args.prompt:
            gen = torch.Generator().manual_seed(length)
            prompt = torch.randint(0, cfg.vocab_size, (length,), generator=gen).tolist()
            row: dict = {"model": args.model, "prompt": length, "new": args.new, "capacity": length + args.new}
            for backend in args.backends:
                started = time.perf_counter()
                row[backend] = measure(cfg, weights, backend, prompt, args.new, args.repeats)
                row[backend]["wall_s"] = round(time.perf_counter() - started, 1)
            step_bytes = per_step + kv_bytes_per_step(cfg, 1, length + args.new / 2)
            row["roofline_tok_s"] = round(rate / step_bytes, 1)
            for backend in args.backends:
                row[backend]["of_roofline"] = round(row[backend]["decode_tok_s"] / row["roofline_tok_s"], 3)
            if "torch" in row and "triton" in row:
                row["prefill_ratio"] = round(row["torch"]["ttft_ms"] / row["triton"]["ttft_ms"], 3)
                row["decode_ratio"] = round(row["triton"]["decode_tok_s"] / row["torch"]["decode_tok_s"], 3)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"copy rate {rate / 1e12:.2f} TB/s; decode step reads {per_step / 1e9:.2f} GB of weights plus the KV cache")
    print(f"{'prompt':>7} {'backend':>7} {'TTFT ms':>9} {'prefill tok/s':>13} {'decode tok/s':>12} {'of roofline':>11}")
    for row in rows:
        for backend in args.backends:
            r = row[backend]
            print(
                f"{row['prompt']:>7} {backend:>7} {r['ttft_ms']:>9} {r['prefill_tok_s']:>13} {r['decode_tok_s']:>12} "
                f"{r['of_roofline']:>11}"
            )
        if "prefill_ratio" in row:
            print(f"{row['prompt']:>7} certified/torch: prefill {row['prefill_ratio']}x, decode {row['decode_ratio']}x")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"copy_rate_Bps": rate, "weight_bytes_per_step": per_step, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
