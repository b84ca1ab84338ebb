#!/usr/bin/env bash
# Session 22, call 1 on the H200: the greedy pick and position bump as one Triton kernel inside the decode step
# (benchmarks/proto_pick_step.py) against the engine's step, on the catalogue's vocabularies. OUT set.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
timeout 300 python3 -m benchmarks.proto_pick_step --pairs meta-llama/Llama-3.2-1B-Instruct:1 \
    TinyLlama/TinyLlama-1.1B-Chat-v1.0:1 Qwen/Qwen2.5-0.5B-Instruct:1 meta-llama/Llama-3.2-1B-Instruct:8 \
    TinyLlama/TinyLlama-1.1B-Chat-v1.0:8 --json "$OUT/proto-pick-step.json" 2>&1 | tee "$OUT/proto-pick-step.log" | tail -12
timeout 150 python3 -m benchmarks.proto_pick_step --pairs meta-llama/Llama-3.1-8B-Instruct:1 --steps 100 \
    --variants b4096w4 b8192w8 --json "$OUT/proto-pick-step-8b.json" 2>&1 | tee "$OUT/proto-pick-step-8b.log" | tail -4
