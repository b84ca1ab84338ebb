"""The built wheel ships the tables at neurobrix/_tables, and an installed copy verifies itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest
from conftest import REPO

from neurobrix import __version__, tables

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir", str(out), str(REPO)],
        check=True,
        capture_output=True,
    )
    return {"wheel": next(out.glob("*.whl")), "sdist": next(out.glob("*.tar.gz"))}


def test_wheel_carries_every_tracked_file_and_no_dev_code(dists):
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        names = set(wheel.namelist())
        for tracked in tables.read_tracked(REPO / "tables"):
            assert tracked.wheel_path in names
            assert wheel.read(tracked.wheel_path) == (REPO / "tables" / tracked.path).read_bytes()
        assert f"{tables.WHEEL_DIR}/TRACKED.yaml" in names
    for top in ("conformance/", "gate/", "tests/", "benchmarks/", "tables/"):
        assert not any(n.startswith(top) for n in names), top
    assert dists["wheel"].name == f"neurobrix-{__version__}-py3-none-any.whl"


def test_sdist_carries_the_tables(dists):
    with tarfile.open(dists["sdist"]) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert "tables/TRACKED.yaml" in names and "pyproject.toml" in names
    assert all(f"tables/{t.path}" in names for t in tables.read_tracked(REPO / "tables"))


@pytest.fixture(scope="module")
def installed(dists, tmp_path_factory) -> Path:
    """A fresh virtual environment outside the source tree with the wheel installed (deps reused)."""
    env_dir = tmp_path_factory.mktemp("venv") / "env"
    venv.create(env_dir, system_site_packages=True, with_pip=True)
    subprocess.run(
        [env_dir / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(dists["wheel"])],
        check=True,
        capture_output=True,
    )
    return env_dir


def verify(env_dir: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", tables.ENV_VAR)}
    return subprocess.run(
        [env_dir / "bin" / "neurobrix", "tables", "verify", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=env_dir.parent,
    )


def test_installed_wheel_verifies_its_tables_from_outside_the_source_tree(installed):
    result = verify(installed)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] and report["origin"] == "installed package"
    assert Path(report["location"]).is_relative_to(installed) and not Path(report["location"]).is_relative_to(REPO)


def test_installed_wheel_refuses_when_a_table_file_is_deleted(installed):
    site = next(installed.glob("lib/python*/site-packages"))
    victim = site / tables.WHEEL_DIR / "nvidia-h200" / "class.yaml"
    victim.unlink()
    result = verify(installed)
    assert result.returncode == 3
    report = json.loads(result.stdout)
    assert report["problems"] == [
        {"path": "nvidia-h200/class.yaml", "message": "tracked but missing (or not a regular file)"}
    ]
