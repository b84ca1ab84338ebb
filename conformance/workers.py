"""Conformance work spread over processes and devices: many workers for correctness, one per device for timing.

Screening candidates and Hypothesis proofs only ask whether a kernel computes the right numbers, so
they may share a device: ``Workers.map`` runs them on ``jobs`` processes spread round-robin over the
devices (each process sees one GPU through ``CUDA_VISIBLE_DEVICES``), which also compiles the
candidates on many CPU cores at once. Timing must have its device to itself: ``Workers.alone`` runs
on one process per device, and the caller never overlaps it with ``map`` (the phases alternate).
Triton's on-disk cache carries the compiled kernels from the correctness workers to the timers.

With ``jobs <= 1`` and one device everything runs in this process, in order (the interpreter class,
tests, a laptop), unless the caller asks for isolation: ``Workers(..., isolate=True)`` runs every item
on a worker process that takes one item at a time, so that a worker that dies (a kernel that corrupts
the heap: SIGSEGV, a glibc abort) takes only the item it held: that item's result is ``Crashed``, a
fresh worker takes its place and the other items go on.

A caller with a time limit passes ``time_left`` (seconds left, by the caller's clock): once it reaches 0 the items
under way are stopped (their workers killed; on one process, the next item is not started) and ``OutOfTime`` carries
the results of the items finished; with ``at_least=1`` one item of the call finishes first (a run that is always cut
before its first item would never make progress).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Failed:
    """The result of an item whose function raised (or whose worker died): the others go on."""

    message: str


class OutOfTime(Exception):
    """The caller's time ran out with items under way: those were stopped (no result), ``done`` holds the results
    of the items finished, {index: result}."""

    def __init__(self, done: dict[int, Any]):
        super().__init__(f"time limit reached, {len(done)} item(s) finished")
        self.done = done


# A caller's time limit: (seconds left by its clock, how many items of the call must finish before a cut)
Limit = tuple[Callable[[], float], int]


def _cut(limit: Limit | None, finished: int) -> bool:
    return limit is not None and finished >= limit[1] and limit[0]() <= 0


def _timeout(limit: Limit | None) -> float | None:
    return None if limit is None else max(0.0, limit[0]())


@dataclass(frozen=True)
class Crashed(Failed):
    """The worker process died while it held this item (only with isolation): its exit status says how."""

    exitcode: int = 0


def _failure(exc: BaseException) -> Failed:
    return Failed(f"{type(exc).__name__}: {exc}".splitlines()[0][:500])


def exit_reason(exitcode: int | None) -> str:
    """A process's exit status in words: 'killed by SIGSEGV', 'exit status 3'."""
    if exitcode is None:
        return "no exit status"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"


def same_class_gpus() -> list[int]:
    """Indices of the visible GPUs identical to GPU 0 (name, compute capability, multiprocessors)."""
    import torch

    if not torch.cuda.is_available():
        return []

    def facts(i: int) -> tuple:
        p = torch.cuda.get_device_properties(i)
        return (p.name, p.major, p.minor, p.multi_processor_count)

    first = facts(0)
    return [i for i in range(torch.cuda.device_count()) if facts(i) == first]


_INTERRUPTS: list[int] = []


def interrupt(signum: int, frame: object) -> None:
    """The conformance command's Ctrl-C: KeyboardInterrupt where the program is, as Python's own handler raises it, and
    remembered: one raised inside a garbage-collection callback (Hypothesis times every collection with one) or a
    finalizer is printed as "Exception ignored" and lost, and certify went on to its end; items run in this process
    raise it again once the item is done."""
    _INTERRUPTS.append(signum)
    raise KeyboardInterrupt


def _interrupted(signum: int, frame: object) -> None:
    """Ctrl-C reaches every process of the terminal's process group: a worker ends at once and quietly (exit 130),
    and its parent, interrupted too, says so in one line (each worker printed its KeyboardInterrupt traceback)."""
    os._exit(128 + signum)


# the signals that end a command (Ctrl-C, a job's time limit or cancel, a closed terminal): a worker they reach ends
INTERRUPTING = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def _quiet_on_interrupts() -> None:
    for number in INTERRUPTING:
        # SIGTERM or SIGHUP ignored by the command's caller (`nohup`) stays ignored; SIGINT ends a worker quietly
        # whatever the command does with it, as it always did (the tests send it to workers of a background job)
        if number == signal.SIGINT or signal.getsignal(number) is not signal.SIG_IGN:
            signal.signal(number, _interrupted)


def ended_by_interrupt(exitcode: int | None) -> bool:
    """Whether a worker's exit status is an interrupting signal's (its own quiet exit, or the signal's default)."""
    return exitcode is not None and exitcode in {*(128 + n for n in INTERRUPTING), *(-n for n in INTERRUPTING)}


def _die_with_parent() -> None:
    """On Linux, this worker is killed when the process that started it dies (a SIGKILL, a job's hard limit), as it
    ends with it on Ctrl-C: orphaned, it went on with its item on the GPU for nobody. Hand-written through ctypes:
    prctl(PR_SET_PDEATHSIG) has no binding in the standard library, and a dependency for one call is not worth it."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid != os.getppid():  # it died before the call: nobody is left to serve
        os._exit(128 + signal.SIGKILL)


def usable_cores() -> int:
    """The CPU cores this process may run on: joblib's count, the host's cut to this process's affinity mask (taskset,
    a batch scheduler's cpuset) and to a cgroup CPU quota (a container given 2 of a 64-core host's cores, where
    ``os.cpu_count()`` says 64 and 14 workers would each start 4 threads on 2 cores), and to LOKY_MAX_CPU_COUNT where
    a user sets it. The standard library reads no quota (``os.process_cpu_count``, 3.13, reads the mask alone)."""
    from joblib import cpu_count

    return max(1, cpu_count())


def _share_cores(workers: int) -> None:
    """Give this worker its share of the CPU cores for torch's (and numpy's) own threads: each library otherwise
    starts a thread per core in every worker, and ``workers`` processes doing float64 references and bounds on the
    CPU at once ran 14 x 16 threads on an H200 machine's 16 cores (rotary's check: 14 s an example there, 0.26 s
    alone). The variables reach the libraries a worker imports later; torch's count is set if torch is already in."""
    share = str(max(1, usable_cores() // max(1, workers)))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = share
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(int(share))


def _bind(devices: Any, workers: int = 1) -> None:
    """Worker initializer: take one device from the queue and see only it (device numbers count the
    GPUs this process was given, so they map through an inherited CUDA_VISIBLE_DEVICES), and its share of the
    CPU cores (``_share_cores``)."""
    _quiet_on_interrupts()
    _die_with_parent()
    _share_cores(workers)
    _see_only(devices.get())


_NOTHING = object()


def _see_only(device: int | None) -> None:
    if device is not None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        names = [v.strip() for v in visible.split(",")] if visible else None
        os.environ["CUDA_VISIBLE_DEVICES"] = names[device] if names else str(device)


def _serve(conn: Any, device: int | None, workers: int = 1) -> None:
    """An isolated worker: (index, fn, args) in, (index, result or Failed) out, one at a time; None ends it."""
    _quiet_on_interrupts()
    _die_with_parent()
    _share_cores(workers)
    _see_only(device)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        index, fn, args = task
        try:
            result = fn(*args)
        except Exception as exc:  # noqa: BLE001 - reported as the item's result
            result = _failure(exc)
        try:
            conn.send((index, result))
        except Exception as exc:  # noqa: BLE001 - an unpicklable result
            conn.send((index, _failure(exc)))


class _Isolated:
    """Worker processes (spawned, one device each) that take one item at a time. A worker that dies is
    noticed through its process sentinel: its item gets ``Crashed`` and a fresh worker starts for the next
    item. A worker whose item raised is replaced too (a broken CUDA context must not serve on).

    Hand-written rather than a ProcessPoolExecutor: when one of its workers dies the executor fails every
    pending item alike (BrokenProcessPool), and the item that killed it cannot be told from the others."""

    def __init__(self, devices: list[int | None], workers: int):
        self._ctx = multiprocessing.get_context("spawn")  # CUDA cannot be forked
        self._slots = [devices[i % len(devices)] for i in range(workers)]
        self._procs: list[tuple[Any, Any] | None] = [None] * workers

    def _start(self, slot: int) -> tuple[Any, Any]:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(target=_serve, args=(child, self._slots[slot], len(self._slots)), daemon=True)
        process.start()
        child.close()
        self._procs[slot] = (process, parent)
        return process, parent

    def _stop(self, slot: int) -> None:
        held = self._procs[slot]
        self._procs[slot] = None
        if held is None:
            return
        process, conn = held
        try:
            if process.is_alive():
                conn.send(None)
        except (OSError, ValueError):
            pass
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
            process.join()
        conn.close()

    def run(
        self,
        fn: Callable[..., R],
        items: list[tuple],
        on_done: Callable[[int], None] | None,
        limit: Limit | None = None,
    ) -> tuple[list[R | Failed], bool]:
        results: list[Any] = [None] * len(items)
        pending = deque(range(len(items)))
        busy: dict[int, int] = {}  # slot -> index of the item it holds
        try:
            self._serve_items(fn, items, on_done, results, pending, busy, limit)
        except KeyboardInterrupt as exc:  # the items done so far go with the interrupt (a check's partial report)
            exc.done = {i: r for i, r in enumerate(results) if r is not None}  # type: ignore[attr-defined]
            raise
        return results, any(isinstance(r, Failed) for r in results)

    def _serve_items(
        self,
        fn: Callable[..., Any],
        items: list[tuple],
        on_done: Callable[[int], None] | None,
        results: list[Any],
        pending: deque[int],
        busy: dict[int, int],
        limit: Limit | None = None,
    ) -> None:
        finished = 0
        while pending or busy:
            if _cut(limit, finished):  # the items under way have nobody left to report to
                self.close(kill=True)
                raise OutOfTime({i: r for i, r in enumerate(results) if r is not None})
            for slot in range(len(self._slots)):
                if slot in busy or not pending:
                    continue
                held = self._procs[slot]
                process, conn = held if held is not None and held[0].is_alive() else self._start(slot)
                index = pending.popleft()
                conn.send((index, fn, items[index]))
                busy[slot] = index
            watched = [self._procs[slot][1] for slot in busy] + [self._procs[slot][0].sentinel for slot in busy]
            wait(watched, timeout=_timeout(limit))
            for slot, index in list(busy.items()):
                process, conn = self._procs[slot]
                result: Any = _NOTHING
                try:
                    if conn.poll():  # a result is read first: a worker may die right after sending it
                        _, result = conn.recv()
                except Exception:  # noqa: BLE001 - a pipe closed (or cut mid-message) by a dying worker
                    result = _NOTHING
                if result is _NOTHING and process.is_alive():
                    continue  # not done yet
                if result is _NOTHING:  # the worker died holding the item
                    process.join(timeout=10)
                    result = Crashed(
                        f"the worker process died ({exit_reason(process.exitcode)})", process.exitcode or 0
                    )
                    self._stop(slot)
                elif isinstance(result, Failed):
                    self._stop(slot)
                results[index] = result
                finished += 1
                del busy[slot]
                if on_done:
                    on_done(index)

    def close(self, kill: bool = False) -> None:
        """End the workers: each asked to stop after its item (10 s, then killed), or with ``kill`` killed at once
        (an interrupt: an item under way has nobody left to report to)."""
        if kill:
            for held in self._procs:
                if held is not None and held[0].is_alive():
                    held[0].kill()
        for slot in range(len(self._procs)):
            self._stop(slot)


class Workers:
    """Process pools over ``devices`` (GPU indices, or [None] for the CPU / interpreter); with ``isolate``,
    worker processes even for one job, and a dying worker reported against its own item only."""

    def __init__(self, jobs: int, devices: list[int | None], isolate: bool = False):
        self.devices = devices or [None]
        self.jobs = max(1, jobs)
        self.isolate = isolate
        self.inline = self.jobs <= 1 and len(self.devices) == 1 and not isolate
        self._shared: Executor | _Isolated | None = None
        self._alone: Executor | _Isolated | None = None

    def _pool(self, workers: int) -> Executor | _Isolated:
        if self.isolate:
            return _Isolated(self.devices, workers)
        ctx = multiprocessing.get_context("spawn")  # CUDA cannot be forked
        queue = ctx.Queue()
        for i in range(workers):
            queue.put(self.devices[i % len(self.devices)])
        return ProcessPoolExecutor(workers, mp_context=ctx, initializer=_bind, initargs=(queue, workers))

    @property
    def shares_devices(self) -> bool:
        """Whether ``map`` puts several workers on one device (then a worker may find it full)."""
        return not self.inline and max(self.jobs, len(self.devices)) > len(self.devices)

    def _run(
        self,
        pool: Executor | _Isolated | None,
        fn: Callable[..., R],
        items: list[tuple],
        on_done: Callable[[int], None] | None,
        limit: Limit | None = None,
    ) -> tuple[list[R | Failed], bool]:
        """(results in the items' order, a Failed where fn raised; whether any did). An interrupt carries the
        results of the items done so far, {index: result}, as its ``done``; so does ``OutOfTime``, after which
        the workers are gone (the next call starts fresh ones)."""
        try:
            if isinstance(pool, _Isolated):
                return pool.run(fn, items, on_done, limit)
            results: list[Any] = [None] * len(items)
            try:
                return self._run_here_or_pooled(pool, fn, items, on_done, results, limit)
            except KeyboardInterrupt as exc:
                exc.done = {i: r for i, r in enumerate(results) if r is not None}  # type: ignore[attr-defined]
                raise
        except OutOfTime:
            self.close(kill=True)
            raise

    def _run_here_or_pooled(
        self,
        pool: Executor | None,
        fn: Callable[..., R],
        items: list[tuple],
        on_done: Callable[[int], None] | None,
        results: list[Any],
        limit: Limit | None = None,
    ) -> tuple[list[R | Failed], bool]:
        failed = False
        if pool is None:  # on this process an item cannot be stopped: the time limit stops the next one
            for i, item in enumerate(items):
                if _cut(limit, i):
                    raise OutOfTime({j: r for j, r in enumerate(results) if r is not None})
                try:
                    results[i] = fn(*item)
                except Exception as exc:  # noqa: BLE001 - reported per item, the run goes on
                    results[i], failed = _failure(exc), True
                if on_done:
                    on_done(i)
                if _INTERRUPTS:  # a Ctrl-C lost while the item ran
                    raise KeyboardInterrupt
            return results, failed
        futures = {pool.submit(fn, *item): i for i, item in enumerate(items)}
        pending, finished = set(futures), 0
        while pending:
            if _cut(limit, finished):
                raise OutOfTime({j: r for j, r in enumerate(results) if r is not None})
            ready, pending = wait_futures(pending, timeout=_timeout(limit), return_when=FIRST_COMPLETED)
            for future in ready:
                i = futures[future]
                try:
                    results[i] = future.result()
                except Exception as exc:  # noqa: BLE001 - a dead worker (BrokenProcessPool) lands here too
                    results[i], failed = _failure(exc), True
                finished += 1
                if on_done:
                    on_done(i)
        return results, failed

    def map(
        self,
        fn: Callable[..., R],
        items: Iterable[tuple],
        on_done: Callable[[int], None] | None = None,
        limit: Limit | None = None,
    ) -> list[R | Failed]:
        """fn(*item) for every item, on the shared workers; results in the items' order. ``limit``: (seconds left,
        items to finish first), past which the items under way are stopped (``OutOfTime``)."""
        if not self.inline and self._shared is None:
            self._shared = self._pool(max(self.jobs, len(self.devices)))
        results, failed = self._run(self._shared, fn, list(items), on_done, limit)
        if failed and not self.isolate:  # isolated workers were replaced one by one
            self._renew()
        return results

    def alone(
        self,
        fn: Callable[..., R],
        items: Iterable[tuple],
        on_done: Callable[[int], None] | None = None,
        limit: Limit | None = None,
    ) -> list[R | Failed]:
        """fn(*item) for every item, one worker per device, nothing else running on it (``limit``: as ``map``)."""
        if not self.inline and self._alone is None:
            self._alone = self._pool(len(self.devices))
        results, failed = self._run(self._alone, fn, list(items), on_done, limit)
        if failed and not self.isolate:
            self._renew()
        return results

    def _renew(self) -> None:
        """After a failure, fresh workers: a worker whose CUDA context a crash broke must not serve on."""
        self.close()

    def close(self, kill: bool = False) -> None:
        """End the workers after their items, or with ``kill`` at once (see ``_Isolated.close``)."""
        for pool in (self._shared, self._alone):
            if isinstance(pool, _Isolated):
                pool.close(kill)
            elif pool is not None:
                if kill:  # the executor would wait for the items under way: its processes end first
                    _kill_pool(pool)
                pool.shutdown(cancel_futures=True)
        self._shared = self._alone = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.close(kill=kind is not None and issubclass(kind, KeyboardInterrupt))


def _kill_pool(pool: Executor) -> None:
    """Kill a process pool's own workers at once, and no other child of this process (a caller's own helper
    processes, another pool's). Python 3.14's ``kill_workers`` does this; before it, the executor's process table is
    the only record of which processes are its own (``_processes``, a dict since 3.2)."""
    if hasattr(pool, "kill_workers"):
        pool.kill_workers()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.kill()


def default_jobs(devices: list[int | None]) -> int:
    """Correctness workers: up to 15 per GPU, bounded by the CPU cores (two left for the parent and the
    timers); 1 on the interpreter. Their work is mostly Python between small kernels, so a GPU serves
    many of them."""
    if devices == [None] or not devices:
        return 1
    return max(1, min(15 * len(devices), usable_cores() - 2))
