"""The local model store: imports checkpoints (a Hugging Face id or a local folder) into $NEUROBRIX_HOME/models.

A stored model is one folder holding only what the engine reads: ``config.json``, the safetensors
weights (and ``model.safetensors.index.json`` when sharded), ``tokenizer.json``, and when the model has
them ``tokenizer_config.json``, ``generation_config.json`` and ``chat_template.jinja``; plus
``neurobrix-model.json``, which records the source, revision, commit, each file's size and the date.
A hub id ``org/name`` is stored at ``models/org/name``, a local folder at ``models/<folder name>``.

Pickle weights (.bin, .pt, .pth, …) are never downloaded or copied, and no code from a model repository
ever runs. Everything is checked before weights are copied (config.json first: an architecture outside
the family is refused before any weight moves). Imports are atomic: files go into a temporary folder
inside the store that is renamed into place only when complete, so a failed import leaves nothing
behind and a re-import replaces the old copy only once the new one is whole.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import struct
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import __version__
from .config import ModelConfig
from .errors import NeuroBrixError, UsageError

HOME_ENV = "NEUROBRIX_HOME"
DEFAULT_HOME = "~/.cache/neurobrix"
MANIFEST = "neurobrix-model.json"
MANIFEST_FORMAT = 1

CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
TOKENIZER = "tokenizer.json"
OPTIONAL = ("tokenizer_config.json", "generation_config.json", "chat_template.jinja")
# What a hub download may fetch: nothing else (no pickles, no code) ever leaves the hub.
HUB_PATTERNS = (CONFIG, "*.safetensors", INDEX, TOKENIZER, *OPTIONAL)
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")

_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")
_HUB_URL = re.compile(r"^(?:https?://)?(?:www\.)?(?:huggingface\.co|hf\.co)/")
_SCRATCH = ".tmp-"
_COPY_CHUNK = 64 << 20


class ModelNotFoundError(UsageError):
    """No such model in the store, no such local folder, or no such repository or revision on the hub."""


class CheckpointError(UsageError):
    """The checkpoint lacks a file the engine needs (config.json, tokenizer.json, weights) or one is malformed."""


class MissingShardsError(CheckpointError):
    """The shard index names safetensors files that are not there."""


class PickleWeightsError(CheckpointError):
    """The checkpoint ships only pickle weights; NeuroBrix reads safetensors only."""


class GatedModelError(UsageError):
    """A gated hub model: its licence must be accepted on the hub and with --accept-license."""


class HubError(NeuroBrixError):
    """The hub cannot be reached (or the network is switched off) and the files are not in the local HF cache."""


class StoreError(NeuroBrixError):
    """A stored model is damaged, or the store's layout blocks an import."""


# --- where things live ---------------------------------------------------------------------------


def home() -> Path:
    """$NEUROBRIX_HOME, default ~/.cache/neurobrix (read on every call, never at import)."""
    return Path(os.environ.get(HOME_ENV) or DEFAULT_HOME).expanduser()


def models_dir() -> Path:
    return home() / "models"


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
        """tokenizer_config.json, generation_config.json or chat_template.jinja when the model has it."""
        return self.path / name if name in self.files else None

    def weight_files(self) -> list[Path]:
        return weight_files(self.path)

    def config(self) -> ModelConfig:
        return read_config(self.path)


# --- checking a checkpoint folder ----------------------------------------------------------------


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: cannot read {what}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise CheckpointError(
            f"{path}: {what} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "fix the file or fetch the checkpoint again"
        ) from exc


def read_config(folder: Path) -> ModelConfig:
    """config.json of a checkpoint folder, checked against the family the engine runs."""
    path = folder / CONFIG
    if not path.is_file():
        raise CheckpointError(
            f"{folder} has no {CONFIG}; a Hugging Face checkpoint folder holds config.json, tokenizer.json "
            "and *.safetensors"
        )
    data = _read_json(path, CONFIG)
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: expected a JSON object, found {type(data).__name__}")
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
    from tokenizers import Tokenizer

    try:
        Tokenizer.from_file(str(path))
    except Exception as exc:  # the tokenizers library raises a bare Exception on malformed files
        raise CheckpointError(f"{path}: not a valid tokenizer.json ({exc}); fetch the checkpoint again") from exc


def _check_optional(folder: Path) -> list[str]:
    present = [name for name in OPTIONAL if (folder / name).is_file()]
    for name in present:
        if name.endswith(".json") and not isinstance(_read_json(folder / name, name), dict):
            raise CheckpointError(f"{folder / name}: expected a JSON object")
    return present


def _pickles(names: Sequence[str]) -> list[str]:
    return sorted(n for n in names if n.lower().endswith(PICKLE_SUFFIXES))


def _pickle_only(where: str, pickles: Sequence[str]) -> PickleWeightsError:
    return PickleWeightsError(
        f"{where} ships only pickle weights ({', '.join(pickles)}); NeuroBrix loads safetensors only and never "
        "unpickles files. Use a repository or revision that has *.safetensors, or convert the weights yourself "
        "(e.g. save_pretrained(..., safe_serialization=True)) from a source you trust"
    )


def _shards_named(index_path: Path) -> list[str]:
    data = _read_json(index_path, INDEX)
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise CheckpointError(f"{index_path}: has no 'weight_map' (tensor name -> shard file); fetch it again")
    shards = sorted({str(f) for f in weight_map.values()})
    bad = [f for f in shards if "/" in f or "\\" in f or f.startswith(".") or not f.endswith(".safetensors")]
    if bad:
        raise CheckpointError(f"{index_path}: names shards that are not plain *.safetensors files: {', '.join(bad)}")
    return shards


def weight_files(folder: Path) -> list[Path]:
    """The safetensors files of a checkpoint: the shards its index names (each must be present), else every
    top-level *.safetensors. Pickle-only and weightless folders are refused."""
    index = folder / INDEX
    if index.is_file():
        shards = _shards_named(index)
        missing = [s for s in shards if not (folder / s).is_file()]
        if missing:
            raise MissingShardsError(
                f"{folder}: {len(missing)} of the {len(shards)} shards named in {INDEX} are missing: "
                f"{', '.join(missing)}; copy or download every shard, then import again"
            )
        return [folder / s for s in shards]
    found = sorted(p for p in folder.glob("*.safetensors") if p.is_file())
    if found:
        return found
    pickles = _pickles([p.name for p in folder.iterdir() if p.is_file()]) if folder.is_dir() else []
    if pickles:
        raise _pickle_only(str(folder), pickles)
    raise CheckpointError(f"{folder} has no weights: no *.safetensors file and no {INDEX}")


def _check_safetensors(path: Path) -> None:
    """The header parses and the data it describes fills the file exactly (catches truncated downloads)."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        length = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
        header = f.read(length) if 0 < length <= min(size - 8, 100 << 20) else b""
    try:
        meta = json.loads(header) if header else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        meta = None
    if not isinstance(meta, dict):
        raise CheckpointError(f"{path}: not a safetensors file (unreadable header); fetch it again")
    ends = [t["data_offsets"][1] for k, t in meta.items() if k != "__metadata__" and isinstance(t, dict)
            and isinstance(t.get("data_offsets"), list) and len(t["data_offsets"]) == 2]
    expected = 8 + length + max(ends, default=0)
    if expected != size:
        raise CheckpointError(
            f"{path}: the safetensors header describes {expected} bytes but the file has {size} "
            "(truncated or altered); fetch it again"
        )


def checkpoint_files(folder: Path) -> list[str]:
    """Check a checkpoint folder and return the file names to store: config.json (checked first, so an
    architecture outside the family is refused before weights are looked at), the weights (pickle-only and
    missing shards refused), tokenizer.json, the optional files; then every safetensors header."""
    if not folder.is_dir():
        raise ModelNotFoundError(f"{folder} is not a directory")
    read_config(folder)
    weights = weight_files(folder)
    _check_tokenizer(folder)
    optional = _check_optional(folder)
    for path in weights:
        _check_safetensors(path)
    index = [INDEX] if (folder / INDEX).is_file() else []
    return [CONFIG, TOKENIZER, *optional, *index, *(p.name for p in weights)]


# --- the store's folders -------------------------------------------------------------------------


def _name_parts(name: str) -> list[str] | None:
    parts = name.split("/")
    if not 1 <= len(parts) <= 2 or any(not p or p.startswith(".") or "\\" in p for p in parts):
        return None
    return parts


def _model_dir(name: str) -> Path | None:
    """The folder of a stored model called ``name`` (it holds a manifest), or None."""
    parts = _name_parts(name)
    if parts is None:
        return None
    path = models_dir().joinpath(*parts)
    return path if (path / MANIFEST).is_file() else None


def _load(path: Path, name: str, *, verify: bool = False) -> StoredModel:
    """The model described by ``path``'s manifest; with ``verify``, every file must be there at its size."""
    try:
        data = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
        files = data["files"]
        if data.get("format") != MANIFEST_FORMAT or not isinstance(files, dict):
            raise ValueError(f"unknown format {data.get('format')!r}")
        sizes = {str(k): int(v) for k, v in files.items()}
        model = StoredModel(
            name=name, path=path, source=str(data["source"]), revision=data.get("revision"),
            files=tuple(sorted(sizes)), size=sum(sizes.values()),
            commit=data.get("commit"), imported=data.get("imported"),
        )
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StoreError(
            f"stored model {name} ({path}) has an unreadable {MANIFEST} ({exc}); "
            f"remove it with `neurobrix remove {name}` and import it again"
        ) from exc
    if verify:
        _verify(model, sizes)
    return model


def _verify(model: StoredModel, sizes: dict[str, int]) -> None:
    problems = []
    for file, size in sorted(sizes.items()):
        path = model.path / file
        if not path.is_file():
            problems.append(f"{file} is missing")
        elif path.stat().st_size != size:
            problems.append(f"{file} has {path.stat().st_size} bytes, expected {size}")
    if problems:
        again = f"neurobrix import {model.source}" + (f" --revision {model.revision}" if model.revision else "")
        raise StoreError(
            f"stored model {model.name} ({model.path}) is damaged: {'; '.join(problems)}. "
            f"Import it again (`{again}`) or remove it (`neurobrix remove {model.name}`)"
        )


def _normalize(name: str) -> str:
    return _HUB_URL.sub("", name.strip()).strip("/")


def list_models() -> list[StoredModel]:
    """Every stored model, sorted by name. Folders whose manifest cannot be read are left out (resolve names
    the problem)."""
    root = models_dir()
    if not root.is_dir():
        return []
    found = []
    for top in sorted(root.iterdir()):
        if top.name.startswith(".") or not top.is_dir():
            continue
        candidates = [(top, top.name)] if (top / MANIFEST).is_file() else [
            (sub, f"{top.name}/{sub.name}") for sub in sorted(top.iterdir())
            if sub.is_dir() and not sub.name.startswith(".") and (sub / MANIFEST).is_file()
        ]
        for path, name in candidates:
            try:
                found.append(_load(path, name))
            except StoreError:
                continue
    return found


def _not_found(name: str) -> ModelNotFoundError:
    return ModelNotFoundError(
        f"no model {name!r} in the store ({models_dir()}). Import it first: `neurobrix import {name}` "
        "(a Hugging Face id like org/name, or a local checkpoint folder); `neurobrix list` shows what is imported"
    )


def _find(name: str) -> tuple[str, Path | None]:
    """(stored name, folder) for a stored name, hub id or hub URL; hub ids match case-insensitively."""
    key = _normalize(name)
    path = _model_dir(key)
    if path is None:
        matches = [m for m in list_models() if m.name.lower() == key.lower()]
        if len(matches) == 1:
            return matches[0].name, matches[0].path
    return key, path


def resolve(name: str) -> StoredModel:
    """A stored model by its stored name (``org/name`` or a local folder's name), its hub id or hub URL, or
    the local folder it was imported from. Its files are checked to be present with their recorded sizes."""
    key, path = _find(name)
    folder = Path(name).expanduser()
    if path is None and folder.is_dir():
        stored = _model_dir(folder.resolve().name)
        if stored is not None and _load(stored, folder.resolve().name).source == str(folder.resolve()):
            key, path = folder.resolve().name, stored
        else:
            raise ModelNotFoundError(
                f"{name} is a folder that has not been imported; import it first: `neurobrix import {name}`"
            )
    if path is None:
        raise _not_found(name)
    return _load(path, key, verify=True)


def _host() -> str:
    """This machine's name, safe in a file name (a store on a shared home may serve several hosts)."""
    return "".join(c if c.isalnum() else "_" for c in socket.gethostname()) or "host"


def _scratch() -> Path:
    """A fresh temporary path inside the store (same filesystem, so renames are atomic)."""
    return models_dir() / f"{_SCRATCH}{_host()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists but not ours, or the platform cannot tell: leave it alone
        return True
    return True


def _sweep_stale() -> None:
    """Remove temporary folders left by imports whose process died (killed mid-copy)."""
    root = models_dir()
    if not root.is_dir():
        return
    mine = f"{_SCRATCH}{_host()}-"
    for path in root.glob(f"{mine}*"):  # only this host's: another host's pids mean nothing here
        pid = path.name[len(mine):].split("-", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def remove(name: str) -> StoredModel:
    """Delete a stored model (by stored name or hub id); returns what was removed."""
    key, path = _find(name)
    if path is None:
        raise ModelNotFoundError(
            f"no model {name!r} in the store ({models_dir()}); `neurobrix list` shows the stored names"
        )
    try:
        model = _load(path, key)
    except StoreError:
        model = StoredModel(key, path, "unknown", None, (), 0)
    trash = _scratch()
    try:
        os.rename(path, trash)  # gone from the store at once; the bytes are deleted after
    except OSError as exc:
        raise StoreError(f"cannot remove {key} ({path}): {exc}") from exc
    shutil.rmtree(trash, ignore_errors=True)
    if "/" in key and path.parent != models_dir():
        try:
            path.parent.rmdir()  # the org folder, once its last model is gone
        except OSError:
            pass
    return model


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
            f"remove it first (`neurobrix remove {parts[0]}`)"
        )
    if dest.exists() and not (dest / MANIFEST).is_file():
        raise StoreError(
            f"cannot store {name}: {dest} exists and is not a NeuroBrix model (it holds other models or "
            "foreign files); rename the source folder or move that folder away"
        )
    return dest


def _manifest(name: str, source: str, revision: str | None, commit: str | None, folder: Path,
              files: Sequence[str]) -> dict[str, Any]:
    return {
        "format": MANIFEST_FORMAT,
        "name": name,
        "source": source,
        "revision": revision,
        "commit": commit,
        "imported": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "neurobrix": __version__,
        "files": {f: (folder / f).stat().st_size for f in files},
    }


def _place(src: Path, dst: Path, link: bool, bar: Any) -> None:
    """Put one file into the new model folder: a hard link to an immutable hub-cache blob when allowed and
    possible (no second copy on disk), else a byte copy."""
    real = src.resolve()
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
    """Rename the complete new folder into place; an existing model is replaced only now."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    old = _scratch() if dest.exists() else None
    if old is not None:
        os.rename(dest, old)
    try:
        os.rename(tmp, dest)
    except BaseException:
        if old is not None:
            os.rename(old, dest)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _store_folder(folder: Path, name: str, source: str, *, revision: str | None, commit: str | None,
                  link: bool, progress: bool) -> StoredModel:
    """Check ``folder`` and store its files as ``name``, atomically."""
    from huggingface_hub.utils import tqdm

    files = checkpoint_files(folder)
    dest = _destination(name)
    _sweep_stale()
    models_dir().mkdir(parents=True, exist_ok=True)
    tmp = _scratch()
    org = dest.parent if "/" in name else None
    org_existed = org is not None and org.exists()
    total = sum((folder / f).resolve().stat().st_size for f in files)
    try:
        tmp.mkdir()
        with tqdm(total=total, unit="B", unit_scale=True, desc=f"storing {name}", disable=not progress) as bar:
            for file in files:
                _place(folder / file, tmp / file, link, bar)
        manifest = _manifest(name, source, revision, commit, tmp, files)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        _install(tmp, dest)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if org is not None and not org_existed:
            try:
                org.rmdir()
            except OSError:
                pass
        if isinstance(exc, OSError):
            raise StoreError(f"could not write {name} into the store ({models_dir()}): {exc}; nothing was "
                             "stored (check the free space and permissions there)") from exc
        raise
    return _load(dest, name, verify=True)


def _truthy(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def hub_offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) as set now, not only when huggingface_hub was imported."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if var in os.environ:
            return _truthy(os.environ[var])
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def hub_cache() -> Path:
    """The huggingface_hub cache as the environment says now (HF_HUB_CACHE, else HF_HOME/hub)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def _network_errors() -> tuple[type[BaseException], ...]:
    """What a failed connection raises across huggingface_hub versions (requests', httpx' or httpx2's)."""
    errors: list[type[BaseException]] = [OSError]
    for module in ("httpx", "httpx2"):
        try:
            errors.append(__import__(module).TransportError)
        except (ImportError, AttributeError):
            pass
    return tuple(errors)


def _model_info(repo_id: str, revision: str | None) -> Any:
    """The hub's ModelInfo (files, gating, commit). A seam for tests."""
    from huggingface_hub import model_info

    return model_info(repo_id, revision=revision)


def _snapshot_download(repo_id: str, *, revision: str | None, allow_patterns: Sequence[str],
                       local_files_only: bool) -> Path:
    """Download (or find in the HF cache) the files matching ``allow_patterns``; the snapshot folder."""
    from huggingface_hub import snapshot_download

    folder = snapshot_download(repo_id, revision=revision, allow_patterns=list(allow_patterns),
                               cache_dir=hub_cache(), local_files_only=local_files_only)
    return Path(folder)


@contextmanager
def _progress_bars(enabled: bool) -> Iterator[None]:
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    switch = not enabled and not are_progress_bars_disabled()
    if switch:
        disable_progress_bars()
    try:
        yield
    finally:
        if switch:
            enable_progress_bars()


def _gated_message(repo_id: str, refused: bool) -> str:
    url = f"https://huggingface.co/{repo_id}"
    steps = (f"1) open {url}, log in and accept the licence there; 2) make your token available on this machine "
             "with `hf auth login` (or set HF_TOKEN); 3) run "
             f"`neurobrix import {repo_id} --accept-license`")
    if refused:
        return (f"the hub refused access to the gated model {repo_id}: this machine's token is missing or its "
                f"account has not been granted access. {steps}")
    return f"{repo_id} is a gated model: its licence must be accepted before it is downloaded. {steps}"


def _check_listing(repo_id: str, names: Sequence[str]) -> None:
    """Refuse from the hub's file list, before any download: no config.json, no tokenizer.json, pickle-only."""
    top = [n for n in names if "/" not in n]
    if CONFIG not in top:
        raise CheckpointError(f"{repo_id} has no {CONFIG} at the top of the repository; it is not a "
                              "transformers checkpoint NeuroBrix can read")
    if not any(n.endswith(".safetensors") for n in top):
        pickles = _pickles(names)
        if pickles:
            raise _pickle_only(repo_id, pickles)
        raise CheckpointError(f"{repo_id} has no weights: no *.safetensors file in the repository")
    if TOKENIZER not in top:
        raise CheckpointError(f"{repo_id} ships no {TOKENIZER}; NeuroBrix needs the fast tokenizer file")


def _download(repo_id: str, revision: str | None, info: Any) -> tuple[Path, str]:
    """Online: config.json (and the index) first, checked, then exactly the files the engine needs."""
    names = [s.rfilename for s in (info.siblings or [])]
    _check_listing(repo_id, names)
    head = [CONFIG, INDEX] if INDEX in names else [CONFIG]
    snapshot = _snapshot_download(repo_id, revision=revision, allow_patterns=head, local_files_only=False)
    read_config(snapshot)  # an architecture outside the family stops here, before any weight moves
    if INDEX in names:
        shards = _shards_named(snapshot / INDEX)
        missing = [s for s in shards if s not in names]
        if missing:
            raise MissingShardsError(f"{repo_id}: {INDEX} names shards the repository does not have: "
                                     f"{', '.join(missing)}")
    else:
        shards = [n for n in names if "/" not in n and n.endswith(".safetensors")]
    wanted = [CONFIG, TOKENIZER, *(n for n in OPTIONAL if n in names), *head[1:], *shards]
    snapshot = _snapshot_download(repo_id, revision=snapshot.name, allow_patterns=wanted, local_files_only=False)
    return snapshot, snapshot.name


def _from_cache(repo_id: str, revision: str | None, why: str, *, offline: bool) -> tuple[Path, str]:
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        snapshot = _snapshot_download(repo_id, revision=revision, allow_patterns=HUB_PATTERNS, local_files_only=True)
    except LocalEntryNotFoundError as exc:
        at = f" at revision {revision}" if revision else ""
        partly = "only partly" if type(exc).__name__ == "IncompleteSnapshotError" else "not"
        raise HubError(
            f"{repo_id}{at} is {partly} in the Hugging Face cache ({hub_cache()}) and {why}, so it cannot be "
            f"downloaded. {'Unset HF_HUB_OFFLINE on a machine with a network' if offline else 'Check the network'}"
            f" and run `neurobrix import {repo_id}` again, or import a local checkpoint folder"
        ) from exc
    return snapshot, snapshot.name


def _fetch(repo_id: str, revision: str | None, accept_license: bool) -> tuple[Path, str]:
    """The snapshot folder holding the model's files, and its commit."""
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    if hub_offline():
        return _from_cache(repo_id, revision, "the network is switched off (HF_HUB_OFFLINE=1)", offline=True)
    try:
        info = _model_info(repo_id, revision)
    except GatedRepoError as exc:
        raise GatedModelError(_gated_message(repo_id, refused=True)) from exc
    except RepositoryNotFoundError as exc:
        raise ModelNotFoundError(
            f"no model {repo_id} on the Hugging Face hub: check the id (org/name); if it is private, log in with "
            "`hf auth login` (or set HF_TOKEN)"
        ) from exc
    except RevisionNotFoundError as exc:
        raise ModelNotFoundError(f"{repo_id} has no revision {revision!r} on the hub; give a branch, tag or commit "
                                 "that exists") from exc
    except _network_errors() as exc:
        return _from_cache(repo_id, revision, f"the hub cannot be reached ({type(exc).__name__}: {exc})",
                           offline=False)
    if getattr(info, "gated", False) and not accept_license:
        raise GatedModelError(_gated_message(repo_id, refused=False))
    try:
        return _download(repo_id, revision, info)
    except GatedRepoError as exc:
        raise GatedModelError(_gated_message(repo_id, refused=True)) from exc
    except (RepositoryNotFoundError, RevisionNotFoundError) as exc:
        raise ModelNotFoundError(f"{repo_id}: {exc}") from exc
    except _network_errors() as exc:
        raise HubError(f"downloading {repo_id} failed ({type(exc).__name__}: {exc}); run the import again "
                       "(files already downloaded stay in the Hugging Face cache)") from exc


def hub_id(source: str) -> str | None:
    """``org/name`` when ``source`` is a hub id or hub URL, else None."""
    candidate = _normalize(source)
    if _HUB_ID.fullmatch(candidate) and ".." not in candidate and "--" not in candidate:
        return candidate
    return None


def import_model(source: str, *, accept_license: bool = False, revision: str | None = None,
                 progress: bool = True) -> StoredModel:
    """Import a local checkpoint folder (stored under its folder name) or a hub id (stored as org/name)."""
    folder = Path(source).expanduser()
    if folder.is_dir():
        folder = folder.resolve()
        if revision is not None:
            raise UsageError(f"--revision applies to Hugging Face ids only; {source} is a local folder")
        if folder.name.startswith(".") or not folder.name:
            raise UsageError(f"{source}: a folder whose name starts with '.' cannot be a model name; rename it")
        return _store_folder(folder, folder.name, str(folder), revision=None, commit=None, link=False,
                             progress=progress)
    if folder.exists():
        raise UsageError(f"{source} is a file; give the checkpoint folder that holds config.json")
    repo_id = hub_id(source)
    if repo_id is None:
        raise ModelNotFoundError(
            f"{source} is neither a local folder nor a Hugging Face id (org/name); give a checkpoint folder that "
            "exists, or a hub id such as TinyLlama/TinyLlama-1.1B-Chat-v1.0"
        )
    _destination(repo_id)  # refuse a blocked name before downloading gigabytes
    with _progress_bars(progress):
        snapshot, commit = _fetch(repo_id, revision, accept_license)
        return _store_folder(snapshot, repo_id, repo_id, revision=revision, commit=commit, link=True,
                             progress=progress)
