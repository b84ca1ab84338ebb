"""The repository's own linters, run by the test command: ruff (lint and format) everywhere, mypy strict on the
table formats and the release gate (pyproject.toml's [tool.ruff] and [tool.mypy] say what and how)."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing():
    done = run("ruff", "check", "--output-format", "concise", ".")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_ruff_format_leaves_every_file_as_it_is():
    done = run("ruff", "format", "--check", ".")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_mypy_strict_on_the_table_formats_and_the_gate():
    done = run("mypy")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
