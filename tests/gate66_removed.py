"""Gate round 66's removals (not a test file): checks of the gate removed, to show which holds each case of
tests/gate66_cases.py.

    python tests/gate66_driver.py holds BASE [PLANT[,PLANT...] ...]

builds every case once (hatchling in this process, as tests/test_gate_round66.py does), then, for each argument (plants
comma-separated are removed together), judges each case's wheel and sdist alone with those checks removed, restores
them, and prints per case the codes and whether a product then passes. The test file runs under the same plants with
the driver as a pytest plugin: ``G66_PLANT="links" PYTHONPATH=$PWD:$PWD/tests python -m pytest -p gate66_driver
tests/test_gate_round66.py``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import CodeType

# name -> [(module, function, its source as it is, as planted)]: the function alone is compiled again in its module
PLANTS: dict[str, list[tuple[str, str, str, str]]] = {
    "links": [  # the round's fix: a tracked link or submodule under neurobrix/ named (G108, G509)
        (
            "gate.layout",
            "check_layout",
            "    for path, what in repo.package_links().items():",
            "    for path, what in {}.items():",
        ),
        (
            "gate.sdist",
            "_check_sources",
            "    for rel, what in repo.package_links().items():",
            "    for rel, what in {}.items():",
        ),
    ],
    "missing": [  # G108: a tracked package file missing from the wheel; G509: one missing from the sdist
        ("gate.layout", "check_layout", "        if path not in wheel.files and not", "        if False and not"),
        ("gate.sdist", "_check_sources", '        if f"{root}/{rel}" not in sdist.files:', "        if False:"),
    ],
    "allow-list": [  # G107: a wheel member outside the allow-list
        ("gate.layout", "check_layout", 'if not member.name.startswith(f"{WHEEL_DIR}/"):', "if False:")
    ],
    "untracked sources": [  # G509: an sdist file git does not track
        ("gate.sdist", "_check_sources", "        if rel not in repo.tracked:", "        if False:")
    ],
    "link members": [  # G304
        ("gate.archive", "_safety", 'if m.kind in ("symlink", "hardlink", "other"):', "if False:")
    ],
    "untracked tables": [  # G104, G504
        ("gate.completeness", "table_findings", "if name.startswith(prefix) and name not in listed", "if False")
    ],
    "rebuild": [("gate.sdist", "check_rebuild", "    root = root_of(sdist)\n", "    return\n")],  # G508
    "top links": [  # the metadata prepared from the tree's top entries, a link to a folder followed as one
        ("gate.repository", "_top_of_tree", "kind = os.lstat(source).st_mode", "kind = os.stat(source).st_mode")
    ],
    "tree bytes": [  # the tree's state: a tracked file's bytes hashed as they are (no filter)
        (
            "gate.repository",
            "_differs_from",
            "            return _blob_id(file.read_bytes(), len(oid)) != oid",
            "            return False",
        )
    ],
}


def plant(names: list[str]) -> Callable[[], None]:
    """Remove the checks ``names`` name (each function compiled again with its edits); the undoing, returned."""
    edits: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for name in names:
        for module_name, function, old, new in PLANTS[name]:
            edits.setdefault((module_name, function), []).append((old, new))
    saved: list[tuple[object, CodeType]] = []
    for (module_name, function), pairs in edits.items():  # every edit of one function at once
        module = importlib.import_module(module_name)
        target = getattr(module, function)
        source = inspect.getsource(target)
        for old, new in pairs:
            assert source.count(old) == 1, (function, old)
            source = source.replace(old, new)
        fresh: dict[str, object] = {}
        exec(compile(source, module.__file__ or module_name, "exec"), module.__dict__, fresh)
        saved.append((target, target.__code__))
        target.__code__ = fresh[function].__code__  # type: ignore[attr-defined]

    def undo() -> None:
        for target, code in saved:
            target.__code__ = code  # type: ignore[attr-defined]

    return undo


def holds(base: Path, arguments: list[str]) -> None:
    from gate66_cases import CASES, CONTROLS, make
    from test_gate_round66 import _build, _codes

    from gate.repository import load_repository

    with tempfile.TemporaryDirectory(prefix="g66-holds-") as tmp:
        built = {}
        for number, case in enumerate([*CASES, *CONTROLS]):
            tree = make(base, Path(tmp) / f"case{number}", case)
            built[case] = (tree, _build(tree, Path(tmp) / f"case{number}" / "dist"))
        for argument in ["", *arguments]:
            names = [n for n in argument.split(",") if n]
            undo = plant(names)
            seen = {}
            for case, (tree, dists) in built.items():
                load_repository.cache_clear()
                codes = {kind: _codes(tree, dist) for kind, dist in dists.items()}
                seen[case] = {kind: ["(none built)"] if c is None else sorted(c) for kind, c in codes.items()}
            undo()
            passing = [c for c in CASES if any(v == [] for v in seen[c].values())]
            print(json.dumps({"removed": names, "a product passes": passing, "codes": seen}), flush=True)
