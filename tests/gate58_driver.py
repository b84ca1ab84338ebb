"""Gate round 58's corpus and installer runs (not a test file): hostile wheels and sdists by attack class, made from
this project's own wheel and sdist, each judged by the gate and installed by pip 23.2 (this interpreter's), pip 26.3,
uv 0.13.9 and ``installer``, each tree compared with that tool's install of the dist as built.

    GATE58_PIP26=VENV/bin/python GATE58_UV=UV python tests/gate58_driver.py wheels BUILT_DIR OUT.json [NAME ...]
    GATE58_PIP26=VENV/bin/python GATE58_UV=UV python tests/gate58_driver.py sdists BUILT_DIR OUT.json LINKS [NAME ...]

BUILT_DIR holds the wheel and sdist ``python -m gate build`` makes; LINKS a folder holding hatchling and its
dependencies' wheels (the sdists are built by each front end in isolation from it, offline).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import unicodedata
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gate_fixtures import (  # noqa: E402
    RawMember,
    RawTarMember,
    raw_tar,
    raw_zip,
    sdist_members,
    wheel_members,
    with_true_record,
)

BUILT = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("dist")
W = next(BUILT.glob("*.whl"), BUILT / "neurobrix-0.1.0-py3-none-any.whl")
S = next(BUILT.glob("*.tar.gz"), BUILT / "neurobrix-0.1.0.tar.gz")
R = S.name[: -len(".tar.gz")]
DI = W.name.split("-")[0] + "-" + W.name.split("-")[1] + ".dist-info"
DATA = DI[: -len(".dist-info")] + ".data"

PIP23 = sys.executable
PIP26 = os.environ.get("GATE58_PIP26", "pip26/bin/python")
UV = os.environ.get("GATE58_UV", "uv")
TOOL_OWN = {"INSTALLER", "REQUESTED", "direct_url.json", "uv_cache.json", "uv_build.json"}
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
ENV.update(PIP_CONFIG_FILE="/dev/null", UV_NO_CONFIG="1", PYTHONDONTWRITEBYTECODE="1")


def _site(prefix: Path) -> Path:
    return prefix / "lib" / "python3.11" / "site-packages"


def pip_install(python, wheel, root, extra=()):
    prefix = root / "prefix"
    r = subprocess.run(
        [
            python,
            "-I",
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--no-compile",
            "--no-cache-dir",
            "--ignore-installed",
            "--no-warn-script-location",
            "--disable-pip-version-check",
            "--prefix",
            str(prefix),
            *extra,
            str(wheel),
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    return r, prefix


def uv_install(wheel, root, extra=()):
    venv = root / "venv"
    subprocess.run([UV, "venv", "-q", "--python", sys.executable, str(venv)], check=True, capture_output=True, env=ENV)
    r = subprocess.run(
        [
            UV,
            "pip",
            "install",
            "--python",
            str(venv / "bin" / "python"),
            "--no-deps",
            "--offline",
            "--no-cache",
            "--no-compile",
            *extra,
            str(wheel),
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    return r, venv


def installer_install(wheel, root):
    from installer import install
    from installer.destinations import SchemeDictionaryDestination
    from installer.sources import WheelFile

    prefix = root / "prefix"
    site = _site(prefix)
    scheme = {
        "purelib": str(site),
        "platlib": str(site),
        "scripts": str(prefix / "bin"),
        "headers": str(prefix / "include" / "neurobrix"),
        "data": str(prefix),
    }
    dest = SchemeDictionaryDestination(scheme, interpreter=sys.executable, script_kind="posix")

    class R:
        returncode = 0
        stdout = ""
        stderr = ""

    try:
        with WheelFile.open(wheel) as w:
            install(w, dest, {"INSTALLER": b"installer\n"})
    except Exception as e:
        R.returncode = 1
        R.stderr = f"{type(e).__name__}: {e}"
    return R, prefix


INSTALLERS = ("pip23", "pip26", "uv", "installer")


def install(tool, wheel, root):
    root.mkdir(parents=True, exist_ok=True)
    if tool == "pip23":
        return pip_install(PIP23, wheel, root)
    if tool == "pip26":
        return pip_install(PIP26, wheel, root)
    if tool == "uv":
        return uv_install(wheel, root)
    if tool == "installer":
        return installer_install(wheel, root)
    raise ValueError(tool)


def tree(prefix: Path, baseline_venv=None):
    """files under prefix (venv skeleton left out): rel -> (kind, mode, bytes-normalised)"""
    out = {}
    skel = set()
    if baseline_venv is not None:
        skel = baseline_venv
    for p in sorted(prefix.rglob("*")):
        rel = p.relative_to(prefix).as_posix()
        if rel in skel:
            continue
        st = p.lstat()
        if stat.S_ISLNK(st.st_mode):
            out[rel] = ("link", 0, os.readlink(p).encode())
            continue
        if stat.S_ISDIR(st.st_mode):
            out[rel + "/"] = ("dir", stat.S_IMODE(st.st_mode), b"")
            continue
        data = p.read_bytes()
        name = rel.rsplit("/", 1)[-1]
        if ".dist-info/" in rel and name in TOOL_OWN:
            continue
        if ".dist-info/" in rel and name == "RECORD":
            named = sorted({line.split(b",")[0] for line in data.splitlines() if line})
            data = b"\n".join(
                n
                for n in named
                if n.rsplit(b"/", 1)[-1].decode("utf-8", "replace") not in TOOL_OWN
                and b"__pycache__" not in n
                and not n.startswith(b"../../../bin/")
                and not n.startswith(b"../../bin/")
            )
        if rel.startswith("bin/") and data.startswith(b"#!"):
            data = b"#!<shebang>\n" + data.split(b"\n", 1)[1]
        out[rel] = ("file", stat.S_IMODE(st.st_mode), data)
    return out


_SKEL = None


def skeleton():
    global _SKEL
    if _SKEL is None:
        import tempfile

        d = Path(tempfile.mkdtemp(prefix="gate58-venv-"))
        subprocess.run([UV, "venv", "-q", "--python", sys.executable, str(d / "venv")], check=True, env=ENV)
        _SKEL = {
            p.relative_to(d / "venv").as_posix() + ("/" if p.is_dir() and not p.is_symlink() else "")
            for p in (d / "venv").rglob("*")
        }
        _SKEL = {s.rstrip("/") for s in _SKEL}
    return _SKEL


def installed(tool, wheel, root):
    r, prefix = install(tool, wheel, root)
    if r.returncode != 0:
        return None, (r.stderr or r.stdout).strip()[-400:]
    t = tree(prefix, skeleton() if tool == "uv" else set())
    t = {
        k: v
        for k, v in t.items()
        if k.rstrip("/") not in ("lib", "lib/python3.11", "lib/python3.11/site-packages", "bin")
    }
    return t, ""


def base():
    return wheel_members(W)


def m(ms, name):
    return next(x for x in ms if x.name == name.encode())


def true(ms):
    return with_true_record(ms)


def rec(ms):
    return m(ms, f"{DI}/RECORD")


def b64(d, algo="sha256"):
    return base64.urlsafe_b64encode(hashlib.new(algo, d).digest()).rstrip(b"=").decode()


def rewrite_record(ms, fn):
    r = rec(ms)
    rows = r.data.decode().splitlines()
    r.data = fn(rows)
    return ms


WHEELS: dict[str, tuple[str, Callable[[], bytes]]] = {}
V = WHEELS


def v(cls, name):
    def deco(f):
        V[name] = (cls, f)
        return f

    return deco


# ---- control / honest spellings (expected to pass)
@v("control", "as built")
def _():
    return raw_zip(base())


@v("zip", "all stored")
def _():
    ms = base()
    for x in ms:
        x.method = zipfile.ZIP_STORED
    return raw_zip(ms)


@v("zip", "utf8 flag all")
def _():
    ms = base()
    for x in ms:
        x.flags |= 0x800
    return raw_zip(ms)


@v("zip", "deflate level 9")
def _():
    ms = base()
    for x in ms:
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        x.compressed = c.compress(x.data) + c.flush()
    return raw_zip(ms)


@v("zip", "deflate level 1")
def _():
    ms = base()
    for x in ms:
        c = zlib.compressobj(1, zlib.DEFLATED, -15)
        x.compressed = c.compress(x.data) + c.flush()
    return raw_zip(ms)


@v("zip", "deflate level 0 (stored blocks)")
def _():
    ms = base()
    for x in ms:
        c = zlib.compressobj(0, zlib.DEFLATED, -15)
        x.compressed = c.compress(x.data) + c.flush()
    return raw_zip(ms)


@v("zip", "deflate with sync flush")
def _():
    ms = base()
    for x in ms:
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        x.compressed = c.compress(x.data) + c.flush(zlib.Z_SYNC_FLUSH) + c.flush()
    return raw_zip(ms)


@v("zip", "folder entries 755")
def _():
    ms = base()
    folders = sorted({x.name.rsplit(b"/", 1)[0] + b"/" for x in ms if b"/" in x.name})
    return raw_zip([RawMember(f, b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755) for f in folders] + ms)


@v("zip", "folder entries deflated empty")
def _():
    ms = base()
    folders = sorted({x.name.rsplit(b"/", 1)[0] + b"/" for x in ms if b"/" in x.name})
    return raw_zip([RawMember(f, b"", mode=stat.S_IFDIR | 0o755) for f in folders] + ms)


@v("zip", "folder entry of file mode")
def _():
    ms = base()
    return raw_zip([RawMember(b"neurobrix/", b"", method=zipfile.ZIP_STORED, mode=stat.S_IFREG | 0o644)] + ms)


@v("zip", "folder entry mode 700")
def _():
    ms = base()
    return raw_zip([RawMember(b"neurobrix/", b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o700)] + ms)


@v("zip", "folder entry mode 777")
def _():
    ms = base()
    return raw_zip([RawMember(b"neurobrix/", b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o777)] + ms)


@v("zip", "mode 444 all")
def _():
    ms = base()
    for x in ms:
        x.mode = stat.S_IFREG | 0o444
    return raw_zip(ms)


@v("zip", "mode 644 no type bits")
def _():
    ms = base()
    for x in ms:
        x.mode = 0o644
    return raw_zip(ms)


@v("zip", "mode 664 group write")
def _():
    ms = base()
    m(ms, "neurobrix/cli.py").mode = stat.S_IFREG | 0o664
    return raw_zip(ms)


@v("zip", "mode 755 on module")
def _():
    ms = base()
    m(ms, "neurobrix/cli.py").mode = stat.S_IFREG | 0o755
    return raw_zip(ms)


@v("zip", "mode 744 on module")
def _():
    ms = base()
    m(ms, "neurobrix/cli.py").mode = stat.S_IFREG | 0o744
    return raw_zip(ms)


@v("zip", "mode 010 type bits only exec other")
def _():
    ms = base()
    m(ms, "neurobrix/cli.py").mode = stat.S_IFREG | 0o645
    return raw_zip(ms)


@v("zip", "symlink type bits on module")
def _():
    ms = base()
    m(ms, "neurobrix/cli.py").mode = stat.S_IFLNK | 0o644
    return raw_zip(ms)


@v("zip", "symlink member to other file")
def _():
    ms = base()
    x = m(ms, "neurobrix/cli.py")
    x.mode = stat.S_IFLNK | 0o777
    return raw_zip(ms)


@v("zip", "fifo type bits")
def _():
    ms = base()
    m(ms, "neurobrix/cli.py").mode = stat.S_IFIFO | 0o644
    return raw_zip(ms)


@v("zip", "dir type bits on file")
def _():
    ms = base()
    m(ms, "neurobrix/cli.py").mode = stat.S_IFDIR | 0o644
    return raw_zip(ms)


@v("zip", "socket type bits")
def _():
    ms = base()
    m(ms, "neurobrix/cli.py").mode = stat.S_IFSOCK | 0o644
    return raw_zip(ms)


@v("zip", "duplicate member same bytes")
def _():
    ms = base()
    x = m(ms, "neurobrix/cli.py")
    return raw_zip(ms[:-1] + [RawMember(x.name, x.data)] + ms[-1:])


@v("zip", "duplicate member other bytes")
def _():
    ms = base()
    x = m(ms, "neurobrix/cli.py")
    return raw_zip(ms[:-1] + [RawMember(x.name, x.data + b"\nimport os\n")] + ms[-1:])


@v("zip", "case collision")
def _():
    ms = base()
    x = m(ms, "neurobrix/cli.py")
    return raw_zip(true(ms + [RawMember(b"neurobrix/CLI.py", x.data + b"#")]))


@v("zip", "data descriptor")
def _():
    ms = base()
    m(ms, "neurobrix/cli.py").flags |= 0x8
    return raw_zip(ms)


@v("zip", "zip64 extra")
def _():
    ms = base()
    x = m(ms, "neurobrix/cli.py")
    x.extra = struct.pack("<HHQQ", 1, 16, len(x.data), len(x.stored()))
    return raw_zip(ms)


@v("zip", "local name differs")
def _():
    ms = base()
    m(ms, "neurobrix/cli.py").local_name = b"neurobrix/clj.py"
    return raw_zip(ms)


@v("zip", "local size differs")
def _():
    ms = base()
    x = m(ms, "neurobrix/cli.py")
    x.local_size = len(x.data) + 1
    return raw_zip(ms)


@v("zip", "UT extra mtime")
def _():
    ms = base()
    for x in ms:
        # MS-DOS 0x5C21 date 0 -> raw_zip writes time 0, date 0x5C21 (2026-01-01 00:00:00) ; UTC
        t = int(time.mktime((2026, 1, 1, 0, 0, 0, 0, 0, -1)))
        x.extra = struct.pack("<HHBI", 0x5455, 5, 1, t)
    return raw_zip(ms)


@v("zip", "ux extra uid 0")
def _():
    ms = base()
    for x in ms:
        x.extra = struct.pack("<HHBBIBI", 0x7875, 11, 1, 4, 0, 4, 0)
    return raw_zip(ms)


@v("zip", "ux extra uid 1000")
def _():
    ms = base()
    m(ms, "neurobrix/cli.py").extra = struct.pack("<HHBBIBI", 0x7875, 11, 1, 4, 1000, 4, 1000)
    return raw_zip(ms)


@v("zip", "unknown extra id")
def _():
    ms = base()
    m(ms, "neurobrix/cli.py").extra = struct.pack("<HH4s", 0xCAFE, 4, b"abcd")
    return raw_zip(ms)


@v("zip", "unicode path extra")
def _():
    ms = base()
    x = m(ms, "neurobrix/cli.py")
    up = b"neurobrix/clj.py"
    x.extra = struct.pack("<HHBI", 0x7075, 5 + len(up), 1, zlib.crc32(x.name)) + up
    return raw_zip(ms)


@v("zip", "zip comment")
def _():
    return raw_zip(base(), comment=b"hello")


@v("zip", "entry comment")
def _():
    ms = base()
    m(ms, "neurobrix/cli.py").comment = b"hi"
    return raw_zip(ms)


@v("zip", "prepended bytes")
def _():
    return raw_zip(base(), before=b"#!/bin/sh\nexit 0\n")


@v("zip", "appended bytes")
def _():
    return raw_zip(base(), after=b"\0" * 16)


@v("zip", "hidden local entry")
def _():
    ms = base()
    return raw_zip(ms[:1] + [RawMember(b"neurobrix/evil.py", b"x=1\n", listed=False)] + ms[1:])


@v("zip", "record not last")
def _():
    ms = base()
    r = rec(ms)
    ms.remove(r)
    return raw_zip([r] + ms)


@v("zip", "dist-info first")
def _():
    ms = base()
    di = [x for x in ms if x.name.startswith(DI.encode()) and not x.name.endswith(b"RECORD")]
    rest = [x for x in ms if x not in di and not x.name.endswith(b"RECORD")]
    return raw_zip(true([*di, *rest, rec(ms)]))


@v("zip", "members reversed, record true")
def _():
    ms = base()
    r = rec(ms)
    rest = [x for x in ms if x is not r][::-1]
    return raw_zip(true(rest + [r]))


@v("zip", "crc wrong")
def _():
    ms = base()
    x = m(ms, "neurobrix/cli.py")
    x.crc = (zlib.crc32(x.data) + 1) & 0xFFFFFFFF
    return raw_zip(ms)


@v("zip", "encrypted flag")
def _():
    ms = base()
    m(ms, "neurobrix/cli.py").flags |= 1
    return raw_zip(ms)


@v("zip", "bzip2 member")
def _():
    ms = base()
    m(ms, "neurobrix/cli.py").method = zipfile.ZIP_BZIP2
    return raw_zip(ms)


@v("zip", "member past declared size")
def _():
    ms = base()
    x = m(ms, "neurobrix/cli.py")
    x.size = len(x.data) - 1
    return raw_zip(ms)


def patch_version_made_by(data: bytes, value: int, name=b"neurobrix/cli.py"):
    b = bytearray(data)
    i = 0
    while True:
        i = b.find(b"PK\x01\x02", i)
        if i < 0:
            break
        nl = struct.unpack_from("<H", b, i + 28)[0]
        if name is None or b[i + 46 : i + 46 + nl] == name:
            struct.pack_into("<H", b, i + 4, value)
        i += 4
    return bytes(b)


@v("zip", "made by MS-DOS with unix mode exec")
def _():
    ms = base()
    m(ms, "neurobrix/cli.py").mode = stat.S_IFREG | 0o755
    return patch_version_made_by(raw_zip(ms), 0x0014)


@v("zip", "made by MS-DOS, all")
def _():
    return patch_version_made_by(raw_zip(base()), 0x0014, None)


@v("zip", "made by NTFS host")
def _():
    return patch_version_made_by(raw_zip(base()), 0x0A14)


@v("zip", "made by unix 2.0")
def _():
    return patch_version_made_by(raw_zip(base()), 0x0314, None)


@v("zip", "made by unix 4.5")
def _():
    return patch_version_made_by(raw_zip(base()), 0x032D, None)


@v("zip", "time 1980")
def _():
    d = bytearray(raw_zip(base()))
    # patch date 0x5C21 -> 0x0021 (1980-01-01) in both headers of every member
    i = 0
    while True:
        j = d.find(b"PK\x03\x04", i)
        if j < 0:
            break
        struct.pack_into("<H", d, j + 12, 0x0021)
        i = j + 4
    i = 0
    while True:
        j = d.find(b"PK\x01\x02", i)
        if j < 0:
            break
        struct.pack_into("<H", d, j + 14, 0x0021)
        i = j + 4
    return bytes(d)


# ---- RECORD quirks
def algo(a):
    def f():
        ms = base()

        def fn(rows):
            out = []
            for row in rows:
                p, h, s = row.split(",")
                if h:
                    h = f"{a}=" + b64(m(ms, p).data, a)
                out.append(f"{p},{h},{s}")
            return ("\n".join(out) + "\n").encode()

        return raw_zip(rewrite_record(ms, fn))

    return f


for a in ("sha384", "sha512", "sha224", "md5", "sha1", "sha3_256", "blake2b"):
    V[f"record {a}"] = ("record", algo(a))


def rowmap(fn, target="neurobrix/cli.py"):
    def f():
        ms = base()

        def g(rows):
            out = []
            for row in rows:
                p, h, s = row.split(",")
                if p == target:
                    r = fn(p, h, s)
                    if r is None:
                        continue
                    out.extend(r if isinstance(r, list) else [r])
                else:
                    out.append(row)
            return ("\n".join(out) + "\n").encode()

        return raw_zip(rewrite_record(ms, g))

    return f


RECQ = {
    "hash with padding": lambda p, h, s: f"{p},{h}=,{s}",
    "hash std base64": lambda p, h, s: (
        f"{p},{h.replace('-', '+').replace('_', '/')},{s}" if ("-" in h or "_" in h) else f"{p},{h}=,{s}"
    ),
    "algo uppercase": lambda p, h, s: f"{p},{h.replace('sha256', 'SHA256')},{s}",
    "size plus sign": lambda p, h, s: f"{p},{h},+{s}",
    "size underscore": lambda p, h, s: f"{p},{h},{s[0]}_{s[1:]}",
    "size leading zero": lambda p, h, s: f"{p},{h},0{s}",
    "size arabic digits": lambda p, h, s: f"{p},{h}," + "".join(chr(0x660 + int(c)) for c in s),
    "size wrong": lambda p, h, s: f"{p},{h},{int(s) + 1}",
    "size empty": lambda p, h, s: f"{p},{h},",
    "hash empty": lambda p, h, s: f"{p},,{s}",
    "hash wrong": lambda p, h, s: f"{p},sha256={b64(b'x')},{s}",
    "row dropped": lambda p, h, s: None,
    "row doubled": lambda p, h, s: [f"{p},{h},{s}"] * 2,
    "row quoted": lambda p, h, s: f'"{p}",{h},{s}',
    "row dotslash": lambda p, h, s: f"./{p},{h},{s}",
    "row double slash": lambda p, h, s: p.replace("/", "//") + f",{h},{s}",
    "row backslash": lambda p, h, s: p.replace("/", "\\") + f",{h},{s}",
    "row upper case path": lambda p, h, s: p.upper() + f",{h},{s}",
    "row four fields": lambda p, h, s: f"{p},{h},{s},x",
    "row two fields": lambda p, h, s: f"{p},{h}",
    "row crlf": lambda p, h, s: f"{p},{h},{s}\r",
    "row trailing space": lambda p, h, s: f"{p},{h},{s} ",
    "extra row for absent file": lambda p, h, s: [f"{p},{h},{s}", f"neurobrix/ghost.py,{h},{s}"],
    "extra row outside site": lambda p, h, s: [f"{p},{h},{s}", f"../../../bin/evil,{h},{s}"],
    "extra row absolute": lambda p, h, s: [f"{p},{h},{s}", f"/etc/passwd,{h},{s}"],
    "row NFD of NFC": lambda p, h, s: f"{p},{h},{s}",
}
for k, fn in RECQ.items():
    V[f"record {k}"] = ("record", rowmap(fn))


@v("record", "record bom")
def _():
    ms = base()
    r = rec(ms)
    r.data = b"\xef\xbb\xbf" + r.data
    return raw_zip(ms)


@v("record", "record utf16")
def _():
    ms = base()
    r = rec(ms)
    r.data = r.data.decode().encode("utf-16")
    return raw_zip(ms)


@v("record", "record crlf all")
def _():
    ms = base()
    r = rec(ms)
    r.data = r.data.replace(b"\n", b"\r\n")
    return raw_zip(ms)


@v("record", "record self row with hash")
def _():
    ms = base()
    r = rec(ms)
    r.data = r.data.replace(f"{DI}/RECORD,,".encode(), f"{DI}/RECORD,sha256={b64(b'')},0".encode())
    return raw_zip(ms)


@v("record", "record self row dropped")
def _():
    ms = base()
    r = rec(ms)
    r.data = r.data.replace(f"{DI}/RECORD,,\n".encode(), b"")
    return raw_zip(ms)


@v("record", "record no final newline")
def _():
    ms = base()
    r = rec(ms)
    r.data = r.data.rstrip(b"\n")
    return raw_zip(ms)


@v("record", "record missing")
def _():
    ms = base()
    ms.remove(rec(ms))
    return raw_zip(ms)


@v("record", "record rows sorted")
def _():
    ms = base()
    r = rec(ms)
    lines = r.data.decode().splitlines()
    r.data = ("\n".join(sorted(lines[:-1]) + lines[-1:]) + "\n").encode()
    return raw_zip(ms)


@v("record", "record row for folder")
def _():
    ms = base()
    r = rec(ms)
    r.data = b"neurobrix/,,\n" + r.data
    return raw_zip(ms)


# ---- path quirks: a planted member (true RECORD) with a name
def planted(name: bytes, data=b"x = 1\n", flags=0):
    def f():
        ms = base()
        return raw_zip(true(ms + [RawMember(name, data, flags=flags)]))

    return f


PATHS = {
    "dotdot": b"neurobrix/../evil.py",
    "dotdot escape": b"../../evil.py",
    "absolute": b"/tmp/neurobrix-evil.py",
    "backslash": b"neurobrix\\evil.py",
    "backslash dotdot": b"..\\..\\evil.py",
    "dot component": b"neurobrix/./evil.py",
    "double slash": b"neurobrix//evil.py",
    "trailing dot": b"neurobrix/cli.py.",
    "trailing space": b"neurobrix/cli.py ",
    "NFD name": unicodedata.normalize("NFD", "neurobrix/caf\u00e9.py").encode(),
    "NFC name": unicodedata.normalize("NFC", "neurobrix/caf\u00e9.py").encode(),
    "drive letter": b"C:/evil.py",
    "ntfs stream": b"neurobrix/cli.py::$DATA",
    "nul": b"neurobrix/ev\0il.py",
    "empty component at end": b"neurobrix/evil/",
    "dotdot in name": b"neurobrix/..evil.py",
    "tilde": b"~/evil.py",
    "top level module": b"evil.py",
    "pycache": b"neurobrix/__pycache__/cli.cpython-311.pyc",
    "dist-info extra file": f"{DI}/evil.txt".encode(),
    "dist-info licenses": f"{DI}/licenses/LICENSE".encode(),
    "dist-info sboms": f"{DI}/sboms/x.json".encode(),
    "second dist-info": b"other-1.0.dist-info/METADATA",
    "dist-info case": b"NeuroBrix-0.1.0.dist-info/extra",
    "dist-info unnormalised version": b"neurobrix-0.1.0.0.dist-info/METADATA",
    "pth root": b"evil.pth",
    "pth in package": b"neurobrix/evil.pth",
    "sitecustomize": b"sitecustomize.py",
    "case of package": b"NeuroBrix/__init__.py",
    "utf8-flag non-ascii": ("neurobrix/\u00e9.py").encode(),
    "cp437 high byte no flag": b"neurobrix/\x82.py",
    "zero-width": "neurobrix/cl\u200bi.py".encode(),
    "fullwidth solidus": "neurobrix\uff0fevil.py".encode(),
    "dotless i alias": "neurobrix/cl\u0131.py".encode(),
    "long name": b"neurobrix/" + b"a" * 300 + b".py",
}
for k, n in PATHS.items():
    fl = 0x800 if any(c > 127 for c in n) and k != "cp437 high byte no flag" else 0
    V[f"path {k}"] = ("path", planted(n, flags=fl))


# path aliasing an existing file with altered bytes (replacement via alias)
def alias_of(name: bytes, target="neurobrix/cli.py"):
    def f():
        ms = base()
        x = m(ms, target)
        return raw_zip(true(ms + [RawMember(name, x.data + b"\nALIAS = 1\n")]))

    return f


for k, n in {
    "alias dot": b"neurobrix/./cli.py",
    "alias double slash": b"neurobrix//cli.py",
    "alias dotdot": b"neurobrix/ops/../cli.py",
    "alias upper": b"neurobrix/Cli.py",
    "alias backslash": b"neurobrix\\cli.py",
    "alias trailing slash dot": b"neurobrix/cli.py/.",
    "alias leading slash": b"/neurobrix/cli.py",
    "alias leading dotslash": b"./neurobrix/cli.py",
}.items():
    V[f"path {k}"] = ("path", alias_of(n))

# ---- .data
for k, n in {
    "scripts": "scripts/neurobrix-evil",
    "scripts python": "scripts/python",
    "headers": "headers/x.h",
    "purelib new": "purelib/evil.py",
    "platlib new": "platlib/evil.py",
    "data": "data/share/evil.txt",
    "purelib override": "purelib/neurobrix/cli.py",
    "data into site": "data/lib/python3.11/site-packages/evil.py",
    "unknown scheme": "foo/evil.txt",
    "purelib dotdot": "purelib/../evil.py",
    "data abs": "data//etc/evil",
    "scripts folder": "scripts/sub/evil",
    "empty scheme": "/evil.py",
    "upper scheme": "PURELIB/evil.py",
    "scripts shebang python": "scripts/evil2",
}.items():
    data = b"#!python\nprint(1)\n" if "scripts" in k else b"x = 1\n"
    V[f".data {k}"] = (".data", planted(f"{DATA}/{n}".encode(), data))
V[".data other project"] = (".data", planted(b"other-1.0.data/purelib/evil.py"))
V[".data name case"] = (".data", planted(b"NeuroBrix-0.1.0.data/purelib/evil.py"))
V[".data longer name"] = (".data", planted(f"{DATA}foo/purelib/evil.py".encode()))
V[".data unnormalised version"] = (".data", planted(b"neurobrix-0.1.0.0.data/purelib/evil.py"))


# ---- entry points / metadata / WHEEL
def replace_member(name, fn):
    def f():
        ms = base()
        x = m(ms, name)
        x.data = fn(x.data)
        return raw_zip(true(ms))

    return f


EP = f"{DI}/entry_points.txt"
for k, fn in {
    "console name upper": lambda d: d.replace(b"neurobrix =", b"NeuroBrix ="),
    "console name path": lambda d: d.replace(b"neurobrix =", b"../evil ="),
    "console name sub": lambda d: d.replace(b"neurobrix =", b"sub/evil ="),
    "extra console script": lambda d: d + b"pip = neurobrix.cli:main\n",
    "gui script": lambda d: d + b"[gui_scripts]\nneurobrix-gui = neurobrix.cli:main\n",
    "extras marker": lambda d: d.replace(b"neurobrix.cli:main", b"neurobrix.cli:main [x]"),
    "spaces around": lambda d: d.replace(b"neurobrix = ", b"neurobrix  =  "),
    "indented": lambda d: d.replace(b"neurobrix =", b"  neurobrix ="),
    "group case": lambda d: d.replace(b"[console_scripts]", b"[Console_Scripts]"),
    "crlf": lambda d: d.replace(b"\n", b"\r\n"),
    "no newline": lambda d: d.rstrip(b"\n"),
    "blank lines": lambda d: d + b"\n\n",
    "comment line": lambda d: d + b"# hi\n",
    "semicolon comment": lambda d: d + b"; x = y:z\n",
    "duplicate key": lambda d: d + b"neurobrix = os:system\n",
    "colon sep": lambda d: d.replace(b"neurobrix = ", b"neurobrix: "),
    "dots in name": lambda d: d.replace(b"neurobrix =", b"neurobrix.exe ="),
}.items():
    V[f"entry_points {k}"] = ("entry_points", replace_member(EP, fn))
V["entry_points missing"] = ("entry_points", lambda: raw_zip(true([x for x in base() if x.name != EP.encode()])))
WH = f"{DI}/WHEEL"
for k, fn in {
    "purelib false": lambda d: d.replace(b"Root-Is-Purelib: true", b"Root-Is-Purelib: false"),
    "purelib True": lambda d: d.replace(b"Root-Is-Purelib: true", b"Root-Is-Purelib: True"),
    "purelib trailing space": lambda d: d.replace(b"Root-Is-Purelib: true", b"Root-Is-Purelib: true "),
    "wheel-version 2.0": lambda d: d.replace(b"Wheel-Version: 1.0", b"Wheel-Version: 2.0"),
    "wheel-version 1.9": lambda d: d.replace(b"Wheel-Version: 1.0", b"Wheel-Version: 1.9"),
    "wheel-version 1.1": lambda d: d.replace(b"Wheel-Version: 1.0", b"Wheel-Version: 1.1"),
    "wheel-version 1": lambda d: d.replace(b"Wheel-Version: 1.0", b"Wheel-Version: 1"),
    "wheel-version 01.0": lambda d: d.replace(b"Wheel-Version: 1.0", b"Wheel-Version: 01.0"),
    "wheel-version missing": lambda d: d.replace(b"Wheel-Version: 1.0\n", b""),
    "tag other": lambda d: d.replace(b"Tag: py3-none-any", b"Tag: cp311-cp311-linux_x86_64"),
    "tag extra": lambda d: d + b"Tag: py2-none-any\n",
    "tag doubled": lambda d: d + b"Tag: py3-none-any\n",
    "build tag": lambda d: d + b"Build: 1\n",
    "key case": lambda d: d.replace(b"Root-Is-Purelib", b"root-is-purelib"),
    "crlf": lambda d: d.replace(b"\n", b"\r\n"),
    "generator other": lambda d: d.replace(b"Generator: hatchling", b"Generator: evil"),
    "missing purelib": lambda d: d.replace(b"Root-Is-Purelib: true\n", b""),
}.items():
    V[f"WHEEL {k}"] = ("WHEEL", replace_member(WH, fn))
MD = f"{DI}/METADATA"
for k, fn in {
    "name case": lambda d: d.replace(b"Name: neurobrix", b"Name: NeuroBrix"),
    "name underscore": lambda d: d.replace(b"Name: neurobrix", b"Name: neuro_brix"),
    "version 0.1.0.0": lambda d: d.replace(b"Version: 0.1.0", b"Version: 0.1.0.0", 1),
    "version v0.1.0": lambda d: d.replace(b"\nVersion: 0.1.0", b"\nVersion: v0.1.0", 1),
    "requires-dist added": lambda d: d.replace(b"\n\n", b"\nRequires-Dist: evil\n\n", 1),
    "requires-python other": lambda d: d.replace(b"Requires-Python:", b"Requires-Python: <3\nX-Old:", 1),
    "crlf": lambda d: d.replace(b"\n", b"\r\n"),
    "lone cr requires": lambda d: d.replace(b"\n\n", b"\rRequires-Dist: evil\n\n", 1),
    "metadata-version 2.1": lambda d: d.replace(b"Metadata-Version: 2.", b"Metadata-Version: 2.1\nX:", 1),
    "dynamic": lambda d: d.replace(b"\n\n", b"\nDynamic: Requires-Dist\n\n", 1),
    "folded name": lambda d: d.replace(b"Name: neurobrix", b"Name:\n neurobrix"),
}.items():
    V[f"METADATA {k}"] = ("METADATA", replace_member(MD, fn))
V["METADATA twine decoy"] = (
    "METADATA",
    planted(b"neurobrix/METADATA", b"Metadata-Version: 2.1\nName: neurobrix\nVersion: 9\n"),
)


# ---- round two: more of what the gate lets through
def flagbit(bit, name="neurobrix/cli.py", method=None):
    def f():
        ms = base()
        x = m(ms, name)
        x.flags |= bit
        if method is not None:
            x.method = method
        return raw_zip(ms)

    return f


for bit, k in (
    (0x2, "deflate hint bit1"),
    (0x4, "deflate hint bit2"),
    (0x10, "enhanced deflate bit4"),
    (0x20, "patched data bit5"),
    (0x40, "strong encryption bit6"),
    (0x80, "unused bit7"),
    (0x1000, "enhanced compression bit12"),
    (0x2000, "masked directory bit13"),
    (0x4000, "reserved bit14"),
    (0x8000, "reserved bit15"),
):
    V[f"zip flag {k}"] = ("zip", flagbit(bit))


def trailing_after_final(extra):
    def f():
        ms = base()
        x = m(ms, "neurobrix/cli.py")
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        x.compressed = c.compress(x.data) + c.flush() + extra
        return raw_zip(ms)

    return f


V["zip bytes after deflate end"] = ("zip", trailing_after_final(b"import os; os.system('x')\n"))
V["zip zeros after deflate end"] = ("zip", trailing_after_final(b"\0" * 64))


def second_stream():
    ms = base()
    x = m(ms, "neurobrix/cli.py")
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    d = zlib.compressobj(6, zlib.DEFLATED, -15)
    x.compressed = c.compress(x.data) + c.flush() + d.compress(b"EVIL = 1\n") + d.flush()
    return raw_zip(ms)


V["zip second deflate stream after end"] = ("zip", second_stream)


def internal_attr(val):
    def f():
        d = bytearray(raw_zip(base()))
        i = d.find(b"PK\x01\x02")
        struct.pack_into("<H", d, i + 36, val)
        return bytes(d)

    return f


V["zip internal attr text bit"] = ("zip", internal_attr(1))
V["zip internal attr 2"] = ("zip", internal_attr(2))


def dos_attr(bits, name=b"neurobrix/cli.py"):
    def f():
        d = bytearray(raw_zip(base()))
        i = 0
        while True:
            i = d.find(b"PK\x01\x02", i)
            if i < 0:
                break
            nl = struct.unpack_from("<H", d, i + 28)[0]
            if d[i + 46 : i + 46 + nl] == name:
                ext = struct.unpack_from("<I", d, i + 38)[0]
                struct.pack_into("<I", d, i + 38, ext | bits)
            i += 4
        return bytes(d)

    return f


V["zip dos archive bit"] = ("zip", dos_attr(0x20))
V["zip dos readonly bit on 644"] = ("zip", dos_attr(0x01))
V["zip dos hidden bit"] = ("zip", dos_attr(0x02))


def utf8_flag_nonascii_pkg():
    ms = base()
    x = m(ms, "neurobrix/cli.py")
    x.flags |= 0x800
    return raw_zip(ms)


def ut_local_atime():
    ms = base()
    t = int(time.mktime((2026, 1, 1, 0, 0, 0, 0, 0, -1)))
    for x in ms:
        x.extra = struct.pack("<HHBI", 0x5455, 5, 3, t)
        x.local_extra = struct.pack("<HHBII", 0x5455, 9, 3, t, t)
    return raw_zip(ms)


V["zip UT local atime"] = ("zip", ut_local_atime)


def ut_other_time():
    ms = base()
    for x in ms:
        x.extra = struct.pack("<HHBI", 0x5455, 5, 1, 0)
    return raw_zip(ms)


V["zip UT epoch mismatched"] = ("zip", ut_other_time)


def empty_file_member():
    ms = base()
    return raw_zip(true(ms + [RawMember(b"neurobrix/_empty_marker", b"")]))


V["path empty untracked file"] = ("path", empty_file_member)


def dir_entry_for_dist_info():
    ms = base()
    return raw_zip([RawMember(f"{DI}/".encode(), b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755)] + ms)


V["zip folder entry dist-info"] = ("zip", dir_entry_for_dist_info)
V["zip folder entry for .data"] = (
    "zip",
    lambda: raw_zip(
        [RawMember(f"{DATA}/".encode(), b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755)] + base()
    ),
)
V["zip folder entry for .data/scripts"] = (
    "zip",
    lambda: raw_zip(
        [RawMember(f"{DATA}/scripts/".encode(), b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755)] + base()
    ),
)
V["zip folder entry bin-like"] = (
    "zip",
    lambda: raw_zip(
        [RawMember(b"neurobrix/ops/sub/", b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755)] + base()
    ),
)
V["zip folder entry no slash"] = (
    "zip",
    lambda: raw_zip([RawMember(b"neurobrix", b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755)] + base()),
)
V["zip folder entry backslash"] = (
    "zip",
    lambda: raw_zip([RawMember(b"neurobrix\\", b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755)] + base()),
)


def empty_record_dup_names():
    ms = base()
    return raw_zip(ms + [RawMember(b"neurobrix/", b"", method=zipfile.ZIP_STORED, mode=stat.S_IFDIR | 0o755)])


V["zip folder entry after files"] = ("zip", empty_record_dup_names)


# ---- round three: header numbers
def patch_all(sig, off, fmt, val, name=None):
    def f():
        d = bytearray(raw_zip(base()))
        i = 0
        while True:
            i = d.find(sig, i)
            if i < 0:
                break
            if sig == b"PK\x01\x02" and name is not None:
                nl = struct.unpack_from("<H", d, i + 28)[0]
                if d[i + 46 : i + 46 + nl] != name:
                    i += 4
                    continue
            if sig == b"PK\x03\x04" and name is not None:
                nl = struct.unpack_from("<H", d, i + 26)[0]
                if d[i + 30 : i + 30 + nl] != name:
                    i += 4
                    continue
            struct.pack_into(fmt, d, i + off, val)
            i += 4
        return bytes(d)

    return f


def both(off_l, off_c, fmt, val, name=None):
    def f():
        d = patch_all(b"PK\x03\x04", off_l, fmt, val, name)()
        return _patch_bytes(d, b"PK\x01\x02", off_c, fmt, val, name)

    return f


def _patch_bytes(data, sig, off, fmt, val, name):
    d = bytearray(data)
    i = 0
    while True:
        i = d.find(sig, i)
        if i < 0:
            break
        nl = struct.unpack_from("<H", d, i + 28)[0]
        if name is None or d[i + 46 : i + 46 + nl] == name:
            struct.pack_into(fmt, d, i + off, val)
        i += 4
    return bytes(d)


CLI = b"neurobrix/cli.py"
V["zip version needed 10"] = ("zip", both(4, 6, "<H", 10, CLI))
V["zip version needed 0"] = ("zip", both(4, 6, "<H", 0, CLI))
V["zip version needed 14"] = ("zip", both(4, 6, "<H", 14, CLI))
V["zip disk start 1"] = ("zip", patch_all(b"PK\x01\x02", 34, "<H", 1, CLI))
V["zip eocd this-disk count differs"] = ("zip", lambda: _eocd(10, -1))
V["zip eocd disk numbers 1"] = ("zip", lambda: _eocd(4, 1, absolute=True))
V["zip eocd cd-disk 1"] = ("zip", lambda: _eocd(6, 1, absolute=True))


def _eocd(off, val, absolute=False):
    d = bytearray(raw_zip(base()))
    i = d.rfind(b"PK\x05\x06")
    cur = struct.unpack_from("<H", d, i + off)[0]
    struct.pack_into("<H", d, i + off, val if absolute else cur + val)
    return bytes(d)


V["zip mtime odd seconds field"] = ("zip", both(10, 12, "<H", 0x0001))
V["zip made-by unix 6.3"] = ("zip", lambda: patch_version_made_by(raw_zip(base()), 0x033F, None))
V["zip made-by macos host"] = ("zip", lambda: patch_version_made_by(raw_zip(base()), 0x1314, None))
V["zip made-by vfat host 14"] = ("zip", lambda: patch_version_made_by(raw_zip(base()), 0x0E14, None))


# ---- claims the docs make about uv
def extra_twice():
    ms = base()
    t = int(time.mktime((2026, 1, 1, 0, 0, 0, 0, 0, -1)))
    x = m(ms, "neurobrix/cli.py")
    x.extra = struct.pack("<HHBI", 0x5455, 5, 1, t) * 2
    return raw_zip(ms)


V["claim extra record twice"] = ("zip", extra_twice)
V["claim version needed 6.4"] = ("zip", both(4, 6, "<H", 64, CLI))
V["claim dos folder attr on file"] = ("zip", dos_attr(0x10))


def record_empty_line():
    ms = base()
    r = rec(ms)
    lines = r.data.split(b"\n")
    lines.insert(3, b"")
    r.data = b"\n".join(lines)
    return raw_zip(ms)


V["claim record empty line"] = ("record", record_empty_line)


def sbase():
    return sdist_members(S)


def gz(tar, **kw):
    return gzip.compress(tar, mtime=0, **kw)


def sget(ms, rel):
    return next(x for x in ms if x.name == f"{R}/{rel}")


SDISTS: dict[str, tuple[str, Callable[[], bytes]]] = {}


def sv(cls, name):
    def d(f):
        SDISTS[name] = (cls, f)
        return f

    return d


@sv("control", "as built")
def _():
    return S.read_bytes()


@sv("sdist", "raw ustar repack")
def _():
    return gz(raw_tar(sbase()))


def tf_repack(fmt, **extra):
    def f():
        buf = io.BytesIO()
        with tarfile.open(S) as src, tarfile.open(fileobj=buf, mode="w", format=fmt) as out:
            for i in src.getmembers():
                i.mtime = extra.get("mtime", i.mtime)
                out.addfile(i, src.extractfile(i) if i.isreg() else None)
        return gz(buf.getvalue())

    return f


SDISTS["tarfile GNU format"] = ("sdist", tf_repack(tarfile.GNU_FORMAT))
SDISTS["tarfile USTAR format"] = ("sdist", tf_repack(tarfile.USTAR_FORMAT))
SDISTS["tarfile PAX format"] = ("sdist", tf_repack(tarfile.PAX_FORMAT))
SDISTS["pax mtime fractional"] = (
    "sdist",
    lambda: gz(
        raw_tar(
            [
                RawTarMember(x.name, x.data, x.type, mode=x.mode, pax={"mtime": "1580601600.5"})
                if x.name.endswith("cli.py")
                else x
                for x in sbase()
            ]
        )
    ),
)
SDISTS["gzip level 1"] = ("sdist", lambda: gzip.compress(gzip.decompress(S.read_bytes()), compresslevel=1, mtime=0))
SDISTS["gzip level 9 mtime"] = (
    "sdist",
    lambda: gzip.compress(gzip.decompress(S.read_bytes()), compresslevel=9, mtime=1234567),
)


@sv("sdist", "folder entries")
def _():
    ms = sbase()
    folders = sorted({x.name.rsplit("/", 1)[0] for x in ms})
    allf = set()
    for f in folders:
        parts = f.split("/")
        for i in range(1, len(parts) + 1):
            allf.add("/".join(parts[:i]))
    return gz(raw_tar([RawTarMember(f + "/", b"", tarfile.DIRTYPE, mode=0o755) for f in sorted(allf)] + ms))


@sv("sdist", "members reversed")
def _():
    return gz(raw_tar(sbase()[::-1]))


@sv("sdist", "mode 755 folder entry 700")
def _():
    return gz(raw_tar([RawTarMember(f"{R}/", b"", tarfile.DIRTYPE, mode=0o700)] + sbase()))


@sv("sdist", "file mode 600")
def _():
    ms = sbase()
    sget(ms, "neurobrix/cli.py").mode = 0o600
    return gz(raw_tar(ms))


@sv("sdist", "file mode 444")
def _():
    ms = sbase()
    for x in ms:
        x.mode = 0o444
    return gz(raw_tar(ms))


@sv("sdist", "file mode 755")
def _():
    ms = sbase()
    sget(ms, "neurobrix/cli.py").mode = 0o755
    return gz(raw_tar(ms))


@sv("sdist", "file mode 664")
def _():
    ms = sbase()
    sget(ms, "neurobrix/cli.py").mode = 0o664
    return gz(raw_tar(ms))


def add(*extra):
    return lambda: gz(raw_tar(sbase() + list(extra)))


SDISTS["symlink member"] = (
    "tar types",
    add(RawTarMember(f"{R}/neurobrix/evil.py", b"", tarfile.SYMTYPE, linkname="cli.py")),
)
SDISTS["symlink replacing module"] = (
    "tar types",
    lambda: gz(
        raw_tar(
            [x for x in sbase() if not x.name.endswith("/neurobrix/buckets.py")]
            + [RawTarMember(f"{R}/neurobrix/buckets.py", b"", tarfile.SYMTYPE, linkname="cli.py")]
        )
    ),
)
SDISTS["hardlink member"] = (
    "tar types",
    add(RawTarMember(f"{R}/neurobrix/evil.py", b"", tarfile.LNKTYPE, linkname=f"{R}/neurobrix/cli.py")),
)
SDISTS["fifo member"] = ("tar types", add(RawTarMember(f"{R}/neurobrix/evil", b"", tarfile.FIFOTYPE)))
SDISTS["chardev member"] = ("tar types", add(RawTarMember(f"{R}/neurobrix/evil", b"", tarfile.CHRTYPE)))
SDISTS["contig member"] = ("tar types", add(RawTarMember(f"{R}/neurobrix/evil.py", b"x=1\n", tarfile.CONTTYPE)))
SDISTS["old-style folder (regular with slash)"] = (
    "tar types",
    add(RawTarMember(f"{R}/neurobrix/evil/", b"", tarfile.AREGTYPE)),
)
SDISTS["global pax header"] = (
    "tar types",
    lambda: gz(raw_tar([RawTarMember("pax_global_header", b"", tarfile.XGLTYPE)] + sbase())),
)
SDISTS["pax path override"] = (
    "tar types",
    lambda: gz(
        raw_tar(
            [
                RawTarMember(x.name, x.data, x.type, mode=x.mode, pax={"path": f"{R}/neurobrix/evil.py"})
                if x.name.endswith("buckets.py")
                else x
                for x in sbase()
            ]
        )
    ),
)
SDISTS["gnu longname"] = (
    "tar types",
    lambda: gz(
        raw_tar(
            [
                RawTarMember(x.name, x.data, x.type, mode=x.mode, gnu_long_name=f"{R}/neurobrix/evil.py")
                if x.name.endswith("buckets.py")
                else x
                for x in sbase()
            ]
        )
    ),
)
SDISTS["absolute member"] = ("tar paths", add(RawTarMember("/tmp/neurobrix-sdist-evil.py", b"x=1\n")))
SDISTS["dotdot member"] = ("tar paths", add(RawTarMember(f"{R}/../neurobrix-evil.py", b"x=1\n")))
SDISTS["dotdot inside"] = ("tar paths", add(RawTarMember(f"{R}/neurobrix/../neurobrix/evil.py", b"x=1\n")))
SDISTS["dot component alias"] = (
    "tar paths",
    lambda: gz(
        raw_tar(
            sbase()
            + [RawTarMember(f"{R}/neurobrix/./buckets.py", sget(sbase(), "neurobrix/buckets.py").data + b"\nEVIL=1\n")]
        )
    ),
)
SDISTS["duplicate member other bytes"] = (
    "tar paths",
    lambda: gz(
        raw_tar(
            sbase()
            + [RawTarMember(f"{R}/neurobrix/buckets.py", sget(sbase(), "neurobrix/buckets.py").data + b"\nEVIL=1\n")]
        )
    ),
)
SDISTS["case collision"] = ("tar paths", add(RawTarMember(f"{R}/neurobrix/Buckets.py", b"x=1\n")))
SDISTS["NFD name"] = (
    "tar paths",
    add(RawTarMember(unicodedata.normalize("NFD", f"{R}/neurobrix/caf\u00e9.py"), b"x=1\n")),
)
SDISTS["trailing slash on file"] = ("tar paths", add(RawTarMember(f"{R}/neurobrix/evil.py/", b"x=1\n")))
SDISTS["member outside root"] = ("tar paths", add(RawTarMember("other/evil.py", b"x=1\n")))
SDISTS["member at top"] = ("tar paths", add(RawTarMember("evil.py", b"x=1\n")))
SDISTS["root named otherwise"] = (
    "tar paths",
    lambda: gz(
        raw_tar([RawTarMember(x.name.replace(R, "NeuroBrix-0.1.0", 1), x.data, x.type, mode=x.mode) for x in sbase()])
    ),
)
SDISTS["setup.py added"] = ("sdist contents", add(RawTarMember(f"{R}/setup.py", b"import os\n")))
SDISTS["untracked module"] = ("sdist contents", add(RawTarMember(f"{R}/neurobrix/evil.py", b"x=1\n")))
SDISTS["hatch_build.py added"] = ("sdist contents", add(RawTarMember(f"{R}/hatch_build.py", b"x=1\n")))
SDISTS["gitignore dropped"] = (
    "sdist contents",
    lambda: gz(raw_tar([x for x in sbase() if not x.name.endswith("/.gitignore")])),
)
SDISTS["gitignore excludes ops"] = (
    "sdist contents",
    lambda: gz(
        raw_tar(
            [
                RawTarMember(x.name, x.data + b"\nops/\n", x.type, mode=x.mode) if x.name == f"{R}/.gitignore" else x
                for x in sbase()
            ]
        )
    ),
)
SDISTS["pyproject changed"] = (
    "pyproject",
    lambda: gz(
        raw_tar(
            [
                RawTarMember(
                    x.name,
                    x.data.replace(
                        b"[tool.hatch.build",
                        b"[tool.hatch.build.targets.wheel.force-include]\n"
                        b'"README.md" = "neurobrix/README.md"\n\n[tool.hatch.build',
                        1,
                    ),
                    x.type,
                    mode=x.mode,
                )
                if x.name == f"{R}/pyproject.toml"
                else x
                for x in sbase()
            ]
        )
    ),
)
SDISTS["pyproject build requires"] = (
    "pyproject",
    lambda: gz(
        raw_tar(
            [
                RawTarMember(
                    x.name,
                    x.data.replace(b'requires = ["hatchling', b'requires = ["setuptools", "hatchling', 1),
                    x.type,
                    mode=x.mode,
                )
                if x.name == f"{R}/pyproject.toml"
                else x
                for x in sbase()
            ]
        )
    ),
)
SDISTS["PKG-INFO requires-dist"] = (
    "PKG-INFO",
    lambda: gz(
        raw_tar(
            [
                RawTarMember(x.name, x.data.replace(b"\n\n", b"\nRequires-Dist: evil\n\n", 1), x.type, mode=x.mode)
                if x.name == f"{R}/PKG-INFO"
                else x
                for x in sbase()
            ]
        )
    ),
)
SDISTS["PKG-INFO dropped"] = ("PKG-INFO", lambda: gz(raw_tar([x for x in sbase() if x.name != f"{R}/PKG-INFO"])))
SDISTS["PKG-INFO version other"] = (
    "PKG-INFO",
    lambda: gz(
        raw_tar(
            [
                RawTarMember(x.name, x.data.replace(b"\nVersion: 0.1.0", b"\nVersion: 0.1.1", 1), x.type, mode=x.mode)
                if x.name == f"{R}/PKG-INFO"
                else x
                for x in sbase()
            ]
        )
    ),
)
SDISTS["trailing data after end"] = ("tar structure", lambda: gz(raw_tar(sbase(), after=b"x" * 512)))
SDISTS["second gzip member"] = (
    "tar structure",
    lambda: gz(raw_tar(sbase())) + gz(raw_tar([RawTarMember(f"{R}/neurobrix/evil.py", b"x=1\n")])),
)
SDISTS["uid 1000"] = (
    "tar structure",
    lambda: gz(raw_tar([RawTarMember(x.name, x.data, x.type, mode=x.mode, uid=1000) for x in sbase()])),
)
SDISTS["gzip FNAME"] = ("tar structure", lambda: _fname())


def _fname():
    raw = gzip.decompress(S.read_bytes())
    buf = io.BytesIO()
    with gzip.GzipFile(filename="neurobrix-0.1.0.tar", mode="wb", fileobj=buf, mtime=0) as g:
        g.write(raw)
    return buf.getvalue()


def fmode(md, rel="neurobrix/cli.py"):
    def f():
        ms = sbase()
        sget(ms, rel).mode = md
        return gz(raw_tar(ms))

    return f


for md in (0o455, 0o454, 0o645, 0o654, 0o544, 0o1644, 0o4644, 0o640, 0o604, 0o400, 0o0, 0o100644):
    SDISTS[f"file mode {md:o}"] = ("sdist modes", fmode(md))


def dmode(md):
    def f():
        ms = sbase()
        return gz(raw_tar([RawTarMember(f"{R}/neurobrix/", b"", tarfile.DIRTYPE, mode=md)] + ms))

    return f


for md in (0o755, 0o555, 0o711, 0o751, 0o775, 0o1755, 0o2755, 0o655):
    SDISTS[f"folder mode {md:o}"] = ("sdist modes", dmode(md))


def _compare(tree: dict, base: dict) -> list[str]:
    diff = []
    for k in sorted(set(tree) | set(base)):
        if k not in base:
            diff.append(f"+{k}")
        elif k not in tree:
            diff.append(f"-{k}")
        elif tree[k] != base[k]:
            diff.append(f"~{k}")
    return diff


def _judge(dist: Path) -> tuple[bool, list[str]]:
    from gate.checker import DEFAULT_TRACKED, Options, check
    from gate.completeness import load_reference

    report = check([dist], Options(load_reference(DEFAULT_TRACKED), smoke=False, tools=False))
    return report.passed, sorted({f.code for f in report.findings})


def sinstall(tool, sdist, root, find_links):
    root.mkdir(parents=True, exist_ok=True)
    extra = ["--find-links", find_links]
    if tool == "pip23":
        r, prefix = pip_install(PIP23, sdist, root, extra)
    elif tool == "pip26":
        r, prefix = pip_install(PIP26, sdist, root, extra)
    else:
        r, prefix = uv_install(sdist, root, extra)
    if r.returncode:
        return None, (r.stderr or r.stdout)[-400:]
    t = tree(prefix, skeleton() if tool == "uv" else set())
    top = ("lib", "lib/python3.11", "lib/python3.11/site-packages", "bin")
    return {k: v for k, v in t.items() if k.rstrip("/") not in top}, ""


def main(argv: list[str]) -> int:
    kind, out = argv[0], Path(argv[2])
    find_links = argv[3] if kind == "sdists" else ""
    names = argv[4:] if kind == "sdists" else argv[3:]
    corpus = WHEELS if kind == "wheels" else SDISTS
    tools = INSTALLERS if kind == "wheels" else ("pip23", "pip26", "uv")
    work = Path(tempfile.mkdtemp(prefix="gate58-"))
    original = W if kind == "wheels" else S

    def put(tool, dist, root):
        if kind == "wheels":
            return installed(tool, dist, root)
        return sinstall(tool, dist, root, find_links)

    base = {}
    for tool in tools:
        t, err = put(tool, original, work / "base" / tool)
        assert t is not None, err
        base[tool] = t
    results = {}
    for name, (cls, make) in corpus.items():
        if names and name not in names:
            continue
        slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")
        (work / slug).mkdir()
        dist = work / slug / original.name
        dist.write_bytes(make())
        passed, codes = _judge(dist)
        entry = {"class": cls, "passed": passed, "codes": codes, "installs": {}}
        for tool in tools:
            t, err = put(tool, dist, work / slug / tool)
            entry["installs"][tool] = {"refused": err} if t is None else {"differs": _compare(t, base[tool])}
        results[name] = entry
        shown = {k: v.get("differs", "refused") for k, v in entry["installs"].items()}
        print(
            "PASS" if passed else "ref ",
            name,
            codes,
            {k: len(v) if isinstance(v, list) else v for k, v in shown.items()},
        )
    out.write_text(json.dumps(results, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
