"""The repository every dist is judged against: the files git tracks, and what pyproject.toml declares.

The allow-list of a wheel and of an sdist comes from here, never from the dist: the package's files
are the files git tracks under ``neurobrix/`` (their bytes as the working tree holds them, which is
what a build packs), the sdist may carry any tracked file byte for byte, and the core metadata is
what the repository's own build backend prepares from its pyproject.toml (run in isolation, see
:mod:`gate.backend`). Entry points are read from pyproject.toml itself. Anything unusable here (no
git checkout, a backend that fails) is a :class:`GateError`: the gate cannot judge without it.
"""

from __future__ import annotations

import functools
import hashlib
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from .archive import Digest
from .backend import BackendFailed, clean_environment, prepare_metadata
from .checks import GateError

if sys.version_info >= (3, 11):
    import tomllib
else:  # check-wheel-contents brings tomli there
    import tomli as tomllib

PACKAGE = "neurobrix"  # [tool.hatch.build.targets.wheel] packages (tests/test_gate_units.py holds them equal)
GIT_TIMEOUT_S = 30
_REGULAR, _EXECUTABLE = "100644", "100755"


@dataclass(frozen=True)
class Declared:
    """What the repository's pyproject.toml makes of a release."""

    name: str  # as the metadata spells it
    version: Version
    metadata: bytes  # METADATA as the repository's build backend prepares it
    entry_points: dict[str, dict[str, str]]  # group -> name -> "module:attr"
    readme: str | None  # the file pyproject.toml names as the readme
    license_files: tuple[str, ...] = ()  # the License-File entries of the metadata: a wheel's dist-info/licenses/

    @property
    def stem(self) -> str:
        """``name-version`` as wheel and sdist file names and the .dist-info folder spell it."""
        return f"{re.sub(r'[-_.]+', '_', self.name).lower()}-{self.version}"

    @property
    def dist_info(self) -> str:
        return f"{self.stem}.dist-info"


@dataclass
class Repository:
    root: Path
    tracked: dict[str, bool]  # path (POSIX, from the root) -> executable; regular files only
    declared: Declared
    _digests: dict[str, Digest | None] = field(default_factory=dict, repr=False)

    def read(self, path: str) -> bytes | None:
        """The working tree's bytes of a tracked regular file; None if it is not one."""
        if path not in self.tracked:
            return None
        file = self.root / path
        try:
            if file.is_symlink() or not file.is_file():
                return None
            return file.read_bytes()
        except OSError:
            return None

    def digest(self, path: str) -> Digest | None:
        if path not in self._digests:
            data = self.read(path)
            self._digests[path] = None if data is None else Digest(hashlib.sha256(data).digest(), len(data))
        return self._digests[path]

    def package_files(self) -> list[str]:
        """The package's files: tracked by git under ``neurobrix/`` and present in the working tree (what a
        build packs)."""
        return sorted(p for p in self.tracked if p.startswith(f"{PACKAGE}/") and self.digest(p) is not None)


@functools.lru_cache(maxsize=4)
def load_repository(root: Path) -> Repository:
    """The repository at ``root`` (cached per process: it is read once per run, and tests run many)."""
    return Repository(root, _tracked_files(root), _declared(root))


def _git(root: Path, *args: str) -> str:
    env = {k: v for k, v in clean_environment().items() if not k.startswith("GIT_")}
    try:
        result = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GateError(
            f"git could not be run in {root}: {exc}; the gate judges dists against the files git tracks"
        ) from exc
    if result.returncode != 0:
        raise GateError(
            f"{root} is not a usable git checkout (`git {' '.join(args)}`: {result.stderr.strip()}); "
            "the gate judges dists against the files git tracks"
        )
    return result.stdout


def _tracked_files(root: Path) -> dict[str, bool]:
    top = Path(_git(root, "rev-parse", "--show-toplevel").strip())
    if top.resolve() != root.resolve():
        raise GateError(f"{root} is not the top of its git checkout ({top})")
    tracked: dict[str, bool] = {}
    for record in _git(root, "ls-files", "--stage", "-z").split("\0"):
        if not record:
            continue
        info, _, path = record.partition("\t")
        mode = info.split(" ", 1)[0]
        if mode in (_REGULAR, _EXECUTABLE):  # not links (120000) nor submodules (160000)
            tracked[path] = mode == _EXECUTABLE
    return tracked


def _declared(root: Path) -> Declared:
    try:
        project: dict[str, Any] = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError) as exc:
        raise GateError(f"{root / 'pyproject.toml'}: cannot be read for the project's declarations: {exc}") from exc
    with tempfile.TemporaryDirectory(prefix="neurobrix-gate-metadata-") as tmp:
        try:
            metadata = (prepare_metadata(root, Path(tmp)) / "METADATA").read_bytes()
        except (BackendFailed, OSError) as exc:
            raise GateError(f"the repository's own metadata cannot be prepared: {exc}") from exc
    fields = _headers(metadata)
    license_files = tuple(str(v) for v in BytesHeaderParser().parsebytes(metadata).get_all("License-File", []))
    try:
        version = Version(fields.get("version", ""))
    except InvalidVersion as exc:
        raise GateError(f"the repository's build backend prepares an invalid version: {exc}") from exc
    name = fields.get("name", "")
    if canonicalize_name(name) != canonicalize_name(str(project.get("name", ""))):
        raise GateError(f"the repository's build backend prepares metadata for {name!r}, not {project.get('name')!r}")
    entry_points: dict[str, dict[str, str]] = {}
    for key, group in (("scripts", "console_scripts"), ("gui-scripts", "gui_scripts")):
        if project.get(key):
            entry_points[group] = {str(k): str(v) for k, v in project[key].items()}
    for group, points in dict(project.get("entry-points", {})).items():
        entry_points[str(group)] = {str(k): str(v) for k, v in dict(points).items()}
    readme = project.get("readme")
    readme_file = readme if isinstance(readme, str) else readme.get("file") if isinstance(readme, dict) else None
    return Declared(name, version, metadata, entry_points, readme_file, license_files)


def _headers(metadata: bytes) -> dict[str, str]:
    message = BytesHeaderParser().parsebytes(metadata)
    return {k.lower(): str(v) for k, v in message.items()}
