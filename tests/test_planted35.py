"""Planted-bug round 35: tests for the plants of tests/planted35_plants.py that the existing tests let through, in text
round 34 (--system on a template without a system role, a standard output that cannot encode the text), walk-through
33b (did-you-mean, --max-tokens' count, ASCII integer options, guidance_scale and output_hidden_states), strictness
round 40 (a manifest's lone surrogate, files gone after the check), the conformance command's Ctrl-C record, and
kernel-mutant rounds 8/9's conformance draws (``_far_below``, ``Record.edges`` and greedy_pick's edge past int16,
rotary's low_freq_factor 2 table). Each test fails under the plant(s) its docstring names (checked:
``python tests/planted35_driver.py COPY OUT --with tests/test_planted35.py ID``, each plant against this file alone)
and passes on the clean code. Where a test says what transformers does, it computes it.

Outcomes (48 plants): 33 caught by the tests before the round (ChatTemplateError's "try --no-chat" dropped, the
template's failure raised as a plain TokenizerError, the --system refusal naming the whole error or saying "try
--no-chat", the user message alone rendered as the system one; the text before the character cut one short, the
character taken after it, the last text not kept; every did-you-mean, --max-tokens count and ASCII-digit plant but
i06; output_hidden_states false passing over config.json's, config.json's value read from generation_config.json;
every strictness-round-40 plant; the far-below keys one short or decode's last key left, FAR_BELOW halved; greedy
pick's specials anywhere, its edge at 2^15; the low-factor table's context or the table left out). 15 survived: 10
are caught here (x03 x04 x09, g01 h01 h02 h05, a05, e02 e04) and 5 are equivalent to today's code (argued in
docs/planted-bugs.md): c01 (the record cleared only where the command set its handler: only that handler records),
a01 (``_far_below``'s guard on no keys dropped: every draw gives it one or more), a02 (the shift from the largest
score even when it is below 0: every score still ends at most -FAR_BELOW), i06 (``-?[0-9]*``: the empty text and "-"
fail ``int`` alike) and e01 (the edges left out of shipped settings: no shipped greedy_pick setting's small shapes
reach V = 32,770).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

from test_text_round7 import PROMPT, checkpoint, ours, theirs  # noqa: E402

BASE = {"eos_token_id": 9999, "max_new_tokens": 6}


def _main(capsys, argv: list[str]) -> tuple[int, str, str]:
    from neurobrix.cli import main

    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --- walk-through 33b: generation settings ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    return checkpoint(tmp_path_factory.mktemp("planted35") / "tiny-llama", generation=BASE)


def _write(folder: Path, generation: dict, config: dict | None = None) -> None:
    (folder / "generation_config.json").write_text(json.dumps({**BASE, **generation}))
    data = json.loads((folder / "config.json").read_text())
    data.pop("output_hidden_states", None)
    (folder / "config.json").write_text(json.dumps({**data, **(config or {})}))


@pytest.mark.parametrize(
    "generation, config",
    [
        ({"guidance_scale": True}, None),  # equal to 1: no guidance
        ({"output_hidden_states": 1}, None),  # an index of the hidden states to keep
        ({}, {"output_hidden_states": ""}),  # config.json's, read as false
    ],
    ids=["scale true", "hidden integer", "config empty text"],
)
def test_settings_transformers_runs_are_run_as_it_runs_them(model_folder, monkeypatch, generation, config):
    """g01 (guidance_scale typed as int or float, a boolean refused), h01 (output_hidden_states an integer refused),
    h05 (a text refused unless a list or an object): transformers' generate prints the same text for each as without
    it, and so does `run`; each plant refused the setting."""
    _write(model_folder, generation, config)
    try:
        expected = theirs(model_folder)
        assert ours(model_folder, monkeypatch)[:2] == expected
    finally:
        _write(model_folder, {})


def test_hidden_state_indices_are_refused_if_any_is_no_number_naming_the_file(model_folder, monkeypatch, capsys):
    """h02 (the indices taken when any, not every, is a number): [1, "x"] fails in transformers' model (an index
    compared with a text); h04 (the file named as generation_config.json when the value is config.json's): the
    refusal names config.json itself."""
    from neurobrix import store

    monkeypatch.setenv("NEUROBRIX_HOME", str(model_folder.parent / "home"))
    argv = ["run", "--model", model_folder.name, "--prompt", PROMPT, "--no-chat", "--backend", "torch"]
    for generation, config, path in (  # the stored model's file
        ({"output_hidden_states": [1, "x"]}, None, "generation_config.json"),
        ({}, {"output_hidden_states": 1.5}, "config.json"),
    ):
        _write(model_folder, generation, config)
        try:
            with pytest.raises((TypeError, ValueError)):  # transformers prints no text
                theirs(model_folder)
            shutil.rmtree(model_folder.parent / "home" / "models" / model_folder.name, ignore_errors=True)
            store.import_model(str(model_folder), progress=False)
            code, out, err = _main(capsys, argv)
        finally:
            _write(model_folder, {})
        line = _one_line(err)
        assert code == 2 and out == "" and f"/{model_folder.name}/{path}: output_hidden_states" in line, line


# --- text round 34: --system on a template without a system role, a standard output that cannot hold the text -------

SYSTEM_FIRST = (  # a system message rendered where given, then the user's
    "{% for m in messages %}{% if m['role'] == 'system' %}<<{{ m['content'] }}>>{% else %}[{{ m['content'] }}]"
    "{% endif %}{% endfor %}"
)


def test_a_system_message_the_tokenizer_cannot_encode_is_the_tokenizers_refusal(tmp_path):
    """x03 (every TokenizerError of the chat taken for the template's failure on a system message): a system message
    with a lone surrogate (``Tokenizer.encode_prompt`` called by Python, not through `run`'s UTF-8 check) renders, and
    the rendered text's refusal is the error; the plant looked for the template's message on it (AttributeError)."""
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer, TokenizerError

    tok = Tokenizer(save(tmp_path / "tok", "bytelevel", chat_template=SYSTEM_FIRST))
    assert tok.encode_prompt("hi", chat=True, system="be brief") == tok.encode_text("<<be brief>>[hi]")
    with pytest.raises(TokenizerError, match="not Unicode"):
        tok.encode_prompt("hi", chat=True, system="caf\ud800")


def test_a_template_that_fails_on_every_chat_says_so_not_that_it_takes_no_system_message(tmp_path):
    """x04 (the template's failure on the user message alone passed over): a template that fails whatever the
    messages is the template's failure ("try --no-chat"), not one that "takes no system message"."""
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer, TokenizerError

    tok = Tokenizer(save(tmp_path / "tok", "bytelevel", chat_template="{{ raise_exception('no chat here') }}"))
    with pytest.raises(TokenizerError) as refused:
        tok.encode_prompt("hi", chat=True, system="be brief")
    said = str(refused.value)
    assert said.endswith("no chat here; try --no-chat") and "system" not in said, said


@pytest.mark.parametrize(
    "chunks, printed",
    [
        (["ab\n", "\u4e2dc"], "ab\n"),  # the refused chunk's first character: the line already ended
        (["ab\n", "c\u4e2d"], "ab\nc\n"),  # after a character of its own: the refusal on a line of its own
    ],
    ids=["first character", "after one"],
)
def test_the_refusal_of_a_character_starts_a_line_once(monkeypatch, capsys, chunks, printed):
    """x09 (the text written before the character taken for the last text even when empty): an extra empty line where
    the refused chunk starts with the character; x10 (it not taken at all): the refusal on the line of the text
    written before it."""
    import io
    import sys

    from neurobrix import run as run_module

    def run(opts, write=None, notice=None):
        for chunk in chunks:
            write(chunk)
        raise AssertionError("the text was written whole")

    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="ascii", newline="", write_through=True))
    monkeypatch.setattr(run_module, "run", run)
    code, _, err = _main(capsys, ["run", "--model", "m", "--prompt", "hi"])
    assert code == 2 and "U+4E2D" in _one_line(err), err
    assert raw.getvalue().decode("ascii") == printed


# --- kernel-mutant rounds 8/9: the conformance draws ------------------------------------------------------------------


def test_greedy_picks_draws_put_each_rows_token_past_int16_whatever_the_row_holds():
    """e03 (the specials' NaN and infinities placed anywhere): a row's first NaN or +inf is its token, and it lay
    below 2^15 (almost every index of 32,770 is), where a token narrowed to int16 is right; e02 (the draw past int16
    from V = 2^15 on, where no index lies past it): a vocabulary of exactly 32,768 failed to build; e04 (the value
    placed past 2^15 the row's largest, not above it): a row with no special value took its first largest, drawn
    below 2^15, as token."""
    from conformance import harness, reference
    from conformance.specs import pick

    seen = set()
    for seed in range(5):  # two NaN rows, three +inf rows, two rows of none
        case = harness.build("greedy_pick", "fp32", pick.EDGES[0], harness.Values("fp32", "cpu", seed, ("normal",)))
        tokens = reference.greedy_pick(case.args["logits"]).tolist()
        for special, token in zip(case.note["rows"], tokens, strict=True):
            seen.add(special)
            assert token == 0 if special == "-inf row" else token >= pick.PAST_INT16, (seed, special, token)
    assert {"nan", "inf", "none"} <= seen, seen
    at_edge = {"B": 2, "V": pick.PAST_INT16}  # every index fits int16: drawn as below it
    case = harness.build("greedy_pick", "fp32", at_edge, harness.Values("fp32", "cpu", 0, ("normal",)))
    assert case.args["logits"].shape[-1] == pick.PAST_INT16


def test_far_below_draws_move_every_kv_heads_keys_below_its_first_query_head():
    """a05 (the query head h moved for kv head h, not its group's first, h * G): with two kv heads of two query heads
    each, the second kv head's keys stayed where drawn against the query head that sees them."""
    from conformance import harness
    from conformance.specs.attention import FAR_BELOW

    shape = {"C": 3, "S": 20, "D": 16, "G": 2}
    checked = 0
    for seed in range(64):
        case = harness.build("attention_chunk", "fp32", shape, harness.Values("fp32", "cpu", seed, ("normal",)))
        if "far below" not in case.note or case.note["kv_heads"] != 2:
            continue
        q, k, scale = case.args["q"].double(), case.args["k"].double(), case.args["scale"]
        past = k.shape[1] - q.shape[1]
        for b in range(q.shape[0]):
            for h in range(2):
                top = float((k[b, : past + 1, h] @ q[b, 0, h * 2]).max()) * scale
                assert top <= -FAR_BELOW * (1 - 1e-3), (seed, b, h, top)
        checked += 1
    assert checked >= 2, checked
