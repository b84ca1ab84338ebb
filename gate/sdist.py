"""Checks of one sdist: its layout, metadata, the tables, every file against the repository, and the
wheel rebuilt from it.

Every file an sdist carries (except its generated PKG-INFO, and the tables, which are judged against
the reference tracked list) must be byte for byte the file git tracks at that path in the repository
(check-manifest's idea, with hashes), and it must hold exactly the files this project's sdist holds: every file the
wheel is built from, and no other tracked file (tests, tools, workflows), which the repository does not release (G509).
So its pyproject.toml and any build hook are the repository's own, and nothing the sdist adds (a
setup.py, a hatch_build.py, another module) reaches a build. Only once every static check of every
dist has passed is the wheel built from the sdist, in isolation (:mod:`gate.backend`), and compared
member for member, by sha256 and executable bit (folder entries by name), with the wheel under check (G508); with no
wheel of its version under check, the rebuilt wheel must pass the wheel checks itself.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from packaging.utils import InvalidSdistFilename, parse_sdist_filename

from .archive import SdistArchive, WheelArchive
from .backend import BackendFailed, build_wheel
from .checks import Check, Limits
from .completeness import SDIST_CHECKS, SOURCE_DIR, Reference, table_findings
from .metadata import Identity, another_project, check_canonical_name, check_metadata
from .repository import Repository
from .wheel import check_wheel

SUFFIX = ".tar.gz"


def root_of(sdist: SdistArchive) -> str:
    """The sdist's one top folder, ``{name}-{version}`` (what the file name says)."""
    return sdist.dist[: -len(SUFFIX)]


def check_sdist(sdist: SdistArchive, reference: Reference, repo: Repository) -> Identity:
    """Record every static sdist finding on ``sdist``; return the name and version it declares."""
    try:
        file_name, file_version = parse_sdist_filename(sdist.dist)
        identity = Identity(file_name, file_version)
    except InvalidSdistFilename as exc:
        sdist.fail(Check.G405, None, str(exc))
        identity = Identity(None, None)
    if another_project(sdist, identity.name, repo.declared):
        return identity
    if sdist.refused_unread:
        return identity  # too large, too compressed or read more than one way: its G3xx finding says so
    root = root_of(sdist)
    for m in sdist.members:
        if m.name != f"{root}/" and not m.name.startswith(f"{root}/"):
            sdist.fail(Check.G507, m.name, f"outside the sdist's top folder {root}/")
    for needed in ("PKG-INFO", "pyproject.toml"):
        if f"{root}/{needed}" not in sdist.files:
            sdist.fail(Check.G507, f"{root}/{needed}", "missing: without it the sdist cannot be built or described")
    if f"{root}/PKG-INFO" in sdist.files:
        by_name, identity = identity, check_metadata(sdist, f"{root}/PKG-INFO", identity, repo.declared)
        check_canonical_name(sdist, identity, by_name, SUFFIX)  # PEP 625 spells the sdist name so
    table_findings(sdist, f"{root}/{SOURCE_DIR}/", reference, SDIST_CHECKS)
    _check_sources(sdist, root, repo)
    return identity


# The exclusion files hatchling reads from the project root whenever it builds. One missing from the unpacked sdist
# is looked for in every folder above it instead (up to a git work tree's root: a TMPDIR inside a user's
# checkout, a home folder kept in git), and the wheel built leaves out whatever the patterns found there match: an
# sdist without the repository's .gitignore built into a wheel without neurobrix/ops/ under a folder whose
# .gitignore says `ops/` (pip and `python -m build` unpack into TMPDIR; uv's cache holds a .gitignore of its own that
# hatchling takes instead), while the gate's own rebuild, in a clean temporary folder, built the right wheel.
BACKEND_EXCLUSION_FILES = (".gitignore", ".hgignore")


def required_sources(repo: Repository) -> list[str]:
    """The tracked files a wheel is built from: the package, pyproject.toml, the readme it names, and the exclusion
    files the backend reads (where the repository tracks them). With the tables and PKG-INFO they are the whole sdist:
    what ``[tool.hatch.build.targets.sdist]`` selects and the backend adds (tests/test_gate_round21.py holds the two
    equal), so the sdist holds these and no other tracked file (gate round 21)."""
    needed = [*repo.package_files(), "pyproject.toml"]
    if repo.declared.readme:
        needed.append(repo.declared.readme)
    needed.extend(name for name in BACKEND_EXCLUSION_FILES if name in repo.tracked)
    return needed


# setuid, setgid, sticky, and write for anyone: no file or folder of a source release has them
_SPECIAL_MODE = 0o7000 | 0o002
# What the unpacking user needs of each member (gate round 14): pip's unpacker ignores every mode bit but the
# executable ones, while tarfile's extractall without a filter (Python's default before 3.14), GNU tar and others apply
# them; a folder its owner cannot list (mode 311) is then skipped by hatchling's os.walk without an error, so the wheel
# built from the sdist lacks it (neurobrix/ops/ was left out), and a file its owner cannot read fails the build.
_OWNER_NEEDS = {"file": 0o400, "dir": 0o500}
# What the other users need of each member (gate round 19, as round 18 found for a wheel's modes, G315): GNU tar and
# tarfile's unfiltered extractall run as root apply a mode of 600 or a folder of 700 as written, so the unpacked sources
# and tables are root's alone (a build or a check run as another user cannot read them); hatchling writes 644 and 755.
_OTHERS_NEED = {"file": 0o044, "dir": 0o055}


def _check_modes(sdist: SdistArchive, root: str, repo: Repository) -> None:
    """G509 for permission bits an unpacked sdist would carry into a build and an install: pip keeps a
    member's executable bits when it unpacks (and the build backend records them in the wheel), so a file
    is executable exactly when git tracks it so (the tables and PKG-INFO never), and no member has a
    special or world-writable bit."""
    tables = f"{root}/{SOURCE_DIR}/"
    for m in sdist.members:
        if m.mode is None:
            continue
        if m.mode & _SPECIAL_MODE:
            sdist.fail(Check.G509, m.name, f"mode {m.mode:o}: setuid, setgid, sticky or world-writable bits")
            continue
        unreadable = _OWNER_NEEDS.get(m.kind, 0) & ~m.mode
        if m.mode > 0o7777 or unreadable:
            sdist.fail(
                Check.G509,
                m.name,
                f"mode {m.mode:o}: "
                + (
                    "bits past the permission bits (7777), the only ones a tar header's mode holds"
                    if m.mode > 0o7777
                    else f"its owner cannot {'read it' if m.kind == 'file' else 'list or enter it'}: tarfile's "
                    "extractall (Python before 3.14, unfiltered) and GNU tar apply it, and the build backend's walk "
                    "skips a folder it cannot list without a word (a wheel without it), pip ignores the mode"
                ),
            )
            continue
        closed = _OTHERS_NEED.get(m.kind, 0) & ~m.mode
        if closed:
            sdist.fail(
                Check.G509,
                m.name,
                f"mode {m.mode:o}: its group or others cannot "
                + ("read it" if m.kind == "file" else "list or enter it")
                + ": GNU tar and tarfile's extractall (Python before 3.14, unfiltered) run as root apply it, so the "
                "unpacked sources are root's alone; pip ignores the mode, and this project's build writes 644 or 755",
            )
            continue
        if m.kind != "file" or not m.name.startswith(f"{root}/"):
            continue
        rel = m.name[len(root) + 1 :]
        should = False if (m.name.startswith(tables) or rel == "PKG-INFO") else repo.tracked.get(rel)
        if should is not None and m.executable != should:
            sdist.fail(
                Check.G509,
                m.name,
                f"mode {m.mode:o}: executable, the repository's file is not"
                if m.executable
                else f"mode {m.mode:o}: not executable, the repository's file is",
            )


def _check_sources(sdist: SdistArchive, root: str, repo: Repository) -> None:
    """G509 for a file the repository does not track or holds with other bytes or another executable bit,
    and for one it lacks."""
    _check_modes(sdist, root, repo)
    tables = f"{root}/{SOURCE_DIR}/"
    shipped = set(required_sources(repo))
    holding = {n[: i + 1] for n in sdist.files for i, c in enumerate(n) if c == "/"}  # every folder above a file
    for m in sdist.members:
        if m.kind == "dir" and m.name not in holding:
            # git tracks no folder, only files: a folder entry for none of them (an empty .git/ or neurobrix/x/)
            # is unpacked by pip beside the sources and uploaded with them, yet it is nothing the repository holds
            sdist.fail(Check.G509, m.name, "a folder entry for no file of the sdist: git tracks no such folder")
            continue
        if m.kind == "dir" or not m.name.startswith(f"{root}/") or m.name.startswith(tables):
            continue  # folders hold nothing; the tables are judged against the reference list
        rel = m.name[len(root) + 1 :]
        if rel == "PKG-INFO":
            continue  # written by the build backend; judged against pyproject.toml (G406)
        if rel not in repo.tracked:
            sdist.fail(
                Check.G509,
                m.name,
                "not a file git tracks in the repository: a build would read it "
                "(a build hook, a setup.py, a module) and nothing vouches for it",
            )
            continue
        if rel not in shipped:
            sdist.fail(
                Check.G509,
                m.name,
                "tracked by git, but not a file of this project's sdist (the package, the tables, pyproject.toml, the "
                "readme and the exclusion files: what pyproject.toml's sdist target selects): a user who unpacks it "
                "gets what the repository does not release (pytest run there imports tests and conftest.py, "
                "`python -m` runs a tool from it)",
            )
            continue
        ours, theirs = repo.digest(rel), sdist.digest(m.name)
        if ours is not None and theirs is not None and ours != theirs:
            sdist.fail(
                Check.G509,
                m.name,
                f"differs from the repository's {rel} (sha256 {theirs.hex[:12]}…, the repository's {ours.hex[:12]}…)",
            )
    for rel in required_sources(repo):
        if f"{root}/{rel}" not in sdist.files:
            sdist.fail(Check.G509, f"{root}/{rel}", "missing: the repository tracks it and the wheel is built from it")
    for rel, what in repo.package_links().items():  # gate round 66: hatchling drops some, stores others as links
        sdist.fail(
            Check.G509,
            f"{root}/{rel}",
            f"tracked by git as a {what} under the package, which no wheel holds as the repository does: track files",
        )


def check_rebuild(
    sdist: SdistArchive, wheels: list[WheelArchive], reference: Reference, repo: Repository, limits: Limits
) -> None:
    """Build the wheel from ``sdist`` and hold it against ``wheels`` (G508); call only once every static check
    of every dist has passed, so that the build reads nothing but the repository's own files."""
    root = root_of(sdist)
    with tempfile.TemporaryDirectory(prefix="neurobrix-gate-rebuild-") as tmp:
        work = Path(tmp).resolve()
        source = work / "src" / root
        for name, member in sdist.files.items():
            data = sdist.read(name)
            target = (work / "src" / name).resolve()
            if data is None or member.kind != "file" or not target.is_relative_to(source):
                sdist.fail(Check.G508, name, "cannot be extracted for the rebuild")
                return
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        try:
            built = build_wheel(source, work / "out")
        except BackendFailed as exc:
            sdist.fail(Check.G508, None, str(exc))
            return
        rebuilt = WheelArchive(built, limits)
        try:
            if rebuilt.findings:
                for f in rebuilt.findings:
                    sdist.fail(Check.G508, f.path, f"the wheel built from this sdist: {f.code} {f.message}")
            elif wheels:
                for wheel in wheels:
                    _compare(sdist, rebuilt, wheel)
            else:
                check_wheel(rebuilt, reference, repo)
                for f in rebuilt.findings:
                    sdist.fail(Check.G508, f.path, f"the wheel built from this sdist: {f.code} {f.message}")
        finally:
            rebuilt.close()


def _folders(wheel: WheelArchive) -> set[str]:
    return {m.name for m in wheel.members if m.kind == "dir"}


def _compare(sdist: SdistArchive, rebuilt: WheelArchive, wheel: WheelArchive) -> None:
    # Folder entries are members too (gate round 17): installers skip them, but `unzip` creates each with the mode it
    # carries (a folder of 700 leaves the installed tables to root alone) and each carries headers no check reads; the
    # build writes none, and only files were compared, so any folder above a shipped file passed with its sdist.
    for name in sorted(_folders(rebuilt) ^ _folders(wheel)):
        sdist.fail(
            Check.G508,
            name,
            f"a folder entry in {wheel.dist} that the wheel built from this sdist does not have: installers skip it, "
            "`unzip` creates the folder with its mode"
            if name in _folders(wheel)
            else f"a folder entry of the wheel built from this sdist; {wheel.dist} does not have it",
        )
    for name in sorted(rebuilt.files.keys() | wheel.files.keys()):
        if name not in rebuilt.files:
            sdist.fail(Check.G508, name, f"{wheel.dist} has it; the wheel built from this sdist does not")
        elif name not in wheel.files:
            sdist.fail(Check.G508, name, f"the wheel built from this sdist has it; {wheel.dist} does not")
        else:
            ours, theirs = rebuilt.digest(name), wheel.digest(name)
            if ours is None or theirs is None or ours != theirs:
                shown = "unreadable" if theirs is None else f"sha256 {theirs.hex[:12]}…"
                sdist.fail(
                    Check.G508,
                    name,
                    f"differs: {shown} in {wheel.dist}, "
                    f"{'unreadable' if ours is None else ours.hex[:12] + '…'} built from "
                    "this sdist",
                )
            elif rebuilt.files[name].executable != wheel.files[name].executable:
                sdist.fail(
                    Check.G508,
                    name,
                    f"executable in one of {wheel.dist} and the wheel built from this sdist, not in the other",
                )
