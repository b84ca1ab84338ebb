"""The install smoke: pip installs the wheel into a fresh prefix, the gate hashes everything it wrote,
then the engine's own loader judges the installed tables.

It runs only once every static check of every dist has passed, so what is installed is the
repository's package, byte for byte, and nothing in the wheel can choose what runs:

* pip runs on the gate's own interpreter in isolated mode (``python -I -m pip``, no PYTHONPATH, no
  user site, no pip configuration: ``PIP_CONFIG_FILE`` is the null device), with ``--no-deps
  --no-index --no-compile --ignore-installed --prefix <fresh folder>``: nothing is downloaded,
  compiled or uninstalled, and nothing of the wheel is executed by installing it;
* the gate lists every file pip wrote and holds it against the wheel's members (sha256) and pip's own
  records, and hashes the installed tables against the reference tracked list (G704);
* only then does the gate's own interpreter, again isolated (``-I -B``), import the installed package
  from that folder and run ``neurobrix tables verify --json`` (G702, G703). No executable from the
  wheel or from the prefix is ever started.

Each step has a time limit of :data:`SMOKE_TIMEOUT_S` seconds, and a step that runs past it is named.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from neurobrix.tables import TRACKED_NAME, WHEEL_DIR, sha256_of

from .archive import WheelArchive
from .backend import clean_environment
from .checks import Check, Finding
from .completeness import Reference
from .repository import Repository

Status = Literal["passed", "failed", "skipped"]
SMOKE_TIMEOUT_S = 60
PIP_WRITES = ("INSTALLER", "RECORD", "REQUESTED", "direct_url.json")  # pip's own files in the .dist-info
_VERIFY = (
    "import sys; sys.path.insert(0, sys.argv[1]); from neurobrix.cli import main; "
    "sys.exit(main(['tables', 'verify', '--json']))"
)


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


def _failed(wheel: str, check: Check, path: str | None, message: str) -> SmokeResult:
    return SmokeResult(wheel, "failed", message, [Finding(check, wheel, path, message)])


def _run(
    command: list[str], cwd: Path, what: str, wheel: str, check: Check
) -> subprocess.CompletedProcess[str] | SmokeResult:
    env = clean_environment()
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    try:
        return subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            timeout=SMOKE_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return _failed(wheel, check, None, f"{what} of {wheel} did not finish in {SMOKE_TIMEOUT_S} s; stopped")
    except OSError as exc:
        return _failed(wheel, check, None, f"{what} of {wheel} could not be started: {exc}")


def install_smoke(wheel: WheelArchive, reference: Reference, repo: Repository) -> SmokeResult:
    """Install ``wheel`` into a fresh prefix, hash what pip wrote, and run the engine's ``tables verify``."""
    name = wheel.dist
    with tempfile.TemporaryDirectory(prefix="neurobrix-gate-smoke-") as tmp:
        work = Path(tmp).resolve()
        prefix = work / "env"
        pip = _run(
            [
                sys.executable,
                "-I",
                "-m",
                "pip",
                "install",
                "--no-deps",
                "--no-index",
                "--no-compile",
                "--no-cache-dir",
                "--ignore-installed",
                "--no-warn-script-location",
                "--prefix",
                str(prefix),
                str(wheel.path),
            ],
            work,
            "`pip install`",
            name,
            Check.G701,
        )
        if isinstance(pip, SmokeResult):
            return pip
        if pip.returncode != 0:
            return _failed(name, Check.G701, None, f"pip install failed: {_tail(pip.stdout + pip.stderr)}")
        paths = sysconfig.get_paths(
            sysconfig.get_preferred_scheme("prefix"), vars={"base": str(prefix), "platbase": str(prefix)}
        )
        site, scripts = Path(paths["purelib"]), Path(paths["scripts"])
        problems = _inventory(wheel, prefix, site, scripts, repo) + _installed_tables(site, reference)
        if problems:
            findings = [Finding(Check.G704, name, path, message) for path, message in problems]
            return SmokeResult(
                name,
                "failed",
                f"pip wrote files the gate does not find equal to the wheel's ({len(findings)} problems)",
                findings,
            )
        verify = _run(
            [sys.executable, "-I", "-B", "-c", _VERIFY, str(site)], work, "`neurobrix tables verify`", name, Check.G703
        )
        if isinstance(verify, SmokeResult):
            return verify
        return _judge_verify(name, verify, site, work, repo.root, len(reference.files))


def _inventory(
    wheel: WheelArchive, prefix: Path, site: Path, scripts: Path, repo: Repository
) -> list[tuple[str | None, str]]:
    """Every file pip wrote, against the wheel's members and pip's own records; (path, problem) each."""
    expected: dict[Path, str | None] = {}  # installed file -> the wheel member it must equal (None: pip's own)
    for name in wheel.files:
        if not name.endswith(".dist-info/RECORD"):
            expected[site / name] = name
    expected.update({site / repo.declared.dist_info / n: None for n in PIP_WRITES})
    for group in ("console_scripts", "gui_scripts"):
        for script in repo.declared.entry_points.get(group, {}):
            expected.update({scripts / script: None, scripts / f"{script}.exe": None})
    problems: list[tuple[str | None, str]] = []
    found: set[Path] = set()
    for folder, dirs, files in os.walk(prefix):
        for entry in [*dirs, *files]:
            path = Path(folder) / entry
            shown = path.relative_to(prefix).as_posix()
            if path.is_symlink():
                problems.append((shown, "pip wrote a link"))
            elif entry in files:
                found.add(path)
                if path not in expected:
                    problems.append((shown, "pip wrote a file that is no member of the wheel"))
    for path, member in expected.items():
        if member is None:
            continue
        if path not in found:
            problems.append((member, f"pip did not write it to {path.relative_to(prefix).as_posix()}"))
            continue
        digest = wheel.digest(member)
        if digest is None or sha256_of(path) != digest.hex:
            problems.append((member, f"pip wrote other bytes to {path.relative_to(prefix).as_posix()}"))
    for required in ("INSTALLER", "RECORD"):
        if site / repo.declared.dist_info / required not in found:
            problems.append((f"{repo.declared.dist_info}/{required}", "pip did not record the installation"))
    return problems


def _installed_tables(site: Path, reference: Reference) -> list[tuple[str | None, str]]:
    """The installed tables hashed by the gate itself against the reference tracked list."""
    root = site / WHEEL_DIR
    problems: list[tuple[str | None, str]] = []
    listed = {f.path for f in reference.files}
    for f in reference.files:
        path = root / f.path
        shown = f"{WHEEL_DIR}/{f.path}"
        if path.is_symlink() or not path.is_file():
            problems.append((shown, "not installed"))
        elif path.stat().st_size != f.size or sha256_of(path) != f.sha256:
            problems.append((shown, f"installed with another size or sha256 than {reference.path.name} says"))
    tracked = root / TRACKED_NAME
    if not tracked.is_file() or tracked.read_bytes() != reference.data:
        problems.append((f"{WHEEL_DIR}/{TRACKED_NAME}", f"not installed as {reference.path} holds it"))
    if root.is_dir():
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root).as_posix()
            if not path.is_dir() and rel != TRACKED_NAME and rel not in listed:
                problems.append((f"{WHEEL_DIR}/{rel}", "installed among the tables, but not tracked"))
    return problems


def _judge_verify(
    wheel: str, verify: subprocess.CompletedProcess[str], site: Path, work: Path, source_tree: Path, count: int
) -> SmokeResult:
    try:
        report = json.loads(verify.stdout)
        if not isinstance(report, dict):
            raise ValueError("not a JSON object")
    except ValueError:
        return _failed(
            wheel,
            Check.G703,
            None,
            f"`neurobrix tables verify --json` exited {verify.returncode} without "
            f"a JSON report: {_tail(verify.stdout + verify.stderr)}",
        )
    location = Path(str(report.get("location", "")))
    if not report.get("ok"):
        problems = report.get("problems") or [{"path": None, "message": f"exit status {verify.returncode}"}]
        findings = [
            Finding(
                Check.G702,
                wheel,
                f"{WHEEL_DIR}/{p['path']}" if isinstance(p, dict) and p.get("path") else None,
                f"the installed engine refuses its tables: {p.get('message') if isinstance(p, dict) else p}",
            )
            for p in problems
        ]
        return SmokeResult(wheel, "failed", f"`neurobrix tables verify` refused {location}", findings)
    if (
        report.get("origin") != "installed package"
        or location != site / WHEEL_DIR
        or location.is_relative_to(source_tree)
    ):
        return _failed(
            wheel,
            Check.G703,
            None,
            f"the tables were loaded from {location} ({report.get('origin')}), not from the installed wheel",
        )
    return SmokeResult(
        wheel,
        "passed",
        f"pip installed it into a fresh prefix; the gate found every file pip wrote "
        f"equal to the wheel's and hashed the {count} installed tables against the "
        f"reference list; `neurobrix tables verify` loaded {report.get('files')} "
        f"tracked files from <prefix>/{location.relative_to(work / 'env').as_posix()}",
    )


def _tail(text: str, lines: int = 8) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:] if line.strip())
