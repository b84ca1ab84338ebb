"""Walk-through round 41: a contributor certifying a new GPU class, a release manager, a reader of `run`'s output.

Followed CONTRIBUTING.md's "Certify a new GPU class" and the README's "Adding a GPU class" as far as a CPU machine
allows, docs/release-gate.md and the README's "For releases" (build, `python -m gate`, twine check), and `neurobrix
run` / `warmup` with the interpreter on the 2-core machine without a GPU (the statistics line, the refusals).

Found and fixed (each test below failed before its fix):
- `python -m gate` ended by SIGHUP (its terminal closed) died on the spot, Python's default, its install smoke's
  temporary folder left behind and no line said why; the README's 130 row says the gate ends 128+N, its `--help` listed
  no 129. It unwinds as on SIGTERM now (one line, exit 129, folders removed; under `nohup` it runs on), and its
  `--help` and the README's "For releases" list 129.
- CONTRIBUTING's step 2 done without `python -m conformance track` (the class.yaml written, doctor run at once):
  `doctor` and `tables verify` named the untracked file and stopped there, where `run`'s refusal of the same tables
  says what to do. Both say it now, in the same words.
- doctor's `class` line on a GPU no class matches said to add a class.yaml and certify "(see the contributor guide in
  the README)": the README's section sends the reader on to CONTRIBUTING.md, and the step between (`python -m
  conformance track`, without which every command refuses the tables) was left out. It names both now.
- `python -m conformance certify --class nvidia-b200` (or `check`, `rank` of any GPU class) on a machine without a GPU
  answered with the engine's advice: set TRITON_INTERPRET=1 (then refused, exit 2, "not of GPU class nvidia-b200"),
  or `neurobrix run --backend torch`. It says now that a GPU class is checked and certified on its GPU, and that the
  interpreter is the interpreter class's only (exit 5 as before).
- `run --max-tokens 1` (or a model whose first token ends the text) ended its statistics line "decode 0.0 tokens/s":
  a rate where nothing was decoded, read as a decode too slow to make a token. It says "decode n/a (no token after
  the first)", and the README's definition of `decode` says when.
- `certify --class interpreter --limit prompt=1:8` was refused as "--limit choose among the shapes ...": the verb
  now agrees with the options named.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP on this platform")
@pytest.mark.parametrize("ignored", [False, True])
def test_the_gate_hung_up_unwinds_as_when_terminated(ignored, tmp_path, monkeypatch, capsys):
    """SIGHUP ended the gate at once (Python's default), the install smoke's temporary folder left in the temporary
    directory and no line saying why; it now unwinds like SIGTERM: the folders removed, one line, exit 128 + 1. A
    SIGHUP the caller ignores (`nohup python -m gate ...`) stays ignored, and the gate goes on to its verdict."""
    from gate import cli

    def not_the_gates(signum: int, frame: object) -> None:
        raise AssertionError("the gate left SIGHUP to its caller's handler")

    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN if ignored else not_the_gates)
    made: list[Path] = []

    def a_check_hung_up(args: object) -> int:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="neurobrix-gate-smoke-", dir=tmp_path) as folder:
            made.append(Path(folder))
            os.kill(os.getpid(), signal.SIGHUP)
        return 0

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    parser._subparsers._group_actions[0].choices["check"].set_defaults(func=a_check_hung_up)  # type: ignore[union-attr]
    try:
        capsys.readouterr()
        if ignored:
            assert cli.main(["check", str(tmp_path)]) == 0
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
            return
        with pytest.raises(SystemExit) as done:
            cli.main(["check", str(tmp_path)])
        assert signal.getsignal(signal.SIGHUP) is not_the_gates  # the caller's handler given back
    finally:
        signal.signal(signal.SIGHUP, previous)
    err = capsys.readouterr().err
    assert done.value.code == 128 + signal.SIGHUP, err
    assert err == "gate: hung up (SIGHUP); nothing was passed\n"
    assert made and not made[0].exists()


def test_the_gates_help_and_the_readme_list_the_same_exit_codes():
    """`python -m gate --help` listed 130, 143 and 141 but not 129, and the README's "For releases" none of the
    signals but 130, 143 and 141, where its exit-code table says the gate ends 128+N as `neurobrix` does."""
    from gate.cli import build_parser

    epilog = _flat(build_parser().format_help())
    epilog = epilog[epilog.index("Exit codes:") :]
    section = _flat(README[README.index("## For releases") :])
    section = section[section.index("Exit codes: 0 passed") : section.index("Nothing is printed in colour")]

    def codes(text: str) -> list[str]:
        return sorted(set(re.findall(r"\b(0|1|2|1[2-4]\d) (?=[a-z(])", text)))

    assert codes(epilog) == codes(section) == ["0", "1", "129", "130", "141", "143", "2"], (epilog, section)
    for name in ("SIGTERM", "SIGHUP", "SIGPIPE", "Ctrl-C"):
        assert name in epilog and name in section, name


@pytest.mark.parametrize("command", [("doctor",), ("tables", "verify")])
def test_an_untracked_table_file_is_reported_with_what_to_do(command, tmp_path, monkeypatch, capsys):
    """A new class.yaml not yet recorded by `python -m conformance track` (CONTRIBUTING, step 2): `doctor` and `tables
    verify` named the file "present but not in the tracked list" and nothing else, where `run` refusing the same
    tables ends with what to do. Both end with run's sentence now."""
    import shutil

    from neurobrix import tables
    from neurobrix.cli import main

    copy = tmp_path / "tables"
    shutil.copytree(REPO / "tables", copy)
    (copy / "nvidia-b200").mkdir()
    shutil.copy(copy / "nvidia-h200" / "class.yaml", copy / "nvidia-b200" / "class.yaml")
    monkeypatch.setenv("NEUROBRIX_TABLES", str(copy))
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    tables._locate.cache_clear()
    with pytest.raises(tables.TablesError) as refused:  # what `run` says: its last line is what to do
        tables.load()
    fix = str(refused.value).splitlines()[-1]
    assert "python -m conformance track" in fix
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        raise SystemExit(main(list(command)))
    out = _flat("\n".join(capsys.readouterr()))
    assert done.value.code in (1, 3) and "nvidia-b200/class.yaml: present but not in the tracked list" in out, out
    assert _flat(fix) in out, out


def test_a_gpu_class_checked_without_a_gpu_is_told_where_it_runs(monkeypatch):
    """`python -m conformance certify --class nvidia-b200` (check, rank) on a CPU said "no GPU found" with the
    engine's advice: TRITON_INTERPRET=1, which is then refused as "not of GPU class nvidia-b200" (exit 2), or `neurobrix
    run --backend torch`. A GPU class is checked on its GPU: the message says so, still exit 5."""
    import torch

    from conformance import check
    from neurobrix import gpu, tables
    from neurobrix.errors import NoGPUError

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("NEUROBRIX_TABLES", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(gpu, "device_facts", gpu.device_facts.__wrapped__)  # nothing cached from another test
    klass = tables.load().classes["nvidia-h200"]
    with pytest.raises(NoGPUError) as refused:
        check.require_device(klass)
    said = str(refused.value)
    assert refused.value.exit_code == 5 and "Traceback" not in said
    assert "on a GPU of that class" in said and klass.description in said, said
    assert "--backend torch" not in said and "TRITON_INTERPRET=1, --class interpreter" in said, said
    with pytest.raises(NoGPUError) as refused:  # the interpreter class: the engine's advice still holds
        check.require_device(tables.load().classes["interpreter"])
    assert "TRITON_INTERPRET=1 runs the kernels in the interpreter" in str(refused.value)


def test_a_run_of_one_token_gives_no_decode_rate():
    """One token made, none decoded after it: the line said "decode 0.0 tokens/s", a rate for a decode that never ran;
    it says n/a with why, as the README's definition of `decode` does. A run of several tokens keeps its rate."""
    from test_planted22 import _tiny

    from neurobrix.generate import Sampling, generate

    model = _tiny(16)
    _, one = generate(model, [1, 2, 3], 1, Sampling(), set())
    line = one.line()
    said = line[line.index("decode") : -1]
    assert said == "decode n/a (no token after the first)" and "0.0 tokens/s" not in line, line
    assert f"`{said}`" in README
    _, three = generate(model, [1, 2, 3], 3, Sampling(), set())
    assert re.search(r"\| decode \d+\.\d tokens/s\]$", three.line()), three.line()


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"limits": {"prompt": (1, 8)}}, "--limit chooses"),
        ({"models": ["m"], "limits": {"prompt": (1, 8)}}, "--models and --limit choose"),
    ],
)
def test_the_interpreter_class_refuses_a_coverage_option_in_a_sentence(given, says):
    """One option named took the plural verb ("--limit choose among the shapes a GPU class covers")."""
    from conformance import certify
    from neurobrix.errors import UsageError

    with pytest.raises(UsageError) as refused:
        certify.plan("interpreter", ["silu_mul"], ["fp32"], **given)
    assert str(refused.value).startswith(f"{says} among the shapes a GPU class covers"), str(refused.value)


def test_an_uncertified_gpu_is_told_every_step_and_where_the_guide_is():
    """The refusal of a GPU no class matches (doctor's `class` line, `run`) said "add tables/<class-id>/class.yaml ...
    and run python -m conformance certify ... (see the contributor guide in the README)": the README sends the reader
    on to CONTRIBUTING.md, and the class.yaml unrecorded by `track` makes every command refuse the tables."""
    from neurobrix import gpu, tables
    from neurobrix.errors import UncertifiedGPUError

    contributing = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    b200 = gpu.DeviceFacts("cuda", "nvidia", "NVIDIA B200", (10, 0), 148)
    with pytest.raises(UncertifiedGPUError) as refused:
        gpu.classify(b200, tables.load())
    said = _flat(str(refused.value))
    assert "this GPU is not certified" in said and "python -m conformance track" in said, said
    (guide,) = re.findall(r"CONTRIBUTING\.md, '([^']+)'", said)
    assert f"## {guide}\n" in contributing, guide
    steps = contributing[contributing.index(f"## {guide}") :]
    assert steps.index("python -m conformance track") < steps.index("python -m conformance certify --class")
