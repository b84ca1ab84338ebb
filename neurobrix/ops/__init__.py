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
import pkgutil
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import MissingEntryError, UsageError
from .rotary import rope_cache
from .spec import Config, OpSpec

BACKENDS = ("triton", "torch")
PlannedCall = tuple[str, str, tuple[int, ...]]  # (op, dtype, key values)


def _discover() -> dict[str, OpSpec]:
    found: dict[str, OpSpec] = {}
    for module_info in pkgutil.iter_modules(__path__):
        if module_info.name.startswith("_") or module_info.name == "spec":
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for spec in getattr(module, "SPECS", ()):
            if spec.name in found:
                raise RuntimeError(f"op {spec.name!r} is declared twice (neurobrix/ops/{module_info.name}.py)")
            found[spec.name] = spec
    return dict(sorted(found.items()))


SPECS: dict[str, OpSpec] = _discover()


class Ops:
    """One function per op (``ops.linear``, ``ops.rms_norm``, ...), made from each spec by ``make``."""

    def __init__(self, name: str, make: Callable[[OpSpec], Callable[..., Any]]) -> None:
        self.name = name
        for spec in SPECS.values():
            setattr(self, spec.name, make(spec))

    def __getattr__(self, name: str) -> Any:  # only reached for a name no spec declared
        raise AttributeError(f"no op {name!r}; ops: {', '.join(SPECS)}")


class UnplannedCallError(MissingEntryError):
    """A kernel call the certified plan did not foresee: the engine refuses it rather than guess a setting."""


def certified(settings: Mapping[PlannedCall, Config], pdl: bool = False) -> Ops:
    """The Triton kernels, each call launched with ``settings[(op, dtype, key)]`` (a resolved plan); ``pdl``:
    every kernel launched with programmatic dependent launch (``neurobrix.ops._common.dependent_launch``)."""

    def make(spec: OpSpec) -> Callable[..., Any]:
        key_of, launch, name = spec.key_of, spec.launch, spec.name

        def op(*args: Any, **kwargs: Any) -> Any:
            dtype, key = key_of(*args, **kwargs)
            config = settings.get((name, dtype, key))
            if config is None:
                shown = ", ".join(f"{d}={v}" for d, v in zip(spec.key, key))
                raise UnplannedCallError(
                    f"{name} {dtype} {shown}: this call was not in the certified plan resolved before loading; "
                    "the engine does not guess a setting (plan the generation's lengths first)"
                )
            return launch(*args, config=config, pdl=pdl, **kwargs)

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


__all__ = ["BACKENDS", "Ops", "OpSpec", "PlannedCall", "SPECS", "TORCH", "UnplannedCallError", "backend",
           "certified", "recording", "rope_cache"]
