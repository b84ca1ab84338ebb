"""The forty-fourth round of text parity: the weight files themselves, as transformers' from_pretrained finds them.

Drawn (outside the repository; docs/text-rounds.md has the counts): tiny random Llama, Mistral and Qwen2 checkpoints
(round 39's builder) whose safetensors were rewritten before the run: one file, two shards with their index, an index
whose weight_map names the wrong shard, a stale index beside model.safetensors, a shard the index leaves out, shards
without their index, one file under another name (weights.safetensors, model-00001-of-00001.safetensors); keys
without "model." (a base model's, all or some), "model." twice, "model.lm_head.weight", a rotary table, tensors of no
model (lm_head.bias, norm.bias, cos_cached), one tensor under both names; tied heads stored as the embedding, the
head, both or both with other values; every tensor in fp32, bf16 or fp16, in fp64, or each in its own dtype; `run
--backend torch` in fp32, bf16 and fp16 against transformers 5.25's greedy ``generate`` on the same folder.

Found and fixed: transformers loads model.safetensors, else the shards its index names, and nothing else: a folder
holding other *.safetensors files alone fails in from_pretrained ("Error no file named model.safetensors"), where the
engine read every top-level *.safetensors and `run` printed text. Such weights are now refused in one line at import,
from a folder or from the hub's listing before any download. And transformers renames each checkpoint key as it loads
(``rename_source_key``): a key naming a model tensor once "model." is put before it gains the prefix (a base model's
checkpoint: ``layers.0.mlp.up_proj.weight``), and one starting with "model" that names a model tensor without that
prefix loses it (``model.lm_head.weight``, ``model.model.norm.weight``), so it prints text where `import` refused the
tensors as missing; the engine now reads each key under transformers' name (``checkpoint.hf_name``), and refuses a
tensor reached under two keys as stored twice. Held, no difference: sharded layouts, wrong weight_maps and stale
indexes; every storage dtype, mixed per tensor, run in fp32, bf16 and fp16 (every step's ids equal); tied heads.

Each test compares with transformers here; the file fails with the glob of other *.safetensors files restored, with
keys read as stored, and with either branch of the renaming dropped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

import test_text_round39 as r39  # noqa: E402  (its weights, builder, reference and engine)
from safetensors.torch import load_file, save_file  # noqa: E402

from neurobrix.checkpoint import hf_name, model_names, read_config  # noqa: E402

SHAPE = {"hidden_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}


def checkpoint(folder: Path, family: str = "llama", *, tied: bool = False, seed: int = 11) -> tuple[str, list[int]]:
    """A tiny random checkpoint whose next tokens are no near tie (round 39's rule: the next seed otherwise)."""
    fields = {"rope_theta": 10000.0, "tie_word_embeddings": tied}
    if family == "llama":
        fields["attention_bias"] = True
    for attempt in range(seed, seed + 6):
        prompt, ids = r39.build(folder, family, SHAPE, fields, 12, seed=attempt, spread=4.0)
        if r39.reference(folder, ids, 6) is not None:
            return prompt, ids
    raise AssertionError("six seeds met a near tie")


def rewrite(folder: Path, key, layout: dict[str, list[str]] | None = None, index: bool = True) -> None:
    """The folder's model.safetensors rewritten: each key renamed by ``key`` (None: left out), into one file or into
    ``layout``'s files (file name -> the new keys it holds), with an index naming them unless ``index`` is false."""
    tensors = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    renamed = {new: t for k, t in tensors.items() if (new := key(k)) is not None}
    layout = layout or {"model.safetensors": sorted(renamed)}
    for name, keys in layout.items():
        save_file({k: renamed[k] for k in keys}, folder / name, metadata={"format": "pt"})
    if index and "model.safetensors" not in layout:
        weight_map = {k: name for name, keys in layout.items() for k in keys}
        (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def same_text(folder: Path, prompt: str, ids: list[int], dtype: str = "fp32") -> None:
    theirs = r39.reference(folder, ids, 6, dtype)
    assert theirs is not None, "a near tie"
    ours = r39.engine(folder, prompt, 6, dtype=dtype)
    assert not isinstance(ours, str), f"run refused what transformers runs: {ours}"
    assert (list(ours[0]), ours[1]) == (theirs[0], theirs[1])


def from_pretrained_fails(folder: Path) -> None:
    with pytest.raises(OSError, match="no file named model.safetensors"):
        transformers.AutoModelForCausalLM.from_pretrained(folder)


@pytest.mark.parametrize("layout", ["weights.safetensors", "model-00001-of-00001.safetensors", "two shards"])
def test_weights_transformers_does_not_load_are_refused(tmp_path, layout):
    """Before: `run` read every top-level *.safetensors of a folder without model.safetensors or an index and printed
    text, where from_pretrained fails."""
    folder = tmp_path / "m"
    prompt, _ = checkpoint(folder)
    keys = sorted(load_file(folder / "model.safetensors"))
    if layout == "two shards":
        files = {"model-00001-of-00002.safetensors": keys[:9], "model-00002-of-00002.safetensors": keys[9:]}
        rewrite(folder, lambda k: k, files, index=False)
    else:
        rewrite(folder, lambda k: k, {layout: keys}, index=False)
    from_pretrained_fails(folder)
    refused = r39.engine(folder, prompt, 6)
    assert isinstance(refused, str) and "are neither model.safetensors nor shards named by" in refused, refused
    assert (layout if layout != "two shards" else "model-00002-of-00002.safetensors") in refused


def test_a_hub_repository_of_such_weights_is_refused_before_any_download(monkeypatch):
    from types import SimpleNamespace

    from neurobrix import hub

    monkeypatch.setattr(hub, "_snapshot_download", lambda *a, **k: pytest.fail("downloaded"))
    names = ["config.json", "tokenizer.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    info = SimpleNamespace(siblings=[SimpleNamespace(rfilename=n) for n in names])
    with pytest.raises(hub.CheckpointError, match="neither model.safetensors nor shards named by"):
        hub._download("org/m", None, info)


# key renamings from_pretrained makes: (family, tied, the new key of each stored one, sharded)
RENAMED = {
    # a base model's checkpoint (LlamaModel.save_pretrained), tied: no key has "model."
    "a base model's keys, tied": ("llama", True, lambda k: k.removeprefix("model."), False),
    # untied: the head keeps its name beside the base model's keys
    "a base model's keys beside the head": ("qwen2", False, lambda k: k.removeprefix("model."), False),
    # the head under "model." (stripped), layer 1 under "model.model." (stripped), in two shards
    "the head and layer 1 prefixed once too often, sharded": (
        "mistral",
        False,
        lambda k: "model." + k if k == "lm_head.weight" or k.startswith("model.layers.1.") else k,
        True,
    ),
    # some keys with the prefix, some without (the norms and the embedding)
    "prefixes mixed": ("llama", False, lambda k: k.removeprefix("model.") if "norm" in k or "embed" in k else k, False),
}


@pytest.mark.parametrize("name", list(RENAMED))
def test_keys_transformers_renames_print_its_text(tmp_path, name):
    """Before: refused at import ("checkpoint has no tensor 'model.layers.0.input_layernorm.weight'"), where
    from_pretrained loads each key under the model's name and prints text."""
    family, tied, key, sharded = RENAMED[name]
    folder = tmp_path / "m"
    prompt, ids = checkpoint(folder, family, tied=tied)
    keys = sorted(key(k) for k in load_file(folder / "model.safetensors"))
    rewrite(folder, key, {"a.safetensors": keys[::2], "b.safetensors": keys[1::2]} if sharded else None)
    same_text(folder, prompt, ids)


def test_a_tied_head_of_its_own_under_model_prefix_is_the_head(tmp_path, monkeypatch):
    """A tied config's file holding a head of its own (other values) beside the embedding is believed over
    config.json by transformers (round 18's rule); stored as ``model.lm_head.weight`` beside a base model's
    ``embed_tokens.weight`` it is still the head, and `run`'s memory check before loading counts both."""
    from neurobrix import memory

    folder = tmp_path / "m"
    prompt, ids = checkpoint(folder, "llama", tied=True)
    tensors = {k.removeprefix("model."): t for k, t in load_file(folder / "model.safetensors").items()}
    for seed in range(5, 11):  # a head drawn anew where its next tokens meet a near tie
        head = torch.randn(tensors["embed_tokens.weight"].shape, generator=torch.Generator().manual_seed(seed))
        save_file({**tensors, "model.lm_head.weight": head}, folder / "model.safetensors", metadata={"format": "pt"})
        if r39.reference(folder, ids, 6) is not None:
            break
    counted: list[int] = []
    real = memory.require_fit_on

    def require_fit_on(device, cfg, itemsize, *args, names=(), **kwargs):
        counted.append(memory.weight_bytes(cfg, itemsize, names) - memory.weight_bytes(cfg, itemsize))
        return real(device, cfg, itemsize, *args, names=names, **kwargs)

    monkeypatch.setattr(memory, "require_fit_on", require_fit_on)
    same_text(folder, prompt, ids)
    assert counted == [head.numel() * 4], "the head's own bytes, beside the embedding's"


def test_a_base_model_checkpoint_in_bf16_gives_transformers_ids(tmp_path):
    folder = tmp_path / "m"
    prompt, ids = checkpoint(folder, "llama", tied=True)
    rewrite(folder, lambda k: k.removeprefix("model."))
    same_text(folder, prompt, ids, "bf16")


def test_a_tensor_under_both_names_is_refused_as_stored_twice(tmp_path):
    folder = tmp_path / "m"
    prompt, _ = checkpoint(folder)
    tensors = load_file(folder / "model.safetensors")
    tensors["norm.weight"] = tensors["model.norm.weight"] * 0.5
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    refused = r39.engine(folder, prompt, 6)
    assert isinstance(refused, str) and "tensor model.norm.weight is stored twice" in refused, refused
    assert "as norm.weight" in refused


def test_each_key_is_named_as_transformers_renames_it(tmp_path):
    """checkpoint.hf_name against transformers' own rename_source_key, with the model's weight mapping and state
    dict, over keys of each kind (the prefix's "." is any character to transformers' pattern)."""
    from transformers.conversion_mapping import get_model_conversion_mapping
    from transformers.core_model_loading import WeightConverter, WeightRenaming, rename_source_key

    folder = tmp_path / "m"
    for tied in (False, True):
        r39.build(folder, "llama", SHAPE, {"tie_word_embeddings": tied, "attention_bias": True}, 4)
        model = transformers.AutoModelForCausalLM.from_pretrained(folder)
        meta = model.state_dict()
        mapping = get_model_conversion_mapping(model)
        renamings = [m for m in mapping if isinstance(m, WeightRenaming)]
        converters = [m for m in mapping if isinstance(m, WeightConverter)]
        names = model_names(read_config(folder))
        keys = [*meta, *(k.removeprefix("model.") for k in meta), *("model." + k for k in meta)]
        keys += ["modelXlm_head.weight", "model", "model.", "models.norm.weight", "norm.bias", "lm_head.bias"]
        keys += ["model.layers.0.self_attn.rotary_emb.inv_freq", "layers.9.mlp.up_proj.weight", "model.model.model.x"]
        for key in keys:
            theirs, _ = rename_source_key(key, renamings, converters, model.base_model_prefix, meta)
            assert hf_name(key, names) == theirs, key
        assert names == set(meta), "the model's own tensor names"
