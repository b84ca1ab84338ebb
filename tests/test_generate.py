"""The greedy pick on its own: the same token as ``argmax`` for any row, ties included."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurobrix.generate import Sampling, greedy_pick, sample


@settings(max_examples=60, deadline=None)
@given(
    vocab=st.sampled_from([7, 997, 32000, 65536, 100000, 128256, 151936]),  # two passes from 65,536 to 131,071
    batch=st.integers(1, 3),
    levels=st.integers(1, 5),  # few distinct values: ties everywhere, within parts and across them
    maxima=st.integers(1, 3),  # the row's largest value at this many random places
    dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float16]),
    seed=st.integers(0, 2**31 - 1),
)
def test_greedy_pick_is_argmax_ties_included(vocab, batch, levels, maxima, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randint(0, levels, (batch, vocab), generator=gen)
    for row in logits:  # near one another: often in one part of the first pass, sometimes across two
        first = int(torch.randint(0, vocab, (1,), generator=gen))
        row[(first + torch.randint(0, 200, (maxima,), generator=gen)).clamp(max=vocab - 1)] = levels
    logits = logits.to(dtype)
    want = logits.argmax(dim=-1)
    assert torch.equal(greedy_pick(logits)[:, 0], want)
    out = torch.full((batch, 1), -1, dtype=torch.long)
    greedy_pick(logits, out=out)
    assert torch.equal(out[:, 0], want)
    assert torch.equal(sample(logits, Sampling(), None), want)


def test_min_new_tokens_passes_over_eos_ids_past_the_vocabulary():
    """An eos id past the logits' vocabulary (a generation_config.json naming one) is passed over, as transformers'
    MinNewTokensLengthLogitsProcessor passes over it, not an index error."""
    import pytest

    from neurobrix.generate import Constraints, Processors

    processors = pytest.importorskip("transformers.generation.logits_process")
    scores = torch.randn(1, 10, generator=torch.Generator().manual_seed(0))
    want = processors.MinNewTokensLengthLogitsProcessor(2, 3, [2, 500])(torch.tensor([[1, 2]]), scores)
    got = Processors(Constraints(min_new_tokens=3), [[1, 2]], 5, {2, 500})(scores)
    assert torch.equal(got, want)
