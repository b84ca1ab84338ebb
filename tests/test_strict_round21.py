"""The twenty-first round, adversarial on the strict runtime, about what decides the numbers a certified setting
gives besides the setting: the Triton and torch a process runs as their installed distributions name them (a
Triton built from source states the release it grew from; a program may set ``__version__``); the CPU's
flush-to-zero mode, under which the Triton interpreter computes other numbers than its class was proven with; and
a stored model's files, parsed from other bytes than the ones checked against the manifest. Each test failed before
the fix it names (the input accepted) and passes now; the controls pass either way. One small kernel is launched."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
import torch
import triton
import yaml
from conftest import retrack
from store_fixtures import config_dict, make_checkpoint

import neurobrix.ops  # noqa: F401 (the kernels, imported with the real Triton before a test replaces it)
from neurobrix import doctor, kernel_code, stack, store, tables
from neurobrix.cli import main
from neurobrix.errors import CompilerStackError

# -- the Triton (and torch) a process runs, as installed -------------------------------------------------------------


def _fake_triton(site: Path, version: str, dist: str | None) -> types.ModuleType:
    """A ``triton`` package in ``site`` stating ``__version__ = version``, installed there as the distribution
    ``dist`` (its .dist-info with a RECORD listing the package, as pip writes it), or by none."""
    package = site / "triton"
    package.mkdir(parents=True)
    init = package / "__init__.py"
    init.write_text(f"__version__ = {version!r}\n")
    if dist is not None:
        name, _, installed = dist.partition("==")
        info = site / f"{name.replace('-', '_')}-{installed}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {installed}\n")
        (info / "RECORD").write_text(f"triton/__init__.py,,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")
    module = types.ModuleType("triton")
    module.__file__ = str(init)
    module.__version__ = version
    return module


@pytest.mark.parametrize(
    "dist",
    ["triton==3.9.0+git1a2b3c4", "pytorch-triton==3.9.0+git1a2b3c4"],
    ids=["triton-built-from-source", "pytorch-triton"],
)
def test_a_triton_built_from_source_is_not_the_release_it_states(tmp_path, monkeypatch, dist):
    """Triton's source tree states ``__version__ = '3.9.0'`` at every commit of its 3.9 line (its setup.py adds
    ``+git<commit>`` to the distribution's version only), so a Triton built from source, or PyTorch's pinned build
    (the distribution pytorch-triton), passed the stack rule as the certified Triton 3.9.0 (exit 0): other code
    compiled from the certified settings. The version is now the installed distribution's (exit 6)."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    loaded = tables.load()
    certified = stack.certified_stack("interpreter", loaded)
    monkeypatch.setitem(
        sys.modules, "triton", _fake_triton(tmp_path / "a", certified.triton, f"triton=={certified.triton}")
    )
    with kernel_code.patched_kernels("a stand-in triton in sys.modules: the ops' own import of triton differs"):
        stack.require_certified_stack("interpreter", loaded)  # control: the release, installed
    monkeypatch.setitem(sys.modules, "triton", _fake_triton(tmp_path / "b", certified.triton, dist))
    with pytest.raises(CompilerStackError, match="this machine runs torch .* and Triton 3.9.0\\+git1a2b3c4") as refused:
        stack.require_certified_stack("interpreter", loaded)
    assert refused.value.exit_code == 6
    findings = {f.name: f for f in doctor.diagnose()}
    assert findings["stack"].status == doctor.FAIL and "Triton 3.9.0+git1a2b3c4" in findings["stack"].value
    assert findings["triton"].value == "3.9.0+git1a2b3c4"  # what it runs, as the stack rule reads it


@pytest.mark.parametrize("where", ["a-source-tree", "no-file"])
def test_a_triton_no_distribution_installed_is_refused(tmp_path, monkeypatch, where):
    """A Triton imported from a source tree on the path (or an editable install, whose package lies outside the
    folder of its record), or a module a program put in ``sys.modules``, was taken at the version it states: now no
    version stands for it (exit 6, naming where it was imported from; doctor FAIL)."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    loaded = tables.load()
    module = _fake_triton(tmp_path, stack.certified_stack("interpreter", loaded).triton, None)
    if where == "no-file":
        del module.__file__
    monkeypatch.setitem(sys.modules, "triton", module)
    with pytest.raises(CompilerStackError, match="is not one an installed distribution holds") as refused:
        stack.require_certified_stack("interpreter", loaded)
    assert refused.value.exit_code == 6
    assert (str(tmp_path / "triton" / "__init__.py") if where == "a-source-tree" else "(no file,") in str(refused.value)
    findings = {f.name: f for f in doctor.diagnose()}
    assert findings["triton"].status == doctor.FAIL and findings["triton"].value == str(refused.value)


def test_a_version_a_program_states_is_not_the_installed_one(tmp_path, monkeypatch):
    """A program setting ``triton.__version__`` and ``torch.__version__`` to a GPU class's stack made this machine's
    torch and Triton that class's (the verdict ok, on another Triton): the versions are the installed ones now."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    loaded = tables.load()
    certified = stack.certified_stack("nvidia-h200", loaded)
    here = stack.running_stack()
    if stack.compatible(certified, here):
        pytest.skip("this machine runs the nvidia-h200 stack itself")
    monkeypatch.setattr(triton, "__version__", certified.triton)
    monkeypatch.setattr(torch, "__version__", certified.torch)
    found = stack.verdict("nvidia-h200", loaded)
    assert found.running == here and not found.ok


# -- the CPU's flush-to-zero mode on the interpreter class ---------------------------------------------------------


def test_the_interpreter_class_under_flush_to_zero_is_refused(tmp_path, monkeypatch):
    """The Triton interpreter computes each kernel with NumPy on the CPU's floats: with flush-to-zero on
    (``torch.set_flush_denormal(True)``, or a -ffast-math library loaded into the process) the certified rms_norm
    setting gives 0 for rows float64 normalizes to 3.2e-37, and run, warmup and a plan's launch ran it (exit 0). Now
    the class is refused while the mode is on (exit 6, doctor FAIL); off (control) it runs."""
    from neurobrix import plan

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    loaded = tables.load()
    launched = plan.resolve([("rms_norm", "fp32", (1, 64))], loaded, "interpreter").ops()  # control: mode off
    x, w = torch.full((1, 64), 1e-39), torch.ones(64)
    reference = (x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + 1e-5)).float()
    assert torch.equal(launched.rms_norm(x, w, 1e-5), reference)
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU has no flush-to-zero mode")
    try:
        assert torch.equal(launched.rms_norm(x, w, 1e-5), torch.zeros_like(x))  # the numbers the mode gives
        with pytest.raises(CompilerStackError, match="flush-to-zero and denormals-are-zero mode on") as refused:
            stack.require_certified_stack("interpreter", loaded)
        assert refused.value.exit_code == 6
        findings = {f.name: f for f in doctor.diagnose()}
        assert findings["compiler"].status == doctor.FAIL
    finally:
        torch.set_flush_denormal(False)
    stack.require_certified_stack("interpreter", loaded)


# -- a stored model's files changed between their check and their reading -------------------------------------------


def _stored_tiny(tmp_path, monkeypatch, name="tiny", **config):
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "src" / name, config=config_dict(**config), use_transformers=False)
    assert main(["import", str(folder)]) == 0
    return tmp_path / "home" / "models" / name


def _edit_config(folder: Path) -> None:  # at its size: 10000.0 made 20000.0, other angles, other text
    path = folder / "config.json"
    path.write_text(path.read_text(encoding="utf-8").replace('"rope_theta": 1', '"rope_theta": 2', 1), encoding="utf-8")


def _import_again(folder: Path) -> None:  # another checkpoint under the name, as `neurobrix import` replaces it
    source = make_checkpoint(
        folder.parent.parent.parent / "other" / folder.name, config=config_dict(rope_theta=20000.0)
    )
    store.import_model(str(source), progress=False)


def _add_template(folder: Path) -> None:  # a file the tokenizer reads by name, dropped in
    (folder / "chat_template.jinja").write_text("{{ messages[0]['content'] }} and more", encoding="utf-8")


@pytest.mark.parametrize("change", [_edit_config, _import_again, _add_template], ids=["edited", "reimported", "added"])
def test_a_stored_file_changed_after_its_check_is_refused(tmp_path, monkeypatch, capsys, change):
    """``run`` checks the stored model against its manifest (sizes, sha256s, no file unlisted), then reads each file
    again by name: config.json twice, the tokenizer's files, the weights. A file edited at its size, the model
    imported again under its name (another command, meanwhile), or a chat template added between the check and the
    reading was read unchecked (exit 0: one run's config from one import, its weights from another). Now the files
    and folders are held to what they were at the check once all are read (exit 7); unchanged (control) it runs."""
    folder = _stored_tiny(tmp_path, monkeypatch)
    argv = ["run", "--model", "tiny", "--prompt", "hello", "--no-chat", "--max-tokens", "1", "--no-stream"]
    checked = store.resolve

    def resolve_then_change(name):
        model = checked(name)
        change(folder)
        return model

    monkeypatch.setattr(store, "resolve", resolve_then_change)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 7, err
    assert len(err.strip().splitlines()) == 1 and "stored model tiny (" in err and "changed while this command" in err


# -- a proof whose candidates say otherwise than its entry ----------------------------------------------------------


def _first_proof(change):
    def edit(root: Path) -> None:
        path = root / "interpreter" / "demo.proofs.yaml"
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        change(data["entries"][0]["proof"])  # its setting BLOCK_N 64, 4 warps; 2 candidates, 1 rejected as slower
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")

    return edit


@pytest.mark.parametrize(
    ("change", "where", "said"),
    [
        (
            lambda p: p.update(rejected=["wrong_result: BLOCK_N=64 num_warps=4: failed its proof: 3 of 64 outside"]),
            "rejected",
            "rejects the entry's own setting",
        ),
        (lambda p: p.update(candidates_tried=7), "candidates_tried", "counts 7 candidates where"),
        (
            lambda p: p.update(candidates_tried=3, rejected=p["rejected"] * 2),
            "rejected",
            "rejects the same candidate twice",
        ),
    ],
    ids=["its-own-setting-rejected", "more-tried-than-listed", "one-rejected-twice"],
)
def test_a_proof_rejecting_its_own_setting_or_miscounting_is_refused(fixture_tables, capsys, change, where, said):
    """An audit record whose proof rejects the very setting its entry (and the index run loads) holds, as a wrong
    result or as slower, or counts other candidates than it lists, or one twice, passed ``tables verify`` (exit 0):
    every shipped proof (2,324) lists each candidate but the one kept exactly once. Now refused naming the field
    (exit 3); as written (control) it verifies."""
    assert main(["tables", "verify"]) == 0
    _first_proof(change)(fixture_tables)
    retrack(fixture_tables)
    tables.clear_cache()
    capsys.readouterr()
    assert main(["tables", "verify"]) == 3
    err = capsys.readouterr().err
    assert f"demo.proofs.yaml: field 'entries[0].proof.{where}': {said}" in err
