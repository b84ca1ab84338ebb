"""The model store: import from a folder or the hub (cache, network off), refusals, atomicity, list/remove, CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import REPO
from store_fixtures import HAVE_TRANSFORMERS, config_dict, make_checkpoint, make_pickle_only, populate_hub_cache

from neurobrix import checkpoint, hub, store
from neurobrix.cli import main
from neurobrix.config import ConfigError
from neurobrix.errors import UsageError

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Every test: its own store and HF cache, and the network off unless a test says otherwise."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    """Built once per module (transformers' save_pretrained when installed); tests copy before changing."""
    root = tmp_path_factory.mktemp("checkpoints")
    return {
        "tiny": make_checkpoint(root / "tiny"),
        "sharded": make_checkpoint(root / "sharded", "qwen2", shards=3),
        "plain": make_checkpoint(root / "plain", use_transformers=False),
    }


def copy_of(checkpoints, key: str, tmp_path: Path, name: str | None = None) -> Path:
    dest = tmp_path / "src" / (name or key)
    shutil.copytree(checkpoints[key], dest)
    return dest


def store_is_empty() -> bool:
    root = store.models_dir()
    return not root.exists() or not any(root.iterdir())


def hub_cache(tmp_path: Path) -> Path:
    return tmp_path / "hf" / "hub"


# --- local folders -------------------------------------------------------------------------------


def test_home_defaults_to_the_cache_and_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("NEUROBRIX_HOME")
    assert store.home() == Path("~/.cache/neurobrix").expanduser()
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "elsewhere"))
    assert store.models_dir() == tmp_path / "elsewhere" / "models"


def test_import_a_local_folder(checkpoints, tmp_path):
    src = copy_of(checkpoints, "tiny", tmp_path)
    (src / "modeling_evil.py").write_text("raise SystemExit('remote code ran')\n")
    (src / "pytorch_model.bin").write_bytes(b"not copied")
    model = store.import_model(str(src), progress=False)

    assert model.name == "tiny" and model.path == store.models_dir() / "tiny"
    assert model.source == str(src.resolve()) and not model.from_hub and model.revision is None
    expected = {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json", "model.safetensors"}
    if HAVE_TRANSFORMERS:
        expected.add("chat_template.jinja")  # transformers 5 writes the chat template beside tokenizer_config
    assert set(model.files) == expected
    assert sorted(p.name for p in model.path.iterdir()) == sorted(expected | {store.MANIFEST})
    for name in expected:
        assert (model.path / name).read_bytes() == (src / name).read_bytes()
        assert (model.path / name).stat().st_ino != (src / name).stat().st_ino  # a copy, not a link
    assert model.size == sum((src / n).stat().st_size for n in expected)
    assert model.weight_files() == [model.path / "model.safetensors"]
    assert model.config().architecture == "llama"

    manifest = json.loads((model.path / store.MANIFEST).read_text())
    assert manifest["source"] == str(src.resolve()) and manifest["revision"] is None
    assert manifest["files"] == {n: (src / n).stat().st_size for n in expected}
    assert manifest["imported"].startswith("20")
    assert [p.name for p in store.models_dir().iterdir()] == ["tiny"]  # no temporary folder left


def test_sharded_checkpoint_takes_exactly_the_indexed_shards(checkpoints, tmp_path):
    src = copy_of(checkpoints, "sharded", tmp_path)
    shards = sorted(p.name for p in src.glob("model-*.safetensors"))
    assert len(shards) >= 2
    shutil.copyfile(src / shards[0], src / "consolidated.safetensors")  # not in the index: left behind
    model = store.import_model(str(src), progress=False)
    assert [p.name for p in model.weight_files()] == shards
    assert "model.safetensors.index.json" in model.files and "consolidated.safetensors" not in model.files
    assert model.config().architecture == "qwen2"


def test_a_missing_shard_is_refused_by_name(checkpoints, tmp_path):
    src = copy_of(checkpoints, "sharded", tmp_path)
    gone = sorted(src.glob("model-*.safetensors"))[-1]
    gone.unlink()
    with pytest.raises(store.MissingShardsError, match=gone.name) as info:
        store.import_model(str(src), progress=False)
    assert "copy or download every shard" in str(info.value)
    assert store_is_empty()


def test_pickle_only_weights_are_refused_by_name(tmp_path):
    src = make_pickle_only(tmp_path / "pickled")
    with pytest.raises(store.PickleWeightsError, match="pytorch_model.bin") as info:
        store.import_model(str(src), progress=False)
    assert "safetensors only" in str(info.value) and info.value.exit_code == 2
    assert store_is_empty()


def test_an_architecture_outside_the_family_is_refused_before_weights(tmp_path, monkeypatch):
    src = make_checkpoint(tmp_path / "gpt", config=config_dict("gpt2", architectures=["GPT2LMHeadModel"]))

    def no_weights(folder):
        raise AssertionError("weights were looked at before config.json was checked")

    monkeypatch.setattr(checkpoint, "weight_files", no_weights)
    with pytest.raises(ConfigError, match="GPT2LMHeadModel is outside the Llama family"):
        store.import_model(str(src), progress=False)
    assert store_is_empty()


@pytest.mark.parametrize(
    ("damage", "error", "message"),
    [
        (lambda d: (d / "config.json").write_text("{not json"), store.CheckpointError, "not valid JSON"),
        (lambda d: (d / "config.json").write_text("[1, 2]"), store.CheckpointError, "expected a JSON object"),
        (lambda d: (d / "config.json").unlink(), store.CheckpointError, "has no config.json"),
        (
            lambda d: (d / "config.json").write_text(json.dumps({**config_dict(), "hidden_size": None})),
            ConfigError,
            "field 'hidden_size' is missing",
        ),
        (lambda d: (d / "tokenizer.json").unlink(), store.CheckpointError, "no tokenizer.json"),
        (
            lambda d: (d / "tokenizer.json").write_text('{"model": 3}'),
            store.CheckpointError,
            "not a valid tokenizer.json",
        ),
        (lambda d: (d / "generation_config.json").write_text("{"), store.CheckpointError, "not valid JSON"),
        (
            lambda d: os.truncate(d / "model.safetensors", (d / "model.safetensors").stat().st_size - 10),
            store.CheckpointError,
            "truncated",
        ),
        (  # bytes beyond what the header describes: altered, not a safetensors file as written
            lambda d: os.truncate(d / "model.safetensors", (d / "model.safetensors").stat().st_size + 16),
            store.CheckpointError,
            r"describes \d+ bytes but the file has \d+ \(truncated or altered\)",
        ),
        (lambda d: (d / "model.safetensors").write_bytes(b"\x00" * 4), store.CheckpointError, "not a safetensors"),
        (lambda d: (d / "model.safetensors").unlink(), store.CheckpointError, "has no weights"),
    ],
    ids=[
        "config-not-json",
        "config-not-object",
        "config-missing",
        "config-field",
        "tokenizer-missing",
        "tokenizer-malformed",
        "generation-config-malformed",
        "weights-truncated",
        "weights-extra-bytes",
        "weights-not-safetensors",
        "no-weights",
    ],
)
def test_bad_checkpoints_are_refused_with_what_to_do(checkpoints, tmp_path, damage, error, message):
    src = copy_of(checkpoints, "plain", tmp_path)
    damage(src)
    with pytest.raises(error, match=message):
        store.import_model(str(src), progress=False)
    assert isinstance(error("x"), UsageError)
    assert store_is_empty()


def test_a_slow_tokenizer_alone_is_named(checkpoints, tmp_path):
    src = copy_of(checkpoints, "plain", tmp_path)
    (src / "tokenizer.json").rename(src / "tokenizer.model")
    with pytest.raises(store.CheckpointError, match="it has only tokenizer.model"):
        store.import_model(str(src), progress=False)


@pytest.mark.parametrize("failure", [OSError("No space left on device"), KeyboardInterrupt()])
def test_a_failure_mid_copy_leaves_nothing(checkpoints, tmp_path, monkeypatch, failure):
    src = copy_of(checkpoints, "sharded", tmp_path, name="org")  # a fresh name, no org folder before
    real_place, placed = store._place, []

    def failing_place(src_file, dst, link, bar):
        if placed:
            raise failure
        placed.append(dst)
        real_place(src_file, dst, link, bar)

    monkeypatch.setattr(store, "_place", failing_place)
    expected = store.StoreError if isinstance(failure, OSError) else KeyboardInterrupt
    with pytest.raises(expected) as info:
        store.import_model(str(src), progress=False)
    if expected is store.StoreError:
        assert "nothing was stored" in str(info.value) and "No space left" in str(info.value)
    assert placed and not placed[0].exists()
    assert list(store.models_dir().iterdir()) == []  # no model, no temporary folder
    assert store.list_models() == []


def test_reimport_replaces_the_model_only_once_the_new_copy_is_complete(checkpoints, tmp_path, monkeypatch):
    src = copy_of(checkpoints, "plain", tmp_path)
    first = store.import_model(str(src), progress=False)
    old_generation = (first.path / "generation_config.json").read_text()
    (src / "generation_config.json").write_text(json.dumps({"eos_token_id": 7}))

    def broken(*args):
        raise OSError("disk pulled out")

    real_place = store._place
    monkeypatch.setattr(store, "_place", broken)
    with pytest.raises(store.StoreError):
        store.import_model(str(src), progress=False)
    kept = store.resolve("plain")
    assert (kept.path / "generation_config.json").read_text() == old_generation

    monkeypatch.setattr(store, "_place", real_place)
    new = store.import_model(str(src), progress=False)
    assert json.loads((new.path / "generation_config.json").read_text()) == {"eos_token_id": 7}
    assert [p.name for p in store.models_dir().iterdir()] == ["plain"]


def test_temporary_folders_of_dead_imports_are_swept(checkpoints, tmp_path):
    host = store._host()
    stale = store.models_dir() / f".tmp-{host}-999999999-deadbeef"  # beyond any pid_max: that process is gone
    (stale / "half").mkdir(parents=True)
    mine = store.models_dir() / f".tmp-{host}-{os.getpid()}-inflight"  # a live process's: left alone
    mine.mkdir()
    # another host sharing this home: its pids say nothing here, so its import in flight is left alone
    elsewhere = store.models_dir() / ".tmp-otherhost-999999999-inflight"
    elsewhere.mkdir()
    store.import_model(str(copy_of(checkpoints, "plain", tmp_path)), progress=False)
    assert not stale.exists() and mine.exists() and elsewhere.exists()


def test_local_import_refusals(checkpoints, tmp_path):
    src = copy_of(checkpoints, "plain", tmp_path)
    with pytest.raises(UsageError, match="--revision applies to Hugging Face ids only"):
        store.import_model(str(src), revision="main", progress=False)
    with pytest.raises(UsageError, match="is a file"):
        store.import_model(str(src / "config.json"), progress=False)
    with pytest.raises(store.ModelNotFoundError, match="no such folder"):
        store.import_model(str(tmp_path / "no" / "such" / "dir"), progress=False)
    # written as paths, though without the '/' or './' they would read as a hub id: never looked up there
    for path in ("/nosuch-org/nosuch-model", "./nosuch-org/nosuch-model", "~/nosuch-org"):
        with pytest.raises(store.ModelNotFoundError, match="no such folder"):
            store.import_model(path, progress=False)
    with pytest.raises(store.ModelNotFoundError, match="neither a local folder"):
        store.import_model("not an id", progress=False)


# --- resolve, list, remove -----------------------------------------------------------------------


def test_list_resolve_and_remove(checkpoints, tmp_path):
    local = store.import_model(str(copy_of(checkpoints, "plain", tmp_path)), progress=False)
    populate_hub_cache(hub_cache(tmp_path), "Org/Tiny-Chat", checkpoints["tiny"], commit=COMMIT)
    hub = store.import_model("Org/Tiny-Chat", progress=False)
    assert [m.name for m in store.list_models()] == ["Org/Tiny-Chat", "plain"]

    assert store.resolve("plain") == local
    assert store.resolve("Org/Tiny-Chat") == hub
    assert store.resolve("https://huggingface.co/Org/Tiny-Chat/") == hub
    assert store.resolve("org/tiny-chat") == hub  # hub ids are case-insensitive
    assert store.resolve(str(tmp_path / "src" / "plain")) == local  # the folder it came from

    assert store.remove("Org/Tiny-Chat") == hub
    assert not (store.models_dir() / "Org").exists()  # the org folder goes with its last model
    assert [m.name for m in store.list_models()] == ["plain"]
    with pytest.raises(store.ModelNotFoundError, match="neurobrix list"):
        store.remove("Org/Tiny-Chat")
    store.remove("plain")
    assert store.list_models() == [] and list(store.models_dir().iterdir()) == []


def test_an_empty_model_or_source_is_a_usage_error_not_the_current_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for argv, said in (
        (["import", ""], "SOURCE is empty: give a Hugging Face id (org/name) or a local checkpoint folder"),
        (["run", "--model", " ", "--prompt", "hi"], "--model is empty: give a stored model's name"),
        (["warmup", "--model", ""], "--model is empty"),
    ):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2 and capsys.readouterr().err.startswith(f"neurobrix: error: {said}")


def test_resolve_unknown_says_how_to_import(tmp_path):
    with pytest.raises(store.ModelNotFoundError, match=r"`neurobrix import meta-llama/Llama-3.2-1B`") as info:
        store.resolve("meta-llama/Llama-3.2-1B")
    assert info.value.exit_code == 2
    folder = tmp_path / "never-imported"
    folder.mkdir()
    with pytest.raises(store.ModelNotFoundError, match="has not been imported"):
        store.resolve(str(folder))
    with pytest.raises(store.ModelNotFoundError):
        store.resolve("../../etc")


def test_a_damaged_stored_model_is_named(checkpoints, tmp_path):
    model = store.import_model(str(copy_of(checkpoints, "plain", tmp_path)), progress=False)
    (model.path / "model.safetensors").unlink()
    with pytest.raises(store.StoreError, match="damaged: model.safetensors is missing") as info:
        store.resolve("plain")
    assert "neurobrix remove plain" in str(info.value)
    assert info.value.exit_code == 7  # "stored model damaged", its own exit code
    (listed,) = store.list_models()  # listed, and marked damaged with the reason resolve gives
    assert listed.name == "plain" and listed.source == model.source and "model.safetensors is missing" in listed.damaged
    (model.path / store.MANIFEST).write_text("{")
    (listed,) = store.list_models()
    assert listed.name == "plain" and "unreadable" in listed.damaged and listed.source == "unknown"
    with pytest.raises(store.DamagedModelError, match="unreadable"):
        store.resolve("plain")
    store.remove("plain")  # a damaged model can still be removed
    assert store_is_empty() or list(store.models_dir().iterdir()) == []


def test_list_marks_a_damaged_model_that_run_reports(checkpoints, tmp_path, capsys):
    good = store.import_model(str(copy_of(checkpoints, "plain", tmp_path)), progress=False)
    bad = store.import_model(str(copy_of(checkpoints, "plain", tmp_path, name="torn")), progress=False)
    os.truncate(bad.path / "model.safetensors", 10)
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    (torn_line,) = [line for line in out.splitlines() if line.startswith("torn")]
    assert (
        "DAMAGED" in torn_line and "DAMAGED" not in [line for line in out.splitlines() if line.startswith("plain")][0]
    )
    assert "model.safetensors has 10 bytes" in out and "neurobrix remove torn" in out
    assert main(["list", "--json"]) == 0
    listed = {m["name"]: m for m in json.loads(capsys.readouterr().out)["models"]}
    assert listed["plain"]["damaged"] is None and "model.safetensors has 10 bytes" in listed["torn"]["damaged"]
    with pytest.raises(SystemExit) as info:
        main(["run", "--model", "torn", "--prompt", "hello", "--backend", "torch"])
    assert info.value.code == 7
    err = capsys.readouterr().err
    assert "stored model torn" in err and "is damaged: model.safetensors has 10 bytes" in err
    assert good.path.is_dir()


def test_weights_altered_in_the_store_at_their_size_are_a_damaged_model(checkpoints, tmp_path, capsys):
    model = store.import_model(str(copy_of(checkpoints, "plain", tmp_path)), progress=False)
    weights = model.path / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(b"x" * 8 + data[8:])  # the header's length overwritten, the size kept
    manifest = json.loads((model.path / store.MANIFEST).read_text())
    for recorded in (True, False):  # the manifest's header hash, and without it (a manifest from before it) the load
        if not recorded:
            (model.path / store.MANIFEST).write_text(json.dumps({k: v for k, v in manifest.items() if k != "headers"}))
        with pytest.raises(SystemExit) as info:
            main(["run", "--model", "plain", "--prompt", "hello", "--backend", "torch"])
        assert info.value.code == 7
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert err.strip().splitlines()[-1].startswith("neurobrix: error: stored model plain")
        said = (
            "model.safetensors's safetensors header was changed after the import"
            if recorded
            else "model.safetensors cannot be read as safetensors"
        )
        assert "stored model plain" in err and said in err
        assert "neurobrix remove plain" in err


@pytest.mark.parametrize(
    ("file", "said"),
    [
        ("config.json", "cannot read config.json"),
        ("tokenizer.json", "not a valid tokenizer.json"),
        ("tokenizer_config.json", "cannot be read as JSON"),
    ],
)
def test_text_files_altered_in_the_store_at_their_size_are_a_damaged_model(checkpoints, tmp_path, capsys, file, said):
    """The import read config.json and the tokenizer's files whole; one that no longer parses, at its own size
    (which resolve's size check cannot see), is a damaged stored model (exit 7, with how to import it again), not a
    usage error (exit 2) blaming the user."""
    model = store.import_model(str(copy_of(checkpoints, "plain", tmp_path)), progress=False)
    path = model.path / file
    assert path.is_file(), f"the fixture's checkpoint has no {file}"
    data = path.read_bytes()
    path.write_bytes(b"\xff" + data[1:])  # the first byte replaced: no longer UTF-8 JSON, same size
    # the manifest's sha256 finds it first (round 18); without one (an older import) the file's parse does
    manifest = model.path / store.MANIFEST
    for expected in (f"{file} was changed after the import", said):
        with pytest.raises(SystemExit) as info:
            main(["run", "--model", "plain", "--prompt", "hello", "--backend", "torch"])
        err = capsys.readouterr().err
        assert info.value.code == 7, err
        assert "Traceback" not in err
        assert err.strip().splitlines()[-1].startswith("neurobrix: error: stored model plain")
        assert expected in err and "is damaged" in err and "neurobrix remove plain" in err
        recorded = json.loads(manifest.read_text(encoding="utf-8"))
        recorded.pop("sha256", None)
        manifest.write_text(json.dumps(recorded), encoding="utf-8")


def _stale_scratch() -> Path:
    stale = store.models_dir() / f".tmp-{store._host()}-999999999-deadbeef"  # beyond any pid_max: gone
    (stale / "half").mkdir(parents=True)
    return stale


def test_list_and_remove_sweep_stale_temporary_folders(checkpoints, tmp_path, capsys):
    store.import_model(str(copy_of(checkpoints, "plain", tmp_path)), progress=False)
    stale = _stale_scratch()
    assert main(["list"]) == 0 and not stale.exists()
    stale = _stale_scratch()
    assert main(["remove", "plain"]) == 0 and not stale.exists()
    assert store_is_empty() or list(store.models_dir().iterdir()) == []


@pytest.mark.parametrize("value", ["file", "under-a-file"])
def test_a_home_that_is_a_file_is_one_clear_error(checkpoints, tmp_path, monkeypatch, value):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    home = blocker if value == "file" else blocker / "neurobrix"
    env = {**os.environ, "PYTHONPATH": str(REPO), "NEUROBRIX_HOME": str(home)}
    for args in (
        ["list"],
        ["import", str(checkpoints["plain"])],
        ["remove", "x"],
        ["run", "--model", "x", "--prompt", "hi"],
    ):
        result = subprocess.run([sys.executable, "-m", "neurobrix", *args], capture_output=True, text=True, env=env)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.startswith(f"neurobrix: error: NEUROBRIX_HOME={home} ")
        assert "not a folder" in result.stderr and "Traceback" not in result.stderr
    monkeypatch.setenv("NEUROBRIX_HOME", str(home))
    with pytest.raises(UsageError, match="is a file" if value == "file" else "which is a file"):
        store.home()


def test_a_store_folder_that_cannot_be_made_is_one_clear_error(checkpoints, capsys):
    (store.home() / "models").parent.mkdir(parents=True)
    (store.home() / "models").write_text("x")  # the home is a folder, its store cannot be created
    with pytest.raises(SystemExit) as info:
        main(["import", str(checkpoints["plain"])])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith(f"neurobrix: error: cannot create the model store {store.models_dir()}: ")
    assert "NEUROBRIX_HOME" in err and len(err.strip().splitlines()) == 1


def test_a_store_that_is_a_file_is_named_by_list_and_blocks_doctor(capsys):
    """`list` said "no models imported yet" and doctor "ready" with the store's models/ a file, where nothing can be
    imported or run; and doctor said "ready" with NEUROBRIX_HOME a file, which every store command refuses."""
    (store.home() / "models").parent.mkdir(parents=True)
    (store.home() / "models").write_text("x")
    with pytest.raises(SystemExit) as info:
        main(["list"])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith(f"neurobrix: error: the model store {store.models_dir()} is a file, not a folder")
    assert len(err.strip().splitlines()) == 1
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  store" in out and "is a file" in out and "verdict: blocked by store" in out
    (store.home() / "models").unlink()
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "verdict: ready" in out and str(store.models_dir()) in out
    home = store.home()
    home.rmdir()
    home.write_text("x")  # NEUROBRIX_HOME itself a file
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  store" in out and "NEUROBRIX_HOME=" in out and "verdict: blocked by store" in out


# An import that copies slowly (each file waits), run as the CLI in its own process; the parent sends
# it a signal once the temporary folder exists.
_SLOW_IMPORT = """
import signal, sys, time
# a terminal delivers Ctrl-C; a test runner started as a background job passes SIGINT on ignored
signal.signal(signal.SIGINT, signal.default_int_handler)
from neurobrix import store
real = store._place
def slow(src, dst, link, bar):
    real(src, dst, link, bar)
    print("copying", flush=True)
    time.sleep(60)
store._place = slow
from neurobrix.cli import main
sys.exit(main(["import", sys.argv[1]]))
"""


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_an_import_ended_by_a_signal_leaves_nothing(checkpoints, tmp_path, signame):
    import signal

    src = copy_of(checkpoints, "plain", tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO), "NEUROBRIX_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_IMPORT, str(src)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout.readline() == "copying\n", proc.stderr.read()
        assert any(p.name.startswith(".tmp-") for p in store.models_dir().iterdir())
        proc.send_signal(getattr(signal, signame))
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    err = proc.stderr.read()
    signum = getattr(signal, signame)
    assert code == 128 + signum, err
    said = "interrupted" if signame == "SIGINT" else f"terminated ({signame})"
    assert err.strip().endswith(f"neurobrix: error: {said}") and "Traceback" not in err
    assert list(store.models_dir().iterdir()) == []  # no hidden half-written folder


def test_a_local_name_and_a_hub_org_cannot_share_a_folder(checkpoints, tmp_path):
    populate_hub_cache(hub_cache(tmp_path), "org/tiny", checkpoints["plain"], commit=COMMIT)
    store.import_model("org/tiny", progress=False)
    with pytest.raises(store.StoreError, match="is not a NeuroBrix model"):
        store.import_model(str(copy_of(checkpoints, "plain", tmp_path, name="org")), progress=False)
    store.remove("org/tiny")
    store.import_model(str(tmp_path / "src" / "org"), progress=False)
    with pytest.raises(store.StoreError, match="a local model named 'org'"):
        store.import_model("org/tiny", progress=False)


# --- the hub -------------------------------------------------------------------------------------


def test_import_by_hub_id_from_the_cache_with_the_network_off(checkpoints, tmp_path):
    extra = {"pytorch_model.bin": b"pickle", "modeling_tiny.py": b"import os\n"}
    snapshot = populate_hub_cache(hub_cache(tmp_path), "org/tiny", checkpoints["sharded"], commit=COMMIT, extra=extra)
    model = store.import_model("org/tiny", progress=False)
    assert model.name == "org/tiny" and model.path == store.models_dir() / "org" / "tiny"
    assert model.source == "org/tiny" and model.from_hub and model.commit == COMMIT and model.revision is None
    assert not set(extra) & set(model.files)
    for name in model.files:
        assert (model.path / name).read_bytes() == (snapshot / name).read_bytes()
    assert len(model.weight_files()) >= 2
    manifest = json.loads((model.path / store.MANIFEST).read_text())
    assert manifest["commit"] == COMMIT and manifest["source"] == "org/tiny"
    # a commit hash as the revision finds the same snapshot
    again = store.import_model("org/tiny", revision=COMMIT, progress=False)
    assert again.commit == COMMIT and again.revision == COMMIT


def test_offline_and_not_in_the_cache_says_so(tmp_path):
    with pytest.raises(store.HubError) as info:
        store.import_model("org/absent", progress=False)
    message = str(info.value)
    assert "not in the Hugging Face cache" in message and "HF_HUB_OFFLINE" in message
    assert "neurobrix import org/absent" in message and info.value.exit_code == 1
    assert store_is_empty()
    with pytest.raises(store.HubError) as info:  # the command to run again is the one given, flags and all
        store.import_model("org/absent", revision="v1", accept_license=True, progress=False)
    assert "run `neurobrix import org/absent --revision v1 --accept-license` again" in str(info.value)


def test_hub_cache_follows_the_environment_now(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "direct"))
    assert store.hub_cache() == tmp_path / "direct"
    monkeypatch.delenv("HF_HUB_CACHE")
    assert store.hub_cache() == tmp_path / "hf" / "hub"
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert not store.hub_offline()


class FakeHub:
    """Online mode without a network: model_info is canned, downloads are served from the local HF cache."""

    def __init__(self, monkeypatch, names, gated=False, info_error=None):
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")
        self.downloads: list[list[str]] = []
        self.info = SimpleNamespace(gated=gated, sha=COMMIT, siblings=[SimpleNamespace(rfilename=n) for n in names])
        self.info_error = info_error
        real = hub._snapshot_download

        def model_info(repo_id, revision):
            if self.info_error is not None:
                raise self.info_error
            return self.info

        def snapshot_download(repo_id, *, revision, allow_patterns, local_files_only):
            self.downloads.append(list(allow_patterns))
            return real(repo_id, revision=revision, allow_patterns=allow_patterns, local_files_only=True)

        monkeypatch.setattr(hub, "_model_info", model_info)
        monkeypatch.setattr(hub, "_snapshot_download", snapshot_download)


def _hub_error(cls, message):
    error = cls.__new__(cls)  # the hub's errors want an HTTP response; the message is all that matters here
    Exception.__init__(error, message)
    return error


def test_gated_without_accept_license_is_refused_before_download(monkeypatch, checkpoints, tmp_path):
    hub = FakeHub(monkeypatch, ["config.json", "model.safetensors", "tokenizer.json"], gated="manual")
    with pytest.raises(store.GatedModelError) as info:
        store.import_model("meta-llama/Llama-3.2-1B", progress=False)
    message = str(info.value)
    for needed in (
        "gated",
        "https://huggingface.co/meta-llama/Llama-3.2-1B",
        "accept the licence",
        "hf auth login",
        "HF_TOKEN",
        "neurobrix import meta-llama/Llama-3.2-1B --accept-license",
    ):
        assert needed in message
    assert hub.downloads == [] and store_is_empty()


def test_gated_with_accept_license_fetches_config_first_then_only_needed_files(monkeypatch, checkpoints, tmp_path):
    names = [p.name for p in checkpoints["sharded"].iterdir()] + ["pytorch_model.bin", "original/consolidated.pth"]
    populate_hub_cache(hub_cache(tmp_path), "org/gated", checkpoints["sharded"], commit=COMMIT)
    hub = FakeHub(monkeypatch, names, gated="auto")
    model = store.import_model("org/gated", accept_license=True, progress=False)
    assert hub.downloads[0] == ["config.json", "model.safetensors.index.json"]
    assert not any(n.endswith((".bin", ".pth")) for n in hub.downloads[1])
    assert set(hub.downloads[1]) == set(model.files)
    assert model.commit == COMMIT


def test_gated_refused_by_the_hub_despite_the_flag(monkeypatch, checkpoints):
    from huggingface_hub.errors import GatedRepoError

    FakeHub(monkeypatch, [], info_error=_hub_error(GatedRepoError, "403 Forbidden"))
    with pytest.raises(store.GatedModelError, match="token is missing or its account has not been granted"):
        store.import_model("org/gated", accept_license=True, progress=False)


def test_hub_pickle_only_is_refused_before_any_download(monkeypatch):
    hub = FakeHub(monkeypatch, ["config.json", "tokenizer.json", "pytorch_model.bin", "training_args.bin"])
    with pytest.raises(store.PickleWeightsError, match="pytorch_model.bin, training_args.bin"):
        store.import_model("org/old", progress=False)
    assert hub.downloads == []


def test_hub_architecture_outside_the_family_stops_after_config(monkeypatch, checkpoints, tmp_path):
    src = make_checkpoint(tmp_path / "gpt", config=config_dict("gpt2", architectures=["GPT2LMHeadModel"]))
    populate_hub_cache(hub_cache(tmp_path), "org/gpt", src, commit=COMMIT)
    hub = FakeHub(monkeypatch, [p.name for p in src.iterdir()])
    with pytest.raises(ConfigError, match="GPT2LMHeadModel"):
        store.import_model("org/gpt", progress=False)
    assert hub.downloads == [["config.json"]] and store_is_empty()


def test_hub_shards_missing_from_the_repository_are_refused_before_weights(monkeypatch, checkpoints, tmp_path):
    populate_hub_cache(hub_cache(tmp_path), "org/torn", checkpoints["sharded"], commit=COMMIT)
    names = [p.name for p in checkpoints["sharded"].iterdir()]
    lost = sorted(n for n in names if n.startswith("model-"))[0]
    hub = FakeHub(monkeypatch, [n for n in names if n != lost])
    with pytest.raises(store.MissingShardsError, match=lost):
        store.import_model("org/torn", progress=False)
    assert len(hub.downloads) == 1


def test_unknown_hub_id_and_revision(monkeypatch):
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    hub = FakeHub(monkeypatch, [], info_error=_hub_error(RepositoryNotFoundError, "404"))
    with pytest.raises(store.ModelNotFoundError, match="no model org/nothing on the Hugging Face hub"):
        store.import_model("org/nothing", progress=False)
    hub.info_error = _hub_error(RevisionNotFoundError, "404")
    with pytest.raises(store.ModelNotFoundError, match="has no revision 'v9'"):
        store.import_model("org/nothing", revision="v9", progress=False)


def _transport_errors():
    errors = [ConnectionError("Connection refused")]
    for module in ("httpx", "httpx2"):
        try:
            errors.append(__import__(module).ConnectError("Connection refused"))
        except (ImportError, AttributeError):
            pass
    return errors


@pytest.mark.parametrize("error", _transport_errors(), ids=lambda e: type(e).__module__)
def test_hub_unreachable_falls_back_to_the_cache(monkeypatch, checkpoints, tmp_path, error):
    hub = FakeHub(monkeypatch, [], info_error=error)
    with pytest.raises(store.HubError, match="not in the Hugging Face cache .* the hub cannot be reached"):
        store.import_model("org/tiny", progress=False)
    populate_hub_cache(hub_cache(tmp_path), "org/tiny", checkpoints["plain"], commit=COMMIT)
    assert store.import_model("org/tiny", progress=False).commit == COMMIT
    assert hub.downloads == [list(store.HUB_PATTERNS)] * 2


# --- the command line ----------------------------------------------------------------------------


def test_cli_import_list_remove(checkpoints, tmp_path, capsys):
    src = copy_of(checkpoints, "plain", tmp_path)
    assert main(["import", str(src)]) == 0
    out = capsys.readouterr().out
    assert "imported plain" in out and "neurobrix run --model plain" in out
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "plain" in out and str(src.resolve()) in out
    assert main(["list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [m["name"] for m in listed["models"]] == ["plain"] and listed["models"][0]["from_hub"] is False
    assert main(["remove", "plain"]) == 0
    assert "removed plain" in capsys.readouterr().out
    assert main(["list"]) == 0
    assert "no models imported yet" in capsys.readouterr().out


def test_the_commands_import_prints_survive_a_space_in_the_models_name(checkpoints, tmp_path, capsys):
    """A local folder's name is the stored name; the commands import prints (and a damaged model's) are
    meant to be copied into a shell, so a name with a space in it is quoted there."""
    src = copy_of(checkpoints, "plain", tmp_path, name="my model")
    assert main(["import", str(src)]) == 0
    assert "neurobrix run --model 'my model' --prompt" in capsys.readouterr().out
    (store.models_dir() / "my model" / "config.json").write_text("{}  ")
    with pytest.raises(store.DamagedModelError) as info:
        store.resolve("my model")
    assert f"`neurobrix import '{src.resolve()}'`" in str(info.value)
    assert "`neurobrix remove 'my model'`" in str(info.value)


def test_ctrl_c_once_the_model_is_stored_says_it_stays(checkpoints, tmp_path, monkeypatch, capsys):
    """The import is whole before import looks for this machine's GPU class (seconds: torch is imported);
    Ctrl-C there ends with 130 as any Ctrl-C, but says the model is in the store, not that nothing is."""
    from neurobrix import cli_store

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_store, "_certified_gpu_class", interrupted)
    with pytest.raises(SystemExit) as info:
        main(["import", str(copy_of(checkpoints, "plain", tmp_path))])
    assert info.value.code == 130
    err = capsys.readouterr().err
    assert "plain was imported whole before the interruption and stays in the store" in err
    assert err.strip().endswith("neurobrix: error: interrupted")
    assert [m.name for m in store.list_models()] == ["plain"]


def test_a_manifest_without_a_field_names_the_field(checkpoints, tmp_path):
    model = store.import_model(str(copy_of(checkpoints, "plain", tmp_path)), progress=False)
    (model.path / store.MANIFEST).write_text(json.dumps({"format": 1}))
    with pytest.raises(store.DamagedModelError) as info:
        store.resolve("plain")
    assert "is unreadable (no 'files' field)" in str(info.value)


def test_cli_user_mistakes_exit_2_with_one_message(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["remove", "org/nothing"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("neurobrix: error: no model 'org/nothing'") and "Traceback" not in err


def test_cli_help_explains_the_options(capsys):
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    out = capsys.readouterr().out
    assert "--accept-license" in out and "--revision" in out and "Pickle weights are never downloaded" in out


def test_cli_subprocess_refuses_pickle_without_traceback(tmp_path):
    src = make_pickle_only(tmp_path / "pickled")
    env = {**os.environ, "PYTHONPATH": str(REPO), "NEUROBRIX_HOME": str(tmp_path / "home")}
    result = subprocess.run(
        [sys.executable, "-m", "neurobrix", "import", str(src)], capture_output=True, text=True, env=env
    )
    assert result.returncode == 2, result.stderr
    assert "pytorch_model.bin" in result.stderr and "safetensors only" in result.stderr
    assert "Traceback" not in result.stderr
