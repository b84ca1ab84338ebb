#!/usr/bin/env bash
# Session 27's second H200 script (not yet run: no device was lent after the first call failed): linear's fp16
# decode entries at M = 1 of the five smaller catalogue shapes certified again with the 8-warp gemv candidates, ranked
# in their model's fp16 step, the fp16 step with the tables before and after side by side, then every M = 1 fp16 entry
# checked with the gpu profile. New tables under $OUT.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
rm -rf /tmp/old-tables && cp -r tables /tmp/old-tables
M="TinyLlama/TinyLlama-1.1B-Chat-v1.0 meta-llama/Llama-3.2-1B-Instruct meta-llama/Llama-3.2-3B-Instruct"
M="$M Qwen/Qwen2.5-0.5B-Instruct Qwen/Qwen2.5-1.5B-Instruct"
# shellcheck disable=SC2086
timeout 270 python3 -m conformance certify --class nvidia-h200 --kernels linear --dtypes fp16 --models $M \
    --where M=1:1 --max-minutes 4.0 --no-check 2>&1 | tee "$OUT/certify.log" | tail -8
mkdir -p "$OUT/certified/nvidia-h200" "$OUT/tables/nvidia-h200"
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml "$OUT/certified/nvidia-h200/"
cp tables/TRACKED.yaml "$OUT/certified/"
# shellcheck disable=SC2086
timeout 130 python3 -m conformance rank --class nvidia-h200 --models $M --batch 1 --dtype fp16 --max-minutes 1.8 \
    2>&1 | tee "$OUT/rank.log" | tail -12
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml "$OUT/tables/nvidia-h200/"
cp tables/TRACKED.yaml "$OUT/tables/"
pairs=(); for m in $M; do pairs+=("$m:1"); done
timeout 110 python3 -m benchmarks.step_tables --old /tmp/old-tables --new tables --pairs "${pairs[@]}" --dtype fp16 \
    --json "$OUT/step-tables.json" 2>&1 | tee "$OUT/step-tables.log" | cut -c1-300
timeout 45 python3 -m conformance check --class nvidia-h200 --kernel linear --dtype fp16 --where M=1:1 \
    --profile gpu --json "$OUT/check.json" 2>&1 | tail -6 | tee "$OUT/check.log"
