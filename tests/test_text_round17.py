"""The seventeenth round of text parity: the tokens tokenizer_config.json names, read as transformers' tokenizer reads
them as it loads, and refused where it refuses them.

- A named special token (bos_token, pad_token...) that is neither text nor an AddedToken written with its
  "__type": "AddedToken" (an object without it, a number, true, a list), an extra_special_tokens (or
  additional_special_tokens) that is neither a list of such tokens nor an object of named ones,
  model_specific_special_tokens that is no object, an added_tokens_decoder that is no object of entries keyed by
  integers with text as their content (or an entry whose flags are not true or false), a padding_side or
  truncation_side other than "left" or "right", a model_input_names that is no list: transformers' tokenizer fails
  as it loads (a TypeError or ValueError), so generate never runs. The engine passed over each, printing text (a list
  under bos_token crashed it with a traceback); each is refused in one line naming the field (exit 2). A checkpoint
  saved before transformers 4.34 whose special_tokens_map.json lists additional_special_tokens as objects is one.
- Tokens transformers reads otherwise than the engine did: a model's own ``*_token`` written as an object without
  "__type" is no token to transformers (the engine added it); model_specific_special_tokens, which transformers 5
  writes beside them, is read where the file names no model token as text; model tokens written with their fields
  come before those written as text, in the order new tokens get their ids; add_bos_token holding text names no token
  (from_pretrained drops the key); an added_tokens_decoder key such as "-3" is an id to int() (the engine dropped the
  entry); special_tokens_map.json's extra_special_tokens objects are special tokens (dropped from decoded text).

The text layer is compared directly (neurobrix.tokenizer.Tokenizer against transformers' AutoTokenizer on the same
folder: prompt ids, decoded and streamed text), and one refusal through `neurobrix run`. Each test failed before its
fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

from test_text_round7 import checkpoint  # noqa: E402
from test_text_round13 import refused  # noqa: E402

FIELDS = {"lstrip": False, "rstrip": False, "normalized": False, "single_word": False, "special": True}


def _typed(content: str) -> dict:
    return {"__type": "AddedToken", "content": content, **FIELDS}


def _untyped(content: str) -> dict:
    return {"content": content, **FIELDS}


def _folder(tmp_path: Path, settings: dict, tokens_map: dict | None = None, kind: str = "bytelevel") -> Path:
    """A fixture tokenizer whose tokenizer_config.json is given ``settings`` (None: the key removed), and, with
    ``tokens_map``, an older checkpoint's: no added_tokens_decoder, that special_tokens_map.json beside it."""
    from tokenizer_fixtures import save

    folder = save(tmp_path / "tok", kind)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.update(settings)
    if tokens_map is not None:
        config.pop("added_tokens_decoder", None)
        (folder / "special_tokens_map.json").write_text(json.dumps(tokens_map))
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


# --- forms transformers' tokenizer refuses as it loads ------------------------------------------------------------

REFUSED = {
    "a special token as an object without __type": ({"pad_token": _untyped("<pad>")}, None, "pad_token {"),
    "a special token as a number": ({"unk_token": 5}, None, "unk_token 5"),
    "a special token as true": ({"mask_token": True}, None, "mask_token True"),
    "a special token as a list": ({"bos_token": ["<s>"]}, None, "bos_token ['<s>']"),
    "extra tokens as objects without __type": ({"extra_special_tokens": [_untyped("<x>")]}, None, "extra_special_"),
    "extra tokens as text": ({"extra_special_tokens": "<x>"}, None, "extra_special_tokens '<x>'"),
    "extra tokens holding a number": (
        {"additional_special_tokens": ["<x>", 5]},
        None,
        "extra_special_tokens ['<x>', 5]",
    ),
    "named extra tokens holding a number": ({"extra_special_tokens": {"image_token": 5}}, None, "{'image_token': 5}"),
    "model_specific_special_tokens as a list": ({"model_specific_special_tokens": ["<x>"]}, None, "['<x>']"),
    "an added token as text": ({"added_tokens_decoder": {"9999": "<x>"}}, None, "added_tokens_decoder {'9999'"),
    "an added token's id not an integer": ({"added_tokens_decoder": {"x": _untyped("<x>")}}, None, "{'x':"),
    "an added token's content a number": (
        {"added_tokens_decoder": {"9999": _untyped(5)}},
        None,
        "added_tokens_decoder",
    ),
    "an added token's flag as text": (
        {"added_tokens_decoder": {"9999": {**_untyped("<x>"), "lstrip": "yes"}}},
        None,
        "'lstrip': 'yes'",
    ),
    "added tokens as a list": ({"added_tokens_decoder": [_untyped("<x>")]}, None, "added_tokens_decoder [{"),
    "padding_side center": ({"padding_side": "center"}, None, "padding_side 'center'"),
    "truncation_side null": ({"truncation_side": None}, None, "truncation_side None"),
    "model_input_names a number": ({"model_input_names": 5}, None, "model_input_names 5"),
    "an old checkpoint's additional tokens as objects": (
        {},
        {"additional_special_tokens": [_untyped("<x>")]},
        "(with special_tokens_map.json): extra_special_tokens [{",
    ),
    "an old checkpoint's extra token object saying special": (  # AddedToken(**token, special=True): given twice
        {},
        {"extra_special_tokens": [_untyped("<x>")]},
        "(with special_tokens_map.json): extra_special_tokens [{",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_tokens_transformers_tokenizer_refuses_are_refused_by_name(tmp_path, case):
    """Before: the engine took each (or passed over it) and encoded the prompt; a list under bos_token crashed it
    ("unhashable type: 'list'")."""
    from neurobrix.tokenizer import Tokenizer, TokenizerError

    settings, tokens_map, named = REFUSED[case]
    folder = _folder(tmp_path, settings, tokens_map)
    with pytest.raises((TypeError, ValueError, AttributeError)):
        transformers.AutoTokenizer.from_pretrained(folder)
    with pytest.raises(TokenizerError) as refusal:
        Tokenizer(folder)
    message = str(refusal.value)
    assert named in message and "transformers' tokenizer refuses" in message and "\n" not in message, message


def test_run_refuses_a_special_token_object_without_its_type_in_one_line(tmp_path, monkeypatch, capsys):
    """Through `neurobrix run`: exit 2, one line naming the field. Before: the text of a tokenizer transformers does
    not load."""
    folder = checkpoint(tmp_path / "m", generation={"eos_token_id": 9999, "max_new_tokens": 4})
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "bos_token": _untyped("<|begin_of_text|>")}))
    with pytest.raises(TypeError):
        transformers.AutoTokenizer.from_pretrained(folder)
    refused(folder, monkeypatch, capsys, "bos_token {'content': '<|begin_of_text|>'", also="__type")


# --- tokens transformers reads otherwise ---------------------------------------------------------------------------

PROMPT = "a<image>b<audio>c<vid> d<x>e <|eot_id|>"
READ = {
    "a model token as an object without __type: no token": ({"image_token": _untyped("<image>")}, None),
    "model tokens with their fields before those as text": (
        {"image_token": "<image>", "audio_token": _typed("<audio>")},
        None,
    ),
    "model_specific_special_tokens alone": ({"model_specific_special_tokens": {"image_token": "<image>"}}, None),
    "model_specific_special_tokens beside a token with its fields": (
        {"image_token": _typed("<image>"), "model_specific_special_tokens": {"audio_token": "<audio>"}},
        None,
    ),
    "add_bos_token holding text: no token": ({"add_bos_token": "<audio>"}, None),
    "an added token keyed by a negative id": ({"added_tokens_decoder": {"-3": _untyped("<x>")}}, None),
    "an old checkpoint's extra tokens as objects: special": (
        {},
        {"extra_special_tokens": [{k: v for k, v in _untyped("<x>").items() if k != "special"}]},
    ),
}


@pytest.mark.parametrize("case", READ)
def test_tokens_are_read_as_transformers_tokenizer_reads_them(tmp_path, case):
    """Before: other prompt ids (a token added that transformers does not have, one it has missing, two new tokens'
    ids swapped), or the old checkpoint's extra token printed in the text where transformers' decode drops it."""
    from neurobrix.tokenizer import Tokenizer

    settings, tokens_map = READ[case]
    folder = _folder(tmp_path, settings, tokens_map, kind="sentencepiece" if tokens_map else "bytelevel")
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    ids = hf(PROMPT)["input_ids"]
    assert ours.encode_prompt(PROMPT, chat=False) == ids
    ids += list(range(hf.vocab_size, len(hf)))
    stream = ours.stream()
    streamed = "".join(stream.push(i) for i in ids) + stream.finish()
    assert streamed == ours.decode(ids) == hf.decode(ids, skip_special_tokens=True)
