#!/usr/bin/env bash
# Session 25's sixth call on the H200: the tree after strict round 21 (torch's and Triton's versions read from their
# installed distributions, files of a stored model changed after their check refused), text round 17 and gate round
# 22, and with the tma kernels taking host-made descriptors: `neurobrix doctor`, every GPU test but the class's
# whole check, then what a user sees after `neurobrix warmup` (benchmarks/h200_user_runs.sh). OUT set.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -m pip list 2>/dev/null | grep -iE "^(torch|triton|pytorch-triton) " | tee -a "$OUT/gpu.txt"
timeout 60 python3 -m neurobrix doctor 2>&1 | tee "$OUT/doctor.log" | tail -25
set -o pipefail
timeout 300 python3 -m pytest -v -rs -m gpu -p no:cacheprovider --durations=0 \
    tests/test_gpu_only.py tests/test_warmup.py -k "not passes_its_check" 2>&1 | tee "$OUT/gpu-tests.log" | tail -25
set +o pipefail
OUT=$OUT GPUTEST_SECONDS=1 timeout 170 bash benchmarks/h200_user_runs.sh
