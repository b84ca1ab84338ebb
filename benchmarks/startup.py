"""What starting the engine costs before any kernel runs: the settings load, and `neurobrix doctor`.

    PYTHONPATH=. python -m benchmarks.startup --class nvidia-h200 --repeats 15

``settings``: in a fresh Python process each time (bytecode already compiled, as pip installs it), the
time to verify every tracked table file (sha256 and size) and read and validate the class's settings
index of every kernel, what ``run`` does before its preflight. Imports are not counted (the engine's
are done by then in a run). ``doctor``: the process wall time of ``python -m neurobrix doctor`` against
``python -c "import torch"``, alternating, so both see the same machine; doctor imports torch and
triton itself, so the difference is what doctor adds. Prints one JSON line per figure.
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
start = time.perf_counter()
loaded = tables.load()
indexes = [loaded.index(sys.argv[1], k) for k in loaded.kernels(sys.argv[1])]
entries = sum(len(getattr(i, "rows", None) or i.entries) for i in indexes)  # rows: no Setting built
print(entries, time.perf_counter() - start)
"""


def settings(class_id: str, repeats: int) -> dict[str, object]:
    seconds, entries = [], 0
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", CHILD, class_id], capture_output=True, text=True, check=True)
        count, took = out.stdout.split()
        entries, seconds = int(count), [*seconds, float(took)]
    return {
        "figure": "settings load (verify every table file, read and validate every index)",
        "class": class_id,
        "entries": entries,
        "ms_min": round(1e3 * min(seconds), 1),
        "ms_median": round(1e3 * statistics.median(seconds), 1),
        "ms_max": round(1e3 * max(seconds), 1),
        "repeats": repeats,
    }


def wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, check=False)
    return time.perf_counter() - start


def doctor(repeats: int) -> dict[str, object]:
    torch_s, doctor_s = [], []
    wall([sys.executable, "-c", "import torch"])  # page cache warm for both
    for _ in range(repeats):
        torch_s.append(wall([sys.executable, "-c", "import torch"]))
        doctor_s.append(wall([sys.executable, "-m", "neurobrix", "doctor"]))
    extra = [d - t for d, t in zip(doctor_s, torch_s)]
    return {
        "figure": "neurobrix doctor process wall time, beyond `import torch`",
        "import_torch_s_median": round(statistics.median(torch_s), 2),
        "doctor_s_median": round(statistics.median(doctor_s), 2),
        "doctor_minus_import_torch_s_median": round(statistics.median(extra), 2),
        "doctor_minus_import_torch_s_max": round(max(extra), 2),
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
