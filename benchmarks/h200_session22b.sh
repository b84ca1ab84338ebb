#!/usr/bin/env bash
# Session 22, call 2 on the H200: certify the new op greedy_pick (bf16, fp16, the catalogue's domains), check it
# with the gpu profile, run the GPU tests of the greedy loop, then the engine's step with greedy_pick against the
# step as it was (PyTorch's pick and state.add_), side by side. OUT set.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
timeout 300 python3 -m conformance certify --class nvidia-h200 --kernels greedy_pick --dtypes bf16 fp16 \
    --max-minutes 4 2>&1 | tee "$OUT/certify-greedy-pick.log" | tail -12
mkdir -p "$OUT/tables" && cp tables/nvidia-h200/greedy_pick.* tables/TRACKED.yaml "$OUT/tables/"
timeout 120 python3 -m conformance check --class nvidia-h200 --kernel greedy_pick --profile gpu --no-shrink 2>&1 \
    | tee "$OUT/check-gpu-greedy-pick.log" | tail -5
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_only.py -k "greedy or prefill_replayed or dependent_launch" \
    2>&1 | tee "$OUT/gpu-tests.log" | tail -3
timeout 200 python3 -m benchmarks.proto_pick_step --variants torch-pick --pairs meta-llama/Llama-3.2-1B-Instruct:1 \
    TinyLlama/TinyLlama-1.1B-Chat-v1.0:1 Qwen/Qwen2.5-0.5B-Instruct:1 meta-llama/Llama-3.2-1B-Instruct:8 \
    TinyLlama/TinyLlama-1.1B-Chat-v1.0:8 --json "$OUT/step-pick.json" 2>&1 | tee "$OUT/step-pick.log" | tail -6
