"""Strictness round 52: what the memory check counts against what the engine holds.

Measured on tiny random checkpoints of every variant the engine runs (Llama tied and untied; a tied config whose file
holds the embedding only, the head only, both equal or both different; Llama's attention_bias (q/k/v and o) and
mlp_bias; Qwen2's q/k/v bias; Mistral; GQA of 1, 2 and 4 kv heads; a head_dim other than hidden / heads; float32, bf16
and fp16 files run in each --dtype; one file and three shards; q/k/v and gate/up fused at load): the bytes of the
distinct storages the loaded weights hold against ``memory.weight_bytes``, 240 checkpoints x 3 dtypes. All matched but
one class (144 of the 720): a config tying the embeddings whose file holds a head that differs from the embedding keeps
both tensors, as transformers does (``model.fuse_weights``), while the check counted the embedding once: 23,872 B held,
21,312 counted on a two-layer model in float32 (planted round 45's left-open undercount), so a run the check let through
needed vocab x hidden more. Fixed: ``run`` reads the weight files' headers (names only, no tensor) before the check and
hands the names to it; ``weight_bytes`` counts the head where a tied config's file holds both. Where the two are equal
the engine holds one tensor, and the count is an upper bound by vocab x hidden, as the docstring says: telling them
apart needs their bytes, read only after the check.

The KV cache (``kv_bytes``) is exactly the engine's KVCache; the rotary tables and positions the model keeps are within
``rotary_bytes``. The working memory was measured with a dispatch-mode tracker of every live CPU storage (each op's
outputs from when made until the last tensor of the storage is freed, the weights throughout), on --backend torch and
the interpreter class (50 runs on the one, 19 on the other, greedy and sampled; 26 more of every sampling filter on a
20,000-token vocabulary): the tensors alive at a run's peak, beside the weights, passed the plan's KV cache, rotary
tables and working memory with its 10% margin, in five ways, each fixed (the ratios are of that peak to that count). The
forward held the attention block's q/k/v, rotated queries and output until the next layer rebound them, through the
MLP's widest outputs (1.25 x on a plain model; freed now, before the MLP); silu_mul on the torch backend made a second
[tokens, I] temporary (multiplied in place now, the same values); a model whose heads x head_dim pass its hidden size
made attention outputs wider than the count (1.45 x; ``activation_bytes`` counts the attention block's 3 x heads x
head_dim beside the q/k/v now, where it passes the MLP's); a chunked prefill's boolean causal mask of chunk x keys and
its tril copy, made by the torch backend's chunk attention, went uncounted (5.8 x on a tiny model; counted now); and the
sampler's float32 copies, masks, sorted values and int64 indices of the logits reached 54 B a logit with every filter
on, 4 counted (1.49 x; 64 B now, ``memory.LOGIT_BYTES``). After the fixes every measured run's peak, weights included,
is within the plan's count, margin left out (0.39 to 0.97 of it, the lowest a greedy run of a 5,000-token vocabulary on
a 16-wide model: the 64 B a logit is an upper bound for sampling, 4 B used by a greedy pick).

Left open: the constraints' processors (bad words, sequence bias, suppressed tokens) were not measured against the 64 B;
a GPU run's kernels' own scratch (split-K and split-KV partial sums) is the margin's, not counted (round 36's plan); the
equal-head upper bound above.
"""

from __future__ import annotations

import weakref

import pytest
import torch
from safetensors.torch import load_file, save_file
from store_fixtures import config_dict, make_checkpoint
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from neurobrix import memory
from neurobrix.checkpoint import read_config, weight_files
from neurobrix.cli import main
from neurobrix.config import ModelConfig, checkpoint_shapes
from neurobrix.generate import Sampling, generate_batch
from neurobrix.model import Transformer, fuse_weights, load_safetensors, weights_from_files
from neurobrix.ops import TORCH

EMBED, HEAD = "model.embed_tokens.weight", "lm_head.weight"
SHAPES = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4}


def _checkpoint(folder, stored: str, tie: bool = True, model_type: str = "llama", dtype=torch.float32, **extra):
    """A tiny random checkpoint whose file holds ``both`` (different) tensors, ``equal`` ones, the ``embed`` only or
    the ``head`` only, stored in ``dtype``."""
    cfg = config_dict(model_type, tie_word_embeddings=tie, **SHAPES, **extra)
    make_checkpoint(folder, model_type, config=cfg, use_transformers=False)
    weights = load_file(folder / "model.safetensors")
    g = torch.Generator().manual_seed(1)
    for name, shape in checkpoint_shapes(read_config(folder)).items():  # the biases store_fixtures does not write
        weights.setdefault(name, torch.randn(shape, generator=g) * 0.02)
    if stored == "equal":
        weights[HEAD] = weights[EMBED].clone()
    elif stored == "embed":
        del weights[HEAD]
    elif stored == "head":
        del weights[EMBED]
    weights = {name: tensor.to(dtype) for name, tensor in weights.items()}
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


def _held(weights) -> int:
    """The bytes of the distinct storages the loaded weights hold (a tensor kept twice counted once)."""
    tensors = [weights.embed, weights.norm, weights.lm_head]
    for layer in weights.layers:
        tensors += [t for t in vars(layer).values() if isinstance(t, torch.Tensor)]
    return sum({t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}.values())


def _names(folder) -> set[str]:
    names: set[str] = set()
    load_safetensors([str(p) for p in weight_files(folder)], names)
    return names


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize(
    ("model_type", "extra"), [("llama", {}), ("qwen2", {}), ("mistral", {}), ("llama", {"attention_bias": True})]
)
def test_a_tied_config_whose_file_holds_a_different_head_is_counted_as_held(tmp_path, model_type, extra, dtype):
    """Before: both tensors kept (as transformers keeps them), the embedding counted once: 23,872 B held against
    21,312 counted (llama, float32), a run the check let through needing vocab x hidden more. Now the count with the
    file's names is the bytes held, in each run dtype, from a file of another dtype (bf16 here)."""
    folder = _checkpoint(tmp_path / "m", "both", model_type=model_type, dtype=torch.bfloat16, **extra)
    cfg = read_config(folder)
    weights = weights_from_files(cfg, [str(p) for p in weight_files(folder)], dtype, "cpu")
    assert weights.lm_head.data_ptr() != weights.embed.data_ptr()  # both kept
    assert _held(weights) == memory.weight_bytes(cfg, dtype.itemsize, _names(folder))


@pytest.mark.parametrize(
    ("tie", "stored", "over"), [(False, "both", 0), (True, "embed", 0), (True, "head", 0), (True, "equal", 1)]
)
@pytest.mark.parametrize("shards", [1, 3])
def test_every_other_variant_is_counted_exactly_or_over_by_the_one_head_documented(tmp_path, tie, stored, over, shards):
    """Pinned: untied, a tied file of the embedding only or the head only, exact; a tied file of two equal tensors (one
    held) counted as two, over by exactly vocab x hidden (the upper bound weight_bytes' docstring states), never
    under. Sharded files name the same tensors."""
    folder = _checkpoint(tmp_path / "m", stored, tie=tie, num_key_value_heads=1, mlp_bias=True)
    if shards > 1:
        whole = load_file(folder / "model.safetensors")
        (folder / "model.safetensors").unlink()
        make_checkpoint(tmp_path / "sharded", config=config_dict(**SHAPES), use_transformers=False, shards=shards)
        import json

        index = json.loads((tmp_path / "sharded" / "model.safetensors.index.json").read_text(encoding="utf-8"))
        names = sorted(whole)
        weight_map = {}
        for k in range(shards):
            file = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
            save_file({n: whole[n] for n in names[k::shards]}, folder / file, metadata={"format": "pt"})
            weight_map |= {n: file for n in names[k::shards]}
        index["weight_map"] = weight_map
        (folder / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    cfg = read_config(folder)
    for dtype in (torch.float32, torch.float16):
        weights = weights_from_files(cfg, [str(p) for p in weight_files(folder)], dtype, "cpu")
        extra = over * cfg.vocab_size * cfg.hidden_size * dtype.itemsize
        assert memory.weight_bytes(cfg, dtype.itemsize, _names(folder)) == _held(weights) + extra


def test_run_checks_the_head_it_will_hold_before_reading_a_weight(tmp_path, monkeypatch, capsys):
    """Before: with exactly what the old count needed available, `run` of a tied config whose file holds a different
    head passed the check and read the weights (needing vocab x hidden more than counted). Now it is refused, exit 5,
    before a weight is read; with the new count available it is let through."""
    import neurobrix.run as run_module

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = _checkpoint(tmp_path / "tied", "both")
    assert main(["import", str(folder)]) == 0
    cfg = read_config(folder)
    prompt = 2  # "<s> hello" as the word-level tokenizer encodes it, without a chat template

    def never(*args, **kwargs):
        raise AssertionError("weights were read")

    monkeypatch.setattr(run_module, "weights_from_files", never)
    monkeypatch.setattr(memory, "cgroup_memory", lambda: None)
    old = memory.plan(cfg, 4, 1, prompt, prompt + 1, reserve=0).total
    new = memory.plan(cfg, 4, 1, prompt, prompt + 1, reserve=0, names=_names(folder)).total
    assert new > old
    argv = ["run", "--model", "tied", "--prompt", "hello", "--no-chat", "--max-tokens", "1", "--dtype", "fp32"]
    for free, refused in ((old, True), (new, False)):
        monkeypatch.setattr(memory, "host_memory", lambda free=free: (free, 2**34))
        capsys.readouterr()
        with pytest.raises((SystemExit, AssertionError)) as ended:
            main(argv)
        err = capsys.readouterr().err
        if refused:
            assert isinstance(ended.value, SystemExit) and ended.value.code == 5, err
            assert "Nothing was loaded" in err and "Traceback" not in err
        else:
            assert isinstance(ended.value, AssertionError) and "weights were read" in str(ended.value)


class _Live(TorchDispatchMode):
    """The bytes of the distinct CPU storages alive, at their peak: each op's outputs counted from when made until the
    last tensor of the storage an op returned is freed; the storages of ``held`` (the weights) counted throughout."""

    def __init__(self, held) -> None:
        super().__init__()
        self.live = {t.untyped_storage().data_ptr(): [t.untyped_storage().nbytes(), 1 << 60] for t in held}
        self.now = self.peak = sum(entry[0] for entry in self.live.values())

    def _free(self, ptr: int) -> None:
        entry = self.live.get(ptr)
        if entry is not None:
            entry[1] -= 1
            if entry[1] == 0:
                self.now -= entry[0]
                del self.live[ptr]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.device.type == "cpu" and t.untyped_storage().data_ptr():
                ptr = t.untyped_storage().data_ptr()
                entry = self.live.get(ptr)
                if entry is None:
                    entry = self.live[ptr] = [t.untyped_storage().nbytes(), 0]
                    self.now += entry[0]
                    self.peak = max(self.peak, self.now)
                entry[1] += 1
                weakref.finalize(t, self._free, ptr)
        return out


def _config(**extra) -> ModelConfig:
    data = config_dict(**{**SHAPES, "num_key_value_heads": 2, "vocab_size": 40, "max_position_embeddings": 4096})
    return ModelConfig.from_hf({**data, **extra})


ALL_FILTERS = Sampling(
    temperature=0.8,
    top_k=50,
    top_p=0.9,
    min_p=0.05,
    typical_p=0.95,
    epsilon_cutoff=1e-5,
    eta_cutoff=1e-5,
    repetition_penalty=1.2,
    renormalize_logits=True,
    seed=0,
)


@pytest.mark.parametrize(
    ("extra", "dtype", "batch", "prompt", "sampling"),
    [
        ({"hidden_size": 64, "intermediate_size": 256}, torch.float32, 1, 300, Sampling()),  # the MLP's peak
        ({}, torch.bfloat16, 2, 100, Sampling()),
        ({"num_key_value_heads": 1, "head_dim": 32}, torch.float32, 2, 100, Sampling()),  # heads x head_dim > hidden
        ({"attention_bias": True, "mlp_bias": True}, torch.float32, 1, 2100, Sampling()),  # two prefill chunks
        ({"vocab_size": 5000}, torch.float32, 3, 7, ALL_FILTERS),  # the sampler's copies of the logits
        ({"vocab_size": 5000}, torch.bfloat16, 1, 5, ALL_FILTERS),
    ],
)
def test_a_runs_working_memory_is_within_what_the_check_counts(extra, dtype, batch, prompt, sampling):
    """Before: a run on the CPU (--backend torch) allocated past the plan's weights, KV cache and working memory,
    even past its 10% margin: the attention block's q/k/v, rotated queries and output held through the MLP (the next
    layer rebound them), silu_mul's second [tokens, I] temporary (1.25 x the count on a plain model); heads x head_dim
    past the hidden size (1.45 x); a chunked prefill's causal mask of chunk x keys (5.8 x on a tiny model); the
    sampler's float32 copies, masks and sorted indices of the logits (54 B a logit, 4 counted: 1.49 x). Now the forward
    frees the attention's outputs before the MLP, silu_mul multiplies in place, and ``activation_bytes`` counts the
    attention block's outputs, the chunk's mask and 64 B a logit: every storage alive at the run's peak (the weights,
    the KV cache, the rotary tables, each op's outputs) is within the plan's count, margin left out."""
    cfg = _config(**extra)
    capacity = prompt + 3
    shapes = checkpoint_shapes(cfg)
    g = torch.Generator().manual_seed(0)
    weights = fuse_weights(cfg, lambda n: torch.randn(*shapes[n], generator=g) * 0.02, set(shapes), dtype, "cpu")
    held = [weights.embed, weights.norm, weights.lm_head]
    for layer in weights.layers:
        held += [t for t in vars(layer).values() if isinstance(t, torch.Tensor)]
    prompts = [[1 + (i + b) % 30 for i in range(prompt)] for b in range(batch)]
    with _Live(held) as live:
        model = Transformer(cfg, weights, TORCH, batch=batch, capacity=capacity)
        generate_batch(model, prompts, 3, sampling, set(), device_pick=False)
    need = memory.plan(cfg, dtype.itemsize, batch, prompt, capacity, reserve=0)
    assert live.peak <= need.weights + need.kv_cache + need.activations, (live.peak, need)
