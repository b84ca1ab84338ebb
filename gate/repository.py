"""The repository every dist is judged against: the files git tracks, and what pyproject.toml declares.

The allow-list of a wheel and of an sdist comes from here, never from the dist: the package's files
are the files git tracks under ``neurobrix/`` (their bytes as the working tree holds them, which is
what a build packs), the sdist may carry any tracked file byte for byte, and the core metadata is
what the repository's own build backend prepares from its pyproject.toml (run in isolation, see
:mod:`gate.backend`). Entry points are read from pyproject.toml itself. Anything unusable here (no
git checkout, a backend that fails) is a :class:`GateError`: the gate cannot judge without it.

Because the working tree is what dists are held against, :func:`tree_state` says whether it is a commit's: the
commit checked out, and every tracked path whose index entry, bytes, executable bit or file type is not that
commit's (the bytes hashed here as git hashes a blob, no filter or cached stat in between). The reports record
it, and the command line judges against a tree that is not a commit only when told to (``--allow-dirty``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from neurobrix.errors import TablesError
from neurobrix.tables import TRACKED_NAME, WHEEL_DIR

from .archive import Digest
from .backend import BackendFailed, backend_version, clean_environment, prepare_metadata
from .checks import GateError, Limits
from .completeness import SOURCE_DIR, parse_list

if sys.version_info >= (3, 11):
    import tomllib
else:  # check-wheel-contents brings tomli there
    import tomli as tomllib

PACKAGE = "neurobrix"  # [tool.hatch.build.targets.wheel] packages (held equal at run time: modelled_build)
BACKEND = "hatchling.build"  # the build backend whose layout the model below is
BACKEND_DISTRIBUTION = "hatchling"  # the one requirement of [build-system] (its version left free)
GIT_TIMEOUT_S = 30
_REGULAR, _EXECUTABLE = "100644", "100755"


@dataclass(frozen=True)
class Declared:
    """What the repository's pyproject.toml makes of a release."""

    name: str  # as the metadata spells it
    version: Version
    metadata: bytes  # METADATA as the repository's build backend prepares it
    entry_points: dict[str, dict[str, str]]  # group -> name -> "module:attr"
    readme: str | None  # the file pyproject.toml names as the readme
    generator: str  # WHEEL's Generator as the build backend writes it: its distribution and version
    license_files: tuple[str, ...] = ()  # the License-File entries of the metadata: a wheel's dist-info/licenses/

    @property
    def stem(self) -> str:
        """``name-version`` as wheel and sdist file names and the .dist-info folder spell it."""
        return f"{re.sub(r'[-_.]+', '_', self.name).lower()}-{self.version}"

    @property
    def dist_info(self) -> str:
        return f"{self.stem}.dist-info"


@dataclass
class Repository:
    root: Path
    tracked: dict[str, bool]  # path (POSIX, from the root) -> executable; regular files only
    declared: Declared
    _digests: dict[str, Digest | None] = field(default_factory=dict, repr=False)
    links: dict[str, str] = field(default_factory=dict)  # tracked symbolic links (120000) and submodules (160000)
    # path -> the git object id of the bytes judged against (None: no regular file there), each read once (round 67)
    judged: dict[str, str | None] = field(default_factory=dict)
    object_length: int = 40  # hex digits of an object id: 40 (sha1) or 64 (a repository of the sha256 format)

    def read(self, path: str) -> bytes | None:
        """The working tree's bytes of a tracked regular file; None if it is not one."""
        if path not in self.tracked:
            return None
        return _read_judged(self.root, path, self.judged, self.object_length)

    def digest(self, path: str) -> Digest | None:
        if path not in self._digests:
            data = self.read(path)
            self._digests[path] = None if data is None else Digest(hashlib.sha256(data).digest(), len(data))
        return self._digests[path]

    def package_files(self) -> list[str]:
        """The package's files: tracked by git under ``neurobrix/`` and present in the working tree (what a
        build packs)."""
        return sorted(p for p in self.tracked if p.startswith(f"{PACKAGE}/") and self.digest(p) is not None)

    def package_links(self) -> dict[str, str]:
        """Tracked entries under ``neurobrix/`` that are no file, each with what git holds it as (gate round 66). A
        wheel holds files only, so no build ships one as the repository holds it: hatchling packs a link to a file as
        the file's bytes (refused, G107), walks a link to a folder it has not walked yet as that folder's files, and
        leaves out without a word a link to a folder it walked already (``neurobrix/zzz`` linking to ``ops``) and a
        submodule whose folder is empty: such wheels and sdists held every tracked file and passed, the link missing."""
        names = {_SYMLINK: "symbolic link", _GITLINK: "submodule"}
        return {p: names[m] for p, m in sorted(self.links.items()) if p.startswith(f"{PACKAGE}/")}


@dataclass(frozen=True)
class TreeState:
    """Whether the files the gate judges against are one commit's: ``commit`` (None: nothing committed) and the
    tracked paths that differ from it, sorted."""

    commit: str | None
    differs: tuple[str, ...] = ()

    SHOWN = 20

    @property
    def clean(self) -> bool:
        return self.commit is not None and not self.differs

    def describe(self) -> str:
        if self.commit is None:
            return "no commit is checked out"
        if not self.differs:
            return f"commit {self.commit}, every tracked file as committed"
        shown = ", ".join(self.differs[: self.SHOWN])
        more = f" and {len(self.differs) - self.SHOWN} more" if len(self.differs) > self.SHOWN else ""
        count = len(self.differs)
        return (
            f"commit {self.commit} with {count} tracked file{'s' if count > 1 else ''} not as committed: {shown}{more}"
        )

    def as_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "clean": self.clean, "differs": list(self.differs)}


_GITLINK, _SYMLINK = "160000", "120000"


def _read_judged(root: Path, path: str, judged: dict[str, str | None], length: int) -> bytes | None:
    """The working tree's bytes of ``path`` if it is a regular file (None if not), their object id recorded in
    ``judged``: what the gate judges dists against, to be held to the commit's once everything is judged
    (:func:`judged_otherwise`). A path read again with other bytes (a top file given to the backend, then compared
    with the sdist's) keeps a mark that is no object id, whatever a later reading finds."""
    file = root / path
    try:
        data = None if file.is_symlink() or not file.is_file() else file.read_bytes()
    except OSError:
        data = None
    oid = None if data is None else _blob_id(data, length)
    judged[path] = oid if judged.get(path, oid) == oid else _READ_OTHERWISE
    return data


_READ_OTHERWISE = "read twice, other bytes each time"


def judged_otherwise(repo: Repository, commit: str) -> list[str]:
    """Where what the gate judged dists against was not ``commit``'s (gate round 67): each tracked path whose mode git
    listed otherwise, or that it listed and the commit lacks or the other way round, and each file whose bytes the
    gate read are not the commit's blob. The tree's state is read before the build and again at the end, but the
    tracked list, the bytes and the metadata are read between the two, while the dists are judged: a file edited
    (or a module staged, a file deleted, a dependency added, another commit checked out) after the first reading and
    put back before the second made dists holding the edit pass, the report clean at the commit."""
    head = _commit_files(repo.root, commit)
    listed = {p: _EXECUTABLE if x else _REGULAR for p, x in repo.tracked.items()} | repo.links
    differs = {p for p in head.keys() | listed.keys() if head.get(p, ("", ""))[0] != listed.get(p)}
    differs.update(p for p, oid in repo.judged.items() if head.get(p, ("", ""))[1] != oid)
    return sorted(differs)


def _blob_id(data: bytes, length: int) -> str:
    """The object id git gives a blob of ``data`` (sha1, or sha256 in a repository of that format)."""
    algorithm = hashlib.sha256 if length == 64 else hashlib.sha1
    return algorithm(b"blob %d\0" % len(data) + data).hexdigest()


def _entries(listing: str) -> dict[str, tuple[str, str]]:
    """path -> (mode, object id) from ``git ls-files --stage -z``; a conflicted path (a stage other than 0) as mode
    'conflict'."""
    entries: dict[str, tuple[str, str]] = {}
    for record in listing.split("\0"):
        if not record:
            continue
        info, _, path = record.partition("\t")
        mode, oid, stage = info.split(" ")[:3]
        entries[path] = (mode, oid) if stage == "0" else ("conflict", "")
    return entries


def _differs_from(root: Path, path: str, mode: str, oid: str) -> bool:
    """Whether the working tree's ``path`` is not the committed (mode, object id)."""
    file = root / path
    try:
        info = file.lstat()
        if mode == _SYMLINK:
            return not stat.S_ISLNK(info.st_mode) or _blob_id(os.fsencode(os.readlink(file)), len(oid)) != oid
        if mode in (_REGULAR, _EXECUTABLE):
            if not stat.S_ISREG(info.st_mode) or bool(info.st_mode & stat.S_IXUSR) != (mode == _EXECUTABLE):
                return True
            return _blob_id(file.read_bytes(), len(oid)) != oid
    except OSError:
        return True
    return False  # a submodule: its index entry is compared, its files are another repository's


def read_tree_state(root: Path) -> TreeState:
    """The commit checked out at ``root`` and every tracked path whose index entry or working-tree file differs
    from it (read afresh; :func:`tree_state` caches it per process). No git checkout at all is a GateError: taken for
    one with nothing committed, it was "no commit is checked out ... or pass --allow-dirty", which then failed on the
    same missing checkout (gate round 32)."""
    _require_top(root)
    commit = _git_or_none(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if commit is None:
        return TreeState(None)
    head = _commit_files(root, commit)
    staged = _entries(_git(root, "ls-files", "--stage", "-z"))
    differs = {p for p in head.keys() | staged.keys() if head.get(p) != staged.get(p)}
    differs.update(p for p, (mode, oid) in head.items() if p not in differs and _differs_from(root, p, mode, oid))
    differs.update(_tables_unlisted(root, head, differs))
    return TreeState(commit, tuple(sorted(differs)))


TRACKED_LIST = f"{SOURCE_DIR}/{TRACKED_NAME}"  # the reference tracked list as the repository keeps it
_IN_SYNC = "`python -m conformance track --check`"


def _tables_unlisted(root: Path, head: dict[str, tuple[str, str]], differs: set[str]) -> set[str]:
    """A note for each file of the commit under ``tables/`` that its ``tables/TRACKED.yaml`` does not list with these
    bytes, and for each listed one the commit lacks (gate round 50). A dist's tables are judged against that list,
    never against git, and round 42 held the list to the commit's; nothing held the commit's list to its tables, so at
    a commit that changed or added a table without the list (ci.yml checks that on a push, and a release tag may name
    any commit) the dists holding the list's table bytes, not the commit's, passed clean: whoever built them chose the
    tables. A path ``differs`` names already (the working tree is not the commit's there) is not read again."""
    if TRACKED_LIST not in head:
        # an untracked list on disk is what the gate reads by default, and a run against it was clean at the commit
        on_disk = (root / TRACKED_LIST).exists() or (root / TRACKED_LIST).is_symlink()
        return (
            {f"{TRACKED_LIST}: not a file of the commit, yet the list the tables are judged against"}
            if on_disk
            else set()
        )
    if TRACKED_LIST in differs:
        return set()
    if head[TRACKED_LIST][0] not in (_REGULAR, _EXECUTABLE):  # a link: the gate would read the file it names
        return {f"{TRACKED_LIST}: not a regular file of the commit (mode {head[TRACKED_LIST][0]})"}
    limit = Limits().text_size
    try:
        with (root / TRACKED_LIST).open("rb") as fh:
            listed = {f"{SOURCE_DIR}/{f.path}": f for f in parse_list(fh.read(limit + 1), TRACKED_LIST, limit)}
    except (TablesError, OSError) as exc:
        return {f"{TRACKED_LIST}: not a tracked list the tables can be judged against ({exc})"}
    notes: set[str] = set()
    for path in listed.keys() - head.keys():
        notes.add(f"{path}: in {TRACKED_LIST}, not a file of the commit ({_IN_SYNC})")
    for path, (mode, _) in head.items():
        if not path.startswith(f"{SOURCE_DIR}/") or path == TRACKED_LIST or path in differs:
            continue
        entry = listed.get(path)
        if entry is None:
            notes.add(f"{path}: a file of the commit that {TRACKED_LIST} does not list ({_IN_SYNC})")
            continue
        try:
            with (root / path).open("rb") as fh:
                data = fh.read(entry.size + 1) if mode in (_REGULAR, _EXECUTABLE) else None
        except OSError:
            data = None
        if data is None or len(data) != entry.size or hashlib.sha256(data).hexdigest() != entry.sha256:
            notes.add(f"{path}: not the bytes {TRACKED_LIST} lists ({_IN_SYNC})")
    return notes


def with_reference(state: TreeState, root: Path, reference: bytes, named: Path) -> TreeState:
    """``state``, with the reference tracked list named among what is not the commit's where its bytes are not the
    working tree's ``tables/TRACKED.yaml`` (which ``state`` already names where that is not the commit's): the tables
    of a wheel and of an sdist are judged against that list, not against git, so a run with ``--tracked`` naming
    another list passed dists holding tables the commit never held, its report clean at that commit (gate round 42)."""
    try:
        own = (root / TRACKED_LIST).read_bytes()
    except OSError:
        own = None
    if state.commit is None or own == reference:
        return state
    note = f"--tracked {named}: not the commit's {TRACKED_LIST}"
    return TreeState(state.commit, tuple(sorted({*state.differs, note})))


@functools.lru_cache(maxsize=4)
def tree_state(root: Path) -> TreeState:
    """:func:`read_tree_state`, once per process (the command line and the report ask for it)."""
    return read_tree_state(root)


@functools.lru_cache(maxsize=4)
def load_repository(root: Path) -> Repository:
    """The repository at ``root`` (cached per process: it is read once per run, and tests run many)."""
    entries = _tracked_entries(root)
    modes = {p: m for p, (m, _) in entries.items()}
    tracked = {p: m == _EXECUTABLE for p, m in modes.items() if m in (_REGULAR, _EXECUTABLE)}
    links = {p: m for p, m in modes.items() if m in (_SYMLINK, _GITLINK)}
    length = len(next(iter(entries.values()))[1]) if entries else 40
    judged: dict[str, str | None] = {}
    declared = _declared(root, tracked, judged, length)
    return Repository(root, tracked, declared, links=links, judged=judged, object_length=length)


# Every git call runs with these first (gate round 45). The gate reads the checkout's own .git, which whatever ran in
# the checkout before it (a build step, a cache restored, a developer's tools) may have configured, and git reads
# ~/.gitconfig and the system's config too. `core.fsmonitor` names a command that `git ls-files` runs (git 2.39 ran it
# twice per call); hooks and the other command-running settings are not run by the commands the gate makes, and
# `core.hooksPath` is set away all the same. A replace ref (refs/replace/<commit>) made `git ls-tree <commit>` list
# another commit's tree under the commit's own id, so a tree edited, staged and "replaced" was clean at the commit;
# the commit-graph file, whose trees `git status` takes on trust, is not read either.
# `core.fsmonitor=` empty: off both for git 2.36 and later (a boolean there) and for older git (a hook's path, where
# "false" would be a command to run).
_SAFE_GIT = (
    "--no-replace-objects",
    "-c",
    "core.fsmonitor=",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.commitGraph=false",
)


def _run_git(root: Path, args: tuple[str, ...], given: bytes = b"") -> bytes:
    env = {k: v for k, v in clean_environment().items() if not k.startswith("GIT_")}
    try:
        result = subprocess.run(
            ["git", *_SAFE_GIT, "-C", str(root), *args],
            capture_output=True,
            input=given,
            env=env,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GateError(
            f"git could not be run in {root}: {exc}; the gate judges dists against the files git tracks"
        ) from exc
    if result.returncode != 0:
        raise GateError(
            f"{root} is not a usable git checkout (`git {' '.join(args)}`: "
            f"{result.stderr.decode('utf-8', 'replace').strip()}); the gate judges dists against the files git tracks"
        )
    return result.stdout


def _git(root: Path, *args: str) -> str:
    # a tracked path need not be UTF-8 (`-z` lists its bytes as they are): the bytes the file system gives back, not
    # a UnicodeDecodeError ("internal error", gate round 32)
    return _run_git(root, args).decode("utf-8", "surrogateescape")


def _objects(root: Path, ids: list[str], kind: str) -> dict[str, bytes]:
    """The bytes of each object of ``ids``, each hashed here as git names an object: an object whose bytes are not
    its id's is a GateError. git checks a commit's bytes when it reads one, never a tree's: a loose tree object
    overwritten with another tree's bytes made `git ls-tree <commit>` list the other tree under the commit's id (gate
    round 45), as a corrupted object store would."""
    out = _run_git(root, ("cat-file", "--batch"), "".join(f"{oid}\n" for oid in ids).encode())
    found: dict[str, bytes] = {}
    at = 0
    for oid in ids:
        end = out.index(b"\n", at)
        header = out[at:end].split(b" ")
        if len(header) != 3 or header[0].decode() != oid or header[1].decode() != kind:
            raise GateError(f"{root}: git's object store has no {kind} {oid} (`git fsck` says more)")
        size = int(header[2])
        data = out[end + 1 : end + 1 + size]
        at = end + 2 + size
        algorithm = hashlib.sha256 if len(oid) == 64 else hashlib.sha1
        if algorithm(b"%s %d\0" % (kind.encode(), len(data)) + data).hexdigest() != oid:
            raise GateError(
                f"{root}: git's object store holds other bytes under the {kind} {oid} (a corrupted or overwritten "
                "object: `git fsck` names it); the gate cannot read the commit's files"
            )
        found[oid] = data
    return found


def _commit_files(root: Path, commit: str) -> dict[str, tuple[str, str]]:
    """path -> (mode, object id) of every entry of ``commit``'s tree but its folders, as ``git ls-tree -r`` lists them,
    read from objects whose bytes are checked against their ids (:func:`_objects`)."""
    body = _objects(root, [commit], "commit")[commit]
    first = body.split(b"\n", 1)[0].split(b" ")
    if len(first) != 2 or first[0] != b"tree":
        raise GateError(f"{root}: commit {commit} names no tree")
    width = len(commit) // 2
    entries: dict[str, tuple[str, str]] = {}
    pending = {"": first[1].decode()}
    while pending:
        trees = _objects(root, sorted(set(pending.values())), "tree")
        deeper: dict[str, str] = {}
        for prefix, oid in pending.items():
            data, at = trees[oid], 0
            while at < len(data):
                space = data.index(b" ", at)
                nul = data.index(b"\0", space)
                mode = data[at:space].decode()
                name = data[space + 1 : nul].decode("utf-8", "surrogateescape")
                child = data[nul + 1 : nul + 1 + width].hex()
                at = nul + 1 + width
                if mode == "40000":
                    deeper[f"{prefix}{name}/"] = child
                else:
                    entries[prefix + name] = (mode, child)
        pending = deeper
    return entries


def _git_or_none(root: Path, *args: str) -> str | None:
    """``git args`` stripped, or None where git answers with a failure (a name that resolves to nothing)."""
    try:
        return _git(root, *args).strip() or None
    except GateError:
        return None


def _require_top(root: Path) -> None:
    """A GateError unless ``root`` is the top of a git checkout."""
    top = Path(_git(root, "rev-parse", "--show-toplevel").strip())
    if top.resolve() != root.resolve():
        raise GateError(f"{root} is not the top of its git checkout ({top})")


def _tracked_modes(root: Path) -> dict[str, str]:
    """Every path git tracks at ``root``, with its mode (100644, 100755, 120000 a link, 160000 a submodule)."""
    return {p: m for p, (m, _) in _tracked_entries(root).items()}


def _tracked_entries(root: Path) -> dict[str, tuple[str, str]]:
    """Every path git tracks at ``root``, with its mode and object id as the index holds them."""
    _require_top(root)
    entries: dict[str, tuple[str, str]] = {}
    for record in _git(root, "ls-files", "--stage", "-z").split("\0"):
        if not record:
            continue
        info, _, path = record.partition("\t")
        mode, oid = info.split(" ")[:2]
        entries[path] = (mode, oid)
    return entries


def _tracked_files(root: Path) -> dict[str, bool]:
    return {
        p: m == _EXECUTABLE
        for p, m in _tracked_modes(root).items()
        if m in (_REGULAR, _EXECUTABLE)  # not links (120000) nor submodules (160000)
    }


def _top_of_tree(
    root: Path, tracked: dict[str, bool], into: Path, judged: dict[str, str | None], length: int, config_bytes: bytes
) -> None:
    """A folder ``into`` holding a link to each folder at the top of the working tree that holds a tracked file, and
    a copy of each tracked file there, and nothing else: the tree the build backend prepares the metadata from.
    hatchling reads files there beyond those pyproject.toml names (a hatch.toml beside it, a PKG-INFO, LICENSE* and
    NOTICE* files), and within the folders only the files pyproject.toml names (which git tracks). A link for each of
    the 574 tracked files instead took 0.4 s to make and 1.1 s to remove on the 2-core machine the tests run on. The
    top's files are copies of bytes read once and recorded in ``judged`` (gate round 67: pyproject.toml and the
    readme, linked, were read by the backend at one moment and compared with the sdist's at another);
    ``config_bytes`` is pyproject.toml's, read already."""
    into.mkdir()
    for top in sorted({path.split("/", 1)[0] for path in tracked}):
        source = root / top
        try:
            kind = os.lstat(source).st_mode
        except OSError:
            kind = 0  # gone from the working tree (the tree's state names it): a build would lack it too
        if top in tracked:
            if stat.S_ISREG(kind):  # a link is no file of the commit (the tree's state names it)
                data = config_bytes if top == "pyproject.toml" else _read_judged(root, top, judged, length)
                if data is not None:
                    (into / top).write_bytes(data)
        elif stat.S_ISDIR(kind):
            (into / top).symlink_to(source)


def modelled_build(readme: str | None) -> dict[str, Any]:
    """The ``[tool.hatch.build]`` table whose wheel and sdist the gate's checks describe (gate round 51): the wheel
    holds the package (G107-G109) and the tables under ``neurobrix/_tables/`` (G101-G106), the sdist those,
    pyproject.toml and the readme (G509). Any other configuration lays out another wheel than the one judged: a
    package, a ``force-include``, ``shared-data`` or ``shared-scripts`` added, a file excluded, a build hook."""
    include = [f"/{PACKAGE}/", f"/{SOURCE_DIR}/", *([f"/{readme}"] if readme else []), "/pyproject.toml"]
    return {
        "targets": {
            "wheel": {"packages": [PACKAGE], "force-include": {SOURCE_DIR: WHEEL_DIR}},
            "sdist": {"include": include},
        }
    }


def _flat(table: Any, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """A TOML table as key paths (``("targets", "wheel", "packages")``) and their values, tables opened down to the
    leaves. A path, not a dotted string (gate round 52): a quoted key holding dots, ``"targets.wheel.packages" =
    ["neurobrix"]`` beside ``[tool.hatch.build.targets.wheel]``'s own ``packages``, was flattened to the same string,
    the later value kept, so the modelled value hid the one hatchling builds with (it ignores the quoted key)."""
    if not isinstance(table, dict) or not table:
        return {prefix: table}
    flat: dict[tuple[str, ...], Any] = {}
    for key, value in table.items():
        flat.update(_flat(value, (*prefix, str(key))))
    return flat


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _dotted(path: tuple[str, ...]) -> str:
    """A key path as TOML writes it: bare keys joined by dots, any other key quoted."""
    return ".".join(k if _BARE_KEY.fullmatch(k) else json.dumps(k) for k in path)


def _check_build_model(root: Path, config: dict[str, Any], tracked: dict[str, bool], readme: str | None) -> None:
    """A GateError unless the build the repository declares is the one the gate models (gate round 51). The model was
    held to pyproject.toml by the tests alone, and a release may be of any commit: at a commit adding a package, a
    ``force-include`` or an ``exclude``, the wheel built before it passed every check, clean at that commit, while the
    commit's own build installs other files (and is refused, G107 or G108)."""
    file = root / "pyproject.toml"
    where = "the gate models (gate/repository.py) and judges dists against: change the gate with it"
    system = config.get("build-system", {})
    backend = system.get("build-backend") if isinstance(system, dict) else None
    if backend != BACKEND or "backend-path" in system:
        named = f"{backend!r}" + (" with a backend-path" if "backend-path" in system else "")
        raise GateError(f"{file}: [build-system] names the backend {named}, not {BACKEND!r} alone, the one {where}")
    _check_build_requires(file, system.get("requires"), where)
    # hatchling reads a hatch.toml's [build] beside pyproject.toml's; an untracked one is no file of the commit (round
    # 21: the reference is prepared from tracked files alone), and a dist built with it differs from the model (G107/8)
    for name in ("hatch.toml",):
        if name in tracked:
            raise GateError(
                f"{root / name}: hatchling reads its [build] beside pyproject.toml's, not the build {where}"
            )
    tool = config.get("tool", {})
    hatch = tool.get("hatch", {}) if isinstance(tool, dict) else tool
    build = hatch.get("build") if isinstance(hatch, dict) else hatch
    ours = {} if build is None else _flat(build)
    model = _flat(modelled_build(readme))
    differs = [
        f"{_dotted(key)} = {ours[key]!r}"
        + (f", the model's {model[key]!r}" if key in model else ", which the model lacks")
        for key in sorted(ours)
        if ours.get(key) != model.get(key)
    ] + [f"{_dotted(key)} missing, the model's {model[key]!r}" for key in sorted(model) if key not in ours]
    if differs:
        raise GateError(f"{file}: [tool.hatch.build] is not the build configuration {where}; {'; '.join(differs)}")
    _check_metadata_model(file, hatch if isinstance(hatch, dict) else {}, where)


def _check_build_requires(file: Path, requires: Any, where: str) -> None:
    """A GateError unless ``[build-system] requires`` names the backend's distribution alone (gate round 56), each
    requirement plain: no URL, extra or marker. pip builds an sdist in an environment of exactly that list, while the
    gate prepares the metadata and rebuilds the wheel (G508) with the backend installed beside it: a second requirement
    is code the gate never runs, and a `.pth` file in its wheel runs in pip's build. One that appended a line to
    `neurobrix/cli.py` in the unpacked sdist was shown: the wheel and sdist built before passed, clean at the commit,
    and pip's wheel of that sdist held the line. The version specifier is left free (round 51: the newest hatchling)."""
    named = [] if isinstance(requires, list) and requires else [repr(requires)]  # pip reads a list of strings only
    for item in requires if isinstance(requires, list) else []:
        try:
            requirement = Requirement(item) if isinstance(item, str) else None
        except InvalidRequirement:
            requirement = None
        plain = requirement is not None and not (requirement.url or requirement.extras or requirement.marker)
        if not (plain and requirement is not None and canonicalize_name(requirement.name) == BACKEND_DISTRIBUTION):
            named.append(repr(item))
    if named:
        alone = f"not {BACKEND_DISTRIBUTION!r} alone, the backend {where}"
        raise GateError(f"{file}: [build-system] requires {', '.join(named)}, {alone}")


# The tables hatchling reads beside [tool.hatch.build] (gate round 56): [tool.hatch.metadata], none (no metadata hook),
# and [tool.hatch.version], the version read from the package's __init__.py.
MODELLED_HATCH: dict[str, dict[str, Any]] = {"metadata": {}, "version": {"path": f"{PACKAGE}/__init__.py"}}
_ABSENT = object()


def _check_metadata_model(file: Path, hatch: dict[str, Any], where: str) -> None:
    """A GateError unless ``[tool.hatch.metadata]`` and ``[tool.hatch.version]`` are the ones the gate models (gate
    round 56). A metadata hook makes the metadata a program's output, not pyproject.toml's declarations: the gate runs
    it once, in its own environment, and compares the entry points with pyproject.toml's; every build from the sdist
    runs it again, and fills what the sdist's PKG-INFO does not hold (entry points, a field it gave nothing). A hook
    adding a `pip` gui script where `CI` is unset passed the wheel and sdist built and judged with `CI=1`, smoke and
    all, while the sdist's build elsewhere installs a `pip` launcher. A version source other than the file read is
    held with it (hatchling takes the sdist's PKG-INFO version over any source: shown harmless, modelled anyway)."""
    for table, modelled in MODELLED_HATCH.items():
        declared = hatch.get(table)
        # key paths and values; an empty table (or none) is no key, an empty table within it (a hook's) is one
        found = {k: v for k, v in _flat({} if declared is None else declared).items() if k or v != {}}
        wanted = {k: v for k, v in _flat(modelled).items() if k or v != {}}
        named = [
            f"{_dotted(key) or table} = {found[key]!r}"
            + (f", the model's {wanted[key]!r}" if key in wanted else ", which the model lacks")
            if key in found
            else f"{_dotted(key)} missing, the model's {wanted[key]!r}"
            for key in sorted(found.keys() | wanted.keys())
            if found.get(key, _ABSENT) != wanted.get(key, _ABSENT)
        ]
        if named:
            raise GateError(f"{file}: [tool.hatch.{table}] is not the configuration {where}; {'; '.join(named)}")


def _declared(root: Path, tracked: dict[str, bool], judged: dict[str, str | None], length: int) -> Declared:
    try:
        data = (root / "pyproject.toml").read_bytes()  # read once: these bytes are what the backend is given
        if "pyproject.toml" in tracked:
            judged["pyproject.toml"] = _blob_id(data, length)
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # read_text's newlines, as before
        config: dict[str, Any] = tomllib.loads(text)
        project: dict[str, Any] = config["project"]
        backend = str(config["build-system"]["build-backend"]).split(".", 1)[0]  # hatchling.build: hatchling
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError) as exc:
        raise GateError(f"{root / 'pyproject.toml'}: cannot be read for the project's declarations: {exc}") from exc
    readme = project.get("readme")
    readme_file = readme if isinstance(readme, str) else readme.get("file") if isinstance(readme, dict) else None
    _check_build_model(root, config, tracked, readme_file)
    # The backend prepares the metadata from the tracked entries of the tree's top alone (gate round 21): in the tree,
    # hatchling also read files git does not track, which the tree's state (and so the report's "clean") never counts:
    # a hatch.toml beside pyproject.toml (its [version] source), a PKG-INFO (the version of a dynamic one), LICENSE* or
    # NOTICE* files. An untracked hatch.toml naming a file of `__version__ = "0.1.0.0"` made the reference 0.1.0.0, and
    # a wheel and sdist of 0.1.0.0 passed as this commit's, `--expect-version v0.1.0` too, where the commit says 0.1.0.
    with tempfile.TemporaryDirectory(prefix="neurobrix-gate-metadata-") as tmp:
        try:
            source = Path(tmp) / "tree"
            _top_of_tree(root, tracked, source, judged, length, data)
            metadata = (prepare_metadata(source, Path(tmp) / "out") / "METADATA").read_bytes()
            generator = f"{backend} {backend_version(backend)}"  # no PEP 517 hook prepares WHEEL: hatchling's form
        except (BackendFailed, OSError) as exc:
            raise GateError(f"the repository's own metadata cannot be prepared: {exc}") from exc
    fields = _headers(metadata)
    license_files = tuple(str(v) for v in BytesHeaderParser().parsebytes(metadata).get_all("License-File", []))
    try:
        version = Version(fields.get("version", ""))
    except InvalidVersion as exc:
        raise GateError(f"the repository's build backend prepares an invalid version: {exc}") from exc
    name = fields.get("name", "")
    if canonicalize_name(name) != canonicalize_name(str(project.get("name", ""))):
        raise GateError(f"the repository's build backend prepares metadata for {name!r}, not {project.get('name')!r}")
    return Declared(name, version, metadata, declared_entry_points(project), readme_file, generator, license_files)


def declared_entry_points(project: dict[str, Any]) -> dict[str, dict[str, str]]:
    """pyproject.toml's entry points in the order hatchling writes entry_points.txt (gate round 59): console scripts,
    gui scripts, then the other groups sorted by name, each group's names sorted, an empty group left out. Taken in
    pyproject.toml's order before, a commit declaring ``neurobrix`` then ``NeuroBrix`` had its own wheel refused (G408,
    "other bytes than the build backend writes")."""
    entry_points: dict[str, dict[str, str]] = {}
    for key, group in (("scripts", "console_scripts"), ("gui-scripts", "gui_scripts")):
        if project.get(key):
            entry_points[group] = {str(k): str(v) for k, v in sorted(project[key].items())}
    for group, points in sorted(dict(project.get("entry-points", {})).items()):
        if points:
            entry_points[str(group)] = {str(k): str(v) for k, v in sorted(dict(points).items())}
    return entry_points


def _headers(metadata: bytes) -> dict[str, str]:
    message = BytesHeaderParser().parsebytes(metadata)
    return {k.lower(): str(v) for k, v in message.items()}
