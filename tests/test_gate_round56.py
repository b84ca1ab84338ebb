"""The fifty-sixth round against the release gate: what pip runs when it builds the sdist, beside what the gate runs.

Round 51 held ``[tool.hatch.build]`` to the gate's model; hatchling reads two more tables of pyproject.toml, and pip
builds an sdist in an environment of its own, of ``[build-system] requires``. Found and fixed (two false passes; each
case below that judges failed before, shown with the fix reverted):

1. A metadata hook (``[tool.hatch.metadata.hooks.custom]``, a file of the package, ``gui-scripts`` dynamic) that
   adds a ``pip`` gui script where ``CI`` is unset. Built and judged with ``CI=1``, the wheel and sdist PASSED the
   gate, install smoke and all, clean at the commit (the gate compares entry_points.txt with pyproject.toml's own
   tables, and the hook added nothing there). Every build of that sdist elsewhere runs the hook again: hatchling takes
   a field from the sdist's PKG-INFO where PKG-INFO holds it (so the dependencies and the version stay), but entry
   points are no field of it, and the wheel pip builds installs a ``pip`` launcher running ``neurobrix.cli:main``
   (pip 23.2's isolated ``pip wheel`` from a local index holding hatchling 1.32.4 showed it; the case below builds
   the sdist with hatchling as the gate runs it).
   The gate now stops (exit 2, one line naming the key) on a ``[tool.hatch.metadata]`` other than none and a
   ``[tool.hatch.version]`` other than ``path = "neurobrix/__init__.py"`` (a version source that runs code, or reads
   the environment, runs once in the gate's: modelled with the rest, though PKG-INFO's version wins at a build).
2. ``[build-system] requires`` naming a second distribution: the gate prepares the metadata and rebuilds the wheel
   (G508) with the hatchling installed beside it and never installs the list, while pip's isolated build installs
   every entry, and a ``.pth`` file in one runs in pip's build processes. A local index holding hatchling and a
   ``nb-build-helper`` wheel whose ``.pth`` appends a line to ``neurobrix/cli.py`` of the unpacked sdist showed it
   (``pip wheel --no-deps --no-index --find-links``, pip 23.2): the wheel and sdist built before (``build -x``) PASSED,
   clean at the commit, and pip's wheel of that sdist held the line. That run needs the index's wheels, so it is not
   a test here; the case below shows the gate judging such a commit's dists before and stopping now. A requirement
   not named ``hatchling``, or with a URL, an extra or a marker, or a list that is empty or not a list, stops the gate
   (one line); the version specifier is left free (round 51's newest hatchling).

Pinned, each refused already (the corpus of this round's dist ideas): a wheel file name with a build tag (pip prefers
the higher), a tag that only spells ``py3``, ``py30``, a doubled ``.whl``; a folder entry for a folder no tracked file
is in (``neurobrix/evil/``, a class folder under ``_tables``, ``.data/`` and ``.data/scripts/``, a ``__pycache__``, a
second top-level folder); RECORD spelt otherwise than a RECORD writer writes it (a fourth field, a folder row, no final
line end, an empty line between rows, rows reordered or doubled, a size with a leading space, ``;`` separators, a tab
after the path; a quoted path, a padded hash, ``SHA256=``, an empty line at the end and a size with a leading zero were
refused too, as was a compressed tag set ``py2.py3``, all pinned by earlier rounds' cases); an sdist with an untracked
``hatch_build.py`` (hatchling's default hook file; an untracked ``hatch.toml`` or ``setup.py`` is pinned by rounds 21
and 35), a second ``.gitignore``, PKG-INFO with ``Dynamic: Requires-Dist`` (which lets a build change the dependencies),
PKG-INFO missing or of Metadata-Version 2.1, a pyproject.toml with another build requirement, and a folder member for a
folder no tracked file is in; at a commit whose ``.gitignore`` names a tracked module, an sdist holding it and the
module (G508: pip's build of it, as the gate's rebuild, leaves the module out).
"""

from __future__ import annotations

import copy
import gzip
import io
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from gate_fixtures import Built, RawMember, raw_zip, read_sdist_member, rewrite_sdist, wheel_members
from packaging.version import Version
from test_gate_hostile import built, judge, refused_with
from test_gate_round42 import _git, _git_copy

from gate.backend import build_wheel
from gate.build import build_project
from gate.checker import REPO, Options, check
from gate.checks import GateError
from gate.completeness import load_reference
from gate.repository import _check_build_model
from neurobrix import __version__

if sys.version_info >= (3, 11):
    import tomllib
else:  # check-wheel-contents brings tomli there
    import tomli as tomllib

__all__ = ["built"]  # the hostile corpus's built wheel and sdist

MODELLED = "the gate models (gate/repository.py)"  # in each line the gate stops with


def _config() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _readme() -> str:
    return str(_config()["project"]["readme"])


# ------------------------------------------------------------------ the configuration, read as the gate reads it (fast)
HATCH_CHANGES: dict[str, tuple[dict[str, Any], str]] = {  # [tool.hatch] tables changed -> the words the line names
    "a custom metadata hook": (
        {"metadata": {"hooks": {"custom": {"path": "neurobrix/_hook.py"}}}},
        "hooks.custom.path",
    ),
    "hatch_build.py, the default hook file": ({"metadata": {"hooks": {"custom": {}}}}, "hooks.custom = {}"),
    "a plugin's metadata hook": ({"metadata": {"hooks": {"fancy-pypi-readme": {"x": 1}}}}, "hooks.fancy-pypi-readme.x"),
    "direct references allowed": ({"metadata": {"allow-direct-references": True}}, "allow-direct-references"),
    "metadata not a table": ({"metadata": 1}, "metadata = 1"),
    "a version source running code": ({"version": {"path": "neurobrix/__init__.py", "source": "code"}}, "source"),
    "the version from the environment": ({"version": {"source": "env", "variable": "V"}}, "path missing"),
    "another version file": ({"version": {"path": "neurobrix/_version.py"}}, "neurobrix/_version.py"),
    "a version pattern": ({"version": {"path": "neurobrix/__init__.py", "pattern": "v(?P<version>.+)"}}, "pattern"),
    "no version table": ({"version": None}, "path missing"),
}


@pytest.mark.parametrize("change", HATCH_CHANGES)
def test_a_metadata_or_version_configuration_the_gate_does_not_model_stops_it(change: str) -> None:
    tables, named = HATCH_CHANGES[change]
    config = _config()
    hatch = config["tool"]["hatch"]
    for table, value in tables.items():
        if value is None:
            del hatch[table]
        else:
            hatch[table] = value
    with pytest.raises(GateError) as raised:
        _check_build_model(REPO, config, {}, _readme())
    line = str(raised.value)
    assert "\n" not in line and MODELLED in line and named in line, line


REQUIRES: dict[str, tuple[object, str]] = {  # [build-system] requires -> the words the line names
    "a second distribution": (["hatchling>=1.24", "nb-build-helper"], "'nb-build-helper'"),
    "hatchling with an extra": (["hatchling[cli]>=1.24"], "hatchling[cli]"),
    "hatchling from a URL": (["hatchling @ https://example.invalid/hatchling.whl"], "example.invalid"),
    "hatchling under a marker": (['hatchling; python_version < "3"'], "python_version"),
    "another backend's distribution": (["hatch-ling"], "hatch-ling"),
    "not a requirement": (["hatchling >=>= 1"], ">=>="),
    "an empty list": ([], "requires []"),
    "a string, not a list": ("hatchling", "requires 'hatchling'"),
    "no requires": (None, "requires None"),
}


@pytest.mark.parametrize("change", REQUIRES)
def test_build_requirements_other_than_hatchling_alone_stop_the_gate(change: str) -> None:
    requires, named = REQUIRES[change]
    config = _config()
    if requires is None:
        del config["build-system"]["requires"]
    else:
        config["build-system"]["requires"] = requires
    with pytest.raises(GateError) as raised:
        _check_build_model(REPO, config, {}, _readme())
    line = str(raised.value)
    assert "\n" not in line and MODELLED in line and named in line, line


@pytest.mark.parametrize("requires", [["hatchling>=1.24"], ["hatchling"], ["Hatchling>=1.26,<2"]])
def test_hatchling_alone_with_any_version_and_an_empty_metadata_table_pass(requires: list[str]) -> None:
    """No false refusal: this checkout's configuration, the specifier changed, an empty ``[tool.hatch.metadata]``."""
    config = _config()
    config["build-system"]["requires"] = requires
    config["tool"]["hatch"]["metadata"] = {}
    _check_build_model(REPO, config, {}, _readme())
    _check_build_model(REPO, _config(), {}, _readme())


# ------------------------------------------------------------------------------- the false passes, end to end (slow)
HOOK = b'''"""The build backend's metadata hook."""

import os

from hatchling.metadata.plugin.interface import MetadataHookInterface


class CustomMetadataHook(MetadataHookInterface):
    def update(self, metadata):
        if not os.environ.get("CI"):
            metadata["gui-scripts"] = {"pip": "neurobrix.cli:main"}
'''
HOOK_TABLE = '[tool.hatch.metadata.hooks.custom]\npath = "neurobrix/_metadata_hook.py"\n\n'
HOOKED = [
    ('dynamic = ["version"]', 'dynamic = ["version", "gui-scripts"]'),
    ("[tool.hatch.version]", HOOK_TABLE + "[tool.hatch.version]"),
]
HELPED = [('requires = ["hatchling>=1.24"]', 'requires = ["hatchling>=1.24", "nb-build-helper"]')]


def _commit(first: Path, copy: Path, edits: list[tuple[str, str]], files: dict[str, bytes]) -> Path:
    subprocess.run(["git", "clone", "-q", str(first), str(copy)], check=True, capture_output=True)
    text = (copy / "pyproject.toml").read_text(encoding="utf-8")
    for before, after in edits:
        assert text.count(before) == 1, before
        text = text.replace(before, after)
    (copy / "pyproject.toml").write_text(text, encoding="utf-8")
    for rel, data in files.items():
        (copy / rel).write_bytes(data)
    _git(copy, "add", "-A")
    _git(copy, "commit", "-q", "-m", "the build configuration")
    return copy


@pytest.fixture(scope="module")
def commits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``hooked``: a git copy of this checkout with a commit adding the metadata hook, its wheel and sdist built with
    ``CI=1`` in ``hooked-dist``; ``helped``: one with a commit adding a build requirement, its dists built without the
    dependency check (``build -x``: the requirement is installed nowhere here) in ``helped-dist``; ``ignored``: one with
    a commit whose ``.gitignore`` names a tracked module (hatchling leaves it out of a build)."""
    root = tmp_path_factory.mktemp("round56")
    _git_copy(root / "first")
    hooked = _commit(root / "first", root / "hooked", HOOKED, {"neurobrix/_metadata_hook.py": HOOK})
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CI", "1")
        build_project(hooked, root / "hooked-dist")
    helped = _commit(root / "first", root / "helped", HELPED, {})
    ignore = (root / "first" / ".gitignore").read_bytes() + b"/neurobrix/cli.py\n"
    _commit(root / "first", root / "ignored", [], {".gitignore": ignore})
    command = [
        sys.executable,
        "-m",
        "build",
        "--no-isolation",
        "-x",
        "--outdir",
        str(root / "helped-dist"),
        str(helped),
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    return root


def _entry_points(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as z:
        return z.read(f"neurobrix-{__version__}.dist-info/entry_points.txt").decode()


@pytest.mark.slow
def test_the_hooks_sdist_builds_elsewhere_into_a_wheel_with_a_pip_launcher(
    commits: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The premise: the wheel judged has the project's one script; the same sdist, built where ``CI`` is unset (as pip
    builds it on a user's machine), has a ``pip`` gui script as well."""
    (wheel,) = (commits / "hooked-dist").glob("*.whl")
    (sdist,) = (commits / "hooked-dist").glob("*.tar.gz")
    assert "pip =" not in _entry_points(wheel)
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, filter="data")
    monkeypatch.delenv("CI", raising=False)
    rebuilt = build_wheel(tmp_path / f"neurobrix-{__version__}", tmp_path / "out")
    assert "[gui_scripts]\npip = neurobrix.cli:main" in _entry_points(rebuilt)


def _stopped(tree: Path, dists: Path) -> str:
    """The gate's one line for ``dists`` judged at ``tree``; judged instead fails the test, saying whether it passed and
    was clean at the commit (a release: what both cases were before the fix)."""
    options = Options(load_reference(tree / "tables/TRACKED.yaml"), Version(__version__), smoke=False, source_tree=tree)
    try:
        judged = check([dists], options)
    except GateError as exc:
        return str(exc)
    state = judged.repository
    pytest.fail(f"judged, not stopped: passed {judged.passed}, clean {state is not None and state.clean}")


@pytest.mark.slow
def test_a_metadata_hook_stops_the_gate(commits: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the fix: passed and clean, judged with ``CI=1`` as the dists were built."""
    monkeypatch.setenv("CI", "1")
    line = _stopped(commits / "hooked", commits / "hooked-dist")
    assert MODELLED in line and "[tool.hatch.metadata]" in line and "hooks.custom.path" in line


@pytest.mark.slow
def test_a_second_build_requirement_stops_the_gate(commits: Path) -> None:
    """Before the fix: passed and clean."""
    line = _stopped(commits / "helped", commits / "helped-dist")
    assert MODELLED in line and "'nb-build-helper'" in line


# ------------------------------------------------------------------------------------ the pinned corpus (refused)
def _copy_named(built: Built, folder: Path, name: str) -> Path:
    folder.mkdir()
    (folder / name).write_bytes(built.wheel.read_bytes())
    return folder / name


WHEEL_NAMES = {  # the wheel's bytes under another file name -> the check refusing it
    "neurobrix-{v}-1-py3-none-any.whl": "G407",  # a build tag: pip prefers the higher one
    "neurobrix-{v}-py3.py3-none-any.whl": "G405",
    "neurobrix-{v}-py3-none-any.any.whl": "G405",
    "neurobrix-{v}-py30-none-any.whl": "G407",
    "neurobrix-{v}-py3-none-any.whl.whl": "G407",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", WHEEL_NAMES)
def test_a_wheel_file_name_with_other_tags_is_refused(built: Built, tmp_path: Path, name: str) -> None:
    refused_with(judge(_copy_named(built, tmp_path / "dist", name.format(v=__version__))), WHEEL_NAMES[name], None)


FOLDERS = [
    "neurobrix/evil/",
    "neurobrix/_tables/nvidia-b200/",
    "neurobrix-{v}.data/",
    "neurobrix-{v}.data/scripts/",
    "neurobrix/ops/__pycache__/",
    "evil/",
]


@pytest.mark.slow
@pytest.mark.parametrize("folder", FOLDERS)
def test_a_folder_entry_for_no_tracked_files_folder_is_refused(built: Built, tmp_path: Path, folder: str) -> None:
    """A folder entry installs nothing with pip or installer, but `unzip` makes it (an empty ``neurobrix/evil/`` is a
    namespace package ``neurobrix.evil``); the package's own folder entry passes (round 53)."""
    name = folder.format(v=__version__)
    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(raw_zip([RawMember(name.encode(), b"", mode=0o40755), *wheel_members(built.wheel)]))
    refused_with(judge(wheel), "G107", name)


def _record_variants(record: str) -> dict[str, tuple[str, str]]:
    lines = record.splitlines(keepends=True)
    first, rest = lines[0], "".join(lines[1:])
    path, digest, size = first.rstrip("\n").split(",")
    return {  # name -> (RECORD's text, the check refusing it)
        "a fourth field": (f"{path},{digest},{size},x\n{rest}", "G206"),
        "a folder row": (f"{path.split('/')[0]}/,,\n{record}", "G206"),
        "no final line end": (record.rstrip("\n"), "G206"),
        "an empty line between rows": (f"{first}\n{rest}", "G206"),
        "rows reordered": ("".join(reversed(lines[:-1])) + lines[-1], "G206"),
        "a row twice": (first + record, "G206"),
        "a size with a leading space": (f"{path},{digest}, {size}\n{rest}", "G206"),
        "semicolons": (record.replace(",", ";"), "G202"),
        "a tab after the path": (f"{path}\t,{digest},{size}\n{rest}", "G205"),
    }


RECORD_VARIANTS = list(_record_variants("a/b,sha256=x,1\nc,,\n"))


@pytest.mark.slow
@pytest.mark.parametrize("variant", RECORD_VARIANTS)
def test_a_record_spelt_otherwise_than_a_writer_writes_it_is_refused(
    built: Built, tmp_path: Path, variant: str
) -> None:
    members = wheel_members(built.wheel)
    (record,) = [m for m in members if m.name.endswith(b".dist-info/RECORD")]
    text, code = _record_variants(record.data.decode())[variant]
    wheel = tmp_path / built.wheel.name
    wheel.write_bytes(raw_zip([*(m for m in members if m is not record), RawMember(record.name, text.encode())]))
    report = judge(wheel)
    assert not report.passed and code in {f.code for f in report.findings}, [(f.code, f.path) for f in report.findings]


def _pkg_info(built: Built) -> bytes:
    return read_sdist_member(built.sdist, "PKG-INFO")


SDIST_CHANGES = {  # name -> (rewrite_sdist's arguments from the built sdist, the check, the path named under the root)
    "hatch_build.py": (lambda b: {"add": {"hatch_build.py": b"print('hook')\n"}}, "G509", "hatch_build.py"),
    "a second .gitignore": (
        lambda b: {"add": {".gitignore": read_sdist_member(b.sdist, ".gitignore")}},
        "G305",
        ".gitignore",
    ),
    "Dynamic: Requires-Dist": (
        lambda b: {"replace": {"PKG-INFO": _pkg_info(b).replace(b"Summary:", b"Dynamic: Requires-Dist\nSummary:", 1)}},
        "G406",
        "PKG-INFO",
    ),
    "no PKG-INFO": (lambda b: {"drop": ["PKG-INFO"]}, "G507", "PKG-INFO"),
    "Metadata-Version 2.1": (
        lambda b: {
            "replace": {"PKG-INFO": _pkg_info(b).replace(b"Metadata-Version: 2.5", b"Metadata-Version: 2.1", 1)}
        },
        "G404",
        "PKG-INFO",
    ),
    "a second build requirement": (
        lambda b: {
            "replace": {
                "pyproject.toml": read_sdist_member(b.sdist, "pyproject.toml").replace(
                    b'requires = ["hatchling>=1.24"]', b'requires = ["hatchling>=1.24", "nb-build-helper"]'
                )
            }
        },
        "G509",
        "pyproject.toml",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("change", SDIST_CHANGES)
def test_an_sdist_that_builds_otherwise_is_refused(built: Built, tmp_path: Path, change: str) -> None:
    arguments, code, rel = SDIST_CHANGES[change]
    sdist = rewrite_sdist(built.sdist, tmp_path, **copy.deepcopy(arguments(built)))
    refused_with(judge(sdist), code, f"neurobrix-{__version__}/{rel}")


@pytest.mark.slow
def test_an_sdist_folder_member_for_no_tracked_files_folder_is_refused(built: Built, tmp_path: Path) -> None:
    root = f"neurobrix-{__version__}"
    sdist = tmp_path / built.sdist.name
    buffer = io.BytesIO()
    with tarfile.open(built.sdist) as original, tarfile.open(fileobj=buffer, mode="w") as out:
        for info in original.getmembers():
            out.addfile(info, original.extractfile(info) if info.isreg() else None)
        folder = tarfile.TarInfo(f"{root}/neurobrix/evil")
        folder.type, folder.mode = tarfile.DIRTYPE, 0o755
        out.addfile(folder)
    sdist.write_bytes(gzip.compress(buffer.getvalue(), mtime=0))
    refused_with(judge(sdist), "G509", f"{root}/neurobrix/evil/")


@pytest.mark.slow
def test_an_sdist_whose_gitignore_drops_a_module_from_pips_build_is_refused(
    built: Built, commits: Path, tmp_path: Path
) -> None:
    """At a commit whose ``.gitignore`` names ``neurobrix/cli.py``: an sdist holding the commit's ``.gitignore`` and
    every tracked file (as G509 requires) builds, with pip as with the gate, into a wheel without the module; the wheel
    judged beside it holds it, and the pair is refused (G508). The wheel alone holds every tracked file, as the model
    says (round 51 left the honest build's G108 open)."""
    tree = commits / "ignored"
    dists = tmp_path / "dist"
    dists.mkdir()
    rewrite_sdist(built.sdist, dists, replace={".gitignore": (tree / ".gitignore").read_bytes()})
    (dists / built.wheel.name).write_bytes(built.wheel.read_bytes())
    options = Options(load_reference(tree / "tables/TRACKED.yaml"), Version(__version__), smoke=False, source_tree=tree)
    refused_with(check([dists], options), "G508", "neurobrix/cli.py")
