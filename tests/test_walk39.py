"""Walk-through round 39: a newcomer on a fresh clone, a contributor resuming and recording checks, a release manager.

Followed README.md and CONTRIBUTING.md on the 2-core machine without a GPU: the README's two set-up commands in a
fresh clone and virtual environment, every CPU user's command of the README (the CLI's and each command's `--help`,
`doctor`, `tables verify`, `run` with each option the README shows, `warmup`, each exit code of the README's table
provoked); CONTRIBUTING's interpreter-class path (`check --resume` after another kernel's table changed in a scratch
copy named by NEUROBRIX_TABLES, `check --record` on a copy, `certify --help`, `python -m benchmarks.judge_reads`); the
release gate's commands on this checkout.

Found and fixed (each test below failed before its fix):
- `python -m benchmarks.judge_reads`, which the README cites for the rotary re-proof, answered a user's mistake with a
  traceback: `--examples 0` (ZeroDivisionError; a negative count printed "-0.0 reads"), a setting its kernel lacks a
  parameter of (InvalidInputError from the launcher), a dimension of 0 (from torch.randint), and on a CPU without
  TRITON_INTERPRET=1 (whose message advised `--backend torch`, an option it does not have); `--dtype bf16` on the
  interpreter counted the reads of a judge failing on the interpreter's wrong bf16 (105.6 for rotary's 24.6). And it
  took integer settings only, so no linear setting (`variant=gemv`, `MERGE=last`, `WARP_SPECIALIZE=true`) could be
  given at all. Each is one usage line now (exit 2), a setting refused by the rule run's preflight applies
  (`neurobrix.plan.config_problem`), and a setting's values are read as its table writes them.
- `check --max-minutes` printed the command that finishes it without the variables that chose what it checked: a
  check of a scratch copy named by NEUROBRIX_TABLES (CONTRIBUTING's way to work on a copy; `check` has no `--tables`)
  pasted into another shell resumed against the checkout's tables, and with `--record` bound those. The line now
  carries `NEUROBRIX_TABLES=...` (quoted as the shell reads an assignment) and `TRITON_INTERPRET=1` where they were set.
- Every command's `--help` said exit 6 is "certified for another compiler stack (torch/Triton)"; since proofs are bound
  to the kernel code it is also other kernel code than a table was proven on (the README's row says so): the epilog
  says so now.
- `check --resume` of a report made with another Hypothesis (the fresh environment's newer one) was refused saying
  "only a check of the same tables, kernels and bounds can be resumed", where those were the same: a report keeps
  what its fingerprint digests (`made_with`), and the refusal names the versions or files that differ.
- On a CPU nothing showed a table's kernel-code binding: `tables show CLASS KERNEL` has a `kernel code` line (and
  `re-proven`), and `tables verify` names each table awaiting its re-proof (AWAITING_REPROOF) in a note and in
  `--json`, where it said every index and its proofs agree and nothing else.

Pinned: the help's exit 6 against the README's row. Re-anchored: planted round 49's f04 (a kernel's fingerprint blind to
the stack), whose text moved into ``fingerprint_inputs``, on the same bug, caught as before by tests/test_planted49.py
(its driver with ``--with``). Left open: see
docs/walkthroughs.md (round 39).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def _judge_reads(*args: str, interpret: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.judge_reads", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


ROTARY = ("rotary", "T=4,H=2,D=16")


@pytest.mark.parametrize(
    ("args", "interpret", "says"),
    [
        ((*ROTARY, "BLOCK_H=8,num_warps=4", "--examples", "0"), True, "--examples: '0': expected an integer >= 1"),
        ((*ROTARY, "BLOCK_H=8,num_warps=4", "--examples", "-1"), True, "--examples: '-1': expected an integer >= 1"),
        ((*ROTARY, "BLOCK_X=8,num_warps=4"), True, "lacks BLOCK_H, which this neurobrix's 'rotary' kernel needs"),
        (("rotary", "T=0,H=2,D=16", "BLOCK_H=8,num_warps=4"), True, "T=0: each dimension is an integer >= 1"),
        ((*ROTARY, "BLOCK_H=8,num_warps=4"), False, "run it with TRITON_INTERPRET=1"),
        ((*ROTARY, "BLOCK_H=8,num_warps=4", "--dtype", "bf16"), True, "computes bf16 wrongly"),
        (("linear", "M=1,N=8,K=8", "variant=nope,BLOCK_N=8"), True, "names variant 'nope'"),
    ],
)
def test_judge_reads_refuses_a_mistake_in_one_line(args, interpret, says):
    """Each mistake is argparse's usage and one error line (exit 2), never a traceback nor a count of nothing."""
    done = _judge_reads(*args, interpret=interpret)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and done.stdout == ""
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("python -m benchmarks.judge_reads: error: ") and says in last, done.stderr


def test_judge_reads_takes_every_kernels_setting_as_its_table_writes_it():
    """A linear setting (its variant a name) was refused as "expected NAME=INTEGER pairs": the interpreter class's own
    setting, as tables/interpreter/linear.json holds it, is now counted."""
    import json

    config = json.loads((REPO / "tables/interpreter/linear.json").read_text())["configs"][0]
    text = ",".join(f"{k}={json.dumps(v) if isinstance(v, bool) else v}" for k, v in config.items())
    done = _judge_reads("linear", "M=3,N=8,K=8", text, "--examples", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.fullmatch(r"linear fp16 M=3,N=8,K=8: \d+\.\d tensor reads an example in its judge\n", done.stdout)


def test_finish_line_of_a_stopped_check_keeps_the_tables_it_checked(tmp_path, monkeypatch, capsys):
    """The resume command printed by a check stopped at its time limit, pasted into a shell without the variables,
    must check the same folder: it now carries NEUROBRIX_TABLES (quoted as an assignment) and TRITON_INTERPRET."""
    from conformance import check, reproof, sources
    from conformance.__main__ import build_parser
    from conformance.__main__ import main as conformance_main

    copy = tmp_path / "tables copy"  # a space: the assignment must stay one word to the shell
    copy.mkdir()
    monkeypatch.setenv("NEUROBRIX_TABLES", str(copy))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    report = SimpleNamespace(
        results=["one entry"], complete=False, passed=True, stopped="time limit", as_json=lambda: {"entries": 1}
    )
    monkeypatch.setattr(check, "check_class", lambda *args, **kwargs: report)
    monkeypatch.setattr(check, "render", lambda report: "INCOMPLETE (no failure so far)")
    monkeypatch.setattr(reproof, "record", lambda report, args, say=None: None)
    monkeypatch.setattr(sources, "record", lambda report, args, say=None: [])
    first = str(tmp_path / "r1.json")
    capsys.readouterr()
    assert conformance_main(["check", "--class", "interpreter", "--max-minutes", "1", "--json", first]) == 3
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("finish it"))
    words = shlex.split(line.split(": ", 1)[1])
    env = dict(w.split("=", 1) for w in words[: words.index("python")])
    assert env == {"TRITON_INTERPRET": "1", "NEUROBRIX_TABLES": str(copy)}
    # what a shell runs: each assignment a word of its own before the command (not a quoted command name)
    shell = subprocess.run(
        ["bash", "-c", line.split(": ", 1)[1].replace("python -m conformance", "printenv NEUROBRIX_TABLES; true", 1)],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"]},
    )
    assert shell.stdout.strip() == str(copy), shell
    resumed = build_parser().parse_args(words[words.index("python") + 3 :])
    assert resumed.resume == first


def test_help_exit_codes_name_what_the_readme_says_exit_6_covers():
    """The README's exit-code table says 6 is another compiler stack or other kernel code than a table was proven on
    (the kernel-code binding); every command's --help listed the first only."""
    from neurobrix.cli import EXIT_CODES

    table = README[README.index("| code | meaning |") :]
    row6 = re.search(r"^\| 6 \| (.+) \|$", table, re.M)
    assert row6 and "kernel code" in row6.group(1)
    clause = re.search(r"6 ([^,]+)", EXIT_CODES)
    assert clause and "kernel code" in clause.group(1), EXIT_CODES


def _unbound_copy(tmp_path: Path, monkeypatch) -> Path:
    """The shipped tables with interpreter/silu_mul bound to no kernel code, listed as awaiting its re-proof (as
    nvidia-h200/rotary ships today), selected with NEUROBRIX_TABLES."""
    import shutil

    from conftest import retrack

    from neurobrix import kernel_source

    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables", root)
    index = root / "interpreter/silu_mul.json"
    index.write_text(re.sub(r', "source": "[0-9a-f]{16}"', "", index.read_text()))
    proofs = root / "interpreter/silu_mul.proofs.yaml"
    text = proofs.read_text()
    proofs.write_text(text[: text.index("  kernel_source: ")] + text[text.index("entries:") :])
    retrack(root)
    monkeypatch.setenv("NEUROBRIX_TABLES", str(root))
    awaiting = kernel_source.AWAITING_REPROOF | {("interpreter", "silu_mul")}  # (the shipped ones' too, while any)
    monkeypatch.setattr(kernel_source, "AWAITING_REPROOF", awaiting)
    return root


def test_tables_verify_names_a_table_awaiting_its_reproof(tmp_path, monkeypatch, capsys):
    """`tables verify` passed a table awaiting its re-proof (AWAITING_REPROOF: run launches it with a note) saying only
    that every index and its proofs agree: the note is now in its report, text and JSON."""
    import json

    from neurobrix.cli import main

    _unbound_copy(tmp_path, monkeypatch)
    assert main(["tables", "verify"]) == 0
    out = capsys.readouterr().out
    assert "note: interpreter/silu_mul was proven before proofs were bound to kernel code" in out
    assert "python -m conformance check --class interpreter --kernel silu_mul --record" in out
    assert main(["tables", "verify", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and "interpreter/silu_mul" in report["awaiting_reproof"]


def test_tables_show_says_what_code_a_tables_proofs_are_bound_to(tmp_path, monkeypatch, capsys):
    """`tables show CLASS KERNEL` printed the provenance's date, torch, Triton and command, and not the kernel code the
    proofs were made on, which is what run requires (exit 6): a bound table, one awaiting its re-proof, and one proven
    on other code each say so."""
    from neurobrix.cli import main
    from neurobrix.kernel_source import kernel_source

    root = _unbound_copy(tmp_path, monkeypatch)
    assert main(["tables", "show", "interpreter", "rms_norm"]) == 0
    out = capsys.readouterr().out
    assert f"  kernel code: {kernel_source('rms_norm')}, this neurobrix's rms_norm code\n" in out
    assert "  re-proven: 1 check, the last " in out  # the interpreter's check --record, as its provenance lists it
    assert main(["tables", "show", "interpreter", "silu_mul"]) == 0
    assert "  kernel code: none recorded: proven before proofs were bound to kernel code, awaiting" in (
        capsys.readouterr().out
    )
    # proven on other code: run refuses it (exit 6), and show says so
    from conftest import retrack

    for name in ("rms_norm.json", "rms_norm.proofs.yaml"):
        path = root / "interpreter" / name
        path.write_text(path.read_text().replace(kernel_source("rms_norm"), "0123456789abcdef"))
    retrack(root)
    assert main(["tables", "show", "interpreter", "rms_norm"]) == 0
    out = capsys.readouterr().out
    assert f"kernel code: 0123456789abcdef, not this neurobrix's rms_norm code ({kernel_source('rms_norm')})" in out


def test_a_report_that_cannot_be_resumed_names_what_differs():
    """`check --resume` of a report made with another Hypothesis (a fresh virtual environment: pip installs the newest)
    said "only a check of the same tables, kernels and bounds can be resumed", where the tables, kernels and bounds were
    the same. A report keeps what its fingerprint digests, and the refusal names the versions or files that differ."""
    import json
    import tempfile

    from conformance import check
    from neurobrix.errors import UsageError

    versions, files = check.fingerprint_inputs(REPO / "tables", "interpreter")
    assert check._digest(versions, files) == check.fingerprint(REPO / "tables", "interpreter")
    assert "tables/interpreter/silu_mul.json" in files and "conformance/bounds.py" in files
    report = check.Report(
        "interpreter",
        "tables",
        "ci",
        examples_per_entry=25,
        fingerprint=check._digest(versions, files),
        made_with={"versions": versions, "files": files},
        fingerprints={"silu_mul": "same"},
    )
    assert report.as_json()["made_with"] == {"versions": versions, "files": files}
    other_versions = versions.replace("hypothesis ", "hypothesis 0.")
    other_files = {**files, "conformance/bounds.py": "0" * 64}
    for made_with, says in (
        ({"versions": other_versions, "files": files}, f"it was made with {other_versions}, this run has {versions}"),
        ({"versions": versions, "files": other_files}, "conformance/bounds.py (changed) differ"),
    ):
        old = {**report.as_json(), "fingerprint": "another", "fingerprints": {"silu_mul": "another"}}
        old["made_with"] = made_with
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(old, f)
        with pytest.raises(UsageError) as info:
            check.carried_over(Path(f.name), report)
        Path(f.name).unlink()
        assert says in str(info.value) and "tables, kernels and bounds can" not in str(info.value)


def test_certify_help_says_it_binds_what_it_writes_and_when_it_exits_1(capsys):
    """`certify --help` said nothing of the kernel-code binding (certify writes the digest with every table and adds
    no entry to a table proven on other code, README) and gave exit 3 alone, where CONTRIBUTING's loop ends on 1."""
    from conformance.__main__ import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["certify", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "bound to the kernel code it ran" in text and "no entry is added to a table proven on other code" in text
    assert "Exit 3 when stopped at the time limit with work left, 1 when a domain could not be certified" in text
