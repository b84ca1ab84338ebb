"""The nineteenth round, adversarial on the strict runtime: a torch pre-release or development build taken for a
release of its major.minor; bf16 settings of the interpreter class launched through the Python API (a plan, a warmup
plan); a stored model's safetensors header rewritten at its size (two tensors' bytes swapped, a dtype relabelled);
proofs and re-proofs made while Triton was told to compile otherwise (another ptxas, a kernel override, debug mode)
than the run that trusts them; tables a program built or replaced itself, or changed in place, launched through a
plan; and a re-proof of other kernels than this neurobrix's. Each test failed before the fix it names (an input
accepted) and passes now; the controls pass either way. No kernel is launched."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from types import SimpleNamespace

import pytest
from kernel_tables import write_tables
from packaging.version import Version
from store_fixtures import config_dict, make_checkpoint

from neurobrix import stack, store, tables
from neurobrix.cli import main
from neurobrix.errors import CompilerStackError, UsageError
from neurobrix.plan import resolve

# -- a torch pre-release or development build --------------------------------------------------------------------


@pytest.mark.parametrize(
    "running",
    [
        "2.11.0a0+git1a2b3c4",  # a source build of main before 2.11 was branched (NGC's containers ship such torches)
        "2.11.0.dev20260101+cu130",  # a nightly
        "2.11.0rc1+cu130",  # a release candidate
        "2.11.0b1",
    ],
)
def test_a_torch_pre_release_is_no_release_of_its_major_minor(running):
    """The rule is "torch the same major.minor" because torch's patch releases keep its Triton-facing side; a
    pre-release or development build of 2.11 (PEP 440 sorts it before 2.11.0) is none of them, yet passed as 2.11:
    its first two numbers were all that was read. Now such a torch is the certified stack only as the very version
    certified. (What a pre-release is comes from packaging, PyPA's reading of PEP 440.)"""
    certified = stack.Stack("2.11.0+cu130", "3.6.0")
    assert Version(running).is_prerelease and Version(running).release[:2] == (2, 11)
    assert not stack.compatible(certified, stack.Stack(running, "3.6.0"))
    # a class certified on such a build: that build only, not another commit or nightly, nor the release after it
    assert stack.compatible(stack.Stack(running, "3.6.0"), stack.Stack(running, "3.6.0"))
    for other in ("2.11.0a0+git9f8e7d6", "2.11.0.dev20260102+cu130", "2.11.0", "2.11.1+cu130"):
        if other != running:
            assert not stack.compatible(stack.Stack(running, "3.6.0"), stack.Stack(other, "3.6.0"))
    # controls: a patch release, another build tag, a post release are still the certified torch's
    for release in ("2.11.1", "2.11.0+cu126", "2.11.0.post1"):
        assert not Version(release).is_prerelease and stack.compatible(certified, stack.Stack(release, "3.6.0"))


def test_run_refuses_a_torch_development_build_naming_the_rule(monkeypatch):
    """Through the runtime's check: the shipped interpreter class (torch 2.13.0+cpu) on a 2.13 development build is
    refused (exit 6), saying which torch the class takes; its own release passes."""
    here = stack.running_stack()
    assert Version(here.torch).release[:2] == (2, 13)  # the stack the tests are pinned to (README)
    monkeypatch.setattr(stack, "running_stack", lambda: stack.Stack("2.13.0a0+gitdeadbee", here.triton))
    with pytest.raises(CompilerStackError, match=r"torch a 2\.13\.x release \(not a pre-release") as refused:
        stack.require_certified_stack("interpreter", tables.load())
    assert refused.value.exit_code == 6
    monkeypatch.setattr(stack, "running_stack", lambda: stack.Stack("2.13.1", here.triton))
    stack.require_certified_stack("interpreter", tables.load())


# -- bf16 on the interpreter class through the Python API ---------------------------------------------------------


@pytest.fixture
def bf16_interpreter(tmp_path, monkeypatch):
    """Interpreter tables holding bf16 entries beside fp32 and fp16 (``tables verify`` takes them; certify no longer
    writes them), selected with NEUROBRIX_TABLES."""
    root = write_tables(tmp_path / "t", dtypes=("fp32", "fp16", "bf16"))
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    return tables.load()


def test_a_plan_of_bf16_calls_on_the_interpreter_is_refused_at_launch(bf16_interpreter):
    """``run --dtype bf16`` and ``warmup --dtype bf16`` refuse the interpreter class whatever its tables hold (its bf16
    computes on bit patterns), but a program resolving bf16 calls itself got ops that launched them:
    ``resolve([...bf16...], tables, "interpreter").ops()``. Now refused (exit 2) before anything is launched; the same
    call in fp16 still launches."""
    fp16 = resolve([("rms_norm", "fp16", (1, 16))], bf16_interpreter, "interpreter")
    assert fp16.ops().name == "triton"  # control
    plan = resolve([("rms_norm", "bf16", (1, 16)), ("silu_mul", "bf16", (1, 32))], bf16_interpreter, "interpreter")
    with pytest.raises(UsageError, match=r"this plan launches bf16 calls on the interpreter class \(") as refused:
        plan.ops()
    assert refused.value.exit_code == 2 and "nothing was launched" in str(refused.value)


def test_a_warmup_plan_in_bf16_on_the_interpreter_is_refused_before_it_builds(bf16_interpreter, tmp_path):
    """``warmup.launch`` of a plan made by ``plan_warmup(..., "interpreter", "bf16")`` compiled and ran every pass in
    the interpreter's bf16; now refused (exit 2) before the scratch model is built."""
    from neurobrix import warmup
    from neurobrix.checkpoint import read_config

    cfg = read_config(make_checkpoint(tmp_path / "tiny", config=config_dict(), use_transformers=False))
    plan = warmup.plan_warmup(cfg, bf16_interpreter, "interpreter", "bf16", max_prompt=1, max_new=1)
    assert plan.passes > 0 and {call[1] for call in plan.settings} == {"bf16"}
    with pytest.raises(UsageError, match="this warmup plan launches bf16 calls on the interpreter class"):
        warmup.launch(cfg, plan, "bf16", "cpu")


# -- a stored model's safetensors header rewritten at its size ----------------------------------------------------


def _rewrite_header(path: Path, change) -> None:
    """Change the header of a safetensors file in place, keeping its length (safetensors pads it with spaces) and
    the tensors' bytes: the file keeps its size."""
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    meta = json.loads(data[8 : 8 + length])
    change(meta)
    text = json.dumps(meta, separators=(",", ":")).encode()
    assert len(text) <= length
    path.write_bytes(data[:8] + text + b" " * (length - len(text)) + data[8 + length :])
    assert path.stat().st_size == len(data)


def _swap_offsets(meta):
    q, o = "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.o_proj.weight"
    assert meta[q]["shape"] == meta[o]["shape"]
    meta[q]["data_offsets"], meta[o]["data_offsets"] = meta[o]["data_offsets"], meta[q]["data_offsets"]


def _relabel(meta):
    name = "model.layers.0.mlp.down_proj.weight"
    assert meta[name]["dtype"] == "BF16"
    meta[name]["dtype"] = "F16"  # two bytes an element either way: other numbers from the same bytes


def _stored(tmp_path, monkeypatch, dtype):
    """A tiny model imported from a checkpoint whose tensors are stored in ``dtype``."""
    import torch
    from safetensors.torch import load_file, save_file

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny", config=config_dict(), use_transformers=False)
    weights = load_file(str(folder / "model.safetensors"))
    converted = {name: tensor.to(getattr(torch, dtype)) for name, tensor in weights.items()}
    save_file(converted, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return store.import_model(str(folder), progress=False)


@pytest.mark.parametrize(
    ("dtype", "change"),
    [("float32", _swap_offsets), ("bfloat16", _relabel)],
    ids=["two-tensors-swapped", "bf16-read-as-fp16"],
)
def test_a_weight_files_header_rewritten_at_its_size_is_damage(tmp_path, monkeypatch, capsys, dtype, change):
    """The manifest records the weights' sizes but no hash (a run would hash gigabytes); a header rewritten at its
    length keeps the size, still reads and still matches config.json, so every run loaded other weights than the
    import's: layer 0's q and o projections swapped, or a BF16 tensor read as F16 (exit 0). Now the import records
    the sha256 of each weight file's header (a few KB, hashed on every run) and the model is damaged (exit 7)."""
    model = _stored(tmp_path, monkeypatch, dtype)
    store.resolve("tiny")  # control: as imported
    _rewrite_header(model.path / "model.safetensors", change)
    with pytest.raises(store.DamagedModelError, match="model.safetensors's safetensors header was changed") as info:
        store.resolve("tiny")
    assert info.value.exit_code == 7
    assert main(["list", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)["models"]
    assert "header was changed after the import" in listed["damaged"]


@pytest.mark.parametrize(
    ("headers", "said"),
    [
        (5, "headers 5 is not a mapping"),
        ({"config.json": "0" * 64}, "headers names 'config.json', which is none of the weights"),
        ({"model.safetensors": "abc"}, "headers gives model.safetensors 'abc', not a sha256"),
    ],
)
def test_a_manifests_header_hashes_of_another_form_are_damage(tmp_path, monkeypatch, headers, said):
    """The new field is held to the form the import writes, as the others are (a manifest naming a hash that is none
    was taken as no hash); a manifest written before it (no field) is still read."""

    model = _stored(tmp_path, monkeypatch, "float32")
    path = model.path / store.MANIFEST
    manifest = json.loads(path.read_text())
    assert set(manifest["headers"]) == {"model.safetensors"}
    path.write_text(json.dumps({k: v for k, v in manifest.items() if k != "headers"}))
    store.resolve("tiny")  # control: a manifest from before the field
    path.write_text(json.dumps({**manifest, "headers": headers}))
    with pytest.raises(store.DamagedModelError, match=said):
        store.resolve("tiny")


# -- proofs and re-proofs made under a compiler override ----------------------------------------------------------


def _report(class_id):
    from conformance import check, reproof

    entry = check.EntryResult("silu_mul", "fp16", "fp16 M=1.., I=1..", {"BLOCK_M": 4}, examples=25)
    return check.Report(
        class_id, "tables", "ci", [entry], examples_per_entry=reproof.min_examples(), fingerprint="f" * 64
    )


def test_no_reproof_is_recorded_from_a_check_under_a_compiler_override(fixture_tables, monkeypatch):
    """`conformance check` of a GPU class on another stack, run with TRITON_PTXAS_PATH (or a kernel override, or
    TRITON_DEBUG) set, recorded a re-proof: it proved the code that ptxas compiled, and run, which refuses the variable,
    then accepted the re-proof for the code compiled without it. Now no re-proof is recorded, and the check says why;
    without the variable (control) it is."""
    from conformance import reproof

    written: list[str] = []
    monkeypatch.setattr(stack, "certified_stack", lambda class_id, loaded=None: stack.Stack("0.1.0", "0.1.0"))
    monkeypatch.setattr(stack, "write_reproof", lambda *a: written.append(a[0]) or Path("reproof.json"))
    args = SimpleNamespace(kernel=None, dtype=None, variant=None, where=None, argv=[])
    said: list[str] = []
    monkeypatch.setenv("TRITON_PTXAS_PATH", "/opt/other/ptxas")
    assert reproof.record(_report("fake-gpu"), args, said.append) is None and written == []
    assert len(said) == 1 and "no re-proof recorded" in said[0] and "TRITON_PTXAS_PATH=/opt/other/ptxas" in said[0]
    monkeypatch.delenv("TRITON_PTXAS_PATH")
    assert reproof.record(_report("fake-gpu"), args, said.append) == Path("reproof.json") and written == ["fake-gpu"]


def test_certify_refuses_a_compiler_override(fixture_tables, monkeypatch):
    """certify on a GPU class under TRITON_PTXAS_PATH wrote proofs of that ptxas's code, recorded as made with the
    torch and Triton versions only, which run then launched compiled without it. Now refused before any work (exit
    2, naming the variable); without it (control) certify goes on (stopped here where it would start timing)."""
    from conformance import certify, check

    class Reached(Exception):
        pass

    def reached(klass):
        raise Reached

    monkeypatch.setattr(check, "require_device", lambda klass: None)  # (this machine has no fake-gpu)
    monkeypatch.setattr(certify, "times_with_pdl", reached)
    run = lambda: certify.certify("fake-gpu", fixture_tables, ["rms_norm"], ["fp16"], False, 1, "ci", None, "test")
    monkeypatch.setenv("TRITON_PTXAS_PATH", "/opt/other/ptxas")
    with pytest.raises(UsageError, match="TRITON_PTXAS_PATH=/opt/other/ptxas") as refused:
        run()
    assert refused.value.exit_code == 2 and "nothing was certified" in str(refused.value)
    monkeypatch.delenv("TRITON_PTXAS_PATH")
    with pytest.raises(Reached):
        run()


# -- tables a program builds or replaces itself -------------------------------------------------------------------


def _forged_rms_norm(loaded):
    """The loaded tables with rms_norm's interpreter setting replaced by one no table holds (BLOCK_M 2, 1 warp)."""
    import dataclasses

    from neurobrix.schema import Setting, SettingsIndex

    index = loaded.index("interpreter", "rms_norm")
    forged = [Setting(e.domain, {**e.config, "BLOCK_M": 2, "num_warps": 1}) for e in index.entries]
    other = SettingsIndex.of(index.kernel, index.class_id, index.key, index.rules, index.stack, forged, index.path)
    return dataclasses.replace(loaded, _indexes={("interpreter", "rms_norm"): other})


@pytest.mark.parametrize("how", ["plan", "warmup"])
def test_settings_from_tables_a_program_built_are_refused_at_launch(tmp_path, how):
    """Round 18 made a plan launch only what ``resolve`` finds, but found it again in the plan's own tables: a
    ``Tables`` a program made itself (``dataclasses.replace(tables.load(), ...)``, ``Tables(...)``) holds whatever
    settings, class rule and stack it was given, and every check of ``Plan.ops()`` and ``warmup.launch`` read them
    there; a setting no table file holds was launched. Now launching takes only what ``tables.load`` gives for its
    folder (exit 2); the loaded tables themselves (control) launch."""
    from neurobrix import warmup
    from neurobrix.checkpoint import read_config

    loaded = tables.load()
    forged = _forged_rms_norm(loaded)
    call = ("rms_norm", "fp32", (1, 16))
    assert resolve([call], forged, "interpreter").settings[call]["BLOCK_M"] == 2  # (what would have been launched)
    if how == "plan":
        assert resolve([call], loaded, "interpreter").ops().name == "triton"  # control
        launch = lambda: resolve([call], forged, "interpreter").ops()
    else:
        cfg = read_config(make_checkpoint(tmp_path / "tiny", config=config_dict(), use_transformers=False))
        planned = warmup.plan_warmup(cfg, forged, "interpreter", "fp32", max_prompt=1, max_new=1)
        launch = lambda: warmup.launch(cfg, planned, "fp32", "cpu")
    with pytest.raises(UsageError, match="come from tables that neurobrix.tables.load did not give") as refused:
        launch()
    assert refused.value.exit_code == 2 and "nothing was launched" in str(refused.value)


def test_the_loaded_tables_cannot_be_changed_in_place():
    """What ``tables.load()`` gives is cached for the process: a program assigning to its classes or kernels
    (``loaded.classes["interpreter"] = other``) changed what every later load, plan and run of the process read.
    Its mappings are read-only now, and the object frozen."""
    import dataclasses

    loaded = tables.load()
    klass = loaded.classes["interpreter"]
    with pytest.raises(TypeError):
        loaded.classes["interpreter"] = dataclasses.replace(klass, description="other")
    with pytest.raises(TypeError):
        loaded.kernel_names["interpreter"] = ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.classes = {}
    assert tables.load() is loaded and tables.load().classes["interpreter"] is klass


# -- a re-proof of other kernels ----------------------------------------------------------------------------------


@pytest.mark.parametrize("made", ["other kernels", "no kernels recorded"])
def test_a_reproof_of_other_kernels_is_stale(tmp_path, monkeypatch, made):
    """A re-proof names the tables and the stack it checked, not the kernels: after ``pip install -U neurobrix`` (or
    a checkout's change to neurobrix/ops) with the class's tables unchanged, the re-proof of the old kernels admitted
    the new ones, whose code from each setting no check had run on that stack. It now records a digest of the
    kernels' sources and is stale without the same one (a record from before the field included); as written it
    admits its stack (control)."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    running = stack.Stack("2.99.0", "9.9.0")
    stack.write_reproof("interpreter", tables.load(), running, {"passed": True}, "test", "test")
    assert stack.reproof_problem("interpreter", tables.load(), running) is None
    path = stack.reproof_path("interpreter")
    record = json.loads(path.read_text())
    if made == "other kernels":
        record["kernels"], record["neurobrix"] = "0" * 64, "0.0.9"
    else:
        record.pop("kernels", None)
    path.write_text(json.dumps(record))
    problem = stack.reproof_problem("interpreter", tables.load(), running)
    assert problem is not None and "is stale: it checked the kernels of" in problem
    monkeypatch.setattr(stack, "running_stack", lambda: running)
    with pytest.raises(CompilerStackError, match="this neurobrix's kernels") as refused:
        stack.require_certified_stack("interpreter", tables.load())
    assert refused.value.exit_code == 6
