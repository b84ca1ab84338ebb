"""What makes the guarantee strict, against bugs planted in it: the tracked-file check and the reading of the
verified bytes, the settings index and its proofs, the bucket rules, preflight's plan, the compiler-stack rule,
GPU-class matching, and on the conformance side the bounds, certify's choice and what it records, the shipped
settings' check and the classes a change affects. Each test failed with one such bug (named in its docstring)
that the rest of the suite let through, and passes on the real code. No kernel is launched: the file takes
seconds."""

from __future__ import annotations

import pytest

from neurobrix import tables
from neurobrix.errors import TablesError

# -- the bytes verified are the bytes read ------------------------------------------------------------------


def test_a_class_yaml_altered_after_the_folder_check_is_refused(fixture_tables, monkeypatch):
    """Planted: tables._load parses class.yaml without the sha256 the folder check verified, so a class.yaml
    changed between the check and its reading (here to match every NVIDIA device's name) is used."""
    real = tables.check_files

    def check_then_alter(root, tracked):
        problems = real(root, tracked)
        path = fixture_tables / "fake-gpu" / "class.yaml"
        path.write_text(path.read_text().replace("device_name: NVIDIA Fake*", 'device_name: "*"'))
        return problems

    monkeypatch.setattr(tables, "check_files", check_then_alter)
    with pytest.raises(TablesError, match=r"fake-gpu/class.yaml: changed while the tables were being loaded"):
        tables.load()


def test_proofs_altered_after_the_folder_check_are_refused(fixture_tables):
    """Planted: Tables.proofs parses the audit record without the sha256 the folder check verified (as the index
    is): `tables verify` would judge bytes nobody hashed."""
    loaded = tables.load()
    path = fixture_tables / "interpreter" / "demo.proofs.yaml"
    path.write_text(path.read_text().replace("worst_error_ratio: 0.25", "worst_error_ratio: 0.24"))
    with pytest.raises(TablesError, match=r"demo.proofs.yaml: changed while the tables were being loaded"):
        loaded.proofs("interpreter", "demo")


def test_an_untracked_symlink_pointing_nowhere_is_refused(fixture_tables, tmp_path):
    """Planted: tables.check_files counts as untracked only what is a file (following links): a symlink to
    nothing, which a later write through it would fill, passes the check."""
    (fixture_tables / "interpreter" / "extra.json").symlink_to(tmp_path / "not-there.json")
    with pytest.raises(TablesError, match=r"interpreter/extra.json: present but not in the tracked list"):
        tables.load()
