"""The sixty-first round, adversarial on the strict runtime (docs/strictness-rounds.md).

First, what round 60 left. TRACKED.yaml that is a link (out of the folder, or to nothing) was read as the list it
names, where every other file of a tables folder that is a link is refused (round 60's pins): it is refused now, one
line naming it. The list that is a FIFO, a socket, a folder or empty, pinned by round 60 without a plant, is named now
for what it is, and each case is shown failing with its bug planted. A table file is refused past 64 MiB from its size
alone, before a byte is read or hashed (the largest shipped is under 5 MB; read whole, a 200 MB record took 40 s). And
``python -m conformance track`` applies the setting rule ``tables verify`` applies (doctor's: round 60) before it lists
a record as verified; the rule's code stays outside the digest ``verified_rules`` binds, since the list lets run skip a
record's proofs, never an index's settings, which run's preflight holds to the rule whatever the list says (pinned).

Then a new class of input: the names in a tables folder. A file or folder named with a line feed, a carriage return, a
terminal escape (a screen clear, OSC 52's clipboard write), a bell, a backspace, DEL, a C1 control, a bidirectional
override or isolate, a line or paragraph separator, or a byte no UTF-8 decodes, and the folder itself so named: run's
load refuses each (exit 3) and names it, and ``tables verify`` printed each raw, its line split by the line feed, the
terminal obeying the rest. Each is written as its escape now, on its one line (and by ``tables list``, ``tables show``
and ``python -m conformance track``).

No GPU: the interpreter class's shipped tables copied, edited and tracked again, and a tiny checkpoint.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, follow, retrack
from store_fixtures import config_dict, make_checkpoint

from conformance import track
from neurobrix import store, tables
from neurobrix.errors import _UNPRINTABLE, TablesError, printable

CLASS = "interpreter"
KERNEL = "rms_norm"
INDEX = f"{CLASS}/{KERNEL}.json"
RECORD = f"{CLASS}/{KERNEL}.proofs.yaml"


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tracked") / "tables"
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    track.write(root)
    return root


def _copy(tracked: Path, tmp_path: Path) -> Path:
    shutil.copytree(tracked, tmp_path / "tables")
    return tmp_path / "tables"


def _refusal(root: Path) -> str | None:
    """What run's load says of the folder (each index of the class read, and each record), None where it loads."""
    tables.clear_cache()
    try:
        loaded = tables.load(root)
        for kernel in loaded.kernels(CLASS):
            loaded.index(CLASS, kernel)
            loaded.proofs(CLASS, kernel)
    except TablesError as exc:
        return str(exc)
    return None


def _verify(root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`neurobrix tables verify` on ``root``: its exit status and its standard error."""
    from neurobrix.cli import main

    monkeypatch.setenv(tables.ENV_VAR, str(root))
    tables.clear_cache()
    capsys.readouterr()
    code = main(["tables", "verify"])
    return code, capsys.readouterr().err


# ---------------------------------------------------------------------------------- TRACKED.yaml that is a link


def _link(kind: str) -> Callable[[Path, Path], None]:
    def edit(root: Path, outside: Path) -> None:
        listed = root / tables.TRACKED_NAME
        if kind == "out":  # the list's own bytes, out of the folder
            shutil.move(listed, outside / "list.yaml")
            listed.symlink_to(outside / "list.yaml")
        elif kind == "out-relative":
            shutil.move(listed, outside / "list.yaml")
            listed.symlink_to(Path("..") / outside.name / "list.yaml")
        elif kind == "chain":  # a link to a link to the list
            shutil.move(listed, outside / "list.yaml")
            (outside / "via.yaml").symlink_to(outside / "list.yaml")
            listed.symlink_to(outside / "via.yaml")
        elif kind == "in-folder":  # to a copy beside it, in the folder
            shutil.move(listed, root / "list.yaml")
            listed.symlink_to("list.yaml")
        elif kind == "dangling":
            listed.unlink()
            listed.symlink_to(outside / "gone.yaml")

    return edit


LINKS = ("out", "out-relative", "chain", "in-folder", "dangling")


@pytest.mark.parametrize("kind", LINKS)
def test_a_tracked_list_that_is_a_link_is_refused(tracked, tmp_path, monkeypatch, capsys, kind):
    """Read as the list it names before (round 58's reading, which round 60 left open); refused now as every other link
    of a tables folder is refused: one line naming it, and `tables verify` exit 3 on its line."""
    root = _copy(tracked, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    _link(kind)(root, outside)
    listed = root / tables.TRACKED_NAME
    said = _refusal(root)
    assert said is not None and said.startswith(f"{listed}: the tracked-file list is a link,"), said
    assert "\n" not in said and len(said) < 400, said
    code, err = _verify(root, monkeypatch, capsys)
    assert code == 3 and err.splitlines()[1:] == [f"  {said}"], err


def test_a_folder_reached_through_a_link_loads(tracked, tmp_path, monkeypatch, capsys):
    """The control: the folder itself a link (NEUROBRIX_TABLES naming it, a checkout's tables moved to another disk)
    is the folder it names, its list its own file there; and `conformance track` makes a linked list a file again."""
    root = _copy(tracked, tmp_path)
    (tmp_path / "link").symlink_to(root)
    assert _refusal(tmp_path / "link") is None
    code, err = _verify(tmp_path / "link", monkeypatch, capsys)
    assert code == 0, err
    _link("out")(root, tmp_path)
    track.write(root)
    assert not (root / tables.TRACKED_NAME).is_symlink() and _refusal(root) is None


# ------------------------------------------------------------------------ TRACKED.yaml of another kind, planted


def _kind(kind: str, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    listed = root / tables.TRACKED_NAME
    listed.unlink()
    if kind == "fifo":
        os.mkfifo(listed)
    elif kind == "folder":
        listed.mkdir()
    elif kind == "socket":
        monkeypatch.chdir(root)  # (a socket's path is bounded at 108 bytes: bound by its name)
        listening = socket.socket(socket.AF_UNIX)
        listening.bind(tables.TRACKED_NAME)
        listening.close()
    elif kind == "empty":
        listed.write_bytes(b"")


LIST_KINDS = {"fifo": "a FIFO", "folder": "a folder", "socket": "a socket"}


@pytest.mark.parametrize("kind", LIST_KINDS)
def test_a_tracked_list_of_another_kind_is_named_for_what_it_is(tracked, tmp_path, monkeypatch, kind):
    """Round 60's cases, named now for what they are (they read as "missing"), never opened: a FIFO's read waits for a
    writer; one line."""
    root = _copy(tracked, tmp_path)
    _kind(kind, root, monkeypatch)
    said = _refusal(root)
    listed = root / tables.TRACKED_NAME
    assert said == (
        f"{listed}: the tracked-file list is {LIST_KINDS[kind]}, not a regular file, so nothing in {root} can be "
        "trusted"
    ), said


def test_an_empty_tracked_list_is_refused_as_the_list(tracked, tmp_path, monkeypatch):
    """Not read as a list naming no file (every file then untracked): the list itself is named, on one line."""
    root = _copy(tracked, tmp_path)
    _kind("empty", root, monkeypatch)
    said = _refusal(root)
    assert said is not None and said.startswith(f"{root / tables.TRACKED_NAME}:") and "\n" not in said, said


def test_a_fifo_read_is_never_waited_on(tmp_path):
    """A table read (every read of every table file, the list's too) takes the file's kind from the file opened
    without waiting: a FIFO put where a record is, after the folder check, is refused, not read (it would block)."""
    fifo = tmp_path / "rms_norm.proofs.yaml"
    os.mkfifo(fifo)
    with pytest.raises(TablesError) as caught:
        tables.read_yaml(fifo, str(fifo))
    assert str(caught.value) == f"{fifo}: not a regular file, so it cannot be verified"


# --------------------------------------------------------------------------------------- a table file too large

CAP = tables.MAX_TABLE_BYTES


def _sparse(path: Path, size: int) -> None:
    """``path`` made ``size`` bytes long without writing them (a file of holes: its size, no data)."""
    with path.open("r+b" if path.exists() else "wb") as fh:
        fh.truncate(size)


def test_the_cap_has_wide_margin_over_every_shipped_table():
    """At least ten times the largest table file any class ships (nvidia-h200's linear record, ~5 MB)."""
    largest = max(p.stat().st_size for p in (REPO / "tables").rglob("*") if p.is_file())
    assert 4_000_000 < largest and CAP >= 10 * largest, largest


@pytest.mark.parametrize("rel", [INDEX, RECORD, f"{CLASS}/class.yaml"])
def test_a_tracked_table_file_past_the_cap_is_refused_on_its_line(tracked, tmp_path, rel):
    """The file grown past 64 MiB (its tail holes) and tracked so, its size and hash the list's: refused on its line
    of the folder report from its size."""
    root = _copy(tracked, tmp_path)
    _sparse(root / rel, CAP + 1)
    retrack(root)
    said = _refusal(root) or ""
    cap = tables.max_bytes(rel)  # (since round 62, an index's and a class.yaml's are smaller than a record's)
    assert f"  {root / rel}: {CAP + 1} bytes, past the {cap} bytes" in said, said


def test_a_terabyte_table_file_is_refused_from_its_size(tracked, tmp_path):
    """A record of 1 TiB (holes) is refused in the time a stat takes: by the folder check before its listed size is
    compared, and by every read before a byte is read (the size named is the file's, not what a read stopped at)."""
    root = _copy(tracked, tmp_path)
    size = 2**40
    _sparse(root / RECORD, size)
    said = _refusal(root) or ""
    assert f"  {root / RECORD}: {size} bytes, past the {CAP} bytes" in said, said
    for read in (tables.read_yaml, tables.read_json):
        with pytest.raises(TablesError) as caught:
            read(root / RECORD, "the record")
        assert str(caught.value).startswith(f"the record: {size} bytes, past the {CAP} bytes"), str(caught.value)


def test_a_tracked_list_past_the_cap_is_refused_in_one_line(tracked, tmp_path):
    root = _copy(tracked, tmp_path)
    listed = root / tables.TRACKED_NAME
    _sparse(listed, CAP + 1)
    assert _refusal(root) == f"{listed}: {tables.too_large(CAP + 1, tables.TRACKED_NAME)}"


def test_a_table_file_at_the_cap_passes_the_size_check(tracked, tmp_path):
    """The control: a file of exactly 64 MiB is held to its list's size and hash, as any other."""
    root = _copy(tracked, tmp_path)
    _sparse(root / f"{CLASS}/silu_mul.proofs.yaml", CAP)
    retrack(root)
    assert tables.check_files(root, tables.read_tracked(root)) == []


# ------------------------------------------------------------ the setting rule in `track`, and outside the digest


def _unrunnable_index(root: Path) -> None:
    """rms_norm's index and record holding BLOCK_M 64.0 (round 60's first case): agreeing, and refused by the rule."""
    path = root / INDEX
    text = path.read_text(encoding="utf-8")
    assert text.count('"BLOCK_M": 64') == 1
    path.write_text(text.replace('"BLOCK_M": 64', '"BLOCK_M": 64.0'), encoding="utf-8")
    follow(root, CLASS, KERNEL)


def test_track_lists_as_verified_only_records_verify_passes(tracked, tmp_path):
    """`conformance track` listed such a record as verified (its proofs parse against its index), which `tables
    verify` refuses: it names it now with the rule's words, and lists the others."""
    root = _copy(tracked, tmp_path)
    _unrunnable_index(root)
    _, _, refused = track.write_report(root)
    assert [p.path for p in refused] == [RECORD], refused
    assert "BLOCK_M=64.0" in refused[0].message and "run refuses it" in refused[0].message, refused
    listed = {v.path for v in tables.read_verified(root)}
    assert RECORD not in listed and f"{CLASS}/silu_mul.proofs.yaml" in listed, listed


def _listed_by_hand(root: Path) -> None:
    """The list with the record listed as verified beside the others, under this code's digest."""
    files = tables.scan(root)
    verified = [v for v in tables.verified_records(root, files)[0] if v.path != RECORD]
    sha = {f.path: f.sha256 for f in files}
    mine = tables.VerifiedRecord(RECORD, sha[RECORD], sha[INDEX])
    (root / tables.TRACKED_NAME).write_text(tables.render_tracked(files, [*verified, mine]), encoding="utf-8")


def test_track_check_names_such_a_record_listed_by_hand(tracked, tmp_path):
    root = _copy(tracked, tmp_path)
    _unrunnable_index(root)
    _listed_by_hand(root)
    problems = track.out_of_sync(root)
    assert len(problems) == 1 and f"lists {RECORD} as verified, which `track` does not verify now" in problems[0]


def test_run_refuses_such_a_setting_though_its_record_is_listed(tracked, tmp_path, monkeypatch, capsys):
    """Why the rule's code (doctor, plan, the kernels' specs) need not be in the digest: the list lets run skip the
    record's proofs, and run's preflight holds the index to the rule whatever the list says (exit 3, one line)."""
    from neurobrix.cli import main

    root = _copy(tracked, tmp_path)
    _unrunnable_index(root)
    _listed_by_hand(root)
    tables.clear_cache()
    loaded = tables.load(root)
    assert loaded._verified_record(CLASS, KERNEL)  # (the list is honoured: the record is not read again)
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    store.import_model(str(make_checkpoint(tmp_path / "tiny", config=config_dict())), progress=False)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    tables.clear_cache()
    capsys.readouterr()
    with pytest.raises(SystemExit) as ended:
        main(["run", "--model", "tiny", "--prompt", "hello", "--max-tokens", "1"])
    assert ended.value.code == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(root / INDEX) in err[0] and "BLOCK_M=64.0" in err[0], err


# ------------------------------------------------------------------------------ the names in a tables folder

# a name's hostile part: what a terminal obeys rather than prints (errors.printable's set), and a byte no UTF-8 decodes
NAMES = {
    "line-feed": "a\nb",
    "carriage-return": "x\rtables verified",
    "screen-clear": "\x1b[2J\x1b[H",
    "osc52-clipboard": "\x1b]52;c;aGk=\x07",
    "bell": "\x07",
    "backspace": "abc\x08\x08\x08",
    "delete": "\x7f",
    "c1-csi": "\x9b2J",
    "right-to-left-override": "\u202enosj",
    "left-to-right-isolate": "\u2066x\u2069",
    "arabic-letter-mark": "\u061c",
    "right-to-left-mark": "\u200f",
    "line-separator": "\u2028",
    "paragraph-separator": "\u2029",
    "not-utf8": os.fsdecode(b"\xff\xfe"),
}


def _quiet(err: str) -> None:
    """Nothing a terminal obeys in ``err`` but its line feeds."""
    assert _UNPRINTABLE.search(err.replace("\n", "")) is None, ascii(err)


@pytest.mark.parametrize("case", NAMES)
def test_a_file_so_named_is_refused_and_named_escaped(tracked, tmp_path, monkeypatch, capsys, case):
    """An untracked file so named in the class folder: run's load refuses the folder naming it (exit 3), and `tables
    verify` names it on its one line, escaped (it printed it raw: the line split, the screen cleared, the clipboard
    written, the text reversed)."""
    root = _copy(tracked, tmp_path)
    name = f"x{NAMES[case]}y.json"
    (root / CLASS / name).write_bytes(b"{}")
    said = _refusal(root)
    assert said is not None and f"{root / CLASS / name}: present but not in the tracked list" in said, said
    code, err = _verify(root, monkeypatch, capsys)
    _quiet(err)
    lines = err.splitlines()
    assert code == 3 and len(lines) == 3, err
    shown = f"  {printable(str(root / CLASS / name))}: present but not in the tracked list (untracked table file)"
    assert lines[1] == shown, err


def test_a_class_folder_so_named_is_named_escaped(tracked, tmp_path, monkeypatch, capsys):
    root = _copy(tracked, tmp_path)
    folder = root / "\x1b[31mclass\x1b[0m"
    folder.mkdir()
    (folder / tables.CLASS_NAME).write_bytes((root / CLASS / tables.CLASS_NAME).read_bytes())
    assert f"{folder / tables.CLASS_NAME}: present but not in the tracked list" in (_refusal(root) or "")
    code, err = _verify(root, monkeypatch, capsys)
    _quiet(err)
    assert code == 3 and printable(str(folder)) in err, err


def test_a_tables_folder_so_named_is_named_escaped(tracked, tmp_path, monkeypatch, capsys):
    """NEUROBRIX_TABLES naming a folder whose name holds an escape: `tables verify`, `tables list` and `tables show`
    print its name escaped, and a file refused there is named escaped."""
    from neurobrix.cli import main

    (tmp_path / "t\x1b]0;owned\x07").mkdir()
    root = _copy(tracked, tmp_path / "t\x1b]0;owned\x07")
    code, err = _verify(root, monkeypatch, capsys)
    assert code == 0
    for argv in (
        ["tables", "verify"],
        ["tables", "list"],
        ["tables", "show", CLASS],
        ["tables", "show", CLASS, KERNEL],
    ):
        tables.clear_cache()
        assert main(argv) == 0
        out = capsys.readouterr().out
        _quiet(out)
        assert printable(str(root)) in out, out
    (root / CLASS / "extra.json").write_bytes(b"{}")
    code, err = _verify(root, monkeypatch, capsys)
    _quiet(err)
    assert code == 3 and f"  {printable(str(root / CLASS / 'extra.json'))}: present" in err, err


def test_track_names_such_a_file_escaped(tracked, tmp_path, capsys):
    """`python -m conformance track` listed the file (run then refused the list, naming its line); since round 62 it
    refuses the name at the source, on one line, escaped (exit 3), the list left as it was: run names the file as
    untracked (tests/test_strict_round62.py holds the refusal for each kind of name)."""
    from conformance.__main__ import main

    root = _copy(tracked, tmp_path)
    (root / CLASS / "x\x1b[2Jy.json").write_bytes(b"{}")
    capsys.readouterr()
    assert main(["track", "--tables", str(root)]) == 3
    captured = capsys.readouterr()
    _quiet(captured.out + captured.err)
    assert captured.out == "" and len(captured.err.splitlines()) == 1 and "x\\x1b[2Jy.json" in captured.err
    said = _refusal(root) or ""
    assert "x\x1b[2Jy.json: present but not in the tracked list" in said, said


def test_run_names_such_a_file_escaped(tracked, tmp_path, monkeypatch, capsys):
    """Run's own refusal (exit 3): the folder report, each line escaped, its lines kept."""
    from neurobrix.cli import main

    root = _copy(tracked, tmp_path)
    name = "a\nb\x1b[2J.json"
    (root / CLASS / name).write_bytes(b"{}")
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    store.import_model(str(make_checkpoint(tmp_path / "tiny", config=config_dict())), progress=False)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    tables.clear_cache()
    capsys.readouterr()
    with pytest.raises(SystemExit) as ended:
        main(["run", "--model", "tiny", "--prompt", "hello", "--max-tokens", "1"])
    assert ended.value.code == 3
    err = capsys.readouterr().err
    _quiet(err)
    shown = f"{printable(str(root / CLASS / name))}: present but not in the tracked list (untracked table file)"
    assert shown in [line.strip() for line in err.splitlines()], err
