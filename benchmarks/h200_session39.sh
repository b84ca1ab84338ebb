#!/usr/bin/env bash
# One device call (2026-12-06, thirty-ninth session), on an H200 only: the class's gpu-profile check of the kernels
# named (fresh seeds, 25 examples an entry, as certify proves one) with --record, which binds each kernel table the
# check passes whole to the kernel code it ran (neurobrix.stack.kernel_source); the tables come back as
# $OUT/tables.tgz (unpack over the checkout's tables/). A kernel cut by the time limit resumes with RESUME=<its report>.
#   NEUROBRIX_SOURCE_COMMIT=<sha> OUT=$OUT KERNELS="linear ..." [MINUTES=8] [RESUME=path] [TESTS=1] bash benchmarks/h200_session39.sh
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
python3 -m pip list 2>/dev/null | grep -iE "^(torch|triton|pytorch-triton) " | tee -a "$OUT/gpu.txt"
if ! grep -q H200 "$OUT/gpu.txt"; then
    echo "not an H200: no class certifies this card; nothing run"
    exit 3
fi
python3 -m neurobrix doctor 2>&1 | tail -4
timeout $(( ${MINUTES:-8} * 60 + 50 )) python3 -m conformance check --class nvidia-h200 --profile gpu --examples 25 \
    --kernel ${KERNELS} --record --max-minutes ${MINUTES:-8} --json "$OUT/check.json" ${RESUME:+--resume "$RESUME"} \
    > "$OUT/check.log" 2>&1
echo "check exit $?"
grep -vE "^ +[0-9]+/[0-9]+ " "$OUT/check.log" | tail -20
tar czf "$OUT/tables.tgz" tables
[ -z "${TESTS:-}" ] || timeout ${TEST_SECONDS:-200} python3 -m pytest -v -rs -m gpu -p no:cacheprovider tests/test_warmup.py \
    -k "after_warmup_no_run_compiles and engine" 2>&1 | tee "$OUT/gpu-tests.log" | tail -8
