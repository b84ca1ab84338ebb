"""Where one entry check's time goes: ``conformance.check.check_entry`` of one kernel, shape and setting under
cProfile, in this process alone (no check workers beside it), printing the seconds an example and the functions that
took the most time. For a kernel whose check is slow on a GPU (2026-12-06: rotary, 14 s an example on the H200
with 15 check workers, against 0.26 s on the interpreter here):

    python -m benchmarks.profile_check rotary "T=1,H=32,D=128" "BLOCK_H=8,num_warps=4" --dtype bf16 --examples 5

The shape names the entry's whole domain (each dimension one value); a setting is given as judge_reads takes it.
"""

import argparse
import cProfile
import io
import pstats
import time

import torch

from benchmarks.judge_reads import _count, _pairs, _setting


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("kernel")
    parser.add_argument("shape", type=_pairs, help="the key's dimensions, e.g. T=1,H=32,D=128")
    parser.add_argument("config", type=_setting, help="the setting, e.g. BLOCK_H=8,num_warps=4")
    parser.add_argument("--dtype", default="fp16", choices=("fp32", "fp16", "bf16"))
    parser.add_argument("--examples", type=_count, default=5, help="examples (default 5)")
    parser.add_argument("--profile", default="gpu", choices=("ci", "gpu"), help="the Hypothesis profile (default gpu)")
    parser.add_argument("--top", type=_count, default=30, help="functions printed (default 30)")
    args = parser.parse_args()
    from conformance import check
    from conformance.specs import RECORDS
    from neurobrix.gpu import interpreter_enabled
    from neurobrix.ops import SPECS
    from neurobrix.plan import config_problem
    from neurobrix.schema import Domain, Setting

    if args.kernel not in RECORDS:
        parser.error(f"no kernel {args.kernel!r}; the kernels: {', '.join(sorted(RECORDS))}")
    if set(args.shape) != set(SPECS[args.kernel].key):
        parser.error(f"{args.kernel}'s shape names {', '.join(SPECS[args.kernel].key)}, each once")
    problem = config_problem(args.kernel, args.config)
    if problem:
        parser.error(f"the setting {args.config} {problem}")
    if not torch.cuda.is_available() and not interpreter_enabled():
        parser.error("no GPU here and the Triton interpreter is off: run it with TRITON_INTERPRET=1 (or on a GPU)")
    if args.dtype == "bf16" and interpreter_enabled():
        parser.error("the Triton interpreter computes bf16 wrongly (a Triton bug): profile fp16 here, bf16 on a GPU")
    ranges = tuple((d, args.shape[d], args.shape[d]) for d in SPECS[args.kernel].key)
    entry = Setting(Domain((args.dtype,), ranges), args.config)
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    result = check.check_entry(args.kernel, entry, args.dtype, args.examples, args.profile, shrink=False)
    profiler.disable()
    seconds = time.perf_counter() - start
    print(
        f"{args.kernel} {entry.domain.describe()} {args.config}: {'passed' if result.passed else 'FAILED'}, "
        f"{result.examples} examples, {seconds:.2f} s, {seconds / max(result.examples, 1):.3f} s an example"
    )
    for order in ("cumulative", "tottime"):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(args.top)
        print(f"--- by {order}\n" + text.getvalue().split("\n\n", 2)[-1].strip())


if __name__ == "__main__":
    main()
