"""Round 65's planted-bug driver (not a test file): round 26's ``run_round`` (round 24's driver in a copy that is a
git checkout of itself) on the plants of tests/planted67_plants.py (the gate's cases build with hatchling in
the test's own process; none builds the project with pip).

    python tests/planted67_driver.py COPY RESULTS.jsonl [ID ...]
    python tests/planted67_driver.py COPY RESULTS.jsonl --with TESTS ID ...
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from planted26_driver import run_round  # noqa: E402
from planted67_plants import PLANTS  # noqa: E402

if __name__ == "__main__":
    # the tests run as from a terminal (round 34's driver says why: a background job starts with SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(run_round(PLANTS, sys.argv[1:], __doc__))
