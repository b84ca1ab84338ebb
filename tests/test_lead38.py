"""Left open by strictness round 50 and closed the next session: `neurobrix list` marked a model a newer NeuroBrix
imported (its manifest of a later format) DAMAGED, and `remove` said it "was damaged: its manifest is unreadable",
though nothing in it is broken and the newer NeuroBrix runs it. It is now listed as NEWER FORMAT with the reason
(upgrade NeuroBrix to run it), `--json` says so in ``newer_format``, and `remove` names what it removed as such. A
damaged model stays DAMAGED."""

from __future__ import annotations

import json

from store_fixtures import make_checkpoint

from neurobrix import store
from neurobrix.cli import main


def _stored(tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    store.import_model(str(make_checkpoint(tmp_path / "tiny")), progress=False)
    store.import_model(str(make_checkpoint(tmp_path / "other")), progress=False)
    manifest = store.resolve("tiny").path / store.MANIFEST
    data = json.loads(manifest.read_text(encoding="utf-8"))
    manifest.write_text(json.dumps({**data, "format": store.MANIFEST_FORMAT + 1}), encoding="utf-8")
    (store.resolve("other").path / "config.json").unlink()  # a damaged one beside it


def test_a_newer_neurobrix_model_is_listed_as_newer_not_damaged(tmp_path, monkeypatch, capsys):
    _stored(tmp_path, monkeypatch)
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    (tiny,) = [line for line in lines if line.startswith("tiny ")]
    (other,) = [line for line in lines if line.startswith("other ")]
    assert tiny.endswith("NEWER FORMAT") and "DAMAGED" not in tiny, lines
    assert other.endswith("DAMAGED"), lines
    assert any("newer NeuroBrix" in line and "upgrade NeuroBrix" in line for line in lines), lines
    assert main(["list", "--json"]) == 0
    models = {m["name"]: m for m in json.loads(capsys.readouterr().out)["models"]}
    assert models["tiny"]["newer_format"] is True and "newer NeuroBrix" in models["tiny"]["damaged"]
    assert models["other"]["newer_format"] is False and models["other"]["damaged"]


def test_removing_a_newer_neurobrix_model_says_what_it_was(tmp_path, monkeypatch, capsys):
    _stored(tmp_path, monkeypatch)
    assert main(["remove", "tiny"]) == 0
    out = capsys.readouterr().out
    assert "imported by a newer NeuroBrix" in out and "unreadable" not in out and "damaged" not in out, out
    assert main(["remove", "other"]) == 0
    assert "it was damaged" in capsys.readouterr().out
