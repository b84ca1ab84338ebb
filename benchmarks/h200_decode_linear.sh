#!/usr/bin/env bash
# linear's decode entries at M = 1 of the given catalogue models certified again with the 8-warp gemv candidates,
# ranked in their model's step, the step with the tables before and after side by side, then every M = 1 entry of
# the dtype checked with the gpu profile. New tables under $OUT/tables, certify's alone under $OUT/certified.
#   NEUROBRIX_SOURCE_COMMIT=<sha> OUT=$OUT bash benchmarks/h200_decode_linear.sh bf16 MODEL...
# Run on 2026-12-05 (benchmarks/results/2026-12-05*): bf16 for meta-llama/Llama-3.1-8B-Instruct,
# mistralai/Mistral-7B-Instruct-v0.3 and Qwen/Qwen2.5-7B-Instruct; fp16 for TinyLlama/TinyLlama-1.1B-Chat-v1.0,
# meta-llama/Llama-3.2-1B-Instruct, meta-llama/Llama-3.2-3B-Instruct, Qwen/Qwen2.5-0.5B-Instruct, Qwen/Qwen2.5-1.5B-Instruct.
# Times: certify 4 min, rank 2 min, step 2 min, check 45 s: one call of under 10 minutes.
set -u
if [ $# -lt 2 ] || [ -z "${OUT:-}" ]; then
    echo "usage: OUT=<folder> bash $0 {bf16|fp16} MODEL..." >&2
    exit 2
fi
dtype=$1
shift
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
rm -rf /tmp/old-tables && cp -r tables /tmp/old-tables
timeout 270 python3 -m conformance certify --class nvidia-h200 --kernels linear --dtypes "$dtype" --models "$@" \
    --where M=1:1 --max-minutes 4.0 --no-check 2>&1 | tee "$OUT/certify.log" | tail -8
mkdir -p "$OUT/certified/nvidia-h200" "$OUT/tables/nvidia-h200"
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml "$OUT/certified/nvidia-h200/"
cp tables/TRACKED.yaml "$OUT/certified/"
timeout 150 python3 -m conformance rank --class nvidia-h200 --models "$@" --batch 1 --dtype "$dtype" \
    --max-minutes 2.0 2>&1 | tee "$OUT/rank.log" | tail -12
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml "$OUT/tables/nvidia-h200/"
cp tables/TRACKED.yaml "$OUT/tables/"
pairs=()
for m in "$@"; do pairs+=("$m:1"); done
timeout 110 python3 -m benchmarks.step_tables --old /tmp/old-tables --new tables --pairs "${pairs[@]}" \
    --dtype "$dtype" --json "$OUT/step-tables.json" 2>&1 | tee "$OUT/step-tables.log" | cut -c1-300
timeout 45 python3 -m conformance check --class nvidia-h200 --kernel linear --dtype "$dtype" --where M=1:1 \
    --profile gpu --json "$OUT/check.json" 2>&1 | tail -6 | tee "$OUT/check.log"
# the device returns a handful of files: the two table sets travel as one archive
tar -C "$OUT" -czf "$OUT/tables.tgz" tables certified && rm -rf "$OUT/tables" "$OUT/certified"
