"""Strictness round 53: what the kernel-code binding refuses, and how it says so.

Found and fixed:

- A kernel source that cannot be read as Python (a file of ``neurobrix/ops`` missing, a folder in its place, a syntax
  error, a byte that is not UTF-8 in its code, a null byte) ended ``neurobrix tables verify``, ``doctor``, ``run`` and
  ``warmup`` in a traceback (SyntaxError, UnicodeDecodeError, ModuleNotFoundError from ``neurobrix.ops``' import; only
  a missing file reached ``tables verify`` as an OSError line). The digest (``neurobrix.kernel_source``) now reads each
  file as Python's import does (its bytes parsed: a BOM or a coding line as import takes them) and refuses one it
  cannot read in one line naming the file, why and the reinstall command: run and warmup exit 6 before the kernels
  are imported, doctor's ``kernel sources`` FAILs, tables verify lists it. And a byte that is not UTF-8 in a comment,
  which import skips and the engine ran, stopped the digest (UnicodeDecodeError): read as import reads it now.
- ``python -m conformance check --record`` on a tables folder it cannot write ran the whole check (minutes; 394 s for
  the H200 class on two GPUs) and then ended "Operation not permitted: .../.silu_mul.json.<pid>.tmp", exit 1, the
  passing check recorded nowhere: refused now before the check (exit 2), as certify refuses it, naming the folder and
  a copy to point NEUROBRIX_TABLES at.
- A record whose provenance ``kernel_source`` is no digest (a number, a list) was refused by run and doctor as "its
  proofs were made on the compiler stack ..., source 12345, but its index states ...", a mismatch of a digest nobody
  wrote, where ``tables verify`` named the field the schema refuses: run's quick read of the record's header now parses
  such a record in full, so both name ``provenance.kernel_source``.
- A table of a kernel this neurobrix does not declare (one a later release retired; its settings launch nothing)
  ended run, doctor and tables verify in "unknown kernel 'aaa_retired'", exit 2, a kernel nobody named, and
  ``check --record`` too (planted round 23's doctor test failed so on main): the binding
  (``kernel_source.declared_kernels``) passes it by and holds every other table as before.

Pinned (exact already): an index whose ``stack.source`` is no string, not 16 lowercase hex digits, or null is refused by
run, doctor and tables verify alike (exit 3, the field named); tables an older NeuroBrix certified (no source) are
refused by run (exit 6, each kernel "bound to no kernel source", the ``check --record`` command) and listed by tables
verify (tests/test_source_binding.py holds run's refusal). Probed by hand, not in a test here (a wheel built with
``pip wheel``, installed into a venv): bound as built, doctor says ready and run runs; ops/rms_norm.py patched in
site-packages by a comment, a statement or a syntax error is refused by run (exit 6) and doctor (the RECORD check;
a statement also as ``kernel code``; a syntax error as the source that is no Python, now one line), and tables verify
lists the statement's unbound table (round 20's tests hold the RECORD check on an ``installer`` install).

Left open: ``tables verify`` passes an installed wheel whose kernel was patched by a comment only (the digest ignores
it; RECORD is run's and doctor's check, not the tables'); ``check --resume`` of a report made on other kernel code was
read, not tested (its fingerprint hashes ``neurobrix/ops``); a check
interrupted between two kernels' ``--record`` writes leaves the first bound and the second as before (each table whole:
certify's ``_uninterrupted``), which the next ``--record`` completes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from conftest import REPO, rebind, retrack
from kernel_tables import CONFIGS, write_kernel, write_tables

from conformance import sources
from neurobrix import kernel_source, stack, tables
from neurobrix.errors import TablesError
from neurobrix.ops import SPECS

# what each breaks in a copy of the checkout's neurobrix/ops, and the file named
BREAKS = {
    "syntax error": ("rms_norm.py", lambda p: p.write_text(p.read_text(encoding="utf-8") + "\ndef (:\n")),
    "not UTF-8": ("rms_norm.py", lambda p: p.write_bytes(p.read_bytes() + b'\nNAME = "caf\xe9"\n')),
    "missing": ("silu_mul.py", lambda p: p.unlink()),
    "a folder": ("spec.py", lambda p: (p.unlink(), p.mkdir())),
    "null byte": ("_common.py", lambda p: p.write_bytes(p.read_bytes() + b"\nx = 1\0\n")),
}


def _copy(tmp_path):
    for name in ("neurobrix", "tables"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _neurobrix(where, *argv):
    env = {k: v for k, v in os.environ.items() if k not in (tables.ENV_VAR, "PYTHONPATH")}
    return subprocess.run(
        [sys.executable, "-m", "neurobrix", *argv],
        capture_output=True,
        text=True,
        cwd=where,
        env={**env, "PYTHONPATH": str(where), "TRITON_INTERPRET": "1", "NEUROBRIX_HOME": str(where / "home")},
        timeout=300,
    )


@pytest.mark.parametrize("how", sorted(BREAKS))
def test_a_kernel_source_that_is_no_python_is_one_line_everywhere(tmp_path, how):
    where = _copy(tmp_path)
    name, breaking = BREAKS[how]
    breaking(where / "neurobrix" / "ops" / name)
    said = f"the kernel source {where / 'neurobrix' / 'ops' / name} cannot be read as Python"
    commands = [("run", "--model", "tiny", "--prompt", "hi"), ("doctor",), ("tables", "verify")]
    if how == "syntax error":
        commands.append(("warmup", "--model", "tiny"))
    for argv in commands:
        done = _neurobrix(where, *argv)
        out = done.stdout + done.stderr
        assert "Traceback" not in out, (argv, out[-3000:])
        assert said in out, (argv, out[-3000:])
        if argv[0] in ("run", "warmup"):  # refused before the kernels are imported, as other kernel code is
            assert done.returncode == 6 and done.stderr.count("\n") == 1, (argv, done.returncode, done.stderr)
            assert done.stderr.startswith(f"neurobrix: error: {said}"), done.stderr
        elif argv[0] == "doctor":
            (line,) = [li for li in done.stdout.splitlines() if said in li]
            assert line.split()[:3] == ["FAIL", "kernel", "sources"] and done.returncode == 1, done.stdout
        else:
            assert done.returncode == 3, out


def test_a_byte_not_utf8_in_a_comment_is_what_python_imports(tmp_path):
    """Pinned: Python's import skips a comment's bytes, and so does the digest (a comment is no code): the kernel's
    digest is unchanged and its table still bound."""
    where = _copy(tmp_path)
    path = where / "neurobrix" / "ops" / "rms_norm.py"
    path.write_bytes(path.read_bytes() + b"\n# caf\xe9\n")
    probe = "from neurobrix import kernel_source as k, ops; print(k.kernel_source('rms_norm'))"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=where,
        env={**env, "PYTHONPATH": str(where), "TRITON_INTERPRET": "1"},
        timeout=300,
    )
    assert done.returncode == 0 and done.stdout.strip() == kernel_source.kernel_source("rms_norm"), done.stderr


def _one_kernel_tables(root):
    """An interpreter class of silu_mul alone, bound to no code of this checkout (a quick check can bind it)."""
    write_tables(root, {"silu_mul": CONFIGS["silu_mul"]}, dtypes=("fp32", "fp16"), kernel_source="0" * 16)
    for path in (root / "interpreter").iterdir():
        if path.name != "class.yaml" and not path.name.startswith("silu_mul."):
            path.unlink()
    retrack(root)
    return root


def test_record_refuses_tables_it_cannot_write_before_checking(tmp_path):
    root = _one_kernel_tables(tmp_path / "tables")
    if subprocess.run(["chattr", "-R", "+i", str(root)], capture_output=True).returncode != 0:
        pytest.skip("no chattr +i here to make a folder no user can write (root writes a read-only one)")
    try:
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "conformance", "check", "--class", "interpreter", "--profile", "ci", "--record"],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**os.environ, tables.ENV_VAR: str(root), "TRITON_INTERPRET": "1"},
            timeout=300,
        )
        took = time.monotonic() - start
    finally:
        subprocess.run(["chattr", "-R", "-i", str(root)], check=True)
    assert done.returncode == 2 and "PASSED" not in done.stdout, (done.returncode, done.stdout, done.stderr)
    assert f"--record: cannot write the tables in {root}" in done.stderr and "nothing was checked" in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert took < 60, took  # before the check (about 6 s of silu_mul here), not after it


def test_record_of_bound_kernels_only_is_not_refused_for_an_unwritable_folder(tmp_path):
    """Control: a check of kernels whose tables are bound already writes nothing, so its folder's being unwritable
    refuses nothing (silu_mul, unchecked, is the unbound one)."""
    root = write_tables(tmp_path / "tables")
    write_kernel(root, "silu_mul", CONFIGS["silu_mul"], kernel_source="0" * 16)
    if subprocess.run(["chattr", "-R", "+i", str(root)], capture_output=True).returncode != 0:
        pytest.skip("no chattr +i here to make a folder no user can write (root writes a read-only one)")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "conformance", "check", "--class", "interpreter", "--kernel", "rms_norm"]
            + ["--profile", "ci", "--record"],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**os.environ, tables.ENV_VAR: str(root), "TRITON_INTERPRET": "1"},
            timeout=300,
        )
    finally:
        subprocess.run(["chattr", "-R", "-i", str(root)], check=True)
    assert done.returncode == 0 and "PASSED" in done.stdout, (done.stdout, done.stderr)
    assert "nothing recorded: no kernel table not yet bound to its code was checked whole" in done.stdout, done.stdout


@pytest.mark.parametrize("value", ["12345", "[a]", "'0123456789ABCDEF'"])
def test_a_record_whose_kernel_source_is_no_digest_is_named_as_verify_names_it(tmp_path, value):
    root = write_tables(tmp_path / "tables", {"silu_mul": CONFIGS["silu_mul"]})
    path = tables.proofs_path(root, "interpreter", "silu_mul")
    text = path.read_text(encoding="utf-8")
    digest = kernel_source.kernel_source("silu_mul")
    line = f"  kernel_source: {digest}\n"
    assert line in text
    path.write_text(text.replace(line, f"  kernel_source: {value}\n", 1), encoding="utf-8")
    retrack(root)
    with pytest.raises(TablesError, match=r"field 'provenance\.kernel_source'") as info:
        tables.load(root).index("interpreter", "silu_mul")  # what run and doctor read
    assert "compiler stack" not in str(info.value)
    problems = [p.message for p in tables.verify_all(tables.load(root)) if "silu_mul" in p.path]
    assert any("field 'provenance.kernel_source'" in m for m in problems), problems


@pytest.mark.parametrize("value", [12345, "abc", "F" * 16, None])
def test_an_index_whose_source_is_no_digest_is_refused_alike(tmp_path, value):
    """Pinned: run (the index read) and tables verify refuse it alike, the field named."""
    root = write_tables(tmp_path / "tables", {"silu_mul": CONFIGS["silu_mul"]})
    path = tables.index_path(root, "interpreter", "silu_mul")
    data = json.loads(path.read_text(encoding="utf-8"))
    data["stack"]["source"] = value
    path.write_text(json.dumps(data), encoding="utf-8")
    retrack(root)
    with pytest.raises(TablesError, match=r"field 'stack\.source'"):
        tables.load(root).index("interpreter", "silu_mul")
    problems = [p.message for p in tables.verify_all(tables.load(root)) if "silu_mul" in p.path]
    assert any("field 'stack.source'" in m for m in problems), problems


def test_a_retired_kernel_s_table_is_no_unknown_kernel_to_run_verify_or_record(tmp_path, monkeypatch):
    """A table of a kernel this neurobrix does not declare (one a later release retired: its settings launch nothing)
    ended run, doctor and tables verify in "unknown kernel 'aaa_retired'", exit 2, a kernel nobody named (planted round
    23's doctor test failed so on main): the binding passes it by, and holds every other table as before."""
    root = write_tables(tmp_path / "tables")
    folder = root / "interpreter"
    data = json.loads((folder / "rms_norm.json").read_text(encoding="utf-8"))
    data["kernel"] = "aaa_retired"
    (folder / "aaa_retired.json").write_text(json.dumps(data), encoding="utf-8")
    text = (folder / "rms_norm.proofs.yaml").read_text(encoding="utf-8")
    (folder / "aaa_retired.proofs.yaml").write_text(
        text.replace("\nkernel: rms_norm\n", "\nkernel: aaa_retired\n"), encoding="utf-8"
    )
    rebind(folder / "aaa_retired.proofs.yaml", "interpreter", "aaa_retired")
    retrack(root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    assert "aaa_retired" not in SPECS
    loaded = tables.load()
    assert stack.sources_problem("interpreter", loaded) is None  # what run and doctor ask
    assert tables.verify_all(loaded) == []
    assert sources.stale("interpreter", loaded) == {}
    # still bound to the code as it is: another kernel's table proven on other code is named, the retired one is not
    write_kernel(root, "silu_mul", CONFIGS["silu_mul"], kernel_source="0" * 16)
    tables.clear_cache()
    loaded = tables.load()
    problem = stack.sources_problem("interpreter", loaded) or ""
    assert "silu_mul (proven on 0000000000000000)" in problem and "aaa_retired" not in problem, problem
    assert [p.path for p in tables.verify_all(loaded)] == ["interpreter/silu_mul.json"]
