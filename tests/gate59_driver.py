"""Gate round 59's installer runs (not a test file): round 58's corpus installed by pip versions between 23.2 and 26.3,
and round 59's own corpus (case and normalisation aliases, Windows names, shebangs of ``.data/scripts``) judged by the
gate and installed by pip 23.2 and ``installer``.

    python tests/gate59_driver.py pips BUILT_DIR OUT.json PYTHON [PYTHON ...]
    python tests/gate59_driver.py sdists BUILT_DIR OUT.json LINKS PYTHON [PYTHON ...]
    python tests/gate59_driver.py shebangs BUILT_DIR OUT.json PYTHON [PYTHON ...]

``pips``: every wheel of round 58's corpus (tests/gate58_driver.py), installed by each PYTHON's ``python -I -m pip
install --no-deps --no-index --no-compile --prefix`` (a venv holding that pip), each tree compared with the same pip's
install of the wheel as built. ``sdists``: round 58's sdists, built and installed so, with ``--find-links LINKS`` (a
folder holding hatchling and its dependencies). ``shebangs``: wheels holding one ``.data/scripts`` file per first
line, each installed by each pip and by ``installer``, reporting the first line each wrote and whether the gate passed
the wheel. With GATE59_PASSED_ONLY=1 a dist the gate refuses is judged and not installed; with
GATE59_FROM=NAME the run starts at that corpus name, with GATE59_ONLY=A|B it runs those alone. BUILT_DIR holds the
wheel and sdist ``python -m gate build`` makes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gate58_driver as g58  # noqa: E402
from gate_fixtures import RawMember, with_true_record  # noqa: E402


def _version(python: str) -> str:
    out = subprocess.run([python, "-I", "-m", "pip", "--version"], capture_output=True, text=True, check=True).stdout
    return "pip" + out.split()[1]


def _run(corpus, pythons, put, original, out: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="gate59-"))
    tools = {_version(p): p for p in pythons}
    base = {}
    for tool, python in tools.items():
        t, err = put(python, original, work / "base" / tool)
        assert t is not None, err
        base[tool] = t
    results = {}
    start = os.environ.get("GATE59_FROM")  # resume a run at this corpus name
    only = set(filter(None, os.environ.get("GATE59_ONLY", "").split("|")))  # these corpus names alone
    for name, (cls, make) in corpus.items():
        if start and name != start or only and name not in only:
            continue
        start = None
        slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")
        (work / slug).mkdir()
        dist = work / slug / original.name
        dist.write_bytes(make())
        passed, codes = g58._judge(dist)
        entry = {"class": cls, "passed": passed, "codes": codes, "installs": {}}
        for tool, python in tools.items() if passed or not os.environ.get("GATE59_PASSED_ONLY") else ():
            t, err = put(python, dist, work / slug / tool)
            entry["installs"][tool] = {"refused": err} if t is None else {"differs": g58._compare(t, base[tool])}
        shutil.rmtree(work / slug, ignore_errors=True)
        results[name] = entry
        shown = {k: len(v["differs"]) if "differs" in v else "refused" for k, v in entry["installs"].items()}
        print("PASS" if passed else "ref ", name, codes, shown, flush=True)
    out.write_text(json.dumps(results, indent=1))
    shutil.rmtree(work, ignore_errors=True)


def _wheel_put(python, wheel, root):
    root.mkdir(parents=True, exist_ok=True)
    r, prefix = g58.pip_install(python, wheel, root)
    if r.returncode != 0:
        return None, (r.stderr or r.stdout).strip()[-400:]
    t = g58.tree(prefix)
    top = ("lib", "lib/python3.11", "lib/python3.11/site-packages", "bin")
    return {k: v for k, v in t.items() if k.rstrip("/") not in top}, ""


def _sdist_put(links):
    def put(python, sdist, root):
        root.mkdir(parents=True, exist_ok=True)
        r, prefix = g58.pip_install(python, sdist, root, ["--find-links", links])
        if r.returncode:
            return None, (r.stderr or r.stdout)[-400:]
        t = g58.tree(prefix)
        top = ("lib", "lib/python3.11", "lib/python3.11/site-packages", "bin")
        return {k: v for k, v in t.items() if k.rstrip("/") not in top}, ""

    return put


# First lines of a ``.data/scripts/nb-evil`` file: pip and installer rewrite one starting ``#!python`` to the
# interpreter; the rest is what each keeps of it.
SHEBANGS = {
    "#!python": b"#!python\nimport sys\n",
    "#!pythonw": b"#!pythonw\nimport sys\n",
    "#!python -X dev": b"#!python -X dev\nimport sys\n",
    "#!python -I -S": b"#!python -I -S\nimport sys\n",
    "#!python3": b"#!python3\nimport sys\n",
    "#!python CRLF": b"#!python\r\nimport sys\r\n",
    "#!python CR": b"#!python\rimport sys\n",
    "BOM #!python": b"\xef\xbb\xbf#!python\nimport sys\n",
    "#! python": b"#! python\nimport sys\n",
    "#!/usr/bin/env python": b"#!/usr/bin/env python\nimport sys\n",
    "#!/usr/bin/python -E": b"#!/usr/bin/python -E\nimport sys\n",
    "#!python long": b"#!python " + b"-X dev " * 30 + b"\nimport sys\n",
    "#!python no newline": b"#!python",
    "no shebang": b"import sys\n",
    "#!sh": b"#!/bin/sh\necho hi\n",
}


def _script_wheel(first: bytes) -> bytes:
    ms = g58.base()
    record = g58.rec(ms)
    ms = [x for x in ms if x is not record]
    ms.append(RawMember(f"{g58.DATA}/scripts/nb-evil".encode(), first, mode=0o100755))
    return g58.raw_zip(with_true_record(ms + [record]))


def _shebangs(pythons, out: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="gate59-sb-"))
    tools = {_version(p): p for p in pythons}
    results = {}
    for number, (name, body) in enumerate(SHEBANGS.items()):
        slug = f"{number}-" + re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")
        (work / slug).mkdir()
        dist = work / slug / g58.W.name
        dist.write_bytes(_script_wheel(body))
        passed, codes = g58._judge(dist)
        entry = {"passed": passed, "codes": codes, "installs": {}}
        for tool, python in tools.items():
            r, prefix = g58.pip_install(python, dist, work / slug / tool)
            script = prefix / "bin" / "nb-evil"
            entry["installs"][tool] = (
                {"refused": (r.stderr or r.stdout)[-300:]} if r.returncode else {"head": repr(script.read_bytes()[:80])}
            )
        r, prefix = g58.installer_install(dist, work / slug / "installer")
        script = prefix / "bin" / "nb-evil"
        entry["installs"]["installer"] = (
            {"refused": r.stderr[-300:]} if r.returncode else {"head": repr(script.read_bytes()[:80])}
        )
        results[name] = entry
        print("PASS" if passed else "ref ", name, codes, json.dumps(entry["installs"]), flush=True)
    out.write_text(json.dumps(results, indent=1))
    shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str]) -> int:
    kind, out = argv[0], Path(argv[2])
    if kind == "pips":
        _run(g58.WHEELS, argv[3:], _wheel_put, g58.W, out)
    elif kind == "sdists":
        _run(g58.SDISTS, argv[4:], _sdist_put(argv[3]), g58.S, out)
    elif kind == "shebangs":
        _shebangs(argv[3:], out)
    else:
        raise SystemExit(f"unknown kind {kind}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
