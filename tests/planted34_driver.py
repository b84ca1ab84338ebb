"""Round 34's planted-bug driver (not a test file): round 26's ``run_round`` (round 24's driver in a copy that is a
git checkout of itself) on the plants of tests/planted34_plants.py.

    python tests/planted34_driver.py COPY RESULTS.jsonl [ID ...]
    python tests/planted34_driver.py COPY RESULTS.jsonl --with TESTS ID ...
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from planted26_driver import run_round  # noqa: E402
from planted34_plants import PLANTS  # noqa: E402

if __name__ == "__main__":
    # the tests run as from a terminal: a background job (`&` in a script) starts with SIGINT ignored, its pytest runs
    # inherit that, and the Ctrl-C tests of walk-through 33 then failed whatever was planted (Python's own handler
    # here is reset to the default in each child)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(run_round(PLANTS, sys.argv[1:], __doc__))
