#!/usr/bin/env bash
# Session 25's third call on the H200: linear's prompt rows against cuBLAS with the bf16 entries certified with
# host-made TMA descriptors (benchmarks.kernels, M >= 513), then the fp16 prompt-row entries certified the same way
# and measured too. New tables under $OUT.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
timeout 120 python3 -m benchmarks.kernels --kernels linear --where M=513: --json "$OUT/kernels-linear-prompt-bf16.json" \
    2>&1 | tail -8 | tee "$OUT/kernels-linear-prompt-bf16.log"
timeout 300 python3 -m conformance certify --class nvidia-h200 --kernels linear --dtypes fp16 --where M=513: \
    --max-minutes 4.5 --no-check 2>&1 | tee "$OUT/certify-fp16.log" | tail -4
mkdir -p "$OUT/tables/nvidia-h200"
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml "$OUT/tables/nvidia-h200/"
cp tables/TRACKED.yaml "$OUT/tables/"
timeout 120 python3 -m benchmarks.kernels --kernels linear --dtypes fp16 --where M=513: \
    --json "$OUT/kernels-linear-prompt-fp16.json" 2>&1 | tail -8 | tee "$OUT/kernels-linear-prompt-fp16.log"
