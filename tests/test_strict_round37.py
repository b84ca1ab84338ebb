"""The thirty-seventh round, on what rounds 35-36 left open in the memory check and on hostile inputs. On a CPU the
check read /proc/meminfo alone, which a container's cgroup limit does not lower: a run past the container's memory was
killed by the kernel's OOM killer, not refused. The cgroup's limit is read now (v2 and v1, up the hierarchy, from
fake /proc and /sys trees here). `warmup` built its models with no check at all, and the plan left out the rotary
tables, as large as the KV cache of a one-layer model of one small head. Each test that names a "before" failed before
its fix; the controls pass either way. No large allocation is made."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from store_fixtures import config_dict, make_checkpoint

from neurobrix import memory
from neurobrix.cli import main
from neurobrix.config import ModelConfig
from neurobrix.warmup import scratch_weights as SCRATCH

GIB = 2**30
SLIM = {  # one head, one layer, every tensor small: the KV cache is what a capacity makes of it
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 8,
    "intermediate_size": 2,
    "num_hidden_layers": 1,
    "num_attention_heads": 1,
    "num_key_value_heads": 1,
    "head_dim": 2,
    "vocab_size": 32,
    "max_position_embeddings": 2**45,
    "rms_norm_eps": 1e-5,
}


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="ascii")


def _v2(tmp_path: Path, limit: int, used: int, cache: int = 0) -> tuple[str, str, str]:
    """A cgroup v2 tree: the process in /user.slice/app (no limit of its own), its parent limited to ``limit``."""
    proc, root = tmp_path / "proc", tmp_path / "cgroup"
    _write(
        tmp_path,
        {
            "proc/self/cgroup": "0::/user.slice/app\n",
            "cgroup/cgroup.controllers": "cpu memory\n",  # the root: no memory.max
            "cgroup/user.slice/memory.max": f"{limit}\n",
            "cgroup/user.slice/memory.current": f"{used}\n",
            "cgroup/user.slice/memory.stat": f"anon 1\nactive_file {cache // 2}\ninactive_file {cache - cache // 2}\n",
            "cgroup/user.slice/app/memory.max": "max\n",
            "cgroup/user.slice/app/memory.current": f"{used // 2}\n",
        },
    )
    return str(proc), str(root), str(root / "user.slice" / "memory.max")


def test_a_cgroup_v2_limit_up_the_hierarchy_is_read_with_its_page_cache_counted_as_left(tmp_path):
    """Before: no reader (the host's MemAvailable alone). The parent's memory.max binds a child whose own is "max";
    what it leaves is the limit less what is used, the page cache charged to it (reclaimable) counted as left."""
    proc, root, file = _v2(tmp_path, 2 * GIB, 3 * GIB // 2, cache=GIB // 2)
    assert memory.cgroup_memory(proc, root) == (GIB, 2 * GIB, file)
    # no limit anywhere: nothing bounds the run but the host
    (tmp_path / "cgroup" / "user.slice" / "memory.max").write_text("max\n", encoding="ascii")
    assert memory.cgroup_memory(proc, root) is None


def test_a_cgroup_v1_memory_limit_is_read_and_its_unlimited_value_bounds_nothing(tmp_path):
    """cgroup v1 (a hybrid system: a 0:: line whose hierarchy has no memory controller, and a v1 memory line): the
    tightest of the levels' memory.limit_in_bytes less memory.usage_in_bytes (total_*_file counted as left); the
    unlimited value (PAGE_COUNTER_MAX pages) leaves more than any host, which then bounds the run."""
    unlimited = 9223372036854771712
    _write(
        tmp_path,
        {
            "proc/self/cgroup": "9:name=systemd:/\n4:cpuset,memory:/jobs/42\n1:cpu:/\n0::/\n",
            "cg/memory/memory.limit_in_bytes": f"{unlimited}\n",
            "cg/memory/memory.usage_in_bytes": f"{20 * GIB}\n",
            "cg/memory/jobs/memory.limit_in_bytes": f"{4 * GIB}\n",
            "cg/memory/jobs/memory.usage_in_bytes": f"{3 * GIB}\n",
            "cg/memory/jobs/memory.stat": f"active_file 7\ntotal_active_file {GIB // 4}\ntotal_inactive_file 0\n",
            "cg/memory/jobs/42/memory.limit_in_bytes": f"{unlimited}\n",
            "cg/memory/jobs/42/memory.usage_in_bytes": f"{GIB}\n",
        },
    )
    left, limit, file = memory.cgroup_memory(str(tmp_path / "proc"), str(tmp_path / "cg"))
    assert (left, limit) == (GIB + GIB // 4, 4 * GIB) and file.endswith("memory/jobs/memory.limit_in_bytes")
    (tmp_path / "cg/memory/jobs/memory.limit_in_bytes").write_text(f"{unlimited}\n", encoding="ascii")
    left, limit, file = memory.cgroup_memory(str(tmp_path / "proc"), str(tmp_path / "cg"))
    assert left > 2**62 and left > memory.host_memory()[0]


def test_an_unreadable_or_odd_cgroup_file_bounds_nothing(tmp_path):
    """No /proc/self/cgroup, a line of another form, a limit that is no number: no bound, and no exception."""
    assert memory.cgroup_memory(str(tmp_path / "none"), str(tmp_path / "none")) is None
    _write(tmp_path, {"proc/self/cgroup": "garbage\n0::/../x\n", "cg/memory.max": "lots\n"})
    assert memory.cgroup_memory(str(tmp_path / "proc"), str(tmp_path / "cg")) is None


@pytest.fixture
def long_model(tmp_path, monkeypatch):
    """An imported model whose context is 2**45 positions, a cgroup v2 tree limiting it to 64 MiB, and `run` and
    `warmup` made to fail loudly if they read or build a weight."""
    import neurobrix.run as run_module
    import neurobrix.warmup as warmup_module

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "long", config=config_dict(**SLIM))
    assert main(["import", str(folder)]) == 0
    proc, root, file = _v2(tmp_path, 64 * 2**20, 0)
    reader = getattr(memory, "cgroup_memory", lambda proc, root: None)  # (before the fix: no reader)
    monkeypatch.setattr(memory, "cgroup_memory", functools.partial(reader, proc, root), raising=False)

    def never(*args, **kwargs):
        raise AssertionError("weights were read or built")

    read = run_module.weights_from_files
    monkeypatch.setattr(run_module, "weights_from_files", never)
    monkeypatch.setattr(warmup_module, "scratch_weights", never)
    return read, file


def _main(capsys, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(list(args))
    return exit_.value.code, capsys.readouterr().err


def test_a_run_past_the_containers_memory_limit_is_refused_naming_the_limit(long_model, capsys, monkeypatch):
    """Before: MemAvailable (gigabytes) passed a 128 MiB KV cache under a 64 MiB cgroup limit, the weights were read
    and the kernel's OOM killer would end the process. Now one line, exit 5, naming the cgroup's limit and its file;
    a run within the limit is loaded (the control)."""
    read, file = long_model
    code, err = _main(capsys, "run", "--model", "long", "--prompt", "hello", "--no-chat", "--max-tokens", "8000000")
    assert code == 5 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert f"of the 0.06 GiB memory limit of this process's cgroup ({file}) is available" in err
    assert "the longest context that fits is" in err
    import neurobrix.run as run_module

    monkeypatch.setattr(run_module, "weights_from_files", read)
    capsys.readouterr()
    assert main(["run", "--model", "long", "--prompt", "hello", "--no-chat", "--max-tokens", "2"]) == 0


def test_a_warmup_that_cannot_fit_is_refused_like_the_run(long_model, capsys):
    """Before: `warmup` ran its smaller passes, then built a KV cache of 10**12 positions and ended in
    "DefaultCPUAllocator: can't allocate memory" (a RuntimeError, its traceback); here the scratch weights were
    built (the fixture's AssertionError). Now the run's check on the warmup's largest pass: exit 5, one line, before
    anything is built, naming --max-prompt and --max-tokens."""
    code, err = _main(capsys, "warmup", "--model", "long", "--max-prompt", "2", "--max-tokens", str(10**12))
    assert code == 5 and len(err.strip().splitlines()) <= 3 and "Traceback" not in err, err
    assert "this warmup needs about" in err and "memory limit of this process's cgroup" in err
    assert "(--max-prompt plus --max-tokens)" in err and "AssertionError" not in err


def test_the_plan_counts_the_rotary_tables_a_model_holds(monkeypatch):
    """Before: the plan counted the KV cache but not the rotary tables (cos and sin in fp32, capacity x head_dim / 2
    each) nor the positions (int64), which beside a one-layer model of one head of 2 are as large as its cache: what a
    model really holds at 2**16 positions was past the plan's cache and working memory. Measured on a real model."""
    import torch

    from neurobrix.model import Transformer
    from neurobrix.ops import TORCH

    cfg = ModelConfig.from_hf(SLIM)
    capacity = 2**16
    model = Transformer(cfg, SCRATCH(cfg, torch.float32, "cpu"), TORCH, batch=1, capacity=capacity)
    held = sum(t.nbytes for t in [*model.cache.k, *model.cache.v, model.cos, model.sin, model.positions])
    need = memory.plan(cfg, 4, 1, 1, capacity, reserve=0)
    assert held <= need.kv_cache + need.activations


def test_the_warmup_holds_one_kv_cache_at_a_time_as_its_check_counts(long_model, capsys, monkeypatch):
    """The check counts the warmup's largest cache once. Before: each model was built while the one before it (and the
    greedy decoder's) was still held, two or three caches at once. Now each is freed before the next is built."""
    import weakref

    import neurobrix.model as model_module
    import neurobrix.warmup as warmup_module

    monkeypatch.setattr(warmup_module, "scratch_weights", SCRATCH)
    alive: weakref.WeakSet = weakref.WeakSet()
    built = []

    class Counted(model_module.Transformer):
        def __init__(self, *args, **kwargs):
            assert not alive, f"{len(alive)} model(s) still held while another is built"
            super().__init__(*args, **kwargs)
            alive.add(self)
            built.append(self.cache.capacity)

    monkeypatch.setattr(model_module, "Transformer", Counted)
    capsys.readouterr()
    assert main(["warmup", "--model", "long", "--max-prompt", "2", "--max-tokens", "2"]) == 0
    assert len(built) >= 2


@pytest.mark.parametrize("variable", ["NEUROBRIX_TABLES", "NEUROBRIX_HOME"])
def test_a_folder_variable_the_os_cannot_look_up_is_refused_by_name_and_doctor_reports_it(
    variable, tmp_path, monkeypatch, capsys
):
    """A name of 300 bytes (past the 255 a file name may have; a folder this user may not enter fails alike). Before:
    `run` ended in the generic "File name too long" line (exit 1, the variable unnamed) and `doctor` in the same line
    instead of its report. Now the variable is named with the OS's reason (the tables' exit 3, the store's 2), and
    doctor reports it as a FAIL."""
    from neurobrix import tables

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(variable, str(tmp_path / ("a" * 300)))
    tables._locate.cache_clear()
    code, err = _main(capsys, "run", "--model", "m", "--prompt", "hello")
    assert code == (3 if variable == "NEUROBRIX_TABLES" else 2), err
    assert err.startswith(f"neurobrix: error: {variable}=") and "cannot be" in err and "(File name too long)" in err
    capsys.readouterr()
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and f"{variable}=" in out and "File name too long" in out


def test_every_hub_id_the_import_takes_is_one_huggingface_hub_takes():
    """Before: `import org/name.` (a sentence's full stop), `org./name`, `org/name-`, `org/name.git` and a name past 96
    characters passed the import's own pattern and ended in huggingface_hub's HFValidationError (a traceback). Each id
    hub_id takes now passes the validator the download applies; the controls are still taken."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    from neurobrix.hub import hub_id

    refused = ["org/name.", "org./name", "org/name-", "org-/name", "org/name.git", "org/" + "a" * 97, "o_/n-"]
    taken = ["o/n", "org/name_", "Org-1.x/Name_2.5-B", "org/" + "a" * 96, "TinyLlama/TinyLlama-1.1B-Chat-v1.0"]
    for candidate in refused + taken:
        try:
            validate_repo_id(candidate)
            valid = True
        except HFValidationError:
            valid = False
        assert (hub_id(candidate) is not None) == valid == (candidate in taken), candidate


def test_an_id_huggingface_hub_refuses_is_refused_by_the_import_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    code, err = _main(capsys, "import", "org/name.")
    assert code == 2 and "is neither a local folder nor a Hugging Face id" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["import", "run", "warmup"])
def test_a_model_name_too_long_for_a_file_is_not_found(command, tmp_path, monkeypatch, capsys):
    """A name of 300 characters (no file can be called that). Before: pathlib's is_dir and is_file raised "File name
    too long", which ended `import` and `run` in the generic line (exit 1). Now: no such folder or stored model
    (exit 2), as for any name that names nothing."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    name = "a" * 300
    args = ["import", name] if command == "import" else [command, "--model", name]
    code, err = _main(capsys, *args, *(["--prompt", "hello"] if command == "run" else []))
    assert code == 2 and "File name too long" not in err, err
    assert ("is neither a local folder" if command == "import" else f"no model '{name}'") in err


@pytest.mark.parametrize("variable", ["TRITON_CACHE_DIR", "TRITON_HOME"])
def test_a_triton_cache_folder_the_os_cannot_look_up_is_a_problem_named_not_an_oserror(variable, tmp_path, monkeypatch):
    """On a GPU class `run`, `warmup` and `doctor` check the folder Triton's cache lies in. Before: a name past 255
    bytes raised OSError from pathlib's exists() (run and warmup ended in the generic line, exit 1; doctor in the same
    line instead of its report). Now the problem is returned like any other of that folder, naming the variable."""
    from neurobrix.stack import cache_problem

    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    monkeypatch.setenv(variable, str(tmp_path / ("a" * 300)))
    problem = cache_problem("nvidia-h200")
    assert problem is not None and problem.startswith(f"{variable}=") and "File name too long" in problem
    monkeypatch.setenv(variable, str(tmp_path / "cache"))  # control: a folder of one's own is no problem
    assert cache_problem("nvidia-h200") is None


@pytest.mark.parametrize("context", [2**62, 2**64])
def test_a_cache_past_what_torch_can_describe_is_refused_by_the_memory_check(context, tmp_path, monkeypatch, capsys):
    """config.json's max_position_embeddings of 2**62 or 2**64 (JSON-valid integers) and `run --max-tokens` up to it:
    before, the interpreter's preflight, which ran before the memory check, ended in torch's "Storage size calculation
    overflowed" (a RuntimeError) or "Overflow when unpacking long long" (a TypeError) making its shapes-only KV cache,
    a traceback. Now the memory check comes first and refuses it in one line (exit 5), as it did for `--backend
    torch`, which has no preflight."""
    import neurobrix.run as run_module

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "huge", config=config_dict(**{**SLIM, "max_position_embeddings": context}))
    assert main(["import", str(folder)]) == 0
    monkeypatch.setattr(run_module, "weights_from_files", None)  # (never reached)
    code, err = _main(
        capsys, "run", "--model", "huge", "--prompt", "hello", "--no-chat", "--max-tokens", str(context - 3)
    )
    assert code == 5 and len(err.strip().splitlines()) == 1, err
    assert "KV cache" in err and f"for {context - 2} tokens" in err and "of host memory" in err


def test_a_warmup_planning_a_cache_past_what_torch_can_describe_is_refused(tmp_path, monkeypatch, capsys):
    """`warmup --max-tokens 2**62` for a model whose context is 2**64: before, its planning recorded a decode step into
    a shapes-only cache of 2**60 positions and ended in torch's "Storage size calculation overflowed" (a traceback).
    Now the model refuses such a cache by name (exit 5, one line) wherever it is made."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "huge", config=config_dict(**{**SLIM, "max_position_embeddings": 2**64}))
    assert main(["import", str(folder)]) == 0
    code, err = _main(capsys, "warmup", "--model", "huge", "--max-prompt", "2", "--max-tokens", str(2**62))
    assert code == 5 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("neurobrix: error: a KV cache of 1152921504606846976 positions")
