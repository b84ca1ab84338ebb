"""The kernel code this process runs, held to the files of ``neurobrix/ops`` its tables are bound to.

:mod:`neurobrix.kernel_source` binds a table to the code of the files a kernel runs, read from disk, and
:mod:`neurobrix.code_rule` refuses code of the package that rewrites them. Code outside the package can still change
what the imported kernels are before or after the engine looks at the files: a user's script that imports neurobrix and
rebinds ``neurobrix.ops.linear._linear_gemv_kernel`` or ``neurobrix.ops.SPECS["linear"]``, a ``.pth`` or
``sitecustomize`` on the path, a plugin; each kept every table "bound" while the engine launched other code.

:func:`running_kernels_problem` compares the modules of ``neurobrix/ops`` as they are in this process with their files:
each function and method the file defines is a function whose code object is the one Python compiles from the file now
(``__code__`` equal, its globals the module's own, its defaults those its ``def`` writes; one the file caches with
``functools.lru_cache`` is functools' cache of it, not any object whose ``__wrapped__`` it is), each Triton kernel is
Triton's own kernel object of that function with the source of its ``def`` as the file holds it (what Triton compiles
for a GPU; the interpreter runs the file's lines, which :mod:`linecache` must hold unchanged), each name an ``import``
binds is the object that import gives, each constant written out keeps its value, each ``OpSpec`` of the module's
``SPECS`` holds the objects its call names, ``neurobrix.ops.SPECS`` holds those specs and no other, and no name the code
reads shadows a built-in it calls. Plan.ops, ``run`` and ``warmup`` refuse the plan otherwise (exit 6); a model's ops
are checked again before each generation (:func:`ops_problem`).

What this cannot see: a change of torch, Triton, NumPy or Python itself (``tl.dot``, ``torch.matmul`` or a built-in
rebound where it is defined; Triton's caches of compiled or rewritten kernels and its hooks), C extensions, state a
kernel keeps (``functools.lru_cache`` results, tensors it holds), names bound by an expression the file computes
(``INTERPRETER = bool(...)``, a container a module fills as it runs), and a change of this module or of the engine
that calls it (code that can rebind a kernel can rebind the check).

Tests that plant a bug in a kernel by patching it in the process say so with :func:`patched_kernels` (for tests
only: a program that patches kernels runs code no check has seen, which the engine refuses to call certified).
"""

from __future__ import annotations

import ast
import contextlib
import dis
import functools
import inspect
import io
import re
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["ops_problem", "patched_kernels", "running_kernels_problem"]

_MISSING = object()
_CACHED = type(functools.lru_cache(maxsize=None)(lambda: None))  # functools' cached function (lru_cache, cache)
_ALLOWED: list[str] = []  # the reasons tests gave for patching kernels in this process (patched_kernels)


@contextlib.contextmanager
def patched_kernels(reason: str) -> Iterator[None]:
    """For tests only: within it, kernels patched in this process are launched, not refused (a test that plants a bug
    in a kernel to see a check catch it, or wraps one to count its launches). ``reason`` says why."""
    _ALLOWED.append(reason)
    try:
        yield
    finally:
        _ALLOWED.remove(reason)


class _File(NamedTuple):
    tree: ast.Module
    functions: dict[str, types.CodeType]  # qualified name -> the code Python compiles from the file
    lambdas: dict[int, list[types.CodeType]]  # a lambda's line -> the lambdas' code there
    names: frozenset[str]  # every global name the file's code reads (one a module adds shadows a built-in)
    lines: list[str]  # the file's lines, as linecache holds them
    unbound: frozenset[str]  # the global names its code reads that its top level does not bind (built-ins)


@functools.lru_cache(maxsize=64)
def _read(path: str, source: bytes) -> _File:
    """A file's syntax tree and the code Python compiles from it (as an import does), by its name and bytes: read
    again each time, compiled once."""
    from importlib.abc import InspectLoader

    tree = ast.parse(source, path)
    module = InspectLoader.source_to_code(source, path)
    functions: dict[str, types.CodeType] = {}
    lambdas: dict[int, list[types.CodeType]] = {}
    names: set[str] = set()

    def walk(code: types.CodeType, prefix: str) -> None:  # (qualified names as Python writes them; 3.10 has none)
        names.update(i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME"))
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                if const.co_name == "<lambda>":
                    lambdas.setdefault(const.co_firstlineno, []).append(const)
                else:
                    functions.setdefault(prefix + const.co_name, const)
                inner = const.co_flags & inspect.CO_NEWLOCALS  # a function's code, not a class body's
                walk(const, f"{prefix}{const.co_name}.{'<locals>.' if inner else ''}")

    walk(module, "")
    lines = io.StringIO(source.decode("utf-8-sig", "replace"), newline=None).readlines()  # as linecache reads it
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                bound.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    unbound = frozenset(n for n in names - bound if not n.startswith("__"))
    return _File(tree, functions, lambdas, frozenset(names), lines, unbound)


def _jit_source(lines: list[str], node: ast.FunctionDef) -> str:
    """The source Triton holds for a kernel (``JITFunction.src``): its lines, decorators on, dedented, from ``def``."""
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    text = textwrap.dedent("".join(lines[first - 1 : node.end_lineno]))
    found = re.search(r"^def\s+\w+\s*\(", text, re.MULTILINE)
    return text[found.start() :] if found else text


@functools.lru_cache(maxsize=4096)
def _is_jit(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ast.unparse(target) in ("triton.jit", "jit")


@functools.lru_cache(maxsize=4096)
def _literal(node: ast.expr) -> tuple[bool, Any]:
    """(whether the expression is a literal, its value); by node, once (the trees are the cached files')."""
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return False, None


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


@functools.lru_cache(maxsize=256)
def _resolved(origin: str) -> Path:
    return Path(origin).resolve()


# the running code objects found equal to a file's, by the file's code object: the same object again is not compared
_SAME: dict[int, tuple[types.CodeType, types.CodeType]] = {}


def _same_code(running: types.CodeType, compiled: types.CodeType) -> bool:
    seen = _SAME.get(id(compiled))
    if seen is not None and seen[0] is compiled and seen[1] is running:
        return True
    if running != compiled:
        return False
    _SAME[id(compiled)] = (compiled, running)
    return True


class _Module:
    """The problems of one module of ``neurobrix/ops`` against its file, each a short phrase."""

    def __init__(self, name: str, module: Any, path: Path) -> None:
        self.name, self.module, self.path = name, module, path
        self.ns: dict[str, Any] = vars(module)
        self.file = _read(str(path), path.read_bytes())
        self.problems: list[str] = []
        self.filenames = {str(path), str(getattr(module, "__file__", path))}  # the file as imported, and resolved

    def say(self, what: str) -> None:
        self.problems.append(f"{self.name}.{what}")

    def function(self, value: Any, qualname: str, shown: str, node: ast.FunctionDef | None = None) -> None:
        code = self.file.functions.get(qualname)
        if not isinstance(value, types.FunctionType):
            self.say(f"{shown} is {type(value).__name__}, not the function the file defines")
        # (the file named matters too: the Triton interpreter runs the lines of the file a kernel's code names)
        elif code is None or not _same_code(value.__code__, code) or value.__code__.co_filename not in self.filenames:
            self.say(f"{shown}'s code is not the file's")
        elif value.__globals__ is not self.ns:
            self.say(f"{shown} runs with another module's names")
        elif node is not None and not self.same_defaults(value, node.args):
            self.say(f"{shown}'s defaults are not the file's")

    def same_defaults(self, value: types.FunctionType, args: ast.arguments) -> bool:
        """Whether the function's defaults are those its ``def`` writes (its code reads them from the function, not
        the file: ``linear.key_of.__defaults__`` or ``rms_norm.__kwdefaults__`` set in the process change what it
        does). Literals by value and type, names (``torch.empty``) by the object they name; others not compared."""
        keyword = {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
        held_keyword = value.__kwdefaults__ or {}
        held = value.__defaults__ or ()
        if len(held) != len(args.defaults) or set(held_keyword) != set(keyword):
            return False
        pairs = [*zip(held, args.defaults), *((held_keyword[k], d) for k, d in keyword.items())]
        return all(self.same_value(h, d) for h, d in pairs)

    def same_value(self, held: Any, expr: ast.expr) -> bool:
        known, literal = _literal(expr)
        if known:
            return bool(type(held) is type(literal) and held == literal)
        named = self.named(expr)
        if named is _MISSING:
            return True  # an expression the file computes: not compared
        return held is named or (type(held) is type(named) and held == named)  # (a built-in method got again)

    def named(self, expr: ast.expr) -> Any:
        """The object a name or dotted name of the file names now (_MISSING: not a name, or none)."""
        if isinstance(expr, ast.Name):
            held = self.ns.get("__builtins__", {})  # (the built-ins the module's code reads: a dict, or the module)
            built_in = (vars(held) if isinstance(held, types.ModuleType) else held).get(expr.id, _MISSING)
            return self.ns.get(expr.id, built_in)
        if isinstance(expr, ast.Attribute):
            base = self.named(expr.value)
            return _MISSING if base is _MISSING else getattr(base, expr.attr, _MISSING)
        return _MISSING

    def kernel(self, value: Any, node: ast.FunctionDef) -> None:
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        if type(value) not in (JITFunction, InterpretedFunction):
            self.say(f"{node.name} is {type(value).__name__}, not the Triton kernel the file defines")
            return
        self.function(value.fn, node.name, node.name, node)
        if isinstance(value, JITFunction) and value.src != _jit_source(self.file.lines, node):
            self.say(f"{node.name}'s source (what Triton compiles) is not the file's")
        if getattr(value, "pre_run_hooks", None):
            self.say(f"{node.name} has a pre-run hook")

    def imported(self, node: ast.Import | ast.ImportFrom) -> None:
        import importlib.util

        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            return
        for alias in node.names:
            if isinstance(node, ast.Import):
                bound = alias.asname or alias.name.partition(".")[0]
                expected = sys.modules.get(alias.name if alias.asname else bound, _MISSING)
            else:
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), self.module.__package__)
                bound = alias.asname or alias.name
                expected = getattr(sys.modules.get(base), alias.name, _MISSING)
                if expected is _MISSING:
                    expected = sys.modules.get(f"{base}.{alias.name}", _MISSING)
            if expected is _MISSING or self.ns.get(bound, _MISSING) is not expected:
                self.say(f"{bound} is not what its import gives")

    def spec(self, value: Any, call: ast.Call, at: str) -> None:
        import dataclasses

        from .ops.spec import OpSpec

        if type(value) is not OpSpec:
            self.say(f"{at} is {type(value).__name__}, not an OpSpec")
            return
        fields = dataclasses.fields(OpSpec)
        given = {f.name: arg for f, arg in zip(fields, call.args)}
        given.update({k.arg: k.value for k in call.keywords if k.arg})
        for f in fields:
            held = getattr(value, f.name, _MISSING)
            if f.name not in given:
                default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
                if held is not default and held != default:
                    self.say(f"{at}.{f.name} is not its default")
                continue
            expr = given[f.name]
            if isinstance(expr, ast.Name):
                if held is not self.ns.get(expr.id, _MISSING):
                    self.say(f"{at}.{f.name} is not {expr.id}")
            elif isinstance(expr, ast.Lambda):
                codes = self.file.lambdas.get(expr.lineno, [])
                if not (isinstance(held, types.FunctionType) and held.__globals__ is self.ns):
                    self.say(f"{at}.{f.name} is not the file's lambda")
                elif not any(held.__code__ == code for code in codes):
                    self.say(f"{at}.{f.name}'s code is not the file's")
            else:
                known, literal = _literal(expr)
                if not known:
                    continue  # an expression the file computes: not checked
                if held != literal or type(held) is not type(literal):
                    self.say(f"{at}.{f.name} is not {ast.unparse(expr)[:40]}")

    def assigned(self, node: ast.Assign | ast.AnnAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if len(targets) != 1 or not isinstance(targets[0], ast.Name) or node.value is None:
            return
        name, expr = targets[0].id, node.value
        held = self.ns.get(name, _MISSING)
        if isinstance(expr, ast.Tuple) and expr.elts and all(_is_spec_call(e) for e in expr.elts):
            if type(held) is not tuple or len(held) != len(expr.elts):
                self.say(f"{name} is not the file's {len(expr.elts)} specs")
                return
            for i, (value, call) in enumerate(zip(held, expr.elts)):
                assert isinstance(call, ast.Call)
                self.spec(value, call, f"{name}[{i}]")
            return
        known, literal = _literal(expr)
        if not known or not _hashable(literal):
            return  # computed, or a container the module fills as it runs: not checked
        if held != literal or type(held) is not type(literal):
            self.say(f"{name} is not {ast.unparse(expr)[:40]}")

    def check(self) -> list[str]:
        import linecache

        origin = getattr(self.module, "__file__", None)
        if not isinstance(origin, str) or _resolved(origin) != self.path:
            return [f"{self.name} was not imported from {self.path}"]
        # the lines Python's inspect reads a kernel's source from (the interpreter runs them; Triton's JIT compiles
        # them, read at import) are linecache's while its size and time are the file's
        for key in {origin, str(self.path)}:
            held = linecache.cache.get(key)
            if held is not None and len(held) == 4:
                info = self.path.stat()
                if (held[0], held[1]) == (info.st_size, info.st_mtime) and list(held[2]) != self.file.lines:
                    self.say(f"{self.path.name}'s lines in linecache are not the file's")
        for node in self.file.tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imported(node)
            elif isinstance(node, ast.FunctionDef):
                value = self.ns.get(node.name, _MISSING)
                if any(_is_jit(d) for d in node.decorator_list):
                    self.kernel(value, node)
                elif node.decorator_list:  # (functools.lru_cache): functools' cache of the function it wraps
                    # (any object with the file's function as its __wrapped__, functools.wraps' wrapper, calls other
                    # code: no decorator of these files makes anything but functools' own cached function)
                    if type(value) is not _CACHED:
                        self.say(f"{node.name} is {type(value).__name__}, not the cached function the file defines")
                    else:
                        self.function(value.__wrapped__, node.name, node.name, node)
                else:
                    self.function(value, node.name, node.name, node)
            elif isinstance(node, ast.ClassDef):
                self.klass(self.ns.get(node.name, _MISSING), node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                self.assigned(node)
        added = sorted(n for n in self.file.unbound if n in self.ns)
        added = [n for n in added if not isinstance(self.ns[n], types.ModuleType)]  # (a package's submodules)
        if added:
            self.say(f"{', '.join(added)} added (a name its code reads)")
        return self.problems

    def klass(self, value: Any, node: ast.ClassDef) -> None:
        if not isinstance(value, type) or value.__module__ != self.module.__name__ or value.__qualname__ != node.name:
            self.say(f"{node.name} is not the class the file defines")
            return
        for item in node.body:
            if not isinstance(item, ast.FunctionDef):
                continue
            raw = value.__dict__.get(item.name, _MISSING)
            if isinstance(raw, (staticmethod, classmethod)):
                raw = raw.__func__
            elif isinstance(raw, property):
                raw = raw.fget
            self.function(raw, f"{node.name}.{item.name}", f"{node.name}.{item.name}", item)


@functools.lru_cache(maxsize=4096)
def _is_spec_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func) == "OpSpec"


def running_kernels_problem() -> str | None:
    """Why the kernels this process would launch are not the code of the files of ``neurobrix/ops`` the tables are
    bound to (None: they are, or they are not imported yet, or a test allowed its patches: :func:`patched_kernels`).
    Each module imported is compared with its file (compiled once a process; the files are read again each time)."""
    if _ALLOWED:
        return None
    package = sys.modules.get("neurobrix.ops")
    if package is None:
        return None  # nothing imported, nothing to launch yet (Plan.ops checks again once it is)
    folder = Path(__file__).resolve().parent / "ops"
    problems: list[str] = []
    ours = sorted(k for k in sys.modules if k.startswith("neurobrix.ops.") or k == "neurobrix.ops")
    for dotted in ours:  # every module of neurobrix/ops imported (helpers too)
        module = sys.modules[dotted]
        rel = dotted.removeprefix("neurobrix.ops").lstrip(".").replace(".", "/")
        path = folder / (f"{rel}.py" if rel else "__init__.py")
        if not path.is_file():
            path = folder / rel / "__init__.py"  # a sub-package
        if not path.is_file():
            problems.append(f"{dotted.removeprefix('neurobrix.')} is a module of no file of neurobrix/ops")
            continue
        problems += _Module(dotted.removeprefix("neurobrix."), module, path).check()
        parent, _, leaf = dotted.rpartition(".")
        held = getattr(sys.modules.get(parent), leaf, module)
        if held is not module:
            problems.append(f"{dotted.removeprefix('neurobrix.')} is not the module imported as it")
    problems += _specs_problems(package)
    plan = sys.modules.get("neurobrix.plan")
    if plan is not None and getattr(plan, "certified", None) is not getattr(package, "certified", _MISSING):
        problems.append("plan.certified is not neurobrix.ops.certified")
    if not problems:
        return None
    shown = "; ".join(problems[:4]) + (f"; and {len(problems) - 4} more" if len(problems) > 4 else "")
    return (
        f"the kernels this process would launch are not the code of neurobrix/ops that the tables are bound to ("
        f"{shown}): something changed them after or before their import (a script, a .pth or sitecustomize file, a "
        "plugin), or a file of neurobrix/ops was edited since this program imported it. Run without that change"
    )


def _specs_problems(package: Any) -> list[str]:
    """``neurobrix.ops.SPECS`` against the op modules' own ``SPECS`` (each checked against its file)."""
    expected: dict[str, Any] = {}
    for name in getattr(package, "MODULES", ()):
        for spec in getattr(sys.modules.get(f"neurobrix.ops.{name}"), "SPECS", ()):
            expected[getattr(spec, "name", "?")] = spec
    held = getattr(package, "SPECS", None)
    if type(held) is not dict or list(held) != sorted(expected):
        return ["ops.SPECS does not hold the op modules' specs"]
    return [f"ops.SPECS[{k!r}] is not {k}'s spec" for k, spec in held.items() if spec is not expected[k]]


def ops_problem(ops: Any) -> str | None:
    """Why a plan's ops (``neurobrix.ops.certified``'s, a model's ``model.ops``) would launch other code than the
    kernels of ``neurobrix/ops`` (None: they would not): :func:`running_kernels_problem`, and each op function of
    ``ops`` is the one ``certified`` made, calling its spec's launcher."""
    problem = running_kernels_problem()
    if problem or _ALLOWED:
        return problem
    from .ops import SPECS, certified

    made = next(c for c in certified.__code__.co_consts if isinstance(c, types.CodeType) and c.co_name == "make")
    op = next(c for c in made.co_consts if isinstance(c, types.CodeType) and c.co_name == "op")
    wrong = []
    for name, spec in SPECS.items():
        fn = vars(ops).get(name)
        if not isinstance(fn, types.FunctionType) or fn.__code__ is not op:
            wrong.append(name)
            continue
        cells = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))
        if cells.get("launch") is not spec.launch or cells.get("key_of") is not spec.key_of:
            wrong.append(name)
    if not wrong:
        return None
    return (
        f"this model's ops {', '.join(wrong)} are not the certified kernels' (replaced on the model's ops after it "
        "was loaded): they would launch code no table was proven on. Load the model again without that change"
    )
