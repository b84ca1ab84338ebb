"""Prototype (2026-12-03): would decode attention be faster in one launch, or with splits that follow the
filled length? Measured before any of it is built.

attention_decode made two launches a layer: the split kernel (one program per batch x kv head x split of the
cache capacity, each over the filled positions of its chunk only) and a merge. The split count is certified
per cache-capacity bucket and timed by certify on a full cache, while a run's cache is partly filled; and
SPLITS 1 still paid the merge launch (2026-12-03b call 1, at e6ad33a). Two variants:

  direct-N[sS]  SPLITS 1, BLOCK_N N (num_stages S, default 2): the split kernel normalises its accumulator and
                stores the output itself; no merge launch, no partials (the engine's kernel since 8a348c7).
  adapt         the certified setting, each program's chunk cut from the filled length (cdiv(length, SPLITS)
                rounded up to BLOCK_N) instead of the capacity, so every split has work at any fill (attention.py
                copied at run time with only that inserted, so the rest of the code is the engine's).

The engine's decode step (``GreedyDecoder``, a CUDA graph replay, PDL as the class says) runs with decode
attention swapped for a variant; logits are compared with the engine's and steps timed side by side, rounds
interleaved:

    PYTHONPATH=. python -m benchmarks.proto_attention [--model NAME ...] [--batch 1 8] [--filled 128 384]
    TRITON_INTERPRET=1 PYTHONPATH=. python -m benchmarks.proto_attention --check-only   # the copy on CPU
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import triton

import neurobrix.ops.attention as engine_attention
from benchmarks.proto_fuse import captured_steps, interleaved, report, summary
from benchmarks.proto_prefetch import _replace, import_copy


def patched_copy(where: Path) -> ModuleType:
    """attention.py with ADAPT (chunks cut from the filled length) in its decode split kernel, on by default so that
    the copy's own ``attention_decode`` launches it, imported from a file under ``where``. (SPLITS 1 storing its
    own output, the prototype's other variant, is the engine's kernel since 8a348c7.)"""
    text = Path(engine_attention.__file__).read_text()
    text = _replace(
        text,
        "    SPLITS: tl.constexpr, BLOCK_N: tl.constexpr,\n    PDL: tl.constexpr,\n):\n",
        "    SPLITS: tl.constexpr, BLOCK_N: tl.constexpr,\n    PDL: tl.constexpr,\n    ADAPT: tl.constexpr = 1,\n):\n",
        1,
    )
    text = _replace(
        text,
        "    start = split_id * chunk\n",
        "    if ADAPT:\n        chunk = tl.cdiv(tl.cdiv(length, SPLITS), BLOCK_N) * BLOCK_N\n"
        "    start = split_id * chunk\n",
        1,
    )
    return import_copy(text, where, "_proto_attention")


def decode(copy: ModuleType, q, k_cache, v_cache, lengths, scale, setting: dict[str, Any], pdl: bool, adapt: bool):
    """attention_decode with ``setting``: the engine's (SPLITS 1: one launch), or the copy's with ADAPT."""
    launcher = copy.attention_decode if adapt else engine_attention.attention_decode
    return launcher(q, k_cache, v_cache, lengths, scale, config=setting, pdl=pdl)


def variant_setting(variant: str, certified: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(setting, adapt) of a variant name, given the call's certified setting."""
    if variant == "adapt":
        return dict(certified), True
    block, _, stages = variant.removeprefix("direct-").partition("s")
    return {"SPLITS": 1, "BLOCK_N": int(block), "num_warps": 4, "num_stages": int(stages or 2)}, False


class Swapped:
    """The engine's certified ops with decode attention run by the copy as the variant says."""

    def __init__(self, base, settings, pdl: bool, copy: ModuleType, variant: str) -> None:
        self.base, self.settings, self.pdl, self.copy, self.variant = base, settings, pdl, copy, variant

    def __getattr__(self, name: str):
        return getattr(self.base, name)

    def attention_decode(self, q, k_cache, v_cache, lengths, scale):
        dtype, key = engine_attention.SPECS[2].key_of(q, k_cache, v_cache, lengths, scale)
        setting, adapt = variant_setting(self.variant, self.settings[("attention_decode", dtype, tuple(key))])
        return decode(self.copy, q, k_cache, v_cache, lengths, scale, setting, self.pdl, adapt)


def measure(copy: ModuleType, name: str, batch: int, filled: int, steps: int, variants: list[str]) -> dict:
    from benchmarks.e2e import random_weights
    from conformance.catalogue import load
    from neurobrix.gpu import detect_class
    from neurobrix.plan import generation_calls, resolve
    from neurobrix.tables import load as load_tables

    cfg = load()[0][name]
    weights = random_weights(cfg, torch.bfloat16, "cuda")
    capacity = 128 + 256 + 16  # the e2e benchmark's run: a 128-token prompt, 256 new tokens
    plan = resolve(generation_calls(cfg, batch, filled, capacity, "bf16"), load_tables(), detect_class().id)
    base = plan.ops()
    ops = {v: base if v == "engine" else Swapped(base, plan.settings, plan.pdl, copy, v) for v in variants}
    tokens = torch.arange(batch, device="cuda") * 7919 % cfg.vocab_size
    decoders, logits = captured_steps(cfg, weights, ops, batch, filled, capacity, tokens)
    ref = logits["engine"]
    scale = float(ref.abs().max())
    certified = {
        k[2]: v for k, v in plan.settings.items() if k[0] == "attention_decode" and k[1] == "bf16"
    }  # one key: the run's
    return {
        "model": name,
        "batch": batch,
        "filled": filled,
        "capacity": capacity,
        "certified": next(iter(certified.values())),
        **summary(interleaved(decoders, tokens, filled, steps, rounds=7)),
        "max_logit_diff_rel": {v: round(float((logits[v] - ref).abs().max()) / scale, 5) for v in variants},
    }


def check(copy: ModuleType) -> None:
    """Both variants against attention_decode_torch on small shapes (CPU under the interpreter, or a GPU)."""
    device = "cpu" if triton.knobs.runtime.interpret else "cuda"
    dtype = torch.float16 if device == "cpu" else torch.bfloat16
    gen = torch.Generator().manual_seed(0)
    for B, HQ, HKV, D, capacity in ((1, 4, 2, 64, 64), (3, 8, 2, 32, 128)):
        q = torch.randn(B, HQ, D, generator=gen).to(dtype).to(device)
        kc = torch.randn(B, capacity, HKV, D, generator=gen).to(dtype).to(device)
        vc = torch.randn(B, capacity, HKV, D, generator=gen).to(dtype).to(device)
        for length in (1, 17, capacity):
            lengths = torch.tensor([max(1, length - 5 * n) for n in range(B)], dtype=torch.int32, device=device)
            want = engine_attention.attention_decode_torch(q.float(), kc.float(), vc.float(), lengths, D**-0.5).double()
            for variant, setting in (
                ("direct", {"SPLITS": 1, "BLOCK_N": 16, "num_stages": 1}),
                ("adapt", {"SPLITS": 4, "BLOCK_N": 16, "num_stages": 1}),
            ):
                got = decode(copy, q, kc, vc, lengths, D**-0.5, setting, False, variant == "adapt")
                err = float((got.double() - want).abs().max())
                print(f"{variant} B={B} HQ={HQ} HKV={HKV} D={D} capacity {capacity} length {length}: error {err:.1e}")
                assert err < 2**-7, (variant, err)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--model",
        nargs="+",
        default=[
            "meta-llama/Llama-3.1-8B-Instruct",
            "meta-llama/Llama-3.2-1B-Instruct",
            "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
        ],
    )
    parser.add_argument("--batch", nargs="+", type=int, default=[8, 1])
    parser.add_argument("--filled", nargs="+", type=int, default=[128, 320], help="cache positions filled")
    parser.add_argument("--steps", type=int, default=200, help="replays a timed round")
    parser.add_argument(
        "--variants", nargs="+", default=["direct-32", "direct-64", "direct-128", "direct-64s3", "adapt"]
    )
    parser.add_argument("--check-only", action="store_true", help="check the variants on small shapes and stop")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    if not triton.knobs.runtime.interpret and not torch.cuda.is_available():
        print("proto_attention: needs a GPU (or TRITON_INTERPRET=1 with --check-only)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as where:
        copy = patched_copy(Path(where))
        check(copy)
        if args.check_only:
            return 0
        variants = ["engine", *args.variants]
        runs = (
            measure(copy, name, batch, filled, args.steps, variants)
            for name in args.model
            for batch in args.batch
            for filled in args.filled
        )
        return report(runs, args.json)


if __name__ == "__main__":
    sys.exit(main())
