"""What starting the engine costs before any kernel runs: the settings load, and `neurobrix doctor`.

    PYTHONPATH=. python -m benchmarks.startup --class nvidia-h200 --repeats 15

``settings``: in a fresh Python process each time (bytecode already compiled, as pip installs it), the
time to verify every tracked table file (sha256 and size) and read and validate the class's settings
index of every kernel, what ``run`` does before its preflight, as wall time and as the process's CPU time (on a
busy machine the wall time moves with the other processes, the CPU time far less). Imports are not counted (the
engine's are done by then in a run). ``doctor``: in a fresh process that has imported torch, the time
``neurobrix doctor`` then takes (the CLI and Triton imported, the device read, the tables verified
and loaded); beside it the process wall times of ``python -m neurobrix doctor`` and ``python -c
"import torch"``, alternating. Prints one JSON line per figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

CHILD = """
import sys, time
from neurobrix import tables
start, cpu = time.perf_counter(), time.process_time()
loaded = tables.load()
indexes = [loaded.index(sys.argv[1], k) for k in loaded.kernels(sys.argv[1])]
entries = sum(len(getattr(i, "rows", None) or i.entries) for i in indexes)  # rows: no Setting built
print(entries, time.perf_counter() - start, time.process_time() - cpu)
"""


def settings(class_id: str, repeats: int) -> dict[str, object]:
    seconds, cpu, entries = [], [], 0
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", CHILD, class_id], capture_output=True, text=True, check=True)
        count, took, used = out.stdout.split()
        entries, seconds, cpu = int(count), [*seconds, float(took)], [*cpu, float(used)]
    return {
        "figure": "settings load (verify every table file, read and validate every index)",
        "class": class_id,
        "entries": entries,
        "ms_min": round(1e3 * min(seconds), 1),
        "ms_median": round(1e3 * statistics.median(seconds), 1),
        "ms_max": round(1e3 * max(seconds), 1),
        "cpu_ms_min": round(1e3 * min(cpu), 1),
        "cpu_ms_median": round(1e3 * statistics.median(cpu), 1),
        "cpu_ms_max": round(1e3 * max(cpu), 1),
        "repeats": repeats,
    }


def wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, check=False)
    return time.perf_counter() - start


# doctor in a fresh process after `import torch`, timed there: what doctor costs beyond importing torch
# (importing the CLI and Triton, reading the device, verifying and loading the tables), free of the
# variance of `import torch` itself, which moved by 2.5-5.5 s between processes on the H200 machine
DOCTOR_CHILD = """
import contextlib, io, sys, time
import torch
start = time.perf_counter()
from neurobrix.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["doctor"])
print(time.perf_counter() - start, code)
"""


def doctor_after_torch() -> float:
    """One DOCTOR_CHILD's time; refused at once where doctor finds a run blocked (no GPU and no interpreter, say)."""
    out = subprocess.run([sys.executable, "-c", DOCTOR_CHILD], capture_output=True, text=True, check=True)
    took, code = out.stdout.split()[-2:]
    if code != "0":
        raise SystemExit(
            f"neurobrix doctor exited {code} on this machine: the doctor figure needs a ready machine (on a CPU, "
            "TRITON_INTERPRET=1); --skip-doctor measures the settings load alone"
        )
    return float(took)


def doctor(repeats: int) -> dict[str, object]:
    torch_s, doctor_s, beyond = [], [], []
    doctor_after_torch()  # a machine doctor refuses is named before any timing (it was after the first round's three)
    wall([sys.executable, "-c", "import torch"])  # page cache warm for both
    for _ in range(repeats):
        torch_s.append(wall([sys.executable, "-c", "import torch"]))
        doctor_s.append(wall([sys.executable, "-m", "neurobrix", "doctor"]))
        beyond.append(doctor_after_torch())
    return {
        "figure": "neurobrix doctor, beyond `import torch`",
        "doctor_after_import_torch_s_min": round(min(beyond), 3),
        "doctor_after_import_torch_s_median": round(statistics.median(beyond), 3),
        "doctor_after_import_torch_s_max": round(max(beyond), 3),
        "process_wall_s_median": {
            "python -c 'import torch'": round(statistics.median(torch_s), 2),
            "python -m neurobrix doctor": round(statistics.median(doctor_s), 2),
        },
        "repeats": repeats,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--class", dest="class_id", default="nvidia-h200", help="the GPU class whose settings load")
    parser.add_argument("--repeats", type=int, default=15, help="fresh processes per figure (default 15)")
    parser.add_argument("--skip-doctor", action="store_true", help="measure the settings load only")
    args = parser.parse_args()
    print(json.dumps(settings(args.class_id, args.repeats)), flush=True)
    if not args.skip_doctor:
        print(json.dumps(doctor(max(3, args.repeats // 3))), flush=True)


if __name__ == "__main__":
    main()
