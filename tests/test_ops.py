"""The Triton ops on the interpreter, fp32 and fp16, against float64 under their derived bounds.

Shapes are the odd ones: 1, primes, non-multiples of every block size in the fixture settings, the
largest head dims, short and long sequences, GQA ratios 1, 4, 7, 8. Outputs are allocated by the
launchers, through the harness's allocator, inside NaN guard regions and inputs sit inside NaN guard
regions, so an out-of-bounds store or load is caught. Settings are test fixtures (tests/kernel_tables.py),
handed to the launchers as certify and the engine's plan do.
"""

from __future__ import annotations

import functools

import pytest
import torch
import triton
import triton.language as tl
from kernel_tables import CONFIGS, fixture_config

from conformance import harness
from conformance.strategies import GuardBandError
from neurobrix import ops
from neurobrix.errors import InvalidInputError


class FixtureOps:
    """Each op's launcher with the fixture setting of its last (widest) fixture entry."""

    def __getattr__(self, name):
        return functools.partial(ops.SPECS[name].launch, config=CONFIGS[name][-1][1])


TRITON = FixtureOps()


def conforms(kernel, dtype, config=None, seed=0, **shape):
    config = config or fixture_config(kernel, shape)
    case = harness.build(kernel, dtype, shape, harness.Values(dtype, "cpu", seed))
    verdict = harness.judge(case, harness.run_kernel(case, config), config)
    assert verdict.ratio <= 1, f"{case.describe()}\n{verdict.explanation}"
    return verdict.ratio


DTYPES = ["fp32", "fp16"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "M, N, K", [(1, 1, 1), (1, 70, 45), (3, 33, 65), (4, 97, 31), (5, 1, 7), (37, 70, 45), (64, 64, 64), (67, 131, 97)]
)
def test_linear(dtype, M, N, K):
    conforms("linear", dtype, M=M, N=N, K=K)


SKINNY = {
    "variant": "skinny",
    "BLOCK_M": 16,
    "BLOCK_N": 32,
    "BLOCK_K": 32,
    "SPLIT_K": 1,
    "num_warps": 4,
    "num_stages": 2,
}


@pytest.mark.parametrize(
    "variant, split_k, merge",
    [("gemv", 1, None), ("gemv", 3, None), ("gemv", 3, "last"), ("skinny", 1, None), ("skinny", 3, None),
     ("skinny", 3, "last"), ("tiled", None, None)],
)  # fmt: skip
def test_linear_every_variant_at_every_m(variant, split_k, merge):
    """Each variant on its own must serve any M (certify may pick any for a bucket); split-K too (the
    skinny variant's rows beyond one BLOCK_M tile at M = 17), with either merge of the partial sums."""
    config = dict({"gemv": CONFIGS["linear"][0][1], "skinny": SKINNY, "tiled": CONFIGS["linear"][1][1]}[variant])
    if split_k is not None:
        config["SPLIT_K"] = split_k
    if merge is not None:
        config["MERGE"] = merge
    for M in (1, 2, 17):
        conforms("linear", "fp16", config, M=M, N=50, K=77)


@pytest.mark.parametrize("variant", ["gemv", "skinny"])
def test_linear_merge_by_the_last_program_is_the_merge_kernels_sum_bit_for_bit(variant):
    """MERGE "last" sums the same partials in the same order as the merge kernel: equal bits, on every launch
    (each tile's counter is back at zero after each launch, or a second launch would store nothing)."""
    from neurobrix.ops.linear import _COUNTERS

    config = dict(CONFIGS["linear"][0][1] if variant == "gemv" else SKINNY, SPLIT_K=3)
    generator = torch.Generator().manual_seed(0)
    for M, N, K, bias in ((1, 40, 200, False), (3, 70, 130, True)):
        x, w = (torch.randn(shape, generator=generator).half() for shape in ((M, K), (N, K)))
        b = torch.randn(N, generator=generator).half() if bias else None
        by_kernel = ops.SPECS["linear"].launch(x, w, b, config=config)
        for _ in range(2):
            # poisoned outputs: a launch that stored nothing cannot pass for a right one
            poisoned = functools.partial(torch.full, fill_value=float("nan"))
            assert torch.equal(
                ops.SPECS["linear"].launch(x, w, b, config={**config, "MERGE": "last"}, empty=poisoned), by_kernel
            )
        assert not _COUNTERS[x.device].any()
    with pytest.raises(InvalidInputError, match="MERGE 'first'; one of kernel, last"):
        ops.SPECS["linear"].launch(x, w, b, config={**config, "MERGE": "first"})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("M, N", [(1, 1), (1, 2048), (3, 100), (7, 896), (13, 333)])
def test_rms_norm(dtype, M, N):
    for seed in (0, 1):  # the harness adds a residual or not at random: both paths
        conforms("rms_norm", dtype, seed=seed, M=M, N=N)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T, H, D", [(1, 2, 2), (5, 9, 64), (6, 12, 128), (7, 40, 128), (3, 3, 6)])
def test_rotary(dtype, T, H, D):
    conforms("rotary", dtype, T=T, H=H, D=D)


def cached_rotary_case(dtype, **shape):
    """A rotary case drawn with the KV-cache append (the engine's call)."""
    for seed in range(40):
        case = harness.build("rotary", dtype, shape, harness.Values(dtype, "cpu", seed))
        if case.note["cache"] and int(case.args["positions"][0, 0]) > 0:  # a cache row is not a token index
            return case
    raise AssertionError("no cached rotary case in 40 seeds")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T, H, D", [(1, 2, 2), (6, 7, 64), (9, 12, 128)])
def test_rotary_appends_k_and_v_to_the_cache(dtype, T, H, D):
    case = cached_rotary_case(dtype, T=T, H=H, D=D)
    outputs = harness.run_kernel(case, fixture_config(case.kernel, case.shape))
    assert outputs[1] is case.args["k_cache"]
    assert harness.judge(case, outputs, CONFIGS["rotary"][-1][1]).ratio <= 1


def test_a_cache_row_written_outside_the_positions_is_caught():
    case = cached_rotary_case("fp32", T=4, H=3, D=8)
    outputs = harness.run_kernel(case, fixture_config(case.kernel, case.shape))
    assert harness.judge(case, outputs, {}).ratio <= 1
    free = [p for p in range(case.args["k_cache"].shape[1]) if p not in case.args["positions"][0].tolist()]
    if free:  # a stray row of k
        case.args["k_cache"][0, free[0]] = 0.0
        assert harness.judge(case, outputs, {}).ratio == float("inf")
    case = cached_rotary_case("fp32", T=4, H=3, D=8)
    outputs = harness.run_kernel(case, fixture_config(case.kernel, case.shape))
    case.args["v_cache"][0, int(case.args["positions"][0, 0]), 0, 0] += 1.0  # v not copied exactly
    assert harness.judge(case, outputs, {}).ratio == float("inf")


def test_a_store_past_the_end_of_a_cache_is_caught():
    case = cached_rotary_case("fp32", T=4, H=3, D=8)
    cache = case.args["v_cache"]
    past = torch.as_strided(cache, (1,), (1,), cache.storage_offset() + cache.numel())
    past.fill_(0.0)  # what a store one element past the cache would leave in its guard band
    with pytest.raises(GuardBandError, match="after its end"):
        harness.run_kernel(case, fixture_config(case.kernel, case.shape))


def test_rotary_cache_needs_all_three_and_matching_shapes():
    cos, sin = ops.rope_cache(8, 10000.0, 16)
    q, k = torch.randn(1, 2, 2, 8), torch.randn(1, 2, 1, 8)
    positions = torch.arange(2)[None]
    with pytest.raises(InvalidInputError, match="takes v, k_cache and v_cache together"):
        TRITON.rotary(q, k, cos, sin, positions, k_cache=torch.empty(1, 16, 1, 8))
    with pytest.raises(InvalidInputError, match="k_cache"):
        TRITON.rotary(
            q,
            k,
            cos,
            sin,
            positions,
            v=torch.randn(1, 2, 1, 8),
            k_cache=torch.empty(1, 16, 2, 8),
            v_cache=torch.empty(1, 16, 2, 8),
        )


def test_rotary_in_place_matches_out_of_place():
    cos, sin = ops.rope_cache(64, 10000.0, 32)
    qkv = torch.randn(2, 5, 8 + 2 + 2, 64)
    positions = torch.randint(0, 32, (2, 5))
    q, k = qkv[:, :, :8], qkv[:, :, 8:10]
    q_out, k_out = TRITON.rotary(q, k, cos, sin, positions)
    q_in, k_in = TRITON.rotary(q, k, cos, sin, positions, inplace=True)
    assert q_in.data_ptr() == q.data_ptr() and torch.equal(q_in, q_out) and torch.equal(k_in, k_out)
    assert torch.equal(qkv[:, :, 8:10], k_out)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("M, I", [(1, 1), (2, 63), (9, 300), (33, 97)])
def test_silu_mul(dtype, M, I):
    conforms("silu_mul", dtype, M=M, I=I)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("S, D, G", [(1, 64, 1), (17, 64, 4), (40, 128, 7), (33, 72, 8), (5, 16, 3)])
def test_attention_prefill(dtype, S, D, G):
    conforms("attention_prefill", dtype, S=S, D=D, G=G)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("B, S, D, G", [(1, 1, 64, 1), (3, 50, 64, 4), (2, 97, 128, 7), (4, 33, 128, 8)])
def test_attention_decode(dtype, B, S, D, G):
    for seed in (0, 1):  # filled lengths drawn from 1, the capacity, and between
        conforms("attention_decode", dtype, seed=seed, B=B, S=S, D=D, G=G)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("B, V", [(1, 1), (1, 64), (2, 65), (3, 129), (5, 300), (8, 1200)])
def test_greedy_pick(dtype, B, V):
    for seed in range(3):  # ties, NaN, infinities, rows of -inf, the last place: drawn per row
        conforms("greedy_pick", dtype, seed=seed, B=B, V=V)


def test_greedy_pick_takes_argmax_rule_at_every_edge_and_moves_the_state():
    """The first of tied values, the first NaN before any number (+inf included), index 0 of a row of -inf, the
    last place; parts of 64 so that each edge also falls across parts; the state moved on by one, the counters
    left at zero for the next launch (a second launch picks again)."""
    x = torch.randn(6, 200)
    x[0, 70] = x[0, 150] = 9.0  # a tie across parts
    x[1, 130], x[1, 10], x[1, 190] = float("nan"), float("inf"), float("nan")  # NaN after +inf: the NaN
    x[2] = float("-inf")
    x[3, 199] = 9.0  # the last place
    x[4, 63], x[4, 64] = 9.0, 9.0  # a tie at a part's end and the next part's start
    x[5, 0] = float("nan")
    want = torch.tensor([70, 130, 0, 199, 63, 0])
    assert torch.equal(torch.from_numpy(x.numpy().argmax(-1)), want)  # NumPy's rule, the reference's
    tokens, state = torch.full((6, 1), -1), torch.tensor([[5] * 6, [6] * 6])
    for launch in (1, 2):
        TRITON.greedy_pick(x, tokens, state)
        moved = torch.tensor([[5 + launch] * 6, [6 + launch] * 6])
        assert torch.equal(tokens[:, 0], want) and torch.equal(state, moved)
    ops.TORCH.greedy_pick(x, tokens, state)
    assert torch.equal(tokens[:, 0], want) and state[0, 0] == 8


def test_greedy_pick_refuses_what_it_cannot_pick_by_name():
    x, tokens, state = torch.randn(2, 100), torch.zeros(2, 1, dtype=torch.long), torch.zeros(2, 2, dtype=torch.long)
    with pytest.raises(InvalidInputError, match="state must have shape"):
        TRITON.greedy_pick(x, tokens, torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(InvalidInputError, match="tokens must be int64"):
        TRITON.greedy_pick(x, tokens.int(), state)
    with pytest.raises(InvalidInputError, match="1 to 16777216 values"):
        ops.SPECS["greedy_pick"].key_of(torch.empty(1, 0), tokens[:1], torch.zeros(2, 1, dtype=torch.long))


# -- the torch backend: same signatures, same results -----------------------------------------------

TORCH_TOLERANCE = {"fp32": 1e-5, "fp16": 4e-3}  # relative to the largest output; PyTorch's order of operations


@pytest.mark.parametrize(
    "kernel, shape",
    [
        ("linear", dict(M=5, N=33, K=70)),
        ("rms_norm", dict(M=3, N=100)),
        ("rotary", dict(T=6, H=5, D=64)),
        ("silu_mul", dict(M=4, I=50)),
        ("attention_prefill", dict(S=19, D=64, G=4)),
        ("attention_decode", dict(B=3, S=40, D=64, G=7)),
    ],
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_backend_agrees(kernel, shape, dtype):
    case = harness.build(kernel, dtype, shape, harness.Values(dtype, "cpu", 3))
    ours = harness.run_kernel(case, fixture_config(case.kernel, case.shape))
    args = dict(case.args)
    if kernel == "rotary" and case.args.get("k_cache") is not None:  # its own caches, not the ones just written
        args.update(
            k_cache=torch.full_like(case.args["k_cache"], float("nan")),
            v_cache=torch.full_like(case.args["v_cache"], float("nan")),
        )
    if kernel == "attention_decode":  # SDPA multiplies masked positions by 0: the engine's cache there is 0, not NaN
        args.update(k_cache=case.args["k_cache"].nan_to_num(0.0), v_cache=case.args["v_cache"].nan_to_num(0.0))
    theirs = getattr(ops.TORCH, kernel)(**args)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype
        assert torch.equal(a.isnan(), b.isnan())  # a cache: the same rows written, the rest left NaN
        a, b = a.nan_to_num(0.0), b.nan_to_num(0.0)
        scale = b.double().abs().max().clamp_min(1e-30)
        assert ((a.double() - b.double()).abs().max() / scale) <= _torch_tolerance(case, dtype)


def _torch_tolerance(case, dtype: str) -> float:
    """TORCH_TOLERANCE, or where the case put a query's scores far below zero (kernel-mutant round 8's draws: at most
    -(FAR_BELOW + the largest drawn score)), what each backend's one fp32 rounding of such a score may move the
    softmax by: the scores' differences carry about 2**-24 of the scores' size each, twice (both backends), and a
    weight exp(s - max) moves by that much relative (2 x 9,216 x 2**-24 = 1.1e-3 of the output)."""
    if "far below" not in case.note:
        return TORCH_TOLERANCE[dtype]
    from conformance.specs.attention import FAR_BELOW

    return max(TORCH_TOLERANCE[dtype], 2 * (FAR_BELOW + 1024) * 2.0**-24)


# -- guard bands catch what the interpreter does not -----------------------------------------------


@triton.jit
def _overrunning_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(src_ptr + offs, mask=offs < n, other=0.0)
    tl.store(dst_ptr + offs, x, mask=offs < n + 1)  # planted bug: one element past the end


def test_guard_bands_catch_an_out_of_bounds_store():
    src = torch.ones(10)
    allocations = harness.Allocations()
    dst = allocations.empty((10,), dtype=torch.float32, device="cpu")
    _overrunning_copy[(1,)](src, dst, 10, BLOCK=16)
    with pytest.raises(GuardBandError, match=r"1 after its end \(offsets \+\[0\]\)"):
        for check in allocations.checks:
            check()


def test_guard_regions_take_a_whole_block_of_rows():
    """A store without its row mask writes up to BLOCK_M - 1 whole rows past a short output: all of it
    lands in the guard region (nothing else is overwritten), and the check names it."""
    assert harness.guard_size((3, 300), "cpu") >= 127 * 300 + 64
    assert harness.guard_size((1,), "cpu") >= 64


@triton.jit
def _overreading_sum(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(src_ptr + offs, mask=offs < n + 1, other=0.0)  # planted bug: reads one element too many
    tl.store(dst_ptr, tl.sum(x, axis=0))


def test_an_out_of_bounds_load_shows_up_as_nan():
    src = harness.guarded(torch.ones(10), "cpu")
    dst = torch.zeros(1)
    _overreading_sum[(1,)](src, dst, 10, BLOCK=16)
    assert torch.isnan(dst).all()


# -- bad input: a clear error naming the argument, before any launch ---------------------------------


def test_wrong_dtype_names_the_argument():
    with pytest.raises(InvalidInputError, match=r"linear: x has dtype torch.float64"):
        TRITON.linear(torch.ones(2, 3, dtype=torch.float64), torch.ones(4, 3, dtype=torch.float64))
    with pytest.raises(InvalidInputError, match=r"linear: weight has dtype torch.float16 but x has torch.float32"):
        TRITON.linear(torch.ones(2, 3), torch.ones(4, 3, dtype=torch.float16))


def test_mismatched_shapes_name_the_argument():
    with pytest.raises(InvalidInputError, match=r"linear: weight must have shape \[\?, 3\]"):
        TRITON.linear(torch.ones(2, 3), torch.ones(4, 5))
    with pytest.raises(InvalidInputError, match=r"rms_norm: residual must have shape \[2, 3\]"):
        TRITON.rms_norm(torch.ones(2, 3), torch.ones(3), 1e-5, residual=torch.ones(3, 3))
    with pytest.raises(InvalidInputError, match=r"silu_mul: gu's last dimension must be even"):
        TRITON.silu_mul(torch.ones(2, 5))


def test_non_contiguous_last_dimension_is_refused():
    x = torch.ones(3, 4).T
    with pytest.raises(InvalidInputError, match=r"linear: x must be contiguous in its last dimension"):
        TRITON.linear(x, torch.ones(2, 3))


def test_gqa_ratio_must_divide():
    q, kv = torch.ones(1, 4, 6, 64), torch.ones(1, 4, 4, 64)
    with pytest.raises(InvalidInputError, match=r"q heads \(6\) must be a multiple of kv heads \(4\)"):
        TRITON.attention_prefill(q, kv, kv, 0.125)


def test_odd_head_dim_is_refused_by_rotary():
    cos, sin = torch.ones(4, 2), torch.ones(4, 2)
    with pytest.raises(InvalidInputError, match="head dim must be even"):
        TRITON.rotary(torch.ones(1, 1, 2, 5), torch.ones(1, 1, 1, 5), cos, sin, torch.zeros(1, 1, dtype=torch.long))


def test_cpu_tensors_without_the_interpreter(monkeypatch):
    monkeypatch.setattr("neurobrix.ops._common.INTERPRETER", False)
    with pytest.raises(InvalidInputError, match=r"x is on cpu; the triton backend runs on a GPU .*--backend torch"):
        TRITON.linear(torch.ones(2, 3), torch.ones(4, 3))


def test_no_hard_coded_settings_in_the_ops():
    """Every meta-parameter a launcher passes comes from the certified config (or is derived from the
    shape, like a row rounded up to a power of two): the fixture configs are the only numbers."""
    import importlib
    import inspect
    import re

    for name in ("linear", "rms_norm", "rotary", "silu_mul", "attention"):
        source = inspect.getsource(importlib.import_module(f"neurobrix.ops.{name}"))
        assert not re.search(r"\b(BLOCK_[A-Z]+|num_warps|num_stages|SPLITS|GROUP_M)\s*=\s*\d", source), name


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("M, N, K", [(1, 8, 8), (37, 72, 96), (70, 40, 136)])
def test_linear_tma_variant(dtype, M, N, K):
    """The persistent TMA variant: descriptors zero-fill and clip the ragged edges (M, N, K not
    multiples of the tiles), bias or not; rows must be 16-byte aligned (K, N multiples of 8 here)."""
    config = {
        "variant": "tma",
        "BLOCK_M": 32,
        "BLOCK_N": 32,
        "BLOCK_K": 32,
        "GROUP_M": 2,
        "num_warps": 4,
        "num_stages": 2,
    }
    for seed in (0, 1):
        conforms("linear", dtype, config, seed=seed, M=M, N=N, K=K)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("split_k, subtile", [(1, 0), (1, 1), (2, 0), (3, 0)])
def test_linear_tma_split_variant(dtype, split_k, subtile):
    """tma_split: a tile's K range in SPLIT_K slices (the last ones partial or past K: zero-filled), their
    fp32 partials merged by the last slice to arrive; SPLIT_K 1 stores the tile, whole or in halves."""
    config = {
        "variant": "tma_split",
        "BLOCK_M": 32,
        "BLOCK_N": 32,
        "BLOCK_K": 32,
        "GROUP_M": 2,
        "SPLIT_K": split_k,
        "SUBTILE": subtile,
        "WARP_SPECIALIZE": False,
        "num_warps": 4,
        "num_stages": 2,
    }
    # 70 rows: three row blocks, two groups; 40 columns: a partial column block; K 200: seven steps, the last
    # partial, so slices of 4 and 3 steps (2 splits) or 3, 3 and 1 (3 splits)
    conforms("linear", dtype, config, seed=split_k, M=70, N=40, K=200)


def test_linear_tma_variant_refuses_unaligned_rows():
    config = {
        "variant": "tma",
        "BLOCK_M": 32,
        "BLOCK_N": 32,
        "BLOCK_K": 32,
        "GROUP_M": 2,
        "num_warps": 4,
        "num_stages": 2,
    }
    x, w = torch.randn(3, 20, dtype=torch.float16), torch.randn(16, 20, dtype=torch.float16)
    with pytest.raises(InvalidInputError, match="'tma' variant needs 16-byte aligned rows, but x has row stride 20"):
        ops.SPECS["linear"].launch(x, w, config=config)


def test_a_setting_without_a_known_variant_or_parameter_is_refused():
    with pytest.raises(InvalidInputError, match="names no known variant"):
        ops.SPECS["linear"].launch(torch.ones(2, 3), torch.ones(4, 3), config={"BLOCK_N": 16})
    with pytest.raises(InvalidInputError, match="silu_mul: setting .* lacks BLOCK_I"):
        ops.SPECS["silu_mul"].launch(torch.ones(2, 4), config={"BLOCK_M": 4})


@pytest.mark.parametrize(
    "kernel, shape",
    [
        ("linear", dict(M=5, N=33, K=70)),
        ("rms_norm", dict(M=3, N=100)),
        ("rotary", dict(T=6, H=5, D=64)),
        ("silu_mul", dict(M=4, I=50)),
        ("attention_prefill", dict(S=19, D=64, G=4)),
        ("attention_decode", dict(B=3, S=40, D=64, G=7)),
        ("greedy_pick", dict(B=3, V=200)),
    ],
)
def test_declared_outputs_and_keys_match_the_launchers(kernel, shape):
    """A recorded forward pass continues on each op's declared outputs and lists each call's key: both must
    be what the launcher really does (shapes and dtypes; the key of the shape the case was built for)."""
    for seed in range(4):  # the cases vary bias, residual and the cache append
        case = harness.build(kernel, "fp32", shape, harness.Values("fp32", "cpu", seed))
        spec = ops.SPECS[kernel]
        dtype, key = spec.key_of(**case.args)
        assert dtype == "fp32" and dict(zip(spec.key, key)) == shape
        declared = spec.outputs(**case.args)
        declared = declared if isinstance(declared, tuple) else (declared,)
        real = harness.run_kernel(case, fixture_config(kernel, shape))
        assert [(d.shape, d.dtype) for d in declared] == [(r.shape, r.dtype) for r in real]


def test_merge_counters_grow_without_freeing_the_ones_a_graph_may_hold(monkeypatch):
    """A call with more tiles than the counters hold gets new zeroed counters; the old ones stay alive (a CUDA
    graph captured earlier launches with their address)."""
    from neurobrix.ops import linear as module

    monkeypatch.setattr(module, "_COUNTERS", {})
    monkeypatch.setattr(module, "_OUTGROWN", [])
    device = torch.device("cpu")
    first = module.tile_counters(device, 10)
    assert first.numel() >= 10 and module.tile_counters(device, 10) is first
    bigger = module.tile_counters(device, first.numel() + 1)
    assert bigger.numel() > first.numel() and not bigger.any() and module._OUTGROWN == [first]
