#!/usr/bin/env bash
# One device call (2026-12-06, thirty-eighth session), on an H200 only: the GPU test the thirty-seventh session's call
# lost to its time limit (test_after_warmup_no_run_compiles[engine]: the engine's own cache under NEUROBRIX_HOME, no
# variable set), then the class's gpu-profile check of the attention entries under kernel-mutant round 8's draws,
# resumed from what that call checked (benchmarks/results/2026-12-06b/check-attention2.json: all 186 attention_chunk,
# 61 of 656 attention_decode). Copy $OUT/check-attention3.json into the tree before the next call resumes from it.
#   NEUROBRIX_SOURCE_COMMIT=<sha> OUT=$OUT [NO_TESTS=1] [CHECK_MINUTES=6] [RESUME=path] bash benchmarks/h200_session38.sh
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
python3 -m pip list 2>/dev/null | grep -iE "^(torch|triton|pytorch-triton) " | tee -a "$OUT/gpu.txt"
if ! grep -q H200 "$OUT/gpu.txt"; then
    echo "not an H200: no class certifies this card; nothing run"
    exit 3
fi
[ -n "${NO_TESTS:-}" ] || timeout ${TEST_SECONDS:-200} python3 -m pytest -v -rs -m gpu -p no:cacheprovider --durations=0 tests/test_warmup.py \
    -k "after_warmup_no_run_compiles and engine" 2>&1 | tee "$OUT/gpu-tests.log" | tail -8
RESUME=${RESUME:-benchmarks/results/2026-12-06b/check-attention2.json}
timeout $(( ${CHECK_MINUTES:-6} * 60 + 60 )) python3 -m conformance check --class nvidia-h200 --profile gpu \
    --kernel attention_chunk attention_decode attention_prefill --max-minutes ${CHECK_MINUTES:-6} \
    --json "$OUT/check-attention3.json" --resume "$RESUME" 2>&1 | tail -12 | tee "$OUT/check-attention.log"
