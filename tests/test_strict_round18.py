"""The eighteenth round, adversarial on the strict runtime: plans a program builds or changes itself (a Plan or a
WarmupPlan holding another setting than the table's, another launch feature, a setting equal only as Python compares
4.0 with 4); two GPU classes one device can match (the same facts, device_name patterns that meet); proofs equal to
their index's settings only as Python compares true with 1 and 4.0 with 4; a stored model's text files edited in place
at their size; a Triton cache folder that is a file, lies under one, or cannot be written; doctor saying "ready" where
every run's preflight refuses a kernel table (keyed otherwise than its kernel, a setting its kernel cannot run); and
kernels launched on another GPU than the one the class was found from (torch's current device, a launch's device);
a NEUROBRIX_* variable the project does not read (a misspelling, ignored while what it meant to replace was read).
Each test failed before the fix it names (an input accepted, or refused late, by the wrong error or exit code) and
passes now; the controls pass either way. No kernel is launched but in the two controls that say so (the Triton
interpreter, a one-layer model of a few tokens)."""

from __future__ import annotations

import dataclasses
import fnmatch
import itertools
import json
import re

import pytest
import torch
from conftest import follow, rebind, retrack
from kernel_tables import write_gpu_class, write_tables
from store_fixtures import config_dict, make_checkpoint
from test_strict_round16 import _one_line

from neurobrix import gpu, stack, tables
from neurobrix.cli import main
from neurobrix.errors import MissingEntryError, UncertifiedGPUError, UsageError
from neurobrix.plan import Plan, resolve
from neurobrix.schema import names_meet


def _stored_tiny(tmp_path, monkeypatch, name="tiny"):
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / name, config=config_dict(), use_transformers=False)
    assert main(["import", str(folder)]) == 0
    return tmp_path / "home" / "models" / name


# -- a plan a program builds or changes itself ---------------------------------------------------------------------

_CALL = ("rms_norm", "fp32", (1, 4096))


@pytest.mark.parametrize(
    ("change", "error", "said"),
    [
        # each launched as it was: a setting nobody proved, a PDL launch the interpreter fails on, a float constexpr
        (lambda p: Plan(p.class_id, {_CALL: {"BLOCK_M": 2, "num_warps": 1}}), UsageError, "not the setting"),
        (lambda p: dataclasses.replace(p, pdl=True), UsageError, "launches with pdl=True, where class interpreter's"),
        (
            lambda p: Plan(p.class_id, {_CALL: {**p.settings[_CALL], "num_warps": 4.0}}),
            UsageError,
            "'num_warps': 4.0} for rms_norm",
        ),
        (lambda p: Plan(p.class_id, {**p.settings, ("rms_norm", "fp32", (1, 4095)): {}}), UsageError, "not the"),
        (lambda p: Plan(p.class_id, {("rms_norm", "fp32", (0, 4096)): {}}), MissingEntryError, "M=0, N=4096"),
        (lambda p: Plan(p.class_id, 5), UsageError, "this plan's settings must be a mapping"),
    ],
)
def test_a_plan_launches_only_the_settings_resolve_finds(change, error, said):
    """``neurobrix.plan.Plan`` is a plain dataclass: ``Plan("interpreter", {call: any setting})`` or
    ``dataclasses.replace(plan, pdl=True)`` gave its ops (``Plan.ops()``: the class and stack were checked, not the
    settings), which launched a setting no table holds. Now ops() finds each call's certified setting again and
    refuses (exit 2, naming the table) any other, or another launch feature than the class's."""
    plan = resolve([_CALL], tables.load(), "interpreter")
    assert plan.ops().name == "triton"  # control: what resolve found
    with pytest.raises(error, match=re.escape(said)) as refused:
        change(plan).ops()
    assert refused.value.exit_code == (4 if error is MissingEntryError else 2)
    if error is UsageError and "not the setting" in said:
        assert "interpreter/rms_norm.json certifies for that call" in str(refused.value)


def test_a_plan_may_turn_dependent_launch_off_or_on_where_the_gpu_has_it():
    """PDL is a launch feature, not a setting: every proof ran without it (conformance checks launch plainly), so a
    plan of nvidia-h200's settings with pdl off is what was proven (benchmarks.e2e's triton-serial, the GPU test that
    PDL changes no result, both ``dataclasses.replace(plan, pdl=False)``); on, it needs a class of compute capability
    9.0 or later (CONTRIBUTING measures whether it pays before a class lists it). A class of 8.0 with pdl on, or a pdl
    that is no bool, is refused naming the class's file; the settings themselves are still held to the table's."""
    from neurobrix.plan import certified_settings

    loaded = tables.load()
    first = loaded.index("nvidia-h200", "rms_norm").entries[0].domain
    call = ("rms_norm", first.dtypes[0], tuple(lo for _, lo, _ in first.ranges))
    plan = resolve([call], loaded, "nvidia-h200")
    for pdl in (False, True):
        assert certified_settings(plan.settings, pdl, loaded, "nvidia-h200", "this plan") == plan.settings
    for pdl in (1, None, "yes"):
        with pytest.raises(
            UsageError, match=re.escape(f"this plan launches with pdl={pdl!r}, where class nvidia-h200")
        ):
            certified_settings(plan.settings, pdl, loaded, "nvidia-h200", "this plan")
    h200 = loaded.classes["nvidia-h200"]
    ampere = dataclasses.replace(h200, match=dataclasses.replace(h200.match, compute_capability=(8, 0)), launch=())
    older = dataclasses.replace(loaded, classes={**loaded.classes, "nvidia-h200": ampere})
    assert certified_settings(plan.settings, False, older, "nvidia-h200", "this plan") == plan.settings
    with pytest.raises(UsageError, match="compute capability 9.0 or later"):
        certified_settings(plan.settings, True, older, "nvidia-h200", "this plan")
    with pytest.raises(UsageError, match="not the setting"):
        certified_settings({call: {**plan.settings[call], "num_warps": 3}}, False, loaded, "nvidia-h200", "this plan")


def test_a_warmup_plan_changed_after_planning_is_refused_before_anything_runs(tmp_path, monkeypatch):
    """A WarmupPlan's settings (a mutable dataclass) changed after ``plan_warmup``: ``warmup.launch`` launched the
    changed setting on every pass. Now launch refuses it (exit 2) before building the scratch model; the plan as
    planned still launches (a control: the interpreter, a one-layer model)."""
    from neurobrix import store, warmup

    _stored_tiny(tmp_path, monkeypatch)
    cfg = store.resolve("tiny").config()
    plan = warmup.plan_warmup(cfg, tables.load(), "interpreter", "fp32", max_prompt=1, max_new=1)
    call = next(c for c in sorted(plan.settings) if c[0] == "rms_norm")
    certified = plan.settings[call]
    plan.settings[call] = {**certified, "BLOCK_M": 2 * certified["BLOCK_M"]}
    with pytest.raises(UsageError, match=r"this warmup plan holds .* not the setting .*rms_norm.json certifies"):
        warmup.launch(cfg, plan, "fp32", "cpu")
    plan.settings[call] = certified
    plan.pdl = True
    with pytest.raises(UsageError, match="this warmup plan launches with pdl=True"):
        warmup.launch(cfg, plan, "fp32", "cpu")
    plan.pdl = False
    assert warmup.launch(cfg, plan, "fp32", "cpu") == plan.passes


# -- two classes one device can match --------------------------------------------------------------------------------


def _second_class(root, class_id, **match):
    text = (
        (root / "fake-gpu" / "class.yaml").read_text(encoding="utf-8").replace("class: fake-gpu", f"class: {class_id}")
    )
    for field, value in match.items():
        text = re.sub(rf"(?m)^  {field}: .*$", f"  {field}: {value}", text)
    (root / class_id).mkdir()
    (root / class_id / "class.yaml").write_text(text, encoding="utf-8")
    retrack(root)


@pytest.mark.parametrize(
    ("match", "meets"),
    [
        ({}, True),  # the same class twice under another id
        ({"device_name": '"NVIDIA Fake Hopper"'}, True),  # a name fake-gpu's NVIDIA Fake* matches too
        ({"device_name": '"*Hopper"'}, True),
        ({"device_name": '"NVIDIA F[a-z]ke?*"'}, True),
        ({"device_name": '"NVIDIA Real*"'}, False),  # controls: no device matches both
        ({"device_name": '"NVIDIA Fak"'}, False),
        ({"device_name": '"NVIDIA [!F]ake*"'}, False),
        ({"multiprocessor_count": 114}, False),
        ({"compute_capability": "[9, 1]"}, False),
    ],
)
def test_two_classes_one_device_can_match_are_refused_with_the_tables(fixture_tables, capsys, match, meets):
    """A second class.yaml whose match rules a device of the first also satisfies (the same facts, a device_name
    pattern meeting the other's): `tables verify` and `tables list` passed (exit 0), and only a run on such a GPU
    found out, refused as an uncertified device (exit 5). Now the tables are refused (exit 3) naming both class.yaml
    files and the field; classes no device can match both still load."""
    _second_class(fixture_tables, "twin", **match)
    if not meets:
        assert main(["tables", "verify"]) == 0
        return
    capsys.readouterr()
    assert main(["tables", "verify"]) == 3
    err = capsys.readouterr().err
    assert "twin/class.yaml: field 'match': a device can match both" in err and "fake-gpu/class.yaml" in err
    assert "twin/class.yaml: field 'match'" in _one_line(capsys, ["tables", "list"], 3)


def test_names_meet_exactly_where_one_name_matches_both_patterns():
    """The check above against fnmatch itself, over every pair of short patterns and every short name."""
    parts = ["a", "b", "*", "?", "[a]", "[!a]", "[ab]", "[a-b]"]
    patterns = ["".join(p) for n in range(4) for p in itertools.product(parts, repeat=n)][:400]
    names = ["".join(p) for n in range(6) for p in itertools.product("abc", repeat=n)]
    for first, second in itertools.combinations(patterns[::3], 2):
        both = any(fnmatch.fnmatchcase(n, first) and fnmatch.fnmatchcase(n, second) for n in names)
        assert names_meet(first, second) == both, (first, second)


# -- proofs equal to their index only as Python compares ------------------------------------------------------------

_PROOFS = "interpreter/demo.proofs.yaml"


@pytest.mark.parametrize(
    ("index_edit", "proofs_edit"),
    [
        (None, ("config: {BLOCK_N: 64, num_warps: 4}", "config: {BLOCK_N: 64, num_warps: 4.0}")),
        (('{"BLOCK_N": 32, "num_warps": 2}', '{"BLOCK_N": 32, "num_warps": 1}'), ("num_warps: 2}", "num_warps: true}")),
    ],
)
def test_proofs_of_another_value_type_than_the_setting_are_refused(fixture_tables, index_edit, proofs_edit):
    """A proof recording ``num_warps: 4.0`` or ``num_warps: true`` for the setting whose index holds 4 or 1: `tables
    verify` compared them as Python does (4.0 == 4, True == 1) and said the proofs were the index's. Triton compiles
    another constexpr from a bool or a float (or refuses it): the proof is of another setting. Now refused, naming the
    entry."""
    if index_edit is not None:
        path = fixture_tables / "interpreter" / "demo.json"
        path.write_text(path.read_text(encoding="utf-8").replace(*index_edit), encoding="utf-8")
    path = fixture_tables / _PROOFS
    text = path.read_text(encoding="utf-8")
    assert proofs_edit[0] in text
    path.write_text(text.replace(*proofs_edit), encoding="utf-8")
    rebind(path, "interpreter", "demo")  # each proof's digest its own entry's: what refuses is the index's setting
    retrack(fixture_tables)
    problems = [p.message for p in tables.verify_all(tables.load())]
    assert len(problems) == 1 and "demo.proofs.yaml: field 'entries[" in problems[0], problems
    assert "differs from entry" in problems[0]


# -- a stored model's files edited at their size ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        ("config.json", '"rope_theta": 1', '"rope_theta": 2'),  # 10000.0 made 20000.0: other angles, other text
        ("generation_config.json", '"eos_token_id": 2', '"eos_token_id": 3'),
        ("tokenizer_config.json", "<assistant>", "<assistent>"),  # the chat template
        ("tokenizer.json", '"hello"', '"jello"'),
    ],
)
def test_a_stored_file_edited_at_its_size_is_damage(tmp_path, monkeypatch, capsys, name, old, new):
    """A stored model's config.json edited in place (a rope_theta of 10000.0 made 20000.0), or its generation config,
    chat template or tokenizer: the store's check compared sizes only, so every run read the edit (another model,
    other text) though an edit of another size was damage. Now the manifest records each file's sha256 but the
    weights', and the model is damaged (exit 7), naming the file."""
    folder = _stored_tiny(tmp_path, monkeypatch)
    path = folder / name
    text = path.read_text(encoding="utf-8")
    assert old in text and len(old) == len(new)
    edited = text.replace(old, new, 1)
    path.write_text(edited, encoding="utf-8")
    argv = ["run", "--model", "tiny", "--prompt", "hello", "--no-chat", "--max-tokens", "1", "--no-stream"]
    err = _one_line(capsys, argv, 7)
    assert f"{name} was changed after the import" in err
    assert main(["list"]) == 0 and "DAMAGED" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda d: d.update(sha256=["x"]), "sha256 ['x'] is not a mapping"),
        (lambda d: d["sha256"].update({"config.json": "abc"}), "not a sha256 (64 hexadecimal digits)"),
        (lambda d: d["sha256"].update({"other.json": "0" * 64}), "sha256 names 'other.json'"),
    ],
)
def test_a_manifest_sha256_of_another_form_is_damage(tmp_path, monkeypatch, capsys, change, said):
    folder = _stored_tiny(tmp_path, monkeypatch)
    path = folder / "neurobrix-model.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    err = _one_line(capsys, ["run", "--model", "tiny", "--prompt", "hello", "--no-chat", "--max-tokens", "1"], 7)
    assert said in err


def test_a_model_imported_without_hashes_and_the_weights_still_run(tmp_path, monkeypatch):
    """Controls (a run in the interpreter): a manifest written before NeuroBrix recorded hashes is read as before; the
    weights are not hashed (their size and header are checked)."""
    folder = _stored_tiny(tmp_path, monkeypatch)
    path = folder / "neurobrix-model.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert not any(f.endswith(".safetensors") for f in data.get("sha256", {}))
    data.pop("sha256", None)
    path.write_text(json.dumps(data), encoding="utf-8")
    argv = ["run", "--model", "tiny", "--prompt", "hello", "--no-chat", "--max-tokens", "1", "--no-stream"]
    assert main(argv) == 0


# -- a Triton cache folder that cannot hold binaries -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "where", "said"),
    [
        ("TRITON_CACHE_DIR", "file", "TRITON_CACHE_DIR={}: it is not a folder"),
        ("TRITON_CACHE_DIR", "file/cache", "TRITON_CACHE_DIR={}: {file} is not a folder"),
        ("TRITON_HOME", "file", "TRITON_HOME={} (its .triton/cache): {file} is not a folder"),
        # no variable naming a cache: the engine's own, under NEUROBRIX_HOME (default ~/.cache/neurobrix)
        ("HOME", "file", "the default home {}/.cache/neurobrix lies under {file}, which is a file"),
    ],
)
def test_a_triton_cache_folder_that_is_a_file_is_refused_before_loading(tmp_path, monkeypatch, name, where, said):
    """On a GPU class (a made-up one certified on this machine's stack): TRITON_CACHE_DIR naming a file, or a folder
    under one (TRITON_HOME, the home folder too) passed every check; Triton's first compile, after the weights were
    loaded, died in os.makedirs ("Not a directory" naming a hashed sub-folder, exit 1). Now refused (exit 2) naming
    the variable, before anything is loaded; a folder that does not exist yet is still Triton's to make."""
    loaded = tables.load(write_gpu_class(write_tables(tmp_path / "t")))
    for other in stack.CACHE_ENV:
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    stack.require_certified_stack("fake-hopper", loaded)  # control: Triton's default, in a home it can write
    file = tmp_path / "file"
    file.write_text("x", encoding="utf-8")
    value = str(tmp_path / where)
    monkeypatch.setenv(name, value)
    with pytest.raises(UsageError, match=re.escape(said.format(value, file=file))) as refused:
        stack.require_certified_stack("fake-hopper", loaded)
    assert refused.value.exit_code == 2
    stack.require_certified_stack("interpreter", loaded)  # the interpreter compiles nothing
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "new" / "cache"))  # control: Triton makes it
    stack.require_certified_stack("fake-hopper", loaded)


# -- doctor ready where every run's preflight refuses a kernel table -------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: d["key"][0].__setitem__(1, "pow2>=16"), "keyed by [('M', 'pow2>=16'), ('N', 'exact')]"),
        (lambda d: d["configs"][0].update(BLOCK_Q=8), "holds BLOCK_Q, which this neurobrix's 'rms_norm' kernel"),
        (lambda d: d["configs"][0].update(BLOCK_M=3), "has BLOCK_M=3, where this neurobrix's kernels take"),
        (lambda d: d["configs"][0].pop("BLOCK_M"), "lacks BLOCK_M"),
    ],
)
def test_doctor_is_blocked_by_a_kernel_table_every_run_refuses(tmp_path, monkeypatch, capsys, edit, said):
    """An rms_norm index keyed by another bucket rule, or holding a setting its kernel lacks a parameter for, does not
    know, or cannot take (a table certified for another neurobrix, re-tracked): doctor said "ready" (exit 0) while
    every `run` refused it at its preflight (exit 3). Now doctor is blocked, naming the file and what run refuses."""
    root = write_tables(tmp_path / "t")
    path = root / "interpreter" / "rms_norm.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    follow(root, "interpreter", "rms_norm")  # certified so (for another neurobrix): its record proves the setting
    retrack(root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    _stored_tiny(tmp_path, monkeypatch)
    capsys.readouterr()
    assert main(["doctor", "--json"]) == 1
    found = {f["name"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert found["kernels"]["status"] == "FAIL" and "interpreter/rms_norm.json: " in found["kernels"]["value"]
    assert said in found["kernels"]["value"] and "run refuses it" in found["kernels"]["value"]
    err = _one_line(capsys, ["run", "--model", "tiny", "--prompt", "hello", "--no-chat", "--max-tokens", "1"], 3)
    assert "rms_norm.json" in err


# -- kernels launched on another GPU than the class's ---------------------------------------------------------------

_HOPPER = gpu.DeviceFacts("cuda", "nvidia", "NVIDIA Fake Hopper", (9, 0), 132, 139.8)
_A100 = gpu.DeviceFacts("cuda", "nvidia", "NVIDIA A100-SXM4-80GB", (8, 0), 108, 79.2)


@pytest.fixture
def two_gpus(tmp_path, monkeypatch):
    """A machine whose GPU 0 is of the made-up Hopper class and GPU 1 ``monkeypatch.second`` (the facts torch
    would give), torch's current device 1; Triton's interpreter off, as on such a machine."""
    loaded = tables.load(write_gpu_class(write_tables(tmp_path / "t")))
    from neurobrix.ops import _common

    monkeypatch.delenv("TRITON_INTERPRET")
    monkeypatch.setattr(_common, "INTERPRETER", False)
    monkeypatch.setattr(gpu, "device_facts", lambda: _HOPPER)
    second = [_A100]
    monkeypatch.setattr(gpu, "facts_of", lambda index: [_HOPPER, second[0]][index], raising=False)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for other in stack.CACHE_ENV:
        monkeypatch.setenv(other, str(tmp_path / "cache"))
    return loaded, second


@pytest.mark.parametrize("how", ["current device", "launch's device"])
def test_kernels_are_refused_on_another_gpu_than_the_classes(two_gpus, how):
    """The class is GPU 0's (``torch.cuda.get_device_properties(0)``) and the kernels run on torch's current device,
    or the device handed to ``warmup.launch``: after ``torch.cuda.set_device(1)``, or with ``device="cuda:1"``, on a
    machine of an H100 and an A100, the H100's settings were launched on the A100. Now refused (exit 5) naming both
    GPUs; a GPU 1 of GPU 0's kind, and GPU 0 itself, are accepted."""
    loaded, second = two_gpus
    plan = resolve([("rms_norm", "fp16", (1, 64))], loaded, "fake-hopper")

    def check():
        if how == "current device":
            return plan.ops()
        from neurobrix import warmup
        from neurobrix.config import ModelConfig

        cfg = ModelConfig.from_hf(config_dict(), "config.json")
        planned = warmup.plan_warmup(cfg, loaded, "fake-hopper", "fp16", max_prompt=1, max_new=1)
        return warmup.launch(cfg, planned, "fp16", "cuda:1")  # (no GPU here: refused, or fails making weights)

    with pytest.raises(UncertifiedGPUError, match=r"would run on GPU 1 \(name 'NVIDIA A100-SXM4-80GB'") as refused:
        check()
    assert refused.value.exit_code == 5 and "not of GPU class fake-hopper, the class of GPU 0" in str(refused.value)
    stack.require_runnable("fake-hopper", loaded, torch.device("cuda:0"))  # controls: GPU 0, then a GPU 1 of its kind
    second[0] = dataclasses.replace(_HOPPER, total_memory_gib=80.0)  # (its memory is no class fact)
    plan.ops()
    stack.require_runnable("fake-hopper", loaded, torch.device("cuda:1"))


# -- bf16 on the interpreter class through its own tables -----------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "warmup"])
def test_bf16_on_the_interpreter_is_refused_whatever_its_tables_hold(tmp_path, monkeypatch, capsys, command):
    """Interpreter tables holding bf16 entries (written by hand or by a certify older than its refusal of --dtypes bf16
    there; the interpreter's own bf16 computes on bit patterns): `run --dtype bf16` and `warmup --dtype bf16` ran the
    model in the interpreter's bf16 (exit 0), where the README says the interpreter class refuses bf16. Now refused
    (exit 2) as without such entries, naming the dtypes it runs."""
    root = write_tables(tmp_path / "t", dtypes=("fp32", "fp16", "bf16"))
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    _stored_tiny(tmp_path, monkeypatch)
    argv = ["--model", "tiny", "--dtype", "bf16", "--max-tokens", "1"]
    argv = ["run", *argv, "--prompt", "hello", "--no-chat", "--no-stream"] if command == "run" else ["warmup", *argv]
    err = _one_line(capsys, argv, 2)
    assert "bf16 cannot run on the interpreter class" in err and "--dtype fp16 or --dtype fp32" in err


# -- a NEUROBRIX_* variable the project does not read ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("NEUROBRIX_TABLE", "NEUROBRIX_TABLE (did you mean NEUROBRIX_TABLES?)"),
        ("NEUROBRIX_HOMES", "NEUROBRIX_HOMES (did you mean NEUROBRIX_HOME?)"),
        ("NEUROBRIX_tables", "NEUROBRIX_tables"),
        ("NEUROBRIX_CACHE", "NEUROBRIX_CACHE"),
    ],
)
def test_a_misspelt_neurobrix_variable_is_refused_not_ignored(tmp_path, monkeypatch, capsys, name, said):
    """``NEUROBRIX_TABLE=mine neurobrix run ...`` ran on the packaged tables, ``NEUROBRIX_HOMES=...`` on the default
    store: the misspelt variable was ignored and what it was meant to replace read in silence. Now every command but
    doctor refuses it (exit 2) naming it and the variable meant; doctor reports it as a FAIL. The three the project
    reads (control) pass."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NEUROBRIX_SOURCE_COMMIT", "0" * 40)
    monkeypatch.setenv(tables.ENV_VAR, str(tables.locate().root))
    assert main(["tables", "list"]) == 0
    monkeypatch.setenv(name, str(tmp_path / "mine"))
    err = _one_line(capsys, ["tables", "list"], 2)
    assert f"reads no variable {said}" in err
    _one_line(capsys, ["list"], 2)
    capsys.readouterr()
    assert main(["doctor", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert any(f["name"] == "environment" and f["status"] == "FAIL" and said in f["value"] for f in report["findings"])
