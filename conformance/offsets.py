"""Which pointer offsets of a kernel module's Triton functions are computed in int32, read from the source.

Triton computes an integer expression in int32 unless an operand is int64: a program id, ``tl.arange``, a loop
counter, a loaded index of an int32 tensor and every integer argument (a stride, a size: Triton specialises an
argument below 2^31 as int32) are int32, and ``.to(tl.int64)`` widens. A product of two int32 values wraps past
2^31; entering a pointer offset it reads or writes elsewhere on a GPU, at sizes far beyond any shape the
interpreter runs (where the same code computes the same values). ``narrow_offsets`` follows, over every
``@triton.jit`` function of a module, which names are int64 (assigned from a widened value, from an expression
with an int64 operand, a loop counter over int64 bounds, a helper's parameter that every call passes int64) and
which values reach a pointer offset (an operand added to a pointer, through the names, loop bounds and helper
parameters it is computed from), and reports each product reaching an offset whose operands are all int32 with two
or more of them not compile-time constants (an index times a block size stays below the int32 size it walks; an
index times a stride or a size may not), and each int64 value cast to int32 on the way. Values are followed through
``tl.where``'s branches, conditional expressions, tuples (written out, named, unpacked, indexed by a literal, passed
to a helper) and what a helper returns; a pointer is a parameter named ``_ptr`` or ``_desc``, or one an address
starts from (through the same); a left shift is a product (``x << 20`` is x times 2^20: by a literal of SCALE bits or
more, or by a run-time amount), as is a literal factor of 2^SCALE or more. A product stays narrow only where
``NARROW_OFFSETS`` names it for its function: its int32 operands but one (the stride it multiplies), or the whole
product, each with the bound (``Allow``) ``bound_problems`` computes from the catalogue's shapes, the models'
layouts and the candidate spaces, and refuses at 2^31 elements.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

CONST, WIDE, NARROW, PTR = "constant", "int64", "int32", "pointer"
# a left shift by this many bits or more, or a literal factor of 2^SCALE or more, scales like a stride (64 or 128
# elements a head, a token's row): an int32 index shifted or multiplied so is a product, as an index times a
# stride is (a doubling, x << 1 or 2 * x, stays within a small multiple of the dimension it walks)
SCALE = 4
NARROWING = {"tl.int32", "tl.int16", "tl.int8", "tl.uint32", "tl.uint16", "tl.uint8"}
# calls whose value is their first argument's, its shape or a compiler hint changed: an offset passes through them
# whole (an alignment hint on a row offset, a row offset given a new axis)
WRAPPERS = frozenset(
    "tl.multiple_of tl.max_contiguous tl.max_constancy tl.reshape tl.view tl.permute tl.trans tl.broadcast_to "
    "tl.expand_dims tl.ravel tl.abs".split()
)
# calls whose value is not computed from their arguments' values (an address is read or written, a shape made): an
# offset in their arguments is scanned where it meets its pointer, not here
OPAQUE = frozenset(
    "tl.load tl.store tl.arange tl.full tl.zeros tl.zeros_like tl.program_id tl.num_programs tl.debug_barrier "
    "tl.assume tl.static_assert tl.device_assert".split()
)


class Allow(NamedTuple):
    """Why an int32 offset may stay narrow, and the bound that says so: the names of ``bounds``' quantities (elements)
    whose largest the allowed product stays within; ``bound_problems`` computes them from the catalogue's shapes, the
    models' layouts and the candidate spaces, and refuses one that reaches 2^31."""

    bound: tuple[str, ...]
    why: str


# each allowance's bound, computed by ``bounds`` (at today's catalogue: q's position stride in the fused qkv
# projection (32 + 2 x 8) x 128 = 6,144 elements, a cache position of 8 kv heads x 128 = 1,024, 32,768 positions, a
# vocabulary of 152,064 met at 64 rows, 4,096 prompt rows at most a pass; 8 K slices, 4 split tiles)
NARROW_OFFSETS: dict[str, dict[str, Allow]] = {
    "neurobrix.ops.attention._flash_block": {
        "keys": Allow(("flash.positions",), "a key position of one sequence times its position stride")
    },
    "neurobrix.ops.attention._attention_flash_kernel": {
        "offs_c": Allow(("flash.positions",), "a query of one sequence's chunk times q's or o's position stride")
    },
    "neurobrix.ops.attention._attention_decode_split_kernel": {
        "offs_n": Allow(("decode.positions",), "a position of one sequence's cache times its position stride"),
        "split_id": Allow(("decode.split_start",), "a split's first position, split_id x chunk"),
        "tl.num_programs(0)": Allow(("decode.partial_rows",), "the partials' rows B x Hkv x G x SPLITS"),
        "offs_g": Allow(
            ("decode.group_heads",),
            "a query head of one kv head's group times HKV (an interleaved mapping): below BLOCK_G x Hkv",
        ),
        "len_ptr": Allow(
            ("decode.lengths",),
            "the lengths, loaded and narrowed: each at most the cache's positions, the loop bound of its keys",
        ),
    },
    "neurobrix.ops.rotary._rotary_kernel": {
        "offs_h": Allow(("rotary.heads",), "a head of one token times the head stride: within one token's row")
    },
    "neurobrix.ops.rotary._rotate_heads": {
        "offs_h": Allow(("rotary.heads",), "a head of one token times the head stride: within one token's row")
    },
    "neurobrix.ops.linear._merge_if_last": {
        "k": Allow(
            ("gemv.partials", "skinny.partials", "tma_split.partials"),
            "a split of the fp32 partials [SPLIT_K, M, N]: k x M x N, where a variant splits K",
        )
    },
    "neurobrix.ops.linear._linear_split_merge_kernel": {
        "k": Allow(("gemv.split_rows", "skinny.split_rows"), "a split of the partials: k x M below SPLIT_K x M")
    },
    "neurobrix.ops.linear._linear_gemv_kernel": {
        "pid_k": Allow(("gemv.k_slices", "gemv.split_rows"), "a K slice: pid_k x k_per_split, pid_k x M"),
        "M * N": Allow(("gemv.partials",), "one split's partials, M x N, where gemv splits K"),
    },
    "neurobrix.ops.linear._linear_skinny_kernel": {
        "pid_k": Allow(("skinny.k_slices", "skinny.split_rows"), "a K slice: pid_k x k_slice, pid_k x M"),
        "M * N": Allow(("skinny.partials",), "one split's partials, M x N, where skinny splits K"),
    },
    "neurobrix.ops.linear._linear_tma_kernel": {
        "num_pid_m": Allow(("tma.units",), "row blocks times column blocks: the walk's tiles")
    },
    "neurobrix.ops.linear._linear_tma_split_kernel": {
        "num_pid_m": Allow(("tma_split.units",), "row blocks x column blocks x SPLIT_K: the walk's units"),
        "M * N": Allow(("tma_split.partials",), "one split's partials, M x N, where split tiles are offered"),
        "unit % SPLIT_K * M * N": Allow(("tma_split.partials",), "a slice's partials, slice x M x N"),
    },
}
LIMIT = 1 << 31  # an int32 offset wraps here


class Layout(NamedTuple):
    """A tensor an allowed operand walks, laid out as the bounds assume (``layout_problems`` holds each launch to it):
    its ``walked`` axis (the stride the operand multiplies) inside its ``outer`` one, the walked axis's size times
    its stride at most the outer stride (a sequence's positions inside its batch slot, a token's heads inside its
    position: no batch or sequence folded into the walked stride), and, with ``row``, the walked stride at most
    ``row`` of the ``inner`` axis's strides (a position at most one fused projection's heads: ``row`` of the
    launch's arguments). ``axes``: the tensor's (outer, walked) axes."""

    pointer: str
    outer: str
    walked: str
    inner: str | None
    axes: tuple[int, int]
    row: Callable[[Mapping[str, Any]], int] | None = None


def _fused_row(a: Mapping[str, Any]) -> int:
    return a["HQ"] + 2 * (a["HQ"] // a["G"])  # q's, k's and v's heads of one position of the fused projection


def _flash(x: str) -> Layout:
    return Layout(f"{x}_ptr", f"stride_{x}b", f"stride_{x}s", f"stride_{x}h", (0, 1), _fused_row)


def _cache(x: str) -> Layout:
    return Layout(f"{x}_ptr", f"stride_{x}b", f"stride_{x}s", f"stride_{x}h", (0, 1), lambda a: a["HKV"])


def _heads(pointer: str, strides: str) -> Layout:
    return Layout(pointer, f"stride_{strides}s", f"stride_{strides}h", None, (1, 2))


# the layouts the bounds of NARROW_OFFSETS assume, by kernel: flash's positions x position strides (bound by the
# fused projection's row), decode's cache positions x the cache's position stride (a cache position's row), rotary's
# heads x head strides (within one token's row)
LAYOUTS: dict[str, tuple[Layout, ...]] = {
    "neurobrix.ops.attention._attention_flash_kernel": tuple(_flash(x) for x in "qkvo"),
    "neurobrix.ops.attention._attention_decode_split_kernel": (_cache("k"), _cache("v")),
    "neurobrix.ops.rotary._rotary_kernel": tuple(_heads(f"{x}_ptr", x) for x in ("q", "k", "qo", "ko", "v", "vc")),
}


def layout_problems(where: str, arguments: Mapping[str, Any]) -> list[str]:
    """How one launch of ``where`` (module.function) lays out the tensors ``LAYOUTS`` names for it, from its bound
    arguments (parameter name -> the tensor or the value passed): each a sentence where the layout is not the one the
    allowance's bound assumes. A launcher that passes a transposed, sliced or batch-folded tensor computes the same
    values on the interpreter's shapes and wraps on a GPU past the bound it was allowed under; the lint reads the
    kernel, the bounds the catalogue, and neither sees a launcher's strides."""
    problems = []
    for layout in LAYOUTS.get(where, ()):
        tensor = arguments.get(layout.pointer)
        shape = getattr(tensor, "shape", None)
        if shape is None or any(n not in arguments for n in (layout.outer, layout.walked)):
            continue
        outer, walked = int(arguments[layout.outer]), int(arguments[layout.walked])
        sizes = (shape[layout.axes[0]], shape[layout.axes[1]])
        if sizes[1] < 2:
            continue  # one step: the walked stride multiplies nothing but 0
        if sizes[0] > 1 and outer != 0 and sizes[1] * walked > abs(outer):
            problems.append(
                f"{where} walks {layout.pointer}'s axis {layout.axes[1]} ({sizes[1]} x stride {walked}) past its "
                f"axis {layout.axes[0]}'s stride {outer}: the launcher passes a layout whose walked stride folds in "
                "an outer axis (a transposed or batch-folded tensor), which the allowance's bound "
                "(conformance.offsets.NARROW_OFFSETS) does not assume: the offset may wrap past 2^31 on a GPU"
            )
        elif layout.row is not None and layout.inner is not None and layout.inner in arguments:
            row, inner = layout.row(arguments), int(arguments[layout.inner])
            if walked > row * max(inner, 1):
                problems.append(
                    f"{where} walks {layout.pointer}'s axis {layout.axes[1]} by stride {walked}, past {row} of its "
                    f"inner stride {inner}: the launcher passes a layout (a sliced or padded tensor) wider than the "
                    "row the allowance's bound assumes (conformance.offsets.NARROW_OFFSETS): the offset may wrap "
                    "past 2^31 on a GPU"
                )
    return problems


def bounds(domains: Mapping[str, Iterable[Any]], models: Iterable[Any], specs: Mapping[str, Any]) -> dict[str, int]:
    """The largest value each allowance's product reaches, in elements: over the catalogue's domains (``domains``:
    kernel -> its (kernel, ((dim, lo, hi), ...)) domains, ``catalogue.required_domains``), the models' layouts
    (``models``: their ``ModelConfig``; the fused qkv projection's and the KV cache's position strides) and each
    domain's candidate space (``specs``: kernel -> OpSpec, whose ``candidates`` certify tries on a GPU). Each is
    computed as the launcher sizes what it multiplies: a domain's top for each dimension, the setting's splits and
    blocks. A domain without a top (unbounded) counts as 2^31."""
    models = list(models)
    qkv_row = max(((m.num_heads + 2 * m.num_kv_heads) * m.head_dim for m in models), default=0)
    cache_row = max((m.num_kv_heads * m.head_dim for m in models), default=0)
    kv_heads = max((m.num_kv_heads for m in models), default=0)
    found: dict[str, int] = {}

    def note(name: str, value: int) -> None:
        found[name] = max(found.get(name, 0), value)

    def spans(kernel: str):
        for _, ranges in domains.get(kernel, ()):
            domain = {dim: (lo, hi) for dim, lo, hi in ranges}
            tops = {dim: LIMIT if hi is None else hi for dim, (lo, hi) in domain.items()}
            yield domain, tops, specs[kernel].candidates(domain, False) if kernel in specs else []

    for kernel in ("attention_prefill", "attention_chunk"):
        for _, tops, _ in spans(kernel):
            note("flash.positions", tops["S"] * qkv_row)
    for _, tops, settings in spans("attention_decode"):
        note("decode.positions", tops["S"] * cache_row)
        note("decode.lengths", tops["S"])  # a length loaded from lengths (int32 or int64) and narrowed to int32
        note("decode.group_heads", _pow2(tops["G"]) * kv_heads)
        for c in settings:
            splits, block = c["SPLITS"], c["BLOCK_N"]
            note("decode.split_start", splits * _cdiv(_cdiv(tops["S"], splits), block) * block)  # the launcher's chunk
            if splits > 1:
                note("decode.partial_rows", tops["B"] * tops["G"] * kv_heads * splits)
    for _, tops, _ in spans("rotary"):
        note("rotary.heads", tops["H"] * tops["D"])
    for _, tops, settings in spans("linear"):
        m, n, k = tops["M"], tops["N"], tops["K"]
        for c in settings:
            variant, split = c.get("variant"), c.get("SPLIT_K", 1)
            if variant in ("gemv", "skinny"):
                note(f"{variant}.k_slices", k + split * c["BLOCK_K"])
                if split > 1:
                    note(f"{variant}.split_rows", split * m)
                    note(f"{variant}.partials", split * m * n)
            elif variant in ("tma", "tma_split"):
                note(f"{variant}.units", _cdiv(m, c["BLOCK_M"]) * _cdiv(n, c["BLOCK_N"]) * split)
                if split > 1:
                    note(f"{variant}.partials", split * m * n)
    return found


def _pow2(value: int) -> int:
    return 1 << max(value - 1, 0).bit_length()


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def bound_problems(
    domains: Mapping[str, Iterable[Any]] | None = None,
    models: Iterable[Any] | None = None,
    specs: Mapping[str, Any] | None = None,
    modules: Iterable[str] | None = None,
    unreached: bool = True,
) -> list[str]:
    """Each ``NARROW_OFFSETS`` allowance whose bound reaches 2^31 elements (computed by ``bounds``; by default over
    the catalogue, its models and the ops' candidate spaces), or names a quantity nothing computes (an operand
    whose range no domain or setting offers: none is needed then; ``unreached`` False where ``domains`` are part of
    the catalogue's); ``modules`` keeps the allowances of those op modules only. A candidate space, a launcher's
    split or a catalogue model that widens what an allowed operand spans past 2^31 is refused here, before any
    certification runs on it."""
    if domains is None or models is None:
        from . import catalogue

        domains = catalogue.required_domains() if domains is None else domains
        models = catalogue.load()[0].values() if models is None else models
    if specs is None:
        from neurobrix.ops import SPECS

        specs = SPECS
    largest = bounds(domains, models, specs)
    everything: dict[str, int] | None = None  # over the whole catalogue: whether anything computes a quantity at all
    problems = []
    for where, names in NARROW_OFFSETS.items():
        if modules is not None and where.rpartition(".")[0] not in modules:
            continue
        for operand, allow in names.items():
            if not isinstance(allow, Allow) or not allow.bound:
                problems.append(f"{where}: the allowance of {operand} names no bound (offsets.Allow)")
                continue
            known = [largest[b] for b in allow.bound if b in largest]
            if not known and not unreached:  # part of the catalogue: unreached here, but computed over the whole?
                if everything is None:
                    from neurobrix.ops import SPECS as ALL_SPECS

                    from . import catalogue

                    # whether anything computes the quantity at all: over every op's own candidates, as ``specs``
                    # may name only the ops at hand or narrow their spaces
                    everything = bounds(catalogue.required_domains(), catalogue.load()[0].values(), ALL_SPECS)
                computed = any(b in everything for b in allow.bound)
            else:
                computed = bool(known)
            if not computed:
                problems.append(
                    f"{where}: the allowance of {operand} is bounded by {', '.join(allow.bound)}, which no domain or "
                    "candidate of the catalogue reaches: nothing is known of its range (a new kernel's quantity is "
                    "computed in conformance/offsets.py's bounds, from its domains and candidates as the launcher "
                    "sizes what it multiplies)"
                )
            elif known and max(known) >= LIMIT:
                value = max(known)
                which = next(b for b in allow.bound if largest.get(b) == value)
                problems.append(
                    f"{where} keeps {operand} in int32 ({allow.why}), but its bound {which} reaches {value:,} "
                    f"elements at the catalogue's largest shapes and candidates, past 2^31 = {LIMIT:,}: the offset "
                    "wraps on a GPU (widen it, or keep the candidate space, the launcher or the catalogue within it)"
                )
    return problems


def _join(a: str | None, b: str | None) -> str | None:
    """Two values one name may hold (an assignment each, a helper's call sites): int64 only if both are."""
    if a is None or b is None:
        return b if a is None else a
    for kind in (PTR, NARROW, WIDE):
        if kind in (a, b):
            return kind
    return CONST


def _combine(*kinds: str | None) -> str:
    """The kind of an arithmetic result: a pointer with a pointer operand, else int64 with an int64 operand (Triton
    promotes int32 with int64 to int64), else int32 with a value known only when it runs."""
    for kind in (PTR, WIDE, NARROW):
        if kind in kinds:
            return kind
    return CONST


def _jit_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(ast.unparse(d).startswith("triton.jit") for d in node.decorator_list)
    }


def _factor_text(node: ast.expr) -> str:
    """A product's operand as the allow-list names it: without a broadcast (``x[:, None]`` is ``x``)."""
    if isinstance(node, ast.Subscript):
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if all(isinstance(p, ast.Slice) or (isinstance(p, ast.Constant) and p.value is None) for p in parts):
            return _factor_text(node.value)
    return ast.unparse(node)


def _chain(node: ast.expr) -> list[ast.expr]:
    """The operands of a product a * b * c (nested multiplications flattened; a left shift a << b is a product of a
    and 2^b)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _chain(node.left) + _chain(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.LShift):  # the amount as the factor 1 << b
        amount = ast.BinOp(ast.Constant(1), ast.LShift(), node.right)
        amount.amount_of = node.right  # type: ignore[attr-defined]
        return _chain(node.left) + [amount]
    return [node]


def _cast(node: ast.Call) -> tuple[ast.expr, str] | None:
    """(the value, the dtype's source) of a cast: ``x.to(dtype)`` or ``tl.cast(x, dtype)``; else None."""
    if isinstance(node.func, ast.Attribute) and node.func.attr == "to" and node.args:
        return node.func.value, ast.unparse(node.args[0])
    if ast.unparse(node.func) == "tl.cast" and len(node.args) >= 2:
        return node.args[0], ast.unparse(node.args[1])
    dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)
    if ast.unparse(node.func) == "tl.cast" and node.args and dtype is not None:
        return node.args[0], ast.unparse(dtype)
    return None


def _is_product(node: ast.expr) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult | ast.LShift)


def _addressed(fn: ast.FunctionDef) -> set[str]:
    """The names an address passed to a load, a store or an atomic starts from (a pointer whatever its name): the
    left operand of each addition, both branches of a ``tl.where`` or a conditional expression, the elements of a
    tuple, and what a local name is assigned."""
    assigned: dict[str, list[ast.expr]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    for t, v in zip(target.elts, node.value.elts):
                        if isinstance(t, ast.Name):
                            assigned.setdefault(t.id, []).append(v)
    found: set[str] = set()

    def base(address: ast.expr | None) -> None:
        if isinstance(address, ast.BinOp):
            base(address.left)
        elif isinstance(address, ast.Subscript):
            base(address.value)
        elif isinstance(address, ast.IfExp):
            base(address.body), base(address.orelse)
        elif isinstance(address, ast.Tuple):
            for element in address.elts:
                base(element)
        elif isinstance(address, ast.Call) and ast.unparse(address.func) == "tl.where" and len(address.args) == 3:
            base(address.args[1]), base(address.args[2])
        elif isinstance(address, ast.Name) and address.id not in found:
            found.add(address.id)
            for value in assigned.get(address.id, []):
                base(value)

    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and ast.unparse(node.func).startswith(("tl.load", "tl.store", "tl.atomic_")):
            base(node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "pointer"), None))
    return found


def _returns(fn: ast.FunctionDef) -> list[ast.expr]:
    """What a helper returns (each ``return`` statement's value)."""
    return [node.value for node in ast.walk(fn) if isinstance(node, ast.Return) and node.value is not None]


def _shift(node: ast.expr) -> int | None:
    """A left shift's amount where it is a literal (``x << 20``), else None."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.LShift) and isinstance(node.right, ast.Constant):
        return node.right.value if isinstance(node.right.value, int) else None
    return None


class _Module:
    def __init__(self, name: str, source: str):
        self.name = name
        self.fns = _jit_functions(ast.parse(source))
        self.calls: dict[str, list[tuple[str, ast.Call]]] = {f: [] for f in self.fns}  # helper -> (caller, call)
        for caller, fn in self.fns.items():
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.fns:
                    self.calls[node.func.id].append((caller, node))
        self.addressed = {f: _addressed(fn) for f, fn in self.fns.items()}
        self.returns = {f: _returns(fn) for f, fn in self.fns.items()}
        self.env: dict[str, dict[str, str | None]] = {f: {} for f in self.fns}
        self.params: dict[str, dict[str, str | None]] = {f: {} for f in self.fns}
        self._infer()

    # --------------------------------------------------------------------------------------- int64 or not
    def _params(self, fn: str) -> list[ast.arg]:
        return self.fns[fn].args.args

    def _arg_of(self, call: ast.Call, fn: str, index: int) -> ast.expr | None:
        param = self._params(fn)[index].arg
        for kw in call.keywords:
            if kw.arg == param:
                return kw.value
        return call.args[index] if index < len(call.args) else None

    def _param_kinds(self, fn: str) -> dict[str, str | None]:
        """A function's parameters: a constexpr is a constant; a kernel's (launched from Python) a pointer when named
        one, else an int32 (Triton specialises an integer argument below 2^31 as int32); a helper's what every call
        passes."""
        found: dict[str, str | None] = {}
        for index, arg in enumerate(self._params(fn)):
            if arg.annotation is not None and "constexpr" in ast.unparse(arg.annotation):
                found[arg.arg] = CONST
            elif not self.calls[fn]:
                pointer = arg.arg.endswith(("_ptr", "_desc")) or arg.arg in self.addressed[fn]
                found[arg.arg] = PTR if pointer else NARROW
            else:
                kind = None
                for caller, call in self.calls[fn]:
                    value = self._arg_of(call, fn, index)
                    kind = _join(kind, CONST if value is None else self.kind(caller, value))
                found[arg.arg] = kind
        return found

    def kind(self, fn: str, node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant):
            return CONST
        if isinstance(node, ast.Name):
            env = self.env[fn]
            if node.id in env:
                return env[node.id]
            return self.params[fn].get(node.id, CONST)  # a global: a constant
        if isinstance(node, ast.Attribute):
            return self.kind(fn, node.value) if node.attr == "T" else CONST  # tl.int64, a dtype
        if isinstance(node, ast.BinOp):
            return _combine(self.kind(fn, node.left), self.kind(fn, node.right))
        if isinstance(node, ast.UnaryOp):
            return self.kind(fn, node.operand)
        if isinstance(node, ast.Subscript):
            chosen = self.element(fn, node)
            if chosen is not None:  # an element of a tuple
                return self._join_all(self.kind(f, e) for f, e in chosen)
            return self.kind(fn, node.value)
        if isinstance(node, ast.Tuple):
            return self._join_all(self.kind(fn, e) for e in node.elts)
        if isinstance(node, ast.IfExp):
            return _join(self.kind(fn, node.body), self.kind(fn, node.orelse))
        if isinstance(node, ast.Call):
            func = ast.unparse(node.func)
            cast = _cast(node)
            if cast is not None:  # x.to(dtype), tl.cast(x, dtype)
                return WIDE if cast[1] == "tl.int64" else NARROW
            if func in ("tl.cdiv", "tl.minimum", "tl.maximum"):
                return _combine(*(self.kind(fn, a) for a in node.args))
            if func == "tl.where" and len(node.args) == 3:
                return _combine(self.kind(fn, node.args[1]), self.kind(fn, node.args[2]))
            if (func in ("tl.sum", "tl.max", "tl.min") or func in WRAPPERS) and node.args:
                return self.kind(fn, node.args[0])
            if isinstance(node.func, ast.Name) and node.func.id in self.fns and self.returns[node.func.id]:
                helper = node.func.id  # what the helper returns (a pointer, an int64 offset, an int32 one)
                return self._join_all(self.kind(helper, r) for r in self.returns[helper])
            return NARROW  # a program id, an arange, a load (an index of an int32 tensor), a helper's result
        return NARROW

    @staticmethod
    def _join_all(kinds) -> str | None:
        found = None
        for kind in kinds:
            found = _join(found, kind)
        return found

    def elements(
        self, fn: str, node: ast.expr, seen: frozenset = frozenset()
    ) -> list[list[tuple[str, ast.expr]]] | None:
        """A tuple-valued expression's elements, each the (function, expression) pairs it may be: a tuple written
        out, a name assigned one, a helper's parameter every call passes one, what a helper returns; None where the
        value is not known to be a tuple."""
        key = (fn, id(node))
        if key in seen:
            return None
        seen = seen | {key}
        if isinstance(node, ast.Tuple):
            return [[(fn, e)] for e in node.elts]
        sources: list[tuple[str, ast.expr]] = []
        if isinstance(node, ast.Name):
            sources += [(fn, a.value) for name, a, how in self.assigned[fn] if name == node.id and how == "="]
            names = [a.arg for a in self._params(fn)]
            if node.id in names and self.calls[fn]:
                index = names.index(node.id)
                for caller, call in self.calls[fn]:
                    value = self._arg_of(call, fn, index)
                    if value is not None:
                        sources.append((caller, value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.fns:
            sources += [(node.func.id, r) for r in self.returns[node.func.id]]
        elif isinstance(node, ast.Subscript):
            chosen = self.element(fn, node, seen)
            sources += chosen or []
        found: list[list[tuple[str, ast.expr]]] | None = None
        for where, value in sources:
            inner = self.elements(where, value, seen)
            if inner is None:
                continue
            if found is None:
                found = [list(e) for e in inner]
            else:
                for i, alternatives in enumerate(inner[: len(found)]):
                    found[i] += alternatives
        return found

    def element(self, fn: str, node: ast.Subscript, seen: frozenset = frozenset()) -> list[tuple[str, ast.expr]] | None:
        """The (function, expression) pairs ``t[i]`` may be where t is a tuple: its element i where i is a literal,
        any of its elements where i is not (a constexpr, a ``tl.static_range`` counter); None where t is not known
        to be a tuple."""
        index = node.slice
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):  # t[-1]: the tree holds minus 1
            literal = index.operand
            if isinstance(literal, ast.Constant) and isinstance(literal.value, int):
                index = ast.Constant(-literal.value)
        if isinstance(index, ast.Slice | ast.Tuple) or (isinstance(index, ast.Constant) and index.value is None):
            return None  # a broadcast or a slice of a tensor, not a tuple's element
        found = self.elements(fn, node.value, seen)
        if found is None:
            return None
        if not (isinstance(index, ast.Constant) and isinstance(index.value, int)):
            return [pair for alternatives in found for pair in alternatives]  # whichever element it picks
        if not -len(found) <= index.value < len(found):
            return None
        return found[index.value]

    def mixed(self) -> list[tuple[str, str, tuple[str, ...], str]]:
        """Each element of a tuple picked by anything but a literal from a tuple holding both pointers and integers:
        which one reaches an address is not known from the source (the lint would read an offset as a pointer)."""
        found = []
        for fn, tree in self.fns.items():
            for node in ast.walk(tree):
                if not isinstance(node, ast.Subscript) or isinstance(node.slice, ast.Constant):
                    continue
                if isinstance(node.slice, ast.UnaryOp) and isinstance(node.slice.operand, ast.Constant):
                    continue  # t[-1], a literal (t[-W] is not)
                chosen = self.element(fn, node)
                if chosen is None or isinstance(node.slice, ast.Slice | ast.Tuple):
                    continue
                kinds = {self.kind(f, e) for f, e in chosen}
                if PTR in kinds and kinds & {NARROW, WIDE}:
                    found.append((fn, ast.unparse(node), (), "mixed"))
        return found

    def _assignments(self, fn: str) -> list[tuple[str, ast.AST, str]]:
        """(name, the node assigning it, how: "=", "+=" or "for") of every local of a function."""
        found = []
        for node in ast.walk(self.fns[fn]):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found.append((target.id, node, "="))
                    elif isinstance(target, ast.Tuple):
                        found += [(t.id, node, "tuple") for t in target.elts if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                found.append((node.target.id, node, "const"))
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                found.append((node.target.id, node, "+="))
            elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
                found.append((node.target.id, node, "for"))
        return found

    def _assigned_kind(self, fn: str, node: ast.AST, how: str, name: str) -> str | None:
        if how == "const":
            return CONST
        if how == "=":
            return self.kind(fn, node.value)  # type: ignore[attr-defined]
        if how == "tuple":
            target, value = node.targets[0], node.value  # type: ignore[attr-defined]
            names = [ast.unparse(t) for t in target.elts]
            found = self.elements(fn, value)
            if found is not None and len(found) == len(names):
                return self._join_all(self.kind(f, e) for f, e in found[names.index(name)])
            return self.kind(fn, value)  # unresolved: whatever the value may hold
        if how == "+=":
            return _combine(self.env[fn].get(name), self.kind(fn, node.value))  # type: ignore[attr-defined]
        it = node.iter  # type: ignore[attr-defined]
        if isinstance(it, ast.Call) and ast.unparse(it.func) == "tl.static_range":
            return CONST
        bounds = [self.kind(fn, a) for a in it.args] if isinstance(it, ast.Call) else [NARROW]
        return WIDE if WIDE in bounds else NARROW  # a counter is a runtime int32 unless a bound is int64

    def _infer(self) -> None:
        assignments = self.assigned = {fn: self._assignments(fn) for fn in self.fns}
        for _ in range(50):  # to a fixed point (a few rounds: a loop-carried name, a helper's parameters)
            changed = False
            for fn in self.fns:
                fresh_params = self._param_kinds(fn)
                if fresh_params != self.params[fn]:
                    self.params[fn], changed = fresh_params, True
            for fn, found in assignments.items():
                fresh: dict[str, str | None] = {}
                for name, node, how in found:
                    fresh[name] = _join(fresh.get(name), self._assigned_kind(fn, node, how, name))
                if fresh != self.env[fn]:
                    self.env[fn], changed = fresh, True
            if not changed:
                return

    def launcher_parameters(self, fn: str, name: str, seen: frozenset = frozenset()) -> set[tuple[str, str]]:
        """(kernel, parameter) where a name of ``fn`` that is its parameter comes from a launcher: a kernel's own
        parameter, or a helper's, followed to what each call passes where that is its caller's parameter."""
        if (fn, name) in seen or name not in [a.arg for a in self._params(fn)]:
            return set()
        if not self.calls[fn]:
            return {(fn, name)}
        found: set[tuple[str, str]] = set()
        index = [a.arg for a in self._params(fn)].index(name)
        for caller, call in self.calls[fn]:
            value = self._arg_of(call, fn, index)
            if isinstance(value, ast.Name):
                found |= self.launcher_parameters(caller, value.id, seen | {(fn, name)})
        return found

    # ----------------------------------------------------------------------------------- what reaches an offset
    def findings(self) -> list[tuple[str, str, tuple[str, ...], str]]:
        """(function, the product or cast's source, its int32 operands, "product" or "cast") of each one that reaches
        a pointer offset in int32."""
        found: dict[tuple[str, str], tuple[str, str, tuple[str, ...], str]] = {}
        seen: set[tuple[str, str]] = set()
        work: list[tuple[str, ast.expr]] = []
        for fn, tree in self.fns.items():
            for node in ast.walk(tree):
                if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
                    left, right = self.kind(fn, node.left), self.kind(fn, node.right)
                    if (left == PTR) != (right == PTR):
                        work.append((fn, node.right if left == PTR else node.left))
                elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add | ast.Sub):
                    if self.kind(fn, node.target) == PTR:
                        work.append((fn, node.value))
        while work:
            fn, node = work.pop()
            self._scan(fn, node, work, seen, found)
        return sorted([*found.values(), *self.mixed()])

    def factor_kind(self, fn: str, node: ast.expr) -> str | None:
        """A product's operand's kind: a literal of 2^SCALE or more scales like a stride (an int32 size)."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.LShift) and isinstance(node.left, ast.Constant):
            if not isinstance(node.right, ast.Constant):
                return self.kind(fn, node.right)  # a shift by a run-time amount: a product; by a constexpr: a block
            node = ast.Constant(node.left.value << node.right.value)
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and node.value >= 1 << SCALE:
            return NARROW
        return self.kind(fn, node)

    def _wide_product(self, fn: str, node: ast.expr) -> bool:
        """An int64 value holding a product of two values known only when it runs (an index times a stride): cast
        to int32 it may have passed 2^31. (An index times a block size stays below the int32 size it walks.)"""
        if self.kind(fn, node) != WIDE:
            return False
        for sub in ast.walk(node):
            if _is_product(sub) and sum(self.factor_kind(fn, o) not in (CONST, None) for o in _chain(sub)) >= 2:
                return True
        return False

    def _loaded(self, fn: str, node: ast.expr, seen: frozenset = frozenset()) -> bool:
        """Whether a value is read from memory (a ``tl.load``, directly or through the names it is computed from):
        the tensor's dtype is not in the source, so an int64 tensor of element offsets (a block table, a slot
        mapping) narrowed to int32 may have held values past 2^31; a helper's result is what it returns, and a loop's
        counter is read from what it loops over (``for i in range(tl.load(n_ptr))``)."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and ast.unparse(sub.func) == "tl.load":
                return True
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in self.fns:
                helper = f"{sub.func.id}()"  # (the names seen are the caller's: only the helpers seen go on)
                inner = frozenset(s for s in seen if s.endswith("()")) | {helper}
                if helper not in seen and any(self._loaded(sub.func.id, r, inner) for r in self.returns[sub.func.id]):
                    return True
            if isinstance(sub, ast.Name) and sub.id not in seen:
                for name, assigned, how in self.assigned[fn]:
                    if name != sub.id:
                        continue
                    if how in ("=", "+="):  # its value, or what is added to it
                        value = assigned.value
                    elif how == "tuple":  # `slot, n = tl.load(...), 0`: its element, else the whole value
                        target, value = assigned.targets[0], assigned.value
                        if isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
                            value = value.elts[[ast.unparse(t) for t in target.elts].index(name)]
                    elif how == "for":  # a loop's counter: bounded by what it loops over
                        value = assigned.iter
                    else:
                        continue
                    if self._loaded(fn, value, seen | {sub.id}):
                        return True
        return False

    def _scan(self, fn, node, work, seen, found) -> None:
        if isinstance(node, ast.Name):
            if (fn, node.id) in seen:
                return
            seen.add((fn, node.id))
            names = [a.arg for a in self._params(fn)]
            if node.id in names and self.calls[fn]:  # a helper's parameter: what each call passes reaches it
                index = names.index(node.id)
                for caller, call in self.calls[fn]:
                    value = self._arg_of(call, fn, index)
                    if value is not None:
                        work.append((caller, value))
            for name, assigned, how in self.assigned[fn]:
                if name != node.id:
                    continue
                if how in ("=", "+="):
                    work.append((fn, assigned.value))
                elif how == "for" and isinstance(assigned.iter, ast.Call):
                    work += [(fn, a) for a in assigned.iter.args]
                elif how == "tuple":
                    target, value = assigned.targets[0], assigned.value
                    names = [ast.unparse(t) for t in target.elts]
                    found_elements = self.elements(fn, value)
                    if found_elements is not None and len(found_elements) == len(names):
                        work += found_elements[names.index(name)]
                    else:
                        work.append((fn, value))  # unresolved: every part of the value
            return
        if _is_product(node):
            operands = _chain(node)
            kinds = [self.factor_kind(fn, o) for o in operands]
            narrow = tuple(_factor_text(o) for o, k in zip(operands, kinds) if k == NARROW)
            if WIDE not in kinds and PTR not in kinds and len(narrow) >= 2:
                text = ast.unparse(node)
                found.setdefault((fn, text), (fn, text, narrow, "product"))
            elif WIDE in kinds:  # a * b * c64 is (a * b) * c64: a * b in int32 first, widened only after
                operands = [node.left, node.right]
            for o in operands:
                self._scan(fn, getattr(o, "amount_of", o), work, seen, found)
            return
        if isinstance(node, ast.BinOp):
            self._scan(fn, node.left, work, seen, found)
            self._scan(fn, node.right, work, seen, found)
        elif isinstance(node, ast.UnaryOp):
            self._scan(fn, node.operand, work, seen, found)
        elif isinstance(node, ast.Subscript):
            chosen = self.element(fn, node)
            if chosen is not None:  # an element of a tuple: what it may be, where it was written
                work += chosen
            else:
                self._scan(fn, node.value, work, seen, found)
        elif isinstance(node, ast.Tuple):
            for element in node.elts:
                self._scan(fn, element, work, seen, found)
        elif isinstance(node, ast.IfExp):
            self._scan(fn, node.body, work, seen, found)
            self._scan(fn, node.orelse, work, seen, found)
        elif isinstance(node, ast.Call):
            func = ast.unparse(node.func)
            cast = _cast(node)
            if cast is not None:  # x.to(dtype), tl.cast(x, dtype)
                inner, dtype = cast
                if dtype in NARROWING and self._wide_product(fn, inner):
                    text = ast.unparse(node)
                    found.setdefault((fn, text), (fn, text, (_factor_text(inner),), "cast"))
                elif dtype in NARROWING and self._loaded(fn, inner):
                    text = ast.unparse(node)
                    found.setdefault((fn, text), (fn, text, (_factor_text(inner),), "loaded"))
                self._scan(fn, inner, work, seen, found)
            elif func == "tl.where" and len(node.args) == 3:
                self._scan(fn, node.args[1], work, seen, found)
                self._scan(fn, node.args[2], work, seen, found)
            elif isinstance(node.func, ast.Name) and node.func.id in self.fns:  # what the helper returns
                work += [(node.func.id, r) for r in self.returns[node.func.id]]
            elif func in WRAPPERS and node.args:  # a hint or a new shape: the offset passes through whole
                self._scan(fn, node.args[0], work, seen, found)
            elif func not in OPAQUE:  # tl.cdiv, tl.minimum, any other call: whatever its arguments carry
                if isinstance(node.func, ast.Attribute) and not func.startswith("tl."):
                    self._scan(fn, node.func.value, work, seen, found)  # a method of a value (x.reshape(...))
                for a in [*node.args, *(k.value for k in node.keywords)]:
                    self._scan(fn, a, work, seen, found)


def findings(module_name: str, source: str) -> list[tuple[str, str, tuple[str, ...], str]]:
    """Every product (or int32 cast of an int64 value) reaching a pointer offset in int32 in a module's Triton
    functions, allowed or not: (module.function, its source, its int32 operands, "product" or "cast"; "mixed" for a
    tuple's element picked by a non-literal index from pointers and integers)."""
    module = _Module(module_name, source)
    return [(f"{module_name}.{fn}", text, narrow, how) for fn, text, narrow, how in module.findings()]


def unheld_strides(module_name: str, source: str) -> list[tuple[str, str, str]]:
    """(module.function, the allowed product, the kernel.parameter) of each stride an allowed product multiplies that
    a launcher passes (a kernel's parameter named ``stride_*``, followed through the helpers' parameters it is passed
    as) and ``LAYOUTS`` does not hold to a layout: the allowance's bound would rest on a layout no launch is held to."""
    module = _Module(module_name, source)
    return _unheld(module_name, module, module.findings())


def _unheld(module_name: str, module: _Module, found_here: list) -> list[tuple[str, str, str]]:
    held = {(where, layout.walked) for where, layouts in LAYOUTS.items() for layout in layouts}
    found = []
    for fn, text, narrow, how in found_here:
        where = f"{module_name}.{fn}"
        if not allowed(where, text, narrow, how):
            continue
        for operand in narrow:
            for kernel, param in sorted(module.launcher_parameters(fn, operand)):
                if param.startswith("stride_") and (f"{module_name}.{kernel}", param) not in held:
                    found.append((where, text, f"{module_name}.{kernel}.{param}"))
    return found


def allowed(where: str, text: str, narrow: tuple[str, ...], how: str) -> bool:
    """Whether ``NARROW_OFFSETS`` lets a finding stay narrow: the whole product named, or all its int32 operands but
    one (the stride or size it multiplies). A cast of an int64 value to int32 is never allowed."""
    names = NARROW_OFFSETS.get(where, {})
    if how == "loaded":  # a loaded value narrowed: only where the tensor it is read from is named with its bound
        return text in names or _loaded_from(narrow[0]) in names
    if how != "product":
        return False
    return text in names or sum(n not in names for n in narrow) <= 1


def _loaded_from(text: str) -> str | None:
    """The pointer a loaded value is read from (``len_ptr`` of ``tl.load(len_ptr + b)``): what the values' bound is a
    property of, whichever element is read."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and ast.unparse(sub.func) == "tl.load" and sub.args:
            address = sub.args[0]
            while isinstance(address, ast.BinOp | ast.Subscript):
                address = address.left if isinstance(address, ast.BinOp) else address.value
            return address.id if isinstance(address, ast.Name) else None
    return None


def narrow_offsets(module_name: str, source: str) -> list[str]:
    """The int32 offsets of a module's Triton functions that ``NARROW_OFFSETS`` does not allow, each a sentence; and
    each allowed one that multiplies a launcher's stride no ``LAYOUTS`` entry holds (``unheld_strides``)."""
    module = _Module(module_name, source)
    found = module.findings()
    problems = [
        f"{where} keeps {text} in int32 under its allowance, multiplying {stride}, which a launcher passes: its bound "
        "assumes a layout (a position within one row, a head within one token), but conformance.offsets.LAYOUTS "
        "holds no launch to it (name the tensor's Layout there)"
        for where, text, stride in _unheld(module_name, module, found)
    ]
    for where, text, narrow, how in [(f"{module_name}.{fn}", text, narrow, how) for fn, text, narrow, how in found]:
        if allowed(where, text, narrow, how):
            continue
        if how == "cast":
            problems.append(
                f"{where} casts {narrow[0]} to int32 ({text}) on the way to a pointer offset: past 2^31 elements the "
                "offset wraps on a GPU (the interpreter's shapes never reach it)"
            )
        elif how == "loaded":
            problems.append(
                f"{where} narrows {narrow[0]} to int32 ({text}) on the way to a pointer offset: the tensor it is "
                "read from may hold int64 values (element offsets, a block table) past 2^31, which the cast wraps "
                "on a GPU (keep it int64, or name the pointer it is loaded from in conformance.offsets.NARROW_OFFSETS "
                "with the bound of the values it holds)"
            )
        elif how == "mixed":
            problems.append(
                f"{where} picks {text} from a tuple of pointers and integers by an index that is not a literal: "
                "whether an offset or a pointer reaches the address is not known from the source, so its offsets "
                "cannot be read (index it by a literal, or keep pointers and offsets in tuples of their own)"
            )
        else:
            problems.append(
                f"{where} computes {text} in int32 ({', '.join(narrow)} not widened) on the way to a pointer offset: "
                "past 2^31 elements it wraps on a GPU (the interpreter's shapes never reach it); widen an operand "
                "(.to(tl.int64)) or name the narrow one in conformance.offsets.NARROW_OFFSETS with its bound "
                "(offsets.Allow: a quantity conformance.offsets.bounds computes, which certify's plan keeps below 2^31)"
            )
    return problems
