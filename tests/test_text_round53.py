"""The fifty-third round of text parity: a sampling generation_config.json with ``num_return_sequences`` above 1, which
rounds 35 and 52 left running one sequence with a note where transformers' sampled generate draws that many rows from
the seed (its first row's draws other than the run's), and the token masks drawn again (no_repeat_ngram_size, the
repetition penalty, bad_words_ids, suppress_tokens, begin_suppress_tokens, forced ids, min_new_tokens beside eos
lists, a pad id equal to an eos id, prompts filling the context).

transformers' generate repeats the prompt ``num_return_sequences`` times and draws every row's token in one
``torch.multinomial`` call per step (each row's draw from its own span of the generator's numbers), so a seed draws
the first row otherwise than a prompt alone. `run` now prints that first sequence, drawing each token over as many
copies of its probabilities (``Sampling.sequences``); where the first sequence's text depends on where the others end,
which `run` cannot tell, it is refused naming the setting: the pad id generate writes after an ended row is one decode
prints or one past the embeddings (its model fails), no eos id with stop strings (an ended row is drawn on), a forced
eos or decay that fails at a length. A count generate fails on (2.0) is refused too; one it reads as 1 runs alone.

Drawn (outside the repository; docs/text-rounds.md has the counts): `run --backend torch` against transformers 5.25's
``generate`` (greedy, and sampled after ``torch.manual_seed(S)``) on the same folder, ids and printed text, tiny random
Llama, Mistral and Qwen2 checkpoints (round 39's builder)."""

from __future__ import annotations

import json

import pytest
import torch

transformers = pytest.importorskip("transformers")

import test_text_round39 as r39  # noqa: E402  (its builder)
import test_text_round51 as r51  # noqa: E402  (its `run` side: --temperature 1 --seed 11, 6 new tokens)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("r53") / "m"
    prompt, ids = r39.build(folder, "llama", r51.SHAPE, {"rope_theta": 10000.0}, 6, seed=7, tokenizer="bytelevel")
    return folder, prompt, ids, {}


def settle(model, fields: dict) -> None:
    """The model's generation_config.json: ``fields`` alone (an eos id the model never draws where they set none)."""
    folder = model[0]
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 99999, **fields}))


def rows(model, greedy: bool = False) -> tuple[list[list[int]], list[str]] | str:
    """transformers' generate over the file as it is (sampled: after torch.manual_seed(11), temperature 1; greedy),
    handed the tokenizer: every row's new ids and text, or the name of the exception it fails with."""
    folder, _, ids, _ = model
    if folder not in r51.LOADED:  # the model and tokenizer, loaded once
        r51.theirs(model, {})
    tok, net = r51.LOADED[folder]
    net.generation_config = transformers.GenerationConfig.from_pretrained(folder)
    inputs = torch.tensor([ids])
    torch.manual_seed(r51.SEED)
    how = {"do_sample": False} if greedy else {"do_sample": True, "temperature": r51.TEMPERATURE}
    try:
        with torch.no_grad():
            out = net.generate(
                input_ids=inputs, attention_mask=torch.ones_like(inputs), max_new_tokens=r51.NEW, tokenizer=tok, **how
            )
    except (TypeError, ValueError, IndexError) as failed:
        return type(failed).__name__
    new = [row[len(ids) :].tolist() for row in out]
    return new, [tok.decode(row, skip_special_tokens=True) for row in new]


def ours(model, monkeypatch=None, greedy: bool = False):
    if greedy:
        monkeypatch.setattr(r51, "TEMPERATURE", 0.0)
    return r51.ours(model, {})


def special(model) -> int:
    tok, _ = r51.LOADED[model[0]]
    return tok.convert_tokens_to_ids(tok.eos_token)


EARLY: dict = {}


def early(model) -> int:
    """A token transformers' first row draws early, that its second does not draw before it (an eos id there ends
    the first row while the second runs on)."""
    if model[0] not in EARLY:
        settle(model, {"do_sample": True, "num_return_sequences": 2})
        first, second = rows(model)[0]
        EARLY[model[0]] = next(t for t in first[1:4] if t not in second[:5] and t != special(model))
    return EARLY[model[0]]


@pytest.mark.parametrize(
    "fields",
    [
        {"num_return_sequences": 2},
        {"num_return_sequences": 3},
        {"num_return_sequences": 2, "top_p": 0.8, "repetition_penalty": 1.3, "no_repeat_ngram_size": 2},
        {"num_return_sequences": 4, "top_k": 0, "num_beams": 1},
    ],
    ids=["2", "3", "2 beside top_p, the penalty and n-grams", "4 beside top_k 0 and num_beams 1"],
)
def test_the_first_of_several_sampled_sequences_is_transformers_first_row(model, fields):
    settle(model, {"do_sample": True, **fields})
    drawn = rows(model)
    assert isinstance(drawn, tuple) and len(drawn[0]) == fields["num_return_sequences"], drawn
    expected = drawn[0][0], drawn[1][0]
    settle(model, {"do_sample": True, **{k: v for k, v in fields.items() if k != "num_return_sequences"}})
    assert rows(model)[0][0] != expected[0], "the first row is drawn as a prompt alone is"
    settle(model, {"do_sample": True, **fields})
    assert ours(model) == expected


def test_a_first_sequence_ending_first_is_padded_with_a_token_decode_drops(model):
    """eos ids [the tokenizer's special eos, a token the first row draws early]: generate pads the ended first row
    with the first eos id (no pad_token_id), which decode drops; its text is the run's."""
    x, s = early(model), special(model)
    for fields in ({"eos_token_id": [s, x]}, {"eos_token_id": x, "pad_token_id": s}):
        settle(model, {"do_sample": True, "num_return_sequences": 2, **fields})
        (first, _), (text, _) = rows(model)
        end = first.index(x) + 1
        assert end < r51.NEW and set(first[end:]) == {s}, first  # the first row padded while the second runs
        assert ours(model) == (first[:end], text)


def printed_pad(model, drawn, x, s) -> None:
    (first, _), (text, _) = drawn
    end = first.index(x) + 1
    assert end < r51.NEW and set(first[end:]) == {x}, first  # padded with the eos it ended at, a plain token
    tok, _ = r51.LOADED[model[0]]
    assert text != tok.decode(first[:end], skip_special_tokens=True), "the pad adds no text"


def drawn_on(model, drawn, x, s) -> None:
    (first, _), (text, _) = drawn
    stop = json.loads((model[0] / "generation_config.json").read_text())["stop_strings"][0]
    assert len(first) == r51.NEW and text.index(stop) + len(stop) < len(text), (first, text)


def fails(name: str):
    def check(model, drawn, x, s) -> None:
        assert drawn == name, drawn

    return check


# (the file's fields given the early token x and the special eos s, what transformers does, what `run` names)
REFUSED = {
    "a pad id decode prints (the first eos id, no pad_token_id)": (
        lambda x, s: {"eos_token_id": [x, s]},
        printed_pad,
        "writes pad id {x} after a sequence that ends while others run, which its decode prints",
    ),
    "a pad id past the embeddings": (
        lambda x, s: {"eos_token_id": x, "pad_token_id": 99999},
        fails("IndexError"),
        "writes pad id 99999 after a sequence that ends while others run, and its model fails",
    ),
    "a forced eos past the embeddings": (
        lambda x, s: {"eos_token_id": s, "forced_eos_token_id": 99999},
        fails("IndexError"),
        "fails once any of its sequences reaches the token where the model's forced_eos_token_id cannot be",
    ),
    "a stop string without eos ids": (
        lambda x, s: {"eos_token_id": None, "stop_strings": "met"},
        drawn_on,
        "goes on drawing a sequence that has met a stop string while the others run",
    ),
    "a count of 2.0": (
        lambda x, s: {"num_return_sequences": 2.0},
        fails("TypeError"),
        "sets num_return_sequences 2.0: transformers' sampling generate repeats the prompt that many times and fails",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_where_the_first_text_depends_on_the_other_rows_it_is_refused(model, case):
    """Each refused naming num_return_sequences: transformers' first row there is other text than that row drawn
    alone to its end (the pad's text after it; tokens after the stop string), or generate fails."""
    x, s = early(model), special(model)
    fields, theirs, named = REFUSED[case]
    made = fields(x, s)
    if made.get("stop_strings") == "met":  # a character of the first row's text, well before its end
        settle(model, {"do_sample": True, "num_return_sequences": 2})
        text = rows(model)[1][0]
        made["stop_strings"] = [next(c for c in text[:-3] if c.isalnum())]
    settle(model, {"do_sample": True, "num_return_sequences": 2, **made})
    theirs(model, rows(model), x, s)
    refused = ours(model)
    assert isinstance(refused, str) and "num_return_sequences" in refused and named.format(x=x) in refused, refused


@pytest.mark.parametrize("greedy", [True, False], ids=["greedy", "sampled"])
def test_the_masks_beside_an_eos_list_and_a_pad_equal_to_an_eos_id_give_transformers_ids(model, monkeypatch, greedy):
    """One of the drawn cases, held: n-grams, the repetition penalty, bad words, suppressed and begin-suppressed
    tokens, a forced eos and min_new_tokens beside an eos list whose second id is the pad id, on the tokens the model
    draws without them (so that each moves the ids)."""
    settle(model, {"do_sample": not greedy})
    plain = rows(model, greedy)[0][0]
    s = special(model)
    fields = {"eos_token_id": [s, plain[3]], "pad_token_id": plain[3], "min_new_tokens": 4}
    fields |= {"no_repeat_ngram_size": 2, "repetition_penalty": 0.5, "bad_words_ids": [[plain[1]]]}
    fields |= {"suppress_tokens": [plain[2]], "begin_suppress_tokens": [plain[0]], "forced_eos_token_id": s}
    settle(model, {"do_sample": not greedy, **fields})
    drawn = rows(model, greedy)
    assert isinstance(drawn, tuple) and drawn[0][0] != plain, drawn
    assert ours(model, monkeypatch, greedy) == (drawn[0][0], drawn[1][0])
