"""Round 25 of planted bugs: the runtime binding code of strict rounds 28-30 (schema's entry digests, the index held
to its record in `Tables._bindings`, the record's stack read from its header, the relative NEUROBRIX_TABLES refusal,
and `python -m conformance.bind`). The plants and the driver: tests/planted25_plants.py, tests/planted25_driver.py
(round 24's driver on this round's plants). Each test here fails with the plant named in its docstring and passes on
the clean code. Nothing is launched: every table is a copy of the shipped interpreter class, edited and tracked
again.

Outcomes (33 plants): 17 caught by the tests before this round (s01-s03, s05-s07, t01-t06, t08, t10, t16, t18,
t20), 12 survived and are caught here (s04, t07, t11, t13, t14, t19, b01-b06: no test ran `conformance.bind` at
all), 4 equivalent:
- t09 (`_ENTRY_LINE` taking 15 digits): a digest scanned is only ever compared for equality with a 16-digit row
  digest, so a 15-digit one never passes the fast path; the record is parsed and its schema refuses it, as before.
- t12 (a version key named twice not looked for): the lines are parsed by the unique-key loader, whose refusal
  (TablesError) makes `_header_stack` return None all the same.
- t15 (the whole record searched for `provenance:`): only stricter (a second block after the entries sends the
  record to the parse, which refuses it) and slower on a GPU record; round 30's timing bound still holds.
- t17 (a moved entry looked for after position i only): the index's first i entries equal the record's, and no two
  entries of an index share a digest (disjoint domains), so the entry can only be found after i.
Since strict round 31 (the header parsed alone as YAML, `_record_layout`), planted round 27 re-anchored t01, t09 and
t11 and retired t12-t14 (tests/planted25_plants.py): t11 is now caught by tests/test_planted27.py, t15 by the tests
above; the tests for t13 and t14 stay, as records the runtime must still refuse. Walk-through 32's follow-up
(`schema.row_digests`: each entry's digest text built of parts written once per index) re-anchored s01, s03,
t01-t03 and t10 on that code, each the same bug (t10 now misreads the bounds in the one place they are paired with
their dimensions, for index and record alike); each is caught by the tests above, as s02 and t04-t06, t16 are, and t17
is equivalent as before.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import REPO, retrack

from conformance import bind, track
from neurobrix import tables
from neurobrix.errors import TablesError

CLASS = "interpreter"
_DIGEST_LINE = re.compile(r"(?<=\n  proof:\n)    entry: '?[0-9a-f]{16}'?\n")


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    track.write(root)  # as `conformance track` writes it (the records it verified listed), as bind writes it
    tables.clear_cache()
    return root


def _texts(root: Path) -> dict[Path, str]:
    return {path: path.read_text(encoding="utf-8") for path in sorted(root.rglob("*")) if path.is_file()}


def _unbind(root: Path) -> None:
    """Each record as certify wrote it before proofs carried their entry's digest (the lines bind inserts, removed)."""
    for path in sorted((root / CLASS).glob("*.proofs.yaml")):
        text = path.read_text(encoding="utf-8")
        bare = _DIGEST_LINE.sub("", text)
        assert bare.count("\n  proof:\n") == text.count("\n  proof:\n") == text.count("\n    entry: ")
        path.write_text(bare, encoding="utf-8")
    retrack(root)
    tables.clear_cache()


def test_bind_gives_back_the_shipped_records_byte_for_byte_and_binds_once(tmp_path, capsys):
    """The shipped records were bound by `conformance.bind`: unbound again, bind must write them back as they are
    (each digest over the entry's domain in its index's key order, one line four spaces in after `proof:`) and track
    them, so they load; bound, a second bind is refused (exit 3) and changes nothing. Caught: b02 (the ranges in
    sorted key order: the multi-dimension entries' digests differ, so the bound record is refused), b03 (the line two
    spaces in), b05 (TRACKED.yaml not rewritten), b01 and b06 (a bound record bound again, the exit status; since
    walk-through 31 a wholly bound record is skipped, and b01 is caught on a partly bound one by
    tests/test_walkthrough31.py)."""
    root = _copy(tmp_path)
    shipped = _texts(root)
    _unbind(root)
    assert bind.main([str(root)]) == 0, capsys.readouterr().err
    assert _texts(root) == shipped
    loaded = tables.load(root)
    assert all(loaded.index(CLASS, kernel) is not None for kernel in loaded.kernels(CLASS))
    capsys.readouterr()
    assert bind.main([str(root)]) == 3
    assert "nothing to bind" in capsys.readouterr().err  # (walk-through 31: bound records are skipped, not refused)
    assert _texts(root) == shipped


def test_bind_refuses_a_record_its_index_does_not_hold(tmp_path, capsys):
    """A digest binds a proof to the entry it sits in now, so bind first holds the record to its index (what `tables
    verify` checked before digests): a record whose index's setting was changed is refused, unwritten. Caught: b04
    (the bound record parsed without its index: it was written, binding proofs to a setting the index does not
    launch). Found this round: the records before it (attention_*, greedy_pick, linear) were already written, bound,
    and TRACKED.yaml left stale, where the folder is now left as it was."""
    root = _copy(tmp_path)
    _unbind(root)
    index = tables.index_path(root, CLASS, "rms_norm")
    data = json.loads(index.read_text(encoding="utf-8"))
    data["configs"][0]["num_warps"] = 8
    index.write_text(json.dumps(data), encoding="utf-8")
    before = _texts(root)
    assert bind.main([str(root)]) == 3
    err = capsys.readouterr().err
    assert "rms_norm.proofs.yaml" in err and "differs from entry 0 of its index" in err, err
    assert _texts(root) == before  # the records bound before rms_norm's too (found this round: they were written)


def test_an_unbound_proof_is_named_wherever_it_is_in_the_record(tmp_path):
    """A record whose second proof alone has no digest is named as unbound at that proof, with the way to bind it.
    Caught: s04 (only the first entry looked at: the schema's bare "required property" came out instead)."""
    root = _copy(tmp_path)
    path = tables.proofs_path(root, CLASS, "rms_norm")
    text = path.read_text(encoding="utf-8")
    digests = list(_DIGEST_LINE.finditer(text))
    assert len(digests) == 2
    path.write_text(text[: digests[1].start()] + text[digests[1].end() :], encoding="utf-8")
    retrack(root)
    with pytest.raises(TablesError, match=r"entries\[1\]\.proof': has no 'entry'.*conformance\.bind"):
        tables.load(root).index(CLASS, "rms_norm")


def _stack_edit(root: Path, record_cuda: str, index_cuda: str) -> None:
    path = tables.proofs_path(root, CLASS, "rms_norm")
    text = path.read_text(encoding="utf-8")
    assert text.count("\n  cuda: None\n") == 1
    path.write_text(text.replace("\n  cuda: None\n", f"\n  cuda: '{record_cuda}'\n"), encoding="utf-8")
    index = tables.index_path(root, CLASS, "rms_norm")
    data = json.loads(index.read_text(encoding="utf-8"))
    data["stack"]["cuda"] = index_cuda
    index.write_text(json.dumps(data), encoding="utf-8")
    retrack(root)
    tables.clear_cache()


def test_a_record_of_another_cuda_than_its_index_is_refused(tmp_path):
    """The whole stack is compared, CUDA with torch and Triton: proofs made with CUDA 12.8 behind an index stating
    12.9 are refused when the index loads; the two agreeing, it loads. Caught: t07 (torch and Triton compared alone:
    the interpreter's records have no CUDA, so no other test reached it)."""
    root = _copy(tmp_path)
    _stack_edit(root, "12.8", "12.8")
    assert tables.load(root).index(CLASS, "rms_norm") is not None
    root = _copy(tmp_path / "other")
    _stack_edit(root, "12.8", "12.9")
    with pytest.raises(TablesError, match=r"compiler stack .*cuda 12\.8.* states .*cuda 12\.9"):
        tables.load(root).index(CLASS, "rms_norm")


def _header_edit(root: Path, old: str, new: str) -> None:
    path = tables.proofs_path(root, CLASS, "rms_norm")
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1
    path.write_text(text.replace(old, new), encoding="utf-8")
    retrack(root)
    tables.clear_cache()


def test_a_header_with_a_second_provenance_is_parsed_and_refused(tmp_path):
    """A record naming `provenance:` twice before its entries (the second saying Triton 3.0.0) is one YAML refuses
    (a key named twice): the scan must not read the first block as the stack and let the index load. Caught: t11
    (the first of several blocks taken)."""
    root = _copy(tmp_path)
    _header_edit(root, "\nentries:\n", "\nprovenance:\n  torch: 2.13.0+cpu\n  triton: 3.0.0\nentries:\n")
    with pytest.raises(TablesError, match=r"provenance"):
        tables.load(root).index(CLASS, "rms_norm")


def test_a_version_continued_on_the_next_line_is_read_whole(tmp_path):
    """`triton: 3.9.0` continued on the next line is the Triton "3.9.0 rc1" to YAML (and to `tables verify`), not
    this machine's 3.9.0: refused as another stack. Caught: t14 (the version line read without looking at the next
    one)."""
    root = _copy(tmp_path)
    triton = tables.load(root).index(CLASS, "rms_norm").stack["triton"]
    tables.clear_cache()
    _header_edit(root, f"\n  triton: {triton}\n", f"\n  triton: {triton}\n    rc1\n")
    with pytest.raises(TablesError, match=rf"compiler stack .*triton {re.escape(triton)} rc1"):
        tables.load(root).index(CLASS, "rms_norm")


def test_a_tables_folder_under_home_is_not_taken_for_a_relative_one(tmp_path, monkeypatch):
    """NEUROBRIX_TABLES=~/t names one folder wherever a command runs: it loads. Caught: t19 (the path tested as
    absolute before `~` was expanded: refused as relative)."""
    _copy(tmp_path / "home")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(tables.ENV_VAR, "~/tables")
    tables.clear_cache()
    assert tables.load().location.root == (tmp_path / "home" / "tables").resolve()


def test_the_stack_is_read_from_the_provenance_block_alone(tmp_path):
    """A version line of another top-level block after the provenance (here a `notes:` the schema refuses) is not the
    provenance's: with the provenance's own Triton given on two lines, the scan cannot read it, so the record is
    parsed and refused. Caught: t13 (the block read to the end of the header: the other block's `triton` was taken as
    the provenance's and the index loaded)."""
    root = _copy(tmp_path)
    triton = tables.load(root).index(CLASS, "rms_norm").stack["triton"]
    tables.clear_cache()
    _header_edit(root, f"\n  triton: {triton}\n", f"\n  triton: {triton}\n    rc1\n")
    _header_edit(root, "\nentries:\n", f"\nnotes:\n  triton: {triton}\nentries:\n")
    with pytest.raises(TablesError):
        tables.load(root).index(CLASS, "rms_norm")


def test_bind_refuses_a_path_that_is_no_tables_folder(tmp_path, capsys):
    """Found this round: `python -m conformance.bind` on a mistyped path ended in a FileNotFoundError traceback, and
    on any other folder wrote a TRACKED.yaml into it. Now one line, exit 3, nothing written."""
    for path in (tmp_path / "missing", tmp_path):
        assert bind.main([str(path)]) == 3
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{path}: not a tables folder" in err, err
    assert list(tmp_path.iterdir()) == []
