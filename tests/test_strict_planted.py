"""What makes the guarantee strict, against bugs planted in it: the tracked-file check and the reading of the
verified bytes, the settings index and its proofs, the bucket rules, preflight's plan, the compiler-stack rule,
GPU-class matching, and on the conformance side the bounds, certify's choice and what it records, the shipped
settings' check and the classes a change affects. Each test failed with one such bug (named in its docstring)
that the rest of the suite let through, and passes on the real code. No kernel is launched: the file takes
seconds."""

from __future__ import annotations

import pytest
from conftest import retrack

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


def test_the_env_var_wins_over_the_installed_tables_which_win_over_a_checkout(fixture_tables, monkeypatch, tmp_path):
    """Planted: tables._locate looks at the installed package's tables before NEUROBRIX_TABLES, so an installed
    neurobrix ignores the folder a contributor names (a checkout has no neurobrix/_tables, so nothing else here
    sees the order)."""
    installed = tmp_path / "site-packages" / "neurobrix"
    (installed / "_tables").mkdir(parents=True)
    monkeypatch.setattr(tables.resources, "files", lambda package: installed)
    assert tables.locate() == tables.TablesLocation(fixture_tables.resolve(), tables.ENV_VAR)
    monkeypatch.delenv(tables.ENV_VAR)
    tables.clear_cache()
    assert tables.locate() == tables.TablesLocation(installed / "_tables", "installed package")


@pytest.mark.parametrize("name", ["interpreter/old/demo.json", "interpreter/old/class.yaml"])
def test_a_tracked_table_two_folders_deep_is_refused_as_no_table(fixture_tables, name):
    """Planted: tables._layout_problems judges a tracked file by its last name only, whatever its depth: a table
    tracked one folder below its class folder (an old copy kept beside the new) was taken for a table and loading
    ended in a ValueError instead of a refusal naming it."""
    path = fixture_tables / name
    path.parent.mkdir()
    path.write_bytes((fixture_tables / "interpreter" / path.name).read_bytes())
    retrack(fixture_tables)
    with pytest.raises(TablesError, match=rf"{name}: not a class.yaml, a <kernel>.json or a <kernel>.proofs.yaml"):
        tables.load()
