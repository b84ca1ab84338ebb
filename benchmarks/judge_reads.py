"""How often a conformance check's judge reads a tensor back to the host, per example, for one kernel and shape
(the tensor reads a GPU check waits on: ``bool``, ``float``, ``int``, ``item``, ``tolist`` of a tensor). On a GPU
shared by a dozen check workers every such read waits its turn; this counts them on the interpreter, where the
judge's code is the same. Prints one line:

    TRITON_INTERPRET=1 python -m benchmarks.judge_reads rotary "T=16,H=40,D=128" "BLOCK_H=8,num_warps=4" --dtype fp16

(2026-12-06: rotary 125.9 reads an example before the one-read ``bounds.compare`` and the rope tables judged on the
CPU, 24.6 after (14 of them CPU tensors); attention_decode "B=2,S=300,D=64,G=4" with
"SPLITS=16,BLOCK_N=64,num_warps=4,num_stages=2": 17.0, then 5.0.)
"""

import argparse
from typing import Any

import torch


def _pairs(text: str) -> dict[str, int]:
    """``"T=16,H=40"`` as {"T": 16, "H": 40} (argparse's type: a malformed one is a usage error, not a traceback)."""
    try:
        return {k.strip(): int(v) for k, v in (item.split("=") for item in text.split(",") if item.strip())}
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=INTEGER pairs, e.g. T=16,H=40,D=128") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernel")
    parser.add_argument("shape", type=_pairs, help="the key's dimensions, e.g. T=16,H=40,D=128")
    parser.add_argument("config", type=_pairs, help="the setting, e.g. BLOCK_H=8,num_warps=4")
    parser.add_argument("--dtype", default="fp16", choices=("fp32", "fp16", "bf16"))
    parser.add_argument("--examples", type=int, default=8)
    args = parser.parse_args()
    from conformance import harness
    from conformance.specs import RECORDS

    if args.kernel not in RECORDS:
        parser.error(f"no kernel {args.kernel!r}; the kernels: {', '.join(sorted(RECORDS))}")
    from neurobrix.ops import SPECS

    if set(args.shape) != set(SPECS[args.kernel].key):
        parser.error(f"{args.kernel}'s shape names {', '.join(SPECS[args.kernel].key)}, each once")

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
