"""Round 62's planted-bug driver (not a test file): gate round 39's (tests/gate39_driver.py: round 24's driver in a
copy that is a git checkout of itself, each plant committed there while its tests run, one build of the project for
every plant) on the plants of tests/planted64_plants.py.

    python tests/planted64_driver.py COPY RESULTS.jsonl [ID ...]
    python tests/planted64_driver.py COPY RESULTS.jsonl --with TESTS ID ...
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gate39_driver import run  # noqa: E402
from planted64_plants import PLANTS  # noqa: E402

if __name__ == "__main__":
    # the tests run as from a terminal (round 34's driver says why: a background job starts with SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(run(PLANTS, sys.argv[1:], __doc__))
