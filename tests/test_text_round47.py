"""The forty-seventh round of text parity: generation_config.json's fields that change transformers' greedy output
(``generate`` with do_sample false), drawn together with their edges: eos_token_id as an int, a list or an id absent
from config.json, pad_token_id equal to eos, forced_bos_token_id, forced_eos_token_id, suppress_tokens,
begin_suppress_tokens, bad_words_ids, min_new_tokens and min_length, repetition_penalty, no_repeat_ngram_size,
encoder_repetition_penalty and encoder_no_repeat_ngram_size, sequence_bias, max_length against max_new_tokens (and
neither given to `run`: the file's own limit), remove_invalid_values, renormalize_logits, exponential decay, unknown
fields and ill-typed values (strings, floats, booleans, nested and empty lists, negative ids and ids past the
vocabulary, infinities).

Drawn (outside the repository; docs/text-rounds.md has the counts): `run --backend torch` in fp32 against
transformers 5.25's float32 greedy ``generate`` on the same folder (ids and printed text).

Found and fixed: transformers' greedy generate applies ``renormalize_logits`` (LogitNormalization, the log-softmax of
the scores after every processor) though it samples nothing; `run` applied it only when sampling. The argmax of the
log-softmax is the argmax of the scores unless a score is +inf (an infinite ``sequence_bias``, an exponential decay
past float32's range: every score is then NaN and transformers picks token 0, where `run` picked the infinite one) or
two scores round together once the log-sum-exp is taken from them (transformers picks the first). And
``bad_words_ids``: transformers' processor adds a bias of -inf (it is a sequence bias), so a score that
``sequence_bias`` made +inf is NaN after it, which greedy generate's argmax picks; `run` set the score to -inf.

Each test compares with transformers here."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

import test_text_round39 as r39  # noqa: E402  (its builder, reference and engine)

from neurobrix import generate  # noqa: E402

SHAPE = {"hidden_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}


def checkpoint(folder: Path, family: str, kind: str, new: int) -> tuple[str, list[int], list[int]]:
    """A tiny random ``family`` checkpoint with the fixture tokenizer ``kind``, its prompt, the prompt's ids and
    transformers' greedy ids without generation settings; the next seed where those meet a near tie (round 39's
    rule: the fixture tokenizers retrain to other vocabularies from run to run)."""
    for seed in range(11, 17):
        shutil.rmtree(folder, ignore_errors=True)
        prompt, ids = r39.build(
            folder, family, SHAPE, {"rope_theta": 10000.0}, 8, seed=seed, spread=4.0, tokenizer=kind
        )
        (folder / "generation_config.json").write_text("{}")
        plain = reference(folder, ids, new)
        if plain is not None and len(ids) > 1:
            return prompt, ids, plain[0]
    raise AssertionError("six seeds met a near tie")


def settings(folder: Path, **fields) -> None:
    (folder / "generation_config.json").write_text(json.dumps(fields))


def reference(folder: Path, ids: list[int], new: int | None) -> tuple[list[int], str] | None:
    """transformers' float32 greedy generate (``new`` None: the file's own limit); None at a near tie, two largest
    finite scores within r39.MARGIN (an infinite or NaN score is no tie: its argmax is the same every time)."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    inputs = torch.tensor([ids])
    limit = {} if new is None else {"max_new_tokens": new}  # (max_new_tokens=None given would replace the file's)
    with torch.no_grad():
        out = model.generate(
            input_ids=inputs,
            attention_mask=torch.ones_like(inputs),
            do_sample=False,
            output_scores=True,
            return_dict_in_generate=True,
            **limit,
        )
    for scores in out.scores:
        top = torch.topk(scores[0].double(), 2).values.tolist()
        if all(map(math.isfinite, top)) and top[0] - top[1] <= r39.MARGIN * max(1.0, abs(top[0])):
            return None
    got = out.sequences[0, len(ids) :].tolist()
    return got, tok.decode(got, skip_special_tokens=True)


def both(folder: Path, prompt: str, ids: list[int], new: int | None) -> tuple[list[int], str]:
    theirs = reference(folder, ids, new)
    assert theirs is not None, "a near tie"
    ours = r39.engine(folder, prompt, new)
    assert not isinstance(ours, str), f"run refused what transformers runs: {ours}"
    assert (list(ours[0]), ours[1]) == (theirs[0], theirs[1])
    return theirs


def test_an_infinite_sequence_bias_under_renormalize_logits_picks_what_transformers_picks(tmp_path):
    """Before: `run` picked the biased token at every step; transformers' log-softmax makes every score NaN (inf -
    inf), and its argmax picks token 0. Without renormalize_logits both pick the biased token."""
    folder = tmp_path / "m"
    prompt, ids, plain = checkpoint(folder, "qwen2", "metaspace", 4)
    token = next(t for t in range(5, 40) if t not in plain)
    settings(folder, sequence_bias=[[[token], math.inf]])
    assert both(folder, prompt, ids, 4)[0] == [token] * 4
    settings(folder, sequence_bias=[[[token], math.inf]], renormalize_logits=True)
    assert both(folder, prompt, ids, 4)[0] == [0] * 4


def test_a_bad_word_biased_to_infinity_is_nan_as_transformers_adds_its_minus_infinity(tmp_path):
    """transformers' NoBadWordsLogitsProcessor is a sequence bias of -inf, added: a token sequence_bias made +inf is
    NaN after it, and greedy generate's argmax picks the NaN (the bad word itself, at every step). Before: `run` set
    the bad word's score to -inf and picked another token. A two-token bad word applies once its prefix is there."""
    folder = tmp_path / "m"
    prompt, ids, plain = checkpoint(folder, "qwen2", "bytelevel", 3)
    token = next(t for t in range(5, 40) if t not in plain)
    settings(folder, sequence_bias=[[[token], math.inf]], bad_words_ids=[[token]])
    assert both(folder, prompt, ids, 3)[0] == [token] * 3
    settings(folder, sequence_bias=[[[token], math.inf]], bad_words_ids=[[token, token]])
    assert both(folder, prompt, ids, 3)[0] == [token] * 3


def test_a_decay_past_float32s_range_under_renormalize_logits(tmp_path):
    """An exponential decay whose eos score overflows to +inf at the last new token: transformers' greedy generate
    picks that eos id without renormalize_logits and token 0 with it (every score NaN). Before: `run` picked the eos
    id both times."""
    folder = tmp_path / "m"
    prompt, ids, plain = checkpoint(folder, "llama", "sentencepiece", 3)
    eos = next(t for t in range(5, 40) if t not in plain)
    decay = {"eos_token_id": eos, "exponential_decay_length_penalty": [1, 1e200]}
    settings(folder, **decay)
    assert both(folder, prompt, ids, 3)[0][-1] == eos
    settings(folder, **decay, renormalize_logits=True)
    assert both(folder, prompt, ids, 3)[0][-1] == 0


def test_the_greedy_pick_after_renormalize_is_transformers_logit_normalization():
    """Scores whose two largest round together once the log-sum-exp is taken from them: the argmax of the
    log-softmax (transformers' LogitNormalization) is the first of them, not the larger; and +inf makes every score
    NaN (token 0). The engine's greedy pick with renormalize_logits, against transformers' processor."""
    from transformers.generation.logits_process import LogitNormalization

    vocab = 4096
    scores = torch.full((3, vocab), 5.0)
    scores[0, 7] = torch.nextafter(torch.tensor(5.0), torch.tensor(6.0))  # larger by one ulp, after index 0
    scores[1, 9] = math.inf
    scores[2] = torch.randn(vocab, generator=torch.Generator().manual_seed(0))
    theirs = LogitNormalization()(None, scores.clone()).argmax(dim=-1)
    assert scores.argmax(dim=-1)[:2].tolist() == [7, 9] and theirs[:2].tolist() == [0, 0]  # the case is real
    opts = generate.Sampling(renormalize_logits=True)
    assert generate.sample(scores.clone(), opts, None).tolist() == theirs.tolist()


def test_greedy_runs_with_renormalize_logits_leave_the_device_pick_of_raw_logits(tmp_path, monkeypatch):
    """renormalize_logits alone (no other processor): the greedy loop that picks on the device from the raw logits
    (``GreedyDecoder``) is not taken, so each step picks from the log-softmax as transformers does; the text is
    transformers'."""
    folder = tmp_path / "m"
    prompt, ids, _ = checkpoint(folder, "mistral", "bytelevel", 4)
    settings(folder, renormalize_logits=True)
    taken = []
    real = generate.GreedyDecoder

    def spy(*args, **kwargs):
        taken.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(generate, "GreedyDecoder", spy)
    both(folder, prompt, ids, 4)
    assert not taken, "the raw logits' device pick ran under renormalize_logits"


# drawn combinations that reach furthest, each held against transformers (no --max-tokens where None: the file's
# own max_length or max_new_tokens decides, as generate's)
DRAWN = {
    "eos list absent from config.json, pad equal to eos, forced eos at the file's max_length": (
        "llama",
        "sentencepiece",
        lambda p, v: {
            "eos_token_id": [p[3], p[4]],
            "pad_token_id": p[3],
            "forced_eos_token_id": [p[1]],
            "max_length": len(v) + 3,
        },
        None,
        True,
    ),
    "min_new_tokens over an eos list, suppress and begin-suppress, bad words, an unknown field": (
        "qwen2",
        "bytelevel",
        lambda p, v: {
            "eos_token_id": [p[0], p[2]],
            "min_new_tokens": 2,
            "suppress_tokens": [p[1]],
            "begin_suppress_tokens": [p[0]],
            "bad_words_ids": [[v[-1], p[2]]],
            "unknown_field": [1],
        },
        5,
        False,
    ),
    "penalties and n-grams with a sequence bias, max_new_tokens over max_length": (
        "mistral",
        "metaspace",
        lambda p, v: {
            "repetition_penalty": 1.5,
            "encoder_repetition_penalty": 0.7,
            "no_repeat_ngram_size": 2,
            "encoder_no_repeat_ngram_size": 2,
            "sequence_bias": [[[p[1]], -10.0], [[p[0], p[2]], 5.0]],
            "max_new_tokens": 5,
            "max_length": len(v) + 2,
        },
        None,
        False,
    ),
    # transformers' greedy ids without settings are p: its second id an eos that min_new_tokens hides at new token 2
    "the second greedy id an eos id min_new_tokens 2 hides, pad equal to it": (
        "llama",
        "metaspace",
        lambda p, v: {"eos_token_id": [p[1]], "pad_token_id": p[1], "min_new_tokens": 2, "max_new_tokens": 4},
        None,
        False,
    ),
    "the first greedy id begin-suppressed, forced_bos_token_id after a longer prompt (never read)": (
        "qwen2",
        "sentencepiece",
        lambda p, v: {"begin_suppress_tokens": [p[0]], "forced_bos_token_id": p[1], "max_length": len(v) + 3},
        None,
        True,
    ),
}


@pytest.mark.parametrize("name", list(DRAWN))
def test_drawn_generation_settings_print_transformers_text(tmp_path, name):
    family, kind, fields, new, drop_eos = DRAWN[name]
    folder = tmp_path / "m"
    prompt, ids, plain = checkpoint(folder, family, kind, 6)
    settings(folder, **fields(plain, ids))
    if drop_eos:
        config = json.loads((folder / "config.json").read_text())
        config.pop("eos_token_id", None)
        (folder / "config.json").write_text(json.dumps(config))
    both(folder, prompt, ids, new)
