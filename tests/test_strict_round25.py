"""The twenty-fifth round, adversarial on the strict runtime: the Python API's entry points, the environment the hub
cache is read from, and shard indexes. Four classes: a second generation begun on a model while one runs (from the
first one's callback, or another thread) shared its KV cache, each going on with the other's tokens; the counts a
program hands the model and the preflight (a batch of 0, a capacity of 8.0, a prompt of 0 tokens, a dtype "fp8")
ended in a ValueError, TypeError, RuntimeError or KeyError; a shard index without its "metadata" object, on which
transformers' from_pretrained fails, was run; and the hub cache was read otherwise than huggingface_hub reads it
($VAR kept literally, HUGGINGFACE_HUB_CACHE and XDG_CACHE_HOME passed over), so that offline a model in the cache was
not found. Each test failed before the fix it names and passes now; the controls pass either way. No kernel is
launched (PyTorch's ops on a tiny random model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest
import torch
from store_fixtures import HAVE_TRANSFORMERS, make_checkpoint, populate_hub_cache
from test_runtime_planted import TINY

from neurobrix.errors import UsageError
from neurobrix.generate import Sampling, generate
from neurobrix.model import Layer, Transformer, Weights
from neurobrix.ops import TORCH


def _model(capacity: int = 32) -> Transformer:
    """TINY on random weights (each token's logits differ, so a generation's tokens depend on its KV cache)."""
    g = torch.Generator().manual_seed(0)

    def r(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g)

    layer = Layer(r(16), r(32, 16), None, r(16, 16), r(16), r(64, 16), r(16, 32))
    return Transformer(TINY, Weights(r(32, 16), [layer], r(16), r(32, 16)), TORCH, batch=1, capacity=capacity)


PROMPT, OTHER = [1, 2, 3], [5, 6, 7, 8]


def _inside(model: Transformer, how: str):
    """A hook that begins a generation of OTHER on ``model`` the first time it is called, in this thread or in
    another one it waits for, and records what that generation gave or raised."""
    seen: list[object] = []

    def start() -> None:
        try:
            seen.append(generate(model, OTHER, 5, Sampling(), set())[0])
        except UsageError as exc:
            seen.append(exc)

    def hook(*_: object) -> bool:
        if not seen:
            if how == "thread":
                worker = threading.Thread(target=start)
                worker.start()
                worker.join()
            else:
                start()
        return False

    return hook, seen


@pytest.mark.parametrize("how", ["on_token", "stop", "thread"])
def test_a_second_generation_on_a_model_that_is_generating_is_refused(how):
    """Before: a model's KV cache (and decode state) is its own, one generation's; a second generation begun while
    the first ran, from the first one's on_token or stop hook or from another thread, prefilled OTHER into the same
    cache and decoded there, and the first went on over the second's keys and values: other tokens than the same
    generation alone gives, silently ([24, 24, 15, 22, ...] for [24, 24, 24, 24, ...]). Now the second is refused
    by name while the first runs, and the first gives its own tokens."""
    model = _model()
    alone, _ = generate(model, PROMPT, 10, Sampling(), set())
    hook, seen = _inside(model, how)
    hooks = {"on_token": {"on_token": hook}, "stop": {"stop": hook}, "thread": {"on_token": hook}}[how]
    out, _ = generate(model, PROMPT, 10, Sampling(), set(), **hooks)
    assert len(seen) == 1 and isinstance(seen[0], UsageError), seen
    assert "this model is generating already" in str(seen[0])
    assert out == alone
    # once it has ended (here by the hook's own exception), the model generates again
    with pytest.raises(ZeroDivisionError):
        generate(model, PROMPT, 4, Sampling(), set(), on_token=lambda token: 1 / 0)
    assert generate(model, OTHER, 5, Sampling(), set())[0] == generate(_model(), OTHER, 5, Sampling(), set())[0]


def test_two_models_generate_at_once_as_each_alone():
    """Control: a second model (its own cache) is what the refusal points to, and runs beside the first."""
    first, second = _model(), _model()
    alone, _ = generate(_model(), OTHER, 5, Sampling(), set())
    inner: list[list[int]] = []
    out, _ = generate(
        first,
        PROMPT,
        10,
        Sampling(),
        set(),
        on_token=lambda t: inner.append(generate(second, OTHER, 5, Sampling(), set())[0]) if not inner else None,
    )
    assert out == generate(_model(), PROMPT, 10, Sampling(), set())[0] and inner == [alone]


BAD_COUNTS = [
    ({"batch": 0}, "batch must be an integer >= 1"),  # chunk_length's ValueError
    ({"batch": True}, "batch must be an integer"),  # torch.zeros' TypeError
    ({"batch": "1"}, "batch must be an integer"),  # a TypeError comparing it
    ({"capacity": 8.0}, "capacity must be an integer"),  # torch.zeros' TypeError
    ({"capacity": -1}, "capacity must be an integer >= 1"),  # torch.zeros' RuntimeError
    ({"capacity": 0}, "capacity must be an integer >= 1"),  # a model no generation fits, taken
    ({"chunk": 2.5}, "chunk must be an integer or None"),  # taken, failing in the first prefill's range()
    ({"chunk": True}, "chunk must be an integer or None"),  # taken as 1-token chunks
]


@pytest.mark.parametrize(("given", "named"), BAD_COUNTS, ids=[str(g) for g, _ in BAD_COUNTS])
def test_a_model_built_with_counts_of_another_type_or_below_1_is_refused(given, named):
    """Before: ``Transformer(...)`` (what ``neurobrix.run.load_model`` and the preflight build) took a batch,
    capacity or prefill chunk of another type or below 1 into a ValueError, TypeError or RuntimeError traceback, or
    kept it. Now each is refused naming it."""
    from neurobrix.warmup import scratch_weights

    weights = scratch_weights(TINY, torch.float32, torch.device("cpu"))
    counts = {"batch": 1, "capacity": 8, "chunk": None} | given
    with pytest.raises(UsageError, match=named):
        Transformer(TINY, weights, TORCH, **counts)
    Transformer(TINY, weights, TORCH, batch=1, capacity=8, chunk=None)  # control


@pytest.mark.parametrize(
    ("prompt", "dtype", "named"),
    [
        (0, "fp32", "prompt length must be an integer >= 1, got 0"),  # prefill_chunks' ValueError
        (-3, "fp32", "prompt length must be an integer >= 1, got -3"),  # torch's RuntimeError
        (5.0, "fp32", "prompt length must be an integer"),  # torch.zeros' TypeError
        (4, "fp8", "dtype must be one of fp32, fp16, bf16, got 'fp8'"),  # a KeyError
    ],
)
def test_the_preflight_refuses_a_programs_prompt_length_or_dtype_by_name(prompt, dtype, named):
    """Before: ``neurobrix.plan.generation_calls`` (which ``run.certified_ops`` and ``load_model`` call) took a prompt
    of 0 or fewer tokens, a float length or an unknown dtype into a traceback. Now each is refused naming it."""
    from neurobrix.plan import generation_calls

    with pytest.raises(UsageError, match=named):
        generation_calls(TINY, 1, prompt, 8, dtype)
    assert generation_calls(TINY, 1, 4, 8, "fp32")  # control


@pytest.mark.parametrize("stored", [None, "tiny"])
def test_load_model_refuses_what_is_no_stored_model(stored):
    """Before: ``load_model`` handed a name (or None) rather than ``store.resolve(name)``'s model failed in an
    AttributeError once the device was settled."""
    from neurobrix.run import load_model

    with pytest.raises(UsageError, match="load_model takes a stored model"):
        load_model(stored, "torch", "fp32", prompt_len=4, capacity=8)


def test_generate_refuses_what_is_no_model():
    """Before: ``generate(None, ...)`` checked every other argument, then failed in an AttributeError."""
    with pytest.raises(UsageError, match="generate's model must be a neurobrix.model.Transformer, got NoneType"):
        generate(None, PROMPT, 2, Sampling(), set())  # type: ignore[arg-type]


def _sharded(tmp_path, metadata):
    folder = make_checkpoint(tmp_path / "sharded", shards=2, use_transformers=False)
    index = folder / "model.safetensors.index.json"
    data = json.loads(index.read_text(encoding="utf-8"))
    if metadata == "absent":
        del data["metadata"]
    else:
        data["metadata"] = metadata
    index.write_text(json.dumps(data), encoding="utf-8")
    return folder, index


@pytest.mark.parametrize("metadata", ["absent", None, [], "total_size"], ids=["absent", "null", "list", "text"])
def test_a_shard_index_without_its_metadata_object_is_refused_as_transformers_refuses_it(tmp_path, metadata):
    """Before: the engine read a shard index's weight_map only, so an index without "metadata", or with one that is
    no object, was imported and run, while transformers' from_pretrained loads no model from it
    (get_checkpoint_shard_files adds its keys to index["metadata"]: a KeyError or TypeError), so there is no text of
    transformers' to be. Now import refuses it naming the field (exit 2)."""
    from neurobrix.checkpoint import CheckpointError, checkpoint_files

    folder, index = _sharded(tmp_path, metadata)
    if HAVE_TRANSFORMERS:  # the reference fails on it
        from transformers.utils.hub import get_checkpoint_shard_files

        with pytest.raises((KeyError, TypeError)):
            get_checkpoint_shard_files(str(folder), str(index))
    with pytest.raises(CheckpointError, match="its 'metadata' is .*not an object"):
        checkpoint_files(folder)


def test_a_shard_index_with_a_metadata_object_is_read(tmp_path):
    """Control: an empty object is enough for transformers, and for the engine."""
    from neurobrix.checkpoint import checkpoint_files

    folder, index = _sharded(tmp_path, {})
    if HAVE_TRANSFORMERS:
        from transformers.utils.hub import get_checkpoint_shard_files

        assert len(get_checkpoint_shard_files(str(folder), str(index))[0]) == 2
    assert "model.safetensors.index.json" in checkpoint_files(folder)


HF_VARIABLES = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")
CACHE_SETTINGS = {  # each as a user's environment may hold it; <tmp> is the test's folder
    "HF_HUB_CACHE with a variable": {"HF_HUB_CACHE": "$NB25_ROOT/direct", "NB25_ROOT": "<tmp>"},
    "HF_HOME with a variable": {"HF_HOME": "${NB25_ROOT}/home", "NB25_ROOT": "<tmp>"},
    "HUGGINGFACE_HUB_CACHE over HF_HOME": {"HUGGINGFACE_HUB_CACHE": "<tmp>/legacy", "HF_HOME": "<tmp>/home"},
    "XDG_CACHE_HOME": {"XDG_CACHE_HOME": "<tmp>/xdg"},
    "HF_HUB_CACHE over all": {"HF_HUB_CACHE": "<tmp>/direct", "HUGGINGFACE_HUB_CACHE": "<tmp>/legacy"},
}


def _set_cache_env(monkeypatch, tmp_path, setting: dict[str, str]) -> dict[str, str]:
    for name in HF_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    env = {name: value.replace("<tmp>", str(tmp_path)) for name, value in setting.items()}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def test_the_hub_cache_is_where_huggingface_hub_reads_it(tmp_path, monkeypatch):
    """Before: ``hub_cache`` read HF_HUB_CACHE, else HF_HOME/hub, with ``~`` expanded only, else huggingface_hub's
    value of when it was imported: a ``$VAR`` in either was kept literally (a folder named ``$NB25_ROOT`` in the current
    one), HUGGINGFACE_HUB_CACHE was passed over for HF_HOME's, and XDG_CACHE_HOME set after the import was not seen,
    each another folder than huggingface_hub (and `hf download`) reads in a process started with that environment.
    Here huggingface_hub itself, in such a process, says where its cache is."""
    from neurobrix.hub import hub_cache

    script = "from huggingface_hub import constants; print(constants.HF_HUB_CACHE)"
    for name, setting in CACHE_SETTINGS.items():
        env = _set_cache_env(monkeypatch, tmp_path, setting)
        theirs = subprocess.run(
            [sys.executable, "-c", script], env=dict(os.environ), capture_output=True, text=True, check=True
        ).stdout.strip()
        assert str(hub_cache()) == theirs, (name, env)


def test_an_offline_import_finds_a_model_in_a_cache_named_with_a_variable(tmp_path, monkeypatch):
    """Before: with HF_HUB_CACHE=$NB25_ROOT/hub (a variable huggingface_hub expands) and the network off, `neurobrix
    import org/tiny` looked in a folder literally named ``$NB25_ROOT`` and said the model was not in the cache, where
    `hf download` had put it. Now it is imported from there."""
    from neurobrix import store

    _set_cache_env(monkeypatch, tmp_path, {"HF_HUB_CACHE": "$NB25_ROOT/hub", "NB25_ROOT": "<tmp>"})
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    populate_hub_cache(tmp_path / "hub", "org/tiny", make_checkpoint(tmp_path / "tiny", use_transformers=False))
    model = store.import_model("org/tiny", progress=False)
    assert model.name == "org/tiny" and model.commit == "a" * 40
    assert not (tmp_path / "$NB25_ROOT").exists()
