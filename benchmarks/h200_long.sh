#!/usr/bin/env bash
# One device call on an H200 (2026-12-01): finish certifying the long-cache decode entries (resumable),
# then the long-context benchmark on the Llama-3.1-8B shape (8,000- and 30,000-token prompts).
#   OUT=<dir> NEUROBRIX_SOURCE_COMMIT=<commit> MINUTES=5 bash benchmarks/h200_long.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
OUT="$OUT" KERNELS="attention_decode" MINUTES="${MINUTES:-5}" bash benchmarks/h200_certify.sh
timeout "${BENCH_SECONDS:-220}" python3 -m benchmarks.long_context --model meta-llama/Llama-3.1-8B-Instruct \
    --prompt 8000 30000 --new 128 --json "$OUT/long-8b.json" 2>&1 | tee "$OUT/long-8b.log" | tail -12
