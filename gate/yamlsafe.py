"""YAML the gate reads from a package or from ``--tracked``: bounded before it is built into objects.

``yaml.safe_load`` is safe from code execution, not from size: an alias bomb (a few hundred bytes of
anchors that refer to each other) expands into billions of nodes, and deep nesting exhausts the
stack. So the text is capped in size, its event stream (``yaml.parse``, which expands nothing) is
walked first, and any anchor or alias, or nesting or node count past a limit, refuses it there; only
then is it loaded. A tracked list never needs anchors.
"""

from __future__ import annotations

from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_DEPTH = 32
MAX_EVENTS = 200_000  # a tracked list has about ten events per table file


class UnsafeYAML(ValueError):
    """YAML the gate refuses to build: ``str()`` says why (and where, when the parser knows)."""


def load(data: bytes, max_bytes: int) -> Any:
    """The YAML document in ``data``, built only after its events were found bounded; raises UnsafeYAML."""
    if len(data) > max_bytes:
        raise UnsafeYAML(f"{len(data)} bytes; the limit is {max_bytes}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnsafeYAML(f"not UTF-8: {exc}") from exc
    depth = 0
    try:
        for count, event in enumerate(yaml.parse(text, Loader=_LOADER)):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise UnsafeYAML(f"{_where(event)}an anchor or alias (&, *): refused before expansion")
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise UnsafeYAML(f"{_where(event)}nested more than {MAX_DEPTH} levels deep")
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
            if count > MAX_EVENTS:
                raise UnsafeYAML(f"more than {MAX_EVENTS} YAML nodes")
        return yaml.load(text, Loader=_LOADER)  # noqa: S506 - the safe loader, on text found bounded above
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f"line {mark.line + 1}: " if mark else ""
        raise UnsafeYAML(f"{line}not valid YAML: {exc.problem or exc}") from exc
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as exc:
        if isinstance(exc, UnsafeYAML):
            raise
        raise UnsafeYAML(f"not valid YAML: {exc}") from exc


def _where(event: Any) -> str:
    mark = getattr(event, "start_mark", None)
    return f"line {mark.line + 1}: " if mark is not None else ""
