"""The fourteenth round, adversarial on the runtime: tables edited on disk and re-tracked, safetensors headers that
only safetensors itself refuses, sampling settings that overflow, and the Python API called with wrong types. Each
test failed before the fix it names (an input accepted, run on wrong terms, or a traceback instead of one line and
its exit code) and passes now. No kernel is launched."""

from __future__ import annotations

import json
import struct

import pytest
import yaml
from conftest import retrack
from kernel_tables import write_tables
from store_fixtures import config_dict, make_checkpoint

from neurobrix import tables
from neurobrix.cli import main
from neurobrix.errors import TablesError, UsageError

# -- class.yaml: what the engine does by a class's id and its launch features ------------------------------------


def _edit_class(root, change):
    path = root / "interpreter" / "class.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data))
    retrack(root)


def test_pdl_on_the_interpreter_class_is_refused_by_doctor_and_run(tmp_path, monkeypatch, capsys):
    """`launch: [pdl]` in the interpreter's class.yaml (the folder re-tracked): doctor said "ready" and `run` loaded
    the weights, then died in the interpreter with a traceback (PDL is a Hopper launch). Now the class is refused
    (tables invalid: exit 3 for run, doctor blocked), naming the field."""
    root = write_tables(tmp_path / "t")
    _edit_class(root, lambda d: d.update(launch=["pdl"]))
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    assert main(["doctor"]) == 1
    assert "class.yaml: field 'launch': lists pdl" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--model", "tiny", "--prompt", "hello"])
    err = capsys.readouterr().err
    assert exit_.value.code == 3 and "field 'launch': lists pdl, which runs on CUDA GPUs" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("folder", "match", "launch", "said"),
    [
        # the engine skips the compiler check for the class named "interpreter": a GPU's settings would run unchecked
        ("interpreter", {"backend": "cuda", "vendor": "nvidia", "device_name": "X*"}, None, "match.backend"),
        # the Triton interpreter taken for a class whose id the engine does not know as the interpreter's
        ("cpu-class", {"backend": "interpreter"}, None, "match.backend"),
        # programmatic dependent launch before Hopper, or on another vendor's GPU: a failed launch after loading
        ("old-gpu", {"backend": "cuda", "vendor": "nvidia", "device_name": "X*"}, ["pdl"], "launch"),
        ("amd-gpu", {"backend": "hip", "vendor": "amd", "device_name": "X*"}, ["pdl"], "launch"),
    ],
)
def test_a_class_whose_identity_the_engine_cannot_run_as_written_is_refused(tmp_path, folder, match, launch, said):
    from neurobrix.schema import parse_class

    if match["backend"] != "interpreter":
        match = {
            **match,
            "compute_capability": [9, 0] if folder == "interpreter" else [8, 0],
            "multiprocessor_count": 8,
        }
    data = {
        "format": 1,
        "class": folder,
        "description": "edited",
        "match": match,
        **({"launch": launch} if launch else {}),
    }
    with pytest.raises(TablesError, match=rf"class.yaml: field '{said}'") as refused:
        parse_class(data, "class.yaml", folder)
    assert refused.value.exit_code == 3


def test_the_shipped_classes_keep_their_identity():
    """What the refusals must leave alone: the shipped classes, the H200's PDL included."""
    loaded = tables.load()
    assert loaded.classes["nvidia-h200"].launch == ("pdl",)
    assert loaded.classes["interpreter"].match.backend == "interpreter"


# -- plan.resolve: a call that is no kernel call ---------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        ("linear", "fp32", (1, 16, 16, 99)),  # resolved by the first three values: a setting for a call never made
        ("linear", "fp32", (1,)),  # KeyError from a wide entry's containment test
        ("nope", "fp32", (1,)),  # KeyError
        ("linear", "fp32", (1.0, 16, 16)),
        ("linear", "int8", (1, 16, 16)),
    ],
)
def test_resolve_refuses_a_call_that_is_no_kernel_call(call):
    from neurobrix.plan import resolve

    with pytest.raises(UsageError, match="not a kernel call"):
        resolve({call}, tables.load(), "interpreter")


# -- safetensors headers: refused by import, as run would find them ----------------------------------------------


def _header(path):
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + length]), raw[8 + length :]


def _rewrite(path, header, data):
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def _alias(header):
    """Two tensors of one size made to share bytes (neither the last in the file, so the file's length still
    matches): safetensors refuses the header."""
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    last = max(tensors, key=lambda k: tensors[k]["data_offsets"][1])
    size = {k: v["data_offsets"][1] - v["data_offsets"][0] for k, v in tensors.items() if k != last}
    a, b = next((a, b) for a in size for b in size if a < b and size[a] == size[b])
    header[b]["data_offsets"] = list(header[a]["data_offsets"])


@pytest.mark.parametrize(
    ("damage", "said"),
    [(_alias, "invalid offset"), (lambda h: h.update({"__metadata__": {"format": 1}}), "invalid JSON in header")],
)
def test_import_refuses_a_header_safetensors_cannot_read(tmp_path, monkeypatch, capsys, damage, said):
    """Overlapping offsets, or metadata that is not text: import stored the model (its size check passed) and every
    run then called it damaged (exit 7). Now import refuses it (exit 2), naming the file, and stores nothing."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "bad", config=config_dict(), use_transformers=False)
    header, data = _header(folder / "model.safetensors")
    damage(header)
    _rewrite(folder / "model.safetensors", header, data)
    with pytest.raises(SystemExit) as exit_:
        main(["import", str(folder)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "model.safetensors: safetensors cannot read it" in err and said in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "home" / "models" / "bad").exists()


def test_a_tensor_stored_in_two_files_is_refused(tmp_path, monkeypatch, capsys):
    """A folder of several *.safetensors (an index naming them: since text round 44 files without one are refused,
    as transformers reads none of them), one holding a tensor again (other values): import took both files and run
    silently used whichever file sorted last. Now import refuses it naming both files (exit 2), and a run over such
    files refuses them too."""
    import torch
    from safetensors.torch import save_file

    from neurobrix.model import UnreadableWeightsError, load_safetensors

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "twice", config=config_dict(), use_transformers=False)
    (folder / "model.safetensors").rename(folder / "model-a.safetensors")
    save_file({"model.norm.weight": torch.zeros(16)}, str(folder / "extra.safetensors"), metadata={"format": "pt"})
    weight_map = {"model.embed_tokens.weight": "model-a.safetensors", "model.norm.weight": "extra.safetensors"}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    with pytest.raises(SystemExit) as exit_:
        main(["import", str(folder)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "model.norm.weight is stored twice" in err and "extra.safetensors" in err
    assert len(err.strip().splitlines()) == 1
    files = [str(folder / "extra.safetensors"), str(folder / "model-a.safetensors")]
    with pytest.raises(UnreadableWeightsError, match="model.norm.weight is stored twice"):
        load_safetensors(files, set())


# -- sampling that overflows ----------------------------------------------------------------------------------


def test_a_temperature_that_overflows_the_logits_is_one_line(tmp_path, monkeypatch, capsys):
    """--temperature 1e-300: every logit divided by it is inf, the probabilities NaN, and torch.multinomial's
    RuntimeError came out as a traceback (exit 1). Now one line naming the temperature (exit 2)."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny", config=config_dict(), use_transformers=False)
    assert main(["import", str(folder)]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--model", "tiny", "--prompt", "hello", "--backend", "torch", "--temperature", "1e-300"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and "cannot sample" in err[-1] and "--temperature 1e-300" in err[-1]
    assert not any("Traceback" in line for line in err)


# -- the Python API called with wrong types ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("prompt", b"hello"),  # rendered into the chat as the text "b'hello'": a run on another prompt, exit 0
        ("prompt", 123),  # rendered as "123"
        ("max_tokens", "3"),  # TypeError
        ("max_tokens", 2.5),  # TypeError in torch.zeros
        ("max_tokens", True),  # one token, taken for a count
        ("model", None),  # AttributeError
        ("chat", "no"),  # a true string: the chat template used
        ("sampling", None),  # AttributeError
    ],
)
def test_run_options_of_another_type_are_refused_naming_the_field(field, value):
    from neurobrix.run import RunOptions, run

    opts = RunOptions(**{"model": "tiny", "prompt": "hello", "backend": "torch", field: value})
    with pytest.raises(UsageError, match=rf"RunOptions.{field} must be"):
        run(opts, write=lambda text: None, notice=lambda text: None)


@pytest.mark.parametrize(
    ("field", "value"),
    [("temperature", "1"), ("seed", 1.5), ("top_k", 2.5), ("top_k", True), ("top_p", "0.9"), ("min_p", [0.1])],
)
def test_sampling_of_another_type_is_refused_naming_the_field(field, value):
    """Each was a TypeError or RuntimeError in the middle of generating (torch.topk, manual_seed, a comparison)."""
    from neurobrix.generate import Sampling

    with pytest.raises(UsageError, match=rf"Sampling.{field} must be"):
        Sampling(**{"temperature": 1.0, field: value}).validate()


def test_warmup_and_store_refuse_another_type_naming_it():
    from neurobrix import store
    from neurobrix.warmup import WarmupOptions, warmup

    with pytest.raises(UsageError, match="WarmupOptions.max_prompt must be an integer"):
        warmup(WarmupOptions(model="tiny", max_prompt="8"))  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="the model name must be a string"):
        store.resolve(None)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="SOURCE must be a string"):
        store.import_model(b"/tmp/folder")  # type: ignore[arg-type]
