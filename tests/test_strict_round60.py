"""The sixtieth round, adversarial on the strict runtime (docs/strictness-rounds.md).

First, what round 59 left: the engine bounded a table's integer at 4,300 digits whatever Python's own bound, but a
stored model's manifest, a local re-proof, a safetensors header and the tokenizer files the engine parses itself were
read by ``json.loads`` under Python's bound alone: lifted (``-X int_max_str_digits=0``), a number of a million digits
there took 11 s to read and a stored model with one in its manifest ran; lowered (640), each refusal quoted Python's
advice to raise the bound. Every reader of a user's or a stored file now takes an integer of at most 310 digits (a
float's range: ``checkpoint.load_json``), whatever the bound, refused in one line naming the file. And the two round-59
functions no test had shown failing with a bug planted: ``tables._release_bound`` and ``store.unresolved``.

Then a new class of input, a settings index holding a value no kernel of this neurobrix takes, of another type than
certify writes (a block of 64.0, of true, of "64", of 1e400 read as infinity, of -0.0) or outside what a kernel runs
(a block of 63 or 0, 3 warps): run refuses each at its preflight (exit 3) and doctor fails it, and ``tables verify``,
the release gate's install smoke, said "tables verified" for every one. It names each now (exit 3).

No GPU: the interpreter class's shipped tables copied, edited and tracked again, and a tiny checkpoint.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import REPO, follow, retrack
from store_fixtures import config_dict, make_checkpoint

from conformance import track
from neurobrix import stack, store, tables
from neurobrix.checkpoint import CheckpointError
from neurobrix.errors import TablesError
from neurobrix.tokenizer import Tokenizer, TokenizerFileError

CLASS = "interpreter"
# (Python's bound on int(text), the digits of the number planted): the default, lifted, and lowered to its least
BOUNDS = {"python-bound": (None, 5000), "bound-lifted": (0, 200_000), "bound-lowered": (640, 1000)}


@pytest.fixture(params=list(BOUNDS.values()), ids=list(BOUNDS))
def bound(request: pytest.FixtureRequest) -> Iterator[int]:
    """Python's bound as the environment sets it at start (PYTHONINTMAXSTRDIGITS, -X int_max_str_digits), and the
    digits of the number to plant: past 4,300, and past the bound where it is lowered."""
    limit, digits = request.param
    saved = sys.get_int_max_str_digits()
    if limit is not None:
        sys.set_int_max_str_digits(limit)
    yield digits
    sys.set_int_max_str_digits(saved)


def _one_short_line(said: str, path: Path, digits: int) -> None:
    assert str(path) in said and "\n" not in said and len(said) < 600, said[:300]
    assert f"({digits} digits)" in said, said[:300]


def _with_number(path: Path, digits: int) -> None:
    """An object field ``x_note`` holding an integer of ``digits`` digits, added at the end of ``path``'s JSON."""
    text = path.read_text(encoding="utf-8").rstrip()
    assert text.endswith("}")
    path.write_text(text[:-1] + ', "x_note": ' + "9" * digits + "}", encoding="utf-8")


@pytest.fixture
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> store.StoredModel:
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    return store.import_model(str(make_checkpoint(tmp_path / "tiny", config=config_dict())), progress=False)


# ----------------------------------------------------------------------- a long number in a user's or stored file


def test_a_long_number_in_a_stored_models_manifest_is_refused(stored, bound):
    """The manifest, read at every run, list and remove: under a lifted bound its number was read (a million digits
    took 11 s) and the model ran; now damaged, one line, naming the manifest and the digits, whatever the bound."""
    manifest = stored.path / store.MANIFEST
    _with_number(manifest, bound)
    with pytest.raises(store.DamagedModelError) as caught:
        store.resolve("tiny")
    _one_short_line(str(caught.value), stored.path, bound)
    assert store.MANIFEST in str(caught.value) and caught.value.exit_code == 7


def test_a_long_number_in_a_manifest_is_unreadable_to_the_size_check(stored, bound):
    _with_number(stored.path / store.MANIFEST, bound)
    assert store._missing_or_resized(stored) == [f"its {store.MANIFEST} is unreadable"]


def test_a_long_number_in_a_local_reproof_is_refused(tmp_path, monkeypatch, bound):
    """A re-proof `python -m conformance check --record` wrote, edited: unreadable, one line naming it."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    loaded = tables.load(REPO / "tables")
    running = stack.Stack("2.99.0", "9.9.0")
    stack.write_reproof(CLASS, loaded, running, {"passed": True}, "test", "test")
    assert stack.reproof_problem(CLASS, loaded, running) is None  # (the re-proof as written: accepted)
    path = stack.reproof_path(CLASS)
    _with_number(path, bound)
    said = stack.reproof_problem(CLASS, loaded, running) or ""
    _one_short_line(said, path, bound)
    assert "unreadable" in said


def _header_number(path: Path, digits: int) -> None:
    data = path.read_bytes()
    length = struct.unpack("<Q", data[:8])[0]
    header = data[8 : 8 + length].rstrip(b" ")
    header = header[:-1] + b', "x_note": {"dtype": "F32", "shape": [' + b"9" * digits + b'], "data_offsets": [0, 0]}}'
    header += b" " * (-len(header) % 8)
    path.write_bytes(struct.pack("<Q", len(header)) + header + data[8 + length :])


CHECKPOINT_FILES = ["config.json", "generation_config.json", "tokenizer_config.json", "tokenizer.json"]


@pytest.mark.parametrize("name", [*CHECKPOINT_FILES, "model.safetensors"])
def test_a_long_number_in_a_checkpoint_file_is_refused_by_import(tmp_path, monkeypatch, bound, name):
    """Refused in one line naming the file, whatever the bound (a safetensors header's, by the engine's own read of it
    before safetensors': under a lifted bound that read took seconds)."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny", config=config_dict())
    if name.endswith(".json"):
        _with_number(folder / name, bound)
    else:
        _header_number(folder / name, bound)
    with pytest.raises(CheckpointError) as caught:
        store.import_model(str(folder), progress=False)
    said = str(caught.value)
    assert str(folder / name) in said and "\n" not in said and len(said) < 600, said[:300]
    if name == "model.safetensors":  # the engine's read refused it, not safetensors' after it (lifted: seconds)
        assert "unreadable header" in said, said
    assert not (tmp_path / "home" / "models" / "tiny").exists()


@pytest.mark.parametrize("name", CHECKPOINT_FILES)
def test_a_long_number_in_a_tokenizer_file_is_refused_by_the_tokenizer(tmp_path, bound, name):
    """The tokenizer built from a folder (the API; a stored model's at run): one line naming the file."""
    folder = make_checkpoint(tmp_path / "tiny", config=config_dict())
    _with_number(folder / name, bound)
    with pytest.raises(TokenizerFileError) as caught:
        Tokenizer(folder)
    said = str(caught.value)
    assert str(folder / name) in said and "\n" not in said and len(said) < 600, said[:300]


# ------------------------------------------------------------------------- the tables under a lowered bound


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
    tables.clear_cache()
    try:
        loaded = tables.load(root)
        for kernel in loaded.kernels(CLASS):
            loaded.index(CLASS, kernel)
            loaded.proofs(CLASS, kernel)
    except TablesError as exc:
        return str(exc)
    return None


def _table_number(name: str, pattern: str, digits: int) -> Callable[[Path], str]:
    def edit(root: Path) -> str:
        path = root / name
        text = path.read_text(encoding="utf-8")
        new = re.sub(pattern, lambda m: m.group(1) + "9" * digits, text, count=1)
        assert new != text
        path.write_text(new, encoding="utf-8")
        if name != tables.TRACKED_NAME:
            retrack(root)
        return name

    return edit


TABLE_NUMBERS = {
    "record-count": (f"{CLASS}/rms_norm.proofs.yaml", r"(candidates_tried: )\d+"),
    "index-number": (f"{CLASS}/rms_norm.json", r'("num_warps": )\d+'),
    "tracked-size": (tables.TRACKED_NAME, r"(  size: )\d+"),
}


@pytest.mark.parametrize("where", TABLE_NUMBERS)
def test_a_tables_long_number_is_refused_in_one_line_under_every_bound(tracked, tmp_path, bound, where):
    """Round 59's cases under the bound lowered too: refused on the line naming the file, the number unquoted."""
    root = _copy(tracked, tmp_path)
    name = _table_number(*TABLE_NUMBERS[where], bound)(root)
    said = _refusal(root)
    assert said is not None and said.startswith(f"{root / name}:") and "\n" not in said, said and said[:300]
    assert len(said) < 400 and "9" * 50 not in said, said[:300]


# ------------------------------------------------------------------ round 59's two functions, each with a plant


def test_release_bound_holds_a_wheel_to_this_digest_only(tracked, tmp_path):
    """``tables._release_bound``: True for the list track wrote under this code and reader; False for a list naming
    no digest, another digest, this digest in capitals or not on its own line, and a list that cannot be read."""
    root = _copy(tracked, tmp_path)
    path = root / tables.TRACKED_NAME
    written = path.read_text(encoding="utf-8")
    own = tables.verification_rules()
    assert own is not None and f"verified_rules: {own}\n" in written
    assert tables._release_bound(root)
    for other in ("", "0" * 64, own.upper(), f"{own} # note", f"'{own}'"):
        path.write_text(written.replace(f"verified_rules: {own}", f"verified_rules: {other}"), encoding="utf-8")
        assert not tables._release_bound(root), other
    path.write_bytes(written.encode("utf-8").replace(b"format: 1", b"format: \xff", 1))
    assert not tables._release_bound(root)
    path.unlink()
    assert not tables._release_bound(root)


def test_unresolved_answers_what_resolve_finds(stored):
    """``store.unresolved``: False for the stored name (any case) and the folder it was imported from is left to
    resolve; True for what resolve refuses: not stored, empty, blank, no string."""
    assert not store.unresolved("tiny") and not store.unresolved("TINY")
    assert store.resolve("TINY").name == "tiny"
    for name in ("tinyx", "other/tiny", "", "  ", None, 7, ["tiny"]):
        assert store.unresolved(name), name
    for name in ("tinyx", "other/tiny"):
        with pytest.raises(store.NeuroBrixError):
            store.resolve(name)


# ------------------------------------------------------ a setting no kernel of this neurobrix takes, and verify

KERNEL = "rms_norm"
INDEX = f"{CLASS}/{KERNEL}.json"
# (meta-parameter, the value the shipped index holds, the value planted): of another type than certify writes, or
# outside what the kernel runs; the record made to hold the same setting (and bound to it), so that the index and its
# record agree and only the value is wrong
UNRUNNABLE = {
    "block-float": ("BLOCK_M", "64", "64.0"),
    "block-true": ("BLOCK_M", "64", "true"),
    "block-text": ("BLOCK_M", "64", '"64"'),
    "block-infinite": ("BLOCK_M", "64", "1e400"),
    "block-minus-zero": ("BLOCK_M", "64", "-0.0"),
    "block-not-pow2": ("BLOCK_M", "64", "63"),
    "block-zero": ("BLOCK_M", "64", "0"),
    "block-negative": ("BLOCK_M", "64", "-64"),
    "block-past-int64": ("BLOCK_M", "64", "100000000000000000000"),
    "warps-float": ("num_warps", "4", "4.0"),
    "warps-true": ("num_warps", "4", "true"),
    "warps-three": ("num_warps", "4", "3"),
    "warps-sixty-four": ("num_warps", "4", "64"),
}


def _unrunnable(root: Path, case: str) -> str:
    name, shipped, planted = UNRUNNABLE[case]
    path = root / INDEX
    text = path.read_text(encoding="utf-8")
    assert text.count(f'"{name}": {shipped}') == 1
    path.write_text(text.replace(f'"{name}": {shipped}', f'"{name}": {planted}'), encoding="utf-8")
    follow(root, CLASS, KERNEL)
    retrack(root)
    return name


@pytest.mark.parametrize("case", UNRUNNABLE)
def test_tables_verify_names_a_setting_run_refuses(tracked, tmp_path, monkeypatch, capsys, case):
    """The folder loads (its files are as listed, its index and record agree), doctor fails it and run's preflight
    refuses it; `tables verify` said "tables verified" (exit 0). Now exit 3, the index named on its one line."""
    from neurobrix.cli import main
    from neurobrix.doctor import _unrunnable as doctor_says

    root = _copy(tracked, tmp_path)
    name = _unrunnable(root, case)
    assert _refusal(root) is None  # (the folder itself: read whole, accepted)
    loaded = tables.load(root)
    problems = tables.verify_all(loaded)
    assert [p.path for p in problems] == [INDEX], problems
    assert f"{name}=" in problems[0].message and "run refuses it" in problems[0].message
    assert doctor_says({KERNEL: loaded.index(CLASS, KERNEL)}, loaded.classes[CLASS]) == f"{root / INDEX}: " + (
        problems[0].message
    )
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    tables.clear_cache()
    capsys.readouterr()
    assert main(["tables", "verify"]) == 3
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("tables NOT verified") and len(err) == 2 and err[1].startswith(f"  {root / INDEX}: ")


def test_tables_verify_passes_the_shipped_settings(tracked):
    """The control: the interpreter class's own settings (every shipped class's: test_cli's verify of the checkout)."""
    assert tables.verify_all(tables.load(tracked)) == []


def test_run_refuses_such_a_setting_with_exit_3(tracked, tmp_path, monkeypatch, capsys):
    """Run's own refusal, the one verify now names (one of the settings above; each is held to doctor's rule)."""
    from neurobrix.cli import main

    root = _copy(tracked, tmp_path)
    _unrunnable(root, "block-float")
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


# -------------------------------------------------------------- what a tables folder's files are beyond a value


def _replace(kind: str, rel: str, outside: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        path = root / rel
        kept = path.read_bytes()
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "folder":
            path.mkdir()
        elif kind == "link-out":  # the tracked bytes, through a link out of the folder
            (outside / path.name).write_bytes(kept)
            path.symlink_to(outside / path.name)
        elif kind == "dangling":
            path.symlink_to(outside / "gone")
        elif kind == "socket":
            monkeypatch.chdir(path.parent)  # (a socket's path is bounded at 108 bytes: bound by its name)
            listening = socket.socket(socket.AF_UNIX)
            listening.bind(path.name)
            listening.close()
        elif kind == "empty":
            path.write_bytes(b"")

    return edit


KINDS = ("fifo", "folder", "link-out", "dangling", "socket", "empty")
NOT_REGULAR = {f"{rel}-{kind}": (rel, kind) for rel in (INDEX, f"{CLASS}/class.yaml") for kind in KINDS}
NOT_REGULAR.update({f"tracked-{kind}": (tables.TRACKED_NAME, kind) for kind in KINDS if kind != "link-out"})


@pytest.mark.parametrize("case", NOT_REGULAR)
def test_a_table_file_that_is_no_regular_file_is_named(tracked, tmp_path, monkeypatch, case):
    """An index, a class.yaml or the list that is a FIFO (never opened: no read blocks), a folder, a link out of the
    folder (its bytes the tracked ones), a link to nothing, a socket or empty: run's load refuses the folder, naming
    the file on its line (round 58 did so for a record; a list linked elsewhere is read as the list it holds)."""
    rel, kind = NOT_REGULAR[case]
    root = _copy(tracked, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    _replace(kind, rel, outside, monkeypatch)(root)
    said = _refusal(root)
    assert said is not None, case
    line = next((line for line in said.splitlines() if str(root / rel) in line), None)
    assert line is not None, said
    if rel == tables.TRACKED_NAME:
        assert "\n" not in said, said
    elif kind == "empty":
        assert "size 0 bytes" in line, line
    else:
        assert "not a regular file" in line, line


EXTRA = {
    "an-index": (f"{CLASS}/extra.json", b"{}"),
    "a-record": (f"{CLASS}/extra.proofs.yaml", b"format: 3\n"),
    "a-backup": (f"{INDEX}~", b"{}"),
    "a-note": (f"{CLASS}/notes.txt", b"notes"),
    "a-class-folder": ("other/class.yaml", b"format: 1\n"),
}


@pytest.mark.parametrize("case", EXTRA)
def test_a_file_the_list_does_not_name_is_named(tracked, tmp_path, case):
    rel, data = EXTRA[case]
    root = _copy(tracked, tmp_path)
    (root / rel).parent.mkdir(exist_ok=True)
    (root / rel).write_bytes(data)
    said = _refusal(root) or ""
    assert f"{root / rel}: present but not in the tracked list" in said, said
