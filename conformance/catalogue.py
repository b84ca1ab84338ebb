"""The catalogue: the models NeuroBrix promises to run, and the kernel domains they need certified.

``required_domains()`` walks every generation the catalogue's coverage allows (prefill batch x prompt
length, decode batch x cache capacity) through the engine's own forward pass, recorded on meta tensors
(``neurobrix.plan.forward_calls``), and buckets each call's key as its op declares (the op's spec in
``neurobrix/ops/``). Pow2-bucketed dimensions only need one representative per bucket, so the walk
visits powers of two.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from neurobrix.buckets import bucket_of, pow2_bucket
from neurobrix.config import ModelConfig
from neurobrix.ops import SPECS
from neurobrix.plan import forward_calls

CATALOGUE = Path(__file__).with_name("catalogue.yaml")

# A kernel's domain without its dtypes: (kernel, ((dim, lo, hi), ...)) with hi None for unbounded (the
# ranges of a neurobrix.schema.Domain).
Domain = tuple[str, tuple[tuple[str, int, "int | None"], ...]]
LAYERS = 2  # layers recorded per walk step: every layer after the first makes the same calls (tested)


@dataclass(frozen=True)
class Coverage:
    decode_batch: tuple[int, int]
    prefill_batch: tuple[int, int]
    prompt: tuple[int, int]
    capacity: tuple[int, int]
    cache_tokens: tuple[int, int]  # batch x capacity (so batch x prompt too): only its top bounds the walk


def load(path: Path = CATALOGUE) -> tuple[dict[str, ModelConfig], Coverage]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    models = {name: ModelConfig.from_hf(cfg, f"{path}: {name}") for name, cfg in data["models"].items()}
    coverage = Coverage(**{k: tuple(v) for k, v in data["coverage"].items()})
    return models, coverage


def _pow2_points(lo: int, hi: int) -> list[int]:
    """One value per pow2 bucket meeting [lo, hi]: the bucket's top, clipped to hi."""
    points, value = [], lo
    while value <= hi:
        top = min(pow2_bucket(value)[1], hi)
        points.append(top)
        value = top + 1
    return points


def bucket(kernel: str, key: tuple[int, ...]) -> Domain:
    """The certified domain a call falls in: each key value to its bucket under the op's rule."""
    spec = SPECS[kernel]
    return kernel, tuple((dim, *bucket_of(rule, value)) for dim, rule, value in zip(spec.key, spec.buckets, key))


@functools.cache
def model_domains(cfg: ModelConfig, coverage: Coverage) -> frozenset[Domain]:
    found: set[Domain] = set()
    prompt_hi = min(coverage.prompt[1], cfg.max_positions)
    capacity_hi = min(coverage.capacity[1], cfg.max_positions)
    # a prefill's chunks (neurobrix.model.prefill_chunks): the first is the remainder, then whole chunks whose
    # key counts S step by the chunk up to the prompt; at each pow2 point every bucket of S up to it is met
    for batch in range(coverage.prefill_batch[0], coverage.prefill_batch[1] + 1):
        for seq in _pow2_points(coverage.prompt[0], min(prompt_hi, coverage.cache_tokens[1] // batch)):
            calls = forward_calls(cfg, batch, seq, seq, prefill=True, layers=LAYERS)
            found |= {bucket(kernel, key) for kernel, _, key in calls}
    for batch in _pow2_points(*coverage.decode_batch):
        for capacity in _pow2_points(coverage.capacity[0], min(capacity_hi, coverage.cache_tokens[1] // batch)):
            calls = forward_calls(cfg, batch, 1, capacity, prefill=False, layers=LAYERS)
            found |= {bucket(kernel, key) for kernel, _, key in calls}
    return frozenset(found)


def required_domains(
    path: Path = CATALOGUE,
    models: list[str] | None = None,
    limits: dict[str, tuple[int, int]] | None = None,
    configs: dict[str, ModelConfig] | None = None,
) -> dict[str, set[Domain]]:
    """Every domain the catalogue needs, per kernel.

    ``models`` keeps only those catalogue models; ``configs`` replaces the catalogue's models with
    these (a model outside the catalogue); ``limits`` sets coverage ranges, e.g. {"prompt": (128, 128)}
    (each model's context still caps prompt and capacity).
    """
    all_models, coverage = load(path)
    if configs:
        all_models = dict(configs)
    elif models:
        unknown = [m for m in models if m not in all_models]
        if unknown:
            raise KeyError(
                f"not in the catalogue: {', '.join(unknown)}; it has: {', '.join(all_models)} "
                "(for another model, pass its config.json with --config)"
            )
        all_models = {m: all_models[m] for m in models}
    if limits:
        coverage = Coverage(**{name: limits.get(name, span) for name, span in vars(coverage).items()})
    by_kernel: dict[str, set[Domain]] = {}
    for cfg in all_models.values():
        for domain in model_domains(cfg, coverage):
            by_kernel.setdefault(domain[0], set()).add(domain)
    return by_kernel
