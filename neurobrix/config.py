"""A Llama-family model's architecture, read from a Hugging Face config.json and checked.

Supported: LlamaForCausalLM (Llama 2/3, TinyLlama, Llama-3 rope scaling, tied embeddings),
MistralForCausalLM (no sliding window) and Qwen2ForCausalLM (q/k/v bias). Anything else is refused
by name before any weight is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import UsageError

ARCHITECTURES = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2"}
MODEL_TYPES = {"llama": "llama", "mistral": "mistral", "qwen2": "qwen2"}  # when "architectures" is absent


class ConfigError(UsageError):
    """config.json is missing a field, has a wrong value, or describes an unsupported model."""


@dataclass(frozen=True)
class ModelConfig:
    architecture: str
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    max_positions: int
    rope_theta: float
    rms_norm_eps: float
    tie_word_embeddings: bool
    qkv_bias: bool
    rope_scaling: Mapping[str, Any] | None = field(default=None, hash=False)
    eos_token_ids: tuple[int, ...] = ()  # config.json's eos_token_id (generation_config.json's wins)

    @property
    def group_size(self) -> int:
        return self.num_heads // self.num_kv_heads

    @property
    def qkv_size(self) -> int:
        return (self.num_heads + 2 * self.num_kv_heads) * self.head_dim

    @classmethod
    def from_hf(cls, data: Mapping[str, Any], source: str = "config.json") -> ModelConfig:
        def need(name: str, kind: type | tuple[type, ...] = int) -> Any:
            if name not in data or data[name] is None:
                raise ConfigError(f"{source}: field '{name}' is missing")
            value = data[name]
            if isinstance(value, bool) or not isinstance(value, kind):
                raise ConfigError(f"{source}: field '{name}' has an unexpected value {value!r}")
            return value

        names = data.get("architectures") or []
        found = [ARCHITECTURES[n] for n in names if n in ARCHITECTURES]
        if not names and data.get("model_type") in MODEL_TYPES:
            found = [MODEL_TYPES[data["model_type"]]]
        if not found:
            shown = ", ".join(map(str, names)) or data.get("model_type", "unknown")
            raise ConfigError(
                f"{source}: architecture {shown} is outside the Llama family NeuroBrix runs "
                f"({', '.join(ARCHITECTURES)})"
            )
        arch = found[0]
        if arch == "mistral" and data.get("sliding_window") not in (None, 0) or data.get("use_sliding_window"):
            raise ConfigError(
                f"{source}: sliding-window attention (sliding_window={data.get('sliding_window')}) is not supported"
            )
        # biases the engine has no place for: refused rather than silently dropped
        if data.get("mlp_bias"):
            raise ConfigError(f"{source}: mlp_bias is not supported (MLP projections without bias only)")
        if arch != "qwen2" and data.get("attention_bias"):
            raise ConfigError(f"{source}: attention_bias on {arch} (biased output projection) is not supported")
        heads, hidden = need("num_attention_heads"), need("hidden_size")
        kv_heads = data.get("num_key_value_heads") or heads
        head_dim = data.get("head_dim") or hidden // heads
        if heads % kv_heads:
            raise ConfigError(
                f"{source}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}"
            )
        # transformers >= 5 writes `rope_parameters` (theta inside); older files `rope_theta` + `rope_scaling`
        rope = data.get("rope_parameters") or {}
        theta = rope.get("rope_theta", data.get("rope_theta", 10000.0))
        scaling = data.get("rope_scaling") or (rope if rope.get("rope_type", "default") != "default" else None)
        if scaling is not None:
            kind = scaling.get("rope_type", scaling.get("type"))
            if kind not in ("llama3", "default"):
                raise ConfigError(f"{source}: rope scaling {kind!r} is not supported (supported: llama3)")
            scaling = None if kind == "default" else {k: v for k, v in scaling.items() if k != "rope_theta"}
        return cls(
            architecture=arch,
            hidden_size=hidden,
            intermediate_size=need("intermediate_size"),
            num_layers=need("num_hidden_layers"),
            num_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            vocab_size=need("vocab_size"),
            max_positions=need("max_position_embeddings"),
            rope_theta=float(theta),
            rms_norm_eps=float(need("rms_norm_eps", (int, float))),
            tie_word_embeddings=bool(data.get("tie_word_embeddings", False)),
            qkv_bias=arch == "qwen2",
            rope_scaling=scaling,
            eos_token_ids=tuple(
                eos if isinstance(eos := data.get("eos_token_id"), list) else ([] if eos is None else [eos])
            ),
        )
