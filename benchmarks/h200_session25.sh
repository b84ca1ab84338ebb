#!/usr/bin/env bash
# Session 25's first call on the H200: benchmarks.proto_host_tma, linear's persistent TMA walk with descriptors made
# on the host (kernel parameters) against the engine's, which makes them in the kernel, on every bf16 prompt-row
# entry, beside cuBLAS and the certified setting (#18's 0.906x). OUT set.
set -u
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" | tee "$OUT/stack.txt"
set -o pipefail
timeout 520 python3 -m benchmarks.proto_host_tma --minutes 7 --json "$OUT/host-tma.json" 2>&1 | tee "$OUT/host-tma.log"
