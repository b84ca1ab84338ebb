#!/usr/bin/env bash
# Session 26's first and second calls on the H200 (at b0dcdd5; the variant and benchmarks.proto_stream_k were then
# dropped, see benchmarks/results/2026-12-04m): linear's new stream-K variant (tma_stream) tried on the prompt-row shapes that
# lose most to cuBLAS (benchmarks.proto_stream_k: each candidate against float64, the certified setting and
# F.linear), then linear's bf16 prompt-row entries (M >= 513) certified again with it among the candidates, then
# measured against cuBLAS. New tables under $OUT.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
timeout 150 python3 -m benchmarks.proto_stream_k 2>&1 | tee "$OUT/proto-stream-k.log" | tail -60
timeout 300 python3 -m conformance certify --class nvidia-h200 --kernels linear --dtypes bf16 --where M=513: \
    --max-minutes 4.6 --no-check 2>&1 | tee "$OUT/certify-bf16.log" | tail -8
mkdir -p "$OUT/tables/nvidia-h200"
cp tables/nvidia-h200/linear.json tables/nvidia-h200/linear.proofs.yaml "$OUT/tables/nvidia-h200/"
cp tables/TRACKED.yaml "$OUT/tables/"
timeout 100 python3 -m benchmarks.kernels --kernels linear --where M=513: --json "$OUT/kernels-linear-prompt-bf16.json" \
    2>&1 | tail -8 | tee "$OUT/kernels-linear-prompt-bf16.log"
