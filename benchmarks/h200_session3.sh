#!/usr/bin/env bash
# One device call on an H200 (2026-12-01): the redesigned engine checked there, the skinny linear
# variant certified for the decode rows of two catalogue models, and a first side-by-side look.
#   OUT=<dir> NEUROBRIX_SOURCE_COMMIT=<commit> bash benchmarks/h200_session3.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
{ time python3 -c "import torch" ; } 2>&1 | tail -3 | tee "$OUT/doctor-time.txt"
{ time python3 -m neurobrix doctor ; } 2>&1 | tee -a "$OUT/doctor-time.txt"
python3 -c "
import time
t=time.perf_counter()
from neurobrix import tables
T=tables.load()
for k in T.kernels('nvidia-h200'): T.index('nvidia-h200', k)
print(f'nvidia-h200 settings verified and loaded in {1000*(time.perf_counter()-t):.1f} ms')" | tee "$OUT/load.txt"
timeout "${CERTIFY_SECONDS:-240}" python3 -m conformance certify --class nvidia-h200 --kernels linear --dtypes bf16 \
    --models TinyLlama/TinyLlama-1.1B-Chat-v1.0 meta-llama/Llama-3.2-1B-Instruct --where M=1:64 \
    --max-minutes "${CERTIFY_MINUTES:-3}" --no-check 2>&1 | tail -40 | tee "$OUT/certify.log"
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml tables/TRACKED.yaml "$OUT/"
timeout "${GPUTEST_SECONDS:-120}" python3 -m pytest -q -m gpu -p no:cacheprovider -k "not this_gpus_class" tests/test_gpu_only.py 2>&1 | tail -15 | tee "$OUT/gpu-tests.log"
timeout "${E2E_SECONDS:-150}" python3 -m benchmarks.e2e --model TinyLlama/TinyLlama-1.1B-Chat-v1.0 \
    --batch 1 8 --backends triton torch --json "$OUT/e2e.json" 2>&1 | tail -12 | tee "$OUT/e2e.log"
