"""Gate round 64's runs (not a test file): each sdist of tests/gate64_cases.py built and read by the real tools.

    python tests/gate64_driver.py pkginfo BUILT_DIR OUT.json

Each case (this checkout's sdist with its PKG-INFO alone rewritten) is judged by the gate and built into a wheel by
each pip of round 62's ``PIPS`` (``pip wheel --no-deps --no-index --find-links LINKS``, hatchling 1.33.0 from LINKS,
build isolation) and by uv (``uv pip install --no-deps --offline --no-index --find-links LINKS --target``, a fresh
cache each, the wheel it built taken from that cache); recorded per tool: the built wheel's name and its METADATA's
Name, Version and any ``evil`` requirement, else the error's tail. ``twine check`` (7.0.0) is run on the sdist, and
``readings`` (the email parser fed bytes and text, hatchling's reading, packaging's verdict) recorded beside.
"""

from __future__ import annotations

import email.parser
import gzip
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gate61_driver as g61  # noqa: E402
import gate62_driver as g62  # noqa: E402
import gate63_driver as g63  # noqa: E402
from gate64_cases import CASES, readings  # noqa: E402
from gate_fixtures import RawTarMember, raw_tar, sdist_members  # noqa: E402


def _wheel_view(wheel: Path | None, why: str) -> object:
    if wheel is None:
        return {"failed": why[-300:]}
    with zipfile.ZipFile(wheel) as z:
        (meta,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        message = email.parser.BytesParser().parsebytes(z.read(meta))
    return {
        "wheel": wheel.name,
        "Name": message.get_all("Name"),
        "Version": message.get_all("Version"),
        "evil": [r for r in message.get_all("Requires-Dist", []) if "evil" in r],
    }


def pkginfo(built: Path, out_json: Path) -> None:
    sdist = next(built.glob("*.tar.gz"))
    root = sdist.name.removesuffix(".tar.gz")
    name = f"{root}/PKG-INFO"
    base = sdist_members(sdist)
    original = next(m.data for m in base if m.name == name)
    work = Path(tempfile.mkdtemp(prefix="g64-", dir="/tmp"))
    only = sys.argv[4:]
    results = []
    for case in ["(the sdist as built)", *CASES]:
        if only and case not in only:
            continue
        data = original if case not in CASES else CASES[case](original)
        folder = work / "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in case)
        folder.mkdir()
        path = folder / sdist.name
        members = [m if m.name != name else RawTarMember(name, data, m.type) for m in base]
        path.write_bytes(gzip.compress(raw_tar(members), mtime=0))
        entry: dict[str, object] = {"case": case, "gate": g62._gate_codes(path), "readers": readings(data)}
        for tool, python in g62.PIPS.items():
            wheel, why = g61._build(python, path, folder / tool, g62.LINKS)
            entry[tool] = _wheel_view(wheel, why)
        _tree, wheel, why = g63._uv_tree(path, folder / "uv")
        entry["uv"] = _wheel_view(wheel if not why else None, why)
        r = subprocess.run([sys.executable, "-m", "twine", "check", str(path)], capture_output=True, text=True)
        entry["twine"] = f"rc {r.returncode}: " + " ".join((r.stdout + r.stderr).split())[-240:]
        results.append(entry)
        print(json.dumps(entry, default=str), flush=True)
    out_json.write_text(json.dumps(results, indent=1, default=str))
    shutil.rmtree(work)


if __name__ == "__main__":
    {"pkginfo": pkginfo}[sys.argv[1]](Path(sys.argv[2]), Path(sys.argv[3]))
