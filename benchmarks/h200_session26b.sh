#!/usr/bin/env bash
# Session 26's fourth call on the H200: the tree after gate round 24, text rounds 19-20 (rotary tables as transformers
# computes them), strict rounds 23-24 (per-model merge counters, launches checked per device) and planted round 19 (checkpoint
# readers refuse integers no float holds; sliding-window configs transformers cannot run are refused) and the
# certify fix for tables recorded with what torch states: `neurobrix doctor`, every GPU test but the class's whole
# check, what a user sees after `neurobrix warmup` (benchmarks/h200_user_runs.sh), then one linear entry certified
# again into the shipped table (the provenance merge on this image's torch, 2.11.0+cu130 stated, 2.11.0 installed).
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -m pip list 2>/dev/null | grep -iE "^(torch|triton|pytorch-triton) " | tee -a "$OUT/gpu.txt"
timeout 60 python3 -m neurobrix doctor 2>&1 | tee "$OUT/doctor.log" | tail -25
set -o pipefail
timeout 420 python3 -m pytest -v -rs -m gpu -p no:cacheprovider --durations=0 \
    tests/test_gpu_only.py tests/test_warmup.py -k "not passes_its_check" 2>&1 | tee "$OUT/gpu-tests.log" | tail -25
set +o pipefail
OUT=$OUT GPUTEST_SECONDS=1 timeout 170 bash benchmarks/h200_user_runs.sh
timeout 120 python3 -m conformance certify --class nvidia-h200 --kernels linear --dtypes bf16 \
    --where M=513:1024 --where N=896:896 --where K=896:896 --max-minutes 1.5 --no-check 2>&1 | tee "$OUT/certify-merge.log" | tail -6
grep -A3 "resumed:" tables/nvidia-h200/linear.proofs.yaml | head -3 >> "$OUT/certify-merge.log"
grep -n "^  torch:" tables/nvidia-h200/linear.proofs.yaml | tee -a "$OUT/certify-merge.log"
