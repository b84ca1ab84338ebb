"""The memory check before loading: weights plus KV cache plus working memory against free GPU memory."""

from __future__ import annotations

import pytest
import torch

from conformance.catalogue import load
from neurobrix import memory
from neurobrix.errors import DeviceError

MODELS, _ = load()
LLAMA_8B = MODELS["meta-llama/Llama-3.1-8B-Instruct"]
GIB = 2**30


def test_the_plan_counts_weights_and_cache_as_the_model_holds_them():
    need = memory.plan(LLAMA_8B, 2, batch=1, prompt=128, capacity=32768)
    assert 16.0e9 < need.weights < 16.1e9  # 8.03 billion parameters in bf16
    assert need.kv_cache == 2 * 32 * 32768 * 8 * 128 * 2  # k and v, 32 layers, 8 kv heads of 128: 4 GiB
    assert need.total > need.weights + need.kv_cache + need.activations


def test_too_little_memory_is_refused_with_both_numbers_and_what_fits():
    with pytest.raises(memory.DeviceMemoryError) as err:
        memory.require_fit(LLAMA_8B, 2, 1, 30000, 32768, free=17 * GIB, total=141 * GIB)
    message = str(err.value)
    assert err.value.exit_code == DeviceError.exit_code
    assert "KV cache 4.00 GiB for 32768 tokens" in message and "17.00 GiB of 141.00 GiB is free" in message
    fits = int(message.split("the longest context that fits is ")[1].split()[0])
    assert (
        memory.plan(LLAMA_8B, 2, 1, fits, fits).total
        <= 17 * GIB
        < memory.plan(LLAMA_8B, 2, 1, fits + 1, fits + 1).total
    )
    with pytest.raises(memory.DeviceMemoryError, match="even the weights alone do not fit"):
        memory.require_fit(LLAMA_8B, 2, 1, 128, 384, free=8 * GIB)
    assert memory.require_fit(LLAMA_8B, 2, 1, 30000, 32768, free=139 * GIB).kv_cache == 4 * GIB


def test_run_checks_memory_before_any_weight_is_read(monkeypatch):
    """On a GPU the check comes before loading: with too little free memory nothing is read."""
    from neurobrix import run
    from neurobrix.store import StoredModel

    class Stored(StoredModel):  # load_model takes a stored model, nothing else
        path = None

        def __init__(self):  # no manifest, no files: only the config is read before the memory check
            pass

        def config(self):
            return LLAMA_8B

        def weight_files(self):
            raise AssertionError("weights were looked at before the memory check")

    monkeypatch.setattr(run, "_device_and_class", lambda backend: (torch.device("cuda"), None))
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (4 * GIB, 80 * GIB))
    with pytest.raises(memory.DeviceMemoryError, match="4.00 GiB of 80.00 GiB is free"):
        run.load_model(Stored(), "torch", "bf16", prompt_len=128, capacity=384)


def test_a_long_prompt_needs_the_working_memory_of_one_chunk():
    from neurobrix.memory import activation_bytes
    from neurobrix.model import chunk_length

    cfg = LLAMA_8B
    one_chunk = activation_bytes(cfg, 2, 1, chunk_length(1))
    assert activation_bytes(cfg, 2, 1, 30000) == one_chunk
    assert activation_bytes(cfg, 2, 1, 100) < one_chunk
    assert activation_bytes(cfg, 2, 8, 30000) == activation_bytes(cfg, 2, 8, chunk_length(8))


def test_the_check_holds_the_margin_and_the_reserve_too():
    """What is refused is the whole need: weights, KV cache and working memory with the allocator's margin, plus
    the CUDA context's reserve. Free memory one byte short of it is refused, even when weights, cache and
    working memory alone would fit (a check of fewer terms admitted it and ran out of memory mid-generation)."""
    need = memory.plan(LLAMA_8B, 2, 1, 4096, 8192)
    raw = need.weights + need.kv_cache + need.activations
    assert need.total >= int(raw * memory.MARGIN) + memory.RESERVE > raw + memory.RESERVE
    assert memory.require_fit(LLAMA_8B, 2, 1, 4096, 8192, free=need.total) == need
    for free in (need.total - 1, int(raw * memory.MARGIN), raw):
        with pytest.raises(memory.DeviceMemoryError):
            memory.require_fit(LLAMA_8B, 2, 1, 4096, 8192, free=free)
