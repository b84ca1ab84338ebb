#!/usr/bin/env bash
# Session 24's sixth call on the H200: the TinyLlama step at batch 1 ranked inside the step over the M = 1 entries
# certified in call 5 (benchmarks/h200_rank.sh: conformance rank, then the step with the tables before and after),
# then TinyLlama at batch 1 beside the torch.compile peer (benchmarks.e2e). New tables under $OUT. OUT set.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
OUT=$OUT B1="TinyLlama/TinyLlama-1.1B-Chat-v1.0" MINUTES=1.5 timeout 190 bash benchmarks/h200_rank.sh 2>&1 | tail -12
timeout 200 python3 -m benchmarks.e2e --model TinyLlama/TinyLlama-1.1B-Chat-v1.0 --batch 1 --backends compile triton \
    --prompt 128 --new 256 --repeats 3 --json "$OUT/e2e-tinyllama-b1.json" 2>&1 | tail -20 | tee "$OUT/e2e-tinyllama-b1.log"
