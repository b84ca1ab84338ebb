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
- A decoder that rewrites text after a step joining the tokens (round 30's open case: a Replace of "he" after Fuse;
  also a ByteLevel or ByteFallback step, WordPiece's clean-up, a regex): the text of the first tokens is no prefix of
  the whole decode ("th", then "tHE"), so a streamed `run` ended in a RuntimeError ("... is not a prefix of the
  decoded text"). The stream now writes nothing until the run ends there too (a note says so).
- Held (no difference found): the last test draws tokenizer.json pieces together (normalizer sequences of Prepend,
  Replace, NFKC/NFC/NFD/NFKD, Lowercase, Strip, StripAccents; Split pre-tokenizers of regexes and strings under
  every behaviour, inverted or not, before or after the file's own; decoder sequences; TemplateProcessing with pair
  templates, no start token, two start tokens or an end token, BertProcessing, a ByteLevel processor first), added
  tokens with drawn lstrip/rstrip/single_word/normalized/special flags in tokenizer.json and added_tokens_decoder,
  and tokenizer_config.json fields (clean_up_tokenization_spaces true, false or null, spaces_between_special_tokens,
  model_max_length below the prompt, padding and truncation sides, add_prefix_space, add_bos_token, add_eos_token,
  split_special_tokens, LlamaTokenizerFast with legacy) under model types llama, mistral, qwen2 or none; prompt ids,
  decoded and streamed text are transformers', or both fail.

The hunt (``python tests/test_text_round31.py N SEED``) is that drawing, run wider outside CI. The first three tests
failed before their fixes.
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


# --- decoding: a decoder that replaces text across the tokens it has joined ----------------------------------------


def _replace_after_fuse(data: dict) -> dict:
    steps = data["decoder"]["decoders"]  # Replace("▁", " "), ByteFallback, Fuse, Strip
    steps.insert(3, {"type": "Replace", "pattern": {"String": "he"}, "content": "HE"})
    return data


def test_a_decoder_replacing_text_across_joined_tokens_streams_transformers_text(tmp_path, monkeypatch, capsys):
    """Round 30's open case. Before: a stream wrote "th" after "t" and "h", where the whole decode of "t", "h", "e" is
    "tHE": the streamed `run` ended in a RuntimeError ("... is not a prefix of the decoded text")."""
    from neurobrix.tokenizer import Tokenizer

    folder, hf = _imported(tmp_path, monkeypatch, "sentencepiece", _replace_after_fuse)
    spell = hf.convert_tokens_to_ids
    ids = [spell("▁"), spell("t"), spell("h"), spell("e"), spell("▁th"), spell("e")]
    assert hf.unk_token_id not in ids and hf.decode(ids, skip_special_tokens=True) == "tHE tHE"
    want = hf.decode(ids, skip_special_tokens=True)
    for stream in (True, False):
        code, out, err = _run(monkeypatch, capsys, ids, stream)
        assert (code, out) == (0, want + "\n"), (stream, err)
        assert ("rewrites text across tokens" in err) == stream
    ours, rng = Tokenizer(folder), random.Random(30)
    for _ in range(300):
        ids = [rng.randrange(len(hf)) for _ in range(rng.randint(1, 10))]
        stream = ours.stream()
        streamed = "".join(stream.push(i) for i in ids) + stream.finish()
        assert streamed == hf.decode(ids, skip_special_tokens=True), ids


# --- held: the text layer over drawn tokenizer.json pieces and tokenizer_config.json fields (the hunt's drawing) -----

NEW = ["[INST]", "[/INST]", "<|im_start|>", "<tool>", "ab", " x", "é", "<mask>", "\n", "Hello"]
PIECES = [
    *["Hello", " world", "\n", "  ", " ", "naïve", "Café", "ＡＢＣ", "ﬁ", "①", "中文", "🙂", ".", " ,", "don't", "\t"],
    *["x", "<s>", "</s>", "<unk>", "<|eot_id|>", "<|begin_of_text|>", "[SEP]", "[UNK]", *NEW, "É", "ǅ", "K", "ß"],
]
FLAGS = ("single_word", "lstrip", "rstrip", "normalized", "special")
CONFIG_FIELDS = {
    "clean_up_tokenization_spaces": [True, False, None],
    "spaces_between_special_tokens": [True, False],
    "model_max_length": [3, 5, 10**30],
    "padding_side": ["left", "right"],
    "truncation_side": ["left", "right"],
    "add_prefix_space": [True, False],
    "add_bos_token": [True, False],
    "add_eos_token": [True, False],
    "split_special_tokens": [True, False],
    "do_lower_case": [True, False],
}


def _normalizer(rng: random.Random) -> dict:
    steps = [
        {"type": "Prepend", "prepend": "▁"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
        *({"type": kind} for kind in ("NFKC", "NFC", "NFD", "NFKD", "Lowercase", "StripAccents")),
        {"type": "Strip", "strip_left": rng.random() < 0.5, "strip_right": rng.random() < 0.5},
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        {"type": "Replace", "pattern": {"String": "é"}, "content": "e"},
    ]
    return {"type": "Sequence", "normalizers": [rng.choice(steps) for _ in range(rng.randint(1, 4))]}


def _split(rng: random.Random) -> dict:
    patterns = [r"\p{N}", r" ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+", r"\s+", r"(?i:'s|'t)"]
    pattern = rng.choice([{"Regex": p} for p in patterns] + [{"String": " "}, {"String": "▁"}])
    behavior = rng.choice(["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"])
    return {"type": "Split", "pattern": pattern, "behavior": behavior, "invert": rng.random() < 0.2}


def _decoder(rng: random.Random) -> dict:
    steps = [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": rng.randint(0, 2), "stop": rng.randint(0, 1)},
        {"type": "Metaspace", "replacement": "▁", "prepend_scheme": rng.choice(["always", "first", "never"])},
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        {"type": "WordPiece", "prefix": "##", "cleanup": rng.random() < 0.5},
        {"type": "Replace", "pattern": {"String": rng.choice(["a", "he"])}, "content": "AA"},
    ]
    drawn = [rng.choice(steps) for _ in range(rng.randint(1, 4))]
    return {"type": "Sequence", "decoders": drawn} if rng.random() < 0.8 else drawn[0]


def _post_processor(rng: random.Random, data: dict, config: dict) -> dict | None:
    bos, eos = config.get("bos_token") or "<s>", config.get("eos_token") or "</s>"
    added = {entry["content"]: entry["id"] for entry in data["added_tokens"]}

    def index(token: str) -> int:
        return added.get(token, data["model"]["vocab"].get(token, 0))

    a, special = (
        {"Sequence": {"id": "A", "type_id": 0}},
        {t: {"SpecialToken": {"id": t, "type_id": 0}} for t in (bos, eos)},
    )
    single = rng.choice([[a], [special[bos], a, special[eos]], [a, special[eos]], [special[bos], special[bos], a]])
    template = {
        "type": "TemplateProcessing",
        "single": single,
        "pair": [*single, {"Sequence": {"id": "B", "type_id": 1}}, special[eos]],
        "special_tokens": {t: {"id": t, "ids": [index(t)], "tokens": [t]} for t in (bos, eos)},
    }
    return rng.choice(
        [
            None,
            template,
            template,
            {
                "type": "Sequence",
                "processors": [
                    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
                    template,
                ],
            },
            {"type": "BertProcessing", "sep": [eos, index(eos)], "cls": [bos, index(bos)]},
        ]
    )


def _variant(rng: random.Random, base: dict[str, Path], folder: Path) -> None:
    """A fixture tokenizer with drawn tokenizer.json pieces, added tokens and their flags, and tokenizer_config.json
    fields, under a drawn model type."""
    kind = rng.choice(sorted(base))
    shutil.copytree(base[kind], folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    data = json.loads((folder / "tokenizer.json").read_text())
    model_type = rng.choice(["llama", "llama", "mistral", "qwen2", None])
    if model_type:
        (folder / "config.json").write_text(json.dumps({"model_type": model_type}))
    if rng.random() < 0.5:
        data["normalizer"] = _normalizer(rng)
    if rng.random() < 0.4:
        steps = [_split(rng)] + ([data["pre_tokenizer"]] if data.get("pre_tokenizer") else [])
        data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": steps[:: rng.choice([1, -1])]}
    if rng.random() < 0.3:
        data["decoder"] = _decoder(rng)
    if rng.random() < 0.6:
        data["post_processor"] = _post_processor(rng, data, config)
    if kind != "bytelevel" and rng.random() < 0.3:
        config["tokenizer_class"] = "LlamaTokenizerFast"
        config |= {key: rng.random() < 0.5 for key in ("legacy", "add_prefix_space") if rng.random() < 0.5}
    next_id = max([*data["model"]["vocab"].values(), *(entry["id"] for entry in data["added_tokens"])]) + 1
    for token in rng.sample(NEW, rng.randint(0, 4)):
        index = data["model"]["vocab"].get(token)
        if index is None:
            index, next_id = next_id, next_id + 1
        flags = {k: rng.random() < 0.4 for k in FLAGS}
        if rng.random() < 0.5:
            data["added_tokens"].append({"id": index, "content": token, **flags})
        if rng.random() < 0.6:
            flags = {k: rng.random() < 0.4 for k in FLAGS} if rng.random() < 0.5 else flags
            config.setdefault("added_tokens_decoder", {})[str(index)] = {"content": token, **flags}
    config |= {key: rng.choice(values) for key, values in CONFIG_FIELDS.items() if rng.random() < 0.25}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "tokenizer.json").write_text(json.dumps(data))


def _outcome(call) -> object:
    """What ``call`` gives, or "fails" where it raises (the library's panic, or the engine's one-line refusal)."""
    result: list[object] = []
    failure = _failure(lambda: result.append(call()))
    return "fails" if failure is not None else result[0]


def hunt(n: int, root: Path, seed: int = 0) -> dict[str, int]:
    """``n`` drawn tokenizers: each loads on both sides or on neither; prompt ids (transformers' ``tokenizer(prompt)``
    against ``encode_prompt``), decoded and streamed text (its ``decode(ids, skip_special_tokens=True)``) equal, or
    both fail. Returns the counts; a difference fails an assertion naming the case."""
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer

    kinds = ("sentencepiece", "metaspace", "bytelevel", "wordpiece")
    base = {kind: save(root / "base" / kind, kind) for kind in kinds}
    rng = random.Random(seed)
    counts = {"tokenizers": 0, "loaded": 0, "prompts": 0, "decodes": 0, "failing on both sides": 0}
    for case in range(n):
        folder = root / f"case{case}"
        _variant(rng, base, folder)
        theirs, ours = (
            _outcome(lambda: transformers.AutoTokenizer.from_pretrained(folder)),
            _outcome(lambda: Tokenizer(folder)),
        )
        assert (theirs == "fails") == (ours == "fails"), (case, folder)
        counts["tokenizers"] += 1
        if theirs == "fails":
            continue
        counts["loaded"] += 1
        for _ in range(15):
            prompt = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 8)))
            want = _outcome(lambda: theirs(prompt)["input_ids"])
            assert _outcome(lambda: ours.encode_prompt(prompt, chat=False)) == want, (case, prompt)
            counts["prompts"] += 1
        for _ in range(15):
            ids = [rng.randrange(len(theirs)) for _ in range(rng.randint(1, 10))]
            want = _outcome(lambda: theirs.decode(ids, skip_special_tokens=True))

            def streamed() -> str:
                stream = ours.stream()
                return "".join(stream.push(i) for i in ids) + stream.finish()

            assert _outcome(lambda: ours.decode(ids)) == want == _outcome(streamed), (case, ids)
            counts["decodes"] += 1
            counts["failing on both sides"] += want == "fails"
        shutil.rmtree(folder)
    return counts


def test_drawn_tokenizer_pieces_and_settings_give_transformers_ids_and_text(tmp_path):
    counts = hunt(16, tmp_path, seed=31)
    assert counts["loaded"] >= 8 and counts["decodes"] == 15 * counts["loaded"], counts


if __name__ == "__main__":  # the hunt: python tests/test_text_round31.py N SEED
    import tempfile

    sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parent.parent)]
    with tempfile.TemporaryDirectory() as root:
        print(
            hunt(
                int(sys.argv[1]) if len(sys.argv) > 1 else 200, Path(root), int(sys.argv[2]) if len(sys.argv) > 2 else 0
            )
        )
