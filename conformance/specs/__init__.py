"""The conformance registry: one record per op, the OpInfo way (PyTorch's ``opinfo``).

A record says how to make the engine's call for a key shape (edges included: the case builder), how
to judge the op's outputs (its float64 reference from ``conformance/reference.py`` and its bound
from ``conformance/bounds.py``), how far unbounded dimensions are drawn, which calls the kernel never
receives, the interpreter class's domains, and the small shapes at which any setting of the op is
checked on the interpreter (``small``: where a setting's blocks and splits meet the key's dimensions).
One generic harness (``conformance.harness``), checker and certifier run every record; nothing
anywhere switches on an op's name.

A record lives in ``conformance/specs/<op>.py`` as ``RECORDS`` (a tuple: one module may hold several
ops); this package finds them itself, and refuses an op of the engine without one.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from ..harness import Case, Values

Ranges = tuple[tuple[str, int, "int | None"], ...]
# (actual, float64 reference, elementwise bound[, what it is]) for each output the op's contract covers
Pair = tuple[Any, ...]


@dataclass(frozen=True)
class Small:
    """The small shapes one setting is checked at on the interpreter (``conformance check --shipped``).

    A setting's logic does not depend on the size of a shape, only on where the shape meets its blocks
    and splits: ``ranges`` ({dim: (lo, hi)}) cross every block and split boundary of the setting with
    tails, ``blocks`` ({dim: sizes}) names those boundaries so the drawn shapes sit on and beside them
    (see ``strategies.edge_values``), ``multiple_of`` the calls the setting cannot take (e.g. TMA rows
    of 16 bytes). Kept small: the interpreter pays about 0.5 ms per program (FACTS.md)."""

    ranges: Mapping[str, tuple[int, int]]
    blocks: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    multiple_of: Mapping[str, int] = field(default_factory=dict)
    # shapes checked first, whatever is drawn (Hypothesis's explicit examples, values "normal", seed 0): a boundary
    # the ci profile's 25 draws over several dimensions rarely reach all at once (linear's second group of row
    # blocks needs M past GROUP_M x BLOCK_M: no tma entry's draws got there on 2026-12-05)
    explicit: tuple[Mapping[str, int], ...] = ()


class Refused(Exception):
    """A judge's verdict that needs no ratio: the op did something its contract forbids outright
    (e.g. wrote a KV-cache row that is not one of its positions)."""


@dataclass(frozen=True)
class Record:
    name: str
    # the engine's call for a key shape, drawn with ``values``: (keyword arguments of the op, note)
    build: Callable[[Mapping[str, int], Values], tuple[dict[str, Any], dict[str, Any]]]
    # each output against float64 under its bound; may raise Refused
    judge: Callable[[Case, tuple[torch.Tensor, ...], Mapping[str, Any]], list[Pair]]
    bound: str  # the bound's name, as proofs record it
    caps: Mapping[str, int]  # unbounded dimensions are drawn up to these (CPU CI sizes)
    sweep: Mapping[str, tuple[int, int]]  # a catalogue-sized domain for `conformance sweep` (a new GPU's smoke test)
    small: Callable[[Mapping[str, Any]], Small]  # a setting -> the small shapes it is checked at on the interpreter
    multiple_of: Mapping[str, int] = field(default_factory=dict)  # calls the kernel never receives
    lowest: Mapping[str, int] = field(default_factory=dict)
    # the interpreter class's domains (each dimension's ranges), when not one unbounded domain
    interpreter_domains: tuple[Ranges, ...] = ()
    # before each run on a case: restore inputs an earlier run wrote into (rotary's KV caches)
    reset: Callable[[Case], None] | None = None
    # GPU timing only (certify's choice among candidates, ``benchmarks.kernels``): reshape the i-th of n input sets
    # at the top shape as the engine's runs present them, where a random draw would not (a decode cache is filled
    # up to its capacity only at a run's end); ``timing_sets`` sets at least, ``timing_note`` says how, in proofs
    timing: Callable[[dict[str, Any], int, int], None] | None = None
    timing_sets: int = 1
    timing_note: str = ""
    # settings a GPU class's candidates offer that run a code path (a constexpr branch) no shipped setting may run
    # today: ``check --shipped`` checks each at its small shapes too (bf16 ones in fp16 on the interpreter), so a bug
    # there is caught before certify ships it, and a table that stops shipping the path leaves it checked
    offered: tuple[Mapping[str, Any], ...] = ()
    # settings no candidate offers that run a path the kernel's code keeps for them (decode's merge padded past a
    # split count that is not a power of two): ``check --shipped`` checks each at its small shapes as it checks an
    # offered one, so a bug there is caught before a candidate offers the path
    latent: tuple[Mapping[str, Any], ...] = ()
    # shapes at an edge of the op's own contract, not of a setting's blocks (greedy_pick's tokens past int16's range
    # need a vocabulary past 32,768, which no draw capped for the interpreter reaches): checked first (values
    # "normal", seed 0) in every entry and shipped setting whose domain holds them, as ``Small.explicit`` is
    edges: tuple[Mapping[str, int], ...] = ()


def _discover() -> dict[str, Record]:
    from neurobrix.ops import SPECS

    found: dict[str, Record] = {}
    for module_info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for record in getattr(module, "RECORDS", ()):
            if record.name in found:
                raise RuntimeError(f"conformance record for {record.name!r} declared twice")
            found[record.name] = record
    unknown = sorted(set(found) - set(SPECS))
    missing = sorted(set(SPECS) - set(found))
    if unknown or missing:  # one line (exit 1), not a traceback: a kernel being added, between two of its steps
        from neurobrix.errors import NeuroBrixError

        said = []
        if missing:
            said.append(f"ops without a record: {', '.join(missing)} (add conformance/specs/<op>.py with its RECORDS)")
        if unknown:
            said.append(
                f"records without an op: {', '.join(unknown)} (add the op's module to MODULES in "
                "neurobrix/ops/__init__.py, its SPECS naming the op, or remove the record)"
            )
        raise NeuroBrixError("conformance records and engine ops disagree: " + "; ".join(said))
    return dict(sorted(found.items()))


RECORDS: dict[str, Record] = _discover()
