"""Planted-bug round 59 (docs/planted-bugs.md): cases for the plants of tests/planted61_plants.py that the tests
guarding their code let through, in what strictness round 58, text round 49 and the gate tests' shared build landed.

Each case fails with its plant in place (checked with tests/planted61_driver.py, this file alone) and passes on the
clean code. No GPU, no model, no build: the verifying code's digest of a copy of its files, ``_nested_too_deep`` on
texts made for each rule, ``ModelConfig.from_hf`` on a config held in memory, the build key of a small git repository
and ``shared_build`` with the build replaced by a stand-in.

Outcomes: see docs/planted-bugs.md, round 59.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import _build_key, project_dists_copy, shared_build
from test_config import BASE

from neurobrix import tables
from neurobrix.config import ConfigError, ModelConfig

# ------------------------------------------------------------------ the digest of the verifying code


def test_bytes_moved_from_one_rule_file_to_the_next_are_another_digest(tmp_path):
    """d03: each file is hashed with its name and length: the last line of tables.py moved to the head of schema.py (the
    next file hashed; the stream of bytes the same) is another digest."""
    package = tmp_path / "neurobrix"
    own = Path(tables.__file__).parent
    for name in [*tables.RULE_FILES, *(f"_schemas/{p.name}" for p in (own / "_schemas").glob("*.py"))]:
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(own / name, package / name)
    assert tables.RULE_FILES[:2] == ("tables.py", "schema.py")
    assert tables.verification_rules(package) == tables.verification_rules()
    first, second = package / "tables.py", package / "schema.py"
    head, tail = first.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)
    first.write_bytes(head + b"\n")
    second.write_bytes(tail + b"\n" + second.read_bytes())
    assert tables.verification_rules(package) != tables.verification_rules()


# ------------------------------------------------------------------ the nesting bound

LONG = "# " + "x" * 3000 + "\n"  # a line that puts the text's bound past the composing threshold (under twice it)


@pytest.mark.parametrize("open_, close", [("[", "]"), ("{a: ", "}")], ids=["sequences", "mappings"])
def test_a_table_is_refused_past_100_levels_and_read_at_100(open_, close):
    """n01, n03, n05: a text scanned (a line of 3,000 characters: the bound counts twice the longest line, so it is
    past 4,096) nests 100 levels of sequences or of mappings: read; 101: refused, on the line that opens the 101st."""
    assert len(LONG) * 2 > 4096 > len(LONG) + 202
    for depth, refused in ((100, False), (101, True)):
        text = LONG + open_ * depth + "1" + close * depth + "\n"
        mark = tables._nested_too_deep(text)
        assert (mark is not None) == refused, (depth, mark)
        if refused:
            assert mark.line == 1 and mark.column == len(open_) * 100


def test_a_wide_shallow_table_is_read():
    """n02: levels are counted, not collections: 300 lists of one level each (a record's rejected candidates) read."""
    text = LONG + "rows:\n" + "- [1, {a: 2}]\n" * 300
    assert tables._nested_too_deep(text) is None


# ------------------------------------------------------------------ model_type


@pytest.mark.parametrize("model_type", [0, False, [], {}], ids=["zero", "false", "list", "mapping"])
def test_a_model_type_that_is_no_name_is_refused_whatever_its_truth(model_type):
    """c01: a model_type that is not a string is refused, a falsy one too (transformers' AutoConfig finds no model
    of type 0 or false, and a list or a mapping is no key of its table)."""
    with pytest.raises(ConfigError, match="field 'model_type' must be a name"):
        ModelConfig.from_hf({**BASE, "model_type": model_type})


# ------------------------------------------------------------------ the session's one build


def _repo(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    source.mkdir()
    (source / ".gitignore").write_text("ignored/\n")
    (source / "tool.py").write_text("print(1)\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args], cwd=source, check=True)
    return source


def test_the_build_key_follows_every_input_the_build_reads(tmp_path, monkeypatch):
    """b01, b02: the key changes with a file's mode, its content at the same size, an untracked file git does not
    ignore and SOURCE_DATE_EPOCH; an ignored file (the build leaves it out) keeps it."""
    source = _repo(tmp_path)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    keys = [_build_key(source)]
    (source / "ignored").mkdir()
    (source / "ignored" / "x.py").write_text("x\n")
    assert _build_key(source) == keys[0]
    (source / "tool.py").chmod(0o755)
    keys.append(_build_key(source))
    (source / "tool.py").write_text("print(2)\n")
    keys.append(_build_key(source))
    (source / "new.py").write_text("\n")
    keys.append(_build_key(source))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    keys.append(_build_key(source))
    assert len(set(keys)) == len(keys), keys


def _stand_in(monkeypatch) -> list[Path]:
    """gate.build.build_project replaced by one that writes a wheel's name: the folders it built into."""
    import gate.build

    built: list[Path] = []

    def build(source: Path, outdir: Path):
        outdir.mkdir(parents=True)
        (outdir / "p-1-py3-none-any.whl").write_bytes(b"wheel")
        built.append(outdir)
        return [outdir / "p-1-py3-none-any.whl"], 0.0

    monkeypatch.setattr(gate.build, "build_project", build)
    return built


def _shared(tmp_path_factory) -> Path:
    shared = tmp_path_factory.getbasetemp()
    return shared.parent if os.environ.get("PYTEST_XDIST_WORKER") else shared


def test_the_build_waits_for_the_lock_and_a_partial_one_is_built_again(tmp_path, tmp_path_factory, monkeypatch):
    """b03: a worker holding the lock (shared, as a reader would) keeps another from building until it lets go; and
    a folder left without its done mark (a worker stopped mid-build) is built again."""
    built = _stand_in(monkeypatch)
    source = _repo(tmp_path)
    folder = _shared(tmp_path_factory) / f"project-dists-{_build_key(source)[:24]}"
    (folder / "dist").mkdir(parents=True)
    (folder / "dist" / "partial.whl").write_bytes(b"")
    result: list[Path] = []
    with open(_shared(tmp_path_factory) / "project-dists.lock", "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_SH)
        worker = threading.Thread(target=lambda: result.append(shared_build(tmp_path_factory, source)))
        worker.start()
        time.sleep(0.3)
        waited = worker.is_alive() and not built
        fcntl.flock(held, fcntl.LOCK_UN)
        worker.join(300)
    assert waited and built == [folder / "dist"] and result == [folder / "dist"]
    assert [p.name for p in (folder / "dist").iterdir()] == ["p-1-py3-none-any.whl"]


def test_the_copies_are_files_of_their_own(tmp_path):
    """b04, b05: project_dists_copy's files are new files in the folder asked for (not the shared ones, not links to
    them): a test damaging its copy leaves the session's build as it was."""
    shared = tmp_path / "dist"
    shared.mkdir()
    for name in ("p-1.tar.gz", "p-1-py3-none-any.whl"):
        (shared / name).write_bytes(name.encode())
    copies = project_dists_copy(shared, tmp_path / "mine")
    assert [c.parent for c in copies] == [tmp_path / "mine"] * 2
    for copy in copies:
        with open(copy, "r+b") as damaged:
            damaged.write(b"X")
    assert sorted(p.read_bytes() for p in shared.iterdir()) == [b"p-1-py3-none-any.whl", b"p-1.tar.gz"]


def test_code_that_cannot_be_read_honours_a_list_without_a_digest_no_more_than_one_with(tmp_path, monkeypatch):
    """Found in the clean code: with the verifying code unreadable (verification_rules None: an install without its
    sources), a list naming no digest (round 57's form) compared equal to it, None to None, and was honoured; the
    docstring's "no list is then honoured" holds now for it too."""
    root = tmp_path / "tables"
    shutil.copytree(Path(tables.__file__).parents[1] / "tables" / "interpreter", root / "interpreter")
    files = tables.scan(root)
    sha = {f.path: f.sha256 for f in files}
    listed = [
        tables.VerifiedRecord(f.path, f.sha256, sha[f.path.replace(".proofs.yaml", ".json")])
        for f in files
        if f.path.endswith(".proofs.yaml")
    ]
    text = tables.render_tracked(files, listed, rules="x")
    text = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("verified_rules:"))
    (root / tables.TRACKED_NAME).write_text(text, encoding="utf-8")
    assert listed and len(tables.read_listed(root)[1]) == len(listed) and tables.read_listed(root)[0] is None
    monkeypatch.setattr(tables, "verification_rules", lambda package=None: None)
    assert tables.read_verified(root) == ()
