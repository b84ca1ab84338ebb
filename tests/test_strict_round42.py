"""The forty-second round, adversarial on the runtime's inputs: every proof bound to the compiler that made it. A local
re-proof admits a class on a stack it was not certified with; it recorded that stack as torch's and Triton's version
texts, so a re-proof copied from another machine, or one left behind after Triton was reinstalled from another build
of the same version (a source build, another distribution's), admitted a compiler no check had run. It records Triton's
own hash of its build now (``triton_key``, what Triton puts in every compiled kernel's cache key), and another build
makes it stale: `run` refuses (exit 6) naming it, `doctor` reports it as blocking."""

from __future__ import annotations

import json
import re

import pytest
from kernel_tables import STACK, write_tables

from neurobrix import stack, tables
from neurobrix.cli import main
from neurobrix.errors import CompilerStackError

HERE = stack.running_stack()


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def certified_elsewhere(tmp_path, monkeypatch):
    """Interpreter-class tables certified on another Triton (a minor release on), so this machine's stack runs them
    only by a re-proof."""
    major, minor = STACK["triton"].split(".")[:2]
    root = write_tables(tmp_path / "tables", torch=STACK["torch"], triton=f"{major}.{int(minor) + 1}.0")
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    return root


def _reproof(home) -> dict:
    stack.write_reproof("interpreter", tables.load(), HERE, {"profile": "ci", "passed": True}, "cpu", "check")
    return json.loads((home / "reproofs" / "interpreter.json").read_text())


def _rewrite(home, record: dict) -> None:
    (home / "reproofs" / "interpreter.json").write_text(json.dumps(record))


def test_a_reproof_copied_from_another_build_of_the_same_triton_is_stale(certified_elsewhere, home):
    """The record of a machine whose Triton states the same version but is another build (its record's build hash is
    another): before, the version texts matched and it admitted this Triton."""
    record = _reproof(home)
    assert record["triton_build"] == stack.triton_build()  # this build's own re-proof admits it
    stack.require_certified_stack("interpreter")
    _rewrite(home, {**record, "triton_build": "0" * 64})
    with pytest.raises(CompilerStackError) as info:
        stack.require_certified_stack("interpreter")
    assert info.value.exit_code == 6
    assert re.search(
        rf"is stale: it checked another build of Triton {re.escape(HERE.triton)} than this one", str(info.value)
    )


def test_a_reproof_made_before_triton_was_reinstalled_from_another_build_is_stale(
    certified_elsewhere, home, monkeypatch
):
    """Triton replaced after the check by another build stating the same version: Triton's own key for its build
    (the hash of its compiler's files) is another, and so is the code it compiles."""
    _reproof(home)
    from triton.runtime import cache

    built = cache.triton_key()
    monkeypatch.setattr(cache, "triton_key", lambda: built.replace(built.split("-")[1], "f" * 64, 1))
    found = stack.verdict("interpreter")
    assert not found.ok and "another build of Triton" in (found.problem or "")


def test_a_reproof_recorded_without_a_build_admits_nothing(certified_elsewhere, home):
    record = _reproof(home)
    del record["triton_build"]
    _rewrite(home, record)
    assert not stack.verdict("interpreter").ok


@pytest.fixture
def tiny_model(home, tmp_path_factory):
    pytest.importorskip("transformers")
    from conformance import tiny
    from neurobrix import store

    store.import_model(str(tiny.make(tmp_path_factory.mktemp("ckpt") / "tiny-llama")), progress=False)
    return "tiny-llama"


def test_run_refuses_and_doctor_blocks_on_another_build(certified_elsewhere, tiny_model, home, capsys):
    record = _reproof(home)
    _rewrite(home, {**record, "triton_build": "0" * 64})
    with pytest.raises(SystemExit) as info:
        main(["run", "--model", tiny_model, "--prompt", "hello", "--max-tokens", "2"])
    err = capsys.readouterr().err
    assert info.value.code == 6 and "Traceback" not in err
    assert "another build of Triton" in err and "nothing was loaded" in err
    assert main(["doctor", "--json"]) == 1
    findings = {f["name"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert findings["stack"]["status"] == "FAIL" and "another build of Triton" in findings["stack"]["value"]
