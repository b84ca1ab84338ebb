"""The thirty-first round of text parity: tokenizer.json pieces drawn together (normalizer sequences, Split
pre-tokenizers, decoder sequences, post-processors with pair templates or no start token) and tokenizer_config.json
fields, against transformers' tokenizer on the same files, and generation_config.json combinations through `run`.

- The tokenizers library's Rust code panics on some files, and pyo3 raises that as a PanicException, a BaseException
  that ``except Exception`` lets through. Encoding: a normalizer that strips the text's start and then prepends "▁"
  (Sequence [Strip, Prepend]) beside an added token marked ``normalized`` panics on every non-empty prompt
  ("AddedVocabulary bad split"); transformers' ``tokenizer(prompt)`` raises it too, so it has no text; `run` ended in
  that traceback, and now refuses in one line (exit 2). Decoding: a Strip decoder step that cuts a token's end
  ("stop" above 0) panics on a token left empty (the "" a ByteLevel step makes when every token was skipped) or whose
  cuts cross (decoders/strip.rs). The stream decoded its first, empty window with it, so a streamed `run` ended in a
  traceback at the first token where transformers' ``decode(new_ids, skip_special_tokens=True)`` prints text; and
  where the whole decode panics (transformers prints nothing) `run` ended in the traceback. The stream now writes
  nothing until the run ends where the decoder holds such a step (a note says so), and a decode that panics is
  refused in one line, streamed or not, with no text printed.

The hunt (tokenizer variants: ``python tests/test_text_round31.py N SEED``) is the drawing below, run wider outside
CI. Each test failed before its fix.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")


def _imported(tmp_path: Path, monkeypatch, kind: str, edit) -> tuple[Path, object]:
    """A stored tiny model (the generation is replaced) with the fixture tokenizer ``kind``, its tokenizer.json data
    passed through ``edit``; (folder, transformers' tokenizer of it)."""
    from store_fixtures import make_checkpoint
    from tokenizer_fixtures import save

    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "m", use_transformers=False, config=None)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (folder / name).unlink(missing_ok=True)
    save(folder, kind)
    data = json.loads((folder / "tokenizer.json").read_text())
    (folder / "tokenizer.json").write_text(json.dumps(edit(data)))
    assert main(["import", str(folder)]) == 0
    return folder, transformers.AutoTokenizer.from_pretrained(folder)


def _run(monkeypatch, capsys, ids: list[int], stream: bool) -> tuple[int, str, str]:
    """`neurobrix run --no-chat` when the generation makes ``ids``: (exit code, stdout, stderr)."""
    from tokenizer_fixtures import generate_these

    from neurobrix.cli import main

    capsys.readouterr()
    generate_these(monkeypatch, ids)
    flags = [] if stream else ["--no-stream"]
    try:
        code = main(["run", "--model", "m", "--prompt", "hello", "--no-chat", "--backend", "torch", *flags])
    except SystemExit as exit:  # a refusal: main exits with its code
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


def _failure(call) -> BaseException | None:
    try:
        call()
    except BaseException as exc:  # the library's panic is a BaseException
        if isinstance(exc, KeyboardInterrupt):
            raise
        return exc
    return None


# --- encoding: a normalizer on which the library panics -------------------------------------------------------------


def _strip_then_prepend(data: dict) -> dict:
    data["normalizer"] = {
        "type": "Sequence",
        "normalizers": [
            {"type": "Strip", "strip_left": True, "strip_right": False},
            {"type": "Prepend", "prepend": "▁"},
        ],
    }
    index = max(entry["id"] for entry in data["added_tokens"]) + len(data["model"]["vocab"])
    data["added_tokens"].append(
        {"id": index, "content": "\n", "single_word": False, "lstrip": False, "rstrip": False, "normalized": True}
        | {"special": False}
    )
    return data


def test_a_prompt_the_tokenizers_library_panics_on_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    """Before: `run` ended in the PanicException's traceback ("AddedVocabulary bad split"); transformers'
    tokenizer(prompt) raises the same panic (no text to print)."""
    _, hf = _imported(tmp_path, monkeypatch, "sentencepiece", _strip_then_prepend)
    failure = _failure(lambda: hf("hello"))
    assert type(failure).__name__ == "PanicException"
    for stream in (True, False):
        code, out, err = _run(monkeypatch, capsys, [5, 6], stream)
        lines = [line for line in err.splitlines() if line.startswith("neurobrix")]
        assert code == 2 and out == "" and "Traceback" not in err, err
        assert len(lines) == 1 and "the tokenizers library failed" in lines[0], err


# --- decoding: a Strip step that cuts a token's end ------------------------------------------------------------------


def _strip_ends(data: dict) -> dict:
    data["decoder"] = {
        "type": "Sequence",
        "decoders": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            {"type": "Strip", "content": " ", "start": 1, "stop": 1},
        ],
    }
    return data


def test_a_decoder_that_strips_token_ends_prints_transformers_text_or_refuses_where_it_fails(
    tmp_path, monkeypatch, capsys
):
    """Before: the stream decoded its first (empty) window, on which the Strip step panics, so a streamed `run` ended
    in a traceback where transformers' decode prints text; and ids whose whole decode panics under transformers (only
    special tokens: "" from ByteLevel) ended `run` in the traceback, streamed or not."""
    from neurobrix.tokenizer import Tokenizer

    folder, hf = _imported(tmp_path, monkeypatch, "bytelevel", _strip_ends)
    words = hf("Hello world, the model runs fast.", add_special_tokens=False)["input_ids"]
    rng = random.Random(31)
    cases = [words] + [[rng.randrange(len(hf)) for _ in range(rng.randint(1, 8))] for _ in range(4)]
    for ids in cases:
        want = hf.decode(ids, skip_special_tokens=True)
        for stream in (True, False):
            code, out, err = _run(monkeypatch, capsys, ids, stream)
            assert (code, out) == (0, want + "\n"), (ids, stream, err)
            assert ("the text is printed once the run ends" in err) == stream
    special = [hf.convert_tokens_to_ids("<|eot_id|>")]
    assert type(_failure(lambda: hf.decode(special, skip_special_tokens=True))).__name__ == "PanicException"
    for stream in (True, False):
        code, out, err = _run(monkeypatch, capsys, special, stream)
        assert code == 2 and out == "" and "Traceback" not in err, err
        assert "cannot decode the generated tokens" in err
    ours = Tokenizer(folder)
    for _ in range(200):  # the stream alone: transformers' decode, or the refusal where it panics
        ids = [rng.randrange(len(hf)) for _ in range(rng.randint(1, 10))]
        want = _failure(lambda: hf.decode(ids, skip_special_tokens=True))
        stream = ours.stream()
        pushed = "".join(stream.push(i) for i in ids)
        if want is None:
            assert pushed + stream.finish() == hf.decode(ids, skip_special_tokens=True), ids
        else:
            assert pushed == "" and _failure(stream.finish).__class__.__name__ == "TokenizerError", ids
