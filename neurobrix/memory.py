"""Will the model and its KV cache fit on the device? Checked before a weight is read.

What a generation holds on the device: the weights (every checkpoint tensor in the run's dtype, q/k/v and
gate/up fused, the embedding once when tied), the KV cache (2 x layers x batch x capacity x kv heads x head
dim), and working memory for the largest activations of one forward pass (a prefill's hidden states,
its fused projections and the logits), counted with a margin for the allocator's rounding and the kernels'
scratch. Too little free memory is refused with both numbers and the longest context that would fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import ModelConfig
from .errors import DeviceError

MARGIN = 1.10  # allocator rounding and the kernels' scratch (split-K and split-KV partial sums) on top
RESERVE = 512 * 2**20  # the CUDA context's own workspace, cuBLAS/Triton launches, the CUDA graph pool


class DeviceMemoryError(DeviceError):
    """The model and its KV cache do not fit in the device's free memory."""


@dataclass(frozen=True)
class MemoryPlan:
    weights: int  # bytes
    kv_cache: int
    activations: int

    @property
    def total(self) -> int:
        return int((self.weights + self.kv_cache + self.activations) * MARGIN) + RESERVE


def weight_bytes(cfg: ModelConfig, itemsize: int) -> int:
    from .model import checkpoint_shapes

    count = 0
    for shape in checkpoint_shapes(cfg).values():
        n = 1
        for s in shape:
            n *= s
        count += n
    return count * itemsize


def kv_bytes(cfg: ModelConfig, itemsize: int, batch: int, capacity: int) -> int:
    return 2 * cfg.num_layers * batch * capacity * cfg.num_kv_heads * cfg.head_dim * itemsize


def activation_bytes(cfg: ModelConfig, itemsize: int, batch: int, prompt: int) -> int:
    from .model import chunk_length

    tokens = batch * min(prompt, chunk_length(batch))  # a long prompt is prefilled a chunk at a time
    widest = max(cfg.qkv_size, 2 * cfg.intermediate_size)  # the fused projections' outputs
    per_token = (4 * cfg.hidden_size + widest + cfg.intermediate_size) * itemsize
    return tokens * per_token + batch * cfg.vocab_size * 4  # logits in fp32 for sampling


def plan(cfg: ModelConfig, itemsize: int, batch: int, prompt: int, capacity: int) -> MemoryPlan:
    return MemoryPlan(
        weight_bytes(cfg, itemsize),
        kv_bytes(cfg, itemsize, batch, capacity),
        activation_bytes(cfg, itemsize, batch, prompt),
    )


def longest_context(cfg: ModelConfig, itemsize: int, batch: int, free: int) -> int:
    """The largest capacity (prompt + new tokens, the prompt taken as the whole of it) that fits in ``free``."""
    lo, hi = 0, max(1, cfg.max_positions)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if plan(cfg, itemsize, batch, mid, mid).total <= free:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def require_fit(
    cfg: ModelConfig, itemsize: int, batch: int, prompt: int, capacity: int, free: int, total: int | None = None
) -> MemoryPlan:
    """The memory plan, or DeviceMemoryError naming what is needed, what is free and what would fit."""
    need = plan(cfg, itemsize, batch, prompt, capacity)
    if need.total <= free:
        return need
    fits = longest_context(cfg, itemsize, batch, free)
    advice = (
        f"the longest context that fits is {fits} tokens (prompt plus --max-tokens)"
        if fits
        else "even the weights alone do not fit: a smaller dtype or another GPU is needed"
    )
    of = f" of {_gib(total)}" if total else ""
    raise DeviceMemoryError(
        f"this generation needs about {_gib(need.total)} of GPU memory (weights {_gib(need.weights)}, KV cache "
        f"{_gib(need.kv_cache)} for {capacity} tokens, working memory and reserve "
        f"{_gib(need.total - need.weights - need.kv_cache)}) but {_gib(free)}{of} is free; {advice}. "
        "Nothing was loaded."
    )
