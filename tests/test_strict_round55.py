"""The fifty-fifth round, adversarial on the strict runtime: a kernel setting that was never proven for the exact
call, reached through the tables' keys and buckets, their JSON and YAML as the loader and `tables verify` read them,
the proofs' bindings, the environment, and a tables folder replaced under a program (docs/strictness-rounds.md).

Found and fixed (each test marked so failed before its fix):
- NEUROBRIX_TABLES naming a link (``tables-current -> tables-v1``, switched to ``tables-v2`` when the class is
  re-certified: the one way to replace a whole folder at once) was resolved to the link's target once a process
  (``tables._locate``'s cache): a program's loaded model went on generating with the old folder's settings after the
  link moved to tables that no longer certify them, where a fresh process refuses the model, and `tables.load()` kept
  handing out the old folder. The named folder is now looked up again at each load (a few system calls); the model is
  refused by name as round 47 refuses a folder re-certified in place or another folder named.
- tables of another Triton (the same sizes) copied over that folder in place, each file's time kept (``cp -p``,
  ``rsync --inplace -t``, archives of one fixed time): TRACKED.yaml's inode, size and modification time, all that was
  compared, stayed, and the model went on with tables a fresh process refuses. Its change time is compared too now.
- a stored model's config.json rewritten in place at its size with its time put back, after the check: the stamp
  (device, inode, size, modification time) was unchanged and the model read an unchecked config; the stamp holds the
  change time too now (exit 7, the file named).

Pinned (pass before and after): a table quirk the loader and `tables verify` each refuse alike (a second JSON value
after the index, a key spelt twice through a unicode escape, a record's stack spelt with a look-alike character), and a
call one past the last value of a bounded domain, which no entry covers.

No GPU: the interpreter class, on the shipped interpreter tables copied and tracked again, and round 47's tiny model.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from conftest import REPO, retrack
from store_fixtures import make_checkpoint

from neurobrix import store, tables
from neurobrix.errors import MissingEntryError, TablesError, UsageError
from neurobrix.generate import Sampling, generate
from neurobrix.plan import resolve
from neurobrix.run import load_model
from neurobrix.store import DamagedModelError

CLASS = "interpreter"
PROMPT, NEW = [3, 4, 5], 4


@pytest.fixture
def tiny(tmp_path, monkeypatch) -> Path:
    """A store holding the tiny checkpoint as ``tiny``; the checkpoint's folder."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "tiny")
    store.import_model(str(folder), progress=False)
    return folder


def _tables(tmp_path: Path, name: str, without: str | None = None) -> Path:
    """The interpreter class's shipped tables, copied and tracked under ``name`` (``without`` a kernel's files)."""
    root = tmp_path / name
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    if without:
        for path in (tables.index_path(root, CLASS, without), tables.proofs_path(root, CLASS, without)):
            path.unlink()
    retrack(root)
    return root


def _point(link: Path, target: Path) -> None:
    """``link`` made to lead to ``target`` at once (a new link renamed over it), as a deployment switches folders."""
    scratch = link.with_name(link.name + ".new")
    scratch.symlink_to(target, target_is_directory=True)
    os.replace(scratch, link)


def _ids(model) -> list[int]:
    return generate(model, PROMPT, NEW, Sampling(), set())[0]


# --- a tables folder replaced under a program -----------------------------------------------------------------------


def test_a_loaded_model_refuses_the_tables_a_moved_link_names_now(tiny, tmp_path, monkeypatch):
    """Fixed: the link NEUROBRIX_TABLES names moved to re-certified tables that drop a setting the model launches; the
    model went on generating with it (the old target, resolved once a process), while a fresh load is refused."""
    link = tmp_path / "tables-current"
    _point(link, _tables(tmp_path, "tables-v1"))
    monkeypatch.setenv(tables.ENV_VAR, str(link))
    model = load_model(store.resolve("tiny"), "triton", "fp32", prompt_len=len(PROMPT), capacity=len(PROMPT) + NEW)
    _ids(model)
    _point(link, _tables(tmp_path, "tables-v2", without="rms_norm"))
    assert tables.load().root == (tmp_path / "tables-v2").resolve()  # what a fresh process reads
    with pytest.raises(UsageError, match=r"^the tables this model's settings were resolved from .*rms_norm") as err:
        _ids(model)
    assert "\n" not in str(err.value) and "tables-v2" in str(err.value)


def test_a_link_moved_to_the_same_settings_changes_nothing(tiny, tmp_path, monkeypatch):
    """Pinned: the link moved to an identical copy (another folder, the same settings): the same ids."""
    link = tmp_path / "tables-current"
    _point(link, _tables(tmp_path, "tables-v1"))
    monkeypatch.setenv(tables.ENV_VAR, str(link))
    model = load_model(store.resolve("tiny"), "triton", "fp32", prompt_len=len(PROMPT), capacity=len(PROMPT) + NEW)
    before = _ids(model)
    _point(link, _tables(tmp_path, "tables-v2"))
    assert _ids(model) == before
    assert model.ops.origin.tables.root == (tmp_path / "tables-v2").resolve()


def _copy_over(source: Path, target: Path) -> None:
    """Each file of ``source`` written into its namesake in ``target`` in place, its time kept (``cp -p``, ``cp -a``,
    ``rsync --inplace -t``): the same inode, and where the two were extracted with one fixed time (a reproducible
    archive's), the same modification time."""
    for path in sorted(source.rglob("*")):
        if path.is_file():
            into = target / path.relative_to(source)
            kept = into.stat().st_mtime_ns
            with open(into, "r+b") as out:
                out.write(path.read_bytes())
                out.truncate()
            os.utime(into, ns=(kept, kept))


def test_a_loaded_model_refuses_tables_copied_over_its_own_at_the_same_size_and_time(tiny, tmp_path, monkeypatch):
    """Fixed: tables certified on another Triton (the same sizes) copied over the folder a model was loaded from,
    each file in place with its time kept: TRACKED.yaml's inode, size and time were all the process compared, so the
    model went on generating on tables a fresh process refuses (exit 6). Its change time, which no copy can keep, is
    compared too now."""
    root = _tables(tmp_path, "tables")
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    model = load_model(store.resolve("tiny"), "triton", "fp32", prompt_len=len(PROMPT), capacity=len(PROMPT) + NEW)
    _ids(model)
    other = tmp_path / "other"
    shutil.copytree(root, other)
    for path in other.rglob("*.json"):  # the index states the stack, the record's provenance too
        path.write_text(path.read_text().replace('"triton": "3.9.0"', '"triton": "3.9.9"'))
    for path in other.rglob("*.proofs.yaml"):
        path.write_text(path.read_text().replace("\n  triton: 3.9.0\n", "\n  triton: 3.9.9\n", 1))
    retrack(other)
    assert (other / tables.TRACKED_NAME).stat().st_size == (root / tables.TRACKED_NAME).stat().st_size
    _copy_over(other, root)
    with pytest.raises(UsageError, match=r"^the tables this model's settings were resolved from .*3\.9\.9") as err:
        _ids(model)
    assert "\n" not in str(err.value)


# --- keys and domains: a call one past what an entry was proven over --------------------------------------------------


def test_a_call_one_past_a_domain_finds_no_entry():
    """Pinned: on each kernel of the GPU class (planning is free on any machine), the call at the top of the last domain
    of the first dimension resolves, the call one past it, one value off an exact dimension, and the same call in the
    other dtype (none of its entries listed) each has no certified setting."""
    loaded = tables.load(REPO / "tables")
    gpu = next(c for c in loaded.classes if c != CLASS)
    for kernel in loaded.kernels(gpu):
        index = loaded.index(gpu, kernel)
        tops: dict[tuple, tuple] = {}
        for dtypes, bounds, _ in index.rows:
            for dtype in dtypes:
                rest = (dtype, bounds[2:])
                if bounds[1] is not None and bounds[1] >= tops.get(rest, (0,))[0]:
                    tops[rest] = (bounds[1], bounds)
        (dtype, _), (top, bounds) = max(tops.items(), key=lambda item: item[1][0])
        at = (top, *bounds[2::2])  # the top of the first dimension, the others at their domain's low end
        assert index.lookup(dtype, at) is not None, (kernel, at)
        call = (kernel, dtype, at)
        assert resolve([call], loaded, gpu).settings[call] == dict(index.lookup(dtype, at).config)
        past = (top + 1, *at[1:])  # the largest top of all: no entry of these other dimensions goes further
        assert index.lookup(dtype, past) is None, (kernel, past)
        with pytest.raises(MissingEntryError, match="have no certified setting"):
            resolve([(kernel, dtype, past)], loaded, gpu)
        exact = [i for i, rule in enumerate(index.rules) if rule == "exact" and bounds[2 * i] == bounds[2 * i + 1]]
        for i in exact:
            for off in (-1, 1):
                near = tuple(v + off if j == i else v for j, v in enumerate(at))
                found = index.lookup(dtype, near)
                assert found is None or found.domain.spans()[index.key[i]] == (near[i], near[i]), (kernel, near)
        other = next(d for d in ("bf16", "fp16") if d != dtype)
        if not any(other in dtypes and bounds_ == bounds for dtypes, bounds_, _ in index.rows):
            assert index.lookup(other, at) is None or index.lookup(other, at).domain.dtypes != (dtype,)


# --- the tables' JSON and YAML as the loader and `tables verify` read them -------------------------------------------


def _edited(tmp_path: Path, file: str, old: str, new: str) -> Path:
    root = tmp_path / "edited"
    shutil.copytree(REPO / "tables" / CLASS, root / CLASS)
    path = root / CLASS / file
    text = path.read_text(encoding="utf-8")
    assert text.count(old) >= 1
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    retrack(root)
    tables.clear_cache()
    return root


@pytest.mark.parametrize(
    ("file", "old", "new", "said"),
    [
        # a second JSON value after the index: json stops at the first where a streaming reader takes both
        ("rms_norm.json", '"entries"', '"entries"', None),
        # "kernel" given twice, once through a unicode escape: json keeps the last silently
        ("rms_norm.json", '"kernel": "rms_norm",', '"kernel": "rms_norm", "\\u006bernel": "rms_norm",', "twice"),
        # the record's Triton spelt with a full-width dot (U+FF0E): another text than the index's 3.9.0
        ("rms_norm.proofs.yaml", "\n  triton: 3.9.0\n", "\n  triton: 3.9\uff0e0\n", "compiler stack"),
        # a dtype spelt as torch names it (an alias): no dtype of a table
        ("rms_norm.json", '[["fp32"]', '[["float32"]', "entries"),
    ],
    ids=["json-trailing-value", "json-escaped-twice", "yaml-lookalike-stack", "json-dtype-alias"],
)
def test_table_quirks_are_refused_by_the_loader_as_by_tables_verify(tmp_path, file, old, new, said):
    """Pinned: each quirk is refused when a run loads the kernel's index (one line, the file named) and by `tables
    verify` (a problem of that kernel), never read one way by one and another way by the other."""
    if said is None:  # the trailing value: appended
        root = _edited(tmp_path, file, old, new)
        path = root / CLASS / file
        path.write_text(path.read_text(encoding="utf-8") + '{"entries": []}\n', encoding="utf-8")
        retrack(root)
        tables.clear_cache()
        said = "Extra data"
    else:
        root = _edited(tmp_path, file, old, new)
    with pytest.raises(TablesError, match=said) as err:
        tables.load(root).index(CLASS, "rms_norm")
    assert "rms_norm" in str(err.value) and "\n" not in str(err.value)
    tables.clear_cache()
    assert any(p.path == f"{CLASS}/rms_norm" for p in tables.verify_all(tables.load(root)))


# --- a stored model's file rewritten in place with its time kept ------------------------------------------------------


def test_a_stored_file_rewritten_in_place_with_its_time_kept_is_a_change(tiny):
    """Fixed: config.json rewritten after the check, in place at its size and with its time put back (``cp -p``,
    ``touch -r``): device, inode, size and modification time were all the stamp compared, so the model read a
    config.json nobody checked (here another RMSNorm epsilon, the same length) and said nothing; its change time,
    which no copy can set, is compared too now (exit 7, the file named)."""
    stored = store.resolve("tiny")
    path = stored.path / "config.json"
    text = path.read_text(encoding="utf-8")
    kept = path.stat().st_mtime_ns
    found = re.search(r'"rms_norm_eps": [0-9.e+-]*([0-9])', text)
    assert found is not None
    digit = "1" if found.group(1) != "1" else "2"
    edited = text[: found.start(1)] + digit + text[found.end(1) :]
    assert edited != text and len(edited) == len(text)
    with open(path, "r+", encoding="utf-8") as out:
        out.write(edited)
    os.utime(path, ns=(kept, kept))
    with pytest.raises(DamagedModelError, match=r"changed while this command read it: config\.json changed") as err:
        stored.config()
    assert "\n" not in str(err.value)
