"""The thirty-eighth round, on the certified tables and their binding, attacked at run time. Each edit to a copy of the
shipped interpreter tables is followed by its record (``conftest.follow``: the record proves the edited index, each
proof bound to its entry, as certify would write a table of that setting) and ``conformance track``, so every hash,
digest and stack agrees and only the setting itself is wrong. A setting whose values every kernel takes but which no
call of its entry's domain can run (num_stages 10**6: shared memory past any GPU's; BLOCK_M 2**22: a block past
Triton's largest tensor) was refused by `run`'s preflight (exit 3, the tables' fault) while `doctor` said ready and
`python -m conformance check` passed it on the interpreter, which ignores num_stages and the GPU's limits. Each test
that names a "before" failed before its fix; the controls pass either way. One kernel check is launched at most."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO, follow, retrack
from store_fixtures import config_dict, make_checkpoint

from conformance.__main__ import main as conformance_main
from neurobrix import cli, doctor, tables
from neurobrix.plan import entry_problem

CLASS = "interpreter"
# (kernel, the parameter made so, its value, what the refusal names)
UNRUNNABLE = [
    ("linear", "num_stages", 10**6, "bytes of shared memory"),
    ("rms_norm", "BLOCK_M", 2**22, "TRITON_MAX_TENSOR_NUMEL"),
]


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    retrack(root)
    return root


def _set(root: Path, kernel: str, name: str, value: int) -> None:
    """Every setting of the kernel's index given ``name`` = ``value``, its record made to prove it, tracked."""
    path = tables.index_path(root, CLASS, kernel)
    data = json.loads(path.read_text(encoding="utf-8"))
    for config in data["configs"]:
        config[name] = value
    path.write_text(json.dumps(data), encoding="utf-8")
    follow(root, CLASS, kernel)
    retrack(root)
    tables.clear_cache()


@pytest.mark.parametrize(("kernel", "name", "value", "said"), UNRUNNABLE)
def test_doctor_is_blocked_by_a_setting_no_call_of_its_domain_runs(tmp_path, monkeypatch, kernel, name, value, said):
    """Before: doctor applied config_problem alone (a variant, a parameter, a value no kernel takes): a setting within
    every value rule but past every GPU's shared memory, or past Triton's largest tensor, at its domain's smallest call
    passed ("ok kernels", exit 0) while run refused it at its preflight (exit 3). Now doctor is blocked, naming the
    index, the entry and the limit."""
    root = _copy(tmp_path)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    _set(root, kernel, name, value)
    tables.load(root).index(CLASS, kernel)  # every hash, digest and stack agrees: the binding loads it
    found = {f.name: f for f in doctor.diagnose()}
    assert found["kernels"].status == doctor.FAIL, found["kernels"]
    message = found["kernels"].value
    assert f"{CLASS}/{kernel}.json: the setting " in message and f"'{name}': {value}" in message, message
    assert said in message and "at the smallest call of its domain" in message and "run refuses it" in message


def test_run_refuses_what_doctor_now_refuses(tmp_path, monkeypatch, capsys):
    """The control: run's preflight refused the table before this round and still does, in one line (exit 3), so that
    doctor's FAIL above says what run does."""
    root = _copy(tmp_path)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    source = make_checkpoint(tmp_path / "src" / "tiny", config=config_dict(), use_transformers=False)
    assert cli.main(["import", str(source)]) == 0
    _set(root, "linear", "num_stages", 10**6)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--model", "tiny", "--prompt", "hello", "--no-chat", "--max-tokens", "1", "--no-stream"])
    err = capsys.readouterr().err
    assert exit_.value.code == 3 and len(err.strip().splitlines()) == 1, err
    assert "linear.json: the setting for linear" in err and "bytes of shared memory" in err, err


def test_conformance_check_fails_a_setting_run_refuses_without_drawing_an_example(tmp_path, monkeypatch, capsys):
    """Before: `python -m conformance check` held each entry to config_problem alone, and the interpreter ignores
    num_stages: linear's four entries with num_stages 10**6 passed (4 examples, exit 0) while run refused the table.
    Now each entry fails with no example drawn, naming what run refuses (exit 1, a failed check)."""
    root = _copy(tmp_path)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    _set(root, "linear", "num_stages", 10**6)
    capsys.readouterr()
    code = conformance_main(["check", "--class", CLASS, "--kernel", "linear", "--examples", "1"])
    out = capsys.readouterr()
    assert code == 1, out.out + out.err  # a failed check (as a wrong result fails it)
    text = out.out + out.err
    assert "bytes of shared memory" in text and "`neurobrix run` refuses it, so no example is drawn" in text, text


def test_every_shipped_entry_runs_at_its_domain_smallest_call():
    """The control: each entry of both shipped classes passes the rule doctor and check now apply, with its class (the
    nvidia-h200 class's 232,448 bytes of shared memory), and doctor finds nothing to refuse in either class."""
    shipped = tables.load(REPO / "tables")
    for class_id in sorted(shipped.classes):
        gpu_class = shipped.classes[class_id]
        indexes = {kernel: shipped.index(class_id, kernel) for kernel in shipped.kernels(class_id)}
        assert doctor._unrunnable(indexes, gpu_class) is None, class_id
        for kernel, index in indexes.items():
            assert index is not None
            for entry in index.entries[:50]:
                assert entry_problem(kernel, entry.config, entry.domain, gpu_class) is None, (class_id, kernel, entry)
