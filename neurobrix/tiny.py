"""`neurobrix tiny-model FOLDER`: a tiny random Llama checkpoint, to try the engine on a CPU with nothing downloaded.

Written with the engine's own dependencies (torch, safetensors, tokenizers), so a pip install can run the README's
CPU example without a source checkout or transformers: the files transformers' `save_pretrained` writes for a
LlamaForCausalLM of these sizes and its fast tokenizer (config.json, model.safetensors, generation_config.json, a BPE
tokenizer.json trained here, tokenizer_config.json, chat_template.jinja), which transformers itself loads
(tests/test_walk38.py holds each file against the one transformers writes). The test suite's checkpoints of every
family come from transformers (`python -m conformance tiny-model`); this is the Llama one, for users.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import UsageError

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{{ eos_token }}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
CORPUS = [
    "the model runs fast on certified kernels",
    "hello world, hello tokens",
    "never guess a setting",
    "a float64 reference proves every entry",
    "llama mistral qwen run here",
    "tables ship in every wheel",
] * 20
SPECIAL = ["<unk>", "<s>", "</s>"]
# transformers' LlamaConfig with these sizes (the values it writes for the rest: its defaults)
SIZES = dict(
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=128,
)


def train_tokenizer() -> Any:
    """A byte-level BPE tokenizer trained on a few sentences, adding <s> in front of every text."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", tok.token_to_id("<s>"))]
    )
    return tok


def config(vocab: int, bos: int, eos: int) -> dict[str, Any]:
    """config.json as transformers 5 writes a LlamaConfig of SIZES (less its transformers_version)."""
    heads = SIZES["num_attention_heads"]
    return {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": bos,
        "dtype": "float32",
        "eos_token_id": eos,
        "head_dim": SIZES["hidden_size"] // heads,
        "hidden_act": "silu",
        "initializer_range": 0.02,
        "mlp_bias": False,
        "model_type": "llama",
        "pad_token_id": None,
        "pretraining_tp": 1,
        "rms_norm_eps": 1e-06,
        "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"},
        "tie_word_embeddings": False,
        "use_cache": True,
        "vocab_size": vocab,
        **SIZES,
    }


def weights(vocab: int, seed: int) -> dict[str, Any]:
    """LlamaForCausalLM's tensors under its names: random N(0, 0.2) (large enough that greedy choices are far from
    ties), the norms' weights 1 as transformers initialises them."""
    import torch

    hidden, inter, layers = SIZES["hidden_size"], SIZES["intermediate_size"], SIZES["num_hidden_layers"]
    head = hidden // SIZES["num_attention_heads"]
    kv = SIZES["num_key_value_heads"] * head
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (vocab, hidden)}
    for i in range(layers):
        at = f"model.layers.{i}."
        shapes |= {
            at + "self_attn.q_proj.weight": (hidden, hidden),
            at + "self_attn.k_proj.weight": (kv, hidden),
            at + "self_attn.v_proj.weight": (kv, hidden),
            at + "self_attn.o_proj.weight": (hidden, hidden),
            at + "mlp.gate_proj.weight": (inter, hidden),
            at + "mlp.up_proj.weight": (inter, hidden),
            at + "mlp.down_proj.weight": (hidden, inter),
            at + "input_layernorm.weight": (hidden,),
            at + "post_attention_layernorm.weight": (hidden,),
        }
    shapes |= {"model.norm.weight": (hidden,), "lm_head.weight": (vocab, hidden)}
    draw = torch.Generator().manual_seed(seed)
    return {
        name: torch.ones(shape) if "norm" in name else torch.randn(shape, generator=draw) * 0.2
        for name, shape in shapes.items()
    }


def make(folder: Path, seed: int = 0) -> Path:
    """Write the checkpoint into ``folder`` (created; refused, exit 2, where it holds anything: a typo must not
    overwrite a real checkpoint's config.json and weights)."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        what = "a folder that is not empty" if folder.is_dir() else "not a folder"
        raise UsageError(f"{folder}: {what}; name a new or empty folder for the tiny checkpoint")
    # a folder under a file (`tiny-model notes.txt/tiny`) was "Not a directory: notes.txt/tiny", exit 1, naming neither
    # the file nor what to do (walk-through round 46)
    above = next((p for p in folder.parents if p.exists()), None)
    if above is not None and not above.is_dir():
        raise UsageError(f"{folder}: {above} is a file, not a folder; name a new or empty folder for the tiny model")
    from safetensors.torch import save_file  # after the refusal: it imports torch, seconds on a busy machine

    folder.mkdir(parents=True, exist_ok=True)
    tok = train_tokenizer()
    bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    vocab = tok.get_vocab_size()

    def write(name: str, data: dict[str, Any]) -> None:
        (folder / name).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    write("config.json", config(vocab, bos, eos))
    write("generation_config.json", {"bos_token_id": bos, "eos_token_id": eos, "use_cache": True})
    save_file(weights(vocab, seed), str(folder / "model.safetensors"), metadata={"format": "pt"})
    tok.save(str(folder / "tokenizer.json"))
    write(
        "tokenizer_config.json",
        {
            "bos_token": "<s>",
            "eos_token": "</s>",
            "unk_token": "<unk>",
            "model_max_length": 1000000000000000019884624838656,
            "tokenizer_class": "PreTrainedTokenizerFast",
        },
    )
    (folder / "chat_template.jinja").write_text(CHAT_TEMPLATE, encoding="utf-8")
    return folder
