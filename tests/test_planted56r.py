"""Round 54 of planted bugs: what strict round 56 added to the runtime's read of the tables (neurobrix/tables.py): the
fast path's reading of each entry as certify writes it (``_certified_entries`` and its forms), the header held to
the schema, the installed wheel's exemption (``Tables._release``) and the stat of every table file in the folder's
state (``_state``); and rounds 25, 27 and 28's plants in the older scan, run again since. The plants and the driver:
tests/planted56r_plants.py, tests/planted56r_driver.py (round 26's ``run_round``). Each test here fails with the plant
named in its docstring and passes on the clean code. Nothing is launched: every table is a copy of the shipped
interpreter class, edited and tracked again.

Outcomes: docs/planted-bugs.md, round 54.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import REPO, retrack

from neurobrix import tables
from neurobrix.errors import TablesError

CLASS = "interpreter"


def _copy(tmp_path: Path, under: str = "tables") -> Path:
    root = tmp_path / under
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    retrack(root)
    return root


def _edit_entries(root: Path, kernel: str, old: str, new: str, count: int = 1) -> None:
    """``old``'s first ``count`` occurrences among the record's entries replaced by ``new`` (the header left alone)."""
    path = tables.proofs_path(root, CLASS, kernel)
    text = path.read_text(encoding="utf-8")
    start = text.index("\nentries:\n")
    body = text[start:]
    assert body.count(old) >= count, old
    path.write_text(text[:start] + body.replace(old, new, count), encoding="utf-8")
    retrack(root)


def _runtime_refusal(root: Path, kernel: str) -> str | None:
    tables.clear_cache()
    try:
        tables.load(root).index(CLASS, kernel)
    except TablesError as exc:
        return str(exc)
    return None


def _verify_refuses(root: Path, kernel: str) -> bool:
    tables.clear_cache()
    return any(p.path == f"{CLASS}/{kernel}" for p in tables.verify_all(tables.load(root)))


FIRST_REJECTED = "    - 'slower: BLOCK_M=16 num_warps=4: 7443.57 us median vs 4007.08 us'\n"
BIG = "1" + "0" * 400 + ".0"  # YAML reads it as infinity

# (id, [(old, new, count)] in rms_norm's record; each keeps certify's layout and the index's digests)
FORGED = [
    # e04: a text YAML 1.1 reads as a boolean (the schema's bound is a text)
    ("bound-yes", [("    bound: conformance.bounds.rms_norm + residual_add\n", "    bound: yes\n", 1)]),
    ("reference-off", [("    reference: float64, torch CPU (conformance/reference.py)\n", "    reference: off\n", 1)]),
    # e05: timings of 400 digits, which YAML reads as infinity
    (
        "infinite-timings",
        [
            ("    time_best_us: 3983.18\n", f"    time_best_us: {BIG}\n", 1),
            ("    time_median_us: 4007.08\n", f"    time_median_us: {BIG}\n", 1),
        ],
    ),
    # e07: the entry's own setting rejected where another candidate is written two ways (the order of its settings)
    (
        "own-setting-beside-a-candidate-written-two-ways",
        [
            ("'slower: BLOCK_M=16 num_warps=4:", "'slower: BLOCK_M=64 num_warps=4:", 1),
            ("'slower: BLOCK_M=4 num_warps=4:", "'slower: num_warps=4 BLOCK_M=4:", 1),
        ],
    ),
    # e06: a candidate rejected twice in the same words, counted twice
    (
        "same-words-twice",
        [(FIRST_REJECTED, FIRST_REJECTED * 2, 1), ("    candidates_tried: 3\n", "    candidates_tried: 4\n", 1)],
    ),
]


@pytest.mark.parametrize("edits", [e for _, e in FORGED], ids=[n for n, _ in FORGED])
def test_a_record_tables_verify_refuses_is_refused_by_the_runtime(tmp_path, edits):
    """e04 (only YAML 1.2's true/false/null kept out of a plain text: ``bound: yes`` read as a text), e05 (a duration
    of any length: 400 digits, infinity to YAML), e06 (the same candidate in the same words twice), e07 (the entry's
    own setting rejected, not looked for where another candidate is written in two orders of its settings): each
    record is in certify's layout with its index's digests, `tables verify` refuses it, and so must the runtime (one
    line)."""
    root = _copy(tmp_path)
    for old, new, count in edits:
        _edit_entries(root, "rms_norm", old, new, count)
    assert _verify_refuses(root, "rms_norm")
    said = _runtime_refusal(root, "rms_norm")
    assert said is not None, "run loaded a record tables verify refuses"
    assert "\n" not in said and "rms_norm.proofs.yaml" in said, said


@pytest.mark.parametrize(
    "value",
    [
        *sorted(tables._YAML_WORDS),
        "y",
        "n",
        "Y",
        "N",
        "~",
        "nan",
        "inf",
        "NaN",
        "BLOCK_M",
        "x",
        "_",
        0,
        7,
        -3,
        True,
        False,
        1.5,
        "1",
        "0x10",
        "1e3",
        "on_",
        "Null_",
    ],
)
def test_a_value_written_plain_reads_back_as_itself(value):
    """e03 (a setting's value YAML 1.1 reads as a boolean or null written plain): what ``_plain`` writes of a value,
    YAML reads back as that value, of its type (a value it cannot write so is None: the record is then parsed)."""
    written = tables._plain(value)
    if written is not None:
        read = yaml.safe_load(f"k: {written}\n")["k"]
        assert type(read) is type(value) and read == value, (value, written, read)


def _installed(tmp_path: Path) -> Path:
    """A copy of the interpreter's tables where an installed package keeps them, with no wheel's RECORD beside it."""
    root = _copy(tmp_path, "site/neurobrix/_tables")
    (root.parent / "__init__.py").write_text("", encoding="utf-8")
    return root


def test_an_editable_install_s_tables_are_read_again(tmp_path):
    """w02 (the exemption taken for an installed package no wheel's RECORD lists): the tables of an editable install, or
    any package folder no wheel installed, are pinned by nothing but TRACKED.yaml beside them, so their proofs are read
    as a checkout's: a forged record (a ratio of .nan) is refused there too."""
    root = _installed(tmp_path)
    _edit_entries(root, "rms_norm", "    worst_error_ratio: 0.9993\n", "    worst_error_ratio: .nan\n")
    tables.clear_cache()
    loaded = tables._load(tables.TablesLocation(root, "installed package"), tables._state(root))
    assert not loaded._release
    with pytest.raises(TablesError, match=r"rms_norm\.proofs\.yaml: "):
        loaded.index(CLASS, "rms_norm")
    tables.clear_cache()


def test_a_source_checkout_s_proofs_are_read(monkeypatch):
    """w01 (the exemption taken for a source checkout): the checkout's tables are read as any folder's, each record's
    entries by ``_certified_entries`` unless its TRACKED.yaml lists it as `conformance track` verified it (strict round
    57: the exemption is the list's, record by record, not the checkout's; here no record is taken as listed)."""
    monkeypatch.delenv(tables.ENV_VAR, raising=False)
    tables.clear_cache()
    loaded = tables.load()
    if loaded.location.origin != "source checkout":
        pytest.skip(f"the tables are the {loaded.location.origin}'s here")
    read = []
    real = tables._certified_entries
    monkeypatch.setattr(tables, "_certified_entries", lambda *a: read.append(1) or real(*a))
    monkeypatch.setattr(tables.Tables, "_verified_record", lambda self, class_id, kernel: False)
    assert not loaded._release
    assert loaded.index(CLASS, "rms_norm") is not None and read
    tables.clear_cache()


def _in_place(path: Path) -> None:
    """``path`` rewritten in place: the same inode and size, one byte changed."""
    data = bytearray(path.read_bytes())
    data[-2] = ord("x") if data[-2] != ord("x") else ord("y")
    with open(path, "r+b") as out:
        out.write(data)


def test_every_table_file_s_stat_is_in_the_folder_s_state(tmp_path):
    """s01 (the records' stat skipped) and s03 (only the first class folder's files): each table file of every class
    folder rewritten in place, without TRACKED.yaml, changes the folder's state (the engine then verifies it again)."""
    root = _copy(tmp_path)
    shutil.copytree(root / CLASS, root / "zz_second")
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name != tables.TRACKED_NAME):
        before = tables._state(root)
        _in_place(path)
        assert tables._state(root) != before, path.relative_to(root)


def test_a_table_file_rewritten_with_its_times_kept_changes_the_state(tmp_path):
    """s02 (a table file's change time left out): a copy that writes a file in place and keeps its times (``cp -p``,
    ``rsync --inplace -t``) keeps its inode, size and modification time; the change time, which no copy sets, tells."""
    root = _copy(tmp_path)
    path = tables.index_path(root, CLASS, "rms_norm")
    seen = path.stat()
    before = tables._state(root)
    _in_place(path)
    os.utime(path, ns=(seen.st_atime_ns, seen.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (seen.st_ino, seen.st_size, seen.st_mtime_ns)
    if after.st_ctime_ns == seen.st_ctime_ns:
        pytest.skip("this file system's change time did not move")
    assert tables._state(root) != before


def test_show_refuses_a_record_whose_proofs_were_swapped(tmp_path):
    """Planted round 25's s07 (a record parsed against its index not holding each proof to its own entry), which
    survived its tests since strict round 56: two proofs' ``entry:`` digests swapped leave every entry its index's,
    so only that check tells; `tables show` (``Tables.proofs``) must name the proof of another entry, as the runtime
    does."""
    root = _copy(tmp_path)
    path = tables.proofs_path(root, CLASS, "rms_norm")
    text = path.read_text(encoding="utf-8")
    first, second = (line for line in text.splitlines() if line.startswith("    entry: "))
    text = text.replace(first, "\0").replace(second, first).replace("\0", second)
    path.write_text(text, encoding="utf-8")
    retrack(root)
    tables.clear_cache()
    loaded = tables.load(root)
    for read in (lambda: loaded.index(CLASS, "rms_norm"), lambda: loaded.proofs(CLASS, "rms_norm")):
        with pytest.raises(TablesError, match=r"entries\[0\]\.proof\.entry': .*it is the proof of entries\[1\]"):
            read()
