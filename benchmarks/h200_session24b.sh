#!/usr/bin/env bash
# Session 24's second call on the H200: the tree after strict rounds 19 and 20 changed what a launch checks (tables
# only as tables.load gives them, a stored model's safetensors headers hashed, the op modules the engine ships and
# no other, an installed wheel's kernels held to its RECORD, a Triton cache every user can write refused), text
# rounds 15 and 16 and gate rounds 20 and 21. Every GPU test but the class's whole check, then what a user sees after
# `neurobrix warmup` (benchmarks/h200_user_runs.sh). OUT set.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/gpu.txt"
set -o pipefail
timeout 360 python3 -m pytest -v -rs -m gpu -p no:cacheprovider --durations=0 \
    tests/test_gpu_only.py tests/test_warmup.py -k "not passes_its_check" 2>&1 | tee "$OUT/gpu-tests.log"
set +o pipefail
OUT=$OUT GPUTEST_SECONDS=1 timeout 200 bash benchmarks/h200_user_runs.sh
