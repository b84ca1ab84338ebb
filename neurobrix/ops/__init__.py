"""The engine's ops, found from the op modules' ``SPECS``, and the three ways the model calls them.

``TORCH``               PyTorch's own kernels (``--backend torch``, chosen explicitly, never by itself)
``certified(settings)`` the Triton kernels, each call with the setting a certified plan resolved for it
                        before any weight was read; a call the plan does not hold is refused (``pdl``:
                        launched with programmatic dependent launch, where the class says it pays)
``recording(calls)``    each call's (op, dtype, key) added to ``calls`` and its outputs made empty (run
                        it on meta tensors: no memory, no compute): how preflight lists a forward pass

All three expose one function per op with the same arguments (``ops.linear(x, w, b)``); the model is
written against that.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import CompilerStackError, MissingEntryError, UsageError
from .rotary import rope_cache
from .spec import Config, OpSpec

BACKENDS = ("triton", "torch")
PlannedCall = tuple[str, str, tuple[int, ...]]  # (op, dtype, key values)


# The op modules this neurobrix ships, by name: the engine imports these and no others. A module found in the folder
# is not imported for being there (one another tool, a distribution or a user left in an installed neurobrix/ops
# could declare or shadow a kernel), and each of these must be its own source file, neurobrix/ops/<name>.py: Python
# takes a compiled extension (<name>.*.so) or a package folder (<name>/) of the name before the source, and those are
# no code a certified setting was proven on. The tests hold this list to the sources of a checkout's folder.
MODULES = ("attention", "linear", "pick", "rms_norm", "rotary", "silu_mul")
# the files the kernels are made of: the op modules and what they share (``neurobrix.stack.kernels_digest``)
SOURCES = ("__init__.py", "_common.py", "spec.py", *(f"{name}.py" for name in MODULES))


def _discover() -> dict[str, OpSpec]:
    found: dict[str, OpSpec] = {}
    folder = Path(__file__).resolve().parent
    for name in MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        origin = getattr(module, "__file__", None)
        if origin is None or Path(origin).resolve() != folder / f"{name}.py":
            raise CompilerStackError(
                f"neurobrix.ops.{name} was imported from {origin or 'no file'}, not from its source "
                f"{folder / f'{name}.py'}: something beside the installed kernels shadows it (a compiled module or a "
                "folder of that name takes precedence over the source). Remove it, or reinstall neurobrix."
            )
        for spec in getattr(module, "SPECS", ()):
            if spec.name in found:
                raise RuntimeError(f"op {spec.name!r} is declared twice (neurobrix/ops/{name}.py)")
            found[spec.name] = spec
    return dict(sorted(found.items()))


SPECS: dict[str, OpSpec] = _discover()


class Ops:
    """One function per op (``ops.linear``, ``ops.rms_norm``, ...), made from each spec by ``make``."""

    def __init__(self, name: str, make: Callable[[OpSpec], Callable[..., Any]]) -> None:
        self.name = name
        # the plan they launch, where one made them (``neurobrix.plan.Plan.ops``): what a generation checks its
        # tables against (``neurobrix.plan.require_current``)
        self.origin: Any = None
        for spec in SPECS.values():
            setattr(self, spec.name, make(spec))

    def __getattr__(self, name: str) -> Any:  # only reached for a name no spec declared
        raise AttributeError(f"no op {name!r}; ops: {', '.join(SPECS)}")


# The Triton interpreter runs a launch's programs one by one through state of the process (the program's index and
# the grid in one global builder; triton.language's functions replaced for the launch and put back after it): two
# launches at once (two models generating in two threads) read each other's program index, and the first to end put
# the language back under the other, whose programs then computed other tiles than their own or failed. The engine's
# interpreted launches take this lock; a GPU launch is queued on a stream and holds no such state.
INTERPRETED = threading.Lock()


class UnplannedCallError(MissingEntryError):
    """A kernel call the certified plan did not foresee: the engine refuses it rather than guess a setting."""


def certified(
    settings: Mapping[PlannedCall, Config], pdl: bool = False, admit: Callable[[Any], None] | None = None
) -> Ops:
    """The Triton kernels, each call launched with ``settings[(op, dtype, key)]`` (a resolved plan); ``pdl``:
    every kernel launched with programmatic dependent launch (``neurobrix.ops._common.dependent_launch``).

    The ops hold their own arrival counters (``neurobrix.ops.linear.tile_counters``): the process's were shared by
    every model, and two models generating at once (two threads, or a capture's warm-up on its side stream beside
    another model's replays) counted each other's arrivals, a tile merged before its partial sums were stored, or
    never merged. Under the Triton interpreter one launch runs at a time in the process (:data:`INTERPRETED`).

    ``admit(device)``: called once for each device the calls' tensors lie on, before the first launch there, to refuse
    one not of the plan's class (``neurobrix.plan.Plan.ops``: the class was checked on the GPU current when the ops
    were made, and a program may make another GPU current afterwards, ``torch.cuda.set_device(1)``)."""
    import torch

    from . import _common

    counters: dict[Any, Any] = {}  # device -> this plan's counters
    interpreted = _common.INTERPRETER
    admitted: set[Any] = set()  # the devices admit passed

    def make(spec: OpSpec) -> Callable[..., Any]:
        key_of, launch, name = spec.key_of, spec.launch, spec.name
        own = {"counters": counters} if spec.counters else {}

        def op(*args: Any, **kwargs: Any) -> Any:
            dtype, key = key_of(*args, **kwargs)
            config = settings.get((name, dtype, key))
            if config is None:
                shown = ", ".join(f"{d}={v}" for d, v in zip(spec.key, key))
                raise UnplannedCallError(
                    f"{name} {dtype} {shown}: this call was not in the certified plan resolved before loading; "
                    "the engine does not guess a setting (plan the generation's lengths first)"
                )
            if admit is not None:
                device = next((a.device for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)), None)
                if device not in admitted:
                    admit(device)
                    admitted.add(device)
            if interpreted:
                with INTERPRETED:
                    return launch(*args, config=config, pdl=pdl, **own, **kwargs)
            return launch(*args, config=config, pdl=pdl, **own, **kwargs)

        return op

    return Ops("triton+pdl" if pdl else "triton", make)


def recording(calls: set[PlannedCall]) -> Ops:
    """Each call's (op, dtype, key) added to ``calls``, its outputs empty tensors (use meta tensors)."""

    def make(spec: OpSpec) -> Callable[..., Any]:
        def op(*args: Any, **kwargs: Any) -> Any:
            dtype, key = spec.key_of(*args, **kwargs)
            calls.add((spec.name, dtype, tuple(key)))
            return spec.outputs(*args, **kwargs)

        return op

    return Ops("recording", make)


TORCH = Ops("torch", lambda spec: spec.torch)


def backend(name: str) -> Ops:
    """The ops of a backend by name; ``triton`` needs a plan (``certified``), so only ``torch`` is here."""
    if name == "torch":
        return TORCH
    raise UsageError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")


__all__ = ["BACKENDS", "MODULES", "Ops", "OpSpec", "PlannedCall", "SOURCES", "SPECS", "TORCH", "UnplannedCallError",
           "backend", "certified", "recording", "rope_cache"]
