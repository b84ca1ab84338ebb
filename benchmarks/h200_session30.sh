#!/usr/bin/env bash
# One device call prepared in the thirtieth session (2026-12-05, when no machine was lent) for the next session that
# gets one: on the merged tree (strict rounds up to 31, gate round 31, planted round 26, text round 28, kernel-mutant
# round 4): `neurobrix doctor`, every GPU test but the class's whole check, what a user sees after `neurobrix warmup`
# (benchmarks/h200_user_runs.sh), then the gpu profile on linear's bf16 prompt rows (the 56 entries certified on
# 2026-12-05d were proven by certify's own 25 examples only). About 9 minutes:
#   NEUROBRIX_SOURCE_COMMIT=<sha> OUT=$OUT bash benchmarks/h200_session30.sh
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -m pip list 2>/dev/null | grep -iE "^(torch|triton|pytorch-triton) " | tee -a "$OUT/gpu.txt"
timeout 60 python3 -m neurobrix doctor 2>&1 | tee "$OUT/doctor.log" | tail -25
set -o pipefail
timeout 330 python3 -m pytest -v -rs -m gpu -p no:cacheprovider --durations=0 \
    tests/test_gpu_only.py tests/test_warmup.py -k "not passes_its_check" 2>&1 | tee "$OUT/gpu-tests.log" | tail -25
set +o pipefail
OUT=$OUT GPUTEST_SECONDS=1 timeout 120 bash benchmarks/h200_user_runs.sh
timeout 100 python3 -m conformance check --class nvidia-h200 --kernel linear --dtype bf16 --where M=513: \
    --profile gpu --max-minutes 1.4 --json "$OUT/check.json" 2>&1 | tail -8 | tee "$OUT/check.log"
