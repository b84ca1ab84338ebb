"""Hypothesis strategies for conformance: shapes from a table entry's whole domain, values that probe
rounding, poisoned outputs and guard-banded buffers; and the project's Hypothesis profiles.

Shapes: ``shapes({"M": (1, 64), "K": (1, None)}, cap=512)`` draws each dimension either from its
edges (1, the range ends and their neighbours, multiples of the common block sizes 16/32/64/128
and their neighbours, primes) or uniformly from the range; an unbounded dimension is drawn up to
the caller's cap.

Values: ``tensors(shape, dtype)`` draws a kind (normal, power-of-two scaled, per-row scaled,
sparse, exact cancellation, small integers), an exponent range and a seed; the tensor is made by
torch from that seed (Hypothesis shrinks the kind, exponent, seed and shape, not the elements) and
is always finite and exactly representable in ``dtype``.

Profiles (registered here, the one place): ``ci`` small, derandomized, no example database;
``dev`` the everyday default; ``gpu`` thorough. Use ``profile("ci")`` as a decorator or as the
parent of a ``settings``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

import torch
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

BLOCK_SIZES = (16, 32, 64, 128)
KINDS = ("normal", "pow2", "row_scaled", "sparse", "cancel", "integers")
SEED_MAX = 2**32 - 1

# ------------------------------------------------------------------------------------------- profiles
_SLOW_OK = (HealthCheck.too_slow, HealthCheck.data_too_large)
settings.register_profile(
    "ci",
    max_examples=25,
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=_SLOW_OK,
)
settings.register_profile("dev", max_examples=40, deadline=None, print_blob=True, suppress_health_check=_SLOW_OK)
settings.register_profile(
    "gpu",
    max_examples=50,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=_SLOW_OK,
)
PROFILES = ("ci", "dev", "gpu")


def profile(name: str) -> settings:
    """The registered profile ``name`` (ci, dev, gpu) as a settings object."""
    if name not in PROFILES:
        raise ValueError(f"unknown Hypothesis profile {name!r} (known: {', '.join(PROFILES)})")
    return settings.get_profile(name)


# --------------------------------------------------------------------------------------------- shapes
def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    if n < 4:
        return True
    if n % 2 == 0:
        return False
    f = 3
    while f * f <= n:
        if n % f == 0:
            return False
        f += 2
    return True


def _primes_near(n: int) -> list[int]:
    """The primes just below and just above n."""
    below = next((p for p in range(n - 1, 1, -1) if _is_prime(p)), None)
    above = next(p for p in range(n + 1, 2 * n + 3) if _is_prime(p))
    return [p for p in (below, above) if p is not None]


def edge_values(lo: int, hi: int, block_sizes: Sequence[int] = BLOCK_SIZES, multiple_of: int = 1) -> list[int]:
    """The values of [lo, hi] where kernels go wrong: 1, the ends and their neighbours, each block size
    b and 2b with their neighbours (b - 1, b + 1: a partial tile), the same around the top of the
    range, and primes (small ones, and those next to powers of two). Sorted, multiples of
    ``multiple_of`` only."""
    if lo < 1 or hi < lo:
        raise ValueError(f"bad range [{lo}, {hi}]")
    candidates = {1, 2, 3, lo, lo + 1, hi - 1, hi, 5, 7, 11, 13}
    for b in block_sizes:
        for m in (b, 2 * b):
            candidates.update((m - 1, m, m + 1))
        top = hi // b * b  # the largest multiple of b in range, and its neighbours
        candidates.update((top - 1, top, top + 1))
    power = 2
    while power <= 2 * hi:
        candidates.update(_primes_near(power))
        power *= 2
    return sorted(v for v in candidates if lo <= v <= hi and v % multiple_of == 0)


def dims(
    lo: int,
    hi: int | None,
    *,
    cap: int | None = None,
    multiple_of: int = 1,
    block_sizes: Sequence[int] = BLOCK_SIZES,
) -> st.SearchStrategy[int]:
    """One dimension from [lo, hi] (hi None: unbounded, drawn up to ``cap``): an edge or any value."""
    if hi is None:
        if cap is None:
            raise ValueError(f"dimension range [{lo}, unbounded) needs a cap")
        hi = max(lo, cap)
    if multiple_of < 1:
        raise ValueError(f"multiple_of must be >= 1, got {multiple_of}")
    first, last = -(-lo // multiple_of), hi // multiple_of
    if last < first:
        raise ValueError(f"[{lo}, {hi}] holds no multiple of {multiple_of}")
    edges = edge_values(lo, hi, block_sizes, multiple_of)
    anywhere = st.integers(first, last).map(lambda k: k * multiple_of)
    return st.one_of(st.sampled_from(edges), anywhere) if edges else anywhere


def shapes(
    domain: Mapping[str, tuple[int, int | None]],
    *,
    cap: int | Mapping[str, int] | None = None,
    multiple_of: Mapping[str, int] | None = None,
    block_sizes: Sequence[int] | Mapping[str, Sequence[int]] = BLOCK_SIZES,
) -> st.SearchStrategy[dict[str, int]]:
    """A dict {dim: size} drawn from ``domain`` = {dim: (lo, hi or None)}; see ``dims``.

    ``cap`` bounds the unbounded dimensions (one int for all, or per dimension); bounded ones are
    drawn from their whole range, ends included. ``block_sizes``: the boundaries whose neighbours are
    edges, for every dimension or per dimension (a setting's own blocks and splits, added to the common
    block sizes).
    """
    multiple_of = multiple_of or {}
    parts = {}
    for name, (lo, hi) in domain.items():
        c = cap.get(name) if isinstance(cap, Mapping) else cap
        blocks = (
            tuple(sorted({*BLOCK_SIZES, *block_sizes.get(name, ())}))
            if isinstance(block_sizes, Mapping)
            else block_sizes
        )
        parts[name] = dims(lo, hi, cap=c, multiple_of=multiple_of.get(name, 1), block_sizes=blocks)
    return st.fixed_dictionaries(parts)


# --------------------------------------------------------------------------------------------- values
def _rows_view(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1, t.shape[-1]) if t.dim() > 0 else t.reshape(1, 1)


def make_values(
    shape: Sequence[int],
    dtype: torch.dtype,
    kind: str,
    seed: int,
    exponents: tuple[int, int] = (-4, 4),
    param: int = 0,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """The tensor a (kind, seed, exponent range, param) stands for, rounded to ``dtype``, made on ``device``
    (a GPU makes catalogue-sized inputs in microseconds; the same seed gives other values there).

    normal      N(0, 1)
    pow2        N(0, 1) * 2^e, e = exponents[0] + param (clamped to the range), one e for the tensor
    row_scaled  N(0, 1) * 2^e_row, one e per row (rows: all but the last dim), uniform in the range
    sparse      N(0, 1) * 2^e_row where a Bernoulli(density) mask is on; density 1/2^(param % 6)
                (1, 1/2, ..., 1/32); with param % 7 == 6 the tensor is all zeros
    cancel      along the last dim: the first half v (magnitudes 2^e spread over the range), the
                second half exactly -v (an odd middle element is 0): every row sums to exactly 0
    integers    integers in [-8, 8] (exact in every dtype)
    """
    shape = tuple(int(s) for s in shape)
    gen = torch.Generator(device=device).manual_seed(seed)
    lo, hi = exponents
    numel = math.prod(shape)
    f64 = torch.float64

    def spread(n: int) -> torch.Tensor:  # 2^e, e uniform in [lo, hi], n values
        return torch.pow(2.0, torch.randint(lo, hi + 1, (n,), generator=gen, device=device).to(f64))

    normal = torch.randn(numel, generator=gen, dtype=f64, device=device).reshape(shape)
    if kind == "normal":
        out = normal
    elif kind == "pow2":
        out = normal * 2.0 ** min(hi, lo + param)
    elif kind in ("row_scaled", "sparse"):
        rows = _rows_view(normal)
        out = (rows * spread(rows.shape[0])[:, None]).reshape(shape)
        if kind == "sparse":
            if param % 7 == 6:
                out = torch.zeros(shape, dtype=f64, device=device)
            else:
                density = 0.5 ** (param % 6)
                out = out * (torch.rand(shape, generator=gen, dtype=f64, device=device) < density)
    elif kind == "cancel":
        rows = _rows_view(normal).clone()
        n = rows.shape[-1]
        half = n // 2
        rows[:, :half] = rows[:, :half] * spread(rows.shape[0] * half).reshape(rows.shape[0], half)
        rows[:, n - half :] = -rows[:, :half]
        if n % 2:
            rows[:, half] = 0.0
        out = rows.reshape(shape)
    elif kind == "integers":
        out = torch.randint(-8, 9, shape, generator=gen, device=device).to(f64)
    else:
        raise ValueError(f"unknown value kind {kind!r} (known: {', '.join(KINDS)})")
    result = out.to(dtype)
    if not torch.isfinite(result).all():
        raise ValueError(f"{kind} values with exponents {exponents} overflow {dtype}")
    return result


@st.composite
def tensors(
    draw: st.DrawFn,
    shape: Sequence[int],
    dtype: torch.dtype,
    *,
    kinds: Iterable[str] = KINDS,
    exponents: tuple[int, int] = (-4, 4),
) -> torch.Tensor:
    """A tensor of ``shape`` in ``dtype`` (CPU), finite and representable; see ``make_values``.

    ``exponents`` limits the powers of two the scaled kinds use: the caller keeps outputs in range
    (e.g. fp16 sums of K products must stay below 65504).
    """
    kind = draw(st.sampled_from(tuple(kinds)))
    param = draw(st.integers(0, 20))
    seed = draw(st.integers(0, SEED_MAX))
    return make_values(shape, dtype, kind, seed, exponents, param)


# ---------------------------------------------------------------------------- poisoned and guarded
def poisoned(shape: Sequence[int], dtype: torch.dtype, device: torch.device | str = "cpu") -> torch.Tensor:
    """An output buffer filled with NaN: any element the kernel fails to write shows up as NaN."""
    return torch.full(tuple(shape), math.nan, dtype=dtype, device=device)


class GuardBandError(AssertionError):
    """A kernel wrote outside its output: a guard element around the buffer is no longer NaN."""


class GuardedBuffer(NamedTuple):
    view: torch.Tensor  # the output, poisoned (NaN), contiguous, between two guard bands in its storage
    check_guards: Callable[[], None]  # raises GuardBandError if a guard element was overwritten


def guarded_empty(
    shape: Sequence[int], dtype: torch.dtype, guard: int = 256, device: torch.device | str = "cpu"
) -> GuardedBuffer:
    """A poisoned output ``view`` of ``shape`` with ``guard`` NaN elements on each side of it, and a
    ``check_guards()`` that fails if any of those guard elements is no longer NaN (an out-of-bounds
    store; the Triton interpreter does not check bounds)."""
    if not dtype.is_floating_point:
        raise ValueError(f"guard bands are NaN: {dtype} cannot hold them")
    if guard < 1:
        raise ValueError(f"guard must be >= 1, got {guard}")
    numel = math.prod(int(s) for s in shape)
    buffer = torch.full((guard + numel + guard,), math.nan, dtype=dtype, device=device)
    view = buffer[guard : guard + numel].view(tuple(shape))

    def check_guards() -> None:
        before = ~torch.isnan(buffer[:guard])
        after = ~torch.isnan(buffer[guard + numel :])
        if before.any() or after.any():
            first_before = [int(i) - guard for i in before.nonzero().flatten()[-5:].tolist()]
            first_after = [int(i) for i in after.nonzero().flatten()[:5].tolist()]
            raise GuardBandError(
                f"out-of-bounds write around a {list(shape)} {dtype} output: {int(before.sum())} guard "
                f"elements overwritten before it (offsets {first_before}), {int(after.sum())} after its end "
                f"(offsets +{first_after})"
            )

    return GuardedBuffer(view, check_guards)
