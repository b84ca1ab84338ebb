"""The seventeenth round, adversarial on the runtime's inputs: a stored model's manifest whose fields are of another
type than the import writes (or name a file outside the model's folder), table YAML holding values that are no JSON
data (a date, bytes, a set, a key that is no string) or numbers spelt in YAML 1.1's other forms (octal 0204, hex,
1_0, sexagesimal 2:12), which a YAML 1.2 reader reads otherwise, and tracked paths that are not a plain
``<folder>/<file>`` (a name too long for the file system, a control character, ``.`` or an empty segment).
Each test failed before the fix it names (an input accepted, or a traceback instead of one line and its exit code)
and passes now. No kernel is launched."""

from __future__ import annotations

import json

import pytest
from store_fixtures import config_dict, make_checkpoint

from neurobrix.cli import main


def _one_line(capsys, argv, code):
    """``neurobrix argv`` ends with ``code`` and one line on stderr, which it returns."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == code, err
    assert len(err.strip().splitlines()) == 1, err
    return err


# -- a stored model's manifest of other types ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "said"),
    [
        # a TypeError traceback: shlex.quote of the revision in the damage message, a format spec on a list in `list`
        (lambda d: d.update(revision=5), "revision 5 is neither a text nor null"),
        (lambda d: d.update(revision=["main"]), "revision ['main'] is neither a text nor null"),
        (lambda d: d.update(commit={"a": 1}), "commit {'a': 1} is neither a text nor null"),
        (lambda d: d.update(imported=5), "imported 5 is neither a text nor null"),
        # accepted: equal to the format 1, a source shown (and re-imported) as "None"
        (lambda d: d.update(format=1.0), "format 1.0 is not the integer 1"),
        (lambda d: d.update(format=True), "format True is not the integer 1"),
        (lambda d: d.update(source=None), "source None is not the text of a hub id or a folder"),
        # accepted: a size of another type read as the integer it rounds or parses to
        (lambda d: d["files"].update({"config.json": str(d["files"]["config.json"])}), "the size '"),
        (lambda d: d["files"].update({"config.json": d["files"]["config.json"] + 0.7}), ".7, not a number of bytes"),
        (lambda d: d["files"].update({"config.json": True}), "the size True, not a number of bytes"),
        # accepted: a file outside the model's folder checked (and counted) as the model's
        (lambda d: d["files"].update({"/etc/hostname": 0}), "files names '/etc/hostname', which is not a file of"),
        (lambda d: d["files"].update({"../other/config.json": 0}), "files names '../other/config.json', which is not"),
    ],
)
def test_a_manifest_field_of_another_type_is_a_damaged_model(tmp_path, monkeypatch, capsys, change, said):
    """The stored model's neurobrix-model.json with a revision of 5 (and a file missing): `list` and `run` died in a
    TypeError traceback; a revision list or a commit object killed `list`; a format of 1.0 or true, a source null, a
    size "369", 369.7 or true, a file named "/etc/hostname" (checked outside the model's folder) were taken. Now the
    model is damaged (exit 7) naming the field, `list` marks it so, and `remove` clears it."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny", config=config_dict(), use_transformers=False)
    assert main(["import", str(folder)]) == 0
    path = tmp_path / "home" / "models" / "tiny" / "neurobrix-model.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    data["files"].setdefault("missing.json", 3)  # a damage to report too
    path.write_text(json.dumps(data), encoding="utf-8")
    err = _one_line(capsys, ["run", "--model", "tiny", "--prompt", "hello", "--no-chat", "--max-tokens", "1"], 7)
    assert "stored model tiny" in err and "neurobrix-model.json is unreadable" in err and said in err
    capsys.readouterr()
    assert main(["list"]) == 0
    assert "DAMAGED" in capsys.readouterr().out
    assert main(["list", "--json"]) == 0
    assert main(["remove", "tiny"]) == 0
    assert not path.exists()
