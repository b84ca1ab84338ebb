"""Every planted-bug round's plants (``tests/planted*_plants.py``) and gate mutation round's (``tests/gate*_plants.py``)
anchored on today's code: each plant's text occurs exactly once in its file, as its driver requires (an anchor found 0
or 2 times is no outcome). An edit to planted code re-anchors its plants on the same bug, and checks with the round's
driver that each is caught as before. Walk-through round 30 found nine anchors that no longer occurred (re-anchored
since). No driver lists this file among a plant's tests: any plant moves its own anchor, so this file fails under every
plant whatever the plant does."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from conftest import REPO

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize(
    "module", sorted(p.stem for pattern in ("planted*_plants.py", "gate*_plants.py") for p in TESTS.glob(pattern))
)
def test_every_planted_rounds_anchor_occurs_once_in_todays_code(module: str) -> None:
    """Each plant of the module replaces text that occurs exactly once in its file, and no id is given twice."""
    sys.path.insert(0, str(TESTS))
    try:
        plants = importlib.import_module(module).PLANTS
    finally:
        sys.path.remove(str(TESTS))
    ids = [plant["id"] for plant in plants]
    assert len(ids) == len(set(ids)), f"{module}: a plant id given twice"
    lost = {
        plant["id"]: (REPO / plant["file"]).read_text(encoding="utf-8").count(plant["old"])
        for plant in plants
        if (REPO / plant["file"]).read_text(encoding="utf-8").count(plant["old"]) != 1
    }
    assert not lost, f"{module}: anchors found other than once (id: times): {lost}"
