"""The thirty-sixth round of text parity: a differential fuzz over architecture variants, prompt lengths and
generation lengths, on PyTorch's kernels and on the interpreter's Triton kernels.

Round 25 fuzzed the config space with one 35-token prompt and 8 new tokens, and weights N(0, 0.2) whose logits were
never scaled. This round drew (outside the repository) tiny random checkpoints of each family and variant: Llama
with and without tied embeddings and with the llama3 rotation, Mistral with and without a sliding window, Qwen2 with
its q/k/v biases and window fields, head_dim apart from hidden / heads, GQA ratios 1, 2, 4 and 8; weights drawn at
0.05 to 0.2 and the final norm scaled so that the last prompt position's logits have a standard deviation of 1 to 4
(neither flat nor one-hot); prompts of 1 to 200 tokens; 1 to 64 new tokens, and windows placed so that the
positions fed end one before, at and one past the window. `run --backend torch` and `run` on the interpreter
(TRITON_INTERPRET=1, the interpreter class's shipped tables) were compared with transformers' float32 greedy
``generate`` (ids, and the printed text with ``decode(skip_special_tokens=True)``). No difference was found; the
tests below keep the cases that reach furthest (the longest prompts and generations, each family's variant, the
window's edges) and fail with the engine's GQA head mapping, the llama3 blend, the Qwen2 biases or the window's
boundary broken.

Near ties (round 22's rule): ids may part only at a step whose two largest float32 logits are within MARGIN of each
other relative to the largest; the cases here are far from that (``case`` asserts it on transformers' side)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

MARGIN = 1e-3  # round 7's margin: no step here comes within it, so the ids must be transformers' exactly
WORDS = "the model runs fast never guess a setting hello world , . naïve café 中文 🙂 don't it's".split()
FAMILIES = {"llama": "LlamaConfig", "mistral": "MistralConfig", "qwen2": "Qwen2Config"}


def build(folder: Path, family: str, args: dict[str, Any], prompt_tokens: int, spread: float, seed: int):
    """A tiny random checkpoint (weights N(0, 0.1), norms N(1, 0.1), biases N(0, 0.1)), the byte-level fixture's
    tokenizer, a prompt of about ``prompt_tokens`` tokens (at most that many), and the final norm scaled so that the
    logits after the prompt have standard deviation ``spread``. Returns (prompt, its ids)."""
    from tokenizer_fixtures import save

    base = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "max_position_embeddings": 512}
    config = getattr(transformers, FAMILIES[family])(**{**base, "vocab_size": 320, **args})
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.normal_(1.0 if "norm" in name else 0.0, 0.1)
    save(folder, "bytelevel")
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    words: list[str] = []
    prompt = WORDS[seed % len(WORDS)]
    while True:
        words.append(WORDS[(seed * 7 + 3 * len(words)) % len(WORDS)])
        if len(tok(" ".join(words))["input_ids"]) > prompt_tokens:
            break
        prompt = " ".join(words)
    ids = tok(prompt)["input_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, -1]
        model.model.norm.weight.mul_(spread / float(logits.std()))
    model.save_pretrained(folder, safe_serialization=True)
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 9999}))
    return prompt, ids


def reference(folder: Path, ids: list[int], new: int) -> tuple[list[int], str]:
    """transformers' float32 greedy generate: the new ids and their text; every step's top-2 gap above MARGIN."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    inputs = torch.tensor([ids])
    with torch.no_grad():
        out = model.generate(
            input_ids=inputs,
            attention_mask=torch.ones_like(inputs),
            do_sample=False,
            max_new_tokens=new,
            output_scores=True,
            return_dict_in_generate=True,
        )
    for step, scores in enumerate(out.scores):
        top = torch.topk(scores[0].double(), 2).values
        assert float(top[0] - top[1]) > MARGIN * max(1.0, abs(float(top[0]))), f"step {step}: a near tie"
    got = out.sequences[0, len(ids) :].tolist()
    return got, tok.decode(got, skip_special_tokens=True)


def engine(folder: Path, prompt: str, new: int, backend: str) -> tuple[list[int], str] | str:
    """`neurobrix import`, then `neurobrix run --no-chat --no-stream --max-tokens NEW --backend BACKEND`: the new ids
    and the printed text, or the one-line message of the UsageError refusing the run."""
    from neurobrix import run, store
    from neurobrix.errors import UsageError

    home = folder.parent / "home"
    shutil.rmtree(home / "models" / folder.name, ignore_errors=True)
    saved = {name: os.environ.get(name) for name in ("NEUROBRIX_HOME", "NEUROBRIX_TABLES")}
    os.environ["NEUROBRIX_HOME"] = str(home)
    os.environ.pop("NEUROBRIX_TABLES", None)  # the shipped tables
    seen: dict[str, list[int]] = {}
    text: list[str] = []
    real = run.generate

    def generate(*args, **kwargs):
        seen["ids"], stats = real(*args, **kwargs)
        return seen["ids"], stats

    run.generate = generate
    try:
        store.import_model(str(folder), progress=False)
        options = run.RunOptions(
            model=folder.name, prompt=prompt, max_tokens=new, backend=backend, chat=False, stream=False
        )
        run.run(options, write=text.append, notice=lambda _: None)
    except UsageError as refused:
        message = str(refused)
        assert message and "\n" not in message, message
        return message
    finally:
        run.generate = real
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return seen["ids"], "".join(text).removesuffix("\n")


CASES = {  # name: family, config arguments, prompt tokens (at most), new tokens, logit spread, backend
    "llama GQA 8, head_dim 24, llama3 rotation, 190-token prompt, 48 new": (
        "llama",
        {
            "num_attention_heads": 16,
            "num_key_value_heads": 2,
            "head_dim": 24,
            "rope_parameters": {
                "rope_type": "llama3",
                "rope_theta": 10000.0,
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 64,
            },
        },
        190,
        48,
        2.0,
        "torch",
    ),
    "llama tied, MHA, one-token prompt, 64 new": (
        "llama",
        {"num_attention_heads": 4, "num_key_value_heads": 4, "tie_word_embeddings": True},
        1,
        64,
        3.0,
        "torch",
    ),
    "qwen2 biases, GQA 4, window on no layer shorter than the run": (
        "qwen2",
        {
            "num_attention_heads": 8,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "use_sliding_window": True,
            "sliding_window": 20,
            "max_window_layers": 28,
        },
        120,
        40,
        2.0,
        "torch",
    ),
    "interpreter: qwen2 biases, GQA 4, head_dim 24, 70-token prompt": (
        "qwen2",
        {"num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 24},
        70,
        4,
        2.0,
        "triton",
    ),
    "interpreter: llama GQA 8, llama3 rotation, one-token prompt": (
        "llama",
        {
            "num_attention_heads": 8,
            "num_key_value_heads": 1,
            "rope_parameters": {
                "rope_type": "llama3",
                "rope_theta": 500000.0,
                "factor": 32.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 16,
            },
        },
        1,
        8,
        2.0,
        "triton",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_variant_long_prompts_and_generations_give_transformers_text(tmp_path, name):
    family, args, prompt_tokens, new, spread, backend = CASES[name]
    folder = tmp_path / "m"
    prompt, ids = build(folder, family, args, prompt_tokens, spread, seed=len(name))
    want = reference(folder, ids, new)
    assert engine(folder, prompt, new, backend) == want


@pytest.mark.parametrize("family", ["mistral", "qwen2", "llama"])
def test_a_window_runs_while_the_positions_fed_fit_and_is_refused_one_past(tmp_path, family):
    """A window of 30 (Mistral's on every layer, Qwen2's from layer 0, Llama's the cache transformers keeps): a
    run whose positions fed end at the window gives transformers' text; one new token more is refused."""
    window = 30
    args: dict[str, Any] = {"num_attention_heads": 4, "num_key_value_heads": 2, "sliding_window": window}
    if family == "qwen2":
        args.update(use_sliding_window=True, max_window_layers=0)
    folder = tmp_path / "m"
    prompt, ids = build(folder, family, args, 18, 2.0, seed=11)
    new = window - len(ids) + 1  # positions fed: the prompt and every new token but the last
    assert engine(folder, prompt, new, "torch") == reference(folder, ids, new)
    refused = engine(folder, prompt, new + 1, "torch")
    assert isinstance(refused, str) and "sliding attention window of 30" in refused, refused
