"""Tiny checkpoints for the model-store tests: real files, random weights, made in milliseconds.

With transformers installed, checkpoints come from ``save_pretrained`` (the files a user's checkpoint
really has); without it, config.json, safetensors files (``safetensors.torch.save_file``) and a
tokenizer.json made with ``tokenizers`` are written directly. Also lays out a huggingface_hub cache
(models--org--name/{blobs,snapshots,refs}) so the hub code path runs with the network off.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from pathlib import Path

HAVE_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
CHAT_TEMPLATE = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}<assistant>"
WORDS = ["<unk>", "<s>", "</s>", "hello", "world", "the", "a", "model", "runs", "fast"]

TINY = {
    "hidden_size": 16,
    "intermediate_size": 32,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "vocab_size": 32,
    "max_position_embeddings": 64,
    "rms_norm_eps": 1e-5,
}
ARCHITECTURES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM"}


def config_dict(model_type: str = "llama", **extra) -> dict:
    architecture = ARCHITECTURES.get(model_type, f"{model_type.capitalize()}ForCausalLM")
    return {
        "architectures": [architecture],
        "model_type": model_type,
        **TINY,
        "tie_word_embeddings": False,
        "rope_theta": 10000.0,
        "torch_dtype": "float32",
        **extra,
    }


def write_tokenizer(folder: Path, chat_template: bool = True) -> None:
    """tokenizer.json (a word-level tokenizer from `tokenizers`) and tokenizer_config.json."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(folder / "tokenizer.json"))
    config = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
    if chat_template:
        config["chat_template"] = CHAT_TEMPLATE
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")


def tensors(config: dict) -> dict:
    """The Hugging Face tensor names and shapes of a Llama-family checkpoint, random values."""
    import torch

    g = torch.Generator().manual_seed(0)
    d, f, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    heads, kv = config["num_attention_heads"], config["num_key_value_heads"]
    hd = config.get("head_dim") or d // heads

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * 0.02

    out = {"model.embed_tokens.weight": rand(v, d), "model.norm.weight": torch.ones(d), "lm_head.weight": rand(v, d)}
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out |= {
            p + "input_layernorm.weight": torch.ones(d),
            p + "post_attention_layernorm.weight": torch.ones(d),
            p + "self_attn.q_proj.weight": rand(heads * hd, d),
            p + "self_attn.k_proj.weight": rand(kv * hd, d),
            p + "self_attn.v_proj.weight": rand(kv * hd, d),
            p + "self_attn.o_proj.weight": rand(d, heads * hd),
            p + "mlp.gate_proj.weight": rand(f, d),
            p + "mlp.up_proj.weight": rand(f, d),
            p + "mlp.down_proj.weight": rand(d, f),
        }
        if config.get("model_type") == "qwen2":  # Qwen2's q/k/v bias (after the rest: the others' values unchanged)
            out |= {p + f"self_attn.{x}_proj.bias": rand(n * hd) for x, n in (("q", heads), ("k", kv), ("v", kv))}
    return out


def _write_weights(folder: Path, config: dict, shards: int) -> None:
    from safetensors.torch import save_file

    weights = tensors(config)
    if shards <= 1:
        save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
        return
    names = sorted(weights)
    weight_map = {}
    for k in range(shards):
        file = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        part = names[k::shards]
        save_file({n: weights[n] for n in part}, str(folder / file), metadata={"format": "pt"})
        weight_map |= {n: file for n in part}
    index = {"metadata": {"total_size": sum(t.numel() * 4 for t in weights.values())}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2), encoding="utf-8")


def _save_with_transformers(folder: Path, model_type: str, shards: int) -> None:
    import torch
    import transformers
    from tokenizers import Tokenizer

    config_class = getattr(transformers, f"{ARCHITECTURES[model_type][: -len('ForCausalLM')]}Config")
    model_class = getattr(transformers, ARCHITECTURES[model_type])
    torch.manual_seed(0)
    model = model_class(config_class(**TINY))
    # a shard limit a little under the total size gives a sharded checkpoint with an index
    shard_size = f"{max(1, sum(p.numel() * 4 for p in model.parameters()) // (1000 * shards))}KB"
    model.save_pretrained(folder, **({"max_shard_size": shard_size} if shards > 1 else {}))
    scratch = folder / ".tok"
    scratch.mkdir()
    write_tokenizer(scratch, chat_template=False)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_file(str(scratch / "tokenizer.json")),
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)
    for file in scratch.iterdir():
        file.unlink()
    scratch.rmdir()


def make_checkpoint(
    folder: Path,
    model_type: str = "llama",
    *,
    shards: int = 1,
    tokenizer: bool = True,
    use_transformers: bool | None = None,
    config: dict | None = None,
) -> Path:
    """A tiny checkpoint folder as save_pretrained writes it (transformers when installed and asked)."""
    folder.mkdir(parents=True, exist_ok=True)
    if use_transformers is None:
        use_transformers = HAVE_TRANSFORMERS and config is None and model_type in ARCHITECTURES
    if use_transformers:
        _save_with_transformers(folder, model_type, shards)
    else:
        cfg = config or config_dict(model_type)
        (folder / "config.json").write_text(json.dumps(cfg, indent=2), encoding="utf-8")
        (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 2}), encoding="utf-8")
        _write_weights(folder, {**config_dict(), **cfg}, shards)
        write_tokenizer(folder)
    if not tokenizer:
        (folder / "tokenizer.json").unlink()
    return folder


def make_pickle_only(folder: Path) -> Path:
    """A checkpoint whose weights exist only as a pickle (pytorch_model.bin)."""
    import torch

    make_checkpoint(folder, use_transformers=False)
    weights = tensors(config_dict())
    for file in folder.glob("*.safetensors"):
        file.unlink()
    torch.save(weights, folder / "pytorch_model.bin")
    return folder


def populate_hub_cache(
    hub_cache: Path, repo_id: str, checkpoint: Path, commit: str = "a" * 40, extra: dict[str, bytes] | None = None
) -> Path:
    """Lay ``checkpoint``'s files out as huggingface_hub's cache does: blobs by hash, snapshot symlinks, refs/main.

    ``extra`` adds files (e.g. a pickle or code) that an import must not take. Returns the snapshot folder."""
    repo = hub_cache / f"models--{repo_id.replace('/', '--')}"
    blobs, snapshot = repo / "blobs", repo / "snapshots" / commit
    blobs.mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    files = {p.name: p.read_bytes() for p in checkpoint.iterdir() if p.is_file()} | (extra or {})
    for name, data in files.items():
        blob = blobs / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        os.symlink(os.path.relpath(blob, snapshot), snapshot / name)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit, encoding="utf-8")
    return snapshot
