"""``python -m conformance`` ended by a job's time limit (SIGTERM), a closed terminal (SIGHUP) or Ctrl-C.

Found on a device call (2026-12-05, thirty-fourth session): `timeout` ended a gpu-profile check of the H200 class's
rotary entries (up to 109 s each) before its own ``--max-minutes`` could, and SIGTERM's default action killed the
command on the spot: no report of the entries already checked (``--json`` wrote nothing, so ``--resume`` had nothing
to carry over), and its isolated workers, orphaned, went on with their items on the GPU for nobody. Now:

- SIGTERM and SIGHUP end every conformance command as Ctrl-C does: one line, ``conformance: terminated (SIGTERM)``,
  exit 128 + N, its workers killed;
- a check so ended prints and writes (``--json``) the report of the entries checked so far, ``stopped``
  "interrupted", and the command that resumes it; ``--resume`` carries its passed entries over;
- a worker whose parent dies without a word (SIGKILL) is killed with it (Linux's parent-death signal).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, exit_status

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for a process's children")


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended: only its exit status is left to collect


def _wait_gone(pids: list[int], seconds: float = 20.0) -> list[int]:
    end = time.monotonic() + seconds
    while time.monotonic() < end and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def _check(tmp_path: Path, *extra: str, examples: int = 2) -> subprocess.Popen:
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(REPO), NEUROBRIX_HOME=str(tmp_path / "home"))
    command = [sys.executable, "-m", "conformance", "check", "--class", "interpreter", "--kernel", "silu_mul"]
    command += ["rms_norm", "--dtype", "fp32", "--examples", str(examples), "--no-shrink"]
    command += ["--json", str(tmp_path / "r.json")]
    return subprocess.Popen(
        [*command, *extra],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the signal reaches the command alone, as `kill PID` or a container's stop sends it
        preexec_fn=_as_from_a_terminal,
    )


def _as_from_a_terminal() -> None:
    """The signals' default dispositions, as a terminal's command starts with them: a test run started as a
    background job (`&`) or under `nohup` passes SIGINT or SIGHUP on ignored, which the command leaves so."""
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)


def _after_first_entry(process: subprocess.Popen) -> list[str]:
    """stderr's lines up to the first entry checked (one line per entry where stderr is no terminal)."""
    assert process.stderr is not None
    lines = []
    for line in process.stderr:
        lines.append(line)
        if line.lstrip().startswith("1/"):
            return lines
    pytest.fail("the check ended before its first entry: " + "".join(lines))


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_check_ended_by_a_signal_reports_what_it_checked_and_resumes_from_it(tmp_path: Path, signame: str) -> None:
    process = _check(tmp_path)
    try:
        _after_first_entry(process)
        workers = _children(process.pid)
        assert workers, "the check runs its entries on a worker process"
        process.send_signal(getattr(signal, signame))
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 128 + getattr(signal, signame), err
    assert err.splitlines()[-1] == f"conformance: terminated ({signame})", err
    assert "Traceback" not in err
    assert not _wait_gone(workers), "a worker outlived the command"
    assert "INCOMPLETE (no failure so far)" in out and "(interrupted)" in out, out
    assert f"report written to {tmp_path / 'r.json'}" in out
    assert "--resume" in out.splitlines()[-1], "the command that finishes it is named"
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stopped"] == "interrupted" and not report["complete"] and report["passed"]
    checked = [e for e in report["entries"] if e["passed"] and e["examples"] == 2]
    assert checked and report["left"] >= 1
    total = len(report["entries"]) + report["left"]
    if signame != "SIGTERM":
        return

    # resumed: its passed entries are carried over, only the rest is checked
    resumed = _check(tmp_path, "--resume", str(tmp_path / "r.json"), "--max-minutes", "0.01")
    out, err = resumed.communicate(timeout=300)
    again = json.loads((tmp_path / "r.json").read_text())
    assert again["resumed_from"]["carried"] == len(checked), out + err
    assert sum(e["carried"] for e in again["entries"]) == len(checked)
    assert len(again["entries"]) + again["left"] == total


def test_a_worker_dies_with_a_parent_killed_without_a_word(tmp_path: Path) -> None:
    process = _check(tmp_path, examples=2000)  # an entry of minutes: an orphaned worker would go on with it
    try:
        end = time.monotonic() + 60
        while not _children(process.pid) and time.monotonic() < end:
            time.sleep(0.1)
        workers = _children(process.pid)
        assert workers
        time.sleep(3)  # the worker started, its first entry under way
        process.kill()  # SIGKILL: no handler runs, nothing is closed
        process.wait(timeout=30)
    finally:
        process.kill()
    assert not _wait_gone(workers, seconds=3), "an orphaned worker went on with its item"


def test_a_signal_the_caller_ignores_stays_ignored(monkeypatch) -> None:
    """`nohup` ignores SIGHUP (the command outlives its terminal) and a shell's `&` job SIGINT: the commands took both
    over (a logout ended a nohup'd check or run, and its workers); one left to its default is still taken."""
    import conformance.__main__ as cli
    from conformance import workers
    from neurobrix import cli as engine_cli

    during = {}

    def command(args) -> int:
        during.update({s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)})
        return 0

    monkeypatch.setattr(cli, "cmd_track", command)
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        assert cli.main(["track", "--check"]) == 0
        assert during == {
            signal.SIGINT: signal.SIG_IGN,
            signal.SIGTERM: workers.interrupt,
            signal.SIGHUP: signal.SIG_IGN,
        }
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # given back

        workers._quiet_on_interrupts()  # a worker of such a command
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is workers._interrupted

        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        previous = engine_cli._catch_termination()  # `nohup neurobrix run ...`
        assert set(previous) == {signal.SIGTERM} and signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


def test_killing_a_pool_kills_its_own_workers_and_no_other_child() -> None:
    """``Workers.close(kill=True)`` on a process pool (an interrupted check with ``--jobs`` above 1, not isolated)
    killed every child of the calling process (``multiprocessing.active_children()``): a caller's own helper process,
    another pool's workers. It now kills the pool's own."""
    import multiprocessing

    from conformance.workers import Workers

    ctx = multiprocessing.get_context("spawn")
    bystander = ctx.Process(target=time.sleep, args=(60,), daemon=True)
    bystander.start()
    pool = Workers(jobs=2, devices=[None])
    other = Workers(jobs=2, devices=[None])
    try:
        assert len(set(pool.map(os.getpid, [()] * 4))) >= 1
        other.map(os.getpid, [()] * 2)
        own = list(pool._shared._processes.values())  # type: ignore[union-attr]
        theirs = list(other._shared._processes.values())  # type: ignore[union-attr]
        assert own and theirs
        pool.close(kill=True)
        for process in own:
            assert exit_status(process, 30) == -signal.SIGKILL
        assert bystander.is_alive() and all(p.is_alive() for p in theirs)
    finally:
        other.close(kill=True)
        bystander.kill()
        bystander.join()


def _nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@pytest.mark.parametrize("mode", ["isolated", "pooled", "here"])
def test_a_time_limit_stops_the_items_under_way(mode: str) -> None:
    """`check --max-minutes` stopped starting waves of entries, but a wave under way ran to its end: a gpu-profile
    rotary entry of minutes overran a job's limit, and the job's SIGTERM ended the check instead. Past the limit the
    items under way now stop (their workers killed), the finished ones come back with ``OutOfTime``, and with
    ``at_least`` 1 one item finishes first; on one process the item under way finishes and no other starts."""
    from conformance.workers import OutOfTime, Workers

    naps = [0.3, 60.0, 60.0, 60.0] if mode != "here" else [0.3, 1.0, 60.0]
    pool = Workers(jobs=1 if mode != "pooled" else 2, devices=[None], isolate=mode == "isolated")
    try:
        # the workers spawned before the clock starts (they stay for the next call): a spawn imports torch, which took
        # 2.8 s beside the interpreter's checks on a busy 2-core machine and left the first nap unfinished at 3 s
        assert pool.map(_nap, [(0.0,)] * 2) == [0.0, 0.0]
        started = time.monotonic()
        deadline = started + (1.0 if mode == "here" else 3.0)
        with pytest.raises(OutOfTime) as got:
            pool.map(_nap, [(n,) for n in naps], limit=(lambda: deadline - time.monotonic(), 0))
        took = time.monotonic() - started
        want = {0: 0.3, 1: 1.0} if mode == "here" else {0: 0.3}
        assert got.value.done == want and took < 30, (got.value.done, took)
        assert pool._shared is None  # the workers went: the next call starts fresh ones

        # a limit already past: one item finishes first, then the rest stop
        started = time.monotonic()
        with pytest.raises(OutOfTime) as got:
            pool.map(_nap, [(0.5,), (60.0,), (60.0,)], limit=(lambda: -1.0, 1))
        assert got.value.done == {0: 0.5} and time.monotonic() - started < 30
        assert pool.map(_nap, [(0.0,)] * 2) == [0.0, 0.0]  # no limit: every item
    finally:
        pool.close(kill=True)


def test_a_check_past_its_time_limit_stops_the_wave_under_way(tmp_path: Path) -> None:
    """`check --max-minutes` with the time already spent checks one entry, however long it takes, and stops: the
    rest of the first wave (two entries on one worker) was checked whole before."""
    process = _check(tmp_path, "--max-minutes", "1e-9", examples=20)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 3, out + err
    report = json.loads((tmp_path / "r.json").read_text())
    assert len(report["entries"]) == 1 and report["entries"][0]["passed"], report["entries"]
    assert report["left"] >= 1 and report["stopped"] == "time limit"
    assert "(time limit)" in out and "--resume" in out.splitlines()[-1], out
