#!/usr/bin/env bash
# Session 25's fourth call on the H200: every re-certified prompt-row entry of linear (bf16 and fp16, M >= 513)
# checked with the gpu profile, then the TinyLlama shape's prefill at 128, 512 and 2,048 tokens side by side with the
# torch.compile peer (benchmarks.e2e: prefill graphs now replay the tma kernels with host-made descriptors). OUT set.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
for dtype in bf16 fp16; do
    timeout 200 python3 -m conformance check --class nvidia-h200 --kernel linear --dtype $dtype --where M=513: \
        --profile gpu --json "$OUT/check-$dtype.json" 2>&1 | tail -6 | tee "$OUT/check-$dtype.log"
done
timeout 330 python3 -m benchmarks.e2e --model TinyLlama/TinyLlama-1.1B-Chat-v1.0 --batch 1 --backends compile triton \
    --new 128 --json "$OUT/e2e-prefill.json" 2>&1 | tail -30 | tee "$OUT/e2e-prefill.log"
