"""Walk-through round 44: what rounds 42 and 43 left open, then the README top to bottom as a newcomer.

On the 2-core machine without a GPU: `neurobrix run` of the README's tiny model with `--max-tokens` past its context,
`run --model nosuch` with a sampling option, long options typed with one dash (`-max-tokens 5`, `-model x`, `-help`),
`--chat` where `--no-chat` is meant, then the README's set-up commands and every subcommand's `--help`.

Found and fixed (each test below failed before its fix):
- `run --max-tokens 1000` past the tiny model's context of 128 tokens was refused as "no GPU found" (exit 5), where
  the README says what was named is refused before what the machine lacks: the count is refused first (exit 2), as
  with `--backend torch`; the notes about the count keep their place after the device.
- `run --model nosuch --temperature 0.7` imported torch (its check lived in `neurobrix.generate`) before refusing the
  name: the sampling options are checked without it (`neurobrix.sampling`), then the name refused.
- `-max-tokens 5` was "unrecognized arguments: -max-tokens 5" with no hint, `-model x` "the following arguments are
  required: --model", `-help` "argument -h/--help: ignored explicit argument 'elp'", `neurobrix -version` "the
  following arguments are required: COMMAND": each names the word and the option meant.
- `--chat` got no hint (round 43's comparison without dashes put `chat` too far from `no-chat`), `--stream` was asked
  "did you mean --no-stream?", the opposite of what it asks for: both say what is the default and what turns it off.
"""

from __future__ import annotations

import json
import subprocess
import sys

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
        # one dash where two are meant: the word, what it took, and the option
        (
            ["run", "-max-tokens", "5", "--model", "m", "--prompt", "hi"],
            "run: error: unrecognized arguments: -max-tokens 5 (did you mean --max-tokens?)",
        ),
        (
            ["run", "-model", "x", "--prompt", "hi"],
            "run: error: unrecognized arguments: -model (did you mean --model?)",
        ),
        (
            ["run", "--model", "m", "-prompt", "hi"],
            "run: error: unrecognized arguments: -prompt (did you mean --prompt?)",
        ),
        (["warmup", "-model", "x"], "warmup: error: unrecognized arguments: -model (did you mean --model?)"),
        (["list", "-json"], "list: error: unrecognized arguments: -json (did you mean --json?)"),
        (
            ["run", "--model", "m", "--prompt", "hi", "-no-chat"],
            "run: error: unrecognized arguments: -no-chat (did you mean --no-chat?)",
        ),
        (["run", "-help"], "run: error: unrecognized arguments: -help (did you mean --help?)"),
        (["run", "--model", "m", "--prompt", "hi", "-m"], "run: error: unrecognized arguments: -m"),  # close to nothing
        # the top parser's own words
        (["-version"], ": error: unrecognized arguments: -version (did you mean --version?)"),
        (["-debug", "list"], ": error: unrecognized arguments: -debug (did you mean --debug?)"),
        (["--debugg", "list"], ": error: unrecognized arguments: --debugg (did you mean --debug?)"),
        # what is on unless --no-X is given
        (
            ["run", "--model", "m", "--prompt", "hi", "--chat"],
            "run: error: unrecognized arguments: --chat (chat is the default: leave --chat out; --no-chat turns it "
            "off)",
        ),
        (
            ["run", "--model", "m", "--prompt", "hi", "--stream"],
            "run: error: unrecognized arguments: --stream (stream is the default: leave --stream out; --no-stream "
            "turns it off)",
        ),
        (
            ["run", "--model", "m", "--chat", "--promtp", "hi"],
            "run: error: unrecognized arguments: --chat --promtp (chat is the default: leave --chat out; --no-chat "
            "turns it off; did you mean --prompt for --promtp?)",
        ),
    ],
)
def test_an_option_typed_with_one_dash_or_its_negation_left_out_is_named_with_the_one_meant(capsys, argv, said):
    """`-max-tokens 5` was named with no hint, `-model x` refused as --model missing, `-help` as `-h` given "elp",
    `--chat` with no hint and `--stream` with "did you mean --no-stream?"."""
    assert _refusal(capsys, argv) == f"neurobrix{' ' if said[0] != ':' else ''}{said}"


def test_a_negative_number_is_still_a_value():
    """A word of one dash that is a number is the value argparse reads it as (its command refuses it, in its words)."""
    args = build_parser().parse_args(["run", "--model", "m", "--prompt", "hi", "--temperature", "-0.5"])
    assert args.temperature == -0.5
    args = build_parser().parse_args(["run", "--model", "m", "--prompt", "hi", "--max-tokens", "-1"])
    assert args.max_tokens == -1


def _tiny(tmp_path, monkeypatch, **generation) -> str:
    """The README's tiny model, imported into a store of the test's own, the interpreter off; ``generation`` written
    into its generation_config.json first."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert main(["tiny-model", str(tmp_path / "tiny-llama")]) == 0
    path = tmp_path / "tiny-llama" / "generation_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **generation}))
    assert main(["import", str(tmp_path / "tiny-llama")]) == 0
    return "tiny-llama"


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    return _tiny(tmp_path, monkeypatch)


def _run(capsys, argv: list[str]) -> tuple[int, list[str]]:
    try:
        code = main(argv)
    except SystemExit as done:
        code = done.code
    return code, capsys.readouterr().err.strip().splitlines()


def test_a_count_past_the_context_is_refused_before_the_device(tiny, capsys):
    """Without a GPU, `run --max-tokens 1000` past the tiny model's context of 128 tokens said "no GPU found" (exit
    5); with `--backend torch` it was refused as the count (exit 2). Both refuse the count now."""
    import torch

    capsys.readouterr()
    for backend in ("triton", "torch"):
        argv = ["run", "--model", tiny, "--prompt", "hello world", "--max-tokens", "1000", "--backend", backend]
        code, said = _run(capsys, argv)
        assert code == 2, said
        assert (
            said[-1].startswith("neurobrix: error: the prompt (")
            and "--max-tokens 1000 exceeds the model's" in said[-1]
        ), said
        assert "context of 128 tokens" in said[-1]
    if not torch.cuda.is_available():  # a count within the context: the machine is refused as ever
        code, said = _run(capsys, ["run", "--model", tiny, "--prompt", "hello world", "--max-tokens", "3"])
        assert code == 5 and "no GPU found" in said[0], said


def test_an_end_of_text_id_that_is_no_id_is_refused_before_the_device(tmp_path, monkeypatch, capsys):
    """The model's generation_config.json read before the machine too: "no GPU found" came first without a GPU."""
    tiny = _tiny(tmp_path, monkeypatch, eos_token_id="x")
    capsys.readouterr()
    code, said = _run(capsys, ["run", "--model", tiny, "--prompt", "hello world"])
    assert code == 2, said
    assert said[-1].startswith("neurobrix: error: ") and "eos_token_id must be a token id" in said[-1], said


def test_the_notes_about_the_model_and_the_count_keep_their_place(tmp_path, monkeypatch, capsys):
    """The model's settings and the count are worked out before the device now; their notes are still written where
    they were, after the device and the notes of the options."""
    tiny = _tiny(tmp_path, monkeypatch, do_sample=True)
    capsys.readouterr()
    argv = ["run", "--model", tiny, "--prompt", "hello world", "--backend", "torch", "--top-k", "5"]
    code, said = _run(capsys, argv)
    assert code == 0, said
    notes = [line for line in said if line.startswith("note:")]
    assert len(notes) == 3, said
    assert notes[0].startswith("note: --top-k only applies when sampling")
    assert notes[1].startswith("note: the model's generation_config.json sets do_sample")
    assert notes[2].startswith("note: generating at most 20 tokens")


# the commands run one after another in a fresh interpreter: each one's exit status, what it wrote on stderr and
# whether torch was imported by the time it ended
_PROBE = """
import contextlib, io, json, sys
from neurobrix.cli import main
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


def test_a_sampling_option_is_checked_and_the_name_refused_before_torch_is_imported(tmp_path, monkeypatch, capsys):
    """`run --model nosuch --temperature 0.7` imported torch (2 to 3 s of a CPU) to check the option before refusing
    the name. Each refusal comes without it now, in the words and with the exit code the command gives in this
    process, where torch is imported and it goes its own way."""
    import torch  # noqa: F401  (this process: the command's own way)

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    base = ["run", "--model", "nosuch", "--prompt", "hi"]
    cases = [
        [*base, "--temperature", "0.7"],
        [*base, "--temperature", "0.7", "--top-k", "5", "--top-p", "0.9", "--seed", "1", "--repetition-penalty", "1.1"],
        [*base, "--top-k", "-1"],  # the option refused, before the name
        [*base, "--temperature", "0.7", "--top-p", "2"],
        [*base, "--seed", "-1", "--backend", "torch"],
        [*base, "--repetition-penalty", "0"],
    ]
    here = [_run(capsys, argv) for argv in cases]
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(cases)], capture_output=True, text=True, timeout=120, check=True
    )
    fresh = json.loads(done.stdout)
    for argv, (code, said), (fresh_code, fresh_said, torch_imported) in zip(cases, here, fresh, strict=True):
        assert (fresh_code, fresh_said.strip().splitlines()) == (code, said), argv
        assert code == 2 and not torch_imported, (argv, said)
    assert "no model 'nosuch'" in here[0][1][-1] and "no model 'nosuch'" in here[1][1][-1]
    assert here[2][1][-1].startswith("neurobrix: error: --top-k must be >= 0")
    assert here[3][1][-1].startswith("neurobrix: error: --top-p must be in [0, 1]")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["build", "-outdir", "x"], "build: error: unrecognized arguments: -outdir x (did you mean --outdir?)"),
        (["build", "--outdr", "x"], "build: error: unrecognized arguments: --outdr x (did you mean --outdir?)"),
        (["check", "-json", "r.json", "dist"], "check: error: unrecognized arguments: -json (did you mean --json?)"),
        (["build", "--bogus"], "build: error: unrecognized arguments: --bogus"),  # close to nothing: no guess
    ],
)
def test_the_gate_names_the_option_meant_too(capsys, argv, said):
    """The README's set-up runs `python -m gate build`: `-outdir DIR` there was named with no hint."""
    from gate.cli import build_parser as gate_parser

    with pytest.raises(SystemExit) as done:
        gate_parser().parse_args(argv)
    assert done.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"python -m gate {said}"
