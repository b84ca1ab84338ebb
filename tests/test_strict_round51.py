"""Strict round 51: output sinks and streams.

Every user command (`neurobrix run` streaming text, `import` with its progress, `list`, `doctor`, `remove`, `tables
verify`, `python -m conformance check/track`, `python -m gate check`) with its output going somewhere unusual: a pipe
whose reader went away, standard output or error closed, /dev/full, standard error not a terminal, a report file that
is a FIFO, a device or a link, standard input closed, odd terminal settings. Real processes on a tiny random
checkpoint (`--backend torch` where a run is needed).

The convention (neurobrix/output.py): standard output carries a command's result and standard error its
diagnostics. A reader that went away ends the command quietly with 141 (128 + SIGPIPE, what the shell reports for
coreutils or git ended so; the README's "128+N ended by signal N"); diagnostics that cannot be written are dropped and
never stop the work nor change its exit status; a result that cannot be written is one line and a non-zero exit.

Found and fixed:
- a lost reader ended `neurobrix` with exit 0 (round 32's choice), so `neurobrix import X 2>&1 | logger` whose logger
  died reported success for an import the broken pipe had stopped; `python -m conformance` ended "conformance: error:
  Broken pipe", exit 1; now both (and the gate) end quietly with 141;
- standard error that cannot be written stopped the work: an import whose progress went to a closed pipe or /dev/full
  stored nothing and blamed the store ("could not write tiny into the store: Broken pipe; nothing was stored (check
  the free space and permissions there)", exit 1); a run whose text was all written ended 1 because its statistics
  line could not be; an error's own status (2, 7, ...) became 1 when its line could not be written, the gate's
  "unusable input" 2 a "refused" 1; now the diagnostics are dropped and the status is the command's;
- standard output closed (`>&-`): `neurobrix list`, `run`, `doctor`, `tables verify` ended in an AttributeError
  traceback, `python -m conformance track --check` printed into nothing and said 0; now one line ("standard output
  is closed"), exit 1; standard output full (/dev/full) named nothing: an import that had stored its model ended "No
  space left on device; the disk is full", read as the store's disk, and the gate called it an internal error; each
  names standard output now, and the import says its model stays;
- `--json FILE` naming a FIFO, a device or a link: the report was written beside it and renamed over it, replacing
  the FIFO (its reader waited for ever) and the link with a file; as root `--json /dev/full` or `/dev/null` replaced
  the device itself (found so, on this machine: /dev/full was put back by hand); `--json /dev/stdout` was refused
  ("cannot be written", a scratch file in /proc) as any other user. Now a path that is no regular file
  is written into as `>` writes, and a link is written where it leads. The gate's `--json` was written in place: a
  full disk (here `ulimit -f`) left half a JSON report over the last one; now whole or not at all;
- import's progress on a standard error that is no terminal (a CI log) was tqdm's bar redrawn with carriage returns
  ten times a second (a slow disk: on every chunk); now a line at every tenth of the way, as warmup's; a terminal
  keeps the bar.

Pinned: a run with standard input closed or /dev/null; `list` and `tables verify` byte for byte under COLUMNS=0, 1 or
text, TERM=dumb and NO_COLOR (nothing the engine prints is coloured or sized to the terminal), `--help` there too.

Left open: huggingface_hub's own download bars on a non-terminal (HF_HUB_DISABLE_PROGRESS_BARS=1 turns them off); tqdm
draws nothing on a terminal of width 0; a BrokenPipeError from anything else than standard output (a socket) reaching a
command's end is taken as the reader's; warmup (951 passes here) was run only for its progress lines.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import resource
import stat
import struct
import subprocess
import sys
import termios
import threading
import zipfile
from pathlib import Path

import pytest
from conftest import REPO
from store_fixtures import config_dict, make_checkpoint

pytestmark = pytest.mark.skipif(
    os.name != "posix" or not os.path.exists("/dev/full"), reason="pipes and ptys are POSIX's, /dev/full Linux's"
)

RUN = ["run", "--model", "tiny", "--prompt", "hello world", "--max-tokens", "6", "--no-chat", "--backend", "torch"]


def _env(home: Path, **extra: str) -> dict[str, str]:
    # buffered, as a user's shell runs a command (no PYTHONUNBUFFERED, which a CI runner or container may set):
    # unbuffered, every write fails at once and nothing is left for the interpreter's flush at exit, which hid an
    # exit status of 120 where a buffered stream could not take its last line (fixed: neurobrix.output._settle)
    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    env.update(
        NEUROBRIX_HOME=str(home),
        HF_HOME=str(home.parent / "hf"),
        HF_HUB_OFFLINE="1",
        TRITON_INTERPRET="1",
        PYTHONPATH=str(REPO),
        OMP_NUM_THREADS="1",
    )
    env.update(extra)
    return env


def _cmd(tool: str, *argv: str) -> list[str]:
    return [sys.executable, "-m", tool, *argv]


_LOST: set[int] = set()  # pipes made by _lost_reader, closed once handed to a process


def _lost_reader() -> int:
    """The write end of a pipe whose reader is already gone (`| head -0`)."""
    read, write = os.pipe()
    os.close(read)
    _LOST.add(write)
    return write


def _run(command: list[str], env: dict[str, str], **streams):
    streams.setdefault("stdout", subprocess.PIPE)
    streams.setdefault("stderr", subprocess.PIPE)
    done = subprocess.run(command, env=env, cwd=REPO, timeout=300, **streams)
    for value in streams.values():
        if value in _LOST:
            _LOST.discard(value)
            os.close(value)
    return done


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    return make_checkpoint(tmp_path_factory.mktemp("strict51") / "tiny", use_transformers=False)


@pytest.fixture(scope="module")
def home(tmp_path_factory, source) -> Path:
    home = tmp_path_factory.mktemp("strict51home") / "home"
    done = _run(_cmd("neurobrix", "import", str(source)), _env(home))
    assert done.returncode == 0, done.stderr
    return home


def _no_traceback(done) -> None:
    assert b"Traceback" not in (done.stderr or b""), done.stderr.decode(errors="replace")


# ----------------------------------------------------------------------------------------- 1. a lost reader
@pytest.mark.parametrize(
    "command",
    [
        _cmd("neurobrix", "list"),
        _cmd("neurobrix", "tables", "verify"),
        _cmd("neurobrix", *RUN),
        _cmd("conformance", "track", "--check"),
    ],
    ids=["list", "tables-verify", "run", "conformance-track"],
)
def test_a_lost_reader_ends_the_command_quietly_with_141(home, command):
    """Before: neurobrix ended 0 (the work a closed pipe stopped reported done), conformance "conformance: error:
    Broken pipe" and 1."""
    done = _run(command, _env(home), stdout=_lost_reader())
    _no_traceback(done)
    assert (done.returncode, done.stderr) == (141, b"")


def test_an_import_whose_diagnostics_cannot_be_written_stores_the_model(tmp_path, source):
    """Before: the progress bar's write to a closed pipe or a full device stopped the import: nothing stored, exit 1,
    "could not write tiny into the store: Broken pipe; ... check the free space and permissions there"."""
    for n, sink in enumerate(("pipe", "full")):
        home = tmp_path / f"home{n}"
        with open("/dev/full", "w") as full:
            stderr = _lost_reader() if sink == "pipe" else full.fileno()
            done = _run(_cmd("neurobrix", "import", str(source)), _env(home), stderr=stderr)
        assert done.returncode == 0, sink
        assert b"imported tiny" in done.stdout
        listed = _run(_cmd("neurobrix", "list"), _env(home))
        assert listed.stdout.startswith(b"NAME") and b"\ntiny " in listed.stdout, sink


def test_a_run_whose_statistics_cannot_be_written_ends_as_it_ran(home):
    """Before: the text written whole, then exit 1 because the statistics line on standard error could not be."""
    plain = _run(_cmd("neurobrix", *RUN), _env(home))
    assert plain.returncode == 0
    with open("/dev/full", "w") as full:
        done = _run(_cmd("neurobrix", *RUN), _env(home), stderr=full.fileno())
    assert (done.returncode, done.stdout) == (0, plain.stdout)
    done = _run(_cmd("neurobrix", *RUN), _env(home), stderr=_lost_reader())
    assert (done.returncode, done.stdout) == (0, plain.stdout)


def test_an_error_keeps_its_status_when_its_line_cannot_be_written(home, tmp_path):
    """Before: 1 for each (the error line's own write failed and escaped), the gate's "unusable input" 2 read as its
    "refused" 1."""
    junk = tmp_path / "dist" / "neurobrix-0.1.0-py3-none-any.whl"
    junk.parent.mkdir()
    junk.write_bytes(b"junk\n")
    commands = [
        _cmd("neurobrix", "run", "--model", "nosuch", "--prompt", "hi"),
        _cmd("conformance", "check", "--class", "nosuch"),
        _cmd("gate", "check", str(junk), "--no-smoke", "--allow-dirty"),
    ]
    for command in commands:
        plain = _run(command, _env(home))
        assert plain.returncode == 2 and plain.stderr.count(b"\n") == 1, plain.stderr
        with open("/dev/full", "w") as full:
            assert _run(command, _env(home), stderr=full.fileno()).returncode == 2, command
        assert _run(command, _env(home), stderr=_lost_reader()).returncode == 2, command


# ----------------------------------------------------------------------------------------- 2. output closed
@pytest.mark.parametrize(
    "command",
    [_cmd("neurobrix", "list"), _cmd("neurobrix", *RUN), _cmd("conformance", "track", "--check")],
    ids=["list", "run", "conformance-track"],
)
def test_a_closed_standard_output_is_one_line_and_exit_1(home, command):
    """`>&-`. Before: an AttributeError traceback (neurobrix), or the output printed into nothing and exit 0
    (conformance)."""
    done = subprocess.run(
        command, env=_env(home), cwd=REPO, stderr=subprocess.PIPE, timeout=300, preexec_fn=lambda: os.close(1)
    )
    _no_traceback(done)
    assert done.returncode == 1
    assert done.stderr.count(b"\n") == 1 and b"standard output is closed" in done.stderr, done.stderr


def test_a_full_standard_output_is_named_and_an_import_says_its_model_stays(tmp_path, source):
    """>/dev/full. Before: an import that had stored its model ended "No space left on device; the disk is full: free
    some space there", read as the store's disk, and said nothing of the model; the gate called it "internal error in
    the gate (OSError ...) Please report it". Now each names standard output, and the import says the model stays."""
    home = tmp_path / "home"
    with open("/dev/full", "w") as full:
        done = _run(_cmd("neurobrix", "import", str(source)), _env(home), stdout=full.fileno())
    _no_traceback(done)
    assert done.returncode == 1
    assert done.stderr.endswith(
        b"tiny was imported whole and stays in the store; its output could not be written\n"
        b"neurobrix: error: No space left on device: standard output; the disk is full: free some space there "
        b"(--debug shows where)\n"
    )
    assert b"\ntiny " in _run(_cmd("neurobrix", "list"), _env(home)).stdout

    wheel = tmp_path / "dist" / "neurobrix-0.1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as archive:  # a wheel the gate refuses with a report of findings
        archive.writestr("neurobrix/__init__.py", "x = 1\n")
    gate = _cmd("gate", "check", str(wheel), "--no-smoke", "--allow-dirty")
    assert _run(gate, _env(home)).returncode == 1
    for command, code in ((gate, 2), (_cmd("conformance", "track", "--check"), 1)):
        with open("/dev/full", "w") as full:
            done = _run(command, _env(home), stdout=full.fileno())
        _no_traceback(done)
        assert done.returncode == code and done.stderr.count(b"\n") == 1, done.stderr
        assert b"No space left on device: standard output; the disk is full" in done.stderr, done.stderr


# ----------------------------------------------------------------------------------------- 3. report files
def _read_fifo(fifo: Path, got: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(fifo, "rb") as stream:
            got.append(stream.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def _write_reports():
    from conformance.__main__ import _write_report
    from gate.cli import _write_json

    return [lambda path, data: _write_report(str(path), data), _write_json]


def test_a_report_is_written_into_a_fifo_and_through_a_link(tmp_path):
    """Before: renamed over the FIFO (its reader waited for ever, the FIFO a file now) and over the link (a file in
    its place, the file it led to untouched); as root, over /dev/full itself."""
    data = {"passed": True, "rows": list(range(100))}
    for n, write in enumerate(_write_reports()):
        fifo = tmp_path / f"report{n}.fifo"
        os.mkfifo(fifo)
        got: list[bytes] = []
        reader = _read_fifo(fifo, got)
        write(fifo, data)
        reader.join(timeout=20)
        assert not reader.is_alive() and json.loads(got[0]) == data
        assert stat.S_ISFIFO(fifo.lstat().st_mode)

        target, link = tmp_path / f"real{n}.json", tmp_path / f"link{n}.json"
        target.write_text("{}\n")
        link.symlink_to(target.name)
        write(link, data)
        assert link.is_symlink() and json.loads(target.read_text()) == data


@pytest.mark.skipif(not os.path.isdir("/dev/fd"), reason="needs /dev/fd, the descriptors' names")
def test_a_report_to_standard_output_by_its_name(tmp_path):
    """`--json /dev/fd/1` (as /dev/stdout), standard output a pipe. Before: a scratch file beside it and a rename over
    it, refused where /proc makes no file ("cannot be written"); and where the folder takes files (/dev/stdout as
    root) the link to the descriptor would be replaced by a file."""
    script = (
        "import sys\n"
        "from conformance.__main__ import _write_report\n"
        "from gate.cli import _write_json\n"
        "from pathlib import Path\n"
        "write = _write_report if sys.argv[1] == 'conformance' else lambda p, d: _write_json(Path(p), d)\n"
        "write('/dev/fd/1', {'a': 1})\n"
    )
    for tool in ("conformance", "gate"):
        done = subprocess.run(
            [sys.executable, "-c", script, tool], env=_env(tmp_path / "home"), cwd=REPO, capture_output=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"a": 1}


def test_the_gates_report_on_a_full_disk_leaves_the_last_one_whole(tmp_path):
    """`ulimit -f` (EFBIG: Python ignores SIGXFSZ) while the gate writes its --json report. Before: written in place,
    half a JSON report over the last one; now whole or not at all, and one line, exit 2."""
    junk = tmp_path / "dist" / "neurobrix-0.1.0-py3-none-any.whl"
    junk.parent.mkdir()
    junk.write_bytes(b"junk\n")
    report = tmp_path / "out" / "report.json"
    report.parent.mkdir()
    report.write_text('{"last": "report"}\n')
    limit = 200  # bytes: less than a report (about 500)

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    command = _cmd("gate", "check", str(junk), "--no-smoke", "--allow-dirty", "--json", str(report))
    done = subprocess.run(
        command, env=_env(tmp_path / "home"), cwd=REPO, capture_output=True, timeout=120, preexec_fn=small_files
    )
    _no_traceback(done)
    assert done.returncode == 2 and b"cannot be written" in done.stderr, done.stderr
    assert json.loads(report.read_text()) == {"last": "report"}
    assert sorted(p.name for p in report.parent.iterdir()) == ["report.json"]


# ----------------------------------------------------------------------------------------- 4. progress
def test_import_progress_off_a_terminal_is_a_line_at_each_tenth(tmp_path, monkeypatch, capsys):
    """A slow disk (tqdm redrawing on every chunk: TQDM_MININTERVAL=0, 1 MiB chunks) under a log. Before: a
    carriage-return-separated bar for each chunk (about 50 here, thousands for a model of some GB)."""
    from neurobrix import store

    folder = make_checkpoint(tmp_path / "big", use_transformers=False, config=config_dict(vocab_size=400_000))
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TQDM_MININTERVAL", "0")
    monkeypatch.setattr(store, "_COPY_CHUNK", 1 << 20)
    store.import_model(str(folder), progress=True)
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = [line for line in err.splitlines() if line.startswith("storing big:")]
    assert 2 <= len(lines) <= 11, err
    assert lines[-1].endswith("(100%)")


def test_import_progress_on_a_terminal_is_the_bar(tmp_path, source):
    """Pinned: a terminal (a pty of 80 columns: tqdm draws no bar on one of width 0, as a pty nobody sized has) still
    gets the bar redrawn in place."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    done = subprocess.run(
        _cmd("neurobrix", "import", str(source)),
        env=_env(tmp_path / "home"),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=slave,
        timeout=300,
    )
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the pty's other side is closed and all was read
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    assert done.returncode == 0
    assert b"\rstoring tiny:" in shown and b"100%" in shown


# ----------------------------------------------------------------------------------------- 5. pinned
def test_a_run_with_standard_input_closed_or_empty(home):
    plain = _run(_cmd("neurobrix", *RUN), _env(home))
    assert _run(_cmd("neurobrix", *RUN), _env(home), stdin=subprocess.DEVNULL).stdout == plain.stdout
    closed = subprocess.run(
        _cmd("neurobrix", *RUN),
        env=_env(home),
        cwd=REPO,
        capture_output=True,
        timeout=300,
        preexec_fn=lambda: os.close(0),
    )
    assert (closed.returncode, closed.stdout) == (0, plain.stdout)


def test_terminal_settings_change_no_output(home):
    """COLUMNS of 0, 1 or text, TERM=dumb, NO_COLOR: `list` and `tables verify` byte for byte; `--help` ends 0."""
    commands = [_cmd("neurobrix", "list"), _cmd("neurobrix", "tables", "verify")]
    plain = [_run(c, _env(home)).stdout for c in commands]
    for setting in ({"COLUMNS": "0"}, {"COLUMNS": "1"}, {"COLUMNS": "wide"}, {"TERM": "dumb"}, {"NO_COLOR": "1"}):
        assert [_run(c, _env(home, **setting)).stdout for c in commands] == plain, setting
        helped = _run(_cmd("neurobrix", "run", "--help"), _env(home, **setting))
        assert helped.returncode == 0 and b"--max-tokens" in helped.stdout, setting
