#!/usr/bin/env bash
# One device call on an H200 (2026-12-03b): certify attention_decode's bf16 entries of the e2e run's buckets
# (batch 5-8, caches 257-512) with the one-launch candidates, time Llama-3.1-8B at batch 8 beside the compile
# peer on those tables, then certify the rest of batch >= 5, caches up to 1,024, in what time is left.
#   OUT=<dir> NEUROBRIX_SOURCE_COMMIT=<commit> bash benchmarks/h200_attention.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
certify() {  # $1: log name, $2: minutes, then --where options
    local log=$1 minutes=$2
    shift 2
    timeout $((minutes * 60 + 60)) python3 -m conformance certify --class nvidia-h200 --kernels attention_decode \
        --dtypes bf16 "$@" --max-minutes "$minutes" --no-check > "$OUT/$log" 2>&1
    echo "certify $* rc $?"
    tail -4 "$OUT/$log"
}
certify certify-e2e.log 2 --where B=5:8 --where S=257:512
timeout 270 python3 -m benchmarks.e2e --model meta-llama/Llama-3.1-8B-Instruct --batch 8 --backends compile triton \
    --prompt 128 --new 256 --repeats 5 --max-minutes 4 --json "$OUT/e2e-8b-b8.json" > "$OUT/e2e-8b-b8.log" 2>&1
echo "e2e rc $?"
tail -8 "$OUT/e2e-8b-b8.log"
certify certify-rest.log "${MINUTES:-2}" --where B=9: --where S=1:1024
tar czf "$OUT/tables.tgz" tables
python3 - <<'PY'
import collections, json
t = json.load(open("tables/nvidia-h200/attention_decode.json"))
configs = t["configs"]
c = collections.Counter((e[0][0], e[1], e[2], e[3], e[4], json.dumps(configs[e[-1]], sort_keys=True))
                        for e in t["entries"] if e[1] >= 5 and e[4] <= 1024)
for k, v in sorted(c.items()):
    print(*k, v)
PY
