"""The engine stays lean: nothing under neurobrix/ autotunes, benchmarks or times kernels."""

from __future__ import annotations

import re

import pytest
from conftest import REPO

FORBIDDEN = {
    r"triton\.autotune|@autotune|\bAutotuner\b": "autotuning",
    r"\bdo_bench\w*": "benchmarking",
    r"triton\.testing": "triton's benchmarking helpers",
    r"perf_counter|time\.time\(|time\.monotonic|timeit": "timing loops",
    r"elapsed_time|enable_timing": "CUDA-event timing",
    r"\bpytest\b|\bhypothesis\b": "test code",
}
# Lines that may measure wall time for the user's own statistics line (tokens/s), not to pick settings.
ALLOWED_MARK = "# lean: user statistics"


def engine_lines():
    for path in sorted((REPO / "neurobrix").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            yield path.relative_to(REPO), number, line


def offending():
    found = []
    for path, number, line in engine_lines():
        code = line.split("#", 1)[0] if ALLOWED_MARK not in line else ""
        for pattern, what in FORBIDDEN.items():
            if re.search(pattern, code):
                found.append(f"{path}:{number}: {what}: {line.strip()}")
    return found


def test_engine_has_no_autotuner_no_timing_no_test_code():
    assert offending() == []


@pytest.mark.parametrize(
    "planted",
    [
        "@triton.autotune(configs=[], key=['M'])",
        "ms = triton.testing.do_bench(lambda: f())",
        "start = time.perf_counter()",
        "start.elapsed_time(end)",
        "import pytest",
    ],
)
def test_the_check_catches_planted_code(tmp_path, monkeypatch, planted):
    import test_lean

    fake = tmp_path / "repo"
    (fake / "neurobrix").mkdir(parents=True)
    (fake / "neurobrix" / "ops.py").write_text(f"x = 1\n{planted}\n")
    monkeypatch.setattr(test_lean, "REPO", fake)
    assert test_lean.offending(), f"missed: {planted}"


def test_every_kernel_waits_for_its_predecessor_before_touching_memory():
    """Under programmatic dependent launch a kernel may start before the one before it has finished: each
    ``@triton.jit`` kernel of the engine takes ``PDL`` and makes ``dependent_launch(PDL)`` its first
    statement, so nothing is loaded or stored before the wait (a kernel added without it would race)."""
    import ast

    found = 0
    for path in sorted((REPO / "neurobrix" / "ops").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            jit = isinstance(node, ast.FunctionDef) and any(
                ast.unparse(d) in ("triton.jit", "jit") for d in node.decorator_list
            )
            if not jit or not node.name.endswith("_kernel"):
                continue
            found += 1
            body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            assert "PDL" in [a.arg for a in node.args.args], f"{path.name}: {node.name} takes no PDL"
            assert ast.unparse(body[0]) == "dependent_launch(PDL)", f"{path.name}: {node.name} starts otherwise"
    assert found >= 11  # prefill and chunks share one flash kernel since the sixth session
