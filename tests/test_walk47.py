"""Walk-through round 47: what round 46 left open, then the release gate's documented path as a CI pipeline author.

On the 2-core machine without a GPU: `neurobrix serve`, `python -m conformance tiny-model notes.txt/x`, a misspelt
class, kernel, dtype or variant in each command of the three command lines that lists them; then the README's 'For
releases' section, `python -m gate --help` and each subcommand's, a run on a wheel that is not one, a file not there,
folders, a .tar.gz that is no sdist, an sdist of another project, and the README's steps between the gate and the
upload on a report of `python -m gate build`.

Found and fixed (each test below failed before its fix, but the guard: a class close to nothing gets no hint):
- `neurobrix serve` (ollama's and vllm's word) was refused with the list of commands alone: it says NeuroBrix runs no
  server and names 'run'.
- `python -m conformance tiny-model notes.txt/x` said "the checkpoint cannot be written there (Not a directory)", and
  `tiny-model notes.txt` "(File exists)": the file is named.
- a class, kernel, dtype or variant a command refuses with its list (`check --class interpretr`, `certify --kernels
  silu_mu`, `--dtypes fp61`, `neurobrix tables show interpretr`, ...) named none of them as meant, where argparse's
  choices did since round 46: every such list names the close one, by one rule (`neurobrix.cli.closest`).
- `gate check --tracked FILE` of a file not there said "(not a regular file)" and to give `--tracked FILE`, which it
  had; `--json` of a folder an errno's text; `--expect-version v` "Invalid version: 'v'" twice over.
- an sdist whose PKG-INFO ends at its last field (no blank line, no description) was refused with a field of no name,
  "PKG-INFO: : adds ''".
- the README's steps between the gate and the upload wrote SHA256SUMS into the folder they run in, which it then says
  holds the dists and the report alone (release.yml writes it to $RUNNER_TEMP).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conformance.__main__ import main as conformance_main
from neurobrix.cli import build_parser as neurobrix_parser
from neurobrix.cli import main as neurobrix_main

ROOT = Path(__file__).resolve().parents[1]


def _refusal(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as done:
        neurobrix_parser().parse_args(argv)
    assert done.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize("word", ["serve", "server"])
def test_serve_says_there_is_no_server_and_names_run(capsys, word):
    """`neurobrix serve` listed the commands and named none: a user of another engine is told what to use."""
    said = _refusal(capsys, [word, "--model", "tiny-llama"])
    assert f"invalid choice: {word!r}" in said and "NeuroBrix runs no server" in said, said
    assert said.endswith("; did you mean 'run'?"), said


@pytest.mark.parametrize(("word", "meant"), [("complete", "run"), ("delete", "remove")])
def test_other_engines_words_name_the_command(capsys, word, meant):
    said = _refusal(capsys, [word])
    assert said.endswith(f"; did you mean {meant!r}?") and "server" not in said, said


@pytest.mark.parametrize("under", [True, False])
def test_conformance_tiny_model_names_the_file_in_the_way(tmp_path, capsys, under):
    """`tiny-model notes.txt/x` was "the checkpoint cannot be written there (Not a directory)", the file unnamed."""
    notes = tmp_path / "notes.txt"
    notes.write_text("x\n")
    folder = notes / "x" if under else notes
    assert conformance_main(["tiny-model", str(folder)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    what = f"{notes} is a file" if under else "a file"
    assert err == [
        f"conformance: error: {folder}: {what}, not a folder; name a folder to write the tiny checkpoint into"
    ]


# (command line, argv, the word given, the one meant): every command of the three that refuses a class, kernel,
# dtype or variant with its own list (argparse's choices, `rank --dtype`, named it since round 46)
CLOSE = [
    ("neurobrix", ["tables", "show", "interpretr"], "interpretr", "interpreter"),
    ("neurobrix", ["tables", "show", "interpreter", "silu_mu"], "silu_mu", "silu_mul"),
    ("conformance", ["check", "--class", "interpretr"], "interpretr", "interpreter"),
    ("conformance", ["certify", "--class", "interpretr", "--dtypes", "fp32"], "interpretr", "interpreter"),
    ("conformance", ["rank", "--class", "nvidia-h20"], "nvidia-h20", "nvidia-h200"),
    ("conformance", ["reformat", "--class", "interpretr"], "interpretr", "interpreter"),
    ("conformance", ["affected", "--class", "nvidia-h20"], "nvidia-h20", "nvidia-h200"),
    ("conformance", ["check", "--class", "interpreter", "--kernel", "silu_mu"], "silu_mu", "silu_mul"),
    ("conformance", ["certify", "--class", "interpreter", "--dtypes", "fp32", "--kernels", "silu_mu"], "", "silu_mul"),
    ("conformance", ["sweep", "--kernels", "silu_mu"], "silu_mu", "silu_mul"),
    ("conformance", ["check", "--class", "interpreter", "--dtype", "fp61"], "fp61", "fp16"),
    ("conformance", ["sweep", "--dtypes", "fp61"], "fp61", "fp16"),
    ("conformance", ["check", "--class", "interpreter", "--variant", "tm"], "tm", "tma"),
]


@pytest.mark.parametrize(("prog", "argv", "word", "meant"), CLOSE, ids=[" ".join(c[1]) for c in CLOSE])
def test_a_misspelt_class_kernel_dtype_or_variant_is_named_with_the_one_meant(
    capsys, monkeypatch, prog, argv, word, meant
):
    """`check --class interpretr` listed the classes and named none as meant."""
    monkeypatch.delenv("NEUROBRIX_TABLES", raising=False)
    if prog == "neurobrix":
        with pytest.raises(SystemExit) as done:
            neurobrix_main(argv)
        code = done.value.code
    else:
        code = conformance_main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    if argv[0] in ("certify", "rank") and "--kernels" not in argv:  # then what to do (walk-through round 48)
        assert f"(did you mean {meant}?): " in err[0], err
    else:
        assert err[0].endswith(f"(did you mean {meant}?)"), err


def test_a_new_class_to_certify_is_named_with_nothing_close(tmp_path, capsys):
    """A class no class is close to (a new one, to describe first) gets no hint."""
    assert conformance_main(["certify", "--class", "brand-new", "--dtypes", "fp32"]) == 2
    err = capsys.readouterr().err.strip()
    assert "a new class is described first" in err and "did you mean" not in err, err  # (round 48's words)


def _gate(capsys, argv: list[str]) -> tuple[int, list[str]]:
    from gate.cli import main

    try:
        code = main([*argv[:1], "--allow-dirty", *argv[1:]])  # dists judged, not this checkout (test_gate's way)
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("what", ["no such file", "a folder"])
def test_gate_tracked_names_what_is_there(tmp_path, capsys, what):
    """`--tracked none.yaml` was "(not a regular file); give the repository's tables/TRACKED.yaml or --tracked FILE"."""
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "neurobrix-0.1.0-py3-none-any.whl").write_bytes(b"hello")
    listed = tmp_path / ("none.yaml" if what == "no such file" else "dist")
    code, err = _gate(capsys, ["check", "--no-smoke", "--tracked", str(listed), str(tmp_path / "dist")])
    assert code == 2 and err == [
        f"gate: error: {listed}: no tracked list there ({what}); the reference is this checkout's "
        "tables/TRACKED.yaml, or the file --tracked names"
    ], err


def test_gate_json_of_a_folder_says_so(tmp_path, capsys):
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "neurobrix-0.1.0-py3-none-any.whl").write_bytes(b"hello")
    (tmp_path / "reports").mkdir()
    code, err = _gate(capsys, ["check", "--no-smoke", "--json", str(tmp_path / "reports"), str(tmp_path / "dist")])
    assert code == 2 and len(err) == 1, err
    said = f"gate: error: --json {tmp_path / 'reports'}: cannot be written: a folder, not a file"
    assert err[0].startswith(said), err
    assert "Errno" not in err[0], err


def test_gate_expect_version_that_is_none_says_what_one_is(capsys):
    code, err = _gate(capsys, ["check", "--no-smoke", "--expect-version", "v", "nothing.whl"])
    assert code == 2 and err == [
        "gate: error: --expect-version 'v' is not a version (PEP 440: 1.2.0, v1.2.0, 1.2.0rc1: the release's tag)"
    ], err


def test_metadata_ending_at_its_last_field_is_named_field_by_field():
    """An sdist's PKG-INFO of another project, its fields ended by no blank line: "PKG-INFO: : adds ''"."""
    from gate.metadata import metadata_differences

    expected = b"Metadata-Version: 2.4\nName: neurobrix\nVersion: 0.1.0\n\nThe readme.\n"
    data = b"Metadata-Version: 2.4\nName: other\nVersion: 0.1.0\n"
    said = metadata_differences(data, expected)
    assert not [d for d in said if d.startswith(":")], said
    assert said == [
        "Name: 'other'; pyproject.toml declares 'neurobrix'",
        "the description differs from the one pyproject.toml declares (the readme)",
    ], said
    # bytes that differ only after the last field are still named (the fields themselves all agree)
    assert metadata_differences(b"Name: neurobrix", b"Name: neurobrix\n")


def _readme_publish_commands() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("A pipeline of its own does between the gate and the upload")
    found = re.search(r"```sh\n(.*?)```", text[start:], re.S)
    assert found
    return found[1]


def test_the_readme_steps_before_the_upload_leave_the_dists_and_the_report_alone(tmp_path):
    """The README wrote SHA256SUMS into the folder it then says holds the dists and the report alone."""
    for tool in ("bash", "jq", "sha256sum", "find", "diff", "mktemp"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed")
    work = tmp_path / "work"
    (work / "dist").mkdir(parents=True)
    dists = []
    for name, kind in (("neurobrix-0.1.0-py3-none-any.whl", "wheel"), ("neurobrix-0.1.0.tar.gz", "sdist")):
        (work / "dist" / name).write_bytes(name.encode())
        dists.append({"file": name, "kind": kind, "sha256": hashlib.sha256(name.encode()).hexdigest()})
    commit = "0" * 39 + "1"
    report = {
        "format": 1,
        "verdict": "passed",
        "exit_code": 0,
        "dists": dists,
        "smoke": [{"wheel": dists[0]["file"], "status": "passed"}],
        "repository": {"commit": commit, "clean": True},
    }
    (work / "report.json").write_text(json.dumps(report), encoding="utf-8")
    script = "set -euo pipefail\n" + _readme_publish_commands()
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=work,
        env={"PATH": "/usr/bin:/bin", "GITHUB_SHA": commit, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr  # the steps pass a report that passes
    assert sorted(p.name for p in work.iterdir()) == ["dist", "report.json"]
