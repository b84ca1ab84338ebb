"""Gate round 61's installer runs (not a test file): round 58's sdists built and installed by pip 24.0 and 25.2 and,
from the wheel each pip builds, by ``installer``.

    python tests/gate61_driver.py sdists BUILT_DIR OUT.json LINKS PYTHON [PYTHON ...]

Every sdist of round 58's corpus (tests/gate58_driver.py) is judged; each PYTHON's pip (a virtual environment holding
that pip) builds it, ``python -I -m pip wheel --no-deps --no-index --find-links LINKS`` (LINKS: a folder holding
hatchling and its dependencies' wheels; the same isolated build and the same unpacking of the sdist ``pip install``
runs), and the wheel it builds is installed by that pip (``--prefix``) and by ``installer`` 1.1.0 in-process. Each
tree is compared with the same tool's install of the sdist as built (every file, folder and link, its mode bits and
bytes, the installed RECORD by the files it names), and the built wheel's members with the wheel the sdist as built
gives. With GATE61_REFUSED_ONLY=1 a dist the gate passes is judged and not built; with GATE61_ONLY=A|B only those
run. BUILT_DIR holds the wheel and sdist ``python -m gate build`` makes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gate58_driver as g58  # noqa: E402

TOP = ("lib", "lib/python3.11", "lib/python3.11/site-packages", "bin")


def _version(python: str) -> str:
    out = subprocess.run([python, "-I", "-m", "pip", "--version"], capture_output=True, text=True, check=True).stdout
    return "pip" + out.split()[1]


def _build(python: str, sdist: Path, out: Path, links: str):
    out.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(
        [python, "-I", "-m", "pip", "wheel", "--no-deps", "--no-index", "--no-cache-dir",
         "--disable-pip-version-check", "--find-links", links, "-w", str(out), str(sdist)],
        capture_output=True, text=True, env=g58.ENV, timeout=300,
    )  # fmt: skip
    wheels = list(out.glob("*.whl"))
    if r.returncode or len(wheels) != 1:
        return None, (r.stderr or r.stdout).strip()[-400:]
    return wheels[0], ""


def _members(wheel: Path) -> dict[str, tuple[int, bytes]]:
    with zipfile.ZipFile(wheel) as z:
        return {
            i.filename: (i.external_attr >> 16, b"" if i.filename.endswith("/RECORD") else z.read(i)) for i in z.infolist()
        }


def _installs(python: str, wheel: Path, root: Path) -> dict[str, tuple[dict | None, str]]:
    got = {}
    r, prefix = g58.pip_install(python, wheel, root / "pip")
    got["pip"] = (None, (r.stderr or r.stdout).strip()[-400:]) if r.returncode else (g58.tree(prefix), "")
    r, prefix = g58.installer_install(wheel, root / "installer")
    got["installer"] = (None, r.stderr[-400:]) if r.returncode else (g58.tree(prefix), "")
    return {k: (None if t is None else {p: v for p, v in t.items() if p.rstrip("/") not in TOP}, e) for k, (t, e) in got.items()}


def _sdists(links: str, pythons: list[str], out: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="gate61-"))
    pips = {_version(p): p for p in pythons}
    base = {}
    for tool, python in pips.items():
        wheel, err = _build(python, g58.S, work / "base" / tool / "wheel", links)
        assert wheel is not None, err
        base[tool] = (_members(wheel), _installs(python, wheel, work / "base" / tool))
        assert all(t is not None for t, _ in base[tool][1].values()), base[tool][1]
    only = set(filter(None, os.environ.get("GATE61_ONLY", "").split("|")))
    results = {}
    for name, (cls, make) in g58.SDISTS.items():
        if only and name not in only:
            continue
        slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")
        (work / slug).mkdir()
        dist = work / slug / g58.S.name
        dist.write_bytes(make())
        passed, codes = g58._judge(dist)
        entry = {"class": cls, "passed": passed, "codes": codes, "builds": {}}
        if passed and os.environ.get("GATE61_REFUSED_ONLY"):
            results[name] = entry
            continue
        for tool, python in pips.items():
            wheel, err = _build(python, dist, work / slug / tool / "wheel", links)
            if wheel is None:
                entry["builds"][tool] = {"build": "failed: " + err}
                continue
            members, (base_members, base_installs) = _members(wheel), base[tool]
            b = {"wheel": g58._compare(members, base_members)}
            for who, (t, e) in _installs(python, wheel, work / slug / tool).items():
                b[who] = {"refused": e} if t is None else g58._compare(t, base_installs[who][0])
            entry["builds"][tool] = b
        shutil.rmtree(work / slug, ignore_errors=True)
        results[name] = entry
        shown = {
            t: (b["build"][:6] if "build" in b else {k: len(v) if isinstance(v, list) else "refused" for k, v in b.items()})
            for t, b in entry["builds"].items()
        }
        print("PASS" if passed else "ref ", name, codes, shown, flush=True)
    out.write_text(json.dumps(results, indent=1))
    shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str]) -> int:
    if argv[0] != "sdists":
        raise SystemExit(f"unknown kind {argv[0]}")
    _sdists(argv[3], argv[4:], Path(argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
