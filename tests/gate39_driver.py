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


def run(plants: list[dict], argv: list[str], doc: str | None = __doc__) -> int:
    """Round 37's driver on ``plants`` (a later round's driver calls this with its own)."""
    refused = planted24_driver.usage(argv, doc)
    if refused is not None:
        return refused
    git_copy(Path(argv[0]))
    gate37_driver.cache_builds(Path(argv[0]))
    planted24_driver.PLANTS = plants
    planted24_driver.subprocess = gate37_driver._Committed  # type: ignore[assignment]
    return planted24_driver.main(argv, doc)


if __name__ == "__main__":
    sys.exit(run(PLANTS, sys.argv[1:]))
