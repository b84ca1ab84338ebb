#!/usr/bin/env bash
# One device call (2026-12-05, twenty-ninth session): `neurobrix doctor` on the merged tree, then linear's bf16
# prompt-row entries (M >= 513) certified again with tma's wide tiles among the candidates, each kernel against
# cuBLAS with the tables before and after (benchmarks.kernels, side by side in this call), then the wide-tile
# prototype (benchmarks/proto_wide_tiles.py) for what each wide setting does per shape. The new tables travel as
# $OUT/tables.tgz.
#   NEUROBRIX_SOURCE_COMMIT=<sha> OUT=$OUT bash benchmarks/h200_session29.sh
# (CERTIFY_MINUTES=2.8 PROTOTYPE=0: the call that fit the session's last device minutes)
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1 NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
timeout 45 python3 -m neurobrix doctor 2>&1 | tail -15 | tee "$OUT/doctor.log"
rm -rf /tmp/old-tables && cp -r tables /tmp/old-tables
timeout 200 python3 -m conformance certify --class nvidia-h200 --kernels linear --dtypes bf16 --where M=513: \
    --max-minutes ${CERTIFY_MINUTES:-3.3} --no-check 2>&1 | tee "$OUT/certify.log" | tail -5
mkdir -p "$OUT/tables/nvidia-h200"
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml "$OUT/tables/nvidia-h200/"
cp tables/TRACKED.yaml "$OUT/tables/"
tar -C "$OUT" -czf "$OUT/tables.tgz" tables && rm -rf "$OUT/tables"
NEUROBRIX_TABLES=/tmp/old-tables timeout 60 python3 -m benchmarks.kernels --kernels linear --where M=513: \
    --json "$OUT/kernels-before.json" 2>&1 | tail -4 | tee "$OUT/kernels-before.log"
timeout 60 python3 -m benchmarks.kernels --kernels linear --where M=513: --json "$OUT/kernels-after.json" 2>&1 \
    | tail -4 | tee "$OUT/kernels-after.log"
[ "${PROTOTYPE:-1}" = 0 ] || timeout 100 python3 -m benchmarks.proto_wide_tiles --json "$OUT/wide.json" --minutes 1.2 2>&1 | tee "$OUT/wide.log" \
    | cut -c1-260
