"""Tiny trained tokenizers of each kind Llama-family models ship, built with `tokenizers` (no network),
saved as transformers saves them (tokenizer.json + tokenizer_config.json) so both sides read the same files.

- ``sentencepiece``: Llama 2 / TinyLlama / Mistral v0.1: BPE with byte fallback (``<0x..>`` tokens),
  normalizer Prepend("▁") + Replace(" ", "▁"), decoder Replace / ByteFallback / Fuse / Strip.
- ``metaspace``: the newer SentencePiece conversion: Metaspace pre-tokenizer and a ByteFallback + Metaspace
  decoder (the Metaspace decoder drops the first token's leading space).
- ``bytelevel``: Llama 3 / Qwen2: byte-level BPE, chat special tokens; tokenizer_config asks for
  clean_up_tokenization_spaces (as Llama 3's does), which transformers ignores for BPE.
- ``wordpiece``: a WordPiece model with clean_up_tokenization_spaces, where transformers does apply it.
"""

from __future__ import annotations

import json
from pathlib import Path

CORPUS = [
    "Hello world, the model runs fast.\n  Indented line\nnaïve café déjà vu 中文字符 🙂 emoji",
    "never guess a setting.\n\nDouble newline then text ; and , punctuation ! ?",
    " leading space and\ttab",
    "don't it's we're I'm they've",
    "a float64 reference proves every entry",
] * 30
SPECIALS = ["<unk>", "<s>", "</s>"]
KINDS = ("sentencepiece", "metaspace", "bytelevel", "wordpiece")


def _with_byte_fallback(tok):
    """The same tokenizer with Llama's 256 byte tokens appended to the vocabulary and byte fallback on."""
    from tokenizers import Tokenizer

    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    data["model"]["byte_fallback"] = True
    return Tokenizer.from_str(json.dumps(data))


def build(kind: str):
    """(tokenizers.Tokenizer, the transformers arguments its tokenizer_config.json records)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    sp_special = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
    if kind == "sentencepiece":
        tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True))
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        tok.decoder = decoders.Sequence(
            [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
        )
        tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=160, special_tokens=SPECIALS, limit_alphabet=40))
        tok = _with_byte_fallback(tok)
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
        return tok, {**sp_special, "clean_up_tokenization_spaces": False}
    if kind == "metaspace":
        tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True))
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
        tok.decoder = decoders.Sequence(
            [decoders.ByteFallback(), decoders.Metaspace(replacement="▁", prepend_scheme="first", split=False)]
        )
        tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=160, special_tokens=SPECIALS, limit_alphabet=40))
        tok = _with_byte_fallback(tok)
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
        return tok, {**sp_special, "clean_up_tokenization_spaces": False}
    if kind == "bytelevel":
        specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>"]
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tok.train_from_iterator(
            CORPUS,
            trainers.BpeTrainer(
                vocab_size=320, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
            ),
        )
        tok.post_processor = processors.TemplateProcessing(
            single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", 0)]
        )
        return tok, {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "clean_up_tokenization_spaces": True}
    if kind == "wordpiece":
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        tok.train_from_iterator(CORPUS, trainers.WordPieceTrainer(vocab_size=200, special_tokens=["[UNK]", "[SEP]"]))
        return tok, {"unk_token": "[UNK]", "eos_token": "[SEP]", "clean_up_tokenization_spaces": True}
    raise ValueError(kind)


def save(folder: Path, kind: str, chat_template: str | None = None) -> Path:
    """tokenizer.json and tokenizer_config.json (and chat_template.jinja) as transformers writes them."""
    import transformers

    tok, config = build(kind)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, **config)
    if chat_template is not None:
        fast.chat_template = chat_template
    folder.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(folder)
    return folder


def generate_these(monkeypatch, ids: list[int]):
    """`neurobrix run` with the model left out: no weights load, and generation returns ``ids`` (streamed token by
    token when run streams). The returned namespace records what run handed generation (``prompt``, ``eos``,
    ``max_tokens``); set its ``ids`` to change what the next run generates. What is left to compare is the text
    layer: the prompt's ids and the printed text."""
    from types import SimpleNamespace

    from neurobrix.generate import Stats

    generated = SimpleNamespace(ids=list(ids), eos=None, max_tokens=None, prompt=None)

    def fake_generate(model, prompt, max_new_tokens, sampling, eos, on_token=None, use_graph=False, constraints=None):
        generated.eos, generated.max_tokens, generated.prompt = eos, max_new_tokens, prompt
        for token in generated.ids:
            if on_token:
                on_token(token)
        return list(generated.ids), Stats(len(prompt), len(generated.ids), 0.0, 0.0)

    monkeypatch.setattr("neurobrix.run.load_model", lambda *args, **kwargs: None)
    monkeypatch.setattr("neurobrix.run.generate", fake_generate)
    return generated
