"""The twenty-seventh round, adversarial on the strict runtime: neurobrix installed from its wheel, then tampered with
in site-packages (or by someone who can write the user's environment), each probe refused naming the file before any
kernel runs. Found and fixed: a table edited together with TRACKED.yaml (as `conformance track` rewrites it) ran, the
list lying beside what it pins, while the wheel's RECORD, which holds TRACKED.yaml's hash, was never read for the
tables; the installed `neurobrix/_tables` replaced by a link to a folder elsewhere ran; an installed neurobrix whose
`_tables` was removed fell back to a `tables/` folder beside the package in site-packages (a "source checkout");
a table file made unreadable ended every command in a PermissionError (the API) or exit 1 (the CLI) rather than in
the tables' refusal; and Triton's cache named at a folder not there yet under a folder every user can write
(`TRITON_CACHE_DIR=/tmp/cache`), or at a folder another user owns, passed round 20's check while that user can fill
it with binaries Triton loads under a certified kernel's key. Each of those tests failed before its fix. Pinned as
refused already: a table edited alone, a table file or a class folder replaced by a link, a class folder dropped in,
TRACKED.yaml removed. No GPU; no kernel launched."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import REPO, retrack
from gate_fixtures import install_wheel

from neurobrix import stack, tables
from neurobrix.errors import TablesError

CLASS = "interpreter"


@pytest.fixture(scope="module")
def wheel_site(tmp_path_factory) -> Path:
    """This checkout built into a wheel by its own build backend (hatchling, as `python -m build` builds the release)
    and installed by ``installer`` (PyPA's installer, which writes the RECORD pip writes) into a site folder."""
    from hatchling.builders.wheel import WheelBuilder

    base = tmp_path_factory.mktemp("wheel")
    source = base / "src"
    source.mkdir()
    for name in ("neurobrix", "tables"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    (wheel,) = WheelBuilder(str(source)).build(directory=str(base / "dist"), versions=["standard"])
    site = install_wheel(wheel, base / "site")
    return site


@pytest.fixture
def site(wheel_site, tmp_path, monkeypatch) -> Path:
    """A copy of the installed site folder, the package there being the one whose tables ``tables.load()`` finds."""
    folder = tmp_path / "site"
    shutil.copytree(wheel_site, folder, symlinks=True)
    monkeypatch.delenv(tables.ENV_VAR, raising=False)
    monkeypatch.setattr(tables, "resources", SimpleNamespace(files=lambda name: folder / name))
    return folder


def _installed(site: Path) -> Path:
    return site / "neurobrix" / "_tables"


def _edit_setting(root: Path) -> Path:
    path = root / CLASS / "rms_norm.json"
    text = path.read_text(encoding="utf-8")
    assert '"num_warps": 4' in text
    path.write_text(text.replace('"num_warps": 4', '"num_warps": 8', 1), encoding="utf-8")
    return path


def _load_refused(match: str) -> TablesError:
    tables.clear_cache()
    with pytest.raises(TablesError, match=match) as refused:
        tables.load()
    assert refused.value.exit_code == 3
    return refused.value


# ------------------------------------------------------------- 1. TRACKED.yaml rewritten with the table it pins
def test_the_installed_tables_load_as_installed(site):
    """Control: the installed package's tables are found there and verified, their list matching the wheel's RECORD."""
    loaded = tables.load()
    assert loaded.location == tables.TablesLocation(_installed(site), "installed package")


def test_the_installed_tables_are_the_releases_and_their_proofs_are_not_read_again(site, monkeypatch):
    """The wheel's RECORD pins TRACKED.yaml, which pins each record: the bytes the release gate ran `tables verify` on
    (G702), so loading an index reads its record's header and digests, not each entry's proof again (strict round 56:
    a checkout's records are read so, at twice the load's cost for a GPU class)."""
    loaded = tables.load()
    assert loaded._release
    monkeypatch.setattr(tables, "_certified_entries", lambda *a: pytest.fail("an installed record was read again"))
    for kernel in loaded.kernels(CLASS):
        assert loaded.index(CLASS, kernel) is not None


def test_a_table_edited_after_the_install_is_refused(site):
    """Refused already: the table's sha256 is not TRACKED.yaml's (exit 3, the file named)."""
    path = _edit_setting(_installed(site))
    said = _load_refused("do not match TRACKED.yaml")
    assert f"{path}: sha256 differs from the tracked list" in str(said)


def test_a_table_edited_with_its_tracked_list_is_refused(site):
    """TRACKED.yaml lies beside the files it pins, so a hand that edits a setting and rewrites the list (as
    `conformance track` writes it) made both agree: the installed engine ran the edited setting (exit 0). The wheel's
    RECORD lists TRACKED.yaml's hash; an installed package's list must now be the one its wheel installed (exit 3,
    naming TRACKED.yaml and the RECORD)."""
    root = _installed(site)
    _edit_setting(root)
    retrack(root)
    said = _load_refused("is not the one neurobrix 0.1.0's wheel installed")
    assert str(root / "TRACKED.yaml") in str(said)
    assert str(site / "neurobrix-0.1.0.dist-info" / "RECORD") in str(said)
    assert "pip install --force-reinstall --no-deps neurobrix==0.1.0" in str(said)


def test_an_extra_class_tracked_with_it_is_refused(site):
    """A class folder dropped in (its own GPU's settings) and tracked with the rest: refused by the list's hash."""
    root = _installed(site)
    shutil.copytree(root / CLASS, root / "dropped")
    retrack(root)
    _load_refused("is not the one neurobrix 0.1.0's wheel installed")


def test_a_record_not_listing_the_tables_is_refused(site):
    """A RECORD of the package (a wheel built otherwise, or one edited) that lists none of the tables anchors none."""
    record = site / "neurobrix-0.1.0.dist-info" / "RECORD"
    record.write_text("".join(r for r in record.read_text().splitlines(True) if "TRACKED.yaml" not in r))
    said = _load_refused("does not list neurobrix/_tables/TRACKED.yaml")
    assert str(record) in str(said)


def test_an_edited_install_is_refused_by_run_before_anything_loads(site, tmp_path):
    """The same through the installed command, in its own process: `run` exits 3 naming TRACKED.yaml, before the
    model is looked for (there is none)."""
    root = _installed(site)
    _edit_setting(root)
    retrack(root)
    env = {**os.environ, "PYTHONPATH": str(site), "TRITON_INTERPRET": "1", "NEUROBRIX_HOME": str(tmp_path / "home")}
    env.pop(tables.ENV_VAR, None)
    argv = ["run", "--model", "none", "--prompt", "hi", "--no-chat", "--max-tokens", "1"]
    done = subprocess.run(
        [sys.executable, "-m", "neurobrix", *argv], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"{root / 'TRACKED.yaml'} is not the one neurobrix 0.1.0's wheel installed" in done.stderr
    assert "Traceback" not in done.stderr


# ------------------------------------------------------------- 2. links, a missing folder, an unreadable file
def test_the_installed_tables_folder_replaced_by_a_link_is_refused(site, tmp_path):
    """``neurobrix/_tables`` replaced by a link to a folder elsewhere (here holding the same bytes) was read there: no
    installer writes a link, and what lies at its target is not what the wheel installed. Refused naming both."""
    root = _installed(site)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(root, elsewhere)
    root.symlink_to(elsewhere, target_is_directory=True)
    said = _load_refused("the installed package's tables are a link to")
    assert str(root) in str(said) and str(elsewhere) in str(said)


@pytest.mark.parametrize("what", [f"{CLASS}/rms_norm.json", CLASS], ids=["a-table-file", "a-class-folder"])
def test_a_table_file_or_folder_replaced_by_a_link_is_refused(site, tmp_path, what):
    """Refused already: a link in place of a tracked file (to a file of the same bytes outside the package), or of a
    class folder, is no regular file of the tables (exit 3, named)."""
    path = _installed(site) / what
    elsewhere = tmp_path / "elsewhere"
    shutil.move(path, elsewhere)
    path.symlink_to(elsewhere)
    said = _load_refused("do not match TRACKED.yaml")
    assert str(path) in str(said)


def test_an_installed_package_without_its_tables_reads_no_folder_beside_it(site, monkeypatch):
    """An installed neurobrix whose ``_tables`` was removed fell back to the source checkout's ``tables/`` beside the
    package, which in site-packages is any distribution's (PyTables installs ``site-packages/tables``) or an
    attacker's folder with a list of its own. Now an installed package reads its own tables or none (exit 3)."""
    shutil.rmtree(_installed(site))
    planted = site / "tables"
    shutil.copytree(REPO / "tables" / CLASS, planted / CLASS)
    retrack(planted)
    # the module's own place decides the checkout's folder: this site's package
    monkeypatch.setattr(tables, "__file__", str(site / "neurobrix" / "tables.py"))
    said = _load_refused("the installed neurobrix has no certified tables")
    assert str(_installed(site)) in str(said)


def test_the_tracked_list_removed_is_refused(site):
    """Refused already: without TRACKED.yaml nothing in the folder can be trusted (exit 3, named)."""
    (_installed(site) / "TRACKED.yaml").unlink()
    _load_refused("the tracked-file list is missing")


def test_an_unreadable_table_file_is_refused_by_name(site, monkeypatch):
    """A table file (or its folder) made unreadable ended `tables.load` in a PermissionError, every command in
    "Permission denied" (exit 1) and `doctor` without its report; it is now one of the tables' problems, named
    (exit 3). (The test runs as root here, whom chmod does not stop: the denial is the operating system's error.)"""
    path = _installed(site) / CLASS / "rms_norm.json"
    real_open = Path.open

    def denied(self, *args, **kwargs):
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", denied)
    said = _load_refused("do not match TRACKED.yaml")
    assert f"{path}: cannot be read (Permission denied)" in str(said)


# ------------------------------------------------------------- 3. Triton's cache, which another user could fill
@pytest.mark.parametrize("mode", [0o777, 0o1777], ids=["world-writable", "world-writable-sticky"])
def test_a_cache_folder_another_user_can_make_first_is_refused(tmp_path, monkeypatch, mode):
    """TRITON_CACHE_DIR=/tmp/cache, not there yet: round 20 looked at the folder only once it exists, and /tmp is
    writable and the cache not there, so it passed; any user makes /tmp/cache first (their own, 777 or not) and places
    a binary under a certified kernel's key, which Triton loads instead of compiling. Refused now (exit 2 from run)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(shared / "cache"))
    problem = stack.cache_problem("fake-gpu")
    assert problem is not None and problem.startswith(f"TRITON_CACHE_DIR={shared / 'cache'}: it does not exist yet")
    shared.chmod(0o755)  # control: a folder only its owner writes
    assert stack.cache_problem("fake-gpu") is None


def test_a_cache_folder_of_another_user_is_refused(tmp_path, monkeypatch):
    """A cache folder another user owns (made first, or handed over) is theirs to fill whatever its mode: refused
    naming the owner. Root's own and the user's own serve (controls)."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o755)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    assert stack.cache_problem("fake-gpu") is None
    real_stat = Path.stat

    def theirs(self, *args, **kwargs):
        found = real_stat(self, *args, **kwargs)
        if self == cache:
            return os.stat_result((found.st_mode, *found[1:4], 4321, *found[5:]))
        return found

    monkeypatch.setattr(Path, "stat", theirs)
    problem = stack.cache_problem("fake-gpu")
    assert problem is not None and "it belongs to another user (uid 4321)" in problem


def test_a_cache_under_a_folder_every_user_can_rename_in_is_refused(tmp_path, monkeypatch):
    """The user's own cache folder inside a share every user may write and that is not sticky: any of them renames it
    away and puts their own in its place. Refused naming the share; sticky (as /tmp is) it serves."""
    share = tmp_path / "share"
    (share / "cache").mkdir(parents=True, mode=0o755)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(share / "cache"))
    share.chmod(0o777)
    problem = stack.cache_problem("fake-gpu")
    assert problem is not None and f"{share} above it is writable by every user" in problem
    share.chmod(0o1777)
    assert stack.cache_problem("fake-gpu") is None
    assert stat.S_IMODE(share.stat().st_mode) == 0o1777
