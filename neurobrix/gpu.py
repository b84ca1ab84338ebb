"""GPU class detection: read this machine's device facts once, lazily, and match them to a class.

The Triton interpreter (``TRITON_INTERPRET=1``, CPU) is the class ``interpreter``. Otherwise the
first CUDA/HIP device's facts (vendor, name, compute capability, multiprocessor count) must match
exactly one shipped ``class.yaml``. Nothing here runs at import time.
"""

from __future__ import annotations

import functools
import os
from dataclasses import asdict, dataclass

from .errors import NoGPUError, UncertifiedGPUError
from .schema import GPUClass, device_problem
from .tables import Tables, certify_command, load


@dataclass(frozen=True)
class DeviceFacts:
    backend: str  # "cuda", "hip" or "interpreter"
    vendor: str
    name: str
    compute_capability: tuple[int, int] | None = None
    multiprocessor_count: int | None = None
    total_memory_gib: float | None = None

    def describe(self) -> str:
        facts = [f"name {self.name!r}", f"backend {self.backend}", f"vendor {self.vendor}"]
        if self.compute_capability is not None:
            facts.append(f"compute capability {self.compute_capability[0]}.{self.compute_capability[1]}")
        if self.multiprocessor_count is not None:
            facts.append(f"{self.multiprocessor_count} multiprocessors")
        return ", ".join(facts)

    def as_dict(self) -> dict:
        return asdict(self)


# the values of TRITON_INTERPRET that turn Triton's interpreter on, read as Triton reads them (its knobs'
# env_bool, any case): the engine must agree with Triton on whether its kernels run in the interpreter
INTERPRET_ON = ("1", "y", "yes", "on", "true")


def interpreter_enabled() -> bool:
    return os.environ.get("TRITON_INTERPRET", "").lower() in INTERPRET_ON


@functools.lru_cache(maxsize=1)
def device_facts() -> DeviceFacts:
    """Facts about the device the engine would run on; NoGPUError when there is none."""
    if interpreter_enabled():
        return DeviceFacts("interpreter", "triton", "Triton interpreter (CPU)")
    import torch  # late: verifying tables must not need torch

    if not torch.cuda.is_available():
        raise NoGPUError(
            "no GPU found (torch.cuda.is_available() is False) and the Triton interpreter is off.",
            "  On a CPU, TRITON_INTERPRET=1 runs the kernels in the interpreter (slow; for tests), "
            "or, for `neurobrix run`, choose PyTorch's own kernels explicitly with --backend torch (they need no "
            "certified tables, so there is nothing to warm up).",
        )
    return facts_of(0)


def facts_of(index: int) -> DeviceFacts:
    """The facts of CUDA/HIP device ``index`` (read now, not cached)."""
    import torch

    props = torch.cuda.get_device_properties(index)
    backend = "hip" if getattr(torch.version, "hip", None) else "cuda"
    return DeviceFacts(
        backend=backend,
        vendor="amd" if backend == "hip" else "nvidia",
        name=props.name,
        compute_capability=(props.major, props.minor),
        multiprocessor_count=props.multi_processor_count,
        total_memory_gib=round(props.total_memory / 2**30, 1),
    )


def matches(gpu_class: GPUClass, facts: DeviceFacts) -> bool:
    """Whether the device is of the class: the rule ``tables verify`` holds a proof's recorded device to as well."""
    return device_problem(gpu_class.match, facts.as_dict()) is None


def classify(facts: DeviceFacts, tables: Tables) -> GPUClass:
    """The one class whose class.yaml matches these facts, or UncertifiedGPUError."""
    found = [c for c in tables.classes.values() if matches(c, facts)]
    if len(found) == 1:
        return found[0]
    certified = ", ".join(sorted(tables.classes)) or "none"
    if found:
        raise UncertifiedGPUError(
            f"this device ({facts.describe()}) matches several GPU classes: "
            f"{', '.join(c.id for c in found)}; their class.yaml files in {tables.location.root} must be "
            "made disjoint."
        )
    raise UncertifiedGPUError(
        f"this GPU is not certified: {facts.describe()}.",
        f"  certified classes ({tables.location.root}): {certified}",
        "  To certify it, add tables/<class-id>/class.yaml for it in a source checkout, record it with `python -m "
        f"conformance track` and run {certify_command('<class-id>')} on this GPU (CONTRIBUTING.md, 'Certify a new "
        "GPU class', walks through every step).",
    )


def detect_class(tables: Tables | None = None) -> GPUClass:
    """This machine's GPU class (NoGPUError / UncertifiedGPUError when there is none)."""
    return classify(device_facts(), tables if tables is not None else load())
