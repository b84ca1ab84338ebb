"""Planted-bug round 38: tests for the plants of tests/planted38_plants.py that the existing tests let through, where
round 37 had left no plant: the attention bounds of conformance/bounds.py, certify's phases and its time limit
(conformance/certify.py), the time limit of conformance/workers.py and conformance/check.py, the store's manifest-name
check (neurobrix/store.py), the install smoke (gate/smoke.py), the isolated build backend (gate/backend.py) and the
tiny checkpoints (conformance/tiny.py). Each test fails under the plant(s) its section names (checked:
``python tests/planted38_driver.py COPY OUT --with tests/test_planted38.py ID``, each plant against this file alone)
and passes on the clean code.

Outcomes (42 plants): 17 caught by the tests before the round (a06 a08 a11 a12, w01 w03 w04 w05 w07, c01 c03 c04
c05 c10, s01 s02 s03); 25 survived and are caught here: a01 (decode's rescalings counted over the whole cache, not
the key's split), a02 (the merge's rescaling left out), a03 (one max logit error in G, not two), a04 (a p whose
interval reaches below TINY_P pinned by its top), a07 (0 rows a slice past ROW_ELEMENTS keys), a09 (a split's share
of the cache rounded down), a10 (attention_one_key two roundings short), a15 (0 splits admitted with the blocking
unknown), w06 (isolated workers past the limit waited for, 10 s each), k01 (every wave of check finishing an entry
past the limit), c02 (a phase's result put in the place of the task's index in the chunk, not its own), c08 and c13
(running out of memory while timed or proven recorded as the candidate's fault), c09 (timed candidates ranked by
their best run), c11 (the candidates rejected while timed left out of the proof), t01 (the tiny tokenizer without
<s>), t03 (the norms drawn random and the rest left at transformers' init), e02 (an empty backend version), e03 (a
backend killed by a signal), e04 (build's wrapper in place of the runner's sentence), g01 (a pip killed by a signal),
g02 (an installed member without a digest), g03 (INSTALLER not required), g04 (tables loaded from under the source
tree), g06 (another origin at the installed place).

Found and fixed: ``bounds.decode_chunk`` (so ``attention_decode``) with 0 splits or a key block of 0 ended in a
ZeroDivisionError where ``_attention_rows`` refuses them by name; it refuses them with the same ValueError now
(``test_attention_bounds_refuse_no_split_or_no_key_block``, which failed before the fix).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import REPO, retrack

from conformance import bounds as bd
from conformance import certify, check
from conformance import reference as ref
from gate import smoke
from neurobrix import tables
from neurobrix.tables import WHEEL_DIR, sha256_of


# ------------------------------------------------------------------------------------------------ attention bounds
def _documented_relative_error(capacity: int, splits: int, block: int, length: int, logit_error: float) -> float:
    """g of ``_attention_rows``'s docstring for a row whose logits are all equal (every weight 1, no gap to the max),
    each logit's error bound ``logit_error``: r = exp(E + G) ((1 + SPECIAL)(1 + u))^(n + 1) - 1 with G = 9 u (2 E),
    n the rescalings of a key, and the accumulation's gamma_a."""
    chunk = math.ceil(math.ceil(capacity / splits) / block) * block
    blocks = math.ceil(min(length, chunk) / block)  # a key is rescaled by the later blocks of its own split only
    n = blocks + 1  # and once by the merge
    a = blocks + max(block, 2 * (math.ceil(block / 16) + 17)) + splits + 1
    E = logit_error
    r = math.exp(E + 9 * bd.U32 * 2 * E) * ((1 + bd.SPECIAL) * (1 + bd.U32)) ** (n + 1) - 1
    return (1 + r) * (1 + a * bd.U32 / (1 - a * bd.U32)) - 1


@pytest.mark.parametrize("q_scale", [0.0, 3.0])
@pytest.mark.parametrize(
    ("capacity", "splits", "block", "length"), [(64, 4, 4, 64), (48, 3, 16, 40), (10, 1, 4, 7), (96, 2, 16, 90)]
)
def test_the_decode_bound_is_its_documented_formula_where_every_logit_is_equal(
    capacity, splits, block, length, q_scale
):
    """Every key the same (so every logit, and its error bound E, the same; values random) in fp32: the bound is
    exactly the terms ``_attention_rows`` documents. A key of flash decoding is rescaled once per later block of its
    own split (``decode_chunk`` positions) and once by the merge, and summed with its block, the later blocks of its
    split and the other splits; the rounding of t_j - m, of the alpha and of the merge arguments takes 9 u32 of
    (gap + 2 max E). A count over the whole cache loosened the bound; one without the merge, or with one max E,
    tightened it below the kernel's worst case."""
    gen = torch.Generator().manual_seed(capacity + length)
    D, scale = 8, 8**-0.5
    q = torch.randn(1, 2, D, generator=gen) * q_scale
    k = torch.randn(1, 1, 1, D, generator=gen).expand(1, capacity, 1, D).contiguous()
    v = torch.randn(1, capacity, 1, D, generator=gen)
    lengths = torch.tensor([length])
    out64 = ref.attention_decode(q, k, v, lengths, scale)
    bound = bd.attention_decode(q, k, v, lengths, scale, out64, key_block=block, splits=splits)
    v64 = v[0, :length, 0].double()
    for head in range(2):
        roundings = max(D + 2, 2 * (math.ceil(D / 16) + 18))
        E = bd.gamma(roundings, bd.U32) * scale * float(q[0, head].double().abs() @ k[0, 0, 0].double().abs())
        g = _documented_relative_error(capacity, splits, block, length, E)
        out = out64[0, head].abs()
        pre = g * v64.abs().sum(0) / (length * (1 - g)) + g * out / (1 - g)
        want = (1 + bd.SPECIAL) * pre + bd.SPECIAL * out + (length + 4) * bd.underflow(torch.float32)
        torch.testing.assert_close(bound[0, head], want, rtol=1e-9, atol=0)  # g = (1 + r)(1 + g_a) - 1 keeps ~11 digits


@pytest.mark.parametrize("rescalings", [0, 1, 5])
def test_a_row_of_one_key_is_charged_each_rounding_its_docstring_counts(rescalings):
    """``attention_one_key``: the product p v (one rounding), two roundings per later key block (acc and l
    rescaled), the split merge's two products, the division (SPECIAL) and, in fp16/bf16, P's rounding (SPECIAL):
    2 rescalings + 3 fp32 roundings. One count short left the merge's products out."""
    v = torch.tensor([[1.0, -3.0, 0.5]])
    for dtype in (torch.float32, torch.float16):
        relative = 1.0
        for r in [bd.U32] * (2 * rescalings + 3) + [bd.SPECIAL] + ([bd.SPECIAL] if dtype != torch.float32 else []):
            relative *= 1 + r
        pre = (relative - 1) * v.double().abs() + bd.underflow(torch.float32)
        want = pre if dtype == torch.float32 else pre + bd.half_ulp(v.double().abs() + pre, dtype)
        torch.testing.assert_close(bd.attention_one_key(v, dtype, rescalings), want, rtol=1e-12, atol=0)


def test_a_decode_split_covers_its_share_of_the_cache_as_the_launcher_cuts_it():
    """``decode_chunk`` is the launcher's ``cdiv(cdiv(capacity, splits), block_n) * block_n``: the splits together
    cover every position of the cache. A share rounded down (capacity // splits) left the last positions to no split
    (10 positions in 3 splits of 3) and undercounted the rescalings of a split's keys."""
    for capacity in range(1, 70):
        for splits in (1, 2, 3, 4, 7):
            for block in (1, 2, 4, 16):
                chunk = bd.decode_chunk(capacity, block, splits)
                assert chunk % block == 0 and splits * chunk >= capacity, (capacity, splits, block, chunk)
                assert chunk == math.ceil(math.ceil(capacity / splits) / block) * block


def _decode_case(capacity: int, length: int, seed: int = 0) -> tuple:
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(1, 2, 8, generator=gen).half()
    k = torch.randn(1, capacity, 1, 8, generator=gen).half()
    v = torch.randn(1, capacity, 1, 8, generator=gen).half()
    return q, k, v, torch.tensor([length])


@pytest.mark.parametrize("key_block", [None, 4])
def test_the_decode_bound_reads_nothing_past_a_sequences_length(key_block):
    """The kernel visits filled positions only (positions 0 .. length - 1): whatever the cache holds past them, the
    bound is the same. A mask that took position ``length`` in too bounded the output against a key the kernel never
    reads (and changed with it)."""
    q, k, v, lengths = _decode_case(24, 13)
    out64 = ref.attention_decode(q, k, v, lengths, 8**-0.5)
    first = bd.attention_decode(q, k, v, lengths, 8**-0.5, out64, key_block=key_block, splits=2)
    k2, v2 = k.clone(), v.clone()
    k2[:, 13:], v2[:, 13:] = 60.0, -300.0  # garbage past the length
    again = bd.attention_decode(q, k2, v2, lengths, 8**-0.5, out64, key_block=key_block, splits=2)
    assert torch.equal(first, again)


def test_attention_bounds_refuse_no_split_or_no_key_block():
    """A bound for 0 splits (or a key block of 0) stands for no kernel: refused whatever the blocking, as the
    launcher can run no such config (before: with the blocking unknown, splits=0 gave a bound)."""
    q, k, v, lengths = _decode_case(8, 8)
    out64 = ref.attention_decode(q, k, v, lengths, 8**-0.5)
    for key_block, splits in ((None, 0), (4, 0), (0, 1), (None, -1)):
        with pytest.raises(ValueError, match="must be >= 1"):
            bd.attention_decode(q, k, v, lengths, 8**-0.5, out64, key_block=key_block, splits=splits)


def test_a_long_prefill_bound_is_the_same_sliced_into_rows(monkeypatch):
    """The prefill bound is computed ``ROW_ELEMENTS // S`` query rows at a time (at least 1): with fewer row elements
    than keys (a cache longer than 4M positions) one row at a time, the same bound. Rounded to 0 rows, the slices
    were empty steps (range() refused a step of 0)."""
    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 6, 2, 8, generator=gen).half() for _ in range(3))
    out64 = ref.attention_prefill(q, k, v, 8**-0.5)
    whole = bd.attention_prefill(q, k, v, 8**-0.5, out64, key_block=4)
    monkeypatch.setattr(bd, "ROW_ELEMENTS", 4)  # fewer than the 6 keys
    assert torch.equal(bd.attention_prefill(q, k, v, 8**-0.5, out64, key_block=4), whole)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_p_whose_interval_reaches_below_tiny_p_is_charged_any_rounding(dtype):
    """``_p_rounding``: where p_lo < TINY_P (p may be subnormal in fp32, or flushed) the rounding of P is known only to
    lie in [0, 2p]: rho in [-1, 1], whatever p_hi is. A key whose p_hi reached TINY_P was pinned as if its rounding
    were known, while an exp2 that flushes a subnormal p_lo to 0 gives rho = -1 outside that pin."""
    s = torch.tensor([[0.0, -84.0]], dtype=torch.float64)  # p of the second key: e^-84, about 2^-121
    visible = torch.ones_like(s, dtype=torch.bool)
    E = torch.full_like(s, 1.0)  # a logit error of 1: p in [e^-87, e^-81], across TINY_P = 2^-120 (e^-83.2)
    lo, hi = bd._p_rounding(s, visible, E, E.max(dim=-1, keepdim=True).values, 2, 2, dtype)
    assert (lo[0, 1].item(), hi[0, 1].item()) == (-1.0, 1.0)


# ------------------------------------------------------------------------------------------------ certify's phases
A, B, C = {"BLOCK": 8}, {"BLOCK": 16}, {"BLOCK": 32}


def _task() -> certify.Task:
    (task,) = certify.plan("interpreter", ["silu_mul"], ["fp32"], None, None, None)
    return task


def _screened(survivors: list, rejected: list | None = None) -> certify.Screened:
    return certify.Screened(_task(), 0, 5, survivors, rejected or [])


def _proofs(monkeypatch, outcomes: dict[int, str]) -> list:
    """check.check_entry replaced: each config's outcome by its BLOCK ("pass", "fail" or "oom"); the configs proven."""
    proven = []

    def entry(kernel, setting, dtype, examples, profile_name):
        proven.append(dict(setting.config))
        how = outcomes[setting.config["BLOCK"]]
        return SimpleNamespace(
            passed=how == "pass",
            out_of_memory=how == "oom",
            failure=None if how == "pass" else "error 3 x bound",
            examples=examples,
            worst_ratio=0.5,
        )

    monkeypatch.setattr(check, "check_entry", entry)
    return proven


def test_timing_ranks_the_survivors_by_their_median(monkeypatch):
    """The timed candidates go fastest first by the median of their runs (the number the tables record and the
    engine's choice stands on), not by their best run."""
    monkeypatch.setattr(certify, "timing_sets", lambda task: [])
    monkeypatch.setattr(certify, "estimate", lambda task, config, sets, pdl: 1.0)
    monkeypatch.setattr(certify, "shortlist", lambda first: ([c for _, c in first], []))
    times = {8: (1.0, 9.0), 16: (2.0, 3.0), 32: (4.0, 5.0)}
    monkeypatch.setattr(certify, "measure", lambda task, config, sets, pdl: times[config["BLOCK"]])
    timed = certify.time_task("interpreter", _screened([A, B, C]))
    assert [c for _, c in timed.timed] == [B, C, A]


def test_running_out_of_memory_while_timing_fails_the_task_not_the_candidate(monkeypatch):
    """A survivor that runs out of device memory while it is timed (beside other workers) says nothing of the
    candidate: the task fails (certified again by a later run), the candidate is not recorded rejected."""
    monkeypatch.setattr(certify, "timing_sets", lambda task: [])

    def estimate(task, config, sets, pdl):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.0 GiB")

    monkeypatch.setattr(certify, "estimate", estimate)
    with pytest.raises(torch.OutOfMemoryError):
        certify.time_task("interpreter", _screened([A]))


def test_a_candidate_left_off_the_shortlist_is_proven_when_every_timed_one_fails(monkeypatch):
    """The survivors left off the shortlist (by their first estimate) are proven, fastest first, once every candidate
    timed in full has failed its proof: the task is certified with one of them, not failed."""
    proven = _proofs(monkeypatch, {8: "fail", 16: "pass"})
    timed = certify.Timed(_screened([A, B]), [((1.0, 1.5), A)], [], estimated=[(2.0, B)])
    result = certify.prove_task("interpreter", timed, 3, "ci")
    assert proven == [A, B] and result.entry is not None and dict(result.entry.config) == B
    reasons = {r.reason for r in result.entry.proof.rejected}
    assert reasons == {"wrong_result"}


def test_the_proof_records_the_candidates_rejected_while_timed(monkeypatch):
    """A proof lists every candidate rejected on the way: at screening and while being timed (a survivor that
    crashed under the timer is recorded so, not dropped from the audit record)."""
    _proofs(monkeypatch, {8: "pass"})
    screened = _screened([A, B], [(C, "out_of_resources", "shared memory")])
    timed = certify.Timed(screened, [((1.0, 1.5), A)], [(B, "crashed", "illegal memory access")])
    result = certify.prove_task("interpreter", timed, 3, "ci")
    rejected = {(r.reason, r.config["BLOCK"]) for r in result.entry.proof.rejected}
    assert rejected == {("out_of_resources", 32), ("crashed", 16)}


def test_a_proof_out_of_memory_fails_the_task_not_the_candidate(monkeypatch):
    """A proof that ran out of device memory is no wrong result: the task fails (certified again later) rather than
    the candidate being rejected as wrong and a slower one certified in its place."""
    proven = _proofs(monkeypatch, {8: "oom", 16: "pass"})
    timed = certify.Timed(_screened([A, B]), [((1.0, 1.5), A), ((2.0, 2.5), B)], [])
    with pytest.raises(torch.OutOfMemoryError):
        certify.prove_task("interpreter", timed, 3, "ci")
    assert proven == [A]


# ------------------------------------------------------------------------------------------------ the install smoke
def test_a_pip_killed_by_a_signal_is_no_installation(monkeypatch):
    """pip ended by a signal (exit status -9: the OOM killer, a job's limit) installed nothing whole: the smoke fails
    with G701, as for any other non-zero status, rather than hashing a half-written prefix."""
    killed = subprocess.CompletedProcess(["pip"], -9, "", "")
    monkeypatch.setattr(smoke, "_run", lambda *args, **kwargs: killed)
    result = smoke.install_smoke(SimpleNamespace(dist="neurobrix-0.1-py3-none-any.whl", path=Path("x.whl")), None, None)
    assert result.status == "failed" and [(f.code, f.path) for f in result.findings] == [("G701", None)]


def _installed(tmp_path: Path, members: dict[str, bytes], pip_writes: tuple[str, ...]) -> tuple:
    """A prefix as pip leaves it: the wheel's ``members`` under site-packages and pip's own files ``pip_writes``."""
    prefix, dist_info = tmp_path / "env", "demo-1.0.dist-info"
    site, scripts = prefix / "lib" / "site-packages", prefix / "bin"
    for name, data in members.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(data)
    (site / dist_info).mkdir(parents=True, exist_ok=True)
    for name in pip_writes:
        (site / dist_info / name).write_text("pip\n")
    digests = {name: SimpleNamespace(hex=sha256_of(site / name)) for name in members}
    wheel = SimpleNamespace(files=[*members, f"{dist_info}/RECORD"], digest=lambda name: digests.get(name))
    repo = SimpleNamespace(declared=SimpleNamespace(dist_info=dist_info, entry_points={}))
    return wheel, prefix, site, scripts, repo, digests


def test_the_inventory_refuses_a_member_it_has_no_hash_for(tmp_path):
    """Every installed member is held against the wheel's sha256 of it; a member whose digest the gate cannot read
    is a problem, not a pass (an unhashed file would be installed unchecked)."""
    members = {"demo/__init__.py": b"x = 1\n", "demo-1.0.dist-info/METADATA": b"Name: demo\n"}
    wheel, prefix, site, scripts, repo, digests = _installed(tmp_path, members, ("INSTALLER", "RECORD"))
    assert smoke._inventory(wheel, prefix, site, scripts, repo) == []
    del digests["demo/__init__.py"]
    assert smoke._inventory(wheel, prefix, site, scripts, repo) == [
        ("demo/__init__.py", "pip wrote other bytes to lib/site-packages/demo/__init__.py")
    ]


@pytest.mark.parametrize("missing", ["INSTALLER", "RECORD"])
def test_an_installation_pip_did_not_record_is_refused(tmp_path, missing):
    """pip records every installation with INSTALLER and RECORD in the .dist-info: without either, what wrote the
    prefix is not the pip the smoke ran."""
    members = {"demo/__init__.py": b"x = 1\n"}
    written = tuple(n for n in ("INSTALLER", "RECORD") if n != missing)
    wheel, prefix, site, scripts, repo, _ = _installed(tmp_path, members, written)
    problems = smoke._inventory(wheel, prefix, site, scripts, repo)
    assert problems == [(f"demo-1.0.dist-info/{missing}", "pip did not record the installation")]


@pytest.mark.parametrize("where", ["source tree", "another origin"])
def test_tables_verify_must_load_the_installed_wheels_tables(tmp_path, where):
    """`tables verify` passes the smoke only for the tables of the installed wheel (origin "installed package", at
    <site>/WHEEL_DIR) outside the source tree: an install under the checkout (TMPDIR inside it) or a report of
    another origin at the same place is G703."""
    work = tmp_path / "work"
    site = work / "env" / "lib" / "site-packages"
    source = tmp_path if where == "source tree" else tmp_path / "checkout"
    report = {"ok": True, "origin": "installed package", "location": str(site / WHEEL_DIR), "files": 3}
    if where == "another origin":
        report["origin"] = "NEUROBRIX_TABLES"
    verify = subprocess.CompletedProcess(["verify"], 0, json.dumps(report), "")
    result = smoke._judge_verify("demo.whl", verify, site, work, source, 3)
    assert result.status == "failed" and [f.code for f in result.findings] == ["G703"], result
    source = tmp_path / "checkout"
    report["origin"] = "installed package"
    verify = subprocess.CompletedProcess(["verify"], 0, json.dumps(report), "")
    assert smoke._judge_verify("demo.whl", verify, site, work, source, 3).status == "passed"


# ------------------------------------------------------------------------------------------------ workers' time limit
def _nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_isolated_workers_past_the_limit_are_killed_not_waited_for():
    """Past the limit an isolated worker's item has nobody to report to: the worker is killed at once. Asked to stop
    after its item instead, each was waited for 10 s before the kill (a wave of 15 workers: minutes past a job's
    limit)."""
    from conformance.workers import OutOfTime, Workers

    pool = Workers(jobs=2, devices=[None], isolate=True)
    finished: list[float] = []
    try:
        with pytest.raises(OutOfTime) as got:
            pool.map(_nap, [(0.2,), (60.0,)], lambda i: finished.append(time.monotonic()), limit=(lambda: -1.0, 1))
        stopped = time.monotonic() - finished[0]
        assert got.value.done == {0: 0.2} and stopped < 5, stopped
    finally:
        pool.close(kill=True)


def test_only_a_checks_first_wave_finishes_an_entry_past_the_limit(monkeypatch):
    """`check --max-minutes`: the first wave of a run finishes one entry whatever the limit (a rerun always gets
    further); a later wave the limit reaches stops at once, its entries left (each wave had finished one more)."""
    from conformance import workers

    def entry(kernel, setting, dtype, *args):
        return check.EntryResult(kernel, dtype, setting.domain.describe(), dict(setting.config))

    at_least: list[int] = []
    original = workers.Workers.map

    def spy(self, fn, items, on_done=None, limit=None):
        at_least.append(limit[1])
        return original(self, fn, items, on_done, limit)

    monkeypatch.setattr(check, "check_entry", entry)
    monkeypatch.setattr(workers.Workers, "map", spy)
    report = check.check_class("interpreter", ["silu_mul", "rms_norm"], None, 1, "ci", jobs=1, max_minutes=60)
    assert report.complete and len(at_least) >= 2 and at_least == [1] + [0] * (len(at_least) - 1), at_least


def test_each_phase_hands_every_task_its_own_result(tmp_path, monkeypatch):
    """A chunk's tasks go through screening, timing and proofs; a task failed at screening goes no further and the
    others' results go on to their own task. With the first task of a chunk failed, the second's timing result was
    read from the first's place (left: neither certified nor failed, and not counted), and a failure went on to be
    timed (its message lost)."""
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / "interpreter", root / "interpreter")
    retrack(root)
    tables.clear_cache()
    timed, proven = [], []

    def screen(class_id, task, seed):
        if task.dtype == "fp32":
            raise RuntimeError("no candidate compiled")
        return ("screened", task.dtype)

    def time_it(class_id, screened, pdl=False):
        timed.append(screened)
        return ("timed", screened)

    def prove(class_id, result, examples, profile_name):
        proven.append(result)
        return certify.Proven(None, f"every candidate for {result[1][1]} failed its proof")

    monkeypatch.setattr(certify, "screen_task", screen)
    monkeypatch.setattr(certify, "time_task", time_it)
    monkeypatch.setattr(certify, "prove_task", prove)
    with pytest.raises(certify.CertifyFailed) as got:
        certify.certify(
            "interpreter", root, ["silu_mul"], ["fp32", "fp16"], False, 2, "ci", None, "test", say=lambda line: None
        )
    assert timed == [("screened", "fp16")] and proven == [("timed", ("screened", "fp16"))]
    assert len(got.value.failures) == 2 and "no candidate compiled" in got.value.failures[0], got.value.failures
    tables.clear_cache()


# ------------------------------------------------------------------------------------------------ the build backend
def test_a_backend_version_read_as_nothing_is_refused(monkeypatch):
    """An interpreter that printed no version (exit 0, empty output) names no backend: refused, not recorded as ''."""
    from gate import backend

    monkeypatch.setattr(backend.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "\n", ""))
    with pytest.raises(backend.BackendFailed, match="cannot be read: no output"):
        backend.backend_version("hatchling")


def test_a_backend_killed_by_a_signal_failed(monkeypatch):
    """A build backend ended by a signal (exit status -9) built nothing whole: BackendFailed, as for exit 1."""
    from gate import backend

    monkeypatch.setattr(backend.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, -9, "", "Killed"))
    with pytest.raises(backend.BackendFailed, match="exited -9: Killed"):
        backend._isolated_runner(["python", "-c", "pass"])


def test_a_backend_failure_is_told_in_the_gates_own_words():
    """build wraps the runner's BackendFailed in BuildBackendException ("Backend operation failed: BackendFailed(...)"):
    the gate reports the runner's own sentence (the exit status and the backend's last lines)."""
    import build

    from gate import backend

    inner = backend.BackendFailed("the build backend exited 1: error: no such file")
    assert backend._failure(build.BuildBackendException(inner)) == "the build backend exited 1: error: no such file"
    assert backend._failure(OSError("disk full")) == "disk full"


# ------------------------------------------------------------------------------------------------ tiny checkpoints
def test_the_tiny_tokenizer_adds_bos_in_front_of_every_text():
    """The tiny checkpoints' tokenizer adds <s> in front of every text, as a Llama checkpoint's does: the engine's
    prompts and transformers' start with it in every parity test."""
    from conformance import tiny

    tok = tiny.train_tokenizer()
    for text in ("hello world", "never guess a setting", ""):
        assert tok.encode(text).ids[:1] == [tok.token_to_id("<s>")], text


def test_the_tiny_weights_are_large_and_the_norms_transformers_own(tmp_path):
    """Every weight but the norms is drawn N(0, 0.2) so that greedy choices are far from ties; the norms keep
    transformers' initial ones. Drawn the other way round (norms random, the rest at transformers' 0.02), the greedy
    tests compared near-ties."""
    from safetensors.torch import load_file

    from conformance import tiny

    folder = tiny.make(tmp_path / "tiny", "llama")
    weights = load_file(folder / "model.safetensors")
    for name, tensor in weights.items():
        if "norm" in name:
            assert torch.equal(tensor, torch.ones_like(tensor)), name
        else:
            assert 0.15 < float(tensor.float().std()) < 0.25, name
