"""What an op declares once, in its own file: its key, how certify buckets it, its launcher and its
PyTorch twin, and the settings certify may try.

An op module (``neurobrix/ops/<op>.py``) defines ``SPECS``, a tuple of :class:`OpSpec`; the package
imports the modules it names in ``neurobrix.ops.MODULES`` and no others (a module left in an installed folder
is not a shipped kernel) and gathers their specs (``neurobrix.ops.SPECS``).

The launcher takes its certified setting explicitly (``config=``): it never looks one up, reads the
environment or times anything. ``key_of`` takes the launcher's own arguments and returns the call's
dtype name and key values, which is how the engine's plan (``neurobrix.plan``) finds the setting of
each call before it is made, and how a recorded forward pass lists every call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Config = dict[str, Any]
Span = tuple[int, "int | None"]  # an inclusive range of a key dimension; None: unbounded above
Call = tuple[str, tuple[int, ...]]  # (dtype name, key values in key order)
LAUNCH_OPTIONS = ("num_warps", "num_stages")  # what a setting holds for Triton's launch, not for the kernel


def _no_shared_memory(config: Mapping[str, Any], dims: Mapping[str, int], itemsize: int) -> int:
    return 0


@dataclass(frozen=True)
class OpSpec:
    name: str
    what: str
    key: tuple[str, ...]        # the call dimensions that select a setting
    buckets: tuple[str, ...]    # per key dimension, how certify buckets it (neurobrix.buckets)
    key_of: Callable[..., Call]  # the launcher's arguments -> (dtype, key values)
    launch: Callable[..., Any]  # the Triton launcher: the op's arguments, then config= (and empty=, pdl=)
    torch: Callable[..., Any]   # the same op on PyTorch's kernels: the op's arguments only
    # the op's outputs as empty tensors of their shapes and dtypes, on the inputs' device: how a pass
    # recorded on meta tensors goes on without computing (conformance checks it against the launcher)
    outputs: Callable[..., Any]
    # the candidate settings certify may try on a domain ({dim: (lo, hi)}); interpreter: the Triton
    # interpreter's (CPU) space, else a GPU's
    candidates: Callable[[Mapping[str, Span], bool], list[Config]]
    # a lower estimate of the shared memory a setting needs at these dims, to prune what cannot fit
    shared_memory: Callable[[Mapping[str, Any], Mapping[str, int], int], int] = _no_shared_memory
    # the values of config["variant"] the launcher knows (a kernel with several code paths)
    variants: tuple[str, ...] = ()
    # the meta-parameters of a setting, per variant (None: an op without variants): those it must hold, and
    # those it may; besides them a setting holds launch options (LAUNCH_OPTIONS) and its variant only
    params: Mapping[str | None, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)
    # the launcher takes ``counters=``: arrival counters it keeps at zero between launches (linear's MERGE "last",
    # greedy_pick), which a plan's ops hold for their model alone (``neurobrix.ops.certified``)
    counters: bool = False

    def __post_init__(self) -> None:
        if len(self.key) != len(self.buckets):
            raise ValueError(f"op {self.name}: key {self.key} and buckets {self.buckets} differ in length")

    def rules(self) -> dict[str, str]:
        return dict(zip(self.key, self.buckets))

    def setting_problem(self, config: Mapping[str, Any]) -> str | None:
        """Why the launcher would not run ``config`` as it was certified (None: it would): a meta-parameter it
        lacks, or one this op does not have (Triton's interpreter ignores it, its compiler refuses it at the
        first launch). Its variant, when the op has variants, is known (preflight checks it first)."""
        required, optional = self.params.get(config.get("variant") if self.variants else None, ((), ()))
        known = {*required, *optional, *LAUNCH_OPTIONS, *(("variant",) if self.variants else ())}
        missing = [name for name in required if name not in config]
        if missing:
            return f"lacks {', '.join(missing)}, which this neurobrix's '{self.name}' kernel needs"
        unknown = [name for name in config if name not in known]
        if unknown:
            return f"holds {', '.join(unknown)}, which this neurobrix's '{self.name}' kernel does not have"
        # no kernel takes a fractional meta-parameter or launch option: 64.0 is not the 64 certified (Triton
        # compiles a float constexpr, or fails inside its launcher at the first launch)
        fractional = [f"{name}={value!r}" for name, value in config.items() if isinstance(value, float)]
        if fractional:
            return f"holds {', '.join(fractional)}, where this neurobrix's '{self.name}' kernel takes whole numbers"
        return None
