"""The twenty-sixth round, adversarial on the strict runtime: one rule for the settings a kernel runs, a time limit that
moves a loop on, and the certified tables edited by hand. Found and fixed: a setting holding a parameter its kernel
does not have (or a value no kernel takes) passed `python -m conformance check` on the interpreter, which ignores it,
and certify wrote it back into a table it added to, while `run` refused the table; `--max-minutes 0` did nothing and
exited 3, so CONTRIBUTING's loop rerunning certify while it exits 3 never ended (and a limit shorter than certify's or
check's set-up did the same); an audit record whose provenance names a CUDA its index does not record passed `tables
verify`; a YAML merge key was refused in words naming no merge key. Each of those tests failed before its fix. The
last test pins what was refused already (each edit made by hand, TRACKED.yaml then rewritten as `conformance track`
writes it): settings written as floats, strings or booleans, a key named twice, YAML 1.1 spellings, anchors and
aliases, a proof copied from another entry, a proof made on another GPU, another Triton, a file absent or unlisted.
No GPU; small kernels on the interpreter."""

from __future__ import annotations

import copy
import dataclasses
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import REPO, follow, retrack

from conformance.__main__ import main as conformance_main
from neurobrix import tables
from neurobrix.errors import CompilerStackError, NeuroBrixError, TablesError
from neurobrix.plan import resolve
from neurobrix.schema import Setting

CLASS = "interpreter"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The interpreter class's shipped tables, alone in a folder of their own, tracked."""
    folder = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / CLASS, folder / CLASS)
    retrack(folder)
    return folder


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _edit_yaml(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=120), encoding="utf-8")


# ------------------------------------------------------------------- 1. check and certify apply run's rule for settings
@pytest.mark.parametrize(
    "change, named",
    [
        ({"EVEN_N": 1}, "EVEN_N"),  # a parameter rms_norm's kernel does not have: the interpreter ignores it
        ({"num_warps": 3}, "num_warps=3"),  # no GPU launches 3 warps; the interpreter ignores num_warps
    ],
)
def test_check_refuses_a_setting_run_refuses(change, named):
    """Before: `check` handed the setting to the interpreter, which ignores a parameter its kernel lacks and num_warps
    altogether, and passed it, while `run`'s preflight refused the table (doctor named it). Now the entry fails its
    check, naming the setting and the parameter, and no example is drawn."""
    from conformance.check import check_entry

    index = tables.load(REPO / "tables").index(CLASS, "rms_norm")
    entry = index.entries[0]
    bad = Setting(entry.domain, {**entry.config, **change})
    result = check_entry("rms_norm", bad, entry.domain.dtypes[0], 2, "ci")
    assert not result.passed and named in (result.failure or "") and "neurobrix run" in (result.failure or "")
    assert result.examples == 0
    assert check_entry("rms_norm", entry, entry.domain.dtypes[0], 2, "ci").passed  # the shipped setting passes


def test_certify_writes_no_table_holding_a_setting_run_refuses(root):
    """Before: certify adding to a table wrote every entry it kept back (write_table), a setting `run` refuses
    included. Now it refuses to write, naming the entry and the parameter; the table stays as it was."""
    from conformance.certify import write_table

    record = tables.load(root).proofs(CLASS, "rms_norm")
    assert record is not None
    before = tables.index_path(root, CLASS, "rms_norm").read_bytes()
    entries = [dataclasses.replace(e, config={**e.config, "EVEN_N": 1}) for e in record.entries]
    with pytest.raises(TablesError, match=r"rms_norm\.json: the entry .*EVEN_N.*`neurobrix run` refuses it"):
        write_table(root, CLASS, "rms_norm", entries, dict(record.provenance))
    assert tables.index_path(root, CLASS, "rms_norm").read_bytes() == before
    write_table(root, CLASS, "rms_norm", list(record.entries), dict(record.provenance))  # its own entries: written


# ----------------------------------------------------------------------------------------- 2. --max-minutes 0 and below
@pytest.mark.parametrize("command", ["certify", "check", "rank"])
@pytest.mark.parametrize("minutes", ["0", "-1", "nan"])
def test_a_time_limit_of_no_time_is_a_usage_error(command, minutes, capsys):
    """Before: `certify --max-minutes 0` (and check's) did nothing and exited 3, "work left", so the loop CONTRIBUTING
    documents (rerun while it exits 3) never ended; rank took 0 too. Now 0, a negative and NaN are refused by the
    parser naming the option (exit 2)."""
    argv = [command, "--class", CLASS, "--max-minutes", minutes]
    if command == "certify":
        argv += ["--dtypes", "fp32"]
    with pytest.raises(SystemExit) as info:
        conformance_main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --max-minutes: must be a number of minutes above 0" in err and "Traceback" not in err


def test_a_run_under_a_time_limit_does_its_first_chunk_of_work(root):
    """Before: a limit shorter than the set-up before the first chunk (planning, reading the tables) stopped certify
    and check before any work, exit 3, at every rerun: the loop never ended with it either. Now the first chunk of
    work is done whatever the limit: certify writes its entry, check checks its entries."""
    from conformance.check import check_class

    for kernel in ("silu_mul",):
        tables.index_path(root, CLASS, kernel).unlink()
        tables.proofs_path(root, CLASS, kernel).unlink()
    retrack(root)
    common = ["--class", CLASS, "--max-minutes", "1e-9"]
    certify = ["certify", *common, "--kernels", "silu_mul", "--dtypes", "fp16", "--examples", "2", "--no-check"]
    assert conformance_main([*certify, "--tables", str(root)]) == 0
    assert tables.index_path(root, CLASS, "silu_mul").is_file()
    tables.clear_cache()
    report = check_class(CLASS, ["silu_mul"], None, 2, "ci", max_minutes=1e-9, tables_root=root)  # check's own loop
    assert report.passed and report.complete and len(report.results) == 1


# ---------------------------------------------------------------------- 3. proofs bound to the stack their index names
def test_proofs_recording_a_cuda_their_index_does_not_are_refused(root):
    """Before: the record was held to its index's stack only in the keys the index names: proofs whose provenance
    records CUDA 12.8 beside an index recording none (its "cuda" stripped) passed `tables verify`. Now the record's
    whole stack (torch, Triton, CUDA where it records one) must be its index's."""
    _edit_yaml(tables.proofs_path(root, CLASS, "rms_norm"), lambda d: d["provenance"].__setitem__("cuda", "12.8"))
    retrack(root)
    with pytest.raises(TablesError, match=r"rms_norm\.proofs\.yaml: field 'provenance': stack .*12\.8.* differs"):
        tables.load(root).proofs(CLASS, "rms_norm")


def test_a_yaml_merge_key_is_refused_in_words_that_name_it(root):
    """Before: refused as "could not determine a constructor for the tag 'tag:yaml.org,2002:merge'". Now named."""
    _edit(
        tables.proofs_path(root, CLASS, "rms_norm"),
        "  config:\n    BLOCK_M: 64\n",
        "  config:\n    <<: {BLOCK_M: 64}\n",
    )
    retrack(root)
    with pytest.raises(TablesError, match=r"rms_norm\.proofs\.yaml:\d+:\d+: .*merge key \(<<\)"):
        tables.load(root).proofs(CLASS, "rms_norm")


# ---------------------------------------------------------------------- what was refused already, pinned by a test each
def _index(name: str, old: str, new: str):
    def edit(root: Path) -> None:  # the record made to prove it too (bound again): the check is run's preflight's
        _edit(tables.index_path(root, CLASS, name), old, new)
        follow(root, CLASS, name)

    return edit


def _proofs(name: str, old: str, new: str):
    return lambda root: _edit(tables.proofs_path(root, CLASS, name), old, new)


def _copied_proof(root: Path) -> None:  # entry 0's proof (its winner BLOCK_M 64) given to entry 2 (BLOCK_M 32)
    def change(d):
        d["entries"][2]["proof"] = copy.deepcopy(d["entries"][0]["proof"])

    _edit_yaml(tables.proofs_path(root, CLASS, "linear"), change)


def _another_gpu(root: Path) -> None:
    def change(d):
        d["provenance"]["device"] = {"backend": "cuda", "vendor": "nvidia", "name": "NVIDIA A100-SXM4-80GB"}

    _edit_yaml(tables.proofs_path(root, CLASS, "rms_norm"), change)


def _anchored(root: Path) -> None:  # entry 1's setting given as entry 0's, by reference
    config = "  config:\n    BLOCK_M: 64\n    num_warps: 4\n"
    _proofs("rms_norm", config, "  config: &c\n    BLOCK_M: 64\n    num_warps: 4\n")(root)
    _proofs("rms_norm", config, "  config: *c\n")(root)


WARPS = '"num_warps": 4'
WARPS_YAML = "    num_warps: 4\n"
EDITS = {
    # the settings index run reads: a number spelt otherwise is another constexpr to Triton, or none
    "index num_warps 4.0": (_index("rms_norm", WARPS, '"num_warps": 4.0'), "run", r"num_warps=4\.0"),
    'index num_warps "4"': (_index("rms_norm", WARPS, '"num_warps": "4"'), "run", r"num_warps='4'"),
    "index num_warps true": (_index("rms_norm", WARPS, '"num_warps": true'), "run", r"num_warps=True"),
    "index key twice": (_index("rms_norm", WARPS, f"{WARPS}, {WARPS.replace('4', '8')}"), "run", "'num_warps' twice"),
    "index unknown parameter": (_index("rms_norm", WARPS, f'{WARPS}, "EVEN_N": 1'), "run", "EVEN_N"),
    # the audit record, held to its index
    "proofs num_warps 4.0": (_proofs("rms_norm", WARPS_YAML, "    num_warps: 4.0\n"), "verify", "differs from entry 0"),
    "proofs num_warps '4'": (_proofs("rms_norm", WARPS_YAML, "    num_warps: '4'\n"), "verify", "differs from entry 0"),
    "proofs key twice": (
        _proofs("rms_norm", WARPS_YAML, WARPS_YAML + "    num_warps: 8\n"),
        "verify",
        "key 'num_warps' twice",
    ),
    "proofs yes": (_proofs("rms_norm", WARPS_YAML, WARPS_YAML + "    EVEN: yes\n"), "verify", "boolean 'yes'"),
    "proofs anchor and alias": (_anchored, "verify", "through an alias"),
    "proof copied from another entry": (_copied_proof, "verify", r"entries\[2\]\.proof\.rejected.*own setting"),
    "proof made on another GPU": (_another_gpu, "verify", r"provenance\.device.*not of class interpreter"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_tables_edited_by_hand_are_refused_naming_the_file(root, edit):
    """Each edit, TRACKED.yaml then rewritten as `conformance track` writes it (the hashes agree): the index is refused
    by run's preflight (resolve, before anything is loaded), the audit record by `tables verify`, naming the file."""
    change, where, said = EDITS[edit]
    change(root)
    retrack(root)
    loaded = tables.load(root)
    kernel = "linear" if "copied" in edit else "rms_norm"
    with pytest.raises(TablesError, match=said) as info:
        if where == "run":
            resolve([("rms_norm", "fp32", (4, 16))], loaded, CLASS)
        else:
            loaded.proofs(CLASS, kernel)
    assert f"{kernel}.{'json' if where == 'run' else 'proofs.yaml'}" in str(info.value)
    assert [p.path for p in tables.verify_all(loaded)] == [f"{CLASS}/{kernel}"] or where == "run"


def test_files_absent_unlisted_or_of_another_stack_are_refused(root):
    """A file TRACKED.yaml lists that is gone, and one it does not list, refuse the whole folder at load (every
    command); an index and its record moved to another Triton refuse the class (no one stack proves it), and the whole
    class moved to another refuses this machine's stack (exit 6)."""
    from neurobrix.stack import require_certified_stack

    (root / CLASS / "notes.txt").write_text("unlisted\n")
    with pytest.raises(TablesError, match=r"notes\.txt: present but not in the tracked list"):
        tables.load(root)
    (root / CLASS / "notes.txt").unlink()
    tables.index_path(root, CLASS, "rotary").rename(root / "rotary.json")
    tables.clear_cache()
    with pytest.raises(TablesError, match=r"rotary\.json: tracked but missing"):
        tables.load(root)
    (root / "rotary.json").rename(tables.index_path(root, CLASS, "rotary"))

    running = tables.load(root).index(CLASS, "rms_norm").stack["triton"]
    other = "3.0.0" if running != "3.0.0" else "3.1.0"
    for kernel in ("rms_norm",):
        _edit(tables.index_path(root, CLASS, kernel), f'"triton": "{running}"', f'"triton": "{other}"')
        _edit(tables.proofs_path(root, CLASS, kernel), f"triton: {running}", f"triton: {other}")
    retrack(root)
    with pytest.raises(NeuroBrixError, match="certified with different compiler stacks"):
        require_certified_stack(CLASS, tables.load(root))
    for kernel in tables.load(root).kernels(CLASS):  # each index with its record (strict round 30: an index moved
        if kernel != "rms_norm":  # alone claims a stack its proofs were not made on, refused as such, exit 3)
            _edit(tables.index_path(root, CLASS, kernel), f'"triton": "{running}"', f'"triton": "{other}"')
            _edit(tables.proofs_path(root, CLASS, kernel), f"triton: {running}", f"triton: {other}")
    retrack(root)
    with pytest.raises(CompilerStackError) as info:
        require_certified_stack(CLASS, tables.load(root))
    assert info.value.exit_code == 6
