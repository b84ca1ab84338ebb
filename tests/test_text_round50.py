"""The fiftieth round of text parity: the open cases of rounds 44-49 on today's engine, above all tensors
config.json implies and the checkpoint lacks (Llama's ``attention_bias`` and ``mlp_bias`` declared and not stored,
Qwen2's q/k/v biases left out, norm weights missing); then fp16 overflow with finite weights under
``renormalize_logits``, a vocabulary padded past the tokenizer's, and the eos token where tokenizer_config.json,
generation_config.json and config.json disagree.

Drawn (outside the repository; docs/text-rounds.md has the counts): `run --backend torch` in fp32, bf16 and fp16
against transformers 5.25's greedy ``generate`` in the same dtype on the same folder (ids and printed text).

Found and fixed: transformers' from_pretrained fills a tensor of the model that the checkpoint lacks by the model's
``_init_weights``, which gives a Linear's bias zeros and an RMSNorm's weight ones (only a projection, the embedding
or the head is drawn at random); it prints a deterministic text, which `import` and `run` refused ("checkpoint has no
tensor ..."). The engine now fills such a bias or norm weight as transformers does (``config.initialised``), and
keeps refusing a missing tensor transformers draws at random.

Each test compares with transformers here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

import test_text_round39 as r39  # noqa: E402  (its builder and engine)

SHAPE = {"hidden_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}
BIASES = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj")
MLP = ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")


def checkpoint(folder: Path, family: str, kind: str, seed: int, fields: dict, gone) -> tuple[str, list[int]]:
    """A tiny random checkpoint (round 39's builder: biases drawn N(0, 0.1), norms N(1, 0.1)) with the tensors
    ``gone`` picks taken out of its file."""
    from safetensors.torch import load_file, save_file

    prompt, ids = r39.build(
        folder, family, SHAPE, {"rope_theta": 10000.0, **fields}, 8, seed=seed, spread=4.0, tokenizer=kind
    )
    weights = load_file(folder / "model.safetensors")
    kept = {k: v for k, v in weights.items() if not gone(k)}
    assert len(kept) < len(weights)
    save_file(kept, folder / "model.safetensors", metadata={"format": "pt"})
    return prompt, ids


# (family, tokenizer, seed, config.json fields, the tensors taken out, dtype): drawn cases `run` refused ("checkpoint
# has no tensor ...") where transformers prints the text of zeros or ones in their place
LACKING = {
    "llama, attention_bias and mlp_bias declared, none stored, fp32": (
        "llama",
        "metaspace",
        21,
        {"attention_bias": True, "mlp_bias": True},
        lambda k: k.endswith(".bias"),
        "fp32",
    ),
    "llama, attention_bias, q and k stored, v and o missing, bf16": (
        "llama",
        "bytelevel",
        31,
        {"attention_bias": True},
        lambda k: k.endswith(("v_proj.bias", "o_proj.bias")),
        "bf16",
    ),
    "llama, both biases, layer 1's missing, fp16": (
        "llama",
        "sentencepiece",
        33,
        {"attention_bias": True, "mlp_bias": True},
        lambda k: k.startswith("model.layers.1.") and k.endswith(".bias"),
        "fp16",
    ),
    "qwen2, layer 1's k bias left out, fp32": (
        "qwen2",
        "sentencepiece",
        25,
        {},
        lambda k: k == "model.layers.1.self_attn.k_proj.bias",
        "fp32",
    ),
    "mistral, the final norm missing, bf16": (
        "mistral",
        "bytelevel",
        23,
        {},
        lambda k: k == "model.norm.weight",
        "bf16",
    ),
}


@pytest.mark.parametrize("case", list(LACKING))
def test_a_bias_or_norm_weight_the_file_lacks_runs_as_transformers_fills_it(tmp_path, case):
    family, kind, seed, fields, gone, dtype = LACKING[case]
    # the fixture tokenizers are trained anew each time and their vocabulary can differ from run to run (round 39):
    # a build meeting a near tie takes the next seed, as rounds 39 and 43 do
    for attempt in range(6):
        folder = tmp_path / f"m{attempt}"
        prompt, ids = checkpoint(folder, family, kind, seed + attempt, fields, gone)
        theirs = r39.reference(folder, ids, 4, dtype)
        if theirs is not None:
            break
    assert theirs is not None, "a near tie at every seed"
    ours = r39.engine(folder, prompt, 4, dtype=dtype)
    assert ours == theirs, f"run gave {ours!r}, transformers {theirs}"


def test_transformers_fills_a_missing_bias_with_zeros_and_a_norm_with_ones_and_draws_the_rest(tmp_path):
    """``config.initialised`` against what from_pretrained puts in each tensor of a file that holds none: zeros or
    ones where it names a value, a draw (not one value throughout) where it names none."""
    from safetensors.torch import save_file

    from neurobrix.config import ModelConfig, checkpoint_shapes, initialised

    folder = tmp_path / "m"
    r39.build(folder, "llama", SHAPE, {"rope_theta": 10000.0, "attention_bias": True, "mlp_bias": True}, 4, seed=3)
    save_file({"unused": torch.zeros(1)}, folder / "model.safetensors", metadata={"format": "pt"})
    state = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).state_dict()
    shapes = checkpoint_shapes(ModelConfig.from_hf(json.loads((folder / "config.json").read_text())))
    assert any(initialised(n) is None for n in shapes) and any(initialised(n) == 0.0 for n in shapes)
    for name in shapes:
        value = initialised(name)
        if value is None:
            assert not torch.all(state[name] == state[name].flatten()[0]), f"{name}: one value throughout"
        else:
            assert torch.equal(state[name], torch.full(shapes[name], value)), f"{name}: not {value}"


def test_a_missing_projection_transformers_draws_at_random_stays_refused(tmp_path):
    folder = tmp_path / "m"
    gone = "model.layers.0.self_attn.q_proj.weight"
    prompt, ids = checkpoint(folder, "llama", "metaspace", 21, {}, lambda k: k == gone)
    drawn = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        drawn.append(model.state_dict()[gone])
    assert not torch.equal(*drawn), "transformers' text would not depend on its draw"
    refused = r39.engine(folder, prompt, 4)
    assert isinstance(refused, str) and f"checkpoint has no tensor '{gone}'" in refused, refused


def test_a_filled_tensor_is_said_once_on_stderr(tmp_path, capsys):
    """transformers warns of the tensors it initialises; a load that fills some says which, on stderr, and a load of
    a whole checkpoint says nothing."""
    from neurobrix.config import ModelConfig
    from neurobrix.model import weights_from_files

    folder = tmp_path / "m"
    checkpoint(folder, "llama", "metaspace", 21, {"mlp_bias": True}, lambda k: k.endswith("down_proj.bias"))
    cfg = ModelConfig.from_hf(json.loads((folder / "config.json").read_text()))
    capsys.readouterr()  # (the builder's own progress)
    weights_from_files(cfg, [str(folder / "model.safetensors")], torch.float32, "cpu")
    said = capsys.readouterr()
    assert said.out == "" and said.err.count("note:") == 1, said
    assert "model.layers.0.mlp.down_proj.bias" in said.err and "zeros (a bias)" in said.err, said.err
    assert "ones" not in said.err, said.err
    whole = tmp_path / "whole"
    r39.build(whole, "llama", SHAPE, {"rope_theta": 10000.0}, 8, seed=5)
    capsys.readouterr()
    weights_from_files(
        ModelConfig.from_hf(json.loads((whole / "config.json").read_text())),
        [str(whole / "model.safetensors")],
        torch.float32,
        "cpu",
    )
    assert capsys.readouterr().err == ""
