"""The Llama-family transformer (Llama 2/3, Mistral, Qwen2) over an ops backend, with a static KV cache.

Preflight (``neurobrix.plan``) lists this forward pass's kernel calls by running it on meta tensors
with a recording backend, and resolves each to its certified setting before any weight is loaded.
Weights are fused at load time: q/k/v into one projection, gate/up into one, so a layer makes 5
GEMMs-or-GEMVs, 2 norms (fused with the residual adds), 1 rotary, 1 attention and 1 SiLU-mul.

A prompt longer than one prefill takes (``chunk_length``) is prefilled in chunks: the first chunk is the
remainder (1 .. chunk tokens, an ordinary causal prefill), every later one exactly ``chunk`` tokens whose
queries attend to the cache written so far (``attention_chunk``). So the chunk kernel always sees C = chunk,
and each forward stays within the token counts the other kernels are certified for.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .config import (
    ModelConfig,
    checkpoint_shapes,  # noqa: F401 (its home before config.py)
    initialised,
)
from .errors import UsageError, expect
from .ops import Ops, rope_cache


class WeightsError(UsageError):
    """The checkpoint's tensors do not match its config.json (missing, extra shapes, wrong sizes)."""


class UnreadableWeightsError(WeightsError):
    """A safetensors file that safetensors cannot read (bytes altered after it was checked)."""


@dataclass
class Layer:
    attn_norm: torch.Tensor  # [hidden]
    qkv: torch.Tensor  # [(Hq + 2 Hkv) D, hidden]
    qkv_bias: torch.Tensor | None
    o: torch.Tensor  # [hidden, Hq D]
    mlp_norm: torch.Tensor  # [hidden]
    gate_up: torch.Tensor  # [2 I, hidden]
    down: torch.Tensor  # [hidden, I]
    # Llama's attention_bias (o's bias; q/k/v's are qkv_bias) and mlp_bias (gate's then up's, as gate_up; down's)
    o_bias: torch.Tensor | None = None  # [hidden]
    gate_up_bias: torch.Tensor | None = None  # [2 I]
    down_bias: torch.Tensor | None = None  # [hidden]


@dataclass
class Weights:
    embed: torch.Tensor  # [vocab, hidden]
    layers: list[Layer]
    norm: torch.Tensor  # [hidden]
    lm_head: torch.Tensor  # [vocab, hidden] (the embedding itself when tied)


def fuse_weights(
    cfg: ModelConfig,
    get: Callable[[str], torch.Tensor],
    names: set[str],
    dtype: torch.dtype,
    device: torch.device | str,
) -> Weights:
    """Build the engine's fused weights from Hugging Face tensor names; ``get`` loads one tensor."""
    shapes = checkpoint_shapes(cfg)
    used: set[str] = set()
    filled: list[str] = []  # missing biases and norm weights, filled as transformers fills them (said on stderr)
    extremes: dict[str, torch.Tensor] = {}  # each tensor feeding the layers -> its [min, max] as the run holds it

    def take(name: str, feeds_layers: bool = True) -> torch.Tensor:
        used.add(name)
        if name not in names and initialised(name) is not None:  # as transformers fills it: zeros or ones
            filled.append(name)
            return torch.full(shapes[name], initialised(name), dtype=dtype, device=device)
        if name not in names:
            raise WeightsError(f"checkpoint has no tensor '{name}'")
        tensor = get(name)
        if tuple(tensor.shape) != shapes[name]:
            raise WeightsError(
                f"tensor '{name}' has shape {list(tensor.shape)}, config.json implies {list(shapes[name])}"
            )
        tensor = tensor.to(device=device, dtype=dtype)
        if feeds_layers and tensor.numel() and not tensor.is_meta:  # (a meta tensor, recording a pass: no values)
            extremes[name] = torch.stack(torch.aminmax(tensor))  # NaN propagates: one read, no mask of its size
        return tensor

    layers = []
    for n in range(cfg.num_layers):
        p = f"model.layers.{n}."
        bias = gate_up_bias = None
        if cfg.qkv_bias:
            bias = torch.cat([take(p + f"self_attn.{x}_proj.bias") for x in ("q", "k", "v")])
        if cfg.mlp_bias:  # in gate_up's order: gate's rows, then up's
            gate_up_bias = torch.cat([take(p + "mlp.gate_proj.bias"), take(p + "mlp.up_proj.bias")])
        layers.append(
            Layer(
                attn_norm=take(p + "input_layernorm.weight"),
                qkv=torch.cat([take(p + f"self_attn.{x}_proj.weight") for x in ("q", "k", "v")]),
                qkv_bias=bias,
                o=take(p + "self_attn.o_proj.weight"),
                mlp_norm=take(p + "post_attention_layernorm.weight"),
                gate_up=torch.cat([take(p + "mlp.gate_proj.weight"), take(p + "mlp.up_proj.weight")]),
                down=take(p + "mlp.down_proj.weight"),
                o_bias=take(p + "self_attn.o_proj.bias") if cfg.o_bias else None,
                gate_up_bias=gate_up_bias,
                down_bias=take(p + "mlp.down_proj.bias") if cfg.mlp_bias else None,
            )
        )
    embed_name, head_name = "model.embed_tokens.weight", "lm_head.weight"
    if not cfg.tie_word_embeddings:
        if head_name not in names:
            raise WeightsError("checkpoint has no tensor 'lm_head.weight' and config.json does not tie embeddings")
        embed, lm_head = take(embed_name), take(head_name, feeds_layers=False)
    elif head_name in names:
        # transformers' from_pretrained ties the two as it finds them: a checkpoint holding only the head gives it to
        # the embedding too, and one holding both with different values keeps each (the file is believed over
        # config.json, with a warning); equal ones are one tensor
        shapes[head_name] = shapes[embed_name]
        head = take(head_name, feeds_layers=embed_name not in names)
        embed = take(embed_name) if embed_name in names else head
        lm_head = embed if torch.equal(head, embed) else head
    else:
        embed = take(embed_name)
        lm_head = embed
    norm = take("model.norm.weight", feeds_layers=False)
    _refuse_non_finite(extremes, dtype)
    unused = sorted(n for n in names - used if not n.endswith("rotary_emb.inv_freq"))
    if unused:
        shown = ", ".join(unused[:5]) + (f" and {len(unused) - 5} more" if len(unused) > 5 else "")
        raise WeightsError(
            f"checkpoint has tensors this engine would ignore ({shown}): its config.json "
            "describes a variant NeuroBrix does not run"
        )
    if filled:  # transformers warns of the tensors it initialises; the user learns it here too, once a load
        shown = ", ".join(filled[:3]) + (f" and {len(filled) - 3} more" if len(filled) > 3 else "")
        print(
            f"note: the checkpoint lacks {shown}: filled with "
            + " and ".join(
                sorted({"zeros (a bias)" if initialised(n) == 0.0 else "ones (a norm weight)" for n in filled})
            )
            + ", as transformers' from_pretrained fills them",
            file=sys.stderr,
        )
    return Weights(embed, layers, norm, lm_head)


def _refuse_non_finite(extremes: dict[str, torch.Tensor], dtype: torch.dtype) -> None:
    """Refuse (WeightsError) weights holding NaN or an infinity, as the run holds them (a float32 value past float16's
    range is one once cast), in a tensor that feeds the layers: the embedding and every layer's. From there a NaN or an
    infinity reaches the attention scores, where transformers' own kernels part: PyTorch's CPU SDPA reads a score row
    of NaN as masked (its head's output 0) in its fused kernel and gives NaN in its masked one, and the engine's
    attention gives NaN, so transformers' text is another than the engine's (text round 48: a NaN in q_proj or k_proj
    gave transformers finite logits, the engine NaN ones from the second token on). The final norm and an untied head
    only scale the logits, whose NaN and infinities the greedy pick and the processors take as transformers' do: not
    refused. ``extremes``: each tensor's [min, max] (NaN where it holds one), read from the device once."""
    if not extremes:
        return
    finite = torch.isfinite(torch.stack(list(extremes.values()))).all(dim=-1).tolist()
    bad = [name for name, ok in zip(extremes, finite) if not ok]
    if bad:
        low, high = extremes[bad[0]].tolist()
        what = "NaN" if low != low else "an infinity"
        more = f" (and {len(bad) - 1} more tensors)" if len(bad) > 1 else ""
        raise WeightsError(
            f"tensor '{bad[0]}' holds {what} in {str(dtype).removeprefix('torch.')}{more}: a weight that is not finite "
            "reaches the attention scores, whose NaN transformers' own kernels treat in different ways (read as masked "
            "on one path, NaN on another), so its text cannot be matched; the checkpoint is damaged, or its values "
            "overflow this dtype (try --dtype fp32)"
        )


def meta_weights(cfg: ModelConfig, dtype: torch.dtype) -> Weights:
    """Weights of this config's fused shapes on the meta device: no memory, for recording a forward pass.

    Built directly in the fused layout rather than through ``fuse_weights``: ``torch.cat`` of meta tensors
    runs PyTorch's Python reference implementation, whose first use imports torch._dynamo (~3 s of every
    `run`'s start on a 2-core machine). tests/test_engine.py holds the shapes equal to ``fuse_weights``'."""

    def empty(*shape: int) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype, device="meta")

    h, d, i = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size
    qkv = (cfg.num_heads + 2 * cfg.num_kv_heads) * d
    layers = [
        Layer(
            attn_norm=empty(h),
            qkv=empty(qkv, h),
            qkv_bias=empty(qkv) if cfg.qkv_bias else None,
            o=empty(h, cfg.num_heads * d),
            mlp_norm=empty(h),
            gate_up=empty(2 * i, h),
            down=empty(h, i),
            o_bias=empty(h) if cfg.o_bias else None,
            gate_up_bias=empty(2 * i) if cfg.mlp_bias else None,
            down_bias=empty(h) if cfg.mlp_bias else None,
        )
        for _ in range(cfg.num_layers)
    ]
    embed = empty(cfg.vocab_size, h)
    return Weights(embed, layers, empty(h), embed if cfg.tie_word_embeddings else empty(cfg.vocab_size, h))


class KVCache:
    """Static per-layer caches k, v: [B, capacity, Hkv, D]; position p of sequence b at [b, p]."""

    def __init__(self, cfg: ModelConfig, batch: int, capacity: int, dtype: torch.dtype, device) -> None:
        shape = (batch, capacity, cfg.num_kv_heads, cfg.head_dim)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.num_layers)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.num_layers)]
        self.capacity = capacity


PREFILL_TOKENS = 4096  # at most batch x tokens in one forward pass of a prefill
PREFILL_SEQ = 2048  # at most this many tokens per sequence in one forward pass


def _projected(
    ops: Ops, y: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, parts: tuple[int, ...]
) -> torch.Tensor:
    """``ops.linear(y, weight, bias)`` for a weight stacked from separate projections of ``parts`` rows each (q, k
    and v; gate and up). PyTorch's kernels on the CPU project each part apart, the calls transformers makes: PyTorch
    picks a CPU matmul by its size (oneDNN's above 16^3 multiply-adds, its own loop below: a decode step's k and v
    projections of a small model fall on either side of a stacked one), and two kernels can round a bf16 or fp16 sum
    otherwise on some hosts (text round 42; CI once saw other bits than transformers' in one decode step). A GPU, and
    the certified kernels (whose plan names the stacked call), make one call. Each part is copied into the stacked
    output as soon as it is made: one part beside the output at a time, within what ``memory.activation_bytes``
    counts (a concatenation held every part and the output at once)."""
    if ops.name != "torch" or y.device.type != "cpu":
        return ops.linear(y, weight, bias)
    out = y.new_empty((*y.shape[:-1], weight.shape[0]))
    start = 0
    for rows in parts:
        out[..., start : start + rows] = ops.linear(
            y, weight[start : start + rows], None if bias is None else bias[start : start + rows]
        )
        start += rows
    return out


def chunk_length(batch: int) -> int:
    """The tokens per sequence of one prefill chunk at this batch: PREFILL_SEQ, or the largest power of two
    keeping batch x chunk within PREFILL_TOKENS."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    fit = max(1, PREFILL_TOKENS // batch)
    return min(PREFILL_SEQ, 1 << (fit.bit_length() - 1))


def prefill_chunks(length: int, chunk: int) -> list[tuple[int, int]]:
    """(start, tokens) of each forward pass prefilling ``length`` tokens: one pass when it fits in ``chunk``,
    else the remainder first (1 .. chunk tokens), then passes of exactly ``chunk``."""
    if length < 1 or chunk < 1:
        raise ValueError(f"length and chunk must be >= 1, got {length} and {chunk}")
    first = length - (length - 1) // chunk * chunk
    return [(0, first)] + [(start, chunk) for start in range(first, length, chunk)]


class Transformer:
    def __init__(
        self, cfg: ModelConfig, weights: Weights, ops: Ops, batch: int, capacity: int, chunk: int | None = None
    ) -> None:
        """``chunk``: tokens per sequence of one prefill pass (default ``chunk_length(batch)``)."""
        # a count of another type or below 1 (batch 0, a capacity of 8.0 or True, a chunk of 2.5) failed in
        # chunk_length's ValueError, in torch.zeros' TypeError or RuntimeError, or in the first prefill
        for name, value in (("batch", batch), ("capacity", capacity), ("chunk", chunk)):
            expect(f"the model's {name}", value, "an integer", optional=name == "chunk")
            if value is not None and value < 1:
                raise UsageError(f"the model's {name} must be an integer >= 1, got {value}")
        self.cfg, self.w, self.ops = cfg, weights, ops
        self.chunk = chunk_length(batch) if chunk is None else chunk
        device, dtype = weights.embed.device, weights.embed.dtype
        if max(batch * capacity * cfg.num_kv_heads * cfg.head_dim * dtype.itemsize, capacity * 8) >= 2**63:
            # torch cannot describe such a tensor, even on the meta device the preflight and warmup's planning record
            # on: its "Storage size calculation overflowed" or "Overflow when unpacking long long" was a traceback
            from .memory import DeviceMemoryError

            raise DeviceMemoryError(
                f"a KV cache of {capacity} positions is past the 2**63 bytes a tensor can hold: no device holds it; "
                "lower --max-tokens (or --max-prompt)"
            )
        self.cache = KVCache(cfg, batch, capacity, dtype, device)
        if device.type == "meta" and capacity <= cfg.max_positions:
            # the preflight's recording reads shapes only: rope_cache computes a meta device's tables on the CPU and
            # so did the positions' arange (capacity x head_dim / 2 floats, three times), so that `run --max-tokens`
            # within a config.json's context of 2**45 ended the preflight in the CPU allocator's RuntimeError (a
            # traceback) before the memory check; the tables' width (and rope_cache's checks) from one position
            width = rope_cache(cfg.head_dim, cfg.rope_theta, 1, cfg.rope_scaling, "cpu")[0].shape[1]
            self.cos = self.sin = torch.empty((capacity, width), dtype=torch.float32, device=device)
            self.positions = torch.empty((capacity,), dtype=torch.long, device=device)
        else:
            self.cos, self.sin = rope_cache(cfg.head_dim, cfg.rope_theta, capacity, cfg.rope_scaling, device)
            # every cache position, made on the CPU and moved (an arange made on the meta device imports sympy
            # through PyTorch's reference implementations: ~1 s of every `run`'s preflight on a 2-core machine)
            self.positions = torch.arange(capacity).to(device)
        self.scale = cfg.head_dim**-0.5
        self.graphs: dict[str, Any] = {}  # CUDA graphs of this model's passes, kept by neurobrix.generate
        # held by each generation (neurobrix.generate): the KV cache, graphs and decode state are this model's, one
        # generation's at a time
        self.generating = threading.Lock()

    def prefill(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits [B, vocab] of each prompt's last token, its k and v written to the cache at positions 0..;
        tokens [B, L], in chunks of ``self.chunk`` tokens (``prefill_chunks``)."""
        B, L = tokens.shape
        if L > self.cache.capacity:
            raise UsageError(f"a {L}-token prompt does not fit a KV cache of {self.cache.capacity} positions")
        passes = prefill_chunks(L, self.chunk)
        logits = None
        for n, (start, size) in enumerate(passes):
            positions = self.positions[start : start + size][None, :].expand(B, size)
            logits = self.forward(
                tokens[:, start : start + size], positions, None, past=start, logits=n == len(passes) - 1
            )
        assert logits is not None
        return logits

    def forward(
        self,
        tokens: torch.Tensor,
        positions: torch.Tensor,
        lengths: torch.Tensor | None,
        past: int = 0,
        logits: bool = True,
    ) -> torch.Tensor | None:
        """Logits [B, vocab] of each sequence's last token (None when ``logits`` is off: a prefill chunk
        before the last, which only writes the cache).

        tokens, positions: [B, S]. Prefill (lengths None): S prompt tokens at positions past..past+S-1, the
        cache's first ``past`` positions written by earlier chunks. Decode (S = 1): lengths [B] = positions
        + 1, the filled cache length after this token.
        """
        cfg, ops = self.cfg, self.ops
        B, S = tokens.shape
        hq, hkv, d = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        # residual stream [T, hidden] (index_select: the same rows as indexing, and on meta tensors it
        # needs none of PyTorch's Python checks, which import sympy)
        h = torch.index_select(self.w.embed, 0, tokens.reshape(-1))
        x = None  # last block's output, added into h
        for n, layer in enumerate(self.w.layers):
            # attention block
            if x is None:
                y = ops.rms_norm(h, layer.attn_norm, cfg.rms_norm_eps)
            else:
                y, h = ops.rms_norm(x, layer.attn_norm, cfg.rms_norm_eps, residual=h)
            qkv = _projected(ops, y, layer.qkv, layer.qkv_bias, (hq * d, hkv * d, hkv * d)).view(B, S, hq + 2 * hkv, d)
            k_cache, v_cache = self.cache.k[n], self.cache.v[n]
            # rotary also appends this step's k and v to the cache at their positions (one launch)
            q, _ = ops.rotary(
                qkv[:, :, :hq],
                qkv[:, :, hq : hq + hkv],
                self.cos,
                self.sin,
                positions,
                v=qkv[:, :, hq + hkv :],
                k_cache=k_cache,
                v_cache=v_cache,
            )
            if lengths is None and past == 0:
                attn = ops.attention_prefill(q, k_cache[:, :S], v_cache[:, :S], self.scale)  # [B, S, Hq, D]
            elif lengths is None:  # a later chunk: over the cache so far and itself
                end = past + S
                attn = ops.attention_chunk(q, k_cache[:, :end], v_cache[:, :end], self.scale)  # [B, S, Hq, D]
            else:
                attn = ops.attention_decode(q[:, 0], k_cache, v_cache, lengths, self.scale)  # [B, Hq, D]
            x = ops.linear(attn.reshape(B * S, hq * d), layer.o, layer.o_bias)
            # the attention block's outputs freed before the MLP's widest ones are made (they were held until the next
            # layer rebound them: T x (q/k/v + 2 Hq D) more at the prefill's peak than memory.activation_bytes counts)
            del qkv, q, attn
            # MLP block
            y, h = ops.rms_norm(x, layer.mlp_norm, cfg.rms_norm_eps, residual=h)
            del x
            gate_up = _projected(ops, y, layer.gate_up, layer.gate_up_bias, (layer.gate_up.shape[0] // 2,) * 2)
            x = ops.linear(ops.silu_mul(gate_up), layer.down, layer.down_bias)
            del gate_up
        if not logits:
            return None
        y, h = ops.rms_norm(x, self.w.norm, cfg.rms_norm_eps, residual=h)
        last = y.view(B, S, -1)[:, -1]  # [B, hidden]
        return ops.linear(last.contiguous(), self.w.lm_head)  # [B, vocab]


def load_safetensors(
    files: list[str], names_out: set[str], cfg: ModelConfig | None = None
) -> Callable[[str], torch.Tensor]:
    """A lazy tensor getter over safetensors files (never pickle); fills ``names_out`` with every name. Given the
    model's ``cfg``, each key is named as transformers' from_pretrained names it (``checkpoint.hf_name``: a base
    model's checkpoint, keys without "model.", loads as the whole model's)."""
    from safetensors import SafetensorError, safe_open

    from .checkpoint import WEIGHT_DTYPES, hf_name, model_names

    known = model_names(cfg) if cfg is not None else None
    where: dict[str, tuple[str, str]] = {}  # name -> (file, the key it is stored under)
    for path in files:
        try:
            with safe_open(path, framework="pt") as f:
                for key in f.keys():
                    name = hf_name(key, known) if known is not None else key
                    if name in where:  # the import refuses it: one of the two files was altered since
                        raise UnreadableWeightsError(
                            f"tensor {name} is stored twice, in {Path(where[name][0]).name} and in {Path(path).name}"
                        )
                    where[name] = (path, key)
                    dtype = f.get_slice(key).get_dtype()  # the header's, before any tensor is read
                    if dtype not in WEIGHT_DTYPES:
                        raise WeightsError(
                            f"{Path(path).name}: tensor {key} is stored as {dtype}, not as a floating-point weight "
                            f"({', '.join(WEIGHT_DTYPES)}): it would be cast, not dequantized"
                        )
        except (SafetensorError, OSError) as exc:
            raise UnreadableWeightsError(f"{Path(path).name} cannot be read as safetensors ({exc})") from exc
    names_out.update(where)

    def get(name: str) -> torch.Tensor:
        path, key = where[name]
        try:
            with safe_open(path, framework="pt") as f:
                return f.get_tensor(key)
        except (SafetensorError, OSError) as exc:
            raise UnreadableWeightsError(f"{Path(path).name}: tensor {key} cannot be read ({exc})") from exc

    return get


def weights_from_files(cfg: ModelConfig, files: list[str], dtype: torch.dtype, device) -> Weights:
    names: set[str] = set()
    get = load_safetensors(files, names, cfg)
    return fuse_weights(cfg, get, names, dtype, device)
