"""Planted-bug round 36: tests for the plants of tests/planted36_plants.py that the existing tests let through, in code
merged in the thirty-fourth session: strict round 41 (``tokenizer._tokenizer_class``), walk-through 34 (``cli.real``,
the singulars beside ``errors.counted``, `remove`'s measured bytes and damage), walk-through 34b (the conformance
command's signal handling, check's partial report on an interrupt, ``workers.ended_by_interrupt``,
``_die_with_parent``, ``Workers.__exit__``'s kill) and kernel-mutant round 10's bf16 probe at the smallest shape.
Each test fails under the plant(s) its docstring names (checked: ``python tests/planted36_driver.py COPY OUT --with
tests/test_planted36.py ID``, each plant against this file alone) and passes on the clean code.

Outcomes (54 plants): 26 caught by the tests before the round (config.json's false let through, tokenizer_config.json's
false, [] or {} let through, "" refused as a class, SafetensorError unwrapped; do_sample
read ``is True``, "false" read as false, num_return_sequences refused beside a true do_sample, the sampling note
``is True``; "+0.5" or lower-case exponents only, infinity or nan/NaN let through, conformance's float options through
float(); ``counted`` singular for 0, "1-20 token", "passs", --seed's range; SIGHUP said "interrupted", exit 130 for
every signal, SIGHUP not handled, PR_GET_PDEATHSIG, an interrupt's ``done`` holding the items not done; the bf16
probe in fp16 inputs, its failure left passed, fp32 entries probed); 25 survived and are caught here: s01 s03, t05,
u05 u12 u13 u14 u15 u16 u17 u18 u19 u21, i03 i05 i07 i08 i09 i11 i14 i15 i16 i17 i18, k01; 3 equivalent (s08,
u06, k02: docs/planted-bugs.md says why).
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
from conftest import REPO

# --- strict round 41: tokenizer_class ---------------------------------------------------------------------------------


def _folder(tmp_path: Path, **config) -> Path:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", **config}))
    return tmp_path


def test_an_empty_tokenizer_config_class_falls_to_config_jsons(tmp_path):
    """s01 (``declared is None`` for ``not declared``): transformers 5's AutoTokenizer takes ``tokenizer_config_class
    or getattr(config, "tokenizer_class")``, so tokenizer_config.json's "" gives way to config.json's LlamaTokenizer,
    which rebuilds the tokenizer; read as "no class" it was built from tokenizer.json as it is."""
    from neurobrix.tokenizer import _tokenizer_class

    folder = _folder(tmp_path, tokenizer_class="LlamaTokenizer")
    assert _tokenizer_class(folder, {"tokenizer_class": ""}, '{"type": "Metaspace"}') == "LlamaTokenizer"
    assert _tokenizer_class(folder, {"tokenizer_class": None}, '{"type": "Metaspace"}') == "LlamaTokenizer"


def test_config_jsons_class_that_is_no_text_is_refused_naming_config_json(tmp_path):
    """s03 (the file not renamed with the value): the refusal named tokenizer_config.json for config.json's value."""
    from neurobrix.tokenizer import TokenizerError, _tokenizer_class

    folder = _folder(tmp_path, tokenizer_class=5)
    with pytest.raises(TokenizerError) as info:
        _tokenizer_class(folder, {}, "{}")
    assert str(info.value).startswith(f"{folder / 'config.json'}: tokenizer_class 5 is not a class name"), info.value


# --- text round 35: num_return_sequences ---------------------------------------------------------------------------


@pytest.mark.parametrize("do_sample", [None, False, 0])
def test_one_return_sequence_beside_greedy_decoding_is_no_refusal(do_sample):
    """t05 (``sequences >= 1``): generation_config.json's num_return_sequences 1 beside greedy decoding was refused
    as "greedy decoding makes one sequence"; transformers' GenerationConfig takes it (and refuses 2, as run does)."""
    transformers = pytest.importorskip("transformers")
    from neurobrix.tokenizer import _return_sequences

    for sequences in (1, 2):
        settings = {"num_return_sequences": sequences, **({} if do_sample is None else {"do_sample": do_sample})}
        try:
            transformers.GenerationConfig(**settings).validate(strict=True)
            theirs = None
        except ValueError:
            theirs = "refused"
        assert (_return_sequences(settings) is not None) == (theirs is not None) == (sequences > 1), settings


# --- walk-through 34: float options, a count of one, remove -----------------------------------------------------------


def test_max_minutes_out_of_range_keeps_its_hint(capsys):
    """u05 (``hint`` dropped from real()'s range refusal): `--max-minutes inf` said its range without "leave the
    option out for no time limit", which `--max-minutes 0` says."""
    from conformance.__main__ import build_parser

    for text in ("inf", "0"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["check", "--class", "c", "--max-minutes", text])
        line = capsys.readouterr().err.strip().splitlines()[-1]
        assert line.endswith(f"got {text!r} (leave the option out for no time limit)") or line.endswith(
            f"got {text} (leave the option out for no time limit)"
        ), line


def test_the_verbs_beside_a_count_agree_with_it():
    """u13 (is/are swapped) and u14 (was/were by the failures' count): "1 example per entry is fewer", "2 examples
    per entry are"; "(1 entry was written" whatever the failures, "(0 entries were written"."""
    from types import SimpleNamespace

    from conformance import reproof
    from conformance.certify import CertifyFailed

    args = SimpleNamespace(kernel=None, dtype=None, variant=None, where=None)
    one = SimpleNamespace(complete=True, left=0, examples_per_entry=1)
    assert "1 example per entry is fewer than the" in reproof._not_whole(one, args)
    two = SimpleNamespace(complete=True, left=0, examples_per_entry=2)
    assert "2 examples per entry are fewer than the" in reproof._not_whole(two, args)
    assert "(1 entry was written into" in str(CertifyFailed(1, ["a", "b"]))
    assert "(2 entries were written into" in str(CertifyFailed(2, ["a"]))
    assert "(0 entries were written into" in str(CertifyFailed(0, ["a"]))


@pytest.mark.parametrize("missing", [1, 2])
def test_one_missing_shard_is_missing(missing, tmp_path):
    """u12 (the verb by the shards named, not the missing): "1 of the 2 shards named ... is missing"."""
    from neurobrix.checkpoint import INDEX, MissingShardsError, weight_files

    shards = ["a.safetensors", "b.safetensors"]
    (tmp_path / INDEX).write_text(json.dumps({"metadata": {}, "weight_map": {"x": shards[0], "y": shards[1]}}))
    for name in shards[missing:]:
        (tmp_path / name).write_bytes(b"")
    with pytest.raises(MissingShardsError) as info:
        weight_files(tmp_path)
    said = f"{missing} of the 2 shards named in {INDEX} {'is' if missing == 1 else 'are'} missing: "
    assert said in str(info.value), info.value


def test_a_max_length_of_one_token_is_said_in_the_singular(tmp_path):
    """u16 (the noun by the prompt's length): "the 3-token prompt ... max_length of 1 token" and "of 2 tokens"
    beside a 1-token prompt."""
    from types import SimpleNamespace

    from neurobrix.tokenizer import Tokenizer, TokenizerError

    for prompt_len, value, noun in ((3, 1, "token"), (1, 1, "token"), (2, 2, "tokens")):
        tok = SimpleNamespace(generation={"max_length": value}, generation_file="generation_config.json")
        tok.generation_path = tmp_path / tok.generation_file
        with pytest.raises(TokenizerError) as info:
            Tokenizer.max_new_tokens(tok, prompt_len)
        assert f"max_length of {value} {noun} of" in str(info.value), info.value


def test_run_says_the_longest_prompt_that_fits(tmp_path):
    """u15 (``span`` for ``span - 1``): a prompt that fills the context is refused with the longest that leaves one
    new token: "at most 7 tokens" for a context of 8, "1 token" for a context of 2."""
    from neurobrix.errors import UsageError
    from neurobrix.run import new_token_limit

    for span in (8, 2):
        cfg = _cfg(span)
        with pytest.raises(UsageError) as info:
            new_token_limit(cfg, None, span, None, lambda _: None)
        longest = span - 1
        assert str(info.value).endswith(f"at most {longest} token{'s' if longest != 1 else ''}"), info.value


def _cfg(span: int):
    from types import SimpleNamespace

    return SimpleNamespace(max_positions=span, sliding_window=None)


def _stored(tmp_path, monkeypatch):
    from store_fixtures import make_checkpoint

    from neurobrix import store

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    return store.import_model(str(make_checkpoint(tmp_path / "m", use_transformers=False)), progress=False)


def test_remove_counts_only_the_bytes_gone_from_disk(tmp_path, monkeypatch, capsys):
    """u17 (``held`` for ``held - _bytes_under(trash)``) and u21 (a measured 0 read as none): where the deletion
    left every byte behind (rmtree ignores its errors), "0 B freed", not the model's size."""
    from neurobrix import store
    from neurobrix.cli import main

    model = _stored(tmp_path, monkeypatch)
    monkeypatch.setattr(store.shutil, "rmtree", lambda *a, **k: None)
    assert main(["remove", "m"]) == 0
    assert capsys.readouterr().out == f"removed m (0 B freed from {model.path.parent})\n"


def test_remove_counts_a_link_not_what_it_points_at(tmp_path, monkeypatch, capsys):
    """u18 (``os.stat`` for ``os.lstat``): a link in the model's folder frees the link, not its target's bytes."""
    from neurobrix.cli import main
    from neurobrix.cli_store import format_size

    model = _stored(tmp_path, monkeypatch)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 5_000_000)
    (model.path / "extra").symlink_to(big)
    held = sum(os.lstat(p).st_size for p in model.path.rglob("*") if not p.is_dir() or p.is_symlink())
    assert main(["remove", "m"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"removed m ({format_size(held)} freed from "), out
    assert big.stat().st_size == 5_000_000


def test_remove_names_a_file_grown_past_its_manifest_size(tmp_path, monkeypatch, capsys):
    """u19 (``found < size``): a file larger than the manifest records is damage as a smaller one is."""
    from neurobrix.cli import main

    model = _stored(tmp_path, monkeypatch)
    size = (model.path / "tokenizer.json").stat().st_size
    with (model.path / "tokenizer.json").open("ab") as f:
        f.write(b" ")
    assert main(["remove", "m"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith(f"; it was damaged: tokenizer.json has {size + 1} bytes, expected {size}"), out


# --- walk-through 34b: signals, partial reports, workers --------------------------------------------------------------


def test_the_conformance_command_restores_every_handler_it_set():
    """i03 (only SIGINT's handler restored): a Python caller's SIGTERM and SIGHUP handlers were left as the
    command's interrupt after it returned."""
    from conformance.__main__ import main

    def mine(*_):
        pass

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, mine)
        signal.signal(signal.SIGHUP, mine)
        main(["check", "--class", "no-such-class", "--kernel", "silu_mul"])
        assert signal.getsignal(signal.SIGTERM) is mine and signal.getsignal(signal.SIGHUP) is mine
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


def test_ended_by_interrupt_knows_the_quiet_exit_and_the_signals_own():
    """i05 (the signal's default death, -N, left out): a worker a SIGTERM reached before its handler was set dies
    with -15, and its entry was reported crashed in the partial report."""
    from conformance import workers

    for n in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        assert workers.ended_by_interrupt(128 + n) and workers.ended_by_interrupt(-n)
    for other in (None, 0, 1, -signal.SIGKILL, -signal.SIGSEGV, 128 + signal.SIGKILL):
        assert not workers.ended_by_interrupt(other)


def test_a_worker_started_after_its_parent_died_ends(monkeypatch):
    """i07 (no exit where the parent is already gone): the parent-death signal is set for the parent of the moment,
    so a worker whose parent died before the call has nobody left to serve and must end (137) at once."""
    from conformance import workers

    calls = []

    class Libc:
        def prctl(self, *args):
            calls.append(args)
            return 0

    def exit_(code):
        raise SystemExit(code)

    monkeypatch.setattr(workers.ctypes, "CDLL", lambda *a, **k: Libc())
    monkeypatch.setattr(workers.os, "_exit", exit_)
    monkeypatch.setattr(
        workers.multiprocessing, "parent_process", lambda: type("P", (), {"pid": os.getppid() + 100000})()
    )
    with pytest.raises(SystemExit) as info:
        workers._die_with_parent()
    assert info.value.code == 128 + signal.SIGKILL and calls == [(1, signal.SIGKILL)]
    monkeypatch.setattr(workers.multiprocessing, "parent_process", lambda: type("P", (), {"pid": os.getppid()})())
    workers._die_with_parent()  # its parent alive: it serves


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
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_pooled_worker_dies_with_a_parent_killed_without_a_word():
    """i08 (``_die_with_parent`` left out of the pooled workers' initializer): a pool's workers (several jobs, not
    isolated: certify's and mutants') went on with their items after their parent's SIGKILL."""
    script = "import time\nfrom conformance import workers\nworkers.Workers(2, [None]).map(time.sleep, [(60,), (60,)])"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    process = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, env=env, start_new_session=True)
    try:
        end = time.monotonic() + 30
        while len(_children(process.pid)) < 2 and time.monotonic() < end:
            time.sleep(0.1)
        time.sleep(2)  # the workers' initializer run, their items under way
        pool = _children(process.pid)
        assert pool
        process.kill()
        process.wait(timeout=30)
    finally:
        process.kill()
    end = time.monotonic() + 5
    while time.monotonic() < end and any(_alive(p) for p in pool):
        time.sleep(0.1)
    left = [p for p in pool if _alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, "a pooled worker outlived its killed parent"


def test_an_isolated_worker_ends_quietly_on_sigterm_and_sighup():
    """i09 (the isolated worker's handler for SIGINT only): SIGTERM or SIGHUP reaching an isolated worker ended it
    by the signal's default (-15, -1), not by its quiet exit 128 + N as Ctrl-C does."""
    from conformance import workers

    with workers.Workers(1, [None], isolate=True) as pool:
        results = pool.map(signal.raise_signal, [(signal.SIGTERM,), (signal.SIGHUP,)])
    assert [getattr(r, "exitcode", None) for r in results] == [128 + signal.SIGTERM, 128 + signal.SIGHUP], results


def test_an_interrupted_map_kills_its_isolated_worker_at_once():
    """i11 (``__exit__`` closing without ``kill``): an interrupt waited up to 10 s for a worker asked to stop after
    an item that nobody would read, then killed it."""
    from conformance import workers

    def interrupt(*_):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    start = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            with workers.Workers(1, [None], isolate=True) as pool:
                signal.setitimer(signal.ITIMER_REAL, 2.0)
                pool.map(time.sleep, [(60,)])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - start < 8


class _Interrupting:
    """conformance.workers.Workers in check_class: each map's results from ``waves`` (a list of results, or a dict
    {index: result} raised with a KeyboardInterrupt as its ``done``)."""

    waves: list = []

    def __init__(self, *args, **kwargs):
        self.shares_devices = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def map(self, fn, items, on_done=None, limit=None):
        wave = type(self).waves.pop(0)
        time.sleep(0.05)
        if isinstance(wave, dict):
            exc = KeyboardInterrupt()
            exc.done = {i: (r if r is not None else _passed(items[i])) for i, r in wave.items()}
            raise exc
        return [_passed(item) for item in items]


def _passed(item):
    from conformance.check import EntryResult

    kernel, entry, dtype = item[:3]
    return EntryResult(kernel, dtype, entry.domain.describe(), dict(entry.config), examples=item[3])


def _check(monkeypatch, waves, resume=None):
    from conformance import check, workers

    monkeypatch.setattr(workers, "Workers", _Interrupting)
    _Interrupting.waves = list(waves)
    with pytest.raises(KeyboardInterrupt) as info:
        check.check_class("interpreter", ["silu_mul", "rms_norm", "rotary"], None, 2, "ci", jobs=1, resume=resume)
    return info.value.report


def test_a_real_crash_in_the_interrupted_wave_is_reported(monkeypatch):
    """i14 (every crashed worker taken for the interrupt's): an entry whose worker crashed on its own (a segfault,
    -11) before the interrupt is a CRASHED entry of the partial report; one the interrupting signal ended has none."""
    from conformance import workers

    crash = workers.Crashed("the worker process died (killed by signal SIGSEGV)", -signal.SIGSEGV)
    ended = workers.Crashed("the worker process died (exit status 143)", 128 + signal.SIGTERM)
    report = _check(monkeypatch, [{0: crash, 1: ended}])
    assert [r.crashed for r in report.results] == [True], report.results
    assert report.stopped == "interrupted" and not report.passed


def test_an_interrupted_resumed_check_counts_what_it_left(monkeypatch, tmp_path):
    """i15 (the carried-over entries subtracted from the work again) and i16 (the partial report's time unset):
    a resumed check interrupted before its first entry leaves exactly the entries it had to check, and says how long
    it ran."""
    first = _check(monkeypatch, [None, {}])
    assert len(first.results) == 2 and first.left >= 2 and first.seconds > 0
    total = len(first.results) + first.left
    (tmp_path / "r.json").write_text(json.dumps(first.as_json()))
    again = _check(monkeypatch, [{}], resume=tmp_path / "r.json")
    assert len(again.results) == 2 and again.left == total - 2, (len(again.results), again.left, total)


def test_a_complete_report_names_no_reason_for_stopping():
    """i17 (``stopped`` written whatever ``left``): a complete report's JSON said "stopped": "time limit"."""
    from conformance.check import Report

    assert Report("interpreter", "tables", "ci").as_json()["stopped"] is None
    assert Report("interpreter", "tables", "ci", left=1).as_json()["stopped"] == "time limit"


def test_a_check_interrupted_before_any_entry_writes_no_report(monkeypatch, tmp_path, capsys):
    """i18 (the partial report printed and written with no entry): an empty report written over --json's file would
    leave --resume nothing, where the last report had entries."""
    from conformance import workers
    from conformance.__main__ import main

    monkeypatch.setattr(workers, "Workers", _Interrupting)
    _Interrupting.waves = [{}]
    path = tmp_path / "r.json"
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = main(["check", "--class", "interpreter", "--kernel", "silu_mul", "--json", str(path)])
    finally:
        signal.signal(signal.SIGINT, previous)
    out = capsys.readouterr().out
    assert code == 128 + signal.SIGINT and not path.exists() and "report written" not in out, out


# --- kernel-mutant round 10: the bf16 probe's shape -------------------------------------------------------------------


def test_the_bf16_probe_rounds_up_to_the_dimensions_multiple(monkeypatch):
    """k01 (rounded down): rotary's D is a multiple of 2; an entry from D 3 was probed at D 2, outside its domain."""
    from conformance import check
    from neurobrix.schema import Domain, Setting

    probed = []
    monkeypatch.setattr(check, "bf16_outputs", lambda kernel, shape, *a: probed.append(shape) or "")
    setting = Setting(
        Domain(("fp16",), (("T", 1, None), ("H", 1, None), ("D", 3, None))), {"BLOCK_H": 16, "num_warps": 4}
    )
    result = check.check_entry("rotary", setting, "fp16", 1, "ci", shrink=False)
    assert result.passed, result.failure
    assert len(probed) == 1 and probed[0]["D"] == 4 and min(probed[0].values()) >= 1, probed
