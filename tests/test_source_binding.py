"""Each kernel table's proofs are bound to the kernel code they were made on (``neurobrix.stack.kernel_source``: a
digest of the ``neurobrix/ops`` files a kernel's calls run, comments and docstrings aside), which the provenance
names (``kernel_source``) and the index states (``stack.source``). Before, a kernel edited after its settings were
proven (the PDL wait added to ``_rms_norm_kernel`` after its first certification) ran under proofs of other code, and
nothing said so. Now run, warmup and doctor refuse a table proven on other code or on none, naming the kernels and the
command that proves them again (``check --record``); certify will not add entries to such a table; a whole passing
check on the class's stack with ``--record`` binds it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import REPO, retrack
from kernel_tables import CONFIGS, write_kernel, write_tables

from conformance import certify, sources
from neurobrix import kernel_source, stack, tables
from neurobrix.errors import CompilerStackError, TablesError, UsageError
from neurobrix.kernel_source import AWAITING_REPROOF
from neurobrix.ops import SPECS


def test_every_shipped_class_is_proven_on_its_kernels_code_as_it_is():
    """What CI holds main to: a kernel edited without its tables proven again on it (every class, the GPU ones on
    their GPU) fails here, naming the kernels and the command. The tables still awaiting their first re-proof
    (AWAITING_REPROOF) must be unbound still: the list only shrinks, and a table bound since leaves it."""
    loaded = tables.load(REPO / "tables")
    for class_id in loaded.classes:
        unbound = sources.stale(class_id, loaded)
        pending = {k for k, v in unbound.items() if v is None and (class_id, k) in AWAITING_REPROOF}
        stale = {k: v for k, v in unbound.items() if k not in pending}
        assert not stale, (
            f"{class_id}: {', '.join(f'{k} (proven on {v})' for k, v in stale.items())} not proven on the code "
            f"here: python -m conformance check --class {class_id} --kernel {' '.join(stale)} --record"
        )
        listed = {k for c, k in AWAITING_REPROOF if c == class_id}
        assert listed == pending, f"{class_id}: bound since, take them off AWAITING_REPROOF: {sorted(listed - pending)}"


def test_a_table_awaiting_its_reproof_runs_with_a_note_and_no_other_unbound_one(tmp_path, monkeypatch, capsys):
    """Tables AWAITING_REPROOF (unbound still) run with a note (once a process); the same class with any other table
    bound to no code, or one of those bound to other code, is refused. Held on a copy whose rotary and
    attention_decode are unbound and listed, whatever the shipped list holds today."""
    here = stack.running_stack()
    monkeypatch.setattr(stack, "verdict", lambda class_id, *a, **k: stack.Verdict(class_id, here, here))
    monkeypatch.setattr(stack, "compiler_problem", lambda class_id: None)
    monkeypatch.setattr(stack, "use_engine_cache", lambda: None)
    monkeypatch.setattr(stack, "_NOTED", set())
    awaiting = frozenset({("nvidia-h200", "rotary"), ("nvidia-h200", "attention_decode")})
    monkeypatch.setattr(stack, "AWAITING_REPROOF", awaiting)
    monkeypatch.setattr(kernel_source, "AWAITING_REPROOF", awaiting)
    root = tmp_path / "tables"

    def fresh() -> None:
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(REPO / "tables", root)
        for _, kernel in awaiting:
            _unbind(root, "nvidia-h200", kernel, None)

    fresh()
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    stack.require_certified_stack("nvidia-h200")
    stack.require_certified_stack("nvidia-h200")
    err = capsys.readouterr().err
    assert err.count("note: the nvidia-h200 settings of") == 1, err
    assert "attention_decode, rotary" in err and "--kernel attention_decode rotary --record" in err
    _unbind(root, "nvidia-h200", "silu_mul", None)
    with pytest.raises(CompilerStackError, match=r"silu_mul \(bound to no kernel source\)"):
        stack.require_certified_stack("nvidia-h200")
    fresh()
    kernel = "rotary"
    _unbind(root, "nvidia-h200", kernel, "0123456789abcdef")
    with pytest.raises(CompilerStackError, match=rf"{kernel} \(proven on 0123456789abcdef\)"):
        stack.require_certified_stack("nvidia-h200")


def _unbind(root, class_id, kernel, source):
    """Give the copy's table of ``kernel`` the kernel code ``source`` (None: none), index and provenance, retracked."""
    import yaml

    index_path = tables.index_path(root, class_id, kernel)
    data = json.loads(index_path.read_text(encoding="utf-8"))
    data["stack"].pop("source", None)
    proofs_path = tables.proofs_path(root, class_id, kernel)
    record = yaml.safe_load(proofs_path.read_text(encoding="utf-8"))
    record["provenance"].pop("kernel_source", None)
    record["provenance"].pop("reproved", None)
    if source is not None:
        data["stack"]["source"] = source
        record["provenance"]["kernel_source"] = source
    index_path.write_text(certify.render_index(data), encoding="utf-8")
    proofs_path.write_text(yaml.safe_dump(record, sort_keys=False, width=120), encoding="utf-8")
    retrack(root)
    tables.clear_cache()


def test_the_digest_follows_the_code_not_its_comments_or_layout():
    import ast

    plain = "def f(x):\n    return x * 2 + 1\n"
    same = '"""module."""\n# a comment\n\ndef f(x):  # why\n    """doc."""\n\n    return (x * 2\n            + 1)\n'
    from neurobrix.kernel_source import _canonical as canonical

    assert canonical(ast.parse(plain)) == canonical(ast.parse(same))
    for edited in (
        "def f(x):\n    return x * 2 + 2\n",
        "def f(x):\n    return x * 2 - 1\n",
        "def f(y):\n    return y * 2 + 1\n",
        "def f(x):\n    return 1 + x * 2\n",
    ):
        assert canonical(ast.parse(edited)) != canonical(ast.parse(plain)), edited


def test_each_kernel_is_bound_to_the_files_its_calls_run():
    for kernel in SPECS:
        files = kernel_source.kernel_source_files(kernel)
        assert {"__init__.py", "_common.py", "spec.py"} <= set(files), kernel
        module = SPECS[kernel].launch.__module__.rpartition(".")[2]
        # read from the sources without importing them: the module the imported spec's launcher lives in, and the
        # op modules it imports (greedy_pick takes linear's arrival counters)
        expected = {f"{module}.py"} | ({"linear.py"} if kernel == "greedy_pick" else set())
        assert set(files) - {"__init__.py", "_common.py", "spec.py"} == expected, (kernel, files)
    assert "linear.py" in kernel_source.kernel_source_files("greedy_pick")  # its arrival counters are linear's
    assert not {"linear.py", "attention.py"} & set(kernel_source.kernel_source_files("rms_norm"))
    assert len({stack.kernel_source(k) for k in ("rms_norm", "silu_mul", "linear", "rotary")}) == 4
    with pytest.raises(UsageError, match="unknown kernel"):
        stack.kernel_source("nope")


def _copy(tmp_path):
    """A source checkout's package and tables, to edit."""
    for name in ("neurobrix", "tables"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _run(where, *argv):
    env = {k: v for k, v in os.environ.items() if k not in (tables.ENV_VAR, "PYTHONPATH")}
    return subprocess.run(
        [sys.executable, "-m", "neurobrix", *argv],
        capture_output=True,
        text=True,
        cwd=where,
        env={**env, "PYTHONPATH": str(where), "TRITON_INTERPRET": "1", "NEUROBRIX_HOME": str(where / "home")},
        timeout=300,
    )


def test_a_kernel_edited_after_its_proofs_is_refused_and_a_comment_is_not(tmp_path):
    """The whole chain on a copy of the checkout: a statement added to rms_norm.py unbinds rms_norm's table only
    (doctor blocks, naming it and the command); a comment and a docstring changed leave every table bound."""
    where = _copy(tmp_path)
    path = where / "neurobrix" / "ops" / "rms_norm.py"
    original = path.read_text(encoding="utf-8")
    path.write_text(original.replace('"""', '"""Edited docstring. ', 1) + "\n# a comment only\n", encoding="utf-8")
    ready = _run(where, "doctor")
    assert ready.returncode == 0 and "kernel code" in ready.stdout, ready.stdout + ready.stderr
    path.write_text(original + "\nEDITED = 1\n", encoding="utf-8")
    blocked = _run(where, "doctor")
    assert blocked.returncode != 0, blocked.stdout
    (line,) = [li for li in blocked.stdout.splitlines() if li.split()[:3] == ["FAIL", "kernel", "code"]]
    assert "verdict: blocked by kernel code" in blocked.stdout and "rms_norm" in line and "linear" not in line, line
    assert "check --class interpreter --kernel rms_norm --record" in line, line


def test_run_refuses_a_table_proven_on_other_code_naming_it(tmp_path, monkeypatch):
    root = write_tables(tmp_path / "tables")
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    stack.require_certified_stack("interpreter")  # bound as written
    write_kernel(root, "silu_mul", CONFIGS["silu_mul"], kernel_source="0123456789abcdef")
    tables.clear_cache()
    with pytest.raises(CompilerStackError, match=r"silu_mul \(proven on 0123456789abcdef\)") as info:
        stack.require_certified_stack("interpreter")
    assert "--kernel silu_mul --record" in str(info.value) and "rms_norm" not in str(info.value)
    write_kernel(root, "silu_mul", CONFIGS["silu_mul"], kernel_source=None)
    tables.clear_cache()
    with pytest.raises(CompilerStackError, match=r"silu_mul \(bound to no kernel source\)"):
        stack.require_certified_stack("interpreter")


def test_an_index_stating_other_code_than_its_proofs_is_refused(tmp_path, monkeypatch):
    root = write_tables(tmp_path / "tables")
    index_path = tables.index_path(root, "interpreter", "rotary")
    data = json.loads(index_path.read_text(encoding="utf-8"))
    data["stack"]["source"] = "f" * 16
    index_path.write_text(certify.render_index(data), encoding="utf-8")
    retrack(root)
    with pytest.raises(TablesError, match="claims a stack its proofs were not made on"):
        tables.load(root).index("interpreter", "rotary")


def test_certify_adds_no_entry_to_a_table_proven_on_other_code(tmp_path):
    root = write_tables(tmp_path / "tables", {"silu_mul": CONFIGS["silu_mul"]}, kernel_source="0123456789abcdef")
    table = certify.existing_table(root, "interpreter", "silu_mul")
    current = {**table.provenance, "kernel_source": stack.kernel_source("silu_mul")}
    with pytest.raises(UsageError, match="proven on code 0123456789abcdef") as info:
        certify.merged_provenance(table, current)
    assert "--kernel silu_mul --record" in str(info.value) and "delete the table" in str(info.value)
    same = {**table.provenance, "kernel_source": "0123456789abcdef", "date": "now", "command": "c", "git_commit": "g"}
    assert certify.merged_provenance(table, same)["resumed"][-1]["command"] == "c"  # the same code: added to


def test_check_record_binds_only_a_whole_passing_proof(tmp_path, monkeypatch, capsys):
    """On a one-kernel class kept quick: a check without --record says what it could bind; one of part of the table,
    or with fewer examples than a proof takes, binds nothing; a whole one binds it, and run then accepts it."""
    from conformance.__main__ import main as conformance_main

    root = write_tables(
        tmp_path / "tables", {"silu_mul": CONFIGS["silu_mul"]}, dtypes=("fp32", "fp16"), kernel_source="0" * 16
    )
    for path in (root / "interpreter").iterdir():
        if path.name != "class.yaml" and not path.name.startswith("silu_mul."):
            path.unlink()
    retrack(root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    before = {p.name: p.read_bytes() for p in (root / "interpreter").iterdir()}
    check = ["check", "--class", "interpreter", "--kernel", "silu_mul"]

    assert conformance_main([*check, "--profile", "ci"]) == 0
    assert "run it again with --record" in capsys.readouterr().out
    assert conformance_main([*check, "--profile", "ci", "--dtype", "fp32", "--record"]) == 0
    assert "passed 1 of its table's 2 entry checks" in capsys.readouterr().out
    assert conformance_main([*check, "--examples", "2", "--record"]) == 0
    assert "fewer than the 25 a proof takes" in capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in (root / "interpreter").iterdir()} == before  # nothing written
    with pytest.raises(CompilerStackError):
        stack.require_certified_stack("interpreter")

    assert conformance_main([*check, "--profile", "ci", "--record"]) == 0
    out = capsys.readouterr().out
    assert f"proven on its code {stack.kernel_source('silu_mul')}" in out and "bound before to 0000" in out, out
    tables.clear_cache()
    loaded = tables.load()
    assert loaded.index("interpreter", "silu_mul").stack["source"] == stack.kernel_source("silu_mul")
    record = loaded.proofs("interpreter", "silu_mul").provenance
    (reproved,) = record["reproved"]
    assert reproved["entry_checks"] == 2 and reproved["examples_per_entry"] == 25 and reproved["profile"] == "ci"
    assert reproved["kernel_source"] == record["kernel_source"] == stack.kernel_source("silu_mul")
    stack.require_certified_stack("interpreter")  # bound: run accepts it
    assert conformance_main([*check, "--profile", "ci", "--record"]) == 0
    assert "already bound" in capsys.readouterr().out


def test_a_local_reproof_stands_for_the_code_it_checked(tmp_path, monkeypatch):
    """On another stack a whole passing check is a local re-proof, which records the kernels' digest itself: it
    admits the tables whatever code their certification was bound to."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    root = write_tables(tmp_path / "tables", triton="0.0.1", kernel_source="0" * 16)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    with pytest.raises(CompilerStackError, match="was certified with"):
        stack.require_certified_stack("interpreter")
    stack.write_reproof("interpreter", tables.load(), stack.running_stack(), {"passed": True}, "test", "test")
    stack.require_certified_stack("interpreter")
