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
- `python -m conformance certify --class nosuch` and `rank --class nosuch` imported torch (4 to 5 s) before refusing
  (round 42's open item), and rank named the GPU this machine lacks before the class: both refuse the class first.
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


def test_a_prefix_of_an_option_is_named_as_the_check_of_unknown_options_reads_it(capsys):
    """The check of unknown options reads a prefix as argparse does. argparse took a unique prefix as the option until
    walk-through round 45, which refuses it (``allow_abbrev=False``): both now name it, with the option it begins."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--model", "m", "--prompt", "hi", "--max-token", "3"])
    said = capsys.readouterr().err.strip().splitlines()[-1]
    assert said.endswith("unrecognized arguments: --max-token 3 (did you mean --max-tokens?)"), said


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


# the commands run one after another in a fresh interpreter: each one's exit status, what it wrote on stderr and
# whether torch was imported by the time it ended
_PROBE = """
import contextlib, io, json, sys
from conformance.__main__ import main
said = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as done:
            code = done.code
    said.append([code, err.getvalue(), "torch" in sys.modules])
print(json.dumps(said))
"""


def test_certify_and_rank_refuse_a_class_the_tables_lack_before_torch_is_imported(tmp_path, capsys):
    """`certify --class nosuch` and `rank --class nosuch` imported torch (4 to 5 s of a 2-core CPU) before refusing a
    class name the tables' folder alone refuses, and rank, on a machine without a GPU, said there was none rather
    than that the class does not exist. Each refuses first now, in the words and with the exit code the command gives
    in this process, where torch is imported and it goes its own way."""
    import json
    import subprocess
    import sys

    import torch  # noqa: F401  (this process: the commands' own way)

    from conformance.__main__ import main

    (tmp_path / "tables").mkdir()
    cases = [
        ["certify", "--class", "nosuch"],
        ["certify", "--class", "nosuch", "--dtypes", "fp32", "fp16"],
        ["certify", "--class", "nosuch", "--dtypes", "fp32", "--tables", str(tmp_path / "tables")],
        ["rank", "--class", "nosuch"],
        ["rank", "--class", "nosuch", "--tables", str(tmp_path / "tables")],
    ]
    here = []
    for argv in cases:
        try:
            code = main(argv)
        except SystemExit as done:
            code = done.code
        here.append([code, capsys.readouterr().err])
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(cases)], capture_output=True, text=True, timeout=120, check=True
    )
    fresh = json.loads(done.stdout)
    for argv, (code, said), (fresh_code, fresh_said, torch_imported) in zip(cases, here, fresh, strict=True):
        assert (fresh_code, fresh_said) == (code, said), argv
        assert code == 2 and not torch_imported, (argv, said)
    assert "does not exist: describe and certify the class first" in here[3][1]  # the class, not the missing GPU
