"""The sixty-second round, adversarial on the strict runtime (docs/strictness-rounds.md).

First, what round 61 left. ``python -m conformance track`` listed a file whose name holds a character a terminal
obeys rather than prints (the engine then refused the list, naming its line): it refuses the name at the source now,
one line, escaped, exit 3, the list left as it was. The other ``python -m conformance`` commands printed a tables
folder, a report's or a checkpoint's path raw (``track``'s verdicts, its error line, ``tiny-model``): escaped now, as
round 61's ``tables verify``, ``list`` and ``show`` print them. And each kind of table file has its own cap: a
settings index 4 MiB, a class.yaml 64 KiB, TRACKED.yaml 1 MiB (a record keeps round 61's 64 MiB).

Then a new class of input: the environment variables the engine reads, holding what a terminal obeys (a line feed, a
carriage return, a screen clear, OSC 52's clipboard write, a bell, backspaces, DEL, a C1 CSI, a right-to-left
override, an isolate, the Arabic letter mark, the right-to-left mark, a line and a paragraph separator, bytes no UTF-8
decodes). Every refusal quoting NEUROBRIX_HOME or NEUROBRIX_TABLES escaped them already (the CLI's error line); what a
command prints when it succeeds did not: ``neurobrix list`` (the store), ``import`` (where the model went),
``remove`` (where it was freed from) printed the store's path raw, and ``doctor`` split its store line, or its
integrity line quoting NEUROBRIX_TABLES, at the value's line feed. Each is one line, escaped, now.

No GPU, no subprocess: the interpreter class's shipped tables copied and tracked, and a tiny checkpoint.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import REPO, retrack
from store_fixtures import config_dict, make_checkpoint

from conformance import track
from neurobrix import store, tables
from neurobrix.errors import _UNPRINTABLE, printable

CLASS = "interpreter"

# the hostile part of a name or a value: what a terminal obeys rather than prints (errors.printable's set), and bytes
# no UTF-8 decodes (round 61's names)
HOSTILE = {
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


def _quiet(text: str) -> None:
    """Nothing a terminal obeys in ``text`` but its line feeds."""
    assert _UNPRINTABLE.search(text.replace("\n", "")) is None, ascii(text)


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tracked") / "tables"
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    retrack(root)
    return root


def _copy(tracked: Path, where: Path) -> Path:
    shutil.copytree(tracked, where)
    return where


def _conformance(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from conformance.__main__ import main

    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _neurobrix(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from neurobrix.cli import main

    tables.clear_cache()
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as ended:
        code = ended.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ------------------------------------------------------------------------ `track` refuses such a name at the source


@pytest.mark.parametrize("case", HOSTILE)
def test_track_refuses_a_file_so_named(tracked, tmp_path, capsys, case):
    """It listed the file (round 61's pin: the engine then refused the list naming its line, or YAML refused the
    escape a byte no UTF-8 decodes is written as): refused now, one line naming it escaped, exit 3, the list as it
    was."""
    root = _copy(tracked, tmp_path / "tables")
    before = (root / tables.TRACKED_NAME).read_bytes()
    name = root / CLASS / f"x{HOSTILE[case]}y.json"
    name.write_bytes(b"{}")
    code, out, err = _conformance(["track", "--tables", str(root)], capsys)
    _quiet(out + err)
    assert code == 3 and out == "", (code, out, err)
    assert err.splitlines() == [
        f"conformance: error: {printable(str(name))}: its name holds a character a terminal obeys rather than prints "
        "(shown escaped), which TRACKED.yaml does not list: rename or remove it, then run `python -m conformance "
        "track` again"
    ], err
    assert (root / tables.TRACKED_NAME).read_bytes() == before


def test_track_refuses_a_class_folder_so_named_and_counts_the_rest(tracked, tmp_path):
    root = _copy(tracked, tmp_path / "tables")
    folder = root / "\x1b[31mclass\x1b[0m"
    folder.mkdir()
    for name in ("class.yaml", "a.json"):
        (folder / name).write_bytes(b"{}")
    with pytest.raises(tables.TablesError) as caught:
        track.write(root)
    said = str(caught.value)
    assert said.startswith(f"{printable(str(folder / 'a.json'))}: its name holds") and "(and 1 more so named)" in said
    assert "\n" not in said and _UNPRINTABLE.search(said) is None, said


def test_track_still_lists_a_plain_name(tracked, tmp_path):
    """The control: a name with spaces, quotes, a colon and letters beyond ASCII is printable, and listed."""
    root = _copy(tracked, tmp_path / "tables")
    name = 'note: l\'été "x" #1.json'
    (root / CLASS / name).write_bytes(b"{}")
    track.write(root)
    assert f"{CLASS}/{name}" in {f.path for f in tables.read_tracked(root)}


# ------------------------------------------------------------------- the other conformance commands' paths


def test_track_prints_its_folder_escaped(tracked, tmp_path, capsys):
    """`track`, `track --check` in sync and out of sync: the folder's name printed raw (its escape obeyed, its line
    feed splitting the verdict); each verdict one line now."""
    (tmp_path / "t\x1b]0;owned\x07\nx").mkdir()
    root = _copy(tracked, tmp_path / "t\x1b]0;owned\x07\nx" / "tables")
    shown = printable(str(root))
    code, out, err = _conformance(["track", "--tables", str(root)], capsys)
    assert (code, out.splitlines(), err) == (0, [f"wrote {shown}/{tables.TRACKED_NAME}"], ""), (out, err)
    code, out, err = _conformance(["track", "--tables", str(root), "--check"], capsys)
    assert (code, out.splitlines()) == (0, [f"{shown}/{tables.TRACKED_NAME} is in sync"]), (out, err)
    (root / CLASS / "extra.json").write_bytes(b"{}")
    code, out, err = _conformance(["track", "--tables", str(root), "--check"], capsys)
    _quiet(out + err)
    assert code == 1 and len(err.splitlines()) == 2 and err.splitlines()[1].startswith(f"{shown}/TRACKED.yaml is out")


@pytest.mark.parametrize("case", ["line-feed", "screen-clear", "not-utf8"])
def test_conformance_errors_name_a_path_escaped(tmp_path, capsys, case):
    """`conformance: error:` printed the message raw (`neurobrix: error:` escapes it): a --tables that is no folder."""
    missing = tmp_path / f"none{HOSTILE[case]}"
    code, out, err = _conformance(["track", "--tables", str(missing)], capsys)
    _quiet(err)
    assert code == 2 and err.splitlines() == [
        f"conformance: error: --tables {printable(str(missing))} is not a folder (the tables folder, holding "
        "TRACKED.yaml and <class>/)"
    ], err


# ------------------------------------------------------------------------------------ one cap for each kind

SHIPPED = [p for p in (REPO / "tables").rglob("*") if p.is_file()]


@pytest.mark.parametrize(
    "kind, cap",
    [
        (".proofs.yaml", tables.MAX_TABLE_BYTES),
        (".json", tables.MAX_INDEX_BYTES),
        (tables.CLASS_NAME, tables.MAX_CLASS_BYTES),
        (tables.TRACKED_NAME, tables.MAX_LIST_BYTES),
    ],
)
def test_each_kind_has_its_cap_with_wide_margin(kind, cap):
    """Each cap at least 50 times the largest file of its kind shipped (the record's, round 61's, 13 times), and
    smaller than the record's but for the record."""
    largest = max(p.stat().st_size for p in SHIPPED if p.name.endswith(kind))
    assert tables.max_bytes(f"{CLASS}/x{kind}" if kind.startswith(".") else kind) == cap
    assert cap >= (10 if kind == ".proofs.yaml" else 50) * largest, (kind, largest)
    assert cap == tables.MAX_TABLE_BYTES or cap <= tables.MAX_TABLE_BYTES // 16


def _sparse(path: Path, size: int) -> None:
    with path.open("r+b") as fh:
        fh.truncate(size)


@pytest.mark.parametrize("rel", [f"{CLASS}/rms_norm.json", f"{CLASS}/{tables.CLASS_NAME}", tables.TRACKED_NAME])
def test_a_file_past_its_kinds_cap_is_refused_and_one_at_it_is_not(tracked, tmp_path, rel):
    """Past its own cap (a byte past 4 MiB for an index, 64 KiB for a class.yaml, 1 MiB for the list; each passed
    round 61's 64 MiB) refused from its size, on its line, naming its kind; at the cap held to the list as any file."""
    root = _copy(tracked, tmp_path / "tables")
    cap = tables.max_bytes(rel)
    _sparse(root / rel, cap + 1)
    if rel != tables.TRACKED_NAME:
        retrack(root)
    tables.clear_cache()
    with pytest.raises(tables.TablesError) as caught:
        tables.load(root)
    said = str(caught.value)
    assert f"{root / rel}: {cap + 1} bytes, past the {cap} bytes" in said, said
    for read in (tables.read_yaml, tables.read_json):  # (every read, by the file's name)
        with pytest.raises(tables.TablesError, match=f"^it: {cap + 1} bytes, past the {cap} bytes"):
            read(root / rel, "it")
    if rel != tables.TRACKED_NAME:
        _sparse(root / rel, cap)
        retrack(root)
        assert tables.check_files(root, tables.read_tracked(root)) == []


# ------------------------------------------------ the new class: the engine's environment variables, hostile


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def named(case: str) -> Path:
        path = tmp_path / f"home{HOSTILE[case]}"
        monkeypatch.setenv(store.HOME_ENV, str(path))
        return path

    return named


@pytest.mark.parametrize("case", HOSTILE)
def test_list_prints_a_hostile_store_escaped(home, capsys, case):
    """NEUROBRIX_HOME holding it: `neurobrix list` of the empty store printed the path raw (the screen cleared, the
    line rewritten or split, the text reversed, a UnicodeEncodeError's stand-in): one line, escaped."""
    path = home(case)
    code, out, err = _neurobrix(["list"], capsys)
    _quiet(out + err)
    assert (code, err) == (0, ""), err
    assert out.splitlines() == [
        f"no models imported yet (store: {printable(str(path / 'models'))}); import one with `neurobrix import "
        "<hf-id|folder>`"
    ], out


@pytest.mark.parametrize("case", ["line-feed", "osc52-clipboard", "right-to-left-override", "not-utf8"])
def test_import_list_and_remove_print_a_hostile_store_escaped(home, tmp_path, capsys, case):
    """`import` (where the model went), `list` (the store, under the table) and `remove` (where it was freed from)."""
    path = home(case)
    checkpoint = make_checkpoint(tmp_path / "tiny", config=config_dict())
    shown = printable(str(path / "models"))
    code, out, err = _neurobrix(["import", str(checkpoint)], capsys)
    _quiet(out)
    assert code == 0 and out.splitlines()[0].endswith(f" in {shown}/tiny"), out
    code, out, err = _neurobrix(["list"], capsys)
    _quiet(out)
    assert code == 0 and out.splitlines()[-1] == f"store: {shown}" and len(out.splitlines()) == 3, out
    code, out, err = _neurobrix(["remove", "tiny"], capsys)
    _quiet(out)
    assert code == 0 and len(out.splitlines()) == 1 and out.rstrip().endswith(f" freed from {shown})"), out


@pytest.mark.parametrize("case", ["line-feed", "carriage-return", "line-separator"])
def test_doctor_keeps_a_hostile_store_on_its_line(home, monkeypatch, capsys, case):
    """doctor splits a finding's value at its line feeds (a message laid out in lines): NEUROBRIX_HOME's line feed
    split the store line in two, the second half at the margin of the next finding's values."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    path = home(case)
    code, out, err = _neurobrix(["doctor"], capsys)
    _quiet(out)
    store_lines = [line for line in out.splitlines() if line.startswith("  info  store")]
    assert code == 0 and len(store_lines) == 1 and store_lines[0].endswith(printable(str(path / "models"))), out
    assert len(out.splitlines()) == len([ln for ln in out.splitlines() if ln[:2] == "  " and ln[2] != " "]) + 2, out


@pytest.mark.parametrize("case", ["line-feed", "screen-clear", "paragraph-separator"])
def test_doctor_and_run_name_a_hostile_tables_folder_on_one_line(tmp_path, monkeypatch, capsys, case):
    """NEUROBRIX_TABLES holding it, naming no folder: run refuses it (exit 3, one line, escaped: pinned) and doctor's
    integrity FAIL quoted the refusal split at its line feed: one line now."""
    missing = tmp_path / f"none{HOSTILE[case]}"
    monkeypatch.setenv(tables.ENV_VAR, str(missing))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv(store.HOME_ENV, str(tmp_path / "home"))
    said = f"{tables.ENV_VAR}={printable(str(missing))} is not a folder; point it at a tables folder or unset it"
    code, out, err = _neurobrix(["run", "--model", "tiny", "--prompt", "hello", "--max-tokens", "1"], capsys)
    assert (code, err.splitlines()) == (3, [f"neurobrix: error: {said}"]), err
    code, out, err = _neurobrix(["doctor"], capsys)
    _quiet(out)
    assert code == 1 and f"  FAIL  integrity  {said}" in out.splitlines(), out


@pytest.mark.parametrize("tool", ["neurobrix", "conformance"])
def test_tiny_model_names_its_folder_escaped(tmp_path, capsys, tool):
    """`tiny-model` (both tools) printed the folder it wrote to raw, twice (and a line feed inside the quoted import
    command split it): one line, escaped."""
    folder = tmp_path / "m\x1b[2J\u202e\ny"
    argv = ["tiny-model", str(folder)] + (["--family", "llama"] if tool == "conformance" else [])
    code, out, err = (_neurobrix if tool == "neurobrix" else _conformance)(argv, capsys)
    _quiet(out)
    assert code == 0 and (folder / "config.json").is_file(), (out, err)
    assert len(out.splitlines()) == 1 and out.count(printable(str(folder))) == 2, out
