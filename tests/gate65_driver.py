"""Gate round 65's runs (not a test file): each sdist of tests/gate65_cases.py judged, then built by the front ends.

    python tests/gate65_driver.py BUILT_DIR OUT.json LINKS PIP_PYTHON [CASE ...]
    python tests/gate65_driver.py holds BUILT_DIR [PLANT ...]

Each case (this checkout's sdist altered, tests/gate65_cases.py) is judged by the gate (the codes) and built into a
wheel by ``python -m build --wheel SDIST`` (build 1.6.1) twice: without isolation (the gate's hatchling, 1.33.0) and
isolated (hatchling from LINKS through pip's ``PIP_NO_INDEX`` and ``PIP_FIND_LINKS``), and by ``pip wheel --no-deps
--no-index --find-links LINKS`` with this interpreter's pip (23.2.1) and with PIP_PYTHON's (another pip release);
recorded per tool: the package files of the wheel against the wheel as built (added, changed in bytes or executable
bit, missing), and any member holding ``PLANTED``; else the error's tail. ``unpacked`` is
:func:`gate65_cases.build_unpacks` beside it.

``holds`` judges every case again with checks of the gate removed (``PLANTS``, applied to the modules' source in this
process, each in a fresh interpreter; several names remove them together) and prints the cases that then pass. The
test file itself runs under the same plants with this module as a pytest plugin:

    G65_PLANT="names,links" PYTHONPATH=$PWD:$PWD/tests python -m pytest -p gate65_driver tests/test_gate_round65.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gate65_cases import CASES, CONTROLS, PLANTED, build_unpacks, sdist_bytes  # noqa: E402
from gate_fixtures import sdist_members  # noqa: E402

from gate.checker import DEFAULT_TRACKED, Options, check  # noqa: E402
from gate.completeness import load_reference  # noqa: E402

REFERENCE = load_reference(DEFAULT_TRACKED)


def _package_files(wheel: Path) -> dict[str, tuple[bytes, int]]:
    with zipfile.ZipFile(wheel) as z:
        return {
            i.filename: (z.read(i), (i.external_attr >> 16) & 0o111)
            for i in z.infolist()
            if not i.is_dir() and not i.filename.endswith(("/WHEEL", "/RECORD"))  # the generator's name differs
        }


def _view(wheel: Path | None, why: str, base: dict[str, tuple[bytes, int]]) -> object:
    if wheel is None:
        return {"failed": " ".join(why.split())[-300:]}
    files = _package_files(wheel)
    return {
        "wheel": wheel.name,
        "added": sorted(set(files) - set(base)),
        "changed": sorted(k for k in files if k in base and files[k] != base[k]),
        "missing": sorted(set(base) - set(files)),
        "planted": sorted(k for k, (data, _) in files.items() if PLANTED in data),
    }


def _run(cmd: list[str], out: Path, env: dict[str, str] | None = None) -> tuple[Path | None, str]:
    out.mkdir(parents=True)
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=300)
    wheels = sorted(out.glob("*.whl"))
    return (wheels[0] if r.returncode == 0 and wheels else None), r.stdout + r.stderr


def main(built: Path, out_json: Path, links: str, pip_python: str, only: list[str]) -> None:
    sdist = next(built.glob("*.tar.gz"))
    root = sdist.name.removesuffix(".tar.gz")
    members = sdist_members(sdist)
    base = _package_files(next(built.glob("*.whl")))
    work = Path(tempfile.mkdtemp(prefix="g65-", dir="/tmp"))
    isolated = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": links}
    results = []
    for case in ["(the sdist as built)", *CONTROLS, *CASES]:
        if only and case not in only:
            continue
        data = sdist.read_bytes() if case.startswith("(") else sdist_bytes(members, root, case)
        folder = work / "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in case)
        folder.mkdir()
        path = folder / sdist.name
        path.write_bytes(data)
        report = check([path], Options(REFERENCE, smoke=False, tools=False))
        unpacked = build_unpacks(data)
        entry: dict[str, object] = {
            "case": case,
            "gate": "passed" if report.passed else sorted({f.code for f in report.findings}),
            "unpacked": unpacked.get("refused") or sorted(unpacked["files"]),  # type: ignore[arg-type]
        }
        build = [sys.executable, "-m", "build", "--wheel", "--outdir"]
        runs = {
            "build no isolation": ([*build, str(folder / "b0"), "--no-isolation", str(path)], folder / "b0", None),
            "build isolated": ([*build, str(folder / "b1"), str(path)], folder / "b1", isolated),
        }
        for tool, python in (("pip23.2.1", sys.executable), ("pip-other", pip_python)):
            pip = [python, "-I", "-m", "pip", "wheel", "--no-deps", "--no-index", "--find-links", links, "-w"]
            runs[tool] = ([*pip, str(folder / tool), str(path)], folder / tool, None)
        for tool, (cmd, out, env) in runs.items():
            wheel, why = _run(cmd, out, env)
            entry[tool] = _view(wheel, why, base)
        entry["unpacked"] = entry["unpacked"] if isinstance(entry["unpacked"], str) else len(entry["unpacked"])
        results.append(entry)
        print(json.dumps(entry, default=str), flush=True)
    out_json.write_text(json.dumps(results, indent=1, default=str))
    shutil.rmtree(work)


# name -> [(module, function, its source as it is, as planted)]: the function alone is compiled again in its module;
# "tarfile" replaces the strict reading
PLANTS: dict[str, list[tuple[str, str, str, str]]] = {
    "names": [  # G301-G303, G310: absolute, `..`, undecodable, `.` or empty components and the like
        ("gate.archive", "_safety", 'in names.name_problems(name, m.kind == "dir"):', "in []:")
    ],
    "links": [("gate.archive", "_safety", 'if m.kind in ("symlink", "hardlink", "other"):', "if False:")],  # G304
    "duplicates": [  # G305, the exact name twice and names one file system folds together
        ("gate.archive", "_safety", "        if name in exact:", "        if False:"),
        ("gate.archive", "_safety", "        elif first != name:", "        elif False:"),
    ],
    "sources": [("gate.sdist", "check_sdist", "    _check_sources(sdist, root, repo)\n", "")],  # G509
    "top folder": [  # G507: a member outside the top folder, PKG-INFO or pyproject.toml missing under it
        ("gate.sdist", "check_sdist", 'if m.name != f"{root}/" and not m.name.startswith(f"{root}/"):', "if False:"),
        ("gate.sdist", "check_sdist", 'if f"{root}/{needed}" not in sdist.files:', "if False:"),
    ],
    "rebuild": [  # G508
        ("gate.sdist", "check_rebuild", "    root = root_of(sdist)\n", "    return\n")
    ],
}


def _tarfile_parse(data: bytes, max_members: int) -> tuple[list[object], list[object]]:
    """The strict tar reader replaced by tarfile's own listing (pax and GNU names applied, stopping at the first zero
    block), as build reads the stream."""
    import io
    import tarfile

    from gate import tarstrict

    kinds = {tarfile.REGTYPE: "file", tarfile.AREGTYPE: "file", tarfile.DIRTYPE: "dir"}
    kinds.update({tarfile.LNKTYPE: "hardlink", tarfile.SYMTYPE: "symlink"})
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return [
            tarstrict.TarEntry(
                i.name.encode() + (b"/" if i.isdir() else b""),
                kinds.get(i.type, "other"),  # type: ignore[arg-type]
                i.size,
                i.offset_data,
                i.linkname.encode(),
                i.mode,
            )
            for i in tar.getmembers()
        ], []


def _plant(names: list[str]) -> None:
    import gzip
    import importlib
    import inspect

    edits: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for name in names:
        if name == "tarfile":
            import gate.archive
            import gate.tarstrict

            gate.tarstrict.parse = _tarfile_parse  # type: ignore[assignment]
            gate.archive._inflate_gzip = lambda archive, raw, limits: gzip.decompress(raw)  # type: ignore[assignment]
            continue
        for module_name, function, old, new in PLANTS[name]:
            edits.setdefault((module_name, function), []).append((old, new))
    for (module_name, function), pairs in edits.items():  # every edit of one function at once
        module = importlib.import_module(module_name)
        source = inspect.getsource(getattr(module, function))
        for old, new in pairs:
            assert source.count(old) == 1, (function, old)
            source = source.replace(old, new)
        fresh: dict[str, object] = {}
        exec(compile(source, module.__file__ or module_name, "exec"), module.__dict__, fresh)
        getattr(module, function).__code__ = fresh[function].__code__  # type: ignore[attr-defined]


def holds(built: Path, names: list[str]) -> None:
    _plant(names)
    sdist = next(built.glob("*.tar.gz"))
    root = sdist.name.removesuffix(".tar.gz")
    members = sdist_members(sdist)
    passed, codes = [], {}
    with tempfile.TemporaryDirectory(prefix="g65-holds-") as tmp:
        for case in [*CONTROLS, *CASES]:
            path = Path(tmp) / case.replace("/", "_") / sdist.name
            path.parent.mkdir()
            path.write_bytes(sdist_bytes(members, root, case))
            report = check([path], Options(REFERENCE, smoke=False, tools=False))
            if report.passed:
                passed.append(case)
            codes[case] = sorted({f.code for f in report.findings})
    print(json.dumps({"removed": names, "passed": passed, "codes": codes}))


def pytest_configure(config: object) -> None:
    """As a pytest plugin (``-p gate65_driver``): the plants ``G65_PLANT`` names, comma-separated, for the whole run."""
    if os.environ.get("G65_PLANT"):
        _plant(os.environ["G65_PLANT"].split(","))


if __name__ == "__main__":
    if sys.argv[1] == "holds":
        holds(Path(sys.argv[2]), sys.argv[3:])
        sys.exit()
    main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:])
