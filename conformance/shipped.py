"""Every setting any class ships, checked where the check runs (``conformance check --shipped``).

Each distinct (kernel, config) of every class's tables is checked at the small shapes that config
can serve. A setting's logic (which rows, columns and K slices each program takes, its masks, its
split-K merge, its tile grouping) does not depend on the size of a shape, only on where a shape meets
its blocks and splits; each op's record says which small shapes cross every boundary of a setting,
with tails (``Record.small``). So the GPU classes' settings (linear's gemv, skinny and tma variants,
split-K merges, attention's splits...) run on the interpreter in CI, and a logic bug in any of them is
caught, with the setting and where it is shipped named, before a GPU sees it. What the interpreter
cannot run is listed once, below (``GPU_ONLY``), and left to the GPU class's own check.

Distinct: on the interpreter, settings that differ only in launch options (num_warps, num_stages) are
one setting, as those have no effect there (FACTS.md); on a GPU each config is its own compiled code.
A setting the class's own tables hold is checked there already, over its whole domain, and is not run
again. Dtypes: each dtype the setting is shipped for that this class runs; on the interpreter a bf16
setting is checked in fp16 (``STAND_IN``), its bf16 arithmetic on the GPU.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from neurobrix import tables as nb_tables
from neurobrix.ops._common import LAUNCH_OPTIONS
from neurobrix.schema import Domain, Setting

from .specs import RECORDS, Small


@dataclass(frozen=True)
class GpuOnly:
    """Something a shipped setting does that the interpreter cannot run (tests/test_shipped.py shows each)."""

    what: str
    why: str
    instead: str  # what the CPU check does instead, and where the rest is proven


# The one list of what the interpreter cannot run. Each item is shown to fail (or to be unreachable) on
# the interpreter by tests/test_shipped.py, so an upstream fix or an engine change that lifts it fails there
# and the item leaves this list.
GPU_ONLY = (
    GpuOnly(
        "bf16 arithmetic",
        "the Triton interpreter computes bf16 on raw bit patterns (triton issues #11584, #11604: tl.dot "
        "multiplies bit patterns, fp32 -> bf16 casts truncate)",
        "settings shipped for bf16 are checked in fp16 on CPU (the same code at another element type); "
        "bf16 itself by the GPU class's check (`python -m conformance check --class nvidia-h200`)",
    ),
)
# dtypes the interpreter cannot run -> the dtype a setting shipped for them is checked in on CPU
STAND_IN = {"bf16": "fp16"}


def distinct(config: Mapping[str, Any], interpreter: bool) -> str:
    """The key under which settings are one: without launch options on the interpreter."""
    kept = {k: v for k, v in config.items() if not (interpreter and k in LAUNCH_OPTIONS)}
    return json.dumps(kept, sort_keys=True)


@dataclass
class Shipped:
    """One distinct setting of a kernel and where it is shipped."""

    kernel: str
    config: dict[str, Any]  # the first shipped config of its kind (the one run)
    dtypes: set[str]  # the dtypes its entries name, over every class
    entries: dict[str, int]  # class -> number of entries holding it
    configs: set[str]  # the distinct full configs folded into it (launch options)

    def where(self) -> str:
        """'nvidia-h200 (20 entries: bf16, fp16)', with the launch options folded in when several were."""
        classes = ", ".join(f"{c} ({n} entr{'y' if n == 1 else 'ies'})" for c, n in sorted(self.entries.items()))
        text = f"shipped in {classes}: {'/'.join(sorted(self.dtypes))}"
        if len(self.configs) > 1:
            text += f"; {len(self.configs)} launch-option variants (num_warps, num_stages), one code here"
        return text


def shipped_settings(loaded: nb_tables.Tables, interpreter: bool, kernels: list[str] | None = None) -> list[Shipped]:
    """Every distinct (kernel, setting) of every class's tables, in kernel and table order."""
    found: dict[tuple[str, str], Shipped] = {}
    for gpu_class in sorted(loaded.classes):
        for kernel in loaded.kernels(gpu_class):
            if kernels and kernel not in kernels:
                continue
            index = loaded.index(gpu_class, kernel)
            for entry in index.entries if index is not None else ():
                config = dict(entry.config)
                item = found.setdefault(
                    (kernel, distinct(config, interpreter)), Shipped(kernel, config, set(), {}, set())
                )
                item.dtypes.update(entry.domain.dtypes)
                item.entries[gpu_class] = item.entries.get(gpu_class, 0) + 1
                item.configs.add(json.dumps(config, sort_keys=True))
    return sorted(found.values(), key=lambda s: (s.kernel, json.dumps(s.config, sort_keys=True)))


@dataclass(frozen=True)
class Target:
    """A shipped setting to check here: its small domain (as a table entry would hold it) in one dtype."""

    kernel: str
    setting: Setting
    dtype: str
    small: Small
    where: str


def targets(
    gpu_class: str,
    loaded: nb_tables.Tables,
    interpreter: bool,
    kernels: list[str] | None = None,
    dtypes: set[str] | None = None,
) -> tuple[list[Target], list[str]]:
    """The shipped settings this class's check runs beyond its own entries, and those it cannot (why).

    Each in every dtype it is shipped for that the class runs (its own tables' dtypes), bf16 standing in
    as fp16 on the interpreter; skipped where the class's own tables already hold it in that dtype."""
    own_dtypes: set[str] = set()
    own: set[tuple[str, str, str]] = set()
    for kernel in loaded.kernels(gpu_class):
        index = loaded.index(gpu_class, kernel)
        for entry in index.entries if index is not None else ():
            own_dtypes.update(entry.domain.dtypes)
            own.update((kernel, distinct(entry.config, interpreter), d) for d in entry.domain.dtypes)
    found, not_run = [], []
    for item in shipped_settings(loaded, interpreter, kernels):
        wanted = {STAND_IN.get(d, d) if interpreter else d for d in item.dtypes} & own_dtypes
        if dtypes is not None:
            wanted &= dtypes
        key = distinct(item.config, interpreter)
        run = sorted(d for d in wanted if (item.kernel, key, d) not in own)
        if not wanted and dtypes is None:
            not_run.append(f"{item.kernel} {item.config} ({item.where()}): no dtype of it runs on {gpu_class}")
        small = RECORDS[item.kernel].small(item.config)
        for dtype in run:
            ranges = tuple((dim, lo, hi) for dim, (lo, hi) in small.ranges.items())
            found.append(
                Target(item.kernel, Setting(Domain((dtype,), ranges), item.config), dtype, small, item.where())
            )
    own_kernels = set(loaded.kernels(gpu_class))
    return found + offered_targets(loaded, interpreter, own_dtypes, own_kernels, kernels, dtypes), not_run


OFFERED_IN = "bf16"  # the dtype the GPU classes certify; an offered setting is checked in it (fp16 on the interpreter)


def offered_targets(
    loaded: nb_tables.Tables,
    interpreter: bool,
    own_dtypes: set[str],
    own_kernels: set[str],
    kernels: list[str] | None = None,
    dtypes: set[str] | None = None,
) -> list[Target]:
    """The records' offered settings (``Record.offered``) that no class ships, at their small shapes: the code
    paths the candidates may choose tomorrow, checked today (a shipped one is checked as shipped already), for the
    kernels the class's own tables hold (a class that runs no linear has no linear path to check); and their latent
    ones (``Record.latent``): paths the kernel keeps that no candidate offers (decode's merge over padded splits)."""
    shipped = {(s.kernel, distinct(s.config, interpreter)) for s in shipped_settings(loaded, interpreter, kernels)}
    dtype = STAND_IN.get(OFFERED_IN, OFFERED_IN) if interpreter else OFFERED_IN
    found = []
    for kernel, record in RECORDS.items():
        if kernel not in own_kernels or (kernels and kernel not in kernels):
            continue
        if dtype not in own_dtypes or (dtypes is not None and dtype not in dtypes):
            continue
        for config, where in (
            *(
                (c, f"offered by the candidates, shipped by no class: checked in {dtype} for {OFFERED_IN}")
                for c in record.offered
            ),
            *((c, f"{LATENT}: checked in {dtype} for {OFFERED_IN}") for c in record.latent),
        ):
            if (kernel, distinct(config, interpreter)) in shipped:
                continue
            small = record.small(config)
            ranges = tuple((dim, lo, hi) for dim, (lo, hi) in small.ranges.items())
            found.append(Target(kernel, Setting(Domain((dtype,), ranges), dict(config)), dtype, small, where))
    return found


# where a latent setting (``Record.latent``) is said to come from
LATENT = "a path the kernel keeps, offered by no candidate"
