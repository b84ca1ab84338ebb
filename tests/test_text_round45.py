"""The forty-fifth round of text parity: where an index's shards lie, the weight files beside them, and how a tensor
the engine cannot take is refused.

Drawn (outside the repository; docs/text-rounds.md has the counts): tiny random Llama, Mistral and Qwen2 checkpoints
(round 39's builder) whose safetensors were rewritten before the run: an index naming a shard by a path
(``sub/x.safetensors``, ``a/b/x.safetensors``, ``./x.safetensors``, ``sub//x.safetensors``, ``./x`` beside ``x``,
``sub/../x.safetensors``, ``../other/x.safetensors``, an absolute path, ``sub\\x.safetensors``) or a hidden name;
Mistral's ``consolidated.safetensors`` alone, beside model.safetensors or beside an index's shards, with and without
``params.json``; ``pytorch_model.bin`` alone, beside model.safetensors, or as an index's shards; a ``.gguf`` file alone
or beside model.safetensors; a tensor of no model, or one missing, in one file or a shard; `run --backend torch`
against transformers 5.25's greedy ``generate`` on the same folder.

Found and fixed: transformers' from_pretrained reads an index's shard where its name puts it inside the folder
(``os.path.join(folder, name)``: a sub-folder's file, ``./x`` as ``x``, a hidden name), refusing only an absolute name
and one with a ".." part (``_check_shard_filenames_stay_in_model_dir``); `import` refused every name but a plain one. It
now reads each where transformers does, stores it in the same sub-folder, and refuses what transformers refuses with
its reason; a backslash (a separator to transformers on Windows, a character elsewhere) and a sub-folder that is a link
leading out of the checkpoint stay refused. A tensor name holding a line feed made the refusal two lines; a tensor the
engine would ignore and a missing one were refused without naming the file: each now names the file (or the shards it
was looked for in), printable on one line. The hub's listing of an index whose shards all lie in a folder was refused
as "no weights". Held, no difference: consolidated.safetensors and .gguf files are read by neither unless nothing else
is there (then both refuse); model.safetensors is read over a .bin beside it; pickle-only weights stay refused by
design (never unpickled), where transformers loads them.

Each test compares with transformers here; the file fails with the plain-name rule restored, with the name read
unnormalized, without the check of a linked folder, with tensors shown raw or without their file, and with the
listing's old weights check."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

transformers = pytest.importorskip("transformers")

import test_text_round39 as r39  # noqa: E402  (its builder, reference and engine)
import test_text_round44 as r44  # noqa: E402  (its checkpoint and rewrite)
from safetensors.torch import load_file, save_file  # noqa: E402

from neurobrix import hub  # noqa: E402
from neurobrix.checkpoint import INDEX, CheckpointError, shard_name, shards_named, weight_files  # noqa: E402


def shard(folder: Path, files: dict[str, str], drop: str | None = None, extra: dict[str, str] | None = None) -> None:
    """model.safetensors split among ``files`` (the index's name -> the file's path in the folder), each tensor by
    turns, with ``drop`` left out and ``extra`` (a key -> the index name of the file) added as zeros."""
    tensors = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    keys = sorted(k for k in tensors if k != drop)
    names = list(files)
    weight_map = {k: names[i % len(names)] for i, k in enumerate(keys)}
    held: dict[str, dict[str, torch.Tensor]] = {files[n]: {} for n in names}
    for k, n in weight_map.items():
        held[files[n]][k] = tensors[k]
    for k, n in (extra or {}).items():
        held[files[n]][k], weight_map[k] = torch.zeros(3), n
    for path, part in held.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        save_file(part, folder / path, metadata={"format": "pt"})
    (folder / INDEX).write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def test_shards_named_by_paths_inside_the_folder_print_transformers_text(tmp_path):
    """Before: refused ("names shards that are not plain *.safetensors files"), where from_pretrained reads each file
    where the name puts it. ``./a`` and ``a`` name one file (read once by the engine, twice by transformers, alike);
    a stored folder named model.safetensors, which holds a shard, was called an unlisted weights file (damage)."""
    folder = tmp_path / "m"
    prompt, ids = r44.checkpoint(folder, "qwen2")
    files = {
        "./a.safetensors": "a.safetensors",
        "a.safetensors": "a.safetensors",
        "sub//b.safetensors": "sub/b.safetensors",
        "x/y/.c.safetensors": "x/y/.c.safetensors",
        "model.safetensors/d.safetensors": "model.safetensors/d.safetensors",  # a folder: the index is read
    }
    shard(folder, files)
    r44.same_text(folder, prompt, ids)
    stored = folder.parent / "home" / "models" / folder.name
    assert (stored / "x" / "y" / ".c.safetensors").is_file() and (stored / "sub" / "b.safetensors").is_file()


@pytest.mark.parametrize(
    "name, read",
    [
        ("sub/x.safetensors", "sub/x.safetensors"),
        ("./x.safetensors", "x.safetensors"),
        ("sub//./x.safetensors", "sub/x.safetensors"),
        (".x.safetensors", ".x.safetensors"),
        ("..x.safetensors", "..x.safetensors"),
        ("../x.safetensors", None),
        ("sub/../x.safetensors", None),
        ("/abs/x.safetensors", None),
        ("//x.safetensors", None),
    ],
)
def test_each_shard_name_is_the_file_transformers_reads_or_refused_where_it_refuses(name, read):
    """``shard_name`` against transformers' own check and its os.path.join: the same file (normalized), or refused
    where transformers refuses it."""
    from transformers.utils.hub import _check_shard_filenames_stay_in_model_dir

    if read is None:
        with pytest.raises(ValueError, match="points outside the model directory"):
            _check_shard_filenames_stay_in_model_dir([name], INDEX)
        with pytest.raises(ValueError, match="points outside the model's folder"):
            shard_name(name)
    else:
        _check_shard_filenames_stay_in_model_dir([name], INDEX)
        assert shard_name(name) == read
        assert Path("/m", name).resolve() == Path("/m", read)  # (no link there: the file os.path.join names)


def test_a_backslash_or_a_linked_folder_leading_out_is_refused_naming_the_shard(tmp_path):
    """A backslash is one file's name to transformers here and a sub-folder on Windows: refused, naming it. A
    sub-folder that is a link out of the checkpoint, which transformers follows, is never read."""
    index = tmp_path / INDEX
    index.write_text(json.dumps({"metadata": {}, "weight_map": {"a": "sub\\x.safetensors"}}))
    with pytest.raises(CheckpointError, match=r'names the shard "sub\\\\x.safetensors".*a backslash'):
        shards_named(index)
    outside = tmp_path.parent / f"{tmp_path.name}-out"
    outside.mkdir()
    save_file({"a": torch.zeros(1)}, outside / "x.safetensors")
    (tmp_path / "sub").symlink_to(outside)
    index.write_text(json.dumps({"metadata": {}, "weight_map": {"a": "sub/x.safetensors"}}))
    with pytest.raises(CheckpointError, match=r"sub/x.safetensors, whose folder is a link leading out"):
        weight_files(tmp_path)
    (tmp_path / "sub").unlink()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.safetensors").symlink_to(outside / "x.safetensors")  # a file linked, as a hub snapshot's
    assert weight_files(tmp_path) == [tmp_path / "sub" / "x.safetensors"]


def test_a_tensor_missing_or_ignored_is_refused_in_one_line_naming_it_and_its_file(tmp_path):
    """transformers warns and prints text (the missing projections drawn anew, the other tensor dropped); `run` keeps
    refusing. Before: no file was named, and a key holding a line feed made the refusal two lines. (A missing norm
    weight is filled with ones, as transformers fills it: text round 50.)"""
    folder = tmp_path / "m"
    prompt, ids = r44.checkpoint(folder, "mistral")
    files = {"a.safetensors": "a.safetensors", "sub/b.safetensors": "sub/b.safetensors"}
    shard(folder, files, "model.layers.1.mlp.up_proj.weight", {"odd\nkey": "sub/b.safetensors"})
    index = json.loads((folder / INDEX).read_text())
    tensors = load_file(folder / "a.safetensors")
    mapped = sorted(k for k in tensors if "proj" in k)[0]  # named by the index in a.safetensors, which lacks it
    save_file({k: v for k, v in tensors.items() if k != mapped}, folder / "a.safetensors", metadata={"format": "pt"})
    (folder / INDEX).write_text(json.dumps(index))
    assert r39.reference(folder, ids, 6) is not None, "transformers prints text"
    refused = r39.engine(folder, prompt, 6)  # (its message one line: the helper asserts it)
    assert isinstance(refused, str), refused
    gone = "model.layers.1.mlp.up_proj.weight"
    assert f"no tensor '{gone}' in any of its 2 shards (a.safetensors, sub/b.safetensors)" in refused, refused
    assert f"no tensor '{mapped}' ({INDEX} maps it to a.safetensors, which does not hold it)" in refused, refused
    assert "would ignore (odd\\nkey) in sub/b.safetensors" in refused, refused


def _listing(tmp_path: Path, names: list[str], weight_map: dict[str, str] | None = None) -> list[str]:
    """What ``hub._download`` fetches for a repository of ``names`` (the second download's patterns), its config.json
    and index served from ``tmp_path``; or the refusal's text."""
    from store_fixtures import config_dict

    snapshot = tmp_path / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True, exist_ok=True)
    (snapshot / "config.json").write_text(json.dumps(config_dict()))
    if weight_map is not None:
        (snapshot / INDEX).write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    asked: list[list[str]] = []

    def download(repo_id, *, revision, allow_patterns, local_files_only):
        asked.append(list(allow_patterns))
        return snapshot

    info = SimpleNamespace(siblings=[SimpleNamespace(rfilename=n) for n in names])
    real = hub._snapshot_download
    hub._snapshot_download = download
    try:
        hub._download("org/m", None, info)
    except CheckpointError as refused:
        return [str(refused)]
    finally:
        hub._snapshot_download = real
    return asked[-1]


def test_the_hub_listing_fetches_what_from_pretrained_reads(tmp_path):
    """Before: a repository whose index names shards in a folder only was refused as having no weights."""
    top = ["config.json", "tokenizer.json"]
    shards = {"a": "./w/1.safetensors", "b": "w/2.safetensors"}
    got = _listing(tmp_path / "1", [*top, INDEX, "w/1.safetensors", "w/2.safetensors"], shards)
    assert got[-2:] == ["w/1.safetensors", "w/2.safetensors"], got
    # Mistral's layout: consolidated.safetensors and params.json beside the shards are not fetched
    mistral = [*top, "params.json", "consolidated.safetensors", INDEX, "m-1.safetensors", "m-2.safetensors"]
    got = _listing(tmp_path / "2", mistral, {"a": "m-1.safetensors", "b": "m-2.safetensors"})
    assert "consolidated.safetensors" not in got and "params.json" not in got and got[-2:] == mistral[-2:], got
    got = _listing(tmp_path / "3", [*top, "model.safetensors", "pytorch_model.bin", "model.Q8_0.gguf"])
    assert got[-1] == "model.safetensors" and not any(n.endswith((".bin", ".gguf")) for n in got), got
    # what from_pretrained loads no model from
    (refused,) = _listing(tmp_path / "4", [*top, "params.json", "consolidated.safetensors"])
    assert "(consolidated.safetensors) are neither model.safetensors nor shards" in refused, refused
    (refused,) = _listing(tmp_path / "5", [*top, "model.Q8_0.gguf"])
    assert "no weights" in refused and "model.Q8_0.gguf is a GGUF file" in refused, refused


def test_consolidated_and_gguf_files_are_neither_read_nor_fetched_where_transformers_reads_model_safetensors(tmp_path):
    """consolidated.safetensors (other values) and a .gguf beside model.safetensors: transformers reads
    model.safetensors, and so does `run`; alone, both refuse."""
    folder = tmp_path / "m"
    prompt, ids = r44.checkpoint(folder, "mistral")
    tensors = load_file(folder / "model.safetensors")
    save_file({k: v * 0.5 for k, v in tensors.items()}, folder / "consolidated.safetensors")
    (folder / "params.json").write_text(json.dumps({"dim": 48, "n_layers": 2}))
    (folder / "model.gguf").write_bytes(b"GGUF" + bytes(60))
    r44.same_text(folder, prompt, ids)
    (folder / "model.safetensors").unlink()
    r44.from_pretrained_fails(folder)
    refused = r39.engine(folder, prompt, 6)
    assert isinstance(refused, str) and "(consolidated.safetensors) are neither" in refused, refused
