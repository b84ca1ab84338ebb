#!/usr/bin/env bash
# Session 21, call 2 on the H200: rank the 8B step at batch 8 again (the next alternatives), the Mistral-7B and
# Qwen2.5-7B steps at batch 8 (not ranked before), then each step with the tables before and after. OUT set.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-c6dc9b8}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
rm -rf /tmp/old-tables && cp -r tables /tmp/old-tables
python3 -m conformance rank --class nvidia-h200 --models meta-llama/Llama-3.1-8B-Instruct --batch 8 --again \
    --max-minutes 2.5 2>&1 | tee "$OUT/rank-8b-b8-again.log"
python3 -m conformance rank --class nvidia-h200 --models mistralai/Mistral-7B-Instruct-v0.3 Qwen/Qwen2.5-7B-Instruct \
    --batch 8 --max-minutes 3.5 2>&1 | tee "$OUT/rank-7b-b8.log"
python3 -m benchmarks.step_tables --old /tmp/old-tables --new tables --steps 100 --rounds 5 --pairs \
    meta-llama/Llama-3.1-8B-Instruct:8 mistralai/Mistral-7B-Instruct-v0.3:8 Qwen/Qwen2.5-7B-Instruct:8 \
    --json "$OUT/step-tables-b8.json" 2>&1 | tee "$OUT/step-tables-b8.log" | cut -c1-400
mkdir -p "$OUT/tables/nvidia-h200"
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml "$OUT/tables/nvidia-h200/"
cp tables/TRACKED.yaml "$OUT/tables/"
