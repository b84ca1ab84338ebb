"""The thirty-fifth round of text parity: generation_config.json's ``do_sample`` as transformers' generate reads it.

- transformers' ``generate`` decides whether to sample by the truth of ``do_sample`` (its decoding loop's
  ``if do_sample:``, and its warpers behind the same test), not by ``is True``: a file's ``"do_sample": 1`` (or
  "yes", or even the text "false") samples exactly as ``true`` does, with the file's temperature. `run` tested
  ``is True``: it decoded greedily (right: greedy is its default) but said nothing, where for ``true`` it notes that
  transformers' generate samples by default and how to sample as it asks. The note is now given for any such value;
  0, "" and null decode greedily on both sides (no note).
- ``num_return_sequences`` above 1 beside such a ``do_sample``: transformers' GenerationConfig.validate refuses it
  only ``if not self.do_sample`` (greedy), so the model loads and its plain ``generate()`` returns several sampled
  sequences; `run` refused the file ("greedy decoding makes one sequence"), and now runs it as it runs ``true``,
  naming the setting it does not apply. With ``do_sample`` 0 both refuse.

Held (probed outside CI, no difference): 610 drawn generation_config.json combinations through `run` (streamed or
not; 270 more through chat templates with ``--system``) against float64 greedy ``generate`` handed the tokenizer,
over the byte-level, sentencepiece and metaspace fixtures, with the CLI's ``--repetition-penalty`` over the file's,
``--top-k``/``--top-p``/``--seed`` and ``--temperature 0`` beside greedy decoding, one-character prompts, eos lists,
pad ids equal to eos, max_length, min_length, stop strings and every masking processor; batches whose rows stop at
different steps (eos per row, repetition penalty, n-grams) and of one-token prompts against transformers' batched
generate; forced eos and the length decay where the default count is cut at the context.

The tests failed before the fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    from test_text_round7 import checkpoint

    return checkpoint(tmp_path_factory.mktemp("gen") / "m")


PROMPT = "Hello world, the model runs fast. never guess a setting."


def _plain_generate(folder: Path, seed: int) -> list[list[int]]:
    """transformers' generate() as the file asks (no do_sample passed), seeded: the new ids of each sequence."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64).eval()
    inputs = tok(PROMPT, return_tensors="pt")
    torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(**inputs)
    return out[:, inputs["input_ids"].shape[1] :].tolist()


@pytest.fixture(scope="module")
def greedy(model_folder) -> list[int]:
    """transformers' greedy ids (float64, 8 new tokens, no eos) after PROMPT."""
    from test_text_round7 import theirs

    (model_folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 9999, "max_new_tokens": 8}))
    return theirs(model_folder)[0]


@pytest.mark.parametrize("do_sample", [1, "false"])
def test_a_do_sample_that_is_true_to_python_samples_in_transformers_and_run_says_so(
    model_folder, greedy, monkeypatch, do_sample
):
    """Before: no note, where `"do_sample": true` gets one (transformers samples either way)."""
    from test_text_round7 import ours

    base = {"eos_token_id": 9999, "max_new_tokens": 8, "temperature": 0.7}
    (model_folder / "generation_config.json").write_text(json.dumps({**base, "do_sample": True}))
    sampled = _plain_generate(model_folder, 3)
    (model_folder / "generation_config.json").write_text(json.dumps({**base, "do_sample": do_sample}))
    assert _plain_generate(model_folder, 3) == sampled != [greedy]  # samples as true does
    ids, _, notes = ours(model_folder, monkeypatch)
    assert ids == greedy  # run decodes greedily, as documented
    said = [n for n in notes if "transformers' generate samples by default" in n]
    assert len(said) == 1 and f"do_sample={do_sample!r}" in said[0] and "--temperature 0.7" in said[0], notes
    for falsy in (0, ""):  # greedy on both sides (as null): no note
        (model_folder / "generation_config.json").write_text(json.dumps({**base, "do_sample": falsy}))
        assert _plain_generate(model_folder, 3) == [greedy]
        ids, _, notes = ours(model_folder, monkeypatch)
        assert ids == greedy and not [n for n in notes if "samples" in n], (falsy, notes)


def test_several_return_sequences_beside_such_a_do_sample_run_as_beside_true(model_folder, greedy, monkeypatch):
    """Before: refused as "greedy decoding makes one sequence", where transformers loads the model and samples."""
    from test_text_round7 import ours

    from neurobrix.errors import UsageError

    base = {"eos_token_id": 9999, "max_new_tokens": 6, "num_return_sequences": 2}
    (model_folder / "generation_config.json").write_text(json.dumps({**base, "do_sample": 1}))
    assert len(_plain_generate(model_folder, 0)) == 2  # two sampled sequences
    ids, _, notes = ours(model_folder, monkeypatch)
    assert ids == greedy[:6]
    assert any("num_return_sequences=2, which NeuroBrix does not apply" in n for n in notes), notes
    assert any("do_sample=1" in n and "samples by default" in n for n in notes), notes
    (model_folder / "generation_config.json").write_text(json.dumps({**base, "do_sample": 0}))
    with pytest.raises(ValueError, match="num_return_sequences"):
        transformers.GenerationConfig.from_pretrained(model_folder)
    with pytest.raises(UsageError, match="num_return_sequences"):
        ours(model_folder, monkeypatch)
