"""Round 55 of planted bugs, the int64 offsets lint of kernel-mutant round kmut16 (conformance/offsets.py): a check
itself, so a bug in it lets a narrow offset through with no example to see it (an offset wraps past 2^31 elements on
a GPU, far beyond any shape the interpreter runs). The plants and the driver: tests/planted57_plants.py,
tests/planted57_driver.py. Each case here is a module written for the lint, each line it must name marked
``# narrow: <what it names>``; each fails with the plant named in its docstring and passes on the clean code.

Outcomes: docs/planted-bugs.md, round 55.
"""

from __future__ import annotations

import pytest

from conformance import offsets

HEAD = "import triton\nimport triton.language as tl\n\n"

CASES = {
    # o03: a helper's parameter passed by keyword read as its default, a constant
    "a helper's parameter passed by keyword": """
@triton.jit
def _gather(base, index, stride, BLOCK: tl.constexpr):
    return tl.load(base + index * stride + tl.arange(0, BLOCK))  # narrow: index * stride


@triton.jit
def _kernel(x_ptr, idx_ptr, y_ptr, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    slot = tl.load(idx_ptr + row)
    tl.store(y_ptr + row, _gather(x_ptr, index=slot, stride=stride, BLOCK=BLOCK))
""",
    # o05: a conditional value taken as int64 when one branch is
    "a value int64 on one branch only": """
@triton.jit
def _kernel(x_ptr, idx_ptr, y_ptr, stride, FROM_INDEX: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    slot = tl.load(idx_ptr + row)
    at = slot if FROM_INDEX else row
    tl.store(y_ptr + row, tl.load(x_ptr + at * stride))  # narrow: at * stride
""",
    # o06: an annotated parameter that is no constexpr taken as a compile-time constant
    "an annotated integer parameter": """
@triton.jit
def _kernel(x_ptr, y_ptr, stride: int, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs * stride))  # narrow: offs * stride
""",
    # o07: a loop counter's end bound not followed
    "a loop counter's end bound": """
@triton.jit
def _kernel(x_ptr, y_ptr, n, m, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in range(0, n * m, BLOCK):  # narrow: n * m
        acc += tl.load(x_ptr + k + tl.arange(0, BLOCK))
    tl.store(y_ptr + tl.arange(0, BLOCK), acc)
""",
    # o08: a pointer minus an offset not followed
    "an offset subtracted": """
@triton.jit
def _kernel(end_ptr, idx_ptr, y_ptr, stride):
    row = tl.program_id(0).to(tl.int64)
    slot = tl.load(idx_ptr + row)
    tl.store(y_ptr + row, tl.load(end_ptr - slot * stride))  # narrow: slot * stride
""",
    # o09: an atomic's address not taken as a pointer (its name does not end in _ptr)
    "an atomic's address": """
@triton.jit
def _kernel(counts, idx_ptr, stride):
    row = tl.program_id(0).to(tl.int64)
    slot = tl.load(idx_ptr + row)
    tl.atomic_add(counts + slot * stride, 1)  # narrow: slot * stride
""",
    # o10: tl.where's second value not followed
    "tl.where's second value": """
@triton.jit
def _kernel(x_ptr, idx_ptr, y_ptr, stride):
    row = tl.program_id(0).to(tl.int64)
    slot = tl.load(idx_ptr + row)
    tl.store(y_ptr + row, tl.load(x_ptr + tl.where(slot < 0, 0, slot * stride)))  # narrow: slot * stride
""",
    # o11: a cast to uint32 not taken as narrowing
    "an int64 product cast to uint32": """
@triton.jit
def _kernel(x_ptr, y_ptr, stride):
    row = tl.program_id(0).to(tl.int64)
    tl.store(y_ptr + row, tl.load(x_ptr + (row * stride).to(tl.uint32)))  # narrow: (row * stride).to(tl.uint32)
""",
    # o12: a product inside the value cast (row x stride + col) not read, only a product cast itself
    "a cast sum holding a product": """
@triton.jit
def _kernel(x_ptr, y_ptr, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    col = tl.arange(0, BLOCK)
    at = (row * stride + col).to(tl.int32)  # narrow: (row * stride + col).to(tl.int32)
    tl.store(y_ptr + col, tl.load(x_ptr + at))
""",
    # found in the clean code: a product of int32 values widened by its last operand read as one int64 product
    # (a * b * c64 is (a * b) * c64: Triton computes a * b in int32 first, as in (a * b).to(tl.int64) * c)
    "a product widened by its last operand": """
@triton.jit
def _kernel(x_ptr, idx_ptr, y_ptr, n, stride):
    row = tl.program_id(0).to(tl.int64)
    slot = tl.load(idx_ptr + row)
    a = tl.load(x_ptr + slot * n * stride.to(tl.int64))  # narrow: slot * n
    a += tl.load(x_ptr + row * slot * n)
    tl.store(y_ptr + row, a)
""",
    # o13: a block size taken as a value known only when the kernel runs (an index times a block size, below the
    # int32 size it walks, cast back to int32: nothing to name)
    "an index times a block size cast back": """
@triton.jit
def _kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    block = tl.program_id(0).to(tl.int64)
    start = (block * BLOCK).to(tl.int32)
    tl.store(y_ptr + start + tl.arange(0, BLOCK), tl.load(x_ptr + start + tl.arange(0, BLOCK)))
""",
}


def _expected(source: str) -> set[tuple[str, str]]:
    expected, function = set(), ""
    for line in source.splitlines():
        if line.startswith("def "):
            function = line[4:].split("(")[0]
        if "# narrow: " in line:
            expected.add((f"case.{function}", line.split("# narrow: ")[1]))
    return expected


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_lint_names_each_narrow_offset_and_nothing_else(case):
    """o03, o05-o13 and the product widened by its last operand, one case each (the comment above each case in
    CASES): the products and casts the lint finds, and the problems it reports, are exactly the lines marked."""
    source = HEAD + CASES[case]
    expected = _expected(source)
    found = {(where, text) for where, text, _, _ in offsets.findings("case", source)}
    assert found == expected, case
    problems = offsets.narrow_offsets("case", source)
    assert len(problems) == len(expected), problems


ALLOWED = (
    HEAD
    + """
@triton.jit
def _kernel(x_ptr, idx_ptr, y_ptr, n, m, stride):
    row = tl.program_id(0).to(tl.int64)
    slot = tl.load(idx_ptr + row)
    a = tl.load(x_ptr + slot * m * stride)
    a += tl.load(x_ptr + n * m * stride)
    tl.store(y_ptr + row, a)
"""
)


@pytest.mark.parametrize(
    "names, allowed",
    [
        ({"slot": "below 64"}, set()),  # o14: one int32 operand of three named, two strides not: nothing allowed
        ({"n * m": "below 2^20"}, set()),  # o15: a product named, and one that holds it: not the same product
        ({"slot": "below 64", "m": "below 8"}, {"slot * m * stride"}),
        ({"n * m * stride": "below 2^20"}, {"n * m * stride"}),
    ],
)
def test_the_allow_list_allows_a_product_by_its_operands_or_its_whole_text(monkeypatch, names, allowed):
    """A product stays narrow only where NARROW_OFFSETS names all its int32 operands but one, or the whole product
    (o14: any one operand named allowed it; o15: a product named allowed every product whose text holds it)."""
    monkeypatch.setitem(offsets.NARROW_OFFSETS, "case._kernel", names)
    problems = offsets.narrow_offsets("case", ALLOWED)
    named = {p.split(" computes ", 1)[1].split(" in int32", 1)[0] for p in problems}
    assert named == {"slot * m * stride", "n * m * stride"} - allowed, problems
