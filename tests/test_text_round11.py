"""The eleventh round of text parity: the model side. Which model transformers builds from config.json and which weights
it loads into it. AutoModelForCausalLM builds the class of config.json's ``model_type`` (a "granite" file naming
LlamaForCausalLM is Granite, with its multipliers, over Llama's tensor names), and AutoConfig reads a mistral file
holding ``layer_types`` as Ministral (a window only on the layers it marks sliding). from_pretrained loads
model.safetensors over a shard index beside it, and config.json's ``transformers_weights`` over both. Round 7's tiny
random checkpoints are run through `neurobrix run` (PyTorch's kernels) and transformers' greedy ``generate`` in
float64; ids and text must be equal, or the engine must refuse by name. Each test failed before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

from test_text_round7 import checkpoint, ours, theirs  # noqa: E402

GENERATION = {"eos_token_id": 9999, "max_new_tokens": 12}


def _import_refused(folder: Path, monkeypatch, capsys, named: str) -> None:
    """`neurobrix import` refuses the folder (exit 2, as every config.json refusal) naming ``named``; nothing stored."""
    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(folder.parent / "home"))
    with pytest.raises(SystemExit) as exit:
        main(["import", str(folder)])
    assert exit.value.code == 2
    assert named in capsys.readouterr().err
    assert not list((folder.parent / "home" / "models").glob("*"))


def test_a_model_type_outside_the_family_is_refused_whatever_architectures_names(tmp_path, monkeypatch, capsys):
    """Before: model_type "granite" with architectures ["LlamaForCausalLM"] ran as Llama, while transformers builds
    GraniteForCausalLM (attention scaled by attention_multiplier, 1.0 by default, not head_dim^-0.5): other text."""
    llama = checkpoint(tmp_path / "llama", generation=GENERATION)
    granite = checkpoint(tmp_path / "granite", fields={"model_type": "granite"}, generation=GENERATION)
    assert theirs(granite) != theirs(llama)
    _import_refused(granite, monkeypatch, capsys, "model_type 'granite' is outside the Llama family")


def _beside_an_index(folder: Path) -> Path:
    """``folder`` given a shard index and its two shards beside model.safetensors, the MLP weights 1.5 times larger
    in the shards."""
    from safetensors.torch import load_file, save_file

    weights = load_file(folder / "model.safetensors")
    names = sorted(weights)
    shards = {name: f"model-0000{1 + i % 2}-of-00002.safetensors" for i, name in enumerate(names)}
    for shard in set(shards.values()):
        tensors = {n: weights[n] * (1.5 if "mlp" in n else 1.0) for n in names if shards[n] == shard}
        save_file(tensors, folder / shard, metadata={"format": "pt"})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": shards}))
    return folder


def test_model_safetensors_is_loaded_over_a_shard_index_beside_it(tmp_path, monkeypatch):
    """Before: a folder with model.safetensors and a shard index (other values in the shards) ran the shards;
    transformers' from_pretrained loads model.safetensors and never reads the index."""
    folder = _beside_an_index(checkpoint(tmp_path / "m", generation=GENERATION))
    assert ours(folder, monkeypatch)[:2] == theirs(folder)


def test_a_hub_import_fetches_model_safetensors_and_not_the_index_beside_it(tmp_path, monkeypatch):
    """The same repository on the hub (served from a local cache): only model.safetensors is fetched and stored, as
    from_pretrained fetches it; before, the index and its shards were."""
    from store_fixtures import populate_hub_cache
    from test_store import FakeHub

    from neurobrix import store

    folder = _beside_an_index(checkpoint(tmp_path / "m", generation=GENERATION))
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    populate_hub_cache(tmp_path / "hf", "org/both", folder)
    hub = FakeHub(monkeypatch, [p.name for p in folder.iterdir()])
    model = store.import_model("org/both", progress=False)
    assert hub.downloads[0] == ["config.json"]
    weights = sorted(n for n in model.files if n.endswith((".safetensors", ".json")) and n.startswith("model"))
    assert weights == ["model.safetensors"]


def test_transformers_weights_in_config_json_is_refused_by_name(tmp_path, monkeypatch, capsys):
    """config.json's transformers_weights names the file from_pretrained loads in place of model.safetensors. Before:
    ignored, the engine ran model.safetensors' weights where transformers ran the named file's."""
    from safetensors.torch import load_file, save_file

    folder = checkpoint(tmp_path / "m", generation=GENERATION)
    plain = theirs(folder)
    weights = load_file(folder / "model.safetensors")
    save_file({n: t * 1.5 for n, t in weights.items()}, folder / "other.safetensors", metadata={"format": "pt"})
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "transformers_weights": "other.safetensors"}))
    assert theirs(folder) != plain
    _import_refused(folder, monkeypatch, capsys, "transformers_weights 'other.safetensors'")


def test_a_mistral_file_with_layer_types_has_no_window_where_no_layer_slides(tmp_path, monkeypatch):
    """A mistral config.json holding layer_types is Ministral to transformers: its sliding_window applies only to the
    layers marked sliding. Before: with every layer full_attention and a window of 20 under a 35-token prompt, the
    engine refused the run as reaching past the window, where transformers attends over the whole sequence."""
    fields = {"layer_types": ["full_attention", "full_attention"]}
    folder = checkpoint(tmp_path / "m", "MistralConfig", {"sliding_window": 20}, fields, GENERATION)
    ids, text, _ = ours(folder, monkeypatch)
    assert (ids, text) == theirs(folder)
    assert len(ids) == GENERATION["max_new_tokens"]


def test_a_mistral_file_with_sliding_layer_types_keeps_its_window(tmp_path, monkeypatch):
    """The same file with one layer sliding: the window holds, and a generation past it is still refused by name."""
    from neurobrix.errors import UsageError

    fields = {"layer_types": ["sliding_attention", "full_attention"]}
    folder = checkpoint(tmp_path / "m", "MistralConfig", {"sliding_window": 20}, fields, GENERATION)
    with pytest.raises(UsageError, match="sliding attention window of 20 tokens"):
        ours(folder, monkeypatch)
