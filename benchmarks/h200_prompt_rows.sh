#!/usr/bin/env bash
# One device call on an H200: the GPU tests of dependent launch and prefill graphs, then linear re-certified
# on prompt rows (M >= 513, with the split-K candidates for few output tiles), the tables brought back.
#   OUT=<dir> NEUROBRIX_SOURCE_COMMIT=<commit> MINUTES=6 bash benchmarks/h200_prompt_rows.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_only.py -k "prefill_replayed" 2>&1 \
    | tail -15 | tee "$OUT/gpu-tests.log"
timeout $(( ${MINUTES:-6} * 60 + 60 )) python3 -m conformance certify --class nvidia-h200 --kernels linear \
    --dtypes ${DTYPES:-bf16 fp16} --where M=513: --max-minutes "${MINUTES:-6}" --no-check 2>&1 | tee "$OUT/certify.log" | tail -20
tar czf "$OUT/tables.tgz" tables
