"""The compiler stack: a class's settings run only on the torch/Triton they were proven with, or on a stack a
local re-proof covers; `run` refuses before any weight is read (exit 6), `doctor` reports it as blocking,
and `python -m conformance check` records the re-proof."""

from __future__ import annotations

import json
import re

import pytest
from conftest import REPO, retrack
from kernel_tables import CONFIGS, STACK, write_kernel, write_tables

from neurobrix import gpu, stack, tables
from neurobrix.cli import main
from neurobrix.errors import CompilerStackError, TablesError

HERE = stack.running_stack()  # this machine's: what the shipped interpreter tables were certified with


def _other_patch(version: str) -> str:
    """The same version with its patch number moved on (and the local build tag kept)."""
    public, plus, build = version.partition("+")
    major, minor, patch = (public.split(".") + ["0", "0"])[:3]
    number = int(re.match(r"\d*", patch)[0] or 0) + 1
    return f"{major}.{minor}.{number}{plus}{build}"


def _other_minor(version: str) -> str:
    major, minor = version.split(".")[:2]
    return f"{major}.{int(minor) + 1}.0"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def certified_elsewhere(tmp_path, monkeypatch):
    """Interpreter-class tables (every kernel) whose provenance names another Triton than this machine's."""
    other = {**STACK, "triton": _other_minor(STACK["triton"])}
    root = write_tables(tmp_path / "tables", torch=other["torch"], triton=other["triton"])
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    return root, stack.Stack(other["torch"], other["triton"])


def test_the_certified_stack_is_what_every_table_of_the_class_records():
    loaded = tables.load(REPO / "tables")
    for class_id in loaded.classes:
        if not loaded.kernels(class_id):
            assert stack.certified_stack(class_id, loaded) is None
            continue
        recorded = set()
        for kernel in loaded.kernels(class_id):  # the provenance block as written at the top of each proofs file
            head = open(tables.proofs_path(loaded.root, class_id, kernel), encoding="utf-8").read(4000)
            recorded.add(tuple(re.search(rf"^  {name}: '?([^'\n]+)'?$", head, re.M)[1] for name in ("torch", "triton")))
        certified = stack.certified_stack(class_id, loaded)
        assert {(certified.torch, certified.triton)} == recorded


def test_tables_of_one_class_certified_on_two_stacks_are_refused(certified_elsewhere):
    root, _ = certified_elsewhere
    write_kernel(root, "linear", CONFIGS["linear"], torch=STACK["torch"], triton="0.0.1")
    with pytest.raises(TablesError, match="certified with different compiler stacks"):
        stack.certified_stack("interpreter")


@pytest.mark.parametrize(
    ("running", "ok"),
    [
        (lambda s: s, True),  # the same stack
        (lambda s: stack.Stack(_other_patch(s.torch), s.triton), True),  # torch: another patch release
        (lambda s: stack.Stack(s.torch.partition("+")[0] + "+cu999", s.triton), True),  # torch: another build tag
        (lambda s: stack.Stack(s.torch, _other_patch(s.triton)), False),  # Triton: any other version
        (lambda s: stack.Stack(s.torch, _other_minor(s.triton)), False),
        (lambda s: stack.Stack(_other_minor(s.torch), s.triton), False),  # torch: another major.minor
        (lambda s: stack.Stack(s.torch, s.triton + "+git1a2b3c4"), False),  # Triton: a build from other source
    ],
    ids=["same", "torch-patch", "torch-build", "triton-patch", "triton-minor", "torch-minor", "triton-local"],
)
def test_the_rule_triton_exact_torch_major_minor(running, ok):
    certified = stack.Stack("2.11.0+cu130", "3.6.0")
    assert stack.compatible(certified, running(certified)) is ok


def test_the_pip_command_follows_the_recorded_torch_build():
    cuda = stack.Stack("2.11.0+cu130", "3.6.0")
    assert stack.pip_command(cuda) == (
        "python -m pip install torch==2.11.0 triton==3.6.0 --index-url https://download.pytorch.org/whl/cu130"
    )
    # a CPU build's index has no Triton: it comes from PyPI in a second command
    assert stack.pip_command(stack.Stack("2.13.0+cpu", "3.9.0")) == (
        "python -m pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
        " && python -m pip install triton==3.9.0"
    )
    assert stack.pip_command(stack.Stack("2.13.0", "3.9.0")) == "python -m pip install torch==2.13.0 triton==3.9.0"


def test_the_shipped_interpreter_tables_run_on_this_stack():
    """The test environment (and CI's) runs the stack the interpreter class was certified with."""
    found = stack.verdict("interpreter", tables.load(REPO / "tables"))
    assert found.ok and found.reproof is None


def test_another_triton_is_refused_naming_both_stacks_and_the_ways_out(certified_elsewhere, home):
    _, certified = certified_elsewhere
    with pytest.raises(CompilerStackError) as info:
        stack.require_certified_stack("interpreter")
    message = str(info.value)
    assert info.value.exit_code == 6
    assert certified.describe() in message and HERE.describe() in message
    assert stack.pip_command(certified) in message
    assert "TRITON_INTERPRET=1 python -m conformance check --class interpreter" in message
    assert str(home / "reproofs" / "interpreter.json") in message
    assert "correct on this stack, not that they are the fastest" in message


def test_another_torch_major_minor_is_refused(monkeypatch):
    monkeypatch.setattr(stack, "running_stack", lambda: stack.Stack(_other_minor(HERE.torch), HERE.triton))
    with pytest.raises(CompilerStackError, match=re.escape(f"this machine runs torch {_other_minor(HERE.torch)}")):
        stack.require_certified_stack("interpreter")
    monkeypatch.setattr(stack, "running_stack", lambda: stack.Stack(_other_patch(HERE.torch), HERE.triton))
    stack.require_certified_stack("interpreter")  # a patch release of the same torch is accepted


def _reproof(class_id: str, running: stack.Stack) -> None:
    stack.write_reproof(class_id, tables.load(), running, {"profile": "ci", "passed": True}, "test", "test")


def test_a_valid_reproof_admits_exactly_its_stack_and_tables(certified_elsewhere, home):
    root, certified = certified_elsewhere
    _reproof("interpreter", HERE)
    found = stack.verdict("interpreter")
    assert found.ok and found.reproof == home / "reproofs" / "interpreter.json"
    assert "re-proved here" in found.describe()
    stack.require_certified_stack("interpreter")
    # another stack (even one the certified rule would take as the same: a torch patch release) is not covered
    patched = stack.Stack(_other_patch(HERE.torch), HERE.triton)
    assert not stack.verdict("interpreter", running=patched).ok
    assert "was made on" in stack.verdict("interpreter", running=patched).problem


def test_a_reproof_goes_stale_when_the_tables_change(certified_elsewhere, home):
    root, _ = certified_elsewhere
    _reproof("interpreter", HERE)
    other = _other_minor(STACK["triton"])
    # another setting: the re-proof says nothing about it
    write_kernel(root, "silu_mul", [({}, {**CONFIGS["silu_mul"][0][1], "BLOCK_I": 64})], triton=other)
    tables.clear_cache()
    with pytest.raises(CompilerStackError, match=r"stale: the tables changed since \(interpreter/silu_mul"):
        stack.require_certified_stack("interpreter")
    (home / "reproofs" / "interpreter.json").write_text("{")
    with pytest.raises(CompilerStackError, match="unreadable"):
        stack.require_certified_stack("interpreter")


def test_a_reproof_goes_stale_when_a_table_is_added(certified_elsewhere, home):
    """A kernel table added after the re-proof was never checked on this stack: the re-proof does not cover it
    (a table the re-proof never saw counts as a change, like one it saw that changed or went away)."""
    root, _ = certified_elsewhere
    for name in ("silu_mul.json", "silu_mul.proofs.yaml"):
        (root / "interpreter" / name).unlink()
    retrack(root)
    tables.clear_cache()
    _reproof("interpreter", HERE)
    stack.require_certified_stack("interpreter")  # the re-proof covers the tables as they were
    write_kernel(root, "silu_mul", CONFIGS["silu_mul"], triton=_other_minor(STACK["triton"]))
    tables.clear_cache()
    with pytest.raises(CompilerStackError, match=r"stale: the tables changed since \(interpreter/silu_mul"):
        stack.require_certified_stack("interpreter")


@pytest.mark.parametrize("name", ["class.yaml", "silu_mul.proofs.yaml"])
def test_a_reproof_goes_stale_when_any_file_of_the_class_changes(certified_elsewhere, home, name):
    """The re-proof covers every tracked file of the class, not only the settings indexes: a class.yaml changed
    since (here: another description) or an altered audit record was never checked on this stack."""
    root, _ = certified_elsewhere
    _reproof("interpreter", HERE)
    path = root / "interpreter" / name
    path.write_text(path.read_text().replace("description: ", "description: changed ") + "# changed\n")
    retrack(root)
    tables.clear_cache()
    with pytest.raises(CompilerStackError, match=rf"stale: the tables changed since \(interpreter/{name}\)"):
        stack.require_certified_stack("interpreter")


def test_a_reproof_of_another_format_is_refused(certified_elsewhere, home):
    """A re-proof record of a format this neurobrix does not write is not read as one: the stack stays refused."""
    _reproof("interpreter", HERE)
    path = home / "reproofs" / "interpreter.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "format": stack.REPROOF_FORMAT + 1}))
    with pytest.raises(CompilerStackError, match="is format 2, and this NeuroBrix reads format 1 .written by a newer"):
        stack.require_certified_stack("interpreter")  # named by its format (strict round 50)


def test_doctor_reports_the_stack_as_blocking_until_reproved(certified_elsewhere, home, capsys):
    assert main(["doctor", "--json"]) == 1
    findings = {f["name"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert findings["stack"]["status"] == "FAIL" and "python -m conformance check" in findings["stack"]["value"]
    _reproof("interpreter", HERE)
    assert main(["doctor"]) == 0
    assert "re-proved here" in capsys.readouterr().out


@pytest.fixture
def tiny_model(home, tmp_path_factory):
    pytest.importorskip("transformers")
    from conformance import tiny
    from neurobrix import store

    store.import_model(str(tiny.make(tmp_path_factory.mktemp("ckpt") / "tiny-llama")), progress=False)
    return "tiny-llama"


def test_run_refuses_before_any_weight_is_read_with_exit_6(certified_elsewhere, tiny_model, monkeypatch, capsys):
    def never(*_, **__):
        raise AssertionError("weights were read on an unproven stack")

    with monkeypatch.context() as patched, pytest.raises(SystemExit) as info:
        patched.setattr("neurobrix.run.weights_from_files", never)
        main(["run", "--model", tiny_model, "--prompt", "hello", "--max-tokens", "2"])
    assert info.value.code == 6
    err = capsys.readouterr().err
    assert err.startswith("neurobrix: error: GPU class interpreter was certified with") and "Traceback" not in err
    assert "nothing was loaded" in err
    # with a re-proof of this stack the same run goes ahead (and reads the weights)
    _reproof("interpreter", HERE)
    assert main(["run", "--model", tiny_model, "--prompt", "hello", "--max-tokens", "2"]) == 0


def test_warmup_refuses_another_stack_before_compiling_anything(certified_elsewhere, tiny_model, monkeypatch, capsys):
    """warmup compiles the class's settings, so on a stack they were not proven on it refuses as run does (exit 6),
    before a single kernel is launched."""

    def never(*_, **__):
        raise AssertionError("kernels were launched on an unproven stack")

    monkeypatch.setattr("neurobrix.warmup.launch", never)
    with pytest.raises(SystemExit) as info:
        main(["warmup", "--model", tiny_model, "--max-prompt", "2", "--max-tokens", "1"])
    assert info.value.code == 6
    assert "GPU class interpreter was certified with" in capsys.readouterr().err


def test_check_on_another_stack_records_the_reproof_run_accepts(tmp_path, home, monkeypatch, capsys):
    """The conformance side end to end, on a one-kernel class kept quick: a partial check records nothing, a
    whole passing one records the re-proof, which then admits this stack until a table changes."""
    from conformance.__main__ import main as conformance_main

    other = _other_minor(HERE.triton)
    root = write_tables(tmp_path / "tables", {"silu_mul": CONFIGS["silu_mul"]}, dtypes=("fp32",), triton=other)
    for path in (root / "interpreter").iterdir():
        if path.name != "class.yaml" and not path.name.startswith("silu_mul."):
            path.unlink()
    retrack(root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    assert not stack.verdict("interpreter").ok

    assert conformance_main(["check", "--class", "interpreter", "--kernel", "silu_mul", "--profile", "ci"]) == 0
    assert "no re-proof recorded" in capsys.readouterr().out and not (home / "reproofs").exists()
    assert conformance_main(["check", "--class", "interpreter", "--profile", "ci"]) == 0
    out = capsys.readouterr().out
    assert "recorded a local re-proof of interpreter" in out and "not that they are the fastest" in out
    record = json.loads((home / "reproofs" / "interpreter.json").read_text())
    assert record["stack"] == HERE.as_dict() and record["certified_stack"]["triton"] == _other_minor(HERE.triton)
    assert record["tables"] == {f.path: f.sha256 for f in tables.load().tracked}
    assert record["check"]["passed"] and record["check"]["entries"] == 1 and record["check"]["profile"] == "ci"
    assert stack.verdict("interpreter").ok
    write_kernel(root, "silu_mul", [({}, {**CONFIGS["silu_mul"][0][1], "BLOCK_I": 64})], dtypes=("fp32",), triton=other)
    tables.clear_cache()
    assert not stack.verdict("interpreter").ok
    assert CONFIGS["silu_mul"][0][1]["BLOCK_I"] != 64  # the change above really was a change


def test_the_readme_lists_each_certified_class_with_its_stack_and_install_command():
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("### Certified classes and their compiler stack") :]
    found_rows = re.findall(r"^\| `([\w-]+)` \| (torch .+?) \| `(.+?)` \|$", section, re.M)
    rows = {class_id: (said, command) for class_id, said, command in found_rows}
    loaded = tables.load(REPO / "tables")
    certified = {c: stack.certified_stack(c, loaded) for c in loaded.classes if loaded.kernels(c)}
    assert set(rows) == set(certified)
    for class_id, found in certified.items():
        assert rows[class_id] == (f"torch {found.torch}, Triton {found.triton}", stack.pip_command(found))


@pytest.mark.parametrize("check", [None, {}, {"profile": "ci", "passed": False}, {"passed": "yes"}])
def test_a_reproof_whose_check_did_not_pass_admits_nothing(certified_elsewhere, home, check):
    """A re-proof stands for a whole passing check; a record that names none, or a failed one, is no re-proof."""
    _reproof("interpreter", HERE)
    path = home / "reproofs" / "interpreter.json"
    record = json.loads(path.read_text())
    if check is None:
        del record["check"]
    else:
        record["check"] = check
    path.write_text(json.dumps(record))
    with pytest.raises(CompilerStackError, match="does not record a passing check"):
        stack.require_certified_stack("interpreter")


@pytest.fixture
def proven_here(monkeypatch):
    """Whatever the class, its stack is this machine's: only the compiler's environment can refuse it."""
    monkeypatch.setattr(stack, "verdict", lambda class_id, *a, **k: stack.Verdict(class_id, HERE, HERE))
    for name in stack.CODEGEN_ENV:
        monkeypatch.delenv(name, raising=False)
    for name in stack.compiler_overrides():  # anything set on this machine already
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    "set_here",
    [
        {"DISABLE_LLVM_OPT": "1"},  # in Triton's own list of variables that change what it compiles
        {"TRITON_DEFAULT_FP_FUSION": "0"},  # ditto: no fused multiply-adds, other rounding than proven
        {"TRITON_KERNEL_OVERRIDE": "1"},  # Triton's Python side: kernels replaced by files from a folder
        {"PTXAS_OPTIONS": "-O0"},
        {"TRITON_DEBUG": "1"},  # compiled with device asserts and a check on every integer add and multiply
        {"TRITON_OVERRIDE_ARCH": "sm80", "TRITON_LIBDEVICE_PATH": "/tmp/libdevice.bc"},
        # binaries from a cache class the environment names (imported code, serving any binary under a key)
        {"TRITON_CACHE_MANAGER": "evil.cache:Manager"},
        {"TRITON_REMOTE_CACHE_BACKEND": "evil.remote:Backend"},
        {"TRITON_DEFAULT_BACKEND": "amd"},  # another compiler and driver, read outside Triton's knobs
        # knobs in no list of what changes code: refused because the allow-list does not name them
        {"TRITON_AMD_CODEGEN_PATH": "/tmp/codegen.so", "TRITON_FPSAN_HOMOMORPHIC_CASTS": "1"},
    ],
)
def test_a_gpu_class_is_not_run_with_triton_told_to_compile_otherwise(proven_here, monkeypatch, set_here):
    """Same torch, same Triton, but an environment that makes Triton compile other code from a setting than the
    code it was proven on: refused (exit 6 in run), naming every variable; the interpreter class compiles nothing."""
    stack.require_certified_stack("nvidia-h200")  # nothing set: admitted
    for name, value in set_here.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(CompilerStackError) as refused:
        stack.require_certified_stack("nvidia-h200")
    for name, value in set_here.items():
        assert f"{name}={value}" in str(refused.value)
    assert str(refused.value).startswith(stack.compiler_problem("nvidia-h200"))  # what doctor reports too
    assert stack.compiler_problem("amd-mi300x") is not None  # every GPU class, not NVIDIA's alone
    stack.require_certified_stack("interpreter")
    assert stack.compiler_problem("interpreter") is None


def test_a_variable_triton_reads_is_refused_unless_the_allow_list_names_it(proven_here, monkeypatch, tmp_path):
    """An allow-list, not a deny-list: a knob a later Triton adds is refused when set until it is listed as
    harmless; those listed (the cache's folder, compiling again, the host C compiler, the autotuner's) are not."""
    from triton import knobs

    monkeypatch.setattr(knobs.language_knobs, "new_codegen", knobs.env_bool("TRITON_NEW_CODEGEN"), raising=False)
    monkeypatch.setenv("TRITON_NEW_CODEGEN", "1")
    with pytest.raises(CompilerStackError, match="TRITON_NEW_CODEGEN=1"):
        stack.require_certified_stack("nvidia-h200")
    monkeypatch.delenv("TRITON_NEW_CODEGEN")
    for name, value in {
        "TRITON_CACHE_DIR": str(tmp_path / "cache"),  # a folder of the user's own (strict round 27)
        "TRITON_ALWAYS_COMPILE": "1",
        "CC": "gcc",
        "TRITON_PRINT_AUTOTUNING": "1",
    }.items():
        monkeypatch.setenv(name, value)
    stack.require_certified_stack("nvidia-h200")
    assert set(stack.HARMLESS_ENV) <= {
        d.key for g in vars(knobs).values() if isinstance(g, knobs.base_knobs) for d in g.knob_descriptors.values()
    }  # each one a variable Triton reads


def test_knobs_set_from_python_refuse_a_gpu_class(proven_here, monkeypatch):
    """A program may set Triton's knobs without the environment: a cache manager class (never copied to the
    environment), or a hook adding stages to the compiler's pipeline. Refused, named as the knob."""
    from triton import knobs
    from triton.runtime.cache import FileCacheManager

    monkeypatch.setitem(vars(knobs.cache), "manager_class", FileCacheManager)
    with pytest.raises(CompilerStackError, match=r"triton\.knobs\.cache\.manager_class="):
        stack.require_certified_stack("nvidia-h200")
    monkeypatch.delitem(vars(knobs.cache), "manager_class")
    monkeypatch.setattr(knobs.runtime, "add_stages_inspection_hook", lambda: ("", ""))
    with pytest.raises(CompilerStackError, match=r"triton\.knobs\.runtime\.add_stages_inspection_hook="):
        stack.require_certified_stack("nvidia-h200")
    stack.require_certified_stack("interpreter")


def test_a_gpu_backend_from_another_package_refuses_a_gpu_class(proven_here, monkeypatch):
    """Triton takes its backends from entry points, a package's "nvidia" replacing Triton's own compiler and
    driver: no setting was proven on that code. Refused, naming where the backend comes from."""
    from triton import backends

    class Compiler(backends.compiler.BaseBackend):  # the shape of a package's compiler, never run
        pass

    own = backends.backends["nvidia"]
    monkeypatch.setitem(backends.backends, "nvidia", backends.Backend(Compiler, own.driver))
    with pytest.raises(CompilerStackError, match=r"triton\.backends\['nvidia'\]=test_stack and "):
        stack.require_certified_stack("nvidia-h200")
    monkeypatch.setitem(backends.backends, "nvidia", backends.Backend(own.compiler, Compiler))  # its driver only
    with pytest.raises(
        CompilerStackError, match=r"triton\.backends\['nvidia'\]=triton\.backends\.nvidia\.compiler and"
    ):
        stack.require_certified_stack("nvidia-h200")
    monkeypatch.setitem(backends.backends, "nvidia", own)
    stack.require_certified_stack("nvidia-h200")


def test_settings_of_another_class_are_not_launched_here(monkeypatch):
    """Planning for any class is free (certify and the catalogue's walk do it), launching is not: a plan of
    nvidia-h200's settings made through the Python API on this interpreter machine gives no ops (exit 5, both
    classes named), and warmup's launch of such a plan launches nothing; the interpreter's own plan runs."""
    import torch
    from test_runtime_planted import TINY

    from neurobrix.errors import UncertifiedGPUError
    from neurobrix.plan import resolve
    from neurobrix.warmup import WarmupPlan, launch

    loaded = tables.load()
    first = loaded.index("nvidia-h200", "rms_norm").entries[0].domain
    call = ("rms_norm", first.dtypes[0], tuple(lo for _, lo, _ in first.ranges))
    plan = resolve({call}, loaded, "nvidia-h200")
    with pytest.raises(UncertifiedGPUError, match="class nvidia-h200's and this machine's device is of class interp"):
        plan.ops()
    with pytest.raises(UncertifiedGPUError, match="class nvidia-h200's"):
        launch(TINY, WarmupPlan("nvidia-h200", loaded, [], [], [], []), "bf16", torch.device("cpu"))
    interpreted = resolve({("rms_norm", "fp32", (2, 8))}, loaded, "interpreter")
    assert interpreted.ops().name == "triton"
    h200 = gpu.DeviceFacts("cuda", "nvidia", "NVIDIA H200", (9, 0), 132)
    monkeypatch.setattr(gpu, "device_facts", lambda: h200)  # on an H200, the interpreter's settings are not run
    with pytest.raises(
        UncertifiedGPUError, match="class interpreter's and this machine's device is of class nvidia-h200"
    ):
        interpreted.ops()


def test_triton_interpret_changed_after_the_kernels_were_loaded_is_refused(monkeypatch):
    """Triton fixes at import whether its kernels are interpreted, the engine reads TRITON_INTERPRET when it
    looks at the device (once): a program changing the variable in between would run one class's settings as the
    other's code. Refused (exit 5), whichever of the three disagrees."""
    from neurobrix.errors import DeviceError
    from neurobrix.ops import _common

    stack.require_runnable("interpreter")  # all three agree: on
    monkeypatch.setattr(_common, "INTERPRETER", False)  # kernels compiled for a GPU
    with pytest.raises(DeviceError, match=r"TRITON_INTERPRET changed .*the kernels loaded: off"):
        stack.require_runnable("interpreter")
    monkeypatch.setattr(_common, "INTERPRETER", True)
    stack.require_runnable("interpreter")
    h200 = gpu.DeviceFacts("cuda", "nvidia", "NVIDIA H200", (9, 0), 132)
    monkeypatch.setattr(gpu, "device_facts", lambda: h200)  # the device looked at before TRITON_INTERPRET was set
    monkeypatch.setattr(stack, "require_certified_stack", lambda *a: None)
    with pytest.raises(DeviceError, match=r"the device found: off"):
        stack.require_runnable("nvidia-h200")


def test_doctor_reports_what_triton_is_told_as_blocking(proven_here, monkeypatch, capsys):
    """On a GPU of a certified class, a variable that makes run refuse makes doctor say blocked (exit 1), not
    ready: doctor must report what run does."""
    from neurobrix import doctor

    monkeypatch.setattr(gpu, "device_facts", lambda: gpu.DeviceFacts("cuda", "nvidia", "NVIDIA H200", (9, 0), 132))
    assert not [f for f in doctor.diagnose() if f.name == "compiler"]
    monkeypatch.setenv("TRITON_DEFAULT_BACKEND", "amd")
    found = [f for f in doctor.diagnose() if f.name == "compiler"]
    assert [f.status for f in found] == [doctor.FAIL] and "TRITON_DEFAULT_BACKEND=amd" in found[0].value
    assert main(["doctor"]) == 1 and "verdict: blocked by compiler" in capsys.readouterr().out


def test_a_plan_is_judged_by_the_tables_it_was_resolved_from(tmp_path, home):
    """A plan resolved from a tables folder given by path (not the located one) launches only if that folder's
    class was proven on this stack: judging it by the located tables ran another Triton's settings."""
    from neurobrix.plan import resolve

    other = write_tables(tmp_path / "t", triton=_other_minor(STACK["triton"]))
    plan = resolve({("rms_norm", "fp32", (2, 8))}, tables.load(other), "interpreter")
    with pytest.raises(CompilerStackError, match="was certified with"):
        plan.ops()


def test_doctor_reports_a_kernel_without_a_table_as_blocking(tmp_path, monkeypatch):
    """A class with no table for one of the engine's kernels cannot run a model: doctor names it and blocks."""
    from conftest import retrack

    from neurobrix import doctor

    root = write_tables(tmp_path / "t")
    for name in ("rotary.json", "rotary.proofs.yaml"):
        (root / "interpreter" / name).unlink()
    retrack(root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    found = [f for f in doctor.diagnose() if f.name == "kernels"]
    assert [f.status for f in found] == [doctor.FAIL] and "no certified table for rotary" in found[0].value
