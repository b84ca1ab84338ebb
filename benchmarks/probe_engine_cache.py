"""Where a GPU class's compiled kernels go once the engine's checks pass (walk-through 36): a Triton kernel launched
after ``stack.use_engine_cache()`` is compiled into ``$NEUROBRIX_HOME/triton-cache`` (not ``~/.triton/cache``), and a
second process finds it there and compiles nothing. Prints what it saw; run on a GPU with NEUROBRIX_HOME and HOME set
to empty folders and TRITON_CACHE_DIR/TRITON_HOME unset:

    python -m benchmarks.probe_engine_cache first && python -m benchmarks.probe_engine_cache second
"""

import os
import pathlib
import sys

import torch
import triton
import triton.language as tl

from neurobrix import stack


@triton.jit
def _add_one(x, y, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    m = i < n
    tl.store(y + i, tl.load(x + i, mask=m) + 1, mask=m)


def _files(folder: pathlib.Path) -> dict[pathlib.Path, int]:
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()} if folder.exists() else {}


def main() -> None:
    which = sys.argv[1] if len(sys.argv) > 1 else "first"
    engine = stack.engine_cache()
    default = pathlib.Path(os.path.expanduser("~/.triton/cache"))
    print(f"{which}: torch {torch.__version__}, Triton {triton.__version__}, {torch.cuda.get_device_name(0)}")
    print(f"  engine cache {engine}, its problem: {stack.cache_problem('nvidia-h200')}")
    before = _files(engine)
    stack.use_engine_cache()  # what require_certified_stack does once its checks pass
    from triton import knobs

    print(f"  Triton's knobs.cache.dir after: {knobs.cache.dir}")
    x = torch.zeros(100, device="cuda")
    y = torch.empty_like(x)
    _add_one[(1,)](x, y, 100, B=128)
    torch.cuda.synchronize()
    after = _files(engine)
    print(
        f"  files in the engine cache: {len(before)} before, {len(after)} after, unchanged: {before == after}; "
        f"in {default}: {len(_files(default))}; result right: {bool((y == 1).all())}"
    )


if __name__ == "__main__":
    main()
