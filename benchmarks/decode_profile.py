"""Where a decode step's time goes: the kernels of one captured step, by op, on the certified path (or on
PyTorch's kernels), for a catalogue model shape (random bf16 weights).

    PYTHONPATH=. python -m benchmarks.decode_profile [--model NAME ...] [--batch 1] [--json out.json]

For each backend the engine's greedy decode step is captured as a CUDA graph as a run captures it
(``GreedyDecoder``: each token picked on the device) over a cache filled to the prompt length (default
128 positions, every replay starting there again: its feed, a copy and two fills, is timed with it), then:
a step timed by CUDA events over --steps replays queued back to back, median of 5 rounds (tok/s = batch /
step), and the kernels of --profiled replays recorded by the PyTorch profiler (CUPTI): each kernel's
duration, summed per step and grouped by its name (``linear``: the projections and the output head, the split-K merge
included; ``attention``; ``norm``; ``rotary``; ``silu_mul``; ``argmax``, the greedy pick; ``embedding``;
``other``, e.g. the positions a replay computes). Kernels replayed from a graph carry no op of their own,
so the groups follow kernel names: exact for this engine's kernels; on ``--backends torch`` PyTorch's
attention matmuls are cuBLAS kernels too and land in ``linear``. ``busy`` is the union of the kernels'
intervals, so step - busy is the time no kernel ran. Under programmatic dependent launch (``triton``, on
a class whose launch features say so) a kernel starts before its predecessor ends and waits inside, and
its duration includes that wait: the kernels' own work is what ``triton-serial`` (the same settings, PDL
off) measures.
The HBM floor is the step's bytes (weights, plus the KV cache read) at --bandwidth TB/s.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import statistics
import sys

import torch

from benchmarks.e2e import kv_bytes_per_step, random_weights
from benchmarks.long_context import weight_bytes_per_step
from conformance.catalogue import load
from neurobrix.generate import GreedyDecoder
from neurobrix.gpu import detect_class
from neurobrix.model import Transformer, meta_weights
from neurobrix.ops import TORCH
from neurobrix.plan import generation_calls, resolve
from neurobrix.tables import load as load_tables

GROUPS = (  # kernel name (Triton's function name, or PyTorch's/cuBLAS's) -> what it does; first match wins
    ("attention", re.compile(r"attention|flash|fmha|sdpa|softmax", re.I)),
    ("linear", re.compile(r"linear|gemv|gemm|nvjet|sm90_xmma|cutlass|splitK|splitk|cublas", re.I)),
    ("norm", re.compile(r"rms|norm|pow|mean|rsqrt", re.I)),
    ("rotary", re.compile(r"rotary|rope", re.I)),
    ("silu_mul", re.compile(r"silu", re.I)),
    ("argmax", re.compile(r"argmax|greedy_pick", re.I)),  # the greedy pick of each step's token, on the device
    ("embedding", re.compile(r"index_?select", re.I)),
)


def group_of(name: str) -> str:
    return next((g for g, pattern in GROUPS if pattern.search(name)), "other")


def step_bytes(cfg, batch: int, filled: int) -> float:
    """What a decode step reads (bf16): every matrix once, and the K and V cache rows."""
    return weight_bytes_per_step(meta_weights(cfg, torch.bfloat16)) + kv_bytes_per_step(cfg, batch, filled)


def profile_backend(cfg, weights, backend: str, batch: int, filled: int, steps: int, profiled: int) -> dict:
    capacity = filled + steps + profiled + 8
    ops = TORCH
    if backend.startswith("triton"):
        plan = resolve(generation_calls(cfg, batch, filled, capacity, "bf16"), load_tables(), detect_class().id)
        if backend == "triton-serial":  # the same settings, each kernel waiting for the previous one to end
            plan = dataclasses.replace(plan, pdl=False)
        ops = plan.ops()
    model = Transformer(cfg, weights, ops, batch=batch, capacity=capacity)
    # the run's own decode (greedy): one step a replay, each token picked on the device
    decoder = GreedyDecoder(model, batch, use_graph=True)
    tokens = torch.arange(batch, device="cuda") * 7919 % cfg.vocab_size  # any tokens: the work is the same
    decoder.capture(filled)

    def replay() -> None:
        decoder.start(tokens, filled)  # from the same position each time: the same work each replay
        decoder.step()

    for _ in range(4):  # warm
        replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(5):  # 5 rounds of back-to-back replays (the host queues ahead, as a run does)
        start.record()
        for _ in range(steps):
            replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / steps)
    step_us = statistics.median(times)
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(profiled):
            replay()
        torch.cuda.synchronize()
    kernels = [
        e
        for e in prof.events()
        if e.device_type == torch.autograd.DeviceType.CUDA and "Memcpy" not in e.name and "Memset" not in e.name
    ]
    by_group: dict[str, float] = {}
    by_kernel: dict[str, list[float]] = {}
    for e in kernels:
        by_group[group_of(e.name)] = by_group.get(group_of(e.name), 0.0) + e.time_range.elapsed_us() / profiled
        by_kernel.setdefault(e.name, []).append(e.time_range.elapsed_us())
    intervals = sorted((e.time_range.start, e.time_range.end) for e in kernels)
    busy, cur_s, cur_e = 0.0, None, None
    for s, t in intervals:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = s, t
        else:
            cur_e = max(cur_e, t)
    if cur_e is not None:
        busy += cur_e - cur_s
    launches = len(kernels) / profiled
    return {
        "backend": backend,
        "step_us": round(step_us, 1),
        "step_us_spread": [round(min(times), 1), round(max(times), 1)],
        "tok_s": round(batch / step_us * 1e6, 1),
        "kernels_per_step": launches,
        "kernels_per_layer": round(launches / cfg.num_layers, 2),
        "kernel_us_by_group": {g: round(v, 1) for g, v in sorted(by_group.items(), key=lambda kv: -kv[1])},
        "kernel_us_sum": round(sum(by_group.values()), 1),
        "busy_us": round(busy / profiled, 1),
        "top_kernels": sorted(
            ([name[:80], len(v) // profiled, round(sum(v) / profiled, 1)] for name, v in by_kernel.items()),
            key=lambda r: -r[2],
        )[:12],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", nargs="+", default=["TinyLlama/TinyLlama-1.1B-Chat-v1.0", "meta-llama/Llama-3.2-1B-Instruct"]
    )
    parser.add_argument("--batch", type=int, nargs="+", default=[1])
    parser.add_argument("--filled", type=int, default=128, help="cache positions filled before the step")
    parser.add_argument("--steps", type=int, default=200, help="replays timed by CUDA events")
    parser.add_argument("--profiled", type=int, default=20, help="replays recorded by the profiler")
    parser.add_argument("--backends", nargs="+", default=["triton"], choices=["triton", "triton-serial", "torch"])
    parser.add_argument("--bandwidth", type=float, default=4.8, help="HBM TB/s for the floor (H200: 4.8)")
    parser.add_argument("--json")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("benchmarks.decode_profile needs a GPU of a certified class")
    catalogue, _ = load()
    rows = []
    for name in args.model:
        cfg = catalogue[name]
        weights = random_weights(cfg, torch.bfloat16, torch.device("cuda"))
        for batch in args.batch:
            floor_us = step_bytes(cfg, batch, args.filled) / (args.bandwidth * 1e12) * 1e6
            for backend in args.backends:
                row = {
                    "model": name,
                    "batch": batch,
                    "hbm_floor_us": round(floor_us, 1),
                    **profile_backend(cfg, weights, backend, batch, args.filled, args.steps, args.profiled),
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
