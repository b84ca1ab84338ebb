#!/usr/bin/env bash
# One device call on an H200: certify what is missing of some kernels for the nvidia-h200 class, within
# a time budget (resumable: run it again for the rest), and bring the tables back as one archive.
#   OUT=<dir> NEUROBRIX_SOURCE_COMMIT=<commit> KERNELS="attention_chunk attention_decode" MINUTES=8 \
#       bash benchmarks/h200_certify.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
# shellcheck disable=SC2086
timeout $(( ${MINUTES:-8} * 60 + 60 )) python3 -m conformance certify --class nvidia-h200 --kernels $KERNELS \
    --dtypes bf16 fp16 --only-missing --max-minutes "${MINUTES:-8}" --no-check 2>&1 | tee "$OUT/certify.log" | tail -30
tar czf "$OUT/tables.tgz" tables
