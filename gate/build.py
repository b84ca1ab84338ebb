"""Building this project with ``python -m build`` into a fresh folder, for the gate to check what it built.

``python -m build`` makes the sdist first and then the wheel from that sdist, so a build that passes
has already shown that the sdist rebuilds the wheel. Without ``--isolation`` it uses the build
backend installed here (the dev extra brings hatchling), so it needs no network.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from .checks import GateError
from .tools import require

BUILD_TIMEOUT_S = 600


def build_project(source: Path, outdir: Path, *, isolation: bool = False) -> tuple[list[Path], float]:
    """Build sdist and wheel of ``source`` into the empty or new folder ``outdir``; (files, seconds)."""
    require("build", "build")
    # a file where the folder is meant, or above it, is named as one (walk-through round 46: "not an empty folder" and
    # "cannot make this folder to build into (Not a directory)" named neither)
    above = next((p for p in [outdir, *outdir.parents] if p.exists()), None)
    if above is not None and not above.is_dir():
        raise GateError(
            f"{outdir}: {'' if above == outdir else f'{above} is '}a file, not a folder; the gate builds into a new or "
            "empty folder (choose another --outdir)"
        )
    if outdir.exists() and any(outdir.iterdir()):
        raise GateError(
            f"{outdir}: not an empty folder; the gate builds into a fresh one so that it checks "
            "exactly what was built (remove it or choose another --outdir)"
        )
    try:  # here, so that a folder that cannot be made is one line, not the tail of the build's log
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GateError(f"{outdir}: cannot make this folder to build into ({exc.strerror or exc})") from exc
    command = [sys.executable, "-m", "build", "--outdir", str(outdir), str(source)]
    if not isolation:
        command.insert(3, "--no-isolation")
    start = time.monotonic()
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as exc:
        raise GateError(f"`{' '.join(command)}` did not finish in {BUILD_TIMEOUT_S} s") from exc
    seconds = time.monotonic() - start
    if result.returncode != 0:
        tail = " | ".join((result.stdout + result.stderr).strip().splitlines()[-15:])  # one line, as every error is
        raise GateError(f"the project does not build: `{' '.join(command)}` exited {result.returncode}: {tail}")
    return sorted(outdir.iterdir()), seconds
