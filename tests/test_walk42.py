"""Walk-through round 42: a user mistyping a name, a user warming up past the context, a release manager, a contributor
checking a copy of the tables.

Followed the README's run and warmup sections, CONTRIBUTING's "Try the steps on a CPU first" and the README's "For
releases" on the 2-core machine without a GPU, taking up what rounds 39 to 41 left open.

Found and fixed (each test below failed before its fix):
- `neurobrix run --model nosuch`, `warmup --model nosuch` and `python -m conformance check --class nosuch` imported
  torch (2 s of CPU, 2.1 to 3.5 s in all on a quiet machine) before refusing a name they could refuse at once. Each
  refuses it first now (0.4 to 0.5 s), in the same words and with the same exit code, after what it checks before
  the name (the options, the prompt, the tables' folder) as before; where torch is imported already, or a dependency
  is missing, the command goes its own way as it did.
- `warmup --max-prompt` (or `--max-tokens`) past the model's context warmed up the whole context without a word: a
  note says so.
- `python -m gate check --help` and `gate build --help` listed no exit code (the top-level `--help` and the README
  do): each lists them, the same.
- `python -m conformance check` had no `--tables` (round 39's), where certify, track, rank, reformat and sweep have
  one: a contributor's copy was checked only through NEUROBRIX_TABLES. `--tables DIR` checks as with
  NEUROBRIX_TABLES=DIR (its workers, `--record` and the re-proof read that folder).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# the commands run one after another in a fresh interpreter: for each, its exit status, what it wrote on stderr and
# whether torch was imported by the time it ended (those that refuse a name first import it at no point)
_PROBE = """
import contextlib, io, json, os, sys
from neurobrix.cli import main as neurobrix
from conformance.__main__ import main as conformance
said = []
for tool, argv, env in json.loads(sys.argv[1]):
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = (neurobrix if tool == "neurobrix" else conformance)(argv)
        except SystemExit as done:
            code = done.code
    for k, v in before.items():
        os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    said.append([code, err.getvalue(), "torch" in sys.modules])
print(json.dumps(said))
"""

# (command, its arguments, variables set for it): what the commands check before the name (the tables' folder, the
# prompt, the system message) comes first still; an option the run's own check refuses is left to it (test below)
_CASES = [
    ("neurobrix", ["run", "--model", "nosuch", "--prompt", "hi"], {}),
    ("neurobrix", ["warmup", "--model", "nosuch"], {}),
    ("conformance", ["check", "--class", "nosuch"], {}),
    ("neurobrix", ["warmup", "--model", "nosuch"], {"NEUROBRIX_TABLES": "{tmp}/no tables"}),
    ("neurobrix", ["run", "--model", "nosuch", "--prompt-file", "{tmp}/no prompt"], {}),
    ("neurobrix", ["run", "--model", "nosuch", "--prompt", "hi", "--system", "caf\udce9"], {}),
]


def test_a_name_nothing_answers_to_is_refused_before_torch_is_imported(tmp_path, monkeypatch, capsys):
    """Each imported torch (2 s of a CPU) before refusing a name that the store or the tables' folder alone refuses:
    the refusal comes first now, only where it is the command's own (its words and exit code, as this process, where
    torch is imported already, gets them the way it always did), after what the command checks before the name."""
    from conformance.__main__ import main as conformance
    from neurobrix import tables
    from neurobrix.cli import main as neurobrix

    home = {"NEUROBRIX_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    cases = [
        (
            tool,
            [a.replace("{tmp}", str(tmp_path)) for a in argv],
            {k: v.replace("{tmp}", str(tmp_path)) for k, v in env.items()},
        )
        for tool, argv, env in _CASES
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("NEUROBRIX_TABLES", "PYTHONPATH", "TRITON_INTERPRET")}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(cases)],
        cwd=REPO,
        env=env | home | {"PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.splitlines()[-1])
    for k, v in home.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("NEUROBRIX_TABLES", raising=False)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    for (tool, argv, extra), (code, err, imported) in zip(cases, said):
        with monkeypatch.context() as m:
            for k, v in extra.items():
                m.setenv(k, v)
            tables.clear_cache()
            capsys.readouterr()
            try:
                expected_code = (neurobrix if tool == "neurobrix" else conformance)(argv)
            except SystemExit as exit_:
                expected_code = exit_.code
            expected = capsys.readouterr().err
        assert (code, err) == (expected_code, expected), argv
        assert code in (2, 3) and len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert not imported, f"{argv}: torch was imported before the refusal"
    assert "no model 'nosuch'" in said[0][1] and "no GPU class 'nosuch'" in said[2][1]


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory):
    from neurobrix import store, tiny

    root = tmp_path_factory.mktemp("walk42")
    old = os.environ.get("NEUROBRIX_HOME")
    os.environ["NEUROBRIX_HOME"] = str(root / "home")
    try:
        tiny.make(root / "tiny-llama")
        store.import_model(str(root / "tiny-llama"), progress=False)
    finally:
        if old is None:
            os.environ.pop("NEUROBRIX_HOME")
        else:
            os.environ["NEUROBRIX_HOME"] = old
    return root


def test_the_early_refusal_leaves_a_found_folder_and_a_bad_option_to_the_command(tiny_store, monkeypatch):
    """The early refusal must not refuse a name the store finds by the folder it was imported from, nor pass over an
    option the command refuses before the name (it returns: the command goes on in its order)."""
    from neurobrix import store
    from neurobrix.cli import refuse_unstored_first

    monkeypatch.setenv("NEUROBRIX_HOME", str(tiny_store / "home"))
    folder = str(tiny_store / "tiny-llama")
    assert store.unresolved(folder) and store.resolve(folder).name == "tiny-llama"
    assert refuse_unstored_first(folder, tables=True) is None
    assert refuse_unstored_first("nosuch", tables=True, max_tokens=0, max_prompt=None) is None
    with pytest.raises(store.ModelNotFoundError):
        refuse_unstored_first("nosuch", tables=True, max_tokens=None)


@pytest.mark.parametrize(("prompt", "new"), [("context", None), (None, "context"), ("context", "context"), (-1, -1)])
def test_warmup_past_the_context_says_it_warms_the_context(tiny_store, prompt, new, monkeypatch):
    """`warmup --max-prompt` above the model's context warmed up every prompt the context allows without a word (the
    option narrows, never widens): a note says what is warmed up. A limit within the context gets none."""
    from neurobrix import store, warmup

    monkeypatch.setenv("NEUROBRIX_HOME", str(tiny_store / "home"))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    context = store.resolve("tiny-llama").config().max_positions
    asked = [None if v is None else context + (v if v == -1 else 0) for v in (prompt, new)]

    class Planned(Exception):
        pass

    def plan(cfg, tables, class_id, dtype, max_prompt, max_new):
        raise Planned

    monkeypatch.setattr(warmup, "plan_warmup", plan)
    notes: list[str] = []
    with pytest.raises(Planned):
        warmup.warmup(warmup.WarmupOptions("tiny-llama", max_tokens=asked[1], max_prompt=asked[0]), notice=notes.append)
    said = [line for line in notes if line.startswith("note:")]
    past = [f"{flag} {v}" for flag, v in zip(("--max-prompt", "--max-tokens"), asked) if v is not None and v >= context]
    if not past:
        assert said == [], said
        return
    assert len(said) == 1 and all(flag in said[0] for flag in past), said
    assert f"context of {context} tokens" in said[0] and f"up to {context - 1} " in said[0], said


def _exit_codes(text: str) -> list[str]:
    text = " ".join(text.split())
    return sorted(re.findall(r"\b(\d+) [a-z]", text[text.index("Exit codes:") :]))


@pytest.mark.parametrize("command", ["check", "build"])
def test_gate_subcommands_help_lists_the_exit_codes(command):
    """`python -m gate check --help` and `build --help` listed no exit code, where `python -m gate --help` and the
    README's "For releases" list 0, 1, 2, 129, 130, 141, 143."""
    from gate.cli import build_parser

    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    assert "Exit codes:" in sub.format_help()
    assert _exit_codes(sub.format_help()) == _exit_codes(parser.format_help())


def test_check_takes_a_tables_folder_as_the_other_commands_do(fixture_tables, monkeypatch, capsys):
    """`python -m conformance check` had no --tables (certify, track, rank, reformat and sweep have one): a copy was
    checked only through NEUROBRIX_TABLES. `--tables DIR` checks DIR, as NEUROBRIX_TABLES=DIR would, and leaves the
    variable as it found it."""
    from conformance.__main__ import main
    from neurobrix import tables

    monkeypatch.delenv(tables.ENV_VAR)
    tables.clear_cache()
    capsys.readouterr()
    assert main(["check", "--class", "nosuch", "--tables", str(fixture_tables)]) == 2
    err = capsys.readouterr().err
    assert f"no GPU class 'nosuch' in {fixture_tables.resolve()};" in err, err
    assert tables.ENV_VAR not in os.environ
    assert main(["check", "--tables", str(fixture_tables / "no such folder")]) == 2
    err = capsys.readouterr().err
    assert "no such folder is not a folder" in err, err
