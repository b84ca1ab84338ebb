#!/usr/bin/env bash
# One device call on an H200 for the fused decode projections (rms_norm_linear, silu_mul_linear):
#   STEP=certify  certify them for every catalogue decode row, bf16 then fp16 (resumable: --only-missing),
#                 then check the written entries with fresh seeds (gpu profile) if time is left
#   STEP=e2e      the end-to-end decode benchmark beside the torch.compile peer (MODELS, BATCHES)
#   OUT=<dir> NEUROBRIX_SOURCE_COMMIT=<commit> STEP=... bash benchmarks/h200_session5.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
python3 -m compileall -q neurobrix conformance benchmarks /tmp/site >/dev/null
case "${STEP:-certify}" in
certify)
    for dtype in ${DTYPES:-bf16 fp16}; do
        timeout $(( ${MINUTES:-3} * 60 + 60 )) python3 -m conformance certify --class nvidia-h200 \
            --kernels rms_norm_linear silu_mul_linear --dtypes "$dtype" --only-missing \
            --max-minutes "${MINUTES:-3}" --no-check 2>&1 | tail -8
    done | tee "$OUT/certify.log"
    tar czf "$OUT/tables.tgz" tables
    if [ -n "${CHECK:-}" ]; then
        timeout "${CHECK}" python3 -m conformance check --class nvidia-h200 --kernel rms_norm_linear silu_mul_linear \
            --profile gpu 2>&1 | tail -15 | tee "$OUT/check.log"
    fi
    ;;
e2e)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
    # shellcheck disable=SC2086
    timeout $(( ${MINUTES:-7} * 60 + 90 )) python3 -m benchmarks.e2e --model ${MODELS} --backends triton compile \
        --batch ${BATCHES:-1 8} --prompt 128 --new 256 --repeats 7 --max-minutes "${MINUTES:-7}" \
        --json "$OUT/e2e.json" > "$OUT/e2e.log" 2>&1
    tail -30 "$OUT/e2e.log"
    ;;
esac
