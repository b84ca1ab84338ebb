#!/usr/bin/env bash
# One device call on an H200 (2026-12-02): the tree's refusals on the lent machine as it comes (its Triton
# variables, doctor), the same after torch.compile's inductor has compiled in the process (the peer runs beside
# the certified path in benchmarks.e2e), the GPU-only tests but the whole-class check, the conformance check of
# the kernels named in KERNELS (ci profile, every shipped setting) and what a user sees (h200_user_runs.sh).
#   OUT=<dir> [KERNELS="rms_norm silu_mul"] [CHECK_MINUTES=4] bash benchmarks/h200_recheck.sh
set -uo pipefail
export PYTHONPATH=.:/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>/dev/null
{ echo "Triton-related variables set: $(env | grep -cE '^(TRITON_|PTXAS|DISABLE_|LLVM_|MLIR_)')"
  env | grep -E '^(TRITON_|PTXAS|DISABLE_|LLVM_|MLIR_)'; python3 -m neurobrix doctor; } > "$OUT/doctor.log" 2>&1
python3 - > "$OUT/inductor-then-stack.log" 2>&1 <<'EOF'
import os, torch
from neurobrix.stack import compiler_overrides, compiler_problem
print("before inductor:", compiler_overrides(), compiler_problem("nvidia-h200"))
f = torch.compile(lambda x: torch.sin(x) * 2 + torch.pow(x, 3))
f(torch.randn(4096, device="cuda")); torch.cuda.synchronize()
print("after inductor:", compiler_overrides())
print("problem:", compiler_problem("nvidia-h200"))
print("TRITON_* now:", {k: v for k, v in os.environ.items() if k.startswith("TRITON")})
EOF
timeout 420 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_only.py -k "not this_gpus_class" \
    > "$OUT/gpu-only.log" 2>&1; echo "gpu-only tests exit $?" >> "$OUT/gpu-only.log"
if [ -n "${KERNELS:-}" ]; then
    timeout 400 python3 -m conformance check --class nvidia-h200 --kernel $KERNELS --profile ci --shipped --no-shrink \
        --max-minutes "${CHECK_MINUTES:-4}" --json "$OUT/check.json" > "$OUT/check.log" 2>&1
    echo "check exit $?" >> "$OUT/check.log"
fi
OUT=$OUT GPUTEST_SECONDS=150 bash benchmarks/h200_user_runs.sh
