"""The fifty-seventh round, adversarial on the strict runtime: the two items round 56 left (docs/strictness-rounds.md).

First, the price a checkout paid for round 56: `run` read every character of each proof record of its class (the form
check, ``tables._certified_entries``: nvidia-h200's settings load doubled), where an installed wheel's records, pinned
by its RECORD, are not read again. Now ``python -m conformance track`` verifies each record as `tables verify` does
(parsed in full against its index and class, and bound to its index as run binds it) and lists those it verified in
TRACKED.yaml, each with its sha256 and its index's (``tables.verified_records``); run skips the form check for a record
listed so whose bytes, and its index's, are those (``Tables._verified_record``), and reads any other in full. Track
lists no record `tables verify` refuses (each of round 56's forgeries); a record edited after track, its hashes
rewritten by hand, is read in full and refused; an index changed beside a listed record unlists it; a list written by
hand that names a forged record is caught by ``track --check`` and by `tables verify`, which never take it on trust.

Then ``Tables.proofs`` (what `neurobrix tables show` and `tables verify` read): it parses the record against its index,
its class and its digests, and refuses each record run refuses (one line, the file named); pinned here, with the
list in place.

No GPU: the interpreter class's shipped tables, copied, edited and tracked again.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from conftest import REPO, retrack
from test_strict_round56 import FORGED

from conformance import certify, track
from neurobrix import tables
from neurobrix.errors import TablesError

CLASS = "interpreter"
RECORD = f"{CLASS}/rms_norm.proofs.yaml"


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    return root


def _form_checks(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kernels whose record the runtime read in full (the form check) while every index of the class loaded."""
    read: list[str] = []
    real = tables._certified_entries
    monkeypatch.setattr(
        tables, "_certified_entries", lambda text, index, own: read.append(index.kernel) or real(text, index, own)
    )
    tables.clear_cache()
    loaded = tables.load(root)
    for kernel in loaded.kernels(CLASS):
        loaded.index(CLASS, kernel)
    return sorted(read)


def _refusal(root: Path, kernel: str, view: str = "index") -> str | None:
    """What run (``index``) or `tables show` (``proofs``) says of the kernel's table (None: it loaded)."""
    tables.clear_cache()
    try:
        getattr(tables.load(root), view)(CLASS, kernel)
    except TablesError as exc:
        return str(exc)
    return None


def _rehash_by_hand(root: Path) -> None:
    """TRACKED.yaml's files made the folder's again, its verified records kept as they were: a hand edit of the
    hashes, not `track`."""
    retrack(root)  # (files only)
    text = (root / tables.TRACKED_NAME).read_text(encoding="utf-8")
    (root / tables.TRACKED_NAME).write_text(text + _verified_part(root.parent / "tracked.yaml"), encoding="utf-8")


def _verified_part(saved: Path) -> str:
    text = saved.read_text(encoding="utf-8")
    return text[text.index("# The audit records") :]


def test_track_lists_every_shipped_record_and_run_reads_none_of_them_again(tmp_path, monkeypatch):
    """Fixed: a checkout's records were each read in full at every load (round 56's form check). Track verifies and
    lists each (its sha256 and its index's, as the folder holds them), and run reads none in full; a list without
    them (written as before track verified) reads each, as round 56 did."""
    root = _copy(tmp_path)
    retrack(root)
    kernels = tables.load(root).kernels(CLASS)
    assert _form_checks(root, monkeypatch) == sorted(kernels)
    path, changed, refused = track.write_report(root)
    assert changed and refused == []
    sha = {f.path: f.sha256 for f in tables.scan(root)}
    listed = tables.read_verified(root)
    assert [v.path for v in listed] == [f"{CLASS}/{k}.proofs.yaml" for k in kernels]
    assert all(
        v.sha256 == sha[v.path] and v.index_sha256 == sha[v.path.replace(".proofs.yaml", ".json")] for v in listed
    )
    assert _form_checks(root, monkeypatch) == []
    assert track.out_of_sync(root) == [] and track.write(root) == (path, False)


def test_the_shipped_tables_list_every_record_as_verified():
    """Each class's records are listed as track verified them (run reads none of them in full from a checkout)."""
    shipped = {f.path for f in tables.read_tracked(REPO / "tables") if f.path.endswith(".proofs.yaml")}
    assert {v.path for v in tables.read_verified(REPO / "tables")} == shipped and len(shipped) == 16


@pytest.mark.parametrize("edit", [edit for _, edit in FORGED], ids=[name for name, _ in FORGED])
def test_track_lists_no_record_tables_verify_refuses(tmp_path, edit):
    """Each of round 56's forged records (its digests the index's, in certify's layout) is left out of the verified
    records and named by track; run reads it in full and refuses it, one line naming the file."""
    root = _copy(tmp_path)
    kernel = edit(root)
    _, _, refused = track.write_report(root)
    record = f"{CLASS}/{kernel}.proofs.yaml"
    assert record not in {v.path for v in tables.read_verified(root)}
    assert [p.path for p in refused] == [record]
    said = _refusal(root, kernel)
    assert said is not None and "\n" not in said and f"{kernel}.proofs.yaml" in said, said


def test_a_record_edited_after_track_with_its_hash_rewritten_by_hand_is_read_in_full(tmp_path):
    """A record forged after track (a ratio of .nan), TRACKED.yaml's hashes rewritten by hand and its verified records
    kept: the record's bytes are not those track verified, so run reads it in full and refuses it; unhashed, the
    folder is refused as before (the sha256 differs)."""
    root = _copy(tmp_path)
    track.write(root)
    shutil.copy(root / tables.TRACKED_NAME, tmp_path / "tracked.yaml")
    path = tables.proofs_path(root, CLASS, "rms_norm")
    text = path.read_text(encoding="utf-8")
    assert text.count("    worst_error_ratio: 0.9993\n") == 1
    path.write_text(text.replace("    worst_error_ratio: 0.9993\n", "    worst_error_ratio: .nan\n"), encoding="utf-8")
    said = _refusal(root, "rms_norm")
    assert said is not None and f"{path}: size " in said and "the file was altered" in said
    _rehash_by_hand(root)
    assert RECORD in {v.path for v in tables.read_verified(root)}
    said = _refusal(root, "rms_norm")
    assert said is not None and "\n" not in said and "rms_norm.proofs.yaml" in said and "finite" in said, said


def test_a_record_listed_beside_another_index_is_read_in_full(tmp_path, monkeypatch):
    """A verified record is taken as such beside the index it was verified with only: the index written otherwise
    (its entries the same), its hash rewritten by hand, and the record is read in full (where it still loads)."""
    root = _copy(tmp_path)
    track.write(root)
    shutil.copy(root / tables.TRACKED_NAME, tmp_path / "tracked.yaml")
    index = tables.index_path(root, CLASS, "rms_norm")
    index.write_text(index.read_text(encoding="utf-8").replace('"format": 4,', '"format": 4,  '), encoding="utf-8")
    _rehash_by_hand(root)
    assert _form_checks(root, monkeypatch) == ["rms_norm"]
    assert _refusal(root, "rms_norm") is None


def test_a_forged_record_listed_by_hand_is_caught_by_track_check_and_tables_verify(tmp_path, monkeypatch):
    """What the list cannot stop: a hand that edits the checkout writes TRACKED.yaml as it likes (it could edit the
    engine too), and run takes a record it lists on trust. `track --check` verifies every record again and names the
    list, and `tables verify` reads every record in full whatever the list says; `tables show` refuses it too."""
    root = _copy(tmp_path)
    path = tables.proofs_path(root, CLASS, "rms_norm")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("    worst_error_ratio: 0.9993\n", "    worst_error_ratio: .nan\n"), encoding="utf-8")
    files = tables.scan(root)
    sha = {f.path: f.sha256 for f in files}
    forged = [
        tables.VerifiedRecord(f.path, f.sha256, sha[f.path.replace(".proofs.yaml", ".json")])
        for f in files
        if f.path.endswith(".proofs.yaml")
    ]
    (root / tables.TRACKED_NAME).write_text(tables.render_tracked(files, forged), encoding="utf-8")
    assert _refusal(root, "rms_norm") is None  # (run trusts the list: the threat model's accepted case)
    (problem,) = track.out_of_sync(root)
    assert f"lists {RECORD} as verified, which `track` does not verify now" in problem
    tables.clear_cache()
    monkeypatch.setattr("neurobrix.code_rule.foreign_writes", list)  # (the engine's code, not the tables: 7 s)
    assert [p.path for p in tables.verify_all(tables.load(root))] == [f"{CLASS}/rms_norm"]
    said = _refusal(root, "rms_norm", "proofs")
    assert said is not None and "\n" not in said and "rms_norm.proofs.yaml" in said, said


def test_a_verified_record_the_list_does_not_track_is_refused(tmp_path):
    """The list's verified records are records it tracks, each beside its index, each once: any other is refused in
    one line naming TRACKED.yaml (no record is taken as verified by a name the list does not hash)."""
    root = _copy(tmp_path)
    track.write(root)
    path = root / tables.TRACKED_NAME
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    first = data["verified"][0]
    cases = {
        "untracked": {**first, "path": f"{CLASS}/gone.proofs.yaml"},
        "an index": {**first, "path": first["path"].replace(".proofs.yaml", ".json")},
        "twice": dict(first),
    }
    for name, item in cases.items():
        path.write_text(
            tables.render_tracked(tables.scan(root))
            + yaml.safe_dump({"verified": [*data["verified"], item]}, sort_keys=False)
        )
        tables.clear_cache()
        with pytest.raises(TablesError) as err:
            tables.load(root)
        assert str(err.value).startswith(f"{path}: field 'verified[") and "\n" not in str(err.value), (name, err.value)


def test_certify_keeps_the_verified_records_it_did_not_rewrite(tmp_path, monkeypatch):
    """Certify rewrites TRACKED.yaml with the tables it writes: the records it did not touch stay listed as verified
    (their bytes and their indexes' as track verified them); the one it wrote, unlisted (read in full: the list in
    sync, a record left out is slower to load, never less checked), is verified once the folder holds it and listed,
    as track lists it."""
    root = _copy(tmp_path)
    track.write(root)
    before = {v.path for v in tables.read_verified(root)}
    record = tables.proofs_path(root, CLASS, "rms_norm")
    index = tables.index_path(root, CLASS, "rms_norm")
    text = record.read_text(encoding="utf-8")
    certify._replace_tracked(root, {index: index.read_text(encoding="utf-8"), record: "# certified again\n" + text})
    assert {v.path for v in tables.read_verified(root)} == before - {RECORD}
    assert track.out_of_sync(root) == [] and _form_checks(root, monkeypatch) == ["rms_norm"]
    track.list_written(root, [RECORD])  # (what write_table does next: the record verified once the folder holds it)
    assert {v.path for v in tables.read_verified(root)} == before and _form_checks(root, monkeypatch) == []
    assert track.write(root)[1] is False


PROOF_VIEW = [
    *FORGED[:3],
    (
        "index-edited",
        lambda root: _edit(tables.index_path(root, CLASS, "rms_norm"), '"num_warps": 4', '"num_warps": 8'),
    ),
    (
        "stack-edited",
        lambda root: _edit(tables.proofs_path(root, CLASS, "rms_norm"), "  triton: ", "  triton: 9.9.9 #"),
    ),
]


def _edit(path: Path, old: str, new: str) -> str:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path.name.split(".")[0]


@pytest.mark.parametrize("edit", [edit for _, edit in PROOF_VIEW], ids=[name for name, _ in PROOF_VIEW])
def test_the_proof_view_refuses_each_record_run_refuses(tmp_path, edit):
    """Pinned: ``Tables.proofs`` (`tables show`, `tables verify`) parses the record against its index (its entries,
    domains, settings and stack), its class and its digests: a record forged, or one its index no longer matches, is
    refused there as run refuses it, one line naming the file, not shown; with track's list in place (it lists no such
    record)."""
    root = _copy(tmp_path)
    kernel = edit(root)
    track.write(root)
    assert _refusal(root, kernel) is not None
    said = _refusal(root, kernel, "proofs")
    assert said is not None and "\n" not in said and f"{kernel}.proofs.yaml" in said, said
