"""The certified-table file formats, written down once as JSON Schemas, and the objects they parse into.

A tables folder holds (see README, "Table format"):

``TRACKED.yaml``                every file the tables need, with sha256, size and its path in the wheel
``<class>/class.yaml``          a GPU class's identity: the device facts it matches
``<class>/<kernel>.json``       the settings index ``run`` loads: the compiler stack, the distinct configs,
                                and per entry one row: dtypes, an inclusive range per key dimension, and
                                the position of its config
``<class>/<kernel>.proofs.yaml`` the audit record: provenance, and per entry the same domain and config
                                with its proof (examples, worst error / bound, timings, every rejected
                                candidate). Tracked, hashed and shipped like the index; never parsed by ``run``.

Shapes are checked by ``fastjsonschema`` (a JSON Schema compiled to Python: pure Python, no
dependencies, a few milliseconds for the largest table); what a schema cannot say (names agreeing with
folders and files, domains disjoint, the proofs matching their index) is checked here by hand. Every
complaint is a :class:`~neurobrix.errors.TablesError` naming the file and the field. No torch, no GPU.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import hashlib
import importlib
import itertools
import json
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import fastjsonschema

from .buckets import bucket_of, valid_rule
from .dtypes import NAMES as DTYPES
from .errors import TablesError, counted

TRACKED_FORMAT = 1  # the tracked-file list
CLASS_FORMAT = 1  # class.yaml
# format 2 was one YAML file per kernel holding settings and proofs; format 3 split them, its index one
# JSON object per entry; format 4 (the index only) writes each distinct config once and an entry as a row
INDEX_FORMAT = 4  # the settings index
PROOFS_FORMAT = 3  # the audit record
BACKENDS = ("cuda", "hip", "interpreter")
INTERPRETER = "interpreter"  # the interpreter class's id and its backend: one and the same
PDL_MAJOR = 9  # a class's launch: [pdl] (programmatic dependent launch): CUDA, compute capability 9.0 (Hopper) on
REJECT_REASONS = ("wrong_result", "compile_failed", "out_of_resources", "slower", "crashed")
INDEX_SUFFIX = ".json"
PROOFS_SUFFIX = ".proofs.yaml"

ConfigValue = int | float | bool | str

# --------------------------------------------------------------------------------------------- schemas
_NAME = r"^[a-z0-9][a-z0-9_.-]*$"
_IDENT = r"^[A-Za-z_][A-Za-z0-9_]*$"
_TEXT = {"type": "string", "minLength": 1, "pattern": r"\S"}
_COUNT = {"type": "integer", "minimum": 1}
_CONFIG = {
    "type": "object",
    "minProperties": 1,
    "propertyNames": {"pattern": _IDENT},
    "additionalProperties": {"type": ["integer", "number", "boolean", "string"]},
}
_RANGE = {
    "type": "array",
    "items": [{"type": "integer", "minimum": 1}, {"type": ["integer", "null"], "minimum": 1}],
    "additionalItems": False,
    "minItems": 2,
}
# the dimension names are checked against the table's key by hand
_DOMAIN = {
    "type": "object",
    "required": ["dtypes"],
    "properties": {"dtypes": {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"enum": list(DTYPES)}}},
    "additionalProperties": _RANGE,
}
_REJECTED_LINE = re.compile(
    "^(" + "|".join(REJECT_REASONS) + r"): ((?:[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.+-]+ )*[A-Za-z_][A-Za-z0-9_]*="
    r"[A-Za-z0-9_.+-]+): (.*)$",
    re.DOTALL,
)
ENTRY_DIGEST = re.compile(r"[0-9a-f]{16}")
_PROOF = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "entry",
        "examples",
        "worst_error_ratio",
        "bound",
        "reference",
        "time_best_us",
        "time_median_us",
        "candidates_tried",
        "rejected",
    ],
    "properties": {
        # the entry the proof was made for (entry_digest): a proof copied or moved to another entry, or left beside a
        # domain changed since, no longer speaks of the entry it sits beside
        "entry": {"type": "string", "pattern": "^" + ENTRY_DIGEST.pattern + "$"},
        "examples": _COUNT,
        # a ratio above 1 means the entry failed its own proof: such a table is refused
        "worst_error_ratio": {"type": "number", "minimum": 0, "maximum": 1},
        "bound": _TEXT,
        "reference": _TEXT,
        "time_best_us": {"type": "number", "minimum": 0},
        "time_median_us": {"type": "number", "minimum": 0},
        "candidates_tried": _COUNT,
        "rejected": {"type": "array", "items": {"type": "string", "pattern": _REJECTED_LINE.pattern}},
    },
}
_SOURCE = {"type": "string", "pattern": r"^[0-9a-f]{16}$"}
_STACK = {
    "type": "object",
    "required": ["torch", "triton"],
    "additionalProperties": _TEXT,
    # source: the digest of the kernel's code the proofs were made on (its provenance's kernel_source)
    "properties": {"torch": _TEXT, "triton": _TEXT, "source": _SOURCE},
}
_HEAD = {
    "kernel": {"type": "string", "pattern": _NAME},
    "class": {"type": "string", "pattern": _NAME},
}
# an index entry: [dtypes, lo, hi per key dimension (in key order), position in "configs"]; the row's
# length against the key, each lo an integer and lo <= hi, and the position against "configs" are checked
# by hand (a schema cannot refer to a sibling field's length). The dtypes are one of the lists of distinct
# dtype names, spelt out: one comparison a row where "uniqueItems" and an enum per item cost a third of
# the validation of the class's 2,236 rows (measured: 17-18 ms against 12-13 ms on the CI's CPU)
_DTYPE_LISTS = [list(p) for n in range(1, len(DTYPES) + 1) for p in itertools.permutations(DTYPES, n)]
_DTYPE_TUPLES = {tuple(names) for names in _DTYPE_LISTS}
_DTYPE_LIST = {"enum": _DTYPE_LISTS}
_ROW = {
    "type": "array",
    "minItems": 4,
    "items": [_DTYPE_LIST],
    "additionalItems": {"type": ["integer", "null"], "minimum": 0},
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "tracked": {
        "type": "object",
        "required": ["format", "files"],
        "additionalProperties": False,
        "properties": {
            "format": {"const": TRACKED_FORMAT},
            "files": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["path", "wheel_path", "sha256", "size"],
                    "additionalProperties": False,
                    "properties": {
                        "path": _TEXT,
                        "wheel_path": _TEXT,
                        "sha256": {"type": "string", "pattern": r"^[0-9a-f]{64}$"},
                        "size": {"type": "integer", "minimum": 0},
                    },
                },
            },
            # the digest of the engine's code that verified the records below (tables.verification_rules): a runtime
            # whose own code digests otherwise (an upgrade, a checkout edited since) reads every record in full. Any
            # text of its characters: another neurobrix's digest, in whatever form, is a mismatch, never a refusal
            "verified_rules": {"type": "string", "pattern": r"^[!-~]{1,128}$"},
            # the audit records `python -m conformance track` verified as `tables verify` does, each with its index
            # (parse_verified): run reads their proofs no further than their digests
            "verified": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["path", "sha256", "index_sha256"],
                    "additionalProperties": False,
                    "properties": {
                        "path": _TEXT,
                        "sha256": {"type": "string", "pattern": r"^[0-9a-f]{64}$"},
                        "index_sha256": {"type": "string", "pattern": r"^[0-9a-f]{64}$"},
                    },
                },
            },
        },
    },
    "class": {
        "type": "object",
        "required": ["format", "class", "description", "match"],
        "additionalProperties": False,
        "properties": {
            "format": {"const": CLASS_FORMAT},
            "class": {"type": "string", "pattern": _NAME},
            "description": _TEXT,
            "note": _TEXT,
            # launch features measured to pay on this class (each kernel launched with them; none changes a
            # result): "pdl", Hopper's programmatic dependent launch
            "launch": {
                "type": "array",
                "items": {"enum": ["pdl"]},
                "uniqueItems": True,
            },
            "match": {
                "oneOf": [
                    {
                        "type": "object",
                        "required": ["backend"],
                        "additionalProperties": False,
                        "properties": {"backend": {"const": "interpreter"}},
                    },
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["backend", "vendor", "device_name", "compute_capability", "multiprocessor_count"],
                        "properties": {
                            "backend": {"enum": ["cuda", "hip"]},
                            "vendor": _TEXT,
                            "device_name": _TEXT,
                            "compute_capability": {
                                "type": "array",
                                "items": {"type": "integer", "minimum": 0},
                                "minItems": 2,
                                "maxItems": 2,
                            },
                            "multiprocessor_count": _COUNT,
                        },
                    },
                ]
            },
        },
    },
    "index": {
        "type": "object",
        "required": ["format", "kernel", "class", "key", "stack", "configs", "entries"],
        "additionalProperties": False,
        "properties": {
            "format": {"const": INDEX_FORMAT},
            **_HEAD,
            "key": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "array",
                    "items": [{"type": "string", "pattern": _IDENT}, {"type": "string"}],
                    "additionalItems": False,
                    "minItems": 2,
                },
            },
            "stack": _STACK,
            "configs": {"type": "array", "minItems": 1, "items": _CONFIG},
            "entries": {"type": "array", "minItems": 1, "items": _ROW},
        },
    },
    "proofs": {
        "type": "object",
        "required": ["format", "kernel", "class", "provenance", "entries"],
        "additionalProperties": False,
        "properties": {
            "format": {"const": PROOFS_FORMAT},
            **_HEAD,
            "provenance": {
                "type": "object",
                "required": ["device", "torch", "triton", "neurobrix", "git_commit", "date", "command"],
                "properties": {
                    "device": {"type": "object"},
                    "torch": _TEXT,
                    "triton": _TEXT,
                    "neurobrix": _TEXT,
                    "git_commit": _TEXT,
                    "date": _TEXT,
                    "command": _TEXT,
                    # the digest of the kernel's code its entries were proven on (neurobrix.stack.kernel_source)
                    "kernel_source": _SOURCE,
                    # the checks that proved every entry again on another kernel code (check --record), oldest first
                    "reproved": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["kernel_source", "date", "git_commit", "command", "examples_per_entry"],
                            "properties": {"kernel_source": _SOURCE, "examples_per_entry": _COUNT},
                        },
                    },
                },
            },
            "entries": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["domain", "config", "proof"],
                    "additionalProperties": False,
                    "properties": {"domain": _DOMAIN, "config": _CONFIG, "proof": _PROOF},
                },
            },
        },
    },
}


# the index with its rows' contents left out: what run validates with the schema library before the rows'
# columnar check (_rows_at_once); a table that fails that check is validated with "index" in full, whose
# messages name the field. Measured on the CI's CPU: the full schema's per-element code is 10-12 ms of the
# class's 35-50 ms settings load, the columnar check 4-5 ms
SCHEMAS["index_outline"] = {
    **SCHEMAS["index"],
    "properties": {
        **SCHEMAS["index"]["properties"],
        "entries": {"type": "array", "minItems": 1, "items": {"type": "array"}},
    },
}


def _full_schema(kind: str) -> dict[str, Any]:
    return {"$schema": "http://json-schema.org/draft-07/schema#", **SCHEMAS[kind]}


def schema_digest(kind: str) -> str:
    return hashlib.sha256(json.dumps(_full_schema(kind), sort_keys=True).encode()).hexdigest()


def render_validator(kind: str) -> str:
    """Python source of schema ``kind``'s validator (``fastjsonschema.compile_to_code``), stamped with the
    schema's digest: ``neurobrix/_schemas/<kind>_format.py`` holds it, so a run does not compile schemas on start."""
    code = fastjsonschema.compile_to_code(_full_schema(kind))
    return (
        f"# Generated by `python -m conformance schemas` from neurobrix/schema.py's {kind!r} schema: never edit.\n"
        f"SCHEMA_DIGEST = {schema_digest(kind)!r}\n" + str(code)
    )


@functools.cache
def _validator(kind: str) -> Callable[[Any], Any]:
    """The generated validator when it was generated from this very schema, else one compiled now."""
    try:
        module = importlib.import_module(f"neurobrix._schemas.{kind}_format")
    except ImportError:
        module = None
    if module is not None and getattr(module, "SCHEMA_DIGEST", None) == schema_digest(kind):
        validator: Callable[[Any], Any] = module.validate
        return validator
    compiled: Callable[[Any], Any] = fastjsonschema.compile(_full_schema(kind))
    return compiled


def validate(kind: str, data: Any, file: str) -> None:
    """Check ``data`` (parsed YAML or JSON) against schema ``kind``; a TablesError names file and field."""
    _same_format(kind, data, file)
    try:
        _validator(kind)(data)
    except fastjsonschema.JsonSchemaValueException as exc:
        exc = _meant_branch(exc, data)
        name, message = str(exc.name or "data"), str(exc.message)
        if exc.rule == "enum" and exc.definition == _DTYPE_LIST:  # not the 15 lists spelt out
            message = f"{name} must be a list of distinct dtype names ({', '.join(DTYPES)})"
        where = name.removeprefix("data").lstrip(".") or "(top level)"
        message = message.replace(name, "it", 1) if message.startswith(name) else message
        try:
            value = exc.value if not isinstance(exc.value, (dict, list)) or len(repr(exc.value)) < 120 else None
        except RecursionError:  # a value nested thousands deep ([[[[...]]]] in a YAML table): not quoted
            value = None
        shown = (
            f" (got {value!r})" if value is not None and exc.rule not in ("additionalProperties", "required") else ""
        )
        raise TablesError(f"{file}: field '{where}': {message}{shown}") from None
    if kind in ("tracked", "class", "proofs"):  # not the index run loads: its rows are checked by hand, at once
        found = _integral_floats(SCHEMAS[kind], data, "")
        if found is not None:
            raise TablesError(f"{file}: field '{found[0].lstrip('.')}': must be an integer, got {found[1]!r}")


def _meant_branch(exc: fastjsonschema.JsonSchemaValueException, data: Any) -> fastjsonschema.JsonSchemaValueException:
    """For a value none of a oneOf's branches takes, the refusal of the branch it was meant for: the one whose fields
    it shares most (class.yaml's ``match`` of a GPU, not the interpreter's). A GPU class's match with a field misspelt
    (``compute_capabilty``), ``backend: CUDA`` or ``compute_capability: 10.0`` was refused as "it must be valid exactly
    by one definition (0 matches found)", naming no field (walk-through round 48)."""
    definition = exc.definition if isinstance(exc.definition, dict) else {}
    branches = definition.get("oneOf")
    if exc.rule != "oneOf" or not branches or not isinstance(exc.value, dict):
        return exc
    keys = set(exc.value)
    meant = max(
        branches, key=lambda b: len(keys & set(b.get("properties", {}))) - len(set(b.get("required", ())) - keys)
    )
    try:
        fastjsonschema.compile(meant)(exc.value)
    except fastjsonschema.JsonSchemaValueException as inner:
        inner_name = str(inner.name or "data")
        where = str(exc.name or "data") + inner_name.removeprefix("data")
        message = str(inner.message).replace(inner_name, where, 1)
        if inner.rule == "required":  # a field missing because misspelt is named with the spelling found
            extra = [k for k in exc.value if k not in meant.get("properties", {})]
            for field in meant.get("required", ()):
                found = difflib.get_close_matches(str(field), [str(k) for k in extra], n=1, cutoff=0.6)
                if field not in keys and found:
                    message += f" (it has {found[0]!r}: did you mean {field}?)"
        return fastjsonschema.JsonSchemaValueException(message, inner.value, where, inner.definition, inner.rule)
    return exc


def _same_format(kind: str, data: Any, file: str) -> None:
    """A file whose ``format`` is another integer than this NeuroBrix reads is named as such before any other field:
    a newer format's file with another layout (the index's entries renamed, TRACKED.yaml's files) was refused naming
    a field it lacks, as if it were a damaged file of this format."""
    expected = SCHEMAS[kind]["properties"]["format"]["const"]
    found = data.get("format") if isinstance(data, dict) else None
    if type(found) is not int or found == expected:
        return
    if found > expected:
        why = f"written by a newer NeuroBrix: upgrade NeuroBrix, or use tables of format {expected}"
    else:
        why = "an older layout this NeuroBrix no longer reads: certify the tables again with it"
    raise fail(file, "format", f"format {found}, and this NeuroBrix reads format {expected} ({why})")


def _integral_floats(schema: Mapping[str, Any], data: Any, where: str) -> tuple[str, float] | None:
    """The first place (named as ``validate`` names fields, with its value) where ``data``, valid against ``schema``,
    holds a float where the schema says "integer" (or a const that is one): JSON Schema (draft 6 on) counts 1.0 as an
    integer and fastjsonschema follows it, so a ``multiprocessor_count: 132.0``, a proof's ``examples: 5.0`` or a
    domain's ``[1, 4.0]`` passed, and showed as such. fastjsonschema has no option to refuse them (draft 4's integer
    does, but draft 4 lacks ``const`` and ``propertyNames``), hence this walk, by hand, over the keywords the schemas
    above use (each of oneOf's branches is walked: a field's schema is the same in each that has it)."""
    kinds = schema.get("type")
    integer = kinds == "integer" or (isinstance(kinds, list) and "integer" in kinds and "number" not in kinds)
    if type(data) is float and (integer or type(schema.get("const")) is int):  # format: 1.0 equals its const 1
        return where, data
    branches = [schema, *schema.get("oneOf", ())]
    for branch in branches:
        if isinstance(data, dict):
            props, extra = branch.get("properties", {}), branch.get("additionalProperties")
            for key, value in data.items():
                sub = props.get(key, extra if isinstance(extra, dict) else None)
                found = None if sub is None else _integral_floats(sub, value, f"{where}.{key}")
                if found is not None:
                    return found
        elif isinstance(data, list):
            items, extra = branch.get("items"), branch.get("additionalItems")
            for i, value in enumerate(data):
                if isinstance(items, list):
                    sub = items[i] if i < len(items) else (extra if isinstance(extra, dict) else None)
                else:
                    sub = items
                found = None if sub is None else _integral_floats(sub, value, f"{where}[{i}]")
                if found is not None:
                    return found
    return None


def fail(file: str, where: str, message: str) -> TablesError:
    return TablesError(f"{file}: field '{where}': {message}")


# --------------------------------------------------------------------------------------------- objects
@dataclass(frozen=True)
class TrackedFile:
    """One file the tables need: ``path`` relative to the tables folder, ``wheel_path`` inside the wheel."""

    path: str
    wheel_path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class VerifiedRecord:
    """An audit record ``python -m conformance track`` verified as ``tables verify`` does (parsed in full, against its
    index and its class): ``path`` relative to the tables folder, ``sha256`` its bytes', ``index_sha256`` those of the
    settings index it was verified with."""

    path: str
    sha256: str
    index_sha256: str


@dataclass(frozen=True)
class ClassMatch:
    """The device facts a GPU class matches (``device_name`` is an fnmatch pattern)."""

    backend: str
    vendor: str | None = None
    device_name: str | None = None
    compute_capability: tuple[int, int] | None = None
    multiprocessor_count: int | None = None


@dataclass(frozen=True)
class GPUClass:
    id: str
    description: str
    match: ClassMatch
    note: str | None
    path: str
    launch: tuple[str, ...] = ()  # launch features ("pdl") measured to pay on this class


def pdl_capable(klass: GPUClass) -> bool:
    """Whether ``klass``'s GPUs have programmatic dependent launch (CUDA, compute capability PDL_MAJOR.0 or later),
    whether or not its class.yaml lists it among the launch features that pay."""
    cc = klass.match.compute_capability
    return klass.match.backend == "cuda" and cc is not None and cc[0] >= PDL_MAJOR


@dataclass(frozen=True)
class Domain:
    """Dtypes and, per key dimension, an inclusive range; ``hi`` None means unbounded above.

    The one definition of a domain: tables, certify's tasks and check's draws all use it."""

    dtypes: tuple[str, ...]
    ranges: tuple[tuple[str, int, int | None], ...]

    def contains(self, dtype: str, shape: Mapping[str, int]) -> bool:
        if dtype not in self.dtypes:
            return False
        for dim, lo, hi in self.ranges:
            value = shape[dim]
            if value < lo or (hi is not None and value > hi):
                return False
        return True

    def overlaps(self, other: Domain) -> bool:
        if not set(self.dtypes) & set(other.dtypes):
            return False
        theirs = {dim: (lo, hi) for dim, lo, hi in other.ranges}
        for dim, lo, hi in self.ranges:
            olo, ohi = theirs[dim]
            if (hi is not None and hi < olo) or (ohi is not None and ohi < lo):
                return False
        return True

    def spans(self) -> dict[str, tuple[int, int | None]]:
        return {dim: (lo, hi) for dim, lo, hi in self.ranges}

    def describe(self) -> str:
        dims = ", ".join(
            f"{dim}={lo}" if lo == hi else f"{dim}={lo}..{'' if hi is None else hi}" for dim, lo, hi in self.ranges
        )
        return f"{'/'.join(self.dtypes)} {dims}"

    def as_data(self) -> dict[str, Any]:
        return {"dtypes": list(self.dtypes), **{dim: [lo, hi] for dim, lo, hi in self.ranges}}


@dataclass(frozen=True)
class Rejected:
    config: Mapping[str, ConfigValue]
    reason: str
    detail: str

    def render(self) -> str:
        """The one-line form proofs store: ``reason: K=V K=V ...: detail``.

        Values must read back as themselves (identifiers, numbers, booleans); anything else is refused.
        """
        line = f"{self.reason}: {' '.join(f'{k}={_value_text(v)}' for k, v in self.config.items())}: {self.detail}"
        if _REJECTED_LINE.match(line) is None or rejected_line(line) != self:
            raise ValueError(f"rejected candidate {dict(self.config)} ({self.reason}) cannot be written as one line")
        return line


def _value_text(value: ConfigValue) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _parse_value(text: str) -> ConfigValue:
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def rejected_line(line: str) -> Rejected:
    """``reason: K=V K=V ...: detail`` back into a Rejected (the schema has matched the line's form)."""
    match = _REJECTED_LINE.match(line)
    if match is None:
        raise ValueError(f"not a rejected-candidate line: {line!r}")
    reason, settings, detail = match.groups()
    pairs = [pair.split("=", 1) for pair in settings.split(" ")]
    return Rejected({k: _parse_value(v) for k, v in pairs}, reason, detail)


@dataclass(frozen=True)
class Proof:
    examples: int
    worst_error_ratio: float
    bound: str
    reference: str
    time_best_us: float
    time_median_us: float
    candidates_tried: int
    rejected: tuple[Rejected, ...]

    def as_data(self) -> dict[str, Any]:
        return {
            "examples": self.examples,
            "worst_error_ratio": round(self.worst_error_ratio, 4),
            "bound": self.bound,
            "reference": self.reference,
            "time_best_us": round(self.time_best_us, 2),
            "time_median_us": round(self.time_median_us, 2),
            "candidates_tried": self.candidates_tried,
            "rejected": [r.render() for r in self.rejected],
        }


@dataclass(frozen=True)
class Entry:
    """A certified setting with its proof (the audit record's view of one entry)."""

    domain: Domain
    config: Mapping[str, ConfigValue]
    proof: Proof


@dataclass(frozen=True)
class Setting:
    """A certified setting without its proof (the runtime's view of one entry)."""

    domain: Domain
    config: Mapping[str, ConfigValue]


Row = tuple[tuple[str, ...], tuple[int | None, ...], int]  # dtypes, (lo, hi) per key dimension, config position


_bucket = functools.lru_cache(maxsize=1 << 14)(bucket_of)  # few distinct values per table, many rows


@dataclass(eq=False)
class SettingsIndex:
    """A kernel's settings on one class, as ``run`` loads them: found by bucket, never by nearness.

    Held as the file holds them (the distinct configs, and one row per entry) so that loading builds no
    object per entry: entries whose domain is exactly one bucket of the key's rules are hashed by that
    bucket; the rest ("wide" entries: the interpreter class's unbounded domains) are few and tried in
    order. :attr:`entries` builds the :class:`Setting` objects when a tool asks for all of them.
    """

    kernel: str
    class_id: str
    key: tuple[str, ...]
    rules: tuple[str, ...]
    stack: Mapping[str, str]
    configs: tuple[Mapping[str, ConfigValue], ...]
    rows: tuple[Row, ...]
    path: str
    _by_bucket: dict[tuple[Any, ...], int] = field(default_factory=dict, repr=False)
    _wide: list[int] = field(default_factory=list, repr=False)
    _settings: dict[int, Setting] = field(default_factory=dict, repr=False)

    @classmethod
    def of(
        cls,
        kernel: str,
        class_id: str,
        key: tuple[str, ...],
        rules: tuple[str, ...],
        stack: Mapping[str, str],
        entries: Sequence[Setting] | Sequence[Entry],
        path: str,
    ) -> SettingsIndex:
        """The index of these entries (each domain's dimensions in key order), configs written once each."""
        positions: dict[tuple[tuple[str, ConfigValue], ...], int] = {}  # a config with its keys' order
        rows: list[Row] = []
        for entry in entries:
            if tuple(dim for dim, _, _ in entry.domain.ranges) != key:
                raise ValueError(f"{path}: domain {entry.domain.describe()} is not in key order {key}")
            bounds = tuple(v for _, lo, hi in entry.domain.ranges for v in (lo, hi))
            config = positions.setdefault(tuple(entry.config.items()), len(positions))
            rows.append((entry.domain.dtypes, bounds, config))
        configs = tuple(dict(items) for items in positions)
        return cls(kernel, class_id, key, rules, stack, configs, tuple(rows), path)

    def __post_init__(self) -> None:
        """Hash the rows by bucket (the key: dtype and the row's bounds, which are then the buckets' own),
        refusing overlaps: two single-bucket domains overlap only when they share a bucket (buckets
        partition each dimension); a wide entry is compared with every other. Run loads every index on
        every start, so this loop is kept to a comparison per dimension (buckets computed once a value)."""
        rules, by_bucket = self.rules, self._by_bucket
        for i, (dtypes, bounds, _) in enumerate(self.rows):
            if not all(
                hi is not None and lo is not None and _bucket(rule, lo) == (lo, hi)
                for rule, lo, hi in zip(rules, bounds[::2], bounds[1::2])
            ):  # some dimension is not one bucket
                self._wide.append(i)
                continue
            for dtype in dtypes:
                other = by_bucket.setdefault((dtype, bounds), i)
                if other != i:
                    raise self._overlap(other, i)
        for n, wide in enumerate(self._wide):
            domain = self.entry(wide).domain
            for other in [*self._wide[n + 1 :], *sorted(set(self._by_bucket.values()))]:
                if domain.overlaps(self.entry(other).domain):
                    raise self._overlap(wide, other)

    def _overlap(self, i: int, j: int) -> TablesError:
        return overlap_error(self.path, i, self.entry(i).domain, j, self.entry(j).domain)

    def entry(self, i: int) -> Setting:
        """Entry ``i`` (file order) as a Setting, built once (a lookup returns the same object each time)."""
        if i not in self._settings:
            dtypes, bounds, config = self.rows[i]
            ranges = tuple((dim, bounds[2 * j], bounds[2 * j + 1]) for j, dim in enumerate(self.key))
            self._settings[i] = Setting(Domain(dtypes, ranges), self.configs[config])  # type: ignore[arg-type]
        return self._settings[i]

    @functools.cached_property
    def entries(self) -> tuple[Setting, ...]:
        """Every entry, in file order."""
        return tuple(self.entry(i) for i in range(len(self.rows)))

    def lookup(self, dtype: str, values: tuple[int, ...]) -> Setting | None:
        """The one entry whose domain contains the call (key values in key order), or None."""
        if any(v < 1 for v in values):
            return None
        hit = self._by_bucket.get((dtype, tuple(b for rule, v in zip(self.rules, values) for b in _bucket(rule, v))))
        if hit is not None:
            return self.entry(hit)
        shape = dict(zip(self.key, values))
        for i in self._wide:
            entry = self.entry(i)
            if entry.domain.contains(dtype, shape):
                return entry
        return None


@dataclass(frozen=True)
class ProofsTable:
    """A kernel's audit record on one class: provenance and every entry with its proof."""

    kernel: str
    class_id: str
    provenance: Mapping[str, Any]
    entries: tuple[Entry, ...]
    path: str


# --------------------------------------------------------------------------------------------- parsing
def _path_form_problem(path: str) -> str | None:
    """Why a tracked path is not written as ``conformance track`` writes one (folders and a file name joined by "/"),
    or None: an empty or "." segment (the file the folder check hashes is another path than the one listed), a
    control character (a NUL, a line feed: the message naming it splits), or a name longer than a file system keeps
    (the folder check died in an OSError, exit 1, not a refusal of the tables)."""
    segments = path.split("/")
    if any(segment in ("", ".") for segment in segments):
        return "an empty or '.' segment"
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        return "a control character"
    if any(len(segment.encode("utf-8", "surrogatepass")) > 255 for segment in segments):
        return "a name longer than 255 bytes"
    return None


def parse_tracked(data: Any, file: str) -> tuple[TrackedFile, ...]:
    validate("tracked", data, file)
    files: list[TrackedFile] = []
    seen: set[str] = set()
    for i, item in enumerate(data["files"]):
        path = item["path"]
        if path.startswith("/") or ".." in path.split("/") or "\\" in path:
            raise fail(file, f"files[{i}].path", f"unsafe path {path!r}")
        odd = _path_form_problem(path)
        if odd is not None:
            raise fail(file, f"files[{i}].path", f"{path!r} is not a plain relative path: {odd}")
        if path in seen:
            raise fail(file, f"files[{i}].path", f"{path} is listed twice")
        seen.add(path)
        files.append(TrackedFile(path, item["wheel_path"], item["sha256"], item["size"]))
    return tuple(files)


def parse_verified(data: Any, file: str) -> tuple[VerifiedRecord, ...]:
    """The audit records a tracked list (valid: :func:`parse_tracked`) says ``conformance track`` verified: each a
    ``<class>/<kernel>.proofs.yaml`` the list tracks, with its index, named once."""
    tracked = {item["path"] for item in data["files"]}
    found: list[VerifiedRecord] = []
    seen: set[str] = set()
    for i, item in enumerate(data.get("verified", ())):
        path = item["path"]
        index = path[: -len(PROOFS_SUFFIX)] + INDEX_SUFFIX
        if not path.endswith(PROOFS_SUFFIX) or path not in tracked or index not in tracked:
            raise fail(file, f"verified[{i}].path", f"{path!r} is no audit record of the list beside its index")
        if path in seen:
            raise fail(file, f"verified[{i}].path", f"{path} is listed twice")
        seen.add(path)
        found.append(VerifiedRecord(path, item["sha256"], item["index_sha256"]))
    return tuple(found)


def parse_class(data: Any, file: str, folder: str) -> GPUClass:
    validate("class", data, file)
    if data["class"] != folder:
        raise fail(file, "class", f"says {data['class']!r} but the file lives in folder {folder!r}")
    m = data["match"]
    # the engine knows the interpreter class by its id (bf16 refused, no compiler check, no certify limits): the id
    # and the backend must agree, or a GPU's settings would run without the compiler check, or the reverse
    if (m["backend"] == INTERPRETER) != (data["class"] == INTERPRETER):
        said = (
            f"only the class named {INTERPRETER!r} matches the Triton interpreter"
            if m["backend"] == INTERPRETER
            else f"the class named {INTERPRETER!r} is the Triton interpreter's, its backend {INTERPRETER!r}"
        )
        raise fail(file, "match.backend", f"is {m['backend']!r} for class {data['class']!r}: {said}")
    launch = tuple(data.get("launch", ()))
    cc = m.get("compute_capability")
    if launch and not (m["backend"] == "cuda" and cc is not None and cc[0] >= PDL_MAJOR):
        # Hopper's programmatic dependent launch: the interpreter fails on its first launch (a traceback after the
        # weights were loaded), an older or another vendor's GPU has no such launch
        raise fail(
            file,
            "launch",
            f"lists {', '.join(launch)}, which runs on CUDA GPUs of compute capability {PDL_MAJOR}.0 or later only "
            f"(this class matches backend {m['backend']}{f' {cc[0]}.{cc[1]}' if cc else ''})",
        )
    if m["backend"] == INTERPRETER:
        match = ClassMatch("interpreter")
    else:
        cc = m["compute_capability"]
        match = ClassMatch(
            m["backend"],
            vendor=m["vendor"],
            device_name=m["device_name"],
            compute_capability=(cc[0], cc[1]),
            multiprocessor_count=m["multiprocessor_count"],
        )
    return GPUClass(data["class"], data["description"], match, data.get("note"), file, launch)


def _names(data: Mapping[str, Any], file: str, folder: str, kernel: str) -> None:
    if data["kernel"] != kernel:
        raise fail(file, "kernel", f"says {data['kernel']!r} but the file is named for {kernel}")
    if data["class"] != folder:
        raise fail(file, "class", f"says {data['class']!r} but the file lives in folder {folder!r}")


def _domain(data: Mapping[str, Any], file: str, where: str, key: tuple[str, ...]) -> Domain:
    dims = [d for d in data if d != "dtypes"]
    if set(dims) != set(key):
        raise fail(file, where, f"has dimensions {', '.join(dims) or 'none'}, the key is {', '.join(key)}")
    ranges = []
    for dim in key:
        lo, hi = data[dim]
        if hi is not None and hi < lo:
            raise fail(file, f"{where}.{dim}", f"expected lo <= hi, got [{lo}, {hi}]")
        ranges.append((dim, lo, hi))
    return Domain(tuple(data["dtypes"]), tuple(ranges))


def overlap_error(file: str, i: int, a: Domain, j: int, b: Domain) -> TablesError:
    (i, a), (j, b) = sorted(((i, a), (j, b)), key=lambda pair: pair[0])
    return TablesError(
        f"{file}: entries[{i}] ({a.describe()}) and entries[{j}] ({b.describe()}) overlap; domains in one table "
        "must be disjoint so that lookup is exact. Re-certify this table."
    )


def _disjoint(domains: list[Domain], file: str) -> None:
    """Refuse overlapping domains; a sweep over the first dimension compares only entries whose ranges there meet."""
    order = sorted(range(len(domains)), key=lambda i: domains[i].ranges[0][1])
    active: list[int] = []
    for i in order:
        lo = domains[i].ranges[0][1]
        active = [j for j in active if (hi := domains[j].ranges[0][2]) is None or hi >= lo]
        for j in active:
            if domains[i].overlaps(domains[j]):
                raise overlap_error(file, i, domains[i], j, domains[j])
        active.append(i)


def parse_index(data: Any, file: str, folder: str, kernel: str) -> SettingsIndex:
    """A settings index (``<class>/<kernel>.json``), validated: schema, names, rules, rows, disjoint domains."""
    found = data.get("format") if isinstance(data, dict) else None
    if isinstance(found, int) and 2 <= found < INDEX_FORMAT:
        raise fail(
            file,
            "format",
            f"format {found} is an older layout of the settings index (this NeuroBrix reads {INDEX_FORMAT}); "
            f"rewrite it, entries unchanged: python -m conformance reformat --class {folder}",
        )
    validate("index_outline", data, file)
    if type(data["format"]) is not int:  # 4.0 equals the schema's const 4 (the other files: _integral_floats)
        raise fail(file, "format", f"must be an integer, got {data['format']!r}")
    _names(data, file, folder, kernel)
    key = tuple(dim for dim, _ in data["key"])
    rules = tuple(rule for _, rule in data["key"])
    if len(set(key)) != len(key) or "dtypes" in key:
        raise fail(file, "key", f"expected distinct dimension names other than 'dtypes', got {list(key)}")
    bad = [rule for rule in rules if not valid_rule(rule)]
    if bad:
        raise fail(file, "key", f"unknown bucket rule(s) {', '.join(map(repr, bad))} (exact, pow2, pow2>=F)")
    configs = tuple(data["configs"])
    entries = data["entries"]
    rows = _rows_at_once(entries, len(key), len(configs))
    if rows is None:  # something is wrong: the schema in full, then the row by row pass, name it
        validate("index", data, file)
        rows = _rows_one_by_one(entries, key, configs, file)
    if len({config for _, _, config in rows}) != len(configs):
        unused = sorted(set(range(len(configs))) - {config for _, _, config in rows})
        raise fail(file, "configs", f"config(s) {unused} belong to no entry")
    # SettingsIndex refuses overlapping domains
    return SettingsIndex(kernel, folder, key, rules, dict(data["stack"]), configs, tuple(rows), file)


def _rows_at_once(entries: list[list[Any]], dims: int, configs: int) -> list[Row] | None:
    """The rows, if every one is well formed, checked column by column (what run pays on every start for
    every entry of the class: comprehensions, not a loop of checks per row); None if any is not. Accepts
    exactly what the "index" schema and :func:`_rows_one_by_one` accept (tests/test_tables.py checks it on
    generated rows)."""
    width = 2 * dims + 2
    if any(len(row) != width for row in entries):
        return None
    if {type(row[0]) for row in entries} != {list}:
        return None
    try:
        dtypes = {tuple(row[0]) for row in entries}
    except TypeError:  # a dtype written as a list or an object ([["fp16"]]): unhashable, and no dtype's name
        return None
    if not dtypes <= _DTYPE_TUPLES:
        return None
    if not {type(v) for row in entries for v in row[1:]} <= {int, type(None)}:  # not bool, not 1.0
        return None
    for j in range(1, 2 * dims, 2):
        los, his = [row[j] for row in entries], [row[j + 1] for row in entries]
        if None in los or min(los) < 1 or any(hi is not None and hi < lo for lo, hi in zip(los, his)):
            return None
    positions = [row[-1] for row in entries]
    if None in positions or min(positions) < 0 or max(positions) >= configs:
        return None
    return [(tuple(row[0]), tuple(row[1:-1]), row[-1]) for row in entries]


def _rows_one_by_one(entries: list[Any], key: tuple[str, ...], configs: tuple[Any, ...], file: str) -> list[Row]:
    """The rows, checked one by one: the first that is wrong raises, naming itself."""
    width = 2 * len(key) + 2
    rows: list[Row] = []
    for i, row in enumerate(entries):
        if len(row) != width:
            raise fail(
                file,
                f"entries[{i}]",
                f"has {len(row)} items; expected {width}: [dtypes, lo and hi of each of "
                f"{', '.join(key)}, config position]",
            )
        bounds, config = tuple(row[1:-1]), row[-1]
        if any(type(v) is float for v in row[1:]):  # JSON Schema's "integer" admits 1.0
            raise fail(file, f"entries[{i}]", f"expected integers (or null), got {row[1:]}")
        for j, dim in enumerate(key):
            lo, hi = bounds[2 * j], bounds[2 * j + 1]
            if lo is None or lo < 1 or (hi is not None and hi < lo):
                raise fail(
                    file,
                    f"entries[{i}].{dim}",
                    f"expected integers 1 <= lo <= hi (hi null: unbounded), got [{lo}, {hi}]",
                )
        if config is None or config >= len(configs):
            raise fail(
                file, f"entries[{i}]", f"config position {config}, but the index has {counted(len(configs), 'config')}"
            )
        rows.append((tuple(row[0]), bounds, config))
    return rows


def _proof_numbers(proof: Proof, file: str, where: str) -> None:
    """What the schema's bounds let through: YAML's .nan compares false with every bound (a worst error ratio of NaN
    passed "at most 1", a proof of nothing), .inf passes "at least 0"; and the best of the timings is no more than
    their median."""
    for name in ("worst_error_ratio", "time_best_us", "time_median_us"):
        value = getattr(proof, name)
        if not math.isfinite(value):
            raise fail(file, f"{where}.{name}", f"must be a finite number, got {value}")
    if proof.time_best_us > proof.time_median_us:
        raise fail(
            file,
            f"{where}.time_best_us",
            f"{proof.time_best_us} us is above time_median_us {proof.time_median_us} us: the best of the timings is "
            "never above their median",
        )


def _proof_candidates(proof: Proof, config: Mapping[str, Any], file: str, where: str) -> None:
    """What a proof's candidates must say of its entry: certify tries each candidate once, keeps the one whose setting
    the entry holds and rejects every other with its reason. A proof rejecting the entry's own setting (``wrong_result:
    <the setting>``: it failed its check; ``slower``: another won) proves nothing of it, and one counting other
    candidates than it lists, or listing one twice, is not the record of one certify run."""
    seen: list[dict[str, tuple[type, Any]]] = []
    for line, rejected in zip(proof.as_data()["rejected"], proof.rejected):
        typed = _typed(rejected.config)
        if typed == _typed(config):
            raise fail(file, f"{where}.rejected", f"rejects the entry's own setting ({line!r}): the proof says it lost")
        if typed in seen:
            raise fail(file, f"{where}.rejected", f"rejects the same candidate twice ({line!r})")
        seen.append(typed)
    if proof.candidates_tried != len(proof.rejected) + 1:
        raise fail(
            file,
            f"{where}.candidates_tried",
            f"counts {counted(proof.candidates_tried, 'candidate')} where the entry's setting and the "
            f"{len(proof.rejected)} rejected make {len(proof.rejected) + 1}: certify rejects every candidate but the "
            "one it keeps",
        )


def device_problem(match: ClassMatch, device: Mapping[str, Any]) -> str | None:
    """Why a device (a :class:`~neurobrix.gpu.DeviceFacts` as a dict, or the ``device`` a proof's provenance records)
    is not one of the class ``match`` describes, or None: the backend, and for a GPU class its vendor, its name (the
    class's fnmatch pattern), compute capability and multiprocessor count. A fact missing is a mismatch."""
    wanted: dict[str, Any] = {"backend": match.backend}
    if match.backend != INTERPRETER:
        wanted |= {
            "vendor": match.vendor,
            "name": match.device_name,
            "compute_capability": match.compute_capability,
            "multiprocessor_count": match.multiprocessor_count,
        }
    for fact, expected in wanted.items():
        value = device.get(fact)
        if fact == "compute_capability" and isinstance(value, (list, tuple)):
            value = tuple(value)  # a proof's YAML holds a list, the device facts a tuple
        if fact == "name":
            same = isinstance(value, str) and fnmatch.fnmatchcase(value, str(expected))
        else:  # type too: True is no multiprocessor count of 1, 132.0 no count at all
            same = type(value) is type(expected) and value == expected
            if same and isinstance(value, tuple):
                same = all(type(v) is int for v in value)
        if not same:
            return f"{fact} {value!r}, the class's {expected!r}" + (" (a pattern)" if fact == "name" else "")
    return None


def _glob_tokens(pattern: str) -> list[tuple[str, bool, frozenset[str]]]:
    """An fnmatch pattern as tokens, parsed as :func:`fnmatch.translate` reads it: ("*", ...) any run of characters,
    ("1", negated, chars) one character in (or, negated, not in) chars; "?" is one character not in nothing."""
    tokens: list[tuple[str, bool, frozenset[str]]] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            if not tokens or tokens[-1][0] != "*":
                tokens.append(("*", False, frozenset()))
        elif c == "?":
            tokens.append(("1", True, frozenset()))
        elif c == "[":
            j = i
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            j = pattern.find("]", j)
            if j < 0:  # no closing bracket: a literal "["
                tokens.append(("1", False, frozenset("[")))
                continue
            body, i = pattern[i:j], j + 1
            negated = body.startswith("!")
            body = body[1:] if negated else body
            chars: set[str] = set()
            k = 0
            while k < len(body):
                if k + 2 < len(body) and body[k + 1] == "-":
                    chars.update(chr(o) for o in range(ord(body[k]), ord(body[k + 2]) + 1))
                    k += 3
                else:
                    chars.add(body[k])
                    k += 1
            tokens.append(("1", negated, frozenset(chars)))
        else:
            tokens.append(("1", False, frozenset(c)))
    return tokens


def _one_char_meets(a: tuple[str, bool, frozenset[str]], b: tuple[str, bool, frozenset[str]]) -> bool:
    (_, neg_a, set_a), (_, neg_b, set_b) = a, b
    if neg_a and neg_b:  # each excludes finitely many characters
        return True
    if neg_a:
        return bool(set_b - set_a)
    if neg_b:
        return bool(set_a - set_b)
    return bool(set_a & set_b)


def names_meet(first: str, second: str) -> bool:
    """Whether one device name matches both fnmatch patterns (``fnmatch.fnmatchcase``): the two classes' device_name
    rules can then hold for one GPU."""
    a, b = _glob_tokens(first), _glob_tokens(second)

    @functools.cache
    def meet(i: int, j: int) -> bool:
        if i == len(a) and j == len(b):
            return True
        if i < len(a) and a[i][0] == "*":
            return meet(i + 1, j) or (j < len(b) and meet(i, j + 1))
        if j < len(b) and b[j][0] == "*":
            return meet(i, j + 1) or (i < len(a) and meet(i + 1, j))
        if i == len(a) or j == len(b):
            return False
        return _one_char_meets(a[i], b[j]) and meet(i + 1, j + 1)

    return meet(0, 0)


def classes_meet(first: ClassMatch, second: ClassMatch) -> bool:
    """Whether one device satisfies both classes' match rules (every fact equal, the names' patterns meeting)."""
    if first.backend == INTERPRETER or second.backend == INTERPRETER:
        return first.backend == second.backend
    same = (first.backend, first.vendor, first.compute_capability, first.multiprocessor_count) == (
        second.backend,
        second.vendor,
        second.compute_capability,
        second.multiprocessor_count,
    )
    return same and names_meet(str(first.device_name), str(second.device_name))


def foreign_device(file: str, gpu_class: GPUClass, device: Mapping[str, Any]) -> TablesError | None:
    """The refusal of a record (``file``) whose provenance records a ``device`` not of ``gpu_class``, or None: a
    proof made on another GPU proves nothing of this one (``tables verify`` and the runtime's load say the same)."""
    problem = device_problem(gpu_class.match, device)
    if problem is None:
        return None
    return fail(
        file,
        "provenance.device",
        f"records a device that is not of class {gpu_class.id} ({problem}): these proofs were made on "
        "another GPU. Re-certify this table on the class's own GPU",
    )


def parse_proofs(
    data: Any,
    file: str,
    folder: str,
    kernel: str,
    index: SettingsIndex | None = None,
    gpu_class: GPUClass | None = None,
) -> ProofsTable:
    """An audit record (``<class>/<kernel>.proofs.yaml``), validated; with ``index``, it must hold exactly
    the index's entries (same domains and configs, in order) and the index's stack; with ``gpu_class``, the device
    its provenance records must be one of that class's (a proof made on another GPU proves nothing of this one)."""
    _same_format("proofs", data, file)  # before _unbound: another format's entries are not this format's
    _unbound(data, file)
    validate("proofs", data, file)
    _names(data, file, folder, kernel)
    if gpu_class is not None:
        refusal = foreign_device(file, gpu_class, data["provenance"]["device"])
        if refusal is not None:
            raise refusal
    key = index.key if index is not None else tuple(d for d in data["entries"][0]["domain"] if d != "dtypes")
    entries = []
    for i, e in enumerate(data["entries"]):
        p = e["proof"]
        for name in ("worst_error_ratio", "time_best_us", "time_median_us"):
            # an integer past a float's range (YAML reads 1 and 400 zeros as one): float() of it raised OverflowError
            if type(p[name]) is int and abs(p[name]) > sys.float_info.max:
                digits = len(str(abs(p[name])))
                raise fail(
                    file, f"entries[{i}].proof.{name}", f"must be a finite number, got an integer of {digits} digits"
                )
        proof = Proof(
            p["examples"],
            float(p["worst_error_ratio"]),
            p["bound"],
            p["reference"],
            float(p["time_best_us"]),
            float(p["time_median_us"]),
            p["candidates_tried"],
            tuple(rejected_line(line) for line in p["rejected"]),
        )
        _proof_numbers(proof, file, f"entries[{i}].proof")
        _proof_candidates(proof, e["config"], file, f"entries[{i}].proof")
        entries.append(Entry(_domain(e["domain"], file, f"entries[{i}].domain", key), e["config"], proof))
    _disjoint([e.domain for e in entries], file)
    prov = data["provenance"]
    if index is not None:
        if len(entries) != len(index.entries):
            raise fail(
                file,
                "entries",
                f"holds {counted(len(entries), 'entry', 'entries')}, its index {index.path} {len(index.entries)}",
            )
        for i, (proved, setting) in enumerate(zip(entries, index.entries)):
            # each value of its type: Python's True == 1 == 1.0 let a proof of SUBTILE true or num_warps 4.0 stand
            # for the setting of SUBTILE 1 or num_warps 4 that run launches (another constexpr, or none, to Triton)
            if proved.domain != setting.domain or _typed(proved.config) != _typed(setting.config):
                raise fail(
                    file,
                    f"entries[{i}]",
                    f"differs from entry {i} of its index {index.path}: "
                    f"{proved.domain.describe()} {dict(proved.config)} here, "
                    f"{setting.domain.describe()} {dict(setting.config)} there",
                )
        # the whole stack the proofs record (torch, Triton, and CUDA where they record one), not only the parts the
        # index names: an index stripped of its "cuda" stood for proofs made with CUDA 12.8 as for any
        stack = stack_of(prov)
        if stack != dict(index.stack):
            raise fail(file, "provenance", f"stack {stack} differs from its index's {dict(index.stack)}")
    _bound(entries, [e["proof"]["entry"] for e in data["entries"]], file, kernel, folder)
    return ProofsTable(kernel, folder, dict(prov), tuple(entries), file)


def entry_digest(kernel: str, class_id: str, domain: Domain, config: Mapping[str, Any]) -> str:
    """The identity of an entry that its proof carries (``proof.entry``): the first 16 hex digits of the sha256 of
    its kernel, class, dtypes, domain and setting, as sorted compact JSON (each value of its type: JSON writes 4,
    4.0 and true apart). certify writes it with the proof; every reader of a proof recomputes it from the entry the
    proof sits in."""
    key = tuple(dim for dim, _, _ in domain.ranges)
    bounds = tuple(bound for _, lo, hi in domain.ranges for bound in (lo, hi))
    return row_digests(kernel, class_id, key, (config,), ((tuple(domain.dtypes), bounds, 0),))[0]


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def row_digests(
    kernel: str,
    class_id: str,
    key: Sequence[str],
    configs: Sequence[Mapping[str, Any]],
    rows: Sequence[tuple[tuple[str, ...], tuple[int | None, ...], int]],
) -> list[str]:
    """:func:`entry_digest` of each row of a settings index (its dtypes, its bounds ``lo, hi`` per dimension of
    ``key``, the position of its setting in ``configs``), in order: the text
    ``{"class":…,"config":…,"domain":[[dim,lo,hi],…],"dtypes":[…],"kernel":…}`` of each, the JSON ``_json`` writes
    of it, built of parts written once per call (the class and each setting, the dimensions' names, each distinct
    dtypes and the kernel) and each row's bounds (an integer as JSON writes it, ``str``; anything else by ``_json``),
    one sha256 per row: a fifth of the cost of a JSON dump of each row, which every ``run`` paid for every entry of
    its class (walk-through round 32)."""
    head = '{"class":' + _json(class_id) + ',"config":'
    settings = [head + _json(dict(config)) + ',"domain":[' for config in configs]
    # [[dim,lo,hi],...] of one row, its bounds in key order ("{" and "}" of a name doubled for str.format)
    domain = ",".join("[" + _json(dim).replace("{", "{{").replace("}", "}}") + ",{},{}]" for dim in key).format
    tail = ',"kernel":' + _json(kernel) + "}"
    ends: dict[tuple[str, ...], str] = {}
    digests = []
    for dtypes, bounds, config in rows:
        end = ends.get(dtypes)
        if end is None:
            end = ends[dtypes] = '],"dtypes":' + _json(list(dtypes)) + tail
        numbers = [str(bound) if type(bound) is int else _json(bound) for bound in bounds]
        text = settings[config] + domain(*numbers) + end
        digests.append(hashlib.sha256(text.encode()).hexdigest()[:16])
    return digests


def _unbound(data: Any, file: str) -> None:
    """A record written before proofs carried their entry's digest: named, with the way to bind it."""
    entries = data.get("entries") if isinstance(data, dict) else None
    for i, e in enumerate(entries if isinstance(entries, list) else ()):
        proof = e.get("proof") if isinstance(e, dict) else None
        if isinstance(proof, dict) and "entry" not in proof:
            raise fail(
                file,
                f"entries[{i}].proof",
                "has no 'entry' (the digest of the entry it proves, which certify writes with each proof since "
                "2026-12-05): nothing binds it to the entry it sits beside. Re-certify the table, or bind a record "
                "certify wrote before then with `python -m conformance.bind <tables folder>`",
            )


def _bound(entries: list[Entry], digests: list[str], file: str, kernel: str, class_id: str) -> None:
    """Each proof must carry the digest of the entry it sits in: one copied from another entry (of the same setting:
    its candidates alone cannot tell) or left beside a domain widened since speaks of another entry."""
    own = [entry_digest(kernel, class_id, e.domain, e.config) for e in entries]
    for i, (entry, carried) in enumerate(zip(entries, digests)):
        if carried == own[i]:
            continue
        whose = [j for j, d in enumerate(own) if d == carried]
        origin = (
            f"it is the proof of entries[{whose[0]}] ({entries[whose[0]].domain.describe()})"
            if whose
            else "no entry of this record is that one (a domain or setting changed after its proof, or a proof "
            "brought from another table)"
        )
        raise fail(
            file,
            f"entries[{i}].proof.entry",
            f"is {carried}, the digest of another entry than {kernel} {entry.domain.describe()} "
            f"{dict(entry.config)} ({own[i]}): {origin}. A proof speaks of the entry it was made for; re-certify "
            "this entry",
        )


def _typed(config: Mapping[str, Any]) -> dict[str, tuple[type, Any]]:
    return {name: (type(value), value) for name, value in config.items()}


def stack_of(provenance: Mapping[str, Any]) -> dict[str, str]:
    """The compiler stack a table was certified with, as the index records it, with the digest of the kernel code its
    proofs were made on (``source``) where the provenance records one."""
    stack = {"torch": str(provenance["torch"]), "triton": str(provenance["triton"])}
    cuda = provenance.get("cuda")
    if cuda not in (None, "None"):
        stack["cuda"] = str(cuda)
    source = provenance.get("kernel_source")
    if source is not None:
        stack["source"] = str(source)
    return stack


def index_data(index: SettingsIndex) -> dict[str, Any]:
    """The JSON body of a settings index (certify and reformat write it)."""
    return {
        "format": INDEX_FORMAT,
        "kernel": index.kernel,
        "class": index.class_id,
        "key": [[dim, rule] for dim, rule in zip(index.key, index.rules)],
        "stack": dict(index.stack),
        "configs": [dict(c) for c in index.configs],
        "entries": [[list(dtypes), *bounds, config] for dtypes, bounds, config in index.rows],
    }


def proofs_data(kernel: str, class_id: str, provenance: Mapping[str, Any], entries: list[Entry]) -> dict[str, Any]:
    """The YAML body of an audit record (certify and reformat write it)."""
    return {
        "format": PROOFS_FORMAT,
        "kernel": kernel,
        "class": class_id,
        "provenance": dict(provenance),
        "entries": [
            {
                "domain": e.domain.as_data(),
                "config": dict(e.config),
                "proof": {"entry": entry_digest(kernel, class_id, e.domain, e.config), **e.proof.as_data()},
            }
            for e in entries
        ],
    }
