"""The forty-first round, on checkpoints whose files lie (safetensors headers, shard indexes, config.json's numbers,
tokenizer files), each run through transformers' greedy ``generate`` and `neurobrix run` (round 7's tiny random
checkpoint, PyTorch's kernels). Two classes were found, each fixed:

- a ``tokenizer_class`` that is no text (a number, true or false, a list, an object) in tokenizer_config.json, or in
  config.json where tokenizer_config.json names none: transformers' AutoTokenizer fails on it (it calls removesuffix
  on the value, or looks a class up by it), and `run` printed text, building tokenizer.json as it is; now refused
  naming the file and the value (exit 2). And config.json's ``tokenizer_class: ""``, which names no class (transformers
  loads tokenizer.json as it is and prints the plain text), was refused as an unsupported class: it runs now;
- a safetensors tensor whose dtype is no dtype safetensors knows (``"f32"``, ``"float32"``), which safetensors and so
  transformers refuse to read, was named as a weight that is "not floating-point" with the advice about quantized
  checkpoints: it is safetensors' own refusal now, naming the dtype (exit 2).

Each test that says "before" failed before its fix; the controls pass either way."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

from test_text_round7 import PROMPT, checkpoint, ours, theirs  # noqa: E402

GENERATION = {"eos_token_id": 9999, "max_new_tokens": 4}


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    return checkpoint(tmp_path_factory.mktemp("strict41") / "base", generation=GENERATION)


def _edit(path: Path, **fields) -> None:
    data = json.loads(path.read_text())
    for key, value in fields.items():
        if value is KeyError:
            data.pop(key, None)
        else:
            data[key] = value
    path.write_text(json.dumps(data))


@pytest.fixture
def folder(model_folder, tmp_path) -> Path:
    """A fresh copy of the module's checkpoint, to edit."""
    import shutil

    return Path(shutil.copytree(model_folder, tmp_path / "m"))


def _cli(folder: Path, monkeypatch, capsys, *argv: str) -> tuple[int, str, str]:
    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(folder.parent / "home"))
    try:
        code = main(list(argv))
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


def _run_refused(folder: Path, monkeypatch, capsys) -> str:
    """`neurobrix import` stores the folder; `run` exits 2 in one line, no text, no traceback: the line."""
    assert _cli(folder, monkeypatch, capsys, "import", str(folder))[0] == 0
    code, out, err = _cli(
        folder,
        monkeypatch,
        capsys,
        "run",
        "--model",
        folder.name,
        "--prompt",
        PROMPT,
        "--no-chat",
        "--backend",
        "torch",
    )
    assert code == 2 and out == "" and "Traceback" not in err, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


NOT_TEXT = [5, True, False, [], {}]


@pytest.mark.parametrize("value", NOT_TEXT, ids=repr)
def test_a_tokenizer_class_that_is_no_text_is_refused_where_transformers_fails(folder, monkeypatch, capsys, value):
    """Before: `run` printed the model's text (tokenizer.json built as it is); transformers' AutoTokenizer fails."""
    _edit(folder / "tokenizer_config.json", tokenizer_class=value)
    with pytest.raises((AttributeError, TypeError)):
        transformers.AutoTokenizer.from_pretrained(folder)
    line = _run_refused(folder, monkeypatch, capsys)
    assert f"tokenizer_config.json: tokenizer_class {value!r} is not a class name" in line, line


@pytest.mark.parametrize("value", [5, False, ["LlamaTokenizer"]], ids=repr)
def test_config_jsons_tokenizer_class_that_is_no_text_is_refused(folder, monkeypatch, capsys, value):
    """config.json's class, read where tokenizer_config.json names none (transformers' ``or``). Before: text."""
    _edit(folder / "tokenizer_config.json", tokenizer_class=KeyError)
    _edit(folder / "config.json", tokenizer_class=value)
    with pytest.raises((AttributeError, TypeError)):
        transformers.AutoTokenizer.from_pretrained(folder)
    line = _run_refused(folder, monkeypatch, capsys)
    assert f"config.json: tokenizer_class {value!r} is not a class name" in line, line


def test_an_empty_tokenizer_class_in_config_json_runs_as_transformers_does(folder, monkeypatch):
    """Before: refused as "tokenizer_class '' is not supported" (exit 2); transformers loads tokenizer.json as it is
    and generates, as the engine does now, to the same ids and text."""
    _edit(folder / "tokenizer_config.json", tokenizer_class=KeyError)
    _edit(folder / "config.json", tokenizer_class="")
    want = theirs(folder)
    ids, text, _ = ours(folder, monkeypatch)
    assert (ids, text) == want


@pytest.mark.parametrize("value", ["", None, "TokenizersBackend"], ids=repr)
def test_a_tokenizer_class_naming_tokenizer_json_as_it_is_still_runs(folder, monkeypatch, value):
    """Control: text that names no class of its own, or null, in tokenizer_config.json: transformers' text."""
    _edit(folder / "tokenizer_config.json", tokenizer_class=value)
    want = theirs(folder)
    ids, text, _ = ours(folder, monkeypatch)
    assert (ids, text) == want


def _relabel(path: Path, dtype: str) -> None:
    """The first tensor of a safetensors file relabelled ``dtype`` (the header rewritten, its padding spaces)."""
    raw = path.read_bytes()
    length = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + length])
    first = min((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"][0])
    header[first]["dtype"] = dtype
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + length :])


@pytest.mark.parametrize("dtype", ["f32", "float32"])
def test_a_dtype_safetensors_does_not_know_is_its_refusal_not_a_quantized_weight(folder, monkeypatch, capsys, dtype):
    """Before: named as "tensors that are not floating-point weights ... a quantized or integer checkpoint would be
    cast", a dtype safetensors has; safetensors (and so transformers) cannot read the file at all."""
    from safetensors import SafetensorError

    _relabel(folder / "model.safetensors", dtype)
    with pytest.raises(SafetensorError, match=f"unknown variant `{dtype}`"):
        transformers.AutoModelForCausalLM.from_pretrained(folder)
    code, out, err = _cli(folder, monkeypatch, capsys, "import", str(folder))
    assert code == 2 and "Traceback" not in err, (code, err)
    assert "safetensors cannot read it" in err and f"unknown variant `{dtype}`" in err, err
    assert "not floating-point" not in err, err


def test_a_dtype_safetensors_knows_that_is_no_float_is_still_named_so(folder, monkeypatch, capsys):
    """Control: an I32 label over F32 bytes (the same size) is read by safetensors and refused as a non-float weight."""
    _relabel(folder / "model.safetensors", "I32")
    code, out, err = _cli(folder, monkeypatch, capsys, "import", str(folder))
    assert code == 2 and "tensors that are not floating-point weights" in err and "(I32)" in err, err
