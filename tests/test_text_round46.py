"""The forty-sixth round of text parity: tokenizer.json's model section (the tokenizer model's own options), which no
round had drawn (rounds 26, 28, 31 and 38 drew its normalizers, pre-tokenizers, decoders, post-processors and added
tokens around the fixtures' models as trained), and round 45's open case of a shard name holding glob characters.

Drawn (outside the repository; docs/text-rounds.md has the counts): the four fixture tokenizers and two new models
(a Unigram over a Metaspace pre-tokenizer, a WordLevel over whitespace), their model's options rewritten: BPE's
dropout (null, 0, 0.1 to 0.7, 1), ignore_merges, fuse_unk, byte_fallback, unk_token (null, present, missing from the
vocabulary), continuing_subword_prefix and end_of_word_suffix; WordPiece's max_input_chars_per_word, prefix and
unk_token; Unigram's byte_fallback and unk_id; WordLevel's unk_token; under Llama, Mistral and Qwen2 model types and
declared LlamaTokenizer(Fast) or GPT2Tokenizer classes; `run --backend torch` against transformers 5.25's tokenizer and
float32 greedy ``generate`` on the same folder.

Found and fixed: a BPE ``dropout`` between 0 and 1 makes the tokenizers library skip merges at random as it encodes
(BPE-dropout, a training aid), so transformers' tokenizer gives one prompt other ids from call to call, and `run`
printed a text of its own draw: refused now, naming the value, where transformers' class does not rebuild the model
(a rebuild drops it, and 0 and 1 encode alike every time). Where transformers' class rebuilds the tokenizer from the
file's vocabulary (LlamaTokenizer, Qwen2Tokenizer, GPT2Tokenizer), transformers parses tokenizer.json with the model's
vocabulary and merges left out, so the model's own options are never built; the engine parsed the whole file first,
and a ``continuing_subword_prefix`` its merges do not bear out made the library refuse the file, panic, or abort the
process (its panic message cut inside a character), at `import` and at `run`, where transformers prints text. Where
no class rebuilds it, both fail on such a file: `run` now refuses it in one line before the library is reached.
A shard or template name holding ``*``, ``?`` or ``[`` was handed to snapshot_download as a glob, fetching every file
it matched: each is now asked for as exactly that file.

Each test compares with transformers (or huggingface_hub's own filter) here."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

transformers = pytest.importorskip("transformers")

import test_text_round39 as r39  # noqa: E402  (its builder, reference and engine)

from neurobrix import hub  # noqa: E402
from neurobrix.checkpoint import INDEX, CheckpointError  # noqa: E402

SHAPE = {"hidden_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}


def checkpoint(folder: Path, family: str, kind: str, edit=None, config=None) -> tuple[str, list[int]]:
    """A tiny random ``family`` checkpoint with the fixture tokenizer ``kind``, its tokenizer.json's model rewritten
    by ``edit`` (a function of the model's JSON) and tokenizer_config.json given ``config``; the prompt and its ids
    as transformers' tokenizer now gives them. The next seed where transformers' next tokens meet a near tie."""
    for seed in range(11, 17):
        shutil.rmtree(folder, ignore_errors=True)
        prompt, _ = r39.build(folder, family, SHAPE, {"rope_theta": 10000.0}, 12, seed=seed, spread=4.0, tokenizer=kind)
        data = json.loads((folder / "tokenizer.json").read_text())
        if edit is not None:
            edit(data["model"])
        (folder / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False))
        settings = json.loads((folder / "tokenizer_config.json").read_text())
        (folder / "tokenizer_config.json").write_text(json.dumps({**settings, **(config or {})}))
        ids = transformers.AutoTokenizer.from_pretrained(folder)(prompt)["input_ids"]
        if r39.reference(folder, ids, 6) is not None:
            return prompt, ids
    raise AssertionError("six seeds met a near tie")


def same_text(folder: Path, prompt: str, ids: list[int]) -> None:
    theirs = r39.reference(folder, ids, 6)
    assert theirs is not None, "a near tie"
    ours = r39.engine(folder, prompt, 6)
    assert not isinstance(ours, str), f"run refused what transformers runs: {ours}"
    assert (list(ours[0]), ours[1]) == (theirs[0], theirs[1])


def set_model(folder: Path, **fields) -> None:
    data = json.loads((folder / "tokenizer.json").read_text())
    data["model"].update(fields)
    (folder / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False))


def test_bpe_dropout_is_refused_where_transformers_encodes_at_random(tmp_path):
    """Before: `run` printed text from its own random split of the prompt. A dropout of 1 skips every merge, each time
    alike, and prints transformers' text (as 0 does: none skipped); a class that rebuilds the model drops it (the
    next test's Qwen2 checkpoint)."""
    folder = tmp_path / "m"
    prompt, _ = checkpoint(folder, "llama", "sentencepiece")
    long = " ".join([prompt] * 6)
    set_model(folder, dropout=0.5)
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    assert len({tuple(tok(long)["input_ids"]) for _ in range(8)}) > 1, "transformers encodes at random"
    refused = r39.engine(folder, long, 6)
    assert isinstance(refused, str) and "the BPE model's dropout 0.5 makes" in refused, refused
    set_model(folder, dropout=1.0)
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    (ids,) = {tuple(tok(long)["input_ids"]) for _ in range(4)}  # one encoding
    same_text(folder, long, list(ids))


def _prefix_first(model: dict) -> None:
    """A continuing_subword_prefix of two bytes, and first a merge whose second piece is one ASCII character: the
    tokenizers library panics building the model from the whole file (its check of that merge cuts past the piece's
    end), a PanicException that pyo3 raises. And a dropout of 0.5, which a class rebuilding the model drops."""
    merges = [m.split(" ") if isinstance(m, str) else m for m in model["merges"]]
    first = next(i for i, m in enumerate(merges) if len(m[1]) == 1 and m[1].isascii())
    model["merges"] = [merges[first], *merges[:first], *merges[first + 1 :]]
    model["continuing_subword_prefix"] = "##"
    model["dropout"] = 0.5


@pytest.mark.parametrize(
    "family, kind, config",
    [("qwen2", "bytelevel", {}), ("llama", "sentencepiece", {"tokenizer_class": "LlamaTokenizerFast"})],
)
def test_a_class_rebuilding_the_tokenizer_never_builds_the_files_own_model(tmp_path, family, kind, config):
    """Qwen2Tokenizer and LlamaTokenizer take tokenizer.json's vocabulary and merges and build their own BPE; the
    file's model options are never built (its prefix, its dropout). Before: the engine parsed the whole file, and
    `import` refused the library's panic where transformers prints text."""
    folder = tmp_path / "m"
    prompt, ids = checkpoint(folder, family, kind, _prefix_first, config)
    from tokenizers import Tokenizer

    with pytest.raises(BaseException, match="slice index|out of range"):  # the whole file: the library panics
        Tokenizer.from_file(str(folder / "tokenizer.json"))
    same_text(folder, prompt, ids)


def test_a_prefix_cutting_a_merge_is_refused_in_one_line_where_transformers_fails_too(tmp_path):
    """No class rebuilds a Mistral model's tokenizer: transformers' tokenizer parses the whole file and the library
    panics (pyo3's PanicException), or aborts the process where the cut falls inside a character ("▁", three bytes).
    Before: `run` ended in that abort, no line said why; now refused before the library is reached."""
    folder = tmp_path / "m"
    prompt, _ = checkpoint(folder, "mistral", "sentencepiece")
    data = json.loads((folder / "tokenizer.json").read_text())
    _prefix_first(data["model"])
    (folder / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False))
    with pytest.raises(BaseException, match="slice index|out of range"):
        transformers.AutoTokenizer.from_pretrained(folder)
    refused = r39.engine(folder, prompt, 6)
    assert isinstance(refused, str) and "continuing_subword_prefix '##' (2 bytes) cuts the merge" in refused, refused
    # the first merge's second piece "▁..." cut inside its character: the library aborts the process
    data = json.loads((folder / "tokenizer.json").read_text())
    merges = [m.split(" ") if isinstance(m, str) else m for m in data["model"]["merges"]]
    first = next(i for i, m in enumerate(merges) if m[1].startswith("▁"))
    data["model"]["merges"] = [merges[first], *merges[:first], *merges[first + 1 :]]
    (folder / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False))
    code = "import sys, tokenizers\ntokenizers.Tokenizer.from_file(sys.argv[1])"
    aborted = subprocess.run([sys.executable, "-c", code, str(folder / "tokenizer.json")], capture_output=True)
    assert aborted.returncode < 0, aborted.returncode  # (a signal: SIGABRT)
    code = (
        "import sys\nfrom pathlib import Path\nfrom neurobrix.tokenizer import Tokenizer, TokenizerError\n"
        "try:\n    Tokenizer(Path(sys.argv[1]))\nexcept TokenizerError as refused:\n    print(refused)"
    )
    said = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True)
    assert said.returncode == 0 and "cuts the merge '" in said.stdout and "▁" in said.stdout, said


# ------------------------------------------------------------------------------------------- the hub's patterns
def test_each_name_is_asked_for_as_exactly_that_file():
    """huggingface_hub's own filter (fnmatch) with each pattern: the named file and nothing else."""
    from huggingface_hub.utils import filter_repo_objects

    names = ["w[1].safetensors", "w1.safetensors", "s?.safetensors", "sa.safetensors", "x*.safetensors"]
    names += ["xyz.safetensors", "y[.safetensors", "[!a].safetensors", "b.safetensors", "a]b.safetensors"]
    names += ["additional_chat_templates/*.jinja", "additional_chat_templates/sub/a.jinja"]
    for name in names:
        assert list(filter_repo_objects(names, allow_patterns=[hub.exactly(name)])) == [name], name


def test_the_hub_download_fetches_each_shard_and_template_named_with_glob_characters_alone(tmp_path):
    """Before: "w[1].safetensors" fetched w1.safetensors, "x*.safetensors" every shard starting with x, and a template
    named "*.jinja" every .jinja below additional_chat_templates/, files the import never reads."""
    from huggingface_hub.utils import filter_repo_objects
    from store_fixtures import config_dict

    shards = ["w[1].safetensors", "x*.safetensors", "s?.safetensors"]
    decoys = ["w1.safetensors", "xyz.safetensors", "sa.safetensors", "additional_chat_templates/sub/a.jinja"]
    template = "additional_chat_templates/*.jinja"
    names = ["config.json", "tokenizer.json", INDEX, *shards, *decoys, template]
    snapshot = tmp_path / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(config_dict()))
    weight_map = {f"t{i}": name for i, name in enumerate(shards)}
    (snapshot / INDEX).write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    fetched: list[str] = []

    def download(repo_id, *, revision, allow_patterns, local_files_only):
        fetched.extend(filter_repo_objects(names, allow_patterns=list(allow_patterns)))
        return snapshot

    real = hub._snapshot_download
    hub._snapshot_download = download
    try:
        hub._download("org/m", None, SimpleNamespace(siblings=[SimpleNamespace(rfilename=n) for n in names]))
    except CheckpointError as refused:
        raise AssertionError(refused) from None
    finally:
        hub._snapshot_download = real
    assert set(fetched) == {"config.json", "tokenizer.json", INDEX, *shards, template}, fetched
