"""The engine's logits against transformers' model in float64, in any dtype, with a derived tolerance, and
the planted bugs that tolerance must catch. Used in-process by tests/test_engine.py (the interpreter:
fp32, fp16) and as a script on a GPU by tests/test_gpu_only.py (bf16, fp16 on the certified tables):

    python tests/parity.py --dtype bf16 --workdir DIR     # prints one JSON line per model and check

The tolerance (``logits_tolerance``), written down:

* Each kernel accumulates in fp32 and rounds its output to the dtype once, so a value on its way from
  the embedding to a logit is rounded R = 10 L + 3 times: per layer the stored outputs of the norm, the
  q/k/v projection, rotary, attention, the output projection, the residual add, the second norm, the
  gate/up projection, SiLU-mul and the down projection; then the final norm and the logits themselves.
  Each rounding moves a value by at most u = 2^-11 (fp16) or 2^-8 (bf16) of itself. RMSNorm rescales
  every block's input and the residual adds do not amplify, so to first order each rounding reaches the
  logits with a gain of at most one in units of max|logits|, and the errors add: R u max|logits|.
* The fp32 accumulations add the bound the fp32 tests use: 4 n 2^-24 max|logits| with
  n = L (hidden + intermediate + sequence) + hidden (a gamma_n-style sum over the chain of reductions).
* The reference is transformers' model in float64 **with its weights rounded to the dtype first**: the
  same model the engine runs, so the tolerance measures the arithmetic, not the weights' storage.

Measured (2026-12-02): on the interpreter, the four tiny families in fp16, a 35-token prompt: errors
2.1-4.4 u max|logits| against R = 23 (the tolerance with the fp32 term: 23.2 u); the planted bugs moved
the logits by 120-2,600 u. With PyTorch's kernels on the CPU (``--backend torch``), two-layer models of
TinyLlama's, Llama-3.2-1B's and Qwen2.5-0.5B's shapes, a 37-token prompt: bf16 2.0-2.8 u against a
tolerance of 24 u, fp16 2.1-2.6 u against 29-32 u; a skipped residual 85-890 u. Which planted bugs a
model can show is in ``bugs_for``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import torch

UNIT_ROUNDOFF = {"fp32": 2.0**-24, "fp16": 2.0**-11, "bf16": 2.0**-8}
TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def roundings(cfg) -> int:
    """R: how many times a value is rounded to the dtype between the embedding and a logit."""
    return 10 * cfg.num_layers + 3


def logits_tolerance(cfg, seq: int, dtype: str, logits64: torch.Tensor) -> float:
    n = cfg.num_layers * (cfg.hidden_size + cfg.intermediate_size + seq) + cfg.hidden_size
    storage = roundings(cfg) * UNIT_ROUNDOFF[dtype] if dtype != "fp32" else 0.0
    return (4 * n * 2.0**-24 + storage) * float(logits64.abs().max())


def reference(checkpoint: Path, dtype: str, device: str = "cpu", embed_scale: float = 1.0):
    """transformers' model in float64 with its weights rounded to ``dtype`` (and the embedding scaled)."""
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float64).to(device).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(TORCH_DTYPES[dtype]).double())
        model.get_input_embeddings().weight.mul_(embed_scale)
    return model


class _Ops:
    """An ops backend that passes every call through, except a planted bug in rms_norm."""

    def __init__(self, ops, rms_norm) -> None:
        self.name = ops.name
        for name in ("linear", "rotary", "attention_prefill", "attention_decode", "silu_mul"):
            setattr(self, name, getattr(ops, name))
        self.rms_norm = rms_norm


def plant(model, bug: str):
    """``model`` with one planted bug: 'skipped residual' (layer 0's MLP block output is not added to the
    residual stream), 'rms eps x10', or 'rope scaling ignored' (Llama-3 frequency scaling dropped)."""
    from neurobrix.ops import rope_cache

    cfg = model.cfg
    if bug == "rms eps x10":
        model.cfg = dataclasses.replace(cfg, rms_norm_eps=cfg.rms_norm_eps * 10)
    elif bug == "rope scaling ignored":
        capacity = model.cache.capacity
        model.cos, model.sin = rope_cache(cfg.head_dim, cfg.rope_theta, capacity, None, model.cos.device)
    elif bug == "skipped residual":
        original, calls = model.ops.rms_norm, [0]

        def rms_norm(x, weight, eps, residual=None):
            if residual is None:
                return original(x, weight, eps)
            calls[0] += 1
            if calls[0] % (2 * cfg.num_layers) == 2:  # the add after layer 0's MLP: the residual is dropped
                return original(x, weight, eps, residual=torch.zeros_like(residual))
            return original(x, weight, eps, residual=residual)

        model.ops = _Ops(model.ops, rms_norm)
    else:
        raise ValueError(bug)
    return model


BUGS = ("skipped residual", "rms eps x10", "rope scaling ignored")


def bugs_for(cfg, seq: int) -> list[str]:
    """The planted bugs that ``cfg``'s model can show at all over ``seq`` positions: an eps 10x too large
    only where eps is a visible part of the activations' mean square (measured: at Qwen2.5's 1e-6 it moved
    bf16 logits by 4 u, fp16 by 25 u, inside what rounding alone may do); dropped Llama-3 rope scaling only
    past the original context, where the scaled frequencies differ."""
    found = ["skipped residual"]
    if cfg.rms_norm_eps >= 1e-5:
        found.append("rms eps x10")
    if cfg.rope_scaling and cfg.rope_scaling.get("original_max_position_embeddings", seq) < seq:
        found.append("rope scaling ignored")
    return found


def compare(
    stored,
    checkpoint: Path,
    ids: list[int],
    dtype: str,
    backend: str = "triton",
    bug: str | None = None,
    embed_scale: float = 1.0,
    device: str = "cpu",
) -> dict:
    """Prefill logits and one decode step's, ours against the float64 reference: errors and tolerances."""
    from neurobrix.run import load_model

    cfg = stored.config()
    model = load_model(stored, backend, dtype, prompt_len=len(ids), capacity=len(ids) + 2)
    model.w.embed.mul_(embed_scale)
    if bug is not None:
        plant(model, bug)
    hf = reference(checkpoint, dtype, device, embed_scale)
    dev = model.w.embed.device
    with torch.no_grad():
        ours = model.forward(torch.tensor([ids], device=dev), torch.arange(len(ids), device=dev)[None], None)[0]
        truth = hf(torch.tensor([ids], device=device)).logits[0, -1]
        nxt = int(truth.argmax())
        ours2 = model.forward(
            torch.tensor([[nxt]], device=dev),
            torch.tensor([[len(ids)]], device=dev),
            torch.tensor([len(ids) + 1], dtype=torch.int32, device=dev),
        )[0]
        truth2 = hf(torch.tensor([ids + [nxt]], device=device)).logits[0, -1]
    out = {"dtype": dtype, "bug": bug, "scale": float(truth.abs().max())}
    for step, (a, b, seq) in {"prefill": (ours, truth, len(ids)), "decode": (ours2, truth2, len(ids) + 1)}.items():
        out[f"{step}_error"] = float((a.double().to(device) - b).abs().max())
        out[f"{step}_tolerance"] = logits_tolerance(cfg, seq, dtype, b)
    out["within"] = all(out[f"{s}_error"] <= out[f"{s}_tolerance"] for s in ("prefill", "decode"))
    return out


# --- on a GPU: catalogue-shaped models (the certified tables cover their shapes), two layers each ----


def catalogue_checkpoint(folder: Path, name: str, layers: int = 2, seed: int = 0) -> Path:
    """A random checkpoint with a catalogue model's shapes and ``layers`` layers (kernel shapes do not depend
    on the depth), transformers' initialisation, and a tokenizer (imports need one; the ids are made here)."""
    import transformers
    import yaml

    from conformance import tiny
    from conformance.catalogue import CATALOGUE

    fields = dict(yaml.safe_load(Path(CATALOGUE).read_text())["models"][name])
    architecture = fields.pop("architectures")[0]
    kind = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2"}[architecture]
    fields = {k: v for k, v in fields.items() if v is not None}
    config = transformers.AutoConfig.for_model(kind, **{**fields, "num_hidden_layers": layers})
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    tok = tiny.train_tokenizer()
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>").save_pretrained(
        folder
    )
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", required=True, choices=("bf16", "fp16"))
    parser.add_argument("--workdir", required=True)
    parser.add_argument(
        "--models",
        nargs="+",
        default=[
            "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
            "meta-llama/Llama-3.2-1B-Instruct",
            "Qwen/Qwen2.5-0.5B-Instruct",
        ],
    )
    args = parser.parse_args(argv)
    import os

    os.environ["NEUROBRIX_HOME"] = str(Path(args.workdir) / "home")
    from neurobrix import store

    g = torch.Generator().manual_seed(0)
    for name in args.models:
        checkpoint = catalogue_checkpoint(Path(args.workdir) / name.replace("/", "--"), name)
        stored = store.import_model(str(checkpoint), progress=False)
        ids = torch.randint(0, stored.config().vocab_size, (37,), generator=g).tolist()
        for bug in (None, *bugs_for(stored.config(), len(ids))):
            print(
                json.dumps({"model": name, **compare(stored, checkpoint, ids, args.dtype, bug=bug, device="cuda")}),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
