#!/usr/bin/env bash
# One device call on an H200: does programmatic dependent launch change a result (GPU test), and does it
# pay (decode and prefill, the same certified settings launched with PDL and without, side by side).
#   OUT=<dir> MODELS="TinyLlama/TinyLlama-1.1B-Chat-v1.0 ..." bash benchmarks/h200_pdl.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>/dev/null
timeout "${GPUTEST_SECONDS:-150}" python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_only.py \
    -k dependent_launch 2>&1 | tail -15 | tee "$OUT/gpu-pdl-test.log"
timeout "${BENCH_SECONDS:-380}" python3 -m benchmarks.e2e --model ${MODELS} --backends ${BACKENDS:-triton-serial triton-pdl} \
    --batch ${BATCHES:-1 8} --prompt ${PROMPTS:-128 512} --new 256 --repeats 7 --max-minutes "${MINUTES:-5}" \
    --json "$OUT/e2e-pdl.json" 2>&1 | tail -40 | tee "$OUT/e2e-pdl.log"
