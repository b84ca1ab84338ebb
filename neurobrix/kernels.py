"""The engine's kernels and their keys: the call dimensions that select a certified setting.

A kernel's key names the dimensions its table is indexed by; ``tables.settings(kernel, dtype,
shape)`` takes ``shape`` as a mapping over exactly these names, with the call's actual values.
How a dimension is bucketed into certified domains is declared here too, for certify:

``pow2``       batch/sequence-like: domains are [1,1], [2,2], [3,4], [5,8], ... (inclusive)
``pow2>=F``    the same with a first bucket [1, F]: [1,F], [F+1,2F], [2F+1,4F], ...
``exact``      model dimensions: one domain per value the catalogue needs

Each op in ``neurobrix/ops/`` documents how it derives its key from a call. Pure data: importing
this needs no torch or triton.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KernelSpec:
    name: str
    key: tuple[str, ...]
    buckets: tuple[str, ...]  # per key dimension: "pow2", "pow2>=F" or "exact"
    what: str


SPECS = (
    KernelSpec("linear", ("M", "N", "K"), ("pow2", "exact", "exact"),
               "y[M,N] = x[M,K] @ W[N,K]^T (+ b); M = rows of x (batch x tokens)"),
    KernelSpec("rms_norm", ("M", "N"), ("pow2", "exact"),
               "RMSNorm over rows of length N, optionally fused with the residual add; M = rows"),
    KernelSpec("rotary", ("T", "H", "D"), ("pow2", "exact", "exact"),
               "rotary embedding of q and k, appending k and v to the KV cache in the same launch; "
               "T = tokens (batch x seq), H = q heads + kv heads, D = head dim"),
    KernelSpec("silu_mul", ("M", "I"), ("pow2", "exact"),
               "silu(g) * u from one fused [M, 2I] gate/up projection; I = intermediate size"),
    KernelSpec("attention_prefill", ("S", "D", "G"), ("pow2>=16", "exact", "exact"),
               "causal GQA flash attention; S = sequence length, D = head dim, G = q heads per kv head"),
    KernelSpec("attention_decode", ("B", "S", "D", "G"), ("pow2", "pow2>=256", "exact", "exact"),
               "one query per sequence over the KV cache, split over the sequence; B = batch, "
               "S = cache capacity (not the filled length, so one setting serves a whole CUDA graph)"),
)
KERNELS: dict[str, KernelSpec] = {spec.name: spec for spec in SPECS}
KERNEL_KEYS: dict[str, tuple[str, ...]] = {spec.name: spec.key for spec in SPECS}


def pow2_bucket(value: int, first: int = 1) -> tuple[int, int]:
    """The pow2 domain containing ``value``: [1, first], then [first+1, 2 first], [2 first+1, 4 first], ...

    With first = 1: [1,1], [2,2], [3,4], [5,8], ... ``first`` must be a power of two.
    """
    if value < 1:
        raise ValueError(f"dimension must be >= 1, got {value}")
    if value <= first:
        return (1, first)
    hi = 1 << (value - 1).bit_length()
    return (hi // 2 + 1, hi)


def bucket_of(how: str, value: int) -> tuple[int, int]:
    """The inclusive range a key value falls in under a bucket rule ("pow2", "pow2>=F", "exact")."""
    if how == "exact":
        return (value, value)
    if how == "pow2":
        return pow2_bucket(value)
    if how.startswith("pow2>="):
        return pow2_bucket(value, int(how[len("pow2>="):]))
    raise ValueError(f"unknown bucket rule {how!r}")
