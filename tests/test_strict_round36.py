"""The thirty-sixth round, on the gap round 35 left open: on the interpreter class (the host's CPU) the plan had no
memory check, so a `run` whose KV cache was past the host's memory (`--max-tokens 10**12` within a config.json's
context of 2**45: 16 TB of cache for a one-layer model) read the weights and ended in the CPU allocator's
RuntimeError, a traceback, when the cache was made. The same plan the GPU path checks against the device's free
memory is now checked against what the host has available, before a weight is read, and refused in one line with the
GPU path's exit code (5). Each test that names a "before" failed before the fix; the controls pass either way. No
large allocation is made: the refused run stops before its weights and cache."""

from __future__ import annotations

import pytest
from store_fixtures import config_dict, make_checkpoint

from neurobrix import memory
from neurobrix.cli import main
from neurobrix.config import ModelConfig

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


@pytest.fixture
def long_model(tmp_path, monkeypatch):
    """An imported model whose context is 2**45 positions, and `run` made to fail loudly if it reads a weight."""
    import neurobrix.run as run_module

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "long", config=config_dict(**SLIM))
    assert main(["import", str(folder)]) == 0
    read = run_module.weights_from_files

    def never(*args, **kwargs):
        raise AssertionError("weights were read")

    monkeypatch.setattr(run_module, "weights_from_files", never)
    return read


def _run(capsys, max_tokens: int) -> tuple[int, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--model", "long", "--prompt", "hello", "--no-chat", "--max-tokens", str(max_tokens)])
    return exit_.value.code, capsys.readouterr().err


def test_a_kv_cache_past_the_hosts_memory_is_refused_before_a_weight_is_read(long_model, capsys):
    """Before: the interpreter's run read the weights and ended in "DefaultCPUAllocator: can't allocate memory: you
    tried to allocate 8000000000008 bytes" (a RuntimeError, its traceback) making the cache. Now one line, exit 5,
    naming what the run needs, what the host has, and the longest context that fits."""
    code, err = _run(capsys, 10**12)
    assert code == 5, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    available, total = memory.host_memory()
    assert "of host memory" in err and "KV cache 14901.16 GiB for 1000000000001 tokens" in err
    assert f"of {total / 2**30:.2f} GiB is available" in err
    assert "the longest context that fits is" in err and "Nothing was loaded" in err


def test_the_host_check_is_against_the_hosts_figure_and_without_the_gpus_reserve(monkeypatch):
    """The host's plan holds no CUDA context: a plan that fits the host exactly is taken, one byte less is refused, and
    the longest context named is the one that fits there. Before: require_fit knew the GPU only."""
    cfg = ModelConfig.from_hf(SLIM)
    need = memory.plan(cfg, 4, 1, 1000, 1000, reserve=0).total
    assert need < memory.RESERVE  # the GPU's reserve alone would refuse it
    assert memory.require_fit(cfg, 4, 1, 1000, 1000, free=need, host=True).total == need
    with pytest.raises(
        memory.DeviceMemoryError,
        match=r"of host memory .* is available; the longest context that "
        r"fits is 999 tokens",
    ) as refused:
        memory.require_fit(cfg, 4, 1, 1000, 1000, free=need - 1, total=2**34, host=True)
    assert refused.value.exit_code == 5


def test_the_hosts_available_memory_is_memavailable_where_the_kernel_gives_it():
    """The figure is /proc/meminfo's MemAvailable (free pages plus the page cache the kernel would reclaim), never
    below MemFree, which SC_AVPHYS_PAGES gives and which would refuse runs that fit on a host holding files in its
    cache; and no more than the physical memory."""
    import os

    available, total = memory.host_memory()
    assert total == os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    try:
        lines = dict(line.split(":", 1) for line in open("/proc/meminfo", encoding="ascii"))
    except OSError:
        pytest.skip("no /proc/meminfo on this system")
    kernel = int(lines["MemAvailable"].split()[0]) * 1024
    assert abs(available - kernel) < 2**30 and 0 < available <= total


def test_a_run_that_fits_the_host_is_loaded(long_model, capsys, monkeypatch):
    """Control: the same model with a short generation passes the check and reads its weights."""
    import neurobrix.run as run_module

    monkeypatch.setattr(run_module, "weights_from_files", long_model)
    capsys.readouterr()
    assert main(["run", "--model", "long", "--prompt", "hello", "--no-chat", "--max-tokens", "2"]) == 0
