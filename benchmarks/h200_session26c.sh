#!/usr/bin/env bash
# Session 26's fifth call on the H200: attention_decode's shipped entries checked with the gpu profile now that
# conformance also draws the cache lengths as the engine passes them (a row of its int64 decode state, strict round
# 24): Triton compiles a kernel per argument dtype, so the proofs so far ran only the int32 binary. OUT set.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
timeout 560 python3 -m conformance check --class nvidia-h200 --kernel attention_decode --profile gpu --no-shrink \
    --max-minutes 8 --json "$OUT/check-attention-decode.json" 2>&1 | tail -8 | tee "$OUT/check-attention-decode.log"
