#!/usr/bin/env bash
# Session 21, call 1 on the H200: rank the 1B b1 step again (the next 6 alternatives) and the 8B step at batch 1, then
# the step with the tables before and after. Run on the device with OUT set.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-da94caa}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
rm -rf /tmp/old-tables && cp -r tables /tmp/old-tables
python3 -m conformance rank --class nvidia-h200 --models meta-llama/Llama-3.2-1B-Instruct --batch 1 --again --max-minutes 2.5 2>&1 | tee $OUT/rank-1b-again.log
python3 -m conformance rank --class nvidia-h200 --models meta-llama/Llama-3.1-8B-Instruct --batch 1 --max-minutes 3 2>&1 | tee $OUT/rank-8b-b1.log
python3 -m benchmarks.step_tables --old /tmp/old-tables --new tables --pairs meta-llama/Llama-3.2-1B-Instruct:1 meta-llama/Llama-3.1-8B-Instruct:1 --json $OUT/step-tables.json 2>&1 | tee $OUT/step-tables.log | cut -c1-400
mkdir -p $OUT/tables/nvidia-h200 && cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml $OUT/tables/nvidia-h200/ && cp tables/TRACKED.yaml $OUT/tables/
