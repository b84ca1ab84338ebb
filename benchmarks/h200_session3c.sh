#!/usr/bin/env bash
# One device call on an H200 (2026-12-01): the skinny linear variant certified for the decode rows
# (M <= 64, bf16) of the other six catalogue models (resumable: run again with the same command and
# --only-missing is not needed, entries are replaced as they are certified), then process start to first
# token on the certified tables. Tables come back as one archive.
#   OUT=<dir> NEUROBRIX_SOURCE_COMMIT=<commit> bash benchmarks/h200_session3c.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
timeout "${CERTIFY_SECONDS:-430}" python3 -m conformance certify --class nvidia-h200 --kernels linear --dtypes bf16 \
    --models meta-llama/Llama-3.2-3B-Instruct meta-llama/Llama-3.1-8B-Instruct mistralai/Mistral-7B-Instruct-v0.3 \
    Qwen/Qwen2.5-0.5B-Instruct Qwen/Qwen2.5-1.5B-Instruct Qwen/Qwen2.5-7B-Instruct --where M=1:64 \
    --max-minutes "${CERTIFY_MINUTES:-6.3}" --no-check 2>&1 | tail -8 | tee "$OUT/certify.log"
tar czf "$OUT/tables.tgz" tables
timeout "${COLD_SECONDS:-100}" python3 -m benchmarks.cold_start --model TinyLlama/TinyLlama-1.1B-Chat-v1.0 \
    --runs 3 --json "$OUT/cold_start.json" 2>&1 | tail -8 | tee "$OUT/cold_start.log"
