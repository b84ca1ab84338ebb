#!/usr/bin/env bash
# Session 24's fifth call on the H200: linear's decode rows at M = 1 certified again (bf16; the TinyLlama and
# Llama-3.2-1B shapes) with gemv settings of 8 rows a program and 8 warps among the candidates, which a kernel that
# only streams the weights ran fastest with (2026-12-04e); the step with the tables before and after side by side
# (benchmarks.step_tables), then every re-certified entry checked with the gpu profile. New tables under $OUT.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
rm -rf /tmp/old-tables && cp -r tables /tmp/old-tables
M="TinyLlama/TinyLlama-1.1B-Chat-v1.0 meta-llama/Llama-3.2-1B-Instruct"
# shellcheck disable=SC2086
timeout 260 python3 -m conformance certify --class nvidia-h200 --kernels linear --dtypes bf16 --models $M \
    --where M=1:1 --max-minutes 3.5 --no-check 2>&1 | tee "$OUT/certify.log" | tail -25
mkdir -p "$OUT/tables/nvidia-h200"
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml "$OUT/tables/nvidia-h200/"
cp tables/TRACKED.yaml "$OUT/tables/"
timeout 150 python3 -m benchmarks.step_tables --old /tmp/old-tables --new tables \
    --pairs TinyLlama/TinyLlama-1.1B-Chat-v1.0:1 meta-llama/Llama-3.2-1B-Instruct:1 --json "$OUT/step-tables.json" \
    2>&1 | tee "$OUT/step-tables.log" | cut -c1-400
timeout 100 python3 -m conformance check --class nvidia-h200 --kernel linear --dtype bf16 --where M=1:1 \
    --profile gpu --json "$OUT/check.json" 2>&1 | tail -8 | tee "$OUT/check.log"
