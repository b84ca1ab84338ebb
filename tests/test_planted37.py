"""Planted-bug round 37: tests for the plants of tests/planted37_plants.py that the existing tests let through, in the
files and functions where the suite had been measured least (the fewest plants of tests/planted*_plants.py and
conformance/mutants.py per 100 lines, the kernels aside): conformance/bounds.py's gamma, ratio, depth and linear
bounds, conformance/strategies.py's edges and caps, conformance/certify.py's ranges, provenance and failure classes,
conformance/reproof.py, neurobrix/stack.py's torch rule, re-proof reading, knobs, backends and GPU check,
neurobrix/config.py's flag, head-dim and rope readers, neurobrix/model.py's prefill chunk. Each test fails under the
plant(s) its section names (checked: ``python tests/planted37_driver.py COPY OUT --with tests/test_planted37.py
ID``, each plant against this file alone) and passes on the clean code.

Outcomes (54 plants): 28 caught by the tests before the round (b01 b03 b04 b05 b07, t01 t04 t05, c01 c02 c03 c05
c06, s02 s03 s05 s07 s08 s09 s10 s15, k01, m02 m03, g01 g02 g03 g04); 25 survived and are caught here: b02 (gamma's
denominator), b06 (a known depth not clamped to K - 1), b08 (a negative bound), b09 (linear's bias term), b10
(split-K's merge), t02 (the prime below a power of two past the top), t03 (a cap below the floor), c04 (0, "", []
as tie_word_embeddings), c07 (head dims 1 and 3), c08 (yarn betas of 0), c09 (partial_rotary_factor above 1), s01
(torch's epoch), s04 (the rule stated for a certified pre-release), s06 (a table removed since the re-proof), s11
(allow-listed knobs set from Python), s12 (Triton's AMD backend replaced), s13 (torch's current GPU), k02 k03 (an
unbounded or absent dimension within a range), k04 (neurobrix in a table's stack), k05 (a pre-release torch read
as its release), k06 (an upper-case out-of-resource message), r01 r02 (--where, one example short), m01 (a batch
past 4096 tokens); 1 equivalent (s14: docs/planted-bugs.md says why). No defect was found in the clean code.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch
from test_stack import HERE, _reproof, certified_elsewhere, home  # noqa: F401 (fixtures)

from conformance import bounds as bd
from conformance import certify, strategies
from neurobrix import gpu, stack, tables
from neurobrix.errors import CompilerStackError, UncertifiedGPUError


# ------------------------------------------------------------------------------------------------ bounds
# b02
@pytest.mark.parametrize(("n", "u"), [(2**20, 2.0**-24), (3, 2.0**-11), (100, 2.0**-8), (4097, 2.0**-24)])
def test_gamma_is_highams_n_u_over_1_minus_n_u_exactly(n, u):
    """gamma_n(u) = n u / (1 - n u), not its first-order n u: at n u = 1/16 the two differ by 1/15 of it, and a
    bound built on n u alone is below the worst case it stands for (the check would fail an honest kernel)."""
    exact = Fraction(n) * Fraction(u) / (1 - Fraction(n) * Fraction(u))
    assert bd.gamma(n, u) == pytest.approx(float(exact), rel=1e-15)


# b06
def test_a_known_summation_depth_never_loosens_the_bound_past_any_order():
    """``depth`` (the most additions a product goes through in the kernel's known order) tightens the bound; a depth
    larger than K - 1 (the worst of every order) must not loosen it past the default."""
    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(3, 7, generator=gen), torch.randn(5, 7, generator=gen)
    y64 = x.double() @ w.double().T
    default = bd.linear(x, w, None, y64)
    assert torch.equal(bd.linear(x, w, None, y64, depth=10**6), default)
    assert torch.equal(bd.rms_norm(x, w[0], 1e-6, x.double(), depth=10**6), bd.rms_norm(x, w[0], 1e-6, x.double()))
    assert (bd.linear(x, w, None, y64, depth=2) < default).all()


# b08
def test_ratio_refuses_a_negative_bound():
    """A negative bound is no bound: every error over it is a negative ratio, below 1, i.e. a pass."""
    ref64 = torch.tensor([1.0, 2.0], dtype=torch.float64)
    with pytest.raises(ValueError, match="bound >= 0"):
        bd.ratio(torch.tensor([5.0, 2.0]), ref64, torch.tensor([-0.5, 0.5], dtype=torch.float64))


# b09
def test_the_linear_bound_holds_where_the_bias_addition_rounds():
    """y = x W^T + b in fp32: with b far above the products, adding them rounds away up to half an ulp of b, an
    error the products' own term (K + 2 roundings of |x||W|) does not allow for; gamma |b| does."""
    x = torch.tensor([[1.0, 1.0]])
    w = torch.tensor([[1e-8, 2e-8], [3e-8, -1e-8]])
    b = torch.tensor([1.0, -3.0])
    y64 = x.double() @ w.double().T + b.double()
    y = torch.nn.functional.linear(x, w, b)  # fp32: 1 + 3e-8 rounds to 1
    assert (y.double() != y64).any()
    assert bd.ratio(y, y64, bd.linear(x, w, b, y64)) <= 1


# b10
@pytest.mark.parametrize("variant", ["skinny", "tma_split"])
@pytest.mark.parametrize(("K", "block_k", "split_k"), [(1000, 32, 4), (4096, 64, 8), (77, 16, 2)])
def test_a_split_ks_depth_is_one_slices_loop_then_the_merge_of_its_partials(variant, K, block_k, split_k):
    """skinny / tma_split: tiled's K loop over one K slice, then SPLIT_K - 1 fp32 additions merging the partials
    (linear_depth's docstring). Held against tiled's own depth over a K of one slice."""
    k_slice = math.ceil(math.ceil(K / split_k) / block_k) * block_k
    one_slice = bd.linear_depth({"variant": "tiled", "BLOCK_K": block_k}, k_slice, torch.float16)
    split = {"variant": variant, "BLOCK_K": block_k, "SPLIT_K": split_k}
    assert bd.linear_depth(split, K, torch.float16) == one_slice + split_k - 1


# ------------------------------------------------------------------------------------------- strategies
def _prime(n: int) -> bool:
    return n > 1 and all(n % f for f in range(2, math.isqrt(n) + 1))


# t02
@pytest.mark.parametrize("hi", [1023, 2047, 4000, 8190, 127])
def test_the_primes_beside_each_power_of_two_in_range_are_edges(hi):
    """edge_values' docstring: primes next to powers of two, the prime just below a power of two included where
    the power itself lies past the range's top (1021 in [1, 1023])."""
    edges = set(strategies.edge_values(1, hi))
    power = 2
    while power // 2 <= hi:
        below = max(p for p in range(2, power) if _prime(p)) if power > 2 else None
        above = min(p for p in range(power + 1, 2 * power + 3) if _prime(p))
        for p in (below, above):
            if p is not None and p <= hi:
                assert p in edges, f"{p} (beside {power}) not among the edges of [1, {hi}]"
        power *= 2


# t03
def test_an_unbounded_dimension_whose_floor_is_past_the_cap_draws_its_floor():
    """A domain (lo, None) drawn with a cap below lo (a kernel's range starting past the check's cap) draws lo, the
    one size the cap allows, rather than failing to draw anything."""
    from hypothesis import find
    from hypothesis.errors import NoSuchExample

    drawn = strategies.dims(20000, None, cap=16384, multiple_of=2)
    assert find(drawn, lambda v: True) == 20000
    with pytest.raises(NoSuchExample):
        find(drawn, lambda v: v != 20000)


# ------------------------------------------------------------------------------------------ the stack rule
# s01 (s02, s03 caught before)
@pytest.mark.parametrize(
    ("certified", "running"),
    [
        ("2.11.0", "1!2.11.0"),  # another epoch: PEP 440 orders it after every version of epoch 0
        ("2.11.0a0+git1234567", "2.11.0"),  # a certified pre-release: only that very build
        ("2.11.0rc1", "2.11.1"),
        ("2.11.0", "2.12.0"),
        ("2.11.0", "3.11.0"),  # same minor, another major
    ],
)
def test_the_rule_refuses_what_is_not_the_certified_torchs_major_minor_release(certified, running):
    assert not stack.compatible(stack.Stack(certified, "3.6.0"), stack.Stack(running, "3.6.0"))
    assert stack.compatible(stack.Stack(certified, "3.6.0"), stack.Stack(certified, "3.6.0"))


# s04
def test_the_refusal_states_the_rule_for_a_certified_pre_release():
    """A class certified on a pre-release or development torch admits that torch exactly, and says so."""
    made = stack.Verdict("interpreter", stack.Stack("2.11.0rc1", "3.6.0"), stack.Stack("2.11.0", "3.6.0"))
    assert not made.ok
    assert "torch 2.11.0rc1 exactly" in made.refusal()
    released = stack.Verdict("interpreter", stack.Stack("2.11.0", "3.6.0"), stack.Stack("2.12.0", "3.6.0"))
    assert "torch a 2.11.x release (not a pre-release" in released.refusal()


# s06
def test_a_reproof_goes_stale_when_a_table_it_covered_is_removed(certified_elsewhere, home):  # noqa: F811
    """A kernel table removed since the re-proof: the class's tracked files are not those checked."""
    from conftest import retrack

    root, _ = certified_elsewhere
    _reproof("interpreter", HERE)
    stack.require_certified_stack("interpreter")
    for name in ("silu_mul.json", "silu_mul.proofs.yaml"):
        (root / "interpreter" / name).unlink()
    retrack(root)
    tables.clear_cache()
    with pytest.raises(CompilerStackError, match=r"stale: the tables changed since \(interpreter/silu_mul"):
        stack.require_certified_stack("interpreter")


@pytest.fixture
def proven_here(monkeypatch):
    monkeypatch.setattr(stack, "verdict", lambda class_id, *a, **k: stack.Verdict(class_id, HERE, HERE))
    for name in stack.CODEGEN_ENV:
        monkeypatch.delenv(name, raising=False)
    for name in stack.compiler_overrides():
        monkeypatch.delenv(name, raising=False)


# s11
def test_a_knob_set_from_python_that_the_allow_list_names_is_not_refused(proven_here, monkeypatch, tmp_path):
    """The allow-list holds for knobs set from Python as for the variables: compiling again, or the cache's own
    folder, set on ``triton.knobs``, leave the code compiled as it was."""
    from triton import knobs

    monkeypatch.setitem(vars(knobs.compilation), "always_compile", True)
    monkeypatch.setitem(vars(knobs.cache), "dir", str(tmp_path / "cache"))
    stack.require_certified_stack("nvidia-h200")
    monkeypatch.setitem(vars(knobs.compilation), "override", True)  # not listed: refused
    with pytest.raises(CompilerStackError, match=r"triton\.knobs\.compilation\.override="):
        stack.require_certified_stack("nvidia-h200")


# s12
def test_an_amd_backend_from_another_package_refuses_a_gpu_class(proven_here, monkeypatch):
    """Triton's AMD backend replaced by another package's, as its NVIDIA one (test_stack): refused by name."""
    from triton import backends

    class Compiler(backends.compiler.BaseBackend):
        pass

    own = backends.backends["amd"]
    monkeypatch.setitem(backends.backends, "amd", backends.Backend(Compiler, own.driver))
    with pytest.raises(CompilerStackError, match=r"triton\.backends\['amd'\]=test_planted37 and "):
        stack.require_certified_stack("amd-mi300x")


# s13
def test_kernels_on_torchs_current_gpu_of_another_class_are_refused(monkeypatch):
    """No device given: the kernels run on torch's current GPU, which a program may have set to 1."""
    h200 = gpu.DeviceFacts("cuda", "nvidia", "NVIDIA H200", (9, 0), 132)
    a100 = gpu.DeviceFacts("cuda", "nvidia", "NVIDIA A100-SXM4-80GB", (8, 0), 108)
    monkeypatch.setattr(gpu, "device_facts", lambda: h200)
    monkeypatch.setattr(gpu, "facts_of", lambda index: a100 if index == 1 else h200)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    loaded = tables.load()
    with pytest.raises(UncertifiedGPUError, match="run on GPU 1"):
        stack.require_class_device("nvidia-h200", None, loaded)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    stack.require_class_device("nvidia-h200", None, loaded)


# ---------------------------------------------------------------------------------------------- certify
def _task(*ranges):
    return certify.Task("linear", "fp16", tuple(ranges))


# k02, k03
def test_a_task_lies_within_a_range_it_touches_and_not_in_one_it_passes():
    assert certify.within(_task(("M", 1, 16)), {"M": (1, 16)})  # the same span: inside
    assert not certify.within(_task(("M", 1, None)), {"M": (1, 4096)})  # unbounded: past any top
    assert certify.within(_task(("M", 1, None)), {"M": (1, None)})
    assert not certify.within(_task(("M", 1, 16)), {"Q": (1, None)})  # a dimension it does not have


# k05
def test_a_pre_release_torch_recorded_then_is_not_the_release_installed_now(monkeypatch):
    """The one torch read two ways (its stated 2.11.0+cu130, its distribution's 2.11.0) is the same; a table
    recorded on 2.11.0rc1 is not the 2.11.0 installed now, though both are release 2.11.0."""
    monkeypatch.setattr(certify.torch, "__version__", "2.11.0+cu130")
    assert certify._same_torch_read_before("torch", {"torch": "2.11.0+cu130"}, {"torch": "2.11.0"})
    monkeypatch.setattr(certify.torch, "__version__", "2.11.0rc1")
    assert not certify._same_torch_read_before("torch", {"torch": "2.11.0rc1"}, {"torch": "2.11.0"})


# k04
@pytest.mark.parametrize("fact", ["device", "torch", "triton", "neurobrix"])
def test_a_table_certified_by_another_neurobrix_takes_no_entries_from_this_one(fact):
    """merged_provenance's rule: a table holds one stack, and neurobrix (whose kernels and checker made its entries)
    is part of it as the device, torch and Triton are."""
    from types import SimpleNamespace

    from neurobrix.errors import UsageError

    old = {"device": {"name": "cpu"}, "torch": "2.13.0", "triton": "3.9.0", "neurobrix": "0.4.0", "date": "d"}
    current = {**old, "git_commit": "c", "command": "certify", "date": "e"}
    table = SimpleNamespace(provenance=old, path="linear.proofs.yaml")
    assert certify.merged_provenance(table, current)["resumed"][-1]["command"] == "certify"
    with pytest.raises(UsageError, match=f"certified on another stack \\({fact}: "):
        certify.merged_provenance(table, {**current, fact: "other"})


# k06
@pytest.mark.parametrize("text", ["Out of resource: shared memory", "OUT OF RESOURCE: registers"])
def test_a_failure_is_classed_out_of_resources_whatever_the_case_of_its_message(text):
    assert certify.classify_failure(RuntimeError(text))[0] == "out_of_resources"


# ---------------------------------------------------------------------------------------------- reproof
# r01, r02
def test_a_check_of_part_of_the_class_or_with_fewer_examples_stands_for_no_reproof():
    from types import SimpleNamespace

    from conformance import reproof

    whole = SimpleNamespace(complete=True, left=0, examples_per_entry=reproof.min_examples())
    assert reproof._not_whole(whole, SimpleNamespace()) is None
    assert "--where" in reproof._not_whole(whole, SimpleNamespace(where=["M=1:16"]))
    fewer = SimpleNamespace(complete=True, left=0, examples_per_entry=reproof.min_examples() - 1)
    assert "fewer than" in reproof._not_whole(fewer, SimpleNamespace())


# ------------------------------------------------------------------------------------------------ model
# m01
@pytest.mark.parametrize("batch", [4096, 4097, 10000])
def test_a_batch_past_one_prefills_tokens_prefills_one_token_per_sequence(batch):
    from neurobrix.model import chunk_length

    assert chunk_length(batch) == 1


# m03 (caught before; kept beside m01)
def test_a_batch_of_0_has_no_chunk():
    from neurobrix.model import chunk_length

    with pytest.raises(ValueError, match="batch must be >= 1"):
        chunk_length(0)


# ----------------------------------------------------------------------------------------------- config
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 8,
    "intermediate_size": 12,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "vocab_size": 10,
    "max_position_embeddings": 16,
    "rms_norm_eps": 1e-5,
}


# c04
@pytest.mark.parametrize("value", [0, 1, 0.0, "", []])
def test_tie_word_embeddings_of_another_type_is_refused_as_transformers_refuses_it(value):
    """Not only a true-looking "false": 0, "", [] too (read as False, the embeddings untied) are values transformers'
    config refuses (a bool field of a strict dataclass)."""
    transformers = pytest.importorskip("transformers")
    from neurobrix.config import ConfigError, ModelConfig

    with pytest.raises(Exception, match="tie_word_embeddings"):
        transformers.LlamaConfig(**{k: v for k, v in CONFIG.items() if k != "architectures"}, tie_word_embeddings=value)
    with pytest.raises(ConfigError, match="field 'tie_word_embeddings' must be true or false"):
        ModelConfig.from_hf({**CONFIG, "tie_word_embeddings": value})


# c07
@pytest.mark.parametrize("heads", [8, 4])  # head dims 1 and 2 x 1 + 1 = 3
def test_an_odd_head_dim_at_or_below_4_is_refused(heads):
    """transformers' config refuses an odd head dim above 4; its rotary fails on 3 and widens 1 to 2: none of them
    runs as the engine's rotary would (it turns pairs of dimensions)."""
    from neurobrix.config import ConfigError, ModelConfig

    hidden = heads * (1 if heads == 8 else 3)
    given = {**CONFIG, "hidden_size": hidden, "num_attention_heads": heads, "num_key_value_heads": heads}
    with pytest.raises(ConfigError, match=r"head dim [13] is odd"):
        ModelConfig.from_hf(given)


# c08
def test_yarn_betas_of_0_are_transformers_defaults():
    """transformers' yarn rule reads ``beta_fast or 32`` and ``beta_slow or 1``: a 0 (as null or absent) is the
    default, checked on transformers' own frequencies; the engine resolves them to the same numbers."""
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import _compute_yarn_parameters

    from neurobrix.config import ModelConfig

    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8}
    freq = {}
    for betas in ({"beta_fast": 0, "beta_slow": 0}, {"beta_fast": 32, "beta_slow": 1}):
        config = transformers.LlamaConfig(
            hidden_size=64, num_attention_heads=2, rope_parameters={"rope_theta": 10000.0, **yarn, **betas}
        )
        freq[betas["beta_fast"]] = _compute_yarn_parameters(config, "cpu")[0]
    assert torch.equal(freq[0], freq[32])
    zero = ModelConfig.from_hf({**CONFIG, "rope_scaling": {**yarn, "beta_fast": 0, "beta_slow": 0}}).rope_scaling
    default = ModelConfig.from_hf({**CONFIG, "rope_scaling": {**yarn, "beta_fast": 32, "beta_slow": 1}}).rope_scaling
    assert zero == default


# c09
@pytest.mark.parametrize("partial", [1.5, 2])
def test_a_partial_rotary_factor_above_1_with_a_scaled_rope_is_refused(partial):
    """int(head_dim x factor) dims past the head's: transformers' rule makes tables wider than the head."""
    from neurobrix.config import ConfigError, ModelConfig

    given = {**CONFIG, "partial_rotary_factor": partial, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}
    with pytest.raises(ConfigError, match="partial_rotary_factor"):
        ModelConfig.from_hf(given)
