"""The sixteenth round of text parity: forced_eos_token_id read as transformers' processor reads it, and config.json
values with which transformers 5 builds no model, or runs one the engine does not.

- forced_eos_token_id: ForcedEOSTokenLogitsProcessor makes ``torch.tensor`` of it (an id alone as a list of one) and
  indexes the scores with that tensor at the last step, so [true, 7] forces the ids 1 and 7 (a tie at 0 there, which
  greedy decoding takes as argmax does: the first, unless a later processor such as suppress_tokens breaks it), and
  [[7]] forces 7. The engine refused every value holding a bool or a list; it now reads the tensor, and refuses what
  the processor fails on (true or false alone, a boolean mask of another length than the vocabulary).
- layer_types: transformers 5's config refuses a list whose length is not num_hidden_layers, or that names a kind it
  does not know; its cache builds other layers for the kinds it knows besides full, sliding and chunked attention
  (a linear-attention state, none at all) and fails there, and a Llama layer marked sliding (chunked) without the
  file's sliding_window (attention_chunk_size) fails in its cache. The engine ran each with full attention.
  ("attention", the older name transformers reads as full_attention, still runs.)
- LlamaConfig's initializer_range is an interval, [0, 1]: transformers refuses the model outside it.
- An odd head dim: transformers' config refuses one above 4 (RoPE rotates pairs), and its rotary fails on 3; the
  engine imported such a model and failed in its rotary kernel at the first run. It is refused at import by name.
- Dynamic rope scaling with a head dim of 2: transformers' NTK rule divides by dim - 2 as it builds the model.

Round 7's tiny random checkpoints are run through `neurobrix run` (PyTorch's kernels) and transformers' greedy
``generate`` in float64. Each test failed before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_text_round7 import MARGIN, PLAIN, PROMPT, checkpoint, ours, theirs  # noqa: E402
from test_text_round13 import _import_refused, _no_text, refused  # noqa: E402

GENERATION = {"eos_token_id": 9999, "max_new_tokens": 12}


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    return checkpoint(tmp_path_factory.mktemp("gen") / "base")


def _config(folder: Path, **fields) -> Path:
    data = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**data, **fields}))
    return folder


# --- forced_eos_token_id as the processor's tensor -----------------------------------------------------------------


def forced_theirs(folder: Path) -> tuple[list[int], str]:
    """transformers' greedy generate as ``theirs``, its margin checked at every step but the forced one, where the
    forced ids tie at 0 (greedy takes the first, as torch.argmax does)."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64).eval()
    inputs = tok(PROMPT, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, do_sample=False, output_scores=True, return_dict_in_generate=True)
    for step, scores in enumerate(out.scores[:-1]):
        top = torch.topk(scores[0].double(), 2).values
        assert float(top[0] - top[1]) > MARGIN, f"step {step}: a near tie"
    new = out.sequences[0, inputs["input_ids"].shape[1] :].tolist()
    return new, tok.decode(new, skip_special_tokens=True)


FORCED = {  # the setting, and the id transformers' processor leaves the last step (the first of a tie at 0)
    "true beside an id: a tie at 0": ({"forced_eos_token_id": [True, PLAIN[3]]}, 1),
    "a nested list": ({"forced_eos_token_id": [[PLAIN[3]]]}, PLAIN[3]),
    "a nested list, true after the id": ({"forced_eos_token_id": [[PLAIN[3], True]]}, 1),
    "the tie broken by suppress_tokens": ({"forced_eos_token_id": [True, PLAIN[3]], "suppress_tokens": [1]}, PLAIN[3]),
}


@pytest.mark.parametrize("case", FORCED)
def test_forced_eos_ids_are_the_tensor_the_processor_indexes_with(model_folder, monkeypatch, case):
    """Before: refused ("forced_eos_token_id must be a token id or a list of ids") where transformers forces 1 (the
    tie between 1 and the id, which greedy decoding breaks as argmax does) or the id."""
    setting, forced = FORCED[case]
    (model_folder / "generation_config.json").write_text(json.dumps({**GENERATION, **setting}))
    want = forced_theirs(model_folder)
    assert want[0][:-1] == PLAIN[:-1] and want[0][-1] == forced
    assert ours(model_folder, monkeypatch)[:2] == want


@pytest.mark.parametrize("forced", [True, [True, False]])
def test_forced_eos_bools_alone_are_refused_as_a_mask(model_folder, monkeypatch, capsys, forced):
    """true or false alone make a boolean tensor, which indexes the scores as a mask of the wrong length: transformers
    fails at the forced step. Before: refused for another reason ("must be a token id or a list of ids"). Since text
    round 37 refused at that step (the last of 12), where it fails (a run ending before prints its text)."""
    (model_folder / "generation_config.json").write_text(json.dumps({**GENERATION, "forced_eos_token_id": forced}))
    _no_text(model_folder)
    named = f"forced_eos_token_id {forced!r}"
    # --max-tokens and --no-stream: no note before the refusal's one line
    refused(
        model_folder, monkeypatch, capsys, named, "--max-tokens", "12", "--no-stream", also="takes true and false alone"
    )


# --- config.json values transformers builds no model from --------------------------------------------------------

LAYER_TYPES = {
    "fewer kinds than layers": ("LlamaConfig", {"layer_types": ["full_attention"]}, "layer_types names 1 layer,"),
    "a kind transformers does not know": (
        "LlamaConfig",
        {"layer_types": ["global", "full_attention"]},
        "layer_types 'global' is not supported",
    ),
    "a linear-attention layer": (
        "LlamaConfig",
        {"layer_types": ["linear_attention", "full_attention"]},
        "layer_types 'linear_attention' is not supported",
    ),
    "a kind Qwen2's masks do not know": (
        "Qwen2Config",
        {"layer_types": ["hybrid", "full_attention"]},
        "layer_types 'hybrid' is not supported",
    ),
    "a sliding Llama layer without a window": (
        "LlamaConfig",
        {"layer_types": ["sliding_attention", "full_attention"]},
        "marks sliding_attention layers but sliding_window is missing",
    ),
    "a chunked Llama layer with a null chunk": (
        "LlamaConfig",
        {"layer_types": ["full_attention", "chunked_attention"], "attention_chunk_size": None},
        "marks chunked_attention layers but attention_chunk_size is null",
    ),
}


@pytest.mark.parametrize("case", LAYER_TYPES)
def test_layer_types_transformers_refuses_or_fails_on_are_refused(tmp_path, monkeypatch, capsys, case):
    """Before: the engine ran each with full attention on every layer, where transformers' config refuses the list or
    its cache or masks fail."""
    family, fields, named = LAYER_TYPES[case]
    folder = _config(checkpoint(tmp_path / "m", family, generation=GENERATION), **fields)
    _no_text(folder)
    _import_refused(folder, monkeypatch, capsys, named)
    # the older name of full attention, which transformers reads as full_attention, runs as before
    _config(folder, layer_types=["attention", "full_attention"], attention_chunk_size=None)
    assert ours(folder, monkeypatch)[:2] == theirs(folder)


def test_an_initializer_range_outside_llamas_interval_is_refused(tmp_path, monkeypatch, capsys):
    """Before: the engine ran it (the field changes no weight of a saved model), where LlamaConfig refuses it."""
    folder = checkpoint(tmp_path / "m", fields={"initializer_range": 1.5}, generation=GENERATION)
    _no_text(folder)
    _import_refused(folder, monkeypatch, capsys, "initializer_range 1.5 is outside [0, 1]")


def _with_head_dim(folder: Path, head_dim: int) -> Path:
    """The folder's model with heads of ``head_dim``: random weights of the engine's shapes (transformers saves no
    such model)."""
    import dataclasses

    from safetensors.torch import save_file

    from neurobrix.config import ModelConfig, checkpoint_shapes

    cfg = dataclasses.replace(ModelConfig.from_hf(json.loads((folder / "config.json").read_text())), head_dim=head_dim)
    g = torch.Generator().manual_seed(0)
    weights = {k: torch.randn(s, generator=g) * 0.2 for k, s in checkpoint_shapes(cfg).items()}
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    return _config(folder, head_dim=head_dim)


@pytest.mark.parametrize("head_dim", [15, 3])
def test_an_odd_head_dim_is_refused_at_import(tmp_path, monkeypatch, capsys, head_dim):
    """transformers' config refuses an odd head dim above 4, and its rotary fails on 3 (cos and sin one dim wider
    than the head). Before: the engine imported the model, and failed in its rotary kernel at the first run."""
    folder = _with_head_dim(checkpoint(tmp_path / "m", generation=GENERATION), head_dim)
    _no_text(folder)
    _import_refused(folder, monkeypatch, capsys, f"head dim {head_dim} is odd")


def test_dynamic_rope_on_a_head_dim_of_2_is_refused(tmp_path, monkeypatch, capsys):
    """transformers' dynamic NTK rule raises its base to dim / (dim - 2) as it builds the rotary embedding. Before:
    the engine ran it (up to the context, dynamic scaling is the plain rotation), where transformers has no model."""
    fields = {"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}
    folder = checkpoint(tmp_path / "m", args={"head_dim": 2}, fields=fields, generation=GENERATION)
    _no_text(folder)
    _import_refused(folder, monkeypatch, capsys, "dynamic rope scaling with a head dim of 2")
