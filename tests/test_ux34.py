"""Walk-through round 34: the rough edges earlier rounds noticed and left open, then a new user's walk from the wheel
(docs/walkthroughs.md, "Walk-through round 34"). Each test failed before its fix.

- The CLI's float options (``run --temperature``, ``--top-p``, ``--repetition-penalty``, conformance's ``--margin``,
  ``--timeout``, ``--max-minutes``) went through Python's ``float``, which reads "+0.5", " 0.5", "1_0", a full-width
  "０.５", "nan", "inf" and "1e999" (infinity): a plain ASCII decimal (a minus sign, a point and an exponent allowed)
  only now, the rest refused in argparse's one line naming the option, NaN and infinities with the option's range.
"""

from __future__ import annotations

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
