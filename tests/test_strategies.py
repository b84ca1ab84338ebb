"""Conformance strategies: shapes cover a domain's edges, values are finite and representable and
have the promised structure, poisoned outputs and guard bands catch unwritten and stray stores."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

from conformance import strategies as cs

CI = cs.profile("ci")
DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def quick(examples: int = 200) -> settings:
    return settings(CI, max_examples=examples, phases=[Phase.generate])


# --------------------------------------------------------------------------------------------- shapes
def test_edge_values_of_a_range():
    edges = cs.edge_values(1, 300)
    for v in (1, 2, 3, 5, 7, 13, 15, 16, 17, 31, 33, 63, 65, 127, 128, 129, 255, 257, 299, 300, 251):
        assert v in edges, v
    assert edges == sorted(set(edges)) and all(1 <= v <= 300 for v in edges)
    # primes next to powers of two, and every block size's partial tiles
    assert {61, 67, 127, 131, 251, 257} <= set(edges)
    assert cs.edge_values(40, 40) == [40]
    assert cs.edge_values(100, 200, multiple_of=2) == [v for v in cs.edge_values(100, 200) if v % 2 == 0]
    with pytest.raises(ValueError):
        cs.edge_values(5, 4)


def test_shapes_reach_every_edge_and_stay_in_the_domain():
    domain = {"M": (1, 64), "N": (5, 300), "K": (1, None)}
    strategy = cs.shapes(domain, cap=500)
    for dim, value in (("M", 1), ("M", 64), ("N", 5), ("N", 300), ("N", 129), ("K", 500), ("K", 17), ("K", 1)):
        find(strategy, lambda s, dim=dim, value=value: s[dim] == value, settings=quick())

    @CI
    @given(strategy)
    def inside(shape):
        assert set(shape) == set(domain)
        assert 1 <= shape["M"] <= 64 and 5 <= shape["N"] <= 300 and 1 <= shape["K"] <= 500

    inside()


def test_shapes_draw_interior_values_too():
    strategy = cs.shapes({"K": (1, 10_000)})
    edges = set(cs.edge_values(1, 10_000))
    find(strategy, lambda s: s["K"] not in edges, settings=quick())


def test_shapes_caps_and_multiples():
    with pytest.raises(ValueError, match="cap"):
        cs.shapes({"S": (1, None)}).example()
    strategy = cs.shapes({"S": (1, None), "D": (2, 256)}, cap={"S": 33}, multiple_of={"D": 2})

    @CI
    @given(strategy)
    def ok(shape):
        assert 1 <= shape["S"] <= 33 and shape["D"] % 2 == 0 and 2 <= shape["D"] <= 256

    ok()
    find(strategy, lambda s: s["D"] % 16 != 0 and s["D"] % 4 == 2, settings=quick())  # non-multiples of blocks
    with pytest.raises(ValueError, match="multiple"):
        cs.dims(5, 5, multiple_of=2)


# --------------------------------------------------------------------------------------------- values
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", cs.KINDS)
def test_values_are_finite_and_representable(kind, dtype):
    for seed in range(4):
        for param in (0, 3, 6, 13):
            t = cs.make_values((5, 9, 12), dtype, kind, seed, exponents=(-9, 9), param=param)
            assert t.dtype == dtype and t.shape == (5, 9, 12)
            assert torch.isfinite(t).all()
            assert torch.equal(t.to(torch.float64).to(dtype), t)  # representable: a round trip is exact


def test_value_kinds_have_their_structure():
    f64 = torch.float64
    cancel = cs.make_values((4, 11), torch.float16, "cancel", 1, exponents=(-6, 6)).to(f64)
    assert torch.equal(cancel[:, :5], -cancel[:, 6:]) and (cancel[:, 5] == 0).all()
    assert (cancel.sum(dim=-1) == 0).all()  # exact cancellation along the row
    assert cancel.abs().max() / cancel[cancel != 0].abs().min() > 2**4  # magnitudes spread

    ints = cs.make_values((50,), torch.bfloat16, "integers", 2).to(f64)
    assert torch.equal(ints, ints.round()) and ints.abs().max() <= 8

    sparse = cs.make_values((40, 40), torch.float32, "sparse", 3, param=3)  # density 1/8
    assert 0.02 < (sparse != 0).double().mean() < 0.3
    assert (cs.make_values((8, 8), torch.float32, "sparse", 3, param=6) == 0).all()  # the all-zero tensor

    rows = cs.make_values((16, 64), torch.float32, "row_scaled", 4, exponents=(-8, 8)).to(f64)
    rms = rows.pow(2).mean(-1).sqrt()
    assert rms.max() / rms.min() > 2**4  # rows at different scales

    base = cs.make_values((6, 6), torch.float32, "normal", 5)
    scaled = cs.make_values((6, 6), torch.float32, "pow2", 5, exponents=(-4, 4), param=7)
    assert torch.equal(scaled, base * 2.0**3)  # the same draws, one power of two for the tensor


def test_values_refuse_overflow_and_unknown_kinds():
    with pytest.raises(ValueError, match="overflow"):
        cs.make_values((4, 4), torch.float16, "pow2", 0, exponents=(20, 20))
    with pytest.raises(ValueError, match="kind"):
        cs.make_values((4,), torch.float32, "uniform", 0)


@CI
@given(st.data())
def test_tensors_strategy(data):
    dtype = data.draw(st.sampled_from(DTYPES))
    shape = data.draw(st.lists(st.integers(1, 7), min_size=1, max_size=3))
    t = data.draw(cs.tensors(shape, dtype))
    assert t.dtype == dtype and list(t.shape) == shape and torch.isfinite(t).all()


def test_tensors_strategy_draws_every_kind():
    # the kinds are told apart by a property only they have, on a 2 x 8 tensor
    strategy = cs.tensors((2, 8), torch.float32)
    find(strategy, lambda t: (t.sum(-1) == 0).all() and (t != 0).any(), settings=quick())  # cancel
    find(strategy, lambda t: torch.equal(t, t.round()) and (t != 0).any(), settings=quick())  # integers
    find(strategy, lambda t: (t == 0).all(), settings=quick(400))  # all-zero sparse


# ---------------------------------------------------------------------------- poisoned and guarded
def test_poisoned_is_all_nan():
    t = cs.poisoned((3, 4), torch.bfloat16)
    assert t.dtype == torch.bfloat16 and t.shape == (3, 4) and torch.isnan(t).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_guard_bands_catch_stray_writes(dtype):
    view, check_guards = cs.guarded_empty((4, 5), dtype, guard=8)
    assert view.shape == (4, 5) and view.is_contiguous() and torch.isnan(view).all()
    view.fill_(1.0)  # writing the whole output is fine
    check_guards()
    assert view.storage_offset() == 8
    flat = torch.as_strided(view, (8 + 20 + 8,), (1,), storage_offset=0)  # what a stray pointer reaches
    flat[8 + 20] = 0.0  # one element past the end
    with pytest.raises(cs.GuardBandError, match=r"1 after its end \(offsets \+\[0\]\)"):
        check_guards()
    flat[8 + 20] = math.nan
    flat[7] = 2.0  # one element before the start
    with pytest.raises(cs.GuardBandError, match=r"1 guard elements overwritten before it \(offsets \[-1\]\)"):
        check_guards()
    flat[7] = math.nan
    check_guards()


def test_guarded_empty_refuses_integer_dtypes_and_empty_guards():
    with pytest.raises(ValueError):
        cs.guarded_empty((2,), torch.int32)
    with pytest.raises(ValueError):
        cs.guarded_empty((2,), torch.float32, guard=0)


# ------------------------------------------------------------------------------------------- profiles
def test_profiles():
    ci, dev, gpu = (cs.profile(name) for name in ("ci", "dev", "gpu"))
    assert ci.derandomize and ci.database is None and ci.deadline is None
    assert ci.max_examples < dev.max_examples < gpu.max_examples
    assert gpu.database is None and gpu.deadline is None
    with pytest.raises(ValueError, match="unknown"):
        cs.profile("nightly")
