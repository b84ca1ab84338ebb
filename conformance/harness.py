"""One kernel call as a conformance case: inputs for a key shape, the kernel's outputs, float64 truth, bounds.

Each kernel's key (neurobrix.kernels) is turned into concrete arguments the way the engine calls
it (q/k/v as strided views of one fused projection, caches with a filled length, optional bias and
residual). Outputs are allocated by the launcher itself inside NaN guard bands (``guarded_launch``)
and inputs live inside NaN guard bands too, so an out-of-bounds store is caught by the guards and
an out-of-bounds load turns the output into NaN.
"""

from __future__ import annotations

import contextlib
import math
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

import torch

from neurobrix import ops

from . import bounds, reference
from .strategies import guarded_empty, make_values

TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
GUARD = 64


@dataclass
class Case:
    kernel: str
    dtype: str
    shape: dict[str, int]
    args: dict[str, Any]
    note: dict[str, Any] = field(default_factory=dict)  # how the key became arguments (for reports)
    # float64 results that depend on the inputs alone, kept across candidates judged on this case
    memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    def once(self, key: Any, compute: Callable[[], Any]) -> Any:
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    def describe(self) -> str:
        dims = ", ".join(f"{k}={v}" for k, v in self.shape.items())
        extra = ", ".join(f"{k}={v}" for k, v in self.note.items())
        return f"{self.kernel} {self.dtype} {dims}" + (f" ({extra})" if extra else "")


def _exponents(dtype: str) -> tuple[int, int]:
    # fp16 tops out at 65504: keep dot products of long rows in range
    return (-3, 1) if dtype == "fp16" else (-4, 4)


class Values:
    """Input tensors: kind and seed drawn by the caller (Hypothesis or a fixed seed), made in float64."""

    def __init__(self, dtype: str, device: torch.device | str, seed: int, kinds: tuple[str, ...] = ("normal",)):
        self.dtype, self.device = TORCH_DTYPES[dtype], device
        self.rng = random.Random(seed)
        self.kinds = kinds
        self.exponents = _exponents(dtype)

    def __call__(self, shape: tuple[int, ...], scale: float = 1.0) -> torch.Tensor:
        kind = self.rng.choice(self.kinds)
        t = make_values(shape, self.dtype, kind, self.rng.randrange(2**32), self.exponents, self.rng.randrange(21),
                        device=self.device)
        if scale != 1.0:  # a power of two: exact, keeps every value representable
            t = (t.double() * scale).to(self.dtype)
        return guarded(t, self.device)


def guarded(t: torch.Tensor, device: torch.device | str) -> torch.Tensor:
    """A copy of ``t`` on ``device`` inside NaN guard bands (an out-of-bounds load reads NaN)."""
    buf = guarded_empty(tuple(t.shape), t.dtype, GUARD, device)
    buf.view.copy_(t)
    buf.view.check_guards = buf.check_guards  # run_kernel checks inputs' guards too (a store past a cache)
    return buf.view


def _pow2_at_most(x: float) -> float:
    return 2.0 ** math.floor(math.log2(x))


def build(kernel: str, dtype: str, shape: Mapping[str, int], values: Values) -> Case:
    """Arguments for a call with this key shape (the engine's layout), drawn with ``values``."""
    rng, dev = values.rng, values.device
    s = dict(shape)
    note: dict[str, Any] = {}
    if kernel == "linear":
        M, N, K = s["M"], s["N"], s["K"]
        has_bias = rng.random() < 0.5
        args = {"x": values((M, K)), "weight": values((N, K), scale=_pow2_at_most(1 / math.sqrt(K))),
                "bias": values((N,)) if has_bias else None}
        note["bias"] = has_bias
    elif kernel == "rms_norm":
        M, N = s["M"], s["N"]
        has_residual = rng.random() < 0.5
        args = {"x": values((M, N)), "weight": values((N,)), "eps": rng.choice([1e-5, 1e-6]),
                "residual": values((M, N)) if has_residual else None}
        note["residual"] = has_residual
    elif kernel == "rotary":
        T, H, D = s["T"], s["H"], s["D"]
        if H < 2 or D % 2:
            raise ValueError(f"rotary: needs H >= 2 (q and kv heads) and an even D, got H={H}, D={D}")
        hkv = rng.randint(1, H - 1)
        hq = H - hkv
        batch = rng.choice([b for b in (1, 2, 3) if T % b == 0])
        S = T // batch
        cached = rng.random() < 0.75  # the engine's call: k and v appended to a KV cache in the same launch
        positions_max = rng.choice([S + 1, 4 * S + 7] if cached else [S, 4 * S + 7])
        qkv = values((batch, S, hq + 2 * hkv, D))  # q, k and v are strided views of a fused projection
        tables = reference.rope_frequencies(D, rng.choice([10000.0, 500000.0]), positions_max)
        gen = torch.Generator().manual_seed(rng.randrange(2**31))
        if cached:  # distinct positions per sequence, as the engine's: a run of S from a random start
            room = positions_max - S
            starts = torch.tensor([[rng.choice([0, room, rng.randint(0, room)])] for _ in range(batch)])
            pos = starts + torch.arange(S)[None, :]
        else:
            pos = torch.randint(0, positions_max, (batch, S), generator=gen)
        args = {"q": qkv[:, :, :hq], "k": qkv[:, :, hq:hq + hkv], "cos": guarded(tables.cos.float(), dev),
                "sin": guarded(tables.sin.float(), dev), "positions": pos.to(dev)}
        if cached:  # caches hold NaN where nothing is written: a store to the wrong row shows
            nan = torch.full((batch, positions_max, hkv, D), math.nan, dtype=values.dtype)
            args.update(v=qkv[:, :, hq + hkv:], k_cache=guarded(nan, dev), v_cache=guarded(nan, dev))
        note.update(batch=batch, q_heads=hq, kv_heads=hkv, cache=cached)
    elif kernel == "silu_mul":
        args = {"gu": values((s["M"], 2 * s["I"]))}
    elif kernel == "attention_prefill":
        S, D, G = s["S"], s["D"], s["G"]
        batch, hkv = rng.choice([1, 2]), rng.choice([1, 2])
        hq = G * hkv
        q = values((batch, S, hq + 2 * hkv, D))[:, :, :hq]  # a strided view of a fused projection
        # k and v: the first S positions of KV caches of a larger capacity (the engine's call), NaN past S
        capacity = S + rng.choice([0, 1, S])
        k_cache, v_cache = values((batch, capacity, hkv, D)), values((batch, capacity, hkv, D))
        k_cache[:, S:] = math.nan
        v_cache[:, S:] = math.nan
        args = {"q": q, "k": k_cache[:, :S], "v": v_cache[:, :S], "scale": 1 / math.sqrt(D)}
        note.update(batch=batch, kv_heads=hkv, capacity=capacity)
    elif kernel == "attention_decode":
        B, S, D, G = s["B"], s["S"], s["D"], s["G"]
        hkv = rng.choice([1, 2])
        lengths = [rng.choice([1, S, rng.randint(1, S)]) for _ in range(B)]
        k_cache, v_cache = values((B, S, hkv, D)), values((B, S, hkv, D))
        for b, n in enumerate(lengths):  # the unfilled cache holds NaN: reading past the length shows
            k_cache[b, n:] = math.nan
            v_cache[b, n:] = math.nan
        args = {"q": values((B, G * hkv, D)), "k_cache": k_cache, "v_cache": v_cache,
                "lengths": torch.tensor(lengths, dtype=torch.int32, device=dev), "scale": 1 / math.sqrt(D)}
        note.update(kv_heads=hkv, lengths=lengths if B <= 4 else f"{min(lengths)}..{max(lengths)}")
    else:
        raise KeyError(f"no conformance harness for kernel {kernel!r}")
    return Case(kernel, dtype, s, args, note)


@contextlib.contextmanager
def guarded_launch() -> Iterator[list[Callable[[], None]]]:
    """While active, every torch.empty / empty_like (the launchers' allocations) returns a NaN-poisoned
    view inside NaN guard bands; the list collects their guard checks."""
    checks: list[Callable[[], None]] = []
    real_empty, real_empty_like = torch.empty, torch.empty_like

    def empty(*size, dtype=None, device=None, **_: Any) -> torch.Tensor:
        shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)) else size
        buf = guarded_empty(shape, dtype or torch.get_default_dtype(), GUARD, device or "cpu")
        checks.append(buf.check_guards)
        return buf.view

    def empty_like(t: torch.Tensor, *, dtype=None, device=None, **_: Any) -> torch.Tensor:
        return empty(tuple(t.shape), dtype=dtype or t.dtype, device=device or t.device)

    torch.empty, torch.empty_like = empty, empty_like
    try:
        yield checks
    finally:
        torch.empty, torch.empty_like = real_empty, real_empty_like


def run_kernel(case: Case) -> tuple[torch.Tensor, ...]:
    """The certified Triton op on the case (under whatever tables are selected); guard bands checked."""
    op = getattr(ops.TRITON, case.kernel)
    for cache in ("k_cache", "v_cache") if case.kernel == "rotary" else ():
        if case.args.get(cache) is not None:
            case.args[cache].fill_(math.nan)  # written by an earlier run on this case: start clean
    with guarded_launch() as checks:
        out = op(**case.args)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    for check in checks:
        check()
    for arg in case.args.values():  # inputs the kernel writes into (KV caches) or must only read
        if isinstance(arg, torch.Tensor) and hasattr(arg, "check_guards"):
            arg.check_guards()
    return out if isinstance(out, tuple) else (out,)


def _f64(t: torch.Tensor) -> torch.Tensor:
    return t.double()


def _cache_rows(cache: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """(cache[b, positions[b, s]] as [B, S, H, D], whether any other row is no longer all NaN)."""
    rows = torch.arange(cache.shape[0], device=cache.device)[:, None]
    picked = cache[rows, positions]
    rest = torch.ones(cache.shape[:2], dtype=torch.bool, device=cache.device)
    rest[rows, positions] = False
    return picked, bool((~cache[rest].isnan()).any())


def _with_bound(ref: torch.Tensor, bound_of: Callable[[torch.Tensor], torch.Tensor]
                ) -> tuple[torch.Tensor, torch.Tensor]:
    return ref, bound_of(ref)


@dataclass
class Verdict:
    ratio: float          # worst |error| / bound over every output
    explanation: str      # why, when ratio > 1
    relative: float = 0.0  # worst max|error| / max|float64| over the outputs (for reports)


def judge(case: Case, outputs: tuple[torch.Tensor, ...], config: Mapping[str, Any]) -> Verdict:
    """Compare the kernel's outputs with float64 under each output's bound."""
    a = case.args
    once = case.once
    pairs: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []  # (actual, reference64, bound)
    if case.kernel == "linear":
        ref, bound = once("linear", lambda: _with_bound(reference.linear(a["x"], a["weight"], a["bias"]),
                                                        lambda r: bounds.linear(a["x"], a["weight"], a["bias"], r)))
        pairs.append((outputs[0], ref, bound))
    elif case.kernel == "rms_norm":
        normalised = a["x"]
        if a["residual"] is not None:
            h64, hb = once("residual", lambda: _with_bound(reference.residual_add(a["x"], a["residual"]),
                                                           lambda r: bounds.residual_add(a["x"], a["residual"], r)))
            pairs.append((outputs[1], h64, hb))
            normalised = outputs[1]  # y is the norm of the kernel's own (checked) rounded h
        ref = reference.rms_norm(normalised, a["weight"], a["eps"])
        pairs.append((outputs[0], ref, bounds.rms_norm(normalised, a["weight"], a["eps"], ref)))
    elif case.kernel == "rotary":
        for n, (out, x) in enumerate(zip(outputs, (a["q"], a["k"]))):
            ref, bound = once(("rotary", n), lambda x=x: _with_bound(
                reference.rotary(x, a["cos"], a["sin"], a["positions"]),
                lambda r: bounds.rotary(x, a["cos"], a["sin"], a["positions"], r)))
            if n == 1 and a.get("k_cache") is not None:
                out, stray = _cache_rows(out, a["positions"])
                v_rows, v_stray = _cache_rows(a["v_cache"], a["positions"])
                zero = torch.zeros_like(ref)
                pairs.append((v_rows, _f64(a["v"]), zero))  # v is copied exactly
                if stray or v_stray:  # a cache row outside the positions was written
                    return Verdict(math.inf, "rotary wrote a KV-cache row that is not one of its positions")
            pairs.append((out, ref, bound))
    elif case.kernel == "silu_mul":
        ref, bound = once("silu_mul", lambda: _with_bound(reference.silu_mul(a["gu"]),
                                                          lambda r: bounds.silu_mul(a["gu"], r)))
        pairs.append((outputs[0], ref, bound))
    elif case.kernel == "attention_prefill":
        ref = once("attention", lambda: reference.attention_prefill(a["q"], a["k"], a["v"], a["scale"]))
        block = int(config["BLOCK_N"])
        bound = once(("bound", block), lambda: bounds.attention_prefill(a["q"], a["k"], a["v"], a["scale"], ref,
                                                                        key_block=block))
        pairs.append((outputs[0], ref, bound))
    elif case.kernel == "attention_decode":
        ref = once("attention", lambda: reference.attention_decode(a["q"], a["k_cache"], a["v_cache"], a["lengths"],
                                                                   a["scale"]))
        block, splits = int(config["BLOCK_N"]), int(config["SPLITS"])
        bound = once(("bound", block, splits), lambda: bounds.attention_decode(
            a["q"], a["k_cache"], a["v_cache"], a["lengths"], a["scale"], ref, key_block=block, splits=splits))
        pairs.append((outputs[0], ref, bound))
    worst, why, relative = 0.0, "", 0.0
    for actual, ref, bound in pairs:
        r = bounds.ratio(actual, ref, bound)
        scale = float(ref.abs().max()) if ref.numel() else 0.0
        if scale > 0:
            relative = max(relative, float((actual.double() - ref).abs().max()) / scale)
        if r > worst:
            worst = r
            why = bounds.explain(actual, ref, bound) if r > 1 else ""
    return Verdict(worst, why, relative)
