"""The certified tables on disk: where they are, whether every byte is the tracked one, and reading them.

Where the tables come from, in this order:
1. ``NEUROBRIX_TABLES=<dir>`` — explicit (a contributor's uncommitted class); a missing folder is an error.
2. the installed package (``neurobrix/_tables`` inside the wheel);
3. the source checkout (``tables/`` beside ``neurobrix/``, for ``PYTHONPATH=.`` and editable installs).

Loading verifies every file against ``TRACKED.yaml`` (sha256 and size; nothing missing, nothing
untracked) and reads every ``class.yaml``. A class's settings indexes are read when asked for
(:meth:`Tables.index`), its proofs only by ``tables show`` / ``tables verify`` and the conformance
tools (:meth:`Tables.proofs`): ``run`` never parses an audit record. Finding the setting of a call is
the plan's job (:mod:`neurobrix.plan`); this module never looks at the device. No torch, no GPU.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import mmap
import os
import re
import sys
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from stat import S_ISDIR, S_ISFIFO, S_ISREG, S_ISSOCK
from types import MappingProxyType
from typing import Any

import yaml

from .errors import TablesError, UsageError, counted
from .schema import (
    CLASS_FORMAT,
    INDEX_SUFFIX,
    INTERPRETER,
    PROOFS_FORMAT,
    PROOFS_SUFFIX,
    REJECT_REASONS,
    GPUClass,
    ProofsTable,
    SettingsIndex,
    TrackedFile,
    VerifiedRecord,
    classes_meet,
    entry_digest,
    foreign_device,
    parse_class,
    parse_index,
    parse_proofs,
    parse_tracked,
    parse_verified,
    rejected_line,
    row_digests,
    stack_of,
    validate,
)

# yaml.safe_load's loader: the same safe constructor, parsed by libyaml when PyYAML has it
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

ENV_VAR = "NEUROBRIX_TABLES"
TRACKED_NAME = "TRACKED.yaml"
CLASS_NAME = "class.yaml"
WHEEL_DIR = "neurobrix/_tables"  # must match [tool.hatch.build.targets.wheel.force-include]


# ---------------------------------------------------------------------------------------- where files are
def class_path(root: Path, class_id: str) -> Path:
    return root / class_id / CLASS_NAME


def index_path(root: Path, class_id: str, kernel: str) -> Path:
    return root / class_id / f"{kernel}{INDEX_SUFFIX}"


def proofs_path(root: Path, class_id: str, kernel: str) -> Path:
    return root / class_id / f"{kernel}{PROOFS_SUFFIX}"


def kernel_of(name: str) -> str | None:
    """The kernel a file of a class folder belongs to (its index or its proofs), else None."""
    for suffix in (PROOFS_SUFFIX, INDEX_SUFFIX):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return None


@dataclass(frozen=True)
class TablesLocation:
    root: Path
    origin: str  # "NEUROBRIX_TABLES", "installed package", "source checkout" or "given"


@dataclass(frozen=True)
class Problem:
    """One reason the tables cannot be trusted, about one file (relative to the tables folder; "": about the engine's
    code, no file of the tables)."""

    path: str
    message: str


@dataclass(frozen=True)
class Tables:
    """A verified tables folder: its classes, and (read on demand) their kernels' indexes and proofs. What
    :func:`load` gives is read-only (its classes and kernels are mappings that cannot be assigned to) and cached:
    launching takes no other (``neurobrix.stack.require_runnable``, :func:`is_loaded`)."""

    location: TablesLocation
    tracked: tuple[TrackedFile, ...]
    classes: Mapping[str, GPUClass]
    kernel_names: Mapping[str, tuple[str, ...]]  # class id -> kernels with a settings index
    _indexes: dict[tuple[str, str], SettingsIndex] = field(default_factory=dict, repr=False)
    _digests: dict[str, str] = field(default_factory=dict, repr=False)
    # an installed wheel's tables, pinned by its RECORD (installed_tables_problem): the bytes the release gate ran
    # `tables verify` on (G702), whose proofs are not read again (_certified_entries) while its TRACKED.yaml's
    # verified_rules is this code's under this process's YAML reader (_release_bound)
    _release: bool = field(default=False, repr=False)
    # record path -> (its sha256, its index's) for each record TRACKED.yaml lists as `conformance track` verified it
    # (parse_verified): read by its digests, as a release's (_verified_record)
    _verified: Mapping[str, tuple[str, str]] = field(default_factory=dict, repr=False)

    @property
    def root(self) -> Path:
        return self.location.root

    def kernels(self, class_id: str) -> tuple[str, ...]:
        return self.kernel_names.get(class_id, ())

    def index(self, class_id: str, kernel: str) -> SettingsIndex | None:
        """The settings index of ``kernel`` on ``class_id``, or None when the class has none; refused unless its
        entries are exactly the ones its record proves (:meth:`_bindings`)."""
        if kernel not in self.kernels(class_id):
            return None
        memo = (class_id, kernel)
        if memo not in self._indexes:
            index = self._parsed_index(class_id, kernel)
            self._bindings(class_id, kernel, index)
            self._indexes[memo] = index
        return self._indexes[memo]

    def _parsed_index(self, class_id: str, kernel: str) -> SettingsIndex:
        path = index_path(self.root, class_id, kernel)
        data = read_json(path, str(path), self._digests.get(f"{class_id}/{path.name}"))
        return parse_index(data, str(path), class_id, kernel)

    def _bindings(self, class_id: str, kernel: str, index: SettingsIndex) -> None:
        """The index's entries must be exactly the entries its record proves (same count, order, domains and settings,
        compared by their digests): an index edited alone (a setting never proven, a domain widened, an entry deleted,
        two swapped), even with TRACKED.yaml rewritten, is refused by ``run``, ``doctor``, ``warmup`` and ``conformance
        check`` as by ``tables verify``. The digests each proof carries (``entry``) are read by a line scan of the
        record as certify writes it (run never parses a record in full: the class's 2,236 proofs take 1.6 s to parse,
        this check ~30 ms); when they are the index's entries', in order, each entry is proven. Otherwise the record is
        parsed: one in another layout (written by hand) passes when each proof is its own entry's and its entries are
        the index's; any other is refused, naming the first entry of the index its record does not prove. First, the
        compiler stack the record's provenance says its proofs were made on must be the index's (the one ``run``
        compares with this machine's), read from the record's header. Both are read so only from a record in the
        layout certify writes (:func:`_record_layout`: its header parsed alone, nothing top-level after its entries);
        any other is parsed, so that a key named twice (a second ``provenance:`` after the entries) is refused here
        as by ``tables verify``."""
        path = proofs_path(self.root, class_id, kernel)
        text = _read_text(path, str(path), self._digests.get(f"{class_id}/{path.name}"))
        record: ProofsTable | None = None
        # the compiler stack its proofs were made on (schema.stack_of, as `tables verify` reads it) must be the one the
        # index states, which is the one `run` compares with this machine's: read, with the proofs' digests, from the
        # record as certify writes it (its provenance before its entries, nothing after them), else from it parsed
        layout = _record_layout(text, class_id, kernel)
        if layout is None:
            record = parse_proofs(_parse_yaml(text, str(path)), str(path), class_id, kernel)
            stack, carried, device = stack_of(record.provenance), None, record.provenance["device"]
        else:
            stack, carried, device = layout
        # the device the proofs were made on must be one of the class's (as `tables verify` holds it): proofs made on
        # another GPU, or on the interpreter, moved into this class's folder and bound, prove nothing of it
        refusal = foreign_device(str(path), self.classes[class_id], device)
        if refusal is not None:
            raise refusal
        if stack != dict(index.stack):
            raise TablesError(
                f"{path}: its proofs were made on the compiler stack {_stack_words(stack)}, but its index {index.path} "
                f"states {_stack_words(dict(index.stack))}: the index claims a stack its proofs were not made on. "
                f"Re-certify ({certify_command(class_id, [kernel], again=True)}), or run `neurobrix tables verify` for "
                "the full report"
            )
        # each entry's digest, computed once (row_digests: the parts every entry shares written once per index)
        own = row_digests(kernel, class_id, index.key, index.configs, index.rows)
        if carried == own:  # (None, a record in another layout, is no list)
            # the digests are the index's own; each entry must also be, byte for byte, what certify writes of the
            # index's entry with a proof the schema passes, as `tables verify` reads it: a digest line hidden in a
            # quoted text, a ratio of .nan, a domain spelt otherwise leave certify's form, and the record is parsed
            if self._release or self._verified_record(class_id, kernel) or _certified_entries(text, index, own):
                return
        # the slow path: the record parsed, each proof held to its own entry (a proof moved, or a record whose domain
        # was edited after its proof, is named as such), then its entries to the index's, by their digests
        if record is None:
            record = parse_proofs(_parse_yaml(text, str(path)), str(path), class_id, kernel)
        proved = [entry_digest(kernel, class_id, e.domain, e.config) for e in record.entries]
        if proved == own:
            return
        raise TablesError(_unproven(index, record, own, proved, class_id, kernel))

    def _verified_record(self, class_id: str, kernel: str) -> bool:
        """Whether TRACKED.yaml lists the kernel's record as ``conformance track`` verified it, beside its index, and
        both are the bytes it verified (the sha256s this list gives them, which every read of them is held to:
        ``_read_text``). ``track`` parsed it in full as ``tables verify`` does (:func:`verified_records`), so the form
        check, which reads every character of it (:func:`_certified_entries`: about 70 ms of a checkout's nvidia-h200
        load), is not made again; the line scan of its header and digests, the stack and the device are. A record
        edited since (and listed again by hand, not by ``track``) hashes to another digest: read in full, refused as
        ``tables verify`` refuses it (strict round 57)."""
        record = f"{class_id}/{kernel}{PROOFS_SUFFIX}"
        verified = self._verified.get(record)
        return verified is not None and verified == (
            self._digests.get(record),
            self._digests.get(f"{class_id}/{kernel}{INDEX_SUFFIX}"),
        )

    def proofs(self, class_id: str, kernel: str) -> ProofsTable | None:
        """The audit record of ``kernel`` on ``class_id``, checked against its index (None without one)."""
        if kernel not in self.kernels(class_id):
            return None
        # the index as parsed, unbound: the record parsed against it says in full where the two differ (what
        # index() refuses at its first entry the record does not prove)
        index = self._indexes.get((class_id, kernel)) or self._parsed_index(class_id, kernel)
        path = proofs_path(self.root, class_id, kernel)
        data = read_yaml(path, str(path), self._digests.get(f"{class_id}/{path.name}"))
        return parse_proofs(data, str(path), class_id, kernel, index, self.classes[class_id])


def _header_stack(text: str) -> dict[str, str] | None:
    """The compiler stack of a record in certify's layout (:func:`_record_layout`), or None in any other."""
    layout = _record_layout(text, None, None)
    return None if layout is None else layout[0]


def _record_layout(
    text: str, class_id: str | None, kernel: str | None
) -> tuple[dict[str, str], list[str], dict[str, Any]] | None:
    """What ``run`` reads of a record written in certify's layout, without parsing its entries: the compiler stack
    of its provenance (:func:`~neurobrix.schema.stack_of`), its proofs' entry digests, in order, and the device its
    provenance records. None when the
    record is in any other layout, so that its caller parses the whole record (which refuses a key named twice, a
    second document, ...) and reads both there. Certify's layout: ASCII text with line feeds alone (YAML also breaks
    lines at CR, NEL, LS and PS, which a line scan would not see), a header of the top-level keys ``format``,
    ``kernel``, ``class`` and ``provenance`` each once (parsed as YAML alone: ~0.1-0.8 ms; no document marker), then
    a line ``entries:`` and after it only its entries: each begins with the line ``- domain:`` at the left margin,
    every other line is indented by two spaces at least, and each entry holds one line ``    entry: <digest>``. A
    top-level key after the entries (a second ``provenance:``, ``entries:`` or ``class:``, in any spelling: quoted,
    ``? key``, ``key :``, flow style, after ``---`` or ``...``) begins a line at the left margin: not the layout.
    The entries' lines are looked at in the same scan that reads the digests (one regular expression, which stops
    at each line feed: ~3.2 ms on nvidia-h200's 5 MB linear record against ~2 ms for the digests alone)."""
    if not text.isascii() or "\r" in text or not text.endswith("\n"):
        return None
    entries = _ENTRIES_LINE.search(text)
    if entries is None or not text.startswith("\n- domain:\n", entries.end()):
        return None
    header = text[: entries.start()]
    if _DOCUMENT_MARK.search(header) is not None:
        return None
    try:
        head = _parse_yaml(header, "header")
    except TablesError:
        return None
    if not isinstance(head, dict) or set(head) != {"format", "kernel", "class", "provenance"}:
        return None
    if type(head["format"]) is not int or head["format"] != PROOFS_FORMAT:
        return None
    if (kernel is not None and head["kernel"] != kernel) or (class_id is not None and head["class"] != class_id):
        return None
    provenance = head["provenance"]  # as the schema's "provenance" states it: a device, the rest texts
    if not isinstance(provenance, dict) or not isinstance(provenance.get("device"), dict):
        return None
    if not all(isinstance(provenance.get(name), str) and provenance[name].strip() for name in _PROVENANCE_TEXTS):
        return None
    # the code its proofs were made on, as the schema states it: any other value (a number, a list) is parsed in full,
    # where the schema names the field, as `tables verify` does (stack_of wrote it as text, and run named a stack
    # "source 12345" its proofs were made on)
    source = provenance.get("kernel_source")
    if source is not None and not (isinstance(source, str) and _SOURCE_DIGEST.fullmatch(source)):
        return None
    # the whole header as the schema states it (its provenance's re-proofs among it), one entry standing in for the
    # entries, which _certified_entries reads: a header `tables verify` refuses (a re-proof of 0 examples an entry)
    # is parsed in full and refused as there
    try:
        validate("proofs", {**head, "entries": [_STAND_IN]}, "header")
    except TablesError:
        return None
    # one match per entry's first line, one per digest line, one per line no entry holds (the last line feed's
    # included): in certify's layout they come as start, digest, start, digest, ..., and the end
    found = _RECORD_LINE.findall(text, entries.end())
    if len(found) % 2 != 1 or found[-1] != ("", "", "") or found[0:-1:2] != [_ENTRY_START] * (len(found) // 2):
        return None
    digests = [digest for _, digest, _ in found[1:-1:2]]
    return (stack_of(provenance), digests, provenance["device"]) if all(digests) else None


# certify's form of a record's entries (yaml.safe_dump of proofs_data, width 120), read by _certified_entries: the
# words YAML reads as another type than text when written plain (PyYAML's YAML 1.1 booleans and nulls)
_YAML_WORDS = frozenset(
    "yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF null Null NULL".split()
)
_PLAIN_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# a line break certify's writer puts in place of a space in a long text (YAML joins the two lines with one space): the
# next line goes on at six spaces, after no space and before none (YAML drops those; certify's form has none)
_LINE_ON = r"\n      (?=[!-~])"
_BREAK = r"(?<! )" + _LINE_ON
# the text on one line of a single-quoted scalar (printable ASCII, '' for a quote); of a plain one (no ": ", no " #",
# no space at its end)
_QUOTED = r"[ -&(-~]*(?:''[ -&(-~]*)*"
_PLAIN = r"(?:[!-9;-~]|:(?=[!-~])| (?=[!-\"$-~]))*"  # (one character a turn: no two ways to read a text)
# a text as the schema states it (_TEXT): plain (a letter first, no word YAML reads as a boolean or null) or quoted (no
# space first), either spread over lines; a duration as safe_dump writes a float (finite: at most 16 digits before the
# point); a ratio in [0, 1]; each rejected candidate a quoted text holding no quote, its reason and ": " first (its
# settings are read by _certified_entries and _candidate; its lines, as YAML reads them, are the text's: the line scan
# of _record_layout refuses a line at the left margin, a document marker, in any of them)
_TEXT_VALUE = (
    r"(?:(?!(?:"
    + "|".join(sorted(_YAML_WORDS))
    + r")\n)[A-Za-z]"
    + _PLAIN
    + r"(?:\n      [A-Za-z0-9(]"
    + _PLAIN
    + r")*|'(?=[!-&(-~]|'')"
    + _QUOTED
    + r"(?:"
    + _BREAK
    + _QUOTED
    + r")*')"
)
_DURATION = r"(?:0|[1-9][0-9]{0,15})\.[0-9]+"
_PROOF_REST = re.compile(
    r"    examples: ([1-9][0-9]*)\n"
    r"    worst_error_ratio: (0\.[0-9]+|1\.0)\n"
    r"    bound: " + _TEXT_VALUE + r"\n"
    r"    reference: " + _TEXT_VALUE + r"\n"
    r"    time_best_us: (" + _DURATION + r")\n"
    r"    time_median_us: (" + _DURATION + r")\n"
    r"    candidates_tried: ([1-9][0-9]*)\n"
    r"    rejected:(?: \[\]\n|\n((?:    - '(?:" + "|".join(REJECT_REASONS) + r"): [^']*'\n)+))"
)
# an entry the schema passes, standing in for a record's entries when its header is validated alone (_record_layout)
_STAND_IN = {
    "domain": {"dtypes": ["fp32"]},
    "config": {"A": 1},
    "proof": {
        "entry": "0" * 16,
        "examples": 1,
        "worst_error_ratio": 0.0,
        "bound": "-",
        "reference": "-",
        "time_best_us": 0.0,
        "time_median_us": 0.0,
        "candidates_tried": 1,
        "rejected": [],
    },
}
_SETTINGS_FORM = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.+-]+ )*[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.+-]+")
# the characters YAML refuses in a text (its reader's: C0 but tab, line feed and carriage return, and DEL), mapped
# to one that is no ASCII
_UNREADABLE = bytes(0x80 if b < 0x20 and b not in (0x09, 0x0A, 0x0D) or b == 0x7F else b for b in range(256))


def _plain(value: Any) -> str | None:
    """A name or a setting's value as certify's YAML writer puts it in a record when that is a plain word or number
    YAML reads back as the same value, else None (the record is then parsed)."""
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is str and _PLAIN_WORD.fullmatch(value) and value not in _YAML_WORDS:
        return value
    return None


def _entry_heads(index: SettingsIndex, own: list[str]) -> list[str] | None:
    """Each entry of ``index`` as certify writes it in its record, up to its proof's digest line included (its domain's
    dtypes and bounds in key order, its setting, ``  proof:``, ``    entry: <digest>``), or None when one is written
    otherwise than in plain words and numbers."""
    names = [_plain(dim) for dim in index.key]
    if None in names:
        return None
    bounds_text = "".join(f"    {name}:\n    - {{}}\n    - {{}}\n" for name in names).format
    configs = []
    for setting in index.configs:
        lines = []
        for name, value in setting.items():
            shown, written = _plain(name), _plain(value)
            if shown is None or written is None:
                return None
            lines.append(f"    {shown}: {written}\n")
        configs.append("  config:\n" + "".join(lines) + "  proof:\n    entry: ")
    dtypes_text: dict[tuple[str, ...], str] = {}
    heads = []
    for (dtypes, bounds, config), digest in zip(index.rows, own):
        head = dtypes_text.get(dtypes)
        if head is None:
            head = dtypes_text[dtypes] = "- domain:\n    dtypes:\n" + "".join(f"    - {d}\n" for d in dtypes)
        numbers = ["null" if b is None else str(b) for b in bounds]
        # quoted where YAML reads the text written plain as a number, as certify's writer quotes it: all digits, or
        # "0b" and binary digits
        number = digest.isdigit() or (digest.startswith("0b") and not digest[2:].strip("01"))
        quoted = f"'{digest}'" if number else digest
        heads.append(head + bounds_text(*numbers) + configs[config] + quoted + "\n")
    return heads


def _candidate(settings: str, values: dict[str, Any]) -> frozenset[tuple[str, Any]] | None:
    """A rejected line's settings (``K=V K=V``, a line break read as YAML joins it) as ``tables verify`` compares them
    (each value of its type, read as :func:`~neurobrix.schema.rejected_line` reads it; ``values`` keeps each setting
    read), None when they are not in the schema's form, a key is given twice or a value reads as a float (compared
    otherwise: the record is parsed)."""
    joined = settings.replace("\n      ", " ")
    if _SETTINGS_FORM.fullmatch(joined) is None:
        return None
    read = []
    for setting in joined.split(" "):
        value = values.get(setting)
        if value is None:
            ((name, found),) = rejected_line(f"slower: {setting}: -").config.items()
            value = values[setting] = (name, (type(found), found))
        read.append(value)
    candidate = frozenset(read)
    if len(candidate) != len({name for name, _ in read}) or any(kind is float for _, (kind, _) in read):
        return None
    return candidate


def _certified_entries(text: str, index: SettingsIndex, own: list[str]) -> bool:
    """Whether a record in certify's layout (:func:`_record_layout`) holds after its ``entries:`` line exactly the
    entries of ``index`` as certify writes them, each with a proof ``tables verify`` passes. The digests alone do not
    tell (YAML reads every character: a ``  proof:`` and digest line inside a quoted text spread over lines, with the
    real digest's key quoted, a ratio of .nan and a domain's dtype spelt ``float32`` each passed the line scan and
    failed `tables verify`, strict round 55).

    Certify's form: each entry is its index entry's text (:func:`_entry_heads`: domain, setting and digest), then its
    proof's other keys in certify's order, one a line, each value plain or single-quoted as the schema bounds it (a
    text spread over lines goes on at six spaces), the best time no more than the median, and its rejected
    candidates: each a quoted text holding no quote, its reason, ": ", its settings in the schema's form, ": " and the
    rest, none the entry's own setting or given twice (each value of its type), one fewer than the candidates tried;
    no character YAML's reader refuses. Anything else is left to the parse, which refuses what `tables verify`
    refuses and reads the rest alike. It reads every character, where the line scan reads each line's first ones:
    what a checkout's (or NEUROBRIX_TABLES's) tables cost to load; an installed wheel's are not read again
    (:attr:`Tables._release`)."""
    heads = _entry_heads(index, own)
    entries = _ENTRIES_LINE.search(text)  # (the line _record_layout found)
    if heads is None or entries is None or entries.group() != "entries:":
        return False
    body = text[entries.end() + 1 :]
    if not body.encode("ascii").translate(_UNREADABLE).isascii():  # (ASCII: _record_layout)
        return False
    parts = _PROOF_REST.split(body)  # the entries' heads, and their proofs' other keys apart
    if len(parts) != 7 * len(heads) + 1 or parts[0::7] != heads + [""]:
        return False
    owns = [frozenset((n, (type(v), v)) for n, v in config.items()) for config in index.configs]
    rejected_texts: list[tuple[list[str], set[str], int]] = []
    for i, (_, _, config) in enumerate(index.rows):
        best, median, tried, rejected = parts[7 * i + 3 : 7 * i + 7]
        # each candidate's settings: its text holds no quote, so "    - '" begins an item and nothing else; it begins
        # with its reason and ": " (_PROOF_REST) and holds one ": " more, after its settings, or it is not the
        # schema's form (one more or fewer in any item puts an item's end, a quote, into a text taken for settings)
        items = rejected.count("    - '") if rejected else 0
        pieces = rejected.split(": ") if rejected else [""]
        texts = pieces[1::2]
        unique = set(texts)
        # (a count past the engine's bound, or past Python's where it is lower: -X int_max_str_digits=640 and
        # PYTHONINTMAXSTRDIGITS lower it, and int() would end the command in a ValueError traceback)
        if len(tried) > min(MAX_DIGITS, sys.get_int_max_str_digits() or MAX_DIGITS):
            return False
        if float(best) > float(median) or int(tried) != items + 1 or len(pieces) != 2 * items + 1:
            return False
        if len(unique) != items:
            return False
        rejected_texts.append((texts, unique, config))
    distinct = set().union(*(unique for _, unique, _ in rejected_texts))
    # each candidate's settings read as `tables verify` reads them (each value of its type), none the entry's own
    values: dict[str, Any] = {}
    read = {settings: _candidate(settings, values) for settings in distinct}
    if None in read.values():
        return False
    if len(set(read.values())) == len(read):  # one text for each candidate: the texts compare as the candidates do
        text_of = {candidate: settings for settings, candidate in read.items()}
        return not any(text_of.get(owns[config]) in unique for _, unique, config in rejected_texts)
    for texts, _, config in rejected_texts:  # a candidate written two ways (a line break in its settings)
        candidates = set(map(read.__getitem__, texts))
        if len(candidates) != len(texts) or owns[config] in candidates:
            return False
    return True


def _stack_words(stack: Mapping[str, str]) -> str:
    return ", ".join(f"{name} {version}" for name, version in stack.items())


def _unproven(
    index: SettingsIndex, record: ProofsTable, own: list[str], proved: list[str], class_id: str, kernel: str
) -> str:
    """Why an index is not the one its record proves: its first entry the record does not prove there, named."""
    i = next((i for i, (a, b) in enumerate(zip(own, proved)) if a != b), min(len(own), len(proved)))
    counts = (
        ""
        if len(own) == len(proved)
        else f" (it proves {counted(len(proved), 'entry', 'entries')}, this index holds {len(own)})"
    )
    if i < len(own):
        entry = index.entries[i]
        what = f"entry {i} ({kernel} {entry.domain.describe()} {dict(entry.config)}) is not"
        if i < len(proved):
            there = record.entries[i]
            what += (
                f" the one its record {record.path} proves there ({there.domain.describe()} {dict(there.config)})"
                + counts
            )
            if own[i] in proved:
                moved = "" if counts else " (the index's entries moved)"
                what += f"; the record proves it as its entries[{proved.index(own[i])}]{moved}"
        else:
            proves = counted(len(proved), "entry", "entries")
            what += f" proven: its record {record.path} proves {proves}, this index holds {len(own)}"
    else:  # the index is its record's first entries: the rest were deleted from it
        lost = record.entries[i]
        what = (
            f"holds {counted(len(own), 'entry', 'entries')}, its record {record.path} proves {len(proved)}: its "
            f"entries[{i}] "
            f"({kernel} {lost.domain.describe()} {dict(lost.config)}) is not in this index"
        )
    return (
        f"{index.path}: {what}. The index was changed without its proofs, which prove another one: re-certify "
        f"({certify_command(class_id, [kernel], again=True)}), or run `neurobrix tables verify` for the full report"
    )


def certify_command(
    class_id: str,
    kernels: list[str] | None = None,
    dtypes: list[str] | None = None,
    extra: str = "",
    again: bool = False,
) -> str:
    """The command a contributor runs, from a source checkout on that GPU, to certify what is missing (``again``:
    to certify the kernels' entries again, which ``--only-missing`` would skip). certify requires ``--dtypes``:
    without the call's, the ones a class of its kind is certified in (fp32 fp16 on the interpreter, whose bf16 is
    broken upstream; bf16 fp16 on a GPU)."""
    command = f"python -m conformance certify --class {class_id}"
    if kernels:
        command += " --kernels " + " ".join(kernels)
    if not dtypes:
        dtypes = ["fp32", "fp16"] if class_id == INTERPRETER else ["bf16", "fp16"]
    command += " --dtypes " + " ".join(dtypes)
    return command + extra + ("" if again else " --only-missing")


def locate() -> TablesLocation:
    """Where the tables are; see the module docstring for the order."""
    explicit = os.environ.get(ENV_VAR)
    relative_to = os.getcwd() if explicit and not os.path.isabs(os.path.expanduser(explicit)) else None
    if explicit:
        # the folder a user names is looked up at each load, not once a process: NEUROBRIX_TABLES naming a link
        # (tables-current -> tables-v1, moved to tables-v2 when the class is re-certified) leads elsewhere since, and a
        # program's loaded model is held to the tables found now (plan.require_current), as a fresh process reads them;
        # the cached lookup kept the old target for the process (a few system calls a load)
        return _locate.__wrapped__(explicit, relative_to)
    return _locate(explicit, relative_to)


@functools.cache
def _locate(explicit: str | None, relative_to: str | None) -> TablesLocation:
    if explicit == "":  # set to nothing (NEUROBRIX_TABLES=$UNSET): the folder meant is unknown, not the packaged one
        raise TablesError(
            f"{ENV_VAR} is set but empty: point it at a tables folder, or unset it for the installed package's tables"
        )
    if explicit:
        root = Path(explicit).expanduser()
        if relative_to is not None:  # one folder for every command, as NEUROBRIX_HOME and TRITON_CACHE_DIR are
            raise TablesError(
                f"{ENV_VAR}={explicit} is a relative path: it would name another folder in each folder a command runs "
                f"in (here {Path(relative_to) / root}); set it to an absolute path"
            )
        try:
            folder = root.is_dir()
        except OSError as exc:  # a name too long, or a folder this user may not look into: the OS's own words
            raise TablesError(
                f"{ENV_VAR}={explicit} cannot be looked at ({exc.strerror}); point it at a tables folder or unset it"
            ) from None
        if not folder:
            raise TablesError(f"{ENV_VAR}={explicit} is not a folder; point it at a tables folder or unset it")
        return TablesLocation(root.resolve(), ENV_VAR)
    packaged = Path(str(resources.files("neurobrix").joinpath("_tables")))
    if packaged.is_symlink():  # pip and every wheel installer write a folder: a link was put there since
        raise TablesError(
            f"{packaged}: the installed package's tables are a link to {os.readlink(packaged)}, not the folder its "
            "wheel installed: nothing holds what lies there to the release. Reinstall neurobrix "
            "(pip install --force-reinstall --no-deps neurobrix)"
        )
    if packaged.is_dir():
        return TablesLocation(packaged, "installed package")
    if _wheel_records(packaged.parent):  # site-packages/tables is no checkout's (another distribution may own it)
        raise TablesError(
            f"{packaged}: the installed neurobrix has no certified tables (its wheel installed them there). Reinstall "
            f"neurobrix (pip install --force-reinstall --no-deps neurobrix), or set {ENV_VAR}=<tables folder>."
        )
    source = Path(__file__).resolve().parent.parent / "tables"
    if (source / TRACKED_NAME).is_file():
        return TablesLocation(source, "source checkout")
    raise TablesError(
        "no certified tables found: the installed neurobrix has no neurobrix/_tables and there is no "
        f"source checkout tables/ folder. Reinstall neurobrix, or set {ENV_VAR}=<tables folder>."
    )


def _wheel_records(package: Path) -> list[tuple[Path | None, str, dict[str, Any]]]:
    """The records of the wheels that installed the package folder ``package`` (a ``RECORD`` beside it listing its
    ``__init__.py``): (the record, the distribution's version, path -> hashed entry). None for a source checkout or an
    editable install, whose RECORD lists no module of the package."""
    from importlib import metadata

    found = []
    for dist in metadata.distributions(name="neurobrix", path=[str(package.parent)]):
        listed = {str(f).replace("\\", "/"): f for f in dist.files or () if f.hash is not None}
        if f"{package.name}/__init__.py" in listed:
            record = getattr(dist, "_path", None)
            found.append((record / "RECORD" if record else None, dist.version, listed))
    return found


# pip's STRONG_HASHES: the algorithms pip checks a wheel's RECORD rows with, and the only ones the release gate passes
# (G206). pip and uv copy a wheel's rows into the installed RECORD as they are, so a row naming md5 or sha1 reaches
# here only from a wheel the gate refused, or by a hand; a digest of such a row proves nothing, and is not checked.
RECORD_HASHES = ("sha256", "sha384", "sha512")


def record_digest(algorithm: str, data: bytes) -> str:
    """``data``'s digest as a RECORD row writes it (urlsafe base64, unpadded); ValueError for an algorithm pip does
    not check RECORD rows with."""
    import base64

    if algorithm not in RECORD_HASHES:
        raise ValueError(f"its RECORD row is hashed with {algorithm!r}, not one of {', '.join(RECORD_HASHES)}")
    return base64.urlsafe_b64encode(hashlib.new(algorithm, data).digest()).rstrip(b"=").decode()


def installed_tables_problem(
    root: Path, records: list[tuple[Path | None, str, dict[str, Any]]] | None = None
) -> str | None:
    """Why the installed package's tables folder ``root`` (``neurobrix/_tables``) is not the one its wheel installed
    (None: it is, or no wheel installed it). TRACKED.yaml pins each table file's sha256, and lies beside them: a hand
    editing a table and TRACKED.yaml together (as ``conformance track`` rewrites it) passed. The wheel's RECORD lists
    TRACKED.yaml's own hash, which anchors the list, and so every table, to the release: one small file hashed.
    ``records``: the package's wheel records (:func:`_wheel_records`) when they were read already."""
    package = root.parent
    wanted = f"{package.name}/{root.name}/{TRACKED_NAME}"
    said = []
    for record, version, listed in _wheel_records(package) if records is None else records:
        entry = listed.get(wanted)
        if entry is None or entry.hash is None:
            said.append(f"{record or 'RECORD'} (neurobrix {version}) does not list {wanted}")
            continue
        try:
            digest = record_digest(entry.hash.mode, (root / TRACKED_NAME).read_bytes())
        except (OSError, ValueError) as exc:
            said.append(f"{wanted} cannot be checked against {record or 'RECORD'}: {exc}")
            continue
        if digest == entry.hash.value:
            return None  # (of two records of the package, one that the list matches is the install's)
        said.append(
            f"{root / TRACKED_NAME} is not the one neurobrix {version}'s wheel installed (its hash differs from "
            f"{record or 'RECORD'}): the tables and their list were changed together since the install"
        )
    if not said:
        return None
    return (
        f"{said[0]}; the certified tables are the release's only as installed. Reinstall neurobrix "
        f"(pip install --force-reinstall --no-deps neurobrix=={_wheel_records(package)[0][1]}), or name a tables "
        f"folder of your own with {ENV_VAR}"
    )


def sha256_of(path: Path) -> str:
    """The file's sha256, hashed from a read-only map of it (no copy: a third faster than reading in
    chunks for the class's 6 MB, which every start verifies)."""
    with path.open("rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return hashlib.sha256().hexdigest()
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return hashlib.sha256(mapped).hexdigest()


def scan(root: Path) -> list[TrackedFile]:
    """Every file under ``root`` except the tracked list itself, as it is on disk now, sorted by path."""
    found = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == TRACKED_NAME or path.is_dir():
            continue
        found.append(TrackedFile(rel, f"{WHEEL_DIR}/{rel}", sha256_of(path), path.stat().st_size))
    return found


def render_tracked(
    files: list[TrackedFile], verified: list[VerifiedRecord] | tuple[VerifiedRecord, ...] = (), rules: str | None = None
) -> str:
    """The text of TRACKED.yaml for these files (deterministic, so an unchanged folder gives equal bytes), and the
    records ``conformance track`` verified (:func:`verified_records`; none: no ``verified`` key, the form before),
    under the digest of the code that verified them (``rules``; by default this engine's,
    :func:`verification_rules`)."""
    body = {
        "format": 1,
        "files": [{"path": f.path, "wheel_path": f.wheel_path, "sha256": f.sha256, "size": f.size} for f in files],
    }
    header = (
        "# Every file the certified tables need, with its sha256, size and path inside the wheel.\n"
        "# Written by `python -m conformance track` (and by certify). Never edit by hand.\n"
    )
    text = header + str(yaml.safe_dump(body, sort_keys=False, width=120))
    if not verified:
        return text
    records = [
        {"path": v.path, "sha256": v.sha256, "index_sha256": v.index_sha256}
        for v in sorted(verified, key=lambda v: v.path)
    ]
    rules = rules if rules is not None else verification_rules()
    if rules is None:  # (this engine's code cannot be read: nothing to bind a list to, so none is written)
        return text
    return (
        text
        + "# The audit records `track` parsed in full and found valid against their indexes, as `neurobrix tables\n"
        "# verify` does (each with its sha256 and its index's), and the digest of the code that verified them: run\n"
        "# does not read their proofs again while its own code is that code.\n"
        + str(yaml.safe_dump({"verified_rules": rules, "verified": records}, sort_keys=False, width=120))
    )


# the engine's files whose code decides whether an audit record is verified (verified_records, as `tables verify`
# reads one): this module, the schema, each module either imports at its top (the tests hold the list to their
# imports), and the schema's generated validators (_schemas/*.py)
RULE_FILES = ("tables.py", "schema.py", "buckets.py", "dtypes.py", "errors.py")


def record_readers() -> str:
    """The parser that reads every table of this process, as the digest of the verifying code includes it (strict
    round 59): PyYAML's version and libyaml's where PyYAML parses with it (:data:`SAFE_LOADER`), else its pure-Python
    parser. A record is verified as this parser reads it (the values it makes, the texts it takes); another version
    may read the same bytes otherwise (a YAML 1.2 reading of ``0204``, a number or a key it took and refuses, or the
    reverse), so a list verified under another reader is read in full, as under other code. fastjsonschema is not
    named: the generated validators (``_schemas/*.py``, digested) hold the whole check and import only its two
    exception classes from it (a test holds them to that)."""
    if SAFE_LOADER is yaml.SafeLoader:
        return f"PyYAML {yaml.__version__}, pure Python"
    from yaml import _yaml

    return f"PyYAML {yaml.__version__}, libyaml {_yaml.get_version_string()}"


def verification_rules(package: Path | None = None) -> str | None:
    """The digest of the code that verifies audit records (:data:`RULE_FILES` and ``_schemas/*.py`` of the package
    folder ``package``, by default this engine's own, read once a process) and of the parser that reads them
    (:func:`record_readers`, this process's), or None when a file of it cannot be read
    (an install without its sources: no list is then honoured, each record read in full). ``conformance track`` writes
    it beside the records it verified (``verified_rules``); run takes those records as verified only under the same
    digest, so a folder tracked by an engine whose rules were looser (an older neurobrix, a checkout edited since) is
    read in full, as if it listed none, never refused for it (strict round 58). Line ends are read as line feeds (a
    checkout whose files Git wrote with CRLF holds the same code); the files' paths are the package's own, so an
    installed wheel's copy of a checkout's code digests alike."""
    return _own_rules() if package is None else _rules_digest(package)


@functools.cache
def _own_rules() -> str | None:
    return _rules_digest(Path(__file__).resolve().parent)


def _rules_digest(package: Path) -> str | None:
    digest = hashlib.sha256(b"neurobrix verification rules\n")
    digest.update(f"readers\0{record_readers()}\0".encode())
    try:
        names = [*RULE_FILES, *sorted(f"_schemas/{p.name}" for p in (package / "_schemas").glob("*.py"))]
        for name in names:
            data = (package / name).read_bytes().replace(b"\r\n", b"\n")
            digest.update(f"{name}\0{len(data)}\0".encode())
            digest.update(data)
    except OSError:
        return None
    return digest.hexdigest()


def verified_records(
    root: Path, files: list[TrackedFile] | tuple[TrackedFile, ...], only: set[str] | None = None
) -> tuple[list[VerifiedRecord], list[Problem]]:
    """The audit records of ``root`` that ``tables verify`` passes, with ``files`` (the folder as :func:`scan` found
    it) as their tracked list: each record parsed in full against its index and its class (:meth:`Tables.proofs`),
    its index bound to it as ``run`` binds it, its form read in full (:meth:`Tables.index`, no record taken as
    verified); and each record refused, with why (for ``python -m conformance track``, which lists the first in
    TRACKED.yaml and not the others: run reads those in full and refuses them). A folder ``run`` refuses whole (a
    file out of place, a class's ``class.yaml`` it cannot read, two classes one device matches) verifies none. The
    kernel code a table was proven on is not looked at (run compares it at each start; ``tables verify`` too).
    ``only``: the records (paths) to verify, the others passed over (``conformance.track.list_written``)."""
    tracked = tuple(files)
    digests = {f.path: f.sha256 for f in tracked}
    problems = _layout_problems(tracked)
    if problems:
        return [], problems
    classes: dict[str, GPUClass] = {}
    kernels: dict[str, list[str]] = {}
    try:
        for f in tracked:
            folder, name = f.path.split("/")
            if name == CLASS_NAME:
                shown = str(root / f.path)
                classes[folder] = parse_class(read_yaml(root / f.path, shown, f.sha256), shown, folder)
            elif name.endswith(INDEX_SUFFIX):
                kernels.setdefault(folder, []).append(name[: -len(INDEX_SUFFIX)])
        _disjoint_classes(classes)
    except TablesError as exc:
        return [], [Problem("", str(exc))]
    names = {c: tuple(sorted(kernels.get(c, ()))) for c in classes}
    loaded = Tables(
        TablesLocation(root.resolve(), "given"),
        tracked,
        MappingProxyType(classes),
        MappingProxyType(names),
        _digests=digests,
    )
    verified, refused = [], []
    rule = _settings_rule()
    for class_id in sorted(classes):
        for kernel in loaded.kernels(class_id):
            record = f"{class_id}/{kernel}{PROOFS_SUFFIX}"
            if only is not None and record not in only:
                continue
            found = VerifiedRecord(record, digests[record], digests[f"{class_id}/{kernel}{INDEX_SUFFIX}"])
            bytes_verified = (found, digests[f"{class_id}/{CLASS_NAME}"])
            if bytes_verified not in _VERIFIED_BYTES:
                try:
                    loaded.proofs(class_id, kernel)
                    index = loaded.index(class_id, kernel)
                except TablesError as exc:
                    refused.append(Problem(record, str(exc)))
                    continue
                # the setting rule `tables verify` applies (doctor's, run's preflight: strict round 60), so that a
                # record listed as verified is one `tables verify` passes (strict round 61)
                unrunnable = rule({kernel: index}, classes[class_id]) if rule and index is not None else None
                if unrunnable is not None:
                    refused.append(Problem(record, unrunnable))
                    continue
                if len(_VERIFIED_BYTES) >= 256:
                    _VERIFIED_BYTES.clear()
                _VERIFIED_BYTES.add(bytes_verified)
            verified.append(found)
    return verified, refused


def _settings_rule() -> Any:
    """Doctor's rule on a settings index (``doctor._unrunnable``: what run's preflight refuses, whatever the call) where
    this neurobrix's kernels import (torch and triton installed, ``neurobrix.ops`` importable), else None: as
    :func:`verify_all` applies it. The rule's code (doctor, plan, the kernels' specs) is not in the digest
    ``verified_rules`` binds: the list lets run skip a record's proofs, never an index's settings, which run's preflight
    holds to the rule whatever the list says (strict round 61)."""
    from .doctor import _importable, _unrunnable  # (imports this module: read at the call)

    if not (_importable("torch") and _importable("triton")):
        return None
    try:
        from .ops import SPECS  # noqa: F401
    except Exception:  # noqa: BLE001  (a kernel module that will not import: `tables verify` names it; run refuses)
        return None
    return _unrunnable


# the records verified_records verified in this process, by their bytes' sha256, their indexes' and their classes'
# (what the verdict depends on): the same bytes are not parsed again (`track --check` after `track`, ~2 s a class)
_VERIFIED_BYTES: set[tuple[VerifiedRecord, str]] = set()


# the most bytes a table file may have: 64 MiB, 13 times the largest shipped (nvidia-h200's linear record, 4,966,669
# bytes for 814 entries, ~6.1 KB an entry: the bound is ~11,000 entries of one kernel on one class). A file past it is
# refused from its size, before a byte of it is read or hashed: read whole, a 200 MB record took 40 s to load (strict
# round 60). Strict round 61. Round 62 gave each other kind of table file its own, far smaller cap, each with the same
# wide margin over what is shipped: a settings index (~64 bytes an entry; the largest shipped, nvidia-h200's linear,
# 52,415 bytes) 4 MiB, ~65,000 entries, more than the record's cap holds; a class.yaml (720 bytes at most) 64 KiB;
# TRACKED.yaml (10,280 bytes for 34 files and 16 verified records, ~200 bytes each; ~5 KB more a class) 1 MiB, ~5,000
# of them, ~200 classes. The list is read by every command before any other table file: YAML parsed in ~2 s of CPU a
# MiB of a hostile flow sequence (measured), a 64 MiB list was not refused after 600 s (stopped), one of 1 MiB is
# refused in ~2 s, and one past it from its size. A class.yaml is read by every load: neither is read past its cap.
MAX_TABLE_BYTES = 64 * 1024 * 1024
MAX_INDEX_BYTES = 4 * 1024 * 1024
MAX_CLASS_BYTES = 64 * 1024
MAX_LIST_BYTES = 1024 * 1024
# each kind's cap, as its refusal names it: the cap, its size in words, the file's kind, the largest shipped
_CAPS = {
    "record": (MAX_TABLE_BYTES, "64 MiB", "a table file", "under 5 MB"),
    "index": (MAX_INDEX_BYTES, "4 MiB", "a settings index", "under 60 KB"),
    "class": (MAX_CLASS_BYTES, "64 KiB", "a class.yaml", "under 1 KB"),
    "list": (MAX_LIST_BYTES, "1 MiB", "the tracked-file list", "under 11 KB"),
}


def _cap_kind(name: str) -> str:
    """Which cap a table file of this path or name is held to (:data:`_CAPS`): by its name, as the folder names
    each kind (a file of another name is held to the record's, the largest)."""
    base = name.replace("\\", "/").rpartition("/")[2]
    if base == TRACKED_NAME:
        return "list"
    if base == CLASS_NAME:
        return "class"
    return "index" if base.endswith(".json") else "record"


def max_bytes(name: str) -> int:
    """The most bytes the table file ``name`` (its path, or its name) may have."""
    return _CAPS[_cap_kind(name)][0]


def too_large(size: int, name: str = "") -> str:
    """The refusal of a table file of ``size`` bytes, past its kind's cap (:func:`max_bytes` of ``name``; the
    record's, :data:`MAX_TABLE_BYTES`, where none is named), the file's name before it."""
    cap, words, kind, shipped = _CAPS[_cap_kind(name) if name else "record"]
    return f"{size} bytes, past the {cap} bytes ({words}) {kind} may have (the largest shipped is {shipped}): not read"


# (POSIX's flags; a system without them opens as before: the lstat checks before the read still refuse a link or a FIFO)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _read_text(path: Path, shown: str, sha256: str | None, *, own: bool = False) -> str:
    """The file's text, read once: opened without waiting (a FIFO is never read: no read blocks), its kind and size
    taken from the open file before a byte is read (a file past its kind's cap, :func:`max_bytes`, is refused), the
    bytes read held to ``sha256``. ``own``: a link is refused where it stands (TRACKED.yaml, which the folder check does
    not cover)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | (_NOFOLLOW if own else 0))
    except OSError as exc:
        if own and exc.errno == errno.ELOOP:
            raise TablesError(f"{shown}: {_LINKED}") from exc
        raise TablesError(f"{shown}: cannot be read: {exc}") from exc
    try:
        with os.fdopen(fd, "rb") as fh:
            seen = os.fstat(fh.fileno())
            if not S_ISREG(seen.st_mode):
                raise TablesError(f"{shown}: not a regular file, so it cannot be verified")
            cap = max_bytes(path.name)
            if seen.st_size > cap:
                raise TablesError(f"{shown}: {too_large(seen.st_size, path.name)}")
            data = fh.read(cap + 1)
        if len(data) > cap:  # (grown after its size was taken)
            raise TablesError(f"{shown}: {too_large(len(data), path.name)}")
        if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
            raise TablesError(f"{shown}: changed while the tables were being loaded (sha256 differs now)")
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TablesError(f"{shown}: cannot be read: {exc}") from exc


def _not_regular(path: Path) -> str | None:
    """What ``path`` is where it is there and no regular file (``a folder``, ``a FIFO``, ...), else None."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    for test, kind in ((S_ISDIR, "a folder"), (S_ISFIFO, "a FIFO"), (S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return None if S_ISREG(mode) else "a device"


# why TRACKED.yaml that is a link is refused (strict round 61): every other file of a tables folder that is a link is
# refused on its line of the folder report, out of the folder or not (round 60's pins); the list read through a link
# was what the link named, another folder's list or a list no copy of the folder carries
_LINKED = (
    "the tracked-file list is a link, not the folder's own file: a tables folder's files are its own regular files "
    "(copy the list in, or run `python -m conformance track --tables DIR`)"
)


# the most digits an integer of a table may have: Python's default bound on converting a text to an int (4,300),
# held by the engine itself, since the environment lifts Python's (PYTHONINTMAXSTRDIGITS=0, -X int_max_str_digits=0,
# sys.set_int_max_str_digits(0) in a program): unbounded, the conversion costs time quadratic in the digits (400,000
# digits took 3 s, and 7 s to quote in the refusal; a record's 5 MB hang a command for minutes). Strict round 59.
MAX_DIGITS = 4300


def _too_many_digits(count: int) -> str:
    return f"found an integer of {count} digits, past the {MAX_DIGITS} a table's number may have"


def _bounded_int(text: str) -> int:
    """JSON's integer, of :data:`MAX_DIGITS` digits at most whatever Python's own bound is."""
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise ValueError(_too_many_digits(len(text.lstrip("-"))))
    return int(text)


class _UniqueKeys(SAFE_LOADER):  # type: ignore[valid-type,misc]
    """The safe loader refusing a mapping that names a key twice: PyYAML keeps the last silently, so a reader
    of the file (a reviewer, another tool) and the engine could take two different values from it."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):  # 7: [1, 2] in a domain, a date in a provenance: no JSON key
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"found the key {key!r}, which is no text (a table's keys are text, as JSON's)",
                    key_node.start_mark,
                )
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, f"found the key {key!r} twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep)

    def _spelt(self, node: Any, pattern: re.Pattern[str], what: str) -> None:
        if pattern.fullmatch(node.value) is None:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"found {what} {node.value!r} spelt as YAML 1.1 only reads it (octal 0204, hex, _ between digits, "
                "sexagesimal 2:12, yes/no/on/off): a YAML 1.2 reader takes another value; write it as JSON does",
                node.start_mark,
            )

    def construct_yaml_int(self, node: Any) -> Any:
        self._spelt(node, _DECIMAL, "the integer")
        if len(node.value.lstrip("+-")) > MAX_DIGITS:
            raise yaml.constructor.ConstructorError(
                None, None, _too_many_digits(len(node.value.lstrip("+-"))), node.start_mark
            )
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node: Any) -> Any:
        self._spelt(node, _FLOAT, "the number")
        return super().construct_yaml_float(node)

    def construct_yaml_bool(self, node: Any) -> Any:
        self._spelt(node, _BOOL, "the boolean")
        return super().construct_yaml_bool(node)

    def construct_yaml_str(self, node: Any) -> Any:
        value = super().construct_yaml_str(node)
        found = _CONTROL.search(value)
        if found is not None:  # "\e[2J" or "\r" in a double-quoted text: printed by tables show, list and doctor
            raise yaml.constructor.ConstructorError(
                None, None, f"found the control character {found.group()!r} in a text ({_CONTROLS})", node.start_mark
            )
        return value

    def construct_merge(self, node: Any) -> Any:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            "found a merge key (<<), which gives a mapping keys written elsewhere: a table writes every key out",
            node.start_mark,
        )

    def construct_no_json(self, node: Any) -> Any:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"found a {node.tag.rsplit(':', 1)[-1]} ({node.tag}), which is no JSON value: a table holds "
            "text, numbers, true, false, null, lists and mappings only",
            node.start_mark,
        )


# the spellings of YAML 1.2's core schema (JSON's, with .inf and .nan), which PyYAML's YAML 1.1 also reads as such
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)
_BOOL = re.compile(r"true|True|TRUE|false|False|FALSE")
# a record's header as certify writes it: the lines before its top-level "entries:"
_ENTRIES_LINE = re.compile(r"^entries:[ \t]*$", re.M)
_PROVENANCE_TEXTS = ("torch", "triton", "neurobrix", "git_commit", "date", "command")
# the digest of a kernel's code (neurobrix.kernel_source), as the schema's provenance.kernel_source states it
_SOURCE_DIGEST = re.compile(r"[0-9a-f]{16}")
_DOCUMENT_MARK = re.compile(r"^(?:---|\.\.\.|%)", re.M)
# after it, at each line feed, one of: a proof's entry digest as certify's YAML writer puts it (the first key of an
# entry's proof, four spaces in, on the line after "  proof:", quoted when its digits read as a number), an entry's
# first line, or (the empty match) a line at the left margin or one space in that is neither, an "entry:" line
# anywhere else, and the end of the text; a line indented by two spaces or more, the rest of an entry, is passed
# over at its first characters
_ENTRY_START = ("", "", "- domain:")
_RECORD_LINE = re.compile(
    r"\n(?!  (?!  entry: ))(?:(?<=\n  proof:\n)    entry: ('?)([0-9a-f]{16})\1(?=\n)|(- domain:(?=\n))|)"
)


# control characters but tab and line feed (C0, DEL, C1): a terminal escape or a carriage return in a class's
# description or a proof's text rewrites what `tables list`, `tables show` and `doctor` print around it (a "tables
# verified" line); JSON refuses raw C0 in a text, not raw C1 nor an escaped one
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_JSON_CONTROL = re.compile(r"[\x7f-\x9f]|\\u00(?:0[0-8bBcCdDeEfF]|1[0-9a-fA-F]|7[fF]|[89][0-9a-fA-F])")
_CONTROLS = "a terminal escape or a carriage return rewrites what is printed around it; a table's texts hold none"
_UniqueKeys.add_constructor("tag:yaml.org,2002:str", _UniqueKeys.construct_yaml_str)
_UniqueKeys.add_constructor("tag:yaml.org,2002:int", _UniqueKeys.construct_yaml_int)
_UniqueKeys.add_constructor("tag:yaml.org,2002:float", _UniqueKeys.construct_yaml_float)
_UniqueKeys.add_constructor("tag:yaml.org,2002:bool", _UniqueKeys.construct_yaml_bool)
_UniqueKeys.add_constructor("tag:yaml.org,2002:merge", _UniqueKeys.construct_merge)
for _tag in ("timestamp", "binary", "set", "omap", "pairs"):  # a date, bytes, a set: what json.dumps cannot write
    _UniqueKeys.add_constructor(f"tag:yaml.org,2002:{_tag}", _UniqueKeys.construct_no_json)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object hook refusing an object that names a key twice (json keeps the last silently)."""
    found = dict(pairs)
    if len(found) != len(pairs):
        twice = sorted({key for key, _ in pairs if sum(k == key for k, _ in pairs) > 1})
        raise ValueError(f"an object names the key(s) {', '.join(map(repr, twice))} twice")
    return found


def _aliased(root: Any) -> Any:
    """The first node of a composed YAML document reached twice (an alias of an anchored value), or None.

    PyYAML's safe loader has no switch to refuse aliases, and libyaml composes the document in C, so the node graph
    is walked here (a tenth of a second for the largest proofs): an alias hands one object to two places (a reader
    sees ``*name``, the engine a value written elsewhere), to itself (a recursive value: ``tables show --json``
    died in a RecursionError) or to thousands of places from a few lines (a "billion laughs" that a copy of the
    record, as ``tables show --json`` makes, never finishes). The tables' writers never write one."""
    seen: set[int] = set()
    todo = [root]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            return node
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            todo.extend(part for pair in node.value for part in pair)
    return None


def read_yaml(path: Path, shown: str, sha256: str | None = None) -> Any:
    """``yaml.safe_load`` of one file, a key named twice in a mapping refused, and an alias (``*name``: a value
    given again by reference to an anchor, ``&name``); a syntax error names the file and the line. With ``sha256``,
    the bytes parsed are the bytes verified (a file swapped after the folder check is refused)."""
    return _parse_yaml(_read_text(path, shown, sha256), shown)


def _parse_yaml(text: str, shown: str) -> Any:
    """:func:`read_yaml` of a file's text already read (and verified)."""
    try:
        deep = _nested_too_deep(text)
        if deep is not None:
            raise TablesError(
                f"{shown}:{deep.line + 1}:{deep.column + 1}: not valid YAML for a table: nested more than "
                f"{_MAX_DEPTH} levels deep here (a table nests a few; thousands crashed the YAML reader)"
            )
        loader = _UniqueKeys(text)
        try:
            node = loader.get_single_node()
            # YAML writes an alias with "*" and its anchor with "&": a file with neither has none to look for
            twice = _aliased(node) if node is not None and ("*" in text or "&" in text) else None
            if twice is not None:
                mark = twice.start_mark
                raise TablesError(
                    f"{shown}:{mark.line + 1}:{mark.column + 1}: not valid YAML for a table: the value here is given "
                    "again elsewhere through an alias (*name of an &name anchor); a table writes every value out"
                )
            return None if node is None else loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise TablesError(f"{shown}{line}: not valid YAML: {exc.problem or exc}") from exc
    except yaml.reader.ReaderError as exc:  # a character YAML's reader refuses: its message took two lines
        position = exc.position if isinstance(exc.position, int) else 0
        row = text.count("\n", 0, position) + 1
        found = chr(exc.character) if isinstance(exc.character, int) else exc.character
        raise TablesError(
            f"{shown}:{row}: not valid YAML: found the control character {found!r} ({_CONTROLS})"
        ) from exc
    except yaml.YAMLError as exc:
        raise TablesError(f"{shown}: not valid YAML: {exc}") from exc
    except (ValueError, KeyError, RecursionError) as exc:  # a tag's value its constructor cannot read (!!int x)
        raise TablesError(f"{shown}: not valid YAML: {type(exc).__name__}: {exc}") from exc


# the deepest a table's YAML nests (TRACKED.yaml 3 levels, a record's rejected candidates 6), and the depth below
# which libyaml's composer, which recurses in C once a level (~400 bytes of the C stack each), is let compose a text
# unscanned
_MAX_DEPTH = 100
_COMPOSE_UNSCANNED = 4096


def _nested_too_deep(text: str) -> Any:
    """Where ``text`` nests past :data:`_MAX_DEPTH` collections (a YAML mark), or None. libyaml composes a document
    recursively in C: a file nested ~25,000 levels deep (50 KB of ``[`` or of ``- ``) overflowed the C stack and the
    interpreter died of a segmentation fault, no message, in every command that read it (TRACKED.yaml at each load;
    strict round 58). The nesting is bounded from the text first: flow collections by their opening brackets, block
    collections by the columns they start at (each level's indentation exceeds its parent's, an indentless sequence
    adds one), so ``[``'s and ``{``'s count plus twice the longest line's length (``\n``-split: YAML's other line
    breaks only lengthen it) bounds the depth (a shipped record's bound: under 1,000; ~20 ms for the largest, 5 MB,
    which is parsed in ~2 s). Past :data:`_COMPOSE_UNSCANNED`, libyaml's events (its parser keeps its stack on the
    heap) are counted up to the first level too deep."""
    bound = text.count("[") + text.count("{") + 2 * (max(map(len, text.split("\n"))) + 2)
    if bound <= _COMPOSE_UNSCANNED:
        return None
    depth = 0
    try:
        for event in yaml.parse(text, Loader=SAFE_LOADER):
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > _MAX_DEPTH:
                    return event.start_mark
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
    except yaml.MarkedYAMLError as exc:
        # PyYAML 6.0.4's libyaml stops at its own limit (1,000 levels), which its scanner's look-ahead for a simple key
        # (1,024 characters) reaches before the parser hands out the 101st level: the same refusal, whichever PyYAML
        if "nesting depth" in str(exc.problem) and exc.problem_mark is not None:
            return exc.problem_mark
        return None  # another syntax error: the parse proper names it
    return None


def read_json(path: Path, shown: str, sha256: str | None = None) -> Any:
    """``json.loads`` of one file (the settings indexes), a key named twice in an object refused; a syntax
    error names the file and the line."""
    text = _read_text(path, shown, sha256)
    found = _JSON_CONTROL.search(text)
    if found is not None:
        line = text.count("\n", 0, found.start()) + 1
        raise TablesError(
            f"{shown}:{line}: not valid JSON for a table: found the control character {found.group()!r} "
            f"in a text ({_CONTROLS})"
        )
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        raise TablesError(f"{shown}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from exc
    except (ValueError, RecursionError) as exc:  # a number of over 4,300 digits, arrays nested too deep
        raise TablesError(f"{shown}: not valid JSON: {exc}") from exc


# the line of TRACKED.yaml that `track` writes with the digest of the code (and reader) that verified its records
_RULES_LINE = re.compile(r"^verified_rules: ([0-9a-f]{64})$", re.MULTILINE)


def _release_bound(root: Path) -> bool:
    """Whether an installed wheel's records (``root``, its TRACKED.yaml pinned by the wheel's RECORD, so in the form
    `track` wrote it) were verified by this engine's code under this process's reader (:func:`verification_rules`):
    the release gate's `tables verify` and `track` read them with the PyYAML and libyaml of the build; a user who
    upgrades PyYAML reads the same bytes with another parser, which no check ran. Not bound: the records are read in
    full as a checkout's are (slower, never refused for it). Strict round 59."""
    own = verification_rules()
    try:
        found = _RULES_LINE.search((root / TRACKED_NAME).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False
    return own is not None and found is not None and found.group(1) == own


def read_tracked(root: Path, origin: str | None = None) -> tuple[TrackedFile, ...]:
    return _read_tracked(root, origin)[0]


def read_verified(root: Path) -> tuple[VerifiedRecord, ...]:
    """The records ``root``'s TRACKED.yaml lists as verified (:func:`verified_records`) by this engine's rules (none
    where the list was written under another digest of the verifying code, or none: :func:`verification_rules`)."""
    return _read_tracked(root, None)[1]


def read_listed(root: Path) -> tuple[str | None, tuple[VerifiedRecord, ...]]:
    """What ``root``'s TRACKED.yaml lists as verified, whatever code verified it: the digest of that code (None: the
    list names none, the form before strict round 58) and the records."""
    data = read_yaml(root / TRACKED_NAME, str(root / TRACKED_NAME))
    parse_tracked(data, str(root / TRACKED_NAME))
    rules = data.get("verified_rules")
    return (rules if isinstance(rules, str) else None), parse_verified(data, str(root / TRACKED_NAME))


def _read_tracked(root: Path, origin: str | None) -> tuple[tuple[TrackedFile, ...], tuple[VerifiedRecord, ...]]:
    path = root / TRACKED_NAME
    if path.is_symlink():  # (a link to a file, out of the folder or in it, or to nothing)
        raise TablesError(f"{path}: {_LINKED}")
    kind = _not_regular(path)
    if kind is not None:  # (never opened: a FIFO's read would wait for a writer)
        raise TablesError(
            f"{path}: the tracked-file list is {kind}, not a regular file, so nothing in {root} can be trusted"
        )
    if not path.is_file():
        fix = (  # a folder the user named: its own mistake, not the install's
            f"{ENV_VAR}={root} names no tables folder: point it at one (it holds {TRACKED_NAME}, which "
            "`python -m conformance track --tables DIR` writes for a copy), or unset it for the installed package's "
            "tables."
            if origin == ENV_VAR
            else "Reinstall neurobrix, or in a source checkout run `python -m conformance track`."
        )
        raise TablesError(f"{path}: the tracked-file list is missing, so nothing in {root} can be trusted. {fix}")
    data = _parse_yaml(_read_text(path, str(path), None, own=True), str(path))
    tracked, verified = parse_tracked(data, str(path)), parse_verified(data, str(path))
    # the records are taken as verified under the code that verified them only: a list another engine wrote (its rules
    # looser, or tighter) is read as none, each record read in full (slower, never less strict; never refused for it).
    # An installed package's list is not honoured, its code not hashed: a wheel's records are not read again whatever
    # the list says (Tables._release, pinned by its RECORD), and a package no wheel installed has each read in full
    verified = () if verification_rules() is None else verified  # code that cannot be read: no list, digest or none
    if verified and (origin == "installed package" or data.get("verified_rules") != verification_rules()):
        verified = ()
    return tracked, verified


def check_files(root: Path, tracked: tuple[TrackedFile, ...]) -> list[Problem]:
    """Compare the folder with the tracked list: every byte, nothing missing, nothing extra."""
    problems: list[Problem] = []
    listed = {f.path for f in tracked}
    for f in tracked:
        path = root / f.path
        if f.wheel_path != f"{WHEEL_DIR}/{f.path}":
            problems.append(Problem(f.path, f"wheel path {f.wheel_path!r} should be {WHEEL_DIR}/{f.path}"))
        try:
            if path.is_symlink() or not path.is_file():
                problems.append(Problem(f.path, "tracked but missing (or not a regular file)"))
                continue
            size = path.stat().st_size
            if size > max_bytes(f.path):  # (from its size alone: never hashed)
                problems.append(Problem(f.path, too_large(size, f.path)))
            elif size != f.size:
                problems.append(Problem(f.path, f"size {size} bytes, tracked as {f.size}: the file was altered"))
            elif sha256_of(path) != f.sha256:
                problems.append(Problem(f.path, "sha256 differs from the tracked list: the file was altered"))
        except OSError as exc:  # a file (or its folder) made unreadable: a PermissionError out of every command
            problems.append(Problem(f.path, f"cannot be read ({exc.strerror or exc}), so it cannot be verified"))
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        # anything but a real folder counts: a file, a link, and a FIFO, socket or device node as much
        if rel != TRACKED_NAME and rel not in listed and (path.is_symlink() or not path.is_dir()):
            problems.append(Problem(rel, "present but not in the tracked list (untracked table file)"))
    return problems


def load(root: Path | None = None) -> Tables:
    """Locate (unless ``root`` is given), verify and read the tables; cached per folder and state of its
    tracked-file list (certify rewrites the list with every table it writes, so a new table is seen)."""
    location = TablesLocation(root.resolve(), "given") if root is not None else locate()
    return _load(location, _state(location.root))


def _state(root: Path) -> tuple[object, ...] | None:
    """What tells the folder changed since it was verified: the tracked-file list's times, size and inode, and every
    table file's beside it (each class folder's files, by name). The change time too: a copy that writes the files in
    place and keeps their times (``cp -p``, ``rsync --inplace -t``, from archives of one fixed time) keeps the inode,
    the size (another stack's version of the same length) and the modification time, and a loaded model went on with
    tables a fresh process refuses; no copy can set the change time. Each table file's own: one edited in place
    without its list (damage a fresh process refuses, exit 3) left a loaded model generating with the settings read
    before (strict round 56; a stat of each of the class folders' files, ~0.1-0.2 ms a generation)."""
    try:
        stat = (root / TRACKED_NAME).stat()
        files: list[tuple[str, int, int, int, int]] = []
        with os.scandir(root) as top:
            folders = sorted(entry.path for entry in top if entry.is_dir(follow_symlinks=False))
        for folder in folders:
            with os.scandir(folder) as inside:
                for entry in inside:
                    seen = entry.stat(follow_symlinks=False)
                    files.append((entry.path, seen.st_mtime_ns, seen.st_size, seen.st_ino, seen.st_ctime_ns))
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size, stat.st_ino, stat.st_ctime_ns, *sorted(files))


def was_loaded(tables: Any) -> bool:
    """Whether :func:`load` gave ``tables`` (verified then; perhaps changed on disk since), not a :class:`Tables` a
    program built or replaced itself (``Tables(...)``, ``dataclasses.replace``), whose contents nothing verified."""
    made = _MADE.get(id(tables))
    return made is not None and made[0]() is tables


def is_loaded(tables: Any) -> bool:
    """Whether ``tables`` is what :func:`load` gives for its folder now: verified against its TRACKED.yaml as it
    stands (its state unchanged since), not a :class:`Tables` a program built or replaced itself, whose classes,
    stacks and settings nothing verified. Held by what load made, not by load's cache: tables a long-lived program
    loaded before eight other folders or states were loaded were taken for a program's own."""
    return was_loaded(tables) and _MADE[id(tables)][1] == _state(tables.location.root)


def current(tables: Tables) -> Tables:
    """The tables :func:`load` gives now where ``tables`` came from: the same folder when it was given
    (``load(root)``), else the folder located now (NEUROBRIX_TABLES, which a program may have changed since)."""
    return load(tables.location.root) if tables.location.origin == "given" else load()


def clear_cache() -> None:
    _load.cache_clear()
    _MADE.clear()  # every Tables loaded before is verified again, as a fresh cache would
    _locate.cache_clear()


def _layout_problems(tracked: tuple[TrackedFile, ...]) -> list[Problem]:
    """Every file is a class folder's class.yaml, a kernel's index or its proofs; each index has its proofs."""
    problems = []
    names = {f.path for f in tracked}
    for f in tracked:
        parts = f.path.split("/")
        if len(parts) != 2 or not (parts[1] == CLASS_NAME or kernel_of(parts[1])):
            problems.append(
                Problem(
                    f.path,
                    f"not a {CLASS_NAME}, a <kernel>{INDEX_SUFFIX} or a <kernel>{PROOFS_SUFFIX} of a class folder",
                )
            )
            continue
        folder, name = parts
        kernel = kernel_of(name)
        if kernel is not None:
            if f"{folder}/{CLASS_NAME}" not in names:
                problems.append(Problem(f.path, f"its folder has no {CLASS_NAME} naming the GPU class"))
            other = f"{folder}/{kernel}{PROOFS_SUFFIX if name.endswith(INDEX_SUFFIX) else INDEX_SUFFIX}"
            if other not in names:
                problems.append(
                    Problem(
                        f.path, f"has no {other.split('/')[1]} beside it: a settings index and its proofs ship together"
                    )
                )
    return problems


def verify_all(tables: Tables) -> list[Problem]:
    """Read and validate every settings index and every audit record (and that each record holds exactly its
    index's entries and stack): what ``tables verify`` adds to the hashes. ``run`` reads indexes only."""
    from .code_rule import foreign_writes
    from .doctor import _importable, _unrunnable  # (imports this module: read at the call)
    from .kernel_source import AWAITING_REPROOF, declared_kernels, kernel_source

    # code of this neurobrix that changes code another module owns (an op module rebinding another's launcher, a
    # module outside neurobrix/ops patching the ops, their Triton kernels or the triton and torch functions they call):
    # the kernels it runs are not those the tables' digests name, though each table reads "bound" (no table's file)
    problems = [
        Problem(
            "",
            f"{line}; a module of neurobrix changes only what it defines (neurobrix.code_rule), so that the "
            "kernels run are the code the tables were proven on",
        )
        for line in foreign_writes()
    ]
    try:
        ours, unreadable = declared_kernels(), None
    except UsageError as exc:  # code the sources cannot bind (neurobrix.kernel_source): listed for every table
        ours, unreadable = frozenset(), f"its kernel code cannot be read: {exc}"
    # doctor's rule reads this neurobrix's kernels (neurobrix.ops, which imports torch and triton): applied where they
    # import; the gate's install smoke installs neither, and run's preflight applies the rule wherever a model runs
    # (code the sources cannot bind is listed per table below instead: importing it is not tried)
    rule = None
    if unreadable is None and _importable("torch") and _importable("triton"):
        try:
            from .ops import SPECS  # noqa: F401  (a kernel module shadowed or rebound is named here, on one line)

            rule = _unrunnable
        except Exception as exc:  # noqa: BLE001  (any error of a kernel module's import: a problem, listed)
            problems.append(Problem("neurobrix/ops", "its kernels cannot be imported: " + " ".join(str(exc).split())))
    for class_id in sorted(tables.classes):
        for kernel in tables.kernels(class_id):
            try:
                tables.proofs(class_id, kernel)
                index = tables.index(class_id, kernel)
            except TablesError as exc:
                problems.append(Problem(f"{class_id}/{kernel}", str(exc)))
                continue
            # proven on the code of this neurobrix's kernel (neurobrix.stack.kernel_source), which run requires: a
            # release whose tables were proven on other code than it ships is refused here, by the gate's smoke too
            # (a retired kernel's table launches nothing: no code here to bind it to)
            if unreadable is not None:
                problems.append(Problem(f"{class_id}/{kernel}{INDEX_SUFFIX}", unreadable))
                continue
            if kernel not in ours:
                continue
            # a setting this neurobrix's kernel cannot run as certified (a block of 64.0, true or 63, 3 warps): run's
            # preflight refuses it (exit 3) and doctor fails it, and this said "tables verified" (strict round 60)
            unrunnable = rule({kernel: index}, tables.classes[class_id]) if rule and index is not None else None
            if index is not None and unrunnable is not None:
                said = unrunnable.removeprefix(f"{index.path}: ")
                problems.append(Problem(f"{class_id}/{kernel}{INDEX_SUFFIX}", said))
            try:
                now = kernel_source(kernel)
            except UsageError as exc:  # code the sources cannot bind (neurobrix.kernel_source): a problem, listed
                problems.append(Problem(f"{class_id}/{kernel}{INDEX_SUFFIX}", f"its kernel code cannot be read: {exc}"))
                continue
            recorded = index.stack.get("source") if index is not None else None
            if recorded is None and (class_id, kernel) in AWAITING_REPROOF:  # run says so (stack.sources_pending)
                continue
            if recorded != now:
                proven = f"code {recorded}" if recorded else "no recorded kernel code"
                problems.append(
                    Problem(
                        f"{class_id}/{kernel}{INDEX_SUFFIX}",
                        f"proven on {proven}, not on this neurobrix's {kernel} ({now}): run refuses it; prove it on "
                        f"this code: python -m conformance check --class {class_id} --kernel {kernel} --record",
                    )
                )
    return problems


def awaiting_reproof(tables: Tables) -> list[str]:
    """The tables ``verify_all`` passes while they await their re-proof on this code (``class/kernel``): listed in
    AWAITING_REPROOF and bound to no kernel code (run launches them with a note, ``stack.sources_pending``)."""
    from .kernel_source import AWAITING_REPROOF

    return [
        f"{class_id}/{kernel}"
        for class_id, kernel in sorted(AWAITING_REPROOF)
        if class_id in tables.classes
        and kernel in tables.kernels(class_id)
        and (index := tables.index(class_id, kernel)) is not None
        and index.stack.get("source") is None
    ]


def kernel_code(tables: Tables, class_id: str, kernel: str) -> str:
    """What a kernel table's proofs are bound to, against this neurobrix's code of that kernel, in words (``tables
    show``): the digest it was proven on and whether ``run`` takes it."""
    from .kernel_source import AWAITING_REPROOF, declared_kernels, kernel_source

    index = tables.index(class_id, kernel)
    recorded = index.stack.get("source") if index is not None else None
    try:
        if kernel not in declared_kernels():
            return f"{recorded or 'none recorded'} (this neurobrix has no {kernel} kernel: the table launches nothing)"
        now = kernel_source(kernel)
    except UsageError as exc:
        return f"{recorded or 'none recorded'} (this neurobrix's kernel code cannot be read: {exc})"
    if recorded == now:
        return f"{recorded}, this neurobrix's {kernel} code"
    if recorded is None and (class_id, kernel) in AWAITING_REPROOF:
        return (
            f"none recorded: proven before proofs were bound to kernel code, awaiting its re-proof on this code "
            f"({now}; run launches it with a note): python -m conformance check --class {class_id} --kernel {kernel} "
            "--record"
        )
    return (
        f"{recorded or 'none recorded'}, not this neurobrix's {kernel} code ({now}): run refuses it; "
        f"python -m conformance check --class {class_id} --kernel {kernel} --record"
    )


def _disjoint_classes(classes: dict[str, GPUClass]) -> None:
    """Refuse two classes one device can match (every fact equal, their device_name patterns meeting): such a
    device would be refused only on the machine itself (exit 5), when `tables verify` had passed the tables; which
    class's settings it should run, nothing says."""
    ids = sorted(classes)
    for n, first in enumerate(ids):
        for second in ids[n + 1 :]:
            if classes_meet(classes[first].match, classes[second].match):
                a, b = classes[first], classes[second]
                raise TablesError(
                    f"{b.path}: field 'match': a device can match both {a.path} "
                    f"(device_name {a.match.device_name!r}) and this class (device_name {b.match.device_name!r}), "
                    "every other fact being the same; a device belongs to one class: make their match rules disjoint"
                )


# id -> (a weak reference to each Tables _load made, the state of the TRACKED.yaml it was verified against)
_MADE: dict[int, tuple[weakref.ref[Tables], tuple[object, ...] | None]] = {}


def _made(tables: Tables, state: tuple[object, ...] | None) -> Tables:
    key = id(tables)
    _MADE[key] = (weakref.ref(tables, lambda _: _MADE.pop(key, None)), state)
    return tables


# what to do about tables that do not match their list: every command that finds it says it (`run`, `doctor`,
# `tables verify`; the last two named the file and nothing else, walk-through round 41)
MISMATCH_FIX = (
    "Reinstall neurobrix; in a source checkout, re-certify or run `python -m conformance track` after checking the "
    "change."
)


@functools.lru_cache(maxsize=8)
def _load(location: TablesLocation, state: tuple[object, ...] | None) -> Tables:
    root = location.root
    release = False
    if location.origin == "installed package" and (root / TRACKED_NAME).is_file():  # (missing: said below)
        records = _wheel_records(root.parent)
        problem = installed_tables_problem(root, records)
        if problem:
            raise TablesError(problem)
        release = bool(records)  # (none: no wheel installed it, an editable install)
    tracked, verified = _read_tracked(root, location.origin)
    # a wheel's records verified by other code or under another YAML reader than this process's: read in full
    release = release and _release_bound(root)
    problems = check_files(root, tracked) + _layout_problems(tracked)
    if problems:
        raise TablesError(
            f"the certified tables in {root} ({location.origin}) do not match {TRACKED_NAME}:",
            *(f"  {root / p.path}: {p.message}" for p in problems),
            MISMATCH_FIX,
        )
    classes: dict[str, GPUClass] = {}
    kernels: dict[str, list[str]] = {}
    digests = {f.path: f.sha256 for f in tracked}
    for f in tracked:
        folder, name = f.path.split("/")
        if name == CLASS_NAME:
            shown = str(root / f.path)
            classes[folder] = parse_class(read_yaml(root / f.path, shown, f.sha256), shown, folder)
        elif name.endswith(INDEX_SUFFIX):
            kernels.setdefault(folder, []).append(name[: -len(INDEX_SUFFIX)])
    _disjoint_classes(classes)
    names = {c: tuple(sorted(kernels.get(c, ()))) for c in classes}
    loaded = Tables(
        location,
        tracked,
        MappingProxyType(classes),
        MappingProxyType(names),
        _digests=digests,
        _release=release,
        _verified=MappingProxyType({v.path: (v.sha256, v.index_sha256) for v in verified}),
    )
    return _made(loaded, state)


__all__ = [
    "CLASS_FORMAT",
    "CLASS_NAME",
    "ENV_VAR",
    "Problem",
    "Tables",
    "TablesLocation",
    "TRACKED_NAME",
    "WHEEL_DIR",
    "certify_command",
    "check_files",
    "class_path",
    "clear_cache",
    "current",
    "verify_all",
    "record_readers",
    "verification_rules",
    "verified_records",
    "awaiting_reproof",
    "kernel_code",
    "index_path",
    "installed_tables_problem",
    "is_loaded",
    "kernel_of",
    "load",
    "locate",
    "proofs_path",
    "read_json",
    "read_tracked",
    "read_listed",
    "read_verified",
    "read_yaml",
    "render_tracked",
    "scan",
    "sha256_of",
    "was_loaded",
]
