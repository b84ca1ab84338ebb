"""Round 26's planted-bug driver (not a test file): round 24's driver (tests/planted24_driver.py) run on the plants
of tests/planted26_plants.py, in a copy that is a git checkout of itself (the gate's unit tests judge against the
files git tracks: in a copy without .git they fail whatever is planted).

    python tests/planted26_driver.py COPY RESULTS.jsonl [ID ...]
    python tests/planted26_driver.py COPY RESULTS.jsonl --with TESTS ID ...
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import planted24_driver  # noqa: E402
from planted26_plants import PLANTS  # noqa: E402


def git_copy(copy: Path) -> None:
    """The repository's working tree copied to ``copy`` and committed there, unless ``copy`` exists."""
    if copy.exists():
        return
    shutil.copytree(HERE.parent, copy, ignore=shutil.ignore_patterns(".git", "__pycache__", ".ruff_cache"))
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "copy"]):
        subprocess.run(
            ["git", "-c", "user.name=planted", "-c", "user.email=planted@localhost", *args], cwd=copy, check=True
        )


def run_round(plants: list[dict], argv: list[str], doc: str | None = __doc__) -> int:
    """Round 24's driver on ``plants``, in a copy (``argv[0]``) made a git checkout of itself."""
    refused = planted24_driver.usage(argv, doc)
    if refused is not None:
        return refused
    git_copy(Path(argv[0]))
    planted24_driver.PLANTS = plants
    return planted24_driver.main(argv, doc)


if __name__ == "__main__":
    sys.exit(run_round(PLANTS, sys.argv[1:]))
