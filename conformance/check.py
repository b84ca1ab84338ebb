"""`python -m conformance check`: every entry of every table of a class, against float64, with Hypothesis.

For each entry of a class's settings indexes (what ``run`` loads) and each of its dtypes, Hypothesis
draws shapes from the entry's whole domain (unbounded dimensions up to the op's record's caps) and
values of every kind, runs the kernel with the entry's setting handed to its launcher, and compares
every output with float64 under its bound. Before that, the index's own lookup must find the entry at
its domain's corners (the door ``run`` uses). A failure is shrunk (unless ``shrink`` is
off) and reported with the entry that failed: kernel, dtype, config, shape, and the worst elements
with their error and bound (or the exception, or the guard band a store overran).

With ``shipped`` (``check --shipped``), every other distinct setting shipped in any class's tables is
checked too, at the small shapes that setting can serve (``conformance.shipped``): on the interpreter
that runs the GPU classes' variants on CPU, each reported with where it is shipped.

From the command line every entry runs on a worker process (``isolate``) that writes the example it
is about to run to a small trace file first: an entry whose kernel kills the process (a store that
corrupts the heap: SIGSEGV, a glibc abort) is reported "crashed" with that example, and the other
entries go on.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import json
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from neurobrix import stack
from neurobrix import tables as nb_tables
from neurobrix.cli import close_hint
from neurobrix.errors import NoGPUError, UsageError, counted, printable
from neurobrix.gpu import device_facts, interpreter_enabled, matches
from neurobrix.ops import SPECS
from neurobrix.plan import entry_problem
from neurobrix.schema import GPUClass, Setting, SettingsIndex

from . import fills, offsets
from .harness import Values, build, judge, run_kernel, wrong_outputs
from .shipped import Target
from .shipped import targets as shipped_targets
from .specs import RECORDS, Small
from .strategies import KINDS, profile, shapes

try:
    BaseExceptionGroup = BaseExceptionGroup  # built in from Python 3.11; a name of this module for the tests
except NameError:  # Python 3.10: the backport Hypothesis depends on there
    from exceptiongroup import BaseExceptionGroup


def device() -> torch.device:
    return torch.device("cpu" if interpreter_enabled() else "cuda")


def drawable(kernel: str, ranges: tuple[tuple[str, int, int | None], ...]) -> dict[str, tuple[int, int | None]]:
    """The part of a domain the kernel can receive (the op's record says what it never does)."""
    lowest = RECORDS[kernel].lowest
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
    out_of_memory: bool = False  # failed only for want of device memory: no verdict on the entry yet
    carried: bool = False  # passed in an earlier run of the same tables, kernels and bounds (--resume)
    crashed: bool = False  # the worker process died under the entry (failure: how, and the example)
    shipped_in: str = ""  # a setting of the tables' other entries, checked at small shapes: where it is shipped


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    """The exceptions under Hypothesis's groups (several distinct failures, a flaky one)."""
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            yield from _leaves(sub)
    else:
        yield exc


def is_out_of_memory(exc: BaseException) -> bool:
    """True when every failure under ``exc`` is the device running out of memory (workers share a GPU):
    that says nothing about the kernel, so the entry is checked again with the device to itself."""
    leaves = list(_leaves(exc))
    return bool(leaves) and all(
        isinstance(e, torch.OutOfMemoryError) or "out of memory" in str(e).lower() for e in leaves
    )


def describe_failure(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, BaseExceptionGroup):
        text += "".join(
            f"\n  - {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:400] for e in _leaves(exc)
        )
    return text


def config_text(config: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())


@functools.cache
def launch_problems(kernel: str) -> tuple[str, ...]:
    """What no example can show about the op's Triton kernels, read from their source: each one that takes
    ``PDL`` must wait for its predecessor before anything else (``dependent_launch(PDL)`` its first statement,
    after the docstring). The interpreter runs no programmatic dependent launch, so a kernel that reads its
    input or writes its output before the wait computes the same values on CPU and races on a GPU launched
    with PDL (tests/test_gpu_only.py sees the race only where it happens to lose it). An op whose launcher takes
    ``counters`` has its arrival counters run too (``counter_problems``) and its arrivals read
    (``arrival_problems``). A reduction of a padded tail filled with a value other than its neutral one, and a running
    value started in a dtype other than fp32, are named too (``fills.fill_problems``): the interpreter's examples
    compute the same values for both where no draw reaches the magnitudes that show them."""
    module = sys.modules[SPECS[kernel].launch.__module__]
    found = []
    for name, obj in sorted(vars(module).items()):
        fn = getattr(obj, "fn", None)
        if not callable(fn) or getattr(fn, "__module__", None) != module.__name__:
            continue  # not a Triton function of this module
        if "PDL" not in inspect.signature(fn).parameters:
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0].body  # type: ignore[attr-defined]
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        first = ast.unparse(body[0]) if body else ""
        if first != "dependent_launch(PDL)":
            found.append(
                f"{module.__name__}.{name} takes PDL but its first statement is {first!r}, not "
                "dependent_launch(PDL): launched with PDL it may touch memory before its predecessor has finished"
            )
    counted = "counters" in inspect.signature(SPECS[kernel].launch).parameters
    return (
        tuple(found)
        + widening_problems(module)
        + tuple(fills.fill_problems(module.__name__, inspect.getsource(module)))
        + wait_problems()
        + (counter_problems() + arrival_problems(module) if counted else ())
    )


# The program ids a kernel reads without widening them to int64, each with why its offsets stay below 2^31 elements
# (or where it is widened before it enters one), and the widenings that must then be in the kernel's source.
NARROW_IDS: dict[str, dict[str, str]] = {
    "neurobrix.ops.linear._linear_gemv_kernel": {"pid_k": "a K slice: pid_k x k_per_split is below K"},
    "neurobrix.ops.linear._linear_skinny_kernel": {"pid_k": "a K slice: pid_k x k_slice is below K"},
    "neurobrix.ops.linear._linear_tiled_kernel": {"pid": "a tile, widened where it enters the offsets"},
    "neurobrix.ops.linear._linear_tma_kernel": {"tile": "a tile: its blocks are TMA coordinates, not offsets"},
    "neurobrix.ops.linear._linear_tma_split_kernel": {
        "unit": "a unit of work: its blocks are TMA coordinates; the partials' rows are widened (its slice's "
        "offset, slice x M x N, is int32: below 2^31 while the partials are)"
    },
    "neurobrix.ops.attention._attention_flash_kernel": {
        "block": "a block of queries: position x q's position stride stays below 2^31 "
        "(131,072 x 6,144 = 8.1e8 at the catalogue's largest)"
    },
    "neurobrix.ops.attention._attention_decode_split_kernel": {
        "split_id": "a split of one cache: position x the cache's position stride stays below 2^31 "
        "(131,072 x 1,024 at the catalogue's largest)"
    },
    "neurobrix.ops.rotary._rotary_kernel": {
        "pid_h": "a block of one token's heads: head x the head stride is below one token's row"
    },
    "neurobrix.ops.pick._greedy_pick_kernel": {"part": "a part of one row: its offsets are below V (at most 2^24)"},
}
WIDENED = {  # snippet: how many times it must occur in the kernel's source
    "neurobrix.ops.linear._linear_tiled_kernel": {"pid_m.to(tl.int64) * BLOCK_M": 1, "pid_n.to(tl.int64) * BLOCK_N": 1},
    "neurobrix.ops.linear._linear_tma_split_kernel": {"offs_m[:, None].to(tl.int64) * ": 2},
}


def widening_problems(module: Any) -> tuple[str, ...]:
    """How the op's Triton kernels read their program ids, read from their source: each ``tl.program_id`` widened at
    once (``tl.program_id(i).to(tl.int64)``), or bound to a name ``NARROW_IDS`` lists for its kernel, with the
    widenings ``WIDENED`` names in its source. A row, batch or head index left in int32 multiplies a stride in int32
    and wraps past 2^31 elements (silu_mul's gu at a 131,072-token prefill of Llama-3.1-8B holds 3.8e9): no
    example on the interpreter comes near that size, so a widening dropped computes the same values on CPU and
    reads or writes elsewhere on a GPU. Then every pointer offset of the module's Triton functions, followed through
    the names, loop bounds and helper parameters it is computed from (``offsets.narrow_offsets``): a product of int32
    values with a stride or a size (an index loaded from an int32 tensor, an arange or a loop counter times a stride,
    a size times a size) or an int64 value cast to int32 on the way, unless ``offsets.NARROW_OFFSETS`` names it for
    its function with why it stays below 2^31 elements."""
    found: list[str] = []
    for name, obj in sorted(vars(module).items()):
        fn = getattr(obj, "fn", None)
        if not callable(fn) or getattr(fn, "__module__", None) != module.__name__:
            continue  # not a Triton function of this module
        found += narrow_reads(f"{module.__name__}.{name}", textwrap.dedent(inspect.getsource(fn)))
    found += offsets.narrow_offsets(module.__name__, inspect.getsource(module))
    return tuple(found)


def narrow_reads(where: str, source: str) -> list[str]:
    """``widening_problems`` for one Triton function, ``where`` (module.function) its name, from its source."""
    found = []
    allowed = NARROW_IDS.get(where, {})
    tree = ast.parse(source)
    widened = {
        id(node.func.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "to"
        and [ast.unparse(a) for a in node.args] == ["tl.int64"]
    }
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value = stmt.value
        elif isinstance(stmt, ast.For):
            targets, value = [stmt.target], stmt.iter
        else:
            continue
        if value is None:
            continue
        bound = {ast.unparse(t) for t in targets}
        for call in ast.walk(value):
            if not isinstance(call, ast.Call) or ast.unparse(call.func) != "tl.program_id" or id(call) in widened:
                continue
            if not bound <= set(allowed):
                found.append(
                    f"{where} reads {ast.unparse(call)} into {', '.join(sorted(bound))} in int32, not widened "
                    "(.to(tl.int64)): an offset it enters wraps past 2^31 elements on a GPU (the interpreter's "
                    "shapes never reach it); a narrow id needs its reason in conformance.check.NARROW_IDS"
                )
    for snippet, count in WIDENED.get(where, {}).items():
        if source.count(snippet) < count:
            found.append(
                f"{where} widens {snippet!r} {source.count(snippet)} time(s), not {count}: its offsets wrap past "
                "2^31 elements on a GPU"
            )
    return found


ARRIVAL = {"sem": "acq_rel", "scope": "gpu"}  # how every program's arrival is counted (tl.atomic_add's memory order)


def arrival_problems(module: Any) -> tuple[str, ...]:
    """How the op's Triton functions count arrivals (linear's MERGE "last", greedy_pick's merge), read from their
    source: each ``tl.atomic_add`` right after ``tl.debug_barrier()`` (every thread of the program has stored its
    share before the program arrives) and with ``sem="acq_rel", scope="gpu"`` (the last to arrive sees what every
    other program stored before arriving). The interpreter runs one program at a time and ignores both, so a
    barrier dropped or a relaxed or program-scoped arrival computes the same values on CPU and races on a GPU."""
    found = []
    for name, obj in sorted(vars(module).items()):
        fn = getattr(obj, "fn", None)
        if not callable(fn) or getattr(fn, "__module__", None) != module.__name__:
            continue  # not a Triton function of this module
        where = f"{module.__name__}.{name}"
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(fn)))):
            block = getattr(node, "body", None)
            if not isinstance(block, list):
                continue
            for i, stmt in enumerate(block):
                if hasattr(stmt, "body"):
                    continue  # a compound statement: its own statements are read as a block of their own
                for call in (c for c in ast.walk(stmt) if isinstance(c, ast.Call)):
                    if ast.unparse(call.func) != "tl.atomic_add":
                        continue
                    given = {k.arg: ast.unparse(k.value).strip("'\"") for k in call.keywords}
                    wrong = {k: given.get(k) for k, v in ARRIVAL.items() if given.get(k) != v}
                    if wrong:
                        found.append(
                            f"{where} counts an arrival with {ast.unparse(call)}, not {ARRIVAL}: the last program to "
                            "arrive may not see what the others stored before arriving (on a GPU; the interpreter "
                            "ignores it)"
                        )
                    if i == 0 or ast.unparse(block[i - 1]) != "tl.debug_barrier()":
                        found.append(
                            f"{where} counts an arrival ({ast.unparse(call)}) without tl.debug_barrier() right before "
                            "it: one thread may arrive while others of its program are still storing (on a GPU; the "
                            "interpreter runs one program at a time)"
                        )
    return tuple(found)


def counter_problems() -> tuple[str, ...]:
    """``tile_counters``, run (the arrival counters of linear's MERGE "last" and of greedy_pick): handed out zeroed
    and covering the tiles asked for, grown when a later call has more tiles than the first allocation (an LM
    head's gemv over a 150,000-token vocabulary, 8 columns a program and 4 rows, has 75,968), the outgrown ones kept
    alive (a CUDA graph captured earlier launches with their address). No example on the interpreter reaches that
    many tiles, so this is read off ``tile_counters``' results on counters held for the check alone."""
    import gc
    import weakref

    from neurobrix.ops import linear as module

    device, held = torch.device("cpu"), {}  # type: ignore[var-annotated]
    found = []
    first = module.tile_counters(device, 16, held)
    size = first.numel()
    if size < 16 or bool(first.any()):
        found.append(f"neurobrix.ops.linear.tile_counters(16 tiles) handed out {size} counters, not all zero")
    outgrown = weakref.ref(first)
    grown = module.tile_counters(device, size + 1, held)
    del first
    gc.collect()
    if grown.numel() < size + 1 or bool(grown.any()):
        found.append(
            f"neurobrix.ops.linear.tile_counters, asked for {size + 1} tiles after a call that made {size}, handed "
            f"out {grown.numel()} counters{'' if grown.numel() < size + 1 else ', not all zero'}: a launch with "
            "more tiles counts past them"
        )
    old = outgrown()
    if old is None:
        found.append(
            "neurobrix.ops.linear.tile_counters freed the counters it outgrew: a CUDA graph captured with them "
            "launches on freed memory"
        )
    else:
        module._OUTGROWN[:] = [t for t in module._OUTGROWN if t is not old]  # kept for the check only
    return tuple(found)


WAIT = ("tl.extra.cuda.gdc_wait()", "tl.extra.cuda.gdc_launch_dependents()")  # dependent_launch's body under PDL


def wait_problems() -> tuple[str, ...]:
    """``dependent_launch`` itself, read from its source: under PDL it must wait for the predecessor
    (``gdc_wait``) and then let the successor launch, and do nothing else; no example on the interpreter runs
    that branch, so a wait dropped there would leave every kernel racing on a GPU launched with PDL."""
    from neurobrix.ops._common import dependent_launch

    fn = getattr(dependent_launch, "fn", dependent_launch)
    body = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0].body  # type: ignore[attr-defined]
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) == 1 and isinstance(body[0], ast.If) and ast.unparse(body[0].test) == "PDL" and not body[0].orelse:
        if tuple(ast.unparse(s) for s in body[0].body) == WAIT:
            return switch_problems()
    shown = " ".join(ast.unparse(s) for s in body).replace("\n", " ")
    return (
        f"neurobrix.ops._common.dependent_launch is {shown!r}, not 'if PDL: {WAIT[0]}; {WAIT[1]}': launched with "
        "PDL a kernel may touch memory before its predecessor has finished",
    )


def switch_problems() -> tuple[str, ...]:
    """``split``, run: the launch options it hands every kernel of an op must carry the kernel's ``PDL`` switch as
    Triton's ``launch_pdl`` (a kernel launched with PDL whose switch is off never waits for its predecessor, and
    one whose switch is on without the launch waits for nothing). No example on the interpreter launches with
    PDL, so the switch is read off ``split``'s result."""
    from neurobrix.ops._common import split

    found = []
    for pdl in (False, True):
        meta, launch = split("an op", {"num_warps": 4}, (), pdl)
        if launch.get("PDL") is not pdl or launch.get("launch_pdl") is not pdl or "PDL" in meta:
            found.append(
                f"neurobrix.ops._common.split(pdl={pdl}) hands the kernels PDL={launch.get('PDL')!r} with "
                f"launch_pdl={launch.get('launch_pdl')!r}: a kernel launched with PDL must wait for its predecessor"
            )
    return tuple(found)


NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target)  # the verdict without the minimal example


BF16_STAND_IN = "fp16"  # on the interpreter bf16 settings are checked in fp16 (shipped.STAND_IN)


def bf16_outputs(kernel: str, shape: dict[str, int], config: dict[str, Any], dev: torch.device) -> str:
    """On the interpreter an fp16 entry is launched once more in bf16, at the smallest shape of its domain, and only
    its outputs' dtypes and shapes are judged (``harness.wrong_outputs``): the interpreter's bf16 arithmetic is broken
    upstream, so no value is, but a launcher that allocates its output as fp16 for any 16-bit input (bf16 then comes
    back as fp16) differs from the engine only there. Why the outputs are not the op's, or ""."""
    case = build(kernel, "bf16", shape, Values("bf16", dev, 0, ("normal",)))
    wrong = wrong_outputs(case, run_kernel(case, config))
    return f"launched in bf16 at {case.describe()} (values not judged on the interpreter): {wrong}" if wrong else ""


def check_entry(
    kernel: str,
    entry: Setting,
    dtype: str,
    examples: int,
    profile_name: str,
    on_example: Callable[[], None] | None = None,
    trace: str | None = None,
    shrink: bool = True,
    small: Small | None = None,
    shipped_in: str = "",
) -> EntryResult:
    """Hypothesis over the entry's whole domain for one dtype, the entry's setting handed to the launcher.

    ``trace``: a file rewritten with each example before it runs (JSON: its number, shape, values and
    seed, then the case), so that whoever started this process can name the example that killed it.
    ``shrink`` False: the first failing example is reported as drawn (a shrink can take minutes).
    ``small``: a shipped setting's small shapes (its domain is ``entry``'s), drawn on and beside its own
    blocks and splits; ``shipped_in`` says where that setting is shipped (for the report).
    """
    result = EntryResult(kernel, dtype, entry.domain.describe(), dict(entry.config), shipped_in=shipped_in)
    problems = launch_problems(kernel)
    if problems:  # the same for every entry of the kernel: named with the first the check reaches
        result.passed = False
        result.failure = f"{kernel} {dtype}, config {config_text(result.config)}\n" + "\n".join(problems)
        return result
    # the interpreter ignores a parameter its kernel does not have, num_stages and the GPU's shared memory: a setting
    # run refuses (exit 3, the tables' fault) is refused here, whatever the device (a GPU's shared memory bounds the
    # launch anyway: the most any GPU has here)
    refused = entry_problem(kernel, entry.config, entry.domain)
    if refused:
        result.passed = False
        result.failure = (
            f"{kernel} {dtype} {result.domain}, config {config_text(result.config)}\nthe setting {refused}: "
            "`neurobrix run` refuses it, so no example is drawn"
        )
        return result
    domain = drawable(kernel, entry.domain.ranges)
    record = RECORDS[kernel]
    multiple_of = {**record.multiple_of, **(small.multiple_of if small else {})}
    shape_strategy = shapes(
        domain, cap=dict(record.caps), multiple_of=multiple_of or None, block_sizes=dict(small.blocks) if small else {}
    )
    failing: list[str] = []
    starved: list[str] = []  # the device ran out of memory: no verdict; the other examples are skipped
    dev = device()
    config = config_text(result.config)
    drawn = {"n": 0}
    phases = {} if shrink else {"phases": NO_SHRINK}

    @settings(parent=profile(profile_name), max_examples=examples, **phases)
    @given(shape=shape_strategy, seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(KINDS))
    def conforms(shape: dict[str, int], seed: int, kind: str) -> None:
        if starved and not failing:
            return
        drawn["n"] += 1
        example = f"{kernel} {dtype} {', '.join(f'{k}={v}' for k, v in shape.items())} [values: {kind}, seed {seed}]"
        _note(trace, drawn["n"], shape, kind, seed, example)
        try:
            case = build(kernel, dtype, shape, Values(dtype, dev, seed, (kind,)))
            example = f"{case.describe()} [values: {kind}, seed {seed}]"
            _note(trace, drawn["n"], shape, kind, seed, example)
            verdict = judge(case, run_kernel(case, entry.config), entry.config)
        except Exception as exc:
            if failing or not is_out_of_memory(exc):
                # the example and the config with the exception (a guard band overrun is an AssertionError)
                failing[:] = [f"{example}, config {config}\n{describe_failure(exc)}"]
                raise
            # not a failure for Hypothesis to shrink: the entry is checked again with the device to itself
            starved.append(f"{describe_failure(exc).splitlines()[0]} (shape {shape})")
            return
        if not failing:
            result.examples += 1
            result.worst_ratio = max(result.worst_ratio, verdict.ratio)
            result.worst_relative = max(result.worst_relative, verdict.relative)
            if on_example:
                on_example()
        if verdict.ratio > 1:
            failing[:] = [f"{example}, config {config}\n{verdict.explanation}"]
            raise AssertionError(failing[0])

    # inside the entry's domain only, as a draw would be
    for shape in (*(small.explicit if small else ()), *record.edges):
        if (
            set(shape) == set(domain)
            and all(lo <= shape[d] and (hi is None or shape[d] <= hi) for d, (lo, hi) in domain.items())
            and all(shape[d] % m == 0 for d, m in multiple_of.items())
        ):
            conforms = example(shape=dict(shape), seed=0, kind="normal")(conforms)
    start = time.perf_counter()
    try:
        conforms()
        if starved:
            result.passed, result.out_of_memory = False, True
            result.failure = f"out of device memory after {counted(result.examples, 'example')}: {starved[0]}"
        elif dtype == BF16_STAND_IN and dev.type == "cpu":  # the interpreter: bf16's outputs, not its values
            smallest = {
                d: -(-max(lo, 1) // multiple_of.get(d, 1)) * multiple_of.get(d, 1) for d, (lo, _) in domain.items()
            }
            wrong = bf16_outputs(kernel, smallest, entry.config, dev)
            if wrong:
                result.passed, result.failure = False, f"{kernel} bf16, config {config}\n{wrong}"
    except AssertionError as exc:
        result.passed = False
        result.failure = failing[-1] if failing else f"{kernel} {dtype}, config {config}\n{describe_failure(exc)}"
    except Exception as exc:  # a crash is a failure of the entry, reported, not a crash of check
        result.passed = False
        result.out_of_memory = not failing and is_out_of_memory(exc)
        ours = failing and describe_failure(exc) in failing[-1]
        result.failure = (
            failing[-1] if ours else (describe_failure(exc) + (f"\nlast example: {failing[-1]}" if failing else ""))
        )
    result.seconds = time.perf_counter() - start
    if dev.type == "cuda":
        torch.cuda.empty_cache()  # hand cached memory back: other workers share this GPU
    return result


def _note(trace: str | None, n: int, shape: dict[str, int], kind: str, seed: int, example: str) -> None:
    if trace:
        Path(trace).write_text(
            json.dumps({"example": n, "shape": shape, "kind": kind, "seed": seed, "case": example}), encoding="utf-8"
        )


def last_example(trace: Path) -> dict[str, Any] | None:
    """What a trace file says about the example its entry was running, if it says anything."""
    try:
        data = json.loads(trace.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# What decides an entry's verdict besides its table: the kernels, the engine's lookup, table format and
# device classes, the float64 reference, the bounds, the cases, the strategies and this check; and the
# versions of torch, CUDA, Triton and Hypothesis. A passed entry of an earlier report with the same
# fingerprint (and profile and examples) is carried over by --resume.
VERDICT_FILES = (
    ("neurobrix", "ops/*.py"),
    ("neurobrix", "buckets.py"),
    ("neurobrix", "tables.py"),
    ("neurobrix", "schema.py"),
    ("neurobrix", "gpu.py"),
    ("conformance", "reference.py"),
    ("conformance", "bounds.py"),
    ("conformance", "harness.py"),
    ("conformance", "specs/*.py"),
    ("conformance", "strategies.py"),
    ("conformance", "check.py"),
    ("conformance", "shipped.py"),
)


def fingerprint_inputs(
    tables_root: Path, gpu_class: str, shipped: bool = False, kernel: str | None = None
) -> tuple[str, dict[str, str]]:
    """What :func:`fingerprint` digests: the library versions, as one line, and each file's sha256 by name (the
    class's table files, every class's with ``shipped``, ``kernel``'s and the class file alone with ``kernel``, and
    VERDICT_FILES). A report keeps them (``made_with``), so that a report it cannot resume names what differs."""
    import neurobrix

    roots = {"neurobrix": Path(neurobrix.__file__).resolve().parent, "conformance": Path(__file__).resolve().parent}
    folders = sorted(p for p in tables_root.iterdir() if p.is_dir()) if shipped else [tables_root / gpu_class]
    files = [
        (f"tables/{folder.name}/{f.name}", f)
        for folder in folders
        for f in sorted(folder.iterdir())
        if f.is_file() and (kernel is None or shipped or f.name == "class.yaml" or f.name.startswith(f"{kernel}."))
    ]
    for package, pattern in VERDICT_FILES:
        files += [
            (f"{package}/{f.relative_to(roots[package]).as_posix()}", f) for f in sorted(roots[package].glob(pattern))
        ]
    import hypothesis

    running = stack.running_stack()  # as installed: a Triton built from source states the release it grew from
    versions = (
        f"torch {running.torch} cuda {torch.version.cuda} triton {running.triton} hypothesis {hypothesis.__version__}"
    )
    return versions, {name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in files}


def fingerprint(tables_root: Path, gpu_class: str, shipped: bool = False, kernel: str | None = None) -> str:
    """sha256 over the library versions, the class's table files (every class's with ``shipped``) and
    VERDICT_FILES (path and content). ``kernel``: that kernel's files (index, proofs) and the class file in place of
    the class's tables: one kernel's (another table bound or certified since leaves it as it was)."""
    return _digest(*fingerprint_inputs(tables_root, gpu_class, shipped, kernel))


def _digest(versions: str, files: dict[str, str]) -> str:
    digest = hashlib.sha256(versions.encode())
    for name, sha in files.items():
        digest.update(name.encode() + b"\0" + bytes.fromhex(sha))
    return digest.hexdigest()


def _what_differs(theirs: Any, ours: dict[str, Any]) -> str:
    """Why an earlier report's fingerprint is not this run's, from the inputs each kept (``made_with``): other library
    versions, or the files that differ, were added or are gone (a report without them: its fingerprint alone)."""
    if not isinstance(theirs, dict) or not isinstance(theirs.get("files"), dict):
        return "that report's fingerprint is not this run's (it keeps no list of what it digested)"
    why = []
    if theirs.get("versions") != ours["versions"]:
        why.append(f"it was made with {theirs.get('versions')}, this run has {ours['versions']}")
    old, new = theirs["files"], ours["files"]
    changed = sorted(n for n in set(old) | set(new) if old.get(n) != new.get(n))
    if changed:
        shown = ", ".join(
            f"{n} ({'new' if n not in old else 'gone' if n not in new else 'changed'})" for n in changed[:6]
        )
        why.append(f"{shown}{f' and {len(changed) - 6} more' if len(changed) > 6 else ''} differ")
    return "; ".join(why) or "that report's fingerprint is not this run's"


@dataclass
class Report:
    gpu_class: str
    tables: str
    profile: str
    results: list[EntryResult] = field(default_factory=list)
    seconds: float = 0.0
    left: int = 0  # entries not checked (stopped at the time limit, or after the first failure)
    stopped: str = "time limit"  # why entries were left
    examples_per_entry: int = 0
    fingerprint: str = ""
    # what the fingerprint digests (fingerprint_inputs): the versions and each file's sha256, so that a report it
    # cannot resume says why
    made_with: dict[str, Any] = field(default_factory=dict)
    # each kernel checked: ``fingerprint(..., kernel=)`` (none with ``shipped``): --resume carries a kernel's entries
    # over where its own is the same, whatever became of the class's other tables
    fingerprints: dict[str, str] = field(default_factory=dict)
    retried: int = 0  # entries checked again alone on a GPU after running out of memory beside other workers
    resumed_from: dict[str, Any] | None = None  # the earlier report whose passed entries were carried over
    shipped: bool = False  # every other class's settings checked too, at small shapes
    not_run: list[str] = field(default_factory=list)  # shipped settings with no dtype this class runs

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def complete(self) -> bool:
        return self.left == 0

    def summary(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for r in self.results:
            s = out.setdefault(
                r.kernel,
                {"entries": 0, "shipped": 0, "examples": 0, "worst_ratio": 0.0, "worst_relative": 0.0, "failed": 0},
            )
            s["entries"] += 1
            s["shipped"] += bool(r.shipped_in)
            s["examples"] += r.examples
            s["worst_ratio"] = max(s["worst_ratio"], r.worst_ratio)
            s["worst_relative"] = max(s["worst_relative"], r.worst_relative)
            s["failed"] += not r.passed
        return out

    def as_json(self) -> dict[str, Any]:
        return {
            "class": self.gpu_class,
            "tables": self.tables,
            "profile": self.profile,
            "passed": self.passed,
            "complete": self.complete,
            "left": self.left,
            "stopped": self.stopped if self.left else None,  # why entries were left: a time limit, an interrupt
            "seconds": round(self.seconds, 1),
            "examples_per_entry": self.examples_per_entry,
            "fingerprint": self.fingerprint,
            "fingerprints": self.fingerprints,
            "made_with": self.made_with,
            "retried": self.retried,
            "resumed_from": self.resumed_from,
            "shipped": self.shipped,
            "not_run": self.not_run,
            "summary": self.summary(),
            "entries": [asdict(r) for r in self.results],
        }


def require_device(gpu_class: GPUClass) -> None:
    """Checking (or certifying) a class means running on it: refuse on any other device."""
    try:
        facts = device_facts()
    except NoGPUError:
        if gpu_class.id == nb_tables.INTERPRETER:
            # the engine's advice ended "or, for `neurobrix run`, choose --backend torch ... nothing to warm up",
            # which leads a check or a certify of this class nowhere (walk-through round 45)
            raise NoGPUError(
                "no GPU found (torch.cuda.is_available() is False) and the Triton interpreter is off: the interpreter "
                "class is checked and certified where TRITON_INTERPRET=1 runs the kernels in the interpreter; set it "
                "(`export TRITON_INTERPRET=1`, as CONTRIBUTING.md's 'Try the steps on a CPU first' does)"
            ) from None
        # the engine's own advice (TRITON_INTERPRET=1, or `run --backend torch`) leads a GPU class's check nowhere:
        # the interpreter is another class, refused next as "not of GPU class" (walk-through round 41)
        raise NoGPUError(
            f"no GPU found (torch.cuda.is_available() is False): GPU class {gpu_class.id} ({gpu_class.description}) "
            "is checked and certified on a GPU of that class. Run this on the machine with the GPU (CONTRIBUTING.md, "
            "'Certify a new GPU class'); on a CPU, only the interpreter class runs (TRITON_INTERPRET=1, --class "
            "interpreter)."
        ) from None
    if not matches(gpu_class, facts):
        if gpu_class.id == nb_tables.INTERPRETER:
            said = "; for the interpreter class set TRITON_INTERPRET=1"
        elif facts.backend == nb_tables.INTERPRETER:  # TRITON_INTERPRET=1 left unnamed (walk-through round 48)
            said = (
                "; TRITON_INTERPRET=1 is set, and the interpreter checks and certifies the interpreter class alone "
                "(--class interpreter): a GPU class is checked and certified on its GPU, with TRITON_INTERPRET unset"
            )
        else:
            said = ""
        raise UsageError(
            f"this machine is not of GPU class {gpu_class.id}: {facts.describe()}. Run this on a machine of that "
            f"class ({gpu_class.description})" + said
        )


def select(index: SettingsIndex, dtypes: set[str] | None) -> list[tuple[Setting, str]]:
    return [(e, d) for e in index.entries for d in e.domain.dtypes if dtypes is None or d in dtypes]


def lookup_problem(index: SettingsIndex, entry: Setting, dtype: str) -> str | None:
    """Why the index's own lookup (what ``run`` uses) would not find ``entry`` at its domain's corners."""
    corners = [
        tuple(lo for _, lo, _ in entry.domain.ranges),
        tuple(lo if hi is None else hi for _, lo, hi in entry.domain.ranges),
    ]
    for values in corners:
        found = index.lookup(dtype, values)
        if found != entry:  # equal domains cannot be two entries: the domains are disjoint
            shown = ", ".join(f"{d}={v}" for d, v in zip(index.key, values))
            other = "no entry" if found is None else f"entry {found.domain.describe()} {dict(found.config)}"
            return f"the index's lookup of {dtype} {shown} finds {other}, not this entry"
    return None


def _key(kernel: str, dtype: str, domain: str, config: dict[str, Any]) -> str:
    return json.dumps([kernel, dtype, domain, config], sort_keys=True)


# the most characters a file a command is handed is read to (a check report to resume, a model's config.json): far past
# any report or config; a file that never ends (/dev/zero, /dev/urandom) was read until the memory ran out
FILE_LIMIT = 1 << 26


def read_limited(path: Path) -> str:
    """``path``'s UTF-8 text, refused (ValueError) past :data:`FILE_LIMIT` characters."""
    with path.open(encoding="utf-8") as f:
        text = f.read(FILE_LIMIT + 1)
    if len(text) > FILE_LIMIT:
        raise ValueError(f"more than {FILE_LIMIT:,} characters: a file that never ends, or far larger than any")
    return text


def carried_over(path: Path, report: Report) -> dict[str, EntryResult]:
    """The passed entries of an earlier JSON report that ``report`` may take over, by entry key.

    Refused (UsageError) unless that report checked the same class with the same profile and
    examples per entry, and its fingerprint (tables, kernels, reference, bounds) is this run's; or, for a report
    with a fingerprint per kernel, one kernel's at least: only the entries of the kernels whose own is this run's
    are carried (the others' tables changed since, a bind or a certify: named in ``resumed_from["changed"]``)."""
    try:
        old = json.loads(read_limited(path))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--resume {path}: cannot read a check report there ({exc})") from None
    if not isinstance(old, dict) or not isinstance(old.get("entries"), list):
        raise UsageError(f"--resume {path}: not a check report (written by check --json)")
    theirs = old.get("fingerprints")
    same = {k for k, v in report.fingerprints.items() if isinstance(theirs, dict) and theirs.get(k) == v}
    whole = old.get("fingerprint") == report.fingerprint
    for name, ours in (
        ("class", report.gpu_class),
        ("profile", report.profile),
        ("examples_per_entry", report.examples_per_entry),
        ("fingerprint", report.fingerprint),
        ("shipped", report.shipped),
    ):
        if name == "fingerprint" and (whole or same):
            continue
        if name == "fingerprint" and old.get(name) != ours:  # named: the tables, a kernel, a bound or a library
            raise UsageError(
                f"--resume {path}: {_what_differs(old.get('made_with'), report.made_with)}; only a check of the same "
                "tables, kernels, bounds and library versions (torch, CUDA, Triton, Hypothesis) can be resumed"
            )
        if old.get(name, False if name == "shipped" else None) != ours:
            raise UsageError(
                f"--resume {path}: that report's {name} is {old.get(name)!r}, this run's {ours!r}; "
                "only a check of the same tables, kernels and bounds can be resumed"
            )
    known = set(EntryResult.__dataclass_fields__)
    carried = {}
    # a kernel of this run that report checked under another fingerprint of its own: named whether or not any of
    # its entries passed there (one whose every entry failed changed too)
    changed = set() if whole else {k for k in report.fingerprints if isinstance(theirs, dict) and k in theirs} - same
    for item in old["entries"]:
        if isinstance(item, dict) and item.get("passed"):
            if not whole and item.get("kernel") not in same:
                if item.get("kernel") in report.fingerprints:  # a kernel of this run (the others are not wanted)
                    changed.add(str(item.get("kernel")))
                continue
            if not (
                all(isinstance(item.get(k), str) for k in ("kernel", "dtype", "domain"))
                and isinstance(item.get("config"), dict)
            ):
                raise UsageError(
                    f"--resume {path}: an entry without its kernel, dtype, domain or config: {item!r:.200}"
                )
            result = EntryResult(**{k: v for k, v in item.items() if k in known})
            result.carried = True
            carried[_key(result.kernel, result.dtype, result.domain, result.config)] = result
    report.resumed_from = {"file": path.name, "seconds": old.get("seconds"), "carried": 0, "changed": sorted(changed)}
    return carried


def _inside(entry: Setting, where: dict[str, tuple[int, int | None]]) -> bool:
    """Whether the entry's domain lies inside ``where`` on every dimension it names (a kernel without one
    of them has no domain inside)."""
    spans = {name: (lo, hi) for name, lo, hi in entry.domain.ranges}
    for dim, (lo, hi) in where.items():
        if dim not in spans:
            return False
        first, last = spans[dim]
        if first < lo or (hi is not None and (last is None or last > hi)):
            return False
    return True


def check_class(
    gpu_class: str,
    kernels: list[str] | None,
    dtypes: set[str] | None,
    examples: int | None,
    profile_name: str,
    progress: Any = None,
    jobs: int | None = None,
    max_minutes: float | None = None,
    resume: Path | None = None,
    isolate: bool = False,
    tables_root: Path | None = None,
    shrink: bool = True,
    shipped: bool = False,
    variants: set[str] | None = None,
    exitfirst: bool = False,
    where: dict[str, tuple[int, int | None]] | None = None,
) -> Report:
    """Every selected entry checked; with several workers (``jobs``, GPUs) entries run in parallel.

    ``isolate``: every entry on a worker process, even with one job; an entry whose worker dies is
    reported crashed, with the example it was running, and the others go on.
    ``shrink`` False: failing examples are reported as drawn, not shrunk.
    ``shipped``: also every other distinct setting of every class's tables, at its small shapes
    (``conformance.shipped``). ``variants``: only settings of these variants (config["variant"]).
    ``exitfirst``: stop starting entries once one has failed (the rest are counted as left).
    ``where``: only entries whose domain lies inside these ranges ({dim: (lo, hi or None)}), as certify's.

    ``max_minutes``: stop after that long: no entry starts later and the entries under way then are stopped, left
    unchecked like the rest (a run checks one entry at least, however long it takes); the report says how many were
    left. On one process (``jobs`` 1 without ``isolate``) an entry under way cannot be stopped: it finishes.
    An entry that ran out of device memory beside other workers is checked again alone on a GPU (within
    ``max_minutes``; one that cannot be is left unchecked, not failed).
    ``resume``: an earlier JSON report of the same tables, kernels and bounds; its passed entries are
    carried over, the others checked.
    """
    from . import workers
    from .track import require_class, require_kernel_tables

    loaded = nb_tables.load(tables_root)
    # what was named is refused before what the machine lacks, as `neurobrix run` does: `check --kernel nosuch` said
    # "no GPU found" on a CPU without the interpreter (walk-through round 45); the device is required below
    require_class(gpu_class, loaded)
    require_kernel_tables(gpu_class, loaded)
    have = {k: loaded.index(gpu_class, k) for k in loaded.kernels(gpu_class)}
    for kernel in kernels or []:
        if kernel not in have:
            raise UsageError(
                f"class {gpu_class} has no table for kernel {kernel!r}; it has {', '.join(sorted(have))}"
                f"{close_hint([kernel], sorted(have))}"
            )
    chosen = sorted(kernels or have)
    known = {v: k for k in chosen for v in SPECS[k].variants}
    unknown = sorted((variants or set()) - set(known))
    if unknown:
        offered = "; ".join(f"{k}: {', '.join(SPECS[k].variants)}" for k in chosen if SPECS[k].variants)
        hint = close_hint(unknown, sorted(known))
        raise UsageError(
            f"no variant {', '.join(unknown)} in {', '.join(chosen)} (variants: {offered or 'none'}){hint}"
        )
    outside = sorted(set(where or {}) - {dim for k in chosen for dim in SPECS[k].key})
    if outside:
        raise UsageError(f"--where names {', '.join(outside)}, a dimension of none of {', '.join(chosen)}")
    require_device(loaded.classes[gpu_class])
    n = examples or profile(profile_name).max_examples
    root = Path(loaded.location.root)
    versions, files = fingerprint_inputs(root, gpu_class, shipped)
    report = Report(
        gpu_class,
        str(root),
        profile_name,
        examples_per_entry=n,
        fingerprint=_digest(versions, files),
        made_with={"versions": versions, "files": files},
        fingerprints={} if shipped else {k: fingerprint(root, gpu_class, kernel=k) for k in chosen},
        shipped=shipped,
    )
    carried = carried_over(resume, report) if resume is not None else {}

    def wanted(config: Any) -> bool:
        return variants is None or config.get("variant") in variants

    work: list[tuple[str, Setting, str, Target | None]] = []
    for k in chosen:
        for e, d in select(have[k], dtypes):
            if not wanted(e.config) or (where and not _inside(e, where)):
                continue
            earlier = carried.get(_key(k, d, e.domain.describe(), dict(e.config)))
            wrong_door = lookup_problem(have[k], e, d)
            if wrong_door is not None:
                report.results.append(
                    EntryResult(k, d, e.domain.describe(), dict(e.config), passed=False, failure=wrong_door)
                )
            elif earlier is not None:
                report.results.append(earlier)
            else:
                work.append((k, e, d, None))
    if shipped:
        others, report.not_run = shipped_targets(gpu_class, loaded, interpreter_enabled(), chosen, dtypes)
        for t in others:
            # --where holds the other settings to the small shapes they are checked at, as it holds the entries
            if not wanted(t.setting.config) or (where and not _inside(t.setting, where)):
                continue
            earlier = carried.get(_key(t.kernel, t.dtype, t.setting.domain.describe(), dict(t.setting.config)))
            if earlier is not None:
                report.results.append(earlier)
            else:
                work.append((t.kernel, t.setting, t.dtype, t))
    if variants is not None and not work and not report.results:
        hint = "" if shipped else " (--shipped adds every class's settings)"
        raise UsageError(
            f"no entry of {', '.join(chosen)} on {gpu_class} has a setting of variant "
            f"{', '.join(sorted(variants))}{hint}"
        )
    if where and not work and not report.results:
        shown = ", ".join(f"{dim}={lo}:{'' if hi is None else hi}" for dim, (lo, hi) in where.items())
        raise UsageError(f"no entry of {', '.join(chosen)} on {gpu_class} lies inside --where {shown}")
    if report.resumed_from is not None:
        report.resumed_from["carried"] = len(report.results)
    devices: list[int | None] = [None] if interpreter_enabled() else (workers.same_class_gpus() or [None])
    jobs = workers.default_jobs(devices) if jobs is None else jobs
    start = time.perf_counter()
    task = progress.add_task("check", total=len(work)) if progress else None

    def done(i: int) -> None:
        if progress:
            kernel, entry, dtype, _ = work[i]
            ranges = entry.domain.describe().partition(" ")[2]  # (the domain's dtypes: the one checked is named)
            progress.update(task, advance=1, description=f"{kernel} {dtype} {ranges}")

    with tempfile.TemporaryDirectory(prefix="neurobrix-check-") as scratch:
        traces = Path(scratch)  # one file per entry: the example it is running (for a worker that dies)

        def args(i: int, k: str, e: Setting, d: str, t: Target | None) -> tuple:
            return (
                k,
                e,
                d,
                n,
                profile_name,
                None,
                str(traces / f"{i}.json"),
                shrink,
                t.small if t else None,
                t.where if t else "",
            )

        def outcome(
            i: int, item: tuple[str, Setting, str, Target | None], result: EntryResult | workers.Failed
        ) -> EntryResult:
            kernel, entry, dtype, target = item
            shipped_in = target.where if target else ""
            if isinstance(result, workers.Crashed):  # the kernel took its process down: name the example
                last = last_example(traces / f"{i}.json")
                where = f"during example {last['example']}: {last['case']}" if last else "before its first example"
                return EntryResult(
                    kernel,
                    dtype,
                    entry.domain.describe(),
                    dict(entry.config),
                    passed=False,
                    crashed=True,
                    examples=max(0, last["example"] - 1) if last else 0,
                    failure=f"crashed: {result.message} {where}, config {config_text(entry.config)}",
                    shipped_in=shipped_in,
                )
            if isinstance(result, workers.Failed):  # check_entry itself raised: a failure of the entry
                return EntryResult(
                    kernel,
                    dtype,
                    entry.domain.describe(),
                    dict(entry.config),
                    passed=False,
                    failure=f"the check could not run: {result.message}",
                    out_of_memory="out of memory" in result.message.lower(),
                    shipped_in=shipped_in,
                )
            return result

        deadline = start + max_minutes * 60 if max_minutes is not None else None
        chunk = max(2, 2 * jobs)  # small waves: the time limit is checked between them

        def limit(first_wave: bool) -> workers.Limit | None:
            """Past the deadline the wave's entries under way stop (no verdict: left, as the rest); the first wave
            of a run finishes one entry first, so that a rerun given the report always gets further."""
            if deadline is None:
                return None
            return (lambda: deadline - time.perf_counter()), int(first_wave)

        longest = 0.0
        # (index in report.results, in work, item)
        starved: list[tuple[int, int, tuple[str, Setting, str, Target | None]]] = []

        def keep(w: int, item: tuple[str, Setting, str, Target | None], result: Any) -> None:
            """An entry's result into the report; one starved of memory is noted for its run alone (in a wave the
            time limit or an interrupt cut too: without that run it has no verdict, and is left, not failed)."""
            result = outcome(w, item, result)
            if result.out_of_memory:
                starved.append((len(report.results), w, item))
            report.results.append(result)

        before = len(report.results)  # the carried-over entries and the wrong doors, checked by nobody here
        try:
            with workers.Workers(jobs, devices, isolate=isolate) as pool:
                for first in range(0, len(work), chunk):
                    now = time.perf_counter()
                    # the next wave would overrun; the first runs whatever the limit (a rerun of a check stopped
                    # before any work would stop there again)
                    if deadline is not None and first and now + longest > deadline:
                        report.left = len(work) - first
                        break
                    part = work[first : first + chunk]
                    try:
                        results = pool.map(
                            check_entry,
                            [args(first + j, *item) for j, item in enumerate(part)],
                            lambda i, first=first: done(first + i),
                            limit=limit(len(report.results) == before),
                        )
                    except workers.OutOfTime as exc:  # the entries finished are kept, the rest left
                        for j, result in sorted(exc.done.items()):
                            keep(first + j, part[j], result)
                        report.left = len(work) - (len(report.results) - before)
                        break
                    except KeyboardInterrupt as exc:  # the wave's entries already checked are kept (below)
                        for j, result in sorted(getattr(exc, "done", {}).items()):
                            if not (
                                isinstance(result, workers.Crashed) and workers.ended_by_interrupt(result.exitcode)
                            ):
                                keep(first + j, part[j], result)
                        raise
                    for j, (item, result) in enumerate(zip(part, results)):
                        keep(first + j, item, result)
                    longest = max(longest, time.perf_counter() - now)
                    if exitfirst and any(not r.passed and not r.out_of_memory for r in report.results):
                        report.left, report.stopped = len(work) - first - len(part), "stopped at the first failure"
                        break
                if starved and pool.shares_devices:
                    pool.close()  # the shared workers go, and the device memory they hold with them
                    if progress:
                        progress.update(
                            task,
                            description=f"checking {counted(len(starved), 'entry', 'entries')} again, alone on a GPU "
                            "(out of memory beside other workers)",
                        )
                    wave, longest_alone = len(devices), longest  # a shared wave's time: the first estimate
                    for first in range(0, len(starved), wave):
                        now = time.perf_counter()
                        if deadline is not None and now + longest_alone > deadline:
                            break
                        part = starved[first : first + wave]
                        results = pool.alone(check_entry, [args(w, *item) for _, w, item in part])
                        for (i, w, item), result in zip(part, results):
                            report.results[i] = outcome(w, item, result)
                            report.retried += 1
                        longest_alone = time.perf_counter() - now
                    # starved entries the time limit left without a second run have no verdict: left, like the rest
                    unrun = {i for i, _, _ in starved[report.retried :]}
                    report.results = [r for i, r in enumerate(report.results) if i not in unrun]
                    report.left += len(unrun)
        except KeyboardInterrupt as exc:
            # Ctrl-C or a job's SIGTERM: the report of the entries checked so far goes with the interrupt (``--json``
            # writes it, ``--resume`` carries its passes over); an entry whose worker the interrupting signal itself
            # ended has no verdict, nor one that ran out of memory and was not checked again alone
            unrun = {i for i, _, _ in starved[report.retried :]}
            report.results = [r for i, r in enumerate(report.results) if i not in unrun]
            report.left = len(work) - (len(report.results) - before)
            report.stopped, report.seconds = "interrupted", time.perf_counter() - start
            exc.report = report  # type: ignore[attr-defined]
            raise
    report.seconds = time.perf_counter() - start
    return report


def render(report: Report) -> str:
    lines = [
        f"conformance check of class {report.gpu_class} ({printable(str(report.tables))}), profile {report.profile}"
        + (", with every class's shipped settings at small shapes" if report.shipped else ""),
        f"  {'kernel':<18} {'entries':>7} {'shipped':>7} {'examples':>8} {'worst err/bound':>15} {'failed':>6}",
    ]
    for kernel, s in sorted(report.summary().items()):
        lines.append(
            f"  {kernel:<18} {s['entries'] - s['shipped']:>7} {s['shipped']:>7} {s['examples']:>8} "
            f"{s['worst_ratio']:>15.3f} {s['failed']:>6}"
        )
    for r in report.results:
        if not r.passed:
            where = f" ({r.shipped_in})" if r.shipped_in else ""
            lines.append(
                f"{'CRASHED' if r.crashed else 'FAILED'} {r.kernel} {r.dtype} {r.domain} config "
                f"{r.config}{where}:\n  " + (r.failure or "").replace("\n", "\n  ")
            )
    for line in report.not_run:
        lines.append(f"not run here: {line}")
    total = sum(r.examples for r in report.results)
    verdict = "PASSED" if report.passed else "FAILED"
    if report.passed and not report.complete:
        verdict = "INCOMPLETE (no failure so far)"
    carried = sum(r.carried for r in report.results)
    lines.append(
        f"{verdict}: {counted(len(report.results), 'entry check')}, {counted(total, 'example')}, {report.seconds:.1f} s"
        + (f"; {counted(report.left, 'entry check')} not run ({report.stopped})" if report.left else "")
    )
    if report.retried:
        lines.append(
            f"  {counted(report.retried, 'entry check')} ran out of device memory beside other workers and were run "
            "again alone on a GPU (counted once, by their second run)"
        )
    if report.resumed_from is not None:
        lines.append(
            # the report's file name and its "seconds", as given (a line feed split the line, strict round 63)
            f"  {carried} passed entry checks carried over from {printable(str(report.resumed_from['file']))} (same "
            f"tables, kernels and bounds; {printable(str(report.resumed_from['seconds']))} s there), "
            f"{len(report.results) - carried} checked in this run"
        )
        if report.resumed_from.get("changed"):
            lines.append(
                f"  not carried over: {', '.join(report.resumed_from['changed'])} (its table changed since that "
                "report): checked again"
            )
    return "\n".join(lines)


def parse_dtypes(values: list[str] | None) -> set[str] | None:
    if not values:
        return None
    unknown = [v for v in values if v not in ("fp32", "fp16", "bf16")]
    if unknown:
        from neurobrix.cli import dtype_hint  # `float16` (torch's name): walk-through round 46

        raise UsageError(f"unknown dtype(s) {', '.join(unknown)}; choose from fp32, fp16, bf16{dtype_hint(unknown)}")
    return set(values)
