"""Round 24 (docstring completed below)."""

from __future__ import annotations

import os
import signal
from types import SimpleNamespace

import pytest

from conformance import workers


# ------------------------------------------------------------------------------ conformance/workers.py
def _raise_two_lines() -> None:
    raise ValueError("the first line\nthe second line")


def _pid_or_raise_or_die(what: str) -> int:
    if what == "raise":
        raise RuntimeError("this item failed")
    if what == "die":
        os.kill(os.getpid(), signal.SIGSEGV)
    return os.getpid()


def _device_seen() -> str | None:
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def test_a_failed_items_message_is_its_exceptions_first_line():
    """Planted w01: _failure kept the exception's last line: a report named the item's failure by a line of its
    detail ("the second line"), not by what went wrong."""
    with workers.Workers(1, [None]) as pool:
        (failed,) = pool.map(_raise_two_lines, [()])
    assert failed == workers.Failed("ValueError: the first line")


def test_exit_statuses_in_words():
    """Planted w02, w03: a worker that exited with status 0 read as 'killed by signal 0' (``<= 0``); a signal
    number Python does not name printed with its sign ('killed by signal -200')."""
    assert workers.exit_reason(0) == "exit status 0"
    assert workers.exit_reason(3) == "exit status 3"
    assert workers.exit_reason(-int(signal.SIGSEGV)) == "killed by SIGSEGV"
    unnamed = next(n for n in range(200, 256) if n not in {int(s) for s in signal.Signals})
    assert workers.exit_reason(-unnamed) == f"killed by signal {unnamed}"
    assert workers.exit_reason(None) == "no exit status"


def test_same_class_gpus_counts_gpu_0_and_every_one_like_it(monkeypatch):
    """Planted w04: the indices were taken from 1: GPU 0 itself left out of the class's workers (a one-GPU machine
    then had none). Three GPUs, the middle one of another kind; torch's CUDA calls replaced."""
    import torch

    kinds = {0: ("NVIDIA H200", 9, 0, 132), 1: ("NVIDIA A100", 8, 0, 108), 2: ("NVIDIA H200", 9, 0, 132)}

    def properties(i: int) -> SimpleNamespace:
        name, major, minor, sms = kinds[i]
        return SimpleNamespace(name=name, major=major, minor=minor, multi_processor_count=sms)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    monkeypatch.setattr(torch.cuda, "get_device_properties", properties)
    assert workers.same_class_gpus() == [0, 2]
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert workers.same_class_gpus() == [0]


def test_an_isolated_worker_whose_item_raised_is_replaced_and_a_dead_ones_status_kept():
    """Planted w08: a worker whose item raised served on (its broken CUDA context with it): the item after it ran
    in the same process. Planted w19: a crashed item's exit status recorded as 0, not the signal that killed it."""
    with workers.Workers(1, [None], isolate=True) as pool:
        first, failed, after, died = pool.map(_pid_or_raise_or_die, [("pid",), ("raise",), ("pid",), ("die",)])
    assert isinstance(failed, workers.Failed) and not isinstance(failed, workers.Crashed)
    assert failed.message == "RuntimeError: this item failed"
    assert first != after, "the worker whose item raised took the next item"
    assert isinstance(died, workers.Crashed) and died.exitcode == -signal.SIGSEGV


def test_isolated_workers_are_spread_over_the_devices(monkeypatch):
    """Planted w07: every isolated worker took the first device: with two GPUs, both workers on GPU 0."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with workers.Workers(2, [3, 4], isolate=True) as pool:
        assert pool.map(_device_seen, [(), ()]) == ["3", "4"]


def test_only_more_workers_than_devices_share_one():
    """Planted w12: ``>=``: one worker per device counted as sharing, so certify ran every entry that ran out of
    memory a second time alone, though it had been alone already."""
    assert not workers.Workers(2, [0, 1]).shares_devices
    assert not workers.Workers(1, [0, 1]).shares_devices
    assert workers.Workers(3, [0, 1]).shares_devices
    assert not workers.Workers(1, [None]).shares_devices  # inline


def test_shared_workers_cover_every_device_and_the_timers_are_one_per_device(monkeypatch):
    """Planted w13: map's pool sized by --jobs alone: one job on two GPUs left GPU 1 idle. Planted w14: the timers'
    pool sized by --jobs: several timers on one device, timing each other's kernels. (The pools are recorded, the
    work done here.)"""
    sizes = []

    def pool(self, size):
        sizes.append(size)
        return None  # _run then runs the items in this process

    monkeypatch.setattr(workers.Workers, "_pool", pool)
    with workers.Workers(1, [0, 1]) as one_job:
        assert one_job.map(int, [("7",)]) == [7]
    with workers.Workers(8, [0, 1]) as many:
        assert many.alone(int, [("8",)]) == [8]
    assert sizes == [2, 2]


def test_default_jobs_are_15_per_gpu_within_the_cores_less_two(monkeypatch):
    """Planted w17: 15 workers whatever the number of GPUs; w18: the cores less one (the docstring's two: the parent
    and the timers)."""
    monkeypatch.setattr(os, "cpu_count", lambda: 128)
    assert workers.default_jobs([0, 1, 2, 3]) == 60
    assert workers.default_jobs([0]) == 15
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert workers.default_jobs([0, 1]) == 6
    assert workers.default_jobs([None]) == 1
