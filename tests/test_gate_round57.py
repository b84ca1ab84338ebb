"""Gate mutation round 57 (tests/gate57_plants.py, applied one at a time by tests/gate57_driver.py).

Where round 56 added code to gate/repository.py: ``_check_build_requires`` (``[build-system] requires``: hatchling
alone, plain, in a list), ``MODELLED_HATCH`` with ``_check_metadata_model`` (``[tool.hatch.metadata]`` none,
``[tool.hatch.version]`` the package's ``__init__.py``) and their calls from ``_check_build_model``. 33 plants (a
requirement's URL, extra or marker not checked, the name not canonicalised or compared as a prefix, a non-list or an
empty list taken, a table's empty-dict handling inverted, a key on one side not named, the path compared loosely, the
check called on the wrong table or not at all), each run against the tests a contributor would run for that code:
round 56's fast cases, round 51's and round 52's fast build-model cases (3-6 s a plant on the busy 2-core machine).

Caught before this round: 20 (q01 a URL taken, q02 an extra, q03 a marker, q05 the name not canonicalised
(``Hatchling`` refused), q09 a string or any truthy value taken for the list, q10 an empty list, q11 the first
requirement alone read, q16 a single requirement named not enough to stop, q17 the check not called, q18 a missing
``requires`` taken for hatchling; h01 ``[tool.hatch.metadata]`` dropped from the model, h02 the version table not
read, h03 the empty-table filter inverted (the checkout refused), h04 an empty hook table dropped
(``hooks.custom = {}``), h05 a non-table value dropped, h07 the model's empty table kept (an absent metadata table
named missing), h08 keys the model lacks not named, h09 the model's keys missing from the commit not named, h13 the
check called on ``[tool.hatch.build]``, h14 not called).

Equivalent: 8. q06 (the name lower-cased, not canonicalised: ``hatchling`` holds no ``-``, ``_`` or ``.``, so a name
canonicalising to it is the same letters in some case, which ``lower`` reads alike); q13 (``Requirement(str(item))``:
no TOML value other than a string prints as a requirement named hatchling, ``True``, ``1.5``, a date, a list or a
table are named); q14 (``except ValueError``: ``InvalidRequirement`` is a ``ValueError``, and a wider catch only names
more); q15 (``plain`` true for an unparsed requirement: the test after it asks ``requirement is not None`` again);
h06 (``declared or {}``: a ``metadata`` of ``false``, ``0``, ``""`` or ``[]`` passes the model, but hatchling refuses
any build of it, ``Field `tool.hatch.metadata` must be a table``, shown with ``build``'s ``metadata_path`` and
``build("sdist")``, so preparing the reference stops the gate, exit 2); h10 (``get`` defaulting to ``None``: TOML has
no null, so a key on one side only still differs); h12 (the values compared after ``os.path.normpath``: hatchling's
``VersionFile`` reads ``normpath(join(root, path))``, the same file; no other key is modelled, and a value equal to
the sentinel's text is no TOML a commit can write ahead); h15 (the metadata check run only where
``[tool.hatch.build]`` exists: without it the build model has stopped the gate already, every modelled key missing).

Survived and now failing a case below (each shown failing with its plant alone and passing without): q04 (a marker
taken where it is true on the gate's machine: ``hatchling; python_version >= "3"``, a marker that may be false on the
builder's), q07 (the name compared as a prefix: ``hatchling-helper`` passed), q08 (as a substring: ``nb-hatchling``),
q12 (a requirement not a string parsed: ``["hatchling", 1]`` a TypeError's traceback, not the gate's one line), h11
(the version path compared by its end: ``vendor/neurobrix/__init__.py`` passed, another file hatchling reads).

Found in the clean code: nothing. Left open: each plant ran against the round's fast cases, not the end-to-end builds
(round 56's slow cases), which call the same function; a requirement named twice (``["hatchling", "hatchling<0"]``)
passes the check and fails pip's build closed.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from gate.checker import REPO
from gate.checks import GateError
from gate.repository import _check_build_model

if sys.version_info >= (3, 11):
    import tomllib
else:  # check-wheel-contents brings tomli there
    import tomli as tomllib

MODELLED = "the gate models (gate/repository.py)"  # in each line the gate stops with


def _config() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _stopped(config: dict[str, Any]) -> str:
    """The one line the gate stops with on ``config`` (a GateError, not another exception)."""
    with pytest.raises(GateError) as raised:
        _check_build_model(REPO, config, {}, str(config["project"]["readme"]))
    line = str(raised.value)
    assert "\n" not in line and MODELLED in line, line
    return line


REQUIRES: dict[str, list[object]] = {  # [build-system] requires the plants let through -> what the line names
    "a distribution whose name starts with hatchling's": ["hatchling-helper"],
    "one whose name holds hatchling's": ["nb-hatchling"],
    "hatchling under a marker true on this machine": ['hatchling; python_version >= "3"'],
    "hatchling and a number": ["hatchling", 1],
    "hatchling and a list": ["hatchling", ["nb-build-helper"]],
}


@pytest.mark.parametrize("change", REQUIRES)
def test_each_requirement_not_hatchling_alone_and_plain_is_named(change: str) -> None:
    """A name like hatchling's is another distribution (q07 compared a prefix, q08 a substring); a marker is refused
    whatever it says here (q04 took one true on the gate's machine, which may be false on the builder's); a value
    that is not a string is named in the gate's one line (q12 parsed it: a TypeError's traceback)."""
    requires = REQUIRES[change]
    config = _config()
    config["build-system"]["requires"] = requires
    line = _stopped(config)
    assert repr(requires[-1]) in line, line


def test_a_version_file_whose_path_ends_like_the_modelled_one_is_named() -> None:
    """``vendor/neurobrix/__init__.py`` is another file than the package's, hatchling's version source reads it
    (h11 compared the path's end)."""
    config = _config()
    config["tool"]["hatch"]["version"] = {"path": "vendor/neurobrix/__init__.py"}
    line = _stopped(config)
    assert "[tool.hatch.version]" in line and "path = 'vendor/neurobrix/__init__.py'" in line, line
