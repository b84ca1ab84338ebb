"""The fiftieth strictness round: versions meeting. What the engine does with pieces another version wrote: a model
store imported by another NeuroBrix (its manifest's format), tables whose index, record, class.yaml or TRACKED.yaml
is of another format, a tokenizer.json written by a newer ``tokenizers``. The rule: read as the writer meant, or one
line naming the file, the version found and the version read; never a newer format read as an older one.

Found and fixed (each test below failed before its fix):
- a tables file (index, audit record, class.yaml, TRACKED.yaml) of a newer integer format whose layout differs (a
  field renamed) was refused naming the field it lacks, as a damaged file of this format; its format is now named
  first, with the format this NeuroBrix reads and what to do (exit 3 as before).
- a stored model whose manifest a newer NeuroBrix wrote (format 2) was "damaged ... remove it and import it again":
  removing it destroys a model the newer NeuroBrix runs; named now as a newer NeuroBrix's import, format found and
  read (exit 7 as before).
- a tokenizer.json of a newer ``tokenizers`` (a format version other than 1.0, a model, normalizer, pre-tokenizer,
  post-processor or decoder type the installed library lacks) was "not a valid tokenizer.json ...; fetch the
  checkpoint again", which gives the same file: named now, with the type or version and the installed version;
  and a safetensors tensor dtype the installed safetensors lacks (its "unknown variant") is named with its version.
- a re-proof of another format was "unreadable (not a re-proof of this class in this format)" or a missing field:
  named now by its format, the format read and whether a newer or older NeuroBrix wrote it.

Also: an older record format is named as older (it was "must be same as const definition"). Pinned: an older
index format keeps its reformat advice.
Pinned: an added field in tokenizer.json's model (tokenizers, and so transformers, ignore it) and a config.json
transformers_version newer than the installed transformers (transformers reads the file; the engine reads the field
only for the Mistral regex fix) import, and encode as the unchanged checkpoint does.
Left open: a manifest of format 1 lacking a field a later NeuroBrix added cannot be told from an old one (round 40);
`list` still marks a newer NeuroBrix's model DAMAGED (with the newer-format reason beside it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import tokenizers
from conftest import REPO, retrack
from store_fixtures import make_checkpoint

from neurobrix import store, tables
from neurobrix.checkpoint import CheckpointError
from neurobrix.errors import TablesError
from neurobrix.tokenizer import Tokenizer, TokenizerFileError


def _tables(tmp_path: Path, edit) -> Path:
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / "interpreter", root / "interpreter")
    edit(root)
    if not (root / tables.TRACKED_NAME).exists():
        retrack(root)
    return root


def _json(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _sub(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _index5(root: Path) -> None:
    _json(root / "interpreter" / "linear.json", lambda d: d.update(format=5, rows=d.pop("entries")))


def _proofs4(root: Path) -> None:
    path = root / "interpreter" / "linear.proofs.yaml"
    _sub(path, "format: 3", "format: 4")
    _sub(path, "    entry: ", "    row: ")  # a later layout's name for the digest


def _class2(root: Path) -> None:
    _sub(root / "interpreter" / "class.yaml", "format: 1", "format: 2")
    _sub(root / "interpreter" / "class.yaml", "\nmatch:", "\nmatches:")


def _tracked2(root: Path) -> None:
    retrack(root)
    _sub(root / tables.TRACKED_NAME, "format: 1", "format: 2")
    _sub(root / tables.TRACKED_NAME, "\nfiles:", "\ntracked:")


def _read_all(root: Path) -> None:
    loaded = tables.load(root)
    loaded.index("interpreter", "linear")
    loaded.proofs("interpreter", "linear")


@pytest.mark.parametrize(
    ("edit", "file", "found", "reads"),
    [
        (_index5, "linear.json", 5, 4),
        (_proofs4, "linear.proofs.yaml", 4, 3),
        (_class2, "class.yaml", 2, 1),
        (_tracked2, "TRACKED.yaml", 2, 1),
    ],
)
def test_newer_table_format_named_before_its_fields(tmp_path, edit, file, found, reads) -> None:
    root = _tables(tmp_path, edit)
    with pytest.raises(TablesError) as info:
        _read_all(root)
    message = str(info.value)
    assert file in message and "\n" not in message
    assert f"format {found}, and this NeuroBrix reads format {reads}" in message, message
    assert "newer NeuroBrix" in message


def test_an_older_index_format_keeps_its_reformat_advice(tmp_path) -> None:
    root = _tables(tmp_path, lambda r: _json(r / "interpreter" / "linear.json", lambda d: d.update(format=3)))
    with pytest.raises(TablesError, match="format 3 is an older layout .* reformat --class interpreter"):
        _read_all(root)


def test_an_older_record_format_is_named_older(tmp_path) -> None:
    root = _tables(tmp_path, lambda r: _sub(r / "interpreter" / "linear.proofs.yaml", "format: 3", "format: 2"))
    with pytest.raises(TablesError, match="format 2, and this NeuroBrix reads format 3 \\(an older layout"):
        _read_all(root)


def test_manifest_of_a_newer_neurobrix_is_not_damage_to_remove(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    store.import_model(str(make_checkpoint(tmp_path / "tiny")), progress=False)
    manifest = store.resolve("tiny").path / store.MANIFEST
    _json(manifest, lambda d: d.update(format=2, layout="later"))
    with pytest.raises(store.DamagedModelError) as info:
        store.resolve("tiny")
    message = str(info.value)
    assert "format 2" in message and f"reads format {store.MANIFEST_FORMAT}" in message, message
    assert "newer NeuroBrix" in message and "remove" not in message
    assert info.value.exit_code == 7


NEWER_TOKENIZER = [
    ("model", lambda d: d["model"].update(type="WordLevel2"), "model type 'WordLevel2'"),
    ("normalizer", lambda d: d.update(normalizer={"type": "FutureNorm"}), "normalizer type 'FutureNorm'"),
    ("pre_tokenizer", lambda d: d.update(pre_tokenizer={"type": "FuturePre"}), "pre_tokenizer type 'FuturePre'"),
    ("decoder", lambda d: d.update(decoder={"type": "Sequence", "decoders": [{"type": "FutureDec"}]}), "'FutureDec'"),
    ("post", lambda d: d.update(post_processor={"type": "FuturePost"}), "post_processor type 'FuturePost'"),
    ("version", lambda d: d.update(version="2.0"), "format version is '2.0'"),
]


@pytest.mark.parametrize(("case", "change", "named"), NEWER_TOKENIZER, ids=[c[0] for c in NEWER_TOKENIZER])
def test_tokenizer_json_of_a_newer_tokenizers_is_named_so(tmp_path, monkeypatch, case, change, named) -> None:
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny")
    _json(folder / "tokenizer.json", change)
    with pytest.raises(CheckpointError) as info:  # import's check
        store.import_model(str(folder), progress=False)
    message = str(info.value)
    assert named in message and tokenizers.__version__ in message and "fetch" not in message, message
    with pytest.raises(TokenizerFileError) as built:  # the tokenizer built from the folder (the API)
        Tokenizer(folder)
    assert named in str(built.value) and tokenizers.__version__ in str(built.value), built.value


def test_a_damaged_tokenizer_json_is_still_damage(tmp_path) -> None:
    folder = make_checkpoint(tmp_path / "tiny")
    _json(folder / "tokenizer.json", lambda d: d["model"].pop("vocab"))
    with pytest.raises(CheckpointError, match="fetch the checkpoint again"):
        store.import_model(str(folder), progress=False)


@pytest.mark.parametrize(("found", "by"), [(2, "a newer"), (0, "an older")])
def test_a_reproof_of_another_format_is_named_by_its_format(tmp_path, monkeypatch, found, by) -> None:
    from neurobrix import stack

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    loaded = tables.load(REPO / "tables")
    running = stack.Stack("2.99.0", "9.9.0")
    stack.write_reproof("interpreter", loaded, running, {"passed": True}, "test", "test")
    assert stack.reproof_problem("interpreter", loaded, running) is None  # control
    path = stack.reproof_path("interpreter")
    # a later layout: its stack under another key (read as this format's, it was "unreadable ('stack')")
    _json(path, lambda d: d.update(format=found, stacks=[d.pop("stack")]))
    problem = stack.reproof_problem("interpreter", loaded, running) or ""
    assert f"is format {found}, and this NeuroBrix reads format {stack.REPROOF_FORMAT}" in problem, problem
    assert f"written by {by} NeuroBrix" in problem


def test_a_safetensors_dtype_the_installed_library_lacks_is_named(tmp_path, monkeypatch) -> None:
    import struct

    import safetensors

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny")
    path = folder / "model.safetensors"
    data = path.read_bytes()
    length = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + length])
    header["model.norm.weight"]["dtype"] = "F3_LATER"  # a dtype name safetensors 0.8 lacks
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data[8 + length :])
    with pytest.raises(CheckpointError) as info:
        store.import_model(str(folder), progress=False)
    message = str(info.value)
    assert "model.norm.weight's dtype 'F3_LATER'" in message and safetensors.__version__ in message, message


HELD = [
    ("tokenizer.json", lambda d: d["model"].update(later_option=True)),
    ("config.json", lambda d: d.update(transformers_version="99.0.0")),
]


@pytest.mark.parametrize(("file", "change"), HELD, ids=[f for f, _ in HELD])
def test_fields_a_later_library_adds_are_read_as_that_library_reads_them(tmp_path, monkeypatch, file, change) -> None:
    transformers = pytest.importorskip("transformers")
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny")
    _json(folder / file, change)
    store.import_model(str(folder), progress=False)
    text = "hello world the model runs"
    ids = Tokenizer(store.resolve("tiny").path).encode_text(text)
    reference = transformers.AutoTokenizer.from_pretrained(str(folder))(text, add_special_tokens=False)["input_ids"]
    assert ids == reference
