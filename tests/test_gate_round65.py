"""The sixty-fifth round against the release gate: sdists aimed at ``python -m build`` as the front end.

build 1.6.1, given an sdist, asks for one top-level folder holding a ``PKG-INFO`` file, unpacks the whole tar with
tarfile's ``data`` filter and hands the folder to the backend, so the wheel it builds is made of what that filter lets
through: a member said twice or under an alias of its name (``./``, ``//``, ``..`` inside the root), a pax ``path``,
a GNU long name or a global pax header renaming a planted member onto ``neurobrix/cli.py``, a second gzip member, all
unpack over the real module, and hard and symbolic links inside the folder add a second name for a package file (a
link to ``ops`` gives a wheel whose package is ``neurobrix/extra/``, without ``neurobrix/ops/``). Each case
(tests/gate65_cases.py) is this checkout's sdist so altered; the gate refused each before this round, with the code
the README's table gives for what the case does. What build (isolated and not), pip 23.2.1 and pip 26.2.1 built from
each (tests/gate65_driver.py) and which check holds each: docs/gate-rounds.md, round 65.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gate65_cases import CASES, CONTROLS, READS, build_unpacks, reading, sdist_bytes
from gate_fixtures import Built, RawTarMember, sdist_members
from test_gate_hostile import REFERENCE, built

from gate.checker import Options, check

pytestmark = pytest.mark.slow
__all__ = ["built"]  # the hostile corpus's built wheel and sdist

# the README table's code for what each case does (the member it names or the stream it is read from)
EXPECTED = {
    "cli.py said twice, the second planted": "G305",  # duplicates
    "cli.py again as ./ inside the root": "G310",  # a `.` component: installs elsewhere than it reads
    "cli.py again with a doubled slash": "G310",  # an empty component
    "cli.py again through neurobrix/../neurobrix": "G302",  # `..`
    "cli.py again through the root's parent": "G302",
    "cli.py again as ./ before the root": "G507",  # outside the top folder
    "a pax path renaming a planted member onto cli.py": "G313",  # pax `path`
    "a GNU long name renaming a planted member onto cli.py": "G313",  # GNU long names
    "a global pax path before a planted member": "G313",
    "an untracked module": "G509",  # a file the repository does not track
    "evil.py a hard link to cli.py": "G304",  # links and other non-files
    "evil.py a symbolic link to cli.py": "G304",
    "a folder neurobrix/extra a symbolic link to ops": "G304",
    "evil.py a symbolic link out of the sdist": "G304",
    "an absolute member": "G301",  # absolute names
    "a FIFO in the package": "G304",
    "a planted cli.py in a second gzip member": "G311",  # bytes after the first gzip member
    "a planted cli.py after the tar's end": "G311",  # data after a tar's end
    "a second top-level folder": "G507",
    "the top folder of another version": "G507",  # not one name-version/ folder: every member outside it
    "cli.py setuid and executable": "G509",  # bits past the permission bits
    "PKG-INFO a hard link to README.md": "G304",
}


@pytest.fixture(scope="module")
def base(built: Built) -> tuple[str, list[RawTarMember], dict[str, object]]:
    """The sdist's top folder, its members (read once for the module) and build's unpacking of it as built."""
    return built.sdist.name.removesuffix(".tar.gz"), sdist_members(built.sdist), build_unpacks(built.sdist.read_bytes())


def _judge(built: Built, tmp_path: Path, data: bytes) -> tuple[bool, list[tuple[str, str | None]]]:
    path = tmp_path / built.sdist.name
    path.write_bytes(data)
    report = check([path], Options(REFERENCE, smoke=False, tools=False))
    return report.passed, [(f.code, f.path) for f in report.findings]


def test_every_case_has_its_code_and_reading() -> None:
    assert set(EXPECTED) == set(CASES) == set(READS)
    assert len(CASES) >= 15


@pytest.mark.parametrize("case", list(CASES))
def test_an_sdist_build_reads_otherwise_is_refused(
    built: Built, base: tuple[str, list[RawTarMember], dict[str, object]], tmp_path: Path, case: str
) -> None:
    root, members, _ = base
    passed, found = _judge(built, tmp_path, sdist_bytes(members, root, case))
    assert not passed, found
    assert EXPECTED[case] in {code for code, _ in found}, (EXPECTED[case], found)


@pytest.mark.parametrize("case", list(CONTROLS))
def test_a_repacking_build_reads_as_built_passes(
    built: Built, base: tuple[str, list[RawTarMember], dict[str, object]], tmp_path: Path, case: str
) -> None:
    root, members, unpacked = base
    data = sdist_bytes(members, root, case)
    assert reading(build_unpacks(data), unpacked) == "as built"
    passed, found = _judge(built, tmp_path, data)
    assert passed, found


def test_build_unpacks_each_case_as_the_round_says(base: tuple[str, list[RawTarMember], dict[str, object]]) -> None:
    """What makes the cases hostile, measured on build's own unpacking (its top-level rule, then the ``data``
    filter): the tree it hands the backend holds a planted cli.py, an added name or cli.py executable, or build
    refuses the sdist; the sdist as built unpacks whole."""
    root, members, unpacked = base
    assert "refused" not in unpacked and len(unpacked["files"]) == len([m for m in members if m.type == b"0"])  # type: ignore[arg-type]
    seen = {case: reading(build_unpacks(sdist_bytes(members, root, case)), unpacked) for case in CASES}
    assert seen == READS
