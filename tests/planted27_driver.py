"""Round 27's planted-bug driver (not a test file): round 24's driver (tests/planted24_driver.py) run on the plants
of tests/planted27_plants.py.

    python tests/planted27_driver.py COPY RESULTS.jsonl [ID ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import planted24_driver  # noqa: E402
from planted27_plants import PLANTS  # noqa: E402

if __name__ == "__main__":
    planted24_driver.PLANTS = PLANTS
    sys.exit(planted24_driver.main(sys.argv[1:], __doc__))
