#!/usr/bin/env bash
# The last device call of the thirty-fourth session (2026-12-05), about five minutes. On an H200: `neurobrix doctor`,
# the GPU tests but the class's whole check, and the kernels cuBLAS runs for linear's bf16 prompt rows. On any other
# card (a call for an H200 may get an H100, which no class certifies): the foreign check of 2026-12-05g resumed, its
# greedy_pick and rms_norm entries carried over and rotary's checked (an experiment: nothing written, no proof):
#   NEUROBRIX_SOURCE_COMMIT=<sha> OUT=$OUT bash benchmarks/h200_session34b.sh
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
if ! grep -q H200 "$OUT/gpu.txt"; then
    echo "not an H200: rotary's foreign check only"
    gunzip -c benchmarks/results/2026-12-05g/check-edges-foreign-h100.json.gz > "$OUT/earlier.json"
    timeout 250 python3 -m benchmarks.foreign_check --class nvidia-h200 --profile gpu --kernel greedy_pick rotary \
        rms_norm --max-minutes 3 --resume "$OUT/earlier.json" --json "$OUT/check-rotary-foreign.json" 2>&1 | tail -12 \
        | tee "$OUT/check-rotary-foreign.log"
    exit 3
fi
timeout 40 python3 -m neurobrix doctor 2>&1 | tee "$OUT/doctor.log" | tail -6
timeout 150 python3 -m pytest -v -rs -m gpu -p no:cacheprovider --durations=0 \
    tests/test_gpu_only.py tests/test_warmup.py -k "not passes_its_check" 2>&1 | tee "$OUT/gpu-tests.log" | tail -15
timeout 100 python3 -m benchmarks.cublas_kernels --json "$OUT/cublas-kernels-h200.json" 2>&1 | grep -v Warn | cut -c1-160
