#!/usr/bin/env bash
# Session 25's fifth call on the H200: linear's bf16 decode entries at M = 1 certified again for the Llama-3.2-3B,
# Qwen2.5-0.5B and Qwen2.5-1.5B shapes with the 8-warp gemv candidates (session 24 did TinyLlama and Llama-3.2-1B);
# the step with the tables before and after side by side, then the re-certified entries checked with the gpu
# profile. New tables under $OUT.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
rm -rf /tmp/old-tables && cp -r tables /tmp/old-tables
M="meta-llama/Llama-3.2-3B-Instruct Qwen/Qwen2.5-0.5B-Instruct Qwen/Qwen2.5-1.5B-Instruct"
# shellcheck disable=SC2086
timeout 300 python3 -m conformance certify --class nvidia-h200 --kernels linear --dtypes bf16 --models $M \
    --where M=1:1 --max-minutes 4.3 --no-check 2>&1 | tee "$OUT/certify.log" | tail -6
mkdir -p "$OUT/tables/nvidia-h200"
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml "$OUT/tables/nvidia-h200/"
cp tables/TRACKED.yaml "$OUT/tables/"
timeout 130 python3 -m benchmarks.step_tables --old /tmp/old-tables --new tables \
    --pairs meta-llama/Llama-3.2-3B-Instruct:1 Qwen/Qwen2.5-0.5B-Instruct:1 Qwen/Qwen2.5-1.5B-Instruct:1 \
    --json "$OUT/step-tables.json" 2>&1 | tee "$OUT/step-tables.log" | cut -c1-300
timeout 60 python3 -m conformance check --class nvidia-h200 --kernel linear --dtype bf16 --where M=1:1 \
    --profile gpu --json "$OUT/check.json" 2>&1 | tail -6 | tee "$OUT/check.log"
