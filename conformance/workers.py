"""Conformance work spread over processes and devices: many workers for correctness, one per device for timing.

Screening candidates and Hypothesis proofs only ask whether a kernel computes the right numbers, so
they may share a device: ``Workers.map`` runs them on ``jobs`` processes spread round-robin over the
devices (each process sees one GPU through ``CUDA_VISIBLE_DEVICES``), which also compiles the
candidates on many CPU cores at once. Timing must have its device to itself: ``Workers.alone`` runs
on one process per device, and the caller never overlaps it with ``map`` (the phases alternate).
Triton's on-disk cache carries the compiled kernels from the correctness workers to the timers.

With ``jobs <= 1`` and one device everything runs in this process, in order (the interpreter class,
tests, a laptop).
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Callable, Iterable, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Failed:
    """The result of an item whose function raised (or whose worker died): the others go on."""

    message: str


def _failure(exc: BaseException) -> Failed:
    return Failed(f"{type(exc).__name__}: {exc}".splitlines()[0][:500])


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


def _bind(devices: Any) -> None:
    """Worker initializer: take one device from the queue and see only it. Device numbers count the
    GPUs this process was given, so they map through an inherited CUDA_VISIBLE_DEVICES."""
    device = devices.get()
    if device is not None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        names = [v.strip() for v in visible.split(",")] if visible else None
        os.environ["CUDA_VISIBLE_DEVICES"] = names[device] if names else str(device)


class Workers:
    """Process pools over ``devices`` (GPU indices, or [None] for the CPU / interpreter)."""

    def __init__(self, jobs: int, devices: list[int | None]):
        self.devices = devices or [None]
        self.jobs = max(1, jobs)
        self.inline = self.jobs <= 1 and len(self.devices) == 1
        self._shared: Executor | None = None
        self._alone: Executor | None = None

    def _pool(self, workers: int) -> Executor:
        ctx = multiprocessing.get_context("spawn")  # CUDA cannot be forked
        queue = ctx.Queue()
        for i in range(workers):
            queue.put(self.devices[i % len(self.devices)])
        return ProcessPoolExecutor(workers, mp_context=ctx, initializer=_bind, initargs=(queue,))

    @property
    def shares_devices(self) -> bool:
        """Whether ``map`` puts several workers on one device (then a worker may find it full)."""
        return not self.inline and max(self.jobs, len(self.devices)) > len(self.devices)

    def _run(self, pool: Executor | None, fn: Callable[..., R], items: list[tuple],
             on_done: Callable[[int], None] | None) -> tuple[list[R | Failed], bool]:
        """(results in the items' order, a Failed where fn raised; whether any did)."""
        results: list[Any] = [None] * len(items)
        failed = False
        if pool is None:
            for i, item in enumerate(items):
                try:
                    results[i] = fn(*item)
                except Exception as exc:  # noqa: BLE001 - reported per item, the run goes on
                    results[i], failed = _failure(exc), True
                if on_done:
                    on_done(i)
            return results, failed
        futures = {pool.submit(fn, *item): i for i, item in enumerate(items)}
        for future in as_completed(futures):
            i = futures[future]
            try:
                results[i] = future.result()
            except Exception as exc:  # noqa: BLE001 - a dead worker (BrokenProcessPool) lands here too
                results[i], failed = _failure(exc), True
            if on_done:
                on_done(i)
        return results, failed

    def map(self, fn: Callable[..., R], items: Iterable[tuple], on_done: Callable[[int], None] | None = None
            ) -> list[R | Failed]:
        """fn(*item) for every item, on the shared workers; results in the items' order."""
        if not self.inline and self._shared is None:
            self._shared = self._pool(max(self.jobs, len(self.devices)))
        results, failed = self._run(self._shared, fn, list(items), on_done)
        if failed:
            self._renew()
        return results

    def alone(self, fn: Callable[..., R], items: Iterable[tuple], on_done: Callable[[int], None] | None = None
              ) -> list[R | Failed]:
        """fn(*item) for every item, one worker per device, nothing else running on it."""
        if not self.inline and self._alone is None:
            self._alone = self._pool(len(self.devices))
        results, failed = self._run(self._alone, fn, list(items), on_done)
        if failed:
            self._renew()
        return results

    def _renew(self) -> None:
        """After a failure, fresh workers: a worker whose CUDA context a crash broke must not serve on."""
        self.close()

    def close(self) -> None:
        for pool in (self._shared, self._alone):
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        self._shared = self._alone = None

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def default_jobs(devices: list[int | None]) -> int:
    """Correctness workers: up to 15 per GPU, bounded by the CPU cores (two left for the parent and the
    timers); 1 on the interpreter. Their work is mostly Python between small kernels, so a GPU serves
    many of them."""
    if devices == [None] or not devices:
        return 1
    return max(1, min(15 * len(devices), (os.cpu_count() or 2) - 2))
