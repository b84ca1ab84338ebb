"""Planted-bug round 64 (docs/planted-bugs.md): cases for the plants of tests/planted66_plants.py that the tests
guarding their code let through, and for the two defects the round found in the clean code: the chat template's
message clean-up and its named templates (neurobrix/tokenizer.py: ``_chat_message``, ``render_chat``'s pick for a
chat with tools, the templates read from ``additional_chat_templates/``), the decode step's capture
(neurobrix/generate.py: ``Decoder.capture``), warmup's bookkeeping of the caches it builds and of its greedy step
(neurobrix/warmup.py: ``plan_warmup``, ``launch``), an unreadable TRACKED.yaml (neurobrix/tables.py:
``_release_bound``) and the sampling settings' ranges (neurobrix/sampling.py: ``Sampling.validate``).

Each case fails with its plant in place (checked with tests/planted66_driver.py, this file alone) and passes on the
clean code; the two found defects' cases failed on the code before their fix. Templates and sampling ranges are
compared with transformers' own (its tokenizer's apply_chat_template, its warpers' constructors); the decode step's
capture runs on the CPU with the graph capture stood in for, so what is judged is how often it captures; warmup's
plan is made with every length stood in for as certified (one segment), its launch with what it builds and launches
stood in for, so what is judged is which caches are built and which passes made.

Outcomes of all 20: see docs/planted-bugs.md, round 64.
"""

from __future__ import annotations

import dataclasses
import json
import types
from pathlib import Path

import pytest
import torch

from neurobrix import generate, tables
from neurobrix.errors import UsageError
from neurobrix.sampling import Sampling

# ---------------------------------------------------------------------------------------------- the chat template

A = "A:{% for m in messages %}{{ m['content'] }}{% endfor %}"
B = "B:{{ tools | length }}:{% for m in messages %}{{ m['content'] }}{% endfor %}"
MESSAGES = [{"role": "user", "content": "hello"}]
TOOL = {
    "type": "function",
    "function": {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}},
}


def _with_templates(folder: Path, in_config, files: dict[str, str] | None = None) -> Path:
    """The fixture tokenizer with tokenizer_config.json's chat_template ``in_config`` (any JSON value) and ``files``
    (path under the folder -> text) written beside it."""
    from tokenizer_fixtures import save

    save(folder, "bytelevel")
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": in_config}))
    for name, text in (files or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def _rendered(render, tools) -> str | None:
    """What ``render`` gives the chat with ``tools``; None where it fails."""
    try:
        return render(MESSAGES, tools=tools)
    except Exception:  # transformers fails in Jinja's own words (a TypeError): judged as a failure, not by its words
        return None


@pytest.mark.parametrize(
    "templates",
    [
        [{"name": "default", "template": A}, {"name": "tool_use", "template": B}],
        [{"name": "default", "template": A}, {"name": "tool_use", "template": None}],
    ],
    ids=["tool_use text", "tool_use null"],
)
def test_a_chat_with_tools_gets_the_template_transformers_picks(tmp_path, templates):
    """c05, and a defect of the clean code: apply_chat_template takes the tool_use template whenever ``tools`` is
    given, an empty list too (the plant: only a non-empty one), and fails where that template is not text (the clean
    code rendered the default template there, since it looked for tool_use among the usable templates only)."""
    transformers = pytest.importorskip("transformers")
    from neurobrix.tokenizer import Tokenizer, TokenizerError

    folder = _with_templates(tmp_path / "t", templates)
    hf = transformers.AutoTokenizer.from_pretrained(folder)
    ours = Tokenizer(folder)
    for tools in (None, [], [TOOL]):
        want = _rendered(lambda m, tools: hf.apply_chat_template(m, tools=tools, tokenize=False), tools)
        if want is None:
            with pytest.raises(TokenizerError, match="chat template 'tool_use' is null, not text"):
                ours.render_chat(MESSAGES, tools=tools)
        else:
            assert ours.render_chat(MESSAGES, tools=tools) == want, tools


SHOW = (
    "{% for m in messages %}{{ m.role }}:{{ m.content is defined }}:{{ m.content | default('-') }}"
    "|{{ m.reasoning_content is defined }}|{{ m.thinking is defined }}|{{ m.step is defined }}\n{% endfor %}"
)


def test_a_messages_empty_values_reach_the_template(tmp_path):
    """c01: apply_chat_template drops a message's keys whose value is None only: an empty content, a reasoning of
    "" (aliased as reasoning_content and thinking) and a 0 reach the template, which may test them with `is
    defined` (a key dropped renders as Jinja's undefined, the same text wherever the template only prints it)."""
    transformers = pytest.importorskip("transformers")
    from neurobrix.tokenizer import Tokenizer

    folder = _with_templates(tmp_path / "t", SHOW)
    messages = [
        {"role": "user", "content": ""},
        {"role": "assistant", "content": "ok", "reasoning": "", "step": 0},
    ]
    want = transformers.AutoTokenizer.from_pretrained(folder).apply_chat_template(messages, tokenize=False)
    assert "user:True:|False|False|False" in want  # (the case holds an empty content)
    assert Tokenizer(folder).render_chat(messages, add_generation_prompt=False) == want


def test_templates_in_a_subfolder_of_the_named_templates_are_not_read(tmp_path):
    """c07: transformers reads additional_chat_templates/*.jinja, not what lies in folders below it (a default.jinja
    there, read, replaced chat_template.jinja's template)."""
    transformers = pytest.importorskip("transformers")
    from neurobrix.tokenizer import Tokenizer

    folder = _with_templates(
        tmp_path / "t",
        None,
        {
            "chat_template.jinja": A,
            "additional_chat_templates/tool_use.jinja": B,
            "additional_chat_templates/old/default.jinja": B,
        },
    )
    hf = transformers.AutoTokenizer.from_pretrained(folder)
    assert sorted(Tokenizer(folder).chat_templates) == sorted(hf.chat_template)
    want = hf.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
    assert Tokenizer(folder).render_chat(MESSAGES) == want == "A:hello"


# ---------------------------------------------------------------------------------------------- the decode step


class _Model:
    """What the decode loops read of a model: its device, its batch and a forward recording each step's inputs."""

    def __init__(self) -> None:
        self.w = types.SimpleNamespace(embed=torch.zeros(1))
        self.steps: list[tuple[int, int]] = []

    def forward(self, tokens, positions, lengths):
        self.steps.append((int(positions[0, 0]), int(lengths[0])))
        return torch.zeros((tokens.shape[0], 4))


def test_the_decode_step_is_captured_once(monkeypatch):
    """k04: the step is captured as a graph at its first position and replayed from then on (a capture at each step
    kept a graph and its memory pool per token). The capture is stood in for (the call run once, as its warm-up)."""
    captured = []

    def capture_graph(call):
        captured.append(call)
        return types.SimpleNamespace(replay=lambda: None), call()

    monkeypatch.setattr(generate, "capture_graph", capture_graph)
    model = _Model()
    decoder = generate.Decoder(model, 1, use_graph=True)
    decoder.capture(7)
    for position in (7, 8, 9):
        decoder.step(torch.tensor([3]), position)
    assert len(captured) == 1
    assert model.steps == [(7, 8)]  # the capture's warm-up, at the first position: one more key than it
    assert decoder.tokens.tolist() == [[3]] and decoder.state.tolist() == [[9], [10]]  # the last step's inputs


# ---------------------------------------------------------------------------------------------- sampling's ranges

# transformers' generate (utils.py, _get_logits_processor) builds each warper on these values only
BUILT = {
    "top_p": lambda v: v < 1.0,
    "min_p": lambda v: True,
    "typical_p": lambda v: v < 1.0,
    "epsilon_cutoff": lambda v: 0.0 < v < 1.0,
    "eta_cutoff": lambda v: 0.0 < v < 1.0,
    "top_h": lambda v: True,
}


def _warper_takes(name: str, value: float) -> bool:
    lp = pytest.importorskip("transformers.generation.logits_process")
    make = {
        "top_p": lambda v: lp.TopPLogitsWarper(top_p=v),
        "min_p": lambda v: lp.MinPLogitsWarper(min_p=v),
        "typical_p": lambda v: lp.TypicalLogitsWarper(mass=v),
        "epsilon_cutoff": lambda v: lp.EpsilonLogitsWarper(epsilon=v),
        "eta_cutoff": lambda v: lp.EtaLogitsWarper(epsilon=v),
        "top_h": lambda v: lp.TopHLogitsWarper(top_h=v),
    }[name]
    try:
        make(value)
    except ValueError:
        return False
    return True


def _engine_takes(name: str, value: float) -> bool:
    try:
        Sampling(temperature=1.0, **{name: value}).validate()
    except UsageError:
        return False
    return True


@pytest.mark.parametrize("name", sorted(BUILT))
def test_a_sampling_setting_is_taken_where_transformers_warper_takes_it(name):
    """v01, v02 and a defect of the clean code: where transformers' generate builds a warper, the engine takes a
    setting exactly when the warper's constructor does: a min_p of 1 and a top_p of 0 are taken (the plants refused
    them), a typical_p of 0 and a top_h of 0 refused (the clean code took both: the Python API's generate then
    sampled where transformers' refuses). Where generate builds none the engine may refuse (a typical_p of 1)."""
    values = [-0.5, 0.0, 1e-9, 0.25, 1 - 1e-9, 1.0, 1.5]
    judged = [(v, _warper_takes(name, v), _engine_takes(name, v)) for v in values if BUILT[name](v)]
    assert judged and all(theirs == ours for _, theirs, ours in judged), judged


# ---------------------------------------------------------------------------------------------- _release_bound


def test_an_unreadable_tracked_list_binds_nothing(tmp_path, monkeypatch):
    """r01, r02: where TRACKED.yaml cannot be read (gone, a folder in its place, not UTF-8) the wheel's records are
    not taken as verified by this code (read in full instead: never refused for it), and no UnicodeDecodeError
    escapes. The file is written with this code's own line, so only the read is judged."""
    own = "ab" * 32
    monkeypatch.setattr(tables, "verification_rules", lambda: own)
    readable = tmp_path / "ok"
    readable.mkdir()
    (readable / tables.TRACKED_NAME).write_text(f"files: []\nverified_rules: {own}\n", encoding="utf-8")
    assert tables._release_bound(readable) is True  # the line found: bound
    gone, folder, latin = tmp_path / "gone", tmp_path / "folder", tmp_path / "latin"
    gone.mkdir()
    (folder / tables.TRACKED_NAME).mkdir(parents=True)
    latin.mkdir()
    (latin / tables.TRACKED_NAME).write_bytes(f"# caf\xe9\nverified_rules: {own}\n".encode("latin-1"))
    for root in (gone, folder, latin):
        assert tables._release_bound(root) is False, root


# ---------------------------------------------------------------------------------------------- warmup's bookkeeping


def test_a_prompt_is_prefilled_into_a_cache_already_built_where_its_window_holds_one(monkeypatch):
    """w02, w03: the plan prefills each prompt into one cache of each class its runs' capacities have (its window,
    prompt + 1 .. prompt + --max-tokens), taking a cache already built (a decode step's, or one an earlier prompt was
    prefilled into) where the window holds one of that class: a cache is built for prefills alone only where none is.
    With 20 new tokens a window holds two capacities of some classes (x and x + 16), where a cache built for an
    earlier prompt must win over the window's own largest (the plants built another: a decode's cache losing, an
    earlier prompt's forgotten). The prompts are walked in the order the plan takes them (ascending). Every length
    is stood in for as certified, in one segment: what is judged is which caches the plan builds, not the settings."""
    from test_runtime_planted import TINY

    from neurobrix import warmup

    monkeypatch.setattr(warmup, "length_segments", lambda tables, class_id, lo, hi: [(lo, hi)])
    monkeypatch.setattr(warmup, "forward_calls", lambda *args: [])
    monkeypatch.setattr(warmup, "resolve", lambda calls, tables, class_id: types.SimpleNamespace(settings={}))
    loaded = types.SimpleNamespace(classes={"x": types.SimpleNamespace(launch=())})
    context, new = 64, 20
    plan = warmup.plan_warmup(dataclasses.replace(TINY, max_positions=context), loaded, "x", "fp32", max_new=new)
    assert plan.prompts == [(1, context - 1)] and plan.capacities == [(2, context)]
    prompts = sorted({p for ps in plan.prefills.values() for p in ps})
    built = set(plan.decodes)
    reused = 0
    for prompt in prompts:
        window = range(prompt + 1, min(prompt + new, context) + 1)
        caches = [c for c, ps in plan.prefills.items() if prompt in ps]
        classes = [warmup._class_of(c) for c in caches]
        assert all(c in window for c in caches) and len(set(classes)) == len(classes), (prompt, caches)
        assert set(classes) == {warmup._class_of(c) for c in window}, prompt  # each class of the window once
        for cache in caches:
            held = [b for b in built if b in window and warmup._class_of(b) == warmup._class_of(cache)]
            assert not held or cache in built, (prompt, cache, held)
            reused += cache in built and cache not in plan.decodes
        built |= set(caches)
    assert reused  # (the case has a prompt taking a cache an earlier prompt was prefilled into)


def test_launch_makes_each_planned_pass_and_one_greedy_step(monkeypatch):
    """w04: ``launch`` makes a decode step at each decode cache, a prefill of each prompt into its caches, and one
    step of the greedy loop (its greedy_pick's arguments are the same at every length; the plant stepped it at every
    decode cache). What it builds and launches is stood in for, so only its bookkeeping is judged."""
    from test_runtime_planted import TINY

    from neurobrix import memory, model, ops, stack, warmup

    made: list[tuple] = []

    class Transformer:
        def __init__(self, cfg, weights, ops, batch, capacity):
            self.capacity = capacity

    class Decoder:
        def __init__(self, model, batch, use_graph):
            self.model = model

        def step(self, tokens, position):
            made.append(("decode", self.model.capacity))

    class GreedyDecoder(Decoder):
        def start(self, tokens, position):
            pass

        def step(self):
            made.append(("greedy", self.model.capacity))

    monkeypatch.setattr(model, "Transformer", Transformer)
    monkeypatch.setattr(generate, "Decoder", Decoder)
    monkeypatch.setattr(generate, "GreedyDecoder", GreedyDecoder)
    monkeypatch.setattr(generate, "prefill", lambda m, prompts: made.append(("prefill", m.capacity, len(prompts[0]))))
    monkeypatch.setattr(ops, "certified", lambda settings, pdl=False: None)
    monkeypatch.setattr(stack, "require_runnable", lambda *args: None)
    monkeypatch.setattr(memory, "require_fit_on", lambda *args: None)
    monkeypatch.setattr(warmup, "certified_settings", lambda *args: {})
    monkeypatch.setattr(warmup, "scratch_weights", lambda *args: None)
    plan = warmup.WarmupPlan(
        "interpreter", None, [(1, 5)], [(2, 9)], [], [], decodes=[2, 3, 9], prefills={3: [1, 2], 8: [5]}
    )
    progress: list[tuple[int, int]] = []
    assert warmup.launch(TINY, plan, "fp32", "cpu", lambda done, total: progress.append((done, total))) == 6
    assert [m for m in made if m[0] == "greedy"] == [("greedy", 2)]
    assert sorted(m for m in made if m[0] != "greedy") == sorted(
        [("decode", 2), ("decode", 3), ("decode", 9), ("prefill", 3, 1), ("prefill", 3, 2), ("prefill", 8, 5)]
    )
    assert progress == [(n, 6) for n in range(1, 7)]
