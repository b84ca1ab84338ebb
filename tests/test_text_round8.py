"""The eighth round of text parity: generation settings transformers' ``generate`` reads from generation_config.json
(or config.json), and a tokenizer setting transformers' tokenizer reads from tokenizer_config.json, that the engine
read otherwise or not at all. Tiny random checkpoints (round 7's: a byte-level tokenizer, weights drawn wide so that
greedy choices are far from ties) are run through `neurobrix run` (PyTorch's kernels) and through transformers'
greedy ``generate`` in float64 on the same folder; the decoded text and the token ids must be equal. Where
transformers would compute something the engine does not, the engine must name it in a note. The tokenizer's prompt
ids are compared with transformers' tokenizer on the same files. Each test failed before its fix (the cases a fix
must leave alone beside the ones it changes)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_text_round7 import PLAIN, checkpoint, ours, theirs  # noqa: E402


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    return checkpoint(tmp_path_factory.mktemp("gen") / "base")


@pytest.mark.parametrize("min_new_tokens", [2, 0])
def test_min_new_tokens_replaces_the_settings_min_length(model_folder, monkeypatch, min_new_tokens):
    """generation_config.json with both min_length and min_new_tokens: transformers' generate sets min_length to the
    prompt's length plus min_new_tokens (min_new_tokens "takes precedence"), so the eos id is masked for that many
    new tokens only, and for none at 0. The engine masked it up to the file's min_length as well: the text ran on
    past the eos id where transformers' ends (8 more tokens here)."""
    generation = {"eos_token_id": PLAIN[3], "min_length": 45, "min_new_tokens": min_new_tokens, "max_new_tokens": 12}
    (model_folder / "generation_config.json").write_text(json.dumps(generation))
    want = theirs(model_folder)
    assert want[0] == PLAIN[:4]  # the file's min_length of 45 (35 prompt tokens) would have masked the eos id
    ids, text, _ = ours(model_folder, monkeypatch)
    assert (ids, text) == want


def test_encoder_no_repeat_ngram_size_is_applied_as_transformers_applies_it(model_folder, monkeypatch):
    """encoder_no_repeat_ngram_size: transformers' generate hands a decoder-only model's prompt to
    EncoderNoRepeatNGramLogitsProcessor as its encoder input, so no n-gram of the prompt is completed again (at 1, no
    token of the prompt is picked). The engine neither applied nor named it: its text was the plain greedy one."""
    generation = {"eos_token_id": 9999, "encoder_no_repeat_ngram_size": 1, "max_new_tokens": 12}
    (model_folder / "generation_config.json").write_text(json.dumps(generation))
    want = theirs(model_folder)
    assert want[0] != PLAIN
    ids, text, notes = ours(model_folder, monkeypatch)
    assert (ids, text) == want
    assert not [n for n in notes if "does not apply" in n]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_the_engines_prompt_ngram_mask_is_transformers_processor(n):
    """The same processor over many steps at each n-gram size: random prompts over a small vocabulary (n-grams
    recur) and random continuations, the engine's scores after its masks equal to transformers' processor's."""
    from transformers.generation.logits_process import EncoderNoRepeatNGramLogitsProcessor

    from neurobrix.generate import Constraints, Processors

    rnd = random.Random(n)
    vocab = 7
    for _ in range(40):
        prompts = [[rnd.randrange(vocab) for _ in range(9)] for _ in range(2)]
        processors = Processors(Constraints(encoder_no_repeat_ngram_size=n), prompts, 8, eos=set())
        theirs_ = EncoderNoRepeatNGramLogitsProcessor(n, torch.tensor(prompts))
        for _ in range(6):
            scores = torch.randn(2, vocab)
            want = theirs_(torch.tensor(processors.history), scores)
            assert torch.equal(processors(scores), want)
            processors.push(torch.tensor([rnd.randrange(vocab) for _ in range(2)]))


@pytest.mark.parametrize(
    "setting",
    [
        {"is_assistant": True},  # stops at the first token picked with a probability below 0.4
        {"is_assistant": True, "assistant_confidence_threshold": 0.9},
        {"use_mtp": True},  # generate refuses a model without multi-token prediction heads
    ],
)
def test_settings_that_stop_or_refuse_transformers_generate_are_named(model_folder, monkeypatch, setting):
    """is_assistant (a draft model's settings: transformers' generate adds ConfidenceCriteria, which ends the text once
    the picked token's probability falls below assistant_confidence_threshold) and use_mtp (assisted decoding from
    multi-token prediction heads; generate refuses a model without them). The engine ran both silently, printing
    the whole greedy text; each is now named in run's note, and is_assistant with the threshold at 0 (no stop) is
    not."""
    generation = {"eos_token_id": 9999, "max_new_tokens": 12}
    (model_folder / "generation_config.json").write_text(json.dumps({**generation, **setting}))
    try:
        changed = theirs(model_folder)[0] != PLAIN
    except ValueError:  # generate refuses to run with it
        changed = True
    assert changed
    notes = ours(model_folder, monkeypatch)[2]
    name = next(iter(setting))
    assert any(f"sets {name}={setting[name]!r}" in n and "does not apply" in n for n in notes), notes
    off = {**generation, "is_assistant": True, "assistant_confidence_threshold": 0}
    (model_folder / "generation_config.json").write_text(json.dumps(off))
    ids, text, notes = ours(model_folder, monkeypatch)
    assert (ids, text) == theirs(model_folder)
    assert not [n for n in notes if "does not apply" in n]


# --- tokenizer_config.json's fix_mistral_regex ---------------------------------------------------------------------


def _large_vocabulary(folder: Path, kind: str) -> Path:
    """A fixture tokenizer of ``kind`` with its vocabulary padded past 100,000 tokens (as Mistral's 131,072-token
    tokenizers are) and, for the byte-level one, a pre-tokenizer that splits first with a regex of its own (as
    Mistral's tokenizer.json files do, some with an incorrect one)."""
    from tokenizer_fixtures import save

    save(folder, kind)
    data = json.loads((folder / "tokenizer.json").read_text())
    vocab = data["model"]["vocab"]
    vocab.update({f"pad{i}": len(vocab) + i for i in range(100_001 - len(vocab))})
    if kind == "bytelevel":
        data["pre_tokenizer"] = {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": r"\s+|[^\s]+"}, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
            ],
        }
    (folder / "tokenizer.json").write_text(json.dumps(data))
    return folder


@pytest.mark.parametrize(
    "kind, model_type, written_by",
    [
        ("bytelevel", "mistral", "4.46.0"),
        ("bytelevel", "mistral", None),
        ("metaspace", "mistral", "4.46.0"),
        ("bytelevel", "mistral", "5.1.0"),  # files transformers 5 wrote: left as they are
        ("bytelevel", "llama", "4.46.0"),  # not a Mistral model: left as it is
    ],
)
def test_fix_mistral_regex_replaces_the_first_split_as_transformers_does(tmp_path, kind, model_type, written_by):
    """tokenizer_config.json with fix_mistral_regex true, for a Mistral model whose config.json an older transformers
    wrote, and a vocabulary past 100,000 tokens: transformers' tokenizer puts its own split first in the
    pre-tokenizer (in place of a sequence's first step; before a Metaspace one, which becomes bytes), so "a/b" and
    "Hello/World" are split otherwise than tokenizer.json says. The engine kept tokenizer.json's split: other prompt
    ids."""
    from store_fixtures import config_dict

    from neurobrix.tokenizer import Tokenizer

    folder = _large_vocabulary(tmp_path / "tok", kind)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "fix_mistral_regex": True}))
    model = config_dict(model_type) | ({"transformers_version": written_by} if written_by else {})
    (folder / "config.json").write_text(json.dumps(model))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    for text in ["Hello/World a/b\n/c", "x//y DON'T stop\n\n  naïve/café 123"]:
        assert ours.encode_prompt(text, chat=False) == hf(text)["input_ids"], text


# --- a prompt token past the model's vocabulary --------------------------------------------------------------------


def test_a_prompt_token_past_the_models_vocabulary_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    """A tokenizer can hold tokens past the model's embedding (a pad token tokenizer_config.json adds at the end):
    a prompt holding one cannot be embedded, and transformers' model fails on it. `run` ended in an IndexError
    traceback (on a GPU, an out-of-range read in the embedding lookup); it now refuses in one line naming the id
    (exit 2), before the prompt is fed."""
    from neurobrix.cli import main

    folder = checkpoint(tmp_path / "m", generation={"eos_token_id": 9999, "max_new_tokens": 4})
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "pad_token": "<newpad>"}))
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64)
    ids = tok("a<newpad>b", return_tensors="pt")["input_ids"]
    assert tok.convert_tokens_to_ids("<newpad>") == model.config.vocab_size
    with pytest.raises(IndexError):
        model.generate(ids, max_new_tokens=1, do_sample=False)
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    assert main(["import", str(folder)]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit:
        main(["run", "--model", "m", "--prompt", "a<newpad>b", "--no-chat", "--backend", "torch"])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert "token ids past the model's 320 embeddings (config.json's vocab_size): 320;" in err, err
