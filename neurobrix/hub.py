"""The Hugging Face hub: fetch exactly the files a checkpoint folder needs, and nothing else.

Online, the repository's file list is checked first (config.json, tokenizer.json and safetensors
weights present; pickle-only refused), then config.json (and the shard index) is downloaded and
checked, then only the files the engine reads. Offline (``HF_HUB_OFFLINE=1``) or with the hub out of
reach, the files come from the local Hugging Face cache. No code from a repository ever runs.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .checkpoint import (
    CONFIG,
    INDEX,
    OPTIONAL,
    SINGLE,
    TEMPLATES,
    TOKENIZER,
    CheckpointError,
    MissingShardsError,
    ModelNotFoundError,
    gguf_note,
    is_template_file,
    not_transformers_weights,
    pickle_only,
    pickles,
    read_config,
    shards_named,
)
from .errors import NeuroBrixError, UsageError
from .output import byte_progress

# What a hub download may fetch: nothing else (no pickles, no code) ever leaves the hub.
HUB_PATTERNS = (CONFIG, "*.safetensors", INDEX, TOKENIZER, *OPTIONAL, f"{TEMPLATES}/*.jinja")

# huggingface_hub's validate_repo_id, in ASCII: neither part ends in '-' or '.', the name is at most 96 characters (and
# not "*.git"; no "--" or "..": hub_id); an id it refuses ended the import in its HFValidationError, a traceback
_HUB_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?/[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?")
_HUB_URL = re.compile(r"^(?:https?://)?(?:www\.)?(?:huggingface\.co|hf\.co)/")


class GatedModelError(UsageError):
    """A gated hub model: its licence must be accepted on the hub and with --accept-license."""


class HubError(NeuroBrixError):
    """The hub cannot be reached (or the network is switched off) and the files are not in the local HF cache."""


def normalize(name: str) -> str:
    """A model name as given, without a hub URL prefix or surrounding slashes."""
    return _HUB_URL.sub("", name.strip()).strip("/")


def _truthy(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def hub_offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) as set now, not only when huggingface_hub was imported, read as
    huggingface_hub reads them: ``HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE`` (an empty HF_HUB_OFFLINE gives way)."""
    if "HF_HUB_OFFLINE" in os.environ or "TRANSFORMERS_OFFLINE" in os.environ:
        return _truthy(os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or "")
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def _hf_path(value: str) -> str:
    return os.path.expandvars(os.path.expanduser(value))


def hub_cache() -> Path:
    """The huggingface_hub cache as the environment says now, read as huggingface_hub reads it when imported
    (``constants.HF_HUB_CACHE``): HF_HUB_CACHE, else the older HUGGINGFACE_HUB_CACHE, else HF_HOME's ``hub``, HF_HOME
    defaulting to ``$XDG_CACHE_HOME/huggingface`` (``~/.cache``), each with ``~`` and ``$VAR`` expanded, and a variable
    set but empty taken as set. Another reading looked for models elsewhere than `hf download` had put them (a
    ``$SCRATCH/hf`` taken literally, a folder named ``$SCRATCH`` in the current one; HUGGINGFACE_HUB_CACHE passed over
    for HF_HOME's): offline, a cached model was "not in the cache"; online, downloaded again into another one."""
    home = _hf_path(
        os.environ.get("HF_HOME", os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface"))
    )
    legacy = os.environ.get("HUGGINGFACE_HUB_CACHE", os.path.join(home, "hub"))
    return Path(_hf_path(os.environ.get("HF_HUB_CACHE", legacy)))


def _network_errors() -> tuple[type[BaseException], ...]:
    """What a failed connection raises across huggingface_hub versions (requests', httpx' or httpx2's)."""
    errors: list[type[BaseException]] = [OSError]
    for module in ("httpx", "httpx2"):
        try:
            errors.append(importlib.import_module(module).TransportError)
        except (ImportError, AttributeError):
            pass
    return tuple(errors)


def _model_info(repo_id: str, revision: str | None) -> Any:
    """The hub's ModelInfo (files, gating, commit). A seam for tests."""
    from huggingface_hub import model_info

    return model_info(repo_id, revision=revision)


def _snapshot_download(
    repo_id: str, *, revision: str | None, allow_patterns: Sequence[str], local_files_only: bool
) -> Path:
    """Download (or find in the HF cache) the files matching ``allow_patterns``; the snapshot folder."""
    from huggingface_hub import snapshot_download

    folder = snapshot_download(
        repo_id,
        revision=revision,
        allow_patterns=list(allow_patterns),
        cache_dir=hub_cache(),
        local_files_only=local_files_only,
    )
    return Path(folder)


@contextmanager
def progress_bars(enabled: bool) -> Iterator[None]:
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
    steps = (
        f"1) open {url}, log in and accept the licence there; 2) make your token available on this machine "
        "with `hf auth login` (or set HF_TOKEN); 3) run "
        f"`neurobrix import {repo_id} --accept-license`"
    )
    if refused:
        return (
            f"the hub refused access to the gated model {repo_id}: this machine's token is missing or its "
            f"account has not been granted access. {steps}"
        )
    return f"{repo_id} is a gated model: its licence must be accepted before it is downloaded. {steps}"


def _check_listing(repo_id: str, names: Sequence[str]) -> None:
    """Refuse from the hub's file list, before any download: no config.json, no tokenizer.json, pickle-only."""
    top = [n for n in names if "/" not in n]
    if CONFIG not in top:
        raise CheckpointError(
            f"{repo_id} has no {CONFIG} at the top of the repository; it is not a "
            "transformers checkpoint NeuroBrix can read"
        )
    # an index's shards may lie in a folder of the repository (checked against the listing once it is read)
    if INDEX not in top and not any(n.endswith(".safetensors") for n in top):
        found = pickles(names)
        if found:
            raise pickle_only(repo_id, found)
        gguf = sorted(n for n in top if n.endswith(".gguf"))
        raise CheckpointError(f"{repo_id} has no weights: no *.safetensors file in the repository{gguf_note(gguf)}")
    if SINGLE not in top and INDEX not in top:  # other names alone: from_pretrained loads no model from them
        raise not_transformers_weights(repo_id, sorted(n for n in top if n.endswith(".safetensors")))
    if TOKENIZER not in top:
        raise CheckpointError(f"{repo_id} ships no {TOKENIZER}; NeuroBrix needs the fast tokenizer file")


def exactly(name: str) -> str:
    """The pattern that asks snapshot_download for the file ``name`` and nothing else. Its allow_patterns are globs,
    matched by huggingface_hub's filter_repo_objects with fnmatch (case-sensitive, ``*`` across folders): a name
    holding ``*``, ``?`` or ``[`` (a shard ``w[1].safetensors``, a template ``a*.jinja``) asked for every file it
    matches as a pattern (``w1.safetensors``, ``a-b.jinja``), which were downloaded though never read, or nothing
    at all (``[`` unclosed). Each such character is put in brackets (glob.escape's rule: a bracket holding one
    character matches that character alone)."""
    return re.sub(r"([*?[])", r"[\1]", name)


def _download(repo_id: str, revision: str | None, info: Any) -> tuple[Path, str]:
    """Online: config.json (and the index) first, checked, then exactly the files the engine needs."""
    names = [s.rfilename for s in (info.siblings or [])]
    _check_listing(repo_id, names)
    sharded = INDEX in names and SINGLE not in names  # from_pretrained reads model.safetensors over an index
    head = [CONFIG, INDEX] if sharded else [CONFIG]
    snapshot = _snapshot_download(
        repo_id, revision=revision, allow_patterns=[exactly(n) for n in head], local_files_only=False
    )
    read_config(snapshot)  # an architecture outside the family stops here, before any weight moves
    if SINGLE in names:
        shards = [SINGLE]
    else:  # the listing has the index (_check_listing)
        shards = shards_named(snapshot / INDEX)
        missing = [s for s in shards if s not in names]
        if missing:
            raise MissingShardsError(
                f"{repo_id}: {INDEX} names shards the repository does not have: {', '.join(missing)}"
            )
    templates = [n for n in names if is_template_file(n)]  # the named chat templates transformers reads
    wanted = [CONFIG, TOKENIZER, *(n for n in OPTIONAL if n in names), *templates, *head[1:], *shards]
    wanted = [exactly(n) for n in wanted]  # each the one file it names (names are not patterns)
    snapshot = _snapshot_download(repo_id, revision=snapshot.name, allow_patterns=wanted, local_files_only=False)
    return snapshot, snapshot.name


def _snapshot_of(repo: Path, snapshot: Path) -> bool:
    """Whether ``snapshot`` is a snapshot folder of the repository whose cache folder is ``repo``, as huggingface_hub
    names it: ``<cache>/models--org--name/snapshots/<commit>``, the cache as the environment names it or as its real
    path. snapshot_download resolves the cache folder's links before it names the snapshot, so where HF_HOME, or a
    home folder, is a link (a cache on a larger disk), the snapshot's path was never the cache's as named here, and
    both checks of a snapshot (its files the repository's own, each blob the bytes its name says) were skipped: a
    damaged or foreign file was imported and recorded as the repository's."""
    return snapshot.parent.parent in (repo, Path(os.path.realpath(repo.parent)) / repo.name)


def _own_snapshot(repo_id: str, snapshot: Path) -> None:
    """Refuse a snapshot that holds files from outside its repository's own cache folder. huggingface_hub writes a
    snapshot as a folder named by its commit, each file in it a link into the same repository's ``blobs`` (or the
    file itself): a snapshot folder that is a link (to another revision's or another repository's snapshot), or a file
    or folder in it leading into another repository's cache, is someone else's files under this repository's name and
    commit, which the import would record as the model's source. The repository folder (or the whole cache) moved to
    another disk and linked back keeps its files its own. A link that leads nowhere inside the repository is left to
    the import, which leaves such a file out or refuses it."""
    repo = hub_cache() / f"models--{repo_id.replace('/', '--')}"
    if not _snapshot_of(repo, snapshot):  # (huggingface_hub names it so; a seam that does not is not checked)
        return
    own = Path(os.path.realpath(repo))
    shown = f"the Hugging Face cache's snapshot of {repo_id} at {snapshot.name[:12]}"
    again = f"delete {repo} (or that snapshot) and run the import again, which downloads the repository's own files"
    if own.name.casefold() != repo.name.casefold():
        raise CheckpointError(f"{shown} is another repository's: {repo} is a link to {own}; {again}")
    real = Path(os.path.realpath(snapshot))
    if real != own / "snapshots" / snapshot.name:
        raise CheckpointError(
            f"{shown} is not its own: {snapshot} is a link to {real} (another revision's or repository's "
            f"snapshot); {again}"
        )
    for folder, dirs, files in os.walk(snapshot):
        for name in sorted(dirs + files):
            entry = Path(folder) / name
            target = Path(os.path.realpath(entry))
            if not target.is_relative_to(own):
                raise CheckpointError(
                    f"{shown} holds {entry.relative_to(snapshot)} from outside its repository's cache folder (a link "
                    f"to {target}, another repository's file); {again}"
                )


# how huggingface_hub names a blob (its ETag): an LFS file by the sha256 of its bytes, any other file by git's hash of
# its bytes (sha1 of "blob <size>\0" and the bytes)
_SHA256_NAME = re.compile(r"[0-9a-f]{64}")
_GIT_NAME = re.compile(r"[0-9a-f]{40}")


def _blob_digest(path: Path, git: bool, read: Callable[[int], object] = lambda n: None) -> str:
    """The sha256 of a file's bytes, or git's blob hash of them (``git hash-object``); ``read`` is told each chunk's
    size (a progress bar)."""
    import hashlib

    size = path.stat().st_size
    digest = hashlib.sha1(b"blob %d\0" % size, usedforsecurity=False) if git else hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(16 << 20):
            digest.update(chunk)
            read(len(chunk))
    return digest.hexdigest()


def check_blobs(repo_id: str, snapshot: Path, files: Sequence[str], progress: bool = False) -> None:
    """Refuse a snapshot file whose bytes are not the ones its blob's name says. huggingface_hub stores each file of a
    repository once, in ``blobs/<ETag>``, the ETag being the sha256 of an LFS file's bytes and git's hash of any other
    file's, and checks only a download's size: a blob edited in place (a file of the snapshot written through its
    link), overwritten by a tool, or damaged on disk at its size is imported, and recorded in the manifest as the
    repository's file at its commit, which it is not. Cheap enough: one sequential read of each file the import
    takes (the small ones cost as much again as the manifest's hashing of them; the weights, hard-linked otherwise,
    about 1.7 s per GiB on a loaded 2-core CPU, the read alone 1.4 s of it), once per import, small beside the
    download that wrote them; a run never pays it. A blob named otherwise (an ETag a mirror gave that is no such
    hash), or a file stored in the snapshot itself (a disk without links), has no name to check against."""
    repo = hub_cache() / f"models--{repo_id.replace('/', '--')}"
    if not _snapshot_of(repo, snapshot):  # (as _own_snapshot: a seam that does not lay files out so is not checked)
        return
    blobs = Path(os.path.realpath(repo)) / "blobs"
    named = {}  # each file the import takes whose blob is named by a hash, with that blob
    for file in files:
        blob = Path(os.path.realpath(snapshot / file))
        if blob.parent == blobs and (_SHA256_NAME.fullmatch(blob.name) or _GIT_NAME.fullmatch(blob.name)):
            named[file] = blob
    total = sum(blob.stat().st_size for blob in named.values())
    # a bar only where the check takes a while (about a second per GiB read and hashed)
    shown = progress and total >= 256 << 20
    with byte_progress(f"checking {repo_id}", total, shown) as bar:
        for file, blob in named.items():
            _check_blob(repo_id, snapshot, file, blob, bar.update)


def _check_blob(repo_id: str, snapshot: Path, file: str, blob: Path, read: Callable[[int], object]) -> None:
    """Refuse ``file`` of the snapshot if its blob's bytes are not the ones the blob's name says."""
    sha256 = _SHA256_NAME.fullmatch(blob.name)
    found = _blob_digest(blob, git=not sha256, read=read)
    if found != blob.name:
        what = "sha256" if sha256 else "git blob hash"
        raise CheckpointError(
            f"the Hugging Face cache's {file} of {repo_id} at {snapshot.name[:12]} is not the file its blob is "
            f"named for: the {what} of {blob} is {found[:12]}..., not {blob.name[:12]}... (edited in place, "
            f"overwritten or damaged on disk); delete {blob} and run the import again with the network on, which "
            "downloads the repository's own file"
        )


def _from_cache(
    repo_id: str, revision: str | None, why: str, *, offline: bool, accept_license: bool = False
) -> tuple[Path, str]:
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        snapshot = _snapshot_download(repo_id, revision=revision, allow_patterns=HUB_PATTERNS, local_files_only=True)
    except LocalEntryNotFoundError as exc:
        at = f" at revision {revision}" if revision else ""
        partly = "only partly" if type(exc).__name__ == "IncompleteSnapshotError" else "not"
        again = f"neurobrix import {repo_id}" + (f" --revision {revision}" if revision else "")
        again += " --accept-license" if accept_license else ""  # the command as given, ready to run again
        raise HubError(
            f"{repo_id}{at} is {partly} in the Hugging Face cache ({hub_cache()}) and {why}, so it cannot be "
            f"downloaded. {'Unset HF_HUB_OFFLINE on a machine with a network' if offline else 'Check the network'}"
            f" and run `{again}` again, or import a local checkpoint folder"
        ) from exc
    return snapshot, snapshot.name


def fetch(repo_id: str, revision: str | None, accept_license: bool) -> tuple[Path, str]:
    """The snapshot folder holding the model's files, and its commit (refused unless they are the repository's own)."""
    snapshot, commit = _fetch(repo_id, revision, accept_license)
    _own_snapshot(repo_id, snapshot)
    return snapshot, commit


def _fetch(repo_id: str, revision: str | None, accept_license: bool) -> tuple[Path, str]:
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    if hub_offline():
        why = "the network is switched off (HF_HUB_OFFLINE=1)"
        return _from_cache(repo_id, revision, why, offline=True, accept_license=accept_license)
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
        raise ModelNotFoundError(
            f"{repo_id} has no revision {revision!r} on the hub; give a branch, tag or commit that exists"
        ) from exc
    except _network_errors() as exc:
        why = f"the hub cannot be reached ({type(exc).__name__}: {exc})"
        return _from_cache(repo_id, revision, why, offline=False, accept_license=accept_license)
    if getattr(info, "gated", False) and not accept_license:
        raise GatedModelError(_gated_message(repo_id, refused=False))
    try:
        return _download(repo_id, revision, info)
    except GatedRepoError as exc:
        raise GatedModelError(_gated_message(repo_id, refused=True)) from exc
    except (RepositoryNotFoundError, RevisionNotFoundError) as exc:
        raise ModelNotFoundError(f"{repo_id}: {exc}") from exc
    except _network_errors() as exc:
        raise HubError(
            f"downloading {repo_id} failed ({type(exc).__name__}: {exc}); run the import again "
            "(files already downloaded stay in the Hugging Face cache)"
        ) from exc


def hub_id(source: str) -> str | None:
    """``org/name`` when ``source`` is a hub id or hub URL, else None."""
    candidate = normalize(source)
    if _HUB_ID.fullmatch(candidate) and ".." not in candidate and "--" not in candidate and candidate[-4:] != ".git":
        return candidate
    return None
