"""Gate round 61's installer runs (not a test file): round 58's sdists built and installed by pip 24.0 and 25.2 and,
from the wheel each pip builds, by ``installer``.

    python tests/gate61_driver.py sdists BUILT_DIR OUT.json LINKS PYTHON [PYTHON ...]
    python tests/gate61_driver.py headers BUILT_DIR OUT.json LINKS PYTHON [PYTHON ...]

Every sdist of round 58's corpus (tests/gate58_driver.py) is judged; each PYTHON's pip (a virtual environment holding
that pip) builds it, ``python -I -m pip wheel --no-deps --no-index --find-links LINKS`` (LINKS: a folder holding
hatchling and its dependencies' wheels; the same isolated build and the same unpacking of the sdist ``pip install``
runs), and the wheel it builds is installed by that pip (``--prefix``) and by ``installer`` 1.1.0 in-process. Each
tree is compared with the same tool's install of the sdist as built (every file, folder and link, its mode bits and
bytes, the installed RECORD by the files it names), and the built wheel's members with the wheel the sdist as built
gives. With GATE61_REFUSED_ONLY=1 a dist the gate passes is judged and not built; with GATE61_ONLY=A|B only those
run. ``headers``: round 61's own corpus (tests/gate61_cases.py), each wheel installed by each pip and by ``installer``,
each sdist built and installed by each pip (uv installs both too, with GATE61_UV=UV), reporting what each installed (the
tree against the dist as built, the installed metadata's fields, the launchers) and the gate's codes. BUILT_DIR holds
the wheel and sdist ``python -m gate build`` makes.
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
        [
            python,
            "-I",
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-index",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--find-links",
            links,
            "-w",
            str(out),
            str(sdist),
        ],
        capture_output=True,
        text=True,
        env=g58.ENV,
        timeout=300,
    )
    wheels = list(out.glob("*.whl"))
    if r.returncode or len(wheels) != 1:
        return None, (r.stderr or r.stdout).strip()[-400:]
    return wheels[0], ""


def _members(wheel: Path) -> dict[str, tuple[int, bytes]]:
    with zipfile.ZipFile(wheel) as z:
        return {
            i.filename: (i.external_attr >> 16, b"" if i.filename.endswith("/RECORD") else z.read(i))
            for i in z.infolist()
        }


def _installs(python: str, wheel: Path, root: Path) -> dict[str, tuple[dict | None, str]]:
    got = {}
    r, prefix = g58.pip_install(python, wheel, root / "pip")
    got["pip"] = (None, (r.stderr or r.stdout).strip()[-400:]) if r.returncode else (g58.tree(prefix), "")
    r, prefix = g58.installer_install(wheel, root / "installer")
    got["installer"] = (None, r.stderr[-400:]) if r.returncode else (g58.tree(prefix), "")
    return {
        k: (None if t is None else {p: v for p, v in t.items() if p.rstrip("/") not in TOP}, e)
        for k, (t, e) in got.items()
    }


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
            t: (
                b["build"][:6]
                if "build" in b
                else {k: len(v) if isinstance(v, list) else "refused" for k, v in b.items()}
            )
            for t, b in entry["builds"].items()
        }
        print("PASS" if passed else "ref ", name, codes, shown, flush=True)
    out.write_text(json.dumps(results, indent=1))
    shutil.rmtree(work, ignore_errors=True)


def _installed_fields(prefix: Path) -> dict[str, object]:
    """The installed distribution's metadata as importlib.metadata reads it (pip show's reader), and the launchers."""
    from importlib.metadata import distributions

    site = prefix / "lib" / "python3.11" / "site-packages"
    found = list(distributions(path=[str(site)]))
    out: dict[str, object] = {"dists": [d.metadata["Name"] for d in found]}
    for d in found[:1]:
        out["version"] = d.metadata["Version"]
        out["requires_python"] = d.metadata.get_all("Requires-Python")
        out["added requires"] = sorted(set(d.requires or []) - _BASE_REQUIRES)
        out["console_scripts"] = sorted((e.name, e.value) for e in d.entry_points if e.group == "console_scripts")
    out["bin"] = sorted(p.name for p in (prefix / "bin").glob("*")) if (prefix / "bin").is_dir() else []
    return out


_BASE_REQUIRES: set[str] = set()


def _headers(links: str, pythons: list[str], out: Path) -> None:
    from gate61_cases import CASES
    from gate_fixtures import RawTarMember, raw_tar, sdist_members, wheel_members, with_true_record, write_sdist

    work = Path(tempfile.mkdtemp(prefix="gate61-h-"))
    pips = {_version(p): p for p in pythons}
    root = g58.S.name.removesuffix(".tar.gz")
    base = {}
    for tool, python in pips.items():
        r, prefix = g58.pip_install(python, g58.W, work / "base" / tool)
        assert r.returncode == 0, r.stderr
        base[tool] = g58.tree(prefix)
        from importlib.metadata import distributions

        d = next(iter(distributions(path=[str(prefix / "lib" / "python3.11" / "site-packages")])))
        _BASE_REQUIRES.update(d.requires or [])
    r, prefix = g58.installer_install(g58.W, work / "base" / "installer")
    base["installer"] = g58.tree(prefix)
    uv = os.environ.get("GATE61_UV")  # a uv binary: its installs too, into a fresh virtual environment each
    if uv:
        g58.UV = uv
        r, venv = g58.uv_install(g58.W, work / "base" / "uv")
        assert r.returncode == 0, r.stderr
        base["uv"] = g58.tree(venv, g58.skeleton())
    results = {}
    for name, (file, edit) in CASES.items():
        slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")
        here = work / slug
        here.mkdir()
        if file == "PKG-INFO":
            pkg = f"{root}/PKG-INFO"
            members = [m if m.name != pkg else RawTarMember(pkg, edit(m.data), m.type) for m in sdist_members(g58.S)]
            dist = write_sdist(here / g58.S.name, raw_tar(members))
        else:
            members = wheel_members(g58.W)
            for m in members:
                if m.name == f"{g58.DI}/{file}".encode():
                    m.data = edit(m.data)
            dist = here / g58.W.name
            dist.write_bytes(g58.raw_zip(with_true_record(members)))
        passed, codes = g58._judge(dist)
        entry: dict[str, object] = {"file": file, "passed": passed, "codes": codes, "installs": {}}
        tools = [(t, p) for t, p in pips.items()] + ([] if file == "PKG-INFO" else [("installer", None)])
        tools += [("uv", "uv")] if uv else []
        for tool, python in tools:
            extra = ["--find-links", links] if file == "PKG-INFO" else []
            if python == "uv":
                r, prefix = g58.uv_install(dist, here / tool, extra)
            elif python is None:
                r, prefix = g58.installer_install(dist, here / tool)
            else:
                r, prefix = g58.pip_install(python, dist, here / tool, extra)
            if r.returncode:
                entry["installs"][tool] = {"refused": (r.stderr or r.stdout).strip()[-300:]}
                continue
            tree = g58.tree(prefix, g58.skeleton() if tool == "uv" else set())
            fields = _installed_fields(prefix)
            if tool == "uv":  # the launchers uv wrote, not the virtual environment's own
                fields["bin"] = [b for b in fields["bin"] if f"bin/{b}" not in g58.skeleton()]  # type: ignore[union-attr]
            entry["installs"][tool] = {"differs": g58._compare(tree, base[tool]), **fields}
        shutil.rmtree(here, ignore_errors=True)
        results[name] = entry
        print("PASS" if passed else "ref ", name, codes, json.dumps(entry["installs"], default=str)[:600], flush=True)
    out.write_text(json.dumps(results, indent=1, default=str))
    shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str]) -> int:
    if argv[0] == "sdists":
        _sdists(argv[3], argv[4:], Path(argv[2]))
    elif argv[0] == "headers":
        _headers(argv[3], argv[4:], Path(argv[2]))
    else:
        raise SystemExit(f"unknown kind {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
