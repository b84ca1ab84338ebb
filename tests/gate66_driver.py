"""Gate round 66's runs (not a test file): each hostile tree of tests/gate66_cases.py built by the real front ends,
then both products judged by the gate of that tree.

    python tests/gate66_driver.py BASE OUT.json [CASE ...]

BASE is a clean git copy of this checkout (``test_gate_round42._git_copy``). Each case is a clone of it made hostile
(:func:`gate66_cases.make`), recorded with what `git status --porcelain` says and the gate's tree state, then built:
``python -m build --no-isolation`` of the tree (build 1.6.1: the sdist, then the wheel from it, with the gate's
hatchling 1.33.0, as ``python -m gate build`` does), judged by ``python -m gate check --allow-dirty --json`` of both
files, run in the clone (the clone's own gate, smoke included: its exit code and codes); hatchling 1.27.0 and 1.32.4
(``HATCHLINGS``, each in its own virtual environment) building the wheel and the sdist from the tree, their builders;
and, for the trees ``UV_CASES`` names, ``python -m build --installer uv`` (isolated, uv 0.13.10 from ``UV_BIN``
installing hatchling 1.27.0 from ``L127`` with ``UV_OFFLINE`` and ``UV_FIND_LINKS``). Per build: the wheel's files
against the tree's tracked entries under ``neurobrix/`` (added, missing, other bytes), its tables, and the sdist's link
members; else the error's tail.

    python tests/gate66_driver.py holds BASE [PLANT[,PLANT...] ...]

(tests/gate66_removed.py) judges every case's products with checks of the gate removed. As a pytest plugin
(``-p gate66_driver``) it removes the checks ``G66_PLANT`` names for the whole run:
``G66_PLANT="links" PYTHONPATH=$PWD:$PWD/tests python -m pytest -p gate66_driver tests/test_gate_round66.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gate66_cases import CASES, CONTROLS, git, git_status, make  # noqa: E402

L127 = os.environ.get("L127", "/tmp/g66/l127")
UV_BIN = os.environ.get("UV_BIN", "/tmp/g66/uvenv/bin")
HATCHLINGS = {"1.27.0": "/tmp/g66/h1.27.0/bin/python", "1.32.4": "/tmp/g66/h1.32.4/bin/python"}
UV_CASES = os.environ["UV_CASES"].split("|") if os.environ.get("UV_CASES") else None  # build --installer uv: these only


def _tracked_package(tree: Path) -> dict[str, bytes | None]:
    listing = git(tree, "ls-files", "-s", "-z", "neurobrix/")
    out: dict[str, bytes | None] = {}
    for record in filter(None, listing.split("\0")):
        info, _, path = record.partition("\t")
        file = tree / path
        regular = info.startswith(("100644", "100755")) and file.is_file()
        out[path] = file.read_bytes() if regular else None  # a link or submodule: git holds no file's bytes
    return out


def _view(folder: Path, tree: Path) -> dict[str, object]:
    wheels, sdists = sorted(folder.glob("*.whl")), sorted(folder.glob("*.tar.gz"))
    tracked = _tracked_package(tree)
    view: dict[str, object] = {}
    if wheels:
        with zipfile.ZipFile(wheels[0]) as z:
            files = {i.filename: z.read(i) for i in z.infolist() if i.filename.startswith("neurobrix/")}
        package = {k: v for k, v in files.items() if not k.startswith("neurobrix/_tables/")}
        view["wheel added"] = sorted(set(package) - set(tracked))
        view["wheel missing"] = sorted(set(tracked) - set(package))
        view["wheel other bytes"] = sorted(k for k in package if k in tracked and package[k] != tracked[k])
        view["wheel tables"] = len(files) - len(package)
    if sdists:
        with tarfile.open(sdists[0]) as t:
            view["sdist links"] = sorted(m.name for m in t.getmembers() if m.issym() or m.islnk())
            view["sdist files"] = len([m for m in t.getmembers() if m.isfile()])
    return view


def _gate(tree: Path, folder: Path) -> dict[str, object]:
    report = folder.parent / f"{folder.name}-report.json"
    dists = [str(p) for p in sorted(folder.iterdir())]  # named, not the folder: a wheel built alone is no upload folder
    r = subprocess.run(
        [sys.executable, "-m", "gate", "check", *dists, "--allow-dirty", "--json", str(report)],
        cwd=tree,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        timeout=600,
    )
    if not report.exists():
        return {"exit": r.returncode, "said": " ".join((r.stdout + r.stderr).split())[-300:]}
    data = json.loads(report.read_text())
    return {"exit": r.returncode, "codes": sorted({f["code"] for f in data.get("findings", [])})}


def _build(tree: Path, out: Path, extra: list[str], env: dict[str, str], judge: bool = True) -> dict[str, object]:
    cmd = [sys.executable, "-m", "build", "--outdir", str(out), *extra, str(tree)]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env}, timeout=600)
    if r.returncode != 0:
        return {"failed": " ".join((r.stdout + r.stderr).split())[-300:]}
    return {**_view(out, tree), **({"gate": _gate(tree, out)} if judge else {})}


_HATCHLING_BUILDS = """
import sys
from hatchling.builders.sdist import SdistBuilder
from hatchling.builders.wheel import WheelBuilder
for builder in (WheelBuilder, SdistBuilder):
    try:
        print(next(builder(sys.argv[1]).build(directory=sys.argv[2], versions=["standard"])))
    except OSError as exc:
        print("failed", builder.__name__, exc)
"""


def _hatchling(python: str, tree: Path, out: Path) -> dict[str, object]:
    """That hatchling's wheel and sdist of the tree, built in its own interpreter (its builders, as builds do)."""
    r = subprocess.run([python, "-I", "-c", _HATCHLING_BUILDS, str(tree), str(out)], capture_output=True, text=True)
    failed = [line for line in r.stdout.splitlines() if line.startswith("failed")] + (
        [r.stderr[-200:]] if r.returncode else []
    )
    return {**_view(out, tree), **({"failed": failed} if failed else {})}


def main(base: Path, out_json: Path, only: list[str]) -> None:
    work = Path(tempfile.mkdtemp(prefix="g66-", dir="/tmp"))
    results = []
    uv_env = {"UV_OFFLINE": "1", "UV_FIND_LINKS": L127, "PATH": f"{UV_BIN}:{os.environ['PATH']}"}
    for case in ["(the tree as committed)", *CONTROLS, *CASES]:
        if only and case not in only:
            continue
        folder = work / "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in case)[:60]
        folder.mkdir()
        if case.startswith("("):
            tree = folder / "repo"
            subprocess.run(["git", "clone", "-q", str(base), str(tree)], check=True)
        else:
            tree = make(base, folder, case)
        state = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from pathlib import Path; from gate.repository import read_tree_state;"
                " print(read_tree_state(Path(sys.argv[1])).describe())",
                str(tree),
            ],
            cwd=tree,
            capture_output=True,
            text=True,
        )
        entry: dict[str, object] = {
            "case": case,
            "git status": git_status(tree).splitlines()[:6],
            "tree state": (state.stdout + state.stderr).strip()[-300:],
            "build": _build(tree, folder / "build", ["--no-isolation"], {}),
        }
        for version, python in HATCHLINGS.items():
            entry[f"hatchling {version}"] = _hatchling(python, tree, folder / version)
        if UV_CASES is None or case in UV_CASES:
            entry["build --installer uv"] = _build(tree, folder / "uv", ["--installer", "uv"], uv_env, judge=False)
        results.append(entry)
        print(json.dumps(entry, default=str), flush=True)
    out_json.write_text(json.dumps(results, indent=1, default=str))
    shutil.rmtree(work, ignore_errors=True)


def pytest_configure(config: object) -> None:
    """As a pytest plugin (``-p gate66_driver``): the plants ``G66_PLANT`` names, comma-separated, for the whole run."""
    if os.environ.get("G66_PLANT"):
        from gate66_removed import plant

        plant(os.environ["G66_PLANT"].split(","))


if __name__ == "__main__":
    if sys.argv[1] == "holds":
        from gate66_removed import holds

        holds(Path(sys.argv[2]), sys.argv[3:])
        sys.exit()
    main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:])
