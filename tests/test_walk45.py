"""Walk-through round 45: what round 44 left open, then CONTRIBUTING.md's certify path on a CPU as a contributor.

On the 2-core machine without a GPU: the three command lines' parsers (`neurobrix`, `python -m conformance`,
`python -m gate`) given a prefix of an option, an option twice, a one-letter word where a long option is meant; then
`python -m conformance certify --help`, `check --help`, `rank --help`, `neurobrix tables verify` and the interpreter
class's steps of "Try the steps on a CPU first", with and without TRITON_INTERPRET=1.

Found and fixed (each test below failed before its fix):
- argparse took a unique prefix of an option as the option in all three (`run --max-tok 3`, `certify --kernel X` for
  `--kernels`, `gate build --no` for `--no-smoke`): a prefix is refused, named with the options it begins.
- `python -m gate` took an option twice (`--json a --json b` wrote b alone) and an empty value (`--json ''`), which the
  other two refuse: its parser is theirs.
- `run -m x --prompt hi` was "the following arguments are required: --model": the word is named with the required
  option it begins.
- `check --class interpreter --kernel nosuch` said "no GPU found" (exit 5) before the kernel it has no table for; the
  interpreter class's no-device refusal advised `neurobrix run --backend torch`; `track --tables` and `check --tables`
  of no folder did not name the option; a check whose output is no terminal wrote an empty line to standard output
  first (rich's bar, never drawn there); `--class` in `--help` said only "the class to certify".
"""

from __future__ import annotations

import pytest

from conformance.__main__ import build_parser as conformance_parser
from conformance.__main__ import main as conformance_main
from gate.cli import build_parser as gate_parser
from neurobrix.cli import build_parser as neurobrix_parser

PARSERS = {"neurobrix": neurobrix_parser, "python -m conformance": conformance_parser, "python -m gate": gate_parser}


def _refusal(capsys, prog: str, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as done:
        PARSERS[prog]().parse_args(argv)
    assert done.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("prog", "argv", "said"),
    [
        (
            "neurobrix",
            ["run", "--model", "m", "--prompt", "hi", "--max-tok", "3"],
            "run: error: unrecognized arguments: --max-tok 3 (did you mean --max-tokens?)",
        ),
        (
            "neurobrix",
            ["run", "--model", "m", "--prompt", "hi", "--max-tokens=3", "--no"],
            "run: error: unrecognized arguments: --no (did you mean --no-chat or --no-stream?)",
        ),
        (
            "neurobrix",
            ["run", "--mod", "m", "--prompt", "hi"],
            "run: error: unrecognized arguments: --mod (did you mean --model?)",
        ),
        (
            "neurobrix",
            ["run", "--model", "m", "--prompt", "hi", "--temperature", "0.7", "--temp", "0"],
            "run: error: unrecognized arguments: --temp 0 (did you mean --temperature?)",
        ),
        (
            "python -m conformance",
            ["certify", "--class", "interpreter", "--dtypes", "fp32", "--kern", "silu_mul"],
            # (round 46 made `--kernel`, this case's word before, certify's alias of --kernels: a prefix of both now)
            "certify: error: unrecognized arguments: --kern silu_mul (did you mean --kernels?)",
        ),
        (
            "python -m conformance",
            ["check", "--cl", "interpreter"],
            "check: error: unrecognized arguments: --cl interpreter (did you mean --class?)",
        ),
        ("python -m gate", ["build", "--no"], "build: error: unrecognized arguments: --no (did you mean --no-smoke?)"),
        (
            "python -m gate",
            ["check", "--expect", "1.0", "d.whl"],
            "check: error: unrecognized arguments: --expect (did you mean --expect-version?)",
        ),
        (
            "python -m gate",
            ["build", "--allow", "--out=x"],
            "build: error: unrecognized arguments: --allow --out=x (did you mean --allow-dirty for --allow, --outdir "
            "for --out?)",
        ),
    ],
)
def test_a_prefix_of_an_option_is_no_option_in_any_of_the_three(capsys, prog, argv, said):
    """argparse read a unique prefix as the option (`--max-tok 3` ran 3 tokens, `gate build --no` skipped the install
    smoke, `--temperature 0.7 --temp 0` was refused as given twice): each names the prefix and what it begins."""
    assert _refusal(capsys, prog, argv) == f"{prog} {said}"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["check", "--json", "a.json", "--json", "b.json", "d.whl"], "argument --json: given twice; give it once"),
        (["check", "--json", "a.json", "--json", "a.json", "d.whl"], "argument --json: given twice; give it once"),
        (
            ["check", "--expect-version", "1.0", "--expect-version", "2.0", "d.whl"],
            "argument --expect-version: given twice; give it once",
        ),
        (["build", "--outdir", "a", "--outdir=b"], "argument --outdir: given twice; give it once"),
        (["check", "--json", "", "d.whl"], "argument --json: empty value; leave the option out for its default"),
        (["build", "--tracked", " "], "argument --tracked: empty value; leave the option out for its default"),
    ],
)
def test_the_gate_refuses_an_option_twice_or_empty_as_the_other_two_do(capsys, argv, said):
    """`gate check --json a.json --json b.json` wrote b.json alone, `--expect-version 1.0 --expect-version 2.0` checked
    2.0, silently; `neurobrix` and `python -m conformance` refuse both (strictness round 22)."""
    assert _refusal(capsys, "python -m gate", argv) == f"python -m gate {argv[0]}: error: {said}"


def test_a_flag_twice_is_still_the_flag():
    """A flag given twice says the same thing twice: no parser refuses it."""
    args = gate_parser().parse_args(["check", "--no-smoke", "--no-smoke", "d.whl"])
    assert args.no_smoke is True
    args = neurobrix_parser().parse_args(["run", "--model", "m", "--prompt", "hi", "--no-chat", "--no-chat"])
    assert args.no_chat is True


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["run", "-m", "x", "--prompt", "hi"], "run: error: unrecognized arguments: -m (did you mean --model?)"),
        (["warmup", "-m", "x"], "warmup: error: unrecognized arguments: -m (did you mean --model?)"),
        (
            ["run", "--model", "m", "-p", "hi"],
            "run: error: unrecognized arguments: -p (did you mean --prompt or --prompt-file?)",
        ),
        (["run", "--model", "m", "--prompt", "hi", "-m"], "run: error: unrecognized arguments: -m"),  # none missing
        (["run", "-x", "--prompt", "hi"], "run: error: unrecognized arguments: -x"),  # no missing one begins with x
    ],
)
def test_a_one_letter_word_names_the_missing_option_it_begins(capsys, argv, said):
    """`run -m x --prompt hi` was "the following arguments are required: --model": what was typed went unnamed."""
    assert _refusal(capsys, "neurobrix", argv) == f"neurobrix {said}"


@pytest.fixture
def no_device(monkeypatch):
    """A CPU without the interpreter, whatever this machine has."""
    import torch

    from neurobrix import gpu

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("NEUROBRIX_TABLES", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(gpu, "device_facts", gpu.device_facts.__wrapped__)  # nothing cached from another test


def _conformance(capsys, argv: list[str]) -> tuple[int, str, list[str]]:
    try:
        code = conformance_main(argv)
    except SystemExit as done:
        code = done.code
    out, err = capsys.readouterr()
    return code, out, err.strip().splitlines()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--kernel", "nosuch"], "class interpreter has no table for kernel 'nosuch'; it has attention_chunk, "),
        (["--kernel", "rms_norm", "--variant", "tma"], "no variant tma in rms_norm (variants: none)"),
        (["--where", "Q=1:"], "--where names Q, a dimension of none of attention_chunk, "),
    ],
)
def test_check_refuses_what_was_named_before_the_device(no_device, capsys, argv, said):
    """Without the interpreter, `check --class interpreter --kernel nosuch` said "no GPU found" (exit 5) before the
    kernel named; it opened standard output with an empty line (rich's bar, not drawn where there is no terminal)."""
    code, out, err = _conformance(capsys, ["check", "--class", "interpreter", *argv])
    assert code == 2 and err[-1].startswith(f"conformance: error: {said}"), err
    assert out == "", repr(out)


def test_the_interpreter_class_without_the_interpreter_is_told_to_set_it(no_device, capsys):
    """The interpreter class's refusal was the engine's, which went on "or, for `neurobrix run`, choose PyTorch's own
    kernels explicitly with --backend torch (... nothing to warm up)": no step of a check or a certify."""
    for argv in (
        ["check", "--class", "interpreter", "--kernel", "silu_mul"],
        ["certify", "--class", "interpreter", "--dtypes", "fp32", "--kernels", "silu_mul", "--max-minutes", "1"],
    ):
        code, out, err = _conformance(capsys, argv)
        assert code == 5 and len(err) == 1 and out == "", (argv, out, err)
        assert "--backend torch" not in err[0] and "neurobrix run" not in err[0], err
        assert "export TRITON_INTERPRET=1" in err[0] and "Try the steps on a CPU first" in err[0], err


@pytest.mark.parametrize("command", [["track"], ["check", "--class", "interpreter"]])
def test_a_tables_folder_that_is_none_is_named_with_its_option(tmp_path, capsys, command):
    """`track --tables X` and `check --tables X` said "X is not a folder", where certify names `--tables X`."""
    missing = tmp_path / "no such tables"
    code, _, err = _conformance(capsys, [*command, "--tables", str(missing)])
    assert code == 2 and err == [f"conformance: error: --tables {missing} is not a folder ({err[0].split('(', 1)[1]}"]


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("certify", "class.yaml"),
        ("check", "`neurobrix tables list` lists the classes"),
        ("rank", "`neurobrix tables list` lists the classes"),
    ],
)
def test_class_in_help_says_what_it_names(capsys, command, said):
    """`--class CLASS  the class to certify`: nothing said what a class is, where its id comes from or which exist."""
    with pytest.raises(SystemExit):
        conformance_parser().parse_args([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert said in text and ("TRITON_INTERPRET=1" in text or command == "rank"), text
