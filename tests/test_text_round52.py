"""The fifty-second round of text parity: a sampled run whose generation_config.json holds a top_k or penalty_alpha
that is no number (text, a list, an object), which round 35 refused as the model's files load ("transformers'
generate compares it with 1 [0] to pick its decoding") and rounds 35 and 51 left open.

transformers' get_generation_mode compares top_k with 1 and penalty_alpha with 0 only where do_sample is not true
(contrastive search or greedy); a sampling ``generate(do_sample=True, top_k=K)`` never compares either, and the run's
own ``--top-k`` replaces the file's top_k before its top-k warper reads it. `run` refused such a file before knowing
the run's options; a sampled run's generate arguments (do_sample true, its --top-k / --top-p where given) now replace
the file's settings before that check (``Tokenizer(folder, given)``), the file still validated alone as
from_pretrained does. A greedy run reads no --top-k and is held to the file as before: whatever the file's do_sample,
both sides still fail on such a value (transformers' generate(do_sample=False) compares it); a sampled run without
--top-k refuses a top_k of text, transformers' top-k warper failing on it.

Drawn (outside the repository; docs/text-rounds.md has the counts): `run --backend torch --temperature T --seed S`
against transformers 5.25's ``generate(do_sample=True, temperature=T)`` after ``torch.manual_seed(S)`` on the same
folder (ids and printed text), tiny random Llama, Mistral and Qwen2 checkpoints (round 39's builder)."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

import test_text_round39 as r39  # noqa: E402  (its builder)
import test_text_round51 as r51  # noqa: E402  (its transformers and `run` sides)

SHAPE = r51.SHAPE


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    import json

    folder = tmp_path_factory.mktemp("r52") / "m"
    prompt, ids = r39.build(folder, "llama", SHAPE, {"rope_theta": 10000.0}, 6, seed=7, tokenizer="bytelevel")
    return folder, prompt, ids, json.loads((folder / "generation_config.json").read_text())


def settle(model, fields: dict, do_sample: bool) -> None:
    """The model's generation_config.json with ``fields`` and its own do_sample (a sampled run samples either way)."""
    import json

    folder, _, _, base = model
    (folder / "generation_config.json").write_text(json.dumps({**base, **fields, "do_sample": do_sample}))


# a top_k no number, replaced by the run's own --top-k (beside other fields generate reads as it samples)
REPLACED = {
    "text under --top-k 5": ({"top_k": "5"}, {"top_k": 5}),
    "text under --top-k 0 (every token)": ({"top_k": "x"}, {"top_k": 0}),
    "a list under --top-k 3, beside top_p 0.9": ({"top_k": [3], "top_p": 0.9}, {"top_k": 3}),
    "an object under --top-k 2 and --top-p 0.8": ({"top_k": {"k": 1}}, {"top_k": 2, "top_p": 0.8}),
}


@pytest.mark.parametrize("do_sample", [True, False], ids=["file samples", "file greedy"])
@pytest.mark.parametrize("case", list(REPLACED))
def test_a_top_k_of_no_number_the_run_replaces_samples_as_transformers(model, case, do_sample):
    fields, given = REPLACED[case]
    settle(model, fields, do_sample)
    assert isinstance(r51.theirs(model, {}), str), "transformers samples with the file's value alone"
    expected = r51.theirs(model, given)
    assert isinstance(expected, tuple), expected
    settle(model, {**fields, "top_k": given["top_k"]}, do_sample)
    assert r51.theirs(model, given) == expected, "the file's value changed transformers' draws"
    settle(model, fields, do_sample)
    assert r51.ours(model, given) == expected


@pytest.mark.parametrize("given", [{}, {"top_p": 0.9}], ids=["no option", "--top-p alone"])
def test_without_the_run_s_top_k_it_stays_refused(model, given):
    """transformers' top-k warper fails on the file's text (``top_k != 0`` builds it): `run` refuses it, naming it."""
    r51.settle(model, {"top_k": "5"})
    assert r51.theirs(model, given) == "ValueError", "transformers samples"
    refused = r51.ours(model, given)
    assert isinstance(refused, str) and "generation_config.json: top_k must be an integer >= 0, got '5'" in refused


def greedy_fails(model) -> None:
    """transformers' greedy generate (do_sample=False) fails on the file as it compares its top_k with 1 or its
    penalty_alpha with 0 (a TypeError)."""
    import torch

    folder, _, ids, _ = model
    r51.theirs(model, {})  # the model loaded (and the file's sampled generate run)
    _, net = r51.LOADED[folder]
    net.generation_config = transformers.GenerationConfig.from_pretrained(folder)
    with pytest.raises(TypeError):
        net.generate(input_ids=torch.tensor([ids]), do_sample=False, max_new_tokens=2)


# (the file's fields, the run's given: a greedy run is given no --top-k, which its note says it reads not)
GREEDY_REFUSED = {
    "top_k text, --top-k 5 unread": ({"top_k": "5"}, {"top_k": 5}, "top_k '5'"),
    "penalty_alpha text beside top_k 4": ({"penalty_alpha": "0.6", "top_k": 4}, {}, "penalty_alpha '0.6'"),
}


@pytest.mark.parametrize("do_sample", [True, False], ids=["file samples", "file greedy"])
@pytest.mark.parametrize("case", list(GREEDY_REFUSED))
def test_a_greedy_run_stays_refused(model, monkeypatch, case, do_sample):
    """A greedy run is transformers' generate(do_sample=False) over the file, whatever its do_sample, which compares
    the file's top_k with 1 and penalty_alpha with 0 and fails: `run` refuses the file still."""
    fields, given, named = GREEDY_REFUSED[case]
    settle(model, fields, do_sample)
    greedy_fails(model)
    monkeypatch.setattr(r51, "TEMPERATURE", 0.0)
    refused = r51.ours(model, given)
    assert isinstance(refused, str) and f"generation_config.json: {named}: transformers' generate compares" in refused


# a penalty_alpha of no number, which a sampling generate never reads (it compares penalty_alpha with 0 only where
# do_sample is not true): (the file's fields, the run's given)
NEVER_READ = {
    "text beside top_k 4": ({"penalty_alpha": "0.6", "top_k": 4}, {}),
    "text beside transformers' default top_k 50": ({"penalty_alpha": "x"}, {}),
    "a list under --top-k 3": ({"penalty_alpha": [1]}, {"top_k": 3}),
    "text beside top_k text, under --top-k 2 and --top-p 0.9": ({"penalty_alpha": "x", "top_k": "5"}, {"top_k": 2}),
    "an object beside the repetition penalty and n-grams": (
        {"penalty_alpha": {"a": 1}, "top_k": 4, "repetition_penalty": 1.3, "no_repeat_ngram_size": 2},
        {},
    ),
}


@pytest.mark.parametrize("do_sample", [True, False], ids=["file samples", "file greedy"])
@pytest.mark.parametrize("case", list(NEVER_READ))
def test_a_penalty_alpha_of_no_number_samples_as_transformers(model, case, do_sample):
    fields, given = NEVER_READ[case]
    settle(model, fields, do_sample)
    expected = r51.theirs(model, given)
    assert isinstance(expected, tuple), expected
    settle(model, {k: v for k, v in fields.items() if k != "penalty_alpha"} | {"penalty_alpha": 0.6}, do_sample)
    assert r51.theirs(model, given) == expected, "transformers' draws depend on penalty_alpha"
    settle(model, fields, do_sample)
    assert r51.ours(model, given) == expected


def test_the_file_is_still_validated_alone(model):
    """A file transformers' GenerationConfig refuses as from_pretrained loads it (greedy, do_sample false, with
    num_return_sequences 2) is refused by a sampled run too, though generate(do_sample=True) would take the
    setting."""
    import json

    folder, _, _, base = model
    (folder / "generation_config.json").write_text(json.dumps({**base, "do_sample": False, "num_return_sequences": 2}))
    with pytest.raises(ValueError, match="num_return_sequences"):
        transformers.GenerationConfig.from_pretrained(folder)
    refused = r51.ours(model, {"top_k": 4})
    assert isinstance(refused, str) and "num_return_sequences 2: greedy decoding makes one sequence" in refused
