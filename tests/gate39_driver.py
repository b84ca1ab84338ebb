"""Gate mutation round 39's driver (not a test file): round 37's (tests/gate37_driver.py: round 24's driver in a copy
that is a git checkout of itself, each plant committed there while its tests run, one build of the project for every
plant) on the plants of tests/gate39_plants.py.

    python tests/gate39_driver.py COPY RESULTS.jsonl [ID ...]
    python tests/gate39_driver.py COPY RESULTS.jsonl --with TESTS ID ...
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gate37_driver  # noqa: E402
import planted24_driver  # noqa: E402
from gate39_plants import PLANTS  # noqa: E402
from planted26_driver import git_copy  # noqa: E402

if __name__ == "__main__":
    refused = planted24_driver.usage(sys.argv[1:], __doc__)
    if refused is not None:
        sys.exit(refused)
    git_copy(Path(sys.argv[1]))
    gate37_driver.cache_builds(Path(sys.argv[1]))
    planted24_driver.PLANTS = PLANTS
    planted24_driver.subprocess = gate37_driver._Committed  # type: ignore[assignment]
    sys.exit(planted24_driver.main(sys.argv[1:], __doc__))
