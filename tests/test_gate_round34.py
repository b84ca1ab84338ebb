"""The thirty-fourth round against the release gate: what the build and gate jobs install, then hostile dists.

1. The build and gate jobs of release.yml installed the dev extra unpinned (``pip install torch==2.13.0 -e
   '.[dev]'``) and torch from its own index by version alone, so a compromised release of hatchling, twine,
   packaging, check-wheel-contents, installer or any of their dependencies decided the gate's verdict and the gate
   job's output ``report-sha256``, which the publish job trusts. Both jobs now install
   ``.github/gate/requirements.txt`` in pip's hash-checking mode, wheels only, as the publish job installs its own
   lock, then the project alone (``--no-deps --no-build-isolation --no-index -e .``), and neither torch nor triton,
   which neither job imports. Held here: every install of every release job is a hash-locked lock file or the
   project alone; the lock pins and hashes every requirement, holds the ``.in`` file's pins and the dependencies of
   each locked package; and the build step (the build, every check the gate step makes, the install smoke), run in
   an environment that holds the locked packages alone, passes (no torch, no triton, no dev tool outside the lock).

2. Hostile wheels of classes no earlier round named, each built, installed with pip's own wheel installer to show
   what it does, and refused (G107; every one was refused already, and is pinned here):
   - another distribution's metadata in the egg-info format, which importlib.metadata reads beside .dist-info
     folders: a folder ``pytest_planted.egg-info/`` at the root or through ``.data/purelib``, or a single-file
     ``*.egg-info``, each declaring a ``pytest11`` entry point (pytest imports the plugin in every run there) and a
     console script;
   - a package folder that shadows one of the project's modules: ``neurobrix/cli/__init__.py`` beside the tracked
     ``neurobrix/cli.py``, which Python's path finder imports instead (a package's ``__init__`` is looked for before
     a module of that name), so ``neurobrix`` on the command line runs it;
   - type stubs that shadow the sources for type checkers (``neurobrix/cli.pyi``, a ``neurobrix-stubs`` package, a
     ``py.typed`` marker);
   - and, in the upload folder, the sdist in another archive format pip builds and installs as readily as a
     ``.tar.gz`` (``.zip``, ``.tgz``, ``.tar.bz2``, ``.tar.xz``, ``.tar``), G001.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import REPO
from gate_fixtures import Built, RawMember, wheel_members, with_true_record
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from test_gate_hostile import built, judge, refused_with, write_wheel
from test_gate_round31 import PY, pip_into_venv
from test_workflows import PUBLISH_LOCK, load, lock_pins, release_env, require, step

__all__ = ["built"]  # the hostile corpus's built wheel and sdist

GATE_LOCK = REPO / ".github" / "gate" / "requirements.txt"
GATE_LOCK_IN = REPO / ".github" / "gate" / "requirements.in"
LOCKS = {".github/gate/requirements.txt": GATE_LOCK, ".github/publish/requirements.txt": PUBLISH_LOCK}
# anything that installs packages, in any job's run: scripts
INSTALLER = re.compile(r"(^|[\s/])(pip(3(\.\d+)?)?|uv|pipx|easy_install|conda|mamba|micromamba|poetry|pdm|hatch)(\s|$)")
HASHED = ["--require-hashes", "--only-binary", ":all:", "-r"]  # and one lock file
PROJECT_ALONE = ["--no-deps", "--no-build-isolation", "--no-index", "-e", "."]


def install_commands(script: str) -> list[str]:
    """Each command of a run: script that names a package installer (split at line ends, ;, &&, || and |)."""
    joined = re.sub(r"\\\n", " ", script)
    commands = [c.strip() for c in re.split(r"\n|;|&&|\|\||\|", joined)]
    return [c for c in commands if INSTALLER.search(c)]


def unhashed(command: str) -> str | None:
    """Why ``command`` may install something no sha256 in this repository pins, or None: it is either
    `python -m pip install --require-hashes --only-binary :all: -r LOCK` (LOCK one of the repository's locks,
    through a checkout folder or not, every line of it pinned and hashed) or the project alone, nothing fetched."""
    words = shlex.split(command)
    if words[:4] != ["python", "-m", "pip", "install"]:
        return f"not `python -m pip install`: {command}"
    options = words[4:]
    if sorted(options) == sorted(PROJECT_ALONE):
        return None
    rest = list(options)
    if rest.count("-r") != 1 or rest.index("-r") == len(rest) - 1:
        return f"neither one lock file nor the project alone: {command}"
    lock = rest.pop(rest.index("-r") + 1)
    if sorted(rest) != sorted(HASHED):
        return f"not hash-checking, wheels only, the lock alone: {command}"
    known = [path for name, path in LOCKS.items() if lock == name or lock.endswith("/" + name)]
    if not known:
        return f"{lock} is not one of the repository's lock files: {command}"
    lock_pins(known[0].read_text(encoding="utf-8"))  # every line pinned and hashed, or the assertion says which
    return None


def test_every_release_job_installs_only_hash_locked_wheels_or_the_project_alone() -> None:
    """A job that installs anything unhashed (a version pin, an index, an extra, an sdist, a build backend fetched
    for an isolated build) lets that package's next release decide what the job does: in the build job, what is
    built; in the gate job, the verdict and the report-sha256 the publish job holds the report to."""
    jobs = load("release.yml")["jobs"]
    found: dict[str, list[str]] = {}
    for job_id, job in jobs.items():
        for s in job["steps"]:
            for command in install_commands(s.get("run", "")):
                found.setdefault(job_id, []).append(command)
                assert unhashed(command) is None, (job_id, unhashed(command))
    # the build and gate jobs: the gate's lock, then the project alone; the publish job: its own lock
    for job_id in ("build", "gate"):
        assert [shlex.split(c)[4:] for c in found[job_id]] == [
            ["--require-hashes", "--only-binary", ":all:", "-r", ".github/gate/requirements.txt"],
            PROJECT_ALONE,
        ], job_id
    assert len(found["publish"]) == 1 and found["publish"][0].endswith(".github/publish/requirements.txt")


@pytest.mark.parametrize(
    "command",
    [
        # what the build and gate jobs ran before this round
        "python -m pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu",
        "python -m pip install torch==2.13.0 -e '.[dev]'",
        # a lock without hash-checking (a dependency missing from it is fetched unhashed), or with sdists (their
        # build backends are fetched unhashed), or beside another index or package
        "python -m pip install -r .github/gate/requirements.txt",
        "python -m pip install --require-hashes -r .github/gate/requirements.txt",
        "python -m pip install --require-hashes --only-binary :all: -r .github/gate/requirements.txt twine",
        "python -m pip install --require-hashes --only-binary :all: --extra-index-url https://example.invalid "
        "-r .github/gate/requirements.txt",
        "python -m pip install --require-hashes --only-binary :all: -r /tmp/requirements.txt",
        # the project with its dependencies, with an extra, or with its build backend fetched for isolation
        "python -m pip install -e .",
        "python -m pip install --no-deps -e .",
        "python -m pip install --no-deps --no-index -e .",
        "python -m pip install --no-deps --no-build-isolation --no-index -e '.[dev]'",
        # other installers
        "uv pip install twine",
        "pip install twine",
        "pip3.11 install twine",
        "/usr/bin/pip3 install twine",
        "python3 -m pip install --require-hashes --only-binary :all: -r .github/gate/requirements.txt",
    ],
)
def test_the_install_reader_refuses_what_is_not_hash_locked(command: str) -> None:
    assert install_commands(command) == [command]
    assert unhashed(command) is not None


def test_the_gate_lock_pins_and_hashes_every_requirement_and_dependency() -> None:
    pins = lock_pins(GATE_LOCK.read_text(encoding="utf-8"))
    top = {}
    for line in GATE_LOCK_IN.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.strip().split("==")
            top[canonicalize_name(name)] = version
    # the backend and frontend, the gate's tools, and what the gate imports from the engine
    assert set(top) == {
        "build",
        "hatchling",
        "editables",
        "twine",
        "check-wheel-contents",
        "installer",
        "packaging",
        "pyyaml",
        "fastjsonschema",
    }
    for name, version in top.items():
        assert pins[name][0] == version, name
    # closed: each locked package installed here at the locked version has its own requirements (on the jobs'
    # Python 3.11, Linux) in the lock too, or pip's hash-checking mode would stop the job on the missing one
    checked = 0
    for name, (version, _) in pins.items():
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if dist.version != version:
            continue
        checked += 1
        assert not unlocked(pins, dist.requires or []), f"{name} {version} requires {unlocked(pins, dist.requires)}"
    assert checked >= 10


JOB_ENVIRONMENT = {"python_version": "3.11", "python_full_version": "3.11.0", "sys_platform": "linux"}
JOB_ENVIRONMENT |= {"platform_system": "Linux", "os_name": "posix", "implementation_name": "cpython", "extra": ""}


def unlocked(pins: dict[str, tuple[str, int]], requires: list[str]) -> list[str]:
    """The requirements of ``requires`` (a distribution's) that apply on the jobs' Python 3.11 on Linux and that the
    lock's ``pins`` lack."""
    missing = []
    for text in requires:
        requirement = Requirement(text)
        if requirement.marker is None or requirement.marker.evaluate(JOB_ENVIRONMENT):
            if canonicalize_name(requirement.name) not in pins:
                missing.append(text)
    return missing


def locked_environment(tmp_path: Path) -> Path:
    """A virtual environment (no system site) holding the locked packages alone, as installed here, and pip (the
    one the job's Python brings, which the install smoke runs), and the project as its editable install adds it
    (a path in a .pth); its interpreter."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    here = Path(sysconfig.get_paths()["purelib"])
    locked = [name for name in lock_pins(GATE_LOCK.read_text(encoding="utf-8"))] + ["pip"]
    for name in locked:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # editables: only the project's editable install needs it, which this environment does not run
        for file in dist.files or []:
            top = file.parts[0]
            source = Path(str(dist.locate_file(top)))
            if top == ".." or source.parent != here:
                continue  # a script in bin/, or a distribution installed elsewhere
            if not (site / top).exists():
                (site / top).symlink_to(source)
    (site / "_neurobrix_editable.pth").write_text(f"{REPO}\n", encoding="utf-8")
    return python


def test_the_build_and_gate_steps_pass_with_the_lock_alone(tmp_path: Path) -> None:
    """The build job's build step, run as it is written on an interpreter whose environment holds the lock's packages
    alone: the build (build, hatchling), then every check of the gate job's gate step on what it built (twine,
    check-wheel-contents, installer, the sdist rebuilt through build's ProjectBuilder and hatchling) and the install
    smoke (pip); the gate step is that check again on the same files, with the same installs (the test above), and
    is left out for the time it costs. Nothing the jobs no longer install (torch, triton, the rest of the dev extra)
    is needed."""
    require("git")
    python = locked_environment(tmp_path)
    missing = subprocess.run([str(python), "-c", "import torch"], capture_output=True, text=True)
    assert "No module named 'torch'" in missing.stderr
    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    bin_dir.mkdir()
    work.mkdir()
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{python}" "$@"\n', encoding="utf-8")
    (bin_dir / "python").chmod(0o755)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env |= release_env(tmp_path) | {"PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}
    jobs = load("release.yml")["jobs"]
    clean = not subprocess.run(["git", "-C", str(REPO), "status", "--porcelain"], capture_output=True).stdout
    assert step(jobs["gate"], "Gate them (with the install smoke) against the tag's version")["run"].startswith(
        "python -m gate check dist "
    )
    for job_id, name in [("build", "Build into dist/")]:
        script = step(jobs[job_id], name)["run"]
        if not clean:
            script = re.sub(r"python -m gate (build|check)", r"python -m gate \1 --allow-dirty", script)
        result = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        assert "gate: PASSED" in result.stdout and "install smoke passed" in result.stdout


# -- 2. hostile wheels of classes no earlier round named ---------------------------------------------------------------

PLUGIN_ENTRY_POINTS = (
    b"[console_scripts]\nneurobrix-admin = pytest_planted:main\n\n[pytest11]\nplanted = pytest_planted\n"
)
PKG_INFO = b"Metadata-Version: 2.1\nName: pytest-planted\nVersion: 1.0\n"
EGG_INFO = {  # attack -> the members planted ({v}: the version)
    "an egg-info folder at the root": {
        "pytest_planted.egg-info/PKG-INFO": PKG_INFO,
        "pytest_planted.egg-info/entry_points.txt": PLUGIN_ENTRY_POINTS,
    },
    "an egg-info folder through .data/purelib": {
        "neurobrix-{v}.data/purelib/pytest_planted.egg-info/PKG-INFO": PKG_INFO,
        "neurobrix-{v}.data/purelib/pytest_planted.egg-info/entry_points.txt": PLUGIN_ENTRY_POINTS,
    },
    # a file: importlib.metadata reads a single-file egg-info as the PKG-INFO of a distribution
    "a single-file egg-info": {"pytest_planted-1.0-py3.11.egg-info": PKG_INFO},
}


def planted(built: Built, folder: Path, files: dict[str, bytes]) -> Path:
    members = wheel_members(built.wheel) + [
        RawMember(name.format(v=built.version).encode(), data) for name, data in files.items()
    ]
    return write_wheel(built, folder, with_true_record(members))


@pytest.mark.parametrize("attack", list(EGG_INFO))
def test_another_distributions_egg_info_metadata_is_refused(built: Built, tmp_path: Path, attack: str) -> None:
    files = EGG_INFO[attack]
    wheel = planted(built, tmp_path / "w", files)
    site = pip_into_venv(wheel, tmp_path / "venv") / "lib" / PY / "site-packages"
    # what pip leaves: a distribution importlib.metadata lists beside neurobrix, with its plugin where declared
    found = {d.metadata["Name"]: d for d in importlib.metadata.distributions(path=[str(site)])}
    assert set(found) == {"neurobrix", "pytest-planted"}
    if "entry_points.txt" in " ".join(files):
        groups = {e.group for e in found["pytest-planted"].entry_points}
        assert groups == {"console_scripts", "pytest11"}
    report = judge(wheel)
    for name in files:
        refused_with(report, "G107", name.format(v=built.version), built.wheel.name)


SHADOW = "import pathlib, sys\npathlib.Path(sys.argv[-1]).write_text('planted')\n"


def test_a_package_folder_shadowing_a_module_is_refused(built: Built, tmp_path: Path) -> None:
    """``neurobrix/cli/__init__.py`` beside ``neurobrix/cli.py``: the path finder takes the package, so
    ``import neurobrix.cli`` (the console script's module) runs the planted file, never the project's."""
    name = "neurobrix/cli/__init__.py"
    wheel = planted(built, tmp_path / "w", {name: SHADOW.encode()})
    site = pip_into_venv(wheel, tmp_path / "venv") / "lib" / PY / "site-packages"
    assert (site / "neurobrix" / "cli.py").is_file()  # the project's module is there too, and loses
    marker = tmp_path / "ran"
    code = f"import sys; sys.path.insert(0, {str(site)!r}); import neurobrix.cli"
    subprocess.run([sys.executable, "-I", "-B", "-c", code, str(marker)], check=True, capture_output=True, timeout=60)
    assert marker.read_text() == "planted"
    refused_with(judge(wheel), "G107", name, built.wheel.name)


@pytest.mark.parametrize("name", ["neurobrix/cli.pyi", "neurobrix-stubs/__init__.pyi", "neurobrix/py.typed"])
def test_type_stubs_shadowing_the_sources_are_refused(built: Built, tmp_path: Path, name: str) -> None:
    """A type checker reads a ``.pyi`` beside a module, or a ``-stubs`` package, instead of the sources (PEP 561),
    so the types a user's code is checked against would be the wheel's, not the project's."""
    wheel = planted(built, tmp_path / "w", {name: b"def main() -> int: ...\n"})
    refused_with(judge(wheel), "G107", name, built.wheel.name)


@pytest.mark.parametrize("suffix", [".zip", ".tgz", ".tar.bz2", ".tar.xz", ".tar"])
def test_an_sdist_in_another_archive_format_in_the_upload_folder_is_refused(
    built: Built, tmp_path: Path, suffix: str
) -> None:
    """pip builds and installs an sdist in any archive format it unpacks (a zip, a bzip2 or xz tar, a plain tar), as
    it does a .tar.gz, so an index that takes one offers it to pip; `dist/*` would upload it beside the judged two."""
    import io
    import shutil
    import tarfile
    import zipfile

    from pip._internal.utils.filetypes import ARCHIVE_EXTENSIONS

    assert suffix in ARCHIVE_EXTENSIONS
    folder = tmp_path / "dist"
    folder.mkdir()
    shutil.copy(built.wheel, folder)  # (the sdist beside it would only be rebuilt, seconds on the test's time)
    name = f"{built.root}{suffix}"
    pkg_info = b"Metadata-Version: 2.1\nName: neurobrix\nVersion: 0.1.0\n"  # (the gate never opens it)
    if suffix == ".zip":
        with zipfile.ZipFile(folder / name, "w") as archive:
            archive.writestr(f"{built.root}/PKG-INFO", pkg_info)
    else:
        mode = {".tgz": "w:gz", ".tar.bz2": "w:bz2", ".tar.xz": "w:xz", ".tar": "w"}[suffix]
        with tarfile.open(folder / name, mode) as archive:  # type: ignore[call-overload]
            info = tarfile.TarInfo(f"{built.root}/PKG-INFO")
            info.size = len(pkg_info)
            archive.addfile(info, io.BytesIO(pkg_info))
    refused_with(judge(folder), "G001", name)
