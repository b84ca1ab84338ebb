"""neurobrix.tables: locating, verifying, validating, and the exact settings lookup."""

from __future__ import annotations

import re

import pytest
import yaml

from conftest import REPO, retrack
from neurobrix import tables
from neurobrix.errors import MissingEntryError, TablesError, UsageError


def settings(kernel="demo", dtype="fp32", **shape):
    return tables.settings(kernel, dtype, shape)


def edit_yaml(path, change):
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


# -- the lookup ---------------------------------------------------------------------------------

def test_lookup_is_exact_containment(fixture_tables):
    assert settings(M=1, N=1) == {"BLOCK_N": 64, "num_warps": 4}
    assert settings(M=16, N=4096) == {"BLOCK_N": 64, "num_warps": 4}  # both range ends are inclusive
    assert settings(M=17, N=4096) == {"BLOCK_N": 128, "num_warps": 8}
    assert settings(dtype="fp16", M=64, N=7) == {"BLOCK_N": 128, "num_warps": 8}
    assert settings(M=10**6, N=10**6) == {"BLOCK_N": 256, "num_warps": 8}  # hi: null is unbounded


def test_a_shape_outside_every_domain_is_refused_never_the_nearest(fixture_tables):
    # fp16 is certified up to M=64 only: M=65 is right next to an entry, and still refused.
    with pytest.raises(MissingEntryError) as err:
        settings(dtype="fp16", M=65, N=128)
    message = str(err.value)
    for part in ("'demo'", "fp16", "M=65, N=128", "interpreter", str(fixture_tables / "interpreter" / "demo.yaml"),
                 "python -m conformance certify --class interpreter --kernels demo --dtypes fp16"):
        assert part in message
    assert err.value.exit_code == 4


def test_dtype_not_in_any_domain_is_refused(fixture_tables):
    with pytest.raises(MissingEntryError, match="dtype bf16"):
        settings(dtype="bf16", M=1, N=1)


def test_unknown_kernel_names_the_missing_table_and_the_command(fixture_tables):
    with pytest.raises(MissingEntryError) as err:
        settings(kernel="nosuch", M=1, N=1)
    assert str(fixture_tables / "interpreter" / "nosuch.yaml") in str(err.value)
    assert "--kernels nosuch" in str(err.value)


def test_unknown_dtype_is_a_usage_error(fixture_tables):
    with pytest.raises(UsageError, match="unknown dtype 'int8'"):
        settings(dtype="int8", M=1, N=1)


def test_a_call_keyed_differently_from_the_table_is_refused(fixture_tables):
    with pytest.raises(TablesError, match=r"keyed by \(M, N\).*asks with \(M, K\)"):
        settings(M=1, K=1)


def test_lookup_on_an_uncertified_class_names_the_class(fixture_tables, monkeypatch):
    from neurobrix import gpu
    from neurobrix.errors import UncertifiedGPUError

    monkeypatch.delenv("TRITON_INTERPRET")
    facts = gpu.DeviceFacts("cuda", "nvidia", "NVIDIA Other", (8, 0), 108)
    monkeypatch.setattr(gpu, "device_facts", lambda: facts)
    with pytest.raises(UncertifiedGPUError) as err:
        settings(M=1, N=1)
    assert "NVIDIA Other" in str(err.value) and "fake-gpu, interpreter" in str(err.value)


# -- locating -----------------------------------------------------------------------------------

def test_source_checkout_tables_are_found_without_the_env_var(monkeypatch):
    monkeypatch.delenv(tables.ENV_VAR, raising=False)
    location = tables.locate()
    assert location.origin == "source checkout"
    assert (location.root / "TRACKED.yaml").is_file()


def test_env_var_pointing_nowhere_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv(tables.ENV_VAR, str(tmp_path / "missing"))
    with pytest.raises(TablesError, match=r"NEUROBRIX_TABLES=.*missing is not a folder"):
        tables.load()


def test_missing_tracked_list(fixture_tables):
    (fixture_tables / "TRACKED.yaml").unlink()
    with pytest.raises(TablesError, match="tracked-file list is missing"):
        tables.load()


# -- integrity ----------------------------------------------------------------------------------

def test_missing_table_file(fixture_tables):
    (fixture_tables / "interpreter" / "demo.yaml").unlink()
    with pytest.raises(TablesError, match=r"interpreter/demo.yaml: tracked but missing"):
        tables.load()


def test_untracked_table_file(fixture_tables):
    (fixture_tables / "interpreter" / "extra.yaml").write_text("format: 1\n")
    with pytest.raises(TablesError, match=r"interpreter/extra.yaml: present but not in the tracked list"):
        tables.load()


def test_altered_bytes_same_size(fixture_tables):
    path = fixture_tables / "interpreter" / "demo.yaml"
    text = path.read_text()
    path.write_text(text.replace("BLOCK_N: 64", "BLOCK_N: 32", 1))
    assert len(path.read_text()) == len(text)
    with pytest.raises(TablesError, match=r"demo.yaml: sha256 differs"):
        tables.load()


def test_altered_size(fixture_tables):
    path = fixture_tables / "interpreter" / "demo.yaml"
    path.write_text(path.read_text() + "\n")
    with pytest.raises(TablesError, match=r"demo.yaml: size \d+ bytes, tracked as \d+"):
        tables.load()


def test_every_problem_is_reported_at_once(fixture_tables):
    (fixture_tables / "interpreter" / "demo.yaml").unlink()
    (fixture_tables / "fake-gpu" / "stray.txt").write_text("x")
    with pytest.raises(TablesError) as err:
        tables.load()
    assert "demo.yaml: tracked but missing" in str(err.value)
    assert "stray.txt: present but not in the tracked list" in str(err.value)


def test_tampered_tracked_list_entry(fixture_tables):
    edit_yaml(fixture_tables / "TRACKED.yaml", lambda d: d["files"][0].update(sha256="0" * 64))
    with pytest.raises(TablesError, match="sha256 differs"):
        tables.load()


# -- parsing and schema -------------------------------------------------------------------------

def test_corrupt_yaml_names_file_and_line(fixture_tables):
    path = fixture_tables / "interpreter" / "demo.yaml"
    lines = path.read_text().splitlines()
    lines[4] = "key: [M, N"  # unclosed flow sequence on line 5
    path.write_text("\n".join(lines) + "\n")
    retrack(fixture_tables)
    with pytest.raises(TablesError) as err:
        tables.load()
    assert re.search(r"interpreter/demo\.yaml:\d+:\d+: not valid YAML", str(err.value))


SCHEMA_CASES = [
    (lambda d: d["entries"][0]["proof"].pop("examples"), r"entries\[0\]\.proof\.examples': is required"),
    (lambda d: d["entries"][1]["domain"].update(M=[8, 4]), r"entries\[1\]\.domain\.M': expected 1 <= lo <= hi"),
    (lambda d: d["entries"][1]["domain"].update(M="17-64"), r"entries\[1\]\.domain\.M': expected list"),
    (lambda d: d["entries"][0]["proof"].update(worst_error_ratio=1.5), r"worst_error_ratio': must be in \[0.0, 1.0\]"),
    (lambda d: d["entries"][0]["config"].update(BLOCK_N=True) or d["entries"][0]["proof"].update(examples=True),
     r"proof\.examples': expected int, got bool"),
    (lambda d: d["entries"][0].update(extra=1), r"entries\[0\]': unknown field\(s\) extra"),
    (lambda d: d["entries"][0]["domain"].update(dtypes=["fp64"]), r"domain\.dtypes': expected a non-empty list"),
    (lambda d: d["entries"][0]["proof"]["rejected"][0].update(reason="meh"), r"reason': must be one of"),
    (lambda d: d.update(kernel="other"), r"field 'kernel': says 'other' but the file is named demo.yaml"),
    (lambda d: d["provenance"].pop("triton"), r"field 'provenance\.triton': is required"),
    (lambda d: d.update(entries=[]), r"field 'entries': must hold at least one entry"),
    (lambda d: d["entries"][0].update(config={}), r"must name at least one meta-parameter"),
]


@pytest.mark.parametrize("change, message", SCHEMA_CASES)
def test_schema_violation_names_the_field(fixture_tables, change, message):
    edit_yaml(fixture_tables / "interpreter" / "demo.yaml", change)
    retrack(fixture_tables)
    with pytest.raises(TablesError, match=message) as err:
        tables.load()
    assert "interpreter/demo.yaml" in str(err.value)


def test_class_schema_violation(fixture_tables):
    edit_yaml(fixture_tables / "fake-gpu" / "class.yaml", lambda d: d["match"].update(compute_capability=[9]))
    retrack(fixture_tables)
    with pytest.raises(TablesError, match=r"fake-gpu/class.yaml: field 'match.compute_capability'"):
        tables.load()


def test_overlapping_domains_are_refused(fixture_tables):
    # fp32 M=[60, 70] overlaps entries 1 (M 17..64) and 2 (M 65..).
    def overlap(d):
        d["entries"][1]["domain"]["M"] = [17, 70]

    edit_yaml(fixture_tables / "interpreter" / "demo.yaml", overlap)
    retrack(fixture_tables)
    with pytest.raises(TablesError, match=r"entries\[1\] .* and entries\[2\] .* overlap"):
        tables.load()


def test_same_ranges_different_dtypes_do_not_overlap(fixture_tables):
    def split(d):
        d["entries"][2]["domain"]["dtypes"] = ["bf16"]
        d["entries"][2]["domain"]["M"] = [1, None]

    edit_yaml(fixture_tables / "interpreter" / "demo.yaml", split)
    retrack(fixture_tables)
    assert settings(dtype="bf16", M=3, N=3) == {"BLOCK_N": 256, "num_warps": 8}


@pytest.mark.parametrize("file", ["interpreter/demo.yaml", "interpreter/class.yaml", "TRACKED.yaml"])
def test_unknown_format_version(fixture_tables, file):
    edit_yaml(fixture_tables / file, lambda d: d.update(format=3))
    if file != "TRACKED.yaml":
        retrack(fixture_tables)
    reads = "1 or 2" if file.endswith("demo.yaml") else "1"
    with pytest.raises(TablesError, match=f"unknown table format version 3; this neurobrix reads format {reads}\\."):
        tables.load()


@pytest.mark.parametrize(("line", "message"), [
    ({"config": {"BLOCK_N": 64}, "reason": "slower", "detail": ""}, "expected a line 'reason: K=V ...: detail', got mapping"),
    ("meh: BLOCK_N=64: x", "reason must be one of"),
    ("slower: BLOCK_N 64: x", "expected 'reason: K=V K=V ...: detail'"),
    ("slower: BLOCK_N=64", "expected 'reason: K=V K=V ...: detail'"),
    ("slower: BLOCK_N=64 BLOCK_N=32: x", "named twice"),
])
def test_format_2_rejected_lines_are_validated(fixture_tables, line, message):
    def bad(d):
        d["format"] = 2
        d["entries"][0]["proof"]["rejected"] = [line]

    edit_yaml(fixture_tables / "interpreter" / "demo.yaml", bad)
    retrack(fixture_tables)
    with pytest.raises(TablesError, match=r"demo.yaml: entries\[0\]\.proof\.rejected\[0\]: .*" + re.escape(message)):
        tables.load()


def test_format_2_rejected_line_round_trips():
    from neurobrix.schema import Rejected, _rejected_line

    for r in (Rejected({"BLOCK_N": 16, "variant": "gemv", "fused": True, "scale": 0.5}, "slower", "12.1 us: vs 10"),
              Rejected({"num_warps": 4}, "crashed", "")):
        assert _rejected_line(r.render(), "t.yaml", "x") == r


def test_kernel_table_without_class_yaml(fixture_tables):
    (fixture_tables / "interpreter" / "class.yaml").unlink()
    retrack(fixture_tables)
    with pytest.raises(TablesError, match="has kernel tables but no class.yaml"):
        tables.load()


def test_loading_tables_does_not_import_torch(fixture_tables):
    import os
    import subprocess
    import sys

    code = (
        "import sys; from neurobrix import tables; t = tables.load(); "
        "assert 'demo' in t.kernels['interpreter']; "
        "assert 'torch' not in sys.modules and 'triton' not in sys.modules, 'imported torch/triton'"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", code], check=True, cwd=fixture_tables.parent, env=env)
