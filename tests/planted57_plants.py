"""Round 55's planted bugs, in the int64 offsets lint of kernel-mutant round kmut16 (conformance/offsets.py: what is
int64 and what is not, what reaches a pointer offset, the allow-list), for tests/planted57_driver.py: id, file, the
exact text replaced, its replacement, and the existing tests a contributor would run for it (the outcome of each:
docs/planted-bugs.md, round 55). The lint is itself a check: each plant lets a narrow offset through (or names a wide
one)."""

from __future__ import annotations

OFFSETS = "conformance/offsets.py"
K = ["tests/test_kmut16.py", "tests/test_kmut17.py"]


def p(id: str, old: str, new: str, tests: list[str] = K, file: str = OFFSETS) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests}


PLANTS = [
    # ------------------------------------------------------------------ what is int64
    # o01: a cast to any integer type of tl taken as widening (`.to(tl.int32)` read as int64)
    p(
        "o01",
        'return WIDE if cast[1] == "tl.int64" else NARROW',
        'return WIDE if cast[1].startswith("tl.int") else NARROW',
    ),
    # o02: a loop counter over bounds known when compiled (no int32 bound) taken as int64
    p(
        "o02",
        "return WIDE if WIDE in bounds else NARROW  #",
        "return NARROW if NARROW in bounds else WIDE  #",
    ),
    # o03: a helper's parameter passed by keyword read as its default (a constant)
    p(
        "o03",
        "        for kw in call.keywords:\n            if kw.arg == param:\n                return kw.value\n",
        "",
    ),
    # o04: a helper's parameter int64 when one call passes int64 (the others' int32 lost)
    p("o04", "    for kind in (PTR, NARROW, WIDE):\n", "    for kind in (PTR, WIDE, NARROW):\n"),
    # o05: a conditional value int64 when either branch is
    p(
        "o05",
        "            return _join(self.kind(fn, node.body), self.kind(fn, node.orelse))",
        "            return _combine(self.kind(fn, node.body), self.kind(fn, node.orelse))",
    ),
    # o06: any annotated parameter taken as a compile-time constant (`n: tl.int32` as `BLOCK: tl.constexpr`)
    p(
        "o06",
        'if arg.annotation is not None and "constexpr" in ast.unparse(arg.annotation):',
        "if arg.annotation is not None:",
    ),
    # ------------------------------------------------------------------ what reaches an offset
    # o07: a loop counter's start followed, not its end or step
    p(
        "o07",
        "work += [(fn, a) for a in assigned.iter.args]",
        "work += [(fn, a) for a in assigned.iter.args[:1]]",
    ),
    # o08: only an added offset followed (a pointer minus an offset not read)
    p(
        "o08",
        "                if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):\n",
        "                if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):\n",
    ),
    # o09: an atomic's address not taken as a pointer (a pointer not named _ptr read as an int32)
    p("o09", '("tl.load", "tl.store", "tl.atomic_")', '("tl.load", "tl.store")'),
    # o10: tl.where's second value not followed
    p(
        "o10",
        "                self._scan(fn, node.args[1], work, seen, found)\n                self._scan(fn, node.args[2],",
        "                self._scan(fn, node.args[1],",
    ),
    # ------------------------------------------------------------------ an int64 value cast to int32
    # o11: a cast to uint32 not taken as narrowing
    p("o11", ', "tl.uint32", "tl.uint16"', ', "tl.uint16"'),
    # o12: only a cast product itself read, not a product inside the cast value (row * stride + col)
    p(
        "o12",
        "        for sub in ast.walk(node):\n            if _is_product(sub)",
        "        for sub in (node,):\n            if _is_product(sub)",
    ),
    # o13: a product of a constant taken as one of two run-time values (an index times a block size, cast back)
    p(
        "o13",
        "sum(self.factor_kind(fn, o) not in (CONST, None) for o in _chain(sub)) >= 2:",
        "sum(self.factor_kind(fn, o) is not None for o in _chain(sub)) >= 2:",
    ),
    # ------------------------------------------------------------------ the allow-list
    # o14: a product allowed when any of its int32 operands is named (two strides left unnamed)
    p(
        "o14",
        "return text in names or sum(n not in names for n in narrow) <= 1",
        "return text in names or any(n in names for n in narrow)",
    ),
    # o15: a product allowed when a name it allows appears anywhere in its text
    p(
        "o15",
        "return text in names or sum(n not in names for n in narrow) <= 1",
        "return any(name in text for name in names) or sum(n not in names for n in narrow) <= 1",
    ),
]
