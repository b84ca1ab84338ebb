"""The forty-third round, on the model store under NEUROBRIX_HOME and the config.json fields that change the math.

Found and fixed (three classes):

- a stored model's folder holding another model's files: ``mv models/alpha models/beta``, ``cp -r``, a link
  ``models/beta -> alpha``, an organisation folder renamed (``models/Org/Tiny`` to ``models/Other/Tiny``). Every file
  matched the manifest, which was the other model's, so `run --model beta` generated with alpha's weights, config and
  tokenizer under beta's name (exit 0), `warmup` planned it, and `list` showed it as beta imported from alpha's source.
  The manifest has recorded the stored name since the store's first commit and nothing read it: a manifest whose name
  is not its folder's (case aside: a hub id names one repository in any case) is damage now (exit 7, naming the model
  the manifest belongs to), and so is one with no name or a name that is no text. `remove` of such a model said its
  manifest was "unreadable" (it names the model it belongs to now), and of a linked one left the link behind in the
  store as an import's scratch name (``shutil.rmtree`` refuses a link, silently under ignore_errors; the sweep of
  scratch folders did the same; so did an import replacing a linked model folder): the link is removed as a link, the
  folder it led to left as it is;
- a model folder moved to another disk and linked back (its manifest its own): round 21's check stamped the folder
  with ``lstat``, the link's own inode and times, so a file added where the link leads between the check and the
  reading (special_tokens_map.json, which the tokenizer reads whenever it is there) was read unchecked (exit 0); a link
  is stamped with what it leads to as well now (exit 7);
- config.json's ``head_dim: 0`` on a Mistral model, which MistralAttention and its rotary read with ``or`` (0 is
  hidden_size // num_attention_heads there: transformers generates the saved model's text), was refused ("must be an
  integer >= 1", exit 2); it runs to transformers' text now. Llama's and Qwen2's attention take it as written and fail
  (ZeroDivisionError), and stay refused (controls).

Held (looked at, each refused by name or the same as transformers): a Mistral head_dim of false, true or 0.0 and a
Llama one of false (transformers' config refuses each); num_key_value_heads 0 (Llama, Mistral); Mistral's
sliding_window false; a rope_theta written as text inside rope_parameters; TRITON_INTERPRET set after Triton was
imported in the process (refused naming the variable, nothing launched); an HF cache snapshot whose
config.json or weights link leads nowhere (refused at import, exit 2). Left as they are: a snapshot whose
generation_config.json or tokenizer_config.json link leads nowhere is imported without that file (transformers reading
the same cache leaves it out too, as round 32 left files that are no files); a folder renamed in case only (the same
hub repository); a moved folder whose manifest is edited to its new name (a hand that edits the manifest can write its
hashes too, round 40).

Each test that says "before" failed before its fix (run in a worktree of the round's base commit, or before the fix
in this one); the controls pass either way."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from store_fixtures import make_checkpoint, populate_hub_cache

from neurobrix import store


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("strict43")
    return {"alpha": make_checkpoint(root / "alpha"), "beta": make_checkpoint(root / "beta", "qwen2")}


def _cli(monkeypatch, capsys, *argv: str) -> tuple[int, str, str]:
    from neurobrix.cli import main

    try:
        code = main(list(argv))
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


def _run(monkeypatch, capsys, name: str) -> tuple[int, str, str]:
    return _cli(
        monkeypatch, capsys, "run", "--model", name, "--prompt", "hello", "--max-tokens", "2", "--backend", "torch"
    )


def _two_local(checkpoints, tmp_path) -> Path:
    for key in ("alpha", "beta"):
        shutil.copytree(checkpoints[key], tmp_path / "src" / key)
        store.import_model(str(tmp_path / "src" / key), progress=False)
    return store.models_dir()


MOVES = {
    "moved": lambda models: (shutil.rmtree(models / "beta"), os.rename(models / "alpha", models / "beta")),
    "copied": lambda models: (shutil.rmtree(models / "beta"), shutil.copytree(models / "alpha", models / "beta")),
    "linked": lambda models: (shutil.rmtree(models / "beta"), os.symlink(models / "alpha", models / "beta")),
}


@pytest.mark.parametrize("how", MOVES)
def test_another_models_folder_under_a_stored_name_is_damage(checkpoints, tmp_path, monkeypatch, capsys, how):
    """Before: `run --model beta` generated with alpha's files (exit 0) and `list` showed beta from alpha's source."""
    models = _two_local(checkpoints, tmp_path)
    assert _run(monkeypatch, capsys, "beta")[0] == 0  # as imported, it runs
    MOVES[how](models)
    code, out, err = _run(monkeypatch, capsys, "beta")
    assert code == 7 and out == "" and "Traceback" not in err, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "stored model beta" in lines[0] and "neurobrix-model.json is the one of 'alpha'" in lines[0], lines[0]
    assert "moved, copied or linked here" in lines[0] and "`neurobrix remove beta`" in lines[0], lines[0]
    # the folder it came from names the stored model no longer
    code, _, err = _run(monkeypatch, capsys, str(tmp_path / "src" / "beta"))
    assert code in (2, 7) and "Traceback" not in err, err
    listed = {m.name: m for m in store.list_models()}
    assert listed["beta"].damaged and "the one of 'alpha'" in listed["beta"].damaged
    # the way out the line gives works: remove (saying why it was damaged; a link goes as a link, the folder it led to
    # stays, nothing is left behind), import again, run
    code, out, _ = _cli(monkeypatch, capsys, "remove", "beta")
    assert code == 0 and "it was damaged: its neurobrix-model.json was the one of 'alpha'" in out, out
    assert sorted(p.name for p in models.iterdir()) == ([] if how == "moved" else ["alpha"])
    if how != "moved":
        assert store.resolve("alpha").damaged is None
    store.import_model(str(tmp_path / "src" / "beta"), progress=False)
    assert _run(monkeypatch, capsys, "beta")[0] == 0


def test_warmup_refuses_another_models_folder(checkpoints, tmp_path, monkeypatch, capsys):
    """Before: `warmup --model beta` planned alpha's shapes under beta's name (it resolves the model as run does)."""
    models = _two_local(checkpoints, tmp_path)
    MOVES["copied"](models)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    code, out, err = _cli(monkeypatch, capsys, "warmup", "--model", "beta")
    assert code == 7 and "Traceback" not in err and "the one of 'alpha'" in err, (code, out, err)


def test_an_organisation_folder_renamed_is_damage(checkpoints, tmp_path, monkeypatch, capsys):
    """A hub model's organisation folder renamed: `run Other/Tiny` ran Org/Tiny. Before: exit 0."""
    populate_hub_cache(tmp_path / "hf" / "hub", "Org/Tiny", checkpoints["alpha"])
    store.import_model("Org/Tiny", progress=False)
    os.rename(store.models_dir() / "Org", store.models_dir() / "Other")
    code, _, err = _run(monkeypatch, capsys, "Other/Tiny")
    assert code == 7 and "the one of 'Org/Tiny'" in err and "(imported from Org/Tiny)" in err, err


def test_a_folder_renamed_in_case_only_is_the_same_hub_model(checkpoints, tmp_path, monkeypatch, capsys):
    """Control: hub ids are case-insensitive (resolve matches them so), so a case-only rename is the same model."""
    populate_hub_cache(tmp_path / "hf" / "hub", "Org/Tiny", checkpoints["alpha"])
    store.import_model("Org/Tiny", progress=False)
    os.rename(store.models_dir() / "Org", store.models_dir() / "org")
    assert store.resolve("org/tiny").name == "org/Tiny"
    assert _run(monkeypatch, capsys, "org/Tiny")[0] == 0


@pytest.mark.parametrize("name", [KeyError, None, 5, "", ["alpha"]], ids=repr)
def test_a_manifest_without_a_text_name_is_damage(checkpoints, tmp_path, monkeypatch, capsys, name):
    """Every import has written the name; one deleted or of another type cannot say which model the folder holds.
    Before: run (exit 0)."""
    models = _two_local(checkpoints, tmp_path)
    manifest = models / "alpha" / store.MANIFEST
    data = json.loads(manifest.read_text())
    if name is KeyError:
        del data["name"]
    else:
        data["name"] = name
    manifest.write_text(json.dumps(data))
    code, _, err = _run(monkeypatch, capsys, "alpha")
    assert code == 7 and "neurobrix-model.json is unreadable" in err and "name" in err and "Traceback" not in err, err


# --- config.json: a Mistral head_dim of 0 ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def family_folders(tmp_path_factory) -> dict[str, Path]:
    """Round 7's tiny random checkpoint of each family with ``head_dim: 0`` in config.json, and Mistral's as saved."""
    pytest.importorskip("transformers")
    from test_text_round7 import checkpoint

    root = tmp_path_factory.mktemp("strict43-config")
    generation = {"eos_token_id": 9999, "max_new_tokens": 3}
    folders = {
        family: checkpoint(root / family, f"{family}Config", fields={"head_dim": 0}, generation=generation)
        for family in ("Mistral", "Llama", "Qwen2")
    }
    folders["Mistral-saved"] = checkpoint(root / "Mistral-saved", "MistralConfig", generation=generation)
    return folders


def test_a_mistral_head_dim_of_0_runs_to_transformers_text(family_folders, monkeypatch):
    """MistralAttention and its rotary read head_dim with ``or``: 0 is hidden_size // num_attention_heads, and
    transformers generates the text of the saved model. Before: refused ("field 'head_dim' must be an integer >= 1",
    exit 2)."""
    from test_text_round7 import ours, theirs

    want = theirs(family_folders["Mistral"])
    assert want == theirs(family_folders["Mistral-saved"])  # 0 is the default head dim to transformers
    ids, text, _ = ours(family_folders["Mistral"], monkeypatch)
    assert (ids, text) == want


@pytest.mark.parametrize("family", ["Llama", "Qwen2"])
def test_a_llama_or_qwen2_head_dim_of_0_stays_refused(family_folders, monkeypatch, capsys, family):
    """Control: their attention takes head_dim as written (a projection of 0 rows per head; its rotary divides by 0),
    so transformers fails and `run` refuses by name."""
    from test_text_round7 import theirs

    folder = family_folders[family]
    with pytest.raises(ZeroDivisionError):
        theirs(folder)
    monkeypatch.setenv("NEUROBRIX_HOME", str(folder.parent / "home"))
    code, _, err = _cli(monkeypatch, capsys, "import", str(folder))
    assert code == 2 and "field 'head_dim' must be an integer >= 1, got 0" in err and "Traceback" not in err, err


# --- a stored model's folder that is a link: files added after the check ---------------------------------------------


def test_a_file_added_to_a_linked_model_folder_after_the_check_is_refused(checkpoints, tmp_path, monkeypatch, capsys):
    """A model folder moved to another disk and linked back (`models/alpha -> /disk/alpha`, the manifest its own): the
    check stamped the folder through ``lstat``, the link's own inode and time, so a file the tokenizer reads whenever
    it is there (special_tokens_map.json) dropped into the folder between the check and the reading (round 21's class)
    was read unchecked. Before: exit 0. Now the folder is stamped where it lies (exit 7); unchanged, it runs."""
    models = _two_local(checkpoints, tmp_path)
    os.rename(models / "alpha", tmp_path / "disk-alpha")
    os.symlink(tmp_path / "disk-alpha", models / "alpha")
    assert _run(monkeypatch, capsys, "alpha")[0] == 0
    checked = store.resolve

    def resolve_then_add(name):
        model = checked(name)
        (tmp_path / "disk-alpha" / "special_tokens_map.json").write_text('{"bos_token": "hello"}')
        return model

    monkeypatch.setattr(store, "resolve", resolve_then_add)
    code, out, err = _cli(monkeypatch, capsys, "run", "--model", "alpha", "--prompt", "hello", "--max-tokens", "1")
    assert code == 7 and out == "" and "changed while this command read it" in err and "its folder" in err, err


def test_a_linked_model_folder_imported_again_leaves_nothing_behind(checkpoints, tmp_path):
    """Importing a model again moves the folder there aside and deletes it; a link there was moved aside and never
    deleted (``shutil.rmtree`` refuses a link, silently under ignore_errors, and the sweep of scratch folders did the
    same), so it stayed in the store under a scratch name for good. Before: ``.tmp-...`` left in models/. Now the link
    goes as a link, and the folder it led to is left as it is."""
    models = _two_local(checkpoints, tmp_path)
    os.rename(models / "alpha", tmp_path / "disk-alpha")
    os.symlink(tmp_path / "disk-alpha", models / "alpha")
    store.import_model(str(tmp_path / "src" / "alpha"), progress=False)
    assert sorted(p.name for p in models.iterdir()) == ["alpha", "beta"]
    assert not (models / "alpha").is_symlink() and (tmp_path / "disk-alpha" / store.MANIFEST).is_file()
    assert store.resolve("alpha").damaged is None
