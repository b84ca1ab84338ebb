#!/usr/bin/env bash
# One device call on an H200: certify attention_decode again where the e2e runs look up (batch up to 8, caches up
# to 1,024 by default), print which settings changed, then time Llama-3.1-8B at batch 8 beside the compile peer.
#   OUT=<dir> NEUROBRIX_SOURCE_COMMIT=<commit> [DTYPES=bf16] [WHERE="B=1:8 S=1:1024"] [MINUTES=3] [E2E=1] \
#       bash benchmarks/h200_attention.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
summary() {  # the entries in range: dtype, batch bucket, cache bucket, head dim, group, setting
    python3 - "$1" <<'PY'
import json, sys
t = json.load(open("tables/nvidia-h200/attention_decode.json"))
configs = t["configs"]
rows = sorted((e[0][0], e[1], e[2], e[3], e[4], e[5], e[7], json.dumps(configs[e[-1]], sort_keys=True))
              for e in t["entries"] if e[2] <= 8 and e[4] <= 1024)
with open(sys.argv[1], "w") as f:
    for r in rows:
        print(*r, file=f)
PY
}
summary "$OUT/settings-before.txt"
where=()
for w in ${WHERE:-B=1:8 S=1:1024}; do where+=(--where "$w"); done
minutes=${MINUTES:-3}
timeout $((minutes * 60 + 90)) python3 -m conformance certify --class nvidia-h200 --kernels attention_decode \
    --dtypes ${DTYPES:-bf16} "${where[@]}" --max-minutes "$minutes" --no-check > "$OUT/certify.log" 2>&1
echo "certify rc $?"
tail -4 "$OUT/certify.log"
summary "$OUT/settings-after.txt"
diff "$OUT/settings-before.txt" "$OUT/settings-after.txt" | head -80
tar czf "$OUT/tables.tgz" tables
if [ "${E2E:-1}" = 1 ]; then
    timeout 290 python3 -m benchmarks.e2e --model meta-llama/Llama-3.1-8B-Instruct --batch 8 --backends compile triton \
        --prompt 128 --new 256 --repeats 5 --max-minutes 4 --json "$OUT/e2e-8b-b8.json" > "$OUT/e2e-8b-b8.log" 2>&1
    echo "e2e rc $?"
    tail -8 "$OUT/e2e-8b-b8.log"
fi
