"""Gate round 62's runs (not a test file): sdist modes unpacked by one user and built by another, and RECORD's hash
spellings installed by each installer.

    python tests/gate62_driver.py modes BUILT_DIR OUT.json
    python tests/gate62_driver.py record BUILT_DIR OUT.json

``modes`` must run as root: each sdist of a hostile mode or owner (``MODE_CASES``) is judged, unpacked by root
(umask 022) with tarfile's ``extractall`` unfiltered and with the ``data`` filter, GNU tar, and the unpacking of each
pip named in ``PIPS`` (``pip._internal.utils.unpacking.unpack_file``), and what lands on disk is recorded (mode,
owner); then a second user, ``nobody`` (uid 65534, through ``setpriv``, no groups), tries the member: read it, list
its folder, open it for writing, make a file beside it, and builds the unpacked tree with the system's Python and pip
(``pip wheel --no-deps --no-index``, hatchling from LINKS), the wheel compared member by member with the one the
sdist as built gives. Where ``nobody`` may write there, it appends a line to ``neurobrix/cli.py`` and root builds the
tree after it (pip 23.2, the gate's own Python): what a root build then ships.

``record``: each RECORD spelling of tests/gate62_cases.py, in this checkout's wheel (every other byte the built
wheel's), judged by the gate and installed by each pip in ``PIPS`` (``--prefix``, no deps, no index, no compile), by
``installer`` 1.1.0 in-process with its record validation on and off, and by uv (``UV``, ``uv pip install --prefix``);
each tree is compared with the same tool's install of the wheel as built, and the installed RECORD's row for one table
kept.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gate_fixtures import RawMember, RawTarMember, raw_tar, raw_zip, sdist_members, wheel_members  # noqa: E402

PIPS = {
    "pip23.2.1": sys.executable,
    "pip24.0": "/tmp/gate61/pip24.0/bin/python",
    "pip25.2": "/tmp/gate61/pip25.2/bin/python",
    "pip26.3": "/tmp/g58-pip26/bin/python",
}
UV = os.environ.get("UV", "/tmp/g58-uv/bin/uv")
LINKS = os.environ.get("LINKS", "/tmp/gate62/links")
OTHER = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
SYSTEM_PY = "/usr/bin/python3.11"  # the other user's interpreter: the gate's is under /root, which nobody may enter
FILE = "neurobrix/cli.py"
FOLDER = "neurobrix/ops"

# (label, member, mode, uid, gid): a file's mode or owner, or a folder entry added before the folder's files
MODE_CASES = [
    ("file 600", FILE, 0o600, 0, 0),
    ("file 640", FILE, 0o640, 0, 0),
    ("file 604", FILE, 0o604, 0, 0),
    ("file 400", FILE, 0o400, 0, 0),
    ("file 000", FILE, 0o000, 0, 0),
    ("file 664", FILE, 0o664, 0, 0),
    ("file 666", FILE, 0o666, 0, 0),
    ("file 4644", FILE, 0o4644, 0, 0),
    ("file 4755", FILE, 0o4755, 0, 0),
    ("file 2755", FILE, 0o2755, 0, 0),
    ("file 1644", FILE, 0o1644, 0, 0),
    ("file 1755", FILE, 0o1755, 0, 0),
    ("file owner 65534", FILE, 0o644, 65534, 65534),
    ("file owner 1000", FILE, 0o644, 1000, 1000),
    ("file group 65534 664", FILE, 0o664, 0, 65534),
    ("folder 700", FOLDER, 0o700, 0, 0),
    ("folder 711", FOLDER, 0o711, 0, 0),
    ("folder 751", FOLDER, 0o751, 0, 0),
    ("folder 655", FOLDER, 0o655, 0, 0),
    ("folder 775", FOLDER, 0o775, 0, 0),
    ("folder 777", FOLDER, 0o777, 0, 0),
    ("folder 1777", FOLDER, 0o1777, 0, 0),
    ("folder 2755", FOLDER, 0o2755, 0, 0),
    ("folder owner 65534", FOLDER, 0o755, 65534, 65534),
]

PROBE = r"""
import json, os, sys
path, folder = sys.argv[1], sys.argv[2]
out = {}
def attempt(key, fn):
    try:
        fn(); out[key] = True
    except OSError as exc:
        out[key] = type(exc).__name__
attempt("read", lambda: open(path, "rb").read(1))
attempt("list folder", lambda: os.listdir(folder))
attempt("open for writing", lambda: open(path, "ab").close())
def make():
    p = os.path.join(folder, "probe-by-other-user")
    open(p, "wb").close(); os.remove(p)
attempt("make a file in its folder", make)
print(json.dumps(out))
"""


def _gate_codes(dist: Path) -> list[str]:
    from test_gate_hostile import REFERENCE

    from gate.checker import Options, check

    report = check([dist], Options(REFERENCE, smoke=False, tools=False))
    return sorted({f"{f.code} {f.path}" for f in report.findings}) or ["PASSED"]


def _mode_sdist(base: list[RawTarMember], root: str, member: str, mode: int, uid: int, gid: int) -> bytes:
    members: list[RawTarMember] = []
    for m in base:
        if (
            member == FOLDER
            and m.name.startswith(f"{root}/{FOLDER}/")
            and not any(x.name.endswith("/") for x in members)
        ):
            members.append(RawTarMember(f"{root}/{FOLDER}/", b"", tarfile.DIRTYPE, mode=mode, uid=uid, gid=gid))
        if m.name == f"{root}/{member}":
            m = RawTarMember(m.name, m.data, m.type, mode=mode, uid=uid, gid=gid)
        members.append(m)
    return gzip.compress(raw_tar(members), compresslevel=1, mtime=0)


def _unpack(tool: str, sdist: Path, dest: Path) -> str:
    dest.mkdir(parents=True)
    try:
        if tool == "tarfile":
            with tarfile.open(sdist) as tar:
                tar.extractall(dest)
        elif tool == "tarfile data filter":
            with tarfile.open(sdist) as tar:
                tar.extractall(dest, filter="data")
        elif tool == "GNU tar":
            r = subprocess.run(["tar", "-xzf", str(sdist), "-C", str(dest)], capture_output=True, text=True)
            if r.returncode:
                return r.stderr.strip()[-200:]
        else:
            code = "import sys; from pip._internal.utils.unpacking import unpack_file; unpack_file(*sys.argv[1:3])"
            r = subprocess.run([PIPS[tool], "-I", "-c", code, str(sdist), str(dest)], capture_output=True, text=True)
            if r.returncode:
                return r.stderr.strip()[-200:]
    except Exception as exc:  # noqa: BLE001 - recorded
        return f"{type(exc).__name__}: {exc}"
    return ""


def _tree(dest: Path) -> Path:
    if (dest / "pyproject.toml").exists():  # pip unpacks the sdist's one top folder's contents
        return dest
    (top,) = list(dest.iterdir())
    return top


def _members(wheel: Path) -> dict[str, tuple[int, bytes]]:
    """Each member but RECORD: its permission bits (those hatchling keeps: the executable ones) and bytes."""
    with zipfile.ZipFile(wheel) as z:
        return {
            i.filename: ((i.external_attr >> 16) & 0o7777, z.read(i))
            for i in z.infolist()
            if not i.filename.endswith("/RECORD")
        }


def _build(tree: Path, out: Path, *, other: bool) -> tuple[Path | None, str]:
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o777)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp/gate62/home-other" if other else os.environ["HOME"],
        "LANG": "C.UTF-8",
    }
    py = SYSTEM_PY if other else PIPS["pip23.2.1"]
    cmd = [py, "-m", "pip", "wheel", "--no-deps", "--no-index", "--no-cache-dir", "--disable-pip-version-check"]
    cmd += ["--find-links", LINKS, "-w", str(out), str(tree)]
    r = subprocess.run((OTHER if other else []) + cmd, capture_output=True, text=True, env=env, timeout=300)
    wheels = list(out.glob("*.whl"))
    if r.returncode or len(wheels) != 1:
        text = (r.stderr or r.stdout).strip()
        errors = [line.strip() for line in text.splitlines() if "Error" in line and "error:" not in line]
        return None, (errors[-1] if errors else text[-300:])[:300]
    return wheels[0], ""


def _against(wheel: Path | None, reference: dict[str, bytes], why: str) -> str:
    if wheel is None:
        return f"failed: {why}"
    got = _members(wheel)
    missing = sorted(set(reference) - set(got))
    extra = sorted(set(got) - set(reference))
    changed = sorted(
        f"{n} {oct(got[n][0])}" if got[n][1] == reference[n][1] else n
        for n in set(got) & set(reference)
        if got[n] != reference[n]
    )
    if not (missing or extra or changed):
        return "the wheel as built"
    return f"missing {len(missing)} {missing[:3]} extra {extra[:3]} changed {changed[:3]}"


def modes(built: Path, out_json: Path) -> None:
    assert os.geteuid() == 0, "modes unpacks as root"
    os.umask(0o022)
    sdist = next(built.glob("*.tar.gz"))
    wheel = next(built.glob("*.whl"))
    reference = _members(wheel)
    root = sdist.name.removesuffix(".tar.gz")
    base = sdist_members(sdist)
    work = Path(tempfile.mkdtemp(prefix="g62modes-", dir="/tmp"))
    os.chmod(work, 0o755)
    Path("/tmp/gate62/home-other").mkdir(parents=True, exist_ok=True)
    os.chmod("/tmp/gate62/home-other", 0o777)
    tools = ["tarfile", "tarfile data filter", "GNU tar", *PIPS]
    results = []
    only = os.environ.get("GATE62_ONLY", "")
    for label, member, mode, uid, gid in MODE_CASES:
        if only and label not in only.split("|"):
            continue
        path = work / label.replace(" ", "_") / sdist.name
        path.parent.mkdir(parents=True)
        path.write_bytes(_mode_sdist(base, root, member, mode, uid, gid))
        os.chmod(path.parent, 0o755)
        entry: dict[str, object] = {"case": label, "gate": _gate_codes(path), "unpacked": {}}
        for tool in tools:
            dest = path.parent / tool.replace(" ", "_")
            failed = _unpack(tool, path, dest)
            if failed:
                entry["unpacked"][tool] = {"failed": failed}  # type: ignore[index]
                continue
            tree = _tree(dest)
            target = tree / member
            st = target.lstat()
            probe = subprocess.run(
                [*OTHER, SYSTEM_PY, "-I", "-c", PROBE, str(target), str(target if member == FOLDER else target.parent)],
                capture_output=True,
                text=True,
            )
            seen: dict[str, object] = {
                "mode": oct(stat.S_IMODE(st.st_mode)),
                "owner": f"{st.st_uid}:{st.st_gid}",
                "other user": json.loads(probe.stdout) if probe.returncode == 0 else probe.stderr[-200:],
            }
            if tool in ("GNU tar", "pip25.2"):
                built_wheel, why = _build(tree, path.parent / f"wheel-other-{tool.replace(' ', '_')}", other=True)
                seen["built by the other user"] = _against(built_wheel, reference, why)
                other = seen["other user"]
                if isinstance(other, dict) and (
                    other.get("open for writing") is True or other.get("make a file in its folder") is True
                ):
                    # the other user changes the tree; root builds it afterwards
                    writable = target if member == FILE and other.get("open for writing") is True else None
                    if writable is not None:
                        cmd = "import sys; open(sys.argv[1], 'a').write('\\nimport os  # by uid 65534\\n')"
                        subprocess.run([*OTHER, SYSTEM_PY, "-I", "-c", cmd, str(writable)], check=True)
                    else:
                        folder = target if member == FOLDER else target.parent
                        cmd = "import sys; open(sys.argv[1], 'w').write('print(1)  # by uid 65534\\n')"
                        subprocess.run([*OTHER, SYSTEM_PY, "-I", "-c", cmd, str(folder / "planted.py")], check=True)
                    root_wheel, why = _build(tree, path.parent / f"wheel-root-{tool.replace(' ', '_')}", other=False)
                    seen["built by root after the other user wrote"] = _against(root_wheel, reference, why)
            entry["unpacked"][tool] = seen  # type: ignore[index]
        results.append(entry)
        print(json.dumps(entry), flush=True)
    out_json.write_text(json.dumps(results, indent=1))
    shutil.rmtree(work)


def _installed_row(prefix: Path) -> str:
    """The installed RECORD's row for ``TARGET`` (pip keeps the wheel's hash, ``installer`` and uv may rehash)."""
    from gate62_cases import TARGET

    for record in prefix.rglob("*.dist-info/RECORD"):
        for line in record.read_text().splitlines():
            if line.startswith(TARGET + ","):
                return line.split(",", 1)[1]
    return "no row"


def record(built: Path, out_json: Path) -> None:
    import gate58_driver as g58  # reads BUILT_DIR from sys.argv[2], as this driver is called
    from gate62_cases import CASES, readings, record_bytes

    g58.UV = UV
    wheel = next(built.glob("*.whl"))
    members = wheel_members(wheel)
    record_name = next(m.name for m in members if m.name.endswith(b".dist-info/RECORD")).decode()
    rows = [(m.name.decode(), m.data) for m in members if m.name.decode() != record_name]
    target_data = dict(rows)["neurobrix/cli.py"]
    work = Path(tempfile.mkdtemp(prefix="g62record-", dir="/tmp"))
    tools = [*PIPS, "installer", "installer validated", "uv"]

    def install(tool: str, dist: Path, root: Path):
        root.mkdir(parents=True, exist_ok=True)
        if tool in PIPS:
            return g58.pip_install(PIPS[tool], dist, root)
        if tool == "uv":
            return g58.uv_install(dist, root)
        if tool == "installer validated":
            from installer.sources import WheelFile

            try:
                with WheelFile.open(dist) as opened:
                    opened.validate_record(validate_contents=True)
            except Exception as exc:  # noqa: BLE001 - recorded

                class Refused:
                    returncode, stdout, stderr = 1, "", f"{type(exc).__name__}: {str(exc)[:200]}"

                return Refused, root / "prefix"
        return g58.installer_install(dist, root)

    def tree(tool: str, prefix: Path) -> dict:
        found = g58.tree(prefix, g58.skeleton() if tool == "uv" else set())
        return {
            k: v
            for k, v in found.items()
            if k.rstrip("/") not in ("lib", "lib/python3.11", "lib/python3.11/site-packages", "bin")
        }

    baseline = {}
    for tool in tools:
        r, prefix = install(tool, wheel, work / "as-built" / tool.replace(" ", "_"))
        assert r.returncode == 0, (tool, r.stderr)
        baseline[tool] = tree(tool, prefix)
    results = []
    for i, case in enumerate(CASES):
        folder = work / f"case{i}"
        folder.mkdir()
        dist = folder / wheel.name
        recorded = [
            RawMember(m.name, m.data)
            if m.name.decode() != record_name
            else RawMember(m.name, record_bytes(rows, record_name, case))
            for m in members
        ]
        dist.write_bytes(raw_zip(recorded))
        entry: dict[str, object] = {"case": case, "gate": _gate_codes(dist), "readings": readings(case, target_data)}
        for tool in tools:
            r, prefix = install(tool, dist, folder / tool.replace(" ", "_"))
            if r.returncode:
                entry[tool] = "refused: " + (r.stderr or r.stdout).strip().splitlines()[-1][:200]
                continue
            got = tree(tool, prefix)
            same = got == baseline[tool]
            diff = sorted(k for k in set(got) | set(baseline[tool]) if got.get(k) != baseline[tool].get(k))
            entry[tool] = ("as built" if same else f"differs: {diff[:4]}") + f"; installed row {_installed_row(prefix)}"
        results.append(entry)
        print(json.dumps(entry), flush=True)
    out_json.write_text(json.dumps(results, indent=1))
    shutil.rmtree(work)


if __name__ == "__main__":
    what, built_dir, out = sys.argv[1:4]
    {"modes": modes, "record": lambda b, o: record(b, o)}[what](Path(built_dir), Path(out))
