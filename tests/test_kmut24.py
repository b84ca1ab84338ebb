"""Kernel mutants, round kmut24: rounding toward zero, a constexpr switch inverted, a launch grid one too large; and
rotary's tables ending at the last position drawn.

Planted in the kernels least planted so far (one edit each) and run against the interpreter check: silu_mul's
output, rms_norm's output and residual stream, rotary's first half and the flash kernel's output (a chunk) each
rounded to their dtype toward zero instead of to nearest (``fp_downcast_rounding="rtz"``); the flash kernel's EVEN_D
switch, rms_norm's HAS_RESIDUAL and rotary's CACHE each inverted; rotary's grid one token too long, greedy_pick's one
part too long and the flash kernel's one query block too long. Each is caught and joins the registry; below, each is
shown computing other values than today's kernel on one small fp16 call (or refused by it). Two compute the same
values (shown bit for bit): silu_mul's and rms_norm's grids one row block too long (every lane of it masked).

rotary's cos mask made inclusive (round kmut23) reads one lane past a position's row of cos and sin, unused but past
the table at its last row, and was caught only at a late shipped entry: the record drew its table as long as the
positions' room (a cache's capacity) or 8,192 rows longer, and a drawn position sat on its last row only where a
cache's run was drawn to end at the capacity. Those tables now end at the last position drawn (the engine's table at
a context its generation reaches): half the examples hold a position on the table's last row.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest
import torch

from conformance import harness, mutants
from conformance.specs import rotary as spec_rotary
from neurobrix.ops import attention, pick, rms_norm, rotary, silu_mul

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = {m.id: m for m in mutants.MUTANTS}

CAUGHT = (
    "silu_mul.output-rounded-toward-zero",
    "rms_norm.output-rounded-toward-zero",
    "rms_norm.stream-rounded-toward-zero",
    "rotary.first-half-rounded-toward-zero",
    "attention_chunk.output-rounded-toward-zero",
    "attention_chunk.even-d-inverted",
    "rms_norm.residual-switch-inverted",
    "rotary.cache-switch-inverted",
    "rotary.grid-one-token-too-many",
    "greedy_pick.grid-one-part-too-many",
    "attention_chunk.grid-one-query-block-too-many",
)
NEW_CLASSES = ("wrong rounding mode", "constexpr switch inverted", "launch grid one too large")
# equivalent (not in the registry): file, old, new
EQUIVALENT = {
    "silu_mul.grid-one-row-block-too-many": (
        "neurobrix/ops/silu_mul.py",
        '    programs = (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(I, meta["BLOCK_I"]))\n',
        '    programs = (triton.cdiv(M, meta["BLOCK_M"]) + 1, triton.cdiv(I, meta["BLOCK_I"]))\n',
    ),
    "rms_norm.grid-one-row-block-too-many": (
        "neurobrix/ops/rms_norm.py",
        '    programs = (triton.cdiv(M, meta["BLOCK_M"]),)\n',
        '    programs = (triton.cdiv(M, meta["BLOCK_M"]) + 1,)\n',
    ),
}


def _planted(tmp_path: Path, mutant: mutants.Mutant | tuple[str, str, str]):
    """The op module from a patched copy, imported under its own name, not put in sys.modules."""
    file, old, new = (mutant.file, mutant.old, mutant.new) if isinstance(mutant, mutants.Mutant) else mutant
    text = (ROOT / file).read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    copy = tmp_path / Path(file).name
    copy.write_text(text.replace(old, new), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(file.removesuffix(".py").replace("/", "."), copy)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_plants_are_registered_and_anchored():
    chosen = [REGISTRY[p] for p in CAUGHT]
    assert mutants.anchor_problems(chosen) == []
    assert not any(m.fast for m in chosen)
    assert {m.bug for m in chosen} == set(NEW_CLASSES)
    # classes new to the registry this round: no earlier plant holds one
    assert all(REGISTRY[m.id] in chosen for m in mutants.MUTANTS if m.bug in NEW_CLASSES)
    assert not set(EQUIVALENT) & set(REGISTRY)  # an equivalent would survive every run


# plant -> (the op's function, its config): one call where the plant must show
CALLS = {
    "silu_mul.output-rounded-toward-zero": ("silu_mul", {"BLOCK_M": 8, "BLOCK_I": 64, "num_warps": 4}),
    "rms_norm.output-rounded-toward-zero": ("rms_norm", {"BLOCK_M": 4, "num_warps": 4}),
    "rms_norm.stream-rounded-toward-zero": ("rms_norm", {"BLOCK_M": 4, "num_warps": 4}),
    "rms_norm.residual-switch-inverted": ("rms_norm", {"BLOCK_M": 4, "num_warps": 4}),
    "rotary.first-half-rounded-toward-zero": ("rotary", {"BLOCK_H": 4, "num_warps": 4}),
    "rotary.cache-switch-inverted": ("rotary", {"BLOCK_H": 4, "num_warps": 4}),
    "rotary.grid-one-token-too-many": ("rotary", {"BLOCK_H": 4, "num_warps": 4}),
    "attention_chunk.output-rounded-toward-zero": (
        "attention_chunk",
        {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2},
    ),
    "attention_chunk.even-d-inverted": (
        "attention_chunk",
        {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2},
    ),
    "greedy_pick.grid-one-part-too-many": ("greedy_pick", {"BLOCK_V": 64, "num_warps": 4}),
    "attention_chunk.grid-one-query-block-too-many": (
        "attention_chunk",
        {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2},
    ),
}


def _arguments(function: str, plant: str) -> tuple:
    """The call's arguments in fp16 (where rounding toward zero and to nearest differ; the interpreter's bf16 cast
    rounds every way alike), each tensor inside NaN guards, some views with NaN padding after each row."""
    g = torch.Generator().manual_seed(24)
    if function == "silu_mul":
        return (harness.padded((torch.randn(5, 90, generator=g) * 4).half(), 8, "cpu"),)
    if function == "rms_norm":
        x = harness.padded((torch.randn(5, 45, generator=g) * 4).half(), 8, "cpu")
        w = harness.guarded(torch.randn(45, generator=g).half(), "cpu")
        if plant == "rms_norm.residual-switch-inverted":  # no residual: the switch taken, x added to itself and
            # normalised (2x's mean square against eps: rows near eps, as a quarter of the record's draws are)
            return harness.padded((torch.randn(5, 45, generator=g) * 2**-9).half(), 8, "cpu"), w, 1e-6
        return x, w, 1e-6, harness.padded(torch.randn(5, 45, generator=g).half(), 8, "cpu")
    if function == "rotary":  # 2 sequences of 3 tokens at their own positions, a table of 8 rows
        q, k = torch.randn(2, 3, 4, 12, generator=g).half(), torch.randn(2, 3, 2, 12, generator=g).half()
        cos, sin = rotary.rope_cache(12, 10000.0, 8)
        positions = torch.tensor([[0, 1, 2], [5, 6, 7]])
        args = (
            harness.guarded(q, "cpu"),
            harness.guarded(k, "cpu"),
            harness.guarded(cos, "cpu"),
            harness.guarded(sin, "cpu"),
            positions,
        )
        if plant == "rotary.cache-switch-inverted":  # a cache of 8 positions: the switch skips the append
            nan = torch.full((2, 8, 2, 12), math.nan, dtype=torch.float16)
            return args, {
                "v": harness.guarded(torch.randn(2, 3, 2, 12, generator=g).half(), "cpu"),
                "k_cache": harness.guarded(nan, "cpu"),
                "v_cache": harness.guarded(nan, "cpu"),
            }
        return args
    if function == "attention_chunk":  # a chunk of 20 queries over 40 keys, D 24 in a block of 32, rows padded
        q = torch.randn(1, 20, 2, 24, generator=g).half()
        k, v = torch.randn(1, 40, 1, 24, generator=g).half(), torch.randn(1, 40, 1, 24, generator=g).half()
        return harness.padded(q, 8, "cpu"), harness.padded(k, 8, "cpu"), harness.padded(v, 8, "cpu"), 0.2
    logits = harness.padded(torch.randn(3, 300, generator=g), 8, "cpu")  # 3 rows of 5 parts each
    return logits, torch.zeros(3, 1, dtype=torch.int64), torch.zeros(2, 3, dtype=torch.int64)


def _run(module, plant: str):
    """The outputs of one call on NaN-poisoned, guarded allocations under the check's memory guards, or the exception
    it (or a guard) raised."""
    function, config = CALLS[plant]
    args = _arguments(function, plant)
    args, kwargs = args if isinstance(args[-1], dict) else (args, {})
    allocations = harness.Allocations()
    try:
        with harness.memory_guarded():  # every lane a load or store takes must address an argument's element
            extra = {"counters": {}} if function == "greedy_pick" else {}
            out = getattr(module, function)(*args, **kwargs, config=config, empty=allocations.empty, **extra)
        guarded = [*args, *kwargs.values()]
        for check in [*allocations.checks, *(t.check_guards for t in guarded if hasattr(t, "check_guards"))]:
            check()
    except Exception as e:  # noqa: BLE001  # what the check would report: a guard overrun, an error
        return type(e).__name__
    return out


def _module_of(file: str):
    modules = (attention, pick, rms_norm, rotary, silu_mul)
    return {m.__name__.rsplit(".", 1)[1]: m for m in modules}[Path(file).stem]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's note of NaN met inside an interpreted plant
@pytest.mark.parametrize("plant", sorted(CALLS))
def test_each_plant_changes_what_one_call_computes(plant, tmp_path):
    """Each registered plant, on one small fp16 call where it must show (a head dim short of its block in views
    whose rows are padded with NaN, a table's last row, rows of several parts): an exception or a guard overrun, or
    other values than today's kernel computes there."""
    mutant = REGISTRY[plant]
    today = _run(_module_of(mutant.file), plant)
    assert isinstance(today, (torch.Tensor, tuple)), today
    planted = _run(_planted(tmp_path, mutant), plant)
    if isinstance(planted, str):
        return
    pairs = zip(planted, today, strict=True) if isinstance(today, tuple) else [(planted, today)]
    assert not all(torch.equal(a, b) for a, b in pairs), plant


def test_rotary_tables_end_at_the_last_position_drawn_in_half_the_cases():
    """The record's table is as long as the positions need (its last row the last position drawn), or 8,192 rows
    past that; with the positions' room (a cache's capacity) as the table's length, a position sat on its last row only
    where a cache's run was drawn to end at the capacity."""
    ends = []
    for seed in range(40):
        case = harness.build("rotary", "fp16", {"T": 6, "H": 3, "D": 20}, harness.Values("fp16", "cpu", seed))
        rows, last = case.args["cos"].shape[0], int(case.args["positions"].max())
        assert rows == case.note["table_rows"] and rows > last
        assert rows == last + 1 or rows > last + 8192, (seed, rows, last)
        ends.append(rows == last + 1)
    assert 15 <= sum(ends) <= 25  # about half


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_rotary_cos_mask_inclusive_reads_past_a_drawn_table(tmp_path):
    """rotary.cos-mask-inclusive on the first drawn case whose half (10) is short of its block (16) and whose table
    ends at its last position: one lane read past the table, which the check's memory guard refuses; today's kernel
    passes the same call."""
    planted = _planted(tmp_path, REGISTRY["rotary.cos-mask-inclusive"])
    for seed in range(40):
        case = harness.build("rotary", "fp16", {"T": 6, "H": 3, "D": 20}, harness.Values("fp16", "cpu", seed))
        if case.args["cos"].shape[0] == int(case.args["positions"].max()) + 1:
            break
    else:
        pytest.fail("no drawn table ends at its last position")
    config = {"BLOCK_H": 4, "num_warps": 4}
    with harness.memory_guarded():
        rotary.rotary(**case.args, config=config)
        spec_rotary.reset(case)  # a case rotated in place starts from its draw again
        with pytest.raises(Exception, match="out-of-bounds read in _rotary_kernel"):
            planted.rotary(**case.args, config=config)


@pytest.mark.parametrize("plant", sorted(EQUIVALENT))
def test_each_equivalent_computes_the_same_bits(plant, tmp_path):
    """A row block past the last: every lane of it masked (rows past M), so it loads and stores nothing; shown in
    fp16 and bf16 with rows short of their block and columns past a block's end, rms_norm with and without a
    residual, on guarded allocations under the memory guards (a store or load of the extra block would show)."""
    planted = _planted(tmp_path, EQUIVALENT[plant])
    g = torch.Generator().manual_seed(7)
    for dtype in (torch.float16, torch.bfloat16):
        with harness.memory_guarded():
            if plant.startswith("silu_mul"):
                gu = harness.padded((torch.randn(5, 90, generator=g) * 4).to(dtype), 8, "cpu")
                config = {"BLOCK_M": 4, "BLOCK_I": 32, "num_warps": 4}
                allocations = harness.Allocations()
                got = planted.silu_mul(gu, config=config, empty=allocations.empty)
                for check in allocations.checks:
                    check()
                assert torch.equal(got, silu_mul.silu_mul(gu, config=config)), dtype
                continue
            x, r = (harness.padded(torch.randn(5, 45, generator=g).to(dtype), 8, "cpu") for _ in range(2))
            w = torch.randn(45, generator=g).to(dtype)
            config = {"BLOCK_M": 4, "num_warps": 4}
            for extra in ((), (r,)):
                allocations = harness.Allocations()
                got = planted.rms_norm(x, w, 1e-6, *extra, config=config, empty=allocations.empty)
                want = rms_norm.rms_norm(x, w, 1e-6, *extra, config=config)
                for check in allocations.checks:
                    check()
                pairs = zip(got, want, strict=True) if extra else [(got, want)]
                assert all(torch.equal(a, b) for a, b in pairs), (dtype, bool(extra))
