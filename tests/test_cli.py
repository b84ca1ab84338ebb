"""The `neurobrix` command line: doctor, tables list/show/verify, errors without tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO
from neurobrix import __version__
from neurobrix.cli import main


def run(*args, env=None):
    """The real console entry, as a user would run it (python -m neurobrix == the neurobrix script)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "neurobrix", *args], capture_output=True, text=True, env=full_env)


def test_version():
    result = run("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"neurobrix {__version__}"


def test_help_lists_the_commands():
    result = run("--help")
    assert result.returncode == 0
    for word in ("doctor", "tables", "Exit codes"):
        assert word in result.stdout


def test_doctor_on_the_interpreter_is_ready(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "interpreter" in out and "every sha256 and size matches" in out and "verdict: ready" in out


def test_doctor_json(capsys):
    assert main(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True
    names = {f["name"]: f for f in report["findings"]}
    for name in ("python", "neurobrix", "torch", "triton", "tables", "integrity", "device", "class", "kernels"):
        assert name in names
    assert names["class"]["value"].startswith("interpreter")
    assert "CPU-only build" in names["torch"]["value"] or "CUDA" in names["torch"]["value"]


def test_doctor_without_gpu_or_interpreter_is_blocked():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    result = run("doctor", env={"TRITON_INTERPRET": "0"})
    assert result.returncode == 1
    assert "FAIL  device" in result.stdout and "verdict: blocked by device" in result.stdout


def test_doctor_blocked_by_damaged_tables(fixture_tables, capsys):
    (fixture_tables / "interpreter" / "demo.json").unlink()
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  integrity  interpreter/demo.json: tracked but missing" in out


def test_tables_verify_source_checkout(capsys, monkeypatch):
    monkeypatch.delenv("NEUROBRIX_TABLES", raising=False)
    assert main(["tables", "verify"]) == 0
    assert "tables verified" in capsys.readouterr().out


def test_tables_verify_json_failure_names_the_file(fixture_tables, capsys):
    (fixture_tables / "interpreter" / "demo.json").write_text("altered")
    assert main(["tables", "verify", "--json"]) == 3
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert report["problems"][0]["path"] == "interpreter/demo.json"
    assert "altered" in report["problems"][0]["message"]


def test_tables_verify_checks_the_proofs_run_never_reads(fixture_tables, capsys):
    from conftest import retrack

    path = fixture_tables / "interpreter" / "demo.proofs.yaml"
    path.write_text(path.read_text().replace("BLOCK_N: 128", "BLOCK_N: 129"))
    retrack(fixture_tables)
    assert main(["tables", "verify", "--json"]) == 3
    report = json.loads(capsys.readouterr().out)
    assert report["problems"][0]["path"] == "interpreter/demo"
    assert "differs from entry 1 of its index" in report["problems"][0]["message"]


def test_tables_list_and_show(fixture_tables, capsys):
    assert main(["tables", "list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert {c["class"]: c["kernels"] for c in listing["classes"]} == {"fake-gpu": {}, "interpreter": {"demo": 4}}
    assert listing["classes"][1]["certified_with"] == ["torch 2.13.0, triton 3.9.0"]
    assert main(["tables", "show", "interpreter", "demo"]) == 0
    out = capsys.readouterr().out
    assert "4 entries, key (M pow2, N exact)" in out and "fp32/fp16 M=1..16, N=1..4096" in out and "BLOCK_N=64" in out
    assert "worst error 0.250" in out and "demo.proofs.yaml" in out
    assert main(["tables", "show", "interpreter", "demo", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entries"][2]["domain"]["ranges"][0] == ["M", 65, None]


def test_user_mistakes_print_one_line_no_traceback(fixture_tables):
    result = run("tables", "show", "nosuch", env={"NEUROBRIX_TABLES": str(fixture_tables)})
    assert result.returncode == 2
    assert result.stderr.startswith("neurobrix: error: no GPU class 'nosuch'")
    assert "Traceback" not in result.stderr


def test_damaged_tables_exit_3_and_debug_shows_the_traceback(fixture_tables):
    (fixture_tables / "TRACKED.yaml").unlink()
    env = {"NEUROBRIX_TABLES": str(fixture_tables)}
    plain = run("tables", "list", env=env)
    assert plain.returncode == 3 and "tracked-file list is missing" in plain.stderr
    assert "Traceback" not in plain.stderr
    debug = run("--debug", "tables", "list", env=env)
    assert debug.returncode == 3 and "Traceback" in debug.stderr


def test_env_var_to_missing_folder(tmp_path):
    result = run("tables", "verify", env={"NEUROBRIX_TABLES": str(tmp_path / "nope")})
    assert result.returncode == 3 and "is not a folder" in result.stderr


def test_a_closed_pipe_is_not_an_error():
    full_env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "neurobrix", "tables", "show", "interpreter", "linear"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env)
    proc.stdout.close()  # the reader is gone before the command writes (like `| head -0`)
    assert proc.wait() == 0
    assert b"Traceback" not in proc.stderr.read()
