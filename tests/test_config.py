"""config.json and checkpoint checks: what the engine would otherwise silently get wrong is refused."""

from __future__ import annotations

import math

import pytest
import torch

from neurobrix.config import ConfigError, ModelConfig
from neurobrix.errors import UsageError
from neurobrix.generate import Sampling
from neurobrix.model import WeightsError, fuse_weights

BASE = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 8,
    "intermediate_size": 12,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "vocab_size": 10,
    "max_position_embeddings": 16,
    "rms_norm_eps": 1e-5,
}


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"mlp_bias": True}, "mlp_bias is not supported"),
        ({"attention_bias": True}, "attention_bias on llama"),
        (
            {"architectures": ["Qwen2ForCausalLM"], "use_sliding_window": True, "sliding_window": 4},
            "sliding-window attention",
        ),
        ({"architectures": ["MistralForCausalLM"], "sliding_window": 4096}, "sliding-window attention"),
        ({"architectures": ["GPT2LMHeadModel"]}, "GPT2LMHeadModel is outside the Llama family"),
        ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, "rope scaling 'yarn' is not supported"),
    ],
)
def test_variants_the_engine_does_not_run_are_refused_by_name(extra, message):
    with pytest.raises(ConfigError, match=message):
        ModelConfig.from_hf({**BASE, **extra})


def test_qwen2_attention_bias_is_its_qkv_bias():
    assert ModelConfig.from_hf({**BASE, "architectures": ["Qwen2ForCausalLM"], "attention_bias": True}).qkv_bias


def checkpoint(cfg: ModelConfig) -> dict[str, torch.Tensor]:
    h, i, d = cfg.hidden_size, cfg.intermediate_size, cfg.head_dim
    p = "model.layers.0."
    return {
        "model.embed_tokens.weight": torch.zeros(cfg.vocab_size, h),
        "model.norm.weight": torch.ones(h),
        "lm_head.weight": torch.zeros(cfg.vocab_size, h),
        p + "input_layernorm.weight": torch.ones(h),
        p + "post_attention_layernorm.weight": torch.ones(h),
        p + "self_attn.q_proj.weight": torch.zeros(cfg.num_heads * d, h),
        p + "self_attn.k_proj.weight": torch.zeros(cfg.num_kv_heads * d, h),
        p + "self_attn.v_proj.weight": torch.zeros(cfg.num_kv_heads * d, h),
        p + "self_attn.o_proj.weight": torch.zeros(h, cfg.num_heads * d),
        p + "mlp.gate_proj.weight": torch.zeros(i, h),
        p + "mlp.up_proj.weight": torch.zeros(i, h),
        p + "mlp.down_proj.weight": torch.zeros(h, i),
    }


def test_a_checkpoint_tensor_the_engine_would_ignore_is_refused():
    cfg = ModelConfig.from_hf(BASE)
    state = checkpoint(cfg)
    fuse_weights(cfg, state.__getitem__, set(state), torch.float32, "cpu")  # complete: loads
    state["model.layers.0.self_attn.o_proj.bias"] = torch.zeros(cfg.hidden_size)
    with pytest.raises(WeightsError, match=r"would ignore \(model.layers.0.self_attn.o_proj.bias\)"):
        fuse_weights(cfg, state.__getitem__, set(state), torch.float32, "cpu")


def test_a_missing_or_misshapen_tensor_is_named():
    cfg = ModelConfig.from_hf(BASE)
    state = checkpoint(cfg)
    del state["model.norm.weight"]
    with pytest.raises(WeightsError, match="no tensor 'model.norm.weight'"):
        fuse_weights(cfg, state.__getitem__, set(state), torch.float32, "cpu")
    state = checkpoint(cfg)
    state["model.norm.weight"] = torch.ones(3)
    with pytest.raises(WeightsError, match=r"'model.norm.weight' has shape \[3\], config.json implies \[8\]"):
        fuse_weights(cfg, state.__getitem__, set(state), torch.float32, "cpu")


@pytest.mark.parametrize("name", ["model.layers.0.mlp.down_proj.weight", "model.layers.0.self_attn.o_proj.weight"])
def test_a_transposed_tensor_of_the_right_size_is_refused(name):
    """A tensor with the right number of elements in the wrong layout (here transposed) is not the tensor the
    config describes: it is refused by name, never reshaped into place."""
    cfg = ModelConfig.from_hf({**BASE, "head_dim": 6})  # q heads x head dim = 12 != hidden size 8
    state = checkpoint(cfg)
    rows, cols = state[name].shape
    assert rows != cols
    state[name] = state[name].T.contiguous()
    with pytest.raises(
        WeightsError, match=rf"'{name}' has shape \[{cols}, {rows}\], config.json implies \[{rows}, {cols}\]"
    ):
        fuse_weights(cfg, state.__getitem__, set(state), torch.float32, "cpu")


@pytest.mark.parametrize(
    "opts",
    [
        Sampling(temperature=math.nan),
        Sampling(temperature=-1.0),
        Sampling(top_p=math.nan),
        Sampling(top_p=0.0),
        Sampling(top_k=0),
        Sampling(repetition_penalty=0.0),
        Sampling(repetition_penalty=-1.1),
        Sampling(repetition_penalty=math.inf),
    ],
)
def test_sampling_options_are_checked(opts):
    with pytest.raises(UsageError):
        opts.validate()


def test_an_empty_prompt_is_a_usage_error(monkeypatch):
    from neurobrix import run as run_module

    class Stored:
        path = None

        def config(self):
            return ModelConfig.from_hf(BASE)

    class NoTokens:
        def __init__(self, _):
            pass

        def encode_prompt(self, prompt, chat):
            return []

    monkeypatch.setattr("neurobrix.store.resolve", lambda name: Stored())
    monkeypatch.setattr(run_module, "Tokenizer", NoTokens)
    with pytest.raises(UsageError, match="the prompt is empty after tokenization"):
        run_module.run(run_module.RunOptions(model="m", prompt=""))


def test_generation_beyond_the_kv_cache_is_refused_not_run_out_of_bounds():
    from neurobrix.generate import generate
    from neurobrix.model import Transformer, weights_from_files  # noqa: F401  (the engine's own loader path)
    from neurobrix.ops import TORCH

    cfg = ModelConfig.from_hf(BASE)
    state = checkpoint(cfg)
    model = Transformer(
        cfg, fuse_weights(cfg, state.__getitem__, set(state), torch.float32, "cpu"), TORCH, batch=1, capacity=6
    )
    generate(model, [1, 2, 3], 4, Sampling(), eos=set())  # positions 0..5: fits exactly
    with pytest.raises(UsageError, match="need a KV cache of 7 positions; this model was built with 6"):
        generate(model, [1, 2, 3], 5, Sampling(), eos=set())


@pytest.mark.parametrize(
    "given, model, want, notes",
    [
        (None, None, None, 0),  # nothing anywhere: no penalty
        (None, 1.05, 1.05, 1),  # the model's, said so
        (1.0, 1.05, 1.0, 0),  # the user's wins, even 1 (off)
        (1.3, None, 1.3, 0),
        (None, 1.0, 1.0, 0),  # the model's 1: nothing to say
    ],
)
def test_run_takes_the_models_repetition_penalty_unless_given(given, model, want, notes):
    from types import SimpleNamespace

    from neurobrix.run import model_sampling

    said: list[str] = []
    tokenizer = SimpleNamespace(repetition_penalty=model, unapplied_generation_settings=lambda: [])
    got = model_sampling(Sampling(temperature=0.5, repetition_penalty=given), tokenizer, said.append)
    assert got.repetition_penalty == want and got.temperature == 0.5
    assert len(said) == notes and all("generation_config.json" in s for s in said)
    tokenizer.unapplied_generation_settings = lambda: ["no_repeat_ngram_size=3"]
    model_sampling(Sampling(), tokenizer, said.append)
    assert "no_repeat_ngram_size=3, which NeuroBrix does not apply" in said[-1]
