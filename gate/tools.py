"""The packaging tools the gate runs, their findings folded into its own: twine and check-wheel-contents.

``twine check --strict`` runs as its own process per dist (its command line is its interface),
started before the gate's own checks so that both run at once. check-wheel-contents is called
through its API, configured by ``[tool.check-wheel-contents]`` in the repository's pyproject.toml,
so its findings arrive as data.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from types import TracebackType

from .checks import Check, Finding, GateError

TWINE_TIMEOUT_S = 120
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_STATUS = {"PASSED", "FAILED", "FAILED due to warnings", "PASSED with warnings"}


def require(module: str, project: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise GateError(f"{project} is not installed here; install the development tools: "
                        "python -m pip install -e '.[dev]'")


class Twine:
    """``twine check --strict``, one process per dist, collected with :meth:`findings`."""

    def __init__(self, dists: list[Path]) -> None:
        require("twine", "twine")
        env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "PY_COLORS")}
        env.update(TERM="dumb", NO_COLOR="1")  # plain text to parse
        self._running = {
            dist: subprocess.Popen(  # by bare file name: twine wraps its report at 80 columns
                [sys.executable, "-m", "twine", "check", "--strict", dist.name], cwd=dist.parent,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, env=env,
            )
            for dist in dists
        }

    def __enter__(self) -> Twine:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        for process in self._running.values():
            if process.poll() is None:
                process.kill()
                process.wait()

    def findings(self, dist: Path, metadata_path: str | None) -> list[Finding]:
        """What twine said about ``dist`` (empty when it passed), blamed on its metadata file."""
        process = self._running[dist]
        try:
            output, _ = process.communicate(timeout=TWINE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return [Finding(Check.G401, dist.name, metadata_path, f"twine check did not finish in {TWINE_TIMEOUT_S} s")]
        if process.returncode == 0:
            return []
        messages = twine_messages(output, dist.name) or [output.strip() or f"exit status {process.returncode}"]
        return [Finding(Check.G401, dist.name, metadata_path, f"twine check --strict: {m}") for m in messages]


def twine_messages(output: str, dist: str) -> list[str]:
    """twine's report on ``dist`` as one line per message (it wraps long ones onto indented lines)."""
    messages: list[str] = []
    for line in _ANSI.sub("", output).splitlines():
        line = line.removeprefix(f"Checking {dist}: ")
        if not line.strip():
            continue
        if line[0].isspace() and messages:
            messages[-1] += " " + " ".join(line.split())
        else:
            messages.append(" ".join(line.split()))
    return [m for m in messages if m not in _STATUS]


def wheel_contents_findings(wheel: Path, config: Path) -> list[Finding]:
    """check-wheel-contents on one wheel, configured by ``config`` (the repository's pyproject.toml)."""
    require("check_wheel_contents", "check-wheel-contents")
    from check_wheel_contents.checker import WheelChecker  # type: ignore[import-untyped]
    from check_wheel_contents.contents import WheelContents  # type: ignore[import-untyped]
    from check_wheel_contents.errors import UserInputError, WheelValidationError  # type: ignore[import-untyped]
    from wheel_filename import InvalidFilenameError

    checker = WheelChecker()
    try:
        checker.configure_options(configpath=str(config))
    except UserInputError as exc:
        raise GateError(f"check-wheel-contents cannot use its configuration: {exc}") from exc
    try:
        contents = WheelContents.from_wheel(wheel)
    except (InvalidFilenameError, WheelValidationError, ValueError, KeyError, UnicodeDecodeError, csv.Error,
            zipfile.BadZipFile) as exc:
        return [Finding(Check.G403, wheel.name, None, f"check-wheel-contents: invalid wheel: {exc}")]
    return [
        Finding(Check.G402, wheel.name, path, f"check-wheel-contents {failure.check.name}: {failure.check.value}")
        for failure in checker.check_contents(contents)
        for path in (failure.args or [None])
    ]
