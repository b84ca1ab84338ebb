"""The install smoke: install the wheel as a user would and let the engine's own loader judge its tables.

A fresh virtual environment in a temporary folder outside the source tree gets the wheel with
``pip install --no-deps --no-index``; then ``neurobrix tables verify --json`` runs there, from that
folder, with nothing pointing back at the source tree. The environment sees, after its own
site-packages, the site-packages folders of the environment the gate runs in (plain paths in a .pth
file), so pip and heavy dependencies such as torch are reused, never downloaded; that also works when
the gate itself runs in a virtual environment, where ``system_site_packages`` would reach past it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import venv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from neurobrix.tables import ENV_VAR, WHEEL_DIR

from .checks import Check, Finding

Status = Literal["passed", "failed", "skipped"]
STEP_TIMEOUT_S = 300
_ENV_DROP = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", ENV_VAR)


@dataclass(frozen=True)
class SmokeResult:
    wheel: str
    status: Status
    detail: str
    findings: list[Finding] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"wheel": self.wheel, "status": self.status, "detail": self.detail}


def skipped(wheel: Path, why: str) -> SmokeResult:
    return SmokeResult(wheel.name, "skipped", why)


def install_smoke(wheel: Path, source_tree: Path) -> SmokeResult:
    """Install ``wheel`` into a fresh environment and run the engine's ``tables verify`` there."""
    with tempfile.TemporaryDirectory(prefix="neurobrix-gate-smoke-") as tmp:
        work = Path(tmp).resolve()
        env_dir = work / "env"
        bin_dir = _fresh_environment(env_dir)
        env = {k: v for k, v in os.environ.items() if k not in _ENV_DROP}
        env.update(PYTHONNOUSERSITE="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")

        def fail(check: Check, path: str | None, message: str) -> SmokeResult:
            return SmokeResult(wheel.name, "failed", message, [Finding(check, wheel.name, path, message)])

        try:
            pip = subprocess.run(
                [bin_dir / "python", "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed",
                 "--quiet", str(wheel)],
                capture_output=True, text=True, env=env, cwd=work, timeout=STEP_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            return fail(Check.G701, None, f"pip install did not finish in {STEP_TIMEOUT_S} s")
        if pip.returncode != 0:
            return fail(Check.G701, None, f"pip install failed: {_tail(pip.stdout + pip.stderr)}")
        try:
            verify = subprocess.run(
                [bin_dir / "neurobrix", "tables", "verify", "--json"],
                capture_output=True, text=True, env=env, cwd=work, timeout=STEP_TIMEOUT_S,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return fail(Check.G703, None, f"`neurobrix tables verify` could not run: {exc}")
        try:
            report = json.loads(verify.stdout)
        except json.JSONDecodeError:
            return fail(Check.G703, None, f"`neurobrix tables verify --json` exited {verify.returncode} without a JSON "
                                          f"report: {_tail(verify.stdout + verify.stderr)}")
        location = Path(str(report.get("location", "")))
        if not report.get("ok"):
            problems = report.get("problems") or [{"path": None, "message": f"exit status {verify.returncode}"}]
            findings = [
                Finding(Check.G702, wheel.name, f"{WHEEL_DIR}/{p['path']}" if p.get("path") else None,
                        f"the installed engine refuses its tables: {p.get('message')}")
                for p in problems
            ]
            return SmokeResult(wheel.name, "failed", f"`neurobrix tables verify` refused {location}", findings)
        if report.get("origin") != "installed package" or not location.is_relative_to(env_dir) \
                or location.is_relative_to(source_tree):
            return fail(Check.G703, None, f"the tables were loaded from {location} ({report.get('origin')}), "
                                          "not from the installed wheel")
        relative = location.relative_to(env_dir).as_posix()
        return SmokeResult(wheel.name, "passed", f"installed into a fresh virtual environment; `neurobrix tables "
                                                 f"verify` loaded {report.get('files')} tracked files from "
                                                 f"<env>/{relative}")


def _fresh_environment(env_dir: Path) -> Path:
    """A new virtual environment that also sees this one's packages; returns its scripts folder."""
    venv.create(env_dir, with_pip=False, symlinks=os.name != "nt")
    own = next(env_dir.glob("Lib/site-packages" if os.name == "nt" else "lib/python*/site-packages"))
    outer = [p for p in dict.fromkeys(sys.path) if Path(p).name in ("site-packages", "dist-packages")
             and Path(p).is_dir() and Path(p).resolve() != own.resolve()]
    (own / "_gate_reuse.pth").write_text("".join(f"{p}\n" for p in outer), encoding="utf-8")
    return env_dir / ("Scripts" if os.name == "nt" else "bin")


def _tail(text: str, lines: int = 8) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:] if line.strip())

