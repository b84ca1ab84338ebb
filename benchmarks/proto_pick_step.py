"""Prototype (2026-12-04): the greedy pick and the step's position bump as one Triton kernel inside the decode step.

The engine's greedy step (``GreedyDecoder._step``) ends with PyTorch's pick (one argmax, or for rows of 65,536-131,071
logits two passes: a max, an argmax and a gather-add) and ``state.add_(1)``: 2-4 kernels, none of them launched
early under programmatic dependent launch. Here one Triton kernel does all of it: (PARTS, B) programs each take
BLOCK logits of a row, store their largest value and its first index, count their arrival; the row's last program
to arrive picks the first part holding the row's largest value, writes the token and moves the row's position and
length on by one (the arrival counter of linear's MERGE "last"). The engine's step against the same step with this
kernel, both captured as the engine captures them, timed in interleaved rounds; the tokens of 32 steps compared.
Settings are fixed here (a prototype, not the engine):

    PYTHONPATH=. python -m benchmarks.proto_pick_step --pairs meta-llama/Llama-3.2-1B-Instruct:1 [--json out.json]
"""

from __future__ import annotations

import argparse
import sys

import torch
import triton
import triton.language as tl

from benchmarks.proto_fuse import decode_setup, report, summary
from conformance.rank import captured_steps, interleaved
from neurobrix.generate import GreedyDecoder, capture_graph
from neurobrix.ops._common import dependent_launch


@triton.jit
def _pick_kernel(
    logits_ptr,
    stride,
    tokens_ptr,
    state_ptr,
    B,
    VOCAB,
    part_val,
    part_idx,
    counter,
    BLOCK: tl.constexpr,
    PARTS: tl.constexpr,
    PARTS_P2: tl.constexpr,
    PDL: tl.constexpr,
):
    dependent_launch(PDL)
    p = tl.program_id(0)
    b = tl.program_id(1)
    offs = p * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(logits_ptr + b * stride + offs, mask=offs < VOCAB, other=float("-inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    first = tl.min(tl.where(x == m, offs, VOCAB), axis=0)
    tl.store(part_val + b * PARTS + p, m)
    tl.store(part_idx + b * PARTS + p, first)
    tl.debug_barrier()
    arrived = tl.atomic_add(counter + b, 1, sem="acq_rel", scope="gpu")
    if arrived == PARTS - 1:
        r = tl.arange(0, PARTS_P2)
        v = tl.load(part_val + b * PARTS + r, mask=r < PARTS, other=float("-inf"), cache_modifier=".cg")
        j = tl.load(part_idx + b * PARTS + r, mask=r < PARTS, other=VOCAB, cache_modifier=".cg")
        best = tl.min(tl.where(v == tl.max(v, axis=0), j, VOCAB), axis=0)
        tl.store(tokens_ptr + b, best.to(tl.int64))
        tl.store(state_ptr + b, tl.load(state_ptr + b) + 1)
        tl.store(state_ptr + B + b, tl.load(state_ptr + B + b) + 1)
        tl.atomic_xchg(counter + b, 0, sem="relaxed", scope="gpu")


class TritonPickDecoder(GreedyDecoder):
    """GreedyDecoder whose step ends with ``_pick_kernel`` instead of PyTorch's pick and ``state.add_(1)``."""

    def __init__(self, model, batch: int, block: int, warps: int, pdl: bool) -> None:
        super().__init__(model, batch, use_graph=True)
        vocab = model.w.lm_head.shape[0]
        self.block, self.warps, self.pdl, self.vocab = block, warps, pdl, vocab
        self.parts = triton.cdiv(vocab, block)
        device = self.tokens.device
        self.part_val = torch.empty((batch, self.parts), dtype=torch.float32, device=device)
        self.part_idx = torch.empty((batch, self.parts), dtype=torch.int32, device=device)
        self.counter = torch.zeros((batch,), dtype=torch.int32, device=device)

    def _step(self) -> None:
        logits = self.model.forward(self.tokens, self.state[0][:, None], self.state[1])
        B = logits.shape[0]
        _pick_kernel[(self.parts, B)](
            logits,
            logits.stride(0),
            self.tokens,
            self.state,
            B,
            self.vocab,
            self.part_val,
            self.part_idx,
            self.counter,
            BLOCK=self.block,
            PARTS=self.parts,
            PARTS_P2=triton.next_power_of_2(self.parts),
            PDL=self.pdl,
            num_warps=self.warps,
            launch_pdl=self.pdl,
        )


class TorchPickDecoder(GreedyDecoder):
    """GreedyDecoder's step before the op greedy_pick: PyTorch's pick, then ``state.add_(1)``."""

    def __init__(self, model, batch: int) -> None:
        super().__init__(model, batch, use_graph=True)

    def _step(self) -> None:
        from neurobrix.ops.pick import pick_rows

        logits = self.model.forward(self.tokens, self.state[0][:, None], self.state[1])
        pick_rows(logits, out=self.tokens)
        self.state.add_(1)


# "torch-pick": the step as it was before (2026-12-04, the engine now runs the op greedy_pick)
VARIANTS = {"b2048w4": (2048, 4), "b4096w4": (4096, 4), "b4096w8": (4096, 8), "b8192w8": (8192, 8), "torch-pick": None}


def measure(name: str, batch: int, filled: int, steps: int, variants: list[str]) -> dict:
    cfg, weights, capacity, plan, ops, tokens = decode_setup(name, batch, filled, steps)
    decoders, _ = captured_steps(cfg, weights, {"engine": ops}, batch, filled, capacity, tokens)
    model = decoders["engine"].model
    for variant in variants:
        if VARIANTS[variant] is None:
            decoder = TorchPickDecoder(model, batch)
        else:
            block, warps = VARIANTS[variant]
            decoder = TritonPickDecoder(model, batch, block, warps, plan.pdl)
        decoder.start(tokens, filled)
        decoder.graph, _ = capture_graph(decoder._step)
        decoders[variant] = decoder
    same = {}
    for variant, decoder in decoders.items():  # 32 steps from the same start: the same tokens
        decoder.start(tokens, filled)
        seq = [decoder.step().clone() for _ in range(32)]
        same[variant] = torch.cat(seq, dim=1)
    agree = {v: bool(torch.equal(same[v], same["engine"])) for v in decoders}
    times = interleaved(decoders, tokens, filled, steps, rounds=7)
    return {
        "model": name,
        "batch": batch,
        "filled": filled,
        "vocab": cfg.vocab_size,
        **summary(times),
        "same_tokens": agree,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", nargs="+", required=True, metavar="MODEL:BATCH")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--filled", type=int, default=128)
    parser.add_argument("--steps", type=int, default=300, help="replays per timing round")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        parser.exit(2, "benchmarks.proto_pick_step needs a GPU\n")
    pairs = [(p.rsplit(":", 1)[0], int(p.rsplit(":", 1)[1])) for p in args.pairs]
    return report((measure(m, b, args.filled, args.steps, args.variants) for m, b in pairs), args.json)


if __name__ == "__main__":
    sys.exit(main())
