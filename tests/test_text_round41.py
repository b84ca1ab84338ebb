"""The forty-first round of text parity: a Hypothesis-driven differential fuzz of the TYPES of the values in
config.json, generation_config.json and tokenizer_config.json, as transformers 5.25 reads them (its strict config
validation, its from_pretrained and generate), against `neurobrix run`.

Drawn (outside the repository; docs/text-rounds.md has the counts): tiny random Llama, Mistral and Qwen2 checkpoints
(test_text_round39's weights and fixture tokenizers), one to three fields rewritten per case with a value of another
type: integers where a float is meant (rms_norm_eps 0 or 1, initializer_range, rope_theta 10000, a rope factor 2),
floats where an integer is meant (hidden_size 48.0, num_key_value_heads 2.0, max_position_embeddings 2048.0), booleans
as 0/1 or "true", numbers as strings, null or the key left out, NaN, infinity, -0.0, integers past 2**53 or 2**64,
negative ids, objects and lists where a scalar is meant (rope_parameters' values, rope_parameters itself), eos as an
int, a list, a list with repeats, pad equal to eos, bos null; dtype and torch_dtype of every JSON kind; in
generation_config.json the ids, limits and sampling settings so; in tokenizer_config.json add_bos_token,
clean_up_tokenization_spaces, model_max_length and the like so.

Found and fixed (each refused now in one line naming the field, where `run` printed text and transformers builds no
model): an integer ``rms_norm_eps`` or ``initializer_range`` (transformers 5.25 types both ``float`` and its strict
validation refuses an int; the engine read it as its float: the open item of rounds 23 and 39, whose two controls
now write 0.0); a ``rope_parameters`` of 0, false, "", [] or -0.0 (typed an object or null; the engine took a falsy
value for none); a ``dtype`` / ``torch_dtype`` that is a number, a bool or a list (from_pretrained fails reading it)
or a torch name that is no floating-point dtype ("int8", "bool", "Tensor": from_pretrained refuses to build under
it). And the other way: a null ``is_encoder_decoder`` or ``chunk_size_feed_forward`` was refused as transformers'
validation had refused it, where 5.25 does not validate PreTrainedConfig's own fields and runs the file: it runs now,
to transformers' text.

Pinned (transformers' text, ids and printed text): the type variants transformers takes, drawn together
(``FURTHEST``). 14 of the 18 tests failed before the fixes (the 4 others are controls). Left open: a rope_theta of 0
or -0.0 stays refused (the README's rule; transformers computes with infinite frequencies), as do an infinite
rms_norm_eps and generation_config.json's use_cache 0 (earlier rounds' documented refusals); the types were drawn one
to three at a time, on PyTorch's kernels only; tokenizer_config.json's types gave no difference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

import test_text_round39 as r39  # noqa: E402  (its checkpoints, its engine driver)

SHAPE = {"hidden_size": 48, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2}


def checkpoint(
    folder: Path, family: str, config: dict[str, Any], generation: dict[str, Any] | None = None, seed: int = 5
) -> str:
    """A tiny random ``family`` checkpoint (round 39's), config.json's fields then given ``config`` as written (None:
    the key removed where the value is the string "<absent>"), generation_config.json ``generation`` (default: an
    eos id no token has). Returns the prompt."""
    prompt, _ = r39.build(folder, family, SHAPE, {}, 8, seed=seed)
    data = json.loads((folder / "config.json").read_text())
    for key, value in config.items():
        if value == "<absent>":
            data.pop(key, None)
        else:
            data[key] = value
    (folder / "config.json").write_text(json.dumps(data))
    if generation is not None:
        (folder / "generation_config.json").write_text(json.dumps(generation))
    return prompt


def transformers_text(folder: Path, prompt: str, new: int) -> tuple[list[int], str]:
    """transformers' own run of the folder: from_pretrained (its dtype the file's, then fp32 as `run` on the CPU),
    greedy generate with the folder's generation_config.json; the new ids and their text. Raises where it fails."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder).float().eval()
    ids = torch.tensor([tok(prompt)["input_ids"]])
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=new)
    got = out[0, ids.shape[1] :].tolist()
    return got, tok.decode(got, skip_special_tokens=True)


# config.json values transformers 5.25 builds no model from, on which `run` printed text: field, value, families
REFUSED = {
    "rms_norm_eps 0 (an integer)": ("rms_norm_eps", 0, ("llama", "mistral", "qwen2")),
    "rms_norm_eps 1 (an integer)": ("rms_norm_eps", 1, ("llama",)),
    "initializer_range 0 (an integer)": ("initializer_range", 0, ("qwen2", "mistral")),
    "rope_parameters 0": ("rope_parameters", 0, ("llama", "qwen2")),
    "rope_parameters []": ("rope_parameters", [], ("mistral",)),
    "rope_parameters false": ("rope_parameters", False, ("llama",)),
    "dtype true": ("dtype", True, ("llama",)),
    "dtype 1.5": ("dtype", 1.5, ("qwen2",)),
    "torch_dtype 0": ("torch_dtype", 0, ("mistral",)),
    "dtype []": ("dtype", [], ("llama",)),
    "dtype int8": ("dtype", "int8", ("llama",)),
    "torch_dtype Tensor": ("torch_dtype", "Tensor", ("qwen2",)),
}


@pytest.mark.parametrize("name", REFUSED)
def test_a_value_transformers_builds_no_model_from_is_refused_in_one_line(tmp_path, name):
    field, value, families = REFUSED[name]
    for family in families:
        folder = tmp_path / family
        prompt = checkpoint(folder, family, {field: value, **({"dtype": None} if field == "torch_dtype" else {})})
        with pytest.raises(Exception):  # noqa: B017  (a validation error, an AttributeError, a ValueError: any)
            transformers_text(folder, prompt, 4)
        refused = r39.engine(folder, prompt, 4)
        assert isinstance(refused, str) and field in refused, (family, refused)


# Type variants transformers takes, drawn together, each run to transformers' text (the fuzz's furthest-reaching)
FURTHEST: dict[str, tuple[str, dict[str, Any], dict[str, Any] | None]] = {
    "null is_encoder_decoder and chunk_size_feed_forward (refused before the fix)": (
        "mistral",
        {"is_encoder_decoder": None, "chunk_size_feed_forward": None},
        None,
    ),
    "a null chunk_size_feed_forward on Llama, is_encoder_decoder 0": (
        "llama",
        {"chunk_size_feed_forward": None, "is_encoder_decoder": 0},
        None,
    ),
    "float eps 0.0, integer top-level theta, eos a list with repeats, pad equal to eos, bos null": (
        "llama",
        {"rms_norm_eps": 0.0, "rope_theta": 500, "bos_token_id": None},
        {"eos_token_id": [7, 7], "pad_token_id": 7, "bos_token_id": None},
    ),
    "integer theta and factor inside rope_parameters, eps -0.0, initializer_range 0.0": (
        "qwen2",
        {
            "rope_parameters": {"rope_type": "linear", "factor": 2, "rope_theta": 100},
            "rms_norm_eps": -0.0,
            "initializer_range": 0.0,
        },
        None,
    ),
    "an object dtype, a null rope_parameters, attention_dropout 0 and -0.0": (
        "mistral",
        {"dtype": {}, "rope_parameters": None, "attention_dropout": 0, "rope_theta": 10000},
        {"eos_token_id": 5, "max_new_tokens": 6.0, "do_sample": 0},
    ),
    "max_position_embeddings 2**53 + 1, dtype float64 over fp32 weights, eos an int in both files": (
        "llama",
        {"max_position_embeddings": 2**53 + 1, "dtype": "float64", "eos_token_id": 9},
        {"eos_token_id": 9, "repetition_penalty": 1, "top_k": 50.0},
    ),
}


@pytest.mark.parametrize("name", FURTHEST)
def test_type_variants_transformers_takes_give_its_text(tmp_path, name):
    family, config, generation = FURTHEST[name]
    prompt = checkpoint(tmp_path / "m", family, config, generation)
    want = transformers_text(tmp_path / "m", prompt, 6)
    assert r39.engine(tmp_path / "m", prompt, 6) == want
