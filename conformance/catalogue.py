"""The catalogue: the models NeuroBrix promises to run, and the kernel domains they need certified.

``required_domains()`` walks every generation the catalogue's coverage allows (prefill batch x prompt
length, decode batch x cache capacity) through the engine's own list of kernel calls
(``neurobrix.plan``), and buckets each call's key as the kernel declares (``neurobrix.kernels``).
Pow2-bucketed dimensions only need one representative per bucket, so the walk visits powers of two.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from neurobrix.config import ModelConfig
from neurobrix.kernels import KERNELS, bucket_of, pow2_bucket
from neurobrix.plan import forward_calls

CATALOGUE = Path(__file__).with_name("catalogue.yaml")

# A domain as certify and check use it: (kernel, ((dim, lo, hi), ...)) with hi None for unbounded.
Domain = tuple[str, tuple[tuple[str, int, "int | None"], ...]]


@dataclass(frozen=True)
class Coverage:
    decode_batch: tuple[int, int]
    prefill_batch: tuple[int, int]
    prompt: tuple[int, int]
    capacity: tuple[int, int]
    prefill_tokens: tuple[int, int]  # batch x prompt of one prefill: only its top bounds the walk


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


def bucket(kernel: str, shape: dict[str, int] | tuple[tuple[str, int], ...]) -> Domain:
    """The certified domain a call falls in: pow2 dims to their bucket, exact dims to themselves."""
    items = dict(shape)
    spec = KERNELS[kernel]
    ranges = []
    for dim, how in zip(spec.key, spec.buckets):
        ranges.append((dim, *bucket_of(how, items[dim])))
    return kernel, tuple(ranges)


def model_domains(cfg: ModelConfig, coverage: Coverage) -> set[Domain]:
    found: set[Domain] = set()
    prompt_hi = min(coverage.prompt[1], cfg.max_positions)
    capacity_hi = min(coverage.capacity[1], cfg.max_positions)
    for batch in range(coverage.prefill_batch[0], coverage.prefill_batch[1] + 1):
        for seq in _pow2_points(coverage.prompt[0], min(prompt_hi, coverage.prefill_tokens[1] // batch)):
            found |= {bucket(k, s) for k, s in forward_calls(cfg, batch, seq, seq, prefill=True)}
    for batch in _pow2_points(*coverage.decode_batch):
        for capacity in _pow2_points(coverage.capacity[0], capacity_hi):
            found |= {bucket(k, s) for k, s in forward_calls(cfg, batch, 1, capacity, prefill=False)}
    return found


def required_domains(path: Path = CATALOGUE, models: list[str] | None = None,
                     limits: dict[str, tuple[int, int]] | None = None,
                     configs: dict[str, ModelConfig] | None = None) -> dict[str, set[Domain]]:
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
            raise KeyError(f"not in the catalogue: {', '.join(unknown)}; it has: {', '.join(all_models)} "
                           "(for another model, pass its config.json with --config)")
        all_models = {m: all_models[m] for m in models}
    if limits:
        coverage = Coverage(**{name: limits.get(name, span) for name, span in vars(coverage).items()})
    by_kernel: dict[str, set[Domain]] = {}
    for cfg in all_models.values():
        for domain in model_domains(cfg, coverage):
            by_kernel.setdefault(domain[0], set()).add(domain)
    return by_kernel
