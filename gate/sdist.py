"""Checks of one sdist: its layout, metadata, the tables and tracked list, and that it can rebuild the wheel.

"Can rebuild the wheel" is checked file by file: every file of a wheel of the same version (outside
its .dist-info) must come from a file of the sdist with the same bytes, where the sdist's own
pyproject.toml ``[tool.hatch.build.targets.wheel.force-include]`` says it comes from.
"""

from __future__ import annotations

import sys

from packaging.utils import InvalidSdistFilename, parse_sdist_filename

from .archive import SdistArchive, WheelArchive
from .checks import Check
from .completeness import SDIST_CHECKS, SOURCE_DIR, Reference, table_findings
from .metadata import Identity, check_metadata

if sys.version_info >= (3, 11):
    import tomllib
else:  # check-wheel-contents brings tomli there
    import tomli as tomllib

SUFFIX = ".tar.gz"


def root_of(sdist: SdistArchive) -> str:
    """The sdist's one top folder, ``{name}-{version}`` (what the file name says)."""
    return sdist.dist[: -len(SUFFIX)]


def check_sdist(sdist: SdistArchive, reference: Reference) -> Identity:
    """Record every sdist finding on ``sdist``; return the name and version it declares."""
    try:
        file_name, file_version = parse_sdist_filename(sdist.dist)
        identity = Identity(file_name, file_version)
    except InvalidSdistFilename as exc:
        sdist.fail(Check.G405, None, str(exc))
        identity = Identity(None, None)
    if sdist.refused_unread:
        return identity  # too large or too compressed to look inside: its G307/G308 finding says so
    root = root_of(sdist)
    outside = [m.name for m in sdist.members if m.name != root and not m.name.startswith(f"{root}/")]
    for name in outside[:10]:
        sdist.fail(Check.G507, name, f"outside the sdist's top folder {root}/")
    if len(outside) > 10:
        sdist.fail(Check.G507, None, f"{len(outside) - 10} more members outside {root}/")
    for needed in ("PKG-INFO", "pyproject.toml"):
        if f"{root}/{needed}" not in sdist.files:
            sdist.fail(Check.G507, f"{root}/{needed}", "missing: without it the sdist cannot be built or described")
    if f"{root}/PKG-INFO" in sdist.files:
        identity = check_metadata(sdist, f"{root}/PKG-INFO", identity)
    table_findings(sdist, f"{root}/{SOURCE_DIR}/", reference, SDIST_CHECKS)
    return identity


def check_rebuild(sdist: SdistArchive, wheel: WheelArchive) -> None:
    """G508 for each file of ``wheel`` whose source the sdist lacks or holds with other bytes."""
    if sdist.refused_unread:
        return
    root = root_of(sdist)
    moved = _force_include(sdist, root)
    for name in sorted(wheel.files):
        if name.split("/", 1)[0].endswith(".dist-info"):
            continue  # written by the build backend, not copied from the source
        built = wheel.digest(name)
        if built is None:
            continue  # unreadable or refused unread in the wheel: its own finding says why
        source = f"{root}/{_source_of(name, moved)}"
        if source not in sdist.files:
            sdist.fail(Check.G508, source, f"missing, yet the wheel {wheel.dist} has {name} from it")
            continue
        original = sdist.digest(source)
        if original is not None and original != built:
            sdist.fail(Check.G508, source, f"differs from {name} in the wheel {wheel.dist}")


def _force_include(sdist: SdistArchive, root: str) -> dict[str, str]:
    """The sdist's own mapping of source paths to wheel paths (hatch force-include); {} when it has none."""
    data = sdist.read(f"{root}/pyproject.toml")
    if data is None:
        return {}
    try:
        config = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        sdist.fail(Check.G507, f"{root}/pyproject.toml", f"not valid TOML: {exc}")
        return {}
    node: object = config
    for key in ("tool", "hatch", "build", "targets", "wheel", "force-include"):
        node = node.get(key, {}) if isinstance(node, dict) else {}
    return {str(k).strip("/"): str(v).strip("/") for k, v in node.items()} if isinstance(node, dict) else {}


def _source_of(wheel_path: str, moved: dict[str, str]) -> str:
    for source, target in moved.items():
        if wheel_path == target or wheel_path.startswith(f"{target}/"):
            return source + wheel_path[len(target):]
    return wheel_path
