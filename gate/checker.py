"""Running every check over a set of dists (files or upload folders) and gathering one :class:`Report`.

Order: find the dists and read the repository (anything unusable stops here, exit 2, before any
check), open each archive strictly, start twine on those that read one way only, judge each archive
(layout against the allow-list, RECORD, metadata, tables; check-wheel-contents on wheels), judge the
dists against each other (versions), collect twine. Only when all of that found nothing is anything
built or installed: each sdist rebuilds its wheel (G508) while each wheel is installed for the smoke.
Findings are capped per check and dist in the report.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from neurobrix.tables import TRACKED_NAME, sha256_of

from .archive import Archive, SdistArchive, WheelArchive, dist_kind, open_archive
from .checks import Budget, Check, Finding, GateError, Limits, capped
from .completeness import SOURCE_DIR, Reference
from .metadata import Identity
from .report import DistSummary, Report
from .repository import Repository, TreeState, judged_otherwise, load_repository, tree_state, with_reference
from .sdist import check_rebuild, check_sdist, root_of
from .smoke import install_smoke, skipped
from .tools import Twine, WheelContentsCheck
from .wheel import check_wheel

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TRACKED = REPO / SOURCE_DIR / TRACKED_NAME
CONFIG = REPO / "pyproject.toml"  # holds [tool.check-wheel-contents]


@dataclass(frozen=True)
class Options:
    reference: Reference
    expect_version: Version | None = None
    smoke: bool = True
    config: Path = CONFIG
    limits: Limits = field(default_factory=Limits)
    source_tree: Path = REPO  # the repository judged against; the installed copy must not be loaded from here
    tools: bool = True  # twine and check-wheel-contents (tests of the gate's own checks may leave them out)


def _entry_type(path: Path) -> str:
    """What a folder's entry is, the entry itself (a link is a link, whatever it points at)."""
    try:
        return (
            "a link" if path.is_symlink() else "a folder" if path.is_dir() else "a file" if path.is_file() else "other"
        )
    except OSError:
        return "unreadable"


def _listing(folder: Path) -> dict[str, str]:
    """The entries `dist/*` globs in ``folder`` (dotfiles aside), each with what it is."""
    try:
        return {p.name: _entry_type(p) for p in folder.iterdir() if not p.name.startswith(".")}
    except OSError:
        return {}


def _read_alike_by_twine(argument: Path) -> None:
    """Refuse a path that twine reads as two files: it sends a wheel's bytes from the path as given, which the system
    resolves through links, but reads the metadata it sends with them (the project page's description,
    Requires-Python, Requires-Dist) from ``os.path.normpath`` of it, which drops ``link/..`` by its letters: through a
    link, ``a/../dist`` is another folder to each (gate round 46)."""
    if ".." not in argument.parts or not argument.exists():
        return
    lexical = os.path.normpath(os.path.abspath(argument))
    try:
        same = os.path.samefile(lexical, argument)
    except OSError:
        same = False
    if not same:
        raise GateError(
            f"{argument}: `..` after a link: twine would send the bytes of {argument.resolve()} with the metadata of "
            f"{lexical} (it reads a wheel's metadata from the path with `..` taken away by its letters); name the "
            "dists or their folder without `..`"
        )


def collect(
    arguments: Sequence[Path], listings: dict[Path, dict[str, str]] | None = None
) -> tuple[list[Path], list[Finding]]:
    """The dists named (files) or held (folders, not recursive); G001/G002 for what a folder holds wrongly, G001
    for a link (named or held), which is never followed: twine uploads it under its own name. Each folder's entries
    as read go into ``listings``, for G003 at the end of the run (an entry that appeared or changed while judged)."""
    dists: list[Path] = []
    findings: list[Finding] = []
    for argument in arguments:
        _read_alike_by_twine(argument)
        if argument.is_dir():
            folder = argument.resolve().name
            held = sorted(p for p in argument.iterdir() if not p.name.startswith("."))  # as `dist/*` globs
            if listings is not None:
                listings[argument] = {p.name: _entry_type(p) for p in held}
            found = [p for p in held if p.is_file() and not p.is_symlink() and dist_kind(p)]
            if not found:
                raise GateError(f"{argument}: no wheel (.whl) or sdist (.tar.gz) in this folder")
            dists_held = set(found)  # not the list: a folder of 20,000 empty files took 84 s to sort out (round 32)
            for other in held:
                if other not in dists_held:
                    what = "a folder" if other.is_dir() else "a link" if other.is_symlink() else "not a dist"
                    findings.append(
                        Finding(
                            Check.G001,
                            f"{folder}/",
                            other.name,
                            f"{what}: `twine upload {folder}/*` would upload it or fail",
                        )
                    )
            kinds = {dist_kind(p) for p in found}
            for kind in ("wheel", "sdist"):
                if kind not in kinds:
                    findings.append(
                        Finding(
                            Check.G002,
                            f"{folder}/",
                            None,
                            f"no {kind}: a release uploads a wheel and its sdist together",
                        )
                    )
            dists.extend(found)
        elif argument.is_file():
            if dist_kind(argument) is None:
                raise GateError(f"{argument}: not a wheel (.whl) or an sdist (.tar.gz)")
            if argument.is_symlink():
                # twine uploads the file under the link's name, with the bytes it points at when the upload runs;
                # judged by its target, a pure wheel passed under a name that says macOS, or NeuroBrix-0.1.0
                findings.append(
                    Finding(
                        Check.G001,
                        f"{argument.parent.resolve().name}/",
                        argument.name,
                        f"a link (to {argument.resolve().name}): `twine upload {argument.name}` would upload it under "
                        "this name, not the one judged, with whatever it points at then; name the file itself",
                    )
                )
                continue
            dists.append(argument)
        else:
            raise GateError(
                f"{argument}: {'not a regular file or a folder' if argument.exists() else 'no such file or folder'}"
            )
    unique = list(dict.fromkeys(p.resolve() for p in dists))
    if not unique and not findings:
        raise GateError("nothing to check: name wheels, sdists or a folder of them")
    return unique, findings


def check(arguments: Sequence[Path], options: Options) -> Report:
    """Judge every dist in ``arguments``; raises GateError only for input that cannot be judged."""
    listings: dict[Path, dict[str, str]] = {}
    paths, folder_findings = collect(arguments, listings)
    if len(paths) > options.limits.dists:
        raise GateError(
            f"{len(paths)} dists to judge: a release uploads one wheel and one sdist, and the gate judges at most "
            f"{options.limits.dists} in one run; nothing was judged"
        )
    report = Report(options.reference.path, None if options.expect_version is None else str(options.expect_version))
    # the tables are judged against the reference list, not git: one of other bytes than the commit's is no release
    report.repository = with_reference(
        tree_state(options.source_tree), options.source_tree, options.reference.data, options.reference.path
    )
    findings: list[Finding] = list(folder_findings)
    with ExitStack() as stack:
        archives: list[WheelArchive | SdistArchive] = []
        budget = Budget(options.limits.total_size)  # one for the run: a folder of many dists is not many budgets
        for path in paths:
            archive = open_archive(path, options.limits, budget)
            stack.callback(archive.close)
            archives.append(archive)
        sound = [a for a in archives if a.safe] if options.tools else []
        twine = stack.enter_context(Twine([a.path for a in sound]))
        contents = stack.enter_context(
            WheelContentsCheck([a.path for a in sound if isinstance(a, WheelArchive)], options.config)
        )
        repo = load_repository(options.source_tree)  # its build backend runs while the tools do
        identities: dict[Path, Identity] = {}
        for archive in archives:
            if isinstance(archive, WheelArchive):
                identities[archive.path] = check_wheel(archive, options.reference, repo)
            else:
                identities[archive.path] = check_sdist(archive, options.reference, repo)
        _check_versions(archives, identities, options.expect_version)
        _check_one_file_per_name(archives)
        for archive in archives:
            # an archive read more than one way goes to no other tool; one whose metadata the gate refused unparsed is
            # not waited on (twine, still parsing it, is stopped on the way out)
            tools_ran = options.tools and archive.safe and not archive.tools_skipped
            findings.extend(archive.findings)
            archive.findings.clear()
            if tools_ran and isinstance(archive, WheelArchive):
                findings.extend(contents.findings(archive.path))
            if tools_ran:
                findings.extend(twine.findings(archive.path, _metadata_path(archive)))
            identity = identities[archive.path]
            report.dists.append(
                DistSummary(
                    archive.dist,
                    str(archive.path),
                    archive.kind,
                    identity.name,
                    None if identity.version is None else str(identity.version),
                    archive.sha256,  # of the bytes judged, read once; G003 below if the file no longer holds them
                )
            )
        wheels = [a for a in archives if isinstance(a, WheelArchive)]
        sdists = [a for a in archives if isinstance(a, SdistArchive)]
        if not options.smoke:
            report.smoke_skipped = "--no-smoke"
        elif findings:
            report.smoke.extend(
                skipped(
                    w.path,
                    "not installed: the static checks have findings, and nothing from a dist runs before they all pass",
                )
                for w in wheels
            )
        if not findings:  # only now may anything be built or installed: every file of every dist is the repository's
            for wheel in wheels:
                for name in wheel.files:
                    wheel.digest(name)  # read once here: the rebuild and the smoke below share the wheel
            # Both wait on subprocesses (the build backend; pip and the engine), so they run side by side.
            with ThreadPoolExecutor(max_workers=2) as pool:
                rebuilds = [
                    pool.submit(
                        check_rebuild,
                        sdist,
                        [w for w in wheels if identities[w.path] == identities[sdist.path]],
                        options.reference,
                        repo,
                        options.limits,
                    )
                    for sdist in sdists
                ]
                smokes = (
                    [pool.submit(install_smoke, wheel, options.reference, repo) for wheel in wheels]
                    if options.smoke
                    else []
                )
                for rebuilt in rebuilds:
                    rebuilt.result()
                report.smoke.extend(smoke.result() for smoke in smokes)
            for sdist in sdists:
                findings.extend(sdist.findings)
            for result in report.smoke:
                findings.extend(result.findings)
        findings.extend(_changed_on_disk(archives))
        findings.extend(_folder_changed(listings))
        _judged_the_commit(report.repository, repo)
    order = {a.dist: i for i, a in enumerate(archives)}
    # a dist of another project (G604) is said first: its other findings (an archive's, read before) follow from it
    findings.sort(key=lambda f: (order.get(f.dist, -1), f.check is not Check.G604, f.code, f.path or ""))
    report.findings.extend(capped(findings))
    return report


def _judged_the_commit(state: TreeState, repo: Repository) -> None:
    """A GateError where the tree's state said "every tracked file as committed" yet what the dists were judged
    against (the tracked list, the bytes read, pyproject.toml and the top's files given to the build backend) was not
    the commit's (gate round 67): the state is read before `python -m gate build` builds and again at the end, the
    tree between the two, and an edit made after the first reading and put back before the second passed the dists
    holding it, the report clean at the commit."""
    if not state.clean or state.commit is None:
        return  # judged against a tree that is not a commit's, as the report says (--allow-dirty)
    otherwise = judged_otherwise(repo, state.commit)
    if otherwise:
        shown = ", ".join(otherwise[: TreeState.SHOWN]) + (
            f" and {len(otherwise) - TreeState.SHOWN} more" if len(otherwise) > TreeState.SHOWN else ""
        )
        raise GateError(
            f"{repo.root}: the working tree changed while the gate judged against it: {shown} not as commit "
            f"{state.commit} holds {'it' if len(otherwise) == 1 else 'them'} when read to judge the dists; nothing "
            "was passed"
        )


def _check_versions(archives: Sequence[Archive], identities: dict[Path, Identity], expect: Version | None) -> None:
    """G602 where dists disagree (judged against the first wheel), G603 where they are not ``expect``."""
    known = [a for a in archives if identities[a.path].name is not None and identities[a.path].version is not None]
    wheels = [a for a in known if isinstance(a, WheelArchive)]
    first = (wheels or known or [None])[0]
    for archive in known:
        identity = identities[archive.path]
        if first is not None and identity != identities[first.path]:
            archive.fail(
                Check.G602, None, f"this {archive.kind} is {identity}; {first.dist} is {identities[first.path]}"
            )
        if expect is not None and identity.version != expect:
            archive.fail(Check.G603, None, f"version {identity.version}; the release expects {expect}")


def _check_one_file_per_name(archives: Sequence[Archive]) -> None:
    """G602 for a dist named as an earlier one of the run yet of other bytes (gate round 44): two upload folders, or a
    folder and a file elsewhere, holding the release twice. Each passed alone, so the run passed with two sha256s under
    one file name: `twine upload a/* b/*` sends whichever it meets first and PyPI refuses the other (a file name is
    uploaded once), so what is released hung on the order of the arguments. The same bytes twice are one file to
    PyPI."""
    first: dict[str, Archive] = {}
    for archive in archives:
        if not archive.sha256:  # refused unread (G308): no bytes to compare
            continue
        earlier = first.setdefault(archive.dist, archive)
        if earlier is not archive and earlier.sha256 and earlier.sha256 != archive.sha256:
            archive.fail(
                Check.G602,
                None,
                f"a second {archive.kind} named {archive.dist} in this run ({archive.path}), in other bytes than "
                f"{earlier.path} (sha256 {archive.sha256[:12]}…, {earlier.sha256[:12]}…): `twine upload` sends "
                "whichever it meets first and PyPI refuses the other; a release is one wheel and one sdist",
            )


def _metadata_path(archive: Archive) -> str | None:
    """Where twine's findings point: the wheel's METADATA or the sdist's PKG-INFO."""
    if isinstance(archive, SdistArchive):
        return f"{root_of(archive)}/PKG-INFO"
    names = [n for n in archive.files if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    return names[0] if len(names) == 1 else None


def _folder_changed(listings: dict[Path, dict[str, str]]) -> list[Finding]:
    """G003 for an entry of an upload folder that appeared, or became another kind of entry (a dist made a link),
    while the gate judged the folder: the report lists what was judged, and `twine upload dist/*` would take the
    rest unjudged. A dist that vanished or changed is G003 by its own file."""
    findings: list[Finding] = []
    for argument, before in listings.items():
        folder = argument.resolve().name
        for name, now in sorted(_listing(argument).items()):
            was = before.get(name)
            if was == now:
                continue
            findings.append(
                Finding(
                    Check.G003,
                    f"{folder}/",
                    name,
                    f"appeared in the upload folder while the gate judged it ({now}), never judged: "
                    f"`twine upload {folder}/*` would upload it"
                    if was is None
                    else f"{was} when the gate read the folder, {now} now: what would be uploaded is not what was "
                    "judged",
                )
            )
    return findings


def _changed_on_disk(archives: Sequence[Archive]) -> list[Finding]:
    """G003 for each dist whose file, once everything was judged, no longer holds the bytes the gate read:
    the tools, pip and the uploader read the file again, and the report's sha256 must be what was judged."""
    findings: list[Finding] = []
    for archive in archives:
        if archive.sha256 is None:  # refused unread (G308): no byte of it was judged, and none is passed
            continue
        size = archive.size
        try:
            size = archive.path.stat().st_size
            # of another size it changed, and is not hashed: it may have grown to any size since it was read
            now = f"sha256 {sha256_of(archive.path)}" if size == archive.size else f"{size} bytes"
        except OSError as exc:
            now = f"unreadable ({exc})"
        if now != f"sha256 {archive.sha256}":
            read = f"sha256 {archive.sha256}" if size == archive.size else f"{archive.size} bytes"
            findings.append(
                Finding(
                    Check.G003,
                    archive.dist,
                    None,
                    f"the file changed while the gate judged it ({read} read, {now} now); "
                    "what would be uploaded is not what was judged",
                )
            )
    return findings
