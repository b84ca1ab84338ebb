"""The thirtieth round of text parity: the text `neurobrix run` prints, streamed and not, against transformers'
``tokenizer.decode(new_ids, skip_special_tokens=True)`` on the same files, over drawn ids and tokenizer variants.

- Byte-fallback tokens spelt otherwise than "<0xNN>": tokenizers' ByteFallback decoder (decoders/byte_fallback.rs,
  which transformers' decode runs) reads any token of six bytes, "<0x" and ">" around two that Rust's
  ``u8::from_str_radix(_, 16)`` parses, as a byte: "<0x0a>" and "<0x+A>" as well as "<0x0A>". A run of byte tokens is
  decoded whole, so a byte that reads as a character alone ("\\n") becomes "\\ufffd" when an invalid byte follows. The
  stream waited only after the upper-case spellings, so it wrote such a byte at once, and `run` (streaming, its
  default) ended in a RuntimeError (a traceback) at the end of the text where transformers printed the decode. The
  stream now waits after every token the decoder reads as a byte.
- exponential_decay_length_penalty with an eos id past the vocabulary: transformers' ExponentialDecayLengthPenalty
  indexes the scores with the eos ids (``scores[:, self.eos_token_id]``, an IndexError there) only at the steps where
  the decay applies (the sequence longer than start + the prompt), so a run that ends before (its length, or another
  eos id) prints its text. `run` refused the settings before the run (round 14's choice); it now refuses at the first
  token where the decay applies, as round 29 refuses a power that cannot be computed (the text held back until the
  run ends, with a note, so a refused run prints none).

The first test replaces the generation by fixed ids (tokenizer_fixtures.generate_these): what is under test is the
text printed; the second runs round 7's tiny random checkpoint against transformers' greedy generate. Each test
failed before its fix.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")


def _imported(tmp_path: Path, monkeypatch, kind: str, edit=None) -> tuple[Path, object]:
    """A stored tiny model (no transformers weights needed: the generation is replaced) with the fixture tokenizer
    ``kind``, its tokenizer.json data passed through ``edit``; (folder, transformers' tokenizer of it)."""
    from store_fixtures import make_checkpoint
    from tokenizer_fixtures import save

    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "m", use_transformers=False, config=None)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (folder / name).unlink(missing_ok=True)
    save(folder, kind)
    if edit is not None:
        data = json.loads((folder / "tokenizer.json").read_text())
        (folder / "tokenizer.json").write_text(json.dumps(edit(data)))
    assert main(["import", str(folder)]) == 0
    return folder, transformers.AutoTokenizer.from_pretrained(folder)


def _printed(monkeypatch, capsys, ids: list[int], stream: bool) -> str:
    """What `neurobrix run --no-chat` prints (stdout) when the generation makes ``ids``."""
    from tokenizer_fixtures import generate_these

    from neurobrix.cli import main

    capsys.readouterr()
    generate_these(monkeypatch, ids)
    flags = [] if stream else ["--no-stream"]
    assert main(["run", "--model", "m", "--prompt", "hello", "--no-chat", "--backend", "torch", *flags]) == 0
    return capsys.readouterr().out


# --- byte-fallback tokens the decoder reads as bytes, spelt otherwise ------------------------------------------------


def _respelt(data: dict) -> dict:
    """Byte tokens spelt as ByteFallback also reads them: lower-case hex ("<0x0a>"), or "+" and one digit ("<0x+F>")."""
    rng = random.Random(30)
    vocab = {}
    for token, index in data["model"]["vocab"].items():
        if len(token) == 6 and token.startswith("<0x"):
            digits = token[3:5]
            if digits[0] == "0" and rng.random() < 0.3:
                token = f"<0x+{digits[1]}>"
            elif rng.random() < 0.7:
                token = f"<0x{digits.lower()}>"
        vocab[token] = index
    data["model"]["vocab"] = vocab
    return data


def test_byte_tokens_of_every_spelling_the_decoder_reads_print_transformers_decode(tmp_path, monkeypatch, capsys):
    """Before: streamed, "<0x0a>" (a newline alone) was written at once, and "<0x80>" after it turned the run into
    "\\ufffd\\ufffd": `run` failed at the end ("streamed text ... is not a prefix of the decoded text")."""
    from neurobrix.tokenizer import Tokenizer

    folder, hf = _imported(tmp_path, monkeypatch, "sentencepiece", _respelt)
    byte = hf.convert_tokens_to_ids
    assert byte("<0x0a>") != hf.unk_token_id and hf.decode([byte("<0x0a>")]) == "\n"  # read as a byte
    assert any(token.startswith("<0x+") for token in hf.get_vocab())  # some "+" spellings drawn
    rng = random.Random(0)
    cases = [[byte("<0x0a>"), byte("<0x80>"), byte("▁the")]]
    cases += [[rng.randrange(len(hf)) for _ in range(rng.randint(1, 10))] for _ in range(2)]
    for ids in cases:  # through `run`, as printed
        want = hf.decode(ids, skip_special_tokens=True) + "\n"
        assert _printed(monkeypatch, capsys, ids, stream=True) == want == _printed(monkeypatch, capsys, ids, False), ids
    ours = Tokenizer(folder)
    for _ in range(300):  # the stream alone, over many more drawn ids
        ids = [rng.randrange(len(hf) + 2) for _ in range(rng.randint(1, 12))]
        stream = ours.stream()
        streamed = "".join(stream.push(i) for i in ids) + stream.finish()
        assert streamed == hf.decode(ids, skip_special_tokens=True), ids


# --- exponential_decay_length_penalty on eos ids past the vocabulary, in a run that ends before it applies ----------

ENDS_BEFORE = {  # transformers prints text: its processor indexes the scores with the eos ids only where it applies
    # (new token start + 2, the 5th for a start of 3.5): the settings, and the new tokens its text has
    "the length ends the run first": ({"exponential_decay_length_penalty": [4, 1.5], "eos_token_id": 9999}, 5),
    "a fractional start, the run one token short of it": (
        {"exponential_decay_length_penalty": [3.5, 2.0], "eos_token_id": [9999, 9998], "max_new_tokens": 4},
        4,
    ),
    "an eos id in the vocabulary ends the run first": (
        {"exponential_decay_length_penalty": [2, 1.5], "eos_token_id": [9999, "PLAIN[1]"], "max_new_tokens": 8},
        2,
    ),
}


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    from test_text_round7 import checkpoint

    return checkpoint(tmp_path_factory.mktemp("gen") / "base")


@pytest.mark.parametrize("case", ENDS_BEFORE)
def test_a_decay_on_eos_ids_past_the_vocabulary_that_never_applies_prints_transformers_text(
    model_folder, monkeypatch, case
):
    """Before: `run` refused the settings before the run ("raises eos ids outside the vocabulary of 320"), where
    transformers' generate (ExponentialDecayLengthPenalty.__call__, which reads ``scores[:, eos_token_id]`` only once
    the sequence is longer than start + the prompt) prints its text."""
    from test_text_round7 import PLAIN, ours, theirs

    setting, length = ENDS_BEFORE[case]
    setting = {"max_new_tokens": 5, **setting}
    if isinstance(setting["eos_token_id"], list):
        setting["eos_token_id"] = [PLAIN[1] if e == "PLAIN[1]" else e for e in setting["eos_token_id"]]
    (model_folder / "generation_config.json").write_text(json.dumps(setting))
    want = theirs(model_folder)
    assert len(want[0]) == length
    for stream in (False, True):
        ids, text, _ = ours(model_folder, monkeypatch, stream=stream)
        assert (ids, text) == want, stream
