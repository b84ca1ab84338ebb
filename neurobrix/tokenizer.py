"""Text in, token ids out and back, exactly as Hugging Face transformers does it for the same files.

- Tokens: ``tokenizer.json`` through the `tokenizers` library (the library transformers' fast
  tokenizers run on), encoding as transformers' ``tokenizer(text)`` does: no truncation or padding.
- Text out: ``decode(ids)`` is transformers' ``tokenizer.decode(ids, skip_special_tokens=True)``:
  special tokens dropped, and ``clean_up_tokenization_spaces`` applied where transformers applies it
  (when tokenizer_config.json asks for it, except on BPE models, where transformers 5 ignores it
  because it corrupts their text). :class:`TextStream` streams that same text as tokens arrive.
- Chat: the model's chat template rendered as transformers renders it (its Jinja environment,
  filters and globals, in Jinja's immutable sandbox; no code from the model repository ever runs).
- End of text: the eos ids transformers' ``generate`` stops on: generation_config.json's when the model has
  that file, else config.json's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from .checkpoint import load_json, name_text, surrogate_problem
from .errors import UsageError
from .tool_schema import tool_schemas

# transformers' named special tokens (PreTrainedTokenizerBase.SPECIAL_TOKENS_ATTRIBUTES): a chat
# template sees each one the tokenizer has under its own name
SPECIAL_TOKENS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")

# tokenizer_config.json keys ending in "_token" that name no token: transformers' from_pretrained drops them where the
# model has tokenizer.json (the post-processor there adds the start and end tokens)
NOT_TOKENS = ("add_bos_token", "add_eos_token")

# transformers' clean_up_tokenization, in its order (PreTrainedTokenizerBase.clean_up_tokenization)
CLEANUP = (
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
)


class TokenizerError(UsageError):
    """tokenizer.json / tokenizer_config.json / generation_config.json is missing or malformed."""


class ChatTemplateError(TokenizerError):
    """The model's chat template failed (raise_exception, or an error of its own code): ``said`` is its message."""

    def __init__(self, said: str) -> None:
        super().__init__(f"the model's chat template failed: {said}; try --no-chat")
        self.said = said


class TokenizerFileError(TokenizerError):
    """One of those files cannot be read or parsed at all (not JSON, not UTF-8, not what the tokenizers library
    reads): in a stored model, whose files the import read whole, that means the file changed since."""


def _read_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
        data = load_json(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: JSONDecodeError, JSONNumberError
        raise TokenizerFileError(f"{path}: cannot be read as JSON: {exc}") from exc
    except RecursionError as exc:  # valid JSON nested deeper than Python's parser goes (transformers' fails too)
        raise TokenizerFileError(f"{path}: cannot be read as JSON: arrays or objects nested too deep") from exc
    if not isinstance(data, dict):
        raise TokenizerFileError(f"{path}: expected a JSON object")
    problem = surrogate_problem(path, text, data)
    if problem is not None:  # not damage: the file parses, as the import read it before strict round 63
        raise TokenizerError(problem)
    return data


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:  # transformers' open(..., encoding="utf-8") fails too
        raise TokenizerFileError(f"{path}: cannot be read as UTF-8 text: {exc}") from exc


def _added_token(value: Any) -> Any:
    """A token as tokenizer_config.json stores it (text, or an AddedToken's fields) as transformers reads it:
    text stays text, fields become a ``tokenizers.AddedToken``; anything else is None."""
    from tokenizers import AddedToken

    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        fields = ("content", "single_word", "lstrip", "rstrip", "normalized", "special")
        try:
            return AddedToken(**{k: v for k, v in value.items() if k in fields})
        except TypeError as exc:  # a flag that is not true or false: transformers' AddedToken(**fields) fails too
            raise TokenizerError(
                f"tokenizer_config.json: the token {value!r} has a flag other than true or false ({exc}), which "
                "transformers' tokenizer refuses as it loads"
            ) from None
    return None


def _is_token(value: Any) -> bool:
    """Whether transformers' tokenizer takes ``value`` from tokenizer_config.json as a token where it names one (a
    special token, a model's own ``*_token``, an extra special token): text, or an AddedToken's fields written as
    transformers writes them, under "__type": "AddedToken" (an object without it stays an object, not a token)."""
    return isinstance(value, str) or (
        isinstance(value, dict) and value.get("__type") == "AddedToken" and isinstance(value.get("content"), str)
    )


def _extra_tokens(config: dict[str, Any]) -> Any:
    """extra_special_tokens as transformers' from_pretrained takes it: additional_special_tokens, its older name, where
    extra_special_tokens is absent or empty."""
    extra = config.get("extra_special_tokens")
    return config.get("additional_special_tokens") if not extra and "additional_special_tokens" in config else extra


def _model_tokens(config: dict[str, Any]) -> dict[str, Any]:
    """A model's own named special tokens (``*_token`` keys beyond transformers' standard names) in the order
    transformers' tokenizer sets them: those written with their fields, then those written as text, updated by an
    extra_special_tokens object; where the file has neither of the last two, its model_specific_special_tokens (what
    transformers 5 saves beside them) instead."""
    own = {k: v for k, v in config.items() if k.endswith("_token") and k not in (*SPECIAL_TOKENS, *NOT_TOKENS)}
    extra = _extra_tokens(config)
    explicit = {k: v for k, v in own.items() if isinstance(v, str)} | (extra if isinstance(extra, dict) else {})
    if not explicit:
        explicit = config.get("model_specific_special_tokens") or {}
    return {k: v for k, v in own.items() if isinstance(v, dict) and _is_token(v)} | explicit


def _check_token_fields(path: str, config: dict[str, Any]) -> None:
    """Refuse tokenizer_config.json's tokens and settings in a form transformers' tokenizer refuses as it loads (a
    TypeError or ValueError before any text is encoded), where the engine passed over them or read them otherwise: a
    named special token (bos_token, eos_token...) that is neither text nor an AddedToken (an object written without its
    "__type", a number, a list); extra_special_tokens (additional_special_tokens) that is neither a list of tokens nor
    an object of named ones; model_specific_special_tokens that is no object of named tokens; added_tokens_decoder that
    is no object of entries keyed by integers with text as their content; padding_side or truncation_side other than
    "left" or "right"; a model_input_names that is no list."""
    why = "which transformers' tokenizer refuses as it loads"

    def tokens(name: str, value: Any, kinds: tuple[type, ...], what: str) -> None:
        values = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if value is not None and (not isinstance(value, kinds) or not all(_is_token(v) for v in values or ())):
            raise TokenizerError(f"{path}: {name} {value!r} is not {what}, {why}")

    one = 'text or an AddedToken (its fields under "__type": "AddedToken")'
    for name in SPECIAL_TOKENS:
        value = config.get(name)
        if value is not None and not _is_token(value):
            raise TokenizerError(f"{path}: {name} {value!r} is not {one}, {why}")
    tokens("extra_special_tokens", _extra_tokens(config), (list, dict), f"a list (or an object) of tokens, each {one}")
    if not any(isinstance(v, str) for v in _model_tokens({**config, "model_specific_special_tokens": None}).values()):
        # read only where the file names no model token as text (nor in an extra_special_tokens object)
        tokens(
            "model_specific_special_tokens", config.get("model_specific_special_tokens"), (dict,), "an object of tokens"
        )
    decoder = config.get("added_tokens_decoder")
    if decoder is not None:
        entries = decoder.items() if isinstance(decoder, dict) else None
        for key, entry in entries or ():
            try:
                int(key)
            except ValueError:
                entries = None
            if not isinstance(entry, dict) or not isinstance(entry.get("content", ""), str):
                entries = None
        if entries is None:
            raise TokenizerError(
                f"{path}: added_tokens_decoder {decoder!r} is not an object of tokens keyed by their ids, {why}"
            )
    for name in ("padding_side", "truncation_side"):
        if name in config and config[name] not in ("left", "right"):
            raise TokenizerError(f'{path}: {name} {config[name]!r} is not "left" or "right", {why}')
    if "model_input_names" in config and not isinstance(config["model_input_names"], (list, str, dict)):
        raise TokenizerError(f"{path}: model_input_names {config['model_input_names']!r} is not a list, {why}")


def _add_config_tokens(tok: Any, config: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """Add to ``tok`` the tokens tokenizer_config.json names, as transformers' TokenizersBackend does when it loads
    the same files (from_pretrained and __init__): every named special token (bos_token, eos_token...,
    and a model's own ``*_token`` keys) and every extra special token becomes a special added token, even one the
    vocabulary has as a plain token, and added_tokens_decoder's entries are added as they are written. So the
    engine encodes "</s>" in a chat template as one token and drops it from decoded text exactly where
    transformers does. Returns the named special tokens' text (what a chat template sees) and the extra ones'."""
    from tokenizers import AddedToken

    entries = config.get("added_tokens_decoder")
    # keyed by ids as transformers reads them (int(key): "-3" too), in their order
    entries = sorted((int(k), v) for k, v in entries.items()) if isinstance(entries, dict) else []
    decoder = [
        token for _, entry in entries if (token := _added_token(entry)) is not None and not isinstance(token, str)
    ]
    by_text = {str(token): token for token in decoder}
    # in transformers' order, which is the order new tokens get their ids in: the standard names in their own order
    # (whatever order the file writes them in), then the model's own named tokens (``_model_tokens``)
    named: dict[str, Any] = {}
    for key, value in [*((k, config.get(k)) for k in SPECIAL_TOKENS), *_model_tokens(config).items()]:
        token = _added_token(value)
        if token is not None:
            named[key] = by_text.get(str(token), token)
    extra: Any = _extra_tokens(config) or []
    if isinstance(extra, dict):  # named model tokens ({"image_token": "<image>"}), read by _model_tokens
        extra = []
    extras = [t for v in extra if (t := _added_token(v)) is not None] if isinstance(extra, list) else []
    # every added_tokens_decoder token (as written: transformers adds them all again, the ones tokenizer.json has too,
    # so a named one that file has as an ordinary token becomes special), then the special tokens it lacks, as special
    # (transformers hands those in one add_special_tokens call, text as special tokens not normalized, and the
    # library lets a naming that differs from every earlier one replace the flags: so a text new to the vocabulary
    # named twice, an AddedToken marked normalized as bos_token and the same text as eos_token, keeps its first id
    # and takes the lstrip/rstrip/normalized flags of its last naming unlike the ones before it)
    to_add = list(decoder)
    known = {str(t) for t in tok.get_added_tokens_decoder().values()} | {str(t) for t in to_add}
    new_at: dict[str, int] = {}
    seen: set[tuple[Any, ...]] = set()
    for token in [*named.values(), *extras]:
        flags = (
            (token, False, False, False, False)
            if isinstance(token, str)
            else (str(token), token.lstrip, token.rstrip, token.single_word, token.normalized)
        )
        if str(token) in new_at:
            if flags not in seen:
                to_add[new_at[str(token)]] = token
            seen.add(flags)
        elif str(token) not in known and token not in to_add:
            seen.add(flags)
            new_at[str(token)] = len(to_add)
            to_add.append(token)
            known.add(str(token))
    names = {str(t) for t in named.values()}
    for i, token in enumerate(to_add):
        if isinstance(token, str):
            to_add[i] = AddedToken(token, special=True)
        elif not token.special and str(token) in names:
            token.special = True
    if to_add:
        tok.add_tokens(to_add)
    return {key: str(token) for key, token in named.items()}, [str(token) for token in extras]


# the pre-tokenizer split transformers' Qwen2Tokenizer builds (models/qwen2/tokenization_qwen2.py)
QWEN2_SPLIT = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"""
    r"""|\s+(?!\S)|\s+"""
)

# the split transformers puts first in a Mistral tokenizer's pre-tokenizer where tokenizer_config.json asks it to
# (TokenizersBackend._patch_mistral_regex), in place of the incorrect one some Mistral tokenizer.json files carry
MISTRAL_SPLIT = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# the model types whose files transformers checks for that fix (the others return the tokenizer as it is)
MISTRAL_TYPES = ("mistral", "mistral3", "voxtral", "ministral", "pixtral")


def _fixes_mistral_regex(folder: Path, config: dict[str, Any], tok: Any) -> bool:
    """Whether transformers' TokenizersBackend replaces the first split of these files' pre-tokenizer by
    MISTRAL_SPLIT when it loads them from a folder: tokenizer_config.json sets fix_mistral_regex, the vocabulary
    (added tokens included) holds more than 100,000 tokens, there is a pre-tokenizer, and config.json was written by
    a transformers before 5.0 (or does not say) for a Mistral model (or does not name its type)."""
    if not config.get("fix_mistral_regex") or tok.get_vocab_size() <= 100_000 or tok.pre_tokenizer is None:
        return False
    if not (folder / "config.json").is_file():
        return False
    model_config = _read_json(folder / "config.json")
    written_by = model_config.get("transformers_version")
    if written_by:
        from packaging.version import InvalidVersion, Version

        try:
            if Version(str(written_by)) >= Version("5.0.0"):
                return False
        except InvalidVersion as exc:
            raise TokenizerError(
                f"{folder / 'config.json'}: transformers_version {written_by!r} is not a version"
            ) from exc
    model_type = model_config.get("model_type")
    return model_type is None or model_type in MISTRAL_TYPES


def _with_mistral_split(tok: Any) -> None:
    """MISTRAL_SPLIT first in ``tok``'s pre-tokenizer, as transformers puts it: in place of a sequence's first step,
    else before the pre-tokenizer (a Metaspace one replaced by bytes without a split of their own)."""
    from tokenizers import Regex, pre_tokenizers

    split = pre_tokenizers.Split(Regex(MISTRAL_SPLIT), behavior="isolated")
    current = tok.pre_tokenizer
    if isinstance(current, pre_tokenizers.Sequence):
        current[0] = split
        return
    if isinstance(current, pre_tokenizers.Metaspace):
        current = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.pre_tokenizer = pre_tokenizers.Sequence([split, current])


# the special tokens each class has by default, for those tokenizer_config.json leaves out
CLASS_TOKENS = {
    "LlamaTokenizer": {"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"},
    "Qwen2Tokenizer": {"unk_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"},
    "GPT2Tokenizer": {"unk_token": "<|endoftext|>", "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"},
    "CodeLlamaTokenizer": {
        "unk_token": "<unk>",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "prefix_token": "▁<PRE>",
        "middle_token": "▁<MID>",
        "suffix_token": "▁<SUF>",
        "eot_token": "▁<EOT>",
        "fill_token": "<FILL_ME>",
    },
}


def _tokenizer_class(folder: Path, config: dict[str, Any], tokenizer_json: str) -> str | None:
    """The transformers (5) class that rebuilds these files' tokenizer from tokenizer.json's vocabulary, or None
    where transformers uses tokenizer.json as it is. LlamaTokenizer: tokenizer_config.json (or config.json)
    declares LlamaTokenizer(Fast), as Llama 2 and TinyLlama checkpoints do, for a model of type llama (a Mistral
    model loads tokenizer.json as it is), and tokenizer.json is not byte-level. Qwen2Tokenizer: a model of type
    qwen2, whatever class the files declare (transformers maps that type to its own class: a Qwen2-architecture
    model with another tokenizer, such as DeepSeek-R1-Distill-Qwen's, is encoded with Qwen2's pre-tokenizer).
    CodeLlamaTokenizer, Qwen2Tokenizer, GPT2Tokenizer: declared, for a model of type llama (Code Llama; SmolLM
    declares GPT2Tokenizer, whose rebuild drops its tokenizer.json's digit splitting). Another class transformers has
    code of its own for is refused."""
    declared = config.get("tokenizer_class")
    named = "tokenizer_config.json"
    model_type = None
    if (folder / "config.json").is_file():
        model_config = _read_json(folder / "config.json")
        if not declared and model_config.get("tokenizer_class") is not None:
            # transformers' own ``or``: config.json's class where tokenizer_config.json's is empty
            declared, named = model_config["tokenizer_class"], "config.json"
        model_type = model_config.get("model_type")
    if declared is not None and not isinstance(declared, str):
        # a number, true/false, a list or an object: transformers' AutoTokenizer calls removesuffix on it (or looks a
        # class up by it) and fails, where the engine built tokenizer.json as it is and printed text
        raise TokenizerError(
            f"{folder / named}: tokenizer_class {declared!r} is not a class name (text or null), on which "
            "transformers' AutoTokenizer fails; fix the file or fetch the checkpoint again"
        )
    declared = declared or None  # "" names no class: transformers loads tokenizer.json as it is
    if model_type == "qwen2":
        return "Qwen2Tokenizer"
    written = declared
    declared = declared.removesuffix("Fast") if isinstance(declared, str) else None
    if model_type not in (None, "", "llama"):
        return None
    if declared == "LlamaTokenizer" and '"ByteLevel"' not in tokenizer_json:
        return "LlamaTokenizer"
    if declared in ("CodeLlamaTokenizer", "Qwen2Tokenizer", "GPT2Tokenizer"):
        return declared
    if declared not in (None, "PreTrainedTokenizer", "TokenizersBackend", "LlamaTokenizer"):
        # transformers builds a class of its own (Bert's, Gemma's, GPT-NeoX's...): tokenizer.json's vocabulary under
        # that class's normalizer, pre-tokenizer and decoder, which the engine does not rebuild
        raise TokenizerError(
            f"{folder}: tokenizer_class {written!r} is not supported: transformers encodes with that class's own "
            "rules, not tokenizer.json's as they are; NeuroBrix builds LlamaTokenizer, CodeLlamaTokenizer, "
            "Qwen2Tokenizer, GPT2Tokenizer and tokenizer.json as it is (PreTrainedTokenizerFast)"
        )
    return None


def parse_tokenizer_file(path: Path, rebuilt_by: str | None, name: str) -> Any:
    """tokenizer.json as transformers' tokenizer has the tokenizers library parse it (raising what the library
    raises). Where a transformers class rebuilds the tokenizer (``rebuilt_by``), it reads the model's vocabulary and
    merges from the file's JSON itself and has the library parse the file with a BPE, WordPiece or WordLevel model's
    vocabulary and merges left out (``TokenizersBackend.convert_to_native_format``: only the post-processor, padding
    and truncation are taken from it); a Unigram model, or one naming no type, is parsed whole there too. So the
    model's own options are never built: a ``continuing_subword_prefix`` its merges do not bear out, on which the
    library refuses the whole file ("Token ... out of vocabulary") or aborts the process (its message cut inside a
    character, which pyo3 cannot hand to Python), leaves transformers printing the class's text. The engine parsed
    the whole file first, and refused the model, or died with it. ``name`` is the path as the library takes it
    (UTF-8 text: ``checkpoint.name_text``)."""
    from tokenizers import Tokenizer as HFTokenizer

    if rebuilt_by is not None:
        data = load_json(_read_text(path))
        model = data.get("model") if isinstance(data, dict) else None
        if isinstance(model, dict) and model.get("type") not in (None, "Unigram"):
            emptied = {**model, "vocab": {}, **({"merges": []} if model.get("type") == "BPE" else {})}
            return HFTokenizer.from_str(json.dumps({**data, "model": emptied}))
    try:
        data = load_json(text) if _PREFIX.search(text := path.read_text(encoding="utf-8")) else None
    except (OSError, ValueError, RecursionError):  # (UnicodeDecodeError too) the library says what is wrong
        data = None
    if isinstance(data, dict) and (why := _prefix_cut(data.get("model"))) is not None:
        raise TokenizerError(f"{path}: {why}")
    return HFTokenizer.from_file(name)


_PREFIX = re.compile(r'"continuing_subword_prefix"\s*:\s*"')


def _prefix_cut(model: Any) -> str | None:
    """Why the tokenizers library panics building this BPE model, or None: it checks each merge (a, b) by looking
    ``a`` + ``b`` without the ``continuing_subword_prefix``'s bytes up (``&b[prefix_len..]``), which panics where b
    is shorter than the prefix or the cut falls inside one of b's characters; a cut character makes the panic's
    message no UTF-8, on which pyo3 aborts the process (transformers' tokenizer with it: no text either side, and
    `run` died without a word)."""
    if not isinstance(model, dict) or model.get("type") != "BPE":
        return None
    prefix = model.get("continuing_subword_prefix")
    cut = len(prefix.encode("utf-8", "surrogatepass")) if isinstance(prefix, str) else 0
    for merge in model.get("merges") or () if cut else ():
        pair = merge.split(" ") if isinstance(merge, str) else merge
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            return None  # the library refuses the merges as it reads them
        piece = pair[1].encode("utf-8", "surrogatepass")
        if len(piece) < cut or (len(piece) > cut and piece[cut] & 0xC0 == 0x80):
            return (
                f"the BPE model's continuing_subword_prefix {prefix!r} ({cut} bytes) cuts the merge {' '.join(pair)!r}"
                f" inside its second piece: the tokenizers library panics building the model (under transformers "
                "too, which prints no text; where a character is cut, the process aborts)"
            )
    return None


def rebuilding_class(folder: Path) -> str | None:
    """The transformers class that rebuilds the folder's tokenizer from tokenizer.json's vocabulary
    (``_tokenizer_class``), or None where none does or the files cannot say (the tokenizer's load refuses them)."""
    try:
        path = folder / "tokenizer_config.json"
        return _tokenizer_class(
            folder, _read_json(path) if path.is_file() else {}, _read_text(folder / "tokenizer.json")
        )
    except TokenizerError:
        return None


def _dropout(tok: Any) -> float | None:
    """The BPE model's dropout where it merges at random as it encodes (0 < p < 1), else None. The tokenizers
    library applies BPE-dropout (a training aid) whenever the file sets it: each merge is skipped with that
    probability, so transformers' tokenizer gives one prompt other ids from call to call (0 never skips, 1 always
    does: both encode alike each time)."""
    p = getattr(tok.model, "dropout", None) if type(tok.model).__name__ == "BPE" else None
    return p if p is not None and 0.0 < p < 1.0 else None


def _rebuilt(tok: Any, config: dict[str, Any], name: str, model: dict[str, Any]) -> Any:
    """The tokenizer transformers' class ``name`` builds from tokenizer.json: only the vocabulary, merges, added
    tokens and post-processor are taken from the file; the rest is the class's own.

    LlamaTokenizer: no normalizer, a Metaspace pre-tokenizer that prepends "▁" to the first piece of text only
    unless ``legacy``, byte fallback, SentencePiece's decoder. Llama 2's tokenizer.json instead prepends "▁" to
    every piece between special tokens, so its chat prompts (and a prompt with a leading space) encode to other
    ids. CodeLlamaTokenizer: the same without ``legacy``, its unk token in the model, the decoder's Strip always
    (the start token it always adds is set once the tokens are: ``Tokenizer``). Qwen2Tokenizer: NFC, Qwen2's
    split then bytes, the byte-level decoder. GPT2Tokenizer: no normalizer, GPT-2's byte-level pre-tokenizer and
    decoder (whatever splitting tokenizer.json adds, such as SmolLM's digits). A tokenizer.json of another model
    (Unigram, WordPiece, WordLevel) gives the class's BPE its vocabulary and no merges, as transformers builds it
    (words spelled out in pieces). ``model`` is tokenizer.json's model as its JSON has it, which transformers reads
    the vocabulary and merges from (``tok`` is parsed without them: ``parse_tokenizer_file``)."""
    from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers
    from tokenizers import Tokenizer as HFTokenizer

    vocab = model.get("vocab")
    if isinstance(vocab, list):  # a Unigram model's [piece, score] pairs in id order: the ids kept, the scores not
        vocab = {piece[0] if isinstance(piece, list) else piece: i for i, piece in enumerate(vocab)}
    if not isinstance(vocab, dict):  # transformers' class takes other text for a vocabulary file's path, and fails
        raise TokenizerError(f"tokenizer.json's model has no vocabulary {name} can read (a list or an object)")
    # another model's vocabulary (no merges) becomes a BPE without merges, as in transformers
    merges_in_file = model.get("merges") or []
    pairs = (m.split(" ") if isinstance(m, str) else m for m in merges_in_file)
    merges = [(a, b) for a, b in pairs]
    prefix = config.get("add_prefix_space")
    if name in ("LlamaTokenizer", "CodeLlamaTokenizer"):
        code = name == "CodeLlamaTokenizer"
        unk = {"unk_token": str(_added_token(config.get("unk_token", "<unk>")))} if code else {}
        rebuilt = HFTokenizer(
            models.BPE(vocab=vocab, merges=merges, fuse_unk=True, byte_fallback=True, dropout=None, **unk)
        )
        prefix = True if prefix is None else bool(prefix)
        scheme = ("always" if config.get("legacy", False) and not code else "first") if prefix else "never"
        rebuilt.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme=scheme, split=False)
        steps = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
        rebuilt.decoder = decoders.Sequence(steps + ([decoders.Strip(content=" ", left=1)] if prefix or code else []))
    elif name == "GPT2Tokenizer":
        rebuilt = HFTokenizer(
            models.BPE(
                vocab=vocab,
                merges=merges,
                dropout=None,
                continuing_subword_prefix="",
                end_of_word_suffix="",
                fuse_unk=False,
            )
        )
        rebuilt.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=bool(prefix))
        rebuilt.decoder = decoders.ByteLevel()
    else:
        rebuilt = HFTokenizer(
            models.BPE(
                vocab=vocab,
                merges=merges,
                dropout=None,
                unk_token=None,
                continuing_subword_prefix="",
                end_of_word_suffix="",
                fuse_unk=False,
                byte_fallback=False,
            )
        )
        rebuilt.normalizer = normalizers.NFC()
        rebuilt.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
                pre_tokenizers.ByteLevel(add_prefix_space=bool(prefix), use_regex=False),
            ]
        )
        rebuilt.decoder = decoders.ByteLevel()
    rebuilt.post_processor = tok.post_processor  # the added tokens: _add_config_tokens, from added_tokens_decoder
    return rebuilt


def _check_flag_types(path: Path, config: dict[str, Any], rebuilt_by: str | None) -> None:
    """Refuse tokenizer_config.json's settings that transformers' tokenizer refuses as it loads, where the engine read
    them by their truth value: split_special_tokens, which it hands to the tokenizers library as a bool (null, 0 or
    "false" fail there; absent is false); add_prefix_space for the classes that hand it to a ByteLevel pre-tokenizer
    (GPT2Tokenizer as written, null included; Qwen2Tokenizer with null as false); chat_control_tokens other than a
    list."""
    why = "transformers hands it to the tokenizers library, which takes only true or false"
    split = config.get("split_special_tokens", False)
    if type(split) is not bool:
        raise TokenizerError(f"{path}: split_special_tokens {split!r}: {why}")
    prefix = config.get("add_prefix_space")
    if (rebuilt_by == "GPT2Tokenizer" and "add_prefix_space" in config and type(prefix) is not bool) or (
        rebuilt_by == "Qwen2Tokenizer" and prefix is not None and type(prefix) is not bool
    ):
        raise TokenizerError(f"{path}: add_prefix_space {prefix!r}: {why} (its {rebuilt_by}'s ByteLevel step)")
    controls = config.get("chat_control_tokens")
    if controls is not None and not isinstance(controls, list):
        raise TokenizerError(
            f"{path}: chat_control_tokens {controls!r}: transformers' tokenizer takes a list of strings only"
        )


def _with_special_tokens_map(config: dict[str, Any], tokens_map: dict[str, Any]) -> dict[str, Any]:
    """tokenizer_config.json's settings with special_tokens_map.json's tokens, as transformers' from_pretrained merges
    them where tokenizer_config.json has no added_tokens_decoder (a checkpoint saved before transformers 4.34): each
    entry replaces tokenizer_config.json's, a token written with its fields becomes special, and an
    extra_special_tokens list is appended to tokenizer_config.json's (whose additional_special_tokens, read first as
    its extra ones, keep the map's additional_special_tokens out)."""
    merged = dict(config)
    if "additional_special_tokens" in merged and not merged.get("extra_special_tokens"):
        merged["extra_special_tokens"] = merged.pop("additional_special_tokens")

    def special(value: Any) -> Any:  # transformers makes an AddedToken of the fields, special whatever they say
        return {**value, "special": True, "__type": "AddedToken"} if isinstance(value, dict) else value

    def listed(value: Any) -> Any:  # the same in a list, where a "special" of the token's own fails (twice given)
        return special(value) if isinstance(value, dict) and "special" not in value else value

    for key, value in tokens_map.items():
        if key == "extra_special_tokens" and isinstance(value, list):
            existing = list(merged.get("extra_special_tokens") or [])
            value = existing + [listed(token) for token in value if listed(token) not in existing]
        elif key != "extra_special_tokens":  # an object there names model tokens, each as it is written
            value = special(value)
        merged[key] = value
    return merged


def _legacy_added_tokens(config: dict[str, Any], added: dict[str, Any], in_file: dict[int, Any]) -> dict[str, Any]:
    """tokenizer_config.json's settings with the added_tokens_decoder transformers' from_pretrained makes where the file
    has none (a checkpoint saved before transformers 4.34): added_tokens.json's tokens (``added``), each special, and
    not normalized, when it is one of the named or extra special tokens, else normalized; then tokenizer.json's own
    added tokens (``in_file``), which win at the same index. A token tokenizer.json lacks gets the next free id, not
    the one added_tokens.json writes; one the vocabulary has as a plain piece is matched whole before the model splits
    the text; a named special token tokenizer.json has as an ordinary added token becomes special
    (_add_config_tokens)."""
    extra = config.get("extra_special_tokens") or config.get("additional_special_tokens") or []
    names = [config.get(key) for key in SPECIAL_TOKENS] + (list(extra) if isinstance(extra, list) else [])
    special = {t.get("content") if isinstance(t, dict) else t for t in names if t}
    decoder: dict[int, dict[str, Any]] = {}
    for text, index in added.items():
        if isinstance(index, int) and not isinstance(index, bool):
            is_special = text in special
            decoder[index] = {"content": text, "normalized": not is_special, "special": is_special}
    fields = ("content", "single_word", "lstrip", "rstrip", "normalized", "special")
    decoder |= {i: {k: getattr(token, k) for k in fields} for i, token in in_file.items()}
    return {**config, "added_tokens_decoder": {str(i): token for i, token in sorted(decoder.items())}}


def _file_added_tokens(path: Path) -> dict[int, Any]:
    """tokenizer.json's added tokens as transformers' from_pretrained reads them where tokenizer_config.json has no
    added_tokens_decoder: from the file's JSON, keyed by the ids it writes (a later entry of one id replaces an
    earlier one), each ``AddedToken(**entry)``; its tokenizer then adds them in the order of those ids, each new text
    taking the next free id. The tokenizers library's own parse keeps every entry in the file's order, and where a
    class rebuilds the tokenizer it is parsed with no vocabulary: the engine took the added tokens from there, so a
    file whose ids leave a gap, repeat or fall inside the vocabulary gave them other ids than transformers' (text
    round 48)."""
    from tokenizers import AddedToken

    entries = load_json(_read_text(path)).get("added_tokens")  # (the library has parsed the file: valid entries)
    tokens: dict[int, Any] = {}
    for entry in entries if isinstance(entries, list) else ():
        fields = dict(entry)
        at = fields.pop("id")  # (popped first: an assignment computes its value before its subscript)
        tokens[at] = AddedToken(**fields)
    return tokens


def _tensor_ids(value: Any) -> list[int] | None:
    """The ids transformers' generate makes of generation_config.json's eos_token_id: ``torch.tensor(value,
    dtype=torch.long)`` (its _prepare_special_tokens), flattened as its processors and stopping criteria read it: 289.0
    and 289.5 are 289, true is 1, [[289]] is [289]. None where torch fails (text, ragged lists, a number past int64),
    as generate does."""
    import torch

    try:
        return [int(i) for i in torch.tensor(value, dtype=torch.long).flatten().tolist()]
    except (TypeError, ValueError, RuntimeError, OverflowError):
        return None


def _masks_last_ids(words: Sequence[Sequence[Any]]) -> bool:
    """Whether transformers' SequenceBiasLogitsProcessor (NoBadWordsLogitsProcessor's too) fails on these token
    sequences: it keeps each sequence once (a dict keyed by its ids: [true] and [1] are one key, written as first
    given), then indexes the scores with the last ids of the one-token sequences together, and of the longer ones of
    each length together; a list of those that holds true or false only is a mask, not ids (an IndexError, index_add_
    refusing it). true or false elsewhere, or beside an integer, is the id 1 or 0."""
    groups: dict[int, list[Any]] = {}
    for word in dict.fromkeys(tuple(w) for w in words):
        if word:
            groups.setdefault(len(word), []).append(word[-1])
    return any(all(isinstance(i, bool) for i in last) for last in groups.values())


def _panicked(exc: BaseException) -> bool:
    """Whether ``exc`` is the tokenizers library's Rust panic, which pyo3 raises as a BaseException
    (pyo3_runtime.PanicException, not importable by name) that ``except Exception`` lets through."""
    return type(exc).__name__ == "PanicException"


@contextlib.contextmanager
def tokenizers_call(what: str, error: type[UsageError] | None = None) -> Iterator[None]:
    """Every call into the tokenizers library runs under this (``checkpoint``'s check of tokenizer.json too). Its Rust
    code panics on some files (a precompiled_charsmap it cannot parse, as it loads; a Strip then Prepend normalizer
    beside an added token marked normalized, "AddedVocabulary bad split", or a template naming a special token it
    does not list, as it encodes; a Strip decoder step cutting a token's end, on a token it leaves empty or whose
    cuts cross), and pyo3 raises the panic as a PanicException, a BaseException that ``except Exception`` lets
    through. transformers' tokenizer, calling the same code, fails the same way and prints no text: the panic is
    refused in one line (``error``, TokenizerError unless given) saying ``what`` failed."""
    try:
        yield
    except BaseException as exc:
        if not _panicked(exc):
            raise
        raise (error or TokenizerError)(
            f"{what}: the tokenizers library failed on these files ({exc}), as it does under transformers"
        ) from None


# tokenizer.json's parts, each a module of the tokenizers library whose classes are the "type" names it reads
_TOKENIZER_PARTS = {
    "model": "models",
    "normalizer": "normalizers",
    "pre_tokenizer": "pre_tokenizers",
    "post_processor": "processors",
    "decoder": "decoders",
}


def _later_version(version: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version) > Version("1.0")
    except InvalidVersion:
        return False


def newer_than_library(path: Path) -> str:
    """Why the installed tokenizers refused ``path`` if a newer tokenizers wrote it (a format version or a part's
    "type" the installed library lacks), else "": that file is not damaged, and fetching it again changes nothing."""
    import tokenizers

    try:
        data = load_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return ""
    if not isinstance(data, dict):
        return ""
    installed = f"the installed tokenizers {tokenizers.__version__}"
    version = data.get("version")
    if isinstance(version, str) and _later_version(version):
        return f"; its format version is {version!r} and {installed} reads '1.0'"
    for part, module in _TOKENIZER_PARTS.items():
        known = set(dir(getattr(tokenizers, module)))
        stack = [data.get(part)]
        while stack:
            node = stack.pop()
            if isinstance(node, list):
                stack.extend(node)
            elif isinstance(node, dict):
                kind = node.get("type")
                if isinstance(kind, str) and kind not in known:
                    return f"; its {part} type {kind!r} is none that {installed} knows"
                stack.extend(node.values())
    return ""


def clean_up_tokenization(text: str) -> str:
    for old, new in CLEANUP:
        text = text.replace(old, new)
    return text


# --- chat templates ------------------------------------------------------------------------------
# transformers' environment for chat templates (utils/chat_template_utils.py, _compile_jinja_template),
# written out here because transformers is not a runtime dependency: the same sandbox and options,
# the loopcontrols extension ({% break %}, {% continue %}), {% generation %} blocks (rendered as they
# are), its tojson filter (no HTML escaping, unicode kept) and its globals raise_exception,
# strftime_now, dict and namespace.


def _tojson(
    x: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None, sort_keys: bool = False
) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


def _raise_exception(message: str) -> None:
    from jinja2.exceptions import TemplateError

    raise TemplateError(message)


class _TemplateDict:
    """``dict`` in a template: builds dicts, and gives no attribute access to the type itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict:
        return dict.fromkeys(*args, **kwargs)


@functools.lru_cache(maxsize=8)
def compile_template(source: str) -> Any:
    """A chat template compiled in transformers' environment (cached per template text)."""
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Generation(jinja2.ext.Extension):
        """``{% generation %}...{% endgeneration %}`` marks assistant text for training masks: its body renders
        as is."""

        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller: Any) -> str:
            return caller()

    class TemplateNamespace(jinja2.utils.Namespace):
        """``namespace()`` that refuses underscore attributes (no way into CPython internals)."""

        def __init__(*args: Any, **kwargs: Any) -> None:  # Jinja's signature trick: ``namespace(self=...)`` works
            self, rest = args[0], args[1:]
            attrs = dict(*rest, **kwargs)
            for name in attrs:
                TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, name: str, value: Any) -> None:
            TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check_name(name: Any) -> None:
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(
                    f"chat templates cannot store underscore-prefixed attributes on a namespace ({name!r})"
                )

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[Generation, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = _TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env.from_string(source)


# the names a message's reasoning comes under, the first the one templates read (transformers' _REASONING_FIELDS)
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


# apply_chat_template's arguments that never reach the template as variables, which render_chat does not take
# (its chat_template, continue_final_message, add_generation_prompt, tools and documents it does take)
APPLY_ONLY = (
    "tokenize",
    "sanitize_control_tokens",
    "padding",
    "truncation",
    "max_length",
    "return_tensors",
    "return_dict",
    "return_assistant_tokens_mask",
    "tokenizer_kwargs",
)
# the tag transformers appends to the message it continues, to find where that message ends in the rendered chat
CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "


def _objects_to_dicts(value: Any) -> Any:
    """transformers' _message_objects_to_dicts: mappings, dataclass instances and pydantic models (``model_dump``)
    as dicts, through lists and tuples; anything else as it is."""
    if isinstance(value, Mapping):
        return {key: _objects_to_dicts(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_objects_to_dicts(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_objects_to_dicts(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _objects_to_dicts(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if callable(getattr(value, "model_dump", None)):
        return _objects_to_dicts(value.model_dump())
    return value


def _plain(value: Any) -> Any:
    """What a template sees of a value handed to apply_chat_template (transformers' _plain_template_data): JSON
    scalars as they are (subclasses as the base type, a numpy scalar as its item), mappings, lists and tuples rebuilt,
    dataclass instances and pydantic models as dicts, anything else (a set, a bytes, an object) as "<its type>"."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {_plain(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    if any(kind.__module__ == "numpy" and kind.__name__ == "generic" for kind in type(value).__mro__):
        return _plain(value.item())  # np.bool_(False) and np.int64(3) as False and 3 (a 0-d array is no scalar)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if callable(getattr(value, "model_dump", None)):
        return _plain(value.model_dump())
    return f"<{type(value).__name__}>"


def _chat_message(message: Any) -> Any:
    """A message as transformers' apply_chat_template hands it to the template: keys whose value is None dropped
    (``content=None`` reads as no content), and reasoning under any of its names also given as ``thinking`` and
    ``reasoning_content`` (_normalize_chat_messages, _alias_reasoning_fields)."""
    if not isinstance(message, dict):
        raise TokenizerError(f"a chat message must be a dict, got {message!r}")
    message = {key: value for key, value in message.items() if value is not None}
    reasoning = next((message[key] for key in REASONING_FIELDS if key in message), None)
    return message if reasoning is None else {"thinking": reasoning, **message, "reasoning_content": reasoning}


def _conversation(chat: Any) -> list[Any]:
    """One conversation's messages as a template sees them (transformers' _normalize_chat_messages, then its
    _plain_template_data): a list of messages, or an object holding them as ``.messages``."""
    chat = _objects_to_dicts(getattr(chat, "messages", chat))
    if isinstance(chat, (str, bytes)) or not isinstance(chat, Iterable):
        raise TokenizerError(f"a chat must be a list of messages (dicts), got {chat!r}")
    return [_plain(_chat_message(message)) for message in chat]


def _cut_final_message(rendered: str, final: str) -> str:
    """The rendered chat cut at the continued message's end, as apply_chat_template cuts it (the tag's place; the
    spaces before it too where the template trimmed the tag's own)."""
    if final.strip() not in rendered or CONTINUE_TAG.strip() not in rendered:
        raise TokenizerError(
            "continue_final_message: the model's chat template drops part of the final message, so there is no end "
            "of it to continue from (transformers' apply_chat_template refuses it)"
        )
    at = rendered.rindex(CONTINUE_TAG.strip())
    if rendered[at : at + len(CONTINUE_TAG)] == CONTINUE_TAG:
        return rendered[:at]
    return rendered[:at].rstrip()


def _threshold(value: Any) -> float:
    """assistant_confidence_threshold as transformers' generate takes it: its default of 0.4 where unset."""
    if value is None:
        return 0.4
    return float(value) if isinstance(value, (int, float)) else 1.0  # anything else: on (transformers fails on it)


# generation settings that change transformers' greedy text and that NeuroBrix does not apply: name -> whether a
# value (in the whole settings) is on
UNAPPLIED: dict[str, Callable[[Any, dict[str, Any]], bool]] = {
    "num_beams": lambda v, settings: isinstance(v, (int, float)) and v > 1,
    "guidance_scale": lambda v, settings: v is not None and v != 1,
    "watermarking_config": lambda v, settings: v is not None,
    # contrastive search (with top_k > 1, transformers' default 50), DoLa, constrained beam search: generate
    # loads their code from the hub (trust_remote_code) or refuses
    # transformers' test of each: contrastive where penalty_alpha > 0 (a number: ``GENERATE_CHECKS``), constrained
    # beam search wherever either field is not null, [] and 0 included
    "penalty_alpha": lambda v, settings: _contrastive(v, settings),
    "dola_layers": lambda v, settings: v is not None,
    "force_words_ids": lambda v, settings: v is not None,
    "constraints": lambda v, settings: v is not None,
    # generate rewrites the prompt's end when given the tokenizer (else refuses); its stop_strings are applied
    # (StopStrings)
    "token_healing": lambda v, settings: bool(v),
    # several sequences for one prompt (sampled; greedy decoding refuses it), a KV cache whose keys and values are
    # quantized (the attention computed over other numbers), a generation cut after so many seconds
    "num_return_sequences": lambda v, settings: isinstance(v, (int, float)) and v > 1,
    "cache_implementation": lambda v, settings: v == "quantized",
    "max_time": lambda v, settings: v is not None,
    # a draft model's settings: generate stops once the token it picked has a probability below
    # assistant_confidence_threshold (0.4 where unset; 0 turns the stop off)
    "is_assistant": lambda v, settings: bool(v) and _threshold(settings.get("assistant_confidence_threshold")) > 0,
    # multi-token prediction heads drafting tokens (generate refuses a model without them)
    "use_mtp": lambda v, settings: bool(v),
}
# settings that make transformers' generate decode by assisted generation (candidate tokens checked several at a
# time): greedy, it keeps the tokens plain decoding picks; sampling, it draws each candidate's check in one multinomial
# call over all of them (prompt lookup) or by speculative sampling from a draft's probabilities (its early-exit
# layers), so a seed draws other tokens than token-by-token sampling: refused when sampling (``Tokenizer.assisted``)
ASSISTED = ("prompt_lookup_num_tokens", "assistant_early_exit")
# the settings that mask tokens, which the engine applies as transformers does (neurobrix.generate.Constraints)
CONSTRAINTS = (
    "no_repeat_ngram_size",
    "bad_words_ids",
    "min_length",
    "min_new_tokens",
    "forced_eos_token_id",
    "forced_bos_token_id",
    "encoder_repetition_penalty",
    "encoder_no_repeat_ngram_size",
    "suppress_tokens",
    "begin_suppress_tokens",
    "sequence_bias",
    "exponential_decay_length_penalty",
    "remove_invalid_values",
)
# the settings whose empty list ([]) transformers' generate fails on (a comparison with 0, an empty tensor of ids, a
# processor refusing an empty list), where the engine took it for no setting
EMPTY_LIST_FAILS = (
    *("no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "min_length", "min_new_tokens", "bad_words_ids"),
    *("forced_eos_token_id", "encoder_repetition_penalty", "sequence_bias", "exponential_decay_length_penalty"),
)
# the sampling filters transformers' generate applies from these settings whenever it samples (its warpers), which
# the engine applies when it samples (neurobrix.generate.Sampling), and their log-softmax (renormalize_logits); top_k
# is 50 where they set none
SAMPLING_FIELDS = (
    "top_h",
    "top_k",
    "top_p",
    "min_p",
    "typical_p",
    "epsilon_cutoff",
    "eta_cutoff",
    "renormalize_logits",
)
DEFAULT_TOP_K = 50  # transformers' GenerationConfig default, which generate applies where the settings have none
# the settings the engine reads (or names as not applied) from generation_config.json, or from config.json when the
# model has no generation_config.json, as transformers' GenerationConfig.from_model_config takes them there
GENERATION_FIELDS = frozenset(
    {
        "eos_token_id",
        "repetition_penalty",
        "max_new_tokens",
        "max_length",
        "do_sample",
        "temperature",
        *SAMPLING_FIELDS,
        "assistant_confidence_threshold",
        "stop_strings",
        *ASSISTED,
        *UNAPPLIED,
        *CONSTRAINTS,
        "early_stopping",
        "assistant_ensemble_weight",
        "compile_config",
        "bos_token_id",
        "pad_token_id",
        "decoder_start_token_id",
        # read only to refuse what transformers' generate fails on (GENERATE_CHECKS) or reads otherwise
        "use_cache",
        "max_matching_ngram_size",
        "prefill_chunk_size",
    }
)
# the cache implementations transformers' GenerationConfig knows, and the arguments of generate() it refuses to find
# among the settings (which it keeps only from a file not marked _from_model_config)
CACHE_IMPLEMENTATIONS = (
    *("static", "offloaded_static", "sliding_window", "hybrid", "hybrid_chunked", "offloaded_hybrid"),
    *("offloaded_hybrid_chunked", "dynamic", "offloaded", "quantized", "paged"),
)
GENERATE_ARGUMENTS = (
    *("logits_processor", "stopping_criteria", "prefix_allowed_tokens_fn", "synced_gpus", "assistant_model"),
    *("streamer", "negative_prompt_ids", "negative_prompt_attention_mask"),
)


def _forced_and_suppressed(settings: dict[str, Any]) -> str | None:
    """The forced token (forced_bos_token_id, forced_eos_token_id) whose every id suppress_tokens suppresses."""
    suppressed = set(settings["suppress_tokens"])
    for name in ("forced_bos_token_id", "forced_eos_token_id"):
        forced = settings.get(name)
        if forced is not None:
            forced = {forced} if isinstance(forced, int) else set(forced)
            if forced and forced <= suppressed:
                return name
    return None


def _compared_with_zero(value: Any) -> None:
    """Nothing: transformers compares pad_token_id with 0 (a warning below it), so what cannot be compared raises."""
    if value is not None:
        value < 0  # noqa: B015 (the comparison is the check)


def _samples(settings: dict[str, Any]) -> bool:
    """Whether transformers' generate samples with these settings: its decoding loop and its warpers test do_sample
    for its truth (``if do_sample:``), so 1, "yes" or even "false" sample as true does; 0, "" and null decode
    greedily. (Only its choice of beam or contrastive search, which the engine does not run, asks ``is True``.)"""
    return bool(settings.get("do_sample"))


def sampled_sequences(settings: dict[str, Any]) -> int | None:
    """How many sequences transformers' sampling generate draws for one prompt: it repeats the prompt
    ``max(num_beams, num_return_sequences)`` times (its _expand_inputs_for_generation; 1 where unset, so 0, a negative
    count, true or a float up to 1 make one), here where beam search is off (num_beams unset or 1: beam search, which
    the engine does not run, is named in a note). None where it fails: a float above 1, which torch's
    repeat_interleave takes no count of."""
    value, beams = settings.get("num_return_sequences"), settings.get("num_beams")
    if not (beams is None or beams == 1) or not isinstance(value, (int, float)):
        return 1  # (no number: refused as the file is validated, ``GENERATION_CHECKS``)
    count = max(1 if beams is None else beams, value)
    return count if type(count) is int else None if count > 1 else 1


def _return_sequences(settings: dict[str, Any]) -> str | None:
    sequences, beams = settings["num_return_sequences"], settings.get("num_beams")
    if sequences > 1 and (beams is None or beams == 1) and not _samples(settings):
        return "greedy decoding makes one sequence"
    if sequences > 1 and beams is not None and beams != 1 and sequences > beams:
        return f"more than num_beams {beams!r}"
    return None


# transformers' GenerationConfig.validate, run as from_pretrained loads the model: field -> why it refuses the value
# (None: it takes it). A check that cannot be made (text compared with a number...) fails there too.
GENERATION_CHECKS: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "early_stopping": lambda s: (
        None if s["early_stopping"] in (None, True, False, "never") else 'it must be true, false or "never"'
    ),
    "assistant_ensemble_weight": lambda s: (
        None
        if s["assistant_ensemble_weight"] is None or 0.0 < s["assistant_ensemble_weight"] < 1.0
        else "it must be in (0, 1)"
    ),
    "pad_token_id": lambda s: _compared_with_zero(s["pad_token_id"]),
    "cache_implementation": lambda s: (
        None
        if s["cache_implementation"] is None or s["cache_implementation"] in CACHE_IMPLEMENTATIONS
        else f"it must be one of {', '.join(CACHE_IMPLEMENTATIONS)}"
    ),
    # built from a file's object only where it holds a watermark's settings; a CompileConfig never is
    "watermarking_config": lambda s: (
        None if s["watermarking_config"] is None or isinstance(s["watermarking_config"], dict) else "not an object"
    ),
    "compile_config": lambda s: (
        None if s["compile_config"] is None else "it must be a CompileConfig, which no JSON value is read as"
    ),
    "num_return_sequences": lambda s: None if s["num_return_sequences"] is None else _return_sequences(s),
    # generate's beam search, on for any other value than 1, fails without a whole number of beams from 2 on
    "num_beams": lambda s: (
        None
        if s["num_beams"] is None or s["num_beams"] == 1 or (type(s["num_beams"]) is int and s["num_beams"] >= 2)
        else "beam search needs a whole number of beams, 2 or more"
    ),
    "suppress_tokens": lambda s: (
        None
        if s["suppress_tokens"] is None or (forced := _forced_and_suppressed(s)) is None
        else f"it also suppresses every id of {forced} {s[forced]!r}"
    ),
}


def _number(value: Any) -> bool:
    """A JSON number or boolean: what Python compares with an integer (text, a list or an object raise TypeError)."""
    return isinstance(value, (bool, int, float))


def _without_beams(settings: dict[str, Any]) -> bool:
    """Whether transformers' get_generation_mode reaches its greedy-or-sample branch: no constrained beam search
    (constraints and force_words_ids null), num_beams 1 or null."""
    return (
        settings.get("constraints") is None
        and settings.get("force_words_ids") is None
        and settings.get("num_beams") in (None, 1)
    )


def _mode_compares(settings: dict[str, Any]) -> bool:
    """Whether transformers' get_generation_mode compares top_k with 1 (then penalty_alpha with 0) to choose between
    greedy and contrastive search: in its greedy-or-sample branch, where do_sample is not true (``is not True``); a
    sampling generate (do_sample=True: the run's own, ``Tokenizer``'s ``given``; a file's do_sample is not taken
    here) never reads penalty_alpha."""
    return _without_beams(settings) and settings.get("do_sample") is not True


def _contrastive(value: Any, settings: dict[str, Any]) -> bool:
    """Whether transformers' greedy generate decodes by contrastive search: penalty_alpha above 0 and top_k above 1
    (50 where absent), without beams."""
    top_k = settings.get("top_k", DEFAULT_TOP_K)
    return _number(value) and value > 0 and _number(top_k) and top_k > 1 and _without_beams(settings)


def _whole(value: Any, least: int) -> bool:
    """An integer (not a boolean) of at least ``least``."""
    return type(value) is int and value >= least


def _prompt_lookup(settings: dict[str, Any]) -> str | None:
    """Why transformers' PromptLookupCandidateGenerator fails on these settings (it is built where
    prompt_lookup_num_tokens is not null and assistant_early_exit is): prompt_lookup_num_tokens tokens proposed a step
    and n-grams of up to max_matching_ngram_size (2 where 0 or null), each compared with 0 and counted with."""
    tokens, ngram = settings["prompt_lookup_num_tokens"], settings.get("max_matching_ngram_size")
    if tokens is None or settings.get("assistant_early_exit") is not None:
        return None
    if not (isinstance(tokens, int) and tokens >= 1):  # true is 1 there, false 0
        return "transformers' prompt lookup proposes that many tokens a step and fails on it (an integer >= 1)"
    if ngram and not (isinstance(ngram, int) and ngram >= 1):
        return (
            f"with max_matching_ngram_size {ngram!r}, n-grams of which transformers' prompt lookup matches and fails "
            "on (an integer >= 1, or 0 or null for its 2)"
        )
    return None


# what transformers' generate fails on as it decodes (a setting it reads for its mode, or for the code that mode
# runs), in the fields the engine does not otherwise read: field -> why (None: it runs)
GENERATE_CHECKS: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "top_k": lambda s: (
        None
        if s["top_k"] is None or _number(s["top_k"]) or not _mode_compares(s)
        else "transformers' generate compares it with 1 to pick its decoding (a TypeError): it must be a number"
    ),
    "penalty_alpha": lambda s: (
        None
        if s["penalty_alpha"] is None
        or _number(s["penalty_alpha"])
        or not _mode_compares(s)
        or not (_number(top_k := s.get("top_k", DEFAULT_TOP_K)) and top_k > 1)
        else "transformers' generate compares it with 0 to pick contrastive search (a TypeError): it must be a number"
    ),
    "assistant_early_exit": lambda s: (
        None
        if s["assistant_early_exit"] is None or _whole(s["assistant_early_exit"], 0)
        else "transformers' generate drafts with that many of the model's layers (its config's num_hidden_layers) "
        "and fails on it: it must be an integer >= 0"
    ),
    "prompt_lookup_num_tokens": _prompt_lookup,
    # classifier-free guidance, on for any value but null and 1 (the note names it): its processor scales the logits
    "guidance_scale": lambda s: (
        None
        if s["guidance_scale"] is None or _number(s["guidance_scale"])
        else "transformers' generate multiplies the logits by it (a TypeError): it must be a number"
    ),
    "prefill_chunk_size": lambda s: (
        None
        if s["prefill_chunk_size"] is None
        else "transformers' generate splits the prompt into chunks of that many tokens and fails on it: it must be an "
        "integer >= 1"
        if not _whole(s["prefill_chunk_size"], 1)
        else "transformers' generate refuses a chunked prefill without a KV cache (use_cache false)"
        if s.get("use_cache") is False
        else None
    ),
}


def _hidden_states(value: Any) -> str | None:
    """Why transformers' model fails on an ``output_hidden_states`` (typed bool, but read as the index or indices of
    the hidden states to keep: output_capturing's selected_hidden_states and resolve_hidden_states_indices): null, a
    boolean or an integer is taken; anything else is made a list, each item compared with integers."""
    if value is None or isinstance(value, (bool, int)):
        return None
    if not isinstance(value, (str, list, dict)) or not all(_number(i) for i in value):  # 1.5; "x", ["x"], {"x": 1}
        return (
            "transformers' model reads it as the index or indices of the hidden states to keep and fails on it: "
            "write true or false"
        )
    return None


def _read_otherwise(settings: dict[str, Any]) -> str | None:
    """A setting transformers' generate reads two ways, computing other text than the engine's (which decodes as
    either reading would): ``use_cache`` that is neither true nor false nor null but reads as false (0, "", [] or
    {}): generate builds its KV cache (only false turns it off) and runs the model as without one, handing it the
    whole sequence at every step, whose keys the cache then holds twice."""
    value = settings.get("use_cache")
    if value is not None and not isinstance(value, bool) and not value:
        return (
            f"use_cache {value!r} is not true or false: transformers' generate then builds its KV cache (only false "
            "turns it off) yet feeds the model the whole sequence at every step, as without one, and computes other "
            "text than either; write true or false"
        )
    return None


def _unused(name: str, value: Any) -> bool:
    """Whether transformers' generate builds no processor for the setting at this value, so never checks its type:
    the n-gram sizes where not above 0 (0 or below, NaN: generate's test is ``> 0``), encoder_repetition_penalty at
    1. (min_length and min_new_tokens: ``Tokenizer._min_lengths``.)"""
    if name == "encoder_repetition_penalty":
        return value == 1
    number = isinstance(value, (int, float))
    return name in ("no_repeat_ngram_size", "encoder_no_repeat_ngram_size") and number and not value > 0


def _ids_shape(value: Any) -> tuple[int, ...] | None:
    """The shape of the tensor torch.tensor(value, dtype=torch.long) makes of ``value`` (a number, or lists of them
    nested to one depth throughout), None where it makes none."""
    if isinstance(value, (bool, int, float)):
        return ()
    if not isinstance(value, list):
        return None
    inner = {_ids_shape(x) for x in value}
    return None if None in inner or len(inner) > 1 else (len(value), *next(iter(inner), ()))


def _tensor_of_ids(value: Any) -> bool:
    """Whether torch.tensor(value, dtype=torch.long) takes ``value``, as generate makes a tensor of each special-token
    id."""
    return _ids_shape(value) is not None


def _refused_by_generate(file: dict[str, Any], given: dict[str, Any] | None = None) -> str | None:
    """What makes transformers produce no text from these generation settings, said as ``name value: why``: its
    GenerationConfig's validation (``GENERATION_CHECKS``, an argument of generate() among the settings), generate's
    tensors of the special-token ids, the pad id it takes from an empty eos list; None when nothing does. ``given``:
    generate's own arguments, which replace the file's settings (GenerationConfig.update, validated again): the
    file is validated alone as from_pretrained loads it, then with them, as generate reads it."""
    settings = {**file, **(given or {})}
    for name, check in GENERATION_CHECKS.items():
        for seen in (file, settings):
            if name in seen:
                try:
                    why = check(seen)
                except TypeError:
                    why = "transformers' check of it fails"
                if why is not None:
                    return f"{name} {seen[name]!r}: {why}"
    # generate's own checks as it picks its decoding: do_sample is the caller's (a sampled run's true); a file's
    # do_sample alone decides nothing here, as a greedy run is generate(do_sample=False) over it
    decoding = {**settings, "do_sample": (given or {}).get("do_sample")}
    for name, check in GENERATE_CHECKS.items():
        if name in decoding and (why := check(decoding)) is not None:
            return f"{name} {decoding[name]!r}: {why}"
    if not settings.get("_from_model_config"):
        found = [name for name in GENERATE_ARGUMENTS if name in settings]
        if found:
            return f"{found[0]}: an argument of generate() itself, not a generation setting"
    for name in ("bos_token_id", "pad_token_id", "decoder_start_token_id"):
        value = settings.get(name)
        if value is not None and not _tensor_of_ids(value):
            return f"{name} {value!r}: generate makes a tensor of token ids of it"
    eos = settings.get("eos_token_id")
    if eos is not None and _tensor_ids(eos) == [] and settings.get("pad_token_id") is None:  # [], [[]]
        return f"eos_token_id {eos!r}: generate takes the first eos id for the pad_token_id the settings leave out"
    shape = None if eos is None else _ids_shape(eos)
    if shape is not None and len(shape) > 1 and shape[1:] != (1,) and settings.get("pad_token_id") is None:
        # [[1, 2]], [[[7]]]: the first row is the pad id, which generate writes into each new token (a shape mismatch)
        return (
            f"eos_token_id {eos!r}: generate takes its first row for the pad_token_id the settings leave out, and "
            "fails writing that row of ids in place of each new token"
        )
    return None


def _bytes_to_unicode() -> dict[str, int]:
    """GPT-2's byte-level alphabet read back: each of its 256 characters to the byte it stands for (the table
    transformers' StopStringCriteria reads a byte-level token's bytes with)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = list(printable)
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(printable, chars)}


# Rust's u8::from_str_radix in base 16: an optional "+", then hex digits
_RADIX_16 = re.compile(rb"\+?[0-9A-Fa-f]+")


def _fallback_byte(token: str) -> bool:
    """Whether tokenizers' ByteFallback decoder reads ``token`` as one byte (its decode_chain in
    decoders/byte_fallback.rs, which transformers' decode runs): six bytes long, "<0x" and ">" around two that
    ``u8::from_str_radix(_, 16)`` parses, so "<0x0a>" and "<0x+A>" are bytes as well as "<0x0A>"."""
    raw = token.encode("utf-8")
    return len(raw) == 6 and raw.startswith(b"<0x") and raw.endswith(b">") and bool(_RADIX_16.fullmatch(raw[3:5]))


def _has_decoder_type(state: Any, name: str) -> bool:
    if isinstance(state, dict):
        return state.get("type") == name or any(_has_decoder_type(v, name) for v in state.values())
    if isinstance(state, list):
        return any(_has_decoder_type(v, name) for v in state)
    return False


def _strips_ends(state: Any) -> bool:
    """Whether a decoder (tokenizer.json's "decoder") holds a Strip step that cuts characters off a token's end
    ("stop" above 0): tokenizers' Strip (decoders/strip.rs) then panics on a token left empty (the "" a ByteLevel
    step makes of a decode whose tokens were all skipped) or whose start and end cuts cross (" " with "start" 1), so
    a decode fails on some ids and not on others, under transformers' decode as here."""
    if isinstance(state, dict):
        stop = state.get("stop")
        cuts = state.get("type") == "Strip" and isinstance(stop, int) and stop > 0
        return cuts or any(_strips_ends(v) for v in state.values())
    if isinstance(state, list):
        return any(_strips_ends(v) for v in state)
    return False


def _decoder_steps(state: Any) -> list[dict[str, Any]]:
    """A decoder's steps in order (nested sequences flattened)."""
    if isinstance(state, dict) and state.get("type") == "Sequence":
        return [step for inner in state.get("decoders") or [] for step in _decoder_steps(inner)]
    return [state] if isinstance(state, dict) else []


def _rewrites_joined_text(state: Any) -> bool:
    """Whether a decoder rewrites text after a step that joins the tokens into one text (Fuse, ByteLevel) with a step
    whose work can span two tokens: a Replace of a regex or of a string of more than one character, a ByteLevel or
    ByteFallback step (bytes, or a "<0x..>" spelling, across tokens), WordPiece's clean-up, CTC's merging. The text
    of the first tokens alone is then no prefix of their decode with the next ("th" before "the" with "he"
    replaced), so a stream cannot write it before the end."""
    joined = False
    for step in _decoder_steps(state):
        kind, pattern = step.get("type"), step.get("pattern")
        if joined and (
            kind in ("ByteLevel", "ByteFallback", "CTC")
            or (kind == "WordPiece" and step.get("cleanup", True))
            or (kind == "Replace" and not (isinstance(pattern, dict) and len(str(pattern.get("String", ""))) == 1))
        ):
            return True
        joined = joined or kind in ("Fuse", "ByteLevel")
    return False


def _spells_last_apart(state: Any, vocab: Callable[[], Iterable[str]]) -> bool:
    """Whether a decoder spells the last token of a decode apart from the others so that a token's text as the last
    is no prefix of its text followed by more: a BPEDecoder step (decoders/bpe.rs) replaces its suffix by " " in each
    token but the last, where it drops it. That is settled ("ab</w>" gives "ab", then "ab cd") only where the suffix
    stands at a token's end: an empty suffix (which Rust's replace puts around every character), one of more than
    one character after a step joining the tokens (it can span two), or a token of the vocabulary (``vocab``, read
    only then) holding it elsewhere ("▁th" under a suffix "▁"; any token where steps before may rewrite tokens) is
    not."""
    joined, rewritten = False, False
    for step in _decoder_steps(state):
        kind = step.get("type")
        if kind == "BPEDecoder":
            suffix = str(step.get("suffix", "</w>"))
            if not suffix or (joined and len(suffix) > 1) or (not joined and rewritten):
                return True
            if not joined and any(t.find(suffix) not in (-1, len(t) - len(suffix)) for t in vocab()):
                return True
        joined = joined or kind in ("Fuse", "ByteLevel")
        rewritten = True
    return False


def _can_end(token: Any, string: Any) -> bool:
    """Whether a token spelt ``token`` can end ``string`` as StopStringCriteria finds it: the string's end lies in
    the token (the token's start may lie inside the string); the empty string, a token of two units or more."""
    if not string:
        return len(token) > 1
    at = token.find(string[-1:])
    while at >= 0:
        overlap = min(at + 1, len(string))
        if token[at + 1 - overlap : at + 1] == string[-overlap:]:
            return True
        at = token.find(string[-1:], at + 1)
    return False


class StopStrings:
    """generation_config.json's ``stop_strings`` as transformers' generate applies them (StopStringCriteria, built
    from the tokenizer it is handed): generation ends at the first token that completes one of the strings, the
    string kept in the text. A string is completed where it occurs in the text of the sequence's last tokens
    (the prompt's included), as StopStringCriteria spells each token, ending inside the last token: each token's
    string is its decoder's text after a fixed prefix, or its bytes for a byte-level decoder's alphabet and a
    byte-fallback ``<0xNN>`` token (then the strings are matched as UTF-8 bytes); only the last as many tokens as
    the longest string has characters (bytes) are looked at, and an id the tokenizer does not have ends the look
    back, as in transformers' tensors."""

    PREFIX = "abcdef"  # StopStringCriteria's static prefix

    def __init__(self, tok: Any, strings: Sequence[str]) -> None:
        self._tok = tok
        decoder = tok.decoder
        state: Any = None
        if decoder is not None:
            try:
                state = json.loads(decoder.__getstate__())
            except (AttributeError, TypeError, ValueError):
                state = None
        self.mode: str | None = None
        if decoder is not None and type(decoder).__name__ == "ByteLevel":
            self.mode = "byte_level"
        elif _has_decoder_type(state, "ByteFallback"):
            self.mode = "byte_fallback"
        elif _has_decoder_type(state, "ByteLevel"):
            self.mode = "byte_level"
        self._byte_decoder = _bytes_to_unicode() if self.mode == "byte_level" else None
        # the empty string ends the text at its first new token: StopStringCriteria's match length of a sequence is
        # never below 0, the empty string's length
        self.any_token = "" in strings
        self.strings: tuple[Any, ...] = tuple(
            s.encode("utf-8") if self.mode else s for s in dict.fromkeys(strings) if s
        )
        self.window = max((len(s) for s in self.strings), default=0)
        base = tok.encode(self.PREFIX, add_special_tokens=False).ids
        self._base = [tok.id_to_token(i) for i in base]
        self._cache: dict[int, Any] = {}
        # each id spelt from its text in the vocabulary, as the criteria spells it (an added token's ``id_to_token`` is
        # its normalized text: "[inst]" for "[INST]" under a lowercasing normalizer, "▁▁x" for " x" under Llama 2's)
        self._tokens = {i: t for t, i in tok.get_vocab(with_added_tokens=True).items()}
        # StopStringCriteria spells the whole vocabulary as generate builds it (through the tokenizers library, which
        # panics on some decoders: generate then fails too, as ``Tokenizer.stop_strings`` says), and fails (ValueError)
        # where a token's text loses the prefix or where no token can end any of the strings: generate prints no text
        spellings = [self._spelling(i) for i in sorted(self._tokens)]
        wanted = [*self.strings, *([""] if self.any_token else [])]
        if not any(_can_end(t, s) for s in wanted for t in spellings):
            raise TokenizerError(
                f"stop_strings {list(strings)!r}: no token of this tokenizer can end any of them (as transformers' "
                "StopStringCriteria spells tokens), and its generate refuses such strings"
            )

    def _spelling(self, token_id: int) -> Any:
        """The token's string as StopStringCriteria spells it (bytes in a byte mode); None for an id the tokenizer
        does not have."""
        if token_id in self._cache:
            return self._cache[token_id]
        token = self._tokens.get(token_id)
        spelt: Any = None
        if token is not None:
            if self._byte_decoder is not None and all(c in self._byte_decoder for c in token):
                spelt = bytes(self._byte_decoder[c] for c in token)
            elif (
                self.mode == "byte_fallback"
                and len(token) == 6
                and token.startswith("<0x")
                and token.endswith(">")
                and all(c in "0123456789abcdefABCDEF" for c in token[3:5])
            ):
                spelt = bytes([int(token[3:5], 16)])
            else:
                tokens = [*self._base, token]
                with tokenizers_call("the tokenizer cannot spell its vocabulary for stop_strings"):
                    decoder = self._tok.decoder
                    text = decoder.decode(tokens) if decoder is not None else " ".join(tokens)
                at = text.find(self.PREFIX)
                if at < 0:
                    raise TokenizerError(
                        f"stop_strings: the tokenizer decodes {token!r} after {self.PREFIX!r} without that text, on "
                        "which transformers' StopStringCriteria (and so its generate) fails"
                    )
                text = text[at + len(self.PREFIX) :]
                spelt = text.encode("utf-8") if self.mode else text
        self._cache[token_id] = spelt
        return spelt

    def __call__(self, ids: Sequence[int]) -> bool:
        """Whether the sequence ``ids`` (prompt and new tokens) ends by completing a stop string."""
        if self.any_token:
            return True
        if not self.strings:
            return False
        pieces = []
        for token_id in reversed(ids[-self.window :]):
            spelt = self._spelling(token_id)
            if spelt is None:
                break
            pieces.append(spelt)
        if not pieces:
            return False
        last = len(pieces[0])
        text = pieces[0][:0].join(reversed(pieces))
        for s in self.strings:
            # an occurrence ending inside the last token: it starts at or after len - last - len(s) + 1
            start = max(0, len(text) - last - len(s) + 1)
            if text.find(s, start) >= 0:
                return True
        return False


class Tokenizer:
    def __init__(self, folder: Path, given: Mapping[str, Any] | None = None) -> None:
        """``given``: the run's own generate arguments (``SAMPLING_FIELDS``: its --top-k / --top-p; ``do_sample``
        true where it samples), which replace the file's before transformers' generate reads any of them
        (``generate(top_k=..., do_sample=True)``), so the file's value of such a field is not held to generate's checks
        as the files load, nor a field only a greedy generate compares (penalty_alpha) in a sampled run."""
        with tokenizers_call(f"{folder}: the tokenizer cannot be built"):  # the library's calls as the files load
            self._load(folder, dict(given or {}))

    def _load(self, folder: Path, given: dict[str, Any]) -> None:
        from tokenizers import AddedToken, processors

        path = folder / "tokenizer.json"
        if not path.is_file():
            # a file error: a stored model's was there when checked, so it changed since (damage, not exit 2)
            raise TokenizerFileError(f"{folder}: tokenizer.json is missing; NeuroBrix needs a fast tokenizer file")
        config_path = folder / "tokenizer_config.json"
        self.config = _read_json(config_path) if config_path.is_file() else {}
        tokens_map = folder / "special_tokens_map.json"
        if "added_tokens_decoder" not in self.config and tokens_map.is_file():
            self.config = _with_special_tokens_map(self.config, _read_json(tokens_map))
        try:  # the class is checked again below, where a class transformers refuses is refused
            parsed_for = _tokenizer_class(folder, self.config, tokenizer_json=_read_text(path))
        except TokenizerError:
            parsed_for = None
        try:
            self._tok = parse_tokenizer_file(path, parsed_for, name_text(str(path)))  # its library takes UTF-8 text
        except TokenizerError:
            raise
        except Exception as exc:  # the tokenizers library raises a plain Exception on bad files
            newer = newer_than_library(path)
            if newer:
                raise TokenizerFileError(f"{path}: written by a newer tokenizers{newer}: upgrade tokenizers") from exc
            raise TokenizerFileError(f"{path}: not a valid tokenizer.json: {exc}") from exc
        merged = "added_tokens_decoder" not in self.config and tokens_map.is_file()
        _check_token_fields(f"{config_path}{' (with special_tokens_map.json)' if merged else ''}", self.config)
        added_tokens = folder / "added_tokens.json"
        if "added_tokens_decoder" not in self.config:
            added = _read_json(added_tokens) if added_tokens.is_file() else {}
            self.config = _legacy_added_tokens(self.config, added, _file_added_tokens(path))
        gen_path = folder / "generation_config.json"
        self.has_generation_config = gen_path.is_file()
        self.generation: dict[str, Any] = {}
        if self.has_generation_config:
            self.generation = _read_json(gen_path)
        elif (folder / "config.json").is_file():
            # without generation_config.json, transformers' generate takes its settings from config.json
            # (GenerationConfig.from_model_config: every generation field there that is not null)
            gen_path = folder / "config.json"
            model_config = _read_json(gen_path)
            self.generation = {k: v for k, v in model_config.items() if k in GENERATION_FIELDS and v is not None}
        self.generation_path = gen_path
        self.generation_file = gen_path.name  # where the settings a note names come from
        # the settings generate reads: the run's own values in place of the file's
        taken = {k: v for k, v in given.items() if k in SAMPLING_FIELDS or k == "do_sample"}
        refused = _refused_by_generate(self.generation, taken)
        if refused is not None:  # transformers loads no model, or generate fails: no text to match
            raise TokenizerError(
                f"{gen_path}: {refused}; transformers' from_pretrained or generate refuses these settings"
            )
        self._check_max_new_tokens()
        # generate hands its model output_hidden_states where the settings' reads as true; else the model reads
        # config.json's
        hidden_path, hidden = gen_path, self.generation.get("output_hidden_states")
        if not hidden and (folder / "config.json").is_file():
            hidden_path = folder / "config.json"
            hidden = _read_json(hidden_path).get("output_hidden_states")
        if (why := _hidden_states(hidden)) is not None:
            raise TokenizerError(f"{hidden_path}: output_hidden_states {hidden!r}: {why}")
        otherwise = _read_otherwise(self.generation)
        if otherwise is not None:  # transformers computes other text than the setting says
            raise TokenizerError(f"{gen_path}: {otherwise}")
        # transformers >= 5 saves the template as chat_template.jinja and named ones as additional_chat_templates/
        # NAME.jinja ("default.jinja" there wins), which together replace tokenizer_config.json's template; older
        # files keep it in tokenizer_config.json, as text or as a list of named templates
        files = {"default": folder / "chat_template.jinja"} if (folder / "chat_template.jinja").is_file() else {}
        if (folder / "additional_chat_templates").is_dir():
            files |= {p.name.removesuffix(".jinja"): p for p in (folder / "additional_chat_templates").glob("*.jinja")}
        template: Any = {name: _read_text(path) for name, path in files.items()} or self.config.get("chat_template")
        # transformers holds a lone template as text and others as a dict of names (a list's entries, the folder's
        # files beside chat_template.jinja), where apply_chat_template's chat_template argument names one; as text,
        # that argument is always a template of its own
        self.named_templates = set(files) != {"default"} if files else isinstance(template, (list, dict))
        if isinstance(template, list):
            # transformers' tokenizer reads {entry["name"]: entry["template"]} as it loads: anything else fails there
            for entry in template:
                if not (isinstance(entry, dict) and {"name", "template"} <= entry.keys()) or isinstance(
                    entry["name"], (list, dict)
                ):
                    raise TokenizerError(
                        f'{config_path}: chat_template entry {entry!r} is not a {{"name": ..., "template": ...}} '
                        "object, which transformers' tokenizer refuses as it loads"
                    )
            template = {t["name"]: t["template"] for t in template}
        if template is not None and not isinstance(template, dict):
            template = {"default": template}
        template = {k: v for k, v in (template or {}).items() if isinstance(k, str)}
        self.chat_templates: dict[str, str] = {k: v for k, v in template.items() if isinstance(v, str)}
        # a template that is not text (a number, true, null as a named one): transformers loads it, and its
        # apply_chat_template fails on it (Jinja compiles text only)
        self.unusable_templates: dict[str, Any] = {k: v for k, v in template.items() if not isinstance(v, str)}
        rebuilt_by = _tokenizer_class(folder, self.config, _read_text(path))  # read again: a file error if gone
        _check_flag_types(config_path, self.config, rebuilt_by)
        if rebuilt_by is not None:
            self._tok = _rebuilt(self._tok, self.config, rebuilt_by, load_json(_read_text(path))["model"])
            self.config = {**CLASS_TOKENS[rebuilt_by], **self.config}
        elif (dropout := _dropout(self._tok)) is not None:  # (a class rebuilding the model drops it)
            raise TokenizerError(
                f"{path}: the BPE model's dropout {dropout:g} makes the tokenizers library skip merges at random as "
                "it encodes (BPE-dropout, a training aid), so transformers' tokenizer gives a prompt other ids at "
                "each call and its text cannot be matched; set dropout to null"
            )
        self.special_tokens, extra = _add_config_tokens(self._tok, self.config)
        if rebuilt_by == "Qwen2Tokenizer":  # its __init__ ends by adding every special token again, as special
            texts = dict.fromkeys([*self.special_tokens.values(), *extra])
            self._tok.add_tokens([AddedToken(text, special=True) for text in texts])
        # CodeLlamaTokenizer always adds its start token, and encodes a text holding its fill token as an infilling
        # prompt (prefix and suffix around its own tokens), which the engine does not build
        self.fill_token = self.special_tokens.get("fill_token") if rebuilt_by == "CodeLlamaTokenizer" else None
        if rebuilt_by == "CodeLlamaTokenizer" and self.special_tokens.get("bos_token") is not None:
            bos = self.special_tokens["bos_token"]
            single = f"{bos}:0 $A:0"
            self._tok.post_processor = processors.TemplateProcessing(
                single=single, pair=f"{single} {bos}:1 $B:1", special_tokens=[(bos, self._tok.token_to_id(bos))]
            )
        if _fixes_mistral_regex(folder, self.config, self._tok):
            _with_mistral_split(self._tok)
        # transformers encodes a prompt and a chat without the truncation or padding a tokenizer.json may carry
        # (saved after a training run used them), and with split_special_tokens as tokenizer_config.json sets it
        # (true: a special token's text in the input is encoded as ordinary text)
        self._tok.no_truncation()
        self._tok.no_padding()
        self._tok.encode_special_tokens = bool(self.config.get("split_special_tokens", False))
        self.bos_token = self.special_tokens.get("bos_token")
        self.eos_token = self.special_tokens.get("eos_token")
        # transformers applies the clean-up only where tokenizer_config asks, and never to a BPE model
        # unless forced (it strips real spaces before punctuation there)
        self.clean_up = bool(self.config.get("clean_up_tokenization_spaces", False)) and (
            type(self._tok.model).__name__ != "BPE"
            or bool(self.config.get("clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output"))
        )

    @property
    def chat_template(self) -> str | None:
        """The template a plain chat uses (transformers' "default" of named templates). An empty one is a template
        too: transformers applies it (the chat renders as no text, no ids, on which its generate fails)."""
        return self.chat_templates.get("default")

    def eos_ids(self, config_eos: Sequence[int] | int | None = None) -> set[int]:
        """Token ids that end generation, as transformers' ``generate`` picks them: generation_config.json's
        eos_token_id when the model has that file (none there: nothing ends it early), else config.json's
        (``config_eos``). The tokenizer's eos_token is not one of them unless those files name it: a model that
        emits it goes on in transformers, and so here (the token itself, special, is dropped from the text)."""
        if self.has_generation_config:
            # generate makes an int64 tensor of generation_config.json's: 289.0 and 289.5 end the text at 289, true at
            # 1; "2", a ragged list or an object fail there, where ignoring them ran on past every end of text
            value = self.generation.get("eos_token_id")
            ids = [] if value is None else _tensor_ids(value)
            if ids is None:
                raise TokenizerError(
                    f"{self.generation_path}: eos_token_id must be a token id or a list of ids, got {value!r} "
                    "(transformers' generate makes an integer tensor of it and fails)"
                )
            self._check_special_ids()
            return set(ids)
        values = (
            list(config_eos) if isinstance(config_eos, (list, tuple)) else [] if config_eos is None else [config_eos]
        )
        if not all(type(v) is int for v in values):  # config.json's, typed by ModelConfig
            shown = list(config_eos) if isinstance(config_eos, tuple) else config_eos
            raise TokenizerError(
                f"{self.generation_path}: eos_token_id must be a token id or a list of ids, got {shown!r}"
            )
        return set(values)

    def _check_special_ids(self) -> None:
        """generation_config.json's bos_token_id, pad_token_id and decoder_start_token_id, which the engine does not
        use at batch 1, as transformers' generate takes them: it makes an int64 tensor of each (NaN, 1e400 and "1"
        fail there) and compares the pad id with 0 (a list fails there). Refused naming the field where that fails,
        where the engine ran in silence on a file with which transformers generates nothing."""
        import torch

        for name in ("bos_token_id", "pad_token_id", "decoder_start_token_id"):
            value = self.generation.get(name)
            if value is None:
                continue
            try:
                torch.tensor(value, dtype=torch.long)
                if name == "pad_token_id":
                    _ = value < 0  # GenerationConfig.validate
            except (TypeError, ValueError, RuntimeError, OverflowError):
                raise TokenizerError(
                    f"{self.generation_path}: {name} must be a token id, got {value!r} (transformers' generate makes "
                    "an integer tensor of it and fails)"
                ) from None

    @property
    def pad_id(self) -> int | None:
        """generation_config.json's pad_token_id (config.json's without that file) as transformers' generate makes a
        tensor of it (86.0 is 86, true is 1); None where the settings give none."""
        value = self.generation.get("pad_token_id")
        ids = None if value is None else _tensor_ids(value)
        return ids[0] if ids is not None and len(ids) == 1 else None

    @property
    def repetition_penalty(self) -> float | None:
        """generation_config.json's repetition_penalty (config.json's without that file; transformers applies it to
        greedy decoding too), or None."""
        value = self.generation.get("repetition_penalty")
        if value is None:
            return None
        if isinstance(value, (int, float)) and value == 1:  # 1, 1.0 or true: transformers builds no processor
            return 1.0
        # any other value builds RepetitionPenaltyLogitsProcessor, which takes a float > 0 only (2 fails there;
        # infinity is taken: a held token's score is then 0, or -inf where it was below 0)
        if not isinstance(value, float) or not value > 0:
            raise TokenizerError(
                f"{self.generation_path}: repetition_penalty must be a number > 0 written as a float (transformers' "
                f"processor takes no other), got {value!r}"
            )
        return value

    def max_new_tokens(self, prompt_len: int) -> tuple[int, str] | None:
        """The new tokens transformers' generate makes at most when not told (with what says so): generation_config
        .json's max_new_tokens, else its max_length less the prompt (config.json's without that file); None when
        neither is set (transformers' own default of 20 is not taken). generate takes any number there (a float, true):
        it stops once the sequence's length reaches the prompt's plus max_new_tokens, or max_length, so a count that is
        not whole ends at the next whole one (12.5 new tokens: 13); one that never ends (NaN, infinity), or is no
        number, is refused."""
        for name in ("max_new_tokens", "max_length"):
            value = self.generation.get(name)
            if value is None:
                continue
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise TokenizerError(f"{self.generation_path}: {name} must be a finite number, got {value!r}")
            if name == "max_new_tokens":
                if value <= 0:  # GenerationConfig.validate refuses it
                    raise TokenizerError(f"{self.generation_path}: {name} must be above 0, got {value!r}")
                return math.ceil(value), f"{self.generation_file}'s max_new_tokens is {value!r}"
            if value <= prompt_len:  # transformers' generate refuses it too
                tokens = "token" if value == 1 else "tokens"
                raise TokenizerError(
                    f"the {prompt_len}-token prompt leaves no new token within the max_length of {value!r} {tokens} of "
                    f"{self.generation_path}; give --max-tokens"
                )
            return math.ceil(
                value
            ) - prompt_len, f"{self.generation_file}'s max_length is {value!r} tokens, prompt included"
        return None

    def _check_max_new_tokens(self) -> None:
        """max_new_tokens as transformers' GenerationConfig.validate takes it as from_pretrained loads the model,
        whatever a run's --max-tokens (generate's own max_new_tokens) then says: above 0, and a number (NaN passes
        there; a run limited by it is refused in ``max_new_tokens``)."""
        value = self.generation.get("max_new_tokens")
        if value is None:
            return
        try:
            above = not value <= 0
        except TypeError:  # validate's comparison fails
            raise TokenizerError(
                f"{self.generation_path}: max_new_tokens must be a finite number, got {value!r}"
            ) from None
        if not above:
            raise TokenizerError(
                f"{self.generation_path}: max_new_tokens must be above 0, got {value!r} (transformers' from_pretrained "
                "refuses it, even where --max-tokens is given)"
            )

    def whole_max_length(self) -> bool:
        """Whether the sequence length transformers' generate stops at, from these settings, is a whole number: its
        ForcedEOSTokenLogitsProcessor forces the eos ids where the length is that less one, which a max_new_tokens or
        max_length of 12.5 never is (a length written as 12.0, or true, is whole)."""
        value = self.generation.get("max_new_tokens")
        value = value if value is not None else self.generation.get("max_length")
        return not isinstance(value, (int, float)) or not math.isfinite(value) or float(value).is_integer()

    def _suppressed(self, name: str, value: Any, vocab: int) -> tuple[int, ...]:
        """The ids suppress_tokens (or begin_suppress_tokens) suppresses, as transformers' processor finds them: the
        vocabulary's ids ``torch.isin`` finds in ``torch.tensor(list(value))`` (283.0 is 283, 283.5 and ids outside
        the vocabulary none). Refused where that fails (one id not in a list, true, text), as the processor fails."""
        import torch

        try:
            listed = torch.tensor(list(value))
            hit = torch.isin(torch.arange(vocab), listed)
        except (TypeError, ValueError, RuntimeError, OverflowError):
            raise TokenizerError(
                f"{self.generation_path}: {name} {value!r}: transformers' processor makes no list of token ids of it "
                "(torch.tensor(list(value)) and torch.isin fail)"
            ) from None
        return tuple(int(i) for i in torch.nonzero(hit).flatten().tolist())

    def _forced_eos(self, value: Any, vocab: int) -> tuple[tuple[int, ...], str]:
        """The ids forced_eos_token_id forces, as transformers' ForcedEOSTokenLogitsProcessor reads it: the tensor torch
        makes of it (an id alone as a list of one), whose entries index the scores: true beside an id is 1, [[7]] is 7.
        Refused where the processor refuses it as it is built (floats, negative ids, text, ragged lists). Where only its
        indexing of the scores fails (ids past the vocabulary; true or false alone: a boolean mask of another length
        than the vocabulary's), it fails at the one step it forces, the last the length allows, so a run ending
        before prints its text: (no ids, what fails) for ``Constraints.forced_eos_fails``, else (the ids, "")."""
        import torch

        try:
            forced = torch.tensor([value] if isinstance(value, int) else value)
        except (TypeError, ValueError, RuntimeError, OverflowError):
            forced = None
        if forced is None or torch.is_floating_point(forced):
            raise TokenizerError(
                f"{self.generation_path}: forced_eos_token_id must be a token id or a list of ids, got {value!r} "
                "(transformers' processor makes no integer tensor of it and fails)"
            )
        if forced.dtype == torch.bool:  # indexing the scores with it: a mask of another length than the vocabulary
            return (), (
                f"forced_eos_token_id {value!r}: transformers' processor takes true and false alone for a mask over "
                "the vocabulary"
            )
        ids = [int(i) for i in forced.flatten().tolist()]
        if any(i < 0 for i in ids):  # the processor refuses them as it is built
            raise TokenizerError(
                f"{self.generation_path}: forced_eos_token_id {value!r} names ids outside the vocabulary of {vocab}"
            )
        if not all(i < vocab for i in ids):
            return (), f"forced_eos_token_id {value!r} names ids outside the vocabulary of {vocab}"
        return tuple(ids), ""

    def constraints(self, vocab: int, prompt_len: int | None = None) -> dict[str, Any]:
        """The token-masking settings (``CONSTRAINTS``) the model's generation settings turn on, checked as
        transformers' processors check them: counts as ints, token lists as lists of ids (ids outside the vocabulary
        are refused where transformers' processor fails on them, dropped where it ignores them). forced_bos_token_id
        acts only after a one-token prompt: after a longer ``prompt_len`` transformers never reads it, so a value it
        could not force (an id outside the vocabulary, text) is dropped there, not refused."""

        def ids(name: str, value: Any, strict: bool, bools: bool = False) -> tuple[int, ...]:
            """``bools``: true and false are the ids 1 and 0 (the sequence processors' isinstance(id, int))."""
            values = value if isinstance(value, list) else [value]
            if not values or not all(isinstance(v, int) and (bools or not isinstance(v, bool)) for v in values):
                raise TokenizerError(
                    f"{self.generation_path}: {name} must be a token id or a list of ids, got {value!r}"
                )
            if strict and not all(0 <= v < vocab for v in values):
                raise TokenizerError(
                    f"{self.generation_path}: {name} {value!r} names ids outside the vocabulary of {vocab}"
                )
            return tuple(int(v) for v in values if 0 <= v < vocab)

        def sequences(name: str, words: list[list[Any]]) -> tuple[tuple[int, ...], ...]:
            """Token sequences of bad_words_ids or sequence_bias, checked as SequenceBiasLogitsProcessor takes them."""
            found = tuple(ids(name, w, strict=True, bools=True) for w in words)
            if _masks_last_ids(words):
                raise TokenizerError(
                    f"{self.generation_path}: {name} {value!r}: transformers' processor indexes the scores with the "
                    "last ids of its one-token sequences together, and of its longer ones of each length together, "
                    "and fails where those are all true or false (a mask, not ids)"
                )
            return found

        found: dict[str, Any] = self._min_lengths(prompt_len)
        for name in CONSTRAINTS:
            value = self.generation.get(name)
            if value is None or name in ("min_length", "min_new_tokens") or _unused(name, value):
                continue
            if value == [] and name in EMPTY_LIST_FAILS:
                raise TokenizerError(
                    f"{self.generation_path}: {name} []: transformers' generate fails on an empty list there"
                )
            if value == []:  # an empty suppress list (or forced start never reached): nothing to apply
                continue
            if name in ("no_repeat_ngram_size", "encoder_no_repeat_ngram_size"):
                # transformers' processors check isinstance(value, int), which true passes as 1 (the n-gram mask
                # alone then fails, in torch's unfold)
                if (isinstance(value, bool) and name == "no_repeat_ngram_size") or not isinstance(value, int):
                    raise TokenizerError(f"{self.generation_path}: {name} must be an integer, got {value!r}")
                if value > 0:  # transformers' processor is on above 0
                    found[name] = int(value)
            elif name == "bad_words_ids":
                if not isinstance(value, list) or not all(isinstance(w, list) for w in value):
                    raise TokenizerError(
                        f"{self.generation_path}: bad_words_ids must be a list of id lists, got {value!r}"
                    )
                # an empty word biases nothing (transformers' sequence bias passes over it), and a word of one eos id
                # is dropped before its ids are checked against the vocabulary (NoBadWordsLogitsProcessor's order)
                eos = _tensor_ids(self.generation.get("eos_token_id")) or []
                words = [w for w in value if w and not (len(w) == 1 and w[0] in eos)]
                found[name] = sequences(name, words)
            elif name in ("suppress_tokens", "begin_suppress_tokens"):
                found[name] = self._suppressed(name, value, vocab)
            elif name == "encoder_repetition_penalty":  # transformers' processor takes a float > 0 only
                if not isinstance(value, float) or not value > 0:  # infinity too: the prompt's scores 0 or inf
                    raise TokenizerError(
                        f"{self.generation_path}: {name} must be a number > 0 written as a float, got {value!r}"
                    )
                if value != 1:
                    found[name] = value
            elif name == "sequence_bias":  # transformers' list form: [[ids, bias], ...], ids >= 0, a float bias
                pairs = value if isinstance(value, list) else None
                if not pairs or not all(
                    isinstance(pair, list)
                    and len(pair) == 2
                    and isinstance(pair[0], list)
                    and isinstance(pair[1], float)
                    for pair in pairs
                ):
                    raise TokenizerError(
                        f"{self.generation_path}: sequence_bias must be a list of [token ids, bias] pairs (a bias "
                        f"written as a float), got {value!r}"
                    )
                # transformers' scores would hold NaN, where its greedy generate picks the first NaN score's token (or,
                # after renormalize_logits, token 0): refused, as the README says
                if any(math.isnan(pair[1]) for pair in pairs):
                    raise TokenizerError(f"{self.generation_path}: sequence_bias {value!r}: a bias of NaN")
                # an empty sequence biases nothing (transformers' processor passes over it); an infinite bias is taken
                kept = [pair for pair in pairs if pair[0]]
                found[name] = tuple(zip(sequences(name, [p[0] for p in kept]), (float(p[1]) for p in kept)))
            elif name == "exponential_decay_length_penalty":  # [start, factor]
                # transformers adds start to the prompt's length and raises factor to the power of the length past
                # that, in Python and with the numbers as written (2.0 and true as 2 and 1); a power it cannot compute
                # (a fraction of a negative factor is no real number) fails at the first token where it applies, not
                # before: ``generate.decay_scale``
                pair = value if isinstance(value, list) and len(value) == 2 else None
                if pair is None or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in pair):
                    raise TokenizerError(
                        f"{self.generation_path}: exponential_decay_length_penalty must be [start, factor] (two "
                        f"numbers), got {value!r}"
                    )
                start, factor = (int(v) if isinstance(v, bool) else v for v in pair)
                eos = _tensor_ids(self.generation.get("eos_token_id")) or []
                if not eos:  # transformers' processor fails without one
                    raise TokenizerError(
                        f"{self.generation_path}: exponential_decay_length_penalty needs an eos_token_id to raise"
                    )
                if any(e < 0 for e in eos):  # ExponentialDecayLengthPenalty.__init__ refuses them
                    raise TokenizerError(
                        f"{self.generation_path}: exponential_decay_length_penalty raises eos ids outside the "
                        f"vocabulary of {vocab} ({eos!r}), which transformers' processor refuses (ids below 0)"
                    )
                # an id past the vocabulary fails only where the decay applies (its scores indexed with the ids): a
                # run that ends before prints its text (``generate.decay_eos_check``)
                found[name] = (start, factor)
            elif name == "remove_invalid_values":  # on only when exactly true (generate's `is True`)
                if value is True:
                    found[name] = True
            elif name == "forced_bos_token_id":
                if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < vocab:
                    if prompt_len is not None and prompt_len > 1:  # ForcedBOSTokenLogitsProcessor waits for length 1
                        continue
                    raise TokenizerError(f"{self.generation_path}: {name} must be an id in the vocabulary of {vocab}")
                found[name] = value
            else:  # forced_eos_token_id
                forced, fails = self._forced_eos(value, vocab)
                found.update({name: forced, "forced_eos_fails": fails} if fails else {name: forced})
        return found

    def _min_lengths(self, prompt_len: int | None) -> dict[str, int]:
        """min_length and min_new_tokens as transformers' generate takes them. Where min_new_tokens is set, generate
        replaces min_length by it plus the prompt's length (``prompt_len``; 1 where not given), so the settings' own
        min_length is never read, and the eos ids are masked for min_new_tokens new tokens only. Each is added to or
        compared with the maximum length (text, a list or an object fail there: refused), and their processors,
        which take an integer >= 0 only, are built only where the settings have eos ids (``eos_token_id`` not null)
        and the value is above 0: a float, infinity or NaN is refused only there (4.0 without eos ids, or NaN, or
        min_new_tokens -40.0 after a shorter prompt, masks nothing and runs on both sides)."""
        settings, path = self.generation, self.generation_path
        fresh = settings.get("min_new_tokens")
        named = "min_new_tokens" if fresh is not None else "min_length"
        value = settings.get(named)
        if value is None:
            return {}
        if value == []:
            raise TokenizerError(f"{path}: {named} []: transformers' generate fails on an empty list there")
        if not _number(value):
            raise TokenizerError(f"{path}: {named} must be an integer, got {value!r}")
        if settings.get("eos_token_id") is None:  # no eos id to mask: no processor, no check
            return {}
        least = value + (1 if prompt_len is None else prompt_len) if named == "min_new_tokens" else value
        # MinLengthLogitsProcessor (on min_length, or min_new_tokens plus the prompt) and
        # MinNewTokensLengthLogitsProcessor, each built above 0 and refusing anything but an integer there
        if (least > 0 and not isinstance(least, int)) or (value > 0 and not isinstance(value, int)):
            raise TokenizerError(f"{path}: {named} must be an integer, got {value!r}")
        return {named: int(value)} if value > 0 else {}

    def stop_strings(self) -> StopStrings | None:
        """generation_config.json's stop_strings (config.json's without that file; one string or a list of them),
        applied as transformers' generate applies them when handed the tokenizer; None when there are none."""
        value = self.generation.get("stop_strings")
        if value is None:
            return None
        if value == []:  # StopStringCriteria finds no token ending any of no strings, and refuses them
            raise TokenizerError(
                f"{self.generation_path}: stop_strings []: transformers' StopStringCriteria refuses an empty list"
            )
        strings = [value] if isinstance(value, str) else value
        if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
            raise TokenizerError(
                f"{self.generation_path}: stop_strings must be a string or a list of strings, got {value!r}"
            )
        try:
            with tokenizers_call("the tokenizer cannot spell its vocabulary for stop_strings"):
                stops = StopStrings(self._tok, strings)
        except TokenizerError as exc:
            raise TokenizerError(f"{self.generation_path}: {exc}") from None
        return stops if stops.strings or stops.any_token else None

    def unapplied_generation_settings(self) -> list[str]:
        """The model's generation settings that change transformers' greedy text and that NeuroBrix does not apply
        (beam search, and its logits processors other than the repetition penalty), each as ``name=value``."""
        settings = self.generation
        return [f"{k}={settings[k]!r}" for k, on in UNAPPLIED.items() if k in settings and on(settings[k], settings)]

    def assisted(self) -> list[str]:
        """The model's settings that make transformers' generate decode by assisted generation (``ASSISTED``), each as
        ``name=value``."""
        return [f"{k}={self.generation[k]!r}" for k in ASSISTED if self.generation.get(k) is not None]

    def sampling_limits(self, given: Collection[str] = ()) -> dict[str, int | float | bool]:
        """The filters the model's generation settings sample with (``SAMPLING_FIELDS``), where they limit anything,
        as transformers' ``generate`` applies them whenever it samples: top_k >= 1 (50 where the settings have none:
        transformers' default; 0 limits nothing), 0 <= top_p < 1, min_p, typical_p < 1, epsilon_cutoff and
        eta_cutoff above 0, top_h; renormalize_logits when true. A value transformers' warper refuses is refused,
        naming the field. The names in ``given`` (the run's own values) are left out unread, as ``generate(top_k=...)``
        replaces the file's value before any warper reads it. true and false are the numbers 1 and 0 there, as
        transformers' comparisons and its warpers' arithmetic take them (a top_p of true builds no warper, a min_p of
        true keeps the most likely tokens), and a top_k equal to 0 (0.0, false) limits nothing (``top_k != 0``)."""
        settings = self.generation
        limits: dict[str, int | float] = {}

        def number(name: str) -> float | None:
            value = settings.get(name)
            if value is None:
                return None
            if not isinstance(value, (int, float)) or not math.isfinite(value):  # a bool is the int 1 or 0
                raise TokenizerError(f"{self.generation_path}: {name} must be a number, got {value!r}")
            return float(value)

        top_k = settings.get("top_k")
        if "top_k" in given:
            pass
        elif top_k is None:
            limits["top_k"] = DEFAULT_TOP_K
        elif isinstance(top_k, (int, float)) and top_k == 0:  # 0, 0.0 or false: generate builds no top-k warper
            pass
        elif isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:  # TopKLogitsWarper's check (true:
            # its torch.topk fails on a bool)
            raise TokenizerError(f"{self.generation_path}: top_k must be an integer >= 0, got {top_k!r}")
        else:
            limits["top_k"] = top_k
        # each value: taken, None where transformers builds no warper for it, or the range its warper takes (refused)
        ranges: dict[str, Callable[[float], float | str | None]] = {
            "top_p": lambda v: None if v >= 1 else v if v >= 0 else "in [0, 1]",
            "min_p": lambda v: v if 0 <= v <= 1 else "in [0, 1]",
            "typical_p": lambda v: None if v >= 1 else v if v > 0 else "in (0, 1]",
            "epsilon_cutoff": lambda v: v if 0 < v < 1 else None,  # transformers applies it only there
            "eta_cutoff": lambda v: v if 0 < v < 1 else None,
            "top_h": lambda v: v if 0 < v <= 1 else "in (0, 1]",
        }
        for name, rule in ranges.items():
            if name in given:
                continue
            value = number(name)
            if value is None:
                continue
            taken = rule(value)
            if isinstance(taken, str):
                raise TokenizerError(f"{self.generation_path}: {name} must be {taken} to sample with, got {value!r}")
            if taken is not None:
                limits[name] = taken
        # LogitNormalization, after the warpers (only when exactly true)
        if "renormalize_logits" not in given and settings.get("renormalize_logits") is True:
            limits["renormalize_logits"] = True
        return limits

    def sampling_settings(self) -> list[str]:
        """The model's sampling settings (``do_sample`` and the temperature, top-k and top-p it samples with, each as
        ``name=value``) when its generation settings ask transformers' ``generate`` to sample, else none."""
        settings = self.generation
        if not _samples(settings):
            return []
        return [f"{k}={settings[k]!r}" for k in ("do_sample", "temperature", "top_k", "top_p") if k in settings]

    def render_chat(
        self,
        messages: Any,
        tools: Any = None,
        documents: list[dict[str, Any]] | None = None,
        add_generation_prompt: bool | None = None,
        continue_final_message: bool | str = False,
        chat_template: str | None = None,
        **variables: Any,
    ) -> Any:
        """The chat as the model's template renders it, with what transformers' apply_chat_template gives a
        template: the messages, tools (JSON schemas, or functions turned into theirs), documents,
        add_generation_prompt and the named special tokens, each rebuilt as the plain JSON values a template sees
        there. ``add_generation_prompt`` is on unless given or unless the final message is continued;
        ``continue_final_message`` (true, or the name of the field to continue) leaves the last message open, cut
        where transformers cuts it. ``chat_template`` names one of the model's named templates ("default",
        "tool_use", "rag"...), or is a template's text. A batch (a list of conversations) renders as a list."""
        own = sorted(name for name in variables if name in APPLY_ONLY)
        if own:
            raise TokenizerError(
                f"render_chat takes no {own[0]} (an argument of transformers' apply_chat_template that NeuroBrix does "
                "not offer, never a template variable there)"
            )
        source = self._template_source(chat_template, tools)
        if isinstance(messages, (list, tuple)) and not messages:
            raise TokenizerError("a chat needs at least one message (transformers' apply_chat_template refuses none)")
        # transformers' test for a batch: a list whose first item is a list (or an object holding .messages)
        batched = isinstance(messages, (list, tuple)) and (
            isinstance(messages[0], (list, tuple)) or hasattr(messages[0], "messages")
        )
        chats = [_conversation(chat) for chat in (messages if batched else [messages])]
        if add_generation_prompt is None:
            add_generation_prompt = not continue_final_message
        if continue_final_message and add_generation_prompt:
            raise TokenizerError(
                "continue_final_message and add_generation_prompt cannot both be on (transformers' "
                "apply_chat_template refuses them together)"
            )
        if tools is not None:
            tools = tool_schemas(tools)
        if documents is not None and not (
            isinstance(documents, (list, tuple)) and all(isinstance(d, dict) for d in documents)
        ):
            raise TokenizerError(f"documents must be a list of dicts (of 'title' and 'text'), got {documents!r}")
        rendered = [
            self._render(chat, source, tools, documents, add_generation_prompt, continue_final_message, variables)
            for chat in chats
        ]
        return rendered if batched else rendered[0]

    def _template_source(self, chat_template: Any, tools: Any) -> str:
        """The template apply_chat_template applies (transformers' get_chat_template): the named one asked for,
        else the tool_use one where tools are given and the model names one, else the default; a chat_template that
        names none of the model's templates (or any, where the model has one template as text) is a template's
        text itself."""
        if chat_template is not None and not isinstance(chat_template, str):
            raise TokenizerError(f"chat_template must be a template's name or its text, got {chat_template!r}")
        names = {**self.chat_templates, **self.unusable_templates}
        if chat_template is not None and not (self.named_templates and chat_template in names):
            return chat_template
        if chat_template is not None:
            name = chat_template
        else:
            name = "tool_use" if tools is not None and "tool_use" in self.chat_templates else "default"
            if tools is not None and "tool_use" in self.unusable_templates:  # transformers picks it, and fails on it
                name = "tool_use"
        source = self.chat_templates.get(name)
        if name in self.unusable_templates:
            raise TokenizerError(
                f"the model's chat template{'' if name == 'default' else f' {name!r}'} is "
                f"{json.dumps(self.unusable_templates[name])}, not text (transformers' apply_chat_template fails on "
                "it); use --no-chat"
            )
        if source is None and names:
            raise TokenizerError(
                f"the model's chat templates ({', '.join(sorted(names))}) include no default one: name one with "
                "chat_template (transformers' apply_chat_template refuses a chat without)"
            )
        if source is None:
            raise TokenizerError("this model has no chat template; use --no-chat")
        return source

    def _render(
        self,
        chat: list[Any],
        source: str,
        tools: Any,
        documents: Any,
        add_generation_prompt: bool,
        continue_final_message: bool | str,
        variables: dict[str, Any],
    ) -> str:
        """One conversation rendered (and cut where its final message is continued)."""
        if continue_final_message and not chat:
            raise TokenizerError("continue_final_message: the conversation has no message to continue")
        final = self._tag_final_message(chat, source, continue_final_message) if continue_final_message else None
        try:
            rendered: str = compile_template(source).render(
                messages=chat,
                tools=_plain(tools),
                documents=_plain(documents),
                add_generation_prompt=add_generation_prompt,
                **_plain({**self.special_tokens, **variables}),
            )
        except Exception as exc:  # a template can raise anything (TemplateError, a TypeError of its own code...)
            # on one line: a template's raise_exception("...") may say nothing, or say it over several lines
            said = " / ".join(line.strip() for line in str(exc).splitlines() if line.strip())
            said = said or f"{type(exc).__name__} with no message"
            raise ChatTemplateError(said) from exc
        return rendered if final is None else _cut_final_message(rendered, final)

    @staticmethod
    def _tag_final_message(chat: list[Any], source: str, continued: bool | str) -> str:
        """apply_chat_template's continue_final_message: the field to continue (``content`` unless named) of the
        last message, or its last text part, tagged at its end (in ``chat``, a copy); returns its text."""
        field = continued if isinstance(continued, str) else "content"
        final = chat[-1].get(field)
        if final is None:
            raise TokenizerError(f"continue_final_message: the final message has no {field!r} to continue")
        fields = [field]
        if field in REASONING_FIELDS:  # reasoning is given under several names: every copy tagged
            fields = [name for name in REASONING_FIELDS if chat[-1].get(name) == final]
        if not any(name in source for name in fields):
            raise TokenizerError(
                f"continue_final_message: the model's chat template reads no {field!r} (transformers' "
                "apply_chat_template refuses to continue it)"
            )
        try:
            if isinstance(final, (list, tuple)):
                for block in reversed(final):
                    if "text" in block:  # the last part holding text (a part that is text: "text" in it, as there)
                        final = block["text"]
                        block["text"] = block["text"] + CONTINUE_TAG
                        break
                else:
                    raise TokenizerError("continue_final_message: the final message has no text part to continue")
            else:
                for name in fields:
                    chat[-1][name] = chat[-1][name] + CONTINUE_TAG
            final.strip()
        except (TypeError, AttributeError) as exc:  # transformers fails alike (a number, a part that is no dict)
            raise TokenizerError(
                f"continue_final_message: the final message's {field!r} is no text to continue ({exc})"
            ) from None
        return str(final)

    def encode_chat(
        self,
        messages: Any,
        tools: Any = None,
        add_generation_prompt: bool | None = None,
        continue_final_message: bool | str = False,
        documents: list[dict[str, Any]] | None = None,
        chat_template: str | None = None,
        **variables: Any,
    ) -> Any:
        """apply_chat_template(..., tokenize=True): the rendered text encoded without added special tokens
        (the template writes them); a batch of conversations as a list of id lists."""
        rendered = self.render_chat(
            messages,
            tools=tools,
            documents=documents,
            add_generation_prompt=add_generation_prompt,
            continue_final_message=continue_final_message,
            chat_template=chat_template,
            **variables,
        )
        if isinstance(rendered, list):
            return [self._encode_rendered(text) for text in rendered]
        return self._encode_rendered(rendered)

    def _encode_rendered(self, text: str) -> list[int]:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:  # a string literal "\ud800" in the template: transformers' encode fails too
            raise TokenizerError(
                f"the model's chat template rendered text that is not Unicode ({text[exc.start]!r}, a lone surrogate, "
                f"at character {exc.start}), which the tokenizer cannot encode; try --no-chat"
            ) from None
        return self._encode(text, add_special_tokens=False)

    def has_chat_template(self) -> bool:
        """Whether the prompt goes through a chat template (one that may fail: refused as it is applied)."""
        return self.chat_template is not None or "default" in self.unusable_templates

    def encode_prompt(self, prompt: str, chat: bool, system: str | None = None) -> list[int]:
        """Token ids of the prompt: through the chat template when asked and the model has one, after a system
        message ``system`` where given (apply_chat_template on [system, user])."""
        if chat and self.has_chat_template():
            user = {"role": "user", "content": prompt}
            if system is None:
                return self.encode_chat([user])
            try:
                return self.encode_chat([{"role": "system", "content": system}, user])
            except ChatTemplateError as exc:
                try:  # the template fails on the system message alone (Mistral's, Gemma's): say so, not "--no-chat"
                    self.render_chat([user])
                except TokenizerError:
                    raise exc from None
                raise TokenizerError(
                    f"--system: the model's chat template takes no system message (it fails on one: {exc.said}; "
                    "transformers' apply_chat_template fails alike); leave --system out"
                ) from None
        return self._encode(prompt, add_special_tokens=True)

    def encode_text(self, text: str) -> list[int]:
        """The text's own tokens, without the special tokens the tokenizer adds around a sequence."""
        return self._encode(text, add_special_tokens=False)

    def _encode(self, text: str, add_special_tokens: bool) -> list[int]:
        if self.fill_token is not None and self.fill_token in text:
            raise TokenizerError(
                f"the prompt holds {self.fill_token}, which Code Llama's tokenizer turns into an infilling prompt "
                "(the text before and after it around its own tokens); NeuroBrix does not build infilling prompts"
            )
        try:
            with tokenizers_call("the tokenizer cannot encode the prompt"):
                ids: list[int] = self._tok.encode(text, add_special_tokens=add_special_tokens).ids
        except TokenizerError:
            raise
        except Exception as exc:  # the tokenizers library raises a plain Exception (an unk token it lacks...)
            raise TokenizerError(f"the tokenizer cannot encode the prompt: {exc}") from exc
        return ids

    def decode_raw(self, ids: Sequence[int]) -> str:
        """The tokenizer's own decode, special tokens dropped (before transformers' clean-up)."""
        # transformers' decode fails where the library does
        with tokenizers_call("the tokenizer cannot decode the generated tokens"):
            text: str = self._tok.decode(list(ids), skip_special_tokens=True)
        return text

    @functools.cached_property
    def stream_held(self) -> str | None:
        """Why a stream writes nothing until the run ends, or None: the tokenizers library's decode can fail on some
        ids (``_strips_ends``), so that a run whose text transformers cannot decode prints none; or the decoder
        rewrites text across tokens (``_rewrites_joined_text``) or spells the last token apart (``_spells_last_apart``),
        so that no text before the end is settled."""
        with tokenizers_call("the tokenizer cannot be read"):
            decoder = json.loads(self._tok.to_str()).get("decoder")
            if _strips_ends(decoder):
                return (
                    "the tokenizer's decoder strips characters off each token's end, which fails on some tokens (as "
                    "under transformers' decode)"
                )
            if _rewrites_joined_text(decoder):
                return "the tokenizer's decoder rewrites text across tokens once it has joined them"
            if _spells_last_apart(decoder, lambda: self._tok.get_vocab(with_added_tokens=True)):
                return "the tokenizer's decoder spells a decode's last token apart from the others (BPEDecoder)"
        return None

    def drops(self, token_id: int) -> bool:
        """Whether transformers' ``decode(ids, skip_special_tokens=True)`` leaves ``token_id`` out wherever it lies: a
        special added token, or an id the tokenizer does not have."""
        with tokenizers_call("the tokenizer cannot spell the generated tokens"):
            added = self._tok.get_added_tokens_decoder().get(token_id)
            return (added is not None and added.special) or self._tok.id_to_token(token_id) is None

    def first_eos(self, config_eos: Sequence[int] | int | None = None) -> int | None:
        """The first of the eos ids ``eos_ids`` reads, in their file's order: the pad id transformers' generate takes
        where the settings name none (its _prepare_special_tokens)."""
        if self.has_generation_config:
            value = self.generation.get("eos_token_id")
            ids = [] if value is None else _tensor_ids(value) or []
        else:
            ids = (
                list(config_eos)
                if isinstance(config_eos, (list, tuple))
                else []
                if config_eos is None
                else [config_eos]
            )
        return ids[0] if ids else None

    def decode(self, ids: Sequence[int]) -> str:
        """transformers' ``decode(ids, skip_special_tokens=True)`` for this tokenizer."""
        text = self.decode_raw(ids)
        return clean_up_tokenization(text) if self.clean_up else text

    @functools.cached_property
    def waiting_ids(self) -> frozenset[int]:
        """Tokens after which a stream waits for the next: byte-fallback tokens and special tokens, and every added
        token that decoded text drops: the tokenizers library drops a token that was special once, even one whose
        settings tokenizer_config.json then rewrites as not special (a run of byte tokens around it then decodes as
        one run, as it does around a special token)."""
        decode = self._tok.decode
        with tokenizers_call("the tokenizer cannot decode its added tokens"):
            vocab = self._tok.get_vocab(with_added_tokens=True).items()
            found = {i for token, i in vocab if token.startswith("<0x") and _fallback_byte(token)}
            found |= {
                i
                for i, token in self._tok.get_added_tokens_decoder().items()
                if token.special or decode([i], skip_special_tokens=True) == ""
            }
        return frozenset(i for i in found if i is not None)

    def waits(self, token_id: int) -> bool:
        """Whether a stream waits for the next token after ``token_id``: one of ``waiting_ids``, or an id the
        tokenizer does not have (a model's vocabulary padded past the tokenizer's). Such an id decodes to nothing,
        so a byte-fallback run around it is decoded as one run: written at it, a byte that reads as a character
        alone was printed where the whole decode has "\ufffd" (and the stream then ended in an error)."""
        if token_id in self.waiting_ids:
            return True
        with tokenizers_call("the tokenizer cannot spell the generated tokens"):
            return self._tok.id_to_token(token_id) is None

    def stream(self) -> TextStream:
        return TextStream(self)


class TextStream:
    """Text as tokens arrive, equal to the whole decode: write what each ``push`` returns, then what
    ``finish`` returns, and the text written is ``Tokenizer.decode(all ids)``.

    Prefix-offset decoding (as vLLM and TGI do): each new token decodes a short window that starts at
    an earlier settled point, and only the text beyond the window's settled part is written, so a
    decoder that treats the first token of a decode specially (SentencePiece's Strip or Metaspace
    dropping its leading space) treats both decodes alike. Text ending in a partial UTF-8 character
    ("\ufffd") waits for the next token. Byte-fallback tokens (``<0x..>``) and special tokens wait
    too, and so do ids the tokenizer does not have, until an ordinary token closes the run: ByteFallback
    decodes a run of byte tokens (ids it does not have dropped from it) as a
    whole, so a byte that reads as a character alone turns into "\ufffd" when an invalid byte
    follows. (`tokenizers`' DecodeStream writes such a byte at once and so differs from the whole
    decode, or raises, on byte-fallback tokenizers; measured on 3,000 random id sequences, a quarter
    differed.) Where transformers' clean-up applies, its replacements reach up to HOLD characters
    back, so that many characters wait as well. Where the tokenizer's decode can fail on some ids, or its decoder
    rewrites text across the tokens it has joined (``Tokenizer.stream_held``), nothing is written before
    ``finish``: a window can fail where the whole decode does not, a whole decode that fails (as transformers'
    does) leaves no text written, and a replaced text is settled only at the end.
    """

    HOLD = sum(len(old) - 1 for old, _ in CLEANUP)  # each replacement in turn can reach that far back

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tokenizer = tokenizer
        self._ids: list[int] = []
        self._prefix = 0  # the window starts here: settled text kept as context
        self._read = 0  # ids before this are written
        self._raw: list[str] = []  # the decoded text so far, before the clean-up (only with clean-up)
        self._written: list[str] = []  # what push returned so far

    def push(self, token_id: int) -> str:
        """The text that ``token_id`` settles (often "" while a character, a byte run or a clean-up is pending)."""
        self._ids.append(token_id)
        if self._tokenizer.stream_held is not None or self._tokenizer.waits(token_id):
            return ""
        decode = self._tokenizer.decode_raw
        settled = decode(self._ids[self._prefix : self._read])
        text = decode(self._ids[self._prefix :])
        if len(text) <= len(settled) or text.endswith("\ufffd") or not text.startswith(settled):
            return ""  # nothing new yet (the window grows until something is)
        piece = text[len(settled) :]
        self._prefix, self._read = self._read, len(self._ids)
        if self._tokenizer.clean_up:
            self._raw.append(piece)
            cleaned = clean_up_tokenization("".join(self._raw))
            piece = cleaned[: max(0, len(cleaned) - self.HOLD)][sum(map(len, self._written)) :]
        self._written.append(piece)
        return piece

    def finish(self) -> str:
        """The rest of the text: the whole decode after what was already written."""
        final = self._tokenizer.decode(self._ids)
        written = "".join(self._written)
        if not final.startswith(written):  # the stream's rule broken: say so rather than end on wrong text
            raise RuntimeError(f"streamed text ...{written[-40:]!r} is not a prefix of the decoded text")
        return final[len(written) :]
