"""Will the model and its KV cache fit on the device? Checked before a weight is read.

What a generation holds on the device: the weights (every checkpoint tensor in the run's dtype, q/k/v and
gate/up fused, the embedding once when tied, and a head of its own where a tied checkpoint's file holds one beside
the embedding: ``weight_bytes``), the KV cache (2 x layers x batch x capacity x kv heads x head
dim), and working memory for the largest activations of one forward pass (a prefill's hidden states,
its fused projections or its attention block's outputs, a chunk's causal mask, the logits and the sampler's copies of
them: ``activation_bytes``, an upper bound of every tensor alive at a CPU run's peak, tests/test_strict_round52.py),
counted with a margin for the allocator's rounding and the kernels' scratch. Too little free memory is refused with
both numbers and the longest context that would fit.
On the interpreter's CPU (and the torch backend's) the same plan is held in the host's memory and checked
against what the host has available, or what the tightest cgroup memory limit over the process leaves (a container's,
which the host's figure does not see), without the GPU's reserve.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass

from .config import ModelConfig
from .errors import DeviceError, counted

MARGIN = 1.10  # allocator rounding and the kernels' scratch (split-K and split-KV partial sums) on top
RESERVE = 512 * 2**20  # the CUDA context's own workspace, cuBLAS/Triton launches, the CUDA graph pool


class DeviceMemoryError(DeviceError):
    """The model and its KV cache do not fit in the device's free memory."""


@dataclass(frozen=True)
class MemoryPlan:
    weights: int  # bytes
    kv_cache: int
    activations: int
    reserve: int = RESERVE

    @property
    def total(self) -> int:
        return int((self.weights + self.kv_cache + self.activations) * MARGIN) + self.reserve


EMBED, HEAD = "model.embed_tokens.weight", "lm_head.weight"


def weight_bytes(cfg: ModelConfig, itemsize: int, names: Collection[str] = ()) -> int:
    """The bytes of the loaded weights. ``names``: the checkpoint's tensor names (its safetensors headers), where known.
    A config tying the embeddings whose file holds both the embedding and a head keeps both tensors when their values
    differ, as transformers does (``model.fuse_weights``): the head is counted then, which is an upper bound by vocab x
    hidden where the two are equal (one tensor held; telling them apart needs their bytes, read after the check)."""
    from .model import checkpoint_shapes

    shapes = checkpoint_shapes(cfg)
    if cfg.tie_word_embeddings and EMBED in names and HEAD in names:
        shapes[HEAD] = shapes[EMBED]
    count = 0
    for shape in shapes.values():
        n = 1
        for s in shape:
            n *= s
        count += n
    return count * itemsize


def kv_bytes(cfg: ModelConfig, itemsize: int, batch: int, capacity: int) -> int:
    return 2 * cfg.num_layers * batch * capacity * cfg.num_kv_heads * cfg.head_dim * itemsize


# bytes per logit of a step's rows while its token is picked: the logits and the sampler's float32 copies, masks, sorted
# values and their int64 indices; 54 at most measured on the CPU (--backend torch, tests/test_strict_round52.py) with
# every filter on at once (top-k, top-p, min-p, typical-p, epsilon and eta cutoffs, a repetition penalty, renormalized)
LOGIT_BYTES = 64


def activation_bytes(cfg: ModelConfig, itemsize: int, batch: int, prompt: int, capacity: int = 0) -> int:
    """The largest working memory of one forward pass and its token's pick, an upper bound on both backends: per
    prefill token the residual stream, a norm's output and its float32 scratch (4 x hidden), beside the MLP's widest
    outputs (the fused gate/up and its product) or the attention block's (the fused q/k/v, the rotated queries and their
    temporaries, the attention's output: 3 x heads x head dim, which passes the MLP's where head_dim x heads passes the
    hidden size); a chunked prefill's causal mask of chunk x ``capacity`` booleans and its copy (the torch backend's
    chunk attention); ``LOGIT_BYTES`` per logit of the batch."""
    from .model import chunk_length

    chunk = min(prompt, chunk_length(batch))
    tokens = batch * chunk  # a long prompt is prefilled a chunk at a time
    widest = max(cfg.qkv_size, 2 * cfg.intermediate_size)  # the fused projections' outputs
    attention = cfg.qkv_size + 3 * cfg.num_heads * cfg.head_dim
    per_token = (4 * cfg.hidden_size + max(widest + cfg.intermediate_size, attention)) * itemsize
    mask = 2 * chunk * capacity if prompt > chunk else 0
    return tokens * per_token + mask + batch * cfg.vocab_size * LOGIT_BYTES


def rotary_bytes(cfg: ModelConfig, capacity: int) -> int:
    """The model's rotary tables and positions at their peak while made: the angles, their cos and sin (fp32, head_dim /
    2 wide at most) and the positions' int64 and fp32 aranges, per cache position. Beside a one-layer model's KV cache
    of one small head they are as large as the cache."""
    return capacity * (3 * (cfg.head_dim // 2) * 4 + 8 + 4)


def plan(
    cfg: ModelConfig,
    itemsize: int,
    batch: int,
    prompt: int,
    capacity: int,
    reserve: int = RESERVE,
    names: Collection[str] = (),
) -> MemoryPlan:
    """``names``: the checkpoint's tensor names, where known (``weight_bytes``)."""
    return MemoryPlan(
        weight_bytes(cfg, itemsize, names),
        kv_bytes(cfg, itemsize, batch, capacity),
        activation_bytes(cfg, itemsize, batch, prompt, capacity) + rotary_bytes(cfg, capacity),
        reserve,
    )


def longest_context(
    cfg: ModelConfig, itemsize: int, batch: int, free: int, reserve: int = RESERVE, names: Collection[str] = ()
) -> int:
    """The largest capacity (prompt + new tokens, the prompt taken as the whole of it) that fits in ``free``."""
    lo, hi = 0, max(1, cfg.max_positions)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if plan(cfg, itemsize, batch, mid, mid, reserve, names).total <= free:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def host_memory() -> tuple[int, int | None]:
    """(bytes the host can give this process now, the host's physical memory or None).

    On Linux the figure is /proc/meminfo's MemAvailable: the kernel's own estimate of what new allocations can get
    without swapping, free pages plus the page cache and slabs it would reclaim. sysconf's SC_AVPHYS_PAGES is MemFree
    alone, which leaves the page cache out and so understates by gigabytes on a host that has just read files (the
    weights' among them), refusing runs that fit. Where there is no MemAvailable (another system, an old kernel) the
    figure is the physical memory, SC_PHYS_PAGES: a plan past it can never be held without swapping, so only what
    certainly does not fit is refused there."""
    total: int | None = None
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # no sysconf, or no such name on this system
        total = None
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, total  # the kernel writes it in kB
    except (OSError, ValueError, IndexError):
        pass
    return (total if total is not None else 0), total


def cgroup_memory(proc: str = "/proc", root: str = "/sys/fs/cgroup") -> tuple[int, int, str] | None:
    """(bytes the tightest cgroup memory limit over this process leaves it, that limit, its file), or None where no
    cgroup limits memory. A container's limit is invisible to /proc/meminfo: past it the kernel's OOM killer ends the
    process. cgroup v2 (a ``0::`` line, the ``memory`` controller at ``root``): ``memory.max`` ("max": no limit) and
    ``memory.current`` of the process's cgroup and each one above it; v1 (a line naming ``memory``, at
    ``root``/memory): ``memory.limit_in_bytes`` and ``memory.usage_in_bytes`` (no limit is a huge value, which the
    host's figure then bounds). The page cache charged to a cgroup (``memory.stat``'s active and inactive file pages)
    is counted as left, as MemAvailable counts the host's: the kernel reclaims it before it kills."""
    try:
        with open(os.path.join(proc, "self", "cgroup"), encoding="utf-8") as lines:
            found = [line.rstrip("\n").split(":", 2) for line in lines]
    except (OSError, UnicodeError):
        return None
    v1 = [path for _, controllers, path in (f for f in found if len(f) == 3) if "memory" in controllers.split(",")]
    v2 = [f[2] for f in found if len(f) == 3 and f[0] == "0" and f[1] == ""]
    if v1:
        base, path, names, prefix = os.path.join(root, "memory"), v1[0], ("limit_in_bytes", "usage_in_bytes"), "total_"
    elif v2:
        base, path, names, prefix = root, v2[0], ("max", "current"), ""
    else:
        return None
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:  # a cgroup outside this namespace's view: only the view's root can be read
        parts = []
    tightest: tuple[int, int, str] | None = None
    for depth in range(len(parts), -1, -1):
        folder = os.path.join(base, *parts[:depth])
        try:
            with open(os.path.join(folder, f"memory.{names[0]}"), encoding="ascii") as fh:
                text = fh.read().strip()
            if text == "max":
                continue
            limit = int(text)
            with open(os.path.join(folder, f"memory.{names[1]}"), encoding="ascii") as fh:
                used = int(fh.read())
        except (OSError, ValueError):  # no such level (the root has no limit), or not the memory controller's files
            continue
        cache = 0
        try:
            with open(os.path.join(folder, "memory.stat"), encoding="ascii") as fh:
                for line in fh:
                    key, _, value = line.partition(" ")
                    if key in (f"{prefix}active_file", f"{prefix}inactive_file"):
                        cache += int(value)
        except (OSError, ValueError):
            cache = 0
        left = max(0, limit - max(0, used - cache))
        if tightest is None or left < tightest[0]:
            tightest = left, limit, os.path.join(folder, f"memory.{names[0]}")
    return tightest


def require_fit_on(
    device,
    cfg: ModelConfig,
    itemsize: int,
    batch: int,
    prompt: int,
    capacity: int,
    what: str = "this generation",
    lengths: str = "prompt plus --max-tokens",
    names: Collection[str] = (),
) -> MemoryPlan:
    """require_fit against what ``device`` has: a GPU's free memory, or on the CPU the smaller of what the host has
    available and what the process's cgroup leaves (named when it is the bound). ``names``: the checkpoint's tensor
    names, where known (``weight_bytes``)."""
    if device.type == "cuda":
        import torch

        free, total = torch.cuda.mem_get_info(device)
        return require_fit(cfg, itemsize, batch, prompt, capacity, free, total, what=what, lengths=lengths, names=names)
    free, total = host_memory()
    limited = cgroup_memory()
    cgroup = None
    if limited is not None and limited[0] < free:
        free, total, cgroup = limited
    return require_fit(cfg, itemsize, batch, prompt, capacity, free, total, True, cgroup, what, lengths, names)


def require_fit(
    cfg: ModelConfig,
    itemsize: int,
    batch: int,
    prompt: int,
    capacity: int,
    free: int,
    total: int | None = None,
    host: bool = False,
    cgroup: str | None = None,
    what: str = "this generation",
    lengths: str = "prompt plus --max-tokens",
    names: Collection[str] = (),
) -> MemoryPlan:
    """The memory plan, or DeviceMemoryError naming what is needed, what is free and what would fit. ``host``: the
    plan is held in the host's memory (the interpreter's CPU), where the GPU's reserve does not apply; ``cgroup``: the
    file of the cgroup memory limit that bounds it there (``free`` is what the limit leaves, ``total`` the limit)."""
    reserve = 0 if host else RESERVE
    need = plan(cfg, itemsize, batch, prompt, capacity, reserve, names)
    if need.total <= free:
        return need
    fits = longest_context(cfg, itemsize, batch, free, reserve, names)
    advice = (
        f"the longest context that fits is {counted(fits, 'token')} ({lengths})"
        if fits
        else "even the weights alone do not fit: a smaller dtype or "
        f"{'a larger memory limit' if cgroup else 'a larger host' if host else 'another GPU'} is needed"
    )
    of = f" of {_gib(total)}" if total else ""
    if cgroup:
        of = f" of the {_gib(total or 0)} memory limit of this process's cgroup ({cgroup})"
    where, state = ("host memory", "available") if host else ("GPU memory", "free")
    raise DeviceMemoryError(
        f"{what} needs about {_gib(need.total)} of {where} (weights {_gib(need.weights)}, KV cache "
        f"{_gib(need.kv_cache)} for {counted(capacity, 'token')}, working memory and {'margin' if host else 'reserve'} "
        f"{_gib(need.total - need.weights - need.kv_cache)}) but {_gib(free)}{of} is {state}; {advice}. "
        "Nothing was loaded."
    )
