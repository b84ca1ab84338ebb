"""The repository's own linters, run by the test command: ruff (lint and format) everywhere, mypy strict on the
table formats and the release gate (pyproject.toml's [tool.ruff] and [tool.mypy] say what and how)."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing():
    done = run("ruff", "check", "--output-format", "concise", ".")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_ruff_format_leaves_every_file_as_it_is():
    done = run("ruff", "format", "--check", ".")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_mypy_strict_on_the_table_formats_and_the_gate():
    done = run("mypy")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


# ---------------------------------------------------------------------- kernel rules the interpreter cannot see
def kernel_calls():
    """Every call in the op modules' source: (file, line, the ast.Call)."""
    import ast

    for path in sorted((REPO / "neurobrix" / "ops").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            yield path.name, node


def test_every_tl_dot_states_its_input_precision():
    """The interpreter's dot is a plain matmul whatever ``input_precision`` says, so an fp32 dot that drops it
    (Triton's default is tf32 on a GPU) passes every CPU check: the rule is held here instead."""
    import ast

    missing = [
        f"{name}:{node.lineno}"
        for name, node in kernel_calls()
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "dot"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "tl"
        and not any(k.arg == "input_precision" for k in node.keywords)
    ]
    assert not missing, f"tl.dot without input_precision= at {', '.join(missing)}"
    assert any(isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "dot" for _, n in kernel_calls())


def test_no_kernel_names_a_half_precision_dtype():
    """Kernels take their element types from their pointers (``y_ptr.dtype.element_ty``): a hard-coded
    tl.float16 or tl.bfloat16 is right for one dtype only, and the interpreter checks bf16 settings in fp16
    (a cast to fp16 there changes nothing it can see)."""
    import ast

    named = [
        f"{name}:{node.lineno} tl.{node.attr}"
        for name, node in kernel_calls()
        if isinstance(node, ast.Attribute)
        and node.attr in ("float16", "bfloat16")
        and isinstance(node.value, ast.Name)
        and node.value.id == "tl"
    ]
    assert not named, f"hard-coded half-precision dtypes in kernels: {', '.join(named)}"
