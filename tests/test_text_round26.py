"""The twenty-sixth round of text parity: the tokenizer and detokenisation side, and the limits and ends of a run.

- An empty chat template (an empty chat_template.jinja, or tokenizer_config.json's "chat_template": ""): transformers
  reads it as the model's template (``tokenizer.chat_template == ""``), apply_chat_template renders the chat as no
  text and gives no ids, and generate fails on them (its pipeline too). The engine took "" for no template: `run`
  said "this model has no chat template; the prompt is used as is" and printed the text of the bare prompt, with its
  start token. It now applies the template as transformers does and refuses the empty prompt in one line.
- Held ground (no difference found), pinned here: a differential fuzz of the text layer (neurobrix.tokenizer.Tokenizer
  against transformers' AutoTokenizer on the same folder) over SentencePiece-style (normalizer, and Metaspace
  prepend_scheme "first") and byte-level tokenizers, declared as LlamaTokenizerFast with legacy and add_prefix_space
  or as they are, under model types llama, mistral, qwen2 or none, with added tokens (Mistral-style control tokens,
  chat markers, a vocabulary piece, one starting with a space, one non-ASCII) whose lstrip, rstrip, single_word,
  normalized and special flags differ between tokenizer.json and tokenizer_config.json's added_tokens_decoder, extra
  special tokens, clean_up_tokenization_spaces and split_special_tokens: prompt ids on text that holds special-token
  strings literally, decode(skip_special_tokens=True) of random ids (byte-fallback runs forming multi-byte characters
  across tokens, special tokens between them), and the streamed text equal to that decode (380 configurations
  in the hunt). And the end of a run through `neurobrix run` against transformers' greedy ``generate``: an eos id
  that is an ordinary token (kept in the text), eos lists, min_new_tokens and min_length against max_new_tokens,
  max_length and ``--max-tokens``, forced_eos_token_id under ``--max-tokens``, streamed and not.

Round 7's tiny random checkpoints (byte-level tokenizer) run through `neurobrix run` (PyTorch's kernels) and through
transformers' greedy ``generate`` in float64. The chat-template test failed before its fix.
"""

from __future__ import annotations

import json
import random
import shutil

import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_text_round7 import PROMPT, checkpoint, ours, theirs  # noqa: E402

NEVER_ENDS = 9999  # an eos id outside the vocabulary: only the length ends a run


# --- an empty chat template ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["chat_template.jinja", "tokenizer_config.json"])
def test_an_empty_chat_template_is_applied_as_transformers_applies_it(tmp_path, monkeypatch, where):
    """transformers renders the chat through "" (no ids) and its generate fails there; run refuses in one line where it
    printed the bare prompt's text under a note saying the model had no template."""
    from neurobrix import run
    from neurobrix.errors import UsageError
    from neurobrix.tokenizer import Tokenizer

    folder = checkpoint(tmp_path / "m", fields={"eos_token_id": NEVER_ENDS}, generation={"max_new_tokens": 4})
    if where == "chat_template.jinja":
        (folder / "chat_template.jinja").write_text("")
    else:
        config = json.loads((folder / "tokenizer_config.json").read_text())
        (folder / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": ""}))
    chat = [{"role": "user", "content": PROMPT}]
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    assert tok.chat_template == ""
    want = tok.apply_chat_template(chat, add_generation_prompt=True, return_dict=True)["input_ids"]
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64).eval()
    with pytest.raises(RuntimeError):  # no text to compare: generate fails on no ids (a reshape of none)
        model.generate(torch.tensor([want], dtype=torch.long), max_new_tokens=4, do_sample=False)
    assert Tokenizer(folder).encode_prompt(PROMPT, chat=True) == want == []

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    from neurobrix import store

    store.import_model(str(folder), progress=False)
    notes: list[str] = []
    options = run.RunOptions(model=folder.name, prompt=PROMPT, backend="torch", chat=True, stream=False)
    with pytest.raises(UsageError, match="the prompt is empty after tokenization"):
        run.run(options, write=lambda text: None, notice=notes.append)
    assert not [n for n in notes if "chat template" in n], notes


# --- held: the text layer over tokenizer constructions and added-token flags ---------------------------------------

NEW = ["[INST]", "[/INST]", "<|im_start|>", "<tool>", "ab", " x", "é"]
PIECES = [
    *["Hello", " world", "\n", "  ", " ", "naïve", "中文", "🙂", ".", "don't", "\t"],
    *["<s>", "</s>", "<unk>", "<|eot_id|>", "<|begin_of_text|>", *NEW],
]
FLAGS = ("single_word", "lstrip", "rstrip", "normalized", "special")


def _variant(rng: random.Random, base, folder):
    """A copy of a fixture tokenizer with drawn settings and added tokens (see the module's docstring)."""
    kind = rng.choice(sorted(base))
    shutil.copytree(base[kind], folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    data = json.loads((folder / "tokenizer.json").read_text())
    model_type = rng.choice(["llama", "mistral", "qwen2", None])
    if model_type:
        (folder / "config.json").write_text(json.dumps({"model_type": model_type}))
    if kind != "bytelevel" and rng.random() < 0.5:
        config["tokenizer_class"] = "LlamaTokenizerFast"
        for key in ("legacy", "add_prefix_space"):
            if rng.random() < 0.5:
                config[key] = rng.choice([True, False, None])

    def flags() -> dict:
        return {k: rng.random() < 0.4 for k in FLAGS}

    next_id, extra = len(data["model"]["vocab"]), []
    for token in rng.sample(NEW, rng.randint(0, 4)):
        index = data["model"]["vocab"].get(token)
        if index is None:
            index, next_id = next_id, next_id + 1
        drawn = flags()
        if rng.random() < 0.5:
            data["added_tokens"].append({"id": index, "content": token, **drawn})
        if rng.random() < 0.6:
            config.setdefault("added_tokens_decoder", {})[str(index)] = {
                "content": token,
                **(flags() if rng.random() < 0.5 else drawn),
            }
        if rng.random() < 0.3:
            extra.append(token)
    for entry in config.get("added_tokens_decoder", {}).values():
        if rng.random() < 0.3:
            entry.update(flags())
    if extra and rng.random() < 0.5:
        config["extra_special_tokens"] = extra
    for key in ("clean_up_tokenization_spaces", "split_special_tokens"):
        if rng.random() < 0.3:
            config[key] = True
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "tokenizer.json").write_text(json.dumps(data))
    return folder


def _loaded(load, folder):
    try:
        return load(folder), None
    except Exception as exc:  # compared: both load, or both refuse
        return None, exc


def test_prompt_ids_decoded_and_streamed_text_are_transformers_over_drawn_tokenizers(tmp_path):
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer

    base = {kind: save(tmp_path / "base" / kind, kind) for kind in ("sentencepiece", "metaspace", "bytelevel")}
    rng = random.Random(26)
    loaded = 0
    for case in range(14):
        folder = _variant(rng, base, tmp_path / f"c{case}")
        theirs_tok, their_error = _loaded(transformers.AutoTokenizer.from_pretrained, folder)
        ours_tok, our_error = _loaded(Tokenizer, folder)
        assert (their_error is None) == (our_error is None), (case, their_error, our_error)
        if theirs_tok is None:
            continue
        loaded += 1
        for _ in range(20):
            prompt = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 8)))
            assert ours_tok.encode_prompt(prompt, chat=False) == theirs_tok(prompt)["input_ids"], (case, prompt)
        for _ in range(20):
            ids = [rng.randrange(len(theirs_tok)) for _ in range(rng.randint(1, 10))]
            want = theirs_tok.decode(ids, skip_special_tokens=True)
            assert ours_tok.decode(ids) == want, (case, ids)
            stream = ours_tok.stream()
            assert "".join(stream.push(i) for i in ids) + stream.finish() == want, (case, ids)
    assert loaded >= 12


# --- held: how a run ends ----------------------------------------------------------------------------------------

# round 7's model greedily makes 283, 161, 289, 217, 154, 89, 301, 110, 236, 146, 200, 4 after PROMPT
ENDS = {  # name: (generation_config.json, --max-tokens)
    "an ordinary token as eos": ({"eos_token_id": 217, "max_new_tokens": 12}, None),
    "an eos list": ({"eos_token_id": [2, 217], "max_new_tokens": 12}, None),
    "min_new_tokens past the eos": ({"eos_token_id": 217, "min_new_tokens": 6, "max_new_tokens": 12}, None),
    "min_length past the eos": ({"eos_token_id": 217, "min_length": 40, "max_new_tokens": 12}, None),
    "min_new_tokens over --max-tokens": ({"eos_token_id": 217, "min_new_tokens": 20}, 5),
    "min_new_tokens over max_new_tokens": ({"eos_token_id": 217, "min_new_tokens": 6, "max_new_tokens": 3}, None),
    "--max-tokens over max_length": ({"eos_token_id": 217, "max_length": 40, "min_new_tokens": 3}, 9),
    "forced eos under --max-tokens": ({"eos_token_id": 5, "forced_eos_token_id": 5, "max_length": 45}, 6),
}


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    return checkpoint(tmp_path_factory.mktemp("round26") / "base", fields={"eos_token_id": NEVER_ENDS})


@pytest.mark.parametrize("case", list(ENDS))
def test_where_a_run_ends_is_where_transformers_generate_ends(model_folder, tmp_path, monkeypatch, case):
    generation, max_tokens = ENDS[case]
    folder = tmp_path / "m"
    shutil.copytree(model_folder, folder)
    (folder / "generation_config.json").write_text(json.dumps(generation))
    want = theirs(folder, **({"max_new_tokens": max_tokens} if max_tokens else {}))
    for stream in (False, True):
        ids, text, _ = ours(folder, monkeypatch, max_tokens=max_tokens, stream=stream)
        assert (ids, text) == want, (case, stream)
