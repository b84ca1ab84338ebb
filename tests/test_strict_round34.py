"""The thirty-fourth round, adversarial on the runtime's inputs: an index row whose dtypes hold a list or an object,
and the version the compiler-stack rule reads when a record installed beside the package lists another file than the
one imported. Nothing is launched."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import sys
import types
from pathlib import Path

import pytest
from conftest import REPO, retrack

from neurobrix import cli, doctor, kernel_code, stack, tables
from neurobrix.errors import CompilerStackError, TablesError

# -- an index row's dtypes holding a list or an object -----------------------------------------------------------


@pytest.mark.parametrize("dtype", [["fp16"], {"fp16": 1}], ids=["list", "object"])
def test_an_index_dtype_that_is_a_list_or_an_object_is_named(tmp_path, monkeypatch, capsys, dtype):
    """The index's rows are checked column by column before the schema (the fast pass `run` pays on every start):
    a row's dtypes as a set of tuples, so a dtype written as a list (``[["fp16"]]``) or an object was unhashable, and
    `run`'s load, `doctor`, `tables verify` and `tables show` ended in "TypeError: unhashable type" (a traceback).
    Now the fast pass steps aside and the schema names the field (exit 3, one line)."""
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / "interpreter", root / "interpreter")
    path = tables.index_path(root, "interpreter", "rms_norm")
    data = json.loads(path.read_text(encoding="utf-8"))
    data["entries"][0][0] = [dtype]
    path.write_text(json.dumps(data), encoding="utf-8")
    retrack(root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    with pytest.raises(TablesError, match=r"rms_norm.json: field 'entries\[0\]\[0\]'"):
        tables.load().index("interpreter", "rms_norm")
    tables.clear_cache()
    findings = {f.name: f for f in doctor.diagnose()}
    assert findings["kernels"].status == doctor.FAIL and "entries[0][0]" in findings["kernels"].value
    for argv in (["tables", "verify"], ["tables", "show", "interpreter", "rms_norm"]):
        tables.clear_cache()
        capsys.readouterr()
        try:
            code = cli.main(argv)
        except SystemExit as ended:  # (an error's exit; `tables verify` returns its own)
            code = ended.code
        assert code == 3, argv
        said = capsys.readouterr().err
        assert "entries[0][0]" in said and "Traceback" not in said, argv


# -- the Triton a process runs, when a record beside it lists another file ---------------------------------------


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _triton(site: Path, code: str, records: dict[str, bytes | None]) -> types.ModuleType:
    """A ``triton`` package in ``site`` whose ``__init__.py`` is ``code``, and a .dist-info for each version in
    ``records`` whose RECORD lists ``triton/__init__.py`` with the hash of the given bytes (None: no hash), as pip
    writes it."""
    package = site / "triton"
    package.mkdir(parents=True)
    init = package / "__init__.py"
    init.write_text(code, encoding="utf-8")
    for version, listed in records.items():
        info = site / f"triton-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: triton\nVersion: {version}\n", encoding="utf-8")
        digest = "" if listed is None else f"sha256={_b64(listed)}"
        (info / "RECORD").write_text(
            f"triton/__init__.py,{digest},{len(listed or b'')}\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n",
            encoding="utf-8",
        )
    module = types.ModuleType("triton")
    module.__file__ = str(init)
    module.__version__ = code.split("'")[1]
    return module


def test_a_triton_whose_record_lists_another_file_is_refused(tmp_path, monkeypatch):
    """The stack rule reads the version of the installed distribution whose RECORD lists the package (strict round
    21), taking the first such record. Another Triton's files copied over an install of the certified one (its
    record left as it was), or the record an interrupted install left beside another version, still listed
    ``triton/__init__.py``: the certified Triton's version was read for other code, and `run`'s stack check passed
    it. The record's hash of ``__init__.py`` (which states the version) must now be the imported file's: with none
    that is, the Triton is refused (exit 6, naming the record's version and the one the code states)."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    loaded = tables.load()
    certified = stack.certified_stack("interpreter", loaded)
    assert certified is not None
    release = f"__version__ = '{certified.triton}'\n".encode()
    # control: the certified Triton as its record lists it
    monkeypatch.setitem(sys.modules, "triton", _triton(tmp_path / "a", release.decode(), {certified.triton: release}))
    with kernel_code.patched_kernels("a stand-in triton in sys.modules: the ops' own import of triton differs"):
        stack.require_certified_stack("interpreter", loaded)
    # Triton 3.0.0's files over the certified one's install
    other = _triton(tmp_path / "b", "__version__ = '3.0.0'\n", {certified.triton: release})
    monkeypatch.setitem(sys.modules, "triton", other)
    with pytest.raises(CompilerStackError, match=f"triton {certified.triton} lists another triton/__init__.py") as no:
        stack.require_certified_stack("interpreter", loaded)
    assert no.value.exit_code == 6 and "stating version 3.0.0" in str(no.value)
    findings = {f.name: f for f in doctor.diagnose()}
    assert findings["triton"].status == doctor.FAIL


def test_of_two_records_the_one_listing_the_imported_file_names_the_version(tmp_path):
    """With two records listing the package (a stale one of the certified version beside the install of another),
    the version was the first record's in the folder's order; it is now the one whose hash is the imported file's,
    whatever the order. A record without a hash (an installer that writes none) is taken as before."""
    code = "__version__ = '3.0.0'\n"
    module = _triton(tmp_path / "a", code, {"3.9.0": b"__version__ = '3.9.0'\n", "3.0.0": code.encode()})
    assert stack.installed_version(module) == "3.0.0"
    assert stack.installed_version(_triton(tmp_path / "b", code, {"3.0.0": None})) == "3.0.0"
