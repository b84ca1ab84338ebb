"""Planted-bug round 65 (docs/planted-bugs.md): cases for the plants of tests/planted67_plants.py that the tests
guarding their code let through: the gate's naming of the links and submodules git tracks under the package
(gate/repository.py: ``Repository.package_links``), the decode record's latent setting in a GPU class's ``check
--shipped`` (conformance/shipped.py: ``offered_targets``), the table files' caps as a file is read
(neurobrix/tables.py: ``_read_text``), several sampled sequences (neurobrix/generate.py: ``_draw`` over a batch of
prompts; neurobrix/run.py: ``model_sampling``'s note, ``sequences_settled``'s pad), the continued final message
(neurobrix/tokenizer.py: ``_cut_final_message``, ``_tag_final_message``) and the close-choice rule
(neurobrix/cli.py: ``closest``, ``close_hint``; conformance/__main__.py: certify's early refusal), and for the defect
the round found in the clean code (a choice typed in other letters' case named with nothing).

Each case fails with its plant in place (checked with tests/planted67_driver.py, this file alone) and passes on the
clean code; the found defect's case failed on the code before its fix. The continued messages are compared with
transformers' apply_chat_template (text and ids); the pad past the embeddings with torch's own embedding lookup; the
draw over a batch with rows whose probabilities are all on one token, so that which prompt's row is kept is read off
the tokens.

Outcomes of all 19: see docs/planted-bugs.md, round 65.
"""

from __future__ import annotations

import json
import os
import types
from pathlib import Path

import pytest
import torch

from conformance import shipped
from neurobrix import cli, tables
from neurobrix.errors import UsageError
from neurobrix.sampling import Sampling

ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------------------------- the gate


def test_only_links_under_the_package_folder_are_named():
    """g02: a tracked link or submodule is the package's where its path is under ``neurobrix/``; one beside the
    package whose name begins with the package's (``neurobrix-notes``, ``neurobrix.txt``) is nothing a wheel holds,
    and naming it refused every build of such a checkout (G108)."""
    from gate.repository import Repository

    links = {"neurobrix-notes": "120000", "neurobrix.txt": "120000", "neurobrix/vendor": "160000"}
    repo = Repository(ROOT, {}, None, links=links)  # type: ignore[arg-type]  # (declared is not read here)
    assert repo.package_links() == {"neurobrix/vendor": "submodule"}


# ---------------------------------------------------------------------------------------------- check --shipped


def test_a_gpu_class_checks_the_latent_setting_too():
    """l01: the decode record's latent setting (a merge padded past 3 splits) checked on the interpreter only: a GPU
    class's ``check --shipped`` (the one certify runs before a table ships) left the padded path unchecked there, in
    the dtype the class certifies."""
    (config,) = shipped.RECORDS["attention_decode"].latent
    found, _ = shipped.targets("nvidia-h200", tables.load(ROOT / "tables"), interpreter=False)
    latent = [(t.kernel, t.setting.config, t.dtype) for t in found if t.where.startswith(shipped.LATENT)]
    assert latent == [("attention_decode", dict(config), shipped.OFFERED_IN)]


# ---------------------------------------------------------------------------------------------- the caps


def _padded(path: Path, size: int) -> Path:
    """``path`` holding ``{}`` and spaces, ``size`` bytes in all: a table of that size every reader parses."""
    path.write_bytes(b"{}" + b" " * (size - 2))
    return path


@pytest.mark.parametrize("name", ["rms_norm.json", tables.CLASS_NAME])
def test_a_file_of_exactly_its_kinds_cap_is_read(tmp_path, name):
    """t01: a file of its kind's cap refused as it is read (``>=``), where the folder check takes it (round 62's test
    of the cap pins the folder check only)."""
    read = tables.read_json if name.endswith(".json") else tables.read_yaml
    path = _padded(tmp_path / name, tables.max_bytes(name))
    assert read(path, "it") == {}


def test_a_file_grown_past_its_cap_after_its_size_was_taken_is_refused(tmp_path, monkeypatch):
    """t03: the bytes read held to the cap only by the size taken from the open file (a file growing while it is read:
    its size said small, its bytes past the cap). The size stood in for (``os.fstat``), the bytes real."""
    cap = tables.max_bytes(tables.CLASS_NAME)
    path = _padded(tmp_path / tables.CLASS_NAME, cap + 1)
    real = os.fstat

    def small(fd: int) -> os.stat_result:
        seen = list(real(fd))
        seen[6] = 2  # st_size: as the file was when its size was taken
        return os.stat_result(seen)

    monkeypatch.setattr(os, "fstat", small)
    with pytest.raises(tables.TablesError, match=f"^it: {cap + 1} bytes, past the {cap} bytes"):
        tables.read_yaml(path, "it")


# ---------------------------------------------------------------------------------------------- sampled sequences


@pytest.mark.parametrize("rows", [2, 3])
def test_each_prompt_of_a_batch_keeps_its_own_first_row(rows):
    """n01, n02: transformers' generate expands a batch of prompts for num_return_sequences with
    ``repeat_interleave`` (prompt 0's rows, then prompt 1's) and returns each prompt's rows in that order; the engine
    keeps each prompt's first row. Two prompts whose probabilities are all on one token (3 and 7): the rows kept are
    the prompts' own (the plants, at 2 rows: the first rows of the draw, or the rows tiled, gave prompt 0's token
    twice; at 3 rows the tiled rows 0 and 3 happen to be the prompts' own, and only the first plant fails)."""
    from neurobrix.generate import sample

    logits = torch.full((2, 10), -float("inf"))
    logits[0, 3] = logits[1, 7] = 0.0
    opts = Sampling(temperature=1.0, top_k=0, top_p=1.0, sequences=rows)
    got = sample(logits, opts, torch.Generator().manual_seed(0))
    assert got.tolist() == [3, 7]


def _tokenizer(folder: Path, generation: dict):
    from tokenizer_fixtures import save

    from neurobrix.tokenizer import Tokenizer

    save(folder, "bytelevel")
    (folder / "generation_config.json").write_text(json.dumps(generation))
    return Tokenizer(folder)


@pytest.mark.parametrize("count", [None, 1, 3])
def test_the_sequences_note_is_said_only_for_several(tmp_path, count):
    """n03: a count of 1 (or none set) taken as several: every sampled run said "sets num_return_sequences 1" (or
    None), which the model's file does not set. A count of 3 is said and applied (the control)."""
    from neurobrix.run import model_sampling

    generation = {"do_sample": True} if count is None else {"do_sample": True, "num_return_sequences": count}
    notes: list[str] = []
    sampling = model_sampling(
        Sampling(temperature=1.0, top_k=0, top_p=1.0), _tokenizer(tmp_path, generation), notes.append
    )
    said = [n for n in notes if "num_return_sequences" in n]
    assert sampling.sequences == (count or 1)
    assert len(said) == (count == 3), notes


def test_a_pad_id_of_the_vocabularys_size_is_past_the_embeddings():
    """n04: a pad id equal to config.json's vocab_size taken as an embedding's (``<=``): transformers' model looks the
    pad written after a finished row up in its embeddings, and an id of the vocabulary's size is past them (torch's
    own lookup fails on it, shown here), so the run must refuse as it refuses any pad past them."""
    from neurobrix.generate import Constraints
    from neurobrix.run import sequences_settled

    vocab = 16
    with pytest.raises(IndexError):
        torch.nn.Embedding(vocab, 4)(torch.tensor([vocab]))
    tokenizer = types.SimpleNamespace(
        generation_file="generation_config.json",
        generation={"eos_token_id": 2, "num_return_sequences": 2},
        pad_id=vocab,
        first_eos=lambda ids: 2,
        drops=lambda token: True,  # a pad decode drops: only its place in the embeddings decides
    )
    cfg = types.SimpleNamespace(vocab_size=vocab, eos_token_ids=[2])
    with pytest.raises(UsageError, match=f"pad id {vocab} .* past its {vocab} embeddings"):
        sequences_settled(tokenizer, 2, cfg, {2}, False, None, Constraints())  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- continued messages

# one template for the three cases: reasoning read under two of its names, a text's double spaces made one, the
# parts' text printed whatever their type
TEMPLATE = (
    "{%- for m in messages -%}<|im_start|>{{ m.role }}\n"
    "{%- if m.thinking is defined %}<think>{{ m.thinking }}</think>{% endif -%}"
    "{%- if m.reasoning_content is defined %}<r>{{ m.reasoning_content }}</r>{% endif -%}"
    "{%- if m.content is string %}{{ m.content | replace('  ', ' ') }}"
    "{%- else %}{% for p in m.content %}{{ p.text }}{% endfor %}{% endif %}<|im_end|>\n{%- endfor -%}"
)
CONTINUED = {
    # c01: reasoning printed twice (both names): the chat cut at the last tag, as apply_chat_template's rindex
    "reasoning printed twice": (
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "x", "reasoning_content": "so, "}],
        "reasoning_content",
    ),
    # c02: the text's double space made one by the template: the message is not in the rendered chat (refused)
    "text changed by the template": (
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "a  b"}],
        True,
    ),
    # c04: parts of type output_text (any part holding "text" is continued there)
    "parts of another type": (
        [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "Sure, "}, {"type": "image"}]},
        ],
        True,
    ),
}


@pytest.fixture(scope="module")
def chat_folder(tmp_path_factory):
    pytest.importorskip("transformers")
    from test_text_round54 import folder

    return folder(tmp_path_factory.mktemp("chat"), TEMPLATE)


@pytest.mark.parametrize("name", sorted(CONTINUED))
def test_a_continued_message_is_cut_or_refused_as_apply_chat_template_does(chat_folder, name):
    """c01, c02, c04: the engine's text and ids those of apply_chat_template, or both refusing."""
    from test_text_round54 import both

    chat, continued = CONTINUED[name]
    want, got = both(chat_folder, chat, continue_final_message=continued)
    if isinstance(want, Exception):
        assert isinstance(got, UsageError), (want, got)
    else:
        assert got == want


# ---------------------------------------------------------------------------------------------- close choices

DTYPES = ("fp32", "fp16", "bf16")


@pytest.mark.parametrize("word, meant", [("HALF", "fp16"), ("BFloat16", "bf16"), ("Float", "fp32")])
def test_a_dtype_by_torchs_name_in_capitals_is_named(word, meant):
    """w01: another command line's word looked up as typed: torch's names in capitals (``HALF``, ``BFloat16``), too
    far from the commands' spelling for difflib, named nothing. (`run --dtype` and conformance's lists ask this.)"""
    assert cli.closest(word, DTYPES) == meant


@pytest.mark.parametrize(
    "word, choices, meant",
    [
        ("FP16", DTYPES, "fp16"),
        ("INTERPRETER", ("interpreter", "nvidia-h200"), "interpreter"),
        ("SILU_MUL", ("linear", "rms_norm", "silu_mul"), "silu_mul"),
    ],
)
def test_a_choice_in_other_letters_case_is_named(word, choices, meant):
    """A defect of the clean code, found beside w01: a choice typed in capitals was named with nothing (`--dtype FP16`,
    `check --class INTERPRETER`): difflib compares case, and found none of them close."""
    assert cli.closest(word, choices) == meant


def test_an_alias_is_named_only_among_the_choices():
    """w02: another command line's word named whatever the choices (``--profile chat`` told "did you mean 'run'?",
    no profile); the commands' own list still names it (the control)."""
    assert cli.closest("chat", ("ci", "dev", "gpu")) is None
    assert cli.closest("chat", ("run", "import", "list")) == "run"


def test_of_several_words_each_close_one_is_named_with_its_word():
    """w03: with several words given and one close, the hint named the choice alone ("did you mean fp16?"), not for
    which word."""
    assert cli.close_hint(["float16", "zzzz"], DTYPES) == " (did you mean fp16 for float16?)"


def test_certify_refuses_a_torch_dtype_beside_a_plain_one_as_the_command_does(tmp_path, monkeypatch, capsys):
    """w04: certify's early refusal (before torch) taken where any dtype is plain: `--dtypes fp16 float16` with a class
    the folder does not describe was told the class.yaml is missing, where the command itself names float16. The
    command answered with the early refusal allowed and without it: the same exit code and words."""
    from conformance.__main__ import main

    root = tmp_path / "tables"
    root.mkdir()
    said = []
    for early in (True, False):
        monkeypatch.setattr(cli, "before_torch", lambda *modules, needs=(), early=early: early)
        capsys.readouterr()
        code = main(["certify", "--class", "nosuch", "--tables", str(root), "--dtypes", "fp16", "float16"])
        said.append((code, capsys.readouterr().err))
    assert said[0] == said[1] and said[0][0] == 2, said
    assert "unknown dtype(s) float16" in said[0][1], said
