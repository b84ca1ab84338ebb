"""Does ``neurobrix.kernel_code`` hold a GPU's compiled kernels to their files without refusing them? On a machine
with a GPU (the interpreter off), each kernel is launched with a few of the nvidia-h200 class's settings at each
setting's smallest shape, and the check runs before and after the launches (its time printed, in ms). Triton's
``JITFunction`` (what the check compares with the file on a GPU) is not what the interpreter makes, so the CPU tests
cannot show this.

    PYTHONPATH=. python -m benchmarks.probe_kernel_code [--per-kernel 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-kernel", type=int, default=3, help="settings launched per kernel (default 3)")
    parser.add_argument("--class-id", default="nvidia-h200", help="the class whose settings are launched")
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()

    import torch

    from conformance.harness import Values, build, run_kernel
    from neurobrix import kernel_code, tables
    from neurobrix.ops import SPECS

    if not torch.cuda.is_available():
        parser.error("no GPU: this probe is about the compiled kernels (the interpreter's are the CPU tests')")

    def timed_check() -> tuple[str | None, float]:
        start = time.perf_counter()
        problem = kernel_code.running_kernels_problem()
        return problem, (time.perf_counter() - start) * 1e3

    out: dict[str, object] = {"device": torch.cuda.get_device_name(0), "before": timed_check(), "launched": []}
    loaded = tables.load()
    for kernel in sorted(SPECS):
        seen: set[str] = set()
        for entry in loaded.index(args.class_id, kernel).entries:
            key = json.dumps(entry.config, sort_keys=True)
            if key in seen:
                continue
            if len(seen) >= args.per_kernel:
                break
            seen.add(key)
            shape = {d: lo for d, lo, _hi in entry.domain.ranges}
            dtype = entry.domain.dtypes[0]
            try:
                case = build(kernel, dtype, shape, Values(dtype, "cuda", 0))
                run_kernel(case, entry.config)
                torch.cuda.synchronize()
                result = "ran"
            except Exception as exc:  # a probe: say what failed and go on
                result = f"{type(exc).__name__}: {str(exc)[:200]}"
            out["launched"].append([kernel, dtype, shape, entry.config, result])  # type: ignore[union-attr]
            print(kernel, dtype, shape, entry.config, result, flush=True)
    out["after"] = [timed_check() for _ in range(3)]
    print("before:", out["before"])
    print("after:", out["after"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    after = out["after"]
    return 0 if out["before"][0] is None and all(p is None for p, _ in after) else 1  # type: ignore[index]


if __name__ == "__main__":
    raise SystemExit(main())
