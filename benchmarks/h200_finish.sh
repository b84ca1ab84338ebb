#!/usr/bin/env bash
# Finish the nvidia-h200 class (one call of at most 10 minutes on an H200 machine): start from the
# partial tables when tables/ has none (less rotary, whose kernel changed since), certify what is
# missing, certify the prefill rows of linear
# again with the persistent TMA candidates, and return the tables as h200-tables.tgz (unpack over
# the checkout, commit), then check them with benchmarks/h200_check.sh.
#   OUT=<dir> NEUROBRIX_SOURCE_COMMIT=<commit> bash benchmarks/h200_finish.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1
PARTIAL=benchmarks/results/2026-11-30/nvidia-h200-partial
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
if [ ! -f tables/nvidia-h200/linear.yaml ]; then
    cp "$PARTIAL"/*.yaml tables/nvidia-h200/
    rm tables/nvidia-h200/rotary.yaml  # the rotary kernel changed after that run (fused KV-cache append)
    python -m conformance track
fi
certify() {
    python -m conformance certify --class nvidia-h200 --dtypes bf16 fp16 --no-check --tables tables "$@" 2>&1 \
        | grep -E "^(tasks|certified|stopping|wall|[0-9]+ task)|rror|Traceback"
}
certify --only-missing --max-minutes "${CERTIFY_MINUTES:-3}" | tee "$OUT/certify-missing.log"
certify --kernels linear --where M=65: --max-minutes "${PREFILL_MINUTES:-4}" | tee "$OUT/certify-prefill.log"
tar czf "$OUT/h200-tables.tgz" tables/nvidia-h200 tables/TRACKED.yaml
