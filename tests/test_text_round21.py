"""The twenty-first round of text parity: how many tokens a run makes when nothing says how many.

- No limit anywhere (no --max-tokens, and neither max_new_tokens nor max_length in generation_config.json, or in
  config.json without that file): transformers' generate takes its GenerationConfig defaults, max_length 20, and
  reads that as 20 new tokens after the prompt ("by default let's always generate 20 new tokens",
  _prepare_generated_length), cut where the sequence reaches max_position_embeddings. The engine generated 256 new
  tokens there: the same first 20 tokens, then 236 more that transformers never prints. It now takes transformers'
  20, with a note saying so (--max-tokens overrides it), and still cuts at the model's context as generate does.
- That default past a sliding attention window the engine does not apply (more positions than a Mistral model's
  window, within its context): transformers' generate runs on with its windowed attention for the 20 tokens; the
  engine cut the run at the window with a note (a shorter text). It is refused, as the model's own max_new_tokens
  reaching there is, naming the window and --max-tokens.

Round 7's tiny random checkpoints are run through `neurobrix run` (PyTorch's kernels) and through transformers'
greedy ``generate`` in float64 on the same folder, called as a user calls it (no max_new_tokens); ids and text must be
equal, or the engine must refuse in one line. The no-limit cases of a context of 128 and the window test failed
before the fix; the cut at a small context and config.json's own max_length are the neighbours it keeps."""

from __future__ import annotations

import json

import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_text_round7 import PROMPT, checkpoint, ours  # noqa: E402

NEVER_ENDS = 9999  # an eos id outside the vocabulary: only the length ends a run


def plain_generate(folder) -> tuple[list[int], str]:
    """transformers' greedy generate with no length given (the model's files and transformers' defaults decide)."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64).eval()
    inputs = tok(PROMPT, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, do_sample=False)
    new = out[0, inputs["input_ids"].shape[1] :].tolist()
    return new, tok.decode(new, skip_special_tokens=True)


@pytest.mark.parametrize(
    "context, generation",
    [
        (128, {"eos_token_id": NEVER_ENDS}),  # a generation_config.json setting no length: 20 new tokens
        (128, None),  # no generation_config.json, config.json's eos id out of the way below
        (45, {"eos_token_id": NEVER_ENDS}),  # the 35-token prompt leaves 10 in the context: cut there
    ],
)
def test_no_length_anywhere_makes_transformers_default_count(tmp_path, monkeypatch, context, generation):
    folder = checkpoint(
        tmp_path / "m",
        args={"max_position_embeddings": context},
        fields={"eos_token_id": NEVER_ENDS, "bos_token_id": 0},
        generation=generation,
    )
    want = plain_generate(folder)
    assert len(want[0]) == min(20, context - 35)
    ids, text, notes = ours(folder, monkeypatch)
    assert (ids, text) == want
    assert any(f"generating at most {len(ids)} tokens" in note for note in notes), notes


def test_the_default_past_a_sliding_window_is_refused(tmp_path, monkeypatch):
    """A Mistral model with a window of 40 and a context of 128: the 35-token prompt and transformers' 20 new tokens
    feed 54 positions, which transformers attends through its window; the engine, attending over whole sequences,
    cut the run to 6 tokens with a note. Refused now (exit 2 from the CLI, a UsageError here)."""
    from neurobrix.errors import UsageError

    folder = checkpoint(
        tmp_path / "w",
        family="MistralConfig",
        args={"sliding_window": 40},
        fields={"eos_token_id": NEVER_ENDS},
        generation={"eos_token_id": NEVER_ENDS},
    )
    assert len(plain_generate(folder)[0]) == 20  # transformers runs on past the window
    with pytest.raises(UsageError, match=r"sliding attention window of 40 tokens.*give --max-tokens 6 or fewer"):
        ours(folder, monkeypatch)
    ids, _, _ = ours(folder, monkeypatch, max_tokens=6)  # within the window: runs
    assert len(ids) == 6


def test_config_json_length_is_still_read(tmp_path, monkeypatch):
    """The neighbour: config.json's own max_length (no generation_config.json) is what both take."""
    folder = checkpoint(tmp_path / "c", fields={"eos_token_id": NEVER_ENDS, "max_length": 41})
    want = plain_generate(folder)
    assert len(want[0]) == 6
    assert json.loads((folder / "config.json").read_text())["max_length"] == 41
    assert ours(folder, monkeypatch)[:2] == want
