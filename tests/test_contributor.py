"""A contributor's pass over CONTRIBUTING.md and the README's contributor sections on a machine without a GPU (the
interpreter class standing in for a GPU's): what certify, check and the engine's hints said that was wrong, or did
that a contributor could not use. No kernel is launched."""

from __future__ import annotations

import json
import shlex
from types import SimpleNamespace

import pytest
import torch
from conftest import follow, retrack
from kernel_tables import write_tables

from conformance.__main__ import build_parser
from neurobrix import tables
from neurobrix.cli import main


def _certify_args(command: str):
    """The parsed arguments of a printed `python -m conformance certify ...` command, as certify reads them."""
    words = shlex.split(command)
    assert words[:3] == ["python", "-m", "conformance"], command
    return build_parser().parse_args(words[3:])


def _doctor_kernels(capsys) -> str:
    capsys.readouterr()
    main(["doctor", "--json"])
    found = {f["name"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert found["kernels"]["status"] == "FAIL"
    return found["kernels"]["value"]


def test_doctors_certify_command_for_a_missing_table_runs(tmp_path, monkeypatch, capsys):
    """CONTRIBUTING step 2: doctor's `kernels` line names the certify command for the tables still missing. It printed
    `certify --class interpreter --kernels greedy_pick --only-missing`, which certify refuses at once ("name the
    dtypes to certify with --dtypes", exit 2). Now it names the dtypes a class of its kind is certified in."""
    root = write_tables(tmp_path / "t")
    for path in (root / "interpreter").glob("greedy_pick.*"):
        path.unlink()
    retrack(root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    value = _doctor_kernels(capsys)
    assert "no certified table for greedy_pick; certify: " in value
    args = _certify_args(value.split("certify: ", 1)[1])
    assert args.gpu_class == "interpreter" and args.kernels == ["greedy_pick"]
    assert sorted(args.dtypes) == ["fp16", "fp32"] and args.only_missing
    # a GPU class's: bf16 and fp16, as CONTRIBUTING certifies one
    gpu = _certify_args(tables.certify_command("nvidia-b200", ["linear"]))
    assert sorted(gpu.dtypes) == ["bf16", "fp16"] and gpu.only_missing


def test_the_re_certify_command_for_a_table_run_refuses_certifies_it_again(tmp_path, monkeypatch, capsys):
    """A table holding a setting this neurobrix's kernel cannot run (one certified for another neurobrix): doctor and
    run's preflight said "re-certify: ... --only-missing", and certify --only-missing skips every domain the table
    already covers: it certified 0 entries, its final check passed, and the table stayed as run refuses it. The
    re-certify command now leaves --only-missing out (certify then redoes the kernel's entries)."""
    from neurobrix.errors import TablesError
    from neurobrix.plan import resolve

    root = write_tables(tmp_path / "t")
    path = root / "interpreter" / "rms_norm.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["configs"][0]["BLOCK_Q"] = 8
    path.write_text(json.dumps(data), encoding="utf-8")
    follow(root, "interpreter", "rms_norm")  # as certify wrote it, for another neurobrix: its record proves it
    retrack(root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    value = _doctor_kernels(capsys)
    args = _certify_args(value.split("re-certify: ", 1)[1])
    assert args.kernels == ["rms_norm"] and sorted(args.dtypes) == ["fp16", "fp32"] and not args.only_missing
    with pytest.raises(TablesError) as refused:
        resolve({("rms_norm", "fp32", (2, 8))}, tables.load(), "interpreter")
    args = _certify_args(str(refused.value).split("Re-certify: ", 1)[1])
    assert args.kernels == ["rms_norm"] and args.dtypes and not args.only_missing


def test_certify_prints_its_lines_whole_in_a_log(tmp_path, monkeypatch, capsys):
    """certify's lines (each entry certified, the time-limit stop with its resume command) went through the progress
    bar's console, which wraps at its width: 80 columns wherever the output is not a terminal (a CI log, `| tee`),
    so "run again with --only-missing to \\nresume" and each certified setting came out split in two; and it read
    the text as rich markup, so a bracketed word ("[pdl]") vanished. Each line is now printed as written."""
    from conformance import certify

    line = (
        "stopping at the time limit: 2 task(s) left; run again with --only-missing to resume "
        "(class.yaml says launch: [pdl]) " + "x" * 60
    )

    def fake(*args, say, **kwargs):
        say(line)
        return 0, 2, False

    monkeypatch.setattr(certify, "certify", fake)
    monkeypatch.setenv("COLUMNS", "80")
    capsys.readouterr()
    root = write_tables(tmp_path / "t")
    args = ["certify", "--class", "interpreter", "--dtypes", "fp32", "--kernels", "silu_mul", "--tables", str(root)]
    from conformance.__main__ import main as conformance_main

    assert conformance_main(args) == 3
    assert line in capsys.readouterr().out.splitlines()


def test_check_shows_its_progress_in_a_log(tmp_path, monkeypatch, capsys):
    """`check` showed its progress only as rich's bar, which rich does not draw where the output is no terminal: in a
    CI job's log (the GPU workflow's check, 394 s for the H200 class) or under `| tee`, a check of the interpreter class
    printed nothing for minutes until its verdict. It now prints a line per entry checked, with the count."""
    from conformance import check

    def fake(gpu_class, kernels, dtypes, examples, profile, progress, **kwargs):
        task = progress.add_task("check", total=2)
        for domain in ("M=1.., I=1..", "M=1..64, I=1.."):
            progress.update(task, advance=1, description=f"silu_mul fp32 {domain}")
        return SimpleNamespace(results=["two entries"], complete=True, passed=True)

    monkeypatch.setattr(check, "check_class", fake)
    monkeypatch.setattr(check, "render", lambda report: "PASSED")
    from conformance import reproof, sources

    monkeypatch.setattr(reproof, "record", lambda report, args, say=None: None)
    monkeypatch.setattr(sources, "record", lambda *a: [])  # (--record binds nothing of a made-up report)
    from conformance.__main__ import main as conformance_main

    capsys.readouterr()
    assert conformance_main(["check", "--class", "interpreter", "--kernel", "silu_mul"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line.split(" (")[0] for line in err] == [
        "  1/2 silu_mul fp32 M=1.., I=1..",
        "  2/2 silu_mul fp32 M=1..64, I=1..",
    ]


def test_ctrl_c_while_certify_writes_a_table_leaves_it_whole(tmp_path, monkeypatch):
    """Ctrl-C during certify's write of a table (the audit record, then the index, then TRACKED.yaml) left the audit
    record without its index beside a `silu_mul.json.tmp` and a stale TRACKED.yaml: the resumed `--only-missing` run
    read the record, took the entry as certified, certified 0 entries and failed its check on damaged tables. Now the
    interrupt takes effect once the three are written, and the index is written before the record."""
    import os
    import signal

    from conformance import certify, track

    root = write_tables(tmp_path / "t")
    table = certify.existing_table(root, "interpreter", "silu_mul")
    prov = dict(table.provenance)
    for path in (root / "interpreter").glob("silu_mul.*"):
        path.unlink()
    retrack(root)
    real = os.replace

    def ctrl_c_during_the_first_write(src, dst):
        signal.raise_signal(signal.SIGINT)  # the user's Ctrl-C, as the first file is being put in place
        return real(src, dst)

    monkeypatch.setattr(certify.os, "replace", ctrl_c_during_the_first_write)
    # Ctrl-C as a terminal's Python takes it (pytest-xdist's workers ignore SIGINT, leaving it to their controller)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            certify.write_table(root, "interpreter", "silu_mul", list(table.entries), prov)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Ctrl-C acts at once again
    finally:
        signal.signal(signal.SIGINT, previous)
    assert sorted(p.name for p in (root / "interpreter").glob("silu_mul*")) == ["silu_mul.json", "silu_mul.proofs.yaml"]
    assert track.out_of_sync(root) == []
    tables.clear_cache()
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    assert tables.verify_all(tables.load()) == []


def test_affected_takes_a_changed_path_as_the_shell_gives_it(monkeypatch):
    """CONTRIBUTING: `python -m conformance affected tables/nvidia-h200/class.yaml` prints ["nvidia-h200"]. The same
    file named by its absolute path, or from inside tables/ as `nvidia-h200/class.yaml`, printed [] and "no GPU class is
    affected": the kernels' own source (`$PWD/neurobrix/ops/linear.py`) affected nothing. Both now count; a path
    outside the repository is refused by name."""
    from conformance.affected import REPO, affected_classes
    from neurobrix.errors import UsageError

    root = REPO / "tables"
    for given in (REPO / "tables/nvidia-h200/class.yaml", REPO / "neurobrix/ops/linear.py"):
        assert affected_classes(root, [str(given)]).classes == ["nvidia-h200"]
    monkeypatch.chdir(REPO / "tables")
    assert affected_classes(root, ["nvidia-h200/class.yaml"]).classes == ["nvidia-h200"]
    assert affected_classes(root, ["TRACKED.yaml"]).classes == []
    monkeypatch.chdir(REPO)
    assert affected_classes(root, ["tables/nvidia-h200/class.yaml"]).classes == ["nvidia-h200"]
    with pytest.raises(UsageError, match="/etc/hosts is not in the repository"):
        affected_classes(root, ["/etc/hosts"])


def test_certify_refuses_a_tables_folder_it_cannot_write_before_any_work(tmp_path, monkeypatch, capsys):
    """`certify --tables` a folder it cannot write (a read-only checkout, another user's copy) screened, timed and
    proved its first chunk of tasks (9 minutes on a GPU) and only then failed, writing it: "Operation not permitted:
    .../silu_mul.json.tmp". It is now refused before any work, naming the folder and what to do; and a --tables that
    is no folder is named as such, not as a class.yaml to write."""
    import pathlib

    from conformance import certify
    from conformance.__main__ import main as conformance_main

    root = write_tables(tmp_path / "t")
    for path in (root / "interpreter").glob("silu_mul.*"):
        path.unlink()
    retrack(root)
    real = pathlib.Path.write_text

    def read_only(self, *args, **kwargs):
        if self.parent == root / "interpreter":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    worked: list[object] = []
    monkeypatch.setattr(pathlib.Path, "write_text", read_only)
    monkeypatch.setattr(certify, "screen_task", lambda *args: worked.append(args))
    args = ["certify", "--class", "interpreter", "--dtypes", "fp32", "--kernels", "silu_mul", "--no-check"]
    capsys.readouterr()
    assert conformance_main([*args, "--tables", str(root)]) == 2
    err = capsys.readouterr().err
    assert f"--tables {root}: cannot write there ({root / 'interpreter'}: Permission denied)" in err
    assert "nothing was certified" in err and worked == []
    assert conformance_main([*args, "--tables", str(root / "TRACKED.yaml")]) == 2
    assert "TRACKED.yaml: no such folder" in capsys.readouterr().err


def test_certify_only_missing_with_nothing_missing_says_so(tmp_path, capsys):
    """`certify --only-missing` over domains already certified printed "certified 0 entries" and nothing else: a
    contributor re-certifying a table (the engine's re-certify commands said --only-missing) could not tell that every
    entry was skipped. It now says so and how to certify them again; certify's failures name the resume command."""
    from conformance.__main__ import main as conformance_main
    from conformance.certify import CertifyFailed

    root = write_tables(tmp_path / "t")
    args = ["certify", "--class", "interpreter", "--dtypes", "fp32", "--kernels", "silu_mul", "--only-missing"]
    capsys.readouterr()
    assert conformance_main([*args, "--no-check", "--tables", str(root)]) == 0
    out = capsys.readouterr().out
    assert "certified 0 entries" in out and "leave out --only-missing to certify them again" in out
    assert "run certify again with --only-missing" in str(CertifyFailed(3, ["linear fp16 M=1..: no candidate passed"]))


def test_an_overflow_inside_an_interpreted_kernel_prints_no_warning():
    """silu_mul's record draws gates past exp's range (its overflow is part of what is checked): every launch on the
    interpreter printed NumPy's "RuntimeWarning: overflow encountered in exp" and the line that raised it, about 60
    lines of stderr for one `certify --kernels silu_mul` of the CONTRIBUTING walk-through, burying its output. The
    launch now keeps them quiet; the outputs are still judged against float64."""
    import warnings

    from conformance import harness

    case = harness.build("silu_mul", "fp32", {"M": 2, "I": 8}, harness.Values("fp32", "cpu", 0))
    for arg in case.args.values():
        if isinstance(arg, torch.Tensor) and arg.is_floating_point():
            arg.fill_(-1000.0)  # silu(g) = g / (1 + exp(-g)): exp(1000) overflows
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outputs = harness.run_kernel(case, {"BLOCK_M": 32, "BLOCK_I": 256, "num_warps": 4})
    assert [str(w.message) for w in caught] == []
    assert harness.judge(case, outputs, {}).ratio <= 1


def test_a_check_stopped_at_its_time_limit_names_the_resume_command(tmp_path, monkeypatch, capsys):
    """CONTRIBUTING step 5: a check stopped by --max-minutes is finished by a second run given the first report
    (--resume). The stopped check said only how many entries were left, and on another stack its re-proof note named
    the whole check again; it now prints the command that resumes it from its report."""
    from conformance import check, reproof, sources
    from conformance.__main__ import main as conformance_main

    report = SimpleNamespace(
        results=["one entry"], complete=False, passed=True, stopped="time limit", as_json=lambda: {"entries": 1}
    )
    monkeypatch.setattr(check, "check_class", lambda *args, **kwargs: report)
    monkeypatch.setattr(check, "render", lambda report: "INCOMPLETE (no failure so far)")
    monkeypatch.setattr(reproof, "record", lambda report, args, say=None: None)
    monkeypatch.setattr(sources, "record", lambda *a: [])  # (--record binds nothing of a made-up report)
    first = str(tmp_path / "first report.json")
    args = ["check", "--class", "interpreter", "--profile", "ci", "--max-minutes", "1"]
    capsys.readouterr()
    assert conformance_main([*args, "--json", first]) == 3
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("finish it"))
    words = shlex.split(line.split(": ", 1)[1])  # after the variables it ran under (TRITON_INTERPRET=1: walk39)
    resumed = build_parser().parse_args(words[words.index("python") + 3 :])
    assert resumed.resume == first and resumed.profile == "ci" and resumed.gpu_class == "interpreter"
    assert conformance_main([*args, "--json", first, "--resume", first]) == 3  # resumed and stopped again
    assert shlex.split(capsys.readouterr().out.split("over): ", 1)[1]).count("--resume") == 1
    assert conformance_main(args) == 3
    assert "run it with --json REPORT, then --resume REPORT" in capsys.readouterr().out


def test_certify_where_selecting_no_domain_is_refused(tmp_path, monkeypatch, capsys):
    """`certify --kernels silu_mul --where M=5:` on the interpreter class (whose silu_mul domain is M 1.., not inside
    5..) printed "certified 0 entries", checked the whole table and exited 0: a range that selected nothing read as a
    success, where `check --where` with the same range refuses it. It is now refused before any work (exit 2), naming
    the kernels, the class and the range, as check names them."""
    from conformance import certify
    from conformance.__main__ import main as conformance_main

    root = write_tables(tmp_path / "t")
    worked: list[object] = []
    monkeypatch.setattr(certify, "screen_task", lambda *args: worked.append(args))
    args = ["certify", "--class", "interpreter", "--dtypes", "fp32", "--kernels", "silu_mul", "--tables", str(root)]
    capsys.readouterr()
    assert conformance_main([*args, "--where", "M=5:"]) == 2
    err = capsys.readouterr().err
    assert "no domain of silu_mul on interpreter lies inside --where M=5:" in err and worked == []
    assert err.count("\n") == 1  # one line, no traceback
