"""The twenty-eighth round of text parity: stop strings transformers' generate cannot apply, and held ground.

- generation_config.json's ``stop_strings`` with which transformers' ``generate`` (handed the tokenizer, as it requires)
  fails as it builds its StopStringCriteria, so that it prints no text: no token of the vocabulary, spelt as the
  criteria spells tokens, can end any of the strings (a WordPiece vocabulary without "Ω" or a tab: ValueError
  "Stop string preprocessing was unable to identify tokens..."), or the tokenizer decodes one of its tokens after the
  static prefix "abcdef" without that text (an added token "ab" splits it: ValueError "substring not found"). `run`
  printed the text of a run that could never stop on them; it now refuses them in one line naming the file.
- Held (no difference found), pinned here: stop strings the criteria accepts end the text where ``generate`` ends it
  on the same tokenizer, streamed and not.

Round 7's tiny random checkpoint runs through `neurobrix run` (PyTorch's kernels) and transformers' greedy
``generate`` in float64, with the fixture's WordPiece tokenizer in place of its byte-level one.
"""

from __future__ import annotations

import json
import shutil

import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_text_round7 import PROMPT, checkpoint, ours  # noqa: E402

NEVER_ENDS = 9999  # an eos id outside the vocabulary: only the length and the stop strings end a run


@pytest.fixture(scope="module")
def wordpiece_model(tmp_path_factory):
    """Round 7's checkpoint with the fixture's WordPiece tokenizer (175 tokens, under the model's 320 rows)."""
    from tokenizer_fixtures import save

    folder = checkpoint(tmp_path_factory.mktemp("round28") / "base", fields={"eos_token_id": NEVER_ENDS})
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"):
        (folder / name).unlink(missing_ok=True)
    return save(folder, "wordpiece")


def _with(model, tmp_path, stop_strings, added=None):
    folder = tmp_path / "m"
    shutil.copytree(model, folder)
    generation = {"eos_token_id": NEVER_ENDS, "max_new_tokens": 10}
    if stop_strings is not None:
        generation["stop_strings"] = stop_strings
    (folder / "generation_config.json").write_text(json.dumps(generation))
    if added is not None:  # an ordinary added token, as tokenizer_config.json's added_tokens_decoder writes it
        config = json.loads((folder / "tokenizer_config.json").read_text())
        index = len(json.loads((folder / "tokenizer.json").read_text())["model"]["vocab"])
        flags = dict.fromkeys(("lstrip", "rstrip", "single_word", "special"), False)
        config["added_tokens_decoder"] = {str(index): {"content": added, "normalized": True, **flags}}
        (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


def _generate(folder):
    """transformers' greedy generate (float64) after PROMPT, handed the tokenizer as stop_strings requires."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64).eval()
    inputs = tok(PROMPT, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, do_sample=False, tokenizer=tok)
    new = out.sequences[0, inputs["input_ids"].shape[1] :].tolist() if hasattr(out, "sequences") else None
    new = out[0, inputs["input_ids"].shape[1] :].tolist() if new is None else new
    return new, tok.decode(new, skip_special_tokens=True)


@pytest.mark.parametrize(
    "stop_strings, added, error",
    [
        (["Ω"], None, "unable to identify tokens"),  # no token holds the character
        (["Ω", "\t"], None, "unable to identify tokens"),  # nor a tab (WordPiece splits on whitespace)
        ("fast", "ab", "substring not found"),  # "abcdef" decodes as "ab cdef": the prefix is lost
        ("", "ab", "substring not found"),  # the vocabulary is spelt whatever the strings are
    ],
)
def test_stop_strings_transformers_generate_fails_on_are_refused(
    wordpiece_model, tmp_path, monkeypatch, stop_strings, added, error
):
    from neurobrix.errors import UsageError

    folder = _with(wordpiece_model, tmp_path, stop_strings, added)
    with pytest.raises(ValueError, match=error):
        _generate(folder)
    with pytest.raises(UsageError, match=r"generation_config.json: stop_strings.*(StopStringCriteria|generate)") as got:
        ours(folder, monkeypatch)
    assert "\n" not in str(got.value)


@pytest.mark.parametrize("which", ["with one no token ends", "a character", "two characters"])
def test_stop_strings_the_criteria_accepts_end_where_generate_ends(wordpiece_model, tmp_path, monkeypatch, which):
    """Held: one string the vocabulary can end is enough for the criteria, and the run ends where generate ends. The
    strings are taken from the text the run makes without them (the fixture's trained vocabulary varies by process)."""
    _, text = _generate(_with(wordpiece_model, tmp_path / "free", None))
    pairs = [text[i : i + 2] for i in range(len(text) - 1) if not set(text[i : i + 2]) & set(" #")]
    assert pairs, text
    stop_strings = {
        "with one no token ends": [pairs[0][1], "Ω"],
        "a character": pairs[0][0],
        "two characters": pairs[0],
    }
    folder = _with(wordpiece_model, tmp_path, stop_strings[which])
    want = _generate(folder)
    assert 0 < len(want[0]) < 10, want  # a stop string ended it
    for stream in (False, True):
        ids, text, _ = ours(folder, monkeypatch, stream=stream)
        assert (ids, text) == want, (stop_strings, stream)
