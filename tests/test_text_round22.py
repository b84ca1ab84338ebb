"""The twenty-second round of text parity: the model's computation and its config.json reading, compared with
transformers' greedy ``generate`` on tiny random Llama, Mistral and Qwen2 checkpoints (round 7's helpers: PyTorch's
kernels for the way from the files to the text; the kernels themselves were probed on the interpreter).

- Rope parameters keyed by layer type: transformers' config reads a ``rope_parameters`` (or ``rope_scaling``) dict
  holding a key that is one of the config's layer types ("full_attention", "sliding_attention", "attention") as one
  dict per layer type. Qwen2Config has its layer_types by then (the file's, else those its window gives), and so
  has a mistral file with ``layer_types`` (Ministral's); it then fills type and theta in only the nested dicts, and
  its rotary embedding, which reads the top-level fields, fails (KeyError 'rope_type'). `run` printed the plain
  rotation's text; such a file is now refused at import naming the layer type and the missing field. Where the top
  level has its own type and theta, transformers runs on them, and so does `run` (held).

The refusal tests failed before their fix (import stored the model, run printed text)."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

from test_text_round7 import checkpoint, ours, theirs  # noqa: E402
from test_text_round13 import _import_refused, _no_text  # noqa: E402

GENERATION = {"eos_token_id": 9999, "max_new_tokens": 8}
ROPE = {"rope_type": "default", "rope_theta": 100.0}
FULL = ["full_attention", "full_attention"]

NESTED = {  # family, config.json fields, the layer type named
    "Qwen2, rope_parameters keyed by its saved layer type": (
        "Qwen2Config",
        {"rope_parameters": {"full_attention": ROPE}},
        "'full_attention'",
    ),
    "Qwen2, rope_scaling keyed by a layer type its window gives": (
        "Qwen2Config",
        {"layer_types": None, "rope_scaling": {"full_attention": ROPE}},
        "'full_attention'",
    ),
    "Ministral (mistral with layer_types), keyed by sliding_attention": (
        "MistralConfig",
        {
            "layer_types": ["sliding_attention"] * 2,
            "sliding_window": 4096,
            "rope_parameters": {"sliding_attention": ROPE},
        },
        "'sliding_attention'",
    ),
}


@pytest.mark.parametrize("case", NESTED)
def test_rope_parameters_keyed_by_layer_type_are_refused_as_transformers_fails(tmp_path, monkeypatch, capsys, case):
    """Before: imported, and run printed the plain rotation's text (theta 10,000); transformers' rotary embedding
    fails on the dict (no top-level rope_type)."""
    family, fields, named = NESTED[case]
    folder = checkpoint(tmp_path / "m", family, fields=fields, generation=GENERATION)
    _no_text(folder)
    _import_refused(folder, monkeypatch, capsys, f"rope parameters are keyed by layer type ({named})")


# --- held ground ---------------------------------------------------------------------------------------------------

HELD = {  # family, config arguments, config.json fields
    "Qwen2, a nested dict beside top-level type and theta": (
        "Qwen2Config",
        {},
        {"rope_parameters": {"full_attention": ROPE, "rope_type": "default", "rope_theta": 100.0}},
    ),
    "Qwen2, a key of a layer type the model does not have": (
        "Qwen2Config",
        {},
        {"rope_parameters": {"sliding_attention": ROPE}},
    ),
    "Llama, keyed by a layer type (LlamaConfig reads it flat)": (
        "LlamaConfig",
        {},
        {"layer_types": FULL, "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 2.0}}},
    ),
    "GQA ratio 3, head dim apart from hidden / heads": (
        "LlamaConfig",
        {"hidden_size": 48, "num_attention_heads": 6, "num_key_value_heads": 2, "head_dim": 12},
        None,
    ),
    "Mistral, GQA ratio 5": (
        "MistralConfig",
        {"num_attention_heads": 10, "num_key_value_heads": 2, "hidden_size": 80},
        None,
    ),
    "Qwen2, one kv head, vocabulary 333, tied": (
        "Qwen2Config",
        {"num_key_value_heads": 1, "vocab_size": 333, "tie_word_embeddings": True},
        None,
    ),
    "Llama, rms_norm_eps 0 and swish": ("LlamaConfig", {"rms_norm_eps": 0.0}, {"hidden_act": "swish"}),
    "Llama, default rotation with partial_rotary_factor (unused there)": (
        "LlamaConfig",
        {},
        {"partial_rotary_factor": 0.5},
    ),
    "dynamic at a context that is no power of two": (
        "LlamaConfig",
        {"max_position_embeddings": 77},
        {"rope_scaling": {"rope_type": "dynamic", "factor": 5.3}},
    ),
}


@pytest.mark.parametrize("case", HELD)
def test_model_variants_print_transformers_text(tmp_path, monkeypatch, case):
    family, args, fields = HELD[case]
    folder = checkpoint(tmp_path / "m", family, args=args, fields=fields, generation=GENERATION)
    assert ours(folder, monkeypatch)[:2] == theirs(folder)
