"""Walk-through round 34: the rough edges earlier rounds noticed and left open, then a new user's walk from the wheel
(docs/walkthroughs.md, "Walk-through round 34"). Each test failed before its fix.

- The CLI's float options (``run --temperature``, ``--top-p``, ``--repetition-penalty``, conformance's ``--margin``,
  ``--timeout``, ``--max-minutes``) went through Python's ``float``, which reads "+0.5", " 0.5", "1_0", a full-width
  "０.５", "nan", "inf" and "1e999" (infinity): a plain ASCII decimal (a minus sign, a point and an exponent allowed)
  only now, the rest refused in argparse's one line naming the option, NaN and infinities with the option's range.
- Counts printed with a plural noun whatever the count: "note: generating at most 1 tokens", "1 entry checks, 1
  examples", "1 of 1 mutants caught", "prompts of 1 tokens": singular for 1 now (``neurobrix.errors.counted``).
- `neurobrix remove` of a damaged model reported the size its manifest records ("412.5 kB freed" with the 403 kB
  weights already gone; "0 B freed" with the manifest unreadable): the bytes it deleted, measured on disk before and
  after, and what was damaged.
- The walk from the wheel: `run --help` and `warmup --help` did not say the range of `--temperature`,
  `--repetition-penalty`, `--seed`, `run --max-tokens`, `warmup --max-tokens` and `--max-prompt` (each refused
  outside it): each says it now.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def _parse_error(capsys, main, argv: list[str]) -> str:
    """The last line argparse prints for a refused command line (exit 2)."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "Traceback" not in err, err
    return err.strip().splitlines()[-1]


# --- 1. float options -------------------------------------------------------------------------------------------------

RUN = ["run", "--model", "m", "--prompt", "p"]
RANGES = {"--temperature": "a finite number >= 0", "--top-p": "a finite number in [0, 1]"}
RANGES["--repetition-penalty"] = "a finite number > 0"


@pytest.mark.parametrize("option", sorted(RANGES))
def test_a_float_option_takes_a_plain_decimal_only(option, capsys):
    """Before: "+0.5", a full-width "０.５", " 0.5" and "1_0" ran as 0.5 and 10 (float() reads them). What float()
    refuses is refused as before, and what a person types runs with the value float() gives (a negative one left to
    the command's own check, as for integers)."""
    from neurobrix.cli import build_parser

    for text in ["+0.5", "０.５", " 0.5", "1_0", "0x1p-1", "0.5.", "e3", "½"]:
        line = _parse_error(capsys, build_parser().parse_args, [*RUN, f"{option}={text}"])
        assert line == f"neurobrix run: error: argument {option}: invalid float value: {text!r}"
    for text in ["0.7", "0", "1", ".5", "5.", "1e-3", "2.5E+1", "-0.5"]:
        args = build_parser().parse_args([*RUN, f"{option}={text}"])
        assert getattr(args, option[2:].replace("-", "_")) == float(text)


@pytest.mark.parametrize("option", sorted(RANGES))
@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "-inf", "Infinity", "1e999", "-1e999"])
def test_nan_and_infinities_are_refused_with_the_options_range(option, text, capsys):
    """Before: `--repetition-penalty inf` and `1e999` ran (an infinite penalty), and `--temperature nan` was refused
    after the parse as "--temperature must be a number >= 0, got nan", a message without the option's parse line."""
    from neurobrix.cli import build_parser

    line = _parse_error(capsys, build_parser().parse_args, [*RUN, f"{option}={text}"])
    assert line == f"neurobrix run: error: argument {option}: must be {RANGES[option]}, got {text!r}"


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["rank", "--class", "c", "--margin"], "--margin"),
        (["mutants", "--timeout"], "--timeout"),
        (["check", "--class", "c", "--max-minutes"], "--max-minutes"),
    ],
)
def test_conformance_float_options_take_a_plain_finite_decimal(argv, option, capsys):
    """Before: `mutants --timeout inf` and `rank --margin 1e999` ran (`not value >= low` passes infinity), and
    "+1" or a full-width "１" ran as 1."""
    from conformance.__main__ import build_parser

    parse = build_parser().parse_args
    assert _parse_error(capsys, parse, [*argv, "+1"]).endswith(f"argument {option}: invalid float value: '+1'")
    assert _parse_error(capsys, parse, [*argv, "１"]).endswith(f"argument {option}: invalid float value: '１'")
    for text in ("inf", "1e999", "nan"):
        line = _parse_error(capsys, parse, [*argv, text])
        assert f"argument {option}: must be a " in line and f"got {text!r}" in line, line
    assert getattr(parse([*argv, "2.5"]), option[2:].replace("-", "_")) == 2.5


# --- 2. one of a count ------------------------------------------------------------------------------------------------


def test_a_count_of_one_takes_the_singular():
    """Before: `counted` did not exist; each message wrote its plural after any count."""
    from neurobrix.errors import counted
    from neurobrix.warmup import describe_lengths

    assert [counted(n, "entry", "entries") for n in (0, 1, 2)] == ["0 entries", "1 entry", "2 entries"]
    assert [counted(n, "token") for n in (1, 12)] == ["1 token", "12 tokens"]
    assert describe_lengths([(1, 1)], "tokens") == "1 token"  # warmup's "prompts of 1 tokens"
    assert describe_lengths([(1, 2)], "positions") == "1-2 positions"
    assert describe_lengths([(1, 1), (3, 3)], "tokens") == "1, 3 tokens"


def test_a_check_report_of_one_entry_and_a_kill_rate_of_one_mutant_say_one(capsys):
    """Before: "PASSED: 1 entry checks, 1 examples", "; 1 entry checks not run", "kill rate: 1 of 1 mutants caught"."""
    from conformance.check import EntryResult, Report, render
    from conformance.mutants import Outcome
    from conformance.mutants import render as render_mutants

    one = EntryResult("silu_mul", "fp32", "M=1..1, I=1..1", {"BLOCK": 64}, examples=1)
    text = render(Report("interpreter", "tables", "ci", results=[one], left=1, retried=1))
    assert "INCOMPLETE (no failure so far): 1 entry check, 1 example, " in text
    assert "; 1 entry check not run (time limit)" in text and "  1 entry check ran out of device memory" in text
    two = Report("interpreter", "tables", "ci", results=[one, one], left=2)
    assert ": 2 entry checks, 2 examples, " in render(two) and "; 2 entry checks not run" in render(two)
    caught = Outcome("k.bug", "silu_mul", "off-by-one", True, "wrong result", "", 1.0)
    assert "kill rate: 1 of 1 mutant caught (100.0 %)" in render_mutants([caught])
    assert "kill rate: 2 of 2 mutants caught (100.0 %)" in render_mutants([caught, caught])


def test_run_notes_a_generation_of_one_token_in_the_singular(tmp_path, monkeypatch):
    """Before: "note: generating at most 1 tokens: generation_config.json's max_new_tokens is 1" (a model whose
    generation_config.json asks for one new token), run through `neurobrix run --backend torch`."""
    pytest.importorskip("transformers")
    from store_fixtures import make_checkpoint
    from test_text_round7 import ours

    folder = make_checkpoint(tmp_path / "one", use_transformers=False)
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 2, "max_new_tokens": 1}))
    ids, _, notes = ours(folder, monkeypatch)
    assert len(ids) == 1
    assert "note: generating at most 1 token: generation_config.json's max_new_tokens is 1" in "\n".join(notes)


# --- 3. removing a damaged model --------------------------------------------------------------------------------------


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("damage", ["weights gone", "manifest unreadable", "tokenizer cut"])
def test_remove_of_a_damaged_model_says_what_it_deleted_and_the_damage(damage, tmp_path, monkeypatch, capsys):
    """Before: with model.safetensors gone, "removed m (N freed ...)" gave the manifest's total (the weights' bytes
    included); with the manifest unreadable, "0 B freed". Now the bytes measured on disk, and the damage named."""
    from store_fixtures import make_checkpoint

    from neurobrix import store
    from neurobrix.cli import main
    from neurobrix.cli_store import format_size

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    store.import_model(str(make_checkpoint(tmp_path / "m", use_transformers=False)), progress=False)
    folder = tmp_path / "home" / "models" / "m"
    if damage == "weights gone":
        (folder / "model.safetensors").unlink()
        why = "model.safetensors is missing"
    elif damage == "manifest unreadable":
        (folder / store.MANIFEST).write_text("{")
        why = f"its {store.MANIFEST} is unreadable"
    else:
        size = (folder / "tokenizer.json").stat().st_size
        (folder / "tokenizer.json").write_bytes(b"{}")
        why = f"tokenizer.json has 2 bytes, expected {size}"
    held = _bytes(folder)
    assert main(["remove", "m"]) == 0
    assert not folder.exists()
    out = capsys.readouterr().out
    assert out == f"removed m ({format_size(held)} freed from {folder.parent}); it was damaged: {why}\n"


def test_remove_of_a_whole_model_counts_every_byte_it_deleted(tmp_path, monkeypatch, capsys):
    """A whole model: the bytes of every file deleted (the manifest's own included), no damage named."""
    from store_fixtures import make_checkpoint

    from neurobrix import store
    from neurobrix.cli import main
    from neurobrix.cli_store import format_size

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    model = store.import_model(str(make_checkpoint(tmp_path / "m", use_transformers=False)), progress=False)
    held = _bytes(model.path)
    assert held > model.size
    assert main(["remove", "m"]) == 0
    assert capsys.readouterr().out == f"removed m ({format_size(held)} freed from {model.path.parent})\n"


# --- 4. the walk: each option's range in --help ---------------------------------------------------------------------


def _help(capsys, command: str) -> str:
    from neurobrix.cli import main

    with pytest.raises(SystemExit):
        main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_run_and_warmup_help_give_each_numbers_range(capsys):
    """Before: "--temperature T 0 = greedy (default), else sampling temperature", "--seed S random seed for sampling
    (default: none, each run differs)", and no least count for the --max-tokens and --max-prompt of either command."""
    run = _help(capsys, "run")
    assert "--temperature T 0 = greedy (default), else the sampling temperature, a number > 0" in run
    assert "--repetition-penalty P divide a repeated token's logit by P, a number > 0" in run
    assert "(default: none, each run differs; 0 <= S < 2**64)" in run
    assert "leaves after the prompt; N >= 1)" in run
    warmup = _help(capsys, "warmup")
    assert "--max-tokens N cover runs of at most N new tokens, N >= 1" in warmup
    assert "--max-prompt N cover prompts of at most N tokens, N >= 1" in warmup
