#!/usr/bin/env bash
# Session 21, call 3 on the H200: the borderline #17 pairs beside the torch.compile peer with this session's
# ranked tables: Llama-3.1-8B at batch 1 and 8, then (time allowing) Qwen2.5-7B at batch 8. OUT set.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
timeout 400 python3 -m benchmarks.e2e --model meta-llama/Llama-3.1-8B-Instruct --batch 1 8 --backends compile triton \
    --prompt 128 --new 256 --repeats 3 --json "$OUT/e2e-8b.json" 2>&1 | tee "$OUT/e2e-8b.log" | tail -12
timeout 150 python3 -m benchmarks.e2e --model Qwen/Qwen2.5-7B-Instruct --batch 8 --backends compile triton \
    --prompt 128 --new 256 --repeats 3 --json "$OUT/e2e-qwen7b-b8.json" 2>&1 | tee "$OUT/e2e-qwen7b-b8.log" | tail -8
