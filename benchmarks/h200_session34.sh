#!/usr/bin/env bash
# One device call (2026-12-05, thirty-fourth session). On an H200: benchmarks/h200_session33b.sh (cuBLAS's kernels
# for linear's prompt rows, the attention entries' gpu-profile check under kernel-mutant round 8's draws, doctor, GPU
# tests), then the gpu-profile check of greedy_pick (round 9's edge, V = 32,770, where an entry holds it). On any
# other card (a call for an H200 may get an H100, which no class certifies): only the short experiment of
# benchmarks/foreign_check.py on greedy_pick, rms_norm and rotary (nothing written, no proof), ~3 minutes:
#   NEUROBRIX_SOURCE_COMMIT=<sha> OUT=$OUT bash benchmarks/h200_session34.sh
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
if ! grep -q H200 "$OUT/gpu.txt"; then
    echo "not an H200: the foreign check of greedy_pick, rotary and rms_norm only"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
    timeout 200 python3 -m benchmarks.foreign_check --class nvidia-h200 --profile gpu --kernel greedy_pick rotary \
        rms_norm --max-minutes 2.5 --json "$OUT/check-edges-foreign.json" 2>&1 | tail -12 | tee "$OUT/check-edges-foreign.log"
    exit 3
fi
CHECK_MINUTES=${CHECK_MINUTES:-3} CHECK_TIMEOUT=${CHECK_TIMEOUT:-250} TEST_SECONDS=${TEST_SECONDS:-100} \
    bash benchmarks/h200_session33b.sh
# a SIGTERM from timeout now ends a check with its report of what it checked (walk-through 34b)
timeout 60 python3 -m conformance check --class nvidia-h200 --profile gpu --kernel greedy_pick \
    --max-minutes 0.5 --json "$OUT/check-edges.json" 2>&1 | tail -8 | tee "$OUT/check-edges.log"
