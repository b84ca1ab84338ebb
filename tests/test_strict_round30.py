"""The thirtieth round, adversarial on the runtime's inputs: a record's provenance stack that is not its index's. Every
record of a copy of the shipped interpreter tables says its proofs were made with Triton 3.0.0 (TRACKED.yaml rewritten
as `conformance track` does) while each index claims the stack this machine runs. Nothing is launched: each refusal
comes when an index is loaded, before any kernel."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO, retrack
from store_fixtures import config_dict, make_checkpoint

from conformance.__main__ import main as conformance_main
from neurobrix import cli, doctor, tables
from neurobrix.errors import CompilerStackError, TablesError
from neurobrix.stack import require_certified_stack

CLASS = "interpreter"
OTHER = "3.0.0"  # the Triton the records are made to say their proofs were made on


def _copy(tmp_path: Path) -> tuple[Path, str]:
    """The shipped interpreter class alone, tracked, and the Triton its indexes and records state (this machine's)."""
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    retrack(root)
    return root, tables.load(root).index(CLASS, "linear").stack["triton"]


def _records_say(root: Path, triton: str, running: str) -> None:
    """Every record's provenance made to say ``triton`` (the one line certify writes there), its index left."""
    for kernel in tables.load(root).kernels(CLASS):
        path = tables.proofs_path(root, CLASS, kernel)
        text = path.read_text(encoding="utf-8")
        assert text.count(f"\n  triton: {running}\n") == 1
        path.write_text(text.replace(f"\n  triton: {running}\n", f"\n  triton: {triton}\n"), encoding="utf-8")
    retrack(root)
    tables.clear_cache()


def _indexes_say(root: Path, triton: str, running: str) -> None:
    for kernel in tables.load(root).kernels(CLASS):
        path = tables.index_path(root, CLASS, kernel)
        text = path.read_text(encoding="utf-8")
        assert text.count(f'"triton": "{running}"') == 1
        path.write_text(text.replace(f'"triton": "{running}"', f'"triton": "{triton}"'), encoding="utf-8")
    retrack(root)
    tables.clear_cache()


def _refused(message: str, running: str) -> None:
    assert len(message.strip().splitlines()) == 1, message
    assert ".proofs.yaml: its proofs were made on the compiler stack " in message, message
    assert f"triton {OTHER}" in message and f"triton {running}" in message, message
    assert ".json states " in message and "Re-certify (python -m conformance certify --class interpreter" in message
    assert "neurobrix tables verify" in message, message


def test_proofs_of_another_stack_behind_an_index_claiming_this_one_are_refused(tmp_path, monkeypatch, capsys):
    """Before: `tables verify` held the record's stack to its index's, the runtime read only the index's: every record
    saying Triton 3.0.0, the indexes this machine's, `run` generated, `warmup` compiled, `doctor` and `conformance
    check` passed, on proofs made with another compiler. Now each refuses (exit 3), naming record and stacks."""
    root, running = _copy(tmp_path)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    source = make_checkpoint(tmp_path / "src" / "tiny", config=config_dict(), use_transformers=False)
    assert cli.main(["import", str(source)]) == 0
    _records_say(root, OTHER, running)
    capsys.readouterr()

    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--model", "tiny", "--prompt", "hello", "--no-chat", "--max-tokens", "1", "--no-stream"])
    err = capsys.readouterr().err
    assert exit_.value.code == 3, err
    _refused(err, running)

    tables.clear_cache()
    with pytest.raises(SystemExit) as exit_:
        cli.main(["warmup", "--model", "tiny"])
    err = capsys.readouterr().err
    assert exit_.value.code == 3, err
    _refused(err, running)

    tables.clear_cache()
    kernels = [f for f in doctor.diagnose() if f.name == "kernels"]
    assert kernels and kernels[0].status == doctor.FAIL
    _refused(kernels[0].value, running)

    tables.clear_cache()
    assert conformance_main(["check", "--class", CLASS, "--kernel", "rms_norm", "--examples", "1"]) == 3
    _refused(capsys.readouterr().err, running)

    tables.clear_cache()  # `tables verify` as before: the record's field named
    assert cli.main(["tables", "verify"]) == 3
    assert "field 'provenance': stack" in capsys.readouterr().err


def test_a_record_in_another_layout_is_held_to_its_index_stack_too(tmp_path):
    """The provenance read from certify's layout (its header's version lines) or, in another layout (flow style, keys
    indented otherwise), from the record parsed: the same stack either way, refused when it is not the index's and
    loaded when it is."""
    root, running = _copy(tmp_path)
    path = tables.proofs_path(root, CLASS, "rms_norm")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for triton, ok in ((OTHER, False), (running, True)):
        data["provenance"]["triton"] = triton
        path.write_text(yaml.safe_dump(data, default_flow_style=True, sort_keys=False), encoding="utf-8")
        assert tables._header_stack(path.read_text(encoding="utf-8")) is None  # not certify's layout: parsed
        retrack(root)
        tables.clear_cache()
        if ok:
            assert tables.load(root).index(CLASS, "rms_norm") is not None
        else:
            with pytest.raises(TablesError) as info:
                tables.load(root).index(CLASS, "rms_norm")
            _refused(str(info.value), running)


def test_a_stack_other_than_this_machines_is_refused_as_such_only_when_index_and_record_agree(tmp_path):
    """Both behaviours of an index's stack: an index and its record both moved to another Triton are tables certified
    for another compiler stack (exit 6, what to install); an index moved alone is an index claiming a stack its proofs
    were not made on (exit 3, re-certify), whichever stack it claims. Before: read as the first."""
    root, running = _copy(tmp_path)
    _indexes_say(root, OTHER, running)
    with pytest.raises(TablesError) as info:
        require_certified_stack(CLASS, tables.load(root))
    assert info.value.exit_code == 3
    assert f"triton {running}" in str(info.value) and "states torch" in str(info.value)
    _records_say(root, OTHER, running)
    with pytest.raises(CompilerStackError) as stack_info:
        require_certified_stack(CLASS, tables.load(root))
    assert stack_info.value.exit_code == 6


def test_the_fast_path_reads_the_provenance_as_the_whole_parse_does(monkeypatch):
    """Each shipped record's stack read from its header is the one `tables verify` reads from it parsed in full
    (schema.stack_of), and the shipped indexes still load without a record parsed (the nvidia-h200 class's in well
    under a second: a parse of its records takes seconds)."""
    from neurobrix.schema import stack_of

    for path in sorted((REPO / "tables").glob("*/*.proofs.yaml")):
        text = path.read_text(encoding="utf-8")
        assert tables._header_stack(text) == stack_of(yaml.load(text, tables.SAFE_LOADER)["provenance"]), path
    loaded = tables.load(REPO / "tables")
    monkeypatch.setattr(tables, "parse_proofs", lambda *a, **k: pytest.fail("a record was parsed"))
    start = time.perf_counter()
    for class_id in loaded.classes:
        for kernel in loaded.kernels(class_id):
            assert loaded.index(class_id, kernel) is not None
    assert time.perf_counter() - start < 1.0
