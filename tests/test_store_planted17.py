"""Round 17 of planted bugs in the model store, `import`, `doctor` and the NEUROBRIX_* refusal: small, realistic bugs
planted one at a time in what rounds 16-18 of the strict runtime hardened (the manifest's field types, a home or a
tables folder set but empty, a misspelt NEUROBRIX_* variable, a store that is a file, stored files edited at their
size, the command a failed hub import prints), each run against the store's, the CLI's and the strict rounds' test
files. Each test here failed with one surviving bug and passes without it (which bug: its docstring); the truth is
the rule the import writes by, or what huggingface_hub reads.

Planted (id: change -> outcome with the existing tests; a test here that catches it, after):
  cli.py        ev02 an unknown NEUROBRIX_* variable printed, not refused -> caught
  doctor.py     ev01 NEUROBRIX_SOURCE_COMMIT not among the variables read -> caught;  ev03 an unknown variable a
                warning -> caught;  ev04 NEUROBRIX_TABLE taken for NEUROBRIX_TABLES -> caught
  store.py      hm01 a home that is itself a file not looked at -> caught;  hm02 NEUROBRIX_HOME set but empty read
                as unset -> caught;  hm03 models/ a file: the mkdir error but PermissionError uncaught -> caught
                mf01 a format of true -> caught;  mf02 an empty source -> SURVIVED -> caught here;  mf03 the import
                date's type unread -> caught;  mf04 a file name starting with '.' -> SURVIVED -> caught here
                mf05 a NUL in a file name -> SURVIVED -> caught here;  mf06 a size of true -> caught
                mf07 a sha256 shorter than 64 digits -> caught;  mf08 a revision, commit or date false, 0 or []
                -> SURVIVED -> caught here;  mf09 hashes null or [] -> SURVIVED -> caught here
                vf01 only config.json's hash compared -> caught;  vf02 an unlisted shard index not reported
                -> SURVIVED -> caught here;  vf03 a stored file replaced by a link -> caught
                im01 a SOURCE of spaces -> SURVIVED -> caught here;  im02 a --model of spaces -> caught
  hub.py        hb01 --accept-license dropped from the offline message -> caught;  hb02 --accept-license dropped
                from the unreachable hub's message -> SURVIVED -> caught here
23 planted: 15 caught, 8 survived, none equivalent; each survivor fails a test below.
"""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def stored(tmp_path, monkeypatch):
    """A tiny model imported from a local folder into a store of its own; the store module."""
    from store_fixtures import make_checkpoint

    from neurobrix import store

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    store.import_model(str(make_checkpoint(tmp_path / "tiny", use_transformers=False)), progress=False)
    return store


def _manifest(stored) -> tuple:
    path = stored.models_dir() / "tiny" / stored.MANIFEST
    return path, json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("change", "said"),
    [
        # planted: an empty source taken (shown as "", and `neurobrix import ''` printed as the way to import it again)
        (lambda d, folder: d.update(source=""), "source '' is not the text of a hub id or a folder"),
        # planted: a file name starting with '.' taken, a file the import never writes (it stores none of those)
        (
            lambda d, folder: (folder.joinpath(".x").write_bytes(b"{}"), d["files"].update({".x": 2})),
            "files names '.x', which is not a file of the model's folder",
        ),
        # planted: a NUL in a file name taken; pathlib then finds no such file, and the damage printed the NUL as it is
        (lambda d, folder: d["files"].update({"a\0b": 1}), "files names 'a\\x00b', which is not a file of"),
        # planted: a revision, commit or date false, 0 or [] taken, as "no revision" (only truthy values checked)
        (lambda d, folder: d.update(revision=False), "revision False is neither a text nor null"),
        (lambda d, folder: d.update(commit=0), "commit 0 is neither a text nor null"),
        (lambda d, folder: d.update(imported=[]), "imported [] is neither a text nor null"),
        # planted: hashes null or [] taken for none recorded, a manifest of before they were (an edit then unseen)
        (lambda d, folder: d.update(sha256=None), "sha256 None is not a mapping of file names to hashes"),
        (lambda d, folder: d.update(sha256=[]), "sha256 [] is not a mapping of file names to hashes"),
    ],
    ids=["empty source", "dot file", "NUL", "revision false", "commit 0", "imported []", "sha256 null", "sha256 []"],
)
def test_a_manifest_the_import_never_writes_is_a_damaged_model(stored, change, said):
    path, data = _manifest(stored)
    change(data, path.parent)
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(stored.DamagedModelError, match="neurobrix-model.json is unreadable") as caught:
        stored.resolve("tiny")
    assert said in str(caught.value)
    assert said in stored.list_models()[0].damaged


def test_an_index_dropped_beside_stored_shards_is_damage(tmp_path, monkeypatch):
    """Shards without their index were imported and read whole; a model.safetensors.index.json put beside them after
    the import made run read the shards it names instead (transformers' order), a file run reads that the import
    never stored (planted: the index left out of the files run reads, the model resolved as imported). Since text
    round 44 shards without their index are refused at import (transformers' from_pretrained loads no model from
    them), so a stored model without an index holds model.safetensors: an index put beside it is still a file of a
    name run reads, unlisted, and the model is damaged."""
    from store_fixtures import make_checkpoint

    from neurobrix import store
    from neurobrix.checkpoint import INDEX, CheckpointError

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny", shards=2, use_transformers=False)
    index = (folder / INDEX).read_text(encoding="utf-8")
    (folder / INDEX).unlink()
    with pytest.raises(CheckpointError, match="neither model.safetensors nor shards named by"):
        store.import_model(str(folder), progress=False)
    single = make_checkpoint(tmp_path / "one", use_transformers=False)
    model = store.import_model(str(single), progress=False)
    assert INDEX not in model.files
    weight_map = json.loads(index)["weight_map"]
    (model.path / INDEX).write_text(
        json.dumps({"metadata": {}, "weight_map": {k: "model.safetensors" for k in weight_map}}), encoding="utf-8"
    )
    with pytest.raises(store.DamagedModelError, match=f"{INDEX} is not among the files imported"):
        store.resolve("one")


def test_an_unreachable_hub_prints_the_import_command_as_given(tmp_path, monkeypatch):
    """With the hub out of reach and the model not in the cache, the command to run again keeps --revision and
    --accept-license, as with HF_HUB_OFFLINE (planted: --accept-license dropped on this path only, so a gated
    model's import copied from the message was refused)."""
    from neurobrix import hub, store

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")

    def unreachable(repo_id, revision):
        raise OSError("Connection refused")

    monkeypatch.setattr(hub, "_model_info", unreachable)
    with pytest.raises(store.HubError, match="the hub cannot be reached") as caught:
        store.import_model("org/absent", revision="v1", accept_license=True, progress=False)
    assert "run `neurobrix import org/absent --revision v1 --accept-license` again" in str(caught.value)


def test_a_source_of_spaces_is_an_empty_source(tmp_path, monkeypatch, capsys):
    """`neurobrix import " "` (a variable that held nothing, quoted) gives no source: said so, exit 2 (planted: only
    the empty string caught, so spaces went on to be called neither a folder nor a hub id)."""
    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as caught:
        main(["import", "  "])
    assert caught.value.code == 2
    assert "SOURCE is empty: give a Hugging Face id (org/name) or a local checkpoint folder" in capsys.readouterr().err
