#!/usr/bin/env bash
# Session 25's second call on the H200: linear's bf16 prompt-row entries (M >= 513) certified again, now that the tma
# variants take descriptors made on the host (1.045x on the same settings in geomean, up to 1.45x on the smallest
# shapes, 2026-12-04h) and two tile shapes were added to the candidates. New tables under $OUT; the check follows
# in the next call.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
timeout 570 python3 -m conformance certify --class nvidia-h200 --kernels linear --dtypes bf16 --where M=513: \
    --max-minutes 8.3 --no-check 2>&1 | tee "$OUT/certify.log" | tail -30
mkdir -p "$OUT/tables/nvidia-h200"
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml "$OUT/tables/nvidia-h200/"
cp tables/TRACKED.yaml "$OUT/tables/"
