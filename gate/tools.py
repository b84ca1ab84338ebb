"""The packaging tools the gate runs, their findings folded into its own: twine and check-wheel-contents.

``twine check --strict`` runs as its own process per dist (its command line is its interface), and
check-wheel-contents through its API in one process of its own, configured by
``[tool.check-wheel-contents]`` in the repository's pyproject.toml, its findings returned as data;
both start before the gate's own checks, so that all run at once. Only archives the gate reads one way
only are handed to them, and their findings count only where the gate's own reading found nothing
unsafe (a member that inflates past its size, say).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

from .checks import Check, Finding, GateError

TWINE_TIMEOUT_S = 120
TWINE_AT_ONCE = 4  # twine processes running together (each about 40 MB resident)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_STATUS = {"PASSED", "FAILED", "FAILED due to warnings", "PASSED with warnings"}


def require(module: str, project: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise GateError(
            f"{project} is not installed here; install the development tools: python -m pip install -e '.[dev]'"
        )


class Twine:
    """``twine check --strict``, one process per dist, at most :data:`TWINE_AT_ONCE` at a time, collected with
    :meth:`findings` in the order the dists were given."""

    def __init__(self, dists: list[Path]) -> None:
        require("twine", "twine")
        self._env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "PY_COLORS")}
        self._env.update(TERM="dumb", NO_COLOR="1")  # plain text to parse
        self._waiting = list(dists)
        self._running: dict[Path, subprocess.Popen[str]] = {}
        self._start_more()

    def _start(self, dist: Path) -> subprocess.Popen[str]:
        return subprocess.Popen(  # by bare file name: twine wraps its report at 80 columns
            # -I: nothing from the dist's folder (a twine.py planted beside the dists) is importable
            [sys.executable, "-I", "-m", "twine", "check", "--strict", dist.name],
            cwd=dist.parent,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            # twine prints the dist's file name, which need not be UTF-8 (gate round 32: a name holding the byte
            # 0xff stopped the gate, "internal error", where the name is the finding, G407)
            errors="backslashreplace",
            env=self._env,
        )

    def _start_more(self) -> None:
        # Not all at once (gate round 32): an upload folder of 60 wheels started 60 twine processes together, 2.5 GB
        # resident, and one of 600 would exhaust a CI runner's memory before any finding was reported.
        while self._waiting and len(self._running) < TWINE_AT_ONCE:
            dist = self._waiting.pop(0)
            self._running[dist] = self._start(dist)

    def __enter__(self) -> Twine:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._waiting.clear()
        for process in self._running.values():
            if process.poll() is None:
                process.kill()
                process.wait()

    def findings(self, dist: Path, metadata_path: str | None) -> list[Finding]:
        """What twine said about ``dist`` (empty when it passed), blamed on its metadata file."""
        if dist in self._waiting:  # those before it that are never collected (tools skipped) hold their places
            self._waiting.remove(dist)
            self._running[dist] = self._start(dist)
        process = self._running[dist]
        try:
            output, _ = process.communicate(timeout=TWINE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return [Finding(Check.G401, dist.name, metadata_path, f"twine check did not finish in {TWINE_TIMEOUT_S} s")]
        finally:
            if process.poll() is not None:
                del self._running[dist]
                self._start_more()
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


# check-wheel-contents through its API, in a process of its own so that it runs beside the gate's checks
# (importing it alone takes about half a second); its findings come back as JSON data.
_WHEEL_CONTENTS = """
import json, sys
from pathlib import Path
from check_wheel_contents.checker import WheelChecker
from check_wheel_contents.contents import WheelContents
from check_wheel_contents.errors import UserInputError
checker = WheelChecker()
try:
    checker.configure_options(configpath=sys.argv[1])
except UserInputError as exc:
    print(json.dumps({"config": str(exc)}))
    raise SystemExit(0)
report = {}
for wheel in sys.argv[2:]:
    try:
        contents = WheelContents.from_wheel(Path(wheel))
    except Exception as exc:  # whatever it cannot read is a finding (G403) of the gate's, not a crash here
        report[wheel] = {"invalid": f"{type(exc).__name__}: {exc}"}
        continue
    report[wheel] = {"failures": [[f.check.name, f.check.value, [str(a) for a in f.args]]
                                  for f in checker.check_contents(contents)]}
print(json.dumps({"wheels": report}))
"""


class WheelContentsCheck:
    """check-wheel-contents on every wheel, configured by ``config`` (the repository's pyproject.toml), in one
    process started with twine; collected with :meth:`findings`."""

    def __init__(self, wheels: list[Path], config: Path) -> None:
        require("check_wheel_contents", "check-wheel-contents")
        self._report: dict[str, Any] | None = None
        self._process = (
            subprocess.Popen(
                [sys.executable, "-I", "-c", _WHEEL_CONTENTS, str(config), *map(str, wheels)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
                errors="backslashreplace",
            )
            if wheels
            else None
        )

    def __enter__(self) -> WheelContentsCheck:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    def _collect(self) -> dict[str, Any]:
        if self._report is None:
            if self._process is None:
                self._report = {}
                return self._report
            try:
                out, err = self._process.communicate(timeout=TWINE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.communicate()
                self._report = {"error": f"did not finish in {TWINE_TIMEOUT_S} s"}
                return self._report
            try:
                report = json.loads(out)
            except ValueError:
                report = {"error": f"exited {self._process.returncode}: {' | '.join(err.strip().splitlines()[-3:])}"}
            if "config" in report:
                raise GateError(f"check-wheel-contents cannot use its configuration: {report['config']}")
            self._report = report
        return self._report

    def findings(self, wheel: Path) -> list[Finding]:
        report = self._collect()
        if "error" in report:
            return [Finding(Check.G403, wheel.name, None, f"check-wheel-contents {report['error']}")]
        result = report.get("wheels", {}).get(str(wheel), {"invalid": "not checked"})
        if "invalid" in result:
            return [Finding(Check.G403, wheel.name, None, f"check-wheel-contents: invalid wheel: {result['invalid']}")]
        return [
            Finding(Check.G402, wheel.name, path, f"check-wheel-contents {name}: {value}")
            for name, value, paths in result["failures"]
            for path in (paths or [None])
        ]
