"""The kernel code a certified setting was proven on: :func:`kernel_source`, a digest of the ``neurobrix/ops`` files a
kernel's calls run, which a table's provenance names (``kernel_source``) and its index states (``stack.source``).

Read from the files' syntax trees alone, importing nothing (no torch, no Triton): ``tables verify`` and the release
gate's smoke bind tables to the code they ship without loading the kernels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple, NoReturn

from .errors import CompilerStackError, UsageError

__all__ = ["AWAITING_REPROOF", "declared_kernels", "kernel_source", "kernel_source_files", "require_kernel_sources"]

# The shipped tables proven before proofs were bound to their kernel's code (2026-12-06) whose re-proof on their GPU
# is still to run, (class, kernel): each of the others was re-proven then, on an H200 (benchmarks/results/2026-12-06c).
# While its index records no code at all, such a table is run with a note saying so (neurobrix.stack.sources_pending);
# bound to other code, it is refused as any table is, and so is every other table bound to none. The tests hold each
# listed table to being unbound still, so the list only shrinks: remove a pair once `check --record` has bound it.
AWAITING_REPROOF = frozenset({("nvidia-h200", "rotary")})


def declared_kernels() -> frozenset[str]:
    """The kernels this neurobrix's ``neurobrix/ops`` declares (``OpSpec("<kernel>", ...)`` in the files an import of
    the package runs), read from the sources; refused as :func:`kernel_source_files` refuses code the syntax trees
    cannot bind (an op whose name is not written out would otherwise hide its kernel, whose tables the binding would
    then pass by). A table of another kernel (one a later release retired) holds settings nothing launches: no code
    of this neurobrix to bind it to, so the binding passes it by (it ended ``doctor``, ``run`` and ``tables verify``
    in "unknown kernel", exit 2, a kernel the user never named)."""
    folder = Path(__file__).resolve().parent / "ops"
    _own, runs = _package(folder)
    return frozenset(k for name in runs for k in _read_source(folder / name).specs)


def _package(folder: Path) -> tuple[set[str], set[str]]:
    """(the op modules ``MODULES`` names, as files; every file an import of the package runs), once the sources are
    found readable by their syntax trees; refused (UsageError, or CompilerStackError for a source missing) otherwise."""
    init = _read_source(folder / "__init__.py")
    if init.modules is None:
        raise UsageError(
            "neurobrix/ops/__init__.py: MODULES is not one tuple of module names written out, assigned once (the "
            'kernel code a table is bound to is read from the sources): write it as MODULES = ("<op>", ...)'
        )
    modules = init.modules
    twice = sorted({m for m in modules if modules.count(m) > 1})
    if twice:
        raise UsageError(f"neurobrix/ops/__init__.py: MODULES names {', '.join(twice)} twice")
    for m in modules:  # a module the engine imports without its source: a damaged install (exit 6, as run says)
        if not (folder / f"{m}.py").is_file():
            _damaged(folder / f"{m}.py", "No such file or directory: neurobrix/ops/__init__.py's MODULES names it")
    own = {f"{m}.py" for m in modules}
    # every file an import of the package runs: where an op may be declared (a file nothing imports never runs)
    runs = _reached(folder, ["__init__.py", "_common.py", "spec.py", *sorted(own)], skip=set())
    for name in sorted(runs):
        line = _read_source(folder / name).unnamed
        if line:
            raise UsageError(
                f"neurobrix/ops/{name} line {line}: an OpSpec whose name is not written out as a string; the kernel "
                "code a table is bound to is read from the sources: name each op by a literal"
            )
    return own, runs


def kernel_source_files(kernel: str) -> tuple[str, ...]:
    """The files of ``neurobrix/ops`` whose code runs a call of ``kernel``: the module declaring its spec, the files of
    ``neurobrix/ops`` it imports (transitively: ``pick`` takes ``linear``'s counters; a helper module no ``MODULES``
    names, a sub-package, an import written absolutely, ``neurobrix.ops.linear``, all count) and what every op shares
    (``__init__.py``, the launch wrapper, with the helpers it imports; ``_common.py``; ``spec.py``). Whole files: a
    kernel's proof stands for every line its launcher and its Triton functions could reach, so an edit anywhere in
    them unbinds it. Read from the files' syntax trees, importing nothing (``tables verify`` binds tables without
    torch): the module whose ``OpSpec("<kernel>", ...)`` (or ``OpSpec(name="<kernel>", ...)``) declares it among those
    ``MODULES`` names (the tests hold this to the imported specs' launchers). Refused (:class:`UsageError`), as code
    the syntax trees cannot bind: a ``MODULES`` not written out as one tuple of names, a module named twice or without
    its source file, an ``OpSpec`` whose name is not written out, a kernel declared in two files or outside
    ``MODULES``."""
    folder = Path(__file__).resolve().parent / "ops"
    own, runs = _package(folder)
    declared = [name for name in runs if kernel in _read_source(folder / name).specs]
    if not declared:
        known = sorted({k for name in runs for k in _read_source(folder / name).specs})
        raise UsageError(f"unknown kernel {kernel!r}; kernels: {', '.join(known)}")
    if len(declared) > 1 or declared[0] not in own:
        raise UsageError(
            f"kernel {kernel!r} is declared in neurobrix/ops/{' and '.join(declared)}: an op is declared once, in its "
            "module among neurobrix.ops.MODULES"
        )
    # the package's __init__.py holds the wrapper every launch goes through; the op modules it imports for the model
    # (rotary's cache) are no part of another kernel's launch, so those of its imports are not followed
    return tuple(sorted(_reached(folder, ["__init__.py", declared[0], "_common.py", "spec.py"], skip=own)))


def _reached(folder: Path, start: list[str], skip: set[str]) -> set[str]:
    """``start`` and the files of ``neurobrix/ops`` their imports run, transitively; ``__init__.py``'s imports of a
    file in ``skip`` not followed."""
    found: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        imported = _imported_files(folder, name)
        todo += [f for f in imported if not (name == "__init__.py" and f in skip)]
    return found


def _imported_files(folder: Path, name: str) -> list[str]:
    """The files of ``neurobrix/ops`` (relative paths) that the imports of its file ``name`` run: a module's source,
    or a package's ``__init__.py`` and each package's above it, whether the import is relative or absolute."""
    package = ["neurobrix", "ops", *name.split("/")[:-1]]
    files: list[str] = []
    for level, module, names in _read_source(folder / name).imports:
        if level - 1 > len(package):
            continue
        base = package[: len(package) - (level - 1)] if level else []
        target = base + (module.split(".") if module else [])
        for path in [target, *(target + [n] for n in names if n != "*")]:
            if path[:2] != ["neurobrix", "ops"]:
                continue
            rest = path[2:]
            for depth in range(1, len(rest) + 1):
                here = folder.joinpath(*rest[:depth])
                if (here / "__init__.py").is_file():
                    files.append("/".join([*rest[:depth], "__init__.py"]))
                elif depth == len(rest) and here.with_name(f"{rest[-1]}.py").is_file():
                    files.append("/".join(rest[:-1] + [f"{rest[-1]}.py"]))
    return files


class _Source(NamedTuple):
    digest: bytes  # the sha256 of the file's canonical text
    imports: tuple[tuple[int, str | None, tuple[str, ...]], ...]  # (level, module, names) of each import
    modules: tuple[str, ...] | None  # the names of its one ``MODULES = (...)``; None: assigned otherwise or again
    specs: tuple[str, ...]  # the kernels its ``OpSpec("<name>", ...)`` calls declare
    unnamed: int  # the line of an ``OpSpec`` call whose name is not a string written out (0: none)


# (file, sha256 of its bytes) -> what _read_source reads of it: each file's content parsed once a process (keyed by
# content, not by mtime and size: an edit of the same size within one mtime tick reads as the edit)
_SOURCES_READ: dict[tuple[str, bytes], _Source] = {}


def _read_source(path: Path) -> _Source:
    """What the syntax tree of ``path`` says: its digest, imports, ``MODULES`` and declared kernels."""
    import ast
    import hashlib

    try:
        data = path.read_bytes()
        key = (str(path), hashlib.sha256(data).digest())
        # parsed from its bytes, as Python's import reads a source (a BOM, a coding line): a file import would load
        # is read so here, and one it would refuse (not UTF-8, a syntax error, a null byte) is refused here too
        tree = ast.parse(data, str(path)) if key not in _SOURCES_READ else None
    except OSError as exc:  # missing, unreadable, a folder in its place
        _damaged(path, exc.strerror or str(exc))
    except SyntaxError as exc:  # (what import raises too, for a byte that is not UTF-8 among them)
        _damaged(path, f"line {exc.lineno}: {exc.msg}" if exc.lineno else exc.msg)
    except ValueError as exc:  # a null byte (Python 3.11; 3.12 raises SyntaxError)
        _damaged(path, str(exc))
    if tree is not None:
        imports: list[tuple[int, str | None, tuple[str, ...]]] = []
        bindings: list[ast.AST] = []
        specs: list[str] = []
        unnamed = 0
        callers = {"OpSpec"}  # the name OpSpec, and any it is imported as
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                imports.append((node.level, node.module, tuple(a.name for a in node.names)))
                callers |= {a.asname for a in node.names if a.name == "OpSpec" and a.asname}
            elif isinstance(node, ast.Import):
                imports += [(0, a.name, ()) for a in node.names]
            elif isinstance(node, ast.Name) and node.id == "MODULES" and not isinstance(node.ctx, ast.Load):
                bindings.append(node)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Name) and node.func.id in callers)
                or (isinstance(node.func, ast.Attribute) and node.func.attr == "OpSpec")
            ):
                named = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
                if isinstance(named, ast.Constant) and isinstance(named.value, str):
                    specs.append(named.value)
                elif not unnamed:
                    unnamed = node.lineno
        modules: tuple[str, ...] | None = None
        assigned = [
            n
            for n in tree.body
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and n.targets[0].id == "MODULES"
        ]
        if len(bindings) == 1 and len(assigned) == 1:
            value = assigned[0].value
            if isinstance(value, ast.Tuple) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
            ):
                modules = tuple(e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
        text = _canonical(tree)
        _SOURCES_READ[key] = _Source(
            hashlib.sha256(text.encode()).digest(), tuple(imports), modules, tuple(specs), unnamed
        )
    return _SOURCES_READ[key]


def _damaged(path: Path, why: str) -> NoReturn:
    """Refuse kernels whose source cannot be read as Python: the code a run would load is none a table was proven on,
    and the engine cannot import it (a file missing, unreadable, not UTF-8, with a syntax error: a damaged install or
    an edit left half done). One line, exit 6, where ``tables verify``, ``doctor`` and ``run`` ended in a traceback."""
    from . import __version__

    raise CompilerStackError(
        f"the kernel source {path} cannot be read as Python ({why}): this neurobrix's kernels are damaged, so no "
        f"certified setting can run on them. Reinstall it (pip install --force-reinstall --no-deps "
        f"neurobrix=={__version__}), or in a source checkout restore the file (git diff, git checkout)"
    )


def require_kernel_sources() -> None:
    """Refuse (CompilerStackError, exit 6) kernels whose sources cannot be read as Python, before ``neurobrix.ops`` is
    imported (where the same file ended the command in a SyntaxError or ModuleNotFoundError traceback): every file of
    ``neurobrix/ops`` the engine imports (its ``MODULES``, ``_common.py``, ``spec.py``, ``__init__.py``). The files
    are parsed once a process: the digests that bind the tables read them again for nothing."""
    folder = Path(__file__).resolve().parent / "ops"
    modules = _read_source(folder / "__init__.py").modules or ()
    for name in ("_common.py", "spec.py", *(f"{m}.py" for m in modules)):
        _read_source(folder / name)


def _canonical(node: Any) -> str:
    """A text of a Python syntax tree that changes exactly when its code does: no comment, docstring, line number or
    layout in it, and no field Python leaves empty (``ast.dump`` writes those differently from one Python release to
    the next: 3.13 drops empty lists and None; this is the project's own so that the digest a GPU's Python wrote
    reads the same on the CI's)."""
    import ast

    if isinstance(node, ast.AST):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node = type(node)(**{**dict(ast.iter_fields(node)), "body": body[1:]})  # its docstring dropped
        fields = [
            f"{name}={_canonical(value)}"
            for name, value in ast.iter_fields(node)
            if value is not None and value != [] and name not in ("kind", "type_comment")
        ]
        return f"{type(node).__name__}({','.join(fields)})"
    if isinstance(node, list):
        return "[" + ",".join(_canonical(item) for item in node) + "]"
    return repr(node)


def kernel_source(kernel: str) -> str:
    """The digest of ``kernel``'s code (:func:`kernel_source_files`, each file's syntax tree as :func:`_canonical`
    writes it, with its name): 16 hex digits of a sha256. A table's proofs were made on the code of this digest
    (its provenance's ``kernel_source``, its index's ``stack.source``); the engine runs them on no other code. A
    comment, a docstring or a blank line does not change it; any statement, name or constant does."""
    import hashlib

    folder = Path(__file__).resolve().parent / "ops"
    digest = hashlib.sha256()
    for name in kernel_source_files(kernel):
        digest.update(name.encode() + b"\0" + _read_source(folder / name)[0])
    return digest.hexdigest()[:16]
