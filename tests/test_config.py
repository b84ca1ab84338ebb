"""config.json and checkpoint checks: what the engine would otherwise silently get wrong is refused."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from neurobrix.config import ARCHITECTURES, ConfigError, ModelConfig
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
        ({"architectures": ["MistralForCausalLM"], "sliding_window": 0}, "'sliding_window' has an unexpected value 0"),
        ({"architectures": ["GPT2LMHeadModel"]}, "GPT2LMHeadModel is outside the Llama family"),
        ({"rope_scaling": {"rope_type": "yarn", "beta_fast": 8}}, "yarn rope scaling has no 'factor'"),
        ({"rope_scaling": {"rope_type": "longrope", "factor": 4.0}}, "rope scaling 'longrope' is not supported"),
        ({"rope_scaling": {"rope_type": "linear", "factor": "4"}}, "linear rope scaling's 'factor' has an unexpected"),
    ],
)
def test_variants_the_engine_does_not_run_are_refused_by_name(extra, message):
    with pytest.raises(ConfigError, match=message):
        ModelConfig.from_hf({**BASE, **extra})


def test_qwen2_attention_bias_is_its_qkv_bias():
    cfg = ModelConfig.from_hf({**BASE, "architectures": ["Qwen2ForCausalLM"], "attention_bias": True, "mlp_bias": True})
    assert cfg.qkv_bias and not cfg.o_bias and not cfg.mlp_bias  # Qwen2Attention's o and Qwen2MLP have none


@pytest.mark.parametrize("arch", ["LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"])
def test_an_mlp_activation_other_than_silu_is_refused(arch):
    """transformers' MLP applies ACT2FN[hidden_act]; the engine computes SiLU, so it runs exactly the activations
    transformers maps to SiLU and refuses every other by name."""
    activations = pytest.importorskip("transformers.activations")

    x = torch.linspace(-6, 6, 121)
    for act in ["silu", "swish", "gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "tanh", "sigmoid"]:
        data = {**BASE, "architectures": [arch], "hidden_act": act}
        if torch.allclose(activations.ACT2FN[act](x), torch.nn.functional.silu(x)):
            ModelConfig.from_hf(data)
        else:
            with pytest.raises(ConfigError, match=f"hidden_act '{act}' is not supported"):
                ModelConfig.from_hf(data)


# config.json files as a hand or an old tool writes them: fields left out (transformers' config class then gives
# its own default), biases and activations a model class ignores or applies, sliding windows on or off
FIELDS = ("num_key_value_heads", "rms_norm_eps", "max_position_embeddings", "eos_token_id", "sliding_window")
CONFIG_VARIANTS = {
    "llama-bare": ("llama", {}, FIELDS),
    "mistral-bare": ("mistral", {}, FIELDS),
    "mistral-no-window": ("mistral", {"sliding_window": None, "eos_token_id": [2, 5]}, ()),
    "mistral-window-biases-ignored": ("mistral", {"sliding_window": 6, "attention_bias": True, "mlp_bias": True}, ()),
    "qwen2-bare": ("qwen2", {}, FIELDS),
    "qwen2-window-on": ("qwen2", {"use_sliding_window": True, "max_window_layers": 0}, ("sliding_window",)),
    "qwen2-window-past-the-layers": ("qwen2", {"use_sliding_window": True, "sliding_window": 5}, ()),
    "qwen2-window-layer-types": (
        "qwen2",
        {"use_sliding_window": True, "sliding_window": 7, "layer_types": ["full_attention", "sliding_attention"]},
        (),
    ),
    "qwen2-mlp-bias-ignored": ("qwen2", {"mlp_bias": True, "hidden_act": "swish"}, ()),
}


@pytest.mark.parametrize(
    "model_type, architecture", [("mistral", "LlamaForCausalLM"), ("llama", "MistralForCausalLM"), ("qwen2", None)]
)
def test_the_model_type_picks_the_model_as_in_transformers(model_type, architecture):
    """transformers' AutoModelForCausalLM builds the class of config.json's model_type, whatever its architectures
    field names: a mistral config naming LlamaForCausalLM attends within Mistral's sliding window; a llama config
    naming MistralForCausalLM is Llama's model, whose cache keeps only sliding_window positions all the same."""
    transformers = pytest.importorskip("transformers")
    from transformers.cache_utils import DynamicCache, DynamicSlidingWindowLayer

    data = {
        **BASE,
        "model_type": model_type,
        "sliding_window": 6,
        "architectures": [architecture] if architecture else [],
    }
    theirs = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**data))
    ours = ModelConfig.from_hf(data)
    assert type(theirs).__name__ == {v: k for k, v in ARCHITECTURES.items()}[ours.architecture]
    # the window its cache keeps (a llama config's sliding_window too, which its attention mask does not apply)
    sliding = [isinstance(layer, DynamicSlidingWindowLayer) for layer in DynamicCache(config=theirs.config).layers]
    assert ours.sliding_window == (6 if any(sliding) else None)
    assert (ours.sliding_window is None) == (model_type == "qwen2")


@pytest.mark.parametrize("variant", sorted(CONFIG_VARIANTS))
def test_config_is_read_as_transformers_reads_it(variant):
    """Every field that changes the text, as transformers' own config class reads the same config.json: its
    defaults for what the file leaves out (a Mistral file without sliding_window has a window of 4,096 tokens), a
    Qwen2 window only where use_sliding_window puts it on some layer."""
    transformers = pytest.importorskip("transformers")

    model_type, extra, absent = CONFIG_VARIANTS[variant]
    data = {**BASE, "num_attention_heads": 32, "hidden_size": 64, "num_hidden_layers": 2, "model_type": model_type}
    data = {k: v for k, v in {**data, **extra}.items() if k not in absent and k != "architectures"}
    ours = ModelConfig.from_hf(data)
    theirs = transformers.AutoConfig.for_model(**data)
    eos = data.get("eos_token_id")  # (one left out: test_tokenizer.py's end-of-text test, on a loaded model)
    assert ours.eos_token_ids == tuple(eos if isinstance(eos, list) else [] if eos is None else [eos])
    assert ours.num_kv_heads == theirs.num_key_value_heads and ours.num_heads == theirs.num_attention_heads
    assert (ours.rms_norm_eps, ours.max_positions) == (theirs.rms_norm_eps, theirs.max_position_embeddings)
    sliding = model_type == "mistral" or "sliding_attention" in (getattr(theirs, "layer_types", None) or [])
    assert ours.sliding_window == (theirs.sliding_window if sliding else None)
    assert theirs.hidden_act in ("silu", "swish") and not ours.qkv_bias == (model_type != "qwen2")


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
    del state["model.layers.0.mlp.up_proj.weight"]  # (a missing norm weight is ones, as transformers fills it)
    with pytest.raises(WeightsError, match="no tensor 'model.layers.0.mlp.up_proj.weight'"):
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
        Sampling(top_p=-0.1),
        Sampling(top_k=-1),
        Sampling(repetition_penalty=0.0),
        Sampling(repetition_penalty=-1.1),
        Sampling(repetition_penalty=math.nan),  # (infinity runs, as transformers' processor takes it)
    ],
)
def test_sampling_options_are_checked(opts):
    with pytest.raises(UsageError):
        opts.validate()


def test_an_empty_prompt_is_a_usage_error(monkeypatch):
    from neurobrix import run as run_module

    class NoTokens:
        chat_template = None  # (run reads it to name what encoded to nothing)

        def encode_prompt(self, prompt, chat, system=None):  # run passes its --system (None here)
            return []

    class Stored:
        path = None

        def config(self):
            return ModelConfig.from_hf(BASE)

        def tokenizer(self, given=None):  # run passes its generate arguments
            return NoTokens()

    monkeypatch.setattr("neurobrix.store.resolve", lambda name: Stored())
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
    tokenizer = SimpleNamespace(
        repetition_penalty=model,
        unapplied_generation_settings=lambda: [],
        sampling_settings=lambda: [],
        sampling_limits=lambda given=(): {},
        assisted=lambda: [],
        generation_file="generation_config.json",
        generation={},
    )
    got = model_sampling(Sampling(temperature=0.5, repetition_penalty=given), tokenizer, said.append)
    assert got.repetition_penalty == want and got.temperature == 0.5
    assert len(said) == notes and all("generation_config.json" in s for s in said)
    tokenizer.unapplied_generation_settings = lambda: ["no_repeat_ngram_size=3"]
    model_sampling(Sampling(), tokenizer, said.append)
    assert "no_repeat_ngram_size=3, which NeuroBrix does not apply" in said[-1]


@pytest.mark.parametrize(
    "generation",
    [{"max_length": 12}, {"max_new_tokens": 7}, {"max_new_tokens": 7, "max_length": 30}, {"max_length": 66}, {}],
)
def test_run_generates_as_many_tokens_as_transformers_generate_when_not_told(tmp_path, generation):
    """Without --max-tokens, a run makes as many new tokens at most as transformers' generate makes without
    max_new_tokens: generation_config.json's max_new_tokens, else its max_length less the prompt; past the model's
    context (where transformers goes on) it is refused naming the setting (round 13: it was cut there with a note,
    a shorter text than transformers'). A file setting neither: transformers' 20 new tokens (round 21: the engine
    took 256 of its own there), cut at the model's context as generate cuts them."""
    import json

    from store_fixtures import make_checkpoint

    from neurobrix.checkpoint import read_config
    from neurobrix.run import new_token_limit
    from neurobrix.tokenizer import Tokenizer

    transformers = pytest.importorskip("transformers")
    folder = make_checkpoint(tmp_path / "model", use_transformers=False)
    (folder / "generation_config.json").write_text(json.dumps(generation))
    prompt = [3, 4, 5, 6, 7]
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    with torch.no_grad():  # end-of-text suppressed: it stops on length only
        out = model.generate(torch.tensor([prompt]), do_sample=False, min_new_tokens=10**4, pad_token_id=0)
    theirs = out.shape[1] - len(prompt)
    cfg, said = read_config(folder), []
    room = cfg.max_positions - len(prompt)
    if generation and theirs > room:
        from neurobrix.errors import UsageError

        with pytest.raises(UsageError, match=r"generation_config.json's max_length is 66 .* reaches past the model"):
            new_token_limit(cfg, Tokenizer(folder), len(prompt), None, said.append)
        return
    ours = new_token_limit(cfg, Tokenizer(folder), len(prompt), None, said.append)
    assert ours == theirs and len(said) == 1
    assert ("generation_config.json's max_" if generation else "transformers' generate makes 20") in said[0]
    assert new_token_limit(cfg, Tokenizer(folder), len(prompt), 3, said.append) == 3  # --max-tokens wins


def test_a_max_length_the_prompt_fills_is_refused_as_transformers_refuses_it(tmp_path):
    import json

    from store_fixtures import make_checkpoint

    from neurobrix.checkpoint import read_config
    from neurobrix.run import new_token_limit
    from neurobrix.tokenizer import Tokenizer, TokenizerError

    transformers = pytest.importorskip("transformers")
    folder = make_checkpoint(tmp_path / "model", use_transformers=False)
    (folder / "generation_config.json").write_text(json.dumps({"max_length": 5}))
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    with pytest.raises(ValueError, match="max_length"):
        model.generate(torch.tensor([[3, 4, 5, 6, 7]]), do_sample=False, pad_token_id=0)
    with pytest.raises(TokenizerError, match="the 5-token prompt leaves no new token within the max_length of 5"):
        new_token_limit(read_config(folder), Tokenizer(folder), 5, None, print)
    assert new_token_limit(read_config(folder), Tokenizer(folder), 5, 2, print) == 2


def test_a_run_stays_within_the_sliding_window():
    """A model with a sliding attention window generates no further than the window (every position fed within
    it): the default reaching past it (where transformers' generate runs on with its windowed attention; round 21:
    cut there with a note before) and more asked for are refused before loading, naming what fits."""
    from types import SimpleNamespace

    from neurobrix.run import new_token_limit

    cfg = ModelConfig.from_hf({**BASE, "architectures": ["MistralForCausalLM"], "sliding_window": 10})
    assert cfg.max_positions == 16 and cfg.sliding_window == 10
    tokenizer = SimpleNamespace(max_new_tokens=lambda n: None, generation_file="generation_config.json")
    said: list[str] = []
    with pytest.raises(UsageError, match="sliding attention window of 10 tokens.*give --max-tokens 7 or fewer"):
        new_token_limit(cfg, tokenizer, 4, None, said.append)  # positions 0..9 fed, the 7th token read
    assert new_token_limit(cfg, tokenizer, 4, 7, said.append) == 7
    with pytest.raises(UsageError, match="plus --max-tokens 8 exceeds the model's sliding attention window of 10"):
        new_token_limit(cfg, tokenizer, 4, 8, said.append)


LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}
# rotary fields as files write them, beyond the plain forms tests/test_model_reference.py runs end to end
ROPE_FILES = {
    # rope_scaling's own theta is the one transformers takes, over the top-level field
    "scaling-with-its-own-theta": {
        "rope_theta": 10000.0,
        "rope_scaling": {**LLAMA3, "original_max_position_embeddings": 8, "rope_theta": 300.0},
    },
    # both forms: rope_scaling wins, rope_parameters' theta is not used (the class default is)
    "scaling-over-parameters": {
        "rope_parameters": {"rope_type": "default", "rope_theta": 300.0},
        "rope_scaling": {**LLAMA3, "original_max_position_embeddings": 8},
    },
    # llama3 without its original context: max_position_embeddings
    "llama3-no-original-context": {"rope_parameters": {**LLAMA3, "rope_theta": 10000.0}},
    # a top-level original_max_position_embeddings is taken over the dict's (as Phi-3 files keep it)
    "llama3-top-level-original-context": {
        "rope_parameters": {**LLAMA3, "rope_theta": 10000.0, "original_max_position_embeddings": 8},
        "original_max_position_embeddings": 32,
    },
    # a rope_scaling without a type is the default rotation, its factor unused
    "scaling-without-type": {"rope_theta": 500.0, "rope_scaling": {"factor": 2.0}},
    # linear: every frequency over the factor; dynamic: the default rotation within max_position_embeddings
    "linear": {"rope_theta": 500.0, "rope_scaling": {"type": "linear", "factor": 4.0}},
    "dynamic": {"rope_parameters": {"rope_type": "dynamic", "factor": 3.0, "rope_theta": 500.0}},
}


@pytest.mark.parametrize("variant", sorted(ROPE_FILES))
def test_rotary_fields_are_read_as_transformers_reads_them(variant):
    """The engine's cos/sin tables against transformers' rotary embedding built from the same config.json fields,
    over positions past every original context here (a wrong theta or context moves them by far more)."""
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    from neurobrix.ops import rope_cache

    data = {**BASE, "hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 64, "model_type": "llama"}
    data = {k: v for k, v in {**data, **ROPE_FILES[variant]}.items() if k != "architectures"}
    ours = ModelConfig.from_hf(data)
    theirs = transformers.AutoConfig.for_model(**data)
    positions = torch.arange(64)[None]
    cos, sin = LlamaRotaryEmbedding(theirs)(torch.zeros(1, dtype=torch.float32), positions)
    our_cos, our_sin = rope_cache(ours.head_dim, ours.rope_theta, 64, ours.rope_scaling)
    half = ours.head_dim // 2
    torch.testing.assert_close(our_cos, cos[0, :, :half], rtol=0, atol=1e-4)
    torch.testing.assert_close(our_sin, sin[0, :, :half], rtol=0, atol=1e-4)


def test_dynamic_rope_past_the_models_context_is_refused():
    """transformers' dynamic rule rescales the frequencies once a sequence passes max_position_embeddings; the engine
    runs the default rotation up to there and refuses a longer table (``run`` never asks for one)."""
    from neurobrix.errors import InvalidInputError
    from neurobrix.ops import rope_cache

    cfg = ModelConfig.from_hf({**BASE, "rope_scaling": {"type": "dynamic", "factor": 2.0}})
    rope_cache(cfg.head_dim, cfg.rope_theta, cfg.max_positions, cfg.rope_scaling)
    with pytest.raises(InvalidInputError, match=r"dynamic rope scaling past max_position_embeddings \(16\)"):
        rope_cache(cfg.head_dim, cfg.rope_theta, cfg.max_positions + 1, cfg.rope_scaling)


def test_llama3_rope_with_a_null_top_level_original_context_is_refused():
    """A top-level ``original_max_position_embeddings`` is taken over the rope dict's, as transformers' config takes
    it; written null, transformers' llama3 rule fails (None over a float) where the engine took the dict's value and
    ran: refused by name now."""
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    data = {
        **BASE,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "max_position_embeddings": 64,
        "rope_parameters": {**LLAMA3, "rope_theta": 10000.0, "original_max_position_embeddings": 8},
        "original_max_position_embeddings": None,
    }
    # a deep copy: transformers' config standardises the rope dict in place
    theirs = {k: copy.deepcopy(v) for k, v in {**data, "model_type": "llama"}.items() if k != "architectures"}
    with pytest.raises(TypeError):
        LlamaRotaryEmbedding(transformers.AutoConfig.for_model(**theirs))
    with pytest.raises(ConfigError, match="llama3 rope scaling's 'original_max_position_embeddings' must be a finite"):
        ModelConfig.from_hf(data)


def test_llama3_rope_with_a_partial_rotary_factor_is_refused():
    """transformers' llama3 rule rotates head_dim x partial_rotary_factor dims, which its attention then cannot
    apply (its forward fails): refused by name, where the engine would rotate every dim."""
    data = {**BASE, "rope_parameters": {**LLAMA3, "rope_theta": 1e4}, "partial_rotary_factor": 0.5}
    with pytest.raises(ConfigError, match="partial_rotary_factor 0.5 with llama3 rope scaling is not supported"):
        ModelConfig.from_hf(data)
    ModelConfig.from_hf({**data, "partial_rotary_factor": 1.0})
    ModelConfig.from_hf({**data, "rope_parameters": {"rope_type": "default", "rope_theta": 1e4}})  # unused there
