"""The thirty-third round, adversarial on the runtime's inputs: the device a record's provenance says its proofs were
made on. `tables verify` refuses a record whose device is not of its class (strict round 16: proofs made on another
GPU prove nothing of this one), but `run`, `doctor`, `warmup` and `conformance check` load a class's settings through
its indexes and their records' bindings (strict rounds 28-31), which never read the device: the interpreter's record
saying it was proven on a CUDA device, or a made-up Hopper class's record saying an A100's 108 multiprocessors (or
holding no device at all), loaded, in certify's layout and in any other (planted round 27 left this open). Every
case edits a record of a tables copy and rewrites TRACKED.yaml as `conformance track` does; nothing is launched."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from conftest import REPO, retrack
from kernel_tables import class_device, write_gpu_class, write_tables

from neurobrix import cli, tables
from neurobrix.errors import TablesError

HOPPER = {
    "backend": "cuda",
    "vendor": "nvidia",
    "device_name": "NVIDIA Fake Hopper",
    "compute_capability": [9, 0],
    "multiprocessor_count": 132,
}


def _interpreter(tmp_path: Path) -> Path:
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / "interpreter", root / "interpreter")
    retrack(root)
    return root


def _hopper(tmp_path: Path) -> Path:
    return write_gpu_class(write_tables(tmp_path / "tables"))


def _device_edited(path: Path, device: object, layout: bool) -> None:
    """The record's provenance device replaced, its text otherwise as it was; with ``layout`` False, a comment line
    after its entries too (YAML reads the same record; the runtime's line scan then parses it in full)."""
    text = path.read_text(encoding="utf-8")
    head, sep, body = text.partition("\nentries:\n")
    data = yaml.safe_load(head)
    data["provenance"]["device"] = device
    new = yaml.safe_dump(data, sort_keys=False, width=120) + sep.lstrip("\n") + body
    path.write_text(new if layout else new + "# a comment after the entries\n", encoding="utf-8")
    assert yaml.safe_load(new)["entries"] == yaml.safe_load(text)["entries"]


def _refusals(root: Path, class_id: str, kernel: str) -> tuple[bool, str]:
    """Whether `tables verify` refuses the record, and what loading its index (as run does) says ('' if loaded)."""
    tables.clear_cache()
    verify = any(p.path == f"{class_id}/{kernel}" for p in tables.verify_all(tables.load(root)))
    tables.clear_cache()
    try:
        tables.load(root).index(class_id, kernel)
        said = ""
    except TablesError as e:
        said = str(e)
    tables.clear_cache()
    return verify, said


FOREIGN = {
    "interpreter": [
        {"backend": "cuda", "vendor": "triton", "name": "Triton interpreter (CPU)"},
        {**class_device(HOPPER)},
        {},
    ],
    "fake-hopper": [
        {**class_device(HOPPER), "multiprocessor_count": 108},
        {**class_device(HOPPER), "name": "NVIDIA A100-SXM4-80GB", "compute_capability": [8, 0]},
        {"backend": "interpreter", "vendor": "triton", "name": "Triton interpreter (CPU)"},
        {},
    ],
}


@pytest.mark.parametrize("layout", [True, False], ids=["certify's layout", "parsed in full"])
@pytest.mark.parametrize(("class_id", "case"), [(c, i) for c, devices in FOREIGN.items() for i in range(len(devices))])
def test_a_record_proven_on_a_device_not_of_its_class_is_refused_at_load(tmp_path, class_id, case, layout):
    root = _interpreter(tmp_path) if class_id == "interpreter" else _hopper(tmp_path)
    kernel = "rms_norm"
    path = tables.proofs_path(root, class_id, kernel)
    # the record as it is, rewritten the same way, loads (and the line scan reads it as certify's layout or not)
    own = yaml.safe_load(path.read_text(encoding="utf-8"))["provenance"]["device"]
    _device_edited(path, own, layout)
    retrack(root)
    assert (tables._record_layout(path.read_text(encoding="utf-8"), class_id, kernel) is not None) == layout
    assert _refusals(root, class_id, kernel) == (False, "")
    _device_edited(path, FOREIGN[class_id][case], layout)
    retrack(root)
    verify, said = _refusals(root, class_id, kernel)
    assert verify, "tables verify refuses it"
    assert f"field 'provenance.device': records a device that is not of class {class_id}" in said, said


def test_a_record_relabelled_from_another_gpu_is_named_by_load_and_tables_show(tmp_path, monkeypatch, capsys):
    """The made-up Hopper's linear record saying an A100 proved it: the settings loaded as run loads them, and
    `tables show`, name the device in the same words (exit 3)."""
    root = _hopper(tmp_path)
    path = tables.proofs_path(root, "fake-hopper", "linear")
    _device_edited(path, FOREIGN["fake-hopper"][1], layout=True)
    retrack(root)
    tables.clear_cache()
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    loaded = tables.load()
    with pytest.raises(TablesError, match="name 'NVIDIA A100-SXM4-80GB'"):
        loaded.index("fake-hopper", "linear")
    tables.clear_cache()
    with pytest.raises(SystemExit) as exited:
        cli.main(["tables", "show", "fake-hopper", "linear"])
    assert exited.value.code == 3
    assert "records a device that is not of class fake-hopper" in capsys.readouterr().err
