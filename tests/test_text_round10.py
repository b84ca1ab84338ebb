"""The tenth round of text parity: generation_config.json settings that transformers' ``generate`` applies and the
engine ignored or named without applying. Sampling: generate samples through all of its warpers, with top_k 50
where the model sets none, and min_p, typical_p, epsilon_cutoff, eta_cutoff and top_h from the model's file; `run
--temperature T --seed S` sampled from every token with none of those, so its draws parted from transformers' seeded
ones. Its top-p cut differed where probabilities tie. Greedy: sequence_bias and exponential_decay_length_penalty,
which change transformers' text, were only named in a note. Tiny random checkpoints (round 7's) are run through
`neurobrix run` (PyTorch's kernels) and through transformers' ``generate`` on the same folder, sampled after
``torch.manual_seed`` (the engine's ``--seed`` draws the same stream); ids and text must be equal. Each test failed
before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_text_round7 import PLAIN, PROMPT, checkpoint, theirs  # noqa: E402
from test_text_round7 import ours as round7_ours  # noqa: E402

SEED, TEMPERATURE = 5, 1.3


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    return checkpoint(tmp_path_factory.mktemp("gen") / "base")


def ours(folder: Path, monkeypatch, temperature: float = 0.0) -> tuple[list[int], str, list[str]]:
    """round 7's `ours`, sampling with ``--temperature`` and ``--seed SEED`` above 0: new ids, text, notes."""
    from neurobrix.generate import Sampling

    return round7_ours(folder, monkeypatch, sampling=Sampling(temperature, seed=SEED) if temperature else None)


def sampled(folder: Path) -> tuple[list[int], str]:
    """transformers' generate(do_sample=True, temperature=TEMPERATURE) after torch.manual_seed(SEED), in float32 (the
    engine's CPU dtype), with the folder's generation_config.json: new ids, their text."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    inputs = tok(PROMPT, return_tensors="pt")
    torch.manual_seed(SEED)
    with torch.no_grad():
        out = model.generate(**inputs, do_sample=True, temperature=TEMPERATURE)
    new = out[0, inputs["input_ids"].shape[1] :].tolist()
    return new, tok.decode(new, skip_special_tokens=True)


SAMPLING = {
    "no top_k: transformers' 50": {},
    "min_p": {"top_k": 0, "min_p": 0.2},
    "typical_p": {"top_k": 0, "typical_p": 0.5},
    "epsilon_cutoff": {"top_k": 0, "epsilon_cutoff": 0.05},
    "eta_cutoff": {"top_k": 0, "eta_cutoff": 0.01},
    "top_h": {"top_h": 0.6},
    "every filter, a penalty, an n-gram mask": {
        "top_k": 30,
        "top_p": 0.95,
        "min_p": 0.05,
        "typical_p": 0.9,
        "epsilon_cutoff": 0.001,
        "eta_cutoff": 0.002,
        "repetition_penalty": 1.2,
        "no_repeat_ngram_size": 2,
    },
}


@pytest.mark.parametrize("case", SAMPLING)
def test_sampling_applies_the_models_filters_as_transformers_generate(model_folder, monkeypatch, case):
    """`run --temperature T --seed S` against transformers' seeded generate(do_sample=True, temperature=T): the engine
    sampled from every token where the model sets no top_k (generate takes 50) and ignored min_p, typical_p,
    epsilon_cutoff, eta_cutoff and top_h; each case's draws parted from transformers' within 12 tokens. A note now
    names what was taken."""
    generation = {"eos_token_id": 9999, "max_new_tokens": 12, **SAMPLING[case]}
    (model_folder / "generation_config.json").write_text(json.dumps(generation))
    want = sampled(model_folder)
    ids, text, notes = ours(model_folder, monkeypatch, TEMPERATURE)
    assert (ids, text) == want
    said = [n for n in notes if n.startswith("note: sampling with")]
    assert len(said) == 1, notes
    for name in SAMPLING[case]:
        if name in ("top_h", "min_p", "typical_p", "epsilon_cutoff", "eta_cutoff"):
            assert name in said[0]
    if "top_k" not in SAMPLING[case]:
        assert "top_k 50 (transformers' default" in said[0]


def test_the_draw_is_transformers_warpers_bit_for_bit():
    """The distribution ``sample`` hands ``torch.multinomial`` equals the softmax of transformers' warpers' scores,
    bit for bit, on rows with ties and wide spreads. Before: top-p was cut from the most likely token down, which
    keeps the other one of two tied tokens at the cut (here [log 2, 0, 0] at 0.75: transformers drops token 1)."""
    from test_model_reference import handed_to_the_draw
    from transformers.generation import logits_process as lp

    from neurobrix.generate import Sampling

    gen = torch.Generator().manual_seed(0)
    rows = [
        torch.tensor([[torch.log(torch.tensor(2.0)).item(), 0.0, 0.0]]),
        torch.randint(-3, 4, (4, 40), generator=gen).float(),  # many ties
        torch.randn((4, 64), generator=gen) * 3,
    ]
    options = [
        {"top_p": 0.75},
        {"top_k": 7, "top_p": 0.6},
        {"min_p": 0.3},
        {"typical_p": 0.7},
        {"epsilon_cutoff": 0.03},
        {"eta_cutoff": 0.05},
        {"top_h": 0.5, "top_k": 20},
        {"top_k": 12, "top_p": 0.9, "min_p": 0.1, "typical_p": 0.95, "epsilon_cutoff": 0.001, "eta_cutoff": 0.001},
    ]
    warpers = {
        "top_h": lambda v: lp.TopHLogitsWarper(top_h=v),
        "top_k": lambda v: lp.TopKLogitsWarper(top_k=v),
        "top_p": lambda v: lp.TopPLogitsWarper(top_p=v),
        "min_p": lambda v: lp.MinPLogitsWarper(min_p=v),
        "typical_p": lambda v: lp.TypicalLogitsWarper(mass=v),
        "epsilon_cutoff": lambda v: lp.EpsilonLogitsWarper(epsilon=v),
        "eta_cutoff": lambda v: lp.EtaLogitsWarper(epsilon=v),
    }
    for logits in rows:
        for option in options:
            scores = logits / 0.8
            for name, warper in warpers.items():  # generate's order
                if name in option:
                    scores = warper(option[name])(None, scores)
            _, (handed,) = handed_to_the_draw(logits, Sampling(0.8, **option))
            assert torch.equal(handed, scores.softmax(dim=-1)), (logits, option)


GREEDY = {
    "sequence_bias, one token": {"sequence_bias": [[[PLAIN[1]], -100.0], [[5], 2.0]]},
    "sequence_bias, longer sequences": {
        "sequence_bias": [[[PLAIN[0], PLAIN[1], PLAIN[2], PLAIN[3]], -60.0], [[PLAIN[0], PLAIN[5]], 0.5]]
    },
    "exponential_decay_length_penalty": {"eos_token_id": PLAIN[5], "exponential_decay_length_penalty": [1, 3.0]},
    "exponential decay, an eos list": {
        "eos_token_id": [PLAIN[7], 3],
        "exponential_decay_length_penalty": [2, 1.5],
    },
}


@pytest.mark.parametrize("case", GREEDY)
def test_sequence_bias_and_exponential_decay_are_applied_as_transformers_applies_them(model_folder, monkeypatch, case):
    """generation_config.json's sequence_bias (a bias added to a token's score, for a longer sequence where the text
    so far ends with the rest of it) and exponential_decay_length_penalty (eos scores raised more with each token
    past a start): the engine named them as not applied and printed the unbiased text (each case differs from it
    here); now its greedy text is transformers' and no note names them."""
    generation = {"eos_token_id": 9999, "max_new_tokens": 12, **GREEDY[case]}
    (model_folder / "generation_config.json").write_text(json.dumps(generation))
    want = theirs(model_folder)
    assert want[0] != PLAIN
    ids, text, notes = ours(model_folder, monkeypatch)
    assert (ids, text) == want
    assert not [n for n in notes if "does not apply" in n], notes


@pytest.mark.parametrize(
    "setting, named",
    [
        ({"sequence_bias": [[[5], 1]]}, "sequence_bias must be a list of [token ids, bias] pairs"),
        ({"sequence_bias": [[[5000], 1.0]]}, "sequence_bias [5000] names ids outside the vocabulary"),
        ({"exponential_decay_length_penalty": [2]}, "exponential_decay_length_penalty must be [start, factor]"),
        ({"eos_token_id": None, "exponential_decay_length_penalty": [2, 1.5]}, "needs an eos_token_id"),
        ({"min_p": 1.5}, "min_p must be in [0, 1] to sample with, got 1.5"),
        ({"top_h": 0}, "top_h must be in (0, 1] to sample with"),
        ({"top_k": -1}, "top_k must be an integer >= 0, got -1"),
    ],
)
def test_settings_transformers_refuses_are_refused_naming_the_field(tmp_path, monkeypatch, capsys, setting, named):
    """Values transformers' processors and warpers refuse (generate raises) are refused in one line naming the field
    (exit 2), the sampling ones when sampling; before, the engine ignored them or named them as not applied."""
    from neurobrix.cli import main

    generation = {"eos_token_id": 9999, "max_new_tokens": 4, **setting}
    folder = checkpoint(tmp_path / "m", generation=generation)
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    assert main(["import", str(folder)]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit:
        main(["run", "--model", "m", "--prompt", "hello", "--no-chat", "--backend", "torch", "--temperature", "0.7"])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err, err
