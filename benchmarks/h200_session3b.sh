#!/usr/bin/env bash
# One device call on an H200 (2026-12-01): the skinny linear variant certified for the decode rows
# (M <= 64, bf16) of TinyLlama and Llama-3.2-1B, then those two shapes side by side with the
# torch.compile peer. What certify wrote comes back as one archive (a call returns at most 8 files).
#   OUT=<dir> NEUROBRIX_SOURCE_COMMIT=<commit> bash benchmarks/h200_session3b.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
timeout "${CERTIFY_SECONDS:-250}" python3 -m conformance certify --class nvidia-h200 --kernels linear --dtypes bf16 \
    --models TinyLlama/TinyLlama-1.1B-Chat-v1.0 meta-llama/Llama-3.2-1B-Instruct --where M=1:64 \
    --max-minutes "${CERTIFY_MINUTES:-3.6}" --no-check 2>&1 | tail -12 | tee "$OUT/certify.log"
tar czf "$OUT/tables.tgz" tables
python3 -c "
import time
t=time.perf_counter()
from neurobrix import tables
T=tables.load()
for k in T.kernels('nvidia-h200'): T.index('nvidia-h200', k)
print(f'nvidia-h200 settings verified and loaded in {1000*(time.perf_counter()-t):.1f} ms')" 2>&1 | tee -a "$OUT/certify.log"
timeout "${E2E_SECONDS:-330}" python3 -m benchmarks.e2e --model TinyLlama/TinyLlama-1.1B-Chat-v1.0 \
    meta-llama/Llama-3.2-1B-Instruct --batch 1 8 --backends triton compile --json "$OUT/e2e.json" 2>&1 \
    | tee "$OUT/e2e.log" | tail -14
