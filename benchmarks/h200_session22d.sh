#!/usr/bin/env bash
# Session 22, call 5 on the H200: #17's 7B/8B pairs beside the torch.compile peer with the op greedy_pick. OUT set.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
timeout 530 python3 -m benchmarks.e2e --model meta-llama/Llama-3.1-8B-Instruct --batch 1 8 --backends compile triton \
    --prompt 128 --new 256 --repeats 3 --max-minutes 8 --json "$OUT/e2e-8b.json" 2>&1 | tee "$OUT/e2e-8b.log" | tail -5
