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

import re
import shutil
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import REPO, retrack
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
