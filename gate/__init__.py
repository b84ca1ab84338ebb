"""The NeuroBrix release gate: refuse any wheel or sdist that is not exactly what this repository ships.

Run as ``python -m gate check DIST...`` or ``python -m gate build`` from a source checkout (the gate
is not shipped). Modules, in the order a run uses them:

``checks``      the check codes (G001...G704), a finding, the cap on findings, the limits, the input error
``names``       member names judged from their bytes, and where they land on each file system (G301-G303, G310)
``zipstrict``   the strict zip reader: one reading or a refusal (G311-G314), capped inflation
``tarstrict``   the strict tar reader: ustar files and folders only, nothing after the end (G311-G314)
``archive``     opening a wheel or sdist strictly; member names, types and sizes (G3xx)
``yamlsafe``    YAML bounded before it is built: no anchors or aliases, a size and a depth cap
``backend``     the build backend run in isolation (the repository's metadata, a wheel from an sdist)
``repository``  what the repository ships: the files git tracks, what pyproject.toml declares
``completeness`` the tables and the tracked list inside an archive against the reference (G1xx, G5xx)
``layout``      where an installer writes each wheel member, against the allow-list (G107-G109)
``metadata``    core metadata, WHEEL and entry points against pyproject.toml (G404, G406-G408, G601)
``wheel``       a wheel's checks: layout, RECORD (G2xx), metadata, tables, ``__version__``
``sdist``       an sdist's layout, its files against the repository (G507, G509), the rebuild (G508)
``tools``       twine check --strict and check-wheel-contents, folded in (G401-G403)
``smoke``       install the wheel with pip, hash what it wrote, run ``neurobrix tables verify`` (G7xx)
``checker``     one run over all dists; versions across them (G602, G603); folders (G001-G003)
``report``      text and JSON reports with one verdict
``build``       ``python -m build`` into a fresh folder
``cli``         ``main(argv)``
"""

import os as _os
import sys as _sys
from importlib.machinery import all_suffixes as _all_suffixes  # loaded before any module of a run's path

# The entries at the repository's top that import as code, each tracked (tests/test_gate_round45.py holds this to git).
TOP_MODULES = frozenset({"benchmarks", "conformance", "gate", "neurobrix"})


def shadowing(root: str) -> list[str]:
    """The entries at the top of ``root`` that import as a module (a ``.py``, ``.pyc`` or extension file, a folder
    with an ``__init__``) and are none of :data:`TOP_MODULES`."""
    suffixes = tuple(_all_suffixes())
    found = []
    try:
        names = sorted(_os.listdir(root))
    except OSError:
        return []
    for name in names:
        path = _os.path.join(root, name)
        if _os.path.isdir(path):
            try:
                inside = _os.listdir(path)
            except OSError:
                continue
            module = name if any(f"__init__{s}" in inside for s in suffixes) else ""
        else:
            module = name.split(".", 1)[0] if name.endswith(suffixes) else ""
        if module and module not in TOP_MODULES:
            found.append(name)
    return found


def _refuse_shadowing() -> None:
    """Under ``python -m gate``, before the gate imports anything: the checkout's top is first on ``sys.path`` (and an
    editable install puts it there too), so a module there that the repository does not hold, written by a build step
    run in the same checkout or left there, runs inside the gate under the name of a module the gate imports, ahead of
    the standard library and the installed packages (round 44 showed an untracked ``packaging.py`` exiting 0 before
    any check). No check made after the import could be trusted, so the run stops here, one line, exit 2."""
    root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
    on_path = {_os.path.realpath(entry or _os.getcwd()) for entry in _sys.path if isinstance(entry, str)}
    if _os.path.realpath(root) not in on_path:
        return
    found = shadowing(root)
    if found:
        # each name as the report prints one (gate round 49: they were printed raw, a file name's line feed or escape
        # sequence into the log, a `##[debug]` making the line a runner's command), with no import: nothing is trusted
        names = ", ".join(
            (n if n.isascii() and n.isprintable() else ascii(n)[1:-1]).replace("##", "#\\x23") for n in found
        )
        print(
            f"gate: error: {root}: {names}: code the repository does not hold, imported in place of any module of that "
            "name the gate or its tools import (the checkout's top is on sys.path); remove it and run the gate again. "
            "Nothing was passed",
            file=_sys.stderr,
        )
        raise SystemExit(2)


if _sys.argv[:1] == ["-m"]:  # python -m gate, while the package is imported (runpy's mark)
    _refuse_shadowing()
