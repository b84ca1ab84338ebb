"""Two things about a kernel module's Triton functions that the interpreter's examples cannot be trusted to show,
read from the source: a reduction over a padded tail whose masked lanes hold a value other than the reduction's
neutral one, and a running value (an accumulator, a running maximum or sum) started in a dtype other than fp32.

A masked load fills the lanes past a tensor's end with ``other=``; reduced directly (``tl.max(m)`` of ``m =
tl.load(..., mask=..., other=0.0)``), a fill that is not the reduction's neutral value (-inf for a maximum, +inf
for a minimum, 0 for a sum) enters the result wherever a block is wider than what it covers. Such a bug can hide
behind an identity: the decode merge's maxima padded with 0 instead of -inf leave every split's share 2^(m_c - max)
exact up to a common factor that cancels in the ratio, so the output is the same bit for bit unless every split's
maximum lies below about -126 (the shares then underflow, 0 / 0), scores no draw reaches (and only where the merge
is padded, at a split count that is not a power of two). A reduction of anything else is judged by what its padded
lanes hold (``_Flow``): the fill followed through elementwise arithmetic, casts, ``tl.exp2`` and ``tl.maximum``, a
``tl.where`` whose condition is a load's mask (false there), and every assignment that may reach the reduction (a name
assigned twice, in an ``if``, round a loop): ``tl.sum(h * h)`` over a tail filled with 1 holds 1, ``tl.max(x - m)``
over a tail filled with 0 a finite value, ``tl.sum(tl.exp2(x - m))`` a nonzero one, where the neutral fills give 0,
-inf and 2^-inf = 0. A fill that meets a 0 (x's fill times a weight, a padded split's 2^-inf) is neutralised; a value
no masked load reaches is not judged. A reduction's lanes are read along its axis (``x[None, :]`` reads x's axis 0 as
its axis 1; a mask along another axis is true there); ``tl.dot`` is followed (a padded row or column times the other
operand's data) and judged as a sum over K (a K lane padded in both operands must hold a product of 0: not 1 x 1, not
0 x NaN); a helper's result is followed into the helper, each parameter standing for the caller's argument, and a
helper's own reductions are read once more for each call of it so (the flash kernel's q, reduced in ``_flash_block``);
an operand of lower rank is read at the axis it lies along (Triton broadcasts a 1-D value along the last axis), and a
mask constant along an axis (``rows[:, None] < M`` along the columns, or a name holding it) is true there; a value
reached past an assignment in the body of an ``if`` is read where that test is false (``if DIAGONAL:`` read twice), past
one in its ``else`` where it is true, past one under several ``if``s where one of their branches is not taken; and an
assignment no masked lane reaches holds data, not a fill's value (a K tail whose products are all 0 pads no lane).

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


# a finite fill at or past this magnitude stands for the infinity of its sign (``-1e30``, a common spelling of -inf
# that keeps ``x - max`` finite where every lane is padded)
SENTINEL = 1e30
# what a padded lane may hold, as the source lets it be read: a number, ``FINITE`` (some finite value), ``NONZERO``
# (some finite value other than 0), a condition's ``TRUE`` or ``FALSE``, or None (not known)
FINITE, NONZERO, TRUE, FALSE = "finite", "nonzero", "true", "false"
# the lane a value is read at: padded along one axis (an int), padded along whichever axis (None), or inside every
# axis (INSIDE: a mask is true there, a load reads the tensor); and the mark of ``if`` branches taken as not all
# taken (past a later assignment under them: one if's body, its test false; its else, true; several, one not taken)
INSIDE, ASSUMED = "inside", "assumed not all taken"


def _flip(atom):
    return -atom if isinstance(atom, float) else {TRUE: FALSE, FALSE: TRUE}.get(atom, atom)


def _nan(*atoms) -> bool:
    return any(isinstance(x, float) and math.isnan(x) for x in atoms)


def _add(a, b):
    if _nan(a, b):
        return math.nan  # NaN plus anything
    if isinstance(a, float) and isinstance(b, float):
        return a + b  # (inf - inf is NaN)
    if a in (TRUE, FALSE) or b in (TRUE, FALSE):
        return None
    for x in (a, b):
        if isinstance(x, float) and abs(x) >= SENTINEL:
            return x  # an infinity (or its sentinel) plus a finite value
    return None if a is None and b is None else FINITE


def _mul(a, b):
    if _nan(a, b):
        return math.nan  # NaN times anything, 0 included
    if isinstance(a, float) and isinstance(b, float):
        return a * b  # (0 x inf is NaN)
    if a in (TRUE, FALSE) or b in (TRUE, FALSE):
        return None
    for x in (a, b):  # (two numbers are multiplied above)
        if x == 0.0 and isinstance(x, float):
            return 0.0  # 0 times a finite value
        if isinstance(x, float) and math.isinf(x):
            return None  # an infinity times a value of unknown sign (or 0)
    if a is None and b is None:
        return None
    nonzero = all(x == NONZERO or (isinstance(x, float) and x != 0.0) for x in (a, b))
    return NONZERO if nonzero else FINITE


def _div(a, b):
    if _nan(a, b):
        return math.nan
    if isinstance(a, float) and isinstance(b, float):
        return None if b == 0.0 or math.isnan(a / b) else a / b
    if b == NONZERO or (isinstance(b, float) and b != 0.0 and not math.isinf(b)):
        if a == 0.0 and isinstance(a, float):
            return 0.0
        if a == NONZERO or (isinstance(a, float) and not math.isinf(a)):
            return NONZERO
        if a == FINITE:
            return FINITE
    return None


def _exp(a, base):
    if isinstance(a, float):
        try:
            return base**a if a != -math.inf else 0.0
        except OverflowError:
            return math.inf
    return NONZERO if a in (FINITE, NONZERO) else None


def _extreme(a, b, pick):
    """``tl.maximum`` (pick = max) or ``tl.minimum`` of two lanes' values."""
    if _nan(a, b):
        return None  # which one a NaN meets is left to the target
    if isinstance(a, float) and isinstance(b, float):
        return pick(a, b)
    for x, y in ((a, b), (b, a)):
        if isinstance(x, float) and math.isinf(x):
            return x if pick(x, 0.0) == x else y  # the absorbing infinity, or the other value
    if a in (TRUE, FALSE) or b in (TRUE, FALSE) or (a is None and b is None):
        return None
    return FINITE


def _where(cond, a, b):
    if cond == TRUE:
        return a
    if cond == FALSE:
        return b
    return a if a == b else None


def _compare(op: ast.cmpop, a, b):
    if not (isinstance(a, float) and isinstance(b, float)):
        return None
    ops = {ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b, ast.Eq: a == b, ast.NotEq: a != b}
    return None if type(op) not in ops else TRUE if ops[type(op)] else FALSE


def _conjunction(a, b, op: ast.operator):
    if isinstance(op, ast.BitAnd):
        return FALSE if FALSE in (a, b) else TRUE if a == b == TRUE else None
    if isinstance(op, ast.BitOr):
        return TRUE if TRUE in (a, b) else FALSE if a == b == FALSE else None
    return None


def _through(node: ast.Subscript, axis):
    """The axis of ``node.value`` that a lane of ``node`` padded along ``axis`` is padded along: ``x[:, None]``
    keeps axis 0 and reads x inside along axis 1 (a broadcast), ``x[None, :]`` reads x's axis 0 as its axis 1; any
    other subscript keeps the axis as it is."""
    if axis is None or axis == INSIDE:
        return axis
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    whole = [isinstance(p, ast.Slice) and p.lower is None and p.upper is None and p.step is None for p in parts]
    broadcast = [isinstance(p, ast.Constant) and p.value is None for p in parts]
    if not all(w or n for w, n in zip(whole, broadcast, strict=True)) or axis >= len(parts):
        return axis
    return INSIDE if broadcast[axis] else sum(whole[:axis])


def _sum_of(*terms):
    """What a sum of many terms holds where each group's terms all hold one value (a dot's terms inside K, and
    those of its padded K lanes)."""
    if _nan(*terms):
        return math.nan
    if all(x == 0.0 and isinstance(x, float) for x in terms):
        return 0.0
    if None in terms:
        return None
    return FINITE


class _Flow:
    """What a padded lane holds in each value of one Triton function: a masked load's lane holds its fill, a lane of
    a load's mask (or of one of its conjuncts) is false, and the rest follows through elementwise arithmetic, casts,
    ``tl.where``, ``tl.exp``/``tl.exp2``, ``tl.maximum``/``tl.minimum`` and ``tl.zeros``/``tl.full``. A name takes
    every assignment that may reach its use (the last before it, those before that while the later ones are inside
    an ``if`` or a loop the use is not in, and those later in a loop around the use; one reached past a later one in
    the body of an ``if`` is read where that test is false); a helper's result is read in the helper (``_result``),
    ``tl.dot`` as a sum over K (``_dot``), each lane along the axis it is padded on (``axis``: an int, None for any,
    INSIDE for none); a value the function receives (outside a helper's call) or loops over is not known, and counts
    as finite where it meets a known value, but an assignment no masked lane reaches holds data (its "finite" is
    not a fill's). An operand of lower rank is read at the axis it lies along (``_axes``), a mask constant along an
    axis is true there (``_varies``). A reduction of a value reaching a masked load is judged by every value its
    padded lanes may hold."""

    def __init__(
        self,
        fn: ast.FunctionDef,
        helpers: dict[str, ast.FunctionDef] | None = None,
        depth: int = 0,
        called: frozenset[str] = frozenset(),
    ):
        self.fn = fn
        # a function no Triton function of the module calls is a kernel: its parameters are scalars (pointers,
        # sizes, constexprs); a helper's are whatever its caller passes (a tile, a mask), unknown unless bound
        self.kernel = fn.name not in called
        self.called = called
        self.params = {a.arg for a in fn.args.args}
        self.ranks: dict[int, int | None] = {}
        self.dumps: dict[int, str] = {}
        self.helpers = helpers or {}  # the module's Triton functions, whose results a call is followed to
        self.depth = depth
        self.flows: dict[str, _Flow] = {}
        self.bound: dict[str, tuple] = {}  # while read for a call: each parameter's argument, in the caller
        self.parents: dict[ast.AST, ast.AST] = {}
        for parent in ast.walk(fn):
            for child in ast.iter_child_nodes(parent):
                self.parents[child] = parent
        self.defs: dict[str, list[tuple[ast.stmt, ast.expr | None]]] = {}
        self.masks: set[str] = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._bind(node, target, node.value)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                self._bind(node, node.target, ast.BinOp(ast.Name(node.target.id, ast.Load()), node.op, node.value))
            elif isinstance(node, ast.For):
                self._bind(node, node.target, None)
            elif isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.load":
                mask = next((k.value for k in node.keywords if k.arg == "mask"), None)
                if mask is None and len(node.args) > 1:
                    mask = node.args[1]
                self._conjuncts(mask)
        self.touched = False

    def _dump(self, node: ast.AST) -> str:
        key = id(node)
        if key not in self.dumps:
            self.dumps[key] = ast.dump(node)
        return self.dumps[key]

    def _bind(self, stmt: ast.stmt, target: ast.expr, value: ast.expr | None) -> None:
        if isinstance(target, ast.Name):
            self.defs.setdefault(target.id, []).append((stmt, value))
        elif isinstance(target, ast.Tuple | ast.List):
            spelt = isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts)
            helped = isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in self.helpers
            for i, element in enumerate(target.elts):
                # a helper's tuple: element i of what it returns (``m, l, acc = _block(...)``)
                part = ast.Subscript(value, ast.Constant(i), ast.Load()) if helped else None
                self._bind(stmt, element, value.elts[i] if spelt else part)

    def _conjuncts(self, mask: ast.expr | None) -> None:
        """A mask and each conjunct of it (``a[:, None] & b[None, :]``): false at a padded lane."""
        while isinstance(mask, ast.Subscript):
            mask = mask.value
        if mask is None:
            return
        self.masks.add(self._dump(mask))
        if isinstance(mask, ast.BinOp) and isinstance(mask.op, ast.BitAnd):
            self._conjuncts(mask.left)
            self._conjuncts(mask.right)

    def _inside(self, node: ast.AST, outer: ast.AST) -> bool:
        while node is not None and node is not outer:
            node = self.parents.get(node)
        return node is outer

    def _branches(self, stmt: ast.stmt) -> frozenset:
        """The branches of ``if`` statements ``stmt`` is reached through: (the test, "body" or "orelse") each."""
        found = set()
        node: ast.AST | None = stmt
        while node is not None and node is not self.fn:
            parent = self.parents.get(node)
            if isinstance(parent, ast.If):
                found.add((self._dump(parent.test), "body" if node in parent.body else "orelse"))
            node = parent
        return frozenset(found)

    def _excluded(self, stmt: ast.stmt, seen: frozenset) -> bool:
        """Whether ``stmt`` is reached only through branches the walk has taken as not all taken: past a later
        assignment under one ``if``'s body its test is false, under its ``else`` true, under several ``if``s at
        least one of their branches is not taken (an earlier assignment needing every one of them is not reached)."""
        taken = None
        for item in seen:
            if item[0] != ASSUMED:
                continue
            taken = self._branches(stmt) if taken is None else taken
            if item[1] <= taken:
                return True
        return False

    def _reaching(self, name: str, at: ast.stmt, seen: frozenset = frozenset()) -> list[tuple]:
        """The assignments of ``name`` that may reach ``at``, each with the branches taken as not all taken on the
        way: an earlier one reached past a later one in the body of an ``if`` is reached where that test is false
        (the same test read again, ``if DIAGONAL:`` twice, is then false there too), past one in its ``else`` where
        it is true, past one under several ``if``s where one of their branches is not taken; an earlier one that
        needs every branch so skipped is not reached."""
        defs = [d for d in self.defs.get(name, []) if not self._excluded(d[0], seen)]
        where = (at.lineno, at.col_offset)
        found = []
        loop = self.parents.get(at)
        while loop is not None and loop is not self.fn:  # a value carried round a loop the use is in
            if isinstance(loop, ast.For | ast.While):
                found += [
                    (*d, frozenset())
                    for d in defs
                    if (d[0].lineno, d[0].col_offset) >= where and self._inside(d[0], loop)
                ]
            loop = self.parents.get(loop)
        assumed: frozenset = frozenset()
        for stmt, value in sorted(
            (d for d in defs if (d[0].lineno, d[0].col_offset) < where), key=lambda d: (d[0].lineno, d[0].col_offset)
        )[::-1]:
            if assumed and self._excluded(stmt, assumed):
                continue  # under branches the walk past a later assignment has taken as not all taken
            found.append((stmt, value, assumed))
            node, block = stmt, self.parents.get(stmt)
            guards = []  # the blocks that may skip it: (block, the child of it on the way)
            while block is not None and block is not self.fn:
                if isinstance(block, ast.If | ast.For | ast.While) and not self._inside(at, block):
                    guards.append((block, node))
                node, block = block, self.parents.get(block)
            if not guards:
                break
            if all(isinstance(block, ast.If) for block, _ in guards):  # skipped where one of its branches is not
                assumed = assumed | {  # taken (one if's body: its test is false there; its else: true there)
                    (ASSUMED, frozenset((self._dump(b.test), "body" if c in b.body else "orelse") for b, c in guards))
                }
        return found

    def _statement(self, node: ast.AST) -> ast.stmt:
        while not isinstance(node, ast.stmt):
            node = self.parents[node]
        return node

    def values(self, node: ast.expr, at: ast.stmt, seen: frozenset = frozenset(), axis=None) -> set:
        """Every value a lane of ``node`` (read at statement ``at``) may hold: a lane padded along ``axis`` of the
        value's own shape (inside on its other axes), along whichever axis (None), or inside every axis (INSIDE)."""
        if self._dump(node) in self.masks:
            if axis == INSIDE:
                return {TRUE}
            conjunction = isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd)
            if axis is not None and not conjunction:
                rank = self._rank(node)
                if rank is not None and axis < rank and not self._varies(node, axis):
                    return {TRUE}  # constant along this axis (``rows[:, None] < M`` along the columns): true there
            if not conjunction or axis is None:
                self.touched = True  # a lane this mask is false on is padded
                return {FALSE}
            # a conjunction of masks along different axes: false where one of them is
        if isinstance(node, ast.Name):
            defs = self._reaching(node.id, at, seen)
            if not defs and node.id in self.bound:  # a parameter, while the helper is read for a call
                caller, argument, where, their = self.bound[node.id]
                held, caller.touched = caller.touched, False
                try:
                    return caller.values(argument, where, their, axis)
                finally:
                    self.touched = self.touched or caller.touched  # the caller's masked load reaches it
                    caller.touched = held or caller.touched
            if not defs:
                return {None}
            out: set = set()
            for stmt, value, assumed in defs:
                if (node.id, id(stmt)) in seen:
                    continue  # its value round the loop: the value it starts from is read already
                if value is None:
                    out.add(None)
                    continue
                held, self.touched = self.touched, False
                found = self.values(value, stmt, seen | assumed | {(node.id, id(stmt))}, axis)
                if not self.touched:  # no masked lane reaches this assignment: its lanes hold data, not a fill's
                    found = {None if a in (FINITE, NONZERO) else a for a in found}  # (some finite value of it)
                self.touched = held or self.touched
                out |= found
            return out
        literal = _literal(node)
        if literal is not None:
            return {literal}
        if isinstance(node, ast.Subscript):
            if self._helped(node.value) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
                return self._result(node.value, node.slice.value, at, seen, axis)
            return self.values(node.value, at, seen, _through(node, axis))
        if isinstance(node, ast.UnaryOp):
            inner = self.values(node.operand, at, seen, axis)
            return {_flip(a) for a in inner} if isinstance(node.op, ast.USub | ast.Not | ast.Invert) else inner
        if isinstance(node, ast.BinOp):
            return self._pairs(node.left, node.right, at, seen, node.op, axis)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            ax = self._axes((node.left, node.comparators[0]), axis)
            left, right = self.values(node.left, at, seen, ax[0]), self.values(node.comparators[0], at, seen, ax[1])
            return {_compare(node.ops[0], a, b) for a in left for b in right}
        if isinstance(node, ast.IfExp):
            return self.values(node.body, at, seen, axis) | self.values(node.orelse, at, seen, axis)
        if not isinstance(node, ast.Call):
            return {None}
        func = ast.unparse(node.func)
        args = node.args
        if func == "tl.cast":
            return self.values(args[0], at, seen, axis) if args else {None}
        if isinstance(node.func, ast.Attribute) and node.func.attr == "to":
            return self.values(node.func.value, at, seen, axis)
        if func == "tl.load":
            mask = next((k.value for k in node.keywords if k.arg == "mask"), args[1] if len(args) > 1 else None)
            if mask is None or axis == INSIDE:
                return {None}  # every lane read: no padding (or a lane inside the tensor: its data)
            other = next((k.value for k in node.keywords if k.arg == "other"), args[2] if len(args) > 2 else None)
            fill = _literal(other)
            conds = {FALSE} if axis is None else self.values(mask, at, seen, axis)
            out = set()
            if conds - {FALSE}:
                out.add(None)  # the mask may be true along this axis: the tensor's data
            if FALSE in conds or None in conds:
                self.touched = True
                out.add(fill)
            return out
        if func == "tl.zeros":
            return {0.0}
        if func == "tl.full" and len(args) > 1:
            return {_literal(args[1])}
        if func == "tl.where" and len(args) == 3:
            ax = self._axes(args, axis)
            conds = self.values(args[0], at, seen, ax[0])
            a, b = self.values(args[1], at, seen, ax[1]), self.values(args[2], at, seen, ax[2])
            out = set()
            for cond in conds:
                out |= a if cond == TRUE else b if cond == FALSE else (a if a == b else {None})
            return out
        if func in ("tl.exp", "tl.exp2") and args:
            base = math.e if func == "tl.exp" else 2.0
            return {_exp(a, base) for a in self.values(args[0], at, seen, axis)}
        if func in ("tl.maximum", "tl.minimum") and len(args) == 2:
            pick = max if func == "tl.maximum" else min
            ax = self._axes(args, axis)
            left, right = self.values(args[0], at, seen, ax[0]), self.values(args[1], at, seen, ax[1])
            return {_extreme(a, b, pick) for a in left for b in right}
        if func == "tl.dot" and len(args) >= 2:
            return self._dot(node, at, seen, axis)
        if self._helped(node):
            return self._result(node, None, at, seen, axis)
        return {None}

    # ------------------------------------------------------------------ shapes: ranks, and what varies along an axis
    def _axes(self, operands, axis) -> list:
        """The axis each operand of an elementwise expression is read at, for a lane of the expression padded along
        ``axis``: an operand of lower rank is broadcast along the leading axes (Triton's implicit broadcast, as
        NumPy's: a 1-D value met by a 2-D one lies along the last axis), so it is read at ``axis`` less the ranks it
        lacks, and inside where ``axis`` is one it lacks. Where a rank is not known, each is read at ``axis``."""
        if not isinstance(axis, int) or isinstance(axis, bool):
            return [axis] * len(operands)
        ranks = [self._rank(o) for o in operands]
        if None in ranks:
            return [axis] * len(operands)
        top = max(ranks)
        return [axis - (top - r) if axis - (top - r) >= 0 else INSIDE for r in ranks]

    def _rank(self, node: ast.expr, depth: int = 0) -> int | None:
        """How many axes a value has, where the source shows it (``tl.arange`` 1, ``x[:, None]`` 2, a load its
        pointer's, an elementwise expression its operands' most, a reduction along an axis one fewer); None where
        not known (a helper's parameter, a helper's result)."""
        key = id(node)
        if key in self.ranks:
            return self.ranks[key]
        self.ranks[key] = None  # a name's value round a loop: not known while it is being read
        rank = self._rank_of(node, depth) if depth < 24 else None
        self.ranks[key] = rank
        return rank

    def _rank_of(self, node: ast.expr, depth: int) -> int | None:
        if isinstance(node, ast.Constant):
            return 0
        if isinstance(node, ast.Name):
            found = [self._rank(v, depth + 1) if v is not None else 0 for _, v in self.defs.get(node.id, [])]
            known = [r for r in found if r is not None]
            if known:
                return max(known)
            if found:
                return None
            if node.id in self.bound:
                caller, argument, _, _ = self.bound[node.id]
                return caller._rank(argument, depth + 1)
            return 0 if self.kernel and node.id in self.params else None
        if isinstance(node, ast.Subscript):
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if all(
                (isinstance(p, ast.Slice) and p.lower is None and p.upper is None and p.step is None)
                or (isinstance(p, ast.Constant) and p.value is None)
                for p in parts
            ):
                return len(parts)
            return None
        if isinstance(node, ast.UnaryOp):
            return self._rank(node.operand, depth + 1)
        if isinstance(node, ast.BinOp | ast.Compare | ast.BoolOp):
            operands = (
                [node.left, node.right]
                if isinstance(node, ast.BinOp)
                else [node.left, *node.comparators]
                if isinstance(node, ast.Compare)
                else node.values
            )
            ranks = [self._rank(o, depth + 1) for o in operands]
            return None if None in ranks else max(ranks)
        if not isinstance(node, ast.Call):
            return None
        func = ast.unparse(node.func)
        args = node.args
        if func == "tl.arange":
            return 1
        if func in ("tl.zeros", "tl.full") and args and isinstance(args[0], ast.Tuple | ast.List):
            return len(args[0].elts)
        if func == "tl.dot":
            return 2
        if func in ("tl.program_id", "tl.num_programs", "tl.cdiv"):
            return 0
        if isinstance(node.func, ast.Attribute) and node.func.attr == "to":
            return self._rank(node.func.value, depth + 1)
        if func in NEUTRAL and args:
            spelt = next((k.value for k in node.keywords if k.arg == "axis"), args[1] if len(args) > 1 else None)
            inner = self._rank(args[0], depth + 1)
            if spelt is None:
                return 0
            return None if inner is None else inner - 1
        if (
            func
            in ("tl.load", "tl.cast", "tl.exp", "tl.exp2", "tl.sqrt", "tl.abs", "tl.where", "tl.maximum", "tl.minimum")
            and args
        ):
            ranks = [self._rank(a, depth + 1) for a in (args[:1] if func in ("tl.load", "tl.cast") else args)]
            return None if None in ranks else max(ranks)
        return None

    def _varies(self, node: ast.expr, axis: int, depth: int = 0, seen: frozenset = frozenset()) -> bool:
        """Whether a value may differ along ``axis`` of its own shape (``rows[:, None] < M`` does not along axis 1):
        a mask that does not is true at a lane padded along that axis. Where the source does not show it: it may."""
        if depth > 24:
            return True
        if isinstance(node, ast.Constant):
            return False
        if isinstance(node, ast.Name):
            defs = self.defs.get(node.id, [])
            if not defs:
                if node.id in self.bound:
                    caller, argument, _, _ = self.bound[node.id]
                    return caller._varies(argument, axis, depth + 1)
                return not (self.kernel and node.id in self.params)  # a kernel's parameter: a scalar
            if node.id in seen:
                return False  # round a loop: the other assignments say
            return any(
                v is not None and self._varies(v, axis, depth + 1, seen | {node.id}) for _, v in defs
            )  # (a loop's counter: a scalar)
        if isinstance(node, ast.Subscript):
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            whole = [isinstance(p, ast.Slice) and p.lower is None and p.upper is None and p.step is None for p in parts]
            spread = [isinstance(p, ast.Constant) and p.value is None for p in parts]
            if not all(w or s for w, s in zip(whole, spread, strict=True)):
                return True
            if axis >= len(parts):
                return False
            return not spread[axis] and self._varies(node.value, sum(whole[:axis]), depth + 1, seen)
        if isinstance(node, ast.UnaryOp):
            return self._varies(node.operand, axis, depth + 1, seen)
        if isinstance(node, ast.BinOp | ast.Compare | ast.BoolOp):
            operands = (
                [node.left, node.right]
                if isinstance(node, ast.BinOp)
                else [node.left, *node.comparators]
                if isinstance(node, ast.Compare)
                else node.values
            )
            return self._any_varies(operands, axis, depth, seen)
        if not isinstance(node, ast.Call):
            return True
        func = ast.unparse(node.func)
        if func == "tl.arange":
            return axis == 0
        if func in ("tl.program_id", "tl.num_programs"):
            return False
        if isinstance(node.func, ast.Attribute) and node.func.attr == "to":
            return self._varies(node.func.value, axis, depth + 1, seen)
        if func in ("tl.load", "tl.cast") and node.args:
            return self._varies(node.args[0], axis, depth + 1, seen)
        if func in ("tl.minimum", "tl.maximum", "tl.where", "tl.cdiv"):
            return self._any_varies(node.args, axis, depth, seen)
        return True

    def _any_varies(self, operands, axis: int, depth: int, seen: frozenset) -> bool:
        for operand, ax in zip(operands, self._axes(operands, axis), strict=True):
            if ax != INSIDE and self._varies(operand, ax, depth + 1, seen):
                return True
        return False

    def _helped(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.helpers

    def _result(self, call: ast.Call, index: int | None, at: ast.stmt, seen: frozenset, axis) -> set:
        """What a lane of a helper's result (element ``index`` of the tuple it returns) may hold: each of its
        ``return`` values, read in the helper with each parameter standing for the caller's argument."""
        fn = self.helpers[call.func.id]
        if self.depth >= 3 or fn is self.fn:
            return {None}
        flow = self.flows.get(fn.name) or self.flows.setdefault(
            fn.name, _Flow(fn, self.helpers, self.depth + 1, self.called)
        )
        names = [a.arg for a in fn.args.args]
        bound = {name: (self, arg, at, seen) for name, arg in zip(names, call.args, strict=False)}
        bound |= {k.arg: (self, k.value, at, seen) for k in call.keywords if k.arg in names}
        held, flow.bound = flow.bound, bound
        flow.ranks = {}
        out: set = set()
        try:
            for ret in (n for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None):
                value = ret.value
                if index is not None:
                    if not (isinstance(value, ast.Tuple) and index < len(value.elts)):
                        out.add(None)
                        continue
                    value = value.elts[index]
                flow.touched = False
                out |= flow.values(value, ret, frozenset(), axis)
                self.touched = self.touched or flow.touched
        finally:
            flow.bound = held
            flow.ranks = {}
        return out or {None}

    def _dot(self, node: ast.Call, at: ast.stmt, seen: frozenset, axis) -> set:
        """A lane of ``tl.dot(a, b[, acc])``: a sum over K of a[m, k] b[k, n] (plus acc). A row padded in a (axis 0)
        or a column padded in b (axis 1) multiplies that row or column by the other's data; every lane's sum takes
        the K lanes padded in both (a's axis 1, b's axis 0), judged on their own by ``dot_problems``."""
        a, b = node.args[0], node.args[1]
        if axis == 0:
            terms = self._products(self.values(a, at, seen, 0), self.values(b, at, seen, INSIDE))
        elif axis == 1:
            terms = self._products(self.values(a, at, seen, INSIDE), self.values(b, at, seen, 1))
        else:
            terms = {None}
        held, self.touched = self.touched, False
        padded_k = self._products(self.values(a, at, seen, 1), self.values(b, at, seen, 0))
        # K lanes whose products are all 0 add nothing to any lane: they pad none of the result's
        self.touched = held or (self.touched and padded_k != {0.0})
        if axis not in (0, 1):
            terms = {None}  # a lane inside both operands: their data
        total = {_sum_of(term, k) for term in terms for k in padded_k}
        acc = node.args[2] if len(node.args) > 2 else next((k.value for k in node.keywords if k.arg == "acc"), None)
        if acc is None:
            return total
        return {_add(x, y) for x in self.values(acc, at, seen, axis) for y in total}

    @staticmethod
    def _products(a_values: set, b_values: set) -> set:
        return {_mul(x, y) for x in a_values for y in b_values} if len(a_values) * len(b_values) <= 64 else {None}

    def _pairs(
        self, left: ast.expr, right: ast.expr, at: ast.stmt, seen: frozenset, op: ast.operator, axis=None
    ) -> set:
        ax = self._axes((left, right), axis)
        a_values, b_values = self.values(left, at, seen, ax[0]), self.values(right, at, seen, ax[1])
        if len(a_values) * len(b_values) > 64:
            return {None}
        out = set()
        for a in a_values:
            for b in b_values:
                if isinstance(op, ast.Add):
                    out.add(_add(a, b))
                elif isinstance(op, ast.Sub):
                    out.add(_add(a, _flip(b)) if b not in (TRUE, FALSE) else None)
                elif isinstance(op, ast.Mult):
                    out.add(_mul(a, b))
                elif isinstance(op, ast.Div):
                    out.add(_div(a, b))
                else:
                    out.add(_conjunction(a, b, op))
        return out

    def problems(self, where: str, call: ast.Call, func: str) -> list[str]:
        """The reduction ``call`` named where a padded lane of its operand may hold a value that changes it."""
        self.touched = False
        spelt = next((k.value for k in call.keywords if k.arg == "axis"), call.args[1] if len(call.args) > 1 else None)
        axis = spelt.value if isinstance(spelt, ast.Constant) and isinstance(spelt.value, int) else None
        held = self.values(call.args[0], self._statement(call), axis=axis)
        if not self.touched:
            return []  # no masked load reaches it: no padded lane
        neutral = NEUTRAL[func]
        wrong = _wrong(held, neutral)
        if not wrong:
            return []
        return [
            f"{where} reduces {ast.unparse(call.args[0])} ({ast.unparse(call)}), whose padded lanes may hold "
            f"{' or '.join(str(w) for w in sorted(wrong, key=str))}: not {func}'s neutral {neutral} (a masked load's "
            "fill, or a masked lane's value, carried through the arithmetic: a block wider than what it covers "
            "changes the result)"
        ]

    def dot_problems(self, where: str, call: ast.Call) -> list[str]:
        """``tl.dot(a, b)`` named where a K lane padded in both operands (a's axis 1, b's axis 0) may hold a product
        other than 0: the dot sums it into every lane (1 x 1 where both tails are filled with 1; 0 x NaN)."""
        self.touched = False
        at = self._statement(call)
        held = self._products(self.values(call.args[0], at, axis=1), self.values(call.args[1], at, axis=0))
        if not self.touched:
            return []
        wrong = _wrong(held, 0.0)
        if not wrong:
            return []
        return [
            f"{where} sums {ast.unparse(call.args[0])} x {ast.unparse(call.args[1])} over K ({ast.unparse(call)}), "
            f"whose padded K lanes may hold {' or '.join(str(w) for w in sorted(wrong, key=str))}: not 0 (both "
            "operands' fills, carried through the arithmetic, meet there: a block wider than K changes every dot)"
        ]


def _wrong(held: set, neutral: float) -> list:
    """What of ``held`` changes a reduction whose neutral value is ``neutral``."""
    wrong = []
    for atom in held:
        if isinstance(atom, float) and math.isnan(atom):
            bad = True
        elif isinstance(atom, float):
            bad = atom != 0.0 if neutral == 0.0 else (atom > -SENTINEL if neutral < 0 else atom < SENTINEL)
        else:
            bad = atom == NONZERO or (atom == FINITE and neutral != 0.0)
        if bad:
            wrong.append("a finite value" if atom == FINITE else "a value other than 0" if atom == NONZERO else atom)
    return wrong


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
    tree = ast.parse(source)
    helpers = {f.name: f for f in _jit_functions(tree)}
    calls = [  # (caller, the call) of each helper called from a Triton function of the module
        (fn, node)
        for fn in helpers.values()
        for node in ast.walk(fn)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers
    ]
    called = frozenset(call.func.id for _, call in calls)
    flows = {name: _Flow(fn, helpers, 0, called) for name, fn in helpers.items()}
    for fn in _jit_functions(tree):
        where = f"{module_name}.{fn.name}"
        flow = flows[fn.name]
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
                    problems.extend(flow.problems(where, node, func))  # a value computed, or assigned again
                    continue
                spelt = next((k.value for k in node.keywords if k.arg == "axis"), node.args[1:2] or [None])
                spelt = spelt[0] if isinstance(spelt, list) else spelt
                if isinstance(spelt, ast.Constant) and isinstance(spelt.value, int):
                    mask_of = next((k.value for k in load.keywords if k.arg == "mask"), load.args[1:2] or [None])
                    mask_of = mask_of[0] if isinstance(mask_of, list) else mask_of
                    if flow.values(mask_of, flow._statement(node), axis=spelt.value) == {TRUE}:
                        continue  # masked along other axes only: this reduction's lanes are read whole
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
            elif func in NEUTRAL and node.args:
                problems.extend(flow.problems(where, node, func))  # a reduction of an expression
            elif func == "tl.dot" and len(node.args) >= 2:
                problems.extend(flow.dot_problems(where, node))  # a sum over K
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
    # a helper's reductions read once more for each call of it, each parameter standing for the caller's argument
    # (the flash kernel's q, loaded with its fill, reduced in _flash_block's dot)
    for caller, call in calls:
        fn = helpers[call.func.id]
        where = f"{module_name}.{fn.name}"
        flow, outer = flows[fn.name], flows[caller.name]
        names = [a.arg for a in fn.args.args]
        at = outer._statement(call)
        flow.bound = {name: (outer, arg, at, frozenset()) for name, arg in zip(names, call.args, strict=False)}
        flow.bound |= {k.arg: (outer, k.value, at, frozenset()) for k in call.keywords if k.arg in names}
        flow.ranks = {}
        found = []
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            func = ast.unparse(node.func)
            if func in NEUTRAL and node.args:
                found += flow.problems(where, node, func)
            elif func == "tl.dot" and len(node.args) >= 2:
                found += flow.dot_problems(where, node)
        flow.bound, flow.ranks = {}, {}
        for problem in found:
            if problem not in problems:
                line = f"{where} (called from {caller.name}, line {call.lineno})"
                problems.append(line + problem.removeprefix(where))
    return list(dict.fromkeys(problems))
