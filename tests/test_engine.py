"""The engine end to end against Hugging Face transformers, on the shipped interpreter tables.

Each family variant (Llama, Llama-3 rope scaling with tied embeddings, Mistral, Qwen2 with q/k/v
bias and tied embeddings) is a tiny random checkpoint saved by transformers (safetensors), with a
BPE tokenizer trained here with `tokenizers` and a chat template, imported through the real import
path (`neurobrix import`). The truth is transformers' own model in float64.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from conformance import tiny  # noqa: E402
from conftest import REPO  # noqa: E402
from kernel_tables import CONFIGS, write_tables  # noqa: E402
from neurobrix import store  # noqa: E402
from neurobrix.cli import main  # noqa: E402
from neurobrix.generate import Sampling, generate  # noqa: E402
from neurobrix.run import load_model  # noqa: E402
from neurobrix.tokenizer import Tokenizer  # noqa: E402

pytestmark = pytest.mark.slow

FAMILIES = tiny.FAMILIES


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A model store with every family imported through the real import path."""
    root = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NEUROBRIX_HOME", str(root / "store"))
        mp.delenv("NEUROBRIX_TABLES", raising=False)
        for family in FAMILIES:
            tiny.make(root / "checkpoints" / family, family)
            store.import_model(str(root / "checkpoints" / family), progress=False)
        yield root


@pytest.fixture
def env(home, monkeypatch):
    monkeypatch.setenv("NEUROBRIX_HOME", str(home / "store"))
    monkeypatch.delenv("NEUROBRIX_TABLES", raising=False)  # the shipped interpreter tables
    return home


def hf_float64(home: Path, family: str):
    model = transformers.AutoModelForCausalLM.from_pretrained(home / "checkpoints" / family, dtype=torch.float64)
    return model.eval()


def prompt_ids(family: str, chat: bool = True) -> list[int]:
    return Tokenizer(store.resolve(family).path).encode_prompt("hello world, the model runs", chat=chat)


# A derived tolerance for logits: each op's float32 result carries a relative error of at most
# gamma_n(2^-24) for its reduction length n (conformance/bounds.py); through the network these
# compose to first order into a sum over the chain of ops, sum_layers (hidden + intermediate +
# sequence) * 2^-24, relative to the logits' scale. The tiny random models here are well
# conditioned (weights N(0, 0.2), two layers), so the factor is O(1): we allow 4x.
def logits_tolerance(cfg, seq: int, logits64: torch.Tensor) -> float:
    n = cfg.num_layers * (cfg.hidden_size + cfg.intermediate_size + seq) + cfg.hidden_size
    return 4 * n * 2.0**-24 * float(logits64.abs().max())


@pytest.mark.parametrize("backend", ["triton", "torch"])
@pytest.mark.parametrize("family", FAMILIES)
def test_logits_match_transformers_float64(env, family, backend):
    stored = store.resolve(family)
    ids = prompt_ids(family)
    model = load_model(stored, backend, "fp32", prompt_len=len(ids), capacity=len(ids) + 4)
    hf = hf_float64(env, family)
    tokens = torch.tensor([ids])
    with torch.no_grad():
        ours = model.forward(tokens, torch.arange(len(ids))[None], None)[0].double()
        truth = hf(tokens).logits[0, -1]
        # one decode step through the KV cache
        nxt = int(truth.argmax())
        ours2 = model.forward(torch.tensor([[nxt]]), torch.tensor([[len(ids)]]),
                              torch.tensor([len(ids) + 1], dtype=torch.int32))[0].double()
        truth2 = hf(torch.tensor([ids + [nxt]])).logits[0, -1]
    cfg = stored.config()
    assert (ours - truth).abs().max() <= logits_tolerance(cfg, len(ids), truth)
    assert (ours2 - truth2).abs().max() <= logits_tolerance(cfg, len(ids) + 1, truth2)


def hf_greedy(hf, ids: list[int], steps: int) -> list[int]:
    out = list(ids)
    with torch.no_grad():
        for _ in range(steps):
            out.append(int(hf(torch.tensor([out])).logits[0, -1].argmax()))
    return out[len(ids):]


@pytest.mark.parametrize("backend", ["triton", "torch"])
@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_tokens_identical_to_transformers(env, family, backend):
    ids = prompt_ids(family)
    steps = 20
    model = load_model(store.resolve(family), backend, "fp32", prompt_len=len(ids), capacity=len(ids) + steps)
    ours, stats = generate(model, ids, steps, Sampling(), eos=set())
    assert ours == hf_greedy(hf_float64(env, family), ids, steps)
    assert stats.prompt_tokens == len(ids) and stats.generated_tokens == steps


def test_chat_template_matches_transformers(env):
    path = store.resolve("llama").path
    fast = transformers.PreTrainedTokenizerFast.from_pretrained(path)
    theirs = fast.apply_chat_template([{"role": "user", "content": "hello world"}], add_generation_prompt=True,
                                      tokenize=True)
    theirs = theirs["input_ids"] if isinstance(theirs, dict) or hasattr(theirs, "keys") else theirs
    assert Tokenizer(path).encode_prompt("hello world", chat=True) == list(theirs)
    assert Tokenizer(path).encode_prompt("hello world", chat=False) == fast("hello world")["input_ids"]


def test_sampling_is_reproducible_with_a_seed(env):
    ids = prompt_ids("llama")
    model_args = (store.resolve("llama"), "torch", "fp32")

    def sample(seed):
        model = load_model(*model_args, prompt_len=len(ids), capacity=len(ids) + 12)
        return generate(model, ids, 12, Sampling(temperature=1.5, top_k=50, top_p=0.95, seed=seed), eos=set())[0]

    assert sample(7) == sample(7)
    assert sample(7) != sample(8)


def cli(*args, env=None):
    full = {**os.environ, "PYTHONPATH": str(REPO), "TRITON_INTERPRET": "1", **(env or {})}
    full.pop("NEUROBRIX_TABLES", None)
    return subprocess.run([sys.executable, "-m", "neurobrix", *args], capture_output=True, text=True, env=full)


def test_run_command_streams_text_and_ends_with_statistics(env):
    result = cli("run", "--model", "llama", "--prompt", "hello world", "--max-tokens", "16",
                 env={"NEUROBRIX_HOME": str(env / "store")})
    assert result.returncode == 0, result.stderr
    ids = Tokenizer(store.resolve("llama").path).encode_prompt("hello world", chat=True)
    model = load_model(store.resolve("llama"), "triton", "fp32", prompt_len=len(ids), capacity=len(ids) + 16)
    tok = Tokenizer(store.resolve("llama").path)
    expected, _ = generate(model, ids, 16, Sampling(), eos=tok.eos_ids(list(store.resolve("llama").config().eos_token_ids)))
    assert result.stdout == tok.decode(expected) + "\n"
    stats = result.stderr.strip().splitlines()[-1]
    assert stats.startswith(f"[prompt {len(ids)} tokens | generated {len(expected)} tokens | time to first token ")
    assert "tokens/s]" in stats


def test_prompt_longer_than_the_context(env):
    long_prompt = " ".join(["hello world"] * 80)
    result = cli("run", "--model", "llama", "--prompt", long_prompt, "--max-tokens", "8",
                 env={"NEUROBRIX_HOME": str(env / "store")})
    assert result.returncode == 2 and "exceeds the model's context of 128 tokens" in result.stderr
    assert "Traceback" not in result.stderr


def test_triton_backend_without_gpu_or_interpreter_says_torch_exists_but_never_switches(env):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    result = cli("run", "--model", "llama", "--prompt", "hello", "--max-tokens", "2",
                 env={"NEUROBRIX_HOME": str(env / "store"), "TRITON_INTERPRET": "0"})
    assert result.returncode == 5
    assert "--backend torch" in result.stderr and result.stdout == ""
    explicit = cli("run", "--model", "llama", "--prompt", "hello", "--max-tokens", "2", "--backend", "torch",
                   env={"NEUROBRIX_HOME": str(env / "store"), "TRITON_INTERPRET": "0"})
    assert explicit.returncode == 0, explicit.stderr


def test_uncertified_shapes_are_refused_all_at_once_before_loading_weights(env, tmp_path, monkeypatch, capsys):
    partial = {"linear": [({"M": [1, 4]}, CONFIGS["linear"][0][1])]}  # prefill rows and more are missing
    monkeypatch.setenv("NEUROBRIX_TABLES", str(write_tables(tmp_path / "partial", partial)))

    def never(*_, **__):
        raise AssertionError("weights were loaded before the preflight refused")

    monkeypatch.setattr("neurobrix.run.weights_from_files", never)
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--model", "llama", "--prompt", "hello world", "--max-tokens", "4"])
    assert exit_.value.code == 4
    err = capsys.readouterr().err
    assert "kernel call(s) have no certified setting (nothing was loaded)" in err
    assert err.count("  linear ") >= 4  # every missing linear call is listed, not just the first
    assert "python -m conformance certify --class interpreter --kernels linear --dtypes fp32" in err
    # the command in the message certifies exactly what was missing (a two-candidate space keeps it quick)
    import dataclasses

    from conformance.__main__ import main as conformance_main
    from neurobrix import ops

    two = [c for _, c in CONFIGS["linear"]]
    monkeypatch.setitem(ops.SPECS, "linear", dataclasses.replace(ops.SPECS["linear"], candidates=lambda d, i: two))
    command = err.split("certify them (from a source checkout")[1].splitlines()[1].split()
    assert command[:4] == ["python", "-m", "conformance", "certify"] and "--config" in command
    assert conformance_main([*command[3:], "--examples", "3", "--no-check"]) == 0
    monkeypatch.undo()
    monkeypatch.setenv("NEUROBRIX_HOME", str(env / "store"))
    monkeypatch.setenv("NEUROBRIX_TABLES", str(tmp_path / "partial"))
    assert main(["run", "--model", "llama", "--prompt", "hello world", "--max-tokens", "4"]) == 0


def test_unknown_model_says_how_to_import(env):
    result = cli("run", "--model", "nobody/nothing", "--prompt", "hi", env={"NEUROBRIX_HOME": str(env / "store")})
    assert result.returncode == 2 and "neurobrix import" in result.stderr and "Traceback" not in result.stderr


def test_bad_sampling_options(env):
    result = cli("run", "--model", "llama", "--prompt", "hi", "--top-p", "1.5",
                 env={"NEUROBRIX_HOME": str(env / "store")})
    assert result.returncode == 2 and "--top-p must be in (0, 1]" in result.stderr


def test_config_json_round_trip_of_every_family(env):
    for family in FAMILIES:
        data = json.loads((store.resolve(family).path / "config.json").read_text())
        cfg = store.resolve(family).config()
        assert cfg.vocab_size == data["vocab_size"] and cfg.num_layers == data["num_hidden_layers"]
    assert store.resolve("qwen2-bias-tied").config().qkv_bias
    assert store.resolve("llama3-tied").config().rope_scaling["rope_type"] == "llama3"


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_a_batch_generates_what_each_prompt_generates_alone(env, backend):
    from neurobrix.generate import generate_batch
    from neurobrix.model import Transformer
    from neurobrix.ops import TORCH
    from neurobrix.run import certified_ops

    stored = store.resolve("qwen2-bias-tied")
    first = prompt_ids("qwen2-bias-tied")
    second = first[:1] + list(reversed(first[1:]))  # same length, other tokens
    steps = 10
    alone = []
    for ids in (first, second):
        model = load_model(stored, backend, "fp32", prompt_len=len(ids), capacity=len(ids) + steps)
        alone.append(generate(model, ids, steps, Sampling(), eos=set())[0])
    single = load_model(stored, backend, "fp32", prompt_len=len(first), capacity=len(first) + steps)
    ops = (certified_ops(single.cfg, "interpreter", "fp32", 2, len(first), len(first) + steps) if backend == "triton"
           else TORCH)
    batched = Transformer(single.cfg, single.w, ops, batch=2, capacity=len(first) + steps)
    outs, stats = generate_batch(batched, [first, second], steps, Sampling(), eos=set())
    assert outs == alone and stats.generated_tokens == 2 * steps
    # each sequence stops at its own EOS: make the first one's third token the end
    end = alone[0][2]
    outs, _ = generate_batch(batched, [first, second], steps, Sampling(), eos={end})
    assert outs[0] == alone[0][:alone[0].index(end) + 1]
    assert outs[1] == (alone[1][:alone[1].index(end) + 1] if end in alone[1] else alone[1])
