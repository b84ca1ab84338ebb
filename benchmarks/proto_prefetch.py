"""Prototype (2026-12-03): would the decode projections start faster if each program asked L2 for the first
few K steps of its weight slice while it waits on its predecessor? Measured before any of it is built.

Under programmatic dependent launch (the H200 class's launch feature) a projection's programs become resident
while the kernel before it (a norm, SiLU-mul, attention's merge: small, latency-bound kernels) still runs, and
wait there (``griddepcontrol.wait``) before touching memory. Weights are never written by a kernel, so a
program may prefetch them before that wait: a prefetch reads nothing into the program and changes no value.
2026-12-02b tried prefetching each program's whole slice line by line (``prefetch.global.L2`` per 128-byte
line over all of K): 0.67-0.96x, the issue itself and L2 thrash costing more than the pause. Here only the first
``STEPS`` K steps of the slice (what the software pipeline loads first) are asked for, either

  line   one ``prefetch.global.L2`` per 128-byte line of W[rows, k_first : k_first + STEPS x BLOCK_K], or
  bulk   one ``cp.async.bulk.prefetch.L2.global`` per row of that span (Hopper's bulk copy engine).

The kernels are linear.py's gemv and skinny kernels, copied from the source at run time with only the prefetch
inserted before ``dependent_launch`` (the copy is written to a temporary file and imported as a module of
``neurobrix.ops``, so the launch code is the engine's own). The engine's decode step (``GreedyDecoder``, a CUDA
graph replay) runs with decode projections swapped for the copy; logits must be bit-identical to the
engine's; steps are timed side by side, rounds interleaved:

    PYTHONPATH=. python -m benchmarks.proto_prefetch [--model NAME ...] [--batch 1 8] [--json out.json]
    TRITON_INTERPRET=1 PYTHONPATH=. python -m benchmarks.proto_prefetch --check-only   # the copy on CPU
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import triton

import neurobrix.ops.linear as engine_linear
from benchmarks.proto_fuse import captured_steps, decode_setup, interleaved, report, summary

PREFETCH = '''

@triton.jit
def _prefetch_first_steps(w_ptr, offs_n, N, stride_wn, k_first, k_last,
                          BLOCK_K: tl.constexpr, STEPS: tl.constexpr, BULK: tl.constexpr):
    """Ask L2 for W[offs_n, k_first : k_first + STEPS * BLOCK_K] (clamped to the slice and the rows)."""
    rows = tl.minimum(offs_n, N - 1)
    if BULK:
        span = (tl.minimum(k_first + STEPS * BLOCK_K, k_last) - k_first) * 2 // 16 * 16  # bytes, 16-byte multiple
        sizes = tl.full(rows.shape, 0, tl.int32) + span.to(tl.int32)
        tl.inline_asm_elementwise(
            "{ .reg .pred p; setp.gt.s32 p, $2, 0; @p cp.async.bulk.prefetch.L2.global [$1], $2; mov.b32 $0, 0; }",
            "=r,l,r", [w_ptr + rows * stride_wn + k_first, sizes], dtype=tl.int32, is_pure=False, pack=1,
        )
    else:
        LINE: tl.constexpr = 64  # bf16 elements in a 128-byte line
        cols = tl.minimum(k_first + tl.arange(0, STEPS * BLOCK_K // LINE) * LINE, k_last - 1)
        tl.inline_asm_elementwise(
            "mov.b32 $0, 0;\\n\\tprefetch.global.L2 [$1];", "=r,l", [w_ptr + rows[:, None] * stride_wn + cols[None, :]],
            dtype=tl.int32, is_pure=False, pack=1,
        )

'''


def _replace(text: str, old: str, new: str, count: int) -> str:
    found = text.count(old)
    if found != count:
        raise RuntimeError(f"proto_prefetch: linear.py changed: {old!r} occurs {found} times, expected {count}")
    return text.replace(old, new)


def prefetching_copy(where: Path) -> ModuleType:
    """linear.py with the prefetch inserted into its gemv and skinny kernels (``PF_STEPS`` 0: none), imported
    as ``neurobrix.ops._proto_prefetch`` from a file under ``where`` (Triton reads a kernel's source file)."""
    text = Path(engine_linear.__file__).read_text()
    text = _replace(
        text,
        "MERGE: tl.constexpr, PDL: tl.constexpr,\n):\n    dependent_launch(PDL)\n",
        "MERGE: tl.constexpr, PDL: tl.constexpr,\n    PF_STEPS: tl.constexpr = 0, PF_BULK: tl.constexpr = 0,\n):\n",
        2,
    )
    text = _replace(
        text,
        "    k_end = tl.minimum(k_start + k_per_split, K)\n",
        "    k_end = tl.minimum(k_start + k_per_split, K)\n    if PF_STEPS:\n"
        "        _prefetch_first_steps(w_ptr, offs_n, N, stride_wn, k_start, k_end, BLOCK_K, PF_STEPS, PF_BULK)\n"
        "    dependent_launch(PDL)\n",
        1,
    )
    text = _replace(
        text,
        "    k_last = tl.minimum(k_first + k_slice, K)\n    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n",
        "    k_last = tl.minimum(k_first + k_slice, K)\n    if PF_STEPS:\n"
        "        _prefetch_first_steps(w_ptr, offs_n, N, stride_wn, k_first, k_last, BLOCK_K, PF_STEPS, PF_BULK)\n"
        "    dependent_launch(PDL)\n    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n",
        1,
    )
    text = _replace(
        text,
        "HAS_BIAS=bias is not None, **meta, **launch,",
        "HAS_BIAS=bias is not None, PF_STEPS=PF[0], PF_BULK=PF[1], **meta, **launch,",
        1,
    )
    text = _replace(
        text,
        "            _linear_skinny_kernel[programs](\n"
        "                x, weight, b, y, part, counters, M, N, K, x.stride(0), weight.stride(0), y.stride(0),\n"
        "                HAS_BIAS=bias is not None, PRECISION=dot_precision(dtype), **meta, **launch,",
        "            _linear_skinny_kernel[programs](\n"
        "                x, weight, b, y, part, counters, M, N, K, x.stride(0), weight.stride(0), y.stride(0),\n"
        "                HAS_BIAS=bias is not None, PRECISION=dot_precision(dtype), PF_STEPS=PF[0], PF_BULK=PF[1],"
        " **meta, **launch,",
        1,
    )
    text = _replace(
        text,
        "\n\n@triton.jit\ndef _merge_if_last(",
        PREFETCH + "\nPF = [0, 0]\n\n\n@triton.jit\ndef _merge_if_last(",
        1,
    )
    return import_copy(text, where, "_proto_prefetch")


def import_copy(text: str, where: Path, name: str) -> ModuleType:
    """``text`` (a copy of an op file) imported as ``neurobrix.ops.<name>`` from a file under ``where`` (Triton
    reads a kernel's source file; the copy's relative imports resolve in the engine's package)."""
    path = where / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"neurobrix.ops.{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class Prefetching:
    """The engine's certified ops, decode projections (gemv and skinny settings) run by the copy with the
    variant's prefetch; every other call goes to the engine's op."""

    def __init__(self, base, settings, pdl: bool, copy: ModuleType, steps: int, bulk: bool) -> None:
        self.base, self.settings, self.pdl, self.copy, self.pf = base, settings, pdl, copy, (steps, int(bulk))

    def __getattr__(self, name: str):
        return getattr(self.base, name)

    def linear(self, x, w, b=None):
        dtype, key = engine_linear.key_of(x, w, b)
        setting = self.settings[("linear", dtype, tuple(key))]
        if setting.get("variant") not in ("gemv", "skinny"):
            return self.base.linear(x, w, b)
        self.copy.PF[:] = self.pf  # read at launch (capture), which runs now
        return self.copy.linear(x, w, b, config=setting, pdl=self.pdl)


VARIANTS = {
    "engine": None,
    "copy": (0, False),
    "line1": (1, False),
    "line2": (2, False),
    "line3": (4, False),
    "bulk1": (1, True),
    "bulk2": (2, True),
    "bulk4": (4, True),
    "bulk8": (8, True),
}


def measure(name: str, batch: int, filled: int, steps: int, variants: list[str], copy: ModuleType) -> dict:
    cfg, weights, capacity, plan, base, tokens = decode_setup(name, batch, filled, steps)
    ops = {}
    for variant in variants:
        pf = VARIANTS[variant]
        ops[variant] = base if pf is None else Prefetching(base, plan.settings, plan.pdl, copy, *pf)
    decoders, logits = captured_steps(cfg, weights, ops, batch, filled, capacity, tokens)
    identical = {v: bool(torch.equal(logits[v], logits["engine"])) for v in variants}
    times = interleaved(decoders, tokens, filled, steps, rounds=9)
    return {
        "model": name,
        "batch": batch,
        "filled": filled,
        **summary(times),
        "logits_identical": identical,
    }


def check_copy(copy: ModuleType) -> None:
    """The copy without prefetch against the engine's kernels on small shapes (the interpreter has no PTX)."""
    device = "cpu" if triton.knobs.runtime.interpret else "cuda"
    dtype = torch.float16 if device == "cpu" else torch.bfloat16
    gen = torch.Generator().manual_seed(0)
    settings: list[dict[str, Any]] = [
        {"variant": "gemv", "BLOCK_N": 32, "BLOCK_K": 64, "SPLIT_K": 2, "num_warps": 4},
        {
            "variant": "skinny",
            "BLOCK_M": 16,
            "BLOCK_N": 32,
            "BLOCK_K": 32,
            "SPLIT_K": 2,
            "MERGE": "last",
            "num_warps": 4,
            "num_stages": 2,
        },
    ]
    pfs = [(0, 0)] if device == "cpu" else [(0, 0), (2, 0), (2, 1)]
    for setting in settings:
        for pf in pfs:
            x = torch.randn(3, 256, generator=gen).to(dtype).to(device)
            w = torch.randn(96, 256, generator=gen).to(dtype).to(device)
            copy.PF[:] = pf
            got = copy.linear(x, w, config=setting)
            want = engine_linear.linear(x, w, config=setting)
            print(f"{setting['variant']} prefetch {pf}: identical {torch.equal(got, want)}")
            assert torch.equal(got, want)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", nargs="+", default=["meta-llama/Llama-3.2-1B-Instruct"])
    parser.add_argument("--batch", nargs="+", type=int, default=[1, 8])
    parser.add_argument("--filled", type=int, default=128, help="cache positions filled before the step")
    parser.add_argument("--steps", type=int, default=300, help="replays a timed round")
    parser.add_argument(
        "--variants",
        nargs="+",
        default=[v for v in VARIANTS if v != "engine"],
        choices=[v for v in VARIANTS if v != "engine"],
    )
    parser.add_argument("--check-only", action="store_true", help="check the copy on small shapes and stop")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as where:
        copy = prefetching_copy(Path(where))
        if not triton.knobs.runtime.interpret and not torch.cuda.is_available():
            print("proto_prefetch: needs a GPU (or TRITON_INTERPRET=1 with --check-only)", file=sys.stderr)
            return 1
        check_copy(copy)
        if args.check_only:
            return 0
        variants = ["engine", *args.variants]
        runs = (
            measure(name, batch, args.filled, args.steps, variants, copy) for name in args.model for batch in args.batch
        )
        return report(runs, args.json)


if __name__ == "__main__":
    sys.exit(main())
