"""`python -m conformance check`: every entry of every table of a class, against float64, with Hypothesis.

For each entry and each of its dtypes, Hypothesis draws shapes from the entry's whole domain
(unbounded dimensions up to the documented caps below) and values of every kind, runs the kernel
through the engine's own lookup (so the entry's config is the one used: domains are disjoint),
and compares every output with float64 under its bound. A failure is shrunk and reported with
the entry that failed.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurobrix import tables as nb_tables
from neurobrix.errors import UsageError
from neurobrix.gpu import device_facts, interpreter_enabled, matches
from neurobrix.schema import Entry, KernelTable

from .harness import Values, build, judge, run_kernel
from .strategies import KINDS, profile, shapes

# Unbounded dimensions (the interpreter class's domains) are drawn up to these sizes: large enough
# to cross every block size the interpreter candidates use (64) with tails, small enough for CPU CI.
CAPS: dict[str, dict[str, int]] = {
    "linear": {"M": 80, "N": 96, "K": 96},
    "rms_norm": {"M": 40, "N": 300},
    "rotary": {"T": 24, "H": 12, "D": 128},
    "silu_mul": {"M": 40, "I": 300},
    "attention_prefill": {"S": 80, "D": 128, "G": 8},
    "attention_decode": {"B": 4, "S": 160, "D": 128, "G": 8},
}
# Calls the kernels never receive: rotary needs a q and a kv head and an even head dim.
MULTIPLE_OF = {"rotary": {"D": 2}}
LOWEST = {"rotary": {"H": 2, "D": 2}}


def device() -> torch.device:
    return torch.device("cpu" if interpreter_enabled() else "cuda")


def drawable(kernel: str, ranges: tuple[tuple[str, int, int | None], ...]) -> dict[str, tuple[int, int | None]]:
    lowest = LOWEST.get(kernel, {})
    return {dim: (max(lo, lowest.get(dim, 1)), hi) for dim, lo, hi in ranges}


@dataclass
class EntryResult:
    kernel: str
    dtype: str
    domain: str
    config: dict[str, Any]
    examples: int = 0
    worst_ratio: float = 0.0
    worst_relative: float = 0.0
    passed: bool = True
    failure: str | None = None
    seconds: float = 0.0


def check_entry(kernel: str, entry: Entry, dtype: str, examples: int, profile_name: str,
                on_example: Callable[[], None] | None = None) -> EntryResult:
    """Hypothesis over the entry's whole domain for one dtype; the engine picks the config itself."""
    result = EntryResult(kernel, dtype, entry.domain.describe(), dict(entry.config))
    domain = drawable(kernel, entry.domain.ranges)
    shape_strategy = shapes(domain, cap=CAPS[kernel], multiple_of=MULTIPLE_OF.get(kernel))
    failing: list[str] = []
    dev = device()

    @settings(parent=profile(profile_name), max_examples=examples)
    @given(shape=shape_strategy, seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(KINDS))
    def conforms(shape: dict[str, int], seed: int, kind: str) -> None:
        case = build(kernel, dtype, shape, Values(dtype, dev, seed, (kind,)))
        verdict = judge(case, run_kernel(case), entry.config)
        if not failing:
            result.examples += 1
            result.worst_ratio = max(result.worst_ratio, verdict.ratio)
            result.worst_relative = max(result.worst_relative, verdict.relative)
            if on_example:
                on_example()
        if verdict.ratio > 1:
            failing[:] = [f"{case.describe()} [values: {kind}, seed {seed}]\n{verdict.explanation}"]
            raise AssertionError(failing[0])

    start = time.perf_counter()
    try:
        conforms()
    except AssertionError:
        result.passed = False
        result.failure = failing[-1] if failing else "assertion failed"
    except Exception as exc:  # a crash is a failure of the entry, reported, not a crash of check
        result.passed = False
        result.failure = f"{type(exc).__name__}: {exc}" + (f"\nlast example: {failing[-1]}" if failing else "")
    result.seconds = time.perf_counter() - start
    return result


@dataclass
class Report:
    gpu_class: str
    tables: str
    profile: str
    results: list[EntryResult] = field(default_factory=list)
    seconds: float = 0.0
    left: int = 0  # entries not checked (stopped at the time limit)

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def complete(self) -> bool:
        return self.left == 0

    def summary(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for r in self.results:
            s = out.setdefault(r.kernel, {"entries": 0, "examples": 0, "worst_ratio": 0.0, "worst_relative": 0.0,
                                          "failed": 0})
            s["entries"] += 1
            s["examples"] += r.examples
            s["worst_ratio"] = max(s["worst_ratio"], r.worst_ratio)
            s["worst_relative"] = max(s["worst_relative"], r.worst_relative)
            s["failed"] += not r.passed
        return out

    def as_json(self) -> dict[str, Any]:
        return {"class": self.gpu_class, "tables": self.tables, "profile": self.profile, "passed": self.passed,
                "complete": self.complete, "left": self.left, "seconds": round(self.seconds, 1),
                "summary": self.summary(),
                "entries": [asdict(r) for r in self.results]}


def require_device_of(gpu_class: str, loaded: nb_tables.Tables) -> None:
    """Checking (or certifying) a class means running on it: refuse on any other device."""
    if gpu_class not in loaded.classes:
        raise UsageError(f"no GPU class {gpu_class!r} in {loaded.location.root}; classes: "
                         f"{', '.join(sorted(loaded.classes)) or 'none'}")
    facts = device_facts()
    if not matches(loaded.classes[gpu_class], facts):
        raise UsageError(
            f"this machine is not a {gpu_class}: {facts.describe()}. Run this on a {gpu_class} "
            f"({loaded.classes[gpu_class].description})"
            + ("; for the interpreter class set TRITON_INTERPRET=1" if gpu_class == "interpreter" else "")
        )


def select(table: KernelTable, dtypes: set[str] | None) -> list[tuple[Entry, str]]:
    return [(e, d) for e in table.entries for d in e.domain.dtypes if dtypes is None or d in dtypes]


def check_class(gpu_class: str, kernels: list[str] | None, dtypes: set[str] | None, examples: int | None,
                profile_name: str, progress: Any = None, jobs: int | None = None,
                max_minutes: float | None = None) -> Report:
    """Every selected entry checked; with several workers (``jobs``, GPUs) entries run in parallel.

    ``max_minutes``: stop starting new entries after about that long; the report says how many were left.
    """
    from . import workers

    loaded = nb_tables.load()
    require_device_of(gpu_class, loaded)
    have = loaded.kernels[gpu_class]
    if not have:
        raise UsageError(f"class {gpu_class} has no kernel tables in {loaded.location.root}; certify it first: "
                         f"{nb_tables.certify_command(gpu_class)}")
    for kernel in kernels or []:
        if kernel not in have:
            raise UsageError(f"class {gpu_class} has no table for kernel {kernel!r}; it has {', '.join(sorted(have))}")
    chosen = sorted(kernels or have)
    work = [(k, e, d) for k in chosen for e, d in select(have[k], dtypes)]
    n = examples or profile(profile_name).max_examples
    report = Report(gpu_class, str(loaded.location.root), profile_name)
    devices: list[int | None] = [None] if interpreter_enabled() else (workers.same_class_gpus() or [None])
    jobs = workers.default_jobs(devices) if jobs is None else jobs
    start = time.perf_counter()
    task = progress.add_task("check", total=len(work)) if progress else None

    def done(i: int) -> None:
        if progress:
            kernel, entry, dtype = work[i]
            progress.update(task, advance=1, description=f"{kernel} {dtype} {entry.domain.describe()}")

    deadline = start + max_minutes * 60 if max_minutes is not None else None
    chunk = max(2, 2 * jobs)  # small waves: the time limit is checked between them
    longest = 0.0
    with workers.Workers(jobs, devices) as pool:
        for first in range(0, len(work), chunk):
            now = time.perf_counter()
            if deadline is not None and now + longest > deadline:  # the next wave would overrun
                report.left = len(work) - first
                break
            part = work[first:first + chunk]
            results = pool.map(check_entry, [(k, e, d, n, profile_name) for k, e, d in part],
                               lambda i, first=first: done(first + i))
            for (kernel, entry, dtype), result in zip(part, results):
                if isinstance(result, workers.Failed):  # the worker died under it: a failure of the entry
                    result = EntryResult(kernel, dtype, entry.domain.describe(), dict(entry.config), passed=False,
                                         failure=f"the check could not run: {result.message}")
                report.results.append(result)
            longest = max(longest, time.perf_counter() - now)
    report.seconds = time.perf_counter() - start
    return report


def render(report: Report) -> str:
    lines = [f"conformance check of class {report.gpu_class} ({report.tables}), profile {report.profile}",
             f"  {'kernel':<18} {'entries':>7} {'examples':>8} {'worst err/bound':>15} {'failed':>6}"]
    for kernel, s in sorted(report.summary().items()):
        lines.append(f"  {kernel:<18} {s['entries']:>7} {s['examples']:>8} {s['worst_ratio']:>15.3f} {s['failed']:>6}")
    for r in report.results:
        if not r.passed:
            lines.append(f"FAILED {r.kernel} {r.dtype} {r.domain} config {r.config}:\n  "
                         + (r.failure or "").replace("\n", "\n  "))
    total = sum(r.examples for r in report.results)
    verdict = "PASSED" if report.passed else "FAILED"
    if report.passed and not report.complete:
        verdict = "INCOMPLETE (no failure so far)"
    lines.append(f"{verdict}: {len(report.results)} entry checks, {total} examples, {report.seconds:.1f} s"
                 + (f"; {report.left} entry checks not run (time limit)" if report.left else ""))
    return "\n".join(lines)


def parse_dtypes(values: list[str] | None) -> set[str] | None:
    if not values:
        return None
    unknown = [v for v in values if v not in ("fp32", "fp16", "bf16")]
    if unknown:
        raise UsageError(f"unknown dtype(s) {', '.join(unknown)}; choose from fp32, fp16, bf16")
    return set(values)
