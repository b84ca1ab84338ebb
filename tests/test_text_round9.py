"""The ninth round of text parity: generation_config.json's ``stop_strings``, which transformers' ``generate`` applies
when handed the model's tokenizer (StopStringCriteria: generation ends at the first token completing one of the
strings, the string kept in the text). The engine named the setting in a note and ran on to its token limit. Tiny
random checkpoints (round 7's) are run through `neurobrix run` (PyTorch's kernels) and through transformers' greedy
``generate`` in float64 with the tokenizer on the same folder; the decoded text and the token ids must be equal.
The stop check itself is compared with transformers' StopStringCriteria on random sequences over each fixture
tokenizer kind. Each test failed before its fix."""

from __future__ import annotations

import json
import random

import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_text_round7 import checkpoint, ours, theirs  # noqa: E402


def run_streamed(folder, monkeypatch, stream: bool) -> tuple[list[int], str, list[str]]:
    """round 7's `ours`, streamed or not: `neurobrix run --no-chat --backend torch` on the imported folder."""
    return ours(folder, monkeypatch, stream=stream)


# the base checkpoint's 12 greedy tokens after round 7's prompt (which ends "setting."): " p", "\ufffd", " the", "\x18",
# "\ufffd", "u", "af", "\ufffd", "\ufffd", "\ufffd", "\x07", "<|end_header_id|>"
@pytest.mark.parametrize(
    "stop_strings, stream, stops_at",
    [
        ([" the"], True, 3),  # a token's whole text
        ("ua", False, 7),  # over two tokens, running past the string's end into "af"
        (["zzz", "f"], True, 7),  # inside a token, one of two strings
        (["g. p"], False, 1),  # over the prompt's end and the first new token
        (["<|end_header_id|>"], True, 12),  # a special token's text, dropped from the decoded text
        (["zzz"], False, 12),  # never completed: nothing changes
    ],
)
def test_stop_strings_end_the_text_where_transformers_generate_ends_it(
    tmp_path, monkeypatch, stop_strings, stream, stops_at
):
    """generation_config.json with stop_strings: transformers' generate (given the tokenizer, as it requires) ends at
    the first token completing a string, the prompt's tokens included, and keeps the string in the text. The engine
    named the setting as not applied and printed all 12 tokens (ending at the last token anyway was right only
    by chance); now it ends where generate does, streamed or not, with no note."""
    generation = {"eos_token_id": 9999, "max_new_tokens": 12, "stop_strings": stop_strings}
    folder = checkpoint(tmp_path / "m", generation=generation)
    want = theirs(folder, tokenizer=transformers.AutoTokenizer.from_pretrained(folder))
    assert len(want[0]) == stops_at
    ids, text, notes = run_streamed(folder, monkeypatch, stream)
    assert (ids, text) == want
    assert not [n for n in notes if "does not apply" in n], notes


TEXT_PIECES = ["a", " the", "é", "中", "🙂", "\n", " .", "don't", " model", "Hello", " world", "!", "run", "</s>"]
STOPS = [["the"], [" model", "中"], ["\n\n", "é"], ["a"], ["don't", "!"], ["Hello world"], [".", "run"], ["🙂"]]


@pytest.mark.parametrize(
    "kind, config",
    [
        ("bytelevel", {}),
        ("sentencepiece", {}),
        ("metaspace", {}),
        ("wordpiece", {}),
        ("sentencepiece", {"tokenizer_class": "LlamaTokenizerFast"}),
    ],
)
def test_the_stop_check_is_transformers_stop_string_criteria(tmp_path, kind, config):
    """On random sequences (random ids, ids past the tokenizer's, and encoded text cut anywhere), the engine's stop
    check says what StopStringCriteria says, for tokenizers whose strings it spells as bytes (byte-level, byte
    fallback) and as text (WordPiece)."""
    from store_fixtures import config_dict
    from tokenizer_fixtures import save
    from transformers.generation.stopping_criteria import StopStringCriteria

    from neurobrix.tokenizer import StopStrings, Tokenizer

    folder = save(tmp_path / "tok", kind)
    settings = json.loads((folder / "tokenizer_config.json").read_text()) | config
    (folder / "tokenizer_config.json").write_text(json.dumps(settings))
    (folder / "config.json").write_text(json.dumps(config_dict("llama")))
    hf, tokenizer = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    rnd = random.Random(kind)
    hits = 0
    for stops in STOPS:
        try:
            criteria = StopStringCriteria(hf, stops)
        except ValueError:  # no token of this vocabulary can end the strings: transformers refuses them
            continue
        check = StopStrings(tokenizer._tok, stops)
        for trial in range(120):
            if trial % 3 == 0:
                ids = [rnd.randrange(len(hf) + 3) for _ in range(rnd.randrange(1, 12))]
            else:
                text = "".join(rnd.choice(TEXT_PIECES) for _ in range(6))
                ids = tokenizer.encode_text(text)[: rnd.randrange(1, 20)] or [5]
            want = bool(criteria(torch.tensor([ids]), None)[0])
            hits += want
            assert check(ids) == want, (stops, ids)
    assert hits > 20


@pytest.mark.parametrize("value", [5, ["ok", 3], {"a": "b"}])
def test_malformed_stop_strings_are_one_line(tmp_path, monkeypatch, capsys, value):
    """A stop_strings that is neither a string nor a list of strings is refused in one line naming it (exit 2)."""
    from neurobrix.cli import main

    folder = checkpoint(tmp_path / "m", generation={"eos_token_id": 9999, "max_new_tokens": 4, "stop_strings": value})
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    assert main(["import", str(folder)]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit:
        main(["run", "--model", "m", "--prompt", "hello", "--no-chat", "--backend", "torch"])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert "stop_strings must be a string or a list of strings" in err and "Traceback" not in err, err
