"""A Llama-family model's architecture, read from a Hugging Face config.json and checked.

Supported: LlamaForCausalLM (Llama 2/3, TinyLlama, Llama-3 rope scaling, tied embeddings, ``attention_bias`` and
``mlp_bias``), MistralForCausalLM and Qwen2ForCausalLM (q/k/v bias); a sliding attention window is kept in the config,
and a generation reaching past it is refused (``neurobrix.generate``). Anything else is refused by name before
any weight is read. A field config.json leaves out takes the value transformers' config class gives it.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import UsageError, counted

ARCHITECTURES = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2"}
MODEL_TYPES = {"llama": "llama", "mistral": "mistral", "qwen2": "qwen2"}  # when "architectures" is absent

# transformers' defaults (LlamaConfig, MistralConfig, Qwen2Config) for the fields config.json may leave out that
# change the text: a Mistral file without sliding_window attends over a window of 4,096 tokens; None for
# num_key_value_heads is num_attention_heads. (Not eos_token_id: generate takes the ids the file names, and a file
# naming none ends nowhere, whatever the class's default.)
DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"num_key_value_heads": None, "rms_norm_eps": 1e-6, "max_position_embeddings": 2048},
    "mistral": {
        "num_key_value_heads": 8,
        "rms_norm_eps": 1e-6,
        "max_position_embeddings": 4096 * 32,
        "sliding_window": 4096,
    },
    "qwen2": {
        "num_key_value_heads": 32,
        "rms_norm_eps": 1e-6,
        "max_position_embeddings": 32768,
        "sliding_window": 4096,
        "max_window_layers": 28,
    },
}
# the MLP activations transformers' ACT2FN maps to SiLU (the only one the engine's kernels compute)
SILU = ("silu", "swish")
# fields of transformers' config classes whose type leaves out None: a config.json writing null there is refused by
# the class's validation (the fields the engine reads itself, sizes and eps, are refused as missing by ``need``)
# (PreTrainedConfig's own chunk_size_feed_forward and is_encoder_decoder are not validated: transformers 5.25 runs a
# file with either null, which the engine refused until text round 41)
NOT_NULL = ("initializer_range", "use_cache", "tie_word_embeddings")
NOT_NULL_BY_ARCH = {
    "llama": ("attention_bias", "mlp_bias"),
    "mistral": ("num_key_value_heads", "attention_dropout"),
    "qwen2": ("use_sliding_window", "max_window_layers", "attention_dropout"),
}
# the attention implementations transformers 5 runs (the flash ones where their package is installed); a kernel from
# the hub ("org/name") it refuses unless the caller allows it
ATTENTION_IMPLEMENTATIONS = (
    "eager",
    "sdpa",
    "flex_attention",
    "flash_attention_2",
    "flash_attention_3",
    "flash_attention_4",
)
CLASSES = {"llama": "LlamaConfig", "mistral": "MistralConfig", "qwen2": "Qwen2Config"}
# the rope rules transformers computes over head_dim as config.json writes it (getattr without ``or``): a Mistral
# head_dim of 0, which its attention and its other rules read as hidden_size // num_attention_heads, is 0 dims there
RAW_HEAD_DIM = ("dynamic", "yarn")
# the layer_types entries the engine runs ("attention": transformers 5 reads that older name as full_attention). Any
# other kind transformers' config refuses (a name it does not know), or its cache builds another layer for (a linear
# attention state, no cache at all), or its model fails on (Mistral's and Qwen2's masks know full and sliding only)
LAYER_TYPES = ("full_attention", "sliding_attention", "attention")
LAYER_TYPES_BY_ARCH = {"llama": (*LAYER_TYPES, "chunked_attention"), "mistral": LAYER_TYPES, "qwen2": LAYER_TYPES}
# The fields transformers 5's config classes type (their annotations, checked by huggingface_hub's strict dataclass
# validation when the config is built) that the engine does not read or reads without checking the type: a value of
# another type makes transformers build no model ("use_cache": "no", "bos_token_id": 1.0, "eos_token_id": [1, "2"],
# "attention_bias": "false"), so it is refused as transformers refuses it. A field typed ``float`` takes a JSON float
# only: transformers 5.25 refuses an integer there ("rms_norm_eps": 1, "initializer_range": 0), which older versions
# took and the engine read as its float, printing text where transformers builds no model (text round 41); its
# rope_parameters is an object or null (0, false, "" or [] refused, where the engine took them for no dict). Kinds:
# "bool", "int" (not a bool), "float" (a JSON float: not an integer, not a bool), "number" (int or float, not a bool),
# "str", "object", "ids" (an int or a list of ints); "?" after it: null allowed.
TYPED = {
    "use_cache": "bool",
    "hidden_act": "str",
    "initializer_range": "float",
    "rms_norm_eps": "float",
    "rope_parameters": "object?",
    "bos_token_id": "int?",
    "eos_token_id": "ids?",
}
TYPED_BY_ARCH = {
    "llama": {
        "attention_bias": "bool",
        "mlp_bias": "bool",
        "attention_dropout": "number?",
        "pretraining_tp": "int?",
    },
    "mistral": {"attention_dropout": "number"},
    # Qwen2's sliding_window too, which its model reads only with use_sliding_window (the engine did not read it then)
    "qwen2": {
        "use_sliding_window": "bool",
        "max_window_layers": "int",
        "attention_dropout": "number",
        "sliding_window": "int?",
    },
}
_KINDS = {
    "bool": (lambda v: type(v) is bool, "true or false"),
    "int": (lambda v: type(v) is int, "an integer"),
    "float": (lambda v: type(v) is float, "a float (a number written with a point or an exponent: 1.0, not 1)"),
    "number": (lambda v: type(v) in (int, float), "a number"),
    "object": (lambda v: isinstance(v, Mapping), "an object"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "ids": (
        lambda v: type(v) is int or (isinstance(v, list) and all(type(i) is int for i in v)),
        "an id or a list of ids",
    ),
}


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
    o_bias: bool = False  # a bias on the attention's output projection (Llama's attention_bias)
    mlp_bias: bool = False  # biases on the gate, up and down projections (Llama's mlp_bias)
    rope_scaling: Mapping[str, Any] | None = field(default=None, hash=False)
    eos_token_ids: tuple[int, ...] = ()  # config.json's eos_token_id (generation_config.json's wins)
    # the attention window of any layer that has one: a query sees the keys of the last sliding_window positions
    # (itself included), so a generation feeding more positions than that is refused; None: full attention
    sliding_window: int | None = None

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
            if kind is int and value < 1:  # a size or count: 0 or less is no model (a crash, or a call of size 0)
                raise ConfigError(f"{source}: field '{name}' must be an integer >= 1, got {value!r}")
            return value

        def size(name: str, default: int) -> int:
            """A field transformers replaces by ``default`` only when it is absent or null (0 is kept, and fails)."""
            return need(name) if data.get(name) is not None else default

        names = data.get("architectures") or []
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ConfigError(f"{source}: field 'architectures' must be a list of class names, got {names!r}")
        if not isinstance(data.get("model_type", ""), str):
            raise ConfigError(f"{source}: field 'model_type' must be a name, got {data['model_type']!r}")
        found = [ARCHITECTURES[n] for n in names if n in ARCHITECTURES]
        model_type = data.get("model_type")
        if found and model_type and model_type not in MODEL_TYPES:
            # AutoModelForCausalLM builds the model_type's class, not the one architectures names: a "granite" config
            # naming LlamaForCausalLM runs Granite's multipliers over Llama's tensor names, which the engine does not
            raise ConfigError(
                f"{source}: model_type {model_type!r} is outside the Llama family NeuroBrix runs "
                f"({', '.join(MODEL_TYPES)}), though 'architectures' names {', '.join(names)}: transformers builds "
                "the model_type's model"
            )
        if model_type in MODEL_TYPES:
            # transformers' AutoModelForCausalLM builds the class of the config's model_type, whatever the
            # architectures field names (a mistral config naming LlamaForCausalLM has Mistral's sliding window; a
            # llama config naming LlamaForSequenceClassification, LlamaModel or a class of no library is Llama's
            # causal LM there, its weights read by their names as any other)
            found = [MODEL_TYPES[data["model_type"]]]
        if not found:
            shown = ", ".join(map(str, names)) or data.get("model_type", "unknown")
            raise ConfigError(
                f"{source}: architecture {shown} is outside the Llama family NeuroBrix runs "
                f"({', '.join(ARCHITECTURES)})"
            )
        arch = found[0]
        _refused_by_transformers(arch, data, source)
        data = {**DEFAULTS[arch], **data}
        # what transformers' model computes with these fields, and the engine does not: refused, never dropped
        act = data.get("hidden_act", "silu")
        if act not in SILU:
            raise ConfigError(f"{source}: hidden_act {act!r} is not supported (the MLP computes SiLU only)")
        if data.get("transformers_weights") is not None:  # from_pretrained loads that file instead of the usual ones
            raise ConfigError(
                f"{source}: transformers_weights {data['transformers_weights']!r} (the weights file transformers loads "
                "in place of model.safetensors or its shard index) is not supported"
            )
        quantization = data.get("quantization_config")
        if quantization is not None:  # from_pretrained loads the weights through its quantizer (or needs its package)
            method = quantization.get("quant_method") if isinstance(quantization, Mapping) else None
            raise ConfigError(
                f"{source}: quantization_config (quant_method {method!r}) is not supported: transformers loads the "
                "weights through that quantizer, computing with other numbers than the file's, which NeuroBrix does not"
            )
        heads, hidden = need("num_attention_heads"), need("hidden_size")
        kv_heads = size("num_key_value_heads", heads)
        window = _sliding_window(arch, data, need("num_hidden_layers"), source)
        if arch == "mistral" and type(data.get("head_dim")) is int and data["head_dim"] == 0:
            # MistralAttention and its rotary read the field with `or` (0 is hidden_size // num_attention_heads there;
            # Llama's and Qwen2's attention take it as written and fail)
            head_dim = hidden // heads
        else:
            head_dim = size("head_dim", hidden // heads)
        if head_dim < 1:
            raise ConfigError(
                f"{source}: hidden_size {hidden} over num_attention_heads {heads} leaves a head dim of {head_dim}"
            )
        if heads % kv_heads:
            raise ConfigError(
                f"{source}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}"
            )
        if head_dim % 2:  # rotary turns pairs of dimensions
            raise ConfigError(
                f"{source}: head dim {head_dim} is odd: rotary embeddings turn pairs of dimensions (transformers' "
                "config refuses an odd head dim above 4, its rotary fails on 3 and widens 1 to 2); NeuroBrix runs even "
                "ones only"
            )
        theta, scaling = _rope(data, source, head_dim, arch, _rope_labels(arch, data, need("num_hidden_layers")))
        kind = None if scaling is None else scaling.get("rope_type")
        if arch == "mistral" and type(data.get("head_dim")) is int and data["head_dim"] == 0 and kind in RAW_HEAD_DIM:
            # transformers' dynamic and yarn rules read head_dim as written (its default, linear and llama3 ones with
            # `or`, as its attention does): tables over 0 dims, on which its attention fails
            raise ConfigError(
                f"{source}: head_dim 0 with {kind} rope scaling, whose rule in transformers computes its rotary tables "
                "over 0 dims (its attention then fails); give the head dim itself"
            )
        if scaling is not None and scaling.get("rope_type") == "dynamic" and head_dim == 2:
            # its NTK rule raises the base to the power dim / (dim - 2), even at the model's own context
            raise ConfigError(
                f"{source}: dynamic rope scaling with a head dim of 2, on which transformers' rule divides by zero"
            )
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
            rms_norm_eps=_eps(need("rms_norm_eps", (int, float)), source),
            tie_word_embeddings=_flag(data, "tie_word_embeddings", source),
            # the projections transformers' model builds with a bias: LlamaAttention's q, k, v and o with
            # attention_bias, LlamaMLP's gate, up and down with mlp_bias (both typed true or false by
            # _refused_by_transformers); Qwen2Attention's q, k and v always, never its o; MistralAttention,
            # MistralMLP and Qwen2MLP none, whatever the file says
            qkv_bias=arch == "qwen2" or (arch == "llama" and data.get("attention_bias") is True),
            o_bias=arch == "llama" and data.get("attention_bias") is True,
            mlp_bias=arch == "llama" and data.get("mlp_bias") is True,
            rope_scaling=scaling,
            eos_token_ids=tuple(
                eos if isinstance(eos := data.get("eos_token_id"), list) else ([] if eos is None else [eos])
            ),
            sliding_window=window,
        )


def _refused_by_transformers(arch: str, data: Mapping[str, Any], source: str) -> None:
    """Values with which transformers cannot build the model, refused as it refuses them (the engine would run a model
    of its own reading): null in a field its config class types without None (its validation), a Llama hidden_size
    that is not a multiple of num_attention_heads (LlamaConfig's, even with a head_dim of its own), a null head_dim
    on Qwen2 (its attention takes the field as written), an attention or experts implementation or a dtype it does not
    know, a pad_token_id outside the embedding (the padding row of nn.Embedding)."""
    for name in NOT_NULL + NOT_NULL_BY_ARCH[arch]:
        if name in data and data[name] is None:
            raise ConfigError(f"{source}: field '{name}' is null, which transformers' {CLASSES[arch]} refuses")
    for name, kind in {**TYPED, **TYPED_BY_ARCH[arch]}.items():
        value, optional = data.get(name), kind.endswith("?")
        check, what = _KINDS[kind.rstrip("?")]
        if name in data and not (value is None and optional) and not check(value):
            raise ConfigError(
                f"{source}: field '{name}' is {value!r}, which transformers' {CLASSES[arch]} refuses: it must be "
                f"{what}{' or null' if optional else ''}"
            )
    initializer = data.get("initializer_range")
    if arch == "llama" and type(initializer) in (int, float) and not 0 <= initializer <= 1:
        # LlamaConfig's field is an interval (its validation refuses the model before any weight is read)
        raise ConfigError(
            f"{source}: initializer_range {initializer!r} is outside [0, 1], which transformers' LlamaConfig refuses"
        )
    _layer_types(arch, data, source)
    heads, hidden = data.get("num_attention_heads"), data.get("hidden_size")
    if arch == "llama" and isinstance(heads, int) and isinstance(hidden, int) and heads > 0 and hidden % heads:
        raise ConfigError(
            f"{source}: hidden_size {hidden} is not a multiple of num_attention_heads {heads}, which transformers' "
            "LlamaConfig refuses (whatever head_dim says)"
        )
    if arch == "qwen2" and "head_dim" in data and data["head_dim"] is None:
        raise ConfigError(f"{source}: field 'head_dim' is null, with which transformers' Qwen2 attention fails")
    attention = data.get("attn_implementation")  # the attention code transformers runs ("paged|" its cache's)
    named = attention.removeprefix("paged|") if isinstance(attention, str) else attention
    if attention == "paged|eager":  # its own function, which plain generate runs to other text than eager's
        raise ConfigError(
            f"{source}: attn_implementation 'paged|eager' (transformers' paged attention, for continuous batching) "
            "is not supported: transformers' generate computes other text with it"
        )
    if attention is not None and named not in ATTENTION_IMPLEMENTATIONS:
        raise ConfigError(
            f"{source}: attn_implementation {attention!r} is not one transformers runs "
            f"({', '.join(ATTENTION_IMPLEMENTATIONS)}, a 'paged|' prefix allowed): it refuses the model"
        )
    experts = data.get("experts_implementation")
    if experts not in (None, "eager"):  # an MoE setting a dense model refuses, whatever it names
        raise ConfigError(f"{source}: experts_implementation {experts!r} is refused by transformers' {CLASSES[arch]}")
    name = "dtype" if data.get("dtype") is not None else "torch_dtype"  # transformers takes dtype over torch_dtype
    dtype = data.get(name)
    if isinstance(dtype, str):
        import torch

        if not hasattr(torch, dtype):  # transformers' config takes getattr(torch, name)
            raise ConfigError(f"{source}: {name} {dtype!r} names no torch dtype, which transformers' config refuses")
        if not isinstance(getattr(torch, dtype), torch.dtype) or not getattr(torch, dtype).is_floating_point:
            # from_pretrained builds the model under that dtype: an integer or bool dtype, or a torch attribute that is
            # no dtype at all ("Tensor"), it refuses
            raise ConfigError(
                f"{source}: {name} {dtype!r} is no floating-point torch dtype, under which transformers' "
                "from_pretrained refuses to build the model"
            )
    elif dtype is not None and not isinstance(dtype, Mapping):
        # a number, a bool or a list: from_pretrained fails on it (an object is a dtype per submodule, which it takes)
        raise ConfigError(
            f"{source}: {name} {json.dumps(dtype)} is no dtype name, which transformers' from_pretrained refuses "
            '(write a name such as "float32", or null)'
        )
    labels = data.get("id2label")
    if labels is not None and not _label_keys(labels):  # its config reads {int(key): value for key in the object}
        raise ConfigError(
            f"{source}: field 'id2label' is {json.dumps(labels)}, which transformers' config refuses: it must be an "
            "object keyed by integers (or null)"
        )
    if data.get("is_encoder_decoder"):  # typed bool, yet read by its truth: generate decodes as a seq2seq model
        raise ConfigError(
            f"{source}: is_encoder_decoder {data['is_encoder_decoder']!r}: transformers' generate then decodes as an "
            "encoder-decoder model (from a decoder start token, over an encoder's output), which it fails on for a "
            f"{CLASSES[arch].removesuffix('Config')} model; write false"
        )
    pad, vocab = data.get("pad_token_id"), data.get("vocab_size")
    if (
        pad is not None
        and isinstance(vocab, int)
        and (isinstance(pad, bool) or not isinstance(pad, int) or not -vocab <= pad < vocab)
    ):
        raise ConfigError(
            f"{source}: pad_token_id {pad!r} is not a row of the {vocab}-row embedding, which transformers' model "
            "refuses (the embedding's padding index)"
        )


def _label_keys(labels: Any) -> bool:
    """Whether transformers' config takes an id2label: an object whose every key ``int()`` reads."""
    if not isinstance(labels, Mapping):
        return False
    try:
        for key in labels:
            int(key)
    except ValueError:
        return False
    return True


def _layer_types(arch: str, data: Mapping[str, Any], source: str) -> None:
    """layer_types as transformers 5 takes it: one attention kind per layer (its config refuses another count), each a
    kind the engine runs (``LAYER_TYPES_BY_ARCH``); on Llama, whose config class has no window of its own, a layer
    marked sliding_attention (chunked_attention) needs the file's sliding_window (attention_chunk_size), without which
    transformers' cache fails. (A value that is no list of names is refused by ``_sliding_window``.)"""
    types, layers = data.get("layer_types"), data.get("num_hidden_layers")
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        return
    if isinstance(layers, int) and not isinstance(layers, bool) and len(types) != layers:
        raise ConfigError(
            f"{source}: layer_types names {counted(len(types), 'layer')}, num_hidden_layers {layers}: transformers' "
            f"{CLASSES[arch]} refuses a count that differs"
        )
    other = [t for t in dict.fromkeys(types) if t not in LAYER_TYPES_BY_ARCH[arch]]
    if other:
        raise ConfigError(
            f"{source}: layer_types {other[0]!r} is not supported (NeuroBrix runs "
            f"{', '.join(t for t in LAYER_TYPES_BY_ARCH[arch] if t != 'attention')} layers on {arch}; transformers "
            "refuses a kind it does not know, and builds another cache or attention for the others)"
        )
    if arch == "llama":
        for kind, name in (("sliding_attention", "sliding_window"), ("chunked_attention", "attention_chunk_size")):
            if kind in types and data.get(name) is None:
                raise ConfigError(
                    f"{source}: layer_types marks {kind} layers but {name} is "
                    f"{'null' if name in data else 'missing'}, with which transformers' cache fails"
                )


def _rope_labels(arch: str, data: Mapping[str, Any], layers: int) -> set[str]:
    """The layer types transformers' config holds as it reads the rotary fields: a rope dict keyed by one of them is
    taken for a dict per layer type. Qwen2Config has its layer_types (the file's, else from its window) by then, and
    so has a mistral file with layer_types (Ministral's: the file's, else every layer sliding where there is a
    window); LlamaConfig and MistralConfig have none (the file's field is set after)."""
    types = data.get("layer_types")
    if arch == "qwen2" and types is None:
        window = data.get("sliding_window") if data.get("use_sliding_window") else None
        first = data.get("max_window_layers")
        types = [
            "sliding_attention" if window is not None and isinstance(first, int) and i >= first else "full_attention"
            for i in range(layers)
        ]
    elif arch == "mistral" and "layer_types" in data and types is None:
        types = ["sliding_attention" if data.get("sliding_window") is not None else "full_attention"] * layers
    elif arch not in ("qwen2", "mistral") or not isinstance(types, list):
        return set()
    return {t for t in types if isinstance(t, str)} | {"full_attention" for t in types if t == "attention"}


def _rope(
    data: Mapping[str, Any], source: str, head_dim: int, arch: str, labels: set[str]
) -> tuple[float, dict[str, Any] | None]:
    """(rope_theta, the scaling (llama3, linear, dynamic) or None) as transformers' config reads them
    (convert_rope_params_to_dict, standardize_rope_params). transformers >= 5 writes ``rope_parameters`` (theta
    inside), older files ``rope_theta`` and ``rope_scaling`` at the top level. A ``rope_scaling`` wins over
    ``rope_parameters``; theta is the chosen dict's own, else the top-level field, else 10,000; a dict without a type
    is the default rotation (its factor unused); llama3's original context is a top-level
    ``original_max_position_embeddings`` when the file has one, else the dict's, else ``max_position_embeddings``.
    A scaled rule's ``partial_rotary_factor`` (the dict's, else the top-level field) sets the dims its frequencies are
    computed over, int(head_dim x factor): the head's own, or one less (the same number of frequencies, each
    1 / theta^(2i / dim): kept as ``rotary_dim``); any other count makes tables that do not fit the head."""
    rope = data.get("rope_scaling") or data.get("rope_parameters") or {}
    if not isinstance(rope, Mapping):
        raise ConfigError(f"{source}: field 'rope_scaling' has an unexpected value {rope!r}")
    nested = [key for key in rope if key in labels]
    if nested:
        # transformers' config takes a dict keyed by a layer type for one per layer type: it fills in (type, theta,
        # factor) only in the nested dicts, and its rotary embedding reads the dict's own top-level fields, failing
        # where they are missing
        missing = [name for name in ("rope_type", "rope_theta") if name not in rope]
        if missing:
            raise ConfigError(
                f"{source}: the rope parameters are keyed by layer type ({nested[0]!r}) and have no top-level "
                f"'{missing[0]}', with which transformers' {CLASSES[arch]} rotary embedding fails"
            )
        if rope["rope_type"] != "default":
            raise ConfigError(
                f"{source}: rope parameters keyed by layer type ({nested[0]!r}) with a top-level "
                f"{rope['rope_type']!r} rotation are not supported (transformers reads only that dict's own fields)"
            )
    theta = rope.get("rope_theta", data.get("rope_theta", 10000.0))
    if not _positive(theta):  # 1 / theta^(2i/D): 0, a negative base or NaN makes every angle inf or NaN
        raise ConfigError(f"{source}: rope_theta must be a finite number > 0, got {theta!r}")
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind == "default":
        return float(theta), None
    if kind not in ("llama3", "linear", "dynamic", "yarn"):
        raise ConfigError(
            f"{source}: rope scaling {kind!r} is not supported (supported: llama3, linear, dynamic, yarn)"
        )
    partial = rope.get("partial_rotary_factor", data.get("partial_rotary_factor"))
    rotary: dict[str, int] = {}
    if partial is not None and partial != 1:
        # transformers' rule computes its frequencies over int(head_dim x partial) dims, then applies the tables to the
        # whole head: one dim less gives as many frequencies, with another exponent; any other count, tables of another
        # width than the head's, on which its attention fails
        dim = int(head_dim * partial) if _positive(partial) else None
        if dim not in (head_dim - 1, head_dim):
            raise ConfigError(
                f"{source}: partial_rotary_factor {partial!r} with {kind} rope scaling is not supported: transformers' "
                f"rule then computes its rotary tables over {dim if dim is not None else 'no'} of the head's "
                f"{head_dim} dims, and its attention fails on tables of another width than the head's"
            )
        rotary = {"rotary_dim": dim} if dim != head_dim else {}
    if kind == "yarn":
        return float(theta), _yarn(data, rope, source, rotary, head_dim, float(theta))
    factor = rope.get("factor")
    if not _positive(factor):
        raise ConfigError(f"{source}: {kind} rope scaling's 'factor' has an unexpected value {factor!r}")
    if kind == "linear":  # every frequency divided by the factor
        return float(theta), {"rope_type": "linear", "factor": float(factor), **rotary}
    if kind == "dynamic":
        # transformers' dynamic NTK rule changes the frequencies only past max_position_embeddings, where the engine
        # does not generate: up to there it is the default rotation (rope_cache refuses a longer table)
        return float(theta), {
            "rope_type": "dynamic",
            "factor": float(factor),
            "max_positions": data["max_position_embeddings"],
            **rotary,
        }
    scaling = {**{k: v for k, v in rope.items() if k not in ("rope_theta", "partial_rotary_factor")}, **rotary}
    if "original_max_position_embeddings" in data:  # transformers' config gives the top-level field priority: a
        original = data["original_max_position_embeddings"]  # null there fails its llama3 rule (None / float)
    else:
        original = rope.get("original_max_position_embeddings", data.get("max_position_embeddings"))
    scaling["original_max_position_embeddings"] = original
    for name in ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"):
        value = scaling.get(name)
        if not _positive(value):  # each divides a frequency or a wavelength: 0 fails, inf or NaN spoil every angle
            raise ConfigError(f"{source}: llama3 rope scaling's '{name}' must be a finite number > 0, got {value!r}")
    return float(theta), scaling


def _yarn(
    data: Mapping[str, Any],
    rope: Mapping[str, Any],
    source: str,
    rotary: Mapping[str, int],
    head_dim: int,
    theta: float,
) -> dict[str, Any]:
    """yarn's scaling as transformers' config and ``_compute_yarn_parameters`` read it, every field resolved to the
    number rope_cache takes. The original context is a top-level ``original_max_position_embeddings`` when the file
    has that field (Llama's, Mistral's and Qwen2's config alike), else the dict's, else max_position_embeddings; a
    null factor is max_position_embeddings over it (transformers' DeepSeek rule), an absent one a KeyError there;
    beta_fast and beta_slow default to 32 and 1 where absent or 0 (its ``or``); truncate (default true) is off
    when null; the attention factor is the file's, else from mscale and mscale_all_dim when both are set and not 0
    (0.1 m ln(factor) + 1 of each, divided; 1 at a factor up to 1), else 0.1 ln(factor) + 1. Refused by name: what
    transformers refuses or fails on (a missing factor, a context that is not a number above 0, a theta of 1, beta
    values it takes the logarithm of that are not above 0), what spoils every angle (a factor, beta or mscale that is
    not a finite number), an attention factor that is not above 0 (transformers warns that it must be; 0 makes
    every score 0), and an odd number of rotary dims, on which transformers' ramp and frequencies differ in length."""
    if "factor" not in rope:
        raise ConfigError(f"{source}: yarn rope scaling has no 'factor', which transformers requires (KeyError)")
    if "original_max_position_embeddings" in data:  # transformers' config gives the top-level field priority
        context = data["original_max_position_embeddings"]
    else:
        context = rope.get("original_max_position_embeddings", data.get("max_position_embeddings"))
    if not _positive(context):  # transformers divides by it and takes its logarithm
        raise ConfigError(
            f"{source}: yarn rope scaling's 'original_max_position_embeddings' must be a finite number > 0, got "
            f"{context!r}"
        )
    factor = rope["factor"]
    if factor is None:  # transformers takes the ratio of the model's context to the original one
        factor = data["max_position_embeddings"] / context
    if not _positive(factor):  # it divides every slowed frequency: 0 makes NaN, inf or NaN spoil every angle
        raise ConfigError(f"{source}: yarn rope scaling's 'factor' must be a finite number > 0, got {factor!r}")
    if rotary:  # an odd count of dims: ceil(dim / 2) frequencies, a ramp of dim // 2 weights
        dim = rotary["rotary_dim"]
        raise ConfigError(
            f"{source}: partial_rotary_factor {rope.get('partial_rotary_factor', data.get('partial_rotary_factor'))!r} "
            f"with yarn rope scaling is not supported: transformers' yarn rule then computes {(dim + 1) // 2} "
            f"frequencies over {dim} dims and blends them by a ramp of {dim // 2} weights"
        )
    if theta == 1:
        raise ConfigError(f"{source}: yarn rope scaling with rope_theta 1, on which transformers' rule divides by zero")
    betas = {}
    for name, default in (("beta_fast", 32), ("beta_slow", 1)):
        value = rope.get(name) or default  # transformers' own reading: absent, null or 0 is the default
        if not _positive(value):  # its logarithm is taken: 0 or less fails, inf or NaN spoil the ramp
            raise ConfigError(f"{source}: yarn rope scaling's '{name}' must be a finite number > 0, got {value!r}")
        betas[name] = float(value)
    truncate = rope.get("truncate", True)
    if truncate is not None and not isinstance(truncate, bool):
        raise ConfigError(f"{source}: yarn rope scaling's 'truncate' must be true or false, got {truncate!r}")
    attention = rope.get("attention_factor")
    if attention is None:
        mscale, mscale_all_dim = rope.get("mscale"), rope.get("mscale_all_dim")

        def scale(m: float) -> float:  # transformers' yarn_get_mscale
            return 1.0 if factor <= 1 else 0.1 * m * math.log(factor) + 1.0

        if mscale and mscale_all_dim:  # (either unset or 0: both unused)
            for name, value in (("mscale", mscale), ("mscale_all_dim", mscale_all_dim)):
                if not _finite(value):
                    raise ConfigError(f"{source}: yarn rope scaling's '{name}' must be a finite number, got {value!r}")
            if scale(mscale_all_dim) == 0:
                raise ConfigError(
                    f"{source}: yarn rope scaling's mscale_all_dim {mscale_all_dim!r} makes transformers' attention "
                    "factor a division by zero"
                )
            attention = float(scale(mscale) / scale(mscale_all_dim))
        else:
            attention = scale(1)
    if not _positive(attention):
        raise ConfigError(
            f"{source}: yarn rope scaling's attention factor must be a finite number > 0, got {attention!r} "
            "(transformers scales cos and sin by it, and warns that it must be above 0)"
        )
    return {
        "rope_type": "yarn",
        "factor": float(factor),
        "original_max_position_embeddings": context,
        "attention_factor": float(attention),
        **betas,
        "truncate": bool(truncate),
    }


def _finite(value: Any) -> bool:
    """A number (not a boolean) that a float holds: finite, and an integer within a float's range (math.isfinite of
    a larger one raises OverflowError, as does every float made of it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return abs(value) <= sys.float_info.max if isinstance(value, int) else math.isfinite(value)


def _positive(value: Any) -> bool:
    """A number (not a boolean) that is finite and above 0."""
    return _finite(value) and value > 0


def _eps(value: float, source: str) -> float:
    """rms_norm_eps: under the square root with the mean square, so a negative one makes NaN of small rows and a
    non-finite one of every row."""
    if not _finite(value) or value < 0:
        raise ConfigError(f"{source}: rms_norm_eps must be a finite number >= 0, got {value!r}")
    return float(value)


def _flag(data: Mapping[str, Any], name: str, source: str) -> bool:
    """A boolean field (null or absent: False): a string such as "false" is true to Python, so it is refused."""
    value = data.get(name)
    if value is not None and not isinstance(value, bool):
        raise ConfigError(f"{source}: field '{name}' must be true or false, got {value!r}")
    return bool(value)


def _sliding_window(arch: str, data: Mapping[str, Any], layers: int, source: str) -> int | None:
    """The attention window transformers' model gives some layer (None: every layer attends to all positions).
    Mistral: sliding_window on every layer (a file with layer_types, Ministral to transformers: on those it marks
    sliding). Qwen2: only with use_sliding_window, on the layers layer_types marks
    sliding (by default those from max_window_layers on). Llama: LlamaConfig has no window, but transformers' cache
    (a DynamicCache built from the config) keeps only the last sliding_window positions of a layer whose config has
    one (or attention_chunk_size, or as a file's own layer_types say), so a decode past it sees fewer keys."""
    window = data.get("sliding_window")
    types = data.get("layer_types")
    if types is not None and (not isinstance(types, list) or not all(isinstance(t, str) for t in types)):
        raise ConfigError(f"{source}: field 'layer_types' must be a list of attention kinds, got {types!r}")
    if arch == "llama":
        types, chunk = data.get("layer_types"), data.get("attention_chunk_size")
        if types is None:
            window = window if window is not None else chunk
        elif "sliding_attention" not in types:
            window = chunk if "chunked_attention" in types else None
    if arch == "mistral" and "layer_types" in data:
        # AutoConfig reads a mistral config.json holding layer_types (even null) as Ministral's, whose window is on the
        # layers layer_types marks sliding (all of them when it is null), and off on the others; its model builds the
        # sliding-window mask at every forward pass, whatever the layers are, and fails without a window
        if window is None:
            raise ConfigError(
                f"{source}: sliding_window is null in a mistral config.json with layer_types (transformers' "
                "Ministral), whose model builds a sliding-window mask at every step and fails without a window"
            )
        if types is not None and "sliding_attention" not in types:
            return None
    if arch == "qwen2":
        # Qwen2Config keeps the window only with use_sliding_window; the layers layer_types marks sliding (by default
        # those from max_window_layers on, where there is a window) attend through a mask that fails without one
        window = window if data.get("use_sliding_window") else None
        if types is None and window is not None:
            first = data["max_window_layers"]
            if isinstance(first, bool) or not isinstance(first, int):
                raise ConfigError(f"{source}: field 'max_window_layers' has an unexpected value {first!r}")
            types = ["sliding_attention" if i >= first else "full_attention" for i in range(layers)]
        if types is None or "sliding_attention" not in types:
            return None
        if window is None:
            why = "is null" if data.get("use_sliding_window") else "is off (use_sliding_window false)"
            raise ConfigError(
                f"{source}: layer_types marks sliding_attention layers but the sliding window {why}, with which "
                "transformers' Qwen2 attention mask fails"
            )
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ConfigError(f"{source}: field 'sliding_window' has an unexpected value {window!r}")
    return window


def checkpoint_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor a Hugging Face checkpoint of this config holds, with its shape (``lm_head.weight``
    only when the embeddings are not tied)."""
    h, d, i = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size
    hq, hkv = cfg.num_heads * d, cfg.num_kv_heads * d
    shapes: dict[str, tuple[int, ...]] = {}
    for n in range(cfg.num_layers):
        p = f"model.layers.{n}."
        shapes.update(
            {
                p + "input_layernorm.weight": (h,),
                p + "self_attn.q_proj.weight": (hq, h),
                p + "self_attn.k_proj.weight": (hkv, h),
                p + "self_attn.v_proj.weight": (hkv, h),
                p + "self_attn.o_proj.weight": (h, hq),
                p + "post_attention_layernorm.weight": (h,),
                p + "mlp.gate_proj.weight": (i, h),
                p + "mlp.up_proj.weight": (i, h),
                p + "mlp.down_proj.weight": (h, i),
            }
        )
        if cfg.qkv_bias:
            shapes.update(
                {
                    p + "self_attn.q_proj.bias": (hq,),
                    p + "self_attn.k_proj.bias": (hkv,),
                    p + "self_attn.v_proj.bias": (hkv,),
                }
            )
        if cfg.o_bias:
            shapes[p + "self_attn.o_proj.bias"] = (h,)
        if cfg.mlp_bias:
            shapes.update(
                {p + "mlp.gate_proj.bias": (i,), p + "mlp.up_proj.bias": (i,), p + "mlp.down_proj.bias": (h,)}
            )
    shapes["model.embed_tokens.weight"] = (cfg.vocab_size, h)
    shapes["model.norm.weight"] = (h,)
    if not cfg.tie_word_embeddings:
        shapes["lm_head.weight"] = (cfg.vocab_size, h)
    return shapes


def initialised(name: str) -> float | None:
    """The value transformers' from_pretrained gives a tensor of the model that the checkpoint lacks, where that value
    does not depend on the random draw: its ``_init_weights`` fills a Linear's bias with zeros and an RMSNorm's weight
    with ones (``init.zeros_``, ``init.ones_``: only tensors not loaded); None for a tensor it draws at random (a
    projection, the embedding, the head), which stays refused as missing."""
    if name.endswith(".bias"):
        return 0.0
    if name.endswith("norm.weight"):
        return 1.0
    return None
