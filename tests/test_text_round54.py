"""The fifty-fourth round of text parity: the chat path's arguments and values against transformers'
``apply_chat_template``: ``continue_final_message``, messages whose content is a list of parts, what a template sees
of the values it is handed, and the arguments of apply_chat_template that are no template variables.

- ``continue_final_message`` (true, or the name of the field to continue) leaves the last message open, the model to
  go on with it: transformers tags the field's end (the last text part of a list of parts; every copy of a reasoning
  field), renders, and cuts the chat at the tag (the spaces before it too where the template trimmed the tag's own);
  ``add_generation_prompt`` then defaults to off, and both on is refused. ``render_chat`` took it for a template
  variable and rendered the whole chat (the end-of-turn token after the message, and the next header). It now cuts
  where transformers cuts, and refuses in one line where transformers raises (no such field, a field the template
  does not read, a final message of no text, a template that drops part of it).
- apply_chat_template rebuilds what a template sees as plain JSON values (``_plain_template_data``): a set, bytes or an
  object print as ``<set>``, ``<bytes>``..., a numpy scalar as its item, a str or int subclass as the base type, a
  dataclass or pydantic message as a dict. ``render_chat`` handed them on as given (``{1, 2}`` printed; a dataclass
  message refused as "the model's chat template failed").
- ``chat_template``, ``tokenize``, ``sanitize_control_tokens``, ``return_assistant_tokens_mask``... are
  apply_chat_template's own arguments; ``render_chat`` passed them to the template as variables (a template reading
  ``tokenize`` saw it; another template than the one asked for rendered): now refused naming the argument, as are
  tools that are not JSON schemas and documents that are not dicts (transformers raises on both).

Drawn (outside the repository; docs/text-rounds.md has the counts): render_chat and encode_chat against
apply_chat_template (text and ids) over Llama 3, Llama 3.2, Qwen2.5, Mistral, Zephyr, Gemma 2, Gemma 3, Qwen2-VL and
ChatML-with-tojson templates on the sentencepiece, metaspace and byte-level fixtures, and `run --backend torch` (chat
on, `--system` or a drawn conversation) against transformers' greedy generate on tiny Llama, Mistral and Qwen2
checkpoints (round 39's builder)."""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

transformers = pytest.importorskip("transformers")

from test_text_round27 import LLAMA3, ZEPHYR  # noqa: E402

# google/gemma-3's template (images left as their marker): the system text folded into the first user turn, content
# as text or a list of parts, each part's text trimmed
GEMMA3 = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\n'}}
{%- endif -%}
"""
# ChatML printing a list of parts as JSON (non-ASCII kept or escaped), loop controls, and a reasoning field
CHATML = (
    "{%- set ns = namespace(n=0) -%}{{ bos_token }}"
    "{%- for message in messages -%}"
    "{%- if message.role == 'tool' %}{% continue %}{% endif -%}"
    "{%- if ns.n >= 6 %}{% break %}{% endif -%}{%- set ns.n = ns.n + 1 -%}"
    "<|im_start|>{{ message.role }}\n"
    "{%- if message.reasoning_content is defined %}<think>{{ message.reasoning_content }}</think>{% endif -%}"
    "{%- if message.content is string %}{{ message.content }}"
    "{% else %}{{ message.content | tojson(ensure_ascii=ASCII) }}{% endif %}<|im_end|>\n{%- endfor -%}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif -%}"
)
MARKERS = ["<start_of_turn>", "<end_of_turn>", "<|im_start|>", "<|im_end|>", "<|start_header_id|>", "<|eot_id|>"]


def folder(tmp_path: Path, template: str, kind: str = "bytelevel") -> Path:
    """The fixture tokenizer with ``template`` and the templates' markers as special added tokens."""
    from tokenizer_fixtures import save

    out = save(tmp_path / f"t{len(list(tmp_path.iterdir()))}", kind, chat_template=template)
    config = json.loads((out / "tokenizer_config.json").read_text())
    size = len(json.loads((out / "tokenizer.json").read_text())["model"]["vocab"]) + 40
    decoder = config.setdefault("added_tokens_decoder", {})
    for i, marker in enumerate(MARKERS):
        decoder[str(size + i)] = {
            **{"content": marker, "lstrip": False, "rstrip": False, "normalized": False},
            **{"single_word": False, "special": True},
        }
    (out / "tokenizer_config.json").write_text(json.dumps(config))
    return out


def both(path: Path, chat: list[Any], **kwargs: Any) -> tuple[Any, Any]:
    """(transformers' (text, ids) or its exception, the engine's (text, ids) or its UsageError), each on its own copy
    of ``chat``."""
    from neurobrix.errors import UsageError
    from neurobrix.tokenizer import Tokenizer

    tok = transformers.AutoTokenizer.from_pretrained(path)
    ours = Tokenizer(path)
    try:
        want: Any = (
            tok.apply_chat_template(json.loads(json.dumps(chat)), tokenize=False, **kwargs),
            tok.apply_chat_template(json.loads(json.dumps(chat)), return_dict=True, **kwargs)["input_ids"],
        )
    except Exception as exc:  # ValueError, TypeError, the template's TemplateError
        want = exc
    try:
        got: Any = (
            ours.render_chat(json.loads(json.dumps(chat)), **kwargs),
            ours.encode_chat(json.loads(json.dumps(chat)), **kwargs),
        )
    except UsageError as exc:
        assert str(exc).strip() and "\n" not in str(exc), str(exc)
        got = exc
    return want, got


PARTS = [{"type": "text", "text": "Look "}, {"type": "image"}, {"type": "text", "text": "naïve 中文 "}]
CONTINUED = {
    # the end-of-turn token after the message and the next header were rendered
    "llama3": (LLAMA3, [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Sure, the"}], True),
    "zephyr": (ZEPHYR, [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Sure "}], "content"),
    # the last text part continued; its trailing space trimmed by the template (cut before the spaces)
    "gemma3 parts": (
        GEMMA3,
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": PARTS},
        ],
        True,
    ),
    # a reasoning field under another name: every copy tagged, the template reads reasoning_content
    "chatml thinking": (
        CHATML.replace("ASCII", "false"),
        [{"role": "user", "content": PARTS}, {"role": "assistant", "content": "x", "thinking": "so é"}],
        "thinking",
    ),
}


@pytest.mark.parametrize("name", sorted(CONTINUED))
def test_the_final_message_is_continued_where_apply_chat_template_cuts_it(tmp_path, name):
    template, chat, continued = CONTINUED[name]
    want, got = both(folder(tmp_path, template), chat, continue_final_message=continued)
    assert not isinstance(want, Exception), want
    assert got == want
    # add_generation_prompt defaults to off while continuing: the same as apply_chat_template's default
    assert got[0].rstrip().endswith(("the", "Sure", "中文", "so é"))


REFUSED = {
    "with add_generation_prompt": (LLAMA3, "Sure", {"continue_final_message": True, "add_generation_prompt": True}),
    "no such field": (LLAMA3, "Sure", {"continue_final_message": "reasoning_content"}),
    "a field the template does not read": (ZEPHYR, "Sure", {"continue_final_message": "name"}),
    "no text part": (GEMMA3, [{"type": "image"}], {"continue_final_message": True}),
    "a number": (CHATML.replace("ASCII", "true"), 7, {"continue_final_message": True}),
    "the template drops part of it": ("{{ messages[-1].content[:2] }}", "Sure thing", {"continue_final_message": True}),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_final_message_apply_chat_template_cannot_continue_is_refused_in_one_line(tmp_path, name):
    from neurobrix.errors import UsageError

    template, content, kwargs = REFUSED[name]
    chat = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": content, "name": None}]
    want, got = both(folder(tmp_path, template), chat, **kwargs)
    assert isinstance(want, Exception) and isinstance(got, UsageError), (want, got)


class Mood(str, enum.Enum):
    CALM = "calm"


@dataclasses.dataclass
class Message:
    role: str
    content: Any


SHOW = "{% for m in messages %}{{ m.role }}={{ m.content }}|{{ m.extra }};{% endfor %}{{ seen }}|{{ stops }}"


@pytest.mark.parametrize(
    "chat, variables",
    [
        ([{"role": "user", "content": ("a", "é"), "extra": {3, 4}}], {}),
        ([{"role": "user", "content": "Hi", "extra": b"raw"}], {"seen": frozenset()}),
        ([{"role": Mood.CALM, "content": "Hi", "extra": Mood.CALM}], {"stops": {"x": {1}}}),
        ([Message("user", "Hi"), {"role": "assistant", "content": Message("tool", [1])}], {}),
    ],
)
def test_a_template_sees_the_plain_values_apply_chat_template_hands_it(tmp_path, chat, variables):
    """A set printed "{3, 4}" (transformers: "<set>"), a dataclass message refused as the template's failure."""
    from neurobrix.tokenizer import Tokenizer

    path = folder(tmp_path, SHOW)
    tok = transformers.AutoTokenizer.from_pretrained(path)
    want = tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True, **variables)
    assert Tokenizer(path).render_chat(chat, **variables) == want


@pytest.mark.parametrize(
    "kwargs",
    [  # (chat_template, refused here in this round, is applied as transformers applies it since round 55)
        {"sanitize_control_tokens": True},
        {"tokenize": False},
        {"return_assistant_tokens_mask": True},
        {"tools": ["get_weather"]},
        {"tools": {"name": "f"}},
        {"documents": ["text"]},
    ],
)
def test_apply_chat_template_s_own_arguments_are_no_template_variables(tmp_path, kwargs):
    """Each reached the template as a variable (or a tool it printed); transformers uses it itself, or raises."""
    from neurobrix.errors import UsageError
    from neurobrix.tokenizer import Tokenizer

    path = folder(tmp_path, "{{ chat_template }}{{ tokenize }}{{ tools }}{{ documents }}{{ messages[0].content }}")
    name = next(iter(kwargs))
    with pytest.raises(UsageError, match=name) as refused:
        Tokenizer(path).render_chat([{"role": "user", "content": "Hi"}], **kwargs)
    assert "\n" not in str(refused.value)


# --- through `run`, against transformers' greedy generate -------------------------------------------------------------


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    import test_text_round39 as r39

    path = tmp_path_factory.mktemp("r54") / "m"
    shape = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2}
    r39.build(path, "llama", shape, {}, 6, seed=7, tokenizer="sentencepiece")
    config = json.loads((path / "tokenizer_config.json").read_text())
    (path / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": GEMMA3}))
    return path


def _greedy(path: Path, ids: list[int], new: int) -> list[int]:
    import torch

    net = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float64).eval()
    with torch.no_grad():
        out = net.generate(
            torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long), do_sample=False,
            max_new_tokens=new, output_scores=True, return_dict_in_generate=True,
        )  # fmt: skip
    for scores in out.scores:
        top = torch.topk(scores[0], 2).values
        assert float(top[0] - top[1]) > 1e-3, "a near tie"
    return out.sequences[0, len(ids) :].tolist()


def test_run_continues_a_conversation_and_places_a_system_message_as_transformers(model, monkeypatch):
    """Gemma 3's template on a tiny Llama (one start token: the template writes it, the tokenizer adds none more
    there): `run --system` (folded into the user turn) and a conversation of parts whose last message is continued
    (`run`'s prompt ids replaced by encode_chat's), each against transformers' greedy generate on
    apply_chat_template's ids, token by token."""
    from neurobrix import run, store
    from neurobrix.tokenizer import Tokenizer

    monkeypatch.setenv("NEUROBRIX_HOME", str(model.parent / "home"))
    monkeypatch.delenv("NEUROBRIX_TABLES", raising=False)
    store.import_model(str(model), progress=False)
    tok = transformers.AutoTokenizer.from_pretrained(model)
    seen: dict[str, list[int]] = {}
    real = run.generate

    def generate(net, prompt, *args, **kwargs):
        seen["prompt"] = list(prompt)
        seen["ids"], stats = real(net, prompt, *args, **kwargs)
        return seen["ids"], stats

    monkeypatch.setattr(run, "generate", generate)
    system = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "the model runs"}]
    continued = [
        {"role": "user", "content": [{"type": "text", "text": "hello world "}]},
        {"role": "assistant", "content": [{"type": "text", "text": "never guess "}]},
    ]
    for chat, how in ((system, {"add_generation_prompt": True}), (continued, {"continue_final_message": True})):
        want_prompt = tok.apply_chat_template(chat, return_dict=True, **how)["input_ids"]
        assert want_prompt.count(tok.bos_token_id) == 1
        want = _greedy(model, want_prompt, 5)
        if "continue_final_message" in how:
            monkeypatch.setattr(Tokenizer, "encode_prompt", lambda self, *a, **k: self.encode_chat(chat, **how))
        text: list[str] = []
        options = run.RunOptions(
            model=model.name, prompt="the model runs", system="Be brief." if chat is system else None,
            max_tokens=5, backend="torch", chat=True, stream=False,
        )  # fmt: skip
        run.run(options, write=text.append, notice=lambda note: None)
        assert seen["prompt"] == want_prompt
        assert seen["ids"] == want
        assert "".join(text).removesuffix("\n") == tok.decode(want, skip_special_tokens=True)
    assert os.path.isdir(model.parent / "home")
    shutil.rmtree(model.parent / "home")
