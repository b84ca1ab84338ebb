#!/usr/bin/env bash
# One device call on an H200 (2026-12-01): the gpu-profile check (fresh seeds) of the kernels certified
# for long contexts, then the GPU warmup test.   OUT=<dir> bash benchmarks/h200_check_long.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
timeout "${CHECK_SECONDS:-420}" python3 -m conformance check --class nvidia-h200 --kernel attention_chunk attention_decode \
    --profile gpu --examples "${EXAMPLES:-25}" --max-minutes "${CHECK_MINUTES:-6}" --json "$OUT/check-long.json" 2>&1 \
    | tail -25 | tee "$OUT/check-long.log"
timeout "${GPUTEST_SECONDS:-120}" python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_warmup.py 2>&1 | tail -15 \
    | tee "$OUT/gpu-warmup-test.log"
