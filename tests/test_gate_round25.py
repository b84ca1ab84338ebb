"""The twenty-fifth round against the release gate: the publish step, file names, compression and name collisions.

Held against twine 7 (``twine upload dist/*`` as the release runs it, its grouping of the files it is handed),
warehouse's upload checks (read from its source), pip 23.2 and uv 0.13.9 (installing each passed variant side by side),
the round found no dist the gate passes that one of them reads otherwise. Each idea below was refused already:
``.whl.metadata``, ``.asc`` and ``.attestation`` files beside the dists (G001), a dist named with an upper-case
extension, a build tag, ``NeuroBrix-``, ``neurobrix_``, ``0.1`` for ``0.1.0`` or two tag sets (G405, G407), an sdist
whose root folder says ``NeuroBrix-0.1.0`` (G501), bytes after a zip member's deflate stream inside the member (G309),
an sdist of two gzip members (G311); and wheels of stored members, of names flagged UTF-8, of MS-DOS entries, of the
text bit, of folder entries before or after their files, and of RECORD first, each passed, installed the same files
with pip and uv.

What twine does with the files it is handed is the one layer no test held by name: the test here pins it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from twine import commands, exceptions
from twine.package import PackageFile

from gate.checker import collect

WHEEL = "neurobrix-0.1.0-py3-none-any.whl"
SDIST = "neurobrix-0.1.0.tar.gz"

# Files a publish folder may come to hold beside the dists, and what `twine upload dist/*` makes of each: a PEP 740
# attestation (any `*.*.attestation` whose name starts with the dist's: twine attaches every one to that dist's upload,
# so a file planted in the build's artifact would ride with the release as its provenance), a PGP signature (attached
# to the dist it names), and the PEP 658 metadata file PyPI serves beside a wheel (twine takes it for a dist and stops).
COMPANIONS = {
    f"{WHEEL}.publish.attestation": "attestation",
    f"{WHEEL}.other.attestation": "attestation",
    f"{SDIST}.publish.attestation": "attestation",
    f"{SDIST}.asc": "signature",
    f"{WHEEL}.metadata": "dist",
}


@pytest.mark.parametrize("companion", list(COMPANIONS))
def test_a_file_twine_would_attach_or_take_for_a_dist_beside_the_dists_is_refused(
    tmp_path: Path, companion: str
) -> None:
    """A folder holding the wheel, the sdist and one more file that `twine upload dist/*` reads: the gate judges the
    folder as twine is handed it, so the file is a finding (G001), never skipped as a companion of the dists."""
    with zipfile.ZipFile(tmp_path / WHEEL, "w"):  # only the names are read here
        pass
    (tmp_path / SDIST).write_bytes(b"")
    (tmp_path / companion).write_text("{}\n")
    handed = sorted(str(p) for p in tmp_path.iterdir())  # what the shell's dist/* expands to
    dists, signatures, attestations = commands._split_inputs(handed)
    what = COMPANIONS[companion]
    if what == "attestation":  # attached to the dist whose name it starts with
        owner = WHEEL if companion.startswith(WHEEL) else SDIST
        assert attestations[str(tmp_path / owner)] == [str(tmp_path / companion)]
    elif what == "signature":
        assert signatures == {companion: str(tmp_path / companion)}
    else:  # uploaded as a dist of its own: twine stops on it
        assert str(tmp_path / companion) in dists
        with pytest.raises(exceptions.InvalidDistribution, match="Unknown distribution format"):
            PackageFile.from_filename(str(tmp_path / companion), None)
    found, findings = collect([tmp_path])
    assert [p.name for p in found] == [WHEEL, SDIST]
    assert [(f.code, f.path) for f in findings] == [("G001", companion)]
