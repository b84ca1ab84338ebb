"""The twenty-fourth round of text parity: a prompt holding the model's pad token id.

transformers' ``generate`` called without an ``attention_mask`` infers one (``_prepare_attention_mask_for_generation``):
where the settings' pad_token_id (generation_config.json's, config.json's without that file) occurs in the prompt and
is none of the eos ids, those positions are masked out, and the text changes. Its pipeline, and
``generate(**tokenizer(prompt, return_tensors="pt"))`` as model cards call it, hand it the tokenizer's mask, which
masks nothing: that is the text ``run`` prints (it attends to every prompt token). Llama 2's chat files ship
pad_token_id 0, the id of ``<unk>``, which a prompt holding the text "<unk>" encodes to. Before, ``run`` said nothing
there; it now names the pad id in a note, exactly where bare ``generate(input_ids)`` prints other text.

Round 7's tiny random checkpoints (byte-level tokenizer) run through ``neurobrix run`` (PyTorch's kernels) and through
transformers' greedy ``generate`` in float64, with and without the tokenizer's mask. The test failed before the note."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_text_round7 import PROMPT, checkpoint, ours, theirs  # noqa: E402

NEVER_ENDS = 9999  # an eos id outside the vocabulary: only the length ends a run
PAD = 86  # a byte-level id PROMPT holds three times (its 6th, 15th and 25th token)
OTHER = 88  # an id PROMPT holds too, for an eos id beside the pad


def bare_generate(folder) -> list[int]:
    """transformers' greedy generate handed the prompt's ids alone (no attention_mask): it infers the mask."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64).eval()
    ids = tok(PROMPT, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = model.generate(ids, do_sample=False)
    return out[0, ids.shape[1] :].tolist()


CASES = {  # name: (config.json fields, generation_config.json or None)
    "generation_config's pad": ({}, {"eos_token_id": NEVER_ENDS, "pad_token_id": PAD}),
    "a float pad id": ({}, {"eos_token_id": NEVER_ENDS, "pad_token_id": float(PAD)}),
    "no eos id": ({}, {"pad_token_id": PAD}),
    "config.json's, no generation_config": ({"pad_token_id": PAD}, None),
    "the pad among the eos ids": ({}, {"eos_token_id": [NEVER_ENDS, PAD], "pad_token_id": PAD}),
    "config.json's beside a generation_config without one": ({"pad_token_id": PAD}, {"eos_token_id": NEVER_ENDS}),
    "a pad the prompt lacks": ({}, {"eos_token_id": NEVER_ENDS, "pad_token_id": 5}),
    "the start token's id": ({}, {"eos_token_id": NEVER_ENDS, "pad_token_id": 0}),  # the prompt's first token
    "the eos id held too": ({}, {"eos_token_id": OTHER, "pad_token_id": PAD}),
}


def test_a_pad_id_in_the_prompt_is_attended_and_named_where_bare_generate_masks_it(tmp_path, monkeypatch):
    """run's text is generate's handed the tokenizer's mask, and a note names the pad id exactly where generate
    without a mask prints other text."""
    seen = {}
    for i, (name, (fields, generation)) in enumerate(CASES.items()):
        generation = None if generation is None else {"max_new_tokens": 8, **generation}
        folder = checkpoint(
            tmp_path / f"m{i}",
            fields={"eos_token_id": NEVER_ENDS, "max_new_tokens": 8, **fields},
            generation=generation,
        )
        want = theirs(folder)  # generate(**tokenizer(PROMPT)): the tokenizer's mask
        masked = bare_generate(folder) != want[0]
        ids, text, notes = ours(folder, monkeypatch)
        assert (ids, text) == want, name
        named = [n for n in notes if "pad_token_id" in n]
        seen[name] = masked
        assert bool(named) == masked, (name, masked, notes)
        if named:
            source = "config.json" if generation is None else "generation_config.json"
            pad = (generation or fields)["pad_token_id"]
            assert f"the prompt holds the model's pad_token_id {pad:g} ({source})" in named[0], named
    # the cases reach both sides: six where bare generate masks the pad out, the rest where it cannot
    assert sum(seen.values()) == 6, seen
