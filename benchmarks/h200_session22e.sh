#!/usr/bin/env bash
# Session 22, call 7 on the H200: the final tree. The GPU tests of the greedy loop and the warmup, what a user
# sees after `neurobrix warmup` (nothing compiled on a run, greedy_pick included), then the Mistral-7B and Qwen2.5-7B
# pairs at batch 8 beside the torch.compile peer. OUT set.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_only.py 2>&1 | tail -3 | tee "$OUT/gpu-only-tests.log"
OUT=$OUT GPUTEST_SECONDS=100 timeout 240 bash benchmarks/h200_user_runs.sh
timeout 230 python3 -m benchmarks.e2e --model mistralai/Mistral-7B-Instruct-v0.3 Qwen/Qwen2.5-7B-Instruct --batch 8 \
    --backends compile triton --prompt 128 --new 256 --repeats 3 --max-minutes 3.5 \
    --json "$OUT/e2e-7b.json" 2>&1 | tee "$OUT/e2e-7b.log" | tail -5
