#!/usr/bin/env bash
# Session 23's one call on the H200: the final tree after strict round 18 (plans re-checked against the tables
# before launch, the GPU a plan runs on judged by the class's match rules), text round 14, the gate's round 19
# and planted round 16. Every GPU test but the class's whole check (run with the gpu profile when the tables
# were shipped), then what a user sees after `neurobrix warmup` (benchmarks/h200_user_runs.sh). OUT set.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 170 python3 -m pytest -q -rs -m gpu -p no:cacheprovider tests/test_gpu_only.py \
    tests/test_warmup.py -k "not passes_its_check" 2>&1 | tail -15 | tee "$OUT/gpu-tests.log"
OUT=$OUT GPUTEST_SECONDS=1 timeout 150 bash benchmarks/h200_user_runs.sh
