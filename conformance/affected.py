"""Which GPU classes a change affects: the matrix of the self-hosted GPU conformance workflow.

The rules, on paths relative to the repository root (as ``git diff --name-only`` prints them):

- a path under ``tables/<class>/`` affects that class;
- a path under one of :data:`KERNEL_PATHS` (the kernels, the settings lookup, the table format, the
  conformance tools) affects every GPU class that has kernel tables.

Only GPU classes are ever named: classes of the tables folder that have a ``class.yaml`` and whose
backend is not ``interpreter`` (the interpreter class is checked by the CPU CI on every push). A
class folder that a change removed, or that has no ``class.yaml``, is not a class and is not named.
The classes are read with :func:`neurobrix.tables.load`, so a tables folder out of sync with its
tracked list is refused here as everywhere else.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from neurobrix import tables as nb_tables
from neurobrix.cli import close_hint
from neurobrix.errors import UsageError

REPO = Path(__file__).resolve().parent.parent
TABLES_DIR = "tables"
# A change to any of these can change a kernel's result, the setting it runs with, or the code its proofs are bound to
# (kernel_source.py), on every class.
KERNEL_PATHS: tuple[str, ...] = (
    "neurobrix/ops/",
    "neurobrix/buckets.py",
    "neurobrix/dtypes.py",
    "neurobrix/kernel_source.py",
    "neurobrix/tables.py",
    "neurobrix/schema.py",
    "conformance/",
)
# What GitHub sends as the "before" commit of a push that created the branch: there is nothing to diff.
NULL_SHA = "0" * 40
GIT_TIMEOUT_S = 60


@dataclass(frozen=True)
class GPUClassInfo:
    """A GPU class of the tables folder, and whether it has any kernel table yet."""

    id: str
    has_kernel_tables: bool


@dataclass
class Affected:
    """The classes a change affects, each with the first reason found (a path, or a note)."""

    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def classes(self) -> list[str]:
        return sorted(self.reasons)

    def add(self, class_id: str, reason: str) -> None:
        self.reasons.setdefault(class_id, reason)

    def as_json(self) -> str:
        """A JSON list of class ids, compact, for a GitHub Actions matrix (``fromJSON``)."""
        return json.dumps(self.classes, separators=(",", ":"))

    def explain(self) -> list[str]:
        if not self.reasons:
            return ["no GPU class is affected"]
        return [f"{class_id}: {self.reasons[class_id]}" for class_id in self.classes]


def gpu_classes(root: Path) -> dict[str, GPUClassInfo]:
    """The GPU classes (not the interpreter) of a verified tables folder, by id."""
    loaded = nb_tables.load(root)
    return {
        class_id: GPUClassInfo(class_id, bool(loaded.kernels(class_id)))
        for class_id, gpu_class in loaded.classes.items()
        if gpu_class.match.backend != "interpreter"
    }


def normalize(path: str) -> str:
    """A changed path as git prints it: forward slashes, no leading ``./``; a trailing ``/`` is kept."""
    text = path.replace("\\", "/")
    clean = PurePosixPath(text).as_posix()  # drops "./" and doubled slashes
    return clean + "/" if text.endswith("/") and clean != "." else clean


def class_folder(path: str) -> str | None:
    """``<class>`` for a path under ``tables/<class>/``, else None (``tables/TRACKED.yaml`` is no class)."""
    parts = path.split("/")
    if len(parts) >= 3 and parts[0] == TABLES_DIR and parts[1]:
        return parts[1]
    return None


def touches_kernels(path: str) -> bool:
    return any(path.startswith(prefix) if prefix.endswith("/") else path == prefix for prefix in KERNEL_PATHS)


def affected_by(paths: Iterable[str], classes: dict[str, GPUClassInfo]) -> Affected:
    """Apply the rules (see the module docstring) to the changed paths."""
    found = Affected()
    for raw in paths:
        path = normalize(raw)
        folder = class_folder(path)
        if folder in classes:
            found.add(folder, path)
        if touches_kernels(path):
            for info in classes.values():
                if info.has_kernel_tables:
                    found.add(info.id, path)
    return found


def changed_files(base: str, repo: Path = REPO) -> list[str]:
    """The paths changed on HEAD since its merge base with ``base`` (renames count as delete + add)."""
    command = ["git", "-C", str(repo), "diff", "--name-only", "--no-renames", "-z", f"{base}...HEAD", "--"]
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"`{' '.join(command)}` could not run: {exc}") from exc
    if result.returncode != 0:
        remote = f"origin/{base}"
        if not _is_commit(base, repo) and _is_commit(remote, repo):  # a clone of one branch: `main` is origin's only
            raise UsageError(
                f"--base {base}: no branch, tag or commit {base!r} in this checkout; the remote's is {remote}: "
                f"`python -m conformance affected --base {remote}`"
            )
        if not _is_commit(base, repo):  # a typo (`mian`): named with the ref meant, on one line (walk-through round 48)
            raise UsageError(
                f"--base {base}: no branch, tag or commit {base!r} in this checkout{close_hint([base], _refs(repo))}; "
                "in a workflow, check out the whole history: actions/checkout with fetch-depth: 0"
            )
        raise UsageError(
            f"cannot list the files changed since {base}: `{' '.join(command)}` exited {result.returncode}: "
            f"{' '.join(result.stderr.split())} (in a workflow, check out the whole history: actions/checkout with "
            "fetch-depth: 0)"
        )
    return [name for name in result.stdout.split("\0") if name]


def _refs(repo: Path) -> list[str]:
    """The checkout's branches, remote branches and tags, by their short names ([] where git cannot list them)."""
    command = [
        "git",
        "-C",
        str(repo),
        "for-each-ref",
        "--format=%(refname:short)",
        "refs/heads",
        "refs/remotes",
        "refs/tags",
    ]
    try:
        found = subprocess.run(
            command, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return found.stdout.split() if found.returncode == 0 else []


def _is_commit(ref: str, repo: Path) -> bool:
    """Whether ``ref`` names a commit in the checkout (a branch, tag, remote branch or hash)."""
    command = ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"]
    try:
        found = subprocess.run(
            command, capture_output=True, timeout=GIT_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return found.returncode == 0


def given_path(raw: str, repo: Path = REPO) -> str:
    """A path named on the command line, as git prints it: relative to the repository root. An absolute path, or one
    given from a folder inside the checkout (relative to that folder, as a shell completes it), was matched as
    written and silently affected no class; one outside the repository is refused by name."""
    path, here = Path(raw), Path.cwd()
    inside = here.resolve() != repo and here.resolve().is_relative_to(repo)
    if not path.is_absolute() and not inside:
        return raw
    full = Path(os.path.normpath(path if path.is_absolute() else here.resolve() / path))
    for candidate in (full, full.resolve()):
        if candidate.is_relative_to(repo):
            return candidate.relative_to(repo).as_posix() + ("/" if raw.endswith("/") else "")
    raise UsageError(
        f"{raw} is not in the repository {repo}: name the changed paths relative to its root, as `git diff "
        "--name-only` prints them"
    )


def affected_classes(
    root: Path, files: Sequence[str] = (), base: str | None = None, named: Sequence[str] = (), repo: Path = REPO
) -> Affected:
    """The GPU classes affected by ``files``, by the changes since ``base``, plus the ``named`` ones."""
    if not files and base is None and not named:
        raise UsageError("name the changed files, or --base REF to compare HEAD with, or --class CLASS")
    classes = gpu_classes(root)
    for class_id in named:
        if class_id not in classes:
            raise UsageError(
                f"{class_id!r} is not a GPU class of {root}; GPU classes: {', '.join(sorted(classes)) or 'none'}"
                f"{close_hint([class_id], sorted(classes))}"
            )
    found = affected_by([given_path(f, repo) for f in files], classes)
    if base is not None:
        if base == NULL_SHA:
            for class_id in classes:
                found.add(class_id, f"no base commit to compare with ({base})")
        else:
            for class_id, reason in affected_by(changed_files(base, repo), classes).reasons.items():
                found.add(class_id, reason)
    for class_id in named:
        found.add(class_id, "named with --class")
    return found


def write_github_output(found: Affected, name: str = "classes") -> Path:
    """Append ``classes=<json>`` to the file GitHub Actions names in $GITHUB_OUTPUT."""
    target = os.environ.get("GITHUB_OUTPUT")
    if not target:
        raise UsageError("--github-output: $GITHUB_OUTPUT is not set (it is, inside a GitHub Actions step)")
    path = Path(target)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"{name}={found.as_json()}\n")
    return path
