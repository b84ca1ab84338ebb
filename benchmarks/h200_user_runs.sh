#!/usr/bin/env bash
# One device call on an H200 (2026-12-01): the GPU warmup test, then what a user sees: a TinyLlama-shaped
# checkpoint (all 22 layers, random weights) imported, warmed up once, then `neurobrix run` with a 26-token
# prompt at several --max-tokens, each a fresh process (its statistics line kept).
#   OUT=<dir> bash benchmarks/h200_user_runs.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>/dev/null
timeout "${GPUTEST_SECONDS:-130}" python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_warmup.py 2>&1 | tail -4 \
    | tee "$OUT/gpu-warmup-test.log"
T=/tmp/user; rm -rf $T; mkdir -p $T
export NEUROBRIX_HOME=$T/home TRITON_CACHE_DIR=$T/triton-cache
python3 -c "import sys; sys.path.insert(0,'tests'); from pathlib import Path; import parity; \
parity.catalogue_checkpoint(Path('$T/tinyllama'), 'TinyLlama/TinyLlama-1.1B-Chat-v1.0', layers=22)" >/dev/null 2>&1
python3 -m neurobrix import $T/tinyllama 2>&1 | tail -1
PROMPT=$(python3 -c "
from neurobrix import store; from neurobrix.tokenizer import Tokenizer
t = Tokenizer(store.resolve('tinyllama').path); text = 'hello world, hello tokens, never guess a setting ' * 4
while len(t.encode_prompt(text, chat=False)) > 26: text = text[:-1]
print(text)")
{ time timeout 200 python3 -m neurobrix warmup --model tinyllama --max-prompt 64 --max-tokens 300 2>&1 | tail -1 ; } 2>&1 \
    | tee "$OUT/user-runs.log"
echo "binaries in Triton's cache after the warmup: $(find $T/triton-cache -name '*.cubin' | wc -l)" | tee -a "$OUT/user-runs.log"
for n in 256 200 100 300 256 256; do
    echo "--max-tokens $n: $(timeout 60 python3 -m neurobrix run --model tinyllama --prompt "$PROMPT" --no-chat \
        --max-tokens $n 2>&1 >/dev/null | tail -1)" | tee -a "$OUT/user-runs.log"
done
echo "binaries in Triton's cache after the runs: $(find $T/triton-cache -name '*.cubin' | wc -l)" | tee -a "$OUT/user-runs.log"
