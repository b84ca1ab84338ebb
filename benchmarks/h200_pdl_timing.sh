#!/usr/bin/env bash
# One device call on an H200 (2026-12-03): certify again, with candidates timed under programmatic dependent
# launch as the engine launches them, the decode entries one model looks up at one batch; check them with the gpu
# profile; then the model's decode step on the tables before and after, in turn, ROUNDS times each.
#   OUT=<dir> NEUROBRIX_SOURCE_COMMIT=<commit> [MODEL=meta-llama/Llama-3.1-8B-Instruct] [BATCH=8] [BUCKET=5:8]
#       [S=1:1024] [MINUTES=4] [ROUNDS=2] [ROW_KERNELS="rms_norm silu_mul"] [CHECK=1] [PEER=0] \
#       bash benchmarks/h200_pdl_timing.sh
# (ROW_KERNELS="linear rms_norm silu_mul" adds the projections, whose candidates take longest to certify.)
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
model=${MODEL:-meta-llama/Llama-3.1-8B-Instruct}
bucket=${BUCKET:-5:8}
rm -rf /tmp/oldtables && cp -r tables /tmp/oldtables
minutes=${MINUTES:-4}
# --where keeps only kernels that have every dimension it names: one run per key
groups=("${ROW_KERNELS:-rms_norm silu_mul}|M=$bucket" "rotary|T=$bucket" "attention_decode|B=$bucket S=${S:-1:1024}")
for group in "${groups[@]}"; do
    kernels=${group%%|*}; where=(); for w in ${group#*|}; do where+=(--where "$w"); done
    timeout $((minutes * 20 + 100)) python3 -m conformance certify --class nvidia-h200 --dtypes bf16 --models "$model" \
        --kernels $kernels "${where[@]}" --max-minutes "$(python3 -c "print($minutes / 3)")" --no-check \
        >> "$OUT/certify.log" 2>&1
    echo "certify $kernels rc $?"
done
grep -E "^certified|stopping" "$OUT/certify.log"
tar czf "$OUT/tables.tgz" tables
python3 - > "$OUT/settings-changed.txt" <<'PY'
import json
from pathlib import Path
for kernel in ("linear", "attention_decode", "rms_norm", "rotary", "silu_mul"):
    old, new = (json.loads(Path(f"{root}/nvidia-h200/{kernel}.json").read_text()) for root in ("/tmp/oldtables", "tables"))
    before = {json.dumps(e[:-1]): old["configs"][e[-1]] for e in old["entries"]}
    for e in new["entries"]:
        was = before.get(json.dumps(e[:-1]))
        if was != new["configs"][e[-1]]:
            print(kernel, e[:-1], was, "->", new["configs"][e[-1]])
PY
echo "settings changed: $(wc -l < "$OUT/settings-changed.txt")"; cat "$OUT/settings-changed.txt"
for group in "${groups[@]}"; do
    [ "${CHECK:-1}" = 1 ] || break
    kernels=${group%%|*}; where=(); for w in ${group#*|}; do where+=(--where "$w"); done
    timeout 60 python3 -m conformance check --class nvidia-h200 --kernel $kernels --dtype bf16 --profile gpu \
        --no-shrink "${where[@]}" --max-minutes 0.6 >> "$OUT/check.log" 2>&1
    echo "check $kernels rc $?"
done
grep -E "passed|failed|FAIL" "$OUT/check.log" | tail -6
for round in $(seq "${ROUNDS:-2}"); do
    for t in old new; do
        [ "$t" = old ] && export NEUROBRIX_TABLES=/tmp/oldtables || unset NEUROBRIX_TABLES
        timeout 100 python3 -m benchmarks.e2e --model "$model" --batch "${BATCH:-8}" --backends triton --prompt 128 \
            --new 256 --repeats 3 > "$OUT/e2e-$t-$round.log" 2>&1
        echo "$t $round: $(grep -E ' triton ' "$OUT/e2e-$t-$round.log" | head -1)"
    done
done
unset NEUROBRIX_TABLES
if [ "${PEER:-0}" = 1 ]; then
    timeout 200 python3 -m benchmarks.e2e --model "$model" --batch "${BATCH:-8}" --backends compile triton --prompt 128 \
        --new 256 --repeats 5 --max-minutes 3 --json "$OUT/e2e-peer.json" > "$OUT/e2e-peer.log" 2>&1
    echo "peer rc $?"; tail -6 "$OUT/e2e-peer.log"
fi
