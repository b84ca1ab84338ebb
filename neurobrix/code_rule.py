"""Code of this neurobrix that changes code it does not own: refused, so that the kernels a run launches are the code
their tables were proven on (:mod:`neurobrix.kernel_source` binds a table to the files of ``neurobrix/ops`` a kernel
runs; code elsewhere that rebinds those modules' functions, their specs or the Triton and torch functions they call
at import time would run other kernels under a table still "bound").

Read from the syntax trees of every source file of the package, importing nothing (``tables verify``, and so the
release gate's install smoke, run it without torch). A module owns the names it defines; everything it imports is
another's. Refused, in every file:

* a write through an imported name (``linear.launch = f``, ``tl.dot = f``, ``sys.modules["..."] = m``,
  ``SPECS["linear"] = s`` after ``from .ops import SPECS``, ``del``, ``+=``) or through a name bound from one
  (``m = linear``; ``m = importlib.import_module(...)``; ``m = getattr(linear, "x")``; ``for s in SPECS.values()``);
* ``setattr``/``delattr`` on such an object, a mutating method called on it (``sys.modules.update``,
  ``SPECS.pop``), and anywhere an explicit ``__setattr__``/``__delattr__``/``__setitem__``/``__delitem__`` call
  (``object.__setattr__(spec, "launch", f)`` on a frozen OpSpec) or a write of a dunder attribute or through
  ``__dict__`` (``f.__code__ = g.__code__``);
* code the trees cannot follow, which the engine does not use: ``exec``, ``eval``, ``compile``, ``__import__``,
  ``globals()``, ``locals()``, ``__builtins__``, and importing ``builtins``, ``ctypes`` or ``gc``.

The writes the engine makes on purpose are listed (:data:`ALLOWED`) by file and target. What the rule cannot see: a
write through an object that reaches a function as an argument, a return value or an attribute of ``self`` (``def
f(m): m.launch = g`` called with ``linear``), through ``getattr(x, name)`` or ``importlib.import_module(name)``
resolved to a module at run time and then passed on, or by code no source file of the package holds (a ``.pth`` file
or ``sitecustomize`` elsewhere on the path, the release gate refuses them in an artifact; a plugin the user imports).
"""

from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["ALLOWED", "foreign_writes"]

# (file of the package, the target as ast.unparse writes it): writes to an imported object the engine makes on purpose
ALLOWED = frozenset(
    {
        ("stack.py", "os.environ['TRITON_CACHE_DIR']"),  # Triton's cache, set once a process (neurobrix.stack)
        ("output.py", "sys.stdout"),  # one command's standard streams, put back after it (neurobrix.output)
        ("output.py", "sys.stderr"),
    }
)

_DYNAMIC = {"exec", "eval", "compile", "__import__", "globals", "__builtins__"}
_MODULES_REFUSED = {"builtins", "ctypes", "gc"}
_MUTATORS = {
    "update", "setdefault", "pop", "popitem", "clear", "append", "extend", "insert", "remove", "add", "discard",
    "__setitem__", "__delitem__", "__setattr__", "__delattr__",
}  # fmt: skip
_SPECIAL_CALLS = {"__setattr__", "__delattr__"}
# attributes whose write replaces what an object is or runs (its namespace, code, class), whoever owns it
_SURGERY = {
    "__dict__",
    "__code__",
    "__globals__",
    "__closure__",
    "__class__",
    "__bases__",
    "__defaults__",
    "__kwdefaults__",
}
_FETCHERS = {"get", "values", "items", "setdefault", "pop", "__getitem__", "import_module", "getmodule"}


def foreign_writes(package: Path | None = None) -> list[str]:
    """One line (``neurobrix/<file> line <n>: ...``) for each write of code another module owns, and each construct
    the rule cannot follow, in the package's source files (sorted); [] for this neurobrix."""
    folder = package or Path(__file__).resolve().parent
    found: list[str] = []
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(folder).as_posix()
        if "__pycache__" in rel.split("/"):
            continue
        try:
            tree = ast.parse(path.read_bytes(), str(path))
        except (OSError, SyntaxError, ValueError) as exc:
            found.append(f"neurobrix/{rel}: cannot be read as Python ({exc})")
            continue
        found += [f"neurobrix/{rel} line {line}: {what}" for line, what in _Reader(rel).read(tree)]
    return found


class _Reader:
    """The refusals of one file: its foreign names first (imports and names bound from them), then each write."""

    def __init__(self, rel: str) -> None:
        self.rel = rel
        self.foreign: set[str] = set()
        self.modules: set[str] = set()  # the names ``import x`` binds

    def root(self, node: ast.expr) -> str | None:
        """The foreign name ``node`` reaches an object through (None: the object is the file's own, or new)."""
        while True:
            if isinstance(node, ast.Name):
                return node.id if node.id in self.foreign else None
            if isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
                node = node.value
            elif isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Name) and func.id in ("getattr", "vars") and node.args:
                    node = node.args[0]
                elif isinstance(func, ast.Attribute) and func.attr in _FETCHERS:
                    node = func.value
                else:
                    return None
            else:
                return None

    def read(self, tree: ast.Module) -> list[tuple[int, str]]:
        found: list[tuple[int, str]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.foreign.add(a.asname or a.name.split(".")[0])
                    self.modules.add(a.asname or a.name.split(".")[0])
                    if a.name.split(".")[0] in _MODULES_REFUSED:
                        found.append((node.lineno, f"imports {a.name}, whose use the rule cannot follow"))
            elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
                self.foreign |= {a.asname or a.name for a in node.names if a.name != "*"}
                if node.level == 0 and (node.module or "").split(".")[0] in _MODULES_REFUSED:
                    found.append((node.lineno, f"imports from {node.module}, whose use the rule cannot follow"))
                if any(a.name == "*" for a in node.names):
                    found.append((node.lineno, "a star import: the names it binds cannot be read"))
        bindings = [(t, v) for t, v in _bindings(tree)]
        while True:  # names bound from a foreign object, until none is added
            more = {n for target, value in bindings if self.root(value) for n in _names(target)} - self.foreign
            if not more:
                break
            self.foreign |= more
        for node in ast.walk(tree):
            found += self.refusals(node)
        return sorted(set(found))

    def refusals(self, node: ast.AST) -> list[tuple[int, str]]:
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name) and node.id in _DYNAMIC:
            return [(line, f"{node.id}: code the rule cannot read (the engine does not use it)")]
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and (
            not isinstance(node, ast.AnnAssign) or node.value is not None
        ):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            targets = [node.target]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets = [node.optional_vars]
        found = []
        for target in targets:
            for place in _places(target):
                found += self.write(place, line)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
                owner = self.root(node.args[0])
                if owner:
                    found.append((line, f"{func.id} on {owner}, which this module imports: code it does not own"))
            elif isinstance(func, ast.Attribute) and func.attr in _SPECIAL_CALLS:
                found.append((line, f"an explicit {func.attr} call: a write the rule cannot attribute"))
            elif isinstance(func, ast.Attribute) and func.attr in _MUTATORS:
                # the object changed: the receiver, or a dunder method's first argument where it is called on the
                # class (``Base.__setitem__(self, k, v)``); a module itself has none of these methods (``torch.add``)
                unbound = func.attr.startswith("__") and len(node.args) == (3 if func.attr == "__setitem__" else 2)
                changed = node.args[0] if unbound else func.value
                owner = self.root(changed)
                if owner and not (isinstance(changed, ast.Name) and changed.id in self.modules):
                    shown = ast.unparse(changed)
                    found.append(
                        (line, f"{func.attr} changes {shown}: {owner} is imported, code this module does not own")
                    )
        return found

    def write(self, place: ast.expr, line: int) -> list[tuple[int, str]]:
        shown = ast.unparse(place)
        chain: list[ast.expr] = []
        node: ast.expr = place
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            chain.append(node)
            node = node.value
        if any(isinstance(n, ast.Attribute) and n.attr in _SURGERY for n in chain):
            return [(line, f"writes {shown}: what an object is or runs, which the rule cannot attribute")]
        owner = self.root(place)
        if owner and (self.rel, shown) not in ALLOWED:
            return [(line, f"writes {shown}: {owner} is imported, code this module does not own")]
        return []


def _bindings(tree: ast.Module) -> list[tuple[ast.expr, ast.expr]]:
    """(target, value) of each statement binding names to a value (tuples unpacked as a whole)."""
    pairs: list[tuple[ast.expr, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            pairs += [(t, node.value) for t in node.targets]
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            pairs.append((node.target, node.value))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            pairs.append((node.target, node.iter))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            pairs.append((node.optional_vars, node.context_expr))
    return pairs


def _names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _names(e)]
    if isinstance(target, ast.Starred):
        return _names(target.value)
    return []


def _places(target: ast.expr) -> list[ast.expr]:
    """The attribute and item places a target writes (a name is the file's own)."""
    if isinstance(target, (ast.Attribute, ast.Subscript)):
        return [target]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [p for e in target.elts for p in _places(e)]
    if isinstance(target, ast.Starred):
        return _places(target.value)
    return []
