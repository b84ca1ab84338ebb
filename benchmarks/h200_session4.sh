#!/usr/bin/env bash
# One device call on an H200: the start-up figures (settings load, doctor beyond importing torch, process start
# to first token with Triton's cache cold then warm), the GPU test of linear's MERGE "last", then linear's
# decode rows in bf16 at batch 1 and 5-8 (M = 1, M = 5..8) certified again with it among the candidates.
#   OUT=<dir> NEUROBRIX_SOURCE_COMMIT=<commit> bash benchmarks/h200_session4.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
python3 -m compileall -q neurobrix conformance benchmarks /tmp/site >/dev/null  # bytecode, as pip installs it
python3 -m benchmarks.startup --class nvidia-h200 --repeats 9 2>&1 | tee "$OUT/startup.txt"
timeout 240 python3 -m benchmarks.cold_start --model TinyLlama/TinyLlama-1.1B-Chat-v1.0 --runs 3 2>&1 | tail -5 \
    | tee "$OUT/cold-start.txt"
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_only.py -k "merge_by_the_last" 2>&1 \
    | tail -8 | tee "$OUT/gpu-merge-test.log"
for where in ${WHERE:-M=1:1 M=5:8}; do
    timeout 300 python3 -m conformance certify --class nvidia-h200 --kernels linear --dtypes bf16 --where "$where" \
        --max-minutes "${MINUTES:-3}" --no-check 2>&1 | tail -12
done | tee "$OUT/certify.log"
tar czf "$OUT/tables.tgz" tables
