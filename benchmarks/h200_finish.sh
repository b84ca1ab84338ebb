#!/usr/bin/env bash
# Finish the nvidia-h200 class and check it (one call of at most 10 minutes on an H200 machine):
# start from the partial tables when tables/ has none, certify what is missing, return the tables
# (h200-tables.tgz: unpack over the checkout and commit), then check every entry with the gpu profile.
#   OUT=<dir> NEUROBRIX_SOURCE_COMMIT=<commit> bash benchmarks/h200_finish.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1
PARTIAL=benchmarks/results/2026-11-30/nvidia-h200-partial
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
if [ ! -f tables/nvidia-h200/linear.yaml ]; then
    cp "$PARTIAL"/*.yaml tables/nvidia-h200/ && python -m conformance track
fi
python -m conformance certify --class nvidia-h200 --dtypes bf16 fp16 --only-missing \
    --max-minutes "${CERTIFY_MINUTES:-3}" --no-check --tables tables 2>&1 \
    | grep -E "^(tasks|certified|stopping|wall|[0-9]+ task)|rror" | tee "$OUT/certify.log"
tar czf "$OUT/h200-tables.tgz" tables/nvidia-h200 tables/TRACKED.yaml
NEUROBRIX_TABLES=tables python -m conformance check --class nvidia-h200 --profile gpu \
    --max-minutes "${CHECK_MINUTES:-5}" --json "$OUT/check-gpu.json" 2>&1 | tail -20 | tee "$OUT/check.log"
