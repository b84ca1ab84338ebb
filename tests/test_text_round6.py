"""The sixth round of text parity: a differential fuzz of the text layer alone (neurobrix.tokenizer.Tokenizer against
transformers' AutoTokenizer on the same folder, over tokenizer constructions, tokenizer_config.json settings, added
tokens and chat templates). Each test failed before its fix; the truth is transformers reading the same files,
computed here."""

from __future__ import annotations

import json

import pytest

transformers = pytest.importorskip("transformers")


def test_new_named_special_tokens_get_the_ids_transformers_gives_them(tmp_path):
    """Named special tokens that the vocabulary lacks are added at its end, and transformers adds them in its own order
    of names (bos, eos, unk, sep, pad, cls, mask, then a model's other tokens), whatever order tokenizer_config.json
    writes them in. The engine added them in the file's order, so a file naming pad_token before sep_token gave each
    the other's id: a prompt holding one encoded to another id, and decoded text differed where the token shows."""
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer

    folder = save(tmp_path / "tok", "bytelevel")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("added_tokens_decoder", None)
    config = {
        "image_token": "<image>",
        "pad_token": "<pad_new>",
        "mask_token": "<mask_new>",
        **config,
        "sep_token": {"__type": "AddedToken", "content": "<sep_new>", "normalized": True, "special": False},
        "extra_special_tokens": {"audio_token": "<audio>"},
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    text = "a<pad_new>b <sep_new> c<mask_new><image><audio>"
    assert ours.encode_prompt(text, chat=False) == hf(text)["input_ids"]
    new = range(hf.vocab_size, len(hf))
    assert [ours._tok.id_to_token(i) for i in new] == hf.convert_ids_to_tokens(list(new))
    ids = [hf.convert_tokens_to_ids("a"), *new]
    assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=True)


def test_added_tokens_json_is_imported_and_read_as_transformers_reads_it(tmp_path, monkeypatch, capsys):
    """A checkpoint saved before transformers 4.34 keeps the tokens added to its tokenizer in added_tokens.json, and
    its tokenizer_config.json has no added_tokens_decoder: transformers' from_pretrained then adds that file's tokens
    (special where they are named special tokens) after tokenizer.json's own, so a prompt holding one encodes it as
    one token and a plain piece it names is matched whole. The engine neither imported nor read the file: its prompt
    ids differed, and an id past tokenizer.json's decoded to nothing where transformers prints the token."""
    from store_fixtures import make_checkpoint
    from tokenizer_fixtures import save

    from neurobrix.cli import main
    from neurobrix.store import resolve

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "old-model", use_transformers=False, config=None)
    save(folder, "bytelevel")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("added_tokens_decoder", None)
    config["pad_token"] = "<pad>"
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "added_tokens.json").write_text(json.dumps({"<tool>": 9000, "<pad>": 9001, "ing": 9002}))
    assert main(["import", str(folder)]) == 0
    capsys.readouterr()
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), resolve("old-model").tokenizer()
    text = "a<tool>b running<pad> <tool> sing"
    assert ours.encode_prompt(text, chat=False) == hf(text)["input_ids"]
    ids = [hf.convert_tokens_to_ids("a"), *range(hf.vocab_size, len(hf))]
    assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=True)


@pytest.mark.parametrize("decoder_in_config", [False, True])
def test_named_special_tokens_tokenizer_json_has_as_ordinary_tokens_are_dropped_from_text(tmp_path, decoder_in_config):
    """tokenizer.json can hold a model's bos and eos tokens as ordinary added tokens (special false), as some
    converted checkpoints do. transformers adds every token of added_tokens_decoder again when it loads the files
    (tokenizer.json's own ones where tokenizer_config.json has none), a named special token among them as special, so
    decode(skip_special_tokens=True) drops it. The engine left tokenizer.json's ordinary token as it was and printed
    "<|eot_id|>" at the end of the text, streamed or not."""
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer

    folder = save(tmp_path / "tok", "bytelevel")
    data = json.loads((folder / "tokenizer.json").read_text())
    for token in data["added_tokens"]:
        token["special"] = False
    (folder / "tokenizer.json").write_text(json.dumps(data))
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("added_tokens_decoder", None)
    if decoder_in_config:
        config["added_tokens_decoder"] = {
            str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in data["added_tokens"]
        }
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    ids = hf("the model runs")["input_ids"] + [hf.eos_token_id, hf.convert_tokens_to_ids("<|end_of_text|>")]
    stream = ours.stream()
    streamed = "".join(stream.push(i) for i in ids) + stream.finish()
    assert streamed == ours.decode(ids) == hf.decode(ids, skip_special_tokens=True)
    assert ours.encode_prompt("a<|eot_id|> b", chat=False) == hf("a<|eot_id|> b")["input_ids"]


def test_stream_waits_over_a_token_decoded_text_drops_though_the_config_calls_it_ordinary(tmp_path):
    """tokenizer_config.json's added_tokens_decoder can write a token as not special that tokenizer.json has as
    special; the tokenizers library still drops it from decoded text (a token special once stays so for decoding),
    and a byte-fallback run around it decodes as one run. The stream took the token's settings at their word and
    wrote the bytes before it at once: "f" printed where transformers' decode has "\\ufffd", and `run` ended in an
    error. The streamed text is now transformers' decode."""
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer

    folder = save(tmp_path / "tok", "sentencepiece")
    data = json.loads((folder / "tokenizer.json").read_text())
    data["added_tokens"].append(
        {"id": len(data["model"]["vocab"]), "content": "<|im_end|>", "single_word": False, "lstrip": False}
        | {"rstrip": False, "normalized": False, "special": True}
    )
    (folder / "tokenizer.json").write_text(json.dumps(data))
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["added_tokens_decoder"] = {
        str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in data["added_tokens"]
    }
    config["added_tokens_decoder"][str(data["added_tokens"][-1]["id"])]["special"] = False
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    byte = hf.convert_tokens_to_ids
    ids = [byte("<0x66>"), byte("<|im_end|>"), byte("<0x89>"), byte("<0x66>"), byte("<|im_end|>"), byte("▁the")]
    stream = ours.stream()
    streamed = "".join(stream.push(i) for i in ids) + stream.finish()
    assert streamed == ours.decode(ids) == hf.decode(ids, skip_special_tokens=True)
