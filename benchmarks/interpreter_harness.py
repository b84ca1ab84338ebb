"""What the conformance harness's interpreter speed-ups (``harness.interpreter_device_calls``,
``harness.interpreter_dtypes``, ``harness.interpreter_values``) save: shipped settings' checks (``check_entry`` at their
small shapes, the ci profile, as CI runs them) timed in fresh processes, with the speed-ups and without, the two runs
alternated:

    python -m benchmarks.interpreter_harness --repeats 2

Each line prints the mode and the seconds of each setting's check. On a CPU only (the Triton interpreter).
"""

import argparse
import os
import subprocess
import sys
import time

# (kernel, index among the shipped settings conformance.shipped.targets lists for the interpreter class)
SETTINGS = (("attention_decode", 5), ("linear", 20))


def one(mode: str, examples: int) -> None:
    """This process: each setting's check, with ("on") or without ("off") the speed-ups."""
    os.environ["TRITON_INTERPRET"] = "1"
    from pathlib import Path

    from conformance import check, harness, shipped
    from neurobrix import tables

    if mode == "off":
        harness.interpreter_device_calls = harness.interpreter_dtypes = harness.interpreter_values = lambda: None
    loaded = tables.load(Path("tables"))
    out = []
    for kernel, index in SETTINGS:
        target = shipped.targets("interpreter", loaded, True, [kernel])[0][index]
        started = time.perf_counter()
        result = check.check_entry(
            kernel, target.setting, target.dtype, examples, "ci", small=target.small, shipped_in=target.where
        )
        if not result.passed:
            raise SystemExit(result.failure)
        out.append(f"{kernel} {target.setting.config}: {time.perf_counter() - started:.1f} s")
    print(f"{mode:>3}  " + "; ".join(out), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.interpreter_harness", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--repeats", type=int, default=2, help="runs of each mode, alternated (default 2)")
    parser.add_argument("--examples", type=int, default=25, help="examples a setting (default 25, the ci profile's)")
    parser.add_argument("--one", choices=("on", "off"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args.one, args.examples)
        return
    for _ in range(args.repeats):
        for mode in ("off", "on"):
            command = [sys.executable, "-m", "benchmarks.interpreter_harness", "--one", mode]
            subprocess.run([*command, "--examples", str(args.examples)], check=True)


if __name__ == "__main__":
    main()
