#!/usr/bin/env bash
# One device call (2026-12-05, twenty-ninth session): the merged tree on the H200 (`neurobrix doctor`, then a user's
# runs after `neurobrix warmup` on the TinyLlama shape, benchmarks/h200_user_runs.sh without its GPU test), then the
# wide-tile prototype for linear's prompt rows (benchmarks/proto_wide_tiles.py).
#   NEUROBRIX_SOURCE_COMMIT=<sha> OUT=$OUT bash benchmarks/h200_session29.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1 NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
timeout 60 python3 -m neurobrix doctor 2>&1 | tail -15 | tee "$OUT/doctor.log"
GPUTEST_SECONDS=1 timeout 200 bash benchmarks/h200_user_runs.sh 2>&1 | tail -12
timeout 300 python3 -m benchmarks.proto_wide_tiles --json "$OUT/wide.json" --minutes 4 2>&1 | tee "$OUT/wide.log" \
    | cut -c1-300
