#!/usr/bin/env bash
# Certify the nvidia-h200 class over the whole catalogue (bf16 and fp16), resumably: each call
# certifies what is missing for CERTIFY_MINUTES, on every H200 of the machine, and returns the
# tables as h200-tables.tgz. Unpack it over tables/ and commit before the next call.
# Run from the repository root on the GPU machine:
#   OUT=<dir> NEUROBRIX_SOURCE_COMMIT=<commit> bash benchmarks/h200_certify_full.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python -m conformance certify --class nvidia-h200 --dtypes bf16 fp16 --only-missing \
    --max-minutes "${CERTIFY_MINUTES:-8}" --no-check --tables tables ${CERTIFY_ARGS:-} 2>&1 | tee "$OUT/certify.log"
tar czf "$OUT/h200-tables.tgz" tables/nvidia-h200 tables/TRACKED.yaml
