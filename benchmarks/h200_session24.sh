#!/usr/bin/env bash
# Session 24's first call on the H200: every GPU test but the class's whole check (run with the gpu profile when
# the tables were shipped), with the time the last call's 170 s limit cut short: it confirms that a plan with PDL
# off runs on the H200 (the fix of 53dbaf7) and runs the tests that limit never reached. OUT set.
set -u
export PYTHONPATH=.:/tmp/site NEUROBRIX_SOURCE_COMMIT=${NEUROBRIX_SOURCE_COMMIT:-unknown} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/gpu.txt"
set -o pipefail
timeout ${GPUTEST_SECONDS:-480} python3 -m pytest -v -rs -m gpu -p no:cacheprovider --durations=0 \
    tests/test_gpu_only.py tests/test_warmup.py -k "not passes_its_check" 2>&1 | tee "$OUT/gpu-tests.log"
