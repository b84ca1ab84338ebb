"""Round 14 of planted host-code bugs: small, realistic bugs planted one at a time in the Python around the kernels
(model, generation, loading, buckets, tables, tokenizer), each run against the targeted tests of its file. Each test
here failed with one surviving bug and passes without it (which bug: its docstring); the truth is transformers' own
processor, a brute force over the domains' points, or a hardware constant, never the code under test restated.

Planted (file: change -> targeted tests -> outcome before this file; a test here that catches it, after):
  model.py     m01 q/k/v fused as q, v, k -> test_model_reference -> caught
               m02 gate/up fused as up, gate -> caught;  m03 q/k/v biases fused as q, v, k -> caught
               m04 a tied checkpoint holding two different tensors: the head dropped for the embedding -> caught
               m05 a tied checkpoint's embedding taken from its head though it holds its own -> caught
               m06 the final norm with the last layer's MLP norm weight -> caught
               m07 the final norm's eps fixed at 1e-6, not config.json's -> caught
               m08 every prefill chunk's positions restarting at 0 -> test_engine chunked test -> caught
               m09 a chunk attending to one cache position past itself -> caught
               m10 a prompt of exactly the cache's capacity refused -> caught
               m11 the attention scale from hidden / heads, not head_dim -> caught
               m12 decode attending to lengths - 1 positions (its own token dropped) -> caught
               m13 the first chunk one token short of the remainder -> test_chunks -> caught
               m14 the logits of a one-token forward read at row 0, not -1 -> survived: equivalent (S = 1)
               m16 the rotary table without rope_scaling, sized by max_positions -> caught
  generate.py  g01 the cache check one position lenient -> caught;  g02 the window check one short -> caught
               g03 host-pick decode fed one position late -> caught;  g04 decode lengths one long -> caught
               g05 the device step moving the position but not the length -> caught
               g06 a finished row's later tokens streamed -> caught; g07 stop strings given new tokens only -> caught
               g08 the host loop one step past max_tokens -> caught;  g09 the device loop one step past -> caught
               g10 decoded tokens counted less 1, not less the batch -> caught
               g11 the statistics' prompt tokens one row's -> caught;  g12 the stop check a token late -> caught
               g13 the prompts' tokens left out of the repetition penalty's marks -> caught
               g14 forced_eos at max_length, not max_length - 1 -> caught
               g15 sequence_bias skipping a sequence whose prefix is the whole history -> SURVIVED -> caught here
               g16 device_pick=False still picking on the device -> SURVIVED -> caught here
               g17 the device loop stepping once when every row ended at the prefill's token -> SURVIVED
               -> caught here
               g18 the reader keeping the device's token buffer, not a copy, off CUDA -> caught
               g19 the device step not marking its token for the repetition penalty -> caught
  buckets.py   b01 value == first out of the first pow2>=F bucket -> caught;  b02 hi from value, not value - 1
               -> caught;  b03 pow2>=F with F no power of two accepted -> caught
  schema.py    s01 Domain.contains exclusive at hi -> caught;  s02 Domain.overlaps missing a shared end -> caught
               s03 the proofs' sweep dropping an entry ending where the next begins -> SURVIVED -> caught here
               s04 consecutive wide entries never compared -> caught;  s05 proofs' configs not compared -> caught
               s06 SettingsIndex.lookup without its guard for lengths < 1 -> SURVIVED -> caught here
  plan.py      p01 num_warps 32 refused as no setting -> SURVIVED -> caught here
               p02 a length segment cut at an entry's last length -> caught
  tokenizer.py t01 a plain prompt without the tokenizer's special tokens -> caught
               t02 a chat's encode adding special tokens the template wrote -> caught
               t03 render_chat ignoring add_generation_prompt (always True) -> SURVIVED -> caught here
               t04 no eos id in generation_config.json falling back to config.json's -> caught
               t05 decode keeping special tokens -> caught
               t07 a stream writing text that ends in a partial character -> test_tokenizer -> caught
               t06 template variables overridden by the special tokens -> survived: no caller passes variables
  checkpoint.py c01 a file longer than its header describes accepted -> caught
               c02 a shard name with a backslash accepted -> SURVIVED -> caught here
               c03 F8_E4M3 among the weight dtypes (a float8 tensor cast) -> SURVIVED -> caught here
  ops (torch)  o01 the chunk's causal mask one diagonal short -> test_engine chunked test -> caught
No rotary permutation to plant: the engine reads Hugging Face tensors, already permuted; prompts are of one length
(no left padding), so positions are shared by the rows of a batch.
"""

from __future__ import annotations

import copy
import itertools

import pytest
import torch
import yaml
from conftest import DATA
from test_runtime_planted import tiny_model

from neurobrix import generate as generation
from neurobrix.errors import TablesError
from neurobrix.generate import Constraints, Processors, Sampling, generate_batch
from neurobrix.schema import Domain, Setting, SettingsIndex, parse_proofs

transformers = pytest.importorskip("transformers")
lp = transformers.generation.logits_process


# -- generation ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("prompt", [[5], [1, 5], [5, 5, 7]])
def test_a_biased_sequence_whose_prefix_is_the_whole_history_is_biased_as_in_transformers(prompt):
    """Planted g15: the multi-token sequence_bias skipped a sequence whose prefix is exactly as long as the history
    (``n >= len``, not ``n > len``): after a one-token prompt [5], (5, 7) must still raise token 7, as transformers'
    SequenceBiasLogitsProcessor raises it (it skips only a prefix longer than the context)."""
    bias = (((5, 7), 3.0), ((1, 5, 2), -2.0), ((5, 5, 7, 9), 1.5), ((4,), 0.5))
    scores = torch.randn(1, 12, generator=torch.Generator().manual_seed(0))
    want = lp.SequenceBiasLogitsProcessor({ids: b for ids, b in bias})(torch.tensor([prompt]), scores.clone())
    got = Processors(Constraints(sequence_bias=bias), [prompt], 4, set()).before_penalty(scores.clone())
    assert torch.equal(got, want)
    assert not torch.equal(got, scores)  # some bias of a longer sequence applied, not only the one-token one


def test_the_host_pick_is_the_hosts_and_the_device_pick_the_devices(monkeypatch):
    """Planted g16: ``device_pick=False`` still took the device loop (GreedyDecoder): every test comparing the two
    loops (tests/test_engine.py, tests/test_model_reference.py) then compared the device loop with itself. The host
    loop must run without GreedyDecoder; the device loop must use it."""
    used: list[str] = []
    real = generation.GreedyDecoder

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):
            used.append("device")
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(generation, "GreedyDecoder", Counting)
    host, _ = generate_batch(tiny_model(8), [[1, 2, 3]], 4, Sampling(), set(), device_pick=False)
    assert used == []
    device, _ = generate_batch(tiny_model(8), [[1, 2, 3]], 4, Sampling(), set(), device_pick=True)
    assert used == ["device"] and host == device == [[0, 0, 0, 0]]


@pytest.mark.parametrize("device_pick", [True, False])
def test_a_batch_ended_by_its_first_tokens_runs_no_decode_step(device_pick):
    """Planted g17: the device loop did not check for finished rows before its first step, so a batch whose every
    row ended at the prefill's token still ran (and dropped) a decode step. transformers' generate runs no forward
    pass once every row has ended; the zero-weight model picks token 0, here the eos id, at once."""
    model = tiny_model(8)
    steps: list[int] = []
    forward = model.forward

    def counting(tokens, positions, lengths, past=0, logits=True):
        if lengths is not None:
            steps.append(int(positions[0, 0]))
        return forward(tokens, positions, lengths, past, logits)

    model.forward = counting
    outs, stats = generate_batch(model, [[1, 2, 3]], 4, Sampling(), {0}, device_pick=device_pick)
    assert outs == [[0]] and stats.generated_tokens == 1 and steps == []


# -- the settings tables -------------------------------------------------------------------------------------------


def _share_a_point(a: Domain, b: Domain) -> bool:
    """By points: some dtype and shape lies in both. Two integer ranges meet where they meet at all at the larger of
    their starts, so trying every start of every dimension (and one past every end) decides it."""
    dims = [dim for dim, _, _ in a.ranges]
    points = [
        sorted({v for d in (a, b) for name, lo, hi in d.ranges if name == dim for v in (lo, hi and hi + 1) if v})
        for dim in dims
    ]
    return any(
        a.contains(dtype, shape) and b.contains(dtype, shape)
        for dtype in set(a.dtypes) | set(b.dtypes)
        for shape in (dict(zip(dims, values)) for values in itertools.product(*points))
    )


@pytest.mark.parametrize("lo", [15, 16, 17])
def test_proofs_whose_entries_share_one_end_value_are_refused(lo):
    """Planted s03: the sweep over the proofs' first dimension dropped from its active set an entry ending exactly
    where the next one begins (``hi > lo``, not ``>=``): entries over M = 1..16 and M = 16..64 were accepted though
    a call at M = 16 lies in both. The truth is a brute force over the points of every pair of domains."""
    data = yaml.safe_load((DATA / "tables" / "interpreter" / "demo.proofs.yaml").read_text())
    data["entries"][1]["domain"]["M"] = [lo, 64]
    domains = [
        Domain(tuple(e["domain"]["dtypes"]), (("M", *e["domain"]["M"]), ("N", *e["domain"]["N"])))
        for e in data["entries"]
    ]
    overlap = any(_share_a_point(a, b) for a, b in itertools.combinations(domains, 2))
    assert overlap == (lo <= 16)
    if overlap:
        with pytest.raises(TablesError, match="overlap"):
            parse_proofs(copy.deepcopy(data), "demo.proofs.yaml", "interpreter", "demo")
    else:
        assert len(parse_proofs(copy.deepcopy(data), "demo.proofs.yaml", "interpreter", "demo").entries) == 4


def test_a_length_below_one_is_in_no_entry_not_an_error():
    """Planted s06: SettingsIndex.lookup without its guard for key values below 1 handed 0 to the pow2 rule, which
    raises: a lookup must answer None (every domain starts at 1 or above), wide entries and bucketed ones alike."""
    entries = (
        Setting(Domain(("fp32",), (("M", 1, 1), ("N", 64, 64))), {"X": 1}),
        Setting(Domain(("fp32",), (("M", 2, None), ("N", 1, None))), {"X": 2}),
    )
    index = SettingsIndex.of("k", "c", ("M", "N"), ("pow2", "exact"), {}, entries, "k.json")
    assert index.lookup("fp32", (1, 64)).config == {"X": 1}
    assert index.lookup("fp32", (3, 5)).config == {"X": 2}
    for values in ((0, 64), (3, 0), (-1, 5)):
        assert not any(e.domain.contains("fp32", dict(zip(("M", "N"), values))) for e in entries)
        assert index.lookup("fp32", values) is None


def test_thirty_two_warps_is_a_setting_a_kernel_takes():
    """Planted p01: plan.VALUES refused num_warps = 32 (``v < 32``): a table certified with a block of 1,024 threads,
    the most a CUDA thread block holds (1,024 threads / 32 a warp = 32 warps), would be refused as from another
    neurobrix. One more warp than that, or a count that is no power of two, is no setting."""
    from neurobrix.plan import value_problem

    most = 1024 // 32
    assert value_problem({"num_warps": most}) is None
    assert all(value_problem({"num_warps": 1 << n}) is None for n in range(most.bit_length()))
    assert value_problem({"num_warps": 2 * most}) is not None and value_problem({"num_warps": 12}) is not None


# -- the tokenizer -------------------------------------------------------------------------------------------------

TEMPLATE = (
    "{% for m in messages %}{{ bos_token if loop.first }}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}"
)


@pytest.mark.parametrize("add_generation_prompt", [True, False])
def test_a_chat_rendered_without_the_generation_prompt_is_transformers(tmp_path, add_generation_prompt):
    """Planted t03: render_chat passed add_generation_prompt=True to the template whatever it was given, so a chat
    rendered or encoded to continue the last message (``add_generation_prompt=False``) still ended with the
    assistant's header. The truth is transformers' apply_chat_template on the same folder."""
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer

    save(tmp_path, "bytelevel", chat_template=TEMPLATE)
    messages = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi there"}]
    hf = transformers.AutoTokenizer.from_pretrained(tmp_path)
    ours = Tokenizer(tmp_path)
    kwargs = {"add_generation_prompt": add_generation_prompt}
    assert ours.render_chat(messages, **kwargs) == hf.apply_chat_template(messages, tokenize=False, **kwargs)
    want = hf.apply_chat_template(messages, tokenize=True, return_dict=True, **kwargs)["input_ids"]
    assert ours.encode_chat(messages, **kwargs) == list(want)


# -- checkpoint files ----------------------------------------------------------------------------------------------


def test_a_float8_tensor_is_refused_not_cast(tmp_path):
    """Planted c03: WEIGHT_DTYPES taking F8_E4M3: a float8 tensor (a quantized checkpoint's values, without their
    scales) was cast to the run's dtype as if it were the weight. Its bytes are read back by safetensors as the float8
    values they are, which are not the float32 weight they were quantized from: refused at the folder check and at
    the load."""
    from safetensors.torch import load_file, save_file

    from neurobrix.checkpoint import CheckpointError, _check_safetensors
    from neurobrix.model import WeightsError, load_safetensors

    weight = torch.tensor([[0.3, -1.7], [2.9, 0.01]])
    path = tmp_path / "model.safetensors"
    save_file({"w": weight.to(torch.float8_e4m3fn)}, str(path))
    assert not torch.equal(load_file(str(path))["w"].float(), weight)  # what a cast would run
    with pytest.raises(CheckpointError, match=r"w \(F8_E4M3\)"):
        _check_safetensors(path)
    with pytest.raises(WeightsError, match="stored as F8_E4M3"):
        load_safetensors([str(path)], set())


def test_a_shard_named_with_a_backslash_is_refused(tmp_path):
    """Planted c02: shards_named passed a shard name holding a backslash, a path separator where Windows reads it
    (``sub\\model.safetensors`` names a file in a subfolder there, which the store never copies)."""
    import json

    from neurobrix.checkpoint import CheckpointError, shards_named

    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"a": "sub\\model-1.safetensors", "b": "model-2.safetensors"}}))
    with pytest.raises(CheckpointError, match=r"names the shard \"sub\\\\model-1.safetensors\".*a backslash"):
        shards_named(index)
