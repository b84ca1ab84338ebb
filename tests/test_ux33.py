"""Walk-through round 33b: the rough edges round 33 and the thirty-ninth strict round noticed and left open
(docs/walkthroughs.md, "Walk-through round 33b"). Each test failed before its fix.

- ``run --model`` with a name that is not stored suggested importing the mistyped name: a stored model whose name is
  close (difflib's match) is now named first ("Did you mean 'tiny-llama'?"); `remove` likewise.
- ``--max-tokens`` past the model's context said "lower --max-tokens" without the count that fits: it names it now
  (the context less the prompt's tokens).
- The CLI's integer options (``--max-tokens``, ``--max-prompt``, ``--top-k``, ``--seed``, conformance's counts) went
  through Python's ``int``, which reads "+2", " 2", "1_0" and a full-width "２": ASCII digits (a minus sign allowed)
  only now, the rest refused in argparse's one line naming the option (exit 2).
- generation_config.json's ``guidance_scale`` that is no number was only named in the note as not applied, and an
  ``output_hidden_states`` of 1.5, text or an object (in either file) was not read; transformers' generate fails on
  each (checked here): refused now in one line naming the field (exit 2).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

from test_text_round7 import PROMPT, checkpoint, ours, theirs  # noqa: E402

BASE = {"eos_token_id": 9999, "max_new_tokens": 6}


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    return checkpoint(tmp_path_factory.mktemp("ux33") / "tiny-llama", generation=BASE)


def _main(capsys, argv: list[str]) -> tuple[int, str, str]:
    from neurobrix.cli import main

    try:
        code = main(argv)
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


def _stored(folder: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("NEUROBRIX_HOME", str(folder.parent / "home"))
    shutil.rmtree(folder.parent / "home", ignore_errors=True)
    assert _main(capsys, ["import", str(folder)])[0] == 0


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --- 1. a name close to a stored one ----------------------------------------------------------------------------------


def test_a_mistyped_model_name_names_the_stored_model_it_is_close_to(model_folder, monkeypatch, capsys):
    """Before: "no model 'tiny-lama' in the store (...). Import it first: `neurobrix import tiny-lama`": the typo to
    import, not the stored tiny-llama."""
    _stored(model_folder, monkeypatch, capsys)
    code, out, err = _main(capsys, ["run", "--model", "tiny-lama", "--prompt", "hi", "--backend", "torch"])
    line = _one_line(err)
    assert code == 2 and out == "" and "no model 'tiny-lama' in the store" in line
    assert "Did you mean 'tiny-llama'?" in line and line.index("Did you mean") < line.index("neurobrix import")
    code, _, err = _main(capsys, ["run", "--model", "TINY-LAMA", "--prompt", "hi"])  # case aside, as hub ids match
    assert code == 2 and "Did you mean 'tiny-llama'?" in _one_line(err)
    code, _, err = _main(capsys, ["remove", "tiny-lama"])
    assert code == 2 and "Did you mean 'tiny-llama'?" in _one_line(err)
    # two stored names that differ in case only: both named (the exact name picks one, round 15's rule)
    shutil.copytree(model_folder, model_folder.parent / "other" / "Tiny-Llama")
    assert _main(capsys, ["import", str(model_folder.parent / "other" / "Tiny-Llama")])[0] == 0
    code, _, err = _main(capsys, ["run", "--model", "tiny-lama", "--prompt", "hi"])
    assert code == 2 and "Did you mean 'Tiny-Llama' or 'tiny-llama'?" in _one_line(err)
    shutil.rmtree(model_folder.parent / "other")
    # a name close to nothing stored: the import suggestion alone, as before
    code, _, err = _main(capsys, ["run", "--model", "org/other-model", "--prompt", "hi"])
    line = _one_line(err)
    assert code == 2 and "Did you mean" not in line and "Import it first: `neurobrix import org/other-model`" in line


# --- 2. the count that fits -------------------------------------------------------------------------------------------


def test_max_tokens_past_the_context_names_the_most_that_fits(model_folder, monkeypatch, capsys):
    """Before: "the prompt (35 tokens) plus --max-tokens 200 exceeds the model's context of 128 tokens; shorten the
    prompt or lower --max-tokens", with no count; the count named now runs."""
    from neurobrix import store
    from neurobrix.tokenizer import Tokenizer

    _stored(model_folder, monkeypatch, capsys)
    context = store.resolve("tiny-llama").config().max_positions
    fits = context - len(Tokenizer(model_folder).encode_prompt(PROMPT, chat=False))
    argv = ["run", "--model", "tiny-llama", "--prompt", PROMPT, "--no-chat", "--backend", "torch"]
    code, out, err = _main(capsys, [*argv, "--max-tokens", str(fits + 1)])
    assert code == 2 and out == "" and f"lower --max-tokens to at most {fits}" in _one_line(err)
    ids = ours(model_folder, monkeypatch, max_tokens=fits)[0]  # the count it names is taken
    assert 1 <= len(ids) <= fits


# --- 3. integer options: ASCII digits ---------------------------------------------------------------------------------

NOT_DECIMAL = ["+2", "２", " 2", "2 ", "1_0", "٣", "0x10", "1e2", "1.5"]


def _int_options(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], list[str]]:
    """Every option of ``parser`` (and its commands) read with ``type=int``, by command."""
    found: dict[tuple[str, ...], list[str]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found |= _int_options(sub, (*path, name))
        elif action.type is int:
            found.setdefault(path, []).append(action.option_strings[0])
    return found


REQUIRED = {("run",): ["--model", "m", "--prompt", "p"], ("warmup",): ["--model", "m"]}


def test_every_integer_option_takes_ascii_digits_only(capsys):
    """Before: `--max-tokens +2` and `--max-tokens ２` (a full-width digit) ran as 2, `--seed 1_0` as 10."""
    from neurobrix.cli import build_parser

    options = _int_options(build_parser())
    assert options == {("run",): ["--max-tokens", "--top-k", "--seed"], ("warmup",): ["--max-tokens", "--max-prompt"]}
    for command, names in options.items():
        for name in names:
            argv = [*command, *REQUIRED[command], name]
            assert getattr(build_parser().parse_args([*argv, "12"]), name[2:].replace("-", "_")) == 12
            assert getattr(build_parser().parse_args([*argv, "-1"]), name[2:].replace("-", "_")) == -1
            for text in NOT_DECIMAL:
                with pytest.raises(SystemExit) as exit:
                    build_parser().parse_args([*argv, text])
                said = f"neurobrix {command[0]}: error: argument {name}: invalid int value: {text!r}"
                err = capsys.readouterr().err
                assert exit.value.code == 2 and err.splitlines()[-1] == said, err


def test_conformance_counts_take_ascii_digits_only(capsys):
    """Before: `python -m conformance check --examples ２` and `tiny-model --context +64` took the numbers."""
    from conformance.__main__ import build_parser

    for argv, name in ((["check", "--examples"], "--examples"), (["tiny-model", "out", "--context"], "--context")):
        for text in ("+2", "２"):
            with pytest.raises(SystemExit) as exit:
                build_parser().parse_args([*argv, text])
            err = capsys.readouterr().err
            assert exit.value.code == 2 and f"argument {name}: invalid int value: {text!r}" in err, err
        assert build_parser().parse_args([*argv, "64"]) is not None


# --- 4. generation settings transformers' generate fails on -----------------------------------------------------------

FAILED = (TypeError, ValueError)


def _write(folder: Path, generation: dict, config: dict | None = None) -> None:
    (folder / "generation_config.json").write_text(json.dumps({**BASE, **generation}))
    data = json.loads((folder / "config.json").read_text())
    data.pop("output_hidden_states", None)
    (folder / "config.json").write_text(json.dumps({**data, **(config or {})}))


def _refused(folder: Path, monkeypatch, capsys) -> str:
    _stored(folder, monkeypatch, capsys)
    argv = ["run", "--model", folder.name, "--prompt", PROMPT, "--no-chat", "--backend", "torch"]
    code, out, err = _main(capsys, argv)
    assert code == 2 and out == "", (code, out, err)
    return _one_line(err)


@pytest.mark.parametrize(
    "generation, config, named",
    [
        ({"guidance_scale": "1.5"}, None, "generation_config.json: guidance_scale '1.5'"),
        ({"guidance_scale": [2]}, None, "generation_config.json: guidance_scale [2]"),
        ({"output_hidden_states": 1.5}, None, "generation_config.json: output_hidden_states 1.5"),
        ({"output_hidden_states": "x"}, None, "generation_config.json: output_hidden_states 'x'"),
        ({"output_hidden_states": {"a": 1}}, None, "generation_config.json: output_hidden_states {'a': 1}"),
        ({}, {"output_hidden_states": 1.5}, "config.json: output_hidden_states 1.5"),
        # a setting that reads as false hands the model nothing: it reads config.json's
        ({"output_hidden_states": 0}, {"output_hidden_states": ["x"]}, "config.json: output_hidden_states ['x']"),
    ],
    ids=["scale text", "scale list", "hidden 1.5", "hidden text", "hidden object", "config 1.5", "config list"],
)
def test_a_setting_transformers_generate_fails_on_is_refused_by_name(
    model_folder, monkeypatch, capsys, generation, config, named
):
    """Before: `run` printed greedy text (a guidance_scale named in the note as not applied)."""
    _write(model_folder, generation, config)
    try:
        with pytest.raises(FAILED):  # transformers prints no text
            theirs(model_folder)
        line = _refused(model_folder, monkeypatch, capsys)
    finally:
        _write(model_folder, {})
    assert named in line and "transformers" in line, line


@pytest.mark.parametrize(
    "generation, config",
    [
        ({"output_hidden_states": [1, -1]}, None),  # indices of hidden states to keep: the same text
        ({"output_hidden_states": True}, {"output_hidden_states": "x"}),  # the settings' value is handed to the model
        ({"guidance_scale": 1}, None),
    ],
    ids=["indices", "settings over config", "scale 1"],
)
def test_what_transformers_runs_still_runs(model_folder, monkeypatch, generation, config):
    """The controls: transformers' generate prints text for these, the engine the same."""
    _write(model_folder, generation, config)
    try:
        expected = theirs(model_folder)
        assert ours(model_folder, monkeypatch)[:2] == expected
    finally:
        _write(model_folder, {})
