"""Round 28's planted-bug driver (not a test file): round 24's driver (tests/planted24_driver.py) run on the plants
of tests/planted28_plants.py, in a copy that is a git checkout of itself (as round 26's: the gate's tests judge
against the files git tracks).

    python tests/planted28_driver.py COPY RESULTS.jsonl [ID ...]
    python tests/planted28_driver.py COPY RESULTS.jsonl --with TESTS ID ...
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import planted24_driver  # noqa: E402
from planted26_driver import git_copy  # noqa: E402
from planted28_plants import PLANTS  # noqa: E402

if __name__ == "__main__":
    refused = planted24_driver.usage(sys.argv[1:], __doc__)
    if refused is not None:
        sys.exit(refused)
    git_copy(Path(sys.argv[1]))
    planted24_driver.PLANTS = PLANTS
    sys.exit(planted24_driver.main(sys.argv[1:], __doc__))
