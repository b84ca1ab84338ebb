"""The thirty-ninth round, on generation_config.json settings the engine does not apply and did not read, fuzzed
against transformers' greedy ``generate`` (every GenerationConfig field with values of every JSON kind, on round 7's
tiny random checkpoint, PyTorch's kernels). The engine read only the settings it applies or names in a note; where
transformers' generate fails on a setting the engine ignores, or reads one otherwise, `run` printed greedy text:

- a ``use_cache`` of 0, "" , [] or {} (neither true nor false): transformers builds its KV cache (only false turns it
  off) yet feeds the whole sequence every step, computing other text; now refused naming it (exit 2);
- settings generate fails on as it picks or runs its decoding: a ``top_k`` or ``penalty_alpha`` that is no number
  (compared with 1 and 0), an ``assistant_early_exit`` that is no integer >= 0, a ``prompt_lookup_num_tokens`` below 1
  or fractional (and its ``max_matching_ngram_size``), a ``prefill_chunk_size`` that is no integer >= 1 or set with
  ``use_cache`` false; now refused naming the field (exit 2). A ``top_k`` of text beside a ``penalty_alpha`` ended
  `run` in a TypeError traceback (the note's own test compared it);
- ``constraints`` or ``force_words_ids`` of [] or 0, which make transformers' generate take constrained beam search (it
  tests ``is not None``, then loads that code from the hub or refuses), were not even named: now in the note, as
  their other values were; and a ``penalty_alpha`` of 0 or less, with which transformers decodes greedily, is no
  longer named as unapplied.

The same fuzz over config.json's fields (LlamaConfig's and Qwen2Config's, values of every JSON kind) found three
fields the engine did not read: of transformers' base config, an ``id2label`` that is no object keyed by integers
(its config fails reading it) and an ``is_encoder_decoder`` that is true (its generate decodes as an encoder-decoder
model and fails); and Qwen2's ``sliding_window`` of another type than an integer or null while use_sliding_window is
false (Qwen2Config's validation refuses it); each is refused by `import` and `run` now, naming the field (exit 2).

Each test that says "before" failed before its fix; the controls (valid values, which transformers runs to the
engine's text) pass either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

from test_text_round7 import PROMPT, checkpoint, ours, theirs  # noqa: E402

BASE = {"eos_token_id": 9999, "max_new_tokens": 6}
# what transformers' generate raises (its config's validation raises huggingface_hub's own error)
FAILED = (
    TypeError,
    ValueError,
    RuntimeError,
    pytest.importorskip("huggingface_hub.errors").StrictDataclassFieldValidationError,
)


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    return checkpoint(tmp_path_factory.mktemp("gen39") / "base")


def _settings(folder: Path, setting: dict) -> None:
    (folder / "generation_config.json").write_text(json.dumps({**BASE, **setting}))


def _refused(folder: Path, monkeypatch, capsys, named: str) -> str:
    """`neurobrix run` exits 2 with one line naming ``named``, no text and no traceback; the line."""
    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(folder.parent / "home"))
    assert main(["import", str(folder)]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit:
        main(["run", "--model", folder.name, "--prompt", PROMPT, "--no-chat", "--backend", "torch"])
    out, err = capsys.readouterr()
    assert exit.value.code == 2 and out == "" and "Traceback" not in err, (exit.value.code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], err
    return lines[0]


FAILS = {  # transformers' generate raises on each (checked below), as it picks its decoding or runs it
    "top_k text": ({"top_k": "x"}, "top_k 'x'"),
    "penalty_alpha text": ({"penalty_alpha": "x"}, "penalty_alpha 'x'"),
    "assistant_early_exit -1": ({"assistant_early_exit": -1}, "assistant_early_exit -1"),
    "assistant_early_exit true": ({"assistant_early_exit": True}, "assistant_early_exit True"),
    "prompt_lookup_num_tokens 0": ({"prompt_lookup_num_tokens": 0}, "prompt_lookup_num_tokens 0"),
    "prompt_lookup_num_tokens 1.5": ({"prompt_lookup_num_tokens": 1.5}, "prompt_lookup_num_tokens 1.5"),
    "max_matching_ngram_size 1.5": (
        {"prompt_lookup_num_tokens": 2, "max_matching_ngram_size": 1.5},
        "max_matching_ngram_size 1.5",
    ),
    "prefill_chunk_size 0": ({"prefill_chunk_size": 0}, "prefill_chunk_size 0"),
    "prefill_chunk_size true": ({"prefill_chunk_size": True}, "prefill_chunk_size True"),
    "prefill_chunk_size without a cache": ({"prefill_chunk_size": 4, "use_cache": False}, "use_cache false"),
}


@pytest.mark.parametrize("case", FAILS)
def test_a_setting_transformers_generate_fails_on_is_refused_by_name(model_folder, monkeypatch, capsys, case):
    """Before: `run` printed greedy text, with no note (the engine never read these fields)."""
    setting, named = FAILS[case]
    _settings(model_folder, setting)
    with pytest.raises(FAILED):  # transformers prints no text
        theirs(model_folder)
    line = _refused(model_folder, monkeypatch, capsys, named)
    assert "transformers" in line


@pytest.mark.parametrize("value", [0, ""])
def test_a_use_cache_neither_true_nor_false_is_refused_where_transformers_computes_other_text(
    model_folder, monkeypatch, capsys, value
):
    """Before: `run` printed the cached decode's text; transformers' generate, building its cache for a value that is
    not false and running the model as for one that is not true, prints other text (computed here)."""
    _settings(model_folder, {"use_cache": False})
    plain = theirs(model_folder)
    assert ours(model_folder, monkeypatch)[:2] == plain  # false: no cache, the same text
    _settings(model_folder, {"use_cache": value})
    assert theirs(model_folder) != plain
    _refused(model_folder, monkeypatch, capsys, f"use_cache {value!r}")


def test_a_top_k_of_text_beside_penalty_alpha_is_refused_not_a_traceback(model_folder, monkeypatch, capsys):
    """Before: the note's test of contrastive search compared the top_k "x" with 1 itself: a TypeError traceback out of
    `run` (exit 1), where transformers' generate fails in the same comparison."""
    _settings(model_folder, {"penalty_alpha": 0.5, "top_k": "x"})
    with pytest.raises(TypeError):
        theirs(model_folder)
    _refused(model_folder, monkeypatch, capsys, "top_k 'x'")


@pytest.mark.parametrize("setting", [{"constraints": []}, {"force_words_ids": 0}])
def test_constrained_beam_search_settings_that_read_as_false_are_named(model_folder, monkeypatch, setting):
    """Before: no note (the engine took [] and 0 for no setting); transformers' generate takes constrained beam search
    for any value but null, loading it from the hub or refusing (checked), as for the settings' other values."""
    _settings(model_folder, setting)
    with pytest.raises(ValueError, match="trust_remote_code"):
        theirs(model_folder)
    notes = ours(model_folder, monkeypatch)[2]
    name = next(iter(setting))
    assert any(f"{name}={setting[name]!r}" in note and "does not apply" in note for note in notes), notes


def test_a_penalty_alpha_of_zero_or_less_is_greedy_and_not_named(model_folder, monkeypatch):
    """Before: a note named penalty_alpha -1 as unapplied; transformers' generate takes contrastive search only above
    0, so its text is the greedy one, which the engine prints."""
    _settings(model_folder, {"penalty_alpha": -1})
    ids, text, notes = ours(model_folder, monkeypatch)
    assert (ids, text) == theirs(model_folder)
    assert not any("penalty_alpha" in note for note in notes), notes


@pytest.mark.parametrize(
    "setting",
    [
        {"assistant_early_exit": 0, "prefill_chunk_size": 4, "use_cache": True},
        {"prompt_lookup_num_tokens": True, "max_matching_ngram_size": 0, "top_k": 1.5},
    ],
)
def test_valid_values_still_run_to_transformers_text(model_folder, monkeypatch, setting):
    """Controls: values transformers' generate takes (an early exit at 0 layers, chunks of 4 prompt tokens, prompt
    lookup of true tokens, 0 for its n-gram size's default, a fractional top_k) give its greedy text, unrefused."""
    _settings(model_folder, setting)
    assert ours(model_folder, monkeypatch)[:2] == theirs(model_folder)


# --- config.json: fields of transformers' base config the engine did not read -------------------------------------

CONFIG_FAILS = {  # transformers builds no model, or its generate fails (checked below)
    "id2label a list": ({"id2label": []}, "'id2label'"),
    "id2label keyed by text": ({"id2label": {"a": "x"}}, "'id2label'"),
    "is_encoder_decoder true": ({"is_encoder_decoder": True}, "is_encoder_decoder True"),
    "is_encoder_decoder 1.5": ({"is_encoder_decoder": 1.5}, "is_encoder_decoder 1.5"),
    # Qwen2Config types its window an integer or null, read or not (use_sliding_window false: the engine never read it)
    "qwen2 sliding_window 1.5": ({"sliding_window": 1.5}, "'sliding_window' is 1.5"),
}


@pytest.mark.parametrize("case", CONFIG_FAILS)
def test_a_config_json_transformers_cannot_generate_from_is_refused_at_import(tmp_path, monkeypatch, capsys, case):
    """Before: imported, and `run` printed greedy text. transformers' config reads id2label as {int(key): value} of an
    object (an AttributeError or ValueError otherwise), and its generate takes any true is_encoder_decoder for an
    encoder-decoder model (no decoder start token here: a ValueError). Now `import` (as `run`) refuses it, exit 2."""
    from neurobrix.cli import main

    fields, named = CONFIG_FAILS[case]
    family = "Qwen2Config" if case.startswith("qwen2") else "LlamaConfig"
    folder = checkpoint(tmp_path / "m", family, fields=fields, generation=BASE)
    with pytest.raises(FAILED + (AttributeError,)):
        theirs(folder)
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    with pytest.raises(SystemExit) as exit:
        main(["import", str(folder)])
    err = capsys.readouterr().err
    assert exit.value.code == 2 and named in err and "Traceback" not in err, err


def test_config_json_label_and_encoder_fields_transformers_takes_run_to_its_text(tmp_path, monkeypatch):
    """Control: labels keyed by integers as text, is_encoder_decoder false and an unused window of -1 (an integer, as
    Qwen2Config types it) give transformers' text."""
    fields = {"id2label": {"0": "a", "1": "b"}, "is_encoder_decoder": False, "sliding_window": -1}
    folder = checkpoint(tmp_path / "m", "Qwen2Config", fields=fields, generation=BASE)
    assert ours(folder, monkeypatch)[:2] == theirs(folder)
