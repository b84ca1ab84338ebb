"""An experiment, not a certification: `conformance check` of a GPU class's entries on another GPU of the same
architecture (an H100 for the nvidia-h200 class: both sm_90 with 132 multiprocessors), for a session whose device
calls get the other card. The float64 bounds do not depend on the GPU, so a failure here is a finding; a pass is no
proof for the class (that takes its own GPU; `check` refuses any other, and nothing here writes a table or proof).

    PYTHONPATH=. python -m benchmarks.foreign_check [check's arguments: --class nvidia-h200 --kernel ... --json ...]
"""

from __future__ import annotations

import sys

from conformance import check
from conformance.__main__ import main

if __name__ == "__main__":
    check.require_device = lambda gpu_class: None  # the one rule this experiment sets aside (see the docstring)
    sys.exit(main(["check", *sys.argv[1:]]))
