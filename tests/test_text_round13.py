"""The thirteenth round of text parity: inputs with which transformers produces no text, or other text than the
engine printed.

- Generation settings transformers refuses: its GenerationConfig checks generation_config.json (or config.json's
  generation fields, without that file) as ``from_pretrained`` loads the model, and refuses an ``early_stopping``
  other than true, false or "never", an unknown ``cache_implementation``, an ``assistant_ensemble_weight`` outside
  (0, 1), a ``compile_config`` (no JSON value is the object it must be), a ``watermarking_config`` that is not an
  object, ``num_return_sequences`` above 1 without sampling or beams, ``num_beams`` other than 1 and not a whole
  number from 2 on (generate's beam search fails on it), a forced token it also suppresses, a
  ``pad_token_id`` it cannot compare with 0, and an argument of ``generate()`` itself written into the file;
  ``generate`` then fails on special-token ids it cannot make a tensor of, and on an empty eos list without a pad
  id. The engine printed text for each; `run` now refuses it in one line naming the field (exit 2).
- A max_new_tokens or max_length of the model's own reaching past its context, where transformers' generate runs on:
  the engine cut the run there with a note (a shorter text); it is refused, as ``--max-tokens`` reaching there is.
- A tokenizer_class transformers has code of its own for (Bert's, Gemma's, GPT-NeoX's, Cohere's...), declared by a
  Llama model: transformers encodes with that class's rules, the engine read tokenizer.json as it is (other ids);
  refused by name.
- Settings at values where transformers builds no processor (encoder_repetition_penalty 1, min_length or an n-gram
  size at 0 or below), which the engine refused for their type: they run.

Round 7's tiny random checkpoints are run through `neurobrix run` (PyTorch's kernels) and transformers' greedy
``generate`` in float64 (the tokenizers through both libraries directly); ids and text must be equal, or the engine
must refuse by name. Each test failed before its fix (the neighbours that still run beside the ones refused)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

from test_text_round7 import PLAIN, PROMPT, checkpoint, ours, theirs  # noqa: E402

GENERATION = {"eos_token_id": 9999, "max_new_tokens": 12}


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    return checkpoint(tmp_path_factory.mktemp("gen") / "base")


def refused(folder: Path, monkeypatch, capsys, named: str, *flags: str, also: str = "") -> None:
    """`neurobrix run` on the imported folder (with ``flags``) exits 2 with one line naming ``named`` (and saying
    ``also``), no traceback."""
    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(folder.parent / "home"))
    assert main(["import", str(folder)]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit:
        main(["run", "--model", folder.name, "--prompt", PROMPT, "--no-chat", "--backend", "torch", *flags])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert named in err and also in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def _no_text(folder: Path) -> None:
    """transformers loads the model or generates with an exception of its own (not a near tie of ``theirs``)."""
    with pytest.raises(Exception) as failed:
        theirs(folder)
    assert not isinstance(failed.value, AssertionError), failed.value


# --- generation settings transformers refuses ------------------------------------------------------------------

REFUSED = {
    "early_stopping not a flag": ({"early_stopping": "x"}, "early_stopping 'x'"),
    "unknown cache_implementation": ({"cache_implementation": "foo"}, "cache_implementation 'foo'"),
    "assistant_ensemble_weight outside (0, 1)": ({"assistant_ensemble_weight": 2.0}, "assistant_ensemble_weight 2.0"),
    "num_return_sequences, greedy": ({"num_return_sequences": 2}, "num_return_sequences 2"),
    "forced eos suppressed": ({"forced_eos_token_id": 7, "suppress_tokens": [7, 8]}, "forced_eos_token_id 7"),
    "forced bos suppressed": ({"forced_bos_token_id": 7, "suppress_tokens": [7]}, "forced_bos_token_id 7"),
    "suppress_tokens one id": ({"suppress_tokens": 5, "forced_bos_token_id": 7}, "suppress_tokens 5"),
    "num_beams text": ({"num_beams": "2"}, "num_beams '2'"),
    "num_beams 0": ({"num_beams": 0}, "num_beams 0"),
    "num_beams not whole": ({"num_beams": 2.0}, "num_beams 2.0"),
    "a generate() argument": ({"streamer": None}, "streamer"),
    "a compile_config": ({"compile_config": {"fullgraph": True}}, "compile_config {'fullgraph': True}"),
    "watermarking_config not an object": ({"watermarking_config": "x"}, "watermarking_config 'x'"),
    "pad_token_id text": ({"pad_token_id": "x"}, "pad_token_id 'x'"),
    "pad_token_id list": ({"pad_token_id": [1, 2]}, "pad_token_id [1, 2]"),
    "bos_token_id text": ({"bos_token_id": "1"}, "bos_token_id '1'"),
    "decoder_start_token_id object": ({"decoder_start_token_id": {"a": 1}}, "decoder_start_token_id {'a': 1}"),
    "bos_token_id ragged": ({"bos_token_id": [1, [2]]}, "bos_token_id [1, [2]]"),
    "empty eos list, no pad": ({"eos_token_id": []}, "eos_token_id []"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_generation_settings_transformers_refuses_are_refused_by_name(model_folder, monkeypatch, capsys, case):
    """Before: the engine printed the plain greedy text (or, with a forced token it also suppressed, a text ending
    in another token) where transformers' from_pretrained or generate raises."""
    setting, named = REFUSED[case]
    (model_folder / "generation_config.json").write_text(json.dumps({**GENERATION, **setting}))
    _no_text(model_folder)
    refused(model_folder, monkeypatch, capsys, named)


CONFIG_REFUSED = {
    "empty eos list": ({"eos_token_id": []}, "eos_token_id []"),
    "decoder_start_token_id text": ({"decoder_start_token_id": "x"}, "decoder_start_token_id 'x'"),
}


@pytest.mark.parametrize("case", CONFIG_REFUSED)
def test_config_json_generation_fields_transformers_refuses_are_refused(tmp_path, monkeypatch, capsys, case):
    """Without generation_config.json, generate takes config.json's generation fields, and fails on these."""
    fields, named = CONFIG_REFUSED[case]
    folder = checkpoint(tmp_path / "m", fields={**fields, "max_new_tokens": 12})
    _no_text(folder)
    refused(folder, monkeypatch, capsys, named)


RUNS = {
    "empty eos list with a pad id": {"eos_token_id": [], "pad_token_id": 0},
    "numbers torch takes as ids": {"pad_token_id": 1.5, "bos_token_id": 1.5, "decoder_start_token_id": [1, 2]},
    "a generate() argument in a file from a model config": {"streamer": None, "_from_model_config": True},
    "early_stopping never, one sequence, a known cache": {
        "early_stopping": "never",
        "num_return_sequences": 1,
        "cache_implementation": "dynamic",
        "assistant_ensemble_weight": 0.5,
    },
    "one of two forced eos ids suppressed": {
        "eos_token_id": [PLAIN[4], PLAIN[9]],
        "forced_eos_token_id": [PLAIN[4], PLAIN[9]],
        "suppress_tokens": [PLAIN[4]],
        "max_new_tokens": 6,
    },
}


@pytest.mark.parametrize("case", RUNS)
def test_their_neighbours_still_run_as_transformers(model_folder, monkeypatch, case):
    (model_folder / "generation_config.json").write_text(json.dumps({**GENERATION, **RUNS[case]}))
    assert ours(model_folder, monkeypatch)[:2] == theirs(model_folder)


# --- a token limit of the model's own past its context -------------------------------------------------------------


@pytest.mark.parametrize(
    "generation, named",
    [({"max_new_tokens": 12}, "max_new_tokens is 12"), ({"max_length": 50}, "max_length is 50 tokens")],
)
def test_a_models_token_limit_past_its_context_is_refused(tmp_path, monkeypatch, capsys, generation, named):
    """transformers' generate runs on past max_position_embeddings (40 here, the prompt 35 tokens) to the model's
    max_new_tokens or max_length, with a warning. Before: the engine cut the run at the context with a note, printing
    5 of transformers' 12 tokens; now it refuses, as it refuses a --max-tokens reaching that far."""
    folder = checkpoint(tmp_path / "m", args={"max_position_embeddings": 40}, generation={"eos_token_id": 9999})
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 9999, **generation}))
    assert len(theirs(folder)[0]) == (12 if "max_new_tokens" in generation else 15)
    refused(folder, monkeypatch, capsys, named, also="past the model's context of 40 tokens")


def test_a_models_token_limit_within_its_context_or_overridden_runs(tmp_path, monkeypatch):
    """The neighbours: a max_new_tokens that ends exactly at the context, and --max-tokens in place of a longer one."""
    folder = checkpoint(tmp_path / "m", args={"max_position_embeddings": 40}, generation={"eos_token_id": 9999})
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 9999, "max_new_tokens": 5}))
    assert ours(folder, monkeypatch)[:2] == theirs(folder)
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 9999, "max_new_tokens": 12}))
    assert ours(folder, monkeypatch, 4)[:2] == theirs(folder, max_new_tokens=4)


# --- a tokenizer class transformers builds itself --------------------------------------------------------------


@pytest.mark.parametrize(
    "kind, declared",
    [
        ("sentencepiece", "BertTokenizerFast"),
        ("metaspace", "GemmaTokenizerFast"),
        ("bytelevel", "GPTNeoXTokenizerFast"),
        ("wordpiece", "CohereTokenizer"),
    ],
)
def test_a_tokenizer_class_transformers_builds_its_own_way_is_refused(tmp_path, monkeypatch, capsys, kind, declared):
    """A Llama model whose tokenizer_config.json declares a class transformers 5 has its own code for (Bert's,
    Gemma's, GPT-NeoX's, Cohere's...) is encoded by that class: tokenizer.json's vocabulary under the class's own
    normalizer, pre-tokenizer and decoder. Before: the engine read tokenizer.json as it is, so the prompt's ids
    differed; now it refuses the class by name (it rebuilds Llama's, Code Llama's, Qwen2's and GPT-2's)."""
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer, TokenizerError

    folder = save(tmp_path / "m", kind)
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": declared}))
    text = "Hello world, the model runs fast. never guess a setting."
    hf = transformers.AutoTokenizer.from_pretrained(folder)
    assert type(hf).__name__ == declared.removesuffix("Fast")
    with pytest.raises(TokenizerError, match=f"tokenizer_class '{declared}'"):
        Tokenizer(folder)
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    assert Tokenizer(folder).encode_prompt(text, chat=False) != hf(text)["input_ids"]  # the text it would encode


@pytest.mark.parametrize(
    "declared", ["PreTrainedTokenizerFast", "TokenizersBackend", "LlamaTokenizerFast", "GPT2TokenizerFast"]
)
def test_the_tokenizer_classes_the_engine_builds_as_transformers_still_encode(tmp_path, declared):
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer

    for kind in ("sentencepiece", "bytelevel"):
        folder = save(tmp_path / kind, kind)
        (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
        config = json.loads((folder / "tokenizer_config.json").read_text())
        (folder / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": declared}))
        text = " leading space and\ttab, naïve café 🙂"
        want = transformers.AutoTokenizer.from_pretrained(folder)(text)["input_ids"]
        assert Tokenizer(folder).encode_prompt(text, chat=False) == want


# --- settings at values where transformers builds no processor -----------------------------------------------------


@pytest.mark.parametrize(
    "setting",
    [
        {"encoder_repetition_penalty": 1},
        {"min_length": 0.0},
        {"min_length": -2.5},
        {"no_repeat_ngram_size": -1.0},
        {"encoder_no_repeat_ngram_size": False},
    ],
)
def test_a_setting_transformers_builds_no_processor_for_is_not_refused_for_its_type(model_folder, monkeypatch, setting):
    """transformers' generate builds the processor of encoder_repetition_penalty only where it is not 1.0, and those
    of min_length and the n-gram sizes only above 0: there it checks the type (a float, an integer), elsewhere it
    reads nothing. Before: the engine refused these values for their type, where transformers prints the plain text."""
    (model_folder / "generation_config.json").write_text(json.dumps({**GENERATION, **setting}))
    assert ours(model_folder, monkeypatch)[:2] == theirs(model_folder) == (PLAIN, theirs(model_folder)[1])


# --- config.json's implementation and dtype names transformers refuses ---------------------------------------------


def _import_refused(folder: Path, monkeypatch, capsys, named: str) -> None:
    """`neurobrix import` refuses the folder (exit 2, as every config.json refusal) naming ``named``; nothing stored."""
    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(folder.parent / "home"))
    capsys.readouterr()  # what building the checkpoint printed
    with pytest.raises(SystemExit) as exit:
        main(["import", str(folder)])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not list((folder.parent / "home" / "models").glob("*"))


@pytest.mark.parametrize(
    "fields, named",
    [
        ({"attn_implementation": "foo"}, "attn_implementation 'foo'"),
        ({"attn_implementation": "paged|foo"}, "attn_implementation 'paged|foo'"),
        ({"attn_implementation": "paged|eager"}, "attn_implementation 'paged|eager'"),
        ({"experts_implementation": "foo"}, "experts_implementation 'foo'"),
        ({"experts_implementation": "grouped_mm"}, "experts_implementation 'grouped_mm'"),
        ({"dtype": None, "torch_dtype": "bogus"}, "torch_dtype 'bogus'"),
        ({"dtype": "float17", "torch_dtype": "float16"}, "dtype 'float17'"),
    ],
)
def test_implementation_and_dtype_names_transformers_refuses_are_refused(tmp_path, monkeypatch, capsys, fields, named):
    """config.json's attn_implementation and experts_implementation pick transformers' code for attention and MoE
    experts (a dense model takes only "eager" there), and its dtype (torch_dtype in older files) names a torch dtype:
    transformers refuses a name it does not know before building the model ("paged|eager", its paged attention, it
    runs to other text in generate). Before: the engine ran each file as if the field were not there."""
    folder = checkpoint(tmp_path / "m", fields=fields, generation=GENERATION)
    if fields.get("attn_implementation") == "paged|eager":  # transformers' paged attention: other text
        assert theirs(folder)[0] != PLAIN
    else:
        _no_text(folder)
    _import_refused(folder, monkeypatch, capsys, named)


def test_implementation_and_dtype_names_transformers_takes_still_run(tmp_path, monkeypatch):
    fields = {"attn_implementation": "paged|sdpa", "experts_implementation": "eager", "dtype": "float32"}
    folder = checkpoint(tmp_path / "m", fields={**fields, "torch_dtype": "bogus"}, generation=GENERATION)
    assert ours(folder, monkeypatch)[:2] == theirs(folder)  # dtype wins over torch_dtype
