"""Walk-through round 43: a user who installs the wheel and runs a model, by the README, top to bottom.

Built the wheel (`python -m gate build --outdir DIR`), installed it into a plain venv offline, then ran `neurobrix
--help`, `doctor`, the README's tiny model (`tiny-model`, `import`, `run` in the interpreter and with `--backend
torch`), `list`, `warmup`, `remove`, and what a user mistypes, on the 2-core machine without a GPU.

Found and fixed (each test below failed before its fix):
- `neurobrix run --model M --promt hi` was told "one of the arguments --prompt --prompt-file is required", and
  `--modle M` "the following arguments are required: --model": argparse checks the required options before it names
  what it did not know, so the misspelt option was never named. It is named first now, with the option it is close to
  (`unrecognized arguments: --promt (did you mean --prompt?)`), as is an unknown option with nothing required missing
  (`--tempature 0.5`).
- The statistics line of a run off a GPU said `capture 0.00 s`, a capture that took no time, where nothing is
  captured (round 41's and 42's open item): it says `capture n/a (CUDA only)`.
"""

from __future__ import annotations

import pytest

from neurobrix.cli import build_parser, main


def _refusal(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(argv)
    assert done.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        # a misspelt option among what a required one lacks: named, not the required one
        (["run", "--model", "m", "--promt", "hi"], "unrecognized arguments: --promt (did you mean --prompt?)"),
        (["run", "--modle", "m", "--prompt", "hi"], "unrecognized arguments: --modle (did you mean --model?)"),
        (
            ["run", "--modle", "m", "--promt=hi"],
            "unrecognized arguments: --modle --promt (did you mean --model for --modle, --prompt for --promt?)",
        ),
        (["warmup", "--mdel", "m"], "unrecognized arguments: --mdel (did you mean --model?)"),
        # nothing required missing: argparse's own refusal, the close option added
        (
            ["run", "--model", "m", "--prompt", "hi", "--tempature", "0.5"],
            "unrecognized arguments: --tempature 0.5 (did you mean --temperature?)",
        ),
        (["list", "--bogus"], "unrecognized arguments: --bogus"),  # close to nothing: no guess
        # no unknown option: the required one is named as before
        (["run", "--model", "m"], "one of the arguments --prompt --prompt-file is required"),
        (["run", "--prompt", "hi", "--", "--promt"], "the following arguments are required: --model"),
    ],
)
def test_a_misspelt_option_is_named_before_a_missing_required_one(capsys, argv, said):
    """argparse checked the required options first: `--promt hi` was refused as --prompt missing."""
    assert _refusal(capsys, argv) == f"neurobrix {argv[0]}: error: {said}"


def test_a_prefix_of_an_option_is_still_that_option():
    """argparse takes a unique prefix of a long option as it: the check of unknown options does the same."""
    args = build_parser().parse_args(["run", "--model", "m", "--prompt", "hi", "--max-token", "3"])
    assert args.max_tokens == 3


def test_a_run_off_a_gpu_says_that_nothing_was_captured(tmp_path, monkeypatch, capsys):
    """`capture 0.00 s` read as a capture that took no time, where off a GPU nothing is captured."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["tiny-model", str(tmp_path / "tiny-llama")]) == 0
    assert main(["import", str(tmp_path / "tiny-llama")]) == 0
    capsys.readouterr()
    argv = ["run", "--model", "tiny-llama", "--prompt", "hello world", "--max-tokens", "2", "--backend", "torch"]
    assert main(argv) == 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "| capture n/a (CUDA only) |" in line, line
    assert " s | capture" in line  # the load time before it, as ever


def test_a_capture_timed_on_a_gpu_is_printed_as_a_time():
    """Where graphs were captured (a CUDA run), and where nobody said (a Stats made by hand), the time is printed."""
    from neurobrix.generate import Stats

    assert "| capture 0.31 s |" in Stats(26, 2, 0.01, 100.0, capture_s=0.31, captured=True).line()
    assert "| capture 0.31 s |" in Stats(26, 2, 0.01, 100.0, capture_s=0.31).line()
    assert "| capture n/a (CUDA only) |" in Stats(26, 2, 0.01, 100.0, captured=False).line()
