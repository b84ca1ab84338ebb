#!/usr/bin/env bash
# Rank decode linear entries inside their model's step on the H200, then time the step with the tables before and
# after side by side. Run from the repository root on the device with OUT set (results and the new tables go there):
#   OUT=$OUT NEUROBRIX_SOURCE_COMMIT=<commit> B1="MODEL ..." B8="MODEL ..." MINUTES=3 bash benchmarks/h200_rank.sh
set -u
export PYTHONPATH=.:/tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
rm -rf /tmp/old-tables && cp -r tables /tmp/old-tables
pairs=()
for batch in 1 8; do
    var="B$batch"
    models=${!var:-}
    [ -n "$models" ] || continue
    # shellcheck disable=SC2086
    python3 -m conformance rank --class nvidia-h200 --models $models --batch "$batch" --max-minutes "${MINUTES:-3}" \
        2>&1 | tee -a "$OUT/rank.log"
    for m in $models; do pairs+=("$m:$batch"); done
done
python3 -m benchmarks.step_tables --old /tmp/old-tables --new tables --pairs "${pairs[@]}" --json "$OUT/step-tables.json" \
    2>&1 | tee "$OUT/step-tables.log" | cut -c1-400
mkdir -p "$OUT/tables/nvidia-h200"
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml "$OUT/tables/nvidia-h200/"
cp tables/TRACKED.yaml "$OUT/tables/"
