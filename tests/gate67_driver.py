"""Gate round 67's runs (not a test file): each case of tests/gate67_cases.py run through ``python -m gate build``.

    python tests/gate67_driver.py BASE OUT.json [CASE ...]

BASE is a clean git copy of this checkout (``test_gate_round42._git_copy``). Per case, a clone of it
(:func:`gate67_cases.prepare`) runs its own gate, ``python -m gate build --outdir DIST --no-smoke`` (``G67_SMOKE=1``:
smoke included), in a process of its own that makes the case's edit and undoes it at the case's moments: ``A`` as the
gate calls its build (``gate.build.build_project``, which runs ``python -m build --no-isolation``, build 1.6.1 with
hatchling 1.33.0), ``B`` when the sdist appears in DIST (build writes it there, then builds the wheel from it), ``C``
as that call returns, ``D`` as the gate compares the dists' versions (``gate.checker._check_versions``, after every
static check). Recorded: the gate's exit code and last lines, the moments each edit met, and the two files against
the clean clone's own ``python -m build``: the wheel's files under ``neurobrix/`` (bytes and executable bit) and its
METADATA, the sdist's files and their bytes.

As a pytest plugin (``-p gate67_driver``) it removes, for the whole run, the checks ``G67_PLANT`` names (``PLANTS``,
comma-separated; each function compiled again with its edit, as tests/gate66_removed.py does), to show which check
holds each case: ``G67_PLANT=judged PYTHONPATH=$PWD:$PWD/tests python -m pytest -p gate67_driver
tests/test_gate_round67.py``.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))

from gate67_cases import CASES, CONTROLS, prepare, short  # noqa: E402

RUNNER = """
import json, sys, threading, time
from pathlib import Path
sys.path.insert(0, {tests!r})
from gate67_cases import CASES, CONTROLS
import gate.checker as checker
import gate.cli as cli

case = {{**CASES, **CONTROLS}}[{name!r}]
tree = Path.cwd()
met = []

def act(moment):
    if case.at == moment:
        case.change.do(tree)
        met.append("made at " + moment)
    if case.until == moment:
        case.change.undo(tree)
        met.append("undone at " + moment)

real_build, real_versions = cli.build_project, checker._check_versions

def build(source, outdir, **kw):
    act("A")
    stop = threading.Event()
    def watch():
        while not stop.is_set():
            if any(outdir.glob("*.tar.gz")):
                act("B")
                return
            time.sleep(0.002)
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        return real_build(source, outdir, **kw)
    finally:
        stop.set()
        watcher.join()
        act("C")

def versions(*args, **kw):
    act("D")
    return real_versions(*args, **kw)

cli.build_project, checker._check_versions = build, versions
argv = ["build", "--outdir", {out!r}] + ([] if {smoke!r} else ["--no-smoke"])
try:
    code = cli.main(argv)
except SystemExit as exc:
    code = exc.code
print("G67 " + json.dumps({{"exit": code, "met": met}}))
"""


# name -> [(module, function, its source as it is, as planted)]
PLANTS: dict[str, list[tuple[str, str, str, str]]] = {
    "judged": [  # the round's check: the tracked list and bytes judged against held to the commit's
        ("gate.checker", "_judged_the_commit", "otherwise = judged_otherwise(repo, state.commit)", "otherwise = []")
    ],
    "top files": [  # the round's copies: pyproject.toml and the top's files the backend is given, recorded
        ("gate.repository", "_declared", 'judged["pyproject.toml"] = _blob_id(data, length)', "pass"),
        (
            "gate.repository",
            "_top_of_tree",
            "_read_judged(root, top, judged, length)",
            "_read_judged(root, top, {}, length)",
        ),
    ],
    "sticky": [  # the round's mark for a path read twice with other bytes (the last reading kept instead)
        (
            "gate.repository",
            "_read_judged",
            "judged[path] = oid if judged.get(path, oid) == oid else _READ_OTHERWISE",
            "judged[path] = oid",
        )
    ],
    "end": [  # the tree's state read again at the end (`python -m gate`'s _finish)
        ("gate.cli", "_finish", "        if now != report.repository:", "        if False:")
    ],
    "bytes": [  # G109: a package file's bytes or executable bit not the repository's
        ("gate.layout", "check_layout", "elif actual is not None and actual != expected:", "elif False:"),
        ("gate.layout", "check_layout", "        if member.executable != executable:", "        if False:"),
    ],
    "allow-list": [  # G107: a wheel member outside the allow-list
        ("gate.layout", "check_layout", 'if not member.name.startswith(f"{WHEEL_DIR}/"):', "if False:")
    ],
}


def plant(names: list[str]) -> None:
    """Remove the checks ``names`` name: each function compiled again with its edits, in its module."""
    edits: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for name in names:
        for module_name, function, old, new in PLANTS[name]:
            edits.setdefault((module_name, function), []).append((old, new))
    for (module_name, function), pairs in edits.items():
        module = importlib.import_module(module_name)
        target = getattr(module, function)
        source = inspect.getsource(target)
        for old, new in pairs:
            assert source.count(old) == 1, (function, old)
            source = source.replace(old, new)
        fresh: dict[str, object] = {}
        exec(compile(source, module.__file__ or module_name, "exec"), module.__dict__, fresh)
        target.__code__ = fresh[function].__code__


def pytest_configure(config: object) -> None:
    """As a pytest plugin: the plants ``G67_PLANT`` names, comma-separated, for the whole run."""
    if os.environ.get("G67_PLANT"):
        plant(os.environ["G67_PLANT"].split(","))


def _wheel(folder: Path) -> dict[str, object]:
    wheels = sorted(folder.glob("*.whl"))
    if len(wheels) != 1:
        return {"wheel": [p.name for p in wheels]}
    with zipfile.ZipFile(wheels[0]) as z:
        files = {
            i.filename: (hashlib.sha256(z.read(i)).hexdigest(), bool((i.external_attr >> 16) & 0o100))
            for i in z.infolist()
            if i.filename.startswith("neurobrix/")
        }
        meta = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = hashlib.sha256(z.read(meta[0])).hexdigest() if meta else None
    return {"name": wheels[0].name, "files": files, "metadata": metadata}


def _sdist(folder: Path) -> dict[str, object]:
    sdists = sorted(folder.glob("*.tar.gz"))
    if len(sdists) != 1:
        return {"sdist": [p.name for p in sdists]}
    with tarfile.open(sdists[0]) as t:
        files = {
            m.name.split("/", 1)[1]: (hashlib.sha256(t.extractfile(m).read()).hexdigest(), bool(m.mode & 0o100))
            for m in t.getmembers()
            if m.isfile()
        }
    return {"name": sdists[0].name, "files": files}


def _against(seen: dict[str, object], reference: dict[str, object]) -> str:
    """'as committed' where the product's files are the clean clone's build's, else what differs."""
    if "files" not in seen:
        return f"not built: {seen}"
    ours, theirs = seen["files"], reference["files"]
    assert isinstance(ours, dict) and isinstance(theirs, dict)
    added = sorted(ours.keys() - theirs.keys())
    missing = sorted(theirs.keys() - ours.keys())
    other = sorted(p for p in ours.keys() & theirs.keys() if ours[p] != theirs[p])
    parts = [f"added {added}"] * bool(added) + [f"missing {missing}"] * bool(missing) + [f"other {other}"] * bool(other)
    if seen.get("metadata") != reference.get("metadata"):
        parts.append("other METADATA")
    if seen["name"] != reference["name"]:
        parts.append(f"named {seen['name']}")
    return "; ".join(parts) or "as committed"


def run(base: Path, name: str, reference: dict[str, dict[str, object]], smoke: bool) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="g67-") as tmp:
        tree = prepare(base, Path(tmp))
        out = Path(tmp) / "dist"
        code = RUNNER.format(tests=str(TESTS), name=name, out=str(out), smoke=smoke)
        env = {**os.environ, "PYTHONPATH": str(tree)}
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True, timeout=1200
        )
        lines = (result.stdout + result.stderr).strip().splitlines()
        outcome = next((json.loads(line[4:]) for line in lines if line.startswith("G67 ")), {"exit": None, "met": []})
        said = [line for line in lines if not line.startswith("G67 ")]
        return {
            **outcome,
            "wheel": _against(_wheel(out), reference["wheel"]),
            "sdist": _against(_sdist(out), reference["sdist"]),
            "said": [short(line) for line in said[-6:]],
        }


def main() -> None:
    base, report = Path(sys.argv[1]), Path(sys.argv[2])
    names = sys.argv[3:] or [*CASES, *CONTROLS]
    smoke = os.environ.get("G67_SMOKE") == "1"
    with tempfile.TemporaryDirectory(prefix="g67-ref-") as tmp:
        tree = prepare(base, Path(tmp))
        out = Path(tmp) / "dist"
        subprocess.run(
            [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(tree)],
            check=True,
            capture_output=True,
        )
        reference = {"wheel": _wheel(out), "sdist": _sdist(out)}
    results = json.loads(report.read_text()) if report.exists() else {}
    for name in names:
        results[name] = run(base, name, reference, smoke)
        print(name, json.dumps(results[name]), flush=True)
        report.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
