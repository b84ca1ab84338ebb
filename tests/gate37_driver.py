"""Gate mutation round 37's driver (not a test file): round 24's driver (tests/planted24_driver.py) run on the plants
of tests/gate37_plants.py, in a copy that is a git checkout of itself (round 26's), with each plant committed there
while its tests run: the gate judges against the commit checked out and names every tracked file that is not as
committed, so a plant left uncommitted in gate/ made every test that asks for a clean tree (the command line without
--allow-dirty, the report's ``repository``) fail whatever the plant did.

    python tests/gate37_driver.py COPY RESULTS.jsonl [ID ...]
    python tests/gate37_driver.py COPY RESULTS.jsonl --with TESTS ID ...
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import planted24_driver  # noqa: E402
from gate37_plants import PLANTS  # noqa: E402
from planted26_driver import git_copy  # noqa: E402


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=planted", "-c", "user.email=planted@localhost", *args], cwd=cwd, check=True)


# Appended to the copy's tests/conftest.py and committed there: every plant is in gate/ or release.yml, none in what
# `python -m build` packs, so the project's build is the same for every plant, and each test module that builds it
# (the hostile corpus's `built`, test_gate.py's) takes a copy of the first build instead (a build took 10-20 s on the
# busy 2-core machine, and a plant's tests built it up to eight times).
BUILD_CACHE = """

# -- gate37_driver: one build of the project for every plant (see tests/gate37_driver.py) --
def _gate37_cached_build():
    import shutil as _shutil

    import gate.build as _build

    real, cache = _build.build_project, REPO.parent / f"{REPO.name}.build"

    def build_project(source, outdir, *, isolation=False):
        if Path(source).resolve() != REPO.resolve() or isolation:
            return real(source, outdir, isolation=isolation)
        if not cache.is_dir():
            real(source, cache)
        Path(outdir).mkdir(parents=True, exist_ok=True)
        for file in sorted(cache.iterdir()):
            _shutil.copyfile(file, Path(outdir) / file.name)
        return sorted(Path(outdir).iterdir()), 0.0

    _build.build_project = build_project


_gate37_cached_build()
"""


def cache_builds(copy: Path) -> None:
    """The copy's tests take one build of the project (BUILD_CACHE), committed there once."""
    conftest = copy / "tests" / "conftest.py"
    if "gate37_driver" in conftest.read_text(encoding="utf-8"):
        return
    conftest.write_text(conftest.read_text(encoding="utf-8") + BUILD_CACHE, encoding="utf-8")
    _git(copy, "commit", "-q", "-a", "-m", "one build for every plant")


class _Committed:
    """subprocess as round 24's driver uses it, each test run with the plant committed and undone after."""

    TimeoutExpired = subprocess.TimeoutExpired

    @staticmethod
    def run(args: list[str], cwd: Path, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        _git(cwd, "commit", "-q", "-a", "-m", "plant")
        try:
            return subprocess.run(args, cwd=cwd, **kwargs)
        finally:
            _git(cwd, "reset", "-q", "--hard", "HEAD~1")


if __name__ == "__main__":
    refused = planted24_driver.usage(sys.argv[1:], __doc__)
    if refused is not None:
        sys.exit(refused)
    git_copy(Path(sys.argv[1]))
    cache_builds(Path(sys.argv[1]))
    planted24_driver.PLANTS = PLANTS
    planted24_driver.subprocess = _Committed  # type: ignore[assignment]
    sys.exit(planted24_driver.main(sys.argv[1:], __doc__))
