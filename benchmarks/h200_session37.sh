#!/usr/bin/env bash
# One device call (2026-12-06, thirty-seventh session; first written for the thirty-sixth), about nine minutes on an
# H200: every GPU test but the class's whole check (test_after_warmup_no_run_compiles twice: into TRITON_CACHE_DIR,
# and into the engine's own cache under NEUROBRIX_HOME with no variable set), `neurobrix doctor`, the kernels cuBLAS
# runs for linear's bf16 prompt rows, and the attention entries' gpu-profile check under kernel-mutant round 8's draws
# (resumable). On any other card (a call for an H200 may get an H100, which no class certifies) it stops at once (exit 3):
#   NEUROBRIX_SOURCE_COMMIT=<sha> OUT=$OUT [SHORT=1] bash benchmarks/h200_session37.sh
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
python3 -m pip list 2>/dev/null | grep -iE "^(torch|triton|pytorch-triton) " | tee -a "$OUT/gpu.txt"
if ! grep -q H200 "$OUT/gpu.txt"; then
    echo "not an H200: no class certifies this card; nothing run"
    exit 3
fi
timeout ${TEST_SECONDS:-260} python3 -m pytest -v -rs -m gpu -p no:cacheprovider --durations=0 \
    tests/test_gpu_only.py tests/test_warmup.py -k "not passes_its_check" 2>&1 | tee "$OUT/gpu-tests.log" | tail -20
timeout 40 python3 -m neurobrix doctor 2>&1 | tee "$OUT/doctor.log" | tail -8
[ -n "${SHORT:-}" ] && exit 0  # SHORT=1: the GPU tests and doctor only (about four minutes)
timeout 100 python3 -m benchmarks.cublas_kernels --json "$OUT/cublas-kernels-h200.json" 2>&1 | grep -v Warn | cut -c1-160
timeout ${CHECK_TIMEOUT:-150} python3 -m conformance check --class nvidia-h200 --profile gpu --kernel attention_chunk \
    attention_decode attention_prefill --max-minutes ${CHECK_MINUTES:-2} --json "$OUT/check-attention.json" 2>&1 \
    | tail -12 | tee "$OUT/check-attention.log"
