"""Prototype (2026-12-02e, kept for the record): the greedy pick's cost on the GPU, PyTorch's one-pass argmax
against greedy_pick's two passes at each possible part count, for the catalogue's vocabularies; each timed as
200 copies captured in one CUDA graph, replayed, CUDA events (us per pick, median of 5).

    PYTHONPATH=. python -m benchmarks.proto_pick --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch

from neurobrix.generate import capture_graph


def two_pass(logits: torch.Tensor, parts: int, out: torch.Tensor) -> None:
    B, vocab = logits.shape
    best, where = logits.view(B, parts, vocab // parts).max(dim=-1)
    part = best.argmax(dim=-1, keepdim=True)
    torch.add(where.gather(-1, part), part, alpha=vocab // parts, out=out)


def timed(fn, copies: int = 200) -> float:
    def many() -> None:
        for _ in range(copies):
            fn()

    graph, _ = capture_graph(many)
    graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(5):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / copies)
    return round(statistics.median(times), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, nargs="+", default=[32000, 32768, 128256, 151936, 152064])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--json")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("benchmarks.proto_pick needs a GPU")
    rows = []
    for vocab in args.vocab:
        for batch in args.batch:
            logits = torch.randn((batch, vocab), device="cuda").to(torch.bfloat16)
            out = torch.empty((batch, 1), dtype=torch.long, device="cuda")
            row = {"vocab": vocab, "batch": batch}
            row["argmax_us"] = timed(lambda: torch.argmax(logits, dim=-1, keepdim=True, out=out))
            for parts in [c for c in range(2, 4097) if vocab % c == 0 and 32 <= vocab // c <= 8192]:
                row[f"parts_{parts}_us"] = timed(lambda p=parts: two_pass(logits, p, out))
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
