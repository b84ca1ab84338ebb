"""What a user reads is exactly what transformers gives for the same files: decoded and streamed text, the
end-of-text ids, and chat templates (with what transformers' environment gives a template)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizer_fixtures import CORPUS, KINDS, save

from neurobrix.tokenizer import TextStream, Tokenizer, TokenizerError

transformers = pytest.importorskip("transformers")

PROPERTY = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tokenizers")
    return {kind: save(root / kind, kind) for kind in KINDS}


@pytest.fixture(scope="module")
def ours(saved) -> dict[str, Tokenizer]:
    return {kind: Tokenizer(path) for kind, path in saved.items()}


@pytest.fixture(scope="module")
def theirs(saved):
    return {kind: transformers.AutoTokenizer.from_pretrained(path) for kind, path in saved.items()}


# Id sequences of two kinds: any ids at all (special tokens, lone bytes, invalid UTF-8 runs), and the ids
# of text with newlines, leading spaces and multi-byte characters (which byte-level and byte-fallback
# tokenizers split over several tokens), with special tokens spliced in.
TEXT = st.lists(st.sampled_from(list("ab é中🙂\n\t.,'!?") + ["don't", " the", "\n  ", "naïve", " ."]), max_size=20).map(
    "".join
)


def id_sequences(tokenizer: Tokenizer):
    vocab = tokenizer._tok.get_vocab_size()
    anything = st.lists(st.integers(0, vocab - 1), max_size=40)
    encoded = st.builds(
        lambda text, specials: _splice(tokenizer.encode_text(text), specials),
        TEXT,
        st.lists(st.tuples(st.integers(0, 40), st.sampled_from(sorted(tokenizer.waiting_ids) or [0])), max_size=3),
    )
    return st.one_of(anything, encoded)


def _splice(ids: list[int], inserts: list[tuple[int, int]]) -> list[int]:
    out = list(ids)
    for at, token in inserts:
        out.insert(min(at, len(out)), token)
    return out


def streamed(tokenizer: Tokenizer, ids: list[int]) -> tuple[list[str], str]:
    stream = tokenizer.stream()
    return [stream.push(i) for i in ids], stream.finish()


@pytest.mark.parametrize("kind", KINDS)
def test_streamed_text_is_the_whole_decode(ours, kind):
    tokenizer = ours[kind]

    @PROPERTY
    @given(id_sequences(tokenizer))
    def check(ids):
        pieces, rest = streamed(tokenizer, ids)
        assert "".join(pieces) + rest == tokenizer.decode(ids)
        # and it streams: after each token, all but a pending tail of the text so far is written
        # (a partial character, a byte run, or the clean-up's reach)
        written = ""
        for n, piece in enumerate(pieces, 1):
            written += piece
            so_far = tokenizer.decode(ids[:n])
            if not tokenizer.clean_up and ids[n - 1] not in tokenizer.waiting_ids and not so_far.endswith("\ufffd"):
                assert written == so_far, (ids[:n], written, so_far)
            assert len(written) >= len(so_far) - TextStream.HOLD - 4 * sum(i in tokenizer.waiting_ids for i in ids[:n])

    check()


@pytest.mark.parametrize("kind", KINDS)
def test_decode_is_what_transformers_decodes(ours, theirs, kind):
    tokenizer = ours[kind]

    @PROPERTY
    @given(id_sequences(tokenizer))
    def check(ids):
        assert tokenizer.decode(ids) == theirs[kind].decode(ids, skip_special_tokens=True)

    check()


@pytest.mark.parametrize("kind", KINDS)
def test_prompt_ids_are_what_transformers_encodes(ours, theirs, kind):
    for text in CORPUS[:5] + [" leading", "trailing \n", "🙂🙂 中"]:
        assert ours[kind].encode_prompt(text, chat=False) == theirs[kind](text)["input_ids"]


def test_the_newline_case_that_lost_a_space(ours):
    """A SentencePiece token after a newline keeps its leading space in the stream, as in the whole decode."""
    tokenizer = ours["sentencepiece"]
    ids = tokenizer.encode_text("first line\n second line\n third")
    pieces, rest = streamed(tokenizer, ids)
    assert "".join(pieces) + rest == tokenizer.decode(ids) == "first line\n second line\n third"


def test_a_byte_that_an_invalid_byte_follows_is_not_written_early(ours):
    """ByteFallback decodes a run of byte tokens as a whole: '|' alone, '\ufffd\ufffd' with a stray
    continuation byte after it. The stream waits for the run to close."""
    tokenizer = ours["sentencepiece"]
    bar, stray, word = tokenizer._tok.token_to_id("<0x7C>"), tokenizer._tok.token_to_id("<0x82>"), 20
    pieces, rest = streamed(tokenizer, [bar, stray, word])
    assert pieces[:2] == ["", ""] and "".join(pieces) + rest == tokenizer.decode([bar, stray, word])
    assert tokenizer.decode([bar, stray, word]).startswith("\ufffd\ufffd")


# --- end of text ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "generation, config_eos",
    [
        (None, 6),  # no generation_config.json: config.json's
        (None, None),
        (None, "absent"),  # config.json without the field: transformers' config class default (LlamaConfig: 2)
        ({"eos_token_id": [7, 8]}, 6),  # generation_config.json's, config.json's ignored
        ({"eos_token_id": 7}, [6, 9]),
        ({"bos_token_id": 1}, 6),  # the file names none: nothing stops generation early
    ],
)
def test_eos_ids_are_those_transformers_generate_stops_on(saved, tmp_path, generation, config_eos):
    """generation_config.json's eos ids when the model has that file, else config.json's; the tokenizer's own
    eos_token (</s>, id 2 here) is not added: transformers goes on past it, so the text goes on too."""
    import torch
    from store_fixtures import make_checkpoint

    folder = make_checkpoint(tmp_path / "model", use_transformers=False)
    (folder / "generation_config.json").unlink()
    if generation is not None:
        (folder / "generation_config.json").write_text(json.dumps(generation))
    config = json.loads((folder / "config.json").read_text())
    config = {k: v for k, v in config.items() if k != "eos_token_id"}
    (folder / "config.json").write_text(
        json.dumps(config if config_eos == "absent" else {**config, "eos_token_id": config_eos})
    )
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    expected = model.generation_config.eos_token_id
    expected = set(expected if isinstance(expected, list) else [] if expected is None else [expected])
    from neurobrix.checkpoint import read_config

    assert Tokenizer(folder).eos_ids(read_config(folder).eos_token_ids) == expected


@pytest.mark.parametrize(
    "generation, penalty, unapplied",
    [
        ({"eos_token_id": 2}, None, []),
        ({"repetition_penalty": 1.05, "no_repeat_ngram_size": 0, "min_length": 0}, 1.05, []),  # as Qwen2.5 ships
        ({"repetition_penalty": 2.0}, 2.0, []),  # an integer 2 transformers refuses (text round 14)
        (  # token masks the engine applies (neurobrix.generate.Constraints): not named
            {
                "no_repeat_ngram_size": 3,
                "suppress_tokens": [5],
                "forced_eos_token_id": None,
                "sequence_bias": [[[5], 1.0]],
            },
            None,
            [],
        ),
        ({"num_beams": 1, "guidance_scale": 1, "watermarking_config": None}, None, []),
        (
            {"num_beams": 4, "guidance_scale": 1.5, "watermarking_config": {"bias": 2.5}},
            None,
            ["num_beams=4", "guidance_scale=1.5", "watermarking_config={'bias': 2.5}"],
        ),
    ],
)
def test_generation_config_repetition_penalty_and_what_is_not_applied(saved, tmp_path, generation, penalty, unapplied):
    """The repetition penalty transformers' generate takes from generation_config.json, and the settings there
    that would change transformers' greedy text which the engine does not apply (named, not ignored silently)."""
    from store_fixtures import make_checkpoint

    folder = make_checkpoint(tmp_path / "model", use_transformers=False)
    (folder / "generation_config.json").write_text(json.dumps(generation))
    tokenizer = Tokenizer(folder)
    assert tokenizer.repetition_penalty == penalty
    assert tokenizer.unapplied_generation_settings() == unapplied


def test_each_setting_named_as_not_applied_changes_or_stops_transformers_greedy_generate(tmp_path):
    """Each generation_config.json setting below either changes the ids of transformers' greedy ``generate`` or makes
    it refuse to run (code to load from the hub, a tokenizer to pass): every one is named in the note; settings
    that change neither (sampling-only ones, prompt lookup, a cache) are not."""
    import torch
    from store_fixtures import make_checkpoint

    folder = make_checkpoint(tmp_path / "model", use_transformers=False)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    prompt = torch.tensor([[3, 4, 5, 6, 7, 3, 4]])

    def greedy(setting):
        config = transformers.GenerationConfig(eos_token_id=None, pad_token_id=0, max_new_tokens=12, **setting)
        try:
            return model.generate(prompt, generation_config=config, do_sample=False)[0].tolist()
        except ValueError:
            return None  # generate refuses to run with it

    plain = greedy({})
    noted = [
        {"penalty_alpha": 0.6},
        {"penalty_alpha": 0.6, "top_k": 4},
        {"dola_layers": "low"},
        {"force_words_ids": [[5]]},
        {"token_healing": True},
    ]
    quiet = [
        {"prompt_lookup_num_tokens": 3},
        {"top_k": 20, "top_p": 0.8, "temperature": 0.6},
        {"penalty_alpha": 0.6, "top_k": 1},
    ]
    for setting, named in [(s, True) for s in noted] + [(s, False) for s in quiet]:
        (folder / "generation_config.json").write_text(json.dumps(setting))
        unapplied = Tokenizer(folder).unapplied_generation_settings()
        assert (greedy(setting) != plain) == named == bool(unapplied), setting
        assert all(any(item.startswith(f"{key}=") for item in unapplied) for key in setting if named and key != "top_k")


def test_without_generation_config_json_the_settings_are_config_jsons(tmp_path):
    """A model without generation_config.json: transformers' generate takes its settings from config.json
    (GenerationConfig.from_model_config), so the engine takes the same repetition penalty and new-token limit from
    there, and names what it does not apply; with the file, config.json's are not used."""
    import torch
    from store_fixtures import make_checkpoint

    from neurobrix.generate import Sampling
    from neurobrix.run import model_sampling

    folder = make_checkpoint(tmp_path / "model", use_transformers=False)
    (folder / "generation_config.json").unlink()
    config = json.loads((folder / "config.json").read_text())
    legacy = {
        "repetition_penalty": 1.8,
        "max_new_tokens": 7,
        "num_beams": 2,
        "no_repeat_ngram_size": 2,
        "max_length": None,
    }
    (folder / "config.json").write_text(json.dumps(config | legacy))
    theirs = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).generation_config
    ours, said = Tokenizer(folder), []
    assert ours.repetition_penalty == theirs.repetition_penalty == 1.8
    assert ours.max_new_tokens(5) == (theirs.max_new_tokens, "config.json's max_new_tokens is 7")
    assert ours.unapplied_generation_settings() == [f"num_beams={theirs.num_beams}"]
    assert ours.constraints(32) == {"no_repeat_ngram_size": theirs.no_repeat_ngram_size}
    assert model_sampling(Sampling(), ours, said.append).repetition_penalty == 1.8
    assert said == [
        "note: repetition penalty 1.8 from the model's config.json (--repetition-penalty 1 turns it off)",
        "note: the model's config.json sets num_beams=2, which NeuroBrix does not apply: its text may "
        "differ from transformers'",
    ]
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 2}))
    theirs = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).generation_config
    ours = Tokenizer(folder)
    assert ours.repetition_penalty is None and theirs.repetition_penalty in (None, 1.0)
    assert ours.max_new_tokens(5) is None and theirs.max_new_tokens is None
    assert ours.unapplied_generation_settings() == [] and not theirs.no_repeat_ngram_size
    assert ours.constraints(32) == {}


@pytest.mark.parametrize(
    "model, want", [({"top_k": 3, "top_p": 0.5}, {"top_k": 3, "top_p": 0.5}), ({"top_k": 0, "top_p": 1.0}, {})]
)
def test_sampling_takes_the_models_top_k_and_top_p_unless_given(tmp_path, model, want):
    """transformers' generate samples with generation_config.json's top_k and top_p whenever it samples: --temperature
    T takes them too, with a note, unless --top-k or --top-p is given (it sampled from every token before). A top_k
    of 0 or a top_p of 1 limits nothing; greedy decoding takes neither."""
    import torch
    from store_fixtures import make_checkpoint

    from neurobrix.generate import Sampling
    from neurobrix.run import model_sampling

    folder = make_checkpoint(tmp_path / "model", use_transformers=False)
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 2, "do_sample": True, **model}))
    theirs = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).generation_config
    assert (theirs.top_k, theirs.top_p) == (model["top_k"], model["top_p"])
    ours, said = Tokenizer(folder), []
    assert ours.sampling_limits() == want
    got = model_sampling(Sampling(temperature=0.7), ours, said.append)
    assert (got.top_k, got.top_p) == (want.get("top_k"), want.get("top_p"))
    assert bool(want) == any(
        "from the model's generation_config.json (--top-k and --top-p override them)" in s for s in said
    )
    got = model_sampling(Sampling(temperature=0.7, top_k=10), ours, said.append)
    assert (got.top_k, got.top_p) == (10, want.get("top_p"))
    greedy = model_sampling(Sampling(), ours, said.append)
    assert (greedy.top_k, greedy.top_p) == (None, None)


@pytest.mark.parametrize(
    "setting, message",
    [
        ({"forced_eos_token_id": -1}, "forced_eos_token_id -1 names ids outside the vocabulary of 32"),
        ({"bad_words_ids": [3, 4]}, "bad_words_ids must be a list of id lists"),
        ({"bad_words_ids": [[3], [99]]}, r"bad_words_ids \[99\] names ids outside the vocabulary"),
        ({"min_new_tokens": "3"}, "min_new_tokens must be an integer"),
        ({"suppress_tokens": ["a"]}, r"suppress_tokens \['a'\]: transformers' processor makes no list of token ids"),
    ],
)
def test_a_bad_token_masking_setting_is_one_line(tmp_path, setting, message):
    """Values transformers' processors refuse (or fail on) are refused with the file and the field named."""
    import torch
    from store_fixtures import make_checkpoint

    folder = make_checkpoint(tmp_path / "model", use_transformers=False)
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 2, **setting}))
    with pytest.raises(TokenizerError, match=f"generation_config.json: {message}"):
        Tokenizer(folder).constraints(32)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    with pytest.raises((ValueError, IndexError, TypeError, RuntimeError)):
        model.generate(torch.tensor([[3, 4, 5]]), do_sample=False, max_new_tokens=1, pad_token_id=0, **setting)


# true is 1 to transformers: no penalty; infinity it takes (tests/test_text_round15.py)
@pytest.mark.parametrize("value", [0, -1.2, "1.1", 2, float("nan")])
def test_a_bad_generation_config_repetition_penalty_is_refused(tmp_path, value):
    from store_fixtures import make_checkpoint

    from neurobrix.tokenizer import TokenizerError

    folder = make_checkpoint(tmp_path / "model", use_transformers=False)
    (folder / "generation_config.json").write_text(json.dumps({"repetition_penalty": value}))
    with pytest.raises(TokenizerError, match="generation_config.json: repetition_penalty must be a number > 0"):
        _ = Tokenizer(folder).repetition_penalty


# --- chat templates ------------------------------------------------------------------------------

SYSTEM_AND_TOOLS = """{{- bos_token }}
{%- if messages[0]['role'] == 'system' %}{% set system = messages[0]['content'] %}{% set rest = messages[1:] %}
{%- else %}{% set system = 'You are helpful. Today is ' + strftime_now('%d %b %Y') + '.' %}
{%- set rest = messages %}{% endif %}
<|start_header_id|>system<|end_header_id|>

{{ system }}
{%- if tools is not none %}

You may call these functions:
{% for tool in tools %}{{ tool | tojson(indent=4) }}
{% endfor %}{% endif %}<|eot_id|>
{%- for message in rest %}
{%- if message['role'] not in ['user', 'assistant'] %}
{{- raise_exception('roles must be user or assistant') }}{% endif %}
<|start_header_id|>{{ message['role'] }}<|end_header_id|>

{% generation %}{{ message['content'] | trim }}{% endgeneration %}<|eot_id|>
{%- endfor %}
{%- if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>

{% endif %}"""

BREAK_AND_NAMESPACE = """{% set ns = namespace(found=false, count=0) %}
{%- for m in messages %}{% if m['role'] == 'stop' %}{% set ns.found = true %}{% break %}{% endif %}
{%- if m['role'] == 'skip' %}{% continue %}{% endif %}{% set ns.count = ns.count + 1 %}
<{{ m['role'] }}>{{ m['content'] | tojson }}</{{ m['role'] }}>{% endfor %}
{%- set extra = dict(n=ns.count, stopped=ns.found) %}{{ extra | tojson }}{{ eos_token }}"""

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather <now> & here, in °C",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "a city: 'Zürich'"}},
                "required": ["city"],
            },
        },
    }
]

CHATS = {
    "system-and-tools": (
        SYSTEM_AND_TOOLS,
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Zürich?  "}],
        TOOLS,
    ),
    "default-system-with-date": (
        SYSTEM_AND_TOOLS,
        [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "hi <b>there</b>"},
            {"role": "user", "content": "and now?"},
        ],
        None,
    ),
    "break-continue-namespace-dict": (
        BREAK_AND_NAMESPACE,
        [
            {"role": "user", "content": 'one "quoted" <tag> & café'},
            {"role": "skip", "content": "x"},
            {"role": "assistant", "content": "two"},
            {"role": "stop", "content": "-"},
            {"role": "user", "content": "never shown"},
        ],
        None,
    ),
}


@pytest.mark.parametrize("kind", ["bytelevel", "sentencepiece"])
@pytest.mark.parametrize("chat", sorted(CHATS))
def test_chat_template_ids_are_what_transformers_gives(tmp_path, kind, chat):
    template, messages, tools = CHATS[chat]
    folder = save(tmp_path / kind, kind, chat_template=template)
    hf = transformers.AutoTokenizer.from_pretrained(folder)
    expected = hf.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=True)
    expected = expected["input_ids"] if hasattr(expected, "keys") else expected
    assert Tokenizer(folder).encode_chat(messages, tools=tools) == list(expected)
    assert Tokenizer(folder).render_chat(messages, tools=tools) == hf.apply_chat_template(
        messages, tools=tools, add_generation_prompt=True, tokenize=False
    )


def test_named_templates_pick_tool_use_when_tools_are_given(tmp_path):
    folder = save(tmp_path / "tok", "bytelevel")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["chat_template"] = [
        {"name": "default", "template": "D{{ messages[0]['content'] }}"},
        {"name": "tool_use", "template": "T{{ tools | length }}{{ messages[0]['content'] }}"},
    ]
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    tokenizer = Tokenizer(folder)
    assert tokenizer.render_chat([{"role": "user", "content": "x"}]) == "Dx"
    assert tokenizer.render_chat([{"role": "user", "content": "x"}], tools=TOOLS) == "T1x"


def test_a_template_that_raises_is_one_message(tmp_path):
    folder = save(tmp_path / "tok", "bytelevel", chat_template=SYSTEM_AND_TOOLS)
    with pytest.raises(TokenizerError, match="roles must be user or assistant; try --no-chat"):
        Tokenizer(folder).render_chat([{"role": "tool", "content": "x"}])
    sandboxed = save(tmp_path / "tok2", "bytelevel", chat_template="{{ messages.__class__.__mro__ }}")
    with pytest.raises(TokenizerError, match="chat template failed"):
        Tokenizer(sandboxed).render_chat([{"role": "user", "content": "x"}])


# --- the special tokens tokenizer_config.json names ------------------------------------------------

CONFIG_TOKENS = {
    "named-only": {},  # bos/eos/unk as text: plain vocabulary tokens in a word-level tokenizer.json
    "additional": {"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]},
    "extra-list": {
        "extra_special_tokens": [
            "<|im_start|>",
            {"__type": "AddedToken", "content": "<|im_end|>", "lstrip": True, "rstrip": False, "normalized": False},
        ]
    },
    "extra-named-and-model-token": {"extra_special_tokens": {"image_token": "<image>"}, "img_token": "<img>"},
    "added-tokens-decoder": {
        "added_tokens_decoder": {
            "500": {"content": "<extra>", "lstrip": False, "rstrip": True, "normalized": False, "special": True},
            "2": {"content": "</s>", "lstrip": False, "rstrip": False, "normalized": False, "special": False},
        }
    },
    "new-pad-and-a-vocabulary-word-as-mask": {"pad_token": "<pad>", "mask_token": "hello"},
}


@pytest.mark.parametrize("kind", ["wordlevel", "bytelevel"])
@pytest.mark.parametrize("variant", sorted(CONFIG_TOKENS))
def test_tokens_tokenizer_config_names_are_special_as_in_transformers(saved, tmp_path, kind, variant):
    """transformers makes every token tokenizer_config.json names (bos_token..., extra and additional special
    tokens, a model's own *_token keys, added_tokens_decoder) an added special token, even one tokenizer.json
    has as a plain vocabulary word: a chat template's "</s>" is then one token, and decoded text drops it."""
    from store_fixtures import write_tokenizer

    folder = tmp_path / "tok"
    if kind == "wordlevel":
        folder.mkdir()
        write_tokenizer(folder)
    else:
        shutil.copytree(saved[kind], folder)
    config = json.loads((folder / "tokenizer_config.json").read_text()) | CONFIG_TOKENS[variant]
    config["chat_template"] = (
        "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m['content'] }}{{ eos_token }}{% endfor %}"
        "{{ pad_token }}|{{ img_token }}|{{ image_token }}"
    )
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    for text in ["hello </s> world", "<s>the model<unk>", "a <|im_start|>x<|im_end|> <image> <img>", " </s>  <extra>é"]:
        ids = hf(text)["input_ids"]
        assert ours.encode_prompt(text, chat=False) == ids, text
        ids += list(range(12)) + [len(hf) - 1]
        assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=True)
        pieces, rest = streamed(ours, ids)
        assert "".join(pieces) + rest == ours.decode(ids)
    messages = [{"role": "user", "content": "hi </s> there"}]
    expected = hf.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    assert ours.encode_chat(messages) == list(expected["input_ids"] if hasattr(expected, "keys") else expected)
    assert ours.render_chat(messages) == hf.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


ENCODING_SETTINGS = {
    # tokenizer.json as saved after a training run truncated or padded with it
    "truncation": (
        {"truncation": {"direction": "Right", "max_length": 5, "strategy": "LongestFirst", "stride": 0}},
        {},
    ),
    "padding": (
        {
            "padding": {
                "strategy": {"Fixed": 64},
                "direction": "Left",
                "pad_to_multiple_of": None,
                "pad_id": 2,
                "pad_type_id": 0,
                "pad_token": "</s>",
            }
        },
        {},
    ),
    "split-special-tokens": ({}, {"split_special_tokens": True}),
}


@pytest.mark.parametrize("kind", ["bytelevel", "sentencepiece"])
@pytest.mark.parametrize("setting", sorted(ENCODING_SETTINGS))
def test_prompts_encode_with_the_settings_transformers_encodes_with(saved, tmp_path, kind, setting):
    """transformers encodes a prompt and a chat without the truncation or padding tokenizer.json may carry, and
    splits special tokens written in the text where tokenizer_config.json sets split_special_tokens."""
    in_file, in_config = ENCODING_SETTINGS[setting]
    folder = shutil.copytree(saved[kind], tmp_path / "tok")
    data = json.loads((folder / "tokenizer.json").read_text()) | in_file
    (folder / "tokenizer.json").write_text(json.dumps(data))
    config = json.loads((folder / "tokenizer_config.json").read_text()) | in_config
    config["chat_template"] = "{{ bos_token }}{% for m in messages %}[{{ m['content'] }}]{{ eos_token }}{% endfor %}"
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    special = f"{hf.eos_token}{hf.bos_token}"
    for text in [CORPUS[0], f"a {special} b", " x"]:
        assert ours.encode_prompt(text, chat=False) == hf(text)["input_ids"], text
        messages = [{"role": "user", "content": text}]
        expected = hf.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        assert ours.encode_chat(messages) == list(expected["input_ids"] if hasattr(expected, "keys") else expected)


@pytest.mark.parametrize("kind", ["sentencepiece", "metaspace"])
@pytest.mark.parametrize(
    "extra", [{}, {"legacy": True}, {"add_prefix_space": False}], ids=["first", "legacy", "no-prefix"]
)
def test_a_llama_tokenizer_class_encodes_as_transformers_builds_it(saved, tmp_path, kind, extra):
    """Llama 2 / TinyLlama checkpoints declare tokenizer_class LlamaTokenizer: transformers then takes only the
    vocabulary, merges, added tokens and post-processor from tokenizer.json and builds the rest itself (a
    Metaspace pre-tokenizer prepending "▁" once, not before every piece between special tokens)."""
    from store_fixtures import config_dict

    folder = shutil.copytree(saved[kind], tmp_path / "tok")
    config = json.loads((folder / "tokenizer_config.json").read_text()) | {"tokenizer_class": "LlamaTokenizerFast"}
    config["chat_template"] = "{% for m in messages %}{{ bos_token }}[INST] {{ m['content'] }} [/INST]{{ eos_token }}\n"
    config["chat_template"] += "<|assistant|>\n{% endfor %}"
    (folder / "tokenizer_config.json").write_text(json.dumps(config | extra))
    (folder / "config.json").write_text(json.dumps(config_dict("llama")))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    for text in ["hello world", " leading", "a</s>b </s> c", "\nnew", "naïve 🙂 中文", "  two"]:
        assert ours.encode_prompt(text, chat=False) == hf(text)["input_ids"], text
    messages = [{"role": "user", "content": "hello world"}]
    expected = hf.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    assert ours.encode_chat(messages) == list(expected["input_ids"] if hasattr(expected, "keys") else expected)
    for ids in [ours.encode_text("first line\n second  line 🙂"), list(range(40)), list(range(100, 160))]:
        assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=True)


@pytest.mark.parametrize(
    "declared",
    [
        {"tokenizer_class": "Qwen2Tokenizer", "bos_token": None, "unk_token": None, "pad_token": "<|end_of_text|>"},
        {"tokenizer_class": "LlamaTokenizerFast", "legacy": True},  # as DeepSeek-R1-Distill-Qwen declares
        {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": None, "eos_token": None},  # the class's own
    ],
    ids=["qwen2", "llama-declared", "class-defaults"],
)
def test_a_qwen2_model_encodes_as_transformers_builds_its_tokenizer(saved, tmp_path, declared):
    """transformers loads the tokenizer of every model of type qwen2 as its Qwen2Tokenizer class, whatever the files
    declare: the vocabulary, merges, added tokens and post-processor of tokenizer.json, with Qwen2's own NFC
    normalizer, pre-tokenizer (digits one by one) and decoder, and <|endoftext|> as the unk, eos and pad tokens
    tokenizer_config.json leaves out."""
    from store_fixtures import config_dict

    folder = shutil.copytree(saved["bytelevel"], tmp_path / "tok")
    config = {k: v for k, v in json.loads((folder / "tokenizer_config.json").read_text()).items() if k != "bos_token"}
    config = {k: v for k, v in (config | declared).items() if v is not None or k in declared}
    config["chat_template"] = "{% for m in messages %}<|start_header_id|>{{ m['content'] }}{{ eos_token }}{% endfor %}"
    config["chat_template"] += "{{ pad_token }}{{ unk_token }}"
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "config.json").write_text(json.dumps(config_dict("qwen2")))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    assert type(hf).__name__ == "Qwen2Tokenizer"
    for text in [*CORPUS[:5], "float64 1234 DON'T\r\n\r\n  x", "e\u0301 cafe\u0301 <|endoftext|>"]:
        assert ours.encode_prompt(text, chat=False) == hf(text)["input_ids"], text
    messages = [{"role": "user", "content": "float64 e\u0301"}]
    expected = hf.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    assert ours.encode_chat(messages) == list(expected["input_ids"] if hasattr(expected, "keys") else expected)
    assert ours.render_chat(messages) == hf.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    for ids in [ours.encode_text(CORPUS[0]), list(range(len(hf)))]:
        assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=True)


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"add_prefix_space": False, "legacy": True},
        {"fill_token": "<FILL_ME>", "additional_special_tokens": ["▁<PRE>", "▁<MID>", "▁<SUF>", "▁<EOT>"]},
    ],
    ids=["defaults", "no-prefix", "as-code-llama-ships"],
)
def test_a_code_llama_tokenizer_class_encodes_as_transformers_builds_it(saved, tmp_path, extra):
    """Code Llama declares CodeLlamaTokenizer: transformers builds it as LlamaTokenizer without ``legacy``, always
    adds the start token and makes its infilling tokens special; the engine refuses a prompt holding the fill
    token (transformers turns it into an infilling prompt)."""
    from store_fixtures import config_dict

    folder = shutil.copytree(saved["sentencepiece"], tmp_path / "tok")
    config = json.loads((folder / "tokenizer_config.json").read_text()) | {"tokenizer_class": "CodeLlamaTokenizer"}
    config["chat_template"] = "{% for m in messages %}{{ bos_token }}[INST] {{ m['content'] }} [/INST]{% endfor %}"
    (folder / "tokenizer_config.json").write_text(json.dumps(config | extra))
    (folder / "config.json").write_text(json.dumps(config_dict("llama")))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    assert type(hf).__name__ == "CodeLlamaTokenizer"
    for text in ["hello world", " leading", "a</s>b </s> c", "\nnew", "x ▁<PRE>z ▁<EOT> 🙂"]:
        assert ours.encode_prompt(text, chat=False) == hf(text)["input_ids"], text
    messages = [{"role": "user", "content": " hello world"}]
    expected = hf.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    assert ours.encode_chat(messages) == list(expected["input_ids"] if hasattr(expected, "keys") else expected)
    for ids in [ours.encode_text("first line\n second  line 🙂"), list(range(len(hf)))]:
        assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=True)
    for chat in (False, True):
        with pytest.raises(TokenizerError, match="<FILL_ME>.*infilling"):
            ours.encode_prompt("def f(x):\n    <FILL_ME>\n    return y", chat=chat)


def _unigram(folder: Path) -> Path:
    """A SentencePiece-style Unigram tokenizer.json (as a T5- or ALBERT-converted file is), saved by transformers."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, normalizers, processors, trainers

    tok = HFTokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.Strip(" ", 1, 0)])
    specials = ["<unk>", "<s>", "</s>"]
    tok.train_from_iterator(CORPUS, trainers.UnigramTrainer(vocab_size=150, special_tokens=specials, unk_token="<unk>"))
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    fast.save_pretrained(folder)
    return folder


@pytest.mark.parametrize(
    "kind, model_type, declared",
    [("unigram", "llama", "LlamaTokenizerFast"), ("unigram", "qwen2", None), ("wordpiece", "llama", "LlamaTokenizer")],
)
def test_a_tokenizer_json_of_another_model_under_a_rebuilding_class(saved, tmp_path, kind, model_type, declared):
    """transformers' LlamaTokenizer and Qwen2Tokenizer build a BPE from any tokenizer.json's vocabulary: a Unigram,
    WordPiece or WordLevel file gives its pieces (in id order) and no merges, so text is encoded piece by piece; the
    engine builds the same, where it kept such a file as it was (other ids, other text)."""
    from store_fixtures import config_dict

    folder = _unigram(tmp_path / "tok") if kind == "unigram" else shutil.copytree(saved[kind], tmp_path / "tok")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["chat_template"] = "{% for m in messages %}{{ bos_token }}[{{ m['content'] }}]{{ eos_token }}{% endfor %}"
    (folder / "tokenizer_config.json").write_text(
        json.dumps(config | ({"tokenizer_class": declared} if declared else {}))
    )
    (folder / "config.json").write_text(json.dumps(config_dict(model_type)))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    for text in [*CORPUS[:3], " leading", "a</s>b </s> c", "naïve 🙂"]:
        assert ours.encode_prompt(text, chat=False) == hf(text)["input_ids"], text
    messages = [{"role": "user", "content": "hello world"}]
    expected = hf.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    assert ours.encode_chat(messages) == list(expected["input_ids"] if hasattr(expected, "keys") else expected)
    for ids in [ours.encode_text(CORPUS[0]), list(range(len(hf)))]:
        assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=True)


@pytest.mark.parametrize("declared", ["GPT2Tokenizer", "GPT2TokenizerFast", "Qwen2Tokenizer"])
@pytest.mark.parametrize("extra", [{}, {"add_prefix_space": True}], ids=["plain", "prefix-space"])
def test_a_llama_model_declaring_a_byte_level_class_encodes_as_transformers_builds_it(saved, tmp_path, declared, extra):
    """A Llama model whose files declare GPT2Tokenizer (as SmolLM's do) or Qwen2Tokenizer is encoded with that class,
    which transformers rebuilds from tokenizer.json's vocabulary with its own pre-tokenizer: SmolLM's tokenizer.json
    splits digits one by one first, GPT-2's pre-tokenizer does not, so "1234" is other ids than the file gives."""
    from store_fixtures import config_dict

    folder = shutil.copytree(saved["bytelevel"], tmp_path / "tok")
    data = json.loads((folder / "tokenizer.json").read_text())
    data["pre_tokenizer"] = {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        ],
    }
    (folder / "tokenizer.json").write_text(json.dumps(data))
    config = json.loads((folder / "tokenizer_config.json").read_text()) | {"tokenizer_class": declared} | extra
    config["chat_template"] = "{% for m in messages %}<|start_header_id|>{{ m['content'] }}{{ eos_token }}{% endfor %}"
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "config.json").write_text(json.dumps(config_dict("llama")))
    hf, ours = transformers.AutoTokenizer.from_pretrained(folder), Tokenizer(folder)
    assert type(hf).__name__ == declared.removesuffix("Fast")
    for text in [*CORPUS[:3], "float64 1234 x 56", " leading 99", "🙂 中文"]:
        assert ours.encode_prompt(text, chat=False) == hf(text)["input_ids"], text
    messages = [{"role": "user", "content": "float64 1234"}]
    expected = hf.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    assert ours.encode_chat(messages) == list(expected["input_ids"] if hasattr(expected, "keys") else expected)
    for ids in [ours.encode_text(CORPUS[0] + " 1234"), list(range(len(hf)))]:
        assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=True)


def test_a_prompt_the_tokenizer_cannot_encode_is_one_line(saved, tmp_path):
    """Files whose tokenizer cannot encode (here Code Llama's class, whose model needs an <unk> token, over a byte-level
    vocabulary without one): transformers' tokenizer fails on every text, and the engine says so in one line, not
    with the tokenizers library's bare exception."""
    from store_fixtures import config_dict

    folder = shutil.copytree(saved["bytelevel"], tmp_path / "tok")
    config = json.loads((folder / "tokenizer_config.json").read_text()) | {"tokenizer_class": "CodeLlamaTokenizer"}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "config.json").write_text(json.dumps(config_dict("llama")))
    with pytest.raises(Exception, match="Unk token"):
        transformers.AutoTokenizer.from_pretrained(folder)("hello")
    with pytest.raises(TokenizerError, match="the tokenizer cannot encode the prompt: Unk token"):
        Tokenizer(folder).encode_prompt("hello", chat=False)
