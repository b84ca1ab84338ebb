#!/usr/bin/env bash
# One H200 call: re-certify the decode rows (M = 1) of linear for TinyLlama and Llama-3.1-8B with the
# split-K GEMV candidates, then generation speed on both backends and every kernel against PyTorch.
# Needs the certified subset in .device-out/t/nvidia-h200 (carry .device-out). OUT=<dir> bash benchmarks/h200_gemv.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1
rm -rf /tmp/t && cp -r tables /tmp/t && cp -r .device-out/t/nvidia-h200 /tmp/t/ && python -m conformance track --tables /tmp/t
export NEUROBRIX_TABLES=/tmp/t
MODELS="TinyLlama/TinyLlama-1.1B-Chat-v1.0 meta-llama/Llama-3.1-8B-Instruct"
python -m conformance certify --class nvidia-h200 --kernels linear --dtypes bf16 --models $MODELS \
    --limit decode_batch=1:1 --limit prefill_batch=1:1 --limit prompt=1:1 --limit capacity=384:384 \
    --max-minutes "${CERTIFY_MINUTES:-2.5}" --no-check --tables /tmp/t 2>&1 | tee "$OUT/certify.log"
tar czf "$OUT/h200-tables.tgz" -C /tmp/t nvidia-h200
timeout 120 python -m benchmarks.e2e --model $MODELS --backends triton torch --json "$OUT/e2e.json" 2>&1 | grep '^{'
timeout 90 python -m benchmarks.kernels --json "$OUT/kernels.json" 2>&1 | tail -40
