"""The twenty-eighth round, adversarial on the runtime's inputs: a proof copied between two entries of the same
setting, a domain widened in the index and its record together, and a relative NEUROBRIX_TABLES. No kernel is
launched; each table is a copy of the shipped interpreter tables, edited by hand and tracked again (what
`conformance track` does after an edit)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import REPO, retrack

from neurobrix import tables
from neurobrix.errors import TablesError

KERNEL = "linear"  # the interpreter class's linear: two entries (decode and prefill rows) of one setting per dtype


@pytest.fixture
def tables_copy(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables", root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    return root


def _record(root: Path) -> tuple[Path, dict]:
    path = root / "interpreter" / f"{KERNEL}.proofs.yaml"
    return path, yaml.safe_load(path.read_text(encoding="utf-8"))


def _same_setting_pair(data: dict) -> tuple[int, int]:
    """Two entries of the record with one dtype and one setting (the hole left by round 26)."""
    entries = data["entries"]
    for i, a in enumerate(entries):
        for j, b in enumerate(entries):
            if i != j and a["config"] == b["config"] and a["domain"]["dtypes"] == b["domain"]["dtypes"]:
                return i, j
    raise AssertionError("the interpreter's linear record has no two entries of one setting")


def _refusals(root: Path, capsys) -> list[str]:
    """What `tables verify`, doctor (its kernels line) and the index loader `run`'s plan and `conformance check` read
    through say of the tables now; each message is expected to refuse."""
    from neurobrix import cli, doctor

    said = []
    tables.clear_cache()
    assert cli.main(["tables", "verify"]) == 3
    said.append(capsys.readouterr().err)
    tables.clear_cache()
    loaded = tables.load()
    with pytest.raises(TablesError) as caught:  # run's preflight and `conformance check` take every index this way
        loaded.index("interpreter", KERNEL)
    said.append(str(caught.value))
    tables.clear_cache()
    kernels = [f for f in doctor.diagnose() if f.name == "kernels"]
    assert kernels and kernels[0].status == doctor.FAIL
    said.append(kernels[0].value)
    return said


def test_a_proof_copied_to_another_entry_of_the_same_setting_is_refused(tables_copy, capsys):
    """Before: the proof of entry j written over entry i's (same dtype, same setting, another domain) passed
    `tables verify`, doctor, run and `conformance check`: nothing in a proof named its entry. Now each proof carries
    its entry's digest; every reader names the entry and where the proof came from."""
    path, data = _record(tables_copy)
    i, j = _same_setting_pair(data)
    data["entries"][i]["proof"] = copy.deepcopy(data["entries"][j]["proof"])
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=120), encoding="utf-8")
    retrack(tables_copy)
    said = _refusals(tables_copy, capsys)
    assert f"entries[{i}].proof.entry" in said[0] and f"it is the proof of entries[{j}]" in said[0]
    assert all(f"entries[{i}].proof.entry" in s and "another entry" in s for s in said), said


def test_a_domain_widened_in_the_index_and_its_record_is_refused(tables_copy, capsys):
    """Before: an entry's domain widened in both files (here the decode rows M=1..4 made 1..8), the proof left as it
    was, passed everything; the proof checked M up to 4 only. Now the proof's digest is of the domain it checked."""
    path, data = _record(tables_copy)
    index_file = tables_copy / "interpreter" / f"{KERNEL}.json"
    index = tables.read_json(index_file, str(index_file))
    i = next(n for n, e in enumerate(data["entries"]) if e["domain"]["M"][1] is not None)
    hi = data["entries"][i]["domain"]["M"][1]
    data["entries"][i]["domain"]["M"][1] = hi * 2
    for e in data["entries"]:  # the neighbouring entry starts past the widened one
        if e["domain"]["M"][0] == hi + 1 and e["domain"]["dtypes"] == data["entries"][i]["domain"]["dtypes"]:
            e["domain"]["M"][0] = hi * 2 + 1
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=120), encoding="utf-8")
    key = [dim for dim, _ in index["key"]]
    rows = [[e["domain"]["dtypes"], *(v for dim in key for v in e["domain"][dim])] for e in data["entries"]]
    index["entries"] = [[*row, old[-1]] for row, old in zip(rows, index["entries"])]  # the record's domains, in order
    index_file.write_text(json.dumps(index), encoding="utf-8")
    retrack(tables_copy)
    said = _refusals(tables_copy, capsys)
    assert all(f"entries[{i}].proof.entry" in s for s in said), said
    assert f"M={data['entries'][i]['domain']['M'][0]}..{hi * 2}" in said[0]


def test_a_proof_certify_writes_carries_its_entry_and_the_shipped_ones_verify(tables_copy, capsys):
    """Controls: certify's writer binds each proof (the digest of its kernel, class, dtypes, domain and setting, each
    value of its type), the shipped tables verify as migrated, and an unbound record is named with the way out."""
    from conformance.certify import write_table
    from neurobrix import cli
    from neurobrix.schema import Domain, entry_digest

    assert cli.main(["tables", "verify"]) == 0
    capsys.readouterr()
    loaded = tables.load()
    table = loaded.proofs("interpreter", KERNEL)
    assert table is not None
    write_table(tables_copy, "interpreter", KERNEL, list(table.entries), dict(table.provenance))
    path, data = _record(tables_copy)
    for e, entry in zip(data["entries"], table.entries):
        assert e["proof"]["entry"] == entry_digest(KERNEL, "interpreter", entry.domain, entry.config)
    domain = Domain(("fp16",), (("M", 1, 4),))
    assert len({entry_digest("k", "c", domain, {"num_warps": v}) for v in (4, 4.0, True)}) == 3
    for e in data["entries"]:
        del e["proof"]["entry"]
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=120), encoding="utf-8")
    retrack(tables_copy)
    tables.clear_cache()
    with pytest.raises(TablesError, match=r"entries\[0\]\.proof': has no 'entry'.*conformance\.bind"):
        tables.load().index("interpreter", KERNEL)


def test_a_relative_tables_folder_is_refused_by_every_command(tmp_path, monkeypatch, capsys):
    """Before: NEUROBRIX_TABLES=t was read as ./t of whichever folder a command ran in (a profile's setting named
    another folder in each), where NEUROBRIX_HOME and TRITON_CACHE_DIR are refused relative. Now refused alike."""
    from neurobrix import cli, doctor

    shutil.copytree(REPO / "tables", tmp_path / "t")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(tables.ENV_VAR, "t")
    with pytest.raises(TablesError, match=r"NEUROBRIX_TABLES=t is a relative path"):
        tables.load()
    with pytest.raises(SystemExit) as exit_:
        cli.main(["tables", "verify"])
    assert exit_.value.code == 3 and "NEUROBRIX_TABLES=t is a relative path" in capsys.readouterr().err
    found = [f for f in doctor.diagnose() if f.name == "integrity"]
    assert found and found[0].status == doctor.FAIL and "is a relative path" in found[0].value
    monkeypatch.setenv(tables.ENV_VAR, str(tmp_path / "t"))
    assert tables.load().location.root == (tmp_path / "t").resolve()
