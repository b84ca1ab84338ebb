"""The way from a checkpoint folder to a model and its text, where bugs planted in it went unnoticed: config.json's
defaults and rope fields, the tokenizer's files, the weights' dtype and head, the store, and `run`'s end of text.
Each test failed with one such bug and passes without it (which bug: its docstring); the truth is transformers
reading the same files, computed here."""

from __future__ import annotations

import copy
import json

import pytest
import torch

from neurobrix.config import ConfigError, ModelConfig

transformers = pytest.importorskip("transformers")

SMALL = {
    "hidden_size": 64,
    "intermediate_size": 32,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 10,
}
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}

# config.json files as the Hub holds them, every field the test reads left to transformers' config class where
# the file leaves it out (tie_word_embeddings is in none of them)
CONFIGS = {
    # no rope field at all (Llama 1/2 conversions): transformers' default theta of 10,000
    "llama-no-rope-fields": {"model_type": "llama", "num_hidden_layers": 1, "max_position_embeddings": 64},
    # transformers 5's form: theta inside rope_parameters, with and without llama3 scaling
    "llama-rope-parameters": {
        "model_type": "llama",
        "num_hidden_layers": 1,
        "max_position_embeddings": 64,
        "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0},
    },
    "llama3-rope-parameters": {
        "model_type": "llama",
        "num_hidden_layers": 1,
        "max_position_embeddings": 64,
        "rope_parameters": {**LLAMA3, "rope_theta": 500000.0, "original_max_position_embeddings": 16},
    },
    # llama3 scaling without its original context: transformers takes max_position_embeddings
    "llama3-no-original-context": {
        "model_type": "llama",
        "num_hidden_layers": 1,
        "max_position_embeddings": 64,
        "rope_scaling": dict(LLAMA3),
        "rope_theta": 500000.0,
    },
    # both forms at once: rope_scaling wins, with the top-level theta; rope_parameters naming its kind as "type"
    "llama3-rope-scaling-over-rope-parameters": {
        "model_type": "llama",
        "num_hidden_layers": 1,
        "max_position_embeddings": 64,
        "rope_scaling": {**LLAMA3, "original_max_position_embeddings": 16},
        "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0},
        "rope_theta": 20000.0,
    },
    "llama3-rope-parameters-type-key": {
        "model_type": "llama",
        "num_hidden_layers": 1,
        "max_position_embeddings": 64,
        "rope_parameters": {
            "type": "llama3",
            **{k: v for k, v in LLAMA3.items() if k != "rope_type"},
            "rope_theta": 500000.0,
            "original_max_position_embeddings": 16,
        },
    },
    # Qwen2 with the window on and max_window_layers at its default of 28: a 28-layer model has no sliding layer,
    # a 29-layer one has one
    "qwen2-28-layers-window-default": {"model_type": "qwen2", "num_hidden_layers": 28, "use_sliding_window": True},
    "qwen2-29-layers-window-default": {"model_type": "qwen2", "num_hidden_layers": 29, "use_sliding_window": True},
    "qwen2-29-layers-window-off": {"model_type": "qwen2", "num_hidden_layers": 29},  # use_sliding_window: false
    # the window on from the last layer only
    "qwen2-window-on-the-last-layer": {
        "model_type": "qwen2",
        "num_hidden_layers": 3,
        "use_sliding_window": True,
        "max_window_layers": 2,
        "sliding_window": 5,
    },
    "mistral-bare": {"model_type": "mistral", "num_hidden_layers": 1},
}


def their_reading(data: dict) -> dict:
    """What transformers' config class reads from ``data``, in the engine's terms."""
    theirs = transformers.AutoConfig.for_model(**copy.deepcopy(data))
    rope = dict(theirs.rope_parameters)
    types = getattr(theirs, "layer_types", None) or []
    sliding = data["model_type"] == "mistral" or "sliding_attention" in types
    return {
        "rope_theta": rope["rope_theta"],
        "rope_scaling": None
        if rope.get("rope_type", "default") == "default"
        else {
            k: v
            for k, v in rope.items()
            if k in ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
        },
        "tie_word_embeddings": theirs.tie_word_embeddings,
        "sliding_window": theirs.sliding_window if sliding else None,
        "max_positions": theirs.max_position_embeddings,
    }


@pytest.mark.parametrize("variant", sorted(CONFIGS))
def test_rope_ties_and_windows_are_read_as_transformers_reads_them(variant):
    """Planted: the default rope_theta 500,000 instead of transformers' 10,000; rope_parameters' theta or its
    llama3 scaling ignored (transformers 5's config.json form); tie_word_embeddings defaulting to true; Qwen2's
    max_window_layers default 27 instead of 28; use_sliding_window taken as on where the file leaves it out;
    the sliding layers counted from past max_window_layers instead of from it. Each leaves a field the text
    depends on other than transformers' reading of the same config.json. (Two variants held a real divergence:
    rope_parameters' theta taken over rope_scaling's and the top-level one, and rope_parameters' "type" key
    ignored.)"""
    data = {**SMALL, **CONFIGS[variant]}
    ours = ModelConfig.from_hf(copy.deepcopy(data))
    scaling = ours.rope_scaling
    got = {
        "rope_theta": ours.rope_theta,
        "rope_scaling": None
        if scaling is None
        else {k: v for k, v in scaling.items() if k not in ("rope_type", "type")},
        "tie_word_embeddings": ours.tie_word_embeddings,
        "sliding_window": ours.sliding_window,
        "max_positions": ours.max_positions,
    }
    assert got == their_reading(data)


def test_llama3_scaling_without_its_original_context_builds_transformers_frequencies():
    """A llama3 rope_scaling that leaves out original_max_position_embeddings: transformers takes the model's
    max_position_embeddings; the engine's rope tables raised a KeyError building the model. Its cos/sin tables
    are now transformers' rotary embedding's, position by position."""
    from neurobrix.ops import rope_cache

    data = {**SMALL, **CONFIGS["llama3-no-original-context"]}
    ours = ModelConfig.from_hf(copy.deepcopy(data))
    theirs = transformers.AutoConfig.for_model(**copy.deepcopy(data))
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    rotary = LlamaRotaryEmbedding(theirs)
    positions = torch.arange(64)[None]
    cos, sin = rotary(torch.zeros(1, dtype=torch.float64), positions)
    our_cos, our_sin = rope_cache(ours.head_dim, ours.rope_theta, 64, ours.rope_scaling)
    half = ours.head_dim // 2
    assert torch.allclose(our_cos, cos[0, :, :half].float(), atol=1e-5)
    assert torch.allclose(our_sin, sin[0, :, :half].float(), atol=1e-5)


def test_query_heads_that_kv_heads_do_not_divide_are_refused():
    """Planted: the check that num_attention_heads is a multiple of num_key_value_heads skipped. transformers'
    model cannot run such a config (its key heads do not repeat onto the query heads); the engine refuses it by
    name before any weight is read."""
    data = {**SMALL, "model_type": "llama", "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 3}
    data["hidden_size"] = 48
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**data))
    with pytest.raises(RuntimeError):
        model(torch.tensor([[1, 2, 3]]))
    with pytest.raises(ConfigError, match="num_attention_heads 4 is not a multiple of num_key_value_heads 3"):
        ModelConfig.from_hf(data)


# --- the tokenizer's files ------------------------------------------------------------------------


WORDS = ["<unk>", "</s>", "hello", "world", ",", ".", "don", "'", "t", "?"]


def _word_level_tokenizer(folder, clean_up: bool | None) -> None:
    """A word-level tokenizer (no decoder: tokens joined with spaces) saved by transformers into ``folder``, its
    tokenizer_config.json's clean_up_tokenization_spaces set to ``clean_up`` (None: left out)."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import models, pre_tokenizers

    tok = HFTokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="</s>").save_pretrained(
        folder
    )
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("clean_up_tokenization_spaces", None)
    if clean_up is not None:
        config["clean_up_tokenization_spaces"] = clean_up
    (folder / "tokenizer_config.json").write_text(json.dumps(config))


def test_text_is_not_cleaned_up_where_tokenizer_config_does_not_ask(tmp_path):
    """Planted: clean_up_tokenization_spaces taken as true where tokenizer_config.json leaves it out (transformers
    5's default is false), so " ," became "," in a word-level model's text, streamed or not."""
    from neurobrix.tokenizer import Tokenizer

    folder = tmp_path / "wordlevel"
    _word_level_tokenizer(folder, clean_up=None)
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    ids = ours.encode_text("hello , world . don ' t ?")
    expected = hf.decode(ids, skip_special_tokens=True)
    assert " ," in expected  # what the clean-up would change
    stream = ours.stream()
    assert ours.decode(ids) == expected == "".join(stream.push(i) for i in ids) + stream.finish()


def test_chat_template_jinja_wins_over_tokenizer_config(tmp_path):
    """Planted: the chat template read from tokenizer_config.json first where the folder also has
    chat_template.jinja (transformers 5 takes the file, as it saves the template there)."""
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer

    folder = save(
        tmp_path / "tok", "bytelevel", chat_template="{% for m in messages %}[{{ m['content'] }}]{% endfor %}"
    )
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["chat_template"] = "{% for m in messages %}<{{ m['content'] }}>{% endfor %}"
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    messages = [{"role": "user", "content": "hello world"}]
    hf = transformers.AutoTokenizer.from_pretrained(folder)
    expected = hf.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert expected == "[hello world]"
    assert Tokenizer(folder).render_chat(messages) == expected


def test_a_byte_level_tokenizer_declared_llama_is_used_as_it_is(tmp_path):
    """Planted: a byte-level tokenizer.json (Llama 3's kind) whose tokenizer_config.json declares
    LlamaTokenizerFast, rebuilt as the SentencePiece LlamaTokenizer. transformers uses such a file as it is."""
    from store_fixtures import config_dict
    from tokenizer_fixtures import CORPUS, save

    from neurobrix.tokenizer import Tokenizer

    folder = save(tmp_path / "tok", "bytelevel")
    config = json.loads((folder / "tokenizer_config.json").read_text()) | {"tokenizer_class": "LlamaTokenizerFast"}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "config.json").write_text(json.dumps(config_dict("llama")))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    for text in [CORPUS[0], " leading space", "naïve 🙂"]:
        ids = hf(text)["input_ids"]
        assert ours.encode_prompt(text, chat=False) == ids, text
        assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=True)


def test_a_tokenizer_class_declared_in_config_json_is_the_one_built(tmp_path):
    """Planted: the tokenizer class read from tokenizer_config.json only. transformers' AutoTokenizer takes
    config.json's tokenizer_class where tokenizer_config.json names none: a Llama model declaring LlamaTokenizerFast
    there is encoded by the class transformers builds (one "▁" before the text, not before every piece between
    special tokens)."""
    from store_fixtures import config_dict
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer

    folder = save(tmp_path / "tok", "sentencepiece")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("tokenizer_class", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "config.json").write_text(json.dumps(config_dict("llama", tokenizer_class="LlamaTokenizerFast")))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    assert type(hf).__name__ == "LlamaTokenizer"
    for text in ["a</s>b </s> c", " leading", "hello world"]:
        assert ours.encode_prompt(text, chat=False) == hf(text)["input_ids"], text


def test_code_llama_adds_its_start_token_whatever_tokenizer_json_says(tmp_path):
    """Planted: Code Llama's start token left to tokenizer.json's post-processor. transformers' CodeLlamaTokenizer
    always adds it, so a tokenizer.json saved without one still encodes the prompt after "<s>"."""
    from store_fixtures import config_dict
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer

    folder = save(tmp_path / "tok", "sentencepiece")
    data = json.loads((folder / "tokenizer.json").read_text()) | {"post_processor": None}
    (folder / "tokenizer.json").write_text(json.dumps(data))
    config = json.loads((folder / "tokenizer_config.json").read_text()) | {"tokenizer_class": "CodeLlamaTokenizer"}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "config.json").write_text(json.dumps(config_dict("llama")))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    for text in ["hello world", " leading"]:
        ids = hf(text)["input_ids"]
        assert ids[0] == hf.bos_token_id
        assert ours.encode_prompt(text, chat=False) == ids, text


def test_a_qwen2_tokenizer_makes_its_named_tokens_special(tmp_path):
    """Planted: Qwen2Tokenizer's last step skipped (its __init__ adds every named special token again, as special).
    tokenizer.json holds the eos token as a plain added token: transformers' Qwen2 tokenizer drops it from decoded
    text all the same, and so must the engine."""
    from store_fixtures import config_dict
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer

    folder = save(tmp_path / "tok", "bytelevel")
    data = json.loads((folder / "tokenizer.json").read_text())
    for token in data["added_tokens"]:
        token["special"] = token["content"] != "<|eot_id|>"
    (folder / "tokenizer.json").write_text(json.dumps(data))
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("added_tokens_decoder", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "config.json").write_text(json.dumps(config_dict("qwen2")))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    assert type(hf).__name__ == "Qwen2Tokenizer"
    ids = ours.encode_text("hello world<|eot_id|> the model")
    assert hf.convert_tokens_to_ids("<|eot_id|>") in ids
    expected = hf.decode(ids, skip_special_tokens=True)
    assert "<|eot_id|>" not in expected
    stream = ours.stream()
    assert ours.decode(ids) == expected == "".join(stream.push(i) for i in ids) + stream.finish()


def test_a_special_tokens_strip_settings_in_tokenizer_config_are_kept(tmp_path):
    """Planted: a special token tokenizer_config.json writes with its fields (an AddedToken's lstrip, rstrip) added
    with those fields dropped. transformers' token then takes the spaces around it, so the text around it encodes
    to other ids."""
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer

    folder = save(tmp_path / "tok", "bytelevel")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    fields = {"lstrip": True, "rstrip": True, "normalized": False, "single_word": False, "special": True}
    config["extra_special_tokens"] = [{"__type": "AddedToken", "content": "<|im_end|>", **fields}]
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    for text in ["hello <|im_end|> world", "a  <|im_end|>\n b"]:
        assert ours.encode_prompt(text, chat=False) == hf(text)["input_ids"], text
    assert hf("a <|im_end|> b")["input_ids"] == hf("a<|im_end|>b")["input_ids"]  # the spaces are taken


def test_added_tokens_are_given_the_ids_tokenizer_config_writes(tmp_path):
    """Planted: added_tokens_decoder's entries ordered by their ids as text ("10" before "9"), so two tokens new to
    tokenizer.json changed ids. transformers gives each the id tokenizer_config.json writes."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import models, pre_tokenizers

    from neurobrix.tokenizer import Tokenizer

    words = WORDS[:9]
    tok = HFTokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    folder = tmp_path / "tok"
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>").save_pretrained(folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    entry = {"lstrip": False, "rstrip": False, "normalized": False, "single_word": False, "special": True}
    config["added_tokens_decoder"] = {
        **config.get("added_tokens_decoder", {}),
        "9": {"content": "<a>", **entry},
        "10": {"content": "<b>", **entry},
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    ids = hf("hello <a> world <b>")["input_ids"]
    assert hf.convert_tokens_to_ids(["<a>", "<b>"]) == [9, 10]
    assert ours.encode_prompt("hello <a> world <b>", chat=False) == ids


# --- the weights ----------------------------------------------------------------------------------


def _engine_logits(folder, ids: list[int], dtype=torch.float32):
    from neurobrix.checkpoint import read_config, weight_files
    from neurobrix.generate import prefill
    from neurobrix.model import Transformer, weights_from_files
    from neurobrix.ops import TORCH

    cfg = read_config(folder)
    weights = weights_from_files(cfg, [str(p) for p in weight_files(folder)], dtype, "cpu")
    model = Transformer(cfg, weights, TORCH, batch=1, capacity=len(ids))
    with torch.no_grad():
        return cfg, prefill(model, [ids])[0]


def test_a_bf16_checkpoint_runs_in_the_dtype_asked_for(tmp_path):
    """Planted: each tensor kept in the checkpoint's own dtype instead of converted to the run's (a bf16 file run
    in fp32 computed with bf16 weights). The engine's fp32 logits from a bf16 checkpoint are transformers'
    (float64, the same file) within float32's tolerance."""
    import parity
    from safetensors.torch import load_file, save_file
    from store_fixtures import make_checkpoint

    folder = make_checkpoint(tmp_path / "model", use_transformers=False)
    weights = {k: v.to(torch.bfloat16) for k, v in load_file(folder / "model.safetensors").items()}
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "torch_dtype": "bfloat16"}))
    ids = [3, 4, 5, 6, 7, 8]
    cfg, ours = _engine_logits(folder, ids)
    hf = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64).eval()
    with torch.no_grad():
        truth = hf(torch.tensor([ids])).logits[0, -1]
    assert ours.dtype == torch.float32
    assert float((ours.double() - truth).abs().max()) <= parity.logits_tolerance(cfg, len(ids), "fp32", truth)


def test_an_untied_checkpoint_without_its_output_head_is_refused(tmp_path):
    """Planted: a checkpoint whose config.json does not tie the embeddings but which lacks lm_head.weight ran with
    the embedding as its output head. transformers leaves that head randomly initialised (a missing key): no text
    to reproduce, so the engine refuses it by name."""
    from safetensors.torch import load_file, save_file
    from store_fixtures import make_checkpoint

    from neurobrix.model import WeightsError

    folder = make_checkpoint(tmp_path / "model", use_transformers=False)
    weights = load_file(folder / "model.safetensors")
    del weights["lm_head.weight"]
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    _, info = transformers.AutoModelForCausalLM.from_pretrained(folder, output_loading_info=True)
    assert "lm_head.weight" in info["missing_keys"]
    with pytest.raises(WeightsError, match="no tensor 'lm_head.weight' and config.json does not tie embeddings"):
        _engine_logits(folder, [3, 4])


def test_a_page_saved_as_safetensors_is_refused_by_name(tmp_path):
    """Planted: the safetensors header length read without checking it against the file. A download that saved an
    HTML error page under the weights' name gives a length of quintillions of bytes: it must be refused as not a
    safetensors file, not crash reading it."""
    from store_fixtures import make_checkpoint

    from neurobrix.checkpoint import CheckpointError, checkpoint_files

    folder = make_checkpoint(tmp_path / "model", use_transformers=False)
    (folder / "model.safetensors").write_bytes(b"<!DOCTYPE html><html><body>502 Bad Gateway</body></html>\n")
    with pytest.raises(CheckpointError, match="model.safetensors: not a safetensors file"):
        checkpoint_files(folder)


# --- the hub ----------------------------------------------------------------------------------------


@pytest.fixture
def hub_env(tmp_path, monkeypatch):
    """Its own store and Hugging Face cache; the hub's listing and downloads faked from that cache."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    return tmp_path / "hf" / "hub"


def test_a_hub_repository_without_tokenizer_json_is_refused_before_any_download(hub_env, tmp_path, monkeypatch):
    """Planted: the hub listing's check for tokenizer.json skipped: the weights were downloaded before the folder
    check refused the model."""
    from store_fixtures import make_checkpoint, populate_hub_cache
    from test_store import COMMIT, FakeHub

    from neurobrix import store

    src = make_checkpoint(tmp_path / "src", use_transformers=False)
    (src / "tokenizer.json").unlink()
    populate_hub_cache(hub_env, "org/notok", src, commit=COMMIT)
    hub = FakeHub(monkeypatch, [p.name for p in src.iterdir()])
    with pytest.raises(store.CheckpointError, match="org/notok ships no tokenizer.json"):
        store.import_model("org/notok", progress=False)
    assert hub.downloads == []


def test_only_top_level_safetensors_are_downloaded_from_the_hub(hub_env, tmp_path, monkeypatch):
    """Planted: without a shard index, every *.safetensors of the repository downloaded, those in subfolders too
    (which the engine never reads: its weights are the top-level files)."""
    from store_fixtures import make_checkpoint, populate_hub_cache
    from test_store import COMMIT, FakeHub

    from neurobrix import store

    src = make_checkpoint(tmp_path / "src", use_transformers=False)
    populate_hub_cache(hub_env, "org/sub", src, commit=COMMIT)
    names = [p.name for p in src.iterdir()] + ["onnx/model.safetensors", "original/model.safetensors"]
    hub = FakeHub(monkeypatch, names)
    model = store.import_model("org/sub", progress=False)
    assert not any("/" in name for name in hub.downloads[-1])
    assert "model.safetensors" in model.files


# --- `run`: the text printed and where it ends ----------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
def test_run_prints_the_cleaned_up_text_and_stops_on_config_json_eos_ids(tmp_path, monkeypatch, capsys, stream):
    """A model without generation_config.json whose config.json names two eos ids, and a word-level tokenizer whose
    tokenizer_config.json asks for the clean-up and has a chat template. Planted: `run` handing generate no eos ids
    from config.json (transformers' generate stops on them), `run --no-stream` printing the text before the
    clean-up, and `--no-chat` ignored (the prompt put through the chat template). The generation is replaced by
    fixed ids: what is under test is what `run` passes and prints."""
    from store_fixtures import make_checkpoint
    from tokenizer_fixtures import generate_these

    from neurobrix import store
    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "wl-model", use_transformers=False)
    (folder / "generation_config.json").unlink()
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "eos_token_id": [1, 9]}))
    _word_level_tokenizer(folder, clean_up=True)
    tokenizer_config = json.loads((folder / "tokenizer_config.json").read_text())
    tokenizer_config["chat_template"] = "{% for m in messages %}{{ m['content'] }} ?{% endfor %}"
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    store.import_model(str(folder), progress=False)
    ids = [2, 4, 3, 5, 6, 7, 8, 9]  # hello , world . don ' t ?
    seen = generate_these(monkeypatch, ids)
    assert (
        main(
            ["run", "--model", "wl-model", "--prompt", "hello world", "--no-chat", *([] if stream else ["--no-stream"])]
        )
        == 0
    )
    hf_model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    assert seen.eos == set(hf_model.generation_config.eos_token_id) == {1, 9}
    hf = transformers.AutoTokenizer.from_pretrained(folder)
    assert seen.prompt == hf("hello world")["input_ids"]
    expected = hf.decode(ids, skip_special_tokens=True)
    assert " ," not in expected  # the clean-up applies here
    assert capsys.readouterr().out == expected + "\n"
