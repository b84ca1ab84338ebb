#!/usr/bin/env bash
# Session 24's fourth call on the H200: benchmarks.proto_stream_floor again over a wider grid (block rows 8-32, K
# blocks 128-1,024, SPLIT_K 1-22 including 11 and 22 for down's K of 5,632, 4 or 8 warps), so that the floor is no
# artefact of call 3's grid. OUT set.
set -u
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
set -o pipefail
timeout 450 python3 -m benchmarks.proto_stream_floor --json "$OUT/stream-floor-wide.json" 2>&1 | tee "$OUT/stream-floor-wide.log"
