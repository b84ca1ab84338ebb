#!/usr/bin/env bash
# One device call on an H200: (KERNELS_BENCH=1) the certified linear on prompt rows against cuBLAS, then the
# end-to-end benchmark of some catalogue models beside the torch.compile peer, in one run: decode at a
# 128-token prompt, prefill and time to first token at 128, 512 and 2,048 tokens.
#   OUT=<dir> MODELS="..." BATCHES="1 8" [PROMPTS="128"] MINUTES=7 bash benchmarks/h200_final.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
if [ -n "${KERNELS_BENCH:-}" ]; then
    timeout 150 python3 -m benchmarks.kernels --kernels linear --dtypes bf16 --where M=513: \
        --json "$OUT/linear-prompt-rows.json" 2>&1 | tail -8 | tee "$OUT/linear-prompt-rows.log"
fi
# shellcheck disable=SC2086
timeout $(( ${MINUTES:-7} * 60 + 120 )) python3 -m benchmarks.e2e --model ${MODELS} --backends ${BACKENDS:-triton compile} \
    --batch ${BATCHES:-1 8} --prompt ${PROMPTS:-128 512 2048} --new 256 --repeats 7 --max-minutes "${MINUTES:-7}" \
    --json "$OUT/e2e.json" > "$OUT/e2e.log" 2>&1
tail -30 "$OUT/e2e.log"
if [ -n "${MODELS2:-}" ]; then  # a second set, at other batch sizes
    timeout $(( ${MINUTES2:-4} * 60 + 120 )) python3 -m benchmarks.e2e --model ${MODELS2} \
        --backends ${BACKENDS:-triton compile} --batch ${BATCHES2:-1} --prompt ${PROMPTS:-128 512 2048} --new 256 --repeats 7 \
        --max-minutes "${MINUTES2:-4}" --json "$OUT/e2e2.json" > "$OUT/e2e2.log" 2>&1
    tail -30 "$OUT/e2e2.log"
fi
