#!/usr/bin/env bash
# One device call on an H200 (2026-12-01): the GPU warmup test, then the long-context benchmark on two
# more catalogue shapes (Qwen2.5-7B, Llama-3.2-1B; 30,000-token prompts).   OUT=<dir> bash benchmarks/h200_long2.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
timeout "${GPUTEST_SECONDS:-150}" python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_warmup.py 2>&1 | tail -15 \
    | tee "$OUT/gpu-warmup-test.log"
for model in Qwen/Qwen2.5-7B-Instruct meta-llama/Llama-3.2-1B-Instruct; do
    name=$(basename "$model")
    timeout "${BENCH_SECONDS:-150}" python3 -m benchmarks.long_context --model "$model" --prompt 30000 --new 128 \
        --json "$OUT/long-$name.json" 2>&1 | tee "$OUT/long-$name.log" | tail -5
done
