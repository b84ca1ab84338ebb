"""Round 33's planted-bug driver (not a test file): round 26's ``run_round`` (round 24's driver in a copy that is a
git checkout of itself) on the plants of tests/planted33_plants.py.

    python tests/planted33_driver.py COPY RESULTS.jsonl [ID ...]
    python tests/planted33_driver.py COPY RESULTS.jsonl --with TESTS ID ...
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from planted26_driver import run_round  # noqa: E402
from planted33_plants import PLANTS  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_round(PLANTS, sys.argv[1:], __doc__))
