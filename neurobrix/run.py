"""`neurobrix run`: resolve a stored model, preflight every kernel call, load, generate, report.

Order matters for the promises: the device and its class are settled and every kernel call the
generation will make is resolved to its certified setting *before* a single weight is read.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
import torch

from .dtypes import NAMES as DTYPES
from .dtypes import torch_dtype
from .errors import UsageError
from .generate import Sampling, Stats, generate
from .model import Transformer, weights_from_files
from .config import ModelConfig
from .ops import BACKENDS, TORCH, Ops
from .plan import generation_calls, resolve
from .tables import load as load_tables
from .tokenizer import Tokenizer


@dataclass(frozen=True)
class RunOptions:
    model: str
    prompt: str
    max_tokens: int = 256
    sampling: Sampling = Sampling()
    backend: str = "triton"
    dtype: str | None = None   # default: bf16 on a GPU, fp32 on the CPU
    chat: bool = True
    stream: bool = True


def _device_and_class(backend: str) -> tuple[torch.device, str | None]:
    """(device, certified class id) for the triton backend; (device, None) for torch."""
    from .gpu import detect_class, interpreter_enabled

    if backend == "triton":
        gpu_class = detect_class()  # NoGPUError / UncertifiedGPUError, naming --backend torch
        return torch.device("cpu" if interpreter_enabled() else "cuda"), gpu_class.id
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    return torch.device("cuda" if torch.cuda.is_available() else "cpu"), None


def certified_ops(cfg: ModelConfig, class_id: str, dtype: str, batch: int, prompt_len: int, capacity: int,
                  certify_hint: str = "") -> Ops:
    """The Triton ops for generating ``batch`` sequences of ``prompt_len`` tokens into caches of
    ``capacity``: every call of that generation resolved to its certified setting (MissingEntryError
    listing all that have none)."""
    calls = generation_calls(cfg, batch, prompt_len, capacity, dtype)
    return resolve(calls, load_tables(), class_id, certify_hint).ops()


def load_model(stored, backend: str, dtype: str | None, prompt_len: int, capacity: int, batch: int = 1) -> Transformer:
    """Settle the device and class, resolve every kernel call of this generation to its certified
    setting (the plan), then load the weights."""
    device, class_id = _device_and_class(backend)
    dtype = dtype or ("bf16" if device.type == "cuda" else "fp32")
    if dtype not in DTYPES:
        raise UsageError(f"--dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    cfg = stored.config()
    if class_id is not None:
        hint = (f" --config {stored.path / 'config.json'} --limit prefill_batch={batch}:{batch}"
                f" --limit decode_batch={batch}:{batch} --limit prompt={prompt_len}:{prompt_len}"
                f" --limit capacity={capacity}:{capacity} --limit prefill_tokens={batch * prompt_len}")
        ops = certified_ops(cfg, class_id, dtype, batch, prompt_len, capacity, hint)
    else:
        ops = TORCH
    weights = weights_from_files(cfg, [str(p) for p in stored.weight_files()], torch_dtype(dtype), device)
    return Transformer(cfg, weights, ops, batch=batch, capacity=capacity)


def run(opts: RunOptions, write=sys.stdout.write) -> Stats:
    from . import store

    opts.sampling.validate()
    if opts.max_tokens < 1:
        raise UsageError(f"--max-tokens must be >= 1, got {opts.max_tokens}")
    stored = store.resolve(opts.model)
    cfg = stored.config()
    tokenizer = Tokenizer(stored.path)
    prompt = tokenizer.encode_prompt(opts.prompt, chat=opts.chat)
    if not prompt:
        raise UsageError("the prompt is empty after tokenization; give some text (or drop --no-chat)")
    capacity = len(prompt) + opts.max_tokens
    if capacity > cfg.max_positions:
        raise UsageError(
            f"the prompt ({len(prompt)} tokens) plus --max-tokens {opts.max_tokens} exceeds the model's context "
            f"of {cfg.max_positions} tokens; shorten the prompt or lower --max-tokens"
        )
    model = load_model(stored, opts.backend, opts.dtype, prompt_len=len(prompt), capacity=capacity)

    shown: list[int] = []  # tokens of the current line, decoded together (a character may span tokens)
    printed = [""]          # the part of that line already written

    def on_token(token: int) -> None:
        shown.append(token)
        text = tokenizer.decode(shown)
        if text.endswith("\ufffd"):  # hold back a partial UTF-8 character
            return
        write(text[len(printed[0]):])
        sys.stdout.flush()
        if text.endswith("\n"):  # start a new line: decoding stays proportional to a line, not the text
            shown.clear()
            text = ""
        printed[0] = text

    eos = tokenizer.eos_ids(list(cfg.eos_token_ids) or None)
    out, stats = generate(model, prompt, opts.max_tokens, opts.sampling, eos,
                          on_token if opts.stream else None, use_graph=True)
    write(tokenizer.decode(shown)[len(printed[0]):] if opts.stream else tokenizer.decode(out))
    write("\n")
    return stats
