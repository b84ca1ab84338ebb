"""Walk-through round 40: a contributor adding a kernel, `run` of a model not stored on a CPU, a reader of `--help`.

Followed CONTRIBUTING.md's "Add a kernel" (the launch lint's narrow offsets, conformance/offsets.py) on a toy kernel in
a scratch copy, README.md's `run` on the 2-core machine without a GPU for a model not in the store, and every
command's `--help` (neurobrix's, `python -m conformance`'s, `python -m gate`'s) against the README.

Found and fixed (each test below failed before its fix): see docs/walkthroughs.md (round 40).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory):
    """The README's tiny model, written and imported once into a store of its own."""
    from neurobrix import store, tiny

    root = tmp_path_factory.mktemp("walk40")
    old = os.environ.get("NEUROBRIX_HOME")
    os.environ["NEUROBRIX_HOME"] = str(root / "home")
    try:
        tiny.make(root / "tiny-llama")
        store.import_model(str(root / "tiny-llama"), progress=False)
    finally:
        if old is None:
            os.environ.pop("NEUROBRIX_HOME")
        else:
            os.environ["NEUROBRIX_HOME"] = old
    return root


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("--model", "nope", "--prompt", "hi"), 2, "no model 'nope' in the store"),
        (("--model", "meta-llama/Llama-3.2-1B-Instruct", "--prompt", "hi"), 2, "`neurobrix import meta-llama/"),
        (("--model", "https://huggingface.co/org/x", "--prompt", "hi"), 2, "no model 'https://huggingface.co/org/x'"),
        (("--model", "{folder}", "--prompt", "hi"), 2, "is a folder that has not been imported"),
        (("--model", "tiny-llama", "--prompt", "hi", "--system", "s", "--no-chat"), 2, "drop --no-chat"),
        (("--model", "tiny-llama", "--prompt", "", "--no-chat"), 2, "the prompt is empty"),
        (("--model", "tiny-llama", "--prompt", "hi"), 5, "no GPU found"),
    ],
)
def test_run_refuses_what_the_user_named_before_what_the_machine_lacks(
    tiny_store, tmp_path, monkeypatch, capsys, args, code, says
):
    """On a CPU with the interpreter off, `run --model` of a model not in the store said "no GPU found" (exit 5), and
    after TRITON_INTERPRET=1 that the model is not stored (`warmup` said so at once): the options, the model and the
    prompt are refused before the device, which is refused last (and still, a stored model and a good prompt)."""
    import torch

    from neurobrix import gpu
    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(tiny_store / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    gpu.device_facts.cache_clear()
    monkeypatch.setattr(gpu, "device_facts", gpu.device_facts.__wrapped__)  # nothing cached from another test
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    args = tuple(str(folder) if a == "{folder}" else a for a in args)
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main(["run", *args])
    err = capsys.readouterr().err
    assert done.value.code == code, err
    assert "Traceback" not in err and err.startswith("neurobrix: error: ") and says in err.splitlines()[0], err
    assert "note:" not in err  # refused before any note about a run that will not happen
