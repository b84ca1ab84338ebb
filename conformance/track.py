"""Write (or check) the tracked-file list, tables/TRACKED.yaml, from what is in the tables folder: every file's sha256
and size, and the audit records it verified as `neurobrix tables verify` does (``neurobrix.tables.verified_records``),
which run then reads no further than their digests (strict round 57)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from neurobrix.cli import close_hint, closest
from neurobrix.errors import TablesError, UsageError, printable
from neurobrix.schema import INDEX_SUFFIX, PROOFS_SUFFIX
from neurobrix.tables import (
    CLASS_NAME,
    TRACKED_NAME,
    Problem,
    Tables,
    TrackedFile,
    certify_command,
    check_files,
    class_path,
    kernel_of,
    read_listed,
    read_tracked,
    read_verified,
    render_tracked,
    scan,
    verification_rules,
    verified_records,
)

SOURCE_TABLES = Path(__file__).resolve().parent.parent / "tables"


def require_class(gpu_class: str, loaded: Tables) -> None:
    """The class must be one of these tables' (UsageError naming them): read from the tables alone, so that `check
    --class` refuses a name it does not know before torch is imported (2 to 3 s of a CPU)."""
    if gpu_class not in loaded.classes:
        raise UsageError(
            f"no GPU class {gpu_class!r} in {loaded.location.root}; classes: "
            f"{', '.join(sorted(loaded.classes)) or 'none'}{close_hint([gpu_class], loaded.classes)}"
        )


def require_kernel_tables(gpu_class: str, loaded: Tables) -> None:
    """The class (one of ``loaded``'s) must have a kernel table to check (UsageError with the certify command that
    writes them, into the folder checked: `check --tables COPY` printed one that wrote the checkout's tables,
    walk-through round 48); read from the tables alone, before the check's imports."""
    if loaded.kernels(gpu_class):
        return
    root = loaded.location.root
    folder = "" if root.resolve() == SOURCE_TABLES.resolve() else f" --tables {shlex.quote(str(root))}"
    raise UsageError(
        f"class {gpu_class} has no kernel tables in {root}; certify it first: "
        f"{certify_command(gpu_class, extra=folder)}"
    )


# certify's: how a new class is made (CONTRIBUTING.md's step 2), the file and the command spelt for the folder used
DESCRIBE_FIRST = (
    "a new class is described first: write {file} with the facts `neurobrix doctor` prints on its GPU "
    "(CONTRIBUTING.md, 'Certify a new GPU class', step 2), then record it with `{track}`"
)
DESCRIBE_AND_CERTIFY_FIRST = "describe and certify the class first"  # rank's


def require_described(root: Path, class_id: str, then: str) -> None:
    """The class must have its class.yaml under ``root`` (UsageError naming the file, then what to do): read from the
    folder alone, so that `certify --class` and `rank --class` refuse a name the tables lack before torch is imported
    (4 to 5 s on a 2-core CPU, walk-through round 43), in the words the command itself uses. A class close to one
    described is named first (a misspelt `interpretr`), then how a new one is made (walk-through round 48: a new
    class spelt close to a described one, `nvidia-h100`, was asked about nvidia-h200 after a pointer to CONTRIBUTING);
    a folder of that name holding a file close to class.yaml (`class.yml`) is named with it."""
    class_yaml = class_path(root, class_id)
    if class_yaml.is_file():
        return
    described = [c.name for c in root.iterdir() if (c / CLASS_NAME).is_file()] if root.is_dir() else []
    said = f"{class_yaml} does not exist"
    folder = class_yaml.parent
    if folder.is_dir():
        near = closest(CLASS_NAME, sorted(p.name for p in folder.iterdir() if p.is_file()))
        if near is not None:  # the class is described, under another name: that is the one step left
            raise UsageError(f"{said}: {folder} holds {near}; the class's file is named {CLASS_NAME}: rename it")
    track_command = "python -m conformance track" + (
        "" if root.resolve() == SOURCE_TABLES else f" --tables {shlex.quote(str(root))}"
    )
    raise UsageError(
        f"{said}{close_hint([class_id], sorted(described))}: {then.format(file=class_yaml, track=track_command)}"
    )


def refuse_strays(root: Path) -> None:
    """A file under ``root`` that is none of the tables (a class folder's class.yaml, a kernel's index or its proofs) is
    refused here, one line naming it (TablesError, exit 3), before `track` lists it or certify writes beside it: `track`
    listed `nvidia-b200/class.yml` and every command then refused the tables as not matching TRACKED.yaml, telling the
    contributor to run `track`, which had just run (walk-through round 48)."""
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        parts = rel.split("/")
        if (
            rel == TRACKED_NAME
            or path.is_dir()
            or (len(parts) == 2 and (parts[1] == CLASS_NAME or kernel_of(parts[1])))
        ):
            continue
        meant = CLASS_NAME if len(parts) == 2 and closest(parts[1], [CLASS_NAME]) else None
        raise TablesError(
            f"{root / rel}: not a {CLASS_NAME}, a <kernel>{INDEX_SUFFIX} or a <kernel>{PROOFS_SUFFIX} of a class "
            f"folder, the only files the tables hold{f' (did you mean {meant}?)' if meant else ''}: rename or remove "
            "it, then run the command again"
        )


def write(root: Path = SOURCE_TABLES) -> tuple[str, bool]:
    """Rewrite root/TRACKED.yaml; returns (its path, whether its bytes changed)."""
    path, changed, _ = write_report(root)
    return path, changed


def write_report(root: Path = SOURCE_TABLES) -> tuple[str, bool, list[Problem]]:
    """:func:`write`, and the audit records it did not list as verified, with why (each one `tables verify` refuses:
    run reads it in full and refuses it too). Every file is listed, as before: the list says what the folder holds;
    only a record verified here is read by run without its proofs."""
    files = scan(root)
    refuse_unprintable(root, files)
    verified, refused = verified_records(root, files)
    text = render_tracked(files, verified)
    path = root / TRACKED_NAME
    changed = not path.is_file() or path.read_text(encoding="utf-8") != text
    changed = changed or path.is_symlink()  # (written as the folder's own file: run refuses a linked list, round 61)
    if changed:
        replace_text(path, text)
    return str(path), changed, refused


def refuse_unprintable(root: Path, files: list[TrackedFile]) -> None:
    """A file whose name (or a folder's on its path) holds a character a terminal obeys rather than prints (a control
    character, a bidirectional override or isolate, a line or paragraph separator, a byte no UTF-8 decodes:
    errors.printable's set) is refused here, at the source, one line naming it escaped (TablesError, exit 3, as
    `neurobrix tables verify` ends on such a folder). It was listed, and the list then refused by run (a control
    character on its line), or written as an escape YAML refuses (a byte no UTF-8 decodes), or read back and the
    name shown raw by every tool that prints the list (an override reversing it): the list names no such file."""
    named = [f.path for f in files if printable(f.path) != f.path]
    if named:
        more = f" (and {len(named) - 1} more so named)" if len(named) > 1 else ""
        raise TablesError(
            f"{printable(str(root / named[0]))}: its name holds a character a terminal obeys rather than prints (shown "
            f"escaped){more}, which TRACKED.yaml does not list: rename or remove it, then run `python -m conformance "
            "track` again"
        )


def list_written(root: Path, records: list[str]) -> None:
    """After certify (or a tool like it) wrote ``records`` (paths of audit records) and a TRACKED.yaml that lists them
    as files only: verify each as :func:`write` does and list those verified, so that the list is the one `track`
    writes (no change in the next commit) and run reads them by their digests. A second write of the list, whole or
    not at all: a record left unlisted (a full disk, a record `tables verify` refuses) is read in full by run."""
    tracked, listed = read_tracked(root), read_verified(root)
    verified = verified_records(root, tracked, set(records))[0]
    if verified:
        replace_text(root / TRACKED_NAME, render_tracked(list(tracked), [*listed, *verified]))


def replace_text(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all: the text goes to a scratch file beside it, renamed over it once written. A
    full disk (or a quota, or a file-size limit) mid-write truncated TRACKED.yaml in place, and every later command
    refused the tables as damaged (exit 3), the last good list lost; now the scratch file is removed and the old list
    stays."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def out_of_sync(root: Path = SOURCE_TABLES) -> list[str]:
    """Why root/TRACKED.yaml disagrees with the folder (empty when in sync): a file's hash or size, a file missing or
    untracked, records listed as verified by other code than this engine's (``verified_rules``), a record listed as
    verified that ``track`` does not verify now, or text not in track's form."""
    problems = [f"{p.path}: {p.message}" for p in check_files(root, read_tracked(root))]
    path = root / TRACKED_NAME
    rules, listed = (None, ()) if problems else read_listed(root)
    if listed and rules != verification_rules():
        # (run reads each record in full meanwhile: slower, never less strict)
        return [
            f"{TRACKED_NAME}: its records were listed as verified by other code than this neurobrix's (verified_rules "
            f"{rules or 'missing'}, this code's {verification_rules()}): run `python -m conformance track`"
        ]
    if not problems and path.read_text(encoding="utf-8") != render_tracked(scan(root), listed):
        problems.append(f"{TRACKED_NAME}: not in the form `track` writes (edited by hand?)")
    if problems or not listed:
        return problems
    # every record the list names as verified is verified again, as `tables verify` reads it (one left out is read in
    # full by run: slower, never less strict)
    verified = set(verified_records(root, scan(root))[0])
    wrong = [v.path for v in listed if v not in verified]
    if wrong:
        problems.append(
            f"{TRACKED_NAME}: lists {', '.join(wrong)} as verified, which `track` does not verify now (`tables verify` "
            "refuses it, or its bytes or its index's are not those listed): written by hand?"
        )
    return problems
