#!/usr/bin/env bash
# One device call on an H200 (2026-12-02c, call 1): re-certify linear on prompt rows with tma_split's
# TAIL_SPLIT settings among the candidates (whole waves of tiles unsplit, the last partial wave cut into K
# slices), then every bf16 prompt-row entry against cuBLAS with the new tables.
#   OUT=<dir> NEUROBRIX_SOURCE_COMMIT=<commit> MINUTES=5 bash benchmarks/h200_session9.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
timeout 390 python3 -m conformance certify --class nvidia-h200 --kernels linear \
    --dtypes bf16 fp16 --where M=513: --max-minutes "${MINUTES:-5}" --no-check > "$OUT/certify.log" 2>&1
tail -6 "$OUT/certify.log"
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml tables/TRACKED.yaml "$OUT/"
timeout 150 python3 -m benchmarks.kernels --kernels linear --dtypes bf16 --where M=513: --max-minutes 1.8 \
    --json "$OUT/kernels-linear-prompt-rows.json" > "$OUT/kernels.log" 2>&1
tail -12 "$OUT/kernels.log"
