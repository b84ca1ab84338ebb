"""The twenty-third round of text parity: Llama's ``attention_bias`` and ``mlp_bias``.

transformers' LlamaAttention gives q, k, v and o a bias with ``attention_bias``, LlamaMLP gives gate, up and down one
with ``mlp_bias``. The engine refused both fields at import. It now loads the biases (q/k/v's in the fused qkv bias,
o's and down's on their projections, gate's then up's as the fused gate_up bias) and adds them in every pass: prefill,
each chunk of a long prompt, decode. The linear kernel already took a bias and its table key has none, so the certified
tables cover the calls as they were (the planned calls are the same). MistralAttention and MistralMLP have no bias, and
Qwen2's attention has its q/k/v bias whatever the file says and its MLP none: those fields are read there as
transformers reads them (ignored).

Round 7's tiny random checkpoints (weights N(0, 0.2), the biases too) are run through `neurobrix run` and compared
with transformers' greedy ``generate`` on the same folder: the token ids and the text, against float32 and float64
(the float64 run checks no step is a near tie). Every test of a biased Llama failed before the change (refused at
import, or by ``ModelConfig.from_hf``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_text_round7 import PROMPT, checkpoint, theirs  # noqa: E402

GENERATION = {"eos_token_id": 9999, "max_new_tokens": 10}
GQA = {"num_attention_heads": 4, "num_key_value_heads": 2}


def run_text(folder: Path, monkeypatch, backend: str = "torch") -> tuple[list[int], str]:
    """`neurobrix run --no-chat --no-stream --backend BACKEND` on the imported folder (fp32 on the CPU; triton: the
    interpreter with the shipped tables): new ids, text."""
    from neurobrix import run, store

    monkeypatch.setenv("NEUROBRIX_HOME", str(folder.parent / "home"))
    monkeypatch.delenv("NEUROBRIX_TABLES", raising=False)  # the shipped interpreter tables
    shutil.rmtree(folder.parent / "home" / "models" / folder.name, ignore_errors=True)
    store.import_model(str(folder), progress=False)
    seen: dict[str, list[int]] = {}
    real = run.generate

    def generate(*args, **kwargs):
        seen["ids"], stats = real(*args, **kwargs)
        return seen["ids"], stats

    monkeypatch.setattr(run, "generate", generate)
    text: list[str] = []
    options = run.RunOptions(model=folder.name, prompt=PROMPT, backend=backend, chat=False, stream=False)
    run.run(options, write=text.append, notice=lambda _: None)
    return seen["ids"], "".join(text).removesuffix("\n")


def theirs32(folder: Path) -> tuple[list[int], str]:
    """transformers' greedy generate in float32."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    inputs = tok(PROMPT, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, do_sample=False)
    new = out[0, inputs["input_ids"].shape[1] :].tolist()
    return new, tok.decode(new, skip_special_tokens=True)


def biased_checkpoint(folder: Path, attention: bool, mlp: bool, args=None) -> Path:
    """A tiny random Llama checkpoint with those fields (and transformers' biases, drawn N(0, 0.2))."""
    fields = {**GQA, "attention_bias": attention, "mlp_bias": mlp, **(args or {})}
    return checkpoint(folder, "LlamaConfig", fields, None, GENERATION)


def _bias_names(folder: Path) -> set[str]:
    from safetensors import safe_open

    with safe_open(folder / "model.safetensors", framework="pt") as f:
        return {n.split("layers.0.")[1] for n in f.keys() if n.endswith(".bias") and "layers.0." in n}


BIASED = {  # attention_bias, mlp_bias, config arguments
    "attention_bias (q, k, v, o)": (True, False, {}),
    "mlp_bias (gate, up, down)": (False, True, {"intermediate_size": 80}),
    "both, tied embeddings": (True, True, {"tie_word_embeddings": True}),
}


@pytest.mark.parametrize("case", BIASED)
def test_biased_llama_prints_transformers_text(tmp_path, monkeypatch, case):
    """Before: refused at import ("mlp_bias is not supported", "attention_bias on llama ... is not supported")."""
    attention, mlp, args = BIASED[case]
    folder = biased_checkpoint(tmp_path / "m", attention, mlp, args)
    want = {"self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias"}
    want = (want if attention else set()) | (
        {"mlp.gate_proj.bias", "mlp.up_proj.bias", "mlp.down_proj.bias"} if mlp else set()
    )
    assert _bias_names(folder) == want  # the checkpoint holds what transformers' model has
    expected = theirs(folder)
    assert theirs32(folder) == expected
    assert run_text(folder, monkeypatch) == expected


@pytest.mark.parametrize("backend", ["torch", "triton"])
def test_a_chunked_prefill_adds_the_biases_in_every_chunk(tmp_path, backend):
    """A 40-token prompt prefilled in chunks of 16 (8 tokens, then two passes over the cache), then decode, on
    PyTorch's kernels and on the certified Triton kernels (the interpreter class's shipped tables, planned as a run
    plans): the greedy tokens of transformers' float32 generate."""
    from neurobrix import tables
    from neurobrix.config import ModelConfig
    from neurobrix.generate import Sampling, generate
    from neurobrix.model import Transformer, weights_from_files
    from neurobrix.ops import TORCH
    from neurobrix.plan import generation_calls, resolve

    folder = biased_checkpoint(tmp_path / "m", True, True)
    cfg = ModelConfig.from_hf(json.loads((folder / "config.json").read_text()))
    ids = [(7 * n + 3) % 300 for n in range(40)]
    steps, chunk = 5, 16
    capacity = len(ids) + steps
    calls = generation_calls(cfg, 1, len(ids), capacity, "fp32", chunk=chunk)
    assert sum(kernel == "attention_chunk" for kernel, _, _ in calls) == 2
    ops = resolve(calls, tables.load(), "interpreter").ops() if backend == "triton" else TORCH
    weights = weights_from_files(cfg, [str(folder / "model.safetensors")], torch.float32, "cpu")
    model = Transformer(cfg, weights, ops, batch=1, capacity=capacity, chunk=chunk)
    hf = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    with torch.no_grad():
        out = hf.generate(
            torch.tensor([ids]),
            attention_mask=torch.ones(1, len(ids), dtype=torch.long),
            do_sample=False,
            max_new_tokens=steps,
            eos_token_id=None,
        )
    assert generate(model, ids, steps, Sampling(), eos=set())[0] == out[0, len(ids) :].tolist()


def test_the_planned_calls_and_the_certified_tables_do_not_change_with_biases(monkeypatch):
    """The linear kernel's key has no bias: a biased model makes the calls the same model without biases makes, so
    the tables certified for one cover the other (each Llama catalogue model's shapes, resolved on the shipped
    nvidia-h200 tables in bf16 and the interpreter's in fp32), and the recorded (meta) weights have the loaded
    weights' shapes."""
    import dataclasses

    import yaml

    from conformance.catalogue import CATALOGUE
    from neurobrix import tables
    from neurobrix.config import ModelConfig
    from neurobrix.model import checkpoint_shapes, fuse_weights, meta_weights
    from neurobrix.plan import generation_calls, resolve

    monkeypatch.delenv("NEUROBRIX_TABLES", raising=False)
    base = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 96, "vocab_size": 50}
    base |= {"num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5}
    cfg = ModelConfig.from_hf({**base, "attention_bias": True, "mlp_bias": True})
    assert (cfg.qkv_bias, cfg.o_bias, cfg.mlp_bias) == (True, True, True)
    shapes = checkpoint_shapes(cfg)
    loaded = fuse_weights(cfg, lambda n: torch.zeros(shapes[n]), set(shapes), torch.float32, "cpu")

    def described(w):
        layer = w.layers[0]
        return [
            (f.name, None if (t := getattr(layer, f.name)) is None else tuple(t.shape))
            for f in dataclasses.fields(layer)
        ]

    assert described(meta_weights(cfg, torch.float32)) == described(loaded)
    assert described(loaded)[-3:] == [("o_bias", (64,)), ("gate_up_bias", (192,)), ("down_bias", (64,))]
    shipped = tables.load()
    models = yaml.safe_load(CATALOGUE.read_text())["models"].values()
    llamas = [c for c in map(ModelConfig.from_hf, models) if c.architecture == "llama"]
    assert llamas
    for plain in llamas:
        biased = dataclasses.replace(plain, qkv_bias=True, o_bias=True, mlp_bias=True)
        for class_id, dtype in (("nvidia-h200", "bf16"), ("interpreter", "fp32")):
            calls = generation_calls(biased, 1, 37, 64, dtype, layers=2)
            assert calls == generation_calls(plain, 1, 37, 64, dtype, layers=2)
            resolve(calls, shipped, class_id)


# --- what transformers reads otherwise: held ---------------------------------------------------------------------

HELD = {  # family, config arguments, config.json fields
    # Qwen2Attention has its q/k/v bias and no o bias, Qwen2MLP none, whatever the fields say
    "Qwen2 with attention_bias and mlp_bias (ignored)": ("Qwen2Config", {}, {"attention_bias": True, "mlp_bias": True}),
}


@pytest.mark.parametrize("case", HELD)
def test_the_fields_transformers_ignores_stay_ignored(tmp_path, monkeypatch, case):
    family, args, fields = HELD[case]
    folder = checkpoint(tmp_path / "m", family, {**GQA, **args}, fields, GENERATION)
    assert run_text(folder, monkeypatch) == theirs(folder)


def test_a_bias_the_config_implies_and_the_file_lacks_runs_as_transformers_zeros(tmp_path, monkeypatch, capsys):
    """attention_bias true and no o_proj.bias in the file: transformers fills the missing bias with zeros (its
    ``_init_weights``, a "missing keys" warning), and so does the engine (text round 50; refused by name before). And
    a bias the config does not imply stays refused."""
    from safetensors.torch import load_file, save_file

    from neurobrix import store
    from neurobrix.errors import UsageError

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = biased_checkpoint(tmp_path / "m", True, False)
    weights = load_file(folder / "model.safetensors")
    del weights["model.layers.1.self_attn.o_proj.bias"]
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    assert run_text(folder, monkeypatch) == theirs32(folder)
    data = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**data, "attention_bias": False}))
    with pytest.raises(UsageError, match=r"would ignore \(model\.layers\.0\.self_attn\.k_proj\.bias"):
        store.import_model(str(folder), progress=False)
