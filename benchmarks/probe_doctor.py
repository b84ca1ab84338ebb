import subprocess
import sys

CHILD = r"""
import time, json
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
import triton
t2 = time.perf_counter()
p = torch.cuda.get_device_properties(0)
t3 = time.perf_counter()
from neurobrix import tables
from neurobrix.tables import check_files, locate, read_tracked
loc = locate(); problems = check_files(loc.root, read_tracked(loc.root)); tb = tables.load()
t4 = time.perf_counter()
from neurobrix.ops import SPECS
t5 = time.perf_counter()
from neurobrix.stack import verdict
v = verdict("nvidia-h200", tb)
t6 = time.perf_counter()
print(json.dumps({"import torch": t1 - t0, "import triton": t2 - t1, "cuda props": t3 - t2, "tables": t4 - t3,
                  "ops": t5 - t4, "verdict": t6 - t5}))
"""
for _ in range(4):
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
    print(out.stdout.strip() or out.stderr[-800:], flush=True)
