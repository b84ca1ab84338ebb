"""The fifty-third round against the release gate: install-tool differences, the thinnest class of the hostile corpus
as round 51 counted it (11 cases), held whole-tree.

Earlier rounds held pip 23.2's own ``install_wheel`` and ``installer`` to each other one member or one reading at a
time (rounds 12, 23, 28, 30, 43, 45: the ``.data`` schemes, RECORD's rows and hash, folder entries, `.dist-info`
spellings, mode and type bits, inflaters). No test found here compared
what the two leave on disk as a whole with the commit.
This round installs each wheel the gate passes with both, into two sites, and compares the trees: the same files
(folders, launchers and `.dist-info` files; each tool's own INSTALLER, REQUESTED, direct_url.json left
out), each package file byte for byte the file git
holds at the commit (``git show HEAD:<path>``, the tables under ``tables/``), the same mode bits, the same launcher
body after its shebang, and installed RECORDs naming the same files.

Tried, each passing the gate and installed alike by both, the commit's files exactly (pinned below): the wheel as
hatchling builds it; every member stored rather than deflated; the UTF-8 name flag on
every member (the names are ASCII: zipfile decodes them alike); RECORD hashed with sha512 (pip keeps the wheel's rows,
``installer`` rehashes with sha256: the rows' hash differs, the files named do not); folder entries above every file;
every member read-only (mode 444), or of mode 644 with no file type bits (as some non-Unix writers set it), which
both install 644 (neither applies a mode bit but the executable ones, and those only on a regular file's mode). No
difference was found: nothing in ``gate/`` changed. Refused already and not repeated here: every member of mode 600,
640, 604 or none (G315), 755, 555 or 655 (G109: git tracks none executable). Launchers differ in one way, pip's
(distlib's) quoting its strings with ``'`` and ``installer``'s with ``"``: the same program, compared as such.

The instrument is shown to catch a difference: round 30's wheel with
``.data/purelib/neurobrix/__init__.py`` after the package's own, which pip installs over the package's file and
``installer`` refuses (a file already there), is found to differ, and the gate refuses it (G107).

Left open: pip versions other than 23.2 and uv (not on this machine) were not run on these trees; the launchers'
shebang, which each writes from its own interpreter setting, not from the wheel.
"""

from __future__ import annotations

import os
import stat
import subprocess
import zipfile
from pathlib import Path

import pytest
from conftest import REPO
from gate_fixtures import Built, RawMember, install_wheel, raw_zip, wheel_members, with_true_record
from pip._internal.models.scheme import Scheme
from pip._internal.operations.install.wheel import install_wheel as pip_install_wheel
from test_gate_hostile import built, judge, refused_with

from neurobrix import tables

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the hostile corpus's built wheel and sdist

WRITTEN_BY_TOOL = {"INSTALLER", "REQUESTED", "direct_url.json"}  # each tool's own, by its options, not the wheel's


def _pip(wheel: Path, root: Path) -> Path:
    scheme = Scheme(
        platlib=str(root),
        purelib=str(root),
        headers=str(root / "headers"),
        scripts=str(root / "scripts"),
        data=str(root / "data"),
    )
    pip_install_wheel("neurobrix", str(wheel), scheme, "neurobrix", pycompile=False, warn_script_location=False)
    return root


def _installer(wheel: Path, root: Path) -> Path:
    return install_wheel(wheel, root)


def _tree(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under ``root``: its mode bits and bytes; a launcher's first (shebang) line dropped; the tool's own
    `.dist-info` files left out; the installed RECORD as the set of files it names."""
    found: dict[str, tuple[int, bytes]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_dir():
            found[rel + "/"] = (0, b"")
            continue
        mode = stat.S_IMODE(path.stat().st_mode)
        data = path.read_bytes()
        name = rel.rsplit("/", 1)[-1]
        if rel.startswith("scripts/"):  # distlib (pip) quotes with ', installer with ": the same program
            data = data.split(b"\n", 1)[1].replace(b"'", b'"')
        elif ".dist-info/" in rel and name == "RECORD":
            named = {line.split(b",")[0] for line in data.splitlines()}
            data = b"\n".join(sorted(n for n in named if n.rsplit(b"/", 1)[-1].decode() not in WRITTEN_BY_TOOL))
        elif ".dist-info/" in rel and name in WRITTEN_BY_TOOL:
            continue
        found[rel] = (mode, data)
    return found


def _committed(rel: str) -> bytes:
    path = f"tables/{rel[len(tables.WHEEL_DIR) + 1 :]}" if rel.startswith(tables.WHEEL_DIR + "/") else rel
    return subprocess.run(["git", "-C", str(REPO), "show", f"HEAD:{path}"], capture_output=True, check=True).stdout


def installed_differences(wheel: Path, root: Path) -> list[str]:
    """How pip 23.2's ``install_wheel`` and ``installer`` install ``wheel`` otherwise, or otherwise than the commit."""
    trees = {}
    for tool, install in (("pip", _pip), ("installer", _installer)):
        try:
            trees[tool] = _tree(install(wheel, root / tool))
        except Exception as error:  # noqa: BLE001 - a tool refusing the wheel is a difference to report
            return [f"{tool} refused it: {type(error).__name__}: {error}"]
    pip, other = trees["pip"], trees["installer"]
    problems = [f"{rel}: only one tool wrote it" for rel in sorted(set(pip) ^ set(other))]
    problems += [f"{rel}: installed otherwise" for rel in sorted(set(pip) & set(other)) if pip[rel] != other[rel]]
    for rel, (_, data) in sorted(pip.items()):
        if rel.startswith("neurobrix/") and not rel.endswith("/") and data != _committed(rel):
            problems.append(f"{rel}: not the commit's file")
    umask = os.umask(0)
    os.umask(umask)
    problems += [
        f"{rel}: mode {mode:o}"
        for rel, (mode, _) in pip.items()
        if rel.startswith("neurobrix/") and not rel.endswith("/") and mode != 0o666 & ~umask
    ]
    return problems


def _variant(built: Built, folder: Path, name: str) -> Path:
    members = wheel_members(built.wheel)
    if name == "stored":
        for m in members:
            m.method = zipfile.ZIP_STORED
    elif name == "UTF-8 flag":
        for m in members:
            m.flags |= 0x800
    elif name == "sha512 RECORD":
        import base64
        import hashlib

        record = next(m for m in members if m.name.endswith(b"/RECORD"))
        rows = []
        for line in record.data.decode().splitlines():
            path, hashed, size = line.split(",")
            if hashed:
                data = next(m.data for m in members if m.name == path.encode())
                hashed = "sha512=" + base64.urlsafe_b64encode(hashlib.sha512(data).digest()).rstrip(b"=").decode()
            rows.append(f"{path},{hashed},{size}")
        record.data = ("\n".join(rows) + "\n").encode()
    elif name == "folder entries":
        folders = sorted({m.name.rsplit(b"/", 1)[0] + b"/" for m in members if b"/" in m.name})
        members = [RawMember(f, b"", mode=stat.S_IFDIR | 0o755) for f in folders] + members
    elif name in ("mode 444", "no type bits"):
        for m in members:
            m.mode = stat.S_IFREG | 0o444 if name == "mode 444" else 0o644
    elif name == "pip overwrites":
        init = next(m for m in members if m.name == b"neurobrix/__init__.py")
        dist_info = next(m.name for m in members if m.name.endswith(b".dist-info/RECORD")).split(b"/")[0]
        data_dir = dist_info[: -len(b".dist-info")] + b".data"
        members = with_true_record(
            members + [RawMember(data_dir + b"/purelib/neurobrix/__init__.py", init.data + b"#")]
        )
    elif name != "as built":
        raise ValueError(name)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / built.wheel.name
    path.write_bytes(raw_zip(members))
    return path


ALIKE = ["as built", "stored", "UTF-8 flag", "sha512 RECORD", "folder entries", "mode 444", "no type bits"]


@pytest.mark.parametrize("variant", ALIKE)
def test_a_wheel_the_gate_passes_installs_alike_with_pip_and_installer_as_the_commit_holds_it(
    built: Built, tmp_path: Path, variant: str
) -> None:
    wheel = _variant(built, tmp_path / "dist", variant)
    report = judge(wheel)
    assert report.passed, [(f.code, f.path, f.message) for f in report.findings]
    assert installed_differences(wheel, tmp_path / "site") == []


def test_the_instrument_finds_pips_overwrite_which_the_gate_refuses(built: Built, tmp_path: Path) -> None:
    wheel = _variant(built, tmp_path / "dist", "pip overwrites")
    assert installed_differences(wheel, tmp_path / "site")
    refused_with(
        judge(wheel), "G107", f"{built.wheel.name.split('-')[0]}-{built.version}.data/purelib/neurobrix/__init__.py"
    )
