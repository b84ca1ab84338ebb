"""Tiny random checkpoints of each Llama-family variant, as transformers saves them, for trying the engine on a CPU.

``python -m conformance tiny-model DIR [--family F]`` writes config.json, model.safetensors, a BPE
tokenizer.json trained here with `tokenizers`, tokenizer_config.json and a chat template: a real
checkpoint folder that `neurobrix import DIR` takes. Needs transformers (in the dev extra).
"""

from __future__ import annotations

from pathlib import Path

from neurobrix.errors import UsageError
from neurobrix.tiny import CHAT_TEMPLATE, CORPUS, train_tokenizer  # noqa: F401  (one tokenizer for both)

COMMON = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, max_position_embeddings=128)
# family -> (transformers config class name, its arguments): Llama, Llama-3 rope scaling with tied
# embeddings, Mistral (no sliding window), Qwen2 (q/k/v bias, tied embeddings, GQA 7)
FAMILIES = {
    "llama": ("LlamaConfig", dict(num_attention_heads=4, num_key_value_heads=2)),
    "llama3-tied": (
        "LlamaConfig",
        dict(
            num_attention_heads=4,
            num_key_value_heads=1,
            tie_word_embeddings=True,
            rope_theta=500000.0,
            rope_scaling={
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 32,
            },
        ),
    ),
    "mistral": ("MistralConfig", dict(num_attention_heads=8, num_key_value_heads=2, sliding_window=None)),
    "qwen2-bias-tied": (
        "Qwen2Config",
        dict(hidden_size=56, num_attention_heads=7, num_key_value_heads=1, tie_word_embeddings=True),
    ),
}


def make(folder: Path, family: str = "llama", seed: int = 0, context: int | None = None) -> Path:
    """Write a tiny random checkpoint of ``family`` into ``folder`` (created); ``context``: its
    max_position_embeddings (default 128), e.g. 32768 to try long prompts and chunked prefill."""
    # a file where the folder or a folder above it goes (`tiny-model notes.txt/x`) was "the checkpoint cannot be
    # written there (Not a directory)", the file unnamed (walk-through round 47; `neurobrix tiny-model` names it since
    # round 46): named, before torch is imported
    above = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if above is not None and not above.is_dir():
        where = "a file" if above == folder else f"{above} is a file"
        raise UsageError(f"{folder}: {where}, not a folder; name a folder to write the tiny checkpoint into")
    import torch
    import transformers

    config_name, extra = FAMILIES[family]
    folder.mkdir(parents=True, exist_ok=True)  # first: a folder that cannot be made stops before any work
    tok = train_tokenizer()
    config = getattr(transformers, config_name)(
        **{
            **COMMON,
            **extra,
            **({"max_position_embeddings": context} if context else {}),
            "vocab_size": tok.get_vocab_size(),
            "bos_token_id": tok.token_to_id("<s>"),
            "eos_token_id": tok.token_to_id("</s>"),
        }
    )
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config)
    with torch.no_grad():  # weights large enough that greedy choices are far from ties
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.normal_(0, 0.2)
    model.save_pretrained(folder, safe_serialization=True)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)
    return folder
