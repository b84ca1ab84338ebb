"""`python -m conformance certify`: produce a GPU class's tables on its own device, with proofs.

For each kernel domain the class must cover (the catalogue's, bucketed; for the interpreter class
one unbounded domain per kernel), and each dtype:
  1. enumerate the candidate space (candidates.py) and prune what cannot fit the device;
  2. screen every candidate against float64 on the domain's top shape and an odd size below it,
     the candidate handed straight to the op's launcher;
     a wrong result, a compile failure, running out of resources or a crash rejects it, with why;
  3. time the survivors at the domain's top shape: warm-up, then the median of CUDA-graph replays
     over input sets rotated so the L2 cache does not flatter (on the interpreter: CPU wall time);
  4. keep the fastest, prove it with Hypothesis over the whole domain (check.check_entry), and
     write the entry into the settings index and, with its proof and every rejected candidate, into
     the audit record; both files are rewritten after each chunk, and the tracked-file list with
     them, so an interrupted run resumes.
Finally ``check`` runs over everything written.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import os
import signal
import statistics
import subprocess
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
import yaml

import neurobrix
from neurobrix import kernel_source, stack
from neurobrix import tables as nb_tables
from neurobrix.cli import close_hint
from neurobrix.dtypes import torch_dtype
from neurobrix.errors import NeuroBrixError, TablesError, UsageError, counted
from neurobrix.gpu import device_facts, interpreter_enabled
from neurobrix.ops import SPECS
from neurobrix.plan import config_problem
from neurobrix.schema import (
    INDEX_FORMAT,
    Domain,
    Entry,
    GPUClass,
    Proof,
    ProofsTable,
    Rejected,
    Setting,
    SettingsIndex,
    index_data,
    parse_class,
    parse_proofs,
    proofs_data,
    stack_of,
    validate,
)

from . import candidates as cand
from . import catalogue, check, offsets, track, workers
from .harness import Case, Values, build, judge, run_kernel
from .specs import RECORDS


def reference_name() -> str:
    """Where the float64 truth is computed: on the device being certified (CPU for the interpreter)."""
    return f"float64, torch {'CPU' if check.device().type == 'cpu' else 'CUDA'} (conformance/reference.py)"


TIMING_SETS_BYTES = 2 * 2**30  # an op's record asks for several timing sets (Record.timing_sets) up to this much
ROTATE_BYTES = 128 * 2**20  # inputs rotated until they exceed the H200's 50 MB L2 more than twice


@dataclass(frozen=True)
class Task:
    """One kernel domain in one dtype, to certify."""

    kernel: str
    dtype: str
    ranges: tuple[tuple[str, int, int | None], ...]

    @property
    def as_domain(self) -> Domain:
        return Domain((self.dtype,), self.ranges)

    def domain(self) -> dict[str, tuple[int, int | None]]:
        return self.as_domain.spans()

    def describe(self) -> str:
        return self.as_domain.describe()


def plan(
    class_id: str,
    kernels: list[str],
    dtypes: list[str],
    models: list[str] | None = None,
    limits: dict[str, tuple[int, int]] | None = None,
    configs: dict | None = None,
) -> list[Task]:
    """Every (kernel, dtype, domain) the class must cover (or the part of it ``models``/``limits`` name)."""
    tasks = []
    if class_id == "interpreter":
        given = [flag for flag, value in (("--models", models), ("--limit", limits), ("--config", configs)) if value]
        if given:  # ignoring them would certify more than was asked, silently
            verb = "chooses" if len(given) == 1 else "choose"
            raise UsageError(
                f"{' and '.join(given)} {verb} among the shapes a GPU class covers; the interpreter class covers "
                "every shape in one domain per kernel, so there is nothing to choose (leave them out; --kernels "
                "and --dtypes choose what is certified)"
            )
        # every shape (CI runs any small model and odd shape on it): one unbounded domain per kernel,
        # unless the op's record splits it (linear: decode and prefill rows, each picking its variant)
        for kernel in kernels:
            unbounded = tuple((d, 1, None) for d in SPECS[kernel].key)
            for ranges in RECORDS[kernel].interpreter_domains or (unbounded,):
                tasks += [Task(kernel, dtype, ranges) for dtype in dtypes]
        return tasks
    try:
        needed = catalogue.required_domains(models=models, limits=limits, configs=configs)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from exc
    for kernel in kernels:
        for _, ranges in sorted(needed.get(kernel, ())):
            tasks += [Task(kernel, dtype, ranges) for dtype in dtypes]
    # an int32 offset the launch lint allows (offsets.NARROW_OFFSETS) must stay below 2^31 elements over these
    # domains and their candidates: a candidate space, a launcher's split or a model that widens it is refused here
    known = catalogue.load()[0]
    chosen = configs.values() if configs else [cfg for name, cfg in known.items() if not models or name in models]
    too_wide = offsets.bound_problems(
        needed, chosen, SPECS, {SPECS[k].launch.__module__ for k in kernels}, unreached=False
    )
    if too_wide:
        raise UsageError(
            "the launch lint's narrow offsets (conformance.offsets.NARROW_OFFSETS) are not known to stay below 2^31; "
            "nothing was certified:\n" + "\n".join(too_wide)
        )
    return tasks


def within(task: Task, where: dict[str, tuple[int, int | None]]) -> bool:
    """Whether the task's domain lies inside ``where`` ({dim: (lo, hi or None)}) on every dim it names."""
    for dim, (lo, hi) in where.items():
        span = task.domain().get(dim)
        if span is None:  # a kernel without this dimension has no domain inside the range
            return False
        if span[0] < lo or (hi is not None and (span[1] is None or span[1] > hi)):
            return False
    return True


def edge_shapes(task: Task) -> list[dict[str, int]]:
    """The shapes a candidate is screened on: the domain's low end, its top, and an odd size between."""
    dom = check.drawable(task.kernel, task.ranges)
    caps = RECORDS[task.kernel].caps
    mult = RECORDS[task.kernel].multiple_of

    def pick(dim: str, where: str) -> int:
        lo, hi = dom[dim]
        top = caps[dim] if hi is None else hi
        value = {"lo": lo, "hi": top, "mid": (lo + (top - lo) * 5 // 8) | 1}[where]
        step = mult.get(dim, 1)
        return max(lo, min(value, top) // step * step)

    return [{dim: pick(dim, where) for dim in dom} for where in ("lo", "hi", "mid")]


def timing_shape(task: Task) -> dict[str, int]:
    return edge_shapes(task)[1]


def classify_failure(exc: BaseException) -> tuple[str, str]:
    text = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    name = type(exc).__name__
    if "OutOfResources" in name or "out of resource" in text.lower() or "shared memory" in text.lower():
        return "out_of_resources", text
    if "Compilation" in name or "compile" in text.lower() or name in ("CompileTimeAssertionFailure",):
        return "compile_failed", text
    return "crashed", text


def screening_cases(task: Task, seed: int) -> list[Case]:
    """The domain's top shape (where candidates are timed) and an odd size below it, built once per task."""
    dev = check.device()
    return [
        build(task.kernel, task.dtype, shape, Values(task.dtype, dev, seed + n))
        for n, shape in enumerate(edge_shapes(task)[1:])
    ]


def timing_seed(task: Task) -> int:
    """The seed of a task's timing inputs, from the task alone: certify times the same inputs whichever
    other tasks share its run, and ``benchmarks.kernels`` times exactly what certify chose on (the drawn
    batch and head counts of a record change the timing as much as the candidates do)."""
    return zlib.crc32(f"{task.kernel} {task.describe()}".encode())


def timing_count(size: int, asked: int) -> int:
    """How many timing sets of ``size`` bytes: enough to overflow the L2 cache (ROTATE_BYTES, at most 8), and the
    op's record's ``asked`` where they fit in TIMING_SETS_BYTES."""
    size = max(size, 1)
    return max(min(8, math.ceil(ROTATE_BYTES / size)), min(asked, TIMING_SETS_BYTES // size), 1)


def timing_sets(task: Task) -> list[Case]:
    """Input sets at the top shape, enough of them that together they overflow the L2 cache (GPU only), and at
    least as many as the op's record shapes for timing (``Record.timing``) where they fit in TIMING_SETS_BYTES.

    Laid out as the engine passes them (``Values.timing``: no NaN padding between rows or heads, attention's q a
    tensor of its own) and each in memory of its own, out of the NaN guard regions checks put around inputs:
    timed inside them (x's rows padded in some sets), the certified decode projections of the 8B shape took 0-19 %
    longer than on plain tensors and another variant -2 to +5 % (2026-12-03e calls 5-6): a skewed ranking."""
    dev = check.device()
    shape = timing_shape(task)
    seed = timing_seed(task)
    record = RECORDS[task.kernel]

    def drawn(n: int) -> Case:
        return build(task.kernel, task.dtype, shape, Values(task.dtype, dev, seed + n, timing=True))

    first = drawn(0)
    size = sum(t.numel() * t.element_size() for t in first.args.values() if isinstance(t, torch.Tensor))
    count = timing_count(size, record.timing_sets) if dev.type == "cuda" else 1
    sets = [first] + [drawn(i) for i in range(1, count)]
    for i, case in enumerate(sets):
        if record.timing is not None:
            record.timing(case.args, i, count)
        case.args = {name: unguarded(arg) for name, arg in case.args.items()}
    return sets


def unguarded(arg: Any) -> Any:
    """A tensor argument copied into memory that holds its layout and nothing else (its strides kept); anything
    else, and a tensor some elements of which share memory (a stride of 0: an expanded row), as it is."""
    if not isinstance(arg, torch.Tensor) or any(st == 0 and n > 1 for n, st in zip(arg.shape, arg.stride())):
        return arg
    own = torch.empty_strided(arg.shape, arg.stride(), dtype=arg.dtype, device=arg.device)
    own.copy_(arg)
    return own


def screen(task: Task, config: dict[str, Any], cases: list[Case]) -> tuple[str, str] | None:
    """None if the candidate computes the op within its bounds on the screening cases, else (reason, detail)."""
    try:
        for case in cases:
            verdict = judge(case, run_kernel(case, config), config)
            if verdict.ratio > 1:
                return "wrong_result", f"{case.describe()}: error {verdict.ratio:.3g} x bound"
    except Exception as exc:  # compiler errors, resource limits, illegal accesses: a rejected candidate
        if check.is_out_of_memory(exc):
            raise  # the device was full (workers share it): no verdict on the candidate; the task fails
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return classify_failure(exc)
    return None


TIMING_REPLAY_US = 500.0  # each timed graph replay lasts about this long (enough calls unrolled into it)
TIMING_REPLAYS = 15  # replays per candidate; the median and the best are kept


def measure(task: Task, config: dict[str, Any], sets: list[Case], pdl: bool = False) -> tuple[float, float]:
    """(best, median) microseconds per call, over the rotated input sets.

    On a GPU: one warm-up pass (compiles), a CUDA graph of the pass to estimate its length, then a
    graph with enough passes unrolled that a replay lasts ~TIMING_REPLAY_US (launch gaps vanish),
    replayed TIMING_REPLAYS times between CUDA events. On the interpreter: CPU wall time. ``pdl``: launched
    with programmatic dependent launch, as the engine launches every kernel on a class whose ``launch`` lists it
    (each call's kernels then become resident during the tail of the call before, as in a model's step).
    """
    launch = SPECS[task.kernel].launch

    def run_all() -> None:
        for case in sets:
            launch(**case.args, config=config, pdl=pdl)

    if check.device().type == "cuda":
        return _graph_times(run_all, len(sets))
    run_all()
    samples = []
    for _ in range(3):
        start = time.perf_counter()
        run_all()
        samples.append((time.perf_counter() - start) * 1e6 / len(sets))
    return min(samples), statistics.median(samples)


SHORTLIST_WITHIN = 1.25  # candidates whose first estimate is within this factor of the fastest are timed in full
SHORTLIST_LEAST = 3  # and always the fastest few, however far apart


def estimate(task: Task, config: dict[str, Any], sets: list[Case], pdl: bool = False) -> float:
    """A first, cheap time per call: on a GPU the best of 3 replays of a CUDA graph of one pass over the input
    sets (the pass compiled and warmed first), on the interpreter one pass's CPU wall time. Only the
    shortlist it picks (``shortlist``) is timed in full by ``measure``: the long graph's capture and its
    replays were most of the timing phase, and most candidates are far from the fastest. ``pdl`` as
    ``measure``'s."""
    launch = SPECS[task.kernel].launch

    def run_all() -> None:
        for case in sets:
            launch(**case.args, config=config, pdl=pdl)

    run_all()  # compile and warm up outside the graph
    if check.device().type != "cuda":
        start = time.perf_counter()
        run_all()
        return (time.perf_counter() - start) * 1e6 / len(sets)
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            run_all()
        samples = []
        for _ in range(4):
            begin.record(stream)
            graph.replay()
            end.record(stream)
            end.synchronize()
            samples.append(begin.elapsed_time(end) * 1000 / len(sets))
    del graph
    return min(samples[1:])


Estimated = tuple[float, dict[str, Any]]  # (first estimate in us per call, config)


def shortlist(estimates: list[Estimated]) -> tuple[list[dict[str, Any]], list[Estimated]]:
    """(the candidates to time in full, the rest with their estimates), fastest first: every candidate within
    SHORTLIST_WITHIN of the fastest estimate, and at least the SHORTLIST_LEAST fastest."""
    ranked = sorted(estimates, key=lambda e: e[0])
    if not ranked:
        return [], []
    fastest = ranked[0][0]
    keep = [n < SHORTLIST_LEAST or t <= SHORTLIST_WITHIN * fastest for n, (t, _) in enumerate(ranked)]
    return [c for (_, c), k in zip(ranked, keep) if k], [e for e, k in zip(ranked, keep) if not k]


def _graph_times(run_all: Callable[[], None], calls: int) -> tuple[float, float]:
    run_all()  # compile and warm up outside the graph
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def capture(passes: int) -> torch.cuda.CUDAGraph:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(passes):
                run_all()
        return graph

    def replay_us(graph: torch.cuda.CUDAGraph) -> float:
        begin.record(stream)
        graph.replay()
        end.record(stream)
        end.synchronize()
        return begin.elapsed_time(end) * 1000

    with torch.cuda.stream(stream):
        one = capture(1)
        replay_us(one)
        estimate = min(replay_us(one) for _ in range(3))
        passes = max(1, min(64, math.ceil(TIMING_REPLAY_US / max(estimate, 1e-3))))
        graph = capture(passes) if passes > 1 else one
        replay_us(graph)
        samples = [replay_us(graph) / (passes * calls) for _ in range(TIMING_REPLAYS)]
    del graph, one
    return min(samples), statistics.median(samples)


def provenance(command: str, pdl: bool = False) -> dict[str, Any]:
    facts = device_facts()
    given = os.environ.get("NEUROBRIX_SOURCE_COMMIT")  # said outright (a copy of the tree whose git is stale)
    try:
        if given:
            raise OSError("the commit was given")
        here = Path(__file__).parent
        commit = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, cwd=here, check=True
        ).stdout.strip()
        dirty = subprocess.run(  # from the folder above both (paths are read from the folder git runs in)
            ["git", "status", "--porcelain", "--", "neurobrix", "conformance"],
            capture_output=True,
            text=True,
            cwd=here.parent,
            check=True,
        ).stdout.strip()
        commit += "+uncommitted-changes" if dirty else ""
    except (OSError, subprocess.CalledProcessError):  # given, or a copy of the tree without git
        commit = given or "unknown"
    # each as its installed distribution names it: a Triton built from source states the release it grew from
    running = stack.running_stack()
    device = {k: (list(v) if isinstance(v, tuple) else v) for k, v in facts.as_dict().items() if v is not None}
    prov: dict[str, Any] = {
        "device": device,
        "torch": running.torch,
        "triton": running.triton,
        "neurobrix": neurobrix.__version__,
        "git_commit": commit,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": command,
        "cuda": str(torch.version.cuda),
    }
    if facts.backend == "interpreter":
        prov["timing"] = "CPU wall time of the Triton interpreter: says nothing about any GPU"
    else:
        prov["timing"] = (
            f"median of {TIMING_REPLAYS} CUDA-event-timed replays of a CUDA graph unrolling "
            f"~{TIMING_REPLAY_US:.0f} us of calls, inputs rotated over >= {ROTATE_BYTES >> 20} MiB, for the "
            f"candidates whose first estimate (best of 3 replays of one pass) was within {SHORTLIST_WITHIN}x of "
            f"the fastest, at least {SHORTLIST_LEAST}"
        )
        if pdl:
            prov["timing"] += ", each kernel launched with programmatic dependent launch as the class launches it"
        shaped = [f"{r.name}: {r.timing_note}" for r in RECORDS.values() if r.timing is not None]
        prov["timing"] += (
            "; inputs at the top shape, drawn as checks draw them but laid out as the engine passes them, each in "
            "memory of its own (no NaN padding or guard regions)"
        )
        if shaped:
            prov["timing"] += f", except {'; '.join(shaped)}"
    return prov


def write_table(root: Path, class_id: str, kernel: str, entries: list[Entry], prov: dict[str, Any]) -> Path:
    """Rewrite root/<class>/<kernel>.json (the settings index) and <kernel>.proofs.yaml (the audit
    record) atomically, then the tracked-file list. Returns the index's path."""
    ordered = sorted(entries, key=lambda e: (e.domain.dtypes, [(lo, hi or 0) for _, lo, hi in e.domain.ranges]))
    spec = SPECS[kernel]
    for entry in ordered:  # kept from the table being added to, or a candidate: never a setting run refuses
        refused = config_problem(kernel, entry.config)
        if refused:
            raise TablesError(
                f"{nb_tables.index_path(root, class_id, kernel)}: the entry {entry.domain.describe()} "
                f"{dict(entry.config)} {refused}: `neurobrix run` refuses it, so certify writes no table holding it. "
                f"Certify the kernel again: {nb_tables.certify_command(class_id, [kernel], again=True)}"
            )
    index_path, proofs_path = (
        nb_tables.index_path(root, class_id, kernel),
        nb_tables.proofs_path(root, class_id, kernel),
    )
    settings = SettingsIndex.of(kernel, class_id, spec.key, spec.buckets, stack_of(prov), ordered, str(index_path))
    index, proofs = index_data(settings), proofs_data(kernel, class_id, prov, ordered)
    validate("index", index, str(index_path))
    validate("proofs", proofs, str(proofs_path))
    header = (
        f"# Certified settings of kernel {kernel} on GPU class {class_id}, with their proofs.\n"
        f"# Written by `python -m conformance certify`; never edit by hand (the tracked-file list hashes "
        f"it, and {index_path.name} must hold the same entries).\n"
    )
    proofs_text = header + yaml.safe_dump(proofs, sort_keys=False, width=120)
    # the index first, the audit record (what --only-missing reads) after: a run killed between the two leaves entries
    # the record lacks, which the next run certifies again, rewriting both; and never Ctrl-C in between
    with _uninterrupted():
        _replace_tracked(root, {index_path: render_index(index), proofs_path: proofs_text})
        # the record verified as `tables verify` does and listed so, as `conformance track` lists it (strict round 57)
        track.list_written(root, [proofs_path.relative_to(root).as_posix()])
    return index_path


def _replace_tracked(root: Path, texts: dict[Path, str]) -> None:
    """Put ``texts`` (a kernel's index and audit record) and the TRACKED.yaml that lists them into ``root`` all at
    once or not at all. Each file was written in turn: a full disk (a quota, a file-size limit) while the audit record
    or the tracked list was written left the new index beside the old record and a stale list, and every command
    refused the tables as damaged (exit 3) until certify ran again. Now every file is written to a scratch file first
    (where running out of space happens) and only renames follow; a failed write removes its scratch files and leaves
    the folder as it was."""
    tmps = {path: path.with_name(f".{path.name}.{os.getpid()}.tmp") for path in [*texts, root / nb_tables.TRACKED_NAME]}
    try:
        for path, text in texts.items():
            tmps[path].write_text(text, encoding="utf-8")
        scratch = {tmp.relative_to(root).as_posix() for tmp in tmps.values()}
        staged = {path.relative_to(root).as_posix(): tmps[path] for path in texts}
        files = []
        for tracked in nb_tables.scan(root):
            if tracked.path in scratch or tracked.path in staged:
                continue
            files.append(tracked)
        for rel, tmp in staged.items():
            files.append(
                nb_tables.TrackedFile(rel, f"{nb_tables.WHEEL_DIR}/{rel}", nb_tables.sha256_of(tmp), tmp.stat().st_size)
            )
        files.sort(key=lambda f: f.path)
        tracked_path = root / nb_tables.TRACKED_NAME
        tracked_text = nb_tables.render_tracked(files, _still_verified(root, files))
        if not tracked_path.is_file() or tracked_path.read_text(encoding="utf-8") != tracked_text:
            tmps[tracked_path].write_text(tracked_text, encoding="utf-8")
        for path, tmp in tmps.items():
            if tmp.exists():
                os.replace(tmp, path)
    finally:
        for tmp in tmps.values():
            tmp.unlink(missing_ok=True)


def _still_verified(root: Path, files: list[nb_tables.TrackedFile]) -> list[nb_tables.VerifiedRecord]:
    """The records the old TRACKED.yaml lists as `conformance track` verified them whose bytes, and their indexes',
    are still those (a kernel certify did not rewrite); the one it wrote is verified once the folder holds it
    (:func:`conformance.track.list_written`; a list that cannot be read keeps none)."""
    digests = {f.path: f.sha256 for f in files}
    try:
        old = nb_tables.read_verified(root)
    except TablesError:
        return []
    return [
        v
        for v in old
        if digests.get(v.path) == v.sha256
        and digests.get(v.path[: -len(nb_tables.PROOFS_SUFFIX)] + nb_tables.INDEX_SUFFIX) == v.index_sha256
    ]


@contextlib.contextmanager
def _uninterrupted() -> Iterator[None]:
    """Ctrl-C (or SIGTERM, a job's time limit) while a table is written takes effect once the index, its audit record
    and TRACKED.yaml are all written: in between it left an audit record without its index, a `.tmp` file and a stale
    tracked list, which `--only-missing` took as certified and every later command refused as damaged tables."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM)
    before = {s: signal.signal(s, lambda number, _frame: caught.append(number)) for s in held}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        if caught:
            signal.raise_signal(caught[0])


def render_index(index: dict[str, Any]) -> str:
    """A settings index as JSON, one config and one entry per line (small diffs when a run adds entries)."""
    lists = ("configs", "entries")
    head = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in index.items() if k not in lists)
    body = ",\n".join(
        f"  {json.dumps(name)}: [\n" + ",\n".join("    " + json.dumps(item) for item in index[name]) + "\n  ]"
        for name in lists
    )
    return "{\n" + head + ",\n" + body + "\n}\n"


def _unwritable(root: Path, class_id: str) -> str | None:
    """Why certify could not write its tables and TRACKED.yaml into ``root`` (None: it can)."""
    for folder in (root / class_id, root):
        probe = folder / f".certify-probe-{os.getpid()}"
        try:
            probe.write_text("", encoding="utf-8")
            probe.unlink()
        except OSError as exc:
            return f"{folder}: {exc.strerror or exc}"
    tracked = root / nb_tables.TRACKED_NAME
    try:
        if tracked.exists():
            tracked.open("a", encoding="utf-8").close()
    except OSError as exc:
        return f"{tracked}: {exc.strerror or exc}"
    return None


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:  # a write that failed (a full disk) leaves no untracked file the tables are then refused for
        tmp.unlink(missing_ok=True)


def existing_table(root: Path, class_id: str, kernel: str) -> ProofsTable | None:
    """The audit record of ``kernel`` on ``class_id`` in ``root`` (its entries and provenance), or None."""
    path = nb_tables.proofs_path(root, class_id, kernel)
    if not path.is_file():
        return None
    return parse_proofs(nb_tables.read_yaml(path, str(path)), str(path), class_id, kernel)


def reformat(root: Path, class_id: str) -> list[Path]:
    """Rewrite a class's kernel tables of an older format with the same entries, configs, proofs and
    provenance: a format-2 ``<kernel>.yaml`` (settings and proofs in one file) becomes a settings index and
    an audit record; a format-3 index (one JSON object per entry) is written again from its audit record
    as a format-4 index (each config once, an entry a row); the audit record keeps its bytes."""
    folder = root / class_id
    if not (folder / nb_tables.CLASS_NAME).is_file():
        classes = (
            sorted(c.name for c in root.iterdir() if (c / nb_tables.CLASS_NAME).is_file()) if root.is_dir() else []
        )
        hint = close_hint([class_id], classes)
        raise UsageError(f"no GPU class {class_id!r} in {root}; classes: {', '.join(classes) or 'none'}{hint}")
    written = []
    for kernel in SPECS:
        old = folder / f"{kernel}.yaml"
        index = nb_tables.index_path(root, class_id, kernel)
        if old.is_file():
            data = nb_tables.read_yaml(old, str(old))
            if not isinstance(data, dict) or data.get("format") != 2:
                found = data.get("format") if isinstance(data, dict) else "?"
                raise TablesError(f"{old}: not a format-2 kernel table (format {found})")
            key = data.pop("key", None)
            if key != list(SPECS[kernel].key):
                raise TablesError(f"{old}: keyed by {key}, the {kernel} kernel by {list(SPECS[kernel].key)}")
            data["format"] = 3
            table = parse_proofs(data, str(old), class_id, kernel)
        elif index.is_file() and nb_tables.read_json(index, str(index)).get("format") != INDEX_FORMAT:
            table = existing_table(root, class_id, kernel)
            if table is None:
                raise TablesError(f"{index}: has no audit record beside it to rewrite it from")
        else:
            continue
        written.append(write_table(root, class_id, kernel, list(table.entries), dict(table.provenance)))
        if old.is_file():
            old.unlink()
            track.write(root)
    return written


SAME_RUN_FACTS = ("device", "torch", "triton", "neurobrix")


def _same_torch_read_before(key: str, old: dict[str, Any], current: dict[str, Any]) -> bool:
    """Whether a table's torch is this run's, recorded before torch's version was read from its installed
    distribution (``stack.installed_version``): it holds what the running torch states (``torch.__version__``,
    e.g. ``2.11.0+cu130``) where its distribution names the same release without the local build tag
    (``2.11.0``, as on the H200 image). The same installed torch, read two ways: the table keeps its own."""
    if key != "torch" or old.get(key) != torch.__version__:
        return False
    stated, installed = stack.release(str(old[key])), stack.release(str(current.get(key)))
    return stated is not None and installed is not None and stated.public == installed.public


def merged_provenance(table: ProofsTable | None, current: dict[str, Any]) -> dict[str, Any]:
    """The provenance a table keeps when this run adds entries to it.

    A table holds one software stack: adding to a table certified on another device, torch, triton
    or neurobrix is refused (re-certify the kernel instead). Runs that add to it are recorded under
    ``resumed`` (date, commit, command), so the first run's facts are never overwritten.
    """
    if table is None:
        return current
    old = dict(table.provenance)
    differ = [
        k for k in SAME_RUN_FACTS if old.get(k) != current.get(k) and not _same_torch_read_before(k, old, current)
    ]
    if differ:
        shown = "; ".join(f"{k}: table {old.get(k)!r}, now {current.get(k)!r}" for k in differ)
        raise UsageError(
            f"{table.path} was certified on another stack ({shown}); entries from two stacks cannot "
            "share one table. Delete the table to re-certify the kernel, or run with the same versions."
        )
    if old.get("kernel_source") != current.get("kernel_source"):
        kernel = table.kernel
        proven = f"code {old['kernel_source']}" if old.get("kernel_source") else "no recorded kernel code"
        files = ", ".join(kernel_source.kernel_source_files(kernel))
        raise UsageError(
            f"{table.path}: its entries were proven on {proven}, and {kernel}'s code here is "
            f"{current.get('kernel_source')} (neurobrix/ops: {files}): entries "
            f"proven on two codes cannot share one table. Prove its entries on this code first (on this GPU: python -m "
            f"conformance check --class {table.class_id} --kernel {kernel} --record), or delete the table to "
            "re-certify the kernel whole."
        )
    resumed = list(old.get("resumed", []))
    run = {k: current[k] for k in ("date", "git_commit", "command")}
    if current.get("timing") != old.get("timing"):  # how this run timed its candidates, where it differs
        run["timing"] = current["timing"]
    resumed.append(run)
    return {**old, "resumed": resumed}


def without_dtype(entries: list[Entry], task: Task) -> list[Entry]:
    """A table's entries less ``task``'s dtype on ``task``'s domain, which the task's new entry takes: an entry of that
    domain in that dtype alone goes; one of several dtypes (certify writes none; a table written by hand may hold one)
    keeps its other dtypes and its proof, which covered them. Kept whole, it overlapped the new entry, and the table
    was refused when written, after the task's work (exit 3)."""
    kept = []
    for e in entries:
        if e.domain.ranges == task.ranges and task.dtype in e.domain.dtypes:
            rest = tuple(d for d in e.domain.dtypes if d != task.dtype)
            if rest:
                kept.append(replace(e, domain=Domain(rest, e.domain.ranges)))
            continue
        kept.append(e)
    return kept


class LintFailed(NeuroBrixError):
    """A kernel's source fails the launch lint (``check.launch_problems``): the same for every setting, so nothing is
    screened; certify said only "every candidate ... failed its proof", the lint's sentences never shown."""

    exit_code = 1

    def __init__(self, found: dict[str, tuple[str, ...]]):
        lines = [f"{kernel}: {problem}" for kernel, problems in found.items() for problem in problems]
        super().__init__(
            f"the launch lint refuses the source of {', '.join(found)} (read from the source, whatever the setting: "
            "no candidate can pass its proof; nothing was certified). Fix each, then certify again:\n  "
            + "\n  ".join(lines)
        )


class CertifyFailed(NeuroBrixError):
    """Some tasks could not be certified; every other entry of the run was written."""

    exit_code = 1

    def __init__(self, written: int, failures: list[str], left: int = 0):
        self.written, self.failures, self.left = written, failures, left
        shown = "\n  ".join(failures[:20]) + (f"\n  ... and {len(failures) - 20} more" if len(failures) > 20 else "")
        also = f", {left} task(s) left at the time limit" if left else ""
        super().__init__(
            f"{len(failures)} task(s) could not be certified ({counted(written, 'entry', 'entries')} "
            f"{'was' if written == 1 else 'were'} written into the tables{also}; "
            f"run certify again with --only-missing to try these again):\n  {shown}"
        )


@dataclass
class Screened:
    """A task after screening: the candidates that computed the op within bounds, and the rest with why."""

    task: Task
    seed: int
    tried: int
    survivors: list[dict[str, Any]]
    rejected: list[tuple[dict[str, Any], str, str]]
    seconds: float = 0.0


@dataclass
class Timed:
    screened: Screened
    timed: list[tuple[tuple[float, float], dict[str, Any]]]  # ((best, median) us, config), fastest first
    rejected: list[tuple[dict[str, Any], str, str]]
    seconds: float = 0.0
    # the survivors left off the shortlist, (first estimate us, config), fastest first: proven only if every
    # candidate timed in full fails its proof
    estimated: list[Estimated] = field(default_factory=list)


@dataclass
class Proven:
    entry: Entry | None
    message: str  # the progress line, or why no candidate could be certified
    seconds: float = 0.0


def screen_task(class_id: str, task: Task, seed: int) -> Screened:
    """Phase 1 (shares the device): enumerate, prune and screen every candidate against float64."""
    start = time.perf_counter()
    dims = {d: (hi if hi is not None else RECORDS[task.kernel].caps[d]) for d, _, hi in task.ranges}
    configs = cand.space(task.kernel, task.domain(), interpreter_enabled())
    keep, dropped = cand.prune(task.kernel, configs, class_id, dims, torch_dtype(task.dtype).itemsize)
    rejected = [(c, "out_of_resources", why) for c, why in dropped]
    cases = screening_cases(task, seed)
    survivors = []
    for config in keep:
        failure = screen(task, config, cases)
        if failure is None:
            survivors.append(config)
        else:
            rejected.append((config, *failure))
    del cases
    _release()
    return Screened(task, seed, len(configs), survivors, rejected, time.perf_counter() - start)


def time_task(class_id: str, screened: Screened, pdl: bool = False) -> Timed:
    """Phase 2 (the device to itself): time every survivor at the domain's top shape, fastest first, launched
    as the engine launches on the class (``pdl``: its ``launch`` lists programmatic dependent launch)."""
    start = time.perf_counter()
    rejected: list[tuple[dict[str, Any], str, str]] = []
    timed = []
    left_off: list[Estimated] = []

    def attempt(how: Callable[..., Any], config: dict[str, Any]) -> Any:
        try:
            return how(screened.task, config, sets, pdl)
        except Exception as exc:  # a survivor that fails while being timed is rejected too
            if check.is_out_of_memory(exc):
                raise
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            rejected.append((config, *classify_failure(exc)))
            return None

    if screened.survivors:
        sets = timing_sets(screened.task)
        first = [(t, c) for c in screened.survivors if (t := attempt(estimate, c)) is not None]
        chosen, left_off = shortlist(first)
        timed = [(t, c) for c in chosen if (t := attempt(measure, c)) is not None]
        del sets
        _release()
    timed.sort(key=lambda t: t[0][1])
    return Timed(screened, timed, rejected, time.perf_counter() - start, left_off)


def prove_task(class_id: str, timed: Timed, examples: int, profile_name: str) -> Proven:
    """Phase 3 (shares the device): the fastest candidate that passes its Hypothesis proof over the
    whole domain wins; a faster one that fails is recorded as rejected with its counterexample."""
    start = time.perf_counter()
    task = timed.screened.task
    rejected = timed.screened.rejected + timed.rejected
    if not timed.timed:
        why = "; ".join(f"{c}: {r} ({d})" for c, r, d in rejected[:5])
        return Proven(
            None,
            f"no candidate for {task.kernel} {task.describe()} computes the op within its bound: {why}",
            time.perf_counter() - start,
        )
    ranked = timed.timed + [((t, t), c) for t, c in timed.estimated]
    for n, ((best_us, median_us), config) in enumerate(ranked):
        domain = task.as_domain
        result = check.check_entry(task.kernel, Setting(domain, config), task.dtype, examples, profile_name)
        if result.passed:
            for m, ((_, slower), other) in enumerate(ranked[n + 1 :], start=n + 1):
                how = "median" if m < len(timed.timed) else "first estimate, not shortlisted,"
                rejected.append((other, "slower", f"{slower:.2f} us {how} vs {median_us:.2f} us"))
            _release()
            message = (
                f"{task.kernel} {task.describe()}: {config} {median_us:.1f} us, "
                f"{len(timed.screened.survivors)}/{timed.screened.tried} passed screening, worst error "
                f"{result.worst_ratio:.3f} of bound over {counted(result.examples, 'example')}"
            )
            return Proven(
                Entry(
                    domain,
                    config,
                    Proof(
                        result.examples,
                        result.worst_ratio,
                        RECORDS[task.kernel].bound,
                        reference_name(),
                        best_us,
                        median_us,
                        timed.screened.tried,
                        tuple(Rejected(c, r, d) for c, r, d in rejected),
                    ),
                ),
                message,
                time.perf_counter() - start,
            )
        if result.out_of_memory:  # not a wrong result: the task fails and is certified again on a later run
            raise torch.OutOfMemoryError(f"proof of {task.kernel} {task.describe()} {config}: {result.failure}")
        rejected.append((config, "wrong_result", f"failed its proof: {(result.failure or '').splitlines()[0]}"))
    _release()
    return Proven(
        None, f"every candidate for {task.kernel} {task.describe()} failed its proof", time.perf_counter() - start
    )


def _release() -> None:
    """Hand cached device memory back between tasks (several workers share one GPU)."""
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def times_with_pdl(klass: GPUClass) -> bool:
    """Whether certify times a class's candidates launched with programmatic dependent launch: where the class
    lists it and kernels run on its GPU (the engine launches every kernel so there, ``Plan.pdl``)."""
    return "pdl" in klass.launch and not interpreter_enabled()


LEFT = object()  # a task the time limit stopped before it was certified: neither written nor failed


def _stopped(written: int, left: int, failures: list[str], say: Callable[[str], None]) -> tuple[int, int, bool]:
    """certify's end at its time limit: (written, left, not finished), or the failures of the tasks it did reach."""
    say(f"stopping at the time limit: {left} task(s) left; run again with --only-missing to resume")
    if failures:  # exit 1 naming them, not 3 ("work left") with the failures unsaid
        raise CertifyFailed(written, failures, left)
    return written, left, False


def certify(
    class_id: str,
    root: Path,
    kernels: list[str] | None,
    dtypes: list[str],
    only_missing: bool,
    examples: int,
    profile_name: str,
    max_minutes: float | None,
    command: str,
    models: list[str] | None = None,
    limits: dict[str, tuple[int, int]] | None = None,
    configs: dict | None = None,
    seed: int = 0,
    jobs: int | None = None,
    where: dict[str, tuple[int, int | None]] | None = None,
    progress: Any = None,
    say: Callable[[str], None] = print,
) -> tuple[int, int, bool]:
    """Certify; returns (entries written, tasks left, finished).

    Tasks go in chunks through three phases: screening (all workers), timing (one worker per
    device, alone on it) and proofs (all workers); the tables are rewritten after every chunk, so an
    interrupted run loses at most the chunk in flight and resumes with ``--only-missing``.
    """
    if not root.is_dir():
        raise UsageError(f"--tables {root}: no such folder (the tables folder to write, holding <class>/class.yaml)")
    track.require_described(root, class_id, track.DESCRIBE_FIRST)
    track.refuse_strays(root)
    class_yaml = nb_tables.class_path(root, class_id)
    for kernel in kernels or []:
        if kernel not in SPECS:
            raise UsageError(f"unknown kernel {kernel!r}; kernels: {', '.join(SPECS)}{close_hint([kernel], SPECS)}")
    klass = parse_class(nb_tables.read_yaml(class_yaml, str(class_yaml)), str(class_yaml), class_id)
    check.require_device(klass)
    # a proof records torch's and Triton's versions only: proofs of the code compiled under another ptxas, a kernel
    # override or debug mode would stand for the code run compiles without them (run refuses that environment)
    problem = stack.compiler_problem(class_id)
    if problem:
        raise UsageError(f"{problem} (nothing was certified).")
    pdl = times_with_pdl(klass)
    chosen = kernels or list(SPECS)
    unknown = sorted(set(where or {}) - {d for k in chosen for d in SPECS[k].key})
    if unknown:
        raise UsageError(
            f"--where names {', '.join(unknown)}, a dimension of none of the kernels certified "
            f"({', '.join(f'{k}: {chr(44).join(SPECS[k].key)}' for k in chosen)})"
        )
    tasks = [t for t in plan(class_id, chosen, dtypes, models, limits, configs) if within(t, where or {})]
    if where and not tasks:  # "certified 0 entries" and exit 0 would read as a success: check refuses it too
        shown = ", ".join(f"{dim}={lo}:{'' if hi is None else hi}" for dim, (lo, hi) in where.items())
        raise UsageError(f"no domain of {', '.join(chosen)} on {class_id} lies inside --where {shown}")
    deadline = time.monotonic() + max_minutes * 60 if max_minutes is not None else None
    prov = provenance(command, pdl)
    todo = []
    tables_now = {k: existing_table(root, class_id, k) for k in chosen}
    have = {k: list(t.entries) if t else [] for k, t in tables_now.items()}
    for i, task in enumerate(tasks):
        done = any(e.domain.ranges == task.ranges and task.dtype in e.domain.dtypes for e in have[task.kernel])
        if not (only_missing and done):
            todo.append((i, task))
    # refused before any work when a table to be added to was certified on another stack
    # each kernel's provenance names the code its entries are proven on (neurobrix.stack.kernel_source)
    provs = {
        k: merged_provenance(tables_now[k], {**prov, "kernel_source": stack.kernel_source(k)})
        for k in {t.kernel for _, t in todo}
    }
    # what no example can show, read from each kernel's source (PDL's wait, int64 offsets, arrivals): refused here, with
    # the lint's own sentences, rather than as every candidate failing its proof
    lint = {k: check.launch_problems(k) for k in sorted({t.kernel for _, t in todo})}
    if any(lint.values()):
        raise LintFailed({k: found for k, found in lint.items() if found})
    unwritable = todo and _unwritable(root, class_id)
    if unwritable:  # found before the work, not when its first chunk is written
        raise UsageError(
            f"--tables {root}: cannot write there ({unwritable}); nothing was certified. Point --tables at a folder "
            "you can write, e.g. a copy: cp -r tables /tmp/tables-copy"
        )
    devices: list[int | None] = [None] if interpreter_enabled() else (workers.same_class_gpus() or [None])
    jobs = workers.default_jobs(devices) if jobs is None else jobs
    if todo and (jobs > 1 or len(devices) > 1):
        say(f"{len(todo)} task(s) on {len(devices)} device(s), {max(jobs, len(devices))} correctness worker(s)")
    bar = progress.add_task("certify", total=len(todo)) if progress else None
    chunk_size = max(4, 4 * jobs)
    written, longest, phase_seconds = 0, 0.0, {"screen": 0.0, "time": 0.0, "prove": 0.0}
    failures: list[str] = []
    with workers.Workers(jobs, devices) as pool:
        for first in range(0, len(todo), chunk_size):
            now = time.monotonic()
            # a chunk starts where the longest so far would end within the limit, the first whatever the limit: a run
            # stopped before any work would exit 3 again at every rerun
            if deadline is not None and first and now + longest > deadline:
                return _stopped(written, len(todo) - first, failures, say)
            chunk = todo[first : first + chunk_size]
            # past the limit the tasks under way stop (LEFT: not certified, not failed); the first chunk certifies
            # one task at least, so that every rerun gets further
            at_least, stopped = int(first == 0), False
            results: list[Any] = [LEFT] * len(chunk)

            def phase(
                run: Callable[..., list[Any]], fn: Callable[..., Any], items: dict[int, tuple], label: str
            ) -> None:
                """fn(*item) for the chunk's tasks {index: item}, each result in place of the task's last."""
                nonlocal stopped
                done: dict[int, Any] = {}
                if not stopped or at_least:
                    limit = None if deadline is None else ((lambda: deadline - time.monotonic()), at_least)
                    try:
                        done = dict(enumerate(run(fn, list(items.values()), status(label), limit=limit)))
                    except workers.OutOfTime as exc:
                        stopped, done = True, exc.done
                for j, n in enumerate(items):
                    results[n] = done.get(j, LEFT)

            def status(phase: str) -> Callable[[int], None]:
                count = [0]

                def done(_: int) -> None:
                    count[0] += 1
                    if progress:
                        progress.update(
                            bar,
                            description=f"{phase} {count[0]}/{len(chunk)} (tasks {first + 1}-"
                            f"{first + len(chunk)} of {len(todo)})",
                        )

                return done

            def alive() -> list[int]:
                return [n for n, r in enumerate(results) if r is not LEFT and not isinstance(r, workers.Failed)]

            t0 = time.monotonic()
            phase(
                pool.map, screen_task, {n: (class_id, task, seed + i) for n, (i, task) in enumerate(chunk)}, "screening"
            )
            t1 = time.monotonic()
            phase(pool.alone, time_task, {n: (class_id, results[n], pdl) for n in alive()}, "timing")
            t2 = time.monotonic()
            proving = {n: (class_id, results[n], examples, profile_name) for n in alive()}
            phase(pool.map, prove_task, proving, "proving")
            t3 = time.monotonic()
            for key, seconds in zip(phase_seconds, (t1 - t0, t2 - t1, t3 - t2)):
                phase_seconds[key] += seconds
            longest = max(longest, t3 - now)
            say(
                f"tasks {first + 1}-{first + len(chunk)} of {len(todo)}: screening {t1 - t0:.0f} s, timing "
                f"{t2 - t1:.0f} s, proofs {t3 - t2:.0f} s"
            )
            touched, left = set(), 0
            for (_, task), result in zip(chunk, results):
                if result is LEFT:
                    left += 1
                    continue
                if isinstance(result, workers.Failed):
                    failures.append(f"{task.kernel} {task.describe()}: {result.message}")
                    continue
                if result.entry is None:
                    failures.append(result.message)
                    continue
                say(result.message)
                have[task.kernel] = without_dtype(have[task.kernel], task) + [result.entry]
                touched.add(task.kernel)
                written += 1
                if progress:
                    progress.advance(bar)
            for kernel in sorted(touched):
                write_table(root, class_id, kernel, have[kernel], provs[kernel])
            if stopped:
                return _stopped(written, left + len(todo) - first - len(chunk), failures, say)
    if failures:
        raise CertifyFailed(written, failures)
    if todo:
        say("wall time per phase: " + ", ".join(f"{k} {v:.0f} s" for k, v in phase_seconds.items()))
    return written, 0, True
