"""Round 24 of planted bugs: the code earlier rounds reached least: conformance's worker processes (workers.py, no
round had planted there), the shipped settings' check (shipped.py), `rank`'s choice and record (rank.py), the
catalogue's walk (catalogue.py), candidate pruning, `sweep` and `track`, the gate's bounded YAML reader
(gate/yamlsafe.py), the API's type checks (neurobrix/errors.py) and the store's commands (cli_store.py). Small,
realistic bugs were planted one at a time by tests/planted24_driver.py (exact-string substitution in a copy of the
repository; the list: tests/planted24_plants.py) and run against the tests that exercise the function planted in.
Each test here failed with one surviving bug and passes without it (which bug: its docstring); the truth is the rule
the function's docstring states, PyYAML's own error mark, a brute force over buckets, or a count made by hand.

Planted (id: change -> outcome; "here": a test below kills it):
  workers.py    w05 a device's number not mapped through CUDA_VISIBLE_DEVICES, w06 device 0 never bound -> caught;
                w10 isolate ignored with one job (the SIGSEGV item run in the test's own process) -> caught (the
                process dies);  w01 a failure's last line kept, w02 exit status 0 read as signal 0, w03 an unnamed
                signal's number negative, w04 GPU 0 left out of its own class, w07 every isolated worker on device
                0, w08 a worker whose item raised serving on, w12 one worker per device counted as sharing, w13
                map's pool sized by --jobs alone, w14 the timers' pool by --jobs, w17 15 jobs whatever the GPUs,
                w18 the cores less one, w19 a crashed item's exit status 0 -> here;  w09, w11, w15, w16, w20 ->
                equivalent
  shipped.py    s01 launch options folded on a GPU, s02 every setting "launch-option variants", s04 --kernel
                ignored, s07 bf16 stood in on a GPU, s08 a class's own entries run again, s10 offered settings for
                a class without the kernel, s13 offered settings only when nothing is shipped -> caught;  s03 one
                entry a class, s05 --dtypes ignored, s06 a setting --dtypes leaves out reported as not run, s09 an
                offered setting a class ships checked twice, s11 offered settings in a dtype the class never runs,
                s12 launch variants counted after folding -> here
  rank.py       r01 alternatives slowest first, r04 the kept setting's timer time from the first alternative, r05
                old lines of the settings tried kept, r06 the entry's own setting dropped from the record, r07
                ranked only when every line is a step's, r08 the speed-up inverted, r11 the old worst ratio kept,
                r12 the slowest kept, r13 one alternative short -> caught;  r03 a setting exactly the margin faster
                kept, r09 the "fastest alternative" the entry's own time, r10 the old example count kept -> here;
                r02 any reason's timed line an alternative -> equivalent
  catalogue.py  c01 a range's last bucket dropped when it starts at hi, c04 the top prefill batch never walked,
                c05 capacities past the model's context -> caught (c01 by test_conformance's small coverage walk);
                c02 points past hi, c03 prompts past the cache-token cap -> here
  candidates.py k01 a candidate needing exactly the limit dropped, k02 the interpreter pruned by the H200's limit
                -> here
  sweep.py      sw1 unknown kernels let through -> caught;  sw2 the first candidate pruned at the domain's low
                corner -> equivalent
  track.py      t01 write failing where no TRACKED.yaml is, t02 the hand-edit line beside every real problem -> here
  yamlsafe.py   y03 mapping ends not lowering the depth -> caught (the real tracked list refused);  y01 exactly
                max_bytes refused, y02 exactly MAX_DEPTH refused, y04 the event cap 10 lenient, y05 an anchor
                without an alias passed, y07 lines counted from 0, y08 the context's line named -> here;  y06
                aliases unjudged -> equivalent
  errors.py     e03 True an integer, e04 None for a required value, e05 " or None" left out, e06 "" and 0 taken
                as no hook -> caught;  e01 the largest float's integer refused, e02 True a number, e07 1 and 0
                true or false -> here
  cli_store.py  cs01 sizes in kB past a MB (round 15's size test), cs02 list's REVISION the branch before the
                commit, cs03 DAMAGED left off, cs10 the damage's reason left off, cs11 1,000-1,023 B shown in B ->
                caught;  cs05 warmup run on a machine without a certified GPU -> caught (the interpreter's warmup
                outran the 400 s limit, where the test wants "nothing to compile");  cs04 remove's "freed from"
                the model's own folder, cs06 "compile its kernels for None" printed without a GPU, cs07 the
                warmup command's name unquoted, cs08 tables that cannot be read ending import in their error,
                cs09 import's line without the commit -> here

83 planted: 34 caught by the tests before this file, 41 survived and each now fails a test below, 8 equivalent;
no survivor left open.

Equivalent: w09: an isolated pool's ``failed`` only decides map's and alone's renewal, which isolated pools skip
(their workers are replaced one by one). w11: ``jobs`` is read only in ``jobs <= 1`` and ``max(jobs,
len(devices))`` with at least one device, where any jobs <= 1 acts as 1. w15: closing an isolated pool after a
failure only costs the next map its workers' start; the results are the same. w16: ``default_jobs([])`` is
max(1, min(0, ...)) = 1 either way. w20: an inline run has no pool to renew. r02: certify writes a timed detail
(``<us> us ...``) only for "slower"; every other reason's detail starts with a shape, an exception's name, "needs
>=" or "failed its proof" (rank writes "slower" too), so no other line matches the time. sw2: for every kernel and
dtype the first candidate that fits at the sweep domain's low corner fits at its top (the shared-memory estimates
depend on D alone, for attention_prefill, and its first candidate fits at D = 128; checked over the records' sweep
domains in fp16 and fp32): the same setting runs. y06: an alias refers to an anchor earlier in its document,
refused at the anchor; one with no anchor is refused by the loader ("found undefined alias"): refused either way.
"""

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
    monkeypatch.setattr(workers, "usable_cores", lambda: 128)
    assert workers.default_jobs([0, 1, 2, 3]) == 60
    assert workers.default_jobs([0]) == 15
    monkeypatch.setattr(workers, "usable_cores", lambda: 8)
    assert workers.default_jobs([0, 1]) == 6
    assert workers.default_jobs([None]) == 1


# ------------------------------------------------------------------------------ conformance/shipped.py
A = {"BLOCK_M": 8, "BLOCK_I": 32, "num_warps": 4}
B = {"BLOCK_M": 4, "BLOCK_I": 16, "num_warps": 4}


def _shipping(**classes):
    """A stand-in for loaded tables: class -> silu_mul entries [(dtypes, M range, config)]."""
    from neurobrix.schema import Domain, Setting, SettingsIndex

    def index(class_id, kernel):
        entries = [Setting(Domain(d, (("M", *m), ("I", 64, 64))), c) for d, m, c in classes[class_id]]
        return SettingsIndex.of(kernel, class_id, ("M", "I"), ("pow2", "exact"), {}, entries, f"{class_id}.json")

    return SimpleNamespace(classes=dict.fromkeys(classes), kernels=lambda class_id: ("silu_mul",), index=index)


def test_where_a_setting_is_shipped_counts_each_classs_entries():
    """Planted s03: every class counted as holding one entry of a setting: the report said "g (1 entry)" of a
    setting g ships in three entries."""
    from conformance import shipped

    loaded = _shipping(
        g=[(("bf16",), (1, 1), A), (("bf16",), (2, 2), A), (("fp16",), (3, 4), {**A, "num_warps": 8})],
        h=[(("fp16",), (1, 1), A), (("fp16",), (2, 2), B)],
    )
    (a, b) = sorted(shipped.shipped_settings(loaded, True), key=lambda s: s.config["BLOCK_M"], reverse=True)
    assert a.entries == {"g": 3, "h": 1} and b.entries == {"h": 1}
    assert a.where() == (
        "shipped in g (3 entries), h (1 entry): bf16/fp16; 2 launch-option variants (num_warps, num_stages), one code "
        "here"
    )
    assert b.where() == "shipped in h (1 entry): fp16"


def test_check_shipped_with_dtypes_runs_those_dtypes_only_and_lists_nothing_as_not_run():
    """Planted s05: --dtypes left out of the shipped settings: a check asked for fp16 ran bf16 too. Planted s06: a
    setting shipped only in a dtype --dtypes left out was reported as one "no dtype of it runs on" the class."""
    from conformance import shipped

    wide = {"BLOCK_M": 16, "BLOCK_I": 64, "num_warps": 4}  # shipped for bf16 alone
    loaded = _shipping(
        g=[(("bf16", "fp16"), (1, 1), A), (("bf16",), (2, 2), B), (("bf16",), (3, 4), wide)],
        h=[(("bf16", "fp16"), (1, 1), B)],
    )
    found, not_run = shipped.targets("h", loaded, False, dtypes={"fp16"})
    assert [(t.setting.config, t.dtype) for t in found] == [(A, "fp16")] and not_run == []
    found, not_run = shipped.targets("h", loaded, False)
    assert sorted((t.setting.config["BLOCK_M"], t.dtype) for t in found) == [(8, "bf16"), (8, "fp16"), (16, "bf16")]
    assert not_run == []
    fp32_only = _shipping(g=[(("bf16",), (1, 1), A)], h=[(("fp32",), (1, 1), B)])
    found, not_run = shipped.targets("h", fp32_only, False)
    assert found == [] and len(not_run) == 1 and "no dtype of it runs on h" in not_run[0]


def _linear_shipping(**classes):
    """A stand-in for loaded tables: class -> linear entries [(dtypes, config)] over every shape."""
    from neurobrix.schema import Domain, Setting, SettingsIndex

    def index(class_id, kernel):
        ranges = (("M", 1, None), ("N", 1, None), ("K", 1, None))
        entries = [Setting(Domain(d, ranges), c) for d, c in classes[class_id]]
        return SettingsIndex.of(kernel, class_id, ("M", "N", "K"), ("pow2", "exact", "exact"), {}, entries, "x.json")

    return SimpleNamespace(classes=dict.fromkeys(classes), kernels=lambda class_id: ("linear",), index=index)


def test_an_offered_setting_a_class_ships_is_checked_once_as_shipped():
    """Planted s09: offered_targets left in the offered settings a class ships: each such setting was checked twice
    on the interpreter, once as shipped and once as offered (the same code at the same small shapes)."""
    from conformance import shipped
    from conformance.specs import RECORDS

    first, second, *rest = (dict(c) for c in RECORDS["linear"].offered)
    own = {"variant": "tiled", "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 4, "num_warps": 4}
    loaded = _linear_shipping(interpreter=[(("fp16",), own)], g=[(("bf16",), first)])
    found, _ = shipped.targets("interpreter", loaded, True, ["linear"])
    assert [(t.setting.config, t.where.split(" ")[0]) for t in found] == [
        (first, "shipped"),
        (second, "offered"),
        *((c, "offered") for c in rest),
    ]


# ------------------------------------------------------------------------------ gate/yamlsafe.py
def test_yaml_limits_are_inclusive_and_count_what_they_name(monkeypatch):
    """Planted y01: a text of exactly the byte limit refused (``>=``); y02: exactly MAX_DEPTH levels refused; y03:
    the depth never lowered at a mapping's end, so a list of 40 small mappings (a tracked list's shape: one per
    file) refused as nested 40 deep; y04: the event cap 10 events lenient (the cap lowered here, read at the call)."""
    from gate import yamlsafe

    text = b"format: 1\n"
    assert yamlsafe.load(text, len(text)) == {"format": 1}
    with pytest.raises(yamlsafe.UnsafeYAML, match="the limit is"):
        yamlsafe.load(text, len(text) - 1)
    depth = yamlsafe.MAX_DEPTH
    assert yamlsafe.load(b"[" * depth + b"]" * depth, 1000) is not None
    with pytest.raises(yamlsafe.UnsafeYAML, match="nested more than"):
        yamlsafe.load(b"[" * (depth + 1) + b"]" * (depth + 1), 1000)
    files = b"files:\n" + b"".join(b"- {path: t%d.yaml, sha256: x}\n" % i for i in range(40))
    assert len(yamlsafe.load(files, 10_000)["files"]) == 40
    monkeypatch.setattr(yamlsafe, "MAX_EVENTS", 50)
    assert yamlsafe.load(b"[" + b",".join([b"0"] * 40) + b"]", 1000) == [0] * 40
    with pytest.raises(yamlsafe.UnsafeYAML, match="more than 50 YAML nodes"):
        yamlsafe.load(b"[" + b",".join([b"0"] * 51) + b"]", 1000)


def test_an_anchor_alone_is_refused_and_a_parse_error_names_the_line_of_the_problem():
    """Planted y05: only aliases refused: an anchor with no alias (``&x``) passed, though the docstring refuses any
    anchor (a tracked list never needs one). Planted y07: the line counted from 0; y08: the line of the error's
    context (where the flow list opened) named, not the line of the problem."""
    from gate import yamlsafe

    with pytest.raises(yamlsafe.UnsafeYAML, match=r"^line 1: an anchor or alias"):
        yamlsafe.load(b"a: &x [1]\n", 1000)
    with pytest.raises(yamlsafe.UnsafeYAML, match=r"^line 2: an anchor or alias"):
        yamlsafe.load(b"a: 1\nb: &y 2\n", 1000)
    with pytest.raises(yamlsafe.UnsafeYAML, match=r"^line 2: not valid YAML"):
        yamlsafe.load(b"a: [1, 2\nb: 3\n", 1000)  # the list opens on line 1; the ':' that breaks it is on line 2
    with pytest.raises(yamlsafe.UnsafeYAML, match=r"^line 3: not valid YAML"):
        yamlsafe.load(b"x: 1\ny: 2\n  z: 3\n", 1000)


def test_offered_settings_only_in_a_dtype_the_class_runs():
    """Planted s11: offered_targets dropped its own-dtypes test: a class whose linear tables hold fp32 only had the
    offered settings checked in fp16, a dtype it never runs (on a GPU class: bf16 on one certified for fp16)."""
    from conformance import shipped

    own = {"variant": "tiled", "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 4, "num_warps": 4}
    found, not_run = shipped.targets("interpreter", _linear_shipping(interpreter=[(("fp32",), own)]), True)
    assert found == [] and not_run == []
    found, _ = shipped.targets("h", _linear_shipping(h=[(("fp16",), own)]), False)
    assert found == []
    found, _ = shipped.targets("h", _linear_shipping(h=[(("bf16",), own)]), False)
    assert {t.dtype for t in found} == {"bf16"} and len(found) == len(shipped.RECORDS["linear"].offered)


# ------------------------------------------------------------------------------ conformance/candidates.py
def test_a_candidate_fits_up_to_exactly_the_devices_shared_memory_and_the_interpreter_prunes_nothing(monkeypatch):
    """Planted k01: ``>=``: a candidate needing exactly the opt-in limit dropped, though it fits. Planted k02: a class
    without a known limit (the interpreter, which has no shared memory to run out of) pruned by the H200's: its
    large-tile candidates never screened."""
    from conformance import candidates
    from neurobrix.ops import SPECS

    dims = {"M": 128, "N": 4096, "K": 4096}
    configs = [{"variant": "tiled", "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_stages": s} for s in (3, 4)]
    keep, dropped = candidates.prune("linear", configs, "interpreter", dims, 2)
    assert keep == configs and dropped == []
    need = SPECS["linear"].shared_memory(configs[1], dims, 2)
    monkeypatch.setitem(candidates.SMEM_BYTES, "nvidia-h200", need)
    keep, dropped = candidates.prune("linear", configs, "nvidia-h200", dims, 2)
    assert keep == configs and dropped == []
    monkeypatch.setitem(candidates.SMEM_BYTES, "nvidia-h200", need - 1)
    keep, dropped = candidates.prune("linear", configs, "nvidia-h200", dims, 2)
    assert keep == configs[:1] and dropped[0][0] == configs[1]


# ------------------------------------------------------------------------------ conformance/track.py
def test_track_writes_a_tracked_list_where_there_was_none(tmp_path):
    """Planted t01: write read TRACKED.yaml before asking whether it exists: a tables folder without one (a new
    class's first certify) stopped on FileNotFoundError instead of getting its list."""
    import shutil

    from conformance import track
    from neurobrix.tables import TRACKED_NAME

    root = tmp_path / "tables"
    shutil.copytree(track.SOURCE_TABLES, root)
    (root / TRACKED_NAME).unlink()
    path, changed = track.write(root)
    assert changed and path == str(root / TRACKED_NAME)
    assert track.out_of_sync(root) == []
    assert track.write(root) == (path, False)


# ------------------------------------------------------------------------------ neurobrix/errors.py
def test_a_number_is_float_sized_up_to_the_largest_float_itself_and_never_a_bool():
    """Planted e01: ``<``: the largest float's own integer value refused as past a float's range, though float()
    holds it exactly (an integer 1 larger is past it). Planted e02: isinstance for the exact types: True and False
    taken as numbers (a temperature of True sampled at 1.0)."""
    import sys

    from neurobrix.errors import UsageError, expect, float_sized

    largest = int(sys.float_info.max)
    assert float(largest) == sys.float_info.max and float_sized(largest) and float_sized(-largest)
    expect("Sampling.temperature", largest, "a number")
    assert not float_sized(largest + 1) and not float_sized(10**400)
    with pytest.raises(UsageError, match=r"^Sampling.temperature must be a number, got 1000"):
        expect("Sampling.temperature", 10**400, "a number")
    assert not float_sized(True) and not float_sized(False)
    with pytest.raises(UsageError, match=r"^Sampling.top_p must be a number or None, got True \(bool\)$"):
        expect("Sampling.top_p", True, "a number", optional=True)


# ------------------------------------------------------------------------------ conformance/rank.py
def _decode_entry():
    """An entry as certify records it: its setting, and three it rejected as slower (timer times, fastest last)."""
    from neurobrix.schema import Domain, Entry, Proof, Rejected

    gemv = {"variant": "gemv", "BLOCK_N": 16, "BLOCK_K": 256, "num_warps": 4}
    slower = tuple(
        Rejected({**gemv, "BLOCK_N": n}, "slower", f"{us:.2f} us median vs 10.00 us")
        for n, us in ((64, 12.5), (32, 11.0), (8, 10.5))
    )
    proof = Proof(25, 0.5, "b", "float64", 9.9, 10.0, 4, slower)
    return Entry(Domain(("bf16",), (("M", 1, 1), ("N", 2048, 2048), ("K", 2048, 2048))), gemv, proof)


def test_a_setting_exactly_the_margin_faster_is_not_kept():
    """Planted r03: ``>=``: a setting whose step was exactly ``margin`` faster replaced the certified one (and was
    proven for it): the margin is what a setting must beat, not reach."""
    from conformance import rank

    entry = _decode_entry()

    def prove(config):
        raise AssertionError("no setting beat the margin: nothing to prove")

    new, outcome, kept = rank.rank_call(
        entry, ("linear", "bf16", (1, 2, 3)), "m", 2, 0.25, lambda t: [125.0, 100.0, 130.0], prove
    )
    assert kept == dict(entry.config) and outcome.kept == 0 and dict(new.config) == dict(entry.config)


def test_a_kept_setting_records_its_own_proof_and_the_report_names_the_fastest_alternative():
    """Planted r10: the kept setting's proof recorded with the old setting's example count; r09: with the certified
    setting fastest, the report's "fastest alternative" was the certified setting's own time."""
    from conformance import rank

    entry = _decode_entry()
    proof = SimpleNamespace(passed=True, examples=entry.proof.examples + 7, worst_ratio=0.25, failure=None)
    new, outcome, kept = rank.rank_call(
        entry, ("linear", "bf16", (1, 2, 3)), "m", 2, 0.01, lambda t: [100.0, 80.0, 90.0], lambda c: proof
    )
    assert outcome.kept == 1 and new.proof.examples == entry.proof.examples + 7 and new.proof.worst_error_ratio == 0.25
    stays, outcome, _ = rank.rank_call(
        entry, ("linear", "bf16", (1, 2, 3)), "m", 2, 0.01, lambda t: [100.0, 100.5, 103.0], None
    )
    assert rank.render(outcome).endswith(
        "the certified setting stays (step 100.0 us; the fastest alternative 100.5 us)"
    )


# ------------------------------------------------------------------------------ neurobrix/cli_store.py
def _stored(name: str, path, commit: str | None = "0123456789abcdef0123"):
    from neurobrix.store import StoredModel

    return StoredModel(name, path, "org/m", None, ("config.json", "model.safetensors"), 1500, commit)


def test_import_prints_the_commit_and_a_warmup_command_a_shell_reads_back(tmp_path, monkeypatch, capsys):
    """Planted cs09: import's first line without the commit it stored; cs07: the warmup command printed with the
    stored name unquoted: a name holding a space (a local folder's) ran `neurobrix warmup` on its first word;
    cs06: without a GPU of a certified class, import still said to compile the kernels "for None"."""
    import argparse
    import shlex

    from neurobrix import cli_store

    model = _stored("my model", tmp_path / "models" / "my model")
    monkeypatch.setattr(cli_store, "import_model", lambda *a, **k: model)
    monkeypatch.setattr(cli_store, "_certified_gpu_class", lambda: "nvidia-h200")
    args = argparse.Namespace(source="x", accept_license=False, revision=None, warmup=False)
    assert cli_store.cmd_import(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"imported my model at 0123456789ab: 2 files, 1.5 kB in {model.path}"
    command = out[1].split(": ", 1)[1]
    assert shlex.split(command) == ["neurobrix", "warmup", "--model", "my model"]
    monkeypatch.setattr(cli_store, "_certified_gpu_class", lambda: None)  # no GPU of a certified class
    assert cli_store.cmd_import(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("run it with: ") and not any("warmup" in line for line in out)


def test_remove_says_which_store_it_freed_the_model_from(tmp_path, monkeypatch, capsys):
    """Planted cs04: remove named the model's own folder (just deleted) as the place freed, not the store."""
    import argparse

    from neurobrix import cli_store

    model = _stored("org/m", tmp_path / "models" / "org--m")
    monkeypatch.setattr(cli_store, "remove", lambda name: model)
    assert cli_store.cmd_remove(argparse.Namespace(name="org/m")) == 0
    assert capsys.readouterr().out == f"removed org/m (1.5 kB freed from {tmp_path / 'models'})\n"


def test_tables_that_cannot_be_read_leave_import_without_a_gpu_class(monkeypatch):
    """Planted cs08: only an uncertified GPU taken as no class: tables that cannot be read (TablesError) made
    import, after the model was stored whole, end in that error rather than print the run command (`run` says
    why)."""
    import torch

    import neurobrix.gpu as gpu
    from neurobrix import cli_store
    from neurobrix.errors import TablesError

    def damaged():
        raise TablesError("tables/TRACKED.yaml: altered")

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(gpu, "detect_class", damaged)
    assert cli_store._certified_gpu_class() is None


# ------------------------------------------------------------------------------ conformance/catalogue.py
def test_pow2_points_are_one_per_bucket_met_each_the_buckets_top_within_the_range():
    """Planted c01: ``<``: a range whose last bucket starts at its top (lo = hi, or hi = 2^k + 1) lost that
    bucket: a coverage narrowed to a 128-token prompt walked no prefill at all. Planted c02: the top not clipped
    to hi: the walk went past the range (a 5-token cap walked an 8-token prompt)."""
    from conformance.catalogue import _pow2_points
    from neurobrix.buckets import pow2_bucket

    for lo in range(1, 40):
        for hi in range(lo, 70):
            buckets = sorted({pow2_bucket(v) for v in range(lo, hi + 1)})
            assert _pow2_points(lo, hi) == [min(top, hi) for _, top in buckets], (lo, hi)


def test_the_walk_keeps_prompts_and_caches_within_the_models_context_and_the_cache_cap():
    """Planted c03: the prefill walk not capped by cache_tokens / batch: batch 4 walked 1024-token prompts with a
    1024-token cache cap. Planted c04: the prefill batches' top left out: a coverage of batch 2 alone walked no
    prefill. Planted c05: capacities past the model's context (TinyLlama's 2048) walked."""
    from conformance import catalogue

    name = "TinyLlama/TinyLlama-1.1B-Chat-v1.0"
    context = catalogue.load()[0][name].max_positions
    needed = catalogue.required_domains(
        models=[name],
        limits={
            "decode_batch": (1, 1),
            "prefill_batch": (4, 4),
            "prompt": (1, 4096),
            "capacity": (1, 4 * context),
            "cache_tokens": (1, 1024),
        },
    )
    prefill = needed["attention_prefill"]
    assert prefill and max(dict((d, (lo, hi)) for d, lo, hi in r)["S"][0] for _, r in prefill) <= 1024 // 4
    decode = needed["attention_decode"]
    assert max(dict((d, (lo, hi)) for d, lo, hi in r)["S"][0] for _, r in decode) <= 1024
    wide = catalogue.required_domains(
        models=[name],
        limits={"decode_batch": (1, 1), "prefill_batch": (1, 1), "prompt": (1, 1), "capacity": (1, 4 * context)},
    )
    spans = [dict((d, (lo, hi)) for d, lo, hi in r)["S"] for _, r in wide["attention_decode"]]
    assert max(lo for lo, _ in spans) <= context < max(hi for _, hi in spans) + 1


def test_a_table_altered_since_track_is_the_one_problem_reported(tmp_path):
    """Planted t02: the hand-edit line added whenever the list's text differs, problems or not: a table altered since
    `track` was also reported as a tracked list "not in the form `track` writes (edited by hand?)", pointing the
    contributor at the list rather than the table."""
    import shutil

    from conformance import track

    root = tmp_path / "tables"
    shutil.copytree(track.SOURCE_TABLES, root)
    table = root / "interpreter" / "silu_mul.json"
    table.write_text(table.read_text() + " ")
    (problem,) = track.out_of_sync(root)
    assert problem.startswith("interpreter/silu_mul.json: size") and "altered" in problem
    track.write(root)
    assert track.out_of_sync(root) == []


def test_true_or_false_takes_the_two_booleans_only():
    """Planted e07: booleans compared by value (``v in (True, False)``): 1, 0 and 1.0 passed as true or false, so
    ``generate(..., use_graph=1)`` went on where the API refuses every other type."""
    from neurobrix.errors import UsageError, expect

    expect("use_graph", True, "true or false")
    expect("RunOptions.chat", False, "true or false")
    for value in (1, 0, 1.0, 0.0):
        with pytest.raises(UsageError, match=rf"^use_graph must be true or false, got {value!r} \("):
            expect("use_graph", value, "true or false")
