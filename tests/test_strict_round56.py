"""The fifty-sixth round, adversarial on the strict runtime: the proof record's fast path, which rounds 31, 32 and 55
weighed and left open (docs/strictness-rounds.md).

`run` (and `doctor`, `warmup`, `conformance check`) read a record in certify's layout by a line scan of its entry
digests, not its proofs, where `tables verify` parses every character. A record `tables verify` refuses whose digests
the scan reads as the index's loaded: a ``  proof:`` and digest line hidden in a quoted text spread over lines, the
real digest's key quoted (run launched BLOCK_M 32 for linear's fp32 M=5.. entry, proven with BLOCK_M 64), a worst
error ratio of ``.nan``, a domain's dtype spelt ``float32``, and each proof the schema or its checks refuse (a
candidate rejected that is the entry's own setting, one rejected twice, a count of candidates off by one, a best time
above the median, a line YAML cannot read, a character its reader refuses). Fixed: the fast path also reads each entry
as certify writes it (``tables._certified_entries``: its head byte for byte the index entry's text, its proof's keys
in order with values the schema passes, its rejected candidates read as `tables verify` reads them); a record in any
other form is parsed, which refuses what `tables verify` refuses and reads the rest alike. Each forged case below
loaded before the fix (its test failed) and is refused now (one line, the file named), `tables verify` refusing it as
before; the shipped records all stay on the fast path.

Then the item round 55 left: a table file edited in place without its TRACKED.yaml while a model is loaded (damage a
fresh process refuses, exit 3). Before each generation the engine compared TRACKED.yaml's stat alone with the one it
verified, so the model went on with the settings it read before; each table file's stat is compared too now, and the
tables are verified again, refused as a fresh process refuses them.

No GPU: the interpreter class's shipped tables, copied, edited and tracked again, and round 47's tiny model.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from conftest import REPO, retrack
from store_fixtures import make_checkpoint

from neurobrix import store, tables
from neurobrix.errors import TablesError
from neurobrix.generate import Sampling, generate
from neurobrix.run import load_model
from neurobrix.schema import entry_digest, row_digests

CLASS = "interpreter"


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    return root


def _entries_at(text: str) -> int:
    return text.index("\nentries:\n") + len("\nentries:\n")


def _replace_after_entries(text: str, old: str, new: str) -> str:
    """``old``'s first occurrence among the entries replaced by ``new`` (the header left as it is)."""
    start = _entries_at(text)
    at = text.index(old, start)
    return text[:at] + new + text[at + len(old) :]


def _hidden_digest(root: Path) -> str:
    """Round 55's forgery: linear's fp32 M=5.. entry set to BLOCK_M 32 in the index (never proven), its record left with
    the BLOCK_M 64 proof, the real digest's key quoted (``"entry":``, which the scan does not read as a digest line),
    and a ``  proof:`` line with the edited entry's digest hidden inside a rejected candidate's quoted text spread over
    lines: the scan reads that digest, YAML reads the text. Returns the kernel."""
    retrack(root)
    domain = tables.load(root).index(CLASS, "linear").entries[-1].domain
    index = tables.index_path(root, CLASS, "linear")
    text = index.read_text(encoding="utf-8")
    assert text.count('[["fp32"], 5, null, 1, null, 1, null, 0]') == 1
    index.write_text(
        text.replace('[["fp32"], 5, null, 1, null, 1, null, 0]', '[["fp32"], 5, null, 1, null, 1, null, 1]')
    )
    record = tables.proofs_path(root, CLASS, "linear")
    text = record.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    last = data["entries"][-1]
    assert last["domain"]["dtypes"] == ["fp32"] and last["domain"]["M"] == [5, None] and last["config"]["BLOCK_M"] == 64
    real = last["proof"]["entry"]
    forged = entry_digest("linear", CLASS, domain, dict(last["config"], BLOCK_M=32))
    assert text.count(f"    entry: {real}\n") == 1
    text = text.replace(f"    entry: {real}\n", f'    "entry": {real}\n')
    at = text.index(f'    "entry": {real}\n')
    item = text.index("\n    - 'slower: ", at) + 1
    close = text.index("'\n", item + len("    - '"))
    text = text[:close] + f"\n  proof:\n    entry: {forged}\n      '" + text[close + 1 :]
    record.write_text(text, encoding="utf-8")
    return "linear"


def _record_edit(kernel: str, old: str, new: str) -> Callable[[Path], str]:
    def edit(root: Path) -> str:
        path = tables.proofs_path(root, CLASS, kernel)
        path.write_text(_replace_after_entries(path.read_text(encoding="utf-8"), old, new), encoding="utf-8")
        return kernel

    return edit


# (id, the edit; each leaves the record in certify's layout with the index's digests, so the scan reads it as proven)
FORGED: list[tuple[str, Callable[[Path], str]]] = [
    ("hidden-digest-line", _hidden_digest),
    ("nan-ratio", _record_edit("rms_norm", "    worst_error_ratio: 0.9993\n", "    worst_error_ratio: .nan\n")),
    ("dtype-alias", _record_edit("rms_norm", "    dtypes:\n    - fp32\n", "    dtypes:\n    - float32\n")),
    ("ratio-above-one", _record_edit("rms_norm", "    worst_error_ratio: 0.9993\n", "    worst_error_ratio: 1.5\n")),
    (
        "own-setting-rejected",
        _record_edit("rms_norm", "'slower: BLOCK_M=16 num_warps=4:", "'slower: BLOCK_M=64 num_warps=4:"),
    ),
    (
        "own-setting-rejected-reordered",
        _record_edit("rms_norm", "'slower: BLOCK_M=16 num_warps=4:", "'slower: num_warps=4 BLOCK_M=64:"),
    ),
    (
        "candidate-twice",
        _record_edit("rms_norm", "'slower: BLOCK_M=4 num_warps=4:", "'wrong_result: num_warps=4 BLOCK_M=16:"),
    ),
    ("candidates-miscounted", _record_edit("rms_norm", "    candidates_tried: 3\n", "    candidates_tried: 4\n")),
    ("best-above-median", _record_edit("rms_norm", "    time_best_us: 3983.18\n", "    time_best_us: 4983.18\n")),
    ("unreadable-item", _record_edit("rms_norm", " us median vs 4007.08 us'\n", " us median vs 4007.08 us': '''\n")),
    ("bell-in-a-text", _record_edit("rms_norm", " us median vs 4007.08 us'\n", " us median\a vs 4007.08 us'\n")),
    ("int-as-float", _record_edit("rms_norm", "    examples: 25\n", "    examples: 25.0\n")),
    (
        "setting-not-a-candidate",
        _record_edit("rms_norm", "'slower: BLOCK_M=16 num_warps=4:", "'slower: BLOCK_M=16 num_warps:"),
    ),
]


def _runtime_refusal(root: Path, kernel: str) -> str | None:
    """What loading the kernel's index says, as run loads it (None: loaded)."""
    tables.clear_cache()
    try:
        tables.load(root).index(CLASS, kernel)
    except TablesError as exc:
        return str(exc)
    return None


def _verify_refuses(root: Path, kernel: str) -> bool:
    tables.clear_cache()
    return any(p.path == f"{CLASS}/{kernel}" for p in tables.verify_all(tables.load(root)))


@pytest.mark.parametrize("edit", [edit for _, edit in FORGED], ids=[name for name, _ in FORGED])
def test_a_forged_record_the_scan_reads_as_proven_is_refused_as_tables_verify_refuses_it(tmp_path, edit):
    """Fixed: each loaded (the scan read the index's digests in certify's layout) where `tables verify` refused it."""
    root = _copy(tmp_path)
    kernel = edit(root)
    retrack(root)
    text = tables.proofs_path(root, CLASS, kernel).read_text(encoding="utf-8")
    index = tables.load(root)._parsed_index(CLASS, kernel)
    layout = tables._record_layout(text, CLASS, kernel)
    own = row_digests(kernel, CLASS, index.key, index.configs, index.rows)
    assert layout is not None and layout[1] == own, "the scan reads it as certify's layout proving its index"
    assert _verify_refuses(root, kernel), "tables verify refuses it"
    said = _runtime_refusal(root, kernel)
    assert said is not None, "run loaded a record tables verify refuses"
    assert "\n" not in said and f"{kernel}.proofs.yaml" in said, said


def test_the_hidden_digest_made_run_launch_a_setting_never_proven(tmp_path):
    """Fixed: the forgery round 55 found, end to end: the index's BLOCK_M 32 for fp32 M=8 was what run resolved."""
    root = _copy(tmp_path)
    _hidden_digest(root)
    retrack(root)
    tables.clear_cache()
    with pytest.raises(TablesError, match=r"linear\.json: entry 3 .*'BLOCK_M': 32.* is not the one its record "):
        tables.load(root).index(CLASS, "linear")


def test_a_record_outside_certifys_form_that_proves_its_index_still_loads(tmp_path, monkeypatch):
    """Pinned: a record YAML reads as the shipped one but written otherwise than certify writes it (a text
    double-quoted) is parsed, and loads as `tables verify` passes it: the form never stands between a valid record and
    its run, it only decides what is read without a parse."""
    root = _copy(tmp_path)
    path = tables.proofs_path(root, CLASS, "rms_norm")
    shipped = path.read_text(encoding="utf-8")
    text = _replace_after_entries(
        shipped,
        "    bound: conformance.bounds.rms_norm + residual_add\n",
        '    bound: "conformance.bounds.rms_norm + residual_add"\n',
    )
    path.write_text(text, encoding="utf-8")
    retrack(root)
    assert yaml.safe_load(text) == yaml.safe_load(shipped)
    index = tables.load(root)._parsed_index(CLASS, "rms_norm")
    own = row_digests("rms_norm", CLASS, index.key, index.configs, index.rows)
    assert tables._record_layout(text, CLASS, "rms_norm") is not None and not tables._certified_entries(
        text, index, own
    )
    parsed = []
    real = tables.parse_proofs
    monkeypatch.setattr(tables, "parse_proofs", lambda *a, **k: parsed.append(1) or real(*a, **k))
    assert _runtime_refusal(root, "rms_norm") is None and parsed
    assert not _verify_refuses(root, "rms_norm")


def test_every_shipped_record_is_in_certifys_form():
    """Every record under tables/ is read by the fast path as it is (no parse): its entries are its index's, in
    certify's form, with proofs the schema passes."""
    loaded = tables.load(REPO / "tables")
    for class_id in loaded.classes:
        for kernel in loaded.kernels(class_id):
            index = loaded._parsed_index(class_id, kernel)
            own = row_digests(kernel, class_id, index.key, index.configs, index.rows)
            text = tables.proofs_path(loaded.root, class_id, kernel).read_text(encoding="utf-8")
            assert tables._certified_entries(text, index, own), (class_id, kernel)


def test_an_installed_wheels_tables_are_not_read_again():
    """The release's tables (a wheel's RECORD pins TRACKED.yaml, which pins each record) are the bytes the release gate
    ran `tables verify` on: their proofs are not read again; a source checkout's, a given folder's and
    NEUROBRIX_TABLES's are."""
    assert not tables.load(REPO / "tables")._release


def test_a_control_character_in_a_yaml_table_is_named_in_one_line(tmp_path):
    """Fixed: a raw control character in a YAML table (a BEL in class.yaml's description, which YAML's reader refuses
    before any text is read) ended every command in a message of two lines ("... not allowed" and, below it, "in
    <unicode string>, position N"); it is one line now, naming the file, the line and the character."""
    root = _copy(tmp_path)
    path = tables.class_path(root, CLASS)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("description: ", "description: \a", 1), encoding="utf-8")
    retrack(root)
    tables.clear_cache()
    with pytest.raises(TablesError) as err:
        tables.load(root)
    line = 1 + text[: text.index("description: ")].count("\n")
    assert str(err.value).startswith(f"{path}:{line}: not valid YAML: found the control character '\\x07'"), err.value
    assert "\n" not in str(err.value)


def test_a_table_edited_in_place_under_a_loaded_model_is_refused_at_its_next_generation(tmp_path, monkeypatch):
    """Fixed: rms_norm's index edited in place (its num_warps 4 to 8, the same size) without TRACKED.yaml after a
    model was loaded from the folder: the next generation ran on the settings read before (TRACKED.yaml's stat, all the
    engine compared, had not moved), where a fresh process refuses the folder (exit 3). It is refused now, as then."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    store.import_model(str(make_checkpoint(tmp_path / "tiny")), progress=False)
    root = _copy(tmp_path)
    retrack(root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    tables.clear_cache()
    model = load_model(store.resolve("tiny"), "triton", "fp32", prompt_len=3, capacity=4)
    generate(model, [3, 4, 5], 1, Sampling(), set())
    path = tables.index_path(root, CLASS, "rms_norm")
    text = path.read_text(encoding="utf-8")
    with open(path, "r+", encoding="utf-8") as out:  # in place: the same file, the same size
        out.write(text.replace('"num_warps": 4', '"num_warps": 8', 1))
    with pytest.raises(TablesError, match="do not match TRACKED.yaml") as err:
        generate(model, [3, 4, 5], 1, Sampling(), set())
    assert f"{path}: sha256 differs from the tracked list" in str(err.value)


def test_a_header_tables_verify_refuses_is_refused_by_the_runtime_too(tmp_path):
    """Fixed: the header was read alone by the fast path, its provenance's re-proofs unread: linear's re-proof of 0
    examples an entry (the schema's minimum is 1) loaded where `tables verify` refused it. The whole header is held to
    the schema now (one entry standing in for the entries), and such a record is parsed and refused as there."""
    root = _copy(tmp_path)
    path = tables.proofs_path(root, CLASS, "linear")
    text = path.read_text(encoding="utf-8")
    assert text.count("    examples_per_entry: 25\n") == 1 and text.index("examples_per_entry") < _entries_at(text)
    path.write_text(text.replace("    examples_per_entry: 25\n", "    examples_per_entry: 0\n"), encoding="utf-8")
    retrack(root)
    assert _verify_refuses(root, "linear")
    said = _runtime_refusal(root, "linear")
    assert said is not None and "provenance.reproved[0].examples_per_entry" in said and "\n" not in said, said
