"""Round 18 of planted bugs: small, realistic bugs planted one at a time in code no earlier round planted in or
planted in only thinly (the shapes and values conformance draws, the harness's guards and the interpreter's
launches, the float64 references' precision, an entry's verdict, what a resumed check carries over and what certify
screens on; generation's processors and sampling warpers, stop strings, the text stream, generation_config.json's
lengths; the memory check, bucket rules and the values a setting may hold), each run against the test files that
exercise its function. Each test here failed with one surviving bug and passes without it (which bug: its
docstring); the truth is the rule each function's docstring states, a brute force, or transformers' own processor.

Planted (id: change -> outcome with the existing tests; a test here that catches it, after):
  strategies.py sg01 the range's top not an edge -> caught;  sg02 2b and its neighbours dropped -> caught
                sg03 b - 1 dropped -> caught;  sg04 top + 1 dropped -> caught;  sg05 primes near powers of two looked
                for only up to hi -> SURVIVED -> caught here;  sg06 an unbounded dimension drawn to cap - 1 -> caught
                sg07 a multiple's range floored below lo -> caught;  sg08 no edges drawn -> caught
                sg09 a setting's blocks in place of the common ones -> SURVIVED -> caught here
                sg10 cancel's odd middle element not zeroed -> caught;  sg11 tensors' param drawn from 0..5
                -> SURVIVED -> caught here;  sg12 sg13 the guard element next to the view unchecked (after, before)
                -> caught;  sg14 sparse densities halved -> SURVIVED -> caught here
  harness.py    hn01 guards of one row, not 256 -> caught (test_ops);  hn02 the padding's first element unchecked
                -> caught;  hn03 a tensor's span one row long -> caught (test_conformance);  hn04 masked lanes of a
                load without a fill read 0 -> caught (test_conformance);  hn05 an output's dtype not compared -> caught
                hn06 inputs' guards never checked -> caught;  hn07 the interpreter's own launch order -> caught
                (test_conformance);  hn08 unlabelled pairs never the worst -> caught
  reference.py  rf01 rms_norm's mean square in the input dtype -> caught;  rf02 linear in fp32 -> caught
                rf03 the rope frequencies in float32 -> caught;  rf04 silu in fp32 -> caught;  rf05 softmax's exp in
                fp32 -> caught;  rf06 decode's filled positions as ``<= n - 1`` -> equivalent;  rf07 attention's rows
                a chunk one fewer -> equivalent
  bounds.py     bd01 a known summation depth not capped at n - 1 -> SURVIVED -> caught here;  bd02 only NaN (not inf)
                outputs given ratio inf -> equivalent
  check.py      ck01 the last example's ratio as the worst -> caught;  ck02 an entry out of memory left passed
                -> caught (test_conformance);  ck03 the index looked up at the low corner only -> SURVIVED (reachable
                only through a lookup bug) -> caught here;  ck04 an unbounded entry inside a bounded --where -> caught
                (test_shipped);  ck05 a resumed report's examples per entry not compared -> caught (test_conformance)
                ck06 failed entries carried over by a resume -> caught (test_conformance)
  certify.py    ce01 the screening size between the ends even -> SURVIVED -> caught here;  ce02 the top shape not
                screened -> caught
  generate.py   gn01 the last n-gram not banned -> caught;  gn02 the prompt's last n-gram not banned -> caught
                gn03 a bad word as long as the history plus one not banned -> caught;  gn04 min_new_tokens one long
                -> caught;  gn05 the length penalty from its start index -> equivalent;  gn06 begin_suppress after a
                forced bos one early -> caught;  gn07 top_p's ``<`` -> caught;  gn08 min_p's ``<=`` -> SURVIVED
                -> caught here;  gn09 eta's floor without its square root -> caught;  gn10 top_h's first token not kept
                -> SURVIVED -> caught here;  gn11 the encoder penalty inverted -> caught;  gn12 -inf as -finfo.max
                -> equivalent;  gn13 typical_p's ``>=`` -> caught
  tokenizer.py  tk01 a stop string ending before the last token -> caught;  tk02 an unknown id skipped in the stop
                strings' look back -> SURVIVED -> caught here;  tk03 max_new_tokens 12.5 as 12 -> caught
                tk04 a max_length equal to the prompt taken -> SURVIVED -> caught here;  tk05 the stream's clean-up
                hold the longest replacement only -> caught;  tk06 the stream's window without context -> caught
                tk07 the stop look back one token short -> caught
  memory.py     mm01 the longest context one short of max_positions -> caught;  mm02 a chunk of batch 1 -> caught
                mm03 the MLP's fused output intermediate_size wide -> SURVIVED -> caught here
  buckets.py    bk01 an even first bucket taken for a power of two -> caught
  plan.py       pl01 SPLITS 0 -> caught;  pl02 SUBTILE of another type -> SURVIVED -> caught here;  pl03 any
                block size -> caught;  pl04 settings compared without types -> caught
67 planted: 49 caught (8 of them only by test_ops, test_conformance or test_shipped, run for the survivors of a
first pass), 5 equivalent, 13 survived; each survivor fails a test below.

Equivalent: rf06 ``arange < n`` and ``arange <= n - 1`` on integers; rf07 the float64 attention computed in other
row chunks; bd02 an infinite output has an infinite error over a finite bound either way; gn05 at the penalty's start
index the factor's power is 0 and the added penalty |score| x (1 - 1) is 0; gn12 float32's finfo.min is -finfo.max.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import Phase, find, settings

from conformance import strategies as cs

CI = cs.profile("ci")


def quick(examples: int = 300) -> settings:
    return settings(CI, max_examples=examples, phases=[Phase.generate])


def _is_prime(n: int) -> bool:
    return n > 1 and all(n % f for f in range(2, math.isqrt(n) + 1))


# ------------------------------------------------------------------------------------- the shapes drawn
def test_edge_values_hold_the_primes_next_to_every_power_of_two_in_the_range():
    """Planted: strategies.edge_values looks for primes near powers of two only up to ``hi``, not past it: at a
    range ending between the prime below a power of two and that power (255: 251 below 256) that prime is no edge."""
    primes = [p for p in range(2, 1100) if _is_prime(p)]
    near = [
        (max((p for p in primes if p < 2**e), default=None), min(p for p in primes if p > 2**e)) for e in range(1, 10)
    ]
    for hi in range(2, 520):
        edges = set(cs.edge_values(1, hi))
        for pair in near:
            assert {p for p in pair if p is not None and p <= hi} <= edges, (hi, pair)


def test_a_settings_own_blocks_are_drawn_beside_the_common_ones_not_instead():
    """Planted: strategies.shapes takes a dimension's ``block_sizes`` (a shipped setting's own blocks) instead of the
    common block sizes, not added to them: the edges of 16, 32, 64 and 128 are then drawn only by chance."""
    strategy = cs.shapes({"K": (1, 100_000)}, block_sizes={"K": (24,)})
    for value in (33, 65, 129, 256):  # an edge of a common block size only (none a prime or an edge of 24)
        assert value in cs.edge_values(1, 100_000, cs.BLOCK_SIZES)
        find(strategy, lambda s, value=value: s["K"] == value, settings=quick(1000))


# --------------------------------------------------------------------------------------------- values drawn
def test_the_tensors_strategy_reaches_the_top_exponent_and_the_all_zero_tensor():
    """Planted: strategies.tensors draws ``param`` from 0..5, not 0..20: the pow2 kind never scales past
    2^(lo + 5) (the top of the exponent range unreached) and the sparse kind never draws its all-zero tensor
    (param % 7 == 6)."""
    pow2 = cs.tensors((64,), torch.float32, kinds=("pow2",), exponents=(0, 20))
    find(pow2, lambda t: float(t.abs().max()) > 2.0**12, settings=quick(400))
    sparse = cs.tensors((64, 64), torch.float32, kinds=("sparse",))  # 4,096 elements: never all zero by density
    find(sparse, lambda t: bool((t == 0).all()), settings=quick(400))


def test_sparse_values_have_each_density_the_docstring_promises():
    """Planted: strategies.make_values' sparse kind halves every density (1/2^(param % 6 + 1)): a dense "sparse"
    tensor (param 0, density 1) is never made."""
    for param in range(6):
        t = cs.make_values((200, 200), torch.float32, "sparse", 7, param=param)
        density = float((t != 0).double().mean())
        assert abs(density - 0.5**param) < 0.1 * 0.5**param, (param, density)


# ------------------------------------------------------------------------------------------------ bounds
@pytest.mark.parametrize("K", [1, 2, 7, 64, 300])
@pytest.mark.parametrize(
    "config",
    [
        {"variant": "gemv", "BLOCK_K": 256, "SPLIT_K": 4},
        {"variant": "gemv", "BLOCK_K": 32, "SPLIT_K": 1},
        {"variant": "tiled", "BLOCK_K": 64},
        {"variant": "skinny", "BLOCK_K": 128, "SPLIT_K": 8},
    ],
)
def test_a_known_summation_order_never_loosens_linears_bound(K, config):
    """Planted: bounds._depth returns the depth it is given without capping it at n - 1: a known order deeper than
    the worst order (gemv's 256 lanes over K = 7, 249 of them adding zeros, which is exact) then allowed gamma_259
    where any order allows gamma_{K+2}. A kernel's known order may only tighten the bound of any order."""
    from conformance import bounds, reference

    gen = torch.Generator().manual_seed(K)
    x, w = torch.randn(3, K, generator=gen).half(), torch.randn(5, K, generator=gen).half()
    y64 = reference.linear(x, w)
    depth = bounds.linear_depth(config, K, torch.float16)
    known = bounds.linear(x, w, None, y64, depth=depth)
    assert (known <= bounds.linear(x, w, None, y64)).all()


# ------------------------------------------------------------------------------------------ sampling warpers
def _drawn(scores: torch.Tensor, n: int = 64, **opts) -> set[int]:
    """The tokens neurobrix's draw picks from one row of ``scores`` over ``n`` seeds."""
    from neurobrix.generate import Sampling, _draw

    sampling = Sampling(temperature=1.0, **opts)
    sampling.validate()
    return {int(_draw(scores, sampling, torch.Generator().manual_seed(s))[0]) for s in range(n)}


def _kept(warper, scores: torch.Tensor) -> set[int]:
    """The tokens a transformers warper leaves a finite score."""
    out = warper(torch.zeros((1, 1), dtype=torch.long), scores.clone())
    return {int(i) for i in torch.isfinite(out[0]).nonzero().flatten()}


def test_min_p_keeps_a_token_exactly_at_its_floor_as_transformers():
    """Planted: the min_p filter drops a token whose probability equals min_p times the top one's (``<=`` for
    transformers' ``<``): with min_p 1 two tied top tokens became one, and the draw never picked the second."""
    lp = pytest.importorskip("transformers").generation.logits_process
    scores = torch.tensor([[2.0, 2.0, 0.5, -1.0, 1.9]])
    kept = _kept(lp.MinPLogitsWarper(min_p=1.0), scores)
    assert kept == {0, 1}
    assert _drawn(scores, min_p=1.0) == kept


def test_top_h_keeps_the_most_likely_token_whatever_its_entropy_as_transformers():
    """Planted: the top_h filter no longer keeps the most likely token when its own entropy term exceeds top_h
    times the entropy of the top 100: every token was dropped and the draw refused the step (all -inf)."""
    lp = pytest.importorskip("transformers").generation.logits_process
    scores = torch.tensor([[3.0, 0.0, -1.0, -2.0, 0.5]])
    kept = _kept(lp.TopHLogitsWarper(top_h=0.05), scores)
    assert kept == {0}
    assert _drawn(scores, top_h=0.05) == kept


# ------------------------------------------------------------------------------------------------ certify
def test_screening_takes_an_odd_size_strictly_inside_the_domain():
    """Planted: certify.edge_shapes' size between the domain's ends loses its ``| 1``: at 5/8 of the way it is even
    wherever the ends are (1 .. 512: 320), and a candidate wrong only on a partial tile of an odd size passes
    screening (an even size is a whole number of every block of 2)."""
    from conformance import certify
    from conformance.specs import RECORDS

    for task in certify.plan("interpreter", sorted(RECORDS), ["fp32"]):
        low, top, mid = certify.edge_shapes(task)
        for dim in mid:
            if RECORDS[task.kernel].multiple_of.get(dim, 1) == 1 and top[dim] - low[dim] >= 2:
                assert mid[dim] % 2 == 1 and low[dim] < mid[dim] < top[dim], (task.describe(), dim, mid)


# --------------------------------------------------------------------------------- the values a setting holds
@pytest.mark.parametrize("subtile", [True, False])
def test_preflight_refuses_subtile_of_another_type_than_the_integers_certify_writes(tmp_path, subtile):
    """Planted: plan.VALUES' SUBTILE check loses its ``type(v) is int``: SUBTILE true or false equals 1 or 0 in
    Python and was taken, a setting no proof ran (certify writes 0 or 1; Triton specializes a constexpr by its
    value and type). Refused as BLOCK_K true is."""
    from kernel_tables import write_tables

    from neurobrix import tables
    from neurobrix.errors import TablesError
    from neurobrix.plan import resolve

    config = {
        "variant": "tma_split",
        "BLOCK_M": 64,
        "BLOCK_N": 256,
        "BLOCK_K": 64,
        "GROUP_M": 8,
        "SPLIT_K": 1,
        "SUBTILE": subtile,
        "WARP_SPECIALIZE": False,
        "num_warps": 4,
        "num_stages": 5,
    }
    loaded = tables.load(write_tables(tmp_path / "t", configs={"linear": [({}, config)]}))
    with pytest.raises(TablesError, match=rf"has SUBTILE={subtile!r}, where this neurobrix's kernels take 0 or 1"):
        resolve({("linear", "fp32", (5, 16, 16))}, loaded, "interpreter")


# ------------------------------------------------------------------------------------ stop strings, lengths
def test_an_id_the_tokenizer_does_not_have_ends_the_stop_strings_look_back_as_in_transformers(tmp_path):
    """Planted: StopStrings skips an id the tokenizer does not have (``continue`` for ``break``): the text on either
    side of it was joined, and a string spelt across it ended generation where transformers' StopStringCriteria
    does not."""
    import json

    transformers = pytest.importorskip("transformers")
    from store_fixtures import config_dict
    from tokenizer_fixtures import save
    from transformers.generation.stopping_criteria import StopStringCriteria

    from neurobrix.tokenizer import StopStrings, Tokenizer

    folder = save(tmp_path / "tok", "bytelevel")
    (folder / "config.json").write_text(json.dumps(config_dict("llama")))
    hf, tokenizer = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    stops = ["Hello world"]
    criteria, check = StopStringCriteria(hf, stops), StopStrings(tokenizer._tok, stops)
    hello, world = tokenizer.encode_text("Hello"), tokenizer.encode_text(" world")
    for ids in (hello + world, hello + [len(hf) + 1] + world):
        assert check(ids) == bool(criteria(torch.tensor([ids]), None)[0]), ids
    assert check(hello + world) and not check(hello + [len(hf) + 1] + world)


def test_a_max_length_the_prompt_already_reaches_is_refused_as_transformers_generate_refuses_it(tmp_path):
    """Planted: Tokenizer.max_new_tokens refuses only a max_length below the prompt (``<`` for ``<=``): a prompt of
    exactly max_length tokens got 0 new tokens, where transformers' generate raises ("Input length of input_ids is
    6, but `max_length` is set to 6", GenerationMixin._validate_generated_length: input length >= max_length)."""
    import json

    from store_fixtures import make_checkpoint

    from neurobrix.tokenizer import Tokenizer, TokenizerError

    folder = make_checkpoint(tmp_path / "model", use_transformers=False)
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 2, "max_length": 6}))
    tokenizer = Tokenizer(folder)
    assert tokenizer.max_new_tokens(5)[0] == 1
    with pytest.raises(TokenizerError, match="leaves no new token within the max_length of 6"):
        tokenizer.max_new_tokens(6)


# ----------------------------------------------------------------------------------------- the memory check
def test_working_memory_holds_the_mlps_fused_projection_and_its_product_at_once():
    """Planted: memory.activation_bytes counts the MLP's fused gate/up output as intermediate_size wide, not twice
    that: a model whose MLP is much wider than its hidden size (intermediate > 4 x hidden) was admitted with less
    working memory than one chunk's [tokens, 2 I] projection and [tokens, I] product need together. The widths are
    the model's own calls, recorded from its forward pass (``plan.forward_calls``)."""
    import dataclasses

    from conformance.catalogue import load
    from neurobrix import memory
    from neurobrix.plan import forward_calls

    base = load()[0]["meta-llama/Llama-3.1-8B-Instruct"]
    cfg = dataclasses.replace(base, hidden_size=512, intermediate_size=8192, num_heads=4, num_kv_heads=2, head_dim=128)
    tokens = 64
    calls = forward_calls(cfg, 1, tokens, tokens, True, "fp16", layers=1)
    widest = max(key[1] for op, _, key in calls if op == "linear" and key[1] != cfg.vocab_size)
    product = max(key[1] for op, _, key in calls if op == "silu_mul")
    assert widest == 2 * product  # the fused gate/up projection and silu_mul's product of it
    logits = cfg.vocab_size * 4
    assert memory.activation_bytes(cfg, 2, 1, tokens) - logits >= tokens * (widest + product) * 2


# ------------------------------------------------------------------------------------------------- check
def test_check_fails_an_entry_the_index_finds_at_its_low_corner_but_not_at_its_top(monkeypatch):
    """Planted: check.lookup_problem looks the entry up at its domain's low corner only: an index whose lookup
    misses the top of a domain (a contains() exclusive at hi, a bucket map keyed one off) sent run's calls at the
    domain's top end to no setting, and check passed the entry it had run on its own."""
    from conformance import check
    from neurobrix.schema import Domain, Setting, SettingsIndex

    entry = Setting(Domain(("fp32",), (("M", 3, 4), ("I", 3, 3))), {"BLOCK_M": 4})
    index = SettingsIndex.of("silu_mul", "interpreter", ("M", "I"), ("pow2", "exact"), {}, (entry,), "x.json")
    assert check.lookup_problem(index, entry, "fp32") is None
    honest = index.lookup
    monkeypatch.setattr(index, "lookup", lambda dtype, values: None if values[0] == 4 else honest(dtype, values))
    assert "the index's lookup of fp32 M=4, I=3 finds no entry" in (check.lookup_problem(index, entry, "fp32") or "")
