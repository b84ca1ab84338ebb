"""The eighth round of text parity: generation settings transformers' ``generate`` reads from generation_config.json
(or config.json) that the engine read otherwise or not at all. Tiny random checkpoints (round 7's: a byte-level
tokenizer, weights drawn wide so that greedy choices are far from ties) are run through `neurobrix run` (PyTorch's
kernels) and through transformers' greedy ``generate`` in float64 on the same folder; the decoded text and the token
ids must be equal. Where transformers would compute something the engine does not, the engine must name it in a
note. Each test failed before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

from test_text_round7 import PLAIN, checkpoint, ours, theirs  # noqa: E402


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    return checkpoint(tmp_path_factory.mktemp("gen") / "base")


@pytest.mark.parametrize("min_new_tokens", [2, 0])
def test_min_new_tokens_replaces_the_settings_min_length(model_folder, monkeypatch, min_new_tokens):
    """generation_config.json with both min_length and min_new_tokens: transformers' generate sets min_length to the
    prompt's length plus min_new_tokens (min_new_tokens "takes precedence"), so the eos id is masked for that many
    new tokens only, and for none at 0. The engine masked it up to the file's min_length as well: the text ran on
    past the eos id where transformers' ends (8 more tokens here)."""
    generation = {"eos_token_id": PLAIN[3], "min_length": 45, "min_new_tokens": min_new_tokens, "max_new_tokens": 12}
    (model_folder / "generation_config.json").write_text(json.dumps(generation))
    want = theirs(model_folder)
    assert want[0] == PLAIN[:4]  # the file's min_length of 45 (35 prompt tokens) would have masked the eos id
    ids, text, _ = ours(model_folder, monkeypatch)
    assert (ids, text) == want
