#!/usr/bin/env bash
# One device call (2026-12-05, thirty-third session): the kernels cuBLAS runs for linear's bf16 prompt-row entries on
# the H200 (benchmarks/cublas_kernels.py), the attention entries checked with the gpu profile under kernel-mutant
# round 8's draws (queries far below their keys, head dim 96), then `neurobrix doctor` and every GPU test but the
# class's whole check. Ends at once on any other GPU (a call for an H200 may get an H100, which no class
# certifies). About 9 minutes:
#   NEUROBRIX_SOURCE_COMMIT=<sha> OUT=$OUT bash benchmarks/h200_session33b.sh
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
grep -q H200 "$OUT/gpu.txt" || { echo "not an H200: nothing run"; exit 3; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
python3 -m pip list 2>/dev/null | grep -iE "^(torch|triton|pytorch-triton) " | tee -a "$OUT/gpu.txt"
timeout 120 python3 -m benchmarks.cublas_kernels --json "$OUT/cublas-kernels-h200.json" 2>&1 | grep -v Warn | cut -c1-160
timeout ${CHECK_TIMEOUT:-330} python3 -m conformance check --class nvidia-h200 --profile gpu --kernel attention_decode attention_prefill \
    attention_chunk --max-minutes ${CHECK_MINUTES:-4.5} --json "$OUT/check-attention.json" 2>&1 | tail -12 | tee "$OUT/check-attention.log"
timeout 40 python3 -m neurobrix doctor 2>&1 | tee "$OUT/doctor.log" | tail -6
set -o pipefail
timeout ${TEST_SECONDS:-150} python3 -m pytest -v -rs -m gpu -p no:cacheprovider --durations=0 \
    tests/test_gpu_only.py tests/test_warmup.py -k "not passes_its_check" 2>&1 | tee "$OUT/gpu-tests.log" | tail -15
