#!/usr/bin/env bash
# Session 22, call 3 on the H200: #17's small Llama pairs beside the torch.compile peer with the op greedy_pick
# ending each greedy step. OUT set.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
timeout 500 python3 -m benchmarks.e2e --model meta-llama/Llama-3.2-1B-Instruct TinyLlama/TinyLlama-1.1B-Chat-v1.0 \
    --batch 1 8 --backends compile triton --prompt 128 --new 256 --repeats 3 --max-minutes 7 \
    --json "$OUT/e2e-small.json" 2>&1 | tee "$OUT/e2e-small.log" | tail -7
