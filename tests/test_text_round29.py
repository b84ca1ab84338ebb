"""The twenty-ninth round of text parity: the model side and the generation settings' processors, at the edges of
the engine's own machinery (its one-step-ahead decode loop, its prompt chunks, its batches), compared with
transformers' greedy ``generate`` on round 7's tiny random checkpoints (PyTorch's kernels unless said).

- exponential_decay_length_penalty raises factor ** (new tokens past start) in Python, as transformers' processor
  does, at each step it applies. Where that power cannot be computed (past float64's range: factor 1e300 at its
  second step; a negative factor raised to a fraction, a complex number), transformers' generate fails at that
  step, and prints no text, unless an eos id ended the text before it. The engine's decode loop computes each step
  one token ahead of reading the one before (so that the device never waits for the host), so it computed the step
  after the eos too, and `run` died there in an OverflowError where transformers printed text; and it refused every
  fraction of a negative factor before the run, where a run ending before the decay starts prints text. The step
  queued ahead now raises its refusal only once it is needed; a power that fails is refused (one line, exit 2) at the
  token where transformers fails, and a run that can reach such a token prints its text once it has ended, not
  streamed, so that a refused run prints none (a note says so).

Held ground, pinned below: prompts at and around the prefill chunk's length (the remainder first, then whole chunks),
and a batch of prompts under every token-mask processor and the repetition penalty (each row transformers' batched
generate's). The failing tests failed before their fix (an OverflowError; a refusal)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_text_round7 import PLAIN, PROMPT, checkpoint, ours, theirs  # noqa: E402
from test_text_round13 import _no_text  # noqa: E402


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    return checkpoint(tmp_path_factory.mktemp("gen") / "base")


def _write(folder: Path, setting: dict) -> None:
    (folder / "generation_config.json").write_text(json.dumps({"max_new_tokens": 8, **setting}))


# --- exponential_decay_length_penalty where its power cannot be computed -----------------------------------------

RUNS = {  # transformers prints text: the eos id comes first, or the decay never applies
    "an eos before the power overflows (the step queued ahead)": {
        "eos_token_id": PLAIN[1],
        "exponential_decay_length_penalty": [0, 1e300],
    },
    "an integer factor whose power torch cannot take, after the eos": {
        "eos_token_id": PLAIN[1],
        "exponential_decay_length_penalty": [0, 10**10],
    },
    "a factor of true (1: no decay), which transformers takes as its integer": {
        "eos_token_id": PLAIN[1],
        "exponential_decay_length_penalty": [1, True],
    },
    "a factor of false (0: the eos score less its magnitude)": {
        "eos_token_id": PLAIN[2],
        "exponential_decay_length_penalty": [0, False],
    },
    "a negative factor raised to a fraction, never reached": {
        "eos_token_id": 9,
        "exponential_decay_length_penalty": [10.5, -2.0],
    },
}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("case", RUNS)
def test_a_decay_failing_only_past_the_text_prints_transformers_text(model_folder, monkeypatch, case, stream):
    """Before: an OverflowError out of `run` (the step computed one token ahead, after the eos), or a refusal of
    the fractional power, or of a factor of true or false, before the run."""
    _write(model_folder, RUNS[case])
    want = theirs(model_folder)
    ids, text, notes = ours(model_folder, monkeypatch, stream=stream)
    assert (ids, text) == want


REFUSED = {  # transformers fails at the first step where the power cannot be computed
    "a float power past float64's range": ({"exponential_decay_length_penalty": [1, -1e300]}, "** 2 at new token 4"),
    "a negative factor raised to a fraction": (
        {"exponential_decay_length_penalty": [0.5, -4.0]},
        "** 0.5 at new token 2",
    ),
    "an integer power too large for torch (the eos masked meanwhile)": (
        {"exponential_decay_length_penalty": [1, 10**10], "min_new_tokens": 6},
        "** 2 at new token 4",
    ),
}


@pytest.mark.parametrize("stream", [[], ["--no-stream"]])
@pytest.mark.parametrize("case", REFUSED)
def test_a_decay_failing_within_the_text_is_refused_there_with_no_text(model_folder, monkeypatch, capsys, case, stream):
    """`run` exits 2 with one error line naming the setting and the token, no traceback, and prints no text (the text
    is held back until the run ends: a note says so)."""
    from neurobrix.cli import main

    setting, named = REFUSED[case]
    _write(model_folder, {"eos_token_id": 9, **setting})
    _no_text(model_folder)
    monkeypatch.setenv("NEUROBRIX_HOME", str(model_folder.parent / "home"))
    assert main(["import", str(model_folder)]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit:
        main(["run", "--model", model_folder.name, "--prompt", PROMPT, "--no-chat", "--backend", "torch", *stream])
    assert exit.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err, (out, err)
    last = err.strip().splitlines()[-1]
    assert "exponential_decay_length_penalty" in last and named in last, err
    assert not stream == ("the text is printed once the run ends" not in err), err


def test_the_deferred_step_is_still_refused_where_it_is_needed(model_folder):
    """The decode loop's own rule, through ``generate``: the step queued ahead raises its refusal once it is the
    next token (no eos), not before the tokens ahead of it are handed out."""
    from neurobrix.config import ModelConfig
    from neurobrix.errors import UsageError
    from neurobrix.generate import Constraints, Sampling, decay_failure, generate
    from neurobrix.model import Transformer, weights_from_files
    from neurobrix.ops import TORCH

    cfg = ModelConfig.from_hf(json.loads((model_folder / "config.json").read_text()))
    weights = weights_from_files(cfg, [str(model_folder / "model.safetensors")], torch.float32, "cpu")
    model = Transformer(cfg, weights, TORCH, batch=1, capacity=20)
    ids = [(7 * n + 3) % 300 for n in range(10)]
    decay = Constraints(exponential_decay_length_penalty=(2.5, -2.0))
    assert decay_failure(decay, len(ids), 8) == 4 and decay_failure(decay, len(ids), 3) is None
    seen: list[int] = []
    with pytest.raises(UsageError, match=r"\*\* 0.5 at new token 4"):
        generate(model, ids, 8, Sampling(), {cfg.vocab_size - 1}, on_token=seen.append, constraints=decay)
    assert len(seen) == 3  # the tokens before it were handed out
    assert len(generate(model, ids, 3, Sampling(), set(), constraints=decay)[0]) == 3


# --- held: prompt chunks, batches -----------------------------------------------------------------------------------


def test_prompts_around_the_chunk_length_print_transformers_ids(model_folder):
    """Prompts of one chunk less one, one chunk, one more, two chunks and one more (chunks of 16 tokens: one pass,
    then the remainder first and whole chunks over the cache): transformers' float32 greedy ids."""
    from neurobrix.config import ModelConfig
    from neurobrix.generate import Sampling, generate
    from neurobrix.model import Transformer, weights_from_files
    from neurobrix.ops import TORCH

    (model_folder / "generation_config.json").write_text("{}")  # transformers' generate reads the folder's settings
    cfg = ModelConfig.from_hf(json.loads((model_folder / "config.json").read_text()))
    weights = weights_from_files(cfg, [str(model_folder / "model.safetensors")], torch.float32, "cpu")
    hf = transformers.AutoModelForCausalLM.from_pretrained(model_folder, dtype=torch.float32).eval()
    steps = 4
    for length in (15, 16, 17, 32, 33):
        ids = [(7 * n + 3 + length) % 300 for n in range(length)]
        model = Transformer(cfg, weights, TORCH, batch=1, capacity=length + steps, chunk=16)
        with torch.no_grad():
            out = hf.generate(
                torch.tensor([ids]),
                attention_mask=torch.ones(1, length, dtype=torch.long),
                do_sample=False,
                max_new_tokens=steps,
                eos_token_id=None,
            )
        assert generate(model, ids, steps, Sampling(), eos=set())[0] == out[0, length:].tolist(), length


def test_a_batch_under_the_token_masks_gives_each_row_transformers_ids(model_folder):
    """Three prompts of one length, batched, under the repetition penalty and each masking processor at once: each
    row is transformers' batched generate's (which computes each row's masks from that row alone)."""
    from neurobrix.config import ModelConfig
    from neurobrix.generate import Constraints, Sampling, generate_batch
    from neurobrix.model import Transformer, weights_from_files
    from neurobrix.ops import TORCH

    (model_folder / "generation_config.json").write_text("{}")  # transformers' generate reads the folder's settings
    cfg = ModelConfig.from_hf(json.loads((model_folder / "config.json").read_text()))
    weights = weights_from_files(cfg, [str(model_folder / "model.safetensors")], torch.float32, "cpu")
    hf = transformers.AutoModelForCausalLM.from_pretrained(model_folder, dtype=torch.float32).eval()
    length, steps = 12, 10
    prompts = [[(k * n + 5 * b + 1) % 300 for n in range(length)] for b, k in enumerate((7, 11, 13))]
    settings = {
        "no_repeat_ngram_size": 2,
        "encoder_no_repeat_ngram_size": 3,
        "bad_words_ids": [[prompts[1][-1], 9], [17]],
        "sequence_bias": {(prompts[0][-1], 5): 9.0, (3,): 2.0},
        "suppress_tokens": [PLAIN[0]],
        "begin_suppress_tokens": [PLAIN[1]],
        "encoder_repetition_penalty": 1.2,
    }
    constraints = Constraints(
        no_repeat_ngram_size=2,
        encoder_no_repeat_ngram_size=3,
        bad_words_ids=((prompts[1][-1], 9), (17,)),
        sequence_bias=(((prompts[0][-1], 5), 9.0), ((3,), 2.0)),
        suppress_tokens=(PLAIN[0],),
        begin_suppress_tokens=(PLAIN[1],),
        encoder_repetition_penalty=1.2,
    )
    with torch.no_grad():
        out = hf.generate(
            torch.tensor(prompts),
            attention_mask=torch.ones(3, length, dtype=torch.long),
            do_sample=False,
            max_new_tokens=steps,
            eos_token_id=None,
            repetition_penalty=1.3,
            **settings,
        )
    model = Transformer(cfg, weights, TORCH, batch=3, capacity=length + steps)
    rows, _ = generate_batch(model, prompts, steps, Sampling(repetition_penalty=1.3), set(), constraints=constraints)
    assert rows == [row[length:].tolist() for row in out]
