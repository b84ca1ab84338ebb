"""What an installer would write for a wheel, held against the allow-list the repository derives.

The pypa ``installer`` library maps each member through the wheel install schemes: the archive root
goes to purelib (or platlib), ``<name>-<version>.data/<scheme>/...`` to the purelib, platlib,
scripts, headers or data folder, and entry points become launchers in the scripts folder. The gate
runs that mapping with a destination that writes nothing and records every place (pip also takes any
top-level ``*.data`` folder for a data folder; the gate reports both readings). A member is allowed
only where its name is exactly one of:

* a file git tracks under ``neurobrix/`` (bytes equal to the working tree's: G109; each one present: G108);
* a table of the reference tracked list under ``neurobrix/_tables/``, or that list itself (G101-G106);
* ``neurobrix-<version>.dist-info/`` METADATA, WHEEL, RECORD, entry_points.txt (when pyproject.toml
  declares entry points), or ``licenses/<path>`` for each License-File the metadata names (none today).

Everything else is refused (G107) with the place it would be written: a ``.pth`` file in
site-packages, a script or an interpreter on PATH, a header, anything under ``.data/``, another
top-level package or a second ``.dist-info``. Names are compared exactly; the aliases a file system
would resolve (G310, G305) never match an allowed name, so they are refused too.
"""

from __future__ import annotations

import io
import os
import posixpath
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

from installer import install
from installer.destinations import WheelDestination
from installer.records import RecordEntry
from installer.sources import WheelSource
from installer.utils import Scheme

from neurobrix.tables import WHEEL_DIR

from .archive import WheelArchive
from .checks import Check
from .metadata import entry_points_text, metadata_bound
from .repository import PACKAGE, Repository

if TYPE_CHECKING:
    from installer.scripts import ScriptSection  # a Literal installer defines for type checkers only

DIST_INFO_FILES = ("METADATA", "WHEEL", "RECORD")
_WHERE = {
    "purelib": "site-packages",
    "platlib": "site-packages (platform)",
    "scripts": "the scripts folder on PATH",
    "headers": "the include folder",
    "data": "the environment's root folder",
}


@dataclass(frozen=True)
class Place:
    scheme: str
    path: str

    def __str__(self) -> str:
        return f"{self.scheme}/{self.path}"


class _MemberStream(io.BytesIO):
    """An empty stream that names its member: the gate's destination reads no bytes, only where they go."""

    def __init__(self, member: str) -> None:
        super().__init__(b"")
        self.member = member


class _Source(WheelSource):
    def __init__(self, wheel: WheelArchive, name: str, version: str, dist_info: str, parse_bound: int | None) -> None:
        super().__init__(name, version)
        self._wheel = wheel
        self._dist_info = dist_info
        self._parse_bound = parse_bound

    @property
    def dist_info_dir(self) -> str:
        return self._dist_info

    @property
    def dist_info_filenames(self) -> list[str]:
        prefix = f"{self._dist_info}/"
        found = [n[len(prefix) :] for n in self._wheel.files if n.startswith(prefix)]
        # An entry_points.txt past the bound is not handed to installer to parse (gate round 19): its configparser read
        # hundreds of thousands of console scripts for tens of seconds; check_entry_points refuses it unparsed (G408).
        entry_points = self._wheel.files.get(f"{prefix}entry_points.txt")
        if entry_points is not None and self._parse_bound is not None and entry_points.size > self._parse_bound:
            found.remove("entry_points.txt")
        return found

    def read_dist_info(self, filename: str) -> str:
        data = self._wheel.read(f"{self._dist_info}/{filename}")
        if data is None:
            raise ValueError(f"{self._dist_info}/{filename} cannot be read")
        return data.decode("utf-8")

    def get_contents(self) -> Iterator[tuple[tuple[str, str, str], BinaryIO, bool]]:
        for member in self._wheel.members:
            if member.kind == "file":
                yield (member.name, "", ""), _MemberStream(member.name), member.executable


class _Plan(WheelDestination):
    """A destination that writes nothing and records where every file and launcher would go."""

    def __init__(self) -> None:
        self.places: dict[str, Place] = {}
        self.scripts: list[tuple[str, str, str, str]] = []

    def write_script(self, name: str, module: str, attr: str, section: ScriptSection) -> RecordEntry:
        self.scripts.append((name, module, attr, section))
        return RecordEntry(name, None, None)

    def write_file(
        self, scheme: Scheme, path: str | os.PathLike[str], stream: BinaryIO, is_executable: bool
    ) -> RecordEntry:
        if isinstance(stream, _MemberStream):
            self.places[stream.member] = Place(scheme, os.fspath(path))
        return RecordEntry(os.fspath(path), None, None)

    def finalize_installation(
        self, scheme: Scheme, record_file_path: str, records: Iterable[tuple[Scheme, RecordEntry]]
    ) -> None:
        pass


def install_plan(
    wheel: WheelArchive, name: str, version: str, dist_info: str, parse_bound: int | None = None
) -> tuple[dict[str, Place], str]:
    """Where ``installer`` writes each file member, and why it refuses the wheel ('' when it does not); an
    entry_points.txt declaring more than ``parse_bound`` bytes is not parsed for the launchers it would write."""
    plan = _Plan()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # installer warns, then skips, members under __pycache__/
            install(_Source(wheel, name, version, dist_info, parse_bound), plan, {})
    # installer reports malformed input through assertions, configparser and ValueError subclasses of its own
    # as much as through InstallerError: whichever it raises, the answer is "an installer refuses this wheel".
    except Exception as exc:  # noqa: BLE001
        return plan.places, f"the pypa installer refuses the wheel: {type(exc).__name__}: {exc}"
    return plan.places, ""


def _pip_place(member: str, root_scheme: str = "purelib") -> Place:
    """Where pip writes a member: any top-level ``*.data/<scheme>/`` folder is a data folder to it."""
    top, _, rest = member.partition("/")
    if top.endswith(".data") and "/" in rest:
        scheme, _, path = rest.partition("/")
        return Place(scheme, path)
    return Place(root_scheme, member)


def _describe(member: str, place: Place | None, refused: str, dist_info: str) -> str:
    pip = _pip_place(member)
    where = f"installer writes it to {place}" if place is not None else refused or "installer skips it"
    if place is None or (pip.scheme, pip.path) != (place.scheme, place.path):
        where += f"; pip writes it to {pip}"
    shown = place or pip
    hints = []
    if posixpath.basename(shown.path).lower().endswith(".pth") and shown.scheme in ("purelib", "platlib"):
        hints.append("a .pth file runs code at every start of the interpreter")
    if shown.scheme in _WHERE and shown.scheme != "purelib":
        hints.append(f"in {_WHERE[shown.scheme]}")
    if shown.scheme in ("purelib", "platlib") and shown.path.split("/", 1)[0] == dist_info and member != shown.path:
        # pip installs the .data members after the root's and writes over a file there (gate round 31): a planted
        # entry_points.txt is what importlib.metadata then reads (a pytest plugin group), its METADATA what pip shows
        hints.append(
            f"into the project's own {dist_info}/, from a member the checks of it do not see: pip installs .data "
            "members after the others and writes over a file already there, and importlib.metadata reads what it leaves"
        )
    elif shown.scheme in ("purelib", "platlib") and shown.path.split("/", 1)[0] not in (PACKAGE, ""):
        hints.append("outside the package (another top-level module, package or .dist-info)")
    elif shown.scheme in ("purelib", "platlib", "data") and f"{PACKAGE}/" in shown.path and member != shown.path:
        hints.append(
            f"inside the installed package, beside or over its own files, from a member the checks of "
            f"{PACKAGE}/ do not see"
        )
    return f"not a file of this project ({where}{': ' + '; '.join(hints) if hints else ''})"


def allowed_names(repo: Repository, table_names: set[str]) -> dict[str, bool]:
    """Every member name a wheel of this repository may hold -> whether it installs executable."""
    dist_info = repo.declared.dist_info
    allowed: dict[str, bool] = {p: repo.tracked[p] for p in repo.package_files()}
    allowed.update({n: False for n in table_names})
    allowed.update({f"{dist_info}/{n}": False for n in DIST_INFO_FILES})
    if repo.declared.entry_points:
        allowed[f"{dist_info}/entry_points.txt"] = False
    # only the license files the backend names in the metadata: any other tracked file would install into the
    # .dist-info (README.md, a test, a workflow) although no build of this project puts it there
    allowed.update({f"{dist_info}/licenses/{p}": False for p in repo.declared.license_files})
    return allowed


def check_layout(wheel: WheelArchive, repo: Repository, table_names: set[str], identity: tuple[str, str]) -> None:
    """G107 for members outside the allow-list, G108 for package files missing, G109 for package files
    (and licenses) whose bytes or executable bit differ from the repository's."""
    allowed = allowed_names(repo, table_names)
    bound = metadata_bound(entry_points_text(repo.declared.entry_points))
    places, refused = install_plan(wheel, identity[0], identity[1], repo.declared.dist_info, bound)
    for member in wheel.members:
        if member.kind == "dir":
            if not any(a.startswith(member.name) for a in allowed):
                wheel.fail(Check.G107, member.name, "a folder entry for no file of this project")
            continue
        if member.name not in allowed:
            if not member.name.startswith(f"{WHEEL_DIR}/"):  # an untracked table is G104 (gate.completeness)
                wheel.fail(
                    Check.G107,
                    member.name,
                    _describe(member.name, places.get(member.name), refused, repo.declared.dist_info),
                )
            continue
        if member.name.startswith(f"{WHEEL_DIR}/"):
            if member.executable:
                wheel.fail(Check.G109, member.name, "installs as an executable file; a table never is")
            continue
        licenses = f"{repo.declared.dist_info}/licenses/"
        source = member.name[len(licenses) :] if member.name.startswith(licenses) else member.name
        if source != member.name or member.name.startswith(f"{PACKAGE}/"):
            expected, actual = repo.digest(source), wheel.digest(member.name)
            if expected is None:
                wheel.fail(
                    Check.G109, member.name, f"the repository's working tree holds no file {source} to compare it with"
                )
            elif actual is not None and actual != expected:
                wheel.fail(
                    Check.G109,
                    member.name,
                    f"differs from the repository's {source} (sha256 "
                    f"{actual.hex[:12]}…, the repository's {expected.hex[:12]}…)",
                )
        executable = allowed[member.name]
        if member.executable != executable:
            wheel.fail(
                Check.G109,
                member.name,
                "installs as an executable file; the repository's file is not"
                if member.executable
                else "installs as a plain file; the repository's file is executable",
            )
    for path in repo.package_files():
        if path not in wheel.files and not path.startswith(f"{WHEEL_DIR}/"):
            wheel.fail(Check.G108, path, "tracked by git in the repository, missing from the wheel")
    for path, what in repo.package_links().items():  # gate round 66: a wheel holds files only
        wheel.fail(
            Check.G108,
            path,
            f"tracked by git as a {what}, which no wheel holds as the repository does (hatchling packs a link's "
            "target as a file, leaves out a link to a folder it walked already and an empty submodule): track files",
        )
