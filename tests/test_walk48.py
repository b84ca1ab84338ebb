"""Walk-through round 48: what round 47 left open, then CONTRIBUTING's path for a new GPU class, on a CPU.

On the 2-core machine without a GPU: an sdist (and a wheel) of another project given to the gate; `certify --class` of
a class not described yet, spelt close to one that is or to nothing; then the contributor's path end to end with the
interpreter standing in where a GPU is needed: the class folder, its class.yaml (misnamed `class.yml`, a field
misspelt, `backend: CUDA`, `compute_capability: 10.0`), `track`, `certify --only-missing --max-minutes`, `check`,
`tables verify`, a dtype misspelt, a tables folder that cannot be written, and Ctrl-C in the middle of certify.

Found and fixed (each test below failed before its fix, run against the tree before this round):
- an sdist of another project got every finding a foreign sdist earns (58 and the folder's), this project's name said
  only in G406's `Name:` line among them: one finding, G604, says it is another project's and stands alone, first.
- `certify --class nvidia-h100` (new, close to nvidia-h200) pointed to CONTRIBUTING's step 2, then asked about
  nvidia-h200: it says how a class is made (the file to write, from `neurobrix doctor`, and the `track` to run).
- a class folder holding `class.yml`: certify said class.yaml "does not exist"; `track` listed class.yml, and every
  command then refused the tables as not matching TRACKED.yaml, telling the contributor to run `track` again. certify
  names the file to rename; `track` and certify refuse a file that is no table, before listing it.
- class.yaml's `match` with a field misspelt, `backend: CUDA` or `compute_capability: 10.0` was refused as "it must be
  valid exactly by one definition (0 matches found)": the field is named (the GPU branch's refusal).
- `check --class nvidia-b200 --tables COPY` of a class with no kernel tables printed a certify command without
  `--tables`, which would write the checkout's tables: it names the folder checked (and is refused before torch).
- `affected --base mian` printed git's "bad revision" and a literal backslash-n before its advice: one line, naming
  `main`.
- certify of a GPU class with TRITON_INTERPRET=1 still set said the machine is not of that class, the variable
  unnamed: it says the interpreter certifies the interpreter class alone.
- Ctrl-C in certify could print "Exception ignored in: <function gc_cumulative_time...>" and a traceback before its
  line (the interrupt landing in Hypothesis's garbage-collection callback); the line now says how to resume.
"""

from __future__ import annotations

import io
import signal
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conformance import workers
from conformance.__main__ import main as conformance_main
from neurobrix.errors import TablesError

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- the gate: another project's dists
def _sdist(path: Path) -> Path:
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name, data in (
            ("other-1.0/PKG-INFO", b"Metadata-Version: 2.1\nName: other\nVersion: 1.0\n"),
            ("other-1.0/pyproject.toml", b'[project]\nname = "other"\nversion = "1.0"\n'),
            ("other-1.0/src/other/__init__.py", b"x = 1\n"),
        ):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return path


def _wheel(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as whl:
        whl.writestr("other/__init__.py", "x = 1\n")
        whl.writestr("other-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: other\nVersion: 1.0\n")
    return path


@pytest.mark.parametrize("make", [_sdist, _wheel], ids=["sdist", "wheel"])
def test_another_projects_dist_is_one_finding_that_says_so_first(tmp_path, make):
    """An sdist of another project got 58 findings (G401, G406 line by line, G501 for every table, G509 ...), its
    being another project's never first."""
    from gate.checker import DEFAULT_TRACKED, Options, check
    from gate.completeness import load_reference

    dist = make(tmp_path / ("other-1.0.tar.gz" if make is _sdist else "other-1.0-py3-none-any.whl"))
    report = check([dist], Options(load_reference(DEFAULT_TRACKED), smoke=False, tools=False))
    mine = [f for f in report.findings if f.dist == dist.name]
    codes = [f.code for f in mine]
    # first, and judged no further: only what opening the archive found may follow (a zip's modes, G315, here)
    assert codes[0] == "G604" and all(c < "G400" for c in codes[1:]), [(f.code, f.message) for f in mine]
    assert make is _wheel or codes == ["G604"], codes
    assert "not this project's" in mine[0].message and "'other'" in mine[0].message, mine[0].message


# --------------------------------------------------------------------------- certify of a class not described
def _tables(tmp_path: Path) -> Path:
    """A tables folder of the interpreter's class.yaml and TRACKED.yaml alone (no kernel table is read here)."""
    root = tmp_path / "tables"
    (root / "interpreter").mkdir(parents=True)
    (root / "interpreter" / "class.yaml").write_bytes((ROOT / "tables/interpreter/class.yaml").read_bytes())
    return root


def _error(capsys, argv: list[str], code: int) -> str:
    assert conformance_main(argv) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize(("new", "close"), [("nvidia-h100", "nvidia-h200"), ("brand-new", None)])
def test_certify_of_a_class_not_described_says_how_to_describe_it(capsys, new, close):
    """It said "describe the class first (CONTRIBUTING.md, ..., step 2)" and then asked about nvidia-h200."""
    said = _error(capsys, ["certify", "--class", new, "--dtypes", "bf16", "fp16"], 2)
    class_yaml = ROOT / "tables" / new / "class.yaml"
    assert said.startswith(f"conformance: error: {class_yaml} does not exist"), said
    assert ("did you mean" in said) == (close is not None), said
    assert said.index(f"(did you mean {close}?)" if close else "exist") < said.index("a new class is described first")
    assert f"write {class_yaml} with the facts `neurobrix doctor` prints" in said, said
    assert said.endswith("then record it with `python -m conformance track`"), said


def test_a_class_folder_holding_class_yml_is_named_with_the_file_to_rename(tmp_path, capsys):
    root = _tables(tmp_path)
    (root / "nvidia-b200").mkdir()
    (root / "nvidia-b200" / "class.yml").write_text("format: 1\n")
    said = _error(capsys, ["certify", "--class", "nvidia-b200", "--dtypes", "bf16", "--tables", str(root)], 2)
    assert said.endswith(f"{root / 'nvidia-b200'} holds class.yml; the class's file is named class.yaml: rename it")


@pytest.mark.parametrize("stray", ["nvidia-b200/class.yml", "README.md", "interpreter/silu_mul.json.tmp"])
def test_track_refuses_a_file_that_is_no_table_before_listing_it(tmp_path, capsys, stray):
    """`track` listed class.yml; every command then refused the tables ("do not match TRACKED.yaml ... run `python -m
    conformance track`"), the command just run."""
    root = _tables(tmp_path)
    (root / stray).parent.mkdir(exist_ok=True)
    (root / stray).write_text("x\n")
    said = _error(capsys, ["track", "--tables", str(root)], 3)
    assert said.startswith(f"conformance: error: {root / stray}: not a class.yaml, a <kernel>.json or"), said
    assert ("did you mean class.yaml?" in said) == stray.endswith("class.yml"), said
    assert not (root / "TRACKED.yaml").exists()


def test_check_of_a_class_without_tables_prints_the_certify_command_for_the_folder_checked(
    tmp_path, capsys, monkeypatch
):
    """`check --class nvidia-b200 --tables COPY` printed a certify command without --tables: it wrote the checkout's."""
    monkeypatch.delenv("NEUROBRIX_TABLES", raising=False)
    root = _tables(tmp_path)
    (root / "nvidia-b200").mkdir()
    (root / "nvidia-b200" / "class.yaml").write_bytes(
        (ROOT / "tables/nvidia-h200/class.yaml").read_bytes().replace(b"nvidia-h200", b"nvidia-b200")
    )
    assert conformance_main(["track", "--tables", str(root)]) == 0
    capsys.readouterr()
    said = _error(capsys, ["check", "--class", "nvidia-b200", "--tables", str(root)], 2)
    assert said.endswith(
        "certify it first: python -m conformance certify --class nvidia-b200 --dtypes bf16 fp16 "
        f"--tables {root} --only-missing"
    ), said


def test_affected_base_misspelt_is_one_line_naming_the_branch_meant(tmp_path):
    """`affected --base mian` (CONTRIBUTING's `--base main` mistyped) printed git's "bad revision" and a literal "\\n"
    before its advice."""
    from conformance import affected
    from neurobrix.errors import UsageError

    def git(*argv: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *argv], check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    (tmp_path / "README.md").write_text("a\n")
    git("add", ".")
    git("-c", "user.email=w@x", "-c", "user.name=w", "commit", "-q", "-m", "base")
    with pytest.raises(UsageError) as refused:
        affected.changed_files("mian", tmp_path)
    said = str(refused.value)
    assert said.startswith("--base mian: no branch, tag or commit 'mian' in this checkout (did you mean main?); "), said
    assert "\\n" not in said and "\n" not in said and said.endswith("fetch-depth: 0"), said


# --------------------------------------------------------------------------- class.yaml's match
GPU = {"backend": "cuda", "vendor": "nvidia", "device_name": "NVIDIA B200", "compute_capability": [10, 0]}
MATCHES = [
    (
        {**GPU, "multiprocessor_count": 148, "compute_capabilty": [10, 0]},
        "compute_capability",
        "match'",
        "did you mean",
    ),
    ({**GPU, "multiprocessor_count": 148, "backend": "CUDA"}, "CUDA", "match.backend'", "'cuda', 'hip'"),
    ({**GPU, "multiprocessor_count": 148, "compute_capability": 10.0}, "10.0", "match.compute_capability'", "array"),
    (GPU, "multiprocessor_count", "match'", "must contain"),
]


@pytest.mark.parametrize(("match", "word", "field", "said"), MATCHES, ids=["misspelt", "CUDA", "10.0", "missing"])
def test_a_gpu_class_match_names_the_field_it_got_wrong(match, word, field, said):
    """Each was "field 'match': it must be valid exactly by one definition (0 matches found)"."""
    from neurobrix.schema import parse_class

    if "compute_capabilty" in match:
        del match["compute_capability"]
    data = {"format": 1, "class": "nvidia-b200", "description": "B200", "match": match}
    with pytest.raises(TablesError) as refused:
        parse_class(data, "class.yaml", "nvidia-b200")
    text = str(refused.value)
    assert f"field '{field}" in text and word in text and said in text, text
    assert "exactly by one definition" not in text, text


def test_certify_of_a_gpu_class_under_the_interpreter_names_triton_interpret(monkeypatch):
    """CONTRIBUTING's step 4 run with TRITON_INTERPRET=1 still exported from "Try the steps on a CPU first": "this
    machine is not of GPU class nvidia-b200: name 'Triton interpreter (CPU)' ...", the variable that made it so
    unnamed."""
    from conformance.check import require_device
    from neurobrix.errors import UsageError
    from neurobrix.schema import parse_class

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    data = {"format": 1, "class": "nvidia-b200", "description": "B200", "match": {**GPU, "multiprocessor_count": 148}}
    with pytest.raises(UsageError) as refused:
        require_device(parse_class(data, "class.yaml", "nvidia-b200"))
    said = str(refused.value)
    assert said.startswith("this machine is not of GPU class nvidia-b200: name 'Triton interpreter (CPU)'"), said
    assert said.endswith(
        "; TRITON_INTERPRET=1 is set, and the interpreter checks and certifies the interpreter class alone (--class "
        "interpreter): a GPU class is checked and certified on its GPU, with TRITON_INTERPRET unset"
    ), said


# --------------------------------------------------------------------------- Ctrl-C in certify
def test_ctrl_c_in_certify_is_one_line_that_says_how_to_resume(monkeypatch, capsys):
    """A Ctrl-C landing in a garbage-collection callback printed "Exception ignored in: ..." and a traceback."""
    import conformance.__main__ as conformance_cli

    class Collected:
        def __del__(self) -> None:  # where Hypothesis's gc callback stands: an exception here is "ignored"
            workers.interrupt(signal.SIGINT, None)

    def certify(args):
        Collected()  # collected at once: the interrupt raised in it is unraisable, printed by Python
        raise KeyboardInterrupt  # as workers raise the remembered interrupt once the item is done

    monkeypatch.setattr(conformance_cli, "cmd_certify", certify)
    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)  # Python's own, as a command has (not pytest's)
    said = _error(capsys, ["certify", "--class", "interpreter", "--dtypes", "fp32"], 130)
    assert said == (
        "conformance: interrupted; the entries certify wrote before it stay: run it again with --only-missing to resume"
    )
