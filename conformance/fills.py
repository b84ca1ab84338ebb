"""Two things about a kernel module's Triton functions that the interpreter's examples cannot be trusted to show,
read from the source: a reduction over a padded tail whose masked lanes hold a value other than the reduction's
neutral one, and a running value (an accumulator, a running maximum or sum) started in a dtype other than fp32.

A masked load fills the lanes past a tensor's end with ``other=``; reduced directly (``tl.max(m)`` of ``m =
tl.load(..., mask=..., other=0.0)``), a fill that is not the reduction's neutral value (-inf for a maximum, +inf
for a minimum, 0 for a sum) enters the result wherever a block is wider than what it covers. Such a bug can hide
behind an identity: the decode merge's maxima padded with 0 instead of -inf leave every split's share 2^(m_c - max)
exact up to a common factor that cancels in the ratio, so the output is the same bit for bit unless every split's
maximum lies below about -126 (the shares then underflow, 0 / 0), scores no draw reaches (and only where the merge
is padded, at a split count that is not a power of two). The rule reads only a reduction of a loaded name: a fill
neutralised on the way (a weight of 0, a ``tl.where``) is not judged.

A running value started with ``tl.zeros``/``tl.full`` in another dtype (``dtype=q.dtype``) is promoted to fp32 by
the interpreter at its first update and computes the same values there, while Triton's compiler refuses a loop
whose carried value changes type, or keeps it in the narrow dtype where no update promotes it. Every running value
of today's kernels starts in fp32.
"""

from __future__ import annotations

import ast
import math

# the value a reduction's masked lanes must hold so that they change nothing
NEUTRAL = {"tl.max": -math.inf, "tl.argmax": -math.inf, "tl.min": math.inf, "tl.argmin": math.inf, "tl.sum": 0.0}
# the dtypes a running value may start in: fp32, and the integer types of counters and indices
STARTS = frozenset("tl.float32 tl.int32 tl.int64 tl.int1 tl.uint32".split())


def _literal(node: ast.expr | None) -> float | None:
    """A fill's value where the source spells it: a number, ``-x``, ``float("inf")``, ``float("-inf")``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _literal(node.operand)
        return None if inner is None else -inner
    if (
        isinstance(node, ast.Call)
        and ast.unparse(node.func) == "float"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        try:
            return float(node.args[0].value)
        except ValueError:
            return None
    return None


def _load_of(node: ast.expr) -> ast.Call | None:
    """The ``tl.load`` a value is, directly or under casts (``tl.load(...).to(tl.float32)``)."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to":
        node = node.func.value
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.load":
        return node
    return None


def _jit_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    return [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list)
    ]


def fill_problems(module_name: str, source: str) -> list[str]:
    """Each reduction of a masked load's value whose fill is not the reduction's neutral value (or is left out:
    the masked lanes are then undefined), and each running value started in a dtype other than fp32 (or an integer
    type); each a sentence naming module.function."""
    problems = []
    for fn in _jit_functions(ast.parse(source)):
        where = f"{module_name}.{fn.name}"
        assigned: dict[str, list[ast.expr]] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        assigned.setdefault(target.id, []).append(node.value)
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            func = ast.unparse(node.func)
            if func in NEUTRAL and node.args and isinstance(node.args[0], ast.Name):
                values = assigned.get(node.args[0].id, [])
                load = _load_of(values[0]) if len(values) == 1 else None
                mask = load is not None and (len(load.args) > 1 or any(k.arg == "mask" for k in load.keywords))
                if not mask:
                    continue
                other = next((k.value for k in load.keywords if k.arg == "other"), None)
                if other is None and len(load.args) > 2:
                    other = load.args[2]
                fill = _literal(other)
                if other is None:
                    problems.append(
                        f"{where} reduces {node.args[0].id} ({ast.unparse(node)}), a masked load without other=: "
                        "its masked lanes are undefined and enter the reduction"
                    )
                elif fill is not None and fill != NEUTRAL[func]:
                    problems.append(
                        f"{where} reduces {node.args[0].id} ({ast.unparse(node)}), loaded with other="
                        f"{ast.unparse(other)}: a padded lane enters the reduction as {fill}, not {func}'s neutral "
                        f"{NEUTRAL[func]} (a block wider than what it covers changes the result)"
                    )
            elif func in ("tl.zeros", "tl.full"):
                dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)
                if dtype is None:
                    dtype = (
                        node.args[2 if func == "tl.full" else 1]
                        if len(node.args) > (2 if func == "tl.full" else 1)
                        else None
                    )
                if dtype is not None and ast.unparse(dtype) not in STARTS:
                    problems.append(
                        f"{where} starts a value in {ast.unparse(dtype)} ({ast.unparse(node)}): a running sum or "
                        "statistic is kept in fp32 (the interpreter promotes it at its first update and hides the "
                        "difference; the compiler keeps it narrow or refuses the loop)"
                    )
    return problems
