"""Gate round 65's cases (not a test file): sdists aimed at ``python -m build`` as the front end that builds the wheel,
each this checkout's sdist altered in memory. Shared by tests/test_gate_round65.py and the runs of
tests/gate65_driver.py; :func:`build_unpacks` is build's own unpacking of one such sdist.

build (1.6.1) takes an sdist file as its source: it lists the tar's members, asks for one top-level folder holding a
``PKG-INFO`` file (first path component of every name, ``name-version`` or not), unpacks the whole tar with tarfile's
PEP 706 ``data`` filter (``build._compat.tarfile.safe_extractall``) and builds the folder with the backend, isolated
(``[build-system] requires`` installed by pip from the index it is given) or not. What the ``data`` filter lets through
is what the wheel is built from: a member said twice or under an alias of its name (``./``, ``//``, ``..`` inside the
root) unpacks over the first, a hard or symbolic link inside the folder unpacks as a second name for a package file,
and pax and GNU headers rename a member, while absolute names, links leaving the folder and device files stop it.

``CASES`` maps a name to an edit of the sdist's members (``root`` the top folder): it returns the new member list and
the bytes written after the tar's end, or whole ``.tar.gz`` bytes (a gzip stream of two members). ``PLANTED`` marks
every planted byte, so a wheel or tree holding it holds what the repository does not.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from gate_fixtures import RawTarMember, raw_tar

PLANTED = b"# planted by the sdist\n"
CLI = "neurobrix/cli.py"
EVIL = "neurobrix/evil.py"

Edit = Callable[[list[RawTarMember], str], "tuple[list[RawTarMember], bytes] | bytes"]


def _member(members: list[RawTarMember], name: str) -> RawTarMember:
    return next(m for m in members if m.name == name)


def _planted_cli(members: list[RawTarMember], root: str) -> bytes:
    return _member(members, f"{root}/{CLI}").data + PLANTED


def _again(spelt: str) -> Edit:
    """cli.py said again at the end, planted, under ``spelt`` (``{root}`` filled in): it unpacks over the first."""

    def edit(members: list[RawTarMember], root: str) -> tuple[list[RawTarMember], bytes]:
        return [*members, RawTarMember(spelt.format(root=root), _planted_cli(members, root))], b""

    return edit


def _added(member: Callable[[str], RawTarMember]) -> Edit:
    def edit(members: list[RawTarMember], root: str) -> tuple[list[RawTarMember], bytes]:
        return [*members, member(root)], b""

    return edit


def _renamed_onto_cli(how: str) -> Edit:
    """A planted cli.py under a harmless ustar name, renamed onto cli.py by a pax ``path`` or a GNU long name."""

    def edit(members: list[RawTarMember], root: str) -> tuple[list[RawTarMember], bytes]:
        data, real = _planted_cli(members, root), f"{root}/{CLI}"
        if how == "pax":
            planted = RawTarMember(f"{root}/neurobrix/zz.py", data, pax={"path": real})
        else:
            planted = RawTarMember(f"{root}/neurobrix/zz.py", data, gnu_long_name=real)
        return [*members, planted], b""

    return edit


def _pax_record(key: str, value: str) -> bytes:
    body = f" {key}={value}\n".encode()
    size = len(body) + 1
    while len(str(size).encode()) + len(body) != size:
        size += 1
    return str(size).encode() + body


def _global_path(members: list[RawTarMember], root: str) -> tuple[list[RawTarMember], bytes]:
    """A global pax header setting ``path`` before a last, planted member: tarfile gives it that path."""
    header = RawTarMember("pax_global_header", _pax_record("path", f"{root}/{CLI}"), tarfile.XGLTYPE)
    return [*members, header, RawTarMember(f"{root}/neurobrix/zz.py", _planted_cli(members, root))], b""


def _untracked(members: list[RawTarMember], root: str) -> tuple[list[RawTarMember], bytes]:
    return [*members, RawTarMember(f"{root}/{EVIL}", PLANTED)], b""


def _link(kind: bytes, target: Callable[[str], str], name: str = EVIL) -> Edit:
    return _added(lambda root: RawTarMember(f"{root}/{name}", b"", kind, linkname=target(root)))


def _second_gzip_member(members: list[RawTarMember], root: str) -> bytes:
    """The tar's members without its end blocks in one gzip member, a planted cli.py and the end in a second: Python's
    gzip reads the members as one stream, so tarfile finds the planted member before the end."""
    whole = raw_tar(members)
    with tarfile.open(fileobj=io.BytesIO(whole)) as tar:
        tar.getmembers()
        end = tar.offset  # the first block past the last member
    planted = raw_tar([RawTarMember(f"{root}/{CLI}", _planted_cli(members, root))])
    return gzip.compress(whole[:end], compresslevel=1, mtime=0) + gzip.compress(planted, compresslevel=1, mtime=0)


def _after_end(members: list[RawTarMember], root: str) -> tuple[list[RawTarMember], bytes]:
    """A planted cli.py behind the tar's two zero blocks: tarfile stops at the first (``ignore_zeros`` off)."""
    return members, raw_tar([RawTarMember(f"{root}/{CLI}", _planted_cli(members, root))])


def _second_top(members: list[RawTarMember], root: str) -> tuple[list[RawTarMember], bytes]:
    return [*members, RawTarMember("evil/evil.py", PLANTED)], b""


def _other_top(members: list[RawTarMember], root: str) -> tuple[list[RawTarMember], bytes]:
    """Every member under ``neurobrix-9.9.9/`` in ``neurobrix-0.1.0.tar.gz``: build takes any one top folder."""
    other = "neurobrix-9.9.9"
    return [RawTarMember(other + m.name[len(root) :], m.data, m.type, mode=m.mode) for m in members], b""


def _mode(name: str, mode: int) -> Edit:
    def edit(members: list[RawTarMember], root: str) -> tuple[list[RawTarMember], bytes]:
        full = f"{root}/{name}"
        return [m if m.name != full else RawTarMember(m.name, m.data, m.type, mode=mode) for m in members], b""

    return edit


def _pkg_info_link(members: list[RawTarMember], root: str) -> tuple[list[RawTarMember], bytes]:
    """PKG-INFO a hard link to README.md: no ``PKG-INFO`` file to build's check, a file to pip and tarfile."""
    name = f"{root}/PKG-INFO"
    readme = f"{root}/README.md"
    out = [m for m in members if m.name != name]
    return [*out, RawTarMember(name, b"", tarfile.LNKTYPE, linkname=readme)], b""


CASES: dict[str, Edit] = {
    "cli.py said twice, the second planted": _again("{root}/" + CLI),
    "cli.py again as ./ inside the root": _again("{root}/./" + CLI),
    "cli.py again with a doubled slash": _again("{root}//" + CLI),
    "cli.py again through neurobrix/../neurobrix": _again("{root}/neurobrix/../" + CLI),
    "cli.py again through the root's parent": _again("{root}/../{root}/" + CLI),
    "cli.py again as ./ before the root": _again("./{root}/" + CLI),
    "a pax path renaming a planted member onto cli.py": _renamed_onto_cli("pax"),
    "a GNU long name renaming a planted member onto cli.py": _renamed_onto_cli("gnu"),
    "a global pax path before a planted member": _global_path,
    "an untracked module": _untracked,
    "evil.py a hard link to cli.py": _link(tarfile.LNKTYPE, lambda root: f"{root}/{CLI}"),
    "evil.py a symbolic link to cli.py": _link(tarfile.SYMTYPE, lambda root: "cli.py"),
    "a folder neurobrix/extra a symbolic link to ops": _link(tarfile.SYMTYPE, lambda root: "ops", "neurobrix/extra"),
    "evil.py a symbolic link out of the sdist": _link(tarfile.SYMTYPE, lambda root: "/etc/hostname"),
    "an absolute member": _added(lambda root: RawTarMember("/tmp/neurobrix-g65-planted.py", PLANTED)),
    "a FIFO in the package": _link(tarfile.FIFOTYPE, lambda root: ""),
    "a planted cli.py in a second gzip member": _second_gzip_member,
    "a planted cli.py after the tar's end": _after_end,
    "a second top-level folder": _second_top,
    "the top folder of another version": _other_top,
    "cli.py setuid and executable": _mode(CLI, 0o4755),
    "PKG-INFO a hard link to README.md": _pkg_info_link,
}


def _reversed(members: list[RawTarMember], root: str) -> tuple[list[RawTarMember], bytes]:
    return members[::-1], b""


def _read_only(members: list[RawTarMember], root: str) -> tuple[list[RawTarMember], bytes]:
    """Every file read-only (444, 555 where executable): the ``data`` filter gives the owner write back."""
    return [RawTarMember(m.name, m.data, m.type, mode=m.mode & 0o555) for m in members], b""


def _folder_entries(members: list[RawTarMember], root: str) -> tuple[list[RawTarMember], bytes]:
    """A folder entry of mode 555 before each folder's first file: the ``data`` filter ignores a folder's mode."""
    out: list[RawTarMember] = []
    seen: set[str] = set()
    for m in members:
        parts = m.name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            folder = "/".join(parts[:i])
            if folder not in seen:
                seen.add(folder)
                out.append(RawTarMember(folder + "/", b"", tarfile.DIRTYPE, mode=0o555))
        out.append(m)
    return out, b""


# spellings the gate passes (round 57's repacks): build reads each as the sdist as built
CONTROLS: dict[str, Edit] = {
    "members in reverse order": _reversed,
    "every file read-only": _read_only,
    "folder entries of mode 555": _folder_entries,
}


def sdist_bytes(members: list[RawTarMember], root: str, case: str) -> bytes:
    """The ``.tar.gz`` bytes of ``case`` (gzip level 1, which the gate passes as it does 9, no time)."""
    out = {**CASES, **CONTROLS}[case](members, root)
    if isinstance(out, bytes):
        return out
    altered, after = out
    return gzip.compress(raw_tar(altered, after=after), compresslevel=1, mtime=0)


def build_unpacks(data: bytes) -> dict[str, object]:
    """build 1.6.1's reading of an sdist, as ``python -m build SDIST`` runs it before any backend: its top-level check
    (``_get_top_level``'s rule: one first path component, a ``PKG-INFO`` file under it), then tarfile's ``data``
    filter over the whole tar (``safe_extractall``). Returns ``refused`` with the error, or ``top`` and ``files``:
    each regular file under the top folder by relative path with its bytes (links followed) and whether it is
    executable."""
    with tempfile.TemporaryDirectory(prefix="g65-") as tmp:
        path = Path(tmp) / "s.tar.gz"
        path.write_bytes(data)
        try:
            with tarfile.open(path) as tar:
                members = tar.getmembers()
            tops = {m.name.split("/", 1)[0] for m in members if m.name} - {""}
            if len(tops) != 1:
                return {"refused": f"top-level folders {sorted(tops)}"}
            (top,) = tops
            if not any(m.name == f"{top}/PKG-INFO" and m.isfile() for m in members):
                return {"refused": f"no {top}/PKG-INFO file"}
            out = Path(tmp) / "out"
            with tarfile.open(path) as tar:
                tar.extractall(out, filter="data")
        except (OSError, tarfile.TarError) as exc:
            return {"refused": f"{type(exc).__name__}: {exc}"}
        files: dict[str, tuple[bytes, bool]] = {}
        base = out / top
        for folder, _dirs, names in os.walk(base, followlinks=True):
            for name in names:
                p = Path(folder) / name
                if p.is_file():
                    files[p.relative_to(base).as_posix()] = (p.read_bytes(), os.access(p, os.X_OK))
        return {"top": top, "files": files}


# What build's unpacking (:func:`build_unpacks`) makes of each case, as measured (tests/gate65_driver.py): it refuses
# the sdist, or the tree it hands the backend holds a planted cli.py, a file or folder the repository lacks, cli.py
# executable, or the files as built (under another top folder for "the top folder of another version")
READS: dict[str, str] = {
    "cli.py said twice, the second planted": "cli.py planted",
    "cli.py again as ./ inside the root": "cli.py planted",
    "cli.py again with a doubled slash": "cli.py planted",
    "cli.py again through neurobrix/../neurobrix": "cli.py planted",
    "cli.py again through the root's parent": "cli.py planted",
    "cli.py again as ./ before the root": "refused",
    "a pax path renaming a planted member onto cli.py": "cli.py planted",
    "a GNU long name renaming a planted member onto cli.py": "cli.py planted",
    "a global pax path before a planted member": "cli.py planted",
    "an untracked module": "adds neurobrix/evil.py",
    "evil.py a hard link to cli.py": "adds neurobrix/evil.py",
    "evil.py a symbolic link to cli.py": "adds neurobrix/evil.py",
    "a folder neurobrix/extra a symbolic link to ops": "adds neurobrix/extra/",
    "evil.py a symbolic link out of the sdist": "refused",
    "an absolute member": "as built",
    "a FIFO in the package": "refused",
    "a planted cli.py in a second gzip member": "cli.py planted",
    "a planted cli.py after the tar's end": "as built",
    "a second top-level folder": "refused",
    "the top folder of another version": "as built",
    "cli.py setuid and executable": "cli.py executable",
    "PKG-INFO a hard link to README.md": "refused",
}


def reading(unpacked: dict[str, object], base: dict[str, object]) -> str:
    """One of READS' words for what :func:`build_unpacks` gave, against the sdist as built (``base``)."""
    if "refused" in unpacked:
        return "refused"
    files: dict[str, tuple[bytes, bool]] = unpacked["files"]  # type: ignore[assignment]
    before: dict[str, tuple[bytes, bool]] = base["files"]  # type: ignore[assignment]
    added = sorted(set(files) - set(before))
    if set(before) - set(files):
        return "loses " + ", ".join(sorted(set(before) - set(files)))
    if added:
        folders = {name.rsplit("/", 1)[0] + "/" for name in added}
        return f"adds {added[0]}" if len(added) == 1 else "adds " + ", ".join(sorted(folders))
    changed = [name for name in files if files[name] != before[name]]
    if changed == [CLI] and PLANTED in files[CLI][0]:
        return "cli.py planted"
    if changed == [CLI] and files[CLI][0] == before[CLI][0]:
        return "cli.py executable"
    return "as built" if not changed else "changes " + ", ".join(changed)
