"""The kernel code a certified setting was proven on: :func:`kernel_source`, a digest of the ``neurobrix/ops`` files a
kernel's calls run, which a table's provenance names (``kernel_source``) and its index states (``stack.source``).

Read from the files' syntax trees alone, importing nothing (no torch, no Triton): ``tables verify`` and the release
gate's smoke bind tables to the code they ship without loading the kernels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

from .errors import CompilerStackError, UsageError

__all__ = ["declared_kernels", "kernel_source", "kernel_source_files", "require_kernel_sources"]


def declared_kernels() -> frozenset[str]:
    """The kernels this neurobrix's ``neurobrix/ops`` declares (``OpSpec("<kernel>", ...)`` in its ``MODULES``), read
    from the sources. A table of another kernel (one a later release retired) holds settings nothing launches: no
    code of this neurobrix to bind it to, so the binding passes it by (it ended ``doctor``, ``run`` and ``tables
    verify`` in "unknown kernel", exit 2, a kernel the user never named)."""
    folder = Path(__file__).resolve().parent / "ops"
    return frozenset(k for m in _read_source(folder / "__init__.py")[2] for k in _read_source(folder / f"{m}.py")[3])


def kernel_source_files(kernel: str) -> tuple[str, ...]:
    """The files of ``neurobrix/ops`` whose code runs a call of ``kernel``: the module declaring its spec, the op
    modules it imports (by relative import, transitively: ``pick`` takes ``linear``'s counters) and what every op
    shares (``__init__.py``, the launch wrapper; ``_common.py``; ``spec.py``). Whole files: a kernel's proof stands
    for every line its launcher and its Triton functions could reach, so an edit anywhere in them unbinds it. Read
    from the files' syntax trees, importing nothing (``tables verify`` binds tables without torch): the module whose
    ``OpSpec("<kernel>", ...)`` declares it among those ``MODULES`` names (the tests hold this to the imported
    specs' launchers)."""
    folder = Path(__file__).resolve().parent / "ops"
    modules = _read_source(folder / "__init__.py")[2]
    sources = {"__init__.py", "_common.py", "spec.py", *(f"{m}.py" for m in modules)}
    declared = [m for m in modules if kernel in _read_source(folder / f"{m}.py")[3]]
    if len(declared) != 1:
        known = sorted(k for m in modules for k in _read_source(folder / f"{m}.py")[3])
        raise UsageError(f"unknown kernel {kernel!r}; kernels: {', '.join(known)}")
    # the package's __init__.py holds the wrapper every launch goes through; what it imports for the model (rotary's
    # cache) is no part of another kernel's launch, so its own imports are not followed
    found, todo = {"__init__.py"}, [f"{declared[0]}.py", "_common.py", "spec.py"]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        todo += [f"{m}.py" for m in _read_source(folder / name)[1] if f"{m}.py" in sources]
    return tuple(sorted(found))


# (file, mtime, size) -> what _read_source reads of it: each file parsed once a process
_SOURCES_READ: dict[tuple[str, int, int], tuple[bytes, tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {}


def _read_source(path: Path) -> tuple[bytes, tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(the sha256 of the file's canonical text, the sibling modules it imports, the names of a ``MODULES = (...)``
    it assigns, the kernels its ``OpSpec("<name>", ...)`` calls declare)."""
    import ast
    import hashlib

    try:
        facts = path.stat()
        key = (str(path), facts.st_mtime_ns, facts.st_size)
        # parsed from its bytes, as Python's import reads a source (a BOM, a coding line): a file import would load
        # is read so here, and one it would refuse (not UTF-8, a syntax error, a null byte) is refused here too
        tree = ast.parse(path.read_bytes(), str(path)) if key not in _SOURCES_READ else None
    except OSError as exc:  # missing, unreadable, a folder in its place
        _damaged(path, exc.strerror or str(exc))
    except SyntaxError as exc:  # (what import raises too, for a byte that is not UTF-8 among them)
        _damaged(path, f"line {exc.lineno}: {exc.msg}" if exc.lineno else exc.msg)
    except ValueError as exc:  # a null byte (Python 3.11; 3.12 raises SyntaxError)
        _damaged(path, str(exc))
    if tree is not None:
        siblings: list[str] = []
        modules: list[str] = []
        specs: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                siblings += [node.module.partition(".")[0]] if node.module else [a.name for a in node.names]
            elif (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "MODULES" for t in node.targets)
                and isinstance(node.value, ast.Tuple)
            ):
                modules += [
                    e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
                ]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "OpSpec"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                specs.append(node.args[0].value)
        text = _canonical(tree)
        _SOURCES_READ[key] = (hashlib.sha256(text.encode()).digest(), tuple(siblings), tuple(modules), tuple(specs))
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
    for name in ("__init__.py", "_common.py", "spec.py", *(f"{m}.py" for m in _read_source(folder / "__init__.py")[2])):
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
