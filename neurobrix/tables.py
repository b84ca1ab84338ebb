"""The only door to kernel settings: locate the certified tables, verify them, look a setting up.

Where the tables come from, in this order:
1. ``NEUROBRIX_TABLES=<dir>`` — explicit (a contributor's uncommitted class); a missing folder is an error.
2. the installed package (``neurobrix/_tables`` inside the wheel);
3. the source checkout (``tables/`` beside ``neurobrix/``, for ``PYTHONPATH=.`` and editable installs).

Loading verifies every file against ``TRACKED.yaml`` (sha256 and size; nothing missing, nothing
untracked), parses every file with ``yaml.safe_load`` and validates it (:mod:`neurobrix.schema`).
A lookup is exact domain containment or a :class:`~neurobrix.errors.MissingEntryError`: never the
nearest entry, never a default. None of this needs torch or a GPU.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import yaml

from .errors import MissingEntryError, TablesError, UsageError
from .schema import DTYPES, GPUClass, KernelTable, TrackedFile, parse_class, parse_kernel_table, parse_tracked

# yaml.safe_load's loader: the same safe constructor, parsed by libyaml when PyYAML has it (large
# tables load several times faster)
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

ENV_VAR = "NEUROBRIX_TABLES"
TRACKED_NAME = "TRACKED.yaml"
CLASS_NAME = "class.yaml"
WHEEL_DIR = "neurobrix/_tables"  # must match [tool.hatch.build.targets.wheel.force-include]


@dataclass(frozen=True)
class TablesLocation:
    root: Path
    origin: str  # "NEUROBRIX_TABLES", "installed package" or "source checkout"


@dataclass(frozen=True)
class Problem:
    """One reason the tables cannot be trusted, about one file (relative to the tables folder)."""

    path: str
    message: str


@dataclass
class Tables:
    """A verified, validated tables folder: its classes and their kernel tables."""

    location: TablesLocation
    tracked: tuple[TrackedFile, ...]
    classes: dict[str, GPUClass]
    kernels: dict[str, dict[str, KernelTable]]  # class id -> kernel name -> table
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False)

    def table_path(self, class_id: str, kernel: str) -> Path:
        return self.location.root / class_id / f"{kernel}.yaml"

    def settings(self, class_id: str, kernel: str, dtype: str, shape: Mapping[str, int]) -> Mapping[str, Any]:
        """The certified config for this exact call on this class, or a MissingEntryError."""
        if dtype not in DTYPES:
            raise UsageError(f"unknown dtype {dtype!r}: NeuroBrix kernels take {', '.join(DTYPES)}")
        memo = (class_id, kernel, dtype, tuple(sorted(shape.items())))
        if memo in self._cache:
            return self._cache[memo]
        if class_id not in self.classes:
            raise UsageError(f"unknown GPU class {class_id!r}; classes here: {', '.join(sorted(self.classes))}")
        table = self.kernels[class_id].get(kernel)
        where = ", ".join(f"{k}={v}" for k, v in shape.items())
        if table is None:
            raise MissingEntryError(
                f"no certified table for kernel '{kernel}' on GPU class {class_id}"
                f" (needed for {dtype} {where})\n  expected file: {self.table_path(class_id, kernel)}\n"
                f"  certify it: {certify_command(class_id, [kernel], [dtype])}"
            )
        if set(shape) != set(table.key):
            raise TablesError(
                f"{table.path}: keyed by ({', '.join(table.key)}) but the engine's '{kernel}' kernel "
                f"asks with ({', '.join(shape)}); these tables were certified for another neurobrix. "
                f"Re-certify: {certify_command(class_id, [kernel])}"
            )
        entry = table.lookup(dtype, shape)
        if entry is None:
            raise MissingEntryError(
                f"no certified setting for kernel '{kernel}', dtype {dtype}, shape {where} "
                f"on GPU class {class_id}\n  table: {table.path} ({len(table.entries)} entries; "
                f"none contains this call)\n  certify it: {certify_command(class_id, [kernel], [dtype])}"
            )
        self._cache[memo] = entry.config
        return entry.config


def certify_command(class_id: str, kernels: list[str] | None = None, dtypes: list[str] | None = None,
                    extra: str = "") -> str:
    """The command a contributor runs, from a source checkout on that GPU, to certify what is missing."""
    command = f"python -m conformance certify --class {class_id}"
    if kernels:
        command += " --kernels " + " ".join(kernels)
    if dtypes:
        command += " --dtypes " + " ".join(dtypes)
    return command + extra + " --only-missing"


def locate() -> TablesLocation:
    """Where the tables are; see the module docstring for the order (settled once per value of
    NEUROBRIX_TABLES: every kernel launch asks)."""
    explicit = os.environ.get(ENV_VAR)
    relative_to = os.getcwd() if explicit and not os.path.isabs(os.path.expanduser(explicit)) else None
    return _locate(explicit, relative_to)


@functools.lru_cache(maxsize=None)
def _locate(explicit: str | None, relative_to: str | None) -> TablesLocation:
    if explicit:
        root = Path(explicit).expanduser()
        if not root.is_dir():
            raise TablesError(f"{ENV_VAR}={explicit} is not a folder; point it at a tables folder or unset it")
        return TablesLocation(root.resolve(), ENV_VAR)
    packaged = Path(str(resources.files("neurobrix").joinpath("_tables")))
    if packaged.is_dir():
        return TablesLocation(packaged, "installed package")
    source = Path(__file__).resolve().parent.parent / "tables"
    if (source / TRACKED_NAME).is_file():
        return TablesLocation(source, "source checkout")
    raise TablesError(
        "no certified tables found: the installed neurobrix has no neurobrix/_tables and there is no "
        f"source checkout tables/ folder. Reinstall neurobrix, or set {ENV_VAR}=<tables folder>."
    )


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def scan(root: Path) -> list[TrackedFile]:
    """Every file under ``root`` except the tracked list itself, as it is on disk now, sorted by path."""
    found = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == TRACKED_NAME or path.is_dir():
            continue
        found.append(TrackedFile(rel, f"{WHEEL_DIR}/{rel}", sha256_of(path), path.stat().st_size))
    return found


def render_tracked(files: list[TrackedFile]) -> str:
    """The text of TRACKED.yaml for these files (deterministic, so an unchanged folder gives equal bytes)."""
    body = {
        "format": 1,
        "files": [{"path": f.path, "wheel_path": f.wheel_path, "sha256": f.sha256, "size": f.size} for f in files],
    }
    header = (
        "# Every file the certified tables need, with its sha256, size and path inside the wheel.\n"
        "# Written by `python -m conformance track` (and by certify). Never edit by hand.\n"
    )
    return header + yaml.safe_dump(body, sort_keys=False, width=120)


def read_yaml(path: Path, shown: str, sha256: str | None = None) -> Any:
    """``yaml.safe_load`` of one file; a syntax error names the file and the line. With ``sha256``,
    the bytes parsed are the bytes verified (a file swapped after the folder check is refused)."""
    try:
        data = path.read_bytes()
        if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
            raise TablesError(f"{shown}: changed while the tables were being loaded (sha256 differs now)")
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TablesError(f"{shown}: cannot be read: {exc}") from exc
    try:
        return yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 - the safe loader, libyaml's when present
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise TablesError(f"{shown}{line}: not valid YAML: {exc.problem or exc}") from exc
    except yaml.YAMLError as exc:
        raise TablesError(f"{shown}: not valid YAML: {exc}") from exc


def read_tracked(root: Path) -> tuple[TrackedFile, ...]:
    path = root / TRACKED_NAME
    if not path.is_file():
        raise TablesError(
            f"{path}: the tracked-file list is missing, so nothing in {root} can be trusted. "
            "Reinstall neurobrix, or in a source checkout run `python -m conformance track`."
        )
    return parse_tracked(read_yaml(path, str(path)), str(path))


def check_files(root: Path, tracked: tuple[TrackedFile, ...]) -> list[Problem]:
    """Compare the folder with the tracked list: every byte, nothing missing, nothing extra."""
    problems: list[Problem] = []
    listed = {f.path for f in tracked}
    for f in tracked:
        path = root / f.path
        if f.wheel_path != f"{WHEEL_DIR}/{f.path}":
            problems.append(Problem(f.path, f"wheel path {f.wheel_path!r} should be {WHEEL_DIR}/{f.path}"))
        if path.is_symlink() or not path.is_file():
            problems.append(Problem(f.path, "tracked but missing (or not a regular file)"))
            continue
        size = path.stat().st_size
        if size != f.size:
            problems.append(Problem(f.path, f"size {size} bytes, tracked as {f.size}: the file was altered"))
        elif sha256_of(path) != f.sha256:
            problems.append(Problem(f.path, "sha256 differs from the tracked list: the file was altered"))
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel != TRACKED_NAME and rel not in listed and (path.is_file() or path.is_symlink()):
            problems.append(Problem(rel, "present but not in the tracked list (untracked table file)"))
    return problems


def load(root: Path | None = None) -> Tables:
    """Locate (unless ``root`` is given), verify and parse the tables; cached per folder."""
    location = TablesLocation(root.resolve(), "given") if root is not None else locate()
    return _load(location)


def clear_cache() -> None:
    _load.cache_clear()
    _locate.cache_clear()


@functools.lru_cache(maxsize=None)
def _load(location: TablesLocation) -> Tables:
    root = location.root
    tracked = read_tracked(root)
    problems = check_files(root, tracked)
    if problems:
        lines = "\n".join(f"  {root / p.path}: {p.message}" for p in problems)
        raise TablesError(
            f"the certified tables in {root} ({location.origin}) do not match {TRACKED_NAME}:\n{lines}\n"
            "Reinstall neurobrix; in a source checkout, re-certify or run `python -m conformance track` "
            "after checking the change."
        )
    classes: dict[str, GPUClass] = {}
    kernels: dict[str, dict[str, KernelTable]] = {}
    for f in tracked:
        parts = f.path.split("/")
        shown = str(root / f.path)
        if len(parts) != 2 or not parts[1].endswith(".yaml"):
            continue  # a file the tables need that is not itself a table (e.g. a proof report)
        folder, name = parts
        data = read_yaml(root / f.path, shown, f.sha256)
        if name == CLASS_NAME:
            classes[folder] = parse_class(data, shown, folder)
        else:
            table = parse_kernel_table(data, shown, folder, name[: -len(".yaml")])
            kernels.setdefault(folder, {})[table.kernel] = table
    for folder in kernels:
        if folder not in classes:
            raise TablesError(f"{root / folder}: has kernel tables but no {CLASS_NAME} naming the GPU class")
    for class_id in classes:
        kernels.setdefault(class_id, {})
    return Tables(location, tracked, classes, kernels)


def settings(kernel: str, dtype: str, shape: Mapping[str, int]) -> Mapping[str, Any]:
    """The certified config of ``kernel`` for this exact call on this machine's GPU class.

    Raises MissingEntryError (no entry contains the call), TablesError (tables damaged),
    NoGPUError / UncertifiedGPUError (no device, or one with no certified class).
    """
    from .gpu import detect_class  # gpu reads the classes from here; imported late to keep both lean

    tables = load()
    class_id = tables._cache.get("class")
    if class_id is None:  # the device is read once; its class is settled once per tables folder
        class_id = tables._cache["class"] = detect_class(tables).id
    return tables.settings(class_id, kernel, dtype, shape)
