#!/usr/bin/env bash
# One device call on an H200 (2026-12-02b, call 2): start-up figures (#16) and certify's shortlisted
# timing measured against the full timing of 2026-12-02 call 2 (the same 162 linear prompt-row tasks).
#   OUT=<dir> NEUROBRIX_SOURCE_COMMIT=<commit> MINUTES=4.5 bash benchmarks/h200_session8.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>/dev/null
python3 -c "import neurobrix.cli, neurobrix.tables, neurobrix.run, conformance.certify"  # bytecode, as pip compiles it
timeout 120 python3 -m benchmarks.startup --class nvidia-h200 --repeats 9 2>&1 | tee "$OUT/startup.txt"
timeout 150 python3 -m benchmarks.cold_start --model TinyLlama/TinyLlama-1.1B-Chat-v1.0 --runs 4 \
    --json "$OUT/cold_start.json" 2>&1 | grep -v "^phase" | tail -8
rm -rf /tmp/scratch-tables && cp -r tables /tmp/scratch-tables
timeout 330 python3 -m conformance certify --class nvidia-h200 --kernels linear --dtypes bf16 fp16 --where M=513: \
    --max-minutes "${MINUTES:-4.5}" --no-check --tables /tmp/scratch-tables > "$OUT/certify-shortlist.log" 2>&1
tail -4 "$OUT/certify-shortlist.log"
python3 - <<'PY' > "$OUT/shortlist-vs-full.json"
import json
from pathlib import Path
from neurobrix import tables
old = {e.domain: e for e in tables.load(Path("tables")).proofs("nvidia-h200", "linear").entries}
new = tables.load(Path("/tmp/scratch-tables")).proofs("nvidia-h200", "linear")
rows = []
for e in new.entries:
    if e.domain.spans()["M"][0] < 513 or e.proof.time_best_us == old[e.domain].proof.time_best_us:
        continue  # not certified in this run
    o = old[e.domain]
    rows.append({"domain": e.domain.describe(), "same_config": dict(e.config) == dict(o.config),
                 "old_us": o.proof.time_best_us, "new_us": e.proof.time_best_us,
                 "tried_old": o.proof.candidates_tried, "tried_new": e.proof.candidates_tried})
print(json.dumps({"timing": new.provenance.get("timing"), "rows": rows}, indent=1))
PY
python3 - "$OUT/shortlist-vs-full.json" <<'PY'
import json, math, sys
rows = json.load(open(sys.argv[1]))["rows"]
r = [x["new_us"] / x["old_us"] for x in rows]
print(len(rows), "re-certified;", sum(x["same_config"] for x in rows), "same config;",
      "new/old best time geomean %.3f min %.3f max %.3f" % (math.exp(sum(map(math.log, r)) / len(r)), min(r), max(r)) if r else "")
PY
