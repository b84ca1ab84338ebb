#!/usr/bin/env bash
# Session 24's third call on the H200: #17's TinyLlama target against the floor of one kernel per projection.
# benchmarks.proto_stream_floor (each projection replaced by a kernel that only streams its weights, at the best of
# its grid; the step's 89 in one graph, with PDL and without, beside cuBLAS's one-row GEMMs), then the engine's own
# step by op (benchmarks.decode_profile, PDL on and off), in one call on one machine. OUT set.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
set -o pipefail
timeout 330 python3 -m benchmarks.proto_stream_floor --json "$OUT/stream-floor.json" 2>&1 | tee "$OUT/stream-floor.log"
timeout 200 python3 -m benchmarks.decode_profile --model TinyLlama/TinyLlama-1.1B-Chat-v1.0 --batch 1 \
    --backends triton-serial triton --json "$OUT/decode-profile.json" 2>&1 | tail -40 | tee "$OUT/decode-profile.log"
