"""Running a build backend the gate trusts, in isolation: the repository's declared metadata, and a
wheel rebuilt from an sdist once every file of that sdist was found to be the repository's own.

The PEP 517 hooks run through ``build``'s :class:`~build.ProjectBuilder`, in a subprocess of the
gate's own interpreter in isolated mode (``-I``: no PYTHONPATH, no user site, no current folder on
``sys.path``), with an environment cleaned of the variables that steer Python, pip or hatch, and a
time limit. No build environment is created and nothing is downloaded: the backend is the one
installed with the gate (the dev extra brings hatchling).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import build

BACKEND_TIMEOUT_S = 60
_STEERING = ("PYTHON", "PIP_", "HATCH_", "VIRTUAL_ENV", "NEUROBRIX_", "SETUPTOOLS_", "_PYPROJECT_HOOKS")


class BackendFailed(Exception):
    """The backend did not produce what was asked: ``str()`` says what and why."""


def clean_environment() -> dict[str, str]:
    """This process's environment without what steers Python, pip, hatch or the engine's tables."""
    return {k: v for k, v in os.environ.items() if not k.upper().startswith(_STEERING)}


def _isolated_runner(
    cmd: Sequence[str], cwd: str | None = None, extra_environ: Mapping[str, str] | None = None
) -> None:
    env = clean_environment()
    env.update(extra_environ or {})
    try:
        result = subprocess.run(
            [cmd[0], "-I", *cmd[1:]],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=BACKEND_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise BackendFailed(f"the build backend did not finish in {BACKEND_TIMEOUT_S} s") from exc
    if result.returncode != 0:
        tail = " | ".join(line.strip() for line in (result.stdout + result.stderr).strip().splitlines()[-8:])
        raise BackendFailed(f"the build backend exited {result.returncode}: {tail}")


def backend_version(distribution: str) -> str:
    """The version of ``distribution`` (the build backend's) that the isolated interpreter the backend runs in has."""
    code = "import importlib.metadata, sys; print(importlib.metadata.version(sys.argv[1]))"
    try:
        result = subprocess.run(
            [sys.executable, "-I", "-c", code, distribution],
            env=clean_environment(),
            capture_output=True,
            text=True,
            timeout=BACKEND_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackendFailed(f"the version of {distribution} cannot be read: {exc}") from exc
    if result.returncode != 0 or not result.stdout.strip():
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise BackendFailed(f"the version of {distribution} cannot be read: {tail}")
    return result.stdout.strip()


def _builder(source: Path) -> build.ProjectBuilder:
    return build.ProjectBuilder(source, python_executable=sys.executable, runner=_isolated_runner)


def _failure(exc: Exception) -> str:
    inner = getattr(exc, "exception", None)
    return str(inner) if isinstance(inner, BackendFailed) else str(exc) or type(exc).__name__


def prepare_metadata(source: Path, outdir: Path) -> Path:
    """The ``.dist-info`` folder the backend of ``source`` prepares for its wheel (METADATA at least)."""
    try:
        return Path(_builder(source).metadata_path(outdir))
    except (build.BuildException, build.BuildBackendException, OSError) as exc:
        raise BackendFailed(f"preparing the metadata of {source} failed: {_failure(exc)}") from exc


def build_wheel(source: Path, outdir: Path) -> Path:
    """The wheel the backend of ``source`` builds, in ``outdir``."""
    try:
        return Path(_builder(source).build("wheel", outdir))
    except (build.BuildException, build.BuildBackendException, OSError) as exc:
        raise BackendFailed(f"building a wheel from {source.name} failed: {_failure(exc)}") from exc
