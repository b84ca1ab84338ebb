"""The twenty-ninth round, adversarial on the runtime's inputs: a settings index edited alone (its record left as it
was, TRACKED.yaml rewritten as `conformance track` does): a setting never proven, a domain widened, an entry deleted,
two entries swapped. Each table is a copy of the shipped interpreter tables; nothing is launched (each refusal comes
when the index is loaded, before any kernel)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import REPO, rebind, retrack
from store_fixtures import config_dict, make_checkpoint

from conformance.__main__ import main as conformance_main
from neurobrix import cli, doctor, tables
from neurobrix.errors import TablesError

CLASS, KERNEL = "interpreter", "linear"  # four entries: fp16 M=1..4, fp16 M=5.., fp32 M=1..4, fp32 M=5..


def _setting(entries: list, configs: list) -> int:  # entry 2's setting (its own config) made one never proven
    configs[entries[2][-1]]["BLOCK_M"] = 16
    return 2


def _widened(entries: list, configs: list) -> int:  # fp16 M=1..4 made 1..8, its neighbour M=5.. made 9..
    entries[0][2], entries[1][1] = 8, 9
    return 0


def _deleted(entries: list, configs: list) -> int:  # fp16 M=5.. gone (its setting is another entry's too)
    del entries[1]
    return 1


def _swapped(entries: list, configs: list) -> int:  # fp16 M=5.. and fp32 M=1..4 in each other's place
    entries[1], entries[2] = entries[2], entries[1]
    return 1


EDITS = {"setting": _setting, "widened": _widened, "deleted": _deleted, "swapped": _swapped}
SAID = {  # what names the index's entry, beside its kernel and setting
    "setting": r"entry 2 \(linear fp32 M=1\.\.4, N=1\.\., K=1\.\. \{[^}]*'BLOCK_M': 16",
    "widened": r"entry 0 \(linear fp16 M=1\.\.8, N=1\.\., K=1\.\. ",
    "deleted": r"entry 1 \(linear fp32 M=1\.\.4, .*it proves 4 entries, this index holds 3.*as its entries\[2\]",
    "swapped": r"entry 1 \(linear fp32 M=1\.\.4, .*as its entries\[2\] \(the index's entries moved\)",
}


def _interpreter_tables(tmp_path: Path) -> Path:
    """The shipped interpreter class alone (the GPU class's records take seconds to verify), tracked."""
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    retrack(root)
    return root


@pytest.fixture
def edited(request, tmp_path, monkeypatch) -> Path:
    """The shipped interpreter tables, the linear index edited alone as ``request.param`` says and tracked again."""
    root = _interpreter_tables(tmp_path)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    path = tables.index_path(root, CLASS, KERNEL)
    index = json.loads(path.read_text(encoding="utf-8"))
    request.node.entry = EDITS[request.param](index["entries"], index["configs"])
    path.write_text(json.dumps(index), encoding="utf-8")
    retrack(root)
    return root


def _refused(message: str, entry: int, edit: str) -> None:
    assert "linear.json" in message and f"entry {entry} (" in message, message
    assert "is not the one its record" in message or "is not proven" in message, message
    assert "tables verify" in message and "certify --class interpreter --kernels linear" in message, message
    assert len(message.strip().splitlines()) == 1, message
    assert re.search(SAID[edit], message), message


@pytest.mark.parametrize("edited", sorted(EDITS), indirect=True)
def test_an_index_edited_alone_is_refused_by_run_warmup_doctor_check(edited, request, tmp_path, monkeypatch, capsys):
    """Before: the index was held only to the digests of its record's proofs when they matched; otherwise the record
    was parsed and each proof held to its own entry, never the record to the index. An index edited alone (and
    tracked) ran on what it now said, a setting or domain no proof speaks of: `tables verify` and CI refused it, `run`,
    `doctor`, `warmup` and `conformance check` did not. Now each refuses, naming the entry and its record (exit 3)."""
    edit, entry = request.node.callspec.params["edited"], request.node.entry
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    source = make_checkpoint(tmp_path / "src" / "tiny", config=config_dict(), use_transformers=False)
    assert cli.main(["import", str(source)]) == 0
    capsys.readouterr()

    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--model", "tiny", "--prompt", "hello", "--no-chat", "--max-tokens", "1", "--no-stream"])
    err = capsys.readouterr().err
    assert exit_.value.code == 3, err
    _refused(err, entry, edit)

    tables.clear_cache()
    with pytest.raises(SystemExit) as exit_:
        cli.main(["warmup", "--model", "tiny"])
    err = capsys.readouterr().err
    assert exit_.value.code == 3, err
    _refused(err, entry, edit)

    tables.clear_cache()
    kernels = [f for f in doctor.diagnose() if f.name == "kernels"]
    assert kernels and kernels[0].status == doctor.FAIL
    _refused(kernels[0].value, entry, edit)

    tables.clear_cache()
    assert conformance_main(["check", "--class", CLASS, "--kernel", "rms_norm", "--examples", "1"]) == 3
    _refused(capsys.readouterr().err, entry, edit)

    tables.clear_cache()  # `tables verify` still gives its own report, every difference of record and index
    assert cli.main(["tables", "verify"]) == 3
    err = capsys.readouterr().err
    assert "linear.proofs.yaml: field 'entries" in err and ("holds 4 entries" in err or f"entry {entry} of its" in err)


def test_an_index_edited_with_its_record_loads(tmp_path, monkeypatch):
    """The setting change refused alone, then made in the record too (and its proofs bound again to their entries, as a
    re-certify would write them) is the record's entries: the index loads, on the fast path and parsed. What is
    refused above is the index without its proofs, not the edit."""
    root = _interpreter_tables(tmp_path)
    index_file, record = tables.index_path(root, CLASS, KERNEL), tables.proofs_path(root, CLASS, KERNEL)
    index = json.loads(index_file.read_text(encoding="utf-8"))
    _setting(index["entries"], index["configs"])
    index_file.write_text(json.dumps(index), encoding="utf-8")
    retrack(root)
    with pytest.raises(TablesError, match=r"linear\.json: entry 2 .*'BLOCK_M': 16"):  # alone, refused
        tables.load(root).index(CLASS, KERNEL)
    tables.clear_cache()
    data = yaml.safe_load(record.read_text(encoding="utf-8"))
    data["entries"][2]["config"]["BLOCK_M"] = 16
    data["entries"][2]["proof"].update(rejected=[], candidates_tried=1)  # its candidates were BLOCK_M 32's
    record.write_text(yaml.safe_dump(data, sort_keys=False, width=120), encoding="utf-8")
    rebind(record, CLASS, KERNEL)
    retrack(root)
    loaded = tables.load(root)
    assert loaded.index(CLASS, KERNEL).configs[index["entries"][2][-1]]["BLOCK_M"] == 16
    assert tables.verify_all(loaded) == []
    record.write_text(
        yaml.safe_dump(yaml.safe_load(record.read_text(encoding="utf-8")), default_flow_style=True, sort_keys=False)
    )
    retrack(root)  # a record in another layout (the scan finds no digest): parsed, each proof its entry's, passes
    tables.clear_cache()
    assert tables.load(root).index(CLASS, KERNEL) is not None
