"""The fifty-ninth round, adversarial on the strict runtime (docs/strictness-rounds.md).

First, what round 58 left: the verified list's digest covered the engine's verifying code, not the parser that reads a
record (PyYAML and libyaml), so a list verified under one reader was honoured under another, and an installed wheel's
records, verified by the release gate under the build's PyYAML, were never read again under the user's. The digest now
names the reader (``tables.record_readers``), and a wheel's exemption holds only where its list carries this digest.

Then a new class of input: what the process's environment changes in how the engine reads and runs, beyond Triton's
knobs (earlier rounds): Python's own bound on integer texts (PYTHONINTMAXSTRDIGITS=0 lifts it), the CUDA driver's
variables, and the engine's path variables spelt oddly. Found in clean code: a record whose ``candidates_tried`` has
more than 4,300 digits ended every command that read it in a ValueError traceback (the form check's ``int``), and with
Python's bound lifted a number of 200,000 digits cost seconds to read and was quoted whole in the refusal.

No GPU, no model: the interpreter class's shipped tables, copied, edited and tracked again.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import REPO, retrack

from conformance import track
from neurobrix import stack, tables
from neurobrix.errors import TablesError

CLASS = "interpreter"
RECORD = f"{CLASS}/rms_norm.proofs.yaml"
OTHER_READER = "PyYAML 7.0, libyaml 0.3.0"


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tracked") / "tables"
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    track.write(root)
    return root


def _copy(tracked: Path, tmp_path: Path) -> Path:
    shutil.copytree(tracked, tmp_path / "tables")
    return tmp_path / "tables"


def _refusal(root: Path) -> str | None:
    tables.clear_cache()
    try:
        loaded = tables.load(root)
        for kernel in loaded.kernels(CLASS):
            loaded.index(CLASS, kernel)
    except TablesError as exc:
        return str(exc)
    return None


@pytest.fixture
def other_reader(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process reading tables with another PyYAML (the digest computed afresh, and again after)."""
    monkeypatch.setattr(tables, "record_readers", lambda: OTHER_READER)
    tables._own_rules.cache_clear()
    tables.clear_cache()
    yield
    monkeypatch.undo()
    tables._own_rules.cache_clear()
    tables.clear_cache()


# ---------------------------------------------------------------------------------------------- the reader bound


def test_the_digest_names_the_reader(monkeypatch):
    """Another PyYAML or libyaml is another digest of the same code."""
    own = tables.verification_rules()
    monkeypatch.setattr(tables, "record_readers", lambda: OTHER_READER)
    try:
        tables._own_rules.cache_clear()
        assert tables.verification_rules() != own and own is not None
    finally:
        monkeypatch.undo()
        tables._own_rules.cache_clear()
    assert tables.verification_rules() == own


def test_the_reader_is_this_processes():
    import yaml

    said = tables.record_readers()
    assert said.startswith(f"PyYAML {yaml.__version__}, ")
    assert ("libyaml" in said) == (tables.SAFE_LOADER is not yaml.SafeLoader)


def test_a_list_verified_under_another_reader_is_read_in_full(tracked, tmp_path, monkeypatch, other_reader):
    """Under another reader every record of the list is read in full (never refused for it): the loaded tables hold no
    verified record, and every index of the class loads."""
    root = _copy(tracked, tmp_path)
    assert _refusal(root) is None
    assert dict(tables.load(root)._verified) == {}


def test_a_list_verified_under_this_reader_is_honoured(tracked, tmp_path):
    root = _copy(tracked, tmp_path)
    tables.clear_cache()
    assert len(tables.load(root)._verified) == len(list((root / CLASS).glob("*.proofs.yaml")))


def _as_installed(root: Path, monkeypatch: pytest.MonkeyPatch) -> tables.Tables:
    """``root`` loaded as an installed wheel's tables whose RECORD pins them (the pin itself is round 27's)."""
    monkeypatch.setattr(tables, "_wheel_records", lambda folder: {"x": "y"})
    monkeypatch.setattr(tables, "installed_tables_problem", lambda folder, records: None)
    tables.clear_cache()
    return tables._load.__wrapped__(tables.TablesLocation(root, "installed package"), None)


def test_a_wheels_exemption_holds_under_its_own_reader(tracked, tmp_path, monkeypatch):
    root = _copy(tracked, tmp_path)
    assert _as_installed(root, monkeypatch)._release


def test_a_wheel_read_by_another_pyyaml_is_read_in_full(tracked, tmp_path, monkeypatch, other_reader):
    """The user upgraded PyYAML under an installed wheel: its records are read in full (the form check), not refused."""
    root = _copy(tracked, tmp_path)
    loaded = _as_installed(root, monkeypatch)
    assert not loaded._release
    for kernel in loaded.kernels(CLASS):
        loaded.index(CLASS, kernel)


def test_a_wheel_whose_list_names_no_digest_is_read_in_full(tracked, tmp_path, monkeypatch):
    root = _copy(tracked, tmp_path)
    retrack(root)  # (files only: no verified_rules line)
    assert not _as_installed(root, monkeypatch)._release


def test_the_generated_validators_use_fastjsonschema_for_its_exceptions_only():
    """fastjsonschema's version is left out of the digest: the validators it generated are files of the package (in the
    digest) and take from it only the two exception classes they raise."""
    folder = Path(tables.__file__).resolve().parent / "_schemas"
    files = sorted(folder.glob("*.py"))
    assert files
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fastjsonschema"):
                names = {alias.name for alias in node.names}
                assert names <= {"JsonSchemaValueException", "JsonSchemaValuesException"}, (path, names)
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("fastjsonschema") for a in node.names), path


# --------------------------------------------------------------------------- Python's bound on integer texts


def _record_count(digits: int) -> Callable[[Path], str]:
    def edit(root: Path) -> str:
        path = root / RECORD
        text = re.sub(r"candidates_tried: \d+", "candidates_tried: " + "9" * digits, path.read_text(), count=1)
        path.write_text(text, encoding="utf-8")
        retrack(root)
        return RECORD

    return edit


def _index_number(digits: int) -> Callable[[Path], str]:
    def edit(root: Path) -> str:
        path = root / CLASS / "rms_norm.json"
        path.write_text(path.read_text().replace('"num_warps": 4', '"num_warps": ' + "9" * digits, 1), encoding="utf-8")
        retrack(root)
        return f"{CLASS}/rms_norm.json"

    return edit


def _tracked_size(digits: int) -> Callable[[Path], str]:
    def edit(root: Path) -> str:
        path = root / tables.TRACKED_NAME
        text = path.read_text()
        path.write_text(re.sub(r"  size: \d+\n", f"  size: {'9' * digits}\n", text, count=1), encoding="utf-8")
        return tables.TRACKED_NAME

    return edit


DIGITS = {
    "record-count-5000": _record_count(5000),
    "record-count-200000": _record_count(200_000),
    "index-number-200000": _index_number(200_000),
    "tracked-size-200000": _tracked_size(200_000),
}


@pytest.fixture(params=[None, 0], ids=["python-bound", "bound-lifted"])
def int_bound(request: pytest.FixtureRequest) -> Iterator[None]:
    """Python's default bound on int(text), and the bound lifted (PYTHONINTMAXSTRDIGITS=0 does it at start)."""
    saved = sys.get_int_max_str_digits()
    if request.param is not None:
        sys.set_int_max_str_digits(request.param)
    yield
    sys.set_int_max_str_digits(saved)


@pytest.mark.parametrize("edit", DIGITS.values(), ids=DIGITS.keys())
def test_a_number_past_4300_digits_is_refused_in_one_short_line(tracked, tmp_path, edit, int_bound):
    """Whatever Python's own bound, a table's integer of more digits than its default is refused by the engine on the
    line naming the file, the number not quoted (a 200,000-digit number took seconds to read unbounded)."""
    root = _copy(tracked, tmp_path)
    name = edit(root)
    said = _refusal(root)
    assert said is not None and said.startswith(f"{root / name}:") and "\n" not in said, said[:300]
    assert "digits, past the 4300" in said and len(said) < 400, said[:300]


# --------------------------------------------------------------------------- the CUDA driver's variables

REFUSED_DRIVER = {"CUDA_FORCE_PTX_JIT": "1", "CUDA_FORCE_JIT": "1"}
# harmless to a certified kernel, each argued in docs/strictness-rounds.md (round 59)
HARMLESS_DRIVER = {
    "CUDA_FORCE_PTX_JIT": "0",
    "CUDA_DISABLE_PTX_JIT": "1",
    "CUDA_DISABLE_JIT": "1",
    "CUDA_CACHE_DISABLE": "1",
    "CUDA_CACHE_PATH": "/tmp/elsewhere",
    "CUDA_CACHE_MAXSIZE": "0",
    "CUDA_MODULE_LOADING": "EAGER",
    "CUDA_DEVICE_MAX_CONNECTIONS": "1",
    "CUDA_AUTO_BOOST": "0",
}


@pytest.mark.parametrize("name", REFUSED_DRIVER)
def test_a_driver_variable_that_compiles_ptx_itself_refuses_a_gpu_class(name, monkeypatch):
    monkeypatch.setenv(name, REFUSED_DRIVER[name])
    said = stack.compiler_problem("nvidia-h200")
    assert said is not None and f"{name}={REFUSED_DRIVER[name]}" in said and "\n" not in said, said
    assert stack.compiler_problem(CLASS) is None  # (the interpreter compiles nothing)


@pytest.mark.parametrize("name", HARMLESS_DRIVER)
def test_the_drivers_other_variables_run(name, monkeypatch):
    for refused in REFUSED_DRIVER:
        monkeypatch.delenv(refused, raising=False)
    monkeypatch.setenv(name, HARMLESS_DRIVER[name])
    assert name not in stack.compiler_overrides()


# --------------------------------------------------------------------------- NEUROBRIX_TABLES spelt oddly


def _spellings(root: Path) -> dict[str, str]:
    return {
        "trailing-slash": f"{root}/",
        "double-slash": f"{root.parent}//{root.name}",
        "dot-segment": f"{root.parent}/./{root.name}",
        "dot-dot-back": f"{root}/../{root.name}",
        "class-and-back": f"{root}/{CLASS}/..",
    }


def test_neurobrix_tables_spelt_otherwise_is_the_same_folder(tracked, tmp_path, monkeypatch):
    """Each spelling of the folder loads the folder itself: its own list honoured, the same root (the folder run holds
    a loaded model to, and the one `tables verify` names)."""
    root = _copy(tracked, tmp_path)
    for spelt, value in _spellings(root).items():
        monkeypatch.setenv(tables.ENV_VAR, value)
        tables.clear_cache()
        loaded = tables.load()
        assert loaded.root == root.resolve() and loaded.location.origin == tables.ENV_VAR, spelt
        assert len(loaded._verified) == len(list((root / CLASS).glob("*.proofs.yaml"))), spelt


REFUSED_SPELT = {
    "a-class-folder": lambda root: str(root / CLASS),
    "trailing-newline": lambda root: f"{root}\n",
    "trailing-space": lambda root: f"{root} ",
    "undecodable-byte": lambda root: str(root) + os.fsdecode(b"\xff"),
}


@pytest.mark.parametrize("value", REFUSED_SPELT.values(), ids=REFUSED_SPELT.keys())
def test_neurobrix_tables_naming_no_tables_folder_is_refused_naming_it(tracked, tmp_path, monkeypatch, value):
    root = _copy(tracked, tmp_path)
    monkeypatch.setenv(tables.ENV_VAR, value(root))
    tables.clear_cache()
    with pytest.raises(TablesError) as caught:
        tables.load()
    assert "NEUROBRIX_TABLES=" in str(caught.value), caught.value
