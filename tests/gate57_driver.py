"""Gate mutation round 57's driver (not a test file): round 39's (tests/gate39_driver.py, imported: round 37's driver in
a copy that is a git checkout of itself, each plant committed there while its tests run, one build of the project for
every plant) on the plants of tests/gate57_plants.py.

    python tests/gate57_driver.py COPY RESULTS.jsonl [ID ...]
    python tests/gate57_driver.py COPY RESULTS.jsonl --with TESTS ID ...
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gate39_driver  # noqa: E402
from gate57_plants import PLANTS  # noqa: E402

if __name__ == "__main__":
    sys.exit(gate39_driver.run(PLANTS, sys.argv[1:], __doc__))
