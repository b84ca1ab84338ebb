"""The eighteenth round of text parity: config.json and generation_config.json classes compared with transformers' own
generate on tiny random Llama, Mistral and Qwen2 checkpoints (round 7's: PyTorch's kernels, greedy in float64,
sampled in float32 after ``torch.manual_seed``).

- partial_rotary_factor with a scaled rotation (linear, dynamic, llama3): transformers' rule computes its frequencies
  over int(head_dim x factor) dims, 1 / theta^(2i / dim), and applies the tables to the whole head. Where that is one
  dim less than the head (0.97 of 16 dims: 15), the tables fit the head and transformers prints text with other
  frequencies; where it is the head's own (1.05 of 16), its text is the plain rule's. The engine refused every factor
  other than 1; it now computes the frequencies over those dims. Any other count gives tables of another width than
  the head's, on which transformers' attention fails: still refused, now saying so.
- Held ground (no difference found): rope_scaling over rope_parameters, "type" for "rope_type", a top-level
  original_max_position_embeddings for llama3, head_dim apart from hidden_size / heads, tied embeddings with an
  lm_head.weight in the file, padding rows past the tokenizer's vocabulary picked by greedy decoding, the repetition
  penalty with no_repeat_ngram_size, min_new_tokens with several eos ids, suppress_tokens with begin_suppress_tokens,
  sequence_bias with top-k and top-p sampling under a seed, max_new_tokens over max_length.

Each test of the first class failed before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_text_round7 import checkpoint, ours, theirs  # noqa: E402
from test_text_round12 import ours as sampled_ours  # noqa: E402
from test_text_round12 import sampled  # noqa: E402
from test_text_round13 import _import_refused, _no_text  # noqa: E402

GENERATION = {"eos_token_id": 9999, "max_new_tokens": 12}
LLAMA3 = {
    "rope_type": "llama3",
    "factor": 4.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 16,
}

# --- partial_rotary_factor with a scaled rotation -----------------------------------------------------------------

PARTIAL = {  # config.json fields (the tiny models' heads have 16 dims)
    "linear, 15 of 16 dims (top-level factor)": {
        "rope_scaling": {"rope_type": "linear", "factor": 2.0},
        "partial_rotary_factor": 0.97,
    },
    "linear, 16 of 16 dims": {"rope_scaling": {"rope_type": "linear", "factor": 2.0}, "partial_rotary_factor": 1.05},
    "llama3, 15 of 16 dims (the dict's factor)": {"rope_scaling": {**LLAMA3, "partial_rotary_factor": 0.97}},
    "dynamic, 15 of 16 dims": {
        "rope_scaling": {"rope_type": "dynamic", "factor": 2.0},
        "partial_rotary_factor": 0.97,
    },
}


@pytest.mark.parametrize("case", PARTIAL)
def test_a_partial_rotary_factor_whose_tables_fit_the_head_runs_as_transformers(tmp_path, monkeypatch, case):
    """Before: refused ("partial_rotary_factor 0.97 with linear rope scaling is not supported"), where transformers
    prints text: its frequencies computed over 15 dims, or the plain rule's over 16."""
    folder = checkpoint(tmp_path / "m", fields=PARTIAL[case], generation=GENERATION)
    assert ours(folder, monkeypatch)[:2] == theirs(folder)


@pytest.mark.parametrize("factor, dims", [(0.5, 8), (1.1, 17)])
def test_a_partial_rotary_factor_whose_tables_do_not_fit_is_refused_saying_why(
    tmp_path, monkeypatch, capsys, factor, dims
):
    """transformers' tables are 8 (18) wide for a 16-dim head, and its attention fails: refused at import by name.
    Before: refused without saying why."""
    fields = {"rope_scaling": {"rope_type": "linear", "factor": 2.0}, "partial_rotary_factor": factor}
    folder = checkpoint(tmp_path / "m", fields=fields, generation=GENERATION)
    _no_text(folder)
    _import_refused(folder, monkeypatch, capsys, f"partial_rotary_factor {factor} with linear rope scaling")
    _import_refused(folder, monkeypatch, capsys, f"over {dims} of the head's 16 dims")


# --- held ground ---------------------------------------------------------------------------------------------------


def _head_beside_tied_embeddings(folder: Path) -> None:
    from safetensors.torch import load_file, save_file

    weights = load_file(folder / "model.safetensors")
    g = torch.Generator().manual_seed(3)
    weights["lm_head.weight"] = torch.randn(weights["model.embed_tokens.weight"].shape, generator=g) * 0.2
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})


def _padding_rows_picked(folder: Path) -> None:
    """Rows 330 and 335 of a 352-row head (the tokenizer has 320 tokens) made the largest scores at some steps."""
    from safetensors.torch import load_file, save_file

    weights = load_file(folder / "model.safetensors")
    head = weights["lm_head.weight"]
    head[330:] = 0
    head[335], head[340] = head[283] * 5, head[89] * 5
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})


P = [283, 161, 289, 217, 154, 89]  # the base model's first greedy tokens
HELD = {  # family, transformers' config arguments, config.json fields, generation_config.json, a change to the weights
    "rope_scaling over rope_parameters": (
        "LlamaConfig",
        {},
        {
            "rope_scaling": {"type": "linear", "factor": 3.0},
            "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0},
        },
        GENERATION,
        None,
    ),
    "llama3, a top-level original context": (
        "LlamaConfig",
        {},
        {"original_max_position_embeddings": 16, "rope_scaling": {**LLAMA3, "original_max_position_embeddings": 64}},
        GENERATION,
        None,
    ),
    "Qwen2, head_dim apart from hidden_size / heads": ("Qwen2Config", {"head_dim": 32}, {}, GENERATION, None),
    "tied embeddings, an lm_head.weight in the file": (
        "LlamaConfig",
        {"tie_word_embeddings": True},
        {},
        GENERATION,
        _head_beside_tied_embeddings,
    ),
    "padding rows picked": ("LlamaConfig", {"vocab_size": 352}, {}, GENERATION, _padding_rows_picked),
    "repetition penalty and no_repeat_ngram_size": (
        "LlamaConfig",
        {},
        {},
        {**GENERATION, "repetition_penalty": 1.3, "no_repeat_ngram_size": 2},
        None,
    ),
    "min_new_tokens, several eos ids": (
        "LlamaConfig",
        {},
        {},
        {**GENERATION, "eos_token_id": [P[3], -1, P[5], 9999], "min_new_tokens": 5},
        None,
    ),
    "suppress and begin_suppress": (
        "LlamaConfig",
        {},
        {},
        {**GENERATION, "suppress_tokens": [P[1]], "begin_suppress_tokens": [P[0], P[1]]},
        None,
    ),
    "max_new_tokens over max_length": ("LlamaConfig", {}, {}, {**GENERATION, "max_length": 40}, None),
}


@pytest.mark.parametrize("case", HELD)
def test_config_and_generation_classes_held(tmp_path, monkeypatch, case):
    family, args, fields, generation, change = HELD[case]
    folder = checkpoint(tmp_path / "m", family, args=args, fields=fields, generation=generation)
    if change is not None:
        change(folder)
    assert ours(folder, monkeypatch)[:2] == theirs(folder)


def test_sequence_bias_with_top_k_and_top_p_sampling_held(tmp_path, monkeypatch):
    generation = {**GENERATION, "sequence_bias": [[[P[0]], 3.0], [[P[0], 50], -2.0]], "top_k": 7, "top_p": 0.8}
    folder = checkpoint(tmp_path / "m", generation=generation)
    assert sampled_ours(folder, monkeypatch, sample=True)[:2] == sampled(folder, top_k=7, top_p=0.8)
