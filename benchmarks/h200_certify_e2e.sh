#!/usr/bin/env bash
# One H200 call (fits the 10-minute job limit): the per-op bf16/fp16 sweep against float64, a
# certification of the nvidia-h200 class for the shapes TinyLlama and Llama-3.1-8B need at batch 1
# (128-token prompt, 256 new tokens), then generation speed of both shapes on both backends.
# Run from the repository root on the GPU machine: OUT=<dir> bash benchmarks/h200_certify_e2e.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python -m conformance sweep --dtypes bf16 fp16 --examples 30 ${SWEEP_KERNELS:+--kernels $SWEEP_KERNELS} --json "$OUT/sweep.json" 2>&1 | tee "$OUT/sweep.log"
rm -rf /tmp/t && cp -r tables /tmp/t
MODELS="TinyLlama/TinyLlama-1.1B-Chat-v1.0 meta-llama/Llama-3.1-8B-Instruct"
python -m conformance certify --class nvidia-h200 --dtypes bf16 --models $MODELS \
    --limit decode_batch=1:1 --limit prefill_batch=1:1 --limit prompt=128:128 --limit capacity=384:384 \
    --max-minutes "${CERTIFY_MINUTES:-5}" --no-check --tables /tmp/t 2>&1 | tee "$OUT/certify.log"
tar czf "$OUT/h200-tables.tgz" -C /tmp/t nvidia-h200 TRACKED.yaml
NEUROBRIX_TABLES=/tmp/t python -m benchmarks.e2e --model $MODELS --json "$OUT/e2e.json" 2>&1 | tee "$OUT/e2e.log"
