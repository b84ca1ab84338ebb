"""The fifty-second round of text parity: a top_k in generation_config.json that is no number (text, a list, an
object) beside the run's own ``--top-k``, which round 51 left refused.

Round 35 refuses such a top_k as the model's files load ("transformers' generate compares it with 1 to pick its
decoding"), before the run's options are known; transformers' ``generate(top_k=K)`` replaces the file's value first,
so it samples there under the run's own K. The run's given sampling values now replace the file's before that check
(``Tokenizer(folder, given)``), as round 51 left them unread by the sampling filters. Without ``--top-k`` (sampled or
greedy: a greedy run reads no --top-k) such a file stays refused, transformers failing there too.

Drawn (outside the repository; docs/text-rounds.md has the counts): `run --backend torch --temperature T --seed S`
against transformers 5.25's ``generate(do_sample=True, temperature=T)`` after ``torch.manual_seed(S)`` on the same
folder (ids and printed text), tiny random checkpoints (round 39's builder)."""

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


# a top_k no number, replaced by the run's own --top-k (beside other fields generate reads as it samples)
REPLACED = {
    "text under --top-k 5": ({"top_k": "5"}, {"top_k": 5}),
    "text under --top-k 0 (every token)": ({"top_k": "x"}, {"top_k": 0}),
    "a list under --top-k 3, beside top_p 0.9": ({"top_k": [3], "top_p": 0.9}, {"top_k": 3}),
    "an object under --top-k 2 and --top-p 0.8": ({"top_k": {"k": 1}}, {"top_k": 2, "top_p": 0.8}),
}


@pytest.mark.parametrize("case", list(REPLACED))
def test_a_top_k_of_no_number_the_run_replaces_samples_as_transformers(model, case):
    fields, given = REPLACED[case]
    r51.settle(model, fields)
    assert isinstance(r51.theirs(model, {}), str), "transformers samples with the file's value alone"
    expected = r51.theirs(model, given)
    assert isinstance(expected, tuple), expected
    r51.settle(model, {**fields, "top_k": given["top_k"]})
    assert r51.theirs(model, given) == expected, "the file's value changed transformers' draws"
    r51.settle(model, fields)
    assert r51.ours(model, given) == expected


@pytest.mark.parametrize("given", [{}, {"top_p": 0.9}], ids=["no option", "--top-p alone"])
def test_without_the_run_s_top_k_it_stays_refused(model, given):
    r51.settle(model, {"top_k": "5"})
    assert isinstance(r51.theirs(model, given), str), "transformers samples"
    refused = r51.ours(model, given)
    assert isinstance(refused, str) and "generation_config.json: top_k '5'" in refused, refused


def test_a_greedy_run_reads_no_top_k_and_stays_refused(model, monkeypatch):
    """--top-k does nothing to a greedy run (its note says so), which is transformers' greedy generate without it:
    that compares the file's top_k with 1 and fails, so `run` refuses the file still."""
    import torch

    folder, _, ids, _ = model
    r51.settle(model, {"top_k": "5"})
    r51.theirs(model, {})  # loaded once
    _, net = r51.LOADED[folder]
    net.generation_config = transformers.GenerationConfig.from_pretrained(folder)
    with pytest.raises(TypeError):
        net.generate(input_ids=torch.tensor([ids]), do_sample=False, max_new_tokens=2)
    monkeypatch.setattr(r51, "TEMPERATURE", 0.0)
    refused = r51.ours(model, {"top_k": 5})
    assert isinstance(refused, str) and "generation_config.json: top_k '5'" in refused, refused
