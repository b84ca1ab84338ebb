#!/usr/bin/env bash
# One device call on an H200 (2026-12-01): the other six catalogue shapes side by side with the
# torch.compile peer, on the tables with the skinny decode rows (Llama-3.1-8B at batch 1 and 8, the
# rest at batch 1).   OUT=<dir> bash benchmarks/h200_session3d.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
timeout 200 python3 -m benchmarks.e2e --model meta-llama/Llama-3.1-8B-Instruct --batch 1 8 --backends triton compile \
    --json "$OUT/e2e-8b.json" 2>&1 | tee "$OUT/e2e-8b.log" | tail -6
timeout 330 python3 -m benchmarks.e2e --model Qwen/Qwen2.5-0.5B-Instruct Qwen/Qwen2.5-1.5B-Instruct \
    meta-llama/Llama-3.2-3B-Instruct mistralai/Mistral-7B-Instruct-v0.3 Qwen/Qwen2.5-7B-Instruct --batch 1 \
    --backends triton compile --max-minutes 4.2 --json "$OUT/e2e-rest.json" 2>&1 | tee "$OUT/e2e-rest.log" | tail -12
