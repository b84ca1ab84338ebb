"""How often a conformance check's judge reads a tensor back to the host, per example, for one kernel and shape
(the tensor reads a GPU check waits on: ``bool``, ``float``, ``int``, ``item``, ``tolist`` of a tensor). On a GPU
shared by a dozen check workers every such read waits its turn; this counts them on the interpreter, where the
judge's code is the same. Prints one line:

    TRITON_INTERPRET=1 python -m benchmarks.judge_reads rotary "T=16,H=40,D=128" "BLOCK_H=8,num_warps=4" --dtype fp16

A setting is given as its table writes it, any kernel's: ``variant=gemv,BLOCK_N=64,BLOCK_K=128,SPLIT_K=1,num_warps=4``
for linear (a name, ``true`` or ``false`` where the table has one); a mistake is one usage line.

(2026-12-06: rotary 125.9 reads an example before the one-read ``bounds.compare`` and the rope tables judged on the
CPU, 24.6 after (14 of them CPU tensors); attention_decode "B=2,S=300,D=64,G=4" with
"SPLITS=16,BLOCK_N=64,num_warps=4,num_stages=2": 17.0, then 5.0.)
"""

import argparse
from typing import Any

import torch


def _pairs(text: str) -> dict[str, int]:
    """``"T=16,H=40"`` as {"T": 16, "H": 40}, each at least 1 (argparse's type: a malformed one is a usage error, not a
    traceback; a dimension of 0 has no example to draw)."""
    try:
        pairs = {k.strip(): int(v) for k, v in (item.split("=") for item in text.split(",") if item.strip())}
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=INTEGER pairs, e.g. T=16,H=40,D=128") from None
    small = [f"{k}={v}" for k, v in pairs.items() if v < 1]
    if small:
        raise argparse.ArgumentTypeError(f"{text!r}: {', '.join(small)}: each dimension is an integer >= 1")
    return pairs


def _value(text: str) -> int | bool | str:
    """A setting's value as its table writes it: an integer, true or false, or a name (``variant=gemv``,
    ``MERGE=last``)."""
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        if not text.isidentifier():
            raise
        return text


def _setting(text: str) -> dict[str, int | bool | str]:
    """``"variant=gemv,BLOCK_N=64,num_warps=4"`` as a setting (argparse's type): the values its table holds, so that
    every kernel's settings can be given, linear's variant, MERGE and WARP_SPECIALIZE included."""
    try:
        return {k.strip(): _value(v.strip()) for k, v in (item.split("=") for item in text.split(",") if item.strip())}
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected NAME=VALUE pairs, each value an integer, true, false or a name, "
            "e.g. BLOCK_H=8,num_warps=4 or variant=gemv,BLOCK_N=64,BLOCK_K=128,SPLIT_K=1,num_warps=4"
        ) from None


def _count(text: str) -> int:
    """``--examples``: an integer >= 1 (0 divided by zero, a negative count printed -0.0 reads)."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an integer >= 1")
    return count


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.judge_reads", description=__doc__.split("\n\n")[0])
    parser.add_argument("kernel")
    parser.add_argument("shape", type=_pairs, help="the key's dimensions, e.g. T=16,H=40,D=128")
    parser.add_argument(
        "config", type=_setting, help="the setting, e.g. BLOCK_H=8,num_warps=4 (linear: variant=gemv,BLOCK_N=64,...)"
    )
    parser.add_argument("--dtype", default="fp16", choices=("fp32", "fp16", "bf16"))
    parser.add_argument("--examples", type=_count, default=8, help="examples to average over (default 8)")
    args = parser.parse_args()
    from conformance import harness
    from conformance.specs import RECORDS

    if args.kernel not in RECORDS:
        parser.error(f"no kernel {args.kernel!r}; the kernels: {', '.join(sorted(RECORDS))}")
    from neurobrix.ops import SPECS

    if set(args.shape) != set(SPECS[args.kernel].key):
        parser.error(f"{args.kernel}'s shape names {', '.join(SPECS[args.kernel].key)}, each once")
    from neurobrix.gpu import interpreter_enabled
    from neurobrix.plan import config_problem

    problem = config_problem(args.kernel, args.config)
    if problem:  # the launcher's own refusal, before any example is built (it was a traceback)
        parser.error(f"the setting {args.config} {problem}")
    if not torch.cuda.is_available() and not interpreter_enabled():
        parser.error("no GPU here and the Triton interpreter is off: run it with TRITON_INTERPRET=1 (or on a GPU)")
    if args.dtype == "bf16" and interpreter_enabled():  # as certify and run refuse it there
        parser.error("the Triton interpreter computes bf16 wrongly (a Triton bug): count fp16 here, bf16 on a GPU")

    reads = {"n": 0}
    for name in ("__bool__", "__float__", "__int__", "__index__", "item", "tolist"):
        plain = getattr(torch.Tensor, name)

        def counted(self: torch.Tensor, *a: Any, _plain: Any = plain, **k: Any) -> Any:
            reads["n"] += 1
            return _plain(self, *a, **k)

        setattr(torch.Tensor, name, counted)
    shape, config, total = args.shape, args.config, 0
    device = "cuda" if torch.cuda.is_available() else "cpu"
    for seed in range(args.examples):
        case = harness.build(args.kernel, args.dtype, shape, harness.Values(args.dtype, device, seed, ("normal",)))
        outputs = harness.run_kernel(case, config)
        reads["n"] = 0
        harness.judge(case, outputs, config)
        total += reads["n"]
    dims = ",".join(f"{k}={v}" for k, v in shape.items())
    print(f"{args.kernel} {args.dtype} {dims}: {total / args.examples:.1f} tensor reads an example in its judge")


if __name__ == "__main__":
    main()
