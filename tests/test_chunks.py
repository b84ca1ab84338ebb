"""Chunked prefill: how a long prompt is cut, what the preflight plans for it, and the chunk kernel's
calls against the model's own (the end-to-end truth is tests/test_engine.py's, against transformers)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance import catalogue
from neurobrix.model import PREFILL_SEQ, PREFILL_TOKENS, chunk_length, prefill_chunks
from neurobrix.plan import forward_calls


@given(length=st.integers(1, 100_000), chunk=st.integers(1, 4096))
def test_chunks_cover_the_prompt_once_in_order_the_remainder_first(length, chunk):
    passes = prefill_chunks(length, chunk)
    assert passes[0][0] == 0 and 1 <= passes[0][1] <= chunk
    assert all(size == chunk for _, size in passes[1:])
    assert all(a + n == b for (a, n), (b, _) in zip(passes, passes[1:]))
    assert passes[-1][0] + passes[-1][1] == length
    assert len(passes) == -(-length // chunk)


def test_the_chunk_keeps_each_pass_within_one_prefill():
    for batch in range(1, 65):
        chunk = chunk_length(batch)
        assert chunk & (chunk - 1) == 0 and chunk <= PREFILL_SEQ and batch * chunk <= PREFILL_TOKENS
        assert batch * chunk * 2 > PREFILL_TOKENS or chunk == PREFILL_SEQ  # the largest such power of two
    assert [chunk_length(b) for b in (1, 2, 3, 4, 5, 8)] == [2048, 2048, 1024, 1024, 512, 512]
    with pytest.raises(ValueError):
        chunk_length(0)
    with pytest.raises(ValueError):
        prefill_chunks(0, 16)


def test_a_30000_token_prompt_is_planned_as_one_prefill_then_whole_chunks_over_the_cache():
    cfg = catalogue.load()[0]["meta-llama/Llama-3.1-8B-Instruct"]
    calls = forward_calls(cfg, 1, 30000, 30128, prefill=True, dtype="bf16", layers=2)
    by_kernel: dict[str, set[tuple[int, ...]]] = {}
    for kernel, _, key in calls:
        by_kernel.setdefault(kernel, set()).add(key)
    first = 30000 - 14 * 2048
    assert by_kernel["attention_prefill"] == {(first, 128, 4)}
    assert by_kernel["attention_chunk"] == {(2048, first + n * 2048, 128, 4) for n in range(1, 15)}
    assert max(key[0] for key in by_kernel["linear"]) == 2048  # no pass holds more than a chunk of rows
    assert max(key[0] for key in by_kernel["rms_norm"]) == 2048


def test_a_prompt_within_one_prefill_is_not_chunked():
    cfg = catalogue.load()[0]["TinyLlama/TinyLlama-1.1B-Chat-v1.0"]
    calls = forward_calls(cfg, 1, 2048, 2048, prefill=True, dtype="bf16", layers=2)
    assert not any(kernel == "attention_chunk" for kernel, _, _ in calls)
    assert ("attention_prefill", "bf16", (2048, 64, 8)) in calls


def test_the_catalogue_covers_chunked_prompts_to_32k_tokens():
    models, coverage = catalogue.load()
    assert coverage.prompt[1] == coverage.capacity[1] == 32768
    domains = catalogue.model_domains(models["meta-llama/Llama-3.1-8B-Instruct"], coverage)
    chunk = {ranges for kernel, ranges in domains if kernel == "attention_chunk"}
    assert (("C", 1025, 2048), ("S", 16385, 32768), ("D", 128, 128), ("G", 4, 4)) in chunk  # batch 1
    assert (("C", 257, 512), ("S", 513, 1024), ("D", 128, 128), ("G", 4, 4)) in chunk  # batch 8's chunk
    decode = {ranges for kernel, ranges in domains if kernel == "attention_decode"}
    assert (("B", 5, 8), ("S", 16385, 32768), ("D", 128, 128), ("G", 4, 4)) in decode
    assert not any(r[0][1] > 16 and r[1][2] == 32768 for r in decode)  # batch x capacity capped
