"""The forty-eighth round of text parity: logits the model itself makes NaN or infinite (a weight holding NaN or an
infinity, a float32 value past float16's range once cast), under plain greedy decoding, ``renormalize_logits``,
``repetition_penalty`` and ``bad_words_ids``; and added tokens' contents against each other and the pre-tokenizer
(overlapping and nested contents, whitespace-only ones, multi-word ones, the pre-tokenizers' own markers, a special
token's text inside another's), under each class that rebuilds the tokenizer.

Drawn (outside the repository; docs/text-rounds.md has the counts): `run --backend torch` in fp32 and fp16 against
transformers 5.25's greedy ``generate`` on the same folder (ids and printed text), and the tokenizer alone (prompt
ids, ``decode(skip_special_tokens=True)``).

Found and fixed: a weight that is not finite in a tensor feeding the layers reaches the attention scores, whose NaN
transformers' own kernels treat in different ways: PyTorch's fused CPU SDPA reads a row of NaN scores as masked (the
head's output 0) and its masked path gives NaN. A NaN in q_proj or k_proj left transformers' logits finite and made
the engine's NaN from the second new token on (token 0 each step): another text. `run` now refuses such weights in
one line naming the tensor, as the run holds them (a float32 value past float16's range is an infinity in fp16). A
NaN or an infinity in the final norm or an untied head only reaches the logits, whose NaN and infinities the greedy
pick and the processors take as transformers' do: those print transformers' text.

Each test compares with transformers here."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

import test_text_round39 as r39  # noqa: E402  (its builder and engine)

SHAPE = {"hidden_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}


def reference(folder: Path, ids: list[int], new: int, dtype: str = "fp32") -> tuple[list[int], str, bool]:
    """transformers' greedy generate in ``dtype``: the new ids, their text, and whether every step's scores were
    finite; a near tie among finite scores fails the test (the seeds below meet none)."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=r39.STORAGE[dtype]).eval()
    inputs = torch.tensor([ids])
    with torch.no_grad():
        out = model.generate(
            input_ids=inputs,
            attention_mask=torch.ones_like(inputs),
            do_sample=False,
            max_new_tokens=new,
            output_scores=True,
            return_dict_in_generate=True,
        )
    finite = True
    for scores in out.scores:
        row = scores[0].double()
        finite &= bool(torch.isfinite(row).all())
        if torch.isfinite(row).all():
            top = torch.topk(row, 2).values.tolist()
            assert top[0] - top[1] > r39.MARGIN * max(1.0, abs(top[0])), "a near tie"
    got = out.sequences[0, len(ids) :].tolist()
    return got, tok.decode(got, skip_special_tokens=True), finite


_BUILT: dict[tuple[str, str, int], tuple[Path, str, list[int]]] = {}


def checkpoint(folder: Path, family: str, kind: str, seed: int) -> tuple[str, list[int]]:
    """A tiny random checkpoint copied into ``folder``, its prompt and the prompt's ids; built once per session for
    each (family, kind, seed) and copied for each test that alters it."""
    key = (family, kind, seed)
    if key not in _BUILT:
        built = folder.parent / f"built-{family}-{kind}-{seed}"
        prompt, ids = r39.build(built, family, SHAPE, {"rope_theta": 10000.0}, 8, seed=seed, spread=4.0, tokenizer=kind)
        (built / "generation_config.json").write_text(json.dumps({"eos_token_id": 99999}))
        _BUILT[key] = (built, prompt, ids)
    built, prompt, ids = _BUILT[key]
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(built, folder)
    return prompt, ids


def set_weight(folder: Path, name: str, index: tuple[int, ...], value: float) -> None:
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    weights = load_file(path)
    weights[name][index] = value
    save_file(weights, path, metadata={"format": "pt"})


@pytest.mark.parametrize("name", ["q_proj", "k_proj"])
def test_a_nan_in_q_or_k_proj_is_refused_where_transformers_attention_reads_it_as_masked(tmp_path, name):
    """transformers' SDPA reads the head's NaN scores as masked and prints text of finite logits; the engine's
    attention gave NaN (token 0 from the second new token on): another text. Now refused, naming the tensor."""
    folder = tmp_path / "m"
    prompt, ids = checkpoint(folder, "mistral", "bytelevel", 5)
    tensor = f"model.layers.0.self_attn.{name}.weight"
    set_weight(folder, tensor, (5, 7), math.nan)
    theirs = reference(folder, ids, 3)
    assert theirs[2] and theirs[0][1:] != [0, 0]  # the case is real: finite logits, not the NaN pick
    ours = r39.engine(folder, prompt, 3)
    assert isinstance(ours, str), f"run printed {ours} where transformers prints {theirs[:2]}"
    assert f"tensor '{tensor}' holds NaN in float32" in ours


def test_a_float32_weight_past_float16s_range_is_refused_in_fp16_only(tmp_path):
    """1e5 in a float32 q_proj is an infinity once cast to float16 (transformers casts it as it loads, and so does
    the engine): refused in fp16 naming the dtype; in fp32 it is a number, and the run prints transformers' text."""
    folder = tmp_path / "m"
    prompt, ids = checkpoint(folder, "llama", "sentencepiece", 7)
    tensor = "model.layers.1.self_attn.q_proj.weight"
    set_weight(folder, tensor, (3, 11), 1e5)
    ours = r39.engine(folder, prompt, 3, dtype="fp16")
    assert isinstance(ours, str) and f"tensor '{tensor}' holds an infinity in float16" in ours
    theirs = reference(folder, ids, 3)
    assert r39.engine(folder, prompt, 3) == (theirs[0], theirs[1])


# a NaN or an infinity that reaches the logits only (the final norm, an untied head): transformers' text, each
# processor on the logits as transformers' (the pick takes a NaN as torch.argmax: the first NaN wins)
ONLY_LOGITS = {
    "a head row of NaN, plain greedy": ("lm_head.weight", "row", math.nan, {}),
    "a head row of NaN, renormalize_logits (every score NaN: token 0)": (
        "lm_head.weight",
        "row",
        math.nan,
        {"renormalize_logits": True},
    ),
    "a head row of NaN, a bad word on that token (NaN plus -inf)": ("lm_head.weight", "row", math.nan, {"bad": True}),
    "+inf in the head, repetition_penalty 3": ("lm_head.weight", "one", math.inf, {"repetition_penalty": 3.0}),
    "-inf in the head, renormalize_logits": ("lm_head.weight", "one", -math.inf, {"renormalize_logits": True}),
    "+inf in the final norm, repetition_penalty 0.5": (
        "model.norm.weight",
        "norm",
        math.inf,
        {"repetition_penalty": 0.5},
    ),
}


@pytest.mark.parametrize("case", list(ONLY_LOGITS))
def test_non_finite_weights_reaching_only_the_logits_print_transformers_text(tmp_path, case):
    name, where, value, written = ONLY_LOGITS[case]
    fields = dict(written)
    folder = tmp_path / "m"
    prompt, ids = checkpoint(folder, "qwen2", "metaspace", 12)
    token = 23
    index = {"row": (token,), "one": (token, 4), "norm": (9,)}[where]
    set_weight(folder, name, index, value)
    if fields.pop("bad", False):
        fields["bad_words_ids"] = [[token]]
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 99999, **fields}))
    theirs = reference(folder, ids, 4)
    assert not theirs[2]  # the case is real: transformers' scores are not all finite
    ours = r39.engine(folder, prompt, 4)
    assert ours == (theirs[0], theirs[1]), f"run gave {ours}, transformers {theirs[:2]}"


# --- added tokens: tokenizer.json's own, where tokenizer_config.json has no added_tokens_decoder ---------------------
# transformers' from_pretrained reads them from the file's JSON keyed by the ids it writes (a later entry of one id
# replacing an earlier one) and adds them in the order of those ids, each new text taking the next free id; the engine
# took the library's parse (the file's order; under a rebuilding class, a parse with no vocabulary)


def added_tokens_folder(
    folder: Path, kind: str, tokens: list[tuple[int, dict]], tokenizer_class: str | None, model_type: str | None
) -> int:
    """The fixture tokenizer ``kind`` with ``tokens`` appended to tokenizer.json's added tokens ((offset past the
    last id, or minus an id inside the vocabulary), fields) and no added_tokens_decoder; returns the first id past
    the vocabulary and the tokens the fixture has."""
    from tokenizer_fixtures import save

    save(folder, kind)
    data = json.loads((folder / "tokenizer.json").read_text())
    config = json.loads((folder / "tokenizer_config.json").read_text())
    first = max(max(t["id"] for t in data["added_tokens"]) + 1, len(data["model"]["vocab"]))
    flags = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": False}
    for offset, fields in tokens:
        data["added_tokens"].append({"id": first + offset if offset >= 0 else -offset, **flags, **fields})
    config.pop("added_tokens_decoder", None)
    if tokenizer_class:
        config["tokenizer_class"] = tokenizer_class
    (folder / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False))
    (folder / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False))
    if model_type:
        (folder / "config.json").write_text(json.dumps({"model_type": model_type}))
    return first


# (kind, tokenizer_class, config.json's model_type, added tokens, prompts); drawn cases that parted before
ADDED = {
    "Qwen2's type, ids out of order and one inside the vocabulary": (
        "metaspace",
        None,
        "qwen2",
        [(5, {"content": "▁the", "special": True}), (-5, {"content": "bc"})],
        ["bc ▁the bc", "▁the world ▁the ▁the   ▁the", "hello\n'sbcbc"],
    ),
    "GPT2Tokenizer, two entries of one id (the later one read)": (
        "sentencepiece",
        "GPT2Tokenizer",
        "qwen2",
        [(3, {"content": "abc"}), (3, {"content": "x</s>"})],
        ["x</s>abc中文", "abc", "abcx</s>.\nx</s>  "],
    ),
    "Qwen2Tokenizer declared on a llama, nested contents, a gap and a repeated id": (
        "metaspace",
        "Qwen2Tokenizer",
        "llama",
        [(9, {"content": "<a"}), (1, {"content": "model runs", "special": True}), (9, {"content": "<a><b>"})],
        ["\n <a><b> <a><b>", ".model runs<a><b>", "<a><b> model runs <a <a café"],
    ),
    "LlamaTokenizer, a multi-word special token over a single word, stripped": (
        "sentencepiece",
        "LlamaTokenizer",
        None,
        [
            (1, {"content": "world", "special": True, "single_word": True}),
            (1, {"content": "hello world", "special": True, "lstrip": True}),
            (5, {"content": "<a", "special": True, "rstrip": True}),
        ],
        ["中文 world . world world runs", "world <a world runs world 's", "caféworld"],
    ),
}


@pytest.mark.parametrize("case", list(ADDED))
def test_tokenizer_json_added_tokens_get_transformers_ids(tmp_path, case):
    """The prompt ids and the decoded text of ids holding every added token, against transformers' tokenizer on the
    same folder."""
    from neurobrix.tokenizer import Tokenizer

    kind, tokenizer_class, model_type, tokens, prompts = ADDED[case]
    folder = tmp_path / "t"
    first = added_tokens_folder(folder, kind, tokens, tokenizer_class, model_type)
    theirs = transformers.AutoTokenizer.from_pretrained(folder)
    ours = Tokenizer(folder)
    added = sorted(set(theirs.get_added_vocab().values()) | set(range(first, first + len(tokens))))
    for prompt in prompts:
        assert ours.encode_prompt(prompt, chat=False) == theirs(prompt)["input_ids"], prompt
    ids = [7, *added, 9, *reversed(added)]
    assert ours.decode(ids) == theirs.decode(ids, skip_special_tokens=True)


def test_generated_added_tokens_print_transformers_text(tmp_path):
    """Through `run`: a Qwen2 checkpoint whose tokenizer.json adds tokens at ids out of order (none in
    tokenizer_config.json), one of them biased so that greedy decoding generates it; the ids and printed text are
    transformers'. Before: the engine gave the tokens other ids, so the prompt's ids and the text parted."""
    folder = tmp_path / "m"
    args = {**SHAPE, "vocab_size": 520}
    r39.build(folder, "qwen2", args, {"rope_theta": 10000.0}, 8, seed=21, spread=4.0, tokenizer="metaspace")
    data = json.loads((folder / "tokenizer.json").read_text())
    config = json.loads((folder / "tokenizer_config.json").read_text())
    first = max(max(t["id"] for t in data["added_tokens"]) + 1, len(data["model"]["vocab"]))
    flags = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False}
    data["added_tokens"] += [
        {"id": first + 3, "content": "\n", **flags, "special": False},
        {"id": first + 1, "content": "a>", **flags, "special": True},
        {"id": first, "content": "<a>", **flags, "special": False},
    ]
    config.pop("added_tokens_decoder", None)
    (folder / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False))
    (folder / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False))
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    prompt = "\na><a> model"
    ids = tok(prompt)["input_ids"]
    biased = tok.convert_tokens_to_ids("<a>")
    (folder / "generation_config.json").write_text(
        json.dumps({"eos_token_id": 99999, "sequence_bias": [[[biased], 20.0]]})
    )
    theirs = reference(folder, ids, 4)
    assert biased in theirs[0]  # the case is real: the added token is generated
    assert r39.engine(folder, prompt, 4) == (theirs[0], theirs[1])
