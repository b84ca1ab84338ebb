"""Tools given to a chat as Python functions, turned into the JSON schemas a chat template prints, as transformers'
``apply_chat_template`` turns them (its ``get_json_schema``): the function's name, the first part of its Google-style
docstring as the description, each argument's type from its type hints and its description from the docstring's
``Args:`` block (a trailing ``(choices: [...])`` read as an ``enum``), and the ``Returns:`` block beside the return
hint. A tool transformers cannot convert (no docstring, an argument without a hint or a description, a hint of a
custom class...) is refused naming it, where transformers raises.

Written here rather than imported: the engine does not depend on transformers (hundreds of megabytes and torch-version
pins for one function), and the schema must be the one transformers builds, key order included, which no small
library promises; docs/text-rounds.md (round 55) compares the two over 6,000 drawn functions, and
tests/test_text_round55.py on the functions it keeps."""

from __future__ import annotations

import enum
import inspect
import json
import re
import sys
import types
from collections.abc import Callable
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

# the docstring's sections, as transformers' chat_template_utils reads them
_DESCRIPTION = re.compile(r"^(.*?)[\n\s]*(Args:|Returns:|Raises:|\Z)", re.DOTALL)
_ARGS = re.compile(r"\n\s*Args:\n(.*?)[\n\s]*(Returns:|Raises:|\Z)", re.DOTALL)
_ARG = re.compile(
    r"""
(?:^|\n)
([ \t]*)(\w+)(?:[ \t]*\([^()\n]*\))?:\s*
(.*?)\s*
(?=\n(?!\1[ \t])[ \t]*\w+(?:[ \t]*\([^()\n]*\))?:|\Z)
""",
    re.DOTALL | re.VERBOSE,
)
_RETURNS = re.compile(r"\n\s*Returns:\n\s*(.*?)[\n\s]*(Raises:|\Z)", re.DOTALL)
_CHOICES = re.compile(r"\(choices:\s*(.*?)\)\s*$", re.IGNORECASE)
# the Python types a JSON value can be, as a schema's "enum" names them
_SCALARS: dict[Any, str] = {int: "integer", float: "number", str: "string", bool: "boolean", type(None): "null"}


class _Unconvertible(Exception):
    """A tool transformers' get_json_schema raises on."""


def _basic(hint: Any) -> dict[str, Any] | None:
    """A bare type's schema: JSON's own types, a list, tuple or dict, Any; a PIL image as "image" and a torch tensor
    as "audio" (transformers maps those two exact classes)."""
    import torch

    mapping: list[tuple[Any, dict[str, Any]]] = [
        *((kind, {"type": name}) for kind, name in _SCALARS.items()),
        (list, {"type": "array"}),
        (tuple, {"type": "array"}),
        (dict, {"type": "object"}),
        (Any, {}),
        (torch.Tensor, {"type": "audio"}),
    ]
    image = getattr(sys.modules.get("PIL.Image"), "Image", None)
    if image is not None:
        mapping.append((image, {"type": "image"}))
    return next((dict(schema) for kind, schema in mapping if hint == kind), None)


def _enum(values: list[Any]) -> dict[str, Any]:
    names = list(dict.fromkeys(_SCALARS[type(value)] for value in values))
    return {"type": names[0] if len(names) == 1 else names, "enum": values}


def _hint(hint: Any) -> dict[str, Any]:
    """A type hint's JSON schema (transformers' _parse_type_hint)."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is None and isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = [member.value for member in hint]
        if not values or any(type(value) not in _SCALARS for value in values):
            raise _Unconvertible(f"the Enum {hint.__name__} has no members, or members no JSON scalar")
        return _enum(values)
    if origin is None:
        schema = _basic(hint)
        if schema is None:
            raise _Unconvertible(f"its type hint {hint!r} has no JSON schema (a custom class or object)")
        return schema
    if origin is Union or origin is types.UnionType:
        kinds = [_hint(t) for t in args if t is not type(None)]
        if len(kinds) == 1:
            out = kinds[0]
        elif all(kind.keys() == {"type"} and isinstance(kind["type"], str) for kind in kinds):
            names = sorted({kind["type"] for kind in kinds})
            out = {"type": names[0] if len(names) == 1 else names}
        else:
            out = {"anyOf": kinds}
        if type(None) in args:
            out["nullable"] = True
        return out
    if origin is Literal and args:
        if any(type(arg) not in _SCALARS for arg in args):
            raise _Unconvertible(f"its Literal {args!r} holds values no JSON scalar")
        return _enum(list(args))
    if origin is list:
        return {"type": "array", "items": _hint(args[0])} if args else {"type": "array"}
    if origin is tuple:
        if not args:
            return {"type": "array"}
        if len(args) == 1 or ... in args:
            raise _Unconvertible(f"its tuple hint {hint!r} has one element or an ellipsis")
        return {"type": "array", "prefixItems": [_hint(t) for t in args]}
    if origin is dict:
        out = {"type": "object"}
        if len(args) == 2:
            out["additionalProperties"] = _hint(args[1])
        return out
    raise _Unconvertible(f"its type hint {hint!r} has no JSON schema")


def _parameters(func: Callable[..., Any], name: str) -> dict[str, Any]:
    hints = get_type_hints(func)
    signature = inspect.signature(func)
    first = next(iter(signature.parameters), None)
    receiver = (
        first
        if first in {"self", "cls"} and signature.parameters[first].annotation == inspect.Parameter.empty
        else None
    )
    required = []
    for param_name, param in signature.parameters.items():
        if param_name == receiver:
            continue
        if param.annotation == inspect.Parameter.empty:
            raise _Unconvertible(f"argument {param_name} has no type hint")
        if param.default == inspect.Parameter.empty:
            required.append(param_name)
    properties: dict[str, Any] = {}
    for param_name, hint in hints.items():
        if param_name == receiver:
            continue
        if param_name == "return":  # left out where it has no schema (the model never writes it)
            try:
                properties[param_name] = _hint(hint)
            except _Unconvertible:
                pass
        elif param_name in signature.parameters:
            properties[param_name] = _hint(hint)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _docstring(doc: str) -> tuple[str | None, dict[str, str], str | None]:
    described, args, returns = _DESCRIPTION.search(doc), _ARGS.search(doc), _RETURNS.search(doc)
    block = args.group(1) if args else None
    found: dict[str, str] = {}
    if block is not None:
        block = "\n".join(line for line in block.split("\n") if line.strip())
        found = {m[1]: re.sub(r"\s*\n+\s*", " ", m[2].strip()) for m in _ARG.findall(block)}
    return (
        described.group(1).strip() if described else None,
        found,
        returns.group(1).strip() if returns else None,
    )


def _schema(func: Callable[..., Any]) -> dict[str, Any]:
    """transformers' get_json_schema."""
    doc = inspect.getdoc(func)
    name = getattr(func, "__name__", "operation")
    if not doc:
        raise _Unconvertible("it has no docstring")
    description, arguments, returns = _docstring(doc.strip())
    parameters = _parameters(func, name)
    returned = parameters["properties"].pop("return", None)
    if returned is not None and returns is not None:
        returned["description"] = returns
    for arg, schema in parameters["properties"].items():
        if arg not in arguments:
            raise _Unconvertible(f"its docstring describes no argument {arg!r}")
        text = arguments[arg]
        choices = _CHOICES.search(text)
        if choices:
            try:
                listed = json.loads(choices.group(1))
            except ValueError as exc:
                raise _Unconvertible(f"argument {arg!r}'s (choices: ...) is no JSON list ({exc})") from None
            schema["enum"] = [c.strip() if isinstance(c, str) else c for c in listed]
            text = choices.string[: choices.start()].strip()
        schema["description"] = text
    output: dict[str, Any] = {"name": name, "description": description, "parameters": parameters}
    if returned is not None:
        output["return"] = returned
    return {"type": "function", "function": output}


def tool_schemas(tools: Any) -> list[Any]:
    """The tools as a chat template sees them: a dict as it is, a function or method as its JSON schema; anything
    else refused (transformers raises on it)."""
    from neurobrix.tokenizer import TokenizerError

    try:
        given = list(tools)
    except TypeError:
        raise TokenizerError(f"tools must be a list of JSON schemas (dicts) or functions, got {tools!r}") from None
    schemas = []
    for tool in given:
        if isinstance(tool, dict):
            schemas.append(tool)
            continue
        if not (inspect.isfunction(tool) or inspect.ismethod(tool)):
            raise TokenizerError(
                f"tools: {tool!r} is neither a JSON schema (a dict) nor a function (transformers' "
                "apply_chat_template refuses it)"
            )
        name = getattr(tool, "__name__", "operation")
        try:
            schemas.append(_schema(tool))
        # (get_type_hints raises NameError for a hint naming what is not defined, others for malformed ones)
        except (_Unconvertible, NameError, TypeError, AttributeError, SyntaxError, ValueError) as exc:
            said = " / ".join(line.strip() for line in str(exc).splitlines() if line.strip())
            raise TokenizerError(
                f"tools: function {name} has no JSON schema: {said} (transformers' get_json_schema refuses it; "
                "give its schema as a dict)"
            ) from None
    return schemas
