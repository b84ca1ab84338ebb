"""The fourteenth round of text parity: generation settings written as another kind of JSON value than the engine read
them as, where transformers' ``generate`` takes them (Python's numbers: a float for a count, true for 1, an integer
for a float) or fails on them.

- Token limits that are not whole numbers: generate takes any number as max_new_tokens or max_length (a float, true)
  and stops once the sequence's length reaches the prompt's plus max_new_tokens, or max_length, so 12.5 new tokens
  are 13, and its forced eos (at a length of max_length less one) never comes for a limit that is not whole. The
  engine refused every limit that was not an integer; it now runs them as generate does, and refuses one that
  never ends (NaN, infinity) or that generate refuses.
- An empty list for a setting: generate compares it with 0, adds it to the prompt's length or hands it to a
  processor that refuses it (no_repeat_ngram_size, encoder_no_repeat_ngram_size, min_length, min_new_tokens,
  bad_words_ids, forced_eos_token_id, encoder_repetition_penalty, sequence_bias, exponential_decay_length_penalty)
  and fails. The engine took [] for no setting and printed the plain text; `run` now refuses it naming the field
  (exit 2). An empty suppress list still runs.
- Numbers of another kind in processor settings: a repetition_penalty of 2 (RepetitionPenaltyLogitsProcessor takes a
  float only; at 1 or true generate builds none), true for a count (the processors' isinstance(value, int) takes it
  as 1), token ids written as floats in suppress_tokens and begin_suppress_tokens (the processors find the
  vocabulary's ids in ``torch.tensor(list(value))`` with ``torch.isin``: 283.0 is 283, 283.5 no id), a single id
  there (``list(283)`` fails), an empty word among bad_words_ids (passed over), a float start of
  exponential_decay_length_penalty. The engine refused the ones generate takes and ran the ones it refuses; now it
  does as generate does, or refuses naming the field.
- An empty stop string: StopStringCriteria takes "" as completed by any token (a match length is never below 0), so
  generate ends at its first new token; the engine dropped "" as ending nothing and ran on. An empty list of stop
  strings, which StopStringCriteria refuses, the engine took for none; `run` refuses it now.
- Ids generate never reads, or reads first: a forced_bos_token_id after a prompt longer than one token (never
  forced, whatever it holds; the engine refused one outside the vocabulary), a bad word of one eos id outside the
  vocabulary (dropped before the ids are checked; the engine refused it), eos ids outside the vocabulary under
  exponential_decay_length_penalty (its processor indexes the scores with them and fails; the engine ran).
- tokenizer_config.json flags transformers' tokenizer refuses as it loads: split_special_tokens, and GPT-2's and
  Qwen2's add_prefix_space, other than true or false (the tokenizers library takes a bool only), a chat_control_tokens
  that is no list. The engine read them by their truth value ("false" as true) and printed text; refused by name.

Round 7's tiny random checkpoints are run through `neurobrix run` (PyTorch's kernels) and transformers' greedy
``generate`` in float64; ids and text must be equal, or the engine must refuse by name where transformers generates
nothing. Each test failed before its fix (the neighbours that still run or are still refused beside them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

from test_text_round7 import PLAIN, PROMPT, checkpoint, ours, theirs  # noqa: E402
from test_text_round13 import _no_text, refused  # noqa: E402

GENERATION = {"eos_token_id": 9999, "max_new_tokens": 12}


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    return checkpoint(tmp_path_factory.mktemp("gen") / "base")


def _write(folder: Path, setting: dict) -> None:
    (folder / "generation_config.json").write_text(json.dumps({**GENERATION, **setting}))


# --- token limits that are not whole numbers -------------------------------------------------------------------

LIMITS = {
    "max_new_tokens 12.0": {"max_new_tokens": 12.0},
    "max_new_tokens 12.5": {"max_new_tokens": 12.5},
    "max_new_tokens true": {"max_new_tokens": True},
    "max_new_tokens 1e-9": {"max_new_tokens": 1e-9},
    "max_length 40.0": {"max_new_tokens": None, "max_length": 40.0},
    "max_length 40.5": {"max_new_tokens": None, "max_length": 40.5},
    "max_length 35.5, the prompt 35 tokens": {"max_new_tokens": None, "max_length": 35.5},
    "max_new_tokens over a fractional max_length": {"max_new_tokens": 3, "max_length": 36.5},
}


@pytest.mark.parametrize("case", LIMITS)
def test_a_token_limit_that_is_no_integer_runs_to_the_length_generate_stops_at(model_folder, monkeypatch, case):
    """generate's MaxLengthCriteria stops once the length reaches max_length (the prompt's 35 tokens plus
    max_new_tokens): 12.5 new tokens are 13, true is 1. Before: refused ("must be an integer >= 1")."""
    _write(model_folder, LIMITS[case])
    want = theirs(model_folder)
    assert ours(model_folder, monkeypatch)[:2] == want


def test_a_fractional_limit_in_config_json_runs_too(tmp_path, monkeypatch):
    """Without generation_config.json, generate takes config.json's max_new_tokens (transformers' config takes 12.5)."""
    folder = checkpoint(tmp_path / "m", fields={"max_new_tokens": 12.5, "eos_token_id": 9999})
    want = theirs(folder)
    assert len(want[0]) == 13
    assert ours(folder, monkeypatch)[:2] == want


@pytest.mark.parametrize("limit", [{"max_new_tokens": 6.5}, {"max_new_tokens": None, "max_length": 41.5}])
def test_forced_eos_never_comes_at_a_fractional_limit(model_folder, monkeypatch, limit):
    """ForcedEOSTokenLogitsProcessor forces its ids where the length equals max_length less one, which 41.5 - 1 never
    is: transformers' text runs to 7 tokens without the forced id, where a limit of 6.0 ends on it (the neighbour)."""
    _write(model_folder, {**limit, "forced_eos_token_id": 7})
    want = theirs(model_folder)
    assert len(want[0]) == 7 and want[0][-1] != 7
    assert ours(model_folder, monkeypatch)[:2] == want
    _write(model_folder, {"max_new_tokens": 6.0, "forced_eos_token_id": 7})
    want = theirs(model_folder)
    assert want[0][-1] == 7 and ours(model_folder, monkeypatch)[:2] == want


@pytest.mark.parametrize(
    "setting, named, generates",
    [
        ({"max_new_tokens": float("nan")}, "max_new_tokens must be a finite number, got nan", True),
        ({"max_new_tokens": float("inf")}, "max_new_tokens must be a finite number, got inf", True),
        ({"max_new_tokens": None, "max_length": float("inf")}, "max_length must be a finite number, got inf", True),
        ({"max_new_tokens": "12"}, "max_new_tokens must be a finite number, got '12'", False),
        ({"max_new_tokens": 0.0}, "max_new_tokens must be above 0, got 0.0", False),
        ({"max_new_tokens": None, "max_length": 34.5}, "max_length of 34.5 tokens", False),
    ],
)
def test_a_limit_that_never_ends_or_that_generate_refuses_is_still_refused(
    model_folder, monkeypatch, capsys, setting, named, generates
):
    """The neighbours: a limit generate never reaches (NaN, infinity: it runs on past the context until an eos id)
    and one it refuses (text, 0, a max_length below the prompt) are refused in one line naming the field."""
    _write(model_folder, setting)
    if not generates:
        _no_text(model_folder)
    refused(model_folder, monkeypatch, capsys, named)


def test_a_fractional_limit_past_the_context_is_refused_as_a_whole_one(tmp_path, monkeypatch, capsys):
    """Round 13's refusal of a model's limit past its context (40 here, the prompt 35) holds for 4.5 new tokens
    (5: the context's end exactly, which runs) and 5.5 (6, past it)."""
    folder = checkpoint(tmp_path / "m", args={"max_position_embeddings": 40}, generation={"eos_token_id": 9999})
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 9999, "max_new_tokens": 4.5}))
    assert ours(folder, monkeypatch)[:2] == theirs(folder)
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 9999, "max_new_tokens": 5.5}))
    refused(folder, monkeypatch, capsys, "max_new_tokens is 5.5", also="past the model's context of 40 tokens")


# --- an empty list for a setting ---------------------------------------------------------------------------------

EMPTY = (
    "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size",
    "min_length",
    "min_new_tokens",
    "bad_words_ids",
    "forced_eos_token_id",
    "encoder_repetition_penalty",
    "sequence_bias",
    "exponential_decay_length_penalty",
)


@pytest.mark.parametrize("name", EMPTY)
def test_an_empty_list_generate_fails_on_is_refused_by_name(model_folder, monkeypatch, capsys, name):
    """Before: the engine took [] for no setting and printed the plain text, where generate fails on it (a TypeError
    comparing it with 0 or adding it to the prompt's length, a processor refusing an empty list or tensor)."""
    _write(model_folder, {name: []})
    _no_text(model_folder)
    refused(model_folder, monkeypatch, capsys, f"{name} []")


@pytest.mark.parametrize(
    "setting",
    [
        {"suppress_tokens": []},
        {"begin_suppress_tokens": []},
        {"forced_bos_token_id": []},  # forced only after a one-token prompt
    ],
)
def test_the_empty_lists_generate_runs_with_still_run(model_folder, monkeypatch, setting):
    _write(model_folder, setting)
    assert ours(model_folder, monkeypatch)[:2] == theirs(model_folder)


# --- numbers of another kind in processor settings ----------------------------------------------------------------

RUNS = {
    "repetition_penalty true": {"repetition_penalty": True},
    "min_new_tokens true": {"min_new_tokens": True, "eos_token_id": PLAIN[0]},
    "min_new_tokens false over min_length": {"min_new_tokens": False, "min_length": 40, "eos_token_id": PLAIN[0]},
    "min_length true": {"min_length": True, "eos_token_id": PLAIN[0]},
    "encoder_no_repeat_ngram_size true": {"encoder_no_repeat_ngram_size": True},
    "suppress_tokens as floats": {"suppress_tokens": [float(PLAIN[0])]},
    "suppress_tokens with a fraction": {"suppress_tokens": [PLAIN[0] + 0.5, PLAIN[1]]},
    "begin_suppress_tokens as floats": {"begin_suppress_tokens": [float(PLAIN[0])]},
    "an empty bad word": {"bad_words_ids": [[], [PLAIN[0]]]},
    "only an empty bad word": {"bad_words_ids": [[]]},
    "decay from 0.5 tokens": {"exponential_decay_length_penalty": [0.5, 4.0], "eos_token_id": PLAIN[5]},
    "decay from true": {"exponential_decay_length_penalty": [True, 4.0], "eos_token_id": PLAIN[5]},
}


@pytest.mark.parametrize("case", RUNS)
def test_numbers_transformers_processors_take_run_as_they_take_them(model_folder, monkeypatch, case):
    """Before: each refused for its type ("must be an integer", "a list of ids", "[start, factor] (an integer...)")
    where transformers generates this text."""
    _write(model_folder, RUNS[case])
    assert ours(model_folder, monkeypatch)[:2] == theirs(model_folder)


def test_the_cases_are_not_the_plain_text(model_folder):
    """Most of those settings change transformers' text (what they are checked for is not vacuous)."""
    changed = []
    for case, setting in RUNS.items():
        _write(model_folder, setting)
        ids = theirs(model_folder)[0]
        _write(model_folder, {k: v for k, v in setting.items() if k == "eos_token_id"})
        changed.append(case) if ids != theirs(model_folder)[0] else None
    assert set(RUNS) - set(changed) == {
        "repetition_penalty true",
        "min_new_tokens false over min_length",
        "min_length true",
        "only an empty bad word",
    }, changed


REFUSED = {
    "repetition_penalty 2": ({"repetition_penalty": 2}, "repetition_penalty must be a number > 0 written as a float"),
    "repetition_penalty 3, an integer": ({"repetition_penalty": 3}, "got 3"),
    "begin_suppress_tokens one id": ({"begin_suppress_tokens": PLAIN[0]}, f"begin_suppress_tokens {PLAIN[0]}"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_numbers_transformers_processors_refuse_are_refused_by_name(model_folder, monkeypatch, capsys, case):
    """Before: the engine applied a repetition penalty of 2 (transformers' processor takes a float only) and
    suppressed a begin_suppress_tokens given as one id (``list(283)`` fails there), printing text."""
    setting, named = REFUSED[case]
    _write(model_folder, setting)
    _no_text(model_folder)
    refused(model_folder, monkeypatch, capsys, named)


@pytest.mark.parametrize(
    "setting, named",
    [
        ({"no_repeat_ngram_size": True}, "no_repeat_ngram_size must be an integer, got True"),
        ({"suppress_tokens": [True]}, "suppress_tokens [True]"),
    ],
)
def test_their_neighbours_generate_fails_on_are_still_refused(model_folder, monkeypatch, capsys, setting, named):
    """true as the n-gram size (torch's unfold refuses it), true among the suppressed ids (torch.isin refuses booleans).
    (A negative decay factor raised to a fraction, a complex number, is refused at the token where transformers'
    processor fails, after the run's notes, since round 29: tests/test_text_round29.py.)"""
    _write(model_folder, setting)
    _no_text(model_folder)
    refused(model_folder, monkeypatch, capsys, named)


# --- an empty stop string, an empty list of them -------------------------------------------------------------------


@pytest.mark.parametrize("stops", [[""], "", ["", "the"]])
@pytest.mark.parametrize("stream", [False, True])
def test_an_empty_stop_string_ends_the_text_at_its_first_token(model_folder, monkeypatch, stops, stream):
    """StopStringCriteria (which generate builds from stop_strings when handed the tokenizer) takes a string as
    completed where the sequence's matched length reaches the string's: never below 0, the empty string's length, so
    "" ends the text at its first new token. Before: the engine dropped "" ("ends nothing") and ran on to the limit or
    the next string."""
    _write(model_folder, {"stop_strings": stops})
    want = theirs(model_folder, tokenizer=transformers.AutoTokenizer.from_pretrained(model_folder))
    assert len(want[0]) == 1
    assert ours(model_folder, monkeypatch, stream=stream)[:2] == want


@pytest.mark.parametrize("kind", ["bytelevel", "sentencepiece", "metaspace", "wordpiece"])
def test_the_empty_stop_string_is_stop_string_criterias_on_every_tokenizer_kind(tmp_path, kind):
    """The stop check against StopStringCriteria itself, on random sequences of each fixture tokenizer's ids (ids past
    its vocabulary too), for "" alone and beside another string."""
    import random

    import torch
    from store_fixtures import config_dict
    from tokenizer_fixtures import save
    from transformers.generation.stopping_criteria import StopStringCriteria

    from neurobrix.tokenizer import StopStrings, Tokenizer

    folder = save(tmp_path / "tok", kind)
    (folder / "config.json").write_text(json.dumps(config_dict("llama")))
    hf, tokenizer = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    rnd = random.Random(kind)
    for stops in ([""], ["", "world"]):
        criteria, check = StopStringCriteria(hf, stops), StopStrings(tokenizer._tok, stops)
        for _ in range(40):
            ids = [rnd.randrange(len(hf) + 3) for _ in range(rnd.randrange(1, 12))]
            assert check(ids) == bool(criteria(torch.tensor([ids]), None)[0]), (stops, ids)


def test_an_empty_list_of_stop_strings_is_refused_by_name(model_folder, monkeypatch, capsys):
    """StopStringCriteria refuses []: no token of the vocabulary ends any of no strings. Before: no stop, the plain
    text."""
    _write(model_folder, {"stop_strings": []})
    with pytest.raises(ValueError, match="unable to identify tokens"):
        theirs(model_folder, tokenizer=transformers.AutoTokenizer.from_pretrained(model_folder))
    refused(model_folder, monkeypatch, capsys, "stop_strings []")


# --- ids generate never reads, or reads first ---------------------------------------------------------------------


@pytest.mark.parametrize("forced", [9999, 5.0, -1, "x", True])
def test_a_forced_start_token_after_a_longer_prompt_is_never_read(model_folder, monkeypatch, forced):
    """ForcedBOSTokenLogitsProcessor acts at a sequence length of 1 only: after the 35-token prompt generate never
    reads forced_bos_token_id, whatever it holds. Before: the engine refused any value that is no id of the
    vocabulary ("must be an id in the vocabulary of 320") where transformers prints the plain text."""
    _write(model_folder, {"forced_bos_token_id": forced})
    assert ours(model_folder, monkeypatch)[:2] == theirs(model_folder)


def test_a_forced_start_token_after_a_one_token_prompt_is_still_refused(model_folder):
    """The neighbour: after a one-token prompt transformers forces the id, and fails on one outside the vocabulary;
    the engine refuses it there."""
    import torch

    from neurobrix.tokenizer import Tokenizer, TokenizerError

    _write(model_folder, {"forced_bos_token_id": 9999})
    model = transformers.AutoModelForCausalLM.from_pretrained(model_folder, dtype=torch.float64)
    with pytest.raises(IndexError):
        model.generate(torch.tensor([[5]]), do_sample=False, max_new_tokens=2)
    with pytest.raises(TokenizerError, match="forced_bos_token_id must be an id in the vocabulary of 320"):
        Tokenizer(model_folder).constraints(320, prompt_len=1)
    assert "forced_bos_token_id" not in Tokenizer(model_folder).constraints(320, prompt_len=2)


@pytest.mark.parametrize("words", [[[9999]], [[9999], [PLAIN[0]]]])
def test_a_bad_word_of_one_eos_id_is_dropped_before_its_id_is_checked(model_folder, monkeypatch, words):
    """NoBadWordsLogitsProcessor drops a one-token word equal to an eos id before anything checks the ids against the
    vocabulary, so an eos id outside it (9999 here) is no error there. Before: refused as an id outside the
    vocabulary."""
    _write(model_folder, {"bad_words_ids": words})
    assert ours(model_folder, monkeypatch)[:2] == theirs(model_folder)


def test_a_length_penalty_on_eos_ids_outside_the_vocabulary_is_refused(model_folder, monkeypatch, capsys):
    """ExponentialDecayLengthPenalty indexes the scores with each eos id: one outside the vocabulary fails there
    (IndexError). Before: the engine passed over that id and printed the plain text. (Since text round 30 the run is
    refused at the first token where the decay applies, as round 29 refuses a power that cannot be computed: its text
    held back, with a note, and none printed.)"""
    from neurobrix.cli import main

    _write(model_folder, {"exponential_decay_length_penalty": [2, 1.5], "eos_token_id": [9999]})
    _no_text(model_folder)
    monkeypatch.setenv("NEUROBRIX_HOME", str(model_folder.parent / "home"))
    assert main(["import", str(model_folder)]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit:
        main(["run", "--model", model_folder.name, "--prompt", PROMPT, "--no-chat", "--backend", "torch"])
    assert exit.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err, (out, err)
    assert "exponential_decay_length_penalty raises eos ids outside the" in err.strip().splitlines()[-1], err


# --- tokenizer_config.json flags of another type than transformers' tokenizer takes --------------------------------

FLAGS = {
    "split_special_tokens text": ("LlamaConfig", {"split_special_tokens": "false"}, "split_special_tokens 'false'"),
    "split_special_tokens 0": ("LlamaConfig", {"split_special_tokens": 0}, "split_special_tokens 0"),
    "split_special_tokens null": ("LlamaConfig", {"split_special_tokens": None}, "split_special_tokens None"),
    "GPT-2's add_prefix_space text": (
        "LlamaConfig",
        {"tokenizer_class": "GPT2TokenizerFast", "add_prefix_space": "false"},
        "add_prefix_space 'false'",
    ),
    "GPT-2's add_prefix_space null": (
        "LlamaConfig",
        {"tokenizer_class": "GPT2TokenizerFast", "add_prefix_space": None},
        "add_prefix_space None",
    ),
    "Qwen2's add_prefix_space 1": ("Qwen2Config", {"add_prefix_space": 1}, "add_prefix_space 1"),
    "chat_control_tokens text": ("LlamaConfig", {"chat_control_tokens": "<|eot_id|>"}, "chat_control_tokens"),
}


def _with_tokenizer_config(tmp_path: Path, family: str, settings: dict) -> Path:
    folder = checkpoint(tmp_path / "m", family, generation=GENERATION)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, **settings}))
    return folder


@pytest.mark.parametrize("case", FLAGS)
def test_a_tokenizer_flag_transformers_tokenizer_refuses_is_refused_by_name(tmp_path, monkeypatch, capsys, case):
    """transformers' tokenizer hands split_special_tokens, and GPT-2's and Qwen2's add_prefix_space, to the tokenizers
    library, which takes a bool only (a TypeError as the tokenizer loads), and refuses a chat_control_tokens that is no
    list. Before: the engine read each by its truth value ("false" as true) and printed text."""
    family, settings, named = FLAGS[case]
    folder = _with_tokenizer_config(tmp_path, family, settings)
    with pytest.raises(TypeError):
        transformers.AutoTokenizer.from_pretrained(folder)
    refused(folder, monkeypatch, capsys, named)


@pytest.mark.parametrize(
    "family, settings",
    [
        ("LlamaConfig", {"split_special_tokens": False}),
        ("LlamaConfig", {"tokenizer_class": "GPT2TokenizerFast", "add_prefix_space": True}),
        ("Qwen2Config", {"add_prefix_space": None}),  # Qwen2's tokenizer takes null as false
        ("LlamaConfig", {"chat_control_tokens": ["<|eot_id|>"]}),
    ],
)
def test_the_flags_transformers_tokenizer_takes_still_run(tmp_path, monkeypatch, family, settings):
    folder = _with_tokenizer_config(tmp_path, family, settings)
    assert ours(folder, monkeypatch)[:2] == theirs(folder)
