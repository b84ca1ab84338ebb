"""The fifth round of text parity: the user's path (`neurobrix import`, then `neurobrix run`) against transformers'
greedy generate and decode on the same folder. Each test failed before its fix; the truth is transformers reading
the same files, computed here."""

from __future__ import annotations

import json
import random

import pytest

transformers = pytest.importorskip("transformers")

TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{{ eos_token }}{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}"
)


def test_special_tokens_map_json_is_imported_and_read_as_transformers_reads_it(tmp_path, monkeypatch, capsys):
    """A checkpoint saved before transformers 4.34 keeps its special tokens in special_tokens_map.json, and its
    tokenizer_config.json has no added_tokens_decoder: transformers' from_pretrained then reads that file, whose
    tokens replace tokenizer_config.json's (the eos_token a chat template writes) and whose additional special
    tokens are special (one token in a prompt, dropped from decoded text). The engine neither imported nor read
    the file: its chat prompt ended the user's turn with another token than transformers', and the model ran on
    other ids. Checked through `run` (the generation replaced by fixed ids: what is under test is the prompt it is
    given and the text it prints)."""
    from store_fixtures import make_checkpoint
    from tokenizer_fixtures import generate_these, save

    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "old-model", use_transformers=False, config=None)
    save(folder, "bytelevel", chat_template=TEMPLATE)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("added_tokens_decoder", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    tokens_map = {
        "bos_token": "<|begin_of_text|>",
        "eos_token": {"content": "<|end_of_text|>", "lstrip": False, "rstrip": False, "normalized": False},
        "additional_special_tokens": ["[user]"],
    }
    (folder / "special_tokens_map.json").write_text(json.dumps(tokens_map))
    hf = transformers.AutoTokenizer.from_pretrained(folder)
    assert hf.eos_token == "<|end_of_text|>" != config["eos_token"]  # the map's, over tokenizer_config.json's
    assert main(["import", str(folder)]) == 0
    capsys.readouterr()
    out_ids = hf("the model[user] runs")["input_ids"][1:]
    seen = generate_these(monkeypatch, out_ids)
    for chat in (True, False):
        flags = [] if chat else ["--no-chat"]
        assert main(["run", "--model", "old-model", "--prompt", "hello[user] world", *flags]) == 0
        messages = [{"role": "user", "content": "hello[user] world"}]
        expected = (
            hf.apply_chat_template(messages, add_generation_prompt=True, return_dict=True)["input_ids"]
            if chat
            else hf("hello[user] world")["input_ids"]
        )
        assert seen.prompt == expected
        assert capsys.readouterr().out == hf.decode(out_ids, skip_special_tokens=True) + "\n"


def test_stream_waits_over_ids_the_tokenizer_does_not_have(tmp_path):
    """A model whose vocabulary is padded past its tokenizer's (Qwen2.5: 151,936 rows, 151,665 tokens) can pick an id
    the tokenizer does not have; transformers' decode drops it, and a byte-fallback run around it decodes as one
    run. The stream wrote the text at such an id, so a byte that reads as a character alone ("\\x15") was printed
    where the whole decode has "\\ufffd", and `run` ended in an error at the end of the text. The streamed text is
    now transformers' decode, for random id sequences reaching past the tokenizer."""
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer

    folder = save(tmp_path / "tok", "sentencepiece")
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    byte = hf.convert_tokens_to_ids
    cases = [[byte("<0x15>"), len(hf) + 3, byte("<0xCB>")]]
    rnd = random.Random(0)
    cases += [[rnd.randrange(len(hf) + 8) for _ in range(rnd.randint(1, 25))] for _ in range(300)]
    for ids in cases:
        stream = ours.stream()
        streamed = "".join(stream.push(i) for i in ids) + stream.finish()
        assert streamed == ours.decode(ids) == hf.decode(ids, skip_special_tokens=True), ids
