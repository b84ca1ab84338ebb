"""`python -m conformance.bind TABLES`: give the proofs of audit records certify wrote before 2026-12-05 their
entry's digest (``proof.entry``, :func:`neurobrix.schema.entry_digest`), then rewrite TRACKED.yaml.

One line is inserted after each entry's ``proof:`` line, in the form certify writes it; no other byte of a record
changes (a GPU's measured proofs stay as measured). The record must already agree with its index entry by entry
(what ``tables verify`` checked before proofs carried digests): the digest binds each proof to the entry it sits
in now, so a record whose proofs all carry one is left as it is (certify wrote it so), a record is refused if some
but not all of its proofs carry one or if it fails its check once bound, and then no file of the folder is written;
a folder with nothing to bind is refused too. Deterministic: the same folder gives the same bytes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

from neurobrix import tables as nb_tables
from neurobrix.errors import TablesError, printable
from neurobrix.schema import Domain, entry_digest, parse_index, parse_proofs

from . import track

_PROOF_LINE = re.compile(r"^  proof:\n", re.MULTILINE)


def bound_text(text: str, data: dict, kernel: str, class_id: str, key: tuple[str, ...], shown: str) -> str:
    """The record's text with each proof's digest line inserted (the entries as the record holds them)."""
    entries = data["entries"]
    places = [m.end() for m in _PROOF_LINE.finditer(text)]
    if len(places) != len(entries) or any("entry" in e["proof"] for e in entries):
        raise TablesError(f"{shown}: not a record certify wrote without entry digests; left as it is")
    pieces, start = [], 0
    for place, e in zip(places, entries):
        domain = e["domain"]
        ranges = tuple((dim, domain[dim][0], domain[dim][1]) for dim in key)
        digest = entry_digest(kernel, class_id, Domain(tuple(domain["dtypes"]), ranges), e["config"])
        line = yaml.safe_dump({"entry": digest}, width=120)
        pieces += [text[start:place], "    " + line]
        start = place
    return "".join([*pieces, text[start:]])


def _all_bound(data: object) -> bool:
    entries = data.get("entries") if isinstance(data, dict) else None
    return (
        isinstance(entries, list)
        and bool(entries)
        and all(isinstance(e, dict) and isinstance(e.get("proof"), dict) and "entry" in e["proof"] for e in entries)
    )


def bind(root: Path) -> list[Path]:
    """Bind every unbound record under ``root``; the paths rewritten."""
    written: list[tuple[Path, str]] = []
    folders = sorted(p for p in root.iterdir() if (p / nb_tables.CLASS_NAME).is_file()) if root.is_dir() else []
    if not folders:  # a path mistyped: no traceback, and no TRACKED.yaml written into a folder of something else
        raise TablesError(f"{root}: not a tables folder (no class folder with a {nb_tables.CLASS_NAME} in it)")
    for folder in folders:
        class_id = folder.name
        for path in sorted(folder.glob(f"*{nb_tables.PROOFS_SUFFIX}")):
            kernel = path.name[: -len(nb_tables.PROOFS_SUFFIX)]
            index_file = nb_tables.index_path(root, class_id, kernel)
            index = parse_index(nb_tables.read_json(index_file, str(index_file)), str(index_file), class_id, kernel)
            # read as a table first: a byte no UTF-8 decodes is refused naming its line (read_text raised a traceback)
            data = nb_tables.read_yaml(path, str(path))
            text = path.read_text(encoding="utf-8")
            if _all_bound(data):  # certify wrote it with its digests (a class certified since): nothing to bind
                continue
            new = bound_text(text, data, kernel, class_id, index.key, str(path))
            parse_proofs(yaml.load(new, Loader=nb_tables.SAFE_LOADER), str(path), class_id, kernel, index)
            written.append((path, new))
    if not written:
        raise TablesError(f"{root}: nothing to bind: every record's proofs already carry their entry digests")
    # written once every record is bound: a record refused leaves the folder as it was, not half bound and untracked
    for path, new in written:
        path.write_text(new, encoding="utf-8")
    track.write(root)
    return [path for path, _ in written]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    usage = "usage: python -m conformance.bind TABLES_FOLDER"
    if args in (["-h"], ["--help"]):  # (it was taken for a folder: "--help: not a tables folder", exit 3)
        print(f"{usage}\n\n{__doc__.strip() if __doc__ else ''}")
        return 0
    if len(args) != 1:
        print(usage, file=sys.stderr)
        return 2
    try:
        written = bind(Path(args[0]))
    except TablesError as exc:
        print(f"error: {printable(str(exc))}", file=sys.stderr)
        return 3
    except OSError as exc:  # the machine's refusal (a read-only tables folder): one line and exit 1, not a traceback
        where = f": {printable(str(exc.filename))}" if exc.filename else ""
        print(f"error: {printable(exc.strerror or str(exc))}{where}", file=sys.stderr)
        return 1
    for path in written:
        print(f"bound {printable(str(path))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
