"""Planted-bug round 63 (docs/planted-bugs.md): cases for the plants of tests/planted65_plants.py that the tests
guarding their code let through: the store's early answer for a name (neurobrix/store.py: ``unresolved``), sampling's
typical_p and top_h warpers at their bounds (neurobrix/generate.py: ``_draw``, ``_top_h``), the prefill graphs'
bookkeeping (neurobrix/generate.py: ``PrefillGraphs.capture``) and the refusal of a chat template that fails
(neurobrix/tokenizer.py: ``render_chat``). The binding of a wheel's records to the verifying code
(neurobrix/tables.py: ``_release_bound``) was planted too: its tests caught each plant that was not equivalent.

Each case fails with its plant in place (checked with tests/planted65_driver.py, this file alone) and passes on the
clean code. The warpers are compared with transformers' own on one row of scores, at a typical_p or top_h whose bound
is exactly a cumulated value (computed as the warper computes it); ``PrefillGraphs`` runs on the CPU with torch.cuda's
stream, sync and graph calls replaced by stand-ins that run the captured call once, so what is judged is which
lengths it holds, which test_gpu_only.py checks on a GPU only (and there never for a length captured again, nor for a
prompt of the chunk's length).

Outcomes of all 20: see docs/planted-bugs.md, round 63.
"""

from __future__ import annotations

import contextlib
import types

import pytest
import torch

from neurobrix import generate, store

# ---------------------------------------------------------------------------------------------- store.unresolved


def test_the_early_answer_finds_a_hub_id_in_any_case_and_refuses_what_is_no_name(tmp_path, monkeypatch):
    """u01, u03: ``unresolved`` answers as its docstring says, as ``resolve`` finds: a stored hub id given in another
    case is found (the store's case-insensitive match; missed, `run ORG/Model` resolved the model twice, its files'
    sizes checked once more, before the same answer), and a name that is no string, or blank, is unresolved, not an
    AttributeError (no command hands it one: argparse gives a string). The store is stood in for (its folders by
    name, its listing), so only the lookup is judged."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = tmp_path / "org" / "model"
    monkeypatch.setattr(store, "_model_dir", lambda name: folder if name == "org/model" else None)
    monkeypatch.setattr(store, "list_models", lambda: [types.SimpleNamespace(name="org/model", path=folder)])
    assert store._find("ORG/Model") == ("org/model", folder)  # the store's own lookup finds it
    for name in ("org/model", "ORG/Model", "https://huggingface.co/Org/Model"):
        assert store.unresolved(name) is False, name
    for name in ("org/other", "", "  ", None, 5, ["org/model"]):
        assert store.unresolved(name) is True, name


# ---------------------------------------------------------------------------------------------- sampling's warpers


def _kept(monkeypatch, scores: torch.Tensor, **settings) -> torch.Tensor:
    """The tokens ``_draw`` leaves a probability (its draw stood in for: the probabilities it hands torch)."""
    handed = []

    def draw(probs, n, generator=None):
        handed.append(probs)
        return torch.zeros((probs.shape[0], n), dtype=torch.long)

    monkeypatch.setattr(torch, "multinomial", draw)
    generate._draw(scores, generate.Sampling(temperature=1.0, top_k=0, **settings), None)
    return handed[0] > 0


def _scores() -> torch.Tensor:
    return torch.randn((1, 50), generator=torch.Generator().manual_seed(0)) * 2


@pytest.mark.parametrize("k", [1, 3])
def test_typical_p_at_a_cumulated_mass_keeps_what_transformers_keeps(monkeypatch, k):
    """s04: TypicalLogitsWarper keeps the tokens, most typical first, up to the first whose cumulated mass is not
    below typical_p; a typical_p exactly equal to a cumulated mass (read as the warper computes it, in float32) is
    where `<` and `<=` part, the engine keeping one token more than transformers."""
    lp = pytest.importorskip("transformers.generation.logits_process")
    scores = _scores()
    normalized = torch.log_softmax(scores, dim=-1)
    entropy = -(normalized * normalized.exp()).nansum(-1, keepdim=True)
    order = torch.sort((-normalized - entropy).abs(), descending=False)[1]
    mass = float(scores.gather(-1, order).softmax(dim=-1).cumsum(dim=-1)[0, k])
    want = torch.isfinite(lp.TypicalLogitsWarper(mass=mass)(None, scores.clone()))
    assert int(want.sum()) == k + 1  # the case is at the boundary
    assert torch.equal(_kept(monkeypatch, scores, typical_p=mass), want)


@pytest.mark.parametrize("k", [1, 3])
def test_top_h_at_its_bound_keeps_what_transformers_keeps(monkeypatch, k):
    """s05: TopHLogitsWarper keeps the most likely tokens while their cumulated entropy terms are within (<=) top_h
    times the entropy; a top_h whose bound is exactly the k-th cumulated term (found by a search over top_h, the bound
    computed as the warper computes it) keeps that token."""
    lp = pytest.importorskip("transformers.generation.logits_process")
    scores = _scores()
    dist = torch.distributions.Categorical(logits=torch.topk(scores, 50)[0])
    terms = torch.cumsum(-dist.probs * torch.log(dist.probs), dim=-1)
    guess = float(terms[0, k] / dist.entropy()[0])
    top_h = next(
        (
            h
            for i in range(200)
            for h in (guess * (1 + i * 1e-8), guess * (1 - i * 1e-8))
            if (dist.entropy() * h)[0] == terms[0, k]
        ),
        None,
    )
    assert top_h is not None  # a top_h whose bound is the term exactly
    want = torch.isfinite(lp.TopHLogitsWarper(top_h=top_h)(None, scores.clone()))
    assert int(want.sum()) == k + 1
    assert torch.equal(_kept(monkeypatch, scores, top_h=top_h), want)


# ---------------------------------------------------------------------------------------------- prefill graphs


class _Model:
    """What PrefillGraphs reads of a model: its chunk, its batch (the cache's first axis), its device, its positions
    and a forward, which records the length of each pass."""

    def __init__(self, chunk: int, batch: int = 2) -> None:
        self.chunk = chunk
        self.cache = types.SimpleNamespace(k=[torch.zeros(batch, 64)])
        self.w = types.SimpleNamespace(embed=torch.zeros(1))
        self.positions = torch.arange(64)
        self.passes: list[int] = []

    def forward(self, tokens, positions, lengths):
        self.passes.append(tokens.shape[1])
        return tokens.sum(dim=1, keepdim=True).float()


class _Graph:
    def replay(self) -> None:  # (a replay reruns the captured kernels on the static input: not stood in for)
        pass


@pytest.fixture
def cpu_graphs(monkeypatch):
    """torch.cuda's stream, sync and graph calls as stand-ins: the warm-up pass and the capture each run once."""
    stream = types.SimpleNamespace(wait_stream=lambda other: None)
    monkeypatch.setattr(torch.cuda, "Stream", lambda: stream)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: stream)
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "graph", lambda g: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "CUDAGraph", _Graph)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)


def test_prefill_graphs_hold_the_keep_most_recently_used_lengths(cpu_graphs):
    """g01, g02, g03: at most KEEP lengths are held (each keeps its activations' memory), the least recently used
    dropped first, and a length captured again (a later generation at that length) counts as used."""
    keep = generate.PrefillGraphs.KEEP
    graphs = generate.PrefillGraphs(_Model(chunk=64))
    for n in range(1, keep + 2):
        graphs.capture(n)
    assert list(graphs.graphs) == list(range(2, keep + 2))
    graphs.capture(2)  # used again: now the most recent
    graphs.capture(keep + 2)
    assert list(graphs.graphs) == [*range(4, keep + 2), 2, keep + 2]


def test_a_prompt_of_the_chunks_length_is_captured_and_a_longer_one_is_not(cpu_graphs):
    """g04: a prompt of exactly ``chunk`` tokens is prefilled in one pass (``prefill_chunks``), so its graph is
    captured and replayed; one token more is prefilled in chunks, eagerly."""
    model = _Model(chunk=8)
    graphs = generate.PrefillGraphs(model)
    graphs.capture(8)
    graphs.capture(9)
    assert list(graphs.graphs) == [8]
    assert model.passes == [8, 8]  # the warm-up pass and the captured one
    graph, static, logits = graphs.graphs[8]
    prompts = [[1] * 8, [2] * 8]
    assert generate.prefill(model, prompts, graphs) is logits  # replayed: no eager pass
    assert model.passes == [8, 8] and static.tolist() == prompts


# ---------------------------------------------------------------------------------------------- the chat template


def test_a_templates_error_over_several_lines_is_refused_on_one(tmp_path):
    """c02: a template's raise_exception may say its message over several lines (blank ones among them): the refusal
    is one line, the message's lines joined by " / ", as for a template's own error."""
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import ChatTemplateError, Tokenizer

    template = '{{ raise_exception("roles must alternate\n\n  user first") }}'
    folder = save(tmp_path / "tok", "bytelevel", chat_template=template)
    with pytest.raises(ChatTemplateError) as refused:
        Tokenizer(folder).render_chat([{"role": "user", "content": "x"}])
    assert refused.value.said == "roles must alternate / user first"
    assert "\n" not in str(refused.value)
