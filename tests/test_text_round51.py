"""The fifty-first round of text parity: sampled runs, the model's sampling filters in generation_config.json written
as other JSON values than the plain numbers earlier rounds drew (round 10 applied the filters, round 14 read other
settings' types), and beside the run's own ``--top-k`` / ``--top-p``.

Drawn (outside the repository; docs/text-rounds.md has the counts): `run --backend torch --temperature T --seed S`
against transformers 5.25's ``generate(do_sample=True, temperature=T)`` after ``torch.manual_seed(S)`` on the same
folder (ids and printed text), tiny random Llama, Mistral and Qwen2 checkpoints (round 39's builder, the byte-level,
sentencepiece and metaspace fixture tokenizers), in fp32, bf16 and fp16.

Found and fixed: transformers' generate decides whether to build each warper by Python comparisons on the file's
value (``top_k != 0``, ``top_p < 1.0``, ``0.0 < epsilon_cutoff < 1.0``...) and its warpers compute with it, so true
and false are the numbers 1 and 0 there and a top_k of 0.0 builds no top-k warper; `run` refused all of these ("must
be a number, got True", "top_k must be an integer >= 0, got 0.0") where transformers samples. And ``generate(top_k=K)``
replaces the file's top_k before any warper reads it, so a top_k or top_p transformers would refuse, under the run's
own ``--top-k`` / ``--top-p``, samples there; `run` refused it. Values on which transformers' warper fails (a top_k of
true, a typical_p or top_h of false) stay refused, each shown failing in transformers here."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

import test_text_round39 as r39  # noqa: E402  (its builder)

SHAPE = {"hidden_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}
NEW, SEED, TEMPERATURE = 6, 11, 1.0


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> tuple[Path, str, list[int], dict]:
    folder = tmp_path_factory.mktemp("r51") / "m"
    prompt, ids = r39.build(folder, "llama", SHAPE, {"rope_theta": 10000.0}, 6, seed=7, tokenizer="bytelevel")
    return folder, prompt, ids, json.loads((folder / "generation_config.json").read_text())


def settle(model, fields: dict) -> Path:
    folder, _, _, base = model
    (folder / "generation_config.json").write_text(json.dumps({**base, **fields, "do_sample": True}))
    return folder


LOADED: dict[Path, tuple] = {}  # the model and tokenizer, loaded once (only generation_config.json changes)


def theirs(model, given: dict) -> tuple[list[int], str] | str:
    """transformers' sampled generate (``given``: its keyword arguments, as `run`'s --top-k / --top-p): the new ids
    and their text, or the name of the exception it fails with."""
    folder, _, ids, _ = model
    if folder not in LOADED:
        LOADED[folder] = (
            transformers.AutoTokenizer.from_pretrained(folder),
            transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval(),
        )
    tok, net = LOADED[folder]
    net.generation_config = transformers.GenerationConfig.from_pretrained(folder)  # the file as it is now
    inputs = torch.tensor([ids])
    torch.manual_seed(SEED)
    try:
        with torch.no_grad():
            out = net.generate(
                input_ids=inputs,
                attention_mask=torch.ones_like(inputs),
                do_sample=True,
                temperature=TEMPERATURE,
                max_new_tokens=NEW,
                **given,
            )
    except (TypeError, ValueError) as failed:
        return type(failed).__name__
    new = out[0, len(ids) :].tolist()
    return new, tok.decode(new, skip_special_tokens=True)


def ours(model, given: dict) -> tuple[list[int], str] | str:
    """`neurobrix import`, then `run --no-chat --no-stream --temperature T --seed S` (``given``: --top-k / --top-p):
    the new ids and the printed text, or the one-line message refusing the run."""
    from neurobrix import run, store
    from neurobrix.errors import UsageError
    from neurobrix.generate import Sampling

    folder, prompt, _, _ = model
    home = folder.parent / "home"
    shutil.rmtree(home / "models" / folder.name, ignore_errors=True)
    saved = {name: os.environ.get(name) for name in ("NEUROBRIX_HOME", "NEUROBRIX_TABLES")}
    os.environ["NEUROBRIX_HOME"] = str(home)
    os.environ.pop("NEUROBRIX_TABLES", None)
    seen: dict[str, list[int]] = {}
    text: list[str] = []
    real = run.generate

    def generate(*args, **kwargs):
        seen["ids"], stats = real(*args, **kwargs)
        return seen["ids"], stats

    run.generate = generate
    try:
        store.import_model(str(folder), progress=False)
        sampling = Sampling(TEMPERATURE, seed=SEED, **given)
        options = run.RunOptions(
            model=folder.name,
            prompt=prompt,
            max_tokens=NEW,
            backend="torch",
            sampling=sampling,
            chat=False,
            stream=False,
        )
        run.run(options, write=text.append, notice=lambda _: None)
    except UsageError as refused:
        message = str(refused)
        assert message and "\n" not in message, message
        return message
    finally:
        run.generate = real
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return seen["ids"], "".join(text).removesuffix("\n")


# generation_config.json values `run` refused where transformers' generate samples: (the file's fields, the same
# filters written as plain numbers, which must give the same draws, or None where the value builds no warper)
READ_AS_NUMBERS = {
    "top_k false: no top-k warper (top_k != 0 is false), every token": ({"top_k": False}, {"top_k": 0}),
    "top_k 0.0: no top-k warper": ({"top_k": 0.0}, {"top_k": 0}),
    "top_p false: 0, the most likely token": ({"top_p": False}, {"top_p": 0}),
    "top_p true: 1, no top-p warper": ({"top_p": True}, {}),
    "min_p true: 1, the most likely tokens": ({"min_p": True}, {"min_p": 1}),
    "min_p false: 0, a warper dropping nothing": ({"min_p": False, "top_k": 0}, {"min_p": 0, "top_k": 0}),
    "typical_p true: 1, no typical warper": ({"typical_p": True, "top_k": 0}, {"top_k": 0}),
    "epsilon_cutoff true and eta_cutoff false: no warper": (
        {"epsilon_cutoff": True, "eta_cutoff": False, "top_k": 0},
        {"top_k": 0},
    ),
    "top_h true: 1, beside min_p false": ({"top_h": True, "min_p": False}, {"top_h": 1.0, "min_p": 0.0}),
}


@pytest.mark.parametrize("case", list(READ_AS_NUMBERS))
def test_true_false_and_a_zero_float_top_k_sample_as_transformers_reads_them(model, case):
    fields, plain = READ_AS_NUMBERS[case]
    settle(model, fields)
    expected = theirs(model, {})
    assert isinstance(expected, tuple), expected
    settle(model, plain)
    assert theirs(model, {}) == expected, "transformers reads the value otherwise than as its number"
    settle(model, fields)
    assert ours(model, {}) == expected


def test_the_cases_tell_the_readings_apart(model):
    """The plain numbers above give other draws than the filters left out (transformers' default top_k 50 alone):
    a run that ignored false, read 0.0 as the default or true as no limit would print another text."""
    settle(model, {})
    default = theirs(model, {})
    for fields in ({"top_k": 0}, {"top_p": 0}, {"min_p": 1}):
        settle(model, fields)
        assert theirs(model, {}) != default, fields


# values on which transformers' warper fails as generate builds it: refused by `run`, naming the field
FAILING = {
    "top_k true (torch.topk takes no bool)": {"top_k": True},
    "typical_p false (0, outside its (0, 1))": {"typical_p": False},
    "top_h false (0, outside its (0, 1])": {"top_h": False},
    "top_k 1.0 (no integer)": {"top_k": 1.0},
}


@pytest.mark.parametrize("case", list(FAILING))
def test_a_value_transformers_warper_fails_on_stays_refused(model, case):
    fields = FAILING[case]
    settle(model, fields)
    assert isinstance(theirs(model, {}), str), "transformers samples"
    refused = ours(model, {})
    assert isinstance(refused, str) and f"generation_config.json: {next(iter(fields))} must be" in refused, refused


# the file's value, which transformers' warper would fail on, replaced by the run's own --top-k / --top-p before any
# warper reads it (generate(top_k=...)): transformers samples
REPLACED = {
    "top_k 1.5 under --top-k 5": ({"top_k": 1.5}, {"top_k": 5}),
    "top_k -3 under --top-k 0": ({"top_k": -3}, {"top_k": 0}),
    "top_p text under --top-p 0.9": ({"top_p": "0.5"}, {"top_p": 0.9}),
    "top_p -1 under --top-p 0, beside top_k 2": ({"top_p": -1, "top_k": 2}, {"top_p": 0.0}),
}


@pytest.mark.parametrize("case", list(REPLACED))
def test_a_file_value_the_run_replaces_is_not_read(model, case):
    fields, given = REPLACED[case]
    settle(model, fields)
    assert isinstance(theirs(model, {}), str), "transformers samples with the file's value alone"
    expected = theirs(model, given)
    assert isinstance(expected, tuple), expected
    assert ours(model, given) == expected
