"""The conformance machinery itself, against bugs planted in it: each test here failed with a bug planted in
conformance/ (named in its docstring) that the rest of the suite let through, and passes on the real code.

The planted bugs weaken a proof without crashing anything: the comparison of an output with its reference and
bound, the poisoned buffers and guard bands, the inputs' dtype, the shapes Hypothesis draws, the verdict and
worst ratio of an entry, derandomization, screening, what certify proves and records, the fingerprint a resumed
check trusts, and the re-proof a check records. Everything here runs without a kernel launch, or with a fake
launcher, so the file takes seconds.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import REPO
from hypothesis import Phase, find, given, settings

import neurobrix
from conformance import bounds, certify, check, harness, reference, reproof
from conformance import strategies as cs
from conformance.specs import RECORDS, Small
from neurobrix import ops, stack
from neurobrix.dtypes import torch_dtype
from neurobrix.schema import Domain, Setting

CI = cs.profile("ci")
DTYPES = ("fp32", "fp16", "bf16")


def quick(examples: int = 300) -> settings:
    return settings(CI, max_examples=examples, phases=[Phase.generate])


# ----------------------------------------------------------------------------- the comparison with float64
def test_ratio_sees_an_error_of_either_sign_in_any_element():
    """Planted: bounds.ratio compares only the first element; bounds.ratio takes the signed error (no abs)."""
    ref64 = torch.arange(1.0, 13.0, dtype=torch.float64).reshape(3, 4)
    bound = torch.full_like(ref64, 0.5)
    for flat in (0, 5, 11):  # the first, an inner and the last element
        for sign in (1.0, -1.0):
            actual = ref64.clone().float()
            actual.view(-1)[flat] += sign * 1.5  # 3 times the bound, above or below the reference
            assert bounds.ratio(actual, ref64, bound) == pytest.approx(3.0), (flat, sign)
    actual = ref64.clone().float()
    actual[2, 3] = math.nan  # NaN last: comparisons with NaN are False, the ratio must still be inf
    assert bounds.ratio(actual, ref64, bound) == math.inf


def test_judge_takes_the_worst_pair_wherever_it_is(monkeypatch):
    """Planted: harness.judge returns the last pair's ratio (not the worst); harness.judge judges only the first
    (or only the last) of an op's output pairs (rms_norm's h, rotary's caches unjudged)."""

    def pair(error: float, label: str) -> tuple:
        ref64 = torch.ones(2, 3, dtype=torch.float64)
        return ref64.float() + error, ref64, torch.full_like(ref64, 0.25), label

    for bad in range(3):
        pairs = [pair(0.5 if n == bad else 0.0625, f"output {n}") for n in range(3)]
        record = dataclasses.replace(RECORDS["silu_mul"], judge=lambda case, outputs, config, pairs=pairs: pairs)
        monkeypatch.setitem(RECORDS, "silu_mul", record)
        case = harness.Case("silu_mul", "fp32", {}, {"gu": torch.zeros(2, 6)})
        verdict = harness.judge(case, (torch.zeros(2, 3),), {})
        assert verdict.ratio == pytest.approx(2.0), bad
        assert verdict.explanation.startswith(f"output {bad}: ")


# ------------------------------------------------------------------ poisoned outputs, guard bands, inputs
@pytest.mark.parametrize("dtype", DTYPES)
def test_the_launchers_allocator_hands_out_poisoned_buffers(dtype):
    """Planted: harness.Allocations.empty hands out a zeroed (not NaN) buffer, so an element a kernel never writes
    passes wherever the reference is 0."""
    allocations = harness.Allocations()
    out = allocations.empty((3, 5), dtype=torch_dtype(dtype), device="cpu")
    assert out.shape == (3, 5) and out.dtype == torch_dtype(dtype) and torch.isnan(out).all()
    assert len(allocations.checks) == 1


def _past_the_end(t: torch.Tensor) -> None:
    """What a store without its mask does: one element written just past the tensor's last (into the guard band
    after it, or into the padding after its last row when it is a padded view)."""
    last = t.storage_offset() + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
    torch.as_strided(t, (1,), (1,), storage_offset=last + 1).fill_(0.0)


@pytest.mark.parametrize("overrun", ["output", "input"])
def test_run_kernel_checks_the_guard_bands_of_outputs_and_inputs(monkeypatch, overrun):
    """Planted: harness.run_kernel checks no input's guard bands (a store past a KV cache passes); it checks no
    output's (or only some)."""

    def launch(gu, *, config, empty):
        spare = empty((1, 1), dtype=gu.dtype, device=gu.device)  # scratch first, then the output
        spare.fill_(0.0)
        out = empty((gu.shape[0], gu.shape[1] // 2), dtype=gu.dtype, device=gu.device)
        out.copy_(reference.silu_mul(gu).to(gu.dtype))
        _past_the_end(out if overrun == "output" else gu)
        return out

    case = harness.build("silu_mul", "fp32", {"M": 3, "I": 4}, harness.Values("fp32", "cpu", 1))
    monkeypatch.setitem(ops.SPECS, "silu_mul", dataclasses.replace(ops.SPECS["silu_mul"], launch=launch))
    with pytest.raises(cs.GuardBandError, match=r"1 after its end|1 padding elements overwritten"):
        harness.run_kernel(case, {})


@pytest.mark.parametrize("dtype", DTYPES)
def test_values_are_made_in_the_cases_dtype(dtype):
    """Planted: harness.Values makes its tensors in fp32 whatever the case's dtype (``getattr(torch, dtype,
    torch.float32)`` for ``torch_dtype``): every fp16 and bf16 entry would be checked running fp32 code."""
    t = harness.Values(dtype, "cpu", 0)((4, 6))
    assert t.dtype == torch_dtype(dtype) and t.shape == (4, 6)
    case = harness.build("linear", dtype, {"M": 2, "N": 3, "K": 5}, harness.Values(dtype, "cpu", 0))
    assert case.args["x"].dtype == case.args["weight"].dtype == torch_dtype(dtype)


def test_a_padded_view_keeps_its_values_and_guards_its_padding():
    """Planted: harness.padded hands out a contiguous copy (every stride as the engine's own tensors have them);
    its check_guards checks the guard bands and not the padding between rows (a load or store past a row's end,
    short of the buffer's, passes)."""
    t = torch.arange(12.0).reshape(3, 4)
    view = harness.padded(t, 8, "cpu")
    assert torch.equal(view, t) and view.stride() == (12, 1)
    view.check_guards()
    after_row_0 = torch.as_strided(view, (1,), (1,), storage_offset=view.storage_offset() + 4)
    assert torch.isnan(after_row_0).all()  # a load past a row's end reads NaN
    after_row_0.fill_(0.0)  # a store past a row's end, inside the buffer
    with pytest.raises(cs.GuardBandError, match="padding elements overwritten"):
        view.check_guards()
    assert harness.padded(t, 0, "cpu").is_contiguous()


def _layouts(kernel: str, shape: dict[str, int], *names: str, seeds: int = 24) -> list[tuple[tuple[int, ...], ...]]:
    """The strides of the named arguments over ``seeds`` draws of one shape (a None argument: ())."""
    drawn = []
    for seed in range(seeds):
        case = harness.build(kernel, "fp16", shape, harness.Values("fp16", "cpu", seed))
        drawn.append(tuple(tuple(case.args[n].stride()) if case.args.get(n) is not None else () for n in names))
    return drawn


def test_the_records_draw_inputs_of_other_layouts_than_the_engines():
    """Planted: the records build every input contiguous (x, the residual, gu, the KV caches, cos and sin) or
    give q, k and v, or the k and v caches, one layout between them, and rotary's positions never a batch stride
    of 0 (the engine's prefill): a kernel that takes one tensor's strides for another's or assumes contiguity
    passes (mutants linear.*.x-row-stride-of-w, rms_norm.residual-row-stride-of-x, silu_mul.up-at-half-row,
    rotary.positions-assumed-contiguous, rotary.v-strides-of-k, attention_*.v-strides-of-k ...)."""
    x = _layouts("linear", {"M": 3, "N": 5, "K": 6}, "x", "weight")
    assert {s[0] for s in x} == {(6, 1), (14, 1)} and all(s[1] == (6, 1) for s in x)
    norm = _layouts("rms_norm", {"M": 3, "N": 5}, "x", "residual")
    assert {(5, 1), (13, 1)} == {s[0] for s in norm} and ((13, 1), (29, 1)) in norm
    assert {s for (s,) in _layouts("silu_mul", {"M": 3, "I": 4}, "gu")} == {(8, 1), (16, 1)}
    rotary = _layouts("rotary", {"T": 4, "H": 3, "D": 6}, "q", "k", "v", "k_cache", "v_cache", "cos", "positions")
    assert any(q[:3] != k[:3] and k[:3] != v[:3] for q, k, v, *_ in rotary if v)  # q, k, v: three layouts
    assert any(v != kc and kc for *_, kc, v, _, _ in rotary)  # the caches: two
    assert {cos for *_, cos, _ in rotary} == {(3, 1), (11, 1)}
    assert any(p[0] == 0 for *_, p in rotary if p[1] == 1) and any(p[0] != 0 for *_, p in rotary)
    for kernel, shape, names in (
        ("attention_prefill", {"S": 5, "D": 8, "G": 2}, ("k", "v")),
        ("attention_chunk", {"C": 3, "S": 7, "D": 8, "G": 2}, ("k", "v")),
        ("attention_decode", {"B": 2, "S": 7, "D": 8, "G": 2}, ("k_cache", "v_cache")),
    ):
        kv = _layouts(kernel, shape, *names)
        assert any(k == v for k, v in kv) and any(k[1:] != v[1:] for k, v in kv), kernel
        assert any(k[-2] != 8 for k, _ in kv), kernel  # k's heads padded: a load past D reads NaN


def test_the_attention_records_pad_every_head_short_of_its_block():
    """Planted: with a head dim that is not a power of two (the kernels' block is the next one, masked to D), q, k
    and v are contiguous in half the draws, where a load past a head reads the next head's finite data: a whole
    key block loaded without the head-dim mask passes unless the draw also padded k (mutant
    attention_prefill.even-d-by-sixteen, which the ci profile's examples at D = 48 and 96 missed)."""
    for kernel, shape, names in (
        ("attention_prefill", {"S": 5, "D": 6, "G": 2}, ("q", "k", "v")),
        ("attention_chunk", {"C": 3, "S": 7, "D": 6, "G": 2}, ("q", "k", "v")),
        ("attention_decode", {"B": 2, "S": 7, "D": 6, "G": 2}, ("q", "k_cache", "v_cache")),
    ):
        heads = {tuple(s[-2] for s in draw) for draw in _layouts(kernel, shape, *names)}
        assert heads == {(14, 14, 22)}, (kernel, heads)  # q and k padded by 8, v by 16: NaN past every head


def test_the_attention_records_draw_q_of_other_layouts():
    """Planted: q drawn as the first heads of a fused projection whose heads are D apart (prefill, chunk) or as a
    contiguous [B, Hq, D] tensor (decode): a kernel that takes q's heads as D apart, reads q past its head dim or
    takes its sequences as Hq x D apart passes (mutants attention_prefill.q-head-stride-is-d,
    attention_prefill.q-without-head-dim-mask, attention_decode.q-batch-stride-contiguous)."""
    for kernel, shape in (
        ("attention_prefill", {"S": 5, "D": 8, "G": 2}),
        ("attention_chunk", {"C": 3, "S": 7, "D": 8, "G": 2}),
        ("attention_decode", {"B": 2, "S": 7, "D": 8, "G": 2}),
    ):
        q = [s for (s,) in _layouts(kernel, shape, "q")]
        heads = {s[-2] for s in q}
        assert 8 in heads and 16 in heads, kernel  # heads D apart, and padded with NaN past D
        if kernel == "attention_decode":
            case = harness.build(kernel, "fp16", shape, harness.Values("fp16", "cpu", 0))
            contiguous = case.args["q"].shape[1] * 8
            assert any(s[0] == contiguous for s in q) and any(s[0] != contiguous for s in q)


def test_the_pick_record_draws_tokens_and_state_as_views_and_guards_their_buffers():
    """Planted (round 16): greedy_pick's record built tokens [B, 1] and state [2, B] contiguous, as the engine's
    own: a kernel that takes the state's length row as B after its position row or the tokens as contiguous passes
    (mutants greedy_pick.state-stride-as-rows, greedy_pick.tokens-stride-dropped). Half the draws are views into
    wider buffers now, and the judge holds every element of those buffers beside the views to its drawn value."""
    from conformance.specs import pick

    drawn = set(_layouts("greedy_pick", {"B": 3, "V": 5}, "tokens", "state"))
    assert drawn == {((1, 1), (3, 1)), ((3, 1), (8, 1))}
    for seed in range(8):
        case = harness.build("greedy_pick", "fp16", {"B": 3, "V": 5}, harness.Values("fp16", "cpu", seed))
        state = case.args["state"]
        if state.is_contiguous():
            continue
        beside = pick._beside(state)
        assert beside.numel() == 5 and (beside == pick.UNTOUCHED).all()  # row 0's five columns past B
        torch.as_strided(state, (1,), (1,), storage_offset=state.storage_offset() + 3).fill_(7)  # a store past B
        assert (pick._beside(state) == 7).sum() == 1
        assert pick._beside(case.args["tokens"]).numel() == 4  # two elements between each row and the next
        return
    raise AssertionError("no draw of the first eight seeds took views")


def test_the_rotary_record_draws_every_rope_rule_the_engine_reads():
    """Planted: rotary's tables drawn only unscaled or with Llama-3 scaling, while config.json's linear and dynamic
    rules reach rope_cache too: a linear rule that speeds the frequencies up passes (mutant
    rotary.linear-scaling-inverted)."""
    from conformance.specs import rotary as rotary_record

    rng = __import__("random").Random(0)
    kinds = {(r.rope_scaling or {}).get("rope_type") for r in (rotary_record._draw_rope(rng) for _ in range(400))}
    assert {None, "llama3", "linear", "dynamic"} <= kinds
    dynamic = {"rope_type": "dynamic", "factor": 2.0, "max_positions": 64}
    for scaling in ({"rope_type": "linear", "factor": 4.0}, dynamic):
        cos, sin = ops.rope_cache(8, 10000.0, 64, scaling)
        tables = reference.rope_frequencies(8, 10000.0, 64, scaling)
        angle = torch.arange(64, dtype=torch.float64)[:, None] * tables.inv_freq[None, :]
        assert bounds.ratio(cos, tables.cos, bounds.rope_table(tables.cos, angle=angle, scaling=scaling)) <= 1
    wrong = ops.rope_cache(8, 10000.0, 64, {"rope_type": "linear", "factor": 0.25})[0]  # the factor inverted
    linear = reference.rope_frequencies(8, 10000.0, 64, {"rope_type": "linear", "factor": 4.0})
    angle = torch.arange(64, dtype=torch.float64)[:, None] * linear.inv_freq[None, :]
    scaling = {"rope_type": "linear", "factor": 4.0}
    assert bounds.ratio(wrong, linear.cos, bounds.rope_table(linear.cos, angle=angle, scaling=scaling)) > 1


def test_an_output_of_another_dtype_or_shape_fails_whatever_its_values():
    """Planted: the judge compares values only: a kernel that returns its fp32 result unrounded (or an output of
    another shape that broadcasts) is closer to float64 than any fp16 one and passes (mutants
    rms_norm.fp32-output, silu_mul.fp32-output, attention_decode.fp32-output)."""
    case = harness.build("silu_mul", "fp16", {"M": 3, "I": 4}, harness.Values("fp16", "cpu", 1))
    exact = reference.silu_mul(case.args["gu"])
    config = {"BLOCK_M": 8, "BLOCK_I": 64}
    assert harness.judge(case, (exact.to(torch.float16),), config).ratio <= 1
    unrounded = harness.judge(case, (exact.to(torch.float32),), config)
    assert unrounded.ratio == math.inf and "torch.float32" in unrounded.explanation
    assert harness.judge(case, (exact.to(torch.float16)[:1],), config).ratio == math.inf
    assert harness.judge(case, (), config).ratio == math.inf


def test_a_kernel_that_touches_memory_before_its_pdl_wait_fails_its_check(monkeypatch):
    """Planted: nothing reads the kernels' launch order, and the interpreter runs no PDL: a kernel whose first
    statement is not dependent_launch(PDL) passes every example (mutants rms_norm.wait-dropped,
    silu_mul.wait-dropped, attention_decode.merge-without-wait)."""
    import triton
    import triton.language as tl

    from neurobrix.ops import silu_mul as silu_module
    from neurobrix.ops._common import dependent_launch

    assert all(check.launch_problems(k) == () for k in ops.SPECS)

    @triton.jit
    def early(x_ptr, PDL: tl.constexpr):
        """a docstring is not a statement"""
        tl.load(x_ptr)
        dependent_launch(PDL)

    early.fn.__module__ = silu_module.__name__
    monkeypatch.setattr(silu_module, "_early_kernel", early, raising=False)
    check.launch_problems.cache_clear()
    try:
        (problem,) = check.launch_problems("silu_mul")
        assert "_early_kernel" in problem and "tl.load(x_ptr)" in problem
        entry = Setting(Domain(("fp16",), (("M", 1, 2), ("I", 1, 2))), {"BLOCK_M": 8, "BLOCK_I": 64})
        result = check.check_entry("silu_mul", entry, "fp16", 1, "ci")
        assert not result.passed and "dependent_launch(PDL)" in (result.failure or "")
    finally:
        check.launch_problems.cache_clear()


# ------------------------------------------------------------------------------------- the shapes drawn
def test_edge_values_hold_each_blocks_last_multiple_in_the_range():
    """Planted: strategies.edge_values leaves out the largest multiple of each block size in the range and its
    neighbours ("the same around the top of the range"): a catalogue domain's last full tile and tail."""
    lo, hi = 1, 1000
    edges = set(cs.edge_values(lo, hi))
    for b in cs.BLOCK_SIZES:
        top = hi // b * b
        assert {v for v in (top - 1, top, top + 1) if lo <= v <= hi} <= edges, b


def test_shapes_put_a_settings_own_blocks_among_the_edges():
    """Planted: strategies.shapes ignores per-dimension ``block_sizes`` (a shipped setting's blocks and splits,
    check --shipped's small shapes), drawing only the common block sizes' edges."""
    strategy = cs.shapes({"K": (1, 5000)}, block_sizes={"K": (24,)})
    edges = cs.edge_values(1, 5000, sorted({*cs.BLOCK_SIZES, 24}))
    for value in (23, 25, 47, 49):  # 24 - 1, 24 + 1, 48 - 1, 48 + 1: none an edge of the common block sizes
        assert value in edges
        find(strategy, lambda s, value=value: s["K"] == value, settings=quick(1000))


def test_a_bounded_dimension_is_drawn_to_its_end_whatever_the_cap():
    """Planted: strategies.dims clips bounded dimensions to the cap too (meant for the unbounded ones only): an
    entry's domain would be proven only up to the CPU cap, well short of its end."""
    strategy = cs.shapes({"N": (1, 4096), "S": (1, None)}, cap=64)
    find(strategy, lambda s: s["N"] == 4096, settings=quick())
    find(strategy, lambda s: s["S"] == 64, settings=quick())

    @CI
    @given(strategy)
    def inside(shape):
        assert 1 <= shape["N"] <= 4096 and 1 <= shape["S"] <= 64

    inside()


# ------------------------------------------------------------------------------------ one entry's verdict
def _faked_entry(monkeypatch, ratios=None, fail: Exception | None = None) -> list[tuple]:
    """check_entry with build, run_kernel and judge faked: each example recorded as (shape, kinds, a number the
    seed fixes, ratio), its verdict the next of ``ratios`` (or ``fail`` raised by the kernel)."""
    seen: list[tuple] = []
    cycle = itertools.cycle(ratios or [0.5])

    def build(kernel, dtype, shape, values):
        seen.append([dict(shape), values.kinds, values.rng.getrandbits(32)])
        return harness.Case(kernel, dtype, dict(shape), {}, {})

    def run_kernel(case, config):
        if fail is not None:
            raise fail
        return ()

    def judge(case, outputs, config):
        r = next(cycle)
        seen[-1].append(r)
        return harness.Verdict(r, "", r / 1000)

    monkeypatch.setattr(check, "build", build)
    monkeypatch.setattr(check, "run_kernel", run_kernel)
    monkeypatch.setattr(check, "judge", judge)
    return seen


def _silu_entry() -> Setting:
    return next(e for e in certify_table("silu_mul").entries if "fp32" in e.domain.dtypes)


def certify_table(kernel: str):
    from neurobrix import tables

    return tables.load(REPO / "tables").index("interpreter", kernel)


def test_an_entry_records_its_worst_ratio_over_every_example(monkeypatch):
    """Planted: check.check_entry records the last example's ratio (and relative error) as the entry's worst, not
    the largest: the worst_error_ratio certify writes into a proof came from the wrong example. Also: the number
    of examples asked for (--examples) ignored."""
    seen = _faked_entry(monkeypatch, ratios=[0.875, 0.25, 0.125, 0.5, 0.375])
    result = check.check_entry("silu_mul", _silu_entry(), "fp32", 12, "ci")
    assert result.passed and result.examples == len(seen) == 12
    ratios = [s[-1] for s in seen]
    assert ratios[-1] != max(ratios)  # the worst is not the last: the test can tell them apart
    assert result.worst_ratio == max(ratios) and result.worst_relative == max(ratios) / 1000


def test_an_entry_whose_kernel_raises_fails(monkeypatch):
    """Planted: check.check_entry leaves ``passed`` True when the kernel raises something other than an
    AssertionError (a launch error, a compile error): an entry that never ran counted as passed."""
    _faked_entry(monkeypatch, fail=RuntimeError("the launch failed"))
    result = check.check_entry("silu_mul", _silu_entry(), "fp32", 5, "ci", shrink=False)
    assert not result.passed and not result.out_of_memory
    assert "RuntimeError: the launch failed" in result.failure


def test_the_ci_profile_draws_the_same_examples_every_run_and_every_kind_of_values(monkeypatch):
    """Planted: check.check_entry's settings lose their parent profile (``settings(max_examples=...)``): the ci
    profile's derandomization is gone and two checks of the same tables draw different examples. Also: the value
    kinds narrowed (some kind of values never drawn)."""
    runs = []
    for _ in range(2):
        seen = _faked_entry(monkeypatch)
        assert check.check_entry("silu_mul", _silu_entry(), "fp32", 100, "ci").passed
        runs.append(seen)
    assert runs[0] == runs[1] and len(runs[0]) == 100
    assert {kind for _, kinds, _, _ in runs[0] for kind in kinds} == set(cs.KINDS)


def test_a_shipped_settings_blocks_reach_the_shapes_its_check_draws(monkeypatch):
    """Planted: check.check_entry drops ``small.blocks`` (a shipped setting's own blocks and splits) when it builds
    its shape strategy: check --shipped then lands on and beside them only by chance."""
    seen = _faked_entry(monkeypatch)
    ranges = {"M": (1, 5000), "I": (1, 5000)}
    small = Small(ranges, {"M": (24,), "I": (40,)})
    # a setting run takes (check refuses any other before drawing); the blocks the strategy must reach are small's
    config = {"BLOCK_M": 8, "BLOCK_I": 32, "num_warps": 4}
    entry = Setting(Domain(("fp32",), tuple((d, lo, hi) for d, (lo, hi) in ranges.items())), config)
    assert check.check_entry("silu_mul", entry, "fp32", 150, "ci", small=small).passed
    ms, is_ = {shape["M"] for shape, *_ in seen}, {shape["I"] for shape, *_ in seen}
    assert ms & {23, 25, 47, 49} and is_ & {39, 41, 79, 81}  # beside a block of the setting, not a common one


# ---------------------------------------------------------------------------------------------- certify
def _silu_task() -> certify.Task:
    (task,) = certify.plan("interpreter", ["silu_mul"], ["fp32"])
    return task


@pytest.mark.parametrize("wrong", [0, 1])
def test_screening_judges_every_case(monkeypatch, wrong):
    """Planted: certify.screen returns after judging its first case: a candidate wrong only at the domain's odd
    size below the top passes screening."""
    task = _silu_task()
    cases = certify.screening_cases(task, 0)
    assert len(cases) == 2

    def run_kernel(case, config):
        out = reference.silu_mul(case.args["gu"]).float()
        if case is cases[wrong]:
            out[-1, -1] += 1.0 + 2 * out[-1, -1].abs()
        return (out,)

    monkeypatch.setattr(certify, "run_kernel", run_kernel)
    reason, detail = certify.screen(task, {}, cases)
    assert reason == "wrong_result" and cases[wrong].describe() in detail
    monkeypatch.setattr(certify, "run_kernel", lambda case, config: (reference.silu_mul(case.args["gu"]).float(),))
    assert certify.screen(task, {}, cases) is None  # the honest output passes: the case above failed on its error


def test_a_candidate_that_fails_screening_is_never_a_survivor(monkeypatch):
    """Planted: certify.screen_task keeps every screened candidate as a survivor (timed, proven, possibly
    written) and lists the failing ones as rejected besides."""
    configs = [{"BLOCK_M": 1, "BLOCK_I": n} for n in (16, 32, 64)]
    monkeypatch.setattr(certify.cand, "space", lambda kernel, domain, interpreter: list(configs))

    def screen(task, config, cases):
        return ("wrong_result", "planted") if config["BLOCK_I"] == 32 else None

    monkeypatch.setattr(certify, "screen", screen)
    screened = certify.screen_task("interpreter", _silu_task(), 0)
    assert screened.survivors == [configs[0], configs[2]]
    assert [(c, r) for c, r, _ in screened.rejected] == [(configs[1], "wrong_result")]


def test_a_proof_records_the_domain_it_checked_and_that_checks_results(monkeypatch):
    """Planted: certify.prove_task checks the setting over the domain with its unbounded dimensions stopped at the
    record's caps, yet writes the whole domain into the table; certify.prove_task records the worst relative
    error as the proof's worst_error_ratio."""
    task = _silu_task()
    config = {"BLOCK_M": 4, "BLOCK_I": 64}
    timed = certify.Timed(certify.Screened(task, 0, 1, [config], []), [((5.0, 6.0), config)], [], 0.0)
    checked: list[Setting] = []

    def check_entry(kernel, setting, dtype, examples, profile_name):
        checked.append(setting)
        return check.EntryResult(
            kernel,
            dtype,
            setting.domain.describe(),
            dict(setting.config),
            examples=examples + 4,
            worst_ratio=0.625,
            worst_relative=1e-4,
        )

    monkeypatch.setattr(certify.check, "check_entry", check_entry)
    proven = certify.prove_task("interpreter", timed, 3, "ci")
    (setting,) = checked
    assert setting.domain == task.as_domain == proven.entry.domain and setting.config == config
    assert proven.entry.proof.worst_error_ratio == 0.625 and proven.entry.proof.examples == 7


# --------------------------------------------------------------------------- what a resumed check trusts
VERDICT = (
    "conformance/reference.py",
    "conformance/bounds.py",
    "conformance/harness.py",
    "conformance/strategies.py",
    "conformance/check.py",
    "conformance/shipped.py",
    "neurobrix/buckets.py",
    "neurobrix/tables.py",
    "neurobrix/schema.py",
    "neurobrix/gpu.py",
)


def test_the_fingerprint_covers_every_file_a_verdict_depends_on(tmp_path, monkeypatch):
    """Planted: check.VERDICT_FILES without conformance/bounds.py (or another file a verdict depends on): --resume
    carries over entries passed under other bounds. Each file the check's own docstring names (the kernels, the
    lookup, table format and device classes, the reference, the bounds, the cases, the strategies, this check,
    the shipped settings) changes the fingerprint."""
    for package in ("neurobrix", "conformance"):
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(neurobrix, "__file__", str(tmp_path / "neurobrix" / "__init__.py"))
    monkeypatch.setattr(check, "__file__", str(tmp_path / "conformance" / "check.py"))
    files = [
        *VERDICT,
        *(f"neurobrix/ops/{p.name}" for p in sorted((REPO / "neurobrix" / "ops").glob("*.py"))),
        *(f"conformance/specs/{p.name}" for p in sorted((REPO / "conformance" / "specs").glob("*.py"))),
    ]
    before = check.fingerprint(REPO / "tables", "interpreter")
    for name in files:
        path = tmp_path / name
        text = path.read_text(encoding="utf-8")
        path.write_text(text + "\n# changed\n", encoding="utf-8")
        assert check.fingerprint(REPO / "tables", "interpreter") != before, f"{name} is not in the fingerprint"
        path.write_text(text, encoding="utf-8")
    assert check.fingerprint(REPO / "tables", "interpreter") == before


# ----------------------------------------------------------------------------------------- the re-proof
def test_a_reproof_is_recorded_only_for_a_whole_passing_check(monkeypatch):
    """Planted: reproof.record writes a re-proof for a check that failed; for one that stopped with entries left;
    for one with fewer examples per entry than the ci profile's; for one narrowed by --where."""
    written = []
    monkeypatch.setattr(stack, "certified_stack", lambda class_id, loaded=None: stack.Stack("0.1.0", "0.1.0"))
    monkeypatch.setattr(stack, "compatible", lambda certified, running: False)
    monkeypatch.setattr(stack, "write_reproof", lambda *args: written.append(args) or Path("reproof.json"))
    args = SimpleNamespace(kernel=None, dtype=None, variant=None, where=None, argv=[])
    said: list[str] = []

    def report(passed=True, left=0, examples=None) -> check.Report:
        entry = check.EntryResult("silu_mul", "fp32", "fp32 M=1.., I=1..", {"BLOCK_M": 4}, examples=25, passed=passed)
        return check.Report(
            "interpreter",
            "tables",
            "ci",
            [entry],
            left=left,
            examples_per_entry=reproof.min_examples() if examples is None else examples,
            fingerprint="f" * 64,
        )

    for bad in (report(passed=False), report(left=1), report(examples=reproof.min_examples() - 1)):
        assert reproof.record(bad, args, said.append) is None and not written, check.render(bad)
        assert said[-1].startswith("no re-proof recorded")
    # a check of part of the class, however it was narrowed (--where leaves no entry "left": it was found
    # recording a whole-class re-proof by reading the code, and fixed)
    for narrowed in ({"kernel": ["silu_mul"]}, {"dtype": ["fp32"]}, {"variant": ["tiled"]}, {"where": ["M=5:"]}):
        partial = SimpleNamespace(**{**vars(args), **narrowed})
        assert reproof.record(report(), partial, said.append) is None and not written, narrowed
        assert "only part of the class was checked" in said[-1]
    assert reproof.record(report(), args, said.append) == Path("reproof.json") and len(written) == 1
    assert written[0][3]["passed"] and written[0][3]["examples_per_entry"] >= reproof.min_examples()
