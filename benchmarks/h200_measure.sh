#!/usr/bin/env bash
# Performance on the certified nvidia-h200 tables (one call of at most 10 minutes): every catalogue
# model shape at batch 1 and 8 on both backends (transformers eager at batch 1), every certified bf16
# kernel against PyTorch's, and process start to first token (certified tables, then autotuning on
# first call, side by side).
#   OUT=<dir> bash benchmarks/h200_measure.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1
timeout "${E2E_SECONDS:-330}" python -m benchmarks.e2e --batch 1 8 --backends triton torch hf --max-minutes 4.5 \
    --json "$OUT/e2e.json" 2>&1 | tee "$OUT/e2e.log"
timeout "${KERNELS_SECONDS:-150}" python -m benchmarks.kernels --max-minutes 2 --json "$OUT/kernels.json" 2>&1 \
    | tail -14 \
    | tee "$OUT/kernels.log"
timeout "${COLD_SECONDS:-100}" python -m benchmarks.cold_start --model TinyLlama/TinyLlama-1.1B-Chat-v1.0 \
    --runs 2 --autotune --json "$OUT/cold_start.json" 2>&1 | tail -8
