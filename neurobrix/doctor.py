"""`neurobrix doctor`: what this machine has, and whether anything blocks a real run on it."""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from importlib import metadata
from typing import Any

from . import __version__
from .errors import NeuroBrixError, counted, printable
from .tables import MISMATCH_FIX, Tables, certify_command, check_files, load, locate, read_tracked

OK, WARN, FAIL, INFO = "ok", "warn", "FAIL", "info"


@dataclass(frozen=True)
class Finding:
    name: str
    status: str  # ok | warn | FAIL | info
    value: str


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


# every NEUROBRIX_* variable the project reads: the model store, the tables, and the source commit certify records
KNOWN_VARIABLES = ("NEUROBRIX_HOME", "NEUROBRIX_TABLES", "NEUROBRIX_SOURCE_COMMIT")


def environment_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """Why the environment's NEUROBRIX_* variables would be ignored (None: none would): one the project does not
    read is a misspelling, and without it the engine reads what it would have replaced in silence (the packaged
    tables for a NEUROBRIX_TABLE, the default store for a NEUROBRIX_HOMES)."""
    import difflib

    environ = os.environ if environ is None else environ
    unknown = sorted(name for name in environ if name.startswith("NEUROBRIX_") and name not in KNOWN_VARIABLES)
    if not unknown:
        return None
    said = []
    for name in unknown:
        close = difflib.get_close_matches(name, KNOWN_VARIABLES, n=1)
        said.append(f"{name} (did you mean {close[0]}?)" if close else name)
    return (
        f"NeuroBrix reads no variable {', '.join(said)}: it would be ignored, and what it was meant to replace read "
        f"instead; the variables it reads are {', '.join(KNOWN_VARIABLES)}. Rename or unset it"
    )


def _told(exc: BaseException) -> str:
    """An error's message as a finding's value: in the lines the engine laid it out in (NeuroBrixError.lines), each
    escaped, or escaped whole, so that a path it quotes (NEUROBRIX_TABLES, NEUROBRIX_HOME holding a line feed or ESC)
    stays on its line: render splits a value at its line feeds, and a line feed of a quoted name split the finding."""
    lines = getattr(exc, "lines", ())
    return "\n".join(printable(line) for line in lines) if lines else printable(str(exc))


def diagnose() -> list[Finding]:
    """Every fact doctor reports; a FAIL is something that blocks a real run on this machine."""
    found = [
        Finding("python", INFO, f"{platform.python_version()} ({platform.python_implementation()})"),
        Finding("neurobrix", INFO, __version__),
    ]
    unknown = environment_problem()
    if unknown:
        found.append(Finding("environment", FAIL, unknown))
    torch_version = _version("torch")
    if torch_version is None:
        found.append(Finding("torch", FAIL, "not installed"))
    else:
        import torch

        build = (
            f"CUDA {torch.version.cuda}"
            if torch.version.cuda
            else (f"ROCm {torch.version.hip}" if getattr(torch.version, "hip", None) else "CPU-only build")
        )
        found.append(Finding("torch", OK, f"{torch.__version__} ({build})"))
    triton_version = _version("triton")
    if triton_version is not None or _importable("triton"):  # (PyTorch's build is the distribution pytorch-triton)
        import triton

        from .stack import installed_version

        try:  # the version the stack rule reads: the installed distribution's, not the one triton states
            triton_version = installed_version(triton)
            found.append(Finding("triton", OK, triton_version))
        except NeuroBrixError as exc:
            found.append(Finding("triton", FAIL, _told(exc)))
    else:
        found.append(Finding("triton", FAIL, "not installed"))
        torch_version = None  # the kernels need both: nothing past the store can be looked at

    tables: Tables | None = None
    try:
        location = locate()
        found.append(Finding("tables", INFO, printable(f"{location.root} ({location.origin})")))
        tracked = read_tracked(location.root, location.origin)
        problems = check_files(location.root, tracked)
        if problems:
            said = [printable(f"{p.path}: {p.message}") for p in problems]  # (a name's line feed: escaped)
            said[-1] += f"\n{MISMATCH_FIX}"  # what to do, as `run` says it (doctor named the files only)
            found.extend(Finding("integrity", FAIL, line) for line in said)
        else:
            tables = load()
            found.append(Finding("integrity", OK, f"{len(tracked)} tracked files, every sha256 and size matches"))
    except NeuroBrixError as exc:
        found.append(Finding("integrity", FAIL, _told(exc)))

    from .store import models_dir, store_problem

    problem = store_problem()
    store = Finding("store", FAIL, problem) if problem else Finding("store", INFO, str(models_dir()))
    found.append(Finding(store.name, store.status, printable(store.value)))  # (a path: one line)
    if torch_version is None:  # torch or triton not installed (a FAIL above): the kernels import both
        return found

    from .kernel_source import require_kernel_sources
    from .stack import installed_kernels_problem

    try:
        require_kernel_sources()  # a source that is no Python, before installed_kernels_problem imports them
        kernels = installed_kernels_problem()
    except NeuroBrixError as exc:  # a module shadowing a kernel's source (neurobrix.ops)
        found.append(Finding("kernel sources", FAIL, _told(exc)))
        return found
    if kernels:
        found.append(Finding("kernel sources", FAIL, f"{kernels}."))

    from .gpu import classify, device_facts

    try:
        facts = device_facts()
        found.append(Finding("device", OK, facts.describe()))
    except NeuroBrixError as exc:
        found.append(Finding("device", FAIL, _told(exc)))
        return found
    if tables is None:
        return found
    try:
        gpu_class = classify(facts, tables)
    except NeuroBrixError as exc:
        found.append(Finding("class", FAIL, _told(exc)))
        return found
    found.append(Finding("class", OK, f"{gpu_class.id}: {gpu_class.description}"))
    from .ops import SPECS

    try:
        have = {k: tables.index(gpu_class.id, k) for k in tables.kernels(gpu_class.id)}
    except NeuroBrixError as exc:
        found.append(Finding("kernels", FAIL, _told(exc)))
        return found
    missing = sorted(set(SPECS) - set(have))
    unrunnable = _unrunnable(have, gpu_class)
    if unrunnable:  # what run refuses (exit 3) at its preflight, whatever the model: doctor said "ready"
        found.append(Finding("kernels", FAIL, unrunnable))
    elif missing:
        found.append(
            Finding(
                "kernels",
                FAIL,
                f"no certified table for {', '.join(missing)}; certify: {certify_command(gpu_class.id, missing)}",
            )
        )
    else:
        entries = sum(len(t.rows) for t in have.values() if t is not None)
        found.append(
            Finding(
                "kernels",
                OK,
                f"{len(SPECS)} engine kernels, {counted(len(have), 'table')}, "
                f"{counted(entries, 'certified entry', 'certified entries')}",
            )
        )
    if torch_version and triton_version:
        from .stack import cache_problem, compiler_problem, verdict

        try:
            found_stack = verdict(gpu_class.id, tables)
        except NeuroBrixError as exc:
            found.append(Finding("stack", FAIL, _told(exc)))
        else:
            found.append(Finding("stack", OK if found_stack.ok else FAIL, found_stack.describe()))
            if found_stack.reproof is None and have:  # (a local re-proof checked these kernels' code itself)
                from .stack import sources_pending, sources_problem

                try:
                    problem = sources_problem(gpu_class.id, tables)
                    pending = sources_pending(gpu_class.id, tables)
                except NeuroBrixError as exc:  # kernel code its sources' syntax trees cannot bind
                    problem, pending = str(exc).rstrip("."), None
                found.append(
                    Finding(
                        "kernel code",
                        FAIL if problem else WARN if pending else OK,
                        f"{problem}."
                        if problem
                        else pending.removeprefix("note: ")
                        if pending
                        else "every table's proofs were made on its kernel's code as it is here",
                    )
                )
        problem = compiler_problem(gpu_class.id)
        if problem:
            found.append(Finding("compiler", FAIL, f"{problem}."))
        problem = cache_problem(gpu_class.id)
        if problem:
            found.append(Finding("triton cache", FAIL, f"{problem}."))
        elif gpu_class.id != "interpreter":  # where warmup puts the compiled kernels and run finds them
            found.append(Finding("triton cache", INFO, printable(_cache_folder())))  # (a path: one line)
    return found


def _cache_folder() -> str:
    """Where a GPU class's compiled kernels go, and who named it (the engine's own, or a variable of the user's)."""
    from .stack import CACHE_ENV, _named, engine_cache

    engine = engine_cache()
    if engine is not None:
        return f"{engine} (the engine's own; TRITON_CACHE_DIR or TRITON_HOME would name another)"
    name = next(n for n in CACHE_ENV if _named(n) is not None)
    value = _named(name)
    return f"{value} (TRITON_CACHE_DIR)" if name == "TRITON_CACHE_DIR" else f"{value}/.triton/cache (TRITON_HOME)"


def _unrunnable(indexes: dict, gpu_class: Any = None) -> str | None:
    """The first settings index of the class that this neurobrix's kernels cannot run, whatever the call (None: none):
    keyed otherwise than its kernel, or holding a setting with a variant or meta-parameter the kernel lacks or does
    not know, or a value no kernel takes, or one no call of its entry's domain can run (beyond Triton's largest tensor,
    the class's shared memory or a 32-bit integer at the domain's smallest call); run's preflight refuses such a
    table (exit 3) for any model whose calls reach it."""
    from .ops import SPECS
    from .plan import config_problem, smallest_call_problem

    for kernel, index in sorted(indexes.items()):
        spec = SPECS.get(kernel)
        if spec is None or index is None:
            continue
        if (index.key, index.rules) != (spec.key, spec.buckets):
            return (
                f"{index.path}: keyed by {list(zip(index.key, index.rules))}, this neurobrix's '{kernel}' kernel by "
                f"{list(zip(spec.key, spec.buckets))}: run refuses it; re-certify: "
                f"{certify_command(index.class_id, [kernel], again=True)}"
            )
        again = certify_command(index.class_id, [kernel], again=True)
        for config in index.configs:
            problem = config_problem(kernel, config)
            if problem:
                return f"{index.path}: the setting {dict(config)} {problem}: run refuses it; re-certify: {again}"
        for i in range(len(index.rows)):  # a setting no call of its entry's domain runs (plan.entry_problem)
            entry = index.entry(i)
            problem = smallest_call_problem(kernel, entry.config, entry.domain, gpu_class)
            if problem:
                return (
                    f"{index.path}: the setting {dict(entry.config)} of entry {i} ({entry.domain.describe()}) "
                    f"{problem}: run refuses it; re-certify: {again}"
                )
    return None


def _importable(name: str) -> bool:
    import importlib.util
    import sys

    return name in sys.modules or importlib.util.find_spec(name) is not None


def blocked(findings: list[Finding]) -> bool:
    return any(f.status == FAIL for f in findings)


def as_json(findings: list[Finding]) -> dict:
    return {"ok": not blocked(findings), "findings": [asdict(f) for f in findings]}


def render(findings: list[Finding]) -> str:
    width = max(len(f.name) for f in findings)
    lines = ["NeuroBrix doctor"]
    for f in findings:
        # a finding quotes what it read (an error's message, a path): each line printed as text, as errors are
        value = ("\n" + " " * (width + 10)).join(printable(line) for line in f.value.split("\n"))
        lines.append(f"  {f.status:<5} {f.name:<{width}}  {value}")
    fails = [f.name for f in findings if f.status == FAIL]
    lines.append(
        f"verdict: blocked by {', '.join(fails)}" if fails else "verdict: ready: nothing blocks a run on this machine"
    )
    return "\n".join(lines)
