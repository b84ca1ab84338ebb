"""Walk-through round 42: a user mistyping a name, a user warming up past the context, a release manager, a contributor
checking a copy of the tables.

Followed the README's run and warmup sections, CONTRIBUTING's "Try the steps on a CPU first" and the README's "For
releases" on the 2-core machine without a GPU, taking up what rounds 39 to 41 left open.

Found and fixed (each test below failed before its fix):
- `neurobrix run --model nosuch`, `warmup --model nosuch` and `python -m conformance check --class nosuch` imported
  torch (2.6 s of CPU, 3.2 to 3.9 s in all) before refusing a name they could refuse at once. Each refuses it first
  now (0.5 to 0.7 s), in the same words and with the same exit code, after what it checks before the name (the
  options, the tables' folder) as before.
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

# the command run in a fresh interpreter: its exit status, and whether torch was imported by the time it ended
_PROBE = """
import json, sys
from {module} import main
try:
    code = main({argv!r})
except SystemExit as done:
    code = done.code
print(json.dumps([code, "torch" in sys.modules]))
"""


@pytest.mark.parametrize(
    ("module", "argv", "says"),
    [
        ("neurobrix.cli", ["run", "--model", "nosuch", "--prompt", "hi"], "no model 'nosuch' in the store"),
        ("neurobrix.cli", ["warmup", "--model", "nosuch"], "no model 'nosuch' in the store"),
        ("conformance.__main__", ["check", "--class", "nosuch"], "no GPU class 'nosuch' in "),
    ],
)
def test_a_name_nothing_answers_to_is_refused_before_torch_is_imported(module, argv, says, tmp_path):
    """Each imported torch (2.6 s of a CPU, 3.2 to 3.9 s in all on this machine) before refusing a name that the store
    or the tables' folder alone refuses: the refusal comes first now, in its own words and exit code."""
    env = {k: v for k, v in os.environ.items() if k not in ("NEUROBRIX_TABLES", "PYTHONPATH")}
    env |= {"NEUROBRIX_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(module=module, argv=argv)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    code, torch_imported = json.loads(done.stdout.splitlines()[-1])
    assert code == 2 and says in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert not torch_imported, "torch was imported before the name was refused"


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


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["run", "--model", "nosuch", "--prompt", "hi", "--top-k", "-1"], 2, "--top-k must be >= 0"),
        (["run", "--model", "nosuch", "--prompt", "hi", "--max-tokens", "0"], 2, "--max-tokens must be >= 1"),
        (["warmup", "--model", "nosuch", "--max-prompt", "0"], 2, "--max-prompt must be >= 1"),
        (["run", "--model", "{folder}", "--prompt", "hi"], 5, "no GPU found"),  # an imported folder: found after all
    ],
)
def test_what_run_and_warmup_check_before_the_name_still_comes_first(tiny_store, argv, code, says, monkeypatch, capsys):
    """Refusing an unknown name early must not pass over what comes before it (the options), nor refuse a name the
    store finds by its folder."""
    import torch

    from neurobrix import gpu
    from neurobrix.cli import main

    monkeypatch.setenv("NEUROBRIX_HOME", str(tiny_store / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(gpu, "device_facts", gpu.device_facts.__wrapped__)
    argv = [str(tiny_store / "tiny-llama") if a == "{folder}" else a for a in argv]
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main(argv)
    err = capsys.readouterr().err
    assert done.value.code == code and says in err.splitlines()[0], err


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
    tables._locate.cache_clear()
    capsys.readouterr()
    assert main(["check", "--class", "nosuch", "--tables", str(fixture_tables)]) == 2
    err = capsys.readouterr().err
    assert f"no GPU class 'nosuch' in {fixture_tables.resolve()};" in err, err
    assert tables.ENV_VAR not in os.environ
    assert main(["check", "--tables", str(fixture_tables / "no such folder")]) == 2
    err = capsys.readouterr().err
    assert "no such folder is not a folder" in err, err
