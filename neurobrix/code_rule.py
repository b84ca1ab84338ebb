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
  ``globals()``, ``__builtins__``, and importing ``builtins``, ``ctypes`` or ``gc``. (``locals()`` and ``vars()``
  with no argument, which at a module's level are its globals, are read as a container holding every name the file
  imports: ``locals()["linear"].SPECS = ()`` is a write through an imported name.)

A name is followed within its file, flow aside: an argument of a call of a function the file defines binds its
parameter (``def f(m): m.SPECS = ()`` called with ``linear``), a default binds its parameter, an attribute assigned an
imported object (``self.m = linear``) is one too. A module Python would import without a source (a ``.pyc`` beside
the sources, a compiled extension) is refused: nothing to read. The writes the engine makes on purpose are listed
(:data:`ALLOWED`) by file and target. What the rule cannot see: an object reaching a function of another file as an
argument, or any function as a return value, an object stored into a container after it was made (``d["m"] =
linear``), a name computed at run time (``getattr(x, name)``, ``importlib.import_module(name)`` passed on), a method
of an imported class called on an imported object, and code no file of the package holds (a ``.pth`` file or
``sitecustomize`` elsewhere on the path, which the release gate refuses in an artifact; a plugin the user imports).
"""

from __future__ import annotations

import ast
import functools
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
_BUILTIN_CLASSES = {"dict", "list", "set", "object", "type"}  # ``dict.update(vars(linear), ...)``: the first argument
_FETCHERS = {"get", "values", "items", "setdefault", "pop", "__getitem__", "import_module", "getmodule"}


def foreign_writes(package: Path | None = None) -> list[str]:
    """One line (``neurobrix/<file> line <n>: ...``) for each write of code another module owns, and each construct
    the rule cannot follow, in the package's source files (sorted); [] for this neurobrix."""
    from importlib.machinery import EXTENSION_SUFFIXES

    folder = package or Path(__file__).resolve().parent
    found: list[str] = []
    for path in sorted(folder.rglob("*")):  # a module import loads without a source: none to read
        rel = path.relative_to(folder).as_posix()
        compiled = path.suffix == ".pyc" and path.parent.name != "__pycache__"
        if compiled or any(path.name.endswith(s) for s in EXTENSION_SUFFIXES):
            found.append(f"neurobrix/{rel}: a module Python imports with no source the rule can read")
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(folder).as_posix()
        if "__pycache__" in rel.split("/"):
            continue
        try:
            source = path.read_bytes()
        except OSError as exc:
            found.append(f"neurobrix/{rel}: cannot be read as Python ({exc})")
            continue
        found += _file_writes(rel, source, str(path))
    return found


@functools.lru_cache(maxsize=256)
def _file_writes(rel: str, source: bytes, shown: str) -> list[str]:
    """:func:`foreign_writes`'s lines for one file, by its name and bytes: a process that verifies its tables often
    (the tests, a server) reads each file again but parses a changed one only (the rule took 1.3 s a call)."""
    try:
        tree = ast.parse(source, shown)
    except (SyntaxError, ValueError) as exc:
        return [f"neurobrix/{rel}: cannot be read as Python ({exc})"]
    return [f"neurobrix/{rel} line {line}: {what}" for line, what in _Reader(rel).read(tree)]


_Key = tuple[int, str]  # (the id of the function whose local it is, 0 for the module's; the name)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


class _Reader:
    """The refusals of one file: its foreign names first (imports and names bound from them, each in its scope),
    then each write."""

    def __init__(self, rel: str) -> None:
        self.rel = rel
        self.foreign: set[_Key] = set()
        self.modules: set[_Key] = set()  # the names ``import x`` binds
        self.paths: set[str] = set()  # attributes assigned a foreign object (``self.m = linear``), as written
        self.holders: set[_Key] = set()  # the names bound to a container holding a foreign object
        self.parent: dict[ast.AST, ast.AST] = {}
        self.local: dict[ast.AST, set[str]] = {}  # a function -> the names local to it

    def scope(self, node: ast.AST) -> ast.AST | None:
        """The function ``node`` is in (None: the module, or a class body)."""
        node = self.parent.get(node, node)
        while node in self.parent and not isinstance(node, _FUNCTIONS):
            node = self.parent[node]
        return node if isinstance(node, _FUNCTIONS) else None

    def key(self, name: str, at: ast.AST) -> _Key:
        """Which variable ``name`` at ``at`` is: the innermost function's holding it as a local, or the module's."""
        function = self.scope(at)
        while function is not None:
            if name in self.local.get(function, ()):
                return (id(function), name)
            function = self.scope(function)
        return (0, name)

    def root(self, node: ast.expr | None) -> str | None:
        """The foreign name ``node`` reaches an object through (None: the object is the file's own, or new)."""
        if isinstance(node, ast.Name):
            return node.id if self.key(node.id, node) in self.foreign else None
        if isinstance(node, ast.Attribute) and self.paths and ast.unparse(node) in self.paths:
            return ast.unparse(node)
        if isinstance(node, ast.Subscript):  # an item of a foreign object, or of a container holding one
            return self.root(node.value) or self.holder(node.value)
        if isinstance(node, (ast.Attribute, ast.Starred, ast.NamedExpr, ast.Await)):
            return self.root(node.value)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("getattr", "vars", "next", "iter") and node.args:
                return self.root(node.args[0]) or (self.holder(node.args[0]) if func.id != "getattr" else None)
            if isinstance(func, ast.Attribute) and func.attr in _FETCHERS:
                return self.root(func.value) or self.holder(func.value)
            return None
        if isinstance(node, ast.BoolOp):  # ``linear or x``
            return next((r for r in map(self.root, node.values) if r), None)
        if isinstance(node, ast.IfExp):
            return self.root(node.body) or self.root(node.orelse)
        return None

    def holder(self, node: ast.expr | None) -> str | None:
        """The foreign name a container ``node`` holds (``[linear]``, ``{"m": linear}``, a name bound to one): its
        items are foreign, the container is not (writing into it changes only it)."""
        if isinstance(node, ast.Name):
            return node.id if self.key(node.id, node) in self.holders else None
        if (  # the scope's own namespace (at a module's level its globals): it holds each name the file imports
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("locals", "vars")
            and not node.args
            and not node.keywords
        ):
            return f"{node.func.id}(), which holds its imports," if self.foreign else None
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            parts: list[ast.expr | None] = list(node.elts)
        elif isinstance(node, ast.Dict):
            parts = list(node.values)
        else:
            return None
        return next((r for r in (self.root(p) or self.holder(p) for p in parts) if r), None)

    def read(self, tree: ast.Module) -> list[tuple[int, str]]:
        self.parent = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        declared: dict[ast.AST, set[str]] = {}  # a function -> the names it declares global or nonlocal
        for node in ast.walk(tree):
            function = self.scope(node)
            if function is None:
                continue
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                declared.setdefault(function, set()).update(node.names)
            names: list[str] = []
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                names = [node.id]
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.asname or a.name.split(".")[0] for a in node.names]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, ast.arg):
                names = [node.arg]
            self.local.setdefault(function, set()).update(names)
        for function, out in declared.items():
            self.local[function] = self.local.get(function, set()) - out
        found: list[tuple[int, str]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    bound = self.key(a.asname or a.name.split(".")[0], node)
                    self.foreign.add(bound)
                    self.modules.add(bound)
                    if a.name.split(".")[0] in _MODULES_REFUSED:
                        found.append((node.lineno, f"imports {a.name}, whose use the rule cannot follow"))
            elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
                self.foreign |= {self.key(a.asname or a.name, node) for a in node.names if a.name != "*"}
                if node.level == 0 and (node.module or "").split(".")[0] in _MODULES_REFUSED:
                    found.append((node.lineno, f"imports from {node.module}, whose use the rule cannot follow"))
                if any(a.name == "*" for a in node.names):
                    found.append((node.lineno, "a star import: the names it binds cannot be read"))
        bindings = self.bindings(tree)
        while True:  # names (and attributes) bound from a foreign object, until none is added
            taken = [
                (keys, places)
                for keys, places, value, each in bindings
                if self.root(value) or each and self.holder(value)
            ]
            more = {k for keys, _ in taken for k in keys} - self.foreign
            paths = {ast.unparse(p) for _, places in taken for p in places if isinstance(p, ast.Attribute)}
            holding = {k for keys, _, value, each in bindings if not each and self.holder(value) for k in keys}
            if not more and paths <= self.paths and holding <= self.holders:
                break
            self.foreign |= more
            self.paths |= paths
            self.holders |= holding
        for node in ast.walk(tree):
            found += self.refusals(node)
        return sorted(set(found))

    def bindings(
        self, tree: ast.Module
    ) -> list[tuple[list[_Key], list[ast.Attribute | ast.Subscript], ast.expr, bool]]:
        """(the variables, the attribute and item places, the value) of each binding: an assignment, a loop's or a
        ``with``'s target (tuples unpacked as a whole), a parameter's default, and each argument of a call of a
        function the file defines (by its name), to that parameter."""
        pairs: list[tuple[list[_Key], list[ast.Attribute | ast.Subscript], ast.expr, bool]] = []

        def target(node: ast.expr, value: ast.expr, each: bool = False) -> None:
            """``each``: bound to each item of ``value`` (a loop)."""
            if isinstance(node, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and not each:
                if len(node.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in node.elts):
                    for t, v in zip(node.elts, value.elts):  # ``a, b = linear, x``: item by item
                        target(t, v)
                    return
            pairs.append(([self.key(n.id, n) for n in _names(node)], _places(node), value, each))

        defined: dict[str, list[ast.AST]] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defined.setdefault(node.name, []).append(node)
            if isinstance(node, _FUNCTIONS):
                a = node.args
                positional = [*a.posonlyargs, *a.args]
                given = zip(positional[len(positional) - len(a.defaults) :], a.defaults)
                pairs += [([(id(node), p.arg)], [], d, False) for p, d in given]
                kw = zip(a.kwonlyargs, a.kw_defaults)
                pairs += [([(id(node), p.arg)], [], d, False) for p, d in kw if d is not None]
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    target(t, node.value)
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                target(node.target, node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                target(node.target, node.iter, each=True)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                target(node.optional_vars, node.context_expr)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            for function in defined.get(name, []):
                assert isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
                a = function.args
                positional = [*a.posonlyargs, *a.args]
                if isinstance(func, ast.Attribute) and positional:  # a method: its first parameter is the object
                    positional = positional[1:]
                pairs += [([(id(function), p.arg)], [], v, False) for p, v in zip(positional, node.args)]
                named = {p.arg for p in [*positional, *a.kwonlyargs]}
                pairs += [([(id(function), k.arg)], [], k.value, False) for k in node.keywords if k.arg in named]
        return pairs

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
                # the object changed: the receiver, or the first argument where the method is called on the class
                # (``Base.__setitem__(self, k, v)``, ``dict.update(d, ...)``); a module has none (``torch.add``)
                unbound = func.attr.startswith("__") and len(node.args) == (3 if func.attr == "__setitem__" else 2)
                unbound |= isinstance(func.value, ast.Name) and func.value.id in _BUILTIN_CLASSES and bool(node.args)
                changed = node.args[0] if unbound else func.value
                owner = self.root(changed)
                if owner and not (isinstance(changed, ast.Name) and self.key(changed.id, changed) in self.modules):
                    shown = ast.unparse(changed)
                    found.append(
                        (line, f"{func.attr} changes {shown}: {owner} is imported, code this module does not own")
                    )
        return found

    def write(self, place: ast.Attribute | ast.Subscript, line: int) -> list[tuple[int, str]]:
        shown = ast.unparse(place)
        chain: list[ast.expr] = []
        node: ast.expr = place
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            chain.append(node)
            node = node.value
        if any(isinstance(n, ast.Attribute) and n.attr in _SURGERY for n in chain):
            return [(line, f"writes {shown}: what an object is or runs, which the rule cannot attribute")]
        owner = self.root(place.value)  # the object written into (``self.m = linear`` rebinds self's own)
        if owner and (self.rel, shown) not in ALLOWED:
            return [(line, f"writes {shown}: {owner} is imported, code this module does not own")]
        return []


def _names(target: ast.expr) -> list[ast.Name]:
    if isinstance(target, ast.Name):
        return [target]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _names(e)]
    if isinstance(target, ast.Starred):
        return _names(target.value)
    return []


def _places(target: ast.expr) -> list[ast.Attribute | ast.Subscript]:
    """The attribute and item places a target writes (a name is the file's own)."""
    if isinstance(target, (ast.Attribute, ast.Subscript)):
        return [target]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [p for e in target.elts for p in _places(e)]
    if isinstance(target, ast.Starred):
        return _places(target.value)
    return []
