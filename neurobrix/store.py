"""The local model store: the layout of $NEUROBRIX_HOME/models, and importing a checkpoint into it.

A stored model is one folder holding only what the engine reads (see :mod:`neurobrix.checkpoint`),
plus ``neurobrix-model.json``, which records the source, revision, commit, each file's size (and the sha256
of each file but the weights, and of each weight file's safetensors header) and the date. A hub id
``org/name`` is stored at ``models/org/name``, a local folder at ``models/<folder name>``. Checking a
checkpoint is :mod:`neurobrix.checkpoint`'s job, fetching one from the hub :mod:`neurobrix.hub`'s; this
module owns the folders.

Imports are atomic: files go into a temporary folder inside the store that is renamed into place
only when complete, so a failed or interrupted import leaves nothing behind and a re-import replaces
the old copy only once the new one is whole. Temporary folders of imports whose process died are
swept by the next import, ``list`` and ``remove``; a model that an import killed mid-replacement had moved aside is
put back. Commands on one store at once take its lock (:func:`_locked`): a command reading a model holds it shared
while it checks the files against the manifest, and a command changing what is in place (an import's rename, a
removal) holds it exclusive for that moment only.
"""

from __future__ import annotations

import dataclasses
import difflib
import errno
import json
import os
import shlex
import shutil
import socket
import stat
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # (Windows: no flock; commands at once there are not kept apart)
    fcntl = None  # type: ignore[assignment]

from . import __version__, hub

# Re-exported: the store's callers (the CLI, tests) name every import refusal through this module.
from .checkpoint import (  # noqa: E402,F401
    CONFIG,
    INDEX,
    OPTIONAL,
    PICKLE_SUFFIXES,
    TEMPLATES,
    TOKENIZER,
    CheckpointError,
    MissingShardsError,
    ModelNotFoundError,
    PickleWeightsError,
    checkpoint_files,
    disk_name,
    is_template_file,
    load_json,
    name_text,
    read_config,
    shard_name,
    weight_files,
)
from .config import ModelConfig
from .errors import NeuroBrixError, UsageError, expect, printable, ran_out
from .hub import HUB_PATTERNS, GatedModelError, HubError, hub_cache, hub_id, hub_offline, normalize  # noqa: E402,F401
from .output import byte_progress
from .tokenizer import Tokenizer, TokenizerFileError

HOME_ENV = "NEUROBRIX_HOME"
DEFAULT_HOME = "~/.cache/neurobrix"
MANIFEST = "neurobrix-model.json"
MANIFEST_FORMAT = 1

_SCRATCH = ".tmp-"
_ASIDE = "aside-"  # in a scratch name: a stored model an import moved aside to put its new one in its place
_LOCK = ".models.lock"  # in NEUROBRIX_HOME, beside models/ (a file in models/ would be one more entry there)
_COPY_CHUNK = 64 << 20


class StoreError(NeuroBrixError):
    """The store's layout blocks an import, or the store cannot be written."""


class DamagedModelError(StoreError):
    """A stored model is damaged: its manifest is unreadable, a file is missing or has another size, or its weights
    cannot be read."""

    exit_code = 7


class NewerManifestError(DamagedModelError):
    """A stored model's manifest is of a later format than this NeuroBrix reads (a newer NeuroBrix imported it)."""


class ForeignManifestError(DamagedModelError):
    """A stored model's folder holds another model's manifest (the folder moved, copied or linked there)."""

    def __init__(self, message: str, owner: str) -> None:
        super().__init__(message)
        self.owner = owner


# --- where things live ---------------------------------------------------------------------------


def home() -> Path:
    """$NEUROBRIX_HOME, default ~/.cache/neurobrix (read on every call, never at import).

    A home that is a file, or lies under one, is refused with one message (no traceback later from
    whatever tries to write there first). So is a relative one: it would name another store (and other
    re-proofs) from each folder a command runs in, an import from one invisible to a run from another;
    resolving it once per process would not help, import and run being separate processes."""
    value = os.environ.get(HOME_ENV)
    if value == "":  # set to nothing (NEUROBRIX_HOME=$UNSET): the store meant is unknown, not the default one
        raise UsageError(
            f"{HOME_ENV} is set but empty: give it an absolute path, or unset it for the default {DEFAULT_HOME}"
        )
    path = Path(value or DEFAULT_HOME).expanduser()
    if not path.is_absolute():
        raise UsageError(
            f"{f'{HOME_ENV}={value}' if value else f'the default home {DEFAULT_HOME} ({path})'} is a relative path: "
            "the model store would be another folder from each folder a "
            f"command runs in. Give an absolute path (e.g. {HOME_ENV}={Path(path).absolute()}), or unset it for "
            f"{DEFAULT_HOME}"
        )
    try:
        os.lstat(path / "models")
    except OSError as exc:  # a name too long, a folder this user may not look into: every use of the store failed
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):  # (a file or a broken link on the way: below)
            shown = f"{HOME_ENV}={value}" if value else f"the default home {path}"
            raise UsageError(
                f"{shown} cannot be used as the model store ({exc.strerror}). Point {HOME_ENV} at a folder, or unset "
                f"it for {DEFAULT_HOME}"
            ) from None
    blocker = next((p for p in (path, *path.parents) if os.path.lexists(p)), None)
    if blocker is not None and blocker.is_symlink() and not blocker.exists():
        # a link to nothing, or a loop of links: `list` said "no models imported yet" and doctor "ready", while every
        # import failed in "File exists" or "Too many levels of symbolic links"
        where = "is" if blocker == path else f"lies under {blocker}, which is"
        shown = f"{HOME_ENV}={value}" if value else f"the default home {path}"
        raise UsageError(
            f"{shown} {where} a symbolic link to {os.readlink(blocker)}, which leads nowhere (a missing path, or a "
            f"loop of links): the model store cannot live there. Point {HOME_ENV} at a folder, or unset it for "
            f"{DEFAULT_HOME}"
        )
    if blocker is not None and not blocker.is_dir():
        where = "is a file" if blocker == path else f"lies under {blocker}, which is a file"
        shown = f"{HOME_ENV}={value}" if value else f"the default home {path}"
        raise UsageError(
            f"{shown} {where}, not a folder: the model store cannot live there. Point {HOME_ENV} "
            f"at a folder (it is created when needed), or unset it for {DEFAULT_HOME}"
        )
    return path


def models_dir() -> Path:
    return home() / "models"


def store_problem() -> str | None:
    """Why the model store cannot be used as it stands (its home or its models/ not a folder), or None."""
    try:
        root = models_dir()
    except UsageError as exc:
        return str(exc)
    if root.exists() and not root.is_dir():
        return (
            f"the model store {root} is a file, not a folder: nothing can be imported or listed there (move it "
            f"away, or point {HOME_ENV} at another folder)"
        )
    if root.is_symlink() and not root.exists():
        return (
            f"the model store {root} is a symbolic link to {os.readlink(root)}, which leads nowhere (a missing path, "
            f"or a loop of links): nothing can be imported or listed there (remove the link, or point {HOME_ENV} at "
            "another folder)"
        )
    return None


@dataclass(frozen=True)
class StoredModel:
    """One imported model. ``revision`` is what was asked for (None: the default branch, or a local folder);
    ``commit`` the exact hub commit; ``files`` the stored file names (manifest excluded); ``size`` their bytes."""

    name: str
    path: Path
    source: str
    revision: str | None
    files: tuple[str, ...]
    size: int
    commit: str | None = None
    imported: str | None = None
    damaged: str | None = None  # why the model cannot be used as stored (list shows it; resolve refuses it)
    # ``damaged`` because a later NeuroBrix imported it (its manifest's format is later): not damage, nothing to remove
    newer: bool = dataclasses.field(default=False, compare=False)
    # each file checked against the manifest, and the folders, as they were when checked (``require_unchanged``)
    stamps: dict[str, tuple[int, ...]] | None = dataclasses.field(default=None, compare=False, repr=False)
    # what `remove` deleted from disk, measured (a damaged model holds other bytes than its manifest's ``size``)
    freed: int | None = dataclasses.field(default=None, compare=False)

    @property
    def from_hub(self) -> bool:
        return not Path(self.source).is_absolute()

    @property
    def config_path(self) -> Path:
        return self.path / CONFIG

    @property
    def tokenizer_path(self) -> Path:
        return self.path / TOKENIZER

    def optional_file(self, name: str) -> Path | None:
        """tokenizer_config.json, generation_config.json, chat_template.jinja, special_tokens_map.json or
        added_tokens.json when the model has it."""
        return self.path / name if name in self.files else None

    def weight_files(self) -> list[Path]:
        """The stored weight files, found as the import found them; none found where the check found them is damage
        (a shard replaced by a folder after the check was "has no weights", a usage error, exit 2)."""
        try:
            return weight_files(self.path)
        except CheckpointError as exc:
            raise damaged(self, [str(exc)]) from exc

    def config(self) -> ModelConfig:
        """config.json, checked. The import read it whole: if it no longer reads as a JSON object (altered at its
        own size, which resolve cannot see), the stored model is damaged (exit 7), not the user's mistake."""
        try:
            cfg = read_config(self.path)
        # OSError: a file gone between two reads of it (a `remove`); a ConfigError (read, but refused by this
        # version's rules) passes
        except (CheckpointError, OSError) as exc:
            raise damaged(self, [str(exc)]) from exc
        self.require_unchanged()  # a program's StoredModel read after the model was imported again: another's file
        return cfg

    def tokenizer(self, given: Mapping[str, Any] | None = None) -> Tokenizer:
        """The stored tokenizer files, read; one the import read whole and that cannot be read now is damage,
        as for config.json. Each read is held to the check (:meth:`require_unchanged`): a program keeping a
        StoredModel while the model is imported again read the new import's files with the old one's weights.
        ``given``: the run's own sampling values, which replace the generation file's (``Tokenizer``)."""
        try:
            tokenizer = Tokenizer(self.path, given)
        except (TokenizerFileError, OSError) as exc:  # OSError: a file gone between two reads of it (a `remove`)
            raise damaged(self, [str(exc)]) from exc
        self.require_unchanged()  # (as config: a model loaded from this one's weights is not given another's tokenizer)
        return tokenizer

    def require_unchanged(self) -> None:
        """Refuse (DamagedModelError) a model whose files changed after they were checked against the manifest: each
        is read again by name after the check (config.json twice, the tokenizer's files, the weights), so a file
        edited, replaced or added meanwhile (another command importing the same name again, an editor) was read
        unchecked, and a run could take its config from one import and its weights from another. Called once every
        file the command reads has been read; a stat of each, no hashing."""
        changed = self.changed()
        if changed is not None:
            raise changed

    def changed(self) -> DamagedModelError | None:
        """The error :meth:`require_unchanged` raises, or None while every file is as it was checked."""
        if self.stamps is None:
            return None  # not checked (list's models): nothing was read on the strength of a check
        if _stamp(self.path) == ():  # `neurobrix remove` (or a re-import's move) took the whole folder
            return DamagedModelError(
                f"stored model {self.name} ({self.path}) was removed while this command read it (another command "
                "removing or importing it meanwhile). Run the command again once that is done, a program "
                "neurobrix.store.resolve again (`neurobrix list` shows what is stored)"
            )
        changed = sorted(name for name, stamp in self.stamps.items() if _stamp(self.path / name) != stamp)
        if not changed:
            return None
        shown = ", ".join("its folder" if name == "." else name for name in changed)
        return DamagedModelError(
            f"stored model {self.name} ({self.path}) changed while this command read it: {shown} changed after "
            f"the check against its {MANIFEST} (another command importing, removing or editing it meanwhile), so "
            "what was read is not what was checked. Run the command again once that is done (a program: "
            "neurobrix.store.resolve the model again)"
        )


# --- the store's folders -------------------------------------------------------------------------


def _name_parts(name: str) -> list[str] | None:
    parts = name.split("/")
    if not 1 <= len(parts) <= 2 or any(not p or p.startswith(".") or "\\" in p for p in parts):
        return None
    try:
        return [disk_name(part) for part in parts]
    except UnicodeError:  # a name no file name can hold in this locale (checked: no such model is stored)
        return None


def _model_dir(name: str) -> Path | None:
    """The folder of a stored model called ``name`` (it holds a manifest), or None."""
    parts = _name_parts(name)
    if parts is None:
        return None
    path = models_dir().joinpath(*parts)
    return path if _exists(path / MANIFEST, Path.is_file) else None


def _exists(path: Path, test: Any = Path.is_dir) -> bool:
    """``test(path)``, False for a name too long for the filesystem (no such file can exist), where pathlib raises:
    `run --model` and `import` of a 300-character name ended in the generic "File name too long" (exit 1)."""
    try:
        return bool(test(path))
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return False
        raise


def _load(path: Path, name: str, *, verify: bool = False) -> StoredModel:
    """The model described by ``path``'s manifest; with ``verify``, every file must be there at its size."""
    try:
        data = load_json((path / MANIFEST).read_text(encoding="utf-8"))
        found = data.get("format") if isinstance(data, dict) else None
        if type(found) is int and found > MANIFEST_FORMAT:
            # a later NeuroBrix's import: not damage (removing it destroys a model that NeuroBrix runs)
            raise NewerManifestError(
                f"stored model {name} ({path}) was imported by a newer NeuroBrix: its {MANIFEST} is format {found}, "
                f"and this NeuroBrix reads format {MANIFEST_FORMAT}; upgrade NeuroBrix to run it, or import the model "
                "again with this one (which rewrites it in its format)"
            )
        files = data["files"]
        if data.get("format") != MANIFEST_FORMAT or not isinstance(files, dict):
            raise ValueError(f"unknown format {data.get('format')!r}")
        _manifest_problem(data)
        sizes = dict(files)
        model = StoredModel(
            name=name,
            path=path,
            source=data["source"],
            revision=data.get("revision"),
            files=tuple(sorted(sizes)),
            size=sum(sizes.values()),
            commit=data.get("commit"),
            imported=data.get("imported"),
        )
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        # RecursionError: JSON nested deeper than Python's parser goes
        why = f"no {exc.args[0]!r} field" if isinstance(exc, KeyError) else str(exc)  # str(KeyError) is "'files'"
        raise DamagedModelError(
            f"stored model {name} ({path}) is damaged: its {MANIFEST} is unreadable ({why}); "
            f"remove it with `neurobrix remove {shlex.quote(name)}` and import it again"
        ) from exc
    if data["name"].casefold() != name.casefold():
        # another model's folder moved, copied or linked here (`mv models/a models/b`, `ln -s a b`): every file
        # matches the manifest, which is that model's, so `run b` ran a's weights, config and tokenizer under b's name
        # (case aside: a hub id names one repository in any case, and a case-insensitive filesystem finds it so)
        raise ForeignManifestError(
            f"stored model {name} ({path}) is damaged: its {MANIFEST} is the one of {printable(data['name'])!r} "
            f"(imported from {printable(data['source'])}): another model's folder was moved, copied or linked here, "
            f"and would run under the name {name}. Remove it (`neurobrix remove {shlex.quote(name)}`) and import "
            f"{name} again",
            data["name"],
        )
    if verify:
        model = replace(model, stamps=_verify(model, sizes, data.get("sha256", {}), data.get("headers", {})))
    return model


def _manifest_problem(data: dict[str, Any]) -> None:
    """Refuse (ValueError, naming the field) a manifest field of another type than the import writes: its format the
    integer 1 (1.0 and true equal it), the source a text, the revision, commit and import date texts or null, and each
    file a plain name of the model's folder with its size in bytes, an integer. A revision of 5 or a commit object made
    `list` and `run` die in a TypeError traceback; a size "369" or 369.7 was read as 369, a null source shown as "None",
    and a file named "/etc/hostname" or "../x" was checked outside the model's folder."""
    if type(data["format"]) is not int:
        raise ValueError(f"format {data['format']!r} is not the integer {MANIFEST_FORMAT}")
    if not isinstance(data["source"], str) or not data["source"]:
        raise ValueError(f"source {data['source']!r} is not the text of a hub id or a folder")
    if not isinstance(data["name"], str) or not data["name"]:  # every import has written it: the model's stored name
        raise ValueError(f"name {data['name']!r} is not the text of a stored model's name")
    for field in ("revision", "commit", "imported"):
        if data.get(field) is not None and not isinstance(data[field], str):
            raise ValueError(f"{field} {data[field]!r} is neither a text nor null")
    for file, size in data["files"].items():
        if is_template_file(file) and "\0" not in file:  # a named chat template, in its folder as transformers reads it
            pass
        elif file.endswith(".safetensors") and _shard_file(file):  # a shard where the index names it (a sub-folder's)
            pass
        elif not file or file.startswith(".") or "/" in file or "\\" in file or "\0" in file or file == MANIFEST:
            raise ValueError(f"files names {file!r}, which is not a file of the model's folder")
        try:  # a lone surrogate ("\ud800", valid JSON) names no file: every stat of it raised UnicodeEncodeError
            os.fsencode(file)
        except UnicodeEncodeError:
            raise ValueError(f"files names {file!r}, which no file name can be (the OS cannot encode it)") from None
        if type(size) is not int or size < 0:
            raise ValueError(f"files gives {file} the size {size!r}, not a number of bytes (an integer >= 0)")
    for field, weights in (("sha256", False), ("headers", True)):
        hashes = data.get(field, {})  # absent in a manifest written before NeuroBrix recorded them
        if not isinstance(hashes, dict):
            raise ValueError(f"{field} {hashes!r} is not a mapping of file names to hashes")
        for file, digest in hashes.items():
            if file not in data["files"] or file.endswith(".safetensors") is not weights:
                which = "the weights" if weights else "its files but the weights"
                raise ValueError(f"{field} names {file!r}, which is none of {which}")
            if not isinstance(digest, str) or len(digest) != 64 or digest.strip("0123456789abcdef"):
                raise ValueError(f"{field} gives {file} {digest!r}, not a sha256 (64 hexadecimal digits)")


def _shard_file(file: str) -> bool:
    """Whether ``file`` is a weight file's name the import writes: a shard index's name of a file in the model's folder
    or a folder of it, as ``checkpoint.shard_name`` writes it (no "", "." or ".." part, no backslash, no NUL)."""
    try:
        return shard_name(file) == file
    except ValueError:
        return False


def _engine_reads(name: str) -> bool:
    """Whether ``run`` reads a file of this name in a stored model's folder when it is there (config, tokenizer and
    optional files by name, weights by their suffix), listed in the manifest or not."""
    return name in (CONFIG, TOKENIZER, INDEX, *OPTIONAL) or name.endswith(".safetensors") or is_template_file(name)


def _verify(
    model: StoredModel, sizes: dict[str, int], hashes: dict[str, str], headers: dict[str, str]
) -> dict[str, tuple[int, ...]]:
    """Every file the manifest lists is there at its size, as a file of the folder (an import never makes a
    symbolic link: one in its place reads another file, which may change after), with the sha256 the manifest
    records (of the whole file, or of a weight file's safetensors header), and no file ``run`` would read lies there
    unlisted (a chat_template.jinja or generation_config.json dropped in after the import changes every run, a
    *.safetensors file the weights)."""
    problems = []
    # each as it is before its check: a change after it (a new inode, size or modification time) is seen at the end
    stamps = {name: _stamp(model.path / name) for name in (".", TEMPLATES, *sizes)}
    for file, size in sorted(sizes.items()):
        path = model.path / file
        try:
            problem = _file_problem(path, file, size, hashes, headers)
        except OSError as exc:  # gone or unreadable between two looks at it (another command removing it meanwhile)
            problem = f"{file} cannot be read ({exc.strerror or exc})"
        if problem:
            problems.append(problem)
    try:
        present = sorted(entry.name for entry in os.scandir(model.path))
        if (model.path / TEMPLATES).is_dir():  # the named chat templates run would read
            present += sorted(f"{TEMPLATES}/{path.name}" for path in (model.path / TEMPLATES).glob("*.jinja"))
    except OSError as exc:
        present, problems = [], [*problems, f"its folder cannot be listed ({exc.strerror or exc})"]
    # a folder holding shards the index names (named model.safetensors, even) is no file run reads
    folders = {file.split("/")[0] for file in sizes if "/" in file}
    unlisted = [
        name
        for name in present
        if name not in sizes and name not in folders and name != MANIFEST and _engine_reads(name)
    ]
    if unlisted:
        problems.append(
            f"{', '.join(unlisted)} {'is' if len(unlisted) == 1 else 'are'} not among the files imported "
            f"(its {MANIFEST} does not list {'it' if len(unlisted) == 1 else 'them'}) and run would read "
            f"{'it' if len(unlisted) == 1 else 'them'}"
        )
    if problems:
        # a model removed or imported again while it was checked (`remove` took its folder as the files were hashed:
        # a raw "No such file or directory", exit 1, under load) is said as such, not as damage
        raise replace(model, stamps=stamps).changed() or damaged(model, problems)
    return stamps


def _file_problem(path: Path, file: str, size: int, hashes: dict[str, str], headers: dict[str, str]) -> str | None:
    """What is wrong with one file the manifest lists (None: nothing); OSError where it cannot be looked at."""
    if path.is_symlink():
        return f"{file} is a symbolic link (to {os.readlink(path)}), not the file imported"
    if not path.is_file():
        return f"{file} is missing"
    if path.stat().st_size != size:
        return f"{file} has {path.stat().st_size} bytes, expected {size}"
    if file in hashes and _sha256(path) != hashes[file]:
        # edited in place at its size (a rope_theta of 500000.0 made 900000.0): every run would read the edit
        return f"{file} was changed after the import (its sha256 is not the one {MANIFEST} records)"
    if file in headers and _header_sha256(path) != headers[file]:
        # rewritten at its size (two tensors' data offsets swapped, a BF16 tensor relabelled F16): the header
        # still reads and matches config.json, and every run would load other weights than the import's
        return (
            f"{file}'s safetensors header was changed after the import (its tensors' names, dtypes, shapes or "
            f"places in the file: its sha256 is not the one {MANIFEST} records)"
        )
    return None


def _stamp(path: Path) -> tuple[int, ...]:
    """What changes when a file is edited, replaced or removed, or a folder's entries are added, removed or renamed:
    its device, inode, size, modification time and change time (() where nothing is): a file rewritten in place at its
    size with its modification time put back (``cp -p``, ``touch -r``) keeps the other four, and its change time is
    one no program can set. A link (a model folder moved to another disk
    and linked back, its chat templates' folder) is stamped with what it leads to as well: the link's own times do not
    change when a file is added where it leads, which a run would then read unchecked."""
    try:
        found = os.stat(path, follow_symlinks=False)
    except OSError:
        return ()
    own = (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
    if not stat.S_ISLNK(found.st_mode):
        return own
    try:
        target = os.stat(path)
    except OSError:
        return own
    return (*own, target.st_dev, target.st_ino, target.st_size, target.st_mtime_ns, target.st_ctime_ns)


def damaged(model: StoredModel, problems: list[str]) -> DamagedModelError:
    """The error for a stored model found damaged: each problem, and how to import it again or remove it. A file that
    went missing or unreadable because another command removed, imported or edited the model after this one checked
    it is said so (a `neurobrix remove` during a run was "damaged: ... has no config.json ... remove it")."""
    changed = model.changed()
    if changed is not None:
        return changed
    again = f"neurobrix import {shlex.quote(model.source)}" + (
        f" --revision {shlex.quote(model.revision)}" if model.revision else ""
    )
    return DamagedModelError(
        f"stored model {model.name} ({model.path}) is damaged: {'; '.join(problems)}. "
        f"Import it again (`{again}`) or remove it (`neurobrix remove {shlex.quote(model.name)}`)"
    )


def _damaged(path: Path, name: str, problem: DamagedModelError) -> StoredModel:
    """A damaged model as list shows it: what its manifest still says, and why it cannot be used."""
    try:
        model = _load(path, name)
    except DamagedModelError:
        model = StoredModel(name, path, "unknown", None, (), 0)
    return StoredModel(
        model.name,
        path,
        model.source,
        model.revision,
        model.files,
        model.size,
        model.commit,
        model.imported,
        damaged=str(problem),
        newer=isinstance(problem, NewerManifestError),
    )


def list_models() -> list[StoredModel]:
    """Every stored model, sorted by name, each checked as ``run`` checks it: a damaged one (manifest
    unreadable, a file missing or of another size) is listed with ``damaged`` saying why. Temporary
    folders of imports whose process died are swept first."""
    root = models_dir()  # a home that is not a folder is a usage error (exit 2)
    problem = store_problem()
    if problem:
        raise StoreError(problem)
    if not root.is_dir():
        return []
    with _locked(exclusive=False):
        _sweep_stale()
        return _scan(root)


def _scan(root: Path) -> list[StoredModel]:
    found = []
    for top in sorted(root.iterdir()):
        if top.name.startswith(".") or not top.is_dir():
            continue
        candidates = (
            [(top, name_text(top.name))]
            if (top / MANIFEST).is_file()
            else [
                (sub, f"{name_text(top.name)}/{name_text(sub.name)}")
                for sub in sorted(top.iterdir())
                if sub.is_dir() and not sub.name.startswith(".") and (sub / MANIFEST).is_file()
            ]
        )
        for path, name in candidates:
            try:
                found.append(_load(path, name, verify=True))
            except DamagedModelError as exc:
                found.append(_damaged(path, name, exc))
    return found


def _did_you_mean(name: str) -> str:
    """' Did you mean X?' for the stored name closest to ``name`` (difflib's match, case aside); '' if none is."""
    stored: dict[str, list[str]] = {}
    for model in list_models():
        stored.setdefault(model.name.lower(), []).append(model.name)
    close = difflib.get_close_matches(normalize(name).lower(), stored, n=1)
    return f" Did you mean {' or '.join(map(repr, stored[close[0]]))}?" if close else ""  # Tiny or tiny


def _not_found(name: str) -> ModelNotFoundError:
    close = _did_you_mean(name)
    return ModelNotFoundError(
        f"no model {name!r} in the store ({models_dir()}).{close} {'Else i' if close else 'I'}mport it first: "
        f"`neurobrix import {shlex.quote(name)}` (a Hugging Face id like org/name, or a local checkpoint folder); "
        "`neurobrix list` shows what is imported"
    )


def _find(name: str) -> tuple[str, Path | None]:
    """(stored name, folder) for a stored name, hub id or hub URL; hub ids match case-insensitively."""
    key = normalize(name)
    path = _model_dir(key)
    if path is None:
        matches = [m for m in list_models() if m.name.lower() == key.lower()]
        if len(matches) == 1:
            return matches[0].name, matches[0].path
    return key, path


def resolve(name: str) -> StoredModel:
    """A stored model by its stored name (``org/name`` or a local folder's name), its hub id or hub URL, or
    the local folder it was imported from. Its files are checked to be present with their recorded sizes."""
    expect("the model name", name, "a string")
    if not name.strip():  # else "" is the current folder, "not imported"
        raise UsageError("--model is empty: give a stored model's name (`neurobrix list` shows them) or its hub id")
    with _locked(exclusive=False):  # no model put in place or removed between reading the manifest and the check
        return _resolve(name)


def unresolved(name: object) -> bool:
    """Whether ``name`` finds no stored model (empty, not a string, not stored, a folder or hub id not imported), read
    from the store's folders alone: ``run`` and ``warmup`` then refuse it through :func:`resolve`, in its words, before
    they import torch (2 to 3 s of a CPU to say the name was wrong). A folder that was imported is found by
    :func:`resolve` only, which is left to say so."""
    if not isinstance(name, str) or not name.strip():
        return True
    with _locked(exclusive=False):
        return _find(name)[1] is None


def _resolve(name: str) -> StoredModel:
    key, path = _find(name)
    try:
        folder = Path(disk_name(name)).expanduser()  # the folder it was imported from, named as the text it is
    except UnicodeError:
        folder = Path(name).expanduser()
    if path is None and _exists(folder):
        local = name_text(folder.resolve().name)
        stored = _model_dir(local)
        if stored is not None and _load(stored, local).source == name_text(str(folder.resolve())):
            key, path = local, stored
        else:
            raise ModelNotFoundError(
                f"{name} is a folder that has not been imported; import it first: "
                f"`neurobrix import {shlex.quote(name)}`"
            )
    if path is None and _exists(folder, Path.is_file):
        # a file where the checkpoint's folder is meant was told to import it, which `import` then refuses as a file
        # (walk-through round 46)
        raise ModelNotFoundError(
            f"{name} is a file, not a model: --model takes a stored model's name (`neurobrix list` shows them) or the "
            "checkpoint folder, holding config.json, that `neurobrix import` took"
        )
    if path is None:
        raise _not_found(name)
    return _load(path, key, verify=True)


def _host() -> str:
    """This machine's name, safe in a file name (a store on a shared home may serve several hosts)."""
    return "".join(c if c.isalnum() else "_" for c in socket.gethostname()) or "host"


def _scratch(kind: str = "") -> Path:
    """A fresh temporary path inside the store (same filesystem, so renames are atomic); ``kind`` _ASIDE for a stored
    model moved aside, which the sweep puts back if its import died before the new one was in place."""
    return models_dir() / f"{_SCRATCH}{_host()}-{os.getpid()}-{kind}{uuid.uuid4().hex[:12]}"


_HOLDS = threading.local()  # each thread's hold on the store's lock (``depth``: how many _locked it is inside)


@contextmanager
def _locked(exclusive: bool) -> Iterator[None]:
    """Hold the store's lock, shared (reading a model: no model is put in place or removed meanwhile) or exclusive
    (putting one in place, moving one aside, removing one). Without it, a command between an import's two renames
    found no model ("no model 'tiny' in the store"), a run whose manifest was read before a re-import called the model
    damaged, and a removal deleted the organisation folder an import was renaming into.

    ``fcntl.flock`` on a file rather than a lock file made with O_EXCL: the kernel drops a flock when its process ends,
    SIGKILL included, so a killed command never leaves the store locked (an O_EXCL file stays, and whether its maker
    still lives is a guess from a pid). Re-entrant within a thread (flocks on two opened files exclude each other, in
    one process too, which keeps threads apart); taken nowhere when the store's home does not exist yet (nothing to
    keep apart) or its lock file cannot be opened or locked (a read-only store, which no command can change either, or
    a filesystem without flock)."""
    fd = None
    depth = getattr(_HOLDS, "depth", 0)
    if not depth and fcntl is not None:
        try:
            fd = os.open(home() / _LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            try:
                fd = os.open(home() / _LOCK, os.O_RDONLY)
            except OSError:
                fd = None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            except OSError:
                os.close(fd)
                fd = None
            except BaseException:  # Ctrl-C while waiting
                os.close(fd)
                raise
    _HOLDS.depth = depth + 1
    try:
        yield
    finally:
        _HOLDS.depth = depth
        if fd is not None:
            os.close(fd)  # the lock goes with the file's last descriptor


def _claim(folder: Path) -> int | None:
    """Lock a scratch folder for as long as the descriptor returned stays open (None where it cannot be locked): the
    sweep leaves a claimed folder alone whatever its pid says. A pid names a process only in its own pid namespace:
    two containers sharing a store under one host name (docker --network host) each saw the other's live import as
    one whose process had died, and deleted its folder mid-copy."""
    if fcntl is None:
        return None
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _claimed(folder: Path) -> bool:
    """Whether another process holds its :func:`_claim` on ``folder``."""
    fd = _claim(folder)
    if fd is not None:
        os.close(fd)
        return False
    return fcntl is not None and folder.is_dir() and not folder.is_symlink()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists but not ours, or the platform cannot tell: leave it alone
        return True
    return True


def _delete(path: Path) -> None:
    """Delete a scratch entry of the store: a folder with its files, a link (a model folder linked into the store, moved
    aside by `remove` or a re-import) as a link, never what it leads to (``shutil.rmtree`` refuses a link, silently
    here, which left it in the store under its scratch name for good)."""
    if path.is_symlink():
        try:
            path.unlink()
        except OSError:
            pass
    else:
        shutil.rmtree(path, ignore_errors=True)


def _sweep_stale() -> None:
    """Remove temporary folders left by imports whose process died (killed mid-copy), and put back in its place a
    stored model that an import killed between its two renames had moved aside (else this sweep deleted it with the
    new one: a re-import killed there lost the model). Called under the store's lock."""
    root = models_dir()
    if not root.is_dir():
        return
    mine = f"{_SCRATCH}{_host()}-"
    for path in root.glob(f"{mine}*"):  # only this host's: another host's pids mean nothing here
        pid, _, rest = path.name[len(mine) :].partition("-")
        if pid.isdigit() and not _pid_alive(int(pid)) and not _claimed(path):
            if rest.startswith(_ASIDE):
                _put_back(path)
            _delete(path)  # (nothing there once put back)


def _put_back(aside: Path) -> None:
    """Rename a model moved aside back to the name its manifest gives, where nothing is stored under it."""
    try:
        parts = _name_parts(load_json((aside / MANIFEST).read_text(encoding="utf-8"))["name"])
        if parts is not None:
            dest = models_dir().joinpath(*parts)
            if not os.path.lexists(dest):
                org_existed = dest.parent.exists()
                dest.parent.mkdir(exist_ok=True)
                if not org_existed:  # as the import makes it (planted round 43: left to the umask, 0777 under 000)
                    _not_world_writable(dest.parent)
                os.rename(aside, dest)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass  # unreadable, or its place taken since: deleted as any scratch


def _bytes_under(folder: Path) -> int:
    """The bytes of the files under ``folder`` (links not followed), 0 where it is gone."""
    total = 0
    for where, _, files in os.walk(folder):
        for file in files:
            try:
                total += os.lstat(os.path.join(where, file)).st_size
            except OSError:
                pass
    return total


def _missing_or_resized(model: StoredModel) -> list[str]:
    """The manifest's files that are gone or of another size than it records (sizes only: nothing is hashed)."""
    try:
        sizes = load_json((model.path / MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return [f"its {MANIFEST} is unreadable"]
    problems = []
    for file, size in sorted(sizes.items()):
        try:
            found = os.lstat(model.path / file).st_size
        except OSError:
            problems.append(f"{file} is missing")
            continue
        if found != size:
            problems.append(f"{file} has {found} bytes, expected {size}")
    return problems


def remove(name: str) -> StoredModel:
    """Delete a stored model (by stored name or hub id), damaged or not; returns what was removed: ``freed`` the
    bytes deleted from disk (measured), ``damaged`` a file the manifest lists found missing or of another size, or the
    manifest unreadable. Temporary folders of imports whose process died are swept first."""
    expect("the model name", name, "a string")
    with _locked(exclusive=True):  # taken out of the store whole, between other commands' reads and renames
        model, path, trash, held = _take_out(name)
    _delete(trash)
    return replace(model, freed=held - _bytes_under(trash))


def _take_out(name: str) -> tuple[StoredModel, Path, Path, int]:
    """Move a stored model out of the store (renamed to a scratch folder): what it was, where, its scratch folder and
    the bytes it held."""
    _sweep_stale()
    key, path = _find(name)
    if path is None:
        raise ModelNotFoundError(
            f"no model {name!r} in the store ({models_dir()}).{_did_you_mean(name)} `neurobrix list` shows the stored "
            "names"
        )
    try:
        model = _load(path, key)
        damage = _missing_or_resized(model)
    except ForeignManifestError as exc:
        model = StoredModel(key, path, "unknown", None, (), 0)
        damage = [f"its {MANIFEST} was the one of {exc.owner!r} (that model's folder, moved, copied or linked here)"]
    except NewerManifestError as exc:
        model = StoredModel(key, path, "unknown", None, (), 0, damaged=str(exc), newer=True)
        damage = [str(exc)]
    except StoreError:
        model = StoredModel(key, path, "unknown", None, (), 0)
        damage = [f"its {MANIFEST} is unreadable"]
    link = path.is_symlink()  # a folder linked here: the link goes, not the files it leads to (rmtree refuses it)
    held = 0 if link else _bytes_under(path)  # measured: a damaged model's manifest says what it held, not what is left
    trash = _scratch()
    try:
        os.rename(path, trash)  # gone from the store at once; the bytes are deleted after
    except OSError as exc:
        raise StoreError(f"cannot remove {key} ({path}): {exc}") from exc
    if "/" in key and path.parent != models_dir():
        try:
            path.parent.rmdir()  # the org folder, once its last model is gone
        except OSError:
            pass
    return replace(model, damaged="; ".join(damage) or None), path, trash, held


# --- importing -----------------------------------------------------------------------------------


def _destination(name: str) -> Path:
    """Where ``name`` goes; refuses a name whose folder is taken by something that is not that model."""
    parts = _name_parts(name)
    if parts is None:
        raise UsageError(f"{name!r} cannot be a stored model name (empty part, or a part starting with '.')")
    root = models_dir()
    dest = root.joinpath(*parts)
    if len(parts) == 2 and (root / parts[0] / MANIFEST).is_file():
        raise StoreError(
            f"cannot store {name}: a local model named {parts[0]!r} occupies {root / parts[0]}; "
            f"remove it first (`neurobrix remove {shlex.quote(parts[0])}`)"
        )
    if dest.exists() and not (dest / MANIFEST).is_file():
        raise StoreError(
            f"cannot store {name}: {dest} exists and is not a NeuroBrix model (it holds other models or "
            "foreign files); rename the source folder or move that folder away"
        )
    return dest


def _manifest(
    name: str, source: str, revision: str | None, commit: str | None, folder: Path, files: Sequence[str]
) -> dict[str, Any]:
    return {
        "format": MANIFEST_FORMAT,
        "name": name,
        "source": source,
        "revision": revision,
        "commit": commit,
        "imported": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "neurobrix": __version__,
        "files": {f: (folder / f).stat().st_size for f in files},
        # every file but the weights (read whole on each run, too large to hash there; their headers are checked)
        "sha256": {f: _sha256(folder / f) for f in files if not f.endswith(".safetensors")},
        # each weight file's header (a few KB: what each tensor is and where its bytes lie), hashed on every run
        "headers": {f: _header_sha256(folder / f) for f in files if f.endswith(".safetensors")},
    }


def _sha256(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _header_sha256(path: Path) -> str:
    """The sha256 of a safetensors file's header: its 8-byte length and the JSON that follows (each tensor's name,
    dtype, shape and data offsets), read up to the 100 MB the import's check allows."""
    import hashlib
    import struct

    with path.open("rb") as fh:
        head = fh.read(8)
        length = struct.unpack("<Q", head)[0] if len(head) == 8 else 0
        body = fh.read(min(length, 100 << 20))
    return hashlib.sha256(head + body).hexdigest()


def _not_world_writable(path: Path) -> None:
    """Take write permission for every user from a folder or file the import made. Made under ``umask 000`` (set for
    another program, or in a container's profile), the store's folders and files were writable by every user of the
    machine, and a run checks the weights by their size and headers, not their bytes (hashing gigabytes on every run,
    round 40): any user could change the numbers a model computes with, and `run` ran them. Triton's cache folder is
    refused for the same reason (round 27). The umask's other bits (a group's share) are kept."""
    mode = stat.S_IMODE(path.lstat().st_mode)
    if mode & stat.S_IWOTH:
        os.chmod(path, mode & ~stat.S_IWOTH)


def _place(src: Path, dst: Path, link: bool, bar: Any) -> None:
    """Put one file into the new model folder: a hard link to an immutable hub-cache blob when allowed and
    possible (no second copy on disk), else a byte copy."""
    real = src.resolve()
    dst.parent.mkdir(parents=True, exist_ok=True)  # a named chat template's folder, or a shard's the index names
    if link:
        try:
            os.link(real, dst)
            bar.update(real.stat().st_size)
            return
        except OSError:
            pass
    with real.open("rb") as fin, dst.open("wb") as fout:
        while chunk := fin.read(_COPY_CHUNK):
            fout.write(chunk)
            bar.update(len(chunk))


def _install(tmp: Path, dest: Path) -> None:
    """Rename the complete new folder into place; an existing model is replaced only now. Another import of the same
    name may install its folder, or move the one there aside, between any two steps (two `neurobrix import` of one
    model at once ended the later in "Directory not empty" or "No such file or directory", advising to check the free
    space): the model there is moved aside and the rename tried again, so that each import stores a whole model and
    the last one stays, as when they run one after the other. Called under the store's lock (which other NeuroBrix
    commands take; another program, or a store without flock, may still move things meanwhile). A model moved aside is
    named so (_ASIDE): if this process dies before its folder is in place, the next sweep puts the old one back."""
    org_existed = dest.parent.exists()
    dest.parent.mkdir(parents=True, exist_ok=True)
    if not org_existed:  # an org folder every user may write: any of them could rename its models away
        _not_world_writable(dest.parent)
    aside: list[Path] = []
    try:
        for _ in range(8):
            if dest.exists():
                old = _scratch(_ASIDE)
                try:
                    os.rename(dest, old)
                    aside.append(old)
                except FileNotFoundError:  # moved aside by the other import meanwhile
                    pass
            try:
                os.rename(tmp, dest)
                break
            except OSError as exc:  # the other import installed its folder meanwhile: move it aside in turn
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY) or not dest.exists():
                    raise
        else:
            raise StoreError(f"cannot store {dest.name}: other imports of it keep replacing {dest}; import it again")
    except BaseException:
        if aside and not dest.exists():
            os.rename(aside.pop(), dest)  # the model that was there last
        raise
    finally:
        for old in aside:
            trash = _scratch()  # no longer to be put back: a delete cut short would leave half a model to restore
            _delete(trash if _renamed(old, trash) else old)


def _renamed(src: Path, dst: Path) -> bool:
    try:
        os.rename(src, dst)
    except OSError:
        return False
    return True


def _store_folder(
    folder: Path, name: str, source: str, *, revision: str | None, commit: str | None, link: bool, progress: bool
) -> StoredModel:
    """Check ``folder`` and store its files as ``name``, atomically."""
    files = checkpoint_files(folder)
    if link:  # a hub snapshot (the only folder the store links from): every file is the blob its name says
        hub.check_blobs(source, folder, files, progress)
    dest = _destination(name)
    with _locked(exclusive=False):
        _sweep_stale()
    problem = store_problem()  # a models/ link leading nowhere ("File exists" at the mkdir below)
    if problem and models_dir().is_symlink():
        raise StoreError(problem)
    made = [models_dir(), *models_dir().parents]
    made = [folder for folder in made if not folder.exists() and not folder.is_symlink()]
    try:
        models_dir().mkdir(parents=True, exist_ok=True)
        for created in made:
            _not_world_writable(created)
    except OSError as exc:
        raise StoreError(
            f"cannot create the model store {models_dir()}: {exc.strerror or exc}; nothing was stored (point "
            "NEUROBRIX_HOME at a folder you can write, or unset it for ~/.cache/neurobrix)"
        ) from exc
    tmp = _scratch()
    org = dest.parent if "/" in name else None
    org_existed = org is not None and org.exists()
    total = sum((folder / f).resolve().stat().st_size for f in files)
    claim = None
    try:
        with _locked(exclusive=True):  # made and claimed before any sweep (they run under the lock) can see it
            tmp.mkdir()
            claim = _claim(tmp)
        with byte_progress(f"storing {name}", total, progress) as bar:
            for file in files:
                _place(folder / file, tmp / file, link, bar)
        manifest = _manifest(name, source, revision, commit, tmp, files)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        for placed in (tmp, *tmp.rglob("*")):
            if placed.is_dir() or placed.stat().st_nlink == 1:  # a hub blob linked here is the hub cache's file
                _not_world_writable(placed)
        # what is stored, read before it is in place: once it is, another command may remove or replace it at once
        # (the import then called the model it had stored whole "damaged: its manifest is unreadable", exit 7)
        stored = replace(_load(tmp, name, verify=True), path=dest, stamps=None)
        with _locked(exclusive=True):
            _install(tmp, dest)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if org is not None and not org_existed:
            with _locked(exclusive=True):  # not while another import renames its model into it
                try:
                    org.rmdir()
                except OSError:
                    pass
        if isinstance(exc, OSError):
            why = ran_out(exc)
            where = f": {exc.filename}" if exc.filename else ""
            raise StoreError(
                f"could not write {name} into the store ({models_dir()}): {exc.strerror or exc}{where}; "
                + (
                    f"{why}; nothing was stored"
                    if why
                    else "nothing was stored (check the free space and permissions there)"
                )
            ) from exc
        raise
    finally:
        if claim is not None:
            os.close(claim)
    return stored


def import_model(
    source: str, *, accept_license: bool = False, revision: str | None = None, progress: bool = True
) -> StoredModel:
    """Import a local checkpoint folder (stored under its folder name) or a hub id (stored as org/name)."""
    expect("SOURCE", source, "a string")
    expect("the revision", revision, "a string", optional=True)
    home()  # a home that cannot hold a store is refused before anything is checked or downloaded
    if not source.strip():  # else "" is the current folder
        raise UsageError("SOURCE is empty: give a Hugging Face id (org/name) or a local checkpoint folder")
    folder = Path(source).expanduser()
    if _exists(folder):
        folder = folder.resolve()
        if revision is not None:
            raise UsageError(f"--revision applies to Hugging Face ids only; {source} is a local folder")
        if folder.name.startswith(".") or not folder.name:
            raise UsageError(f"{source}: a folder whose name starts with '.' cannot be a model name; rename it")
        try:  # a name of bytes that are no UTF-8, which Python hands on as lone surrogates
            name_text(str(folder)).encode("utf-8")
        except UnicodeEncodeError:
            shown = os.fsencode(folder).decode("utf-8", "backslashreplace")
            raise UsageError(
                f"{printable(shown)}: the path is not UTF-8 text (bytes such as \\xff in a folder's name), which the "
                "tokenizer library cannot open (it takes a path as UTF-8 text); rename the folder"
            ) from None
        name = name_text(folder.name)
        if printable(name) != name:  # the name `list`, `run` and the import's own lines print
            raise UsageError(
                f"{source}: the folder name {printable(name)} holds a character a terminal obeys rather than "
                "prints (a control character such as ESC or CR, a bidirectional override), which cannot be a model "
                "name; rename it"
            )
        return _store_folder(
            folder, name, name_text(str(folder)), revision=None, commit=None, link=False, progress=progress
        )
    if _exists(folder, Path.exists):
        raise UsageError(f"{source} is a file; give the checkpoint folder that holds config.json")
    if source.strip().startswith(("/", "./", "../", "~", ".\\", "..\\")) or folder.is_absolute():
        # written as a path: a mistyped folder, not a hub id (hub_id would strip the leading '/')
        raise ModelNotFoundError(f"{source}: no such folder; give the checkpoint folder that holds config.json")
    repo_id = hub_id(source)
    if repo_id is None:
        raise ModelNotFoundError(
            f"{source} is neither a local folder nor a Hugging Face id (org/name); give a checkpoint folder that "
            "exists, or a hub id such as TinyLlama/TinyLlama-1.1B-Chat-v1.0"
        )
    _destination(repo_id)  # refuse a blocked name before downloading gigabytes
    with hub.progress_bars(progress):
        snapshot, commit = hub.fetch(repo_id, revision, accept_license)
        return _store_folder(snapshot, repo_id, repo_id, revision=revision, commit=commit, link=True, progress=progress)
