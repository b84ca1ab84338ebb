#!/usr/bin/env bash
# Session 27's first H200 script (its one call failed, the machine stopped answering: not yet run): linear's bf16
# decode entries at M = 1 of the Llama-3.1-8B, Mistral-7B and Qwen2.5-7B shapes certified again with the 8-warp gemv
# candidates (sessions 24-25 did the five smaller shapes), ranked in their model's step, the step with the tables
# before and after side by side, then every M = 1 bf16 entry checked with the gpu profile. New tables under $OUT.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
rm -rf /tmp/old-tables && cp -r tables /tmp/old-tables
M="meta-llama/Llama-3.1-8B-Instruct mistralai/Mistral-7B-Instruct-v0.3 Qwen/Qwen2.5-7B-Instruct"
# shellcheck disable=SC2086
timeout 240 python3 -m conformance certify --class nvidia-h200 --kernels linear --dtypes bf16 --models $M \
    --where M=1:1 --max-minutes 3.5 --no-check 2>&1 | tee "$OUT/certify.log" | tail -8
mkdir -p "$OUT/certified/nvidia-h200" "$OUT/tables/nvidia-h200"
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml "$OUT/certified/nvidia-h200/"
cp tables/TRACKED.yaml "$OUT/certified/"
# shellcheck disable=SC2086
timeout 150 python3 -m conformance rank --class nvidia-h200 --models $M --batch 1 --max-minutes 2.0 \
    2>&1 | tee "$OUT/rank.log" | tail -12
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml "$OUT/tables/nvidia-h200/"
cp tables/TRACKED.yaml "$OUT/tables/"
pairs=(); for m in $M; do pairs+=("$m:1"); done
timeout 100 python3 -m benchmarks.step_tables --old /tmp/old-tables --new tables --pairs "${pairs[@]}" \
    --json "$OUT/step-tables.json" 2>&1 | tee "$OUT/step-tables.log" | cut -c1-300
timeout 45 python3 -m conformance check --class nvidia-h200 --kernel linear --dtype bf16 --where M=1:1 \
    --profile gpu --json "$OUT/check.json" 2>&1 | tail -6 | tee "$OUT/check.log"
