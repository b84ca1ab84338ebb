"""The peer a PyTorch user would pick for single-GPU decode: a gpt-fast-style Llama under torch.compile.

Written here after gpt-fast's recipe (pytorch-labs/gpt-fast, model.py and generate.py), on the very
weights the engine benchmark builds (the same fused layouts: q/k/v in one projection, gate/up in one):

* an nn.Module Llama (``Attention`` with fused ``wqkv``, ``FeedForward`` with fused ``w13``, RMSNorm
  through ``F.rms_norm``), rotary embedding in the "rotate half" convention of Hugging Face checkpoints;
* a static KV cache per layer ([B, Hkv, S, D] buffers written with ``index_copy_``) and SDPA over the
  whole cache with a boolean mask, as gpt-fast does;
* the decode step (forward + greedy pick) under ``torch.compile(mode="reduce-overhead",
  fullgraph=True)`` with inductor's coordinate-descent tuning, so inductor's generated Triton kernels
  run inside CUDA graphs; prefill eager, as gpt-fast's default.

Benchmark code, never part of the engine: it times, and it tunes on first use.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from neurobrix.model import Weights
from neurobrix.ops import rope_cache


class KVCache(nn.Module):
    def __init__(self, batch: int, capacity: int, heads: int, head_dim: int, dtype: torch.dtype) -> None:
        super().__init__()
        shape = (batch, heads, capacity, head_dim)
        self.register_buffer("k_cache", torch.zeros(shape, dtype=dtype, device="cuda"))
        self.register_buffer("v_cache", torch.zeros(shape, dtype=dtype, device="cuda"))

    def update(self, input_pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # input_pos: [S], k, v: [B, H, S, D]
        self.k_cache.index_copy_(2, input_pos, k)
        self.v_cache.index_copy_(2, input_pos, v)
        return self.k_cache, self.v_cache


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    # x: [B, S, H, D]; cos, sin: [S, D/2] fp32
    x1, x2 = x.float().chunk(2, dim=-1)
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).to(x.dtype)


class Attention(nn.Module):
    def __init__(
        self, cfg: Any, wqkv: torch.Tensor, bias: torch.Tensor | None, wo: torch.Tensor, batch: int, capacity: int
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.wqkv, self.bqkv, self.wo = (
            nn.Parameter(wqkv, requires_grad=False),
            bias,
            nn.Parameter(wo, requires_grad=False),
        )
        self.kv_cache = KVCache(batch, capacity, cfg.num_kv_heads, cfg.head_dim, wqkv.dtype)

    def forward(
        self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor, input_pos: torch.Tensor
    ) -> torch.Tensor:
        cfg = self.cfg
        B, S, _ = x.shape
        hq, hkv, d = cfg.num_heads * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim, cfg.head_dim
        q, k, v = F.linear(x, self.wqkv, self.bqkv).split([hq, hkv, hkv], dim=-1)
        q = apply_rotary(q.view(B, S, cfg.num_heads, d), cos, sin)
        k = apply_rotary(k.view(B, S, cfg.num_kv_heads, d), cos, sin)
        v = v.view(B, S, cfg.num_kv_heads, d)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        k, v = self.kv_cache.update(input_pos, k, v)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        return F.linear(y.transpose(1, 2).contiguous().view(B, S, hq), self.wo)


class Block(nn.Module):
    def __init__(self, cfg: Any, layer: Any, batch: int, capacity: int) -> None:
        super().__init__()
        self.eps = cfg.rms_norm_eps
        self.attention = Attention(cfg, layer.qkv, layer.qkv_bias, layer.o, batch, capacity)
        self.attention_norm, self.ffn_norm = layer.attn_norm, layer.mlp_norm
        self.w13 = nn.Parameter(layer.gate_up, requires_grad=False)
        self.w2 = nn.Parameter(layer.down, requires_grad=False)

    def forward(
        self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor, input_pos: torch.Tensor
    ) -> torch.Tensor:
        h = x + self.attention(F.rms_norm(x, (x.shape[-1],), self.attention_norm, self.eps), cos, sin, mask, input_pos)
        gate, up = F.linear(F.rms_norm(h, (h.shape[-1],), self.ffn_norm, self.eps), self.w13).chunk(2, dim=-1)
        return h + F.linear(F.silu(gate) * up, self.w2)


class PeerLlama(nn.Module):
    def __init__(self, cfg: Any, weights: Weights, batch: int, capacity: int) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = weights.embed
        self.layers = nn.ModuleList(Block(cfg, layer, batch, capacity) for layer in weights.layers)
        self.norm, self.output = weights.norm, weights.lm_head
        cos, sin = rope_cache(cfg.head_dim, cfg.rope_theta, capacity, cfg.rope_scaling, "cuda")
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)
        self.register_buffer("causal", torch.tril(torch.ones(capacity, capacity, dtype=torch.bool, device="cuda")))

    def forward(self, tokens: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        # tokens: [B, S]; input_pos: [S] -> logits of the last position [B, vocab]
        mask = self.causal[None, None, input_pos]
        cos, sin = self.cos[input_pos], self.sin[input_pos]
        x = self.embed[tokens]
        for layer in self.layers:
            x = layer(x, cos, sin, mask, input_pos)
        x = F.rms_norm(x[:, -1], (x.shape[-1],), self.norm, self.cfg.rms_norm_eps)
        return F.linear(x, self.output)


# The Triton settings the peer's compiler left (inductor points TRITON_PTXAS_PATH at torch's own ptxas the first
# time it compiles in a process, torch 2.11 on the H200, 2026-12-02), given back to each later peer run.
_PEER_TRITON: dict[str, Any] = {}


def _triton_state() -> dict[str, Any]:
    """The process's TRITON_* variables and the attributes set on each group of ``triton.knobs``."""
    import triton

    state: dict[str, Any] = {f"env {k}": v for k, v in os.environ.items() if k.startswith("TRITON_")}
    for name, group in vars(getattr(triton, "knobs", object())).items():
        if type(group).__name__.endswith("_knobs"):
            state[f"knobs {name}"] = dict(vars(group))
    return state


def _set_triton_state(state: dict[str, Any]) -> None:
    import triton

    for key in [k for k in os.environ if k.startswith("TRITON_")]:
        del os.environ[key]
    os.environ.update({k[4:]: v for k, v in state.items() if k.startswith("env ")})
    for key, attrs in state.items():
        if key.startswith("knobs "):
            group = getattr(triton.knobs, key[6:])
            vars(group).clear()
            vars(group).update(attrs)


@contextlib.contextmanager
def own_triton_settings() -> Iterator[None]:
    """Run the peer with the Triton settings its compiler gave it, and give the rest of the process its own back.
    Inductor sets TRITON_PTXAS_PATH (another ptxas) in the process: the engine's certified path then refuses to
    run (other binaries than the ones its settings were proven with), and an engine kernel compiled after it
    would be another ptxas's code."""
    engine = _triton_state()
    if _PEER_TRITON:
        _set_triton_state(_PEER_TRITON)
    try:
        yield
    finally:
        _PEER_TRITON.clear()
        _PEER_TRITON.update(_triton_state())
        _set_triton_state(engine)


def decode_one_token(model: PeerLlama, token: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
    return model(token, input_pos).argmax(dim=-1, keepdim=True)


def time_ms(fn: Any, repeats: int) -> list[float]:
    """Wall time of ``fn()`` to its result on the GPU, ``repeats`` times, in ms."""
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1000)
    return times


@own_triton_settings()
def prefill_only(cfg: Any, weights: Weights, prompts: list[list[int]], repeats: int = 7) -> dict[str, Any]:
    """The peer's time to first token alone (its prefill is eager, so nothing is compiled for it): two
    warm-up prefills, then ``repeats`` timed ones."""
    import statistics

    batch, seq = len(prompts), len(prompts[0])
    model = PeerLlama(cfg, weights, batch, seq + 1).eval()
    tokens = torch.tensor(prompts, device="cuda")
    with torch.inference_mode():

        def prefill() -> torch.Tensor:
            return model(tokens, torch.arange(seq, device="cuda")).argmax(dim=-1, keepdim=True)

        time_ms(prefill, 2)
        ttfts = time_ms(prefill, repeats)
    return {"ttft_ms": round(statistics.median(ttfts), 2), "ttft_ms_all": [round(t, 2) for t in ttfts]}


@own_triton_settings()
def run(cfg: Any, weights: Weights, prompts: list[list[int]], new: int, repeats: int = 7) -> dict[str, Any]:
    """Prefill (eager), then ``new`` tokens greedily with the compiled decode step. Returns decode tokens/s,
    the compile time (the first decode steps: tracing, inductor's tuning, graph capture), time to first
    token (median of ``repeats`` prefills)."""
    import statistics

    import torch._inductor.config as inductor_config

    inductor_config.coordinate_descent_tuning = True
    inductor_config.triton.unique_kernel_names = True
    torch._dynamo.reset()
    batch, seq = len(prompts), len(prompts[0])
    model = PeerLlama(cfg, weights, batch, seq + new).eval()
    step = torch.compile(decode_one_token, mode="reduce-overhead", fullgraph=True)
    tokens = torch.tensor(prompts, device="cuda")
    with torch.inference_mode():

        def prefill() -> torch.Tensor:
            return model(tokens, torch.arange(seq, device="cuda")).argmax(dim=-1, keepdim=True)

        def generate(count: int) -> torch.Tensor:
            token = prefill()
            for i in range(count - 1):
                token = step(model, token.clone(), torch.tensor([seq + i], device="cuda"))
            return token

        torch.cuda.synchronize()
        start = time.perf_counter()
        generate(4)  # compile: tracing, coordinate-descent tuning, CUDA graph recording
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - start
        generate(4)  # warm
        ttfts = time_ms(prefill, repeats)
        torch.cuda.synchronize()
        start = time.perf_counter()
        first = prefill()
        torch.cuda.synchronize()
        decode_start = time.perf_counter()
        token = first
        for i in range(new - 1):
            token = step(model, token.clone(), torch.tensor([seq + i], device="cuda"))
        torch.cuda.synchronize()
        end = time.perf_counter()
    torch._dynamo.reset()  # the compiled step and its graphs go with this call
    return {
        "generated": batch * new,
        "ttft_ms": round(statistics.median(ttfts), 2),
        "ttft_ms_all": [round(t, 2) for t in ttfts],
        "decode_tok_s": round(batch * (new - 1) / (end - decode_start), 1),
        "decode_tok_s_per_sequence": round((new - 1) / (end - decode_start), 1),
        "compile_s": round(compile_s, 1),
        "total_s": round(end - start, 3),
    }
