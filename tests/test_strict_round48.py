"""Strict round 48: resources running out mid-command.

A disk that fills (ENOSPC), a quota (EDQUOT), a file-size limit (RLIMIT_FSIZE: Python ignores SIGXFSZ, so the write
fails with EFBIG), too few open files (RLIMIT_NOFILE) and a read-only NEUROBRIX_HOME, each met while a command writes:
`import` copying into the store, `conformance certify` writing a kernel's index, audit record and TRACKED.yaml,
`conformance track`, and a `--json` report. Simulated with ``resource.setrlimit`` in a child process (the real limit)
and with ``Path.write_text`` patched to write half its text and then raise OSError(ENOSPC) (what a full disk does).

Found and fixed:
- certify wrote a kernel's index, then its audit record, then TRACKED.yaml in place, each in turn: a full disk while
  TRACKED.yaml was written truncated it (every command then refused the tables, exit 3, the last good list lost), and
  one while the record was written left the new index beside the old record. Now every file goes to a scratch file
  first and only renames follow (`certify._replace_tracked`); a failure leaves the folder byte for byte as it was.
- `conformance track` (and `bind`) truncated TRACKED.yaml in place the same way: written whole or not at all now.
- a `--json FILE` report was written in place: a full disk left half a JSON document (or truncated the report of a
  run before): written whole or not at all, the error says nothing was written.
- an import under a file-size limit ended "File too large; nothing was stored (check the free space and permissions
  there)", naming no limit, on a disk with room to spare; errors from a disk full, a quota, `ulimit -f`, `ulimit -n`
  or a read-only filesystem now name that resource and what to do (`errors.ran_out`), in the store's message and the
  CLI's one line for any OSError.

Pinned: an import that runs out of space, hits RLIMIT_FSIZE or meets a read-only home stores nothing and leaves no
scratch folder, and the same import works once the resource is back; import, list and run work with RLIMIT_NOFILE 16
(no descriptor is held per file); list, doctor and run work on a read-only NEUROBRIX_HOME (the store lock opens
read-only, round 46), remove there is one line and removes nothing.

Left open: `warmup` writing Triton's binaries on a full disk was not exercised (no GPU here: the interpreter compiles
nothing; Triton 3.9's cache manager writes each file to scratch and renames it, round 46); the file an EFBIG copy
was writing is not named (shutil's copy raises it without a filename); `bind` writes its records in turn before the
tracked list (a full disk between them leaves records the list does not match, as before).
"""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from store_fixtures import make_checkpoint

from neurobrix import tables

CLASS = "interpreter"
_write_text = Path.write_text


def _full_disk(monkeypatch, hit) -> list[Path]:
    """From now on a ``Path.write_text`` whose path ``hit`` accepts writes half its text, then fails as a full disk."""
    tried: list[Path] = []

    def write_text(self, data, *args, **kwargs):
        if hit(self):
            tried.append(self)
            _write_text(self, data[: len(data) // 2], *args, **kwargs)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return _write_text(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)
    return tried


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _sound(root: Path) -> None:
    """The tables in ``root`` are whole: every file matches TRACKED.yaml and the kernel's index and record load."""
    assert tables.check_files(root, tables.read_tracked(root)) == []
    loaded = tables.load(root)
    assert loaded.index(CLASS, "rms_norm").entries and loaded.proofs(CLASS, "rms_norm") is not None


@pytest.fixture
def root(tmp_path) -> Path:
    folder = tmp_path / "tables"
    shutil.copytree(REPO / "tables", folder)
    return folder


# --------------------------------------------------------------------------------- 1. certify on a full disk
@pytest.mark.parametrize("fails", ["TRACKED.yaml", tables.PROOFS_SUFFIX])
def test_certify_on_a_full_disk_leaves_the_tables_as_they_were(root, monkeypatch, fails):
    """Before: the TRACKED.yaml case left a truncated list and tables every command refused (exit 3). Now the folder
    is byte for byte as it was, loads, and the same write succeeds once the disk has room."""
    from conformance.certify import write_table

    record = tables.load(root).proofs(CLASS, "rms_norm")
    prov = {**dict(record.provenance), "date": "2026-12-06T01:00:00Z"}  # other bytes to write
    before = _snapshot(root)
    tried = _full_disk(monkeypatch, lambda p: fails in p.name)
    with pytest.raises(OSError, match="No space left"):
        write_table(root, CLASS, "rms_norm", list(record.entries), prov)
    assert tried, "the write never reached the file that fails"
    assert _snapshot(root) == before  # nothing half-written, no scratch file left
    _sound(root)
    monkeypatch.undo()  # the space is back
    write_table(root, CLASS, "rms_norm", list(record.entries), prov)
    _sound(root)
    assert tables.load(root).proofs(CLASS, "rms_norm").provenance["date"] == prov["date"]


def test_track_on_a_full_disk_keeps_the_old_list(root, monkeypatch, capsys):
    """Before: `conformance track` truncated TRACKED.yaml in place. Now the old list stays whole (and still verifies
    the files it listed), the error is one line, and track works once the disk has room."""
    from conformance.__main__ import main as conformance_main

    before = (root / tables.TRACKED_NAME).read_bytes()
    index = tables.index_path(root, CLASS, "rms_norm")
    index.write_bytes(index.read_bytes() + b"\n")  # a change track lists
    _full_disk(monkeypatch, lambda p: "TRACKED" in p.name)
    assert conformance_main(["track", "--tables", str(root)]) == 1
    err = capsys.readouterr().err
    assert (root / tables.TRACKED_NAME).read_bytes() == before
    assert err.count("\n") == 1 and "No space left on device" in err and "the disk is full" in err, err
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]
    monkeypatch.undo()
    assert conformance_main(["track", "--tables", str(root)]) == 0
    _sound(root)


def test_a_json_report_on_a_full_disk_is_whole_or_absent(tmp_path, monkeypatch):
    """Before: half a JSON document replaced the report a run before wrote. Now that report stays whole and the error
    is one line saying nothing was written."""
    from conformance.__main__ import _write_report
    from neurobrix.errors import NeuroBrixError

    report = tmp_path / "report.json"
    report.write_text(json.dumps([{"passed": True}]) + "\n", encoding="utf-8")
    before = report.read_bytes()
    _full_disk(monkeypatch, lambda p: "report" in p.name)
    with pytest.raises(NeuroBrixError, match=r"report\.json: the report cannot be written .*nothing was written"):
        _write_report(str(report), [{"passed": False, "rows": list(range(1000))}])
    assert report.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
    monkeypatch.undo()
    _write_report(str(report), [{"passed": False}])
    assert json.loads(report.read_text(encoding="utf-8")) == [{"passed": False}]


# --------------------------------------------------------------------------------- 2. the store, in real processes
DRIVER = """
import errno, os, resource, sys
limit, nofile, readonly = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
if limit:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
if nofile:
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
if readonly:  # root ignores modes: the filesystem's refusal, for every path under the home
    home = os.path.abspath(os.environ["NEUROBRIX_HOME"])
    W = os.O_WRONLY | os.O_RDWR | os.O_CREAT
    under = lambda p: isinstance(p, (str, bytes, os.PathLike)) and os.path.abspath(os.fsdecode(p)).startswith(home)
    def refuse(p):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(p))
    _open = os.open
    os.open = lambda p, f, *a, **k: refuse(p) if f & W and under(p) else _open(p, f, *a, **k)
    for name in ("mkdir", "rename", "replace", "unlink", "rmdir", "link", "symlink"):
        def wrap(orig):
            return lambda *a, **k: refuse(a[0]) if any(under(x) for x in a[:2]) else orig(*a, **k)
        setattr(os, name, wrap(getattr(os, name)))
from neurobrix import cli
sys.exit(cli.main(sys.argv[4:]))
"""


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    return {
        **os.environ,
        "NEUROBRIX_HOME": str(tmp_path / "home"),
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "TRITON_INTERPRET": "1",
        "PYTHONPATH": str(REPO),
    }


def _neurobrix(env, *argv, fsize=0, nofile=0, readonly=False) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(fsize), str(nofile), "1" if readonly else "0", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stderr


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    return make_checkpoint(tmp_path_factory.mktemp("strict48") / "tiny", use_transformers=False)


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("neurobrix: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_an_import_past_the_file_size_limit_names_the_limit(env, source):
    """Before: "File too large; nothing was stored (check the free space and permissions there)". Now the limit is
    named; nothing is stored, no scratch folder stays, and the import works once the limit is raised."""
    largest = max(p.stat().st_size for p in source.iterdir())
    code, err = _neurobrix(env, "import", str(source), fsize=largest // 2)
    line = _one_line(err)
    assert code == 1 and "file-size limit" in line and "ulimit -f" in line and "nothing was stored" in line, err
    models = Path(env["NEUROBRIX_HOME"]) / "models"
    assert not models.exists() or os.listdir(models) == []
    code, err = _neurobrix(env, "import", str(source))
    assert code == 0, err


def test_few_open_files_and_a_read_only_home(env, source):
    """Pinned: import, list and run at RLIMIT_NOFILE 16; list, doctor and run on a read-only home, remove refused in
    one line naming the read-only filesystem, the model still there."""
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[1] >= 16
    for argv in (["import", str(source)], ["list"], ["run", "--model", "tiny", "--prompt", "Hi", "--max-tokens", "2"]):
        code, err = _neurobrix(env, *argv, nofile=16)
        assert code == 0, (argv, err)
    stored = _snapshot(Path(env["NEUROBRIX_HOME"]))
    for argv in (["list"], ["doctor"], ["run", "--model", "tiny", "--prompt", "Hi", "--max-tokens", "2"]):
        code, err = _neurobrix(env, *argv, readonly=True)
        assert code == 0, (argv, err)
    code, err = _neurobrix(env, "remove", "tiny", readonly=True)
    assert code == 1 and "Read-only file system" in _one_line(err), err
    assert _snapshot(Path(env["NEUROBRIX_HOME"])) == stored
    code, err = _neurobrix(env, "remove", "tiny")
    assert code == 0, err


def test_ran_out_names_each_resource():
    from neurobrix.errors import ran_out

    assert "disk is full" in ran_out(OSError(errno.ENOSPC, "x"))
    assert "quota" in ran_out(OSError(errno.EDQUOT, "x"))
    assert "ulimit -n" in ran_out(OSError(errno.EMFILE, "x"))
    assert ran_out(OSError(errno.ENOENT, "x")) is None and ran_out(ValueError()) is None
