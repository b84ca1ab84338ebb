"""How a key dimension is bucketed into certified domains: the rules, and the bucket a value falls in.

``pow2``       batch/sequence-like: domains are [1,1], [2,2], [3,4], [5,8], ... (inclusive)
``pow2>=F``    the same with a first bucket [1, F]: [1,F], [F+1,2F], [2F+1,4F], ...
``exact``      model dimensions: one domain per value

An op declares a rule per key dimension (its spec, neurobrix/ops/); a settings index repeats the
rules it was certified with, so a lookup needs nothing but the index. Pure Python, no torch.
"""

from __future__ import annotations

import re

_RULE = re.compile(r"^(exact|pow2|pow2>=([1-9][0-9]*))$")


def valid_rule(rule: str) -> bool:
    """Whether ``rule`` is one of the rules above (F a power of two)."""
    match = _RULE.match(rule)
    if match is None:
        return False
    first = match.group(2)
    return first is None or (int(first) & (int(first) - 1)) == 0


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


def bucket_of(rule: str, value: int) -> tuple[int, int]:
    """The inclusive range a key value falls in under a rule ("pow2", "pow2>=F", "exact")."""
    if rule == "exact":
        return (value, value)
    if rule == "pow2":
        return pow2_bucket(value)
    if rule.startswith("pow2>="):
        return pow2_bucket(value, int(rule[len("pow2>=") :]))
    raise ValueError(f"unknown bucket rule {rule!r}")
