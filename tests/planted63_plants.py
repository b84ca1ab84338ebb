"""Round 61's planted bugs, in code that landed last: the fill lint of the check's launch lint (conformance/fills.py:
the neutral value of each reduction, the starts a running value may take, how a masked load and its fill are read),
the offsets lint's loaded branch (conformance/offsets.py: a loaded value followed through names, the pointer its
allowance is found by), the fill of a missing bias or norm weight (neurobrix/config.py ``initialised``, its uses in
neurobrix/checkpoint.py ``tensor_problems`` and neurobrix/model.py ``fuse_weights``, the stderr note), and the
interpreter's store guard (conformance/harness.py: each program's stores, named by its place in the grid). For
tests/planted63_driver.py: id, file, the exact text replaced (found once in its file, one line), its replacement, and
the existing tests a contributor would run for it (the outcome of each: docs/planted-bugs.md, round 61)."""

from __future__ import annotations

FILLS = "conformance/fills.py"
OFFSETS = "conformance/offsets.py"
CONFIG = "neurobrix/config.py"
CHECKPOINT = "neurobrix/checkpoint.py"
MODEL = "neurobrix/model.py"
HARNESS = "conformance/harness.py"

FILL_TESTS = ["tests/test_kmut19.py", "-k", "fill"]
OFFSET_TESTS = [
    "tests/test_kmut19.py",
    "tests/test_kmut18.py",
    "tests/test_planted57_offsets.py",
    "-k",
    "offset or lengths or loaded or shipped or narrow",
]
FILLED_TESTS = ["tests/test_text_round50.py", "tests/test_text_round23.py", "-k", "lacks or fills or filled or draws"]
STORE_TESTS = ["tests/test_planted30.py", "tests/test_kmut6.py", "-k", "store or guard or memory"]


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 900) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ the fill lint
    # f01: argmin's neutral value copied from argmax's (-inf): a minimum's index over lanes padded with -inf passed
    p("f01", FILLS, '"tl.argmin": math.inf,', '"tl.argmin": -math.inf,', FILL_TESTS),
    # f02: bf16 taken for a start a running value may keep (the interpreter promotes it; the compiler keeps it narrow)
    p(
        "f02",
        FILLS,
        'STARTS = frozenset("tl.float32 tl.int32',
        'STARTS = frozenset("tl.float32 tl.bfloat16 tl.int32',
        FILL_TESTS,
    ),
    # f03: a load under a cast not followed (``tl.load(..., other=0.0).to(tl.float32)`` reduced by tl.max passed)
    p(
        "f03",
        FILLS,
        'while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to":',
        'while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "cast":',
        FILL_TESTS,
    ),
    # f04: a name assigned more than once judged by its first value (a fill neutralised later named; a second load's
    # fill unjudged)
    p(
        "f04",
        FILLS,
        "load = _load_of(values[0]) if len(values) == 1 else None",
        "load = _load_of(values[0]) if values else None",
        FILL_TESTS,
    ),
    # f05: a mask passed by position not seen (``tl.load(p, inside, other=0.0)`` taken for an unmasked load)
    p(
        "f05",
        FILLS,
        'mask = load is not None and (len(load.args) > 1 or any(k.arg == "mask" for k in load.keywords))',
        'mask = load is not None and any(k.arg == "mask" for k in load.keywords)',
        FILL_TESTS,
    ),
    # f06: any reduction's neutral value taken for every one (a maximum padded with 0, a sum's neutral, passed)
    p(
        "f06",
        FILLS,
        "elif fill is not None and fill != NEUTRAL[func]:",
        "elif fill is not None and fill not in NEUTRAL.values():",
        FILL_TESTS,
    ),
    # f07: a Triton function found by its decorator spelt exactly ``triton.jit`` (``@triton.jit(...)`` or ``@jit``
    # unread)
    p(
        "f07",
        FILLS,
        'if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list)',
        'if isinstance(node, ast.FunctionDef) and any(ast.unparse(d) == "triton.jit" for d in node.decorator_list)',
        FILL_TESTS,
    ),
    # f08: a fill written as the third positional argument not read (the load called unfilled)
    p("f08", FILLS, "if other is None and len(load.args) > 2:", "if other is None and len(load.args) > 3:", FILL_TESTS),
    # ------------------------------------------------------------------ the offsets lint's loaded branch
    # o01: a name's loaded values followed without the names already seen (a value computed from itself recurses)
    p(
        "o01",
        OFFSETS,
        "if self._loaded(fn, value, seen | {sub.id}):",
        "if self._loaded(fn, value, seen):",
        OFFSET_TESTS,
    ),
    # o02: a value loaded into a name by ``+=`` not followed (``base += tl.load(table + b)`` narrowed passed)
    p("o02", OFFSETS, 'if how in ("=", "+="):  # its', 'if how == "=":  # its', OFFSET_TESTS),
    # o03: the pointer a load reads found one step into its address only (``tl.load(len_ptr + b + 1)`` not allowed
    # by ``len_ptr``'s allowance)
    p(
        "o03",
        OFFSETS,
        "while isinstance(address, ast.BinOp | ast.Subscript):",
        "if isinstance(address, ast.BinOp | ast.Subscript):",
        OFFSET_TESTS,
    ),
    # o04: a loaded value allowed by any allowance of its function (not only its pointer's)
    p(
        "o04",
        OFFSETS,
        "return text in names or _loaded_from(narrow[0]) in names",
        "return text in names or bool(names)",
        OFFSET_TESTS,
    ),
    # ------------------------------------------------------------------ a missing bias or norm weight filled
    # c01: `import`'s check asks whether the fill is truthy (a bias's 0.0 is not: a missing bias refused)
    p(
        "c01",
        CHECKPOINT,
        "if name not in found and initialised(name) is None",
        "if name not in found and not initialised(name)",
        FILLED_TESTS,
    ),
    # c02: the fill made in float32 whatever the run's dtype
    p(
        "c02",
        MODEL,
        "return torch.full(shapes[name], initialised(name), dtype=dtype, device=device)",
        "return torch.full(shapes[name], initialised(name), device=device)",
        FILLED_TESTS,
    ),
    # c03: the note's words chosen by the fill's truth (a norm's 1.0 said as zeros)
    p(
        "c03",
        MODEL,
        'sorted({"zeros (a bias)" if initialised(n) == 0.0 else "ones (a norm weight)" for n in filled})',
        'sorted({"zeros (a bias)" if initialised(n) else "ones (a norm weight)" for n in filled})',
        FILLED_TESTS,
    ),
    # c04: the note's count of the tensors not shown counts those shown too
    p(
        "c04",
        MODEL,
        'shown = ", ".join(filled[:3]) + (f" and {len(filled) - 3} more" if len(filled) > 3 else "")',
        'shown = ", ".join(filled[:3]) + (f" and {len(filled)} more" if len(filled) > 3 else "")',
        FILLED_TESTS,
    ),
    # c05: a bias recognised by ``_proj.bias`` (every bias config.json implies is a projection's)
    p("c05", CONFIG, 'if name.endswith(".bias"):', 'if name.endswith("_proj.bias"):', FILLED_TESTS),
    # ------------------------------------------------------------------ the store guard
    # h01: programs named with the first axis's size for the second's (nx for ny): (0, 1, 0) and (0, 0, 1) of a
    # 1 x 2 x 2 grid one program
    p(
        "h01",
        HARNESS,
        '_launch.setdefault("stores", []).append((x + nx * (y + ny * z), addresses.copy()))',
        '_launch.setdefault("stores", []).append((x + nx * (y + nx * z), addresses.copy()))',
        STORE_TESTS,
    ),
    # h02: a launch's stores read at its end without being taken off it
    p(
        "h02",
        HARNESS,
        'stores = _launch.pop("stores", []) if _launch is not None else []',
        'stores = _launch.get("stores", []) if _launch is not None else []',
        STORE_TESTS,
    ),
    # h03: a store of one element not recorded (a program storing one scalar where another does)
    p(
        "h03",
        HARNESS,
        "if _launch is not None and addresses.size:",
        "if _launch is not None and addresses.size > 1:",
        STORE_TESTS,
    ),
]
