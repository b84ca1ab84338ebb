#!/usr/bin/env bash
# One device call (2026-12-05, thirty-third session): the tall-tile prototype's settings that run two programs a
# multiprocessor (benchmarks/proto_tall_tiles.py --only x2) on linear's bf16 prompt rows, against cuBLAS and the
# certified settings (its 256-row settings were answered by certify in the thirty-second session), then
# `neurobrix doctor` and every GPU test but the class's whole check. About 7 minutes:
#   NEUROBRIX_SOURCE_COMMIT=<sha> OUT=$OUT bash benchmarks/h200_session33.sh
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -m pip list 2>/dev/null | grep -iE "^(torch|triton|pytorch-triton) " | tee -a "$OUT/gpu.txt"
timeout 260 python3 -m benchmarks.proto_tall_tiles --only x2 --json "$OUT/x2.json" --minutes ${PROTO_MINUTES:-3.4} \
    2>&1 | tee "$OUT/x2.log" | cut -c1-240 | tail -40
timeout 40 python3 -m neurobrix doctor 2>&1 | tee "$OUT/doctor.log" | tail -6
set -o pipefail
timeout ${TEST_SECONDS:-150} python3 -m pytest -v -rs -m gpu -p no:cacheprovider --durations=0 \
    tests/test_gpu_only.py tests/test_warmup.py -k "not passes_its_check" 2>&1 | tee "$OUT/gpu-tests.log" | tail -25
