#!/usr/bin/env bash
# Check every entry of the nvidia-h200 tables with the gpu profile (one call on an H200 machine).
# RESUME=<an earlier check-gpu.json of the same tables and code> carries its passed entries over.
#   OUT=<dir> [RESUME=<report>] bash benchmarks/h200_check.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1
python -m conformance check --class nvidia-h200 --profile gpu --max-minutes "${CHECK_MINUTES:-8}" \
    ${RESUME:+--resume "$RESUME"} --json "$OUT/check-gpu.json" 2>&1 | tail -20 | tee "$OUT/check.log"
