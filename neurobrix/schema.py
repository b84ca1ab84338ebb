"""The certified-table file formats, written down once: parsing with field-by-field validation.

Three files live under a tables folder (see README, "Table format"):

``TRACKED.yaml``            every file the tables need, with sha256, size and its path in the wheel
``<class>/class.yaml``      a GPU class's identity: the device facts it matches
``<class>/<kernel>.yaml``   certified settings of one kernel on that class: provenance and entries,
                            each entry a domain (dtypes and an inclusive range per key dimension),
                            a config (the kernel's meta-parameters) and its proof

Every reader here takes data already loaded with ``yaml.safe_load`` and either returns frozen
objects or raises :class:`~neurobrix.errors.TablesError` naming the file and the field.
Nothing here needs torch or a GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from .errors import TablesError

FORMAT_VERSION = 1          # the tracked-file list and class.yaml
KERNEL_FORMAT = 2           # kernel tables; format 1 (rejected candidates as mappings) is still read
DTYPES = ("fp32", "fp16", "bf16")
BACKENDS = ("cuda", "hip", "interpreter")
REJECT_REASONS = ("wrong_result", "compile_failed", "out_of_resources", "slower", "crashed")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_DIM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")

ConfigValue = int | float | bool | str


@dataclass(frozen=True)
class TrackedFile:
    """One file the tables need: ``path`` relative to the tables folder, ``wheel_path`` inside the wheel."""

    path: str
    wheel_path: str
    sha256: str
    size: int


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


@dataclass(frozen=True)
class Domain:
    """Dtypes and, per key dimension, an inclusive range; ``hi`` None means unbounded above."""

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

    def describe(self) -> str:
        dims = ", ".join(
            f"{dim}={lo}" if lo == hi else f"{dim}={lo}..{'' if hi is None else hi}"
            for dim, lo, hi in self.ranges
        )
        return f"{'/'.join(self.dtypes)} {dims}"


@dataclass(frozen=True)
class Rejected:
    config: Mapping[str, ConfigValue]
    reason: str
    detail: str

    def render(self) -> str:
        """The one-line form kernel tables store (format 2): ``reason: K=V K=V ...: detail``.

        Values must read back as themselves (identifiers, numbers, booleans); anything else is refused.
        """
        line = f"{self.reason}: {' '.join(f'{k}={_value_text(v)}' for k, v in self.config.items())}: {self.detail}"
        back = _REJECTED_LINE.match(line)
        if back is None or _rejected_line(line, "", "") != self:
            raise ValueError(f"rejected candidate {dict(self.config)} ({self.reason}) cannot be written as one line")
        return line


def _value_text(value: ConfigValue) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


_CONFIG_VALUE = re.compile(r"^[A-Za-z0-9_.+-]+$")


def _parse_value(text: str) -> ConfigValue:
    if text.isdigit():
        return int(text)
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


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


@dataclass(frozen=True)
class Entry:
    domain: Domain
    config: Mapping[str, ConfigValue]
    proof: Proof


@dataclass(frozen=True)
class KernelTable:
    kernel: str
    class_id: str
    key: tuple[str, ...]
    provenance: Mapping[str, Any]
    entries: tuple[Entry, ...]
    path: str

    def lookup(self, dtype: str, shape: Mapping[str, int]) -> Entry | None:
        """The one entry whose domain contains the call exactly, or None. Never the nearest."""
        for entry in self.entries:
            if entry.domain.contains(dtype, shape):
                return entry
        return None


class _Fields:
    """Reads one YAML mapping, naming the file and the field in every complaint."""

    def __init__(self, data: Any, file: str, where: str) -> None:
        self.file, self.where = file, where
        if not isinstance(data, dict):
            self.fail(f"expected a mapping, got {_kind(data)}")
        self.data: dict[str, Any] = data

    def fail(self, message: str, field: str | None = None) -> None:
        name = f"{self.where}.{field}" if field and self.where else field or self.where or "(top level)"
        raise TablesError(f"{self.file}: field '{name}': {message}")

    def only(self, *allowed: str) -> None:
        extra = sorted(str(k) for k in self.data if k not in allowed)
        if extra:
            self.fail(f"unknown field(s) {', '.join(extra)}; allowed: {', '.join(allowed)}")

    def get(self, field: str, kind: type | tuple[type, ...], *, optional: bool = False) -> Any:
        if field not in self.data:
            if optional:
                return None
            self.fail("is required but missing", field)
        value = self.data[field]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        # bool is an int in Python; a YAML `true` must not pass for a number.
        if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
            names = " or ".join(k.__name__ for k in kinds)
            self.fail(f"expected {names}, got {_kind(value)} {value!r}", field)
        return value

    def text(self, field: str, *, optional: bool = False) -> str:
        value = self.get(field, str, optional=optional)
        if value is not None and not value.strip():
            self.fail("must not be empty", field)
        return value

    def integer(self, field: str, minimum: int) -> int:
        value = self.get(field, int)
        if value < minimum:
            self.fail(f"must be >= {minimum}, got {value}", field)
        return value

    def number(self, field: str, minimum: float, maximum: float | None = None) -> float:
        value = float(self.get(field, (int, float)))
        if value != value or value < minimum or (maximum is not None and value > maximum):
            span = f"in [{minimum}, {maximum}]" if maximum is not None else f">= {minimum}"
            self.fail(f"must be {span}, got {value}", field)
        return value

    def sub(self, field: str) -> _Fields:
        return _Fields(self.get(field, dict), self.file, f"{self.where}.{field}" if self.where else field)


def _kind(value: Any) -> str:
    return {dict: "mapping", list: "list", str: "text", type(None): "nothing"}.get(type(value), type(value).__name__)


def _format(fields: _Fields, known: tuple[int, ...] = (FORMAT_VERSION,)) -> int:
    version = fields.get("format", int)
    if version not in known:
        raise TablesError(
            f"{fields.file}: unknown table format version {version}; this neurobrix reads format "
            f"{' or '.join(map(str, known))}. Install the neurobrix release these tables were certified for, "
            "or re-certify."
        )
    return version


def parse_tracked(data: Any, file: str) -> tuple[TrackedFile, ...]:
    top = _Fields(data, file, "")
    top.only("format", "files")
    _format(top)
    items = top.get("files", list)
    files: list[TrackedFile] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        f = _Fields(item, file, f"files[{i}]")
        f.only("path", "wheel_path", "sha256", "size")
        path = f.text("path")
        if path.startswith("/") or ".." in path.split("/") or "\\" in path:
            f.fail(f"unsafe path {path!r}", "path")
        if path in seen:
            f.fail(f"{path} is listed twice", "path")
        seen.add(path)
        sha = f.text("sha256")
        if not _SHA256.match(sha):
            f.fail("expected 64 lowercase hex digits", "sha256")
        files.append(TrackedFile(path, f.text("wheel_path"), sha, f.integer("size", 0)))
    return tuple(files)


def parse_class(data: Any, file: str, folder: str) -> GPUClass:
    top = _Fields(data, file, "")
    top.only("format", "class", "description", "match", "note")
    _format(top)
    class_id = top.text("class")
    if class_id != folder:
        top.fail(f"says {class_id!r} but the file lives in folder {folder!r}", "class")
    m = top.sub("match")
    backend = m.text("backend")
    if backend not in BACKENDS:
        m.fail(f"must be one of {', '.join(BACKENDS)}, got {backend!r}", "backend")
    if backend == "interpreter":
        m.only("backend")
        match = ClassMatch(backend)
    else:
        m.only("backend", "vendor", "device_name", "compute_capability", "multiprocessor_count")
        cc = m.get("compute_capability", list)
        if len(cc) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in cc):
            m.fail(f"expected [major, minor], got {cc!r}", "compute_capability")
        match = ClassMatch(
            backend,
            vendor=m.text("vendor"),
            device_name=m.text("device_name"),
            compute_capability=(cc[0], cc[1]),
            multiprocessor_count=m.integer("multiprocessor_count", 1),
        )
    return GPUClass(class_id, top.text("description"), match, top.text("note", optional=True), file)


def _config(data: Any, file: str, where: str) -> dict[str, ConfigValue]:
    f = _Fields(data, file, where)
    if not f.data:
        f.fail("must name at least one meta-parameter")
    for name in f.data:
        if not isinstance(name, str) or not _DIM.match(name):
            f.fail(f"meta-parameter name {name!r} is not an identifier")
        f.get(name, (int, float, bool, str))
    return dict(f.data)


def _domain(data: Any, file: str, where: str, key: tuple[str, ...]) -> Domain:
    f = _Fields(data, file, where)
    f.only("dtypes", *key)
    dtypes = f.get("dtypes", list)
    if not dtypes or len(set(map(str, dtypes))) != len(dtypes) or any(d not in DTYPES for d in dtypes):
        f.fail(f"expected a non-empty list of distinct dtypes from {', '.join(DTYPES)}, got {dtypes!r}", "dtypes")
    ranges = []
    for dim in key:
        bounds = f.get(dim, list)
        ok = len(bounds) == 2 and isinstance(bounds[0], int) and not isinstance(bounds[0], bool)
        ok = ok and (bounds[1] is None or isinstance(bounds[1], int) and not isinstance(bounds[1], bool))
        if not ok:
            f.fail(f"expected [lo, hi] (integers, hi may be null for unbounded), got {bounds!r}", dim)
        lo, hi = bounds
        if lo < 1 or (hi is not None and hi < lo):
            f.fail(f"expected 1 <= lo <= hi, got [{lo}, {hi}]", dim)
        ranges.append((dim, lo, hi))
    return Domain(tuple(dtypes), tuple(ranges))


def _proof(data: Any, file: str, where: str, version: int = KERNEL_FORMAT) -> Proof:
    f = _Fields(data, file, where)
    f.only(
        "examples", "worst_error_ratio", "bound", "reference", "time_best_us", "time_median_us",
        "candidates_tried", "rejected",
    )
    rejected = []
    for i, item in enumerate(f.get("rejected", list)):
        at = f"{where}.rejected[{i}]"
        if version >= 2:
            rejected.append(_rejected_line(item, file, at))
            continue
        r = _Fields(item, file, at)
        r.only("config", "reason", "detail")
        reason = r.text("reason")
        if reason not in REJECT_REASONS:
            r.fail(f"must be one of {', '.join(REJECT_REASONS)}, got {reason!r}", "reason")
        rejected.append(Rejected(_config(r.get("config", dict), file, f"{r.where}.config"), reason, r.text("detail")))
    return Proof(
        examples=f.integer("examples", 1),
        # A ratio above 1 means the entry failed its own proof: such an entry is never loaded.
        worst_error_ratio=f.number("worst_error_ratio", 0.0, 1.0),
        bound=f.text("bound"),
        reference=f.text("reference"),
        time_best_us=f.number("time_best_us", 0.0),
        time_median_us=f.number("time_median_us", 0.0),
        candidates_tried=f.integer("candidates_tried", 1),
        rejected=tuple(rejected),
    )


_REJECTED_LINE = re.compile(r"^(%s): ((?:[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.+-]+ )*[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.+-]+): "
                            r"(.*)$" % "|".join(REJECT_REASONS), re.DOTALL)


def _rejected_line(item: Any, file: str, where: str) -> Rejected:
    """``reason: K=V K=V ...: detail`` (format 2: one line per rejected candidate keeps big tables quick to load)."""
    if not isinstance(item, str):
        raise TablesError(f"{file}: {where}: expected a line 'reason: K=V ...: detail', got {_kind(item)}")
    match = _REJECTED_LINE.match(item)
    if match is None:
        reason = item.partition(": ")[0]
        if reason not in REJECT_REASONS:
            raise TablesError(f"{file}: {where}: reason must be one of {', '.join(REJECT_REASONS)}, got {reason!r}")
        raise TablesError(f"{file}: {where}: expected 'reason: K=V K=V ...: detail', got {item!r}")
    reason, settings, detail = match.groups()
    config = dict(pair.split("=", 1) for pair in settings.split(" "))
    if len(config) != settings.count("="):
        raise TablesError(f"{file}: {where}: a meta-parameter is named twice in {item!r}")
    return Rejected({k: _parse_value(v) for k, v in config.items()}, reason, detail)


def _disjoint(entries: list[Entry], file: str) -> None:
    """Refuse overlapping domains; a sweep over the first dimension compares only entries whose ranges there meet."""
    order = sorted(range(len(entries)), key=lambda i: entries[i].domain.ranges[0][1])
    active: list[int] = []
    for i in order:
        lo = entries[i].domain.ranges[0][1]
        active = [j for j in active if entries[j].domain.ranges[0][2] is None or entries[j].domain.ranges[0][2] >= lo]
        for j in active:
            if entries[i].domain.overlaps(entries[j].domain):
                a, b = sorted((i, j))
                raise TablesError(
                    f"{file}: entries[{a}] ({entries[a].domain.describe()}) and entries[{b}] "
                    f"({entries[b].domain.describe()}) overlap; domains in one table must be disjoint so that "
                    "lookup is exact. Re-certify this table."
                )
        active.append(i)


def parse_kernel_table(data: Any, file: str, folder: str, stem: str) -> KernelTable:
    top = _Fields(data, file, "")
    top.only("format", "kernel", "class", "key", "provenance", "entries")
    version = _format(top, (1, KERNEL_FORMAT))
    kernel = top.text("kernel")
    if kernel != stem:
        top.fail(f"says {kernel!r} but the file is named {stem}.yaml", "kernel")
    class_id = top.text("class")
    if class_id != folder:
        top.fail(f"says {class_id!r} but the file lives in folder {folder!r}", "class")
    key = top.get("key", list)
    if not key or len(set(key)) != len(key) or not all(isinstance(k, str) and _DIM.match(k) for k in key):
        top.fail(f"expected a non-empty list of distinct dimension names, got {key!r}", "key")
    if "dtypes" in key:
        top.fail("'dtypes' is reserved and cannot be a key dimension", "key")
    key = tuple(key)
    prov = top.sub("provenance")
    for field in ("torch", "triton", "neurobrix", "git_commit", "date", "command"):
        prov.text(field)
    prov.get("device", dict)
    entries = []
    for i, item in enumerate(top.get("entries", list)):
        e = _Fields(item, file, f"entries[{i}]")
        e.only("domain", "config", "proof")
        entries.append(
            Entry(
                _domain(e.get("domain", dict), file, f"entries[{i}].domain", key),
                _config(e.get("config", dict), file, f"entries[{i}].config"),
                _proof(e.get("proof", dict), file, f"entries[{i}].proof", version),
            )
        )
    if not entries:
        top.fail("must hold at least one entry", "entries")
    _disjoint(entries, file)
    return KernelTable(kernel, class_id, key, dict(prov.data), tuple(entries), file)
