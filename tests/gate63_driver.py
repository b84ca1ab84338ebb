"""Gate round 63's runs (not a test file): round 62's sdist modes unpacked by uv, and the line separators of the
key-value files installed by each installer.

    python tests/gate63_driver.py uvmodes BUILT_DIR OUT.json
    python tests/gate63_driver.py libarchivemodes BUILT_DIR OUT.json
    python tests/gate63_driver.py separators BUILT_DIR OUT.json

``uvmodes`` must run as root: each sdist of round 62's ``MODE_CASES`` (tests/gate62_driver.py) is installed by uv
(``UV``, ``uv pip install --no-deps --offline --no-index --find-links LINKS --target``, a fresh cache each), which
unpacks it into its cache (``sdists-v*/path/*/*/src``) and builds it there with hatchling from LINKS; the member's mode
and owner in that tree are recorded, the second user (``nobody``) probes it as in round 62 and builds the tree with
the system's pip, and the wheel uv built and the one the second user built are compared with the wheel as built.

``libarchivemodes`` likewise unpacks each with libarchive (``libarchive.so.13``, through ctypes: bsdtar itself is not
installed here) under the flags bsdtar sets for root (``ARCHIVE_EXTRACT_TIME``, ``OWNER``, ``PERM``, ``ACL``,
``FFLAGS``, ``XATTR``, ``SECURE_SYMLINKS``, ``SECURE_NODOTDOT``), ``archive_read_extract`` per entry, and records the
same.

``separators``: each case of tests/gate63_cases.py (one file of this checkout's wheel with a line separator inside a
line, RECORD telling the truth) is judged by the gate and installed by each pip in round 62's ``PIPS``, by
``installer`` 1.1.0 and by uv; recorded per tool: the launchers in ``bin`` and what importlib.metadata reads back from
the installed dist (its Requires-Dist, Version, Summary, console scripts).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gate62_driver as g62  # noqa: E402
from gate_fixtures import RawMember, raw_zip, sdist_members, wheel_members, with_true_record  # noqa: E402

UV = os.environ.get("UV", "/tmp/g58-uv/bin/uv")
LINKS = g62.LINKS


def _uv_tree(sdist: Path, work: Path) -> tuple[Path | None, Path | None, str]:
    cache, target = work / "uv-cache", work / "uv-target"
    cmd = [UV, "pip", "install", "--no-deps", "--offline", "--no-index", "--find-links", LINKS]
    cmd += ["--cache-dir", str(cache), "--target", str(target), "--python", sys.executable, str(sdist)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    srcs = list(cache.glob("sdists-v*/path/*/*/src"))
    wheels = list(cache.glob("sdists-v*/path/*/*/*.whl"))
    why = "" if r.returncode == 0 else (r.stderr or r.stdout).strip()[-300:]
    return (srcs[0] if len(srcs) == 1 else None), (wheels[0] if len(wheels) == 1 else None), why


def uvmodes(built: Path, out_json: Path) -> None:
    assert os.geteuid() == 0, "uvmodes unpacks as root"
    os.umask(0o022)
    sdist = next(built.glob("*.tar.gz"))
    reference = g62._members(next(built.glob("*.whl")))
    root = sdist.name.removesuffix(".tar.gz")
    base = sdist_members(sdist)
    work = Path(tempfile.mkdtemp(prefix="g63modes-", dir="/tmp"))
    os.chmod(work, 0o755)
    Path("/tmp/gate62/home-other").mkdir(parents=True, exist_ok=True)
    results = []
    for label, member, mode, uid, gid in g62.MODE_CASES:
        case = work / label.replace(" ", "_")
        case.mkdir()
        path = case / sdist.name
        path.write_bytes(g62._mode_sdist(base, root, member, mode, uid, gid))
        entry: dict[str, object] = {"case": label, "gate": g62._gate_codes(path)}
        tree, wheel, why = _uv_tree(path, case)
        entry["uv install"] = why or "installed"
        entry["uv's wheel"] = g62._against(wheel, reference, why)
        if tree is not None:
            target = tree / member
            st = target.lstat()
            probe = subprocess.run(
                [
                    *g62.OTHER,
                    g62.SYSTEM_PY,
                    "-I",
                    "-c",
                    g62.PROBE,
                    str(target),
                    str(target if member == g62.FOLDER else target.parent),
                ],
                capture_output=True,
                text=True,
            )
            entry["mode"] = oct(stat.S_IMODE(st.st_mode))
            entry["owner"] = f"{st.st_uid}:{st.st_gid}"
            entry["other user"] = json.loads(probe.stdout) if probe.returncode == 0 else probe.stderr[-200:]
            # the cache lies under the case folder (755): the second user may reach the tree
            other_wheel, why = g62._build(tree, case / "wheel-other", other=True)
            entry["built by the other user"] = g62._against(other_wheel, reference, why)
        results.append(entry)
        print(json.dumps(entry), flush=True)
    out_json.write_text(json.dumps(results, indent=1))
    shutil.rmtree(work)


# bsdtar's extract flags as root (tar/bsdtar.c): time, owner, permissions, ACLs, file flags, xattrs, and its two
# defaults against links and ".."
_BSDTAR_ROOT_FLAGS = 0x4 | 0x1 | 0x2 | 0x20 | 0x40 | 0x80 | 0x100 | 0x200


def _libarchive_unpack(sdist: Path, dest: Path) -> str:
    import ctypes

    lib = ctypes.CDLL("libarchive.so.13")
    lib.archive_read_new.restype = ctypes.c_void_p
    lib.archive_error_string.restype = ctypes.c_char_p
    for f in ("archive_read_support_filter_all", "archive_read_support_format_all", "archive_read_free"):
        getattr(lib, f).argtypes = [ctypes.c_void_p]
    lib.archive_read_open_filename.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.archive_read_next_header.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.archive_read_extract.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    lib.archive_error_string.argtypes = [ctypes.c_void_p]
    a = lib.archive_read_new()
    lib.archive_read_support_filter_all(a)
    lib.archive_read_support_format_all(a)
    here = os.getcwd()
    dest.mkdir(parents=True)
    os.chdir(dest)
    errors = []
    try:
        if lib.archive_read_open_filename(a, str(sdist).encode(), 10240) != 0:
            return str(lib.archive_error_string(a))
        entry = ctypes.c_void_p()
        while (r := lib.archive_read_next_header(a, ctypes.byref(entry))) in (0, -20):  # OK, WARN
            if lib.archive_read_extract(a, entry, _BSDTAR_ROOT_FLAGS) not in (0, -20):
                errors.append(str(lib.archive_error_string(a)))
        if r != 1:  # ARCHIVE_EOF
            errors.append(str(lib.archive_error_string(a)))
    finally:
        lib.archive_read_free(a)  # runs the deferred fixups (folder modes, times) by the relative names: before chdir
        os.chdir(here)
    return "; ".join(errors)[-300:]


def libarchivemodes(built: Path, out_json: Path) -> None:
    assert os.geteuid() == 0, "libarchivemodes unpacks as root"
    os.umask(0o022)
    sdist = next(built.glob("*.tar.gz"))
    reference = g62._members(next(built.glob("*.whl")))
    root = sdist.name.removesuffix(".tar.gz")
    base = sdist_members(sdist)
    work = Path(tempfile.mkdtemp(prefix="g63la-", dir="/tmp"))
    os.chmod(work, 0o755)
    results = []
    only = os.environ.get("GATE63_ONLY", "")
    for label, member, mode, uid, gid in g62.MODE_CASES:
        if only and not label.startswith(only):
            continue
        case = work / label.replace(" ", "_")
        case.mkdir()
        path = case / sdist.name
        path.write_bytes(g62._mode_sdist(base, root, member, mode, uid, gid))
        entry: dict[str, object] = {"case": label, "gate": g62._gate_codes(path)}
        entry["unpacked"] = _libarchive_unpack(path, case / "tree") or "unpacked"
        target = case / "tree" / root / member
        if target.exists():
            st = target.lstat()
            probe = subprocess.run(
                [
                    *g62.OTHER,
                    g62.SYSTEM_PY,
                    "-I",
                    "-c",
                    g62.PROBE,
                    str(target),
                    str(target if member == g62.FOLDER else target.parent),
                ],
                capture_output=True,
                text=True,
            )
            entry["mode"] = oct(stat.S_IMODE(st.st_mode))
            entry["owner"] = f"{st.st_uid}:{st.st_gid}"
            entry["other user"] = json.loads(probe.stdout) if probe.returncode == 0 else probe.stderr[-200:]
            other_wheel, why = g62._build(case / "tree" / root, case / "wheel-other", other=True)
            entry["built by the other user"] = g62._against(other_wheel, reference, why)
        results.append(entry)
        print(json.dumps(entry), flush=True)
    out_json.write_text(json.dumps(results, indent=1))
    shutil.rmtree(work)


def _installed_view(prefix: Path) -> dict[str, object]:
    """What importlib.metadata reads back from the one dist installed under ``prefix``, and the launchers there."""
    code = (
        "import json, sys, importlib.metadata as m\n"
        "d = next(iter(m.distributions(path=sys.argv[1:])))\n"
        "print(json.dumps({'Version': d.version, 'Summary': d.metadata['Summary'],\n"
        " 'Requires-Dist': [r for r in (d.requires or []) if 'evil' in r],\n"
        " 'console_scripts': sorted(f'{e.name} = {e.value}' for e in d.entry_points.select(group='console_scripts'))}))"
    )
    sites = [str(p) for p in prefix.glob("**/site-packages")] or [str(prefix)]
    r = subprocess.run([sys.executable, "-I", "-c", code, *sites], capture_output=True, text=True)
    view: dict[str, object] = json.loads(r.stdout) if r.returncode == 0 else {"read": r.stderr.strip()[-200:]}
    bins = [p for p in prefix.rglob("bin") if p.is_dir()]
    skeleton = ("python", "activate", "deactivate", "pydoc")
    view["bin"] = sorted(p.name for b in bins for p in b.iterdir() if not p.name.startswith(skeleton))
    return view


def separators(built: Path, out_json: Path) -> None:
    import gate58_driver as g58
    from gate63_cases import CASES, apply

    g58.UV = UV
    wheel = next(built.glob("*.whl"))
    members = wheel_members(wheel)
    work = Path(tempfile.mkdtemp(prefix="g63sep-", dir="/tmp"))
    tools = [*g62.PIPS, "installer", "uv"]
    results = []
    for case in ["(the wheel as built)", *CASES]:
        altered = members if case not in CASES else apply(members, case)
        path = work / case.replace(" ", "_").replace("/", "_") / wheel.name
        path.parent.mkdir()
        path.write_bytes(raw_zip(with_true_record([RawMember(m.name, m.data) for m in altered])))
        entry: dict[str, object] = {"case": case, "gate": g62._gate_codes(path), "installed": {}}
        for tool in tools:
            root = path.parent / tool
            root.mkdir()
            try:
                if tool in g62.PIPS:
                    r, prefix = g58.pip_install(g62.PIPS[tool], path, root)
                elif tool == "uv":
                    r, prefix = g58.uv_install(path, root)
                else:
                    r, prefix = g58.installer_install(path, root)
                failed = (r.stderr or r.stdout or "failed").strip()[-200:] if r.returncode else ""
            except Exception as exc:  # noqa: BLE001 - recorded
                failed, prefix = f"{type(exc).__name__}: {exc}", root
            if failed:
                entry["installed"][tool] = {"failed": failed}  # type: ignore[index]
                continue
            entry["installed"][tool] = _installed_view(prefix)  # type: ignore[index]
        results.append(entry)
        print(json.dumps(entry), flush=True)
    out_json.write_text(json.dumps(results, indent=1))
    shutil.rmtree(work)


if __name__ == "__main__":
    {"uvmodes": uvmodes, "libarchivemodes": libarchivemodes, "separators": separators}[sys.argv[1]](
        Path(sys.argv[2]), Path(sys.argv[3])
    )
