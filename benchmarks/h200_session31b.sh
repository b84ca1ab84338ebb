#!/usr/bin/env bash
# One device call (2026-12-05, thirty-first session): linear's bf16 prompt-row entries (M >= 513) certified again with
# 256 x 128 tiles among the candidates (tma, and tma_split with its epilogue in halves, with and without warp
# specialisation), each kernel against cuBLAS with the tables before and after (benchmarks.kernels, side by side in
# this call), then the prototype's two-programs-a-multiprocessor settings (benchmarks/proto_tall_tiles.py --only x2).
# The new tables travel as $OUT/tables.tgz. About 9 minutes:
#   NEUROBRIX_SOURCE_COMMIT=<sha> OUT=$OUT bash benchmarks/h200_session31b.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1 NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
rm -rf /tmp/old-tables && cp -r tables /tmp/old-tables
timeout 260 python3 -m conformance certify --class nvidia-h200 --kernels linear --dtypes bf16 --where M=513: \
    --max-minutes ${CERTIFY_MINUTES:-3.6} --no-check 2>&1 | tee "$OUT/certify.log" | tail -5
mkdir -p "$OUT/tables/nvidia-h200"
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml "$OUT/tables/nvidia-h200/"
cp tables/TRACKED.yaml "$OUT/tables/"
tar -C "$OUT" -czf "$OUT/tables.tgz" tables && rm -rf "$OUT/tables"
NEUROBRIX_TABLES=/tmp/old-tables timeout 60 python3 -m benchmarks.kernels --kernels linear --where M=513: \
    --json "$OUT/kernels-before.json" 2>&1 | tail -4 | tee "$OUT/kernels-before.log"
timeout 60 python3 -m benchmarks.kernels --kernels linear --where M=513: --json "$OUT/kernels-after.json" 2>&1 \
    | tail -4 | tee "$OUT/kernels-after.log"
[ "${PROTO_MINUTES:-1.3}" = 0 ] || timeout 110 python3 -m benchmarks.proto_tall_tiles --only x2 --json "$OUT/x2.json" \
    --minutes ${PROTO_MINUTES:-1.3} 2>&1 | tee "$OUT/x2.log" | cut -c1-240 | tail -12
