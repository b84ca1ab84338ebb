"""The twentieth round of text parity: numerics rather than configuration, compared with transformers on CPU.

- Rotary tables: transformers' rotary embedding derives its inverse frequencies in float32 (1 / theta^(2i / dim),
  then each scaling rule's float32 operations) and each angle as the float32 product of the position and its
  frequency, and takes their cos and sin in float32. The engine derived them in float64 and rounded once: other
  numbers than transformers' (a fifth of the elements equal; 20 ulps apart by position 64, 3e-4 by 16,384, where
  transformers' own float32 angle is that far from the exact one), so that every score of a long prompt was
  computed on other rotations than transformers', and a near tie could go the other way. rope_cache now computes
  transformers' own tables, element for element, for the plain rotation and the linear, dynamic and llama3 rules.
- Held ground (no difference found): exact ties in the scores (duplicated rows of the head, in a vocabulary
  picked in one pass and in one picked in two, the repetition penalty included), where run picks the first index
  as transformers' argmax does.

The table test failed before its fix (every case: a fifth to two fifths of the elements equal)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_text_round7 import PROMPT, checkpoint, ours  # noqa: E402

POSITIONS = 16384
LLAMA3 = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 512,
}
TABLES = {  # family, config arguments, config.json rope_scaling (None: the arguments' own rotation)
    "Llama, theta 10000 (an integer)": ("LlamaConfig", {"rope_theta": 10000}, None),
    "Qwen2, theta 1e6, head dim 64": ("Qwen2Config", {"rope_theta": 1000000.0, "head_dim": 64}, None),
    "Mistral, theta 500000, head dim 128": ("MistralConfig", {"rope_theta": 500000.0, "head_dim": 128}, None),
    "Llama, linear 2.5": ("LlamaConfig", {}, {"rope_type": "linear", "factor": 2.5}),
    "Llama, dynamic 5.3 within the context": ("LlamaConfig", {}, {"rope_type": "dynamic", "factor": 5.3}),
    "Llama, llama3": ("LlamaConfig", {"rope_theta": 500000.0}, LLAMA3),
}


@pytest.mark.parametrize("case", TABLES)
def test_rope_tables_are_transformers_own(tmp_path, case):
    """Before: a float64 derivation rounded once, a fifth to two fifths of the elements equal to transformers'."""
    from neurobrix.config import ModelConfig
    from neurobrix.ops import rope_cache

    family, args, scaling = TABLES[case]
    config = getattr(transformers, family)(
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=POSITIONS, **args
    )
    config.save_pretrained(tmp_path)
    data = json.loads((tmp_path / "config.json").read_text())
    if scaling is not None:
        data.pop("rope_parameters", None)
        data["rope_scaling"] = scaling
        (tmp_path / "config.json").write_text(json.dumps(data))
    config = transformers.AutoConfig.from_pretrained(tmp_path)
    model = transformers.AutoModelForCausalLM.from_config(config)
    rotary = model.model.rotary_emb
    cos, sin = rotary(torch.zeros(1, dtype=torch.float32), torch.arange(POSITIONS)[None])
    cfg = ModelConfig.from_hf(data)
    ours_cos, ours_sin = rope_cache(cfg.head_dim, cfg.rope_theta, POSITIONS, cfg.rope_scaling)
    half = cfg.head_dim // 2
    assert torch.equal(ours_cos, cos[0, :, :half]) and torch.equal(ours_sin, sin[0, :, :half])


# --- held ground: exact ties ---------------------------------------------------------------------------------------


def _theirs32(folder: Path) -> list[int]:
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    inputs = tok(PROMPT, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, do_sample=False)
    return out[0, inputs["input_ids"].shape[1] :].tolist()


TIES = {  # config arguments, generation_config.json
    "one-pass vocabulary, untied head": ({"vocab_size": 320}, {}),
    "one-pass vocabulary, repetition penalty": ({"vocab_size": 320}, {"repetition_penalty": 1.3}),
    "two-pass vocabulary (65,536), untied head": ({"vocab_size": 65536}, {}),
}


@pytest.mark.parametrize("case", TIES)
def test_exact_ties_go_to_the_first_index_as_in_transformers(tmp_path, monkeypatch, case):
    """transformers' greedy tokens (float32) with the rows of the tokens it picks copied to a lower id and to higher
    ones (in other parts of a two-pass pick): every step a tie, which argmax gives to the lowest id."""
    from safetensors.torch import load_file, save_file

    args, generation = TIES[case]
    folder = checkpoint(tmp_path / "m", args=args, generation={"eos_token_id": 9999, "max_new_tokens": 8, **generation})
    weights = load_file(folder / "model.safetensors")
    head = weights["lm_head.weight"]
    vocab = head.shape[0]
    head[320:] = 0  # rows past the tokenizer's vocabulary never picked but for the copies below
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    for n, token in enumerate(dict.fromkeys(_theirs32(folder))):
        head[10 + n], head[vocab - 1 - n], head[vocab // 2 + n] = head[token], head[token], head[token]
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    want = _theirs32(folder)
    assert any(t < 10 + 8 for t in want)  # the ties happen
    assert ours(folder, monkeypatch)[0] == want
