"""The benchmarks' command lines and reports, without a GPU (they run on one; here only what needs none)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO


def test_e2e_help_runs_without_a_gpu():
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.e2e", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    for option in ("--prompt", "--repeats", "--backends", "compile", "min/median/max"):
        assert option in result.stdout


def test_e2e_takes_several_prompt_lengths():
    from benchmarks.e2e import parse_args

    assert parse_args([]).prompt == [128, 512, 2048]
    args = parse_args(["--prompt", "128", "512", "2048", "--repeats", "5", "--backends", "triton", "compile"])
    assert (args.prompt, args.repeats, args.backends) == ([128, 512, 2048], 5, ["triton", "compile"])


@pytest.mark.parametrize(
    "argv",
    [
        ["--prompt", "0"],
        ["--repeats", "0"],
        ["--model", "nobody/nothing"],
        ["--backends", "vllm"],
        ["--prompt", "many"],
    ],
)
def test_e2e_refuses_bad_arguments_with_usage(argv, capsys):
    from benchmarks.e2e import parse_args

    with pytest.raises(SystemExit) as exit_:
        parse_args(argv)
    assert exit_.value.code == 2 and "error:" in capsys.readouterr().err


def test_e2e_report_puts_the_peer_beside_each_prompt_length(capsys):
    from benchmarks.e2e import report, spread

    assert spread([3.0, 1.0, 2.0]) == {
        "ttft_ms_min": 1.0,
        "ttft_ms": 2.0,
        "ttft_ms_max": 3.0,
        "ttft_ms_all": [3.0, 1.0, 2.0],
    }

    def row(backend, prompt, ttfts, decode=None):
        r = {"model": "m", "batch": 1, "prompt": prompt, "backend": backend, **spread(ttfts)}
        r["prefill_tok_s"] = prompt / (r["ttft_ms"] / 1000)
        return {**r, **({"decode_tok_s": decode, "roofline_pct": 50.0} if decode else {})}

    rows = [
        row("triton", 128, [10, 12, 11], decode=600.0),
        row("compile", 128, [20, 22, 21], decode=500.0),
        row("triton", 2048, [40, 40, 41]),
        row("compile", 2048, [80, 81, 79]),
        {"model": "m", "batch": 1, "prompt": 512, "backend": "triton", "error": "MissingEntryError: ..."},
    ]
    report(rows)
    lines = {(line.split()[2], line.split()[3]): line for line in capsys.readouterr().out.splitlines()[2:]}
    short, long = lines["128", "triton"], lines["2048", "triton"]
    assert "10.0/11.0/12.0" in short and "1.20" in short and f"{21 / 11:.2f}" in short  # decode and prefill x peer
    assert "40.0/40.0/41.0" in long and "2.00" in long  # prefill only at the longer prompt
    assert "ERROR MissingEntryError" in lines["512", "triton"]


@pytest.mark.parametrize(
    ("module", "flags", "argv"),
    [
        ("long_context", ("--prompt", "--new"), ["--prompt", "100"]),
        ("decode_profile", ("--backends", "triton-serial"), []),
        ("proto_fuse", ("--variants", "--check-only"), []),
        ("proto_prefetch", ("--variants", "--check-only"), []),
        ("proto_attention", ("--variants", "--filled", "--check-only"), []),
        ("proto_norm", ("--variants", "--check-only"), []),
    ],
)
def test_gpu_benchmark_help_and_no_gpu_message(module, flags, argv):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("TRITON_INTERPRET", None)
    run = [sys.executable, "-m", f"benchmarks.{module}"]
    shown = subprocess.run([*run, "--help"], capture_output=True, text=True, env=env, cwd=REPO)
    assert shown.returncode == 0 and all(flag in shown.stdout for flag in flags)
    refused = subprocess.run([*run, *argv], capture_output=True, text=True, env=env, cwd=REPO)
    assert refused.returncode == 1 and "needs a GPU" in refused.stderr and "Traceback" not in refused.stderr
    assert len(refused.stderr.splitlines()) == 1, refused.stderr


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        ("e2e", ["--prompt", "128"]),
        ("kernels", []),
        ("proto_pick", []),
        ("cold_start", ["--model", "meta-llama/Llama-3.2-1B-Instruct"]),
    ],
)
def test_gpu_benchmarks_without_a_gpu_say_so_in_one_line(module, argv, monkeypatch):
    import importlib

    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(sys, "argv", [module, *argv])
    main = importlib.import_module(f"benchmarks.{module}").main
    with pytest.raises(SystemExit) as exit_:
        main(argv) if module == "e2e" else main()
    assert exit_.value.code == f"benchmarks.{module} needs a GPU" + (" of a certified class" * (module != "proto_pick"))


def test_cold_start_refuses_a_model_outside_the_catalogue(capsys, monkeypatch):
    from benchmarks import cold_start

    monkeypatch.setattr(sys, "argv", ["cold_start", "--model", "nobody/nothing"])
    with pytest.raises(SystemExit) as exit_:
        cold_start.main()
    assert exit_.value.code == 2 and "--model nobody/nothing: not a catalogue model" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct"])
def test_long_context_roofline_counts_every_matrix_a_decode_step_reads(name):
    """Every checkpoint tensor but the norms and the embedding table (one row of it is read), the tied
    output head once."""
    import torch

    from benchmarks.long_context import weight_bytes_per_step
    from conformance.catalogue import load
    from neurobrix.memory import weight_bytes
    from neurobrix.model import meta_weights

    cfg = load()[0][name]
    norms = (2 * cfg.num_layers + 1) * cfg.hidden_size * 2
    embed = cfg.vocab_size * cfg.hidden_size * 2
    expected = weight_bytes(cfg, 2) - norms - (0 if cfg.tie_word_embeddings else embed)
    assert weight_bytes_per_step(meta_weights(cfg, torch.bfloat16)) == expected


def test_decode_profile_files_every_engine_kernel_under_its_op():
    """Kernels replayed from a CUDA graph carry no op, so the profile groups them by name: every Triton
    kernel of neurobrix/ops must land in the group of the op module that defines it."""
    import importlib

    from triton.runtime.jit import KernelInterface

    from benchmarks.decode_profile import group_of

    expected = {
        "linear": "linear",
        "attention": "attention",
        "rms_norm": "norm",
        "rotary": "rotary",
        "silu_mul": "silu_mul",
        "pick": "argmax",  # the greedy pick (docs audit round 34: it was missing here, and counted as "other")
    }
    seen = 0
    for module_name, group in expected.items():
        module = importlib.import_module(f"neurobrix.ops.{module_name}")
        for name, value in vars(module).items():
            if isinstance(value, KernelInterface) and name.endswith("_kernel"):
                assert group_of(name) == group, (module_name, name)
                seen += 1
    assert seen >= 10
    # and PyTorch's/cuBLAS's projection kernels on the torch backend
    assert group_of("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT") == "linear"
    assert group_of("cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16") == "attention"


def test_the_peer_keeps_the_triton_settings_its_compiler_sets_to_itself(monkeypatch):
    """Inductor sets TRITON_PTXAS_PATH (torch's own ptxas) in the process the first time it compiles: after a
    peer run the engine's certified path would refuse to run, or compile its kernels with another ptxas. The
    peer's settings are its own: gone after each peer run, back in the next."""
    import triton

    from benchmarks.peer import own_triton_settings

    monkeypatch.delenv("TRITON_PTXAS_PATH", raising=False)
    monkeypatch.setenv("TRITON_CACHE_DIR", "/engine/cache")
    seen = []

    @own_triton_settings()
    def peer_run(first: bool) -> None:
        seen.append((os.environ.get("TRITON_PTXAS_PATH"), os.environ.get("TRITON_CACHE_DIR")))
        if first:  # as inductor does
            os.environ["TRITON_PTXAS_PATH"] = "/torch/bin/ptxas"
            os.environ["TRITON_CACHE_DIR"] = "/inductor/cache"
            triton.knobs.compilation.always_compile = True

    try:
        peer_run(True)
        assert "TRITON_PTXAS_PATH" not in os.environ and os.environ["TRITON_CACHE_DIR"] == "/engine/cache"
        assert "always_compile" not in vars(triton.knobs.compilation)
        peer_run(False)
        assert seen == [(None, "/engine/cache"), ("/torch/bin/ptxas", "/inductor/cache")]
        assert "TRITON_PTXAS_PATH" not in os.environ and "always_compile" not in vars(triton.knobs.compilation)
    finally:
        vars(triton.knobs.compilation).pop("always_compile", None)
