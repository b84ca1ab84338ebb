"""Write (or check) the tracked-file list, tables/TRACKED.yaml, from what is in the tables folder."""

from __future__ import annotations

import os
from pathlib import Path

from neurobrix.tables import TRACKED_NAME, check_files, read_tracked, render_tracked, scan

SOURCE_TABLES = Path(__file__).resolve().parent.parent / "tables"


def write(root: Path = SOURCE_TABLES) -> tuple[str, bool]:
    """Rewrite root/TRACKED.yaml; returns (its path, whether its bytes changed)."""
    text = render_tracked(scan(root))
    path = root / TRACKED_NAME
    changed = not path.is_file() or path.read_text(encoding="utf-8") != text
    if changed:
        replace_text(path, text)
    return str(path), changed


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
    """Why root/TRACKED.yaml disagrees with the folder (empty when in sync)."""
    problems = [f"{p.path}: {p.message}" for p in check_files(root, read_tracked(root))]
    path = root / TRACKED_NAME
    if not problems and path.read_text(encoding="utf-8") != render_tracked(scan(root)):
        problems.append(f"{TRACKED_NAME}: not in the form `track` writes (edited by hand?)")
    return problems
