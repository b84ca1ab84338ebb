"""Checking a checkpoint folder: what the engine reads from it, and every reason to refuse it.

A Hugging Face checkpoint folder holds ``config.json`` (checked first: an architecture outside the
family is refused before any weight is looked at), the safetensors weights (``model.safetensors``, else
every shard its index names, where it names it (a sub-folder's included), as transformers picks them, and
nothing else: other *.safetensors files alone are refused, as from_pretrained loads no model from them;
pickle-only folders are refused by name, never unpickled), ``tokenizer.json`` and optionally
``tokenizer_config.json``, ``generation_config.json``,
``chat_template.jinja``, ``special_tokens_map.json`` and ``added_tokens.json`` (older checkpoints' special
and added tokens, which transformers still reads), and the named chat templates
``additional_chat_templates/*.jinja``. Every safetensors header must describe exactly the bytes of its file (a
truncated download is caught here).
"""

from __future__ import annotations

import codecs
import json
import os
import re
import struct
import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from .config import ModelConfig, checkpoint_shapes, initialised
from .errors import UsageError, counted, printable

CONFIG = "config.json"
SINGLE = "model.safetensors"  # what from_pretrained loads first, whatever else the folder holds
INDEX = "model.safetensors.index.json"
TOKENIZER = "tokenizer.json"
OPTIONAL = (
    "tokenizer_config.json",
    "generation_config.json",
    "chat_template.jinja",
    "special_tokens_map.json",
    "added_tokens.json",
)
# the folder whose NAME.jinja files transformers 5 reads as the chat templates of those names ("default" among them
# in place of chat_template.jinja's); where it has any, tokenizer_config.json's chat_template is not read
TEMPLATES = "additional_chat_templates"
# the safetensors dtypes of weights the engine casts to its dtype exactly as transformers does: an integer, boolean or
# float8 tensor cast to float is not what the checkpoint means (quantized values without their scales)
WEIGHT_DTYPES = ("F16", "BF16", "F32", "F64")
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")


class ModelNotFoundError(UsageError):
    """No such model in the store, no such local folder, or no such repository or revision on the hub."""


class CheckpointError(UsageError):
    """The checkpoint lacks a file the engine needs (config.json, tokenizer.json, weights) or one is malformed."""


class MissingShardsError(CheckpointError):
    """The shard index names safetensors files that are not there."""


class PickleWeightsError(CheckpointError):
    """The checkpoint ships only pickle weights; NeuroBrix reads safetensors only."""


# the largest integer a float holds: 309 digits
_FLOAT_MAX = int(sys.float_info.max)


class JSONNumberError(ValueError):
    """A JSON integer beyond every float (RFC 8259 leaves its range to the reader)."""

    def __init__(self, text: str) -> None:
        digits = text.lstrip("-")
        super().__init__(
            f"holds the integer {text[: len(text) - len(digits) + 12]}... ({len(digits)} digits), beyond the range of "
            "a float: no count, id or setting of a checkpoint is one"
        )


def _utf8_names() -> bool:
    return codecs.lookup(sys.getfilesystemencoding()).name == "utf-8"


def name_text(name: str) -> str:
    """A file's name or path as read from the disk, as UTF-8 text: what a model's name is (its manifest's, the hub's,
    what every command prints and compares). Python decodes file names in the locale's encoding: under ``LC_ALL=C`` with
    ``PYTHONUTF8=0`` (or an ISO-8859-1 locale) a model stored as ``tïny`` was read back as ``t\\udcc3\\udcafny``
    (``tÃ¯ny``), not its manifest's name, and every command called it damaged (exit 7, "remove it"). The same as
    ``name`` where file names are UTF-8 (Python's UTF-8 mode, a UTF-8 locale, Windows). Also the path the
    tokenizers library is handed: it takes a path as UTF-8 text (safetensors takes Python's own path), and one
    holding a name's undecoded bytes failed ("not a valid tokenizer.json"), one decoded as ISO-8859-1 (``tÃ¯ny``)
    named another file ("No such file or directory")."""
    return name if _utf8_names() else os.fsencode(name).decode("utf-8", "surrogateescape")


def disk_name(text: str) -> str:
    """The file name holding a model name's UTF-8 text in this process's encoding of names (:func:`name_text`'s
    inverse): a name is the same bytes on the disk in every locale."""
    return text if _utf8_names() else os.fsdecode(text.encode("utf-8", "surrogateescape"))


def _json_int(text: str) -> int:
    """A JSON integer, refused beyond the range of a float: Python reads an integer of any length, but one of more
    than 4,300 digits not at all (a ValueError, as transformers' reader fails on it), and one beyond a float's range
    fails every comparison with a float, every conversion to one and every tensor made of it (an OverflowError)."""
    if len(text) <= 310:  # int() of a longer text is refused or slow, and is no float anyway
        value = int(text)
        if abs(value) <= _FLOAT_MAX:
            return value
    raise JSONNumberError(text)


def load_json(text: str) -> Any:
    """``json.loads`` of a checkpoint's JSON file, an integer beyond the range of a float refused (JSONNumberError)."""
    return json.loads(text, parse_int=_json_int)


# a \u escape of a UTF-16 surrogate in a JSON text (a pair, an emoji say, or one alone): only a text holding one can
# parse to a string holding a lone surrogate, so the walk below runs only there
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str, data: Any) -> str | None:
    """Where ``data``, the JSON ``text`` parsed, holds a lone surrogate (``"\\ud800"``: half of a UTF-16 pair, an escape
    RFC 8259 lets a JSON text write and no Unicode text holds), as a field path (``eos_token``,
    ``added_tokens_decoder.10.content``, ``extra_special_tokens[0]``, or ``the key ...``), escaped; None where it holds
    none. Python's reader returns such a string; the tokenizers library, handed it as a token, failed with a traceback
    (UnicodeEncodeError, "surrogates not allowed"), as transformers' tokenizer fails (strict round 63)."""
    if _SURROGATE_ESCAPE.search(text) is None:
        return None
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return where or "the file's value"
        elif isinstance(value, dict):
            places = [(item, f"{where}.{printable(key)}" if where else printable(key)) for key, item in value.items()]
            named = [at for key, (_, at) in zip(value, places) if _SURROGATE.search(key)]
            if named:
                return f"the key {named[0]}"
            stack.extend(reversed(places))  # (popped in the file's order)
        elif isinstance(value, list):
            stack.extend((item, f"{where}[{i}]") for i, item in reversed(list(enumerate(value))))
    return None


def surrogate_problem(path: Path, text: str, data: Any) -> str | None:
    """The refusal of a checkpoint's JSON file holding a lone surrogate (:func:`lone_surrogate`), naming the file and
    the field; None where it holds none."""
    where = lone_surrogate(text, data)
    if where is None:
        return None
    return (
        f"{path}: {where} holds a lone surrogate (a \\u escape of half a UTF-16 pair, which no Unicode text holds): "
        "the tokenizers library fails on such text, as transformers' tokenizer does where it is a token; fix the file"
    )


def read_json(path: Path, what: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
        data = load_json(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: cannot read {what}: {exc}") from exc
    except JSONNumberError as exc:
        raise CheckpointError(f"{path}: {what} {exc}; fix the file or fetch the checkpoint again") from exc
    except json.JSONDecodeError as exc:
        raise CheckpointError(
            f"{path}: {what} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "fix the file or fetch the checkpoint again"
        ) from exc
    except RecursionError as exc:  # valid JSON nested deeper than Python's parser goes (transformers' fails too)
        raise CheckpointError(
            f"{path}: {what} nests arrays or objects too deep to be read; fix the file or fetch the checkpoint again"
        ) from exc
    problem = surrogate_problem(path, text, data)
    if problem is not None:
        raise CheckpointError(problem)
    return data


def read_config(folder: Path) -> ModelConfig:
    """config.json of a checkpoint folder, checked against the family the engine runs."""
    path = folder / CONFIG
    if not path.is_file():
        raise CheckpointError(
            f"{folder} has no {CONFIG}; a Hugging Face checkpoint folder holds config.json, tokenizer.json "
            "and *.safetensors"
        )
    data = read_json(path, CONFIG)
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: expected a JSON object, found {type(data).__name__}")
    if data.get("model_type", "") == "":
        # transformers' AutoConfig picks the model by model_type alone and builds none without it ("Unrecognized
        # model") or with an empty one (no such type), whatever architectures names
        said = "an empty 'model_type'" if "model_type" in data else "no 'model_type' field"
        raise CheckpointError(
            f"{path}: {said}, with which transformers builds no model (its AutoConfig picks the class by "
            'model_type alone); write "model_type": "llama", "mistral" or "qwen2"'
        )
    return ModelConfig.from_hf(data, source=str(path))


def _check_tokenizer(folder: Path) -> None:
    path = folder / TOKENIZER
    if not path.is_file():
        found = [n for n in ("tokenizer.model", "vocab.json", "spiece.model") if (folder / n).is_file()]
        extra = f" (it has only {', '.join(found)}: a slow tokenizer)" if found else ""
        raise CheckpointError(
            f"{folder} has no {TOKENIZER}{extra}; NeuroBrix needs the fast tokenizer file tokenizer.json. "
            "Save one with transformers (`AutoTokenizer.from_pretrained(...).save_pretrained(dir)`) or use a "
            "checkpoint that ships it"
        )
    from .tokenizer import (
        TokenizerError,
        TokenizerFileError,
        newer_than_library,
        parse_tokenizer_file,
        rebuilding_class,
        tokenizers_call,
    )

    try:
        with tokenizers_call(f"{path}: not a valid tokenizer.json", CheckpointError):
            # as transformers parses it: a class that rebuilds the tokenizer never builds the file's own model
            parse_tokenizer_file(path, rebuilding_class(folder), name_text(str(path)))
    except CheckpointError:
        raise
    except TokenizerError as exc:
        if isinstance(exc, TokenizerFileError):  # unreadable: as any file the library cannot read
            raise CheckpointError(f"{path}: not a valid tokenizer.json ({exc}); fetch the checkpoint again") from exc
        raise CheckpointError(str(exc)) from None  # a file transformers' tokenizer fails on too, said so
    except Exception as exc:  # the tokenizers library raises a bare Exception on malformed files
        newer = newer_than_library(path)
        if newer:  # not damage: fetching the file again gives the same file
            raise CheckpointError(
                f"{path}: written by a newer tokenizers{newer} (its error: {exc}); upgrade tokenizers "
                "(pip install -U tokenizers) and import it again"
            ) from exc
        raise CheckpointError(f"{path}: not a valid tokenizer.json ({exc}); fetch the checkpoint again") from exc


def _check_optional(folder: Path) -> list[str]:
    present = [name for name in OPTIONAL if (folder / name).is_file()]
    for name in present:
        if name.endswith(".json") and not isinstance(read_json(folder / name, name), dict):
            raise CheckpointError(f"{folder / name}: expected a JSON object")
    return present


def is_template_file(name: str) -> bool:
    """Whether a path in a checkpoint names one of its named chat templates (``additional_chat_templates/NAME.jinja``,
    directly in that folder, as transformers looks for them)."""
    folder, _, file = name.partition("/")
    return folder == TEMPLATES and file.endswith(".jinja") and "/" not in file and "\\" not in file and file != ".."


def template_files(folder: Path) -> list[str]:
    """The named chat templates of a checkpoint folder, as paths in it: every ``*.jinja`` of its
    ``additional_chat_templates`` folder, which transformers reads (one that is no file is refused: transformers fails
    on it)."""
    where = folder / TEMPLATES
    if not where.is_dir():
        return []
    found = sorted(where.glob("*.jinja"))
    for path in found:
        if not path.is_file():
            raise CheckpointError(
                f"{path}: not a file; transformers reads every {TEMPLATES}/*.jinja as a chat template and fails on it"
            )
    return [f"{TEMPLATES}/{path.name}" for path in found]


def pickles(names: Sequence[str]) -> list[str]:
    return sorted(n for n in names if n.lower().endswith(PICKLE_SUFFIXES))


def pickle_only(where: str, found: Sequence[str]) -> PickleWeightsError:
    return PickleWeightsError(
        f"{where} ships only pickle weights ({', '.join(found)}); NeuroBrix loads safetensors only and never "
        "unpickles files. Use a repository or revision that has *.safetensors, or convert the weights yourself "
        "(e.g. save_pretrained(..., safe_serialization=True)) from a source you trust"
    )


def shard_name(name: str) -> str:
    """The file an index's shard ``name`` names, as transformers' from_pretrained reads it: relative to the folder
    (``sub/x.safetensors`` in its sub-folder, ``./x.safetensors`` and ``sub//x.safetensors`` the same file as
    ``x.safetensors`` and ``sub/x.safetensors``, written so), or the reason it names no file of the folder
    (ValueError). transformers refuses an absolute name and one with a ".." part
    (``_check_shard_filenames_stay_in_model_dir``: a name that leaves the folder); a backslash is a separator to it
    on Windows and a character of the name elsewhere, so the name is not one file: refused too (NUL names none)."""
    if "\\" in name or "\0" in name:
        raise ValueError("a backslash or NUL in it (a separator on Windows, a character elsewhere: not one file)")
    path = PurePosixPath(name)
    if path.anchor or ".." in path.parts:  # what transformers refuses, in its words
        raise ValueError("it points outside the model's folder (transformers' from_pretrained refuses it too)")
    if not path.parts or not name.endswith(".safetensors"):
        raise ValueError("not a *.safetensors file")
    return path.as_posix()


def shards_named(index_path: Path) -> list[str]:
    """The shards the index names, each as the file of the folder it names (:func:`shard_name`), once."""
    data = read_json(index_path, INDEX)
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise CheckpointError(f"{index_path}: has no 'weight_map' (tensor name -> shard file); fetch it again")
    shards = set()
    for written in sorted({str(f) for f in weight_map.values()}):
        try:
            shards.add(shard_name(written))
        except ValueError as why:
            raise CheckpointError(
                f"{index_path}: names the shard {printable(json.dumps(written, ensure_ascii=False))}, which is no "
                f"*.safetensors file of the model's folder: {why}"
            ) from None
    # a name no file system keeps (past 255 bytes) ended the import in "File name too long" (an OSError, exit 1,
    # the machine blamed) when the shard was looked for: it names no file that can be there
    long = [part for f in sorted(shards) for part in f.split("/") if len(part.encode("utf-8", "surrogatepass")) > 255]
    if long:
        raise CheckpointError(
            f"{index_path}: names a shard whose file name is longer than 255 bytes, which no file can have: "
            f"{printable(long[0][:40])}... ({len(long[0].encode('utf-8', 'surrogatepass'))} bytes); fetch it again"
        )
    if not isinstance(data.get("metadata"), dict):  # transformers' from_pretrained adds its keys to it
        raise CheckpointError(
            f"{index_path}: its 'metadata' is {'missing' if 'metadata' not in data else json.dumps(data['metadata'])}, "
            'not an object (save_pretrained writes {"total_size": ...}), and transformers\' from_pretrained loads no '
            "model from such an index (a KeyError or TypeError); fetch it again"
        )
    return sorted(shards)


def not_transformers_weights(where: str, found: Sequence[str]) -> CheckpointError:
    """A folder (or repository) whose safetensors files are neither model.safetensors nor shards an index names:
    transformers' from_pretrained loads no model from it ("Error no file named model.safetensors ... found")."""
    return CheckpointError(
        f"{where}: its weights ({', '.join(found[:3])}{f' and {len(found) - 3} more' if len(found) > 3 else ''}) "
        f"are neither {SINGLE} nor shards named by {INDEX}, the files transformers' from_pretrained loads (it "
        f"loads no model from this folder); name a single file {SINGLE}, or give the shards their index"
    )


def weight_files(folder: Path) -> list[Path]:
    """The safetensors files of a checkpoint, in transformers' from_pretrained order: model.safetensors when there is
    one (a shard index beside it is not read), else the shards its index names (each must be present). Other
    *.safetensors files alone (weights.safetensors, shards without their index), pickle-only and weightless folders
    are refused: transformers loads no model from them."""
    single = folder / SINGLE
    if single.is_file():
        return [single]
    index = folder / INDEX
    if index.is_file():
        shards = shards_named(index)
        missing = [s for s in shards if not (folder / s).is_file()]
        if missing:
            raise MissingShardsError(
                f"{folder}: {len(missing)} of the {counted(len(shards), 'shard')} named in {INDEX} "
                f"{'is' if len(missing) == 1 else 'are'} missing: "
                f"{', '.join(missing)}; copy or download every shard, then import again"
            )
        # a shard in a sub-folder is read where the index names it, as transformers reads it (by name, not resolved: a
        # hub snapshot's files are links into its blobs), but never through a folder that is a link leading out of
        # the checkpoint's
        root = os.path.realpath(folder)
        outside = [s for s in shards if "/" in s and not _inside(os.path.realpath(folder / s.rpartition("/")[0]), root)]
        if outside:
            raise CheckpointError(
                f"{folder}: {INDEX} names the shard {printable(outside[0])}, whose folder is a link leading out of the "
                "model's folder; NeuroBrix reads no weights from outside it: copy the shard into the folder"
            )
        return [folder / s for s in shards]
    found = sorted(p.name for p in folder.glob("*.safetensors") if p.is_file())
    if found:
        raise not_transformers_weights(str(folder), found)
    found_pickles = pickles([p.name for p in folder.iterdir() if p.is_file()]) if folder.is_dir() else []
    if found_pickles:
        raise pickle_only(str(folder), found_pickles)
    gguf = sorted(p.name for p in folder.glob("*.gguf")) if folder.is_dir() else []
    raise CheckpointError(f"{folder} has no weights: no *.safetensors file and no {INDEX}{gguf_note(gguf)}")


def gguf_note(found: Sequence[str]) -> str:
    """Why GGUF files are not the weights: from_pretrained reads one only where it is named (``gguf_file=``), and
    then dequantizes it; alone in a folder it loads no model from it."""
    if not found:
        return ""
    return (
        f" ({printable(', '.join(found[:3]))} {'is a GGUF file' if len(found) == 1 else 'are GGUF files'}, which "
        "transformers' from_pretrained loads only when named with gguf_file=, dequantized; NeuroBrix reads safetensors"
        " only)"
    )


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _unknown_dtype(header: dict[str, Any], error: str) -> str:
    """What to do about a header safetensors refused: a tensor's dtype that safetensors says is none of its names
    ("unknown variant", a later safetensors' dtype say) is named with the installed version, where "fetch it again"
    gives the same file."""
    import safetensors

    unknown = re.search(r"unknown variant `([^`]*)`", error)
    for name, tensor in header.items():
        dtype = tensor.get("dtype") if name != "__metadata__" and isinstance(tensor, dict) else None
        if unknown is not None and dtype == unknown[1]:
            return (
                f"; tensor {name}'s dtype {dtype!r} is none that the installed safetensors {safetensors.__version__} "
                "reads: a newer safetensors' dtype (upgrade safetensors), or a damaged header (fetch it again)"
            )
    return "; fetch it again"


def _check_safetensors(path: Path) -> dict[str, tuple[int, ...]]:
    """The header parses and the data it describes fills the file exactly (catches truncated downloads), and
    safetensors itself reads it as ``run`` will (tensors whose bytes overlap, leave gaps or do not match their shape
    and dtype, metadata that is not text: a stored model that no run could load). The file's tensors' shapes, by
    name, as its header gives them."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        length = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
        header = f.read(length) if 0 < length <= min(size - 8, 100 << 20) else b""
    try:
        meta = json.loads(header, parse_int=_json_int) if header else None  # (a long number: strict round 60)
    except (UnicodeDecodeError, ValueError, RecursionError):  # nested too deep, or a number of over 4,300 digits
        meta = None
    if not isinstance(meta, dict):
        raise CheckpointError(f"{path}: not a safetensors file (unreadable header); fetch it again")
    ends = []
    for k, t in meta.items():
        offsets = t.get("data_offsets") if k != "__metadata__" and isinstance(t, dict) else None
        if not isinstance(offsets, list) or len(offsets) != 2:
            continue  # safetensors refuses it below, naming what is wrong
        if not all(type(v) is int and v >= 0 for v in offsets):  # "12", null, 1.5, true: no byte offset to add up
            raise CheckpointError(
                f"{path}: the safetensors header gives tensor {k} the data offsets {json.dumps(offsets)}, not two "
                "byte offsets (integers >= 0); fetch it again"
            )
        ends.append(offsets[1])
    expected = 8 + length + max(ends, default=0)
    if expected != size:
        raise CheckpointError(
            f"{path}: the safetensors header describes {expected} bytes but the file has {size} "
            "(truncated or altered); fetch it again"
        )
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as f:  # the header only: no tensor is read
            shapes = {name: tuple(f.get_slice(name).get_shape()) for name in f.keys()}
    except (SafetensorError, OSError) as exc:
        raise CheckpointError(f"{path}: safetensors cannot read it ({exc}){_unknown_dtype(meta, str(exc))}") from exc
    # a dtype safetensors reads (a name it does not know, "f32" or "float32", is its own refusal above: no dtype of a
    # weight at all, which was named here as a quantized or integer one)
    other = sorted(
        f"{k} ({t.get('dtype')})"
        for k, t in meta.items()
        if k != "__metadata__" and isinstance(t, dict) and t.get("dtype") not in WEIGHT_DTYPES
    )
    if other:
        raise CheckpointError(
            f"{path}: tensors that are not floating-point weights ({', '.join(other[:5])}"
            f"{f' and {len(other) - 5} more' if len(other) > 5 else ''}): NeuroBrix runs weights stored as "
            f"{', '.join(WEIGHT_DTYPES)} only (a quantized or integer checkpoint would be cast, not dequantized)"
        )
    return shapes


def model_names(cfg: ModelConfig) -> set[str]:
    """The tensor names transformers' model of ``cfg`` has (its state dict's: the head's among them, tied or not)."""
    return {*checkpoint_shapes(cfg), "lm_head.weight"}


def hf_name(key: str, names: set[str] | frozenset[str]) -> str:
    """The model tensor a checkpoint's ``key`` loads into, as transformers 5's from_pretrained renames each key
    (``rename_source_key``): one that starts with "model" and names one of the model's ``names`` with "model" and
    the character after it left out (``model.lm_head.weight``, ``model.model.norm.weight``) loses them, and one that
    names a model tensor with "model." put before it (``layers.0.mlp.up_proj.weight``: a base model's checkpoint, as
    LlamaModel saves it) gains it; any other key is its own name."""
    stripped = re.sub(r"^model.", "", key, count=1)
    if key.startswith("model") and stripped in names:
        return stripped
    if f"model.{key}" in names:
        return f"model.{key}"
    return key


def tensor_problems(
    cfg: ModelConfig,
    found: dict[str, tuple[int, ...]],
    where: dict[str, tuple[str, str]] | None = None,
    read: str = "",
    mapped: dict[str, str] | None = None,
) -> list[str]:
    """What keeps these tensors (name -> shape, from the headers) from being the weights of ``cfg``, by the rules
    ``neurobrix.model.fuse_weights`` loads them by: every tensor the config implies, at its shape (the head of tied
    embeddings at the embedding's, standing in for a missing embedding; a missing bias or norm weight filled as
    transformers fills it, ``initialised``), and no other (a rotary table aside). Each
    names the tensor, printable on one line, and its file: ``where`` gives each found tensor's file and the key it is
    stored under, ``read`` the files a missing one was looked for in, ``mapped`` the shard an index names for it."""
    expected = checkpoint_shapes(cfg)
    where = where or {}
    embed, head = "model.embed_tokens.weight", "lm_head.weight"
    if cfg.tie_word_embeddings and head in found:
        expected[head] = expected[embed]
        if embed not in found:
            del expected[embed]  # the head is the embedding too
    mapped = mapped or {}

    def missing(name: str) -> str:
        if name in mapped:  # the index names its shard, which lacks it
            return f" ({INDEX} maps it to {printable(mapped[name])}, which does not hold it)"
        return f" in {read}" if read else ""

    problems = [
        f"checkpoint has no tensor '{printable(name)}'{missing(name)}"
        for name in expected
        if name not in found and initialised(name) is None  # (a bias or norm weight: filled as transformers fills it)
    ]
    problems += [
        f"tensor '{printable(name)}' has shape {list(found[name])}, config.json implies {list(shape)}"
        + _stored(where, name)
        for name, shape in expected.items()
        if name in found and tuple(found[name]) != shape
    ]
    unused = sorted(n for n in found if n not in expected and not n.endswith("rotary_emb.inv_freq"))
    for file in dict.fromkeys(where[n][0] if n in where else "" for n in unused):  # one problem for each file
        held = [n for n in unused if (where[n][0] if n in where else "") == file]
        shown = ", ".join(
            printable(n) + (f" as {printable(where[n][1])}" if where.get(n, (0, n))[1] != n else "") for n in held[:5]
        )
        shown += f" and {len(held) - 5} more" if len(held) > 5 else ""
        problems.append(
            f"checkpoint has tensors this engine would ignore ({shown}){f' in {printable(file)}' if file else ''}"
        )
    return problems


def _stored(where: dict[str, tuple[str, str]], name: str) -> str:
    """The words " (in FILE)" for a found tensor, with the key it is stored under where that is not its name."""
    if name not in where:
        return ""
    file, key = where[name]
    return f" (in {printable(file)}{f' as {printable(key)}' if key != name else ''})"


def checkpoint_files(folder: Path) -> list[str]:
    """Check a checkpoint folder and return the file names to store (a shard in a sub-folder by its path there):
    config.json (checked first, so an architecture outside the family is refused before weights are looked at), the
    weights (pickle-only and missing shards refused), tokenizer.json, the optional files; then every safetensors
    header, and the tensors they hold against those config.json implies (names and shapes: what every run would
    refuse)."""
    if not folder.is_dir():
        raise ModelNotFoundError(f"{folder} is not a directory")
    cfg = read_config(folder)
    weights = weight_files(folder)
    _check_tokenizer(folder)
    optional = [*_check_optional(folder), *template_files(folder)]
    held: dict[str, tuple[str, str]] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    names = model_names(cfg)
    stored = [path.relative_to(folder).as_posix() for path in weights]
    for path, file in zip(weights, stored):
        for key, shape in _check_safetensors(path).items():
            name = hf_name(key, names)  # a base model's key, or one prefixed once too often, as transformers reads it
            if name in held:  # the engine would take one of the two, transformers maybe the other
                first, first_key = held[name]
                raise CheckpointError(
                    f"{folder}: tensor {printable(name)} is stored twice, in {printable(first)}"
                    f"{f' as {printable(first_key)}' if first_key != name else ''} and in {printable(file)}"
                    f"{f' as {printable(key)}' if key != name else ''}; a checkpoint holds each tensor once"
                )
            held[name], shapes[name] = (file, key), shape
    read = (
        printable(stored[0])
        if len(stored) == 1
        else f"any of its {len(stored)} shards ({printable(', '.join(stored))})"
    )
    mapped = {}
    if len(stored) > 1 or stored[0] != SINGLE:  # the index's shards: where it says each tensor lies
        weight_map = read_json(folder / INDEX, INDEX)["weight_map"]
        for key, written in weight_map.items():
            try:
                mapped.setdefault(hf_name(str(key), names), shard_name(str(written)))
            except ValueError:  # (read as shards_named read it: refused there)
                pass
    problems = tensor_problems(cfg, shapes, held, read, mapped)
    if problems:  # every run would refuse it, loading the weights
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise CheckpointError(f"{folder}: the weights do not match its {CONFIG}: {shown}")
    index = [INDEX] if (folder / INDEX).is_file() and not (folder / SINGLE).is_file() else []
    return [CONFIG, TOKENIZER, *optional, *index, *stored]
